//! What a new user trips over, through the real binary: a pipeline chosen
//! on its own says which root ledgers it left out, and unmet manual gates
//! are explained once.

use crate::common::{gate, sh, Sandbox};

const MANUAL: &str = "- [ ] M1: a person reads the release notes\n";
const MET: &str = "- [x] A1: done\n  EVIDENCE: seen\n";

#[test]
fn a_pipeline_chosen_on_its_own_names_the_root_ledgers_it_left_out() {
    let sandbox = Sandbox::new();
    sandbox.write(".unlazy/api/GATES.md", MET);
    // Without root ledgers there is nothing to say.
    sandbox.run(&["--status", "-q"]).code(0).stdout_is("ALL MET (1 met) [scope api]\n");
    sandbox.write("GATES.md", &gate("G1", sh::FALSE, "x"));
    sandbox.write("gates/leaf-1.md", &gate("L1", sh::FALSE, "x"));
    let note = "gate-check: note: checking .unlazy/api/, the only pipeline (no --scope given); not checked: GATES.md, \
                gates/leaf-1.md (check them with: gate-check GATES.md gates/leaf-1.md)\n"
        .replace("gates/", &crate::common::native("gates/"));
    // The decision stays the Node tool's; the run says what it left out,
    // and the summary line on stdout says they are not met.
    let summary = "ALL MET (1 met) [scope api]; root ledgers GATES.md, gates/leaf-1.md not judged: 2 unmet\n"
        .replace("gates/", &crate::common::native("gates/"));
    sandbox.run(&["--status", "-q"]).code(0).stdout_is(&summary).stderr_is(&note);
    let document = sandbox.run(&["--status", "--format", "json"]).code(0).stderr_contains(&note).stdout_json();
    assert_eq!(
        document["notTargeted"],
        serde_json::json!([sandbox.path("GATES.md"), sandbox.path("gates/leaf-1.md")]),
        "{document}"
    );
    assert_eq!(document["notTargetedUnmet"], serde_json::json!(["GATES:G1", "leaf-1:L1"]), "{document}");
    // From a subdirectory the suggested command names the root.
    std::fs::create_dir(sandbox.path("src")).unwrap();
    let from_below = sandbox.run_with(sandbox.cmd().current_dir(sandbox.path("src")).args(["--status", "-q"]));
    from_below.code(0).stdout_is(&summary).stderr_contains(&format!(
        "(check them with: gate-check --root {} GATES.md {})\n",
        // A path with `\` or `:` is quoted as one shell word.
        if cfg!(windows) { format!("'{}'", sandbox.root.display()) } else { sandbox.root.display().to_string() },
        crate::common::native("gates/leaf-1.md")
    ));
    // The suggested command checks them.
    sandbox.run(&["--status", "-q", "GATES.md", "gates/leaf-1.md"]).code(1).stdout_contains("UNMET: 2 (met: 0)");
    // A scope that was asked for leaves nothing out silently.
    sandbox.run(&["--status", "-q", "--scope", "api"]).code(0).stdout_is("ALL MET (1 met) [scope api]\n");
    sandbox
        .run_with(sandbox.cmd().env("UNLAZY_SCOPE", "api").args(["--status", "-q"]))
        .code(0)
        .stdout_is("ALL MET (1 met) [scope api]\n");
    let asked = sandbox.run(&["--status", "--scope", "api", "--format", "json"]).code(0).stderr_contains("ALL MET");
    assert!(asked.stdout_json().get("notTargeted").is_none());
}

