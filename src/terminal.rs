//! Output hygiene: ledger text, paths and check output are untrusted, so
//! every line printed replaces C0/C1 controls and bidi formatting marks with
//! a space. That keeps a ledger from rewriting terminal history or reordering
//! what a reviewer reads.

use std::io::{BufWriter, IsTerminal, Stdout, Write};
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

/// The process's console: buffered stdout (large reports cost one write
/// per 8 KiB, and callers `flush` before anything slow), where human lines
/// go, whether they are coloured, and whether a progress line is showing.
struct Console {
    out: BufWriter<Stdout>,
    human_to_stderr: bool,
    color: bool,
    live: bool,
    progress_shown: bool,
}

static CONSOLE: Mutex<Option<Console>> = Mutex::new(None);

fn with_console<T>(act: impl FnOnce(&mut Console) -> T) -> T {
    let mut guard = CONSOLE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let console = guard.get_or_insert_with(|| Console {
        out: BufWriter::new(std::io::stdout()),
        human_to_stderr: false,
        color: false,
        live: false,
        progress_shown: false,
    });
    act(console)
}

/// Decides where human lines go and how they look. Colour and the live
/// progress line appear only on a terminal, never with `NO_COLOR` (colour)
/// or in CI logs (progress), and never when stdout carries a document.
pub fn configure(machine_output: bool) {
    let tty = std::io::stdout().is_terminal();
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
    let ci = std::env::var_os("CI").is_some() || std::env::var_os("GITHUB_ACTIONS").is_some();
    with_console(|console| {
        console.human_to_stderr = machine_output;
        console.color = tty && !machine_output && !no_color && !dumb;
        console.live = tty && !machine_output && !dumb && !ci;
    });
}

/// ANSI colour for the marker a report line starts with.
fn marker_color(line: &str) -> Option<(usize, &'static str)> {
    const MARKERS: [(&str, &str); 8] = [
        ("  PASS ", "32"),
        ("  FAIL ", "31"),
        ("  STALE ", "33"),
        ("  UNMET ", "33"),
        ("APPROVAL REQUIRED", "33"),
        ("ALL MET", "1;32"),
        ("UNMET:", "1;31"),
        ("HANDOFF REQUIRED", "1;33"),
    ];
    MARKERS.iter().find(|(marker, _)| line.starts_with(marker)).map(|(marker, code)| (marker.trim_end().len(), *code))
}

fn clear_progress(console: &mut Console) {
    if console.progress_shown {
        let _ = console.out.write_all(b"\r\x1b[2K");
        console.progress_shown = false;
    }
}

/// Prints one sanitized line of the human report. A closed pipe must not
/// abort a run half way through its write-backs, so write errors are ignored.
pub fn say(line: &str) {
    let line = safe(line);
    with_console(|console| {
        if console.human_to_stderr {
            let _ = console.out.flush();
            let _ = writeln!(std::io::stderr().lock(), "{line}");
            return;
        }
        clear_progress(console);
        match marker_color(&line).filter(|_| console.color) {
            Some((end, code)) => {
                let _ = writeln!(console.out, "\x1b[{code}m{}\x1b[0m{}", &line[..end], &line[end..]);
            }
            None => {
                let _ = writeln!(console.out, "{line}");
            }
        }
    });
}

/// Shows (or with `None`, removes) the one-line live progress indicator.
/// A no-op unless stdout is an interactive terminal.
pub fn progress(text: Option<&str>) {
    with_console(|console| {
        if !console.live {
            return;
        }
        clear_progress(console);
        if let Some(text) = text {
            let _ = write!(console.out, "{}", safe(text));
            console.progress_shown = true;
        }
        let _ = console.out.flush();
    });
}

/// Pushes buffered stdout to the terminal or pipe.
pub fn flush() {
    with_console(|console| {
        let _ = console.out.flush();
    });
}

/// Prints one sanitized line on stderr, after any pending stdout so the two
/// streams interleave in the order they were written.
pub fn warn(line: &str) {
    with_console(|console| {
        clear_progress(console);
        let _ = console.out.flush();
    });
    let _ = writeln!(std::io::stderr().lock(), "{}", safe(line));
}

/// Writes trusted, preformatted bytes (help, completions, manual, machine
/// documents) to stdout.
pub fn emit(bytes: &[u8]) {
    with_console(|console| {
        clear_progress(console);
        let _ = console.out.write_all(bytes).and_then(|()| console.out.flush());
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
