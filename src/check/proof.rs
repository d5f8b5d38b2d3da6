//! Proofs within one checker run: the proof state of each met runnable
//! gate, the tree digest new evidence carries, and the receipts a run
//! leaves for the gates it proves. The receipt store is reached through
//! `receipts` and the work tree through `work_tree`; each root's tree is
//! read once per run, before any check starts, and every judgement of the
//! run is made against that reading.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::approval::store::{StoreError, StoreLocation};
use crate::evidence::GateState;
use crate::proof::receipt::{Receipt, SCHEMA};
use crate::proof::tree::Snapshot;
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

/// How receipts name a root and a ledger under it: the root as the file
/// system resolves it (a link to the repository names the same tree), and
/// the ledger by its place under that root, so the same ledger reached
/// through another spelling of the root has the same receipts.
fn canonical(root: &Path, ledger: &Path) -> (PathBuf, String) {
    let resolved = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let ledger = match ledger.strip_prefix(root) {
        Ok(relative) => resolved.join(relative),
        Err(_) => std::fs::canonicalize(ledger).unwrap_or_else(|_| ledger.to_path_buf()),
    };
    (resolved, ledger.to_string_lossy().into_owned())
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
    /// The run's receipts were written into the store (the stat cache is
    /// then worth keeping).
    proved: bool,
}

