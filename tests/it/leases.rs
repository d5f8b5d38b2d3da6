//! Ownership leases through the real binary: claims, conservative overlap,
//! identity exclusivity, unsafe paths, release (also after the scope folder
//! is gone), strict registry validation, and a two-process race.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::common::{Run, Sandbox};

/// A leaf ledger owning `owns`, with one manual gate.
fn leaf(owns: &str) -> String {
    format!("# leaf\n\nOWNS: {owns}\n\n- [ ] G1: manual outcome\n  EVIDENCE: pending\n")
}

fn lease_files(sandbox: &Sandbox) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(sandbox.path(".unlazy/locks")) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> =
        entries.map(|e| e.unwrap().path()).filter(|p| p.to_string_lossy().ends_with(".lease")).collect();
    files.sort();
    files
}

fn claim(sandbox: &Sandbox, scope: &str, leaf: Option<&str>) -> Run {
    let mut cmd = sandbox.cmd();
    cmd.args(["--claim", "--scope", scope]);
    if let Some(leaf) = leaf {
        cmd.args(["--leaf", leaf]);
    }
    sandbox.run_with(&mut cmd)
}

#[test]
fn a_single_leaf_claims_its_normalized_owns_paths() {
    let sandbox = Sandbox::new();
    sandbox.write(".unlazy/api/gates/leaf-1.2.1.md", &leaf("./src/api/**, tests//api/*.rs"));
    claim(&sandbox, "api", None)
        .code(0)
        .stdout_is("CLAIMED 2 path(s) for api/leaf-1.2.1: src/api/**, tests/api/*.rs\n");
    let files = lease_files(&sandbox);
    assert_eq!(files.len(), 1);
    let record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_eq!(record["scope"], "api");
    assert_eq!(record["leaf"], "leaf-1.2.1");
    assert_eq!(record["globs"], serde_json::json!(["src/api/**", "tests/api/*.rs"]));
    assert!(record["pid"].is_u64(), "{record}");
}

#[test]
fn overlapping_claims_are_refused_with_the_holder_named() {
    let sandbox = Sandbox::new();
    sandbox.write(".unlazy/web/gates/leaf-1.md", &leaf("src/shared/**, web/**"));
    sandbox.write(".unlazy/api/gates/leaf-2.md", &leaf("src/shared/util.ts, api/**"));
    sandbox.write(".unlazy/cli/gates/leaf-3.md", &leaf("src/*.rs, web/x"));
    sandbox.write(".unlazy/docs/gates/leaf-4.md", &leaf("src/sharedness/**, docs/**"));
    claim(&sandbox, "web", None).code(0).stdout_contains("CLAIMED ");

    claim(&sandbox, "api", None).code(3).stdout_is(
        "CONFLICT src/shared/util.ts overlaps src/shared/** held by web/leaf-1\nCLAIM REFUSED (1 conflict(s))\n",
    );

    claim(&sandbox, "cli", None)
        .code(3)
        .stdout_contains("CONFLICT src/*.rs overlaps src/shared/** held by web/leaf-1")
        .stdout_contains("CONFLICT web/x overlaps web/** held by web/leaf-1")
        .stdout_ends_with("CLAIM REFUSED (2 conflict(s))\n");

    // Different literal segments are provably disjoint.
    claim(&sandbox, "docs", None).code(0).stdout_is("CLAIMED 2 path(s) for docs/leaf-4: src/sharedness/**, docs/**\n");
    assert_eq!(lease_files(&sandbox).len(), 2, "refused claims must not write a lease");
}

#[test]
fn an_identity_holding_a_lease_is_its_exclusive_owner() {
    let sandbox = Sandbox::new();
    sandbox.write(".unlazy/web/gates/leaf-1.md", &leaf("web/**"));
    claim(&sandbox, "web", None).code(0).stdout_contains("CLAIMED ");
    // Even with new, disjoint paths the identity cannot claim a second time.
    sandbox.write(".unlazy/web/gates/leaf-1.md", &leaf("elsewhere/**"));
    claim(&sandbox, "web", Some("leaf-1")).code(3).stdout_is("CONFLICT web/leaf-1 already holds a live lease; release it before claiming again\nCLAIM REFUSED (1 conflict(s))\n");
}

