//! `gate-check hook stop`: the stop hook of every agent host the skill runs
//! in (Claude Code, Codex CLI, Gemini CLI, Cursor).
//!
//! It reads the hook's JSON on stdin, finds the session's ledgers, and
//! replies in the host's own schema (see `host::Host`) while any gate is
//! unmet or stale or any ledger is unparseable. It never executes a check,
//! resolves a shell or reads approvals: gate states come from
//! `evidence::gate_state` alone. It always exits 0; a stop it lets through
//! prints nothing, or a `{"systemMessage":...}` note where the host shows
//! one (on stderr where it does not).
//!
//! A subagent's stop (`SubagentStop` with its `agent_id`) is judged on its
//! own leaf: the leaf the scope's dispatch waves recorded as launched with
//! that handle. A subagent no wave names is never held.
//!
//! The semantic state it blocked on is remembered per session (see
//! `state`); after `state::MAX_BLOCKS` consecutive blocks without progress
//! the next stop is let through, so a stuck agent is never trapped.
//!
//! Inputs are combined in an `Assessment`: the ledgers of the chosen
//! target and, for a scope, its dispatch waves (an incomplete wave blocks,
//! an abandoned one is a handoff, unreadable wave state blocks).

pub mod assess;
pub mod pre_tool;
mod root;
pub mod state;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use crate::approval::store::StoreLocation;
use crate::check::proof::Proofs;
use crate::config::Environment;
use crate::exit::Exit;
use crate::host::Host;
use crate::layout::STATE_DIR;
use crate::ledger::{self, file::LedgerFileError};
use crate::target;
use crate::terminal::{say, warn};
use assess::{Assessment, Subject};

/// Hook input larger than this is not a Claude Code payload.
const MAX_PAYLOAD_BYTES: u64 = 1024 * 1024;
const MAX_SESSION_FILE_BYTES: u64 = 4096;
/// How long the hook waits for its input to end. Claude Code writes the
/// payload and closes stdin at once; a caller that never closes it must not
/// hang the turn.
const INPUT_DEADLINE: Duration = Duration::from_secs(5);

fn print_json(value: &Value) {
    say(&serde_json::to_string(value).unwrap_or_default());
}

/// Keeps the agent working, with `reason` as what it is told to do next.
fn block(host: Host, reason: &str) {
    print_json(&host.block(reason));
}

/// Lets the stop through with a note for the person: a `systemMessage`
/// where the host shows one, stderr where it does not.
fn allow_with(host: Host, message: &str) {
    match host.note(message) {
        Some(note) => print_json(&note),
        None => warn(message),
    }
}

/// A hook that cannot do its job never blocks, but says why: on stderr,
/// and as a `systemMessage` where the host shows one (it is part of
/// Codex's Stop output schema, and Claude Code and Gemini CLI show it).
fn not_blocking(host: Host, problem: &str, what: &str) {
    let note = format!("unlazy: {what}: {problem}; not blocking.");
    // Where the note goes to stderr anyway, it is said there once.
    if host.note(&note).is_some() {
        warn(&format!("{problem}; not blocking"));
    }
    allow_with(host, &note);
}

/// The installed hook's command line does not parse (`problem` says how):
/// the stop goes through, and the person learns the entry needs fixing.
/// `arguments` are the hook's own (after `hook`), read only for the host
/// the installer named there.
pub(crate) fn misconfigured(problem: &str, arguments: &[std::ffi::OsString]) {
    not_blocking(
        named_host(arguments).unwrap_or_default(),
        &format!("gate-check hook: {problem}"),
        "the installed hook command is broken (reinstall it with gate-check install-hooks)",
    );
}

/// The value of `--agent` on a command line that clap could not parse.
fn named_host(arguments: &[std::ffi::OsString]) -> Option<Host> {
    use clap::ValueEnum;
    let words: Vec<&str> = arguments.iter().filter_map(|argument| argument.to_str()).collect();
    words.iter().enumerate().find_map(|(at, word)| {
        let value = match word.strip_prefix("--agent") {
            Some("") => *words.get(at + 1)?,
            Some(rest) => rest.strip_prefix('=')?,
            None => return None,
        };
        Host::from_str(value, false).ok()
    })
}

