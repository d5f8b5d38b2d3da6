//! Definition-bound evidence, reverify, write-back and output markers
//! through the real binary.

use std::fs;

use crate::common::{gate, sh, Run, Sandbox};
use crate::core_support::{definition_digest, lines_with_endings, success_evidence, EMPTY_TREE};

const PATH: &str = if cfg!(windows) { r"C:\windows\system32;C:\windows" } else { "/usr/local/bin:/usr/bin:/bin" };
const TOUCH_RAN: &str = if cfg!(windows) { "type nul > ran.txt && echo ok" } else { "touch ran.txt && echo ok" };

fn cmd(sandbox: &Sandbox) -> assert_cmd::Command {
    let mut cmd = sandbox.cmd();
    cmd.env("PATH", PATH);
    cmd
}

/// `--status` that could not run anything even if it tried.
fn status(sandbox: &Sandbox) -> Run {
    sandbox.run_with(sandbox.cmd().env("UNLAZY_SHELL", "/nonexistent/sh").env("PATH", "").arg("--status"))
}

fn current_evidence(sandbox: &Sandbox, check: &str, expect: &str, cwd: Option<&str>) -> String {
    let digest = definition_digest(check, expect, cwd);
    success_evidence(&digest, &format!("ok{}", sh::EOL), &sh::default_shell(), sandbox.root.to_str().unwrap(), PATH)
}

#[test]
fn evidence_line_format_is_exact() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("A", "echo ok", "ok"));
    sandbox
        .run_with(cmd(&sandbox).arg("--approve"))
        .code(0)
        .stdout_contains("\n  PASS GATES:A: ")
        .stdout_contains("\nALL MET (");
    let expected = current_evidence(&sandbox, "echo ok", "ok", None);
    assert!(expected.starts_with("automatic-evidence=v1; definition-sha256="));
    // The tree it ran on comes last: here nothing but the ledger, which is
    // never part of it.
    assert_eq!(
        sandbox.read("GATES.md"),
        format!("- [x] A: outcome A\n  CHECK: echo ok\n  EXPECT: ok\n  EVIDENCE: {expected}{EMPTY_TREE}\n")
    );

    // The raw CWD text is part of the definition.
    let text = "- [ ] A: a\n  CHECK: echo ok\n  EXPECT: ok\n  CWD: ./\n  EVIDENCE: pending\n";
    sandbox.write("GATES.md", text);
    sandbox
        .run_with(cmd(&sandbox).arg("--approve"))
        .code(0)
        .stdout_contains("\n  PASS GATES:A: ")
        .stdout_contains("\nALL MET (");
    let digest = definition_digest("echo ok", "ok", Some("./"));
    assert_ne!(digest, definition_digest("echo ok", "ok", None));
    assert!(sandbox
        .read("GATES.md")
        .contains(&format!("EVIDENCE: automatic-evidence=v1; definition-sha256={digest}; exit=0;")));
}

#[test]
fn status_marks_unbound_evidence_stale_without_running_anything() {
    let sandbox = Sandbox::new();
    let check = TOUCH_RAN;
    let digest = definition_digest(check, "ok", None);
    let other = definition_digest("echo other", "ok", None);
    let current = current_evidence(&sandbox, check, "ok", None);
    let stale = [
        None,
        Some("".to_string()),
        Some("pending".to_string()),
        Some("PENDING".to_string()),
        Some("it worked when I tried it".to_string()),
        Some("exit=0; shell=/bin/sh; cwd=/repo".to_string()),
        Some(format!("automatic-evidence=v1; definition-sha256={digest}; exit=0; EXPECT=matched")),
        Some(format!("automatic-evidence=v1; definition-sha256={}", &digest[..20])),
        Some(current.replace("automatic-evidence=v1", "automatic-evidence=v2")),
        Some(current.replace(&digest, &other)),
        Some(current.replace("exit=0", "exit=1")),
        Some(format!("{current}{}", "x".repeat(900))),
    ];
    for evidence in stale {
        let line = evidence.as_ref().map(|e| format!("  EVIDENCE: {e}\n")).unwrap_or_default();
        sandbox.write("GATES.md", &format!("- [x] A: a\n  CHECK: {check}\n  EXPECT: ok\n{line}"));
        status(&sandbox)
            .code(1)
            .stdout_contains("UNMET GATES:A (checked but automatic evidence is stale or unbound): a");
        assert!(!sandbox.path("ran.txt").exists());
    }
    sandbox.write("GATES.md", &format!("- [x] A: a\n  CHECK: {check}\n  EXPECT: ok\n  EVIDENCE: {current}\n"));
    // Written by hand, the line is current evidence, but no proof.
    status(&sandbox)
        .code(0)
        .stdout_contains("ALL MET (1 met)")
        .stderr_contains("GATES:A unproven: no receipt: gate-check did not prove it here");
    assert_eq!(sandbox.approval_count(), 0);
    assert!(!sandbox.path(".unlazy").exists(), "--status wrote state");
}

