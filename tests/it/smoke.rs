//! The shipped template works end to end: status, a refused normal run,
//! approval with evidence written, and a reverify that keeps it green.

use crate::common::Sandbox;

#[cfg_attr(
    windows,
    ignore = "runs the shipped template, whose CHECK lines use POSIX sed and grep (cmd.exe has neither)"
)]
#[test]
fn template_runs_green_after_approval() {
    let sandbox = Sandbox::new();
    let template = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/templates/gates-leaf.md")).unwrap();
    sandbox.write("GATES.md", &template);

    sandbox.run_with(sandbox.cmd().arg("--status")).code(1).stdout_contains("UNMET GATES:G1 (unchecked)");

    sandbox
        .run_with(&mut sandbox.cmd())
        .code(1)
        .stdout_contains("APPROVAL REQUIRED GATES:G1")
        .stdout_contains("NOT RUN");
    assert_eq!(sandbox.read("GATES.md"), template, "a refused run changed the ledger");
    assert_eq!(sandbox.approval_count(), 0);

    sandbox.run(&["--approve"]).code(0).stdout_contains("ALL MET (3 met)");
    assert_eq!(sandbox.approval_count(), 2);
    let ledger = sandbox.read("GATES.md");
    assert_eq!(ledger.matches("EVIDENCE: automatic-evidence=v1; definition-sha256=").count(), 2, "{ledger}");

    sandbox
        .run_with(sandbox.cmd().arg("--reverify"))
        .code(0)
        .stdout_contains("ALL MET (3 met, reran: 2, 2 of them met before)");
}
