//! The strict ledger parser. Every diagnostic is collected, so an author sees
//! all problems of a ledger in one pass; any error makes the ledger unusable.

use std::collections::HashSet;
use std::hash::BuildHasher;
use std::sync::Arc;

use super::fence::{self, Fence};
use super::text::{is_js_space, is_single_js_line, js_trim, strip_one_space};
use super::{body_start, lines, Abandonment, Document, Gate, LedgerText, TextSpan};

/// One diagnostic. `line` is one-based; `None` for whole-ledger problems.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: Option<usize>,
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl ParseError {
    /// This problem as a diagnostic of the ledger at `path`.
    pub fn at(&self, path: &str) -> crate::diagnostic::Diagnostic {
        crate::diagnostic::Diagnostic::new(path, self.line, self.message.clone())
    }
}

/// What a warning is about, for a reader that acts on one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarningKind {
    /// An EXPECT that reads like a path but is a regular expression.
    PathLikeExpect,
    /// A line in a gate's block whose name is near an attribute's
    /// (`Check:`, `EXPECTS:`): the parser reads it as prose.
    MisspelledAttribute,
}

/// One warning: the decision is unchanged, the author is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseWarning {
    /// One-based; `None` for a warning about a whole gate.
    pub line: Option<usize>,
    pub kind: WarningKind,
    /// The gate it concerns.
    pub gate: String,
    /// What is wrong, without the gate's name.
    pub message: String,
}

impl ParseWarning {
    /// This warning as a diagnostic of the ledger at `path`.
    pub fn at(&self, path: &str) -> crate::diagnostic::Diagnostic {
        crate::diagnostic::Diagnostic::new(path, self.line, format!("gate {}: {}", self.gate, self.message))
    }
}

#[derive(Debug)]
pub struct ParseOutcome {
    pub document: Document,
    pub errors: Vec<ParseError>,
    pub warnings: Vec<ParseWarning>,
}

/// `INPUTS` is gate-check's own: the Node tool's parser reads the line as
/// prose and ignores it.
const ATTRIBUTES: [&str; 5] = ["CHECK", "EXPECT", "EVIDENCE", "CWD", "INPUTS"];

/// A line that starts with `KEY:` for one of the attribute keywords.
enum AttributeShape<'a> {
    /// A clean attribute: (keyword, value before trimming).
    Clean(&'static str, &'a str),
    /// The value holds a line terminator (CR, U+2028 or U+2029). The Node
    /// tool reads such a line as prose, which silently turns a runnable gate
    /// into a manual one; here it is an error.
    Broken(&'static str),
}

/// `KEY:` followed by an optional space and the value, for one of the
/// attribute keywords.
fn attribute_after(text: &str) -> Option<AttributeShape<'_>> {
    ATTRIBUTES.into_iter().find_map(|key| {
        let rest = text.strip_prefix(key)?.strip_prefix(':')?;
        let value = strip_one_space(rest);
        Some(if is_single_js_line(value) { AttributeShape::Clean(key, value) } else { AttributeShape::Broken(key) })
    })
}

/// The attribute a line's name nearly spells: `KEY:` with the key in
/// other letter case (`Check:`), or one or two edits away from a key of
/// five letters or more (`EXPECTS:`, `CHEK:`) and one from `CWD`. Returns
/// the name as written and the key.
fn near_miss_attribute(body: &str) -> Option<(&str, &'static str)> {
    let (name, _) = body.split_once(':')?;
    if name.len() < 3 || !name.bytes().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    let upper = name.to_ascii_uppercase();
    ATTRIBUTES.into_iter().find_map(|key| {
        let allowed = if key.len() >= 5 { 2 } else { 1 };
        let near = upper == key || strsim::damerau_levenshtein(&upper, key) <= allowed;
        (near && name != key).then_some((name, key))
    })
}

/// A line the grammar has no use for, told by its first byte: empty, or
/// starting with printable ASCII that opens no fence, gate, attribute,
/// statement or heading (and, not being a space, no indentation either).
fn is_plain_prose(text: &str) -> bool {
    match text.as_bytes().first() {
        None => true,
        Some(&first) => {
            (0x21..0x7f).contains(&first)
                && !matches!(first, b'-' | b'`' | b'~' | b'#' | b'A' | b'O' | b'C' | b'E' | b'I')
        }
    }
}

/// The error for an attribute whose value holds a line terminator.
fn broken_attribute(key: &str) -> String {
    format!("{key} value contains a line terminator (CR, U+2028 or U+2029); keep each attribute on one line")
}

/// The first character a CHECK, EXPECT or CWD value may not contain.
fn forbidden_character(value: &str) -> Option<char> {
    if value.is_ascii() {
        // The ASCII controls but TAB.
        return value.bytes().find(|&b| (b < 0x20 && b != b'\t') || b == 0x7f).map(char::from);
    }
    value.chars().find(|&c| crate::visible::is_forbidden_in_definition(c))
}

fn leading_space_len(text: &str) -> usize {
    // Indentation is nearly always spaces or tabs followed by printable
    // ASCII, which starts no JavaScript space; anything else is decoded.
    let bytes = text.as_bytes();
    let plain = bytes.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
    match bytes.get(plain) {
        None => plain,
        Some(&next) if (0x21..0x80).contains(&next) => plain,
        Some(_) => text.len() - text.trim_start_matches(is_js_space).len(),
    }
}

