//! The gate linter: judges whether a parsed ledger's oracles are worth
//! passing. The checker and the Stop hook decide whether gates are met; this
//! asks whether meeting them would prove anything, and whether readers of
//! the rendered Markdown see the gates gate-check reads. Pure: it reads a
//! `Document` and never executes, resolves or opens anything.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag};

use crate::ledger::fence::{self, Fence};
use crate::ledger::{body_start, lines, Document, Gate, ParseWarning, WarningKind};
use crate::shell_words::{tokenize, Token};
use crate::terminal;
use js_regex::Expectation;

/// As in the Node linter, only a ledger that cannot be parsed is an error;
/// every rule is advisory (a warning, a failure only under `--strict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Severity {
    #[serde(rename = "error")]
    Error,
    #[serde(rename = "warn")]
    Warning,
}

/// One finding about one ledger, serialized in the Node linter's shape
/// (`file`, `level`, `gate`, `rule`, `message`) plus the one-based `line`
/// (`None` for findings about the ledger as a whole).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub file: String,
    #[serde(rename = "level")]
    pub severity: Severity,
    pub gate: Option<String>,
    #[serde(rename = "rule")]
    pub code: &'static str,
    pub message: String,
    pub line: Option<usize>,
}

/// Every rule the linter has, by the name its findings carry.
pub const RULES: [&str; 15] = [
    "activity-not-outcome",
    "allow-unknown-rule",
    "commonmark-disagrees",
    "copied-number",
    "expect-in-check",
    "expect-matches-failure",
    "manual-gate",
    "misspelled-attribute",
    "mostly-manual",
    "path-read-as-regex",
    "small-ledger",
    "tautological-check",
    "unmeasured-number",
    "weak-abandon-reason",
    "weak-expect",
];

/// How a ledger allows a rule: a line of its own, outside code fences,
/// `<!-- lint-allow: RULE [GATE ...] -->`; without gate ids the rule is
/// allowed for the whole ledger.
const ALLOW_DIRECTIVE: &str = "<!-- lint-allow:";

/// One rule a ledger allows, for some gates or (`gates` empty) all of it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Allowance {
    rule: String,
    gates: Vec<String>,
}

/// The ledger's `lint-allow` directives, and a finding for each naming a
/// rule the linter does not have (so a typo cannot hide as an allowance).
fn allowances(file: &str, document: &Document) -> (Vec<Allowance>, Vec<Finding>) {
    let (mut allowed, mut findings) = (Vec::new(), Vec::new());
    let text = document.source();
    for (at, (range, fence)) in ledger_fences(text).enumerate() {
        let line = &text[range];
        if fence.is_some() {
            continue;
        }
        let Some(body) = line.trim().strip_prefix(ALLOW_DIRECTIVE).and_then(|rest| rest.strip_suffix("-->")) else {
            continue;
        };
        let mut words = body.split_whitespace();
        let Some(rule) = words.next() else { continue };
        if !RULES.contains(&rule) {
            findings.push(Finding {
                file: file.to_string(),
                severity: Severity::Warning,
                gate: None,
                code: "allow-unknown-rule",
                message: format!("lint-allow names {}, which is no rule of the linter", quoted(rule)),
                line: Some(at + 1),
            });
            continue;
        }
        allowed.push(Allowance { rule: rule.to_string(), gates: words.map(str::to_string).collect() });
    }
    (allowed, findings)
}

impl Allowance {
    fn covers(&self, finding: &Finding) -> bool {
        self.rule == finding.code
            && (self.gates.is_empty() || finding.gate.as_ref().is_some_and(|gate| self.gates.contains(gate)))
    }
}

/// Lints one ledger and drops what it is told to allow: the rules in
/// `allow` (`lint --allow`) everywhere, and the ledger's own `lint-allow`
/// directives where they say.
pub fn lint_allowing(file: &str, document: &Document, warnings: &[ParseWarning], allow: &[String]) -> Vec<Finding> {
    let (allowed, mut findings) = allowances(file, document);
    findings.extend(lint(file, document));
    findings.extend(misspelled_attributes(file, warnings));
    findings.retain(|finding| {
        !allow.iter().any(|rule| rule == finding.code) && !allowed.iter().any(|allowance| allowance.covers(finding))
    });
    findings
}

/// The parser's near-miss attribute names (`Check:`, `EXPECTS:`) as
/// findings at their lines: the checker reads such a line as prose, so the
/// gate may have turned manual, or half-runnable and unparseable.
pub fn misspelled_attributes(file: &str, warnings: &[ParseWarning]) -> Vec<Finding> {
    warnings
        .iter()
        .filter(|warning| warning.kind == WarningKind::MisspelledAttribute)
        .map(|warning| Finding {
            file: file.to_string(),
            severity: Severity::Warning,
            gate: Some(warning.gate.clone()),
            code: "misspelled-attribute",
            message: warning.message.clone(),
            line: warning.line,
        })
        .collect()
}

