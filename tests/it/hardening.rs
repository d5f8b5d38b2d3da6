//! Adversarial-review reproducers (issue 10): hidden characters in what an
//! approver is shown, attribute lines that silently turn a gate manual,
//! records the reader refuses, ledgers grown past the read cap, runs as
//! another user, temp files left by kills, explicit ledgers outside the
//! working directory, a linked state directory, and gates deleted mid-run.

use std::fs;

use crate::common::{exists, gate, native, sh, Run, Sandbox};

/// Creates the file `ran`, then prints ok.
fn touch_ran() -> String {
    sh::then(&sh::touch("ran"), "echo ok")
}

/// Runs gate-check with `args`, checked.
fn run(sandbox: &Sandbox, args: &[&str]) -> Run {
    sandbox.run(args)
}

fn ledger_with_check(check: &str) -> String {
    format!("# Gates\n\n- [ ] G1: the check runs\n  CHECK: {check}\n  EXPECT: ok\n  EVIDENCE: pending\n")
}

#[cfg_attr(
    windows,
    ignore = "cmd.exe prints non-ASCII text in the console code page, not UTF-8, so its output cannot match this EXPECT"
)]
#[test]
fn approval_prompt_and_run_line_escape_look_alike_characters() {
    let sandbox = Sandbox::new();
    fs::create_dir(sandbox.path("sub\u{a0}dir")).unwrap();
    let text = "- [ ] G1: t\n  CHECK: echo ok\u{a0}#\u{200b}; echo\tdone\n  EXPECT: ok\u{a0}#\n  CWD: sub\u{a0}dir\n";
    sandbox.write("GATES.md", text);
    run(&sandbox, &["GATES.md"])
        .code(1)
        .stdout_contains("    CHECK: echo ok\\u{A0}#\\u{200B}; echo\\tdone\n")
        .stdout_contains("    EXPECT: ok\\u{A0}#\n")
        .stdout_contains(&native("/sub\\u{A0}dir\n"))
        .stdout_lacks("\u{a0}")
        .stdout_lacks("\u{200b}")
        .stdout_lacks("\t");

    let approved = run(&sandbox, &["--approve", "GATES.md"]).code(0);
    let run_line = approved.stdout().lines().find(|l| l.starts_with("  RUN  ")).expect("RUN line").to_string();
    // The approval block above showed PATH; the RUN line does not repeat it.
    assert!(run_line.ends_with(&native("/sub\\u{A0}dir")), "{run_line}");
    approved.stdout_contains("\nALL MET (1 met)\n");
    let reverified = run(&sandbox, &["--reverify", "GATES.md"]).code(0);
    let run_line = reverified.stdout().lines().find(|l| l.starts_with("  RUN  ")).expect("RUN line").to_string();
    assert!(run_line.contains(&native("/sub\\u{A0}dir PATH=")), "{run_line}");
    reverified.stdout_contains("ALL MET (1 met, reran: 1");
}

#[test]
fn control_and_bidi_characters_in_definitions_are_refused() {
    let cases = [
        ("CHECK", "echo ok\u{1}#; touch pwned", "\\x01"),
        ("CHECK", "echo ok\u{1b}[8m; touch pwned", "\\x1B"),
        ("CHECK", "echo ok #\u{202e}; touch pwned", "\\u{202E}"),
        ("CHECK", "echo ok\u{85}; touch pwned", "\\u{85}"),
        ("EXPECT", "ok\u{7f}", "\\x7F"),
        ("CWD", ".\u{2066}", "\\u{2066}"),
    ];
    for (key, value, shown) in cases {
        let sandbox = Sandbox::new();
        let mut attributes = vec![("CHECK", "echo ok; touch pwned"), ("EXPECT", "ok"), ("CWD", ".")];
        attributes.iter_mut().filter(|(k, _)| *k == key).for_each(|entry| entry.1 = value);
        let mut text = String::from("- [ ] G1: t\n");
        for (k, v) in &attributes {
            text.push_str(&format!("  {k}: {v}\n"));
        }
        let path = sandbox.write("GATES.md", &text);
        let line = 2 + attributes.iter().position(|(k, _)| *k == key).unwrap();
        let expected =
            format!("{}:{line}: error: {key} contains the control or bidirectional character {shown}", path.display());
        run(&sandbox, &["--approve", "GATES.md"]).code(2).stderr_contains(&expected);
        assert!(!exists(&sandbox.path("pwned")), "{key} {value:?}: the hidden command ran");
        assert_eq!(sandbox.read("GATES.md"), text);
        assert_eq!(sandbox.approval_count(), 0);
    }
}

