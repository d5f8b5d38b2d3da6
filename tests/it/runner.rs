//! Running checks through the real binary: shell and CWD resolution, the
//! pass rule, canonical output, the 1 MiB ceilings, timeouts that kill the
//! whole process group, late descendant output, and spawn failures.

use std::fs;
use std::time::{Duration, Instant};

use crate::common::{gate, sh, Run, Sandbox};
use crate::core_support::sha256_hex;

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

// Runs bash and an executable `#!/bin/sh` wrapper as the shell; Windows'
// lookup (%ComSpec%, PATHEXT, `;`) is tested in `windows`.
#[cfg(unix)]
#[test]
fn shell_resolution() {
    use std::os::unix::fs::PermissionsExt;
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
    let under = |relative: &str| sandbox.path(relative).display().to_string();
    let cases = [
        // (ledger, CWD attribute, extra args, directory the check must run in)
        ("pkg/GATES.md", None, vec!["pkg/GATES.md"], under("pkg")),
        ("pkg/GATES.md", Some("inner"), vec!["pkg/GATES.md"], under("pkg/inner")),
        ("pkg/GATES.md", None, vec!["--cwd", "other", "pkg/GATES.md"], under("other")),
        ("pkg/GATES.md", Some("inner"), vec!["--cwd", "other", "pkg/GATES.md"], under("other/inner")),
        ("pkg/GATES.md", Some(".."), vec!["pkg/GATES.md"], root.clone()),
        ("GATES.md", Some("pkg"), vec![], under("pkg")),
    ];
    for (ledger, cwd, args, wanted) in cases {
        let wanted = wanted.replace('/', std::path::MAIN_SEPARATOR_STR);
        let in_wanted = if cfg!(windows) {
            format!("if \"%CD%\"==\"{wanted}\" echo ok")
        } else {
            format!("test \"$(pwd)\" = '{wanted}' && echo ok")
        };
        sandbox.write(ledger, &check(&in_wanted, cwd));
        sandbox
            .run_with(sandbox.cmd().arg("--approve").args(&args))
            .code(0)
            .stdout_contains(&format!("    CWD: {wanted}\n"));
        fs::remove_file(sandbox.path(ledger)).unwrap();
    }

    sandbox.write("GATES.md", &check("echo ok", Some("absent")));
    let absent = under("absent");
    sandbox.run(&["--approve"]).code(2).stderr_contains(&format!("gate GATES:A CWD does not exist: {absent}"));
    assert_eq!(sandbox.approval_count(), 6);
    sandbox
        .run_with(sandbox.cmd().args(["--cwd", "absent"]))
        .code(2)
        .stderr_contains(&format!("--cwd does not exist: {absent}"));
}

#[test]
fn pass_needs_exit_zero_and_a_match() {
    let sandbox = Sandbox::new();
    run_gate(&sandbox, &sh::then("echo ok", &sh::exit(1)), "ok", &[])
        .code(1)
        .stdout_contains("FAIL GATES:A")
        .stdout_contains("exit=1; EXPECT=matched");
    assert_eq!(evidence(&sandbox), "pending");
    run_gate(&sandbox, "echo nope", "ok", &[])
        .code(1)
        .stdout_contains("FAIL GATES:A")
        .stdout_contains("exit=0; EXPECT=not matched; output=nope");
    // sh's 127; cmd.exe's 9009.
    let not_found = if cfg!(windows) { "exit=9009;" } else { "exit=127;" };
    run_gate(&sandbox, "no_such_command_xyz", "x", &[])
        .code(1)
        .stdout_contains("FAIL GATES:A")
        .stdout_contains(not_found);
    assert!(!sandbox.read("GATES.md").contains("- [x]"));
}

#[test]
fn output_is_stdout_newline_stderr() {
    let sandbox = Sandbox::new();
    // No space before `>`, which cmd.exe would print.
    let to_stderr = |word: &str| format!("{}>&2", sh::print(word));
    passes(run_gate(&sandbox, &sh::then(&sh::print("out"), &to_stderr("err")), "/^out\\nerr$/", &[]));
    let ev = evidence(&sandbox);
    assert!(ev.contains(&format!("output-sha256={}; output-bytes=7;", sha256_hex("out\nerr"))), "{ev}");
    // One stream alone gets no separator.
    passes(run_gate(&sandbox, &to_stderr("err"), "/^err$/", &[]));
    assert!(evidence(&sandbox).contains(&format!("output-sha256={}; output-bytes=3;", sha256_hex("err"))));
}

