//! `gate-check install-hooks`: the side-effect half of hook installation.
//! It finds the settings file, reads it, applies the pure transform in
//! `settings`, and writes the result atomically after saving the previous
//! file as `<file>.unlazy.bak`. Any failure leaves every file unchanged
//! and exits 2.

pub mod settings;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use crate::config::Environment;
use crate::host::Host;
use crate::target::InvalidId;
use crate::terminal::{say, warn};
use settings::{HookFile, Outcome, ShapeError};

/// Why the installer changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error(transparent)]
    Id(#[from] InvalidId),
    #[error("cannot find the home directory")]
    NoHome,
    #[error(
        "--shared writes Claude Code's committed settings; Codex, Gemini CLI and Cursor have one project file \
         (the default) and one user file (--global)"
    )]
    NoSharedFile,
    /// The settings file, or its directory, is not one this installer may
    /// touch; `why` says what it is.
    #[error("refusing to touch {}: {why}", .path.display())]
    Refused { path: PathBuf, why: String },
    /// The settings file is shaped so that adding or removing an entry
    /// would change what is not ours.
    #[error("refusing to touch {}: {source}", .path.display())]
    Shape { path: PathBuf, source: ShapeError },
    #[error("refusing to replace {}: {why}", .path.display())]
    NotReplaceable { path: PathBuf, why: &'static str },
    #[error("cannot {doing} {}: {source}", .path.display())]
    Io { doing: &'static str, path: PathBuf, source: io::Error },
    /// The atomic replacement (the error names the file).
    #[error("cannot write {0}")]
    Write(#[source] io::Error),
    #[error("{} has no directory", .0.display())]
    NoDirectory(PathBuf),
    #[error("cannot find this executable: {0}")]
    NoExecutable(#[source] io::Error),
    #[error("the path of this executable is not UTF-8: {}", .0.display())]
    ExecutableNotUtf8(PathBuf),
}

/// A settings file larger than this is not one a person maintains.
const MAX_SETTINGS_BYTES: u64 = 4 * 1024 * 1024;
const BACKUP_SUFFIX: &str = ".unlazy.bak";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// The project's file: Claude Code's personal, usually untracked
    /// `.claude/settings.local.json`, or Codex's `.codex/hooks.json`.
    Local,
    /// `<project>/.claude/settings.json`: usually committed (Claude Code only).
    Shared,
    /// The user's file: `~/.claude/settings.json` or `~/.codex/hooks.json`.
    Global,
}

/// The hook file `host` reads at `location`.
fn settings_path(host: Host, location: Location, env: &Environment) -> Result<PathBuf, InstallError> {
    let home = || env.home.as_deref().ok_or(InstallError::NoHome);
    let (directory, file) = match host {
        Host::Claude => (".claude", if location == Location::Local { "settings.local.json" } else { "settings.json" }),
        Host::Codex => (".codex", "hooks.json"),
        Host::Gemini => (".gemini", "settings.json"),
        Host::Cursor => (".cursor", "hooks.json"),
    };
    Ok(match location {
        Location::Shared if host != Host::Claude => return Err(InstallError::NoSharedFile),
        Location::Local | Location::Shared => env.cwd.join(directory).join(file),
        Location::Global => home()?.join(directory).join(file),
    })
}

/// The options that name `host` and `location` again, for the remove line.
fn flags(host: Host, location: Location) -> String {
    let host = match host {
        Host::Claude => String::new(),
        other => format!(" --agent {}", other.name()),
    };
    let location = match location {
        Location::Local => "",
        Location::Shared => " --shared",
        Location::Global => " --global",
    };
    format!("{host}{location}")
}

/// Whether the file at `location` is one a team usually commits, where an
/// absolute path to this binary does not belong.
fn usually_committed(host: Host, location: Location) -> bool {
    match host {
        Host::Claude => location == Location::Shared,
        Host::Codex | Host::Gemini | Host::Cursor => location == Location::Local,
    }
}

fn entries(count: usize) -> &'static str {
    if count == 1 {
        "entry"
    } else {
        "entries"
    }
}

/// The settings file as read: its JSON, its bytes, and the snapshot
/// (file id, size, modification time) it must still match when it is
/// replaced.
struct Current {
    value: Value,
    bytes: Vec<u8>,
    snapshot: Snapshot,
}

type Snapshot = (crate::durable::FileId, u64, Option<SystemTime>);

fn snapshot(id: crate::durable::FileId, meta: &fs::Metadata) -> Snapshot {
    (id, meta.len(), meta.modified().ok())
}

/// The current settings: `Ok(None)` when the file does not exist yet. As in
/// the Node installer, the file must be one unchanged, regular, single-link
/// file: replacing a hard-linked file would silently cut the link.
fn read_settings(path: &Path) -> Result<Option<Current>, InstallError> {
    use crate::durable::ReadRefusal;
    let refuse = |why: &str| InstallError::Refused { path: path.to_path_buf(), why: why.to_string() };
    let read = match crate::durable::read_stable(path, MAX_SETTINGS_BYTES) {
        Ok(None) => return Ok(None),
        Ok(Some(read)) => read,
        Err(ReadRefusal::Link) => {
            return Err(InstallError::NotReplaceable {
                path: path.to_path_buf(),
                why: "it is a symbolic link; edit its target instead",
            })
        }
        Err(ReadRefusal::NotRegular) => return Err(refuse("it is not a regular file")),
        Err(ReadRefusal::Linked) => {
            return Err(refuse("it has more than one hard link; it must be one unchanged, regular, single-link file"))
        }
        Err(ReadRefusal::Changed) => return Err(refuse("it changed while it was read")),
        Err(ReadRefusal::TooLarge) => return Err(refuse(&format!("it exceeds {MAX_SETTINGS_BYTES} bytes"))),
        Err(ReadRefusal::Io(source)) => {
            return Err(InstallError::Io { doing: "read", path: path.to_path_buf(), source })
        }
    };
    let value = serde_json::from_slice(&read.bytes).map_err(|e| refuse(&json_refusal(&e, &read.bytes)))?;
    Ok(Some(Current { value, bytes: read.bytes, snapshot: snapshot(read.id, &read.metadata) }))
}

/// Refuses a settings directory (`.claude/`) that is a symbolic link: the
/// write would land in the link's target, somewhere the person did not
/// name. As the Node installer does, the directory must be a real one.
fn refuse_linked_directory(path: &Path) -> Result<(), InstallError> {
    let Some(directory) = path.parent() else {
        return Ok(());
    };
    match fs::symlink_metadata(directory) {
        Ok(meta) if meta.file_type().is_symlink() => Err(InstallError::Refused {
            path: path.to_path_buf(),
            why: format!("its directory {} is a symbolic link; it must be a real directory", directory.display()),
        }),
        _ => Ok(()),
    }
}

/// Why settings that do not parse are left alone. Two kinds are valid
/// JSON that this installer cannot write back unchanged, and say so.
fn json_refusal(error: &serde_json::Error, bytes: &[u8]) -> String {
    let text = error.to_string();
    // `\uD800`-`\uDFFF`: half of a UTF-16 pair, which JSON allows alone.
    let surrogate_escape = bytes.windows(4).any(|w| {
        w[0] == b'\\'
            && w[1] == b'u'
            && w[2].eq_ignore_ascii_case(&b'd')
            && matches!(w[3].to_ascii_lowercase(), b'8'..=b'9' | b'a'..=b'f')
    });
    let escape_error = text.contains("surrogate") || text.contains("hex escape") || text.contains("unicode code point");
    if text.starts_with("recursion limit exceeded") {
        format!("it nests deeper than gate-check can rewrite without changing it ({text})")
    } else if surrogate_escape && escape_error {
        format!("it holds a lone UTF-16 surrogate escape, which gate-check cannot write back unchanged ({text})")
    } else {
        format!("it exists but is not valid JSON ({text})")
    }
}

/// Refuses when the settings file is no longer the one that was read.
fn ensure_unchanged(path: &Path, current: Option<&Current>) -> Result<(), InstallError> {
    let now = crate::durable::stat_entry(path).ok().flatten().zip(fs::symlink_metadata(path).ok());
    let unchanged = match (current, &now) {
        (Some(current), Some((stat, meta))) => {
            stat.kind == crate::durable::Kind::File && stat.links == 1 && snapshot(stat.id, meta) == current.snapshot
        }
        (None, None) => true,
        _ => false,
    };
    if unchanged {
        Ok(())
    } else {
        Err(InstallError::Refused {
            path: path.to_path_buf(),
            why: "it changed while the hook entry was prepared".to_string(),
        })
    }
}

fn write_atomically(path: &Path, bytes: &[u8], mode: u32) -> Result<(), InstallError> {
    crate::durable::replace_file(path, bytes, mode).map_err(InstallError::Write)
}

fn render(settings: &Value) -> Vec<u8> {
    let mut text = serde_json::to_string_pretty(settings).unwrap_or_default();
    text.push('\n');
    text.into_bytes()
}

/// Saves the previous file as `<file>.unlazy.bak`, then replaces the file.
fn replace(path: &Path, current: Option<&Current>, settings: &Value) -> Result<(), InstallError> {
    ensure_unchanged(path, current)?;
    let mode = match current.map(|current| current.bytes.as_slice()) {
        Some(bytes) => {
            let inspect = |source| InstallError::Io { doing: "inspect", path: path.to_path_buf(), source };
            let mode = file_mode(path).map_err(inspect)?;
            let mut backup = path.as_os_str().to_owned();
            backup.push(BACKUP_SUFFIX);
            let backup = PathBuf::from(backup);
            if fs::symlink_metadata(&backup).is_ok_and(|m| !m.is_file()) {
                return Err(InstallError::NotReplaceable { path: backup, why: "it is not a regular file" });
            }
            write_atomically(&backup, bytes, mode)?;
            mode
        }
        None => {
            let directory = path.parent().ok_or_else(|| InstallError::NoDirectory(path.to_path_buf()))?;
            fs::create_dir_all(directory).map_err(|source| InstallError::Io {
                doing: "create",
                path: directory.to_path_buf(),
                source,
            })?;
            0o644
        }
    };
    write_atomically(path, &render(settings), mode)
}

/// The permissions the backup keeps: the file's mode on Unix. Windows
/// files have no mode; the backup inherits its directory's ACL.
#[cfg(unix)]
fn file_mode(path: &Path) -> io::Result<u32> {
    use std::os::unix::fs::PermissionsExt;
    Ok(fs::metadata(path)?.permissions().mode() & 0o7777)
}

#[cfg(windows)]
fn file_mode(path: &Path) -> io::Result<u32> {
    fs::metadata(path).map(|_| 0o644)
}

fn program_path() -> Result<String, InstallError> {
    let exe = std::env::current_exe().map_err(InstallError::NoExecutable)?;
    let exe = crate::durable::real_path(&exe).unwrap_or(exe);
    match exe.to_str() {
        Some(text) => Ok(text.to_string()),
        None => Err(InstallError::ExecutableNotUtf8(exe)),
    }
}

/// Installs (or with `uninstall` removes) the Stop hook entries of `host`
/// and, with `guard`, its pre-tool guard (without, a guard installed
/// before is removed).
pub fn run(
    env: &Environment,
    host: Host,
    location: Location,
    scope: Option<&str>,
    uninstall: bool,
    guard: bool,
) -> Result<(), InstallError> {
    if let Some(scope) = scope {
        crate::target::validate_scope_id(scope, "--scope")?;
    }
    let path = settings_path(host, location, env)?;
    let shown = path.display().to_string();
    refuse_linked_directory(&path)?;
    let current = read_settings(&path)?;
    let document =
        current.as_ref().map(|current| current.value.clone()).unwrap_or_else(|| Value::Object(Default::default()));
    let refuse = |source: ShapeError| InstallError::Shape { path: path.clone(), source };
    let file = HookFile::of(host);

    if uninstall {
        return match settings::uninstall(document, file).map_err(refuse)? {
            Outcome::Removed { settings, removed } => {
                replace(&path, current.as_ref(), &settings)?;
                let mut counts = file.slots.iter().zip(removed).filter(|(_, count)| *count > 0);
                if let Some((slot, count)) = counts.next() {
                    say(&format!("Removed {count} unlazy {} hook {} from {shown}", slot.event, entries(count)));
                }
                for (slot, count) in counts {
                    say(&format!("  also:    {count} {} {}", slot.event, entries(count)));
                }
                Ok(())
            }
            _ => {
                say(&format!("Nothing to remove: no unlazy hook entry found in {shown}"));
                Ok(())
            }
        };
    }

    let program = program_path()?;
    let command = settings::hook_command(&program, host, scope);
    let guard_command = guard.then(|| settings::guard_command(&program, host));
    let commands = settings::Commands { stop: &command, guard: guard_command.as_deref() };
    match settings::install(document, commands, file).map_err(refuse)? {
        Outcome::Installed { settings, replaced, dropped } => {
            if usually_committed(host, location) {
                let instead = match host {
                    Host::Claude => "The default install writes settings.local.json instead.",
                    Host::Codex | Host::Gemini | Host::Cursor => "Install with --global to keep it out of the project.",
                };
                warn(&format!(
                    "gate-check: warning: {shown} is usually committed, and this entry embeds the absolute path {program}; \
                     it will not work on other machines and reveals a local directory name. {instead}"
                ));
            }
            replace(&path, current.as_ref(), &settings)?;
            say(&format!("Installed unlazy Stop hook into {shown}"));
            if replaced > 0 {
                say(&format!("  replaced: {replaced} older unlazy hook {}", entries(replaced)));
            }
            say(&format!("  command: {command}"));
            say(&match scope {
                Some(scope) => format!("  guards:  the .unlazy/{scope}/ pipeline"),
                None => "  guards:  this session's bound pipeline, else UNLAZY_SCOPE, else the only unbound pipeline, else GATES.md and gates/*.md".to_string(),
            });
            say("  effect:  ending a turn is blocked while those gates are unmet, stale or unparseable; at most 6 blocks without progress");
            say(&host_note(host));
            match &guard_command {
                Some(guard) => {
                    say(&format!("  guard:   {guard} ({})", guard_events(host)));
                    say("           refuses ledger edits that tick a runnable gate or write its EVIDENCE, writes into the");
                    say("           approval and receipt stores or .unlazy/locks, and gate-check --approve (see references/hooks.md)");
                }
                None if dropped > 0 => {
                    say(&format!("  guard:   left out (--no-guard); removed {dropped} guard {}", entries(dropped)))
                }
                None => say("  guard:   left out (--no-guard)"),
            }
            if current.is_some() {
                say(&format!("  backup:  {shown}{BACKUP_SUFFIX}"));
            }
            say(&format!(
                "  remove:  {} install-hooks{} --uninstall",
                settings::quote_program(&program),
                flags(host, location)
            ));
            // As references/parallel.md says: plans and ledgers may be committed.
            say("  note:    keep .unlazy-hook-state.json and .unlazy/'s machine-local state (locks/, */session,");
            say("           */hook-state.json, *.tmp) out of version control; its plans and ledgers may be committed");
            match host {
                // gate-check never edits Codex's config.toml unasked.
                Host::Codex => {
                    say("  enable:  Codex runs hooks only with `codex_hooks = true` under [features] in its config.toml,");
                    say("           and only after you trust this hook (Codex's /hooks); gate-check changes neither");
                }
                Host::Cursor => {
                    say("  note:    Cursor also runs Claude Code's hooks when third-party hooks are on; keep only one");
                    say("           of the two installs there, or every stop is counted twice");
                }
                Host::Claude | Host::Gemini => {}
            }
            Ok(())
        }
        _ => {
            say(&format!("Already installed in {shown} (idempotent, nothing changed)."));
            Ok(())
        }
    }
}

/// The events at which the host runs the guard.
fn guard_events(host: Host) -> &'static str {
    match host {
        Host::Claude | Host::Codex => "PreToolUse",
        Host::Gemini => "BeforeTool, timeout 10000 ms",
        Host::Cursor => "preToolUse and beforeShellExecution",
    }
}

/// Which events the host's entries serve, in its own terms.
fn host_note(host: Host) -> String {
    match host {
        Host::Claude | Host::Codex => {
            "  events:  Stop, and SubagentStop: a subagent launched for a dispatched leaf is held to that leaf's gates"
                .to_string()
        }
        Host::Gemini => "  event:   AfterAgent, timeout 20000 ms (Gemini CLI counts hook timeouts in milliseconds)".to_string(),
        Host::Cursor => format!(
            "  event:   stop, replying with a followup_message; loop_limit {} (no more follow-ups than the guard allows)",
            crate::hook::state::MAX_BLOCKS
        ),
    }
}
