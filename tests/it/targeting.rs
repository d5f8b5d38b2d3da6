//! Which ledgers a run covers: `--scope`, `UNLAZY_SCOPE`, the single
//! discoverable pipeline, refusal when ambiguous, the legacy layout, scope id
//! validation, linked or outside scope folders, and qualified ids with the
//! `[scope ID]` suffix in tree-wide output.

use crate::common::{gate, Sandbox};

fn manual(id: &str) -> String {
    format!("- [ ] {id}: manual outcome {id}\n  EVIDENCE: pending\n")
}

/// Two pipelines, `api` and `web`, with one root ledger and one leaf each.
fn two_pipelines() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write(".unlazy/api/GATES.md", &manual("R1"));
    sandbox.write(".unlazy/api/gates/leaf-1.md", &manual("G1"));
    sandbox.write(".unlazy/web/GATES.md", &manual("W1"));
    sandbox.write(".unlazy/web/gates/leaf-2.md", &manual("G1"));
    sandbox
}

#[test]
fn scope_flag_selects_only_that_pipeline_with_qualified_ids() {
    let sandbox = two_pipelines();
    sandbox
        .run_with(sandbox.cmd().args(["--status", "--scope", "api"]))
        .code(1)
        .stdout_contains("  UNMET GATES:R1 (unchecked)")
        .stdout_contains("  UNMET leaf-1:G1 (unchecked)")
        .stdout_lacks("leaf-2")
        .stdout_lacks("W1")
        .stdout_contains("UNMET: 2 (met: 0) [scope api]")
        .stdout_contains("  GATES:R1, leaf-1:G1");
}

#[test]
fn environment_scope_selects_the_pipeline() {
    let sandbox = two_pipelines();
    sandbox
        .run_with(sandbox.cmd().arg("--status").env("UNLAZY_SCOPE", "web"))
        .code(1)
        .stdout_contains("UNMET leaf-2:G1")
        .stdout_contains("[scope web]")
        .stdout_lacks("leaf-1");
    // The flag wins over the environment.
    sandbox
        .run_with(sandbox.cmd().args(["--status", "--scope", "api"]).env("UNLAZY_SCOPE", "web"))
        .code(1)
        .stdout_contains("[scope api]");
}

#[test]
fn several_pipelines_without_a_scope_are_refused() {
    let sandbox = two_pipelines();
    let before = sandbox.read(".unlazy/api/gates/leaf-1.md");
    // Nothing on stdout: the Run requires it empty unless checked.
    sandbox
        .run(&["--status"])
        .code(2)
        .stderr_contains("2 pipelines present (api, web); pass --scope <id> or set UNLAZY_SCOPE. Refusing to guess.");
    sandbox.run_with(&mut sandbox.cmd()).code(2).stderr_is(
        "gate-check: error: 2 pipelines present (api, web); pass --scope <id> or set UNLAZY_SCOPE. Refusing to guess.\n\
         run gate-check --help for usage\n",
    );
    assert_eq!(sandbox.read(".unlazy/api/gates/leaf-1.md"), before);
}

#[test]
fn the_only_pipeline_is_discovered_and_runs_with_the_suffix() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &manual("LEGACY")); // ignored once a pipeline exists
    sandbox.write(".unlazy/solo/gates/leaf-1.2.1.md", &gate("G3", "echo fine", "fine"));
    sandbox
        .run_with(sandbox.cmd().arg("--approve"))
        .code(0)
        .stdout_contains("APPROVING leaf-1.2.1:G3")
        .stdout_contains("  RUN  leaf-1.2.1:G3 ")
        .stdout_contains("  PASS leaf-1.2.1:G3: outcome G3")
        .stdout_contains("ALL MET (1 met) [scope solo]")
        .stdout_lacks("LEGACY")
        // The ignored root ledger is named, not judged.
        .stderr_is(
            "gate-check: note: checking .unlazy/solo/, the only pipeline (no --scope given); not checked: GATES.md \
             (check them with: gate-check GATES.md)\n",
        );
    assert_eq!(sandbox.read("GATES.md"), manual("LEGACY"));
}

