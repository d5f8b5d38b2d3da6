//! Reading a state file only when it is one stable regular file.

use std::fs;
use std::io::{self, Read};
use std::path::Path;

use super::sys::{self, Access, Base, FileId, Kind, Opened};

/// Why `read_stable` refused a file.
#[derive(Debug)]
pub enum ReadRefusal {
    /// The name is a symbolic link (never followed).
    Link,
    /// A directory, FIFO, socket or device: not a regular file.
    NotRegular,
    /// More than one hard link.
    Linked,
    /// Replaced or unlinked while it was being read.
    Changed,
    TooLarge,
    Io(io::Error),
}

/// A whole file read by `read_stable`, with the metadata and identity of
/// the opened file.
pub struct StableRead {
    pub bytes: Vec<u8>,
    pub metadata: fs::Metadata,
    pub id: FileId,
}

/// Reads `path` when it is one stable regular file: the final name is not
/// followed if it is a link, a FIFO cannot block the read, there is exactly
/// one hard link, at most `max_bytes`, and the name still refers to the same
/// file (its file id) after the read. `Ok(None)` when nothing is there.
pub fn read_stable(path: &Path, max_bytes: u64) -> Result<Option<StableRead>, ReadRefusal> {
    read_stable_at(sys::working_directory(), path, max_bytes)
}

impl super::OpenDirectory {
    /// `read_stable` of `name` in this directory: the name is looked up in
    /// the directory held, whatever its path names meanwhile.
    pub fn read_stable(&self, name: &std::ffi::OsStr, max_bytes: u64) -> Result<Option<StableRead>, ReadRefusal> {
        read_stable_at(self.dir().base(), Path::new(name), max_bytes)
    }
}

fn read_stable_at(base: Base<'_>, name: &Path, max_bytes: u64) -> Result<Option<StableRead>, ReadRefusal> {
    let file = match sys::open_no_follow(base, name, Access::Read).map_err(ReadRefusal::Io)? {
        Opened::File(file) => file,
        Opened::Missing => return Ok(None),
        Opened::Link => return Err(ReadRefusal::Link),
    };
    let (opened, metadata) = sys::file_stat_and_metadata(&file).map_err(ReadRefusal::Io)?;
    if opened.kind != Kind::File {
        return Err(ReadRefusal::NotRegular);
    }
    match opened.links {
        // Unlinked after the open: an atomic replacement just happened.
        0 => return Err(ReadRefusal::Changed),
        1 => {}
        _ => return Err(ReadRefusal::Linked),
    }
    if metadata.len() > max_bytes {
        return Err(ReadRefusal::TooLarge);
    }
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    file.take(max_bytes + 1).read_to_end(&mut bytes).map_err(ReadRefusal::Io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(ReadRefusal::TooLarge);
    }
    match sys::stat_no_follow(base, name) {
        Ok(Some(named)) if named.id == opened.id => Ok(Some(StableRead { bytes, metadata, id: opened.id })),
        _ => Err(ReadRefusal::Changed),
    }
}
