//! The command line: clap definitions, the Node tool's option rules, the
//! one place every command's error is printed, and (in `command`) the
//! arguments resolved once into a typed `Command`.

mod baseline;
mod command;
mod complete;
mod run_options;

use command::Command;
use run_options::{ReportOptions, RunOptions};

use std::ffi::OsString;
use std::path::PathBuf;

use clap::builder::NonEmptyStringValueParser;
use clap::{CommandFactory, Parser, Subcommand};
use clap_complete::engine::ArgValueCompleter;

use crate::actions::Action;
use crate::check::CheckConfig;
use crate::config::{ColorWhen, Environment};
use crate::error::Error;
use crate::exit::Exit;
use crate::report::human::{Human, Style, Verbosity};
use crate::report::machine::{Annotations, Document};
use crate::report::{OutputFormat, Reporters};
use crate::terminal::{self, Console, Stderr};

const AFTER_HELP: &str = "\
format: a ledger (GATES.md, gates/*.md) is Markdown; gate-check init writes one.
  - [ ] T1: parser tests pass   a gate: a checkbox at column 0, an id, the outcome
    CHECK: cargo test           shell code that tests it (runs once approved)
    EXPECT: /test result: ok/   text its output must contain, or /regex/flags
    CWD: crates/parser          optional: the directory CHECK runs in, relative
    EVIDENCE: pending           written by gate-check when the check passes
    INPUTS: src/**, Cargo.lock  optional: root-relative globs its proof depends on
  Attributes are indented and in capitals; a gate with neither CHECK nor
  EXPECT is manual (a person ticks it and writes the EVIDENCE).

CHECK execution requires prior approval keyed to the exact CHECK, EXPECT,
resolved CWD, resolved shell, timeout, output/regex limits, platform, and PATH.
Approvals live outside the repository under ~/.unlazy/approved by default
(UNLAZY_APPROVAL_DIR overrides).

exit codes: 0 all met/action succeeded; 1 unmet; 2 usage/parse/infrastructure;
            3 lease conflict.";

#[derive(Debug, Parser)]
#[command(
    name = "gate-check",
    version,
    about = "Run the approved gates of unlazy acceptance ledgers and record definition-bound evidence",
    after_help = AFTER_HELP,
    args_conflicts_with_subcommands = true
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Option<Subcommands>,
    /// Report only; never execute, approve, resolve a shell, or write
    #[arg(long)]
    pub status: bool,
    /// Re-run every runnable gate, including met ones; failures are unchecked
    #[arg(long)]
    pub reverify: bool,
    /// Approve each exact pending oracle, then run it
    #[arg(long)]
    pub approve: bool,
    #[command(flatten)]
    pub run: RunOptions,
    /// A met gate counts only when gate-check proved it on the tree as it is now (also UNLAZY_PROOF=1);
    /// a run re-runs the approved gates whose proof is stale or missing
    #[arg(long)]
    pub proof: bool,
    #[command(flatten)]
    pub report: ReportOptions,
    /// Atomically claim the leaf's OWNS paths as ownership leases (exit 3 on conflict)
    #[arg(long, help_heading = "Pipeline actions")]
    pub claim: bool,
    /// Release the scope's ownership leases (also after its folder is gone)
    #[arg(long, help_heading = "Pipeline actions")]
    pub release: bool,
    /// The leaf (gate file stem) to --claim or --release
    #[arg(long, value_name = "NAME", value_parser = NonEmptyStringValueParser::new(), help_heading = "Pipeline actions",
          add = ArgValueCompleter::new(complete::leaf_names))]
    pub leaf: Option<String>,
    /// Append one timestamped line to the scope's status.log
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true, value_parser = NonEmptyStringValueParser::new(), help_heading = "Pipeline actions")]
    pub log: Option<String>,
    /// Bind an agent session id to the scope (writes .unlazy/ID/session)
    #[arg(long, value_name = "SESSION", allow_hyphen_values = true, value_parser = NonEmptyStringValueParser::new(), help_heading = "Pipeline actions")]
    pub bind: Option<String>,
    /// List the pipelines under .unlazy/
    #[arg(long = "list-scopes", help_heading = "Pipeline actions")]
    pub list_scopes: bool,
}

/// Tools that ship in the same binary. A ledger file that happens to be
/// named like one of these is passed as `./NAME` or after `--`.
#[derive(Debug, Subcommand)]
pub(crate) enum Subcommands {
    /// Print the script that registers completion with a shell (it calls gate-check back on each TAB)
    Completions {
        /// bash, elvish, fish, powershell or zsh
        shell: clap_complete::Shell,
    },
    /// Print a roff manual page, or write every page with --dir
    Man(crate::manual::ManArgs),
    /// Write a starter GATES.md into the repository root (a working example to edit); never overwrites
    Init {
        /// The repository root (default: the nearest directory upward with GATES.md, gates/, .unlazy/ or .git)
        #[arg(long, value_name = "DIR")]
        root: Option<PathBuf>,
    },
    /// Record and check native dispatch launch waves
    Dispatch(crate::dispatch::cli::DispatchArgs),
    /// Judge each approved gate by its check on a temporary checkout of REF and on the work tree: discriminates,
    /// vacuous, failing or unknown; writes no ledger
    Baseline(baseline::BaselineArgs),
    /// Draw the pipeline's PLAN tree with live gate states, leases, waves and drift; never executes
    Tree {
        /// The pipeline to draw (default: as --status chooses)
        #[arg(long, value_name = "ID", add = ArgValueCompleter::new(complete::scope_ids))]
        scope: Option<String>,
        /// human (a tree for the terminal), json, markdown (a job summary) or mermaid
        #[arg(long, value_name = "FORMAT", value_enum, default_value_t = crate::tree::TreeFormat::Human)]
        format: crate::tree::TreeFormat,
        /// When to colour the human tree (never also draws it in plain ASCII)
        #[arg(long, value_name = "WHEN", value_enum, default_value_t = ColorWhen::Auto)]
        color: ColorWhen,
    },
    /// Audit whether ledgers' gates are worth passing; never executes a CHECK
    Lint {
        /// Treat warnings as failures (exit 1)
        #[arg(long)]
        strict: bool,
        /// Print one JSON document instead of text (the same as --format json)
        #[arg(long)]
        json: bool,
        /// `text` (the default) or `json`, as the checker's --format
        #[arg(long, value_name = "FORMAT", value_enum)]
        format: Option<crate::lint_files::LintFormat>,
        /// Do not report this rule in any ledger (repeatable); a ledger allows one for some gates with a
        /// line `<!-- lint-allow: RULE GATE... -->`
        #[arg(long, value_name = "RULE")]
        allow: Vec<String>,
        /// The pipeline whose ledgers to lint when no file is named
        #[arg(long, value_name = "ID", add = ArgValueCompleter::new(complete::scope_ids))]
        scope: Option<String>,
        /// Ledger files to lint (default: the ledgers the checker targets)
        #[arg(value_name = "FILE")]
        files: Vec<PathBuf>,
    },
    /// Agent hooks (Claude Code, Codex, Gemini CLI, Cursor); they never execute a check
    Hook {
        #[command(subcommand)]
        event: HookEvent,
    },
    /// Register (or remove) the agent host's Stop hook (`gate-check hook stop`) and pre-tool guard (`gate-check hook pre-tool`)
    InstallHooks {
        /// The agent host whose hook file to write
        #[arg(long, value_enum, default_value_t = crate::host::Host::Claude)]
        agent: crate::host::Host,
        /// Pin the hook to the pipeline .unlazy/ID
        #[arg(long, value_name = "ID", value_parser = NonEmptyStringValueParser::new())]
        scope: Option<String>,
        /// Write the project's shared .claude/settings.json (embeds an absolute path)
        #[arg(long, conflicts_with = "global")]
        shared: bool,
        /// Write the current user's file (~/.claude/settings.json, ~/.codex/hooks.json, ...)
        #[arg(long)]
        global: bool,
        /// Remove this tool's hook entries (Stop hook and guard) from the chosen settings file
        #[arg(long)]
        uninstall: bool,
        /// Install the Stop hook alone, without the pre-tool guard (and remove a guard installed before)
        #[arg(long, conflicts_with = "uninstall")]
        no_guard: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum HookEvent {
    /// Stop hook: reads the host's hook JSON on stdin and blocks while gates are unmet
    Stop {
        /// The agent host, for its reply's schema (default: told by the payload, else Claude Code's)
        #[arg(long, value_enum)]
        agent: Option<crate::host::Host>,
        /// Guard only the pipeline .unlazy/ID
        #[arg(long, value_name = "ID")]
        scope: Option<String>,
        /// Judge met gates by their ledgers alone, as the Node hook does, not by their proofs
        #[arg(long)]
        no_proof: bool,
    },
    /// Pre-tool guard: refuses tool calls that tick runnable gates, write their EVIDENCE, write approvals,
    /// receipts or locks, or run --approve
    PreTool {
        /// The agent host, for its reply's schema (default: told by the payload, else Claude Code's)
        #[arg(long, value_enum)]
        agent: Option<crate::host::Host>,
    },
}

impl Cli {
    /// The pipeline actions requested, in the Node tool's order.
    fn actions(&self) -> Vec<Action> {
        let mut found = Vec::new();
        if self.claim {
            found.push(Action::Claim);
        }
        if self.release {
            found.push(Action::Release);
        }
        if self.list_scopes {
            found.push(Action::ListScopes);
        }
        if let Some(text) = &self.log {
            found.push(Action::Log(text.clone()));
        }
        if let Some(session) = &self.bind {
            found.push(Action::Bind(session.clone()));
        }
        found
    }

    /// The Node tool's rules for combining modes and options.
    fn validate(&self) -> Result<(), Error> {
        let usage = |message: String| Err(Error::Usage(message));
        let actions = self.actions();
        if actions.len() > 1 {
            let flags: Vec<&str> = actions.iter().map(Action::flag).collect();
            return usage(format!("pipeline actions are mutually exclusive: {}", flags.join(", ")));
        }
        let action = actions.first().map(Action::flag);
        if self.status && self.reverify {
            return usage("--status and --reverify are mutually exclusive".into());
        }
        if self.status && self.approve {
            return usage("--status never approves commands; remove --approve".into());
        }
        if let Some(action) = action {
            let modes = [("--status", self.status), ("--reverify", self.reverify), ("--approve", self.approve)];
            if let Some((mode, _)) = modes.iter().find(|(_, given)| *given) {
                return usage(format!("{action} cannot be combined with the run mode {mode}"));
            }
            if !self.run.files.is_empty() {
                return usage(format!("{action} cannot be combined with explicit files"));
            }
            if self.report.format.is_some() {
                return usage(format!("{action} cannot be combined with --format"));
            }
            if !self.run.gates.is_empty() || self.run.show_output {
                return usage(format!("{action} cannot be combined with --gate or --show-output"));
            }
            if self.run.partition.is_some() {
                return usage(format!("{action} cannot be combined with --partition"));
            }
            if self.run.sandbox || !self.run.sandbox_keep_env.is_empty() {
                return usage(format!("{action} runs no check; remove --sandbox"));
            }
            if self.proof {
                return usage(format!("{action} judges no gate; remove --proof"));
            }
        }
        if !self.run.files.is_empty() && self.run.scope.is_some() {
            return usage("explicit files and --scope are mutually exclusive".into());
        }
        if self.leaf.is_some() && !self.claim && !self.release {
            return usage("--leaf is only valid with --claim or --release".into());
        }
        let execution = [
            ("--timeout", self.run.timeout.is_some()),
            ("--jobs", self.run.jobs.is_some()),
            ("--shell", self.run.shell.is_some()),
            ("--cwd", self.run.cwd.is_some()),
        ];
        let non_executing = if self.status { Some("--status") } else { action };
        if let (Some(mode), Some((option, _))) = (non_executing, execution.iter().find(|(_, given)| *given)) {
            return usage(format!("{mode} cannot be combined with {option}: it runs no checks"));
        }
        Ok(())
    }
}

/// The reporters a run's options and environment ask for: the human lines
/// (on stderr when stdout carries a document), the document, and GitHub
/// Actions annotations when running there.
fn reporters(options: &CheckConfig, looks: Looks, env: &Environment) -> Reporters {
    let machine = options.format != OutputFormat::Human;
    let style = Style {
        color: env.terminal.color(looks.color, machine),
        live: env.terminal.live(),
        workflow_commands_live: env.github.is_some(),
        verbosity: looks.verbosity,
    };
    let mut reporters = Reporters::default();
    if machine {
        reporters.push(Box::new(Human::new(Stderr, Stderr, style)));
        // Test-report views resolve paths against the checkout.
        let base = env.github.as_ref().and_then(|github| github.workspace.clone());
        let base = base.unwrap_or_else(|| options.root.path.clone());
        reporters.push(Box::new(Document::new(options.format, base, Console)));
    } else {
        reporters.push(Box::new(Human::new(Console, Stderr, style)));
    }
    if let Some(github) = &env.github {
        let workspace = github.workspace.clone().or_else(|| Some(env.cwd.clone()));
        // Workflow commands are read from stdout unless stdout carries a
        // document; the runner reads stderr too.
        if machine {
            reporters.push(Box::new(Annotations::new(workspace, Stderr)));
        } else {
            reporters.push(Box::new(Annotations::new(workspace, Console)));
        }
    }
    reporters
}

/// How the human report looks: `--color` and `-q`/`-v`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Looks {
    color: ColorWhen,
    verbosity: Verbosity,
}

/// Prints an error, with the pointer to `--help` only for usage mistakes.
fn report_error(error: &Error) -> Exit {
    for line in error.printed_lines() {
        terminal::warn(&line);
    }
    if error.is_usage() {
        terminal::warn("run gate-check --help for usage");
    }
    error.exit()
}

/// Prints clap's help (trusted) as is, and its errors, which echo raw
/// arguments, through the sanitizer so no argument can drive the terminal.
fn report_parse_error(error: &clap::Error) -> Exit {
    let text = error.render().to_string();
    if error.use_stderr() {
        for line in text.lines() {
            terminal::warn(line);
        }
    } else {
        terminal::emit(text.as_bytes());
    }
    // Help and version go to stdout and succeed; every other clap error is usage.
    if error.use_stderr() {
        Exit::Error
    } else {
        Exit::Met
    }
}

/// The first line of a clap error, without its `error: ` label.
fn first_error_line(error: &clap::Error) -> String {
    if error.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let command = Cli::command();
        let events: Vec<String> = command
            .find_subcommand("hook")
            .map(|hook| hook.get_subcommands().map(|event| event.get_name().to_string()).collect())
            .unwrap_or_default();
        return format!("a hook event is required: gate-check hook {}", events.join("|"));
    }
    let rendered = error.render().to_string();
    let first = rendered.lines().find(|line| !line.trim().is_empty()).unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).trim().to_string()
}

/// The Node tool reads its whole command line before it answers `--help`:
/// a mistake it finds while reading (an unknown option, an option given
/// twice, `-h` and `--help` included, a value option without a value, and
/// `-h` inside a cluster such as `-hh`, which it does not accept) is a usage
/// error (exit 2) even beside the checker's help, while a mistake in what
/// the options mean (`--status --reverify`, `--jobs 99`) is not. That
/// mistake, in clap's words, or `None` when help is answered. A
/// subcommand's help is clap's alone.
fn mistake_beside_help(arguments: &[OsString]) -> Option<clap::Error> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let first = arguments.get(1)?.to_str()?;
    let mut command = Cli::command();
    if command.find_subcommand(first).is_some() {
        return None;
    }
    let end = arguments.iter().position(|argument| argument == "--").unwrap_or(arguments.len());
    let options = &arguments[1..end];
    let mut mistake = |kind: ErrorKind, message: String| Some(command.error(kind, message));
    for help in ["-h", "--help"] {
        if options.iter().filter(|argument| *argument == help).count() > 1 {
            return mistake(
                ErrorKind::ArgumentConflict,
                format!("the argument '{help}' cannot be used multiple times"),
            );
        }
    }
    let without_help: Vec<&OsString> = arguments
        .iter()
        .enumerate()
        .filter(|(at, argument)| *at >= end || (*argument != "--help" && *argument != "-h"))
        .map(|(_, argument)| argument)
        .collect();
    let error = Cli::try_parse_from(without_help).err()?;
    let context = |kind: ContextKind| match error.get(kind) {
        Some(ContextValue::String(text)) => Some(text.clone()),
        Some(ContextValue::Strings(texts)) if texts.len() == 1 => texts.first().cloned(),
        _ => None,
    };
    let reading_mistake = match error.kind() {
        // Still asked for: `-h` sits inside a cluster of short options.
        ErrorKind::DisplayHelp => {
            let cluster =
                options.iter().filter_map(|argument| argument.to_str()).find(|argument| clusters_help(argument));
            return mistake(ErrorKind::UnknownArgument, format!("unexpected argument '{}' found", cluster?));
        }
        ErrorKind::UnknownArgument => true,
        ErrorKind::ArgumentConflict => context(ContextKind::InvalidArg) == context(ContextKind::PriorArg),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => {
            context(ContextKind::InvalidValue).as_deref() == Some("")
        }
        _ => false,
    };
    reading_mistake.then_some(error)
}

/// Whether `argument` is a cluster of short options (`-qh`) holding `-h`
/// before any option that takes the rest as its value (`-j2h` does not).
fn clusters_help(argument: &str) -> bool {
    let Some(shorts) = argument.strip_prefix('-').filter(|rest| rest.len() > 1 && !rest.starts_with('-')) else {
        return false;
    };
    let command = Cli::command();
    for short in shorts.chars() {
        if short == 'h' {
            return true;
        }
        let takes_value = command
            .get_arguments()
            .find(|arg| arg.get_short() == Some(short))
            .is_some_and(|arg| arg.get_action().takes_values());
        if takes_value {
            return false;
        }
    }
    false
}

/// Parses the process arguments, runs, and returns the exit status.
pub fn main() -> Exit {
    // A shell asking for completions (GATE_CHECK_COMPLETE=<shell>) is answered alone.
    complete::answer_if_asked();
    // Every line any subcommand prints is neutralized alike.
    terminal::set_workflow_commands_live(crate::config::github_actions());
    let arguments: Vec<OsString> = std::env::args_os().collect();
    let cli = match Cli::try_parse_from(&arguments) {
        Ok(cli) => cli,
        // A Stop hook that exits 2 blocks the agent with its stderr as the
        // reason, so a broken hook command line must never do that.
        Err(error) if error.use_stderr() && arguments.get(1).is_some_and(|first| first == "hook") => {
            let (problem, hook_arguments) = (first_error_line(&error), &arguments[2..]);
            match hook_arguments.first().is_some_and(|event| event == "pre-tool") {
                true => crate::hook::pre_tool::misconfigured(&problem, hook_arguments),
                false => crate::hook::misconfigured(&problem, hook_arguments),
            }
            return Exit::Met;
        }
        Err(error) if error.kind() == clap::error::ErrorKind::DisplayHelp => {
            return report_parse_error(mistake_beside_help(&arguments).as_ref().unwrap_or(&error));
        }
        Err(error) => return report_parse_error(&error),
    };
    // The environment is read once, here; the hook runs even without one.
    let outcome = Command::from_args(cli, Environment::from_process()).and_then(Command::execute);
    outcome.unwrap_or_else(|error| report_error(&error))
}
