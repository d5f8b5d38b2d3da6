//! `gate-check baseline REF` through the real binary, on a two-commit git
//! repository each test makes: the second commit adds a shell function.
//! One gate calls it (it discriminates), one tests for a README both
//! commits hold (vacuous), one fails, one is never approved (and never
//! runs). The repository, its index, HEAD and worktrees are the same
//! after every run, also an interrupted one, and REF's checkout is gone.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{exists, git, Run, Sandbox};
use serde_json::Value;

/// A gate as ledger text.
fn gate(id: &str, title: &str, check: &str, expect: &str) -> String {
    format!("- [ ] {id}: {title}\n  CHECK: {check}\n  EXPECT: {expect}\n  EVIDENCE: pending\n")
}

/// Where checks leave marks outside the repository and every checkout.
fn outside(sandbox: &Sandbox) -> PathBuf {
    sandbox.root.parent().unwrap().join("outside")
}

/// The temporary directory gate-check makes its checkout (and confined
/// checks their TMPDIR) in: outside the repository, and watched.
fn temporary(sandbox: &Sandbox) -> PathBuf {
    sandbox.root.parent().unwrap().join("tmp")
}

/// The repository: commit one without `greet`, commit two with it, and
/// the ledger's D1, V1 and F1 approved (which also proves D1 and V1 on
/// the work tree).
fn two_commits(extra_gates: &str) -> Sandbox {
    let sandbox = Sandbox::new();
    fs::create_dir_all(outside(&sandbox)).unwrap();
    fs::create_dir_all(temporary(&sandbox)).unwrap();
    git(&sandbox.root, &["init", "-q"]);
    let unapproved = format!("touch {}/unapproved-ran && echo U-RAN", outside(&sandbox).display());
    let ledger = [
        gate("D1", "greet says hello", ". ./lib.sh && greet", "hello from greet"),
        gate("V1", "the readme is there", "test -f README.md && echo README-OK", "README-OK"),
        gate("F1", "the report is built", "cat report.txt", "REPORT"),
        gate("U1", "nobody approved this", &unapproved, "U-RAN"),
        extra_gates.to_string(),
    ]
    .concat();
    sandbox.write("GATES.md", &ledger);
    sandbox.write("README.md", "a project\n");
    sandbox.write("lib.sh", "hello() { echo hello; }\n");
    git(&sandbox.root, &["add", "-A"]);
    git(&sandbox.root, &["commit", "-qm", "one"]);
    sandbox.write("lib.sh", "hello() { echo hello; }\ngreet() { echo hello from greet; }\n");
    git(&sandbox.root, &["commit", "-qam", "two: greet"]);
    sandbox.run(&["--approve", "--gate", "D1,V1,F1", "-q"]).code(1).stdout_contains("FAIL GATES:F1");
    sandbox
}

/// `gate-check baseline ARGS` with the watched temporary directory.
fn baseline(sandbox: &Sandbox, args: &[&str]) -> Run {
    sandbox.run_with(sandbox.cmd().arg("baseline").args(args).env("TMPDIR", temporary(sandbox)))
}

/// What a run must leave as it was: the status (untracked and ignored
/// files included), HEAD, the index's bytes, branches, stash and worktrees.
fn repository_state(sandbox: &Sandbox) -> Vec<String> {
    let root = &sandbox.root;
    vec![
        git(root, &["status", "--porcelain=v2", "--branch", "--untracked-files=all", "--ignored"]),
        git(root, &["rev-parse", "HEAD"]),
        format!("{:?}", fs::read(root.join(".git/index")).unwrap()),
        git(root, &["branch", "-a", "-v"]),
        git(root, &["stash", "list"]),
        git(root, &["worktree", "list", "--porcelain"]),
    ]
}