/// Each line of the ledger text (its byte range), as the parser numbers
/// them (a leading byte order mark is no part of the first), with the line
/// of the fence holding it by the ledger's own rule: the parser's walk, in
/// which only top-level fences count, as in the Node tool, and a fence's
/// opening and closing lines are inside it.
fn ledger_fences(text: &str) -> impl Iterator<Item = (Range<usize>, Option<usize>)> + '_ {
    let mut open: Option<(Fence, usize)> = None;
    lines(text, body_start(text)).enumerate().map(move |(index, (range, _))| {
        let line = &text[range.clone()];
        let holder = match open {
            Some((fence, opened)) => {
                if fence.is_closed_by(line) {
                    open = None;
                }
                Some(opened)
            }
            None => {
                open = fence::opening(line).map(|fence| (fence, index));
                open.map(|(_, opened)| opened)
            }
        };
        (range, holder)
    })
}

/// The line opening the CommonMark fenced code block that holds each line
/// (`lines`: the parser's lines, as byte ranges of `text`). The text after a
/// byte order mark is read, as cmark and commonmark.js read it; and a
/// closing fence's trailing tabs are read as spaces, since CommonMark (from
/// 0.30) and cmark close a block there where pulldown-cmark 0.13 reads on.
fn commonmark_fences(text: &str, lines: &[Range<usize>]) -> Vec<Option<usize>> {
    let body = body_start(text);
    let mut read = Cow::Borrowed(&text[body..]);
    for line in lines {
        let shown = &text[line.clone()];
        if shown.contains('\t') && fence::opening(shown).is_some_and(|fence| fence.is_closed_by(shown)) {
            // One space per tab keeps every offset.
            read.to_mut().replace_range(line.start - body..line.end - body, &shown.replace('\t', " "));
        }
    }
    let line_of = |offset: usize| lines.partition_point(|line| line.start <= offset).saturating_sub(1);
    let mut held = vec![None; lines.len()];
    for (event, range) in Parser::new(&read).into_offset_iter() {
        if let Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) = event {
            let first = line_of(body + range.start);
            let last = line_of(body + range.end.saturating_sub(1).max(range.start));
            held[first..=last].fill(Some(first));
        }
    }
    held
}

/// How one line's two readings disagree, with the line opening the fence
/// that holds it in the reading that takes it for code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Disagreement {
    /// gate-check reads the line; CommonMark renders it as code.
    RenderedAsCode { opened: usize },
    /// gate-check skips the line inside a fence; CommonMark renders it as text.
    Skipped { opened: usize },
}

/// What the ledger grammar reads in a line.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Statement {
    /// A gate line, with its id (none when it lacks one).
    Gate(Option<String>),
    Abandon(String),
    /// An attribute line, by its keyword.
    Attribute(&'static str),
}

impl Statement {
    /// The line in what it reads as, taken on its own: a gate, an ABANDON,
    /// or (after a gate) an attribute. The parser itself decides, so the
    /// linter keeps no copy of the grammar.
    fn of(line: &str) -> Option<Statement> {
        let alone = crate::ledger::parse(line);
        if let Some(gate) = alone.document.gates.first() {
            return Some(Statement::Gate((!gate.has_stand_in_id()).then(|| gate.id().to_string())));
        }
        if let Some(abandonment) = alone.document.abandoned.first() {
            return Some(Statement::Abandon(abandonment.id.clone()));
        }
        let after_gate = crate::ledger::parse(format!("- [ ] G: g\n{line}"));
        let gate = after_gate.document.gates.first()?;
        let set = [
            ("CHECK", gate.check().is_some()),
            ("EXPECT", gate.expect().is_some()),
            ("CWD", gate.cwd().is_some()),
            ("EVIDENCE", gate.evidence().is_some()),
        ];
        set.into_iter().find(|(_, set)| *set).map(|(key, _)| Statement::Attribute(key))
    }

    fn name(&self) -> String {
        match self {
            Statement::Gate(_) => "gate".into(),
            Statement::Abandon(_) => "ABANDON".into(),
            Statement::Attribute(key) => format!("{key} line"),
        }
    }

    /// The name with its indefinite article.
    fn a_name(&self) -> String {
        let article = if matches!(self, Statement::Abandon(_)) { "an" } else { "a" };
        format!("{article} {}", self.name())
    }
}

