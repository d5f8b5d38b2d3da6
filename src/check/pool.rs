//! Rolling concurrency: up to `jobs` checks at once, results handed on in
//! task order as soon as they and all earlier ones are done, plus the live
//! progress line's text.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use super::evaluate::CheckResult;
use super::plan::Task;

/// What the pool hands its consumer.
pub enum Progress {
    /// A worker started the task with this index.
    Started(usize),
    /// The task with this index has been running for this many seconds: a
    /// milestone of 5, 10, 20, 40... seconds.
    Slow(usize, u64),
    /// The next result in task order.
    Finished(usize, CheckResult),
    /// Everything sent so far has been handed on: a moment to flush output
    /// and persist what is due. Comes at least every `LOOK_EVERY`.
    Looked,
    /// The progress line: the longest-running check, or `None` to clear it.
    Running(Option<String>),
}

/// How long a finished result may wait to be written back.
pub const WRITE_BACK_AFTER: Duration = Duration::from_millis(100);

/// How long the consumer sleeps between looks at what the workers sent.
/// Workers never wake it per message: on a virtual machine, waking a thread
/// on another CPU twice per check cost more than everything else gate-check
/// adds to a trivial check. It looks this often, and at once when the last
/// worker is done, so a run never ends late.
const LOOK_EVERY: Duration = Duration::from_millis(20);

enum Message {
    Started(usize),
    Done(usize, CheckResult),
    Running(String),
    Slow(usize, u64),
}

/// The first milestone at which a running check is reported slow; each
/// later one is twice the previous.
const FIRST_SLOW_MILESTONE_SECS: u64 = 5;

/// Runs `tasks` on up to `jobs` threads and calls `on_event` on the calling
/// thread only, so the consumer needs no locking.
pub fn run_rolling(
    tasks: &[Task],
    jobs: usize,
    evaluate_one: impl Fn(&Task) -> CheckResult + Sync,
    mut on_event: impl FnMut(Progress),
) {
    let next = AtomicUsize::new(0);
    let workers = jobs.min(tasks.len());
    let running: Mutex<BTreeMap<usize, Instant>> = Mutex::new(BTreeMap::new());
    // Dropping the sender wakes the progress thread at once when all is done.
    let (stop_progress, progress_stopped) = mpsc::channel::<()>();
    // Messages are only ever taken with `try_recv`, so sending one never
    // wakes the consumer; the workers' ends disconnect `all_done`, which does.
    let (sender, receiver) = mpsc::channel();
    let (worker_done, all_done) = mpsc::channel::<()>();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let sender = sender.clone();
            let (next, evaluate_one, running) = (&next, &evaluate_one, &running);
            let worker_done = worker_done.clone();
            scope.spawn(move || loop {
                let _done = &worker_done;
                let index = next.fetch_add(1, Ordering::SeqCst);
                let Some(task) = tasks.get(index) else { break };
                lock(running).insert(index, Instant::now());
                if sender.send(Message::Started(index)).is_err() {
                    break;
                }
                let result = evaluate_one(task);
                lock(running).remove(&index);
                if sender.send(Message::Done(index, result)).is_err() {
                    break;
                }
            });
        }
        let progress_sender = sender.clone();
        drop(sender);
        drop(worker_done);
        let running = &running;
        scope.spawn(move || watch_progress(tasks, running, progress_stopped, progress_sender));
        let mut waiting = BTreeMap::new();
        let mut expected = 0;
        let mut shown = false;
        let mut workers_ended = false;
        while expected < tasks.len() {
            while let Ok(message) = receiver.try_recv() {
                match message {
                    Message::Done(index, result) => {
                        waiting.insert(index, result);
                        while let Some(result) = waiting.remove(&expected) {
                            on_event(Progress::Finished(expected, result));
                            expected += 1;
                        }
                    }
                    Message::Started(index) => on_event(Progress::Started(index)),
                    Message::Slow(index, seconds) => on_event(Progress::Slow(index, seconds)),
                    Message::Running(line) => {
                        shown = true;
                        on_event(Progress::Running(Some(line)));
                    }
                }
            }
            on_event(Progress::Looked);
            // A worker that died leaves its result missing: once every
            // worker is gone and what they sent is drained, stop waiting.
            if expected >= tasks.len() || workers_ended {
                break;
            }
            if let Err(mpsc::RecvTimeoutError::Disconnected) = all_done.recv_timeout(LOOK_EVERY) {
                workers_ended = true;
            }
        }
        drop(stop_progress);
        if shown {
            on_event(Progress::Running(None));
        }
    });
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Sends the progress line whenever it changes (the longest-running check
/// once it has run for a second), and each running check's slow milestones.
fn watch_progress(
    tasks: &[Task],
    running: &Mutex<BTreeMap<usize, Instant>>,
    stopped: mpsc::Receiver<()>,
    sender: mpsc::Sender<Message>,
) {
    const TICK: Duration = Duration::from_millis(200);
    let mut shown = String::new();
    let mut next_milestone: BTreeMap<usize, u64> = BTreeMap::new();
    while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(TICK) {
        let mut slow = Vec::new();
        let line = {
            let running = lock(running);
            next_milestone.retain(|index, _| running.contains_key(index));
            for (index, started) in running.iter() {
                let milestone = next_milestone.entry(*index).or_insert(FIRST_SLOW_MILESTONE_SECS);
                if started.elapsed().as_secs() >= *milestone {
                    slow.push((*index, *milestone));
                    *milestone *= 2;
                }
            }
            running.iter().min_by_key(|(_, started)| **started).and_then(|(index, started)| {
                let elapsed = started.elapsed();
                (elapsed >= Duration::from_secs(1)).then(|| {
                    let others = running.len() - 1;
                    let more = if others > 0 { format!(" (+{others} more running)") } else { String::new() };
                    format!("  ... {} running for {}s{more}", tasks[*index].qualified, elapsed.as_secs())
                })
            })
        };
        for (index, seconds) in slow {
            if sender.send(Message::Slow(index, seconds)).is_err() {
                return;
            }
        }
        if let Some(line) = line.filter(|line| *line != shown) {
            if sender.send(Message::Running(line.clone())).is_err() {
                break;
            }
            shown = line;
        }
    }
}
