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
    /// A pass, written with this evidence line.
    Proven(String),
    /// A failure, written as an unticked box and pending evidence.
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
        let Some(fresh) = document.gate_near(task.gate.id(), task.gate.line()) else {
            decisions.push(WriteBack::Stale);
            continue;
        };
        let same_definition = evidence::gate_digest(fresh).as_deref() == Some(task.digest.as_str());
        let same_oracle = oracle_for(runtime, fresh, &task.oracle.cwd) == task.oracle;
        if !same_definition || !same_oracle {
            decisions.push(WriteBack::Stale);
            continue;
        }
        if document.is_abandoned(fresh.id()) {
            decisions.push(WriteBack::Unchanged);
            continue;
        }
        let was_met = task.starting_state == GateState::Met;
        let must_write_failure =
            task.starting_state == GateState::StaleUnmet || (reverify && was_met) || fresh.checked();
        if result.ok() {
            let line = evidence::success_evidence(
                &task.digest,
                &result.fingerprint,
                &Transcript { shell: &runtime.shell_text, cwd: &task.oracle.cwd, path: &runtime.path_summary },
                task.proof.as_ref().map(|proof| proof.tree.as_str()),
            );
            edits.push(Edit { gate: fresh.clone(), checked: true, evidence: line.clone() });
            decisions.push(WriteBack::Proven(line));
            continue;
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;
    use crate::approval::store::{Store, StoreLocation};
    use crate::check::evaluate::CheckResult;
    use crate::evidence::Fingerprint;
    use crate::runner::ChildEnvironment;

    const LEDGER: &str = "# Gates: t\n\n\
        - [ ] U: unchecked\n  CHECK: true\n  EXPECT: ok\n  EVIDENCE: pending\n\
        - [x] C: checked\n  CHECK: true\n  EXPECT: ok\n  EVIDENCE: pending\n\
        - [x] A: abandoned\n  CHECK: true\n  EXPECT: ok\n  EVIDENCE: pending\n\n\
        ABANDON: A it moved\n";

    fn runtime(shell: &str) -> Runtime {
        Runtime {
            shell: PathBuf::from(shell),
            child_environment: ChildEnvironment::new(&[]),
            shell_text: shell.to_string(),
            path_var: "/bin".into(),
            path_summary: "/bin".into(),
            path_transcript: "/bin".into(),
            store: Store::locate(&[], &StoreLocation::Named(PathBuf::from("/nonexistent/store"))).unwrap(),
            timeout_secs: 120,
            sandbox: None,
        }
    }

    fn task(runtime: &Runtime, document: &Document, id: &str) -> Task {
        let gate = document.gates.iter().find(|g| g.id() == id).unwrap().clone();
        let digest = evidence::gate_digest(&gate).unwrap();
        let starting_state = evidence::gate_state(&gate, document.is_abandoned(id));
        Task {
            ledger: 0,
            oracle: oracle_for(runtime, &gate, "/r"),
            qualified: format!("GATES:{id}"),
            cwd: PathBuf::from("/r"),
            starting_state,
            digest,
            expectation: None,
            proof: None,
            gate,
        }
    }

    fn result(passed: bool) -> CheckResult {
        CheckResult {
            output: "ok".into(),
            fingerprint: Fingerprint::of("ok"),
            exit_code: Some(if passed { 0 } else { 1 }),
            signal: None,
            matched: passed,
            error: None,
            duration: Duration::from_millis(1),
            unjudged: None,
        }
    }

    fn kinds(decisions: &[WriteBack]) -> Vec<&'static str> {
        decisions
            .iter()
            .map(|d| match d {
                WriteBack::Proven(_) => "proven",
                WriteBack::Written => "written",
                WriteBack::Unchanged => "unchanged",
                WriteBack::Stale => "stale",
            })
            .collect()
    }

    #[test]
    fn a_pass_is_written_as_bound_evidence_and_a_failure_only_where_it_must_be() {
        let runtime = runtime("/bin/sh");
        let document = crate::ledger::parse(LEDGER.to_string()).document;
        let (u, c) = (task(&runtime, &document, "U"), task(&runtime, &document, "C"));
        let (passed, failed) = (result(true), result(false));

        let (decisions, edits) = decide(false, &runtime, &document, &[(&u, &passed), (&c, &failed)]);
        assert_eq!(kinds(&decisions), ["proven", "written"]);
        assert_eq!((edits[0].gate.id(), edits[0].checked), ("U", true));
        assert!(edits[0].evidence.contains(&format!("output-sha256={}", Fingerprint::of("ok").sha256)));
        assert!(edits[0].evidence.contains("shell=/bin/sh; cwd=/r; path=/bin"), "{}", edits[0].evidence);
        // A checked gate that fails is unchecked again, evidence pending.
        assert_eq!((edits[1].gate.id(), edits[1].checked, edits[1].evidence.as_str()), ("C", false, "pending"));

        // An unchecked gate that fails stays as it is.
        let (decisions, edits) = decide(false, &runtime, &document, &[(&u, &failed)]);
        assert_eq!((kinds(&decisions), edits.len()), (vec!["unchanged"], 0));
    }

    #[test]
    fn a_gate_that_changed_or_left_while_its_check_ran_is_stale_and_an_abandoned_one_is_kept() {
        let runtime = runtime("/bin/sh");
        let document = crate::ledger::parse(LEDGER.to_string()).document;
        assert!(document.is_abandoned("A"));
        let (u, a) = (task(&runtime, &document, "U"), task(&runtime, &document, "A"));
        let passed = result(true);

        let edited = crate::ledger::parse(LEDGER.replacen("CHECK: true", "CHECK: false", 1)).document;
        let removed = crate::ledger::parse(LEDGER.replacen("- [ ] U: unchecked", "- [ ] V: unchecked", 1)).document;
        for changed in [&edited, &removed] {
            let (decisions, edits) = decide(false, &runtime, changed, &[(&u, &passed)]);
            assert_eq!((kinds(&decisions), edits.len()), (vec!["stale"], 0));
        }
        // Another shell is another oracle: the result no longer proves the gate.
        let (decisions, _) = decide(false, &self::runtime("/bin/bash"), &document, &[(&u, &passed)]);
        assert_eq!(kinds(&decisions), ["stale"]);

        let (decisions, edits) = decide(true, &runtime, &document, &[(&a, &passed)]);
        assert_eq!((kinds(&decisions), edits.len()), (vec!["unchanged"], 0));
    }

    #[test]
    fn reverify_writes_the_failure_of_a_gate_that_was_met() {
        let runtime = runtime("/bin/sh");
        let document = crate::ledger::parse(LEDGER.to_string()).document;
        let mut met = task(&runtime, &document, "U");
        met.starting_state = GateState::Met;
        let failed = result(false);
        let (decisions, edits) = decide(true, &runtime, &document, &[(&met, &failed)]);
        assert_eq!((kinds(&decisions), edits[0].evidence.as_str()), (vec!["written"], "pending"));
        let (decisions, _) = decide(false, &runtime, &document, &[(&met, &failed)]);
        assert_eq!(kinds(&decisions), ["unchanged"]);
    }
}
