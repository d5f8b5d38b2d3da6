//! What keeps checks contained, process-wide: the registry of live check
//! leaders, the sweep that finds descendants which left a check's process
//! group, and the signal thread that tears everything down on SIGINT,
//! SIGTERM or SIGHUP.
//!
//! Two rules make every signal land where it is meant to. A leader is
//! reaped only after its group has been killed and it has left the
//! registry (until then its pid, which is also its group and session id,
//! cannot be reused). And only our own unreaped children are ever signalled
//! by pid, so a pid we signal is always the process we looked at.

use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use rustix::process::{waitid, waitpid, Pid, WaitId, WaitIdOptions, WaitOptions};

use super::procfs::{children, holds_pipe, info as process_info, ProcessInfo};
use super::spawn::Spawned;

/// How long killed orphans may take to die before a sweep stops waiting.
const SWEEP_LIMIT: Duration = Duration::from_secs(1);

struct Registry {
    /// Leaders of started checks not yet reaped.
    live: Vec<Pid>,
    interrupted: Option<Signal>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry { live: Vec::new(), interrupted: None });

fn lock() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Readable once the run has been interrupted: every check polls it.
struct Wake {
    reader: io::PipeReader,
    writer: Mutex<io::PipeWriter>,
}

static WAKE: OnceLock<Option<Wake>> = OnceLock::new();

/// Sets up containment once, before the first check starts: the subreaper
/// flag (orphaned descendants are re-parented to us, not to init, so the
/// sweep can find them) and the signal thread.
fn install() -> Option<&'static Wake> {
    WAKE.get_or_init(|| {
        #[cfg(target_os = "linux")]
        // Without it (an old kernel) only process groups are contained.
        let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
        let (reader, writer) = io::pipe().ok()?;
        watch_signals().ok()?;
        Some(Wake { reader, writer: Mutex::new(writer) })
    })
    .as_ref()
}

/// True when this process was started with `signal` ignored (`nohup`, a
/// background job of a non-interactive shell): that choice stays in force.
fn inherited_ignore(signal: Signal) -> bool {
    let mut current = std::mem::MaybeUninit::<nix::libc::sigaction>::zeroed();
    // SAFETY: with a null new action, sigaction only writes the current one
    // into `current`, which is large enough. nix offers no query-only call.
    let queried = unsafe { nix::libc::sigaction(signal as i32, std::ptr::null(), current.as_mut_ptr()) };
    // SAFETY: zero-initialized, and filled in when `queried` is 0.
    queried == 0 && unsafe { current.assume_init() }.sa_sigaction == nix::libc::SIG_IGN
}

fn watch_signals() -> io::Result<()> {
    let wanted: Vec<i32> = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP]
        .into_iter()
        .filter(|signal| !inherited_ignore(*signal))
        .map(|signal| signal as i32)
        .collect();
    let mut signals = signal_hook::iterator::Signals::new(wanted)?;
    std::thread::Builder::new().name("gate-check-signals".into()).spawn(move || {
        for raw in signals.forever() {
            if let Ok(signal) = Signal::try_from(raw) {
                interrupt(signal);
            }
        }
    })?;
    Ok(())
}

/// The first signal wins. Every live check group, and every orphan adopted
/// from one, gets SIGTERM (and SIGCONT, so a stopped one can act on it);
/// each check then escalates to SIGKILL after its grace.
fn interrupt(signal: Signal) {
    let mut registry = lock();
    let first = registry.interrupted.is_none();
    registry.interrupted.get_or_insert(signal);
    for leader in &registry.live {
        let _ = killpg(nix_pid(*leader), Signal::SIGTERM);
        let _ = killpg(nix_pid(*leader), Signal::SIGCONT);
    }
    for (orphan, _) in adopted(&registry) {
        let _ = kill(nix_pid(orphan), Signal::SIGTERM);
        let _ = kill(nix_pid(orphan), Signal::SIGCONT);
    }
    if first {
        if let Some(wake) = WAKE.get().and_then(Option::as_ref) {
            let _ = wake.writer.lock().unwrap_or_else(|p| p.into_inner()).write_all(b"!");
        }
    }
}

/// The signal that interrupted this run, if one did.
pub fn interruption() -> Option<Signal> {
    lock().interrupted
}

fn nix_pid(pid: Pid) -> nix::unistd::Pid {
    nix::unistd::Pid::from_raw(pid.as_raw_nonzero().get())
}

/// How a check's leader ended.
#[derive(Debug, Clone, Copy)]
pub struct Exit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

/// A started check whose leader has not been reaped.
pub struct Check {
    pub leader: Pid,
    /// A pidfd, readable once the leader has exited (Linux 5.3 and later).
    pub exit_watch: Option<OwnedFd>,
    /// Inodes of the check's output pipes, to tell whose an orphan is.
    pipe_inodes: Vec<u64>,
    /// With an exit watch, our copies of the pipes' write ends, closed when
    /// the leader exits: the pipes then cannot report end-of-file first, and
    /// the supervisor wakes once when a check ends, not twice.
    writers: Option<[OwnedFd; 2]>,
}

pub enum Launch {
    Interrupted(Signal),
    Failed(io::Error),
}

