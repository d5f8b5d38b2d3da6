//! Machine output: the JSON document, JUnit XML and GitHub Actions
//! annotations, and the guarantee that pipes and CI logs get no colour or
//! progress escapes.

use crate::common::{gate, sh, Sandbox};
use serde_json::Value;

fn ledger(sandbox: &Sandbox) {
    let mut text = String::from("# Gates\n");
    text.push_str(&gate("PASSES", "echo all good", "all good"));
    text.push_str(&gate("FAILS", &sh::then("echo nope", &sh::exit(3)), "nope"));
    text.push_str("- [x] MANUAL: reviewed by hand\n  EVIDENCE: read the diff on 2026-12-01\n");
    text.push_str("- [ ] DROPPED: no longer wanted\nABANDON: DROPPED superseded by a later plan\n");
    sandbox.write("GATES.md", &text);
}

#[test]
fn json_document_describes_every_gate() {
    let sandbox = Sandbox::new();
    ledger(&sandbox);
    // Human lines move to stderr; stdout is exactly one JSON document.
    let doc =
        sandbox.run(&["--approve", "--format", "json"]).code(1).stderr_contains("  PASS GATES:PASSES").stdout_json();
    assert_eq!(doc["schema"], 1);
    assert_eq!(doc["mode"], "approve");
    assert_eq!(doc["outcome"], "handoff-required");
    assert_eq!(doc["exitCode"], 1);
    assert_eq!(doc["summary"]["met"], 2);
    assert_eq!(doc["summary"]["unmet"], 1);
    assert_eq!(doc["summary"]["abandoned"], 1);
    assert_eq!(doc["unmet"], serde_json::json!(["GATES:FAILS"]));
    assert_eq!(doc["abandoned"], serde_json::json!(["GATES:DROPPED"]));
    let gates = doc["gates"].as_array().unwrap();
    let by_id = |id: &str| gates.iter().find(|g| g["id"] == id).unwrap().clone();
    let passes = by_id("PASSES");
    assert_eq!(passes["qualifiedId"], "GATES:PASSES");
    assert_eq!(passes["state"], "met");
    assert_eq!(passes["line"], 2);
    assert_eq!(passes["check"]["status"], "pass");
    assert_eq!(passes["check"]["exit"], 0);
    assert!(passes["check"]["durationMs"].is_u64());
    assert_eq!(passes["definitionDigest"].as_str().unwrap().len(), 64);
    let fails = by_id("FAILS");
    assert_eq!(fails["state"], "unmet");
    assert_eq!(fails["check"]["status"], "fail");
    assert_eq!(fails["check"]["exit"], 3);
    assert_eq!(fails["check"]["reason"], "non-zero exit");
    assert_eq!(by_id("MANUAL")["check"], Value::Null);
    assert_eq!(by_id("DROPPED")["state"], "abandoned");
}

#[test]
fn json_reports_errors_as_a_document_too() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", "- [ ] G1: a\n  CHECK: x\n");
    let doc: Value = sandbox.run(&["--status", "--format=json"]).code(2).stderr_contains("require both").stdout_json();
    assert_eq!(doc["outcome"], "error");
    assert!(doc["errors"][0].as_str().unwrap().contains("require both"), "{doc}");
}

#[test]
fn junit_marks_failures_and_skips() {
    let sandbox = Sandbox::new();
    ledger(&sandbox);
    let out =
        sandbox.run(&["--approve", "--format", "junit"]).code(1).stderr_contains("  FAIL GATES:FAILS").into_stdout();
    assert!(
        out.starts_with(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"gate-check\" tests=\"4\" failures=\"1\""
        ),
        "{out}"
    );
    assert_eq!(out.matches("<testcase ").count(), 4);
    assert_eq!(out.matches("<failure ").count(), 1);
    assert_eq!(out.matches("<skipped ").count(), 1);
    assert!(out.contains("name=\"FAILS: outcome FAILS\""), "{out}");
    assert!(out.contains("non-zero exit"), "{out}");
    assert!(out.trim_end().ends_with("</testsuites>"));
}

