//! Windows containment: every check runs in a Job Object of its own, made
//! kill-on-close, so every process the check starts, however deep and
//! whatever its parent did, is in the job and dies with it: on timeout,
//! overflow and interrupt, when the check ends, and when gate-check itself
//! ends (its handles close with it). The shell is created suspended and put
//! in the job before it runs, so nothing it starts can be outside the job.
//!
//! Interrupts are console control events. With `SignalMode::Standard`,
//! Ctrl-C and Ctrl-Break (and the console closing, logoff and shutdown) are
//! recorded by a handler that wakes every supervisor, which ends its own
//! check. A check shares gate-check's console, as under the Node tool, so
//! the console has already given it the same Ctrl-C; after the grace its
//! job is killed. A gate-check started with Ctrl-C ignored (a new process
//! group) passes that on, and Windows calls no handler for Ctrl-C then: the
//! choice stays in force, as an inherited ignored SIGINT does on Unix.
//!
//! Each check's pipes, its exit and the interrupt reach its supervisor as
//! messages on one channel: a thread reads each pipe, another waits for
//! the shell's exit.

use std::ffi::OsString;
use std::io::{self, Read};
use std::os::windows::io::{AsHandle, AsRawHandle, FromRawHandle, OwnedHandle};
use std::os::windows::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard, Once, Weak};
use std::time::{Duration, Instant};

use windows_sys::core::BOOL;
use windows_sys::Win32::Foundation::{FALSE, INVALID_HANDLE_VALUE, STATUS_CONTROL_C_EXIT, TRUE, WAIT_OBJECT_0};
use windows_sys::Win32::System::Console::{
    GetConsoleWindow, SetConsoleCtrlHandler, CTRL_BREAK_EVENT, CTRL_CLOSE_EVENT, CTRL_C_EVENT, CTRL_LOGOFF_EVENT,
    CTRL_SHUTDOWN_EVENT,
};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Thread32First, Thread32Next, TH32CS_SNAPTHREAD, THREADENTRY32,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectExtendedLimitInformation, SetInformationJobObject,
    TerminateJobObject, JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION,
    JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};
use windows_sys::Win32::System::Threading::{
    OpenThread, ResumeThread, WaitForSingleObject, CREATE_NO_WINDOW, CREATE_SUSPENDED, INFINITE, THREAD_SUSPEND_RESUME,
};

use super::{Capture, Exit, Interruption, RunFailure, Supervision};

/// The exit code of a process ended by its job's termination.
const KILLED_EXIT_CODE: u32 = 1;
const READ_CHUNK: usize = 64 * 1024;

/// Whether a run handles console control events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalMode {
    /// Ctrl-C, Ctrl-Break, the console closing, logoff and shutdown end the
    /// run cleanly once the first check has started.
    Standard,
    /// No handler (tests interrupt a run with `interrupt`).
    #[cfg(test)]
    Noop,
}

/// What a supervisor hears about its check.
pub enum Event {
    /// Bytes read from stdout (0) or stderr (1).
    Output(usize, Vec<u8>),
    /// That stream reached its end.
    Closed(usize),
    /// The shell exited.
    Exited,
    /// The run was interrupted.
    Interrupted,
}

/// What the console handler shares with the run.
struct Interrupt {
    /// The first interruption's number, 0 until one comes.
    number: AtomicU8,
    /// The supervisors of started checks, by check id, woken by an interrupt.
    wakers: Mutex<Vec<(usize, Sender<Event>)>>,
}

impl Interrupt {
    fn wakers(&self) -> MutexGuard<'_, Vec<(usize, Sender<Event>)>> {
        self.wakers.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records `interruption` unless one came first, and wakes every supervisor.
    fn raise(&self, interruption: Interruption) {
        let first = self.number.compare_exchange(0, interruption.number(), Ordering::SeqCst, Ordering::SeqCst).is_ok();
        if first {
            for (_, waker) in self.wakers().iter() {
                let _ = waker.send(Event::Interrupted);
            }
        }
    }
}

/// The runs whose interrupts the console handler raises.
static HANDLED: Mutex<Vec<Weak<Interrupt>>> = Mutex::new(Vec::new());

/// The console control handler: runs on a thread of its own, so it may
/// lock and send. For Ctrl-C and Ctrl-Break, true keeps the process alive
/// to end its checks. For the console closing, logoff and shutdown, Windows
/// ends the process as soon as this returns: the checks die with their
/// jobs (kill-on-close), every file write is atomic, and a lock left held
/// is taken over as a crashed holder's, but nothing is reported.
unsafe extern "system" fn on_console_event(event: u32) -> BOOL {
    let interruption = match event {
        CTRL_C_EVENT => Interruption::Interrupt,
        CTRL_BREAK_EVENT => Interruption::Break,
        CTRL_CLOSE_EVENT => Interruption::Hangup,
        CTRL_LOGOFF_EVENT | CTRL_SHUTDOWN_EVENT => Interruption::Terminate,
        _ => return FALSE,
    };
    let handled = HANDLED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    for interrupt in handled.iter().filter_map(Weak::upgrade) {
        interrupt.raise(interruption);
    }
    TRUE
}

