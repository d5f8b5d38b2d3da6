//! Parity of `--status` decisions with the Node.js 2.1.0 checker, found by a differential
//! run of random ledgers through both tools. Every expected value below is Node's answer
//! (its `parseGates` + `gateState` + `gateDefinitionDigest`), hard-coded here.
//!
//! Node's line regexes end in `(.*)$` without the `s` flag, and JavaScript's `.` never
//! matches `\r`, U+2028 or U+2029. So a line holding one of those (a lone `\r` is not a
//! line break to `split(/\r?\n/)`) is not a gate, attribute, ABANDON, OWNS or fence
//! opener: it is plain prose.

use crate::common::Sandbox;
use serde_json::Value;

/// Node's definition digest of `CHECK: true` / `EXPECT: ok` with no CWD.
const TRUE_OK_DIGEST: &str = "c9ee95a9967df2058d157ba7cd4e192d84d35cf132792dffc58dca81b5331df2";

struct Status {
    code: i32,
    /// (id, 1-based line, state, definition digest) in ledger order.
    gates: Vec<(String, u64, String, Option<String>)>,
    abandoned: Vec<String>,
    errors: Vec<String>,
}

/// `gate-check --status --format json L.md` on `text`.
fn status(text: &str) -> Status {
    let sandbox = Sandbox::new();
    sandbox.write("L.md", text);
    let run = sandbox.run(&["--status", "--format", "json", "L.md"]);
    let code = run.exit_code();
    // The document's exitCode is the check of the process's code, below.
    // Human lines go to stderr, each naming the ledger (its count or its errors).
    let json: Value = run.code(code).stderr_contains("L.md").stdout_json();
    assert_eq!(json["exitCode"].as_i64(), Some(code as i64), "exitCode field vs process code");
    let strings = |key: &str| -> Vec<String> {
        json[key].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect()
    };
    let gates = json["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["id"].as_str().unwrap().to_owned(),
                g["line"].as_u64().unwrap(),
                g["state"].as_str().unwrap().to_owned(),
                g["definitionDigest"].as_str().map(str::to_owned),
            )
        })
        .collect();
    Status { code, gates, abandoned: strings("abandoned"), errors: strings("errors") }
}

fn gate(id: &str, line: u64, state: &str, digest: Option<&str>) -> (String, u64, String, Option<String>) {
    (id.to_owned(), line, state.to_owned(), digest.map(str::to_owned))
}

/// Node's verdict for a ledger it accepts: these gates, this abandoned list, exit 0 only
/// when every gate is met and nothing is abandoned.
fn assert_node_accepts(text: &str, gates: &[(String, u64, String, Option<String>)], abandoned: &[&str]) {
    let got = status(text);
    assert!(got.errors.is_empty(), "Node accepts {text:?}; gate-check said {:?}", got.errors);
    assert_eq!(got.gates, gates, "gates of {text:?}");
    assert_eq!(got.abandoned, abandoned, "abandoned of {text:?}");
    let all_met = abandoned.is_empty() && gates.iter().all(|g| g.2 == "met");
    assert_eq!(got.code, if all_met { 0 } else { 1 }, "exit code of {text:?}");
}

// ---------------------------------------------------------------------------------------
// Mismatches found by the differential run (gate-check disagrees with Node).
// ---------------------------------------------------------------------------------------

#[test]
fn fence_opener_whose_info_holds_a_line_separator_is_prose() {
    // Node: line 1 is prose, G1 is a live gate. gate-check opened a fence there and
    // reported "unclosed fenced block" + "zero live gates" (exit 2).
    for separator in ["\u{2028}", "\u{2029}", " js\u{2028}x"] {
        for marker in ["```", "~~~", "  ````"] {
            let text = format!("{marker}{separator}\n- [ ] G1: t\n");
            assert_node_accepts(&text, &[gate("G1", 2, "unmet", None)], &[]);
        }
    }
}

#[test]
fn fence_opener_ending_in_a_lone_cr_is_prose() {
    // A CRLF ledger whose fence line ends "\r\r\n": Node's line is "~~~\r", not a fence.
    assert_node_accepts("~~~\r\r\n- [ ] G1: t\r\n", &[gate("G1", 2, "unmet", None)], &[]);
    // A lone CR mid-line (not a line break for Node either).
    assert_node_accepts("```\r```\n- [ ] G1: t\n", &[gate("G1", 2, "unmet", None)], &[]);
}

