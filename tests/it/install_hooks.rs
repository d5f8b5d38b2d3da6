//! `gate-check install-hooks` through the real binary: where it writes,
//! what it writes, idempotence, repair of moved installs, backups,
//! refusal of malformed settings, and uninstall.

use std::fs;

use crate::common::{exists, Run, Sandbox};
use serde_json::{json, Value};

/// The binary as it names itself (on Windows without the `\\?\` prefix
/// `canonicalize` gives).
fn binary_path() -> String {
    let path = assert_cmd::cargo::cargo_bin("gate-check");
    let canonical = fs::canonicalize(path).unwrap().to_str().unwrap().to_string();
    canonical.strip_prefix(r"\\?\").map(str::to_string).unwrap_or(canonical)
}

/// The binary as the first word of a hook command: on Windows in double
/// quotes, as the Node installer quotes there.
fn program_word() -> String {
    if cfg!(windows) {
        format!("\"{}\"", binary_path())
    } else {
        binary_path()
    }
}

fn our_command(scope: Option<&str>) -> String {
    command_for(None, scope)
}

/// The command installed for a host other than Claude Code names it.
fn command_for(host: Option<&str>, scope: Option<&str>) -> String {
    let mut command = format!("{} hook stop", program_word());
    if let Some(host) = host {
        command.push_str(&format!(" --agent {host}"));
    }
    if let Some(scope) = scope {
        command.push_str(&format!(" --scope {scope}"));
    }
    command
}

/// The guard command installed for a host (Claude Code's names none).
fn guard_for(host: Option<&str>) -> String {
    let mut command = format!("{} hook pre-tool", program_word());
    if let Some(host) = host {
        command.push_str(&format!(" --agent {host}"));
    }
    command
}

/// The group a grouped host's file holds at its pre-tool event.
fn guard_group(host: Option<&str>, timeout: u64) -> Value {
    json!({ "hooks": [{ "type": "command", "command": guard_for(host), "timeout": timeout }] })
}

fn install(sandbox: &Sandbox, args: &[&str]) -> Run {
    // The home as Node's os.homedir() reads it: HOME, or USERPROFILE on Windows.
    let home = sandbox.path("home");
    sandbox.run_with(sandbox.cmd().arg("install-hooks").args(args).env("HOME", &home).env("USERPROFILE", &home))
}

fn settings(sandbox: &Sandbox, relative: &str) -> Value {
    serde_json::from_str(&sandbox.read(relative)).unwrap()
}

fn stop_commands(value: &Value) -> Vec<String> {
    value["hooks"]["Stop"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|group| group["hooks"].as_array().unwrap().iter())
        .map(|hook| hook["command"].as_str().unwrap().to_string())
        .collect()
}

const LOCAL: &str = ".claude/settings.local.json";

#[test]
fn installs_into_local_settings_and_is_idempotent() {
    let sandbox = Sandbox::new();
    install(&sandbox, &[])
        .code(0)
        .stdout_starts_with(&format!("Installed unlazy Stop hook into {}\n", sandbox.path(LOCAL).display()));
    let written = settings(&sandbox, LOCAL);
    let group = json!([{ "hooks": [{ "type": "command", "command": our_command(None), "timeout": 20 }] }]);
    // The same entry at Stop and at SubagentStop, where a subagent is held
    // to its own leaf, and the guard before every tool.
    let guard = json!([guard_group(None, 10)]);
    assert_eq!(written, json!({ "hooks": { "Stop": group, "SubagentStop": group, "PreToolUse": guard } }));
    assert!(!exists(&sandbox.path(".claude/settings.local.json.unlazy.bak")), "no backup without a previous file");
    assert!(sandbox.read(LOCAL).ends_with("}\n"));

    let before = sandbox.read(LOCAL);
    install(&sandbox, &[]).code(0).stdout_contains("Already installed").stdout_contains("nothing changed");
    assert_eq!(sandbox.read(LOCAL), before);
    assert!(!exists(&sandbox.path(".claude/settings.local.json.unlazy.bak")));
}

#[test]
fn the_installed_command_runs_the_hook() {
    let sandbox = Sandbox::new();
    install(&sandbox, &["--scope", "api"]).code(0).stdout_starts_with("Installed unlazy Stop hook into ");
    let command = stop_commands(&settings(&sandbox, LOCAL)).remove(0);
    assert_eq!(command, our_command(Some("api")));
    sandbox.write(".unlazy/api/GATES.md", "- [ ] G1: x\n  EVIDENCE: pending\n");
    let output = through_shell(&command)
        .current_dir(&sandbox.root)
        .env_remove("UNLAZY_SCOPE")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(b"{\"session_id\":\"s\"}")?;
            child.wait_with_output()
        })
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(out.contains("\"decision\":\"block\"") && out.contains("[scope api]"), "{out}");
}

