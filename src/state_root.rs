//! The `.unlazy/` directory of a repository on disk: creating it (and its
//! scope and lock directories) as real directories inside the root, and the
//! lock file that guards each state file. When gate-check is the one that
//! creates `.unlazy/`, it also writes `.unlazy/.gitignore` covering only its
//! own machine-local state, so the first run does not leave untracked lock
//! files behind. A `.unlazy/` that already exists (made by a user, an agent
//! or the Node tool) is never given one, and an existing ignore file is
//! never replaced.

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};

use crate::durable::{FileLock, LockFile, OpenDirectory};
use crate::layout::{IGNORE_FILE, LOCKS_DIR, STATE_DIR};

/// Ledgers, plans, the status log and dispatch state stay visible to version
/// control: a pipeline's ledgers may be meant to be committed, and a
/// `--status --scope` in CI judges dispatch waves from the committed state.
pub const IGNORE_TEXT: &str = "\
# Written by gate-check when it created this directory; it never rewrites it.
# Ignored: machine-local state (locks and ownership leases, session bindings,
# Stop-hook progress, interrupted atomic writes). Not ignored: ledgers, plans,
# status logs and dispatch state. Add a line `*` to ignore everything here.
/locks/
/*/session
/*/hook-state.json
*.tmp
";

fn canonical(root: &Path) -> io::Result<PathBuf> {
    crate::durable::real_path(root)
        .map_err(|error| io::Error::new(error.kind(), format!("{}: {error}", root.display())))
}

/// `<canonical root>/.unlazy`, held open: created private (0700, with its
/// ignore file, both given to the repository's owner) when missing, and
/// refused unless it is a real directory, so a planted link is refused
/// before anything is created through it. A `.unlazy/` this call did not
/// create never gets an ignore file.
fn state_directory(root: &Path) -> io::Result<OpenDirectory> {
    let root = OpenDirectory::open(&canonical(root)?)?;
    let (state, created) = root.create_child(OsStr::new(STATE_DIR))?;
    if created {
        // Someone may have written one in the instant since the directory
        // appeared: theirs stays.
        state.write_new(OsStr::new(IGNORE_FILE), IGNORE_TEXT.as_bytes(), 0o600)?;
    }
    Ok(state)
}

/// `<canonical root>/.unlazy/locks`, made like `state_directory`.
pub fn lock_directory(root: &Path) -> io::Result<OpenDirectory> {
    Ok(state_directory(root)?.create_child(OsStr::new(LOCKS_DIR))?.0)
}

/// `<canonical root>/.unlazy/<scope>`, made like `state_directory`.
pub fn scope_directory(root: &Path, scope: &str) -> io::Result<OpenDirectory> {
    Ok(state_directory(root)?.create_child(OsStr::new(scope))?.0)
}

/// Checks, without creating anything, that `lock_directory(root)` can
/// succeed.
pub fn check_lock_directory(root: &Path) -> io::Result<()> {
    let root = OpenDirectory::open(&canonical(root)?)?;
    Ok(root.check_creatable(&[OsStr::new(STATE_DIR), OsStr::new(LOCKS_DIR)])?)
}

/// The lock file guarding `target`: `.unlazy/locks/<24 hex>.filelock`,
/// with the lock directory made when missing.
pub fn lock_for(root: &Path, target: &Path) -> io::Result<LockFile> {
    Ok(LockFile::new(lock_directory(root)?, FileLock::name_for(target)))
}

/// The directory `directory` below `root`, held open when it exists
/// (reached through real directories only; see `OpenDirectory::beneath`);
/// `None` when some level of it is missing.
pub fn existing(root: &Path, directory: &Path) -> io::Result<Option<OpenDirectory>> {
    match OpenDirectory::beneath(root, directory) {
        Ok(directory) => Ok(Some(directory)),
        Err(crate::durable::BeneathError::Missing(_)) => Ok(None),
        Err(error) => Err(error.into()),
    }
}
