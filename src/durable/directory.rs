//! Directories held open. Repository state lives in directories reached from
//! the repository root without following a link at any level below it, and
//! every primitive of this layer names its file inside such a handle: a
//! directory swapped for a link after it was checked (by a check running
//! meanwhile) is never written through, because the check and the use are
//! one open. The root itself, and stores outside any repository, are opened
//! as the OS resolves their paths, links included: a root reached through a
//! symlinked home or `/tmp` is still the directory the user named.
//!
//! The platform part (`openat2` on Linux, a walk of `openat` calls with
//! `O_NOFOLLOW | O_DIRECTORY` elsewhere and on kernels without it; on
//! Windows a walk of opens that refuse reparse points) is in `sys`.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::sys::{self, ChildError, Dir};
use crate::paths;

pub(super) fn with_path(path: &Path) -> impl FnOnce(io::Error) -> io::Error + '_ {
    move |error| io::Error::new(error.kind(), format!("{}: {error}", path.display()))
}

/// A directory held open, with the path it was reached by (for messages).
#[derive(Debug)]
pub struct OpenDirectory {
    dir: Dir,
    path: PathBuf,
}

/// Why a directory below a root could not be opened.
#[derive(Debug)]
pub enum BeneathError {
    /// This level is a link, a file or anything but a directory, or the
    /// directory is not below the root at all.
    NotReal(PathBuf),
    /// This level does not exist.
    Missing(PathBuf),
    Io(PathBuf, io::Error),
}

impl fmt::Display for BeneathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BeneathError::NotReal(path) => {
                write!(f, "{} must be a real directory inside the repository", path.display())
            }
            BeneathError::Missing(path) => {
                write!(f, "{}: {}", path.display(), io::Error::from(io::ErrorKind::NotFound))
            }
            BeneathError::Io(path, error) => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for BeneathError {}

impl From<BeneathError> for io::Error {
    fn from(error: BeneathError) -> io::Error {
        let kind = match &error {
            BeneathError::Missing(_) => io::ErrorKind::NotFound,
            BeneathError::Io(_, error) => error.kind(),
            BeneathError::NotReal(_) => io::ErrorKind::Other,
        };
        io::Error::new(kind, error.to_string())
    }
}

/// What is at a path that must be a real directory below a root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Directory {
    Missing,
    /// A directory reached from the root through real directories only.
    Real,
    /// A link, a file or anything else at some level, or not below the root.
    NotReal,
}

impl OpenDirectory {
    /// `path` as the OS resolves it, links included: a repository root, or
    /// a directory outside any repository (the approval store, agent
    /// settings, manual pages).
    pub fn open(path: &Path) -> io::Result<OpenDirectory> {
        let dir = sys::open_directory(path).map_err(with_path(path))?;
        Ok(OpenDirectory { dir, path: path.to_path_buf() })
    }

    /// `path`, which must itself be a real directory, not a link (the
    /// levels above it are resolved as the OS does).
    pub fn open_no_follow(path: &Path) -> io::Result<OpenDirectory> {
        let dir = sys::open_directory_no_follow(path).map_err(with_path(path))?;
        Ok(OpenDirectory { dir, path: path.to_path_buf() })
    }

    /// This directory's metadata, read through the handle held.
    pub fn metadata(&self) -> io::Result<std::fs::Metadata> {
        sys::directory_metadata(&self.dir).map_err(|error| self.error(error))
    }

    /// The identity of this directory.
    pub fn id(&self) -> io::Result<sys::FileId> {
        sys::directory_stat(&self.dir).map(|stat| stat.id).map_err(|error| self.error(error))
    }

