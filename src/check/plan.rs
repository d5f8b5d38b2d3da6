//! Before anything runs: resolve the root and the ledgers, build the
//! execution context `--status` never needs, and decide which gates must
//! be checked, each with its exact approval oracle.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use js_regex::Expectation;

use super::events::{Event, Reporter, RunLine};
use crate::approval::store::{Store, StoreLocation};
use crate::approval::Oracle;
use crate::config::Environment;
use crate::diagnostic::Diagnostic;
use crate::error::Error;
use crate::evidence::{self, GateState};
use crate::ledger::text::{utf16_len, utf16_prefix};
use crate::ledger::{self, qualify, Document, Gate};
use crate::report::record::SandboxRecord;
use crate::runner::{ChildEnvironment, Confinement, Protected, SandboxError, WriteRoot};
use crate::target::{self, Mode, Target};
use crate::{paths, shell};

use super::CheckConfig;

const PATH_TRANSCRIPT_CHARS: usize = 800;

pub struct Ledger {
    pub path: PathBuf,
    /// The path as text, as bound into approval identities.
    pub text_path: String,
    pub document: Document,
    /// The parser's warnings, reported each time the ledger is read.
    pub warnings: Vec<ledger::ParseWarning>,
}

/// The execution context that `--status` never builds.
pub struct Runtime {
    /// The shell to spawn, absolute: a relative PATH entry would otherwise
    /// be looked up from each check's directory.
    pub shell: PathBuf,
    /// What every check inherits: the process environment.
    pub child_environment: ChildEnvironment,
    pub shell_text: String,
    pub path_var: String,
    pub path_summary: String,
    pub path_transcript: String,
    pub store: Store,
    pub timeout_secs: u64,
    /// `--sandbox`: the confinement every check runs in.
    pub sandbox: Option<Sandbox>,
}

/// How a `--sandbox` run confines its checks.
pub struct Sandbox {
    pub confinement: Confinement,
    /// The one tree each ledger's checks may write to, by ledger index:
    /// the ledger's repository, where its state and write-back live too.
    pub fences: Vec<WriteRoot>,
    /// What the run reports of it.
    pub record: SandboxRecord,
}

impl Sandbox {
    /// Confines runs to `fences` (by ledger index), once a whole
    /// confinement was put up on the first: what the confined runs
    /// inherit (the environment without its credential variables, but
    /// for `keep_env`), and the sandbox. Confined or not at all: nothing
    /// runs when the probe fails.
    pub fn confine(
        fences: Vec<WriteRoot>,
        keep_env: &[String],
        env: &Environment,
    ) -> Result<(ChildEnvironment, Sandbox), SandboxError> {
        let mut writable: Vec<&WriteRoot> = Vec::new();
        for fence in &fences {
            if !writable.contains(&fence) {
                writable.push(fence);
            }
        }
        let probed = writable
            .first()
            .ok_or_else(|| SandboxError::Unavailable("there is no ledger to confine checks to".into()))?;
        let confinement = Confinement::prepare(probed)?;
        let (inherited, withheld) = crate::credentials::withhold(&env.variables, keep_env);
        let record = SandboxRecord {
            landlock_abi: confinement.landlock_abi(),
            writable: writable.iter().map(|fence| fence.path().display().to_string()).collect(),
            network: false,
            withheld_variables: withheld,
        };
        Ok((ChildEnvironment::new(&inherited), Sandbox { confinement, fences, record }))
    }
}

pub struct Task {
    pub ledger: usize,
    pub gate: Gate,
    pub qualified: String,
    pub cwd: PathBuf,
    pub starting_state: GateState,
    pub digest: String,
    pub oracle: Oracle,
    /// The gate's EXPECT, shared by every task with the same EXPECT text so
    /// that a pattern's engine is built once per run.
    pub expectation: Option<Arc<Expectation>>,
    /// What its receipt will rest on when it passes, once bound to the tree
    /// the run read before any check started (see `check::proof`).
    pub proof: Option<ProofBasis>,
}

/// The tree a check runs on, as its evidence and receipt name it.
#[derive(Debug, Clone)]
pub struct ProofBasis {
    /// The digest of the tree within the gate's inputs.
    pub tree: String,
    /// The run's ledgers under the root, which the tree leaves out.
    pub excluded: Arc<[String]>,
}