/// The containment of one run's checks.
pub struct Containment {
    mode: SignalMode,
    interrupt: Arc<Interrupt>,
    armed: Once,
    next_check: AtomicUsize,
}

impl Containment {
    /// Builds the containment of a run. The console handler is set when the
    /// first check starts, so an interrupt before that ends the process at
    /// once, as it would without gate-check's handler.
    pub fn install(mode: SignalMode) -> Containment {
        let interrupt = Arc::new(Interrupt { number: AtomicU8::new(0), wakers: Mutex::new(Vec::new()) });
        Containment { mode, interrupt, armed: Once::new(), next_check: AtomicUsize::new(0) }
    }

    /// Handles the console's events from now on, before any check starts:
    /// for a run that makes something (a checkout) it must remove however
    /// the run ends.
    pub fn catch_interrupts(&self) {
        self.arm();
    }

    fn arm(&self) {
        self.armed.call_once(|| {
            if self.mode != SignalMode::Standard {
                return;
            }
            HANDLED.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(Arc::downgrade(&self.interrupt));
            static REGISTERED: Once = Once::new();
            // SAFETY: the handler is a plain function that lives as long as
            // the process; registering it changes nothing else.
            REGISTERED.call_once(|| unsafe {
                SetConsoleCtrlHandler(Some(on_console_event), TRUE);
            });
        });
    }

    /// Interrupts the run as a console event would: what the handler does.
    #[cfg(test)]
    pub fn interrupt(&self, interruption: Interruption) {
        self.interrupt.raise(interruption);
    }

    /// What interrupted this run, if anything did.
    pub fn interruption(&self) -> Option<Interruption> {
        Interruption::from_number(self.interrupt.number.load(Ordering::SeqCst))
    }

    /// Starts a check and registers its supervisor for interrupts,
    /// atomically with respect to them: no check starts once the run has
    /// been interrupted, and every started one hears of an interrupt.
    pub fn launch(&self, start: impl FnOnce() -> io::Result<Spawned>) -> Result<(Check<'_>, Receiver<Event>), Launch> {
        self.arm();
        let mut wakers = self.interrupt.wakers();
        if let Some(interruption) = self.interruption() {
            return Err(Launch::Interrupted(interruption));
        }
        let Spawned { child, job, events, waker } = start().map_err(Launch::Failed)?;
        let id = self.next_check.fetch_add(1, Ordering::Relaxed);
        wakers.push((id, waker));
        Ok((Check { containment: self, id, job, child }, events))
    }
}

pub enum Launch {
    Interrupted(Interruption),
    Failed(io::Error),
}

/// A started check: its shell, and the job holding it and all it starts.
pub struct Check<'a> {
    containment: &'a Containment,
    id: usize,
    job: OwnedHandle,
    child: Child,
}

impl Check<'_> {
    /// Terminates every process in the check's job.
    pub fn kill_group(&self) {
        // SAFETY: the job handle is ours and open.
        unsafe { TerminateJobObject(self.job.as_raw_handle(), KILLED_EXIT_CODE) };
    }

    /// The console gave the check the interrupt itself: nothing gentler
    /// than the kill after the grace exists for a job.
    pub fn terminate(&self) {}

    /// Nothing can leave the job, so what is left is killed with it again.
    pub fn sweep(&self) {
        self.kill_group();
    }

    /// Our copies of the pipes' write ends were closed at the start.
    pub fn release_writers(&mut self) {}

    /// The shell's exit code, if it has exited.
    pub fn peek_exit(&mut self) -> Option<Exit> {
        let status = self.child.try_wait().ok()??;
        Some(Exit { code: status.code(), signal: None })
    }

    fn wait_exit(&mut self, limit: Duration) -> Option<Exit> {
        let millis = u32::try_from(limit.as_millis()).unwrap_or(u32::MAX);
        // SAFETY: the process handle is open while `child` lives.
        let waited = unsafe { WaitForSingleObject(self.child.as_raw_handle(), millis) };
        if waited == WAIT_OBJECT_0 {
            self.peek_exit()
        } else {
            None
        }
    }
}

