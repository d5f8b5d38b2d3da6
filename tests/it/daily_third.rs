//! The daily experience, third pass (issue 35), through the real binary:
//! what a new user tripped over on a real project, each with the case that
//! worked already beside it.

use crate::common::Sandbox;

#[test]
fn a_misspelled_attribute_is_warned_about_at_its_line_by_every_command_that_reads_the_ledger() {
    let sandbox = Sandbox::new();
    let ledger = "OWNS: src/**\n\n- [ ] T1: the tests pass\n  Check: make test\n  Expect: ok\n";
    // The positive: the same ledger spelled right gives no warning.
    sandbox.write("GATES.md", &ledger.replace("Check", "CHECK").replace("Expect", "EXPECT"));
    sandbox.run(&["--status", "-q"]).code(1).stdout_contains("UNMET: 1 (met: 0)");
    sandbox.write("GATES.md", ledger);
    let path = sandbox.path("GATES.md").display().to_string();
    let warnings = format!(
        "{path}:4: warning: gate T1: Check: is not an attribute, so gate-check reads this line as prose: did you \
         mean CHECK:?\n{path}:5: warning: gate T1: Expect: is not an attribute, so gate-check reads this line as \
         prose: did you mean EXPECT:?\n"
    );
    // The decision is the Node tool's: T1 is a manual gate.
    sandbox.run(&["--status", "-q"]).code(1).stdout_contains("manual: GATES:T1 needs a person").stderr_is(&warnings);
    // A run reads the ledger again after its checks, and warns again, as the Node tool does.
    sandbox.run(&["-q"]).code(1).stdout_contains("UNMET: 1 (met: 0)").stderr_is(&warnings.repeat(2));
    sandbox.run(&["tree"]).code(1).stdout_contains("GATES.md").stderr_is(&warnings);
    sandbox.write(".unlazy/api/gates/leaf-1.md", ledger);
    let leaf = sandbox.path(".unlazy/api/gates/leaf-1.md").display().to_string();
    sandbox
        .run(&["--claim", "--scope", "api", "--leaf", "leaf-1"])
        .code(0)
        .stdout_contains("CLAIMED 1 path(s)")
        .stderr_is(&warnings.replace(&path, &leaf));
    // lint names the line beside its [manual-gate].
    let lint = sandbox.run(&["lint", "GATES.md"]).code(0).into_stdout();
    assert!(lint.contains("GATES.md:3: WARN T1: no CHECK, so this outcome is judged by hand"), "{lint}");
    assert!(
        lint.contains(
            "GATES.md:4: WARN T1: Check: is not an attribute, so gate-check reads this line as prose: did you mean \
             CHECK:? [misspelled-attribute]"
        ),
        "{lint}"
    );
    sandbox
        .run(&["lint", "--allow", "misspelled-attribute", "GATES.md"])
        .code(0)
        .stdout_lacks("misspelled")
        .into_stdout();
}

#[test]
fn a_misspelled_expect_is_named_beside_the_error_it_causes() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", "- [ ] T1: the tests pass\n  CHECK: make test\n  EXPECTS: ok\n");
    let path = sandbox.path("GATES.md").display().to_string();
    sandbox.run(&["--status"]).code(2).stderr_is(&format!(
        "{path}:3: warning: gate T1: EXPECTS: is not an attribute, so gate-check reads this line as prose: did you \
         mean EXPECT:?\n{path}:1: error: gate T1: runnable gates require both non-blank CHECK and EXPECT\n"
    ));
    let lint = sandbox.run(&["lint", "GATES.md"]).code(2).stdout_contains("LINT NOT RUN").into_stderr();
    assert!(lint.contains("GATES.md:3: WARN T1: EXPECTS: is not an attribute"), "{lint}");
    let json = sandbox.run(&["lint", "--format", "json", "GATES.md"]).code(2).stdout_json();
    let rules: Vec<&str> = json["findings"].as_array().unwrap().iter().filter_map(|f| f["rule"].as_str()).collect();
    assert_eq!(rules, ["misspelled-attribute", "parse"], "{json}");
}
