//! `gate-check hook pre-tool` through the real binary, fed each host's
//! documented pre-tool payload and held to that host's documented reply:
//! ledger edits that decide a runnable gate, writes into protected state,
//! self-approval and plain shell rewrites of a ledger are refused; the
//! agent's own edits and every other call pass with no output (Cursor's
//! `{"permission":"allow"}`); unusable input fails open.
//!
//! Payload and reply shapes, by source:
//! - Claude Code `PreToolUse`: https://code.claude.com/docs/en/hooks#pretooluse
//!   (input `session_id`, `transcript_path`, `cwd`, `permission_mode`,
//!   `hook_event_name`, `tool_name`, `tool_input`, `tool_use_id`; reply
//!   `hookSpecificOutput` with `hookEventName`, `permissionDecision`,
//!   `permissionDecisionReason`).
//! - Codex CLI `PreToolUse`: https://developers.openai.com/codex/hooks and
//!   its generated schemas, https://github.com/openai/codex/blob/main/codex-rs/hooks/schema/generated/pre-tool-use.command.input.schema.json
//!   and `pre-tool-use.command.output.schema.json` (Bash and `apply_patch`
//!   carry their text in `tool_input.command`; the output allows no other
//!   fields).
//! - Gemini CLI `BeforeTool`: https://geminicli.com/docs/hooks/reference
//!   (base input `session_id`, `transcript_path`, `cwd`, `hook_event_name`,
//!   `timestamp`; `tool_name`, `tool_input`; reply `decision: "deny"` and
//!   `reason`) and https://geminicli.com/docs/tools/file-system
//!   (`write_file`, `replace`).
//! - Cursor `preToolUse` and `beforeShellExecution`:
//!   https://cursor.com/docs/agent/hooks (common input `conversation_id`,
//!   `generation_id`, `model`, `hook_event_name`, `cursor_version`,
//!   `workspace_roots`, `user_email`, `transcript_path`; `command` and
//!   `cwd` before a shell command; reply `permission` with `user_message`
//!   and `agent_message`, and a `permission` on every call).

use std::path::Path;

use crate::common::{Run, Sandbox};
use serde_json::{json, Value};

const LEDGER: &str = "# Gates\n\n- [ ] G1: the report renders\n  CHECK: make report\n  EXPECT: REPORT-OK\n  \
                      EVIDENCE: pending\n- [ ] M1: a person read it\n";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Host {
    Claude,
    Codex,
    Gemini,
    Cursor,
}

const HOSTS: [Host; 4] = [Host::Claude, Host::Codex, Host::Gemini, Host::Cursor];

