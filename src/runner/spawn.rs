//! Starting one check: `<shell> -c <CHECK>` as the leader of a new session,
//! so it has no controlling terminal and its process group id is its own
//! pid, with stdin from /dev/null and stdout and stderr into fresh pipes.

use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::process::Pid;

pub struct Spawned {
    pub leader: Pid,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
    /// Our copies of the pipes' write ends, when kept (see `Check::writers`).
    pub writers: Option<[OwnedFd; 2]>,
}

/// Starts the check in a child that shares our memory until it execs (a
/// `vfork`-style clone on a stack of its own, as glibc's `posix_spawn`
/// does), so no page table is copied. Unlike `posix_spawn`, whose child
/// looks up and resets the disposition of every one of the 64 signals
/// before exec (about 70 system calls, a tenth of a trivial check's whole
/// cost), this child resets only the signals not at their default here,
/// found once per run (see `handled_signals`).
///
/// The child makes system calls only, on data built here before the clone:
/// no allocation, no lock, nothing that can panic. It sets those signals to
/// their default action, empties its signal mask, starts a new session,
/// takes stdin from /dev/null and stdout and stderr into the pipes, changes
/// to the check's directory, closes every other descriptor, then execs.
#[cfg(target_os = "linux")]
/// `shell` is absolute (`check::plan::Runtime::shell`).
pub fn spawn(shell: &Path, command: &str, cwd: &Path, environment: &ChildEnvironment) -> io::Result<Spawned> {
    use std::ffi::CString;
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;

    let text = |bytes: &[u8]| CString::new(bytes).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput));
    let args = [text(shell.as_os_str().as_bytes())?, text(b"-c")?, text(command.as_bytes())?];
    let directory = text(cwd.as_os_str().as_bytes())?;
    let [(stdout, stdout_child), (stderr, stderr_child)] = match SPARE_PIPES.take() {
        Some(pipes) => pipes,
        None => output_pipes()?,
    };
    let null = dev_null()?;
    let argv = [args[0].as_ptr(), args[1].as_ptr(), args[2].as_ptr(), std::ptr::null()];
    let envp: Vec<*const nix::libc::c_char> =
        environment.entries.iter().map(|entry| entry.as_ptr()).chain([std::ptr::null()]).collect();
    let plan = child::Plan {
        program: args[0].as_ptr(),
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        directory: directory.as_ptr(),
        stdio: [null.as_raw_fd(), stdout_child.as_raw_fd(), stderr_child.as_raw_fd()],
        reset: child::handled_signals(),
        failure: std::sync::atomic::AtomicI32::new(0),
    };
    let leader = child::start(&plan)?;
    Ok(Spawned { leader, stdout, stderr, writers: Some([stdout_child, stderr_child]) })
}

/// The clone-and-exec child of [`spawn`], and the little it needs.
#[cfg(target_os = "linux")]
mod child {
    use std::cell::RefCell;
    use std::io;
    use std::sync::atomic::{AtomicI32, Ordering};
    use std::sync::OnceLock;

