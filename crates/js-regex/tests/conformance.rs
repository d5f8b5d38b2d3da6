//! Every case in tests/conformance/regex-cases.json (answers produced by node, see
//! generate-regex-cases.mjs) must get JavaScript's answer from `Expectation`, on the engine
//! `matches` picks and on the backtracker alone. The file's documented differences must
//! keep gate-check's documented answer.

use js_regex::{Expectation, PatternError};
use serde_json::Value;

fn corpus() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance/regex-cases.json");
    let text = std::fs::read_to_string(path).expect("corpus is readable");
    serde_json::from_str(&text).expect("corpus is JSON")
}

fn text(case: &Value, key: &str) -> String {
    match &case[key] {
        Value::Bool(b) => b.to_string(),
        Value::String(s) => s.clone(),
        other => panic!("unexpected {key}: {other}"),
    }
}

/// Budget for the backtracker-only cross-check: enough for every corpus case but the
/// deliberately catastrophic ones, which may report the bound instead of an answer.
const CROSS_CHECK_BUDGET: u64 = 1_000_000;
const BOUND_HIT: &str = "error: EXPECT regex exceeded its matching budget";

/// gate-check's answer, as (normal engine choice, backtracker only).
fn answer(source: &str, flags: &str, input: &str) -> (String, String) {
    let show = |r: Result<bool, js_regex::MatchError>| r.map_or_else(|e| format!("error: {e}"), |b| b.to_string());
    match Expectation::parse(&format!("/{source}/{flags}")) {
        Err(PatternError::Invalid(_)) => ("invalid".into(), "invalid".into()),
        Err(other) => (format!("error: {other}"), format!("error: {other}")),
        Ok(Expectation::Pattern(pattern)) => {
            let forced = show(pattern.matches_with_backtracker(input, CROSS_CHECK_BUDGET));
            (show(Expectation::Pattern(pattern).matches(input)), forced)
        }
        Ok(Expectation::Substring(_)) => ("not a regex".into(), "not a regex".into()),
    }
}

#[test]
fn matcher_agrees_with_javascript() {
    let corpus = corpus();
    let cases = corpus["cases"].as_array().expect("cases array");
    let mut mismatches = Vec::new();
    for case in cases {
        let (source, flags, input) = (text(case, "source"), text(case, "flags"), text(case, "input"));
        let expected = text(case, "expected");
        let (actual, backtracker) = answer(&source, &flags, &input);
        if actual != expected || (backtracker != expected && backtracker != BOUND_HIT) {
            mismatches.push(format!(
                "/{source}/{flags} on {input:?}: JavaScript {expected}, gate-check {actual}, backtracker {backtracker}"
            ));
        }
    }
    let passed = cases.len() - mismatches.len();
    println!("regex conformance: {passed}/{} cases agree with JavaScript", cases.len());
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n"));
}

#[test]
fn documented_differences_hold() {
    let corpus = corpus();
    let documented = corpus["documented_differences"].as_array().expect("documented_differences array");
    let mut changed = Vec::new();
    for case in documented {
        let (source, flags, input) = (text(case, "source"), text(case, "flags"), text(case, "input"));
        let documented_answer = text(case, "gate_check");
        let (actual, _) = answer(&source, &flags, &input);
        if actual != documented_answer {
            changed.push(format!("/{source}/{flags} on {input:?}: documented {documented_answer}, now {actual}"));
        }
    }
    assert!(changed.is_empty(), "update references/regex.md and the corpus:\n{}", changed.join("\n"));
}

#[test]
fn deeply_nested_patterns_compile_without_overflowing_the_stack() {
    // Runs on a test thread (small stack); JavaScript accepts all of these.
    for (open, close, flags) in [("(", ")", ""), ("(?:", ")", ""), ("(?=", ")", ""), ("(?<!", ")", ""), ("[", "]", "v")]
    {
        let depth = 999 / (open.len() + close.len());
        let source = format!("{}a{}", open.repeat(depth), close.repeat(depth));
        let expectation = Expectation::parse(&format!("/{source}/{flags}")).expect("valid pattern");
        // An odd number of nested (?<! holds at position 0, so every one of these matches.
        assert_eq!(expectation.matches("a"), Ok(true), "{open}");
    }
}

