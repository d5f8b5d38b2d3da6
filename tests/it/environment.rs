//! What a run takes from its process environment, read once at the edge:
//! a shell found through a relative PATH entry, and `UNLAZY_SCOPE` for the
//! subcommands that pick a pipeline.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use crate::common::Sandbox;

#[test]
fn a_shell_found_through_a_relative_path_entry_runs_from_any_gate_directory() {
    let sandbox = Sandbox::new();
    let shell = sandbox.write("tools/mysh", "#!/bin/sh\nexec /bin/sh \"$@\"\n");
    fs::set_permissions(&shell, fs::Permissions::from_mode(0o755)).unwrap();
    fs::create_dir(sandbox.path("sub")).unwrap();
    sandbox.write("GATES.md", "- [ ] G1: runs\n  CHECK: pwd\n  EXPECT: repo/sub\n  CWD: sub\n  EVIDENCE: pending\n");
    sandbox
        .run_with(sandbox.cmd().env("PATH", "tools:/usr/bin:/bin").args(["--approve", "--shell", "mysh", "GATES.md"]))
        .code(0)
        .stdout_contains("PASS GATES:G1");
}

#[test]
fn lint_without_files_takes_the_pipeline_from_unlazy_scope() {
    let sandbox = Sandbox::new();
    sandbox.write(".unlazy/api/GATES.md", "- [x] G1: a person read it\n  EVIDENCE: read on Monday\n");
    sandbox.write(".unlazy/web/GATES.md", "- [x] G1: a person read it\n  EVIDENCE: read on Monday\n");
    sandbox.run(&["lint"]).code(2).stderr_contains("2 pipelines present");
    sandbox.run_with(sandbox.cmd().env("UNLAZY_SCOPE", "web").arg("lint")).code(0).stdout_contains("LINT OK");
}

#[test]
fn checks_inherit_the_environment_gate_check_was_started_with() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &crate::common::gate("G1", "echo \"probe=$GATE_CHECK_PROBE\"", "probe=inherited"));
    sandbox
        .run_with(sandbox.cmd().env("GATE_CHECK_PROBE", "inherited").args(["--approve", "GATES.md"]))
        .code(0)
        .stdout_contains("PASS GATES:G1");
}