#[test]
fn manual_gate_states() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "GATES.md",
        "- [x] M1: attested\n  EVIDENCE: read the diff on 2025-03-01\n\
         - [x] M2: ticked but pending\n  EVIDENCE: pending\n\
         - [x] M3: ticked without evidence\n\
         - [ ] M4: not ticked\n  EVIDENCE: someone wrote this early\n\
         - [x] M5: automatic evidence on a manual gate\n  EVIDENCE: automatic-evidence=v1; definition-sha256=abc\n",
    );
    status(&sandbox)
        .code(1)
        .stdout_lacks("GATES:M1 (")
        .stdout_contains("UNMET GATES:M2 (checked but EVIDENCE pending)")
        .stdout_contains("UNMET GATES:M3 (checked but EVIDENCE pending)")
        .stdout_contains("UNMET GATES:M4 (unchecked)")
        .stdout_contains("UNMET GATES:M5 (checked but automatic evidence is stale or unbound)")
        .stdout_contains("UNMET: 4 (met: 1)");

    // Adding an oracle to a human-attested gate makes the attestation stale.
    sandbox.write(
        "GATES.md",
        "- [x] M1: attested\n  CHECK: echo ok\n  EXPECT: ok\n  EVIDENCE: read the diff on 2025-03-01\n",
    );
    status(&sandbox).code(1).stdout_contains("UNMET GATES:M1 (checked but automatic evidence is stale or unbound)");
}

#[test]
fn normal_runs_rerun_stale_gates_and_migrate_them() {
    let sandbox = Sandbox::new();
    sandbox
        .write("GATES.md", "- [x] A: a\n  CHECK: echo ok\n  EXPECT: ok\n  EVIDENCE: exit=0; shell=/bin/sh; cwd=/old\n");
    sandbox.run_with(cmd(&sandbox).arg("--approve")).code(0).stdout_contains("PASS GATES:A");
    let expected = current_evidence(&sandbox, "echo ok", "ok", None);
    assert!(sandbox.read("GATES.md").contains(&format!("  EVIDENCE: {expected}{EMPTY_TREE}\n")));

    // Editing CHECK after the pass makes the evidence stale ...
    let failing = sh::then("echo ok", sh::FALSE);
    let edited = sandbox.read("GATES.md").replace("CHECK: echo ok", &format!("CHECK: {failing}"));
    sandbox.write("GATES.md", &edited);
    status(&sandbox).code(1).stdout_contains("UNMET GATES:A (checked but automatic evidence is stale or unbound)");
    // ... and a failed rerun unchecks it and resets its evidence.
    sandbox.run_with(cmd(&sandbox).arg("--approve")).code(1).stdout_contains("FAIL GATES:A");
    assert_eq!(
        sandbox.read("GATES.md"),
        format!("- [ ] A: a\n  CHECK: {failing}\n  EXPECT: ok\n  EVIDENCE: pending\n")
    );
}

#[test]
fn a_met_gate_is_never_executed_by_a_normal_run() {
    let sandbox = Sandbox::new();
    let check = TOUCH_RAN;
    let evidence = current_evidence(&sandbox, check, "ok", None);
    let text = format!("- [x] A: a\n  CHECK: {check}\n  EXPECT: ok\n  EVIDENCE: {evidence}\n");
    sandbox.write("GATES.md", &text);
    sandbox
        .run_with(&mut cmd(&sandbox))
        .code(0)
        .stdout_contains("ALL MET (1 met)")
        .stdout_lacks("RUN")
        .stdout_lacks("APPROVAL REQUIRED")
        .stderr_contains("GATES:A unproven");
    assert!(!sandbox.path("ran.txt").exists());
    assert_eq!(sandbox.read("GATES.md"), text);
}

/// Prints ok when the file `flag` exists.
const FLAG_CHECK: &str = if cfg!(windows) { "if exist flag echo ok" } else { "test -f flag && echo ok" };

#[test]
fn reverify_reruns_met_gates_and_demotes_failures() {
    let sandbox = Sandbox::new();
    sandbox.write("flag", "");
    sandbox.write(
        "GATES.md",
        &format!(
            "{}{}- [x] M: manual\n  EVIDENCE: checked by hand\n",
            gate("A", "echo ok", "ok"),
            gate("B", FLAG_CHECK, "ok")
        ),
    );
    sandbox.run_with(cmd(&sandbox).arg("--approve")).code(0).stdout_contains("ALL MET (3 met)");
    sandbox
        .run_with(cmd(&sandbox).arg("--reverify"))
        .code(0)
        .stdout_contains("ALL MET (3 met, reran: 2, 2 of them met before)");

    fs::remove_file(sandbox.path("flag")).unwrap();
    sandbox
        .run_with(cmd(&sandbox).arg("--reverify"))
        .code(1)
        .stdout_contains("PASS GATES:A")
        .stdout_contains("FAIL GATES:B")
        .stdout_contains("UNMET: 1 (met: 2, reran: 2, 2 of them met before)\n  GATES:B");
    let ledger = sandbox.read("GATES.md");
    assert!(
        ledger.contains(&format!("- [ ] B: outcome B\n  CHECK: {FLAG_CHECK}\n  EXPECT: ok\n  EVIDENCE: pending\n")),
        "{ledger}"
    );
    assert!(ledger.contains("- [x] A: outcome A"), "{ledger}");
}

