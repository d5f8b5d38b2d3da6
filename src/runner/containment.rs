//! What keeps checks contained, as one value built at the edge of a run
//! (`Containment::install`) and handed to the pool and the runner: the
//! registry of live check leaders, the sweep that finds descendants which
//! left a check's process group, and the interrupt. With
//! `SignalMode::Standard` a SIGINT, SIGTERM or SIGHUP is caught by a
//! handler that only records the first signal and makes the wake pipe
//! readable; every supervisor polls that pipe in its own loop and
//! terminates its own check, so no thread is kept for signals.
//! `SignalMode::Noop` catches nothing (tests interrupt with `interrupt`).
//!
//! Two rules make every signal land where it is meant to. A leader is
//! reaped only after its group has been killed and it has left the
//! registry (until then its pid, which is also its group and session id,
//! cannot be reused). And only our own unreaped children are ever signalled
//! by pid, so a pid we signal is always the process we looked at.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use rustix::process::{waitid, waitpid, Pid, WaitId, WaitIdOptions, WaitOptions};

use super::procfs::{children, holds_pipe, info as process_info, ProcessInfo};
use super::spawn::Spawned;
use super::{Exit, Interruption};

/// How long killed orphans may take to die before a sweep stops waiting.
const SWEEP_LIMIT: Duration = Duration::from_secs(1);

/// Whether a run catches the interrupting signals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalMode {
    /// SIGINT, SIGTERM and SIGHUP (each unless inherited ignored) end the
    /// run cleanly once the first check has started.
    Standard,
    /// No handler: the process keeps its default dispositions (tests
    /// interrupt a run with `interrupt`).
    #[cfg(test)]
    Noop,
}

/// What the signal handler shares with the run: only what is safe to touch
/// from a handler (an atomic and a write to a pipe).
struct Interrupt {
    /// The first signal's number, 0 until one arrives.
    signal: AtomicI32,
    /// Readable once the run has been interrupted: every supervisor polls it.
    reader: OwnedFd,
    writer: OwnedFd,
}

impl Interrupt {
    /// Records `signal` unless one came first, and wakes every poller.
    /// Async-signal-safe: one compare-and-swap and one `write`.
    fn raise(&self, signal: i32) {
        if self.signal.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
            let _ = rustix::io::write(&self.writer, b"!");
        }
    }
}

/// The containment of one run's checks.
pub struct Containment {
    mode: SignalMode,
    /// Leaders of started checks not yet reaped.
    live: Mutex<Vec<Pid>>,
    /// `None` when no pipe could be made: checks then run uninterruptible.
    interrupt: Option<Arc<Interrupt>>,
    armed: Once,
    /// Confined checks' TMPDIRs that could not be removed when their check
    /// ended (other checks held every descriptor): removed with the run.
    left_behind: Mutex<Vec<PathBuf>>,
}

impl Containment {
    /// Builds the containment of a run. Nothing is armed yet: the subreaper
    /// flag (orphaned descendants are re-parented to us, not to init, so
    /// the sweep can find them) and the signal handlers are set when the
    /// first check starts, so an interrupt before that ends the process at
    /// once, as it would without gate-check's handlers.
    pub fn install(mode: SignalMode) -> Containment {
        let interrupt = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK)
            .ok()
            .map(|(reader, writer)| Arc::new(Interrupt { signal: AtomicI32::new(0), reader, writer }));
        Containment {
            mode,
            live: Mutex::new(Vec::new()),
            interrupt,
            armed: Once::new(),
            left_behind: Mutex::new(Vec::new()),
        }
    }

    /// Removes `directory` when the run ends, when every check's
    /// descriptors are closed.
    #[cfg(target_os = "linux")]
    pub fn remove_at_end(&self, directory: PathBuf) {
        self.left_behind.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(directory);
    }

    /// Catches the interrupting signals from now on, before any check
    /// starts: for a run that makes something (a checkout) it must remove
    /// however the run ends.
    pub fn catch_interrupts(&self) {
        self.arm();
    }

    fn arm(&self) {
        self.armed.call_once(|| {
            #[cfg(target_os = "linux")]
            // Without it (an old kernel) only process groups are contained.
            let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
            if let (SignalMode::Standard, Some(interrupt)) = (self.mode, &self.interrupt) {
                for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
                    if inherited_ignore(signal) {
                        continue;
                    }
                    let interrupt = Arc::clone(interrupt);
                    let raw = signal as i32;
                    // SAFETY: the action is async-signal-safe (`Interrupt::raise`).
                    let _ = unsafe { signal_hook::low_level::register(raw, move || interrupt.raise(raw)) };
                }
            }
        });
    }

    /// Interrupts the run as the signal would: what the handler does.
    #[cfg(test)]
    pub fn interrupt(&self, interruption: Interruption) {
        if let Some(interrupt) = &self.interrupt {
            interrupt.raise(i32::from(interruption.number()));
        }
    }

    /// What interrupted this run, if anything did: the signal numbers the
    /// handler records are the `Interruption` numbers.
    pub fn interruption(&self) -> Option<Interruption> {
        let raw = self.interrupt.as_ref()?.signal.load(Ordering::SeqCst);
        u8::try_from(raw).ok().and_then(Interruption::from_number)
    }

    /// The descriptor that becomes readable when the run is interrupted.
    pub fn wake_fd(&self) -> Option<BorrowedFd<'_>> {
        self.interrupt.as_ref().map(|interrupt| interrupt.reader.as_fd())
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Pid>> {
        self.live.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Starts a check and registers its leader, atomically with respect to
    /// sweeps: no sweep can mistake a leader for an orphan, and no check
    /// starts once the run has been interrupted.
    pub fn launch(&self, start: impl FnOnce() -> io::Result<Spawned>) -> Result<(Check<'_>, [OwnedFd; 2]), Launch> {
        self.arm();
        let mut live = self.lock();
        if let Some(interruption) = self.interruption() {
            return Err(Launch::Interrupted(interruption));
        }
        let spawned = start().map_err(Launch::Failed)?;
        live.push(spawned.leader);
        drop(live);
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
        let check = Check { containment: self, leader: spawned.leader, exit_watch, pipe_inodes, writers };
        Ok((check, [spawned.stdout, spawned.stderr]))
    }
}

