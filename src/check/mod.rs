//! One checker run: `plan` targets the ledgers and decides which gates need
//! running, `approve` enforces approval, `pool` runs checks with rolling
//! concurrency and `evaluate` judges each, `write_back` records results in
//! per-ledger batches as they arrive, and `verdict` decides the outcome.
//! Everything the run says goes out as `report::Event`s.

pub mod approve;
pub mod evaluate;
pub mod events;
pub mod plan;
pub mod pool;
pub mod proof;
pub mod verdict;
pub mod write_back;

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::approval::store::StoreLocation;
use crate::config::Environment;
use crate::diagnostic::error_line;
use crate::error::{Error, WriteBackFailure};
use crate::evidence::{self, GateState};
use crate::exit::Exit;
use crate::report::record::{
    CheckRecord, CheckStatus, GateRecord, LedgerRecord, RecordState, RunReport, Summary, WaveRecords,
};
use crate::report::tail::{self, OutputTail};
use crate::report::OutputFormat;
use crate::runner::Containment;
use crate::target::Root;

use crate::proof::ProofStates;
use approve::Approvals;
use evaluate::{CheckResult, Unjudged};
use events::{Event, FinishedCheck, Reporter, Verdict};
use plan::{Runtime, Setup, Task};
use pool::Progress;
use proof::{Proofs, Proven};
use verdict::RunFacts;
use write_back::WriteBack;

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// What a checker run does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMode {
    /// `--status`: report only; nothing runs, resolves a shell, or writes.
    Status,
    /// Run the checks the gates need (`--approve` records pending
    /// approvals first; `--reverify` re-runs met gates too).
    Check { approve: bool, reverify: bool },
}

impl RunMode {
    /// The mode name machine reports carry.
    pub fn name(self) -> &'static str {
        match self {
            RunMode::Status => "status",
            RunMode::Check { approve: true, reverify: true } => "approve+reverify",
            RunMode::Check { approve: true, reverify: false } => "approve",
            RunMode::Check { approve: false, reverify: true } => "reverify",
            RunMode::Check { approve: false, reverify: false } => "run",
        }
    }

    pub fn is_status(self) -> bool {
        self == RunMode::Status
    }

    pub fn approves(self) -> bool {
        matches!(self, RunMode::Check { approve: true, .. })
    }

    pub fn reverifies(self) -> bool {
        matches!(self, RunMode::Check { reverify: true, .. })
    }
}

/// A checker run, resolved from the command line and the environment.
#[derive(Debug, Clone)]
pub struct CheckConfig {
    pub mode: RunMode,
    pub jobs: NonZeroUsize,
    pub timeout: Duration,
    /// The shell asked for (`--shell`, else `UNLAZY_SHELL`, else
    /// `/bin/sh`); looked up on PATH only when checks run.
    pub shell: String,
    /// Where the ledgers are, as located (checked when the run starts).
    pub root: Root,
    /// The checks' default directory (checked when checks run).
    pub default_cwd: PathBuf,
    /// Where gate-check was started: relative ledger paths on a command
    /// line it suggests are taken from here.
    pub invoked_in: PathBuf,
    /// `--cwd` was given: every gate's directory is taken from it.
    pub cwd_given: bool,
    /// `--scope`, else `UNLAZY_SCOPE`.
    pub scope: Option<String>,
    /// The approval store (checked against the ledgers' roots when checks
    /// run).
    pub store: StoreLocation,
    pub files: Vec<PathBuf>,
    pub format: OutputFormat,
    /// `--gate`: the ids (plain or qualified, globs, comma lists) of the
    /// only gates to judge.
    pub gates: Vec<String>,
    /// `--partition K/N`: judge only this share of the selected gates.
    pub partition: Option<Partition>,
    pub show_output: bool,
    /// This run's command line with `--approve`: what moves a run left
    /// waiting for approvals on.
    pub approve_command: String,
    /// `--sandbox` (or `UNLAZY_SANDBOX=1`): run every check confined.
    pub sandbox: Option<SandboxRequest>,
    /// `--proof` (or `UNLAZY_PROOF=1`): a met gate counts only when its
    /// proof is current, and a run re-runs the met gates whose proof is not.
    pub proof: bool,
    /// The receipt store (checked against the ledgers' roots when used).
    pub receipts: StoreLocation,
}

