//! Atomic replacement of a file (temp file in the same directory, fsync,
//! rename, fsync of the directory; on Windows `MoveFileExW` written
//! through), the temp files a killed replacement leaves, and giving what
//! this process creates to the owner of its directory. Every step names its
//! file inside a directory held open, so the directory written into is the
//! one that was opened.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

use super::directory::{with_path, OpenDirectory};
use super::sys::{self, Access, Kind, Opened};

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
        for _ in 0..TEMP_ATTEMPTS {
            let random: String = std::iter::repeat_with(fastrand::alphanumeric).take(TEMP_RANDOM_CHARS).collect();
            let name = OsString::from(format!("{prefix}{random}{suffix}"));
            match sys::create_new_file(self.dir(), &name, 0o600) {
                Ok(file) => {
                    let name = TempName { directory: self, name, placed: false };
                    return Ok(TempFile { file, name });
                }
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(error) => return Err(self.error(error)),
            }
        }
        Err(self.error(io::Error::new(io::ErrorKind::AlreadyExists, "no unused temporary file name")))
    }

    /// Replaces (or creates) `name` with `bytes`: a temp file in this
    /// directory with permissions `mode`, fsync, rename over `name`, fsync
    /// of the directory. A reader, or a crash at any instant, sees the old
    /// file or the new one, never a mix. The new file belongs to the owner
    /// of this directory (see `sys::give_file_to_owner`).
    pub fn replace(&self, name: &OsStr, bytes: &[u8], mode: u32) -> io::Result<()> {
        self.replace_with(name, bytes, |temp| {
            sys::give_file_to_owner(temp, self.dir());
            sys::set_mode(temp, mode)
        })
    }

    /// Like `replace`, but the new file keeps what the replaced one had
    /// (see `sys::keep_attributes`): on Unix its owner and group, mode and
    /// extended attributes, on Windows its ACL.
    pub fn replace_keeping(&self, name: &OsStr, bytes: &[u8], original: &fs::Metadata) -> io::Result<()> {
        self.replace_with(name, bytes, |temp| sys::keep_attributes(self.dir(), name, temp, original))
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

    /// Makes a rename in this directory durable.
    fn sync(&self) {
        sys::sync_directory(self.dir());
    }

    /// Writes `name` whole (a temp file with permissions `mode`, linked
    /// into place) unless something already has that name; true when it
    /// was written. The new file belongs to the owner of this directory.
    pub fn write_new(&self, name: &OsStr, bytes: &[u8], mode: u32) -> io::Result<bool> {
        let shown = self.join(name);
        let mut temp = self.create_temp(&temp_prefix(name), TEMP_SUFFIX)?;
        temp.file.write_all(bytes).map_err(with_path(&shown))?;
        sys::give_file_to_owner(&temp.file, self.dir());
        sys::set_mode(&temp.file, mode).map_err(with_path(&shown))?;
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

    /// Removes `name` when it is there.
    pub fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        match sys::remove_file(self.dir(), name) {
            Err(error) if error.kind() != io::ErrorKind::NotFound => Err(with_path(&self.join(name))(error)),
            _ => Ok(()),
        }
    }

    /// What `name` is now, not following a link.
    pub fn entry(&self, name: &OsStr) -> io::Result<Entry> {
        match sys::stat_no_follow(self.dir().base(), Path::new(name)) {
            Ok(Some(stat)) if stat.kind == Kind::File => Ok(Entry::File),
            Ok(Some(_)) => Ok(Entry::Other),
            Ok(None) => Ok(Entry::Missing),
            Err(error) => Err(with_path(&self.join(name))(error)),
        }
    }

    /// Appends `bytes` to `name` (created with `mode` when missing, and then
    /// given to the owner of this directory) in one write, so concurrent
    /// appenders never overwrite each other, then syncs it. Anything but
    /// one regular single-link file, before the open and as opened, is
    /// refused, as is a name replaced in between.
    pub fn append(&self, name: &OsStr, bytes: &[u8], mode: u32) -> Result<(), AppendError> {
        let shown = self.join(name);
        let io = |error: io::Error| AppendError::Io(with_path(&shown)(error));
        let single_file = |stat: &sys::Stat| stat.kind == Kind::File && stat.links == 1;
        let base = self.dir().base();
        let before = match sys::stat_no_follow(base, Path::new(name)).map_err(io)? {
            Some(stat) if !single_file(&stat) => return Err(AppendError::NotRegular),
            before => before,
        };
        let file = match sys::open_no_follow(base, Path::new(name), Access::AppendCreating(mode)).map_err(io)? {
            Opened::File(file) => file,
            Opened::Link | Opened::Missing => return Err(AppendError::NotRegular),
        };
        let opened = sys::file_stat(&file).map_err(io)?;
        let named = sys::stat_no_follow(base, Path::new(name)).map_err(io)?;
        if !single_file(&opened) || named.map(|named| named.id) != Some(opened.id) {
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
        let base = self.dir().base();
        let target_stat = sys::stat_no_follow(base, Path::new(name)).ok().flatten();
        let mut removed = 0;
        for candidate in self.entries()? {
            if !candidate.to_str().is_some_and(|c| is_temp_name_for(c, target)) {
                continue;
            }
            let Ok(Some(stat)) = sys::stat_no_follow(base, Path::new(&candidate)) else {
                continue;
            };
            if stat.kind == Kind::File && stat.links == 1 && sys::may_remove_temp(&stat, target_stat.as_ref()) {
                match sys::remove_file(self.dir(), &candidate) {
                    Ok(()) => removed += 1,
                    Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                    Err(error) => return Err(with_path(&self.join(&candidate))(error)),
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
        sys::rename(self.name.directory.dir(), &self.name.name, target)?;
        self.name.placed = true;
        Ok(())
    }

    /// Links the temp file in as `target`, never replacing anything there
    /// (`AlreadyExists` then); the temp name stays until the file is dropped
    /// or taken with `into_file`.
    pub(super) fn link_as(&self, target: &OsStr) -> io::Result<()> {
        sys::hard_link(self.name.directory.dir(), &self.name.name, target)
    }

    /// The open file, its temp name removed.
    pub(super) fn into_file(self) -> File {
        self.file
    }
}

impl Drop for TempName<'_> {
    fn drop(&mut self) {
        if !self.placed {
            let _ = sys::remove_file(self.directory.dir(), &self.name);
        }
    }
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

    // Symbolic links: Windows lets only administrators (or Developer Mode)
    // create one, and wine 8, which runs the Windows tests, creates none.
    #[cfg(unix)]
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
