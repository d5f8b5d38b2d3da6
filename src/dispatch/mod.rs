//! Native dispatch launch waves: a wave records which leaves a driver
//! launched (with the host agent handle of each), when it stopped launching
//! (seal) and which leaves came back, so "launch everything, then wait" can
//! be checked rather than claimed.
//!
//! `model` is pure (shape, invariants, transitions, reduction), `store` is
//! the only code that touches the state file and its audit lines, and `cli`
//! is the `gate-check dispatch <verb>` command family.

pub mod cli;
pub mod model;
pub mod store;

use std::path::Path;

pub use model::DispatchSummary;

/// Longest diagnostic about a broken state file that reaches the checker's output.
const MAX_DIAGNOSTIC_BYTES: usize = 500;

/// The dispatch side of a scope's verdict, as the checker folds it in:
/// waves still open or sealed block, abandoned waves demand a handoff.
/// No scope means no waves. An unreadable or invalid state file is an error.
pub fn aggregate(root: &Path, scope: Option<&str>) -> Result<DispatchSummary, String> {
    let Some(scope) = scope else {
        return Ok(DispatchSummary::default());
    };
    store::read(root, scope).map(|state| state.summary()).map_err(|error| {
        let detail = error.strip_prefix("invalid dispatch state: ").unwrap_or(&error);
        format!("invalid dispatch state for scope {scope}: {}", model::escape_bounded(detail, MAX_DIAGNOSTIC_BYTES))
    })
}