/// `commonmark-disagrees`: ledger lines that gate-check and CommonMark put
/// on different sides of a code fence. gate-check keeps the Node tool's
/// rule (a fence counts by its own line, at the top level), while readers
/// see the rendered Markdown: a real gate can sit in a fence the rendering
/// does not show, and an example in a list item's code block can be live.
/// One finding per gate or ABANDON line; attribute lines only where no gate
/// or ABANDON of the same stretch is reported.
fn fence_disagreements(file: &str, document: &Document) -> Vec<Finding> {
    let text = document.source();
    // Without a run of three markers neither reading has a fence, and the
    // CommonMark parse is skipped.
    if memchr::memmem::find(text.as_bytes(), b"```").is_none()
        && memchr::memmem::find(text.as_bytes(), b"~~~").is_none()
    {
        return Vec::new();
    }
    let (ranges, own): (Vec<Range<usize>>, Vec<Option<usize>>) = ledger_fences(text).unzip();
    let commonmark = commonmark_fences(text, &ranges);
    let disagreement = |at: usize| match (own[at], commonmark[at]) {
        (None, Some(opened)) => Some(Disagreement::RenderedAsCode { opened }),
        (Some(opened), None) => Some(Disagreement::Skipped { opened }),
        _ => None,
    };
    let mut findings = Vec::new();
    let mut at = 0;
    while at < ranges.len() {
        let Some(kind) = disagreement(at) else {
            at += 1;
            continue;
        };
        // The stretch of lines that disagree alike.
        let stretch = at..(at..ranges.len()).find(|&next| disagreement(next) != Some(kind)).unwrap_or(ranges.len());
        let statements: Vec<(usize, Statement)> = stretch
            .clone()
            .filter_map(|line| Statement::of(&text[ranges[line].clone()]).map(|statement| (line, statement)))
            .collect();
        let names_a_gate = statements.iter().any(|(_, statement)| !matches!(statement, Statement::Attribute(_)));
        for (line, statement) in statements {
            let gate = match (&statement, kind) {
                (Statement::Attribute(_), _) if names_a_gate => continue,
                (Statement::Gate(id), _) => id.clone(),
                (Statement::Abandon(id), _) => Some(id.clone()),
                // A live attribute belongs to the gate above it.
                (Statement::Attribute(_), Disagreement::RenderedAsCode { .. }) => {
                    let above = document.gates.partition_point(|gate| gate.line() < line);
                    above.checked_sub(1).map(|gate| document.gates[gate].id().to_string())
                }
                (Statement::Attribute(_), Disagreement::Skipped { .. }) => None,
            };
            let (what, a_what) = (statement.name(), statement.a_name());
            let message = match kind {
                Disagreement::RenderedAsCode { opened } => format!(
                    "this {what} counts for gate-check (as for the Node tool), but CommonMark renders it inside the \
                     code block opened on line {}: readers see an example",
                    opened + 1
                ),
                Disagreement::Skipped { opened } => format!(
                    "this {what} is inside the fence opened on line {}, so gate-check skips it (as the Node tool \
                     does), but CommonMark renders it outside any code block: readers see {a_what} that does not count",
                    opened + 1
                ),
            };
            findings.push(Finding {
                file: file.to_string(),
                severity: Severity::Warning,
                gate,
                code: "commonmark-disagrees",
                message,
                line: Some(line + 1),
            });
        }
        at = stretch.end;
    }
    findings
}

/// Findings a report lists, as in the Node linter; the rest are counted.
pub const MAX_REPORTED_FINDINGS: usize = 64;
/// Largest `--json` document; findings are dropped from the end to fit.
const MAX_JSON_REPORT_BYTES: usize = 256 * 1024;

/// Commands whose output and exit status are fixed by their own text.
const FIXED_OUTPUT_COMMANDS: [&str; 4] = ["echo", "printf", "true", ":"];

/// Commands that print only what they find, so a pattern in their arguments
/// is not output they print on their own.
const SEARCH_COMMANDS: [&str; 7] = ["grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack"];

/// Whole EXPECT values that success and failure output print alike.
const WEAK_EXPECT: [&str; 17] = [
    "ok",
    "okay",
    "done",
    "pass",
    "passed",
    "success",
    "successful",
    "succeeded",
    "complete",
    "completed",
    "finished",
    "yes",
    "true",
    "0",
    "good",
    "fine",
    "working",
];

/// Lines that failing test runners, compilers and shells commonly print. An
/// EXPECT that matches one of them can pass on a failed run.
const FAILURE_OUTPUT: [&str; 20] = [
    "Error: something went wrong",
    "error: could not compile `app` due to 1 previous error",
    "FAIL src/app.test.js",
    "Tests: 1 failed, 10 passed, 11 total",
    "Tests: 10 failed, 3 passed, 13 total",
    "test result: FAILED. 10 passed; 1 failed; 0 ignored; 0 measured",
    "# fail 1",
    "npm ERR! Test failed.  See above for more details.",
    "AssertionError: expected 1 to equal 2",
    "Traceback (most recent call last):",
    "Segmentation fault (core dumped)",
    "sh: 1: app: not found",
    "cat: config.json: No such file or directory",
    "bash: ./run.sh: Permission denied",
    "BUILD FAILED in 3s",
    "make: *** [Makefile:3: test] Error 1",
    "exit status 1",
    "10 errors generated.",
    "Found 10 errors in 3 files.",
    "thread 'main' panicked at src/main.rs:2:5",
];

/// Openings that name an activity rather than an outcome a stranger could judge.
static ACTIVITY_TITLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(work(ing)? on|improve|enhance|handle|support|ensure|make sure|try|attempt|look (at|into)|investigate|consider|review|refactor|clean ?up|polish|update|tidy|address|deal with|add support)\b",
    )
    .expect("static regex")
});

/// A figure in a title: digits not glued to a preceding letter, digit or
/// dot (so `p95`, `v2` and `utf8` are names, not figures).
static TITLE_NUMBER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:^|[^\p{L}\p{N}.])(\d+(?:\.\d+)?)").expect("static regex"));

/// ABANDON reasons that hand nothing off: no cause, no attempt, no owner.
const WEAK_ABANDON_REASONS: [&str; 22] = [
    "n/a",
    "na",
    "none",
    "skip",
    "skipped",
    "later",
    "todo",
    "tbd",
    "wontfix",
    "won't fix",
    "not needed",
    "not applicable",
    "blocked",
    "too hard",
    "no time",
    "out of scope",
    "deferred",
    "impossible",
    "cannot",
    "can't",
    "not possible",
    "whatever",
];
const MIN_ABANDON_REASON_WORDS: usize = 3;
/// Longest ledger text quoted in a message.
const QUOTE_CHARS: usize = 160;