/// The entries of the watched temporary directory: none once a run ends.
fn left_behind(sandbox: &Sandbox) -> Vec<String> {
    fs::read_dir(temporary(sandbox))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn the_four_results_and_the_exit_codes_are_right_and_the_repository_is_untouched() {
    let sandbox = two_commits("");
    let short = git(&sandbox.root, &["rev-parse", "--short", "HEAD~1"]).trim().to_string();
    let before = repository_state(&sandbox);
    let run = baseline(&sandbox, &["HEAD~1"]).code(1);
    let out = run.into_stdout();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "BASELINE {short} (HEAD~1): each approved gate's check runs on a temporary checkout of {short} and on \
             the work tree; a run on {short} reuses the gate's approval, its CWD mapped into the checkout"
        )
    );
    assert!(
        lines[1].starts_with(&format!("SANDBOX: runs on {short} are confined: writes only under the checkout")),
        "{out}"
    );
    assert!(out.contains("APPROVAL REQUIRED GATES:U1\n"), "{out}");
    assert!(
        out.contains("    NOT RUN: baseline approves nothing; approve this oracle with gate-check --approve"),
        "{out}"
    );
    let results: Vec<&str> = lines.iter().copied().filter(|line| !line.starts_with(' ')).skip(3).collect();
    assert_eq!(
        results,
        [
            format!("DISCRIMINATES GATES:D1 fails on {short} (HEAD~1), passes now (proven on this tree)").as_str(),
            &format!("VACUOUS GATES:V1 passes on {short} (HEAD~1) too"),
            &format!("FAILING GATES:F1 fails now, and on {short} (HEAD~1)"),
            "NOT RUN GATES:U1 approval required; nothing of it ran",
            "NOT ALL DISCRIMINATE: 1 of 4 (vacuous: 1, failing: 1, approval required: 1)",
            "next: gate-check --approve --gate GATES:U1",
        ]
    );
    // What failed on REF is shown: here, the missing function.
    assert!(out.contains(&format!("       on {short}: exit=127; EXPECT=not matched; output=")), "{out}");
    assert!(!exists(&outside(&sandbox).join("unapproved-ran")), "the unapproved check ran");
    assert_eq!(repository_state(&sandbox), before, "baseline changed the repository");
    // With four at once, the same lines in the same order.
    baseline(&sandbox, &["HEAD~1", "-j", "4"]).code(1).stdout_is(&out);
    // The approve command keeps the options the approval is bound to.
    baseline(&sandbox, &["HEAD~1", "--gate", "U1", "--timeout", "7", "--shell", "/bin/sh", "--sandbox", "-q"])
        .code(1)
        .stdout_contains("next: gate-check --approve --timeout 7 --shell /bin/sh --sandbox --gate GATES:U1\n");
    assert_eq!(left_behind(&sandbox), Vec::<String>::new(), "the checkout was left behind");

    // Only the gate that tells the change apart: exit 0.
    baseline(&sandbox, &["HEAD~1", "--gate", "D1", "-q"]).code(0).stdout_is("ALL DISCRIMINATE (1 gate(s))\n");
    // The vacuous one alone, and the failing one alone: exit 1.
    baseline(&sandbox, &["HEAD~1", "--gate", "V1", "-q"]).code(1).stdout_contains("VACUOUS GATES:V1");
    baseline(&sandbox, &["HEAD~1", "--gate", "F1", "-q"]).code(1).stdout_contains("FAILING GATES:F1");
    // Against HEAD itself nothing changed, so nothing discriminates.
    baseline(&sandbox, &["HEAD", "--gate", "D1", "-q"]).code(1).stdout_contains("VACUOUS GATES:D1 passes on");
    assert_eq!(repository_state(&sandbox), before);
    assert!(!exists(&outside(&sandbox).join("unapproved-ran")));
    // The same check runs once approved: it is the approval that kept it.
    sandbox.run(&["--approve", "--gate", "U1", "-q"]).code(0).stdout_contains("ALL MET (1 met");
    assert!(exists(&outside(&sandbox).join("unapproved-ran")), "the approved check runs");
}

