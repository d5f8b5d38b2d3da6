//! Pipeline state files through the real binary, as root on a repository
//! owned by someone else: everything a run creates under `.unlazy/` belongs
//! to the owner of the directory it lives in, and the temp files a killed
//! atomic write left behind are removed by the next write under its lock.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use crate::common::{exists, Sandbox};

/// The owner a root run must hand its state to.
const NOBODY: u32 = 65534;

const UNMET: &str = "- [ ] G1: the report renders\n  CHECK: make report\n  EXPECT: REPORT-OK\n  EVIDENCE: pending\n";

/// A leaf ledger owning `src/**`, with one manual gate.
const LEAF: &str = "# leaf\n\nOWNS: src/**\n\n- [ ] G1: manual outcome\n  EVIDENCE: pending\n";

fn hook_payload(sandbox: &Sandbox, session: &str) -> String {
    serde_json::json!({ "session_id": session, "cwd": sandbox.root, "hook_event_name": "Stop" }).to_string()
}

/// Every path under `directory`, itself included.
fn walk(directory: &Path) -> Vec<PathBuf> {
    let mut found = vec![directory.to_path_buf()];
    if fs::symlink_metadata(directory).is_ok_and(|meta| meta.is_dir()) {
        for entry in fs::read_dir(directory).unwrap() {
            found.extend(walk(&entry.unwrap().path()));
        }
    }
    found
}

/// Hands the sandbox's repository (and what the test wrote into it) to `NOBODY`.
fn give_repository_to_nobody(sandbox: &Sandbox) {
    let base = sandbox.root.parent().unwrap();
    fs::set_permissions(base, fs::Permissions::from_mode(0o755)).unwrap();
    for path in walk(&sandbox.root) {
        std::os::unix::fs::lchown(&path, Some(NOBODY), Some(NOBODY)).unwrap();
    }
}

#[test]
fn a_root_run_hands_every_pipeline_state_file_to_the_repository_owner() {
    assert!(nix::unistd::geteuid().is_root(), "this test must run as root: it hands the repository to uid 65534");
    let sandbox = Sandbox::new();
    sandbox.write(".unlazy/api/gates/leaf-1.md", LEAF);
    sandbox.write(".unlazy/hooked/GATES.md", UNMET);
    sandbox.write(".unlazy/hooked/session", "s1\n");
    give_repository_to_nobody(&sandbox);

    sandbox.run(&["--claim", "--scope", "api"]).code(0).stdout_contains("CLAIMED 1 path(s) for api/leaf-1");
    sandbox.run(&["--bind", "s2", "--scope", "api"]).code(0).stdout_is("bound session s2 to scope api\n");
    sandbox.run(&["--log", "leaf-1 started", "--scope", "api"]).code(0).stdout_contains("appended to");
    sandbox
        .run(&["dispatch", "open", "--scope", "waves", "--wave", "w1", "--leaf", "a"])
        .code(0)
        .stdout_is("OPEN w1 (0/1 started, 0/1 returned)\n");
    sandbox
        .run_with(sandbox.cmd().args(["hook", "stop"]).write_stdin(hook_payload(&sandbox, "s1")))
        .code(0)
        .stdout_contains("\"decision\":\"block\"");

    for created in [
        ".unlazy/locks",
        ".unlazy/api/session",
        ".unlazy/api/status.log",
        ".unlazy/waves",
        ".unlazy/waves/dispatch.json",
        ".unlazy/waves/status.log",
        ".unlazy/hooked/hook-state.json",
    ] {
        assert!(exists(&sandbox.path(created)), "{created} was not created");
    }
    let leases = fs::read_dir(sandbox.path(".unlazy/locks")).unwrap().count();
    assert_eq!(leases, 1, "one lease record and no lock file left");
    for path in walk(&sandbox.path(".unlazy")) {
        let meta = fs::symlink_metadata(&path).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (NOBODY, NOBODY), "{} is not the owner's", path.display());
    }

    // The owner can go on using all of it.
    let as_owner = |args: &[&str]| {
        let mut command = sandbox.std_cmd();
        command.args(args).uid(NOBODY).gid(NOBODY);
        assert_cmd::Command::from_std(command)
    };
    sandbox
        .run_with(&mut as_owner(&["--release", "--scope", "api"]))
        .code(0)
        .stdout_is("released 1 lease(s) for api\n");
    sandbox
        .run_with(&mut as_owner(&["--bind", "s3", "--scope", "api"]))
        .code(0)
        .stdout_is("bound session s3 to scope api\n");
    sandbox.run_with(&mut as_owner(&["--log", "leaf-1 done", "--scope", "api"])).code(0).stdout_contains("appended to");
    sandbox
        .run_with(&mut as_owner(&[
            "dispatch", "start", "--scope", "waves", "--wave", "w1", "--leaf", "a", "--handle", "h1",
        ]))
        .code(0)
        .stdout_contains("STARTED w1 a");
}