fn quoted(text: &str) -> String {
    let mut shown: String = text.chars().take(QUOTE_CHARS).collect();
    if text.chars().count() > QUOTE_CHARS {
        shown.push_str("...");
    }
    format!("\"{}\"", crate::visible::visible(&shown))
}

/// Lints one parsed, error-free ledger. `file` is how findings name it.
pub fn lint(file: &str, document: &Document) -> Vec<Finding> {
    let mut findings = fence_disagreements(file, document);
    let mut add = |line: Option<usize>, gate: Option<&str>, severity, code, message: String| {
        findings.push(Finding {
            file: file.to_string(),
            line,
            gate: gate.map(str::to_string),
            severity,
            code,
            message,
        });
    };

    let live: Vec<&Gate> = document.gates.iter().filter(|g| !document.is_abandoned(g.id())).collect();
    for gate in &live {
        for (severity, code, message) in gate_findings(gate) {
            add(Some(gate.line() + 1), Some(gate.id()), severity, code, message);
        }
    }
    for entry in &document.abandoned {
        if is_weak_abandon_reason(&entry.reason) {
            add(
                Some(entry.line + 1),
                Some(&entry.id),
                Severity::Warning,
                "weak-abandon-reason",
                format!(
                    "ABANDON reason {} does not hand the gate off; say what was tried, what blocks it, and what would unblock it",
                    quoted(&entry.reason)
                ),
            );
        }
    }

    let runnable = live.iter().filter(|g| g.is_runnable()).count();
    if live.len() == 1 {
        add(
            None,
            None,
            Severity::Warning,
            "small-ledger",
            "only one live gate; a leaf is rarely judged complete by a single observable outcome".into(),
        );
    }
    if !live.is_empty() && runnable * 2 < live.len() {
        add(
            None,
            None,
            Severity::Warning,
            "mostly-manual",
            format!(
                "{runnable}/{} live gates are runnable; a mostly manual ledger is prose with checkboxes",
                live.len()
            ),
        );
    }
    findings
}

