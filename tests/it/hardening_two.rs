//! Reproducers of the second adversarial review (issue 19): forged workflow
//! commands, linked pipelines past the Stop hook, misleading messages,
//! relative shells, every `--`, `--help` beside an unknown option, and the
//! hook's own command-line mistakes.

use std::fs;
use std::os::unix::fs::symlink;

use crate::common::{gate, Sandbox};

/// No line a runner reads may open a workflow command.
fn assert_no_workflow_command(text: &str) {
    for line in text.lines() {
        assert!(!line.trim_start().starts_with("::"), "a workflow command got through: {line:?}\n{text}");
    }
}

#[test]
fn lint_cannot_forge_workflow_commands() {
    let sandbox = Sandbox::new();
    sandbox.write("::error title=FORGED::x.md", "- [ ] G1: x\n  CHECK: true\n  EXPECT: \n");
    let outside_actions = sandbox.run(&["lint", "::error title=FORGED::x.md"]);
    let outside_actions = outside_actions.code(2).stdout_contains("LINT NOT RUN").stderr_contains(":1: error: gate G1");
    // Outside Actions the name is printed as it is: the positive case.
    assert!(outside_actions.stderr().starts_with("::error title=FORGED::x.md:1:"), "{}", outside_actions.stderr());

    let run = sandbox.run_with(sandbox.cmd().env("GITHUB_ACTIONS", "true").args(["lint", "::error title=FORGED::x.md"]));
    let run = run.code(2).stdout_contains("LINT NOT RUN").stderr_contains("%3A:error title=FORGED::x.md:1: error:");
    assert_no_workflow_command(run.stdout());
    assert_no_workflow_command(run.stderr());
    let missing =
        sandbox.run_with(sandbox.cmd().env("GITHUB_ACTIONS", "true").args(["lint", "::warning::missing.md"]));
    let missing = missing.code(2).stdout_contains("LINT NOT RUN").stderr_contains("no such gate file");
    assert_no_workflow_command(missing.stderr());
}

#[test]
fn junit_neutralises_workflow_commands_from_check_output() {
    let sandbox = Sandbox::new();
    let check = "printf '::error title=FORGED::y\\n  ::add-mask::secret\\n'; exit 1";
    sandbox.write("GATES.md", &gate("G1", check, "never"));
    let run = sandbox.run(&["--approve", "--format", "junit"]);
    let run = run.code(1).stdout_contains("<failure").stderr_contains("FAIL GATES:G1");
    assert!(run.stdout().contains("%3A:error title=FORGED::y"), "{}", run.stdout());
    assert!(run.stdout().contains("  %3A:add-mask::secret"), "{}", run.stdout());
    assert_no_workflow_command(run.stdout());
}

const HOOK_PAYLOAD: &str = r#"{"session_id":"s1","hook_event_name":"Stop","stop_hook_active":false}"#;

fn stop_hook(sandbox: &Sandbox) -> crate::common::Run {
    sandbox.run_with(sandbox.cmd().args(["hook", "stop"]).write_stdin(HOOK_PAYLOAD))
}

#[test]
fn a_linked_pipeline_blocks_the_stop_hook_when_no_scope_is_named() {
    let sandbox = Sandbox::new();
    let elsewhere = tempfile::tempdir().unwrap();
    fs::write(elsewhere.path().join("GATES.md"), gate("G1", "echo ok", "ok")).unwrap();
    // The positive case first: a real pipeline with unmet gates blocks.
    sandbox.write(".unlazy/api/GATES.md", &gate("G1", "echo ok", "ok"));
    stop_hook(&sandbox).code(0).stdout_contains("unlazy [scope api]: 1 gate/ledger item(s) need work: GATES:G1.");

    fs::remove_dir_all(sandbox.path(".unlazy/api")).unwrap();
    symlink(elsewhere.path(), sandbox.path(".unlazy/api")).unwrap();
    sandbox.run(&["--status"]).code(2).stderr_contains("no gate files found");
    stop_hook(&sandbox).code(0).stdout_contains(r#""decision":"block""#).stdout_contains("discovery:PARSE");

    fs::remove_dir_all(sandbox.path(".unlazy")).unwrap();
    fs::create_dir(elsewhere.path().join("api")).unwrap();
    fs::write(elsewhere.path().join("api/GATES.md"), gate("G1", "echo ok", "ok")).unwrap();
    symlink(elsewhere.path(), sandbox.path(".unlazy")).unwrap();
    sandbox.run(&["--status"]).code(2).stderr_contains("no gate files found");
    stop_hook(&sandbox).code(0).stdout_contains(r#""decision":"block""#).stdout_contains("discovery:PARSE");

    // Root ledgers are what --status judges then, and so does the hook.
    sandbox.write("GATES.md", "- [x] M1: done by hand\n  EVIDENCE: reviewed\n");
    sandbox.run(&["--status"]).code(0).stdout_contains("ALL MET (1 met)");
    stop_hook(&sandbox).code(0).stdout_is("");
}

#[test]
fn a_missing_gate_cwd_names_its_line_and_not_help() {
    let sandbox = Sandbox::new();
    let path = sandbox.write("GATES.md", "- [ ] G1: x\n  CHECK: echo ok\n  EXPECT: ok\n  CWD: nope\n");
    let expected = format!(
        "{}:4: error: gate GATES:G1 CWD does not exist: {}\n",
        path.display(),
        sandbox.path("nope").display()
    );
    sandbox.run(&[]).code(2).stderr_is(&expected);
    assert_eq!(sandbox.approval_count(), 0);
}

#[test]
fn a_store_inside_the_root_is_not_a_usage_error() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "echo ok", "ok"));
    let inside = sandbox.path("store");
    let expected =
        format!("gate-check: error: UNLAZY_APPROVAL_DIR must be outside the repository root {}\n", sandbox.root.display());
    sandbox.run_with(sandbox.cmd().env("UNLAZY_APPROVAL_DIR", &inside)).code(2).stderr_is(&expected);
    // A real usage mistake still points at --help.
    sandbox.run(&["--status", "--reverify"]).code(2).stderr_contains("run gate-check --help for usage");
}

