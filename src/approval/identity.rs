//! The runtime identity an approval is bound to. The field set, key order
//! and JSON spelling follow the Node tool exactly so that its records are
//! honoured after a switch, and so that changing any bound input (CHECK,
//! EXPECT, resolved CWD or shell, timeout, limits, platform, PATH) needs a
//! fresh approval.

use std::sync::OnceLock;

use serde::Serialize;

use crate::digest::sha256_hex;
use crate::evidence::MAX_OUTPUT_BYTES;

/// The Node tool's regex limits, bound into the identity for compatibility.
const REGEX_TIMEOUT_MS: u64 = 250;
const REGEX_STARTUP_TIMEOUT_MS: u64 = 5000;
const MAX_REGEX_WORKERS: u64 = 4;

/// Node's `process.platform` for this build target.
pub const PLATFORM: &str = if cfg!(target_os = "linux") {
    "linux"
} else if cfg!(target_os = "macos") {
    "darwin"
} else if cfg!(target_os = "freebsd") {
    "freebsd"
} else if cfg!(target_os = "openbsd") {
    "openbsd"
} else if cfg!(target_os = "windows") {
    "win32"
} else {
    std::env::consts::OS
};

/// What a person consented to when they approved an oracle. The record's
/// name and signature are the Node tool's whatever the consent, so this is
/// kept beside them, in a field of the record the Node tool ignores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consent {
    /// Running the check with the user's full authority, and so confined too.
    Unconfined,
    /// Running it only confined (approved under `--sandbox`).
    ConfinedOnly,
}

impl Consent {
    /// The consent a run asks for: confined runs need only `ConfinedOnly`.
    pub fn for_run(confined: bool) -> Consent {
        if confined {
            Consent::ConfinedOnly
        } else {
            Consent::Unconfined
        }
    }

    /// Whether an approval given with this consent admits a run that needs
    /// `needed`.
    pub fn covers(self, needed: Consent) -> bool {
        self == Consent::Unconfined || needed == Consent::ConfinedOnly
    }
}

/// What a person consented to beside the oracle itself, kept in fields of
/// the record the Node tool ignores: the consent, and the gate's `INPUTS:`,
/// which say what its proofs depend on (the agent may write them, so they
/// are the person's to approve like the CHECK).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terms {
    pub consent: Consent,
    pub inputs: Option<String>,
}