#[test]
fn without_a_current_proof_the_check_runs_on_the_work_tree_too() {
    let sandbox = two_commits("");
    let fresh = sandbox.root.parent().unwrap().join("no-receipts");
    let mut command = sandbox.cmd();
    command.args(["baseline", "HEAD~1", "--gate", "D1,V1", "--format", "json"]);
    command.env("TMPDIR", temporary(&sandbox)).env("UNLAZY_RECEIPT_DIR", &fresh);
    let document = sandbox.run_with(&mut command).code(1).stderr_contains("VACUOUS GATES:V1").stdout_json();
    let gates = document["gates"].as_array().unwrap();
    assert_eq!(gates.len(), 2, "{document}");
    assert_eq!((gates[0]["result"].as_str(), gates[1]["result"].as_str()), (Some("discriminates"), Some("vacuous")));
    for gate in gates {
        assert_eq!(gate["now"]["source"], "run", "{gate}");
        assert_eq!(gate["now"]["status"], "pass", "{gate}");
    }
    assert_eq!(gates[0]["base"]["status"], "fail");
    assert_eq!(gates[0]["base"]["exit"], 127);
    assert!(!fresh.exists(), "baseline created a receipt store");
    // With the receipts, the proofs stand in for the runs on the work tree.
    let mut command = sandbox.cmd();
    command.args(["baseline", "HEAD~1", "--gate", "D1", "--format", "json"]).env("TMPDIR", temporary(&sandbox));
    let document = sandbox.run_with(&mut command).code(0).stderr_contains("DISCRIMINATES GATES:D1").stdout_json();
    assert_eq!(document["gates"][0]["now"]["source"], "proof", "{document}");
    assert!(document["gates"][0]["now"]["provenAt"].is_string(), "{document}");
    assert_eq!(document["outcome"], "all-discriminate");
}

#[test]
fn a_proof_stands_in_only_for_the_oracle_it_was_made_under() {
    let sandbox = two_commits("");
    // D1 is approved for both shells; its evidence and proof now name bash.
    sandbox
        .run(&["--approve", "--reverify", "--gate", "D1", "--shell", "/bin/bash", "-q"])
        .code(0)
        .stdout_contains("ALL MET");
    let now_source = |shell: Option<&str>| {
        let mut command = sandbox.cmd();
        command.args(["baseline", "HEAD~1", "--gate", "D1", "--format", "json"]).env("TMPDIR", temporary(&sandbox));
        if let Some(shell) = shell {
            command.args(["--shell", shell]);
        }
        let document = sandbox.run_with(&mut command).code(0).stderr_contains("DISCRIMINATES GATES:D1").stdout_json();
        document["gates"][0]["now"]["source"].as_str().unwrap().to_string()
    };
    assert_eq!(now_source(Some("/bin/bash")), "proof");
    // Under sh the check is another oracle: its run on the work tree is needed.
    assert_eq!(now_source(None), "run");
}

#[test]
fn a_cwd_that_does_not_exist_on_ref_is_unknown_with_its_reason() {
    let sandbox = two_commits(
        "- [ ] C1: the web app builds\n  CHECK: test -f index.html && echo WEB-OK\n  EXPECT: WEB-OK\n  CWD: web\n  EVIDENCE: pending\n",
    );
    sandbox.write("web/index.html", "<p>new</p>\n");
    git(&sandbox.root, &["add", "web"]);
    git(&sandbox.root, &["commit", "-qm", "three: web"]);
    sandbox.run(&["--approve", "--gate", "C1", "-q"]).code(0).stdout_contains("ALL MET (1 met");
    let short = git(&sandbox.root, &["rev-parse", "--short", "HEAD~2"]).trim().to_string();
    baseline(&sandbox, &["HEAD~2", "--gate", "C1", "-q"]).code(1).stdout_is(&format!(
        "UNKNOWN GATES:C1 passes now (proven on this tree), but cannot be judged on {short} (HEAD~2): its CWD web \
         does not exist there\nNOT ALL DISCRIMINATE: 0 of 1 (unknown: 1)\n"
    ));
    // On a commit that has it, the check runs there.
    baseline(&sandbox, &["HEAD", "--gate", "C1", "-q"]).code(1).stdout_contains("VACUOUS GATES:C1");
}

