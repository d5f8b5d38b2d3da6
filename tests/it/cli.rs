//! The command line through the real binary: help and version, option
//! spelling, option errors (exit 2 with a message), and which ledgers a run
//! covers (explicit files, all and only; else discovery under --root).

use crate::common::{gate, sh, Sandbox};

const MET_MANUAL: &str = "- [x] M: manual\n  EVIDENCE: inspected by hand\n";

fn usage_error(sandbox: &Sandbox, args: &[&str], fragment: &str) {
    let before = std::fs::read(sandbox.path("GATES.md")).ok();
    sandbox.run(args).code(2).stderr_contains(fragment).stdout_lacks("ALL MET");
    assert_eq!(std::fs::read(sandbox.path("GATES.md")).ok(), before, "{args:?} changed the ledger");
    assert_eq!(sandbox.approval_count(), 0);
}

#[test]
fn help_and_version() {
    let sandbox = Sandbox::new();
    ["--status", "--reverify", "--approve", "--timeout", "--shell", "--cwd", "--root", "exit codes"]
        .iter()
        .fold(sandbox.run(&["--help"]).code(0), |help, word| help.stdout_contains(word));
    sandbox.run(&["--version"]).code(0).stdout_is(&format!("gate-check {}\n", env!("CARGO_PKG_VERSION")));
}

/// The checker and baseline declare their run options once: each still
/// says them in its own words, and neither takes the other's own options.
#[test]
fn the_checker_and_baseline_share_run_options_but_not_their_own() {
    let sandbox = Sandbox::new();
    sandbox
        .run(&["--help"])
        .code(0)
        .stdout_contains(
            "--jobs <N>\n          Rolling concurrency, integer 1..64 (default 1); reports stay in ledger order\n",
        )
        .stdout_contains("--show-output\n          After a failed check, print its sanitized output")
        .stdout_contains("--proof")
        .stdout_lacks("--unconfined");
    sandbox
        .run(&["baseline", "--help"])
        .code(0)
        .stdout_contains(
            "--jobs <N>\n          Rolling concurrency, integer 1..64 (default 1); results stay in ledger order\n",
        )
        .stdout_contains("--show-output\n          Print the output of the run that tells most")
        .stdout_contains(
            "[FILE]...\n          Explicit ledger files, all honored and only those (as the checker takes them)\n",
        )
        .stdout_contains("--unconfined")
        .stdout_lacks("reports stay in ledger order")
        .stdout_lacks("--proof");
    sandbox.run(&["--unconfined"]).code(2).stderr_contains("unexpected argument '--unconfined' found");
    for own in ["--approve", "--status", "--reverify", "--proof", "--claim"] {
        sandbox.run(&["baseline", "HEAD", own]).code(2).stderr_contains(&format!("unexpected argument '{own}' found"));
    }
    sandbox
        .run(&["baseline", "HEAD", "--unconfined", "--sandbox"])
        .code(2)
        .stderr_contains("the argument '--unconfined' cannot be used with '--sandbox'");
    sandbox
        .run(&["baseline", "HEAD", "--sandbox", "--unconfined"])
        .code(2)
        .stderr_contains("the argument '--sandbox' cannot be used with '--unconfined'");
}

#[test]
fn both_option_spellings_mean_the_same() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("A", "echo ok", "ok"));
    let shell = sh::default_shell();
    sandbox
        .run(&["--approve", "--timeout=7", &format!("--shell={shell}")])
        .code(0)
        .stdout_contains("\nALL MET (1 met)\n");
    // The same identity spelled the other way needs no new approval.
    sandbox
        .run_with(sandbox.cmd().args(["--reverify", "--timeout", "7", "--shell", &shell]))
        .code(0)
        .stdout_contains("\nALL MET (1 met, reran: 1, 1 of them met before)\n")
        .stdout_lacks("APPROVAL REQUIRED");
    assert_eq!(sandbox.approval_count(), 1);
}

#[test]
fn double_dash_ends_options() {
    let sandbox = Sandbox::new();
    sandbox.write("--status", &gate("A", "echo ok", "ok"));
    sandbox
        .run_with(sandbox.cmd().args(["--status", "--", "--status"]))
        .code(1)
        .stdout_contains("UNMET --status:A (unchecked)")
        .stdout_contains("--status: 1 gates");
}