    /// The directory holding `path` (opened as `open` does) and the final
    /// name, for a file outside any repository.
    pub fn containing(path: &Path) -> io::Result<(OpenDirectory, &OsStr)> {
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("{}: no file name", path.display())))?;
        Ok((OpenDirectory::open(parent_directory(path))?, name))
    }

    /// `directory`, which must lie below `root` (lexically, as both are
    /// spelled) and be reached from it through real directories only: no
    /// level below the root may be a link, whatever it points to. The root
    /// itself is opened as `open` does.
    pub fn beneath(root: &Path, directory: &Path) -> Result<OpenDirectory, BeneathError> {
        let (root, directory) = (paths::normalize(root), paths::normalize(directory));
        let Some(relative) = paths::strip_prefix(&directory, &root) else {
            return Err(BeneathError::NotReal(directory));
        };
        let base = OpenDirectory::open(&root).map_err(|error| BeneathError::Io(root.clone(), error))?;
        if relative.as_os_str().is_empty() {
            return Ok(base);
        }
        #[cfg(target_os = "linux")]
        if let Some(dir) = sys::resolve_beneath(&base.dir, &relative) {
            return Ok(OpenDirectory { dir, path: directory });
        }
        // The walk also names the level that is not real when the single
        // call refused the path.
        base.walk(&relative, &directory)
    }

    /// `relative` below this directory, one level at a time, none of them
    /// followed if it is a link.
    fn walk(self, relative: &Path, directory: &Path) -> Result<OpenDirectory, BeneathError> {
        let mut current = self;
        for component in relative.components() {
            let Component::Normal(name) = component else {
                return Err(BeneathError::NotReal(directory.to_path_buf()));
            };
            current = current.child(name)?;
        }
        Ok(current)
    }

    /// What is at `directory` below `root` (see `beneath`).
    fn inspect(root: &Path, directory: &Path) -> io::Result<Directory> {
        match OpenDirectory::beneath(root, directory) {
            Ok(_) => Ok(Directory::Real),
            Err(BeneathError::Missing(_)) => Ok(Directory::Missing),
            Err(BeneathError::NotReal(_)) => Ok(Directory::NotReal),
            Err(BeneathError::Io(_, error)) => Err(error),
        }
    }

    /// The child directory `name`, which must be a real directory (never a link).
    pub fn child(&self, name: &OsStr) -> Result<OpenDirectory, BeneathError> {
        let path = self.path.join(name);
        match sys::open_child_directory(&self.dir, name) {
            Ok(dir) => Ok(OpenDirectory { dir, path }),
            Err(ChildError::Missing) => Err(BeneathError::Missing(path)),
            Err(ChildError::NotReal) => Err(BeneathError::NotReal(path)),
            Err(ChildError::Io(error)) => Err(BeneathError::Io(path, error)),
        }
    }

    /// The child directory `name`, created 0700 when missing and then given
    /// to the owner of this directory (a run as root leaves no state the
    /// repository's owner cannot use). True when this call created it.
    pub fn create_child(&self, name: &OsStr) -> Result<(OpenDirectory, bool), BeneathError> {
        let path = || self.path.join(name);
        // False when made by a concurrent run, or there already: checked
        // below like any other.
        let created = sys::make_directory(&self.dir, name).map_err(|error| BeneathError::Io(path(), error))?;
        let child = self.child(name)?;
        if created {
            self.give_entry_to_owner(name).map_err(|error| BeneathError::Io(path(), error))?;
        }
        Ok((child, created))
    }

    /// Gives the entry `name` of this directory, just created by this process,
    /// the owner and group of this directory when they differ from ours. Only a
    /// privileged process can; for anyone else it already has the only owner
    /// it can have.
    pub(super) fn give_entry_to_owner(&self, name: &OsStr) -> io::Result<()> {
        sys::give_entry_to_owner(&self.dir, name).map_err(with_path(&self.join(name)))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of `name` inside this directory, for messages.
    pub fn join(&self, name: &OsStr) -> PathBuf {
        self.path.join(name)
    }

    pub(super) fn dir(&self) -> &Dir {
        &self.dir
    }

    pub(super) fn error(&self, error: io::Error) -> io::Error {
        io::Error::new(error.kind(), format!("{}: {error}", self.path.display()))
    }

    /// Every name in this directory but `.` and `..`.
    pub fn entries(&self) -> io::Result<Vec<OsString>> {
        sys::entries(&self.dir).map_err(|error| self.error(error))
    }

    /// Whether this process may create and remove entries here (the error
    /// does not name the directory).
    pub fn check_writable(&self) -> io::Result<()> {
        sys::check_writable(&self.dir)
    }

    /// Checks, without creating anything, that `create_child` can succeed
    /// for each of `levels` in turn: every existing level is a real
    /// directory, and the first missing one can be created.
    pub fn check_creatable(&self, levels: &[&OsStr]) -> Result<(), BeneathError> {
        let Some((first, rest)) = levels.split_first() else {
            return Ok(());
        };
        match self.child(first) {
            Ok(child) => child.check_creatable(rest),
            Err(BeneathError::Missing(_)) => {
                self.check_writable().map_err(|error| BeneathError::Io(self.path.clone(), error))
            }
            Err(error) => Err(error),
        }
    }
}

