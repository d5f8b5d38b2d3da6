//! EXPECT matching: a plain substring, or a `/pattern/flags` JavaScript regular
//! expression with the yes/no answer of `new RegExp(pattern, flags).test(output)`.
//! Validated when a ledger is parsed; compiled on the first match, once per `Pattern`.
//!
//! Patterns are parsed with ECMAScript rules (see `parser`). Whatever the `regex` crate can
//! express identically runs on its engine, in linear time (`translate`), or where that
//! could take long, on a lazy DFA stepped here; backreferences, lookaround and a few
//! input-dependent cases run on a backtracker with a fixed step budget (`backtrack`).
//! Every engine ends by the caller's deadline and at its interrupt (`Limits`). See
//! references/regex.md.

mod backtrack;
mod case_fold;
mod case_folding_tables;
mod charset;
mod parser;
mod property_names;
mod references;
mod translate;
mod unicode_tables;

pub use case_folding_tables::CASE_FOLDING_UNICODE_VERSION;
pub use unicode_tables::UNICODE_VERSION;

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use regex_automata::{meta, nfa::thompson};
use thiserror::Error;

pub use backtrack::{STACK_BYTES_LIMIT, STEP_BUDGET};

/// The code point ranges of a Unicode property as the regex tables hold it
/// (`Default_Ignorable_Code_Point`, `gc=Format`, ...), from the same Unicode
/// version (`UNICODE_VERSION`); sorted, disjoint, inclusive.
pub fn unicode_property(key: &str) -> Option<&'static [(u32, u32)]> {
    let tables = unicode_tables::PROPERTY_RANGES;
    tables.binary_search_by(|(name, _)| name.cmp(&key)).ok().map(|index| tables[index].1)
}

/// `ranges` sorted, with overlapping and adjacent ranges merged.
pub fn merged_ranges(ranges: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    charset::CodeSet::from_ranges(ranges).ranges().to_vec()
}

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
    /// Only a failure to start the deep-pattern helper thread: a validated pattern compiles.
    #[error("EXPECT regex could not be compiled: {0}")]
    Unavailable(String),
    /// The caller's deadline (the check's timeout) passed while matching.
    #[error("EXPECT regex exceeded its matching budget (the check's timeout passed while matching)")]
    Deadline,
    /// The caller asked matching to stop (the run was interrupted).
    #[error("EXPECT matching was interrupted")]
    Interrupted,
}

/// Bounds a match from outside: a deadline, and a question, asked every
/// so often, whether to stop now. Every engine looks at them while it runs.
pub struct Limits<'a> {
    deadline: Option<Instant>,
    interrupted: &'a (dyn Fn() -> bool + Sync),
}

fn never() -> bool {
    false
}

impl<'a> Limits<'a> {
    /// No bound but the engines' own budgets.
    pub fn none() -> Limits<'static> {
        Limits { deadline: None, interrupted: &never }
    }

    pub fn new(deadline: Instant, interrupted: &'a (dyn Fn() -> bool + Sync)) -> Limits<'a> {
        Limits { deadline: Some(deadline), interrupted }
    }

    /// `MatchError::Interrupted` or `Deadline` when the match must stop now.
    fn check(&self) -> Result<(), MatchError> {
        if (self.interrupted)() {
            return Err(MatchError::Interrupted);
        }
        match self.deadline {
            Some(deadline) if Instant::now() >= deadline => Err(MatchError::Deadline),
            _ => Ok(()),
        }
    }
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
    /// The top-level alternatives the linear engine can answer are tried there first; only
    /// if none matches do the others run on the backtracker.
    LinearThenBacktracking,
    Backtracking,
}

/// A validated `/source/flags`. Validating only parses; the engines are built on the
/// first match and kept (a ledger is parsed far more often than its checks run).
#[derive(Debug, Clone)]
pub struct Pattern {
    source: Box<str>,
    flags: Box<str>,
    /// Text every match contains (empty if none is known); found at the
    /// first match, since validating a ledger's patterns must stay cheap.
    required: OnceLock<Box<str>>,
    compiled: OnceLock<Result<Arc<Compiled>, String>>,
}

