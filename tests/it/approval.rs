//! The approval store through the real binary: unapproved oracles are shown
//! and never run; records are private, exactly named as the Node tool names
//! them, bound to every input; anything unusual about the store or a record
//! fails closed.

use std::fs;
#[cfg(unix)]
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::PathBuf;

use crate::common::{gate, outcome, run_concurrently, sh, Sandbox};
#[cfg(unix)]
use crate::core_support::mode_of;
use crate::core_support::{oracle_json, record_name, PATH_DELIMITER};

const PATH: &str = if cfg!(windows) { r"C:\windows\system32;C:\windows" } else { "/usr/local/bin:/usr/bin:/bin" };
const CHECK: &str = if cfg!(windows) { "type nul > created.txt && echo ok" } else { "touch created.txt && echo ok" };
/// A shell file other than the default one.
const OTHER_SHELL: &str = if cfg!(windows) { r"C:\windows\system32\find.exe" } else { "/bin/bash" };

fn ledger() -> String {
    gate("A", CHECK, "ok")
}

fn cmd(sandbox: &Sandbox) -> assert_cmd::Command {
    let mut cmd = sandbox.cmd();
    cmd.env("PATH", PATH);
    cmd
}

fn expected_record(sandbox: &Sandbox) -> (PathBuf, String) {
    let root = sandbox.root.to_str().unwrap();
    let ledger = sandbox.path("GATES.md");
    let json = oracle_json(CHECK, "ok", root, &sh::default_shell(), 120, PATH);
    let (name, signature) = record_name(ledger.to_str().unwrap(), "A", &json);
    (sandbox.approvals.join(name), signature)
}

#[cfg(unix)]
fn chmod(path: &std::path::Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// A normal run that must fail closed: exit 2, message, nothing executed,
/// ledger unchanged.
fn assert_fails_closed(sandbox: &Sandbox, cmd: &mut assert_cmd::Command, fragment: &str) {
    let before = sandbox.read("GATES.md");
    // Nothing is judged: at most the ledger's summary line, no result or verdict.
    let out = sandbox.run_with(cmd).code(2).stderr_contains(fragment).into_stdout();
    assert!(out.is_empty() || out == "GATES.md: 1 gates\n", "{out}");
    assert!(!sandbox.path("created.txt").exists(), "a check ran despite a broken store");
    assert_eq!(sandbox.read("GATES.md"), before);
}

#[test]
fn an_unapproved_oracle_is_shown_and_not_run() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &ledger());
    let long_path = format!("{PATH}{PATH_DELIMITER}{}", "/opt/very-long-entry".repeat(60));
    assert!(long_path.len() > 800);
    let expected = format!(
        "APPROVAL REQUIRED GATES:A\n    CHECK: {CHECK}\n    EXPECT: ok\n    CWD: {}\n    SHELL: {}\n    TIMEOUT: 120s\n    PATH: {}...\n    NOT RUN: inspect this oracle, then re-run with --approve\n",
        sandbox.root.display(),
        sh::default_shell(),
        &long_path[..800]
    );
    sandbox
        .run_with(sandbox.cmd().env("PATH", &long_path))
        .code(1)
        .stdout_starts_with(&expected)
        .stdout_contains("UNMET: 1 (met: 0)\n  GATES:A");
    assert!(!sandbox.path("created.txt").exists(), "an unapproved CHECK ran");
    assert_eq!(sandbox.read("GATES.md"), ledger());
    assert_eq!(sandbox.approval_count(), 0);

    let exact: String = format!("{PATH}{PATH_DELIMITER}{}", "x".repeat(800 - PATH.len() - 1));
    assert_eq!(exact.len(), 800);
    sandbox.run_with(sandbox.cmd().env("PATH", &exact)).code(1).stdout_contains(&format!("    PATH: {exact}\n"));
    // The cap counts UTF-16 code units, as the Node tool does.
    let wide = format!("/bin{PATH_DELIMITER}{}", "\u{1F600}".repeat(398));
    sandbox
        .run_with(sandbox.cmd().env("PATH", &wide))
        .code(1)
        .stdout_contains(&format!("    PATH: /bin{PATH_DELIMITER}{}...\n", "\u{1F600}".repeat(397)));
}