/// An indented attribute line, as the write-back's insertion point scans for.
pub(crate) fn is_attribute_line(text: &str) -> bool {
    let indent = leading_space_len(text);
    indent > 0 && ATTRIBUTES.iter().any(|key| text[indent..].starts_with(&format!("{key}:")))
}

/// Whether a line of ledger text is a gate line whose box is ticked.
pub(crate) fn is_ticked_gate_line(text: &str) -> bool {
    gate_line(text).is_some_and(|(checked, _)| checked)
}

/// The trimmed value of an indented `EVIDENCE:` line.
pub(crate) fn indented_evidence(text: &str) -> Option<&str> {
    let indent = leading_space_len(text);
    match attribute_after(&text[indent..]) {
        Some(AttributeShape::Clean("EVIDENCE", value)) if indent > 0 => Some(js_trim(value)),
        _ => None,
    }
}

/// `- [ ] rest` / `- [x] rest`: (checked, rest).
fn gate_line(text: &str) -> Option<(bool, &str)> {
    let rest = text.strip_prefix("- [")?;
    let mark = rest.chars().next()?;
    let checked = match mark {
        ' ' => false,
        'x' | 'X' => true,
        _ => return None,
    };
    let rest = rest[1..].strip_prefix("] ")?;
    Some((checked, rest))
}

/// `ID: title` → (id, title) with the Node tool's lazy `^(\S+?):(?:\s+|$)`.
fn split_id(title: &str) -> Option<(&str, &str)> {
    for (at, c) in title.char_indices() {
        if is_js_space(c) {
            return None;
        }
        if c == ':' && at > 0 {
            let after = &title[at + 1..];
            if after.is_empty() || after.starts_with(is_js_space) {
                return Some((&title[..at], js_trim(after)));
            }
        }
    }
    None
}

pub fn is_valid_gate_id(id: &str) -> bool {
    let mut chars = id.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// `OWNS:` entries as repository-relative globs with `./` and empty
/// segments removed; absolute paths, traversal and the implicit root fail.
/// The error is the text of the parser's diagnostic at the `OWNS:` line,
/// which is a message and nothing more.
pub fn normalize_owns_glob(value: &str) -> Result<String, String> {
    normalize_root_glob("OWNS", value)
}

/// An `OWNS:` or `INPUTS:` entry (`label`) as a root-relative glob; see
/// [`normalize_owns_glob`].
pub fn normalize_root_glob(label: &str, value: &str) -> Result<String, String> {
    let raw = js_trim(value).replace('\\', "/");
    let raw = raw.strip_prefix("./").unwrap_or(&raw);
    if raw.is_empty() {
        return Err(format!("{label} path is blank"));
    }
    let bytes = raw.as_bytes();
    let drive = bytes.len() >= 3 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' && bytes[2] == b'/';
    if raw.starts_with('/') || drive {
        return Err(format!("{label} path must be relative: {value}"));
    }
    if raw.contains('\0') || raw.split('/').any(|part| part == "..") {
        return Err(format!("{label} path cannot contain traversal: {value}"));
    }
    let normalized: Vec<&str> = raw.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    if normalized.is_empty() {
        return Err(format!("{label} path cannot claim an implicit root"));
    }
    Ok(normalized.join("/"))
}

/// A gate's `INPUTS:` value as its root-relative globs, each checked as a
/// glob; the error is the parser's diagnostic at the line.
pub fn input_globs(value: &str) -> Result<Vec<String>, String> {
    let declared: Vec<&str> = value.split(',').map(js_trim).filter(|item| !item.is_empty()).collect();
    if declared.is_empty() {
        return Err("INPUTS declares no paths".into());
    }
    declared
        .into_iter()
        .map(|item| {
            let glob = normalize_root_glob("INPUTS", item)?;
            globset::Glob::new(&glob).map_err(|error| format!("INPUTS glob {item} is invalid: {}", error.kind()))?;
            Ok(glob)
        })
        .collect()
}

/// Each gate id's first declaration, as an index into the parsed gates,
/// hashed by the id's text (the table lives for one parse, so foldhash's
/// seeded hash is ample and far cheaper than SipHash): a slot is 4 bytes, so the table for 100,000
/// gates is about half a megabyte rather than a borrowed key and a line
/// per slot.
struct DeclaredIds {
    first: hashbrown::HashTable<u32>,
    hasher: foldhash::fast::RandomState,
}

impl DeclaredIds {
    fn with_capacity(capacity: usize) -> DeclaredIds {
        DeclaredIds { first: hashbrown::HashTable::with_capacity(capacity), hasher: Default::default() }
    }

    /// One-based line of the first gate declared as `id`.
    fn first_line(&self, ids: GateIds<'_>, id: &str) -> Option<usize> {
        let hash = self.hasher.hash_one(id);
        self.first.find(hash, |&at| ids.get(at) == id).map(|&at| ids.gates[at as usize].line() + 1)
    }

    /// Records gate `at` as the first declaration of its id, which the
    /// caller has looked up and not found. Gate counts fit in `u32`: a
    /// ledger is at most 8 MiB.
    fn declare(&mut self, ids: GateIds<'_>, at: usize) {
        let hasher = &self.hasher;
        let hash = hasher.hash_one(ids.get(at as u32));
        self.first.insert_unique(hash, at as u32, |&other| hasher.hash_one(ids.get(other)));
    }
}

/// The ids of the gates read so far, including the stand-ins the ledger
/// text takes over only when the parse is done.
#[derive(Clone, Copy)]
struct GateIds<'a> {
    gates: &'a [Gate],
    stand_ins: &'a [(u32, String)],
}

