//! The daily experience, third pass (issue 35), through the real binary:
//! what a new user tripped over on a real project, each with the case that
//! worked already beside it.

use crate::common::{gate, sh, Sandbox};

#[test]
fn a_misspelled_attribute_is_warned_about_at_its_line_by_every_command_that_reads_the_ledger() {
    let sandbox = Sandbox::new();
    let ledger = "OWNS: src/**\n\n- [ ] T1: the tests pass\n  Check: make test\n  Expect: ok\n";
    // The positive: the same ledger spelled right gives no warning.
    sandbox.write("GATES.md", &ledger.replace("Check", "CHECK").replace("Expect", "EXPECT"));
    sandbox.run(&["--status", "-q"]).code(1).stdout_contains("UNMET: 1 (met: 0)");
    sandbox.write("GATES.md", ledger);
    let path = sandbox.path("GATES.md").display().to_string();
    let warnings = format!(
        "{path}:4: warning: gate T1: Check: is not an attribute, so gate-check reads this line as prose: did you \
         mean CHECK:?\n{path}:5: warning: gate T1: Expect: is not an attribute, so gate-check reads this line as \
         prose: did you mean EXPECT:?\n"
    );
    // The decision is the Node tool's: T1 is a manual gate.
    sandbox.run(&["--status", "-q"]).code(1).stdout_contains("manual: GATES:T1 needs a person").stderr_is(&warnings);
    // A run reads the ledger again after its checks, and warns again, as the Node tool does.
    sandbox.run(&["-q"]).code(1).stdout_contains("UNMET: 1 (met: 0)").stderr_is(&warnings.repeat(2));
    sandbox.run(&["tree"]).code(1).stdout_contains("GATES.md").stderr_is(&warnings);
    sandbox.write(".unlazy/api/gates/leaf-1.md", ledger);
    let leaf = sandbox.path(".unlazy/api/gates/leaf-1.md").display().to_string();
    sandbox
        .run(&["--claim", "--scope", "api", "--leaf", "leaf-1"])
        .code(0)
        .stdout_contains("CLAIMED 1 path(s)")
        .stderr_is(&warnings.replace(&path, &leaf));
    // lint names the line beside its [manual-gate].
    let lint = sandbox.run(&["lint", "GATES.md"]).code(0).into_stdout();
    assert!(lint.contains("GATES.md:3: WARN T1: no CHECK, so this outcome is judged by hand"), "{lint}");
    assert!(
        lint.contains(
            "GATES.md:4: WARN T1: Check: is not an attribute, so gate-check reads this line as prose: did you mean \
             CHECK:? [misspelled-attribute]"
        ),
        "{lint}"
    );
    sandbox
        .run(&["lint", "--allow", "misspelled-attribute", "GATES.md"])
        .code(0)
        .stdout_lacks("misspelled")
        .into_stdout();
}

#[test]
fn a_misspelled_expect_is_named_beside_the_error_it_causes() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", "- [ ] T1: the tests pass\n  CHECK: make test\n  EXPECTS: ok\n");
    let path = sandbox.path("GATES.md").display().to_string();
    sandbox.run(&["--status"]).code(2).stderr_is(&format!(
        "{path}:3: warning: gate T1: EXPECTS: is not an attribute, so gate-check reads this line as prose: did you \
         mean EXPECT:?\n{path}:1: error: gate T1: runnable gates require both non-blank CHECK and EXPECT\n"
    ));
    let lint = sandbox.run(&["lint", "GATES.md"]).code(2).stdout_contains("LINT NOT RUN").into_stderr();
    assert!(lint.contains("GATES.md:3: WARN T1: EXPECTS: is not an attribute"), "{lint}");
    let json = sandbox.run(&["lint", "--format", "json", "GATES.md"]).code(2).stdout_json();
    let rules: Vec<&str> = json["findings"].as_array().unwrap().iter().filter_map(|f| f["rule"].as_str()).collect();
    assert_eq!(rules, ["misspelled-attribute", "parse"], "{json}");
}