impl Task {
    /// What this check's RUN line shows.
    pub fn run_line<'a>(&'a self, runtime: &'a Runtime) -> RunLine<'a> {
        RunLine {
            qualified: &self.qualified,
            shell: &runtime.shell_text,
            cwd: &self.oracle.cwd,
            path_transcript: &runtime.path_transcript,
        }
    }
}

/// What a run resolves before deciding anything about gates.
pub struct Setup {
    pub root: PathBuf,
    pub default_cwd: PathBuf,
    pub target: Target,
    pub ledgers: Vec<Ledger>,
    /// `--gate`: the only gates this run judges.
    pub selection: Option<Selection>,
    /// The repository's own ledgers, left out because the run chose the
    /// only pipeline on its own (no `--scope`, no `UNLAZY_SCOPE`).
    pub left_out: Vec<PathBuf>,
    /// `--approve --partition`, when a gate runs gate-check itself: the
    /// gates of the other shares, approved (never run) for its nested run.
    pub other_shares: Option<OtherShares>,
}

/// The gates of the other shares a partitioned `--approve` run approves
/// without running them, and the gate whose nested run needs them.
#[derive(Debug, Clone)]
pub struct OtherShares {
    pub gates: Selection,
    /// The first gate (qualified) whose CHECK runs gate-check.
    pub nested_by: String,
}

impl Setup {
    /// Whether this run judges the gate: every gate unless `--gate` chose.
    pub fn selects(&self, ledger: usize, id: &str) -> bool {
        self.selection.as_ref().is_none_or(|selection| selection.contains(ledger, id))
    }
}

/// Whether `check` runs gate-check's checker itself (a branch ledger's
/// `gate-check --reverify ... children.md`): a `gate-check` command word
/// (by any path) not reading states only (`--status`) or running a
/// pipeline action or a subcommand.
pub fn runs_gate_checks(check: &str) -> bool {
    use crate::shell_words::{tokenize, Token};
    const NOT_RUNNING: [&str; 7] = ["--status", "--claim", "--release", "--log", "--bind", "--list-scopes", "--help"];
    const SUBCOMMANDS: [&str; 9] =
        ["init", "completions", "man", "dispatch", "tree", "lint", "hook", "install-hooks", "help"];
    let tokens = tokenize(check);
    // Where a command starts: first, after an operator, after `VAR=value`.
    let mut starts = vec![false; tokens.len()];
    let mut at_start = true;
    for (at, token) in tokens.iter().enumerate() {
        starts[at] = at_start;
        at_start = match token {
            Token::Operator(_) => true,
            Token::Word(word) => at_start && word.contains('=') && !word.starts_with('='),
        };
    }
    tokens.iter().enumerate().any(|(at, token)| {
        let Token::Word(word) = token else { return false };
        if !starts[at] || word.rsplit('/').next() != Some("gate-check") {
            return false;
        }
        let arguments: Vec<&str> = tokens[at + 1..]
            .iter()
            .map_while(|token| match token {
                Token::Word(word) => Some(word.as_str()),
                Token::Operator(_) => None,
            })
            .collect();
        let subcommand = arguments.first().is_some_and(|first| SUBCOMMANDS.contains(first));
        !subcommand && !arguments.iter().any(|argument| NOT_RUNNING.contains(&argument.split('=').next().unwrap_or("")))
    })
}

/// `--approve --partition K/N`: when a selected gate runs gate-check
/// itself, its nested run (a branch re-verifying its children) needs the
/// approvals of gates in other shares, which a fresh CI runner has never
/// given; this run approves them too, without running them.
fn other_shares(options: &CheckConfig, ledgers: &[Ledger], share: &Selection) -> Result<Option<OtherShares>, Error> {
    if options.partition.is_none() || !options.mode.approves() {
        return Ok(None);
    }
    let nested_by = ledgers.iter().enumerate().find_map(|(index, ledger)| {
        ledger.document.gates.iter().find_map(|gate| {
            let nested = share.contains(index, gate.id()) && gate.check().is_some_and(runs_gate_checks);
            nested.then(|| qualify(&ledger.path, gate.id()))
        })
    });
    let Some(nested_by) = nested_by else { return Ok(None) };
    let whole = Selection::resolve(ledgers, &options.gates, None)?;
    let gates = Selection(whole.0.into_iter().filter(|(ledger, id)| !share.contains(*ledger, id)).collect());
    Ok(Some(OtherShares { gates, nested_by }))
}

