//! Adversarial-review reproducers (issue 10): hidden characters in what an
//! approver is shown, attribute lines that silently turn a gate manual,
//! records the reader refuses, ledgers grown past the read cap, runs as
//! another user, temp files left by kills, explicit ledgers outside the
//! working directory, a linked state directory, and gates deleted mid-run.

use std::fs;

use crate::common::{exists, gate, outcome, Sandbox};

/// Runs gate-check with `args` and returns (exit code, stdout, stderr).
fn run(sandbox: &Sandbox, args: &[&str]) -> (i32, String, String) {
    outcome(&sandbox.cmd().args(args).output().expect("run gate-check"))
}

fn ledger_with_check(check: &str) -> String {
    format!("# Gates\n\n- [ ] G1: the check runs\n  CHECK: {check}\n  EXPECT: ok\n  EVIDENCE: pending\n")
}

#[test]
fn approval_prompt_and_run_line_escape_look_alike_characters() {
    let sandbox = Sandbox::new();
    fs::create_dir(sandbox.path("sub\u{a0}dir")).unwrap();
    let text = "- [ ] G1: t\n  CHECK: echo ok\u{a0}#\u{200b}; echo\tdone\n  EXPECT: ok\u{a0}#\n  CWD: sub\u{a0}dir\n";
    sandbox.write("GATES.md", text);
    let (code, out, err) = run(&sandbox, &["GATES.md"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("    CHECK: echo ok\\u{A0}#\\u{200B}; echo\\tdone\n"), "{out}");
    assert!(out.contains("    EXPECT: ok\\u{A0}#\n"), "{out}");
    assert!(out.contains("/sub\\u{A0}dir\n"), "{out}");
    assert!(!out.contains('\u{a0}') && !out.contains('\u{200b}') && !out.contains('\t'), "{out}");

    let (code, out, err) = run(&sandbox, &["--approve", "GATES.md"]);
    assert_eq!(code, 0, "{out}{err}");
    let run_line = out.lines().find(|l| l.starts_with("  RUN  ")).expect("RUN line");
    assert!(run_line.contains("/sub\\u{A0}dir PATH="), "{run_line}");
}

#[test]
fn control_and_bidi_characters_in_definitions_are_refused() {
    let cases = [
        ("CHECK", "echo ok\u{1}#; touch pwned", "\\x01"),
        ("CHECK", "echo ok\u{1b}[8m; touch pwned", "\\x1B"),
        ("CHECK", "echo ok #\u{202e}; touch pwned", "\\u{202E}"),
        ("CHECK", "echo ok\u{85}; touch pwned", "\\u{85}"),
        ("EXPECT", "ok\u{7f}", "\\x7F"),
        ("CWD", ".\u{2066}", "\\u{2066}"),
    ];
    for (key, value, shown) in cases {
        let sandbox = Sandbox::new();
        let mut attributes = vec![("CHECK", "echo ok; touch pwned"), ("EXPECT", "ok"), ("CWD", ".")];
        attributes.iter_mut().filter(|(k, _)| *k == key).for_each(|entry| entry.1 = value);
        let mut text = String::from("- [ ] G1: t\n");
        for (k, v) in &attributes {
            text.push_str(&format!("  {k}: {v}\n"));
        }
        let path = sandbox.write("GATES.md", &text);
        let line = 2 + attributes.iter().position(|(k, _)| *k == key).unwrap();
        let (code, out, err) = run(&sandbox, &["--approve", "GATES.md"]);
        assert_eq!(code, 2, "{key} {value:?}: {out}{err}");
        let expected =
            format!("{}: line {line}: {key} contains the control or bidirectional character {shown}", path.display());
        assert!(err.contains(&expected), "{key} {value:?}: {err}");
        assert!(!exists(&sandbox.path("pwned")), "{key} {value:?}: the hidden command ran");
        assert_eq!(sandbox.read("GATES.md"), text);
        assert_eq!(sandbox.approval_count(), 0);
    }
}

#[test]
fn a_tab_inside_a_check_is_allowed_and_shown() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &ledger_with_check("printf 'ok\\n'\t# tabbed"));
    let (code, out, err) = run(&sandbox, &["--approve", "GATES.md"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("    CHECK: printf 'ok\\n'\\t# tabbed\n"), "{out}");
}

#[test]
fn lint_quotes_hidden_characters_escaped() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", "- [ ] G1: the report renders\n  CHECK: echo\u{a0}READY\n  EXPECT: READY\n");
    let (_, out, err) = run(&sandbox, &["lint", "GATES.md"]);
    assert!(out.contains("echo\\u{A0}READY") && !out.contains('\u{a0}'), "{out}{err}");
}

#[test]
fn a_line_terminator_inside_an_attribute_is_an_error_not_a_manual_gate() {
    for terminator in ["\r", "\u{2028}", "\u{2029}"] {
        for (key, line) in [("CHECK", 2), ("EXPECT", 3), ("EVIDENCE", 4)] {
            let sandbox = Sandbox::new();
            let mut values =
                vec![("CHECK", "exit 1".to_string()), ("EXPECT", "never".into()), ("EVIDENCE", "seen".into())];
            values
                .iter_mut()
                .filter(|(k, _)| *k == key)
                .for_each(|entry| entry.1.push_str(&format!("{terminator}# x")));
            let mut text = String::from("- [x] G1: looks met\n");
            for (k, v) in &values {
                text.push_str(&format!("  {k}: {v}\n"));
            }
            let path = sandbox.write("GATES.md", &text);
            for args in [&["--reverify", "GATES.md"][..], &["--status", "GATES.md"]] {
                let (code, out, err) = run(&sandbox, args);
                assert_eq!(code, 2, "{key} {terminator:?} {args:?}: {out}{err}");
                assert!(!out.contains("ALL MET"), "{out}");
                let expected = format!("{}: line {line}: {key} value contains a line terminator", path.display());
                assert!(err.contains(&expected), "{key} {terminator:?}: {err}");
            }
            assert_eq!(sandbox.read("GATES.md"), text);
        }
    }
}