#[test]
fn unmet_manual_gates_are_explained_once_per_run() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &format!("{MANUAL}{}", gate("G1", sh::FALSE, "x")));
    sandbox.write("gates/leaf-1.md", "- [ ] M2: someone signs off\n");
    let out = sandbox.run(&["--status", "-q"]).code(1).into_stdout();
    assert_eq!(
        out,
        "  UNMET GATES:M1 (unchecked): a person reads the release notes\n  UNMET GATES:G1 (unchecked): outcome G1\n  \
         UNMET leaf-1:M2 (unchecked): someone signs off\nUNMET: 3 (met: 0)\n  GATES:M1, GATES:G1, leaf-1:M2\n  manual: GATES:M1, leaf-1:M2 need a person: after \
         checking by hand, tick the box and write EVIDENCE: with what was seen (gate-check never runs a gate without \
         CHECK)\n"
    );
    // Only runnable gates unmet: no such line.
    sandbox.write("GATES.md", &gate("G1", sh::FALSE, "x"));
    sandbox.write("gates/leaf-1.md", MET);
    sandbox
        .run(&["--status", "-q"])
        .code(1)
        .stdout_is("  UNMET GATES:G1 (unchecked): outcome G1\nUNMET: 1 (met: 1)\n  GATES:G1\n");
}

#[test]
fn junit_and_annotations_name_ledgers_relative_to_the_repository() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", sh::FALSE, "x"));
    sandbox.write("gates/leaf-1.md", &gate("L1", sh::FALSE, "x"));
    let xml = sandbox.run(&["--status", "--format", "junit"]).code(1).stderr_contains("UNMET: 2").into_stdout();
    assert!(
        xml.contains("<testsuite name=\"GATES.md\" ") && xml.contains("file=\"gates/leaf-1.md\" line=\"1\""),
        "{xml}"
    );
    assert!(!xml.contains(&sandbox.root.display().to_string()), "{xml}");
    // JSON keeps the absolute path, its own field's meaning.
    let json = sandbox.run(&["--status", "--format", "json"]).code(1).stderr_contains("UNMET: 2").stdout_json();
    assert_eq!(json["ledgers"][0]["path"], sandbox.path("GATES.md").display().to_string());
    // In GitHub Actions, relative to the workspace, which may hold the repository below it.
    let workspace = sandbox.root.parent().unwrap();
    let actions = sandbox.run_with(
        sandbox
            .cmd()
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_WORKSPACE", workspace)
            .args(["--status", "--format", "junit"]),
    );
    let xml = actions.code(1).stderr_contains("::error file=repo/GATES.md,line=1,").into_stdout();
    assert!(xml.contains("file=\"repo/gates/leaf-1.md\""), "{xml}");
}

#[test]
fn a_parse_error_in_actions_is_one_annotation_at_its_line() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", "# Gates\n\n- [ ] G1: x\nCHECK: make\n  EXPECT: ok\n  EVIDENCE: pending\n");
    let annotated = sandbox
        .run_with(sandbox.cmd().env("GITHUB_ACTIONS", "true").env("GITHUB_WORKSPACE", &sandbox.root).arg("--status"));
    annotated
        .code(2)
        .stdout_is(
            "::error file=GATES.md,line=4,title=gate-check::unindented CHECK is not attached to a gate; indent \
             attribute lines with spaces\n",
        )
        .stderr_is(&format!(
            "{}:4: error: unindented CHECK is not attached to a gate; indent attribute lines with spaces\n",
            sandbox.path("GATES.md").display()
        ));
}

#[test]
fn relative_ledger_files_are_taken_from_root_else_the_current_directory() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", MET);
    std::fs::create_dir(sandbox.path("tests")).unwrap();
    let below = || {
        let mut command = sandbox.cmd();
        command.current_dir(sandbox.path("tests"));
        command
    };
    // Never searched for: from tests/, GATES.md is tests/GATES.md.
    sandbox
        .run_with(below().args(["--status", "GATES.md"]))
        .code(2)
        .stderr_contains(&format!("{}", sandbox.path("tests/GATES.md").display()));
    sandbox.run_with(below().args(["--status", "--root", "..", "GATES.md"])).code(0).stdout_contains("ALL MET (1 met)");
    sandbox.run_with(below().args(["--status", "../GATES.md"])).code(0).stdout_contains("ALL MET (1 met)");
}
