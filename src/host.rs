//! The agent hosts the skill runs in, and what differs between them: where
//! each keeps its hook file and how each wants a stop hook's and a pre-tool
//! guard's reply. Pure: the installer (`install`) and the hooks (`hook`)
//! both ask this module about a host, so the two can never disagree on one.

use serde_json::{json, Value};

/// An agent host: the program that runs the agent and calls its hooks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Host {
    /// Claude Code: `.claude/settings.local.json`, `.claude/settings.json` or `~/.claude/settings.json`
    #[default]
    Claude,
    /// Codex CLI: `.codex/hooks.json` or `~/.codex/hooks.json`
    Codex,
    /// Gemini CLI: `.gemini/settings.json` or `~/.gemini/settings.json` (an `AfterAgent` hook)
    Gemini,
    /// Cursor: `.cursor/hooks.json` or `~/.cursor/hooks.json` (a `stop` hook)
    Cursor,
}

impl Host {
    /// The value `--agent` takes for this host.
    pub fn name(self) -> &'static str {
        match self {
            Host::Claude => "claude",
            Host::Codex => "codex",
            Host::Gemini => "gemini",
            Host::Cursor => "cursor",
        }
    }

    /// The reply that keeps the agent working, with `reason` as what it
    /// is told to do next, in this host's own output schema and nothing
    /// else: Claude Code and Codex take `decision: "block"`, Gemini CLI
    /// `decision: "deny"` (its word for rejecting the turn), and Cursor a
    /// `followup_message` it sends as the next user message.
    pub fn block(self, reason: &str) -> Value {
        match self {
            Host::Claude | Host::Codex => json!({ "decision": "block", "reason": reason }),
            Host::Gemini => json!({ "decision": "deny", "reason": reason }),
            Host::Cursor => json!({ "followup_message": reason }),
        }
    }

    /// A note for the person that lets the stop through, where the host
    /// shows one (`systemMessage`); `None` for Cursor, whose stop output
    /// has no such field: the note goes to stderr only there.
    pub fn note(self, message: &str) -> Option<Value> {
        match self {
            Host::Claude | Host::Codex | Host::Gemini => Some(json!({ "systemMessage": message })),
            Host::Cursor => None,
        }
    }

    /// The reply that refuses a tool call before it runs, with `reason`
    /// as what the agent (and, where the host shows it, the person) is
    /// told: Claude Code's and Codex's `PreToolUse` decision, Gemini CLI's
    /// `BeforeTool` `decision: "deny"`, and Cursor's `permission: "deny"`.
    pub fn deny_tool(self, reason: &str) -> Value {
        match self {
            Host::Claude | Host::Codex => json!({ "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            } }),
            Host::Gemini => json!({ "decision": "deny", "reason": reason }),
            Host::Cursor => json!({ "permission": "deny", "user_message": reason, "agent_message": reason }),
        }
    }

    /// The reply that lets a tool call run, where the host needs one:
    /// Cursor blocks a call whose pre-tool hook prints no `permission`,
    /// while the other hosts read no output as "no objection" (and an
    /// explicit allow would skip their own permission prompts).
    pub fn allow_tool(self) -> Option<Value> {
        match self {
            Host::Cursor => Some(json!({ "permission": "allow" })),
            Host::Claude | Host::Codex | Host::Gemini => None,
        }
    }

    /// The host a hook payload comes from, when its shape says so: Cursor
    /// names the conversation and the workspace roots instead of a session
    /// and a working directory, and only Gemini CLI stops with
    /// `AfterAgent` and guards a tool with `BeforeTool`. Claude Code and
    /// Codex send the same shape (and take the same reply), so they are
    /// told apart by nothing here.
    pub fn from_payload(payload: &serde_json::Map<String, Value>) -> Option<Host> {
        let names = |key: &str| payload.get(key).is_some_and(|value| !value.is_null());
        if matches!(payload.get("hook_event_name").and_then(Value::as_str), Some("AfterAgent" | "BeforeTool")) {
            return Some(Host::Gemini);
        }
        let cursor_shape = (names("conversation_id") || names("workspace_roots") || names("cursor_version"))
            && !names("session_id")
            && !names("sessionId");
        cursor_shape.then_some(Host::Cursor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> serde_json::Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn payload_shapes_name_their_host() {
        let cursor = object(json!({ "conversation_id": "c", "workspace_roots": ["/r"], "hook_event_name": "stop" }));
        assert_eq!(Host::from_payload(&cursor), Some(Host::Cursor));
        let gemini = object(json!({ "session_id": "s", "cwd": "/r", "hook_event_name": "AfterAgent" }));
        assert_eq!(Host::from_payload(&gemini), Some(Host::Gemini));
        let guard = object(json!({ "session_id": "s", "cwd": "/r", "hook_event_name": "BeforeTool" }));
        assert_eq!(Host::from_payload(&guard), Some(Host::Gemini));
        let claude = object(json!({ "session_id": "s", "cwd": "/r", "hook_event_name": "Stop" }));
        assert_eq!(Host::from_payload(&claude), None);
        // A session id means a Claude Code shaped payload, whatever else it carries.
        let mixed = object(json!({ "session_id": "s", "conversation_id": "c" }));
        assert_eq!(Host::from_payload(&mixed), None);
        assert_eq!(Host::from_payload(&object(json!({ "workspace_roots": null }))), None);
    }

    #[test]
    fn each_host_gets_its_own_reply() {
        assert_eq!(Host::Claude.block("r"), json!({ "decision": "block", "reason": "r" }));
        assert_eq!(Host::Codex.block("r"), Host::Claude.block("r"));
        assert_eq!(Host::Gemini.block("r"), json!({ "decision": "deny", "reason": "r" }));
        assert_eq!(Host::Cursor.block("r"), json!({ "followup_message": "r" }));
        assert_eq!(Host::Gemini.note("n"), Some(json!({ "systemMessage": "n" })));
        assert_eq!(Host::Cursor.note("n"), None);
    }

    #[test]
    fn each_host_gets_its_own_tool_refusal() {
        let claude = Host::Claude.deny_tool("r");
        assert_eq!(claude["hookSpecificOutput"]["permissionDecision"], "deny");
        assert_eq!(claude["hookSpecificOutput"]["hookEventName"], "PreToolUse");
        assert_eq!(claude["hookSpecificOutput"]["permissionDecisionReason"], "r");
        assert_eq!(Host::Codex.deny_tool("r"), claude);
        assert_eq!(Host::Gemini.deny_tool("r"), json!({ "decision": "deny", "reason": "r" }));
        assert_eq!(
            Host::Cursor.deny_tool("r"),
            json!({ "permission": "deny", "user_message": "r", "agent_message": "r" })
        );
        assert_eq!(Host::Cursor.allow_tool(), Some(json!({ "permission": "allow" })));
        assert_eq!(Host::Claude.allow_tool(), None);
    }
}