#[test]
fn a_result_whose_definition_changed_while_running_is_discarded() {
    let sandbox = Sandbox::new();
    // The check rewrites its own CHECK line (cmd.exe has no sed: it copies a
    // ledger prepared with the new line over the old one).
    let (check, changed) = if cfg!(windows) {
        let check = "copy /y changed.md GATES.md > nul && echo ok";
        (check.to_string(), check.replace("copy", "copy  "))
    } else {
        let check = "sed -i 's/marker-one/marker-two/' GATES.md && echo ok # marker-one";
        (check.to_string(), check.replacen("marker-one", "marker-two", 1))
    };
    sandbox.write("changed.md", &gate("A", &changed, "ok"));
    sandbox.write("GATES.md", &gate("A", &check, "ok"));
    sandbox
        .run_with(cmd(&sandbox).arg("--approve"))
        .code(1)
        .stdout_contains("PASS GATES:A")
        .stdout_contains("  STALE GATES:A: definition or runtime approval oracle changed; result not written");
    assert_eq!(sandbox.read("GATES.md"), gate("A", &changed, "ok"));
}

#[test]
fn concurrent_hand_edits_survive_and_only_gate_lines_change() {
    let sandbox = Sandbox::new();
    // cmd.exe would take `<` and `>` in the text for redirections, and a
    // space before them for text.
    let (check, appended) = if cfg!(windows) {
        ("echo appended by hand>>GATES.md&& echo ok", "appended by hand\r\n")
    } else {
        ("echo '<!-- appended by hand -->' >> GATES.md && echo ok", "<!-- appended by hand -->\n")
    };
    let before = format!(
        "# Ledger\n\nSome prose.\n\n```text\n- [ ] HIDDEN: in a fence\n```\n\n{}\n- [x] M: manual\n  EVIDENCE: by hand\n\n{}\ntrailing prose\n",
        gate("A", check, "ok"),
        gate("B", "echo nope", "ok")
    );
    let path = sandbox.write("GATES.md", &before);
    #[cfg(unix)]
    fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o640)).unwrap();
    sandbox
        .run_with(cmd(&sandbox).arg("--approve"))
        .code(1)
        .stdout_contains("PASS GATES:A")
        .stdout_contains("FAIL GATES:B");
    let after = fs::read(&path).unwrap();
    let (b, a) = (lines_with_endings(before.as_bytes()), lines_with_endings(&after));
    assert_eq!(a.len(), b.len() + 1, "{}", String::from_utf8_lossy(&after));
    let gate_line = b.iter().position(|l| l.starts_with(b"- [ ] A:")).unwrap();
    for (i, (x, y)) in b.iter().zip(&a).enumerate() {
        match i {
            i if i == gate_line => assert_eq!(y, b"- [x] A: outcome A\n"),
            i if i == gate_line + 3 => assert!(y.starts_with(b"  EVIDENCE: automatic-evidence=v1; ")),
            _ => assert_eq!(x, y, "line {i} changed"),
        }
    }
    assert_eq!(a.last().unwrap(), appended.as_bytes());
    #[cfg(unix)]
    assert_eq!(crate::core_support::mode_of(&path), 0o640, "the ledger's mode changed");
    let leftovers: Vec<_> = fs::read_dir(&sandbox.root)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
}

