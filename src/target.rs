//! Which ledgers a run covers: explicit files (all of them, only them),
//! else a scope (`--scope`, `UNLAZY_SCOPE`, or the single pipeline under
//! `.unlazy/`), else the legacy `GATES.md` and `gates/*.md` under the root.
//! Without `--root`, the root is found by searching upward from the current
//! directory, as cargo finds its manifest.

use std::fs;
use std::path::{Path, PathBuf};

use crate::durable::{present_but_not_real, real_directory_inside};
use crate::layout::{StateDir, STATE_DIR};
use crate::paths;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Explicit,
    Scope,
    Legacy,
}

#[derive(Debug, Clone)]
pub struct Target {
    pub mode: Mode,
    pub scope: Option<String>,
    pub files: Vec<PathBuf>,
}

impl Target {
    /// The repository whose `.unlazy/` holds `ledger`'s locks, and which the
    /// approval store must lie outside. Discovered ledgers belong to `root`.
    /// An explicit ledger belongs to its repository: the nearest directory
    /// from its own up to `root` holding `.git` or `.unlazy`, else `root`
    /// when it lies inside `root`; outside `root`, the nearest ancestor
    /// holding `.git` or `.unlazy`, else its own directory. Inside `root`
    /// the search stops there, so the lock guarding a ledger is the same
    /// whether it was discovered or named.
    pub fn state_root(&self, root: &Path, ledger: &Path) -> PathBuf {
        if self.mode != Mode::Explicit {
            return root.to_path_buf();
        }
        let directory = ledger.parent().unwrap_or(root);
        let inside = paths::is_inside(root, directory);
        let marked = |dir: &Path| [".git", STATE_DIR].iter().any(|m| fs::symlink_metadata(dir.join(m)).is_ok());
        for candidate in directory.ancestors() {
            if inside && !paths::is_inside(root, candidate) {
                break;
            }
            if marked(candidate) {
                return candidate.to_path_buf();
            }
        }
        if inside {
            root.to_path_buf()
        } else {
            directory.to_path_buf()
        }
    }

    /// Every ledger's `state_root`, without repeats.
    pub fn state_roots(&self, root: &Path) -> Vec<PathBuf> {
        let mut roots: Vec<PathBuf> = Vec::new();
        for ledger in &self.files {
            let state_root = self.state_root(root, ledger);
            if !roots.contains(&state_root) {
                roots.push(state_root);
            }
        }
        if roots.is_empty() {
            roots.push(root.to_path_buf());
        }
        roots
    }
}

/// The repository root a command works in, and the directories examined to
/// find it, so "no gate files found" can say where it looked.
#[derive(Debug, Clone)]
pub struct Root {
    pub path: PathBuf,
    /// Nearest first; empty when the root was given or taken as is.
    pub searched: Vec<PathBuf>,
}

/// What ends the upward search for a root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Looking {
    /// Any ledger or pipeline (`GATES.md`, `gates/`, `.unlazy/`) or a repository root (`.git`).
    ForLedgers,
    /// A pipeline directory (`.unlazy/`) or a repository root (`.git`): a
    /// named scope lives only there, so a nearer `GATES.md` does not stop it.
    ForPipelines,
}

impl Looking {
    fn markers(self) -> &'static [&'static str] {
        match self {
            Looking::ForLedgers => &["GATES.md", "gates", STATE_DIR, ".git"],
            Looking::ForPipelines => &[STATE_DIR, ".git"],
        }
    }

    /// Pipelines when a scope is named (`--scope`, else `UNLAZY_SCOPE`), else ledgers.
    pub fn for_scope(scope: Option<&str>) -> Looking {
        if scope.is_some() {
            Looking::ForPipelines
        } else {
            Looking::ForLedgers
        }
    }
}

impl Root {
    /// A root used as given: `--root`, or the current directory for explicit files.
    pub fn given(path: PathBuf) -> Root {
        Root { path, searched: Vec::new() }
    }

    /// `--root` when given, else the root found upward from `cwd`, never
    /// reaching `home` (see `search_root`).
    pub fn locate(cwd: &Path, home: Option<&Path>, explicit: Option<&Path>, looking: Looking) -> Root {
        match explicit {
            Some(root) => Root::given(paths::resolve(cwd, root)),
            None => search_root(cwd, home, looking),
        }
    }

