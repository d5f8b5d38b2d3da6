//! `gate-check lint` through the real binary: findings with file:line, the
//! LINT OK / LINT FINDINGS markers, exit codes, --strict, --json, and that
//! nothing is ever executed.

use crate::common::{Run, Sandbox};

const WEAK: &str = "# Gates: weak ledger

- [ ] G1: the entire feature works perfectly
  CHECK: echo ok
  EXPECT: ok
  EVIDENCE: pending

- [ ] G2: improve the error handling
  CHECK: node scripts/verify.mjs --banner BUILD-DONE
  EXPECT: BUILD-DONE
  EVIDENCE: pending

- [ ] G3: renders 34 stat rows
  EVIDENCE: pending

- [ ] G4: config path is reported
  CHECK: cd app && node scripts/show-path.mjs
  EXPECT: /etc/app/conf/
  EVIDENCE: pending

- [ ] G5: the suite reports its tally
  CHECK: npm test
  EXPECT: 0 failures
  EVIDENCE: pending

- [ ] G6: the report lists 12 sections
  CHECK: node report.mjs --sections
  EXPECT: 12 sections
  EVIDENCE: pending

- [ ] G7: dropped
  CHECK: make g7
  EXPECT: G7-READY
ABANDON: G7 later
";

const SOUND: &str = "# Gates: sound ledger

- [ ] G1: three tiers render with real copy
  CHECK: node scripts/check.mjs pricing --tiers
  EXPECT: 3/3 tiers rendered
  EVIDENCE: pending

- [ ] G2: annual toggle changes price and label
  CHECK: node scripts/check.mjs pricing --toggle
  EXPECT: toggle switched both fields
  EVIDENCE: pending

- [ ] G3: typecheck is clean
  CHECK: npx tsc --noEmit
  EXPECT: /Found 0 errors/
  EVIDENCE: pending
";

fn lint(sandbox: &Sandbox, args: &[&str]) -> Run {
    sandbox.run_with(sandbox.cmd().arg("lint").args(args))
}

#[test]
fn weak_ledger_reports_every_rule_with_file_and_line() {
    let sandbox = Sandbox::new();
    sandbox.write("weak.md", WEAK);
    // Advisory, as in the Node linter: findings, exit 0.
    let run = lint(&sandbox, &["weak.md"]).code(0);
    let expected = [
        "weak.md:3: WARN G1: CHECK cannot fail: it runs only \"echo\"",
        "[tautological-check]",
        "weak.md:3: WARN G1: EXPECT \"ok\" also appears in failure output",
        "weak.md:8: WARN G2: EXPECT \"BUILD-DONE\" appears verbatim in its own CHECK",
        "weak.md:8: WARN G2: names an activity, not an outcome a stranger could judge: \"improve the error handling\" [activity-not-outcome]",
        "weak.md:13: WARN G3: no CHECK, so this outcome is judged by hand",
        "weak.md:13: WARN G3: title states the figure 34 but nothing measures it",
        "weak.md:16: WARN G4: EXPECT \"/etc/app/conf/\" looks like a literal path but is read as a regular expression",
        "weak.md:21: WARN G5: EXPECT \"0 failures\" starts with a zero count, which also matches 10, 20 or 100 of them [expect-matches-failure]",
        "weak.md:26: WARN G6: the title's figure 12 is typed into EXPECT",
        "weak.md:34: WARN G7: ABANDON reason \"later\" does not hand the gate off",
    ];
    expected
        .iter()
        .fold(run, |run, line| run.stdout_contains(line))
        // `cd x && node` is not fixed output, and abandoned gates are not judged.
        .stdout_lacks("G4: CHECK cannot fail")
        .stdout_lacks("G7: EXPECT")
        .stdout_ends_with("\nLINT OK (11 warning(s))\n");
    lint(&sandbox, &["--strict", "weak.md"]).code(1).stdout_ends_with("\nLINT FINDINGS: 0 error(s), 11 warning(s)\n");
}

#[test]
fn commands_that_can_fail_or_only_search_are_not_flagged() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "GATES.md",
        "- [ ] G1: the verifier passes\n  CHECK: echo starting && node scripts/verify.mjs\n  EXPECT: VERIFY-PASSED\n\
         - [ ] G2: the README documents usage\n  CHECK: grep -n '^## Usage' README.md\n  EXPECT: ## Usage\n",
    );
    lint(&sandbox, &["--strict", "GATES.md"]).code(0).stdout_is("LINT OK\n");
}

