//! The Stop hook's loop-guard state: per session, the digest of the last
//! blocked semantic state and how many consecutive stops it has blocked.
//!
//! One JSON file per ledger set, at the Node tool's paths and in its schema
//! (`{"schema":1,"sessions":{"<key>":{"hash","blocks","updatedAt"}}}`):
//! `.unlazy/<scope>/hook-state.json`, or `.unlazy-hook-state.json` at the
//! root for a legacy ledger. Every read-modify-write happens under an
//! exclusive lock in `.unlazy/locks/` and replaces the file atomically, so
//! concurrent hooks never lose a count and a crash never leaves half a file.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::digest::sha256_hex;
use crate::durable::{self, Change, Entry, FileLock, OpenDirectory, ReadRefusal};

/// Consecutive blocks without progress before the hook lets a stop through.
pub const MAX_BLOCKS: u64 = 6;
/// Sessions kept per state file; the least recently updated are dropped.
const MAX_SESSIONS: usize = 64;
const MAX_STATE_BYTES: u64 = 1024 * 1024;
const LOCK_WAIT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionEntry {
    pub hash: String,
    pub blocks: u64,
    #[serde(rename = "updatedAt")]
    pub updated_at: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HookState {
    schema: u32,
    sessions: BTreeMap<String, SessionEntry>,
}

impl Default for HookState {
    fn default() -> Self {
        HookState { schema: 1, sessions: BTreeMap::new() }
    }
}

fn is_key(text: &str) -> bool {
    text.len() == 24 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

impl HookState {
    /// Reads state text, keeping only well-formed entries; anything else
    /// (corrupt JSON, another schema) starts from empty.
    pub fn from_json(text: &str) -> HookState {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
            return HookState::default();
        };
        let (Some(1), Some(sessions)) =
            (value.get("schema").and_then(|s| s.as_u64()), value.get("sessions").and_then(|s| s.as_object()))
        else {
            return HookState::default();
        };
        let sessions = sessions
            .iter()
            .filter(|(key, _)| is_key(key))
            .filter_map(|(key, entry)| Some((key.clone(), serde_json::from_value::<SessionEntry>(entry.clone()).ok()?)))
            .filter(|(_, entry)| is_key(&entry.hash) && humantime::parse_rfc3339_weak(&entry.updated_at).is_ok())
            .collect();
        HookState { schema: 1, sessions }
    }

    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Counts one block of `hash` for `key` and returns the consecutive
    /// count: a new semantic state starts again at one.
    pub fn record_block(&mut self, key: &str, hash: &str, now: &str) -> u64 {
        let entry = self.sessions.entry(key.to_string()).or_insert_with(|| SessionEntry {
            hash: hash.to_string(),
            blocks: 0,
            updated_at: String::new(),
        });
        if entry.hash != hash {
            entry.hash = hash.to_string();
            entry.blocks = 0;
        }
        entry.blocks += 1;
        entry.updated_at = now.to_string();
        let blocks = entry.blocks;
        if self.sessions.len() > MAX_SESSIONS {
            let mut by_age: Vec<(String, String)> =
                self.sessions.iter().map(|(k, e)| (e.updated_at.clone(), k.clone())).collect();
            by_age.sort();
            for (_, stale) in by_age.into_iter().take(self.sessions.len() - MAX_SESSIONS) {
                self.sessions.remove(&stale);
            }
        }
        blocks
    }

    pub fn forget(&mut self, key: &str) -> bool {
        self.sessions.remove(key).is_some()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }
}

/// Where a ledger set keeps its hook state.
pub fn state_path(root: &Path, scope: Option<&str>) -> PathBuf {
    match scope {
        Some(scope) => crate::layout::StateDir::new(root).hook_state(scope),
        None => crate::layout::StateDir::new(root).legacy_hook_state(),
    }
}

/// The session's key: counters of different sessions, and of one session
/// in different scopes, never mix.
pub fn session_key(session: &str, scope: Option<&str>) -> String {
    sha256_hex(format!("{session}\0{}", scope.unwrap_or("unscoped")))[..24].to_string()
}

/// The exclusive lock that serializes every update of one state file,
/// waited for at most `LOCK_WAIT` so a wedged peer cannot hang the agent.
fn lock_state(root: &Path, path: &Path) -> Result<FileLock, HookStateError> {
    crate::state_root::lock_for(root, path)
        .and_then(|lock| lock.acquire_within(LOCK_WAIT))
        .map_err(HookStateError::Lock)
}

/// The state file's directory held open (reached from `root` through real
/// directories only) and its name.
fn open_state<'p>(root: &Path, path: &'p Path) -> Result<(OpenDirectory, &'p OsStr), HookStateError> {
    let directory = OpenDirectory::beneath(root, durable::parent_directory(path))
        .map_err(|error| HookStateError::Directory(error.into()))?;
    let name = path.file_name().ok_or_else(|| HookStateError::NotRegular(path.to_path_buf()))?;
    Ok((directory, name))
}

