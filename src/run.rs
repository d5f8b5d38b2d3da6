//! One checker run: target the ledgers, decide which gates need running,
//! enforce approval, run checks with rolling concurrency, write results
//! back in per-ledger batches as they arrive, and print the Node tool's
//! markers.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use crate::approval::store::Store;
use crate::approval::Oracle;
use crate::evidence::{self, Fingerprint, GateState, Transcript, MAX_OUTPUT_BYTES};
use crate::ledger::text::{utf16_len, utf16_prefix};
use crate::ledger::{self, file::LedgerLock, qualify, Document, Gate};
use crate::report::{CheckRecord, GateRecord, LedgerRecord, OutputFormat, RunReport, Summary, WaveRecords};
use crate::runner::{self, CheckRequest, RunFailure};
use crate::target::{self, Mode, Target};
use crate::terminal::{say, warn};
use crate::{paths, shell};
use js_regex::Expectation;

pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
const PATH_TRANSCRIPT_CHARS: usize = 800;

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub status: bool,
    pub reverify: bool,
    pub approve: bool,
    pub jobs: usize,
    pub timeout_secs: u64,
    pub shell: Option<String>,
    pub cwd: Option<PathBuf>,
    pub root: Option<PathBuf>,
    pub scope: Option<String>,
    pub files: Vec<PathBuf>,
    pub format: OutputFormat,
}

impl RunOptions {
    /// The mode name machine reports carry.
    pub fn mode_name(&self) -> String {
        match (self.status, self.approve, self.reverify) {
            (true, _, _) => "status",
            (_, true, true) => "approve+reverify",
            (_, true, false) => "approve",
            (_, false, true) => "reverify",
            _ => "run",
        }
        .to_string()
    }
}

#[derive(Debug)]
pub enum RunError {
    /// A usage problem: printed with a pointer to `--help`.
    Usage(String),
    /// Parse or infrastructure failure: each line printed as is.
    Fatal(Vec<String>),
}

struct Ledger {
    path: PathBuf,
    /// The path as text, as bound into approval identities.
    text_path: String,
    document: Document,
}

/// The execution context that `--status` never builds.
struct Runtime {
    shell: PathBuf,
    shell_text: String,
    path_var: String,
    path_summary: String,
    path_transcript: String,
    store: Store,
}

struct Task {
    ledger: usize,
    gate: Gate,
    qualified: String,
    cwd: PathBuf,
    starting_state: GateState,
    digest: String,
    oracle: Oracle,
}

/// Why a check has no result to write back: the run was interrupted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Interrupted {
    /// The check was running and was terminated.
    WhileRunning,
    /// The check never started.
    BeforeStart,
}

struct CheckResult {
    output: String,
    fingerprint: Fingerprint,
    exit_code: Option<i32>,
    signal: Option<String>,
    matched: bool,
    error: Option<String>,
    duration: Duration,
    interrupted: Option<Interrupted>,
}

impl CheckResult {
    fn ok(&self) -> bool {
        self.error.is_none() && self.exit_code == Some(0) && self.matched
    }

    /// The result as a machine report records it.
    fn record(&self, written: bool) -> CheckRecord {
        let status = match (written, self.ok()) {
            (false, _) => "stale",
            (true, true) => "pass",
            (true, false) => "fail",
        };
        let reason = match (&self.error, self.ok()) {
            (Some(error), _) => Some(error.clone()),
            (None, false) if self.exit_code != Some(0) => Some("non-zero exit".to_string()),
            (None, false) => Some("EXPECT not matched".to_string()),
            (None, true) => None,
        };
        CheckRecord {
            status,
            exit: self.exit_code,
            signal: self.signal.clone(),
            duration_ms: Some(self.duration.as_millis() as u64),
            reason: if written { reason } else { Some("definition or runtime approval oracle changed".into()) },
            output_sha256: self.ok().then(|| self.fingerprint.sha256.clone()),
        }
    }
}

fn not_run_record(reason: &str) -> CheckRecord {
    CheckRecord {
        status: "not-run",
        exit: None,
        signal: None,
        duration_ms: None,
        reason: Some(reason.to_string()),
        output_sha256: None,
    }
}

fn require_directory(path: &Path, label: &str) -> Result<(), RunError> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(RunError::Usage(format!("{label} is not a directory: {}", path.display()))),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            Err(RunError::Usage(format!("{label} does not exist: {}", path.display())))
        }
        Err(error) => Err(RunError::Usage(format!("cannot inspect {label} {}: {error}", path.display()))),
    }
}