#[test]
fn preserves_unrelated_settings_and_siblings_and_backs_up() {
    let sandbox = Sandbox::new();
    let original = json!({
        "model": "opus",
        "permissions": { "allow": ["Bash(cargo test:*)"] },
        "hooks": {
            "PreToolUse": [{ "matcher": "Bash", "hooks": [{ "type": "command", "command": "audit-bash" }] }],
            "Stop": [{ "matcher": "", "hooks": [
                { "type": "command", "command": "notify-done" },
                { "type": "command", "command": "/old/install/gate-check hook stop" }
            ] }]
        }
    });
    let text = serde_json::to_string_pretty(&original).unwrap();
    sandbox.write(LOCAL, &text);
    install(&sandbox, &["--scope", "api"]).code(0).stdout_contains("replaced: 1 older unlazy hook entry");
    assert_eq!(sandbox.read(".claude/settings.local.json.unlazy.bak"), text, "backup holds the previous bytes");

    let written = settings(&sandbox, LOCAL);
    assert_eq!(written["model"], "opus");
    assert_eq!(written["permissions"], original["permissions"]);
    // The guard goes beside the foreign PreToolUse group, which stays first.
    assert_eq!(written["hooks"]["PreToolUse"], json!([original["hooks"]["PreToolUse"][0], guard_group(None, 10)]));
    assert_eq!(written["hooks"]["Stop"][0]["matcher"], "");
    assert_eq!(stop_commands(&written), ["notify-done".to_string(), our_command(Some("api"))]);
    let keys: Vec<&String> = written.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["model", "permissions", "hooks"], "key order is kept");

    // Re-pinning replaces rather than stacking; uninstall leaves the sibling.
    install(&sandbox, &[]).code(0).stdout_starts_with("Installed unlazy Stop hook into ");
    assert_eq!(stop_commands(&settings(&sandbox, LOCAL)), ["notify-done".to_string(), our_command(None)]);
    install(&sandbox, &["--uninstall"]).code(0).stdout_starts_with("Removed 1 unlazy Stop hook entry from");
    let after = settings(&sandbox, LOCAL);
    assert_eq!(stop_commands(&after), ["notify-done"]);
    assert_eq!(after["hooks"]["PreToolUse"], original["hooks"]["PreToolUse"]);
    install(&sandbox, &["--uninstall"]).code(0).stdout_starts_with("Nothing to remove");
}

#[test]
fn repairs_a_node_install_and_uninstall_cleans_up_empty_objects() {
    let sandbox = Sandbox::new();
    sandbox.write(
        LOCAL,
        r#"{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"node \"/home/u/.claude/skills/unlazy/scripts/stop-hook.mjs\" --unlazy","timeout":20}]}]}}"#,
    );
    install(&sandbox, &[]).code(0).stdout_starts_with("Installed unlazy Stop hook into ");
    assert_eq!(stop_commands(&settings(&sandbox, LOCAL)), [our_command(None)]);
    install(&sandbox, &["--uninstall"]).code(0).stdout_starts_with("Removed ");
    assert_eq!(settings(&sandbox, LOCAL), json!({}));
}

#[test]
fn refuses_malformed_settings_and_changes_nothing() {
    let sandbox = Sandbox::new();
    let cases = [
        "{ not json",
        "[]",
        r#"{"hooks": []}"#,
        r#"{"hooks": {"Stop": {"hooks": []}}}"#,
        r#"{"hooks": {"Stop": [{"matcher": "x"}]}}"#,
        r#"{"hooks": {"Stop": [{"hooks": [{"command": 3}]}]}}"#,
        "",
    ];
    for text in cases {
        sandbox.write(LOCAL, text);
        for args in [&[][..], &["--uninstall"][..]] {
            install(&sandbox, args)
                .code(2)
                .stderr_starts_with(&format!("gate-check: refusing to touch {}", sandbox.path(LOCAL).display()));
            assert_eq!(sandbox.read(LOCAL), text, "file changed");
            assert!(!exists(&sandbox.path(".claude/settings.local.json.unlazy.bak")));
        }
    }
    let names: Vec<String> =
        fs::read_dir(sandbox.path(".claude")).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert_eq!(names, ["settings.local.json"], "no temp files left behind");

    fs::remove_file(sandbox.path(LOCAL)).unwrap();
    if crate::common::symlink(&sandbox.path("elsewhere.json"), &sandbox.path(LOCAL)) {
        install(&sandbox, &[]).code(2).stderr_contains("symbolic link");
        assert!(!exists(&sandbox.path("elsewhere.json")));
    }
}

