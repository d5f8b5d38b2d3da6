//! The settings transform behind `install-hooks`: pure functions from one
//! hook settings document to the next (Claude Code's settings, Codex's
//! `hooks.json` and Gemini CLI's settings share the shape: an event's
//! array of groups, each with its `hooks` handlers). Only the stop event's
//! array (`hooks.Stop`, or Gemini's `hooks.AfterAgent`) is touched, and
//! inside it only hook entries this tool wrote (its own `gate-check
//! hook stop` command, from any install location, or a handler the Node
//! installer wrote, recognised by its own 2.1 rules). Every other key,
//! group and sibling hook is kept as is.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{json, Map, Value};
use thiserror::Error;

use crate::shell_words::{quote, tokenize, Token};

/// Where a host runs the stop hook, and the handler `timeout` it reads, in
/// the host's own unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopSlot {
    pub event: &'static str,
    pub timeout: u64,
}

/// Claude Code and Codex: `Stop`, the timeout in seconds (20 s).
pub const STOP: StopSlot = StopSlot { event: "Stop", timeout: 20 };

/// Gemini CLI: `AfterAgent`, the timeout in milliseconds (the same 20 s).
pub const AFTER_AGENT: StopSlot = StopSlot { event: "AfterAgent", timeout: 20_000 };

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
}

/// The hook command this binary installs: `<program> hook stop [--scope ID]`.
pub fn hook_command(program: &str, scope: Option<&str>) -> String {
    let mut command = format!("{} hook stop", quote(program));
    if let Some(scope) = scope {
        command.push_str(&format!(" --scope {}", quote(scope)));
    }
    command
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
/// wrote, `.../gate-check hook stop ...`, or one the Node installer wrote.
pub fn is_ours(command: &str) -> bool {
    let words = tokenize(command);
    let invokes_gate_check = matches!(words.as_slice(),
        [Token::Word(program), hook, stop, ..]
            if program.rsplit('/').next() == Some("gate-check") && hook.is_word("hook") && stop.is_word("stop"));
    invokes_gate_check || is_node_handler(command)
}

/// The whole handler this tool installs for `command`.
fn handler(command: &str, slot: StopSlot) -> Value {
    json!({ "type": "command", "command": command, "timeout": slot.timeout })
}

#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// The exact handler is already the only entry of ours.
    AlreadyInstalled,
    /// `replaced` older entries of ours were removed first.
    Installed {
        settings: Value,
        replaced: usize,
    },
    Removed {
        settings: Value,
        removed: usize,
    },
    NothingToRemove,
}

/// Checks the shape of everything the transform walks through.
fn validate(settings: &Value, event: &'static str) -> Result<(), ShapeError> {
    let root = settings.as_object().ok_or(ShapeError::NotAnObject)?;
    let Some(hooks) = root.get("hooks") else {
        return Ok(());
    };
    let hooks = hooks.as_object().ok_or(ShapeError::HooksNotAnObject)?;
    let Some(stop) = hooks.get(event) else {
        return Ok(());
    };
    let groups = stop.as_array().ok_or(ShapeError::EventNotAnArray(event))?;
    for (g, group) in groups.iter().enumerate() {
        let entries = group.get("hooks").and_then(Value::as_array).ok_or(ShapeError::BadGroup(event, g))?;
        for (h, entry) in entries.iter().enumerate() {
            let well_formed = entry.as_object().is_some_and(|e| e.get("command").is_none_or(Value::is_string));
            if !well_formed {
                return Err(ShapeError::BadHook(event, g, h));
            }
        }
    }
    Ok(())
}

fn command_of(entry: &Value) -> Option<&str> {
    entry.get("command").and_then(Value::as_str)
}

/// Removes every hook entry of ours from the Stop groups, dropping a group
/// only when our removal emptied it. Returns the number removed.
fn remove_ours(groups: &mut Vec<Value>) -> usize {
    let mut removed = 0;
    groups.retain_mut(|group| {
        let Some(entries) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
            return true;
        };
        let before = entries.len();
        entries.retain(|entry| !command_of(entry).is_some_and(is_ours));
        removed += before - entries.len();
        !(entries.is_empty() && before > 0)
    });
    removed
}