impl<'a> GateIds<'a> {
    fn get(self, at: u32) -> &'a str {
        let gate = &self.gates[at as usize];
        if !gate.has_stand_in_id() {
            return gate.id();
        }
        super::stand_in_at(self.stand_ins, gate.line() as u32).unwrap_or_else(|| gate.id())
    }
}

struct Builder {
    gates: Vec<Gate>,
    /// `L<line>` ids of gates written without one, by gate line.
    stand_ins: Vec<(u32, String)>,
    gate_lines: DeclaredIds,
    /// Per gate, one bit per `ATTRIBUTES` keyword already given.
    seen_attributes: Vec<u8>,
    /// `INPUTS:` values by gate line (see `LedgerText::keep_inputs`).
    inputs: Vec<(u32, TextSpan)>,
    abandoned: Vec<Abandonment>,
    abandoned_ids: HashSet<String>,
    owns: Vec<String>,
    errors: Vec<ParseError>,
    warnings: Vec<ParseWarning>,
}

impl Builder {
    fn ids(&self) -> GateIds<'_> {
        GateIds { gates: &self.gates, stand_ins: &self.stand_ins }
    }

    fn error(&mut self, index: usize, message: impl Into<String>) {
        self.errors.push(ParseError { line: Some(index + 1), message: message.into() });
    }
}

/// Parses ledger text. The document is returned even with errors so callers
/// can report every diagnostic; it must not be acted on when `errors` is
/// non-empty.
pub fn parse(text: impl Into<String>) -> ParseOutcome {
    // The read buffer itself is shared, not copied: a copy would fault in
    // the whole ledger twice.
    let text = text.into();
    if text.len() as u64 > super::MAX_LEDGER_BYTES {
        // Reading a ledger refuses this size first; a text handed over
        // directly gets the same refusal rather than spans that overflow.
        let error =
            ParseError { line: None, message: format!("gate ledger exceeds {} bytes", super::MAX_LEDGER_BYTES) };
        let empty =
            Document::new(Arc::new(LedgerText::new(String::new())), Vec::new(), Vec::new(), HashSet::new(), Vec::new());
        return ParseOutcome { document: empty, errors: vec![error], warnings: Vec::new() };
    }
    let text = Arc::new(LedgerText::new(text));
    let (gates, abandoned, abandoned_ids, owns, errors, warnings) = parse_lines(&text);
    ParseOutcome { document: Document::new(text, gates, abandoned, abandoned_ids, owns), errors, warnings }
}

type Parsed = (Vec<Gate>, Vec<Abandonment>, HashSet<String>, Vec<String>, Vec<ParseError>, Vec<ParseWarning>);