impl Drop for Containment {
    fn drop(&mut self) {
        let left = self.left_behind.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
        for directory in left.drain(..) {
            let _ = std::fs::remove_dir_all(directory);
        }
    }
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

fn nix_pid(pid: Pid) -> nix::unistd::Pid {
    nix::unistd::Pid::from_raw(pid.as_raw_nonzero().get())
}

/// A started check whose leader has not been reaped.
pub struct Check<'a> {
    containment: &'a Containment,
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
    Interrupted(Interruption),
    Failed(io::Error),
}

impl Check<'_> {
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

    /// SIGTERM (and SIGCONT, so a stopped one can act on it) to the group
    /// and to the descendants adopted from it: an interrupt's first step,
    /// before SIGKILL after a grace.
    pub fn terminate(&self) {
        let _ = killpg(nix_pid(self.leader), Signal::SIGTERM);
        let _ = killpg(nix_pid(self.leader), Signal::SIGCONT);
        let live = self.containment.lock();
        for (orphan, info) in adopted(&live) {
            if belongs(&live, true, self, orphan, &info) {
                let _ = kill(nix_pid(orphan), Signal::SIGTERM);
                let _ = kill(nix_pid(orphan), Signal::SIGCONT);
            }
        }
    }

    /// Kills the descendants that left the group and were adopted by us.
    pub fn sweep(&self) {
        let interrupted = self.containment.interruption().is_some();
        sweep(&self.containment.lock(), interrupted, self);
    }
}

/// Ends a check: kills what is left of its group and of its adopted
/// descendants, then reaps the leader. Returns the leader's exit, if it
/// exited within `kill_wait` of the final SIGKILL.
pub fn release(check: Check, exit: Option<Exit>, kill_wait: Duration) -> Option<Exit> {
    check.kill_group();
    let exit = exit.or_else(|| check.wait_exit(kill_wait));
    let interrupted = check.containment.interruption().is_some();
    let mut live = check.containment.lock();
    sweep(&live, interrupted, &check);
    live.retain(|leader| *leader != check.leader);
    if exit.is_some() {
        let _ = waitpid(Some(check.leader), WaitOptions::empty());
    }
    exit
}

/// Our live children that are not check leaders: descendants of checks
/// adopted after their parent died. Zombies among them are reaped on the way.
fn adopted(live: &[Pid]) -> Vec<(Pid, ProcessInfo)> {
    children()
        .into_iter()
        .filter(|pid| !live.contains(pid))
        .filter(|pid| !matches!(waitpid(Some(*pid), WaitOptions::NOHANG), Ok(Some(_))))
        .filter_map(|pid| process_info(pid).map(|info| (pid, info)))
        .collect()
}

/// Whose an adopted process is: in `check`'s group or session, holding its
/// output pipes, or, when no other check is running (or the run is being
/// torn down), anyone's that no other live check claims.
fn belongs(live: &[Pid], interrupted: bool, check: &Check, pid: Pid, info: &ProcessInfo) -> bool {
    let leader = check.leader.as_raw_nonzero().get();
    if info.group == leader || info.session == leader {
        return true;
    }
    let other = |id: i32| live.iter().any(|l| *l != check.leader && l.as_raw_nonzero().get() == id);
    if other(info.group) || other(info.session) {
        return false;
    }
    live.len() <= 1 || interrupted || holds_pipe(pid, &check.pipe_inodes)
}

/// Kills `check`'s adopted descendants, level by level: each one killed
/// hands its own children to us, and the next round finds them.
fn sweep(live: &[Pid], interrupted: bool, check: &Check) {
    let deadline = Instant::now() + SWEEP_LIMIT;
    loop {
        let victims: Vec<(Pid, ProcessInfo)> =
            adopted(live).into_iter().filter(|(pid, info)| belongs(live, interrupted, check, *pid, info)).collect();
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
