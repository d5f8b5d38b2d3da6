//! ECMAScript regular expression syntax (ES2025, with Annex B for non-unicode patterns)
//! parsed into a small tree. Every pattern `new RegExp(source, flags)` rejects is an error.
//! Literals and classes are resolved to unit sets here, case closure included, so both
//! engines only ever test set membership.

use super::case_fold;
use super::charset::{self, CodeSet, MAX_CODE_POINT, MAX_CODE_UNIT};

/// Largest quantifier count V8 keeps; larger written counts clamp to it.
const MAX_QUANTIFIER_COUNT: u64 = (1 << 31) - 1;

#[derive(Clone, Copy, Debug, Default)]
pub struct Flags {
    pub ignore_case: bool,
    pub multiline: bool,
    pub dot_all: bool,
    pub unicode: bool,
    pub unicode_sets: bool,
    pub sticky: bool,
}

impl Flags {
    pub fn parse(flags: &str) -> Result<Flags, String> {
        let invalid = || format!("Invalid flags supplied to RegExp constructor '{flags}'");
        let mut seen = String::new();
        let mut parsed = Flags::default();
        for flag in flags.chars() {
            if seen.contains(flag) {
                return Err(invalid());
            }
            seen.push(flag);
            match flag {
                'd' | 'g' => {}
                'i' => parsed.ignore_case = true,
                'm' => parsed.multiline = true,
                's' => parsed.dot_all = true,
                'u' => parsed.unicode = true,
                'v' => parsed.unicode_sets = true,
                'y' => parsed.sticky = true,
                _ => return Err(invalid()),
            }
        }
        if parsed.unicode && parsed.unicode_sets {
            return Err(invalid());
        }
        Ok(parsed)
    }

