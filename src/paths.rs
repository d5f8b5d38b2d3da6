//! Lexical path handling with Node's `path.resolve` meaning, so that the
//! absolute ledger path and resolved CWD in an approval identity are spelled
//! exactly as the Node tool spells them (no symlink resolution); and, for
//! the places that must be compared as the file system reaches them (the
//! guard's protected paths, the sandbox's fence), `real_path`.

use std::path::{Component, Path, PathBuf};

/// What separates PATH entries: Node's `path.delimiter`.
pub const PATH_DELIMITER: char = if cfg!(windows) { ';' } else { ':' };

/// Joins `path` onto `base` (when relative) and removes `.`, `..` and
/// trailing separators without touching the file system.
pub fn resolve(base: &Path, path: &Path) -> PathBuf {
    let joined = if path.is_absolute() { path.to_path_buf() } else { base.join(path) };
    normalize(&joined)
}

/// Removes `.` and `..` lexically; `..` at the root stays at the root.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(prefix) => out.push(prefix.as_os_str()),
            Component::RootDir => out.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() && !path.has_root() {
                    out.push("..");
                }
            }
            Component::Normal(part) => out.push(part),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// True when `child` is `parent` or lies beneath it (lexically).
pub fn is_inside(parent: &Path, child: &Path) -> bool {
    strip_prefix(&normalize(child), &normalize(parent)).is_some()
}

/// The rest of `path` below `base`, when `path` is `base` or lies beneath
/// it, component by component; on Windows components are compared without
/// case (JavaScript's `toLowerCase`, as `path.win32.relative` compares).
pub fn strip_prefix(path: &Path, base: &Path) -> Option<PathBuf> {
    let mut rest = path.components();
    for expected in base.components() {
        if !same_component(rest.next()?.as_os_str(), expected.as_os_str()) {
            return None;
        }
    }
    Some(rest.as_path().to_path_buf())
}

#[cfg(not(windows))]
fn same_component(left: &std::ffi::OsStr, right: &std::ffi::OsStr) -> bool {
    left == right
}

#[cfg(windows)]
fn same_component(left: &std::ffi::OsStr, right: &std::ffi::OsStr) -> bool {
    left == right || left.to_string_lossy().to_lowercase() == right.to_string_lossy().to_lowercase()
}

/// A path that is not valid UTF-8, so it cannot be bound as text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("path is not valid UTF-8: {}", .0.display())]
pub struct NotUtf8(pub PathBuf);

/// A path as UTF-8 text, or a clear error naming it.
pub fn utf8(path: &Path) -> Result<&str, NotUtf8> {
    path.to_str().ok_or_else(|| NotUtf8(path.to_path_buf()))
}

/// How many links `real_path` follows before it stops (a loop ends).
const MAX_LINKS: usize = 16;

/// `path` (made lexical first) with every link in it followed, as far as
/// it exists: the part that exists is canonicalized, and a dangling link is
/// followed to where a write through it would land.
pub fn real_path(path: &Path) -> PathBuf {
    let mut path = normalize(path);
    for _ in 0..MAX_LINKS {
        match follow(&path) {
            Ok(real) => return real,
            Err(Some(next)) => path = next,
            Err(None) => break,
        }
    }
    path
}

