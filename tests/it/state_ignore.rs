//! `.unlazy/.gitignore`: written when gate-check itself creates `.unlazy/`,
//! covering its machine-local state and never a ledger; never added to a
//! `.unlazy/` that already existed, never overwriting one.

use std::fs;
use std::process::Command;

use crate::common::{exists, gate, Sandbox};

/// `git check-ignore` run in the sandbox: which of `paths` git would ignore.
fn ignored_by_git(sandbox: &Sandbox, paths: &[&str]) -> Vec<String> {
    let init = Command::new("git").args(["init", "-q"]).current_dir(&sandbox.root).output().expect("git is required");
    assert!(init.status.success(), "{}", String::from_utf8_lossy(&init.stderr));
    let output = Command::new("git")
        .args(["check-ignore", "--no-index"])
        .args(paths)
        .current_dir(&sandbox.root)
        .output()
        .expect("git check-ignore");
    String::from_utf8_lossy(&output.stdout).lines().map(str::to_string).collect()
}

#[cfg_attr(
    windows,
    ignore = "asks git which paths it ignores, and the wine prefix the Windows tests run in has no git"
)]
#[test]
fn a_run_that_creates_the_state_directory_writes_an_ignore_file_for_its_own_state_only() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", &crate::common::sh::print("ready"), "ready"));
    sandbox.run_with(sandbox.cmd().arg("--approve")).code(0).stdout_contains("\nALL MET (");
    assert!(exists(&sandbox.path(".unlazy/locks")), "the write-back lock directory");
    let ignore = sandbox.read(".unlazy/.gitignore");
    assert!(ignore.starts_with("# Written by gate-check") && ignore.contains("/locks/\n"), "{ignore}");
    // A pipeline created later keeps its ledgers and audit trail visible to git.
    sandbox.write(".unlazy/api/GATES.md", "- [ ] A: x\n");
    sandbox.write(".unlazy/api/gates/leaf-1.md", "- [ ] B: x\n");
    let ignored = ignored_by_git(
        &sandbox,
        &[
            ".unlazy/locks/0123.filelock",
            ".unlazy/locks/abc.lease",
            ".unlazy/api/session",
            ".unlazy/api/hook-state.json",
            ".unlazy/api/.GATES.md.x1y2.tmp",
            ".unlazy/api/GATES.md",
            ".unlazy/api/gates/leaf-1.md",
            ".unlazy/api/PLAN.md",
            ".unlazy/api/status.log",
            ".unlazy/api/dispatch.json",
            ".unlazy/.gitignore",
        ],
    );
    assert_eq!(
        ignored,
        [
            ".unlazy/locks/0123.filelock",
            ".unlazy/locks/abc.lease",
            ".unlazy/api/session",
            ".unlazy/api/hook-state.json",
            ".unlazy/api/.GATES.md.x1y2.tmp",
        ]
    );
    // The ignore file is no pipeline, for this tool or the Node tool's listing.
    sandbox.run_with(sandbox.cmd().arg("--list-scopes")).code(0).stdout_is("api\n");
}

#[test]
fn a_state_directory_that_already_exists_is_never_given_an_ignore_file() {
    let sandbox = Sandbox::new();
    sandbox.write(".unlazy/api/GATES.md", &gate("G1", &crate::common::sh::print("ready"), "ready"));
    for args in [
        &["--approve", "--scope", "api"][..],
        &["--log", "note", "--scope", "api"],
        &["--bind", "s1", "--scope", "api"],
    ] {
        // Each action names the scope it acted on.
        sandbox.run_with(sandbox.cmd().args(args)).code(0).stdout_contains("api");
    }
    assert!(exists(&sandbox.path(".unlazy/locks")));
    assert!(!exists(&sandbox.path(".unlazy/.gitignore")), "added to a user's .unlazy/");
}

#[test]
fn a_users_ignore_file_is_kept_byte_for_byte() {
    let sandbox = Sandbox::new();
    let mine = "# mine\r\n*\r\n";
    sandbox.write(".unlazy/.gitignore", mine);
    sandbox.write("GATES.md", &gate("G1", &crate::common::sh::print("ready"), "ready"));
    sandbox.run_with(sandbox.cmd().arg("--approve")).code(0).stdout_contains("\nALL MET (");
    assert_eq!(fs::read_to_string(sandbox.path(".unlazy/.gitignore")).unwrap(), mine);
}

#[test]
fn dispatch_creating_the_state_directory_writes_the_ignore_file_too() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", "- [ ] G1: x\n");
    let args = ["dispatch", "open", "--scope", "api", "--wave", "w1", "--leaf", "a"];
    sandbox.run_with(sandbox.cmd().args(args)).code(0).stdout_is("OPEN w1 (0/1 started, 0/1 returned)\n");
    assert_eq!(sandbox.read(".unlazy/.gitignore"), gate_check::state_root::IGNORE_TEXT);
    assert!(exists(&sandbox.path(".unlazy/api/dispatch.json")));
}
