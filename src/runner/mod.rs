//! The process runner: the only module that spawns. A check runs as
//! `<shell> -c <CHECK>`, the leader of a session of its own (no controlling
//! terminal, its own process group) with stdin from /dev/null; stdout and
//! stderr are captured under one combined byte ceiling.
//!
//! One thread supervises each check with a single poll loop over both pipes,
//! the leader's exit (a pidfd on Linux) and the interrupt wake-up. The
//! leader is never reaped before its group has been killed, so a group id
//! we signal is always ours. When a check ends, however it ends, what is
//! left of its group is killed, and so are descendants that left the group
//! but were adopted by gate-check (a child subreaper on Linux).

mod containment;
mod procfs;
mod spawn;

pub use spawn::ChildEnvironment;

use std::cell::RefCell;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use rustix::event::{poll, PollFd, PollFlags, Timespec};

use containment::{Check, Exit, Launch};

pub use containment::interruption;

/// After the group is killed, how long the pipes may take to report EOF
/// before the result is settled without them (a descendant out of our
/// reach, in another session or under another user, can hold them open).
const DRAIN_GRACE: Duration = Duration::from_millis(1500);
/// After the shell exits, how long its background descendants may keep
/// writing before the check fails for holding its output open.
pub const EOF_GRACE: Duration = Duration::from_secs(2);
/// After an interrupt's SIGTERM, how long a check may take to exit before
/// SIGKILL.
const TERMINATE_GRACE: Duration = Duration::from_secs(2);
/// How long a killed leader may take to die before it is left unreaped.
const KILL_WAIT: Duration = Duration::from_secs(1);
/// Without a pidfd, how often the leader's exit is looked for.
const EXIT_POLL_TICK: Duration = Duration::from_millis(10);
const READ_CHUNK: usize = 64 * 1024;

pub struct CheckRequest<'a> {
    pub shell: &'a Path,
    pub environment: &'a ChildEnvironment,
    pub command: &'a str,
    pub cwd: &'a Path,
    pub timeout: Duration,
    pub max_output_bytes: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunFailure {
    TimedOut,
    Overflow,
    /// The shell exited, but a background process kept stdout or stderr
    /// open past `EOF_GRACE`: the output is incomplete.
    OutputHeldOpen,
    Spawn(String),
    /// gate-check's own resources ran out before the check could start
    /// (file descriptors, memory, processes): nothing ran, and the check
    /// has no result of its own.
    Resources(String),
    /// The run was interrupted by this signal while the check ran; the
    /// check was terminated.
    Interrupted(Signal),
    /// The run was interrupted before the check could start; nothing ran.
    NotStarted(Signal),
}

#[derive(Debug)]
pub struct CheckOutcome {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub failure: Option<RunFailure>,
    pub duration: Duration,
}

impl CheckOutcome {
    fn unstarted(failure: RunFailure, started: Instant) -> CheckOutcome {
        CheckOutcome {
            stdout: Vec::new(),
            stderr: Vec::new(),
            exit_code: None,
            signal: None,
            failure: Some(failure),
            duration: started.elapsed(),
        }
    }
}

fn signal_name(signal: i32) -> String {
    Signal::try_from(signal).map(|s| s.as_str().to_string()).unwrap_or_else(|_| signal.to_string())
}

thread_local! {
    /// One read buffer per supervising thread, reused by all its checks.
    static READ_BUFFER: RefCell<Vec<u8>> = RefCell::new(vec![0; READ_CHUNK]);
}

/// Both output streams: open pipes, the bytes kept, and the shared ceiling.
struct Capture {
    pipes: [Option<OwnedFd>; 2],
    kept: [Vec<u8>; 2],
    total: usize,
    limit: usize,
}

impl Capture {
    fn closed(&self) -> bool {
        self.pipes.iter().all(Option::is_none)
    }

