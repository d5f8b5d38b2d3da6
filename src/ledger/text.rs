//! JavaScript's whitespace and line-terminator classes, which the ledger
//! grammar inherits from the Node tool's regular expressions (`\s`, `.`,
//! `String.prototype.trim`).

/// JavaScript `\s`: WhiteSpace plus LineTerminator.
pub fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{000b}' | '\u{000c}' | '\r' | ' ' | '\u{00a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

/// Characters JavaScript's `.` refuses without the `s` flag.
pub fn is_js_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

/// A byte that starts no JavaScript space: printable ASCII. (Every space
/// outside ASCII starts with a byte of 0xC2 or more.)
fn is_plain_ascii(byte: u8) -> bool {
    (0x21..0x80).contains(&byte)
}

/// `String.prototype.trim`.
pub fn js_trim(text: &str) -> &str {
    // Most values start and end with printable ASCII: nothing to trim.
    match (text.as_bytes().first(), text.as_bytes().last()) {
        (Some(&first), Some(&last)) if is_plain_ascii(first) && is_plain_ascii(last) => text,
        _ => text.trim_matches(is_js_space),
    }
}

/// True when `(.*)$` (no flags) can match the whole of `text`.
pub fn is_single_js_line(text: &str) -> bool {
    // LF, CR, and 0xE2, the first byte of U+2028 and U+2029: text without
    // any of the three has no line terminator. Folded without an early
    // exit, which compiles to a vector loop over these short values.
    let candidate = text.bytes().fold(false, |found, byte| found | matches!(byte, b'\n' | b'\r' | 0xE2));
    !candidate || !text.chars().any(is_js_line_terminator)
}

/// Length in UTF-16 code units, the unit JavaScript's `length` counts.
pub fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

/// The longest prefix of `text` that fits in `max` UTF-16 code units,
/// never splitting a character.
pub fn utf16_prefix(text: &str, max: usize) -> &str {
    let mut units = 0;
    for (index, c) in text.char_indices() {
        units += c.len_utf16();
        if units > max {
            return &text[..index];
        }
    }
    text
}

/// Strips one leading JavaScript space (the `\s?` after an attribute colon).
pub fn strip_one_space(text: &str) -> &str {
    match text.chars().next() {
        Some(c) if is_js_space(c) => &text[c.len_utf8()..],
        _ => text,
    }
}

#[cfg(test)]
mod fast_path_tests {
    use super::*;

    #[test]
    fn the_fast_paths_agree_with_the_character_classes() {
        let samples = [
            "",
            " ",
            "a",
            " a ",
            "\ta",
            "a\u{3000}",
            "\u{feff}x",
            "x\u{a0}",
            "make test",
            "ab\u{2028}c",
            "a\u{2029}",
            "\u{2026} ellipsis",
            "\u{e2}",
            "tab\tin",
            "cr\r",
            "lf\n",
            "é",
            "\u{202f}",
            "x\u{200a}y",
        ];
        for text in samples {
            assert_eq!(js_trim(text), text.trim_matches(is_js_space), "{text:?}");
            assert_eq!(is_single_js_line(text), !text.chars().any(is_js_line_terminator), "{text:?}");
        }
        for c in (0u32..0x3100).filter_map(char::from_u32) {
            for text in [format!("{c}"), format!("a{c}"), format!("{c}b"), format!("a{c}b")] {
                assert_eq!(js_trim(&text), text.trim_matches(is_js_space), "{c:?}");
                assert_eq!(is_single_js_line(&text), !text.chars().any(is_js_line_terminator), "{c:?}");
            }
        }
    }
}
