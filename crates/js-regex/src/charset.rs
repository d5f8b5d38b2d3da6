//! Sets of matchable units (UTF-16 code units without `u`/`v`, code points with them),
//! JavaScript's character class escapes, and its two case-folding rules.

use std::collections::HashMap;
use std::sync::OnceLock;

use regex_syntax::hir::{ClassUnicode, ClassUnicodeRange};

use super::property_names::{BINARY, GENERAL_CATEGORY, SCRIPT};
use super::unicode_tables::PROPERTY_RANGES;

pub const MAX_CODE_POINT: u32 = 0x10FFFF;
pub const MAX_CODE_UNIT: u32 = 0xFFFF;
pub const SURROGATES: (u32, u32) = (0xD800, 0xDFFF);

/// Sorted, disjoint, non-adjacent inclusive ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodeSet {
    ranges: Vec<(u32, u32)>,
}

impl CodeSet {
    pub fn empty() -> Self {
        CodeSet { ranges: Vec::new() }
    }

    pub fn single(unit: u32) -> Self {
        CodeSet { ranges: vec![(unit, unit)] }
    }

    pub fn from_ranges(mut ranges: Vec<(u32, u32)>) -> Self {
        ranges.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(ranges.len());
        for (low, high) in ranges {
            match merged.last_mut() {
                Some(last) if low <= last.1.saturating_add(1) => last.1 = last.1.max(high),
                _ => merged.push((low, high)),
            }
        }
        CodeSet { ranges: merged }
    }

    pub fn ranges(&self) -> &[(u32, u32)] {
        &self.ranges
    }

    pub fn single_unit(&self) -> Option<u32> {
        match self.ranges.as_slice() {
            [(low, high)] if low == high => Some(*low),
            _ => None,
        }
    }

