//! Lock files shared with the Node tool: `.unlazy/locks/<24 hex>.filelock`
//! exists only while held, a lock the Node tool holds (an exclusively
//! created file with its JSON metadata) is waited for, and a lock left by a
//! crashed gate-check is recovered instead of wedging either tool.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::common::{gate, outcome, Sandbox};

/// The lock file both tools use for the ledger at `ledger`.
fn lock_for(ledger: &Path) -> PathBuf {
    let canonical = crate::common::canonical(ledger);
    let key = format!("{:x}", Sha256::digest(canonical.as_os_str().as_encoded_bytes()));
    ledger.parent().unwrap().join(".unlazy/locks").join(format!("{}.filelock", &key[..24]))
}

/// Creates `path` the way the Node tool takes a lock: exclusive create,
/// then its JSON metadata.
fn create_lock(path: &Path, json: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut file = fs::OpenOptions::new().write(true).create_new(true).open(path).unwrap();
    file.write_all(json.as_bytes()).unwrap();
}

fn node_record(pid: u32) -> String {
    format!(r#"{{"token":"0123456789abcdef0123456789abcdef","pid":{pid},"target":"/x/GATES.md","at":1}}"#)
}

/// A process that has exited, and its pid. Windows gives a pid to a new
/// process soon after its last holder closes it, so the test holds the
/// exited one (and so its pid) while it runs.
fn exited() -> (std::process::Child, u32) {
    let mut child = std::process::Command::new(if cfg!(windows) { "whoami" } else { "true" })
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    child.wait().unwrap();
    (child, pid)
}

/// A lock record as gate-check writes it, of the process `pid`.
fn gate_check_record(pid: u32) -> String {
    format!(r#"{{"token":"00112233445566778899aabbccddeeff","pid":{pid},"target":"x","at":1,"tool":"gate-check"}}"#)
}

fn entries(directory: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(directory) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

fn ready(sandbox: &Sandbox) -> PathBuf {
    let ledger = sandbox.write("GATES.md", &gate("G1", "echo ok", "ok"));
    sandbox.run_with(sandbox.cmd().arg("--approve")).code(0).stdout_contains("\nALL MET (");
    sandbox.write("GATES.md", &gate("G1", "echo ok", "ok"));
    ledger
}

/// Spawns a run that needs the ledger lock and checks it is still waiting
/// (ledger untouched) after `hold`.
fn spawn_waiting(sandbox: &Sandbox, hold: Duration) -> std::process::Child {
    let mut child =
        sandbox.std_cmd().stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    std::thread::sleep(hold);
    assert!(child.try_wait().unwrap().is_none(), "gate-check did not wait for the held lock");
    assert!(sandbox.read("GATES.md").contains("- [ ] G1"));
    child
}

#[test]
fn a_write_back_leaves_no_lock_file() {
    let sandbox = Sandbox::new();
    ready(&sandbox);
    sandbox.run_with(&mut sandbox.cmd()).code(0).stdout_contains("\nALL MET (");
    assert!(sandbox.read("GATES.md").contains("- [x] G1"));
    assert_eq!(entries(&sandbox.path(".unlazy/locks")), Vec::<String>::new());
}

#[test]
fn a_node_held_lock_is_waited_for_until_it_is_removed() {
    let sandbox = Sandbox::new();
    let ledger = ready(&sandbox);
    let lock = lock_for(&ledger);
    create_lock(&lock, &node_record(std::process::id()));
    let child = spawn_waiting(&sandbox, Duration::from_millis(1500));
    fs::remove_file(&lock).unwrap();
    let (code, out, err) = outcome(&child.wait_with_output().unwrap());
    assert_eq!(code, 0, "{out}{err}");
    assert!(sandbox.read("GATES.md").contains("- [x] G1"));
    assert_eq!(entries(&sandbox.path(".unlazy/locks")), Vec::<String>::new());
}

#[test]
fn a_node_lock_of_a_dead_pid_fails_closed_after_the_node_timeout_and_is_kept() {
    let sandbox = Sandbox::new();
    let ledger = ready(&sandbox);
    let lock = lock_for(&ledger);
    let (_exited, pid) = exited();
    create_lock(&lock, &node_record(pid));
    let started = Instant::now();
    sandbox
        .run_with(&mut sandbox.cmd())
        .code(2)
        .stdout_contains("  PASS GATES:G1: ")
        .stderr_contains("timed out waiting for lock")
        .stderr_contains(&format!("pid {pid}, which is not running"));
    assert!(started.elapsed() >= Duration::from_secs(30), "gave up before the Node tool's 30 s");
    // Like the Node tool, never unlink a lock another program wrote.
    assert_eq!(fs::read_to_string(&lock).unwrap(), node_record(pid));
    assert!(sandbox.read("GATES.md").contains("- [ ] G1"));
}

#[test]
fn a_lock_left_by_a_crashed_gate_check_is_recovered() {
    let sandbox = Sandbox::new();
    let ledger = ready(&sandbox);
    // The ledger's own lock, and one for a target this run never asks for.
    let (_first, first) = exited();
    let (_second, second) = exited();
    create_lock(&lock_for(&ledger), &gate_check_record(first));
    create_lock(&sandbox.path(".unlazy/locks/0123456789abcdef01234567.filelock"), &gate_check_record(second));
    let started = Instant::now();
    sandbox.run_with(&mut sandbox.cmd()).code(0).stdout_contains("\nALL MET (");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(sandbox.read("GATES.md").contains("- [x] G1"));
    assert_eq!(entries(&sandbox.path(".unlazy/locks")), Vec::<String>::new());
}

#[test]
fn a_live_gate_check_lock_is_waited_for_not_recovered() {
    let sandbox = Sandbox::new();
    let ledger = ready(&sandbox);
    let lock = lock_for(&ledger);
    create_lock(
        &lock,
        &format!(r#"{{"token":"t","pid":{},"target":"x","at":1,"tool":"gate-check"}}"#, std::process::id()),
    );
    // A live holder keeps an flock on its lock file.
    let held = fs::File::open(&lock).unwrap();
    held.lock().unwrap();
    let child = spawn_waiting(&sandbox, Duration::from_millis(1500));
    assert!(lock.exists());
    fs::remove_file(&lock).unwrap();
    drop(held);
    let (code, out, err) = outcome(&child.wait_with_output().unwrap());
    assert_eq!(code, 0, "{out}{err}");
    assert!(sandbox.read("GATES.md").contains("- [x] G1"));
}

#[test]
fn a_lease_claim_waits_for_the_node_lease_registry_lock() {
    let sandbox = Sandbox::new();
    sandbox.write(".unlazy/api/gates/leaf-1.md", "# leaf\n\nOWNS: src/**\n\n- [ ] G1: manual\n  EVIDENCE: pending\n");
    let locks = sandbox.path(".unlazy/locks");
    fs::create_dir_all(&locks).unwrap();
    // Node keys the registry lock by `<canonical locks dir>/lease-registry`.
    let target = crate::common::canonical(&locks).join("lease-registry");
    let key = format!("{:x}", Sha256::digest(target.as_os_str().as_encoded_bytes()));
    let lock = locks.join(format!("{}.filelock", &key[..24]));
    create_lock(&lock, &node_record(std::process::id()));
    let mut child = sandbox
        .std_cmd()
        .args(["--claim", "--scope", "api"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    // A waiting claimer may have a staging file of its own beside the lock, so
    // what matters is that no lease exists yet and the claimer still waits.
    assert!(child.try_wait().unwrap().is_none(), "the claim did not wait for the Node tool's registry lock");
    assert!(
        entries(&locks).iter().all(|name| !name.ends_with(".lease")),
        "claimed while the Node tool held the registry lock"
    );
    fs::remove_file(&lock).unwrap();
    let (code, out, err) = outcome(&child.wait_with_output().unwrap());
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(entries(&locks).iter().filter(|name| name.ends_with(".lease")).count(), 1);
    assert!(entries(&locks).iter().all(|name| !name.ends_with(".filelock")));
}

#[test]
fn a_blocking_stop_hook_leaves_no_lock_file() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "make report", "REPORT-OK"));
    let input = serde_json::json!({ "session_id": "s1", "cwd": sandbox.root }).to_string();
    sandbox
        .run_with(sandbox.cmd().args(["hook", "stop"]).write_stdin(input))
        .code(0)
        .stdout_contains("\"decision\":\"block\"");
    assert!(sandbox.path(".unlazy-hook-state.json").exists());
    assert_eq!(entries(&sandbox.path(".unlazy/locks")), Vec::<String>::new());
}

/// Windows: another program holds the lock file open and shares nothing
/// (a scanner that locks what it reads): a moment of that is waited out;
/// one that lasts is an error after the Node tool's 30 s, never a wait
/// without end.
#[cfg(windows)]
#[test]
fn a_lock_file_no_one_may_open_is_waited_out_for_a_while_and_then_an_error() {
    use std::os::windows::fs::OpenOptionsExt;
    let sandbox = Sandbox::new();
    let ledger = ready(&sandbox);
    let lock = lock_for(&ledger);
    let (_exited, pid) = exited();
    create_lock(&lock, &gate_check_record(pid));
    let exclusive = || fs::OpenOptions::new().read(true).share_mode(0).open(&lock).unwrap();
    // Positive first: held for 2 s, then let go; the crashed lock is recovered.
    let held = exclusive();
    let child = spawn_waiting(&sandbox, Duration::from_secs(2));
    drop(held);
    let output = child.wait_with_output().unwrap();
    let (code, out, err) = outcome(&output);
    assert_eq!(code, 0, "{out}{err}");
    assert!(sandbox.read("GATES.md").contains("- [x] G1"));

    sandbox.write("GATES.md", &gate("G1", "echo ok", "ok"));
    create_lock(&lock, &gate_check_record(pid));
    let _held = exclusive();
    let started = Instant::now();
    let mut child =
        sandbox.std_cmd().stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(90) {
            child.kill().unwrap();
            panic!("gate-check still waits for a lock file no one may open after 90 s");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let (code, out, err) = outcome(&child.wait_with_output().unwrap());
    assert_eq!(code, 2, "{out}{err}");
    let name = lock.file_name().unwrap().to_string_lossy().into_owned();
    assert!(err.contains(&format!("{name} stayed inaccessible for 30 s")), "{err}");
    assert!(started.elapsed() >= Duration::from_secs(30));
    assert!(sandbox.read("GATES.md").contains("- [ ] G1"));
}