    /// `u` or `v`: the pattern and the input are read as code points.
    pub fn full_unicode(&self) -> bool {
        self.unicode || self.unicode_sets
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Assertion {
    InputStart,
    InputEnd,
    LineStart,
    LineEnd,
    /// `\b`; `folded` where U+017F and U+212A are word characters too (`i` with `u`/`v`,
    /// the `i` perhaps from a modifier group).
    WordBoundary {
        folded: bool,
    },
    /// `\B`, `folded` as for `WordBoundary`.
    NotWordBoundary {
        folded: bool,
    },
    /// Holds everywhere but between the halves of a surrogate pair, a position V8 tries
    /// with `u`/`v` (see `backtrack::Program::is_match`): what a backreference to a group
    /// that cannot be set where it stands does there (see `references`).
    NotMidPair,
}

#[derive(Clone, Debug)]
pub enum Node {
    Empty,
    /// One unit from the set (literal, class, `.`, escape).
    Set(CodeSet),
    Concat(Vec<Node>),
    Alternation(Vec<Node>),
    /// Capture group number (1-based).
    Capture(usize, Box<Node>),
    Repeat {
        body: Box<Node>,
        min: u32,
        max: Option<u32>,
        greedy: bool,
    },
    Assert(Assertion),
    /// `\N` or `\k<name>`: the groups it names (several for a name shared by groups in
    /// different alternatives, of which at most one is ever set), compared
    /// case-insensitively where `ignore_case` held.
    BackReference {
        groups: Vec<usize>,
        ignore_case: bool,
    },
    Look {
        behind: bool,
        negative: bool,
        body: Box<Node>,
    },
}

pub struct ParsedPattern {
    pub root: Node,
    pub capture_count: usize,
}

pub fn parse(source: &str, flags: Flags) -> Result<ParsedPattern, String> {
    let units: Vec<u32> = if flags.full_unicode() {
        source.chars().map(|c| c as u32).collect()
    } else {
        source.encode_utf16().map(u32::from).collect()
    };
    let (capture_count, group_names) = prescan_groups(&units, flags.unicode_sets);
    let mut parser = Parser { capture_count, group_names, ..Parser::new(units, flags) };
    let root = parser.disjunction()?;
    if parser.pos < parser.units.len() {
        // Only an unmatched ')' stops the top-level disjunction early.
        return Err("Unmatched ')'".into());
    }
    Ok(ParsedPattern { root, capture_count })
}

/// Counts capturing groups and collects group names ahead of the real parse, as the
/// grammar lets `\1` and `\k<x>` refer forward.
fn prescan_groups(units: &[u32], nested_classes: bool) -> (usize, Vec<String>) {
    let mut count = 0;
    let mut names = Vec::new();
    let mut class_depth = 0usize;
    let mut i = 0;
    while i < units.len() {
        let unit = units[i];
        if unit == u32::from(b'\\') {
            i += 2;
            continue;
        }
        if class_depth > 0 {
            if unit == u32::from(b']') {
                class_depth -= 1;
            } else if nested_classes && unit == u32::from(b'[') {
                class_depth += 1;
            }
        } else if unit == u32::from(b'[') {
            class_depth = 1;
        } else if unit == u32::from(b'(') {
            let next = units.get(i + 1).copied();
            if next != Some(u32::from(b'?')) {
                count += 1;
            } else if units.get(i + 2) == Some(&u32::from(b'<'))
                && !matches!(units.get(i + 3).copied(), Some(c) if c == u32::from(b'=') || c == u32::from(b'!'))
            {
                count += 1;
                let mut name = String::new();
                let mut j = i + 3;
                while j < units.len() && units[j] != u32::from(b'>') {
                    name.push(char::from_u32(units[j]).unwrap_or('\u{FFFD}'));
                    j += 1;
                }
                names.push(name);
            }
        }
        i += 1;
    }
    (count, names)
}

struct Parser {
    units: Vec<u32>,
    pos: usize,
    /// The flags in force here: the pattern's, as a modifier group changes them.
    flags: Flags,
    capture_count: usize,
    /// Raw names seen by the prescan: their presence switches `\k` to a group reference.
    group_names: Vec<String>,
    next_capture: usize,
    defined_names: Vec<DefinedName>,
    /// The alternatives the parser is inside, outermost first: (disjunction, alternative).
    alternatives: Vec<(usize, usize)>,
    disjunctions: usize,
}

/// A group name already defined, with the alternatives its group is inside.
struct DefinedName {
    name: String,
    alternatives: Vec<(usize, usize)>,
}

/// ES2025 MightBothParticipate: two groups can both take part in one match unless some
/// disjunction holds them in different alternatives (`(?<x>a)|(?<x>b)` is valid).
fn might_both_participate(a: &[(usize, usize)], b: &[(usize, usize)]) -> bool {
    // Both paths start at the root: the first place they part decides.
    match a.iter().zip(b).find(|(x, y)| x != y) {
        Some(((disjunction_a, _), (disjunction_b, _))) => disjunction_a != disjunction_b,
        None => true,
    }
}

/// What one class atom stood for: a single character (usable as a range end) or a set.
enum ClassAtom {
    Unit(u32),
    Set(CodeSet),
}

fn is_syntax_char(unit: u32) -> bool {
    matches!(
        char::from_u32(unit),
        Some('^' | '$' | '\\' | '.' | '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|')
    )
}

fn hex_value(unit: u32) -> Option<u32> {
    char::from_u32(unit).and_then(|c| c.to_digit(16))
}

impl Parser {
    fn new(units: Vec<u32>, flags: Flags) -> Parser {
        Parser {
            units,
            pos: 0,
            flags,
            capture_count: 0,
            group_names: Vec::new(),
            next_capture: 0,
            defined_names: Vec::new(),
            alternatives: Vec::new(),
            disjunctions: 0,
        }
    }

    fn peek(&self) -> Option<u32> {
        self.units.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<u32> {
        self.units.get(self.pos + offset).copied()
    }

    fn peek_is(&self, c: char) -> bool {
        self.peek() == Some(c as u32)
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek_is(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn unicode(&self) -> bool {
        self.flags.full_unicode()
    }

    fn universe_max(&self) -> u32 {
        if self.unicode() {
            MAX_CODE_POINT
        } else {
            MAX_CODE_UNIT
        }
    }

    fn fold(&self, set: CodeSet) -> CodeSet {
        if self.flags.ignore_case {
            case_fold::orbits(self.unicode()).closure(&set)
        } else {
            set
        }
    }

    fn literal(&self, unit: u32) -> Node {
        Node::Set(self.fold(CodeSet::single(unit)))
    }

    fn disjunction(&mut self) -> Result<Node, String> {
        let disjunction = self.disjunctions;
        self.disjunctions += 1;
        let mut alternatives = Vec::new();
        loop {
            self.alternatives.push((disjunction, alternatives.len()));
            let alternative = self.alternative();
            self.alternatives.pop();
            alternatives.push(alternative?);
            if !self.eat('|') {
                break;
            }
        }
        Ok(if alternatives.len() == 1 {
            alternatives.pop().unwrap_or(Node::Empty)
        } else {
            Node::Alternation(alternatives)
        })
    }

    fn alternative(&mut self) -> Result<Node, String> {
        let mut terms = Vec::new();
        while let Some(unit) = self.peek() {
            if unit == '|' as u32 || unit == ')' as u32 {
                break;
            }
            terms.push(self.term()?);
        }
        Ok(match terms.len() {
            0 => Node::Empty,
            1 => terms.pop().unwrap_or(Node::Empty),
            _ => Node::Concat(terms),
        })
    }

    fn term(&mut self) -> Result<Node, String> {
        let assertion = match self.peek().and_then(char::from_u32) {
            Some('^') => Some(if self.flags.multiline { Assertion::LineStart } else { Assertion::InputStart }),
            Some('$') => Some(if self.flags.multiline { Assertion::LineEnd } else { Assertion::InputEnd }),
            Some('\\') if self.peek_at(1) == Some('b' as u32) => {
                Some(Assertion::WordBoundary { folded: self.unicode() && self.flags.ignore_case })
            }
            Some('\\') if self.peek_at(1) == Some('B' as u32) => {
                Some(Assertion::NotWordBoundary { folded: self.unicode() && self.flags.ignore_case })
            }
            _ => None,
        };
        if let Some(assertion) = assertion {
            self.pos += if self.peek_is('\\') { 2 } else { 1 };
            if self.quantifier_ahead() {
                return Err("Nothing to repeat".into());
            }
            return Ok(Node::Assert(assertion));
        }
        if self.peek_is('(') && self.peek_at(1) == Some('?' as u32) {
            let after = (self.peek_at(2).and_then(char::from_u32), self.peek_at(3).and_then(char::from_u32));
            let look = match after {
                (Some('='), _) => Some((false, false, 3)),
                (Some('!'), _) => Some((false, true, 3)),
                (Some('<'), Some('=')) => Some((true, false, 4)),
                (Some('<'), Some('!')) => Some((true, true, 4)),
                _ => None,
            };
            if let Some((behind, negative, skip)) = look {
                self.pos += skip;
                let body = self.disjunction()?;
                if !self.eat(')') {
                    return Err("Unterminated group".into());
                }
                let node = Node::Look { behind, negative, body: Box::new(body) };
                // Annex B lets a lookahead (never a lookbehind) be quantified without u/v.
                if self.quantifier_ahead() && (behind || self.unicode()) {
                    return Err("Invalid quantifier".into());
                }
                return self.quantified(node);
            }
        }
        let atom = self.atom()?;
        self.quantified(atom)
    }

    /// True if a quantifier starts here (`{` only when it is a well-formed braced one).
    fn quantifier_ahead(&self) -> bool {
        match self.peek().and_then(char::from_u32) {
            Some('*' | '+' | '?') => true,
            Some('{') => self.braced_quantifier_at(self.pos).is_some(),
            _ => false,
        }
    }

    /// Parses `{n}`, `{n,}` or `{n,m}` at `at`: (min, max, position after `}`).
    fn braced_quantifier_at(&self, at: usize) -> Option<(u32, Option<u32>, usize)> {
        let mut i = at + 1;
        let read_number = |i: &mut usize| -> Option<u32> {
            let begin = *i;
            let mut value: u64 = 0;
            while let Some(d) = self.units.get(*i).and_then(|&u| char::from_u32(u)).and_then(|c| c.to_digit(10)) {
                // V8 clamps counts to 2^31-1, so `{2147483648,2147483647}` is in order.
                value = (value * 10 + u64::from(d)).min(MAX_QUANTIFIER_COUNT);
                *i += 1;
            }
            (*i > begin).then_some(value as u32)
        };
        let min = read_number(&mut i)?;
        let max = if self.units.get(i) == Some(&(',' as u32)) {
            i += 1;
            if self.units.get(i) == Some(&('}' as u32)) {
                None
            } else {
                Some(read_number(&mut i)?)
            }
        } else {
            Some(min)
        };
        (self.units.get(i) == Some(&('}' as u32))).then_some((min, max, i + 1))
    }

    fn quantified(&mut self, atom: Node) -> Result<Node, String> {
        let (min, max) = match self.peek().and_then(char::from_u32) {
            Some('*') => {
                self.pos += 1;
                (0, None)
            }
            Some('+') => {
                self.pos += 1;
                (1, None)
            }
            Some('?') => {
                self.pos += 1;
                (0, Some(1))
            }
            Some('{') => match self.braced_quantifier_at(self.pos) {
                Some((min, max, end)) => {
                    self.pos = end;
                    if max.is_some_and(|max| max < min) {
                        return Err("numbers out of order in {} quantifier".into());
                    }
                    (min, max)
                }
                None if self.unicode() => return Err("Incomplete quantifier".into()),
                None => return Ok(atom),
            },
            _ => return Ok(atom),
        };
        let greedy = !self.eat('?');
        Ok(Node::Repeat { body: Box::new(atom), min, max, greedy })
    }

    fn atom(&mut self) -> Result<Node, String> {
        let Some(unit) = self.peek() else {
            return Ok(Node::Empty);
        };
        self.pos += 1;
        match char::from_u32(unit) {
            Some('.') => {
                let all = CodeSet::from_ranges(vec![(0, self.universe_max())]);
                Ok(Node::Set(if self.flags.dot_all {
                    all
                } else {
                    charset::line_terminator_set().complement(self.universe_max())
                }))
            }
            Some('(') => self.group(),
            Some('[') => {
                let set_node = if self.flags.unicode_sets { self.class_v()? } else { self.class_legacy()? };
                Ok(set_node)
            }
            Some('*' | '+' | '?') => Err("Nothing to repeat".into()),
            Some('{') => {
                if self.unicode() {
                    Err("Lone quantifier brackets".into())
                } else if self.braced_quantifier_at(self.pos - 1).is_some() {
                    Err("Nothing to repeat".into())
                } else {
                    Ok(self.literal(unit))
                }
            }
            Some('}' | ']') if self.unicode() => Err("Lone quantifier brackets".into()),
            Some(')') => Err("Unmatched ')'".into()),
            Some('\\') => self.atom_escape(),
            _ => Ok(self.literal(unit)),
        }
    }

    fn group(&mut self) -> Result<Node, String> {
        if self.eat('?') {
            if self.eat(':') {
                let body = self.disjunction()?;
                return self.close_group(body);
            }
            if self.eat('<') {
                let name = self.group_name()?;
                let duplicate = self
                    .defined_names
                    .iter()
                    .any(|d| d.name == name && might_both_participate(&d.alternatives, &self.alternatives));
                if duplicate {
                    return Err("Duplicate capture group name".into());
                }
                self.next_capture += 1;
                let index = self.next_capture;
                self.defined_names.push(DefinedName { name, alternatives: self.alternatives.clone() });
                let body = self.disjunction()?;
                let body = self.close_group(body)?;
                return Ok(Node::Capture(index, Box::new(body)));
            }
            if self.peek().and_then(char::from_u32).is_some_and(|c| "ims-".contains(c)) {
                return self.modified_group();
            }
            return Err("Invalid group".into());
        }
        self.next_capture += 1;
        let index = self.next_capture;
        let body = self.disjunction()?;
        let body = self.close_group(body)?;
        Ok(Node::Capture(index, Box::new(body)))
    }

    /// `(?ims-ims:...)` after `(?` (ES2025 modifiers): the body is read, and so matched,
    /// with those flags added and removed.
    fn modified_group(&mut self) -> Result<Node, String> {
        let mut flags = self.flags;
        let mut seen = String::new();
        let mut removing = false;
        loop {
            let Some(ch) = self.peek().and_then(char::from_u32) else {
                return Err("Invalid group".into());
            };
            self.pos += 1;
            match ch {
                ':' => break,
                '-' if removing => return Err("Multiple dashes in flag group".into()),
                '-' => removing = true,
                'i' | 'm' | 's' if seen.contains(ch) => return Err("Repeated flag in flag group".into()),
                'i' | 'm' | 's' => {
                    seen.push(ch);
                    let flag = match ch {
                        'i' => &mut flags.ignore_case,
                        'm' => &mut flags.multiline,
                        _ => &mut flags.dot_all,
                    };
                    *flag = !removing;
                }
                _ => return Err("Invalid group".into()),
            }
        }
        if seen.is_empty() {
            return Err("Invalid flag group".into());
        }
        let outer = std::mem::replace(&mut self.flags, flags);
        let body = self.disjunction();
        self.flags = outer;
        self.close_group(body?)
    }

    fn close_group(&mut self, body: Node) -> Result<Node, String> {
        if self.eat(')') {
            Ok(body)
        } else {
            Err("Unterminated group".into())
        }
    }

    /// RegExpIdentifierName followed by `>`; `\u` escapes allowed in names.
    fn group_name(&mut self) -> Result<String, String> {
        let invalid = || "Invalid capture group name".to_string();
        let mut name = String::new();
        loop {
            let Some(mut unit) = self.peek() else {
                return Err(invalid());
            };
            self.pos += 1;
            if unit == '>' as u32 {
                break;
            }
            if unit == '\\' as u32 {
                if !self.eat('u') {
                    return Err(invalid());
                }
                unit = self.unicode_escape_in_name().ok_or_else(invalid)?;
            } else if (0xD800..=0xDBFF).contains(&unit) {
                // Names read code points even without u: join a literal surrogate pair.
                if let Some(low) = self.peek().filter(|u| (0xDC00..=0xDFFF).contains(u)) {
                    self.pos += 1;
                    unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                }
            }
            let ch = char::from_u32(unit).ok_or_else(invalid)?;
            let valid = if name.is_empty() {
                ch == '$' || ch == '_' || is_id_start(ch)
            } else {
                ch == '$' || ch == '\u{200C}' || ch == '\u{200D}' || is_id_continue(ch)
            };
            if !valid {
                return Err(invalid());
            }
            name.push(ch);
        }
        if name.is_empty() {
            return Err(invalid());
        }
        Ok(name)
    }

    /// After `\u` inside a group name: `{...}` or four hex digits (a surrogate pair of
    /// `\uXXXX\uXXXX` joins), in any mode.
    fn unicode_escape_in_name(&mut self) -> Option<u32> {
        if self.eat('{') {
            let mut value: u32 = 0;
            let mut digits = 0;
            while let Some(d) = self.peek().and_then(hex_value) {
                value = value.checked_mul(16)?.checked_add(d)?;
                if value > MAX_CODE_POINT {
                    return None;
                }
                digits += 1;
                self.pos += 1;
            }
            return (digits > 0 && self.eat('}')).then_some(value);
        }
        let high = self.four_hex()?;
        Some(self.low_surrogate_after(high).unwrap_or(high))
    }

    /// After a `\uXXXX` lead surrogate, consumes a following `\uXXXX`
    /// trail surrogate and returns the code point the pair spells; leaves
    /// the position untouched when no trail follows.
    fn low_surrogate_after(&mut self, high: u32) -> Option<u32> {
        if !(0xD800..=0xDBFF).contains(&high) || !self.peek_is('\\') || self.peek_at(1) != Some('u' as u32) {
            return None;
        }
        let save = self.pos;
        self.pos += 2;
        match self.four_hex() {
            Some(low) if (0xDC00..=0xDFFF).contains(&low) => Some(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)),
            _ => {
                self.pos = save;
                None
            }
        }
    }

    fn four_hex(&mut self) -> Option<u32> {
        let mut value = 0;
        for offset in 0..4 {
            value = value * 16 + self.peek_at(offset).and_then(hex_value)?;
        }
        self.pos += 4;
        Some(value)
    }

    fn atom_escape(&mut self) -> Result<Node, String> {
        let Some(unit) = self.peek() else {
            return Err("\\ at end of pattern".into());
        };
        let ch = char::from_u32(unit).unwrap_or('\u{FFFD}');
        if ch.is_ascii_digit() && ch != '0' {
            let start = self.pos;
            let mut number: usize = 0;
            while let Some(d) = self.peek().and_then(char::from_u32).and_then(|c| c.to_digit(10)) {
                number = number.saturating_mul(10).saturating_add(d as usize);
                self.pos += 1;
            }
            if number <= self.capture_count {
                return Ok(Node::BackReference { groups: vec![number], ignore_case: self.flags.ignore_case });
            }
            if self.unicode() {
                return Err("Invalid escape".into());
            }
            self.pos = start;
        }
        if ch == 'k' && (self.unicode() || !self.group_names.is_empty()) {
            self.pos += 1;
            if !self.eat('<') {
                return Err("Invalid named reference".into());
            }
            let name = self.group_name().map_err(|_| "Invalid named reference".to_string())?;
            let groups = self.capture_indexes_of(&name);
            if groups.is_empty() {
                return Err("Invalid named capture referenced".into());
            }
            return Ok(Node::BackReference { groups, ignore_case: self.flags.ignore_case });
        }
        match self.class_escape()? {
            ClassAtom::Set(set) => Ok(Node::Set(set)),
            ClassAtom::Unit(unit) => Ok(self.literal(unit)),
        }
    }

    /// The numbers of the groups named `name`, in source order (a name may be shared by
    /// groups in different alternatives; forward references are allowed).
    fn capture_indexes_of(&mut self, name: &str) -> Vec<usize> {
        // The prescan names are raw text; resolve through a fresh scan of group order.
        let resume = self.pos;
        let mut indexes = Vec::new();
        let mut index = 0;
        let mut class_depth = 0usize;
        let mut i = 0;
        while i < self.units.len() {
            let unit = self.units[i];
            if unit == '\\' as u32 {
                i += 2;
                continue;
            }
            if class_depth > 0 {
                if unit == ']' as u32 {
                    class_depth -= 1;
                } else if self.flags.unicode_sets && unit == '[' as u32 {
                    class_depth += 1;
                }
            } else if unit == '[' as u32 {
                class_depth = 1;
            } else if unit == '(' as u32 {
                if self.units.get(i + 1) != Some(&('?' as u32)) {
                    index += 1;
                } else if self.units.get(i + 2) == Some(&('<' as u32))
                    && !matches!(self.units.get(i + 3).copied(), Some(c) if c == '=' as u32 || c == '!' as u32)
                {
                    index += 1;
                    self.pos = i + 3;
                    if self.group_name().ok().as_deref() == Some(name) {
                        indexes.push(index);
                    }
                }
            }
            i += 1;
        }
        self.pos = resume;
        indexes
    }

    /// An escape after `\` (the `\` already consumed): a class escape or a character.
    /// Shared by atoms and classes; `\b` and `\-` are handled by the class parsers.
    fn class_escape(&mut self) -> Result<ClassAtom, String> {
        let Some(unit) = self.peek() else {
            return Err("\\ at end of pattern".into());
        };
        self.pos += 1;
        let ch = char::from_u32(unit).unwrap_or('\u{FFFD}');
        let unicode = self.unicode();
        let set = match ch {
            'd' => Some(charset::digit_set()),
            'D' => Some(charset::digit_set().complement(self.universe_max())),
            's' => Some(charset::space_set()),
            'S' => Some(charset::space_set().complement(self.universe_max())),
            'w' => Some(self.word_chars()),
            'W' => Some(self.word_chars().complement(self.universe_max())),
            'p' | 'P' if unicode => {
                let property = self.property_body()?;
                Some(if ch == 'P' { property.complement(MAX_CODE_POINT) } else { property })
            }
            _ => None,
        };
        if let Some(set) = set {
            let negated_escape = matches!(ch, 'D' | 'S' | 'W' | 'P');
            if negated_escape && self.flags.unicode_sets && self.flags.ignore_case {
                // v+i complements the case-closed set (ES2024 CharacterComplement).
                return Ok(ClassAtom::Set(self.fold(set.complement(MAX_CODE_POINT)).complement(MAX_CODE_POINT)));
            }
            return Ok(ClassAtom::Set(self.fold(set)));
        }
        let value = match ch {
            'f' => 0x0C,
            'n' => 0x0A,
            'r' => 0x0D,
            't' => 0x09,
            'v' => 0x0B,
            'c' => match self.peek().and_then(char::from_u32) {
                Some(letter) if letter.is_ascii_alphabetic() => {
                    self.pos += 1;
                    letter as u32 % 32
                }
                _ if unicode => return Err("Invalid unicode escape".into()),
                _ => {
                    // Annex B: `\c` not before a letter is a literal backslash; `c` follows.
                    self.pos -= 1;
                    '\\' as u32
                }
            },
            '0' if !self.peek().and_then(char::from_u32).is_some_and(|c| c.is_ascii_digit()) => 0,
            '0'..='7' if !unicode => self.legacy_octal(unit),
            'x' => match (self.peek().and_then(hex_value), self.peek_at(1).and_then(hex_value)) {
                (Some(a), Some(b)) => {
                    self.pos += 2;
                    a * 16 + b
                }
                _ if unicode => return Err("Invalid escape".into()),
                _ => 'x' as u32,
            },
            'u' => match self.unicode_escape()? {
                Some(value) => value,
                None => 'u' as u32,
            },
            _ if unicode => {
                if is_syntax_char(unit) || ch == '/' {
                    unit
                } else {
                    return Err("Invalid escape".into());
                }
            }
            'k' if !self.group_names.is_empty() => return Err("Invalid named reference".into()),
            _ => unit,
        };
        Ok(ClassAtom::Unit(value))
    }

    fn word_chars(&self) -> CodeSet {
        charset::word_set(self.unicode() && self.flags.ignore_case)
    }

    /// Annex B LegacyOctalEscapeSequence; `first` already consumed. Value stays <= 0o377.
    fn legacy_octal(&mut self, first: u32) -> u32 {
        let octal = |u: Option<u32>| u.and_then(char::from_u32).and_then(|c| c.to_digit(8));
        let mut value = first - '0' as u32;
        if let Some(d) = octal(self.peek()) {
            value = value * 8 + d;
            self.pos += 1;
            if first <= '3' as u32 {
                if let Some(d) = octal(self.peek()) {
                    value = value * 8 + d;
                    self.pos += 1;
                }
            }
        }
        value
    }

    /// After `\u`: Some(value), or None for a non-unicode identity escape of `u`.
    fn unicode_escape(&mut self) -> Result<Option<u32>, String> {
        let unicode = self.unicode();
        if unicode && self.peek_is('{') {
            let save = self.pos;
            self.pos += 1;
            let mut value: u32 = 0;
            let mut digits = 0;
            while let Some(d) = self.peek().and_then(hex_value) {
                value = value.saturating_mul(16).saturating_add(d);
                digits += 1;
                self.pos += 1;
            }
            if digits == 0 || value > MAX_CODE_POINT || !self.eat('}') {
                self.pos = save;
                return Err("Invalid Unicode escape".into());
            }
            return Ok(Some(value));
        }
        match self.four_hex() {
            Some(high) => {
                if unicode {
                    if let Some(pair) = self.low_surrogate_after(high) {
                        return Ok(Some(pair));
                    }
                }
                Ok(Some(high))
            }
            None if unicode => Err("Invalid Unicode escape".into()),
            None => Ok(None),
        }
    }

    /// `{Name}` or `{Name=Value}` after `\p`/`\P`.
    fn property_body(&mut self) -> Result<CodeSet, String> {
        let invalid = || "Invalid property name".to_string();
        if !self.eat('{') {
            return Err(invalid());
        }
        let mut body = String::new();
        loop {
            let unit = self.peek().ok_or_else(invalid)?;
            self.pos += 1;
            if unit == '}' as u32 {
                break;
            }
            let ch = char::from_u32(unit)
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '=')
                .ok_or_else(invalid)?;
            body.push(ch);
        }
        if charset::UNSUPPORTED_PROPERTIES.contains(&body.as_str()) {
            return Err(format!("\\p{{{body}}} is valid JavaScript but not supported by gate-check"));
        }
        charset::property_set(&body).ok_or_else(invalid)
    }

    /// Consumes the `]` that ends a class; an input that ends first is the
    /// error JavaScript reports.
    fn class_closes(&mut self) -> Result<bool, String> {
        match self.peek() {
            None => Err("Unterminated character class".into()),
            Some(unit) if unit == ']' as u32 => {
                self.pos += 1;
                Ok(true)
            }
            Some(_) => Ok(false),
        }
    }

    /// `[...]` without `v`; the `[` already consumed.
    fn class_legacy(&mut self) -> Result<Node, String> {
        let negated = self.eat('^');
        let mut set = CodeSet::empty();
        loop {
            if self.class_closes()? {
                break;
            }
            let first = self.class_atom_legacy()?;
            if self.peek_is('-') && self.peek_at(1).is_some_and(|u| u != ']' as u32) {
                self.pos += 1;
                let second = self.class_atom_legacy()?;
                match (first, second) {
                    (ClassAtom::Unit(low), ClassAtom::Unit(high)) => {
                        if low > high {
                            return Err("Range out of order in character class".into());
                        }
                        set = set.union(&CodeSet::from_ranges(vec![(low, high)]));
                    }
                    (first, second) => {
                        if self.unicode() {
                            return Err("Invalid character class".into());
                        }
                        for atom in [first, second] {
                            set = set.union(&atom_set(atom));
                        }
                        set = set.union(&CodeSet::single('-' as u32));
                    }
                }
            } else {
                set = set.union(&atom_set(first));
            }
        }
        let folded = self.fold(set);
        Ok(Node::Set(if negated { folded.complement(self.universe_max()) } else { folded }))
    }

    fn class_atom_legacy(&mut self) -> Result<ClassAtom, String> {
        let unit = self.peek().ok_or("Unterminated character class")?;
        self.pos += 1;
        if unit != '\\' as u32 {
            return Ok(ClassAtom::Unit(unit));
        }
        let next = self.peek().ok_or("\\ at end of pattern")?;
        let next_char = char::from_u32(next).unwrap_or('\u{FFFD}');
        match next_char {
            'b' => {
                self.pos += 1;
                Ok(ClassAtom::Unit(0x08))
            }
            '-' if self.unicode() => {
                self.pos += 1;
                Ok(ClassAtom::Unit('-' as u32))
            }
            'c' if !self.unicode()
                && self.peek_at(1).and_then(char::from_u32).is_some_and(|c| c.is_ascii_digit() || c == '_') =>
            {
                // Annex B ClassControlLetter.
                let control = self.peek_at(1).unwrap_or(0) % 32;
                self.pos += 2;
                Ok(ClassAtom::Unit(control))
            }
            '1'..='9' if self.unicode() => Err("Invalid class escape".into()),
            '8' | '9' => {
                self.pos += 1;
                Ok(ClassAtom::Unit(next))
            }
            '1'..='7' => {
                self.pos += 1;
                Ok(ClassAtom::Unit(self.legacy_octal(next)))
            }
            '0' if self.unicode() && self.peek_at(1).and_then(char::from_u32).is_some_and(|c| c.is_ascii_digit()) => {
                Err("Invalid class escape".into())
            }
            // With named groups, `\k` is a reference everywhere, and none is allowed in a class.
            'k' if !self.unicode() && !self.group_names.is_empty() => Err("Invalid escape".into()),
            'k' if !self.unicode() => {
                self.pos += 1;
                Ok(ClassAtom::Unit('k' as u32))
            }
            'B' if self.unicode() => Err("Invalid escape".into()),
            _ => self.class_escape(),
        }
    }

    /// `[...]` with `v` (set notation); the `[` already consumed.
    fn class_v(&mut self) -> Result<Node, String> {
        let (set, strings, _) = self.class_v_contents()?;
        // Matching is case-insensitive throughout: close the final set under folding.
        let set = Node::Set(self.fold(set));
        if strings.is_empty() {
            return Ok(set);
        }
        let mut strings = strings;
        // Longest strings first, as JavaScript tries them.
        strings.sort_by_key(|s| std::cmp::Reverse(s.len()));
        let mut alternatives: Vec<Node> =
            strings.into_iter().map(|s| Node::Concat(s.into_iter().map(|u| self.literal(u)).collect())).collect();
        alternatives.push(set);
        Ok(Node::Alternation(alternatives))
    }

    /// Strings compare case-insensitively under `i`.
    fn string_key(&self, string: &[u32]) -> Vec<u32> {
        if self.flags.ignore_case {
            string.iter().map(|&u| case_fold::UNICODE.canonical(u)).collect()
        } else {
            string.to_vec()
        }
    }

    /// Contents up to and including the closing `]`: (single code points, multi-unit strings,
    /// whether the class may contain strings by the grammar's static MayContainStrings rule).
    /// Under `i` every operand is case-closed before the set operations, as the
    /// specification's MaybeSimpleCaseFolding does (node 20's V8 took a lone character or
    /// `\q{...}` beside `&&` or `--` as written).
    fn class_v_contents(&mut self) -> Result<(CodeSet, Vec<Vec<u32>>, bool), String> {
        #[derive(PartialEq, Clone, Copy)]
        enum Mode {
            Union,
            Intersection,
            Subtraction,
        }
        let negated = self.eat('^');
        let mut operands: Vec<VOperand> = Vec::new();
        let mut mode = Mode::Union;
        loop {
            if self.class_closes()? {
                break;
            }
            let operator = if self.peek_is('&') && self.peek_at(1) == Some('&' as u32) {
                Some(Mode::Intersection)
            } else if self.peek_is('-') && self.peek_at(1) == Some('-' as u32) {
                Some(Mode::Subtraction)
            } else {
                None
            };
            if let Some(op) = operator {
                let first_is_range = operands.first().is_some_and(|o| o.range);
                if operands.is_empty() || first_is_range || (operands.len() > 1 && mode != op) {
                    return Err("Invalid set operation in character class".into());
                }
                mode = op;
                self.pos += 2;
                if op == Mode::Intersection && self.peek_is('&') {
                    return Err("Invalid character in character class".into());
                }
                if self.peek_is(']') {
                    return Err("Invalid set operation in character class".into());
                }
                let operand = self.class_v_operand(false)?;
                operands.push(operand);
                continue;
            }
            if mode != Mode::Union {
                return Err("Invalid set operation in character class".into());
            }
            let operand = self.class_v_operand(true)?;
            operands.push(operand);
        }
        // Static, not the computed strings: `[^\q{ab}--\q{ab}]` is an error though empty.
        let may_contain_strings = match mode {
            Mode::Union => operands.iter().any(|o| o.may_contain_strings),
            Mode::Intersection => operands.iter().all(|o| o.may_contain_strings),
            Mode::Subtraction => operands.first().is_some_and(|o| o.may_contain_strings),
        };
        if negated && may_contain_strings {
            return Err("Negated character class may contain strings".into());
        }
        let mut folded = operands.into_iter().map(|o| (self.fold(o.set), o.strings));
        let (mut set, mut strings) = folded.next().unwrap_or_default();
        for (other_set, other_strings) in folded {
            let other_keys: Vec<Vec<u32>> = other_strings.iter().map(|s| self.string_key(s)).collect();
            match mode {
                Mode::Union => {
                    set = set.union(&other_set);
                    strings.extend(other_strings);
                }
                Mode::Intersection => {
                    set = set.intersect(&other_set);
                    strings.retain(|s| other_keys.contains(&self.string_key(s)));
                }
                Mode::Subtraction => {
                    set = set.subtract(&other_set);
                    strings.retain(|s| !other_keys.contains(&self.string_key(s)));
                }
            }
        }
        strings.sort();
        strings.dedup();
        if negated {
            set = self.fold(set).complement(MAX_CODE_POINT);
        }
        Ok((set, strings, may_contain_strings && !negated))
    }

    /// One operand of a `v` class; `allow_range` for union members (`a-z`).
    fn class_v_operand(&mut self, allow_range: bool) -> Result<VOperand, String> {
        let unit = self.peek().ok_or("Unterminated character class")?;
        if unit == '[' as u32 {
            self.pos += 1;
            let (set, strings, may_contain_strings) = self.class_v_contents()?;
            return Ok(VOperand { set: self.fold(set), strings, range: false, may_contain_strings });
        }
        if unit == '\\' as u32 && self.peek_at(1) == Some('q' as u32) {
            self.pos += 2;
            let (set, strings) = self.class_string_disjunction()?;
            // An empty or multi-character alternative is a string.
            let may_contain_strings = !strings.is_empty();
            return Ok(VOperand { set, strings, range: false, may_contain_strings });
        }
        let first = self.class_v_character()?;
        let low = match first {
            ClassAtom::Set(set) => {
                return Ok(VOperand { set, strings: Vec::new(), range: false, may_contain_strings: false })
            }
            ClassAtom::Unit(low) => low,
        };
        if allow_range && self.peek_is('-') && self.peek_at(1) != Some('-' as u32) {
            self.pos += 1;
            let ClassAtom::Unit(high) = self.class_v_character()? else {
                return Err("Invalid character class".into());
            };
            if low > high {
                return Err("Range out of order in character class".into());
            }
            let set = CodeSet::from_ranges(vec![(low, high)]);
            return Ok(VOperand { set, strings: Vec::new(), range: true, may_contain_strings: false });
        }
        Ok(VOperand { set: CodeSet::single(low), strings: Vec::new(), range: false, may_contain_strings: false })
    }

    fn class_v_character(&mut self) -> Result<ClassAtom, String> {
        let unit = self.peek().ok_or("Unterminated character class")?;
        let ch = char::from_u32(unit).unwrap_or('\u{FFFD}');
        self.pos += 1;
        if ch == '\\' {
            let next = self.peek().and_then(char::from_u32).ok_or("\\ at end of pattern")?;
            if next == 'b' {
                self.pos += 1;
                return Ok(ClassAtom::Unit(0x08));
            }
            if "&-!#%,:;<=>@`~".contains(next) {
                self.pos += 1;
                return Ok(ClassAtom::Unit(next as u32));
            }
            return self.class_escape();
        }
        if "()[]{}/-|".contains(ch) {
            return Err("Invalid character in character class".into());
        }
        if "&!#$%*+,.:;<=>?@^`~".contains(ch) && self.peek() == Some(unit) {
            return Err("Invalid set operation in character class".into());
        }
        Ok(ClassAtom::Unit(unit))
    }

    /// `\q{abc|d}` body after `\q`.
    fn class_string_disjunction(&mut self) -> Result<(CodeSet, Vec<Vec<u32>>), String> {
        if !self.eat('{') {
            return Err("Invalid escape".into());
        }
        let mut set = CodeSet::empty();
        let mut strings = Vec::new();
        let mut current: Vec<u32> = Vec::new();
        loop {
            let unit = self.peek().ok_or("Unterminated character class")?;
            if unit == '}' as u32 || unit == '|' as u32 {
                self.pos += 1;
                if current.len() == 1 {
                    set = set.union(&CodeSet::single(current[0]));
                } else {
                    strings.push(std::mem::take(&mut current));
                }
                current.clear();
                if unit == '}' as u32 {
                    break;
                }
                continue;
            }
            match self.class_v_character()? {
                ClassAtom::Unit(u) => current.push(u),
                ClassAtom::Set(_) => return Err("Invalid escape".into()),
            }
        }
        Ok((set, strings))
    }
}

/// One operand of a `v`-mode class, before case folding.
struct VOperand {
    set: CodeSet,
    strings: Vec<Vec<u32>>,
    range: bool,
    may_contain_strings: bool,
}

fn atom_set(atom: ClassAtom) -> CodeSet {
    match atom {
        ClassAtom::Unit(unit) => CodeSet::single(unit),
        ClassAtom::Set(set) => set,
    }
}

fn is_id_start(ch: char) -> bool {
    static SET: std::sync::OnceLock<CodeSet> = std::sync::OnceLock::new();
    SET.get_or_init(|| charset::property_set("ID_Start").unwrap_or_default()).contains(ch as u32)
}

fn is_id_continue(ch: char) -> bool {
    static SET: std::sync::OnceLock<CodeSet> = std::sync::OnceLock::new();
    SET.get_or_init(|| charset::property_set("ID_Continue").unwrap_or_default()).contains(ch as u32)
}
