//! Running checks through the real binary: shell and CWD resolution, the
//! pass rule, canonical output, the 1 MiB ceilings, timeouts that kill the
//! whole process group, late descendant output, and spawn failures.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use crate::common::{gate, Run, Sandbox};
use crate::core_support::{process_gone, sha256_hex};

/// Approves and runs GATES.md holding one gate `A`; returns (exit, stdout, stderr).
fn run_gate(sandbox: &Sandbox, check: &str, expect: &str, args: &[&str]) -> Run {
    sandbox.write("GATES.md", &gate("A", check, expect));
    sandbox.run_with(sandbox.cmd().arg("--approve").args(args).timeout(Duration::from_secs(60)))
}

fn evidence(sandbox: &Sandbox) -> String {
    let ledger = sandbox.read("GATES.md");
    ledger.lines().find_map(|l| l.strip_prefix("  EVIDENCE: ")).unwrap_or_default().to_string()
}

/// The gate's check passed and the run is all met.
fn passes(run: Run) -> Run {
    run.code(0).stdout_contains("\n  PASS GATES:A: outcome A\n").stdout_contains("\nALL MET (1 met)\n")
}

#[test]
fn shell_resolution() {
    let sandbox = Sandbox::new();
    let path_var = std::env::var("PATH").unwrap();
    let bash_on_path =
        path_var.split(':').map(|d| std::path::Path::new(d).join("bash")).find(|p| p.is_file()).expect("bash on PATH");

    passes(run_gate(&sandbox, "echo \"$0\"", "bash", &["--shell", "bash"]))
        .stdout_contains(&format!("    SHELL: {}\n", bash_on_path.display()));
    assert!(evidence(&sandbox).contains(&format!("; shell={}; ", bash_on_path.display())));

    passes(run_gate(&sandbox, "echo \"shell=$0\"", "shell=/bin/bash", &["--shell", "/bin/bash"]));

    fs::write(sandbox.path("mysh"), "#!/bin/sh\necho via-wrapper\nexec /bin/sh \"$@\"\n").unwrap();
    fs::set_permissions(sandbox.path("mysh"), fs::Permissions::from_mode(0o755)).unwrap();
    passes(run_gate(&sandbox, "echo inner", "via-wrapper", &["--shell", "./mysh"]))
        .stdout_contains(&format!("    SHELL: {}\n", sandbox.path("mysh").display()));

    sandbox.write("GATES.md", &gate("A", "echo \"shell=$0\"", "shell=/bin/bash"));
    // Approved above through --shell: the same resolved shell is the same identity.
    sandbox
        .run_with(sandbox.cmd().env("UNLAZY_SHELL", "/bin/bash").arg("--approve"))
        .code(0)
        .stdout_lacks("APPROVAL REQUIRED")
        .stdout_contains("  RUN  GATES:A shell=/bin/bash ")
        .stdout_contains("\nALL MET (1 met)\n");

    for (flag, env) in
        [(Some("no-such-shell-xyz"), None), (None, Some("/nonexistent/sh")), (Some("./missing-sh"), None)]
    {
        let mut cmd = sandbox.cmd();
        cmd.arg("--reverify");
        if let Some(flag) = flag {
            cmd.args(["--shell", flag]);
        }
        if let Some(env) = env {
            cmd.env("UNLAZY_SHELL", env);
        }
        sandbox.run_with(&mut cmd).code(2).stderr_contains("cannot resolve command shell").stdout_lacks("RUN");
    }
}

#[test]
fn cwd_resolution() {
    let sandbox = Sandbox::new();
    fs::create_dir_all(sandbox.path("pkg/inner")).unwrap();
    fs::create_dir_all(sandbox.path("other/inner")).unwrap();
    let check = |check: &str, cwd: Option<&str>| {
        let cwd_line = cwd.map(|c| format!("  CWD: {c}\n")).unwrap_or_default();
        format!("- [ ] A: a\n  CHECK: {check}\n  EXPECT: ok\n{cwd_line}  EVIDENCE: pending\n")
    };
    let root = sandbox.root.display().to_string();
    let cases = [
        // (ledger, CWD attribute, extra args, directory the check must run in)
        ("pkg/GATES.md", None, vec!["pkg/GATES.md"], format!("{root}/pkg")),
        ("pkg/GATES.md", Some("inner"), vec!["pkg/GATES.md"], format!("{root}/pkg/inner")),
        ("pkg/GATES.md", None, vec!["--cwd", "other", "pkg/GATES.md"], format!("{root}/other")),
        ("pkg/GATES.md", Some("inner"), vec!["--cwd", "other", "pkg/GATES.md"], format!("{root}/other/inner")),
        ("pkg/GATES.md", Some(".."), vec!["pkg/GATES.md"], root.clone()),
        ("GATES.md", Some("pkg"), vec![], format!("{root}/pkg")),
    ];
    for (ledger, cwd, args, wanted) in cases {
        sandbox.write(ledger, &check(&format!("test \"$(pwd)\" = '{wanted}' && echo ok"), cwd));
        sandbox
            .run_with(sandbox.cmd().arg("--approve").args(&args))
            .code(0)
            .stdout_contains(&format!("    CWD: {wanted}\n"));
        fs::remove_file(sandbox.path(ledger)).unwrap();
    }

    sandbox.write("GATES.md", &check("echo ok", Some("absent")));
    sandbox.run(&["--approve"]).code(2).stderr_contains(&format!("gate GATES:A CWD does not exist: {root}/absent"));
    assert_eq!(sandbox.approval_count(), 6);
    sandbox
        .run_with(sandbox.cmd().args(["--cwd", "absent"]))
        .code(2)
        .stderr_contains(&format!("--cwd does not exist: {root}/absent"));
}

