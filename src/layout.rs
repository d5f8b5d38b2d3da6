//! Every name under a repository's `.unlazy/` (and the approval store's
//! place under the home directory), spelled in one place. Pure: it builds
//! paths and touches nothing.

use std::path::{Path, PathBuf};

/// The state directory of a repository, and of a home directory.
pub const STATE_DIR: &str = ".unlazy";

/// The ignore file gate-check writes into a `.unlazy/` it creates.
pub const IGNORE_FILE: &str = ".gitignore";

/// A scope's dispatch wave state.
pub const DISPATCH_FILE: &str = "dispatch.json";

/// A pipeline's (or the repository's) directory of branch and leaf ledgers.
pub const GATES_DIR: &str = "gates";

/// The lock and lease directory under `.unlazy/`.
pub const LOCKS_DIR: &str = "locks";
pub const STATUS_LOG: &str = "status.log";
pub const SESSION_FILE: &str = "session";
pub const HOOK_STATE_FILE: &str = "hook-state.json";
/// The Stop hook's state for ledgers outside a pipeline, at the root
/// beside `.unlazy`, where the Node tool keeps it.
pub const LEGACY_HOOK_STATE: &str = ".unlazy-hook-state.json";
const APPROVAL_STORE: &str = "approved";
const RECEIPT_STORE: &str = "receipts";

/// The paths under one repository's `.unlazy/`.
#[derive(Debug, Clone)]
pub struct StateDir {
    root: PathBuf,
}

impl StateDir {
    pub fn new(root: &Path) -> StateDir {
        StateDir { root: root.to_path_buf() }
    }

    /// `<root>/.unlazy`.
    pub fn path(&self) -> PathBuf {
        self.root.join(STATE_DIR)
    }

    /// `<root>/.unlazy/<scope>`.
    pub fn scope(&self, scope: &str) -> PathBuf {
        self.path().join(scope)
    }

    pub fn status_log(&self, scope: &str) -> PathBuf {
        self.scope(scope).join(STATUS_LOG)
    }

    pub fn session(&self, scope: &str) -> PathBuf {
        self.scope(scope).join(SESSION_FILE)
    }

    pub fn hook_state(&self, scope: &str) -> PathBuf {
        self.scope(scope).join(HOOK_STATE_FILE)
    }

    /// `<root>/.unlazy-hook-state.json`: the Stop hook's state for ledgers
    /// outside a pipeline, beside `.unlazy` as the Node tool keeps it.
    pub fn legacy_hook_state(&self) -> PathBuf {
        self.root.join(LEGACY_HOOK_STATE)
    }

    /// `<root>/.unlazy/<scope>/gates/<leaf>.md`: the ledger of one leaf.
    pub fn leaf_ledger(&self, scope: &str, leaf: &str) -> PathBuf {
        self.scope(scope).join(GATES_DIR).join(format!("{leaf}.md"))
    }

    pub fn dispatch_state(&self, scope: &str) -> PathBuf {
        self.scope(scope).join(DISPATCH_FILE)
    }

    /// `<root>/.unlazy/locks`.
    pub fn locks(&self) -> PathBuf {
        self.path().join(LOCKS_DIR)
    }

    /// `~/.unlazy/approved`: the default approval store under `home`.
    pub fn default_approval_store(home: &Path) -> PathBuf {
        StateDir::new(home).path().join(APPROVAL_STORE)
    }

    /// `~/.unlazy/receipts`: the default receipt store under `home`, which
    /// also holds the owner's key.
    pub fn default_receipt_store(home: &Path) -> PathBuf {
        StateDir::new(home).path().join(RECEIPT_STORE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_node_tools() {
        let state = StateDir::new(Path::new("/r"));
        let shown: Vec<PathBuf> = vec![
            state.status_log("s"),
            state.session("s"),
            state.hook_state("s"),
            state.legacy_hook_state(),
            state.dispatch_state("s"),
            state.locks(),
            StateDir::default_approval_store(Path::new("/home/u")),
            StateDir::default_receipt_store(Path::new("/home/u")),
        ];
        let expected = [
            "/r/.unlazy/s/status.log",
            "/r/.unlazy/s/session",
            "/r/.unlazy/s/hook-state.json",
            "/r/.unlazy-hook-state.json",
            "/r/.unlazy/s/dispatch.json",
            "/r/.unlazy/locks",
            "/home/u/.unlazy/approved",
            "/home/u/.unlazy/receipts",
        ];
        assert_eq!(shown, expected.map(PathBuf::from));
    }
}