/// The fields of the hook input the hook uses.
#[derive(Debug, Default)]
struct Payload {
    /// Claude Code's, Codex's and Gemini CLI's `session_id`, or Cursor's
    /// `conversation_id`.
    session: Option<String>,
    cwd: Option<String>,
    /// Cursor's `workspace_roots`, where it sends no `cwd`.
    workspace_roots: Vec<String>,
    /// `hook_event_name`, when the host names the event.
    event: Option<String>,
    /// The subagent's handle on `SubagentStop`.
    agent_id: Option<String>,
    /// Cursor's `status`: `completed`, `aborted` or `error`.
    status: Option<String>,
    /// The host the payload's shape names, if it names one.
    host: Option<Host>,
}

/// The events at which an agent stops, the only ones a reply can block:
/// Claude Code's and Codex's `Stop` and `SubagentStop`, Gemini CLI's
/// `AfterAgent` and Cursor's `stop`. A payload that names no event is a
/// stop, as the Node hook reads every payload.
fn is_stop_event(event: Option<&str>) -> bool {
    event.is_none_or(|event| matches!(event, "Stop" | "SubagentStop" | "AfterAgent" | "stop"))
}

/// Why the hook input could not be used.
#[derive(Debug, thiserror::Error)]
enum InputError {
    #[error("cannot read the hook input: {0}")]
    Read(#[source] std::io::Error),
    #[error("the hook input was not closed within {} s", .0.as_secs())]
    NotClosed(Duration),
    #[error("hook input exceeds {0} bytes")]
    TooLarge(u64),
    #[error("hook input is not UTF-8")]
    NotUtf8,
    #[error("hook input is not JSON ({0})")]
    NotJson(#[source] serde_json::Error),
    #[error("hook input is not a JSON object")]
    NotObject,
    #[error("hook input field {0} is not a string")]
    NotText(&'static str),
    #[error("hook input field {0} is not a list of strings")]
    NotTextList(&'static str),
}

/// All of stdin (at most `limit + 1` bytes, so a caller can tell input
/// over its limit), or an error when it is not closed within `deadline`.
/// The reading thread is left blocked then; the process exits without
/// waiting for it.
fn read_input(deadline: Duration, limit: u64) -> Result<Vec<u8>, InputError> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let read = std::io::stdin().take(limit + 1).read_to_end(&mut bytes).map(|_| bytes);
        let _ = sender.send(read);
    });
    match receiver.recv_timeout(deadline) {
        Ok(read) => read.map_err(InputError::Read),
        Err(_) => Err(InputError::NotClosed(deadline)),
    }
}

/// Cursor's `workspace_roots`: a list of texts, absent or null for none.
fn workspace_roots(object: &serde_json::Map<String, Value>) -> Result<Vec<String>, InputError> {
    match object.get("workspace_roots") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(roots)) => roots
            .iter()
            .map(|root| root.as_str().map(str::to_string).ok_or(InputError::NotTextList("workspace_roots")))
            .collect(),
        Some(_) => Err(InputError::NotTextList("workspace_roots")),
    }
}

/// The hook input as a JSON object, at most `limit` bytes of it. Blank
/// input is an empty object: a host that sends nothing names nothing.
fn read_object(limit: u64) -> Result<serde_json::Map<String, Value>, InputError> {
    let bytes = read_input(INPUT_DEADLINE, limit)?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge(limit));
    }
    let text = String::from_utf8(bytes).map_err(|_| InputError::NotUtf8)?;
    if text.trim().is_empty() {
        return Ok(serde_json::Map::new());
    }
    match serde_json::from_str(&text).map_err(InputError::NotJson)? {
        Value::Object(object) => Ok(object),
        _ => Err(InputError::NotObject),
    }
}

/// The text field `name`: absent, null and empty are none.
fn text_field(object: &serde_json::Map<String, Value>, name: &'static str) -> Result<Option<String>, InputError> {
    match object.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone()).filter(|text| !text.is_empty())),
        Some(_) => Err(InputError::NotText(name)),
    }
}

fn read_payload() -> Result<Payload, InputError> {
    let object = read_object(MAX_PAYLOAD_BYTES)?;
    let mut session = None;
    for name in ["session_id", "sessionId", "conversation_id"] {
        session = session.or(text_field(&object, name)?);
    }
    Ok(Payload {
        session,
        cwd: text_field(&object, "cwd")?,
        workspace_roots: workspace_roots(&object)?,
        event: text_field(&object, "hook_event_name")?,
        agent_id: text_field(&object, "agent_id")?,
        status: text_field(&object, "status")?,
        host: Host::from_payload(&object),
    })
}

