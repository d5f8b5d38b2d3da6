//! Ledger files on disk: the only module that reads ledgers for parsing and
//! the only one that rewrites them. Reads refuse links, FIFOs and oversize
//! files; rewrites happen under a lock, re-read the current text, apply one
//! pure edit and replace the file atomically (temp file in the same
//! directory, fsync, rename), so a crash leaves the old or the new ledger.

use std::fs;
use std::path::Path;

use thiserror::Error;

use crate::durable::{self, BeneathError, Change, OpenDirectory, ReadRefusal, StableRead};
use crate::ledger::{parse, Document, Gate, LineEdits, MAX_LEDGER_BYTES};

#[derive(Debug, Error)]
pub enum LedgerFileError {
    #[error("no such gate file: {0}")]
    Missing(String),
    #[error("gate ledger must be one unchanged regular single-link file: {0}")]
    NotRegular(String),
    #[error("gate ledger exceeds {MAX_LEDGER_BYTES} bytes: {0}")]
    TooLarge(String),
    #[error("write-back would grow the gate ledger past the {MAX_LEDGER_BYTES}-byte read limit; left unchanged: {0}")]
    WouldGrowTooLarge(String),
    #[error("gate ledger changed while it was read: {0}")]
    Changed(String),
    #[error("{0}:{1}: invalid UTF-8")]
    InvalidUtf8(String, usize),
    #[error("{0} must be a real directory")]
    LinkedDirectory(String),
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
}

impl LedgerFileError {
    /// The printed error line: at the offending line for invalid UTF-8 (so
    /// editors link it), else `gate-check: error: message`.
    pub fn printed_line(&self) -> String {
        match self {
            LedgerFileError::InvalidUtf8(path, line) => {
                crate::diagnostic::Diagnostic::new(path.clone(), Some(*line), "invalid UTF-8").error_line()
            }
            other => crate::diagnostic::error_line(&other.to_string()),
        }
    }
}

/// How often a read restarts when a concurrent write-back replaced the file
/// under it.
const READ_ATTEMPTS: usize = 5;

/// Reads a ledger as UTF-8 text without following a final symlink or
/// blocking on a FIFO; hard-linked, oversize or swapped files are refused.
/// A file replaced by another run's atomic rename while it was read is read
/// again, so concurrent runs see the old or the new ledger, never an error.
pub fn read(path: &Path) -> Result<String, LedgerFileError> {
    read_at_most(path, MAX_LEDGER_BYTES)
}

/// `read`, with a ledger over `max_bytes` (or the size limit) refused as
/// too large: for a reader that spends less than a run may.
pub fn read_at_most(path: &Path, max_bytes: u64) -> Result<String, LedgerFileError> {
    read_retrying(path, || durable::read_stable(path, max_bytes.min(MAX_LEDGER_BYTES))).map(|(text, _)| text)
}

/// `read`, with each attempt made by `attempt`; also returns the metadata
/// of the file read.
fn read_retrying(
    path: &Path,
    attempt: impl Fn() -> Result<Option<StableRead>, ReadRefusal>,
) -> Result<(String, fs::Metadata), LedgerFileError> {
    let mut attempts = 1;
    loop {
        match read_once(path, attempt()) {
            Err(LedgerFileError::Changed(_)) if attempts < READ_ATTEMPTS => attempts += 1,
            result => return result,
        }
    }
}

