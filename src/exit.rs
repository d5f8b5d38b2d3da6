//! How the process ends: the Node tool's exit statuses.

use std::process::ExitCode;

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
    /// for SIGTERM, 129 for SIGHUP), as a shell reports a command it killed;
    /// on Windows Ctrl-C is 130 too and Ctrl-Break 149 (SIGBREAK, 21).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_the_node_tools() {
        let codes: Vec<u8> = [Exit::Met, Exit::Unmet, Exit::Error, Exit::LeaseConflict].map(Exit::code).to_vec();
        assert_eq!(codes, [0, 1, 2, 3]);
        assert_eq!([2, 15, 1].map(|signal| Exit::Interrupted(signal).code()), [130, 143, 129]);
    }
}
