//! EXPECT matching: a plain substring, or a `/pattern/flags` JavaScript regular
//! expression with the yes/no answer of `new RegExp(pattern, flags).test(output)`.
//! Compiled once at parse time, matched at check time.
//!
//! Patterns are parsed with ECMAScript rules (see `parser`). Whatever the `regex` crate can
//! express identically runs there, in linear time (`translate`); backreferences, lookaround
//! and a few input-dependent cases run on a backtracker with a fixed step budget
//! (`backtrack`). See references/regex.md.

mod backtrack;
mod charset;
mod parser;
mod property_names;
mod translate;

use thiserror::Error;

pub use backtrack::{STACK_BYTES_LIMIT, STEP_BUDGET};

/// Longest regex source the Node tool accepts, in UTF-16 code units (JavaScript `length`).
pub const MAX_PATTERN_CHARS: usize = 1000;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum PatternError {
    #[error("EXPECT regex is longer than {MAX_PATTERN_CHARS} characters")]
    TooLong,
    #[error("invalid EXPECT regex: {0}")]
    Invalid(String),
}

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum MatchError {
    #[error("EXPECT regex exceeded its matching budget")]
    BudgetExceeded,
    #[error("EXPECT regex exceeded its memory budget ({} MiB of backtracking state)", STACK_BYTES_LIMIT >> 20)]
    MemoryExceeded,
}

#[derive(Debug, Clone)]
pub enum Expectation {
    Substring(String),
    Pattern(Pattern),
}

/// Which engine answers for a given output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Linear,
    Backtracking,
}

#[derive(Debug, Clone)]
pub struct Pattern {
    source: String,
    flags: String,
    full_unicode: bool,
    linear: Option<LinearPattern>,
    backtracking: backtrack::Program,
}

#[derive(Debug, Clone)]
struct LinearPattern {
    regex: regex::Regex,
    conditions: translate::InputConditions,
}

impl Pattern {
    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn flags(&self) -> &str {
        &self.flags
    }

    /// True if no output ever needs the backtracker.
    pub fn is_always_linear(&self) -> bool {
        self.linear.as_ref().is_some_and(|linear| {
            let c = linear.conditions;
            !c.astral && !c.other_line_terminators && !c.folded_word_characters
        })
    }

    /// The engine that `matches` uses for `output`.
    pub fn engine_for(&self, output: &str) -> Engine {
        let Some(linear) = &self.linear else {
            return Engine::Backtracking;
        };
        let c = linear.conditions;
        let needs_backtracking = (c.astral && output.chars().any(|ch| ch as u32 > 0xFFFF))
            || (c.other_line_terminators && output.contains(['\r', '\u{2028}', '\u{2029}']))
            || (c.folded_word_characters && output.contains(['\u{017F}', '\u{212A}']));
        if needs_backtracking {
            Engine::Backtracking
        } else {
            Engine::Linear
        }
    }

    /// Parsing and compiling recurse once per nesting level. JavaScript allows ~500 levels
    /// in 1000 characters, more than a small thread stack holds, so deep patterns are
    /// compiled on a helper thread with a generous stack.
    fn compile(source: &str, flags: &str) -> Result<Pattern, PatternError> {
        if nesting_depth(source) <= SHALLOW_NESTING {
            return Self::compile_here(source, flags);
        }
        std::thread::scope(|scope| {
            let worker = std::thread::Builder::new()
                .name("expect-regex-compile".into())
                .stack_size(DEEP_COMPILE_STACK)
                .spawn_scoped(scope, || Self::compile_here(source, flags))
                .map_err(|e| PatternError::Invalid(format!("cannot start the regex compiler: {e}")))?;
            worker.join().unwrap_or_else(|_| Err(PatternError::Invalid("regex compiler failed".into())))
        })
    }

