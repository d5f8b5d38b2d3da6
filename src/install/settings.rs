//! The settings transform behind `install-hooks`: pure functions from one
//! hook file document to the next. Claude Code's settings, Codex's
//! `hooks.json` and Gemini CLI's settings share one shape (an event's
//! array of groups, each with its `hooks` handlers); Cursor's `hooks.json`
//! lists the handlers straight in the event's array and carries a
//! `version`. Only the host's stop events (`hooks.Stop` and
//! `hooks.SubagentStop`, Gemini's `hooks.AfterAgent`, Cursor's
//! `hooks.stop`) and pre-tool events (`hooks.PreToolUse`, Gemini's
//! `hooks.BeforeTool`, Cursor's `hooks.preToolUse` and
//! `hooks.beforeShellExecution`) are touched, and inside them only hook
//! entries this tool wrote: at a stop event its own `gate-check hook stop`
//! command, from any install location, or a handler the Node installer
//! wrote, recognised by its own 2.1 rules; at a pre-tool event its own
//! `gate-check hook pre-tool` command. Every other key, group and sibling
//! hook is kept as is.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{json, Map, Value};
use thiserror::Error;

use crate::host::Host;
use crate::shell_words::{quote, tokenize, Token};

/// How an event's array holds its handlers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Matcher groups, each with a `hooks` array of handlers.
    Grouped,
    /// The handlers themselves (Cursor).
    Flat,
}

/// Which of this tool's hooks an event runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `gate-check hook stop`.
    Stop,
    /// `gate-check hook pre-tool`.
    Guard,
}

/// One event at which a host runs one of this tool's hooks, and the
/// handler it needs there: its `timeout` in the host's own unit and, for
/// Cursor's stop, the `loop_limit` on follow-ups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub event: &'static str,
    pub timeout: u64,
    pub layout: Layout,
    pub loop_limit: Option<u64>,
    pub role: Role,
}

impl Slot {
    const fn stop(event: &'static str, timeout: u64) -> Slot {
        Slot { event, timeout, layout: Layout::Grouped, loop_limit: None, role: Role::Stop }
    }

    /// The guard runs before every tool call and answers in milliseconds;
    /// its timeout only bounds a wedged file system.
    const fn guard(event: &'static str, timeout: u64, layout: Layout) -> Slot {
        Slot { event, timeout, layout, loop_limit: None, role: Role::Guard }
    }
}

/// Claude Code and Codex: `Stop`, the timeout in seconds (20 s).
pub const STOP: Slot = Slot::stop("Stop", 20);

/// Claude Code and Codex: a subagent's stop, held to its own leaf.
pub const SUBAGENT_STOP: Slot = Slot::stop("SubagentStop", 20);

/// Gemini CLI: `AfterAgent`, the timeout in milliseconds (the same 20 s).
pub const AFTER_AGENT: Slot = Slot::stop("AfterAgent", 20_000);

/// Cursor: `stop`, the timeout in seconds, and at most as many follow-ups
/// as the hook's own progress guard allows without progress.
pub const CURSOR_STOP: Slot = Slot {
    event: "stop",
    timeout: 20,
    layout: Layout::Flat,
    loop_limit: Some(crate::hook::state::MAX_BLOCKS),
    role: Role::Stop,
};

/// Claude Code and Codex: the guard before every tool (10 s).
pub const PRE_TOOL_USE: Slot = Slot::guard("PreToolUse", 10, Layout::Grouped);

/// Gemini CLI: the guard before every tool, in milliseconds (10 s).
pub const BEFORE_TOOL: Slot = Slot::guard("BeforeTool", 10_000, Layout::Grouped);

/// Cursor: the guard before every tool, and before every shell command
/// (a Cursor without `preToolUse` still sends this one).
pub const CURSOR_PRE_TOOL: Slot = Slot::guard("preToolUse", 10, Layout::Flat);
pub const CURSOR_BEFORE_SHELL: Slot = Slot::guard("beforeShellExecution", 10, Layout::Flat);

/// What one host's hook file needs: its stop and pre-tool events, and the
/// `version` the file must declare (Cursor's `1`), if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookFile {
    pub slots: &'static [Slot],
    pub version: Option<u64>,
}

