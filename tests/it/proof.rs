//! Proofs through the real binary, on git repositories each test makes:
//! a PASS leaves a receipt; a change to what a gate depends on makes its
//! proof stale, a hand-written or copied evidence line is unproven, and
//! `--proof` counts only current proofs and re-runs exactly the others.
//! Checks count their runs in a file beside the repository, never in it.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::{git, Sandbox};

/// Sets `path`'s modification time an hour back, so neither git's index
/// nor the stat cache treats it as possibly changed within the same tick.
fn age(path: &Path) {
    let status = Command::new("touch").args(["-d", "1 hour ago"]).arg(path).status().unwrap();
    assert!(status.success());
}

/// How many times each gate's check ran, from the count file.
fn runs(sandbox: &Sandbox) -> (usize, usize) {
    let log = fs::read_to_string(sandbox.root.parent().unwrap().join("runs.log")).unwrap_or_default();
    (log.lines().filter(|l| *l == "G1").count(), log.lines().filter(|l| *l == "G2").count())
}

const LEDGER: &str = "# Gates\n\n\
    - [ ] G1: the library returns one\n  CHECK: echo G1 >> ../runs.log && grep -q 'return 1' src/lib.py && echo lib-ok\n  \
    EXPECT: lib-ok\n  EVIDENCE: pending\n\
    - [ ] G2: the docs are written\n  CHECK: echo G2 >> ../runs.log && cat docs/guide.md\n  EXPECT: guide\n  \
    INPUTS: docs\n  EVIDENCE: pending\n";

/// A committed repository with two gates, both approved and proven: G1 on
/// the whole tree, G2 on `docs` only.
fn proven_repository() -> Sandbox {
    let sandbox = Sandbox::new();
    git(&sandbox.root, &["init", "-q"]);
    sandbox.write("src/lib.py", "def one():\n    return 1\n");
    sandbox.write("docs/guide.md", "the guide\n");
    sandbox.write(".gitignore", "build/\n*.log\n");
    sandbox.write("GATES.md", LEDGER);
    for file in ["src/lib.py", "docs/guide.md", ".gitignore", "GATES.md"] {
        age(&sandbox.path(file));
    }
    git(&sandbox.root, &["add", "-A"]);
    git(&sandbox.root, &["commit", "-qm", "start"]);
    // The approval block shows what the proof will depend on.
    sandbox
        .run(&["--approve", "-q"])
        .code(0)
        .stdout_contains("    EXPECT: guide\n    CWD: ")
        .stdout_contains("\n    INPUTS: docs\n    SHELL: /bin/sh\n")
        .stdout_ends_with("ALL MET (2 met)\n");
    assert_eq!(runs(&sandbox), (1, 1));
    // Proven on this tree: nothing to say.
    sandbox.run(&["--status"]).code(0).stdout_is("GATES.md: 2 gates\nALL MET (2 met)\n");
    sandbox
}

#[cfg_attr(
    windows,
    ignore = "makes its repository with git, which the wine prefix the Windows tests run in does not have"
)]
#[test]
fn an_edit_to_a_tracked_file_makes_the_proof_stale_and_proof_mode_reruns_only_that_gate() {
    let sandbox = proven_repository();
    sandbox.write("src/lib.py", "def one():\n    return 1  # but different\n");

    // The default decision stands, with one warning naming the gate and file.
    sandbox.run(&["--status"]).code(0).stdout_is("GATES.md: 2 gates\nALL MET (2 met)\n").stderr_is(
        "gate-check: warning: 1 met gate(s) not proven on this tree (1 stale, 0 unproven): GATES:G1 stale: \
         src/lib.py changed since it was proven; prove them with: gate-check --proof\n",
    );
    // With --proof the gate does not count.
    sandbox.run(&["--status", "--proof"]).code(1).stdout_is(
        "  UNMET GATES:G1 (stale: src/lib.py changed since it was proven): the library returns one\n\
         GATES.md: 2 gates\nUNMET: 1 (met: 1)\n  GATES:G1 (stale: src/lib.py changed since it was proven)\n",
    );
    assert_eq!(runs(&sandbox), (1, 1), "--status ran a check");

    // A --proof run re-runs exactly that gate, and proves it again.
    sandbox.run(&["--proof", "-q"]).code(0).stdout_is("ALL MET (2 met)\n");
    assert_eq!(runs(&sandbox), (2, 1));
    sandbox.run(&["--status", "--proof"]).code(0).stdout_is("GATES.md: 2 gates\nALL MET (2 met)\n");
    sandbox.run(&["--proof", "-q"]).code(0).stdout_is("ALL MET (2 met)\n");
    assert_eq!(runs(&sandbox), (2, 1), "a current proof is not run again");
}

