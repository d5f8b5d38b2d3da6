//! Reproducers of the second adversarial review (issue 19): forged workflow
//! commands, linked pipelines past the Stop hook, misleading messages,
//! relative shells, every `--`, `--help` beside an unknown option, and the
//! hook's own command-line mistakes.

use std::fs;
#[cfg(unix)]
use std::os::unix::fs::symlink;

use crate::common::{gate, Sandbox};

/// No line a runner reads may open a workflow command.
fn assert_no_workflow_command(text: &str) {
    for line in text.lines() {
        assert!(!line.trim_start().starts_with("::"), "a workflow command got through: {line:?}\n{text}");
    }
}

// Names a ledger file with control characters (or `:`), which Windows file
// systems refuse.
#[cfg(unix)]
#[test]
fn lint_cannot_forge_workflow_commands() {
    let sandbox = Sandbox::new();
    sandbox.write("::error title=FORGED::x.md", "- [ ] G1: x\n  CHECK: true\n  EXPECT: \n");
    let outside_actions = sandbox.run(&["lint", "::error title=FORGED::x.md"]);
    let outside_actions = outside_actions.code(2).stdout_contains("LINT NOT RUN").stderr_contains(":1: error: gate G1");
    // Outside Actions the name is printed as it is: the positive case.
    assert!(outside_actions.stderr().starts_with("::error title=FORGED::x.md:1:"), "{}", outside_actions.stderr());

    let run =
        sandbox.run_with(sandbox.cmd().env("GITHUB_ACTIONS", "true").args(["lint", "::error title=FORGED::x.md"]));
    let run = run.code(2).stdout_contains("LINT NOT RUN").stderr_contains("%3A:error title=FORGED::x.md:1: error:");
    assert_no_workflow_command(run.stdout());
    assert_no_workflow_command(run.stderr());
    let missing = sandbox.run_with(sandbox.cmd().env("GITHUB_ACTIONS", "true").args(["lint", "::warning::missing.md"]));
    let missing = missing.code(2).stdout_contains("LINT NOT RUN").stderr_contains("no such gate file");
    assert_no_workflow_command(missing.stderr());
}

#[test]
fn junit_neutralises_workflow_commands_from_check_output() {
    let sandbox = Sandbox::new();
    let check = if cfg!(windows) {
        "echo ::error title=FORGED::y& echo   ::add-mask::secret& exit /b 1"
    } else {
        "printf '::error title=FORGED::y\\n  ::add-mask::secret\\n'; exit 1"
    };
    sandbox.write("GATES.md", &gate("G1", check, "never"));
    let run = sandbox.run(&["--approve", "--format", "junit"]);
    let run = run.code(1).stdout_contains("<failure").stderr_contains("FAIL GATES:G1");
    assert!(run.stdout().contains("%3A:error title=FORGED::y"), "{}", run.stdout());
    assert!(run.stdout().contains("  %3A:add-mask::secret"), "{}", run.stdout());
    assert_no_workflow_command(run.stdout());
}

const HOOK_PAYLOAD: &str = r#"{"session_id":"s1","hook_event_name":"Stop","stop_hook_active":false}"#;

fn stop_hook(sandbox: &Sandbox) -> crate::common::Run {
    sandbox.run_with(sandbox.cmd().args(["hook", "stop"]).write_stdin(HOOK_PAYLOAD))
}