#[test]
fn a_large_report_is_capped_like_the_node_linter() {
    let sandbox = Sandbox::new();
    let ledger: String = (0..200).map(|i| format!("- [ ] G{i}: the page reads well\n  EVIDENCE: pending\n")).collect();
    sandbox.write("manual.md", &ledger);
    let run = lint(&sandbox, &["manual.md"]).code(0);
    assert_eq!(run.stdout().lines().count(), 66, "{}", run.stdout());
    run.stdout_ends_with("\n... [report truncated: 137 finding(s) omitted]\nLINT OK (201 warning(s))\n");
    let report = lint(&sandbox, &["--json", "manual.md"]).code(0).stdout_json();
    assert_eq!(report["findings"].as_array().unwrap().len(), 64);
    assert_eq!((report["truncated"].as_bool(), report["omittedFindings"].as_u64()), (Some(true), Some(137)));
}

#[test]
fn without_a_file_lint_targets_the_ledgers_the_checker_would() {
    let sandbox = Sandbox::new();
    sandbox.write(".unlazy/api/gates/leaf.md", "- [ ] G1: the page reads well\n  EVIDENCE: pending\n");
    lint(&sandbox, &[])
        .code(0)
        .stdout_contains("leaf.md:1: WARN G1: no CHECK")
        .stdout_ends_with("LINT OK (3 warning(s))\n");
    sandbox.write(".unlazy/web/GATES.md", SOUND);
    lint(&sandbox, &[]).code(2).stderr_contains("2 pipelines present");
    lint(&sandbox, &["--scope", "web"]).code(0).stdout_is("LINT OK\n");
}

#[test]
fn sound_ledger_is_ok_and_strict_only_fails_on_warnings() {
    let sandbox = Sandbox::new();
    sandbox.write("sound.md", SOUND);
    lint(&sandbox, &["sound.md"]).code(0).stdout_is("LINT OK\n");
    lint(&sandbox, &["--strict", "sound.md"]).code(0).stdout_is("LINT OK\n");

    sandbox
        .write("manual.md", &format!("{SOUND}\n- [ ] G4: copy reads as written by the brand\n  EVIDENCE: pending\n"));
    lint(&sandbox, &["manual.md"])
        .code(0)
        .stdout_contains("manual.md:18: WARN G4: no CHECK")
        .stdout_ends_with("LINT OK (1 warning(s))\n");
    lint(&sandbox, &["--strict", "manual.md"]).code(1).stdout_ends_with("LINT FINDINGS: 0 error(s), 1 warning(s)\n");
}

#[test]
fn ledger_wide_rules_and_several_files() {
    let sandbox = Sandbox::new();
    sandbox.write("sound.md", SOUND);
    sandbox.write("one.md", "- [ ] G1: the site is pleasant\n  EVIDENCE: pending\n");
    lint(&sandbox, &["sound.md", "one.md"])
        .code(0)
        .stdout_contains("one.md: WARN only one live gate")
        .stdout_contains("[small-ledger]")
        .stdout_contains("one.md: WARN 0/1 live gates are runnable")
        .stdout_contains("[mostly-manual]")
        .stdout_lacks("sound.md");
}

#[test]
fn json_is_one_document_with_findings() {
    let sandbox = Sandbox::new();
    sandbox.write("weak.md", WEAK);
    let report = lint(&sandbox, &["--json", "weak.md"]).code(0).stdout_json();
    assert_eq!(report["ok"], true);
    assert_eq!((report["errors"].as_u64(), report["warnings"].as_u64()), (Some(0), Some(11)));
    assert_eq!((report["truncated"].as_bool(), report["omittedFindings"].as_u64()), (Some(false), Some(0)));
    let first = &report["findings"][0];
    assert_eq!(first["file"], "weak.md");
    assert_eq!(first["line"], 3);
    assert_eq!(first["gate"], "G1");
    assert_eq!(first["level"], "warn");
    assert_eq!(first["rule"], "tautological-check");
    assert!(first["message"].as_str().unwrap().starts_with("CHECK cannot fail"));
    let small = report["findings"].as_array().unwrap().iter().find(|f| f["rule"] == "mostly-manual");
    assert!(small.is_none(), "5 of 6 live gates are runnable: {report}");
}

