//! `gate-check tree`: a picture of a running pipeline. It reads the
//! pipeline's `PLAN.md` (its `## Tree` and `## Leaf dispatch table`), the
//! ledgers `--status` would read, the leases of its leaves and its dispatch
//! waves, and draws the tree with live states and drift warnings. It never
//! executes, approves or writes anything.
//!
//! `plan` parses the plan, `picture` assembles the view and its drift,
//! `render` draws it; this module only reads.

pub mod picture;
pub mod plan;
pub mod render;

use std::path::{Path, PathBuf};

use crate::config::{ColorWhen, Environment};
use crate::evidence::{self, GateState};
use crate::exit::Exit;
use crate::layout::StateDir;
use crate::target::{self, Looking, Root, TargetError};
use picture::{Gathered, LedgerView, Picture, WaveView};

/// `tree --format`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TreeFormat {
    /// The tree drawn for a terminal, then the drift and a verdict line
    #[default]
    Human,
    /// One JSON document (references/tree.schema.json)
    Json,
    /// A job summary: the flowchart and a table (for $GITHUB_STEP_SUMMARY)
    Markdown,
    /// A mermaid flowchart, each node's state as its class
    Mermaid,
}

/// `gate-check tree`, as asked.
#[derive(Debug, Clone)]
pub struct TreeConfig {
    pub scope: Option<String>,
    pub format: TreeFormat,
    pub color: ColorWhen,
}

/// Why no picture could be drawn.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error("no gate files found under {}", .0.display())]
    NoLedgers(PathBuf),
    /// A plan section that cannot be read (printed as `path:line: error:`).
    #[error("{}:{line}: {message}", .path.display())]
    Plan { path: PathBuf, line: usize, message: String },
    #[error("cannot read {}: {source}", .path.display())]
    Read { path: PathBuf, source: crate::ledger::file::LedgerFileError },
    #[error(transparent)]
    Waves(#[from] crate::dispatch::WavesError),
    #[error("cannot read the lease of {leaf}: {source}")]
    Lease { leaf: String, source: crate::lease::registry::RegistryError },
}

/// One ledger's live view.
fn view(path: &Path) -> LedgerView {
    let Ok(text) = crate::ledger::file::read(path) else {
        return LedgerView::Invalid { line: None };
    };
    let outcome = crate::ledger::parse(&text);
    let shown = path.display().to_string();
    for warning in &outcome.warnings {
        crate::terminal::warn(&warning.at(&shown).warning_line());
    }
    if let Some(error) = outcome.errors.first() {
        return LedgerView::Invalid { line: error.line };
    }
    let document = outcome.document;
    let (mut met, mut unmet, mut stale, mut abandoned) = (0, Vec::new(), 0, Vec::new());
    for gate in &document.gates {
        match evidence::gate_state(gate, document.is_abandoned(gate.id())) {
            GateState::Met => met += 1,
            GateState::Abandoned => abandoned.push(gate.id().to_string()),
            state => {
                stale += usize::from(state == GateState::StaleUnmet);
                unmet.push(gate.id().to_string());
            }
        }
    }
    LedgerView::Read {
        met,
        total: document.gates.len(),
        unmet,
        stale,
        abandoned,
        owns: document.owns.clone(),
        heading: heading(&document),
    }
}

/// The ledger's own title: its first `# ` heading above the first gate,
/// without the template's `Gates:` label.
fn heading(document: &crate::ledger::Document) -> Option<String> {
    let first_gate = document.gates.first().map_or(usize::MAX, |gate| gate.line());
    let line = document.source().lines().take(first_gate).find_map(|line| line.strip_prefix("# "))?.trim();
    let title = line.strip_prefix("Gates:").unwrap_or(line).trim();
    (!title.is_empty()).then(|| title.to_string())
}

/// `path` relative to `base`, with `/`.
fn relative(base: &Path, path: &Path) -> String {
    path.strip_prefix(base).unwrap_or(path).to_string_lossy().replace('\\', "/")
}

/// Whether the locale asks for UTF-8 (the first of LC_ALL, LC_CTYPE, LANG
/// that is set decides).
fn utf8_locale(env: &Environment) -> bool {
    let value = |name: &str| {
        env.variables.iter().find(|(key, value)| key == name && !value.is_empty()).map(|(_, value)| value.clone())
    };
    let locale = value("LC_ALL").or_else(|| value("LC_CTYPE")).or_else(|| value("LANG")).unwrap_or_default();
    let locale = locale.to_string_lossy().to_ascii_lowercase();
    locale.contains("utf-8") || locale.contains("utf8")
}

