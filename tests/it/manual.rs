//! `gate-check man`: one page per subcommand, every page it refers to
//! exists, and the sections clap cannot generate (EXIT STATUS, ENVIRONMENT,
//! FILES) are there.

use std::collections::BTreeSet;
use std::fs;

use crate::common::Sandbox;

fn pages_in(dir: &std::path::Path) -> BTreeSet<String> {
    fs::read_dir(dir).unwrap().map(|entry| entry.unwrap().file_name().into_string().unwrap()).collect()
}

/// Every `gate-check-NAME(1)` a page names, as the file name `gate-check-NAME.1`.
fn references(page: &str) -> BTreeSet<String> {
    let pattern = regex::Regex::new(r"\\fB(gate\\-check(?:\\-[a-z]+)*)\\fR\(1\)").unwrap();
    pattern.captures_iter(page).map(|c| format!("{}.1", c[1].replace("\\-", "-"))).collect()
}

#[test]
fn man_dir_writes_a_page_for_every_subcommand_and_every_reference_resolves() {
    let sandbox = Sandbox::new();
    let dir = sandbox.root.join("man/man1");
    let out = sandbox.run_with(sandbox.cmd().args(["man", "--dir"]).arg(&dir)).code(0).into_stdout();
    let written = pages_in(&dir);
    for expected in [
        "gate-check.1",
        "gate-check-lint.1",
        "gate-check-hook.1",
        "gate-check-hook-stop.1",
        "gate-check-install-hooks.1",
        "gate-check-dispatch.1",
        "gate-check-dispatch-open.1",
        "gate-check-dispatch-status.1",
        "gate-check-completions.1",
        "gate-check-man.1",
    ] {
        assert!(written.contains(expected), "{expected} missing from {written:?}");
        assert!(out.contains(&dir.join(expected).display().to_string()), "not reported: {expected}\n{out}");
    }
    assert!(!written.contains("gate-check-help.1"), "{written:?}");
    let mut referenced = BTreeSet::new();
    for name in &written {
        let text = fs::read_to_string(dir.join(name)).unwrap();
        assert!(text.contains(&format!(".TH {} 1", name.trim_end_matches(".1"))), "{name} title");
        assert!(text.contains(".SH \"EXIT STATUS\""), "{name} lacks EXIT STATUS");
        assert!(!text.contains(".SH EXTRA"), "{name} still has an EXTRA section");
        referenced.extend(references(&text));
    }
    let dangling: Vec<&String> = referenced.difference(&written).collect();
    assert!(dangling.is_empty(), "pages referred to but not written: {dangling:?}");
    assert!(referenced.contains("gate-check-hook-stop.1") && referenced.contains("gate-check.1"), "{referenced:?}");
}

#[test]
fn main_page_documents_exit_status_environment_and_files() {
    let sandbox = Sandbox::new();
    let page = sandbox.run(&["man"]).code(0).into_stdout();
    let exit_status = page.split(".SH \"EXIT STATUS\"").nth(1).expect("EXIT STATUS section");
    for code in ["\\fB0\\fR", "\\fB1\\fR", "\\fB2\\fR", "\\fB3\\fR"] {
        assert!(exit_status.contains(code), "exit status {code} missing");
    }
    let environment = page.split(".SH ENVIRONMENT").nth(1).expect("ENVIRONMENT section");
    for variable in
        ["UNLAZY_APPROVAL_DIR", "UNLAZY_SCOPE", "UNLAZY_SHELL", "NO_COLOR", "GITHUB_ACTIONS", "\\fBCI\\fR", "HOME"]
    {
        assert!(environment.contains(variable), "ENVIRONMENT lacks {variable}");
    }
    let files = page.split(".SH FILES").nth(1).expect("FILES section");
    for file in ["~/.unlazy/approved/", "GATES.md, gates/*.md", ".unlazy/locks/", ".unlazy/.gitignore"] {
        assert!(files.contains(file), "FILES lacks {file}");
    }
    // The approval note of --help survives, its exit-code paragraph does not repeat.
    let notes = page.split(".SH NOTES").nth(1).expect("NOTES section");
    assert!(notes.contains("requires prior approval") && !page.contains("exit codes:"), "{notes}");
}

#[test]
fn man_prints_one_subcommand_page_and_refuses_an_unknown_one() {
    let sandbox = Sandbox::new();
    let dir = sandbox.root.join("pages");
    sandbox.run_with(sandbox.cmd().args(["man", "--dir"]).arg(&dir)).code(0).stdout_contains("gate-check.1\n");
    for (args, file) in [
        (&["man", "hook", "stop"][..], "gate-check-hook-stop.1"),
        (&["man", "lint"][..], "gate-check-lint.1"),
        (&["man", "install-hooks"][..], "gate-check-install-hooks.1"),
    ] {
        sandbox.run(args).code(0).stdout_is(&fs::read_to_string(dir.join(file)).unwrap());
    }
    sandbox.run(&["man", "lint"]).code(0).stdout_contains("LINT FINDINGS").stdout_contains("\\fBgate\\-check\\fR(1)");
    sandbox.run(&["man", "hook", "stop"]).code(0).stdout_contains("hook\\-state.json").stdout_contains("UNLAZY_SCOPE");

    sandbox
        .run(&["man", "nope"])
        .code(2)
        .stdout_is("")
        .stderr_contains("no manual page for \"nope\"")
        .stderr_contains("hook-stop");
    sandbox
        .run_with(sandbox.cmd().args(["man", "lint", "--dir"]).arg(&dir))
        .code(2)
        .stderr_contains("error: the argument '[SUBCOMMAND]...' cannot be used with '--dir <DIR>'\n");
}
