//! Native dispatch launch waves: a wave records which leaves a driver
//! launched (with the host agent handle of each), when it stopped launching
//! (seal) and which leaves came back, so "launch everything, then wait" can
//! be checked rather than claimed.
//!
//! `model` is pure (shape, invariants, transitions, reduction), `store` is
//! the only code that touches the state file and its audit lines, and `cli`
//! is the `gate-check dispatch <verb>` command family.

pub mod cli;
pub mod error;
pub mod model;
pub mod store;

use std::path::Path;

pub use error::DispatchError;
pub use model::DispatchSummary;

/// Longest diagnostic about a broken state file that reaches the checker's output.
const MAX_DIAGNOSTIC_BYTES: usize = 500;

/// A scope's dispatch state that keeps the checker from judging it.
#[derive(Debug, thiserror::Error)]
#[error("invalid dispatch state for scope {scope}: {}", model::escape_bounded(&.source.detail(), MAX_DIAGNOSTIC_BYTES))]
pub struct WavesError {
    scope: String,
    source: DispatchError,
}

/// The dispatch side of a scope's verdict, as the checker folds it in:
/// waves still open or sealed block, abandoned waves demand a handoff.
/// No scope means no waves. An unreadable or invalid state file is an error.
pub fn aggregate(root: &Path, scope: Option<&str>) -> Result<DispatchSummary, WavesError> {
    let Some(scope) = scope else {
        return Ok(DispatchSummary::default());
    };
    store::read(root, scope)
        .map(|state| state.summary())
        .map_err(|source| WavesError { scope: scope.to_string(), source })
}

/// Every wave of `scope`, as the state file holds them.
pub fn waves(root: &Path, scope: &str) -> Result<model::State, WavesError> {
    store::read(root, scope).map_err(|source| WavesError { scope: scope.to_string(), source })
}

/// The leaf of `scope` whose agent the host launched as `handle`, when a
/// live wave recorded one (see `model::State::leaf_launched_as`).
pub fn leaf_launched_as(root: &Path, scope: &str, handle: &str) -> Result<Option<String>, WavesError> {
    store::read(root, scope)
        .map(|state| state.leaf_launched_as(handle).map(str::to_string))
        .map_err(|source| WavesError { scope: scope.to_string(), source })
}