    /// `locate`, for a command that needs the root to be a directory.
    pub fn locate_directory(
        cwd: &Path,
        home: Option<&Path>,
        explicit: Option<&Path>,
        looking: Looking,
    ) -> Result<Root, DirectoryError> {
        let root = Root::locate(cwd, home, explicit, looking);
        require_directory(&root.path, "--root")?;
        Ok(root)
    }

    /// The Node tool's "no gate files found" line, plus the search when one
    /// went above the starting directory.
    pub fn no_ledgers_message(&self) -> String {
        let looked = format!(
            "no gate files found (looked for {STATE_DIR}/<scope>/, then GATES.md and gates/*.md under {}",
            self.path.display()
        );
        match (self.searched.first(), self.searched.last()) {
            (Some(first), Some(last)) if self.searched.len() > 1 && *first == self.path => {
                format!("{looked} and each parent up to {})", last.display())
            }
            (Some(first), _) if *first != self.path => {
                format!("{looked}, found searching upward from {})", first.display())
            }
            _ => format!("{looked})"),
        }
    }
}

/// The nearest directory from `start` upward that holds one of `looking`'s
/// markers; `start` itself when none does. The search never examines the
/// home directory or its ancestors (unless it starts there): `~/.unlazy`
/// holds the approval store, not a pipeline.
pub fn search_root(start: &Path, home: Option<&Path>, looking: Looking) -> Root {
    let mut searched = Vec::new();
    for directory in start.ancestors() {
        if directory != start && home.is_some_and(|home| home.starts_with(directory)) {
            break;
        }
        searched.push(directory.to_path_buf());
        if looking.markers().iter().any(|marker| fs::symlink_metadata(directory.join(marker)).is_ok()) {
            return Root { path: directory.to_path_buf(), searched };
        }
    }
    Root { path: start.to_path_buf(), searched }
}

/// Why a path a command names cannot serve as a directory.
#[derive(Debug, thiserror::Error)]
pub enum DirectoryError {
    #[error("{label} is not a directory: {}", .path.display())]
    NotDirectory { label: String, path: PathBuf },
    #[error("{label} does not exist: {}", .path.display())]
    Missing { label: String, path: PathBuf },
    #[error("cannot inspect {label} {}: {source}", .path.display())]
    Inspect { label: String, path: PathBuf, source: std::io::Error },
}

impl DirectoryError {
    /// Missing or not a directory: the input names the wrong thing (as
    /// opposed to a directory that could not be inspected).
    pub fn is_mistake(&self) -> bool {
        !matches!(self, DirectoryError::Inspect { .. })
    }
}

/// The one check that `path`, named as `label`, is a directory.
pub fn require_directory(path: &Path, label: &str) -> Result<(), DirectoryError> {
    let (label, path_buf) = (label.to_string(), path.to_path_buf());
    match fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(DirectoryError::NotDirectory { label, path: path_buf }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            Err(DirectoryError::Missing { label, path: path_buf })
        }
        Err(source) => Err(DirectoryError::Inspect { label, path: path_buf, source }),
    }
}

/// An id that is not `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`; `label` names
/// what it was meant to be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{label} must match /^[A-Za-z0-9][A-Za-z0-9._-]{{0,63}}$/ and cannot be . or ..")]
pub struct InvalidId {
    pub label: &'static str,
}

