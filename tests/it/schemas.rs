//! The JSON Schemas published under references/ hold for real output: the
//! checker's `--format json` in every shape a run can take, and the
//! linter's `lint --format json`.

use std::path::Path;

use crate::common::{gate, Sandbox};
use serde_json::Value;

fn schema(name: &str) -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("references").join(name);
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    jsonschema::draft202012::new(&schema).unwrap_or_else(|error| panic!("{name} is not a valid schema: {error}"))
}

fn assert_valid(validator: &jsonschema::Validator, document: &Value) {
    let errors: Vec<String> =
        validator.iter_errors(document).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "{errors:#?}\n{document:#}");
}

#[test]
fn every_shape_of_the_run_report_fits_its_schema() {
    let report = schema("report.schema.json");
    let sandbox = Sandbox::new();
    sandbox.write(
        "GATES.md",
        &(gate("G1", "echo OK", "OK")
            + &gate("G2", &crate::common::sh::then("echo no", &crate::common::sh::exit(1)), "OK")
            + "- [ ] M1: by hand\n"),
    );
    let json = |args: &[&str], code: i32| -> Value {
        let mut command = sandbox.cmd();
        command.args(args).args(["--format", "json"]);
        let run = sandbox.run_with(&mut command).code(code);
        let stderr = run.stderr().to_string();
        let run = if stderr.is_empty() { run } else { run.stderr_contains(&stderr) };
        run.stdout_json()
    };
    let mut documents = vec![
        json(&["--status"], 1),
        json(&[], 1),
        json(&["--approve", "--show-output"], 1),
        json(&["--reverify", "--gate", "G*"], 1),
        json(&["--status", "--partition", "2/3"], 1),
        // Windows refuses --sandbox: an error document.
        json(&["--reverify", "--sandbox"], if cfg!(windows) { 2 } else { 1 }),
    ];
    // A proof gone stale, and a gate --proof does not count met.
    sandbox.write("src.txt", "changed since G1 was proven");
    documents.push(json(&["--status"], 1));
    documents.push(json(&["--status", "--proof"], 1));
    // A run that chose the only pipeline, and one that stopped on an error.
    sandbox.write(".unlazy/api/GATES.md", "- [x] A1: done\n  EVIDENCE: seen\n");
    documents.push(json(&["--status"], 0));
    sandbox.write(".unlazy/api/GATES.md", "- [ ] A1: done\nCHECK: x\n");
    documents.push(json(&["--status"], 2));
    // The shapes a reader has to handle are all there.
    let all = serde_json::to_string(&documents).unwrap();
    for field in [
        "\"outputTail\"",
        "\"selected\"",
        "\"notSelected\"",
        if cfg!(windows) { "\"errors\"" } else { "\"sandbox\"" },
        "\"notTargeted\"",
        "\"nextCommand\"",
        "\"proof\"",
        "\"changedCount\"",
        "\"unverified\"",
        "\"reason\"",
    ] {
        assert!(all.contains(field), "no document had {field}");
    }
    assert_eq!(documents.last().unwrap()["outcome"], "error");
    for document in &documents {
        assert_valid(&report, document);
    }
    // The schema is strict: an unknown field is refused.
    let mut extra = documents[0].clone();
    extra["surprise"] = Value::Bool(true);
    assert!(!report.is_valid(&extra));
}

#[test]
fn the_lint_report_fits_its_schema() {
    let lint = schema("lint-report.schema.json");
    let sandbox = Sandbox::new();
    sandbox.write(
        "weak.md",
        "- [ ] G1: the entire feature works perfectly\n  CHECK: echo ok\n  EXPECT: ok\n<!-- lint-allow: nope -->\n",
    );
    sandbox.write("broken.md", "- [ ] G1: x\nCHECK: y\n");
    let weak = sandbox.run(&["lint", "--format", "json", "weak.md"]).code(0).stdout_json();
    assert!(weak["findings"].as_array().unwrap().len() >= 3, "{weak}");
    assert_valid(&lint, &weak);
    let broken = sandbox.run(&["lint", "--format", "json", "broken.md"]).code(2).stdout_json();
    assert_eq!(broken["findings"][0]["rule"], "parse");
    assert_valid(&lint, &broken);
}

#[cfg_attr(
    windows,
    ignore = "makes its repository with git, which the wine prefix the Windows tests run in does not have"
)]
#[test]
fn every_shape_of_the_baseline_report_fits_its_schema() {
    let baseline = schema("baseline.schema.json");
    let sandbox = Sandbox::new();
    let git = |args: &[&str]| {
        let output = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"])
            .args(args)
            .current_dir(&sandbox.root)
            .output()
            .unwrap();
        assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    };
    git(&["init", "-q"]);
    sandbox.write(
        "GATES.md",
        &(gate("D1", "test -f new.txt && echo NEW", "NEW")
            + &gate("V1", "echo SAME", "SAME")
            + &gate("F1", "echo no; exit 1", "YES")
            + &gate("U1", "echo U", "U")
            + "- [ ] C1: in web\n  CHECK: echo WEB\n  EXPECT: WEB\n  CWD: web\n"),
    );
    git(&["add", "-A"]);
    git(&["commit", "-qm", "one"]);
    sandbox.write("new.txt", "new\n");
    sandbox.write("web/index.html", "web\n");
    git(&["add", "-A"]);
    git(&["commit", "-qm", "two"]);
    sandbox.run(&["--approve", "--gate", "D1,V1,F1,C1", "-q"]).code(1).stdout_contains("FAIL GATES:F1");
    let json = |args: &[&str], code: i32| -> Value {
        let mut command = sandbox.cmd();
        command.arg("baseline").args(args).args(["--format", "json"]);
        let run = sandbox.run_with(&mut command).code(code);
        let stderr = run.stderr().to_string();
        let run = if stderr.is_empty() { run } else { run.stderr_contains(&stderr) };
        run.stdout_json()
    };
    let fresh = sandbox.root.parent().unwrap().join("no-receipts");
    let mut unproven = sandbox.cmd();
    unproven.args(["baseline", "HEAD~1", "--gate", "D1", "--format", "json"]).env("UNLAZY_RECEIPT_DIR", &fresh);
    let documents = vec![
        json(&["HEAD~1"], 1),
        json(&["HEAD~1", "--gate", "D1", "--unconfined"], 0),
        json(&["no-such-ref"], 2),
        sandbox.run_with(&mut unproven).code(0).stderr_contains("DISCRIMINATES").stdout_json(),
    ];
    let all = serde_json::to_string(&documents).unwrap();
    for shape in [
        "\"result\":\"discriminates\"",
        "\"result\":\"vacuous\"",
        "\"result\":\"failing\"",
        "\"result\":\"unknown\"",
        "\"result\":\"approval-required\"",
        "\"outputTail\"",
        "\"provenAt\"",
        "\"source\":\"run\"",
        "\"nextCommand\"",
        "\"unconfined\":true",
        "\"landlockAbi\"",
    ] {
        assert!(all.contains(shape), "no document had {shape}");
    }
    for document in &documents {
        assert_valid(&baseline, document);
    }
    let mut extra = documents[0].clone();
    extra["gates"][0]["surprise"] = Value::Bool(true);
    assert!(!baseline.is_valid(&extra));
}
