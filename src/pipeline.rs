//! Files a pipeline keeps under `.unlazy/`: the scope's session binding and
//! its append-only status log, plus the directory and atomic-write rules the
//! lease registry shares. Every directory written into must be a real
//! directory (never a link) inside the repository root, and no write leaves
//! a partial file behind.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use nix::fcntl::OFlag;
use thiserror::Error;

use crate::target::{real_directory_inside, STATE_DIR};
use crate::terminal;

#[derive(Debug, Error)]
pub enum StateError {
    #[error("{0} must be a real directory inside the repository, not a link or file")]
    NotRealDirectory(String),
    #[error("refusing non-file or linked {0} {1}")]
    NotRegular(&'static str, String),
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> StateError + '_ {
    move |error| StateError::Io(path.display().to_string(), error)
}

/// Every path under a repository's `.unlazy/`, spelled in one place.
#[derive(Debug, Clone)]
pub struct StateDir {
    root: PathBuf,
}

impl StateDir {
    pub fn new(root: &Path) -> StateDir {
        StateDir { root: root.to_path_buf() }
    }

    /// `<root>/.unlazy`.
    pub fn path(&self) -> PathBuf {
        self.root.join(STATE_DIR)
    }

    /// `<root>/.unlazy/<scope>`.
    pub fn scope(&self, scope: &str) -> PathBuf {
        self.path().join(scope)
    }

    pub fn status_log(&self, scope: &str) -> PathBuf {
        self.scope(scope).join("status.log")
    }

    pub fn session(&self, scope: &str) -> PathBuf {
        self.scope(scope).join("session")
    }

    pub fn hook_state(&self, scope: &str) -> PathBuf {
        self.scope(scope).join("hook-state.json")
    }

    pub fn dispatch_state(&self, scope: &str) -> PathBuf {
        self.scope(scope).join(crate::dispatch::store::STATE_FILE)
    }

    /// Creates the scope's directory (0700, with parents) when missing and
    /// checks that it and `.unlazy` are real directories inside the root.
    pub fn ensure_scope(&self, scope: &str) -> Result<PathBuf, StateError> {
        let directory = self.scope(scope);
        let state = self.path();
        if fs::symlink_metadata(&state).is_ok() && !real_directory_inside(&self.root, &state) {
            return Err(StateError::NotRealDirectory(state.display().to_string()));
        }
        crate::state_root::ensure(&self.root).map_err(io_error(&state))?;
        fs::DirBuilder::new().recursive(true).mode(0o700).create(&directory).map_err(io_error(&directory))?;
        if !real_directory_inside(&self.root, &directory) || !real_directory_inside(&self.root, &state) {
            return Err(StateError::NotRealDirectory(directory.display().to_string()));
        }
        Ok(directory)
    }
}

/// Replaces (or creates) `path` with `text`: a private temp file in the same
/// directory, fsync, rename, fsync of the directory. A link or other
/// non-regular file at `path` is refused rather than replaced.
pub fn write_atomically(path: &Path, text: &str, label: &'static str) -> Result<(), StateError> {
    if let Ok(existing) = fs::symlink_metadata(path) {
        if !existing.is_file() {
            return Err(StateError::NotRegular(label, path.display().to_string()));
        }
    }
    crate::durable::replace_file(path, text.as_bytes(), 0o600).map_err(|e| StateError::Io(label.to_string(), e))
}

/// Records which agent session owns the scope (`.unlazy/<scope>/session`).
pub fn bind_session(root: &Path, scope: &str, session: &str) -> Result<PathBuf, StateError> {
    let state = StateDir::new(root);
    state.ensure_scope(scope)?;
    let path = state.session(scope);
    write_atomically(&path, &format!("{}\n", session.trim()), "session binding")?;
    Ok(path)
}

/// One status-log line: an RFC 3339 UTC timestamp, a space, and `text`
/// folded onto one line (line breaks become one space, other control and
/// bidi characters a space each).
pub fn status_line(at: SystemTime, text: &str) -> String {
    let mut folded = String::with_capacity(text.len());
    let mut in_break = false;
    for c in text.chars() {
        if c == '\r' || c == '\n' {
            if !in_break {
                folded.push(' ');
            }
            in_break = true;
        } else {
            folded.push(c);
            in_break = false;
        }
    }
    format!("{} {}\n", humantime::format_rfc3339_millis(at), terminal::safe(&folded))
}

/// Appends one line to the scope's status log. The file is opened with
/// O_APPEND and written with a single write, so concurrent appenders never
/// overwrite each other; links, FIFOs and swapped files are refused.
pub fn append_status(root: &Path, scope: &str, text: &str) -> Result<PathBuf, StateError> {
    append_status_at(root, scope, SystemTime::now(), text)
}

/// `append_status` with the line's timestamp given, so a recorded event and
/// its audit line carry the same instant.
pub fn append_status_at(root: &Path, scope: &str, at: SystemTime, text: &str) -> Result<PathBuf, StateError> {
    const LABEL: &str = "status log";
    let state = StateDir::new(root);
    state.ensure_scope(scope)?;
    let path = state.status_log(scope);
    let refused = || StateError::NotRegular(LABEL, path.display().to_string());
    if let Ok(before) = fs::symlink_metadata(&path) {
        if !before.is_file() || before.nlink() != 1 {
            return Err(refused());
        }
    }
    let mut file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits())
        .open(&path)
        .map_err(|error| {
            if error.raw_os_error() == Some(nix::libc::ELOOP) {
                refused()
            } else {
                StateError::Io(path.display().to_string(), error)
            }
        })?;
    let opened = file.metadata().map_err(io_error(&path))?;
    let named = fs::symlink_metadata(&path).map_err(io_error(&path))?;
    if !opened.is_file() || opened.nlink() != 1 || opened.dev() != named.dev() || opened.ino() != named.ino() {
        return Err(refused());
    }
    let line = status_line(at, text);
    file.write_all(line.as_bytes()).map_err(io_error(&path))?;
    file.sync_all().map_err(io_error(&path))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn status_lines_are_timestamped_single_lines() {
        let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(status_line(at, "leaf-1 verified"), "2023-11-14T22:13:20.123Z leaf-1 verified\n");
        assert_eq!(status_line(at, "a\r\n\nb\tc\u{1b}[2J"), "2023-11-14T22:13:20.123Z a b c [2J\n");
    }
}
