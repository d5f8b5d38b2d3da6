//! The GATES.md ledger: its model, the strict parser, and the pure edits a
//! write-back applies. Nothing here touches the file system.

pub(crate) mod fence;
pub mod file;
mod parse;
pub mod text;

pub use parse::{normalize_owns_glob, parse, ParseError, ParseOutcome};

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use js_regex::Expectation;

/// A line terminator as it appeared in the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    None,
    Lf,
    CrLf,
}

impl Ending {
    fn as_str(self) -> &'static str {
        match self {
            Ending::None => "",
            Ending::Lf => "\n",
            Ending::CrLf => "\r\n",
        }
    }
}

/// One line of the ledger as a range of the document's text (without its
/// terminator), so a large ledger costs one buffer rather than a `String`
/// per line. Ledgers are capped at 8 MiB, so `u32` offsets suffice.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LineSpan {
    start: u32,
    len: u32,
    ending: Ending,
}

impl LineSpan {
    pub(crate) fn new(start: usize, len: usize, ending: Ending) -> LineSpan {
        LineSpan { start: narrow(start), len: narrow(len), ending }
    }

    fn range(self) -> std::ops::Range<usize> {
        self.start as usize..(self.start + self.len) as usize
    }
}

/// A run of the ledger text a gate's value was read from.
#[derive(Debug, Clone, Copy)]
struct TextSpan {
    start: u32,
    len: u32,
}

impl TextSpan {
    /// An attribute the gate does not have. No span of a ledger (at most
    /// 8 MiB) starts at `u32::MAX`, and this keeps a gate 16 bytes smaller
    /// than an `Option` per attribute would.
    const ABSENT: TextSpan = TextSpan { start: u32::MAX, len: 0 };

    fn is_absent(self) -> bool {
        self.start == u32::MAX
    }

    fn range(self) -> std::ops::Range<usize> {
        self.start as usize..(self.start + self.len) as usize
    }
}

/// One gate. Its id, title and attribute values are spans of the ledger
/// text it shares with its document, so a 100,000-gate ledger costs one
/// buffer and a fixed-size record per gate rather than a `String` per value.
#[derive(Debug, Clone)]
pub struct Gate {
    source: Arc<String>,
    /// Zero-based index of the gate line.
    pub line: usize,
    pub checked: bool,
    id: GateId,
    title: TextSpan,
    check: TextSpan,
    expect: TextSpan,
    cwd: TextSpan,
    /// Zero-based index of the CWD line, `u32::MAX` without one.
    cwd_line: u32,
    evidence: TextSpan,
    /// Zero-based index of the EVIDENCE line, `u32::MAX` without one.
    evidence_line: u32,
}

/// A gate's id: written in the ledger, or the `L<line>` stand-in of a gate
/// written without one (a parse error, kept so diagnostics can name it).
#[derive(Debug, Clone)]
enum GateId {
    Written(TextSpan),
    /// Boxed twice so the rare stand-in keeps every gate a word smaller.
    #[allow(clippy::box_collection)]
    StandIn(Box<String>),
}

impl Gate {
    /// A gate declared on line `line` of `source`; `title` (and later each
    /// attribute value) must be a slice of `source`.
    pub(crate) fn new(source: &Arc<String>, line: usize, checked: bool, id: Cow<'_, str>, title: &str) -> Gate {
        let id = match id {
            Cow::Borrowed(id) => GateId::Written(span_of(source, id)),
            Cow::Owned(id) => GateId::StandIn(Box::new(id)),
        };
        Gate {
            source: Arc::clone(source),
            line,
            checked,
            id,
            title: span_of(source, title),
            check: TextSpan::ABSENT,
            expect: TextSpan::ABSENT,
            cwd: TextSpan::ABSENT,
            cwd_line: u32::MAX,
            evidence: TextSpan::ABSENT,
            evidence_line: u32::MAX,
        }
    }

    fn text(&self, span: TextSpan) -> Option<&str> {
        (!span.is_absent()).then(|| &self.source[span.range()])
    }

    pub fn id(&self) -> &str {
        match &self.id {
            GateId::Written(span) => &self.source[span.range()],
            GateId::StandIn(id) => id,
        }
    }

    pub fn title(&self) -> &str {
        &self.source[self.title.range()]
    }

    /// Zero-based index of the CWD line, for diagnostics about it.
    pub fn cwd_line(&self) -> Option<usize> {
        (self.cwd_line != u32::MAX).then_some(self.cwd_line as usize)
    }