#[test]
fn legacy_layout_covers_gates_md_and_gates_directory() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &manual("A"));
    sandbox.write("gates/leaf-x.md", &manual("B"));
    sandbox.write("gates/notes.txt", "not a ledger");
    // Legacy runs carry no scope suffix.
    sandbox
        .run(&["--status"])
        .code(1)
        .stdout_contains("UNMET GATES:A")
        .stdout_contains("UNMET leaf-x:B")
        .stdout_contains("UNMET: 2 (met: 0)\n");
    // The locks directory a run creates is not a pipeline.
    std::fs::create_dir_all(sandbox.path(".unlazy/locks")).unwrap();
    sandbox.run_with(sandbox.cmd().arg("--status")).code(1).stdout_contains("UNMET GATES:A");
}

#[test]
fn scope_ids_are_validated() {
    let sandbox = two_pipelines();
    let long = "a".repeat(65);
    for bad in ["../api", ".hidden", "a/b", "-x", long.as_str(), "api web"] {
        sandbox
            .run_with(sandbox.cmd().arg("--status").arg(format!("--scope={bad}")))
            .code(2)
            .stderr_contains("scope must match /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/");
        sandbox
            .run_with(sandbox.cmd().arg("--status").env("UNLAZY_SCOPE", bad))
            .code(2)
            .stderr_contains("scope must match");
    }
    sandbox
        .run_with(sandbox.cmd().args(["--status", "--scope", "nope"]))
        .code(2)
        .stderr_contains("no such scope \"nope\" under .unlazy/ (have: api, web)");
}

// Symbolic links: Windows lets only administrators (or Developer Mode)
// create one, and wine 8, which runs the Windows tests, creates none.
#[cfg(unix)]
#[test]
fn linked_scope_folders_are_refused_and_never_discovered() {
    let sandbox = Sandbox::new();
    let outside = sandbox.root.parent().unwrap().join("outside");
    std::fs::create_dir_all(outside.join("gates")).unwrap();
    std::fs::write(outside.join("gates/leaf-1.md"), gate("G1", "echo hi", "hi")).unwrap();
    std::fs::create_dir_all(sandbox.path(".unlazy")).unwrap();
    std::os::unix::fs::symlink(&outside, sandbox.path(".unlazy/evil")).unwrap();

    sandbox
        .run_with(sandbox.cmd().args(["--status", "--scope", "evil"]))
        .code(2)
        .stderr_contains("scope directory must be a real directory inside the repository");

    // Not discovered as the single pipeline either: the run falls back to the
    // legacy layout and never touches the linked ledger.
    sandbox.write("GATES.md", &manual("A"));
    sandbox.run_with(sandbox.cmd().arg("--status")).code(1).stdout_contains("UNMET GATES:A").stdout_lacks("leaf-1");
    sandbox.run(&["--list-scopes"]).code(0).stdout_is("(no pipelines under .unlazy/)\n");
}

// Symbolic links: Windows lets only administrators (or Developer Mode)
// create one, and wine 8, which runs the Windows tests, creates none.
#[cfg(unix)]
#[test]
fn a_state_folder_outside_the_root_is_refused() {
    let sandbox = Sandbox::new();
    let outside = sandbox.root.parent().unwrap().join("elsewhere");
    std::fs::create_dir_all(outside.join("api")).unwrap();
    std::fs::write(outside.join("api/GATES.md"), manual("A")).unwrap();
    std::os::unix::fs::symlink(&outside, sandbox.path(".unlazy")).unwrap();
    sandbox
        .run_with(sandbox.cmd().args(["--status", "--scope", "api"]))
        .code(2)
        .stderr_contains("scope directory must be a real directory inside the repository");
}

#[test]
fn explicit_files_exclude_scope() {
    let sandbox = two_pipelines();
    sandbox.run(&["--status", "--scope", "api", ".unlazy/api/GATES.md"]).code(2).stderr_is(
        "gate-check: error: explicit files and --scope are mutually exclusive\nrun gate-check --help for usage\n",
    );
    // Explicit files are honored even with several pipelines present.
    sandbox
        .run_with(sandbox.cmd().args(["--status", ".unlazy/web/gates/leaf-2.md"]))
        .code(1)
        .stdout_contains("UNMET leaf-2:G1")
        .stdout_lacks("[scope");
}