#[cfg_attr(
    windows,
    ignore = "makes its repository with git, which the wine prefix the Windows tests run in does not have"
)]
#[test]
fn the_ledger_ignored_files_and_unlazy_never_change_a_proof_but_an_untracked_file_does() {
    let sandbox = proven_repository();
    sandbox.write("GATES.md", &format!("{}\nSome prose added later.\n", sandbox.read("GATES.md")));
    sandbox.write("build/out.txt", "generated");
    sandbox.write("debug.log", "noise");
    sandbox.write(".unlazy/notes.md", "scratch");
    sandbox.run(&["--status", "--proof"]).code(0).stdout_is("GATES.md: 2 gates\nALL MET (2 met)\n");

    // A file git would show as untracked is part of the tree.
    sandbox.write("src/extra.py", "print('new')\n");
    sandbox.run(&["--status", "--proof"]).code(1).stdout_contains(
        "  UNMET GATES:G1 (stale: src/extra.py changed since it was proven): the library returns one\n",
    );
}

#[cfg_attr(
    windows,
    ignore = "makes its repository with git, which the wine prefix the Windows tests run in does not have"
)]
#[test]
fn inputs_narrow_a_proof_both_ways() {
    let sandbox = proven_repository();
    // Outside G2's inputs: only G1 goes stale.
    sandbox.write("src/lib.py", "def one():\n    return 1\n\n");
    sandbox
        .run(&["--status", "--proof"])
        .code(1)
        .stdout_contains("UNMET GATES:G1 (stale: src/lib.py changed")
        .stdout_lacks("GATES:G2");
    // Inside them: both do.
    sandbox.write("docs/guide.md", "the guide, revised\n");
    sandbox
        .run(&["--status", "--proof"])
        .code(1)
        .stdout_contains("UNMET GATES:G1 (stale: docs/guide.md, src/lib.py changed since it was proven)")
        .stdout_contains("UNMET GATES:G2 (stale: docs/guide.md changed since it was proven)");
    // Changing INPUTS itself leaves the gate unproven: its receipt was made
    // with others.
    let narrowed = sandbox.read("GATES.md").replace("INPUTS: docs", "INPUTS: docs/guide.md");
    sandbox.write("GATES.md", &narrowed);
    sandbox
        .run(&["--status", "--proof"])
        .code(1)
        .stdout_contains("UNMET GATES:G2 (unproven: it was proven with other INPUTS or under another root)");
}

#[cfg_attr(
    windows,
    ignore = "makes its repository with git, which the wine prefix the Windows tests run in does not have"
)]
#[test]
fn a_ledger_copied_into_another_repository_is_unproven_there() {
    let sandbox = proven_repository();
    let copy = Sandbox::new();
    git(&copy.root, &["init", "-q"]);
    for file in ["src/lib.py", "docs/guide.md", ".gitignore", "GATES.md"] {
        copy.write(file, &sandbox.read(file));
    }
    // The same receipt store, where the original's receipts are.
    let status = |args: &[&str]| {
        let mut command = copy.cmd();
        command.env("UNLAZY_RECEIPT_DIR", &sandbox.receipts).args(args);
        copy.run_with(&mut command)
    };
    status(&["--status"]).code(0).stdout_is("GATES.md: 2 gates\nALL MET (2 met)\n").stderr_contains(
        "2 met gate(s) not proven on this tree (0 stale, 2 unproven): GATES:G1 unproven: no receipt: gate-check did \
         not prove it here; GATES:G2 unproven: no receipt",
    );
    status(&["--status", "--proof"])
        .code(1)
        .stdout_contains("UNMET GATES:G1 (unproven: no receipt: gate-check did not prove it here)");
}

/// The receipt of `gate`: the one receipt file naming it.
fn receipt_of(sandbox: &Sandbox, gate: &str) -> std::path::PathBuf {
    fs::read_dir(&sandbox.receipts)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .find(|path| fs::read_to_string(path).unwrap().contains(&format!("\"gate\": \"{gate}\"")))
        .unwrap()
}