/// The gates `--gate` chose, by ledger index and gate id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection(HashSet<(usize, String)>);

/// One `--gate` name: an id, plain or qualified, or a glob over either.
enum GateName {
    Exact(String),
    Glob(globset::GlobMatcher),
}

impl GateName {
    fn parse(text: &str) -> Result<GateName, Error> {
        if !text.contains(['*', '?', '[', '{']) {
            return Ok(GateName::Exact(text.to_string()));
        }
        let shown = serde_json::Value::from(text);
        let glob =
            globset::Glob::new(text).map_err(|error| Error::usage(format!("--gate {shown}: {}", error.kind())))?;
        Ok(GateName::Glob(glob.compile_matcher()))
    }

    fn names(&self, id: &str, qualified: &str) -> bool {
        match self {
            GateName::Exact(name) => name == id || name == qualified,
            GateName::Glob(glob) => glob.is_match(id) || glob.is_match(qualified),
        }
    }
}

impl Selection {
    /// The gates `wanted` names (all of them when it names none), then
    /// `partition`'s share of those. Each `--gate` value is a comma list;
    /// a plain id picks that gate in every ledger that has it, a qualified
    /// one (`leaf-1:G3`) in that ledger only, a glob (`T*`, `leaf-1:*`)
    /// every gate whose plain or qualified id it matches. A name no gate
    /// has is a usage error, since a typo must not pass as "all met".
    pub fn resolve(
        ledgers: &[Ledger],
        wanted: &[String],
        partition: Option<super::Partition>,
    ) -> Result<Selection, Error> {
        let mut names = Vec::new();
        for (value, piece) in wanted.iter().flat_map(|value| value.split(',').map(move |piece| (value, piece.trim()))) {
            if piece.is_empty() {
                let shown = serde_json::Value::from(value.as_str());
                return Err(Error::usage(format!("--gate {shown} has an empty name in its list")));
            }
            names.push((piece, GateName::parse(piece)?, false));
        }
        let mut chosen = Vec::new();
        for (index, ledger) in ledgers.iter().enumerate() {
            for gate in &ledger.document.gates {
                let qualified = qualify(&ledger.path, gate.id());
                let mut picked = names.is_empty();
                for (_, name, used) in names.iter_mut() {
                    if name.names(gate.id(), &qualified) {
                        *used = true;
                        picked = true;
                    }
                }
                if picked {
                    chosen.push((index, gate.id().to_string()));
                }
            }
        }
        if let Some((piece, _, _)) = names.iter().find(|(_, _, used)| !used) {
            let shown = serde_json::Value::from(*piece);
            return Err(Error::usage(format!("unknown --gate {shown}: no targeted ledger has that gate")));
        }
        // One gate picked twice (by two names) keeps its first place.
        let mut seen = HashSet::new();
        chosen.retain(|gate| seen.insert(gate.clone()));
        let share = chosen
            .into_iter()
            .enumerate()
            .filter(|(position, _)| partition.is_none_or(|partition| partition.takes(*position)))
            .map(|(_, gate)| gate)
            .collect();
        Ok(Selection(share))
    }

    pub fn contains(&self, ledger: usize, id: &str) -> bool {
        self.0.contains(&(ledger, id.to_string()))
    }
}

/// A gate's working directory must exist: a wrong CWD attribute is a ledger
/// mistake, reported at its line.
fn require_gate_directory(path: &Path, ledger: &Ledger, gate: &Gate, qualified: &str) -> Result<(), Error> {
    match target::require_directory(path, &format!("gate {qualified} CWD")) {
        Err(error) if error.is_mistake() => {
            let line = gate.cwd_line().unwrap_or(gate.line()) + 1;
            Err(Error::Invalid(vec![Diagnostic::new(ledger.path.display().to_string(), Some(line), error.to_string())]))
        }
        other => Ok(other?),
    }
}

fn path_text(path: &Path) -> Result<String, Error> {
    Ok(paths::utf8(path)?.to_string())
}

/// Reads and strictly parses one ledger; warnings are reported as events.
pub fn load_ledger(path: &Path, reporter: &mut dyn Reporter) -> Result<Ledger, Error> {
    let text = ledger::file::read(path)?;
    parse_ledger(path, text, reporter)
}

