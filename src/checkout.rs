//! `baseline`'s checkout of an older commit: REF is resolved with gix, and
//! its tree's files are written into a fresh temporary directory outside
//! the user's work tree, read straight from the object database. Nothing
//! of the repository is written: not the work tree, the index, HEAD, a
//! branch, the stash, nor `.git/worktrees` (this is no `git worktree`),
//! and no process is started (no clean/smudge filter runs).
//!
//! Files are written as git stores them: no end-of-line conversion and no
//! filters, so a Git LFS file is its pointer. A submodule is an empty
//! directory, as `git worktree add` leaves it. A tree entry that could
//! write outside its directory (`..`, `.git`, a name with a slash) or
//! that repeats a name is refused. The checkout is removed when dropped,
//! also when a check left read-only directories in it.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use gix::bstr::{BStr, BString, ByteSlice};
use gix::objs::tree::EntryKind;

/// Why REF cannot be checked out.
#[derive(Debug, thiserror::Error)]
pub enum CheckoutError {
    #[error("baseline needs a git repository, and {} is not in one ({reason})", .root.display())]
    NotARepository { root: PathBuf, reason: String },
    #[error("baseline needs a work tree to compare with, and the repository at {} has none", .0.display())]
    NoWorkTree(PathBuf),
    #[error("cannot resolve {reference:?} in {}: {reason}", .repository.display())]
    Unresolved { reference: String, repository: PathBuf, reason: String },
    #[error("cannot read {what} of {commit}: {reason}")]
    Read { what: String, commit: String, reason: String },
    #[error("{commit} holds {path:?}, which gate-check will not write: {reason}")]
    UnsafeEntry { commit: String, path: String, reason: String },
    #[error("cannot make the checkout of {commit} under {}: {source}", .at.display())]
    Write { commit: String, at: PathBuf, source: io::Error },
    #[error(
        "the temporary directory {} lies inside the work tree {}; set TMPDIR to a directory outside it",
        .temporary.display(), .work_tree.display()
    )]
    InsideWorkTree { temporary: PathBuf, work_tree: PathBuf },
    /// The run was interrupted while the files were written.
    #[error("interrupted while checking out {0}")]
    Interrupted(String),
}

/// The repository holding the ledgers, opened read-only.
pub struct Repository {
    repository: gix::Repository,
    /// Its work tree, canonical.
    work_tree: PathBuf,
}

/// REF, resolved to a commit.
#[derive(Debug, Clone)]
pub struct Commit {
    /// As given on the command line.
    pub reference: String,
    /// The full hexadecimal id.
    pub id: String,
    /// The shortest unambiguous prefix (at least seven digits), as git shows it.
    pub short: String,
    tree: gix::ObjectId,
}

impl Repository {
    /// The repository `root` lies in.
    pub fn discover(root: &Path) -> Result<Repository, CheckoutError> {
        let repository = gix::discover(root)
            .map_err(|error| CheckoutError::NotARepository { root: root.to_path_buf(), reason: error.to_string() })?;
        let work_tree = repository.workdir().ok_or_else(|| CheckoutError::NoWorkTree(repository.git_dir().into()))?;
        let work_tree = crate::durable::real_path(work_tree).map_err(|error| CheckoutError::NotARepository {
            root: root.to_path_buf(),
            reason: format!("its work tree cannot be resolved: {error}"),
        })?;
        Ok(Repository { repository, work_tree })
    }

    pub fn work_tree(&self) -> &Path {
        &self.work_tree
    }

    /// `reference` (anything `git rev-parse` takes that names a commit).
    pub fn resolve(&self, reference: &str) -> Result<Commit, CheckoutError> {
        let unresolved = |reason: String| CheckoutError::Unresolved {
            reference: reference.to_string(),
            repository: self.work_tree.clone(),
            reason,
        };
        let id = self.repository.rev_parse_single(reference).map_err(|error| unresolved(error.to_string()))?;
        let short = id.shorten_or_id().to_string();
        let commit = id
            .object()
            .and_then(|object| object.peel_to_commit())
            .map_err(|error| unresolved(format!("it names no commit ({error})")))?;
        let tree = commit.tree_id().map_err(|error| unresolved(format!("its tree cannot be read ({error})")))?;
        Ok(Commit { reference: reference.to_string(), id: commit.id.to_string(), short, tree: tree.detach() })
    }