impl HookFile {
    pub fn of(host: Host) -> HookFile {
        match host {
            Host::Claude | Host::Codex => HookFile { slots: &[STOP, SUBAGENT_STOP, PRE_TOOL_USE], version: None },
            Host::Gemini => HookFile { slots: &[AFTER_AGENT, BEFORE_TOOL], version: None },
            Host::Cursor => HookFile { slots: &[CURSOR_STOP, CURSOR_PRE_TOOL, CURSOR_BEFORE_SHELL], version: Some(1) },
        }
    }
}

/// The commands an install writes: the Stop hook's, and the guard's
/// (`None` leaves the guard out and removes one installed before).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Commands<'a> {
    pub stop: &'a str,
    pub guard: Option<&'a str>,
}

impl Commands<'_> {
    fn of(&self, role: Role) -> Option<&str> {
        match role {
            Role::Stop => Some(self.stop),
            Role::Guard => self.guard,
        }
    }
}

#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum ShapeError {
    #[error("the settings file is not a JSON object")]
    NotAnObject,
    #[error("\"hooks\" is not an object")]
    HooksNotAnObject,
    #[error("\"hooks.{0}\" is not an array")]
    EventNotAnArray(&'static str),
    #[error("hooks.{0}[{1}] is not an object with a \"hooks\" array")]
    BadGroup(&'static str, usize),
    #[error("hooks.{0}[{1}].hooks[{2}] is not an object, or its \"command\" is not a string")]
    BadHook(&'static str, usize, usize),
    #[error("hooks.{0}[{1}] is not an object, or its \"command\" is not a string")]
    BadHandler(&'static str, usize),
    #[error("\"version\" is {found}, not {wanted}")]
    Version { found: String, wanted: u64 },
}

/// The hook command this binary installs: `<program> hook stop [--agent
/// HOST] [--scope ID]`. Claude Code's command names no host, as before:
/// it is the default, and Cursor runs Claude Code's hooks too.
pub fn hook_command(program: &str, host: Host, scope: Option<&str>) -> String {
    let mut command = format!("{} hook stop", quote_program(program));
    if host != Host::Claude {
        command.push_str(&format!(" --agent {}", host.name()));
    }
    if let Some(scope) = scope {
        command.push_str(&format!(" --scope {}", quote(scope)));
    }
    command
}

/// The guard command this binary installs: `<program> hook pre-tool
/// [--agent HOST]`. It guards every ledger and store, so it takes no scope.
pub fn guard_command(program: &str, host: Host) -> String {
    let mut command = format!("{} hook pre-tool", quote_program(program));
    if host != Host::Claude {
        command.push_str(&format!(" --agent {}", host.name()));
    }
    command
}

/// The program's path as the first word of a hook command: a POSIX shell
/// word, or on Windows the Node installer's quoting there, the path in
/// double quotes (which a Windows path cannot contain), read alike by
/// cmd.exe and by the Git Bash agents run hooks with.
pub fn quote_program(program: &str) -> String {
    if cfg!(windows) {
        format!("\"{}\"", program.replace('"', "\"\""))
    } else {
        quote(program)
    }
}

/// The marker the Node installer (2.1) puts in every command it writes.
const NODE_MARKER: &str = "--unlazy-hook-v2";

/// `stop-hook.mjs` in a `scripts` directory, as a whole (possibly quoted) word.
static PACKAGED_NODE_HOOK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)(?:^|[\s"'])[^\s"']*[\\/]scripts[\\/]stop-hook\.mjs(?:$|[\s"'])"#).expect("static regex")
});
/// `.../unlazy/scripts/stop-hook.mjs`: a Node 2.0/2.1 install under its own name.
static NAMED_NODE_INSTALL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)[\\/]unlazy[\\/]scripts[\\/]stop-hook\.mjs(?:$|[\s"'])"#).expect("static regex")
});
/// The Claude skill location Node 2.0 installed to, before it had a marker.
static CONVENTIONAL_NODE_INSTALL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)[\\/]\.claude[\\/]skills[\\/]unlazy[\\/]scripts[\\/]stop-hook\.mjs(?:$|[\s"'])"#)
        .expect("static regex")
});

