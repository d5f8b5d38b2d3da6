//! One baseline run, on the checker's machinery: `check::plan` targets the
//! ledgers and plans every selected runnable gate with its exact approval
//! oracle (as `--reverify` would), `check::approve` admits only approved
//! ones, `check::pool` runs each admitted gate's check twice (on the work
//! tree, unless its proof is current, and on REF's checkout from
//! `checkout`, confined there), and `check::evaluate` judges each run.
//! Nothing is written: no ledger, no receipt, no approval.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::record::{
    judge, BaseConfinement, BaselineEvent, BaselineReport, GateResult, Header, Reference, Side, SideRecord, Summary,
};
use super::BaselineError;
use crate::check::evaluate::{self, CheckResult, Unjudged};
use crate::check::events::{Event, Reporter, RunLine};
use crate::check::plan::{self, Runtime, Setup, Task};
use crate::check::pool::{self, Labelled, Progress};
use crate::check::{approve, CheckConfig};
use crate::checkout::{Checkout, CheckoutError, Repository};
use crate::config::Environment;
use crate::diagnostic::error_line;
use crate::error::Error;
use crate::evidence::{self, Transcript, MAX_OUTPUT_BYTES};
use crate::exit::Exit;
use crate::proof::ProofState;
use crate::report::record::{CheckRecord, CheckStatus, SandboxRecord};
use crate::report::tail::{self, OutputTail};
use crate::runner::{CheckRequest, ChildEnvironment, Confinement, Containment, Interruption, WriteRoot};

/// `gate-check baseline REF`, resolved from the command line.
#[derive(Debug, Clone)]
pub struct BaselineConfig {
    /// Targeting, jobs, timeout, shell, stores, format, `--gate`,
    /// `--partition`, `--show-output`, and `--sandbox` for the runs on the
    /// work tree (its mode re-verifies: every selected gate is judged).
    pub check: CheckConfig,
    /// REF, as given.
    pub reference: String,
    /// `--unconfined`: the runs on REF are not confined.
    pub unconfined: bool,
    /// `--sandbox-keep-env`: variables a confined run inherits although
    /// they look like credentials.
    pub keep_env: Vec<String>,
    /// The checker's `--approve` command for the same targeting, without
    /// its `--gate`s and files: what approves the gates left unapproved.
    pub approve_words: Vec<String>,
    /// The ledger files as the approve command names them.
    pub approve_files: Vec<String>,
}

/// Where one run of a gate's check happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// The work tree as it is now.
    Now,
    /// REF's checkout.
    Base,
}

/// One run of one task's check.
struct Job {
    task: usize,
    place: Place,
    /// `GATES:D1`, or `GATES:D1 on abc1234`.
    label: String,
    cwd: PathBuf,
    cwd_text: String,
}

impl Labelled for Job {
    fn label(&self) -> &str {
        &self.label
    }
}

/// How the runs on REF are made.
struct BaseRuns {
    environment: ChildEnvironment,
    confinement: Option<(Confinement, WriteRoot)>,
    record: Option<SandboxRecord>,
}

impl BaseRuns {
    /// Confined to the checkout (and a private TMPDIR) unless
    /// `--unconfined`; a machine that cannot confine refuses the run.
    fn prepare(
        config: &BaselineConfig,
        env: &Environment,
        checkout: &Checkout,
        short: &str,
    ) -> Result<BaseRuns, Error> {
        if config.unconfined {
            return Ok(BaseRuns {
                environment: ChildEnvironment::new(&env.variables),
                confinement: None,
                record: None,
            });
        }
        let unconfinable = |source| BaselineError::Unconfinable { short: short.to_string(), source };
        let protected = plan::protected_places(env, &config.check);
        let fence = WriteRoot::new(checkout.path(), &protected).map_err(unconfinable)?;
        let (environment, sandbox) =
            plan::Sandbox::confine(vec![fence.clone()], &config.keep_env, env).map_err(unconfinable)?;
        Ok(BaseRuns { environment, confinement: Some((sandbox.confinement, fence)), record: Some(sandbox.record) })
    }
}

