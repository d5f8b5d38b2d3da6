//! Rolling concurrency: up to `jobs` checks at once, each started as soon
//! as it is admitted, results handed on in task order as soon as they and
//! all earlier ones are done, plus the live progress line's text.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::plan::Task;
use crate::runner::{Containment, Interruption};

/// What the pool needs of a task: the name the progress line shows.
pub trait Labelled {
    fn label(&self) -> &str;
}

impl Labelled for Task {
    fn label(&self) -> &str {
        &self.qualified
    }
}

/// What the pool hands its consumer; `R` is what running one task gives.
pub enum Progress<'a, R> {
    /// The first event: decide, in task order, which tasks run. Workers
    /// start each admitted task at once; nothing else reaches the consumer
    /// until it returns, and a task left undecided does not run.
    Admit(&'a Admission),
    /// A worker started the task with this index.
    Started(usize),
    /// The task with this index has been running for this many seconds: a
    /// milestone of 5, 10, 20, 40... seconds.
    Slow(usize, u64),
    /// The next result in task order.
    Finished(usize, R),
    /// Everything sent so far has been handed on: a moment to flush output
    /// and persist what is due. Comes at least every `LOOK_EVERY`.
    Looked,
    /// The progress line: the longest-running check, or `None` to clear it.
    Running(Option<String>),
    /// The run was interrupted: sent once, at the first look after the
    /// interruption came (or at the end, when it came after the last look).
    /// Checks still running are being terminated; none starts any more.
    Interrupted(Interruption),
}

/// How long a finished result may wait to be written back.
pub const WRITE_BACK_AFTER: Duration = Duration::from_millis(100);

/// How long the consumer sleeps between looks at what the workers sent.
/// Workers never wake it per message: on a virtual machine, waking a thread
/// on another CPU twice per check cost more than everything else gate-check
/// adds to a trivial check. It looks this often, and at once when the last
/// worker is done, so a run never ends late.
const LOOK_EVERY: Duration = Duration::from_millis(20);

/// Which tasks run, decided in task order by the consumer while workers
/// already run the tasks decided.
pub struct Admission {
    decided: Mutex<Decided>,
    changed: Condvar,
}

#[derive(Default)]
struct Decided {
    runs: Vec<bool>,
    closed: bool,
}

impl Admission {
    /// Decides the next task in order.
    pub fn admit(&self, runs: bool) {
        lock(&self.decided).runs.push(runs);
        self.changed.notify_all();
    }

    /// Ends admission: a task not decided by now does not run.
    fn close(&self) {
        lock(&self.decided).closed = true;
        self.changed.notify_all();
    }

    /// Whether task `index` runs, waiting until it is decided.
    fn runs(&self, index: usize) -> bool {
        let mut decided = lock(&self.decided);
        loop {
            if let Some(runs) = decided.runs.get(index) {
                return *runs;
            }
            if decided.closed {
                return false;
            }
            decided = self.changed.wait(decided).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }
}

/// Closes admission when dropped, also when the consumer panics: no worker
/// may wait for a decision forever.
struct ClosedAtEnd<'a>(&'a Admission);

impl Drop for ClosedAtEnd<'_> {
    fn drop(&mut self) {
        self.0.close();
    }
}

enum Message<R> {
    Started(usize),
    Done(usize, R),
}

/// The first milestone at which a running check is reported slow; each
/// later one is twice the previous.
const FIRST_SLOW_MILESTONE_SECS: u64 = 5;