type GateFinding = (Severity, &'static str, String);

fn gate_findings(gate: &Gate) -> Vec<GateFinding> {
    let mut found = Vec::new();
    let title = gate.title();
    match (gate.check(), gate.expect(), gate.expectation().as_ref()) {
        (Some(check), Some(expect), Some(expectation)) => {
            runnable_findings(check, expect, expectation, title, &mut found);
        }
        _ => {
            found.push((
                Severity::Warning,
                "manual-gate",
                "no CHECK, so this outcome is judged by hand and its evidence is only as good as the reader".into(),
            ));
            if let Some(number) = title_numbers(title).first() {
                found.push((
                    Severity::Warning,
                    "unmeasured-number",
                    format!("title states the figure {number} but nothing measures it: {}", quoted(title)),
                ));
            }
        }
    }
    if ACTIVITY_TITLE.is_match(title) {
        found.push((
            Severity::Warning,
            "activity-not-outcome",
            format!("names an activity, not an outcome a stranger could judge: {}", quoted(title)),
        ));
    }
    found
}

fn runnable_findings(check: &str, expect: &str, expectation: &Expectation, title: &str, found: &mut Vec<GateFinding>) {
    if let Some(command) = fixed_output_command(check) {
        found.push((
            Severity::Warning,
            "tautological-check",
            format!(
                "CHECK cannot fail: it runs only {} and similar commands, whose output and exit status do not depend on the system: {}",
                quoted(&command),
                quoted(check)
            ),
        ));
    }
    let literal = match expectation {
        Expectation::Substring(text) => text.as_str(),
        Expectation::Pattern(pattern) => pattern.source(),
    };
    if literal.chars().count() >= 2 && check.contains(literal) && !only_searched_for(check, literal) {
        found.push((
            Severity::Warning,
            "expect-in-check",
            format!(
                "EXPECT {} appears verbatim in its own CHECK, so the command can print its own pass",
                quoted(literal)
            ),
        ));
    }
    if WEAK_EXPECT.contains(&expect.trim().to_lowercase().as_str()) {
        found.push((
            Severity::Warning,
            "weak-expect",
            format!("EXPECT {} also appears in failure output; match a line only success can print", quoted(expect)),
        ));
    } else if let Some(line) = FAILURE_OUTPUT.iter().find(|line| expectation.matches(line).unwrap_or(false)) {
        found.push((
            Severity::Warning,
            "expect-matches-failure",
            format!("EXPECT {} also matches typical failure output such as {}", quoted(expect), quoted(line)),
        ));
    } else if counts_zero_unanchored(literal) {
        found.push((
            Severity::Warning,
            "expect-matches-failure",
            format!("EXPECT {} starts with a zero count, which also matches 10, 20 or 100 of them", quoted(expect)),
        ));
    }
    if expectation.is_path_like() {
        found.push((
            Severity::Warning,
            "path-read-as-regex",
            format!(
                "EXPECT {} looks like a literal path but is read as a regular expression, so its dots are wildcards",
                quoted(expect)
            ),
        ));
    }
    let numbers = title_numbers(title);
    // A title that states an input the CHECK feeds and the output it must
    // give ("1536 bytes print as 1.5 KiB") specifies that output: the
    // figure in EXPECT comes from the spec, not from a measurement.
    let states_input = numbers.iter().any(|number| !contains_number(expect, number) && contains_number(check, number));
    for number in numbers {
        let in_expect = contains_number(expect, &number);
        if in_expect && states_input {
            continue;
        }
        if in_expect {
            found.push((
                Severity::Warning,
                "copied-number",
                format!(
                    "the title's figure {number} is typed into EXPECT; compute it in the CHECK, compare it there and print a marker, so the gate follows the real figure"
                ),
            ));
        } else if !contains_number(check, &number) {
            found.push((
                Severity::Warning,
                "unmeasured-number",
                format!("title states the figure {number} but neither CHECK nor EXPECT measures it: {}", quoted(title)),
            ));
        }
    }
}

/// `0 errors` is contained in `10 errors`: a substring or unanchored pattern
/// that opens with a lone zero matches larger counts too.
fn counts_zero_unanchored(literal: &str) -> bool {
    let mut chars = literal.chars();
    chars.next() == Some('0') && chars.next().is_some_and(|c| !c.is_ascii_digit() && !"*+?{".contains(c))
}

fn title_numbers(title: &str) -> Vec<String> {
    let mut numbers: Vec<String> = Vec::new();
    for capture in TITLE_NUMBER.captures_iter(title) {
        let number = capture[1].to_string();
        if !numbers.contains(&number) {
            numbers.push(number);
        }
    }
    numbers
}

/// `number` occurs in `text` with no digit or decimal continuation glued
/// to either side (`34` is in `34 rows`, not in `340` or `1.34`).
fn contains_number(text: &str, number: &str) -> bool {
    text.match_indices(number).any(|(at, _)| {
        let glued_before = text[..at].chars().next_back().is_some_and(|c| c.is_ascii_digit() || c == '.');
        let mut after = text[at + number.len()..].chars();
        let glued_after = match after.next() {
            Some(c) if c.is_ascii_digit() => true,
            Some('.') => after.next().is_some_and(|c| c.is_ascii_digit()),
            _ => false,
        };
        !glued_before && !glued_after
    })
}

/// The CHECK's simple commands, as words: split at every operator, with
/// the target of a redirection and a leading `command` / `builtin` dropped.
fn simple_commands(check: &str) -> Vec<Vec<String>> {
    let mut commands = vec![Vec::new()];
    let mut redirect_target = false;
    for token in tokenize(check) {
        match token {
            Token::Operator(op) => {
                redirect_target = op.contains(['<', '>']);
                if !redirect_target {
                    commands.push(Vec::new());
                }
            }
            Token::Word(_) if redirect_target => redirect_target = false,
            Token::Word(word) => {
                let current = commands.last_mut().expect("never empty");
                if !(current.is_empty() && (word == "command" || word == "builtin")) {
                    current.push(word);
                }
            }
        }
    }
    commands.retain(|words| !words.is_empty());
    commands
}

/// The command name without its directory (`/bin/echo` is `echo`).
fn command_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The first fixed-output command when the whole CHECK is made of them:
/// `echo`, `printf` (with no expansion in their words), `true`, `:`,
/// `exit 0` or bare `exit`, joined by any operators, with `cd DIR` steps
/// allowed. One command that can observe anything clears it, so
/// `echo starting && node verify.mjs` can fail.
fn fixed_output_command(check: &str) -> Option<String> {
    let mut first_fixed = None;
    for words in simple_commands(check) {
        let name = command_name(&words[0]);
        let fixed = if FIXED_OUTPUT_COMMANDS.contains(&name) {
            // `$` or a backquote expands to something the system decides.
            !words[1..].iter().any(|word| word.contains(['$', '`']))
        } else if name == "exit" {
            words.len() == 1 || (words.len() == 2 && words[1] == "0")
        } else if name == "cd" {
            continue;
        } else {
            false
        };
        if !fixed {
            return None;
        }
        if first_fixed.is_none() {
            first_fixed = Some(if name == "exit" { words.join(" ") } else { name.to_string() });
        }
    }
    first_fixed
}

/// True when every word of the CHECK that holds `literal` is an argument of
/// a search command (`grep '^## Usage' README.md`): such a command prints
/// the text only when it finds it. A literal that no single word holds
/// (spanning words or operators) is never cleared.
fn only_searched_for(check: &str, literal: &str) -> bool {
    let mut held = false;
    for words in simple_commands(check) {
        if !words.iter().any(|word| word.contains(literal)) {
            continue;
        }
        held = true;
        let name = command_name(&words[0]);
        let searching = SEARCH_COMMANDS.contains(&name) || (name == "git" && words.get(1).is_some_and(|w| w == "grep"));
        if !searching {
            return false;
        }
    }
    held
}

fn is_weak_abandon_reason(reason: &str) -> bool {
    let normalized: String = reason.trim().trim_end_matches(['.', '!']).to_lowercase();
    normalized.split_whitespace().count() < MIN_ABANDON_REASON_WORDS
        || WEAK_ABANDON_REASONS.contains(&normalized.as_str())
}

/// Totals over all findings of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub errors: usize,
    pub warnings: usize,
}