fn path_text(path: &Path) -> Result<String, RunError> {
    paths::utf8(path).map(str::to_string).map_err(RunError::Usage)
}

/// Reads and strictly parses one ledger; warnings go to stderr.
fn load_ledger(path: &Path) -> Result<Ledger, RunError> {
    let text = ledger::file::read(path).map_err(|error| RunError::Usage(error.to_string()))?;
    let outcome = ledger::parse(&text);
    let shown = path.display();
    for warning in &outcome.warnings {
        warn(&format!("gate-check: {shown}: warning: {warning}"));
    }
    if !outcome.errors.is_empty() {
        return Err(RunError::Fatal(outcome.errors.iter().map(|e| format!("{shown}: {e}")).collect()));
    }
    Ok(Ledger { text_path: path_text(path)?, path: path.to_path_buf(), document: outcome.document })
}

fn build_runtime(options: &RunOptions, root: &Path) -> Result<Runtime, RunError> {
    let path_var = std::env::var_os("PATH").map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    let shell = shell::resolve(&shell::requested(options.shell.as_deref()), &path_var).map_err(RunError::Usage)?;
    let store = Store::locate(root).map_err(|error| match error {
        crate::approval::store::StoreError::InsideRoot => RunError::Usage(error.to_string()),
        other => RunError::Fatal(vec![other.to_string()]),
    })?;
    // The cap counts UTF-16 code units, as the Node tool's string length does.
    let flat = path_var.replace(['\r', '\n'], " ");
    let mut path_transcript = utf16_prefix(&flat, PATH_TRANSCRIPT_CHARS).to_string();
    if utf16_len(&path_var) > PATH_TRANSCRIPT_CHARS {
        path_transcript.push_str("...");
    }
    Ok(Runtime {
        shell_text: path_text(&shell)?,
        shell,
        path_summary: evidence::path_summary(&path_var),
        path_transcript,
        path_var,
        store,
    })
}

/// The directory a gate's CHECK runs in.
fn gate_cwd(
    options: &RunOptions,
    target: &Target,
    root: &Path,
    default_cwd: &Path,
    ledger: &Ledger,
    gate: &Gate,
) -> PathBuf {
    let base = if options.cwd.is_some() {
        default_cwd.to_path_buf()
    } else if target.mode == Mode::Explicit {
        ledger.path.parent().map(Path::to_path_buf).unwrap_or_else(|| root.to_path_buf())
    } else {
        root.to_path_buf()
    };
    match gate.cwd.as_deref() {
        Some(cwd) if !cwd.is_empty() => paths::resolve(&base, Path::new(cwd)),
        _ => base,
    }
}

fn oracle_for(runtime: &Runtime, options: &RunOptions, gate: &Gate, cwd: &str) -> Oracle {
    Oracle::new(
        gate.check.as_deref().unwrap_or(""),
        gate.expect.as_deref().unwrap_or(""),
        cwd,
        &runtime.shell_text,
        options.timeout_secs,
        &runtime.path_var,
    )
}

fn print_oracle(task: &Task, runtime: &Runtime) {
    say(&format!("APPROVAL REQUIRED {}", task.qualified));
    say(&format!("    CHECK: {}", task.oracle.check));
    say(&format!("    EXPECT: {}", task.oracle.expect));
    say(&format!("    CWD: {}", task.oracle.cwd));
    say(&format!("    SHELL: {}", task.oracle.shell));
    say(&format!("    PATH: {}", runtime.path_transcript));
}

