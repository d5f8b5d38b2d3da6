//! The verdict: a pure function of the ledgers' final gate states, what
//! this run could not confirm, and the scope's dispatch waves.

use std::collections::HashMap;

use crate::dispatch::DispatchSummary;
use crate::evidence::GateState;

use super::events::{Doubt, Outcome, Verdict};
use super::plan::{Ledger, Selection};
use crate::report::human::LISTED_IDS;
use crate::report::record::IdList;

/// What this run did beyond the ledgers on disk.
#[derive(Debug, Default)]
pub struct RunFacts<'a> {
    pub reverify: bool,
    /// Checks run.
    pub reran: usize,
    /// Previously met gates whose re-run result was written.
    pub reverified: usize,
    pub approval_failures: usize,
    /// Checks that gate-check's own resources could not start.
    pub check_failures: usize,
    /// (ledger, gate id, qualified id) of gates that started met but a
    /// `--reverify` could not run.
    pub not_rerun_met: Vec<(usize, &'a str, &'a str)>,
    /// (ledger, gate id, qualified id) of results discarded as stale.
    pub stale: Vec<(usize, &'a str, &'a str)>,
    /// `--proof`: (ledger, gate id, qualified id, reason) of met gates whose
    /// proof is not current.
    pub unproven: Vec<(usize, &'a str, String, String)>,
    /// `--gate`: only these gates count; the others are not selected.
    pub selection: Option<&'a Selection>,
}

/// Which unmet ids a verdict keeps: all of them, or only as many as the
/// human report lists (the rest are counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnmetIds {
    All,
    Listed,
}

