//! Why a dispatch verb or a dispatch state file failed.

use std::io;

use crate::pipeline::StateError;
use crate::target::{DirectoryError, InvalidId};

#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    #[error(transparent)]
    Id(#[from] InvalidId),
    /// A transition, or a value, that the wave rules refuse.
    #[error("{0}")]
    Refused(String),
    /// What is wrong with the text of a state file.
    #[error("{0}")]
    Shape(String),
    /// The scope's state file cannot be used; the detail names it.
    #[error("invalid dispatch state: {0}")]
    Invalid(String),
    #[error("cannot lock dispatch state: {0}")]
    Lock(#[source] io::Error),
    #[error("cannot remove stale temp files: {0}")]
    StaleTemp(#[source] io::Error),
    /// The replacement write (the error names the file).
    #[error("cannot write {0}")]
    Write(#[source] io::Error),
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Root(#[from] DirectoryError),
    /// A command-line value the dispatch verbs refuse.
    #[error("{0}")]
    Usage(String),
}

impl DispatchError {
    /// What is wrong, without the `invalid dispatch state: ` lead an
    /// invalid file's error starts with (the checker says it its own way).
    pub fn detail(&self) -> String {
        match self {
            DispatchError::Invalid(detail) => detail.clone(),
            other => other.to_string(),
        }
    }
}
