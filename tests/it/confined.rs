//! `--sandbox` through the real binary and the real kernel: Landlock keeps
//! writes inside the repository and the check's own TMPDIR, a network
//! namespace of its own keeps a TCP server on 127.0.0.1 out of reach,
//! credential variables are withheld, approvals made unconfined still
//! hold, and a real unittest suite passes confined. Every negative case is
//! preceded by the same check passing unconfined.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use crate::common::{exists, gate, program, Run, Sandbox};
use serde_json::Value;

/// `gate-check ARGS` on the sandbox's GATES.md, with extra variables.
fn run(sandbox: &Sandbox, args: &[&str], variables: &[(&str, &str)]) -> Run {
    let mut command = sandbox.cmd();
    command.args(args).arg("GATES.md");
    for (name, value) in variables {
        command.env(name, value);
    }
    sandbox.run_with(&mut command)
}

/// The one gate's JSON record after a run with `--format json`.
fn gate_record(run: Run) -> (Value, Value) {
    let document = run.stdout_json();
    let record = document["gates"][0].clone();
    (document, record)
}

#[test]
fn writes_outside_the_repository_fail_confined_and_inside_it_and_tmpdir_work() {
    let sandbox = Sandbox::new();
    let outside = sandbox.root.parent().unwrap().join("outside.txt");
    let write_outside = format!("echo x > {} && echo WROTE", outside.display());
    sandbox.write("GATES.md", &gate("W1", &write_outside, "WROTE"));
    // Unconfined, the write lands.
    run(&sandbox, &["--approve", "-q"], &[]).code(0).stdout_ends_with("ALL MET (1 met)\n");
    assert!(exists(&outside));
    std::fs::remove_file(&outside).unwrap();
    // Confined, it is refused: the mount it would land on is read-only
    // (EROFS, before Landlock's EACCES), which --show-output shows.
    let confined = run(&sandbox, &["--reverify", "--sandbox", "--show-output", "--format", "json"], &[]);
    let (document, record) = gate_record(confined.code(1).stderr_contains("Read-only file system"));
    assert!(!exists(&outside), "a confined check wrote outside the repository");
    assert_eq!(record["check"]["status"], "fail", "{record}");
    let tail = record["check"]["outputTail"]["lines"].to_string();
    assert!(tail.contains("Read-only file system"), "{document}");

    // Inside the repository and in the check's own TMPDIR, writes work.
    let inside = "mkdir -p build && echo a > build/out.txt && echo b > \"$TMPDIR/scratch\" && cat \"$TMPDIR/scratch\" \
                  && echo c > /dev/null && echo \"$TMPDIR\" > tmpdir.txt && echo INSIDE-OK";
    sandbox.write("GATES.md", &gate("W2", inside, "INSIDE-OK"));
    run(&sandbox, &["--approve", "--sandbox", "-q"], &[]).code(0).stdout_ends_with("ALL MET (1 met)\n");
    assert_eq!(sandbox.read("build/out.txt"), "a\n");
    let tmpdir = sandbox.read("tmpdir.txt");
    assert!(tmpdir.trim().contains("gate-check-sandbox-"), "{tmpdir}");
    assert!(!exists(std::path::Path::new(tmpdir.trim())), "the check's TMPDIR is removed after it");
}

/// A TCP server on 127.0.0.1 that answers each connection with `HELLO`,
/// for a bounded number of connections.
fn server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(4).flatten() {
            let mut stream = stream;
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = stream.write_all(b"HELLO\n");
            let _ = stream.read(&mut [0; 16]);
        }
    });
    port
}

#[test]
fn a_confined_check_cannot_reach_a_server_on_loopback() {
    if program("python3").is_none() {
        return;
    }
    let sandbox = Sandbox::new();
    let port = server();
    let connect = format!(
        "python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', {port}), timeout=5); print(s.recv(16).decode().strip())\""
    );
    sandbox.write("GATES.md", &gate("N1", &connect, "HELLO"));
    run(&sandbox, &["--approve", "-q"], &[]).code(0).stdout_ends_with("ALL MET (1 met)\n");
    let confined = run(&sandbox, &["--reverify", "--sandbox", "--show-output", "-q"], &[]).code(1);
    let out = confined.into_stdout();
    assert!(out.contains("FAIL GATES:N1"), "{out}");
    assert!(out.contains("Network is unreachable"), "{out}");
}

