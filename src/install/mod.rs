//! `gate-check install-hooks`: the side-effect half of hook installation.
//! It finds the settings file, reads it, applies the pure transform in
//! `settings`, and writes the result atomically after saving the previous
//! file as `<file>.unlazy.bak`. Any failure leaves every file unchanged
//! and exits 2.

pub mod settings;

use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::terminal::{say, warn};
use settings::Outcome;

/// A settings file larger than this is not one a person maintains.
const MAX_SETTINGS_BYTES: u64 = 4 * 1024 * 1024;
const BACKUP_SUFFIX: &str = ".unlazy.bak";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// `<project>/.claude/settings.local.json`: personal, usually untracked.
    Local,
    /// `<project>/.claude/settings.json`: usually committed.
    Shared,
    /// `~/.claude/settings.json`: every project of this user.
    Global,
}

impl Location {
    fn path(self) -> Result<PathBuf, String> {
        let project = || std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"));
        Ok(match self {
            Location::Local => project()?.join(".claude").join("settings.local.json"),
            Location::Shared => project()?.join(".claude").join("settings.json"),
            Location::Global => directories::BaseDirs::new()
                .ok_or("cannot find the home directory")?
                .home_dir()
                .join(".claude")
                .join("settings.json"),
        })
    }

    fn flag(self) -> &'static str {
        match self {
            Location::Local => "",
            Location::Shared => " --shared",
            Location::Global => " --global",
        }
    }
}

/// The current settings: `Ok(None)` when the file does not exist yet.
fn read_settings(path: &Path) -> Result<Option<(Value, Vec<u8>)>, String> {
    let shown = path.display();
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot inspect {shown}: {e}")),
    };
    if meta.file_type().is_symlink() {
        return Err(format!("refusing to replace {shown}: it is a symbolic link; edit its target instead"));
    }
    if !meta.is_file() {
        return Err(format!("refusing to touch {shown}: it is not a regular file"));
    }
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|f| f.take(MAX_SETTINGS_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if bytes.len() as u64 > MAX_SETTINGS_BYTES {
        return Err(format!("refusing to touch {shown}: it exceeds {MAX_SETTINGS_BYTES} bytes"));
    }
    let value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("refusing to touch {shown}: it exists but is not valid JSON ({e})"))?;
    Ok(Some((value, bytes)))
}

fn write_atomically(path: &Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    crate::durable::replace_file(path, bytes, mode).map_err(|e| format!("cannot write {e}"))
}

fn render(settings: &Value) -> Vec<u8> {
    let mut text = serde_json::to_string_pretty(settings).unwrap_or_default();
    text.push('\n');
    text.into_bytes()
}

/// Saves the previous file as `<file>.unlazy.bak`, then replaces the file.
fn replace(path: &Path, previous: Option<&[u8]>, settings: &Value) -> Result<(), String> {
    let mode = match previous {
        Some(bytes) => {
            let mode =
                fs::metadata(path).map_err(|e| format!("cannot inspect {}: {e}", path.display()))?.permissions().mode()
                    & 0o7777;
            let mut backup = path.as_os_str().to_owned();
            backup.push(BACKUP_SUFFIX);
            let backup = PathBuf::from(backup);
            if fs::symlink_metadata(&backup).is_ok_and(|m| !m.is_file()) {
                return Err(format!("refusing to replace {}: it is not a regular file", backup.display()));
            }
            write_atomically(&backup, bytes, mode)?;
            mode
        }
        None => {
            let directory = path.parent().ok_or_else(|| format!("{} has no directory", path.display()))?;
            fs::create_dir_all(directory).map_err(|e| format!("cannot create {}: {e}", directory.display()))?;
            0o644
        }
    };
    write_atomically(path, &render(settings), mode)
}

fn program_path() -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let exe = fs::canonicalize(&exe).unwrap_or(exe);
    exe.to_str()
        .map(str::to_string)
        .ok_or_else(|| format!("the path of this executable is not UTF-8: {}", exe.display()))
}

fn apply(location: Location, scope: Option<&str>, uninstall: bool) -> Result<(), String> {
    if let Some(scope) = scope {
        crate::target::validate_scope_id(scope, "--scope")?;
    }
    let path = location.path()?;
    let shown = path.display().to_string();
    let current = read_settings(&path)?;
    let previous = current.as_ref().map(|(_, bytes)| bytes.as_slice());
    let document =
        current.as_ref().map(|(value, _)| value.clone()).unwrap_or_else(|| Value::Object(Default::default()));
    let refuse = |e: settings::ShapeError| format!("refusing to touch {shown}: {e}");

    if uninstall {
        return match settings::uninstall(document).map_err(refuse)? {
            Outcome::Removed { settings, removed } => {
                replace(&path, previous, &settings)?;
                say(&format!(
                    "Removed {removed} unlazy Stop hook entr{} from {shown}",
                    if removed == 1 { "y" } else { "ies" }
                ));
                Ok(())
            }
            _ => {
                say(&format!("Nothing to remove: no unlazy Stop hook found in {shown}"));
                Ok(())
            }
        };
    }

    let program = program_path()?;
    let command = settings::hook_command(&program, scope);
    match settings::install(document, &command).map_err(refuse)? {
        Outcome::Installed { settings, replaced } => {
            if location == Location::Shared {
                warn(&format!(
                    "gate-check: warning: {shown} is usually committed, and this entry embeds the absolute path {program}; \
                     it will not work on other machines and reveals a local directory name. The default install writes settings.local.json instead."
                ));
            }
            replace(&path, previous, &settings)?;
            say(&format!("Installed unlazy Stop hook into {shown}"));
            if replaced > 0 {
                say(&format!(
                    "  replaced: {replaced} older unlazy Stop hook entr{}",
                    if replaced == 1 { "y" } else { "ies" }
                ));
            }
            say(&format!("  command: {command}"));
            say(&match scope {
                Some(scope) => format!("  guards:  the .unlazy/{scope}/ pipeline"),
                None => "  guards:  this session's bound pipeline, else UNLAZY_SCOPE, else the only unbound pipeline, else GATES.md and gates/*.md".to_string(),
            });
            say("  effect:  ending a turn is blocked while those gates are unmet, stale or unparseable; at most 6 blocks without progress");
            if previous.is_some() {
                say(&format!("  backup:  {shown}{BACKUP_SUFFIX}"));
            }
            say(&format!(
                "  remove:  {} install-hooks{} --uninstall",
                crate::shell_words::quote(&program),
                location.flag()
            ));
            say("  note:    keep .unlazy/ and .unlazy-hook-state.json out of version control");
            Ok(())
        }
        _ => {
            say(&format!("Already installed in {shown} (idempotent, nothing changed)."));
            Ok(())
        }
    }
}

/// Runs the installer; returns the exit code.
pub fn run(location: Location, scope: Option<&str>, uninstall: bool) -> i32 {
    match apply(location, scope, uninstall) {
        Ok(()) => 0,
        Err(message) => {
            warn(&format!("gate-check: {message}"));
            2
        }
    }
}
