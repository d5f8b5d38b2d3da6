//! The ledger's hand-written fence scanner against a CommonMark parser
//! (pulldown-cmark) as oracle, in a differential property test: for
//! generated documents the lines the ledger parser treats as fenced are
//! exactly the lines of CommonMark's fenced code blocks, except where the
//! Node tool's line rules, which gate-check keeps, depart from CommonMark.
//! Each departure is a named exception below: a documented rewrite of the
//! oracle's input that makes CommonMark read those lines as the Node tool
//! does, with a witness showing that the departure is real and that the
//! parser keeps the Node rule. Nothing is spawned: the scanner is observed
//! through the public parser, by whether a gate appended after a line is
//! hidden.

use gate_check::ledger::parse;
use proptest::prelude::*;
use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag};

/// A generated document: its lines (none holds a LF), how they end, and
/// whether a byte order mark leads.
#[derive(Debug, Clone)]
struct Doc {
    bom: bool,
    lines: Vec<String>,
    eol: &'static str,
    final_eol: bool,
}

impl Doc {
    fn new(bom: bool, mut lines: Vec<String>, crlf: bool, mut final_eol: bool) -> Doc {
        // An empty unterminated last line is no line: spell that text with
        // a final terminator instead, so each entry of `lines` is a line.
        if !final_eol && lines.len() > 1 && lines.last().is_some_and(String::is_empty) {
            lines.pop();
            final_eol = true;
        }
        Doc { bom, lines, eol: if crlf { "\r\n" } else { "\n" }, final_eol }
    }

    fn from_text(text: &str) -> Doc {
        let bom = text.starts_with('\u{feff}');
        let body = text.trim_start_matches('\u{feff}');
        let crlf = body.contains("\r\n");
        let final_eol = body.ends_with('\n');
        let body = body.strip_suffix('\n').unwrap_or(body);
        let lines = body.split('\n').map(|line| line.strip_suffix('\r').unwrap_or(line).to_string()).collect();
        Doc::new(bom, lines, crlf, final_eol)
    }

    /// The text of the first `count` lines, without a final terminator.
    fn prefix(&self, count: usize) -> String {
        let bom = if self.bom { "\u{feff}" } else { "" };
        format!("{bom}{}", self.lines[..count].join(self.eol))
    }

    fn text(&self) -> String {
        let mut text = self.prefix(self.lines.len());
        if self.final_eol {
            text.push_str(self.eol);
        }
        text
    }
}

const PROBE_ID: &str = "FENCE-PROBE";

/// The ledger parser's reading: which lines are fenced. A line is fenced
/// when a fence is open before it (it is content or closes the fence) or
/// after it (it opens one); a fence is open after line `n` when a gate
/// appended there is hidden.
fn scanner_reading(doc: &Doc) -> Vec<bool> {
    let open_after: Vec<bool> = (1..=doc.lines.len())
        .map(|count| {
            let probed = format!("{}{}- [ ] {PROBE_ID}: p", doc.prefix(count), doc.eol);
            !parse(probed).document.gates.iter().any(|gate| gate.id() == PROBE_ID)
        })
        .collect();
    (0..doc.lines.len()).map(|at| open_after[at] || (at > 0 && open_after[at - 1])).collect()
}

/// pulldown-cmark's reading (CommonMark, no extensions) of `doc`: which
/// lines its fenced code blocks cover, lines split as the ledger parser
/// splits them (at LF, a CR before it belonging to the terminator).
fn commonmark_reading(doc: &Doc) -> Vec<bool> {
    let text = doc.text();
    let mut starts = vec![0];
    starts.extend(text.match_indices('\n').map(|(at, _)| at + 1));
    let line_of = |offset: usize| starts.partition_point(|&start| start <= offset) - 1;
    let mut fenced = vec![false; doc.lines.len()];
    for (event, range) in Parser::new(&text).into_offset_iter() {
        if let Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) = event {
            let last = line_of(range.end.saturating_sub(1).max(range.start));
            fenced[line_of(range.start)..=last].fill(true);
        }
    }
    fenced
}

