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

use super::{conflicts, parse_record, render_record, Conflict, Lease, MAX_RECORD_BYTES};
use crate::durable::{self, FileLock, ReadRefusal};
use crate::pipeline::{self, StateError};

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
    Malformed(String, String),
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
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
    _lock: FileLock,
}

impl Locked {
    fn acquire(root: &Path) -> Result<Locked, RegistryError> {
        // The physical root, so every spelling of one repository shares one lock.
        let directory = durable::lock_directory(root).map_err(io_error(Path::new("lease lock directory")))?;
        let path = FileLock::for_target(root, &directory.join(LOCK_TARGET))
            .map_err(io_error(Path::new("lease lock directory")))?;
        let lock = FileLock::acquire(&path).map_err(io_error(&path))?;
        Ok(Locked { directory, _lock: lock })
    }

    /// Every record, sorted by file name.
    fn leases(&self) -> Result<Vec<(PathBuf, Lease)>, RegistryError> {
        let entries = fs::read_dir(&self.directory).map_err(io_error(&self.directory))?;
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_error(&self.directory))?;
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
                let path = self.directory.join(&name);
                let text = read_record(&path)?;
                let lease = parse_record(&name, &text)
                    .map_err(|reason| RegistryError::Malformed(path.display().to_string(), reason))?;
                Ok((path, lease))
            })
            .collect()
    }
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
        .map_err(|_| RegistryError::Malformed(path.display().to_string(), "invalid UTF-8".into()))
}

/// Claims `globs` (already normalized OWNS paths) for `scope/leaf`, unless
/// the identity already holds a lease or any glob overlaps another's.
pub fn claim(root: &Path, scope: &str, leaf: &str, globs: &[String]) -> Result<ClaimOutcome, RegistryError> {
    let registry = Locked::acquire(root)?;
    let held: Vec<Lease> = registry.leases()?.into_iter().map(|(_, lease)| lease).collect();
    let wanted = Lease { scope: scope.into(), leaf: leaf.into(), globs: globs.to_vec(), pid: Some(std::process::id()) };
    let found = conflicts(&wanted, &held);
    if !found.is_empty() {
        return Ok(ClaimOutcome::Refused(found));
    }
    let path = registry.directory.join(super::record_name(scope, leaf));
    pipeline::write_atomically(&path, &render_record(&wanted), "lease record")?;
    Ok(ClaimOutcome::Claimed(wanted.globs))
}

/// Removes every lease of `scope` (or only `scope/leaf`); returns how many.
pub fn release(root: &Path, scope: &str, leaf: Option<&str>) -> Result<usize, RegistryError> {
    let registry = Locked::acquire(root)?;
    let mut released = 0;
    for (path, lease) in registry.leases()? {
        if lease.scope != scope || leaf.is_some_and(|leaf| lease.leaf != leaf) {
            continue;
        }
        match fs::remove_file(&path) {
            Ok(()) => released += 1,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(RegistryError::Io(path.display().to_string(), error)),
        }
    }
    Ok(released)
}
