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

/// `posix_spawn` (a vfork-style clone in glibc) costs a fraction of the
/// fork-and-exec that std uses once a `pre_exec` hook is needed for
/// `setsid`, and `POSIX_SPAWN_SETSID` does the same thing in the child.
#[cfg(target_os = "linux")]
/// `shell` is absolute (`check::plan::Runtime::shell`).
pub fn spawn(shell: &Path, command: &str, cwd: &Path, environment: &ChildEnvironment) -> io::Result<Spawned> {
    use std::ffi::CString;
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;

    use nix::libc;
    use nix::spawn::{posix_spawn, PosixSpawnAttr, PosixSpawnFileActions, PosixSpawnFlags};
    use nix::sys::signal::{SigSet, Signal};

    let text = |bytes: &[u8]| CString::new(bytes).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput));
    let args = [text(shell.as_os_str().as_bytes())?, text(b"-c")?, text(command.as_bytes())?];
    let directory = text(cwd.as_os_str().as_bytes())?;
    let [(stdout, stdout_child), (stderr, stderr_child)] = match SPARE_PIPES.take() {
        Some(pipes) => pipes,
        None => output_pipes()?,
    };
    let null = dev_null()?;

    let mut actions = PosixSpawnFileActions::init()?;
    actions.add_dup2(null.as_raw_fd(), 0)?;
    actions.add_dup2(stdout_child.as_raw_fd(), 1)?;
    actions.add_dup2(stderr_child.as_raw_fd(), 2)?;
    // SAFETY: `PosixSpawnFileActions` is `repr(transparent)` over the libc
    // type, initialized above and alive for the call; `directory` is a valid
    // C string that glibc copies. nix wraps every action but this one.
    let added = unsafe {
        libc::posix_spawn_file_actions_addchdir_np(
            (&mut actions as *mut PosixSpawnFileActions).cast::<libc::posix_spawn_file_actions_t>(),
            directory.as_ptr(),
        )
    };
    if added != 0 {
        return Err(io::Error::from_raw_os_error(added));
    }
    let mut attributes = PosixSpawnAttr::init()?;
    // What std does for its children too: an empty signal mask, and SIGPIPE
    // (which the Rust runtime ignores) back to its default action.
    let flags = PosixSpawnFlags::POSIX_SPAWN_SETSIGMASK
        | PosixSpawnFlags::POSIX_SPAWN_SETSIGDEF
        | PosixSpawnFlags::from_bits_retain(libc::c_int::from(libc::POSIX_SPAWN_SETSID));
    attributes.set_flags(flags)?;
    attributes.set_sigmask(&SigSet::empty())?;
    let mut defaults = SigSet::empty();
    defaults.add(Signal::SIGPIPE);
    attributes.set_sigdefault(&defaults)?;
    let pid = posix_spawn(shell, &actions, &attributes, &args, &environment.entries)?;
    let leader = Pid::from_raw(pid.as_raw()).ok_or_else(|| io::Error::other("posix_spawn returned pid 0"))?;
    Ok(Spawned { leader, stdout, stderr, writers: Some([stdout_child, stderr_child]) })
}

/// A confined check (`--sandbox`): the same start, plus a private TMPDIR in
/// its environment and, in the child before exec, the fence's namespaces
/// and Landlock domain. A fork with a hook in the child, which
/// `posix_spawn` cannot run.
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
    let steps = fence.steps();
    // SAFETY: between fork and exec the hook makes system calls only, on
    // memory prepared before the fork (see `ChildSteps::confine_self`).
    unsafe {
        spawning.pre_exec(move || {
            rustix::process::setsid().map_err(io::Error::from)?;
            steps.confine_self()
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