#[test]
fn a_tab_inside_a_check_is_allowed_and_shown() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &ledger_with_check("echo ok\t# tabbed"));
    run(&sandbox, &["--approve", "GATES.md"]).code(0).stdout_contains("    CHECK: echo ok\\t# tabbed\n");
}

#[test]
fn lint_quotes_hidden_characters_escaped() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", "- [ ] G1: the report renders\n  CHECK: echo\u{a0}READY\n  EXPECT: READY\n");
    run(&sandbox, &["lint", "GATES.md"]).code(0).stdout_contains("echo\\u{A0}READY").stdout_lacks("\u{a0}");
}

#[test]
fn a_line_terminator_inside_an_attribute_is_an_error_not_a_manual_gate() {
    for terminator in ["\r", "\u{2028}", "\u{2029}"] {
        for (key, line) in [("CHECK", 2), ("EXPECT", 3), ("EVIDENCE", 4)] {
            let sandbox = Sandbox::new();
            let mut values =
                vec![("CHECK", "exit 1".to_string()), ("EXPECT", "never".into()), ("EVIDENCE", "seen".into())];
            values
                .iter_mut()
                .filter(|(k, _)| *k == key)
                .for_each(|entry| entry.1.push_str(&format!("{terminator}# x")));
            let mut text = String::from("- [x] G1: looks met\n");
            for (k, v) in &values {
                text.push_str(&format!("  {k}: {v}\n"));
            }
            let path = sandbox.write("GATES.md", &text);
            for args in [&["--reverify", "GATES.md"][..], &["--status", "GATES.md"]] {
                let expected = format!("{}:{line}: error: {key} value contains a line terminator", path.display());
                run(&sandbox, args).code(2).stdout_lacks("ALL MET").stderr_contains(&expected);
            }
            assert_eq!(sandbox.read("GATES.md"), text);
        }
    }
}

#[test]
fn a_line_terminator_inside_a_gate_line_is_an_error_not_a_vanished_gate() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", "- [x] G1: met\n  EVIDENCE: seen\n- [ ] G2: unmet\rhidden\n");
    run(&sandbox, &["--status", "GATES.md"])
        .code(2)
        .stderr_contains("GATES.md:3: error: gate line contains a line terminator");
}

#[test]
fn a_byte_order_mark_does_not_hide_the_first_gate() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", "\u{feff}- [ ] G1: manual\n");
    run(&sandbox, &["--status", "GATES.md"]).code(1).stdout_contains("  UNMET GATES:G1 (unchecked): manual\n");

    let text = format!("\u{feff}{}", gate("G1", "echo ok", "ok"));
    sandbox.write("GATES.md", &text);
    run(&sandbox, &["--approve", "GATES.md"]).code(0).stdout_contains("\nALL MET (");
    let after = sandbox.read("GATES.md");
    assert!(after.starts_with("\u{feff}- [x] G1: outcome G1\n"), "{after:?}");
    assert!(after.contains("  EVIDENCE: automatic-evidence=v1; "), "{after}");
}

#[test]
fn a_gate_deleted_while_it_runs_is_discarded_and_not_counted() {
    let sandbox = Sandbox::new();
    let remaining = "- [x] G2: manual and met\n  EVIDENCE: seen by hand\n";
    // cmd.exe copies a ledger prepared with the rest over the old one.
    std::fs::write(sandbox.path("remaining.md"), remaining).unwrap();
    let check = if cfg!(windows) {
        "copy /y remaining.md GATES.md > nul& echo ok".to_string()
    } else {
        format!("printf -- '{}' > GATES.md; echo ok", remaining.replace('\n', "\\n"))
    };
    sandbox.write("GATES.md", &format!("{}{remaining}", gate("G1", &check, "ok")));
    let json = run(&sandbox, &["--approve", "--format", "json", "GATES.md"])
        .code(0)
        .stderr_contains("\nALL MET (1 met)\n")
        .stdout_json();
    assert_eq!(sandbox.read("GATES.md"), remaining);
    assert_eq!(json["outcome"], "all-met", "{json}");
    assert_eq!(json["unmet"], serde_json::json!([]), "{json}");
    assert_eq!(json["summary"]["unmet"], 0, "{json}");
    assert_eq!(json["gates"].as_array().map(Vec::len), Some(1), "{json}");

    sandbox.write("GATES.md", &format!("{}{remaining}", gate("G1", &check, "ok")));
    run(&sandbox, &["GATES.md"]).code(0).stdout_contains("STALE GATES:G1").stdout_contains("ALL MET (1 met)");
}

