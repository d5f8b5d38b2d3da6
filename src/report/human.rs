//! The human report: the Node tool's lines, byte for byte, with colour
//! chosen by event kind (never by re-reading a line's text), the live
//! progress line on the error stream, and the `--quiet`/`--verbose` cuts.
//! Writes to any `Write`, so it is tested in memory.

use std::borrow::Cow;
use std::io::Write;

use anstyle::AnsiColor;

use crate::approval::Consent;
use crate::baseline::record::{BaseConfinement, BaselineEvent, Judgement};
use crate::check::events::{Event, FinishedCheck, LeftOut, Outcome, Reporter, RunLine, Verdict};
use crate::diagnostic::error_line;
use crate::terminal::{safe, sanitize};
use crate::visible::visible;

use super::record::IdList;
use super::tail::OutputTail;

/// How much of the run the human report shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Verbosity {
    /// `-q`: failures, stale results, unmet gates, the oracles awaiting
    /// approval (without the PATH line) and the verdict.
    Quiet,
    /// The Node tool's lines.
    #[default]
    Normal,
    /// `-v`: each RUN line when its check really starts, a line for checks
    /// still running after 5, 10, 20... seconds where there is no progress
    /// line, and durations on results.
    Verbose,
}

/// How human lines look where they are going.
#[derive(Debug, Clone, Copy, Default)]
pub struct Style {
    /// ANSI colour on the marker that starts a line.
    pub color: bool,
    /// Draw the live progress line (on the error stream).
    pub live: bool,
    /// GitHub Actions reads workflow commands from these streams: no line
    /// may start with `::`.
    pub workflow_commands_live: bool,
    pub verbosity: Verbosity,
}

/// `out` gets the report lines, `err` the warnings.
pub struct Human<O: Write, E: Write> {
    out: O,
    err: E,
    style: Style,
    progress_shown: bool,
    /// The `--show-output` hint was given (once per run, after a FAIL).
    output_hinted: bool,
    /// The PATH last shown in full: a RUN line repeats it only when it
    /// differs (or under `-v`).
    path_shown: Option<String>,
    /// The line being written, reused so a long report allocates once and
    /// reaches `out` in one write per line.
    line: String,
}

const GREEN: anstyle::Style = AnsiColor::Green.on_default();
const RED: anstyle::Style = AnsiColor::Red.on_default();
const YELLOW: anstyle::Style = AnsiColor::Yellow.on_default();
const BOLD_GREEN: anstyle::Style = GREEN.bold();
const BOLD_RED: anstyle::Style = RED.bold();
const BOLD_YELLOW: anstyle::Style = YELLOW.bold();

/// Carriage return and "erase the whole line": removes the progress line.
const ERASE_LINE: &[u8] = b"\r\x1b[2K";

impl<O: Write, E: Write> Human<O, E> {
    pub fn new(out: O, err: E, style: Style) -> Human<O, E> {
        Human { out, err, style, progress_shown: false, output_hinted: false, path_shown: None, line: String::new() }
    }

    /// The writers back, for tests that read what was written.
    #[cfg(test)]
    pub fn into_parts(self) -> (O, E) {
        (self.out, self.err)
    }

    fn clear_progress(&mut self) {
        if self.progress_shown {
            let _ = self.err.write_all(ERASE_LINE).and_then(|()| self.err.flush());
            self.progress_shown = false;
        }
    }

    fn quiet(&self) -> bool {
        self.style.verbosity == Verbosity::Quiet
    }

    fn verbose(&self) -> bool {
        self.style.verbosity == Verbosity::Verbose
    }

    fn run_line(&mut self, line: &RunLine) {
        let (shell, cwd) = (visible(line.shell), visible(line.cwd));
        if !self.verbose() && self.path_shown.as_deref() == Some(line.path_transcript) {
            return self.plain(&format!("  RUN  {} shell={shell} cwd={cwd}", line.qualified));
        }
        self.path_shown = Some(line.path_transcript.to_string());
        let path = visible(line.path_transcript);
        self.plain(&format!("  RUN  {} shell={shell} cwd={cwd} PATH={path}", line.qualified));
    }