/// `option` as a whole whitespace-separated word of `command`.
fn has_option(command: &str, option: &str) -> bool {
    command.split_whitespace().any(|word| word == option)
}

/// True for a handler command the Node installer wrote, by the rules it
/// applies itself: never with another `--unlazy-*` option (that is another
/// tool's), always with its marker, and before the marker only at the
/// conventional skill path or as `--unlazy` next to a packaged hook script.
fn is_node_handler(command: &str) -> bool {
    let foreign_option = command.split_whitespace().any(|word| {
        let unquoted = ['"', '\'']
            .iter()
            .find_map(|&q| word.strip_prefix(q).and_then(|w| w.strip_suffix(q)).filter(|_| word.len() >= 2))
            .unwrap_or(word);
        unquoted.starts_with("--unlazy-") && unquoted != NODE_MARKER
    });
    if foreign_option {
        return false;
    }
    has_option(command, NODE_MARKER)
        || CONVENTIONAL_NODE_INSTALL.is_match(command)
        || (has_option(command, "--unlazy")
            && (NAMED_NODE_INSTALL.is_match(command) || PACKAGED_NODE_HOOK.is_match(command)))
}

/// True for a command an install of this tool (any version, any location)
/// wrote for `role`: `.../gate-check hook stop ...` or one the Node
/// installer wrote, or `.../gate-check hook pre-tool ...`.
pub fn is_ours(command: &str, role: Role) -> bool {
    let event = match role {
        Role::Stop => "stop",
        Role::Guard => "pre-tool",
    };
    let invokes_gate_check = split_program(command).is_some_and(|(program, words)| {
        is_gate_check(&program)
            && matches!(words.as_slice(), [hook, named, ..] if hook.is_word("hook") && named.is_word(event))
    });
    invokes_gate_check || (role == Role::Stop && is_node_handler(command))
}

/// The program a hook command runs, and the words after it. On Windows a
/// program in double quotes is taken as it stands (a backslash separates
/// directories there and escapes nothing), as `quote_program` writes it.
fn split_program(command: &str) -> Option<(String, Vec<Token>)> {
    if cfg!(windows) {
        if let Some(rest) = command.strip_prefix('"') {
            let (program, after) = rest.split_once('"')?;
            return Some((program.to_string(), tokenize(after)));
        }
    }
    let mut words = tokenize(command).into_iter();
    match words.next()? {
        Token::Word(program) => Some((program, words.collect())),
        Token::Operator(_) => None,
    }
}

/// A path whose file name is `gate-check` (on Windows also `gate-check.exe`,
/// in any case, after a `\` or `/`).
fn is_gate_check(program: &str) -> bool {
    let name = program.rsplit(|c| c == '/' || (cfg!(windows) && c == '\\')).next().unwrap_or(program);
    name == "gate-check" || (cfg!(windows) && name.eq_ignore_ascii_case("gate-check.exe"))
}

/// The whole handler this tool installs for `command` at `slot`.
fn handler(command: &str, slot: Slot) -> Value {
    match (slot.layout, slot.loop_limit) {
        (Layout::Grouped, _) => json!({ "type": "command", "command": command, "timeout": slot.timeout }),
        (Layout::Flat, Some(limit)) => json!({ "command": command, "timeout": slot.timeout, "loop_limit": limit }),
        (Layout::Flat, None) => json!({ "command": command, "timeout": slot.timeout }),
    }
}

#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// The exact handler is already the only entry of ours at every slot.
    AlreadyInstalled,
    /// `replaced` older entries of ours were removed first, and `dropped`
    /// guard entries removed because the guard was left out.
    Installed {
        settings: Value,
        replaced: usize,
        dropped: usize,
    },
    /// `removed[i]` entries were removed from `slots[i]`.
    Removed {
        settings: Value,
        removed: Vec<usize>,
    },
    NothingToRemove,
}