#[test]
fn summary_markers() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", "- [x] M: a\n  EVIDENCE: seen\n- [x] N: b\n  EVIDENCE: seen\n");
    status(&sandbox).code(0).stdout_is("GATES.md: 2 gates\nALL MET (2 met)\n");

    sandbox.write("GATES.md", "- [x] M: a\n  EVIDENCE: seen\n- [ ] N: b\n- [ ] O: c\n");
    status(&sandbox).code(1).stdout_is(
        "  UNMET GATES:N (unchecked): b\n  UNMET GATES:O (unchecked): c\nGATES.md: 3 gates\nUNMET: 2 (met: 1)\n  GATES:N, GATES:O\n\
         \x20 manual: GATES:N, GATES:O need a person: after checking by hand, tick the box and write EVIDENCE: with what \
         was seen (gate-check never runs a gate without CHECK)\n",
    );

    sandbox.write("GATES.md", "- [x] M: a\n  EVIDENCE: seen\n- [ ] N: b\nABANDON: N the vendor API was withdrawn\n");
    status(&sandbox).code(1).stdout_is("GATES.md: 2 gates\nHANDOFF REQUIRED: 1 abandoned (met: 1)\n  GATES:N\n");

    sandbox.write("GATES.md", "- [ ] M: a\n- [ ] N: b\nABANDON: N the vendor API was withdrawn\n");
    status(&sandbox).code(1).stdout_contains(
        "HANDOFF REQUIRED: 1 abandoned (met: 0, unmet: 1)\n  GATES:N\nUNMET: 1 (met: 0, abandoned: 1)\n  GATES:M\n",
    );

    // An abandoned runnable gate is never run.
    sandbox.write("GATES.md", &format!("{}ABANDON: A out of scope for this leaf\n", gate("A", TOUCH_RAN, "ok")));
    sandbox
        .run_with(cmd(&sandbox).arg("--approve"))
        .code(1)
        .stdout_contains("HANDOFF REQUIRED: 1 abandoned (met: 0)")
        .stdout_lacks("RUN");
    assert!(!sandbox.path("ran.txt").exists());
}

#[test]
fn ids_are_qualified_by_file_stem() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", "- [ ] G1: parent\n");
    sandbox.write("gates/leaf-1.2.1.md", "- [x] G2: done\n  EVIDENCE: seen\n- [ ] G3: open\n");
    sandbox.write("gates/Node-A.MD", "- [ ] G4: upper-case suffix is not discovered\n");
    status(&sandbox)
        .code(1)
        .stdout_contains("UNMET GATES:G1 (unchecked): parent")
        .stdout_contains("UNMET leaf-1.2.1:G3 (unchecked): open")
        .stdout_contains("UNMET: 2 (met: 1)\n  GATES:G1, leaf-1.2.1:G3\n")
        .stdout_lacks("G4");
}

/// The EVIDENCE value the run wrote for the only gate of GATES.md.
fn written_evidence(sandbox: &Sandbox) -> String {
    let text = sandbox.read("GATES.md");
    let line = text.lines().find(|l| l.starts_with("  EVIDENCE: ")).unwrap();
    line["  EVIDENCE: ".len()..].to_string()
}

#[cfg_attr(windows, ignore = "its CWD is longer than the 260 characters CreateProcess accepts for a working directory")]
#[test]
fn a_cut_inside_a_surrogate_pair_is_written_as_the_node_tool_writes_it() {
    let sandbox = Sandbox::new();
    let ledger =
        |cwd: &str| format!("- [ ] A: outcome A\n  CHECK: echo ok\n  EXPECT: ok\n  CWD: {cwd}\n  EVIDENCE: pending\n");
    // A first run shows how many UTF-16 units precede the CWD value.
    fs::create_dir(sandbox.path("d")).unwrap();
    sandbox.write("GATES.md", &ledger("d"));
    sandbox
        .run_with(cmd(&sandbox).arg("--approve"))
        .code(0)
        .stdout_contains("\n  PASS GATES:A: ")
        .stdout_contains("\nALL MET (");
    let first = written_evidence(&sandbox);
    let units = |text: &str| text.encode_utf16().count();
    let before_cwd = units(&first[..first.find("; cwd=").unwrap() + "; cwd=".len()]);
    // A deep directory whose emoji straddles the unit where the transcript
    // is cut: 900 less the tree field, which is kept whole.
    let root_units = units(sandbox.root.to_str().unwrap()) + 1;
    let mut padding = 900 - units(EMPTY_TREE) - 1 - before_cwd - root_units;
    let mut relative = String::new();
    while padding > 0 {
        let segment = padding.min(200);
        let last = segment == padding;
        let name = "a".repeat(if last { segment } else { segment - 1 });
        relative.push_str(&name);
        relative.push(if last { '\u{1F600}' } else { '/' });
        padding -= segment;
    }
    relative.push('x');
    fs::create_dir_all(sandbox.path(&relative)).unwrap();
    sandbox.write("GATES.md", &ledger(&relative));
    sandbox
        .run_with(cmd(&sandbox).arg("--approve"))
        .code(0)
        .stdout_contains("\n  PASS GATES:A: ")
        .stdout_contains("\nALL MET (");
    let evidence = written_evidence(&sandbox);
    assert_eq!(units(&evidence), 900, "{evidence}");
    assert!(evidence.ends_with(&format!("aaaa\u{FFFD}{EMPTY_TREE}")), "{evidence}");
    // The written line is current: a status run counts the gate as met.
    status(&sandbox).code(0).stdout_is("GATES.md: 1 gates\nALL MET (1 met)\n");
}
