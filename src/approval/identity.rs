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

    /// The phase-1 vectors: what the Node tool writes on Windows for these
    /// inputs, computed by its own code (with `path.win32` and platform
    /// `win32`) and by the real node.exe 20.20.2 under wine, alike. The
    /// paths go through this crate's `path.win32` rules first, as a run's do.
    #[cfg(windows)]
    #[test]
    fn win32_records_are_named_and_signed_as_the_node_tool_names_and_signs_them() {
        use crate::paths::resolve;
        use std::path::Path;
        let text = |path: std::path::PathBuf| path.to_str().unwrap().to_string();
        let explicit = resolve(Path::new(r"C:\elsewhere"), Path::new("c:/Users/dev/project/gates/leaf.md"));
        let vectors = [
            (
                r"C:\Users\dev\project\GATES.md".to_string(),
                "G1",
                Oracle::new(
                    "echo ok",
                    "ok",
                    r"C:\Users\dev\project",
                    r"C:\Windows\system32\cmd.exe",
                    120,
                    r"C:\Windows\system32;C:\Windows;C:\Windows\System32\Wbem;C:\Program Files\nodejs\",
                ),
                "46572c985c32181eb286d33dc2d6343c675dd41e7c3b2b9239f6cb15ab3d5778",
                "bca92ab50f59a143d66a17559fef5f60cc75c33a027bb873d3f0fb2fc70e814e.json",
            ),
            (
                text(explicit.clone()),
                "B2.1",
                Oracle::new(
                    r#"findstr /c:"ok" out.txt && node scripts\check.js"#,
                    "/^ok$/m",
                    &text(resolve(explicit.parent().unwrap(), Path::new(r"..\tools/sub"))),
                    r"C:\Windows\system32\cmd.exe",
                    30,
                    r"C:\Windows\system32;C:\Windows",
                ),
                "e64209359a8433b7c53ed6e2afec138903caeb36a159855d10936045b1ebb9f7",
                "6104ff3ed71eed09ab08a633c9f30599322d58b8e3063e5db6af1b882ed5aab5.json",
            ),
            (
                r"D:\work\repo\.unlazy\feat\GATES.md".to_string(),
                "api",
                Oracle::new(
                    r#"pwsh -NoProfile -Command "Write-Output 'héllo ✓'""#,
                    "héllo ✓",
                    &text(resolve(Path::new(r"D:\work\repo"), Path::new("services/api"))),
                    r"C:\Program Files\PowerShell\7\pwsh.exe",
                    600,
                    "",
                ),
                "863cacfd337d46a7e8cd9242c44912fc0e26c23fed4cb18d1566be780a432ef7",
                "c9e786e7a0ea780eb56bcb6083934aa18295f8b7c9efb19f9eb7665cd31f89be.json",
            ),
            (
                r"\\server\share\repo\GATES.md".to_string(),
                "T1",
                Oracle::new(
                    "type result.txt",
                    "PASS",
                    &text(resolve(Path::new(r"\\server\share\repo"), Path::new("build"))),
                    r"C:\WINDOWS\system32\cmd.exe",
                    1,
                    r"C:\WINDOWS\system32;;C:\tools;",
                ),
                "8cf25cfedfb165a810d7a848d882e67d12b4ea161d6bbad9a991a4d80f643c61",
                "33c1d827f726f205b43443970d7ba87a04e769ea28b5b776b813b58d47b0a8b5.json",
            ),
        ];
        assert_eq!(text(explicit), r"c:\Users\dev\project\gates\leaf.md", "path.win32.resolve keeps the case");
        for (file, gate, oracle, signature, record) in vectors {
            assert!(oracle.to_json().contains(r#""platform":"win32""#));
            assert_eq!(oracle.signature(), signature, "{file} {gate}");
            assert_eq!(oracle.record_name(&file, gate), record, "{file} {gate}");
        }
    }
}
