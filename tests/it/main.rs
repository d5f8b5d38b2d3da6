//! The one integration-test binary: every test drives the real `gate-check`
//! binary on real files in temporary directories. One module per area.

mod common;
mod core_support;

mod approval;
mod ci_files;
mod cli;
mod concurrency;
mod confined;
mod crash_safety;
mod diagnosis;
mod dispatch;
mod documents;
mod environment;
mod error_format;
mod errors;
mod evidence;
mod expect_regex;
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
mod processes;
mod reapproval;
mod reporters;
mod root_search;
mod runner;
mod smoke;
mod state_ignore;
mod state_ownership;
mod targeting;
