//! The GATES.md ledger: its model, the strict parser, and the pure edits a
//! write-back applies. Nothing here touches the file system.

pub(crate) mod fence;
pub mod file;
mod parse;
pub mod text;

pub(crate) use parse::{indented_evidence, is_ticked_gate_line};
pub use parse::{input_globs, normalize_owns_glob, parse, ParseError, ParseOutcome, ParseWarning, WarningKind};

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, OnceLock};

use js_regex::Expectation;

/// Largest ledger accepted, as in the Node tool: the file reader refuses a
/// larger file and the parser a larger text.
pub const MAX_LEDGER_BYTES: u64 = 8 * 1024 * 1024;

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

/// Where the ledger's first line starts: after a UTF-8 byte order mark,
/// which is kept for rendering but is not part of the first line, so it
/// cannot hide a gate there.
pub(crate) fn body_start(text: &str) -> usize {
    if text.starts_with('\u{feff}') {
        '\u{feff}'.len_utf8()
    } else {
        0
    }
}

/// The line that starts at byte `start`: its body (without the
/// terminator) and its terminator, `\n` or `\r\n` (none for an
/// unterminated last line).
pub(crate) fn line_at(text: &str, start: usize) -> (std::ops::Range<usize>, Ending) {
    let bytes = text.as_bytes();
    match memchr::memchr(b'\n', &bytes[start..]).map(|offset| start + offset) {
        Some(at) if at > start && bytes[at - 1] == b'\r' => (start..at - 1, Ending::CrLf),
        Some(at) => (start..at, Ending::Lf),
        None => (start..bytes.len(), Ending::None),
    }
}

/// The ledger's lines from `body` on, in order, each as its body and its
/// terminator: one per `\n` and one for an unterminated last line.
pub(crate) fn lines(text: &str, body: usize) -> impl Iterator<Item = (std::ops::Range<usize>, Ending)> + '_ {
    let mut start = body;
    std::iter::from_fn(move || {
        if start >= text.len() {
            return None;
        }
        let (range, ending) = line_at(text, start);
        start = range.end + ending.as_str().len();
        Some((range, ending))
    })
}

/// The text of one parsed ledger, shared by its document and every gate
/// read from it: the buffer read from disk, never copied.
#[derive(Debug)]
pub(crate) struct LedgerText {
    text: String,
    /// The `L<line>` ids of gates written without one (each a parse error),
    /// by zero-based gate line; set once the parser has read every line.
    stand_ins: OnceLock<Vec<(u32, String)>>,
    /// The `INPUTS:` values, by zero-based gate line: few gates have one,
    /// so they cost nothing in the record every gate has.
    inputs: OnceLock<Vec<(u32, TextSpan)>>,
}

impl LedgerText {
    pub(crate) fn new(text: String) -> LedgerText {
        LedgerText { text, stand_ins: OnceLock::new(), inputs: OnceLock::new() }
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// Hands over the stand-in ids, once, when the parse is done.
    pub(crate) fn keep_stand_ins(&self, stand_ins: Vec<(u32, String)>) {
        let _ = self.stand_ins.set(stand_ins);
    }

    /// Hands over the `INPUTS:` values, once, when the parse is done.
    pub(crate) fn keep_inputs(&self, inputs: Vec<(u32, TextSpan)>) {
        let _ = self.inputs.set(inputs);
    }

    fn inputs_of(&self, line: u32) -> Option<TextSpan> {
        let inputs = self.inputs.get()?;
        inputs.binary_search_by_key(&line, |(at, _)| *at).ok().map(|at| inputs[at].1)
    }

    fn stand_in(&self, line: u32) -> &str {
        stand_in_at(self.stand_ins.get().map(Vec::as_slice).unwrap_or_default(), line).unwrap_or_default()
    }
}

/// The stand-in id of the gate on `line` among `stand_ins` (by gate line).
pub(crate) fn stand_in_at(stand_ins: &[(u32, String)], line: u32) -> Option<&str> {
    stand_ins.binary_search_by_key(&line, |(at, _)| *at).ok().map(|at| stand_ins[at].1.as_str())
}

/// Each field of a [`TextSpan`] is 24 bits: ledgers are capped at 8 MiB
/// (2^23 bytes, `MAX_LEDGER_BYTES`), which the parser enforces.
const SPAN_FIELD: u64 = (1 << 24) - 1;

/// A run of the ledger text a gate's value was read from: a 24-bit start
/// and a 24-bit length packed into three `u16`s, so a gate's six spans
/// take 36 bytes rather than 48. An empty value keeps its place in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TextSpan([u16; 3]);

impl TextSpan {
    /// An attribute the gate does not have: no ledger text reaches this start.
    const ABSENT: TextSpan = TextSpan::pack(SPAN_FIELD, 0);
    /// The id of a gate written without one, kept in `LedgerText::stand_ins`.
    const STAND_IN: TextSpan = TextSpan::pack(SPAN_FIELD - 1, 0);