#[test]
fn shared_warns_and_global_writes_home() {
    let sandbox = Sandbox::new();
    install(&sandbox, &["--shared"])
        .code(0)
        .stdout_contains(&crate::common::native(".claude/settings.json"))
        .stderr_contains("warning")
        .stderr_contains(&binary_path())
        .stderr_contains("absolute path");
    assert_eq!(stop_commands(&settings(&sandbox, ".claude/settings.json")), [our_command(None)]);
    assert!(!exists(&sandbox.path(LOCAL)));

    install(&sandbox, &["--global"])
        .code(0)
        .stderr_is("")
        .stdout_contains(&sandbox.path("home/.claude/settings.json").display().to_string());
    assert_eq!(stop_commands(&settings(&sandbox, "home/.claude/settings.json")), [our_command(None)]);
    install(&sandbox, &["--global", "--uninstall"])
        .code(0)
        .stdout_starts_with("Removed 1 unlazy Stop hook entry from ");
    assert_eq!(settings(&sandbox, "home/.claude/settings.json"), json!({}));

    install(&sandbox, &["--shared", "--global"])
        .code(2)
        .stderr_contains("error: the argument '--shared' cannot be used with '--global'");
    install(&sandbox, &["--scope", "../up"]).code(2).stderr_contains("--scope must match");
}

#[test]
fn only_entries_this_tool_or_the_node_installer_wrote_are_ours() {
    let sandbox = Sandbox::new();
    let foreign = "node /opt/other/stop-hook.mjs --unlazy-helper";
    let node = "'/usr/bin/node' '/opt/unlazy/scripts/stop-hook.mjs' --unlazy-hook-v2 --scope api";
    let start = json!({ "hooks": { "Stop": [{ "hooks": [
        { "type": "command", "command": foreign },
        { "type": "command", "command": node, "timeout": 20 },
    ] }] } });
    sandbox.write(LOCAL, &serde_json::to_string_pretty(&start).unwrap());
    install(&sandbox, &[]).code(0).stdout_contains("replaced: 1 older unlazy hook entry");
    assert_eq!(stop_commands(&settings(&sandbox, LOCAL)), [foreign.to_string(), our_command(None)]);
    install(&sandbox, &["--uninstall"]).code(0).stdout_contains("Removed 1 unlazy Stop hook entry");
    assert_eq!(stop_commands(&settings(&sandbox, LOCAL)), [foreign.to_string()]);
    install(&sandbox, &["--uninstall"]).code(0).stdout_starts_with("Nothing to remove");
    assert_eq!(stop_commands(&settings(&sandbox, LOCAL)), [foreign.to_string()]);
}

#[test]
fn a_hard_linked_settings_file_is_refused_and_keeps_its_link() {
    let sandbox = Sandbox::new();
    let text = "{\n  \"model\": \"x\"\n}\n";
    let file = sandbox.write(LOCAL, text);
    let partner = sandbox.path("elsewhere.json");
    fs::hard_link(&file, &partner).unwrap();
    for args in [&[][..], &["--uninstall"][..]] {
        install(&sandbox, args).code(2).stderr_contains("more than one hard link").stderr_contains("single-link file");
        #[cfg(unix)]
        assert_eq!(std::os::unix::fs::MetadataExt::nlink(&fs::metadata(&file).unwrap()), 2);
        assert_eq!(fs::read_to_string(&partner).unwrap(), text);
        assert_eq!(sandbox.read(LOCAL), text);
        assert!(!exists(&sandbox.path(".claude/settings.local.json.unlazy.bak")));
    }
}