/// `--partition K/N`: this run's share of the selected gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    /// K, from 1.
    share: usize,
    /// N.
    count: usize,
}

impl Partition {
    pub fn new(share: usize, count: usize) -> Option<Partition> {
        (1..=count).contains(&share).then_some(Partition { share, count })
    }

    /// Whether the gate at `position` (from 0, in ledger order among the
    /// selected gates) is this share's: every Nth, starting at the Kth.
    pub fn takes(self, position: usize) -> bool {
        position % self.count == self.share - 1
    }

    /// `K/N`, as given.
    pub fn text(self) -> String {
        format!("{}/{}", self.share, self.count)
    }
}

/// How a confined run was asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxRequest {
    /// `--sandbox-keep-env`: variables inherited even though they look
    /// like credentials.
    pub keep_env: Vec<String>,
}

/// What running the approved checks produced, beyond the ledgers on disk.
#[derive(Default)]
struct Executed {
    /// Machine records of what happened to each gate's check, by (ledger, id).
    checks: HashMap<(usize, String), CheckRecord>,
    /// Indexes into the tasks of results discarded as stale.
    stale: Vec<usize>,
    reverified: usize,
    /// Qualified ids of the checks an interrupt stopped while they ran.
    interrupted: Vec<String>,
    /// What interrupted the run, if anything did.
    interrupted_by: Option<crate::runner::Interruption>,
    /// `--sandbox`: how the checks were confined.
    sandbox: Option<crate::report::record::SandboxRecord>,
}

/// Runs the whole checker: the exit status, or the error that stopped it.
pub fn execute(
    options: &CheckConfig,
    env: &Environment,
    containment: &Containment,
    reporter: &mut dyn Reporter,
) -> Result<Exit, Error> {
    let mut setup = plan::prepare(options, reporter)?;
    let mut approvals = Approvals::default();
    let mut executed = Executed::default();
    let roots = setup.target.state_roots(&setup.root);
    // A status run never creates the store; a run that may prove gates does.
    let mut proofs = Proofs::open(&options.receipts, &roots, !options.mode.is_status());
    if options.proof {
        proofs.require_store()?;
    }
    if !options.mode.is_status() {
        let runtime = plan::build_runtime(options, env, &setup)?;
        // With --proof, a met gate whose proof is not current runs again.
        let judged_first = options.proof.then(|| proofs.judge(&setup, &gate_states(&setup, None)));
        let mut tasks = plan::plan_tasks(options, &setup, &runtime, judged_first.as_ref())?;
        // Every ledger a result may be written to must be writable before
        // anything is approved or run.
        for (index, ledger) in setup.ledgers.iter().enumerate() {
            if tasks.iter().any(|task| task.ledger == index) {
                let state_root = setup.target.state_root(&setup.root, &ledger.path);
                crate::ledger::file::check_write_back(&state_root, &ledger.path)
                    .map_err(|source| Error::NotWritable { path: ledger.path.clone(), source })?;
            }
        }
        let other_shares_failures = approve_other_shares(options, &setup, &runtime, reporter)?;
        bind_trees(&setup, &mut tasks, &mut proofs);
        report_proof_news(&mut proofs, !tasks.is_empty(), reporter);
        (approvals, executed) = run_checks(options, &runtime, &setup, tasks, containment, &mut proofs, reporter)?;
        approvals.failures += other_shares_failures;
        if let Some(interruption) = executed.interrupted_by {
            return Ok(report_interruption(options, interruption, &executed.interrupted, reporter));
        }
        // Final states come from the ledgers as they are on disk now; a
        // status run wrote nothing, so what it loaded is current.
        setup.ledgers = plan::reload_ledgers(std::mem::take(&mut setup.ledgers), reporter)?;
    }
    let exit = summarize(options, &setup, &approvals, executed, &mut proofs, reporter);
    // The process ends with this run: handing a large ledger set back to
    // the allocator one string at a time would cost a tenth of a big
    // --status, for memory the exit returns at once. Setup holds memory
    // only (no lock, file or child), so nothing is skipped but the frees.
    std::mem::forget(setup);
    exit
}

