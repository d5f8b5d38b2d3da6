//! The `.unlazy/` directory of a repository on disk: creating it (and its
//! scope and lock directories) as real directories inside the root, and the
//! lock file that guards each state file. When gate-check is the one that
//! creates `.unlazy/`, it also writes `.unlazy/.gitignore` covering only its
//! own machine-local state, so the first run does not leave untracked lock
//! files behind. A `.unlazy/` that already exists (made by a user, an agent
//! or the Node tool) is never given one, and an existing ignore file is
//! never replaced.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use crate::durable::{self, FileLock};
use crate::layout::{StateDir, IGNORE_FILE};

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

fn with_path(path: &Path) -> impl FnOnce(io::Error) -> io::Error + '_ {
    move |error| io::Error::new(error.kind(), format!("{}: {error}", path.display()))
}

/// Makes sure `<root>/.unlazy` exists, creating it 0700 when missing; a
/// directory this call creates also gets the ignore file, written whole (a
/// temp file linked into place) so no reader sees part of it.
fn create(root: &Path) -> io::Result<()> {
    let state = StateDir::new(root).path();
    match fs::DirBuilder::new().mode(0o700).create(&state) {
        Ok(()) => write_ignore_file(&state),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(with_path(&state)(error)),
    }
}

fn write_ignore_file(state: &Path) -> io::Result<()> {
    let path = state.join(IGNORE_FILE);
    let mut temp =
        tempfile::Builder::new().prefix(".gitignore.").suffix(".tmp").tempfile_in(state).map_err(with_path(&path))?;
    temp.write_all(IGNORE_TEXT.as_bytes()).map_err(with_path(&path))?;
    temp.as_file().sync_all().map_err(with_path(&path))?;
    match temp.persist_noclobber(&path) {
        Ok(_) => Ok(()),
        // Someone wrote one in the instant since the directory appeared: theirs stays.
        Err(error) if error.error.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(with_path(&path)(error.error)),
    }
}

/// `<canonical root>/.unlazy`, created private (with its ignore file) when
/// missing, and refused unless it is a real directory: a planted link is
/// refused before anything is created through it. What this process creates
/// belongs to the owner of the directory it lives in, so a run as root
/// leaves no state the repository's owner cannot use.
pub fn state_directory(root: &Path) -> io::Result<PathBuf> {
    state_directory_of(&canonical(root)?)
}

fn canonical(root: &Path) -> io::Result<PathBuf> {
    fs::canonicalize(root).map_err(with_path(root))
}

/// `state_directory` of a root already canonical.
fn state_directory_of(root: &Path) -> io::Result<PathBuf> {
    let state = StateDir::new(root).path();
    match fs::symlink_metadata(&state) {
        Ok(_) => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            // Created with its ignore file; both given to the repository's owner.
            create(root)?;
            durable::give_to_owner_of(&state, root)?;
            let ignore = state.join(IGNORE_FILE);
            if fs::symlink_metadata(&ignore).is_ok_and(|meta| meta.is_file()) {
                durable::give_to_owner_of(&ignore, root)?;
            }
        }
        Err(error) => return Err(with_path(&state)(error)),
    }
    durable::ensure_real_directory(root, &state, root)?;
    Ok(state)
}

/// `<canonical root>/.unlazy/locks`, made like `state_directory`.
pub fn lock_directory(root: &Path) -> io::Result<PathBuf> {
    let root = canonical(root)?;
    let state = state_directory_of(&root)?;
    let directory = StateDir::new(&root).locks();
    durable::ensure_real_directory(&root, &directory, &state)?;
    Ok(directory)
}

/// `<canonical root>/.unlazy/<scope>`, made like `state_directory`.
pub fn scope_directory(root: &Path, scope: &str) -> io::Result<PathBuf> {
    let state = state_directory(root)?;
    let directory = state.join(scope);
    durable::ensure_real_directory(root, &directory, &state)?;
    Ok(directory)
}

/// Checks, without creating anything, that `lock_directory(root)` can
/// succeed.
pub fn check_lock_directory(root: &Path) -> io::Result<()> {
    let root = canonical(root)?;
    let paths = StateDir::new(&root);
    let (state, locks) = (paths.path(), paths.locks());
    durable::check_creatable(&root, &[(&state, &root), (&locks, &state)])
}

/// The lock file guarding `target`: `.unlazy/locks/<24 hex>.filelock`,
/// with the lock directory made when missing.
pub fn lock_for(root: &Path, target: &Path) -> io::Result<PathBuf> {
    Ok(lock_directory(root)?.join(FileLock::name_for(target)))
}
