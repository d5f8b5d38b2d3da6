//! The dispatch state file on disk: the only module that reads or replaces
//! `.unlazy/<scope>/dispatch.json` and appends dispatch audit lines to the
//! scope's `status.log`.
//!
//! Reads never follow a symlink, never block on a FIFO, and refuse hard
//! links, oversize files and anything that is not one stable regular file.
//! Updates run under an exclusive file lock in `<root>/.unlazy/locks/`,
//! re-read the current state, apply one pure transition and replace the file
//! atomically (temp file in the same directory, fsync, rename, fsync of the
//! directory), so a crash leaves the old state or the new one.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;

use super::model::{Action, Stamp, State, Wave};
use crate::digest::sha256_hex;
use crate::target::{validate_scope_id, STATE_DIR};

pub const STATE_FILE: &str = "dispatch.json";
pub const STATUS_LOG: &str = "status.log";
/// Largest state file accepted, as in the Node tool.
pub const MAX_STATE_BYTES: u64 = 8 * 1024 * 1024;

/// The result of a committed transition.
#[derive(Debug)]
pub struct Committed {
    /// The wave as it is now on disk.
    pub wave: Wave,
    /// Set when the state was written but its audit line could not be.
    pub audit_warning: Option<String>,
}

fn scope_directory(root: &Path, scope: &str) -> Result<PathBuf, String> {
    validate_scope_id(scope, "scope")?;
    Ok(root.join(STATE_DIR).join(scope))
}

/// Whether `path` is a real directory: `Ok(false)` when it does not exist,
/// an error when it is a link, a file or anything else.
fn real_directory(path: &Path) -> Result<bool, String> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(true),
        Ok(_) => Err(format!("{} must be a real directory, not a link or file", path.display())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(format!("cannot inspect {}: {error}", path.display())),
    }
}

/// Creates `path` (mode 0700) unless it already is a real directory.
fn ensure_directory(path: &Path) -> Result<(), String> {
    if real_directory(path)? {
        return Ok(());
    }
    if let Err(error) = fs::DirBuilder::new().mode(0o700).create(path) {
        if error.kind() != std::io::ErrorKind::AlreadyExists {
            return Err(format!("cannot create {}: {error}", path.display()));
        }
    }
    if real_directory(path)? {
        Ok(())
    } else {
        Err(format!("cannot create {}", path.display()))
    }
}

/// The text of the state file, or `None` when there is none.
fn read_state_text(path: &Path) -> Result<Option<String>, String> {
    let shown = path.display();
    let refused = || format!("dispatch state must be one unchanged regular single-link file: {shown}");
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits())
        .open(path);
    let mut file = match opened {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) if error.raw_os_error() == Some(nix::libc::ELOOP) => return Err(refused()),
        Err(error) => return Err(format!("cannot open {shown}: {error}")),
    };
    let before = file.metadata().map_err(|e| format!("cannot inspect {shown}: {e}"))?;
    if !before.file_type().is_file() || before.nlink() != 1 {
        return Err(refused());
    }
    if before.len() > MAX_STATE_BYTES {
        return Err(format!("dispatch state exceeds {MAX_STATE_BYTES} bytes: {shown}"));
    }
    let mut bytes = Vec::with_capacity(before.len() as usize);
    Read::by_ref(&mut file)
        .take(MAX_STATE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if bytes.len() as u64 > MAX_STATE_BYTES {
        return Err(format!("dispatch state exceeds {MAX_STATE_BYTES} bytes: {shown}"));
    }
    let named = fs::symlink_metadata(path).map_err(|_| format!("dispatch state changed while it was read: {shown}"))?;
    if named.dev() != before.dev() || named.ino() != before.ino() {
        return Err(format!("dispatch state changed while it was read: {shown}"));
    }
    String::from_utf8(bytes).map(Some).map_err(|_| format!("{shown}: not valid UTF-8"))
}

/// Reads and validates the scope's state. A scope without a state file
/// (or without a directory yet) has no waves.
pub fn read(root: &Path, scope: &str) -> Result<State, String> {
    let directory = scope_directory(root, scope)?;
    let invalid = |detail: String| format!("invalid dispatch state: {detail}");
    if !real_directory(&root.join(STATE_DIR)).map_err(invalid)? || !real_directory(&directory).map_err(invalid)? {
        return Ok(State::default());
    }
    let path = directory.join(STATE_FILE);
    match read_state_text(&path).map_err(invalid)? {
        None => Ok(State::default()),
        Some(text) => State::parse(&text).map_err(|detail| invalid(format!("{}: {detail}", path.display()))),
    }
}

