//! The dispatch state file on disk: the only module that reads or replaces
//! `.unlazy/<scope>/dispatch.json`. Each committed transition leaves an
//! audit line in the scope's status log (through `pipeline`).
//!
//! Reads never follow a symlink, never block on a FIFO, and refuse hard
//! links, oversize files and anything that is not one stable regular file.
//! Updates run under an exclusive file lock in `<root>/.unlazy/locks/`,
//! re-read the current state, apply one pure transition and replace the file
//! atomically (temp file in the same directory, fsync, rename, fsync of the
//! directory), so a crash leaves the old state or the new one.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::error::DispatchError;
use super::model::{Action, Stamp, State, Wave};
use crate::durable::{self, BeneathError, Change, OpenDirectory, ReadRefusal};
use crate::layout::{StateDir, DISPATCH_FILE};
use crate::pipeline;
use crate::state_root;
use crate::target::validate_scope_id;

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

fn scope_directory(root: &Path, scope: &str) -> Result<PathBuf, DispatchError> {
    validate_scope_id(scope, "scope")?;
    Ok(StateDir::new(root).scope(scope))
}

/// The scope's directory held open when it exists, reached from `root`
/// through real directories only: `Ok(None)` when some level is missing,
/// an error when one is a link, a file or anything else.
fn open_existing(root: &Path, path: &Path) -> Result<Option<OpenDirectory>, DispatchError> {
    match OpenDirectory::beneath(root, path) {
        Ok(directory) => Ok(Some(directory)),
        Err(BeneathError::Missing(_)) => Ok(None),
        Err(BeneathError::NotReal(level)) => {
            Err(DispatchError::Invalid(format!("{} must be a real directory, not a link or file", level.display())))
        }
        Err(BeneathError::Io(level, error)) => {
            Err(DispatchError::Invalid(format!("cannot inspect {}: {error}", level.display())))
        }
    }
}

/// The text of the state file in the scope's `directory`, or `None` when
/// there is none.
fn read_state_text(directory: &OpenDirectory) -> Result<Option<String>, DispatchError> {
    let path = directory.join(OsStr::new(DISPATCH_FILE));
    let shown = path.display();
    let invalid = |detail: String| Err(DispatchError::Invalid(detail));
    let read = match directory.read_stable(OsStr::new(DISPATCH_FILE), MAX_STATE_BYTES) {
        Ok(Some(read)) => read,
        Ok(None) => return Ok(None),
        Err(ReadRefusal::TooLarge) => {
            return invalid(format!("dispatch state exceeds {MAX_STATE_BYTES} bytes: {shown}"))
        }
        Err(ReadRefusal::Changed) => return invalid(format!("dispatch state changed while it was read: {shown}")),
        Err(ReadRefusal::Io(error)) => return invalid(format!("cannot read {shown}: {error}")),
        Err(ReadRefusal::Link | ReadRefusal::NotRegular | ReadRefusal::Linked) => {
            return invalid(format!("dispatch state must be one unchanged regular single-link file: {shown}"))
        }
    };
    String::from_utf8(read.bytes).map(Some).map_err(|_| DispatchError::Invalid(format!("{shown}: not valid UTF-8")))
}

/// Reads and validates the scope's state. A scope without a state file
/// (or without a directory yet) has no waves.
pub fn read(root: &Path, scope: &str) -> Result<State, DispatchError> {
    match open_existing(root, &scope_directory(root, scope)?)? {
        Some(directory) => read_in(&directory),
        None => Ok(State::default()),
    }
}

/// The state in the scope's `directory`.
fn read_in(directory: &OpenDirectory) -> Result<State, DispatchError> {
    match read_state_text(directory)? {
        None => Ok(State::default()),
        Some(text) => State::parse(&text).map_err(|detail| {
            DispatchError::Invalid(format!("{}: {detail}", directory.join(OsStr::new(DISPATCH_FILE)).display()))
        }),
    }
}

/// Applies `action` to `wave_id` in the scope's state under the state lock,
/// writes the new state atomically, then appends the audit line while still
/// holding the lock (so the log lists transitions in commit order).
pub fn update(root: &Path, scope: &str, wave_id: &str, action: &Action) -> Result<Committed, DispatchError> {
    let path = scope_directory(root, scope)?;
    let existing = open_existing(root, &path).map_err(|error| DispatchError::Refused(error.detail()))?;
    if existing.is_none() {
        // No scope directory means no waves: a transition that would be
        // refused anyway must not create directories first.
        State::default().apply(wave_id, action, &Stamp::now())?;
    }
    let directory = pipeline::ensure_scope(root, scope)?;
    let name = OsStr::new(DISPATCH_FILE);
    // One lock per state file, named like every lock of this tool.
    let lock = state_root::lock_for(root, &path.join(DISPATCH_FILE))
        .and_then(|lock| lock.acquire())
        .map_err(DispatchError::Lock)?;
    let decide = || -> Result<_, DispatchError> {
        directory.remove_stale_temp_files(name).map_err(DispatchError::StaleTemp)?;
        let mut state = read_in(&directory)?;
        let now = Stamp::now();
        let event = state.apply(wave_id, action, &now)?;
        let wave = state
            .wave(wave_id)
            .cloned()
            .ok_or_else(|| DispatchError::Refused(format!("wave {wave_id} vanished from its own transition")))?;
        Ok(Change::Replace { bytes: state.render().into_bytes(), value: (wave, now, event), mode: 0o600 })
    };
    let audit = |(wave, now, event): (Wave, Stamp, String)| {
        let audit_warning = pipeline::append_status_at(root, scope, now.at(), &event)
            .err()
            .map(|e| format!("state transition committed; audit status append was skipped: {e}"));
        Committed { wave, audit_warning }
    };
    durable::update_locked_then(lock, &directory, name, decide, audit)
        .map_err(|error| error.into_error(DispatchError::Write))
}