    pub fn contains(&self, unit: u32) -> bool {
        self.ranges
            .binary_search_by(|&(low, high)| {
                if high < unit {
                    std::cmp::Ordering::Less
                } else if low > unit {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .is_ok()
    }

    pub fn union(&self, other: &CodeSet) -> CodeSet {
        let mut all = self.ranges.clone();
        all.extend_from_slice(&other.ranges);
        CodeSet::from_ranges(all)
    }

    pub fn complement(&self, max: u32) -> CodeSet {
        let mut out = Vec::new();
        let mut next = 0u32;
        for &(low, high) in &self.ranges {
            if low > max {
                break;
            }
            if low > next {
                out.push((next, low - 1));
            }
            next = high.saturating_add(1);
        }
        if next <= max {
            out.push((next, max));
        }
        CodeSet { ranges: out }
    }

    pub fn intersect(&self, other: &CodeSet) -> CodeSet {
        let top = MAX_CODE_POINT;
        self.complement(top).union(&other.complement(top)).complement(top)
    }

    pub fn subtract(&self, other: &CodeSet) -> CodeSet {
        self.intersect(&other.complement(MAX_CODE_POINT))
    }

    pub fn intersects_range(&self, low: u32, high: u32) -> bool {
        self.ranges.iter().any(|&(a, b)| a <= high && b >= low)
    }
}

pub fn digit_set() -> CodeSet {
    CodeSet::from_ranges(vec![(0x30, 0x39)])
}

/// `\w`; under `u`/`v` with `i` JavaScript adds the two characters whose simple case
/// fold is an ASCII word character: U+017F (long s) and U+212A (Kelvin sign).
pub fn word_set(unicode_ignore_case: bool) -> CodeSet {
    let mut ranges = vec![(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)];
    if unicode_ignore_case {
        ranges.push((0x017F, 0x017F));
        ranges.push((0x212A, 0x212A));
    }
    CodeSet::from_ranges(ranges)
}

/// JavaScript WhiteSpace plus LineTerminator.
pub fn space_set() -> CodeSet {
    CodeSet::from_ranges(vec![
        (0x09, 0x0D),
        (0x20, 0x20),
        (0xA0, 0xA0),
        (0x1680, 0x1680),
        (0x2000, 0x200A),
        (0x2028, 0x2029),
        (0x202F, 0x202F),
        (0x205F, 0x205F),
        (0x3000, 0x3000),
        (0xFEFF, 0xFEFF),
    ])
}

pub fn is_line_terminator(unit: u32) -> bool {
    matches!(unit, 0x0A | 0x0D | 0x2028 | 0x2029)
}

pub fn line_terminator_set() -> CodeSet {
    CodeSet::from_ranges(vec![(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)])
}

/// JavaScript's non-unicode Canonicalize: toUpperCase, unless that yields more than one
/// code unit or maps a non-ASCII character onto ASCII.
pub fn canonicalize_legacy(unit: u32) -> u32 {
    let Some(ch) = char::from_u32(unit) else {
        return unit;
    };
    let mut upper = ch.to_uppercase();
    let (Some(first), None) = (upper.next(), upper.next()) else {
        return unit;
    };
    let mapped = first as u32;
    if mapped > MAX_CODE_UNIT || (unit >= 128 && mapped < 128) {
        unit
    } else {
        mapped
    }
}

/// Groups of BMP code units that share a legacy canonical form (only groups of two or more).
fn legacy_fold_groups() -> &'static [Vec<u32>] {
    static GROUPS: OnceLock<Vec<Vec<u32>>> = OnceLock::new();
    GROUPS.get_or_init(|| {
        let mut by_canonical: HashMap<u32, Vec<u32>> = HashMap::new();
        for unit in 0..=MAX_CODE_UNIT {
            by_canonical.entry(canonicalize_legacy(unit)).or_default().push(unit);
        }
        let mut groups: Vec<Vec<u32>> = by_canonical.into_values().filter(|g| g.len() > 1).collect();
        groups.sort();
        groups
    })
}

/// Every unit that matches some member of `set` under `i` without `u`/`v`.
pub fn fold_closure_legacy(set: &CodeSet) -> CodeSet {
    let mut ranges = set.ranges.clone();
    for group in legacy_fold_groups() {
        if group.iter().any(|&unit| set.contains(unit)) {
            ranges.extend(group.iter().map(|&unit| (unit, unit)));
        }
    }
    CodeSet::from_ranges(ranges)
}

fn to_class_unicode(set: &CodeSet) -> ClassUnicode {
    let mut pieces = Vec::new();
    for &(low, high) in &set.ranges {
        // char cannot hold surrogates; split around them.
        let spans = [(low, high.min(SURROGATES.0 - 1)), (low.max(SURROGATES.1 + 1), high)];
        for (a, b) in spans {
            if a <= b {
                if let (Some(a), Some(b)) = (char::from_u32(a), char::from_u32(b)) {
                    pieces.push(ClassUnicodeRange::new(a, b));
                }
            }
        }
    }
    ClassUnicode::new(pieces)
}

fn from_class_unicode(class: &ClassUnicode) -> CodeSet {
    CodeSet::from_ranges(class.iter().map(|r| (r.start() as u32, r.end() as u32)).collect())
}

/// Every code point that matches some member of `set` under `i` with `u`/`v`
/// (simple case folding, the same equivalence regex-syntax implements).
pub fn fold_closure_unicode(set: &CodeSet) -> CodeSet {
    let mut ranges = set.ranges.clone();
    for group in unicode_fold_groups() {
        if group.iter().any(|&unit| set.contains(unit)) {
            ranges.extend(group.iter().map(|&unit| (unit, unit)));
        }
    }
    CodeSet::from_ranges(ranges)
}

/// Simple-case-folding orbits with two or more members. Only characters that change under
/// case mapping or folding can be in one, so only those are asked of regex-syntax.
fn unicode_fold_groups() -> &'static [Vec<u32>] {
    static GROUPS: OnceLock<Vec<Vec<u32>>> = OnceLock::new();
    GROUPS.get_or_init(|| {
        let mut candidates = CodeSet::empty();
        for property in ["Changes_When_Casemapped", "Changes_When_Casefolded", "Cased"] {
            if let Some(set) = property_table(property) {
                candidates = candidates.union(&set);
            }
        }
        let mut groups: Vec<Vec<u32>> = Vec::new();
        let mut grouped = CodeSet::empty();
        for &(low, high) in candidates.ranges() {
            for code_point in low..=high {
                if grouped.contains(code_point) {
                    continue;
                }
                let mut class = to_class_unicode(&CodeSet::single(code_point));
                class.case_fold_simple();
                let orbit = from_class_unicode(&class);
                let members: Vec<u32> = orbit.ranges().iter().flat_map(|&(a, b)| a..=b).collect();
                if members.len() > 1 {
                    grouped = grouped.union(&orbit);
                    groups.push(members);
                }
            }
        }
        groups
    })
}

/// Smallest member of the simple-case-folding orbit of `code_point`: equal for exactly
/// the pairs JavaScript's unicode Canonicalize treats as equal.
pub fn canonicalize_unicode(code_point: u32) -> u32 {
    static SMALLEST: OnceLock<HashMap<u32, u32>> = OnceLock::new();
    let smallest = SMALLEST.get_or_init(|| {
        let mut map = HashMap::new();
        for group in unicode_fold_groups() {
            let least = group.iter().copied().min().unwrap_or(0);
            for &member in group {
                map.insert(member, least);
            }
        }
        map
    });
    smallest.get(&code_point).copied().unwrap_or(code_point)
}

/// The generated table for `key` (see unicode_tables.rs).
fn property_table(key: &str) -> Option<CodeSet> {
    let index = PROPERTY_RANGES.binary_search_by(|(name, _)| name.cmp(&key)).ok()?;
    Some(CodeSet { ranges: PROPERTY_RANGES[index].1.to_vec() })
}

fn lookup<'a>(table: &'a [(&'a str, &'a str)], name: &str) -> Option<&'a str> {
    table.iter().find(|(js, _)| *js == name).map(|(_, canonical)| *canonical)
}

