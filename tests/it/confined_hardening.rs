//! `--sandbox` keeps its promise (issue 34), through the real binary on the
//! real kernel: a check writes only under its own ledger's repository, and
//! that fence is never `/`, the home directory or a store; what Landlock
//! does not govern (modes, owners, times, extended attributes) fails outside
//! the fence; no inherited descriptor reaches a check; the TMPDIR is private
//! and always removed; a confined approval admits confined runs only; IPC
//! objects and keys stay with the check; credential names and URLs with
//! passwords are withheld. The fence and metadata cases run as root and as
//! uid 65534. Every negative case is preceded by its positive.

use std::fs;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use crate::common::{exists, gate, program, Run, Sandbox};

const NOBODY: u32 = 65534;

/// Who runs gate-check: the test's own user (root) or uid 65534.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum User {
    Root,
    Nobody,
}

/// A home directory with repositories in it, beside the sandbox's approval
/// store, all owned by the user that runs gate-check.
struct World {
    sandbox: Sandbox,
    base: PathBuf,
    home: PathBuf,
    user: User,
}

impl World {
    fn new(user: User) -> World {
        assert!(nix::unistd::geteuid().is_root(), "this test must run as root: it also runs gate-check as uid 65534");
        let sandbox = Sandbox::new();
        let base = sandbox.root.parent().unwrap().to_path_buf();
        fs::set_permissions(&base, fs::Permissions::from_mode(0o755)).unwrap();
        let home = base.join("home");
        fs::create_dir(&home).unwrap();
        World { sandbox, base, home, user }
    }

    /// `home/<name>`, a repository (it holds `.git`).
    fn repository(&self, name: &str) -> PathBuf {
        let repository = self.home.join(name);
        fs::create_dir_all(repository.join(".git")).unwrap();
        repository
    }

    /// Hands everything under the base to the user (the test writes as root).
    fn own(&self) {
        if self.user == User::Nobody {
            chown_tree(&self.base);
        }
    }

    /// `gate-check ARGS` from `cwd` as the world's user, with its home
    /// directory and the sandbox's approval store.
    fn command(&self, cwd: &Path, args: &[&str]) -> assert_cmd::Command {
        self.own();
        let mut command = self.sandbox.std_cmd();
        command.current_dir(cwd).env("HOME", &self.home).env_remove("UNLAZY_SANDBOX").args(args);
        if self.user == User::Nobody {
            command.uid(NOBODY).gid(NOBODY);
        }
        assert_cmd::Command::from_std(command)
    }

    fn run(&self, cwd: &Path, args: &[&str]) -> Run {
        self.sandbox.run_with(&mut self.command(cwd, args))
    }
}

fn chown_tree(path: &Path) {
    std::os::unix::fs::lchown(path, Some(NOBODY), Some(NOBODY)).unwrap();
    if fs::symlink_metadata(path).unwrap().is_dir() {
        for entry in fs::read_dir(path).unwrap() {
            chown_tree(&entry.unwrap().path());
        }
    }
}

fn sandbox_line(fences: &str) -> String {
    format!("SANDBOX: checks run confined: writes only under {fences} and a private TMPDIR (Landlock ABI ")
}

// Item 1: the fence is each ledger's repository.

fn explicit_ledgers_are_fenced_to_their_own_repository(user: User) {
    let world = World::new(user);
    let repository = world.repository("project");
    let profile = world.home.join(".bashrc");
    let check = format!("echo pwned >> {} ; echo in > inside.txt && echo INSIDE", profile.display());
    fs::write(repository.join("GATES.md"), gate("G1", &check, "INSIDE")).unwrap();
    // Unconfined, started from the home directory, the check reaches the profile.
    world.run(&world.home, &["--approve", "-q", "project/GATES.md"]).code(0).stdout_ends_with("ALL MET (1 met)\n");
    assert_eq!(fs::read_to_string(&profile).unwrap(), "pwned\n");
    fs::remove_file(&profile).unwrap();
    fs::remove_file(repository.join("inside.txt")).unwrap();
    // Confined, from the same place, only the ledger's repository is writable.
    let out = world.run(&world.home, &["--reverify", "--sandbox", "project/GATES.md"]).code(0).into_stdout();
    assert!(out.starts_with(&sandbox_line(&repository.display().to_string())), "{out}");
    assert!(!exists(&profile), "a confined check wrote into the home directory");
    assert_eq!(fs::read_to_string(repository.join("inside.txt")).unwrap(), "in\n");
}

