//! `gate-check dispatch open|start|seal|return|abandon|status`: records and
//! checks launch waves. Transitions exit 0 on success and 2 on any refusal;
//! `status` exits 0 when every wave shown is complete and 1 otherwise.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use super::error::DispatchError;
use super::model::{escape_bounded, Action, State, Wave, WaveState};
use super::store;
use crate::config::Environment;
use crate::exit::Exit;
use crate::target::{validate_scope_id, Looking, Root};
use crate::terminal::{say, warn};

/// Bytes of untrusted text (messages, reasons) one output line may carry.
const MAX_SHOWN_BYTES: usize = 500;

const AFTER_HELP: &str = "\
State lives in .unlazy/<scope>/dispatch.json; every transition appends an
audit line to .unlazy/<scope>/status.log. Seal only after every leaf has a
start; return only after seal. If a partial launch cannot recover, abandon the
wave with a reason; never invent a handle or delete state.

exit codes: 0 transition recorded / every wave complete; 1 wave incomplete or
            abandoned (HANDOFF REQUIRED); 2 usage, refused transition or
            invalid state.";

#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP, subcommand_required = true, arg_required_else_help = true)]
pub struct DispatchArgs {
    #[command(subcommand)]
    verb: Verb,
}

#[derive(Debug, Args)]
struct Place {
    /// Pipeline scope (.unlazy/ID)
    #[arg(long, value_name = "ID")]
    scope: String,
    /// Repository/pipeline root (default: the nearest directory upward with .unlazy/ or .git)
    #[arg(long, value_name = "PATH")]
    root: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum Verb {
    /// Open a launch wave declaring every leaf it will launch
    Open {
        #[command(flatten)]
        place: Place,
        #[arg(long, value_name = "ID")]
        wave: String,
        /// A leaf of the wave; repeat for each leaf
        #[arg(long = "leaf", value_name = "ID", required = true)]
        leaves: Vec<String>,
    },
    /// Record that a leaf was launched, with the host's agent handle
    Start {
        #[command(flatten)]
        place: Place,
        #[arg(long, value_name = "ID")]
        wave: String,
        #[arg(long, value_name = "ID")]
        leaf: String,
        /// The opaque, nonsecret handle the host returned for the launch
        #[arg(long, value_name = "OPAQUE_ID", allow_hyphen_values = true)]
        handle: String,
    },
    /// Close the launch phase; refused until every leaf has started
    Seal {
        #[command(flatten)]
        place: Place,
        #[arg(long, value_name = "ID")]
        wave: String,
    },
    /// Record that a launched leaf finished; refused before seal
    Return {
        #[command(flatten)]
        place: Place,
        #[arg(long, value_name = "ID")]
        wave: String,
        #[arg(long, value_name = "ID")]
        leaf: String,
    },
    /// End an open or sealed wave that cannot recover (terminal, audited)
    Abandon {
        #[command(flatten)]
        place: Place,
        #[arg(long, value_name = "ID")]
        wave: String,
        /// Why the wave cannot finish (nonblank, at most 500 characters)
        #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
        reason: String,
    },
    /// Print one wave (or every wave of the scope) and exit 0 only if complete
    Status {
        #[command(flatten)]
        place: Place,
        #[arg(long, value_name = "ID")]
        wave: Option<String>,
    },
}

/// The one line a failed verb prints: `gate-check dispatch: <message>`,
/// bounded, since messages carry untrusted values.
pub fn error_line(error: &DispatchError) -> String {
    format!("gate-check dispatch: {}", escape_bounded(&error.to_string(), MAX_SHOWN_BYTES))
}

/// `OPEN w1 (1/2 started, 0/2 returned)`, `COMPLETE w1 (2/2 returned)` or
/// `ABANDONED w1 (...): reason`, as the Node tool prints a wave.
pub fn describe(id: &str, wave: &Wave) -> String {
    let total = wave.leaves.len();
    let (started, returned) = (wave.started_count(), wave.returned_count());
    match wave.state {
        WaveState::Complete => format!("COMPLETE {id} ({returned}/{total} returned)"),
        state => {
            let line = format!(
                "{} {id} ({started}/{total} started, {returned}/{total} returned)",
                state.as_str().to_ascii_uppercase()
            );
            match &wave.reason {
                Some(reason) => format!("{line}: {}", escape_bounded(reason, MAX_SHOWN_BYTES)),
                None => line,
            }
        }
    }
}

/// `--root`, else the nearest directory upward holding `.unlazy/` or `.git`.
fn resolve_root(env: &Environment, root: Option<&Path>) -> Result<PathBuf, DispatchError> {
    Ok(Root::locate_directory(&env.cwd, env.home.as_deref(), root, Looking::ForPipelines)?.path)
}

/// Refuses an option value that is really the next option, as the Node tool does.
fn value_of<'a>(option: &str, value: &'a str) -> Result<&'a str, DispatchError> {
    if value.starts_with("--") {
        Err(DispatchError::Usage(format!("{option} requires a value")))
    } else {
        Ok(value)
    }
}

