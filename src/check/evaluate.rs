//! Runs one approved check through the runner and judges it: exit 0 and
//! EXPECT matching the canonical output, within both output ceilings.

use std::time::Duration;

use js_regex::{Expectation, Limits, MatchError};

use crate::evidence::{self, Fingerprint, MAX_OUTPUT_BYTES};
use crate::report::record::{CheckRecord, CheckStatus};
use crate::report::tail::{self, OutputTail};
use crate::runner::{self, CheckRequest, Containment, RunFailure};

use super::plan::{Runtime, Task};

/// Why a check has no result of its gate: nothing of it is written back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unjudged {
    /// An interrupt terminated the check while it ran (or while its EXPECT
    /// was matched).
    InterruptedWhileRunning,
    /// An interrupt came before the check started.
    InterruptedBeforeStart,
    /// gate-check's own resources ran out before the check could start:
    /// an infrastructure failure, never a result of the gate.
    Resources(String),
}

/// What one check produced, as judged.
pub struct CheckResult {
    pub output: String,
    pub fingerprint: Fingerprint,
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub matched: bool,
    pub error: Option<String>,
    pub duration: Duration,
    /// Set when the result is no result of the gate.
    pub unjudged: Option<Unjudged>,
}

impl CheckResult {
    pub fn ok(&self) -> bool {
        self.error.is_none() && self.exit_code == Some(0) && self.matched
    }

    /// The `exit=...; EXPECT=...; output=...` part of the human result line.
    pub fn outcome_line(&self) -> String {
        let summary = if self.ok() {
            format!("sha256={}; bytes={}", self.fingerprint.sha256, self.fingerprint.bytes)
        } else {
            evidence::failure_summary(&self.output)
        };
        let exit = self.exit_code.map_or("none".to_string(), |c| c.to_string());
        let signal = self.signal.as_ref().map(|s| format!(" signal={s}")).unwrap_or_default();
        let matched = if self.matched { "matched" } else { "not matched" };
        format!("exit={exit}{signal}; EXPECT={matched}; output={summary}")
    }

    /// The result as a machine report records it.
    pub fn record(&self, written: bool) -> CheckRecord {
        let status = match (written, self.ok()) {
            (false, _) => CheckStatus::Stale,
            (true, true) => CheckStatus::Pass,
            (true, false) => CheckStatus::Fail,
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
            output_tail: (written && !self.ok())
                .then(|| OutputTail::of(&self.output, tail::RECORDED_LINES, tail::RECORDED_BYTES)),
        }
    }
}

pub fn evaluate(task: &Task, runtime: &Runtime, timeout: Duration, containment: &Containment) -> CheckResult {
    let request = CheckRequest {
        shell: &runtime.shell,
        environment: &runtime.child_environment,
        command: task.gate.check().unwrap_or(""),
        cwd: &task.cwd,
        timeout,
        max_output_bytes: MAX_OUTPUT_BYTES,
        confinement: runtime.sandbox.as_ref().map(|sandbox| (&sandbox.confinement, &sandbox.fences[task.ledger])),
    };
    run_and_judge(&request, task.expectation.as_deref(), containment)
}

