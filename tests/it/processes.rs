//! Process containment through the real binary: interrupts terminate the
//! running checks and write nothing for them, a group id is never signalled
//! after its leader could be reused, no descendant outlives its check (not
//! even one that left the group with setsid), checks have no controlling
//! terminal, and a background process holding the output open fails the
//! check quickly with the output it printed.

use std::fs;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{gate, outcome, Sandbox};
use crate::core_support::process_gone;

/// Waits until `path` holds a pid, and returns it.
fn wait_for_pid(path: &Path, limit: Duration) -> u32 {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(pid) = fs::read_to_string(path).ok().and_then(|text| text.trim().parse().ok()) {
            return pid;
        }
        assert!(Instant::now() < deadline, "{} never got a pid", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for `child` to exit within `limit`, killing it if it does not.
fn wait_within(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("gate-check did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn read_all(pipe: Option<impl Read>) -> String {
    let mut text = String::new();
    if let Some(mut pipe) = pipe {
        pipe.read_to_string(&mut text).expect("read output");
    }
    text
}

/// `program` with the sandbox's working directory and environment, to wrap
/// gate-check in another tool.
fn wrapper(sandbox: &Sandbox, program: &str) -> Command {
    let template = sandbox.std_cmd();
    let mut command = Command::new(program);
    command.current_dir(&sandbox.root).env("GATE_CHECK", assert_cmd::cargo::cargo_bin("gate-check"));
    for (key, value) in template.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    command
}

fn evidence(sandbox: &Sandbox) -> String {
    let ledger = sandbox.read("GATES.md");
    ledger.lines().find_map(|l| l.strip_prefix("  EVIDENCE: ")).unwrap_or_default().to_string()
}

/// Starts `gate-check --approve` on a ledger whose second check runs until
/// killed, signals gate-check once that check is running, and checks the
/// outcome: exit 128 + signal, the running gate listed and its lines
/// unchanged, the gate not yet started left alone, no check process left,
/// and the result that finished before the signal written.
fn interrupt_run(signal: i32, check: &str, limit: Duration) {
    let sandbox = Sandbox::new();
    let (running, later) = (gate("A", check, "never"), gate("B", "touch b.ran; echo b-ran", "b-ran"));
    let ledger = format!("{}\n{running}\n{later}", gate("Z", "echo z-ok", "z-ok"));
    sandbox.write("GATES.md", &ledger);
    let mut child = sandbox.std_cmd().arg("--approve").stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let worker = wait_for_pid(&sandbox.path("worker.pid"), Duration::from_secs(20));
    let started = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::try_from(signal).unwrap(),
    )
    .unwrap();
    let status = wait_within(&mut child, limit);
    let (out, err) = (read_all(child.stdout.take()), read_all(child.stderr.take()));
    assert_eq!(status.code(), Some(128 + signal), "signal {signal}: {out}{err}");
    assert!(started.elapsed() < limit, "took {:?}", started.elapsed());
    assert!(out.contains("  INTERRUPTED GATES:A: outcome A\n"), "{out}");
    assert!(out.contains("running check(s) stopped; their gates were not updated"), "{out}");
    assert!(!out.contains("FAIL") && !out.contains("PASS GATES:A"), "{out}");
    assert!(!sandbox.path("b.ran").exists(), "gate B started after the interrupt: {out}");
    assert!(process_gone(worker, Duration::from_secs(5)), "check process {worker} survived signal {signal}");
    assert!(out.contains("PASS GATES:Z"), "{out}");
    let after = sandbox.read("GATES.md");
    assert!(after.starts_with("- [x] Z: outcome Z\n"), "the finished result was not kept: {after}");
    assert!(after.contains(&running) && after.ends_with(&later), "an interrupted gate changed: {after}");
}

#[test]
fn interrupts_terminate_running_checks_and_write_nothing() {
    let check = "sleep 300 & echo $! > worker.pid; wait";
    for (signal, code) in [(2, 130), (15, 143), (1, 129)] {
        assert_eq!(128 + signal, code);
        interrupt_run(signal, check, Duration::from_secs(10));
    }
}

#[test]
fn an_interrupt_escalates_to_sigkill_for_checks_that_ignore_sigterm() {
    // The shell and its child both ignore SIGTERM; only SIGKILL ends them.
    let check = "trap '' TERM; sh -c 'trap \"\" TERM; echo $$ > worker.pid; while :; do sleep 1; done'";
    interrupt_run(15, check, Duration::from_secs(10));
}

#[test]
fn a_passing_check_leaves_no_background_process() {
    let sandbox = Sandbox::new();
    let checks = [
        // An ordinary background child, silenced so it holds no pipe.
        "sleep 300 >/dev/null 2>&1 & echo $! > bg.pid; echo ok",
        // One that left the process group with setsid.
        "setsid sleep 300 >/dev/null 2>&1 & echo $! > bg.pid; echo ok",
        // One whose parent exited first, so it was re-parented.
        "(setsid sleep 300 >/dev/null 2>&1 & echo $! > bg.pid); echo ok",
    ];
    for check in checks {
        let _ = fs::remove_file(sandbox.path("bg.pid"));
        sandbox.write("GATES.md", &gate("A", check, "ok"));
        sandbox
            .run_with(sandbox.cmd().arg("--approve").timeout(Duration::from_secs(60)))
            .code(0)
            .stdout_contains("PASS GATES:A");
        let pid = wait_for_pid(&sandbox.path("bg.pid"), Duration::from_secs(1));
        assert!(process_gone(pid, Duration::from_secs(5)), "{check}: background process {pid} outlived the check");
    }
}

#[test]
fn a_timeout_also_kills_descendants_that_left_the_group() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("A", "setsid sleep 300 >/dev/null 2>&1 & echo $! > bg.pid; sleep 300", "never"));
    let started = Instant::now();
    sandbox
        .run_with(sandbox.cmd().args(["--approve", "--timeout", "1"]).timeout(Duration::from_secs(60)))
        .code(1)
        .stdout_contains("timed out after 1s;");
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());
    let pid = wait_for_pid(&sandbox.path("bg.pid"), Duration::from_secs(1));
    assert!(process_gone(pid, Duration::from_secs(5)), "setsid escapee {pid} outlived the timed-out check");
}

