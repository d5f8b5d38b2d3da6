//! The one error type of a checker run or pipeline action, the exit
//! statuses of the command line, and the one printed form of every
//! diagnostic: `path:line: error: message` when it has a place in a file
//! (editors and terminals link it), else `gate-check: error: message`. Each
//! variant keeps the cause callers care about; only `Usage` (and a ledger
//! path that names no file) is a command-line mistake that earns the
//! pointer to `--help`.

use std::process::ExitCode;

use thiserror::Error;

use crate::approval::store::StoreError;
use crate::config::EnvironmentError;
use crate::diagnostic::{error_line, Diagnostic};
use crate::ledger::file::LedgerFileError;

/// How the process ends: the Node tool's exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: every gate met, or the action succeeded.
    Met,
    /// 1: some gate is unmet or needs a handoff.
    Unmet,
    /// 2: usage, parse or infrastructure failure.
    Error,
    /// 3: an ownership lease conflict refused a claim.
    LeaseConflict,
    /// 128 + N: the run was interrupted by signal N (130 for SIGINT, 143
    /// for SIGTERM, 129 for SIGHUP), as a shell reports a command it killed.
    Interrupted(u8),
}

impl Exit {
    pub fn code(self) -> u8 {
        match self {
            Exit::Met => 0,
            Exit::Unmet => 1,
            Exit::Error => 2,
            Exit::LeaseConflict => 3,
            Exit::Interrupted(signal) => 128u8.saturating_add(signal),
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit.code())
    }
}

#[derive(Debug, Error)]
pub enum Error {
    /// A command-line mistake: bad option combination, unknown scope, a
    /// directory that does not exist.
    #[error("{0}")]
    Usage(String),
    /// A ledger that cannot be read as a ledger (FIFO, link, oversize,
    /// invalid UTF-8, I/O).
    #[error(transparent)]
    LedgerFile(#[from] LedgerFileError),
    /// A ledger that does not parse: one diagnostic per problem.
    #[error("{}", .0.iter().map(Diagnostic::to_string).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<Diagnostic>),
    /// The approval store is unusable.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The process context cannot be read.
    #[error(transparent)]
    Environment(#[from] EnvironmentError),
    /// Anything else outside the tool's control: I/O on state files, locks,
    /// write-backs. One message per failure.
    #[error("{}", .0.join("\n"))]
    Infrastructure(Vec<String>),
}

impl Error {
    pub fn usage(message: impl Into<String>) -> Error {
        Error::Usage(message.into())
    }

    pub fn infrastructure(message: impl Into<String>) -> Error {
        Error::Infrastructure(vec![message.into()])
    }

    /// Every error ends the process with status 2.
    pub fn code(&self) -> Exit {
        Exit::Error
    }

    /// Whether the message should be followed by the pointer to `--help`.
    pub fn is_usage(&self) -> bool {
        match self {
            Error::Usage(_) | Error::LedgerFile(LedgerFileError::Missing(_)) => true,
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
            Error::Infrastructure(lines) => lines.clone(),
            other => vec![other.to_string()],
        }
    }

    /// The lines to print on stderr, each with its `error:` prefix.
    pub fn printed_lines(&self) -> Vec<String> {
        match self {
            Error::Invalid(diagnostics) => diagnostics.iter().map(Diagnostic::error_line).collect(),
            Error::LedgerFile(LedgerFileError::InvalidUtf8(path, line)) => {
                vec![Diagnostic::new(path.clone(), Some(*line), "invalid UTF-8").error_line()]
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
        assert!(!Error::infrastructure("cannot update GATES.md").is_usage());
        assert!(!Error::from(StoreError::InsideRoot("/r".into())).is_usage());
    }

    #[test]
    fn exit_codes_are_the_node_tools() {
        let codes: Vec<u8> = [Exit::Met, Exit::Unmet, Exit::Error, Exit::LeaseConflict].map(Exit::code).to_vec();
        assert_eq!(codes, [0, 1, 2, 3]);
        assert_eq!([2, 15, 1].map(|signal| Exit::Interrupted(signal).code()), [130, 143, 129]);
        assert_eq!(Error::infrastructure("a").lines(), ["a"]);
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