#[cfg_attr(
    windows,
    ignore = "makes its repository with git, which the wine prefix the Windows tests run in does not have"
)]
#[test]
fn a_receipt_with_one_byte_changed_proves_nothing() {
    let sandbox = proven_repository();
    let receipt = receipt_of(&sandbox, "G1");
    let text = fs::read_to_string(&receipt).unwrap();
    let at = text.find("\"provenAt\": \"").unwrap() + "\"provenAt\": \"".len();
    let mut bytes = text.into_bytes();
    bytes[at] = if bytes[at] == b'1' { b'2' } else { b'1' };
    fs::write(&receipt, &bytes).unwrap();
    sandbox
        .run(&["--status", "--proof"])
        .code(1)
        .stdout_contains("UNMET GATES:G1 (unproven: its receipt is not sealed by this owner's key)")
        .stdout_lacks("GATES:G2 (");
    // Forged evidence written by hand over a real one: unproven too.
    let forged = sandbox.read("GATES.md").replacen("; cwd=/", "; cwd=/forged/", 2);
    sandbox.write("GATES.md", &forged);
    sandbox.run(&["--status"]).code(0).stdout_contains("ALL MET (2 met)").stderr_contains(
        "GATES:G1 unproven: its receipt is not sealed by this owner's key; GATES:G2 unproven: its receipt proves \
         another evidence line",
    );
}

// Mode bits and owners; the Windows receipt store's ACL is checked in
// `windows`.
#[cfg(unix)]
#[test]
fn a_receipt_store_or_key_that_is_not_private_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let sandbox = proven_repository();
    let key = sandbox.receipts.join("key");
    assert_eq!(fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(fs::metadata(&sandbox.receipts).unwrap().permissions().mode() & 0o777, 0o700);

    let loose_store = format!("{} must not grant group or other permissions", sandbox.receipts.display());
    fs::set_permissions(&sandbox.receipts, fs::Permissions::from_mode(0o755)).unwrap();
    sandbox
        .run(&["--status"])
        .code(0)
        .stdout_contains("ALL MET (2 met)")
        .stderr_contains(&format!("gate-check: warning: receipts cannot be used: {loose_store}\n"))
        .stderr_contains("GATES:G1 unproven: the receipt store cannot be used");
    sandbox.run(&["--status", "--proof"]).code(2).stderr_is(&format!("gate-check: error: {loose_store}\n"));
    fs::set_permissions(&sandbox.receipts, fs::Permissions::from_mode(0o700)).unwrap();

    fs::set_permissions(&key, fs::Permissions::from_mode(0o644)).unwrap();
    sandbox
        .run(&["--status", "--proof"])
        .code(2)
        .stderr_is(&format!("gate-check: error: {} must not grant group or other permissions\n", key.display()));
    fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).unwrap();

    std::os::unix::fs::chown(&sandbox.receipts, Some(65534), None).unwrap();
    sandbox
        .run(&["--status", "--proof"])
        .code(2)
        .stderr_is(&format!("gate-check: error: {} must be owned by the current user\n", sandbox.receipts.display()));
    std::os::unix::fs::chown(&sandbox.receipts, Some(0), None).unwrap();

    // A store inside the repository is refused like the approval store.
    let inside = sandbox.path("receipts");
    let mut command = sandbox.cmd();
    command.env("UNLAZY_RECEIPT_DIR", &inside).args(["--status", "--proof"]);
    sandbox.run_with(&mut command).code(2).stderr_is(&format!(
        "gate-check: error: UNLAZY_RECEIPT_DIR must be outside the repository root {}\n",
        sandbox.root.display()
    ));
    assert!(!crate::common::exists(&inside));
    sandbox.run(&["--status", "--proof"]).code(0).stdout_contains("ALL MET (2 met)");
}

#[cfg_attr(
    windows,
    ignore = "makes its repository with git, which the wine prefix the Windows tests run in does not have"
)]
#[test]
fn a_second_reading_of_an_unchanged_tree_hashes_nothing() {
    let sandbox = proven_repository();
    // Committed files come from git's index; an untracked one is hashed
    // once, by the run that proves the gates, and then cached.
    sandbox.write("notes.txt", "an untracked note\n");
    age(&sandbox.path("notes.txt"));
    // The tree: .gitignore, docs/guide.md, src/lib.py and the note; never
    // the ledger, which each run rewrites.
    let read =
        |hashed: usize| format!("  proof: read the tree under {}: 4 files, {hashed} hashed\n", sandbox.root.display());
    sandbox.run(&["--status", "-v"]).code(0).stdout_contains(&read(1)).stderr_contains("GATES:G1 stale");
    sandbox.run(&["--reverify", "-q"]).code(0).stdout_is("ALL MET (2 met, reran: 2, 2 of them met before)\n");
    sandbox.run(&["--status", "-v", "--proof"]).code(0).stdout_contains(&read(0)).stdout_contains("ALL MET (2 met)");
}

