//! `gate-check baseline REF [FILE...]`: its options (the checker's
//! targeting, jobs, timeout, shell and output options, and
//! `--unconfined`), resolved once into a `BaselineConfig`.

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::NonEmptyStringValueParser;
use clap::Args;
use clap_complete::engine::ArgValueCompleter;

use super::{complete, Looks};
use crate::baseline::run::BaselineConfig;
use crate::check::{self, CheckConfig, RunMode, SandboxRequest};
use crate::config::{ColorWhen, Environment};
use crate::error::Error;
use crate::report::human::Verbosity;
use crate::report::OutputFormat;

#[derive(Debug, Args)]
pub(crate) struct BaselineArgs {
    /// The commit the gates must fail on: anything git rev-parse takes (HEAD, origin/main, a tag, a hash)
    #[arg(value_name = "REF")]
    reference: String,
    /// Explicit ledger files, all honored and only those (as the checker takes them)
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Rolling concurrency, integer 1..64 (default 1); results stay in ledger order
    #[arg(short = 'j', long, allow_hyphen_values = true, value_name = "N", value_parser = super::parse_jobs)]
    jobs: Option<NonZeroUsize>,
    /// Per-check timeout, integer seconds 1..86400 (default 120); part of each gate's approval
    #[arg(long, allow_hyphen_values = true, value_name = "S", value_parser = super::parse_timeout)]
    timeout: Option<Duration>,
    /// Command shell (else UNLAZY_SHELL, else /bin/sh); part of each gate's approval
    #[arg(long, allow_hyphen_values = true, value_name = "PATH", value_parser = NonEmptyStringValueParser::new())]
    shell: Option<String>,
    /// Default CHECK directory, as the checker's --cwd
    #[arg(long, allow_hyphen_values = true, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Repository/pipeline root, as the checker's --root
    #[arg(long, allow_hyphen_values = true, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Use the pipeline .unlazy/ID (or UNLAZY_SCOPE)
    #[arg(long, allow_hyphen_values = true, value_name = "ID", value_parser = NonEmptyStringValueParser::new(),
          add = ArgValueCompleter::new(complete::scope_ids))]
    scope: Option<String>,
    /// Judge only these gates (repeatable; comma lists and globs, as the checker's --gate)
    #[arg(long = "gate", value_name = "ID", value_parser = NonEmptyStringValueParser::new(),
          add = ArgValueCompleter::new(complete::gate_ids))]
    gates: Vec<String>,
    /// Judge only share K of N of the selected gates
    #[arg(long, value_name = "K/N", value_parser = super::parse_partition)]
    partition: Option<check::Partition>,
    /// Print the output of the run that tells most (on REF for a gate that discriminates, now for one that fails)
    #[arg(long)]
    show_output: bool,
    /// Confine the runs on the work tree too (also UNLAZY_SANDBOX=1); the runs on REF are confined unless --unconfined
    #[arg(long, conflicts_with = "unconfined")]
    sandbox: bool,
    /// Let confined runs inherit this variable although its name looks like a credential (repeatable)
    #[arg(long, value_name = "NAME", value_parser = NonEmptyStringValueParser::new())]
    sandbox_keep_env: Vec<String>,
    /// Run REF's code unconfined, with your full authority (needed where it cannot be confined: not Linux, no Landlock)
    #[arg(long)]
    unconfined: bool,
    /// Put a machine document on stdout (human lines move to stderr)
    #[arg(long, value_name = "FORMAT", value_enum)]
    format: Option<OutputFormat>,
    /// Show only the gates that do not discriminate, pending approvals and the verdict
    #[arg(short, long, conflicts_with = "verbose")]
    quiet: bool,
    /// Print each RUN line when its check starts, and checks still running after 5, 10, 20... s
    #[arg(short, long)]
    verbose: bool,
    /// When to colour the markers of human lines
    #[arg(long, value_name = "WHEN", value_enum, default_value_t = ColorWhen::Auto)]
    color: ColorWhen,
}

impl BaselineArgs {
    /// The run these arguments ask for, with `env` filling in what they
    /// leave open (as the checker's run does).
    pub fn resolve(mut self, env: &Environment) -> Result<(BaselineConfig, Looks), Error> {
        self.files.retain(|file| file.as_os_str() != "--");
        if !self.files.is_empty() && self.scope.is_some() {
            return Err(Error::usage("explicit files and --scope are mutually exclusive"));
        }
        let from_environment = super::command::switch("UNLAZY_SANDBOX", env.sandbox.as_deref(), "confine every check")?;
        if from_environment && self.unconfined {
            return Err(Error::usage(
                "--unconfined cannot be combined with UNLAZY_SANDBOX=1, which confines every check",
            ));
        }
        let sandbox =
            (self.sandbox || from_environment).then(|| SandboxRequest { keep_env: self.sandbox_keep_env.clone() });
        if self.unconfined && !self.sandbox_keep_env.is_empty() {
            return Err(Error::usage("--sandbox-keep-env is for confined runs, and --unconfined confines none"));
        }
        let scope = self.scope.clone().or_else(|| env.scope.clone());
        let (root, default_cwd) = super::command::locate(
            env,
            !self.files.is_empty(),
            self.root.as_deref(),
            self.cwd.as_deref(),
            scope.as_deref(),
        );
        let check = CheckConfig {
            mode: RunMode::Check { approve: false, reverify: true },
            jobs: self.jobs.unwrap_or(NonZeroUsize::MIN),
            timeout: self.timeout.unwrap_or(check::DEFAULT_TIMEOUT),
            shell: crate::shell::requested(self.shell.as_deref(), env),
            approve_command: String::new(),
            root,
            default_cwd,
            invoked_in: env.cwd.clone(),
            cwd_given: self.cwd.is_some(),
            scope,
            store: crate::approval::store::StoreLocation::of(env),
            receipts: crate::approval::store::StoreLocation::of_receipts(env),
            files: self.files.clone(),
            format: self.format.unwrap_or(OutputFormat::Human),
            gates: self.gates.clone(),
            partition: self.partition,
            show_output: self.show_output,
            sandbox,
            proof: false,
        };
        let looks = Looks {
            color: self.color,
            verbosity: match (self.quiet, self.verbose) {
                (true, _) => Verbosity::Quiet,
                (_, true) => Verbosity::Verbose,
                _ => Verbosity::Normal,
            },
        };
        let approve_words = self.approve_words();
        let approve_files =
            self.files.iter().map(|file| crate::shell_words::quote(&file.display().to_string())).collect();
        let config = BaselineConfig {
            check,
            reference: self.reference,
            unconfined: self.unconfined,
            keep_env: self.sandbox_keep_env,
            approve_words,
            approve_files,
        };
        Ok((config, looks))
    }

    /// The checker's `--approve` command for the same oracles: the options
    /// an approval is bound to (timeout, shell, CWD) and the same targeting.
    fn approve_words(&self) -> Vec<String> {
        use crate::shell_words::quote;
        let mut words = vec!["gate-check".to_string(), "--approve".to_string()];
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
        // An approval for confined runs only admits confined runs: it
        // serves a baseline that confines its runs on the work tree too.
        if self.sandbox {
            words.push("--sandbox".into());
        }
        words
    }
}
