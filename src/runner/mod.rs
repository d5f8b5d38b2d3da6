//! The process runner: the only module that spawns. A check runs as
//! `<shell> -c <CHECK>` (on Windows `cmd.exe /d /s /c "<CHECK>"`, as Node
//! starts a shell there) with stdin from the null device; stdout and stderr
//! are captured under one combined byte ceiling.
//!
//! On Unix the check is the leader of a session of its own (no controlling
//! terminal, its own process group), and one thread supervises each check
//! with a single poll loop (`poll`) over both pipes, the leader's exit (a
//! pidfd on Linux) and the interrupt wake-up of the run's `Containment`.
//! The leader is never reaped before its group has been killed, so a group
//! id we signal is always ours. When a check ends, however it ends, what is
//! left of its group is killed, and so are descendants that left the group
//! but were adopted by gate-check (a child subreaper on Linux).
//!
//! On Windows each check runs in a Job Object of its own (`job`), which
//! holds every process the check starts; ending the check terminates the
//! job. Its pipes, its exit and the interrupt reach the supervisor as
//! messages on one channel.
//!
//! What supervision does on each of those events is one state machine
//! (`Supervision`), the same on every platform and tested without a
//! process.

#[cfg(unix)]
mod containment;
#[cfg(windows)]
mod job;
#[cfg(unix)]
mod poll;
#[cfg(unix)]
mod procfs;
mod sandbox;
#[cfg(unix)]
mod spawn;

pub use sandbox::{Confinement, Protected, SandboxError, WriteRoot};

use std::path::Path;
use std::time::{Duration, Instant};

#[cfg(unix)]
use containment::{release, Check, Launch};
#[cfg(windows)]
use job::{release, spawn as start, supervise, Check, Launch};
#[cfg(unix)]
use poll::supervise;
#[cfg(unix)]
use spawn::spawn as start;

#[cfg(unix)]
pub use containment::{Containment, SignalMode};
#[cfg(windows)]
pub use job::{ChildEnvironment, Containment, SignalMode};
#[cfg(unix)]
pub use spawn::ChildEnvironment;

/// After the group is killed, how long the pipes may take to report EOF
/// before the result is settled without them (a descendant out of our
/// reach, in another session or under another user, can hold them open).
const DRAIN_GRACE: Duration = Duration::from_millis(1500);
/// After the shell exits, how long its background descendants may keep
/// writing before the check fails for holding its output open.
pub const EOF_GRACE: Duration = Duration::from_secs(2);
/// After an interrupt reached the check (SIGTERM on Unix; on Windows the
/// console's own Ctrl-C or Ctrl-Break), how long it may take to exit before
/// it is killed.
const TERMINATE_GRACE: Duration = Duration::from_secs(2);
/// How long a killed leader may take to die before it is left unreaped.
const KILL_WAIT: Duration = Duration::from_secs(1);

pub struct CheckRequest<'a> {
    pub shell: &'a Path,
    pub environment: &'a ChildEnvironment,
    pub command: &'a str,
    pub cwd: &'a Path,
    pub timeout: Duration,
    pub max_output_bytes: usize,
    /// `--sandbox`: run the check inside this confinement, writing only
    /// under this root (its ledger's repository).
    pub confinement: Option<(&'a Confinement, &'a WriteRoot)>,
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
    /// (file descriptors, memory, processes), or its confinement could not
    /// be set up: nothing ran, and the check has no result of its own.
    Resources(String),
    /// The run was interrupted while the check ran; the check was
    /// terminated.
    Interrupted(Interruption),
    /// The run was interrupted before the check could start; nothing ran.
    NotStarted(Interruption),
}

/// What interrupted a run: a signal on Unix, a console control event on
/// Windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interruption {
    /// SIGINT; Ctrl-C on Windows.
    Interrupt,
    /// SIGTERM; the user logging off or the system shutting down on Windows.
    Terminate,
    /// SIGHUP; the console window closing on Windows.
    Hangup,
    /// Ctrl-Break.
    #[cfg(windows)]
    Break,
}

impl Interruption {
    /// The signal's number, which the exit status adds to 128 (130 for
    /// SIGINT and Ctrl-C alike); Ctrl-Break is the C runtime's SIGBREAK, 21.
    pub fn number(self) -> u8 {
        match self {
            Interruption::Interrupt => 2,
            Interruption::Terminate => 15,
            Interruption::Hangup => 1,
            #[cfg(windows)]
            Interruption::Break => 21,
        }
    }

    fn from_number(number: u8) -> Option<Interruption> {
        [
            Interruption::Interrupt,
            Interruption::Terminate,
            Interruption::Hangup,
            #[cfg(windows)]
            Interruption::Break,
        ]
        .into_iter()
        .find(|interruption| interruption.number() == number)
    }