    use nix::libc::{self, c_char, c_int};
    use nix::sched::CloneFlags;
    use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow};
    use rustix::process::Pid;

    /// Everything the child touches, built by the parent before the clone.
    pub struct Plan<'a> {
        pub program: *const c_char,
        pub argv: *const *const c_char,
        pub envp: *const *const c_char,
        pub directory: *const c_char,
        /// The descriptors that become the child's 0, 1 and 2.
        pub stdio: [c_int; 3],
        /// Signals set back to their default action before the mask opens.
        pub reset: &'a [c_int],
        /// The errno of the step that failed, written by the child before
        /// it exits; 0 when it exec'd.
        pub failure: AtomicI32,
    }

    /// The child's stack, one per spawning thread and reused: the parent
    /// thread is suspended while its child runs on it, until the exec.
    /// Far more than the few frames the child needs.
    const STACK_BYTES: usize = 64 * 1024;

    thread_local! {
        static STACK: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    }

    /// Clones the child, which runs `plan` and execs; returns its pid once
    /// it has exec'd, or the error of the step that failed (the child is
    /// then reaped).
    pub fn start(plan: &Plan) -> io::Result<Pid> {
        STACK.with_borrow_mut(|stack| {
            stack.resize(STACK_BYTES, 0);
            // All signals stay blocked in the parent thread across the
            // clone, so none runs a handler in the child while it shares
            // our memory; the child opens its own mask only after it has
            // reset every handler.
            let mut blocked = SigSet::empty();
            pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::all()), Some(&mut blocked))?;
            let flags = CloneFlags::CLONE_VM | CloneFlags::CLONE_VFORK;
            // SAFETY: with CLONE_VFORK this thread is suspended until the
            // child execs or exits, so the child is the only user of the
            // stack and of `plan`; it makes system calls only (`run`).
            let cloned = unsafe { nix::sched::clone(Box::new(|| run(plan)), stack, flags, Some(libc::SIGCHLD)) };
            // Restoring a mask read a moment ago cannot fail; the child, if
            // any, is handled either way.
            let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&blocked), None);
            let pid = cloned?;
            let leader = Pid::from_raw(pid.as_raw()).ok_or_else(|| io::Error::other("clone returned pid 0"))?;
            match plan.failure.load(Ordering::SeqCst) {
                0 => Ok(leader),
                errno => {
                    let _ = rustix::process::waitpid(Some(leader), rustix::process::WaitOptions::empty());
                    Err(io::Error::from_raw_os_error(errno))
                }
            }
        })
    }

    /// The child: only system calls, on memory the parent prepared; it
    /// never returns.
    fn run(plan: &Plan) -> isize {
        // SAFETY: every pointer in `plan` is a live C string or a
        // null-terminated array of them, owned by the suspended parent.
        unsafe {
            reset_signals(plan.reset);
            open_signal_mask();
            if libc::setsid() < 0 {
                fail(plan);
            }
            for (target, &fd) in (0..).zip(plan.stdio.iter()) {
                // A descriptor already in place only loses close-on-exec.
                let placed = if fd == target { libc::fcntl(fd, libc::F_SETFD, 0) } else { libc::dup2(fd, target) };
                if placed < 0 {
                    fail(plan);
                }
            }
            if libc::chdir(plan.directory) < 0 {
                fail(plan);
            }
            close_inherited();
            libc::execve(plan.program, plan.argv, plan.envp);
            fail(plan)
        }
    }

    /// Closes every descriptor above stderr: what gate-check inherited
    /// without close-on-exec (a file, a socket) never reaches the check.
    /// Ours are all close-on-exec already. A kernel without `close_range`
    /// (before 5.9) leaves them as they are.
    fn close_inherited() {
        // SAFETY: a plain system call on this child's own descriptor table,
        // which it does not share with the parent.
        unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) };
    }

    /// Records the errno of the step that just failed and exits.
    unsafe fn fail(plan: &Plan) -> ! {
        // SAFETY: the errno slot is the suspended parent thread's, which it
        // does not read before it resumes; `_exit` runs no handler.
        unsafe {
            let errno = *libc::__errno_location();
            plan.failure.store(if errno == 0 { libc::ECHILD } else { errno }, Ordering::SeqCst);
            libc::_exit(127)
        }
    }

    /// Sets `signals` back to their default action: async-signal-safe, for
    /// a child between its start and its exec.
    pub fn reset_signals(signals: &[c_int]) {
        // SAFETY: `default` is a valid action; each call only changes this
        // process's disposition of one signal.
        unsafe {
            let mut default: libc::sigaction = std::mem::zeroed();
            default.sa_sigaction = libc::SIG_DFL;
            for &signal in signals {
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
    }

    /// Empties the signal mask, which a child inherits from the thread that
    /// started it: async-signal-safe.
    pub fn open_signal_mask() {
        // SAFETY: `open` is initialized by `sigemptyset` before it is used.
        unsafe {
            let mut open: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut open);
            libc::sigprocmask(libc::SIG_SETMASK, &open, std::ptr::null_mut());
        }
    }

    /// The signals a check's child sets back to their default action before
    /// it opens its mask:
    /// - every standard signal (1 to 31) not at its default here, caught or
    ///   ignored, so a check starts the same way however gate-check was
    ///   started (under `nohup`, as a background job), as the Node tool's
    ///   children do; this includes SIGPIPE, which the Rust runtime ignores;
    /// - every other signal this process catches: a handler must never run
    ///   in a child that still shares our memory.
    ///
    /// Looked up at the first spawn, as a list built before any child
    /// exists: the run's handlers are installed when its first check starts,
    /// before that spawn, and none later.
    pub fn handled_signals() -> &'static [c_int] {
        static HANDLED: OnceLock<Vec<c_int>> = OnceLock::new();
        HANDLED.get_or_init(|| {
            (1..=libc::SIGRTMAX())
                .filter(|&signal| {
                    let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
                    // SAFETY: a query only: no new action, and `current` is
                    // large enough for the old one. Signals that cannot be
                    // caught, or that glibc reserves, report an error.
                    let queried = unsafe { libc::sigaction(signal, std::ptr::null(), &mut current) };
                    let default = current.sa_sigaction == libc::SIG_DFL;
                    let caught = !default && current.sa_sigaction != libc::SIG_IGN;
                    queried == 0 && (caught || (signal < 32 && !default))
                })
                .collect()
        })
    }
}