    const fn pack(start: u64, len: u64) -> TextSpan {
        let packed = start | len << 24;
        TextSpan([packed as u16, (packed >> 16) as u16, (packed >> 32) as u16])
    }

    /// The span of `part`, which must be a slice of `source` (every value
    /// the parser keeps is: it only trims and splits lines).
    pub(crate) fn of(source: &str, part: &str) -> TextSpan {
        let start = (part.as_ptr() as usize).wrapping_sub(source.as_ptr() as usize);
        let end = start.wrapping_add(part.len());
        // Inside a text the parser accepted (at most 8 MiB), both fields fit.
        assert!(start <= end && end <= source.len(), "a gate value outside its ledger text");
        assert!((end as u64) < SPAN_FIELD - 1, "ledger text over 8 MiB");
        TextSpan::pack(start as u64, part.len() as u64)
    }

    fn start(self) -> usize {
        let [low, middle, _] = self.0;
        (u64::from(low) | (u64::from(middle) & 0xff) << 16) as usize
    }

    fn len(self) -> usize {
        let [_, middle, high] = self.0;
        (u64::from(middle) >> 8 | u64::from(high) << 8) as usize
    }

    fn is_absent(self) -> bool {
        self == TextSpan::ABSENT
    }

    fn range(self) -> std::ops::Range<usize> {
        self.start()..self.start() + self.len()
    }
}

/// One gate. Its id, title and attribute values are spans of the ledger
/// text it shares with its document, so a 100,000-gate ledger costs one
/// buffer and a 48-byte record per gate rather than a `String` per value.
#[derive(Debug, Clone)]
pub struct Gate {
    source: Arc<LedgerText>,
    /// Zero-based index of the gate line, and `CHECKED` when its box is
    /// ticked (a ledger of at most 8 MiB has far fewer than 2^31 lines).
    line_and_box: u32,
    id: TextSpan,
    title: TextSpan,
    check: TextSpan,
    expect: TextSpan,
    cwd: TextSpan,
    evidence: TextSpan,
}

/// The bit of `Gate::line_and_box` that says the box is ticked.
const CHECKED: u32 = 1 << 31;

impl Gate {
    /// A gate declared on line `line` of `source`; `id` (`None` for a gate
    /// written without one) and `title` (and later each attribute value)
    /// must be slices of the source text.
    pub(crate) fn new(source: &Arc<LedgerText>, line: usize, checked: bool, id: Option<&str>, title: &str) -> Gate {
        let line = u32::try_from(line).ok().filter(|&line| line < CHECKED).expect("ledger text over 8 MiB");
        Gate {
            source: Arc::clone(source),
            line_and_box: line | if checked { CHECKED } else { 0 },
            id: id.map_or(TextSpan::STAND_IN, |id| TextSpan::of(&source.text, id)),
            title: TextSpan::of(&source.text, title),
            check: TextSpan::ABSENT,
            expect: TextSpan::ABSENT,
            cwd: TextSpan::ABSENT,
            evidence: TextSpan::ABSENT,
        }
    }

    fn text(&self, span: TextSpan) -> Option<&str> {
        (!span.is_absent()).then(|| &self.source.text[span.range()])
    }

    /// Zero-based index of the gate line.
    pub fn line(&self) -> usize {
        (self.line_and_box & !CHECKED) as usize
    }

    /// Whether the gate's box is ticked.
    pub fn checked(&self) -> bool {
        self.line_and_box & CHECKED != 0
    }

    pub fn id(&self) -> &str {
        if self.has_stand_in_id() {
            return self.source.stand_in(self.line_and_box & !CHECKED);
        }
        &self.source.text[self.id.range()]
    }

    /// Whether the gate was written without an id (a parse error) and goes
    /// by its `L<line>` stand-in.
    pub(crate) fn has_stand_in_id(&self) -> bool {
        self.id == TextSpan::STAND_IN
    }

    pub fn title(&self) -> &str {
        &self.source.text[self.title.range()]
    }

    /// The zero-based line of an attribute's value: the gate line plus the
    /// line breaks between the title (on the gate line) and the value.
    fn line_of(&self, span: TextSpan) -> Option<usize> {
        let between = self.source.text.as_bytes().get(self.title.start()..span.start());
        (!span.is_absent()).then(|| self.line() + between.map_or(0, |bytes| memchr::memchr_iter(b'\n', bytes).count()))
    }

    /// Zero-based index of the CWD line, for diagnostics about it.
    pub fn cwd_line(&self) -> Option<usize> {
        self.line_of(self.cwd)
    }

