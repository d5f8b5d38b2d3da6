//! Several gate-check processes on one ledger at once: every write-back is
//! serialized under the ledger lock and re-reads the file, so no gate's
//! evidence and no hand edit is lost.

use crate::common::{outcome, run_concurrently, Sandbox};

const PROCESSES: usize = 8;

#[test]
fn eight_concurrent_approve_runs_leave_every_gate_correct() {
    let sandbox = Sandbox::new();
    let mut text = String::from("# Gates: concurrency\n\nA hand-written note that must survive.\n\n");
    for i in 0..PROCESSES {
        // Staggered sleeps make the runs finish, and write, in mixed order.
        let check = if cfg!(windows) {
            // cmd.exe waits in whole seconds: half the gates wait one.
            format!("ping -n {} 127.0.0.1 > nul& echo done-{i}", 1 + i % 2)
        } else {
            format!("sleep {}; printf 'done-{i}\\n'", (PROCESSES - i) as f64 * 0.05)
        };
        text.push_str(&format!("- [ ] G{i}: gate {i}\n  CHECK: {check}\n  EXPECT: done-{i}\n  EVIDENCE: pending\n"));
    }
    sandbox.write("GATES.md", &text);

    let commands = (0..PROCESSES).map(|_| {
        let mut command = sandbox.std_cmd();
        command.args(["--approve", "--jobs", "8", "GATES.md"]);
        command
    });
    for output in run_concurrently(commands) {
        let (code, out, err) = outcome(&output);
        assert!(code == 0 || code == 1, "exit {code}: {out}{err}");
        assert!(!err.contains("cannot update"), "{err}");
    }

    sandbox
        .run_with(sandbox.cmd().args(["--status", "GATES.md"]))
        .code(0)
        .stdout_contains(&format!("ALL MET ({PROCESSES} met)"));
    let ledger = sandbox.read("GATES.md");
    assert!(ledger.contains("A hand-written note that must survive."));
    assert_eq!(ledger.matches("EVIDENCE: automatic-evidence=v1;").count(), PROCESSES, "{ledger}");
    assert_eq!(ledger.matches("EVIDENCE: ").count(), PROCESSES, "an EVIDENCE line was duplicated: {ledger}");
    assert_eq!(sandbox.approval_count(), PROCESSES);
}
