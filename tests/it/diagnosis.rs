//! Diagnosing failures: `--show-output` prints a failed check's output, the
//! JSON and JUnit documents carry its tail, and `--gate` runs and judges
//! only the chosen gates.

use serde_json::Value;

use crate::common::{gate, Sandbox};

/// Thirty lines of noise, the line that explains the failure, then two
/// more: the console summary keeps the first six and last two lines only.
/// cmd.exe cannot print an escape character, so there it prints the last
/// three lines from a file (`TAIL`, which `ledger` writes).
const FAILING: &str = if cfg!(windows) {
    "for /l %i in (0,1,29) do @echo noise %i& type tail.txt& exit /b 1"
} else {
    "i=0; while [ $i -lt 30 ]; do echo noise $i; i=$((i+1)); done; \
     printf 'AssertionError: 1 != 2 \\033[2J\\n'; echo Ran 1 test; echo FAILED; exit 1"
};
const TAIL: &str = "AssertionError: 1 != 2 \x1b[2J\nRan 1 test\nFAILED\n";

fn ledger(sandbox: &Sandbox) -> String {
    std::fs::write(sandbox.path("tail.txt"), TAIL).unwrap();
    let text = format!("{}{}", gate("PASSES", "echo ok", "ok"), gate("FAILS", FAILING, "OK"));
    sandbox.write("GATES.md", &text);
    text
}

#[test]
fn show_output_prints_the_whole_failure_and_the_default_stays_the_summary() {
    let sandbox = Sandbox::new();
    ledger(&sandbox);
    // By default: the summary keeps the line that looks like the failure,
    // and says once how to see the rest.
    let run = sandbox.run(&["--approve"]).code(1).stdout_contains(
        "  FAIL GATES:FAILS: outcome FAILS\n       exit=1; EXPECT=not matched; output=noise 0 | ... | AssertionError: 1 != 2  \
         [2J | Ran 1 test | FAILED\n       hint: run again with --show-output to see what a failed check printed\n",
    );
    assert!(!run.stdout().contains("noise 29"), "the default output is the summary: {}", run.stdout());

    let run = sandbox.run(&["--show-output"]).code(1).stdout_contains(
        "; EXPECT=not matched; output=noise 0 | ... | AssertionError: 1 != 2  [2J | Ran 1 test | FAILED\n       \
         output (33 lines):\n       | noise 0\n",
    );
    assert!(!run.stdout().contains("hint:"), "{}", run.stdout());
    // Sanitized: the escape sequence reaches the terminal as a space.
    let tail = "       | noise 29\n       | AssertionError: 1 != 2  [2J\n       | Ran 1 test\n       | FAILED\nGATES.md: 2 gates\n";
    assert!(run.stdout().contains(tail), "{}", run.stdout());
    assert!(!run.stdout().contains("| ok"), "a passing check's output is not shown: {}", run.stdout());
}

#[test]
fn show_output_says_when_it_cut_the_output() {
    let sandbox = Sandbox::new();
    let long = if cfg!(windows) { "for /l %i in (1,1,300) do @echo %i& exit /b 1" } else { "seq 1 300; exit 1" };
    sandbox.write("GATES.md", &gate("LONG", long, "never"));
    let run = sandbox
        .run(&["--approve", "--show-output"])
        .code(1)
        .stdout_contains("       output (last 200 of 300 lines, cut):\n       | 101\n");
    assert!(run.stdout().contains("       | 300\nGATES.md: 1 gates\n"), "{}", run.stdout());
    assert!(!run.stdout().contains("| 100\n"), "{}", run.stdout());
}

