//! Shared fixtures for the binary-level tests: a temporary repository root,
//! a private approval store outside it, and a `gate-check` command wired to
//! both with a clean, deterministic environment.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

pub struct Sandbox {
    _dir: tempfile::TempDir,
    /// The repository root the checker runs against.
    pub root: PathBuf,
    /// A 0700 approval store outside `root`.
    pub approvals: PathBuf,
    /// The receipt store, outside `root` (gate-check creates it).
    pub receipts: PathBuf,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("temp dir");
        let base = canonical(dir.path());
        let root = base.join("repo");
        let approvals = base.join("approvals");
        fs::create_dir(&root).expect("root");
        fs::create_dir(&approvals).expect("approvals");
        make_private(&approvals);
        let receipts = base.join("receipts");
        Sandbox { _dir: dir, root, approvals, receipts }
    }

    /// Writes `text` to `relative` under the root, creating directories.
    pub fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.path(relative);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("parent dirs");
        }
        fs::write(&path, text).expect("write fixture");
        path
    }

    pub fn read(&self, relative: &str) -> String {
        fs::read_to_string(self.path(relative)).expect("read fixture")
    }

    /// `relative` (written with `/`) under the root, spelled as the
    /// platform spells it.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.join(native(relative))
    }

    /// `gate-check` run from the root with the sandbox's approval store and
    /// none of the variables that would change its decisions.
    pub fn cmd(&self) -> Command {
        Command::from_std(self.std_cmd())
    }

    /// The same command as a plain `std::process::Command`, for tests that
    /// spawn and signal the process themselves.
    pub fn std_cmd(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("gate-check"));
        cmd.current_dir(&self.root)
            .env("UNLAZY_APPROVAL_DIR", &self.approvals)
            .env("UNLAZY_RECEIPT_DIR", &self.receipts)
            .env_remove("UNLAZY_PROOF")
            .env_remove("UNLAZY_SHELL")
            .env_remove("UNLAZY_SCOPE")
            .env_remove("GITHUB_ACTIONS")
            .env("NO_COLOR", "1");
        cmd
    }

    /// Number of approval records in the store.
    pub fn approval_count(&self) -> usize {
        fs::read_dir(&self.approvals)
            .map(|entries| {
                entries.filter_map(Result::ok).filter(|e| e.path().extension().is_some_and(|x| x == "json")).count()
            })
            .unwrap_or(0)
    }
}

/// Starts every command before waiting for any, so they really run at the
/// same time, and returns their outputs in order.
pub fn run_concurrently(commands: impl IntoIterator<Item = std::process::Command>) -> Vec<std::process::Output> {
    let children: Vec<_> = commands
        .into_iter()
        .map(|mut command| {
            command
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn gate-check")
        })
        .collect();
    children.into_iter().map(|child| child.wait_with_output().expect("wait for gate-check")).collect()
}

/// One runnable gate as ledger text.
pub fn gate(id: &str, check: &str, expect: &str) -> String {
    format!("- [ ] {id}: outcome {id}\n  CHECK: {check}\n  EXPECT: {expect}\n  EVIDENCE: pending\n")
}

/// Output of a finished command as text: (exit code, stdout, stderr).
pub fn outcome(output: &std::process::Output) -> (i32, String, String) {
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `path` with its links resolved, as gate-check shows it: on Windows the
/// temporary directory as it is spelled (`canonicalize` would give a
/// `\\?\` path, which cmd.exe cannot start in).
pub fn canonical(path: &Path) -> PathBuf {
    if cfg!(windows) {
        path.to_path_buf()
    } else {
        fs::canonicalize(path).expect("canonical temp dir")
    }
}

/// Makes a directory private to this user: mode 0700 on Unix. On Windows
/// a new directory already is (the profile's temporary directory grants
/// only the user, SYSTEM and Administrators; under wine, the Windows test
/// run's umask 077 gives the same).
pub fn make_private(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(0o700)).expect("chmod");
    }
    #[cfg(windows)]
    let _ = path;
}

/// The program `name` on this test process's PATH, for a test that drives
/// it (a shell's completion machinery, a Python suite). On a machine that
/// lacks it the test is skipped with a notice on the terminal, so the
/// README's set-up is enough for the suite to pass; under `CI=true` (set by
/// GitHub Actions and by `.ci/run`) a missing program fails the test. The
/// programs these tests drive (shells, Python) are Unix ones.
#[cfg(unix)]
pub fn program(name: &str) -> Option<PathBuf> {
    let found = installed(name);
    if found.is_none() {
        let ci = std::env::var("CI").is_ok_and(|value| value == "true");
        assert!(!ci, "{name} is needed for this test and CI=true requires it (install {name})");
        // Written to the terminal itself: the harness hides what a passing test prints.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "note: test {} skipped: {name} is not installed (CI=true requires it)",
            std::thread::current().name().unwrap_or("?")
        );
    }
    found
}

