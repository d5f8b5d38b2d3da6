//! Proofs through the real binary, on git repositories each test makes:
//! a PASS leaves a receipt; a change to what a gate depends on makes its
//! proof stale, a hand-written or copied evidence line is unproven, and
//! `--proof` counts only current proofs and re-runs exactly the others.
//! Checks count their runs in a file beside the repository, never in it.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::common::{exists, Sandbox};

/// Runs git in `dir`, which must succeed.
fn git(dir: &Path, args: &[&str]) {
    let output = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git is needed for these tests");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
}

/// Sets `path`'s modification time an hour back, so neither git's index
/// nor the stat cache treats it as possibly changed within the same tick.
fn age(path: &Path) {
    let status = Command::new("touch").args(["-d", "1 hour ago"]).arg(path).status().unwrap();
    assert!(status.success());
}

/// How many times each gate's check ran, from the count file.
fn runs(sandbox: &Sandbox) -> (usize, usize) {
    let log = fs::read_to_string(sandbox.root.parent().unwrap().join("runs.log")).unwrap_or_default();
    (log.lines().filter(|l| *l == "G1").count(), log.lines().filter(|l| *l == "G2").count())
}

const LEDGER: &str = "# Gates\n\n\
    - [ ] G1: the library returns one\n  CHECK: echo G1 >> ../runs.log && grep -q 'return 1' src/lib.py && echo lib-ok\n  \
    EXPECT: lib-ok\n  EVIDENCE: pending\n\
    - [ ] G2: the docs are written\n  CHECK: echo G2 >> ../runs.log && cat docs/guide.md\n  EXPECT: guide\n  \
    INPUTS: docs\n  EVIDENCE: pending\n";

/// A committed repository with two gates, both approved and proven: G1 on
/// the whole tree, G2 on `docs` only.
fn proven_repository() -> Sandbox {
    let sandbox = Sandbox::new();
    git(&sandbox.root, &["init", "-q"]);
    sandbox.write("src/lib.py", "def one():\n    return 1\n");
    sandbox.write("docs/guide.md", "the guide\n");
    sandbox.write(".gitignore", "build/\n*.log\n");
    sandbox.write("GATES.md", LEDGER);
    for file in ["src/lib.py", "docs/guide.md", ".gitignore", "GATES.md"] {
        age(&sandbox.path(file));
    }
    git(&sandbox.root, &["add", "-A"]);
    git(&sandbox.root, &["commit", "-qm", "start"]);
    sandbox.run(&["--approve", "-q"]).code(0).stdout_ends_with("ALL MET (2 met)\n");
    assert_eq!(runs(&sandbox), (1, 1));
    // Proven on this tree: nothing to say.
    sandbox.run(&["--status"]).code(0).stdout_is("GATES.md: 2 gates\nALL MET (2 met)\n");
    sandbox
}

#[test]
fn an_edit_to_a_tracked_file_makes_the_proof_stale_and_proof_mode_reruns_only_that_gate() {
    let sandbox = proven_repository();
    sandbox.write("src/lib.py", "def one():\n    return 1  # but different\n");

    // The default decision stands, with one warning naming the gate and file.
    sandbox.run(&["--status"]).code(0).stdout_is("GATES.md: 2 gates\nALL MET (2 met)\n").stderr_is(
        "gate-check: warning: 1 met gate(s) not proven on this tree (1 stale, 0 unproven): GATES:G1 stale: \
         src/lib.py changed since it was proven; prove them with: gate-check --proof\n",
    );
    // With --proof the gate does not count.
    sandbox.run(&["--status", "--proof"]).code(1).stdout_is(
        "  UNMET GATES:G1 (stale: src/lib.py changed since it was proven): the library returns one\n\
         GATES.md: 2 gates\nUNMET: 1 (met: 1)\n  GATES:G1 (stale: src/lib.py changed since it was proven)\n",
    );
    assert_eq!(runs(&sandbox), (1, 1), "--status ran a check");

    // A --proof run re-runs exactly that gate, and proves it again.
    sandbox.run(&["--proof", "-q"]).code(0).stdout_is("ALL MET (2 met)\n");
    assert_eq!(runs(&sandbox), (2, 1));
    sandbox.run(&["--status", "--proof"]).code(0).stdout_is("GATES.md: 2 gates\nALL MET (2 met)\n");
    sandbox.run(&["--proof", "-q"]).code(0).stdout_is("ALL MET (2 met)\n");
    assert_eq!(runs(&sandbox), (2, 1), "a current proof is not run again");
}

