//! Durable file primitives shared by every module that keeps state on disk
//! (ledgers, approvals, leases, sessions, dispatch and hook state, agent
//! settings): directories held open (below a repository root, through real
//! directories only), atomic replacement, stable reads, the Node-compatible
//! lock file and the locked read-modify-write. Each owning module keeps its
//! own rules about what it reads and writes; this layer only knows how to
//! do it safely, and nothing of `.unlazy/`. The platform's primitives are
//! in `sys` (`sys_unix.rs`, `sys_windows.rs`), and on Windows the access
//! control lists in `acl`.

#[cfg(windows)]
mod acl;
mod directory;
mod lock;
mod read;
mod replace;
#[cfg_attr(unix, path = "sys_unix.rs")]
#[cfg_attr(windows, path = "sys_windows.rs")]
mod sys;
mod update;

#[cfg(windows)]
pub use acl::{check_private, make_private, Exposure};
pub use directory::{
    entry_metadata, parent_directory, present_but_not_real, real_directory_inside, stat_entry, BeneathError,
    OpenDirectory,
};
pub use lock::{FileLock, LockFile};
pub use read::{read_stable, ReadRefusal, StableRead};
pub use replace::{remove_stale_temp_files, replace_file, temp_file_target, AppendError, Entry};
pub use sys::{real_path, FileId, Kind};
pub use update::{update_locked, update_locked_then, Change};