// Symbolic links: Windows lets only administrators (or Developer Mode)
// create one, and wine 8, which runs the Windows tests, creates none.
#[cfg(unix)]
#[test]
fn a_linked_pipeline_blocks_the_stop_hook_when_no_scope_is_named() {
    let sandbox = Sandbox::new();
    let elsewhere = tempfile::tempdir().unwrap();
    fs::write(elsewhere.path().join("GATES.md"), gate("G1", "echo ok", "ok")).unwrap();
    // The positive case first: a real pipeline with unmet gates blocks.
    sandbox.write(".unlazy/api/GATES.md", &gate("G1", "echo ok", "ok"));
    stop_hook(&sandbox)
        .code(0)
        .stdout_contains("unlazy [scope api]: 1 gate/ledger item(s) need work: GATES:G1 (unchecked).");

    fs::remove_dir_all(sandbox.path(".unlazy/api")).unwrap();
    symlink(elsewhere.path(), sandbox.path(".unlazy/api")).unwrap();
    sandbox.run(&["--status"]).code(2).stderr_contains("no gate files found");
    stop_hook(&sandbox).code(0).stdout_contains(r#""decision":"block""#).stdout_contains("discovery:PARSE");

    fs::remove_dir_all(sandbox.path(".unlazy")).unwrap();
    fs::create_dir(elsewhere.path().join("api")).unwrap();
    fs::write(elsewhere.path().join("api/GATES.md"), gate("G1", "echo ok", "ok")).unwrap();
    symlink(elsewhere.path(), sandbox.path(".unlazy")).unwrap();
    sandbox.run(&["--status"]).code(2).stderr_contains("no gate files found");
    stop_hook(&sandbox).code(0).stdout_contains(r#""decision":"block""#).stdout_contains("discovery:PARSE");

    // Root ledgers are what --status judges then, and so does the hook.
    sandbox.write("GATES.md", "- [x] M1: done by hand\n  EVIDENCE: reviewed\n");
    sandbox.run(&["--status"]).code(0).stdout_contains("ALL MET (1 met)");
    stop_hook(&sandbox).code(0).stdout_is("");
}

#[test]
fn a_missing_gate_cwd_names_its_line_and_not_help() {
    let sandbox = Sandbox::new();
    let path = sandbox.write("GATES.md", "- [ ] G1: x\n  CHECK: echo ok\n  EXPECT: ok\n  CWD: nope\n");
    let expected =
        format!("{}:4: error: gate GATES:G1 CWD does not exist: {}\n", path.display(), sandbox.path("nope").display());
    sandbox.run(&[]).code(2).stderr_is(&expected);
    assert_eq!(sandbox.approval_count(), 0);
}

#[test]
fn a_store_inside_the_root_is_not_a_usage_error() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "echo ok", "ok"));
    let inside = sandbox.path("store");
    let expected = format!(
        "gate-check: error: UNLAZY_APPROVAL_DIR must be outside the repository root {}\n",
        sandbox.root.display()
    );
    sandbox.run_with(sandbox.cmd().env("UNLAZY_APPROVAL_DIR", &inside)).code(2).stderr_is(&expected);
    // A real usage mistake still points at --help.
    sandbox.run(&["--status", "--reverify"]).code(2).stderr_contains("run gate-check --help for usage");
}

// A symbolic link to /bin/sh on a relative PATH entry; on Windows the
// relative entry is tested with a copy of cmd.exe (environment).
#[cfg(unix)]
#[test]
fn a_shell_found_on_a_relative_path_entry_is_shown_and_approved_absolute() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "echo ok", "ok"));
    fs::create_dir(sandbox.path("bin")).unwrap();
    symlink("/bin/sh", sandbox.path("bin/sh")).unwrap();
    let absolute = sandbox.path("bin/sh");
    let run = sandbox.run_with(sandbox.cmd().env("PATH", "bin:/usr/bin:/bin").args(["--approve", "--shell", "sh"]));
    let run = run.code(0).stdout_contains(&format!("    SHELL: {}\n", absolute.display()));
    assert!(run.stdout().contains(&format!("RUN  GATES:G1 shell={} ", absolute.display())), "{}", run.stdout());
    assert!(sandbox.read("GATES.md").contains(&format!("; shell={};", absolute.display())));
}

#[test]
fn a_newline_in_path_is_escaped_alike_everywhere() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "echo ok", "ok"));
    let path = "/usr/bin:/bin:/no\nsuch";
    let run = sandbox.run_with(sandbox.cmd().env("PATH", path).arg("--approve"));
    run.code(0).stdout_contains("    PATH: /usr/bin:/bin:/no\\x0Asuch\n");
    let run = sandbox.run_with(sandbox.cmd().env("PATH", path).arg("--reverify"));
    run.code(0).stdout_contains(" PATH=/usr/bin:/bin:/no\\x0Asuch\n");
}