#[test]
fn approve_records_privately_and_later_runs_need_no_approval() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &ledger());
    let store = sandbox.approvals.join("nested").join("store");
    let approved = sandbox
        .run_with(cmd(&sandbox).env("UNLAZY_APPROVAL_DIR", &store).arg("--approve"))
        .code(0)
        .stdout_contains("APPROVING GATES:A")
        .stdout_contains("PASS GATES:A");
    let records: Vec<PathBuf> = fs::read_dir(&store).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(records.len(), 1, "{records:?}");
    // Windows has no mode bits: the store's ACL is checked in `windows`.
    #[cfg(unix)]
    {
        assert_eq!(mode_of(&store), 0o700);
        assert_eq!(mode_of(store.parent().unwrap()), 0o700);
        assert_eq!(mode_of(&records[0]), 0o600);
    }
    approved.stdout_contains(&format!("    APPROVED: {}", records[0].display()));
    assert!(sandbox.path("created.txt").exists());

    // Same check, unchecked again: a normal run executes it without asking.
    fs::remove_file(sandbox.path("created.txt")).unwrap();
    sandbox.write("GATES.md", &ledger());
    sandbox
        .run_with(cmd(&sandbox).env("UNLAZY_APPROVAL_DIR", &store))
        .code(0)
        .stdout_lacks("APPROVAL REQUIRED")
        .stdout_contains("PASS GATES:A");
    assert!(sandbox.path("created.txt").exists());
}

#[test]
fn record_name_and_content_match_the_node_tool() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &ledger());
    sandbox.run_with(cmd(&sandbox).arg("--approve")).code(0).stdout_contains("\nALL MET (1 met)\n");
    let (path, signature) = expected_record(&sandbox);
    assert!(path.exists(), "no record at {}", path.display());
    let record: serde_json::Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(record["schema"], 1);
    assert_eq!(record["file"], sandbox.path("GATES.md").to_str().unwrap());
    assert_eq!(record["gate"], "A");
    assert_eq!(record["signature"], signature.as_str());
    let oracle: serde_json::Value = serde_json::from_str(&oracle_json(
        CHECK,
        "ok",
        sandbox.root.to_str().unwrap(),
        &sh::default_shell(),
        120,
        PATH,
    ))
    .unwrap();
    assert_eq!(record["oracle"], oracle);
    assert!(record["approvedAt"].as_str().is_some_and(|t| t.ends_with('Z')), "{record}");
}

#[test]
fn a_node_written_record_is_honoured() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &ledger());
    let (path, signature) = expected_record(&sandbox);
    let record = serde_json::json!({
        "schema": 1,
        "file": sandbox.path("GATES.md").to_str().unwrap(),
        "gate": "A",
        "signature": signature,
        "approvedAt": "2025-01-01T00:00:00.000Z",
    });
    fs::write(&path, record.to_string()).unwrap();
    #[cfg(unix)]
    chmod(&path, 0o600);
    sandbox.run_with(&mut cmd(&sandbox)).code(0).stdout_lacks("APPROVAL REQUIRED").stdout_contains("\nALL MET (");
}

#[test]
fn every_bound_input_requires_approval_again() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &ledger());
    fs::create_dir(sandbox.path("sub")).unwrap();
    sandbox.run_with(cmd(&sandbox).arg("--approve")).code(0).stdout_contains("\nALL MET (");
    // Unchanged identity must stay approved.
    sandbox.run_with(cmd(&sandbox).arg("--reverify")).code(0).stdout_contains("\nALL MET (");
    // The same file named explicitly is the same identity.
    sandbox
        .run_with(cmd(&sandbox).args(["--reverify", "GATES.md"]))
        .code(0)
        .stdout_lacks("APPROVAL REQUIRED")
        .stdout_contains("\nALL MET (");
    let approved = sandbox.read("GATES.md");

    let needs_approval = |edit: Option<String>, args: &[&str], path: &str| {
        if let Some(text) = &edit {
            sandbox.write("GATES.md", text);
        }
        let run = sandbox
            .run_with(sandbox.cmd().env("PATH", path).arg("--reverify").args(args))
            .code(1)
            .stdout_contains("APPROVAL REQUIRED")
            .stdout_contains("NOT RUN")
            .stdout_lacks("PASS");
        // A copy of the ledger elsewhere holds the evidence but no proof.
        if args == ["other.md"] {
            run.stderr_contains("other:A unproven: no receipt");
        }
        sandbox.write("GATES.md", &approved);
    };
    needs_approval(Some(approved.replace(CHECK, &CHECK.replace("echo ok", "echo  ok"))), &[], PATH); // CHECK
    needs_approval(Some(approved.replace("EXPECT: ok", "EXPECT: o")), &[], PATH); // EXPECT
    needs_approval(Some(approved.replace("EXPECT: ok\n", "EXPECT: ok\n  CWD: sub\n")), &[], PATH); // CWD attribute
    needs_approval(None, &["--cwd", "sub"], PATH); // --cwd
    needs_approval(None, &["--shell", OTHER_SHELL], PATH); // --shell
    needs_approval(None, &["--timeout", "119"], PATH); // --timeout
    needs_approval(None, &[], &format!("{PATH}{PATH_DELIMITER}/opt/bin")); // PATH
    fs::write(sandbox.path("other.md"), &approved).unwrap();
    needs_approval(None, &["other.md"], PATH); // ledger path
    assert_eq!(sandbox.approval_count(), 1);
}