fn parse_ledger(path: &Path, text: String, reporter: &mut dyn Reporter) -> Result<Ledger, Error> {
    let outcome = ledger::parse(text);
    report_warnings(path, &outcome.warnings, reporter);
    if !outcome.errors.is_empty() {
        let shown = path.display().to_string();
        return Err(Error::Invalid(outcome.errors.iter().map(|e| e.at(&shown)).collect()));
    }
    let (text_path, warnings) = (path_text(path)?, outcome.warnings);
    Ok(Ledger { text_path, path: path.to_path_buf(), document: outcome.document, warnings })
}

/// The note a run owes when it chose the only pipeline on its own and so
/// left the repository's own ledgers out: which, and how to check them.
fn report_left_out(root: &Path, invoked_in: &Path, scope: &str, left_out: &[PathBuf], reporter: &mut dyn Reporter) {
    if left_out.is_empty() {
        return;
    }
    let names: Vec<String> =
        left_out.iter().map(|path| path.strip_prefix(root).unwrap_or(path).display().to_string()).collect();
    let listed = match names.len() {
        0..=4 => names.join(", "),
        more => format!("{}, +{} more", names[..4].join(", "), more - 4),
    };
    let command = if names.len() > 4 { "GATES.md gates/*.md".to_string() } else { names.join(" ") };
    // Ledger paths on the command line are taken from --root, else from
    // where gate-check is started.
    let root_option = if root == invoked_in {
        String::new()
    } else {
        format!(" --root {}", crate::shell_words::quote(&root.display().to_string()))
    };
    reporter.event(&Event::Warning(&format!(
        "gate-check: note: checking .unlazy/{scope}/, the only pipeline (no --scope given); not checked: {listed} \
         (check them with: gate-check{root_option} {command})"
    )));
}

/// A pipeline's ledger named as a file runs its checks in its own
/// directory (the Node tool's rule for a named ledger), not at the root
/// where the pipeline runs them: said, with the command that runs them
/// from the root, unless `--cwd` chose the directory.
fn report_pipeline_ledgers_named(options: &CheckConfig, target: &Target, root: &Path, reporter: &mut dyn Reporter) {
    if target.mode != Mode::Explicit || options.cwd_given || options.mode.is_status() {
        return;
    }
    for file in &target.files {
        let repository = target.state_root(root, file);
        let Ok(inside) = file.strip_prefix(repository.join(crate::layout::STATE_DIR)) else { continue };
        let Some(scope) = inside.iter().next().and_then(|scope| scope.to_str()) else { continue };
        if target::validate_scope_id(scope, "scope").is_err() || inside.iter().count() < 2 {
            continue;
        }
        let stem = qualify(file, "");
        let mut words = vec!["gate-check".to_string()];
        if repository != options.invoked_in {
            words.push(format!("--root {}", crate::shell_words::quote(&repository.display().to_string())));
        }
        if options.mode.approves() {
            words.push("--approve".into());
        }
        if options.mode.reverifies() {
            words.push("--reverify".into());
        }
        words.push(format!("--scope {scope} --gate '{stem}*'"));
        let directory = file.parent().unwrap_or(root);
        let shown = file.strip_prefix(&repository).unwrap_or(file).display().to_string();
        reporter.event(&Event::Warning(&format!(
            "gate-check: warning: {shown} is a ledger of the pipeline {scope}, named as a file: its checks run in its \
             own directory ({}), as the Node tool runs a named ledger's, and are approved for that directory; to run \
             them from the repository root as the pipeline does: {}",
            directory.display(),
            words.join(" ")
        )));
    }
}

/// The ledgers a run left out (`Setup::left_out`), judged as they stand:
/// read and parsed as the Stop hook reads them, never run.
pub fn judge_left_out(root: &Path, left_out: &[PathBuf]) -> Option<super::events::LeftOut> {
    if left_out.is_empty() {
        return None;
    }
    let mut judged = super::events::LeftOut::default();
    for path in left_out {
        judged.ledgers.push(path.strip_prefix(root).unwrap_or(path).display().to_string());
        let outcome = ledger::file::read(path).map(ledger::parse);
        let document = match outcome {
            Ok(outcome) if outcome.errors.is_empty() => outcome.document,
            _ => {
                judged.unmet.push(qualify(path, "PARSE"));
                continue;
            }
        };
        for gate in &document.gates {
            let state = evidence::gate_state(gate, document.is_abandoned(gate.id()));
            if !matches!(state, GateState::Met | GateState::Abandoned) {
                judged.unmet.push(qualify(path, gate.id()));
            }
        }
    }
    Some(judged)
}