#[test]
fn a_definition_too_large_to_approve_is_refused_before_anything_runs() {
    let sandbox = Sandbox::new();
    let huge = "a".repeat(300_000);
    let text = format!(
        "{}{}",
        gate("G0", &sh::then(&sh::touch("ran-g0"), "echo ok"), "ok"),
        gate("G1", &sh::then(&sh::touch("ran-g1"), "echo ok"), &huge)
    );
    let path = sandbox.write("GATES.md", &text);
    for args in [&["--approve", "GATES.md"][..], &["GATES.md"]] {
        let expected = format!("{}:5: error: gate G1 cannot be approved: its approval record would be", path.display());
        run(&sandbox, args).code(2).stderr_contains(&expected);
        assert!(!exists(&sandbox.path("ran-g0")) && !exists(&sandbox.path("ran-g1")), "a check ran");
        assert_eq!(sandbox.approval_count(), 0);
        assert_eq!(sandbox.read("GATES.md"), text);
    }
}

#[test]
fn the_largest_approvable_definition_is_honoured_afterwards() {
    let sandbox = Sandbox::new();
    let large = "a".repeat(250_000);
    std::fs::write(sandbox.path("large.txt"), &large).unwrap();
    sandbox.write("GATES.md", &gate("G1", &sh::cat("large.txt"), &large));
    run(&sandbox, &["--approve", "GATES.md"]).code(0).stdout_contains("\nALL MET (");
    run(&sandbox, &["--reverify", "GATES.md"]).code(0).stdout_contains("\nALL MET (");
}

#[test]
fn a_write_back_that_would_pass_the_read_cap_is_refused() {
    let sandbox = Sandbox::new();
    let head = gate("G1", "echo ok", "ok");
    let target = 8 * 1024 * 1024 - 40;
    let padding_line = "filler prose that keeps the ledger just under its read limit\n";
    let mut text = head.clone();
    while text.len() + padding_line.len() <= target {
        text.push_str(padding_line);
    }
    text.push_str(&"x".repeat(target - text.len() - 1));
    text.push('\n');
    assert_eq!(text.len(), target);
    sandbox.write("GATES.md", &text);
    run(&sandbox, &["--approve", "GATES.md"])
        .code(2)
        .stdout_contains("\n  PASS GATES:G1: outcome G1\n")
        .stderr_contains("write-back would grow the gate ledger past the 8388608-byte read limit");
    assert!(sandbox.read("GATES.md") == text, "the ledger changed");
    run(&sandbox, &["--status", "GATES.md"]).code(1).stdout_contains("  UNMET GATES:G1 (unchecked): outcome G1\n");
}

/// Directory entries of `directory` whose names start with `prefix`.
#[cfg(unix)]
fn names_starting(directory: &std::path::Path, prefix: &str) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(directory)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect();
    names.sort();
    names
}

// Runs as root and changes owners with chown(2).
#[cfg(unix)]
#[test]
fn stale_temp_files_of_a_killed_write_back_are_removed_and_nothing_else() {
    use std::os::unix::fs::{symlink, MetadataExt};
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "echo ok", "ok"));
    sandbox.write(".GATES.md.AbC123.tmp", "- [x] a killed write-back's half-written ledger\n");
    let decoys = [".GATES.md.notes.tmp", ".GATES.md.AbC123.tmp.bak", ".GATES.md.AbC12.tmp", ".OTHER.md.AbC123.tmp"];
    for decoy in decoys {
        sandbox.write(decoy, "a user's file\n");
    }
    sandbox.write("keep-hard", "hard-linked\n");
    fs::hard_link(sandbox.path("keep-hard"), sandbox.path(".GATES.md.Hrd123.tmp")).unwrap();
    symlink(sandbox.path("keep-hard"), sandbox.path(".GATES.md.Lnk123.tmp")).unwrap();
    fs::create_dir(sandbox.path(".GATES.md.Dir123.tmp")).unwrap();
    let foreign = sandbox.write(".GATES.md.Frn123.tmp", "another user's file\n");
    std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
    assert_eq!(fs::metadata(&foreign).unwrap().uid(), 65534);

    run(&sandbox, &["--approve", "GATES.md"]).code(0).stdout_contains("\nALL MET (");
    let mut kept: Vec<String> = decoys.iter().map(ToString::to_string).collect();
    kept.extend(
        [".GATES.md.Dir123.tmp", ".GATES.md.Frn123.tmp", ".GATES.md.Hrd123.tmp", ".GATES.md.Lnk123.tmp"]
            .map(String::from),
    );
    kept.retain(|n| n.starts_with(".GATES.md."));
    kept.sort();
    assert_eq!(names_starting(&sandbox.root, ".GATES.md."), kept);
    assert!(exists(&sandbox.path(".OTHER.md.AbC123.tmp")));
}