#[test]
fn concurrent_checks_keep_their_own_escaped_descendants() {
    let sandbox = Sandbox::new();
    // B's server leaves its session and is re-parented to gate-check while B
    // still needs it; A finishing meanwhile must not take it for its own.
    let server = "(setsid sleep 300 >/dev/null 2>&1 & echo $! > server.pid); \
                  sleep 2; kill -0 \"$(cat server.pid)\" && echo server-alive";
    let ledger = format!("{}\n{}", gate("B", server, "server-alive"), gate("A", "sleep 1; echo a-done", "a-done"));
    sandbox.write("GATES.md", &ledger);
    sandbox
        .run_with(sandbox.cmd().args(["--approve", "--jobs", "2"]).timeout(Duration::from_secs(60)))
        .code(0)
        .stdout_contains("PASS GATES:B")
        .stdout_contains("PASS GATES:A");
    let pid = wait_for_pid(&sandbox.path("server.pid"), Duration::from_secs(1));
    assert!(process_gone(pid, Duration::from_secs(5)), "B's server {pid} outlived B");
}

#[test]
fn checks_have_no_controlling_terminal() {
    let sandbox = Sandbox::new();
    let check = "if (printf '\\033]0;check-owned-the-title\\007' >/dev/tty) 2>/dev/null; then echo tty-open; \
                 else echo no-tty; fi; read -r line </dev/tty 2>/dev/null; echo finished";
    sandbox.write("GATES.md", &gate("A", check, "/no-tty\\nfinished/"));
    let started = Instant::now();
    // script(1) gives gate-check a pseudo-terminal as its controlling terminal.
    let output = wrapper(&sandbox, "script")
        .args(["-qec", "\"$GATE_CHECK\" --approve --timeout 20", "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .expect("script(1) from util-linux is required for this test");
    let (code, out, err) = outcome(&output);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("PASS GATES:A"), "{out}");
    assert!(!out.contains("\u{1b}]0;check-owned"), "a check wrote to the terminal directly: {out:?}");
    assert!(started.elapsed() < Duration::from_secs(15), "a check reading /dev/tty hung: {:?}", started.elapsed());
}

#[test]
fn a_background_process_holding_the_output_fails_the_check_quickly() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("A", "sleep 300 & echo $! > bg.pid; echo early", "early"));
    let started = Instant::now();
    sandbox
        .run_with(sandbox.cmd().args(["--approve", "--timeout", "60"]).timeout(Duration::from_secs(90)))
        .code(1)
        .stdout_contains("FAIL GATES:A")
        .stdout_contains("the check exited 0 but a background process kept its output open;")
        // The output so far is kept.
        .stdout_contains("exit=0; EXPECT=not matched; output=early");
    assert!(started.elapsed() < Duration::from_secs(20), "took {:?}", started.elapsed());
    assert_eq!(evidence(&sandbox), "pending");
    let pid = wait_for_pid(&sandbox.path("bg.pid"), Duration::from_secs(1));
    assert!(process_gone(pid, Duration::from_secs(5)), "the holder {pid} outlived the check");
}