/// A place where gate-check's fence rule, the Node tool's, departs from
/// what pulldown-cmark reads.
struct Exception {
    name: &'static str,
    /// Rewrites the oracle's input so CommonMark reads the concerned lines
    /// as the Node tool does, keeping every line in its place.
    rewrite: fn(&mut Doc),
    /// A document on which the two readings differ without the rewrite.
    witness: &'static str,
    /// The witness's fenced lines (zero-based), gate-check's reading.
    kept: &'static [usize],
}

/// Up to three spaces, then `rest`: where CommonMark looks for a block's
/// marker.
fn after_indent(line: &str) -> (usize, &str) {
    let indent = line.bytes().take_while(|&b| b == b' ').count().min(3);
    (indent, &line[indent..])
}

/// Whether `rest` (after the indentation) opens a list item or a block quote.
fn opens_container(rest: &str) -> bool {
    let spaced = |after: &str| after.is_empty() || after.starts_with([' ', '\t']);
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    rest.starts_with('>')
        || (rest.starts_with(['-', '+', '*']) && spaced(&rest[1..]))
        || ((1..=9).contains(&digits) && rest[digits..].starts_with(['.', ')']) && spaced(&rest[digits + 1..]))
}

/// A backslash before the marker makes it text to CommonMark.
fn escape_at(line: &mut String, at: usize) {
    line.insert(at, '\\');
}

/// Whether `line` has the shape of a closing fence: up to three spaces, a
/// run of three or more of one marker, then only spaces or tabs.
fn closing_fence_shaped(line: &str) -> bool {
    let (_, rest) = after_indent(line);
    let Some(marker) = rest.chars().next().filter(|c| matches!(c, '`' | '~')) else { return false };
    let run = rest.chars().take_while(|&c| c == marker).count();
    run >= 3 && rest[run..].chars().all(|c| c == ' ' || c == '\t')
}

const EXCEPTIONS: [Exception; 5] = [
    // CONTAINERS. The Node tool has no list items or block quotes: a fence
    // is a fence by its own line at the top level. So `- ```` and `> ```` are
    // prose, and a fence indented under a list item (at most three spaces)
    // stays open past the item's end, until its own closing line; in
    // CommonMark the fence belongs to the item and ends with it. Rewrite:
    // the marker of every line that opens a list item or block quote is
    // escaped, so CommonMark has no containers either.
    Exception {
        name: "containers",
        rewrite: |doc| {
            for line in &mut doc.lines {
                let (indent, rest) = after_indent(line);
                if opens_container(rest) {
                    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                    escape_at(line, indent + digits);
                }
            }
        },
        witness: "- an example:\n  ```\n- [ ] G1: a gate\n  ```\n> ```\n",
        kept: &[1, 2, 3],
    },
    // HTML_BLOCKS. The Node tool has no HTML blocks: a fence line inside
    // `<details>`, `<pre>` or an `<!-- -->` comment opens or closes a fence;
    // CommonMark reads it as raw HTML up to the block's end. Rewrite: a
    // leading `<` is escaped.
    Exception {
        name: "html-blocks",
        rewrite: |doc| {
            for line in &mut doc.lines {
                let (indent, rest) = after_indent(line);
                if rest.starts_with('<') {
                    escape_at(line, indent);
                }
            }
        },
        witness: "<details>\n```\n</details>\n\n- [ ] G1: a gate\n```\n",
        kept: &[1, 2, 3, 4, 5],
    },
    // JS_LINE_TERMINATORS. The Node tool splits lines at LF and CRLF only,
    // and its fence patterns end in JavaScript's `.` and `$`, which refuse a
    // lone CR, U+2028 and U+2029: a line holding one is a single line that
    // never opens or closes a fence. CommonMark ends a line at a lone CR,
    // and takes U+2028 and U+2029 as text of an info string. Rewrite: such
    // a line becomes a plain word.
    Exception {
        name: "javascript-line-terminators",
        rewrite: |doc| {
            for line in &mut doc.lines {
                if line.contains(['\r', '\u{2028}', '\u{2029}']) {
                    *line = "text".into();
                }
            }
        },
        witness: "```\rjs\n- [ ] G1: a gate\n~~~ info\u{2028}\n- [ ] G2: a gate\n",
        kept: &[],
    },
    // CLOSING_FENCE_TAB. Not the Node tool's departure but pulldown-cmark's:
    // CommonMark (since 0.30: "may be followed only by spaces or tabs") and
    // cmark close a block at a closing fence followed by a tab, as gate-check
    // and the Node tool (`[ \t]*$`) do; pulldown-cmark 0.13 reads the line as
    // content. Rewrite: such a line's tabs become spaces.
    Exception {
        name: "closing-fence-tab",
        rewrite: |doc| {
            for line in &mut doc.lines {
                if closing_fence_shaped(line) {
                    *line = line.replace('\t', " ");
                }
            }
        },
        witness: "~~~\n~~~\t\n- [ ] G1: a gate\n",
        kept: &[0, 1],
    },
    // BYTE_ORDER_MARK. gate-check reads a leading byte order mark as no
    // part of the first line, as cmark and commonmark.js do, so a fence
    // there opens; pulldown-cmark reads it as a character of the first
    // line, which is then prose. (The Node tool reads it as pulldown-cmark
    // does; gate-check departs deliberately, see the CHANGELOG.) Rewrite:
    // the mark is dropped.
    Exception {
        name: "byte-order-mark",
        rewrite: |doc| doc.bom = false,
        witness: "\u{feff}```\n- [ ] G1: an example\n```\n",
        kept: &[0, 1, 2],
    },
];

