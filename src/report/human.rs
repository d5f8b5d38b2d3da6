//! The human report: the Node tool's lines, byte for byte, with colour
//! chosen by event kind (never by re-reading a line's text) and the live
//! progress line. Writes to any `Write`, so it is tested in memory.

use std::io::Write;

use crate::check::verdict::{Outcome, Verdict};
use crate::terminal::safe;

use super::{Event, Reporter};

/// How human lines look where they are going.
#[derive(Debug, Clone, Copy, Default)]
pub struct Style {
    /// ANSI colour on the marker that starts a line.
    pub color: bool,
    /// Show the live progress line.
    pub live: bool,
    /// GitHub Actions reads workflow commands from these streams: no line
    /// may start with `::`.
    pub workflow_commands_live: bool,
}

/// `out` gets the report lines, `err` the warnings.
pub struct Human<O: Write, E: Write> {
    out: O,
    err: E,
    style: Style,
    progress_shown: bool,
}

const GREEN: &str = "32";
const RED: &str = "31";
const YELLOW: &str = "33";
const BOLD_GREEN: &str = "1;32";
const BOLD_RED: &str = "1;31";
const BOLD_YELLOW: &str = "1;33";

impl<O: Write, E: Write> Human<O, E> {
    pub fn new(out: O, err: E, style: Style) -> Human<O, E> {
        Human { out, err, style, progress_shown: false }
    }

    /// The writers back, for tests that read what was written.
    pub fn into_parts(self) -> (O, E) {
        (self.out, self.err)
    }

    fn clear_progress(&mut self) {
        if self.progress_shown {
            let _ = self.out.write_all(b"\r\x1b[2K");
            self.progress_shown = false;
        }
    }

    /// A line of untrusted text, made safe for a terminal and a CI log.
    fn clean(&self, text: &str) -> String {
        let text = safe(text);
        let indent = text.len() - text.trim_start().len();
        if self.style.workflow_commands_live && text[indent..].starts_with("::") {
            // The runner trims leading blanks before looking for `::`.
            return format!("{}%3A{}", &text[..indent], &text[indent + 1..]);
        }
        text
    }

    /// `marker` (trusted, coloured when colour is on) followed by `rest`.
    fn marked(&mut self, color: &str, marker: &str, rest: &str) {
        self.clear_progress();
        let line = self.clean(&format!("{marker}{rest}"));
        let _ = if self.style.color {
            writeln!(self.out, "\x1b[{color}m{marker}\x1b[0m{}", &line[marker.len()..])
        } else {
            writeln!(self.out, "{line}")
        };
    }

    fn plain(&mut self, text: &str) {
        self.clear_progress();
        let line = self.clean(text);
        let _ = writeln!(self.out, "{line}");
    }

    fn verdict(&mut self, verdict: &Verdict) {
        let scope_note = verdict.scope.as_ref().map(|s| format!(" [scope {s}]")).unwrap_or_default();
        let verify_note = match (verdict.reran, verdict.reverified) {
            (Some(reran), Some(reverified)) => format!(", reran: {reran}, previously met reverified: {reverified}"),
            _ => String::new(),
        };
        match verdict.outcome {
            Outcome::Error => {
                let line =
                    format!("gate-check: infrastructure failure prevented {} approval(s)", verdict.approval_failures);
                self.warning(&line);
            }
            Outcome::AllMet => {
                self.marked(BOLD_GREEN, "ALL MET", &format!(" ({} met{verify_note}){scope_note}", verdict.met))
            }
            Outcome::Unmet | Outcome::HandoffRequired => {
                let (met, unmet, abandoned) = (verdict.confirmed_met, verdict.unmet, verdict.abandoned);
                if abandoned > 0 {
                    let unmet_note = if unmet > 0 { format!(", unmet: {unmet}") } else { String::new() };
                    self.marked(
                        BOLD_YELLOW,
                        "HANDOFF REQUIRED",
                        &format!(": {abandoned} abandoned (met: {met}{unmet_note}{verify_note}){scope_note}"),
                    );
                    self.plain(&format!("  {}", capped_list(&verdict.abandoned_ids)));
                }
                if unmet > 0 {
                    let abandoned_note =
                        if abandoned > 0 { format!(", abandoned: {abandoned}") } else { String::new() };
                    self.marked(
                        BOLD_RED,
                        "UNMET:",
                        &format!(" {unmet} (met: {met}{abandoned_note}{verify_note}){scope_note}"),
                    );
                    self.plain(&format!("  {}", capped_list(&verdict.unmet_ids)));
                }
            }
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
            Event::ApprovalRequired { qualified, oracle, path_transcript } => {
                self.marked(YELLOW, "APPROVAL REQUIRED", &format!(" {qualified}"));
                self.plain(&format!("    CHECK: {}", oracle.check));
                self.plain(&format!("    EXPECT: {}", oracle.expect));
                self.plain(&format!("    CWD: {}", oracle.cwd));
                self.plain(&format!("    SHELL: {}", oracle.shell));
                self.plain(&format!("    PATH: {path_transcript}"));
            }
            Event::NotRun => self.plain("    NOT RUN: inspect this oracle, then re-run with --approve"),
            Event::Approved { record } => self.plain(&format!("    APPROVED: {}", record.display())),
            Event::CheckStarted { qualified, shell, cwd, path_transcript } => {
                self.plain(&format!("  RUN  {qualified} shell={shell} cwd={cwd} PATH={path_transcript}"));
            }
            Event::CheckFinished { qualified, title, result } => {
                let outcome = result.outcome_line();
                if result.ok() {
                    self.marked(GREEN, "  PASS", &format!(" {qualified}: {title}"));
                    self.plain(&format!("       {outcome}"));
                } else {
                    self.marked(RED, "  FAIL", &format!(" {qualified}: {title}"));
                    let reason = result.error.as_ref().map(|e| format!("{e}; ")).unwrap_or_default();
                    self.plain(&format!("       {reason}{outcome}"));
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
                self.clear_progress();
                if let Some(line) = line {
                    let _ = write!(self.out, "{}", safe(line));
                    self.progress_shown = true;
                }
                let _ = self.out.flush();
            }
            Event::GateUnmet { qualified, reason, title } => {
                self.marked(YELLOW, "  UNMET", &format!(" {qualified} ({reason}): {title}"));
            }
            Event::WaveUnmet { wave } => self.marked(YELLOW, "  UNMET", &format!(" {wave}")),
            Event::LedgerSummary { file_name, gates } => self.plain(&format!("{file_name}: {gates} gates")),
            Event::Verdict(verdict) => self.verdict(verdict),
            Event::Report(_) => {}
        }
    }

    fn flush(&mut self) {
        let _ = self.out.flush();
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
