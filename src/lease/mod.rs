//! Ownership leases: which repository paths a `scope/leaf` identity has
//! claimed. This module is pure: glob overlap, the record format and the
//! conflict decision. `registry` keeps the records on disk.
//!
//! Overlap is decided conservatively, segment by segment: two globs are
//! proven disjoint only when, before either side reaches a wildcard, they
//! carry different literal segments. Everything else conflicts, including
//! `a*` against `ab*`, and a path against any longer path that starts with
//! it (`src` may denote a directory that owns `src/x.rs`).

pub mod registry;

use serde::{Deserialize, Serialize};

use crate::digest::sha256_hex;
use crate::ledger::normalize_owns_glob;
use crate::target::validate_scope_id;

/// Largest lease record accepted, as in the Node tool.
pub const MAX_RECORD_BYTES: u64 = 64 * 1024;

/// The characters that make a path segment a pattern rather than a literal.
fn has_wildcard(segment: &str) -> bool {
    segment.contains(['*', '?', '[', '{'])
}

/// True unless the two globs are proven disjoint. A glob that fails
/// normalisation overlaps everything.
pub fn globs_overlap(left: &str, right: &str) -> bool {
    let (Ok(left), Ok(right)) = (normalize_owns_glob(left), normalize_owns_glob(right)) else {
        return true;
    };
    for (a, b) in left.split('/').zip(right.split('/')) {
        if has_wildcard(a) || has_wildcard(b) {
            return true;
        }
        if a != b {
            return false;
        }
    }
    // One is a prefix of the other (or they are equal): a directory claim
    // covers its descendants.
    true
}

/// One live lease as stored in `.unlazy/locks/<name>.lease`. The layout is
/// the Node tool's, so leases taken by either tool are visible to both.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    pub scope: String,
    pub leaf: String,
    pub globs: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

impl Lease {
    /// `scope/leaf`, as printed in conflicts.
    pub fn holder(&self) -> String {
        format!("{}/{}", self.scope, self.leaf)
    }
}

/// The record file name for an identity: the first 24 hex digits of
/// SHA-256 over `scope::leaf`, then `.lease`.
pub fn record_name(scope: &str, leaf: &str) -> String {
    format!("{}.lease", &sha256_hex(format!("{scope}::{leaf}").as_bytes())[..24])
}

/// Parses and validates one record: valid scope and leaf ids, a non-empty
/// list of globs that are already in normal form, and a file name that
/// matches the identity inside it.
pub fn parse_record(file_name: &str, text: &str) -> Result<Lease, MalformedLease> {
    let lease: Lease = serde_json::from_str(text).map_err(MalformedLease::Json)?;
    validate_scope_id(&lease.scope, "scope")?;
    validate_scope_id(&lease.leaf, "leaf")?;
    if lease.globs.is_empty() {
        return Err(MalformedLease::NoGlobs);
    }
    if let Some(glob) = lease.globs.iter().find(|glob| normalize_owns_glob(glob).as_deref() != Ok(glob.as_str())) {
        return Err(MalformedLease::InvalidGlob(glob.clone()));
    }
    if file_name != record_name(&lease.scope, &lease.leaf) {
        return Err(MalformedLease::WrongName);
    }
    Ok(lease)
}

