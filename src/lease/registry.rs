//! The lease registry on disk: one record per `scope/leaf` identity in
//! `<root>/.unlazy/locks/*.lease` (the Node tool's layout). Every claim and
//! release runs under one exclusive lock (`leases.lock`, an OS file lock
//! released by the kernel even if the holder dies), reads every record
//! strictly, and writes a new record atomically. A record that is a link,
//! hard-linked, oversized, not a regular file or malformed stops the
//! operation: an unreadable registry is never treated as an empty one.

use std::fs::{self};
use std::path::{Path, PathBuf};

use thiserror::Error;

use super::{conflicts, parse_record, render_record, Conflict, Lease, MalformedLease, MAX_RECORD_BYTES};
use crate::durable::{self, Change, FileLock, ReadRefusal};
use crate::pipeline::StateError;

/// The lock target the Node tool uses for the registry, so both tools
/// serialize claims on the same lock file.
const LOCK_TARGET: &str = "lease-registry";
const RECORD_SUFFIX: &str = ".lease";

#[derive(Debug, Error)]
pub enum RegistryError {
    #[error(transparent)]
    State(#[from] StateError),
    #[error("lease record must be one unchanged regular single-link file of at most {MAX_RECORD_BYTES} bytes: {0}")]
    NotRegular(String),
    #[error("{0}: {1} (inspect it, then remove it by hand if it is garbage)")]
    Malformed(String, #[source] MalformedLease),
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    /// Writing or removing a record (the message names it).
    #[error("cannot update the lease registry: {0}")]
    Update(#[from] std::io::Error),
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> RegistryError + '_ {
    move |error| RegistryError::Io(path.display().to_string(), error)
}

pub enum ClaimOutcome {
    /// The normalized globs now held.
    Claimed(Vec<String>),
    Refused(Vec<Conflict>),
}

/// The registry directory, held under the exclusive lock for as long as
/// this value lives.
struct Locked {
    directory: PathBuf,
    lock: FileLock,
}

impl Locked {
    fn acquire(root: &Path) -> Result<Locked, RegistryError> {
        // The physical root, so every spelling of one repository shares one lock.
        let directory = crate::state_root::lock_directory(root).map_err(io_error(Path::new("lease lock directory")))?;
        let path = crate::state_root::lock_for(root, &directory.join(LOCK_TARGET))
            .map_err(io_error(Path::new("lease lock directory")))?;
        let lock = FileLock::acquire(&path).map_err(io_error(&path))?;
        Ok(Locked { directory, lock })
    }
}

/// Every record in the registry `directory`, sorted by file name.
fn leases(directory: &Path) -> Result<Vec<(PathBuf, Lease)>, RegistryError> {
    let entries = fs::read_dir(directory).map_err(io_error(directory))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io_error(directory))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        if name.ends_with(RECORD_SUFFIX) {
            names.push(name.to_string());
        }
    }
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let path = directory.join(&name);
            let text = read_record(&path)?;
            let lease = parse_record(&name, &text)
                .map_err(|reason| RegistryError::Malformed(path.display().to_string(), reason))?;
            Ok((path, lease))
        })
        .collect()
}

/// The lease `scope/leaf` holds now, if any; read without the registry
/// lock (records are only ever replaced whole) and without creating
/// anything, for views that never change state.
pub fn held(root: &Path, scope: &str, leaf: &str) -> Result<Option<Lease>, RegistryError> {
    let path = crate::layout::StateDir::new(root).locks().join(super::record_name(scope, leaf));
    if fs::symlink_metadata(&path).is_err() {
        return Ok(None);
    }
    let text = read_record(&path)?;
    let name = super::record_name(scope, leaf);
    parse_record(&name, &text).map(Some).map_err(|reason| RegistryError::Malformed(path.display().to_string(), reason))
}

/// Reads a record as one stable regular file; anything else is refused.
fn read_record(path: &Path) -> Result<String, RegistryError> {
    let refused = || RegistryError::NotRegular(path.display().to_string());
    let read = match durable::read_stable(path, MAX_RECORD_BYTES) {
        Ok(Some(read)) => read,
        Ok(None) => return Err(RegistryError::Io(path.display().to_string(), std::io::ErrorKind::NotFound.into())),
        Err(ReadRefusal::Io(error)) => return Err(RegistryError::Io(path.display().to_string(), error)),
        Err(_) => return Err(refused()),
    };
    String::from_utf8(read.bytes)
        .map_err(|_| RegistryError::Malformed(path.display().to_string(), MalformedLease::NotUtf8))
}

/// Claims `globs` (already normalized OWNS paths) for `scope/leaf`, unless
/// the identity already holds a lease or any glob overlaps another's.
pub fn claim(root: &Path, scope: &str, leaf: &str, globs: &[String]) -> Result<ClaimOutcome, RegistryError> {
    let Locked { directory, lock } = Locked::acquire(root)?;
    let path = directory.join(super::record_name(scope, leaf));
    durable::update_locked(lock, &path, || {
        let held: Vec<Lease> = leases(&directory)?.into_iter().map(|(_, lease)| lease).collect();
        let wanted =
            Lease { scope: scope.into(), leaf: leaf.into(), globs: globs.to_vec(), pid: Some(std::process::id()) };
        let found = conflicts(&wanted, &held);
        if !found.is_empty() {
            return Ok(Change::Keep(ClaimOutcome::Refused(found)));
        }
        // Every `.lease` name was read strictly above, so `path` is no link.
        durable::remove_stale_temp_files(&path)?;
        let bytes = render_record(&wanted).into_bytes();
        Ok(Change::Replace { value: ClaimOutcome::Claimed(wanted.globs), bytes, mode: 0o600 })
    })
    .map_err(|error| error.into_error(RegistryError::Update))
}

/// Removes every lease of `scope` (or only `scope/leaf`); returns how many.
pub fn release(root: &Path, scope: &str, leaf: Option<&str>) -> Result<usize, RegistryError> {
    let Locked { directory, lock } = Locked::acquire(root)?;
    durable::update_locked(lock, &directory, || {
        let paths: Vec<PathBuf> = leases(&directory)?
            .into_iter()
            .filter(|(_, lease)| lease.scope == scope && leaf.is_none_or(|leaf| lease.leaf == leaf))
            .map(|(path, _)| path)
            .collect();
        Ok(Change::Remove { value: paths.len(), paths })
    })
    .map_err(|error| error.into_error(RegistryError::Update))
}