/// Where a task's check runs on REF, or why it cannot.
enum BasePlace {
    Run(PathBuf),
    Unknown(String),
}

/// The gate's CWD (`cwd`, which exists now) at the same place under the
/// checkout: the same path relative to the work tree. It must exist there
/// as a directory, and not lead out of the checkout through a link.
fn map_cwd(cwd: &Path, work_tree: &Path, checkout: &Path) -> BasePlace {
    let canonical = crate::durable::real_path(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let Some(relative) = crate::paths::strip_prefix(&canonical, work_tree) else {
        return BasePlace::Unknown(format!("its CWD {} lies outside the repository", cwd.display()));
    };
    let shown = if relative.as_os_str().is_empty() { ".".to_string() } else { relative.display().to_string() };
    match crate::durable::real_path(&checkout.join(&relative)) {
        Err(_) => BasePlace::Unknown(format!("its CWD {shown} does not exist there")),
        Ok(mapped) if !crate::paths::is_inside(checkout, &mapped) => {
            BasePlace::Unknown(format!("its CWD {shown} leads out of the checkout there (a link)"))
        }
        Ok(mapped) if !mapped.is_dir() => BasePlace::Unknown(format!("its CWD {shown} is not a directory there")),
        Ok(mapped) => BasePlace::Run(mapped),
    }
}

/// Passes everything on, except that a pending oracle's `NOT RUN` says
/// how baseline's consent works (it approves nothing itself).
struct Relay<'r> {
    inner: &'r mut dyn Reporter,
}

impl Reporter for Relay<'_> {
    fn event(&mut self, event: &Event) {
        match event {
            Event::NotRun => self.inner.event(&Event::Baseline(BaselineEvent::NotRun)),
            other => self.inner.event(other),
        }
    }

    fn needs_records(&self) -> bool {
        self.inner.needs_records()
    }

    fn flush(&mut self) {
        self.inner.flush();
    }
}

/// How a task's check went now.
enum Now {
    /// Its current proof stands in for the run: when it was proven.
    Proven(String),
    Ran(CheckResult),
}

/// Everything one pool run collects, handled on the calling thread.
struct Collected {
    admitted: Vec<bool>,
    now: Vec<Option<Now>>,
    base: Vec<Option<CheckResult>>,
    /// Jobs each task still waits for.
    waiting: Vec<usize>,
    /// The first task whose result is not reported yet.
    next: usize,
    results: Vec<GateResult>,
    approval_failures: usize,
    check_failures: usize,
    interrupted_by: Option<Interruption>,
    /// Labels of the runs an interrupt stopped.
    stopped: Vec<String>,
    /// An interrupt stopped or kept back a run: nothing more is judged.
    halted: bool,
}