fn stop_groups<'a>(settings: &'a mut Value, event: &str) -> &'a mut Vec<Value> {
    let root = settings.as_object_mut().expect("validated object");
    let hooks = root.entry("hooks").or_insert_with(|| Value::Object(Map::new()));
    let stop = hooks.as_object_mut().expect("validated object").entry(event).or_insert_with(|| json!([]));
    stop.as_array_mut().expect("validated array")
}

/// Adds the stop hook running `command` at `slot`, replacing older entries
/// of ours.
pub fn install(mut settings: Value, command: &str, slot: StopSlot) -> Result<Outcome, ShapeError> {
    validate(&settings, slot.event)?;
    let wanted = handler(command, slot);
    // The whole handler, not just its command: an entry edited to another
    // type or timeout is damaged and is replaced.
    let ours: Vec<&Value> = settings
        .get("hooks")
        .and_then(|hooks| hooks.get(slot.event))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|group| group.get("hooks").and_then(Value::as_array))
        .flatten()
        .filter(|entry| command_of(entry).is_some_and(is_ours))
        .collect();
    if ours == [&wanted] {
        return Ok(Outcome::AlreadyInstalled);
    }
    let groups = stop_groups(&mut settings, slot.event);
    let replaced = remove_ours(groups);
    groups.push(json!({ "hooks": [wanted] }));
    Ok(Outcome::Installed { settings, replaced })
}

