//! Proof: whether a met gate was proven by gate-check itself, on the tree
//! as it is now. A receipt (`receipt`) ties the gate's evidence line to the
//! tree its check ran on (`tree`); a gate is `current` when its receipt is
//! sealed by the owner's key, names this ledger, gate, evidence line,
//! root and inputs, and nothing in its scope changed since. Pure: the
//! receipts and the tree are read elsewhere (`receipts`, `work_tree`).

pub mod receipt;
pub mod tree;

use std::collections::HashMap;

use receipt::{OwnerKey, Receipt};
use serde::Serialize;
use tree::{Scope, Snapshot};

/// How many changed files a reason names.
pub const NAMED_CHANGES: usize = 3;
/// How many changed files a machine record lists.
pub const RECORDED_CHANGES: usize = 50;

/// Why a met gate has no proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unproven {
    /// No receipt for this ledger and gate: the box and evidence were
    /// written by hand, copied, or proven on another machine.
    NoReceipt,
    /// A receipt whose MAC is not the owner key's: forged or damaged.
    NotSealed,
    /// A receipt for another evidence line than the one in the ledger.
    OtherEvidence,
    /// A receipt proven with other `INPUTS:`, or under another root.
    OtherScope,
    /// The receipts could not be used (the store was refused).
    NoStore,
    /// The tree could not be read, so nothing is known to be current.
    TreeUnreadable,
    /// Its `INPUTS:` match no file: nothing it depends on could ever go stale.
    EmptyScope,
}

impl Unproven {
    pub fn describe(self) -> &'static str {
        match self {
            Unproven::NoReceipt => "no receipt: gate-check did not prove it here",
            Unproven::NotSealed => "its receipt is not sealed by this owner's key",
            Unproven::OtherEvidence => "its receipt proves another evidence line",
            Unproven::OtherScope => "it was proven with other INPUTS or under another root",
            Unproven::NoStore => "the receipt store cannot be used",
            Unproven::TreeUnreadable => "the tree cannot be read",
            Unproven::EmptyScope => "its INPUTS match no file",
        }
    }
}

/// A met runnable gate's proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProofState {
    /// Proven by gate-check, and nothing it depends on changed since.
    Current {
        proven_at: String,
    },
    /// Proven, but files it depends on changed since: all of them, in path
    /// order (none known when the proving tree's manifest is gone).
    Stale {
        proven_at: String,
        changed: Vec<String>,
    },
    Unproven(Unproven),
}

impl ProofState {
    pub fn name(&self) -> &'static str {
        match self {
            ProofState::Current { .. } => "current",
            ProofState::Stale { .. } => "stale",
            ProofState::Unproven(_) => "unproven",
        }
    }

    pub fn is_current(&self) -> bool {
        matches!(self, ProofState::Current { .. })
    }

    /// Why the gate does not count under `--proof`, in one line:
    /// `stale: src/lib.py changed since it was proven`.
    pub fn reason(&self) -> Option<String> {
        match self {
            ProofState::Current { .. } => None,
            ProofState::Stale { changed, .. } if changed.is_empty() => {
                Some("stale: files it depends on changed since it was proven".into())
            }
            ProofState::Stale { changed, .. } => {
                let mut named = changed.iter().take(NAMED_CHANGES).cloned().collect::<Vec<_>>().join(", ");
                if changed.len() > NAMED_CHANGES {
                    named.push_str(&format!(" and {} more", changed.len() - NAMED_CHANGES));
                }
                Some(format!("stale: {named} changed since it was proven"))
            }
            ProofState::Unproven(why) => Some(format!("unproven: {}", why.describe())),
        }
    }

    /// The machine record of this proof.
    pub fn record(&self) -> ProofRecord {
        let (proven_at, changed, reason) = match self {
            ProofState::Current { proven_at } => (Some(proven_at.clone()), Vec::new(), None),
            ProofState::Stale { proven_at, changed } => (Some(proven_at.clone()), changed.clone(), None),
            ProofState::Unproven(why) => (None, Vec::new(), Some(*why)),
        };
        ProofRecord {
            state: self.name(),
            changed_count: changed.len(),
            changed: changed.into_iter().take(RECORDED_CHANGES).collect(),
            proven_at,
            unproven: reason,
        }
    }
}

/// A gate's proof as JSON carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProofRecord {
    /// `current`, `stale` or `unproven`.
    pub state: &'static str,
    /// The files that changed since it was proven (at most 50).
    pub changed: Vec<String>,
    pub changed_count: usize,
    /// When gate-check proved it, if it did.
    pub proven_at: Option<String>,
    /// Why it is unproven, if it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unproven: Option<Unproven>,
}