fn report_warnings(path: &Path, warnings: &[ledger::ParseWarning], reporter: &mut dyn Reporter) {
    let shown = path.display().to_string();
    for warning in warnings {
        reporter.event(&Event::Warning(&warning.at(&shown).warning_line()));
    }
}

pub fn load_ledgers(target: &Target, reporter: &mut dyn Reporter) -> Result<Vec<Ledger>, Error> {
    target.files.iter().map(|file| load_ledger(file, reporter)).collect()
}

/// The ledgers as they are on disk now. One whose bytes are still those it
/// was parsed from keeps its document (a read and a comparison instead of
/// a parse) and reports its warnings again, as a fresh parse would.
pub fn reload_ledgers(previous: Vec<Ledger>, reporter: &mut dyn Reporter) -> Result<Vec<Ledger>, Error> {
    previous
        .into_iter()
        .map(|ledger| {
            let text = ledger::file::read(&ledger.path)?;
            if text == ledger.document.source() {
                report_warnings(&ledger.path, &ledger.warnings, reporter);
                Ok(ledger)
            } else {
                parse_ledger(&ledger.path, text, reporter)
            }
        })
        .collect()
}

pub fn prepare(options: &CheckConfig, reporter: &mut dyn Reporter) -> Result<Setup, Error> {
    let root = options.root.path.clone();
    target::require_directory(&root, "--root")?;
    let default_cwd = options.default_cwd.clone();
    if !options.mode.is_status() {
        target::require_directory(&default_cwd, "--cwd")?;
    }
    let scope = options.scope.as_deref();
    if let Some(scope) = scope {
        target::validate_scope_id(scope, "scope")?;
    }
    let target = target::resolve(&root, &options.files, scope)?;
    if target.files.is_empty() {
        return Err(Error::usage(options.root.no_ledgers_message()));
    }
    let left_out = match (&target.scope, scope) {
        (Some(chosen), None) => {
            let left_out = target::root_ledgers(&root);
            report_left_out(&root, &options.invoked_in, chosen, &left_out, reporter);
            left_out
        }
        _ => Vec::new(),
    };
    report_pipeline_ledgers_named(options, &target, &root, reporter);
    let ledgers = load_ledgers(&target, reporter)?;
    let selection = match (options.gates.is_empty(), options.partition) {
        (true, None) => None,
        _ => Some(Selection::resolve(&ledgers, &options.gates, options.partition)?),
    };
    let other_shares = match &selection {
        Some(share) => other_shares(options, &ledgers, share)?,
        None => None,
    };
    Ok(Setup { root, default_cwd, target, ledgers, selection, left_out, other_shares })
}

/// The execution context of `setup`'s ledgers. The approval store must
/// lie outside each ledger's repository (`Target::state_roots`), and a
/// confined check writes only inside its own ledger's repository.
pub fn build_runtime(options: &CheckConfig, env: &Environment, setup: &Setup) -> Result<Runtime, Error> {
    if let Some(problem) = &env.path_problem {
        return Err(problem.clone().into());
    }
    let path_var = env.path_var.clone();
    let shell = shell::resolve(&options.shell, env)?;
    // A fence that would hold the store is refused as a fence first.
    let fences = match options.sandbox {
        Some(_) => Some(ledger_fences(setup, &protected_places(env, options))?),
        None => None,
    };
    let store = Store::locate(&setup.target.state_roots(&setup.root), &options.store)?;
    // The cap counts UTF-16 code units, as the Node tool's string length does.
    // Kept raw: every display escapes it alike (a newline shows as `\x0A`).
    let mut path_transcript = utf16_prefix(&path_var, PATH_TRANSCRIPT_CHARS).to_string();
    if utf16_len(&path_var) > PATH_TRANSCRIPT_CHARS {
        path_transcript.push_str("...");
    }
    let (child_environment, sandbox) = match (&options.sandbox, fences) {
        (Some(request), Some(fences)) => {
            let (child_environment, sandbox) = Sandbox::confine(fences, &request.keep_env, env)?;
            (child_environment, Some(sandbox))
        }
        _ => (ChildEnvironment::new(&env.variables), None),
    };
    Ok(Runtime {
        shell_text: path_text(&shell)?,
        shell,
        child_environment,
        sandbox,
        path_summary: evidence::path_summary(&path_var),
        path_transcript,
        path_var,
        store,
        timeout_secs: options.timeout.as_secs(),
    })
}