/// An exclusive lock on one state file, held until dropped. Lock files are
/// named like the ledger locks (a hash of the canonical target path), so a
/// repository reached through different spellings shares one lock.
struct StateLock {
    _file: File,
}

impl StateLock {
    fn acquire(root: &Path, scope: &str) -> Result<StateLock, String> {
        let canonical = fs::canonicalize(root).map_err(|e| format!("cannot resolve {}: {e}", root.display()))?;
        let directory = canonical.join(STATE_DIR).join("locks");
        ensure_directory(&directory)?;
        let target = canonical.join(STATE_DIR).join(scope).join(STATE_FILE);
        let name = format!("{}.filelock", &sha256_hex(target.as_os_str().as_encoded_bytes())[..24]);
        let path = directory.join(name);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(OFlag::O_NOFOLLOW.bits())
            .open(&path)
            .map_err(|e| format!("cannot open lock {}: {e}", path.display()))?;
        file.lock().map_err(|e| format!("cannot lock {}: {e}", path.display()))?;
        Ok(StateLock { _file: file })
    }
}

fn write_atomically(path: &Path, text: &str) -> Result<(), String> {
    let directory = path.parent().expect("the state file lives in its scope directory");
    let failed = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{STATE_FILE}."))
        .suffix(".tmp")
        .tempfile_in(directory)
        .map_err(failed)?;
    temp.write_all(text.as_bytes()).map_err(failed)?;
    temp.as_file().set_permissions(fs::Permissions::from_mode(0o600)).map_err(failed)?;
    temp.as_file().sync_all().map_err(failed)?;
    temp.persist(path).map_err(|e| failed(e.error))?;
    File::open(directory).and_then(|dir| dir.sync_all()).map_err(failed)
}

/// Appends one line to the scope's status log: never through a link, never
/// to a hard-linked or replaced file, one `write` per line so concurrent
/// appenders never interleave inside a line.
fn append_status(directory: &Path, line: &str) -> Result<(), String> {
    let path = directory.join(STATUS_LOG);
    let shown = path.display();
    let refused = || format!("refusing non-file or linked status log {shown}");
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits())
        .open(&path);
    let mut file = match file {
        Ok(file) => file,
        Err(error) if error.raw_os_error() == Some(nix::libc::ELOOP) => return Err(refused()),
        Err(error) => return Err(format!("cannot open {shown}: {error}")),
    };
    let opened = file.metadata().map_err(|e| format!("cannot inspect {shown}: {e}"))?;
    let named = fs::symlink_metadata(&path).map_err(|e| format!("cannot inspect {shown}: {e}"))?;
    if !opened.file_type().is_file() || opened.nlink() != 1 || named.dev() != opened.dev() || named.ino() != opened.ino() {
        return Err(refused());
    }
    let mut record = line.replace(['\r', '\n'], " ");
    record.push('\n');
    file.write_all(record.as_bytes()).map_err(|e| format!("cannot append to {shown}: {e}"))?;
    file.sync_all().map_err(|e| format!("cannot sync {shown}: {e}"))
}

/// Applies `action` to `wave_id` in the scope's state under the state lock,
/// writes the new state atomically, then appends the audit line while still
/// holding the lock (so the log lists transitions in commit order).
pub fn update(root: &Path, scope: &str, wave_id: &str, action: &Action) -> Result<Committed, String> {
    let directory = scope_directory(root, scope)?;
    if !real_directory(&root.join(STATE_DIR))? || !real_directory(&directory)? {
        // No scope directory means no waves: a transition that would be
        // refused anyway must not create directories first.
        State::default().apply(wave_id, action, &Stamp::now())?;
    }
    ensure_directory(&root.join(STATE_DIR))?;
    ensure_directory(&directory)?;
    let _lock = StateLock::acquire(root, scope)?;
    let path = directory.join(STATE_FILE);
    let mut state = read(root, scope)?;
    let now = Stamp::now();
    let event = state.apply(wave_id, action, &now)?;
    write_atomically(&path, &state.render())?;
    let wave = state.wave(wave_id).cloned().expect("an applied transition keeps its wave");
    let audit_warning = append_status(&directory, &format!("{} {event}", now.text()))
        .err()
        .map(|e| format!("state transition committed; audit status append was skipped: {e}"));
    Ok(Committed { wave, audit_warning })
}