#[test]
fn credentials_are_withheld_unless_kept_and_the_run_says_so() {
    let sandbox = Sandbox::new();
    let show = "echo \"gh=${GITHUB_TOKEN:-none} ant=${ANTHROPIC_API_KEY:-none} aws=${AWS_SECRET_ACCESS_KEY:-none} \
                home=${HOME:-none}\"";
    sandbox.write("GATES.md", &gate("E1", show, "/gh=none ant=none aws=none home=\\//"));
    let secrets = [("GITHUB_TOKEN", "ghp_s3cret"), ("ANTHROPIC_API_KEY", "sk-ant"), ("AWS_SECRET_ACCESS_KEY", "aws")];
    // Unconfined, the check sees them (and fails its EXPECT).
    run(&sandbox, &["--approve", "-q"], &secrets).code(1).stdout_contains("FAIL GATES:E1");
    let confined = run(&sandbox, &["--sandbox", "--format", "json"], &secrets).code(0).stderr_contains("SANDBOX: ");
    let (document, record) = gate_record(confined);
    assert_eq!(record["state"], "met", "{document}");
    let withheld: Vec<&str> =
        document["sandbox"]["withheldVariables"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    for (name, _) in secrets {
        assert!(withheld.contains(&name), "{name} not reported withheld: {document}");
    }
    assert!(!document.to_string().contains("ghp_s3cret"), "a value reached the report");
    assert_eq!(document["sandbox"]["network"], false);
    assert_eq!(document["sandbox"]["writable"], serde_json::json!([sandbox.root.display().to_string()]));
    assert!(document["sandbox"]["landlockAbi"].as_u64().unwrap() >= 1);

    // --sandbox-keep-env lets one through, by name.
    let keep = run(&sandbox, &["--reverify", "--sandbox", "--sandbox-keep-env", "GITHUB_TOKEN", "-q"], &secrets);
    keep.code(1).stdout_contains("FAIL GATES:E1");
    run(&sandbox, &["--sandbox-keep-env", "GITHUB_TOKEN"], &[])
        .code(2)
        .stderr_contains("--sandbox-keep-env needs --sandbox (or UNLAZY_SANDBOX=1)");
}

#[test]
fn the_human_report_and_junit_say_the_checks_ran_confined() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "echo OK", "OK"));
    run(&sandbox, &["--approve", "-q"], &[]).code(0).stdout_ends_with("ALL MET (1 met)\n");
    let human = run(&sandbox, &["--reverify", "--sandbox"], &[]).code(0).into_stdout();
    let first = human.lines().next().unwrap();
    assert!(
        first.starts_with(&format!(
            "SANDBOX: checks run confined: writes only under {} and a private TMPDIR (Landlock ABI ",
            sandbox.root.display()
        )) && first.contains("), no network, "),
        "{human}"
    );
    assert!(human.find("SANDBOX:").unwrap() < human.find("RUN  GATES:G1").unwrap(), "{human}");
    let junit =
        run(&sandbox, &["--reverify", "--sandbox", "--format", "junit"], &[]).code(0).stderr_contains("SANDBOX");
    let xml = junit.into_stdout();
    assert!(xml.contains("<property name=\"gate-check.sandbox\" value=\"confined\"/>"), "{xml}");
    assert!(xml.contains("<property name=\"gate-check.sandbox.network\" value=\"none\"/>"), "{xml}");
    // Unconfined runs carry neither.
    let plain = run(&sandbox, &["--reverify", "--format", "json"], &[]).code(0).stderr_contains("RUN  GATES:G1");
    let plain = plain.stderr_lacks("SANDBOX").stdout_json();
    assert!(plain.get("sandbox").is_none(), "{plain}");
}