/// Ends a check: terminates its job and gives the shell `kill_wait` to be
/// gone. Returns the shell's exit, if it exited by then.
pub fn release(mut check: Check, exit: Option<Exit>, kill_wait: Duration) -> Option<Exit> {
    check.kill_group();
    let exit = exit.or_else(|| check.wait_exit(kill_wait));
    check.containment.interrupt.wakers().retain(|(id, _)| *id != check.id);
    exit
}

/// A check just started, already in its job and running.
pub struct Spawned {
    child: Child,
    job: OwnedHandle,
    events: Receiver<Event>,
    /// What wakes the supervisor on an interrupt.
    waker: Sender<Event>,
}

/// The environment every check inherits, built once per run.
pub struct ChildEnvironment {
    variables: Vec<(OsString, OsString)>,
}

impl ChildEnvironment {
    pub fn new(variables: &[(OsString, OsString)]) -> ChildEnvironment {
        ChildEnvironment { variables: variables.to_vec() }
    }
}

/// True for cmd.exe, which Node starts as `cmd /d /s /c "<CHECK>"` (its
/// own rule: the file name `cmd` or `cmd.exe`, in any case).
pub fn is_cmd(shell: &Path) -> bool {
    shell.file_name().and_then(|name| name.to_str()).is_some_and(|name| {
        let name = name.to_ascii_lowercase();
        name == "cmd" || name == "cmd.exe"
    })
}

/// Starts the check suspended, puts it in a new job, starts the threads
/// that report its output and exit, then lets it run. The command line is
/// Node's: `<shell> /d /s /c "<CHECK>"` verbatim for cmd.exe (`/s` strips
/// the outer quotes, so the CHECK reaches cmd exactly as written), else
/// `<shell> -c <CHECK>` quoted as a C runtime parses it.
pub fn spawn(shell: &Path, command: &str, cwd: &Path, environment: &ChildEnvironment) -> io::Result<Spawned> {
    let job = new_job()?;
    let mut starting = Command::new(shell);
    if is_cmd(shell) {
        starting.raw_arg(format!("/d /s /c \"{command}\""));
    } else {
        starting.arg("-c").arg(command);
    }
    // Without a console of our own, the shell would get a new console
    // window; Node hides it, and a check needs none.
    // SAFETY: a query without arguments.
    let window = if unsafe { GetConsoleWindow() }.is_null() { CREATE_NO_WINDOW } else { 0 };
    starting
        .env_clear()
        .envs(environment.variables.iter().map(|(key, value)| (key, value)))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .creation_flags(CREATE_SUSPENDED | window);
    let mut child = starting.spawn()?;
    match start_contained(&job, &mut child) {
        Ok((events, waker)) => Ok(Spawned { child, job, events, waker }),
        Err(error) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(error)
        }
    }
}

/// A job whose processes all die when it is closed, and which lets no
/// crashing process wait on an error dialog.
fn new_job() -> io::Result<OwnedHandle> {
    // SAFETY: no name and default security: a new, unnamed, uninheritable job.
    let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
    if raw.is_null() {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a new handle that nothing else owns.
    let job = unsafe { OwnedHandle::from_raw_handle(raw) };
    // SAFETY: an all-zero limit structure is valid; only the flags are set.
    let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
    limits.BasicLimitInformation.LimitFlags =
        JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION;
    // SAFETY: the pointer and size describe `limits`, which outlives the call.
    let set = unsafe {
        SetInformationJobObject(
            job.as_raw_handle(),
            JobObjectExtendedLimitInformation,
            (&raw const limits).cast(),
            std::mem::size_of_val(&limits) as u32,
        )
    };
    if set == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(job)
}

/// Puts the suspended `child` in `job`, starts its reporting threads and
/// resumes it.
fn start_contained(job: &OwnedHandle, child: &mut Child) -> io::Result<(Receiver<Event>, Sender<Event>)> {
    // SAFETY: both handles are ours and open.
    if unsafe { AssignProcessToJobObject(job.as_raw_handle(), child.as_raw_handle()) } == 0 {
        return Err(io::Error::last_os_error());
    }
    let (sender, events) = mpsc::channel();
    let missing = || io::Error::other("child pipe missing");
    let stdout = child.stdout.take().ok_or_else(missing)?;
    let stderr = child.stderr.take().ok_or_else(missing)?;
    report_output(stdout, 0, sender.clone())?;
    report_output(stderr, 1, sender.clone())?;
    let process = child.as_handle().try_clone_to_owned()?;
    let exited = sender.clone();
    std::thread::Builder::new().name("check exit".into()).spawn(move || {
        // SAFETY: the duplicated process handle lives as long as this thread.
        unsafe { WaitForSingleObject(process.as_raw_handle(), INFINITE) };
        let _ = exited.send(Event::Exited);
    })?;
    resume(child.id())?;
    Ok((events, sender))
}

/// A thread that sends what `pipe` gives as `stream`'s output, then its end.
fn report_output(mut pipe: impl Read + Send + 'static, stream: usize, events: Sender<Event>) -> io::Result<()> {
    std::thread::Builder::new().name("check output".into()).spawn(move || {
        let mut buffer = vec![0; READ_CHUNK];
        loop {
            match pipe.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(count) => {
                    if events.send(Event::Output(stream, buffer[..count].to_vec())).is_err() {
                        return;
                    }
                }
            }
        }
        let _ = events.send(Event::Closed(stream));
    })?;
    Ok(())
}

