//! Which repository a stopping session works in, found from the directory
//! its host reports. The agent may have moved anywhere below the root: into
//! a submodule (whose `.git` is a file pointing into the superproject), into
//! a directory that happens to hold a `gates/` folder of its own (`docs/`),
//! or into the pipeline's own state (`.unlazy/api`). Stopping at the nearest
//! `.git` or `gates/` there would judge the wrong ledgers or none, and let an
//! unfinished session go.

use std::fs;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use crate::layout::{GATES_DIR, STATE_DIR};
use crate::target::Looking;

/// A `.git` file is one line (`gitdir: <path>`); more is not one.
const GIT_FILE_MAX_BYTES: u64 = 4096;

/// What a directory's `.git` entry says about where the repository ends.
#[derive(Debug, PartialEq, Eq)]
enum GitEntry {
    None,
    /// A repository's own root: a `.git` directory, or a `.git` file of a
    /// linked worktree or a separate git directory.
    Root,
    /// A submodule checkout: its `.git` file points into
    /// `<superproject>/.git/modules/`, so the repository goes on above.
    Submodule,
}

fn git_entry(directory: &Path) -> GitEntry {
    let path = directory.join(".git");
    let Ok(meta) = fs::symlink_metadata(&path) else {
        return GitEntry::None;
    };
    if !meta.is_file() {
        return GitEntry::Root;
    }
    let mut text = String::new();
    let read = fs::File::open(&path).and_then(|file| file.take(GIT_FILE_MAX_BYTES).read_to_string(&mut text));
    let Some(gitdir) = read.ok().and_then(|_| text.lines().next()?.strip_prefix("gitdir:").map(str::trim)) else {
        return GitEntry::Root;
    };
    let target = crate::paths::resolve(directory, Path::new(gitdir));
    let inside_superproject =
        directory.ancestors().skip(1).any(|ancestor| target.starts_with(ancestor.join(".git").join("modules")));
    if inside_superproject {
        GitEntry::Submodule
    } else {
        GitEntry::Root
    }
}

/// `start`, or the directory holding the `.unlazy/` it lies in: a session
/// is never rooted inside pipeline state. The home directory's `.unlazy/`
/// holds the approval store, not a pipeline, and is left as it is.
fn outside_state(start: &Path, home: Option<&Path>) -> PathBuf {
    let mut holder = PathBuf::new();
    for component in start.components() {
        if component == Component::Normal(STATE_DIR.as_ref()) && home.is_none_or(|home| !home.starts_with(&holder)) {
            return holder;
        }
        holder.push(component);
    }
    start.to_path_buf()
}

/// The session's repository root for a stop reported from `start`.
///
/// The search goes up from `start` (from outside `.unlazy/` when it lies
/// inside one), through submodules to their superproject, and ends at the
/// repository's root (a `.git` directory, or the `.git` file of a worktree),
/// never examining the home directory or above. Within that range it takes
/// the outermost directory holding `.unlazy/` or (unless a scope is named)
/// `GATES.md`; else the nearest holding `gates/` (unless a scope is named);
/// else the repository root; else `start`.
pub fn session_root(start: &Path, home: Option<&Path>, looking: Looking) -> PathBuf {
    let start = outside_state(start, home);
    let ledgers = looking == Looking::ForLedgers;
    let has = |directory: &Path, name: &str| fs::symlink_metadata(directory.join(name)).is_ok();
    let (mut outermost, mut nearest_gates, mut repository) = (None, None, None);
    for directory in start.ancestors() {
        if directory != start && home.is_some_and(|home| home.starts_with(directory)) {
            break;
        }
        if has(directory, STATE_DIR) || (ledgers && has(directory, "GATES.md")) {
            outermost = Some(directory);
        }
        if ledgers && nearest_gates.is_none() && has(directory, GATES_DIR) {
            nearest_gates = Some(directory);
        }
        if git_entry(directory) == GitEntry::Root {
            repository = Some(directory);
            break;
        }
    }
    outermost.or(nearest_gates).or(repository).unwrap_or(&start).to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_submodule_is_told_from_a_worktree_by_where_its_git_file_points() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join(".git/modules/vendor/lib")).unwrap();
        fs::create_dir_all(root.join("vendor/lib")).unwrap();
        fs::write(root.join("vendor/lib/.git"), "gitdir: ../../.git/modules/vendor/lib\n").unwrap();
        fs::create_dir_all(root.join("wt")).unwrap();
        fs::write(root.join("wt/.git"), format!("gitdir: {}/.git/worktrees/wt\n", root.display())).unwrap();
        assert_eq!(git_entry(root), GitEntry::Root);
        assert_eq!(git_entry(&root.join("vendor/lib")), GitEntry::Submodule);
        assert_eq!(git_entry(&root.join("wt")), GitEntry::Root);
        assert_eq!(git_entry(&root.join("vendor")), GitEntry::None);
    }

    #[test]
    fn state_directories_are_left_for_their_holder_but_not_the_homes() {
        let home = Path::new("/home/u");
        assert_eq!(outside_state(Path::new("/r/.unlazy/api/gates"), Some(home)), Path::new("/r"));
        assert_eq!(outside_state(Path::new("/r/src"), Some(home)), Path::new("/r/src"));
        assert_eq!(
            outside_state(Path::new("/home/u/.unlazy/approved"), Some(home)),
            Path::new("/home/u/.unlazy/approved")
        );
        assert_eq!(outside_state(Path::new("/home/u/r/.unlazy/api"), Some(home)), Path::new("/home/u/r"));
    }
}