fn parse_lines(source: &Arc<LedgerText>) -> Parsed {
    let text_of = source.as_str();
    let body = body_start(text_of);
    // Sized up front (gate lines outside fences can only be fewer), so a
    // 100,000-gate ledger never holds two copies of a growing table.
    let rest = &text_of.as_bytes()[body..];
    let gate_lines = usize::from(rest.starts_with(b"- [")) + memchr::memmem::find_iter(rest, b"\n- [").count();
    let mut b = Builder {
        gates: Vec::with_capacity(gate_lines),
        stand_ins: Vec::new(),
        gate_lines: DeclaredIds::with_capacity(gate_lines),
        seen_attributes: Vec::with_capacity(gate_lines),
        inputs: Vec::new(),
        abandoned: Vec::new(),
        abandoned_ids: HashSet::new(),
        owns: Vec::new(),
        errors: Vec::new(),
        warnings: Vec::new(),
    };
    // Index into `b.gates` of the gate that attribute lines attach to.
    let mut current: Option<usize> = None;
    // An unindented attribute detached the gate's block: the indented
    // attributes after it are that one mistake, not orphans of their own.
    let mut detached = false;
    let mut open_fence: Option<(Fence, usize)> = None;

    for (index, (range, _)) in lines(text_of, body).enumerate() {
        let text = &text_of[range];
        if let Some((fence, _)) = open_fence {
            if fence.is_closed_by(text) {
                open_fence = None;
            }
            continue;
        }
        if is_plain_prose(text) {
            continue;
        }
        if let Some(fence) = fence::opening(text) {
            open_fence = Some((fence, index));
            continue;
        }

        let gate = gate_line(text);
        if gate.is_some_and(|(_, rest)| !is_single_js_line(rest)) {
            // The Node tool reads this as prose, so the gate would vanish.
            b.error(index, "gate line contains a line terminator (CR, U+2028 or U+2029); keep a gate on one line");
            current = None;
            continue;
        }
        if let Some((checked, rest)) = gate {
            let raw_title = js_trim(rest);
            let (id, title) = match split_id(raw_title) {
                Some((id, title)) => {
                    if !is_valid_gate_id(id) {
                        b.error(index, format!("invalid gate id {id}"));
                    }
                    (Some(id), title)
                }
                None => {
                    b.error(index, "gate needs an explicit ID followed by a colon");
                    b.stand_ins.push((index as u32, format!("L{}", index + 1)));
                    (None, raw_title)
                }
            };
            if title.is_empty() {
                b.error(index, "gate outcome is blank");
            }
            b.gates.push(Gate::new(source, index, checked, id, title));
            let at = b.gates.len() - 1;
            let id = b.ids().get(at as u32);
            match b.gate_lines.first_line(b.ids(), id) {
                Some(first) => {
                    let message = format!("duplicate gate id {id} (first declared on line {first})");
                    b.error(index, message);
                }
                // Spelled out rather than `b.ids()`, which would borrow all
                // of `b` while `gate_lines` changes.
                None => b.gate_lines.declare(GateIds { gates: &b.gates, stand_ins: &b.stand_ins }, at),
            }
            b.seen_attributes.push(0);
            current = Some(b.gates.len() - 1);
            detached = false;
            continue;
        }

        let indent = leading_space_len(text);
        let body = &text[indent..];
        if indent > 0 && body.starts_with("ABANDON:") {
            b.error(index, "indented ABANDON is not applied; start ABANDON at column 1");
            current = None;
            continue;
        }
        if indent == 0 {
            match attribute_after(text) {
                Some(AttributeShape::Clean(key, _)) => {
                    b.error(
                        index,
                        format!("unindented {key} is not attached to a gate; indent attribute lines with spaces"),
                    );
                    detached = current.is_some() || detached;
                    current = None;
                    continue;
                }
                Some(AttributeShape::Broken(key)) => {
                    b.error(index, broken_attribute(key));
                    current = None;
                    continue;
                }
                None => {}
            }
        }
        if indent > 0 {
            if let Some(shape) = attribute_after(body) {
                let (key, value) = match shape {
                    AttributeShape::Clean(key, value) => (key, value),
                    AttributeShape::Broken(key) => {
                        b.error(index, broken_attribute(key));
                        continue;
                    }
                };
                let Some(gate_index) = current else {
                    if !detached {
                        b.error(index, format!("orphan {key} is not attached to a gate"));
                    }
                    continue;
                };
                let value = js_trim(value);
                if key != "EVIDENCE" {
                    if let Some(c) = forbidden_character(value) {
                        let shown = crate::visible::visible(c.encode_utf8(&mut [0; 4])).into_owned();
                        b.error(
                            index,
                            format!(
                                "{key} contains the control or bidirectional character {shown} (U+{:04X}), which \
                                 would hide what runs; remove it",
                                c as u32
                            ),
                        );
                    }
                }
                if key == "INPUTS" {
                    if let Err(message) = input_globs(value) {
                        b.error(index, message);
                    }
                }
                let bit = 1 << ATTRIBUTES.iter().position(|known| *known == key).unwrap_or_default();
                if b.seen_attributes[gate_index] & bit != 0 {
                    let id = b.ids().get(gate_index as u32).to_string();
                    b.error(index, format!("duplicate {key} for gate {id}"));
                }
                b.seen_attributes[gate_index] |= bit;
                if key == "INPUTS" {
                    let line = b.gates[gate_index].line() as u32;
                    b.inputs.push((line, TextSpan::of(source.as_str(), value)));
                } else {
                    b.gates[gate_index].set_attribute(key, value);
                }
                continue;
            }
        }

        // Read as prose, as the Node tool reads it, but said: a misspelled
        // CHECK turns a gate manual without a word otherwise.
        if let (true, Some(gate_index)) = (indent > 0, current) {
            if let Some((written, key)) = near_miss_attribute(body) {
                let gate = b.ids().get(gate_index as u32).to_string();
                let message = format!(
                    "{written}: is not an attribute, so gate-check reads this line as prose: did you mean {key}:?"
                );
                b.warnings.push(ParseWarning {
                    line: Some(index + 1),
                    kind: WarningKind::MisspelledAttribute,
                    gate,
                    message,
                });
            }
        }
        if let Some(rest) = text.strip_prefix("ABANDON:") {
            if parse_abandon(&mut b, index, rest) {
                current = None;
                continue;
            }
        }
        if let Some(rest) = text.strip_prefix("OWNS:") {
            let rest = rest.trim_start_matches(is_js_space);
            if is_single_js_line(rest) {
                if !b.gates.is_empty() {
                    b.error(index, "OWNS must appear before the first gate");
                    current = None;
                    continue;
                }
                let declared: Vec<&str> = rest.split(',').map(js_trim).filter(|s| !s.is_empty()).collect();
                if declared.is_empty() {
                    b.error(index, "OWNS declares no paths");
                }
                for item in declared {
                    match normalize_owns_glob(item) {
                        Ok(glob) => b.owns.push(glob),
                        Err(message) => b.error(index, message),
                    }
                }
                continue;
            }
        }
        if text.starts_with('#') || text.starts_with("- ") {
            current = None;
            detached = false;
        }
    }

    if let Some((_, opened)) = open_fence {
        b.error(opened, "unclosed fenced block");
    }
    source.keep_stand_ins(std::mem::take(&mut b.stand_ins));
    source.keep_inputs(std::mem::take(&mut b.inputs));
    finish_gates(&mut b);
    let unknown: Vec<(usize, String)> = b
        .abandoned
        .iter()
        .filter(|entry| b.gate_lines.first_line(b.ids(), &entry.id).is_none())
        .map(|entry| (entry.line, entry.id.clone()))
        .collect();
    for (line, id) in unknown {
        b.error(line, format!("ABANDON references unknown gate {id}"));
    }
    if b.gates.is_empty() {
        b.errors.push(ParseError { line: None, message: "ledger contains zero live gates".into() });
    }
    b.errors.sort_by_key(|e| e.line.unwrap_or(usize::MAX));

    (b.gates, b.abandoned, b.abandoned_ids, b.owns, b.errors, b.warnings)
}

