//! The Unix file primitives of this layer: every name is looked up inside a
//! directory descriptor (`openat` and its kin), a final link is never
//! followed (`O_NOFOLLOW`), and a FIFO never blocks an open (`O_NONBLOCK`).

use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{openat, statat, AtFlags, FileType, Mode, OFlags};

/// A directory held open.
#[derive(Debug)]
pub struct Dir(OwnedFd);

/// Where a name is looked up: a directory held open, or the working
/// directory.
pub type Base<'a> = BorrowedFd<'a>;

/// The working directory, as a base of relative names.
pub fn working_directory() -> Base<'static> {
    rustix::fs::CWD
}

impl Dir {
    pub fn base(&self) -> Base<'_> {
        self.0.as_fd()
    }
}

/// What identifies a file while it exists: its device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    device: u64,
    index: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Directory,
    /// A link, a FIFO, a socket or a device.
    Other,
}

/// What the layer needs to know of a file.
#[derive(Debug, Clone, Copy)]
pub struct Stat {
    pub kind: Kind,
    pub links: u64,
    pub id: FileId,
    owner: u32,
}

fn stat_of(stat: &rustix::fs::Stat) -> Stat {
    let kind = match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => Kind::File,
        FileType::Directory => Kind::Directory,
        _ => Kind::Other,
    };
    // `st_dev` is signed on macOS; `st_nlink` narrower on some targets.
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    let (device, links) = (stat.st_dev as u64, u64::from(stat.st_nlink));
    Stat { kind, links, id: FileId { device, index: stat.st_ino }, owner: stat.st_uid }
}

/// On Linux a directory handle asks only for search permission, as a path
/// lookup does (`O_PATH`), so a store that may be written but not listed
/// (0300) still opens; listing and syncing reopen it for reading.
#[cfg(target_os = "linux")]
const LOOKUP: OFlags = OFlags::PATH;
#[cfg(not(target_os = "linux"))]
const LOOKUP: OFlags = OFlags::RDONLY;

fn directory_flags() -> OFlags {
    OFlags::DIRECTORY | OFlags::CLOEXEC | LOOKUP
}

/// `path` as the OS resolves it, links included.
pub fn open_directory(path: &Path) -> io::Result<Dir> {
    Ok(Dir(rustix::fs::open(path, directory_flags(), Mode::empty())?))
}

/// `path`, which must itself be a directory and no link.
pub fn open_directory_no_follow(path: &Path) -> io::Result<Dir> {
    Ok(Dir(rustix::fs::open(path, directory_flags() | OFlags::NOFOLLOW, Mode::empty())?))
}

/// Why a child directory could not be opened.
pub enum ChildError {
    Missing,
    /// A link, a file or anything but a directory.
    NotReal,
    Io(io::Error),
}

/// A level that is not a real directory: a link (`ELOOP`, or `EMLINK` on
/// the BSDs), a file or a link opened as a directory (`ENOTDIR`), or a
/// resolution that would leave the root (`EXDEV`).
fn refuses_as_not_real(errno: rustix::io::Errno) -> bool {
    use rustix::io::Errno;
    matches!(errno, Errno::LOOP | Errno::MLINK | Errno::NOTDIR | Errno::XDEV)
}

/// The child directory `name`, never a link.
pub fn open_child_directory(dir: &Dir, name: &OsStr) -> Result<Dir, ChildError> {
    match openat(&dir.0, name, directory_flags() | OFlags::NOFOLLOW, Mode::empty()) {
        Ok(fd) => Ok(Dir(fd)),
        Err(rustix::io::Errno::NOENT) => Err(ChildError::Missing),
        Err(errno) if refuses_as_not_real(errno) => Err(ChildError::NotReal),
        Err(errno) => Err(ChildError::Io(errno.into())),
    }
}

/// `relative` below `base` in one `openat2` call that refuses every link
/// and any escape from `base`; `None` when the kernel lacks the call (Linux
/// before 5.6, or a seccomp filter that forbids it) or refused the path, so
/// the caller walks the levels instead.
#[cfg(target_os = "linux")]
pub fn resolve_beneath(base: &Dir, relative: &Path) -> Option<Dir> {
    use rustix::fs::{openat2, ResolveFlags};
    use std::sync::atomic::{AtomicBool, Ordering};
    static UNAVAILABLE: AtomicBool = AtomicBool::new(false);
    if UNAVAILABLE.load(Ordering::Relaxed) {
        return None;
    }
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    match openat2(&base.0, relative, directory_flags() | OFlags::NOFOLLOW, Mode::empty(), resolve) {
        Ok(fd) => Some(Dir(fd)),
        Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM | rustix::io::Errno::INVAL) => {
            UNAVAILABLE.store(true, Ordering::Relaxed);
            None
        }
        Err(_) => None,
    }
}

/// Creates the directory `name` (0700); false when something already has
/// that name.
pub fn make_directory(dir: &Dir, name: &OsStr) -> io::Result<bool> {
    match rustix::fs::mkdirat(&dir.0, name, Mode::from_raw_mode(0o700)) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::EXIST) => Ok(false),
        Err(errno) => Err(errno.into()),
    }
}