#[test]
fn explicit_ledgers_are_fenced_to_their_own_repository_as_root() {
    explicit_ledgers_are_fenced_to_their_own_repository(User::Root);
}

#[test]
fn explicit_ledgers_are_fenced_to_their_own_repository_as_an_unprivileged_user() {
    explicit_ledgers_are_fenced_to_their_own_repository(User::Nobody);
}

#[test]
fn each_ledger_s_checks_write_only_into_their_own_repository() {
    let world = World::new(User::Root);
    let (first, second) = (world.repository("first"), world.repository("second"));
    for (own, other) in [(&first, &second), (&second, &first)] {
        let check = format!("touch {}/crossed ; touch own && echo DONE", other.display());
        fs::write(own.join("GATES.md"), gate("G1", &check, "DONE")).unwrap();
    }
    let ledgers = ["first/GATES.md", "second/GATES.md"];
    world
        .run(&world.home, &[&["--approve", "-q"], &ledgers[..]].concat())
        .code(0)
        .stdout_ends_with("ALL MET (2 met)\n");
    for repository in [&first, &second] {
        assert!(exists(&repository.join("crossed")), "unconfined, a check reaches the other repository");
        fs::remove_file(repository.join("crossed")).unwrap();
    }
    let out = world.run(&world.home, &[&["--reverify", "--sandbox"], &ledgers[..]].concat()).code(0).into_stdout();
    let fences = format!("its ledger's repository ({}, {})", first.display(), second.display());
    assert!(out.starts_with(&sandbox_line(&fences)), "{out}");
    for repository in [&first, &second] {
        assert!(!exists(&repository.join("crossed")), "a confined check wrote into another ledger's repository");
        assert!(exists(&repository.join("own")));
    }
    let json = world.run(&world.home, &[&["--reverify", "--sandbox", "--format", "json"], &ledgers[..]].concat());
    let document = json.code(0).stderr_contains("SANDBOX").stdout_json();
    let writable = serde_json::json!([first.display().to_string(), second.display().to_string()]);
    assert_eq!(document["sandbox"]["writable"], writable, "{document}");
}

fn a_fence_that_is_the_root_or_holds_the_home_or_a_store_is_refused(user: User) {
    let world = World::new(user);
    // Each check runs beside its ledger (explicit ledgers), and marks that.
    let check = "touch ran-here && echo OK";
    let refusal = |fence: &Path, reason: &str| {
        format!(
            "gate-check: error: --sandbox cannot confine checks to {}: {reason}; keep the ledger in a repository of \
             its own (a directory holding .git or .unlazy)\n",
            fence.display()
        )
    };
    // A ledger in the home directory, outside any repository.
    fs::write(world.home.join("GATES.md"), gate("G1", check, "OK")).unwrap();
    let loose = world.base.join("loose");
    fs::create_dir(&loose).unwrap();
    fs::write(loose.join("GATES.md"), gate("G1", check, "OK")).unwrap();
    let repository = world.repository("project");
    fs::write(repository.join("GATES.md"), gate("G1", check, "OK")).unwrap();
    let before = fs::read_to_string(world.home.join("GATES.md")).unwrap();
    // The positive: the repository's ledger runs confined.
    world.run(&repository, &["--approve", "--sandbox", "-q", "GATES.md"]).code(0).stdout_ends_with("ALL MET (1 met)\n");
    fs::remove_file(repository.join("ran-here")).unwrap();

    world
        .run(&world.home, &["--approve", "--sandbox", "GATES.md"])
        .code(2)
        .stderr_is(&refusal(&world.home, "it is the home directory"));
    // Started from /, a loose ledger's repository is / itself.
    let named = loose.join("GATES.md").display().to_string();
    world
        .run(Path::new("/"), &["--approve", "--sandbox", &named])
        .code(2)
        .stderr_is(&refusal(Path::new("/"), "it is the file system root"));
    // A receipt store (named or not yet made) inside the repository.
    let receipts = repository.join("receipts");
    let mut named_store = world.command(&repository, &["--approve", "--sandbox", "GATES.md"]);
    named_store.env("UNLAZY_RECEIPT_DIR", &receipts);
    let reason = format!("it holds the receipt store {}", receipts.display());
    world.sandbox.run_with(&mut named_store).code(2).stderr_is(&refusal(&repository, &reason));
    // A home directory inside the repository.
    let inner_home = repository.join("home");
    let mut inner = world.command(&repository, &["--approve", "--sandbox", "GATES.md"]);
    inner.env("HOME", &inner_home);
    let reason = format!("it holds the home directory {}", inner_home.display());
    world.sandbox.run_with(&mut inner).code(2).stderr_is(&refusal(&repository, &reason));

    for directory in [&world.home, &loose, &repository] {
        assert!(!exists(&directory.join("ran-here")), "a check ran in {}", directory.display());
    }
    assert_eq!(fs::read_to_string(world.home.join("GATES.md")).unwrap(), before, "the ledger changed");
}