/// Runs `request` (a task's CHECK, wherever and however it is run) and
/// judges its output against `expectation`, the gate's EXPECT.
pub fn run_and_judge(
    request: &CheckRequest,
    expectation: Option<&Expectation>,
    containment: &Containment,
) -> CheckResult {
    let timeout = request.timeout;
    // Matching EXPECT is part of the check: it ends by the same deadline.
    let deadline = std::time::Instant::now() + timeout;
    let outcome = runner::run_check(request, containment);
    let stdout = String::from_utf8_lossy(&outcome.stdout);
    let stderr = String::from_utf8_lossy(&outcome.stderr);
    let separator = if !stdout.is_empty() && !stderr.is_empty() { "\n" } else { "" };
    let output = format!("{stdout}{separator}{stderr}");
    let fingerprint = Fingerprint::of(&output);
    let combined_overflow = fingerprint.bytes > MAX_OUTPUT_BYTES;
    let mut error = match &outcome.failure {
        Some(RunFailure::TimedOut) => Some(format!("timed out after {}s", timeout.as_secs())),
        Some(RunFailure::OutputHeldOpen) => {
            let ended = match (&outcome.exit_code, &outcome.signal) {
                (Some(code), _) => format!("exited {code}"),
                (None, Some(signal)) => format!("was ended by {signal}"),
                (None, None) => "ended".to_string(),
            };
            Some(format!("the check {ended} but a background process kept its output open"))
        }
        Some(RunFailure::Interrupted(interruption)) => Some(format!("interrupted by {}", interruption.name())),
        Some(RunFailure::NotStarted(interruption)) => {
            Some(format!("not started: interrupted by {}", interruption.name()))
        }
        Some(RunFailure::Overflow) => Some(format!("output exceeded {MAX_OUTPUT_BYTES} bytes")),
        Some(RunFailure::Spawn(message) | RunFailure::Resources(message)) => Some(message.clone()),
        None if combined_overflow => {
            Some(format!("output exceeded {MAX_OUTPUT_BYTES} bytes after stdout/stderr UTF-8 combination"))
        }
        None => None,
    };
    let mut matched = false;
    let mut interrupted_while_matching = false;
    if error.is_none() {
        let interrupted = || containment.interruption().is_some();
        let limits = Limits::new(deadline, &interrupted);
        match expectation.map(|e: &Expectation| e.matches_within(&output, &limits)) {
            Some(Ok(yes)) => matched = yes,
            Some(Err(MatchError::Interrupted)) => {
                let interruption = containment.interruption().map_or("a signal", |interruption| interruption.name());
                error = Some(format!("interrupted by {interruption}"));
                interrupted_while_matching = true;
            }
            Some(Err(budget)) => error = Some(budget.to_string()),
            None => error = Some("gate has no EXPECT".into()),
        }
    }
    let unjudged = match outcome.failure {
        Some(RunFailure::Interrupted(_)) => Some(Unjudged::InterruptedWhileRunning),
        Some(RunFailure::NotStarted(_)) => Some(Unjudged::InterruptedBeforeStart),
        Some(RunFailure::Resources(message)) => Some(Unjudged::Resources(message)),
        _ if interrupted_while_matching => Some(Unjudged::InterruptedWhileRunning),
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
        unjudged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(output: &str, exit_code: Option<i32>, matched: bool) -> CheckResult {
        CheckResult {
            output: output.into(),
            fingerprint: Fingerprint::of(output),
            exit_code,
            signal: None,
            matched,
            error: None,
            duration: Duration::from_millis(5),
            unjudged: None,
        }
    }

    #[test]
    fn the_outcome_line_is_the_node_tools() {
        let sha = Fingerprint::of("ok").sha256;
        assert_eq!(
            result("ok", Some(0), true).outcome_line(),
            format!("exit=0; EXPECT=matched; output=sha256={sha}; bytes=2")
        );
        assert_eq!(result("ok", Some(1), false).outcome_line(), "exit=1; EXPECT=not matched; output=ok");
        let killed = CheckResult { signal: Some("SIGKILL".into()), ..result("a\nb", None, false) };
        assert_eq!(
            killed.outcome_line(),
            format!("exit=none signal=SIGKILL; EXPECT=not matched; output={}", evidence::failure_summary("a\nb"))
        );
    }

    #[test]
    fn records_say_why_a_check_failed_and_keep_a_failures_tail() {
        let passed = result("ok", Some(0), true).record(true);
        assert_eq!((passed.status, passed.reason, passed.output_tail), (CheckStatus::Pass, None, None));
        assert_eq!(passed.output_sha256, Some(Fingerprint::of("ok").sha256));
        let failed = result("one\ntwo\n", Some(3), true).record(true);
        assert_eq!((failed.status, failed.reason.as_deref()), (CheckStatus::Fail, Some("non-zero exit")));
        assert_eq!(failed.output_tail.map(|tail| tail.lines), Some(vec!["one".to_string(), "two".to_string()]));
        let unmatched = result("x", Some(0), false).record(true);
        assert_eq!(unmatched.reason.as_deref(), Some("EXPECT not matched"));
        let timed_out = CheckResult { error: Some("timed out after 1s".into()), ..result("", None, false) };
        assert_eq!(timed_out.record(true).reason.as_deref(), Some("timed out after 1s"));
        let stale = result("ok", Some(0), true).record(false);
        assert_eq!(stale.status, CheckStatus::Stale);
        assert_eq!(stale.reason.as_deref(), Some("definition or runtime approval oracle changed"));
    }
}