#[test]
fn option_errors_exit_2() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("A", "echo ok", "ok"));
    usage_error(&sandbox, &["--status", "--status"], "--status");
    usage_error(&sandbox, &["--timeout", "5", "--timeout=6"], "--timeout");
    usage_error(&sandbox, &["--root", ".", "--root=."], "--root");
    usage_error(&sandbox, &["--bogus"], "--bogus");
    usage_error(&sandbox, &["--bogus=1"], "--bogus");
    usage_error(&sandbox, &["-x"], "-x");
    usage_error(&sandbox, &["--status=yes"], "--status");
    for option in ["--root", "--cwd", "--shell", "--timeout", "--jobs", "--scope"] {
        usage_error(&sandbox, &[&format!("{option}=")], option);
        usage_error(&sandbox, &[option, ""], option);
    }
    usage_error(&sandbox, &["--timeout"], "--timeout");
    usage_error(&sandbox, &["--status", "--reverify"], "--status and --reverify are mutually exclusive");
    usage_error(&sandbox, &["--reverify", "--status"], "--status and --reverify are mutually exclusive");
    usage_error(&sandbox, &["--status", "--approve"], "--status never approves commands; remove --approve");
    for execution in [&["--timeout", "5"][..], &["--jobs", "2"], &["--shell", "/bin/sh"], &["--cwd", "."]] {
        let mut args = vec!["--status"];
        args.extend_from_slice(execution);
        let message =
            format!("gate-check: error: --status cannot be combined with {}: it runs no checks", execution[0]);
        usage_error(&sandbox, &args, &message);
    }
}

#[test]
fn timeout_and_jobs_bounds() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", MET_MANUAL);
    for bad in ["0", "86401", "-1", "1.5", "abc", "+5", " 5"] {
        usage_error(&sandbox, &["--timeout", bad], "--timeout needs an integer from 1 through 86400");
    }
    for bad in ["0", "65", "-1", "1.5", "abc"] {
        usage_error(&sandbox, &["--jobs", bad], "--jobs needs an integer from 1 through 64");
    }
    for good in [["--timeout", "1"], ["--timeout", "86400"], ["--jobs", "1"], ["--jobs", "64"]] {
        sandbox.run_with(sandbox.cmd().args(good)).code(0).stdout_contains("ALL MET (1 met)");
    }
}

#[test]
fn explicit_files_are_all_honored_and_only_those() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("ROOT", &format!("{} && echo ok", sh::touch("root-ran")), "ok"));
    sandbox.write("a.md", &gate("A", "echo ok", "ok"));
    sandbox.write("b.md", MET_MANUAL);
    sandbox.write("c.md", &gate("C", &format!("{} && echo ok", sh::touch("c-ran")), "ok"));
    let untouched = ["GATES.md", "c.md"].map(|f| sandbox.read(f));
    sandbox
        .run_with(sandbox.cmd().args(["--approve", "a.md", "b.md"]))
        .code(0)
        .stdout_contains("a.md: 1 gates")
        .stdout_contains("b.md: 1 gates")
        .stdout_contains("ALL MET (2 met)")
        .stdout_lacks("GATES:ROOT")
        .stdout_lacks("c:C");
    assert_eq!(["GATES.md", "c.md"].map(|f| sandbox.read(f)), untouched);
    assert!(!sandbox.path("root-ran").exists() && !sandbox.path("c-ran").exists());
    assert_eq!(sandbox.approval_count(), 1);
}