#[test]
fn outside_git_the_files_under_the_root_are_the_tree_and_ignore_files_hold() {
    let sandbox = Sandbox::new();
    sandbox.write(".gitignore", "*.log\n");
    sandbox.write("data.txt", "one\n");
    let check = crate::common::sh::cat("data.txt");
    sandbox.write("GATES.md", &format!("- [ ] G1: data is there\n  CHECK: {check}\n  EXPECT: one\n"));
    sandbox.run(&["--approve", "-q"]).code(0).stdout_ends_with("ALL MET (1 met)\n");
    sandbox.write("run.log", "ignored");
    sandbox.run(&["--status", "--proof"]).code(0).stdout_is("GATES.md: 1 gates\nALL MET (1 met)\n");
    sandbox.write("data.txt", "one, edited\n");
    sandbox
        .run(&["--status", "--proof"])
        .code(1)
        .stdout_contains("UNMET GATES:G1 (stale: data.txt changed since it was proven)");
}

/// The JUnit document's `failures`, `errors` and `skipped` totals.
fn junit_totals(xml: &str) -> (usize, usize, usize) {
    let head = &xml[xml.find("<testsuites").unwrap()..];
    let number = |name: &str| -> usize {
        let at = head.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        head[at..head[at..].find('"').unwrap() + at].parse().unwrap()
    };
    (number("failures"), number("errors"), number("skipped"))
}

#[cfg_attr(
    windows,
    ignore = "makes its repository with git, which the wine prefix the Windows tests run in does not have"
)]
#[test]
fn a_gate_the_run_could_not_verify_fails_in_every_machine_report() {
    let sandbox = proven_repository();
    // A fresh CI runner: the ledger says met, but it holds no approval.
    let fresh = tempfile::tempdir().unwrap();
    crate::common::make_private(fresh.path());
    let on_fresh_runner = |args: &[&str]| {
        let mut command = sandbox.cmd();
        command.env("UNLAZY_APPROVAL_DIR", fresh.path()).env("UNLAZY_RECEIPT_DIR", fresh.path().join("r"));
        command.args(args);
        sandbox.run_with(&mut command)
    };
    let xml = on_fresh_runner(&["--reverify", "--format", "junit"])
        .code(1)
        .stderr_contains("APPROVAL REQUIRED")
        .into_stdout();
    assert_eq!(junit_totals(&xml), (2, 0, 0), "{xml}");
    assert!(xml.contains("type=\"unverified\""), "{xml}");
    assert!(xml.contains("message=\"the library returns one: not counted met (reverify not run)"), "{xml}");
    let json = on_fresh_runner(&["--reverify", "--format", "json"]).code(1).stderr_contains("NOT RUN").stdout_json();
    for gate in json["gates"].as_array().unwrap() {
        assert_eq!((gate["state"].as_str(), gate["reason"].as_str()), (Some("unverified"), Some("reverify not run")));
    }
    let mut annotated = sandbox.cmd();
    annotated.env("UNLAZY_APPROVAL_DIR", fresh.path()).env("GITHUB_ACTIONS", "true").arg("--reverify");
    sandbox
        .run_with(&mut annotated)
        .code(1)
        .stdout_contains("::error file=GATES.md,line=3,title=gate GATES%3AG1::the library returns one: not counted met (reverify not run)");

    // The same holds for --proof.
    sandbox.write("src/lib.py", "def one():\n    return 1  # edited\n");
    let xml = sandbox.run(&["--status", "--proof", "--format", "junit"]).code(1).stderr_contains("UNMET").into_stdout();
    assert_eq!(junit_totals(&xml), (1, 0, 0), "{xml}");
    assert!(xml.contains("not counted met (stale: src/lib.py changed since it was proven)"), "{xml}");
    assert!(xml.contains("<property name=\"gate-check.proof\" value=\"stale\"/>"), "{xml}");
    assert!(xml.contains("<property name=\"gate-check.proof.changed\" value=\"src/lib.py\"/>"), "{xml}");
    let json = sandbox.run(&["--status", "--proof", "--format", "json"]).code(1).stderr_contains("UNMET").stdout_json();
    let g1 = &json["gates"][0];
    assert_eq!(g1["state"], "unverified");
    assert_eq!(g1["proof"]["state"], "stale");
    assert_eq!(g1["proof"]["changed"], serde_json::json!(["src/lib.py"]));
    assert_eq!(json["gates"][1]["proof"]["state"], "current");
    // Without --proof the decision is the ledger's, and the proof is still said.
    let json = sandbox.run(&["--status", "--format", "json"]).code(0).stderr_contains("GATES:G1 stale").stdout_json();
    assert_eq!((json["gates"][0]["state"].as_str(), json["exitCode"].as_i64()), (Some("met"), Some(0)));
    assert_eq!(json["gates"][0]["proof"]["state"], "stale");
}