#[test]
fn store_inside_the_root_is_refused() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &ledger());
    let inside = sandbox.path("approvals");
    assert_fails_closed(
        &sandbox,
        cmd(&sandbox).env("UNLAZY_APPROVAL_DIR", &inside).arg("--approve"),
        "UNLAZY_APPROVAL_DIR must be outside the repository root",
    );
    assert!(!inside.exists());
    // Symbolic links: Windows lets only administrators (or Developer Mode)
    // create one, and wine 8 creates none.
    #[cfg(unix)]
    {
        // Lexically outside, canonically inside.
        store_reached_through_a_link_is_refused(&sandbox);
    }
}

#[cfg(unix)]
fn store_reached_through_a_link_is_refused(sandbox: &Sandbox) {
    let real = sandbox.path(".private");
    fs::create_dir(&real).unwrap();
    chmod(&real, 0o700);
    let alias = sandbox.approvals.join("alias");
    symlink(&sandbox.root, &alias).unwrap();
    assert_fails_closed(
        sandbox,
        cmd(sandbox).env("UNLAZY_APPROVAL_DIR", alias.join(".private")).arg("--approve"),
        "approval directory resolves inside the repository root",
    );
}

#[test]
fn a_large_batch_of_lookups_keeps_each_answer_with_its_own_gate() {
    // Approved checks start while later gates are still being looked up:
    // each answer must land on its gate, so changing one gate's CHECK stops
    // exactly that gate, and the report keeps the Node tool's order (every
    // approval block, then every RUN line, then the results in ledger order).
    let sandbox = Sandbox::new();
    let gates = |changed: usize| -> String {
        (0..150)
            .map(|i| gate(&format!("G{i}"), if i == changed { "echo ok && echo ok" } else { "echo ok" }, "ok"))
            .collect()
    };
    sandbox.write("GATES.md", &gates(usize::MAX));
    sandbox.run_with(cmd(&sandbox).arg("--approve")).code(0).stdout_contains("\nALL MET (");
    assert_eq!(sandbox.approval_count(), 150);
    for jobs in ["1", "4"] {
        sandbox.write("GATES.md", &gates(137));
        let out = sandbox.run_with(cmd(&sandbox).args(["--jobs", jobs])).code(1).into_stdout();
        assert_eq!(out.matches("APPROVAL REQUIRED").count(), 1, "{out}");
        assert!(out.contains("APPROVAL REQUIRED GATES:G137\n"), "{out}");
        let lines: Vec<&str> = out.lines().collect();
        let position = |prefix: &str| lines.iter().position(|line| line.starts_with(prefix)).unwrap();
        let runs: Vec<&str> = lines.iter().filter_map(|line| line.strip_prefix("  RUN  GATES:")).collect();
        let passes: Vec<&str> = lines.iter().filter_map(|line| line.strip_prefix("  PASS GATES:")).collect();
        let expected: Vec<String> = (0..150).filter(|i| *i != 137).map(|i| format!("G{i}")).collect();
        assert_eq!(runs.iter().map(|run| run.split(' ').next().unwrap()).collect::<Vec<_>>(), expected, "{out}");
        assert_eq!(passes.iter().map(|pass| pass.split(':').next().unwrap()).collect::<Vec<_>>(), expected, "{out}");
        assert!(position("APPROVAL REQUIRED") < position("  RUN  "), "{out}");
        assert!(lines.iter().rposition(|line| line.starts_with("  RUN  ")).unwrap() < position("  PASS "), "{out}");
        assert!(sandbox.read("GATES.md").contains("- [ ] G137:"), "the unapproved gate stays unmet");
    }
}

