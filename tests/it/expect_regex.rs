//! EXPECT regular expressions through the real binary: which ledgers the validator accepts,
//! that matching gives JavaScript's answer where a step budget used to get in the way, and
//! that one check's regex memory stays bounded.

#[cfg(target_os = "linux")]
use crate::common::outcome;
use crate::common::{gate, Run, Sandbox};

/// `--status` on a ledger of one gate per EXPECT, checked.
fn status_of_expects(expects: &[&str]) -> Run {
    let sandbox = Sandbox::new();
    let ledger: String = expects.iter().enumerate().map(|(i, expect)| gate(&format!("G{i}"), "true", expect)).collect();
    sandbox.write("GATES.md", &ledger);
    sandbox.run(&["--status"])
}

#[test]
fn patterns_javascript_accepts_do_not_refuse_the_ledger() {
    for expect in [
        r"/\p{Combining_Mark}/u",
        r"/\p{gc=Combining_Mark}/v",
        r"/\p{General_Category=Combining_Mark}/u",
        r"/a{2147483648,2147483647}/",
        r"/[\k]/",
    ] {
        // Accepted: every gate is simply unmet.
        status_of_expects(&[expect]).code(1).stdout_contains("\nUNMET: 1 (met: 0)\n");
    }
}

#[test]
fn patterns_javascript_rejects_refuse_the_ledger_with_file_and_line() {
    for expect in [r"/[^\q{ab}--\q{ab}]/v", r"/[^[\q{ab}--\q{ab}]]/v", r"/(?<a>)[\k]/"] {
        // The bad pattern is the second gate's, whose line is 5.
        status_of_expects(&["plain", expect])
            .code(2)
            .stderr_contains("GATES.md:5: error: gate G1: invalid EXPECT regex");
    }
}

/// A check that prints 1 MiB of `a` (the output limit), no newline.
#[cfg(target_os = "linux")]
const ONE_MIB_OF_A: &str = r"head -c 1048576 /dev/zero | tr '\0' a";

#[cfg(target_os = "linux")]
#[test]
fn backtracking_memory_is_bounded_whatever_the_pattern() {
    // Without a bound the first pattern keeps hundreds of megabytes of backtracking state
    // on 1 MiB of output, and the second 1.5 GB on two characters (a huge count of empty
    // iterations, now decided as one); under a 128 MiB address-space cap either aborted
    // the process. Their
    // endings are alternations so that no required literal lets the output be ruled out
    // before the backtracker runs.
    let sandbox = Sandbox::new();
    let ledger =
        gate("G1", ONE_MIB_OF_A, r"/^(a|aa)*\1(?:b|c)$/") + &gate("G2", "echo hi", r"/(?:()){2147483647}\1(?:x|y)/");
    sandbox.write("GATES.md", &ledger);
    let binary = assert_cmd::cargo::cargo_bin("gate-check");
    let script = format!("ulimit -v 131072 && exec '{}' --approve", binary.display());
    // The shell applies the cap, then becomes gate-check with the sandbox's environment.
    let mut shell = std::process::Command::new("/bin/sh");
    shell.arg("-c").arg(script).current_dir(&sandbox.root);
    for (key, value) in sandbox.std_cmd().get_envs() {
        match value {
            Some(value) => shell.env(key, value),
            None => shell.env_remove(key),
        };
    }
    let (code, out, err) = outcome(&shell.output().unwrap());
    assert_eq!(code, 1, "stdout: {out}\nstderr: {err}");
    assert_eq!(out.matches("EXPECT regex exceeded its memory budget").count(), 1, "{out}");
    // The huge count of empty iterations is JavaScript's one iteration (issue 19): decided, not bounded.
    assert!(
        out.contains(
            "  FAIL GATES:G2: outcome G2
       exit=0; EXPECT=not matched; output=hi
"
        ),
        "{out}"
    );
    assert!(!sandbox.read("GATES.md").contains("[x]"), "a bound hit never passes");
}

#[test]
fn alternatives_the_linear_engine_answers_do_not_wait_on_the_step_budget() {
    // JavaScript says true for both. The first alternatives need the backtracker (a
    // backreference; a count too large for the linear engine) and exhaust its budget on
    // this output, but the last alternative, `c`, is there to be found.
    let sandbox = Sandbox::new();
    // `a` repeated, then `c`: cmd.exe prints the run of `a` from a file.
    let a_then_c = |count: usize| {
        let name = format!("a{count}.txt");
        std::fs::write(sandbox.path(&name), "a".repeat(count)).unwrap();
        if cfg!(windows) {
            format!("type {name}& echo c")
        } else {
            format!("head -c {count} /dev/zero | tr '\\0' a; echo c")
        }
    };
    let ledger =
        gate("G1", &a_then_c(12000), r"/^(a+)\1*b$|c/") + &gate("G2", &a_then_c(30), r"/(a|a)*b{2147483647}|c/");
    sandbox.write("GATES.md", &ledger);
    sandbox.run_with(sandbox.cmd().arg("--approve")).code(0).stdout_contains("ALL MET");
}

#[test]
fn status_validates_patterns_without_compiling_them() {
    // Each of these takes the regex crate about a second to compile (release build), but
    // parsing one is cheap; --status only needs to know that they are valid.
    let sandbox = Sandbox::new();
    let ledger: String = (0..10).map(|i| gate(&format!("G{i}"), "true", &format!(r"/x{i}\p{{L}}{{2000}}/u"))).collect();
    sandbox.write("GATES.md", &ledger);
    let started = std::time::Instant::now();
    sandbox.run(&["--status"]).code(1).stdout_contains("\nUNMET: ");
    let elapsed = started.elapsed();
    assert!(elapsed < std::time::Duration::from_secs(3), "--status took {elapsed:?}");
}
