//! `gate-check hook pre-tool`: the guard an agent host runs before every
//! tool call (Claude Code's and Codex's `PreToolUse`, Gemini CLI's
//! `BeforeTool`, Cursor's `preToolUse` and `beforeShellExecution`).
//!
//! It refuses, in the host's own schema, a tool call that would decide a
//! gate for the agent: a ledger edit that ticks a runnable gate's box or
//! writes its EVIDENCE, a write into the approval store, the receipt store
//! or a `.unlazy/locks` directory, a shell command that runs the checker
//! with `--approve`, and a plain shell rewrite of a ledger (redirection,
//! `tee`, `sed -i`, `perl -i`). Everything else passes with no output (on
//! Cursor, `{"permission":"allow"}`, which it requires). Input it cannot
//! use lets the call through and says so on stderr: a broken guard never
//! wedges the agent. It always exits 0.
//!
//! This file is the edge: it reads the payload, resolves the paths a call
//! names (against the payload's `cwd`, through `..` and links) and reads
//! the ledgers among them. What a payload asks (`call`), what a change
//! leaves (`change`, `patch`), what a command does (`shell`) and the
//! decision itself (`judge`) are pure.

mod call;
mod change;
mod judge;
mod patch;
mod shell;

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::config::Environment;
use crate::exit::Exit;
use crate::host::Host;
use crate::layout::{StateDir, LOCKS_DIR, STATE_DIR};
use crate::ledger::file::LedgerFileError;
use crate::paths;
use crate::terminal::{say, warn};
use call::{FileWrite, ToolCall};
use judge::{Denial, Place, Places, Protected};

/// A pre-tool payload carries a whole file write: a ledger may hold 8 MiB,
/// which JSON escaping can double. Larger input is let through (a ledger
/// that large is refused by the checker anyway).
const MAX_PAYLOAD_BYTES: u64 = 32 * 1024 * 1024;

/// Runs the guard on one tool call. It always exits 0: the decision is in
/// the output. `agent` is the host the installed command names; a payload
/// whose shape names another host is answered in that host's schema.
pub fn run(env: Option<&Environment>, agent: Option<Host>) -> Exit {
    guard(env, agent);
    Exit::Met
}

/// The installed command line does not parse: the call goes through, and
/// the person learns the entry needs fixing.
pub(crate) fn misconfigured(problem: &str, arguments: &[OsString]) {
    let host = super::named_host(arguments).unwrap_or_default();
    fail_open(
        host,
        &format!("gate-check hook: {problem}"),
        "the installed guard command is broken (reinstall it with gate-check install-hooks)",
    );
}

/// The fields of a pre-tool payload the guard uses.
struct Payload {
    host: Option<Host>,
    event: Option<String>,
    cwd: Option<String>,
    /// Cursor's `workspace_roots`, where it sends no `cwd`.
    workspace_roots: Vec<String>,
    call: ToolCall,
}

fn read_payload() -> Result<Payload, super::InputError> {
    let object = super::read_object(MAX_PAYLOAD_BYTES)?;
    Ok(Payload {
        host: Host::from_payload(&object),
        event: super::text_field(&object, "hook_event_name")?,
        cwd: super::text_field(&object, "cwd")?,
        workspace_roots: super::workspace_roots(&object)?,
        call: call::read(&object),
    })
}

/// The events that run before a tool: Claude Code's and Codex's
/// `PreToolUse`, Gemini CLI's `BeforeTool`, Cursor's `preToolUse` and
/// `beforeShellExecution`. A payload that names no event is judged too.
fn is_pre_tool_event(event: Option<&str>) -> bool {
    event.is_none_or(|event| matches!(event, "PreToolUse" | "BeforeTool" | "preToolUse" | "beforeShellExecution"))
}

fn print_json(value: &Value) {
    say(&serde_json::to_string(value).unwrap_or_default());
}

fn allow(host: Host) {
    if let Some(reply) = host.allow_tool() {
        print_json(&reply);
    }
}

/// A guard that cannot do its job lets the call through, and says why on
/// stderr and, where the host shows one, in a `systemMessage`.
fn fail_open(host: Host, problem: &str, what: &str) {
    warn(&format!("{problem}; not guarding this tool call"));
    match host.allow_tool() {
        Some(reply) => print_json(&reply),
        None => {
            if let Some(note) = host.note(&format!("unlazy: {what}: {problem}; not guarding this tool call.")) {
                print_json(&note);
            }
        }
    }
}

