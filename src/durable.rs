//! Durable file primitives shared by every module that keeps state on disk
//! (ledgers, approvals, leases, sessions, dispatch and hook state, agent
//! settings): atomic replacement, and the lock files that serialize each
//! read-modify-write cycle. Each owning module keeps its own rules about
//! what it reads and writes; this module only knows how to do it safely.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::fcntl::OFlag;

use crate::digest::sha256_hex;
use crate::target::STATE_DIR;

fn with_path(path: &Path) -> impl FnOnce(io::Error) -> io::Error + '_ {
    move |error| io::Error::new(error.kind(), format!("{}: {error}", path.display()))
}

/// Replaces (or creates) `path` with `bytes`: a temp file in the same
/// directory with permissions `mode`, fsync, rename over `path`, fsync of
/// the directory. A reader, or a crash at any instant, sees the old file or
/// the new one, never a mix.
pub fn replace_file(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let directory = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(fs::Permissions::from_mode(0o600))
        .tempfile_in(directory)
        .map_err(with_path(directory))?;
    temp.write_all(bytes).map_err(with_path(path))?;
    if mode != 0o600 {
        temp.as_file().set_permissions(fs::Permissions::from_mode(mode)).map_err(with_path(path))?;
    }
    temp.as_file().sync_all().map_err(with_path(path))?;
    temp.persist(path).map_err(|e| with_path(path)(e.error))?;
    // Makes the rename itself durable. Some file systems refuse to sync a
    // directory; the replacement has happened by then, so that is no error.
    if let Ok(dir) = File::open(directory) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Why `read_stable` refused a file.
#[derive(Debug)]
pub enum ReadRefusal {
    /// The name is a symbolic link (never followed).
    Link,
    /// A directory, FIFO, socket or device: not a regular file.
    NotRegular,
    /// More than one hard link.
    Linked,
    /// Replaced or unlinked while it was being read.
    Changed,
    TooLarge,
    Io(io::Error),
}

/// A whole file read by `read_stable`, with the metadata of the opened file.
pub struct StableRead {
    pub bytes: Vec<u8>,
    pub metadata: fs::Metadata,
}

/// Reads `path` when it is one stable regular file: the final name is not
/// followed if it is a link, a FIFO cannot block the read, there is exactly
/// one hard link, at most `max_bytes`, and the name still refers to the same
/// file (device and inode) after the read. `Ok(None)` when nothing is there.
pub fn read_stable(path: &Path, max_bytes: u64) -> Result<Option<StableRead>, ReadRefusal> {
    let opened = OpenOptions::new().read(true).custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits()).open(path);
    let file = match opened {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) if error.raw_os_error() == Some(nix::libc::ELOOP) => return Err(ReadRefusal::Link),
        Err(error) => return Err(ReadRefusal::Io(error)),
    };
    let metadata = file.metadata().map_err(ReadRefusal::Io)?;
    if !metadata.file_type().is_file() {
        return Err(ReadRefusal::NotRegular);
    }
    match metadata.nlink() {
        // Unlinked after the open: an atomic replacement just happened.
        0 => return Err(ReadRefusal::Changed),
        1 => {}
        _ => return Err(ReadRefusal::Linked),
    }
    if metadata.len() > max_bytes {
        return Err(ReadRefusal::TooLarge);
    }
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    file.take(max_bytes + 1).read_to_end(&mut bytes).map_err(ReadRefusal::Io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(ReadRefusal::TooLarge);
    }
    match fs::symlink_metadata(path) {
        Ok(named) if named.dev() == metadata.dev() && named.ino() == metadata.ino() => {
            Ok(Some(StableRead { bytes, metadata }))
        }
        _ => Err(ReadRefusal::Changed),
    }
}

/// `<canonical root>/.unlazy/locks`, created private when missing. Both
/// levels must be real directories, so a planted link cannot redirect
/// where locks live.
pub fn lock_directory(root: &Path) -> io::Result<PathBuf> {
    let root = fs::canonicalize(root).map_err(with_path(root))?;
    let state = root.join(STATE_DIR);
    let directory = state.join("locks");
    crate::state_root::ensure(&root)?;
    fs::DirBuilder::new().recursive(true).mode(0o700).create(&directory).map_err(with_path(&directory))?;
    for level in [&state, &directory] {
        let meta = fs::symlink_metadata(level).map_err(with_path(level))?;
        if meta.file_type().is_symlink() || !meta.is_dir() {
            return Err(io::Error::other(format!(
                "{} must be a real directory inside the repository",
                level.display()
            )));
        }
    }
    Ok(directory)
}

/// The target with its nearest existing ancestor canonicalized and the
/// missing rest appended, so every spelling of one path shares one lock
/// and replacing the final file never changes which lock guards it.
fn canonical_target(target: &Path) -> PathBuf {
    let mut existing = target.parent();
    let mut rest = vec![target.file_name().unwrap_or_default()];
    while let Some(directory) = existing {
        if let Ok(canonical) = fs::canonicalize(directory) {
            return rest.iter().rev().fold(canonical, |path, part| path.join(part));
        }
        rest.push(directory.file_name().unwrap_or_default());
        existing = directory.parent();
    }
    target.to_path_buf()
}

