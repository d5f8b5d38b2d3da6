//! Helpers for the core binary-level tests (parser, cli, approval, runner,
//! evidence): independent re-computations of the documented formats, so a
//! test never trusts the code it checks.

use sha2::{Digest, Sha256};

pub fn sha256_hex(data: impl AsRef<[u8]>) -> String {
    Sha256::digest(data.as_ref()).iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of the compact JSON `["unlazy.gate-definition",1,CHECK,EXPECT,CWD|null]`.
pub fn definition_digest(check: &str, expect: &str, cwd: Option<&str>) -> String {
    let json = serde_json::to_string(&("unlazy.gate-definition", 1, check, expect, cwd)).unwrap();
    sha256_hex(json)
}

/// What separates PATH entries here.
pub const PATH_DELIMITER: char = if cfg!(windows) { ';' } else { ':' };

/// Node's `process.platform` for this build.
pub const PLATFORM: &str = if cfg!(windows) {
    "win32"
} else if cfg!(target_os = "macos") {
    "darwin"
} else {
    "linux"
};

/// `<12 hex of sha256(PATH)>/<N> entries`.
pub fn path_summary(path: &str) -> String {
    let entries = if path.is_empty() { 0 } else { path.split(PATH_DELIMITER).count() };
    format!("{}/{} entries", &sha256_hex(path)[..12], entries)
}

/// The `tree-sha256=` field of evidence proven on a tree with nothing in
/// its scope (the SHA-256 of no bytes).
pub const EMPTY_TREE: &str = "; tree-sha256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// The v1 success evidence for a definition and canonical output.
pub fn success_evidence(digest: &str, output: &str, shell: &str, cwd: &str, path: &str) -> String {
    format!(
        "automatic-evidence=v1; definition-sha256={digest}; exit=0; EXPECT=matched; output-sha256={}; \
         output-bytes={}; shell={shell}; cwd={cwd}; path={}",
        sha256_hex(output),
        output.len(),
        path_summary(path)
    )
}

/// The compact oracle JSON the Node tool signs, keys in its order.
pub fn oracle_json(check: &str, expect: &str, cwd: &str, shell: &str, timeout_secs: u64, path: &str) -> String {
    let s = |v: &str| serde_json::to_string(v).unwrap();
    format!(
        "{{\"schema\":1,\"check\":{},\"expect\":{},\"cwd\":{},\"shell\":{},\"timeoutMs\":{},\
         \"maxOutputBytes\":1048576,\"regexTimeoutMs\":250,\"regexStartupTimeoutMs\":5000,\
         \"maxRegexWorkers\":4,\"platform\":\"{PLATFORM}\",\"path\":{}}}",
        s(check),
        s(expect),
        s(cwd),
        s(shell),
        timeout_secs * 1000,
        s(path)
    )
}

/// `(record file name, signature)` for one approval.
pub fn record_name(ledger: &str, gate: &str, oracle_json: &str) -> (String, String) {
    let signature = sha256_hex(oracle_json);
    let name = format!("{}.json", sha256_hex(format!("{ledger}\0{gate}\0{signature}")));
    (name, signature)
}

/// Lines of `text` with their terminators, so comparisons see line endings.
pub fn lines_with_endings(text: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, &b) in text.iter().enumerate() {
        if b == b'\n' {
            out.push(text[start..=i].to_vec());
            start = i + 1;
        }
    }
    if start < text.len() {
        out.push(text[start..].to_vec());
    }
    out
}

/// True once `/proc/PID` is gone or a zombie, polling up to `limit`.
#[cfg(unix)]
pub fn process_gone(pid: u32, limit: std::time::Duration) -> bool {
    use std::fs;
    use std::time::{Duration, Instant};
    let deadline = Instant::now() + limit;
    loop {
        match fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(stat) => {
                let state = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next());
                if state == Some("Z") {
                    return true;
                }
            }
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(unix)]
pub fn mode_of(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}