/// Each ledger's fence: the repository its state and write-back use,
/// refused when it is `/` or holds a protected place.
fn ledger_fences(setup: &Setup, protected: &[Protected]) -> Result<Vec<WriteRoot>, Error> {
    let mut checked: HashMap<PathBuf, WriteRoot> = HashMap::new();
    let mut fences = Vec::with_capacity(setup.ledgers.len());
    for ledger in &setup.ledgers {
        let root = setup.target.state_root(&setup.root, &ledger.path);
        let fence = match checked.get(&root) {
            Some(fence) => fence.clone(),
            None => {
                let fence = WriteRoot::new(&root, protected)?;
                checked.insert(root, fence.clone());
                fence
            }
        };
        fences.push(fence);
    }
    Ok(fences)
}

/// What no fence may hold: the home directory, the approval store and the
/// receipt store; a confined check could otherwise rewrite the user's
/// shell profile, forge approvals or change receipts.
pub fn protected_places(env: &Environment, options: &CheckConfig) -> Vec<Protected> {
    let mut places: Vec<Protected> =
        env.home.iter().map(|path| Protected { what: "the home directory", path: path.clone() }).collect();
    for (what, location) in [("the approval store", &options.store), ("the receipt store", &options.receipts)] {
        let path = match location {
            StoreLocation::Named(dir) => Some(dir.clone()),
            StoreLocation::Default(dir) => dir.clone(),
        };
        places.extend(path.map(|path| Protected { what, path }));
    }
    places
}

/// The directory a gate's CHECK runs in.
fn gate_cwd(options: &CheckConfig, setup: &Setup, ledger: &Ledger, gate: &Gate) -> PathBuf {
    let base = if options.cwd_given {
        setup.default_cwd.clone()
    } else if setup.target.mode == Mode::Explicit {
        ledger.path.parent().map(Path::to_path_buf).unwrap_or_else(|| setup.root.clone())
    } else {
        setup.root.clone()
    };
    match gate.cwd() {
        Some(cwd) if !cwd.is_empty() => paths::resolve(&base, Path::new(cwd)),
        _ => base,
    }
}

/// The exact approval identity of running `gate` in `cwd` here.
pub fn oracle_for(runtime: &Runtime, gate: &Gate, cwd: &str) -> Oracle {
    Oracle::new(
        gate.check().unwrap_or(""),
        gate.expect().unwrap_or(""),
        cwd,
        &runtime.shell_text,
        runtime.timeout_secs,
        &runtime.path_var,
    )
}

/// The runnable gates this run must check: unmet ones, or all with
/// `--reverify`; abandoned and manual gates never run. With `proofs`
/// (`--proof`), a met gate whose proof is not current runs too.
pub fn plan_tasks(
    options: &CheckConfig,
    setup: &Setup,
    runtime: &Runtime,
    proofs: Option<&crate::proof::ProofStates>,
) -> Result<Vec<Task>, Error> {
    plan_tasks_of(options, setup, runtime, proofs, |ledger, id| setup.selects(ledger, id))
}

/// The tasks of the other shares' gates (`Setup::other_shares`), for
/// approval only.
pub fn plan_other_shares(options: &CheckConfig, setup: &Setup, runtime: &Runtime) -> Result<Vec<Task>, Error> {
    match &setup.other_shares {
        Some(other) => plan_tasks_of(options, setup, runtime, None, |ledger, id| other.gates.contains(ledger, id)),
        None => Ok(Vec::new()),
    }
}