#[test]
fn a_fence_that_is_the_root_or_holds_the_home_or_a_store_is_refused_as_root() {
    a_fence_that_is_the_root_or_holds_the_home_or_a_store_is_refused(User::Root);
}

#[test]
fn a_fence_that_is_the_root_or_holds_the_home_or_a_store_is_refused_as_an_unprivileged_user() {
    a_fence_that_is_the_root_or_holds_the_home_or_a_store_is_refused(User::Nobody);
}

// Item 2: metadata outside the fence.

/// Tries every change of metadata Landlock does not govern on `victim`
/// and the approval store, and (confined only) to make the victim's mount
/// writable again first; prints each outcome.
const METADATA_SCRIPT: &str = r#"import ctypes, errno, os, sys
victim, store = sys.argv[1], sys.argv[2]
confined = "gate-check-sandbox-" in os.environ.get("TMPDIR", "")
def attempt(name, action):
    try:
        action()
        return name + "=ok"
    except OSError as error:
        return name + "=" + errno.errorcode.get(error.errno, str(error.errno))
def make_writable():
    mount = victim
    while not os.path.ismount(mount):
        mount = os.path.dirname(mount)
    # mount_setattr(AT_FDCWD, mount, 0, {attr_clr: MOUNT_ATTR_RDONLY}, 32)
    libc = ctypes.CDLL(None, use_errno=True)
    attr = (ctypes.c_uint64 * 4)(0, 1, 0, 0)
    if libc.syscall(442, -100, mount.encode(), 0, attr, 32) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
results = [
    attempt("chown", lambda: os.chown(victim, os.getuid(), os.getgid())),
    attempt("chmod", lambda: os.chmod(victim, 0o4755)),
    attempt("utime", lambda: os.utime(victim, (0, 0))),
    attempt("setxattr", lambda: os.setxattr(victim, "user.gate", b"1")),
    attempt("store", lambda: os.chmod(store, 0o700)),
]
if confined:
    results += [attempt("undo", make_writable), attempt("again", lambda: os.chmod(victim, 0o4755))]
results.append(attempt("inside", lambda: os.chmod("meta.py", 0o600)))
print(" ".join(results))
"#;