mod agreement {
    use super::*;
    use proptest::prelude::*;

    /// One gate of a generated ledger: unmet, manual and attested,
    /// abandoned, proven by gate-check, or runnable with current evidence
    /// written by hand (never approved, so no run can verify it).
    fn gate_line(id: usize, kind: u8) -> String {
        match kind {
            0 => format!("- [ ] G{id}: unmet\n  CHECK: echo ok\n  EXPECT: ok\n"),
            1 => format!("- [x] M{id}: by hand\n  EVIDENCE: looked at it\n"),
            2 => format!("- [ ] A{id}: dropped\n\nABANDON: A{id} out of scope now\n"),
            3 => format!("- [ ] P{id}: proven\n  CHECK: echo p{id}\n  EXPECT: p{id}\n"),
            _ => {
                let digest = crate::core_support::definition_digest("echo h", "h", None);
                let evidence = crate::core_support::success_evidence(&digest, "h\n", "/bin/sh", "/r", "/bin");
                format!("- [x] H{id}: written by hand\n  CHECK: echo h\n  EXPECT: h\n  EVIDENCE: {evidence}\n")
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// Whatever the ledger and the mode, the JSON document's exit code
        /// is the process's, and JUnit reports a failure, an error or an
        /// abandonment exactly when the run does not exit 0.
        #[test]
        fn machine_reports_agree_with_the_exit_code(kinds in prop::collection::vec(0u8..5, 1..6), edit in any::<bool>()) {
            let sandbox = Sandbox::new();
            let text: String = kinds.iter().enumerate().map(|(id, kind)| gate_line(id, *kind)).collect();
            sandbox.write("GATES.md", &text);
            // The gates meant to be proven are, once, by gate-check.
            let proven: Vec<String> = kinds.iter().enumerate().filter(|(_, k)| **k == 3).map(|(id, _)| format!("P{id}")).collect();
            if !proven.is_empty() {
                let mut approve = sandbox.cmd();
                approve.args(["--approve", "--gate", &proven.join(",")]);
                let output = approve.output().unwrap();
                prop_assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stdout));
            }
            if edit {
                sandbox.write("changed.txt", "after the proofs");
            }
            for mode in [&["--status"][..], &["--status", "--proof"], &["--reverify"], &["--proof"]] {
                let run = |format: &str| sandbox.cmd().args(mode).args(["--format", format]).output().unwrap();
                let json = run("json");
                let code = json.status.code().unwrap();
                let document: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
                prop_assert_eq!(document["exitCode"].as_i64(), Some(i64::from(code)), "{:?}", mode);
                let counted_met = document["gates"].as_array().unwrap().iter().all(|g| g["state"] == "met");
                prop_assert_eq!(code == 0, counted_met, "{:?} {}", mode, document);
                let junit = run("junit");
                prop_assert_eq!(junit.status.code(), Some(code));
                let (failures, errors, skipped) = junit_totals(&String::from_utf8_lossy(&junit.stdout));
                prop_assert_eq!(code == 0, failures + errors + skipped == 0, "{:?}", mode);
            }
        }
    }
}

/// A Stop (or SubagentStop) payload as Claude Code sends it.
fn stop_payload(sandbox: &Sandbox, event: &str, agent_id: Option<&str>) -> String {
    let mut payload = serde_json::json!({
        "session_id": "s-1",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": sandbox.root,
        "permission_mode": "default",
        "hook_event_name": event,
        "stop_hook_active": false,
    });
    if let Some(agent_id) = agent_id {
        payload["agent_id"] = serde_json::json!(agent_id);
    }
    payload.to_string()
}

fn stop(sandbox: &Sandbox, args: &[&str], event: &str, agent_id: Option<&str>) -> crate::common::Run {
    sandbox
        .run_with(sandbox.cmd().args(["hook", "stop"]).args(args).write_stdin(stop_payload(sandbox, event, agent_id)))
}

