//! Durable file primitives shared by every module that keeps state on disk
//! (ledgers, approvals, leases, sessions, dispatch and hook state, agent
//! settings): atomic replacement, and the lock files that serialize each
//! read-modify-write cycle. Each owning module keeps its own rules about
//! what it reads and writes; this module only knows how to do it safely.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::BorrowedFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::fcntl::OFlag;

use crate::digest::sha256_hex;
use crate::pipeline::StateDir;
use crate::target::{inspect_directory, Directory};

fn with_path(path: &Path) -> impl FnOnce(io::Error) -> io::Error + '_ {
    move |error| io::Error::new(error.kind(), format!("{}: {error}", path.display()))
}

/// Replaces (or creates) `path` with `bytes`: a temp file in the same
/// directory with permissions `mode`, fsync, rename over `path`, fsync of
/// the directory. A reader, or a crash at any instant, sees the old file or
/// the new one, never a mix. The new file belongs to the owner of its
/// directory (see `give_file_to_owner_of`).
pub fn replace_file(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    replace_with(path, bytes, |temp| {
        give_file_to_owner_of(temp, parent_directory(path));
        set_mode(temp, mode)
    })
}

/// Like `replace_file`, but the new file keeps what the replaced one had:
/// its owner and group (when this process may give them: a run as root on a
/// user's ledger must not leave it root's), its mode, and its extended
/// attributes (ACLs, labels, user attributes) where they can be set.
pub fn replace_file_keeping(path: &Path, bytes: &[u8], original: &fs::Metadata) -> io::Result<()> {
    replace_with(path, bytes, |temp| {
        let (uid, gid) = (original.uid(), original.gid());
        if std::os::unix::fs::fchown(temp, Some(uid), Some(gid)).is_err() {
            // Not privileged: keep at least the group when it is one of ours.
            let _ = std::os::unix::fs::fchown(temp, None, Some(gid));
        }
        // After the chown, which clears set-id bits.
        set_mode(temp, original.mode() & 0o7777)?;
        copy_extended_attributes(path, temp);
        Ok(())
    })
}

fn set_mode(file: &File, mode: u32) -> io::Result<()> {
    if mode == 0o600 {
        return Ok(());
    }
    file.set_permissions(fs::Permissions::from_mode(mode))
}

/// Copies every extended attribute `from` has that the new file accepts;
/// one the file system or this user cannot set is left behind rather than
/// blocking the write.
fn copy_extended_attributes(from: &Path, to: &File) {
    use xattr::FileExt;
    let Ok(names) = xattr::list(from) else {
        return;
    };
    for name in names {
        if let Ok(Some(value)) = xattr::get(from, &name) {
            let _ = to.set_xattr(&name, &value);
        }
    }
}

/// The temp-file name prefix `replace_file` uses for `name`; the rest is
/// `TEMP_RANDOM_CHARS` ASCII letters and digits and `TEMP_SUFFIX`.
fn temp_prefix(name: &str) -> String {
    format!(".{name}.")
}
const TEMP_RANDOM_CHARS: usize = 6;
const TEMP_SUFFIX: &str = ".tmp";

