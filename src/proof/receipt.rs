//! A receipt: what gate-check writes beside the ledger each time it proves
//! a gate, MAC'd under the owner's key so that neither a hand-ticked box
//! nor a copied evidence line can stand in for one. Pure: the store reads
//! and writes the bytes.

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// The owner key's length, in bytes.
pub const KEY_BYTES: usize = 32;

/// The owner's key, read from the receipt store.
pub struct OwnerKey([u8; KEY_BYTES]);

impl OwnerKey {
    pub fn new(bytes: [u8; KEY_BYTES]) -> OwnerKey {
        OwnerKey(bytes)
    }

    fn mac(&self) -> Hmac<Sha256> {
        // HMAC takes a key of any length.
        Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC accepts every key length")
    }
}

/// One gate proven once: the ledger and gate, the evidence line written,
/// and the tree it was proven on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Receipt {
    pub schema: u32,
    /// The ledger's absolute path, as approvals bind it.
    pub ledger: String,
    pub gate: String,
    /// The exact `EVIDENCE:` value written.
    pub evidence: String,
    /// The root the tree's paths are relative to.
    pub root: String,
    /// The digest of the scope of the tree the check ran on
    /// (`tree::Snapshot::digest`).
    pub tree: String,
    /// The id of the whole tree's manifest, which names what changed since.
    pub manifest: String,
    /// The gate's `INPUTS:` globs when it was proven; empty for the whole tree.
    pub inputs: Vec<String>,
    /// The run's ledgers, root-relative, left out of the tree.
    pub excluded: Vec<String>,
    /// When the check ran (RFC 3339, UTC).
    pub proven_at: String,
    /// HMAC-SHA-256 over every other field, as lowercase hex.
    pub mac: String,
}

pub const SCHEMA: u32 = 1;

impl Receipt {
    /// The bytes the MAC covers: the receipt's JSON with an empty MAC.
    fn signed_bytes(&self) -> Vec<u8> {
        let unsigned = Receipt { mac: String::new(), ..self.clone() };
        // Strings and integers always serialize.
        serde_json::to_vec(&unsigned).unwrap_or_default()
    }

    /// Seals the receipt under `key`.
    pub fn sign(mut self, key: &OwnerKey) -> Receipt {
        let mut mac = key.mac();
        mac.update(&self.signed_bytes());
        self.mac = crate::proof::hex(&mac.finalize().into_bytes());
        self
    }

    /// Whether the MAC is this receipt's under `key` (in constant time).
    pub fn is_sealed_by(&self, key: &OwnerKey) -> bool {
        let Some(tag) = crate::proof::from_hex::<32>(&self.mac) else { return false };
        let mut mac = key.mac();
        mac.update(&self.signed_bytes());
        mac.verify_slice(&tag).is_ok()
    }

    /// The receipt's JSON file text.
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// A receipt read back, if the text is one of this schema.
    pub fn from_text(text: &str) -> Option<Receipt> {
        serde_json::from_str::<Receipt>(text).ok().filter(|receipt| receipt.schema == SCHEMA)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receipt() -> Receipt {
        Receipt {
            schema: SCHEMA,
            ledger: "/r/GATES.md".into(),
            gate: "G1".into(),
            evidence: "automatic-evidence=v1; ...".into(),
            root: "/r".into(),
            tree: "a".repeat(64),
            manifest: "b".repeat(64),
            inputs: vec!["src/**".into()],
            excluded: vec!["GATES.md".into()],
            proven_at: "2026-12-05T15:00:00Z".into(),
            mac: String::new(),
        }
    }

    #[test]
    fn a_receipt_is_sealed_by_its_key_alone_and_any_change_breaks_the_seal() {
        let key = OwnerKey::new([7; KEY_BYTES]);
        let sealed = receipt().sign(&key);
        assert_eq!(sealed.mac.len(), 64);
        assert!(sealed.is_sealed_by(&key));
        assert!(!sealed.is_sealed_by(&OwnerKey::new([8; KEY_BYTES])), "another owner's key");
        let read_back = Receipt::from_text(&sealed.to_text()).unwrap();
        assert!(read_back.is_sealed_by(&key));
        for forged in [
            Receipt { gate: "G2".into(), ..sealed.clone() },
            Receipt { tree: "c".repeat(64), ..sealed.clone() },
            Receipt { inputs: Vec::new(), ..sealed.clone() },
            Receipt { mac: "0".repeat(64), ..sealed.clone() },
            Receipt { mac: "not hex".into(), ..sealed.clone() },
        ] {
            assert!(!forged.is_sealed_by(&key), "{forged:?}");
        }
        assert_eq!(Receipt::from_text("{}"), None);
        assert_eq!(Receipt::from_text(&sealed.to_text().replace("\"schema\": 1", "\"schema\": 2")), None);
        let unknown_field = sealed.to_text().replacen('{', "{\"extra\": 1,", 1);
        assert_eq!(Receipt::from_text(&unknown_field), None);
    }
}
