//! What a run tells its reporters: the typed `Event` stream, the `Reporter`
//! trait that consumes it, and the small summaries events carry (a
//! finished check, the verdict). Nothing here holds a check's raw output or
//! the run's internals, so reporters depend on this module alone.

use std::path::Path;
use std::time::Duration;

use crate::approval::{Consent, Oracle};
use crate::baseline::record::BaselineEvent;
use crate::exit::Exit;
use crate::report::record::{IdList, RunReport, SandboxRecord};
use crate::report::tail::OutputTail;

/// What a RUN line shows of a check: where and how it runs.
#[derive(Debug, Clone, Copy)]
pub struct RunLine<'a> {
    pub qualified: &'a str,
    pub shell: &'a str,
    pub cwd: &'a str,
    pub path_transcript: &'a str,
}

/// One thing that happened in a run, in the order it happened.
pub enum Event<'a> {
    /// A diagnostic line for stderr (already prefixed `gate-check: `).
    Warning(&'a str),
    /// A pending oracle, shown in full before anything can approve it;
    /// `approving` when this run (`--approve`) approves it next.
    ApprovalRequired {
        approving: bool,
        qualified: &'a str,
        oracle: &'a Oracle,
        path_transcript: &'a str,
        /// The gate's `INPUTS:` as written: not part of the approval, but
        /// what its proof will depend on.
        inputs: Option<&'a str>,
        /// What approving it now consents to.
        consent: Consent,
    },
    /// The pending oracle shown last was approved before for this gate with
    /// another oracle: the bound fields that differ, or none when the
    /// earlier record does not say.
    ApprovalChanged {
        reasons: &'a [String],
    },
    /// The pending oracle shown last was not approved (no `--approve`).
    NotRun,
    /// The oracle shown last was approved; `record` is the approval file.
    Approved {
        record: &'a Path,
    },
    /// `--sandbox`: how every check of this run is confined; said once,
    /// before anything is approved or run.
    Sandbox(&'a SandboxRecord),
    /// The tree under a root was read for proofs: how many files it holds,
    /// and how many had to be hashed (the rest came from git's index or
    /// the stat cache).
    TreeRead {
        root: &'a str,
        files: usize,
        hashed: usize,
    },
    /// A check about to run, announced for every check before the first
    /// starts (the Node tool's RUN lines).
    CheckStarted(RunLine<'a>),
    /// The check really started (a worker picked it up).
    CheckLaunched(RunLine<'a>),
    /// The check is still running after `seconds` (5, 10, 20, ...).
    CheckSlow {
        qualified: &'a str,
        seconds: u64,
    },
    CheckFinished(FinishedCheck<'a>),
    /// An interrupt terminated this gate's check; nothing was written for it.
    CheckInterrupted {
        qualified: &'a str,
        title: &'a str,
    },
    /// The run was interrupted by `signal`; `stopped` lists the checks it
    /// terminated. Sent instead of the per-ledger lines and the verdict.
    Interrupted {
        signal: &'a str,
        stopped: &'a [String],
    },
    /// The gate changed while its check ran; the result was discarded.
    ResultStale {
        qualified: &'a str,
    },
    /// The live progress line, or `None` to remove it.
    Progress(Option<&'a str>),
    /// `--status`: one unmet gate.
    GateUnmet {
        qualified: &'a str,
        reason: &'a str,
        title: &'a str,
    },
    /// `--status` for a reporter that lists met gates (`-v`): one met gate
    /// (abandoned ones are listed in the verdict).
    GateMet {
        qualified: &'a str,
        title: &'a str,
    },
    /// `--status`: one dispatch wave blocking completion.
    WaveUnmet {
        wave: &'a str,
    },
    LedgerSummary {
        file_name: &'a str,
        gates: usize,
    },
    Verdict(&'a Verdict),
    /// The command that moves an unmet run on (approving what it showed).
    NextCommand(&'a str),
    /// The machine record of the whole run (also of a run that failed),
    /// sent only when some reporter `needs_records`.
    Report(&'a RunReport),
    /// What `baseline` says beside the checker's events.
    Baseline(BaselineEvent<'a>),
}

/// A consumer of run events. Write errors are the reporter's own business:
/// a closed pipe must not abort a run half way through its write-backs.
pub trait Reporter {
    fn event(&mut self, event: &Event);

    /// Whether this reporter needs `Event::Report`, which costs a record
    /// per gate to build.
    fn needs_records(&self) -> bool {
        false
    }

    /// Whether this reporter lists met gates too (`--status -v`); a status
    /// run of many gates spends nothing on them otherwise.
    fn lists_met(&self) -> bool {
        false
    }

    /// Pushes buffered output out, before anything slow.
    fn flush(&mut self) {}

    /// At the end of the run: the first write error of a document this
    /// reporter owes its reader (human lines may be lost to a closed pipe
    /// without failing the run; a document may not).
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What a reporter shows of a check that ended with a result.
#[derive(Debug, Clone, Copy)]
pub struct FinishedCheck<'a> {
    pub qualified: &'a str,
    pub title: &'a str,
    pub passed: bool,
    /// What failed beyond the exit status and EXPECT (a timeout, an
    /// overflow), when something did.
    pub reason: Option<&'a str>,
    /// `exit=...; EXPECT=...; output=...`.
    pub outcome: &'a str,
    pub duration: Duration,
    /// The end of a failed check's output, when the run shows it.
    pub tail: Option<&'a OutputTail>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    AllMet,
    Unmet,
    HandoffRequired,
    /// Approvals could not be validated or recorded.
    Error,
}

impl Outcome {
    /// The name machine reports carry.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::AllMet => "all-met",
            Outcome::Unmet => "unmet",
            Outcome::HandoffRequired => "handoff-required",
            Outcome::Error => "error",
        }
    }

    pub fn exit(self) -> Exit {
        match self {
            Outcome::AllMet => Exit::Met,
            Outcome::Unmet | Outcome::HandoffRequired => Exit::Unmet,
            Outcome::Error => Exit::Error,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub outcome: Outcome,
    /// Gates met on disk.
    pub met: usize,
    /// Met on disk and not put in doubt by this run.
    pub confirmed_met: usize,
    pub unmet: usize,
    pub abandoned: usize,
    /// Everything counted unmet, with a note where the reason is not the
    /// gate's own state: every id when a reporter renders records, else as
    /// many as the human report lists.
    pub unmet_ids: IdList,
    pub abandoned_ids: Vec<String>,
    pub reran: Option<usize>,
    pub reverified: Option<usize>,
    pub scope: Option<String>,
    pub approval_failures: usize,
    pub check_failures: usize,
    /// With `--gate`: the gates left out of the count.
    pub not_selected: Option<usize>,
    /// The unmet gates with no CHECK: only a person can meet them. Kept
    /// as far as the human report lists them; counted in full.
    pub manual_unmet: IdList,
    /// Gates met on disk that this run counts unmet, each with its reason.
    pub doubts: Vec<Doubt>,
    /// The repository's own ledgers the run left out, having chosen the
    /// only pipeline on its own, as they stand; `None` when it left none.
    pub left_out: Option<LeftOut>,
}

/// The repository's own ledgers (`GATES.md`, `gates/*.md`) a run left out
/// because it chose the only pipeline on its own: judged by no verdict,
/// but said, so `ALL MET` of the pipeline cannot hide an unmet one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeftOut {
    /// Relative to the root: `GATES.md`, `gates/a.md`.
    pub ledgers: Vec<String>,
    /// Their gates that are not met (abandoned ones aside), qualified; a
    /// ledger that cannot be read or parsed is `<stem>:PARSE`.
    pub unmet: Vec<String>,
}

/// A gate met on disk that a run counts unmet: it was asked to verify it
/// and could not, or (`--proof`) its proof is not current.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doubt {
    pub ledger: usize,
    pub id: String,
    /// `reverify not run`, `stale result discarded`, or the proof's reason.
    pub reason: String,
}

impl Verdict {
    pub fn exit(&self) -> Exit {
        self.outcome.exit()
    }
}