/// `--approve --partition`, when a gate of this share runs gate-check
/// itself: approves the other shares' pending oracles (shown as every
/// approval is) without running them, so the nested run finds them. Returns
/// how many the store could not validate or record.
fn approve_other_shares(
    options: &CheckConfig,
    setup: &Setup,
    runtime: &plan::Runtime,
    reporter: &mut dyn Reporter,
) -> Result<usize, Error> {
    let Some(other) = &setup.other_shares else { return Ok(0) };
    let tasks = plan::plan_other_shares(options, setup, runtime)?;
    if tasks.is_empty() {
        return Ok(0);
    }
    reporter.event(&Event::Warning(&format!(
        "gate-check: note: {} runs gate-check itself, and its nested run needs the approvals of the other shares' \
         gates: approving {} of them too, without running them",
        other.nested_by,
        tasks.len()
    )));
    Ok(approve::seek_approvals(true, runtime, &setup.ledgers, &tasks, reporter, |_| {}))
}

/// Each task's tree digest: the scope of its root's tree, read now, before
/// any check starts, that its evidence will carry if it passes. The scope
/// leaves out the run's own ledgers, which its results change.
fn bind_trees(setup: &Setup, tasks: &mut [Task], proofs: &mut Proofs) {
    let mut excluded: HashMap<PathBuf, std::sync::Arc<[String]>> = HashMap::new();
    for task in tasks {
        let root = setup.target.state_root(&setup.root, &setup.ledgers[task.ledger].path);
        let excluded = excluded.entry(root.clone()).or_insert_with(|| proof::run_ledgers_under(&root, &setup.ledgers));
        task.proof = proofs
            .tree_digest(&root, &task.gate.input_globs(), excluded)
            .map(|tree| plan::ProofBasis { tree, excluded: excluded.clone() });
    }
}

/// The trees read for proofs since the last report (in verbose output),
/// and, when proofs were `needed`, why some could not be made or judged.
fn report_proof_news(proofs: &mut Proofs, needed: bool, reporter: &mut dyn Reporter) {
    for reading in proofs.take_readings() {
        reporter.event(&Event::TreeRead { root: &reading.root, files: reading.files, hashed: reading.hashed });
    }
    if needed {
        for problem in proofs.take_problems() {
            reporter.event(&Event::Warning(&format!("gate-check: warning: {problem}")));
        }
    }
}

/// Each gate's state as its ledger says, by ledger and gate; with
/// `digests`, from the definition digests already computed.
pub(crate) fn gate_states(setup: &Setup, digests: Option<&[Vec<Option<String>>]>) -> Vec<Vec<GateState>> {
    setup
        .ledgers
        .iter()
        .enumerate()
        .map(|(index, ledger)| {
            ledger
                .document
                .gates
                .iter()
                .enumerate()
                .map(|(at, gate)| {
                    let abandoned = ledger.document.is_abandoned(gate.id());
                    match digests {
                        Some(digests) => {
                            evidence::gate_state_with_digest(gate, abandoned, digests[index][at].as_deref())
                        }
                        None => evidence::gate_state(gate, abandoned),
                    }
                })
                .collect()
        })
        .collect()
}

