//! The GATES.md ledger: its model, the strict parser, and the pure edits a
//! write-back applies. Nothing here touches the file system.

mod fence;
pub mod file;
mod parse;
pub mod text;

pub use parse::{normalize_owns_glob, parse, ParseError, ParseOutcome};

use std::sync::Arc;

use js_regex::Expectation;

/// One line of the ledger and the terminator that followed it, kept
/// byte-exact so a rewrite changes only the lines it means to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub text: String,
    pub ending: &'static str,
}

#[derive(Debug, Clone)]
pub struct Gate {
    /// Zero-based index of the gate line.
    pub line: usize,
    pub checked: bool,
    pub id: String,
    pub title: String,
    pub check: Option<String>,
    pub expect: Option<String>,
    pub cwd: Option<String>,
    pub evidence: Option<String>,
    pub evidence_line: Option<usize>,
    /// Compiled EXPECT of a runnable gate, shared by gates with the same
    /// EXPECT text.
    pub expectation: Option<Arc<Expectation>>,
}

impl Gate {
    /// A runnable gate has both CHECK and EXPECT; the parser guarantees that
    /// a gate has both or neither.
    pub fn is_runnable(&self) -> bool {
        self.check.is_some() && self.expect.is_some()
    }
}

#[derive(Debug, Clone)]
pub struct Abandonment {
    pub id: String,
    pub reason: String,
    pub line: usize,
}

#[derive(Debug, Clone)]
pub struct Document {
    /// The text began with a UTF-8 byte order mark, which `lines` omit.
    pub byte_order_mark: bool,
    pub lines: Vec<Line>,
    pub gates: Vec<Gate>,
    pub abandoned: Vec<Abandonment>,
    /// The ids in `abandoned`, for constant-time lookups on large ledgers.
    abandoned_ids: std::collections::HashSet<String>,
    pub owns: Vec<String>,
}

impl Document {
    pub fn gate(&self, id: &str) -> Option<&Gate> {
        self.gates.iter().find(|gate| gate.id == id)
    }

    pub fn is_abandoned(&self, id: &str) -> bool {
        self.abandoned_ids.contains(id)
    }

    /// The ledger text, byte-identical to the input unless lines were edited.
    pub fn render(&self) -> String {
        let size: usize = self.lines.iter().map(|l| l.text.len() + l.ending.len()).sum();
        let mut out = String::with_capacity(size + 3);
        if self.byte_order_mark {
            out.push('\u{feff}');
        }
        for line in &self.lines {
            out.push_str(&line.text);
            out.push_str(line.ending);
        }
        out
    }

    /// The terminator an inserted line uses: CRLF when the file has any.
    fn preferred_ending(&self) -> &'static str {
        if self.lines.iter().any(|l| l.ending == "\r\n") {
            "\r\n"
        } else {
            "\n"
        }
    }

    /// Ticks or clears the box of the gate whose line is `line`.
    pub fn set_checked(&mut self, line: usize, checked: bool) {
        let text = &mut self.lines[line].text;
        if text.len() >= 5 && text.starts_with("- [") && &text[4..5] == "]" {
            text.replace_range(3..4, if checked { "x" } else { " " });
        }
    }

    /// Replaces the gate's EVIDENCE value, or inserts an EVIDENCE line after
    /// the gate's contiguous attribute lines.
    pub fn set_evidence(&mut self, gate: &Gate, value: &str) {
        if let Some(index) = gate.evidence_line {
            let text = &mut self.lines[index].text;
            let indent_len = text.len() - text.trim_start_matches(text::is_js_space).len();
            let indent = text[..indent_len].to_string();
            *text = format!("{indent}EVIDENCE: {value}");
            return;
        }
        let mut at = gate.line + 1;
        while at < self.lines.len() && parse::is_attribute_line(&self.lines[at].text) {
            at += 1;
        }
        let ending = self.preferred_ending();
        let new_line = Line { text: format!("  EVIDENCE: {value}"), ending };
        if at == self.lines.len() {
            // The previous last line had no terminator; it needs one now and
            // the inserted line inherits its absence.
            if let Some(last) = self.lines.last_mut() {
                if last.ending.is_empty() {
                    last.ending = ending;
                    self.lines.push(Line { ending: "", ..new_line });
                    return;
                }
            }
        }
        self.lines.insert(at, new_line);
    }
}

/// `leaf-1.2.1:G3`: the ledger's file stem (without `.md`) and the gate id.
pub fn qualify(file: &std::path::Path, id: &str) -> String {
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let cut = name.len().saturating_sub(3);
    let stem = match name.get(cut..) {
        Some(suffix) if suffix.eq_ignore_ascii_case(".md") => &name[..cut],
        _ => &name[..],
    };
    format!("{stem}:{id}")
}
