//! The stop hook in every host's dialect, through the real binary: payload
//! fixtures shaped as each host documents its stop input, each reply held
//! to that host's documented output schema, and subagents held to the leaf
//! their dispatch handle names.

use crate::common::{Run, Sandbox};
use serde_json::{json, Value};

const UNMET: &str = "- [ ] G1: the report renders\n  CHECK: make report\n  EXPECT: REPORT-OK\n  EVIDENCE: pending\n";
const MET: &str = "- [x] G1: a person read it\n  EVIDENCE: read on Monday\n";

fn hook(sandbox: &Sandbox, input: &Value, args: &[&str]) -> Run {
    sandbox.run_with(sandbox.cmd().args(["hook", "stop"]).args(args).write_stdin(input.to_string()))
}

/// Cursor's stop input: its common fields (no `cwd`, no `session_id`) and
/// the stop event's `status` and `loop_count`.
fn cursor_stop(roots: &[&std::path::Path], loop_count: u64, status: &str) -> Value {
    json!({
        "conversation_id": "c0ffee-1",
        "generation_id": "gen-7",
        "model": "claude-sonnet",
        "hook_event_name": "stop",
        "cursor_version": "2.1.0",
        "workspace_roots": roots,
        "user_email": null,
        "transcript_path": null,
        "status": status,
        "loop_count": loop_count,
    })
}

/// Cursor's stop output: an object whose only field is an optional string
/// `followup_message`, sent as the next user message.
fn assert_valid_cursor_stop_reply(reply: &Value) {
    let fields = reply.as_object().unwrap_or_else(|| panic!("not an object: {reply}"));
    for (key, value) in fields {
        assert_eq!(key, "followup_message", "Cursor's stop output has no field {key:?}: {reply}");
        assert!(value.is_string(), "{reply}");
    }
}

/// Gemini CLI's hook output: the common fields of its hooks reference, a
/// `decision` of `allow`, `deny` or `block`, and text fields as strings.
fn assert_valid_gemini_reply(reply: &Value) {
    let fields = reply.as_object().unwrap_or_else(|| panic!("not an object: {reply}"));
    for (key, value) in fields {
        match key.as_str() {
            "decision" => assert!(matches!(value.as_str(), Some("allow" | "deny" | "block")), "{reply}"),
            "reason" | "systemMessage" | "stopReason" => assert!(value.is_string(), "{reply}"),
            "continue" | "suppressOutput" => assert!(value.is_boolean(), "{reply}"),
            other => panic!("Gemini CLI's output has no field {other:?}: {reply}"),
        }
    }
}

/// A directory outside the repository: the hook runs there, as Cursor
/// starts hooks wherever it likes, and finds the repository from the payload.
fn elsewhere(sandbox: &Sandbox) -> std::path::PathBuf {
    let outside = sandbox.root.parent().unwrap().join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    outside
}

#[test]
fn cursor_is_answered_with_a_followup_message_found_from_its_workspace_roots() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", UNMET);
    let empty_root = elsewhere(&sandbox);
    let input = cursor_stop(&[&empty_root, &sandbox.root], 0, "completed");
    for args in [&["--agent", "cursor"][..], &[][..]] {
        // From a directory that is not the repository, with and without the
        // installed `--agent cursor`: the payload's shape says Cursor too
        // (Cursor runs Claude Code's hooks as well).
        let run = sandbox.run_with(
            sandbox.cmd().current_dir(&empty_root).args(["hook", "stop"]).args(args).write_stdin(input.to_string()),
        );
        let reply = run.code(0).stderr_is("").stdout_json();
        assert_valid_cursor_stop_reply(&reply);
        let message = reply["followup_message"].as_str().unwrap();
        assert!(message.starts_with("unlazy: 1 gate/ledger item(s) need work: GATES:G1 (unchecked)."), "{message}");
    }
    // The conversation is the session the loop guard counts.
    assert!(sandbox.read(".unlazy-hook-state.json").contains("\"blocks\": 2"));

    sandbox.write("GATES.md", MET);
    hook(&sandbox, &input, &["--agent", "cursor"]).code(0).stdout_is("").stderr_is("");
}