/// Runs one check and judges it: exit 0 and EXPECT matching the canonical
/// output, within both output ceilings.
fn evaluate(task: &Task, runtime: &Runtime, timeout_secs: u64) -> CheckResult {
    let outcome = runner::run_check(&CheckRequest {
        shell: &runtime.shell,
        command: task.gate.check.as_deref().unwrap_or(""),
        cwd: &task.cwd,
        timeout: Duration::from_secs(timeout_secs),
        max_output_bytes: MAX_OUTPUT_BYTES,
    });
    let stdout = String::from_utf8_lossy(&outcome.stdout);
    let stderr = String::from_utf8_lossy(&outcome.stderr);
    let separator = if !stdout.is_empty() && !stderr.is_empty() { "\n" } else { "" };
    let output = format!("{stdout}{separator}{stderr}");
    let fingerprint = Fingerprint::of(&output);
    let combined_overflow = fingerprint.bytes > MAX_OUTPUT_BYTES;
    let mut error = match &outcome.failure {
        Some(RunFailure::TimedOut) => Some(format!("timed out after {timeout_secs}s")),
        Some(RunFailure::OutputHeldOpen) => {
            let ended = match (&outcome.exit_code, &outcome.signal) {
                (Some(code), _) => format!("exited {code}"),
                (None, Some(signal)) => format!("was ended by {signal}"),
                (None, None) => "ended".to_string(),
            };
            Some(format!("the check {ended} but a background process kept its output open"))
        }
        Some(RunFailure::Interrupted(signal)) => Some(format!("interrupted by {}", signal.as_str())),
        Some(RunFailure::NotStarted(signal)) => Some(format!("not started: interrupted by {}", signal.as_str())),
        Some(RunFailure::Overflow) => Some(format!("output exceeded {MAX_OUTPUT_BYTES} bytes")),
        Some(RunFailure::Spawn(message)) => Some(message.clone()),
        None if combined_overflow => {
            Some(format!("output exceeded {MAX_OUTPUT_BYTES} bytes after stdout/stderr UTF-8 combination"))
        }
        None => None,
    };
    let mut matched = false;
    if error.is_none() {
        match task.gate.expectation.as_deref().map(|e: &Expectation| e.matches(&output)) {
            Some(Ok(yes)) => matched = yes,
            Some(Err(budget)) => error = Some(budget.to_string()),
            None => error = Some("gate has no EXPECT".into()),
        }
    }
    let interrupted = match outcome.failure {
        Some(RunFailure::Interrupted(_)) => Some(Interrupted::WhileRunning),
        Some(RunFailure::NotStarted(_)) => Some(Interrupted::BeforeStart),
        _ => None,
    };
    CheckResult {
        output,
        fingerprint,
        exit_code: outcome.exit_code,
        signal: outcome.signal,
        matched,
        error,
        duration: outcome.duration,
        interrupted,
    }
}

fn print_result(task: &Task, result: &CheckResult) {
    let summary = if result.ok() {
        format!("sha256={}; bytes={}", result.fingerprint.sha256, result.fingerprint.bytes)
    } else {
        evidence::failure_summary(&result.output)
    };
    let exit = result.exit_code.map_or("none".to_string(), |c| c.to_string());
    let signal = result.signal.as_ref().map(|s| format!(" signal={s}")).unwrap_or_default();
    let matched = if result.matched { "matched" } else { "not matched" };
    let outcome = format!("exit={exit}{signal}; EXPECT={matched}; output={summary}");
    if result.ok() {
        say(&format!("  PASS {}: {}", task.qualified, task.gate.title));
        say(&format!("       {outcome}"));
    } else {
        say(&format!("  FAIL {}: {}", task.qualified, task.gate.title));
        let reason = result.error.as_ref().map(|e| format!("{e}; ")).unwrap_or_default();
        say(&format!("       {reason}{outcome}"));
    }
}

enum WriteBack {
    Written,
    Unchanged,
    Stale,
}

