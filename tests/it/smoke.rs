//! The shipped template works end to end: status, a refused normal run,
//! approval with evidence written, and a reverify that keeps it green.

use crate::common::{outcome, Sandbox};

#[test]
fn template_runs_green_after_approval() {
    let sandbox = Sandbox::new();
    let template = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/templates/gates-leaf.md")).unwrap();
    sandbox.write("GATES.md", &template);

    let (code, out, _) = outcome(&sandbox.cmd().arg("--status").output().unwrap());
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("UNMET GATES:G1 (unchecked)"), "{out}");

    let (code, out, _) = outcome(&sandbox.cmd().output().unwrap());
    assert_eq!(code, 1);
    assert!(out.contains("APPROVAL REQUIRED GATES:G1") && out.contains("NOT RUN"), "{out}");
    assert_eq!(sandbox.read("GATES.md"), template, "a refused run changed the ledger");
    assert_eq!(sandbox.approval_count(), 0);

    let (code, out, err) = outcome(&sandbox.cmd().arg("--approve").output().unwrap());
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("ALL MET (3 met)"), "{out}");
    assert_eq!(sandbox.approval_count(), 2);
    let ledger = sandbox.read("GATES.md");
    assert_eq!(ledger.matches("EVIDENCE: automatic-evidence=v1; definition-sha256=").count(), 2, "{ledger}");

    sandbox
        .run_with(sandbox.cmd().arg("--reverify"))
        .code(0)
        .stdout_contains("ALL MET (3 met, reran: 2, previously met reverified: 2)");
}
