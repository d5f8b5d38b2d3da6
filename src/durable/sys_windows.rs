//! The Windows file primitives of this layer. Win32 has no `openat`: a name
//! is opened by its path below a directory handle that pins the directory
//! (held without delete sharing, it cannot be renamed or removed while it
//! is held), and a final link is never followed: every open asks for the
//! reparse point itself (`FILE_FLAG_OPEN_REPARSE_POINT`) and refuses what
//! it finds to be a link (see `is_link`). The Node tool on Windows checks names by snapshot
//! alone (its SECURITY.md says so). Replacement is `MoveFileExW` with
//! replace-existing and write-through, retried as Node retries it while an
//! indexer or scanner holds the target open.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use windows_sys::Win32::Foundation::{
    ERROR_ACCESS_DENIED, ERROR_LOCK_VIOLATION, ERROR_SHARING_VIOLATION, GENERIC_READ, GENERIC_WRITE, STILL_ACTIVE,
};
use windows_sys::Win32::Storage::FileSystem::{
    FileAttributeTagInfo, FileIdInfo, GetFileInformationByHandle, GetFileInformationByHandleEx, LockFileEx,
    MoveFileExW, BY_HANDLE_FILE_INFORMATION, FILE_ATTRIBUTE_DIRECTORY, FILE_ATTRIBUTE_REPARSE_POINT,
    FILE_ATTRIBUTE_TAG_INFO, FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT, FILE_ID_INFO,
    FILE_READ_ATTRIBUTES, FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE, LOCKFILE_EXCLUSIVE_LOCK,
    LOCKFILE_FAIL_IMMEDIATELY, MOVEFILE_REPLACE_EXISTING, MOVEFILE_WRITE_THROUGH, WRITE_DAC,
};
use windows_sys::Win32::System::SystemServices::IO_REPARSE_TAG_APPEXECLINK;
use windows_sys::Win32::System::Threading::{GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION};
use windows_sys::Win32::System::IO::OVERLAPPED;

use super::acl;

/// A directory held open, with the path it is reached by (names below it
/// are opened by path).
#[derive(Debug)]
pub struct Dir {
    pin: File,
    path: PathBuf,
}

/// Where a name is looked up: below a directory held open, or the working
/// directory.
#[derive(Debug, Clone, Copy)]
pub struct Base<'a>(Option<&'a Path>);

impl Base<'_> {
    fn join(self, name: &Path) -> PathBuf {
        match self.0 {
            Some(directory) => directory.join(name),
            None => name.to_path_buf(),
        }
    }
}

/// The working directory, as a base of relative names.
pub fn working_directory() -> Base<'static> {
    Base(None)
}

impl Dir {
    pub fn base(&self) -> Base<'_> {
        Base(Some(&self.path))
    }

    fn join(&self, name: &OsStr) -> PathBuf {
        self.path.join(name)
    }
}

/// What identifies a file while it exists: its volume and file id (the
/// 128-bit id where the file system has one, as on ReFS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    device: u64,
    index: u128,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Directory,
    /// A symbolic link, a junction or another reparse point.
    Other,
}

/// What the layer needs to know of a file.
#[derive(Debug, Clone, Copy)]
pub struct Stat {
    pub kind: Kind,
    pub links: u64,
    pub id: FileId,
}

fn stat_of_handle(file: &File) -> io::Result<Stat> {
    // SAFETY: an all-zero structure is valid output space.
    let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
    // SAFETY: the handle is open and `info` is writable and sized.
    if unsafe { GetFileInformationByHandle(file.as_raw_handle(), &mut info) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    let mut wide: FILE_ID_INFO = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer and size describe `wide`.
    let has_wide = unsafe {
        GetFileInformationByHandleEx(
            file.as_raw_handle(),
            FileIdInfo,
            (&raw mut wide).cast(),
            std::mem::size_of::<FILE_ID_INFO>() as u32,
        )
    } != 0;
    let id = if has_wide {
        FileId { device: wide.VolumeSerialNumber, index: u128::from_le_bytes(wide.FileId.Identifier) }
    } else {
        let index = (u128::from(info.nFileIndexHigh) << 32) | u128::from(info.nFileIndexLow);
        FileId { device: u64::from(info.dwVolumeSerialNumber), index }
    };
    let kind = if info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT != 0 && is_link(file)? {
        Kind::Other
    } else if info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY != 0 {
        Kind::Directory
    } else {
        Kind::File
    };
    Ok(Stat { kind, links: u64::from(info.nNumberOfLinks), id })
}

/// Whether the reparse point open as `file` is a link: a name surrogate
/// (a symbolic link, a junction) or an app execution alias, as libuv reads
/// them. Other reparse points (cloud placeholders, deduplicated files) are
/// the files they stand for.
fn is_link(file: &File) -> io::Result<bool> {
    /// The tag bit Windows sets on every kind of reparse point that names
    /// another entry (`IsReparseTagNameSurrogate`).
    const NAME_SURROGATE: u32 = 0x2000_0000;
    // SAFETY: an all-zero structure is valid output space.
    let mut tag: FILE_ATTRIBUTE_TAG_INFO = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer and size describe `tag`.
    let read = unsafe {
        GetFileInformationByHandleEx(
            file.as_raw_handle(),
            FileAttributeTagInfo,
            (&raw mut tag).cast(),
            std::mem::size_of::<FILE_ATTRIBUTE_TAG_INFO>() as u32,
        )
    };
    if read == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(tag.ReparseTag & NAME_SURROGATE != 0 || tag.ReparseTag == IO_REPARSE_TAG_APPEXECLINK)
}

/// Opens `path` for its attributes only, directories included.
/// `follow` false opens a final reparse point itself. `pin` leaves out
/// delete sharing, so the entry cannot be renamed or removed while open.
fn open_attributes(path: &Path, follow: bool, pin: bool) -> io::Result<File> {
    let reparse = if follow { 0 } else { FILE_FLAG_OPEN_REPARSE_POINT };
    let delete = if pin { 0 } else { FILE_SHARE_DELETE };
    OpenOptions::new()
        .access_mode(FILE_READ_ATTRIBUTES)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | delete)
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS | reparse)
        .open(path)
}

