//! Definition-bound evidence: the digest that ties an `EVIDENCE:` line to
//! the gate definition that produced it, the line's format, and the state a
//! gate is in. Pure: no shell, no approval store, no execution.

use crate::digest::sha256_hex;
use crate::ledger::text::{is_js_line_terminator, utf16_len, utf16_prefix};
use crate::ledger::Gate;
use crate::terminal;

/// The combined-output ceiling, shared with the runner.
pub const MAX_OUTPUT_BYTES: usize = 1024 * 1024;
/// Automatic evidence longer than this (UTF-16 code units) is not current.
pub const MAX_EVIDENCE_CHARS: usize = 900;
const TAG: &str = "automatic-evidence=v1; definition-sha256=";

/// SHA-256 of `["unlazy.gate-definition",1,CHECK,EXPECT,CWD|null]` as
/// compact JSON: exactly the Node tool's definition digest, so evidence it
/// wrote stays current after a switch.
pub fn definition_digest(check: &str, expect: &str, cwd: Option<&str>) -> String {
    let payload = ("unlazy.gate-definition", 1, check, expect, cwd);
    // Serializing strings and integers cannot fail.
    let json = serde_json::to_string(&payload).unwrap_or_default();
    sha256_hex(json)
}

/// A runnable gate's CHECK and EXPECT, both non-blank: what its definition
/// digest binds.
fn definition(gate: &Gate) -> Option<(&str, &str)> {
    match (gate.check(), gate.expect()) {
        (Some(check), Some(expect)) if !check.is_empty() && !expect.is_empty() => Some((check, expect)),
        _ => None,
    }
}

/// The definition digest of a runnable gate.
pub fn gate_digest(gate: &Gate) -> Option<String> {
    definition(gate).map(|(check, expect)| definition_digest(check, expect, gate.cwd()))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvidenceKind {
    /// Missing, blank or `pending`.
    Pending,
    /// A v1 success record bound to this exact definition.
    AutomaticCurrent,
    /// Automatic-looking evidence that is not current: pre-v1, malformed,
    /// another version, or bound to another definition.
    AutomaticStale,
    /// Anything else: a person's words.
    Human,
}

pub fn classify(evidence: Option<&str>, digest: Option<&str>) -> EvidenceKind {
    let evidence = evidence.unwrap_or("");
    if evidence.is_empty() || evidence.eq_ignore_ascii_case("pending") {
        return EvidenceKind::Pending;
    }
    if let Some(digest) = digest {
        if utf16_len(evidence) <= MAX_EVIDENCE_CHARS && is_current_success(evidence, digest) {
            return EvidenceKind::AutomaticCurrent;
        }
    }
    if evidence.starts_with("automatic-evidence=") || evidence.starts_with("exit=0; shell=") {
        EvidenceKind::AutomaticStale
    } else {
        EvidenceKind::Human
    }
}

/// `<tag><digest>; exit=0; EXPECT=matched; output-sha256=<64 hex>;
/// output-bytes=<n ≤ 1 MiB>; shell=<at least one character>`.
fn is_current_success(evidence: &str, digest: &str) -> bool {
    let Some(rest) = evidence.strip_prefix(TAG).and_then(|r| r.strip_prefix(digest)) else {
        return false;
    };
    let Some(rest) = rest.strip_prefix("; exit=0; EXPECT=matched; output-sha256=") else {
        return false;
    };
    if rest.len() < 64 || !rest.as_bytes()[..64].iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return false;
    }
    let Some(rest) = rest[64..].strip_prefix("; output-bytes=") else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let count = &rest[..digits];
    let canonical = count == "0" || (!count.starts_with('0') && (1..=7).contains(&count.len()));
    if !canonical || count.parse::<usize>().map_or(true, |n| n > MAX_OUTPUT_BYTES) {
        return false;
    }
    match rest[digits..].strip_prefix("; shell=").and_then(|r| r.chars().next()) {
        Some(c) => !is_js_line_terminator(c),
        None => false,
    }
}

/// Serialized as `name()` spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GateState {
    Abandoned,
    /// Unchecked box.
    Unmet,
    /// A checked manual gate with no evidence.
    UnmetNoEvidence,
    /// A checked gate whose evidence does not prove its current definition.
    StaleUnmet,
    Met,
}

impl GateState {
    /// The Node tool's name for the state, as machine reports spell it.
    pub fn name(self) -> &'static str {
        match self {
            GateState::Abandoned => "abandoned",
            GateState::Unmet => "unmet",
            GateState::UnmetNoEvidence => "unmet-no-evidence",
            GateState::StaleUnmet => "stale-unmet",
            GateState::Met => "met",
        }
    }

    /// The reason `--status` prints beside an unmet gate.
    pub fn reason(self) -> &'static str {
        match self {
            GateState::Unmet => "unchecked",
            GateState::UnmetNoEvidence => "checked but EVIDENCE pending",
            _ => "checked but automatic evidence is stale or unbound",
        }
    }
}