/// Starts a check and registers its leader, atomically with respect to the
/// signal thread and to sweeps: no check can start after an interrupt, and
/// no sweep can mistake a leader for an orphan.
pub fn launch(start: impl FnOnce() -> io::Result<Spawned>) -> Result<(Check, [OwnedFd; 2]), Launch> {
    install();
    let mut registry = lock();
    if let Some(signal) = registry.interrupted {
        return Err(Launch::Interrupted(signal));
    }
    let spawned = start().map_err(Launch::Failed)?;
    registry.live.push(spawned.leader);
    drop(registry);
    #[cfg(target_os = "linux")]
    let exit_watch = rustix::process::pidfd_open(spawned.leader, rustix::process::PidfdFlags::empty()).ok();
    #[cfg(not(target_os = "linux"))]
    let exit_watch = None;
    let pipe_inodes = [&spawned.stdout, &spawned.stderr]
        .iter()
        .filter_map(|pipe| rustix::fs::fstat(pipe).ok())
        .map(|stat| stat.st_ino)
        .collect();
    let writers = spawned.writers.filter(|_| exit_watch.is_some());
    Ok((Check { leader: spawned.leader, exit_watch, pipe_inodes, writers }, [spawned.stdout, spawned.stderr]))
}

/// The descriptor that becomes readable when the run is interrupted.
pub fn wake_fd() -> Option<BorrowedFd<'static>> {
    WAKE.get().and_then(Option::as_ref).map(|wake| wake.reader.as_fd())
}

impl Check {
    /// SIGKILL to the whole group. Safe at any time before `release`: the
    /// unreaped leader keeps the group id ours.
    pub fn kill_group(&self) {
        let _ = killpg(nix_pid(self.leader), Signal::SIGKILL);
    }

    /// Lets the pipes reach end-of-file once nothing but the check holds them.
    pub fn release_writers(&mut self) {
        self.writers = None;
    }

    /// The leader's exit status without reaping it, if it has exited.
    pub fn peek_exit(&self) -> Option<Exit> {
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG;
        let status = waitid(WaitId::Pid(self.leader), options).ok()??;
        Some(Exit { code: status.exit_status(), signal: status.terminating_signal() })
    }

    fn wait_exit(&self, limit: Duration) -> Option<Exit> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(exit) = self.peek_exit() {
                return Some(exit);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Kills the descendants that left the group and were adopted by us.
    pub fn sweep(&self) {
        sweep(&lock(), self);
    }
}

/// Ends a check: kills what is left of its group and of its adopted
/// descendants, then reaps the leader. Returns the leader's exit, if it
/// exited within `kill_wait` of the final SIGKILL.
pub fn release(check: Check, exit: Option<Exit>, kill_wait: Duration) -> Option<Exit> {
    check.kill_group();
    let exit = exit.or_else(|| check.wait_exit(kill_wait));
    let mut registry = lock();
    sweep(&registry, &check);
    registry.live.retain(|leader| *leader != check.leader);
    if exit.is_some() {
        let _ = waitpid(Some(check.leader), WaitOptions::empty());
    }
    exit
}

/// Our live children that are not check leaders: descendants of checks
/// adopted after their parent died. Zombies among them are reaped on the way.
fn adopted(registry: &Registry) -> Vec<(Pid, ProcessInfo)> {
    children()
        .into_iter()
        .filter(|pid| !registry.live.contains(pid))
        .filter(|pid| !matches!(waitpid(Some(*pid), WaitOptions::NOHANG), Ok(Some(_))))
        .filter_map(|pid| process_info(pid).map(|info| (pid, info)))
        .collect()
}

/// Whose an adopted process is: in `check`'s group or session, holding its
/// output pipes, or, when no other check is running (or the run is being
/// torn down), anyone's that no other live check claims.
fn belongs(registry: &Registry, check: &Check, pid: Pid, info: &ProcessInfo) -> bool {
    let leader = check.leader.as_raw_nonzero().get();
    if info.group == leader || info.session == leader {
        return true;
    }
    let other = |id: i32| registry.live.iter().any(|l| *l != check.leader && l.as_raw_nonzero().get() == id);
    if other(info.group) || other(info.session) {
        return false;
    }
    registry.live.len() <= 1 || registry.interrupted.is_some() || holds_pipe(pid, &check.pipe_inodes)
}

/// Kills `check`'s adopted descendants, level by level: each one killed
/// hands its own children to us, and the next round finds them.
fn sweep(registry: &Registry, check: &Check) {
    let deadline = Instant::now() + SWEEP_LIMIT;
    loop {
        let victims: Vec<(Pid, ProcessInfo)> =
            adopted(registry).into_iter().filter(|(pid, info)| belongs(registry, check, *pid, info)).collect();
        if victims.is_empty() || Instant::now() >= deadline {
            return;
        }
        for (victim, info) in &victims {
            let _ = kill(nix_pid(*victim), Signal::SIGKILL);
            if info.group == victim.as_raw_nonzero().get() {
                let _ = killpg(nix_pid(*victim), Signal::SIGKILL);
            }
        }
        for (victim, _) in &victims {
            while !matches!(waitpid(Some(*victim), WaitOptions::NOHANG), Ok(Some(_)) | Err(_)) {
                if Instant::now() >= deadline {
                    return;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}