fn pinned(path: &Path, follow: bool) -> io::Result<Dir> {
    let pin = open_attributes(path, follow, true)?;
    if stat_of_handle(&pin)?.kind != Kind::Directory {
        return Err(io::Error::new(io::ErrorKind::NotADirectory, "not a real directory"));
    }
    Ok(Dir { pin, path: path.to_path_buf() })
}

/// `path` as the OS resolves it, links included.
pub fn open_directory(path: &Path) -> io::Result<Dir> {
    pinned(path, true)
}

/// `path`, which must itself be a directory and no link.
pub fn open_directory_no_follow(path: &Path) -> io::Result<Dir> {
    pinned(path, false)
}

/// Why a child directory could not be opened.
pub enum ChildError {
    Missing,
    /// A link, a file or anything but a directory.
    NotReal,
    Io(io::Error),
}

/// The child directory `name`, never a link.
pub fn open_child_directory(dir: &Dir, name: &OsStr) -> Result<Dir, ChildError> {
    let path = dir.join(name);
    match open_attributes(&path, false, true) {
        Ok(pin) => match stat_of_handle(&pin) {
            Ok(stat) if stat.kind == Kind::Directory => Ok(Dir { pin, path }),
            Ok(_) => Err(ChildError::NotReal),
            Err(error) => Err(ChildError::Io(error)),
        },
        Err(error) if error.kind() == io::ErrorKind::NotFound => Err(ChildError::Missing),
        Err(error) => Err(ChildError::Io(error)),
    }
}

/// Creates the directory `name`; false when something already has that
/// name. It inherits the directory's ACL (Windows has no mode to give).
pub fn make_directory(dir: &Dir, name: &OsStr) -> io::Result<bool> {
    match fs::create_dir(dir.join(name)) {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(error) => Err(error),
    }
}

/// Creates the file `name` exclusively (`AlreadyExists` when anything, a
/// link included, has the name). It inherits the directory's ACL: Windows
/// has no mode to give.
pub fn create_new_file(dir: &Dir, name: &OsStr, _mode: u32) -> io::Result<File> {
    // The creator may set the ACL (`keep_attributes`).
    OpenOptions::new()
        .read(true)
        .write(true)
        .access_mode(GENERIC_READ | GENERIC_WRITE | WRITE_DAC)
        .create_new(true)
        .open(dir.join(name))
}

/// What opening a name without following a link found.
pub enum Opened {
    Missing,
    /// The name is a link or another reparse point.
    Link,
    File(File),
}

/// How a name is opened.
#[derive(Clone, Copy)]
pub enum Access {
    Read,
    /// Appending, created when missing with this mode on Unix; Windows
    /// has no mode to give.
    AppendCreating(#[expect(dead_code, reason = "Windows files have no mode")] u32),
}

/// Opens `name` below `base` without following a final link. Directories
/// open too (for reading), so the caller tells them apart by kind.
pub fn open_no_follow(base: Base<'_>, name: &Path, access: Access) -> io::Result<Opened> {
    let mut options = OpenOptions::new();
    match access {
        Access::Read => options.read(true),
        Access::AppendCreating(_) => options.append(true).create(true),
    };
    options.custom_flags(FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS);
    let file = match options.open(base.join(name)) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Opened::Missing),
        Err(error) => return Err(error),
    };
    if stat_of_handle(&file)?.kind == Kind::Other {
        return Ok(Opened::Link);
    }
    Ok(Opened::File(file))
}