    fn compile_here(source: &str, flags: &str) -> Result<Pattern, PatternError> {
        let parsed_flags = parser::Flags::parse(flags).map_err(PatternError::Invalid)?;
        let parsed = parser::parse(source, parsed_flags)
            .map_err(|message| PatternError::Invalid(format!("/{source}/{flags}: {message}")))?;
        let backtracking = backtrack::Program::compile(&parsed.root, parsed.capture_count, parsed_flags);
        let linear = translate::translate(&parsed.root, parsed_flags).and_then(|translation| {
            // A pattern too large for the regex crate's limits stays on the backtracker.
            let regex = regex::RegexBuilder::new(&translation.pattern).size_limit(1 << 24).build().ok()?;
            Some(LinearPattern { regex, conditions: translation.conditions })
        });
        Ok(Pattern {
            source: source.to_string(),
            flags: flags.to_string(),
            full_unicode: parsed_flags.full_unicode(),
            linear,
            backtracking,
        })
    }

    /// The backtracker's answer under `step_budget`, even where the linear engine would
    /// answer: for cross-checking the engines and for the benchmark.
    #[doc(hidden)]
    pub fn matches_with_backtracker(&self, output: &str, step_budget: u64) -> Result<bool, MatchError> {
        self.backtrack_match(output, step_budget)
    }

    fn is_match(&self, output: &str) -> Result<bool, MatchError> {
        if let (Engine::Linear, Some(linear)) = (self.engine_for(output), &self.linear) {
            return Ok(linear.regex.is_match(output));
        }
        self.backtrack_match(output, STEP_BUDGET)
    }

    fn backtrack_match(&self, output: &str, step_budget: u64) -> Result<bool, MatchError> {
        let units: Vec<u32> = if self.full_unicode {
            output.chars().map(|c| c as u32).collect()
        } else {
            output.encode_utf16().map(u32::from).collect()
        };
        self.backtracking.is_match(&units, step_budget).map_err(|exhausted| match exhausted {
            backtrack::Exhausted::Steps => MatchError::BudgetExceeded,
            backtrack::Exhausted::Memory => MatchError::MemoryExceeded,
        })
    }
}

impl Expectation {
    /// Reads an EXPECT value. Wrapping slashes always mean a regex.
    pub fn parse(expect: &str) -> Result<Self, PatternError> {
        let Some((source, flags)) = split_regex_literal(expect) else {
            return Ok(Expectation::Substring(expect.to_string()));
        };
        if source.encode_utf16().count() > MAX_PATTERN_CHARS {
            return Err(PatternError::TooLong);
        }
        Ok(Expectation::Pattern(Pattern::compile(source, flags)?))
    }

    pub fn matches(&self, output: &str) -> Result<bool, MatchError> {
        match self {
            Expectation::Substring(text) => Ok(output.contains(text.as_str())),
            Expectation::Pattern(pattern) => pattern.is_match(output),
        }
    }

    /// True for a regex whose source holds an unescaped `/`: most likely a
    /// literal path that the wrapping slashes turned into a pattern.
    pub fn is_path_like(&self) -> bool {
        match self {
            Expectation::Substring(_) => false,
            Expectation::Pattern(pattern) => has_unescaped_slash(&pattern.source),
        }
    }
}

/// Nesting up to this depth compiles on the caller's stack.
const SHALLOW_NESTING: usize = 24;
/// Stack for compiling deeper patterns (only touched pages are ever committed).
const DEEP_COMPILE_STACK: usize = 256 << 20;

/// An upper bound on the parser's recursion depth: every level opens with `(` or `[`.
fn nesting_depth(source: &str) -> usize {
    source.chars().filter(|&ch| ch == '(' || ch == '[').count()
}

/// `/source/flags` with lowercase ASCII flags, as the Node tool reads it
/// (`/^\/([\s\S]*)\/([a-z]*)$/`: the last slash ends the source).
fn split_regex_literal(expect: &str) -> Option<(&str, &str)> {
    let body = expect.strip_prefix('/')?;
    let close = body.rfind('/')?;
    let (source, flags) = (&body[..close], &body[close + 1..]);
    if flags.bytes().all(|b| b.is_ascii_lowercase()) {
        Some((source, flags))
    } else {
        None
    }
}

fn has_unescaped_slash(source: &str) -> bool {
    let bytes = source.as_bytes();
    bytes.iter().enumerate().any(|(i, &b)| b == b'/' && (i == 0 || bytes[i - 1] != b'\\'))
}