#[derive(Debug)]
struct Compiled {
    full_unicode: bool,
    /// The whole pattern on the linear engine, when it can express it.
    linear: Option<LinearPattern>,
    /// Otherwise, the top-level alternatives it can express, and the rest.
    split: Option<SplitPattern>,
    backtracking: backtrack::Program,
}

#[derive(Debug)]
struct LinearPattern {
    regex: meta::Regex,
    /// At least the NFA states of `regex`: its heap holds one `State` per state.
    nfa_states_bound: usize,
    conditions: translate::InputConditions,
    /// The translated pattern, for the guard.
    translated: Box<str>,
    /// Built at the first output too long to leave to `regex`.
    guard: OnceLock<Option<Guard>>,
}

/// The regex crate cannot be stopped, and its slowest engine costs NFA states times
/// input bytes (nested counted repetition makes thousands of states, and a short output
/// is no exception). Where that product is large, the same pattern runs on a lazy DFA
/// stepped here: the limits are looked at as it goes, and its work is counted against
/// `DFA_WORK_BUDGET`, so a DFA whose cache keeps filling stops deterministically.
#[derive(Debug)]
struct Guard {
    dfa: regex_automata::hybrid::dfa::DFA,
    nfa_states: usize,
}

/// What the linear engine said.
enum Linear {
    Answer(bool),
    /// The lazy DFA spent its budget (or could not run): the backtracker, with its own,
    /// decides.
    GaveUp,
}

/// The regex crate's own size limit for compiled patterns, shared by the guard.
const LINEAR_SIZE_LIMIT: usize = 1 << 24;
/// NFA states times output bytes the regex crate is left to do alone, with no look at
/// the limits: well under a second on its slowest engine.
const UNGUARDED_WORK: u64 = 20_000_000;
/// The lazy DFA's cache: room for the states of a repetition it walks again and again
/// (`(?:a{14}b){1000}` on 60 KB needs 9 MiB), or the minimum a huge NFA needs.
const GUARD_CACHE_BYTES: usize = 32 << 20;
/// Bytes of DFA state the guard may compute for one output, counted as the cache grows
/// (a quarter of a second on current hardware): its work is proportional to them.
const DFA_WORK_BUDGET: u64 = 16 << 20;
/// Bytes stepped, plus bytes of DFA state computed, between two looks at the limits.
const GUARD_CHECK_WORK: u64 = 1 << 16;

impl LinearPattern {
    fn build(translation: translate::Translation) -> Option<LinearPattern> {
        // A pattern too large for the regex crate's limits stays on the backtracker.
        let regex = meta::Regex::builder()
            .configure(meta::Config::new().nfa_size_limit(Some(LINEAR_SIZE_LIMIT)))
            .build(&translation.pattern)
            .ok()?;
        let nfa_states_bound = regex.memory_usage() / std::mem::size_of::<thompson::State>();
        Some(LinearPattern {
            regex,
            nfa_states_bound,
            conditions: translation.conditions,
            translated: translation.pattern.into(),
            guard: OnceLock::new(),
        })
    }

    fn guard(&self) -> Option<&Guard> {
        self.guard
            .get_or_init(|| {
                use regex_automata::hybrid::dfa::DFA;
                let nfa = thompson::NFA::compiler()
                    .configure(thompson::Config::new().nfa_size_limit(Some(LINEAR_SIZE_LIMIT)))
                    .build(&self.translated)
                    .ok()?;
                // Never give up on a cache that keeps filling: the work budget decides.
                let config = DFA::config().minimum_cache_clear_count(None);
                let capacity = config.get_minimum_cache_capacity(&nfa).ok()?.max(GUARD_CACHE_BYTES);
                let nfa_states = nfa.states().len();
                let dfa = DFA::builder().configure(config.cache_capacity(capacity)).build_from_nfa(nfa).ok()?;
                Some(Guard { dfa, nfa_states })
            })
            .as_ref()
    }