/// `states[l][g]` is the final state of gate `g` of ledger `l`.
pub fn verdict(
    ledgers: &[Ledger],
    states: &[Vec<GateState>],
    facts: &RunFacts,
    waves: &DispatchSummary,
    scope: Option<&str>,
    kept: UnmetIds,
) -> Verdict {
    let (mut met, mut unmet) = (0usize, 0usize);
    let mut unmet_ids = match kept {
        UnmetIds::All => IdList::default(),
        UnmetIds::Listed => IdList::keeping(LISTED_IDS),
    };
    let mut abandoned_ids = Vec::new();
    let mut not_selected = 0usize;
    let mut manual_unmet = IdList::keeping(LISTED_IDS);
    for (index, (ledger, states)) in ledgers.iter().zip(states).enumerate() {
        let prefix = crate::ledger::qualify(&ledger.path, "");
        for (gate, state) in ledger.document.gates.iter().zip(states) {
            if facts.selection.is_some_and(|selection| !selection.contains(index, gate.id())) {
                not_selected += 1;
                continue;
            }
            match state {
                GateState::Abandoned => abandoned_ids.push([prefix.as_str(), gate.id()].concat()),
                GateState::Met => met += 1,
                _ => {
                    unmet += 1;
                    unmet_ids.push_joined(&[prefix.as_str(), gate.id()]);
                    if !gate.is_runnable() {
                        manual_unmet.push_joined(&[prefix.as_str(), gate.id()]);
                    }
                }
            }
        }
    }
    abandoned_ids.extend(waves.abandoned.iter().cloned());
    let abandoned = abandoned_ids.len();

    // Gates that still read as met although this run could not confirm them.
    let mut doubted: Vec<((usize, &str), &str, String)> = Vec::new();
    if !facts.not_rerun_met.is_empty() || !facts.stale.is_empty() || !facts.unproven.is_empty() {
        let final_states: HashMap<(usize, &str), GateState> = ledgers
            .iter()
            .zip(states)
            .enumerate()
            .flat_map(|(index, (ledger, states))| {
                ledger.document.gates.iter().zip(states).map(move |(gate, state)| ((index, gate.id()), *state))
            })
            .collect();
        // A gate deleted from its ledger meanwhile is in no final state: its
        // result is discarded and it counts neither way.
        let still_met = |key: &(usize, &str)| matches!(final_states.get(key), Some(GateState::Met));
        if facts.reverify {
            for &(ledger, id, qualified) in &facts.not_rerun_met {
                let key = (ledger, id);
                if still_met(&key) && !doubted.iter().any(|(k, _, _)| *k == key) {
                    doubted.push((key, qualified, "reverify not run".into()));
                }
            }
        }
        for &(ledger, id, qualified) in &facts.stale {
            let key = (ledger, id);
            if still_met(&key) {
                doubted.retain(|(k, _, _)| *k != key);
                doubted.push((key, qualified, "stale result discarded".into()));
            }
        }
        for (ledger, id, qualified, reason) in &facts.unproven {
            let key = (*ledger, *id);
            if still_met(&key) && !doubted.iter().any(|(k, _, _)| *k == key) {
                doubted.push((key, qualified.as_str(), reason.clone()));
            }
        }
    }
    let unmet = unmet + doubted.len() + waves.blocking.len();
    let confirmed_met = met.saturating_sub(doubted.len());
    doubted.iter().for_each(|(_, qualified, reason)| unmet_ids.push_joined(&[qualified, " (", reason, ")"]));
    waves.blocking.iter().for_each(|wave| unmet_ids.push(wave));
    let doubts =
        doubted.into_iter().map(|((ledger, id), _, reason)| Doubt { ledger, id: id.to_string(), reason }).collect();
    let outcome = if facts.approval_failures > 0 || facts.check_failures > 0 {
        Outcome::Error
    } else if unmet == 0 && abandoned == 0 {
        Outcome::AllMet
    } else if abandoned > 0 {
        Outcome::HandoffRequired
    } else {
        Outcome::Unmet
    };
    Verdict {
        outcome,
        met,
        confirmed_met,
        unmet,
        abandoned,
        unmet_ids,
        abandoned_ids,
        reran: facts.reverify.then_some(facts.reran),
        reverified: facts.reverify.then_some(facts.reverified),
        scope: scope.map(str::to_string),
        approval_failures: facts.approval_failures,
        check_failures: facts.check_failures,
        not_selected: facts.selection.map(|_| not_selected),
        manual_unmet,
        doubts,
        left_out: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::Exit;

    fn ledger(text: &str) -> (Vec<Ledger>, Vec<Vec<GateState>>) {
        let document = crate::ledger::parse(text).document;
        let states =
            document.gates.iter().map(|g| crate::evidence::gate_state(g, document.is_abandoned(g.id()))).collect();
        (
            vec![Ledger {
                path: "/r/GATES.md".into(),
                text_path: "/r/GATES.md".into(),
                document,
                warnings: Vec::new(),
            }],
            vec![states],
        )
    }

    const TWO: &str = "- [x] A: done\n  EVIDENCE: looked\n- [ ] B: open\n";

    #[test]
    fn unmet_gates_and_blocking_waves_count_unmet() {
        let (ledgers, states) = ledger(TWO);
        let waves = DispatchSummary { blocking: vec!["dispatch:w1 open (0/1 started)".into()], abandoned: vec![] };
        let v = verdict(&ledgers, &states, &RunFacts::default(), &waves, Some("s"), UnmetIds::All);
        assert_eq!((v.outcome, v.met, v.unmet, v.abandoned), (Outcome::Unmet, 1, 2, 0));
        assert_eq!(v.unmet_ids.iter().collect::<Vec<_>>(), ["GATES:B", "dispatch:w1 open (0/1 started)"]);
        assert_eq!(v.exit(), Exit::Unmet);
    }

    #[test]
    fn a_stale_result_puts_a_met_gate_in_doubt() {
        let (ledgers, states) = ledger("- [x] A: done\n  EVIDENCE: looked\n");
        let facts = RunFacts { stale: vec![(0, "A", "GATES:A")], ..RunFacts::default() };
        let v = verdict(&ledgers, &states, &facts, &DispatchSummary::default(), None, UnmetIds::All);
        assert_eq!((v.outcome, v.met, v.confirmed_met, v.unmet), (Outcome::Unmet, 1, 0, 1));
        assert_eq!(v.unmet_ids.iter().collect::<Vec<_>>(), ["GATES:A (stale result discarded)"]);
    }

    #[test]
    fn approval_failures_are_an_error_and_all_met_needs_nothing_open() {
        let (ledgers, states) = ledger("- [x] A: done\n  EVIDENCE: looked\n");
        let clean = verdict(&ledgers, &states, &RunFacts::default(), &DispatchSummary::default(), None, UnmetIds::All);
        assert_eq!(clean.outcome, Outcome::AllMet);
        let facts = RunFacts { approval_failures: 1, ..RunFacts::default() };
        let failed = verdict(&ledgers, &states, &facts, &DispatchSummary::default(), None, UnmetIds::All);
        assert_eq!(failed.exit(), Exit::Error);
    }

    #[test]
    fn a_selection_counts_only_its_gates_and_says_how_many_it_left_out() {
        let (ledgers, states) = ledger(TWO);
        let selection = Selection::resolve(&ledgers, &["GATES:A".to_string()], None).unwrap();
        let facts = RunFacts { selection: Some(&selection), ..RunFacts::default() };
        let v = verdict(&ledgers, &states, &facts, &DispatchSummary::default(), None, UnmetIds::All);
        assert_eq!((v.outcome, v.met, v.unmet, v.not_selected), (Outcome::AllMet, 1, 0, Some(1)));
        let all = verdict(&ledgers, &states, &RunFacts::default(), &DispatchSummary::default(), None, UnmetIds::All);
        assert_eq!((all.outcome, all.not_selected), (Outcome::Unmet, None));
        assert!(Selection::resolve(&ledgers, &["leaf-1:A".to_string()], None).is_err());
    }
}
