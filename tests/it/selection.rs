//! Choosing gates through the real binary: `-j`, `--gate` globs and comma
//! lists, and `--partition K/N`, whose shards cover every gate once.

use crate::common::{gate, Sandbox};
use serde_json::Value;

/// Five passing gates in two ledgers: `T1`-`T3` in GATES.md, `T4` and
/// `U1` in gates/leaf-1.md.
fn five(sandbox: &Sandbox) {
    let root: String = ["T1", "T2", "T3"].iter().map(|id| gate(id, "echo OK", "OK")).collect();
    sandbox.write("GATES.md", &root);
    sandbox.write("gates/leaf-1.md", &(gate("T4", "echo OK", "OK") + &gate("U1", "echo OK", "OK")));
}

/// The qualified ids a JSON run selected.
fn selected(document: &Value) -> Vec<String> {
    document["gates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|gate| gate["selected"] != false)
        .map(|gate| gate["qualifiedId"].as_str().unwrap().to_string())
        .collect()
}

fn status(sandbox: &Sandbox, args: &[&str]) -> Value {
    let mut command = sandbox.cmd();
    command.args(["--status", "--format", "json"]).args(args);
    sandbox.run_with(&mut command).code(1).stderr_contains("UNMET: ").stdout_json()
}

#[test]
fn gate_takes_globs_and_comma_lists() {
    let sandbox = Sandbox::new();
    five(&sandbox);
    assert_eq!(selected(&status(&sandbox, &["--gate", "T*"])), ["GATES:T1", "GATES:T2", "GATES:T3", "leaf-1:T4"]);
    assert_eq!(selected(&status(&sandbox, &["--gate", "leaf-1:*"])), ["leaf-1:T4", "leaf-1:U1"]);
    assert_eq!(
        selected(&status(&sandbox, &["--gate", "T1,leaf-1:U1", "--gate", "T3"])),
        ["GATES:T1", "GATES:T3", "leaf-1:U1"]
    );
    sandbox.run(&["--status", "--gate", "T1,Z*"]).code(2).stderr_is(
        "gate-check: error: unknown --gate \"Z*\": no targeted ledger has that gate\nrun gate-check --help for usage\n",
    );
    sandbox.run(&["--status", "--gate", "T1,"]).code(2).stderr_contains("--gate \"T1,\" has an empty name in its list");
    sandbox.run(&["--status", "--gate", "T[1"]).code(2).stderr_contains("--gate \"T[1\": unclosed character class");
}

#[test]
fn partitions_cover_every_gate_exactly_once_and_run_only_their_share() {
    let sandbox = Sandbox::new();
    five(&sandbox);
    let first = selected(&status(&sandbox, &["--partition", "1/2"]));
    let second = selected(&status(&sandbox, &["--partition", "2/2"]));
    assert_eq!(first, ["GATES:T1", "GATES:T3", "leaf-1:U1"]);
    assert_eq!(second, ["GATES:T2", "leaf-1:T4"]);
    // With --gate, the share is taken of the gates it selects.
    assert_eq!(selected(&status(&sandbox, &["--gate", "T*", "--partition", "2/2"])), ["GATES:T2", "leaf-1:T4"]);

    // A shard runs only its share, with -j for --jobs; JUnit marks the rest skipped.
    let shard = sandbox.run(&["--approve", "-j", "2", "--partition", "2/2", "--format", "junit"]);
    let xml = shard.code(0).stderr_contains("ALL MET (2 met, not selected: 3)\n").into_stdout();
    assert_eq!(xml.matches("<skipped message=\"not selected (--partition 2/2)\"/>").count(), 3, "{xml}");
    assert_eq!(sandbox.approval_count(), 2, "only the share was approved");
    assert!(sandbox.read("GATES.md").matches("EVIDENCE: pending").count() == 2, "{}", sandbox.read("GATES.md"));

    for wrong in ["0/2", "3/2", "2", "1/0", "a/b", "1/1001"] {
        sandbox
            .run(&["--status", "--partition", wrong])
            .code(2)
            .stderr_contains(&format!("--partition needs K/N with 1 <= K <= N <= 1000, got \"{wrong}\""));
    }
    // A shard left waiting for approval names its share in the next command.
    sandbox.write("GATES.md", &gate("T9", "echo NINE", "NINE"));
    sandbox.run(&["--partition", "1/2", "-q"]).code(1).stdout_contains("next: gate-check --approve --partition 1/2\n");
}
