//! Shell completion through clap_complete's dynamic engine: the shell
//! calls `gate-check` back on each TAB (`GATE_CHECK_COMPLETE=<shell>` in its
//! environment), so completion always matches this binary's command line
//! and can offer the project's own scope ids, gate ids and leaf names.
//! `gate-check completions SHELL` prints the script that registers it.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::CommandFactory;
use clap_complete::engine::CompletionCandidate;
use clap_complete::env::{CompleteEnv, Elvish, EnvCompleter, Fish, Powershell, Shells, Zsh};

use super::Cli;
use crate::exit::Exit;
use crate::layout::{StateDir, GATES_DIR};
use crate::target::{self, Looking, Root};

/// The variable that asks this process for completions instead of a run:
/// named for this tool, so a `COMPLETE` another program set never turns a
/// run (or a hook) into a completion answer.
const VARIABLE: &str = "GATE_CHECK_COMPLETE";

/// The shells completion answers: clap_complete's own, with bash's
/// registration replaced (see `Bash`).
const SHELLS: Shells<'static> = Shells(&[&Bash, &Elvish, &Fish, &Powershell, &Zsh]);

/// Answers the shell and exits when it asked for completions; returns
/// otherwise.
pub fn answer_if_asked() {
    CompleteEnv::with_factory(Cli::command).var(VARIABLE).shells(SHELLS).complete();
}

/// Bash, whose registration joins again the words bash split at `:` or
/// `=` (`--gate leaf-1:G` arrives as `leaf-1`, `:`, `G`) and trims each
/// answer to the piece bash replaces; the answers themselves are
/// clap_complete's.
struct Bash;

/// The registration script; `VAR`, `COMPLETER` and `BIN` are filled in.
const BASH_REGISTRATION: &str = include_str!("complete.bash");

impl EnvCompleter for Bash {
    fn name(&self) -> &'static str {
        clap_complete::env::Bash.name()
    }

    fn is(&self, name: &str) -> bool {
        clap_complete::env::Bash.is(name)
    }

    fn write_registration(
        &self,
        var: &str,
        _name: &str,
        bin: &str,
        completer: &str,
        buf: &mut dyn std::io::Write,
    ) -> Result<(), std::io::Error> {
        let completer = crate::shell_words::quote(completer);
        let script = BASH_REGISTRATION.replace("BIN", bin).replace("COMPLETER", &completer).replace("VAR", var);
        buf.write_all(script.as_bytes())
    }

    fn write_complete(
        &self,
        command: &mut clap::Command,
        args: Vec<std::ffi::OsString>,
        current_dir: Option<&Path>,
        buf: &mut dyn std::io::Write,
    ) -> Result<(), std::io::Error> {
        clap_complete::env::Bash.write_complete(command, args, current_dir, buf)
    }
}

/// `gate-check completions SHELL`: the script that registers `gate-check`
/// (found on PATH at TAB time) with the shell's completion system.
pub fn print_registration(shell: clap_complete::Shell) -> Exit {
    let name = shell.to_string();
    let shells = SHELLS;
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
    let home = crate::config::home_directory();
    Some(Root::locate(&cwd, home.as_deref(), None, Looking::ForLedgers).path)
}

/// The candidates among `values` that start with `current`, sorted, once
/// each. A value holding a character that does not print as itself (a
/// control, an escape sequence, a bidi mark: names come from a repository
/// that may be hostile) is dropped: the shell would print it raw.
fn starting_with(current: &OsStr, values: impl IntoIterator<Item = String>) -> Vec<CompletionCandidate> {
    let current = current.to_string_lossy();
    let mut values: Vec<String> = values
        .into_iter()
        .filter(|value| value.starts_with(current.as_ref()) && !value.chars().any(crate::visible::is_hidden))
        .collect();
    values.sort();
    values.dedup();
    values.into_iter().map(CompletionCandidate::new).collect()
}

/// The ledger bytes one TAB may read: completion runs on every key press.
const TAB_BYTES: u64 = 2 * 1024 * 1024;
/// How long one TAB may look before it offers what it found.
const TAB_TIME: Duration = Duration::from_millis(250);

/// What one TAB may still spend: a repository can hold any number of
/// ledgers of up to 8 MiB each, so reading stops at a byte budget and a
/// deadline, and completion offers what was found by then.
struct Budget {
    deadline: Instant,
    bytes_left: u64,
}

impl Budget {
    fn new() -> Budget {
        Budget { deadline: Instant::now() + TAB_TIME, bytes_left: TAB_BYTES }
    }

    fn spent(&self) -> bool {
        self.bytes_left == 0 || Instant::now() >= self.deadline
    }

    /// The text of `ledger` when it fits in what is left, which it then
    /// spends; `None` for a ledger too large, unreadable, or past the deadline.
    fn read(&mut self, ledger: &Path) -> Option<String> {
        if self.spent() {
            return None;
        }
        let text = crate::ledger::file::read_at_most(ledger, self.bytes_left).ok()?;
        self.bytes_left = self.bytes_left.saturating_sub(text.len() as u64);
        Some(text)
    }
}

/// `--scope`: the pipelines under `.unlazy/`.
pub fn scope_ids(current: &OsStr) -> Vec<CompletionCandidate> {
    let scopes = root().map(|root| target::list_scopes(&root)).unwrap_or_default();
    starting_with(current, scopes)
}

/// Every ledger a run could target: the root's own and every pipeline's
/// (discovery stays inside the repository: linked folders are refused).
fn every_ledger(root: &Path, budget: &Budget) -> Vec<PathBuf> {
    let mut ledgers = target::root_ledgers(root);
    for scope in target::list_scopes(root) {
        if budget.spent() {
            break;
        }
        if let Ok(found) = target::resolve(root, &[], Some(&scope)) {
            ledgers.extend(found.files);
        }
    }
    ledgers
}

/// `--gate`: each gate's plain and qualified id, from as many ledgers as
/// one TAB's budget reads.
pub fn gate_ids(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(root) = root() else { return Vec::new() };
    let mut budget = Budget::new();
    let mut ids = Vec::new();
    for ledger in every_ledger(&root, &budget) {
        let Some(text) = budget.read(&ledger) else { continue };
        for gate in crate::ledger::parse(&text).document.gates {
            ids.push(crate::ledger::qualify(&ledger, gate.id()));
            ids.push(gate.id().to_string());
        }
    }
    starting_with(current, ids)
}

/// `--leaf`: the stems of every pipeline's `gates/*.md` that are leaf ids,
/// from `gates/` folders that are real directories inside the repository.
pub fn leaf_names(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(root) = root() else { return Vec::new() };
    let budget = Budget::new();
    let mut leaves = Vec::new();
    for scope in target::list_scopes(&root) {
        let gates = StateDir::new(&root).scope(&scope).join(GATES_DIR);
        if budget.spent() || !crate::durable::real_directory_inside(&root, &gates) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&gates) else { continue };
        for entry in entries.flatten().take_while(|_| !budget.spent()) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(stem) = name.strip_suffix(".md").filter(|stem| target::validate_scope_id(stem, "leaf").is_ok())
            {
                leaves.push(stem.to_string());
            }
        }
    }
    starting_with(current, leaves)
}
