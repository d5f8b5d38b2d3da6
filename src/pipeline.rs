//! Files a pipeline keeps under `.unlazy/<scope>/`: the scope's session
//! binding and its append-only status log. Every
//! directory written into must be a real directory (never a link) inside
//! the repository root, and no write leaves a partial file behind.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use thiserror::Error;

use crate::durable::{self, AppendError, Change, Entry, OpenDirectory};
use crate::layout::{StateDir, SESSION_FILE, STATUS_LOG};
use crate::state_root;
use crate::terminal;

#[derive(Debug, Error)]
pub enum StateError {
    /// A level of `.unlazy/<scope>` is not a real directory, or cannot be made.
    #[error("{0}")]
    Directory(std::io::Error),
    #[error("refusing non-file or linked {0} {1}")]
    NotRegular(&'static str, String),
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
}

/// Creates `.unlazy` and the scope's directory (0700, given to the owner
/// of their parent) when missing, checks that both are real directories
/// inside the root, and holds the scope's directory open.
pub fn ensure_scope(root: &Path, scope: &str) -> Result<OpenDirectory, StateError> {
    state_root::scope_directory(root, scope).map_err(StateError::Directory)
}

/// A link or other non-regular file at `name` is refused, never replaced.
fn refuse_non_regular(directory: &OpenDirectory, name: &OsStr, label: &'static str) -> Result<(), StateError> {
    match directory.entry(name) {
        Ok(Entry::Other) => Err(StateError::NotRegular(label, directory.join(name).display().to_string())),
        _ => Ok(()),
    }
}

/// Records which agent session owns the scope (`.unlazy/<scope>/session`),
/// under the session file's lock, which also proves that the temp files of
/// an earlier, killed binding are nobody's.
pub fn bind_session(root: &Path, scope: &str, session: &str) -> Result<PathBuf, StateError> {
    const LABEL: &str = "session binding";
    let directory = ensure_scope(root, scope)?;
    let path = StateDir::new(root).session(scope);
    let name = OsStr::new(SESSION_FILE);
    let lock = state_root::lock_for(root, &path)
        .and_then(|lock| lock.acquire())
        .map_err(|e| StateError::Io(LABEL.to_string(), e))?;
    durable::update_locked(lock, &directory, name, || {
        refuse_non_regular(&directory, name, LABEL)?;
        directory.remove_stale_temp_files(name).map_err(|e| StateError::Io(LABEL.to_string(), e))?;
        Ok(Change::Replace { value: (), bytes: format!("{}\n", session.trim()).into_bytes(), mode: 0o600 })
    })
    .map_err(|error| error.into_error(|error| StateError::Io(LABEL.to_string(), error)))?;
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
    let directory = ensure_scope(root, scope)?;
    let path = StateDir::new(root).status_log(scope);
    match directory.append(OsStr::new(STATUS_LOG), status_line(at, text).as_bytes(), 0o600) {
        Ok(()) => Ok(path),
        Err(AppendError::NotRegular) => Err(StateError::NotRegular(LABEL, path.display().to_string())),
        Err(AppendError::Io(error)) => Err(StateError::Io(path.display().to_string(), error)),
    }
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
