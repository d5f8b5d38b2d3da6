//! Backreferences that can only ever find their groups unset. A group is set when it
//! closes, and every iteration of a loop around it starts with it unset again, so a
//! backreference inside its own group, or to a group that matching has not reached yet
//! (further on in its direction, in another alternative, or inside a negative
//! lookaround) matches the empty string wherever it is tried. Rewriting them as what they
//! are lets the empty-iteration rule see that a loop over them never consumes input
//! (`(\1){967296}` is one iteration), and lets the linear engine take the pattern.
//!
//! V8 tries one more position than the specification with `u`/`v`: between the halves of
//! a surrogate pair, where every backreference fails except one inside its own group,
//! which V8's parser replaces by nothing. gate-check follows it (see
//! `backtrack::Program::is_match`), so with `u`/`v` the other references become
//! `Assertion::NotMidPair` rather than nothing.

use super::parser::{Assertion, Node};

/// Rewrites every backreference in `root` whose groups cannot hold a value where it
/// stands: as nothing inside its own group (or without `u`/`v`), else as `NotMidPair`.
pub fn resolve(root: &mut Node, capture_count: usize, full_unicode: bool) {
    let mut walk = Walk { open: vec![false; capture_count + 1], full_unicode };
    walk.node(root, &mut vec![false; capture_count + 1], false);
}

struct Walk {
    /// Groups whose bodies the walk is inside.
    open: Vec<bool>,
    full_unicode: bool,
}

impl Walk {
    /// Rewrites `node`, matched in the given direction, reached with `may_be_set` marking
    /// the groups that can hold a value there; leaves it marking those that can after it.
    fn node(&mut self, node: &mut Node, may_be_set: &mut Vec<bool>, backward: bool) {
        match node {
            Node::Empty | Node::Set(_) | Node::Assert(_) => {}
            Node::BackReference { groups, .. } => {
                if groups.iter().any(|&group| self.open[group]) {
                    *node = Node::Empty;
                } else if groups.iter().all(|&group| !may_be_set[group]) {
                    *node = if self.full_unicode { Node::Assert(Assertion::NotMidPair) } else { Node::Empty };
                }
            }
            Node::Concat(items) => {
                if backward {
                    items.iter_mut().rev().for_each(|item| self.node(item, may_be_set, backward));
                } else {
                    items.iter_mut().for_each(|item| self.node(item, may_be_set, backward));
                }
            }
            Node::Alternation(alternatives) => {
                let before = may_be_set.clone();
                for alternative in alternatives {
                    let mut after = before.clone();
                    self.node(alternative, &mut after, backward);
                    include(may_be_set, &after);
                }
            }
            Node::Capture(index, body) => {
                self.open[*index] = true;
                self.node(body, may_be_set, backward);
                self.open[*index] = false;
                may_be_set[*index] = true;
            }
            Node::Repeat { body, max, .. } => {
                // Each iteration starts with the groups inside the body unset.
                let mut iteration = may_be_set.clone();
                unset_groups_in(body, &mut iteration);
                self.node(body, &mut iteration, backward);
                if *max != Some(0) {
                    include(may_be_set, &iteration);
                }
            }
            Node::Look { behind, negative, body } => {
                let mut inside = may_be_set.clone();
                self.node(body, &mut inside, *behind);
                // A negative lookaround leaves no group set.
                if !*negative {
                    include(may_be_set, &inside);
                }
            }
        }
    }
}

fn include(into: &mut [bool], other: &[bool]) {
    into.iter_mut().zip(other).for_each(|(into, &other)| *into |= other);
}

fn unset_groups_in(node: &Node, may_be_set: &mut [bool]) {
    match node {
        Node::Capture(index, body) => {
            may_be_set[*index] = false;
            unset_groups_in(body, may_be_set);
        }
        Node::Concat(items) | Node::Alternation(items) => items.iter().for_each(|n| unset_groups_in(n, may_be_set)),
        Node::Repeat { body, .. } | Node::Look { body, .. } => unset_groups_in(body, may_be_set),
        Node::Empty | Node::Set(_) | Node::Assert(_) | Node::BackReference { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::{parse, Flags};

    /// The pattern with its references resolved, printed compactly: `R` a reference kept,
    /// `M` one that became `NotMidPair`, `E` one that became nothing.
    fn resolved(source: &str, flags: &str) -> String {
        let flags = Flags::parse(flags).unwrap();
        let mut parsed = parse(source, flags).unwrap();
        resolve(&mut parsed.root, parsed.capture_count, flags.full_unicode());
        let mut out = String::new();
        show(&parsed.root, &mut out);
        out
    }

    fn show(node: &Node, out: &mut String) {
        match node {
            Node::Empty => out.push('E'),
            Node::Set(_) => out.push('c'),
            Node::Assert(Assertion::NotMidPair) => out.push('M'),
            Node::Assert(_) => out.push('^'),
            Node::BackReference { .. } => out.push('R'),
            Node::Concat(items) => items.iter().for_each(|n| show(n, out)),
            Node::Alternation(items) => {
                for (i, n) in items.iter().enumerate() {
                    if i > 0 {
                        out.push('|');
                    }
                    show(n, out);
                }
            }
            Node::Capture(_, body) => {
                out.push('(');
                show(body, out);
                out.push(')');
            }
            Node::Repeat { body, .. } => {
                out.push('[');
                show(body, out);
                out.push_str("]*");
            }
            Node::Look { body, .. } => {
                out.push_str("(?");
                show(body, out);
                out.push(')');
            }
        }
    }

    #[test]
    fn references_that_cannot_see_their_group_set_are_resolved() {
        for (source, flags, want) in [
            // Inside its own group: nothing, in every mode.
            (r"(\1)", "", "(E)"),
            (r"(\1)", "u", "(E)"),
            (r"(a\1)", "u", "(cE)"),
            (r"(?<x>a)|(?<x>\k<x>)", "u", "(c)|(E)"),
            // Forward, in another alternative, after a negative lookaround.
            (r"\1(a)", "", "E(c)"),
            (r"\1(a)", "u", "M(c)"),
            (r"(a)|\1", "u", "(c)|M"),
            (r"(?!(a))\1", "u", "(?(c))M"),
            // Each iteration starts with the body's groups unset.
            (r"(?:\1(a))+", "u", "[M(c)]*"),
            (r"(?:(a)|\1)+", "u", "[(c)|M]*"),
            // Lookbehind runs backwards: the group to the right is matched first.
            (r"(?<=\1(a))", "u", "(?R(c))"),
            (r"(?<=(a)\1)", "u", "(?(c)M)"),
            // Possibly set: kept.
            (r"(a)\1", "u", "(c)R"),
            (r"(a)?\1", "", "[(c)]*R"),
            (r"(?=(a))\1", "u", "(?(c))R"),
            (r"(?:(a)|b)\1", "u", "(c)|cR"),
            (r"(?:(?<x>a)|(?<x>b))\k<x>", "u", "(c)|(c)R"),
            (r"(?:(a)|b)+\1", "u", "[(c)|c]*R"),
        ] {
            assert_eq!(resolved(source, flags), want, "/{source}/{flags}");
        }
    }
}
