//! `gate-check dispatch`: every transition and refusal, the launch barrier,
//! unique and hostile handles, strict state-file reads, concurrent starts,
//! audit lines, and the scope verdict of `gate-check --scope`.

use std::fs;
use std::path::Path;
use std::time::Duration;

use crate::common::{Run, Sandbox};

const STATE: &str = ".unlazy/api/dispatch.json";
const LOG: &str = ".unlazy/api/status.log";

fn dispatch(sandbox: &Sandbox, args: &[&str]) -> Run {
    sandbox.run_with(sandbox.cmd().arg("dispatch").args(args).timeout(Duration::from_secs(60)))
}

/// `[verb, --scope api, --wave <wave>, extra...]`
fn verb<'a>(name: &'a str, wave: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![name, "--scope", "api", "--wave", wave];
    args.extend_from_slice(extra);
    args
}

/// A recorded transition: exit 0 and one line naming the wave; the line.
fn ok(sandbox: &Sandbox, args: &[&str]) -> String {
    let wave = args.iter().position(|arg| *arg == "--wave").map(|at| args[at + 1]).expect("a --wave");
    let run = dispatch(sandbox, args).code(0);
    let line = run.stdout().to_string();
    assert_eq!(line.lines().count(), 1, "{args:?}: {line}");
    run.stdout_contains(&format!(" {wave} "));
    line
}

fn refused(sandbox: &Sandbox, args: &[&str], message: &str) {
    let before = fs::read(sandbox.path(STATE)).ok();
    let log_before = fs::read(sandbox.path(LOG)).ok();
    dispatch(sandbox, args).code(2).stderr_contains(message);
    assert_eq!(fs::read(sandbox.path(STATE)).ok(), before, "{args:?} changed the state");
    assert_eq!(fs::read(sandbox.path(LOG)).ok(), log_before, "{args:?} wrote an audit line");
}

fn audit_lines(sandbox: &Sandbox) -> Vec<String> {
    sandbox.read(LOG).lines().map(str::to_string).collect()
}

/// Opens `ready-1` with two leaves and starts both.
fn started_wave(sandbox: &Sandbox) {
    ok(sandbox, &verb("open", "ready-1", &["--leaf", "leaf-a", "--leaf", "leaf-b"]));
    ok(sandbox, &verb("start", "ready-1", &["--leaf", "leaf-a", "--handle", "codex:a"]));
    ok(sandbox, &verb("start", "ready-1", &["--leaf", "leaf-b", "--handle", "codex:b"]));
}