#[cfg_attr(
    windows,
    ignore = "runs the shipped template, whose CHECK lines use POSIX sed and grep (cmd.exe has neither)"
)]
#[test]
fn init_writes_the_leaf_template_into_the_root_and_its_next_command_works_as_written() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.path(".git")).unwrap();
    std::fs::create_dir_all(sandbox.path("src/deep")).unwrap();
    let from_below = || {
        let mut command = sandbox.cmd();
        command.current_dir(sandbox.path("src/deep"));
        command
    };
    let root = sandbox.root.display().to_string();
    let out = sandbox.run_with(from_below().arg("init")).code(0).into_stdout();
    let approve = format!("gate-check --root {root} --approve GATES.md");
    assert_eq!(
        out,
        format!(
            "wrote {root}/GATES.md: a working example ledger of 3 gates (2 runnable, 1 manual)\nnext:\n  1. read its \
             CHECK lines, then run them: {approve}\n  2. replace the example gates with your own outcomes (the steps \
             are at the top of the file)\n  3. audit what they prove before the first run: gate-check --root {root} \
             lint GATES.md\n"
        )
    );
    let template = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/templates/gates-leaf.md")).unwrap();
    assert_eq!(sandbox.read("GATES.md"), template);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(sandbox.path("GATES.md")).unwrap().permissions().mode() & 0o777, 0o644);
    }
    // The command it names, typed where init was run, meets every gate.
    let words: Vec<&str> = approve.split(' ').skip(1).collect();
    sandbox.run_with(from_below().args(&words).arg("-q")).code(0).stdout_contains("ALL MET (3 met)\n");

    // Never over a ledger, nor over anything else of that name.
    let before = sandbox.read("GATES.md");
    sandbox.run_with(from_below().arg("init")).code(2).stderr_is(&format!(
        "gate-check: error: {root}/GATES.md already exists; init never writes over a ledger (rename or remove it \
         first, or edit it as it is)\n"
    ));
    assert_eq!(sandbox.read("GATES.md"), before);
    let other = Sandbox::new();
    std::fs::create_dir(other.path("GATES.md")).unwrap();
    other.run(&["init"]).code(2).stderr_contains("GATES.md already exists");
    // From where it is run, without a search, the root is that directory.
    let fresh = Sandbox::new();
    fresh.run(&["init"]).code(0).stdout_contains("run them: gate-check --approve GATES.md\n");
}

#[test]
fn help_and_the_manual_page_show_the_ledger_format() {
    let sandbox = Sandbox::new();
    let attributes = ["CHECK: ", "EXPECT: ", "CWD: ", "EVIDENCE: ", "INPUTS: "];
    for help in ["-h", "--help"] {
        let text = sandbox.run(&[help]).code(0).into_stdout();
        assert!(text.contains("format: a ledger (GATES.md, gates/*.md) is Markdown; gate-check init writes one."));
        for attribute in attributes {
            assert!(text.contains(&format!("\n    {attribute}")), "{help} lacks {attribute}: {text}");
        }
    }
    let page = sandbox.run(&["man"]).code(0).into_stdout();
    let format = &page[page.find(".SH FORMAT").expect("a FORMAT section")..page.find(".SH NOTES").unwrap()];
    assert!(format.contains("A ledger (GATES.md, gates/*.md) is Markdown"), "{format}");
    for attribute in attributes {
        assert!(format.contains(&format!("\n    {attribute}")), "{attribute}: {format}");
    }
    let init = sandbox.run(&["man", "init"]).code(0).into_stdout();
    assert!(init.contains(".SH \"EXIT STATUS\"") && init.contains("never overwrites"), "{init}");
}

