//! The end of a failed check's captured output, for people and machines
//! diagnosing it: the last lines, within a line and a byte budget, and
//! whether anything was cut. Pure; callers sanitize what they print.

use serde::Serialize;

/// `--show-output`: enough for a test runner's full failure report.
pub const SHOWN_LINES: usize = 200;
pub const SHOWN_BYTES: usize = 64 * 1024;
/// JSON and JUnit: enough for the assertion and its traceback.
pub const RECORDED_LINES: usize = 40;
pub const RECORDED_BYTES: usize = 8 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutputTail {
    /// The last lines, in order, without their line ends.
    pub lines: Vec<String>,
    /// Lines in the whole captured output.
    pub total_lines: usize,
    /// Whether lines or the start of the first line shown were left out.
    pub truncated: bool,
}

impl OutputTail {
    /// The last `max_lines` lines of `output`, at most `max_bytes` of them;
    /// a line longer than what is left keeps its end.
    pub fn of(output: &str, max_lines: usize, max_bytes: usize) -> OutputTail {
        let body = output.strip_suffix('\n').unwrap_or(output);
        let all: Vec<&str> = if body.is_empty() { Vec::new() } else { body.split('\n').collect() };
        let mut lines = Vec::new();
        let mut budget = max_bytes;
        let mut truncated = false;
        for line in all.iter().rev() {
            if lines.len() == max_lines || budget == 0 {
                truncated = true;
                break;
            }
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.len() > budget {
                let mut start = line.len() - budget;
                while !line.is_char_boundary(start) {
                    start += 1;
                }
                lines.push(line[start..].to_string());
                truncated = true;
                break;
            }
            budget -= line.len();
            lines.push(line.to_string());
        }
        lines.reverse();
        OutputTail { lines, total_lines: all.len(), truncated }
    }

    /// `output (3 lines):` or `output (last 40 of 900 lines, cut):`.
    pub fn heading(&self) -> String {
        match (self.total_lines, self.truncated) {
            (0, _) => "output: (none)".to_string(),
            (total, false) => format!("output ({total} line{}):", if total == 1 { "" } else { "s" }),
            (total, true) => format!("output (last {} of {total} lines, cut):", self.lines.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_whole() {
        let tail = OutputTail::of("a\r\nb\n", 10, 100);
        assert_eq!(tail, OutputTail { lines: vec!["a".into(), "b".into()], total_lines: 2, truncated: false });
        assert_eq!(tail.heading(), "output (2 lines):");
        assert_eq!(OutputTail::of("", 10, 100).heading(), "output: (none)");
    }

    #[test]
    fn long_output_keeps_its_last_lines_within_both_budgets() {
        let output: String = (1..=100).map(|n| format!("line {n}\n")).collect();
        let tail = OutputTail::of(&output, 3, 1000);
        assert_eq!(tail.lines, ["line 98", "line 99", "line 100"]);
        assert_eq!(tail.heading(), "output (last 3 of 100 lines, cut):");
        let tail = OutputTail::of(&output, 50, 10);
        assert_eq!(tail.lines, ["99", "line 100"]);
        assert!(tail.truncated);
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        let tail = OutputTail::of("ééé", 5, 3);
        assert_eq!(tail.lines, ["é"]);
    }
}