/// What is wrong with a lease record.
#[derive(Debug, thiserror::Error)]
pub enum MalformedLease {
    #[error("invalid lease record JSON: {0}")]
    Json(#[source] serde_json::Error),
    #[error(transparent)]
    Id(#[from] crate::target::InvalidId),
    #[error("lease record holds no OWNS paths")]
    NoGlobs,
    #[error("lease record holds an invalid OWNS path: {}", serde_json::Value::from(.0.as_str()))]
    InvalidGlob(String),
    #[error("lease record name does not match its scope and leaf")]
    WrongName,
    #[error("invalid UTF-8")]
    NotUtf8,
}

/// The record text written for a new lease (pretty JSON and a newline, as
/// the Node tool writes it).
pub fn render_record(lease: &Lease) -> String {
    let mut text = serde_json::to_string_pretty(lease).expect("a lease always serializes");
    text.push('\n');
    text
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conflict {
    /// The identity itself already holds a lease.
    Identity { holder: String },
    /// `glob` (wanted) overlaps `theirs`, held by `holder`.
    Overlap { glob: String, theirs: String, holder: String },
}

impl Conflict {
    /// The line printed for this conflict.
    pub fn describe(&self) -> String {
        match self {
            Conflict::Identity { holder } => {
                format!("CONFLICT {holder} already holds a live lease; release it before claiming again")
            }
            Conflict::Overlap { glob, theirs, holder } => format!("CONFLICT {glob} overlaps {theirs} held by {holder}"),
        }
    }
}

/// Every reason `wanted` cannot be granted against the leases `held`. An
/// identity that already holds a lease is its one exclusive owner, so a
/// second claim by it is refused outright; otherwise each wanted glob is
/// reported once per holder, against the first of that holder's globs it
/// overlaps.
pub fn conflicts(wanted: &Lease, held: &[Lease]) -> Vec<Conflict> {
    if let Some(same) = held.iter().find(|h| h.scope == wanted.scope && h.leaf == wanted.leaf) {
        return vec![Conflict::Identity { holder: same.holder() }];
    }
    let mut found = Vec::new();
    for glob in &wanted.globs {
        for lease in held {
            if let Some(theirs) = lease.globs.iter().find(|theirs| globs_overlap(glob, theirs)) {
                found.push(Conflict::Overlap { glob: glob.clone(), theirs: theirs.clone(), holder: lease.holder() });
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(scope: &str, leaf: &str, globs: &[&str]) -> Lease {
        Lease {
            scope: scope.into(),
            leaf: leaf.into(),
            globs: globs.iter().map(|g| g.to_string()).collect(),
            pid: None,
        }
    }

    #[test]
    fn different_literal_segments_are_disjoint() {
        assert!(!globs_overlap("src/a/**", "src/b/**"));
        assert!(!globs_overlap("docs/x.md", "docs/y.md"));
        assert!(!globs_overlap("a/b/c", "a/d/*"));
    }

    #[test]
    fn wildcards_conflict_in_either_segment() {
        for (a, b) in
            [("src/*", "src/x"), ("a*", "ab*"), ("src/?.rs", "src/zz.rs"), ("x/[ab]", "x/c"), ("{a,b}/c", "d/c")]
        {
            assert!(globs_overlap(a, b), "{a} vs {b}");
            assert!(globs_overlap(b, a), "{b} vs {a}");
        }
        // A wildcard after a differing literal segment cannot rescue overlap.
        assert!(!globs_overlap("src/a/*", "lib/*"));
    }

    #[test]
    fn prefix_and_equal_paths_conflict() {
        assert!(globs_overlap("src", "src/x.rs"));
        assert!(globs_overlap("src/shared/util.ts", "src/shared/**"));
        assert!(globs_overlap("a/b", "a/b"));
    }

    #[test]
    fn dot_slash_and_empty_segments_normalise() {
        assert!(globs_overlap("./src/x", "src//x"));
        assert!(!globs_overlap("./src/x", "src/y"));
        assert!(globs_overlap("/abs", "other"), "an invalid glob overlaps everything");
    }

    #[test]
    fn identity_is_one_exclusive_owner() {
        let held = vec![lease("web", "leaf-1", &["web/**"])];
        assert_eq!(
            conflicts(&lease("web", "leaf-1", &["elsewhere/**"]), &held),
            vec![Conflict::Identity { holder: "web/leaf-1".into() }]
        );
        assert!(conflicts(&lease("web", "leaf-2", &["api/**"]), &held).is_empty());
    }

    #[test]
    fn overlap_names_the_first_overlapping_glob_of_each_holder() {
        let held = vec![lease("web", "leaf-1", &["docs/**", "src/shared/**"]), lease("api", "leaf-9", &["src/**"])];
        let found = conflicts(&lease("cli", "leaf-2", &["src/shared/util.ts", "bin/x"]), &held);
        let lines: Vec<String> = found.iter().map(Conflict::describe).collect();
        assert_eq!(
            lines,
            vec![
                "CONFLICT src/shared/util.ts overlaps src/shared/** held by web/leaf-1",
                "CONFLICT src/shared/util.ts overlaps src/** held by api/leaf-9",
            ]
        );
    }

    #[test]
    fn records_round_trip_and_are_validated() {
        let original = Lease { pid: Some(7), ..lease("web", "leaf-1", &["src/**"]) };
        let name = record_name("web", "leaf-1");
        assert_eq!(parse_record(&name, &render_record(&original)).unwrap(), original.clone());
        assert!(parse_record("0000.lease", &render_record(&original)).unwrap_err().to_string().contains("name"));
        let bad_glob = render_record(&lease("web", "leaf-1", &["./src/**"]));
        assert!(parse_record(&name, &bad_glob).unwrap_err().to_string().contains("OWNS"));
        let empty = render_record(&lease("web", "leaf-1", &[]));
        assert!(parse_record(&name, &empty).unwrap_err().to_string().contains("no OWNS"));
        assert!(parse_record(&name, "{\"scope\":\"web\"").unwrap_err().to_string().contains("JSON"));
        let bad_scope = render_record(&lease("..", "leaf-1", &["a"]));
        assert!(parse_record(&record_name("..", "leaf-1"), &bad_scope)
            .unwrap_err()
            .to_string()
            .contains("scope must match"));
    }
}