impl Host {
    fn agent(self) -> &'static str {
        match self {
            Host::Claude => "claude",
            Host::Codex => "codex",
            Host::Gemini => "gemini",
            Host::Cursor => "cursor",
        }
    }

    /// The host's pre-tool payload for `tool_name` with `tool_input`.
    fn payload(self, sandbox: &Sandbox, tool_name: &str, tool_input: Value) -> Value {
        match self {
            Host::Claude => json!({
                "session_id": "abc123",
                "transcript_path": "/home/me/.claude/projects/repo/abc123.jsonl",
                "cwd": sandbox.root,
                "permission_mode": "default",
                "hook_event_name": "PreToolUse",
                "tool_name": tool_name,
                "tool_input": tool_input,
                "tool_use_id": "toolu_01ABC123",
            }),
            Host::Codex => json!({
                "session_id": "019a-thread",
                "transcript_path": null,
                "cwd": sandbox.root,
                "hook_event_name": "PreToolUse",
                "model": "gpt-5-codex",
                "permission_mode": "default",
                "tool_name": tool_name,
                "tool_input": tool_input,
                "tool_use_id": "call_7",
                "turn_id": "turn-3",
            }),
            Host::Gemini => json!({
                "session_id": "g1",
                "transcript_path": "/home/me/.gemini/tmp/chats/session.json",
                "cwd": sandbox.root,
                "hook_event_name": "BeforeTool",
                "timestamp": "2026-12-04T05:00:00Z",
                "tool_name": tool_name,
                "tool_input": tool_input,
            }),
            Host::Cursor => json!({
                "conversation_id": "c0ffee-1",
                "generation_id": "gen-7",
                "model": "claude-sonnet",
                "hook_event_name": "preToolUse",
                "cursor_version": "2.1.0",
                "workspace_roots": [sandbox.root],
                "user_email": null,
                "transcript_path": null,
                "tool_name": tool_name,
                "tool_input": tool_input,
                "tool_use_id": "tool-9",
                "cwd": sandbox.root,
            }),
        }
    }

    /// The host's call that replaces `old` with `new` in the ledger.
    fn replace(self, sandbox: &Sandbox, file: &str, old: &str, new: &str) -> Value {
        let path = sandbox.path(file);
        match self {
            Host::Claude => self.payload(
                sandbox,
                "Edit",
                json!({ "file_path": path, "old_string": old, "new_string": new, "replace_all": false }),
            ),
            Host::Gemini => self.payload(
                sandbox,
                "replace",
                json!({ "file_path": path, "old_string": old, "new_string": new, "expected_replacements": 1 }),
            ),
            // A patch replaces whole lines: the line that holds `old`.
            Host::Codex => {
                let text = sandbox.read(file);
                let line = text.lines().find(|line| line.contains(old)).expect("the line to change");
                let mut patch = format!("*** Begin Patch\n*** Update File: {file}\n@@\n-{line}\n");
                line.replacen(old, new, 1).lines().for_each(|line| patch.push_str(&format!("+{line}\n")));
                patch.push_str("*** End Patch\n");
                self.payload(sandbox, "apply_patch", json!({ "command": patch }))
            }
            Host::Cursor => {
                self.payload(sandbox, "StrReplace", json!({ "path": path, "old_string": old, "new_string": new }))
            }
        }
    }

    /// The host's call that writes `content` as the whole of `file`.
    fn write(self, sandbox: &Sandbox, file: &str, content: &str) -> Value {
        let path = if Path::new(file).is_absolute() { file.into() } else { sandbox.path(file) };
        match self {
            Host::Claude => self.payload(sandbox, "Write", json!({ "file_path": path, "content": content })),
            Host::Gemini => self.payload(sandbox, "write_file", json!({ "file_path": path, "content": content })),
            Host::Codex => {
                let mut patch = format!("*** Begin Patch\n*** Add File: {}\n", path.display());
                content.lines().for_each(|line| patch.push_str(&format!("+{line}\n")));
                patch.push_str("*** End Patch\n");
                self.payload(sandbox, "apply_patch", json!({ "command": patch }))
            }
            Host::Cursor => self.payload(sandbox, "Write", json!({ "path": path, "contents": content })),
        }
    }

    /// The host's shell tool running `command`.
    fn shell(self, sandbox: &Sandbox, command: &str) -> Value {
        match self {
            Host::Claude | Host::Codex => {
                self.payload(sandbox, "Bash", json!({ "command": command, "description": "run it" }))
            }
            Host::Gemini => self.payload(sandbox, "run_shell_command", json!({ "command": command })),
            Host::Cursor => json!({
                "conversation_id": "c0ffee-1",
                "generation_id": "gen-7",
                "hook_event_name": "beforeShellExecution",
                "cursor_version": "2.1.0",
                "workspace_roots": [sandbox.root],
                "command": command,
                "cwd": sandbox.root,
            }),
        }
    }
}

fn guard(sandbox: &Sandbox, host: Host, input: &Value) -> Run {
    sandbox.run_with(sandbox.cmd().args(["hook", "pre-tool", "--agent", host.agent()]).write_stdin(input.to_string()))
}