// Links, mode bits and owners; the Windows store's ACL and owner are
// checked in `windows`.
#[cfg(unix)]
#[test]
fn broken_stores_fail_closed() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &ledger());
    let elsewhere = sandbox.approvals.join("real");
    fs::create_dir(&elsewhere).unwrap();
    chmod(&elsewhere, 0o700);
    let link = sandbox.approvals.join("link");
    symlink(&elsewhere, &link).unwrap();
    for args in [&[][..], &["--approve"][..]] {
        assert_fails_closed(
            &sandbox,
            cmd(&sandbox).env("UNLAZY_APPROVAL_DIR", &link).args(args),
            "must be a real directory",
        );
    }
    for mode in [0o750, 0o705, 0o770] {
        chmod(&sandbox.approvals, mode);
        assert_fails_closed(&sandbox, cmd(&sandbox).arg("--approve"), "must not grant group or other permissions");
    }
    chmod(&sandbox.approvals, 0o700);
    let foreign = if nix::unistd::geteuid().is_root() {
        let dir = sandbox.approvals.join("foreign");
        fs::create_dir(&dir).unwrap();
        chmod(&dir, 0o700);
        nix::unistd::chown(&dir, Some(nix::unistd::Uid::from_raw(54321)), None).unwrap();
        dir
    } else {
        PathBuf::from("/")
    };
    assert_fails_closed(
        &sandbox,
        cmd(&sandbox).env("UNLAZY_APPROVAL_DIR", &foreign).arg("--approve"),
        "must be owned by the current user",
    );
    assert_eq!(sandbox.approval_count(), 0);
}

#[test]
fn broken_records_fail_closed() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &ledger());
    sandbox.run_with(cmd(&sandbox).arg("--approve")).code(0).stdout_contains("\nALL MET (");
    fs::remove_file(sandbox.path("created.txt")).unwrap();
    sandbox.write("GATES.md", &ledger());
    let (record, _) = expected_record(&sandbox);
    let saved = fs::read(&record).unwrap();

    let second = sandbox.approvals.join("second-name");
    fs::hard_link(&record, &second).unwrap();
    assert_fails_closed(&sandbox, &mut cmd(&sandbox), "refusing linked or replaced approval record");
    fs::remove_file(&second).unwrap();
    // Mode bits, links and owners: Windows' ACL twin is in `windows`.
    #[cfg(unix)]
    record_permissions_links_and_owner_fail_closed(&sandbox, &record);
    assert_eq!(fs::read(&record).unwrap(), saved);
    // The intact record is usable again.
    sandbox.run_with(&mut cmd(&sandbox)).code(0).stdout_contains("\nALL MET (");
}

#[cfg(unix)]
fn record_permissions_links_and_owner_fail_closed(sandbox: &Sandbox, record: &std::path::Path) {
    chmod(record, 0o640);
    assert_fails_closed(sandbox, &mut cmd(sandbox), "must not grant group or other permissions");
    chmod(record, 0o600);

    fs::rename(record, sandbox.approvals.join("target.json.bak")).unwrap();
    symlink(sandbox.approvals.join("target.json.bak"), record).unwrap();
    assert_fails_closed(sandbox, &mut cmd(sandbox), "must be a real file");
    fs::remove_file(record).unwrap();
    fs::rename(sandbox.approvals.join("target.json.bak"), record).unwrap();

    if nix::unistd::geteuid().is_root() {
        nix::unistd::chown(record, Some(nix::unistd::Uid::from_raw(54321)), None).unwrap();
        assert_fails_closed(sandbox, &mut cmd(sandbox), "must be owned by the current user");
        nix::unistd::chown(record, Some(nix::unistd::geteuid()), None).unwrap();
    }
}

#[test]
fn records_with_wrong_fields_are_not_approvals() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &ledger());
    let (record, signature) = expected_record(&sandbox);
    let file = sandbox.path("GATES.md").to_str().unwrap().to_string();
    let bodies = [
        serde_json::json!({"file": "/elsewhere/GATES.md", "gate": "A", "signature": signature}).to_string(),
        serde_json::json!({"file": file, "gate": "B", "signature": signature}).to_string(),
        serde_json::json!({"file": file, "gate": "A", "signature": "0".repeat(64)}).to_string(),
        serde_json::json!({"file": file, "gate": "A"}).to_string(),
        "{not json".to_string(),
        String::new(),
    ];
    for body in bodies {
        fs::write(&record, &body).unwrap();
        #[cfg(unix)]
        chmod(&record, 0o600);
        sandbox
            .run_with(&mut cmd(&sandbox))
            .code(1)
            .stdout_contains("APPROVAL REQUIRED GATES:A")
            .stdout_contains("NOT RUN");
        assert!(!sandbox.path("created.txt").exists());
    }
}