    /// Reads what one pipe has; true when this read crossed the ceiling.
    fn read(&mut self, stream: usize, buffer: &mut [u8]) -> bool {
        let Some(pipe) = &self.pipes[stream] else { return false };
        match rustix::io::read(pipe, &mut *buffer) {
            Ok(0) => self.pipes[stream] = None,
            Ok(count) => {
                let room = self.limit.saturating_sub(self.total);
                self.kept[stream].extend_from_slice(&buffer[..count.min(room)]);
                let crossed = self.total <= self.limit && self.total + count > self.limit;
                self.total += count;
                return crossed;
            }
            Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => {}
            Err(_) => self.pipes[stream] = None,
        }
        false
    }
}

/// Runs one check to its end and reports how it went. Never panics on
/// anything the check does.
pub fn run_check(request: &CheckRequest) -> CheckOutcome {
    let started = Instant::now();
    let launched =
        containment::launch(|| spawn::spawn(request.shell, request.command, request.cwd, request.environment));
    let (check, [stdout, stderr]) = match launched {
        Ok(launched) => launched,
        Err(Launch::Interrupted(signal)) => return CheckOutcome::unstarted(RunFailure::NotStarted(signal), started),
        Err(Launch::Failed(error)) => {
            let message = format!("spawn {} failed: {error}", request.shell.display());
            let failure = if is_resource_exhaustion(&error) {
                RunFailure::Resources(message)
            } else {
                RunFailure::Spawn(message)
            };
            return CheckOutcome::unstarted(failure, started);
        }
    };
    spawn::prepare_next();
    let capture = Capture {
        pipes: [Some(stdout), Some(stderr)],
        kept: [Vec::new(), Vec::new()],
        total: 0,
        limit: request.max_output_bytes,
    };
    let mut supervision = Supervision {
        check,
        capture,
        exit: None,
        failure: None,
        timeout_at: started + request.timeout,
        eof_by: None,
        terminate_by: None,
        killed_at: None,
    };
    READ_BUFFER.with_borrow_mut(|buffer| supervision.run(buffer));
    let Supervision { check, capture, exit, failure, .. } = supervision;
    let exit = containment::release(check, exit, KILL_WAIT);
    let [stdout, stderr] = capture.kept;
    CheckOutcome {
        stdout,
        stderr,
        exit_code: exit.and_then(|e| e.code),
        signal: exit.and_then(|e| e.signal).map(signal_name),
        failure,
        duration: started.elapsed(),
    }
}

/// True for the errors of running out of this process's or the system's
/// resources (descriptors, memory, processes), as opposed to the check's
/// own failure to start (its shell or directory missing or not executable).
fn is_resource_exhaustion(error: &std::io::Error) -> bool {
    use nix::libc::{EAGAIN, EMFILE, ENFILE, ENOBUFS, ENOMEM};
    matches!(error.raw_os_error(), Some(EMFILE | ENFILE | ENOMEM | EAGAIN | ENOBUFS))
}

/// One check between its start and its release.
struct Supervision {
    check: Check,
    capture: Capture,
    exit: Option<Exit>,
    failure: Option<RunFailure>,
    timeout_at: Instant,
    /// Set when the leader exits with a pipe still open.
    eof_by: Option<Instant>,
    /// Set when an interrupt's SIGTERM reached the group.
    terminate_by: Option<Instant>,
    /// Set when the group got SIGKILL.
    killed_at: Option<Instant>,
}

impl Supervision {
    /// The next moment something must happen if nothing else does first.
    fn deadline(&self) -> Instant {
        match (self.killed_at, self.terminate_by, self.eof_by) {
            (Some(killed), _, _) => killed + DRAIN_GRACE,
            (None, Some(terminate), _) => terminate,
            (None, None, Some(eof)) => eof,
            (None, None, None) => self.timeout_at,
        }
    }

