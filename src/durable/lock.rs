//! The exclusive lock file shared with the Node tool: created exclusively,
//! unlinked on release, and also flocked by gate-check, so a lock left by a
//! crashed gate-check is recognised and removed. See references/parallel.md.
//! Every step names the lock inside its directory held open.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::{openat, statat, unlinkat, AtFlags, Mode, OFlags};

use super::directory::{with_path, OpenDirectory};
use super::replace::give_file_to_owner_of;
use crate::digest::sha256_hex;

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

/// How long a lock held by a process that is not a gate-check (the Node
/// tool, or a file whose metadata cannot be read) is waited for before
/// failing closed: the Node tool's own lock timeout.
const FOREIGN_LOCK_WAIT: Duration = Duration::from_secs(30);

/// The `tool` field that marks a lock file written by this program.
const TOOL: &str = "gate-check";

/// Lock metadata is a few hundred bytes; more is not a lock file.
const LOCK_METADATA_MAX_BYTES: u64 = 64 * 1024;

/// Prefix of the staging file a lock is prepared in before it is linked
/// into place.
const STAGING_PREFIX: &str = ".gate-check-lock.";

/// The metadata inside a lock file. `token`, `pid`, `target` and `at` are
/// the Node tool's fields (it releases only a lock whose token is its own);
/// `tool` tells gate-check that the holder keeps an `flock` on the file.
#[derive(serde::Serialize)]
struct LockRecord {
    token: String,
    pid: u32,
    target: String,
    at: u128,
    tool: &'static str,
}

/// Where a lock file lives: a name inside its directory held open. Taking
/// the lock gives a `FileLock`.
pub struct LockFile {
    directory: OpenDirectory,
    name: OsString,
}

/// An exclusive lock shared with the Node tool: the lock file
/// `.unlazy/locks/<24 hex>.filelock` exists only while it is held (created
/// exclusively, unlinked on release, as Node does), and this program also
/// keeps an `flock` on it, so a lock left by a crashed gate-check is
/// recognised (its `flock` is free) and removed by the next gate-check
/// that meets it. See references/parallel.md.
pub struct FileLock {
    at: LockFile,
    file: File,
}

/// What is at a lock path that could not be created.
enum Holder {
    /// Nothing any more: try again at once.
    Gone,
    /// A live gate-check holds it.
    GateCheck,
    /// Another program's lock (or unreadable metadata), identified by
    /// device and inode, with the pid it names.
    Foreign { identity: (u64, u64), pid: Option<u32> },
}

impl FileLock {
    /// The name of the lock file guarding `target` (`<24 hex>.filelock`,
    /// the Node tool's naming): one name for every spelling of the path.
    pub fn name_for(target: &Path) -> String {
        let key = sha256_hex(canonical_target(target).as_os_str().as_encoded_bytes());
        format!("{}.filelock", &key[..24])
    }
}

impl LockFile {
    /// The lock file `name` in `directory`.
    pub fn new(directory: OpenDirectory, name: impl Into<OsString>) -> LockFile {
        LockFile { directory, name: name.into() }
    }

    /// The lock file at `path`, outside any repository (its directory is
    /// resolved as the OS does).
    pub fn at(path: &Path) -> io::Result<LockFile> {
        let (directory, name) = OpenDirectory::containing(path)?;
        Ok(LockFile::new(directory, name))
    }

    fn path(&self) -> PathBuf {
        self.directory.join(&self.name)
    }

    /// Waits for the lock as long as a gate-check holds it; a lock of
    /// another program is waited for as long as the Node tool would wait
    /// (30 s), then refused with `TimedOut`.
    pub fn acquire(self) -> io::Result<FileLock> {
        self.acquire_until(None, FOREIGN_LOCK_WAIT)
    }

    /// Like `acquire`, but gives up with `TimedOut` after `wait`.
    pub fn acquire_within(self, wait: Duration) -> io::Result<FileLock> {
        self.acquire_until(Some(Instant::now() + wait), FOREIGN_LOCK_WAIT)
    }

