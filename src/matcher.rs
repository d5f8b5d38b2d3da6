//! EXPECT matching: a plain substring, or a `/pattern/flags` JavaScript regular
//! expression. Compiled once at parse time, matched at check time.

use thiserror::Error;

/// Longest regex source the Node tool accepts.
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
}

#[derive(Debug, Clone)]
pub enum Expectation {
    Substring(String),
    Pattern(Pattern),
}

#[derive(Debug, Clone)]
pub struct Pattern {
    source: String,
    flags: String,
    compiled: regex::Regex,
}

impl Pattern {
    pub fn source(&self) -> &str {
        &self.source
    }
    pub fn flags(&self) -> &str {
        &self.flags
    }
}

impl Expectation {
    /// Reads an EXPECT value. Wrapping slashes always mean a regex.
    pub fn parse(expect: &str) -> Result<Self, PatternError> {
        let Some((source, flags)) = split_regex_literal(expect) else {
            return Ok(Expectation::Substring(expect.to_string()));
        };
        if source.chars().count() > MAX_PATTERN_CHARS {
            return Err(PatternError::TooLong);
        }
        let mut prefix = String::new();
        let mut seen = String::new();
        for flag in flags.chars() {
            if seen.contains(flag) || !"dgimsuvy".contains(flag) {
                return Err(PatternError::Invalid(format!(
                    "Invalid flags supplied to RegExp constructor '{flags}'"
                )));
            }
            seen.push(flag);
            match flag {
                'i' => prefix.push('i'),
                'm' => prefix.push('m'),
                's' => prefix.push('s'),
                _ => {}
            }
        }
        let full = if prefix.is_empty() {
            source.to_string()
        } else {
            format!("(?{prefix}){source}")
        };
        let compiled = regex::Regex::new(&full).map_err(|e| PatternError::Invalid(e.to_string()))?;
        Ok(Expectation::Pattern(Pattern {
            source: source.to_string(),
            flags: flags.to_string(),
            compiled,
        }))
    }

    pub fn matches(&self, output: &str) -> Result<bool, MatchError> {
        Ok(match self {
            Expectation::Substring(text) => output.contains(text.as_str()),
            Expectation::Pattern(pattern) => pattern.compiled.is_match(output),
        })
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

/// `/source/flags` with lowercase ASCII flags, as the Node tool reads it.
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
    bytes
        .iter()
        .enumerate()
        .any(|(i, &b)| b == b'/' && (i == 0 || bytes[i - 1] != b'\\'))
}