/// The session id recorded by `--bind` for `scope`, if readable.
fn bound_session(root: &Path, scope: &str) -> Option<String> {
    let read = crate::durable::read_stable(&crate::layout::StateDir::new(root).session(scope), MAX_SESSION_FILE_BYTES)
        .ok()??;
    Some(String::from_utf8_lossy(&read.bytes).trim().to_string())
}

/// Which ledger set the hook guards for this session.
#[derive(Debug, PartialEq, Eq)]
enum Choice {
    /// A pipeline named (`--scope`, `UNLAZY_SCOPE`) or bound to this
    /// session: that pipeline is the session's work.
    Scope(String),
    /// The only pipeline, which nothing named: the repository's own
    /// ledgers are judged with it, so its `ALL MET` cannot hide theirs.
    OnlyPipeline(String),
    Legacy,
    /// Let the stop through, with a note when there is one.
    Skip(Option<String>),
    /// No trustworthy pipeline but an untrusted one (a linked scope or
    /// `.unlazy`): blocked as a discovery failure, as a named scope is.
    Untrusted,
}

/// `--scope` from the installed command, then the pipeline bound to this
/// session, then `UNLAZY_SCOPE` (`from_environment`), then the one pipeline not bound to another
/// session, then (with no pipelines at all) the legacy ledgers.
fn choose(root: &Path, pinned: Option<&str>, from_environment: Option<&str>, session: Option<&str>) -> Choice {
    let scopes = target::list_scopes(root);
    // A named scope that is listed, or present but unsafe (a link, a file,
    // outside the root): the latter is chosen too, so its discovery fails
    // and blocks, as `--status --scope` refuses it. Only a scope that is
    // really absent lets the stop through.
    let named = |scope: &str| {
        let state = crate::layout::StateDir::new(root).path();
        let present =
            std::fs::symlink_metadata(state.join(scope)).is_ok() || crate::durable::present_but_not_real(root, &state);
        if scopes.iter().any(|s| s == scope) || present {
            return Choice::Scope(scope.to_string());
        }
        let have = if scopes.is_empty() { "none".to_string() } else { scopes.join(", ") };
        Choice::Skip(Some(format!(
            "unlazy: no such scope \"{scope}\" under {STATE_DIR}/ (have: {have}); not blocking."
        )))
    };
    if let Some(scope) = pinned {
        return named(scope);
    }
    let bindings: Vec<(String, Option<String>)> =
        scopes.iter().map(|scope| (scope.clone(), bound_session(root, scope))).collect();
    if let Some(session) = session {
        let mine: Vec<&String> =
            bindings.iter().filter(|(_, bound)| bound.as_deref() == Some(session.trim())).map(|(s, _)| s).collect();
        match mine.as_slice() {
            [only] => return Choice::Scope((*only).clone()),
            [] => {}
            several => {
                let names: Vec<&str> = several.iter().map(|s| s.as_str()).collect();
                return Choice::Skip(Some(format!(
                    "unlazy: {} pipelines under {STATE_DIR}/ ({}) are bound to this session; not blocking.",
                    names.len(),
                    names.join(", ")
                )));
            }
        }
    }
    if let Some(scope) = from_environment {
        if target::validate_scope_id(scope, "UNLAZY_SCOPE").is_err() {
            return Choice::Skip(Some("unlazy: UNLAZY_SCOPE is not a valid scope id; not blocking.".into()));
        }
        return named(scope);
    }
    if scopes.is_empty() {
        // As `--status` does, which then finds no ledger and fails. The
        // ledgers are looked for only then: `discover` lists them anyway.
        if target::has_untrusted_pipeline(root)
            && target::resolve(root, &[], None).is_ok_and(|found| found.files.is_empty())
        {
            return Choice::Untrusted;
        }
        return Choice::Legacy;
    }
    let unowned: Vec<&str> = bindings
        .iter()
        .filter(|(_, bound)| bound.as_deref().is_none_or(str::is_empty))
        .map(|(scope, _)| scope.as_str())
        .collect();
    match unowned.as_slice() {
        [only] => Choice::OnlyPipeline(only.to_string()),
        // Every pipeline belongs to another session: nothing here is ours.
        [] => Choice::Skip(None),
        several => Choice::Skip(Some(format!(
            "unlazy: {} pipelines under {STATE_DIR}/ ({}) and none bound to this session; not blocking.",
            several.len(),
            several.join(", ")
        ))),
    }
}