    /// The answer for `output`, within `limits`.
    fn matches(&self, output: &str, limits: &Limits) -> Result<Linear, MatchError> {
        let work = |states: usize| (states as u64).saturating_mul(output.len().max(1) as u64);
        if work(self.nfa_states_bound) <= UNGUARDED_WORK {
            return Ok(Linear::Answer(self.regex.is_match(output)));
        }
        match self.guard() {
            Some(guard) if work(guard.nfa_states) > UNGUARDED_WORK => guard.matches(output, limits),
            Some(_) => Ok(Linear::Answer(self.regex.is_match(output))),
            // Not expected (the regex crate built the same pattern), but then the
            // backtracker, which looks at the limits, decides.
            None => Ok(Linear::GaveUp),
        }
    }
}

impl Guard {
    /// An unanchored search for any match, a byte at a time.
    fn matches(&self, output: &str, limits: &Limits) -> Result<Linear, MatchError> {
        let mut cache = self.dfa.create_cache();
        let input = regex_automata::Input::new(output);
        let Ok(mut state) = self.dfa.start_state_forward(&mut cache, &input) else {
            return Ok(Linear::GaveUp);
        };
        let mut work = cache.memory_usage() as u64;
        let mut unchecked = work;
        for &byte in output.as_bytes() {
            unchecked += 1;
            if unchecked >= GUARD_CHECK_WORK {
                limits.check()?;
                unchecked = 0;
            }
            let known = if state.is_tagged() { None } else { Some(self.dfa.next_state_untagged(&cache, state, byte)) };
            state = match known.filter(|next| !next.is_unknown()) {
                Some(next) => next,
                None => {
                    let (clears, before) = (cache.clear_count(), cache.memory_usage());
                    let Ok(next) = self.dfa.next_state(&mut cache, state, byte) else {
                        return Ok(Linear::GaveUp);
                    };
                    // After a clear, what the cache holds is what this step computed.
                    let computed = if cache.clear_count() == clears {
                        cache.memory_usage().saturating_sub(before)
                    } else {
                        cache.memory_usage()
                    } as u64;
                    work += computed;
                    unchecked += computed;
                    if work > DFA_WORK_BUDGET {
                        return Ok(Linear::GaveUp);
                    }
                    next
                }
            };
            if state.is_tagged() {
                if state.is_match() {
                    return Ok(Linear::Answer(true));
                }
                if state.is_dead() {
                    return Ok(Linear::Answer(false));
                }
                if state.is_quit() {
                    return Ok(Linear::GaveUp);
                }
            }
        }
        match self.dfa.next_eoi_state(&mut cache, state) {
            Ok(state) => Ok(Linear::Answer(state.is_match())),
            Err(_) => Ok(Linear::GaveUp),
        }
    }
}

impl LinearPattern {
    /// True if this output is one the translation answers exactly (see `InputConditions`).
    fn answers(&self, output: &str) -> bool {
        let c = self.conditions;
        !((c.astral && output.chars().any(|ch| ch as u32 > 0xFFFF))
            || (c.other_line_terminators && output.contains(['\r', '\u{2028}', '\u{2029}']))
            || (c.folded_word_characters && output.contains(['\u{017F}', '\u{212A}'])))
    }
}