fn replace_with(path: &Path, bytes: &[u8], prepare: impl FnOnce(&File) -> io::Result<()>) -> io::Result<()> {
    let directory = parent_directory(path);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut temp = tempfile::Builder::new()
        .prefix(&temp_prefix(&name))
        .rand_bytes(TEMP_RANDOM_CHARS)
        .suffix(TEMP_SUFFIX)
        .permissions(fs::Permissions::from_mode(0o600))
        .tempfile_in(directory)
        .map_err(with_path(directory))?;
    temp.write_all(bytes).map_err(with_path(path))?;
    prepare(temp.as_file()).map_err(with_path(path))?;
    temp.as_file().sync_all().map_err(with_path(path))?;
    temp.persist(path).map_err(|e| with_path(path)(e.error))?;
    // Makes the rename itself durable. Some file systems refuse to sync a
    // directory; the replacement has happened by then, so that is no error.
    if let Ok(dir) = File::open(directory) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// The directory holding `path` (`.` for a bare name).
pub fn parent_directory(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// True for a name `replace_file` gives its temp files for `name`.
fn is_temp_name_for(candidate: &str, name: &str) -> bool {
    candidate
        .strip_prefix(&temp_prefix(name))
        .and_then(|rest| rest.strip_suffix(TEMP_SUFFIX))
        .is_some_and(|random| random.len() == TEMP_RANDOM_CHARS && random.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// The name of the file a temp file of `replace_file` was for, when
/// `candidate` is such a temp name.
pub fn temp_file_target(candidate: &str) -> Option<&str> {
    let inner = candidate.strip_prefix('.')?.strip_suffix(TEMP_SUFFIX)?;
    let (target, random) = inner.rsplit_once('.')?;
    let random_ok = random.len() == TEMP_RANDOM_CHARS && random.bytes().all(|b| b.is_ascii_alphanumeric());
    (random_ok && !target.is_empty()).then_some(target)
}

/// Removes the temp files a killed `replace_file` of `path` left behind.
/// The caller must hold the lock that serializes every replacement of
/// `path`: then no live writer owns such a file, and one is removed only
/// when it is provably gate-check's: the exact temp-name pattern, a regular
/// single-link file, owned by this user or by the owner of `path`.
pub fn remove_stale_temp_files(path: &Path) -> io::Result<usize> {
    let directory = parent_directory(path);
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return Ok(0);
    };
    let target_owner = fs::symlink_metadata(path).ok().map(|meta| meta.uid());
    let me = nix::unistd::geteuid().as_raw();
    let mut removed = 0;
    for entry in fs::read_dir(directory).map_err(with_path(directory))? {
        let entry = entry.map_err(with_path(directory))?;
        let candidate = entry.file_name();
        if !candidate.to_str().is_some_and(|c| is_temp_name_for(c, name)) {
            continue;
        }
        let Ok(meta) = fs::symlink_metadata(entry.path()) else {
            continue;
        };
        let owner_ok = meta.uid() == me || Some(meta.uid()) == target_owner;
        if meta.file_type().is_file() && meta.nlink() == 1 && owner_ok {
            match fs::remove_file(entry.path()) {
                Ok(()) => removed += 1,
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(with_path(&entry.path())(error)),
            }
        }
    }
    Ok(removed)
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
    read_stable_at(rustix::fs::CWD, path, max_bytes)
}

/// `read_stable` of `name` inside the directory `directory` is open on: the
/// name is looked up in that directory, whatever its path names meanwhile.
pub fn read_stable_at(
    directory: BorrowedFd<'_>,
    name: &Path,
    max_bytes: u64,
) -> Result<Option<StableRead>, ReadRefusal> {
    use rustix::fs::{openat, statat, AtFlags, Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file = match openat(directory, name, flags, Mode::empty()) {
        Ok(fd) => File::from(fd),
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(rustix::io::Errno::LOOP) => return Err(ReadRefusal::Link),
        Err(error) => return Err(ReadRefusal::Io(error.into())),
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
    // `st_dev` is signed on macOS.
    #[allow(clippy::unnecessary_cast)]
    let same_file = |named: &rustix::fs::Stat| named.st_dev as u64 == metadata.dev() && named.st_ino == metadata.ino();
    match statat(directory, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(named) if same_file(&named) => Ok(Some(StableRead { bytes, metadata })),
        _ => Err(ReadRefusal::Changed),
    }
}

/// `<canonical root>/.unlazy`, created private (with its ignore file) when
/// missing, and refused unless it is a real directory: a planted link is
/// refused before anything is created through it. What this process creates
/// belongs to the owner of the directory it lives in, so a run as root
/// leaves no state the repository's owner cannot use.
pub fn state_directory(root: &Path) -> io::Result<PathBuf> {
    let root = fs::canonicalize(root).map_err(with_path(root))?;
    let state = StateDir::new(&root).path();
    match fs::symlink_metadata(&state) {
        Ok(_) => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            // Created with its ignore file; both given to the repository's owner.
            crate::state_root::ensure(&root)?;
            give_to_owner_of(&state, &root)?;
            let ignore = state.join(crate::state_root::IGNORE_FILE);
            if fs::symlink_metadata(&ignore).is_ok_and(|meta| meta.is_file()) {
                give_to_owner_of(&ignore, &root)?;
            }
        }
        Err(error) => return Err(with_path(&state)(error)),
    }
    real_directory_in(&root, &state, &root)?;
    Ok(state)
}

/// `<canonical root>/.unlazy/locks`, made like `state_directory`.
pub fn lock_directory(root: &Path) -> io::Result<PathBuf> {
    let state = state_directory(root)?;
    let directory = StateDir::locks_in(&state);
    real_directory_in(root, &directory, &state)?;
    Ok(directory)
}

/// `<canonical root>/.unlazy/<name>`, made like `state_directory`.
pub fn state_subdirectory(root: &Path, name: &str) -> io::Result<PathBuf> {
    let state = state_directory(root)?;
    let directory = state.join(name);
    real_directory_in(root, &directory, &state)?;
    Ok(directory)
}

/// Checks, without creating anything, that `lock_directory(root)` can
/// succeed: each existing level is a real directory and the first missing
/// one can be created in its writable parent.
pub fn check_lock_directory(root: &Path) -> io::Result<()> {
    let root = fs::canonicalize(root).map_err(with_path(root))?;
    let state = StateDir::new(&root).path();
    let directory = StateDir::locks_in(&state);
    for (level, parent) in [(&state, &root), (&directory, &state)] {
        match inspect_directory(&root, level).map_err(with_path(level))? {
            Directory::Real => {}
            Directory::NotReal => return Err(not_real(level)),
            Directory::Missing => {
                return nix::unistd::access(parent.as_path(), nix::unistd::AccessFlags::W_OK)
                    .map_err(|errno| with_path(parent)(io::Error::from(errno)));
            }
        }
    }
    Ok(())
}

fn not_real(directory: &Path) -> io::Error {
    io::Error::other(format!("{} must be a real directory inside the repository", directory.display()))
}

/// Makes sure `directory` (a child of `parent`, inside `root`) is a real
/// directory, creating it when missing with `parent`'s owner.
fn real_directory_in(root: &Path, directory: &Path, parent: &Path) -> io::Result<()> {
    match inspect_directory(root, directory).map_err(with_path(directory))? {
        Directory::Real => return Ok(()),
        Directory::NotReal => return Err(not_real(directory)),
        Directory::Missing => {}
    }
    match fs::DirBuilder::new().mode(0o700).create(directory) {
        Ok(()) => give_to_owner_of(directory, parent)?,
        // Created by a concurrent run: checked below like any other.
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(with_path(directory)(error)),
    }
    match inspect_directory(root, directory).map_err(with_path(directory))? {
        Directory::Real => Ok(()),
        _ => Err(not_real(directory)),
    }
}

/// Gives `path`, just created by this process, the owner and group of
/// `directory` when they differ from ours. Only a privileged process can;
/// for anyone else the path already has the only owner it can have.
pub fn give_to_owner_of(path: &Path, directory: &Path) -> io::Result<()> {
    let owner = fs::metadata(directory).map_err(with_path(directory))?;
    let created = fs::symlink_metadata(path).map_err(with_path(path))?;
    if (created.uid(), created.gid()) == (owner.uid(), owner.gid()) || !nix::unistd::geteuid().is_root() {
        return Ok(());
    }
    std::os::unix::fs::lchown(path, Some(owner.uid()), Some(owner.gid())).map_err(with_path(path))
}

/// `give_to_owner_of` for a file this process holds open and has not yet
/// linked into place, so the file is never visible with the wrong owner.
/// Best effort, as for a rewritten ledger: a file system that refuses the
/// change (root squashed to nobody) must not make the state unwritable.
fn give_file_to_owner_of(file: &File, directory: &Path) {
    if !nix::unistd::geteuid().is_root() {
        return;
    }
    let (Ok(owner), Ok(created)) = (fs::metadata(directory), file.metadata()) else {
        return;
    };
    if (created.uid(), created.gid()) != (owner.uid(), owner.gid()) {
        let _ = std::os::unix::fs::fchown(file, Some(owner.uid()), Some(owner.gid()));
    }
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

/// An exclusive lock shared with the Node tool: the lock file
/// `.unlazy/locks/<24 hex>.filelock` exists only while it is held (created
/// exclusively, unlinked on release, as Node does), and this program also
/// keeps an `flock` on it, so a lock left by a crashed gate-check is
/// recognised (its `flock` is free) and removed by the next gate-check
/// that meets it. See references/parallel.md.
pub struct FileLock {
    path: PathBuf,
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
    /// The lock guarding `target`: `.unlazy/locks/<24 hex>.filelock`.
    pub fn for_target(root: &Path, target: &Path) -> io::Result<PathBuf> {
        let key = sha256_hex(canonical_target(target).as_os_str().as_encoded_bytes());
        Ok(lock_directory(root)?.join(format!("{}.filelock", &key[..24])))
    }

    /// Waits for the lock at `path` as long as a gate-check holds it; a
    /// lock of another program is waited for as long as the Node tool
    /// would wait (30 s), then refused with `TimedOut`.
    pub fn acquire(path: &Path) -> io::Result<FileLock> {
        Self::acquire_until(path, None, FOREIGN_LOCK_WAIT)
    }

    /// Like `acquire`, but gives up with `TimedOut` after `wait`.
    pub fn acquire_within(path: &Path, wait: Duration) -> io::Result<FileLock> {
        Self::acquire_until(path, Some(Instant::now() + wait), FOREIGN_LOCK_WAIT)
    }

    /// The lock at `path` if nobody holds it now, else `WouldBlock`.
    pub fn try_acquire(path: &Path) -> io::Result<FileLock> {
        Self::acquire_until(path, Some(Instant::now()), Duration::ZERO)
    }

    /// Like `acquire`, but a lock of another program is waited for only
    /// `foreign_wait` (the Node tool waits 10 s for an approval lock).
    pub fn acquire_waiting_for_foreign(path: &Path, foreign_wait: Duration) -> io::Result<FileLock> {
        Self::acquire_until(path, None, foreign_wait)
    }

    fn acquire_until(path: &Path, deadline: Option<Instant>, foreign_wait: Duration) -> io::Result<FileLock> {
        let directory = parent_directory(path);
        remove_crashed_locks(directory, path);
        let mut foreign_since: Option<((u64, u64), Instant)> = None;
        loop {
            let staged = stage(directory, path)?;
            match fs::hard_link(staged.path(), path) {
                Ok(()) => {
                    // Unlinks the staging name; the open file keeps its flock.
                    let file = staged.into_file();
                    return Ok(FileLock { path: path.to_path_buf(), file });
                }
                // A sweep by another gate-check removed the staging file.
                Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(with_path(path)(error)),
            }
            drop(staged);
            let now = Instant::now();
            match inspect(path)? {
                Holder::Gone => continue,
                Holder::GateCheck => foreign_since = None,
                Holder::Foreign { identity, pid } => {
                    let since = match foreign_since {
                        Some((seen, since)) if seen == identity => since,
                        _ => now,
                    };
                    foreign_since = Some((identity, since));
                    if now >= since + foreign_wait {
                        return Err(foreign_timeout(path, pid));
                    }
                }
            }
            if deadline.is_some_and(|deadline| now >= deadline) {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("timed out waiting for lock {}", path.display()),
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for FileLock {
    /// Unlinks the lock file while still holding its flock, so a gate-check
    /// that gets the flock afterwards sees an unlinked file, not a crash.
    fn drop(&mut self) {
        if let (Ok(named), Ok(held)) = (fs::symlink_metadata(&self.path), self.file.metadata()) {
            if (named.dev(), named.ino()) == (held.dev(), held.ino()) {
                let _ = fs::remove_file(&self.path);
            }
        }
    }
}

/// A private staging file next to `path`, already flocked and holding the
/// lock metadata, so the lock file is complete the instant it is linked in.
fn stage(directory: &Path, path: &Path) -> io::Result<tempfile::NamedTempFile> {
    let staged = tempfile::Builder::new()
        .prefix(STAGING_PREFIX)
        .suffix(".tmp")
        .permissions(fs::Permissions::from_mode(0o600))
        .tempfile_in(directory)
        .map_err(with_path(directory))?;
    staged.as_file().lock().map_err(with_path(staged.path()))?;
    // A lock file root creates in a user's repository stays the user's.
    give_file_to_owner_of(staged.as_file(), directory);
    let at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis();
    let seed = format!("{}:{at}:{}:{}", std::process::id(), staged.path().display(), path.display());
    let record = LockRecord {
        token: sha256_hex(seed)[..32].to_string(),
        pid: std::process::id(),
        target: path.display().to_string(),
        at,
        tool: TOOL,
    };
    let json = serde_json::to_vec(&record).map_err(io::Error::other)?;
    staged.as_file().write_all(&json).map_err(with_path(staged.path()))?;
    Ok(staged)
}

/// Classifies the lock file at `path`; a gate-check lock whose flock is
/// free belongs to a crashed process and is removed here.
fn inspect(path: &Path) -> io::Result<Holder> {
    let opened = OpenOptions::new().read(true).custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits()).open(path);
    let file = match opened {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Holder::Gone),
        Err(error) => return Err(with_path(path)(error)),
    };
    let metadata = file.metadata().map_err(with_path(path))?;
    if !metadata.is_file() {
        return Err(io::Error::other(format!("lock {} must be a regular file", path.display())));
    }
    let mut bytes = Vec::new();
    (&file).take(LOCK_METADATA_MAX_BYTES).read_to_end(&mut bytes).map_err(with_path(path))?;
    // Only `tool` and `pid` matter here; Node's record has no `tool`.
    let record: Option<serde_json::Value> = serde_json::from_slice(&bytes).ok();
    let field = |name: &str| record.as_ref().and_then(|record| record.get(name));
    let identity = (metadata.dev(), metadata.ino());
    match field("tool").and_then(|tool| tool.as_str()) {
        Some(TOOL) => {
            if remove_if_crashed(path, &file, identity) {
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

/// Removes the gate-check lock open as `file` when its holder is gone: its
/// flock is free and the name still refers to it. Holders unlink before they
/// unlock and the Node tool never unlinks another's lock, so nobody can
/// replace the name between this check and the unlink. True when the lock
/// is no longer held (removed here or released meanwhile).
fn remove_if_crashed(path: &Path, file: &File, identity: (u64, u64)) -> bool {
    if file.try_lock().is_err() {
        return false;
    }
    match fs::symlink_metadata(path) {
        Ok(named) if (named.dev(), named.ino()) == identity => fs::remove_file(path).is_ok(),
        _ => true,
    }
}

/// Removes every lock and staging file in the lock directory left by a
/// crashed gate-check (flock free), so one crash cannot wedge the Node tool
/// on a lock gate-check never asks for again. `wanted` is handled by the
/// acquire loop itself.
fn remove_crashed_locks(directory: &Path, wanted: &Path) {
    let Ok(entries) = fs::read_dir(directory) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path == wanted {
            continue;
        }
        if name.ends_with(".filelock") {
            let _ = inspect(&path);
        } else if name.starts_with(STAGING_PREFIX) && name.ends_with(".tmp") {
            let Ok(file) = OpenOptions::new().read(true).custom_flags(OFlag::O_NOFOLLOW.bits()).open(&path) else {
                continue;
            };
            if let Ok(metadata) = file.metadata() {
                remove_if_crashed(&path, &file, (metadata.dev(), metadata.ino()));
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

/// What a locked update decided: keep the file, replace it, or remove files.
pub enum Change<T> {
    Keep(T),
    Replace {
        value: T,
        bytes: Vec<u8>,
        mode: u32,
    },
    /// Replace, keeping what the replaced file had (`replace_file_keeping`).
    ReplaceKeeping {
        value: T,
        bytes: Vec<u8>,
        original: fs::Metadata,
    },
    /// Remove `paths` (a record directory's entries; one already gone is
    /// no error), each with the stale temp files of its earlier writes.
    Remove {
        value: T,
        paths: Vec<PathBuf>,
    },
}

/// The one read-modify-write of a state file: while `lock` (acquired by
/// the caller, waiting as long as suits it: a `FileLock`, or the flocked
/// directory of a store that locks itself) is held, `decide` reads the
/// current state and says what to do, and a replacement of `target` is
/// written atomically before the lock is released, so no other writer can
/// slip in between the read and the write.
pub fn update_locked<L, T, E: From<io::Error>>(
    lock: L,
    target: &Path,
    decide: impl FnOnce() -> Result<Change<T>, E>,
) -> Result<T, E> {
    update_locked_then(lock, target, decide, |value| value)
}

/// `update_locked`, then `after` on the decided value while the lock is
/// still held (an audit line that must list commits in commit order).
pub fn update_locked_then<L, T, R, E: From<io::Error>>(
    lock: L,
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
        Change::ReplaceKeeping { value, bytes, original } => {
            replace_file_keeping(target, &bytes, &original)?;
            value
        }
        Change::Remove { value, paths } => {
            for path in &paths {
                match fs::remove_file(path) {
                    Ok(()) => {}
                    Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                    Err(error) => return Err(with_path(path)(error).into()),
                }
                remove_stale_temp_files(path)?;
            }
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
    fn temp_names_are_recognized_exactly() {
        assert!(is_temp_name_for(".GATES.md.aB3xYz.tmp", "GATES.md"));
        for other in [".GATES.md.aB3xY.tmp", ".GATES.md.aB3xYz.tmp.bak", ".GATES.md.aB-xYz.tmp", "GATES.md.aB3xYz.tmp"]
        {
            assert!(!is_temp_name_for(other, "GATES.md"), "{other}");
        }
        assert!(!is_temp_name_for(".OTHER.md.aB3xYz.tmp", "GATES.md"));
        assert_eq!(temp_file_target(".GATES.md.aB3xYz.tmp"), Some("GATES.md"));
        assert_eq!(temp_file_target(".a.json.aB3xYz.tmp"), Some("a.json"));
        for other in [".aB3xYz.tmp", "GATES.md.aB3xYz.tmp", ".GATES.md.aB3xY.tmp", ".GATES.md.tmp"] {
            assert_eq!(temp_file_target(other), None, "{other}");
        }
    }

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