/// What `name` below `base` is, not following a link; `None` when missing.
pub fn stat_no_follow(base: Base<'_>, name: &Path) -> io::Result<Option<Stat>> {
    match open_attributes(&base.join(name), false, false) {
        Ok(file) => stat_of_handle(&file).map(Some),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// What the open `file` is.
pub fn file_stat(file: &File) -> io::Result<Stat> {
    stat_of_handle(file)
}

/// What the open `file` is, and its metadata.
pub fn file_stat_and_metadata(file: &File) -> io::Result<(Stat, fs::Metadata)> {
    Ok((stat_of_handle(file)?, file.metadata()?))
}

/// What the held directory is.
pub fn directory_stat(dir: &Dir) -> io::Result<Stat> {
    stat_of_handle(&dir.pin)
}

/// The held directory's metadata, read through the handle.
pub fn directory_metadata(dir: &Dir) -> io::Result<fs::Metadata> {
    dir.pin.metadata()
}

/// What `path` names, not following a final link, and its identity. Win32
/// reads the file id only through a handle, so this is two lookups (the
/// ACL, read by path, is a third: see `acl::check_private`).
pub fn entry_metadata(path: &Path) -> io::Result<(fs::Metadata, FileId)> {
    let metadata = fs::symlink_metadata(path)?;
    let id = stat_of_handle(&open_attributes(path, false, false)?)?.id;
    Ok((metadata, id))
}

/// A NUL-terminated UTF-16 path, as Win32 takes it.
pub(super) fn wide(path: &Path) -> Vec<u16> {
    path.as_os_str().encode_wide().chain([0]).collect()
}

/// The codes Node retries a rename or removal on, for up to 2 s: an
/// indexer, a scanner or an editor that holds the file open for a moment
/// (`EPERM`, `EBUSY` and `EACCES` in libuv's terms).
pub fn is_transient(error: &io::Error) -> bool {
    let transient = [ERROR_ACCESS_DENIED, ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION];
    error.raw_os_error().is_some_and(|code| transient.iter().any(|&t| t as i32 == code))
}

/// Runs `step` until it succeeds, fails otherwise than transiently, or 2 s
/// have passed: Node's backoff, from 5 ms doubling to 100 ms.
fn retrying_transient(mut step: impl FnMut() -> io::Result<()>) -> io::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut delay = Duration::from_millis(5);
    loop {
        match step() {
            Err(error) if is_transient(&error) && Instant::now() < deadline => {
                std::thread::sleep(delay.min(deadline.saturating_duration_since(Instant::now())));
                delay = (delay * 2).min(Duration::from_millis(100));
            }
            result => return result,
        }
    }
}

/// Renames `from` over `to` in one step, durable when it returns
/// (`MOVEFILE_WRITE_THROUGH`).
pub fn rename(dir: &Dir, from: &OsStr, to: &OsStr) -> io::Result<()> {
    let (from, to) = (wide(&dir.join(from)), wide(&dir.join(to)));
    retrying_transient(|| {
        // SAFETY: both paths are NUL-terminated and outlive the call.
        let moved =
            unsafe { MoveFileExW(from.as_ptr(), to.as_ptr(), MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH) };
        if moved == 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    })
}

/// Links `from` in as `to`, never replacing anything (`AlreadyExists`).
pub fn hard_link(dir: &Dir, from: &OsStr, to: &OsStr) -> io::Result<()> {
    fs::hard_link(dir.join(from), dir.join(to))
}

/// Removes the file `name` (`NotFound` when it is not there), retried as
/// Node retries it while something holds the file open.
pub fn remove_file(dir: &Dir, name: &OsStr) -> io::Result<()> {
    let path = dir.join(name);
    retrying_transient(|| fs::remove_file(&path))
}

/// Every name in the directory.
pub fn entries(dir: &Dir) -> io::Result<Vec<OsString>> {
    fs::read_dir(&dir.path)?.map(|entry| entry.map(|entry| entry.file_name())).collect()
}

/// Nothing to do: a directory has no handle to flush, and the rename was
/// written through (`MOVEFILE_WRITE_THROUGH`) before it returned.
pub fn sync_directory(_dir: &Dir) {}

/// Whether this process may create and remove entries in the directory,
/// as its access token and the directory's ACL decide.
pub fn check_writable(dir: &Dir) -> io::Result<()> {
    acl::check_writable(&dir.path)
}

/// Windows files have no mode: a new file has the directory's inherited ACL.
pub fn set_mode(_file: &File, _mode: u32) -> io::Result<()> {
    Ok(())
}

/// Gives the new file (`to`, not yet in place) the access list the file
/// `from` it replaces had, so an explicit ACL on a ledger survives its
/// rewrite (a new file would otherwise get only the directory's inherited
/// one); where it cannot be read or set, the inherited one stays.
pub fn keep_attributes(dir: &Dir, from: &OsStr, to: &File, _original: &fs::Metadata) -> io::Result<()> {
    acl::copy_access_list(&dir.join(from), to);
    Ok(())
}

/// New entries are the creating user's and inherit the directory's ACL:
/// there is no owner to hand over.
pub fn give_entry_to_owner(_dir: &Dir, _name: &OsStr) -> io::Result<()> {
    Ok(())
}

/// As `give_entry_to_owner`: nothing to hand over.
pub fn give_file_to_owner(_file: &File, _dir: &Dir) {}

/// Whether a leftover temp file may be removed: the directory's ACL
/// decides who may remove it there, as for any file.
pub fn may_remove_temp(_candidate: &Stat, _target: Option<&Stat>) -> bool {
    true
}

/// The byte a holder locks: far past any lock file's end, so the lock
/// never stops anyone (the Node tool included) from reading the file, as a
/// whole-file lock, which Windows enforces on reads, would.
const HELD_OFFSET: u64 = 0x7FFF_FFFF_FFFF_FFFE;

fn lock_held_byte(file: &File, wait: bool) -> io::Result<()> {
    let mut overlapped = OVERLAPPED::default();
    overlapped.Anonymous.Anonymous.Offset = HELD_OFFSET as u32;
    overlapped.Anonymous.Anonymous.OffsetHigh = (HELD_OFFSET >> 32) as u32;
    let flags = LOCKFILE_EXCLUSIVE_LOCK | if wait { 0 } else { LOCKFILE_FAIL_IMMEDIATELY };
    // SAFETY: the handle is open for reading or writing and `overlapped`
    // outlives the call, which is synchronous on this handle.
    if unsafe { LockFileEx(file.as_raw_handle(), flags, 0, 1, 0, &mut overlapped) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Marks the open lock `file` as held by this live process: a lock of one
/// byte, which Windows drops when the handle closes or the process ends.
pub fn hold(file: &File) -> io::Result<()> {
    lock_held_byte(file, true)
}

/// Whether the holder of `file` is gone: its byte can be locked (and now
/// is, by us).
pub fn holder_gone(file: &File) -> bool {
    lock_held_byte(file, false).is_ok()
}

/// Whether a process with this pid exists and has not exited.
pub fn process_is_running(pid: u32) -> bool {
    // SAFETY: opening a process by id for a query; the handle is owned below.
    let raw = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if raw.is_null() {
        // Denied means it exists and belongs to someone else.
        return io::Error::last_os_error().raw_os_error() == Some(ERROR_ACCESS_DENIED as i32);
    }
    // SAFETY: a new handle that nothing else owns.
    let process = unsafe { OwnedHandle::from_raw_handle(raw) };
    let mut code = 0u32;
    // SAFETY: the handle is open with query access; `code` is writable.
    let queried = unsafe { GetExitCodeProcess(process.as_raw_handle(), &mut code) } != 0;
    // A process whose state cannot be read is taken to be running.
    !queried || code == STILL_ACTIVE as u32
}

/// How many links one `real_path` follows before it gives up (Node's
/// Windows realpath follows a cycle for ever).
const MAX_LINKS: usize = 40;

/// `path` with every link resolved, spelled as the Node tool's
/// `realpathSync` spells it: resolved against the working directory, with
/// each symbolic link or junction replaced by its target (a relative
/// target resolved against the link's directory), and every other
/// component kept as given: no on-disk case, no `\\?\` prefix. Lock names
/// hash this spelling, so they match the Node tool's. Every level must
/// exist.
pub fn real_path(path: &Path) -> io::Result<PathBuf> {
    let mut whole = crate::paths::resolve(&std::env::current_dir()?, path);
    let mut followed = 0;
    'restart: loop {
        let mut current = PathBuf::new();
        let mut parts = whole.components().peekable();
        while let Some(root) = parts.next_if(|part| !matches!(part, std::path::Component::Normal(_))) {
            current.push(root.as_os_str());
        }
        fs::symlink_metadata(&current)?;
        let parts: Vec<_> = parts.collect();
        for (index, part) in parts.iter().enumerate() {
            let base = current.join(part);
            if !fs::symlink_metadata(&base)?.is_symlink() {
                current = base;
                continue;
            }
            followed += 1;
            if followed > MAX_LINKS {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{}: too many links", path.display())));
            }
            let target = dunce::simplified(&fs::read_link(&base)?).to_path_buf();
            let resolved = crate::paths::resolve(&current, &target);
            whole = parts[index + 1..].iter().fold(resolved, |whole, rest| whole.join(rest));
            continue 'restart;
        }
        return Ok(whole);
    }
}