fn plan_tasks_of(
    options: &CheckConfig,
    setup: &Setup,
    runtime: &Runtime,
    proofs: Option<&crate::proof::ProofStates>,
    selects: impl Fn(usize, &str) -> bool,
) -> Result<Vec<Task>, Error> {
    let mut tasks = Vec::new();
    // Gates mostly share a few working directories: each is inspected once.
    let mut inspected: HashSet<PathBuf> = HashSet::new();
    let mut expectations: HashMap<&str, Arc<Expectation>> = HashMap::new();
    for (index, ledger) in setup.ledgers.iter().enumerate() {
        for (at, gate) in ledger.document.gates.iter().enumerate() {
            if ledger.document.is_abandoned(gate.id()) || !gate.is_runnable() || !selects(index, gate.id()) {
                continue;
            }
            let digest = evidence::gate_digest(gate);
            let state = evidence::gate_state_with_digest(gate, false, digest.as_deref());
            let proven = proofs.is_none_or(|proofs| proofs.get(index, at).is_none_or(|proof| proof.is_current()));
            if !options.mode.reverifies() && state == GateState::Met && proven {
                continue;
            }
            let qualified = qualify(&ledger.path, gate.id());
            let cwd = gate_cwd(options, setup, ledger, gate);
            if !inspected.contains(&cwd) {
                require_gate_directory(&cwd, ledger, gate, &qualified)?;
                inspected.insert(cwd.clone());
            }
            let oracle = oracle_for(runtime, gate, &path_text(&cwd)?);
            crate::approval::store::check_recordable(&ledger.text_path, gate.id(), &oracle, gate.inputs()).map_err(
                |error| {
                    let shown = ledger.path.display().to_string();
                    Error::Invalid(vec![Diagnostic::new(shown, Some(gate.line() + 1), error.to_string())])
                },
            )?;
            let expectation = gate.expect().and_then(|expect| match expectations.get(expect) {
                Some(shared) => Some(Arc::clone(shared)),
                None => {
                    let fresh = Arc::new(gate.expectation()?);
                    expectations.insert(expect, Arc::clone(&fresh));
                    Some(fresh)
                }
            });
            tasks.push(Task {
                ledger: index,
                expectation,
                proof: None,
                digest: digest.unwrap_or_default(),
                gate: gate.clone(),
                qualified,
                cwd,
                starting_state: state,
                oracle,
            });
        }
    }
    Ok(tasks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::human::{Human, Style};

    #[test]
    fn a_check_that_runs_the_checker_is_told_from_one_that_only_reads_or_acts() {
        for check in [
            "gate-check --reverify --cwd . gates/a.md gates/b.md",
            "cd sub && ./target/release/gate-check --scope s",
            "make && \"gate-check\" gates/a.md | tail -1",
            "PATH=bin:$PATH gate-check --approve",
        ] {
            assert!(runs_gate_checks(check), "{check}");
        }
        for check in [
            "gate-check --status gates/a.md",
            "gate-check --release --scope s --leaf a && gate-check --release --scope s --leaf b",
            "gate-check lint GATES.md",
            "gate-check --scope=s --list-scopes",
            "echo gate-checker",
            "grep gate-check README.md",
        ] {
            assert!(!runs_gate_checks(check), "{check}");
        }
    }

    #[test]
    fn reloading_keeps_an_unchanged_ledger_and_reparses_a_changed_one() {
        let dir = tempfile::tempdir().unwrap();
        let (same, changed) = (dir.path().join("a.md"), dir.path().join("b.md"));
        std::fs::write(&same, "- [ ] A: a\n  CHECK: true\n  EXPECT: /x/y/\n").unwrap();
        std::fs::write(&changed, "- [ ] B: b\n").unwrap();
        let mut reporter = Human::new(Vec::new(), Vec::new(), Style::default());
        let loaded = vec![load_ledger(&same, &mut reporter).unwrap(), load_ledger(&changed, &mut reporter).unwrap()];
        let kept_buffer = loaded[0].document.source().as_ptr();
        std::fs::write(&changed, "- [x] B: b\n").unwrap();

        let reloaded = reload_ledgers(loaded, &mut reporter).unwrap();
        assert_eq!(reloaded[0].document.source().as_ptr(), kept_buffer, "an unchanged ledger is not parsed again");
        assert!(reloaded[1].document.gates[0].checked(), "a changed ledger is read as it is now");
        let (_, err) = reporter.into_parts();
        let warnings = String::from_utf8(err).unwrap();
        assert_eq!(warnings.matches("a.md: warning: gate A: EXPECT").count(), 2, "{warnings}");
    }
}