#[test]
fn barrier_every_leaf_starts_before_seal_and_returns_after() {
    let sandbox = Sandbox::new();
    let out = ok(&sandbox, &verb("open", "ready-1", &["--leaf", "leaf-a", "--leaf", "leaf-b"]));
    assert_eq!(out, "OPEN ready-1 (0/2 started, 0/2 returned)\n");
    let out = ok(&sandbox, &verb("start", "ready-1", &["--leaf", "leaf-a", "--handle", "codex:a"]));
    assert_eq!(out, "STARTED ready-1 leaf-a (1/2 started)\n");

    refused(
        &sandbox,
        &verb("return", "ready-1", &["--leaf", "leaf-a"]),
        "return requires a sealed wave; ready-1 is open",
    );
    refused(&sandbox, &verb("seal", "ready-1", &[]), "cannot seal ready-1: missing starts for leaf-b");
    dispatch(&sandbox, &verb("status", "ready-1", &[])).code(1).stdout_is("OPEN ready-1 (1/2 started, 0/2 returned)\n");

    ok(&sandbox, &verb("start", "ready-1", &["--leaf", "leaf-b", "--handle", "codex:b"]));
    assert_eq!(ok(&sandbox, &verb("seal", "ready-1", &[])), "SEALED ready-1 (2/2 started)\n");
    refused(&sandbox, &verb("seal", "ready-1", &[]), "wave ready-1 is sealed; seal requires an open wave");
    refused(
        &sandbox,
        &verb("start", "ready-1", &["--leaf", "leaf-b", "--handle", "codex:late"]),
        "wave ready-1 is sealed; start requires an open wave",
    );
    dispatch(&sandbox, &verb("status", "ready-1", &[]))
        .code(1)
        .stdout_is("SEALED ready-1 (2/2 started, 0/2 returned)\n");

    assert_eq!(
        ok(&sandbox, &verb("return", "ready-1", &["--leaf", "leaf-b"])),
        "RETURNED ready-1 leaf-b (1/2 returned)\n"
    );
    refused(&sandbox, &verb("return", "ready-1", &["--leaf", "leaf-b"]), "leaf leaf-b already returned");
    refused(&sandbox, &verb("return", "ready-1", &["--leaf", "leaf-c"]), "unknown leaf leaf-c in wave ready-1");
    assert_eq!(ok(&sandbox, &verb("return", "ready-1", &["--leaf", "leaf-a"])), "COMPLETE ready-1 (2/2 returned)\n");
    refused(
        &sandbox,
        &verb("return", "ready-1", &["--leaf", "leaf-a"]),
        "return requires a sealed wave; ready-1 is complete",
    );
    refused(
        &sandbox,
        &verb("abandon", "ready-1", &["--reason", "too late"]),
        "wave ready-1 is complete; abandon requires an open or sealed wave",
    );

    dispatch(&sandbox, &verb("status", "ready-1", &[])).code(0).stdout_is("COMPLETE ready-1 (2/2 returned)\n");

    let state: serde_json::Value = serde_json::from_str(&sandbox.read(STATE)).unwrap();
    let wave = &state["waves"]["ready-1"];
    assert_eq!(state["schema"], 1);
    assert_eq!(wave["state"], "complete");
    assert_eq!(wave["started"]["leaf-a"]["handle"], "codex:a");
    for field in ["openedAt", "sealedAt", "completedAt"] {
        assert!(wave[field].as_str().is_some_and(|t| t.ends_with('Z')), "{field}: {wave}");
    }

    let lines = audit_lines(&sandbox);
    let events: Vec<&str> = lines.iter().map(|l| l.split_once(' ').expect("timestamp then event").1).collect();
    assert_eq!(
        events,
        [
            "dispatch ready-1 opened: leaf-a, leaf-b",
            "dispatch ready-1 started leaf-a as codex:a",
            "dispatch ready-1 started leaf-b as codex:b",
            "dispatch ready-1 sealed",
            "dispatch ready-1 returned leaf-b",
            "dispatch ready-1 returned leaf-a",
        ]
    );
}

#[test]
fn open_refuses_bad_ids_duplicate_leaves_and_existing_waves() {
    let sandbox = Sandbox::new();
    refused(&sandbox, &["open", "--scope", "../api", "--wave", "ready-1", "--leaf", "a"], "scope must match");
    assert!(!sandbox.path(".unlazy").exists(), "a refused scope created state");
    refused(&sandbox, &verb("open", "ready-1", &["--leaf", "leaf-a", "--leaf", "leaf-a"]), "duplicate leaf leaf-a");
    refused(&sandbox, &verb("seal", "ready-1", &[]), "unknown wave ready-1");
    assert!(!sandbox.path(".unlazy").exists(), "a refused transition created directories");
    refused(&sandbox, &verb("open", "bad/wave", &["--leaf", "leaf-a"]), "wave must match");
    refused(&sandbox, &verb("open", "ready-1", &["--leaf", "_x"]), "leaf must match");
    dispatch(&sandbox, &verb("open", "ready-1", &[]))
        .code(2)
        .stderr_contains("error: the following required arguments were not provided:");
    assert!(!sandbox.path(STATE).exists());

    ok(&sandbox, &verb("open", "ready-1", &["--leaf", "leaf-a"]));
    refused(&sandbox, &verb("open", "ready-1", &["--leaf", "leaf-b"]), "wave ready-1 already exists");
    refused(&sandbox, &verb("seal", "ready-2", &[]), "unknown wave ready-2");
    refused(&sandbox, &verb("status", "ready-2", &[]), "unknown wave ready-2");
}

