//! `-q`/`-v`, `--color` and where the progress line goes, through the real
//! binary; colour and the progress line through a pseudo-terminal made by
//! util-linux `script` (its absence fails the test).

use crate::common::{gate, sh, Sandbox};

const PASSING: &str = "echo ok";
const FAILING: &str = "echo no";

fn two_gates(sandbox: &Sandbox, second_check: &str) {
    sandbox.write("GATES.md", &format!("{}{}", gate("G1", PASSING, "ok"), gate("G2", second_check, "ok")));
}

/// Approves both gates of `two_gates` (whose G2 fails), then unchecks G1
/// again so the next run runs both.
fn approve(sandbox: &Sandbox) {
    sandbox.run(&["--approve"]).code(1).stdout_contains("APPROVED: ");
    let text = sandbox.read("GATES.md").replace("- [x]", "- [ ]");
    sandbox.write("GATES.md", &text);
}

#[test]
fn quiet_shows_only_failures_and_the_verdict() {
    let sandbox = Sandbox::new();
    two_gates(&sandbox, FAILING);
    approve(&sandbox);
    sandbox.run(&["-q"]).code(1).stdout_is(
        "  FAIL GATES:G2: outcome G2\n       exit=0; EXPECT=not matched; output=no\n       hint: run again with \
             --show-output to see what a failed check printed\nUNMET: 1 (met: 1)\n  GATES:G2\n",
    );
    sandbox
        .run(&["--quiet", "--status"])
        .code(1)
        .stdout_is("  UNMET GATES:G2 (unchecked): outcome G2\nUNMET: 1 (met: 1)\n  GATES:G2\n");
}

#[test]
fn quiet_still_shows_the_oracle_to_approve_without_the_path_line() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", PASSING, "ok"));
    let cwd = sandbox.root.display();
    sandbox.run(&["-q"]).code(1).stdout_is(&format!(
        "APPROVAL REQUIRED GATES:G1\n    CHECK: echo ok\n    EXPECT: ok\n    CWD: {cwd}\n    SHELL: {}\n    \
         TIMEOUT: 120s\n    NOT RUN: inspect this oracle, then re-run with --approve\nUNMET: 1 (met: 0)\n  GATES:G1\n\
         next: gate-check --approve\n",
        sh::default_shell()
    ));
    let approved = sandbox.run(&["-q", "--approve"]).code(0).stdout_contains("    APPROVED: ");
    assert!(approved.stdout().ends_with("json\nALL MET (1 met)\n"), "{}", approved.stdout());
    assert!(!approved.stdout().contains("PATH"), "{}", approved.stdout());
}

#[test]
fn quiet_and_verbose_exclude_each_other() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", PASSING, "ok"));
    sandbox.run(&["-q", "-v"]).code(2).stderr_contains("'--quiet' cannot be used with '--verbose'");
}

#[test]
fn verbose_prints_each_run_line_when_its_check_starts_with_durations() {
    let sandbox = Sandbox::new();
    two_gates(&sandbox, FAILING);
    approve(&sandbox);
    let run = sandbox.run(&["-v"]).code(1).stdout_contains("UNMET: 1 (met: 1)\n");
    let markers: Vec<&str> =
        run.stdout().lines().filter_map(|line| line.get(..6)).filter(|m| !m.trim().is_empty()).collect();
    // The tree the checks run on is read first, for their proofs.
    let read = ["  proo", "  RUN ", "  PASS", "  RUN ", "  FAIL", "GATES.", "UNMET:", "  GATE"];
    assert_eq!(markers, read, "{}", run.stdout());
    assert_eq!(run.stdout().matches("; duration=").count(), 2, "{}", run.stdout());
}

#[test]
fn verbose_with_jobs_shows_starts_at_once_and_keeps_results_in_ledger_order() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "GATES.md",
        &format!("{}{}", gate("G1", &sh::then(&sh::sleep(1), "echo ok"), "ok"), gate("G2", PASSING, "ok")),
    );
    sandbox.run(&["--approve"]).code(0).stdout_contains("ALL MET");
    let run = sandbox.run(&["-v", "--reverify", "--jobs", "2"]).code(0).stdout_contains("ALL MET");
    let at = |needle: &str| run.stdout().find(needle).unwrap_or_else(|| panic!("{needle} in {}", run.stdout()));
    let first_result = at("  PASS GATES:G1");
    assert!(at("  RUN  GATES:G2") < first_result, "G2 starts while G1 sleeps: {}", run.stdout());
    assert!(first_result < at("  PASS GATES:G2"), "results stay in ledger order: {}", run.stdout());
}