#[test]
fn a_check_on_ref_that_writes_outside_its_checkout_fails_confined() {
    // Each run writes a file named after its directory: the work tree's
    // (repo) or the checkout's (gate-check-baseline-...).
    let sandbox = two_commits("");
    let write = format!("echo x > {}/\"$(basename \"$PWD\")\" && echo WROTE", outside(&sandbox).display());
    sandbox.write("GATES.md", &format!("{}{}", sandbox.read("GATES.md"), gate("W1", "writes beside", &write, "WROTE")));
    sandbox.run(&["--approve", "--gate", "W1", "-q"]).code(0).stdout_contains("ALL MET (1 met");
    fs::remove_file(outside(&sandbox).join("repo")).unwrap();
    let written_by_checkouts = || -> Vec<String> {
        fs::read_dir(outside(&sandbox))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("gate-check-baseline-"))
            .collect()
    };
    // Unconfined, REF's run writes there too, and the gate passes on both.
    baseline(&sandbox, &["HEAD~1", "--gate", "W1", "--unconfined", "-q"])
        .code(1)
        .stdout_contains("VACUOUS GATES:W1 passes on");
    assert_eq!(written_by_checkouts().len(), 1, "the unconfined run on REF did not write");
    for name in written_by_checkouts() {
        fs::remove_file(outside(&sandbox).join(name)).unwrap();
    }
    // Confined (the default), the write is refused and the check fails there.
    let run = baseline(&sandbox, &["HEAD~1", "--gate", "W1", "--show-output"]).code(0);
    let out = run.into_stdout();
    assert!(out.contains("DISCRIMINATES GATES:W1 fails on"), "{out}");
    assert!(out.contains("Read-only file system"), "{out}");
    assert_eq!(written_by_checkouts(), Vec::<String>::new(), "a confined run on REF wrote outside its checkout");
    assert_eq!(left_behind(&sandbox), Vec::<String>::new());
}

#[test]
fn a_check_on_ref_runs_without_credentials_unless_they_are_kept() {
    let sandbox = two_commits("");
    let show = "echo \"gh=${GITHUB_TOKEN:-none}\"";
    sandbox
        .write("GATES.md", &format!("{}{}", sandbox.read("GATES.md"), gate("T1", "sees the token", show, "gh=s3cret")));
    let with_token = |args: &[&str]| {
        let mut command = sandbox.cmd();
        command.arg("baseline").args(args).env("TMPDIR", temporary(&sandbox)).env("GITHUB_TOKEN", "s3cret");
        sandbox.run_with(&mut command)
    };
    sandbox
        .run_with(sandbox.cmd().args(["--approve", "--gate", "T1", "-q"]).env("GITHUB_TOKEN", "s3cret"))
        .code(0)
        .stdout_contains("ALL MET (1 met");
    // Unconfined, or with the token kept, REF's run sees it and passes.
    with_token(&["HEAD~1", "--gate", "T1", "--unconfined", "-q"]).code(1).stdout_contains("VACUOUS GATES:T1");
    with_token(&["HEAD~1", "--gate", "T1", "--sandbox-keep-env", "GITHUB_TOKEN", "-q"])
        .code(1)
        .stdout_contains("VACUOUS GATES:T1");
    // Confined (the default), it is withheld there, and the run says so.
    let out = with_token(&["HEAD~1", "--gate", "T1"]).code(0).into_stdout();
    assert!(out.contains("DISCRIMINATES GATES:T1 fails on") && out.contains("output=gh=none"), "{out}");
    let sandbox_line = out.lines().find(|line| line.starts_with("SANDBOX: ")).unwrap_or_default();
    assert!(sandbox_line.contains("withheld") && sandbox_line.contains("GITHUB_TOKEN"), "{out}");
}