#[test]
fn cursors_loop_is_released_by_the_progress_guard_with_a_note_on_stderr() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", UNMET);
    // Cursor counts its own follow-ups in loop_count; the guard holds anyway.
    for loop_count in 0..6 {
        let reply = hook(&sandbox, &cursor_stop(&[&sandbox.root], loop_count, "completed"), &["--agent", "cursor"])
            .code(0)
            .stderr_is("")
            .stdout_json();
        assert!(reply["followup_message"].as_str().unwrap().contains(&format!("Block {} of 6", loop_count + 1)));
    }
    let release = hook(&sandbox, &cursor_stop(&[&sandbox.root], 6, "completed"), &["--agent", "cursor"])
        .code(0)
        .stdout_is("")
        .into_stderr();
    assert!(release.starts_with("unlazy: releasing after 6 blocks without gate progress"), "{release}");
}

#[test]
fn an_aborted_or_failed_cursor_turn_is_not_sent_back_to_work() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", UNMET);
    assert_valid_cursor_stop_reply(
        &hook(&sandbox, &cursor_stop(&[&sandbox.root], 0, "completed"), &["--agent", "cursor"]).code(0).stdout_json(),
    );
    for status in ["aborted", "error"] {
        hook(&sandbox, &cursor_stop(&[&sandbox.root], 0, status), &["--agent", "cursor"])
            .code(0)
            .stdout_is("")
            .stderr_is("");
    }
}

#[test]
fn cursor_notes_and_broken_command_lines_go_to_stderr_only() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", UNMET);
    let input = cursor_stop(&[&sandbox.root], 0, "completed");
    // Positive first: Claude Code's note is a systemMessage.
    let claude = hook(&sandbox, &json!({ "session_id": "s", "cwd": sandbox.root }), &["--scope", "../x"]);
    assert!(claude.code(0).stdout_json()["systemMessage"].as_str().unwrap().contains("invalid --scope"));
    hook(&sandbox, &input, &["--agent", "cursor", "--scope", "../x"])
        .code(0)
        .stdout_is("")
        .stderr_is("unlazy: installed hook has an invalid --scope value; not blocking.\n");
    hook(&sandbox, &input, &["--agent", "cursor", "--bogus"]).code(0).stdout_is("").stderr_is(
        "unlazy: the installed hook command is broken (reinstall it with gate-check install-hooks): gate-check hook: \
         unexpected argument '--bogus' found; not blocking.\n",
    );
    let unusable = sandbox.run_with(sandbox.cmd().args(["hook", "stop", "--agent", "cursor"]).write_stdin("{"));
    unusable.code(0).stdout_is("").stderr_contains("unlazy: the hook input is unusable: ");
    let not_roots = json!({ "conversation_id": "c", "workspace_roots": "/repo", "hook_event_name": "stop" });
    hook(&sandbox, &not_roots, &["--agent", "cursor"])
        .code(0)
        .stdout_is("")
        .stderr_contains("hook input field workspace_roots is not a list of strings; not blocking.");
}

#[test]
fn gemini_is_answered_with_deny_and_its_notes_as_system_messages() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", UNMET);
    let input = json!({
        "session_id": "g1",
        "transcript_path": "/tmp/t.json",
        "cwd": sandbox.root,
        "hook_event_name": "AfterAgent",
        "timestamp": "2026-12-04T05:00:00Z",
        "prompt": "finish the report",
        "prompt_response": "done",
        "stop_hook_active": false
    });
    for args in [&["--agent", "gemini"][..], &[][..]] {
        let reply = hook(&sandbox, &input, args).code(0).stderr_is("").stdout_json();
        assert_valid_gemini_reply(&reply);
        assert_eq!(reply["decision"], "deny", "{reply}");
        assert!(reply["reason"].as_str().unwrap().contains("GATES:G1"), "{reply}");
    }
    let note = hook(&sandbox, &input, &["--agent", "gemini", "--scope", "../x"]).code(0).stdout_json();
    assert_valid_gemini_reply(&note);
    assert!(note["systemMessage"].as_str().unwrap().contains("invalid --scope"), "{note}");
    let broken = hook(&sandbox, &input, &["--agent", "gemini", "--bogus"])
        .code(0)
        .stderr_is("gate-check hook: unexpected argument '--bogus' found; not blocking\n")
        .stdout_json();
    assert_valid_gemini_reply(&broken);
}