#[test]
fn discovery_finds_gates_md_and_gates_dir_under_root() {
    let sandbox = Sandbox::new();
    sandbox.write("proj/GATES.md", MET_MANUAL);
    sandbox.write("proj/gates/leaf-1.md", "- [ ] L1: one\n");
    sandbox.write("proj/gates/leaf-2.md", "- [ ] L2: two\n");
    sandbox.write("proj/gates/notes.txt", "- [ ] NOPE: not a ledger\n");
    sandbox.write("proj/gates/.md", "- [ ] DOT: a file named .md is a ledger, as in the Node tool\n");
    sandbox.write("proj/gates/deeper/leaf-3.md", "- [ ] NOPE: nested is not discovered\n");
    sandbox.write("GATES.md", "- [ ] OUTSIDE: not under --root\n");
    let out = sandbox.run(&["--status", "--root", "proj"]).code(1).into_stdout();
    let counts: Vec<&str> = out.lines().filter(|l| l.ends_with(" gates")).collect();
    assert_eq!(counts, ["GATES.md: 1 gates", ".md: 1 gates", "leaf-1.md: 1 gates", "leaf-2.md: 1 gates"], "{out}");
    assert!(out.contains("UNMET: 3 (met: 1)\n  :DOT, leaf-1:L1, leaf-2:L2"), "{out}");
    assert!(!out.contains("NOPE") && !out.contains("OUTSIDE"), "{out}");

    let empty = Sandbox::new();
    usage_error(&empty, &["--status"], "no gate files found");
}

#[test]
fn relative_files_resolve_against_root() {
    let sandbox = Sandbox::new();
    sandbox.write("sub/GATES.md", MET_MANUAL);
    sandbox.write("GATES.md", "- [ ] WRONG: the root-less reading\n");
    sandbox
        .run_with(sandbox.cmd().args(["--status", "--root", "sub", "GATES.md"]))
        .code(0)
        .stdout_contains("ALL MET (1 met)");
}

#[test]
fn unusable_ledger_paths_exit_2() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", MET_MANUAL);
    usage_error(&sandbox, &["--status", "missing.md"], "no such gate file");
    std::fs::create_dir(sandbox.path("dir.md")).unwrap();
    usage_error(&sandbox, &["--status", "dir.md"], "regular single-link file");
    // Symbolic links: Windows lets only administrators (or Developer Mode)
    // create one, and wine 8, which runs the Windows tests, creates none.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(sandbox.path("GATES.md"), sandbox.path("link.md")).unwrap();
        usage_error(&sandbox, &["--status", "link.md"], "regular single-link file");
        usage_error(&sandbox, &["link.md"], "regular single-link file");
    }
    std::fs::hard_link(sandbox.path("GATES.md"), sandbox.path("hard.md")).unwrap();
    usage_error(&sandbox, &["--status", "hard.md"], "regular single-link file");
    usage_error(&sandbox, &["--status", "--root", "nowhere"], "--root does not exist");
}

// FIFOs in the file system are a Unix feature.
#[cfg(unix)]
#[test]
fn fifo_ledger_is_refused_without_hanging() {
    let sandbox = Sandbox::new();
    let fifo = sandbox.path("GATES.md");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    for args in [&["--status"][..], &[], &["--status", "GATES.md"]] {
        sandbox
            .run_with(sandbox.cmd().args(args).timeout(std::time::Duration::from_secs(20)))
            .code(2)
            .stderr_contains("regular single-link file")
            .stderr_contains("GATES.md");
    }
}

#[test]
fn completions_and_man_page_come_from_the_clap_definition() {
    let sandbox = Sandbox::new();
    // Registration scripts: the shell calls gate-check back on each TAB.
    for (shell, marker) in [
        ("bash", "complete -o nospace -o bashdefault -o nosort -F _gate_check_complete gate-check"),
        ("zsh", "#compdef gate-check"),
        ("fish", "complete --keep-order --exclusive --command gate-check"),
        ("powershell", "Register-ArgumentCompleter -Native -CommandName gate-check -ScriptBlock {"),
    ] {
        sandbox.run(&["completions", shell]).code(0).stdout_contains(marker).stdout_contains("GATE_CHECK_COMPLETE");
    }
    // PowerShell's registration calls the binary back with the words typed:
    // the protocol itself, which needs no pwsh.
    sandbox
        .run_with(sandbox.cmd().env("GATE_CHECK_COMPLETE", "powershell").args(["--", "gate-check", "--sta"]))
        .code(0)
        .stdout_starts_with("--status\tReport only");
    sandbox.run(&["man"]).code(0).stdout_contains(".TH gate-check 1").stdout_contains("\\-\\-reverify");
    sandbox.run_with(sandbox.cmd().args(["completions", "tcsh"])).code(2).stderr_contains(
        "error: invalid value 'tcsh' for '<SHELL>'\n  [possible values: bash, elvish, fish, powershell, zsh]\n",
    );
}
