//! Why approval is asked for again: when the store holds an earlier record
//! for the same ledger and gate, the APPROVAL REQUIRED block names the
//! bound fields that differ, shows the timeout, and the run ends with the
//! exact command that approves what it showed.

use std::fs;

use crate::common::{gate, make_private_file, sh, Sandbox};
use crate::core_support::{oracle_json, record_name, PATH_DELIMITER};

const PATH: &str = if cfg!(windows) { r"C:\windows\system32;C:\windows" } else { "/usr/bin:/bin" };
/// A shell file other than the default one.
const OTHER_SHELL: &str = if cfg!(windows) { r"C:\windows\system32\find.exe" } else { "/bin/bash" };

fn block(sandbox: &Sandbox, timeout: &str, path: &str, changed: Option<&str>) -> String {
    let changed = changed.map(|c| format!("    CHANGED SINCE APPROVAL: {c}\n")).unwrap_or_default();
    format!(
        "APPROVAL REQUIRED GATES:A\n    CHECK: echo ok\n    EXPECT: ok\n    CWD: {}\n    SHELL: {}\n    \
         TIMEOUT: {timeout}\n    PATH: {path}\n{changed}    NOT RUN: inspect this oracle, then re-run with --approve\n",
        sandbox.root.display(),
        sh::default_shell()
    )
}

fn approved_sandbox(timeout: &str) -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("A", "echo ok", "ok"));
    sandbox
        .run_with(sandbox.cmd().env("PATH", PATH).args(["--approve", "--timeout", timeout]))
        .code(0)
        .stdout_contains("ALL MET (1 met)\n");
    sandbox
}

/// Writes a private record at the name its fields give it.
fn write_record(sandbox: &Sandbox, name: &str, json: &serde_json::Value) {
    let path = sandbox.approvals.join(name);
    fs::write(&path, serde_json::to_string_pretty(json).unwrap()).unwrap();
    make_private_file(&path);
}

#[test]
fn a_changed_timeout_is_named_and_the_run_ends_with_the_approve_command() {
    let sandbox = approved_sandbox("10");
    let unmet = "GATES.md: 1 gates\nUNMET: 1 (met: 0, reran: 0, 0 of them met before)\n  \
                 GATES:A (reverify not run)\n";
    sandbox.run_with(sandbox.cmd().env("PATH", PATH).arg("--reverify")).code(1).stdout_is(&format!(
        "{}{unmet}next: gate-check --approve --reverify\n",
        block(&sandbox, "120s", PATH, Some("approved with timeout 10s, now 120s"))
    ));
    // The same timeout finds the exact record again: nothing to explain.
    sandbox
        .run_with(sandbox.cmd().env("PATH", PATH).args(["--reverify", "--timeout", "10"]))
        .code(0)
        .stdout_contains("ALL MET (1 met, reran: 1, 1 of them met before)\n");
}

#[test]
fn a_directory_put_in_front_of_path_is_named() {
    let sandbox = approved_sandbox("120");
    let venv = format!("/venv/bin{PATH_DELIMITER}{PATH}");
    sandbox.run_with(sandbox.cmd().env("PATH", &venv).arg("--reverify")).code(1).stdout_contains(&block(
        &sandbox,
        "120s",
        &venv,
        Some("PATH differs: +/venv/bin at the front"),
    ));
}

#[test]
fn a_node_record_holds_its_oracle_and_one_without_it_says_only_that_it_exists() {
    let sandbox = Sandbox::new();
    let ledger = sandbox.write("GATES.md", &gate("A", "echo ok", "ok"));
    let ledger = ledger.to_str().unwrap();
    let root = sandbox.root.to_str().unwrap();
    // As the Node tool writes a record: the whole oracle under `oracle`.
    let old = oracle_json("echo ok", "ok", root, OTHER_SHELL, 120, PATH);
    let (name, signature) = record_name(ledger, "A", &old);
    let oracle: serde_json::Value = serde_json::from_str(&old).unwrap();
    let record = serde_json::json!({"schema": 1, "file": ledger, "gate": "A", "signature": signature,
        "oracle": oracle, "approvedAt": "2026-01-01T00:00:00.000Z"});
    write_record(&sandbox, &name, &record);
    sandbox.run_with(sandbox.cmd().env("PATH", PATH)).code(1).stdout_contains(&block(
        &sandbox,
        "120s",
        PATH,
        Some(&format!("approved with shell {OTHER_SHELL}, now {}", sh::default_shell())),
    ));

    // A record that holds only what the store requires says nothing more.
    write_record(&sandbox, &name, &serde_json::json!({"file": ledger, "gate": "A", "signature": signature}));
    sandbox.run_with(sandbox.cmd().env("PATH", PATH)).code(1).stdout_contains(&block(
        &sandbox,
        "120s",
        PATH,
        Some("an approval for this gate exists with a different signature"),
    ));
}

