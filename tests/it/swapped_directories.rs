//! A directory of repository state swapped for a link while gate-check
//! works (by a check it runs, or by anyone while it waits for a lock) is
//! never written through: every write names its file inside a directory
//! opened from the root through real directories only, at the moment of
//! use (issue 34, item 4).

use std::fs;
use std::io::Write;
use std::os::unix::fs::{symlink, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::common::{gate, Sandbox};

/// Another checkout of the same project, with the same pipeline files.
struct OtherCheckout {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl OtherCheckout {
    fn new(files: &[(&str, &str)]) -> OtherCheckout {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        for (relative, text) in files {
            let path = root.join(relative);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        OtherCheckout { _dir: dir, root }
    }

    fn names(&self, relative: &str) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.root.join(relative))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

#[test]
fn a_check_that_swaps_its_scope_for_a_link_cannot_make_the_write_back_follow_it() {
    let sandbox = Sandbox::new();
    let leaf = ".unlazy/api/gates/leaf.md";
    // The positive case: the same layout, written back through real directories.
    sandbox.write(leaf, &gate("G1", "echo ok", "ok"));
    sandbox.run(&["--approve"]).code(0).stdout_contains("ALL MET (1 met");
    assert!(sandbox.read(leaf).starts_with("- [x] G1"), "{}", sandbox.read(leaf));

    let other_text = gate("G1", "swap", "ok");
    let other = OtherCheckout::new(&[(leaf, &other_text)]);
    let swap = format!(
        "mv .unlazy/api .unlazy/api.moved && ln -s {}/.unlazy/api .unlazy/api && echo ok",
        other.root.display()
    );
    let text = gate("G1", &swap, "ok");
    fs::write(other.root.join(leaf), &text).unwrap();
    sandbox.write(leaf, &text);
    // The check passed; its result must not be written anywhere.
    let run = sandbox.run(&["--approve"]).code(2).stdout_contains("\n  PASS leaf:G1");
    let moved = sandbox.path(".unlazy/api.moved/gates/leaf.md");
    assert_eq!(fs::read_to_string(other.root.join(leaf)).unwrap(), text, "the other checkout's ledger was rewritten");
    assert_eq!(other.names(".unlazy/api/gates"), ["leaf.md"], "a file was left in the other checkout");
    assert_eq!(fs::read_to_string(moved).unwrap(), text, "the unverified result was written back");
    run.stderr_contains(&format!("{} must be a real directory", sandbox.path(".unlazy/api").display()));
}

/// The lock file both tools take for `target`, named from its canonical path.
fn lock_for(root: &Path, target: &Path) -> PathBuf {
    let key = format!("{:x}", Sha256::digest(target.as_os_str().as_encoded_bytes()));
    root.join(".unlazy/locks").join(format!("{}.filelock", &key[..24]))
}

/// Takes the lock at `path` the way the Node tool does (exclusive create,
/// then its JSON metadata), naming a live process so it is waited for.
fn hold_node_lock(path: &Path) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut file = fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).unwrap();
    let record = format!(r#"{{"token":"0123456789abcdef0123456789abcdef","pid":{},"at":1}}"#, std::process::id());
    file.write_all(record.as_bytes()).unwrap();
}

/// Starts `args` while the lock at `lock` is held, swaps `level` for a link
/// to the same level of `other` once gate-check waits for the lock, then
/// releases it; returns the finished run's exit code.
fn swap_while_waiting(sandbox: &Sandbox, args: &[&str], lock: &Path, level: &str, other: &OtherCheckout) -> i32 {
    hold_node_lock(lock);
    let mut child = sandbox.std_cmd().args(args).stdout(std::process::Stdio::null()).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(400));
    assert!(child.try_wait().unwrap().is_none(), "gate-check did not wait for the held lock");
    let moved = format!("{level}.moved");
    fs::rename(sandbox.path(level), sandbox.path(&moved)).unwrap();
    symlink(other.root.join(level), sandbox.path(level)).unwrap();
    // A held lock inside the swapped level moved with it.
    let released = match lock.strip_prefix(sandbox.path(level)) {
        Ok(inside) => sandbox.path(&moved).join(inside),
        Err(_) => lock.to_path_buf(),
    };
    fs::remove_file(released).unwrap();
    child.wait().unwrap().code().unwrap()
}

#[test]
fn a_session_binding_waiting_for_its_lock_is_not_written_through_a_scope_swapped_meanwhile() {
    let sandbox = Sandbox::new();
    sandbox.write(".unlazy/api/GATES.md", &gate("G1", "true", "x"));
    // The positive case: the binding is written where it belongs.
    sandbox.run(&["--bind", "s1", "--scope", "api"]).code(0).stdout_is("bound session s1 to scope api\n");
    assert_eq!(sandbox.read(".unlazy/api/session"), "s1\n");

    let other = OtherCheckout::new(&[(".unlazy/api/GATES.md", "other\n")]);
    let lock = lock_for(&sandbox.root, &sandbox.path(".unlazy/api/session"));
    let code = swap_while_waiting(&sandbox, &["--bind", "s2", "--scope", "api"], &lock, ".unlazy/api", &other);
    assert_eq!(other.names(".unlazy/api"), ["GATES.md"], "the binding was written into the other checkout");
    // Written into the directory that was checked, which is still inside the repository.
    assert_eq!((code, sandbox.read(".unlazy/api.moved/session")), (0, "s2\n".to_string()));
}

#[test]
fn a_claim_waiting_for_the_registry_lock_is_not_written_through_a_lock_directory_swapped_meanwhile() {
    let sandbox = Sandbox::new();
    sandbox.write(".unlazy/api/gates/leaf.md", &format!("OWNS: src/api/**\n\n{}", gate("G1", "true", "x")));
    // The positive case: a claim and its release write the registry in place.
    sandbox.run(&["--claim", "--scope", "api"]).code(0).stdout_contains("CLAIMED 1 path(s) for api/leaf");
    sandbox.run(&["--release", "--scope", "api"]).code(0).stdout_is("released 1 lease(s) for api\n");

    let other = OtherCheckout::new(&[(".unlazy/locks/README", "other\n")]);
    let lock = lock_for(&sandbox.root, &sandbox.path(".unlazy/locks/lease-registry"));
    let code = swap_while_waiting(&sandbox, &["--claim", "--scope", "api"], &lock, ".unlazy/locks", &other);
    assert_eq!(other.names(".unlazy/locks"), ["README"], "a lease was written into the other checkout");
    let moved = fs::read_dir(sandbox.path(".unlazy/locks.moved")).unwrap();
    let leases = moved.filter(|entry| entry.as_ref().unwrap().file_name().to_string_lossy().ends_with(".lease"));
    assert_eq!((code, leases.count()), (0, 1), "the lease was not recorded in the registry that was checked");
}