/// Applies finished results to one ledger as it is on disk now: one lock,
/// one re-read, one atomic replacement for the whole batch. Each result is
/// checked against the gate's current definition and approval identity, and
/// a changed gate's result is discarded (`Stale`).
fn write_back(
    options: &RunOptions,
    runtime: &Runtime,
    root: &Path,
    ledger: &Ledger,
    batch: &[(&Task, &CheckResult)],
) -> Result<Vec<WriteBack>, String> {
    let _lock = LedgerLock::acquire(root, &ledger.path).map_err(|e| e.to_string())?;
    let text = ledger::file::read(&ledger.path).map_err(|e| e.to_string())?;
    let outcome = ledger::parse(&text);
    if !outcome.errors.is_empty() {
        let joined: Vec<String> = outcome.errors.iter().map(ToString::to_string).collect();
        return Err(format!("fresh ledger became invalid: {}", joined.join("; ")));
    }
    let mut document = outcome.document;
    let mut decisions = Vec::with_capacity(batch.len());
    // (gate line, gate, evidence value, tick): applied bottom-up so that an
    // inserted EVIDENCE line never shifts a gate still to be edited.
    let mut edits = Vec::new();
    for (task, result) in batch {
        let Some(fresh) = document.gate(&task.gate.id).cloned() else {
            decisions.push(WriteBack::Stale);
            continue;
        };
        let same_definition = evidence::gate_digest(&fresh).as_deref() == Some(task.digest.as_str());
        let same_oracle = oracle_for(runtime, options, &fresh, &task.oracle.cwd).signature() == task.oracle.signature();
        if !same_definition || !same_oracle {
            decisions.push(WriteBack::Stale);
            continue;
        }
        if document.is_abandoned(&fresh.id) {
            decisions.push(WriteBack::Unchanged);
            continue;
        }
        let was_met = task.starting_state == GateState::Met;
        let must_write_failure =
            task.starting_state == GateState::StaleUnmet || (options.reverify && was_met) || fresh.checked;
        if result.ok() {
            let line = evidence::success_evidence(
                &task.digest,
                &result.fingerprint,
                &Transcript { shell: &runtime.shell_text, cwd: &task.oracle.cwd, path: &runtime.path_summary },
            );
            edits.push((fresh, line, true));
        } else if must_write_failure {
            edits.push((fresh, "pending".to_string(), false));
        } else {
            decisions.push(WriteBack::Unchanged);
            continue;
        }
        decisions.push(WriteBack::Written);
    }
    if edits.is_empty() {
        return Ok(decisions);
    }
    edits.sort_by_key(|(gate, _, _)| std::cmp::Reverse(gate.line));
    for (gate, value, tick) in &edits {
        document.set_checked(gate.line, *tick);
        document.set_evidence(gate, value);
    }
    ledger::file::replace_atomically(&ledger.path, &document.render()).map_err(|e| e.to_string())?;
    Ok(decisions)
}

/// What the rolling runner hands its consumer.
enum Progress {
    /// The next result in task order.
    Finished(usize, CheckResult),
    /// Nothing finished for a while: a moment to persist what is pending.
    Quiet,
}

/// How long a finished result may wait to be written back, so that fast
/// checks share one ledger rewrite while a slow check never holds an
/// earlier result hostage.
const WRITE_BACK_DELAY: Duration = Duration::from_millis(100);