/// Admits each task by approval and runs the admitted checks, each as soon
/// as it is approved; reports each result in ledger order, and writes
/// results back in batches as they arrive.
fn run_checks(
    options: &CheckConfig,
    runtime: &Runtime,
    setup: &Setup,
    tasks: Vec<Task>,
    containment: &Containment,
    proofs: &mut Proofs,
    reporter: &mut dyn Reporter,
) -> Result<(Approvals, Executed), Error> {
    if let Some(sandbox) = &runtime.sandbox {
        reporter.event(&Event::Sandbox(&sandbox.record));
    }
    let mut run = Run::new(options, runtime, setup, &tasks, proofs, reporter);
    run.executed.sandbox = runtime.sandbox.as_ref().map(|sandbox| sandbox.record.clone());
    pool::run_rolling(
        &tasks,
        options.jobs.get(),
        containment,
        |task| evaluate::evaluate(task, runtime, options.timeout, containment),
        |progress| run.handle(progress),
    );
    run.persist();
    if let Err(problem) = run.proofs.finish() {
        run.reporter.event(&Event::Warning(&format!("gate-check: warning: receipts not kept: {problem}")));
    }
    let Run { admitted, approval_failures, check_failures, write_failures, executed, .. } = run;
    if write_failures.is_empty() {
        Ok((Approvals { tasks, admitted, failures: approval_failures, check_failures }, executed))
    } else {
        Err(Error::WriteBack(write_failures))
    }
}

/// The consumer of one pool run: handles its progress one message at a
/// time, on the calling thread, and owns everything the run accumulates.
struct Run<'a> {
    options: &'a CheckConfig,
    runtime: &'a Runtime,
    setup: &'a Setup,
    tasks: &'a [Task],
    proofs: &'a mut Proofs,
    reporter: &'a mut dyn Reporter,
    admitted: Vec<bool>,
    approval_failures: usize,
    /// Checks gate-check's own resources could not start: not results.
    check_failures: usize,
    write_failures: Vec<WriteBackFailure>,
    /// Results not yet written back, by task index.
    pending: Vec<(usize, CheckResult)>,
    oldest_pending: Option<Instant>,
    executed: Executed,
}