    /// A line of untrusted text, made safe for a terminal and a CI log.
    fn clean<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let text = sanitize(text);
        if self.style.workflow_commands_live {
            return crate::terminal::neutralize_workflow_command(text);
        }
        text
    }

    /// `marker` (trusted, coloured when colour is on) followed by `rest`.
    fn marked(&mut self, color: anstyle::Style, marker: &str, rest: &str) {
        self.marked_parts(color, marker, &[rest]);
    }

    /// `marker` followed by the concatenation of `parts`, sanitized piece
    /// by piece. Every marker starts with a non-blank other than `:`, so
    /// the line can never open a workflow command.
    fn marked_parts(&mut self, color: anstyle::Style, marker: &str, parts: &[&str]) {
        self.clear_progress();
        let line = &mut self.line;
        line.clear();
        if self.style.color {
            let _ = std::fmt::Write::write_fmt(line, format_args!("{color}{marker}{color:#}"));
        } else {
            line.push_str(marker);
        }
        // Sanitizing is per character, so the joined parts are checked in
        // one pass; only a line with something to replace is built again.
        let text_start = line.len();
        parts.iter().for_each(|part| line.push_str(part));
        if !crate::terminal::is_printable_ascii(&line[text_start..]) {
            line.truncate(text_start);
            for part in parts {
                line.push_str(&sanitize(part));
            }
        }
        line.push('\n');
        let _ = self.out.write_all(line.as_bytes());
    }

    fn plain(&mut self, text: &str) {
        self.clear_progress();
        let line = self.clean(text);
        let _ = writeln!(self.out, "{line}");
    }

    fn verdict(&mut self, verdict: &Verdict) {
        let scope_note = verdict.scope.as_ref().map(|s| format!(" [scope {s}]")).unwrap_or_default();
        let verify_note = match (verdict.reran, verdict.reverified) {
            // Not "reverified": a rerun of a gate that was met may have failed.
            (Some(reran), Some(reverified)) => format!(", reran: {reran}, {reverified} of them met before"),
            _ => String::new(),
        };
        let verify_note = match verdict.not_selected {
            Some(count) if count > 0 => format!("{verify_note}, not selected: {count}"),
            _ => verify_note,
        };
        // Said on the line a reader of stdout reads, not only on stderr.
        let left_out_note = verdict.left_out.as_ref().map(left_out_note).unwrap_or_default();
        match verdict.outcome {
            Outcome::Error => {
                let prevented = [(verdict.approval_failures, "approval(s)"), (verdict.check_failures, "check(s)")];
                for (count, what) in prevented.into_iter().filter(|(count, _)| *count > 0) {
                    self.warning(&error_line(&format!("infrastructure failure prevented {count} {what}")));
                }
            }
            Outcome::AllMet => self.marked(
                BOLD_GREEN,
                "ALL MET",
                &format!(" ({} met{verify_note}){scope_note}{left_out_note}", verdict.met),
            ),
            Outcome::Unmet | Outcome::HandoffRequired => {
                let (met, unmet, abandoned) = (verdict.confirmed_met, verdict.unmet, verdict.abandoned);
                if abandoned > 0 {
                    let unmet_note = if unmet > 0 { format!(", unmet: {unmet}") } else { String::new() };
                    let left_out_note = if unmet > 0 { "" } else { left_out_note.as_str() };
                    self.marked(
                        BOLD_YELLOW,
                        "HANDOFF REQUIRED",
                        &format!(
                            ": {abandoned} abandoned (met: {met}{unmet_note}{verify_note}){scope_note}{left_out_note}"
                        ),
                    );
                    self.plain(&format!("  {}", capped(verdict.abandoned_ids.iter().map(String::as_str))));
                }
                if unmet > 0 {
                    let abandoned_note =
                        if abandoned > 0 { format!(", abandoned: {abandoned}") } else { String::new() };
                    self.marked(
                        BOLD_RED,
                        "UNMET:",
                        &format!(" {unmet} (met: {met}{abandoned_note}{verify_note}){scope_note}{left_out_note}"),
                    );
                    self.plain(&format!("  {}", capped_list(verdict.unmet_ids.iter(), verdict.unmet_ids.len())));
                    self.manual_hint(&verdict.manual_unmet);
                }
            }
        }
    }

    /// Once per run: what meets a gate that has no CHECK.
    fn manual_hint(&mut self, manual: &IdList) {
        if manual.is_empty() {
            return;
        }
        self.plain(&format!(
            "  manual: {} need{} a person: after checking by hand, tick the box and write EVIDENCE: with what was seen \
             (gate-check never runs a gate without CHECK)",
            capped_list(manual.iter(), manual.len()),
            if manual.len() == 1 { "s" } else { "" }
        ));
    }

    fn finished(&mut self, check: &FinishedCheck) {
        let (qualified, title) = (check.qualified, check.title);
        let duration =
            if self.verbose() { format!("; duration={:.3}s", check.duration.as_secs_f64()) } else { String::new() };
        if check.passed {
            if self.quiet() {
                return;
            }
            self.marked(GREEN, "  PASS", &format!(" {qualified}: {title}"));
            self.plain(&format!("       {}{duration}", check.outcome));
        } else {
            self.marked(RED, "  FAIL", &format!(" {qualified}: {title}"));
            let reason = check.reason.map(|e| format!("{e}; ")).unwrap_or_default();
            self.plain(&format!("       {reason}{}{duration}", check.outcome));
            match check.tail {
                Some(tail) => self.output_tail(tail),
                None if !self.output_hinted => {
                    self.output_hinted = true;
                    self.plain("       hint: run again with --show-output to see what a failed check printed");
                }
                None => {}
            }
        }
    }

    /// `--show-output`: the end of a failed check's output, each line
    /// sanitized and marked so it cannot pass for a report line.
    fn output_tail(&mut self, tail: &OutputTail) {
        self.plain(&format!("       {}", tail.heading()));
        for line in &tail.lines {
            self.plain(&format!("       | {line}"));
        }
    }

    fn baseline(&mut self, event: &BaselineEvent) {
        match event {
            BaselineEvent::Header(header) => {
                if self.quiet() {
                    return;
                }
                self.marked(BOLD_GREEN, "BASELINE", &format!(" {}", header.line()));
                match header.base {
                    BaseConfinement::Confined(_) => self.marked(BOLD_GREEN, "SANDBOX", &format!(": {}", header.base_line())),
                    BaseConfinement::Unconfined => {
                        self.marked(BOLD_YELLOW, "UNCONFINED", &format!(": {}", header.base_line()))
                    }
                }
                if let Some(line) = header.now_line() {
                    self.marked(BOLD_GREEN, "SANDBOX", &format!(": {line}"));
                }
            }
            BaselineEvent::NotRun => self.plain(
                "    NOT RUN: baseline approves nothing; approve this oracle with gate-check --approve, then run baseline again",
            ),
            BaselineEvent::Judged { gate, reference, tail } => {
                let color = match gate.result {
                    Judgement::Discriminates if self.quiet() => return,
                    Judgement::Discriminates => GREEN,
                    Judgement::Failing => RED,
                    Judgement::Vacuous | Judgement::Unknown | Judgement::ApprovalRequired => YELLOW,
                };
                self.marked_parts(color, gate.result.marker(), &[" ", &gate.qualified_id, " ", &gate.sentence(reference)]);
                if let Some((label, side)) = gate.telling_side() {
                    let label = if label == "on REF" { format!("on {}", reference.short_commit) } else { label.to_string() };
                    self.plain(&format!("       {label}: {}", side.outcome));
                }
                if let Some(tail) = tail {
                    self.output_tail(tail);
                }
            }
            BaselineEvent::Report(report) => match (report.exit_code, report.errors.is_empty()) {
                (0, _) => self.marked(BOLD_GREEN, "ALL DISCRIMINATE", &format!(" ({})", report.summary.line())),
                (1, true) => self.marked(BOLD_RED, "NOT ALL DISCRIMINATE:", &format!(" {}", report.summary.line())),
                // An error or an interrupt has said so already.
                _ => {}
            },
        }
    }

    /// Warnings go after everything written so far, so the streams
    /// interleave in the order things happened.
    fn warning(&mut self, line: &str) {
        self.clear_progress();
        let _ = self.out.flush();
        let line = self.clean(line);
        let _ = writeln!(self.err, "{line}");
    }
}