    /// Zero-based index of the EVIDENCE line, where a write-back replaces it.
    pub fn evidence_line(&self) -> Option<usize> {
        (self.evidence_line != u32::MAX).then_some(self.evidence_line as usize)
    }

    pub fn check(&self) -> Option<&str> {
        self.text(self.check)
    }

    pub fn expect(&self) -> Option<&str> {
        self.text(self.expect)
    }

    pub fn cwd(&self) -> Option<&str> {
        self.text(self.cwd)
    }

    pub fn evidence(&self) -> Option<&str> {
        self.text(self.evidence)
    }

    /// Records an attribute value, a slice of the gate's source.
    pub(crate) fn set_attribute(&mut self, key: &str, value: &str, line: usize) {
        let span = span_of(&self.source, value);
        match key {
            "CHECK" => self.check = span,
            "EXPECT" => self.expect = span,
            "CWD" => {
                self.cwd = span;
                self.cwd_line = narrow(line);
            }
            _ => {
                self.evidence = span;
                self.evidence_line = narrow(line);
            }
        }
    }

    /// A runnable gate has both CHECK and EXPECT; the parser guarantees that
    /// a gate has both or neither.
    pub fn is_runnable(&self) -> bool {
        !self.check.is_absent() && !self.expect.is_absent()
    }

    /// The gate's EXPECT, read again: the parser validated it and kept
    /// nothing, which costs far less for a 100,000-gate ledger than keeping
    /// a pattern per gate. A pattern's engine is built on its first match.
    pub fn expectation(&self) -> Option<Expectation> {
        self.expect().filter(|e| !e.is_empty()).and_then(|e| Expectation::parse(e).ok())
    }
}

/// An offset, length or line index of a ledger as stored: the 8 MiB cap
/// keeps each far below `u32::MAX`, which marks an absent value. A caller
/// passing a larger text hits this instead of a wrong slice.
fn narrow(n: usize) -> u32 {
    u32::try_from(n).ok().filter(|&n| n != u32::MAX).expect("ledger text exceeds 4 GiB")
}

/// The span `part` covers in `source`; `part` must be a slice of it, which
/// every caller's value is (the parser only trims and splits).
fn span_of(source: &str, part: &str) -> TextSpan {
    if part.is_empty() {
        return TextSpan { start: 0, len: 0 };
    }
    let start = (part.as_ptr() as usize).wrapping_sub(source.as_ptr() as usize);
    assert!(start <= source.len() && part.len() <= source.len() - start, "a gate value outside its ledger text");
    TextSpan { start: narrow(start), len: narrow(part.len()) }
}

#[derive(Debug, Clone)]
pub struct Abandonment {
    pub id: String,
    pub reason: String,
    pub line: usize,
}

#[derive(Debug, Clone)]
pub struct Document {
    /// The ledger as parsed, byte order mark included; edits are kept
    /// beside it, never applied to it.
    text: Arc<String>,
    lines: Vec<LineSpan>,
    /// Whether any line ends with CRLF, which inserted lines then use.
    crlf: bool,
    /// What `set_checked` and `set_evidence` changed.
    edits: LineEdits,
    pub gates: Vec<Gate>,
    pub abandoned: Vec<Abandonment>,
    /// The ids in `abandoned`, for constant-time lookups on large ledgers.
    abandoned_ids: HashSet<String>,
    pub owns: Vec<String>,
}

impl Document {
    pub(crate) fn new(
        text: Arc<String>,
        lines: Vec<LineSpan>,
        gates: Vec<Gate>,
        abandoned: Vec<Abandonment>,
        abandoned_ids: HashSet<String>,
        owns: Vec<String>,
    ) -> Document {
        let crlf = lines.iter().any(|line| line.ending == Ending::CrLf);
        Document { text, lines, crlf, edits: LineEdits::default(), gates, abandoned, abandoned_ids, owns }
    }

    pub fn gate(&self, id: &str) -> Option<&Gate> {
        self.gates.iter().find(|gate| gate.id() == id)
    }

    /// The gate `id`, looked for first on `line`, where it was when the
    /// caller saw it (gates are in line order): a binary search per lookup
    /// while the ledger is unchanged, a scan only when it moved.
    pub fn gate_near(&self, id: &str, line: usize) -> Option<&Gate> {
        let at = self.gates.partition_point(|gate| gate.line < line);
        match self.gates.get(at) {
            Some(gate) if gate.id() == id => Some(gate),
            _ => self.gate(id),
        }
    }

    pub fn is_abandoned(&self, id: &str) -> bool {
        self.abandoned_ids.contains(id)
    }

