//! The one check that a directory is a real directory inside a root (no
//! link, no file, not outside), and creating one that is.

use std::fs;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use super::replace::{give_to_owner_of, with_path};

/// What is at a path that must be a real directory inside a root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Directory {
    Missing,
    /// A directory, not a link, whose canonical path lies inside the root.
    Real,
    /// A link, a file or anything else, or a directory outside the root.
    NotReal,
}

/// Used by every reader and writer of repository state.
pub fn inspect_directory(root: &Path, directory: &Path) -> io::Result<Directory> {
    let meta = match fs::symlink_metadata(directory) {
        Ok(meta) => meta,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Directory::Missing),
        Err(error) => return Err(error),
    };
    if meta.file_type().is_symlink() || !meta.is_dir() {
        return Ok(Directory::NotReal);
    }
    match (fs::canonicalize(root), fs::canonicalize(directory)) {
        (Ok(root), Ok(directory)) if directory.starts_with(&root) => Ok(Directory::Real),
        _ => Ok(Directory::NotReal),
    }
}

/// `inspect_directory` says `Real`.
pub fn real_directory_inside(root: &Path, directory: &Path) -> bool {
    matches!(inspect_directory(root, directory), Ok(Directory::Real))
}

/// `inspect_directory` says `NotReal`: present, but a link, a file, or outside.
pub fn present_but_not_real(root: &Path, directory: &Path) -> bool {
    matches!(inspect_directory(root, directory), Ok(Directory::NotReal))
}

fn not_real(directory: &Path) -> io::Error {
    io::Error::other(format!("{} must be a real directory inside the repository", directory.display()))
}

/// Makes sure `directory` (a child of `parent`, inside `root`) is a real
/// directory, creating it 0700 when missing with `parent`'s owner.
pub fn ensure_real_directory(root: &Path, directory: &Path, parent: &Path) -> io::Result<()> {
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

/// Checks, without creating anything, that `ensure_real_directory` can
/// succeed for each of `levels` (each a `(directory, parent)` pair, outer
/// first): every existing level is a real directory and the first missing
/// one can be created in its writable parent.
pub fn check_creatable(root: &Path, levels: &[(&Path, &Path)]) -> io::Result<()> {
    for &(level, parent) in levels {
        match inspect_directory(root, level).map_err(with_path(level))? {
            Directory::Real => {}
            Directory::NotReal => return Err(not_real(level)),
            Directory::Missing => {
                return nix::unistd::access(parent, nix::unistd::AccessFlags::W_OK)
                    .map_err(|errno| with_path(parent)(io::Error::from(errno)));
            }
        }
    }
    Ok(())
}