/// An exclusive advisory lock (`flock`), released when dropped or when the
/// holding process dies, so a crash never leaves a stale lock behind.
pub struct FileLock {
    _file: File,
}

impl FileLock {
    /// The lock guarding `target`: `.unlazy/locks/<24 hex>.filelock`.
    pub fn for_target(root: &Path, target: &Path) -> io::Result<PathBuf> {
        let key = sha256_hex(canonical_target(target).as_os_str().as_encoded_bytes());
        Ok(lock_directory(root)?.join(format!("{}.filelock", &key[..24])))
    }

    fn open(path: &Path) -> io::Result<File> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits())
            .open(path)
            .map_err(with_path(path))?;
        if !file.metadata().map_err(with_path(path))?.is_file() {
            return Err(io::Error::other(format!("lock {} must be a regular file", path.display())));
        }
        Ok(file)
    }

    /// Waits as long as it takes for the lock file at `path`.
    pub fn acquire(path: &Path) -> io::Result<FileLock> {
        let file = Self::open(path)?;
        file.lock().map_err(with_path(path))?;
        Ok(FileLock { _file: file })
    }

    /// Like `acquire`, but gives up with `TimedOut` after `wait`.
    pub fn acquire_within(path: &Path, wait: Duration) -> io::Result<FileLock> {
        let file = Self::open(path)?;
        let deadline = Instant::now() + wait;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(FileLock { _file: file }),
                Err(fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(fs::TryLockError::WouldBlock) => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("timed out waiting for {}", path.display()),
                    ))
                }
                Err(fs::TryLockError::Error(error)) => return Err(with_path(path)(error)),
            }
        }
    }
}

/// What a locked update decided: keep the file, or replace it.
pub enum Change<T> {
    Keep(T),
    Replace { value: T, bytes: Vec<u8>, mode: u32 },
}

/// The one read-modify-write of a state file: while `lock` (acquired by
/// the caller, waiting as long as suits it) is held, `decide` reads the
/// current state and says what to do, and a replacement of `target` is
/// written atomically before the lock is released, so no other writer can
/// slip in between the read and the write.
pub fn update_locked<T, E: From<io::Error>>(
    lock: FileLock,
    target: &Path,
    decide: impl FnOnce() -> Result<Change<T>, E>,
) -> Result<T, E> {
    update_locked_then(lock, target, decide, |value| value)
}

/// `update_locked`, then `after` on the decided value while the lock is
/// still held (an audit line that must list commits in commit order).
pub fn update_locked_then<T, R, E: From<io::Error>>(
    lock: FileLock,
    target: &Path,
    decide: impl FnOnce() -> Result<Change<T>, E>,
    after: impl FnOnce(T) -> R,
) -> Result<R, E> {
    let _held = lock;
    let value = match decide()? {
        Change::Keep(value) => value,
        Change::Replace { value, bytes, mode } => {
            replace_file(target, &bytes, mode)?;
            value
        }
    };
    Ok(after(value))
}

/// A failed locked update of a state file whose callers report causes as
/// one line of text. An I/O error here can only be the replacement write.
#[derive(Debug)]
pub struct UpdateFailure(pub String);

impl From<String> for UpdateFailure {
    fn from(message: String) -> Self {
        UpdateFailure(message)
    }
}

impl From<io::Error> for UpdateFailure {
    fn from(error: io::Error) -> Self {
        UpdateFailure(format!("cannot write {error}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_target_rebuilds_missing_parts() {
        let dir = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(dir.path()).unwrap();
        let missing = dir.path().join("a/b/state.json");
        assert_eq!(canonical_target(&missing), base.join("a/b/state.json"));
        let dotted = dir.path().join("./x/../state.json");
        assert_eq!(canonical_target(&dotted).file_name(), Some(std::ffi::OsStr::new("state.json")));
    }

    #[test]
    fn locked_update_writes_only_a_replacement_and_nothing_on_error() {
        let dir = tempfile::tempdir().unwrap();
        let (target, lock) = (dir.path().join("state.json"), dir.path().join("state.lock"));
        fs::write(&target, "old").unwrap();
        let kept: Result<u8, io::Error> =
            update_locked(FileLock::acquire(&lock).unwrap(), &target, || Ok(Change::Keep(1)));
        assert_eq!((kept.unwrap(), fs::read_to_string(&target).unwrap()), (1, "old".to_string()));
        let failed: Result<u8, io::Error> =
            update_locked(FileLock::acquire(&lock).unwrap(), &target, || Err(io::Error::other("refused")));
        assert!(failed.is_err());
        assert_eq!(fs::read_to_string(&target).unwrap(), "old");
        let replaced = update_locked_then(
            FileLock::acquire(&lock).unwrap(),
            &target,
            || Ok::<_, io::Error>(Change::Replace { value: 2, bytes: b"new".to_vec(), mode: 0o600 }),
            // Still under the lock: nobody else can take it now.
            |value| (value, FileLock::acquire_within(&lock, Duration::from_millis(20)).is_err()),
        );
        assert_eq!(replaced.unwrap(), (2, true));
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");
    }
}
