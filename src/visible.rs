//! How ledger text is shown to the person deciding whether to approve it.
//! A command is only as reviewable as its display: a control character, a
//! bidirectional override or a look-alike space can make `echo ok\x01#; rm`
//! read as a harmless, commented-out line. Every such character is shown
//! escaped, so what is displayed is what runs.

use std::borrow::Cow;
use std::fmt::Write;

/// Characters that do not print as themselves: controls (C0, DEL, C1),
/// format characters (bidirectional controls, zero-width joiners and
/// spaces, invisible tags, variation selectors) and every space other than
/// the ASCII space.
fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00a0}'
                | '\u{00ad}'
                | '\u{034f}'
                | '\u{061c}'
                | '\u{115f}'
                | '\u{1160}'
                | '\u{1680}'
                | '\u{17b4}'
                | '\u{17b5}'
                | '\u{180e}'
                | '\u{2000}'..='\u{200f}'
                | '\u{2028}'..='\u{202f}'
                | '\u{205f}'..='\u{206f}'
                | '\u{3000}'
                | '\u{3164}'
                | '\u{fe00}'..='\u{fe0f}'
                | '\u{feff}'
                | '\u{ffa0}'
                | '\u{fff9}'..='\u{fffb}'
                | '\u{e0000}'..='\u{e007f}'
        )
}

/// Characters a CHECK, EXPECT or CWD may not contain at all: controls other
/// than TAB, and the bidirectional embeddings, overrides and isolates that
/// reorder how the rest of a line is displayed.
pub fn is_forbidden_in_definition(c: char) -> bool {
    (c.is_control() && c != '\t') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every hidden character escaped: `\t` for TAB, `\x01` for the
/// other ASCII controls, `\u{202E}` for the rest. Text without such
/// characters is returned unchanged.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hidden) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\t' => shown.push_str("\\t"),
            c if is_hidden(c) && c.is_ascii() => {
                let _ = write!(shown, "\\x{:02X}", c as u32);
            }
            c if is_hidden(c) => {
                let _ = write!(shown, "\\u{{{:X}}}", c as u32);
            }
            c => shown.push(c),
        }
    }
    Cow::Owned(shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_text_is_shown_as_is() {
        assert!(matches!(visible("printf 'a\\n' | grep -c ok # tail"), Cow::Borrowed(_)));
        assert_eq!(visible("naïve 日本語 ✓"), "naïve 日本語 ✓");
    }

    #[test]
    fn hidden_characters_are_escaped() {
        assert_eq!(visible("echo ok\u{1}#; touch pwned"), "echo ok\\x01#; touch pwned");
        assert_eq!(visible("a\u{1b}[8mb\u{7f}"), "a\\x1B[8mb\\x7F");
        assert_eq!(visible("x\u{202e}y\u{a0}z\u{85}"), "x\\u{202E}y\\u{A0}z\\u{85}");
        assert_eq!(visible("a\tb\u{200b}c\u{feff}\u{e0041}"), "a\\tb\\u{200B}c\\u{FEFF}\\u{E0041}");
        assert_eq!(visible("\r\n\u{2028}"), "\\x0D\\x0A\\u{2028}");
    }

    #[test]
    fn forbidden_characters() {
        for c in ['\u{0}', '\u{1}', '\r', '\u{1b}', '\u{7f}', '\u{85}', '\u{9f}', '\u{202e}', '\u{2066}'] {
            assert!(is_forbidden_in_definition(c), "{c:?}");
        }
        for c in ['\t', ' ', 'a', '\u{a0}', '\u{200f}', 'é'] {
            assert!(!is_forbidden_in_definition(c), "{c:?}");
        }
    }
}
