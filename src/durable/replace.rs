//! Atomic replacement of a file (temp file in the same directory, fsync,
//! rename, fsync of the directory), the temp files a killed replacement
//! leaves, and giving what this process creates to the owner of its
//! directory. Every step names its file inside a directory held open, so
//! the directory written into is the one that was opened.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use rustix::fs::{openat, statat, unlinkat, AtFlags, FileType, Mode, OFlags};

use super::directory::{with_path, OpenDirectory};

/// Replaces (or creates) `path`, outside any repository, with `bytes` (see
/// `OpenDirectory::replace`); its directory is resolved as the OS does.
pub fn replace_file(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let (directory, name) = OpenDirectory::containing(path)?;
    directory.replace(name, bytes, mode)
}

/// `OpenDirectory::remove_stale_temp_files` for `path`, outside any
/// repository.
pub fn remove_stale_temp_files(path: &Path) -> io::Result<usize> {
    let (directory, name) = OpenDirectory::containing(path)?;
    directory.remove_stale_temp_files(name)
}

/// The temp-file name prefix `replace` uses for `name`; the rest is
/// `TEMP_RANDOM_CHARS` ASCII letters and digits and `TEMP_SUFFIX`.
fn temp_prefix(name: &OsStr) -> String {
    format!(".{}.", name.to_string_lossy())
}
const TEMP_RANDOM_CHARS: usize = 6;
const TEMP_SUFFIX: &str = ".tmp";
/// Names tried before a temp file is given up: a clash is one in 62^6.
const TEMP_ATTEMPTS: usize = 64;

/// What a name in a directory is, not following a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    Missing,
    File,
    /// A link, a directory, a FIFO or anything else but a regular file.
    Other,
}

/// Why `OpenDirectory::append` wrote nothing.
#[derive(Debug)]
pub enum AppendError {
    /// Not one regular single-link file, or replaced while it was opened.
    NotRegular,
    Io(io::Error),
}

/// A private (0600) file being prepared inside a directory, unlinked when
/// dropped unless it was put in place.
pub(super) struct TempFile<'a> {
    file: File,
    name: TempName<'a>,
}

/// The name of a `TempFile`, removed when dropped unless it was placed.
struct TempName<'a> {
    directory: &'a OpenDirectory,
    name: OsString,
    placed: bool,
}

