//! The approval gate: a check runs only with an exact, intact approval
//! record of its oracle; `--approve` records one for each pending oracle
//! after showing it.

use super::events::{Event, Reporter};
use crate::approval::changes::{self, RecordedOracle};
use crate::approval::store::{EarlierRecords, StoreError};
use crate::approval::{Consent, Oracle, Terms};
use crate::diagnostic::error_line;

use super::plan::{Ledger, Runtime, Task};

/// Each task and whether approval admitted it to run.
#[derive(Default)]
pub struct Approvals {
    pub tasks: Vec<Task>,
    pub admitted: Vec<bool>,
    /// Approvals the store could not validate or record.
    pub failures: usize,
    /// Admitted checks that gate-check's own resources could not start.
    pub check_failures: usize,
}

impl Approvals {
    pub fn runnable(&self) -> impl Iterator<Item = &Task> {
        self.tasks.iter().zip(&self.admitted).filter(|(_, admitted)| **admitted).map(|(task, _)| task)
    }

    pub fn not_run(&self) -> impl Iterator<Item = &Task> {
        self.tasks.iter().zip(&self.admitted).filter(|(_, admitted)| !**admitted).map(|(task, _)| task)
    }
}

/// Decides in task order whether each task may run, calling `admit` with
/// each decision as soon as it is made: a check can start while the
/// approvals of later ones are still being looked up. Returns how many
/// approvals the store could not validate or record.
pub fn seek_approvals(
    approve: bool,
    runtime: &Runtime,
    ledgers: &[Ledger],
    tasks: &[Task],
    reporter: &mut dyn Reporter,
    mut admit: impl FnMut(bool),
) -> usize {
    let mut failures = 0;
    let mut earlier = None;
    let mut lookups = runtime.store.lookups();
    // An approval given in a confined run admits confined runs only.
    let consent = Consent::for_run(runtime.sandbox.is_some());
    for task in tasks {
        let ledger = &ledgers[task.ledger];
        let needed = Terms { consent, inputs: task.gate.inputs().map(str::to_string) };
        let admitted = match lookups.approved(&ledger.text_path, task.gate.id(), &task.oracle) {
            Ok(Some(held)) if held.admit(&needed) => true,
            Ok(held) => {
                reporter.event(&Event::ApprovalRequired {
                    approving: approve,
                    qualified: &task.qualified,
                    oracle: &task.oracle,
                    path_transcript: &runtime.path_transcript,
                    inputs: task.gate.inputs(),
                    consent,
                });
                match held {
                    // The same oracle, approved on other terms.
                    Some(held) => {
                        let reasons = other_terms(&held, &needed);
                        reporter.event(&Event::ApprovalChanged { reasons: &reasons });
                    }
                    None => explain_reapproval(runtime, &mut earlier, &ledger.text_path, task, reporter),
                }
                if !approve {
                    reporter.event(&Event::NotRun);
                    admit(false);
                    continue;
                }
                match runtime.store.approve(&ledger.text_path, task.gate.id(), &task.oracle, &needed) {
                    Ok(record) => {
                        reporter.event(&Event::Approved { record: &record });
                        true
                    }
                    Err(error) => {
                        let line = error_line(&format!("could not record approval for {}: {error}", task.qualified));
                        reporter.event(&Event::Warning(&line));
                        failures += 1;
                        false
                    }
                }
            }
            Err(error) => {
                let line = error_line(&format!("could not validate approval for {}: {error}", task.qualified));
                reporter.event(&Event::Warning(&line));
                failures += 1;
                false
            }
        };
        admit(admitted);
    }
    failures
}

/// Why an oracle approved for confined runs only asks again in a run
/// without `--sandbox`.
const CONFINED_ONLY: &str = "approved for confined runs only (--sandbox); this run is not confined";

/// Why the same oracle, approved on `held` terms, asks again on `needed`:
/// its consent does not cover this run, or its INPUTS changed.
fn other_terms(held: &Terms, needed: &Terms) -> Vec<String> {
    let mut reasons = Vec::new();
    if !held.consent.covers(needed.consent) {
        reasons.push(CONFINED_ONLY.to_string());
    }
    if held.inputs != needed.inputs {
        let shown = |inputs: &Option<String>| inputs.as_deref().map_or("none".to_string(), |text| format!("`{text}`"));
        reasons.push(format!("INPUTS approved as {}, now {}", shown(&held.inputs), shown(&needed.inputs)));
    }
    reasons
}

/// When this gate was approved before with another oracle, says which bound
/// fields differ, so a changed timeout or PATH is not a mystery. The store
/// is read for this once, at the first oracle that needs approval.
fn explain_reapproval(
    runtime: &Runtime,
    earlier: &mut Option<Result<EarlierRecords, StoreError>>,
    ledger: &str,
    task: &Task,
    reporter: &mut dyn Reporter,
) {
    let loaded = earlier.get_or_insert_with(|| runtime.store.earlier_records());
    match loaded {
        Ok(records) => {
            let records = records.records_for(ledger, task.gate.id());
            if !records.is_empty() {
                let reasons = closest_differences(records, &task.oracle);
                reporter.event(&Event::ApprovalChanged { reasons: &reasons });
            }
        }
        Err(error) => {
            let line = error_line(&format!("could not read earlier approvals for {}: {error}", task.qualified));
            reporter.event(&Event::Warning(&line));
        }
    }
}

/// The differences to the earlier approval closest to `oracle`; a record
/// that does not say what it approved is the last resort (empty).
fn closest_differences(records: &[RecordedOracle], oracle: &Oracle) -> Vec<String> {
    records
        .iter()
        .map(|record| changes::differences(record, oracle))
        .filter(|reasons| !reasons.is_empty())
        .min_by_key(Vec::len)
        .unwrap_or_default()
}