pub fn gate_state(gate: &Gate, abandoned: bool) -> GateState {
    if abandoned || !gate.checked() {
        return gate_state_with_digest(gate, abandoned, None);
    }
    // A checked runnable gate is met only by a v1 record of its own
    // digest: evidence that is no such record decides the state without
    // hashing the definition.
    if definition(gate).is_some() && !gate.evidence().is_some_and(|evidence| evidence.starts_with(TAG)) {
        return GateState::StaleUnmet;
    }
    gate_state_with_digest(gate, abandoned, gate_digest(gate).as_deref())
}

/// [`gate_state`] for a caller that already holds `gate_digest(gate)`, so
/// the definition is hashed once per run.
pub fn gate_state_with_digest(gate: &Gate, abandoned: bool, digest: Option<&str>) -> GateState {
    if abandoned {
        return GateState::Abandoned;
    }
    if !gate.checked() {
        return GateState::Unmet;
    }
    let kind = classify(gate.evidence(), digest);
    match (digest.is_some(), kind) {
        (true, EvidenceKind::AutomaticCurrent) => GateState::Met,
        (true, _) => GateState::StaleUnmet,
        (false, EvidenceKind::Pending) => GateState::UnmetNoEvidence,
        (false, EvidenceKind::AutomaticCurrent | EvidenceKind::AutomaticStale) => GateState::StaleUnmet,
        (false, EvidenceKind::Human) => GateState::Met,
    }
}

/// The canonical output's fingerprint: SHA-256 and UTF-8 length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    pub sha256: String,
    pub bytes: usize,
}

impl Fingerprint {
    pub fn of(output: &str) -> Self {
        Fingerprint { sha256: sha256_hex(output), bytes: output.len() }
    }
}

/// The machine-specific transcript fields that follow the deciding fields.
#[derive(Debug, Clone)]
pub struct Transcript<'a> {
    pub shell: &'a str,
    pub cwd: &'a str,
    /// `<12 hex of sha256(PATH)>/<N> entries`
    pub path: &'a str,
}

/// The success line. Deciding fields come first so the 900-character cap
/// can only ever cut transcript detail; a proof's `tree-sha256=` field
/// comes last and is kept whole, the transcript cut to make room for it.
pub fn success_evidence(digest: &str, output: &Fingerprint, transcript: &Transcript, tree: Option<&str>) -> String {
    let full = format!(
        "{TAG}{digest}; exit=0; EXPECT=matched; output-sha256={}; output-bytes={}; shell={}; cwd={}; path={}",
        output.sha256,
        output.bytes,
        terminal::safe(transcript.shell),
        terminal::safe(transcript.cwd),
        transcript.path,
    );
    match tree {
        None => js_prefix(&full, MAX_EVIDENCE_CHARS),
        Some(tree) => {
            let field = format!("{TREE_FIELD}{tree}");
            let mut line = js_prefix(&full, MAX_EVIDENCE_CHARS - utf16_len(&field));
            line.push_str(&field);
            line
        }
    }
}

/// Whether a success line was written by a run under this transcript:
/// its shell, working directory and PATH fields are these, whole. A line
/// whose transcript the 900-character cap cut names no transcript.
pub fn names_transcript(evidence: &str, transcript: &Transcript) -> bool {
    let fields = format!(
        "; shell={}; cwd={}; path={}",
        terminal::safe(transcript.shell),
        terminal::safe(transcript.cwd),
        transcript.path
    );
    evidence.match_indices(&fields).any(|(at, _)| {
        let rest = &evidence[at + fields.len()..];
        rest.is_empty() || rest.starts_with(TREE_FIELD)
    })
}

/// The field that names the tree a proof was made on.
const TREE_FIELD: &str = "; tree-sha256=";

/// `text.slice(0, max)` as the Node tool writes it: JavaScript cuts at
/// `max` UTF-16 units even inside a surrogate pair, and the lone high
/// surrogate left at the end is written to UTF-8 as U+FFFD. So a cut inside
/// a pair ends in U+FFFD and is still `max` units long, byte for byte what
/// the Node tool puts in the ledger.
fn js_prefix(text: &str, max: usize) -> String {
    let prefix = utf16_prefix(text, max);
    let mut cut = prefix.to_string();
    if utf16_len(prefix) < max && text.len() > prefix.len() {
        // The next character did not fit whole: it is a surrogate pair with
        // exactly one unit of room left.
        cut.push(char::REPLACEMENT_CHARACTER);
    }
    cut
}