/// Why the ledgers of a run cannot be found.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error(transparent)]
    Id(#[from] InvalidId),
    /// A scope or gate directory that is a link, a file, or outside the root.
    #[error("{what} directory must be a real directory inside the repository: {}", .path.display())]
    NotReal { what: &'static str, path: PathBuf },
    #[error("no such scope \"{wanted}\" under {STATE_DIR}/ (have: {})", if .have.is_empty() { "none".to_string() } else { .have.join(", ") })]
    NoSuchScope { wanted: String, have: Vec<String> },
    #[error("{} pipelines present ({}); pass --scope <id> or set UNLAZY_SCOPE. Refusing to guess.", .0.len(), .0.join(", "))]
    Ambiguous(Vec<String>),
    #[error("cannot inspect gate directory {}: {source}", .path.display())]
    Read { path: PathBuf, source: std::io::Error },
}

/// Scope and leaf ids: `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`.
pub fn validate_scope_id(value: &str, label: &'static str) -> Result<(), InvalidId> {
    let mut chars = value.chars();
    let first_ok = matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if first_ok && rest_ok && value.len() <= 64 {
        Ok(())
    } else {
        Err(InvalidId { label })
    }
}

/// Whether `<root>/.unlazy/` holds a pipeline that cannot be trusted:
/// `.unlazy` itself is a link or not a directory, or one of its entries
/// named like a scope is a link. `list_scopes` leaves such entries out, so
/// without this a linked pipeline would look like no pipeline at all.
pub fn has_untrusted_pipeline(root: &Path) -> bool {
    let base = StateDir::new(root).path();
    if present_but_not_real(root, &base) {
        return true;
    }
    let Ok(entries) = fs::read_dir(&base) else {
        return false;
    };
    entries.filter_map(Result::ok).any(|entry| {
        let linked = entry.file_type().is_ok_and(|kind| kind.is_symlink());
        linked && entry.file_name().to_str().is_some_and(|name| validate_scope_id(name, "scope").is_ok())
    })
}

/// Pipelines under `<root>/.unlazy/`, sorted.
pub fn list_scopes(root: &Path) -> Vec<String> {
    let base = StateDir::new(root).path();
    if !real_directory_inside(root, &base) {
        return Vec::new();
    }
    let Ok(entries) = fs::read_dir(&base) else {
        return Vec::new();
    };
    let mut scopes: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name != "locks" && validate_scope_id(name, "scope").is_ok())
        .filter(|name| real_directory_inside(root, &base.join(name)))
        .collect();
    scopes.sort();
    scopes
}

/// `GATES.md` (when present) then every `*.md` in `gates/`, sorted.
fn discover(root: &Path, base: &Path) -> Result<Vec<PathBuf>, TargetError> {
    let mut files = Vec::new();
    let top = base.join("GATES.md");
    if fs::symlink_metadata(&top).is_ok() {
        files.push(top);
    }
    let nested = base.join("gates");
    if fs::symlink_metadata(&nested).is_ok() {
        if !real_directory_inside(root, &nested) {
            return Err(TargetError::NotReal { what: "gate", path: nested });
        }
        let entries = match fs::read_dir(&nested) {
            Ok(entries) => entries,
            Err(source) => return Err(TargetError::Read { path: nested, source }),
        };
        let mut found: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            // Every name ending in `.md`, `.md` itself included, as the Node tool lists them.
            .filter(|entry| entry.file_name().as_encoded_bytes().ends_with(b".md"))
            .map(|entry| entry.path())
            .collect();
        found.sort();
        files.extend(found);
    }
    Ok(files)
}

/// The repository's own ledgers (`GATES.md`, `gates/*.md` at the root),
/// which a run that chose a pipeline leaves out; none when they cannot be
/// listed.
pub fn root_ledgers(root: &Path) -> Vec<PathBuf> {
    discover(root, root).unwrap_or_default()
}

/// The run's ledgers: `files` when given, else the pipeline `scope` (the
/// caller's `--scope`, else `UNLAZY_SCOPE`), else the only pipeline, else
/// the legacy ledgers.
pub fn resolve(root: &Path, files: &[PathBuf], scope: Option<&str>) -> Result<Target, TargetError> {
    if !files.is_empty() {
        return Ok(Target {
            mode: Mode::Explicit,
            scope: None,
            files: files.iter().map(|f| paths::resolve(root, f)).collect(),
        });
    }
    let scopes = list_scopes(root);
    let chosen = match scope.map(str::to_string) {
        Some(wanted) => {
            validate_scope_id(&wanted, "scope")?;
            let state = StateDir::new(root).path();
            let named = fs::symlink_metadata(state.join(&wanted)).is_ok();
            let state_unsafe = present_but_not_real(root, &state);
            if !scopes.contains(&wanted) && (named || state_unsafe) {
                // Present but excluded from the listing (a link, a file, or
                // outside the root): an invalid input, not a missing scope.
                return Err(TargetError::NotReal { what: "scope", path: state.join(&wanted) });
            }
            if !scopes.contains(&wanted) {
                return Err(TargetError::NoSuchScope { wanted, have: scopes });
            }
            Some(wanted)
        }
        None if scopes.len() == 1 => scopes.first().cloned(),
        None if scopes.len() > 1 => return Err(TargetError::Ambiguous(scopes)),
        None => None,
    };
    match chosen {
        Some(scope) => {
            let base = StateDir::new(root).scope(&scope);
            Ok(Target { mode: Mode::Scope, files: discover(root, &base)?, scope: Some(scope) })
        }
        None => Ok(Target { mode: Mode::Legacy, scope: None, files: discover(root, root)? }),
    }
}
