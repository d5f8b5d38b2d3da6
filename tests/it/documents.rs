//! A machine document is owed to its reader: one that cannot be written
//! fails the run (exit 2, one error line), except into a closed pipe, whose
//! reader has stopped listening.

use std::process::Stdio;

#[cfg(unix)]
use crate::common::outcome;
use crate::common::Sandbox;

const MET: &str = "- [x] M: reviewed\n  EVIDENCE: read the diff\n";

/// `gate-check ARGS > /dev/full`: (exit code, stderr).
#[cfg(unix)]
fn to_full_disk(sandbox: &Sandbox, args: &[&str]) -> (i32, String) {
    let mut command = sandbox.std_cmd();
    command.args(args).stdout(std::fs::File::create("/dev/full").expect("/dev/full")).stderr(Stdio::piped());
    let (code, _, stderr) = outcome(&command.output().unwrap());
    (code, stderr)
}

// /dev/full, a Linux device.
#[cfg(unix)]
#[test]
fn a_document_that_cannot_be_written_fails_the_run() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", MET);
    sandbox
        .run(&["--status", "--format", "json"])
        .code(0)
        .stdout_contains("\"outcome\": \"all-met\"")
        .stderr_contains("ALL MET");
    let full = "No space left on device (os error 28)";
    let human = "GATES.md: 1 gates\nALL MET (1 met)\n";
    assert_eq!(
        to_full_disk(&sandbox, &["--status", "--format", "json"]),
        (2, format!("{human}gate-check: error: cannot write the JSON document: {full}\n"))
    );
    assert_eq!(
        to_full_disk(&sandbox, &["--status", "--format", "junit"]),
        (2, format!("{human}gate-check: error: cannot write the JUnit document: {full}\n"))
    );
    assert_eq!(
        to_full_disk(&sandbox, &["lint", "--json", "GATES.md"]),
        (2, format!("gate-check: error: cannot write the JSON document: {full}\n"))
    );
    // Human lines on a full disk are the reader's loss, not a failed run.
    assert_eq!(to_full_disk(&sandbox, &["--status"]), (0, String::new()));
}

#[test]
fn a_closed_pipe_ends_the_run_with_its_own_status_and_no_message() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", MET);
    for args in [&["--status", "--format", "json"][..], &["lint", "--json", "GATES.md"]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut command = sandbox.std_cmd();
        command.args(args).stdout(writer).stderr(Stdio::piped());
        let output = command.output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("error"), "{args:?}: {stderr}");
    }
}