#[test]
fn github_actions_annotations_point_at_gate_lines() {
    let sandbox = Sandbox::new();
    ledger(&sandbox);
    sandbox
        .run_with(sandbox.cmd().arg("--approve").env("GITHUB_ACTIONS", "true").env("GITHUB_WORKSPACE", &sandbox.root))
        .code(1)
        .stdout_contains("::error file=GATES.md,line=6,title=gate GATES%3AFAILS::outcome FAILS: unmet (unchecked); fail: non-zero exit")
        .stdout_contains("::warning file=GATES.md,line=12,title=gate GATES%3ADROPPED::");
    // Annotations only under GitHub Actions.
    sandbox.run(&["--status"]).code(1).stdout_contains("UNMET: 1").stdout_lacks("::error");
}

#[test]
fn pipes_get_no_colour_or_progress_escapes() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("SLOW", &sh::then(&sh::sleep(2), "echo slow done"), "slow done"));
    sandbox
        .run_with(sandbox.cmd().arg("--approve").env_remove("NO_COLOR"))
        .code(0)
        .stdout_contains("\nALL MET (1 met)\n")
        .stdout_lacks("\u{1b}")
        .stdout_lacks("running for");
}

/// Runs gate-check inside a pseudo-terminal with `script(1)`. A machine
/// without `script` fails the test: terminal behaviour is never skipped.
#[cfg(unix)]
fn in_terminal(sandbox: &Sandbox, args: &str, no_color: bool) -> String {
    let script = ["/usr/bin/script", "/bin/script"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("script(1) from util-linux is required for the terminal tests");
    let inner = format!("{} {args}", assert_cmd::cargo::cargo_bin("gate-check").display());
    let mut cmd = std::process::Command::new(script);
    cmd.current_dir(&sandbox.root)
        .env("UNLAZY_APPROVAL_DIR", &sandbox.approvals)
        .env("TERM", "xterm")
        .env_remove("CI")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("NO_COLOR")
        .env_remove("UNLAZY_SHELL")
        .env_remove("UNLAZY_SCOPE")
        .args(["-qec", &inner, "/dev/null"]);
    if no_color {
        cmd.env("NO_COLOR", "1");
    }
    let output = cmd.output().expect("running script(1)");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

// Drives a terminal through script(1) (util-linux).
#[cfg(unix)]
#[test]
fn a_terminal_gets_colour_and_a_live_progress_line() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("SLOW", "sleep 1.6; printf 'slow done\\n'", "slow done"));
    let screen = in_terminal(&sandbox, "--approve", false);
    assert!(screen.contains("\x1b[32m  PASS\x1b[0m GATES:SLOW"), "{screen:?}");
    assert!(screen.contains("GATES:SLOW running for 1s"), "{screen:?}");
    assert!(screen.contains("\x1b[1m\x1b[32mALL MET\x1b[0m"), "{screen:?}");

    let plain = in_terminal(&sandbox, "--reverify", true);
    assert!(!plain.contains("\x1b[32m"), "NO_COLOR must disable colour: {plain:?}");
    assert!(plain.contains("ALL MET"), "{plain:?}");
}

#[test]
fn incomplete_waves_fail_in_junit_and_annotations() {
    let sandbox = Sandbox::new();
    sandbox.write(".unlazy/api/GATES.md", "- [x] G1: reviewed\n  EVIDENCE: read on Monday\n");
    sandbox
        .run(&["dispatch", "open", "--scope", "api", "--wave", "w3", "--leaf", "leaf-1"])
        .code(0)
        .stdout_is("OPEN w3 (0/1 started, 0/1 returned)\n");
    sandbox
        .run(&["--status", "--scope", "api", "--format", "junit"])
        .code(1)
        .stdout_contains("tests=\"2\" failures=\"1\"")
        .stdout_contains("<testsuite name=\"dispatch waves\"")
        .stdout_contains("type=\"wave-incomplete\"")
        .stderr_contains("UNMET dispatch:w3");
    sandbox
        .run_with(sandbox.cmd().args(["--status", "--scope", "api"]).env("GITHUB_ACTIONS", "true"))
        .code(1)
        .stdout_contains("::error title=dispatch wave::dispatch:w3 open (0/1 started) is incomplete");
}

#[test]
fn a_failed_run_is_annotated_in_human_mode_too() {
    let sandbox = Sandbox::new();
    sandbox
        .run_with(sandbox.cmd().args(["--status", "missing.md"]).env("GITHUB_ACTIONS", "true"))
        .code(2)
        .stdout_contains("::error title=gate-check::no such gate file:")
        .stderr_contains("no such gate file");
}