impl<O: Write, E: Write> Reporter for Human<O, E> {
    fn event(&mut self, event: &Event) {
        match event {
            Event::Warning(line) => self.warning(line),
            Event::ApprovalRequired { approving, qualified, oracle, path_transcript, inputs, consent } => {
                // Under --approve the oracle is not waiting: it is being approved.
                let marker = if *approving { "APPROVING" } else { "APPROVAL REQUIRED" };
                self.marked(YELLOW, marker, &format!(" {qualified}"));
                self.plain(&format!("    CHECK: {}", visible(&oracle.check)));
                self.plain(&format!("    EXPECT: {}", visible(&oracle.expect)));
                self.plain(&format!("    CWD: {}", visible(&oracle.cwd)));
                if let Some(inputs) = inputs {
                    self.plain(&format!("    INPUTS: {}", visible(inputs)));
                }
                self.plain(&format!("    SHELL: {}", visible(&oracle.shell)));
                self.plain(&format!("    TIMEOUT: {}s", oracle.timeout_ms() / 1000));
                if *consent == Consent::ConfinedOnly {
                    self.plain("    SCOPE: confined runs only (--sandbox); a run without it asks again");
                }
                // The caller's own PATH, the same for every gate of the run.
                if !self.quiet() {
                    self.path_shown = Some(path_transcript.to_string());
                    self.plain(&format!("    PATH: {}", visible(path_transcript)));
                }
            }
            Event::ApprovalChanged { reasons } => {
                let why = if reasons.is_empty() {
                    "an approval for this gate exists with a different signature".to_string()
                } else {
                    reasons.join("; ")
                };
                // The reasons quote CWDs, shells and PATH entries from records.
                self.plain(&format!("    CHANGED SINCE APPROVAL: {}", visible(&why)));
            }
            Event::NotRun => self.plain("    NOT RUN: inspect this oracle, then re-run with --approve"),
            Event::Approved { record } => self.plain(&format!("    APPROVED: {}", record.display())),
            Event::Sandbox(sandbox) => {
                if self.style.verbosity != Verbosity::Quiet {
                    self.marked(BOLD_GREEN, "SANDBOX", &format!(": {}", sandbox.summary()));
                }
            }
            Event::CheckStarted(line) => {
                if self.style.verbosity == Verbosity::Normal {
                    self.run_line(line);
                }
            }
            Event::CheckLaunched(line) => {
                if self.verbose() {
                    self.run_line(line);
                }
            }
            Event::TreeRead { root, files, hashed } => {
                if self.verbose() {
                    self.plain(&format!("  proof: read the tree under {root}: {files} files, {hashed} hashed"));
                }
            }
            Event::CheckSlow { qualified, seconds } => {
                // A terminal has the progress line; a log gets this instead.
                if self.verbose() && !self.style.live {
                    self.plain(&format!("  ... {qualified} still running after {seconds}s"));
                }
            }
            Event::CheckFinished(check) => self.finished(check),
            Event::CheckInterrupted { qualified, title } => {
                self.marked(YELLOW, "  INTERRUPTED", &format!(" {qualified}: {title}"));
            }
            Event::Interrupted { signal, stopped } => {
                self.marked(
                    BOLD_YELLOW,
                    "INTERRUPTED",
                    &format!(" by {signal}: {} running check(s) stopped; their gates were not updated", stopped.len()),
                );
                if !stopped.is_empty() {
                    self.plain(&format!("  {}", capped(stopped.iter().map(String::as_str))));
                }
            }
            Event::ResultStale { qualified } => self.marked(
                YELLOW,
                "  STALE",
                &format!(" {qualified}: definition or runtime approval oracle changed; result not written"),
            ),
            Event::Progress(line) => {
                if !self.style.live {
                    return;
                }
                // Lines written so far go out first, then the progress line
                // replaces the previous one on the error stream.
                let _ = self.out.flush();
                self.clear_progress();
                if let Some(line) = line {
                    let _ = write!(self.err, "{}", safe(line)).and_then(|()| self.err.flush());
                    self.progress_shown = true;
                }
            }
            Event::GateUnmet { qualified, reason, title } => {
                self.marked_parts(YELLOW, "  UNMET", &[" ", qualified, " (", reason, "): ", title]);
            }
            Event::GateMet { qualified, title } => self.marked_parts(GREEN, "  MET", &["   ", qualified, ": ", title]),
            Event::WaveUnmet { wave } => self.marked(YELLOW, "  UNMET", &format!(" {wave}")),
            Event::LedgerSummary { file_name, gates } => {
                if !self.quiet() {
                    self.plain(&format!("{file_name}: {gates} gates"));
                }
            }
            Event::Verdict(verdict) => self.verdict(verdict),
            Event::NextCommand(command) => self.plain(&format!("next: {command}")),
            Event::Report(_) => {}
            Event::Baseline(event) => self.baseline(event),
        }
    }