/// The executable `name` on this test process's PATH, if any.
#[cfg(unix)]
pub fn installed(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).map(|directory| directory.join(name)).find(|candidate| {
        fs::metadata(candidate).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    })
}

pub fn exists(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok()
}

/// A finished `gate-check` run whose exit code, stdout and stderr are all
/// checked: `code` must be asserted, and a stream not matched with `*_is`
/// or `*_contains` must be empty, so a test cannot silently ignore output.
pub struct Run {
    args: Vec<String>,
    code: i32,
    stdout: String,
    stderr: String,
    code_checked: bool,
    stdout_checked: bool,
    stderr_checked: bool,
}

impl Sandbox {
    /// Runs `gate-check ARGS` from the root (see `cmd`) and returns the
    /// checked result.
    pub fn run(&self, args: &[&str]) -> Run {
        self.run_with(self.cmd().args(args))
    }

    /// Runs a prepared command (extra environment, stdin) as a checked result.
    pub fn run_with(&self, command: &mut Command) -> Run {
        let output = command.output().expect("run gate-check");
        let (code, stdout, stderr) = outcome(&output);
        let args = format!("{:?}", command).split(' ').map(str::to_string).collect();
        Run { args, code, stdout, stderr, code_checked: false, stdout_checked: false, stderr_checked: false }
    }
}

impl Run {
    fn context(&self) -> String {
        format!("{}\n--- stdout\n{}--- stderr\n{}", self.args.join(" "), self.stdout, self.stderr)
    }

    pub fn code(mut self, want: i32) -> Run {
        assert_eq!(self.code, want, "exit code of {}", self.context());
        self.code_checked = true;
        self
    }

    pub fn stdout_is(mut self, want: &str) -> Run {
        assert_eq!(self.stdout, want, "stdout of {}", self.context());
        self.stdout_checked = true;
        self
    }

    pub fn stderr_is(mut self, want: &str) -> Run {
        assert_eq!(self.stderr, want, "stderr of {}", self.context());
        self.stderr_checked = true;
        self
    }

    /// The escape hatch for output that carries temp paths or digests.
    pub fn stdout_contains(mut self, fragment: &str) -> Run {
        assert!(self.stdout.contains(fragment), "want {fragment:?} in stdout of {}", self.context());
        self.stdout_checked = true;
        self
    }

    pub fn stderr_contains(mut self, fragment: &str) -> Run {
        assert!(self.stderr.contains(fragment), "want {fragment:?} in stderr of {}", self.context());
        self.stderr_checked = true;
        self
    }

    pub fn stdout_starts_with(mut self, start: &str) -> Run {
        assert!(self.stdout.starts_with(start), "want stdout of {} to start with {start:?}", self.context());
        self.stdout_checked = true;
        self
    }

    pub fn stderr_starts_with(mut self, start: &str) -> Run {
        assert!(self.stderr.starts_with(start), "want stderr of {} to start with {start:?}", self.context());
        self.stderr_checked = true;
        self
    }

    pub fn stdout_ends_with(mut self, end: &str) -> Run {
        assert!(self.stdout.ends_with(end), "want stdout of {} to end with {end:?}", self.context());
        self.stdout_checked = true;
        self
    }

    /// Stdout for a test that takes it apart itself (a manual page's
    /// sections, a count of lines). The exit code must be checked first;
    /// stderr must still be checked or empty.
    pub fn into_stdout(mut self) -> String {
        assert!(self.code_checked, "check the exit code before taking stdout: {}", self.context());
        self.stdout_checked = true;
        std::mem::take(&mut self.stdout)
    }

    /// Stderr for a test that takes it apart itself; the exit code must be
    /// checked first, stdout still checked or empty.
    pub fn into_stderr(mut self) -> String {
        assert!(self.code_checked, "check the exit code before taking stderr: {}", self.context());
        self.stderr_checked = true;
        std::mem::take(&mut self.stderr)
    }

    /// Stdout as the one JSON document it must be.
    pub fn stdout_json(mut self) -> serde_json::Value {
        let document = serde_json::from_str(&self.stdout)
            .unwrap_or_else(|error| panic!("stdout is not one JSON document ({error}): {}", self.context()));
        self.stdout_checked = true;
        document
    }