#[test]
fn start_refuses_unknown_leaves_repeats_and_reused_handles() {
    let sandbox = Sandbox::new();
    ok(&sandbox, &verb("open", "ready-1", &["--leaf", "leaf-a", "--leaf", "leaf-b"]));
    refused(
        &sandbox,
        &verb("start", "ready-1", &["--leaf", "leaf-c", "--handle", "codex:c"]),
        "unknown leaf leaf-c in wave ready-1",
    );
    ok(&sandbox, &verb("start", "ready-1", &["--leaf", "leaf-a", "--handle", "codex:shared"]));
    refused(
        &sandbox,
        &verb("start", "ready-1", &["--leaf", "leaf-b", "--handle", "codex:shared"]),
        "handle is already assigned to leaf-a",
    );
    // Handles are compared after trimming, so padding cannot disguise a reuse.
    refused(
        &sandbox,
        &verb("start", "ready-1", &["--leaf", "leaf-b", "--handle", "  codex:shared\t"]),
        "handle is already assigned to leaf-a",
    );
    refused(
        &sandbox,
        &verb("start", "ready-1", &["--leaf", "leaf-a", "--handle", "codex:again"]),
        "leaf leaf-a already started",
    );
    refused(
        &sandbox,
        &verb("start", "ready-1", &["--leaf", "leaf-b", "--handle", "--seal"]),
        "--handle requires a value",
    );

    // The same handle may be used again in a different wave.
    ok(&sandbox, &verb("open", "ready-2", &["--leaf", "leaf-c"]));
    ok(&sandbox, &verb("start", "ready-2", &["--leaf", "leaf-c", "--handle", "codex:shared"]));
}

#[test]
fn hostile_arguments_never_reach_the_terminal_raw() {
    let sandbox = Sandbox::new();
    let hostile = "\u{1b}]0;pwned\u{7}\u{1b}[2J";
    for args in [
        verb("start", "ready-1", &["--leaf", "a", "--handle", "h", hostile]),
        vec!["open", "--scope", "api", "--wave", "w", "--leaf", "a", hostile],
        vec![hostile],
    ] {
        // Forced colour makes clap write as it would to a terminal, where
        // its own stripping of escape sequences does not apply.
        let refused = sandbox
            .run_with(sandbox.cmd().env_remove("NO_COLOR").env("CLICOLOR_FORCE", "1").arg("dispatch").args(&args))
            .code(2);
        let err = refused.stderr().to_string();
        assert!(err.contains("unexpected argument") || err.contains("unrecognized subcommand"), "{err}");
        refused.stderr_lacks("\u{1b}").stderr_lacks("\u{7}").stderr_contains("error: ");
    }
    dispatch(&sandbox, &["open", "--help"]).code(0).stdout_contains("--leaf <ID>");
}

fn assert_clean_output(text: &str) {
    assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "control character in output: {text:?}");
    assert!(text.len() < 1_200, "output is not bounded: {} bytes", text.len());
}

#[test]
fn hostile_handles_are_refused_without_reaching_output_or_state() {
    let sandbox = Sandbox::new();
    ok(&sandbox, &verb("open", "ready-1", &["--leaf", "leaf-a"]));
    let ten_kb = "h".repeat(10 * 1024);
    let hostile = [
        "agent\u{1b}]0;pwned\u{7}\u{1b}[2J",
        "agent\nSEALED ready-1 (1/1 started)",
        "agent\u{202e}dilav",
        "agent\u{9b}31m",
        ten_kb.as_str(),
        "   ",
    ];
    for handle in hostile {
        let before = sandbox.read(STATE);
        let refused = dispatch(&sandbox, &verb("start", "ready-1", &["--leaf", "leaf-a", "--handle", handle])).code(2);
        assert_clean_output(refused.stderr());
        refused.stdout_is("").stderr_contains("handle must be printable, nonblank, and at most 256 characters");
        assert_eq!(sandbox.read(STATE), before);
    }
    assert_eq!(audit_lines(&sandbox).len(), 1, "only the open is audited");

    // The bound is inclusive, and a handle may be unusual without being hostile.
    let longest = "x".repeat(256);
    ok(&sandbox, &verb("start", "ready-1", &["--leaf", "leaf-a", "--handle", &longest]));
    let state: serde_json::Value = serde_json::from_str(&sandbox.read(STATE)).unwrap();
    assert_eq!(state["waves"]["ready-1"]["started"]["leaf-a"]["handle"], longest.as_str());
}