/// Waits until `found` says yes, for at most 20 s.
fn wait_until(what: &str, found: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !found() {
        assert!(Instant::now() < deadline, "never saw {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_interrupt_mid_run_leaves_no_checkout_and_no_worktree_behind() {
    let slow = "if grep -q greet lib.sh; then echo DONE; else touch started; sleep 60; fi";
    let sandbox = two_commits(&gate("S1", "slow on the old code", slow, "DONE"));
    sandbox.run(&["--approve", "--gate", "S1", "-q"]).code(0).stdout_contains("ALL MET (1 met");
    let before = repository_state(&sandbox);
    let child = sandbox
        .std_cmd()
        .args(["baseline", "HEAD~1", "--gate", "S1"])
        .env("TMPDIR", temporary(&sandbox))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = || {
        left_behind(&sandbox).iter().any(|name| {
            name.starts_with("gate-check-baseline-") && temporary(&sandbox).join(name).join("started").exists()
        })
    };
    wait_until("the check running on REF", started);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let output = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(130), "{out}{}", String::from_utf8_lossy(&output.stderr));
    assert!(out.contains("INTERRUPTED by SIGINT: 1 running check(s) stopped"), "{out}");
    assert!(!out.contains("UNKNOWN") && !out.contains("NOT ALL DISCRIMINATE"), "an interrupted run judged: {out}");
    assert_eq!(left_behind(&sandbox), Vec::<String>::new(), "the checkout survived the interrupt");
    assert_eq!(repository_state(&sandbox), before);
    assert_eq!(git(&sandbox.root, &["worktree", "list"]).lines().count(), 1);
}

#[test]
fn machine_reports_say_what_the_exit_code_says() {
    let sandbox = two_commits("");
    let mut command = sandbox.cmd();
    command.args(["baseline", "HEAD~1", "--format", "junit"]).env("TMPDIR", temporary(&sandbox));
    let xml = sandbox.run_with(&mut command).code(1).stderr_contains("VACUOUS GATES:V1").into_stdout();
    assert!(xml.contains("<testsuites name=\"gate-check baseline\" tests=\"4\" failures=\"3\" errors=\"0\""), "{xml}");
    assert!(xml.contains("type=\"vacuous\""), "{xml}");
    assert!(xml.contains("type=\"failing\""), "{xml}");
    assert!(xml.contains("type=\"approval-required\""), "{xml}");
    assert!(xml.contains("<property name=\"gate-check.baseline.ref\" value=\"HEAD~1\"/>"), "{xml}");
    // On GitHub Actions, each gate that does not discriminate is annotated.
    let mut command = sandbox.cmd();
    command.args(["baseline", "HEAD~1", "-q"]).env("TMPDIR", temporary(&sandbox)).env("GITHUB_ACTIONS", "true");
    let out = sandbox.run_with(&mut command).code(1).into_stdout();
    assert!(out.contains("::error file=GATES.md,line=5,title=baseline GATES%3AV1::vacuous: passes on"), "{out}");
    assert_eq!(out.matches("::error ").count(), 3, "{out}");
}

#[test]
fn a_ref_git_cannot_resolve_and_a_directory_outside_git_are_errors() {
    let sandbox = two_commits("");
    baseline(&sandbox, &["no-such-branch"])
        .code(2)
        .stderr_starts_with("gate-check: error: cannot resolve \"no-such-branch\" in ");
    let mut command = sandbox.cmd();
    command.args(["baseline", "no-such-branch", "--format", "json"]).env("TMPDIR", temporary(&sandbox));
    let document: Value = sandbox.run_with(&mut command).code(2).stderr_contains("cannot resolve").stdout_json();
    assert_eq!((document["outcome"].as_str(), document["exitCode"].as_i64()), (Some("error"), Some(2)));
    let plain = Sandbox::new();
    plain.write("GATES.md", &gate("A1", "a", "echo A", "A"));
    plain.run(&["baseline", "HEAD"]).code(2).stderr_contains("baseline needs a git repository");
    // No CHECK among the selected gates: nothing to judge is no success.
    sandbox.write("GATES.md", "- [ ] M1: a person looks\n");
    git(&sandbox.root, &["commit", "-qam", "manual"]);
    baseline(&sandbox, &["HEAD~1"]).code(2).stderr_contains("baseline has no gate to judge");
    baseline(&sandbox, &["HEAD~1", "--sandbox", "--unconfined"]).code(2).stderr_contains("cannot be used with");
}

/// Commits `tree` (made by `git mktree` from `entries`) on top of HEAD
/// without touching the work tree or the index; its id.
fn commit_tree(sandbox: &Sandbox, entries: &str) -> String {
    let mut mktree = Command::new("git")
        .arg("mktree")
        .current_dir(&sandbox.root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut mktree.stdin.take().unwrap(), entries.as_bytes()).unwrap();
    let tree = String::from_utf8(mktree.wait_with_output().unwrap().stdout).unwrap();
    git(&sandbox.root, &["commit-tree", tree.trim(), "-p", "HEAD", "-m", "crafted"]).trim().to_string()
}

#[test]
fn links_executables_and_submodules_are_checked_out_as_git_leaves_them() {
    let layout =
        "test -x run.sh && test -L link && test \"$(cat link)\" = hello && test -d vendor/lib && echo LAYOUT-OK";
    let sandbox = two_commits(&gate("L1", "the layout holds", layout, "LAYOUT-OK"));
    sandbox.write("run.sh", "#!/bin/sh\n");
    sandbox.write("target.txt", "hello\n");
    fs::set_permissions(sandbox.path("run.sh"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("target.txt", sandbox.path("link")).unwrap();
    let head = git(&sandbox.root, &["rev-parse", "HEAD"]);
    git(&sandbox.root, &["update-index", "--add", "--cacheinfo", &format!("160000,{},vendor/lib", head.trim())]);
    fs::create_dir_all(sandbox.path("vendor/lib")).unwrap();
    git(&sandbox.root, &["add", "run.sh", "target.txt", "link"]);
    git(&sandbox.root, &["commit", "-qm", "layout"]);
    sandbox.run(&["--approve", "--gate", "L1", "-q"]).code(0).stdout_contains("ALL MET (1 met");
    // The layout holds on the checkout of HEAD: the same check passes there.
    baseline(&sandbox, &["HEAD", "--gate", "L1", "-q"]).code(1).stdout_contains("VACUOUS GATES:L1 passes on");
    baseline(&sandbox, &["HEAD~1", "--gate", "L1", "-q"]).code(0).stdout_is("ALL DISCRIMINATE (1 gate(s))\n");
}

#[test]
fn a_tree_entry_that_would_write_outside_its_directory_is_refused() {
    let sandbox = two_commits("");
    let blob = git(&sandbox.root, &["rev-parse", "HEAD:README.md"]);
    let escaping = commit_tree(&sandbox, &format!("100644 blob {}\t..\n", blob.trim()));
    let escaping_tree = git(&sandbox.root, &["rev-parse", &format!("{escaping}^{{tree}}")]);
    let nested = commit_tree(&sandbox, &format!("040000 tree {}\tsub\n", escaping_tree.trim()));
    let dot_git = commit_tree(&sandbox, &format!("100644 blob {}\t.GIT\n", blob.trim()));
    for (commit, shown) in [(&nested, "sub/.."), (&dot_git, ".GIT")] {
        baseline(&sandbox, &[commit, "--gate", "V1"])
            .code(2)
            .stderr_contains(&format!("holds \"{shown}\", which gate-check will not write"));
        assert_eq!(left_behind(&sandbox), Vec::<String>::new());
    }
    assert!(!exists(&temporary(&sandbox).join("sub")) && !exists(&sandbox.root.parent().unwrap().join("README.md")));
}

#[test]
fn lint_names_baseline_for_the_gates_it_suspects_and_baseline_settles_it() {
    let sandbox = two_commits(&gate("E1", "the build prints its marker", "echo BUILD-OK", "BUILD-OK"));
    let hint = "hint: GATES:V1, GATES:U1, GATES:E1 may pass whatever the code does; see whether each fails on the code \
                before the change: gate-check baseline REF --gate GATES:V1,GATES:U1,GATES:E1 (REF: that commit, such as \
                HEAD or origin/main)\n";
    let out = sandbox.run(&["lint", "GATES.md"]).code(0).into_stdout();
    assert!(out.contains("[tautological-check]") && out.contains("[expect-in-check]"), "{out}");
    assert!(out.ends_with(&format!("{hint}LINT OK (4 warning(s))\n")), "{out}");
    // The command it names settles each suspicion by running the check.
    sandbox.run(&["--approve", "--gate", "E1", "-q"]).code(0).stdout_contains("ALL MET (1 met");
    let out = baseline(&sandbox, &["HEAD~1", "--gate", "GATES:V1,GATES:U1,GATES:E1", "-q"]).code(1).into_stdout();
    assert!(out.contains("VACUOUS GATES:V1 passes on") && out.contains("VACUOUS GATES:E1 passes on"), "{out}");
    assert!(out.contains("NOT RUN GATES:U1"), "{out}");
    // A ledger lint suspects of nothing gets no hint.
    sandbox.write("GATES.md", &gate("D1", "greet says hello", ". ./lib.sh && greet", "hello from greet"));
    sandbox.run(&["lint", "GATES.md"]).code(0).stdout_lacks("hint:").stdout_contains("LINT OK");
}

/// Hands `path` and everything under it to `uid`.
fn chown_tree(path: &Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
    if fs::symlink_metadata(path).unwrap().is_dir() {
        for entry in fs::read_dir(path).unwrap() {
            chown_tree(&entry.unwrap().path(), uid);
        }
    }
}

#[test]
fn a_checkout_a_check_locked_up_is_removed_all_the_same() {
    // Root may remove what it cannot write: the run is made as uid 65534
    // then, so the locked directories hold against a plain removal.
    let locking = "mkdir -p locked/inner && touch locked/inner/f && chmod 500 locked/inner locked && echo LOCKED";
    let sandbox = two_commits(&gate("K1", "locks a directory", locking, "LOCKED"));
    let base = sandbox.root.parent().unwrap().to_path_buf();
    let as_user = |args: &[&str]| {
        let mut command = sandbox.std_cmd();
        command.args(args).env("TMPDIR", temporary(&sandbox));
        if nix::unistd::geteuid().is_root() {
            use std::os::unix::fs::PermissionsExt;
            use std::os::unix::process::CommandExt;
            fs::set_permissions(&base, fs::Permissions::from_mode(0o755)).unwrap();
            fs::create_dir_all(base.join("home")).unwrap();
            chown_tree(&base, 65534);
            command.uid(65534).gid(65534).env("HOME", base.join("home"));
        }
        sandbox.run_with(&mut assert_cmd::Command::from_std(command))
    };
    as_user(&["--approve", "--gate", "K1", "-q"]).code(0).stdout_contains("ALL MET (1 met");
    baseline_locked(&as_user);
    assert_eq!(left_behind(&sandbox), Vec::<String>::new(), "a checkout with locked directories was left behind");
}

/// The run on REF locks directories in its checkout, and passes there.
fn baseline_locked(as_user: &dyn Fn(&[&str]) -> Run) {
    as_user(&["baseline", "HEAD~1", "--gate", "K1", "-q"]).code(1).stdout_contains("VACUOUS GATES:K1 passes on");
}

#[test]
fn a_temporary_directory_inside_the_work_tree_is_refused() {
    let sandbox = two_commits("");
    // Outside it, the run goes ahead.
    baseline(&sandbox, &["HEAD~1", "--gate", "V1", "-q"]).code(1).stdout_contains("VACUOUS GATES:V1");
    fs::create_dir_all(sandbox.path("build/tmp")).unwrap();
    let before = repository_state(&sandbox);
    let mut command = sandbox.cmd();
    command.args(["baseline", "HEAD~1", "--gate", "V1"]).env("TMPDIR", sandbox.path("build/tmp"));
    sandbox.run_with(&mut command).code(2).stderr_contains("lies inside the work tree");
    assert_eq!(fs::read_dir(sandbox.path("build/tmp")).unwrap().count(), 0, "a checkout was left in the work tree");
    assert_eq!(repository_state(&sandbox), before);
}

#[test]
fn an_interrupt_while_the_checkout_is_written_removes_it() {
    let sandbox = two_commits("");
    for directory in 0..40 {
        for file in 0..100 {
            sandbox.write(&format!("src/m{directory}/f{file}.txt"), &format!("{directory} {file}\n"));
        }
    }
    git(&sandbox.root, &["add", "src"]);
    git(&sandbox.root, &["commit", "-qm", "many files"]);
    let child = sandbox
        .std_cmd()
        .args(["baseline", "HEAD", "--gate", "V1"])
        .env("TMPDIR", temporary(&sandbox))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // As soon as the checkout exists, while its files are being written.
    wait_until("the checkout", || !left_behind(&sandbox).is_empty());
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let output = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(130), "{out}{}", String::from_utf8_lossy(&output.stderr));
    assert!(out.contains("INTERRUPTED by SIGINT"), "{out}");
    assert_eq!(left_behind(&sandbox), Vec::<String>::new(), "the checkout survived the interrupt");
}
