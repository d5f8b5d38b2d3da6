//! Every diagnostic in one format: `path:line: error: message` where it has a
//! place in a ledger (editors and terminals link it), `gate-check: error:`
//! otherwise, and usage mistakes naming the flags that conflict.

use crate::common::{gate, Sandbox};

const USAGE_HINT: &str = "run gate-check --help for usage";

#[test]
fn a_path_shaped_expect_gets_a_hint_instead_of_only_a_regex_error() {
    let sandbox = Sandbox::new();
    let text = gate("G1", "command -v env", "/usr/bin/env");
    let path = sandbox.write("GATES.md", &text);
    sandbox.run(&["--status"]).code(2).stderr_is(&format!(
        "{}:1: error: gate G1: invalid EXPECT regex: Invalid flags supplied to RegExp constructor 'env'; \
         hint: EXPECT is read as the regex /usr/bin/ with flags \"env\"; to match the text /usr/bin/env, \
         drop the leading slash (usr/bin/env) or escape the slashes (/\\/usr\\/bin\\/env/)\n",
        path.display()
    ));
    assert_eq!(sandbox.read("GATES.md"), text);
    sandbox.write("GATES.md", &gate("G1", "command -v env", "/x+/i"));
    sandbox.run(&["--status"]).code(1).stdout_contains("UNMET: 1");
}

#[test]
fn ledger_warnings_and_invalid_utf8_carry_path_and_line() {
    let sandbox = Sandbox::new();
    let path = sandbox.write("GATES.md", &gate("G1", "command -v env", "/usr/bin/"));
    sandbox.run(&["--status"]).code(1).stdout_contains("UNMET: 1").stderr_contains(&format!(
        "{}: warning: gate G1: EXPECT \"/usr/bin/\" is read as a regular expression",
        path.display()
    ));
    std::fs::write(&path, b"# Gates\n\n- [ ] G1: caf\xe9\n").unwrap();
    sandbox.run(&["--status"]).code(2).stderr_is(&format!("{}:3: error: invalid UTF-8\n", path.display()));
}

#[test]
fn usage_errors_name_the_conflicting_flags() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "true", "x"));
    sandbox.run(&["--status", "--jobs", "2"]).code(2).stderr_is(&format!(
        "gate-check: error: --status cannot be combined with --jobs: it runs no checks\n{USAGE_HINT}\n"
    ));
    sandbox.run(&["--list-scopes", "--shell", "/bin/sh"]).code(2).stderr_is(&format!(
        "gate-check: error: --list-scopes cannot be combined with --shell: it runs no checks\n{USAGE_HINT}\n"
    ));
}

#[test]
fn lint_reports_unusable_ledgers_in_the_same_format() {
    let sandbox = Sandbox::new();
    sandbox.run(&["lint"]).code(2).stderr_is(&format!(
        "gate-check: error: no gate files found (looked for .unlazy/<scope>/, then GATES.md and gates/*.md under {})\n",
        sandbox.root.display()
    ));
    sandbox.write("broken.md", "# Gates\n\n- [ ] no explicit id here\n");
    sandbox
        .run(&["lint", "broken.md"])
        .code(2)
        .stdout_is("LINT NOT RUN: 1 problem(s) reading or parsing the ledgers\n")
        .stderr_is("broken.md:3: error: gate needs an explicit ID followed by a colon\n");
}
