//! The approval gate: a check runs only with an exact, intact approval
//! record of its oracle; `--approve` records one for each pending oracle
//! after showing it.

use crate::error::error_line;
use crate::report::{Event, Reporter};

use super::plan::{Ledger, Runtime, Task};

/// Tasks split by approval.
#[derive(Default)]
pub struct Approvals {
    pub runnable: Vec<Task>,
    pub not_run: Vec<Task>,
    /// Approvals the store could not validate or record.
    pub failures: usize,
}

pub fn seek_approvals(
    approve: bool,
    runtime: &Runtime,
    ledgers: &[Ledger],
    tasks: Vec<Task>,
    reporter: &mut dyn Reporter,
) -> Approvals {
    let mut approvals = Approvals::default();
    for task in tasks {
        let ledger = &ledgers[task.ledger];
        match runtime.store.is_approved(&ledger.text_path, &task.gate.id, &task.oracle) {
            Ok(true) => approvals.runnable.push(task),
            Ok(false) => {
                reporter.event(&Event::ApprovalRequired {
                    qualified: &task.qualified,
                    oracle: &task.oracle,
                    path_transcript: &runtime.path_transcript,
                });
                if !approve {
                    reporter.event(&Event::NotRun);
                    approvals.not_run.push(task);
                    continue;
                }
                match runtime.store.approve(&ledger.text_path, &task.gate.id, &task.oracle) {
                    Ok(record) => {
                        reporter.event(&Event::Approved { record: &record });
                        approvals.runnable.push(task);
                    }
                    Err(error) => {
                        let line = error_line(&format!("could not record approval for {}: {error}", task.qualified));
                        reporter.event(&Event::Warning(&line));
                        approvals.failures += 1;
                        approvals.not_run.push(task);
                    }
                }
            }
            Err(error) => {
                let line = error_line(&format!("could not validate approval for {}: {error}", task.qualified));
                reporter.event(&Event::Warning(&line));
                approvals.failures += 1;
                approvals.not_run.push(task);
            }
        }
    }
    approvals
}