/// Checks the shape of everything the transform walks through.
fn validate(settings: &Value, file: HookFile) -> Result<(), ShapeError> {
    let root = settings.as_object().ok_or(ShapeError::NotAnObject)?;
    if let (Some(wanted), Some(found)) = (file.version, root.get("version")) {
        if found.as_u64() != Some(wanted) {
            return Err(ShapeError::Version { found: found.to_string(), wanted });
        }
    }
    let Some(hooks) = root.get("hooks") else {
        return Ok(());
    };
    let hooks = hooks.as_object().ok_or(ShapeError::HooksNotAnObject)?;
    let well_formed = |entry: &Value| entry.as_object().is_some_and(|e| e.get("command").is_none_or(Value::is_string));
    for slot in file.slots {
        let event = slot.event;
        let Some(stop) = hooks.get(event) else {
            continue;
        };
        let items = stop.as_array().ok_or(ShapeError::EventNotAnArray(event))?;
        for (g, item) in items.iter().enumerate() {
            if slot.layout == Layout::Flat {
                if !well_formed(item) {
                    return Err(ShapeError::BadHandler(event, g));
                }
                continue;
            }
            let entries = item.get("hooks").and_then(Value::as_array).ok_or(ShapeError::BadGroup(event, g))?;
            if let Some(h) = entries.iter().position(|entry| !well_formed(entry)) {
                return Err(ShapeError::BadHook(event, g, h));
            }
        }
    }
    Ok(())
}

fn command_of(entry: &Value) -> Option<&str> {
    entry.get("command").and_then(Value::as_str)
}

fn is_our_entry(entry: &Value, role: Role) -> bool {
    command_of(entry).is_some_and(|command| is_ours(command, role))
}

/// Every handler in the event's array, in order.
fn handlers_at(settings: &Value, slot: Slot) -> Vec<&Value> {
    let items = settings.get("hooks").and_then(|hooks| hooks.get(slot.event)).and_then(Value::as_array);
    let items = items.into_iter().flatten();
    match slot.layout {
        Layout::Flat => items.collect(),
        Layout::Grouped => items.filter_map(|group| group.get("hooks").and_then(Value::as_array)).flatten().collect(),
    }
}

/// Removes every hook entry of ours from the event's array: for groups,
/// dropping a group only when our removal emptied it. Returns the number
/// removed.
fn remove_ours(items: &mut Vec<Value>, slot: Slot) -> usize {
    let before = items.len();
    if slot.layout == Layout::Flat {
        items.retain(|entry| !is_our_entry(entry, slot.role));
        return before - items.len();
    }
    let mut removed = 0;
    items.retain_mut(|group| {
        let Some(entries) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
            return true;
        };
        let before = entries.len();
        entries.retain(|entry| !is_our_entry(entry, slot.role));
        removed += before - entries.len();
        !(entries.is_empty() && before > 0)
    });
    removed
}

fn event_items<'a>(settings: &'a mut Value, event: &str) -> &'a mut Vec<Value> {
    let root = settings.as_object_mut().expect("validated object");
    let hooks = root.entry("hooks").or_insert_with(|| Value::Object(Map::new()));
    let stop = hooks.as_object_mut().expect("validated object").entry(event).or_insert_with(|| json!([]));
    stop.as_array_mut().expect("validated array")
}

/// Removes every entry of ours from the event of `slot`, dropping the
/// event's array, and then `hooks`, when that removal emptied them.
/// Returns the number removed.
fn remove_from(settings: &mut Value, slot: Slot) -> usize {
    let Some(items) =
        settings.get_mut("hooks").and_then(|hooks| hooks.get_mut(slot.event)).and_then(Value::as_array_mut)
    else {
        return 0;
    };
    let count = remove_ours(items, slot);
    if count > 0 && items.is_empty() {
        let root = settings.as_object_mut().expect("validated object");
        let hooks = root.get_mut("hooks").and_then(Value::as_object_mut).expect("validated object");
        hooks.remove(slot.event);
        if hooks.is_empty() {
            root.remove("hooks");
        }
    }
    count
}