    /// The lock if nobody holds it now, else `WouldBlock`.
    pub fn try_acquire(self) -> io::Result<FileLock> {
        self.acquire_until(Some(Instant::now()), Duration::ZERO)
    }

    /// Like `acquire`, but a lock of another program is waited for only
    /// `foreign_wait` (the Node tool waits 10 s for an approval lock).
    pub fn acquire_waiting_for_foreign(self, foreign_wait: Duration) -> io::Result<FileLock> {
        self.acquire_until(None, foreign_wait)
    }

    fn acquire_until(self, deadline: Option<Instant>, foreign_wait: Duration) -> io::Result<FileLock> {
        self.remove_crashed_locks();
        let mut foreign_since: Option<((u64, u64), Instant)> = None;
        loop {
            let staged = self.stage()?;
            match staged.link_as(&self.name) {
                Ok(()) => {
                    // Unlinks the staging name; the open file keeps its flock.
                    let file = staged.into_file();
                    return Ok(FileLock { at: self, file });
                }
                // A sweep by another gate-check removed the staging file.
                Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(with_path(&self.path())(error)),
            }
            drop(staged);
            let now = Instant::now();
            match self.inspect(&self.name)? {
                Holder::Gone => continue,
                Holder::GateCheck => foreign_since = None,
                Holder::Foreign { identity, pid } => {
                    let since = match foreign_since {
                        Some((seen, since)) if seen == identity => since,
                        _ => now,
                    };
                    foreign_since = Some((identity, since));
                    if now >= since + foreign_wait {
                        return Err(foreign_timeout(&self.path(), pid));
                    }
                }
            }
            if deadline.is_some_and(|deadline| now >= deadline) {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("timed out waiting for lock {}", self.path().display()),
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// A private staging file next to the lock, already flocked and holding
    /// the lock metadata, so the lock file is complete the instant it is
    /// linked in.
    fn stage(&self) -> io::Result<super::replace::TempFile<'_>> {
        let staged = self.directory.create_temp(STAGING_PREFIX, ".tmp")?;
        let file = staged.file();
        file.lock().map_err(|error| self.directory.error(error))?;
        // A lock file root creates in a user's repository stays the user's.
        give_file_to_owner_of(file, &self.directory);
        let at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis();
        let path = self.path();
        let seed = format!("{}:{at}:{}", std::process::id(), path.display());
        let record = LockRecord {
            token: sha256_hex(format!("{seed}:{}", fastrand::u64(..)))[..32].to_string(),
            pid: std::process::id(),
            target: path.display().to_string(),
            at,
            tool: TOOL,
        };
        let json = serde_json::to_vec(&record).map_err(io::Error::other)?;
        (&*file).write_all(&json).map_err(with_path(&path))?;
        Ok(staged)
    }

    /// Opens `name` in the lock directory without following a link or
    /// blocking on a FIFO; `None` when it is gone.
    fn open_entry(&self, name: &OsStr) -> io::Result<Option<File>> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        match openat(self.directory.fd(), name, flags, Mode::empty()) {
            Ok(fd) => Ok(Some(File::from(fd))),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(errno) => Err(with_path(&self.directory.join(name))(errno.into())),
        }
    }

    /// Classifies the lock file `name`; a gate-check lock whose flock is
    /// free belongs to a crashed process and is removed here.
    fn inspect(&self, name: &OsStr) -> io::Result<Holder> {
        let shown = self.directory.join(name);
        let Some(file) = self.open_entry(name)? else {
            return Ok(Holder::Gone);
        };
        let metadata = file.metadata().map_err(with_path(&shown))?;
        if !metadata.is_file() {
            return Err(io::Error::other(format!("lock {} must be a regular file", shown.display())));
        }
        let mut bytes = Vec::new();
        (&file).take(LOCK_METADATA_MAX_BYTES).read_to_end(&mut bytes).map_err(with_path(&shown))?;
        // Only `tool` and `pid` matter here; Node's record has no `tool`.
        let record: Option<serde_json::Value> = serde_json::from_slice(&bytes).ok();
        let field = |name: &str| record.as_ref().and_then(|record| record.get(name));
        let identity = (metadata.dev(), metadata.ino());
        match field("tool").and_then(|tool| tool.as_str()) {
            Some(TOOL) => {
                if self.remove_if_crashed(name, &file, identity) {
                    Ok(Holder::Gone)
                } else {
                    Ok(Holder::GateCheck)
                }
            }
            _ => {
                let pid = field("pid").and_then(|pid| pid.as_u64()).and_then(|pid| u32::try_from(pid).ok());
                Ok(Holder::Foreign { identity, pid })
            }
        }
    }

    /// Removes the gate-check lock `name`, open as `file`, when its holder
    /// is gone: its flock is free and the name still refers to it. Holders
    /// unlink before they unlock and the Node tool never unlinks another's
    /// lock, so nobody can replace the name between this check and the
    /// unlink. True when the lock is no longer held (removed here or
    /// released meanwhile).
    fn remove_if_crashed(&self, name: &OsStr, file: &File, identity: (u64, u64)) -> bool {
        if file.try_lock().is_err() {
            return false;
        }
        match self.identity_of(name) {
            Some(named) if named == identity => unlinkat(self.directory.fd(), name, AtFlags::empty()).is_ok(),
            _ => true,
        }
    }

    /// Device and inode of the entry `name`, not following a link.
    fn identity_of(&self, name: &OsStr) -> Option<(u64, u64)> {
        // `st_dev` is signed on macOS.
        #[allow(clippy::unnecessary_cast)]
        statat(self.directory.fd(), name, AtFlags::SYMLINK_NOFOLLOW).ok().map(|stat| (stat.st_dev as u64, stat.st_ino))
    }

    /// Removes every lock and staging file in the lock directory left by a
    /// crashed gate-check (flock free), so one crash cannot wedge the Node
    /// tool on a lock gate-check never asks for again. This lock itself is
    /// handled by the acquire loop.
    fn remove_crashed_locks(&self) {
        let Ok(names) = self.directory.entries() else {
            return;
        };
        for name in names {
            if name == self.name {
                continue;
            }
            let text = name.to_string_lossy();
            if text.ends_with(".filelock") {
                let _ = self.inspect(&name);
            } else if text.starts_with(STAGING_PREFIX) && text.ends_with(".tmp") {
                let Ok(Some(file)) = self.open_entry(&name) else {
                    continue;
                };
                if let Ok(metadata) = file.metadata() {
                    self.remove_if_crashed(&name, &file, (metadata.dev(), metadata.ino()));
                }
            }
        }
    }
}

impl Drop for FileLock {
    /// Unlinks the lock file while still holding its flock, so a gate-check
    /// that gets the flock afterwards sees an unlinked file, not a crash.
    fn drop(&mut self) {
        if let (Some(named), Ok(held)) = (self.at.identity_of(&self.at.name), self.file.metadata()) {
            if named == (held.dev(), held.ino()) {
                let _ = unlinkat(self.at.directory.fd(), &self.at.name, AtFlags::empty());
            }
        }
    }
}

fn foreign_timeout(path: &Path, pid: Option<u32>) -> io::Error {
    let holder = match pid {
        Some(pid) if process_is_running(pid) => format!("held by running pid {pid}"),
        Some(pid) => format!("held by pid {pid}, which is not running: remove the file if no unlazy process uses it"),
        None => "without readable metadata: remove the file if no unlazy process uses it".to_string(),
    };
    io::Error::new(io::ErrorKind::TimedOut, format!("timed out waiting for lock {} ({holder})", path.display()))
}

fn process_is_running(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // EPERM means the process exists but belongs to someone else.
    !matches!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None), Err(nix::errno::Errno::ESRCH))
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
}
