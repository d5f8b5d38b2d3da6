//! `gate-check hook stop`: the Claude Code Stop hook.
//!
//! It reads the hook's JSON on stdin, finds the session's ledgers, and
//! prints `{"decision":"block","reason":...}` while any gate is unmet or
//! stale or any ledger is unparseable. It never executes a check, resolves
//! a shell or reads approvals: gate states come from `evidence::gate_state`
//! alone. It always exits 0; a stop it lets through prints nothing, or a
//! `{"systemMessage":...}` note when there is something to say.
//!
//! The semantic state it blocked on is remembered per session (see
//! `state`); after `state::MAX_BLOCKS` consecutive blocks without progress
//! the next stop is let through, so a stuck agent is never trapped.
//!
//! Inputs are combined in an `Assessment`: the ledgers of the chosen
//! target and, for a scope, its dispatch waves (an incomplete wave blocks,
//! an abandoned one is a handoff, unreadable wave state blocks).

pub mod assess;
pub mod state;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use serde::Serialize;

use crate::config::Environment;
use crate::exit::Exit;
use crate::layout::STATE_DIR;
use crate::ledger::{self, file::LedgerFileError};
use crate::target;
use crate::terminal::{say, warn};
use assess::Assessment;

/// Hook input larger than this is not a Claude Code payload.
const MAX_PAYLOAD_BYTES: u64 = 1024 * 1024;
const MAX_SESSION_FILE_BYTES: u64 = 4096;
/// How long the hook waits for its input to end. Claude Code writes the
/// payload and closes stdin at once; a caller that never closes it must not
/// hang the turn.
const INPUT_DEADLINE: Duration = Duration::from_secs(5);

#[derive(Serialize)]
struct Block<'a> {
    decision: &'static str,
    reason: &'a str,
}

#[derive(Serialize)]
struct Note<'a> {
    #[serde(rename = "systemMessage")]
    system_message: &'a str,
}

fn print_json(value: &impl Serialize) {
    say(&serde_json::to_string(value).unwrap_or_default());
}

/// Lets the stop through with a note for the user.
fn allow_with(message: &str) {
    print_json(&Note { system_message: message });
}

/// A hook that cannot do its job never blocks, but says why: on stderr,
/// and as a `systemMessage`, which Claude Code and Codex show the person
/// (it is part of Codex's Stop output schema).
fn not_blocking(problem: &str, what: &str) {
    warn(&format!("{problem}; not blocking"));
    allow_with(&format!("unlazy: {what}: {problem}; not blocking."));
}

/// The installed hook's command line does not parse (`problem` says how):
/// the stop goes through, and the person learns the entry needs fixing.
pub(crate) fn misconfigured(problem: &str) {
    not_blocking(
        &format!("gate-check hook: {problem}"),
        "the installed hook command is broken (reinstall it with gate-check install-hooks)",
    );
}

/// The fields of the hook input the hook uses.
#[derive(Debug)]
struct Payload {
    session: Option<String>,
    cwd: Option<String>,
    /// `hook_event_name`, when the host names the event.
    event: Option<String>,
}

/// The events at which an agent stops, the only ones a reply can block:
/// Claude Code's and Codex's `Stop` and `SubagentStop`, Gemini CLI's
/// `AfterAgent` and Cursor's `stop`. A payload that names no event is a
/// stop, as the Node hook reads every payload.
fn is_stop_event(event: Option<&str>) -> bool {
    event.is_none_or(|event| matches!(event, "Stop" | "SubagentStop" | "AfterAgent" | "stop"))
}

/// All of stdin (at most `MAX_PAYLOAD_BYTES + 1` bytes), or an error when
/// it is not closed within `deadline`. The reading thread is left blocked
/// then; the process exits without waiting for it.
/// Why the hook input could not be used.
#[derive(Debug, thiserror::Error)]
enum InputError {
    #[error("cannot read the hook input: {0}")]
    Read(#[source] std::io::Error),
    #[error("the hook input was not closed within {} s", .0.as_secs())]
    NotClosed(Duration),
    #[error("hook input exceeds {MAX_PAYLOAD_BYTES} bytes")]
    TooLarge,
    #[error("hook input is not UTF-8")]
    NotUtf8,
    #[error("hook input is not JSON ({0})")]
    NotJson(#[source] serde_json::Error),
    #[error("hook input is not a JSON object")]
    NotObject,
    #[error("hook input field {0} is not a string")]
    NotText(&'static str),
}

fn read_input(deadline: Duration) -> Result<Vec<u8>, InputError> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let read = std::io::stdin().take(MAX_PAYLOAD_BYTES + 1).read_to_end(&mut bytes).map(|_| bytes);
        let _ = sender.send(read);
    });
    match receiver.recv_timeout(deadline) {
        Ok(read) => read.map_err(InputError::Read),
        Err(_) => Err(InputError::NotClosed(deadline)),
    }
}

