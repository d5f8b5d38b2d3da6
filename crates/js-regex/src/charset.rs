//! Sets of matchable units (UTF-16 code units without `u`/`v`, code points with them) and
//! JavaScript's character class escapes. Case folding is in `case_fold`.

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
}