#[test]
fn every_double_dash_is_skipped_as_the_node_tool_does() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "echo ok", "ok"));
    sandbox.run(&["--status", "--", "GATES.md"]).code(1).stdout_contains("UNMET: 1");
    sandbox.run(&["--status", "--", "--", "GATES.md"]).code(1).stdout_contains("UNMET: 1");
    // After the first `--`, an option spelling is still a file name.
    sandbox.run(&["--status", "--", "--", "--reverify"]).code(2).stderr_contains("no such gate file");
}

#[test]
fn help_beside_an_unknown_option_is_a_usage_error() {
    let sandbox = Sandbox::new();
    sandbox.run(&["--help"]).code(0).stdout_contains("Usage: gate-check");
    sandbox.run(&["--status", "--help"]).code(0).stdout_contains("Usage: gate-check");
    sandbox.run(&["--help", "--bogus"]).code(2).stderr_contains("unexpected argument '--bogus'");
    sandbox.run(&["-h", "--bogus"]).code(2).stderr_contains("unexpected argument '--bogus'");
    // After `--` the spelling is a file name; help still wins.
    sandbox.run(&["--help", "--", "--bogus"]).code(0).stdout_contains("Usage: gate-check");
}

#[test]
fn a_broken_hook_command_line_says_what_is_wrong_and_never_blocks() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "echo ok", "ok"));
    stop_hook(&sandbox).code(0).stdout_contains(r#""decision":"block""#);
    // On stderr, and as a systemMessage the host shows the person (issue 20).
    let note = |problem: &str| {
        format!(
            "{{\"systemMessage\":\"unlazy: the installed hook command is broken (reinstall it with gate-check \
             install-hooks): gate-check hook: {problem}; not blocking.\"}}\n"
        )
    };
    let missing = sandbox.run_with(sandbox.cmd().arg("hook").write_stdin(HOOK_PAYLOAD));
    missing
        .code(0)
        .stdout_is(&note("a hook event is required: gate-check hook stop|pre-tool"))
        .stderr_is("gate-check hook: a hook event is required: gate-check hook stop|pre-tool; not blocking\n");
    let bogus = sandbox.run_with(sandbox.cmd().args(["hook", "stop", "--bogus"]).write_stdin(HOOK_PAYLOAD));
    bogus
        .code(0)
        .stdout_is(&note("unexpected argument '--bogus' found"))
        .stderr_is("gate-check hook: unexpected argument '--bogus' found; not blocking\n");
}

// Symbolic links: Windows lets only administrators (or Developer Mode)
// create one, and wine 8, which runs the Windows tests, creates none.
#[cfg(unix)]
#[test]
fn a_ledger_in_a_linked_directory_is_refused_before_anything_runs() {
    let sandbox = Sandbox::new();
    let real = sandbox.path("real");
    fs::create_dir(&real).unwrap();
    let text = gate("G1", "echo ok; touch ran", "ok");
    fs::write(real.join("GATES.md"), &text).unwrap();
    // Through the real directory the run writes back: the positive case.
    sandbox.run(&["--approve", "--reverify", "--root", "real"]).code(0).stdout_contains("ALL MET (1 met");
    fs::write(real.join("GATES.md"), &text).unwrap();
    fs::remove_file(real.join("ran")).unwrap();
    let before = sandbox.approval_count();
    symlink(&real, sandbox.path("link")).unwrap();
    let expected = format!(
        "gate-check: error: cannot write back to {link}/GATES.md: {link} must be a real directory\n",
        link = sandbox.path("link").display()
    );
    sandbox.run(&["--approve", "--root", "link"]).code(2).stderr_is(&expected);
    assert_eq!(fs::read_to_string(real.join("GATES.md")).unwrap(), text, "the ledger was rewritten");
    assert!(!real.join("ran").exists(), "the check ran");
    assert_eq!(sandbox.approval_count(), before, "an approval was recorded");
    sandbox.run(&["--status", "--root", "link"]).code(1).stdout_contains("UNMET: 1");
}