impl<'a> Run<'a> {
    fn new(
        options: &'a CheckConfig,
        runtime: &'a Runtime,
        setup: &'a Setup,
        tasks: &'a [Task],
        proofs: &'a mut Proofs,
        reporter: &'a mut dyn Reporter,
    ) -> Run<'a> {
        Run {
            options,
            runtime,
            setup,
            tasks,
            proofs,
            reporter,
            admitted: Vec::with_capacity(tasks.len()),
            approval_failures: 0,
            check_failures: 0,
            write_failures: Vec::new(),
            pending: Vec::new(),
            oldest_pending: None,
            executed: Executed::default(),
        }
    }

    fn handle(&mut self, progress: Progress<CheckResult>) {
        match progress {
            Progress::Admit(admission) => self.admit(admission),
            Progress::Finished(index, result) => self.finished(index, result),
            Progress::Started(index) => {
                self.reporter.event(&Event::CheckLaunched(self.tasks[index].run_line(self.runtime)));
            }
            Progress::Slow(index, seconds) => {
                self.reporter.event(&Event::CheckSlow { qualified: &self.tasks[index].qualified, seconds });
            }
            Progress::Running(line) => self.reporter.event(&Event::Progress(line.as_deref())),
            Progress::Interrupted(interruption) => self.executed.interrupted_by = Some(interruption),
            // Output is written once per look, not once per line: a reader
            // of a pipe is then woken a few times a second, not once per
            // result.
            Progress::Looked if self.oldest_pending.is_some_and(|since| since.elapsed() >= pool::WRITE_BACK_AFTER) => {
                self.persist();
            }
            Progress::Looked => self.reporter.flush(),
        }
    }

    /// Decides, in task order, which tasks run; the pool starts each
    /// admitted one at once.
    fn admit(&mut self, admission: &pool::Admission) {
        let admitted = &mut self.admitted;
        let admit = |runs| {
            admission.admit(runs);
            admitted.push(runs);
        };
        let (options, runtime, tasks) = (self.options, self.runtime, self.tasks);
        self.approval_failures =
            approve::seek_approvals(options.mode.approves(), runtime, &self.setup.ledgers, tasks, self.reporter, admit);
        let reason = if options.mode.approves() { "approval could not be recorded" } else { "approval required" };
        for (task, admitted) in tasks.iter().zip(&self.admitted) {
            if *admitted {
                self.reporter.event(&Event::CheckStarted(task.run_line(runtime)));
            } else {
                self.executed.checks.insert((task.ledger, task.gate.id().to_string()), not_run_record(reason));
            }
        }
        self.reporter.flush();
    }

    /// The next result in task order: reported now, written back with the
    /// next batch; a check without a result of its gate is only recorded.
    fn finished(&mut self, index: usize, result: CheckResult) {
        let task = &self.tasks[index];
        let key = (task.ledger, task.gate.id().to_string());
        match &result.unjudged {
            Some(Unjudged::Resources(failure)) => {
                let line = error_line(&format!("could not run {}: {failure}", task.qualified));
                self.reporter.event(&Event::Warning(&line));
                self.check_failures += 1;
                self.executed.checks.insert(key, not_run_record("infrastructure failure"));
            }
            Some(Unjudged::InterruptedWhileRunning) => {
                self.reporter.event(&Event::CheckInterrupted { qualified: &task.qualified, title: task.gate.title() });
                self.executed.interrupted.push(task.qualified.clone());
                self.executed
                    .checks
                    .insert(key, CheckRecord { status: CheckStatus::Interrupted, ..result.record(true) });
            }
            Some(Unjudged::InterruptedBeforeStart) => {
                self.executed.checks.insert(key, not_run_record("run interrupted"));
            }
            None => {
                let passed = result.ok();
                let tail = (self.options.show_output && !passed)
                    .then(|| OutputTail::of(&result.output, tail::SHOWN_LINES, tail::SHOWN_BYTES));
                self.reporter.event(&Event::CheckFinished(FinishedCheck {
                    qualified: &task.qualified,
                    title: task.gate.title(),
                    passed,
                    reason: result.error.as_deref(),
                    outcome: &result.outcome_line(),
                    duration: result.duration,
                    tail: tail.as_ref(),
                }));
                self.pending.push((index, result));
                self.oldest_pending.get_or_insert_with(Instant::now);
            }
        }
    }

    /// Writes the pending results back, one transaction per ledger.
    fn persist(&mut self) {
        let (options, runtime, setup, tasks) = (self.options, self.runtime, self.setup, self.tasks);
        for (ledger_index, ledger) in setup.ledgers.iter().enumerate() {
            let (indexes, batch): (Vec<usize>, Vec<(&Task, &CheckResult)>) = self
                .pending
                .iter()
                .filter(|(index, _)| tasks[*index].ledger == ledger_index)
                .map(|(index, result)| (*index, (&tasks[*index], result)))
                .unzip();
            if indexes.is_empty() {
                continue;
            }
            let state_root = setup.target.state_root(&setup.root, &ledger.path);
            match write_back::write_back(options.mode.reverifies(), runtime, &state_root, ledger, &batch) {
                Ok(decisions) => {
                    let mut proven = Vec::new();
                    for ((index, (task, result)), decision) in indexes.iter().zip(&batch).zip(decisions) {
                        let written = !matches!(decision, WriteBack::Stale);
                        self.executed.checks.insert((task.ledger, task.gate.id().to_string()), result.record(written));
                        if !written {
                            self.reporter.event(&Event::ResultStale { qualified: &task.qualified });
                            self.executed.stale.push(*index);
                        } else if options.mode.reverifies() && task.starting_state == GateState::Met {
                            self.executed.reverified += 1;
                        }
                        if let (WriteBack::Proven(evidence), Some(basis)) = (decision, &task.proof) {
                            proven.push(Proven {
                                ledger: ledger.path.clone(),
                                gate: task.gate.id().to_string(),
                                evidence,
                                tree: basis.tree.clone(),
                                inputs: task.gate.input_globs(),
                                excluded: basis.excluded.clone(),
                            });
                        }
                    }
                    if let Err(problem) = self.proofs.keep(&state_root, proven) {
                        let line = format!("gate-check: warning: receipts not kept: {problem}");
                        self.reporter.event(&Event::Warning(&line));
                    }
                }
                Err(source) => self.write_failures.push(WriteBackFailure { path: ledger.path.clone(), source }),
            }
        }
        self.pending.clear();
        self.oldest_pending = None;
        self.reporter.flush();
    }
}