/// Runs the baseline: the exit status, or the error that stopped it. The
/// checkout is removed when this returns, whichever way it returns.
pub fn execute(
    config: &BaselineConfig,
    env: &Environment,
    containment: &Containment,
    reporter: &mut dyn Reporter,
) -> Result<Exit, Error> {
    let options = &config.check;
    let setup = plan::prepare(options, reporter)?;
    let repository = Repository::discover(&setup.root).map_err(BaselineError::from)?;
    let commit = repository.resolve(&config.reference).map_err(BaselineError::from)?;
    let runtime = plan::build_runtime(options, env, &setup)?;
    let tasks = plan::plan_tasks(options, &setup, &runtime, None)?;
    if tasks.is_empty() {
        return Err(BaselineError::NothingToJudge.into());
    }
    let proven = current_proofs(options, &setup, &runtime, &tasks);
    let reference =
        Reference { given: commit.reference.clone(), commit: commit.id.clone(), short_commit: commit.short.clone() };
    // From here on an interrupt ends the run through its cleanup.
    containment.catch_interrupts();
    let checkout = match repository.check_out(&commit, &|| containment.interruption().is_some()) {
        Err(CheckoutError::Interrupted(_)) => {
            let interruption = containment.interruption().unwrap_or(Interruption::Interrupt);
            return Ok(interrupted(interruption, &[], Some(reference), reporter));
        }
        other => other.map_err(BaselineError::from)?,
    };
    let base = BaseRuns::prepare(config, env, &checkout, &commit.short)?;
    let header = Header {
        reference: reference.clone(),
        base: base.record.clone().map_or(BaseConfinement::Unconfined, BaseConfinement::Confined),
        now: runtime.sandbox.as_ref().map(|sandbox| sandbox.record.clone()),
    };
    reporter.event(&Event::Baseline(BaselineEvent::Header(&header)));

    let mut jobs = Vec::new();
    let mut base_unknown: Vec<Option<String>> = Vec::with_capacity(tasks.len());
    for (index, task) in tasks.iter().enumerate() {
        if !proven.contains_key(&(task.ledger, task.gate.id().to_string())) {
            let cwd_text = task.oracle.cwd.clone();
            jobs.push(Job {
                task: index,
                place: Place::Now,
                label: task.qualified.clone(),
                cwd: task.cwd.clone(),
                cwd_text,
            });
        }
        match map_cwd(&task.cwd, repository.work_tree(), checkout.path()) {
            BasePlace::Run(cwd) => {
                let label = format!("{} on {}", task.qualified, commit.short);
                let cwd_text = cwd.display().to_string();
                jobs.push(Job { task: index, place: Place::Base, label, cwd, cwd_text });
                base_unknown.push(None);
            }
            BasePlace::Unknown(reason) => base_unknown.push(Some(reason)),
        }
    }
    let mut collected = Collected {
        admitted: Vec::with_capacity(tasks.len()),
        now: tasks
            .iter()
            .map(|task| proven.get(&(task.ledger, task.gate.id().to_string())).cloned().map(Now::Proven))
            .collect(),
        base: tasks.iter().map(|_| None).collect(),
        waiting: jobs.iter().fold(vec![0; tasks.len()], |mut waiting, job| {
            waiting[job.task] += 1;
            waiting
        }),
        next: 0,
        results: Vec::with_capacity(tasks.len()),
        approval_failures: 0,
        check_failures: 0,
        interrupted_by: None,
        stopped: Vec::new(),
        halted: false,
    };
    let context = Context {
        config,
        setup: &setup,
        runtime: &runtime,
        tasks: &tasks,
        reference: &reference,
        base_unknown: &base_unknown,
    };
    let evaluate_one = |job: &Job| {
        let task = &tasks[job.task];
        match job.place {
            Place::Now => evaluate::evaluate(task, &runtime, options.timeout, containment),
            Place::Base => {
                let request = CheckRequest {
                    shell: &runtime.shell,
                    environment: &base.environment,
                    command: task.gate.check().unwrap_or(""),
                    cwd: &job.cwd,
                    timeout: options.timeout,
                    max_output_bytes: MAX_OUTPUT_BYTES,
                    confinement: base.confinement.as_ref().map(|(confinement, fence)| (confinement, fence)),
                };
                evaluate::run_and_judge(&request, task.expectation.as_deref(), containment)
            }
        }
    };
    pool::run_rolling(&jobs, options.jobs.get(), containment, evaluate_one, |progress| {
        handle(&context, &jobs, &mut collected, progress, reporter);
    });
    if let Some(interruption) = collected.interrupted_by {
        return Ok(interrupted(interruption, &collected.stopped, Some(reference), reporter));
    }
    context.report_ready(&mut collected, reporter);
    Ok(finish(&context, collected, base.record, reporter))
}

/// What judging a pool run's results needs.
struct Context<'a> {
    config: &'a BaselineConfig,
    setup: &'a Setup,
    runtime: &'a Runtime,
    tasks: &'a [Task],
    reference: &'a Reference,
    /// Why a task's check cannot run on REF, by task.
    base_unknown: &'a [Option<String>],
}