/// A confined check (`--sandbox`): the same start, plus a private TMPDIR in
/// its environment and, in the child before exec, the fence's namespaces,
/// read-only mounts and Landlock domain (see `sandbox`). A fork with a hook
/// in the child, which `posix_spawn` cannot run.
#[cfg(target_os = "linux")]
pub fn spawn_confined(
    shell: &Path,
    command: &str,
    cwd: &Path,
    environment: &ChildEnvironment,
    fence: &super::sandbox::linux::Fence,
) -> io::Result<Spawned> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    let mut spawning = Command::new(shell);
    spawning.env_clear();
    for entry in &environment.entries {
        let bytes = entry.as_bytes();
        let split = bytes.iter().position(|&byte| byte == b'=').unwrap_or(bytes.len());
        let (key, value) = (&bytes[..split], bytes.get(split + 1..).unwrap_or_default());
        if key != b"TMPDIR" {
            spawning.env(std::ffi::OsStr::from_bytes(key), std::ffi::OsStr::from_bytes(value));
        }
    }
    spawning.env("TMPDIR", fence.tmpdir());
    spawning.arg("-c").arg(command).current_dir(cwd).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let steps = fence.steps(cwd)?;
    let reset = child::handled_signals();
    // SAFETY: between fork and exec the hook makes system calls only, on
    // memory prepared before the fork (see `ChildSteps::confine_self`).
    unsafe {
        spawning.pre_exec(move || {
            // std's fork path keeps the mask of the thread that forks, and
            // the dispositions gate-check was started with.
            child::reset_signals(reset);
            child::open_signal_mask();
            rustix::process::setsid().map_err(io::Error::from)?;
            steps.confine_self().map_err(|(_, error)| error)
        });
    }
    spawned(spawning.spawn()?)
}

/// A check std started with piped output, as the runner holds it.
fn spawned(mut child: std::process::Child) -> io::Result<Spawned> {
    let missing = || io::Error::other("child pipe missing");
    let stdout = OwnedFd::from(child.stdout.take().ok_or_else(missing)?);
    let stderr = OwnedFd::from(child.stderr.take().ok_or_else(missing)?);
    let leader = Pid::from_child(&child);
    // Dropping `Child` neither waits nor kills: the runner reaps the leader.
    drop(child);
    Ok(Spawned { leader, stdout, stderr, writers: None })
}

/// A check's stdout and stderr pipes: (our read end, the child's write end).
#[cfg(target_os = "linux")]
type OutputPipes = [(OwnedFd, OwnedFd); 2];

#[cfg(target_os = "linux")]
fn output_pipes() -> io::Result<OutputPipes> {
    use rustix::pipe::{pipe_with, PipeFlags};
    Ok([pipe_with(PipeFlags::CLOEXEC)?, pipe_with(PipeFlags::CLOEXEC)?])
}

#[cfg(target_os = "linux")]
thread_local! {
    /// The pipes of this thread's next check, made while the last one ran.
    static SPARE_PIPES: std::cell::Cell<Option<OutputPipes>> = const { std::cell::Cell::new(None) };
}

/// Makes the pipes of this thread's next check now, while its current check
/// runs and the thread would only wait: two pipes cost about 10 µs, a good
/// part of what a check costs beyond a bare fork/exec/wait. They are
/// close-on-exec like every descriptor of ours, so no check inherits
/// another's pipes.
#[cfg(target_os = "linux")]
pub fn prepare_next() {
    if let Ok(pipes) = output_pipes() {
        SPARE_PIPES.set(Some(pipes));
    }
}

#[cfg(not(target_os = "linux"))]
pub fn prepare_next() {}

/// `/dev/null` for every check's stdin, opened once per run (close-on-exec:
/// a child gets it only as its stdin).
#[cfg(target_os = "linux")]
fn dev_null() -> io::Result<&'static std::fs::File> {
    static NULL: std::sync::OnceLock<std::fs::File> = std::sync::OnceLock::new();
    if let Some(null) = NULL.get() {
        return Ok(null);
    }
    let opened = std::fs::File::open("/dev/null")?;
    Ok(NULL.get_or_init(|| opened))
}

/// The environment every check inherits (gate-check never changes its
/// own), built once per run in the form the spawn call takes.
pub struct ChildEnvironment {
    #[cfg(target_os = "linux")]
    entries: Vec<std::ffi::CString>,
    #[cfg(not(target_os = "linux"))]
    variables: Vec<(std::ffi::OsString, std::ffi::OsString)>,
}

impl ChildEnvironment {
    pub fn new(variables: &[(std::ffi::OsString, std::ffi::OsString)]) -> ChildEnvironment {
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::ffi::OsStrExt;
            let entries = variables
                .iter()
                .filter_map(|(key, value)| {
                    let mut entry = key.as_bytes().to_vec();
                    entry.push(b'=');
                    entry.extend_from_slice(value.as_bytes());
                    std::ffi::CString::new(entry).ok()
                })
                .collect();
            ChildEnvironment { entries }
        }
        #[cfg(not(target_os = "linux"))]
        {
            ChildEnvironment { variables: variables.to_vec() }
        }
    }
}

/// Elsewhere std's fork path with a `setsid` hook does the same job.
#[cfg(not(target_os = "linux"))]
pub fn spawn(shell: &Path, command: &str, cwd: &Path, environment: &ChildEnvironment) -> io::Result<Spawned> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    let mut spawning = Command::new(shell);
    spawning.env_clear().envs(environment.variables.iter().map(|(key, value)| (key, value)));
    spawning.arg("-c").arg(command).current_dir(cwd).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // SAFETY: setsid is async-signal-safe and touches no memory.
    unsafe {
        spawning.pre_exec(|| rustix::process::setsid().map(drop).map_err(io::Error::from));
    }
    spawned(spawning.spawn()?)
}