/// Applies an `ABANDON:` line; false when the line does not have the
/// statement's shape (a reason spanning a line terminator).
fn parse_abandon(b: &mut Builder, index: usize, rest: &str) -> bool {
    let rest = rest.trim_start_matches(is_js_space);
    let id_end = rest.find(is_js_space).unwrap_or(rest.len());
    let (raw_id, after) = rest.split_at(id_end);
    let after = after.trim_start_matches(is_js_space);
    if !is_single_js_line(after) {
        return false;
    }
    let id = raw_id.strip_suffix(':').unwrap_or(raw_id);
    let reason = js_trim(after);
    if id.is_empty() {
        b.error(index, "ABANDON needs a gate id and reason");
    } else if reason.is_empty() {
        b.error(index, format!("ABANDON {id} needs a non-blank reason"));
    } else if b.abandoned_ids.contains(id) {
        b.error(index, format!("duplicate ABANDON for {id}"));
    } else {
        b.abandoned_ids.insert(id.to_string());
        b.abandoned.push(Abandonment { id: id.to_string(), reason: reason.to_string(), line: index });
    }
    true
}

/// Whole-gate rules: runnable gates need both CHECK and EXPECT, and EXPECT
/// must compile. Patterns are only validated here: a check that runs builds
/// its own (see `check::plan`), so reading a ledger keeps nothing per pattern.
fn finish_gates(b: &mut Builder) {
    for gate in &b.gates {
        let line = Some(gate.line() + 1);
        let id = gate.id();
        let has_check = gate.check().is_some_and(|c| !c.is_empty());
        let has_expect = gate.expect().is_some_and(|e| !e.is_empty());
        if gate.check() == Some("") || gate.expect() == Some("") {
            b.errors.push(ParseError { line, message: format!("gate {id}: CHECK and EXPECT cannot be blank") });
        } else if has_check != has_expect {
            b.errors.push(ParseError {
                line,
                message: format!("gate {id}: runnable gates require both non-blank CHECK and EXPECT"),
            });
        }
        let Some(expect) = gate.expect().filter(|e| !e.is_empty()) else { continue };
        match js_regex::validate(expect) {
            Ok(js_regex::Validated::Pattern { path_like: true }) => b.warnings.push(ParseWarning {
                line: None,
                kind: WarningKind::PathLikeExpect,
                gate: id.to_string(),
                message: format!(
                    "EXPECT {} is read as a regular expression, so its dots and other metacharacters \
                     are wildcards. Escape the inner slashes to keep the pattern, or drop the wrapping slashes to \
                     match a literal substring.",
                    serde_json::Value::from(expect)
                ),
            }),
            Ok(_) => {}
            Err(error) => {
                let hint = path_hint(expect).unwrap_or_default();
                b.errors.push(ParseError { line, message: format!("gate {id}: {error}{hint}") });
            }
        }
    }
}

