//! Everything a run takes from its process, read once at the edge: the
//! working directory, PATH, the variables that change decisions or output,
//! and whether stdout is a terminal. The core receives it as a value and
//! reads no environment of its own.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::PathBuf;

/// The process context cannot be read (the working directory is gone).
#[derive(Debug, thiserror::Error)]
#[error("cannot read the working directory: {0}")]
pub struct EnvironmentError(#[source] std::io::Error);

#[cfg(test)]
impl EnvironmentError {
    pub fn for_test() -> EnvironmentError {
        EnvironmentError(std::io::Error::from(std::io::ErrorKind::NotFound))
    }
}

/// The process context of one invocation.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// The process working directory, against which `--root` resolves.
    pub cwd: PathBuf,
    /// Every variable of the process environment, which checks inherit.
    pub variables: Vec<(OsString, OsString)>,
    /// `PATH` as text (empty when unset), bound into approval identities.
    pub path_var: String,
    /// Why `PATH` cannot be bound into an approval (it is not valid UTF-8,
    /// and `path_var` is only its lossy spelling); no check runs then.
    pub path_problem: Option<PathProblem>,
    /// `UNLAZY_SHELL` when set and non-empty.
    pub shell: Option<String>,
    /// `ComSpec` when set and non-empty: the default shell on Windows.
    #[cfg(windows)]
    pub comspec: Option<String>,
    /// `PATHEXT` when set and non-empty: the endings a bare shell name is
    /// tried with on Windows.
    #[cfg(windows)]
    pub pathext: Option<String>,
    /// `UNLAZY_SCOPE` when set and non-empty: the pipeline used when no
    /// `--scope` names one.
    pub scope: Option<String>,
    /// `UNLAZY_APPROVAL_DIR` when set and non-empty, as given.
    pub approval_dir: Option<PathBuf>,
    /// `UNLAZY_RECEIPT_DIR` when set and non-empty, as given.
    pub receipt_dir: Option<PathBuf>,
    /// The user's home directory (see `home_directory`): the default
    /// approval store and global agent settings live under it, and the root
    /// search stops below it.
    pub home: Option<PathBuf>,
    /// `UNLAZY_SANDBOX` when set and non-empty, as given.
    pub sandbox: Option<String>,
    /// `UNLAZY_PROOF` when set and non-empty, as given.
    pub proof: Option<String>,
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

/// `--color`: whether the human report may use ANSI colour.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    /// NO_COLOR, CLICOLOR_FORCE, CLICOLOR, then whether the stream is a terminal
    #[default]
    Auto,
    /// Colour even into pipes and files
    Always,
    /// No colour
    Never,
}

/// What decides colour and the live progress line.
#[derive(Debug, Clone, Copy, Default)]
pub struct Terminal {
    pub stdout_is_tty: bool,
    pub stderr_is_tty: bool,
    /// `NO_COLOR` set and non-empty.
    pub no_color: bool,
    /// `CLICOLOR_FORCE` set, non-empty and not `0`.
    pub clicolor_force: bool,
    /// `CLICOLOR=0`.
    pub clicolor_off: bool,
    pub dumb: bool,
    pub ci: bool,
}

impl Terminal {
    /// Colour for human lines written to stdout (or to stderr when stdout
    /// carries a machine document). First match wins: `--color
    /// always|never`, then `NO_COLOR`, `CLICOLOR_FORCE`, `CLICOLOR=0`, and
    /// last whether that stream is a terminal other than `TERM=dumb`.
    pub fn color(&self, when: ColorWhen, human_on_stderr: bool) -> bool {
        let tty = if human_on_stderr { self.stderr_is_tty } else { self.stdout_is_tty };
        match when {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto if self.no_color => false,
            ColorWhen::Auto if self.clicolor_force => true,
            ColorWhen::Auto if self.clicolor_off => false,
            ColorWhen::Auto => tty && !self.dumb,
        }
    }

    /// The progress line is drawn on stderr, and only where someone watches
    /// it: a terminal that is not `TERM=dumb`, outside CI logs.
    pub fn live(&self) -> bool {
        self.stderr_is_tty && !self.dumb && !self.ci
    }
}

/// True when a GitHub Actions runner runs this process (and reads its
/// output for workflow commands).
pub fn github_actions() -> bool {
    std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true")
}

