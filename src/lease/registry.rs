//! The lease registry on disk: one record per `scope/leaf` identity in
//! `<root>/.unlazy/locks/*.lease` (the Node tool's layout). Every claim and
//! release runs under one exclusive lock (`leases.lock`, an OS file lock
//! released by the kernel even if the holder dies), reads every record
//! strictly, and writes a new record atomically. A record that is a link,
//! hard-linked, oversized, not a regular file or malformed stops the
//! operation: an unreadable registry is never treated as an empty one.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use thiserror::Error;

use super::{conflicts, parse_record, render_record, Conflict, Lease, MalformedLease, MAX_RECORD_BYTES};
use crate::durable::{self, Change, Entry, FileLock, OpenDirectory, ReadRefusal};
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

/// The registry directory, held open and under the exclusive lock for as
/// long as this value lives.
struct Locked {
    directory: OpenDirectory,
    lock: FileLock,
}

impl Locked {
    fn acquire(root: &Path) -> Result<Locked, RegistryError> {
        let shown = Path::new("lease lock directory");
        // The physical root, so every spelling of one repository shares one lock.
        let directory = crate::state_root::lock_directory(root).map_err(io_error(shown))?;
        let target = directory.join(OsStr::new(LOCK_TARGET));
        let lock =
            crate::state_root::lock_for(root, &target).and_then(|lock| lock.acquire()).map_err(io_error(shown))?;
        Ok(Locked { directory, lock })
    }
}

/// Every record in the registry `directory`, sorted by file name.
fn leases(directory: &OpenDirectory) -> Result<Vec<(OsString, Lease)>, RegistryError> {
    let mut names: Vec<String> = directory
        .entries()
        .map_err(io_error(directory.path()))?
        .into_iter()
        .filter_map(|name| name.into_string().ok())
        .filter(|name| name.ends_with(RECORD_SUFFIX))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let text = read_record(directory, OsStr::new(&name))?;
            let lease = parse_record(&name, &text).map_err(|reason| {
                RegistryError::Malformed(directory.join(OsStr::new(&name)).display().to_string(), reason)
            })?;
            Ok((OsString::from(name), lease))
        })
        .collect()
}

/// The lease `scope/leaf` holds now, if any; read without the registry
/// lock (records are only ever replaced whole) and without creating
/// anything, for views that never change state.
pub fn held(root: &Path, scope: &str, leaf: &str) -> Result<Option<Lease>, RegistryError> {
    let locks = crate::layout::StateDir::new(root).locks();
    let Some(directory) = crate::state_root::existing(root, &locks).map_err(io_error(&locks))? else {
        return Ok(None);
    };
    let name = super::record_name(scope, leaf);
    if directory.entry(OsStr::new(&name)).map_err(io_error(&locks))? == Entry::Missing {
        return Ok(None);
    }
    let text = read_record(&directory, OsStr::new(&name))?;
    parse_record(&name, &text)
        .map(Some)
        .map_err(|reason| RegistryError::Malformed(directory.join(OsStr::new(&name)).display().to_string(), reason))
}

/// Reads a record as one stable regular file; anything else is refused.
fn read_record(directory: &OpenDirectory, name: &OsStr) -> Result<String, RegistryError> {
    let path = directory.join(name);
    let refused = || RegistryError::NotRegular(path.display().to_string());
    let read = match directory.read_stable(name, MAX_RECORD_BYTES) {
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
    let name = OsString::from(super::record_name(scope, leaf));
    durable::update_locked(lock, &directory, &name, || {
        let held: Vec<Lease> = leases(&directory)?.into_iter().map(|(_, lease)| lease).collect();
        let wanted =
            Lease { scope: scope.into(), leaf: leaf.into(), globs: globs.to_vec(), pid: Some(std::process::id()) };
        let found = conflicts(&wanted, &held);
        if !found.is_empty() {
            return Ok(Change::Keep(ClaimOutcome::Refused(found)));
        }
        // Every `.lease` name was read strictly above, so `name` is no link.
        directory.remove_stale_temp_files(&name)?;
        let bytes = render_record(&wanted).into_bytes();
        Ok(Change::Replace { value: ClaimOutcome::Claimed(wanted.globs), bytes, mode: 0o600 })
    })
    .map_err(|error| error.into_error(RegistryError::Update))
}

/// Removes every lease of `scope` (or only `scope/leaf`); returns how many.
pub fn release(root: &Path, scope: &str, leaf: Option<&str>) -> Result<usize, RegistryError> {
    let Locked { directory, lock } = Locked::acquire(root)?;
    durable::update_locked(lock, &directory, OsStr::new(LOCK_TARGET), || {
        let names: Vec<OsString> = leases(&directory)?
            .into_iter()
            .filter(|(_, lease)| lease.scope == scope && leaf.is_none_or(|leaf| lease.leaf == leaf))
            .map(|(name, _)| name)
            .collect();
        Ok(Change::Remove { value: names.len(), names })
    })
    .map_err(|error| error.into_error(RegistryError::Update))
}