/// A pipeline whose PLAN.md names its leaves in the dispatch table by their
/// ledgers, as `--leaf` and `dispatch --leaf` do.
fn named_pipeline(sandbox: &Sandbox, state: &str) {
    std::fs::create_dir_all(sandbox.path(".git")).unwrap();
    sandbox.write(
        ".unlazy/hsize/PLAN.md",
        &format!(
            "# Plan\n\n## Tree\n\n- 1 Human sizes .......... GATES.md\n  - 1.1 Parser ........ gates/leaf-1.1.md\n  \
             - 1.2 Printer ....... gates/leaf-1.2.md\n\n## Leaf dispatch table\n\n\
             | Leaf | Owns | Needs | Tier | Planned wave | State |\n|---|---|---|---|---|---|\n\
             | leaf-1.1 | src/parse/** | - | mechanical | 1 | {state} |\n\
             | leaf-1.2 | src/print/** | leaf-1.1 | judgment | 2 | WAITING |\n"
        ),
    );
    sandbox.write(".unlazy/hsize/GATES.md", "- [ ] R1: sizes print as humans read them\n");
    sandbox.write(".unlazy/hsize/gates/leaf-1.1.md", "OWNS: src/parse/**\n\n- [x] P1: parses\n  EVIDENCE: seen\n");
    sandbox.write(".unlazy/hsize/gates/leaf-1.2.md", "OWNS: src/print/**\n\n- [ ] Q1: prints\n");
}

#[test]
fn the_dispatch_table_names_leaves_by_their_ledgers_and_tree_flags_a_ready_leaf_that_moved_on() {
    let sandbox = Sandbox::new();
    named_pipeline(&sandbox, "VERIFIED");
    // Rows by leaf name are read: leaf-1.2 needs leaf-1.1, which is VERIFIED.
    let out = sandbox.run(&["tree", "--color", "never"]).code(1).into_stdout();
    assert!(out.contains("|- 1.1 Parser  leaf-1.1.md  1/1 met  VERIFIED\n"), "{out}");
    assert!(out.contains("  1.2 [waiting-but-ready]: declared WAITING, but every Needs is VERIFIED\n"), "{out}");
    // A row naming no node still names its line.
    let plan = sandbox.read(".unlazy/hsize/PLAN.md");
    sandbox.write(".unlazy/hsize/PLAN.md", &plan.replace("| leaf-1.2 |", "| leaf-7 |"));
    sandbox.run(&["tree"]).code(2).stderr_is(&format!(
        "{}:14: error: dispatch row for leaf-7, which the tree does not list (name a leaf by its tree id, such as \
         1.1, or its ledger's name, such as leaf-1.1)\n",
        sandbox.path(".unlazy/hsize/PLAN.md").display()
    ));

    // Declared READY, its gates met and its lease claimed: the plan is behind.
    named_pipeline(&sandbox, "READY");
    sandbox.run(&["--claim", "--scope", "hsize", "--leaf", "leaf-1.1"]).code(0).stdout_starts_with("CLAIMED 1 ");
    let out = sandbox.run(&["tree", "--color", "never"]).code(1).into_stdout();
    // The claiming process has exited: the lease is held, by no pid.
    assert!(out.contains("|- 1.1 Parser  leaf-1.1.md  1/1 met  READY  leased\n"), "{out}");
    assert!(!out.contains("pid"), "{out}");
    for drift in [
        "  1.1 [not-started-but-leased]: declared READY, but a lease is held for it: it was claimed, so it is IN-FLIGHT\n",
        "  1.1 [not-started-but-met]: declared READY, but every gate of its ledger is met: verify it and declare it \
         VERIFIED\n",
    ] {
        assert!(out.contains(drift), "{drift}: {out}");
    }
    let json = sandbox.run(&["tree", "--format", "json"]).code(1).stdout_json();
    assert_eq!(json["nodes"][1]["lease"], "held");
    // Released, the lease drift goes; the met one stays until the plan says VERIFIED.
    sandbox.run(&["--release", "--scope", "hsize", "--leaf", "leaf-1.1"]).code(0).stdout_starts_with("released 1");
    let out = sandbox.run(&["tree", "--color", "never"]).code(1).into_stdout();
    assert!(!out.contains("not-started-but-leased") && out.contains("not-started-but-met"), "{out}");
}