// Symbolic links: Windows lets only administrators (or Developer Mode)
// create one, and wine 8, which runs the Windows tests, creates none.
#[cfg(unix)]
#[test]
fn install_hooks_refuses_a_linked_settings_directory() {
    let sandbox = Sandbox::new();
    sandbox.run(&["install-hooks"]).code(0).stdout_contains("Installed unlazy Stop hook");
    fs::remove_dir_all(sandbox.path(".claude")).unwrap();
    let target = tempfile::tempdir().unwrap();
    symlink(target.path(), sandbox.path(".claude")).unwrap();
    let expected = format!(
        "gate-check: refusing to touch {dir}/settings.local.json: its directory {dir} is a symbolic link; it must be \
         a real directory\n",
        dir = sandbox.path(".claude").display()
    );
    sandbox.run(&["install-hooks"]).code(2).stderr_is(&expected);
    sandbox.run(&["install-hooks", "--uninstall"]).code(2).stderr_is(&expected);
    assert_eq!(fs::read_dir(target.path()).unwrap().count(), 0, "something was written through the link");
}

/// The approval record of gate `id` of the sandbox's `GATES.md`, learned by approving it once.
fn record_of(sandbox: &Sandbox, id: &str) -> std::path::PathBuf {
    let run = sandbox.run(&["--approve", "--reverify", "--gate", id]).code(0).stdout_contains("APPROVED: ");
    let line = run.stdout().lines().find(|line| line.contains("APPROVED: ")).unwrap();
    std::path::PathBuf::from(line.split("APPROVED: ").nth(1).unwrap())
}

#[test]
fn temp_files_of_interrupted_approvals_are_removed_by_the_next_approval() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &(gate("G1", "echo ok", "ok") + &gate("G2", "echo ok2", "ok")));
    let first = record_of(&sandbox, "G1");
    let name = first.file_name().unwrap().to_str().unwrap();
    let stale = sandbox.approvals.join(format!(".{name}.aB3xYz.tmp"));
    let unrelated = sandbox.approvals.join(".notes.aB3xYz.tmp");
    for path in [&stale, &unrelated] {
        fs::write(path, "{").unwrap();
        crate::common::make_private_file(path);
    }
    // A temp whose record's lock is held by another writer stays.
    let second = record_of(&sandbox, "G2");
    let held = sandbox.approvals.join(format!(".{}.Qw3rTy.tmp", second.file_name().unwrap().to_str().unwrap()));
    fs::write(&held, "{").unwrap();
    crate::common::make_private_file(&held);
    let lock = sandbox.approvals.join(format!("{}.lock", second.file_name().unwrap().to_str().unwrap()));
    fs::write(&lock, r#"{"owner":"node","pid":1,"at":1}"#).unwrap();

    fs::remove_file(&first).unwrap();
    sandbox.run(&["--approve", "--reverify", "--gate", "G1"]).code(0).stdout_contains("APPROVED: ");
    assert!(first.exists());
    assert!(!stale.exists(), "the stale temp of an interrupted approval survived");
    assert!(held.exists(), "a temp under another writer's lock was removed");
    assert!(unrelated.exists(), "a file that is no record's temp was removed");
}