/// A record is read as `JSON.parse` reads it: of repeated keys the last
/// counts, escapes in keys and values are decoded, and a key whose last value
/// is not a string has no value.
#[test]
fn records_are_read_as_the_node_tool_parses_them() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &ledger());
    let (record, signature) = expected_record(&sandbox);
    let file = serde_json::to_string(sandbox.path("GATES.md").to_str().unwrap()).unwrap();
    let escaped_file = file.replace('/', "\\/");
    let approve = [
        format!(r#"{{"file":{file},"gate":"A","signature":5,"signature":"{signature}"}}"#),
        format!(
            r#"{{"fil\u0065":{escaped_file},"gate":"\u0041","oracle":{{"nested":[1,{{"signature":0}}]}},"signature":"{signature}"}}"#
        ),
    ];
    let refuse = [
        format!(r#"{{"file":{file},"gate":"A","signature":"{signature}","signature":null}}"#),
        format!(r#"{{"file":{file},"gate":["A"],"signature":"{signature}"}}"#),
        format!(r#"[{file},"A","{signature}"]"#),
    ];
    for (body, approved) in approve.iter().map(|b| (b, true)).chain(refuse.iter().map(|b| (b, false))) {
        sandbox.write("GATES.md", &ledger());
        fs::write(&record, body).unwrap();
        #[cfg(unix)]
        chmod(&record, 0o600);
        let run = sandbox.run_with(&mut cmd(&sandbox)).code(if approved { 0 } else { 1 });
        if approved {
            run.stdout_lacks("APPROVAL REQUIRED GATES:A").stdout_contains("\nALL MET (");
        } else {
            run.stdout_contains("APPROVAL REQUIRED GATES:A");
        }
    }
}

#[test]
fn concurrent_approvals_leave_one_valid_record() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("A", &sh::then(&sh::sleep(1), "echo ok"), "ok"));
    let run_eight = |args: &[&str]| {
        let commands = (0..8).map(|_| {
            let mut command = sandbox.std_cmd();
            command.env("PATH", PATH).args(args);
            command
        });
        for output in run_concurrently(commands) {
            let (code, out, err) = outcome(&output);
            assert_eq!(code, 0, "{args:?}: {out}{err}");
        }
    };
    run_eight(&["--approve"]);
    // Concurrent runs replace the ledger under each other's reads; each
    // must see the old or the new file, never fail.
    run_eight(&["--reverify"]);
    run_eight(&["--reverify", "--approve"]);
    let names: Vec<String> = fs::read_dir(&sandbox.approvals)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    let record: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(sandbox.approvals.join(&names[0])).unwrap()).unwrap();
    assert_eq!(record["gate"], "A");
    sandbox
        .run_with(cmd(&sandbox).arg("--reverify"))
        .code(0)
        .stdout_lacks("APPROVAL REQUIRED")
        .stdout_contains("\nALL MET (");
}

#[test]
fn status_never_touches_the_store() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &ledger());
    let missing = sandbox.approvals.join("missing");
    let unmet = "  UNMET GATES:A (unchecked): outcome A\nGATES.md: 1 gates\nUNMET: 1 (met: 0)\n  GATES:A\n";
    sandbox.run_with(sandbox.cmd().env("UNLAZY_APPROVAL_DIR", &missing).arg("--status")).code(1).stdout_is(unmet);
    assert!(!missing.exists(), "--status created the approval store");
    #[cfg(unix)]
    chmod(&sandbox.approvals, 0o777);
    // A broken store must not break --status.
    sandbox.run(&["--status"]).code(1).stdout_is(unmet);
    sandbox
        .run_with(sandbox.cmd().env("UNLAZY_APPROVAL_DIR", sandbox.path("inside")).arg("--status"))
        .code(1)
        .stdout_is("  UNMET GATES:A (unchecked): outcome A\nGATES.md: 1 gates\nUNMET: 1 (met: 0)\n  GATES:A\n");
    #[cfg(unix)]
    chmod(&sandbox.approvals, 0o700);
}
