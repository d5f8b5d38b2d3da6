//! The options the checker and `baseline` share, declared once and
//! flattened into both command lines: what to run and how
//! (`RunOptions`), and how the run reports (`ReportOptions`). Their help
//! is the checker's; `baseline` words some of it its own way.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::builder::NonEmptyStringValueParser;
use clap::Args;
use clap_complete::engine::ArgValueCompleter;

use super::{complete, Looks};
use crate::approval::store::StoreLocation;
use crate::check::{self, CheckConfig, RunMode};
use crate::config::{ColorWhen, Environment};
use crate::report::human::Verbosity;
use crate::report::OutputFormat;
use crate::target::{Looking, Root};
use crate::{paths, shell};

// The two groups sit apart so that each command's own options (the
// checker's --proof, baseline's --unconfined) keep their place between
// them in --help.

#[derive(Debug, Args)]
pub(crate) struct RunOptions {
    /// Rolling concurrency, integer 1..64 (default 1); reports stay in ledger order
    #[arg(short = 'j', long, allow_hyphen_values = true, value_name = "N", value_parser = parse_jobs)]
    pub jobs: Option<NonZeroUsize>,
    /// Per-check timeout, integer seconds 1..86400 (default 120)
    #[arg(long, allow_hyphen_values = true, value_name = "S", value_parser = parse_timeout)]
    pub timeout: Option<Duration>,
    /// Command shell (else UNLAZY_SHELL, else /bin/sh); a bare name is searched on PATH
    #[arg(long, allow_hyphen_values = true, value_name = "PATH", value_parser = NonEmptyStringValueParser::new())]
    pub shell: Option<String>,
    /// Default CHECK directory (default: the ledger's directory for explicit files, else --root)
    #[arg(long, allow_hyphen_values = true, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Repository/pipeline root (default: the nearest directory upward with GATES.md, gates/, .unlazy/ or .git)
    #[arg(long, allow_hyphen_values = true, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Use the pipeline .unlazy/ID (or UNLAZY_SCOPE)
    #[arg(long, allow_hyphen_values = true, value_name = "ID", value_parser = NonEmptyStringValueParser::new(),
          add = ArgValueCompleter::new(complete::scope_ids))]
    pub scope: Option<String>,
    /// Run and judge only these gates (repeatable; comma lists and globs: `G3` in every ledger,
    /// `leaf-1:G3` in one, `'T*'`, `'leaf-1:*'`, `T1,T2`). The verdict counts only selected gates;
    /// others (and dispatch waves) are left untouched
    #[arg(long = "gate", value_name = "ID", value_parser = NonEmptyStringValueParser::new(),
          add = ArgValueCompleter::new(complete::gate_ids))]
    pub gates: Vec<String>,
    /// Judge and run only share K of N (1 <= K <= N): every Nth selected gate in ledger order,
    /// so N CI jobs with K = 1..N cover every gate exactly once
    #[arg(long, value_name = "K/N", value_parser = parse_partition)]
    pub partition: Option<check::Partition>,
    /// After a failed check, print its sanitized output (last 200 lines, at most 64 KiB)
    #[arg(long)]
    pub show_output: bool,
    /// Run every check confined (Linux; also UNLAZY_SANDBOX=1): writes only under each ledger's repository and a
    /// private TMPDIR, everything else read-only, no network, credential variables withheld; fails closed where it
    /// cannot confine
    #[arg(long)]
    pub sandbox: bool,
    /// With --sandbox: let checks inherit this variable although its name looks like a credential (repeatable)
    #[arg(long, value_name = "NAME", value_parser = NonEmptyStringValueParser::new())]
    pub sandbox_keep_env: Vec<String>,
    /// Explicit ledger files, all honored and only those (relative ones from --root, else the current directory)
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct ReportOptions {
    /// Put a machine document on stdout (human lines move to stderr)
    #[arg(long, value_name = "FORMAT", value_enum)]
    pub format: Option<OutputFormat>,
    /// Show only failures, stale results, unmet gates, pending approvals (without PATH) and the verdict
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Print each RUN line when its check starts, checks still running after 5, 10, 20... s, and durations;
    /// with --status, a MET line for each met gate
    #[arg(short, long)]
    pub verbose: bool,
    /// When to colour the markers of human lines (the flag beats every variable)
    #[arg(long, value_name = "WHEN", value_enum, default_value_t = ColorWhen::Auto)]
    pub color: ColorWhen,
}

