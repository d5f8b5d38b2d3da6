//! The pipeline actions `--list-scopes`, `--bind` and `--log`, and the
//! rules for combining actions with each other, run modes and files.

use std::process::Stdio;

use crate::common::Sandbox;

const LEDGER: &str = "- [ ] G1: manual outcome\n  EVIDENCE: pending\n";

fn with_scopes(scopes: &[&str]) -> Sandbox {
    let sandbox = Sandbox::new();
    for scope in scopes {
        sandbox.write(&format!(".unlazy/{scope}/GATES.md"), LEDGER);
    }
    sandbox
}

/// Names in `dir` other than the expected ones: leftovers such as temp files.
fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

#[test]
fn list_scopes_prints_real_pipelines_sorted() {
    let sandbox = Sandbox::new();
    sandbox.run_with(sandbox.cmd().arg("--list-scopes")).code(0).stdout_is("(no pipelines under .unlazy/)\n");

    let sandbox = with_scopes(&["web", "api", "a.b_c-1"]);
    std::fs::create_dir_all(sandbox.path(".unlazy/locks")).unwrap();
    std::fs::create_dir_all(sandbox.path(".unlazy/.hidden")).unwrap();
    sandbox.write(".unlazy/plainfile", "x");
    crate::common::symlink(&sandbox.path(".unlazy/api"), &sandbox.path(".unlazy/alias"));
    sandbox.run_with(sandbox.cmd().arg("--list-scopes")).code(0).stdout_is("a.b_c-1\napi\nweb\n");
}

#[test]
fn bind_writes_the_session_file_atomically() {
    let sandbox = with_scopes(&["api", "web"]);
    sandbox
        .run(&["--bind", "  sess-1  ", "--scope", "api"])
        .code(0)
        .stdout_is("bound session   sess-1   to scope api\n");
    assert_eq!(sandbox.read(".unlazy/api/session"), "sess-1\n");
    sandbox
        .run_with(sandbox.cmd().args(["--bind=sess-2", "--scope=api"]))
        .code(0)
        .stdout_is("bound session sess-2 to scope api\n");
    assert_eq!(sandbox.read(".unlazy/api/session"), "sess-2\n");
    assert_eq!(names_in(&sandbox.path(".unlazy/api")), ["GATES.md", "session"], "no temp file may remain");
    assert!(!crate::common::exists(&sandbox.path(".unlazy/web/session")));
}

#[test]
fn bind_refusals() {
    let sandbox = with_scopes(&["api", "web"]);
    let cases: [(&[&str], &str); 4] = [
        (&["--bind", "s"], "2 pipelines present (api, web); pass --scope <id> or set UNLAZY_SCOPE. Refusing to guess."),
        (&["--bind", "s", "--scope", "ghost"], "no such scope \"ghost\""),
        (&["--bind", "   ", "--scope", "api"], "--bind needs a non-blank session id"),
        (&["--bind", "a\nb", "--scope", "api"], "single-line session id"),
    ];
    for (args, message) in cases {
        sandbox.run(args).code(2).stderr_contains(message);
    }
    let none = Sandbox::new();
    none.run_with(none.cmd().args(["--bind", "s"]))
        .code(2)
        .stderr_contains("--bind needs --scope ID or exactly one discoverable pipeline");
    // With one pipeline, it is discovered.
    let solo = with_scopes(&["solo"]);
    solo.run(&["--bind", "s9"]).code(0).stdout_is("bound session s9 to scope solo\n");

    // A link in place of the session file is refused, and its target kept.
    let victim = sandbox.root.parent().unwrap().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    if crate::common::symlink(&victim, &sandbox.path(".unlazy/api/session")) {
        sandbox
            .run_with(sandbox.cmd().args(["--bind", "s", "--scope", "api"]))
            .code(2)
            .stderr_contains("cannot bind session");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    }
}

#[test]
fn log_appends_one_timestamped_line_per_call() {
    let sandbox = with_scopes(&["api"]);
    let log = sandbox.path(".unlazy/api/status.log");
    sandbox
        .run(&["--log", "leaf-1 verified, 7/7", "--scope", "api"])
        .code(0)
        .stdout_is(&format!("appended to {}\n", log.display()));
    // Discovered scope, text with line breaks and an escape sequence.
    sandbox
        .run_with(sandbox.cmd().args(["--log", "two\r\nlines\n\u{1b}[2Jend"]))
        .code(0)
        .stdout_contains("appended to ")
        .stdout_contains(&crate::common::native("/.unlazy/api/status.log\n"));
    let text = sandbox.read(".unlazy/api/status.log");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text:?}");
    let stamp = regex::Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ").unwrap();
    assert!(stamp.is_match(lines[0]) && lines[0].ends_with(" leaf-1 verified, 7/7"), "{text:?}");
    assert!(stamp.is_match(lines[1]) && lines[1].ends_with(" two lines  [2Jend"), "{text:?}");
}

