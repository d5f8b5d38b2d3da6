//! Output hygiene: ledger text, paths and check output are untrusted, so
//! every line printed replaces control characters (C0, DEL, C1) and bidi
//! formatting marks with a space. That keeps a ledger from rewriting
//! terminal history or reordering what a reviewer reads.

use std::borrow::Cow;
use std::io::{BufWriter, Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};
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
    sanitize(text).into_owned()
}

/// Whether every byte of `text` is printable ASCII (0x20 to 0x7E). Folded
/// without an early exit, which compiles to a vector loop: most lines
/// printed are short and wholly printable.
pub fn is_printable_ascii(text: &str) -> bool {
    !text.bytes().fold(false, |unprintable, byte| unprintable | !(0x20..0x7f).contains(&byte))
}

/// [`safe`] without a copy when `text` is already safe, as nearly every
/// line is: printable ASCII is recognised without decoding characters.
pub fn sanitize(text: &str) -> Cow<'_, str> {
    if is_printable_ascii(text) || !text.chars().any(is_unsafe) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.chars().map(|c| if is_unsafe(c) { ' ' } else { c }).collect())
    }
}

/// Whether a GitHub Actions runner reads this process's output for
/// workflow commands (`::error ...`, `::add-mask::`); set once at start.
static WORKFLOW_COMMANDS_LIVE: AtomicBool = AtomicBool::new(false);

/// Says, once at start, whether the output is read for workflow commands.
pub fn set_workflow_commands_live(live: bool) {
    WORKFLOW_COMMANDS_LIVE.store(live, Ordering::Relaxed);
}

fn workflow_commands_live() -> bool {
    WORKFLOW_COMMANDS_LIVE.load(Ordering::Relaxed)
}

/// `line` made unable to open a workflow command: the runner trims leading
/// blanks and looks for `::`, so the first of those colons is written
/// `%3A`. Every other line is returned as it is.
pub fn neutralize_workflow_command(line: Cow<'_, str>) -> Cow<'_, str> {
    let indent = line.len() - line.trim_start().len();
    if !line[indent..].starts_with("::") {
        return line;
    }
    Cow::Owned(format!("{}%3A{}", &line[..indent], &line[indent + 1..]))
}

/// Every line of `text` neutralized as by [`neutralize_workflow_command`].
pub fn neutralize_workflow_commands(text: &str) -> Cow<'_, str> {
    if !text.contains("::") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for piece in text.split_inclusive('\n') {
        let (line, ending) = match piece.strip_suffix('\n') {
            Some(line) => (line, "\n"),
            None => (piece, ""),
        };
        out.push_str(&neutralize_workflow_command(Cow::Borrowed(line)));
        out.push_str(ending);
    }
    Cow::Owned(out)
}

/// A line as this process prints it: sanitized, and neutralized where a
/// runner reads workflow commands.
fn printable(line: &str) -> Cow<'_, str> {
    let line = sanitize(line);
    if workflow_commands_live() {
        neutralize_workflow_command(line)
    } else {
        line
    }
}

/// The process's buffered stdout: large reports cost one write per 64 KiB
/// (a pipe's default capacity), and callers flush before anything slow. Everything that writes either
/// stream goes through here, so stdout and stderr interleave in the order
/// they were written.
const STDOUT_BUFFER: usize = 64 * 1024;

static CONSOLE: Mutex<Option<BufWriter<Stdout>>> = Mutex::new(None);

fn with_stdout<T>(act: impl FnOnce(&mut BufWriter<Stdout>) -> T) -> T {
    let mut guard = CONSOLE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    act(guard.get_or_insert_with(|| BufWriter::with_capacity(STDOUT_BUFFER, std::io::stdout())))
}

/// Prints one sanitized line on stdout (subcommands' own output). A closed
/// pipe must not abort anything half way, so write errors are ignored.
pub fn say(line: &str) {
    let line = printable(line);
    with_stdout(|out| {
        let _ = writeln!(out, "{line}");
    });
}

/// Pushes buffered stdout to the terminal or pipe.
pub fn flush() {
    with_stdout(|out| {
        let _ = out.flush();
    });
}

/// Prints one sanitized line on stderr, after any pending stdout.
pub fn warn(line: &str) {
    let _ = Stderr.write_all(format!("{}\n", printable(line)).as_bytes());
}

/// Writes trusted, preformatted bytes (help, completions, manual) to stdout.
pub fn emit(bytes: &[u8]) {
    with_stdout(|out| {
        let _ = out.write_all(bytes).and_then(|()| out.flush());
    });
}

/// Writes preformatted lines built from untrusted text (each piece escaped
/// for its format by the builder) to stdout, every line neutralized where
/// a runner reads workflow commands.
pub fn emit_lines(text: &str) {
    if workflow_commands_live() {
        emit(neutralize_workflow_commands(text).as_bytes());
    } else {
        emit(text.as_bytes());
    }
}

/// Writes a machine document (trusted bytes) to stdout, and says whether
/// it got there.
pub fn write_document(bytes: &[u8]) -> std::io::Result<()> {
    with_stdout(|out| out.write_all(bytes).and_then(|()| out.flush()))
}

/// The process's stdout as a writer for reporters (buffered; `flush` to push).
pub struct Console;

impl Write for Console {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        with_stdout(|out| out.write(bytes))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        with_stdout(|out| out.flush())
    }
}

/// The process's stderr as a writer: pending stdout goes first.
pub struct Stderr;

impl Write for Stderr {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        with_stdout(|out| {
            let _ = out.flush();
            std::io::stderr().lock().write(bytes)
        })
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().lock().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_escape_sequences_and_bidi() {
        assert_eq!(safe("a\u{1b}[2Jb\u{202e}c\td"), "a [2Jb c d");
        assert_eq!(safe("plain ünïcode"), "plain ünïcode");
        assert!(matches!(sanitize("plain ünïcode"), Cow::Borrowed(_)));
        assert_eq!(sanitize("del\u{7f} c1\u{85} lrm\u{200e}"), "del  c1  lrm ");
    }

    #[test]
    fn workflow_commands_are_neutralized_line_by_line() {
        assert_eq!(neutralize_workflow_command(Cow::Borrowed("  ::error x::y")), "  %3A:error x::y");
        assert_eq!(neutralize_workflow_command(Cow::Borrowed("a ::error")), "a ::error");
        assert_eq!(
            neutralize_workflow_commands("ok\n::add-mask::s\n\t::warning::w"),
            "ok\n%3A:add-mask::s\n\t%3A:warning::w"
        );
        assert!(matches!(neutralize_workflow_commands("no commands"), Cow::Borrowed(_)));
    }
}
