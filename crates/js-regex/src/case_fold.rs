//! JavaScript's two case-insensitive equalities, from tables generated from node
//! (`case_folding_tables.rs`): `i` without `u`/`v` on UTF-16 code units, `i` with them on
//! code points. Nothing else in the crate folds case.

use super::case_folding_tables::{ALTERNATING_PAIRS, LEGACY_CASE_RUNS, UNICODE_CASE_RUNS};
use super::charset::CodeSet;

/// The orbits of one mode: sets of characters that match each other, as rings.
#[derive(Debug)]
pub struct CaseOrbits {
    runs: &'static [(u32, u32, i32)],
    /// `canonical` of each ASCII character, worked out at compile time: two ASCII characters
    /// are equal exactly when these are (the smallest member of an orbit holding an ASCII
    /// character is ASCII), which keeps backreferences over typical output fast.
    ascii_canonical: [u8; 128],
}

pub static LEGACY: CaseOrbits = CaseOrbits::new(LEGACY_CASE_RUNS);
pub static UNICODE: CaseOrbits = CaseOrbits::new(UNICODE_CASE_RUNS);

/// The orbits for a pattern's mode (`full_unicode`: `u` or `v` given).
pub fn orbits(full_unicode: bool) -> &'static CaseOrbits {
    if full_unicode {
        &UNICODE
    } else {
        &LEGACY
    }
}

impl CaseOrbits {
    const fn new(runs: &'static [(u32, u32, i32)]) -> CaseOrbits {
        let mut orbits = CaseOrbits { runs, ascii_canonical: [0; 128] };
        let mut c = 0;
        while c < 128 {
            let canonical = orbits.canonical(c as u32);
            assert!(canonical < 128, "an orbit holding an ASCII character starts with one");
            orbits.ascii_canonical[c] = canonical as u8;
            c += 1;
        }
        orbits
    }

    /// The next member of the orbit of `c`, or None if nothing else matches `c`.
    const fn next(&self, c: u32) -> Option<u32> {
        // Binary search for the run holding `c` (a loop: const fns cannot call
        // partition_point).
        let (mut low, mut high) = (0, self.runs.len());
        while low < high {
            let middle = (low + high) / 2;
            let (first, last, step) = self.runs[middle];
            if last < c {
                low = middle + 1;
            } else if first > c {
                high = middle;
            } else {
                return Some(step_from(first, step, c));
            }
        }
        None
    }

    /// True if `a` and `b` match each other case-insensitively.
    pub fn equal(&self, a: u32, b: u32) -> bool {
        if a == b {
            return true;
        }
        if a < 128 && b < 128 {
            return self.ascii_canonical[a as usize] == self.ascii_canonical[b as usize];
        }
        let mut member = a;
        while let Some(next) = self.next(member) {
            if next == a {
                break;
            }
            if next == b {
                return true;
            }
            member = next;
        }
        false
    }

    /// The smallest member of the orbit of `c`: the same for exactly the characters that
    /// match `c`.
    pub const fn canonical(&self, c: u32) -> u32 {
        let mut smallest = c;
        let mut member = c;
        while let Some(next) = self.next(member) {
            if next == c {
                break;
            }
            if next < smallest {
                smallest = next;
            }
            member = next;
        }
        smallest
    }

    /// Every character that matches some member of `set`.
    pub fn closure(&self, set: &CodeSet) -> CodeSet {
        let mut partners = Vec::new();
        for &(low, high) in set.ranges() {
            let start = self.runs.partition_point(|&(_, last, _)| last < low);
            for &(first, last, step) in self.runs[start..].iter().take_while(|&&(first, _, _)| first <= high) {
                for c in first.max(low)..=last.min(high) {
                    let mut member = step_from(first, step, c);
                    while member != c {
                        if !set.contains(member) {
                            partners.push((member, member));
                        }
                        member = self.next(member).unwrap_or(c);
                    }
                }
            }
        }
        if partners.is_empty() {
            set.clone()
        } else {
            partners.extend_from_slice(set.ranges());
            CodeSet::from_ranges(partners)
        }
    }
}

