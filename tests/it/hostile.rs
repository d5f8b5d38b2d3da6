//! Hostile ledgers get a clear error or a correct answer within a bounded
//! time: enormous lines, 100k gates, NUL bytes, deep fence nesting and
//! control characters in ids. The timeouts are hang guards, not benchmarks.

use std::time::Duration;

use crate::common::Sandbox;

const HANG_GUARD: Duration = Duration::from_secs(120);

#[test]
fn a_ten_megabyte_line_is_refused_before_parsing() {
    let sandbox = Sandbox::new();
    let text = format!("- [ ] G1: {}\n", "x".repeat(10 * 1024 * 1024));
    sandbox.write("GATES.md", &text);
    sandbox
        .run_with(sandbox.cmd().arg("--status").timeout(HANG_GUARD))
        .code(2)
        .stderr_contains("exceeds 8388608 bytes")
        .stderr_contains("GATES.md");
}

#[test]
fn a_six_megabyte_title_still_parses() {
    let sandbox = Sandbox::new();
    let text = format!("- [x] G1: {}\n  EVIDENCE: seen by a reviewer\n", "y".repeat(6 * 1024 * 1024));
    sandbox.write("GATES.md", &text);
    sandbox.run_with(sandbox.cmd().arg("--status").timeout(HANG_GUARD)).code(0).stdout_contains("ALL MET (1 met)");
}

#[test]
fn a_hundred_thousand_gates_report_correctly() {
    let sandbox = Sandbox::new();
    let mut text = String::with_capacity(6_000_000);
    for i in 0..100_000 {
        text.push_str(&format!("- [x] G{i}: outcome\n  EVIDENCE: ok\n"));
    }
    text.push_str("- [ ] LAST: still open\n");
    sandbox.write("GATES.md", &text);
    sandbox
        .run_with(sandbox.cmd().arg("--status").timeout(HANG_GUARD))
        .code(1)
        .stdout_contains("GATES.md: 100001 gates")
        .stdout_contains("UNMET: 1 (met: 100000)");
}

#[test]
fn duplicate_ids_among_many_gates_are_found() {
    let sandbox = Sandbox::new();
    let mut text = String::new();
    for i in 0..50_000 {
        text.push_str(&format!("- [ ] G{i}: outcome\n"));
    }
    text.push_str("- [ ] G7: again\n");
    sandbox.write("GATES.md", &text);
    sandbox
        .run_with(sandbox.cmd().arg("--status").timeout(HANG_GUARD))
        .code(2)
        .stderr_contains(":50001: error: duplicate gate id G7 (first declared on line 8)");
}

#[test]
fn nul_bytes_are_content_and_never_reach_the_terminal() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", "- [ ] G1: title with \0 nul\n");
    sandbox
        .run_with(sandbox.cmd().arg("--status").timeout(HANG_GUARD))
        .code(1)
        .stdout_contains("UNMET GATES:G1 (unchecked): title with   nul")
        .stdout_lacks("\0");
}

#[test]
fn deep_fence_nesting_is_linear() {
    let sandbox = Sandbox::new();
    // 30k shorter fences inside one long fence: none closes it.
    let mut text = String::from("- [ ] G1: visible\n");
    text.push_str(&format!("{}\n", "`".repeat(200_000)));
    for i in 0..30_000 {
        text.push_str(&format!("{}\n- [ ] HIDDEN{i}: no\n", "`".repeat(3 + i % 200)));
    }
    text.push_str(&format!("{}\n", "`".repeat(200_000)));
    sandbox.write("GATES.md", &text);
    sandbox.run_with(sandbox.cmd().arg("--status").timeout(HANG_GUARD)).code(1).stdout_contains("GATES.md: 1 gates");
}

#[test]
fn control_characters_in_ids_are_rejected_and_sanitized() {
    let sandbox = Sandbox::new();
    let before = "- [ ] G\u{1b}[31m1: red\n";
    sandbox.write("GATES.md", before);
    sandbox
        .run_with(sandbox.cmd().arg("--status").timeout(HANG_GUARD))
        .code(2)
        .stderr_contains(":1: error: invalid gate id G [31m1")
        .stderr_lacks("\u{1b}");
    assert_eq!(sandbox.read("GATES.md"), before);
}