/// The proof of each gate whose proof is in question (met, runnable and
/// selected), by ledger and gate index; the other gates have none, and
/// cost nothing here.
#[derive(Debug, Default)]
pub struct ProofStates {
    /// In ledger and gate order.
    judged: Vec<((usize, usize), ProofState)>,
}

impl ProofStates {
    /// `judged` in ledger and gate order.
    pub fn new(judged: Vec<((usize, usize), ProofState)>) -> ProofStates {
        ProofStates { judged }
    }

    /// The proof of gate `at` of ledger `ledger`, if it is in question.
    pub fn get(&self, ledger: usize, at: usize) -> Option<&ProofState> {
        let found = self.judged.binary_search_by_key(&(ledger, at), |(key, _)| *key).ok()?;
        Some(&self.judged[found].1)
    }

    /// Every gate whose proof is in question, in ledger order.
    pub fn iter(&self) -> impl Iterator<Item = ((usize, usize), &ProofState)> {
        self.judged.iter().map(|(key, state)| (*key, state))
    }

    /// Whether some gate's proof is in question.
    pub fn is_empty(&self) -> bool {
        self.judged.is_empty()
    }
}

/// What a met gate claims: the ledger, gate and evidence line a receipt
/// must name, and the scope it must have been proven with.
#[derive(Debug, Clone, Copy)]
pub struct Claim<'a> {
    pub ledger: &'a str,
    pub gate: &'a str,
    pub evidence: &'a str,
    pub inputs: &'a [String],
    pub root: &'a str,
}

/// Whether `receipt` proves `claim` at all, tree aside.
pub fn matching<'r>(claim: &Claim, receipt: Option<&'r Receipt>, key: &OwnerKey) -> Result<&'r Receipt, Unproven> {
    let receipt = receipt.ok_or(Unproven::NoReceipt)?;
    if !receipt.is_sealed_by(key) {
        return Err(Unproven::NotSealed);
    }
    if receipt.ledger != claim.ledger || receipt.gate != claim.gate {
        return Err(Unproven::NoReceipt);
    }
    if receipt.evidence != claim.evidence {
        return Err(Unproven::OtherEvidence);
    }
    if receipt.inputs != claim.inputs || receipt.root != claim.root {
        return Err(Unproven::OtherScope);
    }
    Ok(receipt)
}

/// Judges receipts against one tree, hashing each distinct scope once.
pub struct Judge {
    tree: Snapshot,
    /// Each scope's digest and file count, by (inputs, excluded).
    digests: HashMap<(Vec<String>, Vec<String>), (String, usize)>,
}

impl Judge {
    pub fn new(tree: Snapshot) -> Judge {
        Judge { tree, digests: HashMap::new() }
    }

    pub fn tree(&self) -> &Snapshot {
        &self.tree
    }

    /// The digest of the tree within `inputs`, less `excluded`; `None` when
    /// `INPUTS:` name files and none is there (a scope that can never change
    /// proves nothing).
    pub fn digest(&mut self, inputs: &[String], excluded: &[String]) -> Option<&str> {
        let tree = &self.tree;
        let (digest, files) = self
            .digests
            .entry((inputs.to_vec(), excluded.to_vec()))
            .or_insert_with(|| tree.digest(&Scope::new(inputs, excluded)));
        (inputs.is_empty() || *files > 0).then_some(digest.as_str())
    }

    /// The proof of a matching receipt: current when its scope of the tree
    /// is unchanged, else stale with what changed, read off `earlier`: the
    /// manifest of the tree it was proven on, when the store still has it.
    pub fn freshness(
        &mut self,
        receipt: &Receipt,
        earlier: impl FnOnce() -> Option<std::sync::Arc<Snapshot>>,
    ) -> ProofState {
        let proven_at = receipt.proven_at.clone();
        match self.digest(&receipt.inputs, &receipt.excluded) {
            None => return ProofState::Unproven(Unproven::EmptyScope),
            Some(digest) if digest == receipt.tree => return ProofState::Current { proven_at },
            Some(_) => {}
        }
        let scope = Scope::new(&receipt.inputs, &receipt.excluded);
        let changed = earlier().map(|earlier| self.tree.changed_since(&earlier, &scope)).unwrap_or_default();
        ProofState::Stale { proven_at, changed }
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    faster_hex::hex_string(bytes)
}

/// The `N` bytes that `text` (lowercase or uppercase hex, exactly `2 * N`
/// digits) spells, if it spells them.
pub fn from_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let mut bytes = [0; N];
    let decoded = faster_hex::hex_decode(text.as_bytes(), &mut bytes).ok()?.len();
    (decoded == N).then_some(bytes)
}

#[cfg(test)]
mod tests {
    use super::receipt::{KEY_BYTES, SCHEMA};
    use super::tree::{ContentId, Entry, Kind};
    use super::*;