/// The next orbit member of `c` in the run starting at `first` with `step`.
const fn step_from(first: u32, step: i32, c: u32) -> u32 {
    if step == ALTERNATING_PAIRS {
        if (c - first).is_multiple_of(2) {
            c + 1
        } else {
            c - 1
        }
    } else {
        c.wrapping_add_signed(step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charset::{word_set, MAX_CODE_POINT, MAX_CODE_UNIT};

    fn orbit(orbits: &CaseOrbits, c: u32) -> Vec<u32> {
        let mut members =
            orbits.closure(&CodeSet::single(c)).ranges().iter().flat_map(|&(a, b)| a..=b).collect::<Vec<_>>();
        members.sort_unstable();
        members
    }

    #[test]
    fn runs_are_sorted_disjoint_rings_within_their_mode() {
        for (orbits, max) in [(&LEGACY, MAX_CODE_UNIT), (&UNICODE, MAX_CODE_POINT)] {
            for pair in orbits.runs.windows(2) {
                assert!(pair[0].0 <= pair[0].1 && pair[0].1 < pair[1].0, "{pair:x?}");
            }
            for &(first, last, _) in orbits.runs {
                assert!(last <= max);
                for c in first..=last {
                    // Every ring closes on itself within a few steps, through listed members.
                    let mut member = c;
                    let mut steps = 0;
                    loop {
                        member = orbits.next(member).expect("a ring member has a successor");
                        steps += 1;
                        if member == c {
                            break;
                        }
                        assert!(steps < 8 && member <= max, "{c:X}");
                    }
                    assert!(steps >= 2, "{c:X} points to itself");
                }
            }
        }
    }

    #[test]
    fn the_ascii_shortcut_agrees_with_the_rings() {
        for orbits in [&LEGACY, &UNICODE] {
            for a in 0..128 {
                let partners = orbits.closure(&CodeSet::single(a));
                for b in 0..128 {
                    assert_eq!(orbits.equal(a, b), partners.contains(b), "{a:X} {b:X}");
                }
            }
        }
    }

    #[test]
    fn unicode_mode_uses_simple_case_folding() {
        assert_eq!(orbit(&UNICODE, 'k' as u32), vec!['K' as u32, 'k' as u32, 0x212A]);
        assert_eq!(orbit(&UNICODE, 's' as u32), vec!['S' as u32, 's' as u32, 0x017F]);
        assert_eq!(orbit(&UNICODE, 0xDF), vec![0xDF, 0x1E9E]);
        assert!(UNICODE.equal(0x03C3, 0x03C2) && UNICODE.equal(0x03A3, 0x03C2));
        assert_eq!(UNICODE.canonical(0x03C2), 0x03A3);
        assert!(!UNICODE.equal('a' as u32, 'b' as u32));
    }

    #[test]
    fn legacy_mode_never_maps_non_ascii_onto_ascii() {
        assert_eq!(orbit(&LEGACY, 'k' as u32), vec!['K' as u32, 'k' as u32]);
        assert_eq!(orbit(&LEGACY, 's' as u32), vec!['S' as u32, 's' as u32]);
        assert_eq!(orbit(&LEGACY, 0xDF), vec![0xDF]);
        let ascii = CodeSet::from_ranges(vec![(0, 0x7F)]);
        assert_eq!(LEGACY.closure(&ascii), ascii);
    }

    #[test]
    fn unicode_17_case_pairs_fold_in_both_modes() {
        // New in Unicode 17.0: Latin A7CE..A7D5 and the Beria Erfe script.
        for (upper, lower) in
            [(0xA7CE, 0xA7CF), (0xA7D2, 0xA7D3), (0xA7D4, 0xA7D5), (0x16EA0, 0x16EBB), (0x16EB8, 0x16ED3)]
        {
            assert!(UNICODE.equal(upper, lower) && UNICODE.equal(lower, upper), "{upper:X}");
            assert_eq!(UNICODE.canonical(lower), upper);
            assert_eq!(LEGACY.equal(upper, lower), upper <= MAX_CODE_UNIT, "{upper:X}");
        }
    }

    #[test]
    fn folded_word_characters_are_the_closure_of_the_ascii_ones() {
        // charset::word_set lists U+017F and U+212A for `iu`; the tables must agree.
        assert_eq!(UNICODE.closure(&word_set(false)), word_set(true));
        assert_eq!(LEGACY.closure(&word_set(false)), word_set(false));
    }

    #[test]
    fn closure_of_a_complement_adds_only_partners() {
        let not_k = CodeSet::single('k' as u32).complement(MAX_CODE_POINT);
        assert_eq!(UNICODE.closure(&not_k), CodeSet::from_ranges(vec![(0, MAX_CODE_POINT)]));
        let not_orbit =
            CodeSet::from_ranges(vec![('K' as u32, 'K' as u32), ('k' as u32, 'k' as u32), (0x212A, 0x212A)])
                .complement(MAX_CODE_POINT);
        assert_eq!(UNICODE.closure(&not_orbit), not_orbit);
    }
}