fn metadata_outside_the_fence_cannot_change(user: User) {
    if program("python3").is_none() {
        return;
    }
    let world = World::new(user);
    let repository = world.repository("project");
    let victims = world.base.join("victims");
    fs::create_dir(&victims).unwrap();
    let victim = victims.join("tool");
    let fresh_victim = || {
        let _ = fs::remove_file(&victim);
        fs::write(&victim, "#!/bin/sh\n").unwrap();
        fs::set_permissions(&victim, fs::Permissions::from_mode(0o644)).unwrap();
    };
    fresh_victim();
    fs::write(repository.join("meta.py"), METADATA_SCRIPT).unwrap();
    let check = format!("python3 meta.py {} {}", victim.display(), world.sandbox.approvals.display());
    let changed = "chown=ok chmod=ok utime=ok setxattr=ok store=ok inside=ok";
    fs::write(repository.join("GATES.md"), gate("M1", &check, changed)).unwrap();
    // Unconfined, every change lands.
    world.run(&repository, &["--approve", "-q", "GATES.md"]).code(0).stdout_ends_with("ALL MET (1 met)\n");
    assert_eq!(fs::metadata(&victim).unwrap().mode() & 0o7777, 0o4755);
    fresh_victim();
    let before = fs::metadata(&victim).unwrap();
    // Confined, each fails on the read-only mount, and the check has no
    // capability left to make that mount writable again.
    let refused = "chown=EROFS chmod=EROFS utime=EROFS setxattr=EROFS store=EROFS undo=EPERM again=EROFS inside=ok";
    fs::write(repository.join("GATES.md"), gate("M1", &check, refused)).unwrap();
    world
        .run(&repository, &["--approve", "--sandbox", "-q", "--show-output", "GATES.md"])
        .code(0)
        .stdout_ends_with("ALL MET (1 met)\n");
    let after = fs::metadata(&victim).unwrap();
    assert_eq!(after.mode(), before.mode());
    assert_eq!((after.mtime(), after.mtime_nsec()), (before.mtime(), before.mtime_nsec()));
    assert_eq!(xattr::get(&victim, "user.gate").unwrap(), None);
    assert_eq!(fs::metadata(&world.sandbox.approvals).unwrap().mode() & 0o777, 0o700);
}

#[test]
fn metadata_outside_the_fence_cannot_change_as_root() {
    metadata_outside_the_fence_cannot_change(User::Root);
}

#[test]
fn metadata_outside_the_fence_cannot_change_as_an_unprivileged_user() {
    metadata_outside_the_fence_cannot_change(User::Nobody);
}

// Item 3: inherited descriptors.