/// CommonMark's reading of `doc` as the Node tool reads it: every
/// exception's rewrite applied.
fn commonmark_reading_with_exceptions(doc: &Doc) -> Vec<bool> {
    let mut rewritten = doc.clone();
    for exception in &EXCEPTIONS {
        (exception.rewrite)(&mut rewritten);
    }
    commonmark_reading(&rewritten)
}

fn fenced_lines(reading: &[bool]) -> Vec<usize> {
    reading.iter().enumerate().filter(|(_, fenced)| **fenced).map(|(at, _)| at).collect()
}

#[test]
fn each_exception_is_a_real_departure_and_the_parser_keeps_the_node_rule() {
    for exception in &EXCEPTIONS {
        let doc = Doc::from_text(exception.witness);
        assert_eq!(doc.text(), exception.witness, "{}: the witness round-trips", exception.name);
        let scanner = fenced_lines(&scanner_reading(&doc));
        assert_eq!(scanner, exception.kept, "{}: gate-check's reading", exception.name);
        let plain = fenced_lines(&commonmark_reading(&doc));
        assert_ne!(plain, scanner, "{}: CommonMark reads the witness the same way", exception.name);
        let mut rewritten = doc.clone();
        (exception.rewrite)(&mut rewritten);
        assert_eq!(
            fenced_lines(&commonmark_reading(&rewritten)),
            scanner,
            "{}: the rewrite explains it",
            exception.name
        );
    }
    // What the parser makes of the witnesses: the gates the Node rule shows.
    let ids = |name: &str| -> Vec<String> {
        let exception = EXCEPTIONS.iter().find(|exception| exception.name == name).unwrap();
        parse(exception.witness).document.gates.iter().map(|gate| gate.id().to_string()).collect()
    };
    assert!(ids("containers").is_empty(), "the list item's fence hides G1");
    assert!(ids("html-blocks").is_empty(), "the fence opened in the HTML block hides G1");
    assert_eq!(ids("javascript-line-terminators"), ["G1", "G2"], "neither terminator line opens a fence");
    assert_eq!(ids("closing-fence-tab"), ["G1"], "the tab does not keep the fence open");
    assert!(ids("byte-order-mark").is_empty(), "the fence after the mark hides G1");
}