fn read_payload() -> Result<Payload, InputError> {
    let bytes = read_input(INPUT_DEADLINE)?;
    if bytes.len() as u64 > MAX_PAYLOAD_BYTES {
        return Err(InputError::TooLarge);
    }
    let text = String::from_utf8(bytes).map_err(|_| InputError::NotUtf8)?;
    if text.trim().is_empty() {
        return Ok(Payload { session: None, cwd: None, event: None });
    }
    let value: serde_json::Value = serde_json::from_str(&text).map_err(InputError::NotJson)?;
    let object = value.as_object().ok_or(InputError::NotObject)?;
    let text_field = |name: &'static str| -> Result<Option<String>, InputError> {
        match object.get(name) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(text)) => Ok(Some(text.clone()).filter(|t| !t.is_empty())),
            Some(_) => Err(InputError::NotText(name)),
        }
    };
    let session = match text_field("session_id")? {
        Some(session) => Some(session),
        None => text_field("sessionId")?,
    };
    Ok(Payload { session, cwd: text_field("cwd")?, event: text_field("hook_event_name")? })
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
    Scope(String),
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
        [only] => Choice::Scope(only.to_string()),
        // Every pipeline belongs to another session: nothing here is ours.
        [] => Choice::Skip(None),
        several => Choice::Skip(Some(format!(
            "unlazy: {} pipelines under {STATE_DIR}/ ({}) and none bound to this session; not blocking.",
            several.len(),
            several.join(", ")
        ))),
    }
}

/// The ledgers of the choice, or `None` when they cannot be listed (an
/// untrusted pipeline, an unusable scope or gate directory).
fn discover(root: &Path, choice: &Choice) -> Option<Vec<PathBuf>> {
    let scope = match choice {
        Choice::Scope(scope) => Some(scope.as_str()),
        Choice::Untrusted => return None,
        _ => None,
    };
    let mut files = target::resolve(root, &[], scope).ok()?.files;
    files.sort();
    Some(files)
}

fn assess(files: &[PathBuf]) -> Assessment {
    let mut assessment = Assessment::default();
    for file in files {
        match ledger::file::read(file) {
            Err(LedgerFileError::InvalidUtf8(_, line)) => assessment.add_invalid(file, Some(line)),
            Err(_) => assessment.add_unreadable(file),
            Ok(text) => {
                let outcome = ledger::parse(&text);
                match outcome.errors.first() {
                    Some(error) => assessment.add_invalid(file, error.line),
                    None => assessment.add_document(file, &outcome.document),
                }
            }
        }
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

/// Runs the Stop hook. It always exits 0: the decision is in the output.
/// Without an environment (the working directory is unreadable) it lets
/// the stop through, after reading the input as always.
pub fn stop(env: Option<&Environment>, pinned: Option<&str>) -> Exit {
    decide(env, pinned);
    Exit::Met
}

fn decide(env: Option<&Environment>, pinned: Option<&str>) {
    let payload = match read_payload() {
        Ok(payload) => payload,
        Err(message) => return not_blocking(&format!("gate-check hook stop: {message}"), "the hook input is unusable"),
    };
    // Installed on another event (by hand, or a copied entry), the hook has
    // nothing to decide: an empty reply lets the host go on.
    if !is_stop_event(payload.event.as_deref()) {
        return;
    }
    if pinned.is_some_and(|scope| target::validate_scope_id(scope, "scope").is_err()) {
        return allow_with("unlazy: installed hook has an invalid --scope value; not blocking.");
    }
    let Some(env) = env else {
        warn("gate-check hook stop: cannot read the working directory; not blocking");
        return;
    };
    let start = crate::paths::resolve(&env.cwd, Path::new(payload.cwd.as_deref().unwrap_or(".")));
    if !start.is_dir() {
        warn(&format!("gate-check hook stop: {} is not a directory; not blocking", start.display()));
        return;
    }
    // An agent that moved into a subdirectory is still held by the
    // repository's gates.
    let looking = target::Looking::for_scope(pinned.or(env.scope.as_deref()));
    let root = target::Root::locate(&start, env.home.as_deref(), None, looking).path;
    let session = payload.session.as_deref().unwrap_or("anonymous");

    let choice = choose(&root, pinned, env.scope.as_deref(), payload.session.as_deref());
    let scope = match &choice {
        Choice::Skip(Some(message)) => return allow_with(message),
        Choice::Skip(None) => return,
        Choice::Scope(scope) => Some(scope.as_str()),
        Choice::Legacy | Choice::Untrusted => None,
    };
    let key = state::session_key(session, scope);
    let (assessment, state_path) = match discover(&root, &choice) {
        Some(files) if files.is_empty() && !has_dispatch_state(&root, scope) => {
            state::clear_session(&root, &state::state_path(&root, scope), &key);
            return;
        }
        Some(files) => {
            let mut assessment = assess(&files);
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

    if assessment.is_complete() {
        state::clear_session(&root, &state_path, &key);
        if assessment.has_handoffs() {
            return allow_with(&assess::handoff_message(scope, &assessment));
        }
        return;
    }
    let blocks = match state::record_block(&root, &state_path, &key, &assessment.progress_hash()) {
        Ok(blocks) => blocks,
        // Unsafe scope input is repaired before the turn ends, even when no
        // loop-guard state can be kept for it.
        Err(_) if assessment.has_discovery_error() => {
            let reason = assess::block_reason(scope, &assessment, 1, state::MAX_BLOCKS);
            print_json(&Block { decision: "block", reason: &reason });
            return;
        }
        Err(error) => {
            return allow_with(&format!(
                "unlazy: could not update the serialized hook state ({}); not blocking to avoid a trap.",
                crate::terminal::safe(&error.to_string())
            ))
        }
    };
    if blocks > state::MAX_BLOCKS {
        return allow_with(&assess::release_message(scope, &assessment, state::MAX_BLOCKS));
    }
    let reason = assess::block_reason(scope, &assessment, blocks, state::MAX_BLOCKS);
    print_json(&Block { decision: "block", reason: &reason });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_json_escapes_everything() {
        let text = serde_json::to_string(&Block { decision: "block", reason: "a\"}\n" }).unwrap();
        assert_eq!(text, r#"{"decision":"block","reason":"a\"}\n"}"#);
    }
}