/// `<12 hex>/<N> entries` for a PATH value, never the PATH itself.
pub fn path_summary(path: &str) -> String {
    let entries = if path.is_empty() { 0 } else { path.split(crate::paths::PATH_DELIMITER).count() };
    format!("{}/{} entries", &sha256_hex(path)[..12], entries)
}

/// Trimmed non-blank lines of `output`.
fn output_lines(output: &str) -> Vec<&str> {
    output
        .split('\n')
        .map(|line| crate::ledger::text::js_trim(line.strip_suffix('\r').unwrap_or(line)))
        .filter(|line| !line.is_empty())
        .collect()
}

const SUMMARY_CHARS: usize = 480;

/// Words that mark the line a failure is about, in any case.
const FAILURE_WORDS: [&str; 7] = ["error", "assert", "panic", "exception", "traceback", "fail", "not ok"];

fn looks_like_failure(line: &str) -> bool {
    let lower = line.to_lowercase();
    FAILURE_WORDS.iter().any(|word| lower.contains(word))
}

/// A failure summary for the console: up to eight lines; of a longer
/// output the first line, the lines between that look like the failure
/// (an error, assertion, panic, exception, traceback, `FAILED`, `not
/// ok`), and the last two, with `...` where lines were left out; of one
/// with no such line, the first six and the last two. At most 480
/// characters: failure lines nearest the end are kept first.
pub fn failure_summary(output: &str) -> String {
    let lines = output_lines(output);
    if lines.is_empty() {
        return "(no output)".to_string();
    }
    if lines.len() <= 8 {
        return utf16_prefix(&lines.join(" | "), SUMMARY_CHARS).to_string();
    }
    let last = lines.len() - 2;
    let mut flagged: Vec<usize> = (1..last).filter(|&at| looks_like_failure(lines[at])).collect();
    if flagged.is_empty() {
        let mut parts: Vec<&str> = lines[..6].to_vec();
        parts.push("...");
        parts.extend_from_slice(&lines[last..]);
        return utf16_prefix(&parts.join(" | "), SUMMARY_CHARS).to_string();
    }
    let join = |flagged: &[usize]| {
        let chosen: Vec<usize> = std::iter::once(0).chain(flagged.iter().copied()).chain(last..lines.len()).collect();
        let mut parts = Vec::with_capacity(chosen.len() * 2);
        for (n, &at) in chosen.iter().enumerate() {
            if n > 0 && at != chosen[n - 1] + 1 {
                parts.push("...");
            }
            parts.push(lines[at]);
        }
        parts.join(" | ")
    };
    let mut joined = join(&flagged);
    while utf16_len(&joined) > SUMMARY_CHARS && flagged.len() > 1 {
        flagged.remove(0);
        joined = join(&flagged);
    }
    utf16_prefix(&joined, SUMMARY_CHARS).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_serializes_as_its_name() {
        use GateState::*;
        for state in [Abandoned, Unmet, UnmetNoEvidence, StaleUnmet, Met] {
            assert_eq!(serde_json::to_value(state).unwrap(), state.name());
        }
    }

    #[test]
    fn the_state_without_a_digest_is_the_state_with_one() {
        let digest = definition_digest("make t", "OK", None);
        let current = format!(
            "{TAG}{digest}; exit=0; EXPECT=matched; output-sha256={}; output-bytes=2; shell=/bin/sh",
            "a".repeat(64)
        );
        let evidences = ["", "  EVIDENCE: pending\n", "  EVIDENCE: read it myself\n", "  EVIDENCE: exit=0\n"];
        let mut texts: Vec<String> = evidences
            .iter()
            .flat_map(|evidence| {
                [
                    "- [x] G: t\n  CHECK: make t\n  EXPECT: OK\n",
                    "- [ ] G: t\n  CHECK: make t\n  EXPECT: OK\n",
                    "- [x] G: t\n",
                ]
                .map(|gate| format!("{gate}{evidence}"))
            })
            .collect();
        texts.push(format!("- [x] G: t\n  CHECK: make t\n  EXPECT: OK\n  EVIDENCE: {current}\n"));
        texts.push(format!("- [x] G: t\n  CHECK: make u\n  EXPECT: OK\n  EVIDENCE: {current}\n"));
        let mut seen = std::collections::BTreeSet::new();
        for text in &texts {
            let outcome = crate::ledger::parse(text);
            assert!(outcome.errors.is_empty(), "{text}: {:?}", outcome.errors);
            let gate = &outcome.document.gates[0];
            for abandoned in [false, true] {
                let state = gate_state(gate, abandoned);
                assert_eq!(state, gate_state_with_digest(gate, abandoned, gate_digest(gate).as_deref()), "{text}");
                seen.insert(state.name());
            }
        }
        assert_eq!(seen.len(), 5, "every state was reached: {seen:?}");
    }

    const DIGEST_OF_KNOWN_GATE: &str = "37356384d550809d07f81f88a95c036d6f7241819876ea68fa8cfd150e0ba6db";

    #[test]
    fn digest_matches_the_node_tool() {
        // Value taken from a ledger the Node tool wrote.
        assert_eq!(definition_digest("node verify/verify.cjs levels", "GRIDVILLE-G1-PASS", None), DIGEST_OF_KNOWN_GATE);
        assert_ne!(definition_digest("a", "b", None), definition_digest("a", "b", Some(".")));
    }

    fn success(digest: &str) -> String {
        let fp = Fingerprint::of("hello");
        success_evidence(digest, &fp, &Transcript { shell: "/bin/sh", cwd: "/r", path: "abc/1 entries" }, None)
    }

    #[test]
    fn classification() {
        let d = DIGEST_OF_KNOWN_GATE;
        assert_eq!(classify(Some(&success(d)), Some(d)), EvidenceKind::AutomaticCurrent);
        assert_eq!(classify(Some("PENDING"), Some(d)), EvidenceKind::Pending);
        assert_eq!(classify(None, Some(d)), EvidenceKind::Pending);
        let other = definition_digest("x", "y", None);
        assert_eq!(classify(Some(&success(&other)), Some(d)), EvidenceKind::AutomaticStale);
        assert_eq!(classify(Some("exit=0; shell=/bin/sh; cwd=/"), Some(d)), EvidenceKind::AutomaticStale);
        assert_eq!(classify(Some("looked at it"), Some(d)), EvidenceKind::Human);
        let long = format!("{}{}", success(d), "x".repeat(900));
        assert_eq!(classify(Some(&long), Some(d)), EvidenceKind::AutomaticStale);
        for bad_bytes in ["01", "1048577", "99999999", ""] {
            let text = format!(
                "{TAG}{d}; exit=0; EXPECT=matched; output-sha256={}; output-bytes={bad_bytes}; shell=/bin/sh",
                "a".repeat(64)
            );
            assert_eq!(classify(Some(&text), Some(d)), EvidenceKind::AutomaticStale, "{bad_bytes}");
        }
        let upper = format!(
            "{TAG}{d}; exit=0; EXPECT=matched; output-sha256={}; output-bytes=1; shell=/bin/sh",
            "A".repeat(64)
        );
        assert_eq!(classify(Some(&upper), Some(d)), EvidenceKind::AutomaticStale);
    }

    #[test]
    fn evidence_is_capped_after_the_deciding_fields() {
        let fp = Fingerprint::of("x");
        let cwd = "/very/long".repeat(200);
        let line =
            success_evidence(DIGEST_OF_KNOWN_GATE, &fp, &Transcript { shell: "/bin/sh", cwd: &cwd, path: "p" }, None);
        assert_eq!(utf16_len(&line), MAX_EVIDENCE_CHARS);
        assert_eq!(classify(Some(&line), Some(DIGEST_OF_KNOWN_GATE)), EvidenceKind::AutomaticCurrent);
        // A tree field survives the cap whole, at the end.
        let tree = "c".repeat(64);
        let transcript = Transcript { shell: "/bin/sh", cwd: &cwd, path: "p" };
        let proven = success_evidence(DIGEST_OF_KNOWN_GATE, &fp, &transcript, Some(&tree));
        assert_eq!(utf16_len(&proven), MAX_EVIDENCE_CHARS);
        assert!(proven.ends_with(&format!("{TREE_FIELD}{tree}")), "{proven}");
        assert_eq!(classify(Some(&proven), Some(DIGEST_OF_KNOWN_GATE)), EvidenceKind::AutomaticCurrent);
        let short = success_evidence(
            DIGEST_OF_KNOWN_GATE,
            &fp,
            &Transcript { shell: "/bin/sh", cwd: "/r", path: "p" },
            Some(&tree),
        );
        assert!(short.ends_with(&format!("; cwd=/r; path=p{TREE_FIELD}{tree}")), "{short}");
    }

    #[test]
    fn a_cut_inside_a_surrogate_pair_ends_in_a_replacement_character_like_node() {
        let fp = Fingerprint::of("x");
        let head =
            success_evidence(DIGEST_OF_KNOWN_GATE, &fp, &Transcript { shell: "/bin/sh", cwd: "", path: "p" }, None);
        let before_cwd = head.find("cwd=").unwrap() + 4;
        // Pad the CWD so that the 900-unit cut falls between the two halves of an emoji.
        let pad = "a".repeat(MAX_EVIDENCE_CHARS - 1 - utf16_len(&head[..before_cwd]));
        let cwd = format!("{pad}\u{1F600}tail");
        let line =
            success_evidence(DIGEST_OF_KNOWN_GATE, &fp, &Transcript { shell: "/bin/sh", cwd: &cwd, path: "p" }, None);
        assert!(line.ends_with(&format!("{pad}\u{FFFD}")), "{line}");
        assert_eq!(utf16_len(&line), MAX_EVIDENCE_CHARS);
        // A cut between whole characters is unchanged.
        assert_eq!(js_prefix("ab\u{1F600}", 4), "ab\u{1F600}");
        assert_eq!(js_prefix("ab\u{1F600}", 2), "ab");
        assert_eq!(js_prefix("ab\u{1F600}", 3), "ab\u{FFFD}");
        assert_eq!(js_prefix("abc", 9), "abc");
        assert_eq!(classify(Some(&line), Some(DIGEST_OF_KNOWN_GATE)), EvidenceKind::AutomaticCurrent);
    }

    #[test]
    fn a_line_names_the_transcript_it_was_written_under_and_no_other() {
        let fp = Fingerprint::of("ok\n");
        let here = Transcript { shell: "/bin/sh", cwd: "/r", path: "abc/1 entries" };
        let plain = success_evidence(DIGEST_OF_KNOWN_GATE, &fp, &here, None);
        let proven = success_evidence(DIGEST_OF_KNOWN_GATE, &fp, &here, Some(&"a".repeat(64)));
        assert!(names_transcript(&plain, &here));
        assert!(names_transcript(&proven, &here));
        for other in [
            Transcript { shell: "/bin/bash", cwd: "/r", path: "abc/1 entries" },
            Transcript { shell: "/bin/sh", cwd: "/r/sub", path: "abc/1 entries" },
            Transcript { shell: "/bin/sh", cwd: "/", path: "abc/1 entries" },
            Transcript { shell: "/bin/sh", cwd: "/r", path: "abd/1 entries" },
        ] {
            assert!(!names_transcript(&plain, &other), "{other:?}");
            assert!(!names_transcript(&proven, &other), "{other:?}");
        }
        let long_cwd = "/d".repeat(500);
        let cut = Transcript { shell: "/bin/sh", cwd: &long_cwd, path: "abc/1 entries" };
        assert!(!names_transcript(&success_evidence(DIGEST_OF_KNOWN_GATE, &fp, &cut, None), &cut));
    }

    #[test]
    fn summaries() {
        assert_eq!(failure_summary(""), "(no output)");
        assert_eq!(failure_summary(" a \r\n\n b\n"), "a | b");
        let many: String = (1..=10).map(|i| format!("l{i}\n")).collect();
        assert_eq!(failure_summary(&many), "l1 | l2 | l3 | l4 | l5 | l6 | ... | l9 | l10");
        // A unittest failure keeps its assertion, which sits in the middle.
        let unittest = "..............F.\n=====\nFAIL: test_add (t.T)\n-----\nTraceback (most recent call last):\n  \
                        File \"t.py\", line 5, in test_add\n    self.assertEqual(a, b)\nAssertionError: Decimal('0.1') != \
                        Decimal('0.2')\n-----\nRan 16 tests in 0.123s\n\nFAILED (failures=1)\n";
        assert_eq!(
            failure_summary(unittest),
            "..............F. | ... | FAIL: test_add (t.T) | ... | Traceback (most recent call last): | ... | \
             self.assertEqual(a, b) | AssertionError: Decimal('0.1') != Decimal('0.2') | ... | Ran 16 tests in 0.123s | \
             FAILED (failures=1)"
        );
        // Within the cap, the failure lines nearest the end win.
        let noisy: String = (0..40).map(|i| format!("error {i}: {}\n", "x".repeat(60))).collect::<String>() + "a\nb\n";
        let summary = failure_summary(&noisy);
        assert!(utf16_len(&summary) <= 480 && summary.contains("error 38") && summary.ends_with("a | b"), "{summary}");
        assert_eq!(path_summary(""), format!("{}/0 entries", &sha256_hex("")[..12]));
        let two = ["/a", "/b"].join(&crate::paths::PATH_DELIMITER.to_string());
        assert!(path_summary(&two).ends_with("/2 entries"));
    }
}