impl RunOptions {
    /// The run these options ask for in `mode`, with `env` filling in what
    /// they leave open. What each command resolves its own way is left
    /// empty: the approve command, the sandbox request and `--proof`.
    pub fn check_config(self, report: &ReportOptions, mode: RunMode, env: &Environment) -> CheckConfig {
        let scope = self.scope.or_else(|| env.scope.clone());
        let (root, default_cwd) =
            locate(env, !self.files.is_empty(), self.root.as_deref(), self.cwd.as_deref(), scope.as_deref());
        CheckConfig {
            mode,
            jobs: self.jobs.unwrap_or(NonZeroUsize::MIN),
            timeout: self.timeout.unwrap_or(check::DEFAULT_TIMEOUT),
            shell: shell::requested(self.shell.as_deref(), env),
            approve_command: String::new(),
            root,
            default_cwd,
            invoked_in: env.cwd.clone(),
            cwd_given: self.cwd.is_some(),
            scope,
            store: StoreLocation::of(env),
            receipts: StoreLocation::of_receipts(env),
            files: self.files,
            format: report.format.unwrap_or(OutputFormat::Human),
            gates: self.gates,
            partition: self.partition,
            show_output: self.show_output,
            sandbox: None,
            proof: false,
        }
    }

    /// The options an approval is bound to (timeout, shell, CWD) and the
    /// root and scope, as `--approve` must be given them to approve the
    /// same oracles.
    pub fn approval_words(&self) -> Vec<String> {
        use crate::shell_words::quote;
        let mut words = Vec::new();
        if let Some(timeout) = self.timeout.filter(|timeout| *timeout != check::DEFAULT_TIMEOUT) {
            words.push(format!("--timeout {}", timeout.as_secs()));
        }
        let valued = [
            ("--shell", self.shell.clone()),
            ("--cwd", self.cwd.as_ref().map(|path| path.display().to_string())),
            ("--root", self.root.as_ref().map(|path| path.display().to_string())),
            ("--scope", self.scope.clone()),
        ];
        words.extend(valued.into_iter().filter_map(|(flag, value)| Some(format!("{flag} {}", quote(&value?)))));
        words
    }
}

impl ReportOptions {
    pub fn looks(&self) -> Looks {
        let verbosity = match (self.quiet, self.verbose) {
            (true, _) => Verbosity::Quiet,
            (_, true) => Verbosity::Verbose,
            _ => Verbosity::Normal,
        };
        Looks { color: self.color, verbosity }
    }
}

/// The root (`--root`, else found from where the user is, or given by
/// explicit files) and the checks' default directory (`--cwd`).
fn locate(
    env: &Environment,
    files_given: bool,
    root: Option<&Path>,
    cwd: Option<&Path>,
    scope: Option<&str>,
) -> (Root, PathBuf) {
    let located = match files_given {
        false => Root::locate(&env.cwd, env.home.as_deref(), root, Looking::for_scope(scope)),
        true => Root::given(paths::resolve(&env.cwd, root.unwrap_or(Path::new(".")))),
    };
    // --cwd is taken from --root when that is given, else from where the
    // user is, which a root found further up must not change.
    let cwd_base = if root.is_some() { &located.path } else { &env.cwd };
    let default_cwd = paths::resolve(cwd_base, cwd.unwrap_or(Path::new(".")));
    (located, default_cwd)
}

fn parse_bounded(name: &str, value: &str, max: u64) -> Result<u64, String> {
    match value.parse::<u64>() {
        Ok(n) if (1..=max).contains(&n) && !value.starts_with('+') => Ok(n),
        _ => Err(format!("{name} needs an integer from 1 through {max}, got {}", serde_json::Value::from(value))),
    }
}

// The value parsers return `String` errors because that is clap's
// contract: the text is shown as clap's own error line.
fn parse_timeout(value: &str) -> Result<Duration, String> {
    parse_bounded("--timeout", value, 86_400).map(Duration::from_secs)
}

fn parse_jobs(value: &str) -> Result<NonZeroUsize, String> {
    parse_bounded("--jobs", value, 64).map(|n| NonZeroUsize::new(n as usize).expect("at least 1"))
}

fn parse_partition(value: &str) -> Result<check::Partition, String> {
    let wrong = || format!("--partition needs K/N with 1 <= K <= N <= 1000, got {}", serde_json::Value::from(value));
    let (share, count) = value.split_once('/').ok_or_else(wrong)?;
    let share = parse_bounded("--partition", share, 1000).map_err(|_| wrong())?;
    let count = parse_bounded("--partition", count, 1000).map_err(|_| wrong())?;
    check::Partition::new(share as usize, count as usize).ok_or_else(wrong)
}