#[test]
fn verbose_names_a_check_that_is_still_running_in_a_log() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", &sh::then(&sh::sleep(6), "echo ok"), "ok"));
    sandbox.run(&["--approve", "-q"]).code(0).stdout_contains("ALL MET");
    let run = sandbox.run(&["-v", "--reverify"]).code(0).stdout_contains("  ... GATES:G1 still running after 5s\n");
    assert!(!run.stdout().contains("after 10s"), "{}", run.stdout());
    sandbox.run(&["--reverify", "--jobs", "1"]).code(0).stdout_contains("ALL MET").stderr_lacks("still running");
}

/// `gate-check ARGS` on a pseudo-terminal: what the terminal showed, with
/// the pty's CRLF turned back into LF. `redirect` is appended to the
/// command line (for example `>out.txt` to keep stdout off the terminal).
#[cfg(unix)]
fn on_terminal(sandbox: &Sandbox, args: &str, redirect: &str, env: &[(&str, &str)]) -> String {
    let binary = assert_cmd::cargo::cargo_bin("gate-check");
    let mut command = std::process::Command::new("script");
    command
        .args(["-qec", &format!("{} {args} {redirect}", binary.display()), "/dev/null"])
        .current_dir(&sandbox.root)
        .env("UNLAZY_APPROVAL_DIR", &sandbox.approvals)
        .env("TERM", "xterm")
        .env("SHELL", "/bin/sh");
    for name in ["NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "CI", "GITHUB_ACTIONS", "UNLAZY_SHELL", "UNLAZY_SCOPE"] {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    let output = command.output().expect("util-linux `script` is needed to test terminal output");
    assert!(output.status.code().is_some(), "script was killed: {output:?}");
    String::from_utf8_lossy(&output.stdout).replace("\r\n", "\n")
}

const RED_FAIL: &str = "\x1b[31m  FAIL\x1b[0m GATES:G2";

// Drives a terminal through script(1) (util-linux).
#[cfg(unix)]
#[test]
fn colour_on_a_terminal_follows_flag_no_color_clicolor_force_and_clicolor() {
    let sandbox = Sandbox::new();
    two_gates(&sandbox, FAILING);
    approve(&sandbox);
    let shown = |args: &str, env: &[(&str, &str)]| on_terminal(&sandbox, args, "", env);
    assert!(shown("", &[]).contains(RED_FAIL), "a terminal gets colour: {:?}", shown("", &[]));
    for (args, env) in [
        ("", &[("NO_COLOR", "1")][..]),
        ("", &[("CLICOLOR", "0")][..]),
        ("", &[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")][..]),
        ("--color never", &[("CLICOLOR_FORCE", "1")][..]),
    ] {
        let text = shown(args, env);
        assert!(text.contains("  FAIL GATES:G2") && !text.contains('\x1b'), "{args} {env:?}: {text:?}");
    }
    assert!(shown("--color always", &[("NO_COLOR", "1")]).contains(RED_FAIL), "the flag beats NO_COLOR");
}

#[test]
fn colour_into_a_pipe_only_when_forced() {
    let sandbox = Sandbox::new();
    two_gates(&sandbox, FAILING);
    approve(&sandbox);
    sandbox.run_with(sandbox.cmd().arg("--color=always")).code(1).stdout_contains(RED_FAIL);
    sandbox.run_with(sandbox.cmd().env_remove("NO_COLOR").env("CLICOLOR_FORCE", "1")).code(1).stdout_contains(RED_FAIL);
    let plain = sandbox.run_with(sandbox.cmd().env_remove("NO_COLOR").env("CLICOLOR_FORCE", "0")).code(1);
    let plain = plain.stdout_contains("  FAIL GATES:G2");
    assert!(!plain.stdout().contains('\x1b'), "CLICOLOR_FORCE=0 forces nothing: {:?}", plain.stdout());
}

// Drives a terminal through script(1) (util-linux).
#[cfg(unix)]
#[test]
fn progress_line_is_drawn_on_stderr_not_stdout() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "sleep 2; echo ok", "ok"));
    sandbox.run(&["--approve", "-q"]).code(0).stdout_contains("ALL MET");
    let terminal = on_terminal(&sandbox, "--reverify", "> stdout.txt", &[]);
    assert!(terminal.contains("  ... GATES:G1 running for 1s\r\x1b[2K"), "stderr on the terminal: {terminal:?}");
    let stdout = sandbox.read("stdout.txt");
    assert!(stdout.contains("  PASS GATES:G1") && !stdout.contains("running for"), "{stdout:?}");
}