/// Gathers, draws and prints the picture; exit 0 only when every node is
/// met and nothing drifts.
pub fn run(env: &Environment, config: &TreeConfig) -> Result<Exit, TreeError> {
    let scope = config.scope.clone().or_else(|| env.scope.clone());
    let looking = Looking::for_scope(scope.as_deref());
    let root = Root::locate(&env.cwd, env.home.as_deref(), None, looking).path;
    let found = target::resolve(&root, &[], scope.as_deref())?;
    let base = match &found.scope {
        Some(scope) => StateDir::new(&root).scope(scope),
        None => root.clone(),
    };
    let mut gathered = Gathered::default();
    for file in &found.files {
        let name = relative(&base, file);
        gathered.present.insert(name.clone());
        gathered.ledgers.insert(name, view(file));
    }
    let plan_path = base.join("PLAN.md");
    let plan = match (&found.scope, std::fs::symlink_metadata(&plan_path).is_ok()) {
        (Some(_), true) => {
            let text = crate::ledger::file::read(&plan_path)
                .map_err(|source| TreeError::Read { path: plan_path.clone(), source })?;
            plan::parse(&text).map_err(|problem| TreeError::Plan {
                path: plan_path.clone(),
                line: problem.line,
                message: problem.message,
            })?
        }
        _ => None,
    };
    if plan.is_none() && found.files.is_empty() {
        return Err(TreeError::NoLedgers(base));
    }
    let picture = match (&plan, &found.scope) {
        (Some(plan), Some(scope)) => {
            gather_for_plan(&root, &base, scope, plan, &mut gathered)?;
            picture::with_plan(Some(scope.clone()), relative(&root, &plan_path), plan, &gathered)
        }
        _ => picture::flat(found.scope.clone(), &gathered),
    };
    print(&picture, config, env);
    Ok(if picture.ok { Exit::Met } else { Exit::Unmet })
}

/// The plan's ledgers outside the pipeline's discovered set, the leases of
/// its leaves and its dispatch waves.
fn gather_for_plan(
    root: &Path,
    base: &Path,
    scope: &str,
    plan: &plan::Plan,
    gathered: &mut Gathered,
) -> Result<(), TreeError> {
    for node in &plan.nodes {
        if !gathered.ledgers.contains_key(&node.ledger) {
            let path = base.join(&node.ledger);
            if std::fs::symlink_metadata(&path).is_ok() {
                gathered.ledgers.insert(node.ledger.clone(), view(&path));
            }
        }
        let leaf = plan::leaf_name(&node.ledger);
        if target::validate_scope_id(leaf, "leaf").is_ok() {
            let lease = crate::lease::registry::held(root, scope, leaf)
                .map_err(|source| TreeError::Lease { leaf: leaf.to_string(), source })?;
            // A lease is held until released; the pid it records is the
            // claiming command's, long exited, so it names no holder.
            if lease.is_some() {
                gathered.leases.insert(leaf.to_string(), "held".to_string());
            }
        }
    }
    let state = crate::dispatch::waves(root, scope)?;
    for (id, wave) in &state.waves {
        for leaf in &wave.leaves {
            let view = WaveView {
                id: id.clone(),
                state: wave.state.as_str().to_string(),
                started: wave.started.iter().any(|(started, _)| started == leaf),
                returned: wave.returned.iter().any(|(returned, _)| returned == leaf),
            };
            // Waves are kept in the order they were opened: the last wins.
            gathered.waves.insert(leaf.clone(), view);
        }
    }
    Ok(())
}

fn print(picture: &Picture, config: &TreeConfig, env: &Environment) {
    let text = match config.format {
        TreeFormat::Human => {
            let color = env.terminal.color(config.color, false);
            let unicode = config.color != ColorWhen::Never && utf8_locale(env);
            render::human(picture, render::Drawing { unicode, color })
        }
        TreeFormat::Json => render::json(picture),
        TreeFormat::Markdown => render::markdown(picture),
        TreeFormat::Mermaid => render::mermaid(picture),
    };
    crate::terminal::emit_lines(&text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_use_slashes() {
        let base = Path::new("/r/.unlazy/api");
        assert_eq!(relative(base, Path::new("/r/.unlazy/api/gates/leaf-1.md")), "gates/leaf-1.md");
    }
}
