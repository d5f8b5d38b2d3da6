//! Benchmark (not a test): pathological EXPECT patterns against 1 MiB outputs, each timed
//! beside a plain substring search of the same output.
//! Run with `cargo bench -p js-regex --bench regex-bench`.

use std::time::{Duration, Instant};

use js_regex::{Expectation, MatchError, STEP_BUDGET};

const MIB: usize = 1 << 20;

struct Case {
    label: &'static str,
    expect: &'static str,
    output: String,
    /// Run on the backtracker even where the linear engine would answer.
    force_backtracker: bool,
}

fn timed<T>(run: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let value = run();
    (value, start.elapsed())
}

fn describe(result: &Result<bool, MatchError>) -> String {
    match result {
        Ok(found) => format!("match={found}"),
        Err(error) => error.to_string(),
    }
}

fn main() {
    let a_run = "a".repeat(MIB - 1) + "!";
    let x_run = "x".repeat(MIB);
    let words = "lorem ipsum dolor ".repeat(MIB / 18 + 1)[..MIB].to_string();
    let cases = vec![
        Case { label: "nested plus", expect: "/(a+)+$/", output: a_run.clone(), force_backtracker: false },
        Case {
            label: "overlapping alternation",
            expect: "/(a|aa)*b/",
            output: a_run.clone(),
            force_backtracker: false,
        },
        Case { label: "doubled plus", expect: "/(x+x+)+y/", output: x_run.clone(), force_backtracker: false },
        Case {
            label: "nested star, multiline",
            expect: "/^(\\d+)*$/m",
            output: "1".repeat(MIB - 1) + "x",
            force_backtracker: false,
        },
        Case {
            label: "case-insensitive literal",
            expect: "/TEST RESULT: OK/i",
            output: words.clone(),
            force_backtracker: false,
        },
        Case { label: "backreference", expect: "/(\\w+) \\1 \\1/", output: words.clone(), force_backtracker: false },
        Case {
            label: "backreference, iu",
            expect: "/(\\w+) \\1 \\1/iu",
            output: words.clone(),
            force_backtracker: false,
        },
        Case {
            label: "backreference, catastrophic",
            expect: "/^(a+)+\\1$/",
            output: a_run.clone(),
            force_backtracker: false,
        },
        Case {
            label: "lookahead, catastrophic",
            expect: "/^(?=(a|aa)*b)/",
            output: a_run.clone(),
            force_backtracker: false,
        },
        Case {
            label: "nested plus on backtracker",
            expect: "/(a+)+$/",
            output: a_run.clone(),
            force_backtracker: true,
        },
        Case { label: "lookbehind scan", expect: "/(?<=dolor )zzz/", output: words.clone(), force_backtracker: false },
    ];
    println!("{:<30} {:>12} {:>12}  {:<14} result", "pattern", "regex", "substring", "engine");
    let mut total = Duration::ZERO;
    for case in &cases {
        let Ok(Expectation::Pattern(pattern)) = Expectation::parse(case.expect) else {
            println!("{:<30} does not compile", case.label);
            continue;
        };
        let (result, regex_time) = if case.force_backtracker {
            timed(|| pattern.matches_with_backtracker(&case.output, STEP_BUDGET))
        } else {
            timed(|| Expectation::Pattern(pattern.clone()).matches(&case.output))
        };
        let needle = Expectation::Substring("needle-not-present".to_string());
        let (_, substring_time) = timed(|| needle.matches(&case.output));
        let engine = if case.force_backtracker {
            "backtracking".to_string()
        } else {
            format!("{:?}", pattern.engine_for(&case.output)).to_lowercase()
        };
        total += regex_time + substring_time;
        println!(
            "{:<30} {:>10.2?} {:>12.2?}  {:<14} {}  {}",
            case.label,
            regex_time,
            substring_time,
            engine,
            describe(&result),
            case.expect
        );
    }
    println!("total {total:.2?} over {} cases of {} bytes each", cases.len(), MIB);
}
