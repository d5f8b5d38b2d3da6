//! The command line resolved once. `Command::from_args` applies the Node
//! tool's rules for combining flags and resolves what each command needs
//! from the environment (the root, the scope, the shell asked for, the
//! checks' directory, typed durations and counts); `Command::execute` runs
//! the command and returns its exit status or its error, which `cli`
//! prints.

use std::path::Path;

use super::{reporters, Cli, HookEvent, Looks, Subcommands};
use crate::actions::{self, ActionOptions};
use crate::baseline::record::{BaselineEvent, BaselineReport};
use crate::baseline::run::BaselineConfig;
use crate::check::events::{Event, Reporter};
use crate::check::{self, CheckConfig, RunMode, SandboxRequest};
use crate::config::{Environment, EnvironmentError};
use crate::dispatch::cli::DispatchArgs;
use crate::error::Error;
use crate::exit::Exit;
use crate::host::Host;
use crate::install::Location;
use crate::lint_files::LintConfig;
use crate::manual::ManArgs;
use crate::report::{OutputFormat, RunReport};
use crate::runner::{Containment, SignalMode};
use crate::{hook, install, lint_files};

/// One invocation, resolved.
pub(crate) enum Command {
    Completions(clap_complete::Shell),
    Man(ManArgs),
    /// The Stop hook; it runs (and lets the stop through) even without an
    /// environment.
    Hook {
        agent: Option<Host>,
        scope: Option<String>,
        /// `--no-proof`: met gates count by their ledgers alone.
        no_proof: bool,
        env: Option<Environment>,
    },
    /// The pre-tool guard; without an environment it lets the call through.
    Guard {
        agent: Option<Host>,
        env: Option<Environment>,
    },
    Init {
        root: Option<std::path::PathBuf>,
        env: Environment,
    },
    Dispatch {
        args: DispatchArgs,
        env: Environment,
    },
    Lint {
        config: LintConfig,
        env: Environment,
    },
    Tree {
        config: crate::tree::TreeConfig,
        env: Environment,
    },
    Install {
        agent: Host,
        location: Location,
        scope: Option<String>,
        uninstall: bool,
        /// Whether the pre-tool guard is installed beside the Stop hook.
        guard: bool,
        env: Environment,
    },
    Action {
        options: ActionOptions,
        env: Environment,
    },
    Check {
        config: Box<CheckConfig>,
        looks: Looks,
        env: Environment,
        /// The subcommand a first file argument nearly spells (`lnt`), for
        /// the error when no such file exists.
        near_subcommand: Option<(String, String)>,
    },
    Baseline {
        config: Box<BaselineConfig>,
        looks: Looks,
        env: Environment,
    },
}

impl Command {
    pub fn from_args(mut cli: Cli, env: Result<Environment, EnvironmentError>) -> Result<Command, Error> {
        // The Node tool skips every `--`, not only the first.
        cli.run.files.retain(|file| file.as_os_str() != "--");
        match cli.command.take() {
            Some(Subcommands::Completions { shell }) => return Ok(Command::Completions(shell)),
            Some(Subcommands::Man(args)) => return Ok(Command::Man(args)),
            Some(Subcommands::Hook { event: HookEvent::Stop { agent, scope, no_proof } }) => {
                return Ok(Command::Hook { agent, scope, no_proof, env: env.ok() })
            }
            Some(Subcommands::Hook { event: HookEvent::PreTool { agent } }) => {
                return Ok(Command::Guard { agent, env: env.ok() })
            }
            Some(Subcommands::Init { root }) => return Ok(Command::Init { root, env: env? }),
            Some(Subcommands::Dispatch(args)) => return Ok(Command::Dispatch { args, env: env? }),
            Some(Subcommands::Baseline(args)) => {
                let env = env?;
                let (config, looks) = args.resolve(&env)?;
                return Ok(Command::Baseline { config: Box::new(config), looks, env });
            }
            Some(Subcommands::Tree { scope, format, color }) => {
                return Ok(Command::Tree { config: crate::tree::TreeConfig { scope, format, color }, env: env? })
            }
            Some(Subcommands::Lint { strict, json, format, allow, scope, files }) => {
                let json = json || format == Some(crate::lint_files::LintFormat::Json);
                return Ok(Command::Lint { config: LintConfig { strict, json, allow, scope, files }, env: env? });
            }
            Some(Subcommands::InstallHooks { agent, scope, shared, global, uninstall, no_guard }) => {
                let location = match (shared, global) {
                    (true, _) => Location::Shared,
                    (_, true) => Location::Global,
                    _ => Location::Local,
                };
                let guard = !no_guard;
                return Ok(Command::Install { agent, location, scope, uninstall, guard, env: env? });
            }
            None => {}
        }
        cli.validate()?;
        let env = env?;
        if let Some(action) = cli.actions().pop() {
            let options = ActionOptions { action, root: cli.run.root, scope: cli.run.scope, leaf: cli.leaf };
            return Ok(Command::Action { options, env });
        }
        let looks = cli.report.looks();
        let sandbox = sandbox_request(&cli, &env)?;
        let proof = cli.proof || switch("UNLAZY_PROOF", env.proof.as_deref(), "judge met gates by their proof")?;
        let near_subcommand = cli.run.files.first().and_then(|file| near_subcommand(&file.to_string_lossy()));
        let mode = match cli.status {
            true => RunMode::Status,
            false => RunMode::Check { approve: cli.approve, reverify: cli.reverify },
        };
        let approve_command = approve_command(&cli);
        let run = cli.run.check_config(&cli.report, mode, &env);
        let config = Box::new(CheckConfig { approve_command, sandbox, proof, ..run });
        Ok(Command::Check { config, looks, env, near_subcommand })
    }