/// A PATH entry that is not valid UTF-8: approvals record PATH as text,
/// and a lossy spelling would let two different PATHs share one approval.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "PATH entry \"{}\" is not valid UTF-8; approvals bind PATH as text, so gate-check runs no check under a PATH \
     it cannot spell exactly",
    .entry.escape_ascii()
)]
pub struct PathProblem {
    pub entry: Vec<u8>,
}

/// Why PATH cannot be bound into an approval, if it cannot. On Windows an
/// entry is not text when it holds a lone UTF-16 surrogate.
fn path_problem(path: &std::ffi::OsStr) -> Option<PathProblem> {
    let delimiter = crate::paths::PATH_DELIMITER as u8;
    let bytes = path.as_encoded_bytes();
    let entry = bytes.split(|&b| b == delimiter).find(|entry| std::str::from_utf8(entry).is_err())?;
    Some(PathProblem { entry: entry.to_vec() })
}

/// The user's home directory as the Node tool finds it (`os.homedir()`):
/// `HOME` on Unix, and on Windows `USERPROFILE` when set and non-empty,
/// else the profile folder the system names.
pub fn home_directory() -> Option<PathBuf> {
    #[cfg(windows)]
    if let Some(profile) = std::env::var_os("USERPROFILE").filter(|value| !value.is_empty()) {
        return Some(PathBuf::from(profile));
    }
    directories::BaseDirs::new().map(|dirs| dirs.home_dir().to_path_buf())
}

fn non_empty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

impl Environment {
    pub fn from_process() -> Result<Environment, EnvironmentError> {
        let cwd = std::env::current_dir().map_err(EnvironmentError)?;
        let github_actions = github_actions();
        let raw_path = std::env::var_os("PATH").unwrap_or_default();
        Ok(Environment {
            cwd,
            variables: std::env::vars_os().collect(),
            path_var: raw_path.to_string_lossy().into_owned(),
            path_problem: path_problem(&raw_path),
            shell: non_empty("UNLAZY_SHELL"),
            #[cfg(windows)]
            comspec: non_empty("ComSpec"),
            #[cfg(windows)]
            pathext: non_empty("PATHEXT"),
            scope: non_empty("UNLAZY_SCOPE"),
            sandbox: non_empty("UNLAZY_SANDBOX"),
            proof: non_empty("UNLAZY_PROOF"),
            approval_dir: std::env::var_os("UNLAZY_APPROVAL_DIR").filter(|v| !v.is_empty()).map(PathBuf::from),
            receipt_dir: std::env::var_os("UNLAZY_RECEIPT_DIR").filter(|v| !v.is_empty()).map(PathBuf::from),
            home: home_directory(),
            github: github_actions
                .then(|| GitHub { workspace: std::env::var_os("GITHUB_WORKSPACE").map(PathBuf::from) }),
            terminal: Terminal {
                stdout_is_tty: std::io::stdout().is_terminal(),
                stderr_is_tty: std::io::stderr().is_terminal(),
                no_color: anstyle_query::no_color(),
                // The clicolors convention: any value but `0` forces colour.
                clicolor_force: anstyle_query::clicolor_force()
                    && std::env::var_os("CLICOLOR_FORCE").is_some_and(|v| v != "0"),
                clicolor_off: anstyle_query::clicolor() == Some(false),
                dumb: std::env::var("TERM").is_ok_and(|t| t == "dumb"),
                ci: anstyle_query::is_ci() || std::env::var_os("GITHUB_ACTIONS").is_some(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_precedence_is_flag_then_no_color_then_clicolor_force_then_clicolor_then_tty() {
        let tty = Terminal { stdout_is_tty: true, ..Terminal::default() };
        assert!(tty.color(ColorWhen::Auto, false));
        assert!(!tty.color(ColorWhen::Auto, true), "human lines on stderr follow stderr");
        assert!(!tty.color(ColorWhen::Never, false));
        let no_color = Terminal { no_color: true, clicolor_force: true, ..tty };
        assert!(!no_color.color(ColorWhen::Auto, false), "NO_COLOR beats CLICOLOR_FORCE");
        assert!(no_color.color(ColorWhen::Always, false), "the flag beats NO_COLOR");
        let forced = Terminal { clicolor_force: true, clicolor_off: true, ..Terminal::default() };
        assert!(forced.color(ColorWhen::Auto, false), "CLICOLOR_FORCE beats CLICOLOR=0 and a pipe");
        let off = Terminal { clicolor_off: true, ..tty };
        assert!(!off.color(ColorWhen::Auto, false));
        assert!(!Terminal { dumb: true, ..tty }.color(ColorWhen::Auto, false));
    }
}