/// The ledgers of the choice, with `beside` (the repository's own ledgers
/// judged with the only pipeline), or `None` when they cannot be listed
/// (an untrusted pipeline, an unusable scope or gate directory).
fn discover(root: &Path, choice: &Choice, beside: &[PathBuf]) -> Option<Vec<PathBuf>> {
    let scope = match choice {
        Choice::Scope(scope) | Choice::OnlyPipeline(scope) => Some(scope.as_str()),
        Choice::Untrusted => return None,
        _ => None,
    };
    let mut files = target::resolve(root, &[], scope).ok()?.files;
    files.extend_from_slice(beside);
    files.sort();
    Some(files)
}

/// The session's ledgers assessed; with `receipts`, met gates are judged
/// by their proofs on the tree under `root` too (the store is opened for
/// the first ledger that parses, and only then).
fn assess(root: &Path, files: &[PathBuf], receipts: Option<&StoreLocation>) -> Assessment {
    let mut assessment = Assessment::default();
    let mut proofs: Option<Proofs> = None;
    for file in files {
        match ledger::file::read(file) {
            Err(LedgerFileError::InvalidUtf8(_, line)) => assessment.add_invalid(file, Some(line)),
            Err(_) => assessment.add_unreadable(file),
            Ok(text) => {
                let outcome = ledger::parse(&text);
                match outcome.errors.first() {
                    Some(error) => assessment.add_invalid(file, error.line),
                    None => {
                        let judged = match receipts {
                            Some(store) => proofs
                                .get_or_insert_with(|| Proofs::open(store, &[root.to_path_buf()], false))
                                .judge_document(root, file, &outcome.document),
                            None => Vec::new(),
                        };
                        assessment.add_document(file, &outcome.document, &judged)
                    }
                }
            }
        }
    }
    // Why proofs could not be judged (an unusable store, an unreadable
    // tree) is the person's to mend: said on stderr, never to the agent.
    for problem in proofs.as_mut().map(Proofs::take_problems).unwrap_or_default() {
        warn(&format!("gate-check hook stop: {problem}"));
    }
    assessment
}

/// Whether the scope has recorded dispatch waves, which need checking even
/// when it has no ledgers yet.
fn has_dispatch_state(root: &Path, scope: Option<&str>) -> bool {
    scope.is_some_and(|scope| {
        std::fs::symlink_metadata(crate::layout::StateDir::new(root).dispatch_state(scope)).is_ok()
    })
}

/// Runs the stop hook. It always exits 0: the decision is in the output.
/// Without an environment (the working directory is unreadable) it lets
/// the stop through, after reading the input as always. `agent` is the
/// host the installed command names; a payload whose shape names another
/// host is answered in that host's schema (Cursor runs Claude Code's
/// hooks too).
pub fn stop(env: Option<&Environment>, agent: Option<Host>, pinned: Option<&str>, proof: bool) -> Exit {
    decide(env, agent, pinned, proof);
    Exit::Met
}

/// The directory the session works in: the payload's `cwd`, else the
/// first of Cursor's workspace roots that holds ledgers or a pipeline,
/// else its first workspace root, else the hook's own directory.
fn start_directory(env: &Environment, cwd: Option<&str>, workspace_roots: &[String]) -> PathBuf {
    if let Some(cwd) = cwd {
        return crate::paths::resolve(&env.cwd, Path::new(cwd));
    }
    let roots: Vec<PathBuf> =
        workspace_roots.iter().map(|root| crate::paths::resolve(&env.cwd, Path::new(root))).collect();
    let holds_work = |root: &&PathBuf| {
        ["GATES.md", crate::layout::GATES_DIR, STATE_DIR].iter().any(|name| root.join(name).symlink_metadata().is_ok())
    };
    roots.iter().find(holds_work).or(roots.first()).cloned().unwrap_or_else(|| env.cwd.clone())
}