#[test]
fn parse_and_usage_failures_exit_2() {
    let sandbox = Sandbox::new();
    sandbox.write("sound.md", SOUND);
    sandbox.write("broken.md", "# Gates\n\n- [ ] no explicit id here\n");
    lint(&sandbox, &["sound.md", "broken.md"])
        .code(2)
        .stderr_contains("broken.md:3: error: gate needs an explicit ID followed by a colon")
        .stdout_contains("LINT NOT RUN: 1 problem(s) reading or parsing the ledgers")
        .stdout_lacks("LINT OK")
        .stdout_lacks("LINT FINDINGS");
    let report = lint(&sandbox, &["--json", "broken.md"]).code(2).stderr_is("").stdout_json();
    assert_eq!(report["findings"][0]["rule"], "parse");
    assert_eq!(report["findings"][0]["line"], 3);

    lint(&sandbox, &["missing.md"])
        .code(2)
        .stdout_is("LINT NOT RUN: 1 problem(s) reading or parsing the ledgers\n")
        .stderr_is("gate-check: error: no such gate file: missing.md\n");
    lint(&sandbox, &[]).code(2).stderr_contains("no gate files found");
    lint(&sandbox, &["--nope", "sound.md"]).code(2).stderr_contains("error: unexpected argument '--nope' found\n");
}

#[test]
fn never_executes_a_check() {
    let sandbox = Sandbox::new();
    let marker = sandbox.path("executed");
    sandbox.write(
        "GATES.md",
        &format!("- [ ] G1: the tool runs\n  CHECK: touch {}\n  EXPECT: RAN-MARKER\n", marker.display()),
    );
    lint(&sandbox, &["GATES.md"]).code(0).stdout_ends_with("\nLINT OK (1 warning(s))\n");
    assert!(!crate::common::exists(&marker), "lint executed a CHECK");
    assert_eq!(sandbox.approval_count(), 0);
}

/// The sound ledger with a manual gate in place of its typecheck.
fn with_manual() -> String {
    let (runnable, _) = SOUND.split_once("- [ ] G3:").unwrap();
    format!("{runnable}- [ ] M1: a designer signs off the pricing page\n  EVIDENCE: pending\n")
}

#[test]
fn strict_passes_a_ledger_with_a_manual_gate_once_the_rule_is_allowed() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &with_manual());
    // The positive first: --strict fails on the manual gate.
    lint(&sandbox, &["--strict", "GATES.md"])
        .code(1)
        .stdout_contains("GATES.md:13: WARN M1: no CHECK, so this outcome is judged by hand")
        .stdout_contains("LINT FINDINGS: 0 error(s), 1 warning(s)\n");
    lint(&sandbox, &["--strict", "--allow", "manual-gate", "GATES.md"]).code(0).stdout_is("LINT OK\n");
    // In the ledger, for that gate only.
    sandbox.write("GATES.md", &with_manual().replace("- [ ] M1:", "<!-- lint-allow: manual-gate M1 -->\n- [ ] M1:"));
    lint(&sandbox, &["--strict", "GATES.md"]).code(0).stdout_is("LINT OK\n");
    sandbox.write("GATES.md", &with_manual().replace("- [ ] M1:", "<!-- lint-allow: manual-gate G1 -->\n- [ ] M1:"));
    lint(&sandbox, &["--strict", "GATES.md"]).code(1).stdout_contains("WARN M1: no CHECK");
    // A misspelt rule is a finding, never a silent allowance.
    sandbox.write("GATES.md", &with_manual().replace("- [ ] M1:", "<!-- lint-allow: manual-gates -->\n- [ ] M1:"));
    lint(&sandbox, &["GATES.md"]).code(0).stdout_contains(
        "GATES.md:13: WARN lint-allow names \"manual-gates\", which is no rule of the linter [allow-unknown-rule]",
    );
    lint(&sandbox, &["--allow", "manual-gates", "GATES.md"]).code(2).stderr_starts_with(
        "gate-check: error: --allow manual-gates: no such lint rule (rules: activity-not-outcome, ",
    );
}