/// The Node tool's lease record name: 24 hex digits of SHA-256 over `scope::leaf`.
fn lease_record_name(scope: &str, leaf: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{scope}::{leaf}").as_bytes());
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("{}.lease", &hex[..24])
}

/// Plants the name a killed atomic write of `relative` would have left.
fn plant_stale_temp(sandbox: &Sandbox, relative: &str) -> PathBuf {
    let path = sandbox.path(relative);
    let name = path.file_name().unwrap().to_str().unwrap().to_string();
    let temp = path.with_file_name(format!(".{name}.Ab3xYz.tmp"));
    fs::create_dir_all(temp.parent().unwrap()).unwrap();
    fs::write(&temp, "partial").unwrap();
    temp
}

#[test]
fn the_next_locked_write_of_a_state_file_removes_its_stale_temp_files() {
    let sandbox = Sandbox::new();
    sandbox.write(".unlazy/api/gates/leaf-1.md", LEAF);
    sandbox.write(".unlazy/hooked/GATES.md", UNMET);
    sandbox.write(".unlazy/hooked/session", "s1\n");
    let lease_name = lease_record_name("api", "leaf-1");
    let stale = [
        plant_stale_temp(&sandbox, ".unlazy/api/session"),
        plant_stale_temp(&sandbox, &format!(".unlazy/locks/{lease_name}")),
        plant_stale_temp(&sandbox, ".unlazy/waves/dispatch.json"),
        plant_stale_temp(&sandbox, ".unlazy/hooked/hook-state.json"),
    ];
    // Another file's temp name is not this write's to remove.
    let unrelated = plant_stale_temp(&sandbox, ".unlazy/api/notes.txt");

    sandbox.run(&["--claim", "--scope", "api"]).code(0).stdout_contains("CLAIMED");
    assert!(exists(&sandbox.path(&format!(".unlazy/locks/{lease_name}"))), "the lease record is named differently");
    sandbox.run(&["--bind", "s2", "--scope", "api"]).code(0).stdout_is("bound session s2 to scope api\n");
    sandbox
        .run(&["dispatch", "open", "--scope", "waves", "--wave", "w1", "--leaf", "a"])
        .code(0)
        .stdout_contains("OPEN w1");
    sandbox
        .run_with(sandbox.cmd().args(["hook", "stop"]).write_stdin(hook_payload(&sandbox, "s1")))
        .code(0)
        .stdout_contains("\"decision\":\"block\"");

    for temp in &stale {
        assert!(!exists(temp), "{} was left behind", temp.display());
    }
    assert!(exists(&unrelated), "another file's temp file was removed");
}

#[test]
fn a_root_stop_hook_on_legacy_ledgers_leaves_its_state_the_owners() {
    assert!(nix::unistd::geteuid().is_root(), "this test must run as root: it hands the repository to uid 65534");
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", UNMET);
    give_repository_to_nobody(&sandbox);
    sandbox
        .run_with(sandbox.cmd().args(["hook", "stop"]).write_stdin(hook_payload(&sandbox, "s1")))
        .code(0)
        .stdout_contains("\"decision\":\"block\"");
    let state = sandbox.path(".unlazy-hook-state.json");
    assert!(exists(&state), "no hook state was written");
    for path in walk(&sandbox.root) {
        let meta = fs::symlink_metadata(&path).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (NOBODY, NOBODY), "{} is not the owner's", path.display());
    }
}