#[test]
fn fence_after_a_line_separator_opener_is_unclosed() {
    // Node: line 1 is prose, so line 2 opens a fence that never closes (exit 2).
    // gate-check paired lines 1 and 2 and reported G1 as a live gate (exit 1).
    let got = status("```\u{2028}\n```\n- [ ] G1: t\n");
    assert_eq!(got.code, 2, "Node rejects this ledger; gate-check gave gates {:?}", got.gates);
    assert!(got.errors.iter().any(|e| e.contains("unclosed fenced block")), "{:?}", got.errors);
    assert!(got.errors.iter().any(|e| e.contains("ledger contains zero live gates")), "{:?}", got.errors);
}

#[test]
fn line_separator_opener_cannot_hide_an_unmet_gate() {
    // Node: G1 (line 2) is live and unmet; lines 3..7 are one fence hiding G2 -> UNMET,
    // exit 1. gate-check hid G1 instead, saw only the checked G2 and printed ALL MET.
    let text = "```\u{2028}\n- [ ] G1: a\n```\n- [x] G2: b\n  EVIDENCE: done\n```\u{2028}\n```\n";
    assert_node_accepts(text, &[gate("G1", 2, "unmet", None)], &[]);
}

#[test]
fn line_separator_openers_shift_which_gates_are_fenced() {
    // Node fences lines 3..7 (hiding G2, G3); gate-check fenced 1..3 and 5..7 (hiding G1, G3).
    let text =
        "```\u{2028}\n- [ ] G1: a\n```\n- [ ] G2: b\n```\u{2028}\n- [ ] G3: c\n```\n- [x] G4: d\n  EVIDENCE: done\n";
    assert_node_accepts(text, &[gate("G1", 2, "unmet", None), gate("G4", 8, "met", None)], &[]);
}

// ---------------------------------------------------------------------------------------
// Node-verified agreements: the trickiest cases the differential run confirmed. They pass
// today; they are here so they stay agreed.
// ---------------------------------------------------------------------------------------

#[test]
fn node_verified_line_terminators_inside_other_lines() {
    // An ABANDON whose reason holds U+2028 is prose, not an abandonment.
    assert_node_accepts("- [ ] G1: base\nABANDON: G1 rea\u{2028}son\n", &[gate("G1", 1, "unmet", None)], &[]);
}

/// Node reads a gate line holding a line terminator as prose, so the gate
/// silently disappears; gate-check refuses the ledger instead (issue 10).
#[test]
fn deliberate_difference_a_gate_line_holding_a_line_terminator_is_an_error() {
    for text in ["- [ ] G1: base\n- [x] G2: ti\u{2028}tle\n", "- [ ] G1: base\r\n- [x] G2: t\r\r\n"] {
        let got = status(text);
        assert_eq!(got.code, 2, "{text:?}");
        assert!(
            got.errors.iter().any(|e| e.contains(".md:2: gate line contains a line terminator")),
            "{:?}",
            got.errors
        );
    }
}

/// Node does not strip a BOM, so the first gate is hidden; gate-check reads
/// it (issue 10).
#[test]
fn deliberate_difference_a_byte_order_mark_does_not_hide_the_first_gate() {
    let got = status("\u{feff}- [ ] G1: t\n- [ ] G2: u\n");
    assert_eq!(got.gates, [gate("G1", 1, "unmet", None), gate("G2", 2, "unmet", None)]);
}

#[test]
fn node_verified_javascript_whitespace_set() {
    // NBSP is JavaScript whitespace: it indents attributes.
    assert_node_accepts(
        "- [x] G1: t\n\u{a0}CHECK: true\n\u{a0}EXPECT: ok\n",
        &[gate("G1", 1, "stale-unmet", Some(TRUE_OK_DIGEST))],
        &[],
    );
    // NEL (U+0085) is not: that line is prose and G1 stays a manual gate.
    assert_node_accepts("- [x] G1: t\n\u{85}CHECK: true\n", &[gate("G1", 1, "unmet-no-evidence", None)], &[]);
    // trim() drops a trailing NBSP ("pending") but keeps a NEL (human evidence).
    assert_node_accepts("- [x] G1: t\n  EVIDENCE: pending\u{a0}\n", &[gate("G1", 1, "unmet-no-evidence", None)], &[]);
    assert_node_accepts("- [x] G1: t\n  EVIDENCE: pending\u{85}\n", &[gate("G1", 1, "met", None)], &[]);
}