/// Removes every entry of ours at `slot`; an empty event array and `hooks`
/// object left by that removal are dropped too.
pub fn uninstall(mut settings: Value, slot: StopSlot) -> Result<Outcome, ShapeError> {
    validate(&settings, slot.event)?;
    let Some(groups) =
        settings.get_mut("hooks").and_then(|hooks| hooks.get_mut(slot.event)).and_then(Value::as_array_mut)
    else {
        return Ok(Outcome::NothingToRemove);
    };
    let removed = remove_ours(groups);
    if removed == 0 {
        return Ok(Outcome::NothingToRemove);
    }
    let stop_empty = groups.is_empty();
    let root = settings.as_object_mut().expect("validated object");
    if stop_empty {
        let hooks = root.get_mut("hooks").and_then(Value::as_object_mut).expect("validated object");
        hooks.remove(slot.event);
        if hooks.is_empty() {
            root.remove("hooks");
        }
    }
    Ok(Outcome::Removed { settings, removed })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: &str = "/opt/tools/gate-check";

    fn installed(settings: Value, command: &str) -> Value {
        match install(settings, command, STOP).unwrap() {
            Outcome::Installed { settings, .. } => settings,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn commands_and_ownership() {
        assert_eq!(hook_command(ME, None), "/opt/tools/gate-check hook stop");
        assert_eq!(hook_command("/a b/gate-check", Some("api")), "'/a b/gate-check' hook stop --scope api");
        assert!(is_ours("'/a b/gate-check' hook stop --scope api"));
        assert!(is_ours("gate-check hook stop"));
        assert!(is_ours("node \"/home/u/skills/unlazy/scripts/stop-hook.mjs\" --unlazy"));
        assert!(!is_ours("gate-check --status"));
        assert!(!is_ours("/x/not-gate-check hook stop"));
        assert!(!is_ours("node other/stop-hook.mjs"));
        assert!(!is_ours("echo gate-check hook stop"));
        // The Node installer's entries, by its own 2.1 rules.
        assert!(is_ours("'/usr/bin/node' '/opt/x/scripts/stop-hook.mjs' --unlazy-hook-v2 --scope api"));
        assert!(is_ours("node /home/u/.claude/skills/unlazy/scripts/stop-hook.mjs"));
        assert!(is_ours("node /opt/tools/scripts/stop-hook.mjs --unlazy"));
        assert!(!is_ours("node /opt/other/stop-hook.mjs --unlazy-helper"));
        assert!(!is_ours("node /opt/unlazy/scripts/stop-hook.mjs --unlazy '--unlazy-helper'"));
        assert!(!is_ours("node /opt/unlazy/scripts/stop-hook.mjs"));
        assert!(!is_ours("node /opt/unlazy/tools/stop-hook.mjs --unlazy"));
        assert!(!is_ours("node /opt/scripts/my-stop-hook.mjs --unlazy"));
    }

    #[test]
    fn install_keeps_siblings_and_repairs_moved_entries() {
        let command = hook_command(ME, None);
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
        let Outcome::Installed { settings: out, replaced } = install(settings.clone(), &command, STOP).unwrap() else {
            panic!()
        };
        assert_eq!(replaced, 2);
        assert_eq!(out["model"], "x");
        assert_eq!(out["hooks"]["PreToolUse"], settings["hooks"]["PreToolUse"]);
        let stop = out["hooks"]["Stop"].as_array().unwrap();
        assert_eq!(stop.len(), 2, "{stop:?}");
        assert_eq!(stop[0]["hooks"], json!([{ "type": "command", "command": "notify-done" }]));
        assert_eq!(stop[1]["hooks"][0]["command"], command);
        assert_eq!(install(out.clone(), &command, STOP).unwrap(), Outcome::AlreadyInstalled);
        let mut damaged = out.clone();
        damaged["hooks"]["Stop"][1]["hooks"][0] = json!({ "type": "prompt", "command": command, "timeout": 1 });
        let Outcome::Installed { settings: repaired, replaced } = install(damaged, &command, STOP).unwrap() else {
            panic!()
        };
        assert_eq!((repaired, replaced), (out.clone(), 1));
        let rescoped = installed(out, &hook_command(ME, Some("api")));
        assert_eq!(rescoped["hooks"]["Stop"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn uninstall_removes_only_ours() {
        let command = hook_command(ME, None);
        let fresh = installed(json!({}), &command);
        assert_eq!(
            fresh,
            json!({ "hooks": { "Stop": [{ "hooks": [{ "type": "command", "command": command, "timeout": 20 }] }] } })
        );
        let Outcome::Removed { settings, removed } = uninstall(fresh, STOP).unwrap() else { panic!() };
        assert_eq!((settings, removed), (json!({}), 1));
        let mixed =
            json!({ "hooks": { "Stop": [{ "hooks": [{ "command": "notify-done" }, { "command": command }] }] } });
        let Outcome::Removed { settings, .. } = uninstall(mixed, STOP).unwrap() else { panic!() };
        assert_eq!(settings, json!({ "hooks": { "Stop": [{ "hooks": [{ "command": "notify-done" }] }] } }));
        assert_eq!(uninstall(json!({ "hooks": {} }), STOP).unwrap(), Outcome::NothingToRemove);
        let empty_group = json!({ "hooks": { "Stop": [{ "hooks": [] }] } });
        assert_eq!(uninstall(empty_group, STOP).unwrap(), Outcome::NothingToRemove);
    }

    #[test]
    fn malformed_shapes_are_refused() {
        let command = hook_command(ME, None);
        let cases = [
            (json!([]), ShapeError::NotAnObject),
            (json!({ "hooks": [] }), ShapeError::HooksNotAnObject),
            (json!({ "hooks": { "Stop": {} } }), ShapeError::EventNotAnArray("Stop")),
            (json!({ "hooks": { "Stop": ["x"] } }), ShapeError::BadGroup("Stop", 0)),
            (json!({ "hooks": { "Stop": [{ "matcher": "" }] } }), ShapeError::BadGroup("Stop", 0)),
            (json!({ "hooks": { "Stop": [{ "hooks": [{ "command": 1 }] }] } }), ShapeError::BadHook("Stop", 0, 0)),
            (json!({ "hooks": { "Stop": [{ "hooks": ["cmd"] }] } }), ShapeError::BadHook("Stop", 0, 0)),
        ];
        for (settings, error) in cases {
            assert_eq!(install(settings.clone(), &command, STOP), Err(error.clone()));
            assert_eq!(uninstall(settings, STOP), Err(error));
        }
        // Each host's own stop event is the one judged.
        let gemini = json!({ "hooks": { "Stop": {}, "AfterAgent": [{ "hooks": ["cmd"] }] } });
        assert_eq!(install(gemini, &command, AFTER_AGENT), Err(ShapeError::BadHook("AfterAgent", 0, 0)));
    }
}