impl OpenDirectory {
    /// A new temp file `<prefix><6 letters or digits><suffix>` here,
    /// created exclusively, so a planted name (a link) is never opened.
    pub(super) fn create_temp(&self, prefix: &str, suffix: &str) -> io::Result<TempFile<'_>> {
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        for _ in 0..TEMP_ATTEMPTS {
            let random: String = std::iter::repeat_with(fastrand::alphanumeric).take(TEMP_RANDOM_CHARS).collect();
            let name = OsString::from(format!("{prefix}{random}{suffix}"));
            match openat(self.fd(), &name, flags, Mode::from_raw_mode(0o600)) {
                Ok(fd) => {
                    let name = TempName { directory: self, name, placed: false };
                    return Ok(TempFile { file: File::from(fd), name });
                }
                Err(rustix::io::Errno::EXIST) => continue,
                Err(errno) => return Err(self.error(errno.into())),
            }
        }
        Err(self.error(io::Error::new(io::ErrorKind::AlreadyExists, "no unused temporary file name")))
    }

    /// Replaces (or creates) `name` with `bytes`: a temp file in this
    /// directory with permissions `mode`, fsync, rename over `name`, fsync
    /// of the directory. A reader, or a crash at any instant, sees the old
    /// file or the new one, never a mix. The new file belongs to the owner
    /// of this directory (see `give_file_to_owner_of`).
    pub fn replace(&self, name: &OsStr, bytes: &[u8], mode: u32) -> io::Result<()> {
        self.replace_with(name, bytes, |temp| {
            give_file_to_owner_of(temp, self);
            set_mode(temp, mode)
        })
    }

    /// Like `replace`, but the new file keeps what the replaced one had:
    /// its owner and group (when this process may give them: a run as root
    /// on a user's ledger must not leave it root's), its mode, and its
    /// extended attributes (ACLs, labels, user attributes) where they can
    /// be set.
    pub fn replace_keeping(&self, name: &OsStr, bytes: &[u8], original: &fs::Metadata) -> io::Result<()> {
        self.replace_with(name, bytes, |temp| {
            let (uid, gid) = (original.uid(), original.gid());
            if std::os::unix::fs::fchown(temp, Some(uid), Some(gid)).is_err() {
                // Not privileged: keep at least the group when it is one of ours.
                let _ = std::os::unix::fs::fchown(temp, None, Some(gid));
            }
            // After the chown, which clears set-id bits.
            set_mode(temp, original.mode() & 0o7777)?;
            self.copy_extended_attributes(name, temp);
            Ok(())
        })
    }

    fn replace_with(
        &self,
        name: &OsStr,
        bytes: &[u8],
        prepare: impl FnOnce(&File) -> io::Result<()>,
    ) -> io::Result<()> {
        let shown = self.join(name);
        let mut temp = self.create_temp(&temp_prefix(name), TEMP_SUFFIX)?;
        temp.file.write_all(bytes).map_err(with_path(&shown))?;
        prepare(&temp.file).map_err(with_path(&shown))?;
        temp.file.sync_all().map_err(with_path(&shown))?;
        temp.rename_to(name).map_err(with_path(&shown))?;
        self.sync();
        Ok(())
    }

    /// Makes a rename in this directory durable. Some file systems refuse
    /// to sync a directory; the change has happened by then, so that is no
    /// error.
    fn sync(&self) {
        if let Ok(fd) = self.reopen_for_reading() {
            let _ = rustix::fs::fsync(fd);
        }
    }

    /// Writes `name` whole (a temp file with permissions `mode`, linked
    /// into place) unless something already has that name; true when it
    /// was written. The new file belongs to the owner of this directory.
    pub fn write_new(&self, name: &OsStr, bytes: &[u8], mode: u32) -> io::Result<bool> {
        let shown = self.join(name);
        let mut temp = self.create_temp(&temp_prefix(name), TEMP_SUFFIX)?;
        temp.file.write_all(bytes).map_err(with_path(&shown))?;
        give_file_to_owner_of(&temp.file, self);
        set_mode(&temp.file, mode).map_err(with_path(&shown))?;
        temp.file.sync_all().map_err(with_path(&shown))?;
        match temp.link_as(name) {
            Ok(()) => {
                self.sync();
                Ok(true)
            }
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(error) => Err(with_path(&shown)(error)),
        }
    }

    /// Copies every extended attribute the file `from` has that the new file
    /// accepts; one the file system or this user cannot set is left behind
    /// rather than blocking the write.
    fn copy_extended_attributes(&self, from: &OsStr, to: &File) {
        use xattr::FileExt;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let Ok(original) = openat(self.fd(), from, flags, Mode::empty()).map(File::from) else {
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

    /// Removes `name` when it is there.
    pub fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        match unlinkat(self.fd(), name, AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(errno) => Err(with_path(&self.join(name))(errno.into())),
        }
    }

    /// What `name` is now, not following a link.
    pub fn entry(&self, name: &OsStr) -> io::Result<Entry> {
        match statat(self.fd(), name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile => Ok(Entry::File),
            Ok(_) => Ok(Entry::Other),
            Err(rustix::io::Errno::NOENT) => Ok(Entry::Missing),
            Err(errno) => Err(with_path(&self.join(name))(errno.into())),
        }
    }

    /// Appends `bytes` to `name` (created with `mode` when missing, and then
    /// given to the owner of this directory) in one write, so concurrent
    /// appenders never overwrite each other, then syncs it. Anything but
    /// one regular single-link file, before the open and as opened, is
    /// refused, as is a name replaced in between.
    pub fn append(&self, name: &OsStr, bytes: &[u8], mode: u32) -> Result<(), AppendError> {
        use std::os::fd::AsFd;
        let shown = self.join(name);
        let io = |errno: rustix::io::Errno| AppendError::Io(with_path(&shown)(errno.into()));
        let single_file = |stat: &rustix::fs::Stat| {
            FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile && stat.st_nlink == 1
        };
        let before = match statat(self.fd(), name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) if !single_file(&stat) => return Err(AppendError::NotRegular),
            Ok(stat) => Some(stat),
            Err(rustix::io::Errno::NOENT) => None,
            Err(errno) => return Err(io(errno)),
        };
        let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK;
        let file = match openat(self.fd(), name, flags | OFlags::CLOEXEC, Mode::from_raw_mode(mode)) {
            Ok(fd) => File::from(fd),
            Err(rustix::io::Errno::LOOP) => return Err(AppendError::NotRegular),
            Err(errno) => return Err(io(errno)),
        };
        let opened = rustix::fs::fstat(file.as_fd()).map_err(io)?;
        let named = statat(self.fd(), name, AtFlags::SYMLINK_NOFOLLOW).map_err(io)?;
        if !single_file(&opened) || (opened.st_dev, opened.st_ino) != (named.st_dev, named.st_ino) {
            return Err(AppendError::NotRegular);
        }
        if before.is_none() {
            // Created just now (or by a concurrent appender, to the same
            // owner); best effort, as for every state file.
            let _ = self.give_entry_to_owner(name);
        }
        (&file).write_all(bytes).map_err(|error| AppendError::Io(with_path(&shown)(error)))?;
        file.sync_all().map_err(|error| AppendError::Io(with_path(&shown)(error)))
    }

    /// Removes the temp files a killed `replace` of `name` left behind. The
    /// caller must hold the lock that serializes every replacement of
    /// `name`: then no live writer owns such a file, and one is removed only
    /// when it is provably gate-check's: the exact temp-name pattern, a
    /// regular single-link file, owned by this user or by the owner of
    /// `name`.
    pub fn remove_stale_temp_files(&self, name: &OsStr) -> io::Result<usize> {
        let Some(target) = name.to_str() else {
            return Ok(0);
        };
        let target_owner = statat(self.fd(), name, AtFlags::SYMLINK_NOFOLLOW).ok().map(|stat| stat.st_uid);
        let me = rustix::process::geteuid().as_raw();
        let mut removed = 0;
        for candidate in self.entries()? {
            if !candidate.to_str().is_some_and(|c| is_temp_name_for(c, target)) {
                continue;
            }
            let Ok(stat) = statat(self.fd(), &candidate, AtFlags::SYMLINK_NOFOLLOW) else {
                continue;
            };
            let owner_ok = stat.st_uid == me || Some(stat.st_uid) == target_owner;
            if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile && stat.st_nlink == 1 && owner_ok {
                match unlinkat(self.fd(), &candidate, AtFlags::empty()) {
                    Ok(()) => removed += 1,
                    Err(rustix::io::Errno::NOENT) => {}
                    Err(errno) => return Err(with_path(&self.join(&candidate))(errno.into())),
                }
            }
        }
        Ok(removed)
    }
}