    /// How messages name it.
    pub fn name(self) -> &'static str {
        #[cfg(unix)]
        match self {
            Interruption::Interrupt => "SIGINT",
            Interruption::Terminate => "SIGTERM",
            Interruption::Hangup => "SIGHUP",
        }
        #[cfg(windows)]
        match self {
            Interruption::Interrupt => "Ctrl-C",
            Interruption::Terminate => "logoff or shutdown",
            Interruption::Hangup => "the console closing",
            Interruption::Break => "Ctrl-Break",
        }
    }
}

/// How a check's leader ended: its exit code, or on Unix the signal that
/// ended it.
#[derive(Debug, Clone, Copy)]
pub struct Exit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
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
    #[cfg(unix)]
    if let Ok(signal) = nix::sys::signal::Signal::try_from(signal) {
        return signal.as_str().to_string();
    }
    signal.to_string()
}

/// Both output streams: which are still open, the bytes kept, and the
/// shared ceiling.
struct Capture {
    open: [bool; 2],
    kept: [Vec<u8>; 2],
    total: usize,
    limit: usize,
}

impl Capture {
    fn new(limit: usize) -> Capture {
        Capture { open: [true, true], kept: [Vec::new(), Vec::new()], total: 0, limit }
    }

    fn closed(&self) -> bool {
        !self.open.iter().any(|open| *open)
    }

    /// `stream` reached its end.
    fn close(&mut self, stream: usize) {
        self.open[stream] = false;
    }

    /// Keeps what fits of `bytes`, read from `stream`; true when they
    /// crossed the ceiling.
    fn take(&mut self, stream: usize, bytes: &[u8]) -> bool {
        let room = self.limit.saturating_sub(self.total);
        self.kept[stream].extend_from_slice(&bytes[..bytes.len().min(room)]);
        let crossed = self.total <= self.limit && self.total + bytes.len() > self.limit;
        self.total += bytes.len();
        crossed
    }
}

/// Runs one check to its end and reports how it went. Never panics on
/// anything the check does.
pub fn run_check(request: &CheckRequest, containment: &Containment) -> CheckOutcome {
    let started = Instant::now();
    // A confined check's TMPDIR lives as long as the fence: until the
    // check has been released.
    #[cfg(target_os = "linux")]
    let fence = match request.confinement.map(|(confinement, root)| confinement.fence(root)).transpose() {
        Ok(fence) => fence,
        Err(error) => {
            let failure = RunFailure::Resources(format!("cannot confine the check: {error}"));
            return CheckOutcome::unstarted(failure, started);
        }
    };
    let launched = containment.launch(|| {
        #[cfg(target_os = "linux")]
        if let Some(fence) = &fence {
            return spawn::spawn_confined(request.shell, request.command, request.cwd, request.environment, fence);
        }
        start(request.shell, request.command, request.cwd, request.environment)
    });
    let (check, output) = match launched {
        Ok(launched) => launched,
        Err(Launch::Interrupted(interruption)) => {
            return CheckOutcome::unstarted(RunFailure::NotStarted(interruption), started)
        }
        Err(Launch::Failed(error)) => {
            let message = format!("spawn {} failed: {error}", request.shell.display());
            // A confined start that failed is the fence's failure (the
            // shell and the directory were checked before): never the
            // check's own result.
            let failure = if is_resource_exhaustion(&error) || request.confinement.is_some() {
                RunFailure::Resources(message)
            } else {
                RunFailure::Spawn(message)
            };
            return CheckOutcome::unstarted(failure, started);
        }
    };
    #[cfg(unix)]
    spawn::prepare_next();
    let mut capture = Capture::new(request.max_output_bytes);
    let mut supervision = Supervision::new(check, started + request.timeout);
    supervise(&mut supervision, &mut capture, output, containment);
    let Supervision { check, exit, failure, .. } = supervision;
    let exit = release(check, exit, KILL_WAIT);
    #[cfg(target_os = "linux")]
    if let Some(left) = fence.as_ref().and_then(|fence| fence.remove_tmpdir()) {
        containment.remove_at_end(left);
    }
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
/// resources (descriptors or handles, memory, processes), as opposed to the
/// check's own failure to start (its shell or directory missing or not
/// executable).
fn is_resource_exhaustion(error: &std::io::Error) -> bool {
    #[cfg(unix)]
    use nix::libc::{EAGAIN, EMFILE, ENFILE, ENOBUFS, ENOMEM};
    #[cfg(unix)]
    let exhausted = [EMFILE, ENFILE, ENOMEM, EAGAIN, ENOBUFS];
    #[cfg(windows)]
    use windows_sys::Win32::Foundation::{
        ERROR_COMMITMENT_LIMIT, ERROR_NOT_ENOUGH_MEMORY, ERROR_NO_SYSTEM_RESOURCES, ERROR_OUTOFMEMORY,
        ERROR_TOO_MANY_OPEN_FILES,
    };
    #[cfg(windows)]
    let exhausted = [
        ERROR_TOO_MANY_OPEN_FILES,
        ERROR_NOT_ENOUGH_MEMORY,
        ERROR_OUTOFMEMORY,
        ERROR_NO_SYSTEM_RESOURCES,
        ERROR_COMMITMENT_LIMIT,
    ]
    .map(|code| code as i32);
    error.raw_os_error().is_some_and(|code| exhausted.contains(&code))
}

/// What supervision does to a started check; a fake stands in for the
/// process in tests.
trait Supervised {
    /// Kills what the check started: SIGKILL to the whole group, or the
    /// termination of its Job Object.
    fn kill_group(&self);
    /// An interrupt's SIGTERM to the group and what was adopted from it
    /// (on Windows the check shares the console, which has already told it).
    fn terminate(&self);
    /// Kills the descendants that left the group and were adopted by us
    /// (on Windows none can leave the job: the job is killed again).
    fn sweep(&self);
    /// Lets the pipes reach end-of-file once nothing but the check holds them.
    fn release_writers(&mut self);
}

impl Supervised for Check<'_> {
    fn kill_group(&self) {
        Check::kill_group(self)
    }

    fn terminate(&self) {
        Check::terminate(self)
    }

    fn sweep(&self) {
        Check::sweep(self)
    }

    fn release_writers(&mut self) {
        Check::release_writers(self)
    }
}