#[test]
fn descriptors_gate_check_inherits_reach_no_check() {
    if program("python3").is_none() {
        return;
    }
    let sandbox = Sandbox::new();
    let outside = sandbox.root.parent().unwrap().join("outside.log");
    let file = fs::OpenOptions::new().create(true).append(true).open(&outside).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (mut server, _) = listener.accept().unwrap();
    server.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    // Both handed down as fd 9 and fd 8, without close-on-exec.
    let (file_fd, socket_fd) = (file.as_raw_fd(), client.as_raw_fd());
    let inherit = |command: &mut std::process::Command| {
        // SAFETY: dup2 and fcntl are async-signal-safe and touch no memory.
        unsafe {
            command.pre_exec(move || {
                // Copies out of the way first, so neither lands on the
                // other, and dup2 onto a different number drops close-on-exec.
                let (socket, file) = (
                    nix::libc::fcntl(socket_fd, nix::libc::F_DUPFD_CLOEXEC, 100),
                    nix::libc::fcntl(file_fd, nix::libc::F_DUPFD_CLOEXEC, 100),
                );
                if socket < 0 || file < 0 || nix::libc::dup2(socket, 8) < 0 || nix::libc::dup2(file, 9) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    };
    let leak = "echo LEAK-FILE >&9 ; python3 -c \"import socket; socket.socket(fileno=8).sendall(b'LEAK-SOCKET')\" ; \
                for fd in 3 4 5 6 7 8 9; do [ -e /proc/self/fd/$fd ] && echo open=$fd ; done ; echo DONE";
    // The positive: a plain child started this way writes through both.
    let mut direct = std::process::Command::new("sh");
    direct.args(["-c", leak]);
    inherit(&mut direct);
    let output = direct.output().unwrap();
    assert!(String::from_utf8_lossy(&output.stdout).contains("open=9"), "{output:?}");
    assert_eq!(fs::read_to_string(&outside).unwrap(), "LEAK-FILE\n");
    let mut received = [0u8; 11];
    server.read_exact(&mut received).unwrap();
    assert_eq!(&received, b"LEAK-SOCKET");
    fs::write(&outside, "").unwrap();

    sandbox.write("GATES.md", &gate("D1", leak, "/^(?![\\s\\S]*open=)[\\s\\S]*DONE/"));
    sandbox.run(&["--approve", "-q"]).code(0).stdout_ends_with("ALL MET (1 met)\n");
    for args in [&["--reverify", "-q"][..], &["--reverify", "--sandbox", "-q"][..]] {
        let mut command = sandbox.std_cmd();
        command.args(args);
        inherit(&mut command);
        let run = sandbox.run_with(&mut assert_cmd::Command::from_std(command));
        run.code(0).stdout_ends_with("1 of them met before)\n");
    }
    drop(client);
    drop(file);
    assert_eq!(fs::read_to_string(&outside).unwrap(), "", "a check wrote through an inherited descriptor");
    let mut rest = Vec::new();
    server.read_to_end(&mut rest).unwrap();
    assert_eq!(String::from_utf8_lossy(&rest), "", "a check sent through an inherited socket");
}

// Item 7: the TMPDIR.

#[test]
fn the_confined_tmpdir_is_private_and_removed_even_when_the_spawn_fails() {
    let sandbox = Sandbox::new();
    let temp = sandbox.root.parent().unwrap().join("temp");
    fs::create_dir(&temp).unwrap();
    // Eight checks at once, each filling its TMPDIR, so that descriptors
    // run out at every step: making a fence, spawning, removing a TMPDIR.
    let check = "mkdir -p \"$TMPDIR/a/b\" && echo x > \"$TMPDIR/a/b/f\" && stat -c %a \"$TMPDIR\"";
    let ledger: String = (1..=8).map(|n| gate(&format!("T{n}"), check, "/^700$/m") + "\n").collect();
    sandbox.write("GATES.md", &ledger);
    let run = |limit: u64, args: &[&str]| {
        let mut command = sandbox.std_cmd();
        command.args(args).env("TMPDIR", &temp);
        // SAFETY: umask and setrlimit are async-signal-safe and touch only
        // the memory passed.
        unsafe {
            command.pre_exec(move || {
                nix::libc::umask(0o022);
                let files = nix::libc::rlimit { rlim_cur: limit, rlim_max: limit };
                if nix::libc::setrlimit(nix::libc::RLIMIT_NOFILE, &files) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let output = command.output().unwrap();
        crate::common::outcome(&output)
    };
    // Under umask 022, the TMPDIR is still 0700.
    let (code, stdout, stderr) = run(1024, &["--approve", "--sandbox"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.ends_with("ALL MET (8 met)\n"), "{stdout}");
    assert_eq!(fs::read_dir(&temp).unwrap().count(), 0);
    // Short of descriptors, some runs fail to spawn; none leaves a TMPDIR.
    let mut spawn_failures = 0;
    for limit in 4..=64 {
        let (code, _, stderr) = run(limit, &["--reverify", "--sandbox", "--jobs", "8", "-q"]);
        if code == 2 && stderr.contains("spawn /bin/sh failed: Too many open files") {
            spawn_failures += 1;
        }
        let left: Vec<_> = fs::read_dir(&temp).unwrap().map(|entry| entry.unwrap().file_name()).collect();
        assert!(left.is_empty(), "with {limit} descriptors the run left {left:?} ({stderr})");
    }
    assert!(spawn_failures > 0, "no limit made the confined spawn itself fail");
}

// Item 8: a confined approval.

fn record_value(sandbox: &Sandbox) -> serde_json::Value {
    let records: Vec<PathBuf> = fs::read_dir(&sandbox.approvals)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "json"))
        .collect();
    assert_eq!(records.len(), 1, "{records:?}");
    serde_json::from_str(&fs::read_to_string(&records[0]).unwrap()).unwrap()
}

#[test]
fn an_approval_given_confined_admits_confined_runs_only() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "touch ran && echo OK", "OK"));
    let approve = sandbox.run(&["--approve", "--sandbox"]).code(0).into_stdout();
    assert!(
        approve.contains("    TIMEOUT: 120s\n    SCOPE: confined runs only (--sandbox); a run without it asks again\n"),
        "{approve}"
    );
    let record = record_value(&sandbox);
    assert_eq!(record["confinedOnly"], true, "{record}");
    fs::remove_file(sandbox.path("ran")).unwrap();
    // A later run without --sandbox is asked again and runs nothing.
    let plain = sandbox.run(&["--reverify"]).code(1).into_stdout();
    assert!(plain.contains("APPROVAL REQUIRED GATES:G1\n"), "{plain}");
    assert!(
        plain.contains(
            "    CHANGED SINCE APPROVAL: approved for confined runs only (--sandbox); this run is not confined\n"
        ),
        "{plain}"
    );
    assert!(plain.contains("    NOT RUN: inspect this oracle"), "{plain}");
    assert!(!plain.contains("SCOPE:"), "{plain}");
    assert!(!exists(&sandbox.path("ran")), "a confined approval let the check run unconfined");
    // UNLAZY_SANDBOX=1 is confined: the record admits it.
    let mut environment = sandbox.cmd();
    environment.args(["--reverify", "-q"]).env("UNLAZY_SANDBOX", "1");
    sandbox.run_with(&mut environment).code(0).stdout_ends_with("ALL MET (1 met, reran: 1, 1 of them met before)\n");
    // Approving unconfined replaces the record (the Node tool's name, now
    // without the limit), and both kinds of run are admitted.
    sandbox.run(&["--approve", "--reverify", "-q"]).code(0).stdout_contains("APPROVED: ");
    assert!(record_value(&sandbox).get("confinedOnly").is_none());
    sandbox.run(&["--reverify", "-q"]).code(0).stdout_ends_with("1 of them met before)\n");
    sandbox.run(&["--reverify", "--sandbox", "-q"]).code(0).stdout_ends_with("1 of them met before)\n");

    // An approval given under UNLAZY_SANDBOX=1 is confined as well.
    sandbox.write("GATES.md", &gate("G2", "touch ran-two && echo TWO", "TWO"));
    let mut confined = sandbox.cmd();
    confined.args(["--approve", "-q"]).env("UNLAZY_SANDBOX", "1");
    sandbox.run_with(&mut confined).code(0).stdout_contains("    SCOPE: confined runs only");
    fs::remove_file(sandbox.path("ran-two")).unwrap();
    sandbox.run(&["--reverify", "-q"]).code(1).stdout_contains("APPROVAL REQUIRED GATES:G2");
    assert!(!exists(&sandbox.path("ran-two")));
}

// Item 9: IPC and keyrings.

#[test]
fn system_v_ipc_made_by_a_confined_check_ends_with_it() {
    if program("python3").is_none() {
        return;
    }
    let sandbox = Sandbox::new();
    let key = 0x6763_0000 | (std::process::id() & 0xffff) as i32;
    let check = format!(
        "python3 -c \"import ctypes; print('shm', ctypes.CDLL(None).shmget({key}, 4096, 0o1600))\" && echo MADE"
    );
    sandbox.write("GATES.md", &gate("I1", &check, "MADE"));
    // SAFETY: plain System V calls on a key of this test's own.
    let segment = || unsafe { nix::libc::shmget(key, 0, 0) };
    assert!(segment() < 0, "a segment with the test's key exists already");
    sandbox.run(&["--approve", "-q"]).code(0).stdout_ends_with("ALL MET (1 met)\n");
    let outlived = segment();
    assert!(outlived >= 0, "unconfined, the segment outlives the check");
    // SAFETY: removes the segment found just above.
    unsafe { nix::libc::shmctl(outlived, nix::libc::IPC_RMID, std::ptr::null_mut()) };
    sandbox.run(&["--reverify", "--sandbox", "-q"]).code(0).stdout_ends_with("1 of them met before)\n");
    assert!(segment() < 0, "a confined check's System V shared memory outlived it");
}

/// Runs its arguments in a new session keyring of its own, then says
/// whether the test key is in that keyring.
const KEYRING_WRAPPER: &str = r#"import ctypes, os, subprocess, sys
ADD_KEY, KEYCTL = {"x86_64": (248, 250), "aarch64": (217, 219)}[os.uname().machine]
libc = ctypes.CDLL(None, use_errno=True)
if libc.syscall(KEYCTL, 1, ("gate-check-test-%d" % os.getpid()).encode()) < 0:
    sys.exit("cannot join a session keyring: " + os.strerror(ctypes.get_errno()))
code = subprocess.call(sys.argv[1:])
found = libc.syscall(KEYCTL, 10, -3, b"user", b"gate-check-test-key", 0)
print("key=" + ("found" if found >= 0 else "absent"))
sys.exit(code)
"#;

/// Adds the test key to the session keyring.
const ADD_KEY: &str = r#"import ctypes, os
ADD_KEY = {"x86_64": 248, "aarch64": 217}[os.uname().machine]
added = ctypes.CDLL(None, use_errno=True).syscall(ADD_KEY, b"user", b"gate-check-test-key", b"secret", 6, -3)
print("added" if added >= 0 else "refused " + os.strerror(ctypes.get_errno()))
"#;

#[test]
fn a_confined_check_adds_no_key_to_the_caller_s_session_keyring() {
    if program("python3").is_none() {
        return;
    }
    let sandbox = Sandbox::new();
    let wrapper = sandbox.root.parent().unwrap().join("keyring.py");
    fs::write(&wrapper, KEYRING_WRAPPER).unwrap();
    sandbox.write("add_key.py", ADD_KEY);
    sandbox.write("GATES.md", &gate("K1", "python3 add_key.py", "added"));
    let in_session = |args: &[&str]| {
        let command = sandbox.std_cmd();
        let mut wrapped = std::process::Command::new("python3");
        wrapped.arg(&wrapper).arg(command.get_program()).args(args).current_dir(&sandbox.root);
        for (name, value) in command.get_envs() {
            match value {
                Some(value) => wrapped.env(name, value),
                None => wrapped.env_remove(name),
            };
        }
        sandbox.run_with(&mut assert_cmd::Command::from_std(wrapped))
    };
    // Unconfined, the key lands in the caller's session keyring.
    in_session(&["--approve", "-q", "GATES.md"]).code(0).stdout_ends_with("ALL MET (1 met)\nkey=found\n");
    // Confined, in the check's own keyring, which ends with it.
    in_session(&["--reverify", "--sandbox", "-q", "GATES.md"])
        .code(0)
        .stdout_is("ALL MET (1 met, reran: 1, 1 of them met before)\nkey=absent\n");
}

// Item 10: credentials.

#[test]
fn credential_names_and_urls_with_passwords_are_withheld_and_working_directories_are_not() {
    let sandbox = Sandbox::new();
    let secrets = [
        ("GITHUB_PAT", "ghp_1"),
        ("GH_PAT", "ghp_2"),
        ("MYSQL_PWD", "pw"),
        ("NGROK_AUTHTOKEN", "ng"),
        ("TF_TOKEN_app_terraform_io", "tf"),
        ("CI_JOB_JWT_V2", "jwt"),
        ("CIRCLE_OIDC_TOKEN_V2", "oidc"),
        ("DOCKER_AUTH_CONFIG", "{}"),
        ("DATABASE_URL", "postgres://app:s3cret@db/app"),
    ];
    let innocent = [("OLDPWD", "/previous"), ("GIT_AUTHOR_NAME", "A"), ("CACHE_URL", "redis://cache:6379/0")];
    let show = "echo \"oldpwd=$OLDPWD author=$GIT_AUTHOR_NAME cache=$CACHE_URL\"; for name in GITHUB_PAT GH_PAT \
                MYSQL_PWD NGROK_AUTHTOKEN TF_TOKEN_app_terraform_io CI_JOB_JWT_V2 CIRCLE_OIDC_TOKEN_V2 \
                DOCKER_AUTH_CONFIG DATABASE_URL; do env | grep -q \"^$name=\" && echo \"seen $name\"; done; true";
    sandbox.write("GATES.md", &gate("E1", show, "/^oldpwd=\\/previous author=A cache=redis(?![\\s\\S]*seen)/"));
    let run = |args: &[&str]| {
        let mut command = sandbox.cmd();
        command.args(args).envs(secrets).envs(innocent);
        sandbox.run_with(&mut command)
    };
    // Unconfined, the check sees them all.
    run(&["--approve", "-q"]).code(1).stdout_contains("FAIL GATES:E1");
    let document =
        run(&["--reverify", "--sandbox", "--format", "json"]).code(0).stderr_contains("SANDBOX").stdout_json();
    let withheld: Vec<&str> =
        document["sandbox"]["withheldVariables"].as_array().unwrap().iter().filter_map(|name| name.as_str()).collect();
    for (name, _) in secrets {
        assert!(withheld.contains(&name), "{name} reached the check: {document}");
    }
    for name in ["PWD", "OLDPWD", "PATH", "HOME", "GIT_AUTHOR_NAME", "CACHE_URL"] {
        assert!(!withheld.contains(&name), "{name} was withheld: {document}");
    }
    assert!(!document.to_string().contains("s3cret"), "a value reached the report");
}