/// The reason of a refusal, after holding the reply to the host's schema.
fn refused(host: Host, run: Run) -> String {
    let reply = run.code(0).stderr_is("").stdout_json();
    let fields = |value: &Value| value.as_object().unwrap_or_else(|| panic!("not an object: {reply}")).clone();
    match host {
        Host::Claude | Host::Codex => {
            // Codex's output schema allows no other field, at either level.
            assert_eq!(fields(&reply).keys().collect::<Vec<_>>(), ["hookSpecificOutput"], "{reply}");
            let specific = &reply["hookSpecificOutput"];
            let mut keys: Vec<String> = fields(specific).keys().cloned().collect();
            keys.sort();
            assert_eq!(keys, ["hookEventName", "permissionDecision", "permissionDecisionReason"], "{reply}");
            assert_eq!(specific["hookEventName"], "PreToolUse", "{reply}");
            assert_eq!(specific["permissionDecision"], "deny", "{reply}");
            specific["permissionDecisionReason"].as_str().unwrap().to_string()
        }
        Host::Gemini => {
            let mut keys: Vec<String> = fields(&reply).keys().cloned().collect();
            keys.sort();
            assert_eq!(keys, ["decision", "reason"], "{reply}");
            assert_eq!(reply["decision"], "deny", "{reply}");
            reply["reason"].as_str().unwrap().to_string()
        }
        Host::Cursor => {
            let mut keys: Vec<String> = fields(&reply).keys().cloned().collect();
            keys.sort();
            assert_eq!(keys, ["agent_message", "permission", "user_message"], "{reply}");
            assert_eq!(reply["permission"], "deny", "{reply}");
            assert_eq!(reply["user_message"], reply["agent_message"], "{reply}");
            reply["agent_message"].as_str().unwrap().to_string()
        }
    }
}

/// A call let through: nothing at all, or on Cursor the allow it needs.
fn allowed(host: Host, run: Run) {
    match host {
        Host::Cursor => {
            assert_eq!(run.code(0).stderr_is("").stdout_json(), json!({ "permission": "allow" }));
        }
        _ => {
            run.code(0).stdout_is("").stderr_is("");
        }
    }
}

fn ledger_sandbox() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", LEDGER);
    sandbox
}

#[test]
fn ticking_a_runnable_box_is_refused_in_each_hosts_schema() {
    let sandbox = ledger_sandbox();
    for host in HOSTS {
        // Positive first: ticking the manual gate is the agent's to do.
        allowed(host, guard(&sandbox, host, &host.replace(&sandbox, "GATES.md", "- [ ] M1", "- [x] M1")));
        let reason = refused(host, guard(&sandbox, host, &host.replace(&sandbox, "GATES.md", "- [ ] G1", "- [x] G1")));
        assert!(
            reason.starts_with("unlazy: refused: this edit would tick the box of runnable gate(s) G1 in the ledger"),
            "{host:?}: {reason}"
        );
        assert!(reason.contains("Run gate-check:"), "{host:?}: {reason}");
    }
    // Claude Code's other edit tools: MultiEdit's edits apply in order; a
    // notebook edit of a ledger cannot be worked out and is refused.
    let ledger = sandbox.path("GATES.md");
    let multi = Host::Claude.payload(
        &sandbox,
        "MultiEdit",
        json!({ "file_path": ledger, "edits": [
            { "old_string": "# Gates", "new_string": "# Gates of the report" },
            { "old_string": "- [ ] G1", "new_string": "- [x] G1" },
        ] }),
    );
    assert!(
        refused(Host::Claude, guard(&sandbox, Host::Claude, &multi)).contains("tick the box of runnable gate(s) G1")
    );
    let notebook = Host::Claude.payload(
        &sandbox,
        "NotebookEdit",
        json!({ "notebook_path": ledger, "cell_id": "c1", "new_source": "- [x] G1: x", "edit_mode": "replace" }),
    );
    let reason = refused(Host::Claude, guard(&sandbox, Host::Claude, &notebook));
    assert!(reason.contains("cannot work out what this tool does to the ledger"), "{reason}");
    assert_eq!(sandbox.read("GATES.md"), LEDGER, "the guard never writes");
}