#[test]
fn leaf_selection_and_ledger_problems() {
    let sandbox = Sandbox::new();
    sandbox.write(".unlazy/api/GATES.md", &leaf("api/**"));
    sandbox.write(".unlazy/api/gates/leaf-a.md", &leaf("api/a/**"));
    sandbox.write(".unlazy/api/gates/leaf-none.md", "- [ ] G1: manual\n");
    sandbox.write(".unlazy/api/gates/leaf-bad.md", "OWNS: src/**\n- [ ] G1: x\n  CHECK: true\n");
    let cases: [(Option<&str>, &str); 5] = [
        (None, "--claim needs --leaf NAME when a scope has several gate files"),
        (Some("leaf-z"), "unknown --leaf leaf-z (have: GATES, leaf-a, leaf-bad, leaf-none)"),
        (Some("../x"), "leaf must match"),
        (Some("leaf-none"), "leaf-none.md declares no OWNS paths"),
        (Some("leaf-bad"), "runnable gates require both non-blank CHECK and EXPECT"),
    ];
    for (leaf, message) in cases {
        claim(&sandbox, "api", leaf).code(2).stderr_contains(message);
    }
    assert!(lease_files(&sandbox).is_empty());
    claim(&sandbox, "api", Some("GATES")).code(0).stdout_is("CLAIMED 1 path(s) for api/GATES: api/**\n");
}

#[test]
fn unsafe_owns_paths_are_rejected() {
    let sandbox = Sandbox::new();
    for (index, owns) in ["/etc/**", "src/../../x", "C:/win/**", ".", "//server/share"].iter().enumerate() {
        let scope = format!("s{index}");
        sandbox.write(&format!(".unlazy/{scope}/gates/leaf-1.md"), &leaf(owns));
        claim(&sandbox, &scope, None).code(2).stderr_contains("OWNS path");
    }
    assert!(lease_files(&sandbox).is_empty());
}

#[test]
fn release_frees_leases_even_after_the_scope_folder_is_gone() {
    let sandbox = Sandbox::new();
    sandbox.write(".unlazy/api/gates/leaf-1.md", &leaf("api/one/**"));
    sandbox.write(".unlazy/api/gates/leaf-2.md", &leaf("api/two/**"));
    sandbox.write(".unlazy/web/gates/leaf-1.md", &leaf("web/**"));
    for (scope, leaf) in [("api", "leaf-1"), ("api", "leaf-2"), ("web", "leaf-1")] {
        claim(&sandbox, scope, Some(leaf)).code(0).stdout_contains("CLAIMED ");
    }
    sandbox
        .run(&["--release", "--scope", "api", "--leaf", "leaf-2"])
        .code(0)
        .stdout_is("released 1 lease(s) for api/leaf-2\n");
    // The freed paths can be claimed again by someone else.
    sandbox.write(".unlazy/web/gates/leaf-3.md", &leaf("api/two/x.rs"));
    claim(&sandbox, "web", Some("leaf-3")).code(0).stdout_contains("CLAIMED ");

    std::fs::remove_dir_all(sandbox.path(".unlazy/api")).unwrap();
    sandbox.run(&["--release", "--scope", "api"]).code(0).stdout_is("released 1 lease(s) for api\n");
    sandbox
        .run(&["--release", "--scope", "ghost", "--leaf", "leaf-1"])
        .code(0)
        .stdout_is("released 0 lease(s) for ghost/leaf-1\n");
    assert_eq!(lease_files(&sandbox).len(), 2, "web's leases are untouched");
    // A claim still needs a live ledger.
    claim(&sandbox, "api", None).code(2).stderr_contains("no such scope \"api\"");
}

#[test]
fn a_record_written_by_the_node_tool_is_honored() {
    let sandbox = Sandbox::new();
    sandbox.write(".unlazy/api/gates/leaf-1.md", &leaf("src/**"));
    // sha256("web::leaf-9")[..24], pretty JSON, as the Node tool writes it.
    let name = &gate_check::digest::sha256_hex(b"web::leaf-9")[..24];
    sandbox.write(
        &format!(".unlazy/locks/{name}.lease"),
        "{\n  \"scope\": \"web\",\n  \"leaf\": \"leaf-9\",\n  \"globs\": [\n    \"src/main.rs\"\n  ],\n  \"pid\": 4242\n}\n",
    );
    claim(&sandbox, "api", None).code(3).stdout_contains("CONFLICT src/** overlaps src/main.rs held by web/leaf-9");
}

