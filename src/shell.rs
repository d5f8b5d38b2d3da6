//! Which shell runs CHECK lines: `--shell`, then `UNLAZY_SHELL`, then
//! `/bin/sh`. A name with a separator resolves against the working
//! directory; a bare name is searched on PATH. The result must be a file.

use std::path::{Path, PathBuf};

use crate::paths;

pub const DEFAULT_SHELL: &str = "/bin/sh";

/// The requested shell text, before resolution: the flag, else the
/// `UNLAZY_SHELL` value, else the default.
pub fn requested(flag: Option<&str>, from_environment: Option<&str>) -> String {
    flag.or(from_environment).unwrap_or(DEFAULT_SHELL).to_string()
}

/// Resolves `requested` to the absolute path of a shell file (a path
/// against `cwd`, a bare name on `path_var`, whose relative entries are taken
/// against `cwd` too), or a one-line reason.
/// The requested shell names no file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot resolve command shell {} from PATH", serde_json::Value::from(.requested.as_str()))]
pub struct ShellError {
    pub requested: String,
}

pub fn resolve(requested: &str, cwd: &Path, path_var: &str) -> Result<PathBuf, ShellError> {
    let is_file = |candidate: &Path| std::fs::metadata(candidate).map(|m| m.is_file()).unwrap_or(false);
    if requested.contains('/') {
        let candidate = paths::resolve(cwd, Path::new(requested));
        if is_file(&candidate) {
            return Ok(candidate);
        }
    } else {
        for directory in path_var.split(':').filter(|d| !d.is_empty()) {
            // A relative PATH entry names a place under the working
            // directory; the shell is shown and approved by where it is.
            let candidate = paths::resolve(cwd, &Path::new(directory).join(requested));
            if is_file(&candidate) {
                return Ok(candidate);
            }
        }
    }
    Err(ShellError { requested: requested.to_string() })
}