#[cfg_attr(
    windows,
    ignore = "makes its repository with git, which the wine prefix the Windows tests run in does not have"
)]
#[test]
fn a_stop_is_judged_by_proofs_unless_the_installed_command_says_otherwise() {
    let sandbox = proven_repository();
    // Proven on this tree: the stop goes through.
    stop(&sandbox, &[], "Stop", None).code(0).stdout_is("").stderr_is("");
    sandbox.write("src/lib.py", "def one():\n    return 1  # edited after the proof\n");
    let reply = stop(&sandbox, &[], "Stop", None).code(0).stderr_is("").stdout_json();
    let reason = reply["reason"].as_str().unwrap();
    assert_eq!(reply["decision"], "block");
    assert!(
        reason.starts_with(
            "unlazy: 1 gate/ledger item(s) need work: GATES:G1 stale: src/lib.py changed since it was proven. Run \
             gate-check --proof to run the approved checks (gate-check --status --proof shows them"
        ),
        "{reason}"
    );
    // Every host gets the reason in its own schema.
    let gemini = stop(&sandbox, &["--agent", "gemini"], "Stop", None).code(0).stdout_json();
    assert!(gemini.to_string().contains("GATES:G1 stale: src/lib.py changed since it was proven"), "{gemini}");
    // The Node hook's judgement, when the installed command asks for it.
    stop(&sandbox, &["--no-proof"], "Stop", None).code(0).stdout_is("").stderr_is("");
    // Proving it again lets the stop through.
    sandbox.run(&["--proof", "-q"]).code(0).stdout_is("ALL MET (2 met)\n");
    stop(&sandbox, &[], "Stop", None).code(0).stdout_is("").stderr_is("");
    // A box ticked by hand, with evidence copied from elsewhere, holds it.
    let forged = sandbox.read("GATES.md").replacen("- [ ] ", "- [x] ", 0).replace("; cwd=/", "; cwd=/copied/");
    sandbox.write("GATES.md", &forged);
    let reason = stop(&sandbox, &[], "Stop", None).code(0).stdout_json()["reason"].as_str().unwrap().to_string();
    assert!(
        reason.contains("GATES:G1 unproven: its receipt proves another evidence line, GATES:G2 unproven"),
        "{reason}"
    );
}

#[cfg_attr(
    windows,
    ignore = "makes its repository with git, which the wine prefix the Windows tests run in does not have"
)]
#[test]
fn a_subagent_is_held_to_its_own_leafs_proofs() {
    let sandbox = Sandbox::new();
    git(&sandbox.root, &["init", "-q"]);
    sandbox.write("src/a.py", "A = 1\n");
    sandbox.write(".unlazy/api/GATES.md", "- [x] N1: reviewed\n  EVIDENCE: read it\n");
    sandbox.write(
        ".unlazy/api/gates/leaf-a.md",
        "OWNS: src/a.py\n\n- [ ] A1: a is one\n  CHECK: grep -q 'A = 1' src/a.py && echo a-ok\n  EXPECT: a-ok\n  \
         INPUTS: src/a.py\n",
    );
    age(&sandbox.path("src/a.py"));
    git(&sandbox.root, &["add", "src"]);
    git(&sandbox.root, &["commit", "-qm", "start"]);
    let dispatch = |args: &[&str], said: &str| {
        let mut command = sandbox.cmd();
        command.args(["dispatch"]).args(args).args(["--scope", "api", "--wave", "w1"]);
        sandbox.run_with(&mut command).code(0).stdout_starts_with(said);
    };
    dispatch(&["open", "--leaf", "leaf-a"], "OPEN w1");
    dispatch(&["start", "--leaf", "leaf-a", "--handle", "agent-a1"], "STARTED w1 leaf-a");
    sandbox.run(&["--approve", "-q", "--scope", "api"]).code(1).stdout_contains("UNMET: 1 (met: 2)");
    // Proven: the leaf's subagent may stop.
    stop(&sandbox, &[], "SubagentStop", Some("agent-a1")).code(0).stdout_is("").stderr_is("");
    sandbox.write("src/a.py", "A = 1  # touched\n");
    let reason = stop(&sandbox, &[], "SubagentStop", Some("agent-a1")).code(0).stdout_json()["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reason.starts_with(
            "unlazy [scope api, leaf leaf-a]: 1 gate/ledger item(s) need work: leaf-a:A1 stale: src/a.py changed \
             since it was proven."
        ),
        "{reason}"
    );
}

