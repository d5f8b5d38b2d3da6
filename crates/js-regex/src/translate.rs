//! Rewrites a parsed pattern into `regex` crate syntax when the two can be made to agree
//! exactly. Some constructs agree only on some inputs; those are reported as
//! `InputConditions`, and an input that meets one is sent to the backtracker instead.

use std::borrow::Cow;
use std::fmt::Write;

use super::charset::{CodeSet, SURROGATES};
use super::parser::{Assertion, Flags, Node};

/// Input features under which the translation would differ from JavaScript.
#[derive(Clone, Copy, Debug, Default)]
pub struct InputConditions {
    /// `\B` with `u`/`v`: V8 also tries the positions between the halves of a surrogate
    /// pair, where it holds, so astral input differs.
    pub astral: bool,
    /// Multiline `^`/`$`: the regex crate knows only `\n` as a line end.
    pub other_line_terminators: bool,
    /// `\b`/`\B` under `iu`: U+017F and U+212A are word characters there.
    pub folded_word_characters: bool,
}

pub struct Translation {
    pub pattern: String,
    pub conditions: InputConditions,
}

/// Beyond this many copies of sets, the regex crate would refuse the pattern anyway (its
/// size limit is 16 MiB); trying takes seconds for a count like `b{2147483647}`.
const MAX_LINEAR_SIZE: u64 = 1 << 24;

/// A lower bound on the compiled size: each set once per copy a repetition makes.
fn unrolled_size(node: &Node) -> u64 {
    match node {
        Node::Empty | Node::Assert(_) | Node::BackReference { .. } => 0,
        Node::Set(set) => set.ranges().len().max(1) as u64,
        Node::Concat(items) | Node::Alternation(items) => {
            items.iter().fold(0, |total: u64, item| total.saturating_add(unrolled_size(item)))
        }
        Node::Capture(_, body) | Node::Look { body, .. } => unrolled_size(body),
        Node::Repeat { body, min, max, .. } => {
            let copies = u64::from(max.unwrap_or(min.saturating_add(1)).max(1));
            unrolled_size(body).saturating_mul(copies)
        }
    }
}

/// Where the UTF-16 halves of astral characters go when a pattern without `u`/`v` runs on
/// the regex crate: `D800..=DFFF` become `HALVES..=HALVES + 0x7FF`, code points no such
/// pattern can name, so each half is one character, as JavaScript reads it.
const HALVES: u32 = 0x10000;

/// `output` as a pattern without `u`/`v` reads it: one character per UTF-16 code unit,
/// each astral character as its two halves (see `HALVES`).
pub fn code_units_as_characters(output: &str) -> Cow<'_, str> {
    // Only astral characters take four bytes in UTF-8.
    if !output.bytes().any(|byte| byte >= 0xF0) {
        return Cow::Borrowed(output);
    }
    let mut units = String::with_capacity(output.len() * 2);
    for ch in output.chars() {
        if u32::from(ch) <= 0xFFFF {
            units.push(ch);
            continue;
        }
        for half in ch.encode_utf16(&mut [0; 2]) {
            units.extend(char::from_u32(u32::from(*half) - SURROGATES.0 + HALVES));
        }
    }
    Cow::Owned(units)
}

/// None when the pattern needs backtracking (backreferences, lookaround) or is too large
/// for the linear engine.
pub fn translate(root: &Node, flags: Flags) -> Option<Translation> {
    if unrolled_size(root) > MAX_LINEAR_SIZE {
        return None;
    }
    let mut translator = Translator { flags, conditions: InputConditions::default(), out: String::new() };
    if flags.sticky {
        translator.out.push_str("\\A");
    }
    translator.out.push_str("(?:");
    translator.node(root)?;
    translator.out.push(')');
    Some(Translation { pattern: translator.out, conditions: translator.conditions })
}

struct Translator {
    flags: Flags,
    conditions: InputConditions,
    out: String,
}

impl Translator {
    fn node(&mut self, node: &Node) -> Option<()> {
        match node {
            Node::Empty => {}
            Node::Set(set) => self.set(set),
            Node::Concat(items) => {
                for item in items {
                    self.node(item)?;
                }
            }
            Node::Alternation(alternatives) => {
                self.out.push_str("(?:");
                for (i, alternative) in alternatives.iter().enumerate() {
                    if i > 0 {
                        self.out.push('|');
                    }
                    self.node(alternative)?;
                }
                self.out.push(')');
            }
            Node::Capture(_, body) => {
                self.out.push_str("(?:");
                self.node(body)?;
                self.out.push(')');
            }
            Node::Repeat { body, min, max, greedy } => {
                self.out.push_str("(?:");
                self.node(body)?;
                self.out.push(')');
                match max {
                    Some(max) => {
                        let _ = write!(self.out, "{{{min},{max}}}");
                    }
                    None => {
                        let _ = write!(self.out, "{{{min},}}");
                    }
                }
                if !greedy {
                    self.out.push('?');
                }
            }
            Node::Assert(assertion) => {
                let text = match assertion {
                    Assertion::InputStart => "\\A",
                    Assertion::InputEnd => "\\z",
                    Assertion::LineStart => {
                        self.conditions.other_line_terminators = true;
                        "(?m:^)"
                    }
                    Assertion::LineEnd => {
                        self.conditions.other_line_terminators = true;
                        "(?m:$)"
                    }
                    Assertion::WordBoundary { folded } => {
                        self.conditions.folded_word_characters |= folded;
                        "(?-u:\\b)"
                    }
                    Assertion::NotWordBoundary { folded } => {
                        self.conditions.folded_word_characters |= folded;
                        // \B holds between the halves of a surrogate pair, which V8
                        // tries even with u, for empty matches.
                        self.conditions.astral |= self.flags.full_unicode();
                        "(?-u:\\B)"
                    }
                    // The regex crate never stops inside a character; V8 does only for
                    // empty matches, and one can only hold there through `\B`, which
                    // sends astral output to the backtracker.
                    Assertion::NotMidPair => "",
                };
                self.out.push_str(text);
            }
            Node::BackReference { .. } | Node::Look { .. } => return None,
        }
        Some(())
    }

    fn set(&mut self, set: &CodeSet) {
        // Surrogate code points never occur in a Rust string. Without u/v they are the
        // halves of astral characters, which the output is given as (see `HALVES`); with
        // u/v they only match lone surrogates, which no output holds.
        let halves = |low: u32, high: u32| {
            let (low, high) = (low.max(SURROGATES.0), high.min(SURROGATES.1));
            if self.flags.full_unicode() || low > high {
                (1, 0)
            } else {
                (low - SURROGATES.0 + HALVES, high - SURROGATES.0 + HALVES)
            }
        };
        let ranges: Vec<(u32, u32)> = set
            .ranges()
            .iter()
            .flat_map(|&(low, high)| {
                [(low, high.min(SURROGATES.0 - 1)), halves(low, high), (low.max(SURROGATES.1 + 1), high)]
            })
            .filter(|(low, high)| low <= high)
            .collect();
        if let [(low, high)] = ranges.as_slice() {
            if low == high {
                let _ = write!(self.out, "\\x{{{low:X}}}");
                return;
            }
        }
        if ranges.is_empty() {
            // Matches nothing.
            self.out.push_str("[^\\x{0}-\\x{10FFFF}]");
            return;
        }
        self.out.push('[');
        for (low, high) in ranges {
            if low == high {
                let _ = write!(self.out, "\\x{{{low:X}}}");
            } else {
                let _ = write!(self.out, "\\x{{{low:X}}}-\\x{{{high:X}}}");
            }
        }
        self.out.push(']');
    }
}