    pub fn execute(self) -> Result<Exit, Error> {
        match self {
            Command::Completions(shell) => Ok(super::complete::print_registration(shell)),
            Command::Man(args) => {
                crate::manual::run(&args, <Cli as clap::CommandFactory>::command())?;
                Ok(Exit::Met)
            }
            Command::Hook { agent, scope, no_proof, env } => {
                Ok(hook::stop(env.as_ref(), agent, scope.as_deref(), !no_proof))
            }
            Command::Guard { agent, env } => Ok(hook::pre_tool::run(env.as_ref(), agent)),
            Command::Init { root, env } => Ok(crate::init::run(&env, root.as_deref())?),
            Command::Dispatch { args, env } => Ok(crate::dispatch::cli::run(args, &env)?),
            Command::Lint { config, env } => Ok(lint_files::run(&env, &config)?),
            Command::Tree { config, env } => Ok(crate::tree::run(&env, &config)?),
            Command::Install { agent, location, scope, uninstall, guard, env } => {
                install::run(&env, agent, location, scope.as_deref(), uninstall, guard)?;
                Ok(Exit::Met)
            }
            Command::Action { options, env } => actions::execute(&options, &env),
            Command::Check { config, looks, env, near_subcommand } => {
                run_checker(&config, looks, &env).map_err(|error| with_subcommand_hint(error, near_subcommand))
            }
            Command::Baseline { config, looks, env } => run_baseline(&config, looks, &env),
        }
    }
}

/// The subcommand `word` nearly spells (one or two letters off), when it
/// is a bare word such as `lnt`, not a path: (the word, the subcommand).
fn near_subcommand(word: &str) -> Option<(String, String)> {
    if word.len() < 2 || word.contains(['/', '.']) {
        return None;
    }
    let command = <Cli as clap::CommandFactory>::command();
    command
        .get_subcommands()
        .map(|sub| sub.get_name())
        .map(|name| (strsim::damerau_levenshtein(word, name), name))
        .filter(|(distance, _)| *distance <= 2)
        .min()
        .map(|(_, name)| (word.to_string(), name.to_string()))
}

/// "no such gate file" for a first argument that nearly spells a
/// subcommand says which one it may have meant.
fn with_subcommand_hint(error: Error, near: Option<(String, String)>) -> Error {
    use crate::ledger::file::LedgerFileError;
    match (&error, near) {
        (Error::LedgerFile(LedgerFileError::Missing(path)), Some((word, name)))
            if Path::new(path).file_name().is_some_and(|file| file == word.as_str()) =>
        {
            Error::Usage(format!("{error}; did you mean the subcommand {name} (gate-check {name} ...)?"))
        }
        _ => error,
    }
}