#[test]
fn hostile_text_in_errors_is_escaped_and_bounded() {
    let sandbox = Sandbox::new();
    // A hand-edited state file whose duplicate key echoes attacker text.
    let key = format!("\u{1b}[2J{}", "k".repeat(10 * 1024));
    let leaf = serde_json::to_string(&key).unwrap();
    sandbox.write(
        STATE,
        &format!(
            r#"{{"schema":1,"waves":{{"w":{{"leaves":["a"],"state":"open","openedAt":"2024-01-01T00:00:00.000Z","started":{{{leaf}:{{"handle":"h","at":"2024-01-01T00:00:00.000Z"}},{leaf}:{{"handle":"g","at":"2024-01-01T00:00:00.000Z"}}}},"returned":{{}}}}}}}}"#
        ),
    );
    let refused = dispatch(&sandbox, &["status", "--scope", "api"]).code(2);
    assert_clean_output(refused.stderr());
    refused.stderr_starts_with("gate-check dispatch: invalid dispatch state: ").stderr_contains("...[truncated]");
}

#[test]
fn abandon_needs_a_reason_is_terminal_and_requires_handoff() {
    let sandbox = Sandbox::new();
    ok(&sandbox, &verb("open", "ready-1", &["--leaf", "leaf-a", "--leaf", "leaf-b"]));
    ok(&sandbox, &verb("start", "ready-1", &["--leaf", "leaf-a", "--handle", "codex:a"]));
    refused(&sandbox, &verb("abandon", "ready-1", &["--reason", " \t "]), "abandon requires --reason");
    refused(&sandbox, &verb("abandon", "ready-1", &["--reason", "bad\u{1b}[2Jreason"]), "reason must be printable");
    refused(&sandbox, &verb("abandon", "ready-1", &["--reason", &"r".repeat(501)]), "at most 500 characters");
    dispatch(&sandbox, &verb("abandon", "ready-1", &[]))
        .code(2)
        .stderr_contains("error: the following required arguments were not provided:");

    let out = ok(&sandbox, &verb("abandon", "ready-1", &["--reason", "  host refused the second launch  "]));
    assert_eq!(out, "ABANDONED ready-1 (1/2 started, 0/2 returned): host refused the second launch\n");
    dispatch(&sandbox, &verb("status", "ready-1", &[])).code(1).stdout_is(
        "ABANDONED ready-1 (1/2 started, 0/2 returned): host refused the second launch\n\
         HANDOFF REQUIRED: 1 abandoned wave(s): dispatch:ready-1\n",
    );

    refused(
        &sandbox,
        &verb("start", "ready-1", &["--leaf", "leaf-b", "--handle", "codex:b"]),
        "wave ready-1 is abandoned; start requires an open wave",
    );
    refused(&sandbox, &verb("seal", "ready-1", &[]), "wave ready-1 is abandoned; seal requires an open wave");
    refused(
        &sandbox,
        &verb("return", "ready-1", &["--leaf", "leaf-a"]),
        "return requires a sealed wave; ready-1 is abandoned",
    );
    refused(
        &sandbox,
        &verb("abandon", "ready-1", &["--reason", "again"]),
        "wave ready-1 is abandoned; abandon requires an open or sealed wave",
    );

    // A sealed wave can be abandoned too; its seal is kept.
    started_wave_named(&sandbox, "ready-2");
    ok(&sandbox, &verb("seal", "ready-2", &[]));
    ok(&sandbox, &verb("abandon", "ready-2", &["--reason", "worker lost"]));
    let state: serde_json::Value = serde_json::from_str(&sandbox.read(STATE)).unwrap();
    assert!(state["waves"]["ready-2"]["sealedAt"].is_string());
    assert_eq!(state["waves"]["ready-1"]["reason"], "host refused the second launch");

    let lines = audit_lines(&sandbox);
    assert!(
        lines.iter().any(|l| l.ends_with(" dispatch ready-1 abandoned: host refused the second launch")),
        "{lines:?}"
    );
    assert!(lines.iter().any(|l| l.ends_with(" dispatch ready-2 abandoned: worker lost")), "{lines:?}");

    dispatch(&sandbox, &["status", "--scope", "api"])
        .code(1)
        .stdout_ends_with("HANDOFF REQUIRED: 2 abandoned wave(s): dispatch:ready-1, dispatch:ready-2\n");
}