fn runnable_with_evidence(evidence: &str) -> String {
    format!("- [x] G1: t\n  CHECK: true\n  EXPECT: ok\n  EVIDENCE: {evidence}\n")
}

fn v1_evidence(after_bytes_key: &str) -> String {
    format!(
        "automatic-evidence=v1; definition-sha256={TRUE_OK_DIGEST}; exit=0; EXPECT=matched; output-sha256={}; output-bytes={after_bytes_key}",
        "a".repeat(64)
    )
}

/// Pads with astral characters (two UTF-16 units each) to exactly `units` UTF-16 units.
fn pad_utf16(mut text: String, units: usize) -> String {
    while text.encode_utf16().count() < units - 1 {
        text.push('🎉');
    }
    if text.encode_utf16().count() < units {
        text.push('x');
    }
    text
}

#[test]
fn node_verified_automatic_evidence_boundaries() {
    let met = [gate("G1", 1, "met", Some(TRUE_OK_DIGEST))];
    let stale = [gate("G1", 1, "stale-unmet", Some(TRUE_OK_DIGEST))];
    // The 900 cap counts UTF-16 code units, not bytes or chars.
    let base = v1_evidence("12; shell=/bin/sh; tail=");
    assert_node_accepts(&runnable_with_evidence(&pad_utf16(base.clone(), 900)), &met, &[]);
    assert_node_accepts(&runnable_with_evidence(&pad_utf16(base, 901)), &stale, &[]);
    // A lone trailing NBSP is trimmed away; NBSP + x is fine. (An EVIDENCE
    // line holding U+2028, prose to Node, is an error: see
    // `deliberate_difference_an_attribute_holding_a_line_terminator_is_an_error`.)
    assert_node_accepts(&runnable_with_evidence(&v1_evidence("12; shell=\u{a0}")), &stale, &[]);
    assert_node_accepts(&runnable_with_evidence(&v1_evidence("12; shell=\u{a0}x")), &met, &[]);
    // output-bytes may be at most 1 MiB.
    assert_node_accepts(&runnable_with_evidence(&v1_evidence("1048576; shell=/bin/sh")), &met, &[]);
    assert_node_accepts(&runnable_with_evidence(&v1_evidence("1048577; shell=/bin/sh")), &stale, &[]);
}

/// Node reads an attribute line holding a line terminator as prose, which
/// turns a runnable gate manual; gate-check refuses it (issue 10).
#[test]
fn deliberate_difference_an_attribute_holding_a_line_terminator_is_an_error() {
    let got = status(&runnable_with_evidence(&v1_evidence("12; shell=\u{2028}x")));
    assert_eq!(got.code, 2);
    assert!(
        got.errors.iter().any(|e| e.contains(".md:4: EVIDENCE value contains a line terminator")),
        "{:?}",
        got.errors
    );
}

/// Node accepts controls in a CHECK (its digest JSON-escapes \u0001, \b
/// and \u001f, and keeps DEL); gate-check refuses controls other than TAB,
/// because they hide what runs from the approver (issue 10).
#[test]
fn deliberate_difference_controls_in_a_check_are_an_error() {
    let text = "- [ ] G1: t\n  CHECK: a\u{1}b\u{8}c\u{1f}\"\\\u{7f}\td\n  EXPECT: /x\\/y/\n  CWD: \u{e9} \u{a0}\n";
    let got = status(text);
    assert_eq!(got.code, 2);
    assert!(got.errors.iter().any(|e| e.contains(".md:2: CHECK contains the control")), "{:?}", got.errors);
}

