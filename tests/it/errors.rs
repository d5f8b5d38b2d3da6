//! How a run fails: only command-line mistakes point at `--help`; ledgers
//! that cannot be read as ledgers name the file, exit 2, and change nothing.

use crate::common::{gate, Sandbox};

const USAGE_HINT: &str = "run gate-check --help for usage";

// FIFOs in the file system are a Unix feature.
#[cfg(unix)]
#[test]
fn fifo_ledger_is_an_error_not_a_usage_message() {
    let sandbox = Sandbox::new();
    let fifo = sandbox.path("GATES.md");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    sandbox.run_with(sandbox.cmd().args(["--status"]).timeout(std::time::Duration::from_secs(20))).code(2).stderr_is(
        &format!("gate-check: error: gate ledger must be one unchanged regular single-link file: {}\n", fifo.display()),
    );
}

#[test]
fn oversized_ledger_is_an_error_not_a_usage_message() {
    let sandbox = Sandbox::new();
    let mut text = gate("G1", "true", "x");
    text.push_str(&"x".repeat(8 * 1024 * 1024));
    let path = sandbox.write("GATES.md", &text);
    sandbox
        .run(&["--approve"])
        .code(2)
        .stderr_is(&format!("gate-check: error: gate ledger exceeds 8388608 bytes: {}\n", path.display()));
    assert_eq!(sandbox.read("GATES.md"), text);
    assert_eq!(sandbox.approval_count(), 0);
}

#[test]
fn invalid_ledger_names_file_and_line_without_usage_hint() {
    let sandbox = Sandbox::new();
    let text = format!("{}{}", gate("G1", "true", "x"), gate("G1", "true", "y"));
    sandbox.write("GATES.md", &text);
    let path = sandbox.path("GATES.md");
    let run = sandbox
        .run(&["--status"])
        .code(2)
        .stderr_is(&format!("{}:5: error: duplicate gate id G1 (first declared on line 1)\n", path.display()));
    drop(run);
    assert_eq!(sandbox.read("GATES.md"), text);
}

#[test]
fn usage_mistakes_still_point_at_help() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "true", "x"));
    sandbox
        .run(&["--status", "--reverify"])
        .code(2)
        .stderr_is(&format!("gate-check: error: --status and --reverify are mutually exclusive\n{USAGE_HINT}\n"));
    sandbox.run(&["--status", "missing.md"]).code(2).stderr_is(&format!(
        "gate-check: error: no such gate file: {}\n{USAGE_HINT}\n",
        sandbox.path("missing.md").display()
    ));
}