#[test]
fn writing_an_evidence_line_is_refused_in_each_hosts_schema() {
    let sandbox = ledger_sandbox();
    let forged = LEDGER.replace("EVIDENCE: pending", "EVIDENCE: exit=0; shell=/bin/sh");
    for host in HOSTS {
        // Rewriting the ledger as it is decides nothing.
        allowed(host, guard(&sandbox, host, &host.write(&sandbox, "gates/leaf-1.md", LEDGER)));
        sandbox.write("gates/leaf-1.md", LEDGER);
        let reason = refused(host, guard(&sandbox, host, &host.write(&sandbox, "gates/leaf-1.md", &forged)));
        assert!(reason.contains("write the EVIDENCE of runnable gate(s) G1 in the ledger"), "{host:?}: {reason}");
        assert!(reason.contains(&crate::common::native("gates/leaf-1.md")), "{host:?}: {reason}");
        let added = refused(
            host,
            guard(&sandbox, host, &host.replace(&sandbox, "GATES.md", "  EVIDENCE: pending", "  EVIDENCE: it passed")),
        );
        assert!(added.contains("write the EVIDENCE of runnable gate(s) G1"), "{host:?}: {added}");
    }
}

#[test]
fn writing_into_protected_state_is_refused_in_each_hosts_schema() {
    let sandbox = ledger_sandbox();
    let receipts = sandbox.root.parent().unwrap().join("receipts");
    std::fs::create_dir(&receipts).unwrap();
    let record = sandbox.approvals.join("0123.json");
    for host in HOSTS {
        let run = |input: &Value| {
            sandbox.run_with(
                sandbox
                    .cmd()
                    .env("UNLAZY_RECEIPT_DIR", &receipts)
                    .args(["hook", "pre-tool", "--agent", host.agent()])
                    .write_stdin(input.to_string()),
            )
        };
        // Positive first: the same write beside the store is no business of the guard's.
        let beside = sandbox.root.parent().unwrap().join("approvals-notes.json");
        allowed(host, run(&host.write(&sandbox, beside.to_str().unwrap(), "{}")));
        let reason = refused(host, run(&host.write(&sandbox, record.to_str().unwrap(), "{}")));
        assert!(reason.contains(&format!("{} lies in the approval store", record.display())), "{host:?}: {reason}");
        let key = refused(host, run(&host.write(&sandbox, receipts.join("owner.key").to_str().unwrap(), "k")));
        assert!(key.contains("lies in the receipt store"), "{host:?}: {key}");
        let lock = refused(host, run(&host.write(&sandbox, ".unlazy/locks/x.filelock", "")));
        assert!(lock.contains("a .unlazy/locks directory"), "{host:?}: {lock}");
        // Quoted, as a Windows path must be in the agents' bash.
        let shell = refused(host, run(&host.shell(&sandbox, &format!("echo '{{}}' > '{}'", record.display()))));
        assert!(shell.contains("lies in the approval store"), "{host:?}: {shell}");
    }
}

#[test]
fn the_agents_own_edits_pass_with_no_output() {
    let ticked = LEDGER.replace("- [ ] G1", "- [x] G1");
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &ticked);
    sandbox.write("src/report.rs", "fn main() {}\n");
    let new_gate = "- [ ] M1: a person read it\n- [ ] G2: the summary renders\n  CHECK: make summary\n  \
                    EXPECT: SUMMARY-OK\n  EVIDENCE: pending";
    for host in HOSTS {
        // Positive first: this host's call is judged at all.
        refused(
            host,
            guard(
                &sandbox,
                host,
                &host.write(&sandbox, "GATES.md", &ticked.replace("EVIDENCE: pending", "EVIDENCE: ok")),
            ),
        );
        allowed(host, guard(&sandbox, host, &host.replace(&sandbox, "GATES.md", "- [x] G1", "- [ ] G1")));
        allowed(
            host,
            guard(&sandbox, host, &host.replace(&sandbox, "GATES.md", "- [ ] M1: a person read it", new_gate)),
        );
        allowed(
            host,
            guard(&sandbox, host, &host.replace(&sandbox, "GATES.md", "CHECK: make report", "CHECK: make report-all")),
        );
        allowed(
            host,
            guard(&sandbox, host, &host.replace(&sandbox, "src/report.rs", "fn main() {}", "fn main() { run() }")),
        );
        allowed(host, guard(&sandbox, host, &host.write(&sandbox, "src/new.rs", "- [x] G1: a list item in code\n")));
    }
    // Reads and other tools pass untouched.
    for host in [Host::Claude, Host::Gemini, Host::Cursor] {
        let read = host.payload(&sandbox, "Read", json!({ "file_path": sandbox.path("GATES.md") }));
        allowed(host, guard(&sandbox, host, &read));
    }
}