    pub fn stdout_lacks(self, fragment: &str) -> Run {
        assert!(!self.stdout.contains(fragment), "unwanted {fragment:?} in stdout of {}", self.context());
        self
    }

    pub fn stderr_lacks(self, fragment: &str) -> Run {
        assert!(!self.stderr.contains(fragment), "unwanted {fragment:?} in stderr of {}", self.context());
        self
    }

    /// The exit code, for a helper whose caller asserts it (check it with
    /// `code` all the same).
    pub fn exit_code(&self) -> i32 {
        self.code
    }

    pub fn stdout(&self) -> &str {
        &self.stdout
    }

    pub fn stderr(&self) -> &str {
        &self.stderr
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        assert!(self.code_checked, "exit code never checked: {}", self.context());
        assert!(self.stdout_checked || self.stdout.is_empty(), "unchecked stdout: {}", self.context());
        assert!(self.stderr_checked || self.stderr.is_empty(), "unchecked stderr: {}", self.context());
    }
}

/// A path relative to the root as gate-check shows it: with `\` on Windows.
pub fn native(relative: &str) -> String {
    if cfg!(windows) {
        relative.replace('/', "\\")
    } else {
        relative.to_string()
    }
}

/// CHECK text for the shell a run uses by default: `/bin/sh`, or on
/// Windows cmd.exe (`%ComSpec%`), so one test runs on both.
pub mod sh {
    /// Succeeds and prints nothing.
    pub const TRUE: &str = if cfg!(windows) { "exit /b 0" } else { "true" };
    /// Fails with exit code 1 and prints nothing.
    pub const FALSE: &str = if cfg!(windows) { "exit /b 1" } else { "false" };
    /// Prints the working directory.
    pub const PWD: &str = if cfg!(windows) { "cd" } else { "pwd" };
    /// The line ending `echo` prints.
    pub const EOL: &str = if cfg!(windows) { "\r\n" } else { "\n" };

    /// Exits with `code`.
    pub fn exit(code: i32) -> String {
        if cfg!(windows) {
            format!("exit /b {code}")
        } else {
            format!("exit {code}")
        }
    }

    /// Runs `first`, then `second` whatever `first` gave (cmd.exe would
    /// print a space before `&` as part of an `echo`).
    pub fn then(first: &str, second: &str) -> String {
        if cfg!(windows) {
            format!("{first}& {second}")
        } else {
            format!("{first}; {second}")
        }
    }

    /// Prints `word` (letters, digits, `-` and `.`) without a line ending.
    pub fn print(word: &str) -> String {
        if cfg!(windows) {
            format!("<nul set /p ={word}")
        } else {
            format!("printf {word}")
        }
    }

    /// Creates the empty file `name` in the working directory.
    pub fn touch(name: &str) -> String {
        if cfg!(windows) {
            format!("type nul > {name}")
        } else {
            format!("touch {name}")
        }
    }

    /// Prints the file `name`.
    pub fn cat(name: &str) -> String {
        if cfg!(windows) {
            format!("type {name}")
        } else {
            format!("cat {name}")
        }
    }

    /// Waits about `seconds` whole seconds (cmd.exe has no sleep: one ping a
    /// second).
    pub fn sleep(seconds: u32) -> String {
        if cfg!(windows) {
            format!("ping -n {} 127.0.0.1 > nul", seconds + 1)
        } else {
            format!("sleep {seconds}")
        }
    }

    /// The default shell's path as gate-check resolves and shows it.
    pub fn default_shell() -> String {
        if cfg!(windows) {
            std::env::var("ComSpec").unwrap_or_else(|_| r"C:\windows\system32\cmd.exe".to_string())
        } else {
            "/bin/sh".to_string()
        }
    }
}

/// Makes a file private to this user: mode 0600 on Unix; on Windows a new
/// file already is (see `make_private`).
pub fn make_private_file(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    #[cfg(windows)]
    let _ = path;
}

/// Makes `link` a symbolic link to `target` where the test platform can:
/// true on Unix; false on Windows, which lets only administrators (or
/// Developer Mode) create one, and under wine 8, which runs the Windows
/// tests, creates none. What a test checks about links it checks only then.
pub fn symlink(target: &Path, link: &Path) -> bool {
    #[cfg(unix)]
    std::os::unix::fs::symlink(target, link).expect("symlink");
    #[cfg(windows)]
    let _ = (target, link);
    cfg!(unix)
}

/// Runs git in `dir`; its stdout, which must be a success's.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git is needed for these tests");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}