#[test]
fn reinstalling_restores_a_damaged_entry() {
    let sandbox = Sandbox::new();
    install(&sandbox, &[]).code(0).stdout_starts_with("Installed unlazy Stop hook into ");
    let healthy = settings(&sandbox, LOCAL);
    let mut damaged = healthy.clone();
    damaged["hooks"]["Stop"][0]["hooks"][0]["type"] = json!("prompt");
    damaged["hooks"]["Stop"][0]["hooks"][0]["timeout"] = json!(1);
    sandbox.write(LOCAL, &serde_json::to_string_pretty(&damaged).unwrap());
    install(&sandbox, &[]).code(0).stdout_starts_with("Installed unlazy Stop hook").stdout_contains("replaced: 1");
    assert_eq!(settings(&sandbox, LOCAL), healthy);
}

const CODEX: &str = ".codex/hooks.json";

/// The rules Codex applies to a hooks.json file: a root of `hooks` (and
/// `description`) only, each event an array of matcher groups, each handler
/// a `command` with `type` and a `timeout` in seconds.
fn assert_valid_codex_hooks(value: &Value) {
    let root = value.as_object().expect("an object");
    assert!(root.keys().all(|key| key == "hooks" || key == "description"), "Codex refuses other root keys: {value}");
    for (event, groups) in root.get("hooks").and_then(Value::as_object).into_iter().flatten() {
        for group in groups.as_array().unwrap_or_else(|| panic!("{event} is not an array")) {
            for handler in group["hooks"].as_array().unwrap_or_else(|| panic!("{event} group lacks hooks")) {
                assert_eq!(handler["type"], "command", "{handler}");
                assert!(handler["command"].is_string() && handler["timeout"].is_u64(), "{handler}");
            }
        }
    }
}

#[test]
fn codex_gets_its_project_hooks_file_and_is_told_how_to_enable_it() {
    let sandbox = Sandbox::new();
    install(&sandbox, &["--agent", "codex"])
        .code(0)
        .stdout_starts_with(&format!("Installed unlazy Stop hook into {}\n", sandbox.path(CODEX).display()))
        .stdout_contains(&format!("  remove:  {} install-hooks --agent codex --uninstall\n", program_word()))
        .stdout_contains("`codex_hooks = true` under [features] in its config.toml")
        .stdout_contains("trust this hook")
        // The project file is usually committed: the absolute path is worth a warning.
        .stderr_contains("usually committed");
    let written = settings(&sandbox, CODEX);
    let group =
        json!([{ "hooks": [{ "type": "command", "command": command_for(Some("codex"), None), "timeout": 20 }] }]);
    let guard = json!([guard_group(Some("codex"), 10)]);
    assert_eq!(written, json!({ "hooks": { "Stop": group, "SubagentStop": group, "PreToolUse": guard } }));
    assert_valid_codex_hooks(&written);
    assert!(!exists(&sandbox.path(".codex/config.toml")), "config.toml is never written unasked");
    assert!(!exists(&sandbox.path(".claude")), "Claude Code's settings are not touched");

    install(&sandbox, &["--agent", "codex"]).code(0).stdout_contains("Already installed").stderr_is("");
    install(&sandbox, &["--agent", "codex", "--uninstall"])
        .code(0)
        .stdout_starts_with("Removed 1 unlazy Stop hook entry from ")
        .stdout_ends_with("\n  also:    1 SubagentStop entry\n  also:    1 PreToolUse entry\n");
    assert_eq!(settings(&sandbox, CODEX), json!({}));
    assert_valid_codex_hooks(&settings(&sandbox, CODEX));
    install(&sandbox, &["--agent", "codex", "--uninstall"]).code(0).stdout_starts_with("Nothing to remove");
}