    /// The ledger text as it was parsed, before any edit.
    pub fn source(&self) -> &str {
        &self.text
    }

    /// The ledger text, byte-identical to the input unless lines were edited.
    pub fn render(&self) -> String {
        self.render_with(&self.edits)
    }

    /// The ledger text with `edits` applied, which may have been made
    /// without a mutable document (a write-back judging a shared one).
    pub fn render_with(&self, edits: &LineEdits) -> String {
        if edits.replaced.is_empty() && edits.inserted.is_empty() {
            return self.text.to_string();
        }
        let extra: usize = edits.replaced.values().chain(edits.inserted.values().flatten()).map(|l| l.len() + 2).sum();
        let mut out = String::with_capacity(self.text.len() + extra);
        if self.text.starts_with('\u{feff}') {
            out.push('\u{feff}');
        }
        let preferred = self.preferred_ending();
        let count = self.lines.len();
        for (index, span) in self.lines.iter().enumerate() {
            for line in edits.inserted.get(&index).into_iter().flatten() {
                out.push_str(line);
                out.push_str(preferred);
            }
            out.push_str(edits.line(self, index));
            // The last line gains a terminator when lines follow it.
            let appended = index + 1 == count && edits.inserted.contains_key(&count);
            out.push_str(if appended && span.ending == Ending::None { preferred } else { span.ending.as_str() });
        }
        if let Some(appended) = edits.inserted.get(&count) {
            // Lines added after an unterminated last line inherit its
            // absence of a final terminator.
            let unterminated = self.lines.last().is_some_and(|span| span.ending == Ending::None);
            for (at, line) in appended.iter().enumerate() {
                out.push_str(line);
                if !(unterminated && at + 1 == appended.len()) {
                    out.push_str(preferred);
                }
            }
        }
        out
    }

    /// The terminator an inserted line uses: CRLF when the file has any.
    fn preferred_ending(&self) -> &'static str {
        if self.crlf {
            "\r\n"
        } else {
            "\n"
        }
    }

    /// Ticks or clears the box of the gate whose line is `line`.
    pub fn set_checked(&mut self, line: usize, checked: bool) {
        let mut edits = std::mem::take(&mut self.edits);
        edits.set_checked(self, line, checked);
        self.edits = edits;
    }

    /// Replaces the gate's EVIDENCE value, or inserts an EVIDENCE line after
    /// the gate's contiguous attribute lines.
    pub fn set_evidence(&mut self, gate: &Gate, value: &str) {
        let mut edits = std::mem::take(&mut self.edits);
        edits.set_evidence(self, gate, value);
        self.edits = edits;
    }
}

/// Edits to one parsed document, kept beside its text and addressed by the
/// parsed line indexes, so no edit shifts another and none copies the text.
#[derive(Debug, Clone, Default)]
pub struct LineEdits {
    /// Line bodies an edit replaced, by line index.
    replaced: BTreeMap<usize, String>,
    /// Lines an edit inserted before the line at the key (the line count:
    /// after the last line), in insertion order.
    inserted: BTreeMap<usize, Vec<String>>,
}

impl LineEdits {
    /// The body of line `index` of `document` as edited so far.
    fn line<'a>(&'a self, document: &'a Document, index: usize) -> &'a str {
        match self.replaced.get(&index) {
            Some(text) => text,
            None => &document.text[document.lines[index].range()],
        }
    }

    /// [`Document::set_checked`] on `document`.
    pub fn set_checked(&mut self, document: &Document, line: usize, checked: bool) {
        let text = self.line(document, line);
        if text.len() >= 5 && text.starts_with("- [") && &text[4..5] == "]" {
            let mut edited = text.to_string();
            edited.replace_range(3..4, if checked { "x" } else { " " });
            self.replaced.insert(line, edited);
        }
    }

    /// [`Document::set_evidence`] on `document`.
    pub fn set_evidence(&mut self, document: &Document, gate: &Gate, value: &str) {
        if let Some(index) = gate.evidence_line() {
            let text = self.line(document, index);
            let indent = &text[..text.len() - text.trim_start_matches(text::is_js_space).len()];
            let edited = format!("{indent}EVIDENCE: {value}");
            self.replaced.insert(index, edited);
            return;
        }
        let mut at = gate.line + 1;
        while at < document.lines.len() && parse::is_attribute_line(self.line(document, at)) {
            at += 1;
        }
        self.inserted.entry(at).or_default().push(format!("  EVIDENCE: {value}"));
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