fn decide(env: Option<&Environment>, agent: Option<Host>, pinned: Option<&str>, proof: bool) {
    let payload = match read_payload() {
        Ok(payload) => payload,
        Err(message) => {
            return not_blocking(
                agent.unwrap_or_default(),
                &format!("gate-check hook stop: {message}"),
                "the hook input is unusable",
            )
        }
    };
    let host = payload.host.or(agent).unwrap_or_default();
    // Installed on another event (by hand, or a copied entry), the hook has
    // nothing to decide: an empty reply lets the host go on.
    if !is_stop_event(payload.event.as_deref()) {
        return;
    }
    // A turn the person aborted, or that ended in an error, is not sent
    // back to work (Cursor says which in `status`).
    if host == Host::Cursor && payload.status.as_deref().is_some_and(|status| status != "completed") {
        return;
    }
    if pinned.is_some_and(|scope| target::validate_scope_id(scope, "scope").is_err()) {
        return allow_with(host, "unlazy: installed hook has an invalid --scope value; not blocking.");
    }
    let Some(env) = env else {
        warn("gate-check hook stop: cannot read the working directory; not blocking");
        return;
    };
    let start = start_directory(env, payload.cwd.as_deref(), &payload.workspace_roots);
    if !start.is_dir() {
        warn(&format!("gate-check hook stop: {} is not a directory; not blocking", start.display()));
        return;
    }
    // An agent that moved into a subdirectory (a submodule, a folder with
    // a `gates/` of its own, the pipeline's state) is still held by the
    // repository's gates.
    let looking = target::Looking::for_scope(pinned.or(env.scope.as_deref()));
    let root = root::session_root(&start, env.home.as_deref(), looking);
    let session = payload.session.as_deref().unwrap_or("anonymous");

    let choice = choose(&root, pinned, env.scope.as_deref(), payload.session.as_deref());
    // The stop claims the work is done: by default its met gates are
    // judged by their proofs.
    let receipts = proof.then(|| StoreLocation::of_receipts(env));
    if payload.event.as_deref() == Some("SubagentStop") {
        return decide_subagent(host, &root, &choice, session, payload.agent_id.as_deref(), receipts.as_ref());
    }
    let scope = match &choice {
        Choice::Skip(Some(message)) => return allow_with(host, message),
        Choice::Skip(None) => return,
        Choice::Scope(scope) | Choice::OnlyPipeline(scope) => Some(scope.as_str()),
        Choice::Legacy | Choice::Untrusted => None,
    };
    // Judged beside the only pipeline: named in the hint, relative to the root.
    let beside = match &choice {
        Choice::OnlyPipeline(_) => target::root_ledgers(&root),
        _ => Vec::new(),
    };
    let root_ledgers: Vec<String> =
        beside.iter().map(|path| path.strip_prefix(&root).unwrap_or(path).to_string_lossy().into_owned()).collect();
    let key = state::session_key(session, scope);
    let (assessment, state_path) = match discover(&root, &choice, &beside) {
        Some(files) if files.is_empty() && !has_dispatch_state(&root, scope) => {
            state::clear_session(&root, &state::state_path(&root, scope), &key);
            return;
        }
        Some(files) => {
            let mut assessment = assess(&root, &files, receipts.as_ref());
            match crate::dispatch::aggregate(&root, scope) {
                Ok(waves) => assessment.add_waves(&waves),
                Err(_) => assessment.add_dispatch_error(),
            }
            (assessment, state::state_path(&root, scope))
        }
        None => {
            // A scope whose folder cannot be trusted cannot hold its own
            // state either; the session key keeps the scope apart.
            let mut assessment = Assessment::default();
            assessment.add_discovery_error();
            (assessment, state::state_path(&root, None))
        }
    };
    let subject = Subject { scope, leaf: None, root_ledgers: &root_ledgers };
    let judged = Judged { root: &root, state_path: &state_path, key: &key, subject };
    judged.reply(host, &assessment);
}

