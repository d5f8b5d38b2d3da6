//! Proofs within one checker run: the proof state of each met runnable
//! gate, the tree digest new evidence carries, and the receipts a run
//! leaves for the gates it proves. The receipt store is reached through
//! `receipts` and the work tree through `work_tree`; each root's tree is
//! read once per run, before any check starts, and every judgement of the
//! run is made against that reading.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::approval::store::{StoreError, StoreLocation};
use crate::evidence::GateState;
use crate::proof::receipt::{Receipt, SCHEMA};
use crate::proof::{self, Claim, Judge, ProofState, ProofStates, Unproven};
use crate::receipts::{self, OpenReceipts, Receipts};
use crate::work_tree::{self, StatCache};

use super::plan::{Ledger, Setup};
use crate::ledger::Document;

/// What the receipt store is to this run.
enum Store {
    /// There is none yet: nothing was ever proven here.
    Missing,
    /// It exists but fails the store's rules; the error says why.
    Refused(StoreError),
    Open(OpenReceipts),
}

/// One root's tree as read for this run.
struct RootTree {
    /// The root as receipts name it.
    text: String,
    /// `None` when the tree could not be read.
    judge: Option<Judge>,
    /// What the next run may take from this reading.
    cache: StatCache,
    /// The manifest of the tree and its id, once a receipt needs them.
    manifest: Option<(String, String)>,
}

/// The run's proofs: the store, and each root's tree once read.
pub struct Proofs {
    store: Store,
    trees: Trees,
    /// The store's refusal has been reported.
    refusal_reported: bool,
}

/// Each root's tree, read on first use.
#[derive(Default)]
struct Trees {
    roots: HashMap<PathBuf, RootTree>,
    /// Why a root's tree could not be read.
    problems: Vec<String>,
    /// Each reading's root, file count and hashed files, not yet reported.
    readings: Vec<TreeReading>,
}

/// What reading one root's tree took: its files, and how many of them had
/// to be hashed (the rest came from the index or the stat cache).
pub struct TreeReading {
    pub root: String,
    pub files: usize,
    pub hashed: usize,
}

impl Trees {
    /// `root`'s tree, read on first use with the stat cache `store` keeps.
    fn of(&mut self, root: &Path, store: Option<&OpenReceipts>) -> &mut RootTree {
        let (problems, readings) = (&mut self.problems, &mut self.readings);
        self.roots.entry(root.to_path_buf()).or_insert_with(|| {
            let text = root.display().to_string();
            let load_cache = || store.map(|store| store.stat_cache(&text)).unwrap_or_default();
            match work_tree::read(root, &load_cache) {
                Ok(reading) => {
                    let (files, hashed) = (reading.tree.entries().len(), reading.hashed);
                    readings.push(TreeReading { root: text.clone(), files, hashed });
                    RootTree { text, judge: Some(Judge::new(reading.tree)), cache: reading.cache, manifest: None }
                }
                Err(error) => {
                    problems.push(format!("cannot read the tree under {}: {error}", root.display()));
                    RootTree { text, judge: None, cache: StatCache::default(), manifest: None }
                }
            }
        })
    }
}

impl Store {
    fn open(&self) -> Option<&OpenReceipts> {
        match self {
            Store::Open(open) => Some(open),
            _ => None,
        }
    }
}

impl Proofs {
    /// The receipt store at `location`, outside every one of `roots`;
    /// created (with its owner key) when `write` and it is missing. A
    /// store that cannot be used is remembered with its reason: every
    /// met gate is then unproven.
    pub fn open(location: &StoreLocation, roots: &[PathBuf], write: bool) -> Proofs {
        let opened = Receipts::locate(roots, location).and_then(|receipts| {
            if write {
                receipts.open_to_write().map(Some)
            } else {
                receipts.open_to_read()
            }
        });
        let store = match opened {
            Ok(Some(open)) => Store::Open(open),
            Ok(None) => Store::Missing,
            Err(error) => Store::Refused(error),
        };
        Proofs { store, trees: Trees::default(), refusal_reported: false }
    }

    /// `--proof` cannot judge anything without a usable store: its refusal
    /// is the run's error, as the approval store's is.
    pub fn require_store(&mut self) -> Result<(), StoreError> {
        match std::mem::replace(&mut self.store, Store::Missing) {
            Store::Refused(error) => Err(error),
            store => {
                self.store = store;
                Ok(())
            }
        }
    }

    /// Why the receipt store cannot be used, when it cannot, and why a
    /// root's tree could not be read: each once.
    pub fn take_problems(&mut self) -> Vec<String> {
        let mut problems = Vec::new();
        if let (Store::Refused(reason), false) = (&self.store, self.refusal_reported) {
            problems.push(format!("receipts cannot be used: {reason}"));
            self.refusal_reported = true;
        }
        problems.append(&mut self.trees.problems);
        problems
    }

    /// The trees read since the last call, for a verbose report.
    pub fn take_readings(&mut self) -> Vec<TreeReading> {
        std::mem::take(&mut self.trees.readings)
    }

