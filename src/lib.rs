//! gate-check: parse unlazy acceptance ledgers, refuse unapproved oracles,
//! run approved checks under output and time limits, and write
//! definition-bound evidence back atomically.
//!
//! Pure modules: `ledger` (model, parser, edits), `evidence`, the `js_regex` crate (EXPECT matching),
//! `approval` identity, `paths`, `layout` (every name under `.unlazy/`),
//! `diagnostic`, `exit`, `credentials` (what a confined check does not
//! inherit), `visible` (display escaping), `lint` (gate-quality
//! rules), `check::verdict`, `check::events` (what a run tells reporters),
//! `report` records and renderers, `hook::assess` (Stop-hook decisions),
//! `host` (what differs between agent hosts), `install::settings` (the hook
//! file transform), `shell_words`.
//!
//! A run: `cli` parses the command line and resolves it once into a typed
//! `cli::Command` (with `config::Environment`, the process context read
//! once at the edge); a checker run plans, approves, runs and judges in
//! `check`, emitting `check::events::Event`s to the `report` reporters the
//! configuration asks for. `runner::Containment` is built at the edge and
//! handed to the pool and the runner. Every failure is one `error::Error`,
//! printed in one place (`cli`); the process ends with an `exit::Exit`.
//!
//! Side effects live in one module each: `runner` spawns,
//! `approval::store` touches approval records, `ledger::file` reads and
//! rewrites ledgers, `durable` holds the file primitives every state file
//! uses (atomic replace, stable read, the Node-compatible lock, the locked
//! read-modify-write; nothing of `.unlazy/`), `state_root` creates
//! `.unlazy/` (and its ignore file) and names each file's lock, `pipeline`
//! writes a scope's session and status log, `lease::registry` keeps
//! ownership leases (`lease` itself is the pure overlap logic), `actions`
//! runs the pipeline actions of the command line, `dispatch::store` reads
//! and replaces dispatch wave state, `hook::state` keeps the Stop hook's
//! progress state, `install` writes the agent hosts' hook files, and `terminal`
//! owns the process's stdout and stderr. Only what the binary and the
//! integration tests use is public.

pub(crate) mod actions;
pub(crate) mod approval;
pub(crate) mod baseline;
pub(crate) mod check;
pub(crate) mod checkout;
pub mod cli;
pub(crate) mod config;
pub(crate) mod credentials;
pub(crate) mod diagnostic;
pub mod digest;
pub(crate) mod dispatch;
pub(crate) mod durable;
pub(crate) mod error;
pub(crate) mod evidence;
pub(crate) mod exit;
pub(crate) mod hook;
pub(crate) mod host;
pub(crate) mod init;
pub(crate) mod install;
pub(crate) mod layout;
pub(crate) mod lease;
pub mod ledger;
pub(crate) mod lint;
pub(crate) mod lint_files;
pub(crate) mod manual;
pub(crate) mod paths;
pub(crate) mod pipeline;
pub(crate) mod proof;
pub(crate) mod receipts;
pub(crate) mod report;
pub(crate) mod runner;
pub(crate) mod shell;
pub(crate) mod shell_words;
pub mod state_root;
pub(crate) mod target;
pub mod terminal;
pub(crate) mod tree;
pub(crate) mod visible;
pub(crate) mod work_tree;