fn handle(
    context: &Context,
    jobs: &[Job],
    collected: &mut Collected,
    progress: Progress<CheckResult>,
    reporter: &mut dyn Reporter,
) {
    match progress {
        Progress::Admit(admission) => {
            let mut relay = Relay { inner: &mut *reporter };
            let (mut task, mut job) = (0, 0);
            let (admitted, waiting) = (&mut collected.admitted, &mut collected.waiting);
            collected.approval_failures = approve::seek_approvals(
                false,
                context.runtime,
                &context.setup.ledgers,
                context.tasks,
                &mut relay,
                |runs| {
                    while jobs.get(job).is_some_and(|next| next.task == task) {
                        admission.admit(runs);
                        job += 1;
                    }
                    admitted.push(runs);
                    // A task that does not run waits for nothing.
                    if !runs {
                        waiting[task] = 0;
                    }
                    task += 1;
                },
            );
            context.report_ready(collected, reporter);
        }
        Progress::Started(index) => {
            let job = &jobs[index];
            let runtime = context.runtime;
            reporter.event(&Event::CheckLaunched(RunLine {
                qualified: &job.label,
                shell: &runtime.shell_text,
                cwd: &job.cwd_text,
                path_transcript: &runtime.path_transcript,
            }));
        }
        Progress::Slow(index, seconds) => reporter.event(&Event::CheckSlow { qualified: &jobs[index].label, seconds }),
        Progress::Running(line) => reporter.event(&Event::Progress(line.as_deref())),
        Progress::Interrupted(interruption) => collected.interrupted_by = Some(interruption),
        Progress::Looked => reporter.flush(),
        Progress::Finished(index, result) => {
            let job = &jobs[index];
            match &result.unjudged {
                Some(Unjudged::InterruptedWhileRunning) => {
                    collected.stopped.push(job.label.clone());
                    collected.halted = true;
                }
                Some(Unjudged::InterruptedBeforeStart) => collected.halted = true,
                Some(Unjudged::Resources(failure)) => {
                    reporter.event(&Event::Warning(&error_line(&format!("could not run {}: {failure}", job.label))));
                    collected.check_failures += 1;
                }
                None => {}
            }
            match job.place {
                Place::Now => collected.now[job.task] = Some(Now::Ran(result)),
                Place::Base => collected.base[job.task] = Some(result),
            }
            collected.waiting[job.task] -= 1;
            // An interrupted run gives no result, not even of what finished.
            if !collected.halted {
                context.report_ready(collected, reporter);
            }
        }
    }
}

impl Context<'_> {
    /// Reports, in ledger order, every task whose runs are all done.
    fn report_ready(&self, collected: &mut Collected, reporter: &mut dyn Reporter) {
        while collected.next < collected.admitted.len() && collected.waiting[collected.next] == 0 {
            let index = collected.next;
            let (gate, tail) = self.result(index, collected);
            reporter.event(&Event::Baseline(BaselineEvent::Judged {
                gate: &gate,
                reference: self.reference,
                tail: tail.as_ref(),
            }));
            collected.results.push(gate);
            collected.next += 1;
        }
    }

    /// One task's result, and the output a `--show-output` run shows of
    /// the run that tells the most.
    fn result(&self, index: usize, collected: &mut Collected) -> (GateResult, Option<OutputTail>) {
        let task = &self.tasks[index];
        let ledger = &self.setup.ledgers[task.ledger];
        let mut gate = GateResult {
            ledger: ledger.text_path.clone(),
            line: task.gate.line() + 1,
            id: task.gate.id().to_string(),
            qualified_id: task.qualified.clone(),
            title: task.gate.title().to_string(),
            result: super::record::Judgement::ApprovalRequired,
            reason: Some("no approval for this exact oracle".to_string()),
            now: None,
            base: None,
        };
        if !collected.admitted[index] {
            return (gate, None);
        }
        let now = collected.now[index].take();
        let base = collected.base[index].take();
        let now_side = match &now {
            Some(Now::Proven(_)) => Side::Passed,
            Some(Now::Ran(result)) => side_of(result),
            None => Side::Unknown("it did not run".to_string()),
        };
        let base_side = match (&base, &self.base_unknown[index]) {
            (_, Some(reason)) => Side::Unknown(reason.clone()),
            (Some(result), None) => side_of(result),
            (None, None) => Side::Unknown("it did not run".to_string()),
        };
        (gate.result, gate.reason) = judge(&now_side, &base_side);
        gate.now = now.as_ref().map(|now| match now {
            Now::Proven(at) => SideRecord {
                check: proven_record(),
                source: "proof",
                proven_at: Some(at.clone()),
                outcome: String::new(),
            },
            Now::Ran(result) => ran_record(result),
        });
        gate.base = base.as_ref().map(ran_record);
        let telling = match gate.result {
            super::record::Judgement::Discriminates => base.as_ref(),
            super::record::Judgement::Failing => match &now {
                Some(Now::Ran(result)) => Some(result),
                _ => None,
            },
            _ => None,
        };
        let tail = telling
            .filter(|_| self.config.check.show_output)
            .map(|result| OutputTail::of(&result.output, tail::SHOWN_LINES, tail::SHOWN_BYTES));
        (gate, tail)
    }
}