pub fn totals(findings: &[Finding]) -> Totals {
    let errors = findings.iter().filter(|f| f.severity == Severity::Error).count();
    Totals { errors, warnings: findings.len() - errors }
}

/// One finding as a text line: `file:line: WARN G1: message [rule]`.
pub fn format_finding(finding: &Finding) -> String {
    let place = match finding.line {
        Some(line) => format!("{}:{line}", finding.file),
        None => finding.file.clone(),
    };
    let label = match finding.severity {
        Severity::Error => "ERROR",
        Severity::Warning => "WARN",
    };
    let who = finding.gate.as_deref().map(|g| format!("{g}: ")).unwrap_or_default();
    format!("{place}: {label} {who}{} [{}]", finding.message, finding.code)
}

/// The closing marker line of a text report.
pub fn summary(totals: Totals, failed: bool) -> String {
    if failed {
        format!("LINT FINDINGS: {} error(s), {} warning(s)", totals.errors, totals.warnings)
    } else if totals.warnings > 0 {
        format!("LINT OK ({} warning(s))", totals.warnings)
    } else {
        "LINT OK".to_string()
    }
}

/// The line closing a list of findings cut at `MAX_REPORTED_FINDINGS`.
pub fn truncation_line(total: usize) -> Option<String> {
    let omitted = total.saturating_sub(MAX_REPORTED_FINDINGS);
    (omitted > 0).then(|| format!("... [report truncated: {omitted} finding(s) omitted]"))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonReport<'a> {
    ok: bool,
    errors: usize,
    warnings: usize,
    findings: &'a [Finding],
    truncated: bool,
    omitted_findings: usize,
}

