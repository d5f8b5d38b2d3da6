//! Reporters that render the run's one `RunReport` record: the JSON or
//! JUnit document on stdout, and GitHub Actions annotations.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::terminal::safe;

use super::OutputFormat;
use crate::baseline::record::BaselineEvent;
use crate::check::events::{Event, Reporter};

/// The machine document `--format` asks for.
pub struct Document<W: Write> {
    format: OutputFormat,
    out: W,
    /// What JUnit names ledgers relative to: the repository root, or the
    /// GitHub Actions workspace.
    base: PathBuf,
    /// Why the document could not be written, once it could not.
    failed: Option<std::io::Error>,
}

impl<W: Write> Document<W> {
    pub fn new(format: OutputFormat, base: PathBuf, out: W) -> Document<W> {
        Document { format, out, base, failed: None }
    }
}

/// `ledger` relative to `base` when it lies below it, with `/` between its
/// parts on every platform (as GitHub links files and JUnit readers expect),
/// else as it is.
fn relative_to(base: &Path, ledger: &str) -> String {
    match crate::paths::strip_prefix(Path::new(ledger), base) {
        Some(relative) => {
            let parts: Vec<_> = relative.components().map(|part| part.as_os_str().to_string_lossy()).collect();
            parts.join("/")
        }
        None => ledger.to_string(),
    }
}

impl<W: Write> Reporter for Document<W> {
    fn event(&mut self, event: &Event) {
        let text = match (event, self.format) {
            (_, OutputFormat::Human) => return,
            (Event::Report(report), OutputFormat::Json) => report.to_json(),
            (Event::Report(report), OutputFormat::Junit) => report.to_junit(|ledger| relative_to(&self.base, ledger)),
            (Event::Baseline(BaselineEvent::Report(report)), OutputFormat::Json) => report.to_json(),
            (Event::Baseline(BaselineEvent::Report(report)), OutputFormat::Junit) => {
                report.to_junit(|ledger| relative_to(&self.base, ledger))
            }
            _ => return,
        };
        if let Err(error) = self.out.write_all(text.as_bytes()).and_then(|()| self.out.flush()) {
            self.failed.get_or_insert(error);
        }
    }

    fn needs_records(&self) -> bool {
        self.format != OutputFormat::Human
    }

    fn finish(&mut self) -> std::io::Result<()> {
        self.failed.take().map_or(Ok(()), Err)
    }
}

/// `::error`/`::warning` workflow commands for a GitHub Actions log, with
/// ledger paths shown relative to `workspace`.
pub struct Annotations<W: Write> {
    workspace: Option<PathBuf>,
    out: W,
}

impl<W: Write> Annotations<W> {
    pub fn new(workspace: Option<PathBuf>, out: W) -> Annotations<W> {
        Annotations { workspace, out }
    }

    fn display(&self, ledger: &str) -> String {
        match &self.workspace {
            Some(base) => relative_to(base, ledger),
            None => ledger.to_string(),
        }
    }
}

impl<W: Write> Reporter for Annotations<W> {
    fn event(&mut self, event: &Event) {
        let lines = match event {
            Event::Report(report) => report.github_annotations(|ledger| self.display(ledger)),
            Event::Baseline(BaselineEvent::Report(report)) => report.github_annotations(|ledger| self.display(ledger)),
            _ => return,
        };
        for line in lines {
            let _ = writeln!(self.out, "{}", safe(&line));
        }
        let _ = self.out.flush();
    }

    fn needs_records(&self) -> bool {
        true
    }
}