/// Fence lines: either marker, runs of 2 to 6 (two is no fence), 0 to 4
/// spaces or a tab of indentation, and every kind of tail: none, blanks,
/// info strings (a backtick inside one), trailing text, the other marker.
fn fence_line() -> impl Strategy<Value = String> {
    let indent = prop_oneof![
        Just(""),
        Just(""),
        Just(" "),
        Just("  "),
        Just("   "),
        Just("    "),
        Just("\t"),
        Just(" \t"),
        Just("   \t")
    ];
    let marker = prop_oneof![Just('`'), Just('~')];
    let tail = prop_oneof![
        Just(""),
        Just(""),
        Just(""),
        Just(" "),
        Just(" \t "),
        Just("\t"),
        Just("rust"),
        Just(" markdown title=\"x\""),
        Just("\tjs"),
        Just(" a`b"),
        Just("`"),
        Just(" ``"),
        Just("~"),
        Just(" ~~~"),
        Just(" x"),
        Just("x ```"),
        Just(" ```"),
    ];
    (indent, marker, 2usize..=6, tail)
        .prop_map(|(indent, marker, length, tail)| format!("{indent}{}{tail}", marker.to_string().repeat(length)))
}

/// Lines that are no fence: prose, blank, indented code, headings, inline
/// code spans.
fn prose_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("text".to_string()),
        Just(String::new()),
        Just("    indented ```".to_string()),
        Just("\tcode".to_string()),
        Just("# heading".to_string()),
        Just("a ``` b".to_string()),
        Just("`` span ``".to_string()),
        Just("~~ struck ~~".to_string()),
        Just("---".to_string()),
    ]
}

/// Lines on which the Node tool departs from CommonMark: gates and other
/// list items, block quotes, HTML blocks, and line terminators JavaScript
/// refuses, alone or before a fence.
fn departure_line() -> impl Strategy<Value = String> {
    let container = prop_oneof![
        Just("- "),
        Just("* "),
        Just("+ "),
        Just("1. "),
        Just("12) "),
        Just("> "),
        Just(">"),
        Just("  - "),
        Just("> - "),
        Just("- [ ] G1: "),
        Just("- [x] G2: "),
    ];
    prop_oneof![
        (container, prop_oneof![fence_line(), prose_line()]).prop_map(|(container, rest)| format!("{container}{rest}")),
        Just("  CHECK: make test".to_string()),
        Just("<details>".to_string()),
        Just("</details>".to_string()),
        Just("<!-- a comment".to_string()),
        Just("-->".to_string()),
        Just("<pre>".to_string()),
        Just("</pre>".to_string()),
        Just("  <div>".to_string()),
        Just("```\rjs".to_string()),
        Just("text\r```".to_string()),
        Just("~~~ info\u{2028}".to_string()),
        Just("```\u{2029}".to_string()),
        Just("  ```\r ".to_string()),
    ]
}

fn document(line: impl Strategy<Value = String>) -> impl Strategy<Value = Doc> {
    (any::<bool>(), prop::collection::vec(line, 1..24), any::<bool>(), any::<bool>())
        .prop_map(|(bom, lines, crlf, final_eol)| Doc::new(bom, lines, crlf, final_eol))
}

/// Case counts of the two properties (each case parses its document once
/// per line, and once with pulldown-cmark).
const TOP_LEVEL_CASES: u32 = 4096;
const DEPARTURE_CASES: u32 = 2048;

proptest! {
    #![proptest_config(ProptestConfig { cases: TOP_LEVEL_CASES, ..ProptestConfig::default() })]

    /// Top-level fences only: the scanner and CommonMark agree line for line
    /// (of the exceptions, only the byte order mark's has anything to rewrite).
    #[test]
    fn top_level_fences_are_read_as_commonmark_reads_them(
        doc in document(prop_oneof![3 => fence_line(), 2 => prose_line()])
    ) {
        prop_assert_eq!(scanner_reading(&doc), commonmark_reading_with_exceptions(&doc), "{:?}", doc.text());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: DEPARTURE_CASES, ..ProptestConfig::default() })]

    /// With containers, HTML blocks and JavaScript line terminators mixed in,
    /// the readings agree once the named exceptions are applied, and no other
    /// difference is left.
    #[test]
    fn departures_from_commonmark_are_the_named_exceptions_only(
        doc in document(prop_oneof![2 => fence_line(), 1 => prose_line(), 2 => departure_line()])
    ) {
        prop_assert_eq!(scanner_reading(&doc), commonmark_reading_with_exceptions(&doc), "{:?}", doc.text());
    }
}