/// The run's proofs: the store, and each root's tree once read.
pub struct Proofs {
    store: Store,
    trees: Trees,
    /// The manifests read so far, by id: each is read once however many
    /// stale gates were proven on its tree.
    manifests: HashMap<String, Option<Arc<Snapshot>>>,
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
                    RootTree {
                        text,
                        judge: Some(Judge::new(reading.tree)),
                        cache: reading.cache,
                        manifest: None,
                        proved: false,
                    }
                }
                Err(error) => {
                    problems.push(format!("cannot read the tree under {}: {error}", root.display()));
                    RootTree { text, judge: None, cache: StatCache::default(), manifest: None, proved: false }
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
        Proofs { store, trees: Trees::default(), manifests: HashMap::new(), refusal_reported: false }
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
            let mut names = None;
            for (at, (gate, state)) in ledger.document.gates.iter().zip(&states[index]).enumerate() {
                if *state != GateState::Met || !gate.is_runnable() || !setup.selects(index, gate.id()) {
                    continue;
                }
                let (root, ledger) = names.get_or_insert_with(|| {
                    canonical(&setup.target.state_root(&setup.root, &ledger.path), &ledger.path)
                });
                judged.push(((index, at), self.judge_gate(root, ledger, gate)));
            }
        }
        ProofStates::new(judged)
    }

    /// The proof of each met runnable gate of the ledger at `ledger` under
    /// `root`, by gate index: the Stop hook's judgement, which has no run.
    pub fn judge_document(&mut self, root: &Path, ledger: &Path, document: &Document) -> Vec<(usize, ProofState)> {
        let (root, ledger) = canonical(root, ledger);
        document
            .gates
            .iter()
            .enumerate()
            .filter(|(_, gate)| gate.is_runnable())
            .filter(|(_, gate)| crate::evidence::gate_state(gate, document.is_abandoned(gate.id())) == GateState::Met)
            .map(|(at, gate)| (at, self.judge_gate(&root, &ledger, gate)))
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
        // INPUTS that match no file prove nothing, whatever the receipt says.
        if !inputs.is_empty() {
            let judge = self.trees.of(root, Some(store)).judge.as_mut();
            if judge.is_some_and(|judge| judge.digest(&inputs, &[]).is_none()) {
                return ProofState::Unproven(Unproven::EmptyScope);
            }
        }
        let receipt = store.receipt(ledger, gate.id());
        let receipt = match proof::matching(&claim, receipt.as_ref(), key) {
            Ok(receipt) => receipt,
            Err(why) => return ProofState::Unproven(why),
        };
        let manifests = &mut self.manifests;
        let earlier = || {
            let id = receipt.manifest.clone();
            manifests.entry(id).or_insert_with_key(|id| store.manifest(id).map(Arc::new)).clone()
        };
        match self.trees.of(root, Some(store)).judge.as_mut() {
            Some(judge) => judge.freshness(receipt, earlier),
            None => ProofState::Unproven(Unproven::TreeUnreadable),
        }
    }

    /// The digest new evidence of a gate under `root` carries: its scope of
    /// the tree as read before any check ran. `None` when the tree cannot
    /// be read or no receipt can be kept.
    pub fn tree_digest(&mut self, root: &Path, inputs: &[String], excluded: &[String]) -> Option<String> {
        let store = self.store.open().filter(|store| store.key().is_some())?;
        let (root, _) = canonical(root, root);
        let judge = self.trees.of(&root, Some(store)).judge.as_mut()?;
        judge.digest(inputs, excluded).map(str::to_string)
    }

    /// Keeps the receipts of gates just proven under `root`, sealed with
    /// the owner key, and the manifest of the tree they were proven on;
    /// the error is the store's.
    pub fn keep(&mut self, root: &Path, proven: Vec<Proven>) -> Result<(), String> {
        if proven.is_empty() {
            return Ok(());
        }
        let (canonical_root, _) = canonical(root, root);
        let (Some(store), Some(tree)) = (self.store.open(), self.trees.roots.get_mut(&canonical_root)) else {
            return Ok(());
        };
        let (Some(key), Some(judge)) = (store.key(), &tree.judge) else { return Ok(()) };
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
                    ledger: canonical(root, &proven.ledger).1,
                    gate: proven.gate,
                    evidence: proven.evidence,
                    root: tree.text.clone(),
                    tree: proven.tree,
                    manifest: id.clone(),
                    inputs: proven.inputs,
                    excluded: proven.excluded.to_vec(),
                    proven_at: proven_at.clone(),
                    mac: String::new(),
                }
                .sign(key)
            })
            .collect();
        tree.proved = true;
        store.keep(&sealed, manifest).map_err(|error| error.to_string())
    }

    /// At the end of a run that proved gates: keeps each such root's stat
    /// cache for the next reading, and prunes the store; the error is the
    /// store's.
    pub fn finish(&mut self) -> Result<(), String> {
        let Some(store) = self.store.open() else { return Ok(()) };
        let proved: Vec<&RootTree> = self.trees.roots.values().filter(|tree| tree.proved).collect();
        if proved.is_empty() {
            return Ok(());
        }
        let caches: Vec<(&str, &StatCache)> = proved.iter().map(|tree| (tree.text.as_str(), &tree.cache)).collect();
        let manifests: Vec<&str> = proved.iter().filter_map(|tree| Some(tree.manifest.as_ref()?.1.as_str())).collect();
        store.finish(&caches, &manifests).map_err(|error| error.to_string())
    }
}

/// A gate this run proved: what its receipt will say.
pub struct Proven {
    /// The ledger's path as the run found it.
    pub ledger: PathBuf,
    pub gate: String,
    pub evidence: String,
    pub tree: String,
    pub inputs: Vec<String>,
    pub excluded: Arc<[String]>,
}

/// The run's ledgers under `root`, relative to it and sorted: what its new
/// receipts leave out of the tree, since this run writes them. Those the
/// tree never holds (`.unlazy/`'s, the root's own) need no mention.
pub fn run_ledgers_under(root: &Path, ledgers: &[Ledger]) -> Arc<[String]> {
    let mut relative: Vec<String> = ledgers
        .iter()
        .filter_map(|ledger| ledger.path.strip_prefix(root).ok())
        .map(|path| path.to_string_lossy().replace('\\', "/"))
        .filter(|path| !work_tree::is_state(path))
        .collect();
    relative.sort();
    relative.dedup();
    relative.into()
}
