//! The one integration-test binary: every test drives the real `gate-check`
//! binary on real files in temporary directories. One module per area.

mod common;
mod core_support;

mod approval;
// Makes its repositories with git, which the wine prefix the Windows tests
// run in does not have; interrupts with POSIX signals.
#[cfg(unix)]
mod baseline;
mod ci_files;
mod cli;
mod completion;
mod concurrency;
// `--sandbox` confines on Linux alone (Landlock, user namespaces); its refusal on
// Windows is tested in `windows`.
#[cfg(unix)]
mod confined;
// As `confined`.
#[cfg(unix)]
mod confined_hardening;
mod crash_safety;
mod daily;
mod daily_third;
mod diagnosis;
mod dispatch;
mod documents;
mod environment;
mod error_format;
mod errors;
mod evidence;
mod expect_regex;
mod fence_oracle;
mod guard;
mod hardening;
mod hardening_two;
mod hook;
mod hostile;
mod hosts;
mod human_output;
mod install_hooks;
mod jobs;
mod leases;
mod lint;
mod lock_interop;
mod manual;
mod node_parity;
mod orchestration;
mod output_formats;
mod output_ux;
mod parser;
mod parser_properties;
mod pipeline_actions;
// POSIX process groups, signals, sessions and /proc; the Job Object that
// contains a check on Windows is tested in `windows`.
#[cfg(unix)]
mod processes;
mod proof;
mod reapproval;
mod reporters;
mod root_search;
mod runner;
mod schemas;
mod selection;
mod smoke;
mod state_ignore;
// Runs as root and as another uid, and checks chown(2) results.
#[cfg(unix)]
mod state_ownership;
// Swaps directories for symbolic links, which Windows lets only
// administrators (or Developer Mode) create, and wine 8 creates none.
#[cfg(unix)]
mod swapped_directories;
mod targeting;
mod tree;
#[cfg(windows)]
mod windows;