    /// Fails the check for `failure` (unless it already failed) and kills it.
    fn kill(&mut self, failure: RunFailure) {
        self.failure.get_or_insert(failure);
        self.check.kill_group();
        self.killed_at = Some(Instant::now());
        if self.exit.is_some() {
            // The leader is gone, so what holds the pipes open was adopted.
            self.check.sweep();
        }
    }

    /// Acts on a passed deadline; false when the loop must stop.
    fn on_deadline(&mut self) -> bool {
        match (self.killed_at, self.terminate_by, self.exit) {
            (Some(_), _, _) => return false,
            // `on_interrupt` already recorded the failure.
            (None, Some(_), _) => self.kill(RunFailure::TimedOut),
            (None, None, Some(_)) => self.kill(RunFailure::OutputHeldOpen),
            (None, None, None) => self.kill(RunFailure::TimedOut),
        }
        true
    }

    fn on_exit(&mut self, exit: Exit) {
        self.exit = Some(exit);
        self.check.release_writers();
        if self.terminate_by.is_none() && containment::interruption().is_some() {
            // The interrupt's SIGTERM may have ended it before the wake-up
            // was seen: its result is not its own.
            self.on_interrupt();
        }
        if self.killed_at.is_some() {
            self.check.sweep();
        } else if !self.capture.closed() {
            self.eof_by = Some((Instant::now() + EOF_GRACE).min(self.timeout_at));
        }
    }

    fn on_interrupt(&mut self) {
        let Some(signal) = containment::interruption() else { return };
        self.failure.get_or_insert(RunFailure::Interrupted(signal));
        self.terminate_by = Some(Instant::now() + TERMINATE_GRACE);
    }

    fn run(&mut self, buffer: &mut [u8]) {
        let wake = containment::wake_fd();
        while !(self.exit.is_some() && self.capture.closed()) {
            let now = Instant::now();
            if now >= self.deadline() {
                if !self.on_deadline() {
                    return;
                }
                continue;
            }
            let mut wait = self.deadline() - now;
            let exit_watch = self.check.exit_watch.as_ref().filter(|_| self.exit.is_none());
            let watching_exit = exit_watch.is_some();
            if !watching_exit && self.exit.is_none() {
                wait = wait.min(EXIT_POLL_TICK);
            }
            let watching_wake = self.killed_at.is_none() && self.terminate_by.is_none();
            // Slots: stdout, stderr, the leader's exit, the interrupt wake-up.
            let mut sources = Vec::with_capacity(4);
            let mut slots = [None; 4];
            let candidates = [
                self.capture.pipes[0].as_ref().map(|fd| fd.as_fd()),
                self.capture.pipes[1].as_ref().map(|fd| fd.as_fd()),
                exit_watch.map(|fd| fd.as_fd()),
                wake.filter(|_| watching_wake),
            ];
            for (slot, fd) in candidates.into_iter().enumerate() {
                if let Some(fd) = fd {
                    slots[slot] = Some(sources.len());
                    sources.push(PollFd::from_borrowed_fd(fd, PollFlags::IN));
                }
            }
            let timeout = Timespec::try_from(wait).unwrap_or(Timespec { tv_sec: 1, tv_nsec: 0 });
            if poll(&mut sources, Some(&timeout)).is_err() {
                continue; // EINTR from a signal: look again.
            }
            let ready = |slot: usize| slots[slot].is_some_and(|index| !sources[index].revents().is_empty());
            let (stdout_ready, stderr_ready, exited, woken) = (ready(0), ready(1), ready(2), ready(3));
            drop(sources);
            for (stream, is_ready) in [(0, stdout_ready), (1, stderr_ready)] {
                if is_ready && self.capture.read(stream, buffer) {
                    self.kill(RunFailure::Overflow);
                }
            }
            if self.exit.is_none() && (exited || !watching_exit) {
                if let Some(exit) = self.check.peek_exit() {
                    self.on_exit(exit);
                }
            }
            if woken {
                self.on_interrupt();
            }
        }
    }
}
