//! The human report, byte for byte, on a shipped template: the Node tool's
//! markers must not drift while the code that prints them moves.

use crate::common::Sandbox;

const LEAF_TEMPLATE: &str = include_str!("../../templates/gates-leaf.md");
const PATH: &str = "/usr/bin:/bin";

#[cfg_attr(
    windows,
    ignore = "runs the shipped template, whose CHECK lines use POSIX sed and grep (cmd.exe has neither)"
)]
#[test]
fn leaf_template_status_approve_and_reverify_lines_are_pinned() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", LEAF_TEMPLATE);
    let root = sandbox.root.display();
    let g1 = "  PASS GATES:G1: The ledger declares its owned paths before its first gate\n       \
              exit=0; EXPECT=matched; output=sha256=3b5225f2b2871482892e21f1421bea3532ebe5beb59b8021aad96951dc24c37f; bytes=15\n";
    let g2 = "  PASS GATES:G2: The ledger file contains at least one gate line, counted from the file itself\n       \
              exit=0; EXPECT=matched; output=sha256=7de1555df0c2700329e815b93b32c571c3ea54dc967b89e81ab73b9972b72d1d; bytes=2\n";
    // PATH is shown once per run: in the approval blocks, else on the first RUN line.
    let run_lines =
        format!("  RUN  GATES:G1 shell=/bin/sh cwd={root} PATH={PATH}\n  RUN  GATES:G2 shell=/bin/sh cwd={root}\n");
    let approved_run_lines =
        format!("  RUN  GATES:G1 shell=/bin/sh cwd={root}\n  RUN  GATES:G2 shell=/bin/sh cwd={root}\n");

    sandbox.run_with(sandbox.cmd().env("PATH", PATH).arg("--status")).code(1).stdout_is(
        "  UNMET GATES:G1 (unchecked): The ledger declares its owned paths before its first gate\n  \
         UNMET GATES:G2 (unchecked): The ledger file contains at least one gate line, counted from the file itself\n\
         GATES.md: 3 gates\nUNMET: 2 (met: 1)\n  GATES:G1, GATES:G2\n",
    );

    let approve = sandbox.run_with(sandbox.cmd().env("PATH", PATH).arg("--approve")).code(0);
    let approve = approve.stdout_contains(
        "APPROVING GATES:G1\n    CHECK: sed -n '1,/^- \\[/p' GATES.md | grep '^OWNS: '\n    EXPECT: OWNS: GATES.md\n",
    );
    let tail = format!("{approved_run_lines}{g1}{g2}GATES.md: 3 gates\nALL MET (3 met)\n");
    assert!(approve.stdout().ends_with(&tail), "{}", approve.stdout());
    assert_eq!(approve.stdout().matches("    APPROVED: ").count(), 2, "{}", approve.stdout());

    sandbox
        .run_with(sandbox.cmd().env("PATH", PATH).arg("--reverify"))
        .code(0)
        .stdout_is(&format!("{run_lines}{g1}{g2}GATES.md: 3 gates\nALL MET (3 met, reran: 2, 2 of them met before)\n"));
    sandbox
        .run_with(sandbox.cmd().env("PATH", PATH).arg("--status"))
        .code(0)
        .stdout_is("GATES.md: 3 gates\nALL MET (3 met)\n");
}