/// Help beside mistakes, as the Node tool's argument parser answers: it reads
/// the whole command line first, so a mistake found while reading (an option
/// given twice, `-h` and `--help` included; `-h` in a cluster, which it does
/// not accept; a value option without a value) is exit 2, while a mistake in
/// what the options mean still shows help. Every code below is Node 20's
/// answer for `gate-check.mjs ARGS`, found by a differential run.
#[test]
fn help_beside_a_reading_mistake_is_exit_2_as_in_node() {
    let sandbox = Sandbox::new();
    let cases: &[(&[&str], i32, &str)] = &[
        // The positive cases: help once, in either spelling or both, and beside a mistake of meaning.
        (&["-h"], 0, ""),
        (&["--help"], 0, ""),
        (&["-h", "--help"], 0, ""),
        (&["--status", "--reverify", "--help"], 0, ""),
        (&["--help", "--jobs", "99"], 0, ""),
        (&["--help", "--", "-h"], 0, ""),
        (&["-h", "-h"], 2, "error: the argument '-h' cannot be used multiple times"),
        (&["--help", "--help"], 2, "error: the argument '--help' cannot be used multiple times"),
        (&["-hh"], 2, "error: unexpected argument '-hh' found"),
        (&["-qh"], 2, "error: unexpected argument '-qh' found"),
        (&["--help", "--status", "--status"], 2, "error: the argument '--status' cannot be used multiple times"),
        (&["--help", "--scope", "a", "--scope", "b"], 2, "cannot be used multiple times"),
        (&["--help", "--jobs"], 2, "error: a value is required for '--jobs <N>' but none was supplied"),
        (&["--help", "--jobs="], 2, "error: invalid value '' for '--jobs <N>'"),
    ];
    for (args, code, said) in cases {
        let run = sandbox.run(args).code(*code);
        if *code == 0 {
            run.stdout_contains("Usage: gate-check").stderr_is("");
        } else {
            run.stdout_is("").stderr_contains(said).stderr_contains("For more information, try '--help'.");
        }
    }
}

/// Node's parser has no `INPUTS:`: an indented `INPUTS:` line matches none
/// of its line rules, so it is ignored and the gate's block goes on (the
/// EXPECT after it still belongs to the gate). gate-check reads the same
/// gates, states and digests.
#[test]
fn node_verified_an_inputs_line_is_ignored_by_the_node_tool() {
    let evidence = v1_evidence("12; shell=/bin/sh");
    let text = format!("- [x] G1: t\n  CHECK: true\n  INPUTS: src/**, docs\n  EXPECT: ok\n  EVIDENCE: {evidence}\n");
    assert_node_accepts(&text, &[gate("G1", 1, "met", Some(TRUE_OK_DIGEST))], &[]);
    assert_node_accepts(&text.replacen("- [x]", "- [ ]", 1), &[gate("G1", 1, "unmet", Some(TRUE_OK_DIGEST))], &[]);
}

/// The Node tool reads automatic evidence as current when, within 900
/// UTF-16 units, it starts with the tag and digest and its deciding fields
/// run up to `shell=` and one more character; whatever follows is
/// transcript to it. A line gate-check writes, with its `tree-sha256=`
/// field last, must keep meeting that rule however long its transcript.
#[test]
fn node_verified_evidence_with_a_tree_field_is_current_to_the_node_tool() {
    let node_rule = |evidence: &str, digest: &str| -> bool {
        let pattern = format!(
            "^automatic-evidence=v1; definition-sha256={digest}; exit=0; EXPECT=matched; output-sha256=[a-f0-9]{{64}}; \
             output-bytes=(0|[1-9][0-9]{{0,6}}); shell=."
        );
        let bytes: u64 =
            evidence.split("output-bytes=").nth(1).and_then(|r| r.split(';').next()?.parse().ok()).unwrap_or(0);
        evidence.encode_utf16().count() <= 900
            && regex::Regex::new(&pattern).unwrap().is_match(evidence)
            && bytes <= 1048576
    };
    // CreateProcess takes no working directory longer than 260 characters:
    // on Windows the deep one is left out.
    let deep = "deep/".repeat(200);
    let directories: &[&str] = if cfg!(windows) { &["d"] } else { &["d", &deep] };
    for directory in directories {
        let sandbox = Sandbox::new();
        std::fs::create_dir_all(sandbox.path(directory)).unwrap();
        let check = crate::common::sh::TRUE;
        sandbox.write("GATES.md", &format!("- [ ] G1: t\n  CHECK: {check}\n  EXPECT: /^$/\n  CWD: {directory}\n"));
        sandbox.run(&["--approve", "-q"]).code(0).stdout_ends_with("ALL MET (1 met)\n");
        let ledger = sandbox.read("GATES.md");
        let evidence = ledger.lines().find_map(|l| l.strip_prefix("  EVIDENCE: ")).unwrap();
        assert!(evidence.contains("; tree-sha256="), "{evidence}");
        let digest = evidence.split("definition-sha256=").nth(1).unwrap().split(';').next().unwrap();
        assert!(node_rule(evidence, digest), "{evidence}");
    }
}
