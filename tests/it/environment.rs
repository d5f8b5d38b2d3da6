//! What a run takes from its process environment, read once at the edge:
//! a shell found through a relative PATH entry, and `UNLAZY_SCOPE` for the
//! subcommands that pick a pipeline.

use crate::common::Sandbox;

#[test]
fn a_shell_found_through_a_relative_path_entry_runs_from_any_gate_directory() {
    let sandbox = Sandbox::new();
    // A wrapper script on Unix; on Windows a copy of cmd.exe, found by its
    // bare name through PATHEXT.
    #[cfg(windows)]
    let (name, path, pwd) = {
        let comspec = crate::common::sh::default_shell();
        std::fs::create_dir_all(sandbox.path("tools")).unwrap();
        std::fs::copy(comspec, sandbox.path("tools/cmd.exe")).unwrap();
        ("cmd", r"tools;C:\windows\system32".to_string(), "cd")
    };
    #[cfg(unix)]
    let (name, path, pwd) = {
        use std::os::unix::fs::PermissionsExt;
        let shell = sandbox.write("tools/mysh", "#!/bin/sh\nexec /bin/sh \"$@\"\n");
        std::fs::set_permissions(&shell, std::fs::Permissions::from_mode(0o755)).unwrap();
        ("mysh", "tools:/usr/bin:/bin".to_string(), "pwd")
    };
    std::fs::create_dir(sandbox.path("sub")).unwrap();
    let expect = crate::common::native("repo/sub");
    sandbox.write(
        "GATES.md",
        &format!("- [ ] G1: runs\n  CHECK: {pwd}\n  EXPECT: {expect}\n  CWD: sub\n  EVIDENCE: pending\n"),
    );
    sandbox
        .run_with(sandbox.cmd().env("PATH", path).args(["--approve", "--shell", name, "GATES.md"]))
        .code(0)
        .stdout_contains("PASS GATES:G1")
        .stdout_contains(&format!("    SHELL: {}", sandbox.path("tools").join(name).display()));
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
    let check = if cfg!(windows) { "echo probe=%GATE_CHECK_PROBE%" } else { "echo \"probe=$GATE_CHECK_PROBE\"" };
    sandbox.write("GATES.md", &crate::common::gate("G1", check, "probe=inherited"));
    sandbox
        .run_with(sandbox.cmd().env("GATE_CHECK_PROBE", "inherited").args(["--approve", "GATES.md"]))
        .code(0)
        .stdout_contains("PASS GATES:G1");
}

// A file name holding `\` exists on Unix only.
#[cfg(unix)]
#[test]
fn a_shell_named_with_a_backslash_is_a_path_as_in_the_node_tool() {
    use std::os::unix::fs::PermissionsExt;
    let sandbox = Sandbox::new();
    let shell = sandbox.write("my\\sh", "#!/bin/sh\nexec /bin/sh \"$@\"\n");
    std::fs::set_permissions(&shell, std::fs::Permissions::from_mode(0o755)).unwrap();
    sandbox.write("GATES.md", &crate::common::gate("G1", "echo ok", "ok"));
    // Node's resolveShell takes a value holding `/` or `\` as a path on every
    // platform: here the file `my\sh` of the working directory, never PATH.
    sandbox
        .run_with(sandbox.cmd().env("PATH", "/usr/bin:/bin").args(["--approve", "--shell", "my\\sh", "GATES.md"]))
        .code(0)
        .stdout_contains("PASS GATES:G1")
        .stdout_contains(&format!("    SHELL: {}\n", shell.display()));
}