/// `A|B|C` matches where any alternative does, so alternatives the linear engine answers
/// can be decided there, and a backtracker budget is spent only on the others.
#[derive(Debug)]
struct SplitPattern {
    linear: Vec<LinearPattern>,
    /// None when every alternative is linear (only their union was too large).
    rest: Option<backtrack::Program>,
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
        self.compiled().ok().and_then(|c| c.linear.as_ref()).is_some_and(|linear| {
            let c = linear.conditions;
            !c.astral && !c.other_line_terminators && !c.folded_word_characters
        })
    }

    /// The engine that `matches` uses for `output`.
    pub fn engine_for(&self, output: &str) -> Engine {
        let Ok(compiled) = self.compiled() else {
            return Engine::Backtracking;
        };
        compiled.engine_for(output)
    }

    /// The engines, built on first use by whichever thread needs them first.
    fn compiled(&self) -> Result<&Compiled, MatchError> {
        self.compiled
            .get_or_init(|| on_deep_stack(&self.source, || Compiled::build(&self.source, &self.flags)).map(Arc::new))
            .as_deref()
            .map_err(|message| MatchError::Unavailable(message.clone()))
    }

    /// The backtracker's answer under `step_budget`, even where the linear engine would
    /// answer: for cross-checking the engines and for the benchmark.
    #[doc(hidden)]
    pub fn matches_with_backtracker(&self, output: &str, step_budget: u64) -> Result<bool, MatchError> {
        let compiled = self.compiled()?;
        compiled.backtrack_match(&compiled.backtracking, output, step_budget, &Limits::none())
    }

    /// Text every match contains (empty if none is known).
    fn required(&self) -> &str {
        self.required.get_or_init(|| {
            let Ok(flags) = parser::Flags::parse(&self.flags) else { return Box::default() };
            on_deep_stack(&self.source, || parser::parse(&self.source, flags))
                .map(|parsed| required_text(&parsed.root, flags).into())
                .unwrap_or_default()
        })
    }

    fn is_match(&self, output: &str, limits: &Limits) -> Result<bool, MatchError> {
        // Output without the required text cannot match: no engine needs to be built.
        if !output.contains(self.required()) {
            return Ok(false);
        }
        // Compiling cannot be stopped (its work is bounded by the pattern's size): the
        // limits are looked at once it is done.
        let compiled = self.compiled()?;
        limits.check()?;
        let backtrack = |program| compiled.backtrack_match(program, output, STEP_BUDGET, limits);
        // What the linear engines read: without u/v, one character per UTF-16 code unit.
        let text = || {
            if compiled.full_unicode {
                std::borrow::Cow::Borrowed(output)
            } else {
                translate::code_units_as_characters(output)
            }
        };
        match compiled.engine_for(output) {
            Engine::Linear => match compiled.linear.as_ref().map(|linear| linear.matches(&text(), limits)) {
                Some(Ok(Linear::Answer(answer))) => Ok(answer),
                Some(Err(stopped)) => Err(stopped),
                Some(Ok(Linear::GaveUp)) | None => backtrack(&compiled.backtracking),
            },
            Engine::LinearThenBacktracking => {
                let Some(split) = &compiled.split else {
                    return backtrack(&compiled.backtracking);
                };
                let mut gave_up = false;
                let text = text();
                for linear in &split.linear {
                    match linear.matches(&text, limits)? {
                        Linear::Answer(true) => return Ok(true),
                        Linear::Answer(false) => {}
                        Linear::GaveUp => gave_up = true,
                    }
                }
                match (&split.rest, gave_up) {
                    // An alternative the DFA gave up on is decided with the rest.
                    (_, true) => backtrack(&compiled.backtracking),
                    (Some(rest), false) => backtrack(rest),
                    (None, false) => Ok(false),
                }
            }
            Engine::Backtracking => backtrack(&compiled.backtracking),
        }
    }

    /// Checks the pattern as the Node tool does (its length, then `new RegExp`), without
    /// building any engine.
    fn validate(source: &str, flags: &str) -> Result<(), PatternError> {
        if source.encode_utf16().count() > MAX_PATTERN_CHARS {
            return Err(PatternError::TooLong);
        }
        let parsed_flags = parser::Flags::parse(flags).map_err(PatternError::Invalid)?;
        if is_plainly_valid(source) {
            return Ok(());
        }
        on_deep_stack(source, || parser::parse(source, parsed_flags).map(drop))
            .map_err(|message| PatternError::Invalid(format!("/{source}/{flags}: {message}")))
    }
}

