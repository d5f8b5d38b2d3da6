//! `--jobs N`: rolling concurrency with results reported in ledger order,
//! correct per-gate evidence across several ledgers, and a sequential
//! default. Concurrency is proven by what the checks observe (markers and
//! timestamps they write), never by how long a run took.

use crate::common::{gate, sh, Sandbox};
use gate_check::digest::sha256_hex;

#[test]
fn results_are_reported_in_ledger_order_when_later_gates_finish_first() {
    let sandbox = Sandbox::new();
    // G1 can only pass once G3 has run, so it necessarily finishes last.
    let wait_for_g3 = if cfg!(windows) {
        "(for /l %i in (1,1,30) do @if not exist g3.done ping -n 2 127.0.0.1 > nul)& if exist g3.done echo one-after-three"
    } else {
        "i=0; while [ ! -f g3.done ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; [ -f g3.done ] && echo one-after-three"
    };
    let ledger = [
        gate("G1", wait_for_g3, "one-after-three"),
        gate("G2", "echo two", "two"),
        gate("G3", &format!("{} && echo three", sh::touch("g3.done")), "three"),
    ]
    .join("\n");
    sandbox.write("GATES.md", &ledger);
    let out = sandbox.run(&["--approve", "--jobs", "3"]).code(0).into_stdout();
    let order: Vec<&str> = out.lines().filter(|l| l.starts_with("  PASS ") || l.starts_with("  FAIL ")).collect();
    assert_eq!(
        order,
        ["  PASS GATES:G1: outcome G1", "  PASS GATES:G2: outcome G2", "  PASS GATES:G3: outcome G3"],
        "{out}"
    );
    assert!(out.contains("ALL MET (3 met)"), "{out}");
    assert_eq!(sandbox.read("GATES.md").matches("  EVIDENCE: automatic-evidence=v1;").count(), 3);
}

#[test]
fn every_gate_gets_its_own_evidence_with_eight_jobs_over_several_ledgers() {
    let sandbox = Sandbox::new();
    let ledgers = [
        (".unlazy/multi/GATES.md", "root", 3),
        (".unlazy/multi/gates/leaf-a.md", "a", 6),
        (".unlazy/multi/gates/leaf-b.md", "b", 6),
    ];
    let mut originals = Vec::new();
    for (path, name, count) in ledgers {
        let mut text = format!("# {name}\n\n");
        for index in 1..=count {
            text.push_str(&gate(
                &format!("G{index}"),
                &if cfg!(windows) {
                    format!("echo out-{name}-{index}")
                } else {
                    format!("sleep 0.1; echo out-{name}-{index}")
                },
                &format!("out-{name}-{index}"),
            ));
            text.push('\n');
        }
        text.push_str("- [ ] M1: a manual gate stays manual\n  EVIDENCE: pending\n");
        sandbox.write(path, &text);
        originals.push(text);
    }
    sandbox
        .run(&["--approve", "--jobs", "8", "--scope", "multi"])
        .code(1)
        .stdout_contains("UNMET: 3 (met: 15) [scope multi]")
        .stdout_contains("  GATES:M1, leaf-a:M1, leaf-b:M1");

    for ((path, name, count), original) in ledgers.iter().zip(&originals) {
        let text = sandbox.read(path);
        for index in 1..=*count {
            let id = format!("G{index}");
            let block: Vec<&str> =
                text.lines().skip_while(|l| !l.starts_with(&format!("- [x] {id}: "))).take(4).collect();
            assert_eq!(block.len(), 4, "{path}: {id} not checked:\n{text}");
            let expected_output = sha256_hex(format!("out-{name}-{index}{}", sh::EOL).as_bytes());
            assert!(
                block[3].starts_with("  EVIDENCE: automatic-evidence=v1; definition-sha256=")
                    && block[3]
                        .contains(&format!("; exit=0; EXPECT=matched; output-sha256={expected_output}; output-bytes=")),
                "{path}: {id} carries someone else's evidence: {}",
                block[3]
            );
        }
        // Nothing but boxes and evidence lines changed.
        let strip = |t: &str| -> String {
            t.lines()
                .filter(|l| !l.starts_with("  EVIDENCE:"))
                .map(|l| l.replacen("- [x]", "- [ ]", 1) + "\n")
                .collect()
        };
        assert_eq!(strip(&text), strip(original), "{path}");
    }
    // --status recomputes every definition digest without running anything.
    sandbox
        .run_with(sandbox.cmd().args(["--status", "--scope", "multi"]))
        .code(1)
        .stdout_contains("UNMET: 3 (met: 15) [scope multi]");
}

#[cfg_attr(
    windows,
    ignore = "its checks stamp their start and end with date +%s%N, which cmd.exe has no counterpart for"
)]
#[test]
fn the_default_runs_one_check_at_a_time() {
    let sandbox = Sandbox::new();
    let stamp = |id: &str| {
        format!(
            "echo \"start {id} $(date +%s%N)\" >> times.log; sleep 0.2; echo \"end {id} $(date +%s%N)\" >> times.log; echo done-{id}"
        )
    };
    let ledger: Vec<String> =
        (1..=4).map(|i| gate(&format!("G{i}"), &stamp(&format!("G{i}")), &format!("done-G{i}"))).collect();
    sandbox.write("GATES.md", &ledger.join("\n"));
    sandbox.run_with(sandbox.cmd().arg("--approve")).code(0).stdout_contains("\nALL MET (");

    let log = sandbox.read("times.log");
    let events: Vec<(String, String, u128)> = log
        .lines()
        .map(|line| {
            let parts: Vec<&str> = line.split(' ').collect();
            (parts[0].to_string(), parts[1].to_string(), parts[2].parse().expect("nanoseconds"))
        })
        .collect();
    assert_eq!(events.len(), 8, "{log}");
    for (index, pair) in events.chunks(2).enumerate() {
        let id = format!("G{}", index + 1);
        assert_eq!((pair[0].0.as_str(), pair[0].1.as_str()), ("start", id.as_str()), "{log}");
        assert_eq!((pair[1].0.as_str(), pair[1].1.as_str()), ("end", id.as_str()), "{log}");
    }
    for window in events.windows(2) {
        assert!(window[0].2 <= window[1].2, "checks overlapped:\n{log}");
    }
}
