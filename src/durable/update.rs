//! The locked read-modify-write every state file uses.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;

use super::directory::OpenDirectory;

/// Why a locked update failed: `decide` refused (its own error), or the
/// write it decided on failed.
#[derive(Debug)]
pub enum UpdateError<E> {
    Decide(E),
    Write(io::Error),
}

impl<E> UpdateError<E> {
    /// One error of the caller's type, a failed write turned into it by `write`.
    pub fn into_error(self, write: impl FnOnce(io::Error) -> E) -> E {
        match self {
            UpdateError::Decide(error) => error,
            UpdateError::Write(error) => write(error),
        }
    }
}

/// What a locked update decided: keep the file, replace it, or remove files.
pub enum Change<T> {
    Keep(T),
    Replace {
        value: T,
        bytes: Vec<u8>,
        mode: u32,
    },
    /// Replace, keeping what the replaced file had (`replace_keeping`).
    ReplaceKeeping {
        value: T,
        bytes: Vec<u8>,
        original: fs::Metadata,
    },
    /// Remove `names` from the target's directory (a record directory's
    /// entries; one already gone is no error), each with the stale temp
    /// files of its earlier writes.
    Remove {
        value: T,
        names: Vec<OsString>,
    },
}

/// The one read-modify-write of a state file: while `lock` (acquired by
/// the caller, waiting as long as suits it: a `FileLock`, or the flocked
/// directory of a store that locks itself) is held, `decide` reads the
/// current state and says what to do, and a replacement of `target` in
/// `directory` is written atomically before the lock is released, so no
/// other writer can slip in between the read and the write.
pub fn update_locked<L, T, E>(
    lock: L,
    directory: &OpenDirectory,
    target: &OsStr,
    decide: impl FnOnce() -> Result<Change<T>, E>,
) -> Result<T, UpdateError<E>> {
    update_locked_then(lock, directory, target, decide, |value| value)
}

/// `update_locked`, then `after` on the decided value while the lock is
/// still held (an audit line that must list commits in commit order).
pub fn update_locked_then<L, T, R, E>(
    lock: L,
    directory: &OpenDirectory,
    target: &OsStr,
    decide: impl FnOnce() -> Result<Change<T>, E>,
    after: impl FnOnce(T) -> R,
) -> Result<R, UpdateError<E>> {
    let _held = lock;
    let value = match decide().map_err(UpdateError::Decide)? {
        Change::Keep(value) => value,
        Change::Replace { value, bytes, mode } => {
            directory.replace(target, &bytes, mode).map_err(UpdateError::Write)?;
            value
        }
        Change::ReplaceKeeping { value, bytes, original } => {
            directory.replace_keeping(target, &bytes, &original).map_err(UpdateError::Write)?;
            value
        }
        Change::Remove { value, names } => {
            for name in &names {
                directory.remove_file(name).map_err(UpdateError::Write)?;
                directory.remove_stale_temp_files(name).map_err(UpdateError::Write)?;
            }
            value
        }
    };
    Ok(after(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::LockFile;
    use std::time::Duration;

    #[test]
    fn locked_update_writes_only_a_replacement_and_nothing_on_error() {
        let dir = tempfile::tempdir().unwrap();
        let directory = OpenDirectory::open(dir.path()).unwrap();
        let (target, lock) = (dir.path().join("state.json"), dir.path().join("state.lock"));
        let name = OsStr::new("state.json");
        let acquire = || LockFile::at(&lock).unwrap().acquire().unwrap();
        fs::write(&target, "old").unwrap();
        let kept = update_locked(acquire(), &directory, name, || Ok::<_, ()>(Change::Keep(1)));
        assert_eq!((kept.unwrap(), fs::read_to_string(&target).unwrap()), (1, "old".to_string()));
        let failed = update_locked(acquire(), &directory, name, || Err::<Change<u8>, _>("refused"));
        assert!(matches!(failed, Err(UpdateError::Decide("refused"))));
        assert_eq!(fs::read_to_string(&target).unwrap(), "old");
        // A write that cannot happen is told apart from a refusal.
        fs::create_dir(dir.path().join("taken")).unwrap();
        let write = update_locked(acquire(), &directory, OsStr::new("taken"), || {
            Ok::<_, ()>(Change::Replace { value: 0, bytes: b"x".to_vec(), mode: 0o600 })
        });
        assert!(matches!(&write, Err(UpdateError::Write(_))), "{write:?}");
        let replaced = update_locked_then(
            acquire(),
            &directory,
            name,
            || Ok::<_, ()>(Change::Replace { value: 2, bytes: b"new".to_vec(), mode: 0o600 }),
            // Still under the lock: nobody else can take it now.
            |value| (value, LockFile::at(&lock).unwrap().acquire_within(Duration::from_millis(20)).is_err()),
        );
        assert_eq!(replaced.unwrap(), (2, true));
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");
    }
}
