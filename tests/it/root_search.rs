//! Finding the ledger from a subdirectory: without `--root`, gate-check
//! searches upward from the current directory for the nearest directory
//! holding ledgers, `.unlazy/` or `.git`; an explicit `--root` is never
//! searched; "no gate files found" says where it looked.

use std::fs;
use std::path::Path;

use crate::common::{gate, native, sh, Run, Sandbox};

/// A repository (`.git`) with one runnable gate at its root and an empty
/// `src/deep/` to run from.
fn repository() -> Sandbox {
    let sandbox = Sandbox::new();
    fs::create_dir(sandbox.path(".git")).unwrap();
    fs::create_dir_all(sandbox.path("src/deep")).unwrap();
    sandbox.write("GATES.md", &gate("G1", sh::PWD, std::path::MAIN_SEPARATOR_STR));
    sandbox
}

fn run_in(sandbox: &Sandbox, directory: &Path, args: &[&str]) -> Run {
    sandbox.run_with(sandbox.cmd().current_dir(directory).args(args))
}

#[test]
fn a_run_from_a_subdirectory_checks_the_repository_ledger_from_the_repository_root() {
    let sandbox = repository();
    let deep = sandbox.path("src/deep");
    run_in(&sandbox, &deep, &["--status"]).code(1).stdout_contains("GATES:G1").stdout_contains("UNMET: 1");

    run_in(&sandbox, &deep, &["--approve"]).code(0).stdout_contains("ALL MET");
    // The check ran where a run from the root runs it.
    assert!(sandbox.read("GATES.md").contains("- [x] G1"), "{}", sandbox.read("GATES.md"));
    assert!(
        sandbox.read("GATES.md").contains(&format!("cwd={};", sandbox.root.display())),
        "{}",
        sandbox.read("GATES.md")
    );
    // ... so the approval given from the subdirectory is the one a run from the root finds.
    sandbox
        .run_with(sandbox.cmd().arg("--reverify"))
        .code(0)
        .stdout_contains("  PASS GATES:G1: outcome G1\n")
        .stdout_lacks("APPROVAL REQUIRED");
    assert_eq!(sandbox.approval_count(), 1);
}

#[test]
fn the_nearest_ledger_wins_so_a_directory_with_its_own_ledger_behaves_as_before() {
    let sandbox = repository();
    sandbox.write("packages/app/GATES.md", "- [x] APP: the package ledger\n  EVIDENCE: read by hand\n");
    run_in(&sandbox, &sandbox.path("packages/app"), &["--status"])
        .code(0)
        .stdout_contains("ALL MET (1 met)")
        .stdout_lacks("G1");
}

#[test]
fn an_explicit_root_is_never_searched_and_the_message_stays_the_node_line() {
    let sandbox = repository();
    let src = sandbox.path("src");
    let expected = format!(
        "gate-check: error: no gate files found (looked for .unlazy/<scope>/, then GATES.md and gates/*.md under {})\n",
        src.display()
    );
    run_in(&sandbox, &src, &["--status", "--root", "."])
        .code(2)
        .stderr_is(&format!("{expected}run gate-check --help for usage\n"));
}

#[test]
fn no_gate_files_found_says_where_the_search_went() {
    let sandbox = Sandbox::new();
    let base = sandbox.root.parent().unwrap().to_path_buf();
    fs::create_dir_all(sandbox.path("src")).unwrap();
    // The home directory and its ancestors are never examined: ~/.unlazy
    // holds approvals, and a ledger there belongs to no repository.
    fs::create_dir_all(base.join(".unlazy/approved")).unwrap();
    fs::write(base.join("GATES.md"), "- [x] HOME: not this one\n  EVIDENCE: x\n").unwrap();
    let src = sandbox.path("src");
    sandbox
        .run_with(sandbox.cmd().current_dir(&src).env("HOME", &base).env("USERPROFILE", &base).arg("--status"))
        .code(2)
        .stderr_contains(&format!("under {} and each parent up to {})", src.display(), sandbox.root.display()))
        .stdout_lacks("HOME");

    // A repository root without ledgers ends the search and is named.
    fs::create_dir(sandbox.path(".git")).unwrap();
    run_in(&sandbox, &src, &["--status"]).code(2).stderr_contains(&format!(
        "under {}, found searching upward from {})",
        sandbox.root.display(),
        src.display()
    ));
}