#[test]
fn log_refusals() {
    let none = Sandbox::new();
    none.run_with(none.cmd().args(["--log", "x"]))
        .code(2)
        .stderr_contains("--log needs --scope ID or exactly one discoverable pipeline");
    let sandbox = with_scopes(&["api", "web"]);
    sandbox.run_with(sandbox.cmd().args(["--log", "x"])).code(2).stderr_contains("Refusing to guess");
    sandbox
        .run_with(sandbox.cmd().args(["--log", " \t", "--scope", "api"]))
        .code(2)
        .stderr_contains("--log needs non-blank text");

    let victim = sandbox.root.parent().unwrap().join("victim.log");
    std::fs::write(&victim, "keep\n").unwrap();
    if crate::common::symlink(&victim, &sandbox.path(".unlazy/api/status.log")) {
        sandbox
            .run(&["--log", "x", "--scope", "api"])
            .code(2)
            .stderr_contains("cannot append status: refusing non-file or linked status log");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep\n");
    }

    std::fs::hard_link(sandbox.path(".unlazy/web/GATES.md"), sandbox.path(".unlazy/web/status.log")).unwrap();
    sandbox
        .run_with(sandbox.cmd().args(["--log", "x", "--scope", "web"]))
        .code(2)
        .stderr_contains("gate-check: error: cannot append status: refusing non-file or linked status log ");
    assert_eq!(sandbox.read(".unlazy/web/GATES.md"), LEDGER);
}

#[test]
fn thirty_two_concurrent_appenders_lose_nothing() {
    let sandbox = with_scopes(&["api"]);
    let binary = assert_cmd::cargo::cargo_bin("gate-check");
    let children: Vec<_> = (0..32)
        .map(|writer| {
            std::process::Command::new(&binary)
                .current_dir(&sandbox.root)
                .args(["--scope", "api", "--log"])
                .arg(format!("writer-{writer:02} {}", "x".repeat(2000)))
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let text = sandbox.read(".unlazy/api/status.log");
    let mut writers: Vec<&str> = text
        .lines()
        .map(|line| {
            let (_, rest) = line.split_once(' ').expect("timestamp");
            let (writer, padding) = rest.split_once(' ').expect("writer");
            assert_eq!(padding, "x".repeat(2000), "a line was torn");
            writer
        })
        .collect();
    writers.sort();
    let expected: Vec<String> = (0..32).map(|w| format!("writer-{w:02}")).collect();
    assert_eq!(writers, expected);
}

#[test]
fn actions_combine_with_nothing() {
    let sandbox = with_scopes(&["api"]);
    let cases: [(&[&str], &str); 9] = [
        (&["--claim", "--release", "--scope", "api"], "pipeline actions are mutually exclusive: --claim, --release"),
        (&["--list-scopes", "--log", "x"], "pipeline actions are mutually exclusive: --list-scopes, --log"),
        (&["--log", "x", "--bind", "s"], "pipeline actions are mutually exclusive: --log, --bind"),
        (&["--claim", "--status"], "--claim cannot be combined with the run mode --status"),
        (&["--list-scopes", "--reverify"], "--list-scopes cannot be combined with the run mode --reverify"),
        (&["--bind", "s", "--approve"], "--bind cannot be combined with the run mode --approve"),
        (&["--release", "GATES.md"], "--release cannot be combined with explicit files"),
        (&["--leaf", "leaf-1", "--status"], "--leaf is only valid with --claim or --release"),
        (&["--log", "x", "--jobs", "2"], "--log cannot be combined with --jobs: it runs no checks"),
    ];
    for (args, message) in cases {
        sandbox.run(args).code(2).stderr_contains(message);
    }
    sandbox
        .run_with(sandbox.cmd().args(["--log", "a", "--log", "b", "--scope", "api"]))
        .code(2)
        .stderr_contains("error: the argument '--log <TEXT>' cannot be used multiple times\n");
    assert!(!crate::common::exists(&sandbox.path(".unlazy/api/status.log")));
}