fn side_of(result: &CheckResult) -> Side {
    match &result.unjudged {
        Some(Unjudged::Resources(failure)) => Side::Unknown(format!("it could not be run: {failure}")),
        Some(_) => Side::Unknown("it was interrupted".to_string()),
        None if result.ok() => Side::Passed,
        None => Side::Failed,
    }
}

fn ran_record(result: &CheckResult) -> SideRecord {
    SideRecord { check: result.record(true), source: "run", proven_at: None, outcome: result.outcome_line() }
}

fn proven_record() -> CheckRecord {
    CheckRecord {
        status: CheckStatus::Pass,
        exit: None,
        signal: None,
        duration_ms: None,
        reason: None,
        output_sha256: None,
        output_tail: None,
    }
}

/// The selected met gates whose proof is current on this tree and whose
/// evidence was written under this run's oracle (shell, working directory,
/// PATH), with when they were proven: their runs now are not needed.
/// Read-only: a baseline never creates the receipt store or keeps a receipt.
fn current_proofs(
    options: &CheckConfig,
    setup: &Setup,
    runtime: &Runtime,
    tasks: &[Task],
) -> HashMap<(usize, String), String> {
    let roots = setup.target.state_roots(&setup.root);
    let mut proofs = crate::check::proof::Proofs::open(&options.receipts, &roots, false);
    let mut current: HashMap<(usize, String), String> = proofs
        .judge(setup, &crate::check::gate_states(setup, None))
        .iter()
        .filter_map(|((ledger, at), proof)| match proof {
            ProofState::Current { proven_at } => {
                Some(((ledger, setup.ledgers[ledger].document.gates[at].id().to_string()), proven_at.clone()))
            }
            _ => None,
        })
        .collect();
    tasks
        .iter()
        .filter(|task| {
            let transcript =
                Transcript { shell: &runtime.shell_text, cwd: &task.oracle.cwd, path: &runtime.path_summary };
            task.gate.evidence().is_some_and(|line| evidence::names_transcript(line, &transcript))
        })
        .filter_map(|task| {
            let key = (task.ledger, task.gate.id().to_string());
            current.remove_entry(&key)
        })
        .collect()
}

/// Ends an interrupted run: no verdict; the checkout goes with the return.
fn interrupted(
    interruption: Interruption,
    stopped: &[String],
    reference: Option<Reference>,
    reporter: &mut dyn Reporter,
) -> Exit {
    let exit = Exit::Interrupted(interruption.number());
    reporter.event(&Event::Interrupted { signal: interruption.name(), stopped });
    let mut report = BaselineReport::failed(
        vec![format!("interrupted by {}", interruption.name())],
        "interrupted",
        i32::from(exit.code()),
    );
    report.reference = reference;
    reporter.event(&Event::Baseline(BaselineEvent::Report(&report)));
    reporter.flush();
    exit
}