/// A scope with two leaves launched in one wave, each under its own handle.
fn two_leaf_scope(sandbox: &Sandbox) {
    sandbox.write(".unlazy/api/GATES.md", MET);
    sandbox.write(".unlazy/api/gates/leaf-a.md", &format!("OWNS: src/a/**\n\n{UNMET}"));
    sandbox.write(".unlazy/api/gates/leaf-b.md", &format!("OWNS: src/b/**\n\n{MET}"));
    let dispatch = |args: &[&str], said: &str| {
        let mut command = sandbox.cmd();
        command.args(["dispatch"]).args(args).args(["--scope", "api", "--wave", "w1"]);
        sandbox.run_with(&mut command).code(0).stdout_starts_with(said);
    };
    dispatch(&["open", "--leaf", "leaf-a", "--leaf", "leaf-b"], "OPEN w1");
    dispatch(&["start", "--leaf", "leaf-a", "--handle", "agent-a1"], "STARTED w1 leaf-a");
    dispatch(&["start", "--leaf", "leaf-b", "--handle", "agent-b2"], "STARTED w1 leaf-b");
    dispatch(&["seal"], "SEALED w1");
}

/// Claude Code's SubagentStop input (Codex sends the same fields).
fn subagent_stop(sandbox: &Sandbox, agent_id: &str) -> Value {
    json!({
        "session_id": "driver-1",
        "transcript_path": "/tmp/driver.jsonl",
        "cwd": sandbox.root,
        "permission_mode": "default",
        "hook_event_name": "SubagentStop",
        "stop_hook_active": false,
        "agent_id": agent_id,
        "agent_type": "general-purpose",
        "agent_transcript_path": "/tmp/agent.jsonl",
        "last_assistant_message": "done"
    })
}

#[test]
fn a_subagent_is_held_to_its_own_leaf_and_nothing_else() {
    let sandbox = Sandbox::new();
    two_leaf_scope(&sandbox);
    // The subagent of the unmet leaf is blocked, with that leaf's ids only.
    let reply = hook(&sandbox, &subagent_stop(&sandbox, "agent-a1"), &[]).code(0).stderr_is("").stdout_json();
    assert_eq!(reply.as_object().unwrap().len(), 2, "{reply}");
    assert_eq!(reply["decision"], "block");
    let reason = reply["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(
            "unlazy [scope api, leaf leaf-a]: 1 gate/ledger item(s) need work: leaf-a:G1 (unchecked). \
             Run gate-check --scope api --gate 'leaf-a:*' to run the approved checks \
             (gate-check --status --scope api --gate 'leaf-a:*' shows them without running anything)."
        ),
        "{reason}"
    );
    assert!(!reason.contains("dispatch:"), "the wave the subagent is part of does not hold it: {reason}");
    // The met leaf's subagent, an unknown agent and a payload without an id may stop.
    for agent in ["agent-b2", "agent-zz"] {
        hook(&sandbox, &subagent_stop(&sandbox, agent), &[]).code(0).stdout_is("").stderr_is("");
    }
    let mut anonymous = subagent_stop(&sandbox, "x");
    anonymous.as_object_mut().unwrap().remove("agent_id");
    hook(&sandbox, &anonymous, &[]).code(0).stdout_is("").stderr_is("");
    // The driver's own Stop is unchanged: the whole scope, the open wave included.
    let mut driver = subagent_stop(&sandbox, "x");
    driver["hook_event_name"] = json!("Stop");
    let reason = hook(&sandbox, &driver, &[]).code(0).stdout_json()["reason"].as_str().unwrap().to_string();
    assert!(
        reason.starts_with("unlazy [scope api]: 2 gate/ledger item(s) need work: leaf-a:G1 (unchecked), dispatch:w1"),
        "{reason}"
    );

    // Once the leaf is met, its subagent may stop too.
    sandbox.write(".unlazy/api/gates/leaf-a.md", &format!("OWNS: src/a/**\n\n{MET}"));
    hook(&sandbox, &subagent_stop(&sandbox, "agent-a1"), &[]).code(0).stdout_is("").stderr_is("");
}