fn started_wave_named(sandbox: &Sandbox, wave: &str) {
    ok(sandbox, &verb("open", wave, &["--leaf", "x"]));
    ok(sandbox, &verb("start", wave, &["--leaf", "x", "--handle", "codex:x"]));
}

#[test]
fn status_without_a_wave_lists_every_wave_in_collation_order() {
    let sandbox = Sandbox::new();
    dispatch(&sandbox, &["status", "--scope", "api"]).code(0).stdout_is("(no dispatch waves in scope api)\n");
    started_wave_named(&sandbox, "b-wave");
    ok(&sandbox, &verb("seal", "b-wave", &[]));
    ok(&sandbox, &verb("return", "b-wave", &["--leaf", "x"]));
    dispatch(&sandbox, &["status", "--scope", "api"]).code(0).stdout_is("COMPLETE b-wave (1/1 returned)\n");
    ok(&sandbox, &verb("open", "A-wave", &["--leaf", "x"]));
    dispatch(&sandbox, &["status", "--scope", "api"])
        .code(1)
        .stdout_is("OPEN A-wave (0/1 started, 0/1 returned)\nCOMPLETE b-wave (1/1 returned)\n");
}

/// Every refused state file leaves `path` as it was and never hangs.
fn assert_state_refused(sandbox: &Sandbox, message: &str, unchanged: &dyn Fn()) {
    for args in [
        vec!["status", "--scope", "api"],
        verb("status", "ready-1", &[]),
        verb("start", "ready-1", &["--leaf", "leaf-a", "--handle", "codex:z"]),
        verb("open", "ready-9", &["--leaf", "leaf-z"]),
        verb("abandon", "ready-1", &["--reason", "cleanup"]),
    ] {
        dispatch(sandbox, &args).code(2).stderr_contains(message);
        unchanged();
    }
    sandbox
        .run_with(sandbox.cmd().args(["--scope", "api"]).timeout(Duration::from_secs(60)))
        .code(2)
        .stdout_is("GATES.md: 1 gates\n")
        .stderr_contains("invalid dispatch state for scope api");
    unchanged();
}

fn scope_with_met_gate(sandbox: &Sandbox) {
    sandbox.write(".unlazy/api/GATES.md", "# Gates\n\n- [x] G1: complete\n  EVIDENCE: checked by a reviewer\n");
}

// Symbolic links: Windows lets only administrators (or Developer Mode)
// create one, and wine 8, which runs the Windows tests, creates none.
#[cfg(unix)]
#[test]
fn symlinked_state_is_refused_and_left_alone() {
    let sandbox = Sandbox::new();
    scope_with_met_gate(&sandbox);
    started_wave(&sandbox);
    let real = sandbox.path("elsewhere.json");
    fs::rename(sandbox.path(STATE), &real).unwrap();
    std::os::unix::fs::symlink(&real, sandbox.path(STATE)).unwrap();
    let text = fs::read(&real).unwrap();
    assert_state_refused(&sandbox, "dispatch state must be one unchanged regular single-link file", &|| {
        assert!(fs::symlink_metadata(sandbox.path(STATE)).unwrap().file_type().is_symlink());
        assert_eq!(fs::read(&real).unwrap(), text);
    });
}

#[test]
fn hard_linked_state_is_refused_and_left_alone() {
    let sandbox = Sandbox::new();
    scope_with_met_gate(&sandbox);
    started_wave(&sandbox);
    let twin = sandbox.path("twin.json");
    fs::hard_link(sandbox.path(STATE), &twin).unwrap();
    let text = fs::read(&twin).unwrap();
    assert_state_refused(&sandbox, "dispatch state must be one unchanged regular single-link file", &|| {
        assert_eq!(fs::read(sandbox.path(STATE)).unwrap(), text);
        assert_eq!(fs::read(&twin).unwrap(), text);
    });
}