/// Creates the file `name` exclusively with permissions `mode`, so a
/// planted name (a link) is never opened (`AlreadyExists` then).
pub fn create_new_file(dir: &Dir, name: &OsStr, mode: u32) -> io::Result<File> {
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(File::from(openat(&dir.0, name, flags, Mode::from_raw_mode(mode))?))
}

/// What opening a name without following a link found.
pub enum Opened {
    Missing,
    /// The name is a link.
    Link,
    File(File),
}

/// How a name is opened.
#[derive(Clone, Copy)]
pub enum Access {
    Read,
    /// Appending, created with this mode when missing.
    AppendCreating(u32),
}

/// Opens `name` below `base` without following a final link or blocking on
/// a FIFO.
pub fn open_no_follow(base: Base<'_>, name: &Path, access: Access) -> io::Result<Opened> {
    let (flags, mode) = match access {
        Access::Read => (OFlags::RDONLY, 0),
        Access::AppendCreating(mode) => (OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE, mode),
    };
    let flags = flags | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    match openat(base, name, flags, Mode::from_raw_mode(mode)) {
        Ok(fd) => Ok(Opened::File(File::from(fd))),
        // Creating, a missing name means the directory itself is gone: an error.
        Err(rustix::io::Errno::NOENT) if matches!(access, Access::Read) => Ok(Opened::Missing),
        Err(rustix::io::Errno::LOOP) => Ok(Opened::Link),
        Err(errno) => Err(errno.into()),
    }
}

/// What `name` below `base` is, not following a link; `None` when missing.
pub fn stat_no_follow(base: Base<'_>, name: &Path) -> io::Result<Option<Stat>> {
    match statat(base, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => Ok(Some(stat_of(&stat))),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(errno) => Err(errno.into()),
    }
}

/// What the open `file` is.
pub fn file_stat(file: &File) -> io::Result<Stat> {
    Ok(stat_of(&rustix::fs::fstat(file)?))
}

/// What the open `file` is, and its metadata, in one system call.
pub fn file_stat_and_metadata(file: &File) -> io::Result<(Stat, fs::Metadata)> {
    let metadata = file.metadata()?;
    let kind = if metadata.file_type().is_file() {
        Kind::File
    } else if metadata.file_type().is_dir() {
        Kind::Directory
    } else {
        Kind::Other
    };
    let id = FileId { device: metadata.dev(), index: metadata.ino() };
    Ok((Stat { kind, links: metadata.nlink(), id, owner: metadata.uid() }, metadata))
}

/// The held directory's metadata (one `fstat` of the held descriptor).
pub fn directory_metadata(dir: &Dir) -> io::Result<fs::Metadata> {
    File::from(dir.0.try_clone()?).metadata()
}

/// What `path` names, not following a final link, and its identity, from
/// one `lstat`, so both describe the same file.
pub fn entry_metadata(path: &Path) -> io::Result<(fs::Metadata, FileId)> {
    let metadata = fs::symlink_metadata(path)?;
    let id = FileId { device: metadata.dev(), index: metadata.ino() };
    Ok((metadata, id))
}

/// What the held directory is.
pub fn directory_stat(dir: &Dir) -> io::Result<Stat> {
    Ok(stat_of(&rustix::fs::fstat(&dir.0)?))
}

/// Renames `from` over `to` in one step.
pub fn rename(dir: &Dir, from: &OsStr, to: &OsStr) -> io::Result<()> {
    Ok(rustix::fs::renameat(&dir.0, from, &dir.0, to)?)
}

/// Links `from` in as `to`, never replacing anything (`AlreadyExists`).
pub fn hard_link(dir: &Dir, from: &OsStr, to: &OsStr) -> io::Result<()> {
    Ok(rustix::fs::linkat(&dir.0, from, &dir.0, to, AtFlags::empty())?)
}

/// Removes the file `name` (`NotFound` when it is not there).
pub fn remove_file(dir: &Dir, name: &OsStr) -> io::Result<()> {
    Ok(rustix::fs::unlinkat(&dir.0, name, AtFlags::empty())?)
}