    fn lists_met(&self) -> bool {
        self.verbose()
    }

    fn flush(&mut self) {
        let _ = self.out.flush();
    }
}

/// How many ids a list line shows before `+N more`; a run keeps no more of
/// a list only this report reads (see `IdList::keeping`).
pub const LISTED_IDS: usize = 12;

/// At most `LISTED_IDS` of `ids`, then `+N more` of `count` in all.
fn capped_list<'a>(ids: impl Iterator<Item = &'a str>, count: usize) -> String {
    let mut text = ids.take(LISTED_IDS).collect::<Vec<_>>().join(", ");
    if count > LISTED_IDS {
        text.push_str(&format!(", +{} more", count - LISTED_IDS));
    }
    text
}

/// `; root GATES.md not judged: 1 unmet` when a ledger the run left out
/// is not met; nothing when they all are (stderr names them anyway).
fn left_out_note(left_out: &LeftOut) -> String {
    if left_out.unmet.is_empty() {
        return String::new();
    }
    let named = match left_out.ledgers.as_slice() {
        [only] => only.clone(),
        many => format!("ledgers {}", capped(many.iter().map(String::as_str))),
    };
    format!("; root {named} not judged: {} unmet", left_out.unmet.len())
}

/// [`capped_list`] of a whole list.
fn capped<'a>(ids: impl ExactSizeIterator<Item = &'a str>) -> String {
    let count = ids.len();
    capped_list(ids, count)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::approval::Oracle;

    fn render(style: Style, events: &[Event]) -> (String, String) {
        let mut human = Human::new(Vec::new(), Vec::new(), style);
        for event in events {
            human.event(event);
        }
        let (out, err) = human.into_parts();
        (String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
    }

    const PASS_OUTCOME: &str = "exit=0; EXPECT=matched; output=sha256=5a1f; bytes=2";
    const FAIL_OUTCOME: &str = "exit=1; EXPECT=not matched; output=ok";

    fn finished(qualified: &'static str, title: &'static str, passed: bool) -> FinishedCheck<'static> {
        FinishedCheck {
            qualified,
            title,
            passed,
            reason: None,
            outcome: if passed { PASS_OUTCOME } else { FAIL_OUTCOME },
            duration: Duration::from_millis(5),
            tail: None,
        }
    }

    fn verdict(outcome: Outcome, unmet: &[&str]) -> Verdict {
        Verdict {
            outcome,
            met: 2,
            confirmed_met: 2,
            unmet: unmet.len(),
            abandoned: 0,
            unmet_ids: unmet.iter().fold(IdList::default(), |mut list, id| {
                list.push(id);
                list
            }),
            abandoned_ids: Vec::new(),
            reran: None,
            reverified: None,
            scope: Some("s1".into()),
            approval_failures: 0,
            check_failures: 0,
            not_selected: None,
            manual_unmet: IdList::default(),
            doubts: Vec::new(),
            left_out: None,
        }
    }

    const PLAIN: Style =
        Style { color: false, live: false, workflow_commands_live: false, verbosity: Verbosity::Normal };

    #[test]
    fn an_interrupted_run_lists_the_checks_it_stopped() {
        let stopped = ["GATES:A".to_string()];
        let events = [
            Event::CheckInterrupted { qualified: "GATES:A", title: "t" },
            Event::Interrupted { signal: "SIGINT", stopped: &stopped },
        ];
        let (out, err) = render(PLAIN, &events);
        assert_eq!(
            out,
            "  INTERRUPTED GATES:A: t\nINTERRUPTED by SIGINT: 1 running check(s) stopped; their gates were not updated\n  GATES:A\n"
        );
        assert_eq!(err, "");
    }

    #[test]
    fn result_and_verdict_lines_are_the_node_tools() {
        let (out, err) = render(
            PLAIN,
            &[
                Event::CheckFinished(finished("GATES:G1", "works", true)),
                Event::LedgerSummary { file_name: "GATES.md", gates: 3 },
                Event::Verdict(&verdict(Outcome::Unmet, &["GATES:G2"])),
            ],
        );
        assert_eq!(
            out,
            format!("  PASS GATES:G1: works\n       {PASS_OUTCOME}\nGATES.md: 3 gates\nUNMET: 1 (met: 2) [scope s1]\n  GATES:G2\n")
        );
        assert_eq!(err, "");
    }

    #[test]
    fn colour_follows_the_event_not_the_text() {
        let style = Style { color: true, ..PLAIN };
        let (out, _) = render(
            style,
            &[
                Event::CheckFinished(finished("GATES:G1", "t", true)),
                // A ledger named like a marker must not be coloured as one.
                Event::LedgerSummary { file_name: "ALL MET.md", gates: 1 },
                Event::Verdict(&verdict(Outcome::AllMet, &[])),
            ],
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "\x1b[32m  PASS\x1b[0m GATES:G1: t");
        assert_eq!(lines[2], "ALL MET.md: 1 gates");
        assert_eq!(lines[3], "\x1b[1m\x1b[32mALL MET\x1b[0m (2 met) [scope s1]");
    }

    #[test]
    fn untrusted_text_is_sanitized_and_cannot_start_a_workflow_command() {
        let style = Style { workflow_commands_live: true, ..PLAIN };
        let (out, _) = render(
            style,
            &[
                Event::LedgerSummary { file_name: "::stop-commands::tok.md", gates: 1 },
                Event::Verdict(&verdict(Outcome::Unmet, &["::error title=FAKE::x:G1"])),
                Event::GateUnmet { qualified: "GATES:G\u{1b}[2J", reason: "unchecked", title: "a\u{202e}b" },
            ],
        );
        assert_eq!(
            out,
            "%3A:stop-commands::tok.md: 1 gates\nUNMET: 1 (met: 2) [scope s1]\n  %3A:error title=FAKE::x:G1\n  \
             UNMET GATES:G [2J (unchecked): a b\n"
        );
        let (plain, _) = render(PLAIN, &[Event::LedgerSummary { file_name: "::x.md", gates: 1 }]);
        assert_eq!(plain, "::x.md: 1 gates\n", "outside GitHub Actions the line is the Node tool's");
    }

    #[test]
    fn progress_line_goes_to_the_error_stream_only_when_live_and_is_cleared_before_the_next_line() {
        let live = Style { live: true, ..PLAIN };
        let events = [Event::Progress(Some("  ... GATES:G1 running for 2s")), Event::NotRun];
        let (out, err) = render(live, &events);
        assert_eq!(out, "    NOT RUN: inspect this oracle, then re-run with --approve\n");
        assert_eq!(err, "  ... GATES:G1 running for 2s\r\x1b[2K");
        let (out, err) = render(PLAIN, &events);
        assert_eq!(out, "    NOT RUN: inspect this oracle, then re-run with --approve\n");
        assert_eq!(err, "");
    }

    fn run_events<'a>(oracle: &'a Oracle, verdict: &'a Verdict) -> Vec<Event<'a>> {
        let line = |qualified| RunLine { qualified, shell: "/bin/sh", cwd: "/r", path_transcript: "/bin" };
        let started = |qualified| Event::CheckStarted(line(qualified));
        let launched = |qualified| Event::CheckLaunched(line(qualified));
        vec![
            Event::ApprovalRequired {
                approving: false,
                qualified: "GATES:G0",
                oracle,
                path_transcript: "/bin",
                inputs: None,
                consent: Consent::Unconfined,
            },
            Event::NotRun,
            started("GATES:G1"),
            started("GATES:G2"),
            launched("GATES:G1"),
            Event::CheckSlow { qualified: "GATES:G1", seconds: 5 },
            Event::CheckFinished(finished("GATES:G1", "one", true)),
            launched("GATES:G2"),
            Event::CheckFinished(finished("GATES:G2", "two", false)),
            Event::LedgerSummary { file_name: "GATES.md", gates: 3 },
            Event::Verdict(verdict),
        ]
    }

    fn oracle() -> Oracle {
        Oracle::new("true", "x", "/r", "/bin/sh", 1, "/bin")
    }

    #[test]
    fn quiet_keeps_failures_pending_oracles_and_the_verdict() {
        let (oracle, verdict) = (oracle(), verdict(Outcome::Unmet, &["GATES:G2"]));
        let quiet = Style { verbosity: Verbosity::Quiet, ..PLAIN };
        let (out, err) = render(quiet, &run_events(&oracle, &verdict));
        assert_eq!(
            out,
            format!(
                "APPROVAL REQUIRED GATES:G0\n    CHECK: true\n    EXPECT: x\n    CWD: /r\n    SHELL: /bin/sh\n    \
                 TIMEOUT: 1s\n    NOT RUN: inspect this oracle, then re-run with --approve\n  FAIL GATES:G2: two\n       {FAIL_OUTCOME}\n\
                 \x20      hint: run again with --show-output to see what a failed check printed\n\
                 UNMET: 1 (met: 2) [scope s1]\n  GATES:G2\n"
            )
        );
        assert_eq!(err, "");
    }

    #[test]
    fn verbose_prints_run_lines_at_launch_slow_checks_and_durations() {
        let (oracle, verdict) = (oracle(), verdict(Outcome::Unmet, &["GATES:G2"]));
        let verbose = Style { verbosity: Verbosity::Verbose, ..PLAIN };
        let (out, _) = render(verbose, &run_events(&oracle, &verdict));
        let lines: Vec<&str> = out.lines().collect();
        let run = |id| format!("  RUN  GATES:{id} shell=/bin/sh cwd=/r PATH=/bin");
        assert_eq!(lines[8], run("G1"));
        assert_eq!(lines[9], "  ... GATES:G1 still running after 5s");
        assert_eq!(lines[10], "  PASS GATES:G1: one");
        assert!(lines[11].ends_with("; bytes=2; duration=0.005s"), "{}", lines[11]);
        assert_eq!(lines[12], run("G2"));
        assert_eq!(lines[13], "  FAIL GATES:G2: two");
        assert_eq!(out.matches("  RUN  ").count(), 2, "{out}");
        // With a progress line on the terminal there is no slow-check line.
        let (live, _) = render(Style { live: true, ..verbose }, &run_events(&oracle, &verdict));
        assert!(!live.contains("still running"), "{live}");
        // Normal output: every RUN line up front, no slow line, no duration,
        // and no PATH the approval block above already showed in full.
        let (normal, _) = render(PLAIN, &run_events(&oracle, &verdict));
        let lines: Vec<&str> = normal.lines().collect();
        let short = |id| format!("  RUN  GATES:{id} shell=/bin/sh cwd=/r");
        assert_eq!((lines[8].to_string(), lines[9].to_string()), (short("G1"), short("G2")));
        // A PATH not shown yet is shown once, and again only when it changes.
        let line = |qualified, path_transcript| RunLine { qualified, shell: "/bin/sh", cwd: "/r", path_transcript };
        let events = [
            Event::CheckStarted(line("GATES:G1", "/bin")),
            Event::CheckStarted(line("GATES:G2", "/bin")),
            Event::CheckStarted(line("GATES:G3", "/usr/bin")),
        ];
        let (changing, _) = render(PLAIN, &events);
        assert_eq!(
            changing,
            format!("{}\n{}\n{}\n", run("G1"), short("G2"), "  RUN  GATES:G3 shell=/bin/sh cwd=/r PATH=/usr/bin")
        );
        assert!(!normal.contains("still running") && !normal.contains("duration="), "{normal}");
    }

    #[test]
    fn warnings_go_to_the_error_stream_and_an_approval_failure_is_one() {
        let failed = Verdict { approval_failures: 2, ..verdict(Outcome::Error, &[]) };
        let (out, err) = render(PLAIN, &[Event::Warning("x.md: warning: w"), Event::Verdict(&failed)]);
        assert_eq!(out, "");
        assert_eq!(err, "x.md: warning: w\ngate-check: error: infrastructure failure prevented 2 approval(s)\n");
    }

    #[test]
    fn reapproval_reasons_the_next_command_and_shown_output_are_lines_of_their_own() {
        let reasons = vec!["approved with CWD /r/\u{202e}x, now /r".to_string()];
        let output = "first\nAssertionError: 1 != 2\u{1b}[2J\n";
        let tail = OutputTail::of(output, crate::report::tail::SHOWN_LINES, crate::report::tail::SHOWN_BYTES);
        let outcome = "exit=1; EXPECT=not matched; output=first | AssertionError: 1 != 2\u{1b}[2J";
        let failed = FinishedCheck { outcome, tail: Some(&tail), ..finished("GATES:G1", "t", false) };
        let (out, _) = render(
            PLAIN,
            &[
                Event::ApprovalChanged { reasons: &reasons },
                Event::ApprovalChanged { reasons: &[] },
                Event::CheckFinished(failed),
                Event::NextCommand("gate-check --approve GATES.md"),
            ],
        );
        assert_eq!(
            out,
            "    CHANGED SINCE APPROVAL: approved with CWD /r/\\u{202E}x, now /r\n    \
             CHANGED SINCE APPROVAL: an approval for this gate exists with a different signature\n  \
             FAIL GATES:G1: t\n       exit=1; EXPECT=not matched; output=first | AssertionError: 1 != 2 [2J\n       \
             output (2 lines):\n       | first\n       | AssertionError: 1 != 2 [2J\nnext: gate-check --approve GATES.md\n"
        );
        let without = FinishedCheck { tail: None, ..failed };
        let (plain, _) = render(PLAIN, &[Event::CheckFinished(without)]);
        assert!(!plain.contains("output ("), "output is shown only with --show-output: {plain}");
    }
}