/// `path` canonicalized as far as it exists (`Ok`), or where the dangling
/// link in it points (`Err(Some)`), or nothing to follow (`Err(None)`).
fn follow(path: &Path) -> Result<PathBuf, Option<PathBuf>> {
    let mut existing = path;
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        if let Ok(real) = dunce::canonicalize(existing) {
            return Ok(rest.iter().rev().fold(real, |real, part| real.join(part)));
        }
        let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
            return Err(None);
        };
        if let Ok(target) = std::fs::read_link(existing) {
            let target = dunce::simplified(&target);
            return Err(Some(rest.iter().rev().fold(resolve(parent, target), |next, part| next.join(part))));
        }
        rest.push(name);
        existing = parent;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_like_node() {
        let base = Path::new("/repo/sub");
        assert_eq!(resolve(base, Path::new("a/../b/./c/")), PathBuf::from("/repo/sub/b/c"));
        assert_eq!(resolve(base, Path::new("/x/../../y")), PathBuf::from("/y"));
        assert_eq!(resolve(base, Path::new(".")), PathBuf::from("/repo/sub"));
        assert_eq!(resolve(base, Path::new("../..")), PathBuf::from("/"));
    }

    #[test]
    fn inside_is_component_wise() {
        assert!(is_inside(Path::new("/repo"), Path::new("/repo/a")));
        assert!(is_inside(Path::new("/repo"), Path::new("/repo")));
        assert!(!is_inside(Path::new("/repo"), Path::new("/repository")));
        assert!(!is_inside(Path::new("/repo"), Path::new("/repo/../x")));
        assert_eq!(strip_prefix(Path::new("/repo/a/b"), Path::new("/repo")), Some(PathBuf::from("a/b")));
        assert_eq!(strip_prefix(Path::new("/repo"), Path::new("/repo")), Some(PathBuf::new()));
        assert_eq!(strip_prefix(Path::new("/rep"), Path::new("/repo")), None);
    }

    #[cfg(not(windows))]
    #[test]
    fn case_counts_outside_windows() {
        assert!(!is_inside(Path::new("/Repo"), Path::new("/repo/a")));
    }

    #[cfg(windows)]
    #[test]
    fn windows_paths_resolve_and_compare_as_path_win32_does() {
        // path.win32.resolve keeps the case given, drive letter included,
        // and turns every separator into a backslash.
        let base = Path::new(r"C:\Users\dev\project");
        assert_eq!(resolve(base, Path::new("..\\tools/sub")), PathBuf::from(r"C:\Users\dev\tools\sub"));
        assert_eq!(resolve(base, Path::new("c:/Users/dev/x/")), PathBuf::from(r"c:\Users\dev\x"));
        assert_eq!(resolve(base, Path::new(r"\other")), PathBuf::from(r"C:\other"));
        assert_eq!(resolve(Path::new(r"C:\"), Path::new("..")), PathBuf::from(r"C:\"));
        assert_eq!(
            resolve(Path::new(r"\\server\share\repo"), Path::new("build")),
            PathBuf::from(r"\\server\share\repo\build")
        );
        // path.win32.relative("C:\\Repo", "c:\\repo\\sub") is "sub".
        assert!(is_inside(Path::new(r"C:\Repo"), Path::new(r"c:\repo\sub")));
        assert_eq!(strip_prefix(Path::new(r"c:\repo\Sub"), Path::new(r"C:\Repo")), Some(PathBuf::from("Sub")));
        assert!(!is_inside(Path::new(r"C:\Repo"), Path::new(r"C:\Repository")));
        assert!(!is_inside(Path::new(r"C:\Repo"), Path::new(r"D:\Repo")));
    }

    // Symbolic links: Windows lets only administrators (or Developer Mode)
    // create one.
    #[cfg(unix)]
    #[test]
    fn links_are_followed_as_far_as_the_path_exists_even_when_they_dangle() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(base.join("real")).unwrap();
        std::os::unix::fs::symlink(base.join("real"), base.join("link")).unwrap();
        assert_eq!(real_path(&base.join("link/new/file")), base.join("real/new/file"));
        assert_eq!(real_path(&base.join("link/../real")), base.join("real"));
        std::os::unix::fs::symlink(base.join("real/later.md"), base.join("dangling")).unwrap();
        assert_eq!(real_path(&base.join("dangling")), base.join("real/later.md"));
        assert_eq!(real_path(&base.join("dangling/../x")), base.join("x"), "lexical first");
        std::os::unix::fs::symlink("loop", base.join("loop")).unwrap();
        assert_eq!(real_path(&base.join("loop")), base.join("loop"), "a link loop ends");
    }
}