#[test]
fn catastrophic_backtracking_ends_with_the_budget_error() {
    let expectation = Expectation::parse("/^(a+)+\\1$/").expect("valid pattern");
    let output = "a".repeat(4096) + "!";
    let error = expectation.matches(&output).expect_err("bound is hit");
    assert_eq!(error.to_string(), "EXPECT regex exceeded its matching budget");
}

#[test]
fn property_and_case_folding_tables_follow_the_unicode_version_of_the_corpus_node() {
    // Regenerate both with the same node: tools/generate-unicode-tables.mjs and
    // tests/conformance/generate-regex-cases.mjs.
    assert_eq!(corpus()["unicode"].as_str(), Some(js_regex::UNICODE_VERSION));
    assert_eq!(corpus()["unicode"].as_str(), Some(js_regex::CASE_FOLDING_UNICODE_VERSION));
}

/// Loops whose body can match empty anywhere, required more often than the input
/// can feed them (tests/conformance/nullable-loop-cases.json, answers from node): the
/// backtracker caps the required count, and must keep JavaScript's answer.
#[test]
fn capped_nullable_loops_agree_with_javascript() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance/nullable-loop-cases.json");
    let corpus: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("readable")).expect("JSON");
    let cases = corpus["cases"].as_array().expect("cases array");
    assert!(cases.len() > 5000, "{}", cases.len());
    let mut mismatches = Vec::new();
    for case in cases {
        let (source, flags, input) = (text(case, "source"), text(case, "flags"), text(case, "input"));
        let expected = text(case, "expected");
        let (actual, backtracker) = answer(&source, &flags, &input);
        if actual != expected || backtracker != expected {
            mismatches.push(format!(
                "/{source}/{flags} on {input:?}: JavaScript {expected}, gate-check {actual}, backtracker {backtracker}"
            ));
        }
    }
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n"));
}

/// Huge counts over bodies that match empty, anywhere or only somewhere, end at once with
/// the specification's answer (node 20 overflows its stack on the second; the
/// specification says true).
#[test]
fn huge_counts_over_empty_matching_bodies_decide_at_once() {
    let long_b = "b".repeat(100_000);
    for (expect, input, want) in [
        ("/(?=a){2147483647}/", "a", true),
        ("/(?=a){2147483647}/", "b", false),
        ("/(?:a|){2147483647}b/i", "aab", true),
        ("/(?:a|){2147483647}b/i", "aaaa", false),
        ("/(?:){1000000}z(?<=z)/", "xyz", true),
        ("/(?:(?=a)|b){4294967295}/", "c", false),
        // Always empty through a self-reference (node: 0.02 ms; a memory error before) or
        // a forward one (node 26 overflows its stack; the specification says true).
        ("/(\\1){967296}/", "hello", true),
        ("/(?:\\1){2147483647}(a)/", "a", true),
        // Empty only through an anchor (node: 43 ms; a memory error before).
        ("/(a|^){1000000}/", "hello world", true),
        ("/(a|^){1000000}/", long_b.as_str(), true),
        ("/(a|^){1000000}$/", "aaa", true),
        ("/(a|^){1000000}$/", "aab", false),
    ] {
        let started = std::time::Instant::now();
        let pattern = Expectation::parse(expect).expect("valid");
        assert_eq!(pattern.matches(input), Ok(want), "{expect} on {} units", input.len());
        assert!(started.elapsed() < std::time::Duration::from_secs(2), "{expect}: {:?}", started.elapsed());
    }
}