impl Compiled {
    fn build(source: &str, flags: &str) -> Result<Compiled, String> {
        let flags = parser::Flags::parse(flags)?;
        let mut parsed = parser::parse(source, flags)?;
        references::resolve(&mut parsed.root, parsed.capture_count, flags.full_unicode());
        let backtracking = backtrack::Program::compile(&parsed.root, parsed.capture_count, flags);
        let linear = translate::translate(&parsed.root, flags).and_then(LinearPattern::build);
        let split = match (&linear, &parsed.root) {
            (None, parser::Node::Alternation(alternatives)) => {
                let mut linear = Vec::new();
                let mut rest = Vec::new();
                for alternative in alternatives {
                    match translate::translate(alternative, flags).and_then(LinearPattern::build) {
                        Some(pattern) => linear.push(pattern),
                        None => rest.push(alternative.clone()),
                    }
                }
                let rest = (!rest.is_empty()).then(|| {
                    backtrack::Program::compile(&parser::Node::Alternation(rest), parsed.capture_count, flags)
                });
                (!linear.is_empty()).then_some(SplitPattern { linear, rest })
            }
            _ => None,
        };
        Ok(Compiled { full_unicode: flags.full_unicode(), linear, split, backtracking })
    }

    fn engine_for(&self, output: &str) -> Engine {
        if let Some(linear) = &self.linear {
            return if linear.answers(output) { Engine::Linear } else { Engine::Backtracking };
        }
        match &self.split {
            Some(split) if split.linear.iter().all(|linear| linear.answers(output)) => Engine::LinearThenBacktracking,
            _ => Engine::Backtracking,
        }
    }

    fn backtrack_match(
        &self,
        program: &backtrack::Program,
        output: &str,
        step_budget: u64,
        limits: &Limits,
    ) -> Result<bool, MatchError> {
        let units: Vec<u32> = if self.full_unicode {
            output.chars().map(|c| c as u32).collect()
        } else {
            output.encode_utf16().map(u32::from).collect()
        };
        program.is_match(&units, step_budget, limits).map_err(|exhausted| match exhausted {
            backtrack::Exhausted::Steps => MatchError::BudgetExceeded,
            backtrack::Exhausted::Memory => MatchError::MemoryExceeded,
            backtrack::Exhausted::Stopped(stopped) => stopped,
        })
    }
}

/// Parsing and compiling recurse once per nesting level. JavaScript allows ~500 levels in
/// 1000 characters, more than a small thread stack holds, so deep patterns are handled on a
/// helper thread with a generous stack.
fn on_deep_stack<T: Send>(source: &str, work: impl FnOnce() -> Result<T, String> + Send) -> Result<T, String> {
    if nesting_depth(source) <= SHALLOW_NESTING {
        return work();
    }
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("expect-regex-compile".into())
            .stack_size(DEEP_COMPILE_STACK)
            .spawn_scoped(scope, work)
            .map_err(|e| format!("cannot start the regex compiler: {e}"))?;
        worker.join().unwrap_or_else(|_| Err("regex compiler failed".into()))
    })
}

/// What an EXPECT value is, as `Expectation::parse` would read it, found without keeping
/// anything: a ledger validates every gate's EXPECT, but only checks that run need one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validated {
    Substring,
    /// A valid `/pattern/flags`; `path_like` as `Expectation::is_path_like`.
    Pattern {
        path_like: bool,
    },
}

/// Checks an EXPECT value exactly as `Expectation::parse` does, and allocates nothing
/// for the patterns most ledgers hold.
pub fn validate(expect: &str) -> Result<Validated, PatternError> {
    let Some((source, flags)) = split_regex_literal(expect) else {
        return Ok(Validated::Substring);
    };
    Pattern::validate(source, flags)?;
    Ok(Validated::Pattern { path_like: has_unescaped_slash(source) })
}

impl Expectation {
    /// Reads an EXPECT value. Wrapping slashes always mean a regex, which is validated
    /// here and compiled on its first match.
    pub fn parse(expect: &str) -> Result<Self, PatternError> {
        let Some((source, flags)) = split_regex_literal(expect) else {
            return Ok(Expectation::Substring(expect.to_string()));
        };
        Pattern::validate(source, flags)?;
        Ok(Expectation::Pattern(Pattern {
            source: source.into(),
            flags: flags.into(),
            required: OnceLock::new(),
            compiled: OnceLock::new(),
        }))
    }

    pub fn matches(&self, output: &str) -> Result<bool, MatchError> {
        self.matches_within(output, &Limits::none())
    }

