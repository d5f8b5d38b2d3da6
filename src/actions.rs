//! The pipeline actions of the command line: `--list-scopes`, `--bind`,
//! `--log`, `--claim` and `--release`. Each one resolves a single scope the
//! way a run does and prints the Node tool's messages.

use std::path::{Path, PathBuf};

use crate::config::Environment;
use crate::error::Error;
use crate::exit::Exit;
use crate::layout::STATE_DIR;
use crate::lease::registry::{self, ClaimOutcome};
use crate::ledger;
use crate::pipeline;
use crate::target::{self, Looking, Mode, Root, Target};
use crate::terminal::{say, warn};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    ListScopes,
    Bind(String),
    Log(String),
    Claim,
    Release,
}

impl Action {
    pub fn flag(&self) -> &'static str {
        match self {
            Action::ListScopes => "--list-scopes",
            Action::Bind(_) => "--bind",
            Action::Log(_) => "--log",
            Action::Claim => "--claim",
            Action::Release => "--release",
        }
    }
}

#[derive(Debug, Clone)]
pub struct ActionOptions {
    pub action: Action,
    pub root: Option<PathBuf>,
    pub scope: Option<String>,
    pub leaf: Option<String>,
}

fn usage(message: impl Into<String>) -> Error {
    Error::usage(message)
}

/// The ledger's file name without `.md`, as in qualified ids.
fn stem(path: &Path) -> String {
    let qualified = ledger::qualify(path, "");
    qualified[..qualified.len() - 1].to_string()
}

pub fn execute(options: &ActionOptions, env: &Environment) -> Result<Exit, Error> {
    let located =
        Root::locate_directory(&env.cwd, env.home.as_deref(), options.root.as_deref(), Looking::ForPipelines)?;
    let root = located.path.clone();
    if options.action == Action::ListScopes {
        return Ok(list_scopes(&root));
    }
    if let Some(scope) = &options.scope {
        target::validate_scope_id(scope, "scope")?;
    }
    let target = match target::resolve(&root, &[], options.scope.as_deref().or(env.scope.as_deref())) {
        Ok(target) => target,
        // Leases can outlive a deleted or broken pipeline folder; an explicit
        // scope must still be able to release them.
        Err(_) if options.action == Action::Release && options.scope.is_some() => {
            Target { mode: Mode::Scope, scope: options.scope.clone(), files: Vec::new() }
        }
        Err(error) => return Err(error.into()),
    };
    let flag = options.action.flag();
    let Some(scope) = target.scope.clone() else {
        return Err(usage(format!("{flag} needs --scope ID or exactly one discoverable pipeline")));
    };
    match &options.action {
        Action::Log(text) => {
            if text.trim().is_empty() {
                return Err(usage("--log needs non-blank text"));
            }
            let path = pipeline::append_status(&root, &scope, text)
                .map_err(|source| Error::Pipeline { doing: "append status", source })?;
            say(&format!("appended to {}", path.display()));
            Ok(Exit::Met)
        }
        Action::Bind(session) => {
            let session_id = session.trim();
            if session_id.is_empty() {
                return Err(usage("--bind needs a non-blank session id"));
            }
            if session_id.chars().any(crate::terminal::is_unsafe) {
                return Err(usage("--bind needs a single-line session id without control characters"));
            }
            pipeline::bind_session(&root, &scope, session_id)
                .map_err(|source| Error::Pipeline { doing: "bind session", source })?;
            say(&format!("bound session {session} to scope {scope}"));
            Ok(Exit::Met)
        }
        Action::Claim | Action::Release => leases(options, &located, &target, &scope),
        Action::ListScopes => Ok(list_scopes(&root)),
    }
}

fn list_scopes(root: &Path) -> Exit {
    let scopes = target::list_scopes(root);
    if scopes.is_empty() {
        say(&format!("(no pipelines under {STATE_DIR}/)"));
    }
    for scope in scopes {
        say(&scope);
    }
    Exit::Met
}

fn leases(options: &ActionOptions, located: &Root, target: &Target, scope: &str) -> Result<Exit, Error> {
    let root = located.path.as_path();
    if target.files.is_empty() && options.action == Action::Claim {
        return Err(usage(located.no_ledgers_message()));
    }
    let mut texts = Vec::new();
    for file in &target.files {
        texts.push(ledger::file::read(file).map_err(|source| Error::GateFile { path: file.clone(), source })?);
    }
    let stems: Vec<String> = target.files.iter().map(|f| stem(f)).collect();
    if let Some(leaf) = &options.leaf {
        target::validate_scope_id(leaf, "leaf")?;
        if !stems.is_empty() && !stems.contains(leaf) {
            return Err(usage(format!("unknown --leaf {leaf} (have: {})", stems.join(", "))));
        }
    }
    if options.action == Action::Release {
        let leaf = options.leaf.as_deref();
        let count =
            registry::release(root, scope, leaf).map_err(|source| Error::Lease { doing: "release leases", source })?;
        let who = leaf.map(|leaf| format!("{scope}/{leaf}")).unwrap_or_else(|| scope.to_string());
        say(&format!("released {count} lease(s) for {who}"));
        return Ok(Exit::Met);
    }

    let leaf = match (&options.leaf, stems.as_slice()) {
        (Some(leaf), _) => leaf.clone(),
        (None, [only]) => only.clone(),
        (None, _) => return Err(usage("--claim needs --leaf NAME when a scope has several gate files")),
    };
    // A file stem is only a valid lease identity if it is a valid id.
    target::validate_scope_id(&leaf, "leaf")?;
    let Some(index) = stems.iter().position(|s| *s == leaf) else {
        return Err(usage(format!("unknown --leaf {leaf} (have: {})", stems.join(", "))));
    };
    let file = &target.files[index];
    let parsed = ledger::parse(&texts[index]);
    let shown = file.display().to_string();
    for warning in &parsed.warnings {
        warn(&warning.at(&shown).warning_line());
    }
    if !parsed.errors.is_empty() {
        return Err(Error::Invalid(parsed.errors.iter().map(|e| e.at(&shown)).collect()));
    }
    let owns = parsed.document.owns;
    if owns.is_empty() {
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        return Err(usage(format!("{name} declares no OWNS paths")));
    }
    match registry::claim(root, scope, &leaf, &owns).map_err(|source| Error::Lease { doing: "claim leases", source })? {
        ClaimOutcome::Claimed(globs) => {
            say(&format!("CLAIMED {} path(s) for {scope}/{leaf}: {}", globs.len(), globs.join(", ")));
            Ok(Exit::Met)
        }
        ClaimOutcome::Refused(conflicts) => {
            for conflict in &conflicts {
                say(&conflict.describe());
            }
            say(&format!("CLAIM REFUSED ({} conflict(s))", conflicts.len()));
            Ok(Exit::LeaseConflict)
        }
    }
}
