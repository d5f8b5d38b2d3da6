//! `gate-check baseline REF [FILE...]`: its options (the checker's
//! targeting, jobs, timeout, shell and output options, and
//! `--unconfined`), resolved once into a `BaselineConfig`.

use clap::{Arg, Args};

use super::run_options::{ReportOptions, RunOptions};
use super::Looks;
use crate::baseline::run::BaselineConfig;
use crate::check::{CheckConfig, RunMode, SandboxRequest};
use crate::config::Environment;
use crate::error::Error;

#[derive(Debug, Args)]
#[command(mut_args(in_baselines_words))]
pub(crate) struct BaselineArgs {
    /// The commit the gates must fail on: anything git rev-parse takes (HEAD, origin/main, a tag, a hash)
    #[arg(value_name = "REF")]
    reference: String,
    #[command(flatten)]
    run: RunOptions,
    /// Run REF's code unconfined, with your full authority (needed where it cannot be confined: not Linux, no Landlock)
    #[arg(long)]
    unconfined: bool,
    #[command(flatten)]
    report: ReportOptions,
}

/// The shared options as baseline words them: it runs each check twice,
/// and confines the runs on REF whether or not --sandbox is given.
fn in_baselines_words(arg: Arg) -> Arg {
    let help = match arg.get_id().as_str() {
        "files" => "Explicit ledger files, all honored and only those (as the checker takes them)",
        "jobs" => "Rolling concurrency, integer 1..64 (default 1); results stay in ledger order",
        "timeout" => "Per-check timeout, integer seconds 1..86400 (default 120); part of each gate's approval",
        "shell" => "Command shell (else UNLAZY_SHELL, else /bin/sh); part of each gate's approval",
        "cwd" => "Default CHECK directory, as the checker's --cwd",
        "root" => "Repository/pipeline root, as the checker's --root",
        "gates" => "Judge only these gates (repeatable; comma lists and globs, as the checker's --gate)",
        "partition" => "Judge only share K of N of the selected gates",
        "show_output" => {
            "Print the output of the run that tells most (on REF for a gate that discriminates, now for one that fails)"
        }
        "sandbox" => {
            return arg.conflicts_with("unconfined").help(
                "Confine the runs on the work tree too (also UNLAZY_SANDBOX=1); the runs on REF are confined unless \
                 --unconfined",
            )
        }
        "sandbox_keep_env" => {
            "Let confined runs inherit this variable although its name looks like a credential (repeatable)"
        }
        "quiet" => "Show only the gates that do not discriminate, pending approvals and the verdict",
        "verbose" => "Print each RUN line when its check starts, and checks still running after 5, 10, 20... s",
        "color" => "When to colour the markers of human lines",
        _ => return arg,
    };
    arg.help(help)
}

impl BaselineArgs {
    /// The run these arguments ask for, with `env` filling in what they
    /// leave open (as the checker's run does).
    pub fn resolve(mut self, env: &Environment) -> Result<(BaselineConfig, Looks), Error> {
        self.run.files.retain(|file| file.as_os_str() != "--");
        if !self.run.files.is_empty() && self.run.scope.is_some() {
            return Err(Error::usage("explicit files and --scope are mutually exclusive"));
        }
        let from_environment = super::command::switch("UNLAZY_SANDBOX", env.sandbox.as_deref(), "confine every check")?;
        if from_environment && self.unconfined {
            return Err(Error::usage(
                "--unconfined cannot be combined with UNLAZY_SANDBOX=1, which confines every check",
            ));
        }
        let keep_env = self.run.sandbox_keep_env.clone();
        let sandbox = (self.run.sandbox || from_environment).then(|| SandboxRequest { keep_env: keep_env.clone() });
        if self.unconfined && !keep_env.is_empty() {
            return Err(Error::usage("--sandbox-keep-env is for confined runs, and --unconfined confines none"));
        }
        let approve_words = self.approve_words();
        let approve_files =
            self.run.files.iter().map(|file| crate::shell_words::quote(&file.display().to_string())).collect();
        let looks = self.report.looks();
        let mode = RunMode::Check { approve: false, reverify: true };
        let check = CheckConfig { sandbox, ..self.run.check_config(&self.report, mode, env) };
        let config = BaselineConfig {
            check,
            reference: self.reference,
            unconfined: self.unconfined,
            keep_env,
            approve_words,
            approve_files,
        };
        Ok((config, looks))
    }

    /// The checker's `--approve` command for the same oracles: the options
    /// an approval is bound to (timeout, shell, CWD) and the same targeting.
    fn approve_words(&self) -> Vec<String> {
        let mut words = vec!["gate-check".to_string(), "--approve".to_string()];
        words.extend(self.run.approval_words());
        // An approval for confined runs only admits confined runs: it
        // serves a baseline that confines its runs on the work tree too.
        if self.run.sandbox {
            words.push("--sandbox".into());
        }
        words
    }
}