/// Runs tasks on up to `jobs` threads, handing each result to `on_event`
/// in task order as soon as it and all earlier ones are done, with `Quiet`
/// whenever no result arrived for `WRITE_BACK_DELAY`.
fn run_rolling(
    tasks: &[Task],
    jobs: usize,
    evaluate_one: impl Fn(&Task) -> CheckResult + Sync,
    mut on_event: impl FnMut(Progress),
) {
    let next = AtomicUsize::new(0);
    let running: Mutex<BTreeMap<usize, Instant>> = Mutex::new(BTreeMap::new());
    // Dropping the sender wakes the progress thread at once when all is done.
    let (stop_progress, progress_stopped) = mpsc::channel::<()>();
    let (sender, receiver) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(tasks.len()) {
            let sender = sender.clone();
            let (next, evaluate_one, running) = (&next, &evaluate_one, &running);
            scope.spawn(move || loop {
                let index = next.fetch_add(1, Ordering::SeqCst);
                let Some(task) = tasks.get(index) else { break };
                lock(running).insert(index, Instant::now());
                let result = evaluate_one(task);
                lock(running).remove(&index);
                if sender.send((index, result)).is_err() {
                    break;
                }
            });
        }
        drop(sender);
        let running = &running;
        scope.spawn(move || show_progress(tasks, running, progress_stopped));
        let mut waiting = BTreeMap::new();
        let mut expected = 0;
        loop {
            match receiver.recv_timeout(WRITE_BACK_DELAY) {
                Ok((index, result)) => {
                    waiting.insert(index, result);
                    while let Some(result) = waiting.remove(&expected) {
                        on_event(Progress::Finished(expected, result));
                        expected += 1;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => on_event(Progress::Quiet),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        drop(stop_progress);
    });
    crate::terminal::progress(None);
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The live progress line: the longest-running check once it has run for
/// a second (the terminal module shows it only on an interactive terminal).
fn show_progress(tasks: &[Task], running: &Mutex<BTreeMap<usize, Instant>>, stopped: mpsc::Receiver<()>) {
    const TICK: Duration = Duration::from_millis(200);
    let mut shown = String::new();
    while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(TICK) {
        let line = {
            let running = lock(running);
            running.iter().min_by_key(|(_, started)| **started).and_then(|(index, started)| {
                let elapsed = started.elapsed();
                (elapsed >= Duration::from_secs(1)).then(|| {
                    let others = running.len() - 1;
                    let more = if others > 0 { format!(" (+{others} more running)") } else { String::new() };
                    format!("  ... {} running for {}s{more}", tasks[*index].qualified, elapsed.as_secs())
                })
            })
        };
        if let Some(line) = line.filter(|line| *line != shown) {
            crate::terminal::progress(Some(&line));
            shown = line;
        }
    }
}

/// What `execute` resolves before deciding anything about gates.
struct Setup {
    root: PathBuf,
    default_cwd: PathBuf,
    target: Target,
    ledgers: Vec<Ledger>,
}

fn prepare(options: &RunOptions) -> Result<Setup, RunError> {
    let cwd = std::env::current_dir()
        .map_err(|e| RunError::Fatal(vec![format!("cannot read the working directory: {e}")]))?;
    let root = paths::resolve(&cwd, options.root.as_deref().unwrap_or(Path::new(".")));
    require_directory(&root, "--root")?;
    let default_cwd = paths::resolve(&root, options.cwd.as_deref().unwrap_or(Path::new(".")));
    if !options.status {
        require_directory(&default_cwd, "--cwd")?;
    }
    if let Some(scope) = &options.scope {
        target::validate_scope_id(scope, "scope").map_err(RunError::Usage)?;
    }
    let target = target::resolve(&root, &options.files, options.scope.as_deref()).map_err(RunError::Usage)?;
    if target.files.is_empty() {
        return Err(RunError::Usage(format!(
            "no gate files found (looked for {}/<scope>/, then GATES.md and gates/*.md under {})",
            target::STATE_DIR,
            root.display()
        )));
    }
    let ledgers = target.files.iter().map(|f| load_ledger(f)).collect::<Result<Vec<_>, _>>()?;
    Ok(Setup { root, default_cwd, target, ledgers })
}

/// The runnable gates this run must check: unmet ones, or all with
/// `--reverify`; abandoned and manual gates never run.
fn plan_tasks(options: &RunOptions, setup: &Setup, runtime: &Runtime) -> Result<Vec<Task>, RunError> {
    let mut tasks = Vec::new();
    for (index, ledger) in setup.ledgers.iter().enumerate() {
        for gate in &ledger.document.gates {
            if ledger.document.is_abandoned(&gate.id) || !gate.is_runnable() {
                continue;
            }
            let state = evidence::gate_state(gate, false);
            if !options.reverify && state == GateState::Met {
                continue;
            }
            let qualified = qualify(&ledger.path, &gate.id);
            let cwd = gate_cwd(options, &setup.target, &setup.root, &setup.default_cwd, ledger, gate);
            require_directory(&cwd, &format!("gate {qualified} CWD"))?;
            let oracle = oracle_for(runtime, options, gate, &path_text(&cwd)?);
            tasks.push(Task {
                ledger: index,
                digest: evidence::gate_digest(gate).unwrap_or_default(),
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

/// Tasks split by approval: only exact, intact records let a check run.
struct Approvals {
    runnable: Vec<Task>,
    not_run: Vec<Task>,
    /// Approvals the store could not validate or record.
    failures: usize,
}

fn seek_approvals(options: &RunOptions, runtime: &Runtime, ledgers: &[Ledger], tasks: Vec<Task>) -> Approvals {
    let mut approvals = Approvals { runnable: Vec::new(), not_run: Vec::new(), failures: 0 };
    for task in tasks {
        let ledger = &ledgers[task.ledger];
        match runtime.store.is_approved(&ledger.text_path, &task.gate.id, &task.oracle) {
            Ok(true) => approvals.runnable.push(task),
            Ok(false) => {
                print_oracle(&task, runtime);
                if !options.approve {
                    say("    NOT RUN: inspect this oracle, then re-run with --approve");
                    approvals.not_run.push(task);
                    continue;
                }
                match runtime.store.approve(&ledger.text_path, &task.gate.id, &task.oracle) {
                    Ok(path) => {
                        say(&format!("    APPROVED: {}", path.display()));
                        approvals.runnable.push(task);
                    }
                    Err(error) => {
                        warn(&format!("gate-check: could not record approval for {}: {error}", task.qualified));
                        approvals.failures += 1;
                        approvals.not_run.push(task);
                    }
                }
            }
            Err(error) => {
                warn(&format!("gate-check: could not validate approval for {}: {error}", task.qualified));
                approvals.failures += 1;
                approvals.not_run.push(task);
            }
        }
    }
    approvals
}

/// What running the approved checks produced, beyond the ledgers on disk.
#[derive(Default)]
struct Executed {
    checks: HashMap<(usize, String), CheckRecord>,
    /// (ledger, gate id, qualified id) of results discarded as stale.
    stale: Vec<(usize, String, String)>,
    reverified: usize,
    /// Qualified ids of the checks an interrupt stopped while they ran.
    interrupted: Vec<String>,
}

/// Runs the approved checks, prints each result in ledger order, and writes
/// results back in batches as they arrive.
fn run_checks(
    options: &RunOptions,
    runtime: &Runtime,
    setup: &Setup,
    approvals: &Approvals,
) -> Result<Executed, RunError> {
    let (ledgers, runnable, root) = (&setup.ledgers, &approvals.runnable, &setup.root);
    let mut executed = Executed::default();
    for task in &approvals.not_run {
        let reason = if options.approve { "approval could not be recorded" } else { "approval required" };
        executed.checks.insert((task.ledger, task.gate.id.clone()), not_run_record(reason));
    }
    let mut write_failures = Vec::new();
    for task in runnable {
        say(&format!(
            "  RUN  {} shell={} cwd={} PATH={}",
            task.qualified, runtime.shell_text, task.oracle.cwd, runtime.path_transcript
        ));
    }
    crate::terminal::flush();
    let mut pending: Vec<(usize, CheckResult)> = Vec::new();
    let mut oldest_pending: Option<Instant> = None;
    // Interrupted checks have no result: nothing about them is written back.
    let mut interrupted = Vec::new();
    let mut interrupted_records = Vec::new();
    let mut persist = |pending: &mut Vec<(usize, CheckResult)>| {
        for (ledger_index, ledger) in ledgers.iter().enumerate() {
            let batch: Vec<(&Task, &CheckResult)> = pending
                .iter()
                .filter(|(index, _)| runnable[*index].ledger == ledger_index)
                .map(|(index, result)| (&runnable[*index], result))
                .collect();
            if batch.is_empty() {
                continue;
            }
            match write_back(options, runtime, root, ledger, &batch) {
                Ok(decisions) => {
                    for ((task, result), decision) in batch.iter().zip(decisions) {
                        let written = !matches!(decision, WriteBack::Stale);
                        executed.checks.insert((task.ledger, task.gate.id.clone()), result.record(written));
                        if !written {
                            say(&format!(
                                "  STALE {}: definition or runtime approval oracle changed; result not written",
                                task.qualified
                            ));
                            executed.stale.push((task.ledger, task.gate.id.clone(), task.qualified.clone()));
                        } else if options.reverify && task.starting_state == GateState::Met {
                            executed.reverified += 1;
                        }
                    }
                }
                Err(error) => write_failures.push(format!("cannot update {}: {error}", ledger.path.display())),
            }
        }
        pending.clear();
        crate::terminal::flush();
    };
    run_rolling(
        runnable,
        options.jobs,
        |task| evaluate(task, runtime, options.timeout_secs),
        |event| {
            if let Progress::Finished(index, result) = event {
                let task = &runnable[index];
                match result.interrupted {
                    Some(how) => {
                        let record = if how == Interrupted::WhileRunning {
                            say(&format!("  INTERRUPTED {}: {}", task.qualified, task.gate.title));
                            interrupted.push(task.qualified.clone());
                            CheckRecord { status: "interrupted", ..result.record(true) }
                        } else {
                            not_run_record("run interrupted")
                        };
                        interrupted_records.push(((task.ledger, task.gate.id.clone()), record));
                    }
                    None => {
                        print_result(task, &result);
                        pending.push((index, result));
                        oldest_pending.get_or_insert_with(Instant::now);
                    }
                }
                crate::terminal::flush();
            }
            if oldest_pending.is_some_and(|since| since.elapsed() >= WRITE_BACK_DELAY) {
                persist(&mut pending);
                oldest_pending = None;
            }
        },
    );
    persist(&mut pending);
    executed.checks.extend(interrupted_records);
    executed.interrupted = interrupted;
    if write_failures.is_empty() {
        Ok(executed)
    } else {
        Err(RunError::Fatal(write_failures))
    }
}

pub fn execute(options: &RunOptions) -> Result<i32, RunError> {
    let mut setup = prepare(options)?;
    let mut approvals = Approvals { runnable: Vec::new(), not_run: Vec::new(), failures: 0 };
    let mut executed = Executed::default();
    if !options.status {
        let runtime = build_runtime(options, &setup.root)?;
        let tasks = plan_tasks(options, &setup, &runtime)?;
        approvals = seek_approvals(options, &runtime, &setup.ledgers, tasks);
        executed = run_checks(options, &runtime, &setup, &approvals)?;
        if let Some(signal) = runner::interruption() {
            return Ok(report_interruption(options, signal, &executed.interrupted));
        }
        // Final states come from the ledgers as they are on disk now; a
        // status run wrote nothing, so what it loaded is current.
        setup.ledgers = setup.target.files.iter().map(|f| load_ledger(f)).collect::<Result<Vec<_>, _>>()?;
    }
    summarize(options, &setup, &approvals, executed)
}

/// Ends an interrupted run: results that finished were written back, the
/// checks it stopped changed nothing. Exits 128 + the signal number, as a
/// shell reports a command killed by it.
fn report_interruption(options: &RunOptions, signal: nix::sys::signal::Signal, stopped: &[String]) -> i32 {
    let code = 128 + signal as i32;
    let message = format!(
        "INTERRUPTED by {}: {} running check(s) stopped; their gates were not updated",
        signal.as_str(),
        stopped.len()
    );
    say(&message);
    if !stopped.is_empty() {
        say(&format!("  {}", capped_list(stopped)));
    }
    let mut report = RunReport::failed(options.mode_name(), vec![message]);
    report.outcome = "interrupted";
    report.exit_code = code;
    publish(options, &report);
    code
}

/// Prints per-ledger lines and the verdict, publishes machine output, and
/// returns the exit code.
fn summarize(options: &RunOptions, setup: &Setup, approvals: &Approvals, executed: Executed) -> Result<i32, RunError> {
    let (finals, target, root) = (&setup.ledgers, &setup.target, &setup.root);
    let Executed { mut checks, stale, reverified, .. } = executed;
    let (runnable, not_run, approval_failures) = (&approvals.runnable, &approvals.not_run, approvals.failures);
    let mut final_states: HashMap<(usize, String), GateState> = HashMap::new();
    let (mut met, mut unmet, mut abandoned) = (0usize, 0usize, 0usize);
    let mut unmet_ids = Vec::new();
    let mut abandoned_ids = Vec::new();
    let mut gate_records = Vec::new();
    for (index, ledger) in finals.iter().enumerate() {
        for gate in &ledger.document.gates {
            let state = evidence::gate_state(gate, ledger.document.is_abandoned(&gate.id));
            final_states.insert((index, gate.id.clone()), state);
            let qualified = qualify(&ledger.path, &gate.id);
            gate_records.push(GateRecord {
                ledger: ledger.text_path.clone(),
                line: gate.line + 1,
                id: gate.id.clone(),
                qualified_id: qualified.clone(),
                title: gate.title.clone(),
                state: state.name(),
                checked: gate.checked,
                runnable: gate.is_runnable(),
                definition_digest: evidence::gate_digest(gate),
                check: checks.remove(&(index, gate.id.clone())),
            });
            match state {
                GateState::Abandoned => {
                    abandoned += 1;
                    abandoned_ids.push(qualified);
                }
                GateState::Met => met += 1,
                _ => {
                    unmet += 1;
                    if options.status {
                        say(&format!("  UNMET {qualified} ({}): {}", state.reason(), gate.title));
                    }
                    unmet_ids.push(qualified);
                }
            }
        }
        let name = ledger.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        say(&format!("{name}: {} gates", ledger.document.gates.len()));
    }

    // A scope is complete only when its ledgers and its dispatch waves are;
    // completion must not depend on callers remembering `dispatch status`.
    let waves = crate::dispatch::aggregate(root, target.scope.as_deref()).map_err(|e| RunError::Fatal(vec![e]))?;
    abandoned += waves.abandoned.len();
    abandoned_ids.extend(waves.abandoned.iter().cloned());
    if options.status {
        for blocker in &waves.blocking {
            say(&format!("  UNMET {blocker}"));
        }
    }

    let scope_note = target.scope.as_ref().map(|s| format!(" [scope {s}]")).unwrap_or_default();
    let verify_note = if options.reverify {
        format!(", reran: {}, previously met reverified: {reverified}", runnable.len())
    } else {
        String::new()
    };
    // Gates that still read as met although this run could not confirm them.
    let mut extra_unmet: Vec<((usize, String), String)> = Vec::new();
    let still_met = |key: &(usize, String)| matches!(final_states.get(key), Some(GateState::Met) | None);
    if options.reverify {
        for task in not_run.iter().filter(|t| t.starting_state == GateState::Met) {
            let key = (task.ledger, task.gate.id.clone());
            if still_met(&key) && !extra_unmet.iter().any(|(k, _)| *k == key) {
                extra_unmet.push((key, format!("{} (reverify not run)", task.qualified)));
            }
        }
    }
    for (ledger, id, qualified) in &stale {
        let key = (*ledger, id.clone());
        if still_met(&key) {
            extra_unmet.retain(|(k, _)| *k != key);
            extra_unmet.push((key, format!("{qualified} (stale result discarded)")));
        }
    }
    let effective_unmet = unmet + extra_unmet.len() + waves.blocking.len();
    unmet_ids.extend(extra_unmet.iter().map(|(_, label)| label.clone()));
    unmet_ids.extend(waves.blocking.iter().cloned());
    let confirmed_met = met.saturating_sub(extra_unmet.len());
    let (outcome, code) = if approval_failures > 0 {
        warn(&format!("gate-check: infrastructure failure prevented {approval_failures} approval(s)"));
        ("error", 2)
    } else if effective_unmet == 0 && abandoned == 0 {
        say(&format!("ALL MET ({met} met{verify_note}){scope_note}"));
        ("all-met", 0)
    } else {
        if abandoned > 0 {
            let unmet_note = if effective_unmet > 0 { format!(", unmet: {effective_unmet}") } else { String::new() };
            say(&format!(
                "HANDOFF REQUIRED: {abandoned} abandoned (met: {confirmed_met}{unmet_note}{verify_note}){scope_note}"
            ));
            say(&format!("  {}", capped_list(&abandoned_ids)));
        }
        if effective_unmet > 0 {
            let abandoned_note = if abandoned > 0 { format!(", abandoned: {abandoned}") } else { String::new() };
            say(&format!("UNMET: {effective_unmet} (met: {confirmed_met}{abandoned_note}{verify_note}){scope_note}"));
            say(&format!("  {}", capped_list(&unmet_ids)));
        }
        (if abandoned > 0 { "handoff-required" } else { "unmet" }, 1)
    };
    publish(
        options,
        &RunReport {
            schema: 1,
            tool: "gate-check",
            version: env!("CARGO_PKG_VERSION"),
            mode: options.mode_name(),
            scope: target.scope.clone(),
            outcome,
            exit_code: code,
            summary: Summary {
                met: confirmed_met,
                unmet: effective_unmet,
                abandoned,
                reran: options.reverify.then_some(runnable.len()),
                previously_met_reverified: options.reverify.then_some(reverified),
            },
            unmet: unmet_ids,
            abandoned: abandoned_ids,
            ledgers: finals
                .iter()
                .map(|l| LedgerRecord { path: l.text_path.clone(), gates: l.document.gates.len() })
                .collect(),
            gates: gate_records,
            waves: WaveRecords { blocking: waves.blocking.clone(), abandoned: waves.abandoned.clone() },
            errors: Vec::new(),
        },
    );
    Ok(code)
}

/// Emits the machine document the options ask for, and GitHub Actions
/// annotations when running there.
pub fn publish(options: &RunOptions, report: &RunReport) {
    match options.format {
        OutputFormat::Human => {}
        OutputFormat::Json => crate::terminal::emit(report.to_json().as_bytes()),
        OutputFormat::Junit => crate::terminal::emit(report.to_junit().as_bytes()),
    }
    if std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true") {
        let workspace =
            std::env::var_os("GITHUB_WORKSPACE").map(PathBuf::from).or_else(|| std::env::current_dir().ok());
        let display = |ledger: &str| match &workspace {
            Some(base) => Path::new(ledger)
                .strip_prefix(base)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| ledger.to_string()),
            None => ledger.to_string(),
        };
        for line in report.github_annotations(display) {
            // Workflow commands are read from stdout unless stdout carries a
            // document; the runner reads stderr too.
            if options.format == OutputFormat::Human {
                say(&line);
            } else {
                warn(&line);
            }
        }
    }
}

/// At most twelve ids, then `+N more`.
fn capped_list(ids: &[String]) -> String {
    let mut text = ids.iter().take(12).cloned().collect::<Vec<_>>().join(", ");
    if ids.len() > 12 {
        text.push_str(&format!(", +{} more", ids.len() - 12));
    }
    text
}