// Symbolic links: Windows lets only administrators (or Developer Mode)
// create one, and wine 8, which runs the Windows tests, creates none.
#[cfg(unix)]
#[test]
fn a_linked_state_directory_is_refused_before_anything_is_written() {
    let sandbox = Sandbox::new();
    let outside = sandbox.root.parent().unwrap().join("outside-state");
    fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, sandbox.path(".unlazy")).unwrap();
    let text = gate("G1", &touch_ran(), "ok");
    sandbox.write("GATES.md", &text);
    run(&sandbox, &["--approve", "GATES.md"])
        .code(2)
        .stderr_contains("/.unlazy must be a real directory inside the repository");
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 0, "something was created through the link");
    assert!(!exists(&sandbox.path("ran")), "the check ran");
    assert_eq!(sandbox.approval_count(), 0);
    assert_eq!(sandbox.read("GATES.md"), text);
}

/// A home directory, a repository `p` outside it, and a command run from
/// the home directory with the default approval store.
struct Elsewhere {
    sandbox: Sandbox,
    home: std::path::PathBuf,
    repo: std::path::PathBuf,
}

impl Elsewhere {
    fn new() -> Elsewhere {
        let sandbox = Sandbox::new();
        let base = sandbox.root.parent().unwrap().to_path_buf();
        let (home, repo) = (base.join("home"), base.join("p"));
        fs::create_dir(&home).unwrap();
        fs::create_dir(&repo).unwrap();
        fs::write(repo.join("GATES.md"), gate("G1", &touch_ran(), "ok")).unwrap();
        Elsewhere { sandbox, home, repo }
    }

    fn run_from(&self, cwd: &std::path::Path, args: &[&str]) -> Run {
        let mut cmd = self.sandbox.cmd();
        cmd.current_dir(cwd).env("HOME", &self.home).env("USERPROFILE", &self.home).env_remove("UNLAZY_APPROVAL_DIR");
        self.sandbox.run_with(cmd.args(args))
    }

    fn ledger(&self) -> String {
        self.repo.join("GATES.md").display().to_string()
    }
}

#[test]
fn an_explicit_ledger_outside_the_working_directory_belongs_to_its_own_repository() {
    let e = Elsewhere::new();
    e.run_from(&e.home, &["--approve", &e.ledger()]).code(0).stdout_contains("\nALL MET (1 met)\n");
    assert!(exists(&e.repo.join("ran")));
    assert!(exists(&e.repo.join(".unlazy/locks")), "locks live in the ledger's repository");
    assert!(!exists(&e.home.join(".unlazy/locks")), "locks were created in the working directory");
    assert_eq!(fs::read_dir(e.home.join(".unlazy/approved")).unwrap().count(), 1);

    // From a directory where no state could be created, nothing changes.
    let elsewhere = e.sandbox.root.parent().unwrap().join("blocked");
    fs::create_dir(&elsewhere).unwrap();
    fs::write(elsewhere.join(".unlazy"), "not a directory").unwrap();
    e.run_from(&elsewhere, &["--reverify", &e.ledger()]).code(0).stdout_contains("\nALL MET (1 met");
}

#[test]
fn a_store_inside_an_explicit_ledgers_repository_is_refused() {
    let e = Elsewhere::new();
    let inside = e.repo.join("store");
    let mut cmd = e.sandbox.cmd();
    cmd.current_dir(&e.home).env("HOME", &e.home).env("USERPROFILE", &e.home).env("UNLAZY_APPROVAL_DIR", &inside);
    let expected = format!("UNLAZY_APPROVAL_DIR must be outside the repository root {}", e.repo.display());
    e.sandbox.run_with(cmd.args(["--approve", &e.ledger()])).code(2).stderr_contains(&expected);
    assert!(!exists(&e.repo.join("ran")) && !exists(&inside));
}