#[test]
fn the_ledger_ignored_files_and_unlazy_never_change_a_proof_but_an_untracked_file_does() {
    let sandbox = proven_repository();
    sandbox.write("GATES.md", &format!("{}\nSome prose added later.\n", sandbox.read("GATES.md")));
    sandbox.write("build/out.txt", "generated");
    sandbox.write("debug.log", "noise");
    sandbox.write(".unlazy/notes.md", "scratch");
    sandbox.run(&["--status", "--proof"]).code(0).stdout_is("GATES.md: 2 gates\nALL MET (2 met)\n");

    // A file git would show as untracked is part of the tree.
    sandbox.write("src/extra.py", "print('new')\n");
    sandbox.run(&["--status", "--proof"]).code(1).stdout_contains(
        "  UNMET GATES:G1 (stale: src/extra.py changed since it was proven): the library returns one\n",
    );
}

#[test]
fn inputs_narrow_a_proof_both_ways() {
    let sandbox = proven_repository();
    // Outside G2's inputs: only G1 goes stale.
    sandbox.write("src/lib.py", "def one():\n    return 1\n\n");
    sandbox
        .run(&["--status", "--proof"])
        .code(1)
        .stdout_contains("UNMET GATES:G1 (stale: src/lib.py changed")
        .stdout_lacks("GATES:G2");
    // Inside them: both do.
    sandbox.write("docs/guide.md", "the guide, revised\n");
    sandbox
        .run(&["--status", "--proof"])
        .code(1)
        .stdout_contains("UNMET GATES:G1 (stale: docs/guide.md, src/lib.py changed since it was proven)")
        .stdout_contains("UNMET GATES:G2 (stale: docs/guide.md changed since it was proven)");
    // Changing INPUTS itself leaves the gate unproven: its receipt was made
    // with others.
    let narrowed = sandbox.read("GATES.md").replace("INPUTS: docs", "INPUTS: docs/guide.md");
    sandbox.write("GATES.md", &narrowed);
    sandbox
        .run(&["--status", "--proof"])
        .code(1)
        .stdout_contains("UNMET GATES:G2 (unproven: it was proven with other INPUTS or under another root)");
}

#[test]
fn a_ledger_copied_into_another_repository_is_unproven_there() {
    let sandbox = proven_repository();
    let copy = Sandbox::new();
    git(&copy.root, &["init", "-q"]);
    for file in ["src/lib.py", "docs/guide.md", ".gitignore", "GATES.md"] {
        copy.write(file, &sandbox.read(file));
    }
    // The same receipt store, where the original's receipts are.
    let status = |args: &[&str]| {
        let mut command = copy.cmd();
        command.env("UNLAZY_RECEIPT_DIR", &sandbox.receipts).args(args);
        copy.run_with(&mut command)
    };
    status(&["--status"]).code(0).stdout_is("GATES.md: 2 gates\nALL MET (2 met)\n").stderr_contains(
        "2 met gate(s) not proven on this tree (0 stale, 2 unproven): GATES:G1 unproven: no receipt: gate-check did \
         not prove it here; GATES:G2 unproven: no receipt",
    );
    status(&["--status", "--proof"])
        .code(1)
        .stdout_contains("UNMET GATES:G1 (unproven: no receipt: gate-check did not prove it here)");
}

/// The receipt of `gate`: the one receipt file naming it.
fn receipt_of(sandbox: &Sandbox, gate: &str) -> std::path::PathBuf {
    fs::read_dir(&sandbox.receipts)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .find(|path| fs::read_to_string(path).unwrap().contains(&format!("\"gate\": \"{gate}\"")))
        .unwrap()
}

#[test]
fn a_receipt_with_one_byte_changed_proves_nothing() {
    let sandbox = proven_repository();
    let receipt = receipt_of(&sandbox, "G1");
    let text = fs::read_to_string(&receipt).unwrap();
    let at = text.find("\"provenAt\": \"").unwrap() + "\"provenAt\": \"".len();
    let mut bytes = text.into_bytes();
    bytes[at] = if bytes[at] == b'1' { b'2' } else { b'1' };
    fs::write(&receipt, &bytes).unwrap();
    sandbox
        .run(&["--status", "--proof"])
        .code(1)
        .stdout_contains("UNMET GATES:G1 (unproven: its receipt is not sealed by this owner's key)")
        .stdout_lacks("GATES:G2 (");
    // Forged evidence written by hand over a real one: unproven too.
    let forged = sandbox.read("GATES.md").replacen("; cwd=/", "; cwd=/forged/", 2);
    sandbox.write("GATES.md", &forged);
    sandbox.run(&["--status"]).code(0).stdout_contains("ALL MET (2 met)").stderr_contains(
        "GATES:G1 unproven: its receipt is not sealed by this owner's key; GATES:G2 unproven: its receipt proves \
         another evidence line",
    );
}

