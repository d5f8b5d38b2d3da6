//! The Unix supervisor of one check: a single poll loop over both pipes,
//! the leader's exit (a pidfd on Linux) and the interrupt wake-up, each
//! handed to the state machine as it happens.

use std::cell::RefCell;
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags, Timespec};

use super::containment::{Check, Containment};
use super::{Capture, RunFailure, Supervision};

/// Without a pidfd, how often the leader's exit is looked for.
const EXIT_POLL_TICK: Duration = Duration::from_millis(10);
const READ_CHUNK: usize = 64 * 1024;

thread_local! {
    /// One read buffer per supervising thread, reused by all its checks.
    static READ_BUFFER: RefCell<Vec<u8>> = RefCell::new(vec![0; READ_CHUNK]);
}

/// Supervises the check until it has ended and its output is read.
pub(super) fn supervise(
    supervision: &mut Supervision<Check>,
    capture: &mut Capture,
    [stdout, stderr]: [OwnedFd; 2],
    containment: &Containment,
) {
    let mut pipes = [Some(stdout), Some(stderr)];
    READ_BUFFER.with_borrow_mut(|buffer| poll_loop(supervision, capture, &mut pipes, containment, buffer));
}

/// Reads what one pipe has; true when this read crossed the ceiling.
fn read(pipes: &mut [Option<OwnedFd>; 2], capture: &mut Capture, stream: usize, buffer: &mut [u8]) -> bool {
    let Some(pipe) = &pipes[stream] else { return false };
    match rustix::io::read(pipe, &mut *buffer) {
        Ok(0) => {}
        Ok(count) => return capture.take(stream, &buffer[..count]),
        Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => return false,
        Err(_) => {}
    }
    pipes[stream] = None;
    capture.close(stream);
    false
}

fn poll_loop(
    supervision: &mut Supervision<Check>,
    capture: &mut Capture,
    pipes: &mut [Option<OwnedFd>; 2],
    containment: &Containment,
    buffer: &mut [u8],
) {
    let wake = containment.wake_fd();
    while !(supervision.exit.is_some() && capture.closed()) {
        let now = Instant::now();
        if now >= supervision.deadline() {
            if !supervision.on_deadline(now) {
                return;
            }
            continue;
        }
        let mut wait = supervision.deadline() - now;
        let exit_watch = supervision.check.exit_watch.as_ref().filter(|_| supervision.exit.is_none());
        let watching_exit = exit_watch.is_some();
        if !watching_exit && supervision.exit.is_none() {
            wait = wait.min(EXIT_POLL_TICK);
        }
        let watching_wake = supervision.killed_at.is_none() && supervision.terminate_by.is_none();
        // Slots: stdout, stderr, the leader's exit, the interrupt wake-up.
        let mut sources = Vec::with_capacity(4);
        let mut slots = [None; 4];
        let candidates = [
            pipes[0].as_ref().map(|fd| fd.as_fd()),
            pipes[1].as_ref().map(|fd| fd.as_fd()),
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
            if is_ready && read(pipes, capture, stream, buffer) {
                supervision.kill(RunFailure::Overflow, Instant::now());
            }
        }
        if supervision.exit.is_none() && (exited || !watching_exit) {
            if let Some(exit) = supervision.check.peek_exit() {
                supervision.on_exit(exit, !capture.closed(), containment.interruption(), Instant::now());
            }
        }
        if let (true, Some(interruption)) = (woken, containment.interruption()) {
            supervision.on_interrupt(interruption, Instant::now());
        }
    }
}