impl Terms {
    /// Whether an approval given on these terms admits a run that needs
    /// `needed`: a consent that covers it, and the very same inputs.
    pub fn admit(&self, needed: &Terms) -> bool {
        self.consent.covers(needed.consent) && self.inputs == needed.inputs
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Oracle {
    schema: u32,
    pub check: String,
    pub expect: String,
    pub cwd: String,
    pub shell: String,
    timeout_ms: u64,
    max_output_bytes: usize,
    regex_timeout_ms: u64,
    regex_startup_timeout_ms: u64,
    max_regex_workers: u64,
    platform: &'static str,
    pub path: String,
    /// `signature()`, computed once: a run needs it several times per gate
    /// (planning, lookup, record, write-back), and hashing the identity
    /// with its PATH costs more than everything else a lookup does.
    #[serde(skip)]
    signature: SignatureCache,
}

/// The cached signature: derived from the bound fields, so it takes no
/// part in comparing oracles.
#[derive(Debug, Clone, Default)]
struct SignatureCache(OnceLock<String>);

impl PartialEq for SignatureCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for SignatureCache {}

impl Oracle {
    pub fn new(check: &str, expect: &str, cwd: &str, shell: &str, timeout_secs: u64, path: &str) -> Self {
        Oracle {
            schema: 1,
            check: check.to_string(),
            expect: expect.to_string(),
            cwd: cwd.to_string(),
            shell: shell.to_string(),
            timeout_ms: timeout_secs * 1000,
            max_output_bytes: MAX_OUTPUT_BYTES,
            regex_timeout_ms: REGEX_TIMEOUT_MS,
            regex_startup_timeout_ms: REGEX_STARTUP_TIMEOUT_MS,
            max_regex_workers: MAX_REGEX_WORKERS,
            platform: PLATFORM,
            path: path.to_string(),
            signature: SignatureCache::default(),
        }
    }

    pub fn timeout_ms(&self) -> u64 {
        self.timeout_ms
    }

    pub fn platform(&self) -> &str {
        self.platform
    }

    /// The output and regex limits, in the record's key order.
    pub fn limits(&self) -> [u64; 4] {
        [self.max_output_bytes as u64, self.regex_timeout_ms, self.regex_startup_timeout_ms, self.max_regex_workers]
    }

    /// Compact JSON, as `JSON.stringify` writes it.
    pub fn to_json(&self) -> String {
        // A struct of strings and integers always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// SHA-256 of the compact JSON.
    pub fn signature(&self) -> &str {
        self.signature.0.get_or_init(|| sha256_hex(self.to_json()))
    }

    /// The record's file name: `sha256(ledger \0 gate \0 signature).json`.
    pub fn record_name(&self, ledger: &str, gate_id: &str) -> String {
        let identity = format!("{ledger}\0{gate_id}\0{}", self.signature());
        format!("{}.json", sha256_hex(identity))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unconfined_consent_covers_confined_runs_and_not_the_reverse() {
        assert!(Consent::Unconfined.covers(Consent::Unconfined));
        assert!(Consent::Unconfined.covers(Consent::ConfinedOnly));
        assert!(Consent::ConfinedOnly.covers(Consent::ConfinedOnly));
        assert!(!Consent::ConfinedOnly.covers(Consent::Unconfined));
        assert_eq!(Consent::for_run(true), Consent::ConfinedOnly);
    }

    #[test]
    fn json_keys_in_node_order() {
        let oracle = Oracle::new("c", "e", "/r", "/bin/sh", 120, "/usr/bin");
        let expected = format!(
            "{{\"schema\":1,\"check\":\"c\",\"expect\":\"e\",\"cwd\":\"/r\",\"shell\":\"/bin/sh\",\
             \"timeoutMs\":120000,\"maxOutputBytes\":1048576,\"regexTimeoutMs\":250,\
             \"regexStartupTimeoutMs\":5000,\"maxRegexWorkers\":4,\"platform\":\"{PLATFORM}\",\"path\":\"/usr/bin\"}}"
        );
        assert_eq!(oracle.to_json(), expected);
    }

    #[test]
    fn every_bound_field_changes_the_record() {
        let base = Oracle::new("c", "e", "/r", "/bin/sh", 120, "/usr/bin");
        let name = base.record_name("/r/GATES.md", "G1");
        let variants = [
            Oracle::new("c2", "e", "/r", "/bin/sh", 120, "/usr/bin"),
            Oracle::new("c", "e2", "/r", "/bin/sh", 120, "/usr/bin"),
            Oracle::new("c", "e", "/r2", "/bin/sh", 120, "/usr/bin"),
            Oracle::new("c", "e", "/r", "/bin/bash", 120, "/usr/bin"),
            Oracle::new("c", "e", "/r", "/bin/sh", 121, "/usr/bin"),
            Oracle::new("c", "e", "/r", "/bin/sh", 120, "/usr/bin:/bin"),
        ];
        for variant in variants {
            assert_ne!(variant.record_name("/r/GATES.md", "G1"), name);
        }
        assert_ne!(base.record_name("/r/GATES.md", "G2"), name);
        assert_ne!(base.record_name("/r/other.md", "G1"), name);
    }

    #[test]
    fn the_signature_is_the_hash_of_the_json_and_equality_ignores_its_cache() {
        let computed = Oracle::new("c", "e", "/r", "/bin/sh", 120, "/usr/bin");
        assert_eq!(computed.signature(), sha256_hex(computed.to_json()));
        let fresh = Oracle::new("c", "e", "/r", "/bin/sh", 120, "/usr/bin");
        assert_eq!(computed, fresh);
        assert_ne!(computed, Oracle::new("c", "e", "/r", "/bin/sh", 120, "/usr/bin:/bin"));
        assert!(!computed.to_json().contains(computed.signature()));
    }
}
