//! The one error type of every command, folding in each area's own error
//! type, and the exit statuses of the command line. `cli` is the one place
//! that prints an error (`Error::printed_lines`) and picks the exit status
//! (`Error::exit`). Each variant keeps the cause callers care about; only
//! command-line mistakes (and a ledger path that names no file) earn the
//! pointer to `--help`.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

use crate::approval::store::StoreError;
use crate::config::{EnvironmentError, PathProblem};
use crate::diagnostic::{error_line, Diagnostic};
use crate::dispatch::error::DispatchError;
use crate::dispatch::WavesError;
use crate::exit::Exit;
use crate::install::InstallError;
use crate::lease::registry::RegistryError;
use crate::ledger::file::{LedgerFileError, UpdateError};
use crate::lint_files::LintError;
use crate::manual::ManualError;
use crate::paths::NotUtf8;
use crate::pipeline::StateError;
use crate::runner::SandboxError;
use crate::shell::ShellError;
use crate::target::{DirectoryError, InvalidId, TargetError};

#[derive(Debug, Error)]
pub enum Error {
    /// A command-line mistake: bad option combination, a directory that
    /// does not exist, a value out of range.
    #[error("{0}")]
    Usage(String),
    /// The ledgers named or implied cannot be found (an unknown or
    /// ambiguous scope, a linked gate directory).
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    InvalidId(#[from] InvalidId),
    #[error(transparent)]
    Shell(#[from] ShellError),
    #[error(transparent)]
    NotUtf8(#[from] NotUtf8),
    /// A ledger that cannot be read as a ledger (FIFO, link, oversize,
    /// invalid UTF-8, I/O).
    #[error(transparent)]
    LedgerFile(#[from] LedgerFileError),
    /// A gate file a pipeline action needs cannot be read.
    #[error("cannot inspect gate file {}: {source}", .path.display())]
    GateFile { path: PathBuf, source: LedgerFileError },
    /// A ledger that does not parse: one diagnostic per problem.
    #[error("{}", .0.iter().map(Diagnostic::to_string).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<Diagnostic>),
    /// The approval store is unusable.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The process context cannot be read.
    #[error(transparent)]
    Environment(#[from] EnvironmentError),
    /// PATH cannot be bound into an approval.
    #[error(transparent)]
    Path(#[from] PathProblem),
    /// A directory a command names is missing, not a directory, or cannot
    /// be inspected.
    #[error(transparent)]
    Directory(#[from] DirectoryError),
    /// A ledger a result would be written to cannot be written.
    #[error("cannot write back to {}: {source}", .path.display())]
    NotWritable { path: PathBuf, source: LedgerFileError },
    /// Write-backs that failed, one per ledger.
    #[error("{}", .0.iter().map(WriteBackFailure::to_string).collect::<Vec<_>>().join("\n"))]
    WriteBack(Vec<WriteBackFailure>),
    /// The scope's dispatch waves cannot be judged.
    #[error(transparent)]
    Waves(#[from] WavesError),
    /// A pipeline state file (session binding, status log) failed.
    #[error("cannot {doing}: {source}")]
    Pipeline { doing: &'static str, source: StateError },
    /// The lease registry failed.
    #[error("cannot {doing}: {source}")]
    Lease { doing: &'static str, source: RegistryError },
    /// `gate-check dispatch`.
    #[error(transparent)]
    Dispatch(#[from] DispatchError),
    /// `gate-check install-hooks`.
    #[error(transparent)]
    Install(#[from] InstallError),
    /// `gate-check man`.
    #[error(transparent)]
    Manual(#[from] ManualError),
    /// `gate-check lint` cannot find its ledgers.
    #[error(transparent)]
    Lint(#[from] LintError),
    /// The machine document could not be written to stdout.
    #[error("cannot write the {format} document: {source}")]
    Output { format: &'static str, source: io::Error },
    /// `--sandbox` asked for confinement this machine cannot give.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// `gate-check tree`.
    #[error(transparent)]
    Tree(#[from] crate::tree::TreeError),
    /// `gate-check init`.
    #[error(transparent)]
    Init(#[from] crate::init::InitError),
    /// `gate-check baseline` cannot check REF out, confine its runs, or
    /// find a gate to judge.
    #[error(transparent)]
    Baseline(#[from] crate::baseline::BaselineError),
}

/// One ledger's failed write-back.
#[derive(Debug, Error)]
#[error("cannot update {}: {source}", .path.display())]
pub struct WriteBackFailure {
    pub path: PathBuf,
    pub source: UpdateError,
}

impl Error {
    pub fn usage(message: impl Into<String>) -> Error {
        Error::Usage(message.into())
    }

    /// A machine document that could not be written: an error, except for
    /// a closed pipe, whose reader has stopped listening (`... | head`).
    pub fn unwritten(format: &'static str, source: io::Error) -> Option<Error> {
        (source.kind() != io::ErrorKind::BrokenPipe).then_some(Error::Output { format, source })
    }

    /// How the process ends after this error. Every error is exit 2 (the
    /// Node tool's "usage, parse or infrastructure failure"); the match is
    /// exhaustive so a new kind of error must choose.
    pub fn exit(&self) -> Exit {
        match self {
            Error::Usage(_)
            | Error::Target(_)
            | Error::InvalidId(_)
            | Error::Shell(_)
            | Error::NotUtf8(_)
            | Error::LedgerFile(_)
            | Error::GateFile { .. }
            | Error::Invalid(_)
            | Error::Store(_)
            | Error::Environment(_)
            | Error::Path(_)
            | Error::Directory(_)
            | Error::NotWritable { .. }
            | Error::WriteBack(_)
            | Error::Waves(_)
            | Error::Pipeline { .. }
            | Error::Lease { .. }
            | Error::Dispatch(_)
            | Error::Install(_)
            | Error::Manual(_)
            | Error::Lint(_)
            | Error::Output { .. }
            | Error::Sandbox(_)
            | Error::Tree(_)
            | Error::Init(_)
            | Error::Baseline(_) => Exit::Error,
        }
    }

    /// Whether the message should be followed by the pointer to `--help`.
    pub fn is_usage(&self) -> bool {
        match self {
            Error::Usage(_) | Error::Target(_) | Error::InvalidId(_) | Error::Shell(_) | Error::NotUtf8(_) => true,
            Error::Directory(error) => error.is_mistake(),
            Error::LedgerFile(LedgerFileError::Missing(_)) => true,
            Error::GateFile { source: LedgerFileError::Missing(_), .. } => true,
            // A store inside the repository is a mistake of configuration,
            // not of the command line: `--help` has nothing to say about it.
            _ => false,
        }
    }

    /// The messages, one per problem, without the printed prefixes (as
    /// machine documents carry them).
    pub fn lines(&self) -> Vec<String> {
        match self {
            Error::Invalid(diagnostics) => diagnostics.iter().map(Diagnostic::to_string).collect(),
            Error::WriteBack(failures) => failures.iter().map(WriteBackFailure::to_string).collect(),
            other => vec![other.to_string()],
        }
    }

    /// Where each of `lines` is in a ledger, when it is: a parse error's
    /// file and line, for annotations that point there.
    pub fn places(&self) -> Vec<Option<Diagnostic>> {
        match self {
            Error::Invalid(diagnostics) => diagnostics.iter().cloned().map(Some).collect(),
            _ => vec![None; self.lines().len()],
        }
    }

    /// The lines to print on stderr, each with the prefix of the command
    /// that failed: `gate-check: error:` (or `path:line: error:`) for the
    /// checker and lint, `gate-check dispatch:`, `gate-check man:` and
    /// `gate-check:` for the other commands, as the Node tool prints them.
    pub fn printed_lines(&self) -> Vec<String> {
        match self {
            Error::Invalid(diagnostics) => diagnostics.iter().map(Diagnostic::error_line).collect(),
            Error::LedgerFile(error) => vec![error.printed_line()],
            Error::Dispatch(error) => vec![crate::dispatch::cli::error_line(error)],
            Error::Manual(error) => vec![format!("gate-check man: {error}")],
            Error::Install(error) => vec![format!("gate-check: {error}")],
            Error::Tree(crate::tree::TreeError::Plan { path, line, message }) => {
                vec![Diagnostic::new(path.display().to_string(), Some(*line), message.as_str()).error_line()]
            }
            other => other.lines().iter().map(|line| error_line(line)).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_usage_mistakes_point_at_help() {
        assert!(Error::usage("--jobs needs an integer").is_usage());
        assert!(Error::from(LedgerFileError::Missing("x.md".into())).is_usage());
        assert!(!Error::from(LedgerFileError::NotRegular("fifo.md".into())).is_usage());
        assert!(!Error::from(LedgerFileError::TooLarge("big.md".into())).is_usage());
        assert!(!Error::Invalid(vec![Diagnostic::new("GATES.md", Some(3), "duplicate id")]).is_usage());
        assert!(!Error::Output { format: "JSON", source: io::Error::other("disk full") }.is_usage());
        assert!(!Error::from(StoreError::InsideRoot {
            kind: crate::approval::store::StoreKind::Approval,
            root: "/r".into()
        })
        .is_usage());
    }

    #[test]
    fn every_error_ends_with_status_2() {
        assert_eq!(Error::usage("a").lines(), ["a"]);
        assert_eq!(Error::usage("a").exit(), Exit::Error);
    }

    #[test]
    fn every_error_is_printed_in_one_format() {
        let invalid = Error::Invalid(vec![
            Diagnostic::new("/r/GATES.md", Some(3), "duplicate id"),
            Diagnostic::new("/r/GATES.md", None, "whole file"),
        ]);
        assert_eq!(invalid.lines(), ["/r/GATES.md:3: duplicate id", "/r/GATES.md: whole file"]);
        assert_eq!(invalid.printed_lines(), ["/r/GATES.md:3: error: duplicate id", "/r/GATES.md: error: whole file"]);
        let utf8 = Error::from(LedgerFileError::InvalidUtf8("/r/GATES.md".into(), 7));
        assert_eq!(utf8.printed_lines(), ["/r/GATES.md:7: error: invalid UTF-8"]);
        assert_eq!(Error::usage("--jobs x").printed_lines(), ["gate-check: error: --jobs x"]);
        assert_eq!(Diagnostic::new("a.md", None, "w").warning_line(), "a.md: warning: w");
    }
}
