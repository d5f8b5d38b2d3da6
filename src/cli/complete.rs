//! Shell completion through clap_complete's dynamic engine: the shell
//! calls `gate-check` back on each TAB (`GATE_CHECK_COMPLETE=<shell>` in its
//! environment), so completion always matches this binary's command line
//! and can offer the project's own scope ids, gate ids and leaf names.
//! `gate-check completions SHELL` prints the script that registers it.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use clap_complete::engine::CompletionCandidate;
use clap_complete::env::{CompleteEnv, Shells};

use super::Cli;
use crate::exit::Exit;
use crate::layout::{StateDir, GATES_DIR};
use crate::target::{self, Looking, Root};

/// The variable that asks this process for completions instead of a run:
/// named for this tool, so a `COMPLETE` another program set never turns a
/// run (or a hook) into a completion answer.
const VARIABLE: &str = "GATE_CHECK_COMPLETE";

/// Answers the shell and exits when it asked for completions; returns
/// otherwise.
pub fn answer_if_asked() {
    CompleteEnv::with_factory(Cli::command).var(VARIABLE).complete();
}

/// `gate-check completions SHELL`: the script that registers `gate-check`
/// (found on PATH at TAB time) with the shell's completion system.
pub fn print_registration(shell: clap_complete::Shell) -> Exit {
    let name = shell.to_string();
    let shells = Shells::builtins();
    let Some(completer) = shells.completer(&name) else {
        crate::terminal::warn(&format!("gate-check: no completion for {name}"));
        return Exit::Error;
    };
    let mut script = Vec::new();
    if completer.write_registration(VARIABLE, "gate-check", "gate-check", "gate-check", &mut script).is_err() {
        return Exit::Error;
    }
    crate::terminal::emit(&script);
    Exit::Met
}

/// The repository completion looks in: found from the shell's directory
/// as a run would find it.
fn root() -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok()?;
    let home = directories::BaseDirs::new().map(|dirs| dirs.home_dir().to_path_buf());
    Some(Root::locate(&cwd, home.as_deref(), None, Looking::ForLedgers).path)
}

fn starting_with(current: &OsStr, values: impl IntoIterator<Item = String>) -> Vec<CompletionCandidate> {
    let current = current.to_string_lossy();
    let mut values: Vec<String> = values.into_iter().filter(|value| value.starts_with(current.as_ref())).collect();
    values.sort();
    values.dedup();
    values.into_iter().map(CompletionCandidate::new).collect()
}

/// `--scope`: the pipelines under `.unlazy/`.
pub fn scope_ids(current: &OsStr) -> Vec<CompletionCandidate> {
    let scopes = root().map(|root| target::list_scopes(&root)).unwrap_or_default();
    starting_with(current, scopes)
}

/// Every ledger a run could target: the root's own and every pipeline's.
fn every_ledger(root: &Path) -> Vec<PathBuf> {
    let mut ledgers = target::root_ledgers(root);
    for scope in target::list_scopes(root) {
        if let Ok(found) = target::resolve(root, &[], Some(&scope)) {
            ledgers.extend(found.files);
        }
    }
    ledgers
}

/// `--gate`: each gate's plain and qualified id.
pub fn gate_ids(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(root) = root() else { return Vec::new() };
    let mut ids = Vec::new();
    for ledger in every_ledger(&root) {
        let Ok(text) = crate::ledger::file::read(&ledger) else { continue };
        for gate in crate::ledger::parse(&text).document.gates {
            ids.push(crate::ledger::qualify(&ledger, gate.id()));
            ids.push(gate.id().to_string());
        }
    }
    starting_with(current, ids)
}

/// `--leaf`: the stems of every pipeline's `gates/*.md`.
pub fn leaf_names(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(root) = root() else { return Vec::new() };
    let mut leaves = Vec::new();
    for scope in target::list_scopes(&root) {
        let Ok(entries) = std::fs::read_dir(StateDir::new(&root).scope(&scope).join(GATES_DIR)) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(stem) = name.strip_suffix(".md").filter(|stem| !stem.is_empty()) {
                leaves.push(stem.to_string());
            }
        }
    }
    starting_with(current, leaves)
}