/// A subagent's stop: held only to the leaf the scope's dispatch waves
/// recorded as launched with its `agent_id`. With no scope, no handle, no
/// such leaf, or wave state that cannot be read, nothing holds it (the
/// driver's own stop still judges the whole scope).
fn decide_subagent(
    host: Host,
    root: &Path,
    choice: &Choice,
    session: &str,
    agent_id: Option<&str>,
    receipts: Option<&StoreLocation>,
) {
    let Some(agent_id) = agent_id else { return };
    // The chosen pipeline first, then every other: a host may give a
    // subagent a session of its own, which no pipeline is bound to, but
    // its handle names its leaf wherever the driver recorded it.
    let mut scopes = match choice {
        Choice::Scope(scope) | Choice::OnlyPipeline(scope) => vec![scope.clone()],
        Choice::Untrusted => return,
        Choice::Legacy | Choice::Skip(_) => Vec::new(),
    };
    let others: Vec<String> = target::list_scopes(root).into_iter().filter(|scope| !scopes.contains(scope)).collect();
    scopes.extend(others);
    let found = scopes.into_iter().find_map(|scope| {
        let leaf = crate::dispatch::leaf_launched_as(root, &scope, agent_id).ok()??;
        Some((scope, leaf))
    });
    let Some((scope, leaf)) = found else { return };
    let (scope, choice) = (scope.as_str(), &Choice::Scope(scope.clone()));
    let ledger = crate::layout::StateDir::new(root).leaf_ledger(scope, &leaf);
    let assessment = match discover(root, choice, &[]) {
        Some(files) if files.contains(&ledger) => assess(root, &[ledger], receipts),
        Some(_) => {
            let mut assessment = Assessment::default();
            assessment.add_missing(&ledger);
            assessment
        }
        None => {
            let mut assessment = Assessment::default();
            assessment.add_discovery_error();
            assessment
        }
    };
    // Its own counter: a subagent's blocks never spend the driver's.
    let key = state::session_key(&format!("{session}\0subagent\0{}", agent_id.trim()), Some(scope));
    let state_path = state::state_path(root, Some(scope));
    let subject = Subject { scope: Some(scope), leaf: Some(&leaf), root_ledgers: &[] };
    Judged { root, state_path: &state_path, key: &key, subject }.reply(host, &assessment);
}

/// One stop's assessment and where its loop-guard count is kept.
struct Judged<'a> {
    root: &'a Path,
    state_path: &'a Path,
    key: &'a str,
    subject: Subject<'a>,
}

impl Judged<'_> {
    /// Lets a complete assessment through (with a handoff note when items
    /// were abandoned); blocks an incomplete one until the loop guard
    /// releases it.
    fn reply(&self, host: Host, assessment: &Assessment) {
        let Judged { root, state_path, key, subject } = *self;
        if assessment.is_complete() {
            state::clear_session(root, state_path, key);
            if assessment.has_handoffs() {
                return allow_with(host, &assess::handoff_message(subject, assessment));
            }
            return;
        }
        let blocks = match state::record_block(root, state_path, key, &assessment.progress_hash()) {
            Ok(blocks) => blocks,
            // Unsafe scope input is repaired before the turn ends, even when no
            // loop-guard state can be kept for it.
            Err(_) if assessment.has_discovery_error() => {
                return block(host, &assess::block_reason(subject, assessment, 1, state::MAX_BLOCKS));
            }
            Err(error) => {
                return allow_with(
                    host,
                    &format!(
                        "unlazy: could not update the serialized hook state ({}); not blocking to avoid a trap.",
                        crate::terminal::safe(&error.to_string())
                    ),
                )
            }
        };
        if blocks > state::MAX_BLOCKS {
            return allow_with(host, &assess::release_message(subject, assessment, state::MAX_BLOCKS));
        }
        block(host, &assess::block_reason(subject, assessment, blocks, state::MAX_BLOCKS));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_json_escapes_everything() {
        let text = serde_json::to_string(&Host::Claude.block("a\"}\n")).unwrap();
        assert_eq!(text, r#"{"decision":"block","reason":"a\"}\n"}"#);
    }

    #[test]
    fn the_host_named_on_a_broken_command_line_is_found() {
        let words = |line: &str| line.split(' ').map(std::ffi::OsString::from).collect::<Vec<_>>();
        assert_eq!(named_host(&words("stop --agent cursor --bogus")), Some(Host::Cursor));
        assert_eq!(named_host(&words("stop --agent=gemini --bogus")), Some(Host::Gemini));
        assert_eq!(named_host(&words("stop --bogus")), None);
        assert_eq!(named_host(&words("stop --agent")), None);
        assert_eq!(named_host(&words("stop --agent nobody")), None);
        assert_eq!(named_host(&words("stop --agents cursor")), None);
    }
}