#[test]
fn a_tree_table_without_titles_shows_each_ledgers_own_heading() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.path(".git")).unwrap();
    sandbox.write(
        ".unlazy/t/PLAN.md",
        "## Tree\n\n| Node | Kind | Ledger |\n|---|---|---|\n| 1 | root | GATES.md |\n| 1.1 | leaf | gates/leaf-1.1.md |\n",
    );
    sandbox.write(".unlazy/t/GATES.md", "# The sizes ship\n\n- [ ] R1: shipped\n");
    sandbox.write(
        ".unlazy/t/gates/leaf-1.1.md",
        "# Gates: the parser reads 1.5 KiB\n\nOWNS: src/**\n\n- [ ] P1: parses\n",
    );
    let out = sandbox.run(&["tree", "--color", "never"]).code(1).into_stdout();
    assert!(
        out.contains("\n1 The sizes ship  GATES.md  0/1 met (R1)\n`- 1.1 the parser reads 1.5 KiB  leaf-1.1.md"),
        "{out}"
    );
}

/// The Stop hook's reply to `payload` (a JSON object), run from the root.
fn hook_reply(sandbox: &Sandbox, payload: serde_json::Value) -> crate::common::Run {
    sandbox.run_with(sandbox.cmd().args(["hook", "stop"]).write_stdin(payload.to_string()))
}

/// `command` as the agent would type it, with gate-check on PATH, from `directory`.
fn typed(sandbox: &Sandbox, directory: &std::path::Path, command: &str) -> crate::common::Run {
    let binary = assert_cmd::cargo::cargo_bin("gate-check");
    let mut shell = std::process::Command::new(crate::common::sh::default_shell());
    #[cfg(windows)]
    let path = {
        std::os::windows::process::CommandExt::raw_arg(&mut shell, format!("/d /s /c \"{command}\""));
        format!(r"{};C:\windows\system32;C:\windows", binary.parent().unwrap().display())
    };
    #[cfg(unix)]
    let path = {
        shell.args(["-c", command]);
        format!("{}:/usr/local/bin:/usr/bin:/bin", binary.parent().unwrap().display())
    };
    let mut shell = assert_cmd::Command::from_std(shell);
    shell
        .current_dir(directory)
        .env("PATH", path)
        .env("UNLAZY_APPROVAL_DIR", &sandbox.approvals)
        .env("UNLAZY_RECEIPT_DIR", &sandbox.receipts)
        .env("NO_COLOR", "1")
        .env_remove("UNLAZY_SCOPE")
        .env_remove("GITHUB_ACTIONS");
    sandbox.run_with(&mut shell)
}