/// Ends an interrupted run: results that finished were written back, the
/// checks it stopped changed nothing; no verdict is given.
fn report_interruption(
    options: &CheckConfig,
    interruption: crate::runner::Interruption,
    stopped: &[String],
    reporter: &mut dyn Reporter,
) -> Exit {
    let exit = Exit::Interrupted(interruption.number());
    reporter.event(&Event::Interrupted { signal: interruption.name(), stopped });
    if reporter.needs_records() {
        let message = format!("interrupted by {}", interruption.name());
        let mut report = RunReport::failed(options.mode.name().to_string(), vec![message], vec![None]);
        report.outcome = "interrupted";
        report.exit_code = i32::from(exit.code());
        reporter.event(&Event::Report(&report));
    }
    reporter.flush();
    exit
}

fn not_run_record(reason: &str) -> CheckRecord {
    CheckRecord {
        status: CheckStatus::NotRun,
        exit: None,
        signal: None,
        duration_ms: None,
        reason: Some(reason.to_string()),
        output_sha256: None,
        output_tail: None,
    }
}

/// Reports per-ledger lines and the verdict, and the machine record when a
/// reporter needs it; returns the exit status.
fn summarize(
    options: &CheckConfig,
    setup: &Setup,
    approvals: &Approvals,
    executed: Executed,
    proofs: &mut Proofs,
    reporter: &mut dyn Reporter,
) -> Result<Exit, Error> {
    let (finals, target) = (&setup.ledgers, &setup.target);
    // Machine records carry every runnable gate's digest; hashing each
    // definition here serves both them and the gate's state.
    let digests: Option<Vec<Vec<Option<String>>>> = reporter.needs_records().then(|| {
        finals.iter().map(|ledger| ledger.document.gates.iter().map(evidence::gate_digest).collect()).collect()
    });
    let states = gate_states(setup, digests.as_deref());
    let proof_states = proofs.judge(setup, &states);
    report_proof_news(proofs, !proof_states.is_empty(), reporter);
    for (index, ledger) in finals.iter().enumerate() {
        if options.mode.is_status() {
            report_unmet(options, setup, index, &states[index], &proof_states, reporter);
        }
        let file_name = ledger.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        reporter.event(&Event::LedgerSummary { file_name: &file_name, gates: ledger.document.gates.len() });
    }
    if !options.proof {
        if let Some(warning) = proof_warning(setup, &proof_states) {
            reporter.event(&Event::Warning(&warning));
        }
    }

    // A scope is complete only when its ledgers and its dispatch waves are;
    // completion must not depend on callers remembering `dispatch status`.
    // A `--gate` run judges its gates only; waves belong to the whole scope.
    let waves = if setup.selection.is_some() {
        crate::dispatch::DispatchSummary::default()
    } else {
        crate::dispatch::aggregate(&setup.root, target.scope.as_deref())?
    };
    if options.mode.is_status() {
        for wave in &waves.blocking {
            reporter.event(&Event::WaveUnmet { wave });
        }
    }
    let facts = RunFacts {
        reverify: options.mode.reverifies(),
        reran: approvals.runnable().count(),
        reverified: executed.reverified,
        approval_failures: approvals.failures,
        check_failures: approvals.check_failures,
        not_rerun_met: approvals
            .not_run()
            .filter(|task| task.starting_state == GateState::Met)
            .map(|task| (task.ledger, task.gate.id(), task.qualified.as_str()))
            .collect(),
        stale: executed
            .stale
            .iter()
            .map(|&index| &approvals.tasks[index])
            .map(|task| (task.ledger, task.gate.id(), task.qualified.as_str()))
            .collect(),
        selection: setup.selection.as_ref(),
        unproven: if options.proof { not_current(setup, &proof_states) } else { Vec::new() },
    };
    // Only a machine report shows every unmet id; the human one lists a few.
    let kept = if reporter.needs_records() { verdict::UnmetIds::All } else { verdict::UnmetIds::Listed };
    let mut verdict = verdict::verdict(finals, &states, &facts, &waves, target.scope.as_deref(), kept);
    verdict.left_out = plan::judge_left_out(&setup.root, &setup.left_out);
    reporter.event(&Event::Verdict(&verdict));
    // Oracles left pending for approval are why this run is unmet; the
    // command that shows and approves exactly them is the next step.
    let next = (!options.mode.approves() && approvals.failures == 0 && approvals.not_run().next().is_some())
        .then(|| options.approve_command.clone());
    if let Some(next) = &next {
        reporter.event(&Event::NextCommand(next));
    }
    if let Some(digests) = digests {
        let judged = Judged { states: &states, proofs: &proof_states };
        let mut report = run_report(options, setup, judged, digests, executed.checks, &verdict, &waves);
        report.next_command = next;
        report.sandbox = executed.sandbox;
        reporter.event(&Event::Report(&report));
    }
    reporter.flush();
    Ok(verdict.exit())
}