#[test]
fn codex_keeps_foreign_hooks_and_refuses_hostile_files() {
    let sandbox = Sandbox::new();
    let foreign = json!({
        "description": "team hooks",
        "hooks": {
            "SessionStart": [{ "matcher": "startup", "hooks": [{ "type": "command", "command": "./start.sh", "timeout": 5 }] }],
            "Stop": [{ "hooks": [{ "type": "command", "command": "notify-done", "timeout": 3 }] }]
        }
    });
    sandbox.write(CODEX, &serde_json::to_string_pretty(&foreign).unwrap());
    install(&sandbox, &["--agent", "codex", "--global"])
        .code(0)
        .stdout_starts_with(&format!(
            "Installed unlazy Stop hook into {}\n",
            sandbox.path("home/.codex/hooks.json").display()
        ))
        .stdout_contains("install-hooks --agent codex --global --uninstall");
    assert_eq!(settings(&sandbox, CODEX), foreign, "the project file is not the --global one");

    install(&sandbox, &["--agent", "codex"])
        .code(0)
        .stdout_contains("  backup:  ")
        .stderr_contains("usually committed");
    let written = settings(&sandbox, CODEX);
    assert_valid_codex_hooks(&written);
    assert_eq!(written["description"], "team hooks");
    assert_eq!(written["hooks"]["SessionStart"], foreign["hooks"]["SessionStart"]);
    assert_eq!(stop_commands(&written), ["notify-done".to_string(), command_for(Some("codex"), None)]);
    install(&sandbox, &["--agent", "codex", "--uninstall"]).code(0).stdout_starts_with("Removed 1 ");
    assert_eq!(settings(&sandbox, CODEX), foreign, "uninstall leaves exactly the foreign hooks");

    // Malformed and linked files are refused and left as they are.
    sandbox.write(CODEX, "{ not json");
    install(&sandbox, &["--agent", "codex"]).code(2).stderr_contains("it exists but is not valid JSON");
    assert_eq!(sandbox.read(CODEX), "{ not json");
    fs::remove_file(sandbox.path(CODEX)).unwrap();
    sandbox.write("elsewhere.json", "{}");
    if crate::common::symlink(&sandbox.path("elsewhere.json"), &sandbox.path(CODEX)) {
        install(&sandbox, &["--agent", "codex"]).code(2).stderr_contains("it is a symbolic link");
        assert_eq!(sandbox.read("elsewhere.json"), "{}");
    }
    // Codex has one project file: --shared is Claude Code's.
    install(&sandbox, &["--agent", "codex", "--shared"])
        .code(2)
        .stderr_is("gate-check: --shared writes Claude Code's committed settings; Codex, Gemini CLI and Cursor have one project file (the default) and one user file (--global)\n");
}

const GEMINI: &str = ".gemini/settings.json";