fn read_once(
    path: &Path,
    read: Result<Option<StableRead>, ReadRefusal>,
) -> Result<(String, fs::Metadata), LedgerFileError> {
    let shown = || path.display().to_string();
    let read = match read {
        Ok(Some(read)) => read,
        Ok(None) => return Err(LedgerFileError::Missing(shown())),
        Err(ReadRefusal::Changed) => return Err(LedgerFileError::Changed(shown())),
        Err(ReadRefusal::TooLarge) => return Err(LedgerFileError::TooLarge(shown())),
        Err(ReadRefusal::Io(error)) => return Err(LedgerFileError::Io(shown(), error)),
        Err(ReadRefusal::Link | ReadRefusal::NotRegular | ReadRefusal::Linked) => {
            return Err(LedgerFileError::NotRegular(shown()))
        }
    };
    let metadata = read.metadata;
    let text = String::from_utf8(read.bytes).map_err(|error| {
        let valid = &error.as_bytes()[..error.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        LedgerFileError::InvalidUtf8(shown(), line)
    })?;
    Ok((text, metadata))
}

/// One change to a gate: its checkbox and its EVIDENCE value.
pub struct Edit {
    pub gate: Gate,
    pub checked: bool,
    pub evidence: String,
}

/// The ledger's directory, held open for the write: reached from `root`
/// through real directories only (a level swapped for a link, by a check
/// running meanwhile, would send the rewrite wherever the link points), and
/// never a link itself, even when it is the root (the Node tool refuses
/// that too). The root and its ancestors may be reached through links.
fn open_directory(root: &Path, ledger: &Path) -> Result<OpenDirectory, LedgerFileError> {
    let directory = durable::parent_directory(ledger);
    if fs::symlink_metadata(directory).is_ok_and(|meta| meta.file_type().is_symlink()) {
        return Err(LedgerFileError::LinkedDirectory(directory.display().to_string()));
    }
    OpenDirectory::beneath(root, directory).map_err(|error| match error {
        BeneathError::NotReal(level) => LedgerFileError::LinkedDirectory(level.display().to_string()),
        BeneathError::Missing(level) => {
            LedgerFileError::Io(level.display().to_string(), std::io::ErrorKind::NotFound.into())
        }
        BeneathError::Io(level, error) => LedgerFileError::Io(level.display().to_string(), error),
    })
}

/// The ledger's file name.
fn file_name(ledger: &Path) -> Result<&std::ffi::OsStr, LedgerFileError> {
    ledger.file_name().ok_or_else(|| LedgerFileError::Missing(ledger.display().to_string()))
}

/// Checks, before anything is approved or run and without creating
/// anything, that results can be written back to `ledger`: its directory is
/// a real directory below `root` (see `open_directory`) and writable, and
/// its lock directory under `root` exists as real directories or can be
/// created.
pub fn check_write_back(root: &Path, ledger: &Path) -> Result<(), LedgerFileError> {
    let directory = open_directory(root, ledger)?;
    directory.check_writable().map_err(|error| LedgerFileError::Io(directory.path().display().to_string(), error))?;
    crate::state_root::check_lock_directory(root).map_err(|error| LedgerFileError::Io("ledger lock".into(), error))
}

#[derive(Debug, Error)]
pub enum UpdateError {
    #[error(transparent)]
    File(#[from] LedgerFileError),
    #[error("fresh ledger became invalid: {0}")]
    Invalid(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The ledger transaction: under the ledger's lock (keyed by its canonical
/// path under `<root>/.unlazy/locks/`), re-read and parse the ledger as it
/// is now, let `decide` judge against that document, and apply its edits
/// in one atomic replacement that keeps the file's owner, group, mode and
/// extended attributes. No edits, no write. Holding the lock also proves
/// that no temp file of an earlier, killed rewrite is in use, so those are
/// removed first. `known` is a document the caller parsed from this file
/// before: when the bytes under the lock are still its text, it is judged
/// as it is instead of being parsed again.
pub fn update<T>(
    root: &Path,
    path: &Path,
    known: Option<&Document>,
    decide: impl FnOnce(&Document) -> (T, Vec<Edit>),
) -> Result<T, UpdateError> {
    let directory = open_directory(root, path)?;
    let name = file_name(path)?;
    let lock = crate::state_root::lock_for(root, path)?.acquire()?;
    directory.remove_stale_temp_files(name)?;
    durable::update_locked(lock, &directory, name, || {
        // Read through the directory held open: the text judged is the
        // text of the file replaced.
        let (text, original) = read_retrying(path, || directory.read_stable(name, MAX_LEDGER_BYTES))?;
        let parsed;
        let document = match known {
            Some(known) if known.source() == text => known,
            _ => {
                let outcome = parse(text);
                if !outcome.errors.is_empty() {
                    let joined: Vec<String> = outcome.errors.iter().map(ToString::to_string).collect();
                    return Err(UpdateError::Invalid(joined.join("; ")));
                }
                parsed = outcome.document;
                &parsed
            }
        };
        let (value, edits) = decide(document);
        if edits.is_empty() {
            return Ok(Change::Keep(value));
        }
        let mut line_edits = LineEdits::default();
        for edit in &edits {
            line_edits.set_checked(document, edit.gate.line(), edit.checked);
            line_edits.set_evidence(document, &edit.gate, &edit.evidence);
        }
        let bytes = document.render_with(&line_edits).into_bytes();
        // A ledger no mode could read again is worse than one left unchanged.
        if bytes.len() as u64 > MAX_LEDGER_BYTES {
            return Err(LedgerFileError::WouldGrowTooLarge(path.display().to_string()).into());
        }
        Ok(Change::ReplaceKeeping { value, bytes, original })
    })
    .map_err(|error| error.into_error(UpdateError::Io))
}

/// Creates the ledger `name` in `directory` with `text` (mode 0644, owned
/// like the directory), written whole and never over anything: false when
/// something already has that name, which is left as it is.
pub fn create(directory: &Path, name: &str, text: &str) -> Result<bool, LedgerFileError> {
    let shown = directory.join(name).display().to_string();
    let open = OpenDirectory::open(directory).map_err(|error| LedgerFileError::Io(shown.clone(), error))?;
    open.write_new(std::ffi::OsStr::new(name), text.as_bytes(), 0o644)
        .map_err(|error| LedgerFileError::Io(shown, error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unchanged_ledger_is_judged_as_the_caller_parsed_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("GATES.md");
        fs::write(&path, "- [ ] A: a\n  CHECK: c\n  EXPECT: e\n").unwrap();
        let known = parse(read(&path).unwrap()).document;
        let judge = |document: &Document| (std::ptr::eq(document, &known), document.gates[0].checked());

        let edit = Edit { gate: known.gates[0].clone(), checked: true, evidence: "seen".into() };
        let (reused, _) = update(dir.path(), &path, Some(&known), |d| (judge(d), vec![edit])).unwrap();
        assert!(reused, "the bytes under the lock were the known text");
        assert_eq!(fs::read_to_string(&path).unwrap(), "- [x] A: a\n  CHECK: c\n  EXPECT: e\n  EVIDENCE: seen\n");

        let (reused, checked) = update(dir.path(), &path, Some(&known), |d| (judge(d), Vec::new())).unwrap();
        assert!(!reused && checked, "a changed ledger is parsed as it is now");
    }
}