#[test]
fn a_check_that_closes_its_output_early_is_judged_when_it_exits() {
    // gate-check holds the pipes' write ends until the leader exits: the
    // output read before the close counts, and so does the exit status that
    // comes after it.
    let sandbox = Sandbox::new();
    let ledger = [
        gate("A", "echo said-it; exec >&- 2>&-; sleep 0.3; exit 0", "said-it"),
        gate("B", "echo said-it; exec >&- 2>&-; sleep 0.3; exit 3", "said-it"),
    ]
    .join("\n");
    sandbox.write("GATES.md", &ledger);
    sandbox
        .run_with(sandbox.cmd().args(["--approve"]))
        .code(1)
        .stdout_contains("PASS GATES:A")
        .stdout_contains("FAIL GATES:B")
        .stdout_contains("exit=3; EXPECT=matched; output=said-it");
}

#[test]
fn a_timed_out_check_keeps_the_output_it_printed() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("A", "echo before-the-hang; setsid sleep 300", "never"));
    sandbox
        .run_with(sandbox.cmd().args(["--approve", "--timeout", "1"]).timeout(Duration::from_secs(60)))
        .code(1)
        .stdout_contains("timed out after 1s;")
        .stdout_contains("output=before-the-hang");
}

/// Runs `script` as root of fresh user and PID namespaces, where the test
/// can choose the next pid (`ns_last_pid`) and so force a pid to be reused.
fn in_pid_namespace(sandbox: &Sandbox, script: &str) -> (i32, String, String) {
    let output = wrapper(sandbox, "unshare")
        .args(["--user", "--map-root-user", "--pid", "--fork", "--mount-proc", "sh", "-c", script])
        .output()
        .expect("unshare(1) from util-linux is required for this test");
    outcome(&output)
}

#[test]
fn a_group_is_never_signalled_after_its_leader_could_be_reused() {
    let sandbox = Sandbox::new();
    // The check's shell exits at once; a setsid'd sleep keeps its output
    // open, so gate-check is still waiting for EOF, and later kills.
    sandbox.write("GATES.md", &gate("A", "setsid sleep 30 & echo $$ > leader.pid", "never"));
    let script = r#"
        "$GATE_CHECK" --approve --timeout 4 > run.txt 2>&1 &
        run=$!
        i=0; until [ -s leader.pid ]; do sleep 0.05; i=$((i+1)); [ $i -lt 400 ] || exit 91; done
        leader=$(cat leader.pid)
        # Until the leader has exited (reaped, or a zombie kept on purpose).
        i=0; while [ -e /proc/$leader ] && [ "$(cut -d' ' -f3 /proc/$leader/stat 2>/dev/null)" != Z ]; do
            sleep 0.05; i=$((i+1)); [ $i -lt 400 ] || exit 92
        done
        # The next process gets the leader's pid if it is free, and makes it
        # the id of a new group of its own: an unrelated bystander.
        echo $((leader - 1)) > /proc/sys/kernel/ns_last_pid || exit 93
        setsid sleep 60 &
        bystander=$!
        wait $run
        sleep 0.3
        if kill -0 $bystander 2>/dev/null; then echo "bystander $bystander alive (leader was $leader)"; else
            echo "bystander $bystander KILLED (leader was $leader)"; fi
    "#;
    let (code, out, err) = in_pid_namespace(&sandbox, script);
    assert_eq!(code, 0, "unshare --user --pid must work here (unprivileged user namespaces): {out}{err}");
    assert!(out.contains("alive"), "gate-check signalled a reused group: {out}{err}");
    let run = sandbox.read("run.txt");
    assert!(run.contains("FAIL GATES:A"), "{run}");
}