/// The directory holding `path` (`.` for a bare name).
pub fn parent_directory(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// What `path` names, not following a final link, and its file id, both of
/// the same file (see `sys::entry_metadata`).
pub fn entry_metadata(path: &Path) -> io::Result<(std::fs::Metadata, sys::FileId)> {
    sys::entry_metadata(path)
}

/// What `path` names (its kind, links and file id), not following a final
/// link; `None` when nothing does.
pub fn stat_entry(path: &Path) -> io::Result<Option<sys::Stat>> {
    sys::stat_no_follow(sys::working_directory(), path)
}

/// `OpenDirectory::inspect` says `Real`.
pub fn real_directory_inside(root: &Path, directory: &Path) -> bool {
    matches!(OpenDirectory::inspect(root, directory), Ok(Directory::Real))
}

/// `OpenDirectory::inspect` says `NotReal`: present, but a link or a file at
/// some level, or outside.
pub fn present_but_not_real(root: &Path, directory: &Path) -> bool {
    matches!(OpenDirectory::inspect(root, directory), Ok(Directory::NotReal))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    #[cfg(unix)]
    use std::os::unix::fs::symlink;

    // Symbolic links: Windows lets only administrators (or Developer Mode)
    // create one, and wine 8, which runs the Windows tests, creates none.
    #[cfg(unix)]
    #[test]
    fn every_level_below_the_root_must_be_real_but_the_root_may_be_reached_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        fs::create_dir_all(root.join("a/b/c")).unwrap();
        fs::create_dir_all(dir.path().join("elsewhere/b/c")).unwrap();
        let inspect = |root: &Path, relative: &str| OpenDirectory::inspect(root, &root.join(relative)).unwrap();
        assert_eq!(inspect(&root, "a/b/c"), Directory::Real);
        assert_eq!(inspect(&root, "a/b/missing"), Directory::Missing);
        symlink(dir.path().join("elsewhere/b"), root.join("a/linked")).unwrap();
        assert_eq!(inspect(&root, "a/linked/c"), Directory::NotReal, "a link in the middle");
        assert_eq!(inspect(&root, "a/linked"), Directory::NotReal, "a link at the end");
        fs::write(root.join("a/file"), "").unwrap();
        assert_eq!(inspect(&root, "a/file"), Directory::NotReal);
        let linked_root = dir.path().join("root-link");
        symlink(&root, &linked_root).unwrap();
        assert_eq!(inspect(&linked_root, "a/b/c"), Directory::Real, "the root itself may be a link");
        let error = OpenDirectory::beneath(&root, &root.join("a/linked/c")).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("{} must be a real directory inside the repository", root.join("a/linked").display())
        );
        assert!(matches!(OpenDirectory::beneath(&root, dir.path()), Err(BeneathError::NotReal(_))), "above the root");
    }

    // Symbolic links: Windows lets only administrators (or Developer Mode)
    // create one, and wine 8, which runs the Windows tests, creates none.
    #[cfg(unix)]
    #[test]
    fn the_walk_without_openat2_decides_as_the_single_call_does() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        fs::create_dir_all(root.join("a/b/c")).unwrap();
        symlink(root.join("a/b"), root.join("a/linked")).unwrap();
        fs::write(root.join("a/file"), "").unwrap();
        let walk = |relative: &str| OpenDirectory::open(&root).unwrap().walk(Path::new(relative), &root.join(relative));
        assert!(walk("a/b/c").is_ok());
        assert!(
            matches!(walk("a/b/missing/c"), Err(BeneathError::Missing(level)) if level == root.join("a/b/missing"))
        );
        assert!(matches!(walk("a/linked/c"), Err(BeneathError::NotReal(level)) if level == root.join("a/linked")));
        assert!(matches!(walk("a/file/c"), Err(BeneathError::NotReal(level)) if level == root.join("a/file")));
        assert!(matches!(walk("a/../a/b"), Err(BeneathError::NotReal(_))), "a parent step is never taken");
    }

    #[test]
    fn a_created_level_is_checked_like_any_other() {
        let dir = tempfile::tempdir().unwrap();
        let root = OpenDirectory::open(dir.path()).unwrap();
        let (_, created) = root.create_child(OsStr::new("state")).unwrap();
        assert!(created);
        assert!(!root.create_child(OsStr::new("state")).unwrap().1);
        fs::write(dir.path().join("file"), "").unwrap();
        assert!(matches!(root.create_child(OsStr::new("file")), Err(BeneathError::NotReal(_))));
        assert!(matches!(root.check_creatable(&[OsStr::new("file")]), Err(BeneathError::NotReal(_))));
        assert!(root.check_creatable(&[OsStr::new("state"), OsStr::new("new")]).is_ok());
        // Symbolic links: Windows lets only administrators (or Developer
        // Mode) create one, and wine 8, which runs the Windows tests,
        // creates none.
        #[cfg(unix)]
        {
            symlink(dir.path(), dir.path().join("linked")).unwrap();
            assert!(matches!(root.create_child(OsStr::new("linked")), Err(BeneathError::NotReal(_))));
            assert!(matches!(root.check_creatable(&[OsStr::new("linked")]), Err(BeneathError::NotReal(_))));
        }
        let mut names = root.entries().unwrap();
        names.sort();
        let mut expected = vec!["file", "state"];
        expected.extend(cfg!(unix).then_some("linked"));
        expected.sort();
        assert_eq!(names, expected);
    }
}
