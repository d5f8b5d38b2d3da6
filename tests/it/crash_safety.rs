//! Kills gate-check with SIGKILL at pseudo-random moments while it writes
//! evidence back, 200 times, and checks that the ledger is always exactly
//! one of the states a complete write-back sequence passes through: never a
//! torn or mixed file, and that the next run leaves no temp file behind.

use std::time::{Duration, Instant};

use crate::common::Sandbox;

const GATES: usize = 4;
/// Fewer under wine, where every start of the binary costs far more.
const ROUNDS: usize = if cfg!(windows) { 40 } else { 200 };

/// A ledger whose rewrite is slow enough to be interrupted: a large block of
/// prose sits between the gates. The second check pauses for longer than
/// the write-back delay, so results reach the file in two batches and the
/// kills can land between, and inside, partial write-backs.
fn ledger() -> String {
    let padding = "Lorem ipsum dolor sit amet, consectetur adipiscing elit.\n".repeat(1_000);
    let mut text = String::from("# Gates: crash safety\n\n");
    for i in 0..GATES {
        // cmd.exe waits in whole seconds.
        let pause = match (i, cfg!(windows)) {
            (1, true) => "ping -n 2 127.0.0.1 > nul& ",
            (1, false) => "sleep 0.12; ",
            _ => "",
        };
        let check = format!("{pause}echo marker-{i}");
        text.push_str(&format!(
            "- [ ] G{i}: gate {i}\n  CHECK: {check}\n  EXPECT: marker-{i}\n  EVIDENCE: pending\n\n{padding}\n"
        ));
    }
    text
}

/// The ledger after the first `done` gates have been written back: each
/// gate's two changed lines come from `finished`, everything else from
/// `original`.
fn state_after(original: &str, finished: &str, done: usize) -> String {
    let original: Vec<&str> = original.split_inclusive('\n').collect();
    let finished: Vec<&str> = finished.split_inclusive('\n').collect();
    assert_eq!(original.len(), finished.len());
    let mut gate = 0;
    let mut out = String::new();
    let mut take_finished = false;
    for (before, after) in original.iter().zip(&finished) {
        if before.starts_with("- [ ] G") {
            take_finished = gate < done;
            gate += 1;
        }
        out.push_str(if take_finished && before != after { after } else { before });
    }
    out
}

/// A small deterministic generator, so a failure can be replayed.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % bound.max(1)
    }
}

#[test]
fn sigkill_during_write_back_never_tears_the_ledger() {
    let sandbox = Sandbox::new();
    let original = ledger();
    sandbox.write("GATES.md", &original);

    // One complete, approved run gives the final state; a second, timed
    // run of the already-approved ledger gives the length of the window.
    sandbox.run(&["--approve", "GATES.md"]).code(0).stdout_contains("\nALL MET (");
    let finished = sandbox.read("GATES.md");
    // The median of three timed runs, so one slow cold start cannot make the
    // window so wide that most kills land after the run has ended.
    let mut timings: Vec<Duration> = (0..3)
        .map(|_| {
            sandbox.write("GATES.md", &original);
            let started = Instant::now();
            sandbox
                .run_with(sandbox.cmd().arg("GATES.md"))
                .code(0)
                .stdout_contains("\nGATES.md: ")
                .stdout_contains("\nALL MET (");
            assert_eq!(sandbox.read("GATES.md"), finished);
            started.elapsed()
        })
        .collect();
    timings.sort();
    let full_run = timings[1];
    let states: Vec<String> = (0..=GATES).map(|done| state_after(&original, &finished, done)).collect();
    assert_eq!(states[GATES], finished);

    let window = (full_run.as_micros() as u64).max(1_000);
    let mut random = Lcg(0x5eed);
    let mut interrupted = 0;
    let mut seen = vec![0usize; GATES + 1];
    for round in 0..ROUNDS {
        sandbox.write("GATES.md", &original);
        let mut child = sandbox
            .std_cmd()
            .arg("GATES.md")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(random.below(window)));
        let _ = child.kill();
        let status = child.wait().unwrap();
        if !status.success() {
            interrupted += 1;
        }
        let now = sandbox.read("GATES.md");
        let matched = states.iter().position(|s| *s == now);
        assert!(matched.is_some(), "round {round}: ledger is not a whole state ({} bytes)", now.len());
        seen[matched.unwrap_or_default()] += 1;
    }
    eprintln!("rounds ending in each state (gates written 0..={GATES}): {seen:?}");
    // Temp files of killed write-backs are gate-check's to clean: the next
    // run removes them under the ledger's lock, so none survives it.
    let leftovers = || -> Vec<String> {
        std::fs::read_dir(&sandbox.root)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".GATES.md.") && n.ends_with(".tmp"))
            .collect()
    };
    eprintln!("temp files left by {ROUNDS} killed runs before the next run: {}", leftovers().len());
    sandbox.run_with(sandbox.cmd().args(["--reverify", "GATES.md"])).code(0).stdout_contains("\nALL MET (");
    assert_eq!(leftovers(), Vec::<String>::new(), "temp files survived the next run");
    // The kills must actually land inside runs, or the test proves nothing.
    assert!(interrupted > ROUNDS / 8, "only {interrupted} of {ROUNDS} runs were interrupted");
}
