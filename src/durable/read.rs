//! Reading a state file only when it is one stable regular file.

use std::fs::{self, File};
use std::io::{self, Read};
use std::os::fd::BorrowedFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

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

/// A whole file read by `read_stable`, with the metadata of the opened file.
pub struct StableRead {
    pub bytes: Vec<u8>,
    pub metadata: fs::Metadata,
}

/// Reads `path` when it is one stable regular file: the final name is not
/// followed if it is a link, a FIFO cannot block the read, there is exactly
/// one hard link, at most `max_bytes`, and the name still refers to the same
/// file (device and inode) after the read. `Ok(None)` when nothing is there.
pub fn read_stable(path: &Path, max_bytes: u64) -> Result<Option<StableRead>, ReadRefusal> {
    read_stable_at(rustix::fs::CWD, path, max_bytes)
}

impl super::OpenDirectory {
    /// `read_stable` of `name` in this directory.
    pub fn read_stable(&self, name: &std::ffi::OsStr, max_bytes: u64) -> Result<Option<StableRead>, ReadRefusal> {
        read_stable_at(self.fd(), Path::new(name), max_bytes)
    }
}

/// `read_stable` of `name` inside the directory `directory` is open on: the
/// name is looked up in that directory, whatever its path names meanwhile.
pub fn read_stable_at(
    directory: BorrowedFd<'_>,
    name: &Path,
    max_bytes: u64,
) -> Result<Option<StableRead>, ReadRefusal> {
    use rustix::fs::{openat, statat, AtFlags, Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file = match openat(directory, name, flags, Mode::empty()) {
        Ok(fd) => File::from(fd),
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(rustix::io::Errno::LOOP) => return Err(ReadRefusal::Link),
        Err(error) => return Err(ReadRefusal::Io(error.into())),
    };
    let metadata = file.metadata().map_err(ReadRefusal::Io)?;
    if !metadata.file_type().is_file() {
        return Err(ReadRefusal::NotRegular);
    }
    match metadata.nlink() {
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
    // `st_dev` is signed on macOS.
    #[allow(clippy::unnecessary_cast)]
    let same_file = |named: &rustix::fs::Stat| named.st_dev as u64 == metadata.dev() && named.st_ino == metadata.ino();
    match statat(directory, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(named) if same_file(&named) => Ok(Some(StableRead { bytes, metadata })),
        _ => Err(ReadRefusal::Changed),
    }
}