#[cfg_attr(
    windows,
    ignore = "types the printed hint, quoted for a POSIX shell or PowerShell, into cmd.exe, which takes single quotes as they are"
)]
#[test]
fn the_subagent_hint_runs_as_written_and_a_named_pipeline_ledger_says_where_its_checks_run() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.path(".git")).unwrap();
    sandbox.write("marker.txt", "at the root\n");
    // A check that passes only from the repository root, as the pipeline runs it.
    sandbox.write(".unlazy/hsize/gates/leaf-1.1.md", &gate("G1", &sh::cat("marker.txt"), "at the root"));
    sandbox.write(".unlazy/hsize/gates/leaf-1.2.md", &gate("G2", &sh::cat("marker.txt"), "at the root"));
    for args in [
        &["open", "--leaf", "leaf-1.1", "--leaf", "leaf-1.2"][..],
        &["start", "--leaf", "leaf-1.1", "--handle", "agent-1"],
    ] {
        let mut command = sandbox.cmd();
        command.arg("dispatch").args(args).args(["--scope", "hsize", "--wave", "w1"]);
        sandbox.run_with(&mut command).code(0).stdout_contains("w1");
    }
    let payload = serde_json::json!({
        "session_id": "s1", "cwd": sandbox.root, "hook_event_name": "SubagentStop", "agent_id": "agent-1"
    });
    let reply = hook_reply(&sandbox, payload).code(0).stdout_json();
    let reason = reply["reason"].as_str().unwrap();
    let (run, hint, approve) = (
        "gate-check --scope hsize --gate 'leaf-1.1:*'",
        "gate-check --status --scope hsize --gate 'leaf-1.1:*'",
        "gate-check --approve --scope hsize --gate 'leaf-1.1:*'",
    );
    assert!(
        reason.contains(&format!(
            "need work: leaf-1.1:G1 (unchecked). Run {run} to run the approved checks ({hint} shows them"
        )) && reason.contains(&format!("ask the person to review it and run {approve}.")),
        "{reason}"
    );
    // Typed as written, from the root or from below it, it shows that leaf.
    std::fs::create_dir_all(sandbox.path("src/deep")).unwrap();
    for directory in [sandbox.root.clone(), sandbox.path("src/deep")] {
        typed(&sandbox, &directory, hint).code(1).stdout_contains("  UNMET leaf-1.1:G1 (unchecked)").stdout_lacks("G2");
    }
    // The person's command approves and runs the check from the root, where
    // it passes; then the agent's own command runs it again.
    typed(&sandbox, &sandbox.path("src/deep"), approve).code(0).stdout_contains("ALL MET (1 met, not selected: 1)");
    typed(&sandbox, &sandbox.path("src/deep"), run).code(0).stdout_contains("ALL MET (1 met, not selected: 1)");

    // Named by its path, the ledger runs its checks in its own directory, as
    // in the Node tool, and says so with the command that runs them from the root.
    sandbox.write(".unlazy/hsize/gates/leaf-1.2.md", &gate("G2", &sh::cat("marker.txt"), "at the root"));
    let named = sandbox.run(&["--approve", "-q", ".unlazy/hsize/gates/leaf-1.2.md"]);
    let warning = format!(
        "gate-check: warning: .unlazy/hsize/gates/leaf-1.2.md is a ledger of the pipeline hsize, named as a file: its \
         checks run in its own directory ({}), as the Node tool runs a named ledger's, and are approved for that \
         directory; to run them from the repository root as the pipeline does: gate-check --approve --scope hsize \
         --gate 'leaf-1.2:*'\n",
        sandbox.path(".unlazy/hsize/gates").display()
    );
    named.code(1).stdout_contains("FAIL leaf-1.2:G2").stderr_is(&warning);
    typed(&sandbox, &sandbox.root, "gate-check --approve --scope hsize --gate 'leaf-1.2:*' -q")
        .code(0)
        .stdout_contains("ALL MET (1 met, not selected: 1)");
    // --cwd chose the directory, --status runs nothing, a root ledger is no pipeline's: no warning.
    sandbox.write("GATES.md", &gate("R1", &sh::cat("marker.txt"), "at the root"));
    let cwd = sandbox.root.display().to_string();
    sandbox
        .run(&["--approve", "--reverify", "-q", "--cwd", &cwd, ".unlazy/hsize/gates/leaf-1.2.md"])
        .code(0)
        .stdout_contains("ALL MET");
    sandbox.run(&["--status", "-q", ".unlazy/hsize/gates/leaf-1.2.md"]).code(0).stdout_contains("ALL MET");
    sandbox.run(&["--approve", "-q", "GATES.md"]).code(0).stdout_contains("ALL MET");
}

