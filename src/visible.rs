//! How ledger text is shown to the person deciding whether to approve it.
//! A command is only as reviewable as its display: a control character, a
//! bidirectional override or a look-alike space can make `echo ok\x01#; rm`
//! read as a harmless, commented-out line. Every such character is shown
//! escaped, so what is displayed is what runs.

use std::borrow::Cow;
use std::fmt::Write;

/// The Unicode properties whose characters do not print as themselves:
/// controls, format characters (bidirectional controls, zero-width joiners,
/// invisible tags, prepended concatenation marks), default-ignorable code
/// points (variation selectors, Hangul fillers) and the line and paragraph
/// separators. Taken from the regex tables, so they follow one Unicode
/// version (`js_regex::UNICODE_VERSION`).
const HIDDEN_PROPERTIES: [&str; 5] =
    ["gc=Control", "gc=Format", "Default_Ignorable_Code_Point", "gc=Line_Separator", "gc=Paragraph_Separator"];

/// Prepended_Concatenation_Mark (PropList.txt, Unicode 17.0): no JavaScript
/// property names it, so it is listed; every one is also `gc=Format`.
pub const PREPENDED_CONCATENATION_MARKS: [(u32, u32); 8] = [
    (0x0600, 0x0605),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x13438),
];

/// Letters and symbols that render as blank space: Braille blank and the
/// Hangul fillers.
pub const BLANK_LOOKING: [u32; 5] = [0x2800, 0x3164, 0x115F, 0x1160, 0xFFA0];

/// The hidden classes as ranges, unmerged: the properties above, every
/// space separator but the ASCII space, the marks and the blank-looking
/// characters.
fn hidden_classes() -> Vec<(u32, u32)> {
    let mut ranges: Vec<(u32, u32)> = HIDDEN_PROPERTIES
        .iter()
        .flat_map(|key| js_regex::unicode_property(key).unwrap_or_default().iter().copied())
        .collect();
    let spaces = js_regex::unicode_property("gc=Space_Separator").unwrap_or_default();
    ranges.extend(spaces.iter().filter(|range| **range != (0x20, 0x20)).copied());
    ranges.extend(PREPENDED_CONCATENATION_MARKS);
    ranges.extend(BLANK_LOOKING.iter().map(|&c| (c, c)));
    ranges
}

/// Every hidden code point as sorted, merged, inclusive ranges.
fn hidden_ranges() -> &'static [(u32, u32)] {
    static RANGES: std::sync::OnceLock<Vec<(u32, u32)>> = std::sync::OnceLock::new();
    RANGES.get_or_init(|| js_regex::merged_ranges(hidden_classes()))
}

/// Characters that do not print as themselves (see `hidden_ranges`).
pub fn is_hidden(c: char) -> bool {
    let c = c as u32;
    if (0x20..0x7f).contains(&c) {
        return false;
    }
    let ranges = hidden_ranges();
    let at = ranges.partition_point(|&(_, high)| high < c);
    ranges.get(at).is_some_and(|&(low, _)| low <= c)
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
    if crate::terminal::is_printable_ascii(text) || !text.chars().any(is_hidden) {
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
    fn every_code_point_of_the_hidden_classes_is_escaped() {
        for key in HIDDEN_PROPERTIES.iter().chain(&["gc=Space_Separator"]) {
            assert!(js_regex::unicode_property(key).is_some(), "{key} is not a property of the regex tables");
        }
        let mut count = 0;
        for (low, high) in hidden_classes() {
            for code in low..=high {
                let Some(c) = char::from_u32(code) else { continue };
                count += 1;
                let text = format!("a{c}b");
                assert!(visible(&text).starts_with("a\\"), "U+{code:04X} is shown raw");
            }
        }
        assert!(count > 4400, "{count}");
        // The marks are format characters too, so the tables cover them.
        let format = js_regex::unicode_property("gc=Format").unwrap();
        for (low, high) in PREPENDED_CONCATENATION_MARKS {
            assert!(format.iter().any(|&(l, h)| l <= low && high <= h), "U+{low:04X}");
        }
        // Printable text stays as it is, ASCII space included.
        for code in (0x20..0x7f).chain([0xe9, 0x65e5, 0x2713, 0x1f600]) {
            let c = char::from_u32(code).unwrap();
            assert!(!is_hidden(c), "U+{code:04X}");
        }
        assert_eq!(visible("echo safe\u{2800}# ; echo PWNED"), "echo safe\\u{2800}# ; echo PWNED");
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
