//! Durable file primitives shared by every module that keeps state on disk
//! (ledgers, approvals, leases, sessions, dispatch and hook state, agent
//! settings): atomic replacement, stable reads, the Node-compatible lock
//! file, the locked read-modify-write, and real directories inside a root.
//! Each owning module keeps its own rules about what it reads and writes;
//! this layer only knows how to do it safely, and nothing of `.unlazy/`.

mod directory;
mod lock;
mod read;
mod replace;
mod update;

pub use directory::{
    check_creatable, ensure_real_directory, inspect_directory, present_but_not_real, real_directory_inside, Directory,
};
pub use lock::FileLock;
pub use read::{read_stable, read_stable_at, ReadRefusal};
pub use replace::{give_to_owner_of, parent_directory, remove_stale_temp_files, replace_file, temp_file_target};
pub use update::{update_locked, update_locked_then, Change};