#[test]
fn an_unmet_root_ledger_beside_the_only_pipeline_is_said_on_stdout_and_holds_the_stop_unless_bound() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.path(".git")).unwrap();
    sandbox.write(".unlazy/hsize/GATES.md", "- [x] A1: done\n  EVIDENCE: seen\n");
    sandbox.write("GATES.md", "- [x] T1: the root is done\n  EVIDENCE: seen\n");
    let stop = serde_json::json!({"session_id": "s1", "cwd": sandbox.root, "hook_event_name": "Stop"});
    // Met at the root: nothing more to say, and the stop goes through.
    sandbox.run(&["--status", "-q"]).code(0).stdout_is("ALL MET (1 met) [scope hsize]\n").stderr_contains("note:");
    hook_reply(&sandbox, stop.clone()).code(0).stdout_is("");

    sandbox.write("GATES.md", "- [ ] T1: the root is done\n");
    // The Node decision (the pipeline alone, exit 0), said on stdout.
    sandbox
        .run(&["--status", "-q"])
        .code(0)
        .stdout_is("ALL MET (1 met) [scope hsize]; root GATES.md not judged: 1 unmet\n")
        .stderr_contains("not checked: GATES.md");
    let document = sandbox.run(&["--status", "--format", "json"]).code(0).stderr_contains("note:").stdout_json();
    assert_eq!(
        (document["outcome"].as_str(), &document["notTargetedUnmet"]),
        (Some("all-met"), &serde_json::json!(["GATES:T1"]))
    );
    // The hook holds the stop on it: no session chose the pipeline.
    let reason = hook_reply(&sandbox, stop.clone()).code(0).stdout_json()["reason"].as_str().unwrap().to_string();
    assert!(
        reason.starts_with(
            "unlazy [scope hsize]: 1 gate/ledger item(s) need work: GATES:T1 (unchecked, manual). Run gate-check \
             --scope hsize and gate-check GATES.md to run the approved checks (gate-check --status --scope hsize and \
             gate-check --status GATES.md shows them"
        ),
        "{reason}"
    );
    typed(&sandbox, &sandbox.root, "gate-check --status GATES.md").code(1).stdout_contains("UNMET GATES:T1");
    // A session bound to the pipeline has that pipeline as its work.
    sandbox.run(&["--bind", "s1", "--scope", "hsize"]).code(0).stdout_contains("bound session s1");
    hook_reply(&sandbox, stop).code(0).stdout_is("");
}

#[test]
fn the_hook_says_what_each_unmet_item_needs() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "GATES.md",
        "- [ ] T1: runs\n  CHECK: true\n  EXPECT: x\n- [ ] T2: by hand\n- [x] T3: ticked by hand\n\
         - [x] T4: ticked, edited since\n  CHECK: true\n  EXPECT: x\n  EVIDENCE: automatic-evidence=v1 0000\n",
    );
    let stop = serde_json::json!({"session_id": "s1", "cwd": sandbox.root});
    let reason = hook_reply(&sandbox, stop).code(0).stdout_json()["reason"].as_str().unwrap().to_string();
    assert!(
        reason.starts_with(
            "unlazy: 4 gate/ledger item(s) need work: GATES:T1 (unchecked), GATES:T2 (unchecked, manual), GATES:T3 \
             (checked, no evidence), GATES:T4 (checked, stale evidence). Run gate-check to run the approved checks"
        ),
        "{reason}"
    );
    // The same states --status gives.
    let status = sandbox.run(&["--status"]).code(1).into_stdout();
    for line in ["GATES:T1 (unchecked)", "GATES:T3 (checked but EVIDENCE pending)", "GATES:T4 (checked but automatic"] {
        assert!(status.contains(line), "{line}: {status}");
    }
}