#[test]
fn a_node_approval_lock_is_waited_for_and_then_refused() {
    let sandbox = Sandbox::new();
    let text = gate("G1", "echo ok", "ok");
    sandbox.write("GATES.md", &text);
    let record = record_of(&sandbox, "G1");
    fs::remove_file(&record).unwrap();
    sandbox.write("GATES.md", &text);
    let lock = sandbox.approvals.join(format!("{}.lock", record.file_name().unwrap().to_str().unwrap()));
    fs::write(&lock, r#"{"owner":"0123456789abcdef","pid":999999,"at":1}"#).unwrap();
    let started = std::time::Instant::now();
    let run = sandbox.run(&["--approve"]).code(2).stdout_contains("APPROVING GATES:G1");
    let run = run.stderr_contains("timed out waiting for lock").stderr_contains("infrastructure failure prevented 1");
    assert!(started.elapsed() >= std::time::Duration::from_secs(10), "{:?}", started.elapsed());
    assert!(!run.stdout().contains("PASS"), "{}", run.stdout());
    assert!(!record.exists(), "approved under another writer's lock");
    assert_eq!(sandbox.read("GATES.md"), text);
    assert!(lock.exists(), "another writer's lock was removed");
    // Once the lock is gone the approval goes through.
    fs::remove_file(&lock).unwrap();
    sandbox.run(&["--approve"]).code(0).stdout_contains("ALL MET (1 met)");
}

// Unix mode bits; Windows access is the ACL, checked in `windows`.
#[cfg(unix)]
#[test]
fn a_store_with_write_and_search_permission_only_records_and_reads_approvals() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    assert!(nix::unistd::geteuid().is_root(), "this test must run as root: it runs the checker as uid 65534");
    const NOBODY: u32 = 65534;
    let sandbox = Sandbox::new();
    let base = sandbox.root.parent().unwrap().to_path_buf();
    fs::set_permissions(&base, fs::Permissions::from_mode(0o755)).unwrap();
    sandbox.write("GATES.md", &gate("G1", "echo ok", "ok"));
    fs::create_dir(&sandbox.receipts).unwrap();
    fs::set_permissions(&sandbox.receipts, fs::Permissions::from_mode(0o700)).unwrap();
    for path in [&sandbox.root, &sandbox.path("GATES.md"), &sandbox.approvals, &sandbox.receipts] {
        std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    fs::set_permissions(&sandbox.approvals, fs::Permissions::from_mode(0o300)).unwrap();
    let as_nobody = |args: &[&str]| {
        let mut command = sandbox.std_cmd();
        command.env("HOME", &base).uid(NOBODY).gid(NOBODY).args(args);
        let mut command = assert_cmd::Command::from_std(command);
        sandbox.run_with(&mut command)
    };
    as_nobody(&["--approve"]).code(0).stdout_contains("APPROVED: ").stdout_contains("ALL MET (1 met)");
    as_nobody(&["--reverify"]).code(0).stdout_contains("ALL MET (1 met, reran: 1");
}

#[test]
fn blank_looking_and_invisible_characters_are_shown_escaped_before_approval() {
    let cases = [
        ('\u{2800}', "\\u{2800}"),
        ('\u{e0100}', "\\u{E0100}"),
        ('\u{180b}', "\\u{180B}"),
        ('\u{1d173}', "\\u{1D173}"),
        ('\u{1bca0}', "\\u{1BCA0}"),
        ('\u{600}', "\\u{600}"),
        ('\u{6dd}', "\\u{6DD}"),
        ('\u{890}', "\\u{890}"),
        ('\u{110bd}', "\\u{110BD}"),
        ('\u{13430}', "\\u{13430}"),
    ];
    for (hidden, shown) in cases {
        let sandbox = Sandbox::new();
        let check = format!("echo safe{hidden}# ; echo PWNED");
        sandbox.write("GATES.md", &gate("G1", &check, "safe"));
        let run = sandbox.run(&[]).code(1).stdout_contains("APPROVAL REQUIRED GATES:G1");
        let want = format!("    CHECK: echo safe{shown}# ; echo PWNED\n");
        assert!(run.stdout().contains(&want), "U+{:04X}: {}", hidden as u32, run.stdout());
        assert!(!run.stdout().contains(hidden), "U+{:04X} shown raw", hidden as u32);
    }
}

// PATH as raw bytes that are not UTF-8, as only Unix has them.
#[cfg(unix)]
#[test]
fn a_path_that_is_not_utf8_is_refused_not_approved_lossily() {
    use std::os::unix::ffi::OsStrExt;
    let sandbox = Sandbox::new();
    let text = gate("G1", "echo ok; touch ran", "ok");
    sandbox.write("GATES.md", &text);
    sandbox
        .run_with(sandbox.cmd().env("PATH", "/usr/bin:/bin:/tmp/x").arg("--approve"))
        .code(0)
        .stdout_contains("ALL MET");
    sandbox.write("GATES.md", &text);
    fs::remove_file(sandbox.path("ran")).unwrap();
    let before = sandbox.approval_count();
    for raw in [&b"/usr/bin:/bin:/tmp/\xff"[..], &b"/usr/bin:/bin:/tmp/\xfe"[..]] {
        let path = std::ffi::OsStr::from_bytes(raw);
        let shown = if raw.ends_with(b"\xff") { "\\xff" } else { "\\xfe" };
        let expected = format!(
            "gate-check: error: PATH entry \"/tmp/{shown}\" is not valid UTF-8; approvals bind PATH as text, so \
             gate-check runs no check under a PATH it cannot spell exactly\n"
        );
        sandbox.run_with(sandbox.cmd().env("PATH", path).arg("--approve")).code(2).stderr_is(&expected);
        // Reporting needs no PATH.
        sandbox.run_with(sandbox.cmd().env("PATH", path).arg("--status")).code(1).stdout_contains("UNMET: 1");
    }
    assert_eq!(sandbox.approval_count(), before, "an approval was recorded under a lossy PATH");
    assert!(!sandbox.path("ran").exists());
    assert_eq!(sandbox.read("GATES.md"), text);
}

// Lowers the descriptor limit with the shell's ulimit: a Unix resource limit.
#[cfg(unix)]
#[test]
fn running_out_of_descriptors_is_an_infrastructure_error_that_wipes_no_evidence() {
    let sandbox = Sandbox::new();
    let ledger: String = (1..=30).map(|i| gate(&format!("G{i}"), "echo ok", "ok")).collect();
    sandbox.write("GATES.md", &ledger);
    sandbox.run(&["--approve"]).code(0).stdout_contains("ALL MET (30 met)");
    let met = sandbox.read("GATES.md");
    // With descriptors to spare the same run passes: the positive case.
    sandbox.run(&["--reverify", "--jobs", "8", "-q"]).code(0).stdout_contains("ALL MET (30 met, reran: 30");
    assert_eq!(sandbox.read("GATES.md"), met);

    let binary = assert_cmd::cargo::cargo_bin("gate-check");
    // The shell lowers the limit and becomes gate-check.
    let mut shell = std::process::Command::new("/bin/sh");
    shell
        .current_dir(&sandbox.root)
        .env("UNLAZY_APPROVAL_DIR", &sandbox.approvals)
        .env("NO_COLOR", "1")
        .env("BINARY", &binary)
        .args(["-c", "ulimit -n 16 && exec \"$BINARY\" --reverify --jobs 8 -q"]);
    let run = sandbox.run_with(&mut assert_cmd::Command::from_std(shell)).code(2);
    let run = run.stderr_contains("Too many open files").stderr_contains("error: infrastructure failure prevented ");
    assert!(!run.stderr().contains("FAIL"), "a starved check was judged failed: {}", run.stderr());
    assert_eq!(sandbox.read("GATES.md"), met, "evidence changed for checks that never ran");
    assert!(!sandbox.read("GATES.md").contains("EVIDENCE: pending"));
}

/// A check that prints 1 MiB of `a`, and the worst linear-engine EXPECT the review found.
fn worst_case_ledger(sandbox: &Sandbox, gates: usize) -> String {
    fs::write(sandbox.path("big.txt"), "a".repeat(1 << 20)).unwrap();
    let ledger: String = (1..=gates)
        .map(|i| gate(&format!("W{i}"), &crate::common::sh::cat("big.txt"), "/(?:(?:a|b){100}){100}c/i"))
        .collect();
    sandbox.write("GATES.md", &ledger);
    ledger
}

/// `gate-check ARGS` started in the sandbox with its output captured.
fn spawn_captured(sandbox: &Sandbox, args: &[&str]) -> std::process::Child {
    use std::process::Stdio;
    sandbox.std_cmd().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

/// Waits at most `limit` for `child` (killed after that), then its exit
/// status and stdout; `None` when it had to be killed.
fn finish_within(
    mut child: std::process::Child,
    limit: std::time::Duration,
) -> Option<(std::process::ExitStatus, String)> {
    let status = wait_at_most(&mut child, limit)?;
    let output = child.wait_with_output().unwrap();
    Some((status, String::from_utf8_lossy(&output.stdout).into_owned()))
}

/// Waits for `child` at most `limit`, killing it after that.
fn wait_at_most(child: &mut std::process::Child, limit: std::time::Duration) -> Option<std::process::ExitStatus> {
    let started = std::time::Instant::now();
    while started.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[cfg_attr(
    windows,
    ignore = "a 1 s check timeout, shorter than a start of cmd.exe under wine can be relied on to take"
)]
#[test]
fn a_worst_case_expect_decides_within_the_checks_timeout() {
    let sandbox = Sandbox::new();
    let ledger = worst_case_ledger(&sandbox, 1);
    // The check itself takes milliseconds; matching must end by its 1 s
    // deadline, which the budget message says it did (without one it ran
    // for a minute, past the bound below; how fast is the bench's to say).
    let child = spawn_captured(&sandbox, &["--approve", "--timeout", "1"]);
    let (status, out) = finish_within(child, std::time::Duration::from_secs(30)).expect("the run outlived its timeout");
    assert_eq!(status.code(), Some(1), "{out}");
    assert!(out.contains("  FAIL GATES:W1: outcome W1\n"), "{out}");
    assert!(out.contains("EXPECT regex exceeded its matching budget"), "{out}");
    assert_eq!(sandbox.read("GATES.md"), ledger);
}

// POSIX signals and process groups; the Windows counterpart is in `windows`.
#[cfg(unix)]
#[test]
fn an_interrupt_while_expects_are_matched_ends_the_run_and_writes_nothing() {
    let sandbox = Sandbox::new();
    let ledger = worst_case_ledger(&sandbox, 40);
    sandbox.run(&["--approve", "--gate", "W1"]).code(1).stdout_contains("FAIL GATES:W1");
    // Nearly all of this run is matching: every check prints at once.
    let child = spawn_captured(&sandbox, &["--approve", "--jobs", "1"]);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let (status, out) =
        finish_within(child, std::time::Duration::from_secs(30)).expect("the interrupt was not honoured");
    assert_eq!(status.code(), Some(130), "{out}");
    // The match in progress was stopped, not run to its budget: a match
    // that ignored the interrupt would end as a FAIL, never INTERRUPTED.
    assert!(out.contains("  INTERRUPTED GATES:W"), "{out}");
    assert!(!out.contains("PASS"), "{out}");
    assert_eq!(sandbox.read("GATES.md"), ledger, "an interrupted run wrote to the ledger");
}

#[test]
fn huge_counts_over_empty_matching_bodies_decide_at_once_through_the_binary() {
    let sandbox = Sandbox::new();
    let ledger = [
        gate("A", &crate::common::sh::print("a"), "/(?=a){2147483647}/"),
        gate("B", &crate::common::sh::print("aab"), "/(?:a|){2147483647}b/i"),
        gate("C", &crate::common::sh::print("xyz"), "/(?:){1000000}z(?<=z)/"),
    ]
    .concat();
    sandbox.write("GATES.md", &ledger);
    let run = sandbox.run(&["--approve"]).code(0).stdout_contains("ALL MET (3 met)");
    for id in ["A", "B", "C"] {
        assert!(run.stdout().contains(&format!("  PASS GATES:{id}: outcome {id}\n")), "{}", run.stdout());
    }
}

#[test]
fn settings_the_installer_cannot_write_back_unchanged_are_named_for_what_they_are() {
    let sandbox = Sandbox::new();
    let path = sandbox.path(".claude/settings.local.json");
    let shown = path.display();
    let cases = [
        (r#"{"a":"\ud800"}"#.to_string(), "it holds a lone UTF-16 surrogate escape"),
        (format!("{}{}", "[".repeat(200), "]".repeat(200)), "it nests deeper than gate-check can rewrite"),
        (r#"{"a":"\u12"}"#.to_string(), "it exists but is not valid JSON"),
    ];
    for (text, why) in cases {
        sandbox.write(".claude/settings.local.json", &text);
        let prefix = format!("gate-check: refusing to touch {shown}: {why}");
        sandbox.run(&["install-hooks"]).code(2).stderr_contains(&prefix);
        assert_eq!(sandbox.read(".claude/settings.local.json"), text, "refused settings changed");
    }
    // A repeated flag is refused like every repeated flag of this command line.
    sandbox.run(&["install-hooks", "--shared", "--shared"]).code(2).stderr_contains("cannot be used multiple times");
}