#[test]
fn a_named_scope_is_looked_for_past_a_nearer_plain_ledger() {
    let sandbox = repository();
    sandbox.write(".unlazy/api/GATES.md", "- [x] API: the api pipeline\n  EVIDENCE: read by hand\n");
    sandbox.write("packages/app/GATES.md", "- [ ] APP: the package ledger\n");
    let app = sandbox.path("packages/app");
    run_in(&sandbox, &app, &["--status", "--scope", "api"]).code(0).stdout_contains("ALL MET (1 met)");
    sandbox
        .run_with(sandbox.cmd().current_dir(&app).env("UNLAZY_SCOPE", "api").arg("--status"))
        .code(0)
        .stdout_contains("ALL MET (1 met)");
    // Without a scope the nearer ledger is the target, as in the Node tool.
    run_in(&sandbox, &app, &["--status"]).code(1).stdout_contains("GATES:APP");
}

#[test]
fn pipeline_actions_and_dispatch_find_the_pipelines_from_a_subdirectory() {
    let sandbox = repository();
    sandbox.write(".unlazy/api/GATES.md", "OWNS: src/**\n\n- [ ] API: the api pipeline\n");
    let deep = sandbox.path("src/deep");
    run_in(&sandbox, &deep, &["--list-scopes"]).code(0).stdout_is("api\n");
    run_in(&sandbox, &deep, &["--log", "from below", "--scope", "api"])
        .code(0)
        .stdout_contains(&native("/.unlazy/api/status.log\n"));
    assert!(sandbox.read(".unlazy/api/status.log").contains("from below"));
    run_in(&sandbox, &deep, &["--claim", "--scope", "api"]).code(0).stdout_contains("CLAIMED 1 path(s) for api/GATES");
    run_in(&sandbox, &deep, &["dispatch", "open", "--scope", "api", "--wave", "w1", "--leaf", "a"])
        .code(0)
        .stdout_is("OPEN w1 (0/1 started, 0/1 returned)\n");
    assert!(fs::symlink_metadata(sandbox.path(".unlazy/api/dispatch.json")).is_ok());
    assert!(fs::symlink_metadata(deep.join(".unlazy")).is_err(), "state was written below the root");
}

#[test]
fn the_stop_hook_holds_an_agent_that_moved_into_a_subdirectory() {
    let sandbox = repository();
    let payload = serde_json::json!({ "session_id": "s1", "cwd": sandbox.path("src/deep") }).to_string();
    let decision = sandbox.run_with(sandbox.cmd().args(["hook", "stop"]).write_stdin(payload)).code(0).stdout_json();
    assert_eq!(decision["decision"], "block", "{decision}");
    assert!(decision["reason"].as_str().unwrap().contains("GATES:G1"), "{decision}");
}

#[test]
fn cwd_from_a_subdirectory_is_taken_from_where_the_user_is() {
    let sandbox = repository();
    sandbox.write("GATES.md", &gate("G1", sh::PWD, &native("src/deep")));
    let deep = sandbox.path("src/deep");
    run_in(&sandbox, &deep, &["--approve", "--cwd", "."]).code(0).stdout_contains("\nALL MET (1 met)\n");
    assert!(sandbox.read("GATES.md").contains(&format!("cwd={};", deep.display())), "{}", sandbox.read("GATES.md"));
}