/// `--sandbox`, else `UNLAZY_SANDBOX`: whether checks run confined.
/// A yes/no variable (`1`, `true`, `yes`, `on` or their opposites), or
/// the usage error naming it and what `1` means.
pub(super) fn switch(name: &str, value: Option<&str>, meaning: &str) -> Result<bool, Error> {
    match value {
        None => Ok(false),
        Some("1" | "true" | "yes" | "on") => Ok(true),
        Some("0" | "false" | "no" | "off") => Ok(false),
        Some(other) => {
            Err(Error::Usage(format!("{name} must be 1 ({meaning}) or 0, not \"{}\"", other.escape_debug())))
        }
    }
}

fn sandbox_request(cli: &Cli, env: &Environment) -> Result<Option<SandboxRequest>, Error> {
    let from_environment = switch("UNLAZY_SANDBOX", env.sandbox.as_deref(), "confine every check")?;
    if !(cli.run.sandbox || from_environment) {
        if !cli.run.sandbox_keep_env.is_empty() {
            return Err(Error::Usage("--sandbox-keep-env needs --sandbox (or UNLAZY_SANDBOX=1)".into()));
        }
        return Ok(None);
    }
    Ok(Some(SandboxRequest { keep_env: cli.run.sandbox_keep_env.clone() }))
}

/// This run's command line with `--approve`: the same mode, targeting and
/// the options an approval is bound to (timeout, shell, CWD), so that what
/// it approves is exactly what was shown.
fn approve_command(cli: &Cli) -> String {
    use crate::shell_words::quote;
    let run = &cli.run;
    let mut words = vec!["gate-check".to_string(), "--approve".to_string()];
    if cli.reverify {
        words.push("--reverify".into());
    }
    words.extend(run.approval_words());
    words.extend(run.gates.iter().map(|gate| format!("--gate {}", quote(gate))));
    words.extend(run.partition.map(|partition| format!("--partition {}", quote(&partition.text()))));
    // A run asked to confine its checks must not suggest running them free.
    if run.sandbox {
        words.push("--sandbox".into());
    }
    words.extend(run.sandbox_keep_env.iter().map(|name| format!("--sandbox-keep-env {}", quote(name))));
    let files: Vec<String> = run.files.iter().map(|f| quote(&f.display().to_string())).collect();
    if files.iter().any(|f| f.starts_with('-')) {
        words.push("--".into());
    }
    words.extend(files);
    words.join(" ")
}

/// Runs the checker. A run that stopped early still owes a machine reader
/// its document, and a CI log its annotation.
fn run_checker(config: &CheckConfig, looks: Looks, env: &Environment) -> Result<Exit, Error> {
    let mut reporters = reporters(config, looks, env);
    // Built once here; its handlers are armed when the first check starts.
    let containment = Containment::install(SignalMode::Standard);
    let outcome = check::execute(config, env, &containment, &mut reporters);
    if let Err(error) = &outcome {
        if reporters.needs_records() {
            let report = RunReport::failed(config.mode.name().to_string(), error.lines(), error.places());
            reporters.event(&Event::Report(&report));
        }
    }
    reporters.flush();
    let format = if config.format == OutputFormat::Junit { "JUnit" } else { "JSON" };
    // A run that failed has said so already; one that did not must not end
    // as if its reader had the document.
    if let (Ok(_), Err(error)) = (&outcome, reporters.finish()) {
        if let Some(error) = Error::unwritten(format, error) {
            return Err(error);
        }
    }
    outcome
}