/// The `--json` document, pretty-printed. Strings are sanitized like
/// every other printed line, so the document is safe to show raw.
pub fn json_report(findings: &[Finding], failed: bool) -> String {
    let totals = totals(findings);
    let mut safe: Vec<Finding> = findings
        .iter()
        .take(MAX_REPORTED_FINDINGS)
        .map(|f| Finding {
            file: terminal::safe(&f.file),
            gate: f.gate.as_deref().map(terminal::safe),
            message: terminal::safe(&f.message),
            ..f.clone()
        })
        .collect();
    loop {
        let report = JsonReport {
            ok: !failed,
            errors: totals.errors,
            warnings: totals.warnings,
            findings: &safe,
            truncated: safe.len() < findings.len(),
            omitted_findings: findings.len() - safe.len(),
        };
        // Plain strings, integers and options cannot fail to serialize.
        let document = serde_json::to_string_pretty(&report).unwrap_or_default();
        if document.len() <= MAX_JSON_REPORT_BYTES || safe.is_empty() {
            return document;
        }
        safe.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::parse;

    fn codes(text: &str) -> Vec<(Option<String>, &'static str)> {
        let outcome = parse(text);
        assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
        lint("t.md", &outcome.document).into_iter().map(|f| (f.gate, f.code)).collect()
    }

    fn has(text: &str, gate: &str, code: &str) -> bool {
        codes(text).iter().any(|(g, c)| g.as_deref() == Some(gate) && *c == code)
    }

    #[test]
    fn allowances_drop_what_they_name_and_no_more() {
        let text = "<!-- lint-allow: manual-gate M1 -->\n\n- [ ] M1: a person reads it\n- [ ] M2: a person signs\n\
                    - [ ] A: the report renders\n  CHECK: make report\n  EXPECT: REPORT-OK\n\
                    ```\n<!-- lint-allow: manual-gate M2 -->\n```\n<!-- lint-allow: manul-gate -->\n";
        let outcome = parse(text);
        assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
        let all: Vec<(Option<String>, &str)> =
            lint("t.md", &outcome.document).into_iter().map(|f| (f.gate, f.code)).collect();
        assert!(all.contains(&(Some("M1".into()), "manual-gate")) && all.contains(&(Some("M2".into()), "manual-gate")));
        let allowed = lint_allowing("t.md", &outcome.document, &outcome.warnings, &[]);
        let kept: Vec<(Option<&str>, &str)> = allowed.iter().map(|f| (f.gate.as_deref(), f.code)).collect();
        // M1 is allowed by its directive; the one in a code fence is text.
        assert!(
            !kept.contains(&(Some("M1"), "manual-gate")) && kept.contains(&(Some("M2"), "manual-gate")),
            "{kept:?}"
        );
        let typo = allowed.iter().find(|f| f.code == "allow-unknown-rule").expect("the typo is reported");
        assert_eq!(
            (typo.line, typo.message.as_str()),
            (Some(11), "lint-allow names \"manul-gate\", which is no rule of the linter")
        );
        // --allow drops a rule everywhere.
        let everywhere = lint_allowing(
            "t.md",
            &outcome.document,
            &outcome.warnings,
            &["manual-gate".to_string(), "mostly-manual".into()],
        );
        assert!(everywhere.iter().all(|f| f.code != "manual-gate" && f.code != "mostly-manual"), "{everywhere:?}");
        // Every rule a finding can carry is a known rule.
        for (_, code) in all {
            assert!(RULES.contains(&code), "{code}");
        }
    }

    /// (line, gate, the message up to its first comma) of each
    /// `commonmark-disagrees` finding.
    fn disagreements(text: &str) -> Vec<(usize, Option<String>, String)> {
        let outcome = parse(text);
        assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
        lint("t.md", &outcome.document)
            .into_iter()
            .filter(|f| f.code == "commonmark-disagrees")
            .map(|f| (f.line.unwrap(), f.gate, f.message.split(',').next().unwrap().to_string()))
            .collect()
    }

    #[test]
    fn where_commonmark_reads_a_fence_otherwise() {
        let gate = |id: &str| format!("- [ ] {id}: outcome {id}\n  CHECK: make {id}\n  EXPECT: {id}-OK\n");
        let found = |line: usize, gate: &str, what: &str| (line, Some(gate.to_string()), what.to_string());
        let code = "counts for gate-check (as for the Node tool)";
        // A list item's fence runs past the item for gate-check: the gate and
        // the ABANDON it hides are reported, their attribute lines are not.
        let hidden =
            format!("{}- example:\n  ~~~\n{}ABANDON: A the vendor withdrew the API\n  ~~~\n", gate("A"), gate("B"));
        let skipped = "is inside the fence opened on line 5";
        assert_eq!(
            disagreements(&hidden),
            [found(6, "B", &format!("this gate {skipped}")), found(9, "A", &format!("this ABANDON {skipped}"))]
        );
        // A fence line holding U+2028 is prose to gate-check, as to the Node
        // tool, while CommonMark opens a block that runs to the end.
        let shown = format!("{}~~~ text\u{2028}\n{}", gate("A"), gate("B"));
        assert_eq!(disagreements(&shown), [found(5, "B", &format!("this gate {code}"))]);
        // Attributes alone are reported when no gate line of theirs is.
        let attribute = format!("{}    ```\n  CWD: sub\n    ```\n", gate("A"));
        assert_eq!(disagreements(&attribute), [found(5, "A", &format!("this CWD line {code}"))]);
        // Nothing where both agree: a closing fence followed by a tab closes
        // in CommonMark too, and a byte order mark starts no line.
        for agreed in [
            format!("{}~~~\nexample\n~~~\t\n{}", gate("A"), gate("B")),
            format!("\u{feff}```\n- [ ] X: an example\n```\n{}{}", gate("A"), gate("B")),
            format!("{}```\n{}```\n{}", gate("A"), gate("X"), gate("B")),
        ] {
            assert_eq!(disagreements(&agreed), [], "{agreed:?}");
        }
    }

    #[test]
    fn an_allowance_on_the_first_line_after_a_byte_order_mark_counts() {
        let text = "\u{feff}<!-- lint-allow: manual-gate -->\n- [ ] M1: a person reads it\n";
        let outcome = parse(text);
        assert!(lint("t.md", &outcome.document).iter().any(|f| f.code == "manual-gate"));
        assert!(lint_allowing("t.md", &outcome.document, &outcome.warnings, &[])
            .iter()
            .all(|f| f.code != "manual-gate"));
    }

    fn runnable(check: &str, expect: &str) -> String {
        format!("- [ ] A: the report renders\n  CHECK: {check}\n  EXPECT: {expect}\n- [ ] B: b renders\n  CHECK: make b\n  EXPECT: B-READY\n")
    }

    #[test]
    fn fixed_output_commands() {
        for check in [
            "echo ok",
            "printf 'x'",
            "true",
            ":",
            "exit 0",
            "exit",
            "cd web && echo hi",
            "cd 'a b'; true",
            "/bin/echo x",
            "command echo x",
            "\"echo\" x",
            "echo a && echo b > out.txt; true",
            "(echo x) || exit 0",
        ] {
            assert!(has(&runnable(check, "MARKER-XYZ"), "A", "tautological-check"), "{check}");
        }
        for check in [
            "echo.sh run",
            "make test",
            "exit 1",
            "cd web && make",
            "trueish",
            "cd",
            "npm test; echo done",
            "echo starting && node scripts/verify.mjs",
            "echo $(node scripts/verify.mjs)",
            "echo x | grep y",
        ] {
            assert!(!has(&runnable(check, "MARKER-XYZ"), "A", "tautological-check"), "{check}");
        }
    }

    #[test]
    fn expect_inside_check() {
        assert!(has(&runnable("node build.mjs --banner DONE-7", "DONE-7"), "A", "expect-in-check"));
        assert!(has(&runnable("node build.mjs --banner BUILT", "/BUILT/"), "A", "expect-in-check"));
        assert!(!has(&runnable("node build.mjs", "BUILT"), "A", "expect-in-check"));
        // A search prints the text only when it finds it.
        assert!(!has(&runnable("grep -n '^## Usage' README.md", "## Usage"), "A", "expect-in-check"));
        assert!(!has(&runnable("git grep -c 'fn main' && make", "fn main"), "A", "expect-in-check"));
        assert!(has(&runnable("grep -q x f && echo 'fn main'", "fn main"), "A", "expect-in-check"));
    }

    #[test]
    fn weak_and_failure_shaped_expectations() {
        assert!(has(&runnable("make", "ok"), "A", "weak-expect"));
        assert!(has(&runnable("make", " Done "), "A", "weak-expect"));
        assert!(has(&runnable("cargo test", "0 ignored"), "A", "expect-matches-failure"));
        assert!(has(&runnable("npm test", "/error/i"), "A", "expect-matches-failure"));
        assert!(has(&runnable("npm test", "0 console errors"), "A", "expect-matches-failure"));
        assert!(!has(&runnable("npm test", "/Found 0 errors/"), "A", "expect-matches-failure"));
        assert!(!has(&runnable("npm test", "/^0 errors/m"), "A", "expect-matches-failure"));
        assert!(!has(&runnable("npm test", "3/3 tiers rendered"), "A", "expect-matches-failure"));
    }

    #[test]
    fn paths_titles_and_numbers() {
        assert!(has(&runnable("show", "/etc/app/conf/"), "A", "path-read-as-regex"));
        assert!(!has(&runnable("show", "/Found 0 errors/"), "A", "path-read-as-regex"));
        let activity = "- [ ] A: Refactor the parser\n  CHECK: make\n  EXPECT: PARSER-OK\n";
        assert!(has(activity, "A", "activity-not-outcome"));
        assert!(!has(
            "- [ ] A: the parser refactoring is invisible\n  CHECK: make\n  EXPECT: PARSER-OK\n",
            "A",
            "activity-not-outcome"
        ));
        let copied = "- [ ] A: renders 34 stat rows\n  CHECK: node rows.mjs\n  EXPECT: 34 rows\n";
        assert!(has(copied, "A", "copied-number"));
        let specified =
            "- [ ] A: 1536 bytes print as 1.5 KiB\n  CHECK: python -c 'print(size(1536))'\n  EXPECT: 1.5 KiB\n";
        assert!(!has(specified, "A", "copied-number") && !has(specified, "A", "unmeasured-number"));
        let unfed = specified.replace("size(1536)", "size(sample)");
        assert!(has(&unfed, "A", "copied-number"), "without the input in the CHECK, the figure is still copied");
        let measured = "- [ ] A: renders 34 stat rows\n  CHECK: test $(node rows.mjs) -eq 34 && echo ROWS-MATCH\n  EXPECT: ROWS-MATCH\n";
        assert!(!has(measured, "A", "copied-number") && !has(measured, "A", "unmeasured-number"));
        let unmeasured = "- [ ] A: p95 under 200 ms\n  CHECK: node bench.mjs\n  EXPECT: BENCH-DONE\n";
        assert_eq!(codes(unmeasured).iter().filter(|(_, c)| *c == "unmeasured-number").count(), 1);
        assert!(title_numbers("p95 v2 utf8 HTTP/2 at 1.5x").eq(&["2", "1.5"]));
        assert!(
            contains_number("34 rows", "34") && !contains_number("340 rows", "34") && !contains_number("1.34", "34")
        );
    }

    #[test]
    fn manual_small_and_abandoned() {
        let one_manual = "- [ ] A: renders 34 stat rows\n  EVIDENCE: pending\n";
        let found = codes(one_manual);
        for code in ["manual-gate", "unmeasured-number", "small-ledger", "mostly-manual"] {
            assert!(found.iter().any(|(_, c)| *c == code), "{code} in {found:?}");
        }
        let abandoned = "- [ ] A: a\n  CHECK: make a\n  EXPECT: A-READY\n- [ ] B: b\n  CHECK: make b\n  EXPECT: B-READY\nABANDON: B later\n";
        assert!(has(abandoned, "B", "weak-abandon-reason"));
        let honest = "- [ ] A: a\n  CHECK: make a\n  EXPECT: A-READY\n- [ ] B: b\n  CHECK: make b\n  EXPECT: B-READY\nABANDON: B the vendor API was withdrawn in March; see issue 31\n";
        assert!(!has(honest, "B", "weak-abandon-reason"));
        assert!(!codes(honest).iter().any(|(g, _)| g.as_deref() == Some("B")), "abandoned gates are not linted");
    }

    #[test]
    fn report_lines() {
        let finding = Finding {
            file: "g.md".into(),
            line: Some(3),
            gate: Some("G1".into()),
            severity: Severity::Warning,
            code: "tautological-check",
            message: "m".into(),
        };
        assert_eq!(format_finding(&finding), "g.md:3: WARN G1: m [tautological-check]");
        assert_eq!(summary(Totals { errors: 0, warnings: 2 }, false), "LINT OK (2 warning(s))");
        assert_eq!(summary(Totals { errors: 0, warnings: 0 }, false), "LINT OK");
        assert_eq!(summary(Totals { errors: 1, warnings: 2 }, true), "LINT FINDINGS: 1 error(s), 2 warning(s)");
        assert_eq!(truncation_line(64), None);
        assert_eq!(truncation_line(70).as_deref(), Some("... [report truncated: 6 finding(s) omitted]"));
        let many = vec![finding; 70];
        let json: serde_json::Value = serde_json::from_str(&json_report(&many, true)).unwrap();
        let keys: Vec<&str> = json["findings"][0].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["file", "level", "gate", "rule", "message", "line"]);
        assert_eq!(json["findings"][0]["level"], "warn");
        assert_eq!(json["findings"].as_array().unwrap().len(), 64);
        assert_eq!((json["truncated"].as_bool(), json["omittedFindings"].as_u64()), (Some(true), Some(6)));
        assert_eq!((json["warnings"].as_u64(), json["ok"].as_bool()), (Some(70), Some(false)));
    }
}