/// The README's CI pattern (`--approve --reverify --partition K/N` on a
/// fresh runner) on a pipeline with the node template's N1, which re-runs
/// its children through a nested gate-check.
fn node_pipeline(sandbox: &Sandbox) {
    std::fs::create_dir_all(sandbox.path(".git")).unwrap();
    sandbox.write(".unlazy/ci/gates/leaf-1.1.md", &gate("L1", "echo one", "one"));
    sandbox.write(".unlazy/ci/gates/leaf-1.2.md", &gate("L2", "echo two", "two"));
    let n1 = "gate-check --reverify --cwd . .unlazy/ci/gates/leaf-1.1.md .unlazy/ci/gates/leaf-1.2.md";
    sandbox.write(
        ".unlazy/ci/gates/node-1.md",
        &format!("{}{}", gate("N1", n1, "ALL MET"), gate("N2", "echo joined", "joined")),
    );
}

/// `gate-check ARGS` with gate-check on PATH (for the nested run) and a
/// fresh approval store of its own, as on a new CI runner.
fn on_fresh_runner(sandbox: &Sandbox, args: &[&str]) -> crate::common::Run {
    let store = tempfile::tempdir().unwrap();
    crate::common::make_private(store.path());
    let binary = assert_cmd::cargo::cargo_bin("gate-check");
    let path = if cfg!(windows) {
        format!(r"{};C:\windows\system32;C:\windows", binary.parent().unwrap().display())
    } else {
        format!("{}:/usr/bin:/bin", binary.parent().unwrap().display())
    };
    let mut command = sandbox.cmd();
    command.env("UNLAZY_APPROVAL_DIR", store.path()).env("PATH", path).args(args);
    sandbox.run_with(&mut command)
}

#[test]
fn partitioned_ci_jobs_approve_what_a_nested_gate_check_re_runs() {
    let sandbox = Sandbox::new();
    node_pipeline(&sandbox);
    // Each pattern alone: one job of everything passes on a fresh runner.
    on_fresh_runner(&sandbox, &["--approve", "--reverify", "-q"]).code(0).stdout_contains("ALL MET (4 met");
    // Share 1 of 2 holds L1 and N1; N1's nested run re-runs L2 too, which
    // is share 2's: this job approves it without running it.
    node_pipeline(&sandbox);
    let first = on_fresh_runner(&sandbox, &["--approve", "--reverify", "--partition", "1/2"]).code(0);
    let first = first.stderr_is(
        "gate-check: note: node-1:N1 runs gate-check itself, and its nested run needs the approvals of the other \
         shares' gates: approving 2 of them too, without running them\n",
    );
    let out = first.into_stdout();
    assert!(out.contains("APPROVING leaf-1.2:L2") && out.contains("APPROVING node-1:N2"), "{out}");
    assert!(out.contains("  PASS node-1:N1") && !out.contains("RUN  leaf-1.2:L2"), "{out}");
    assert!(out.ends_with("ALL MET (2 met, reran: 2, 0 of them met before, not selected: 2) [scope ci]\n"), "{out}");
    // Share 2 holds no gate that runs gate-check: it approves only its own.
    node_pipeline(&sandbox);
    let second = on_fresh_runner(&sandbox, &["--approve", "--reverify", "--partition", "2/2", "-q"]).code(0);
    second.stdout_contains("ALL MET (2 met").stdout_lacks("leaf-1.1:L1").stdout_lacks("node-1:N1");
    // Without --approve, nothing is approved on its behalf.
    node_pipeline(&sandbox);
    on_fresh_runner(&sandbox, &["--reverify", "--partition", "1/2", "-q"]).code(1).stdout_contains("NOT RUN");
}