    /// Writes `commit`'s files into a new temporary directory; `stop` is
    /// asked before each file, and ends the checkout when it says so.
    pub fn check_out(&self, commit: &Commit, stop: &dyn Fn() -> bool) -> Result<Checkout, CheckoutError> {
        let write_error =
            |at: &Path, source| CheckoutError::Write { commit: commit.short.clone(), at: at.into(), source };
        let temporary = std::env::temp_dir();
        let made = tempfile::Builder::new()
            .prefix("gate-check-baseline-")
            .tempdir_in(&temporary)
            .map_err(|source| write_error(&temporary, source))?;
        // Removed on every path from here on, the early returns included.
        let mut checkout = Checkout { root: made.keep() };
        checkout.root =
            crate::durable::real_path(&checkout.root).map_err(|source| write_error(&checkout.root, source))?;
        if crate::paths::is_inside(&self.work_tree, &checkout.root) {
            let temporary = checkout.root.clone();
            return Err(CheckoutError::InsideWorkTree { temporary, work_tree: self.work_tree.clone() });
        }
        let mut pending = vec![(commit.tree, checkout.root.clone(), BString::default())];
        while let Some((tree, directory, shown)) = pending.pop() {
            for (name, kind, id) in self.entries(commit, tree, shown.as_bstr())? {
                if stop() {
                    return Err(CheckoutError::Interrupted(commit.short.clone()));
                }
                let shown = joined(shown.as_bstr(), name.as_bstr());
                let unsafe_entry = |reason: String| CheckoutError::UnsafeEntry {
                    commit: commit.short.clone(),
                    path: shown.to_str_lossy().into_owned(),
                    reason,
                };
                let mode = (kind == EntryKind::Link).then_some(gix::validate::path::component::Mode::Symlink);
                gix::validate::path::component(name.as_ref(), mode, component_rules())
                    .map_err(|error| unsafe_entry(error.to_string()))?;
                let name = gix::path::from_bstr(name.as_bstr()).map_err(|error| unsafe_entry(error.to_string()))?;
                let path = directory.join(name);
                // A name a tree repeats would write through what was made first.
                match kind {
                    EntryKind::Tree => {
                        fs::create_dir(&path).map_err(|source| write_error(&path, source))?;
                        pending.push((id, path, shown));
                    }
                    // A submodule: its directory, empty.
                    EntryKind::Commit => fs::create_dir(&path).map_err(|source| write_error(&path, source))?,
                    EntryKind::Blob | EntryKind::BlobExecutable | EntryKind::Link => {
                        let blob = self.repository.find_object(id).map_err(|error| CheckoutError::Read {
                            what: format!("{:?}", shown.to_str_lossy()),
                            commit: commit.short.clone(),
                            reason: error.to_string(),
                        })?;
                        write_entry(&path, kind, &blob.data).map_err(|source| write_error(&path, source))?;
                    }
                }
            }
        }
        Ok(checkout)
    }

    /// The entries of one tree: name, kind and object id.
    fn entries(
        &self,
        commit: &Commit,
        tree: gix::ObjectId,
        shown: &BStr,
    ) -> Result<Vec<(BString, EntryKind, gix::ObjectId)>, CheckoutError> {
        let unreadable = |reason: String| CheckoutError::Read {
            what: if shown.is_empty() {
                "the tree".to_string()
            } else {
                format!("the tree {:?}", shown.to_str_lossy())
            },
            commit: commit.short.clone(),
            reason,
        };
        let tree = self.repository.find_tree(tree).map_err(|error| unreadable(error.to_string()))?;
        tree.iter()
            .map(|entry| {
                let entry = entry.map_err(|error| unreadable(error.to_string()))?;
                Ok((entry.inner.filename.to_owned(), entry.inner.mode.kind(), entry.inner.oid.to_owned()))
            })
            .collect()
    }
}

/// What a tree entry's name may be: never `.`, `..`, `.git` in any
/// spelling a file system could fold to it, or hold a separator.
fn component_rules() -> gix::validate::path::component::Options {
    gix::validate::path::component::Options { protect_windows: cfg!(windows), protect_hfs: true, protect_ntfs: true }
}

fn joined(parent: &BStr, name: &BStr) -> BString {
    let mut path = BString::from(parent.to_vec());
    if !path.is_empty() {
        path.push(b'/');
    }
    path.extend_from_slice(name);
    path
}

/// One file, executable file or link; never through anything already
/// there (`create_new` does not follow a link in the last place).
fn write_entry(path: &Path, kind: EntryKind, data: &[u8]) -> io::Result<()> {
    #[cfg(unix)]
    if kind == EntryKind::Link {
        use std::os::unix::ffi::OsStrExt;
        return std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(data), path);
    }
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // As git writes them: the umask decides the rest.
        options.mode(if kind == EntryKind::BlobExecutable { 0o777 } else { 0o666 });
    }
    // Elsewhere a link is a file holding its target, as git writes it
    // without core.symlinks, and no file is executable by a mode.
    #[cfg(not(unix))]
    let _ = kind;
    options.open(path)?.write_all(data)
}

/// A checkout of REF in a temporary directory, removed when dropped.
pub struct Checkout {
    /// Canonical.
    root: PathBuf,
}

impl Checkout {
    pub fn path(&self) -> &Path {
        &self.root
    }
}

impl Drop for Checkout {
    fn drop(&mut self) {
        if fs::remove_dir_all(&self.root).is_ok() || fs::symlink_metadata(&self.root).is_err() {
            return;
        }
        // A check may leave directories it cannot be removed from (chmod
        // a-w); they are the user's own, so they are opened up again.
        #[cfg(unix)]
        open_up(&self.root);
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// Makes every directory under `root` (links not followed) writable and
/// searchable by its owner.
#[cfg(unix)]
fn open_up(root: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut pending = vec![root.to_path_buf()];
    while let Some(directory) = pending.pop() {
        let _ = fs::set_permissions(&directory, fs::Permissions::from_mode(0o700));
        let Ok(entries) = fs::read_dir(&directory) else { continue };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                pending.push(entry.path());
            }
        }
    }
}
