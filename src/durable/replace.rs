//! Atomic replacement of a file (temp file in the same directory, fsync,
//! rename, fsync of the directory), the temp files a killed replacement
//! leaves, and giving what this process creates to the owner of its
//! directory.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

pub(crate) fn with_path(path: &Path) -> impl FnOnce(io::Error) -> io::Error + '_ {
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
pub(crate) fn give_file_to_owner_of(file: &File, directory: &Path) {
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
}