/// Resumes the threads of the suspended process `pid` (its one initial
/// thread): std gives no thread handle, so they are found by snapshot.
fn resume(pid: u32) -> io::Result<()> {
    // SAFETY: a snapshot of all threads; the handle is checked and owned below.
    let raw = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if raw == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new handle that nothing else owns.
    let snapshot = unsafe { OwnedHandle::from_raw_handle(raw) };
    // SAFETY: an all-zero entry with its size set is what Thread32First takes.
    let mut entry: THREADENTRY32 = unsafe { std::mem::zeroed() };
    entry.dwSize = std::mem::size_of::<THREADENTRY32>() as u32;
    let mut resumed = false;
    // SAFETY: `entry` is valid and sized; the snapshot handle is open.
    let mut more = unsafe { Thread32First(snapshot.as_raw_handle(), &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: opening a thread by id; the handle is checked and owned.
            let thread = unsafe { OpenThread(THREAD_SUSPEND_RESUME, FALSE, entry.th32ThreadID) };
            if thread.is_null() {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: a new handle that nothing else owns.
            let thread = unsafe { OwnedHandle::from_raw_handle(thread) };
            // SAFETY: the thread handle is open with suspend/resume access.
            if unsafe { ResumeThread(thread.as_raw_handle()) } == u32::MAX {
                return Err(io::Error::last_os_error());
            }
            resumed = true;
        }
        // SAFETY: as for Thread32First.
        more = unsafe { Thread32Next(snapshot.as_raw_handle(), &mut entry) } != 0;
    }
    if resumed {
        Ok(())
    } else {
        Err(io::Error::other(format!("the thread of the check's process {pid} was not found")))
    }
}

/// How long a check that died of the console's Ctrl-C waits for
/// gate-check's own handler to record it: the console calls both at once,
/// each on a thread of its own, so either may come first.
const CONSOLE_EVENT_LAG: Duration = Duration::from_millis(500);

/// The run's interruption as the check exits. A check that died of the
/// console's Ctrl-C (`STATUS_CONTROL_C_EXIT`) before gate-check's handler
/// ran was interrupted too, and its failure is not its own; one that merely
/// exits with that code, with no console event, fails as it is.
fn interruption_at_exit(exit: &Exit, containment: &Containment) -> Option<Interruption> {
    let died_of_ctrl_c = exit.code == Some(STATUS_CONTROL_C_EXIT);
    let wait_until = Instant::now() + if died_of_ctrl_c { CONSOLE_EVENT_LAG } else { Duration::ZERO };
    loop {
        let interruption = containment.interruption();
        if interruption.is_some() || Instant::now() >= wait_until {
            return interruption;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Supervises the check until it has ended and its output is read: each
/// message is handed to the state machine as it comes.
pub(super) fn supervise(
    supervision: &mut Supervision<Check>,
    capture: &mut Capture,
    events: Receiver<Event>,
    containment: &Containment,
) {
    while !(supervision.exit.is_some() && capture.closed()) {
        let now = Instant::now();
        if now >= supervision.deadline() {
            if !supervision.on_deadline(now) {
                return;
            }
            continue;
        }
        let event = match events.recv_timeout(supervision.deadline() - now) {
            Ok(event) => event,
            Err(RecvTimeoutError::Timeout) => continue,
            // The registry keeps a sender until the check is released.
            Err(RecvTimeoutError::Disconnected) => return,
        };
        match event {
            Event::Output(stream, bytes) => {
                if capture.take(stream, &bytes) {
                    supervision.kill(RunFailure::Overflow, Instant::now());
                }
            }
            Event::Closed(stream) => capture.close(stream),
            Event::Exited => {
                if let (None, Some(exit)) = (supervision.exit, supervision.check.peek_exit()) {
                    let interruption = interruption_at_exit(&exit, containment);
                    supervision.on_exit(exit, !capture.closed(), interruption, Instant::now());
                }
            }
            Event::Interrupted => {
                if let Some(interruption) = containment.interruption() {
                    supervision.on_interrupt(interruption, Instant::now());
                }
            }
        }
    }
}