/// A match is stopped by its caller's deadline or interrupt on every engine, even where
/// its own budget would let it go on.
#[test]
fn limits_stop_every_engine() {
    use js_regex::{Limits, MatchError};
    use std::time::{Duration, Instant};
    let long_a = "a".repeat(1 << 20);
    let cases = [
        // The linear engine's guard (nested counted repetition, 10,000 NFA states).
        ("/(?:(?:a|b){100}){100}c/i", format!("{long_a}c")),
        // The backtracker (a backreference).
        (r"/(?:(a|a)+\1c)x|zz/", format!("{long_a}c")),
    ];
    let never = || false;
    let always = || true;
    for (expect, output) in &cases {
        let pattern = Expectation::parse(expect).expect("valid");
        let passed = Instant::now() - Duration::from_millis(1);
        assert_eq!(pattern.matches_within(output, &Limits::new(passed, &never)), Err(MatchError::Deadline), "{expect}");
        let later = Instant::now() + Duration::from_secs(3600);
        assert_eq!(
            pattern.matches_within(output, &Limits::new(later, &always)),
            Err(MatchError::Interrupted),
            "{expect}"
        );
        // Without limits the engines' own budget decides.
        let answer = pattern.matches(output);
        assert!(matches!(answer, Err(MatchError::BudgetExceeded | MatchError::MemoryExceeded)), "{expect}: {answer:?}");
    }
    // Limits that never fire change no answer.
    let later = Instant::now() + Duration::from_secs(3600);
    let pattern = Expectation::parse("/(?:(?:a|b){100}){100}/i").expect("valid");
    assert_eq!(pattern.matches_within(&long_a, &Limits::new(later, &never)), Ok(true));
    assert_eq!(pattern.matches_within("ab", &Limits::new(later, &never)), Ok(false));
}

/// Patterns node answers at once but the budgets used to fail (issue 34): the lazy DFA
/// takes counted repetitions to the end instead of giving up when its cache fills, and
/// without u/v an astral output is read as UTF-16 code units on the linear engine.
#[test]
fn counted_repetitions_and_astral_output_are_answered_within_the_budgets() {
    let a14b = "a".repeat(14) + "b";
    for (expect, output, want) in [
        ("/(?:a|b){4000}/", ("ab".repeat(1500) + "x").repeat(3), false),
        ("/(?:a|b){4000}/", "ab".repeat(2000) + "x", true),
        ("/(?:ab|ba){1000}$/", ("ab".repeat(999) + "x").repeat(29), false),
        ("/(?:ab|ba){1000}$/", ("ab".repeat(999) + "x").repeat(29) + &"ba".repeat(1000), true),
        ("/(?:a{14}b){1000}/", (a14b.repeat(999) + "x").repeat(4), false),
        ("/(?:a{14}b){1000}/", a14b.repeat(1000), true),
        ("/.{128}$/", "\u{1F600}".repeat(204_800), true),
        ("/^.{128}$/", "\u{1F600}".repeat(64), true),
        ("/^.{128}$/u", "\u{1F600}".repeat(64), false),
        // Empty iterations at the end (node 20 and 26 say false after minutes).
        ("/(?:a*){65536}$/", "ab".repeat(499) + "x", true),
    ] {
        let pattern = Expectation::parse(expect).expect("valid");
        assert_eq!(pattern.matches(&output), Ok(want), "{expect} on {} bytes", output.len());
    }
}

/// Every engine asks the caller's limits while it runs, whatever the output's length:
/// a huge NFA on a short output used to go to the regex crate, which cannot be asked,
/// and so did one too large for the lazy DFA's cache.
#[test]
fn every_engine_asks_the_limits_while_it_runs() {
    use js_regex::Limits;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};
    for (expect, output) in [
        ("/(?:a*){65536}$/", "ab".repeat(499) + "x"),
        ("/(?:a*){65536}$/", "ab".repeat(4095) + "x"),
        ("/(?:(?:a|b){100}){100}c/i", "a".repeat(1 << 16) + "c"),
        (r"/^(a|a)+\1$/", "a".repeat(1 << 12) + "!"),
    ] {
        let looks = AtomicUsize::new(0);
        // Counts every look and never asks to stop.
        let count = || {
            looks.fetch_add(1, Ordering::Relaxed);
            false
        };
        let limits = Limits::new(Instant::now() + Duration::from_secs(3600), &count);
        let pattern = Expectation::parse(expect).expect("valid");
        let _ = pattern.matches_within(&output, &limits);
        // One look once the pattern is compiled, and at least one by the engine.
        assert!(looks.load(Ordering::Relaxed) >= 2, "{expect} on {} bytes", output.len());
    }
}
