//! `gate-check init`: a starter `GATES.md` in the repository root, from the
//! leaf template, which is a working example (its runnable gates inspect
//! the file itself, so they pass where they are written). It never writes
//! over anything: an existing `GATES.md` is left as it is.

use std::path::{Path, PathBuf};

use crate::config::Environment;
use crate::exit::Exit;
use crate::ledger::file::LedgerFileError;
use crate::target::{DirectoryError, Looking, Root};
use crate::terminal::say;

/// The ledger `init` writes: the shipped leaf template, byte for byte.
const STARTER: &str = include_str!("../templates/gates-leaf.md");
const LEDGER_NAME: &str = "GATES.md";

/// Why `init` wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error(transparent)]
    Root(#[from] DirectoryError),
    #[error(
        "{} already exists; init never writes over a ledger (rename or remove it first, or edit it as it is)",
        .0.display()
    )]
    Exists(PathBuf),
    #[error("cannot write {}: {source}", .path.display())]
    Write { path: PathBuf, source: LedgerFileError },
}

/// Writes the starter ledger into the root (`--root`, else the one a run
/// would find from here) and says what to do next.
pub fn run(env: &Environment, root: Option<&Path>) -> Result<Exit, InitError> {
    let root = Root::locate_directory(&env.cwd, env.home.as_deref(), root, Looking::ForLedgers)?.path;
    let path = root.join(LEDGER_NAME);
    let written = crate::ledger::file::create(&root, LEDGER_NAME, STARTER)
        .map_err(|source| InitError::Write { path: path.clone(), source })?;
    if !written {
        return Err(InitError::Exists(path));
    }
    // Paths on a command line are taken from --root, else from here.
    let from_root = if root == env.cwd {
        String::new()
    } else {
        format!(" --root {}", crate::shell_words::quote(&root.display().to_string()))
    };
    say(&format!("wrote {}: a working example ledger of 3 gates (2 runnable, 1 manual)", path.display()));
    say("next:");
    say(&format!("  1. read its CHECK lines, then run them: gate-check{from_root} --approve {LEDGER_NAME}"));
    say("  2. replace the example gates with your own outcomes (the steps are at the top of the file)");
    say(&format!("  3. audit what they prove before the first run: gate-check{from_root} lint {LEDGER_NAME}"));
    Ok(Exit::Met)
}