/// `\p{..}` names JavaScript accepts that gate-check has no data for: rejected rather than
/// guessed at. The first two are one binary property; the rest are `v`-only properties of
/// strings.
pub const UNSUPPORTED_PROPERTIES: &[&str] = &[
    "Changes_When_NFKC_Casefolded",
    "CWKCF",
    "Basic_Emoji",
    "Emoji_Keycap_Sequence",
    "RGI_Emoji",
    "RGI_Emoji_Flag_Sequence",
    "RGI_Emoji_Modifier_Sequence",
    "RGI_Emoji_Tag_Sequence",
    "RGI_Emoji_ZWJ_Sequence",
];

/// The set named by the body of `\p{..}`, or None if JavaScript rejects the name.
pub fn property_set(body: &str) -> Option<CodeSet> {
    let key = match body.split_once('=') {
        Some((name, value)) => match name {
            "General_Category" | "gc" => format!("gc={}", lookup(GENERAL_CATEGORY, value)?),
            "Script" | "sc" => format!("sc={}", lookup(SCRIPT, value)?),
            "Script_Extensions" | "scx" => format!("scx={}", lookup(SCRIPT, value)?),
            _ => return None,
        },
        None => match lookup(GENERAL_CATEGORY, body) {
            Some(canonical) => format!("gc={canonical}"),
            None => lookup(BINARY, body)?.to_string(),
        },
    };
    property_table(&key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_property_resolves() {
        let missing: Vec<_> = BINARY
            .iter()
            .chain(GENERAL_CATEGORY)
            .filter(|(js, _)| !UNSUPPORTED_PROPERTIES.contains(js))
            .filter(|(js, _)| property_set(js).is_none())
            .collect();
        assert!(missing.is_empty(), "{missing:?}");
        for (js, _) in SCRIPT {
            assert!(property_set(&format!("sc={js}")).is_some(), "{js}");
            assert!(property_set(&format!("scx={js}")).is_some(), "{js}");
        }
    }

    #[test]
    fn unicode_closure_agrees_with_regex_syntax() {
        for block in 0..(0x20000 / 64) {
            let set = CodeSet::from_ranges(vec![(block * 64, block * 64 + 63)]);
            let mut class = to_class_unicode(&set);
            class.case_fold_simple();
            let expected = from_class_unicode(&class).union(&set.intersect(&CodeSet::from_ranges(vec![SURROGATES])));
            assert_eq!(fold_closure_unicode(&set), expected, "block {block}");
        }
    }

    #[test]
    fn legacy_folding_keeps_non_ascii_apart_from_ascii() {
        assert_eq!(canonicalize_legacy('a' as u32), 'A' as u32);
        assert_eq!(canonicalize_legacy(0x017F), 0x017F);
        assert_eq!(canonicalize_legacy(0x212A), 0x212A);
        assert_eq!(canonicalize_legacy(0xDF), 0xDF);
    }
}
