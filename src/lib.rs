//! gate-check: parse unlazy acceptance ledgers, refuse unapproved oracles,
//! run approved checks under output and time limits, and write
//! definition-bound evidence back atomically.
//!
//! Pure modules: `ledger` (model, parser, edits), `evidence`, `matcher`,
//! `approval` identity, `paths`. Side effects live in one module each:
//! `runner` spawns, `approval::store` touches approval records,
//! `ledger::file` reads and rewrites ledgers, `pipeline` writes a scope's
//! session and status log, `lease::registry` keeps ownership leases
//! (`lease` itself is the pure overlap logic), and `actions` runs the
//! pipeline actions of the command line, `dispatch::store` reads and
//! replaces dispatch wave state.

pub mod actions;
pub mod approval;
pub mod cli;
pub mod digest;
pub mod dispatch;
pub mod evidence;
pub mod lease;
pub mod ledger;
pub mod matcher;
pub mod paths;
pub mod pipeline;
pub mod report;
pub mod run;
pub mod runner;
pub mod shell;
pub mod target;
pub mod terminal;