/// For an EXPECT that failed to compile as a regex but reads like an
/// absolute path (`/usr/bin/env`: the last slash split off "flags" `env`),
/// how to write the text it most likely meant.
fn path_hint(expect: &str) -> Option<String> {
    let (source, flags) = expect.strip_prefix('/')?.rsplit_once('/')?;
    let path_like = !flags.is_empty() && !expect.contains(char::is_whitespace);
    path_like.then(|| {
        let escaped = expect.replace('/', "\\/");
        format!(
            "; hint: EXPECT is read as the regex /{source}/ with flags \"{flags}\"; to match the text {expect}, \
             drop the leading slash ({}) or escape the slashes (/{escaped}/)",
            &expect[1..]
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_skipped_as_prose_is_one_no_rule_of_the_grammar_reads() {
        let mut skipped = 0;
        for first in 0u8..0x80 {
            for rest in ["", " ", "[ ] A: x", "HECK: x", "WNS: a", "BANDON: A why", "``", "~~ x", ": y", "\u{2028}"] {
                let line = format!("{}{rest}", first as char);
                if !is_plain_prose(&line) {
                    continue;
                }
                skipped += 1;
                let body = &line[leading_space_len(&line)..];
                assert_eq!(leading_space_len(&line), 0, "{line:?}");
                assert!(fence::opening(&line).is_none() && gate_line(&line).is_none(), "{line:?}");
                assert!(attribute_after(body).is_none(), "{line:?}");
                for statement in ["ABANDON:", "OWNS:", "#", "- "] {
                    assert!(!line.starts_with(statement), "{line:?}");
                }
            }
        }
        // Empty lines and prose starting with letters, digits and most
        // punctuation are skipped; the check above is not vacuous.
        assert!(is_plain_prose("") && is_plain_prose("Some prose.") && skipped > 500, "{skipped}");
        for line in ["- [ ] A: x", "CHECK: x", "EVIDENCE: y", "OWNS: a", "ABANDON: A why", "# h", "```", " x", "\tx"] {
            assert!(!is_plain_prose(line), "{line:?}");
        }
    }

    #[test]
    fn the_ascii_fast_path_finds_what_the_character_class_finds() {
        for c in (0u32..0x3000).filter_map(char::from_u32) {
            for value in [format!("{c}"), format!("echo {c} done"), format!("é{c}")] {
                let slow = value.chars().find(|&c| crate::visible::is_forbidden_in_definition(c));
                assert_eq!(forbidden_character(&value), slow, "{c:?}");
            }
        }
        for line in ["  x", "\t x", "   ", "", "x  ", "  \u{3000}x", " \u{b}\u{a0}x", "\u{2028} x", " \u{7f}", "  é"] {
            let decoded = line.len() - line.trim_start_matches(is_js_space).len();
            assert_eq!(leading_space_len(line), decoded, "{line:?}");
        }
        assert_eq!(leading_space_len("  x"), 2);
        assert_eq!(leading_space_len("\u{3000}x"), 3);
        assert_eq!(leading_space_len("x  "), 0);
    }

    #[test]
    fn a_name_near_an_attribute_is_told_apart_from_prose() {
        let near = |line: &str| near_miss_attribute(line).map(|(written, key)| format!("{written}>{key}"));
        for (line, want) in [
            ("Check: make", "Check>CHECK"),
            ("expect: ok", "expect>EXPECT"),
            ("EXPECTS: ok", "EXPECTS>EXPECT"),
            ("CHEK: make", "CHEK>CHECK"),
            ("EVIDENSE: seen", "EVIDENSE>EVIDENCE"),
            ("Cwd: src", "Cwd>CWD"),
            ("INPUT: src/**", "INPUT>INPUTS"),
        ] {
            assert_eq!(near(line).as_deref(), Some(want), "{line}");
        }
        for line in ["CHECK: make", "Note: see above", "Expected output: 3", "OWNS: a", "CODE: x", "https://x", "a: b"]
        {
            assert_eq!(near(line), None, "{line}");
        }
        // Under a gate only, and the gate stays what the Node tool reads.
        let out = parse(
            "Check: not under a gate
- [ ] M1: m
  Check: make
  Expect: ok
- [ ] G1: g
  CHECK: make
  EXPECT: ok
",
        );
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        assert!(!out.document.gates[0].is_runnable() && out.document.gates[1].is_runnable());
        let warned: Vec<(Option<usize>, &str)> = out.warnings.iter().map(|w| (w.line, w.gate.as_str())).collect();
        assert_eq!(warned, [(Some(3), "M1"), (Some(4), "M1")]);
        assert_eq!(
            out.warnings[0].at("GATES.md").warning_line(),
            "GATES.md:3: warning: gate M1: Check: is not an attribute, so gate-check reads this line as prose: did \
             you mean CHECK:?"
        );
    }

    fn errors_of(text: &str) -> Vec<String> {
        parse(text).errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn parses_runnable_and_manual_gates() {
        let out = parse("# T\n- [ ] G1: one\n  CHECK: make\n  EXPECT: ok\n- [x] G2: two\n  EVIDENCE: seen\n");
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        let gates = &out.document.gates;
        assert_eq!(gates.len(), 2);
        assert!(gates[0].is_runnable() && !gates[0].checked());
        assert_eq!(gates[1].evidence(), Some("seen"));
        assert_eq!(gates[1].evidence_line(), Some(5));
    }

    #[test]
    fn a_gate_is_one_48_byte_record_of_spans_and_reads_its_lines_off_the_text() {
        // The size is what keeps a 100,000-gate status run near the file's
        // own size in memory (issue 23); a field added here costs that.
        assert_eq!(std::mem::size_of::<Gate>(), 48);
        let text = "\u{feff}# T\r\n- [x] A: first\r\n\r\n  CWD: sub\r\n\r\n  EVIDENCE:\r\n- [ ] no id here\n  CWD: x\n";
        let out = parse(text);
        let [a, stand_in] = [&out.document.gates[0], &out.document.gates[1]];
        assert_eq!((a.id(), a.title(), a.line(), a.checked()), ("A", "first", 1, true));
        assert_eq!((a.cwd(), a.cwd_line(), a.evidence(), a.evidence_line()), (Some("sub"), Some(3), Some(""), Some(5)));
        assert_eq!(
            (stand_in.id(), stand_in.title(), stand_in.line(), stand_in.checked()),
            ("L7", "no id here", 6, false)
        );
        assert_eq!((stand_in.cwd_line(), stand_in.evidence_line(), stand_in.check()), (Some(7), None, None));
        assert_eq!(out.errors.len(), 1, "{:?}", out.errors);
        // An empty EVIDENCE value is replaced on its own line.
        let mut document = out.document;
        let gate = document.gates[0].clone();
        document.set_evidence(&gate, "v");
        assert_eq!(document.render(), text.replace("EVIDENCE:\r", "EVIDENCE: v\r"));
    }

    #[test]
    fn inputs_are_root_relative_globs_of_a_gate() {
        let out = parse("- [ ] G: g\n  CHECK: make\n  INPUTS: ./src/**, tests/*.py ,docs\n  EXPECT: ok\n");
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        let gate = &out.document.gates[0];
        assert_eq!(gate.inputs(), Some("./src/**, tests/*.py ,docs"));
        assert_eq!(gate.input_globs(), ["src/**", "tests/*.py", "docs"]);
        assert!(gate.is_runnable(), "INPUTS does not end the gate's block");
        assert_eq!(parse("- [ ] G: g\n").document.gates[0].input_globs(), Vec::<String>::new());
        for (value, message) in [
            ("/etc/**", "line 2: INPUTS path must be relative: /etc/**"),
            ("src/../..", "line 2: INPUTS path cannot contain traversal: src/../.."),
            (" , ", "line 2: INPUTS declares no paths"),
            ("src/[a", "line 2: INPUTS glob src/[a is invalid: unclosed character class; missing ']'"),
        ] {
            let out = parse(format!("- [ ] G: g\n  INPUTS: {value}\n"));
            assert_eq!(out.errors.iter().map(ToString::to_string).collect::<Vec<_>>(), [message], "{value}");
        }
        let twice = parse("- [ ] G: g\n  INPUTS: a\n  INPUTS: b\n");
        assert_eq!(twice.errors[0].to_string(), "line 3: duplicate INPUTS for gate G");
        let unindented = parse("- [ ] G: g\nINPUTS: a\n");
        assert_eq!(
            unindented.errors[0].to_string(),
            "line 2: unindented INPUTS is not attached to a gate; indent attribute lines with spaces"
        );
    }

    #[test]
    fn a_text_over_the_ledger_limit_is_an_error_not_a_wrong_span() {
        let limit = crate::ledger::MAX_LEDGER_BYTES as usize;
        let mut text = String::from("- [ ] A: x\n  EVIDENCE: ");
        text.push_str(&"e".repeat(limit - text.len()));
        let at_limit = parse(text.clone());
        assert!(at_limit.errors.is_empty(), "{:?}", at_limit.errors);
        assert_eq!(at_limit.document.gates[0].evidence().map(str::len), Some(limit - 23));
        text.push('\n');
        let out = parse(text);
        assert_eq!(out.errors.len(), 1);
        assert_eq!(out.errors[0].message, format!("gate ledger exceeds {limit} bytes"));
        assert!(out.document.gates.is_empty());
    }

    #[test]
    fn gates_are_found_where_they_were_and_after_they_moved() {
        let document = parse("- [ ] A: a\n- [ ] B: b\n- [ ] C: c\n").document;
        assert_eq!(document.gate_near("B", 1).map(|g| g.line()), Some(1));
        assert_eq!(document.gate_near("B", 0).map(|g| g.line()), Some(1));
        assert_eq!(document.gate_near("A", 7).map(|g| g.line()), Some(0));
        assert!(document.gate_near("D", 2).is_none());
    }

    #[test]
    fn a_gate_reads_its_expect_as_a_pattern_or_a_substring() {
        let text = "- [ ] A: a\n  CHECK: c\n  EXPECT: /^o+k$/\n- [ ] C: c\n  CHECK: c\n  EXPECT: ok\n- [ ] D: d\n";
        let document = parse(text).document;
        let [a, c, d] = [0, 1, 2].map(|i| document.gates[i].expectation());
        assert!(matches!(&a, Some(js_regex::Expectation::Pattern(_))) && a.unwrap().matches("oook").unwrap());
        assert!(matches!(c, Some(js_regex::Expectation::Substring(s)) if s == "ok"));
        assert!(d.is_none());
    }

    #[test]
    fn render_is_byte_exact() {
        for text in ["- [ ] A: a\r\n  CHECK: x\n  EXPECT: y", "- [ ] A: a\n\n\n", "- [ ] A: a\r\r\n"] {
            assert_eq!(parse(text).document.render(), text);
        }
    }

    #[test]
    fn a_byte_order_mark_is_kept_but_hides_nothing() {
        let text = "\u{feff}- [ ] A: a\n  CHECK: x\n  EXPECT: y\n";
        let out = parse(text);
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        assert_eq!(out.document.gates[0].id(), "A");
        let mut document = out.document;
        document.set_checked(0, true);
        assert_eq!(document.render(), text.replacen("[ ]", "[x]", 1));
    }

    #[test]
    fn unclean_attribute_lines_are_errors() {
        let has = |text: &str, wanted: &str| errors_of(text).iter().any(|e| e.contains(wanted));
        assert!(has("- [ ] A: x\n  CHECK: a\rb\n  EXPECT: y\n", "line 2: CHECK value contains a line terminator"));
        assert!(has("- [ ] A: x\nEXPECT: a\u{2029}\n", "line 2: EXPECT value contains a line terminator"));
        assert!(has("- [ ] A: x\n  CHECK: a\u{1b}b\n  EXPECT: y\n", "line 2: CHECK contains the control"));
        assert!(errors_of("- [ ] A: x\n  CHECK: a\tb\n  EXPECT: y\n").is_empty());
        assert!(errors_of("- [ ] A: x\n  EVIDENCE: seen \u{1b}\n").is_empty());
    }

    #[test]
    fn id_rules() {
        assert!(errors_of("- [ ] no id here\n")[0].contains("explicit ID"));
        assert!(errors_of("- [ ] a/b: x\n")[0].contains("invalid gate id a/b"));
        assert!(errors_of("- [ ] A: x\n- [ ] A: y\n")[0].contains("duplicate gate id A (first declared on line 1)"));
        // A stand-in id is declared too, and ABANDON finds a gate declared
        // anywhere in the ledger, and only such a gate.
        assert!(errors_of("- [ ] no id\n- [ ] L1: x\n")[1].contains("duplicate gate id L1 (first declared on line 1)"));
        assert!(errors_of("- [ ] A: x\n- [ ] B: y\nABANDON: B gone\n").is_empty());
        assert!(errors_of("- [ ] A: x\nABANDON: C gone\n")[0].contains("ABANDON references unknown gate C"));
        assert!(errors_of("- [ ] A:\n")[0].contains("outcome is blank"));
        assert_eq!(parse("- [ ] a:b: x\n").document.gates[0].id(), "a:b");
    }

    #[test]
    fn attribute_rules() {
        assert!(errors_of("- [ ] A: x\nCHECK: y\n")[0].contains("unindented CHECK"));
        // One unindented attribute is one mistake: the indented ones after it are not orphans too.
        let detached = errors_of("- [ ] A: x\nCHECK: y\n  EXPECT: z\n  EVIDENCE: pending\n");
        assert_eq!(detached.len(), 1, "{detached:?}");
        // ... until something else starts.
        assert_eq!(errors_of("- [ ] A: x\nCHECK: y\n# Notes\n  EXPECT: z\n").len(), 2);
        assert!(errors_of("  CHECK: y\n- [ ] A: x\n")[0].contains("orphan CHECK"));
        assert!(errors_of("- [ ] A: x\n  CHECK: y\n")[0].contains("require both"));
        assert!(errors_of("- [ ] A: x\n  CHECK:\n  EXPECT: z\n")[0].contains("cannot be blank"));
        assert!(errors_of("- [ ] A: x\n  CWD: a\n  CWD: b\n")[0].contains("duplicate CWD"));
        assert!(errors_of("- [ ] A: x\n  CHECK: a\n  EXPECT: /(/\n")[0].contains("invalid EXPECT regex"));
    }

    #[test]
    fn abandon_rules() {
        let ok = parse("- [ ] A: x\nABANDON: A: out of scope\n");
        assert!(ok.errors.is_empty());
        assert_eq!(ok.document.abandoned[0].reason, "out of scope");
        assert!(errors_of("- [ ] A: x\nABANDON: A\n")[0].contains("non-blank reason"));
        assert!(errors_of("- [ ] A: x\nABANDON: B because\n")[0].contains("unknown gate B"));
        assert!(errors_of("- [ ] A: x\n  ABANDON: A why\n")[0].contains("indented ABANDON"));
    }

    #[test]
    fn owns_rules() {
        let ok = parse("OWNS: ./src/**, docs//a.md\n- [ ] A: x\n");
        assert_eq!(ok.document.owns, vec!["src/**", "docs/a.md"]);
        assert!(errors_of("OWNS: /abs\n- [ ] A: x\n")[0].contains("must be relative"));
        assert!(errors_of("OWNS: a/../b\n- [ ] A: x\n")[0].contains("traversal"));
        assert!(errors_of("- [ ] A: x\nOWNS: a\n")[0].contains("before the first gate"));
    }

    #[test]
    fn fences_hide_gates() {
        let text = "- [ ] A: x\n````md\n- [ ] A: dup\n```\nCHECK: hidden\n````\n";
        assert!(parse(text).errors.is_empty());
        assert!(errors_of("- [ ] A: x\n```\n")[0].contains("line 2: unclosed fenced block"));
        assert!(errors_of("```\n- [ ] A: x\n```\n")[0].contains("zero live gates"));
    }

    #[test]
    fn insert_and_replace_evidence() {
        let mut doc = parse("- [ ] A: x\r\n  CHECK: c\r\n  EXPECT: e\r\n# next\r\n").document;
        let gate = doc.gates[0].clone();
        doc.set_checked(gate.line(), true);
        doc.set_evidence(&gate, "v");
        assert_eq!(doc.render(), "- [x] A: x\r\n  CHECK: c\r\n  EXPECT: e\r\n  EVIDENCE: v\r\n# next\r\n");
        let mut doc = parse("- [x] A: x\n\tEVIDENCE: old\n  CHECK: c\n  EXPECT: e").document;
        let gate = doc.gates[0].clone();
        doc.set_checked(gate.line(), false);
        doc.set_evidence(&gate, "pending");
        assert_eq!(doc.render(), "- [ ] A: x\n\tEVIDENCE: pending\n  CHECK: c\n  EXPECT: e");
        let mut doc = parse("- [ ] A: x\n  CHECK: c\n  EXPECT: e").document;
        let gate = doc.gates[0].clone();
        doc.set_evidence(&gate, "v");
        assert_eq!(doc.render(), "- [ ] A: x\n  CHECK: c\n  EXPECT: e\n  EVIDENCE: v");
    }
}