#[test]
fn a_check_starts_in_its_own_session_with_default_signals_and_an_open_mask() {
    use std::os::unix::process::CommandExt;

    let sandbox = Sandbox::new();
    // The shell reports its session, its pid, its blocked signals and which
    // of the standard signals (1 to 31, the low 31 bits of SigIgn) it
    // ignores.
    let check = "s=/proc/$$/status; blocked=$(awk '/^SigBlk/{print $2}' $s); ignored=0x$(awk '/^SigIgn/{print $2}' $s); \
                 echo \"sid=$(cut -d' ' -f6 /proc/$$/stat) pid=$$ blocked=$blocked ignored=$(( ignored & 0x7fffffff ))\"";
    sandbox.write("GATES.md", &gate("A", check, "/^sid=(\\d+) pid=\\1 blocked=0+ ignored=0\\n$/"));
    // gate-check starts as `nohup` and a shell's background job would start
    // it: SIGHUP, SIGINT and SIGQUIT ignored, and here SIGUSR1 and SIGTERM
    // blocked too. No check inherits any of it (nor SIGPIPE, which the Rust
    // runtime ignores), confined or not.
    let started_as_a_background_job = |command: &mut std::process::Command| {
        // SAFETY: between fork and exec the hook only changes this
        // process's signal dispositions and mask.
        unsafe {
            command.pre_exec(|| {
                use nix::sys::signal::{
                    sigaction, sigprocmask, SaFlags, SigAction, SigHandler, SigSet, SigmaskHow, Signal,
                };
                let ignore = SigAction::new(SigHandler::SigIgn, SaFlags::empty(), SigSet::empty());
                for signal in [Signal::SIGHUP, Signal::SIGINT, Signal::SIGQUIT] {
                    sigaction(signal, &ignore)?;
                }
                let mut blocked = SigSet::empty();
                blocked.add(Signal::SIGUSR1);
                blocked.add(Signal::SIGTERM);
                sigprocmask(SigmaskHow::SIG_BLOCK, Some(&blocked), None)?;
                Ok(())
            });
        }
    };
    for confined in [false, true] {
        let mut command = sandbox.std_cmd();
        command.args(["--approve", "--show-output"]);
        if confined {
            command.arg("--sandbox");
        }
        started_as_a_background_job(&mut command);
        let output = command.output().expect("run gate-check");
        let (code, out, err) = outcome(&output);
        assert_eq!(code, 0, "confined: {confined}\n{out}{err}");
        assert!(out.contains("PASS GATES:A"), "confined: {confined}\n{out}");
        sandbox.write("GATES.md", &gate("A", check, "/^sid=(\\d+) pid=\\1 blocked=0+ ignored=0\\n$/"));
    }
}

#[test]
fn a_check_whose_directory_is_gone_when_it_starts_fails_with_the_reason() {
    let sandbox = Sandbox::new();
    fs::create_dir(sandbox.path("sub")).expect("create sub");
    // The first check removes the second one's directory, after the run
    // has checked that it exists: the start itself fails, and says why.
    let ledger =
        format!("{}  CWD: .\n{}  CWD: sub\n", gate("A", "rmdir sub && echo gone", "gone"), gate("B", "true", "/^$/"));
    sandbox.write("GATES.md", &ledger);
    let output = sandbox.std_cmd().arg("--approve").output().expect("run gate-check");
    let (code, out, err) = outcome(&output);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("PASS GATES:A"), "{out}");
    assert!(out.contains("FAIL GATES:B"), "{out}");
    assert!(out.contains("failed: No such file or directory"), "{out}");
}
