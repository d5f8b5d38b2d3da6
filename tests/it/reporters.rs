//! What every reporter writes is sanitized: machine documents carry no
//! control or bidi character a ledger put in, and under GitHub Actions no
//! ledger-controlled text can start a workflow command.

use crate::common::Sandbox;

/// C0 escape, C1 next-line, a bidi override and an isolate: all must go.
const HOSTILE_TITLE: &str = "evil \u{1b}[2J title \u{85} with \u{202e}override\u{2066} marks";
const CLEAN_TITLE: &str = "evil  [2J title   with  override  marks";

fn is_unsafe(c: char) -> bool {
    gate_check::terminal::is_unsafe(c)
}

fn all_strings(value: &serde_json::Value, found: &mut Vec<String>) {
    match value {
        serde_json::Value::String(text) => found.push(text.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|v| all_strings(v, found)),
        serde_json::Value::Object(fields) => fields.values().for_each(|v| all_strings(v, found)),
        _ => {}
    }
}

#[test]
fn json_document_carries_no_raw_or_escaped_control_or_bidi_character() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &format!("- [ ] G1: {HOSTILE_TITLE}\n"));
    let run =
        sandbox.run(&["--status", "--format", "json"]).code(1).stdout_contains("\"title\"").stderr_contains("UNMET: 1");
    assert!(!run.stdout().chars().any(|c| c != '\n' && is_unsafe(c)), "{:?}", run.stdout());
    let document: serde_json::Value = serde_json::from_str(run.stdout()).unwrap();
    assert_eq!(document["gates"][0]["title"], CLEAN_TITLE);
    let mut strings = Vec::new();
    all_strings(&document, &mut strings);
    assert!(strings.iter().all(|s| !s.chars().any(is_unsafe)), "{strings:?}");
}

#[test]
fn junit_document_carries_no_control_or_bidi_character() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &format!("- [ ] G1: {HOSTILE_TITLE}\n"));
    let run = sandbox
        .run(&["--status", "--format", "junit"])
        .code(1)
        .stdout_contains("<testsuites")
        .stderr_contains("UNMET: 1");
    assert!(!run.stdout().chars().any(|c| c != '\n' && is_unsafe(c)), "{:?}", run.stdout());
    assert!(run.stdout().contains(&format!("name=\"G1: {CLEAN_TITLE}\"")), "{}", run.stdout());
}

#[test]
fn ledger_file_names_cannot_forge_or_silence_workflow_commands() {
    let sandbox = Sandbox::new();
    sandbox.write("::stop-commands::tok.md", "- [ ] G1: one\n");
    sandbox.write("::error title=FAKE::x.md", "- [ ] G1: two\n");
    let workspace = sandbox.root.to_str().unwrap();
    sandbox
        .run_with(
            sandbox
                .cmd()
                .env("GITHUB_ACTIONS", "true")
                .env("GITHUB_WORKSPACE", workspace)
                .args(["--status", "::stop-commands::tok.md", "::error title=FAKE::x.md"]),
        )
        .code(1)
        .stdout_is(
            "  UNMET ::stop-commands::tok:G1 (unchecked): one\n\
             %3A:stop-commands::tok.md: 1 gates\n\
             \x20 UNMET ::error title=FAKE::x:G1 (unchecked): two\n\
             %3A:error title=FAKE::x.md: 1 gates\n\
             UNMET: 2 (met: 0)\n\
             \x20 %3A:stop-commands::tok:G1, ::error title=FAKE::x:G1\n\
             \x20 manual: ::stop-commands::tok:G1, ::error title=FAKE::x:G1 need a person: after checking by hand, tick \
             the box and write EVIDENCE: with what was seen (gate-check never runs a gate without CHECK)\n\
             ::error file=%3A%3Astop-commands%3A%3Atok.md,line=1,title=gate %3A%3Astop-commands%3A%3Atok%3AG1::one: unmet (unchecked)\n\
             ::error file=%3A%3Aerror title=FAKE%3A%3Ax.md,line=1,title=gate %3A%3Aerror title=FAKE%3A%3Ax%3AG1::two: unmet (unchecked)\n",
        );
    // Outside GitHub Actions the lines stay the Node tool's.
    sandbox.run(&["--status", "::stop-commands::tok.md"]).code(1).stdout_is(
        "  UNMET ::stop-commands::tok:G1 (unchecked): one\n::stop-commands::tok.md: 1 gates\nUNMET: 1 (met: 0)\n  \
             ::stop-commands::tok:G1\n  manual: ::stop-commands::tok:G1 needs a person: after checking by hand, tick \
             the box and write EVIDENCE: with what was seen (gate-check never runs a gate without CHECK)\n",
    );
}

#[test]
fn machine_format_under_github_actions_sends_annotations_to_stderr_after_human_lines() {
    let sandbox = Sandbox::new();
    sandbox.write("::x.md", "- [ ] G1: one\n");
    let run = sandbox
        .run_with(sandbox.cmd().env("GITHUB_ACTIONS", "true").args(["--status", "--format", "json", "::x.md"]))
        .code(1)
        .stdout_contains("\"outcome\": \"unmet\"")
        .stderr_contains("%3A:x.md: 1 gates\n");
    assert!(
        run.stderr().ends_with("::error file=%3A%3Ax.md,line=1,title=gate %3A%3Ax%3AG1::one: unmet (unchecked)\n"),
        "{}",
        run.stderr()
    );
}
