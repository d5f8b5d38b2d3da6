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

/// `String.prototype.trim`.
pub fn js_trim(text: &str) -> &str {
    text.trim_matches(is_js_space)
}

/// True when `(.*)$` (no flags) can match the whole of `text`.
pub fn is_single_js_line(text: &str) -> bool {
    !text.chars().any(is_js_line_terminator)
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