#[test]
fn the_receipt_store_stays_bounded() {
    let sandbox = Sandbox::new();
    let check = crate::common::sh::cat("note.txt");
    sandbox.write("GATES.md", &format!("- [ ] G1: the note is there\n  CHECK: {check}\n  EXPECT: note\n"));
    let count = |extension: &str| {
        fs::read_dir(&sandbox.receipts)
            .unwrap()
            .filter(|entry| entry.as_ref().unwrap().path().extension().is_some_and(|e| e == extension))
            .count()
    };
    // Each proof on another tree keeps that tree's manifest, up to a bound.
    for round in 0..20 {
        sandbox.write("note.txt", &format!("note {round}\n"));
        let args: &[&str] = if round == 0 { &["--approve", "-q"] } else { &["--reverify", "-q"] };
        sandbox.run(args).code(0).stdout_contains("ALL MET (1 met");
        assert!(count("tree") <= 16, "round {round}: {} manifests", count("tree"));
    }
    assert_eq!(count("tree"), 16, "the newest trees are kept");
    assert_eq!((count("json"), count("stat")), (1, 1), "one receipt per gate, one stat cache per root");
    // The newest manifest still names what changed.
    sandbox.write("note.txt", "note, edited\n");
    sandbox
        .run(&["--status", "--proof"])
        .code(1)
        .stdout_contains("UNMET GATES:G1 (stale: note.txt changed since it was proven)");
}

#[cfg_attr(
    windows,
    ignore = "makes its repository with git, which the wine prefix the Windows tests run in does not have"
)]
#[test]
fn over_its_bound_the_store_drops_the_receipts_of_ledgers_that_are_gone_first() {
    let sandbox = proven_repository();
    // The store's bound (10,000 receipts) reached by receipts newer than
    // G1's and G2's, of a ledger that no longer exists.
    let template = fs::read_to_string(receipt_of(&sandbox, "G1")).unwrap();
    let gone = sandbox.root.parent().unwrap().join("gone/GATES.md");
    let ledger = sandbox.root.join("GATES.md").canonicalize().unwrap();
    let lost = template.replace(&format!("\"{}\"", ledger.display()), &format!("\"{}\"", gone.display()));
    assert_ne!(lost, template);
    for at in 0..10_000 {
        let path = sandbox.receipts.join(format!("{at:064x}.json"));
        fs::write(&path, &lost).unwrap();
        crate::common::make_private_file(&path);
    }
    // A run that proves a gate prunes the store.
    sandbox.run(&["--reverify", "--gate", "G2", "-q"]).code(0).stdout_contains("ALL MET (1 met");
    assert_eq!(runs(&sandbox), (1, 2));
    // G1's older receipt is kept: it is still the proof of a ledger.
    sandbox.run(&["--status", "--proof"]).code(0).stdout_is("GATES.md: 2 gates\nALL MET (2 met)\n");
    let receipts = fs::read_dir(&sandbox.receipts)
        .unwrap()
        .filter(|entry| entry.as_ref().unwrap().path().extension().is_some_and(|extension| extension == "json"));
    assert_eq!(receipts.count(), 2);
}

#[cfg_attr(
    windows,
    ignore = "makes its repository with git, which the wine prefix the Windows tests run in does not have"
)]
#[test]
fn neither_the_repositorys_config_nor_its_index_flags_can_hide_a_change() {
    let sandbox = proven_repository();
    // A same-size edit with the old modification time put back: git's own
    // checks (ctime, inode, size) still see it, whatever the config says.
    git(&sandbox.root, &["config", "core.trustctime", "false"]);
    git(&sandbox.root, &["config", "core.checkStat", "minimal"]);
    let lib = sandbox.path("src/lib.py");
    let reference = sandbox.root.parent().unwrap().join("mtime");
    fs::write(&reference, "").unwrap();
    Command::new("touch").arg("-r").arg(&lib).arg(&reference).status().unwrap();
    sandbox.write("src/lib.py", "def one():\n    return 7\n");
    Command::new("touch").arg("-r").arg(&reference).arg(&lib).status().unwrap();
    sandbox.run(&["--status", "--proof"]).code(1).stdout_contains("UNMET GATES:G1 (stale: src/lib.py changed");
    sandbox.write("src/lib.py", "def one():\n    return 1\n");
    sandbox.run(&["--proof", "-q"]).code(0).stdout_is("ALL MET (2 met)\n");
    // A deleted file whose index entry says "not checked out" is deleted.
    git(&sandbox.root, &["update-index", "--skip-worktree", "docs/guide.md"]);
    fs::remove_file(sandbox.path("docs/guide.md")).unwrap();
    sandbox
        .run(&["--status", "--proof"])
        .code(1)
        .stdout_contains("UNMET GATES:G1 (stale: docs/guide.md changed since it was proven)")
        .stdout_contains("UNMET GATES:G2 (unproven: its INPUTS match no file)");
}