/// `--status`: the ledger's gates that do not count as met, each with its
/// reason; with `--proof`, a met gate whose proof is not current too.
fn report_unmet(
    options: &CheckConfig,
    setup: &Setup,
    index: usize,
    states: &[GateState],
    proofs: &ProofStates,
    reporter: &mut dyn Reporter,
) {
    let ledger = &setup.ledgers[index];
    let prefix = crate::ledger::qualify(&ledger.path, "");
    // One buffer for every qualified id: a large ledger's unmet list costs
    // no allocation per line.
    let mut qualified = String::new();
    let lists_met = reporter.lists_met();
    for (at, (gate, state)) in ledger.document.gates.iter().zip(states).enumerate() {
        if !setup.selects(index, gate.id()) {
            continue;
        }
        let proof_reason = match (state, options.proof) {
            (GateState::Met, true) => proofs.get(index, at).and_then(|proof| proof.reason()),
            _ => None,
        };
        let reason = match state {
            GateState::Met | GateState::Abandoned => match &proof_reason {
                Some(reason) => reason.as_str(),
                None => {
                    if lists_met && *state == GateState::Met {
                        qualified.clear();
                        qualified.extend([prefix.as_str(), gate.id()]);
                        reporter.event(&Event::GateMet { qualified: &qualified, title: gate.title() });
                    }
                    continue;
                }
            },
            _ => state.reason(),
        };
        qualified.clear();
        qualified.extend([prefix.as_str(), gate.id()]);
        reporter.event(&Event::GateUnmet { qualified: &qualified, reason, title: gate.title() });
    }
}

/// How many gates a proof warning names.
const WARNED_PROOFS: usize = 5;

/// The one warning a run without `--proof` gives about met gates whose
/// proof is not current: how many, which (with what changed), and the
/// command that proves them. The decision is unchanged.
fn proof_warning(setup: &Setup, proofs: &ProofStates) -> Option<String> {
    let open: Vec<((usize, usize), &crate::proof::ProofState)> =
        proofs.iter().filter(|(_, proof)| !proof.is_current()).collect();
    if open.is_empty() {
        return None;
    }
    let stale = open.iter().filter(|(_, proof)| matches!(proof, crate::proof::ProofState::Stale { .. })).count();
    let named: Vec<String> = open
        .iter()
        .take(WARNED_PROOFS)
        .filter_map(|((ledger, at), proof)| {
            let gate = &setup.ledgers[*ledger].document.gates[*at];
            let qualified = crate::ledger::qualify(&setup.ledgers[*ledger].path, gate.id());
            Some(format!("{qualified} {}", proof.reason()?))
        })
        .collect();
    let mut named = named.join("; ");
    if open.len() > WARNED_PROOFS {
        named.push_str(&format!("; +{} more", open.len() - WARNED_PROOFS));
    }
    Some(format!(
        "gate-check: warning: {} met gate(s) not proven on this tree ({stale} stale, {} unproven): {named}; prove them \
         with: gate-check --proof",
        open.len(),
        open.len() - stale
    ))
}