#[test]
fn output_over_one_mebibyte_fails_at_once() {
    let sandbox = Sandbox::new();
    // cmd.exe has no `yes`: it prints a 64 KiB file for ever.
    fs::write(sandbox.path("y.txt"), "y\n".repeat(32 * 1024)).unwrap();
    let checks: &[&str] = if cfg!(windows) {
        &["for /l %i in (0,0,1) do @type y.txt", "for /l %i in (0,0,1) do @type y.txt 1>&2"]
    } else {
        &["yes", "head -c 100000000 /dev/zero", "yes >&2", "yes & yes >&2; wait"]
    };
    for check in checks {
        let started = Instant::now();
        run_gate(&sandbox, check, "y", &[])
            .code(1)
            .stdout_contains("FAIL GATES:A")
            .stdout_contains("output exceeded 1048576 bytes;");
        assert!(started.elapsed() < Duration::from_secs(30), "{check} took {:?}", started.elapsed());
        assert_eq!(evidence(&sandbox), "pending");
    }
}

/// A CHECK that prints the file `name`, holding `bytes`, to stdout (or
/// with `stderr` to stderr).
fn printing(sandbox: &Sandbox, name: &str, bytes: &[u8], stderr: bool) -> String {
    fs::write(sandbox.path(name), bytes).unwrap();
    let to = if stderr { " 1>&2" } else { "" };
    format!("{}{to}", sh::cat(name))
}

#[test]
fn exactly_one_mebibyte_passes() {
    let sandbox = Sandbox::new();
    passes(run_gate(&sandbox, &printing(&sandbox, "a.txt", &[b'a'; 1 << 20], false), "aaaa", &[]));
    assert!(evidence(&sandbox).contains("; output-bytes=1048576; "));
    // The same raw bytes split over both streams gain a separator: one too many.
    let (half_a, half_b) =
        (printing(&sandbox, "a.txt", &[b'a'; 1 << 19], false), printing(&sandbox, "b.txt", &[b'b'; 1 << 19], true));
    run_gate(&sandbox, &sh::then(&half_a, &half_b), "aaaa", &[])
        .code(1)
        .stdout_contains("output exceeded 1048576 bytes after stdout/stderr UTF-8 combination");
}

#[test]
fn invalid_utf8_output_is_replaced_before_matching() {
    let sandbox = Sandbox::new();
    passes(run_gate(&sandbox, &printing(&sandbox, "bad.bin", b"ok\xff", false), "ok\u{FFFD}", &[]));
    assert!(evidence(&sandbox).contains(&format!("output-sha256={}; output-bytes=5;", sha256_hex("ok\u{FFFD}"))));
    // 600,000 invalid bytes are under the raw cap but triple when replaced.
    run_gate(&sandbox, &printing(&sandbox, "bad.bin", &[0xff; 600_000], false), "\u{FFFD}", &[])
        .code(1)
        .stdout_contains("output exceeded 1048576 bytes after stdout/stderr UTF-8 combination");
}

// A POSIX process group and `$!`; the Job Object twin is in `windows`.
#[cfg(unix)]
#[test]
fn timeout_kills_the_process_group() {
    use crate::core_support::process_gone;
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
    let check = if cfg!(windows) {
        format!("start /b cmd /d /c \"{} & echo late\" & echo early", sh::sleep(1))
    } else {
        "(sleep 1; echo late) & echo early".to_string()
    };
    passes(run_gate(&sandbox, &check, "late", &[]));
    let output = format!("early{eol}late{eol}", eol = sh::EOL);
    assert!(evidence(&sandbox).contains(&format!("output-sha256={};", sha256_hex(output))));
}

#[test]
fn spawn_failure_is_a_failed_gate() {
    let sandbox = Sandbox::new();
    fs::write(sandbox.path("not-executable"), "#!/bin/sh\n").unwrap();
    #[cfg(unix)]
    fs::set_permissions(sandbox.path("not-executable"), std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    // A text file is no Windows program at all.
    let refused = if cfg!(windows) { "os error 193" } else { "Permission denied" };
    run_gate(&sandbox, "echo ok", "ok", &["--shell", "./not-executable"])
        .code(1)
        .stdout_contains("FAIL GATES:A")
        .stdout_contains(refused)
        .stdout_contains("not-executable")
        .stderr_lacks("panicked");
    assert_eq!(evidence(&sandbox), "pending");
}