#[test]
fn a_receipt_store_or_key_that_is_not_private_is_refused() {
    let sandbox = proven_repository();
    let key = sandbox.receipts.join("key");
    assert_eq!(fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(fs::metadata(&sandbox.receipts).unwrap().permissions().mode() & 0o777, 0o700);

    let loose_store = format!("{} must not grant group or other permissions", sandbox.receipts.display());
    fs::set_permissions(&sandbox.receipts, fs::Permissions::from_mode(0o755)).unwrap();
    sandbox
        .run(&["--status"])
        .code(0)
        .stdout_contains("ALL MET (2 met)")
        .stderr_contains(&format!("gate-check: warning: receipts cannot be used: {loose_store}\n"))
        .stderr_contains("GATES:G1 unproven: the receipt store cannot be used");
    sandbox.run(&["--status", "--proof"]).code(2).stderr_is(&format!("gate-check: error: {loose_store}\n"));
    fs::set_permissions(&sandbox.receipts, fs::Permissions::from_mode(0o700)).unwrap();

    fs::set_permissions(&key, fs::Permissions::from_mode(0o644)).unwrap();
    sandbox
        .run(&["--status", "--proof"])
        .code(2)
        .stderr_is(&format!("gate-check: error: {} must not grant group or other permissions\n", key.display()));
    fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).unwrap();

    std::os::unix::fs::chown(&sandbox.receipts, Some(65534), None).unwrap();
    sandbox
        .run(&["--status", "--proof"])
        .code(2)
        .stderr_is(&format!("gate-check: error: {} must be owned by the current user\n", sandbox.receipts.display()));
    std::os::unix::fs::chown(&sandbox.receipts, Some(0), None).unwrap();

    // A store inside the repository is refused like the approval store.
    let inside = sandbox.path("receipts");
    let mut command = sandbox.cmd();
    command.env("UNLAZY_RECEIPT_DIR", &inside).args(["--status", "--proof"]);
    sandbox.run_with(&mut command).code(2).stderr_is(&format!(
        "gate-check: error: UNLAZY_RECEIPT_DIR must be outside the repository root {}\n",
        sandbox.root.display()
    ));
    assert!(!exists(&inside));
    sandbox.run(&["--status", "--proof"]).code(0).stdout_contains("ALL MET (2 met)");
}

#[test]
fn a_second_reading_of_an_unchanged_tree_hashes_nothing() {
    let sandbox = proven_repository();
    // Committed files come from git's index; an untracked one is hashed
    // once, by the run that proves the gates, and then cached.
    sandbox.write("notes.txt", "an untracked note\n");
    age(&sandbox.path("notes.txt"));
    // The tree: .gitignore, docs/guide.md, src/lib.py and the note; never
    // the ledger, which each run rewrites.
    let read =
        |hashed: usize| format!("  proof: read the tree under {}: 4 files, {hashed} hashed\n", sandbox.root.display());
    sandbox.run(&["--status", "-v"]).code(0).stdout_contains(&read(1)).stderr_contains("GATES:G1 stale");
    sandbox.run(&["--reverify", "-q"]).code(0).stdout_is("ALL MET (2 met, reran: 2, previously met reverified: 2)\n");
    sandbox.run(&["--status", "-v", "--proof"]).code(0).stdout_contains(&read(0)).stdout_contains("ALL MET (2 met)");
}

#[test]
fn outside_git_the_files_under_the_root_are_the_tree_and_ignore_files_hold() {
    let sandbox = Sandbox::new();
    sandbox.write(".gitignore", "*.log\n");
    sandbox.write("data.txt", "one\n");
    sandbox.write("GATES.md", "- [ ] G1: data is there\n  CHECK: cat data.txt\n  EXPECT: one\n");
    sandbox.run(&["--approve", "-q"]).code(0).stdout_ends_with("ALL MET (1 met)\n");
    sandbox.write("run.log", "ignored");
    sandbox.run(&["--status", "--proof"]).code(0).stdout_is("GATES.md: 1 gates\nALL MET (1 met)\n");
    sandbox.write("data.txt", "one, edited\n");
    sandbox
        .run(&["--status", "--proof"])
        .code(1)
        .stdout_contains("UNMET GATES:G1 (stale: data.txt changed since it was proven)");
}