// FIFOs in the file system are a Unix feature.
#[cfg(unix)]
#[test]
fn fifo_state_is_refused_without_hanging() {
    let sandbox = Sandbox::new();
    scope_with_met_gate(&sandbox);
    nix::unistd::mkfifo(&sandbox.path(STATE), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    assert_state_refused(&sandbox, "dispatch state must be one unchanged regular single-link file", &|| {
        use std::os::unix::fs::FileTypeExt;
        assert!(fs::symlink_metadata(sandbox.path(STATE)).unwrap().file_type().is_fifo());
    });
}

#[test]
fn oversized_state_is_refused() {
    let sandbox = Sandbox::new();
    scope_with_met_gate(&sandbox);
    let huge = format!("{{\"schema\":1,\"waves\":{{}}}}{}", " ".repeat(8 * 1024 * 1024));
    sandbox.write(STATE, &huge);
    assert_state_refused(&sandbox, "dispatch state exceeds 8388608 bytes", &|| {
        assert_eq!(fs::metadata(sandbox.path(STATE)).unwrap().len(), huge.len() as u64);
    });
}

#[test]
fn malformed_state_is_refused() {
    let cases = [
        ("{not json\n", "invalid dispatch state"),
        (r#"{"schema":2,"waves":{}}"#, "expected schema 1 with a waves object"),
        (
            r#"{"schema":1,"waves":{"ready-1":{"leaves":["leaf-a"],"state":"sealed","openedAt":"2024-01-01T00:00:00.000Z","started":{},"returned":{},"sealedAt":"2024-01-01T00:00:01.000Z"}}}"#,
            "sealed wave ready-1 is missing starts",
        ),
        (
            r#"{"schema":1,"waves":{"ready-1":{"leaves":["leaf-a"],"state":"open","openedAt":"not a time","started":{},"returned":{}}}}"#,
            "wave ready-1 openedAt must be an ISO timestamp",
        ),
    ];
    for (text, message) in cases {
        let sandbox = Sandbox::new();
        scope_with_met_gate(&sandbox);
        sandbox.write(STATE, text);
        assert_state_refused(&sandbox, message, &|| assert_eq!(sandbox.read(STATE), text));
    }
}

// Symbolic links: Windows lets only administrators (or Developer Mode)
// create one, and wine 8, which runs the Windows tests, creates none.
#[cfg(unix)]
#[test]
fn linked_scope_directory_is_refused() {
    let sandbox = Sandbox::new();
    fs::create_dir_all(sandbox.path("outside")).unwrap();
    fs::create_dir_all(sandbox.path(".unlazy")).unwrap();
    std::os::unix::fs::symlink(sandbox.path("outside"), sandbox.path(".unlazy/api")).unwrap();
    dispatch(&sandbox, &verb("open", "ready-1", &["--leaf", "leaf-a"]))
        .code(2)
        .stderr_contains("must be a real directory, not a link or file");
    assert_eq!(fs::read_dir(sandbox.path("outside")).unwrap().count(), 0, "state was written through the link");
}

#[test]
fn concurrent_starts_lose_no_update() {
    let sandbox = Sandbox::new();
    let leaves: Vec<String> = (0..16).map(|i| format!("leaf-{i}")).collect();
    let mut open = verb("open", "ready-1", &[]);
    for leaf in &leaves {
        open.extend(["--leaf", leaf.as_str()]);
    }
    ok(&sandbox, &open);

    let binary = assert_cmd::cargo::cargo_bin("gate-check");
    let children: Vec<_> = leaves
        .iter()
        .map(|leaf| {
            std::process::Command::new(&binary)
                .current_dir(&sandbox.root)
                .args(["dispatch", "start", "--scope", "api", "--wave", "ready-1", "--leaf", leaf])
                .args(["--handle", &format!("agent:{leaf}")])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn a starter")
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }

    let state: serde_json::Value = serde_json::from_str(&sandbox.read(STATE)).unwrap();
    let started = state["waves"]["ready-1"]["started"].as_object().unwrap();
    assert_eq!(started.len(), 16, "{state}");
    for leaf in &leaves {
        assert_eq!(started[leaf]["handle"], format!("agent:{leaf}"));
    }
    let lines = audit_lines(&sandbox);
    assert_eq!(lines.iter().filter(|l| l.contains(" dispatch ready-1 started ")).count(), 16, "{lines:?}");
    assert_eq!(ok(&sandbox, &verb("seal", "ready-1", &[])), "SEALED ready-1 (16/16 started)\n");
    assert!(
        !Path::new(&sandbox.path(".unlazy/api"))
            .read_dir()
            .unwrap()
            .any(|e| { e.unwrap().file_name().to_string_lossy().ends_with(".tmp") }),
        "a temp file was left behind"
    );
}

fn checker(sandbox: &Sandbox, args: &[&str]) -> Run {
    sandbox.run_with(sandbox.cmd().args(["--scope", "api"]).args(args).timeout(Duration::from_secs(60)))
}

#[test]
fn scope_verdict_includes_dispatch_waves() {
    let sandbox = Sandbox::new();
    scope_with_met_gate(&sandbox);
    checker(&sandbox, &[]).code(0).stdout_contains("ALL MET (1 met) [scope api]");

    // Incomplete: an open wave blocks an otherwise met scope.
    ok(&sandbox, &verb("open", "ready-1", &["--leaf", "leaf-a", "--leaf", "leaf-b"]));
    ok(&sandbox, &verb("start", "ready-1", &["--leaf", "leaf-a", "--handle", "codex:a"]));
    checker(&sandbox, &[])
        .code(1)
        .stdout_lacks("ALL MET")
        .stdout_contains("UNMET: 1 (met: 1) [scope api]\n  dispatch:ready-1 open (1/2 started)\n");
    checker(&sandbox, &["--status"])
        .code(1)
        .stdout_contains("GATES.md: 1 gates\n  UNMET dispatch:ready-1 open (1/2 started)\n");

    // Sealed but not returned still blocks.
    ok(&sandbox, &verb("start", "ready-1", &["--leaf", "leaf-b", "--handle", "codex:b"]));
    ok(&sandbox, &verb("seal", "ready-1", &[]));
    ok(&sandbox, &verb("return", "ready-1", &["--leaf", "leaf-a"]));
    checker(&sandbox, &["--status"]).code(1).stdout_contains("  UNMET dispatch:ready-1 sealed (1/2 returned)\n");

    // Complete: the scope is met again.
    ok(&sandbox, &verb("return", "ready-1", &["--leaf", "leaf-b"]));
    checker(&sandbox, &[]).code(0).stdout_contains("ALL MET (1 met) [scope api]");

    // Complete waves never hide an unmet gate.
    sandbox.write(".unlazy/api/gates/leaf-a.md", "- [ ] G2: pending work\n");
    checker(&sandbox, &["--status"]).code(1).stdout_contains("UNMET: 1 (met: 1) [scope api]\n  leaf-a:G2\n");
    fs::remove_file(sandbox.path(".unlazy/api/gates/leaf-a.md")).unwrap();

    // Abandoned: a handoff, never ALL MET.
    ok(&sandbox, &verb("open", "ready-2", &["--leaf", "leaf-c"]));
    ok(&sandbox, &verb("abandon", "ready-2", &["--reason", "host lost the agent"]));
    checker(&sandbox, &[])
        .code(1)
        .stdout_contains("HANDOFF REQUIRED: 1 abandoned (met: 1) [scope api]\n  dispatch:ready-2\n")
        .stdout_lacks("ALL MET")
        .stdout_lacks("host lost the agent");

    // Both at once: handoff and unmet are reported together.
    ok(&sandbox, &verb("open", "ready-3", &["--leaf", "leaf-d"]));
    checker(&sandbox, &[])
        .code(1)
        .stdout_contains("HANDOFF REQUIRED: 1 abandoned (met: 1, unmet: 1) [scope api]")
        .stdout_contains("UNMET: 1 (met: 1, abandoned: 1) [scope api]\n  dispatch:ready-3 open (0/1 started)\n");
}

#[test]
fn waves_only_count_for_the_targeted_scope() {
    let sandbox = Sandbox::new();
    scope_with_met_gate(&sandbox);
    sandbox.write(".unlazy/web/GATES.md", "- [x] G1: done\n  EVIDENCE: reviewed\n");
    ok(&sandbox, &["open", "--scope", "web", "--wave", "ready-1", "--leaf", "leaf-a"]);
    checker(&sandbox, &[]).code(0).stdout_contains("\nALL MET (");
    sandbox
        .run_with(sandbox.cmd().args(["--scope", "web"]))
        .code(1)
        .stdout_contains("dispatch:ready-1 open (0/1 started)");
}
