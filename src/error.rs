//! The one error type of a checker run or pipeline action, and the exit
//! statuses of the command line. Each variant keeps the cause callers care
//! about; only `Usage` (and a ledger path that names no file) is a
//! command-line mistake that earns the pointer to `--help`.

use std::process::ExitCode;

use thiserror::Error;

use crate::approval::store::StoreError;
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

    /// The status a subcommand reported as a number; anything outside the
    /// four known codes is an error.
    pub fn from_code(code: i32) -> Exit {
        match code {
            0 => Exit::Met,
            1 => Exit::Unmet,
            3 => Exit::LeaseConflict,
            _ => Exit::Error,
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
    /// A ledger that does not parse: one message per problem, each naming
    /// file and line.
    #[error("{}", .0.join("\n"))]
    Invalid(Vec<String>),
    /// The approval store is unusable.
    #[error(transparent)]
    Store(#[from] StoreError),
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
            // The store refusing to live inside the repository is a choice
            // of UNLAZY_APPROVAL_DIR the user can correct, as in the Node tool.
            Error::Store(StoreError::InsideRoot(_)) => true,
            _ => false,
        }
    }

    /// The message as printed lines, without the `gate-check: ` prefix.
    pub fn lines(&self) -> Vec<String> {
        match self {
            Error::Invalid(lines) | Error::Infrastructure(lines) => lines.clone(),
            other => vec![other.to_string()],
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
        assert!(!Error::Invalid(vec!["GATES.md: line 3: duplicate id".into()]).is_usage());
        assert!(!Error::infrastructure("cannot update GATES.md").is_usage());
    }

    #[test]
    fn exit_codes_are_the_node_tools() {
        let codes: Vec<u8> = [Exit::Met, Exit::Unmet, Exit::Error, Exit::LeaseConflict].map(Exit::code).to_vec();
        assert_eq!(codes, [0, 1, 2, 3]);
        assert_eq!([2, 15, 1].map(|signal| Exit::Interrupted(signal).code()), [130, 143, 129]);
        assert_eq!(Exit::from_code(3), Exit::LeaseConflict);
        assert_eq!(Exit::from_code(-1), Exit::Error);
        assert_eq!(Error::Invalid(vec!["a".into(), "b".into()]).lines(), ["a", "b"]);
    }
}
