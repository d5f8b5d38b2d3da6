//! Applying finished results to a ledger through the ledger transaction.
//! Each result is judged against the gate's current definition and
//! approval identity; a changed gate's result is discarded as stale.

use std::path::Path;

use crate::evidence::{self, GateState, Transcript};
use crate::ledger::file::{self, Edit, UpdateError};
use crate::ledger::Document;

use super::evaluate::CheckResult;
use super::plan::{oracle_for, Ledger, Runtime, Task};

pub enum WriteBack {
    Written,
    Unchanged,
    Stale,
}

/// One lock, one re-read, one atomic replacement for the whole batch.
pub fn write_back(
    reverify: bool,
    runtime: &Runtime,
    root: &Path,
    ledger: &Ledger,
    batch: &[(&Task, &CheckResult)],
) -> Result<Vec<WriteBack>, UpdateError> {
    file::update(root, &ledger.path, Some(&ledger.document), |document| decide(reverify, runtime, document, batch))
}

/// Pure: what each result does to the ledger as it is now.
fn decide(
    reverify: bool,
    runtime: &Runtime,
    document: &Document,
    batch: &[(&Task, &CheckResult)],
) -> (Vec<WriteBack>, Vec<Edit>) {
    let mut decisions = Vec::with_capacity(batch.len());
    let mut edits = Vec::new();
    for (task, result) in batch {
        let Some(fresh) = document.gate_near(&task.gate.id, task.gate.line) else {
            decisions.push(WriteBack::Stale);
            continue;
        };
        let same_definition = evidence::gate_digest(fresh).as_deref() == Some(task.digest.as_str());
        let same_oracle = oracle_for(runtime, fresh, &task.oracle.cwd) == task.oracle;
        if !same_definition || !same_oracle {
            decisions.push(WriteBack::Stale);
            continue;
        }
        if document.is_abandoned(&fresh.id) {
            decisions.push(WriteBack::Unchanged);
            continue;
        }
        let was_met = task.starting_state == GateState::Met;
        let must_write_failure = task.starting_state == GateState::StaleUnmet || (reverify && was_met) || fresh.checked;
        if result.ok() {
            let line = evidence::success_evidence(
                &task.digest,
                &result.fingerprint,
                &Transcript { shell: &runtime.shell_text, cwd: &task.oracle.cwd, path: &runtime.path_summary },
            );
            edits.push(Edit { gate: fresh.clone(), checked: true, evidence: line });
        } else if must_write_failure {
            edits.push(Edit { gate: fresh.clone(), checked: false, evidence: "pending".to_string() });
        } else {
            decisions.push(WriteBack::Unchanged);
            continue;
        }
        decisions.push(WriteBack::Written);
    }
    (decisions, edits)
}