/// Why the Stop hook's progress could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum HookStateError {
    #[error("{0}")]
    Lock(#[source] std::io::Error),
    #[error("{0}")]
    Directory(#[source] std::io::Error),
    #[error("{}: {source}", .path.display())]
    Read { path: std::path::PathBuf, source: std::io::Error },
    #[error("{} must be one unchanged regular single-link file", .0.display())]
    NotRegular(std::path::PathBuf),
    #[error("cannot remove stale temp files: {0}")]
    StaleTemp(#[source] std::io::Error),
    /// The replacement write (the error names the file).
    #[error("cannot write {0}")]
    Write(#[source] std::io::Error),
}

/// Reads the state file `name` in `directory` as one stable regular file.
/// `Ok(None)` when it does not exist; an oversized file starts over rather
/// than trapping.
fn read_state(directory: &OpenDirectory, name: &OsStr) -> Result<Option<HookState>, HookStateError> {
    match directory.read_stable(name, MAX_STATE_BYTES) {
        Ok(Some(read)) => Ok(Some(HookState::from_json(&String::from_utf8_lossy(&read.bytes)))),
        Ok(None) => Ok(None),
        Err(ReadRefusal::TooLarge) => Ok(Some(HookState::default())),
        Err(ReadRefusal::Io(source)) => Err(HookStateError::Read { path: directory.join(name), source }),
        Err(_) => Err(HookStateError::NotRegular(directory.join(name))),
    }
}

fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// Counts one block for the session under the lock; returns the
/// consecutive count for this semantic state.
pub fn record_block(root: &Path, path: &Path, key: &str, hash: &str) -> Result<u64, HookStateError> {
    let (directory, name) = open_state(root, path)?;
    let lock = lock_state(root, path)?;
    durable::update_locked(lock, &directory, name, || {
        directory.remove_stale_temp_files(name).map_err(HookStateError::StaleTemp)?;
        let mut state = read_state(&directory, name)?.unwrap_or_default();
        let blocks = state.record_block(key, hash, &now());
        Ok(Change::Replace { value: blocks, bytes: state.to_json().into_bytes(), mode: 0o600 })
    })
    .map_err(|error| error.into_error(HookStateError::Write))
}

/// Forgets the session once its work is complete; the file goes away with
/// its last session. Best effort: cleanup must never trap a finished session.
pub fn clear_session(root: &Path, path: &Path, key: &str) {
    let Ok((directory, name)) = open_state(root, path) else {
        return;
    };
    if !matches!(directory.entry(name), Ok(Entry::File)) {
        return;
    }
    let Ok(lock) = lock_state(root, path) else {
        return;
    };
    let _ = durable::update_locked(lock, &directory, name, || -> Result<_, HookStateError> {
        let _ = directory.remove_stale_temp_files(name);
        let Ok(Some(mut state)) = read_state(&directory, name) else {
            return Ok(Change::Keep(()));
        };
        Ok(if !state.forget(key) {
            Change::Keep(())
        } else if state.is_empty() {
            Change::Remove { value: (), names: vec![name.to_os_string()] }
        } else {
            Change::Replace { value: (), bytes: state.to_json().into_bytes(), mode: 0o600 }
        })
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_reset_on_progress_and_sessions_are_bounded() {
        let mut state = HookState::default();
        let key = session_key("s1", None);
        let (a, b) = ("a".repeat(24), "b".repeat(24));
        assert_eq!(state.record_block(&key, &a, "2026-01-01T00:00:00.000Z"), 1);
        assert_eq!(state.record_block(&key, &a, "2026-01-01T00:00:01.000Z"), 2);
        assert_eq!(state.record_block(&key, &b, "2026-01-01T00:00:02.000Z"), 1);
        for i in 0..100 {
            state.record_block(
                &session_key(&format!("other{i}"), None),
                &a,
                &format!("2026-01-02T00:00:{:02}.{:03}Z", i % 60, i),
            );
        }
        assert_eq!(state.sessions.len(), MAX_SESSIONS);
        assert!(!state.sessions.contains_key(&key), "the oldest session is dropped");
        assert_ne!(session_key("s1", Some("api")), session_key("s1", None));
    }

    #[test]
    fn reads_node_state_and_drops_malformed_entries() {
        let key = session_key("s", None);
        let text = format!(
            r#"{{"schema":1,"sessions":{{"{key}":{{"hash":"{}","blocks":3,"updatedAt":"2026-08-01T10:00:00.000Z"}},"bad":{{"hash":"x","blocks":1,"updatedAt":"x"}},"{}":{{"hash":"{}","blocks":-1,"updatedAt":"2026-08-01T10:00:00.000Z"}}}}}}"#,
            "c".repeat(24),
            "d".repeat(24),
            "e".repeat(24)
        );
        let mut state = HookState::from_json(&text);
        assert_eq!(state.sessions.len(), 1);
        assert_eq!(state.record_block(&key, &"c".repeat(24), &now()), 4);
        assert!(
            HookState::from_json("[1]").is_empty() && HookState::from_json(r#"{"schema":2,"sessions":{}}"#).is_empty()
        );
        let round = HookState::from_json(&state.to_json());
        assert_eq!(round, state);
    }
}