#[test]
fn records_that_would_not_count_as_approvals_are_not_listed() {
    let sandbox = approved_sandbox("10");
    let name = fs::read_dir(&sandbox.approvals).unwrap().next().unwrap().unwrap().file_name();
    let record = sandbox.approvals.join(&name);
    let no_change = block(&sandbox, "120s", PATH, None);

    // Not at the name its own fields give it.
    fs::rename(&record, sandbox.approvals.join("0000.json")).unwrap();
    sandbox.run_with(sandbox.cmd().env("PATH", PATH).arg("--reverify")).code(1).stdout_contains(&no_change);
    fs::rename(sandbox.approvals.join("0000.json"), &record).unwrap();

    // Readable by others (mode bits; the Windows ACL is checked in `windows`).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&record, fs::Permissions::from_mode(0o644)).unwrap();
        sandbox.run_with(sandbox.cmd().env("PATH", PATH).arg("--reverify")).code(1).stdout_contains(&no_change);
        fs::set_permissions(&record, fs::Permissions::from_mode(0o600)).unwrap();
    }

    // Hard-linked (from outside the repository, whose tree it would change).
    let copy = sandbox.approvals.parent().unwrap().join("copy.json");
    fs::hard_link(&record, &copy).unwrap();
    sandbox.run_with(sandbox.cmd().env("PATH", PATH).arg("--reverify")).code(1).stdout_contains(&no_change);
    fs::remove_file(&copy).unwrap();

    sandbox.run_with(sandbox.cmd().env("PATH", PATH).arg("--reverify")).code(1).stdout_contains(&block(
        &sandbox,
        "120s",
        PATH,
        Some("approved with timeout 10s, now 120s"),
    ));
}

#[cfg_attr(windows, ignore = "runs the printed next command through /bin/sh")]
#[test]
fn the_next_command_keeps_the_bound_options_and_approves_exactly_what_was_shown() {
    let sandbox = Sandbox::new();
    sandbox.write("sub dir/GATES.md", &gate("A", "echo ok", "ok"));
    let run = sandbox
        .run_with(sandbox.cmd().env("PATH", PATH).args(["--timeout", "7", "--shell", "sh", "sub dir/GATES.md"]))
        .code(1)
        .stdout_contains("    TIMEOUT: 7s\n");
    let next = run.stdout().lines().last().unwrap().to_string();
    assert_eq!(next, "next: gate-check --approve --timeout 7 --shell sh 'sub dir/GATES.md'");
    let binary = assert_cmd::cargo::cargo_bin("gate-check");
    let command = next.trim_start_matches("next: gate-check");
    let shell = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("'{}' {command}", binary.display()))
        .current_dir(&sandbox.root)
        .env("UNLAZY_APPROVAL_DIR", &sandbox.approvals)
        .env("PATH", PATH)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&shell.stdout);
    assert_eq!(shell.status.code(), Some(0), "{out}");
    assert!(out.ends_with("GATES.md: 1 gates\nALL MET (1 met)\n"), "{out}");
    assert_eq!(sandbox.approval_count(), 1);
}

#[test]
fn no_next_line_when_nothing_waits_for_approval() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("A", "echo no", "ok"));
    sandbox.run_with(sandbox.cmd().env("PATH", PATH).arg("--approve")).code(1).stdout_contains("  FAIL GATES:A");
    let run = sandbox.run_with(sandbox.cmd().env("PATH", PATH)).code(1).stdout_contains("UNMET: 1 (met: 0)\n");
    assert!(!run.stdout().contains("next:"), "{}", run.stdout());
}