/// The verdict and the record: exit 0 only when every judged gate
/// discriminates, 2 when approvals or checks could not be run.
fn finish(
    context: &Context,
    collected: Collected,
    sandbox: Option<SandboxRecord>,
    reporter: &mut dyn Reporter,
) -> Exit {
    let Collected { results, approval_failures, check_failures, .. } = collected;
    let summary = Summary::of(&results);
    let mut errors = Vec::new();
    for (count, what) in [(approval_failures, "approval(s)"), (check_failures, "check(s)")] {
        if count > 0 {
            let line = format!("infrastructure failure prevented {count} {what}");
            reporter.event(&Event::Warning(&error_line(&line)));
            errors.push(line);
        }
    }
    let (outcome, exit) = match (errors.is_empty(), summary.all_discriminate()) {
        (false, _) => ("error", Exit::Error),
        (true, true) => ("all-discriminate", Exit::Met),
        (true, false) => ("not-all-discriminate", Exit::Unmet),
    };
    let unapproved: Vec<&str> = results
        .iter()
        .filter(|gate| gate.result == super::record::Judgement::ApprovalRequired)
        .map(|gate| gate.qualified_id.as_str())
        .collect();
    let next = (!unapproved.is_empty() && approval_failures == 0).then(|| approve_command(context.config, &unapproved));
    let report = BaselineReport {
        reference: Some(context.reference.clone()),
        unconfined: context.config.unconfined,
        sandbox,
        scope: context.setup.target.scope.clone(),
        summary,
        gates: results,
        next_command: next.clone(),
        ..BaselineReport::failed(errors, outcome, i32::from(exit.code()))
    };
    reporter.event(&Event::Baseline(BaselineEvent::Report(&report)));
    if let Some(next) = &next {
        reporter.event(&Event::NextCommand(next));
    }
    reporter.flush();
    exit
}

/// The checker's command that shows and approves exactly the gates
/// baseline could not run (it runs them too, and writes their results).
fn approve_command(config: &BaselineConfig, gates: &[&str]) -> String {
    let mut words = config.approve_words.clone();
    for gate in gates {
        words.push(format!("--gate {}", crate::shell_words::quote(gate)));
    }
    if config.approve_files.iter().any(|file| file.starts_with('-')) {
        words.push("--".into());
    }
    words.extend(config.approve_files.iter().cloned());
    words.join(" ")
}

// Symbolic links: Windows lets only administrators (or Developer Mode)
// create one, and wine 8, which runs the Windows tests, creates none.
#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_cwd_maps_to_the_same_place_under_the_checkout_or_says_why_not() {
        let base = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(base.path()).unwrap();
        let (work_tree, checkout) = (base.join("work"), base.join("checkout"));
        for directory in ["work/sub", "work/new", "checkout/sub", "outside"] {
            std::fs::create_dir_all(base.join(directory)).unwrap();
        }
        std::fs::write(checkout.join("new"), "a file on REF").unwrap();
        std::os::unix::fs::symlink(base.join("outside"), checkout.join("away")).unwrap();
        std::fs::create_dir(work_tree.join("away")).unwrap();
        let mapped = |cwd: &Path| match map_cwd(cwd, &work_tree, &checkout) {
            BasePlace::Run(path) => Ok(path),
            BasePlace::Unknown(reason) => Err(reason),
        };
        assert_eq!(mapped(&work_tree), Ok(checkout.clone()));
        assert_eq!(mapped(&work_tree.join("sub")), Ok(checkout.join("sub")));
        assert_eq!(mapped(&work_tree.join("gone")), Err("its CWD gone does not exist there".to_string()));
        assert_eq!(mapped(&work_tree.join("new")), Err("its CWD new is not a directory there".to_string()));
        assert_eq!(
            mapped(&work_tree.join("away")),
            Err("its CWD away leads out of the checkout there (a link)".to_string())
        );
        let outside = base.join("outside");
        assert_eq!(mapped(&outside), Err(format!("its CWD {} lies outside the repository", outside.display())));
    }
}