/// Adds the handler running each role's command at every slot of `file`,
/// replacing older or damaged entries of ours; a slot already holding
/// exactly the wanted handler is left as it is. A role without a command
/// (the guard, left out) has its entries of ours removed.
pub fn install(mut settings: Value, commands: Commands, file: HookFile) -> Result<Outcome, ShapeError> {
    validate(&settings, file)?;
    let version_missing = file.version.is_some() && settings.get("version").is_none();
    let mut changed = version_missing;
    let (mut replaced, mut dropped) = (0, 0);
    for &slot in file.slots {
        let Some(command) = commands.of(slot.role) else {
            let removed = remove_from(&mut settings, slot);
            changed |= removed > 0;
            dropped += removed;
            continue;
        };
        let wanted = handler(command, slot);
        // The whole handler, not just its command: an entry edited to
        // another type or timeout is damaged and is replaced.
        let ours: Vec<&Value> =
            handlers_at(&settings, slot).into_iter().filter(|entry| is_our_entry(entry, slot.role)).collect();
        if ours == [&wanted] {
            continue;
        }
        changed = true;
        let items = event_items(&mut settings, slot.event);
        replaced += remove_ours(items, slot);
        items.push(match slot.layout {
            Layout::Grouped => json!({ "hooks": [wanted] }),
            Layout::Flat => wanted,
        });
    }
    if !changed {
        return Ok(Outcome::AlreadyInstalled);
    }
    if let (true, Some(version)) = (version_missing, file.version) {
        // First, where the host's own examples put it; every other key
        // keeps its order.
        let rest = std::mem::take(settings.as_object_mut().expect("validated object"));
        let mut with_version = Map::new();
        with_version.insert("version".into(), json!(version));
        with_version.extend(rest);
        settings = Value::Object(with_version);
    }
    Ok(Outcome::Installed { settings, replaced, dropped })
}