#[test]
fn json_carries_the_sanitized_output_tail_of_a_failed_check() {
    let sandbox = Sandbox::new();
    ledger(&sandbox);
    let run = sandbox
        .run(&["--approve", "--format", "json"])
        .code(1)
        .stderr_contains("  FAIL GATES:FAILS")
        .stdout_contains("\"outputTail\"");
    let doc: Value = serde_json::from_str(run.stdout()).unwrap();
    let by_id = |id: &str| doc["gates"].as_array().unwrap().iter().find(|g| g["id"] == id).unwrap().clone();
    let tail = &by_id("FAILS")["check"]["outputTail"];
    assert_eq!(tail["totalLines"], 33);
    assert_eq!(tail["truncated"], false);
    let lines: Vec<&str> = tail["lines"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert_eq!(lines[lines.len() - 3..], ["AssertionError: 1 != 2  [2J", "Ran 1 test", "FAILED"]);
    assert_eq!(by_id("FAILS")["check"]["reason"], "non-zero exit", "the reason field is unchanged");
    assert!(by_id("PASSES")["check"].get("outputTail").is_none());
    assert!(by_id("PASSES").get("selected").is_none(), "no selection, no selected field");
}

#[test]
fn junit_failure_body_holds_the_output_tail_line_by_line() {
    let sandbox = Sandbox::new();
    ledger(&sandbox);
    let body = "type=\"unmet\">outcome FAILS: unmet (unchecked); fail: non-zero exit\n\noutput (33 lines):\nnoise 0\n";
    sandbox
        .run(&["--approve", "--format", "junit"])
        .code(1)
        .stderr_contains("  FAIL GATES:FAILS")
        .stdout_contains(body)
        .stdout_contains("noise 29\nAssertionError: 1 != 2  [2J\nRan 1 test\nFAILED</failure>");
}

#[test]
fn gate_runs_only_the_chosen_gates_and_the_verdict_counts_only_them() {
    let sandbox = Sandbox::new();
    let text = ledger(&sandbox);
    sandbox.run(&["--approve", "--gate", "PASSES"]).code(0).stdout_contains("ALL MET (1 met, not selected: 1)\n");
    assert_eq!(sandbox.approval_count(), 1, "the unselected gate was not approved");
    let after = sandbox.read("GATES.md");
    let untouched = gate("FAILS", FAILING, "OK");
    assert!(after.ends_with(&untouched) && after != text, "{after}");

    sandbox
        .run(&["--status", "--gate", "GATES:FAILS"])
        .code(1)
        .stdout_is("  UNMET GATES:FAILS (unchecked): outcome FAILS\nGATES.md: 2 gates\nUNMET: 1 (met: 0, not selected: 1)\n  GATES:FAILS\n");
    sandbox.run(&["--status"]).code(1).stdout_contains("UNMET: 1 (met: 1)\n");
}

#[test]
fn a_qualified_gate_id_picks_one_ledger_and_a_plain_one_every_ledger() {
    let sandbox = Sandbox::new();
    sandbox.write("gates/leaf-1.md", &gate("G1", "echo ok", "ok"));
    sandbox.write("gates/leaf-2.md", &gate("G1", "echo ok", "ok"));
    sandbox
        .run(&["--approve", "--gate", "leaf-1:G1"])
        .code(0)
        .stdout_contains("  PASS leaf-1:G1: outcome G1\n")
        .stdout_contains("ALL MET (1 met, not selected: 1)\n");
    assert!(sandbox.read("gates/leaf-2.md").contains("EVIDENCE: pending"));
    sandbox
        .run(&["--approve", "--gate", "G1", "--format", "junit"])
        .code(0)
        .stderr_contains("ALL MET (2 met)\n")
        .stdout_contains("tests=\"2\" failures=\"0\" errors=\"0\" skipped=\"0\"");
}

#[test]
fn unselected_gates_are_skipped_in_junit_and_not_annotated() {
    let sandbox = Sandbox::new();
    ledger(&sandbox);
    sandbox
        .run_with(sandbox.cmd().env("GITHUB_ACTIONS", "true").args([
            "--approve",
            "--gate",
            "PASSES",
            "--format",
            "junit",
        ]))
        .code(0)
        .stderr_contains("ALL MET (1 met, not selected: 1)\n")
        .stderr_lacks("::error")
        .stdout_contains("failures=\"0\" errors=\"0\" skipped=\"1\"")
        .stdout_contains("<skipped message=\"not selected (--gate)\"/>");
}

#[test]
fn an_unknown_gate_is_a_usage_error_that_changes_nothing() {
    let sandbox = Sandbox::new();
    let text = ledger(&sandbox);
    sandbox
        .run(&["--approve", "--gate", "PASSES", "--gate", "leaf-9:PASSES"])
        .code(2)
        .stderr_is("gate-check: error: unknown --gate \"leaf-9:PASSES\": no targeted ledger has that gate\nrun gate-check --help for usage\n");
    assert_eq!(sandbox.read("GATES.md"), text);
    assert_eq!(sandbox.approval_count(), 0);
    sandbox
        .run(&["--list-scopes", "--gate", "A"])
        .code(2)
        .stderr_contains("--list-scopes cannot be combined with --gate or --show-output");
}
