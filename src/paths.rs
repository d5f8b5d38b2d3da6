//! Lexical path handling with Node's `path.resolve` meaning, so that the
//! absolute ledger path and resolved CWD in an approval identity are spelled
//! exactly as the Node tool spells them (no symlink resolution).

use std::path::{Component, Path, PathBuf};

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
    normalize(child).starts_with(normalize(parent))
}

/// A path that is not valid UTF-8, so it cannot be bound as text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("path is not valid UTF-8: {}", .0.display())]
pub struct NotUtf8(pub PathBuf);

/// A path as UTF-8 text, or a clear error naming it.
pub fn utf8(path: &Path) -> Result<&str, NotUtf8> {
    path.to_str().ok_or_else(|| NotUtf8(path.to_path_buf()))
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
    }
}