fn status(root: &Path, scope: &str, wave: Option<&str>) -> Result<Exit, DispatchError> {
    let state: State = store::read(root, scope)?;
    let shown: Vec<(&str, &Wave)> = match wave {
        Some(id) => {
            validate_scope_id(id, "wave")?;
            vec![(id, state.wave(id).ok_or_else(|| DispatchError::Refused(format!("unknown wave {id}")))?)]
        }
        None => state.sorted(),
    };
    if shown.is_empty() {
        say(&format!("(no dispatch waves in scope {scope})"));
        return Ok(Exit::Met);
    }
    for (id, wave) in &shown {
        say(&describe(id, wave));
    }
    let abandoned: Vec<String> =
        shown.iter().filter(|(_, w)| w.state == WaveState::Abandoned).map(|(id, _)| format!("dispatch:{id}")).collect();
    if !abandoned.is_empty() {
        say(&format!("HANDOFF REQUIRED: {} abandoned wave(s): {}", abandoned.len(), abandoned.join(", ")));
    }
    let complete = shown.iter().all(|(_, w)| w.state == WaveState::Complete);
    Ok(if complete { Exit::Met } else { Exit::Unmet })
}

fn transition(root: &Path, scope: &str, wave: &str, action: Action) -> Result<Exit, DispatchError> {
    let committed = store::update(root, scope, wave, &action)?;
    if let Some(warning) = &committed.audit_warning {
        warn(&format!("gate-check dispatch: warning: {}", escape_bounded(warning, MAX_SHOWN_BYTES)));
    }
    let wave_state = &committed.wave;
    let total = wave_state.leaves.len();
    let (started, returned) = (wave_state.started_count(), wave_state.returned_count());
    let line = match &action {
        Action::Open { .. } => format!("OPEN {wave} (0/{total} started, 0/{total} returned)"),
        Action::Start { leaf, .. } => format!("STARTED {wave} {leaf} ({started}/{total} started)"),
        Action::Seal => format!("SEALED {wave} ({started}/{total} started)"),
        Action::Return { .. } if wave_state.state == WaveState::Complete => {
            format!("COMPLETE {wave} ({returned}/{total} returned)")
        }
        Action::Return { leaf } => format!("RETURNED {wave} {leaf} ({returned}/{total} returned)"),
        Action::Abandon { .. } => describe(wave, wave_state),
    };
    say(&line);
    Ok(Exit::Met)
}

fn dispatch(env: &Environment, verb: Verb) -> Result<Exit, DispatchError> {
    let (place, wave, action) = match verb {
        Verb::Status { place, wave } => {
            let root = resolve_root(env, place.root.as_deref())?;
            validate_scope_id(&place.scope, "scope")?;
            return status(&root, &place.scope, wave.as_deref());
        }
        Verb::Open { place, wave, leaves } => (place, wave, Action::Open { leaves }),
        Verb::Start { place, wave, leaf, handle } => {
            let handle = value_of("--handle", &handle)?.to_string();
            (place, wave, Action::Start { leaf, handle })
        }
        Verb::Seal { place, wave } => (place, wave, Action::Seal),
        Verb::Return { place, wave, leaf } => (place, wave, Action::Return { leaf }),
        Verb::Abandon { place, wave, reason } => {
            if crate::ledger::text::js_trim(value_of("--reason", &reason)?).is_empty() {
                return Err(DispatchError::Usage("abandon requires --reason".into()));
            }
            (place, wave, Action::Abandon { reason })
        }
    };
    let root = resolve_root(env, place.root.as_deref())?;
    validate_scope_id(&place.scope, "scope")?;
    transition(&root, &place.scope, &wave, action)
}

/// Runs one dispatch verb and returns its exit status.
pub fn run(args: DispatchArgs, env: &Environment) -> Result<Exit, DispatchError> {
    dispatch(env, args.verb)
}