/// One check between its start and its release: what has happened to it,
/// and what must happen next. Every transition takes the time it happens
/// at, so the machine is driven by its events alone.
struct Supervision<C> {
    check: C,
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

impl<C: Supervised> Supervision<C> {
    fn new(check: C, timeout_at: Instant) -> Supervision<C> {
        Supervision { check, exit: None, failure: None, timeout_at, eof_by: None, terminate_by: None, killed_at: None }
    }

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
    fn kill(&mut self, failure: RunFailure, now: Instant) {
        self.failure.get_or_insert(failure);
        self.check.kill_group();
        self.killed_at = Some(now);
        if self.exit.is_some() {
            // The leader is gone, so what holds the pipes open was adopted.
            self.check.sweep();
        }
    }

    /// Acts on a passed deadline; false when the loop must stop.
    fn on_deadline(&mut self, now: Instant) -> bool {
        match (self.killed_at, self.terminate_by, self.exit) {
            (Some(_), _, _) => return false,
            // `on_interrupt` already recorded the failure.
            (None, Some(_), _) => self.kill(RunFailure::TimedOut, now),
            (None, None, Some(_)) => self.kill(RunFailure::OutputHeldOpen, now),
            (None, None, None) => self.kill(RunFailure::TimedOut, now),
        }
        true
    }

    /// The leader exited; `output_open` when a pipe has not reached EOF, and
    /// `interrupted` when the run was interrupted by then.
    fn on_exit(&mut self, exit: Exit, output_open: bool, interrupted: Option<Interruption>, now: Instant) {
        self.exit = Some(exit);
        self.check.release_writers();
        if let (None, Some(interruption)) = (self.terminate_by, interrupted) {
            // The interrupt came before the wake-up was seen: the result is
            // not the check's own.
            self.on_interrupt(interruption, now);
        }
        if self.killed_at.is_some() {
            self.check.sweep();
        } else if output_open {
            self.eof_by = Some((now + EOF_GRACE).min(self.timeout_at));
        }
    }

    /// The run was interrupted: the check is asked to end, and killed
    /// after `TERMINATE_GRACE`.
    fn on_interrupt(&mut self, interruption: Interruption, now: Instant) {
        if self.terminate_by.is_some() || self.killed_at.is_some() {
            return;
        }
        self.failure.get_or_insert(RunFailure::Interrupted(interruption));
        if self.exit.is_none() {
            self.check.terminate();
        }
        self.terminate_by = Some(now + TERMINATE_GRACE);
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    /// Stands in for a started check: records what supervision did to it.
    #[derive(Default)]
    struct Fake {
        calls: RefCell<Vec<&'static str>>,
    }

    impl Supervised for Fake {
        fn kill_group(&self) {
            self.calls.borrow_mut().push("kill_group");
        }

        fn terminate(&self) {
            self.calls.borrow_mut().push("terminate");
        }

        fn sweep(&self) {
            self.calls.borrow_mut().push("sweep");
        }

        fn release_writers(&mut self) {
            self.calls.borrow_mut().push("release_writers");
        }
    }

    const EXITED: Exit = Exit { code: Some(0), signal: None };

    fn machine(timeout: Duration) -> (Supervision<Fake>, Instant) {
        let start = Instant::now();
        (Supervision::new(Fake::default(), start + timeout), start)
    }

    fn calls(supervision: &Supervision<Fake>) -> Vec<&'static str> {
        supervision.check.calls.borrow().clone()
    }