/// `--proof`: the met gates whose proof is not current, as the verdict
/// counts them.
fn not_current<'a>(setup: &'a Setup, proofs: &ProofStates) -> Vec<(usize, &'a str, String, String)> {
    proofs
        .iter()
        .filter_map(|((ledger, at), proof)| {
            let gate = &setup.ledgers[ledger].document.gates[at];
            let qualified = crate::ledger::qualify(&setup.ledgers[ledger].path, gate.id());
            Some((ledger, gate.id(), qualified, proof.reason()?))
        })
        .collect()
}

/// The options that chose the gates of a selective run, as given.
fn selected_by(options: &CheckConfig) -> String {
    let mut by = Vec::new();
    if !options.gates.is_empty() {
        by.push("--gate".to_string());
    }
    if let Some(partition) = options.partition {
        by.push(format!("--partition {}", partition.text()));
    }
    by.join(" and ")
}

/// The machine record of a finished run; built only for reporters that
/// render it.
/// What the run made of each gate: its state on disk and its proof.
struct Judged<'a> {
    states: &'a [Vec<GateState>],
    proofs: &'a ProofStates,
}

fn run_report(
    options: &CheckConfig,
    setup: &Setup,
    Judged { states, proofs }: Judged,
    digests: Vec<Vec<Option<String>>>,
    mut checks: HashMap<(usize, String), CheckRecord>,
    verdict: &Verdict,
    waves: &crate::dispatch::DispatchSummary,
) -> RunReport {
    let mut gates = Vec::new();
    let doubts: HashMap<(usize, &str), &str> =
        verdict.doubts.iter().map(|doubt| ((doubt.ledger, doubt.id.as_str()), doubt.reason.as_str())).collect();
    for (index, ((ledger, states), digests)) in setup.ledgers.iter().zip(states).zip(digests).enumerate() {
        let prefix = crate::ledger::qualify(&ledger.path, "");
        for (at, ((gate, state), digest)) in ledger.document.gates.iter().zip(states).zip(digests).enumerate() {
            let doubt = doubts.get(&(index, gate.id())).copied();
            gates.push(GateRecord {
                ledger: ledger.text_path.clone(),
                line: gate.line() + 1,
                id: gate.id().to_string(),
                qualified_id: [prefix.as_str(), gate.id()].concat(),
                title: gate.title().to_string(),
                state: if doubt.is_some() { RecordState::Unverified } else { (*state).into() },
                reason: doubt.map(str::to_string),
                checked: gate.checked(),
                runnable: gate.is_runnable(),
                definition_digest: digest,
                selected: setup.selection.as_ref().map(|selection| selection.contains(index, gate.id())),
                check: checks.remove(&(index, gate.id().to_string())),
                proof: proofs.get(index, at).map(crate::proof::ProofState::record),
            });
        }
    }
    RunReport {
        schema: 1,
        tool: "gate-check",
        version: env!("CARGO_PKG_VERSION"),
        mode: options.mode.name().to_string(),
        scope: setup.target.scope.clone(),
        sandbox: None,
        not_targeted: setup.left_out.iter().map(|path| path.display().to_string()).collect(),
        not_targeted_unmet: verdict.left_out.as_ref().map(|left_out| left_out.unmet.clone()),
        outcome: verdict.outcome.name(),
        exit_code: i32::from(verdict.exit().code()),
        summary: Summary {
            met: verdict.confirmed_met,
            unmet: verdict.unmet,
            abandoned: verdict.abandoned,
            reran: verdict.reran,
            previously_met_reverified: verdict.reverified,
            not_selected: verdict.not_selected,
        },
        unmet: verdict.unmet_ids.clone(),
        abandoned: verdict.abandoned_ids.clone(),
        ledgers: setup
            .ledgers
            .iter()
            .map(|l| LedgerRecord { path: l.text_path.clone(), gates: l.document.gates.len() })
            .collect(),
        gates,
        waves: WaveRecords { blocking: waves.blocking.clone(), abandoned: waves.abandoned.clone() },
        errors: Vec::new(),
        error_places: Vec::new(),
        next_command: None,
        selected_by: selected_by(options),
    }
}
