//! Which shell runs CHECK lines, by the Node tool's rule: `--shell`, then
//! `UNLAZY_SHELL`, then the platform's default (`/bin/sh`; on Windows
//! `%ComSpec%`, else `cmd.exe`). A name with a separator (`/` or `\`), or an
//! absolute one, resolves against the working directory; a bare name is
//! searched on PATH (split on `;` on Windows, where a name without an
//! extension is also tried with each PATHEXT ending). The result must be a
//! file.

use std::path::{Path, PathBuf};

use crate::config::Environment;
use crate::paths;

/// The requested shell text, before resolution: the flag, else the
/// `UNLAZY_SHELL` value, else the platform's default.
pub fn requested(flag: Option<&str>, env: &Environment) -> String {
    flag.or(env.shell.as_deref()).map_or_else(|| default_shell(env), str::to_string)
}

#[cfg(not(windows))]
fn default_shell(_env: &Environment) -> String {
    "/bin/sh".to_string()
}

#[cfg(windows)]
fn default_shell(env: &Environment) -> String {
    env.comspec.clone().unwrap_or_else(|| "cmd.exe".to_string())
}

/// The requested shell names no file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot resolve command shell {} from PATH", serde_json::Value::from(.requested.as_str()))]
pub struct ShellError {
    pub requested: String,
}

/// Resolves `requested` to the absolute path of a shell file (a path
/// against the working directory, a bare name on PATH, whose relative
/// entries are taken against the working directory too), or a one-line
/// reason.
pub fn resolve(requested: &str, env: &Environment) -> Result<PathBuf, ShellError> {
    let is_file = |candidate: &Path| std::fs::metadata(candidate).map(|m| m.is_file()).unwrap_or(false);
    let names_a_path = requested.contains('/') || requested.contains('\\') || Path::new(requested).is_absolute();
    if names_a_path {
        let candidate = paths::resolve(&env.cwd, Path::new(requested));
        if is_file(&candidate) {
            return Ok(candidate);
        }
    } else {
        let names = executable_names(requested, env);
        for directory in env.path_var.split(paths::PATH_DELIMITER).filter(|d| !d.is_empty()) {
            for name in &names {
                // A relative PATH entry names a place under the working
                // directory; the shell is shown and approved by where it is.
                let candidate = paths::resolve(&env.cwd, &Path::new(directory).join(name));
                if is_file(&candidate) {
                    return Ok(candidate);
                }
            }
        }
    }
    Err(ShellError { requested: requested.to_string() })
}

/// The file names a bare command name is looked for as: itself.
#[cfg(not(windows))]
fn executable_names(name: &str, _env: &Environment) -> Vec<String> {
    vec![name.to_string()]
}

/// The file names a bare command name is looked for as, in the Node tool's
/// order: a name that already ends in an extension (`.` and letters or
/// digits) alone; any other as itself, then with each PATHEXT ending
/// (default `.COM;.EXE;.BAT;.CMD`) in lower case, then in upper case.
#[cfg(windows)]
fn executable_names(name: &str, env: &Environment) -> Vec<String> {
    let has_extension = name
        .rsplit_once('.')
        .is_some_and(|(_, extension)| !extension.is_empty() && extension.bytes().all(|b| b.is_ascii_alphanumeric()));
    if has_extension {
        return vec![name.to_string()];
    }
    let endings: Vec<&str> =
        env.pathext.as_deref().unwrap_or(".COM;.EXE;.BAT;.CMD").split(';').filter(|e| !e.is_empty()).collect();
    std::iter::once(name.to_string())
        .chain(endings.iter().map(|ending| format!("{name}{}", ending.to_lowercase())))
        .chain(endings.iter().map(|ending| format!("{name}{}", ending.to_uppercase())))
        .collect()
}

#[cfg(all(test, windows))]
mod tests {
    use super::*;

    #[test]
    fn windows_names_are_tried_with_pathext_as_the_node_tool_tries_them() {
        let env = Environment { pathext: Some(".COM;.Exe".into()), ..Environment::default() };
        assert_eq!(executable_names("cmd", &env), ["cmd", "cmd.com", "cmd.exe", "cmd.COM", "cmd.EXE"]);
        assert_eq!(executable_names("pwsh.exe", &env), ["pwsh.exe"]);
        assert_eq!(executable_names("sh.", &env).len(), 5, "a trailing dot is no extension");
        let default = Environment::default();
        assert_eq!(executable_names("x", &default)[1..5], ["x.com", "x.exe", "x.bat", "x.cmd"]);
        assert_eq!(requested(None, &default), "cmd.exe");
        let comspec = Environment { comspec: Some(r"C:\Windows\system32\cmd.exe".into()), ..default };
        assert_eq!(requested(None, &comspec), r"C:\Windows\system32\cmd.exe");
        assert_eq!(requested(Some("pwsh"), &comspec), "pwsh");
    }
}