#[test]
fn the_default_store_inside_the_repository_is_named_as_such() {
    let e = Elsewhere::new();
    fs::write(e.home.join("GATES.md"), gate("G1", &touch_ran(), "ok")).unwrap();
    e.run_from(&e.home, &["--approve", "GATES.md"])
        .code(2)
        .stderr_contains("the default approval store")
        .stderr_contains("set UNLAZY_APPROVAL_DIR")
        .stderr_lacks("UNLAZY_APPROVAL_DIR must be outside");
    assert!(!exists(&e.home.join("ran")));
}

#[test]
fn write_back_preconditions_are_checked_before_any_check_runs() {
    let sandbox = Sandbox::new();
    sandbox.write(".unlazy", "a file where the state directory belongs");
    let text = gate("G1", &touch_ran(), "ok");
    sandbox.write("GATES.md", &text);
    run(&sandbox, &["--approve", "GATES.md"])
        .code(2)
        .stderr_contains("cannot write back to")
        .stderr_contains(&native("/.unlazy must be a real directory"));
    assert!(!exists(&sandbox.path("ran")), "the check ran before the precondition failed");
    assert_eq!(sandbox.approval_count(), 0, "an approval was recorded");
    assert_eq!(sandbox.read("GATES.md"), text);
}

// Runs as root and changes owners with chown(2).
#[cfg(unix)]
#[test]
fn a_run_as_root_on_a_users_ledger_keeps_it_and_its_state_the_users() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::os::unix::process::CommandExt;
    assert!(nix::unistd::geteuid().is_root(), "this test must run as root: it hands the repository to uid 65534");
    const NOBODY: u32 = 65534;
    let sandbox = Sandbox::new();
    let base = sandbox.root.parent().unwrap().to_path_buf();
    fs::set_permissions(&base, fs::Permissions::from_mode(0o755)).unwrap();
    let ledger = sandbox.write("GATES.md", &gate("G1", "echo ok", "ok"));
    fs::set_permissions(&ledger, fs::Permissions::from_mode(0o640)).unwrap();
    xattr::set(&ledger, "user.origin", b"kept").unwrap();
    for path in [&sandbox.root, &ledger] {
        std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY)).unwrap();
    }

    run(&sandbox, &["--approve", "GATES.md"]).code(0).stdout_contains("\nALL MET (");
    assert!(sandbox.read("GATES.md").starts_with("- [x] G1"), "not written back");
    let meta = fs::metadata(&ledger).unwrap();
    assert_eq!((meta.uid(), meta.gid(), meta.mode() & 0o7777), (NOBODY, NOBODY, 0o640));
    assert_eq!(xattr::get(&ledger, "user.origin").unwrap().as_deref(), Some(&b"kept"[..]));
    let locks = sandbox.path(".unlazy/locks");
    for path in [sandbox.path(".unlazy"), sandbox.path(".unlazy/.gitignore")]
        .into_iter()
        .chain(fs::read_dir(&locks).unwrap().map(|e| e.unwrap().path()))
        .chain([locks.clone()])
    {
        let meta = fs::symlink_metadata(&path).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (NOBODY, NOBODY), "{} is not the owner's", path.display());
    }

    // The owner's own run still works, including its write-back.
    let (store, receipts) = (base.join("owner-approvals"), base.join("owner-receipts"));
    for private in [&store, &receipts] {
        fs::create_dir(private).unwrap();
        fs::set_permissions(private, fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(private, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    let mut owner = sandbox.std_cmd();
    owner.env("UNLAZY_APPROVAL_DIR", &store).env("UNLAZY_RECEIPT_DIR", &receipts);
    owner.env("HOME", &base).uid(NOBODY).gid(NOBODY);
    owner.args(["--approve", "--reverify", "GATES.md"]);
    sandbox.run_with(&mut assert_cmd::Command::from_std(owner)).code(0).stdout_contains("PASS GATES:G1");
}

#[test]
fn a_run_that_runs_nothing_creates_no_state() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "echo ok", "ok"));
    run(&sandbox, &["GATES.md"]).code(1).stdout_contains("APPROVAL REQUIRED");
    assert!(!exists(&sandbox.path(".unlazy")), "an unapproved run created state");
}

#[test]
fn a_named_ledger_inside_the_root_shares_the_lock_of_the_discovered_one() {
    let sandbox = Sandbox::new();
    sandbox.write("gates/leaf.md", &gate("G1", "echo ok", "ok"));
    run(&sandbox, &["--approve", "gates/leaf.md"]).code(0).stdout_contains("\nALL MET (");
    assert!(exists(&sandbox.path(".unlazy/locks")), "the lock is not under the root");
    assert!(!exists(&sandbox.path("gates/.unlazy")), "a second lock directory was created beside the ledger");
}