/// Removes every entry of ours at every slot of `file`; an event array and
/// a `hooks` object left empty by that removal are dropped too.
pub fn uninstall(mut settings: Value, file: HookFile) -> Result<Outcome, ShapeError> {
    validate(&settings, file)?;
    let removed: Vec<usize> = file.slots.iter().map(|&slot| remove_from(&mut settings, slot)).collect();
    if removed.iter().all(|&count| count == 0) {
        return Ok(Outcome::NothingToRemove);
    }
    Ok(Outcome::Removed { settings, removed })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: &str = "/opt/tools/gate-check";

    /// `ME` as the first word of a command.
    fn me() -> String {
        quote_program(ME)
    }
    const CLAUDE: HookFile = HookFile { slots: &[STOP, SUBAGENT_STOP], version: None };
    const STOP_ONLY: HookFile = HookFile { slots: &[STOP], version: None };

    /// The Stop hook's command alone, the guard left out.
    fn stops(command: &str) -> Commands<'_> {
        Commands { stop: command, guard: None }
    }

    fn installed(settings: Value, command: &str, file: HookFile) -> Value {
        match install(settings, stops(command), file).unwrap() {
            Outcome::Installed { settings, .. } => settings,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn commands_and_ownership() {
        assert_eq!(HookFile::of(Host::Claude).slots, [STOP, SUBAGENT_STOP, PRE_TOOL_USE]);
        assert_eq!(hook_command(ME, Host::Claude, None), format!("{} hook stop", me()));
        assert_eq!(hook_command(ME, Host::Cursor, None), format!("{} hook stop --agent cursor", me()));
        assert_eq!(
            hook_command("/a b/gate-check", Host::Codex, Some("api")),
            format!("{} hook stop --agent codex --scope api", quote_program("/a b/gate-check"))
        );
        if cfg!(windows) {
            // The Node installer's win32 quoting, read back whole.
            let installed = hook_command(r"C:\Users\dev\bin\gate-check.exe", Host::Claude, None);
            assert_eq!(installed, r#""C:\Users\dev\bin\gate-check.exe" hook stop"#);
            assert!(is_ours(&installed, Role::Stop));
            assert!(!is_ours(r#""C:\Users\dev\bin\not-gate-check.exe" hook stop"#, Role::Stop));
        }
        assert!(is_ours("'/a b/gate-check' hook stop --scope api", Role::Stop));
        assert!(is_ours("gate-check hook stop --agent gemini", Role::Stop));
        assert!(is_ours("gate-check hook stop", Role::Stop));
        assert!(is_ours("node \"/home/u/skills/unlazy/scripts/stop-hook.mjs\" --unlazy", Role::Stop));
        assert!(!is_ours("gate-check --status", Role::Stop));
        assert!(!is_ours("/x/not-gate-check hook stop", Role::Stop));
        assert!(!is_ours("node other/stop-hook.mjs", Role::Stop));
        assert!(!is_ours("echo gate-check hook stop", Role::Stop));
        // The Node installer's entries, by its own 2.1 rules.
        assert!(is_ours("'/usr/bin/node' '/opt/x/scripts/stop-hook.mjs' --unlazy-hook-v2 --scope api", Role::Stop));
        assert!(is_ours("node /home/u/.claude/skills/unlazy/scripts/stop-hook.mjs", Role::Stop));
        assert!(is_ours("node /opt/tools/scripts/stop-hook.mjs --unlazy", Role::Stop));
        assert!(!is_ours("node /opt/other/stop-hook.mjs --unlazy-helper", Role::Stop));
        assert!(!is_ours("node /opt/unlazy/scripts/stop-hook.mjs --unlazy '--unlazy-helper'", Role::Stop));
        assert!(!is_ours("node /opt/unlazy/scripts/stop-hook.mjs", Role::Stop));
        assert!(!is_ours("node /opt/unlazy/tools/stop-hook.mjs --unlazy", Role::Stop));
        assert!(!is_ours("node /opt/scripts/my-stop-hook.mjs --unlazy", Role::Stop));
    }

    #[test]
    fn install_keeps_siblings_and_repairs_moved_entries() {
        let command = hook_command(ME, Host::Claude, None);
        let settings = json!({
            "model": "x",
            "hooks": {
                "PreToolUse": [{ "matcher": "Bash", "hooks": [{ "type": "command", "command": "audit" }] }],
                "Stop": [{ "hooks": [
                    { "type": "command", "command": "notify-done" },
                    { "type": "command", "command": "/old/place/gate-check hook stop" },
                ] }, { "hooks": [{ "type": "command", "command": "node /s/unlazy/scripts/stop-hook.mjs --unlazy" }] }],
            },
        });
        let Outcome::Installed { settings: out, replaced, .. } =
            install(settings.clone(), stops(&command), STOP_ONLY).unwrap()
        else {
            panic!()
        };
        assert_eq!(replaced, 2);
        assert_eq!(out["model"], "x");
        assert_eq!(out["hooks"]["PreToolUse"], settings["hooks"]["PreToolUse"]);
        let stop = out["hooks"]["Stop"].as_array().unwrap();
        assert_eq!(stop.len(), 2, "{stop:?}");
        assert_eq!(stop[0]["hooks"], json!([{ "type": "command", "command": "notify-done" }]));
        assert_eq!(stop[1]["hooks"][0]["command"], command);
        assert_eq!(install(out.clone(), stops(&command), STOP_ONLY).unwrap(), Outcome::AlreadyInstalled);
        let mut damaged = out.clone();
        damaged["hooks"]["Stop"][1]["hooks"][0] = json!({ "type": "prompt", "command": command, "timeout": 1 });
        let Outcome::Installed { settings: repaired, replaced, .. } =
            install(damaged, stops(&command), STOP_ONLY).unwrap()
        else {
            panic!()
        };
        assert_eq!((repaired, replaced), (out.clone(), 1));
        let rescoped = installed(out, &hook_command(ME, Host::Claude, Some("api")), STOP_ONLY);
        assert_eq!(rescoped["hooks"]["Stop"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn an_older_install_gains_the_subagent_slot_and_keeps_its_stop_entry() {
        let command = hook_command(ME, Host::Claude, None);
        let stop_only = installed(json!({}), &command, STOP_ONLY);
        let Outcome::Installed { settings, replaced, .. } =
            install(stop_only.clone(), stops(&command), CLAUDE).unwrap()
        else {
            panic!()
        };
        assert_eq!(replaced, 0, "the Stop entry was already right");
        assert_eq!(settings["hooks"]["Stop"], stop_only["hooks"]["Stop"]);
        assert_eq!(settings["hooks"]["SubagentStop"], stop_only["hooks"]["Stop"]);
        assert_eq!(install(settings.clone(), stops(&command), CLAUDE).unwrap(), Outcome::AlreadyInstalled);
        let Outcome::Removed { settings, removed } = uninstall(settings, CLAUDE).unwrap() else { panic!() };
        assert_eq!((settings, removed), (json!({}), vec![1, 1]));
    }

    #[test]
    fn uninstall_removes_only_ours() {
        let command = hook_command(ME, Host::Claude, None);
        let fresh = installed(json!({}), &command, STOP_ONLY);
        assert_eq!(
            fresh,
            json!({ "hooks": { "Stop": [{ "hooks": [{ "type": "command", "command": command, "timeout": 20 }] }] } })
        );
        let Outcome::Removed { settings, removed } = uninstall(fresh, STOP_ONLY).unwrap() else { panic!() };
        assert_eq!((settings, removed), (json!({}), vec![1]));
        let mixed =
            json!({ "hooks": { "Stop": [{ "hooks": [{ "command": "notify-done" }, { "command": command }] }] } });
        let Outcome::Removed { settings, .. } = uninstall(mixed, STOP_ONLY).unwrap() else { panic!() };
        assert_eq!(settings, json!({ "hooks": { "Stop": [{ "hooks": [{ "command": "notify-done" }] }] } }));
        assert_eq!(uninstall(json!({ "hooks": {} }), STOP_ONLY).unwrap(), Outcome::NothingToRemove);
        let empty_group = json!({ "hooks": { "Stop": [{ "hooks": [] }] } });
        assert_eq!(uninstall(empty_group, STOP_ONLY).unwrap(), Outcome::NothingToRemove);
    }

    #[test]
    fn cursor_lists_handlers_flat_with_a_version_and_a_loop_limit() {
        let cursor = HookFile::of(Host::Cursor);
        let command = hook_command(ME, Host::Cursor, None);
        let fresh = installed(json!({}), &command, cursor);
        assert_eq!(
            fresh,
            json!({ "hooks": { "stop": [{ "command": command, "timeout": 20, "loop_limit": 6 }] }, "version": 1 })
        );
        assert_eq!(install(fresh.clone(), stops(&command), cursor).unwrap(), Outcome::AlreadyInstalled);
        let theirs = json!({ "version": 1, "hooks": {
            "afterFileEdit": [{ "command": "./format.sh" }],
            "stop": [{ "command": "./audit.sh" }, { "command": "/old/gate-check hook stop", "loop_limit": 50 }],
        } });
        let Outcome::Installed { settings, replaced, .. } = install(theirs.clone(), stops(&command), cursor).unwrap()
        else {
            panic!()
        };
        assert_eq!(replaced, 1);
        assert_eq!(settings["hooks"]["afterFileEdit"], theirs["hooks"]["afterFileEdit"]);
        assert_eq!(settings["hooks"]["stop"], json!([{ "command": "./audit.sh" }, fresh["hooks"]["stop"][0]]));
        let Outcome::Removed { settings, removed } = uninstall(settings, cursor).unwrap() else { panic!() };
        assert_eq!(removed, vec![1, 0, 0]);
        assert_eq!(settings["hooks"]["stop"], json!([{ "command": "./audit.sh" }]));
        let Outcome::Removed { settings, .. } = uninstall(fresh, cursor).unwrap() else { panic!() };
        assert_eq!(settings, json!({ "version": 1 }));
        for (bad, error) in [
            (json!({ "version": 2 }), ShapeError::Version { found: "2".into(), wanted: 1 }),
            (json!({ "version": "1" }), ShapeError::Version { found: "\"1\"".into(), wanted: 1 }),
            (json!({ "hooks": { "stop": [{ "command": 1 }] } }), ShapeError::BadHandler("stop", 0)),
            (json!({ "hooks": { "stop": ["./x.sh"] } }), ShapeError::BadHandler("stop", 0)),
            (json!({ "hooks": { "stop": {} } }), ShapeError::EventNotAnArray("stop")),
        ] {
            assert_eq!(install(bad.clone(), stops(&command), cursor), Err(error.clone()));
            assert_eq!(uninstall(bad, cursor), Err(error));
        }
    }

    #[test]
    fn the_guard_is_installed_beside_the_stop_hook_and_left_out_on_request() {
        let (stop, guard) = (hook_command(ME, Host::Claude, None), guard_command(ME, Host::Claude));
        assert_eq!(guard, format!("{} hook pre-tool", me()));
        assert_eq!(
            guard_command("/a b/gate-check", Host::Cursor),
            format!("{} hook pre-tool --agent cursor", quote_program("/a b/gate-check"))
        );
        let both = Commands { stop: &stop, guard: Some(&guard) };
        let theirs = json!({ "hooks": { "PreToolUse": [{ "matcher": "Bash", "hooks": [{ "command": "audit" }] }] } });
        let Outcome::Installed { settings, replaced: 0, dropped: 0 } =
            install(theirs.clone(), both, HookFile::of(Host::Claude)).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            settings["hooks"]["PreToolUse"],
            json!([theirs["hooks"]["PreToolUse"][0], { "hooks": [{ "type": "command", "command": guard, "timeout": 10 }] }])
        );
        assert_eq!(install(settings.clone(), both, HookFile::of(Host::Claude)).unwrap(), Outcome::AlreadyInstalled);
        // The roles never take each other's entries.
        assert!(is_ours(&guard, Role::Guard) && !is_ours(&guard, Role::Stop));
        assert!(!is_ours(&stop, Role::Guard) && is_ours(&stop, Role::Stop));
        assert!(!is_ours("node /home/u/.claude/skills/unlazy/scripts/stop-hook.mjs", Role::Guard));
        // Left out: the guard installed before is removed, the rest kept.
        let Outcome::Installed { settings: without, replaced: 0, dropped: 1 } =
            install(settings.clone(), stops(&stop), HookFile::of(Host::Claude)).unwrap()
        else {
            panic!()
        };
        assert_eq!(without["hooks"]["PreToolUse"], theirs["hooks"]["PreToolUse"]);
        assert_eq!(install(without, stops(&stop), HookFile::of(Host::Claude)).unwrap(), Outcome::AlreadyInstalled);
        let Outcome::Removed { settings, removed } = uninstall(settings, HookFile::of(Host::Claude)).unwrap() else {
            panic!()
        };
        assert_eq!((settings, removed), (theirs, vec![1, 1, 1]));
    }

    #[test]
    fn cursor_guard_handlers_carry_no_loop_limit() {
        let (stop, guard) = (hook_command(ME, Host::Cursor, None), guard_command(ME, Host::Cursor));
        let both = Commands { stop: &stop, guard: Some(&guard) };
        let Outcome::Installed { settings, .. } = install(json!({}), both, HookFile::of(Host::Cursor)).unwrap() else {
            panic!()
        };
        let handler = json!([{ "command": guard, "timeout": 10 }]);
        assert_eq!(settings["hooks"]["preToolUse"], handler);
        assert_eq!(settings["hooks"]["beforeShellExecution"], handler);
        assert_eq!(settings["hooks"]["stop"][0]["loop_limit"], 6);
    }

    #[test]
    fn malformed_shapes_are_refused() {
        let command = hook_command(ME, Host::Claude, None);
        let cases = [
            (json!([]), ShapeError::NotAnObject),
            (json!({ "hooks": [] }), ShapeError::HooksNotAnObject),
            (json!({ "hooks": { "Stop": {} } }), ShapeError::EventNotAnArray("Stop")),
            (json!({ "hooks": { "Stop": ["x"] } }), ShapeError::BadGroup("Stop", 0)),
            (json!({ "hooks": { "Stop": [{ "matcher": "" }] } }), ShapeError::BadGroup("Stop", 0)),
            (json!({ "hooks": { "Stop": [{ "hooks": [{ "command": 1 }] }] } }), ShapeError::BadHook("Stop", 0, 0)),
            (json!({ "hooks": { "Stop": [{ "hooks": ["cmd"] }] } }), ShapeError::BadHook("Stop", 0, 0)),
            (json!({ "hooks": { "SubagentStop": {} } }), ShapeError::EventNotAnArray("SubagentStop")),
        ];
        for (settings, error) in cases {
            assert_eq!(install(settings.clone(), stops(&command), CLAUDE), Err(error.clone()));
            assert_eq!(uninstall(settings, CLAUDE), Err(error));
        }
        // Each host's own stop event is the one judged.
        let gemini = json!({ "hooks": { "Stop": {}, "AfterAgent": [{ "hooks": ["cmd"] }] } });
        let after_agent = HookFile::of(Host::Gemini);
        assert_eq!(install(gemini, stops(&command), after_agent), Err(ShapeError::BadHook("AfterAgent", 0, 0)));
    }
}
