//! Ledger files on disk: the only module that reads ledgers for parsing and
//! the only one that rewrites them. Reads refuse links, FIFOs and oversize
//! files; rewrites happen under a lock, re-read the current text, apply one
//! pure edit and replace the file atomically (temp file in the same
//! directory, fsync, rename), so a crash leaves the old or the new ledger.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;
use thiserror::Error;

use crate::digest::sha256_hex;

/// Largest ledger accepted, as in the Node tool.
pub const MAX_LEDGER_BYTES: u64 = 8 * 1024 * 1024;

#[derive(Debug, Error)]
pub enum LedgerFileError {
    #[error("no such gate file: {0}")]
    Missing(String),
    #[error("gate ledger must be one unchanged regular single-link file: {0}")]
    NotRegular(String),
    #[error("gate ledger exceeds {MAX_LEDGER_BYTES} bytes: {0}")]
    TooLarge(String),
    #[error("gate ledger changed while it was read: {0}")]
    Changed(String),
    #[error("{0}: line {1}: invalid UTF-8")]
    InvalidUtf8(String, usize),
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> LedgerFileError + '_ {
    move |error| LedgerFileError::Io(path.display().to_string(), error)
}

/// How often a read restarts when a concurrent write-back replaced the file
/// under it.
const READ_ATTEMPTS: usize = 5;

/// Reads a ledger as UTF-8 text without following a final symlink or
/// blocking on a FIFO; hard-linked, oversize or swapped files are refused.
/// A file replaced by another run's atomic rename while it was read is read
/// again, so concurrent runs see the old or the new ledger, never an error.
pub fn read(path: &Path) -> Result<String, LedgerFileError> {
    let mut attempt = 1;
    loop {
        match read_once(path) {
            Err(LedgerFileError::Changed(_)) if attempt < READ_ATTEMPTS => attempt += 1,
            result => return result,
        }
    }
}

fn read_once(path: &Path) -> Result<String, LedgerFileError> {
    let shown = || path.display().to_string();
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits())
        .open(path);
    let mut file = match opened {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Err(LedgerFileError::Missing(shown())),
        Err(error) if error.raw_os_error() == Some(nix::libc::ELOOP) => {
            return Err(LedgerFileError::NotRegular(shown()))
        }
        Err(error) => return Err(LedgerFileError::Io(shown(), error)),
    };
    let before = file.metadata().map_err(io_error(path))?;
    if before.file_type().is_file() && before.nlink() == 0 {
        // Unlinked after we opened it: an atomic replacement just happened.
        return Err(LedgerFileError::Changed(shown()));
    }
    if !before.file_type().is_file() || before.nlink() != 1 {
        return Err(LedgerFileError::NotRegular(shown()));
    }
    if before.len() > MAX_LEDGER_BYTES {
        return Err(LedgerFileError::TooLarge(shown()));
    }
    let mut bytes = Vec::with_capacity(before.len() as usize);
    Read::by_ref(&mut file).take(MAX_LEDGER_BYTES + 1).read_to_end(&mut bytes).map_err(io_error(path))?;
    if bytes.len() as u64 > MAX_LEDGER_BYTES {
        return Err(LedgerFileError::TooLarge(shown()));
    }
    let named = fs::symlink_metadata(path).map_err(io_error(path))?;
    if named.dev() != before.dev() || named.ino() != before.ino() {
        return Err(LedgerFileError::Changed(shown()));
    }
    String::from_utf8(bytes).map_err(|error| {
        let valid = &error.as_bytes()[..error.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        LedgerFileError::InvalidUtf8(shown(), line)
    })
}

/// An exclusive advisory lock serializing every rewrite of one ledger. The
/// lock file lives under `<root>/.unlazy/locks/`, keyed by the ledger's
/// canonical path so different spellings of one file share one lock.
pub struct LedgerLock {
    _file: File,
}

impl LedgerLock {
    pub fn acquire(root: &Path, ledger: &Path) -> Result<LedgerLock, LedgerFileError> {
        let root = fs::canonicalize(root).map_err(io_error(root))?;
        let directory = root.join(".unlazy").join("locks");
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&directory)
            .map_err(io_error(&directory))?;
        let canonical = canonical_target(ledger);
        let name = format!("{}.filelock", &sha256_hex(canonical.as_os_str().as_encoded_bytes())[..24]);
        let path = directory.join(name);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(OFlag::O_NOFOLLOW.bits())
            .open(&path)
            .map_err(io_error(&path))?;
        file.lock().map_err(io_error(&path))?;
        Ok(LedgerLock { _file: file })
    }
}

/// The ledger path with its directory canonicalized but its final name
/// kept, so replacing the file never changes which lock guards it.
fn canonical_target(ledger: &Path) -> PathBuf {
    match (ledger.parent(), ledger.file_name()) {
        (Some(parent), Some(name)) => fs::canonicalize(parent)
            .map(|p| p.join(name))
            .unwrap_or_else(|_| ledger.to_path_buf()),
        _ => ledger.to_path_buf(),
    }
}

/// Replaces `path` with `text` atomically, keeping the file's permissions.
pub fn replace_atomically(path: &Path, text: &str) -> Result<(), LedgerFileError> {
    let directory = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let permissions = fs::metadata(path).map_err(io_error(path))?.permissions();
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(directory)
        .map_err(io_error(directory))?;
    temp.write_all(text.as_bytes()).map_err(io_error(temp.path()))?;
    temp.as_file().set_permissions(permissions).map_err(io_error(path))?;
    temp.as_file().sync_all().map_err(io_error(path))?;
    temp.persist(path).map_err(|e| LedgerFileError::Io(path.display().to_string(), e.error))?;
    // Make the rename itself durable.
    if let Ok(dir) = File::open(directory) {
        let _ = dir.sync_all();
    }
    Ok(())
}
