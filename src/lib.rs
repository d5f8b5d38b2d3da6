//! gate-check: parse unlazy acceptance ledgers, refuse unapproved oracles,
//! run approved checks under output and time limits, and write
//! definition-bound evidence back atomically.
//!
//! Pure modules: `ledger` (model, parser, edits), `evidence`, `matcher`,
//! `approval` identity, `paths`, `lint` (gate-quality rules),
//! `hook::assess` (Stop-hook decisions), `install::settings` (the Claude Code
//! settings transform), `shell_words`. Side effects live in one module each:
//! `runner` spawns, `approval::store` touches approval records,
//! `ledger::file` reads and rewrites ledgers.

pub mod approval;
pub mod cli;
pub mod digest;
pub mod evidence;
pub mod hook;
pub mod install;
pub mod ledger;
pub mod lint;
pub mod lint_files;
pub mod matcher;
pub mod paths;
pub mod run;
pub mod runner;
pub mod shell;
pub mod shell_words;
pub mod target;
pub mod terminal;