    #[test]
    fn a_check_past_its_timeout_is_killed_then_given_the_drain_grace_and_no_more() {
        let (mut machine, start) = machine(Duration::from_secs(10));
        let timeout = start + Duration::from_secs(10);
        assert_eq!(machine.deadline(), timeout);
        assert!(machine.on_deadline(timeout));
        assert_eq!((machine.failure.clone(), calls(&machine)), (Some(RunFailure::TimedOut), vec!["kill_group"]));
        assert_eq!(machine.deadline(), timeout + DRAIN_GRACE);
        assert!(!machine.on_deadline(timeout + DRAIN_GRACE), "after the drain grace the loop stops");
    }

    #[test]
    fn output_held_open_after_the_exit_fails_the_check_after_the_eof_grace() {
        let (mut machine, start) = machine(Duration::from_secs(60));
        let exited = start + Duration::from_secs(1);
        machine.on_exit(EXITED, true, None, exited);
        assert_eq!(calls(&machine), ["release_writers"]);
        assert_eq!(machine.deadline(), exited + EOF_GRACE);
        assert!(machine.on_deadline(exited + EOF_GRACE));
        assert_eq!(machine.failure, Some(RunFailure::OutputHeldOpen));
        // The leader is gone: what holds the pipes was adopted, and is swept.
        assert_eq!(calls(&machine), ["release_writers", "kill_group", "sweep"]);

        // The grace never runs past the timeout.
        let (mut late, start) = self::machine(Duration::from_secs(3));
        late.on_exit(EXITED, true, None, start + Duration::from_secs(2));
        assert_eq!(late.deadline(), start + Duration::from_secs(3));
        // A clean exit leaves no deadline but the timeout.
        let (mut clean, start) = self::machine(Duration::from_secs(3));
        clean.on_exit(EXITED, false, None, start);
        assert_eq!((clean.eof_by, clean.failure.clone()), (None, None));
    }

    #[test]
    fn an_interrupt_terminates_once_and_kills_after_the_grace() {
        let (mut machine, start) = machine(Duration::from_secs(60));
        let at = start + Duration::from_millis(500);
        machine.on_interrupt(Interruption::Interrupt, at);
        machine.on_interrupt(Interruption::Terminate, at + Duration::from_millis(1));
        assert_eq!(calls(&machine), ["terminate"]);
        assert_eq!(
            machine.failure,
            Some(RunFailure::Interrupted(Interruption::Interrupt)),
            "the first interruption is the one"
        );
        assert_eq!(machine.deadline(), at + TERMINATE_GRACE);
        assert!(machine.on_deadline(at + TERMINATE_GRACE));
        assert_eq!(calls(&machine), ["terminate", "kill_group"]);
        assert_eq!(
            machine.failure,
            Some(RunFailure::Interrupted(Interruption::Interrupt)),
            "the kill keeps the reason"
        );
    }

    #[test]
    fn an_exit_seen_before_the_wake_up_is_still_an_interrupted_check() {
        let (mut machine, start) = machine(Duration::from_secs(60));
        machine.on_exit(Exit { code: None, signal: Some(15) }, false, Some(Interruption::Terminate), start);
        assert_eq!(machine.failure, Some(RunFailure::Interrupted(Interruption::Terminate)));
        assert_eq!(calls(&machine), ["release_writers"], "an exited leader is not signalled");
    }

    #[test]
    fn an_overflow_kills_at_once_and_sweeps_when_the_leader_exits() {
        let (mut machine, start) = machine(Duration::from_secs(60));
        machine.kill(RunFailure::Overflow, start);
        assert_eq!(calls(&machine), ["kill_group"], "the leader still runs: nothing adopted yet");
        machine.on_exit(Exit { code: None, signal: Some(9) }, true, None, start);
        assert_eq!(calls(&machine), ["kill_group", "release_writers", "sweep"]);
        assert_eq!(machine.eof_by, None, "a killed check waits for the drain grace, not the EOF grace");
        machine.on_interrupt(Interruption::Interrupt, start);
        assert_eq!(machine.failure, Some(RunFailure::Overflow), "the first failure wins");
    }
}