/// This directory opened for reading (listing, syncing), whatever the
/// handle was opened for.
fn reopen_for_reading(dir: &Dir) -> io::Result<OwnedFd> {
    Ok(openat(&dir.0, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?)
}

/// Every name in the directory but `.` and `..`.
pub fn entries(dir: &Dir) -> io::Result<Vec<OsString>> {
    use std::os::unix::ffi::OsStrExt;
    let mut listing = rustix::fs::Dir::new(reopen_for_reading(dir)?)?;
    let mut names = Vec::new();
    while let Some(entry) = listing.read() {
        let name = entry?.file_name().to_bytes().to_vec();
        if name != b"." && name != b".." {
            names.push(OsStr::from_bytes(&name).to_os_string());
        }
    }
    Ok(names)
}

/// Makes a rename in the directory durable. Some file systems refuse to
/// sync a directory; the change has happened by then, so that is no error.
pub fn sync_directory(dir: &Dir) {
    if let Ok(fd) = reopen_for_reading(dir) {
        let _ = rustix::fs::fsync(fd);
    }
}

/// Whether this process may create and remove entries in the directory.
pub fn check_writable(dir: &Dir) -> io::Result<()> {
    use rustix::fs::{accessat, Access};
    Ok(accessat(&dir.0, ".", Access::WRITE_OK, AtFlags::empty())?)
}

/// Sets the permissions of a file just created with 0600.
pub fn set_mode(file: &File, mode: u32) -> io::Result<()> {
    if mode == 0o600 {
        return Ok(());
    }
    file.set_permissions(fs::Permissions::from_mode(mode))
}

/// Gives the new file (`to`, not yet in place) what the file `from` it
/// replaces had: its owner and group (when this process may give them: a
/// run as root on a user's ledger must not leave it root's), its mode, and
/// its extended attributes (ACLs, labels, user attributes) where they can
/// be set.
pub fn keep_attributes(dir: &Dir, from: &OsStr, to: &File, original: &fs::Metadata) -> io::Result<()> {
    let (uid, gid) = (original.uid(), original.gid());
    if std::os::unix::fs::fchown(to, Some(uid), Some(gid)).is_err() {
        // Not privileged: keep at least the group when it is one of ours.
        let _ = std::os::unix::fs::fchown(to, None, Some(gid));
    }
    // After the chown, which clears set-id bits.
    set_mode(to, original.mode() & 0o7777)?;
    copy_extended_attributes(dir, from, to);
    Ok(())
}

/// Copies every extended attribute the file `from` has that the new file
/// accepts; one the file system or this user cannot set is left behind
/// rather than blocking the write.
fn copy_extended_attributes(dir: &Dir, from: &OsStr, to: &File) {
    use xattr::FileExt;
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let Ok(original) = openat(&dir.0, from, flags, Mode::empty()).map(File::from) else {
        return;
    };
    let Ok(names) = original.list_xattr() else {
        return;
    };
    for name in names {
        if let Ok(Some(value)) = original.get_xattr(&name) {
            let _ = to.set_xattr(&name, &value);
        }
    }
}

/// Gives the entry `name`, just created by this process, the owner and
/// group of the directory when they differ from ours. Only a privileged
/// process can; for anyone else it already has the only owner it can have.
pub fn give_entry_to_owner(dir: &Dir, name: &OsStr) -> io::Result<()> {
    if !rustix::process::geteuid().is_root() {
        return Ok(());
    }
    let owner = rustix::fs::fstat(&dir.0)?;
    let created = statat(&dir.0, name, AtFlags::SYMLINK_NOFOLLOW)?;
    if (created.st_uid, created.st_gid) == (owner.st_uid, owner.st_gid) {
        return Ok(());
    }
    let (uid, gid) = (rustix::fs::Uid::from_raw(owner.st_uid), rustix::fs::Gid::from_raw(owner.st_gid));
    Ok(rustix::fs::chownat(&dir.0, name, Some(uid), Some(gid), AtFlags::SYMLINK_NOFOLLOW)?)
}

/// `give_entry_to_owner` for a file this process holds open and has not yet
/// linked into place, so the file is never visible with the wrong owner.
/// Best effort, as for a rewritten ledger: a file system that refuses the
/// change (root squashed to nobody) must not make the state unwritable.
pub fn give_file_to_owner(file: &File, dir: &Dir) {
    if !rustix::process::geteuid().is_root() {
        return;
    }
    let (Ok(owner), Ok(created)) = (rustix::fs::fstat(&dir.0), file.metadata()) else {
        return;
    };
    if (created.uid(), created.gid()) != (owner.st_uid, owner.st_gid) {
        let _ = std::os::unix::fs::fchown(file, Some(owner.st_uid), Some(owner.st_gid));
    }
}

/// Whether a leftover temp file may be removed: it is ours, or its target's
/// owner's.
pub fn may_remove_temp(candidate: &Stat, target: Option<&Stat>) -> bool {
    candidate.owner == rustix::process::geteuid().as_raw()
        || target.is_some_and(|target| target.owner == candidate.owner)
}

/// Marks the open lock `file` as held by this live process (an `flock`,
/// which the kernel drops when the process ends, however it ends).
pub fn hold(file: &File) -> io::Result<()> {
    file.lock()
}

/// Whether the holder of `file` is gone: its `flock` can be taken (and now
/// is, by us).
pub fn holder_gone(file: &File) -> bool {
    file.try_lock().is_ok()
}

/// Whether a process with this pid exists.
pub fn process_is_running(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // EPERM means the process exists but belongs to someone else.
    !matches!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None), Err(nix::errno::Errno::ESRCH))
}

/// Unix has no transient refusals: an error says what it means.
pub fn is_transient(_error: &io::Error) -> bool {
    false
}

/// `path` with every link resolved, absolute and normalized.
pub fn real_path(path: &Path) -> io::Result<PathBuf> {
    fs::canonicalize(path)
}
