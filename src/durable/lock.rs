//! The exclusive lock file shared with the Node tool: created exclusively,
//! unlinked on release, and also locked by gate-check while it holds it
//! (an `flock` on Unix, one byte far past the end on Windows), so a lock
//! left by a crashed gate-check is recognised and removed. See
//! references/parallel.md. Every step names the lock inside its directory
//! held open.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::directory::{with_path, OpenDirectory};
use super::sys::{self, is_transient, process_is_running, Access, FileId, Opened};
use crate::digest::sha256_hex;

/// The target with its nearest existing ancestor canonicalized (as Node's
/// `realpathSync` spells it: on Windows with the case given, no `\\?\`)
/// and the missing rest appended, so every spelling of one path shares one
/// lock and replacing the final file never changes which lock guards it.
fn canonical_target(target: &Path) -> PathBuf {
    let mut existing = target.parent();
    let mut rest = vec![target.file_name().unwrap_or_default()];
    while let Some(directory) = existing {
        if let Ok(canonical) = super::sys::real_path(directory) {
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
/// `tool` tells gate-check that the holder keeps its lock on the file.
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
/// keeps a lock on it (`sys::hold`), so a lock left by a crashed gate-check
/// is recognised (its lock is free) and removed by the next gate-check
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
    /// On Windows: being deleted, or held open for a moment by another
    /// process (an indexer, a scanner), which the Node tool waits out too.
    Busy,
    /// Another program's lock (or unreadable metadata), identified by its
    /// file id, with the pid it names.
    Foreign { identity: FileId, pid: Option<u32> },
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
        let mut foreign_since: Option<(FileId, Instant)> = None;
        let mut busy_since: Option<Instant> = None;
        loop {
            let staged = self.stage()?;
            match staged.link_as(&self.name) {
                Ok(()) => {
                    // Unlinks the staging name; the open file keeps its lock.
                    let file = staged.into_file();
                    return Ok(FileLock { at: self, file });
                }
                // A sweep by another gate-check removed the staging file.
                Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
                // Held, or (on Windows) denied for a moment: being deleted, or
                // held open by a scanner.
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists || is_transient(&error) => {}
                Err(error) => return Err(with_path(&self.path())(error)),
            }
            drop(staged);
            let now = Instant::now();
            match self.inspect(&self.name)? {
                Holder::Gone => continue,
                Holder::GateCheck => (foreign_since, busy_since) = (None, None),
                // A moment's denial is waited out; one that lasts (an ACL that
                // denies this user the lock file) is the error it is.
                Holder::Busy => {
                    foreign_since = None;
                    let since = *busy_since.get_or_insert(now);
                    if now >= since + FOREIGN_LOCK_WAIT {
                        return Err(io::Error::new(
                            io::ErrorKind::PermissionDenied,
                            format!(
                                "lock {} stayed inaccessible for {} s",
                                self.path().display(),
                                FOREIGN_LOCK_WAIT.as_secs()
                            ),
                        ));
                    }
                }
                Holder::Foreign { identity, pid } => {
                    busy_since = None;
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

    /// A private staging file next to the lock, already locked and holding
    /// the lock metadata, so the lock file is complete the instant it is
    /// linked in.
    fn stage(&self) -> io::Result<super::replace::TempFile<'_>> {
        let staged = self.directory.create_temp(STAGING_PREFIX, ".tmp")?;
        let file = staged.file();
        sys::hold(file).map_err(|error| self.directory.error(error))?;
        // A lock file root creates in a user's repository stays the user's.
        sys::give_file_to_owner(file, self.directory.dir());
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
    /// blocking on a FIFO; `None` when it is gone. An error is the system's,
    /// not yet naming the file.
    fn open_entry(&self, name: &OsStr) -> io::Result<Option<File>> {
        match sys::open_no_follow(self.directory.dir().base(), Path::new(name), Access::Read)? {
            Opened::File(file) => Ok(Some(file)),
            Opened::Missing => Ok(None),
            Opened::Link => Err(not_regular(&self.directory.join(name))),
        }
    }

    /// Classifies the lock file `name`; a gate-check lock whose flock is
    /// free belongs to a crashed process and is removed here.
    fn inspect(&self, name: &OsStr) -> io::Result<Holder> {
        let shown = self.directory.join(name);
        let file = match self.open_entry(name) {
            Ok(Some(file)) => file,
            Ok(None) => return Ok(Holder::Gone),
            Err(error) if is_transient(&error) => return Ok(Holder::Busy),
            Err(error) => return Err(with_path(&shown)(error)),
        };
        let stat = sys::file_stat(&file).map_err(with_path(&shown))?;
        if stat.kind != sys::Kind::File {
            return Err(not_regular(&shown));
        }
        let mut bytes = Vec::new();
        (&file).take(LOCK_METADATA_MAX_BYTES).read_to_end(&mut bytes).map_err(with_path(&shown))?;
        // Only `tool` and `pid` matter here; Node's record has no `tool`.
        let record: Option<serde_json::Value> = serde_json::from_slice(&bytes).ok();
        let field = |name: &str| record.as_ref().and_then(|record| record.get(name));
        let identity = stat.id;
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
    /// is gone: its lock is free and the name still refers to it. Holders
    /// unlink before they unlock and the Node tool never unlinks another's
    /// lock, so nobody can replace the name between this check and the
    /// unlink. True when the lock is no longer held (removed here or
    /// released meanwhile).
    fn remove_if_crashed(&self, name: &OsStr, file: &File, identity: FileId) -> bool {
        if !sys::holder_gone(file) {
            return false;
        }
        match self.identity_of(name) {
            Some(named) if named == identity => sys::remove_file(self.directory.dir(), name).is_ok(),
            _ => true,
        }
    }

    /// The file id of the entry `name`, not following a link.
    fn identity_of(&self, name: &OsStr) -> Option<FileId> {
        sys::stat_no_follow(self.directory.dir().base(), Path::new(name)).ok().flatten().map(|stat| stat.id)
    }

    /// Removes every lock and staging file in the lock directory left by a
    /// crashed gate-check (its lock free), so one crash cannot wedge the
    /// Node tool on a lock gate-check never asks for again. This lock itself
    /// is handled by the acquire loop.
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
                if let Ok(stat) = sys::file_stat(&file) {
                    self.remove_if_crashed(&name, &file, stat.id);
                }
            }
        }
    }
}

impl Drop for FileLock {
    /// Unlinks the lock file while still holding its lock, so a gate-check
    /// that gets the lock afterwards sees an unlinked file, not a crash.
    fn drop(&mut self) {
        if let (Some(named), Ok(held)) = (self.at.identity_of(&self.at.name), sys::file_stat(&self.file)) {
            if named == held.id {
                let _ = sys::remove_file(self.at.directory.dir(), &self.at.name);
            }
        }
    }
}

fn not_regular(path: &Path) -> io::Error {
    io::Error::other(format!("lock {} must be a regular file", path.display()))
}

fn foreign_timeout(path: &Path, pid: Option<u32>) -> io::Error {
    let holder = match pid {
        Some(pid) if process_is_running(pid) => format!("held by running pid {pid}"),
        Some(pid) => format!("held by pid {pid}, which is not running: remove the file if no unlazy process uses it"),
        None => "without readable metadata: remove the file if no unlazy process uses it".to_string(),
    };
    io::Error::new(io::ErrorKind::TimedOut, format!("timed out waiting for lock {} ({holder})", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_target_rebuilds_missing_parts() {
        let dir = tempfile::tempdir().unwrap();
        let base = super::sys::real_path(dir.path()).unwrap();
        let missing = dir.path().join("a/b/state.json");
        assert_eq!(canonical_target(&missing), base.join("a/b/state.json"));
        let dotted = dir.path().join("./x/../state.json");
        assert_eq!(canonical_target(&dotted).file_name(), Some(std::ffi::OsStr::new("state.json")));
    }
}
