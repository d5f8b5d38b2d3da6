//! What a run reports, and to whom. The check pipeline emits a stream of
//! typed `check::events::Event`s; each `Reporter` renders the ones it cares
//! about: `human` (the Node tool's lines), and in `machine` the JSON or
//! JUnit document and GitHub Actions annotations, which all render the one
//! `record::RunReport` of the run. Every string a reporter writes passes
//! `terminal::safe`.

pub mod human;
pub mod machine;
pub mod record;
pub mod tail;

use crate::check::events::{Event, Reporter};
pub use record::RunReport;

/// Several reporters fed the same events, in order.
#[derive(Default)]
pub struct Reporters(Vec<Box<dyn Reporter>>);

impl Reporters {
    pub fn push(&mut self, reporter: Box<dyn Reporter>) {
        self.0.push(reporter);
    }
}

impl Reporter for Reporters {
    fn event(&mut self, event: &Event) {
        for reporter in &mut self.0 {
            reporter.event(event);
        }
    }

    fn needs_records(&self) -> bool {
        self.0.iter().any(|reporter| reporter.needs_records())
    }

    fn lists_met(&self) -> bool {
        self.0.iter().any(|reporter| reporter.lists_met())
    }

    fn flush(&mut self) {
        for reporter in &mut self.0 {
            reporter.flush();
        }
    }

    fn finish(&mut self) -> std::io::Result<()> {
        self.0.iter_mut().map(|reporter| reporter.finish()).fold(Ok(()), Result::and)
    }
}

/// Which document, if any, stdout carries instead of the human report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    Human,
    Json,
    Junit,
}