#[test]
fn a_shell_found_on_a_relative_path_entry_is_shown_and_approved_absolute() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "echo ok", "ok"));
    fs::create_dir(sandbox.path("bin")).unwrap();
    symlink("/bin/sh", sandbox.path("bin/sh")).unwrap();
    let absolute = sandbox.path("bin/sh");
    let run = sandbox.run_with(sandbox.cmd().env("PATH", "bin:/usr/bin:/bin").args(["--approve", "--shell", "sh"]));
    let run = run.code(0).stdout_contains(&format!("    SHELL: {}\n", absolute.display()));
    assert!(run.stdout().contains(&format!("RUN  GATES:G1 shell={} ", absolute.display())), "{}", run.stdout());
    assert!(sandbox.read("GATES.md").contains(&format!("; shell={};", absolute.display())));
}

#[test]
fn a_newline_in_path_is_escaped_alike_everywhere() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "echo ok", "ok"));
    let path = "/usr/bin:/bin:/no\nsuch";
    let run = sandbox.run_with(sandbox.cmd().env("PATH", path).arg("--approve"));
    let run = run.code(0).stdout_contains("    PATH: /usr/bin:/bin:/no\\x0Asuch\n");
    assert!(run.stdout().contains(" PATH=/usr/bin:/bin:/no\\x0Asuch\n"), "{}", run.stdout());
}

#[test]
fn every_double_dash_is_skipped_as_the_node_tool_does() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "echo ok", "ok"));
    sandbox.run(&["--status", "--", "GATES.md"]).code(1).stdout_contains("UNMET: 1");
    sandbox.run(&["--status", "--", "--", "GATES.md"]).code(1).stdout_contains("UNMET: 1");
    // After the first `--`, an option spelling is still a file name.
    sandbox.run(&["--status", "--", "--", "--reverify"]).code(2).stderr_contains("no such gate file");
}

#[test]
fn help_beside_an_unknown_option_is_a_usage_error() {
    let sandbox = Sandbox::new();
    sandbox.run(&["--help"]).code(0).stdout_contains("Usage: gate-check");
    sandbox.run(&["--status", "--help"]).code(0).stdout_contains("Usage: gate-check");
    sandbox.run(&["--help", "--bogus"]).code(2).stderr_contains("unexpected argument '--bogus'");
    sandbox.run(&["-h", "--bogus"]).code(2).stderr_contains("unexpected argument '--bogus'");
    // After `--` the spelling is a file name; help still wins.
    sandbox.run(&["--help", "--", "--bogus"]).code(0).stdout_contains("Usage: gate-check");
}

#[test]
fn a_broken_hook_command_line_says_what_is_wrong_and_never_blocks() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "echo ok", "ok"));
    stop_hook(&sandbox).code(0).stdout_contains(r#""decision":"block""#);
    let missing = sandbox.run_with(sandbox.cmd().arg("hook").write_stdin(HOOK_PAYLOAD));
    missing.code(0).stderr_is("gate-check hook: a hook event is required: gate-check hook stop; not blocking\n");
    let bogus = sandbox.run_with(sandbox.cmd().args(["hook", "stop", "--bogus"]).write_stdin(HOOK_PAYLOAD));
    bogus.code(0).stderr_is("gate-check hook: unexpected argument '--bogus' found; not blocking\n");
}