#[test]
fn a_damaged_registry_fails_closed() {
    let sandbox = Sandbox::new();
    sandbox.write(".unlazy/api/gates/leaf-1.md", &leaf("api/**"));
    sandbox.write(".unlazy/web/gates/leaf-1.md", &leaf("web/**"));
    claim(&sandbox, "web", None).code(0).stdout_contains("CLAIMED ");
    let record = lease_files(&sandbox).remove(0);
    let good = std::fs::read_to_string(&record).unwrap();
    let outside = sandbox.root.parent().unwrap().join("outside.lease");
    std::fs::write(&outside, &good).unwrap();

    type Damage = Box<dyn Fn(&std::path::Path)>;
    let damages: Vec<(&str, Damage)> = vec![
        ("invalid lease record JSON", Box::new(|p| std::fs::write(p, "{ not json").unwrap())),
        ("invalid lease record JSON", Box::new(|p| std::fs::write(p, "").unwrap())),
        (
            "must be one unchanged regular single-link file",
            Box::new(|p| std::fs::write(p, " ".repeat(70 * 1024)).unwrap()),
        ),
        ("must be one unchanged regular single-link file", {
            let outside = outside.clone();
            Box::new(move |p| {
                std::fs::remove_file(p).unwrap();
                std::fs::hard_link(&outside, p).unwrap();
            })
        }),
        (
            "lease record name does not match its scope and leaf",
            Box::new(|p| std::fs::rename(p, p.with_file_name("000000000000000000000000.lease")).unwrap()),
        ),
    ];
    let mut damages = damages;
    if cfg!(unix) {
        let outside = outside.clone();
        damages.push((
            "must be one unchanged regular single-link file",
            Box::new(move |p| {
                std::fs::remove_file(p).unwrap();
                crate::common::symlink(&outside, p);
            }),
        ));
    }
    // Each damage, with what the refusal says about it.
    for (refusal, damage) in damages {
        damage(&record);
        claim(&sandbox, "api", None).code(2).stderr_contains("cannot claim leases").stderr_contains(refusal);
        sandbox
            .run_with(sandbox.cmd().args(["--release", "--scope", "web"]))
            .code(2)
            .stderr_contains("gate-check: error: cannot release leases: ")
            .stderr_contains(".lease");
        for file in lease_files(&sandbox) {
            std::fs::remove_file(file).unwrap();
        }
        std::fs::write(&record, &good).unwrap();
    }
    assert_eq!(lease_files(&sandbox), vec![record]);
}

// Symbolic links: Windows lets only administrators (or Developer Mode)
// create one, and wine 8, which runs the Windows tests, creates none.
#[cfg(unix)]
#[test]
fn a_linked_locks_directory_is_refused() {
    let sandbox = Sandbox::new();
    sandbox.write(".unlazy/api/gates/leaf-1.md", &leaf("api/**"));
    let outside = sandbox.root.parent().unwrap().join("locks-elsewhere");
    std::fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, sandbox.path(".unlazy/locks")).unwrap();
    claim(&sandbox, "api", None).code(2).stderr_contains("must be a real directory inside the repository");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

/// Two processes race for overlapping paths, 200 times: exactly one wins
/// each round and the other is refused with exit 3.
#[test]
fn racing_claims_never_both_win() {
    let sandbox = Sandbox::new();
    sandbox.write(".unlazy/a/gates/leaf-1.md", &leaf("src/shared/**"));
    sandbox.write(".unlazy/b/gates/leaf-1.md", &leaf("src/shared/util.rs"));
    let binary = assert_cmd::cargo::cargo_bin("gate-check");
    let spawn = |scope: &str| {
        Command::new(&binary)
            .current_dir(&sandbox.root)
            .args(["--claim", "--scope", scope])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    for round in 0..200 {
        let (mut first, mut second) = if round % 2 == 0 { (spawn("a"), spawn("b")) } else { (spawn("b"), spawn("a")) };
        let codes = [first.wait().unwrap().code(), second.wait().unwrap().code()];
        let mut sorted = codes;
        sorted.sort();
        assert_eq!(sorted, [Some(0), Some(3)], "round {round}: {codes:?}");
        let winner = match (round % 2 == 0, codes[0] == Some(0)) {
            (true, true) | (false, false) => "a",
            _ => "b",
        };
        assert_eq!(lease_files(&sandbox).len(), 1, "round {round}");
        sandbox
            .run(&["--release", "--scope", winner])
            .code(0)
            .stdout_is(&format!("released 1 lease(s) for {winner}\n"));
    }
}
