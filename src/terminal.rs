//! Output hygiene: ledger text, paths and check output are untrusted, so
//! every line printed replaces C0/C1 controls and bidi formatting marks with
//! a space. That keeps a ledger from rewriting terminal history or reordering
//! what a reviewer reads.

use std::io::{BufWriter, Stdout, Write};
use std::sync::Mutex;

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

/// Stdout, buffered: large reports cost one write per 8 KiB instead of one
/// per line. Callers `flush` before anything slow so progress stays visible.
static STDOUT: Mutex<Option<BufWriter<Stdout>>> = Mutex::new(None);

fn with_stdout(write: impl FnOnce(&mut BufWriter<Stdout>)) {
    let mut guard = STDOUT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    write(guard.get_or_insert_with(|| BufWriter::new(std::io::stdout())));
}

/// Prints one sanitized line on stdout. A closed pipe must not abort a run
/// half way through its write-backs, so write errors are ignored.
pub fn say(line: &str) {
    with_stdout(|out| {
        let _ = writeln!(out, "{}", safe(line));
    });
}

/// Pushes buffered stdout to the terminal or pipe.
pub fn flush() {
    with_stdout(|out| {
        let _ = out.flush();
    });
}

/// Prints one sanitized line on stderr, after any pending stdout so the two
/// streams interleave in the order they were written.
pub fn warn(line: &str) {
    flush();
    let _ = writeln!(std::io::stderr().lock(), "{}", safe(line));
}

/// Writes trusted, preformatted bytes (help, completions, manual) to stdout.
pub fn emit(bytes: &[u8]) {
    with_stdout(|out| {
        let _ = out.write_all(bytes).and_then(|()| out.flush());
    });
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