#[cfg_attr(
    windows,
    ignore = "makes its repository with git, which the wine prefix the Windows tests run in does not have"
)]
#[test]
fn inputs_are_the_persons_to_approve_and_must_name_files() {
    let sandbox = proven_repository();
    // Narrowing INPUTS asks for approval again, saying what changed.
    let narrowed = sandbox.read("GATES.md").replace("INPUTS: docs", "INPUTS: docs/guide.md");
    sandbox.write("GATES.md", &narrowed);
    sandbox
        .run(&["--reverify"])
        .code(1)
        .stdout_contains("APPROVAL REQUIRED GATES:G2")
        .stdout_contains("    CHANGED SINCE APPROVAL: INPUTS approved as `docs`, now `docs/guide.md`\n")
        .stdout_lacks("APPROVAL REQUIRED GATES:G1")
        .stderr_contains("GATES:G2 unproven: it was proven with other INPUTS");
    sandbox.run(&["--approve", "--reverify", "-q"]).code(0).stdout_contains("ALL MET (2 met");
    sandbox.run(&["--status", "--proof"]).code(0).stdout_is("GATES.md: 2 gates\nALL MET (2 met)\n");
    // INPUTS that match no file would keep a proof current forever.
    let nowhere = sandbox.read("GATES.md").replace("INPUTS: docs/guide.md", "INPUTS: no-such-dir");
    sandbox.write("GATES.md", &nowhere);
    sandbox
        .run(&["--approve", "-q", "--reverify"])
        .code(0)
        .stdout_contains("ALL MET (2 met")
        .stderr_contains("GATES:G2 unproven: its INPUTS match no file");
    sandbox
        .run(&["--status", "--proof"])
        .code(1)
        .stdout_contains("UNMET GATES:G2 (unproven: its INPUTS match no file)");
}

// Symbolic links: Windows lets only administrators (or Developer Mode)
// create one, and wine 8, which runs the Windows tests, creates none.
#[cfg(unix)]
#[test]
fn a_repository_reached_through_a_link_has_the_same_proofs() {
    let sandbox = proven_repository();
    let link = sandbox.root.parent().unwrap().join("link");
    std::os::unix::fs::symlink(&sandbox.root, &link).unwrap();
    let mut command = sandbox.cmd();
    command.args(["--status", "--proof", "--root"]).arg(&link);
    sandbox.run_with(&mut command).code(0).stdout_is("GATES.md: 2 gates\nALL MET (2 met)\n");
    let mut payload: serde_json::Value = serde_json::from_str(&stop_payload(&sandbox, "Stop", None)).unwrap();
    payload["cwd"] = serde_json::json!(link);
    let mut hook = sandbox.cmd();
    hook.args(["hook", "stop"]).write_stdin(payload.to_string());
    sandbox.run_with(&mut hook).code(0).stdout_is("").stderr_is("");
}

#[test]
fn concurrent_first_runs_share_one_owner_key_and_prove_every_gate() {
    // Each round starts with no receipt store: eight runs make it at once,
    // and each must find the one owner key, never a key caught mid-creation.
    let sandbox = Sandbox::new();
    let ledger: String = (0..8).map(|i| crate::common::gate(&format!("G{i}"), &format!("echo ok-{i}"), "ok")).collect();
    for round in 0..6 {
        sandbox.write("GATES.md", &ledger);
        let store = sandbox.root.parent().unwrap().join(format!("receipts-{round}"));
        let commands = (0..8).map(|_| {
            let mut command = sandbox.std_cmd();
            command.env("UNLAZY_RECEIPT_DIR", &store).args(["--approve", "--jobs", "8", "-q"]);
            command
        });
        for output in crate::common::run_concurrently(commands) {
            let (code, out, err) = crate::common::outcome(&output);
            assert_eq!(code, 0, "round {round}: {out}{err}");
            // (A run may start while another's proofs are being written and
            // say so; none may find the store unusable or fail to keep one.)
            assert!(!err.contains("receipts cannot be used") && !err.contains("not kept"), "round {round}: {err}");
        }
        let mut status = sandbox.cmd();
        status.env("UNLAZY_RECEIPT_DIR", &store).args(["--status", "--proof"]);
        sandbox.run_with(&mut status).code(0).stdout_is("GATES.md: 8 gates\nALL MET (8 met)\n");
    }
}
