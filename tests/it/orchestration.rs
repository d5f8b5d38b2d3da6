//! The verification hierarchy with the shipped branch template: a node
//! ledger's first gate re-runs its children with `--reverify`, so a child
//! that no longer passes is unchecked and the branch fails with it.

use std::path::PathBuf;

use crate::common::{gate, Sandbox};

const SCOPE: &str = "pipe";

fn template(name: &str) -> String {
    std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("templates").join(name)).unwrap()
}

/// PATH with the directory of the binary under test first, so checks can
/// call `gate-check` by name as the template does.
fn path_with_binary() -> String {
    let binary = assert_cmd::cargo::cargo_bin("gate-check");
    let delimiter = crate::core_support::PATH_DELIMITER;
    format!("{}{delimiter}{}", binary.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default())
}

/// A node ledger made from the template's N1 gate alone, naming two leaves.
fn node_ledger() -> String {
    let text = template("gates-node.md").replace("<scope>", SCOPE);
    let start = text.find("- [ ] N1:").unwrap();
    let end = text.find("- [ ] N2:").unwrap();
    text[start..end].to_string()
}

#[test]
fn a_branch_reverifies_its_children() {
    let sandbox = Sandbox::new();
    sandbox.write("marker.txt", "leaf-one-ok\n");
    sandbox.write(
        &format!(".unlazy/{SCOPE}/gates/leaf-1.1.1.md"),
        &gate("G1", &crate::common::sh::cat("marker.txt"), "leaf-one-ok"),
    );
    sandbox.write(&format!(".unlazy/{SCOPE}/gates/leaf-1.1.2.md"), &gate("G1", "echo two", "two"));
    sandbox.write(&format!(".unlazy/{SCOPE}/gates/node-1.1.md"), &node_ledger());
    let path = path_with_binary();

    // One approving scope run: leaves sort before the node, so the node's
    // nested --reverify finds both leaves approved and green.
    sandbox
        .run_with(sandbox.cmd().env("PATH", &path).args(["--approve", "--scope", SCOPE]))
        .code(0)
        .stdout_contains("PASS node-1.1:N1")
        .stdout_contains("ALL MET (3 met) [scope pipe]");

    // The first leaf's check stops passing. Its box is still ticked, but the
    // branch re-runs it, unchecks it, and fails.
    std::fs::remove_file(sandbox.path("marker.txt")).unwrap();
    let node = format!(".unlazy/{SCOPE}/gates/node-1.1.md");
    sandbox
        .run_with(sandbox.cmd().env("PATH", &path).args(["--reverify", "--cwd", "."]).arg(&node))
        .code(1)
        .stdout_contains("FAIL node-1.1:N1");
    let leaf = sandbox.read(&format!(".unlazy/{SCOPE}/gates/leaf-1.1.1.md"));
    assert!(leaf.starts_with("- [ ] G1:") && leaf.contains("  EVIDENCE: pending"), "{leaf}");
    sandbox
        .run(&["--status", "--scope", SCOPE])
        .code(1)
        .stdout_contains("UNMET: 2 (met: 1) [scope pipe]")
        .stdout_contains("leaf-1.1.1:G1, node-1.1:N1");
}

#[test]
fn templates_are_valid_ledgers_or_prose() {
    let sandbox = Sandbox::new();
    sandbox.write(".unlazy/t/gates/node-1.md", &template("gates-node.md"));
    // The node template must parse.
    sandbox
        .run(&["--status", "--scope", "t"])
        .code(1)
        .stdout_contains("node-1.md: 4 gates")
        .stdout_contains("  node-1:N1, node-1:N2, node-1:N3, node-1:N4");
    // PLAN.md is prose: it must not be mistaken for a ledger with gates.
    sandbox.write("plan/GATES.md", &template("PLAN.md"));
    sandbox
        .run_with(sandbox.cmd().args(["--status", "plan/GATES.md"]))
        .code(2)
        .stderr_contains("ledger contains zero live gates");
}