    fn tree(files: &[(&str, u8)]) -> Snapshot {
        Snapshot::new(
            files
                .iter()
                .map(|(path, byte)| Entry { path: path.to_string(), kind: Kind::File, id: ContentId([*byte; 20]) })
                .collect(),
        )
    }

    fn receipt(tree: &Snapshot, inputs: &[String]) -> Receipt {
        Receipt {
            schema: SCHEMA,
            ledger: "/r/GATES.md".into(),
            gate: "G1".into(),
            evidence: "e".into(),
            root: "/r".into(),
            tree: tree.digest(&Scope::new(inputs, &["GATES.md".into()])).0,
            manifest: String::new(),
            inputs: inputs.to_vec(),
            excluded: vec!["GATES.md".into()],
            proven_at: "t".into(),
            mac: String::new(),
        }
    }

    #[test]
    fn a_receipt_matches_only_its_own_claim() {
        let key = OwnerKey::new([1; KEY_BYTES]);
        let proven = receipt(&tree(&[]), &[]).sign(&key);
        let claim = Claim { ledger: "/r/GATES.md", gate: "G1", evidence: "e", inputs: &[], root: "/r" };
        assert!(matching(&claim, Some(&proven), &key).is_ok());
        assert_eq!(matching(&claim, None, &key).unwrap_err(), Unproven::NoReceipt);
        let other_key = OwnerKey::new([2; KEY_BYTES]);
        assert_eq!(matching(&claim, Some(&proven), &other_key).unwrap_err(), Unproven::NotSealed);
        let copied = Claim { ledger: "/elsewhere/GATES.md", ..claim };
        assert_eq!(matching(&copied, Some(&proven), &key).unwrap_err(), Unproven::NoReceipt);
        let edited = Claim { evidence: "f", ..claim };
        assert_eq!(matching(&edited, Some(&proven), &key).unwrap_err(), Unproven::OtherEvidence);
        let narrowed = ["src".to_string()];
        let narrowed = Claim { inputs: &narrowed, ..claim };
        assert_eq!(matching(&narrowed, Some(&proven), &key).unwrap_err(), Unproven::OtherScope);
    }

    #[test]
    fn a_proof_is_current_until_its_scope_changes_and_then_names_the_changes() {
        let before = tree(&[("GATES.md", 1), ("src/a.py", 2), ("src/b.py", 3), ("docs/x.md", 4)]);
        let whole = receipt(&before, &[]);
        let only_src = receipt(&before, &["src".to_string()]);
        let ledger_edited = tree(&[("GATES.md", 9), ("src/a.py", 2), ("src/b.py", 3), ("docs/x.md", 4)]);
        let mut judge = Judge::new(ledger_edited);
        assert!(
            judge.freshness(&whole, || Some(before.clone().into())).is_current(),
            "the ledger is out of every scope"
        );
        let docs_edited = tree(&[("GATES.md", 1), ("src/a.py", 2), ("src/b.py", 3), ("docs/x.md", 8)]);
        let mut judge = Judge::new(docs_edited);
        assert!(judge.freshness(&only_src, || Some(before.clone().into())).is_current());
        let stale = judge.freshness(&whole, || Some(before.clone().into()));
        assert_eq!(stale, ProofState::Stale { proven_at: "t".into(), changed: vec!["docs/x.md".into()] });
        assert_eq!(stale.reason().unwrap(), "stale: docs/x.md changed since it was proven");
        let many = tree(&[("GATES.md", 1), ("src/a.py", 5), ("src/b.py", 6), ("src/c.py", 1), ("src/d.py", 1)]);
        let mut judge = Judge::new(many);
        let stale = judge.freshness(&only_src, || Some(before.clone().into()));
        assert_eq!(
            stale.reason().unwrap(),
            "stale: src/a.py, src/b.py, src/c.py and 1 more changed since it was proven"
        );
        assert_eq!(stale.record().changed_count, 4);
        let unnamed = judge.freshness(&only_src, || None);
        assert_eq!(unnamed.reason().unwrap(), "stale: files it depends on changed since it was proven");
        assert_eq!(
            ProofState::Unproven(Unproven::NoReceipt).reason().unwrap(),
            "unproven: no receipt: gate-check did not prove it here"
        );
    }

    #[test]
    fn hex_round_trips() {
        assert_eq!(hex(&[0, 255, 16]), "00ff10");
        assert_eq!(from_hex::<3>("00ff10"), Some([0, 255, 16]));
        assert_eq!(from_hex::<3>("00FF10"), Some([0, 255, 16]));
        assert_eq!(from_hex::<3>("00ff"), None, "too short");
        assert_eq!(from_hex::<3>("00ff1000"), None, "too long");
        assert_eq!(from_hex::<1>("0"), None);
        assert_eq!(from_hex::<1>("zz"), None);
    }
}