#[test]
fn an_approval_made_unconfined_is_used_confined_and_unlazy_sandbox_turns_it_on() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "touch made-here && echo OK", "OK"));
    run(&sandbox, &["--approve", "-q"], &[]).code(0).stdout_ends_with("ALL MET (1 met)\n");
    assert_eq!(sandbox.approval_count(), 1);
    // No new approval is asked for: the same record admits the confined run.
    let out = run(&sandbox, &["--reverify"], &[("UNLAZY_SANDBOX", "1")]).code(0).into_stdout();
    assert!(out.starts_with("SANDBOX: checks run confined"), "{out}");
    assert!(!out.contains("APPROVAL REQUIRED"), "{out}");
    assert_eq!(sandbox.approval_count(), 1);
    // The evidence line is the Node tool's, confined or not.
    assert!(sandbox.read("GATES.md").contains("  EVIDENCE: automatic-evidence=v1; "), "{}", sandbox.read("GATES.md"));
    run(&sandbox, &["--reverify", "-q"], &[("UNLAZY_SANDBOX", "0")])
        .code(0)
        .stdout_is("ALL MET (1 met, reran: 1, 1 of them met before)\n");
    run(&sandbox, &["--reverify"], &[("UNLAZY_SANDBOX", "maybe")])
        .code(2)
        .stderr_contains("UNLAZY_SANDBOX must be 1 (confine every check) or 0, not \"maybe\"");
    // A run left waiting for approval says how to approve it confined.
    sandbox.write("GATES.md", &gate("G2", "echo TWO", "TWO"));
    run(&sandbox, &["--sandbox", "-q"], &[]).code(1).stdout_contains("next: gate-check --approve --sandbox GATES.md");
}

#[test]
fn a_real_unittest_suite_passes_confined() {
    if program("python3").is_none() {
        return;
    }
    let sandbox = Sandbox::new();
    sandbox.write("calc/__init__.py", "");
    sandbox.write("tests/__init__.py", "");
    sandbox
        .write("calc/money.py", "from decimal import Decimal\n\ndef add(a, b):\n    return Decimal(a) + Decimal(b)\n");
    sandbox.write(
        "tests/test_money.py",
        "import tempfile, unittest\nfrom decimal import Decimal\nfrom calc.money import add\n\n\
         class MoneyTest(unittest.TestCase):\n\
         \x20   def test_add(self):\n        self.assertEqual(add('0.1', '0.2'), Decimal('0.3'))\n\n\
         \x20   def test_scratch_file(self):\n\
         \x20       with tempfile.NamedTemporaryFile('w+') as f:\n            f.write('x'); f.flush(); f.seek(0)\n\
         \x20           self.assertEqual(f.read(), 'x')\n\n\
         if __name__ == '__main__':\n    unittest.main()\n",
    );
    // Both tests ran, and the temporary file went to the check's own TMPDIR.
    let suite = "python3 -m unittest discover -v -s tests -t . 2>&1";
    sandbox.write("GATES.md", &gate("T1", suite, "/test_scratch_file[^\\n]*ok\\n[\\s\\S]*^Ran 2 tests[\\s\\S]*^OK$/m"));
    run(&sandbox, &["--approve", "--sandbox", "-q"], &[]).code(0).stdout_ends_with("ALL MET (1 met)\n");
    // The same suite with a failing test fails confined, as it should.
    sandbox.write("calc/money.py", "from decimal import Decimal\n\ndef add(a, b):\n    return Decimal(a)\n");
    run(&sandbox, &["--reverify", "--sandbox", "-q"], &[]).code(1).stdout_contains("FAIL GATES:T1");
}

#[test]
fn without_user_namespaces_the_run_fails_closed_and_runs_nothing() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "touch ran && echo OK", "OK"));
    let before = sandbox.read("GATES.md");
    let binary = assert_cmd::cargo::cargo_bin("gate-check");
    let script = format!(
        "echo 0 > /proc/sys/user/max_user_namespaces && exec '{}' --approve --sandbox GATES.md",
        binary.display()
    );
    // The positive first: in the same namespace with the limit left alone, it runs.
    let allowed = format!("exec '{}' --approve --sandbox -q GATES.md", binary.display());
    let unshare = |shell: &str| {
        let mut command = assert_cmd::Command::new("unshare");
        command
            .args(["--user", "--map-root-user", "sh", "-c", shell])
            .current_dir(&sandbox.root)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("UNLAZY_APPROVAL_DIR", &sandbox.approvals);
        command
    };
    sandbox.run_with(&mut unshare(&allowed)).code(0).stdout_ends_with("ALL MET (1 met)\n");
    std::fs::remove_file(sandbox.path("ran")).unwrap();
    sandbox.write("GATES.md", &before);
    sandbox.run_with(&mut unshare(&script)).code(2).stderr_is(
        "gate-check: error: sandbox unavailable: cannot create private user, network, mount and IPC namespaces: No \
         space left on device (os error 28)\n",
    );
    assert!(!exists(&sandbox.path("ran")), "a check ran unconfined");
    assert_eq!(sandbox.read("GATES.md"), before, "the ledger changed");
}
