//! CommonMark fenced-code-block recognition, one line at a time.
//!
//! Only the rules that decide where a fence opens and closes are needed: an
//! opening fence is up to three spaces of indentation, then three or more of
//! one marker character (backtick or tilde); a backtick fence's info string
//! may not contain a backtick. A closing fence uses the same character, is at
//! least as long, has up to three spaces of indentation and nothing but
//! spaces or tabs after it.

use super::text::is_single_js_line;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fence {
    marker: u8,
    length: usize,
}

/// Splits `line` into (indent, marker run) when it starts like a fence.
fn marker_run(line: &str) -> Option<(u8, usize, &str)> {
    let bytes = line.as_bytes();
    let indent = bytes.iter().take_while(|&&b| b == b' ').count();
    if indent > 3 {
        return None;
    }
    let marker = *bytes.get(indent)?;
    if marker != b'`' && marker != b'~' {
        return None;
    }
    let length = bytes[indent..].iter().take_while(|&&b| b == marker).count();
    if length < 3 {
        return None;
    }
    Some((marker, length, &line[indent + length..]))
}

/// The fence this line opens, if any. Like the Node tool's line grammar, an
/// info string holding a JavaScript line terminator (a lone CR, U+2028,
/// U+2029) makes the line prose, not a fence.
pub fn opening(line: &str) -> Option<Fence> {
    let (marker, length, info) = marker_run(line)?;
    if (marker == b'`' && info.contains('`')) || !is_single_js_line(info) {
        return None;
    }
    Some(Fence { marker, length })
}

impl Fence {
    /// True when `line` closes this fence.
    pub fn is_closed_by(&self, line: &str) -> bool {
        match marker_run(line) {
            Some((marker, length, rest)) => {
                marker == self.marker && length >= self.length && rest.bytes().all(|b| b == b' ' || b == b'\t')
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opening_rules() {
        assert!(opening("```").is_some());
        assert!(opening("   ~~~~ rust").is_some());
        assert!(opening("    ```").is_none(), "four spaces is indented code");
        assert!(opening("``").is_none());
        assert!(opening("``` a`b").is_none(), "backtick in a backtick info string");
        assert!(opening("~~~ a`b").is_some(), "tilde info may hold a backtick");
        assert!(opening("```\u{2028}").is_none(), "a line separator makes the line prose");
        assert!(opening("~~~\r").is_none(), "a lone CR makes the line prose");
    }

    #[test]
    fn closing_rules() {
        let fence = opening("````").unwrap();
        assert!(!fence.is_closed_by("```"), "shorter fence does not close");
        assert!(!fence.is_closed_by("~~~~"), "other marker does not close");
        assert!(!fence.is_closed_by("```` x"), "trailing text does not close");
        assert!(fence.is_closed_by("`````  \t"));
        assert!(fence.is_closed_by("   ````"));
        assert!(!fence.is_closed_by("    ````"));
    }
}
