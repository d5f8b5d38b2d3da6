//! The process runner: the only module that spawns. A check runs as
//! `<shell> -c <CHECK>` in its own process group with stdin closed; stdout
//! and stderr are captured under one combined byte ceiling. Exceeding the
//! ceiling or the timeout kills the whole group at once, so no descendant
//! keeps running and memory stays bounded whatever the check prints.

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// After a kill, how long pipes may take to report end-of-file before the
/// result is settled without them (a descendant that left the group can
/// hold them open).
const DRAIN_GRACE: Duration = Duration::from_millis(1500);
const READ_CHUNK: usize = 64 * 1024;

pub struct CheckRequest<'a> {
    pub shell: &'a Path,
    pub command: &'a str,
    pub cwd: &'a Path,
    pub timeout: Duration,
    pub max_output_bytes: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunFailure {
    TimedOut,
    Overflow,
    Spawn(String),
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

enum Event {
    Exited(std::process::ExitStatus),
    StreamClosed(Stream, Vec<u8>),
    Overflow,
}

#[derive(Clone, Copy)]
enum Stream {
    Stdout,
    Stderr,
}

/// Reads one pipe to EOF, keeping at most the bytes still under the shared
/// ceiling and reporting the moment the ceiling is crossed.
fn drain(mut pipe: impl Read, stream: Stream, total: Arc<AtomicUsize>, limit: usize, events: mpsc::Sender<Event>) {
    let mut kept = Vec::new();
    let mut buffer = vec![0u8; READ_CHUNK];
    let mut reported = false;
    loop {
        let count = match pipe.read(&mut buffer) {
            Ok(0) => break,
            Ok(count) => count,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let before = total.fetch_add(count, Ordering::SeqCst);
        let room = limit.saturating_sub(before);
        kept.extend_from_slice(&buffer[..count.min(room)]);
        if before + count > limit && !reported {
            reported = true;
            let _ = events.send(Event::Overflow);
        }
    }
    let _ = events.send(Event::StreamClosed(stream, kept));
}

fn kill_group(pid: u32) {
    if let Ok(raw) = i32::try_from(pid) {
        // The group may already be gone; nothing else to do then.
        let _ = killpg(Pid::from_raw(raw), Signal::SIGKILL);
    }
}

fn signal_name(signal: i32) -> String {
    Signal::try_from(signal).map(|s| s.as_str().to_string()).unwrap_or_else(|_| signal.to_string())
}

pub fn run_check(request: &CheckRequest) -> CheckOutcome {
    let started = Instant::now();
    let spawned = Command::new(request.shell)
        .arg("-c")
        .arg(request.command)
        .current_dir(request.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(error) => {
            return CheckOutcome {
                stdout: Vec::new(),
                stderr: Vec::new(),
                exit_code: None,
                signal: None,
                failure: Some(RunFailure::Spawn(format!("spawn {} failed: {error}", request.shell.display()))),
                duration: started.elapsed(),
            }
        }
    };
    let pid = child.id();
    let (sender, events) = mpsc::channel();
    let total = Arc::new(AtomicUsize::new(0));
    if let Some(stdout) = child.stdout.take() {
        let (total, sender, limit) = (total.clone(), sender.clone(), request.max_output_bytes);
        thread::spawn(move || drain(stdout, Stream::Stdout, total, limit, sender));
    }
    if let Some(stderr) = child.stderr.take() {
        let (total, sender, limit) = (total.clone(), sender.clone(), request.max_output_bytes);
        thread::spawn(move || drain(stderr, Stream::Stderr, total, limit, sender));
    }
    {
        let sender = sender.clone();
        thread::spawn(move || {
            if let Ok(status) = child.wait() {
                let _ = sender.send(Event::Exited(status));
            }
        });
    }
    drop(sender);

    let mut deadline = started + request.timeout;
    let mut failure = None;
    let mut status = None;
    let (mut stdout, mut stderr) = (None, None);
    while status.is_none() || stdout.is_none() || stderr.is_none() {
        let now = Instant::now();
        if now >= deadline {
            if failure.is_some() {
                break; // Grace after a kill is over: settle with what we have.
            }
            failure = Some(RunFailure::TimedOut);
            kill_group(pid);
            deadline = now + DRAIN_GRACE;
            continue;
        }
        match events.recv_timeout(deadline - now) {
            Ok(Event::Exited(exit)) => status = Some(exit),
            Ok(Event::StreamClosed(Stream::Stdout, bytes)) => stdout = Some(bytes),
            Ok(Event::StreamClosed(Stream::Stderr, bytes)) => stderr = Some(bytes),
            Ok(Event::Overflow) => {
                if failure.is_none() {
                    failure = Some(RunFailure::Overflow);
                    kill_group(pid);
                    deadline = Instant::now() + DRAIN_GRACE;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    CheckOutcome {
        stdout: stdout.unwrap_or_default(),
        stderr: stderr.unwrap_or_default(),
        exit_code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()).map(signal_name),
        failure,
        duration: started.elapsed(),
    }
}