#[test]
fn approve_says_it_is_approving_and_the_rerun_counts_do_not_read_as_passes() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &format!("{}{}", gate("G1", "echo ok", "ok"), gate("G2", &sh::cat("flag"), "on")));
    sandbox.write("flag", "on\n");
    // Without --approve the oracle waits for approval, as in the Node tool.
    sandbox.run(&[]).code(1).stdout_contains("APPROVAL REQUIRED GATES:G1\n").stdout_contains("NOT RUN");
    let approved = sandbox.run(&["--approve"]).code(0).into_stdout();
    assert!(approved.contains("APPROVING GATES:G1\n    CHECK: echo ok\n") && !approved.contains("APPROVAL REQUIRED"));
    // Both met, both rerun, one fails: the counts say what they count.
    sandbox.write("flag", "off\n");
    sandbox
        .run(&["--reverify", "-q"])
        .code(1)
        .stdout_contains("UNMET: 1 (met: 1, reran: 2, 2 of them met before)\n  GATES:G2\n");
    // --status -v lists the met gates too; without -v only the unmet ones.
    sandbox.run(&["--status"]).code(1).stdout_lacks("MET   GATES:G1").stdout_contains("  UNMET GATES:G2");
    sandbox
        .run(&["--status", "-v"])
        .code(1)
        .stdout_contains("  MET   GATES:G1: outcome G1\n  UNMET GATES:G2 (unchecked): outcome G2\n");
}

#[test]
fn a_mistyped_subcommand_is_named_and_a_figure_from_the_spec_is_no_copied_number() {
    let sandbox = Sandbox::new();
    let missing = |word: &str| format!("gate-check: error: no such gate file: {}", sandbox.path(word).display());
    // A word near no subcommand stays the plain error.
    sandbox.run(&["xyzzy"]).code(2).stderr_is(&format!("{}\nrun gate-check --help for usage\n", missing("xyzzy")));
    sandbox.run(&["lnt"]).code(2).stderr_is(&format!(
        "{}; did you mean the subcommand lint (gate-check lint ...)?\nrun gate-check --help for usage\n",
        missing("lnt")
    ));
    sandbox.run(&["--status", "tre"]).code(2).stderr_contains("did you mean the subcommand tree");

    // The title states the input and the output the spec gives it.
    sandbox.write(
        "GATES.md",
        "- [ ] S1: 1536 bytes print as 1.5 KiB\n  CHECK: python3 -c 'print(size(1536))'\n  EXPECT: 1.5 KiB\n\
         - [ ] S2: renders 34 stat rows\n  CHECK: node rows.mjs\n  EXPECT: 34 rows\n",
    );
    let lint = sandbox.run(&["lint", "GATES.md"]).code(0).into_stdout();
    assert!(!lint.contains("S1: the title's figure"), "{lint}");
    assert!(lint.contains("S2: the title's figure 34 is typed into EXPECT"), "{lint}");
}

#[test]
fn install_hooks_and_the_ignore_file_agree_on_what_stays_out_of_version_control() {
    let sandbox = Sandbox::new();
    let out =
        sandbox.run_with(sandbox.cmd().arg("install-hooks").env("HOME", sandbox.path("home"))).code(0).into_stdout();
    assert!(
        out.contains(
            "  note:    keep .unlazy-hook-state.json and .unlazy/'s machine-local state (locks/, */session,\n           \
             */hook-state.json, *.tmp) out of version control; its plans and ledgers may be committed\n"
        ),
        "{out}"
    );
    // The ignore file gate-check writes when it creates .unlazy/ ignores
    // exactly that state, and references/parallel.md says the same.
    sandbox.write("GATES.md", &gate("G1", "echo ok", "ok"));
    sandbox.run(&["--approve", "-q"]).code(0).stdout_contains("ALL MET");
    let ignored = sandbox.read(".unlazy/.gitignore");
    for line in ["/locks/", "/*/session", "/*/hook-state.json", "*.tmp"] {
        assert!(ignored.lines().any(|kept| kept == line), "{line}: {ignored}");
    }
    assert!(!ignored.lines().any(|line| line.contains("PLAN") || line.contains("GATES") || line == "*"), "{ignored}");
    let parallel = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/references/parallel.md")).unwrap();
    assert!(parallel.contains("A pipeline's `PLAN.md`, `GATES.md` and `gates/*.md` are the plan and its\nacceptance record, and may well be committed"));
}