    /// `matches`, stopped with `MatchError::Deadline` or `Interrupted` when
    /// `limits` say so, on whichever engine is running.
    pub fn matches_within(&self, output: &str, limits: &Limits) -> Result<bool, MatchError> {
        match self {
            Expectation::Substring(text) => Ok(output.contains(text.as_str())),
            Expectation::Pattern(pattern) => pattern.is_match(output, limits),
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

/// True for a source that is valid under every flag set by its shape alone,
/// the shape most EXPECT patterns have: literal characters, `.`, `^`, `$`,
/// `|`, the escapes `\d \D \w \W \s \S \b \B \f \n \r \t \v`, escaped
/// syntax characters and `/`, and `*`, `+` or `?` (each optionally lazy) right
/// after something repeatable. False means only "parse it to know": groups,
/// classes, braces and every other escape are left to the parser.
fn is_plainly_valid(source: &str) -> bool {
    let mut chars = source.chars().peekable();
    // Whether the previous item can take a quantifier (assertions cannot).
    let mut repeatable = false;
    while let Some(ch) = chars.next() {
        repeatable = match ch {
            '\\' => match chars.next() {
                Some('d' | 'D' | 'w' | 'W' | 's' | 'S' | 'f' | 'n' | 'r' | 't' | 'v') => true,
                Some('^' | '$' | '\\' | '.' | '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|' | '/') => true,
                Some('b' | 'B') => false,
                _ => return false,
            },
            '*' | '+' | '?' if repeatable => {
                chars.next_if_eq(&'?');
                false
            }
            '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' => return false,
            '^' | '$' | '|' => false,
            _ => true,
        };
    }
    true
}

/// The longest run of single characters at the top level of the pattern: every match
/// contains it (assertions between them are zero-width; anything else ends a run).
fn required_text(root: &parser::Node, flags: parser::Flags) -> String {
    let items = match root {
        parser::Node::Concat(items) => items.as_slice(),
        single => std::slice::from_ref(single),
    };
    let mut best: Vec<u32> = Vec::new();
    let mut run: Vec<u32> = Vec::new();
    for item in items.iter().chain([&parser::Node::Empty]) {
        match item {
            parser::Node::Set(set) if set.single_unit().is_some() => run.extend(set.single_unit()),
            parser::Node::Assert(_) => {}
            _ => {
                if run.len() > best.len() && as_text(&run, flags).is_some() {
                    best = std::mem::take(&mut run);
                }
                run.clear();
            }
        }
    }
    as_text(&best, flags).unwrap_or_default()
}

/// Units as text: UTF-16 code units without `u`/`v`, code points with them. None for a
/// lone surrogate, which no Rust string holds.
fn as_text(units: &[u32], flags: parser::Flags) -> Option<String> {
    if flags.full_unicode() {
        units.iter().map(|&u| char::from_u32(u)).collect()
    } else {
        let units: Vec<u16> = units.iter().map(|&u| u16::try_from(u).ok()).collect::<Option<_>>()?;
        String::from_utf16(&units).ok()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parsed_expectation_is_small_and_uncompiled() {
        // A run holds one per distinct EXPECT; the engines (kilobytes each) and the
        // required text wait for the first match.
        assert!(std::mem::size_of::<Expectation>() <= 96, "{}", std::mem::size_of::<Expectation>());
        let Ok(Expectation::Pattern(pattern)) = Expectation::parse(r"/^v1\b/") else {
            panic!("a valid pattern");
        };
        assert!(pattern.compiled.get().is_none());
        assert!(pattern.required.get().is_none());
        assert_eq!(Expectation::Pattern(pattern.clone()).matches("v1 ok"), Ok(true));
        assert_eq!(pattern.engine_for("v1"), Engine::Linear);
        assert!(pattern.compiled.get().is_some());
    }

    fn required(expect: &str) -> String {
        let Ok(Expectation::Pattern(pattern)) = Expectation::parse(expect) else {
            panic!("{expect} is a valid pattern");
        };
        pattern.required().into()
    }

    /// Every source over an alphabet of syntax characters, escapes and
    /// literals, up to `length` characters.
    fn sources(alphabet: &[&str], length: usize) -> Vec<String> {
        let mut all = vec![String::new()];
        let mut previous = vec![String::new()];
        for _ in 0..length {
            previous =
                previous.iter().flat_map(|start| alphabet.iter().map(move |piece| format!("{start}{piece}"))).collect();
            all.extend(previous.iter().cloned());
        }
        all
    }

    #[test]
    fn a_plainly_valid_source_is_one_the_parser_accepts_under_every_flag_set() {
        // The parser is JavaScript-exact (the conformance corpus); the shortcut may only
        // ever skip it for sources it would accept.
        let alphabet = [
            "a", ".", "^", "$", "|", "*", "+", "?", "(", ")", "[", "]", "{", "}", "\\", "\\d", "\\b", "\\/", "\\1",
            "\\c", "\\-", "\\k", "-", "\u{e9}",
        ];
        let mut plain = 0;
        for source in sources(&alphabet, 3) {
            if !is_plainly_valid(&source) {
                continue;
            }
            plain += 1;
            for flags in ["", "i", "m", "s", "u", "v", "imsy"] {
                let parsed = parser::parse(&source, parser::Flags::parse(flags).unwrap());
                assert!(
                    parsed.is_ok(),
                    "/{source}/{flags} was taken as plainly valid: {parsed:?}",
                    parsed = parsed.err()
                );
            }
        }
        assert!(plain > 1000, "{plain}");
        for source in [r"^ok \d+ passed$", r"v1\.2\.3", r"a+?b*c??", r"\/usr\/bin", r"x|y|", ""] {
            assert!(is_plainly_valid(source), "{source}");
        }
        for source in [r"a**", r"^*", r"\b+", r"(a)", r"[a]", r"a{2}", r"\1", r"\-", r"\c", "+a", "a|*"] {
            assert!(!is_plainly_valid(source), "{source}");
        }
    }

    #[test]
    fn the_required_text_is_one_every_match_contains() {
        assert_eq!(required(r"/^v12\b/"), "v12");
        assert_eq!(required(r"/ab+cde/"), "cde");
        assert_eq!(required(r"/ok/i"), "");
        assert_eq!(required(r"/v1/i"), "1");
        assert_eq!(required(r"/a|b/"), "");
        assert_eq!(required(r"/(?:x)y/"), "xy");
        assert_eq!(required(r"/(x)yz/"), "yz");
        assert_eq!(required("/\u{1F600}!/u"), "\u{1F600}!");
        assert_eq!(required(r"/\uD83D\uDE00/"), "\u{1F600}");
        // A lone surrogate matches half of an astral character: no text stands for it.
        assert_eq!(required(r"/a\uD83D/"), "");
    }

    #[test]
    fn validation_reads_every_expect_as_parsing_does() {
        for expect in ["ok", "/^ok$/", "/a/b/", "/(/", "/x/Q", "/x/gg", r"/\d+ passed/m", "/[/"] {
            let validated = validate(expect);
            let parsed = Expectation::parse(expect);
            match (&validated, &parsed) {
                (Ok(Validated::Substring), Ok(Expectation::Substring(_))) => {}
                (Ok(Validated::Pattern { path_like }), Ok(parsed @ Expectation::Pattern(_))) => {
                    assert_eq!(*path_like, parsed.is_path_like(), "{expect}");
                }
                (Err(a), Err(b)) => assert_eq!(a, b, "{expect}"),
                _ => panic!("{expect}: {validated:?} but {parsed:?}"),
            }
        }
    }

    #[test]
    fn output_without_the_required_text_is_answered_without_compiling() {
        let Ok(Expectation::Pattern(pattern)) = Expectation::parse(r"/^v1\b/") else {
            panic!("a valid pattern");
        };
        let expectation = Expectation::Pattern(pattern);
        assert_eq!(expectation.matches("error: 3 tests failed"), Ok(false));
        let Expectation::Pattern(pattern) = &expectation else {
            panic!("a pattern");
        };
        assert!(pattern.compiled.get().is_none());
        assert_eq!(expectation.matches("xv1 y"), Ok(false));
        assert_eq!(expectation.matches("v1 y"), Ok(true));
    }
}
