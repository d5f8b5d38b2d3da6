//! Everything a run takes from its process, read once at the edge: the
//! working directory, PATH, the variables that change decisions or output,
//! and whether stdout is a terminal. The core receives it as a value and
//! reads no environment of its own.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::PathBuf;

use crate::error::Error;

/// The process context of one invocation.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// The process working directory, against which `--root` resolves.
    pub cwd: PathBuf,
    /// Every variable of the process environment, which checks inherit.
    pub variables: Vec<(OsString, OsString)>,
    /// `PATH` as text (empty when unset), bound into approval identities.
    pub path_var: String,
    /// `UNLAZY_SHELL` when set and non-empty.
    pub shell: Option<String>,
    /// `UNLAZY_SCOPE` when set and non-empty: the pipeline used when no
    /// `--scope` names one.
    pub scope: Option<String>,
    /// `UNLAZY_APPROVAL_DIR` when set and non-empty, as given.
    pub approval_dir: Option<PathBuf>,
    /// The user's home directory: the default approval store and global
    /// agent settings live under it, and the root search stops below it.
    pub home: Option<PathBuf>,
    /// Set when running as a GitHub Actions step.
    pub github: Option<GitHub>,
    pub terminal: Terminal,
}

/// GitHub Actions: annotations are printed, paths shown relative to the
/// workspace.
#[derive(Debug, Clone, Default)]
pub struct GitHub {
    pub workspace: Option<PathBuf>,
}

/// What decides colour and the live progress line.
#[derive(Debug, Clone, Copy, Default)]
pub struct Terminal {
    pub stdout_is_tty: bool,
    pub no_color: bool,
    pub dumb: bool,
    pub ci: bool,
}

impl Terminal {
    /// Colour only on a terminal, never with `NO_COLOR`, `TERM=dumb`, or
    /// when stdout carries a machine document.
    pub fn color(&self, machine_output: bool) -> bool {
        self.stdout_is_tty && !machine_output && !self.no_color && !self.dumb
    }

    /// The progress line additionally never appears in CI logs.
    pub fn live(&self, machine_output: bool) -> bool {
        self.stdout_is_tty && !machine_output && !self.dumb && !self.ci
    }
}

fn non_empty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

impl Environment {
    pub fn from_process() -> Result<Environment, Error> {
        let cwd = std::env::current_dir()
            .map_err(|e| Error::infrastructure(format!("cannot read the working directory: {e}")))?;
        let github_actions = std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true");
        Ok(Environment {
            cwd,
            variables: std::env::vars_os().collect(),
            path_var: std::env::var_os("PATH").map(|p| p.to_string_lossy().into_owned()).unwrap_or_default(),
            shell: non_empty("UNLAZY_SHELL"),
            scope: non_empty("UNLAZY_SCOPE"),
            approval_dir: std::env::var_os("UNLAZY_APPROVAL_DIR").filter(|v| !v.is_empty()).map(PathBuf::from),
            home: directories::BaseDirs::new().map(|dirs| dirs.home_dir().to_path_buf()),
            github: github_actions
                .then(|| GitHub { workspace: std::env::var_os("GITHUB_WORKSPACE").map(PathBuf::from) }),
            terminal: Terminal {
                stdout_is_tty: std::io::stdout().is_terminal(),
                no_color: std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
                dumb: std::env::var("TERM").is_ok_and(|t| t == "dumb"),
                ci: std::env::var_os("CI").is_some() || std::env::var_os("GITHUB_ACTIONS").is_some(),
            },
        })
    }
}
