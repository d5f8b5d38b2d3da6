//! Output hygiene: ledger text, paths and check output are untrusted, so
//! every line printed replaces C0/C1 controls and bidi formatting marks with
//! a space. That keeps a ledger from rewriting terminal history or reordering
//! what a reviewer reads.

use std::io::Write;

/// True for characters that must never reach a terminal raw.
pub fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\u{0000}'..='\u{001f}'
        | '\u{007f}'..='\u{009f}'
        | '\u{061c}'
        | '\u{200e}'
        | '\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}')
}

/// `text` with every unsafe character replaced by a space.
pub fn safe(text: &str) -> String {
    text.chars().map(|c| if is_unsafe(c) { ' ' } else { c }).collect()
}

/// Prints one sanitized line on stdout. A closed pipe must not abort a run
/// half way through its write-backs, so write errors are ignored.
pub fn say(line: &str) {
    let _ = writeln!(std::io::stdout().lock(), "{}", safe(line));
}

/// Prints one sanitized line on stderr.
pub fn warn(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{}", safe(line));
}

/// Writes trusted, preformatted bytes (help, completions, manual) to stdout.
pub fn emit(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes).and_then(|()| out.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_escape_sequences_and_bidi() {
        assert_eq!(safe("a\u{1b}[2Jb\u{202e}c\td"), "a [2Jb c d");
        assert_eq!(safe("plain ünïcode"), "plain ünïcode");
    }
}