    /// The proof of every met runnable gate that `setup` selects, as the
    /// ledgers are now (`states`).
    pub fn judge(&mut self, setup: &Setup, states: &[Vec<GateState>]) -> ProofStates {
        let mut judged = Vec::new();
        for (index, ledger) in setup.ledgers.iter().enumerate() {
            let mut root = None;
            for (at, (gate, state)) in ledger.document.gates.iter().zip(&states[index]).enumerate() {
                if *state != GateState::Met || !gate.is_runnable() || !setup.selects(index, gate.id()) {
                    continue;
                }
                let root = root.get_or_insert_with(|| setup.target.state_root(&setup.root, &ledger.path));
                judged.push(((index, at), self.judge_gate(root, &ledger.text_path, gate)));
            }
        }
        ProofStates::new(judged)
    }

    /// The proof of each met runnable gate of one ledger (`ledger` its path
    /// as text), by gate index: the Stop hook's judgement, which has no run.
    pub fn judge_document(&mut self, root: &Path, ledger: &str, document: &Document) -> Vec<(usize, ProofState)> {
        document
            .gates
            .iter()
            .enumerate()
            .filter(|(_, gate)| gate.is_runnable())
            .filter(|(_, gate)| crate::evidence::gate_state(gate, document.is_abandoned(gate.id())) == GateState::Met)
            .map(|(at, gate)| (at, self.judge_gate(root, ledger, gate)))
            .collect()
    }

    fn judge_gate(&mut self, root: &Path, ledger: &str, gate: &crate::ledger::Gate) -> ProofState {
        let store = match &self.store {
            Store::Open(store) => store,
            Store::Refused(_) => return ProofState::Unproven(Unproven::NoStore),
            Store::Missing => return ProofState::Unproven(Unproven::NoReceipt),
        };
        let Some(key) = store.key() else { return ProofState::Unproven(Unproven::NoReceipt) };
        let inputs = gate.input_globs();
        let root_text = root.display().to_string();
        let claim = Claim {
            ledger,
            gate: gate.id(),
            evidence: gate.evidence().unwrap_or_default(),
            inputs: &inputs,
            root: &root_text,
        };
        let receipt = store.receipt(ledger, gate.id());
        let receipt = match proof::matching(&claim, receipt.as_ref(), key) {
            Ok(receipt) => receipt,
            Err(why) => return ProofState::Unproven(why),
        };
        match self.trees.of(root, Some(store)).judge.as_mut() {
            Some(judge) => judge.freshness(receipt, || store.manifest(&receipt.manifest)),
            None => ProofState::Unproven(Unproven::TreeUnreadable),
        }
    }

    /// The digest new evidence of a gate under `root` carries: its scope of
    /// the tree as read before any check ran. `None` when the tree cannot
    /// be read or no receipt can be kept.
    pub fn tree_digest(&mut self, root: &Path, inputs: &[String], excluded: &[String]) -> Option<String> {
        let store = self.store.open().filter(|store| store.key().is_some())?;
        let judge = self.trees.of(root, Some(store)).judge.as_mut()?;
        Some(judge.digest(inputs, excluded).to_string())
    }

    /// Keeps the receipts of gates just proven under `root`, sealed with
    /// the owner key; the error is the store's.
    pub fn keep(&mut self, root: &Path, proven: Vec<Proven>) -> Result<(), String> {
        let (Some(store), Some(tree)) = (self.store.open(), self.trees.roots.get_mut(root)) else { return Ok(()) };
        let (Some(key), Some(judge)) = (store.key(), &tree.judge) else { return Ok(()) };
        if proven.is_empty() {
            return Ok(());
        }
        let (manifest, id) = tree.manifest.get_or_insert_with(|| {
            let text = judge.tree().manifest();
            let id = receipts::manifest_id(&text);
            (text, id)
        });
        let proven_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        let sealed: Vec<Receipt> = proven
            .into_iter()
            .map(|proven| {
                Receipt {
                    schema: SCHEMA,
                    ledger: proven.ledger,
                    gate: proven.gate,
                    evidence: proven.evidence,
                    root: tree.text.clone(),
                    tree: proven.tree,
                    manifest: id.clone(),
                    inputs: proven.inputs,
                    excluded: proven.excluded,
                    proven_at: proven_at.clone(),
                    mac: String::new(),
                }
                .sign(key)
            })
            .collect();
        store.keep(&sealed, manifest, &tree.text, &tree.cache).map_err(|error| error.to_string())
    }
}

/// A gate this run proved: what its receipt will say.
pub struct Proven {
    pub ledger: String,
    pub gate: String,
    pub evidence: String,
    pub tree: String,
    pub inputs: Vec<String>,
    pub excluded: Vec<String>,
}

/// The run's ledgers under `root`, relative to it: what its new receipts
/// leave out of the tree, since this run writes them.
pub fn run_ledgers_under(root: &Path, ledgers: &[Ledger]) -> Vec<String> {
    let mut relative: Vec<String> = ledgers
        .iter()
        .filter_map(|ledger| ledger.path.strip_prefix(root).ok())
        .map(|path| path.to_string_lossy().replace('\\', "/"))
        .collect();
    relative.sort();
    relative.dedup();
    relative
}