fn guard(env: Option<&Environment>, agent: Option<Host>) {
    let payload = match read_payload() {
        Ok(payload) => payload,
        Err(error) => {
            let problem = format!("gate-check hook pre-tool: {error}");
            return fail_open(agent.unwrap_or_default(), &problem, "the hook input is unusable");
        }
    };
    let host = payload.host.or(agent).unwrap_or_default();
    if !is_pre_tool_event(payload.event.as_deref()) || payload.call == ToolCall::Other {
        return allow(host);
    }
    let Some(env) = env else {
        let problem = "gate-check hook pre-tool: cannot read the working directory";
        return fail_open(host, problem, "the guard cannot run here");
    };
    match judge_call(env, &payload) {
        Some(denial) => print_json(&host.deny_tool(&denial.reason())),
        None => allow(host),
    }
}

/// Why the call must not run, if it must not.
fn judge_call(env: &Environment, payload: &Payload) -> Option<Denial> {
    match &payload.call {
        ToolCall::Files(writes) => judge::files(writes, &World::new(env, payload).places(writes)),
        ToolCall::Shell { command, directory, patched } => {
            let findings = shell::analyze(command);
            // Most commands write nowhere: where the stores are is not needed.
            if findings.writes.is_empty() && patched.is_empty() {
                return judge::shell(findings.approves, &[]);
            }
            let world = World::new(env, payload);
            let directory =
                directory.as_deref().map_or_else(|| world.start.clone(), |dir| world.resolve(dir, &world.start));
            let written: Vec<(Place, shell::Writer)> = findings
                .writes
                .iter()
                .flat_map(|(word, how)| world.shell_places(word, &directory).into_iter().map(|place| (place, *how)))
                .collect();
            judge::shell(findings.approves, &written).or_else(|| judge::files(patched, &world.places(patched)))
        }
        ToolCall::Other => None,
    }
}

/// What the guard knows of the machine a call runs on: where its relative
/// paths start, and where the protected stores are.
struct World<'a> {
    env: &'a Environment,
    /// Where the session works, as the Stop hook finds it.
    start: PathBuf,
    /// The approval and receipt stores, as named and as resolved.
    stores: Vec<(PathBuf, Protected)>,
}