#[test]
fn a_line_terminator_inside_a_gate_line_is_an_error_not_a_vanished_gate() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", "- [x] G1: met\n  EVIDENCE: seen\n- [ ] G2: unmet\rhidden\n");
    let (code, out, err) = run(&sandbox, &["--status", "GATES.md"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("line 3: gate line contains a line terminator"), "{err}");
}

#[test]
fn a_byte_order_mark_does_not_hide_the_first_gate() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", "\u{feff}- [ ] G1: manual\n");
    let (code, out, err) = run(&sandbox, &["--status", "GATES.md"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("UNMET G1") || out.contains("GATES:G1"), "{out}");

    let text = format!("\u{feff}{}", gate("G1", "printf 'ok\\n'", "ok"));
    sandbox.write("GATES.md", &text);
    let (code, out, err) = run(&sandbox, &["--approve", "GATES.md"]);
    assert_eq!(code, 0, "{out}{err}");
    let after = sandbox.read("GATES.md");
    assert!(after.starts_with("\u{feff}- [x] G1: outcome G1\n"), "{after:?}");
    assert!(after.contains("  EVIDENCE: automatic-evidence=v1; "), "{after}");
}

#[test]
fn a_gate_deleted_while_it_runs_is_discarded_and_not_counted() {
    let sandbox = Sandbox::new();
    let remaining = "- [x] G2: manual and met\n  EVIDENCE: seen by hand\n";
    let check = format!("printf -- '{}' > GATES.md; echo ok", remaining.replace('\n', "\\n"));
    sandbox.write("GATES.md", &format!("{}{remaining}", gate("G1", &check, "ok")));
    let (code, out, err) = run(&sandbox, &["--approve", "--format", "json", "GATES.md"]);
    assert_eq!(sandbox.read("GATES.md"), remaining);
    assert_eq!(code, 0, "{out}{err}");
    let json: serde_json::Value = serde_json::from_str(&out).expect("JSON report");
    assert_eq!(json["outcome"], "all-met", "{json}");
    assert_eq!(json["unmet"], serde_json::json!([]), "{json}");
    assert_eq!(json["summary"]["unmet"], 0, "{json}");
    assert_eq!(json["gates"].as_array().map(Vec::len), Some(1), "{json}");

    sandbox.write("GATES.md", &format!("{}{remaining}", gate("G1", &check, "ok")));
    let (code, out, err) = run(&sandbox, &["GATES.md"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("STALE GATES:G1") && out.contains("ALL MET (1 met)"), "{out}");
}

#[test]
fn a_definition_too_large_to_approve_is_refused_before_anything_runs() {
    let sandbox = Sandbox::new();
    let huge = "a".repeat(300_000);
    let text = format!("{}{}", gate("G0", "touch ran-g0; echo ok", "ok"), gate("G1", "touch ran-g1; echo ok", &huge));
    let path = sandbox.write("GATES.md", &text);
    for args in [&["--approve", "GATES.md"][..], &["GATES.md"]] {
        let (code, out, err) = run(&sandbox, args);
        assert_eq!(code, 2, "{out}{err}");
        let expected = format!("{}: line 5: gate G1 cannot be approved: its approval record would be", path.display());
        assert!(err.contains(&expected), "{err}");
        assert!(!exists(&sandbox.path("ran-g0")) && !exists(&sandbox.path("ran-g1")), "a check ran");
        assert_eq!(sandbox.approval_count(), 0);
        assert_eq!(sandbox.read("GATES.md"), text);
    }
}

#[test]
fn the_largest_approvable_definition_is_honoured_afterwards() {
    let sandbox = Sandbox::new();
    let large = "a".repeat(250_000);
    sandbox.write("GATES.md", &gate("G1", "head -c 250000 /dev/zero | tr '\\0' a", &large));
    let (code, out, err) = run(&sandbox, &["--approve", "GATES.md"]);
    assert_eq!(code, 0, "{}{err}", &out[..out.len().min(400)]);
    let (code, _, err) = run(&sandbox, &["--reverify", "GATES.md"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_write_back_that_would_pass_the_read_cap_is_refused() {
    let sandbox = Sandbox::new();
    let head = gate("G1", "echo ok", "ok");
    let target = 8 * 1024 * 1024 - 40;
    let padding_line = "filler prose that keeps the ledger just under its read limit\n";
    let mut text = head.clone();
    while text.len() + padding_line.len() <= target {
        text.push_str(padding_line);
    }
    text.push_str(&"x".repeat(target - text.len() - 1));
    text.push('\n');
    assert_eq!(text.len(), target);
    sandbox.write("GATES.md", &text);
    let (code, out, err) = run(&sandbox, &["--approve", "GATES.md"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("write-back would grow the gate ledger past the 8388608-byte read limit"), "{err}");
    assert!(sandbox.read("GATES.md") == text, "the ledger changed");
    let (code, _, err) = run(&sandbox, &["--status", "GATES.md"]);
    assert_eq!(code, 1, "the ledger must stay readable: {err}");
}