#[test]
fn without_a_cwd_cursor_paths_start_where_the_stop_hook_judges() {
    let sandbox = ledger_sandbox();
    let elsewhere = sandbox.root.parent().unwrap().join("notes");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let tick = |roots: Value| {
        let mut call = Host::Cursor.payload(
            &sandbox,
            "StrReplace",
            json!({ "path": "GATES.md", "old_string": "- [ ] G1", "new_string": "- [x] G1" }),
        );
        let object = call.as_object_mut().unwrap();
        object.remove("cwd");
        object.insert("workspace_roots".into(), roots);
        guard(&sandbox, Host::Cursor, &call)
    };
    // The ledger's root named first: its relative path is the ledger.
    let first = refused(Host::Cursor, tick(json!([sandbox.root, elsewhere])));
    assert!(first.contains("G1"), "{first}");
    // Named second, it is still the root that holds the work.
    assert_eq!(refused(Host::Cursor, tick(json!([elsewhere, sandbox.root]))), first);
    // Against a root with no ledger, the edit is judged there (and cannot apply).
    let other = refused(Host::Cursor, tick(json!([elsewhere])));
    assert!(other.contains(&format!("{} as it is now", elsewhere.join("GATES.md").display())), "{other}");
}

#[test]
fn self_approval_through_the_shell_is_refused_on_every_host() {
    let sandbox = ledger_sandbox();
    for host in HOSTS {
        for command in ["gate-check --status", "pytest -q"] {
            allowed(host, guard(&sandbox, host, &host.shell(&sandbox, command)));
        }
        for command in [
            "gate-check --approve",
            "env X=1 gate-check --reverify --approve GATES.md",
            "sh -c 'gate-check --approve'",
            "node ~/.claude/skills/unlazy/scripts/gate-check.mjs --approve",
            "cargo test && \"gate-check\" -- --approve",
        ] {
            let reason = refused(host, guard(&sandbox, host, &host.shell(&sandbox, command)));
            assert!(
                reason.starts_with("unlazy: refused: approving a CHECK is the person's act, not the agent's"),
                "{host:?} {command}: {reason}"
            );
        }
    }
    // Cursor's preToolUse sends its Shell tool too.
    let shell = Host::Cursor.payload(
        &sandbox,
        "Shell",
        json!({ "command": "gate-check --approve", "working_directory": sandbox.root }),
    );
    refused(Host::Cursor, guard(&sandbox, Host::Cursor, &shell));
}

#[test]
fn plain_shell_rewrites_of_a_ledger_are_refused() {
    let sandbox = ledger_sandbox();
    for host in HOSTS {
        // Positive first: the same writers on other files pass.
        for command in
            ["sed -i s/a/b/ notes.txt", "echo x > notes.md", "cat GATES.md | tee copy.txt", "perl -pi -e 1 x.rs"]
        {
            allowed(host, guard(&sandbox, host, &host.shell(&sandbox, command)));
        }
        for (command, how) in [
            ("sed -i 's/- \\[ \\]/- [x]/' GATES.md", "sed -i"),
            ("perl -pi -e 's/pending/ok/' gates/leaf-1.md", "perl -i"),
            ("printf '  EVIDENCE: ok\\n' >> GATES.md", "an output redirection"),
            ("echo x | tee -a .unlazy/api/GATES.md", "tee"),
            ("bash -c 'cat forged.md > gates/*.md'", "an output redirection"),
        ] {
            let reason = refused(host, guard(&sandbox, host, &host.shell(&sandbox, command)));
            assert!(reason.contains("this command rewrites the ledger"), "{host:?} {command}: {reason}");
            assert!(
                reason.contains(&format!(" with {how}, which the guard cannot check")),
                "{host:?} {command}: {reason}"
            );
        }
    }
}