#[test]
fn a_subagent_has_its_own_progress_guard_and_a_missing_ledger_holds_it() {
    let sandbox = Sandbox::new();
    two_leaf_scope(&sandbox);
    for block in 1..=6 {
        let reply = hook(&sandbox, &subagent_stop(&sandbox, "agent-a1"), &["--agent", "codex"]).code(0).stdout_json();
        assert!(reply["reason"].as_str().unwrap().contains(&format!("(Block {block} of 6")), "{reply}");
    }
    let release = hook(&sandbox, &subagent_stop(&sandbox, "agent-a1"), &[]).code(0).stdout_json();
    let note = release["systemMessage"].as_str().unwrap();
    assert!(note.starts_with("unlazy: releasing after 6 blocks without gate progress [scope api, leaf leaf-a]"));
    // The driver's count is its own: its first block is still its first.
    let mut driver = subagent_stop(&sandbox, "x");
    driver["hook_event_name"] = json!("Stop");
    assert!(hook(&sandbox, &driver, &[]).code(0).stdout_json()["reason"].as_str().unwrap().contains("(Block 1 of 6"));

    // A recorded leaf whose ledger is gone cannot prove its work.
    std::fs::remove_file(sandbox.path(".unlazy/api/gates/leaf-b.md")).unwrap();
    let reply = hook(&sandbox, &subagent_stop(&sandbox, "agent-b2"), &[]).code(0).stdout_json();
    assert!(reply["reason"].as_str().unwrap().contains("need work: leaf-b:PARSE (no ledger)"), "{reply}");
}

#[test]
fn an_abandoned_wave_holds_no_subagent() {
    let sandbox = Sandbox::new();
    two_leaf_scope(&sandbox);
    assert_eq!(hook(&sandbox, &subagent_stop(&sandbox, "agent-a1"), &[]).code(0).stdout_json()["decision"], "block");
    sandbox
        .run_with(sandbox.cmd().args([
            "dispatch",
            "abandon",
            "--scope",
            "api",
            "--wave",
            "w1",
            "--reason",
            "host quit",
        ]))
        .code(0)
        .stdout_starts_with("ABANDONED w1");
    hook(&sandbox, &subagent_stop(&sandbox, "agent-a1"), &[]).code(0).stdout_is("").stderr_is("");
}

#[test]
fn a_subagent_with_a_session_of_its_own_is_still_held_by_its_handle() {
    let sandbox = two_leaf_scope_bound_to("driver-1");
    // A host that gives the subagent its own session: no pipeline is bound
    // to it, yet its handle names its leaf.
    let mut own_session = subagent_stop(&sandbox, "agent-a1");
    own_session["session_id"] = json!("child-thread-9");
    let reply = hook(&sandbox, &own_session, &["--agent", "codex"]).code(0).stderr_is("").stdout_json();
    assert!(
        reply["reason"].as_str().unwrap().starts_with("unlazy [scope api, leaf leaf-a]: 1 gate/ledger item(s)"),
        "{reply}"
    );
    // The driver's own stop under that other session is not this pipeline's.
    own_session["hook_event_name"] = json!("Stop");
    hook(&sandbox, &own_session, &[]).code(0).stdout_is("").stderr_is("");
}

fn two_leaf_scope_bound_to(session: &str) -> Sandbox {
    let sandbox = Sandbox::new();
    two_leaf_scope(&sandbox);
    sandbox.write(".unlazy/api/session", &format!("{session}\n"));
    sandbox
}