impl<'a> World<'a> {
    fn new(env: &'a Environment, payload: &Payload) -> World<'a> {
        let start = super::start_directory(env, payload.cwd.as_deref(), &payload.workspace_roots);
        let mut world = World { env, start, stores: Vec::new() };
        world.stores = world.protected_stores();
        world
    }

    /// The approval store and the receipt store as the checker resolves
    /// them (`UNLAZY_APPROVAL_DIR`, `UNLAZY_RECEIPT_DIR`, relative to where
    /// the agent runs it or the hook runs), and the default stores under
    /// the home directory, which the person's own runs may use.
    fn protected_stores(&self) -> Vec<(PathBuf, Protected)> {
        let env = self.env;
        let mut stores = Vec::new();
        for (named, kind) in [(&env.approval_dir, Protected::Approvals), (&env.receipt_dir, Protected::Receipts)] {
            for base in [&self.start, &env.cwd] {
                stores.extend(named.as_deref().map(|dir| (paths::resolve(base, dir), kind)));
            }
        }
        if let Some(home) = &env.home {
            stores.push((StateDir::default_approval_store(home), Protected::Approvals));
            stores.push((StateDir::default_receipt_store(home), Protected::Receipts));
        }
        let real: Vec<(PathBuf, Protected)> =
            stores.iter().map(|(store, kind)| (paths::real_path(store), *kind)).collect();
        stores.extend(real);
        stores
    }

    /// `raw` as an absolute path: `~` and `$HOME` expanded, resolved
    /// against `directory`, `.` and `..` removed.
    fn resolve(&self, raw: &str, directory: &Path) -> PathBuf {
        let home = self.env.home.as_deref();
        let expanded = ["~", "$HOME", "${HOME}"].iter().find_map(|prefix| {
            let rest = raw.strip_prefix(prefix)?;
            let rest = if rest.is_empty() { Some("") } else { rest.strip_prefix('/') }?;
            Some(home?.join(rest))
        });
        paths::resolve(directory, &expanded.unwrap_or_else(|| PathBuf::from(raw)))
    }

    fn protection(&self, path: &Path) -> Option<Protected> {
        if is_in_locks(path) {
            return Some(Protected::Locks);
        }
        self.stores.iter().find(|(store, _)| paths::is_inside(store, path)).map(|(_, kind)| *kind)
    }

    /// What the guard needs to know of `raw`, without its text.
    fn place(&self, raw: &str, directory: &Path) -> (Place, PathBuf) {
        let lexical = self.resolve(raw, directory);
        let real = paths::real_path(&lexical);
        let protected = self.protection(&lexical).or_else(|| self.protection(&real));
        let ledger = is_ledger(&lexical) || is_ledger(&real);
        (Place { shown: lexical.display().to_string(), protected, ledger, text: None }, real)
    }

    /// The places of the files a call writes, with the current text of
    /// every ledger among them and of every file moved onto one.
    fn places(&self, writes: &[FileWrite]) -> Places {
        let mut places = Places::new();
        let mut real = std::collections::HashMap::new();
        for raw in writes.iter().flat_map(|write| [&write.target, &write.base]) {
            if !places.contains_key(raw) {
                let (place, path) = self.place(raw, &self.start);
                places.insert(raw.clone(), place);
                real.insert(raw.clone(), path);
            }
        }
        let onto_ledgers: Vec<&FileWrite> = writes.iter().filter(|write| places[&write.target].ledger).collect();
        for write in onto_ledgers {
            for raw in [&write.target, &write.base] {
                if let Some(place) = places.get_mut(raw).filter(|place| place.text.is_none()) {
                    place.text = current_text(&real[raw]);
                }
            }
        }
        places
    }

    /// The places a shell word names: its matches when its last component
    /// is a pattern (as the shell expands it), else the word itself.
    fn shell_places(&self, word: &str, directory: &Path) -> Vec<Place> {
        let path = self.resolve(word, directory);
        let pattern = path.file_name().and_then(|name| name.to_str()).filter(|name| name.contains(['*', '?', '[']));
        let matches: Vec<Place> = match (pattern, path.parent()) {
            (Some(pattern), Some(parent)) => expand(parent, pattern)
                .into_iter()
                .map(|name| self.place(&parent.join(name).display().to_string(), directory).0)
                .collect(),
            _ => Vec::new(),
        };
        if matches.is_empty() {
            vec![self.place(word, directory).0]
        } else {
            matches
        }
    }
}

/// The names in `directory` that the shell pattern `pattern` matches.
fn expand(directory: &Path, pattern: &str) -> Vec<OsString> {
    let Ok(glob) = globset::GlobBuilder::new(pattern).literal_separator(true).build() else {
        return Vec::new();
    };
    let matcher = glob.compile_matcher();
    let Ok(entries) = std::fs::read_dir(directory) else {
        return Vec::new();
    };
    entries.filter_map(Result::ok).map(|entry| entry.file_name()).filter(|name| matcher.is_match(name)).collect()
}

/// A ledger's current text: `None` when there is no file. A file that
/// exists but cannot be read as a ledger counts as empty, so every ticked
/// box an edit leaves there is new.
fn current_text(path: &Path) -> Option<String> {
    match crate::ledger::file::read(path) {
        Ok(text) => Some(text),
        Err(LedgerFileError::Missing(_)) => None,
        Err(_) => Some(String::new()),
    }
}

/// Whether gate-check reads a file at `path` as a ledger: `GATES.md`
/// (of a repository, a subdirectory or a pipeline) or a `.md` file in a
/// `gates` directory. Letter case is ignored, as a case-insensitive file
/// system ignores it.
fn is_ledger(path: &Path) -> bool {
    let name = |path: Option<&Path>| {
        path.and_then(Path::file_name).and_then(|name| name.to_str()).map(str::to_ascii_lowercase)
    };
    match name(Some(path)) {
        Some(file) if file == "gates.md" => true,
        Some(file) => file.ends_with(".md") && name(path.parent()).as_deref() == Some(crate::layout::GATES_DIR),
        None => false,
    }
}

/// Whether `path` lies in a `.unlazy/locks` directory, of any repository,
/// in any letter case (as `is_ledger` judges names).
fn is_in_locks(path: &Path) -> bool {
    let named =
        |part: &Component, name: &str| part.as_os_str().to_str().is_some_and(|part| part.eq_ignore_ascii_case(name));
    let parts: Vec<Component> = path.components().collect();
    parts.windows(2).any(|pair| named(&pair[0], STATE_DIR) && named(&pair[1], LOCKS_DIR))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ledgers_are_known_by_their_names() {
        for path in [
            "/r/GATES.md",
            "/r/sub/gates.md",
            "/r/gates/leaf-1.md",
            "/r/.unlazy/api/GATES.md",
            "/r/.unlazy/api/gates/a.MD",
        ] {
            assert!(is_ledger(Path::new(path)), "{path}");
        }
        for path in ["/r/README.md", "/r/gates/notes.txt", "/r/gates", "/r/docs/GATES.md.bak", "/"] {
            assert!(!is_ledger(Path::new(path)), "{path}");
        }
    }

    #[test]
    fn lock_directories_are_protected_wherever_they_are() {
        assert!(is_in_locks(Path::new("/r/.unlazy/locks/x.filelock")));
        assert!(is_in_locks(Path::new("/r/sub/.unlazy/locks")));
        assert!(is_in_locks(Path::new("/r/.UNLAZY/Locks/x.filelock")), "as a case-insensitive file system");
        assert!(!is_in_locks(Path::new("/r/.unlazy/api/locks.md")));
        assert!(!is_in_locks(Path::new("/r/locks/.unlazy")));
    }
}