// Symbolic links: Windows lets only administrators (or Developer Mode)
// create one, and wine 8, which runs the Windows tests, creates none.
#[cfg(unix)]
#[test]
fn links_and_dots_do_not_hide_a_ledger_or_a_store() {
    let sandbox = ledger_sandbox();
    std::fs::create_dir(sandbox.path("sub")).unwrap();
    std::os::unix::fs::symlink(sandbox.path("GATES.md"), sandbox.path("notes.md")).unwrap();
    std::os::unix::fs::symlink(&sandbox.approvals, sandbox.path("store")).unwrap();
    std::os::unix::fs::symlink(sandbox.approvals.join("later.json"), sandbox.path("dangling")).unwrap();
    let host = Host::Claude;
    let tick = |file: &str| {
        host.payload(&sandbox, "Edit", json!({ "file_path": file, "old_string": "- [ ] G1", "new_string": "- [x] G1" }))
    };
    // Positive first: a plain relative name resolves against the payload's cwd.
    refused(host, guard(&sandbox, host, &tick("GATES.md")));
    refused(host, guard(&sandbox, host, &tick("sub/../GATES.md")));
    refused(host, guard(&sandbox, host, &tick("notes.md")));
    let write = |file: &str| host.payload(&sandbox, "Write", json!({ "file_path": file, "content": "{}" }));
    allowed(host, guard(&sandbox, host, &write("sub/x.json")));
    assert!(refused(host, guard(&sandbox, host, &write("store/x.json"))).contains("lies in the approval store"));
    assert!(refused(host, guard(&sandbox, host, &write("dangling"))).contains("lies in the approval store"));
    let home = sandbox.path("home");
    let default_store = sandbox.run_with(
        sandbox
            .cmd()
            .env("HOME", &home)
            .env("USERPROFILE", &home)
            .args(["hook", "pre-tool"])
            .write_stdin(write("~/.unlazy/approved/x.json").to_string()),
    );
    assert!(refused(host, default_store)
        .contains(&format!("{}/.unlazy/approved/x.json lies in the approval store", home.display())));
}

#[test]
fn unusable_input_lets_the_call_through_and_says_why() {
    let sandbox = ledger_sandbox();
    let note = |problem: &str| format!("gate-check hook pre-tool: {problem}; not guarding this tool call\n");
    for (input, problem) in [
        ("{", "hook input is not JSON (EOF while parsing an object at line 1 column 1)"),
        ("[1]", "hook input is not a JSON object"),
        (
            r#"{"cwd": 5, "tool_name": "Bash", "tool_input": {"command": "gate-check --approve"}}"#,
            "hook input field cwd is not a string",
        ),
    ] {
        let run = |agent: &str| {
            sandbox.run_with(sandbox.cmd().args(["hook", "pre-tool", "--agent", agent]).write_stdin(input))
        };
        let claude = run("claude").code(0).stderr_is(&note(problem)).stdout_json();
        assert_eq!(
            claude,
            json!({ "systemMessage": format!("unlazy: the hook input is unusable: gate-check hook pre-tool: {problem}; not guarding this tool call.") })
        );
        let cursor = run("cursor").code(0).stderr_is(&note(problem)).stdout_json();
        assert_eq!(cursor, json!({ "permission": "allow" }));
    }
    let not_utf8 = sandbox.run_with(sandbox.cmd().args(["hook", "pre-tool"]).write_stdin(vec![b'{', 0xff, b'}']));
    not_utf8.code(0).stderr_is(&note("hook input is not UTF-8")).stdout_contains("systemMessage");
    // Another event (a copied entry) and an unknown tool pass silently.
    let other = json!({ "session_id": "s", "cwd": sandbox.root, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                        "tool_input": { "command": "gate-check --approve" } });
    allowed(Host::Claude, guard(&sandbox, Host::Claude, &other));
    // A broken command line never blocks either.
    sandbox
        .run_with(sandbox.cmd().args(["hook", "pre-tool", "--bogus"]).write_stdin("{}"))
        .code(0)
        .stderr_is("gate-check hook: unexpected argument '--bogus' found; not guarding this tool call\n")
        .stdout_contains("the installed guard command is broken");
    sandbox
        .run_with(sandbox.cmd().args(["hook", "pre-tool", "--agent", "cursor", "--bogus"]).write_stdin("{}"))
        .code(0)
        .stderr_contains("unexpected argument '--bogus'")
        .stdout_is("{\"permission\":\"allow\"}\n");
}