#[test]
fn gemini_gets_an_after_agent_hook_with_its_timeout_in_milliseconds() {
    let sandbox = Sandbox::new();
    // A user's other Gemini settings and hooks stay as they are.
    let mine = json!({
        "model": { "name": "gemini-2.5-pro" },
        "hooks": { "BeforeTool": [{ "matcher": "run_shell_command", "hooks": [{ "type": "command", "command": "./audit.sh" }] }] }
    });
    sandbox.write(GEMINI, &serde_json::to_string_pretty(&mine).unwrap());
    install(&sandbox, &["--agent", "gemini"])
        .code(0)
        .stdout_starts_with(&format!("Installed unlazy Stop hook into {}\n", sandbox.path(GEMINI).display()))
        .stdout_contains("  event:   AfterAgent, timeout 20000 ms")
        .stdout_contains("install-hooks --agent gemini --uninstall")
        .stderr_contains("usually committed");
    let written = settings(&sandbox, GEMINI);
    assert_eq!(written["model"], mine["model"]);
    // The guard, in milliseconds too, beside the user's own BeforeTool group.
    assert_eq!(
        written["hooks"]["BeforeTool"],
        json!([mine["hooks"]["BeforeTool"][0], guard_group(Some("gemini"), 10_000)])
    );
    // 20 s, as Gemini counts it: a copied `20` would be 20 ms.
    assert_eq!(
        written["hooks"]["AfterAgent"],
        json!([{ "hooks": [{ "type": "command", "command": command_for(Some("gemini"), None), "timeout": 20000 }] }])
    );
    assert!(written["hooks"].get("Stop").is_none(), "Gemini has no Stop event");
    install(&sandbox, &["--agent", "gemini"]).code(0).stdout_contains("Already installed").stderr_is("");
    install(&sandbox, &["--agent", "gemini", "--uninstall"]).code(0).stdout_starts_with("Removed 1 ");
    assert_eq!(settings(&sandbox, GEMINI), mine, "uninstall leaves exactly the user's settings");

    install(&sandbox, &["--agent", "gemini", "--global"]).code(0).stdout_starts_with(&format!(
        "Installed unlazy Stop hook into {}\n",
        sandbox.path("home/.gemini/settings.json").display()
    ));
    assert_eq!(settings(&sandbox, GEMINI), mine, "the project file is not the --global one");
    sandbox.write(GEMINI, r#"{"hooks": {"AfterAgent": {"not": "an array"}}}"#);
    install(&sandbox, &["--agent", "gemini"]).code(2).stderr_contains("\"hooks.AfterAgent\" is not an array");
    install(&sandbox, &["--agent", "gemini", "--shared"])
        .code(2)
        .stderr_contains("--shared writes Claude Code's committed settings");
}

const CURSOR: &str = ".cursor/hooks.json";

/// The rules Cursor applies to a hooks.json file: `version` 1, `hooks` an
/// object of event arrays, each handler an object with a string `command`,
/// a numeric `timeout` (seconds) and, on `stop`, a numeric `loop_limit`.
fn assert_valid_cursor_hooks(value: &Value) {
    assert_eq!(value["version"], 1, "{value}");
    for (event, handlers) in value.get("hooks").and_then(Value::as_object).into_iter().flatten() {
        for handler in handlers.as_array().unwrap_or_else(|| panic!("{event} is not an array")) {
            assert!(handler["command"].is_string(), "{handler}");
            assert!(handler.get("timeout").is_none_or(Value::is_u64), "{handler}");
            assert!(handler.get("loop_limit").is_none_or(|limit| limit.is_u64() || limit.is_null()), "{handler}");
        }
    }
}

/// Runs an installed command line through the shell, as a host does, with
/// `input` on stdin; its stdout.
/// `command` as an agent host runs it: through the platform's shell
/// (cmd.exe on Windows, given the command line as Node gives it).
fn through_shell(command: &str) -> std::process::Command {
    let mut shell = std::process::Command::new(crate::common::sh::default_shell());
    #[cfg(windows)]
    std::os::windows::process::CommandExt::raw_arg(&mut shell, format!("/d /s /c \"{command}\""));
    #[cfg(unix)]
    shell.args(["-c", command]);
    shell
}

fn run_installed(sandbox: &Sandbox, command: &str, input: &Value) -> String {
    use std::io::Write;
    let mut child = through_shell(command)
        .current_dir(sandbox.path("home"))
        .env_remove("UNLAZY_SCOPE")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.to_string().as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn cursor_gets_a_stop_handler_whose_loop_limit_is_the_guards_budget() {
    let sandbox = Sandbox::new();
    install(&sandbox, &["--agent", "cursor"])
        .code(0)
        .stdout_starts_with(&format!("Installed unlazy Stop hook into {}\n", sandbox.path(CURSOR).display()))
        .stdout_contains("  event:   stop, replying with a followup_message; loop_limit 6")
        .stdout_contains("Cursor also runs Claude Code's hooks")
        .stdout_contains("install-hooks --agent cursor --uninstall")
        .stderr_contains("usually committed");
    let command = command_for(Some("cursor"), None);
    let written = settings(&sandbox, CURSOR);
    let guard = json!([{ "command": guard_for(Some("cursor")), "timeout": 10 }]);
    assert_eq!(
        written,
        json!({ "version": 1, "hooks": {
            "stop": [{ "command": command, "timeout": 20, "loop_limit": 6 }],
            "preToolUse": guard,
            "beforeShellExecution": guard,
        } })
    );
    assert!(sandbox.read(CURSOR).starts_with("{\n  \"version\": 1,"), "the version comes first");
    assert_valid_cursor_hooks(&written);

    // The installed command answers Cursor's stop in Cursor's schema.
    sandbox.write("GATES.md", "- [ ] G1: x\n  EVIDENCE: pending\n");
    std::fs::create_dir_all(sandbox.path("home")).unwrap();
    let input = json!({ "conversation_id": "c1", "hook_event_name": "stop", "workspace_roots": [sandbox.root],
                        "status": "completed", "loop_count": 0 });
    let reply: Value = serde_json::from_str(&run_installed(&sandbox, &command, &input)).unwrap();
    assert_eq!(reply.as_object().unwrap().keys().collect::<Vec<_>>(), ["followup_message"], "{reply}");

    install(&sandbox, &["--agent", "cursor"]).code(0).stdout_contains("Already installed").stderr_is("");
    install(&sandbox, &["--agent", "cursor", "--uninstall"])
        .code(0)
        .stdout_is(&format!(
            "Removed 1 unlazy stop hook entry from {}\n  also:    1 preToolUse entry\n  also:    1 beforeShellExecution entry\n",
            sandbox.path(CURSOR).display()
        ));
    assert_eq!(settings(&sandbox, CURSOR), json!({ "version": 1 }));
    install(&sandbox, &["--agent", "cursor", "--uninstall"]).code(0).stdout_starts_with("Nothing to remove");
}

#[test]
fn cursor_keeps_foreign_hooks_and_refuses_hostile_files() {
    let sandbox = Sandbox::new();
    let foreign = json!({ "version": 1, "hooks": {
        "afterFileEdit": [{ "command": "./hooks/format.sh" }],
        "stop": [{ "command": "./hooks/audit.sh", "loop_limit": 2 }, { "command": "/old/gate-check hook stop" }]
    } });
    sandbox.write(CURSOR, &serde_json::to_string_pretty(&foreign).unwrap());
    install(&sandbox, &["--agent", "cursor", "--global"]).code(0).stderr_is("").stdout_starts_with(&format!(
        "Installed unlazy Stop hook into {}\n",
        sandbox.path("home/.cursor/hooks.json").display()
    ));
    assert_valid_cursor_hooks(&settings(&sandbox, "home/.cursor/hooks.json"));
    assert_eq!(settings(&sandbox, CURSOR), foreign, "the project file is not the --global one");

    install(&sandbox, &["--agent", "cursor"])
        .code(0)
        .stdout_contains("  replaced: 1 older unlazy hook entry")
        .stdout_contains("  backup:  ")
        .stderr_contains("usually committed");
    let written = settings(&sandbox, CURSOR);
    assert_valid_cursor_hooks(&written);
    assert_eq!(written["hooks"]["afterFileEdit"], foreign["hooks"]["afterFileEdit"]);
    assert_eq!(written["hooks"]["stop"][0], foreign["hooks"]["stop"][0]);
    assert_eq!(written["hooks"]["stop"][1]["command"], command_for(Some("cursor"), None));
    assert_eq!(written["hooks"]["stop"].as_array().unwrap().len(), 2);
    install(&sandbox, &["--agent", "cursor", "--uninstall"]).code(0).stdout_starts_with("Removed 1 ");
    let mut left = foreign.clone();
    left["hooks"]["stop"].as_array_mut().unwrap().pop();
    assert_eq!(settings(&sandbox, CURSOR), left, "uninstall leaves exactly the foreign hooks");

    // Hostile and malformed files are refused and left exactly as they are.
    for text in [r#"{"version": 2, "hooks": {}}"#, r#"{"hooks": {"stop": {"command": "x"}}}"#, "{ not json", "[]"] {
        sandbox.write(CURSOR, text);
        for args in [&["--agent", "cursor"][..], &["--agent", "cursor", "--uninstall"][..]] {
            install(&sandbox, args)
                .code(2)
                .stderr_starts_with(&format!("gate-check: refusing to touch {}", sandbox.path(CURSOR).display()));
            assert_eq!(sandbox.read(CURSOR), text);
        }
    }
    sandbox.write("elsewhere/hooks.json", "{}");
    std::fs::remove_dir_all(sandbox.path(".cursor")).unwrap();
    if crate::common::symlink(&sandbox.path("elsewhere"), &sandbox.path(".cursor")) {
        install(&sandbox, &["--agent", "cursor"])
            .code(2)
            .stderr_contains("is a symbolic link; it must be a real directory");
        assert_eq!(sandbox.read("elsewhere/hooks.json"), "{}");
    }
    install(&sandbox, &["--agent", "cursor", "--shared"])
        .code(2)
        .stderr_contains("--shared writes Claude Code's committed settings");
}

#[test]
fn claude_code_and_codex_register_the_subagent_stop_and_an_older_install_gains_it() {
    let sandbox = Sandbox::new();
    // An install from before SubagentStop: Stop alone.
    let stop_only = json!({ "hooks": { "Stop": [{ "hooks": [
        { "type": "command", "command": our_command(None), "timeout": 20 }
    ] }] } });
    sandbox.write(LOCAL, &serde_json::to_string_pretty(&stop_only).unwrap());
    install(&sandbox, &[])
        .code(0)
        .stdout_contains("  events:  Stop, and SubagentStop: a subagent launched for a dispatched leaf is held")
        .stdout_lacks("replaced:");
    let written = settings(&sandbox, LOCAL);
    assert_eq!(written["hooks"]["Stop"], stop_only["hooks"]["Stop"], "the right Stop entry stays as it was");
    assert_eq!(written["hooks"]["SubagentStop"], stop_only["hooks"]["Stop"]);
    install(&sandbox, &["--uninstall"]).code(0).stdout_is(&format!(
        "Removed 1 unlazy Stop hook entry from {}\n  also:    1 SubagentStop entry\n  also:    1 PreToolUse entry\n",
        sandbox.path(LOCAL).display()
    ));
    assert_eq!(settings(&sandbox, LOCAL), json!({}));
}

/// Each host's global hook file, and the events its guard runs at.
const GUARDED: [(Option<&str>, &str, &[&str]); 4] = [
    (None, "home/.claude/settings.json", &["PreToolUse"]),
    (Some("codex"), "home/.codex/hooks.json", &["PreToolUse"]),
    (Some("gemini"), "home/.gemini/settings.json", &["BeforeTool"]),
    (Some("cursor"), "home/.cursor/hooks.json", &["preToolUse", "beforeShellExecution"]),
];

/// The commands of every handler at `event`, grouped or flat.
fn commands_at(value: &Value, event: &str) -> Vec<String> {
    let items = value["hooks"][event].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .flat_map(|item| match item.get("hooks").and_then(Value::as_array) {
            Some(handlers) => handlers.clone(),
            None => vec![item.clone()],
        })
        .map(|handler| handler["command"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn every_host_gets_the_guard_beside_its_stop_hook_and_loses_it_on_request() {
    for (agent, file, events) in GUARDED {
        let sandbox = Sandbox::new();
        let mut args: Vec<&str> = agent.map(|agent| vec!["--agent", agent]).unwrap_or_default();
        args.push("--global");
        let with = |extra: &'static str| [&args[..], &[extra]].concat();
        install(&sandbox, &args)
            .code(0)
            .stderr_is("")
            .stdout_contains(&format!("  guard:   {} (", guard_for(agent)))
            .stdout_contains("refuses ledger edits that tick a runnable gate or write its EVIDENCE");
        let written = settings(&sandbox, file);
        for event in events {
            assert_eq!(commands_at(&written, event), [guard_for(agent)], "{agent:?} {event}");
        }
        let stop_event = match agent {
            None | Some("codex") => "Stop",
            Some("gemini") => "AfterAgent",
            _ => "stop",
        };
        assert_eq!(commands_at(&written, stop_event), [command_for(agent, None)]);

        // The installed command guards: the host's own shell call to approve is refused.
        std::fs::create_dir_all(sandbox.path("home")).unwrap();
        let input = match agent {
            Some("cursor") => json!({ "conversation_id": "c", "hook_event_name": "beforeShellExecution",
                                      "workspace_roots": [sandbox.root], "command": "gate-check --approve", "cwd": sandbox.root }),
            Some("gemini") => json!({ "session_id": "s", "cwd": sandbox.root, "hook_event_name": "BeforeTool",
                                      "tool_name": "run_shell_command", "tool_input": { "command": "gate-check --approve" } }),
            _ => json!({ "session_id": "s", "cwd": sandbox.root, "hook_event_name": "PreToolUse",
                         "tool_name": "Bash", "tool_input": { "command": "gate-check --approve" } }),
        };
        let reply = run_installed(&sandbox, &guard_for(agent), &input);
        assert!(
            reply.contains("approving a CHECK is the person's act") && reply.contains("deny"),
            "{agent:?}: {reply}"
        );

        install(&sandbox, &args).code(0).stdout_contains("Already installed").stderr_is("");
        // Left out on request: the guard goes, the Stop hook stays.
        install(&sandbox, &with("--no-guard"))
            .code(0)
            .stderr_is("")
            .stdout_contains(&format!("  guard:   left out (--no-guard); removed {} guard entr", events.len()));
        let without = settings(&sandbox, file);
        for event in events {
            assert!(without["hooks"].get(*event).is_none(), "{agent:?}: {without}");
        }
        assert_eq!(commands_at(&without, stop_event), [command_for(agent, None)]);
        install(&sandbox, &with("--no-guard")).code(0).stdout_contains("Already installed");
        // Back again, then everything of ours removed.
        install(&sandbox, &args).code(0).stdout_starts_with("Installed unlazy Stop hook into ");
        assert_eq!(settings(&sandbox, file), written);
        install(&sandbox, &with("--uninstall")).code(0).stdout_starts_with("Removed ");
        let emptied = if agent == Some("cursor") { json!({ "version": 1 }) } else { json!({}) };
        assert_eq!(settings(&sandbox, file), emptied, "{agent:?}");
        install(&sandbox, &with("--uninstall"))
            .code(0)
            .stdout_is(&format!("Nothing to remove: no unlazy hook entry found in {}\n", sandbox.path(file).display()));
    }
    let sandbox = Sandbox::new();
    install(&sandbox, &["--no-guard", "--uninstall"])
        .code(2)
        .stderr_contains("the argument '--no-guard' cannot be used with '--uninstall'");
}