/// Runs the admitted `tasks` on up to `jobs` threads and calls `on_event`
/// on the calling thread only, so the consumer needs no locking.
pub fn run_rolling<T: Labelled + Sync, R: Send>(
    tasks: &[T],
    jobs: usize,
    containment: &Containment,
    evaluate_one: impl Fn(&T) -> R + Sync,
    mut on_event: impl FnMut(Progress<R>),
) {
    let admission = Admission { decided: Mutex::new(Decided::default()), changed: Condvar::new() };
    let next = AtomicUsize::new(0);
    let workers = jobs.min(tasks.len());
    let running: Mutex<BTreeMap<usize, Instant>> = Mutex::new(BTreeMap::new());
    // Messages are only ever taken with `try_recv`, so sending one never
    // wakes the consumer; the workers' ends disconnect `all_done`, which does.
    let (sender, receiver) = mpsc::channel();
    let (worker_done, all_done) = mpsc::channel::<()>();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let sender = sender.clone();
            let (next, evaluate_one, running, admission) = (&next, &evaluate_one, &running, &admission);
            let worker_done = worker_done.clone();
            scope.spawn(move || loop {
                let _done = &worker_done;
                let index = next.fetch_add(1, Ordering::SeqCst);
                let Some(task) = tasks.get(index) else { break };
                if !admission.runs(index) {
                    continue;
                }
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
        drop(sender);
        drop(worker_done);
        {
            let _closed = ClosedAtEnd(&admission);
            on_event(Progress::Admit(&admission));
        }
        let mut waiting = BTreeMap::new();
        // The next task in order whose result is due: tasks that do not run
        // have none.
        let mut expected = 0;
        let skip_unadmitted = |expected: &mut usize| {
            while *expected < tasks.len() && !admission.runs(*expected) {
                *expected += 1;
            }
        };
        skip_unadmitted(&mut expected);
        let mut watch = Watch::default();
        let mut workers_ended = false;
        let mut interrupted = false;
        let mut look_for_interrupt = |on_event: &mut dyn FnMut(Progress<R>)| {
            if let (false, Some(interruption)) = (interrupted, containment.interruption()) {
                interrupted = true;
                on_event(Progress::Interrupted(interruption));
            }
        };
        while expected < tasks.len() {
            while let Ok(message) = receiver.try_recv() {
                match message {
                    Message::Done(index, result) => {
                        waiting.insert(index, result);
                        while let Some(result) = waiting.remove(&expected) {
                            on_event(Progress::Finished(expected, result));
                            expected += 1;
                            skip_unadmitted(&mut expected);
                        }
                    }
                    Message::Started(index) => on_event(Progress::Started(index)),
                }
            }
            watch.look(tasks, &running, &mut on_event);
            look_for_interrupt(&mut on_event);
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
        if !watch.shown.is_empty() {
            on_event(Progress::Running(None));
        }
        look_for_interrupt(&mut on_event);
    });
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The progress line and slow milestones, worked out at each look: the
/// consumer wakes every `LOOK_EVERY` anyway, so no thread of its own is
/// needed (every thread of the process makes each spawn a little dearer).
#[derive(Default)]
struct Watch {
    /// The progress line last sent; empty when none is shown.
    shown: String,
    /// Each running check's next slow milestone, in seconds.
    next_milestone: BTreeMap<usize, u64>,
}

impl Watch {
    /// Reports the slow milestones each running check has passed, and the
    /// progress line (the longest-running check once it has run for a
    /// second) when it changed.
    fn look<T: Labelled, R>(
        &mut self,
        tasks: &[T],
        running: &Mutex<BTreeMap<usize, Instant>>,
        on_event: &mut impl FnMut(Progress<R>),
    ) {
        let mut slow = Vec::new();
        let line = {
            let running = lock(running);
            self.next_milestone.retain(|index, _| running.contains_key(index));
            for (index, started) in running.iter() {
                let milestone = self.next_milestone.entry(*index).or_insert(FIRST_SLOW_MILESTONE_SECS);
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
                    format!("  ... {} running for {}s{more}", tasks[*index].label(), elapsed.as_secs())
                })
            })
        };
        for (index, seconds) in slow {
            on_event(Progress::Slow(index, seconds));
        }
        if let Some(line) = line.filter(|line| *line != self.shown) {
            on_event(Progress::Running(Some(line.clone())));
            self.shown = line;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::SignalMode;

    impl Labelled for &str {
        fn label(&self) -> &str {
            self
        }
    }

    /// What the consumer saw, in order, for tasks named by their index.
    #[derive(Debug, PartialEq, Eq)]
    enum Seen {
        Started(usize),
        Finished(usize, String),
        Interrupted(Interruption),
    }

    /// Runs `tasks` with a fake check runner that sleeps `delay(index)` and
    /// returns the task's name; admits those `admit` says.
    fn run(
        tasks: &[&'static str],
        jobs: usize,
        admit: impl Fn(usize) -> Option<bool>,
        delay: impl Fn(usize) -> u64 + Sync,
    ) -> (Vec<Seen>, usize) {
        run_contained(tasks, jobs, &Containment::install(SignalMode::Noop), admit, delay)
    }

    fn run_contained(
        tasks: &[&'static str],
        jobs: usize,
        containment: &Containment,
        admit: impl Fn(usize) -> Option<bool>,
        delay: impl Fn(usize) -> u64 + Sync,
    ) -> (Vec<Seen>, usize) {
        let peak = AtomicUsize::new(0);
        let current = AtomicUsize::new(0);
        let mut seen = Vec::new();
        let evaluate = |task: &&'static str| {
            let now = current.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            let index = tasks.iter().position(|t| t == task).unwrap();
            std::thread::sleep(Duration::from_millis(delay(index)));
            current.fetch_sub(1, Ordering::SeqCst);
            task.to_string()
        };
        run_rolling(tasks, jobs, containment, evaluate, |progress| match progress {
            Progress::Admit(admission) => {
                for index in 0..tasks.len() {
                    match admit(index) {
                        Some(runs) => admission.admit(runs),
                        None => break,
                    }
                }
            }
            Progress::Started(index) => seen.push(Seen::Started(index)),
            Progress::Finished(index, result) => seen.push(Seen::Finished(index, result)),
            Progress::Interrupted(interruption) => seen.push(Seen::Interrupted(interruption)),
            Progress::Slow(..) | Progress::Looked | Progress::Running(_) => {}
        });
        (seen, peak.load(Ordering::SeqCst))
    }

    fn finished(seen: &[Seen]) -> Vec<usize> {
        seen.iter().filter_map(|s| if let Seen::Finished(i, _) = s { Some(*i) } else { None }).collect()
    }

    #[test]
    fn results_come_in_task_order_whatever_order_checks_end_in() {
        let tasks = ["a", "b", "c", "d"];
        // The first task is the slowest: the others end before it.
        let (seen, peak) = run(&tasks, 4, |_| Some(true), |index| if index == 0 { 80 } else { 5 });
        assert_eq!(finished(&seen), [0, 1, 2, 3]);
        assert!(seen.contains(&Seen::Finished(2, "c".into())), "{seen:?}");
        assert!(peak > 1, "independent checks overlap with --jobs 4");
        let first_result = seen.iter().position(|s| matches!(s, Seen::Finished(..))).unwrap();
        let starts = seen[..first_result].iter().filter(|s| matches!(s, Seen::Started(_))).count();
        assert_eq!(starts, 4, "every check started before the slow first one ended: {seen:?}");
    }

    #[test]
    fn no_more_than_jobs_checks_run_at_once() {
        let tasks = ["a", "b", "c", "d", "e", "f"];
        let (seen, peak) = run(&tasks, 2, |_| Some(true), |_| 15);
        assert_eq!(finished(&seen), [0, 1, 2, 3, 4, 5]);
        assert_eq!(peak, 2);
        let (_, serial) = run(&tasks, 1, |_| Some(true), |_| 1);
        assert_eq!(serial, 1);
    }

    #[test]
    fn only_admitted_tasks_run_and_an_undecided_one_does_not() {
        let tasks = ["a", "b", "c", "d"];
        // b is refused; admission stops before d, which is never decided.
        let (seen, _) = run(&tasks, 2, |index| [Some(true), Some(false), Some(true), None][index], |_| 1);
        assert_eq!(finished(&seen), [0, 2]);
        let started: Vec<usize> =
            seen.iter().filter_map(|s| if let Seen::Started(i) = s { Some(*i) } else { None }).collect();
        assert_eq!(started.len(), 2);
        assert!(started.contains(&0) && started.contains(&2), "{seen:?}");
    }

    #[test]
    fn a_consumer_that_admits_nothing_ends_the_run() {
        let tasks = ["a", "b"];
        let (seen, peak) = run(&tasks, 2, |_| None, |_| 1);
        assert_eq!((seen, peak), (Vec::new(), 0));
    }

    #[test]
    fn an_interrupt_reaches_the_consumer_once_as_progress() {
        let tasks = ["a", "b", "c"];
        let containment = Containment::install(SignalMode::Noop);
        let (seen, _) = run_contained(&tasks, 1, &containment, |_| Some(true), |_| 30);
        assert!(!seen.iter().any(|s| matches!(s, Seen::Interrupted(_))), "no interrupt, no message: {seen:?}");

        let interrupting = std::thread::scope(|scope| {
            scope.spawn(|| {
                std::thread::sleep(Duration::from_millis(45));
                containment.interrupt(Interruption::Terminate);
            });
            run_contained(&tasks, 1, &containment, |_| Some(true), |_| 30).0
        });
        let interrupts: Vec<&Seen> = interrupting.iter().filter(|s| matches!(s, Seen::Interrupted(_))).collect();
        assert_eq!(interrupts, [&Seen::Interrupted(Interruption::Terminate)], "{interrupting:?}");
        // It came while the second check ran: after the first result.
        let at = interrupting.iter().position(|s| matches!(s, Seen::Interrupted(_))).unwrap();
        assert!(interrupting[..at].contains(&Seen::Finished(0, "a".into())), "{interrupting:?}");
    }
}