#[test]
fn format_json_is_the_json_document() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &with_manual());
    let by_flag = lint(&sandbox, &["--json", "GATES.md"]).code(0).stdout_json();
    let by_format = lint(&sandbox, &["--format", "json", "GATES.md"]).code(0).stdout_json();
    assert_eq!(by_flag, by_format);
    assert_eq!(by_format["findings"][0]["rule"], "manual-gate", "{by_format}");
    lint(&sandbox, &["--format", "text", "GATES.md"]).code(0).stdout_contains("LINT OK (1 warning(s))\n");
}

/// Gates and their example, written so that gate-check and a Markdown
/// renderer agree on every fence: the example's fence is at the top level.
const FENCES_AGREE: &str = "# Gates

- [ ] G1: the export round-trips a sample file
  CHECK: make roundtrip
  EXPECT: ROUNDTRIP-OK

A gate for reviewers to copy:

```markdown
- [ ] G9: the import refuses a truncated file
  CHECK: make truncated
  EXPECT: TRUNCATED-REFUSED
```

- [ ] G2: the import keeps unicode names
  CHECK: make unicode
  EXPECT: UNICODE-KEPT
";

/// The same ledger with the two traps: the example's fence indented under a
/// list item (CommonMark ends it with the item, gate-check reads on and
/// hides the real gate G3), and a fence indented four spaces under G2
/// (gate-check sees no fence, CommonMark renders G2's EXPECT as code).
const FENCES_DISAGREE: &str = "# Gates

- [ ] G1: the export round-trips a sample file
  CHECK: make roundtrip
  EXPECT: ROUNDTRIP-OK
- A gate for reviewers to copy:
  ```markdown
- [ ] G3: the import refuses a truncated file
  CHECK: make truncated
  EXPECT: TRUNCATED-REFUSED
  ```
- [ ] G2: the import keeps unicode names
  CHECK: make unicode
    ```sh
  EXPECT: UNICODE-KEPT
    ```
";

#[test]
fn a_fence_read_differently_by_commonmark_is_reported_with_file_and_line() {
    let sandbox = Sandbox::new();
    // The positive first: fences both readings agree on give no finding.
    sandbox.write("agree.md", FENCES_AGREE);
    lint(&sandbox, &["--strict", "agree.md"]).code(0).stdout_is("LINT OK\n");

    sandbox.write("GATES.md", FENCES_DISAGREE);
    // gate-check keeps the Node tool's reading: G3 is no gate, G2 has its EXPECT.
    sandbox
        .run(&["--status", "GATES.md"])
        .code(1)
        .stdout_contains("UNMET GATES:G1 (unchecked)")
        .stdout_contains("UNMET GATES:G2 (unchecked)")
        .stdout_lacks("G3")
        .stdout_contains("GATES.md: 2 gates");
    lint(&sandbox, &["GATES.md"]).code(0).stdout_is(
        "GATES.md:8: WARN G3: this gate is inside the fence opened on line 7, so gate-check skips it (as the \
             Node tool does), but CommonMark renders it outside any code block: readers see a gate that does not \
             count [commonmark-disagrees]\n\
             GATES.md:15: WARN G2: this EXPECT line counts for gate-check (as for the Node tool), but CommonMark \
             renders it inside the code block opened on line 14: readers see an example [commonmark-disagrees]\n\
             LINT OK (2 warning(s))\n",
    );
    lint(&sandbox, &["--strict", "GATES.md"]).code(1).stdout_ends_with("LINT FINDINGS: 0 error(s), 2 warning(s)\n");

    let report = lint(&sandbox, &["--json", "GATES.md"]).code(0).stdout_json();
    let found: Vec<(u64, &str, &str)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["line"].as_u64().unwrap(), f["gate"].as_str().unwrap(), f["rule"].as_str().unwrap()))
        .collect();
    assert_eq!(found, [(8, "G3", "commonmark-disagrees"), (15, "G2", "commonmark-disagrees")]);
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("references/lint-report.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert!(jsonschema::draft202012::new(&schema).unwrap().is_valid(&report), "{report:#}");

    // A deliberate difference is allowed like any rule, for the gates named.
    sandbox.write("GATES.md", &format!("<!-- lint-allow: commonmark-disagrees G3 -->\n{FENCES_DISAGREE}"));
    lint(&sandbox, &["GATES.md"]).code(0).stdout_lacks("WARN G3").stdout_contains("GATES.md:16: WARN G2:");
    lint(&sandbox, &["--strict", "--allow", "commonmark-disagrees", "GATES.md"]).code(0).stdout_is("LINT OK\n");
}