    /// Zero-based index of the EVIDENCE line, where a write-back replaces it.
    pub fn evidence_line(&self) -> Option<usize> {
        self.line_of(self.evidence)
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

    /// The `INPUTS:` value as written: the files the gate's proof depends on.
    pub fn inputs(&self) -> Option<&str> {
        self.text(self.source.inputs_of(self.line_and_box & !CHECKED)?)
    }

    /// The `INPUTS:` globs, normalized; empty when the gate has none (its
    /// proof then depends on the whole tree). The parser refused a ledger
    /// whose globs are invalid.
    pub fn input_globs(&self) -> Vec<String> {
        self.inputs().and_then(|value| parse::input_globs(value).ok()).unwrap_or_default()
    }

    /// Records an attribute value, a slice of the gate's source.
    pub(crate) fn set_attribute(&mut self, key: &str, value: &str) {
        let span = TextSpan::of(&self.source.text, value);
        match key {
            "CHECK" => self.check = span,
            "EXPECT" => self.expect = span,
            "CWD" => self.cwd = span,
            _ => self.evidence = span,
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
    text: Arc<LedgerText>,
    /// Where each line starts: built on the first edit, so a run that only
    /// reads the ledger keeps no per-line state.
    lines: OnceLock<Vec<u32>>,
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
        text: Arc<LedgerText>,
        gates: Vec<Gate>,
        abandoned: Vec<Abandonment>,
        abandoned_ids: HashSet<String>,
        owns: Vec<String>,
    ) -> Document {
        Document { text, lines: OnceLock::new(), edits: LineEdits::default(), gates, abandoned, abandoned_ids, owns }
    }

    pub fn gate(&self, id: &str) -> Option<&Gate> {
        self.gates.iter().find(|gate| gate.id() == id)
    }

    /// The gate `id`, looked for first on `line`, where it was when the
    /// caller saw it (gates are in line order): a binary search per lookup
    /// while the ledger is unchanged, a scan only when it moved.
    pub fn gate_near(&self, id: &str, line: usize) -> Option<&Gate> {
        let at = self.gates.partition_point(|gate| gate.line() < line);
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
        &self.text.text
    }

    /// Where each line starts, built once (ledgers are at most 8 MiB, so
    /// every start fits `u32`).
    fn line_starts(&self) -> &[u32] {
        self.lines.get_or_init(|| {
            let text = self.source();
            lines(text, body_start(text)).map(|(range, _)| range.start as u32).collect()
        })
    }

    fn line_count(&self) -> usize {
        self.line_starts().len()
    }

    /// The body and terminator of line `index`.
    fn line(&self, index: usize) -> (std::ops::Range<usize>, Ending) {
        line_at(self.source(), self.line_starts()[index] as usize)
    }

    /// The ledger text, byte-identical to the input unless lines were edited.
    pub fn render(&self) -> String {
        self.render_with(&self.edits)
    }

    /// The ledger text with `edits` applied, which may have been made
    /// without a mutable document (a write-back judging a shared one).
    pub fn render_with(&self, edits: &LineEdits) -> String {
        let text = self.source();
        if edits.replaced.is_empty() && edits.inserted.is_empty() {
            return text.to_string();
        }
        let extra: usize = edits.replaced.values().chain(edits.inserted.values().flatten()).map(|l| l.len() + 2).sum();
        let mut out = String::with_capacity(text.len() + extra);
        let body = body_start(text);
        out.push_str(&text[..body]);
        let preferred = self.preferred_ending();
        let count = self.line_count();
        let mut last_ending = Ending::None;
        for (index, (range, ending)) in lines(text, body).enumerate() {
            for line in edits.inserted.get(&index).into_iter().flatten() {
                out.push_str(line);
                out.push_str(preferred);
            }
            out.push_str(edits.replaced.get(&index).map_or(&text[range], String::as_str));
            // The last line gains a terminator when lines follow it.
            let appended = index + 1 == count && edits.inserted.contains_key(&count);
            out.push_str(if appended && ending == Ending::None { preferred } else { ending.as_str() });
            last_ending = ending;
        }
        if let Some(appended) = edits.inserted.get(&count) {
            // Lines added after an unterminated last line inherit its
            // absence of a final terminator.
            let unterminated = count > 0 && last_ending == Ending::None;
            for (at, line) in appended.iter().enumerate() {
                out.push_str(line);
                if !(unterminated && at + 1 == appended.len()) {
                    out.push_str(preferred);
                }
            }
        }
        out
    }

    /// The terminator an inserted line uses: CRLF when any line has it.
    fn preferred_ending(&self) -> &'static str {
        let text = self.source();
        if memchr::memmem::find(&text.as_bytes()[body_start(text)..], b"\r\n").is_some() {
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
            None => &document.source()[document.line(index).0],
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
        let mut at = gate.line() + 1;
        while at < document.line_count() && parse::is_attribute_line(self.line(document, at)) {
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