/// Runs the baseline. A run that stopped early still owes a machine
/// reader its document, and a CI log its annotation.
fn run_baseline(config: &BaselineConfig, looks: Looks, env: &Environment) -> Result<Exit, Error> {
    let mut reporters = reporters(&config.check, looks, env);
    let containment = Containment::install(SignalMode::Standard);
    let outcome = crate::baseline::run::execute(config, env, &containment, &mut reporters);
    if let Err(error) = &outcome {
        if reporters.needs_records() {
            let report = BaselineReport::failed(error.lines(), "error", i32::from(Exit::Error.code()));
            reporters.event(&Event::Baseline(BaselineEvent::Report(&report)));
        }
    }
    reporters.flush();
    let format = if config.check.format == OutputFormat::Junit { "JUnit" } else { "JSON" };
    if let (Ok(_), Err(error)) = (&outcome, reporters.finish()) {
        if let Some(error) = Error::unwritten(format, error) {
            return Err(error);
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use clap::Parser;

    use super::*;
    use crate::approval::store::StoreLocation;

    fn parsed(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("gate-check").chain(args.iter().copied())).unwrap()
    }

    fn environment(cwd: &Path) -> Environment {
        Environment { cwd: cwd.to_path_buf(), scope: Some("from-env".into()), ..Environment::default() }
    }

    fn checker(args: &[&str], env: Environment) -> CheckConfig {
        match Command::from_args(parsed(args), Ok(env)).unwrap() {
            Command::Check { config, .. } => *config,
            _ => panic!("not a checker run: {args:?}"),
        }
    }

    #[test]
    fn the_mode_is_one_value_with_the_node_tools_names() {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<&str> = [&[][..], &["--approve"], &["--reverify"], &["--approve", "--reverify"], &["--status"]]
            .iter()
            .map(|args| checker(args, environment(dir.path())).mode.name())
            .collect();
        assert_eq!(names, ["run", "approve", "reverify", "approve+reverify", "status"]);
    }

    #[test]
    fn flags_are_typed_and_the_environment_fills_what_they_leave_open() {
        let dir = tempfile::tempdir().unwrap();
        let config = checker(&["--jobs", "4", "--timeout", "9", "--cwd", "sub"], environment(dir.path()));
        assert_eq!((config.jobs.get(), config.timeout), (4, std::time::Duration::from_secs(9)));
        assert_eq!(config.scope.as_deref(), Some("from-env"), "UNLAZY_SCOPE when no --scope");
        assert_eq!(config.default_cwd, dir.path().join("sub"), "--cwd from where the user is");
        assert!(config.cwd_given);
        let config = checker(&["--scope", "s1", "--root", "r", "--cwd", "sub"], environment(dir.path()));
        assert_eq!(config.scope.as_deref(), Some("s1"), "the flag wins");
        assert_eq!(config.root.path, dir.path().join("r"));
        assert_eq!(config.default_cwd, dir.path().join("r/sub"), "--cwd from --root when that is given");
        let defaults = checker(&[], environment(dir.path()));
        assert_eq!(
            (defaults.jobs.get(), defaults.timeout, defaults.shell.as_str()),
            // cmd.exe: the test's environment has no ComSpec.
            (1, check::DEFAULT_TIMEOUT, if cfg!(windows) { "cmd.exe" } else { "/bin/sh" })
        );
    }

    #[test]
    fn the_approval_store_is_located_once_from_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let named = Environment { approval_dir: Some(PathBuf::from("store")), ..environment(dir.path()) };
        assert_eq!(checker(&[], named).store, StoreLocation::Named(dir.path().join("store")));
        let home = Environment { home: Some(PathBuf::from("/home/u")), ..environment(dir.path()) };
        assert_eq!(checker(&[], home).store, StoreLocation::Default(Some(PathBuf::from("/home/u/.unlazy/approved"))));
        assert_eq!(
            checker(&[], environment(dir.path())).store,
            StoreLocation::Default(None),
            "no home: an error only when needed"
        );
    }

    #[test]
    fn the_next_command_is_built_from_the_command_line_as_given() {
        let dir = tempfile::tempdir().unwrap();
        let config = checker(
            &["--reverify", "--timeout", "120", "--shell", "bash", "--gate", "a b", "--", "-odd.md"],
            environment(dir.path()),
        );
        assert_eq!(config.approve_command, "gate-check --approve --reverify --shell bash --gate 'a b' -- -odd.md");
        let config = checker(&["--timeout", "30", "--scope", "s1"], environment(dir.path()));
        assert_eq!(config.approve_command, "gate-check --approve --timeout 30 --scope s1");
        assert_eq!(config.files, Vec::<PathBuf>::new());
    }

    #[test]
    fn bad_combinations_are_usage_errors_before_anything_is_resolved() {
        let unreadable = Err(EnvironmentError::for_test());
        let error = Command::from_args(parsed(&["--status", "--reverify"]), unreadable).err().unwrap();
        assert_eq!(error.to_string(), "--status and --reverify are mutually exclusive");
        assert!(error.is_usage());
        // The hook runs without an environment; the checker cannot.
        let hook = Command::from_args(parsed(&["hook", "stop"]), Err(EnvironmentError::for_test())).unwrap();
        assert!(matches!(hook, Command::Hook { env: None, .. }));
        let checker = Command::from_args(parsed(&["--status"]), Err(EnvironmentError::for_test()));
        assert!(matches!(checker, Err(Error::Environment(_))));
    }
}
