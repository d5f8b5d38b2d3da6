//! gate-check: parse unlazy acceptance ledgers, refuse unapproved oracles,
//! run approved checks under output and time limits, and write
//! definition-bound evidence back atomically.
//!
//! Pure modules: `ledger` (model, parser, edits), `evidence`, the `js_regex` crate (EXPECT matching),
//! `approval` identity, `paths`, `visible` (display escaping), `lint`
//! (gate-quality rules), `check::verdict`,
//! `report` records and renderers, `hook::assess` (Stop-hook decisions),
//! `install::settings` (the Claude Code settings transform), `shell_words`.
//!
//! A run: `cli` parses the command line, `config` reads the process context
//! once, and `check` plans, approves, runs and judges, emitting
//! `report::Event`s to the `report::Reporter`s the options ask for (human
//! lines, a JSON or JUnit document, GitHub annotations). Failures are one
//! `error::Error`; the process ends with an `exit::Exit`.
//!
//! Side effects live in one module each: `runner` spawns,
//! `approval::store` touches approval records, `ledger::file` reads and
//! rewrites ledgers, `durable` holds the locked read-modify-write every
//! state file uses, `pipeline` spells `.unlazy/` paths (`StateDir`) and
//! writes a scope's session and status log, `lease::registry` keeps
//! ownership leases (`lease` itself is the pure overlap logic), `actions`
//! runs the pipeline actions of the command line, `dispatch::store` reads
//! and replaces dispatch wave state, `hook::state` keeps the Stop hook's
//! progress state, `install` writes Claude Code settings, `state_root` creates `.unlazy/`
//! (and its ignore file), and `terminal`
//! owns the process's stdout and stderr.

pub mod actions;
pub mod approval;
pub mod check;
pub mod cli;
pub mod config;
pub mod diagnostic;
pub mod digest;
pub mod dispatch;
pub mod durable;
pub mod error;
pub mod evidence;
pub mod exit;
pub mod hook;
pub mod install;
pub mod layout;
pub mod lease;
pub mod ledger;
pub mod lint;
pub mod lint_files;
pub mod manual;
pub mod paths;
pub mod pipeline;
pub mod report;
pub mod runner;
pub mod shell;
pub mod shell_words;
pub mod state_root;
pub mod target;
pub mod terminal;
pub mod visible;