impl TempFile<'_> {
    pub(super) fn file(&self) -> &File {
        &self.file
    }

    /// Renames the temp file over `target` in the same directory.
    fn rename_to(mut self, target: &OsStr) -> io::Result<()> {
        let fd = self.name.directory.fd();
        rustix::fs::renameat(fd, &self.name.name, fd, target)?;
        self.name.placed = true;
        Ok(())
    }

    /// Links the temp file in as `target`, never replacing anything there
    /// (`AlreadyExists` then); the temp name stays until the file is dropped
    /// or taken with `into_file`.
    pub(super) fn link_as(&self, target: &OsStr) -> io::Result<()> {
        let fd = self.name.directory.fd();
        rustix::fs::linkat(fd, &self.name.name, fd, target, AtFlags::empty()).map_err(io::Error::from)
    }

    /// The open file, its temp name removed.
    pub(super) fn into_file(self) -> File {
        self.file
    }
}

impl Drop for TempName<'_> {
    fn drop(&mut self) {
        if !self.placed {
            let _ = unlinkat(self.directory.fd(), &self.name, AtFlags::empty());
        }
    }
}

fn set_mode(file: &File, mode: u32) -> io::Result<()> {
    if mode == 0o600 {
        return Ok(());
    }
    file.set_permissions(fs::Permissions::from_mode(mode))
}

/// True for a name `replace` gives its temp files for `name`.
fn is_temp_name_for(candidate: &str, name: &str) -> bool {
    candidate
        .strip_prefix(&temp_prefix(OsStr::new(name)))
        .and_then(|rest| rest.strip_suffix(TEMP_SUFFIX))
        .is_some_and(|random| random.len() == TEMP_RANDOM_CHARS && random.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// The name of the file a temp file of `replace` was for, when `candidate`
/// is such a temp name.
pub fn temp_file_target(candidate: &str) -> Option<&str> {
    let inner = candidate.strip_prefix('.')?.strip_suffix(TEMP_SUFFIX)?;
    let (target, random) = inner.rsplit_once('.')?;
    let random_ok = random.len() == TEMP_RANDOM_CHARS && random.bytes().all(|b| b.is_ascii_alphanumeric());
    (random_ok && !target.is_empty()).then_some(target)
}

/// `OpenDirectory::give_entry_to_owner` for a file this process holds open
/// and has not yet linked into place, so the file is never visible with the wrong
/// owner. Best effort, as for a rewritten ledger: a file system that
/// refuses the change (root squashed to nobody) must not make the state
/// unwritable.
pub(super) fn give_file_to_owner_of(file: &File, directory: &OpenDirectory) {
    if !rustix::process::geteuid().is_root() {
        return;
    }
    let (Ok(owner), Ok(created)) = (rustix::fs::fstat(directory.fd()), file.metadata()) else {
        return;
    };
    if (created.uid(), created.gid()) != (owner.st_uid, owner.st_gid) {
        let _ = std::os::unix::fs::fchown(file, Some(owner.st_uid), Some(owner.st_gid));
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
    fn a_replacement_lands_in_the_directory_held_open_even_after_its_path_is_swapped() {
        let dir = tempfile::tempdir().unwrap();
        let (held, elsewhere) = (dir.path().join("held"), dir.path().join("elsewhere"));
        fs::create_dir(&held).unwrap();
        fs::create_dir(&elsewhere).unwrap();
        let directory = OpenDirectory::open(&held).unwrap();
        fs::rename(&held, dir.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &held).unwrap();
        directory.replace(OsStr::new("state.json"), b"new", 0o600).unwrap();
        assert_eq!(fs::read_to_string(dir.path().join("moved/state.json")).unwrap(), "new");
        assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0, "written through the swapped path");
        assert!(directory.write_new(OsStr::new("once"), b"1", 0o600).unwrap());
        assert!(!directory.write_new(OsStr::new("once"), b"2", 0o600).unwrap());
        assert_eq!(fs::read_to_string(dir.path().join("moved/once")).unwrap(), "1");
        let names: Vec<_> = fs::read_dir(dir.path().join("moved")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "a temp file was left: {names:?}");
    }
}