#[test]
fn pass_needs_exit_zero_and_a_match() {
    let sandbox = Sandbox::new();
    run_gate(&sandbox, "echo ok; exit 1", "ok", &[])
        .code(1)
        .stdout_contains("FAIL GATES:A")
        .stdout_contains("exit=1; EXPECT=matched");
    assert_eq!(evidence(&sandbox), "pending");
    run_gate(&sandbox, "echo nope", "ok", &[])
        .code(1)
        .stdout_contains("FAIL GATES:A")
        .stdout_contains("exit=0; EXPECT=not matched; output=nope");
    run_gate(&sandbox, "no_such_command_xyz", "x", &[])
        .code(1)
        .stdout_contains("FAIL GATES:A")
        .stdout_contains("exit=127;");
    assert!(!sandbox.read("GATES.md").contains("- [x]"));
}

#[test]
fn output_is_stdout_newline_stderr() {
    let sandbox = Sandbox::new();
    passes(run_gate(&sandbox, "printf out; printf err >&2", "/^out\\nerr$/", &[]));
    let ev = evidence(&sandbox);
    assert!(ev.contains(&format!("output-sha256={}; output-bytes=7;", sha256_hex("out\nerr"))), "{ev}");
    // One stream alone gets no separator.
    passes(run_gate(&sandbox, "printf err >&2", "/^err$/", &[]));
    assert!(evidence(&sandbox).contains(&format!("output-sha256={}; output-bytes=3;", sha256_hex("err"))));
}

#[test]
fn output_over_one_mebibyte_fails_at_once() {
    let sandbox = Sandbox::new();
    for check in ["yes", "head -c 100000000 /dev/zero", "yes >&2", "yes & yes >&2; wait"] {
        let started = Instant::now();
        run_gate(&sandbox, check, "y", &[])
            .code(1)
            .stdout_contains("FAIL GATES:A")
            .stdout_contains("output exceeded 1048576 bytes;");
        assert!(started.elapsed() < Duration::from_secs(30), "{check} took {:?}", started.elapsed());
        assert_eq!(evidence(&sandbox), "pending");
    }
}

#[test]
fn exactly_one_mebibyte_passes() {
    let sandbox = Sandbox::new();
    passes(run_gate(&sandbox, "head -c 1048576 /dev/zero | tr '\\0' a", "aaaa", &[]));
    assert!(evidence(&sandbox).contains("; output-bytes=1048576; "));
    // The same raw bytes split over both streams gain a separator: one too many.
    run_gate(&sandbox, "head -c 524288 /dev/zero | tr '\\0' a; head -c 524288 /dev/zero | tr '\\0' b >&2", "aaaa", &[])
        .code(1)
        .stdout_contains("output exceeded 1048576 bytes after stdout/stderr UTF-8 combination");
}

#[test]
fn invalid_utf8_output_is_replaced_before_matching() {
    let sandbox = Sandbox::new();
    passes(run_gate(&sandbox, "printf 'ok\\377'", "ok\u{FFFD}", &[]));
    assert!(evidence(&sandbox).contains(&format!("output-sha256={}; output-bytes=5;", sha256_hex("ok\u{FFFD}"))));
    // 600,000 invalid bytes are under the raw cap but triple when replaced.
    run_gate(&sandbox, "head -c 600000 /dev/zero | tr '\\0' '\\377'", "\u{FFFD}", &[])
        .code(1)
        .stdout_contains("output exceeded 1048576 bytes after stdout/stderr UTF-8 combination");
}

#[test]
fn timeout_kills_the_process_group() {
    let sandbox = Sandbox::new();
    let started = Instant::now();
    run_gate(&sandbox, "sleep 600 & echo $! > sleep.pid; wait", "never", &["--timeout", "1"])
        .code(1)
        .stdout_contains("FAIL GATES:A")
        .stdout_contains("timed out after 1s;");
    assert!(started.elapsed() < Duration::from_secs(20), "took {:?}", started.elapsed());
    let pid: u32 = sandbox.read("sleep.pid").trim().parse().unwrap();
    assert!(process_gone(pid, Duration::from_secs(10)), "grandchild sleep {pid} survived the timeout");
}

#[test]
fn late_output_of_descendants_is_seen() {
    let sandbox = Sandbox::new();
    passes(run_gate(&sandbox, "(sleep 1; echo late) & echo early", "late", &[]));
    assert!(evidence(&sandbox).contains(&format!("output-sha256={};", sha256_hex("early\nlate\n"))));
}

#[test]
fn spawn_failure_is_a_failed_gate() {
    let sandbox = Sandbox::new();
    fs::write(sandbox.path("not-executable"), "#!/bin/sh\n").unwrap();
    fs::set_permissions(sandbox.path("not-executable"), fs::Permissions::from_mode(0o644)).unwrap();
    run_gate(&sandbox, "echo ok", "ok", &["--shell", "./not-executable"])
        .code(1)
        .stdout_contains("FAIL GATES:A")
        .stdout_contains("Permission denied")
        .stdout_contains("not-executable")
        .stderr_lacks("panicked");
    assert_eq!(evidence(&sandbox), "pending");
}