/// A repository with a pipeline `api` of two leaves (leaf-a unmet) in a
/// sealed wave whose subagents were launched as `agent-a1` and `agent-b2`,
/// a submodule checkout at `vendor/lib` (its `.git` a file pointing into
/// the superproject's `.git/modules/`) and a `docs/` folder with a
/// `gates/` of its own.
fn repository_with_a_dispatched_pipeline() -> Sandbox {
    let sandbox = Sandbox::new();
    fs::create_dir_all(sandbox.path(".git/modules/vendor/lib")).unwrap();
    sandbox.write("vendor/lib/.git", "gitdir: ../../.git/modules/vendor/lib\n");
    sandbox.write("vendor/lib/src/lib.rs", "");
    sandbox.write("docs/gates/index.html", "<p>how our release gates work</p>\n");
    sandbox.write(".unlazy/api/GATES.md", "- [x] R1: read\n  EVIDENCE: seen\n");
    sandbox.write(".unlazy/api/gates/leaf-a.md", "OWNS: src/a/**\n\n- [ ] A1: unmet\n");
    sandbox.write(".unlazy/api/gates/leaf-b.md", "OWNS: src/b/**\n\n- [x] B1: met\n  EVIDENCE: seen\n");
    let dispatch = |args: &[&str]| {
        let mut command = sandbox.cmd();
        command.arg("dispatch").args(args).args(["--scope", "api", "--wave", "w1"]);
        sandbox.run_with(&mut command).code(0).stdout_contains(" w1");
    };
    dispatch(&["open", "--leaf", "leaf-a", "--leaf", "leaf-b"]);
    dispatch(&["start", "--leaf", "leaf-a", "--handle", "agent-a1"]);
    dispatch(&["start", "--leaf", "leaf-b", "--handle", "agent-b2"]);
    dispatch(&["seal"]);
    sandbox
}

/// The hook's reply to a stop reported from `cwd`: the driver's `Stop`, or
/// a `SubagentStop` of `agent`.
fn stop_from(sandbox: &Sandbox, cwd: &Path, session: &str, agent: Option<&str>) -> serde_json::Value {
    let mut payload = serde_json::json!({ "session_id": session, "cwd": cwd, "hook_event_name": "Stop" });
    if let Some(agent) = agent {
        payload["hook_event_name"] = "SubagentStop".into();
        payload["agent_id"] = agent.into();
    }
    let run = sandbox.run_with(sandbox.cmd().args(["hook", "stop"]).write_stdin(payload.to_string()));
    let out = run.code(0).stderr_is("").into_stdout();
    serde_json::from_str(out.trim()).unwrap_or(serde_json::Value::Null)
}

#[test]
fn the_stop_hook_finds_the_repository_from_a_submodule_a_gates_folder_and_the_pipeline_state() {
    let sandbox = repository_with_a_dispatched_pipeline();
    // The scope's gates and its dispatch wave for the driver, its own leaf for the subagent.
    let driver = ["unlazy [scope api]: ", "leaf-a:A1", "dispatch:w1"];
    let subagent = ["unlazy [scope api, leaf leaf-a]: ", "leaf-a:A1"];
    let names = |reply: &serde_json::Value, wanted: &[&str]| {
        let reason = reply["reason"].as_str().unwrap_or_default();
        reason.starts_with(wanted[0]) && wanted.iter().all(|part| reason.contains(part))
    };
    // The positive case, from the root, then from each place an agent may have moved to.
    for (at, place) in
        ["", "vendor/lib", "vendor/lib/src", "docs", ".unlazy/api", ".unlazy/api/gates"].iter().enumerate()
    {
        let cwd = sandbox.path(place);
        let session = format!("driver-{at}");
        let reply = stop_from(&sandbox, &cwd, &session, None);
        assert_eq!(reply["decision"], "block", "driver from {place:?}: {reply}");
        assert!(names(&reply, &driver), "driver from {place:?}: {reply}");
        let reply = stop_from(&sandbox, &cwd, &session, Some("agent-a1"));
        assert_eq!(reply["decision"], "block", "subagent from {place:?}: {reply}");
        assert!(names(&reply, &subagent) && !names(&reply, &driver), "subagent from {place:?}: {reply}");
        // The met leaf's subagent may stop, wherever it stopped from.
        assert_eq!(stop_from(&sandbox, &cwd, &session, Some("agent-b2")), serde_json::Value::Null, "{place:?}");
    }
}
