//! The few /proc facts the containment sweep needs: this process's
//! children, and a child's process group, session and open pipes.
//! Only ever asked about our own unreaped children, whose pids cannot be
//! reused while we look.

use std::fs::{self, File};
use std::os::unix::fs::FileExt;
use std::sync::OnceLock;

use rustix::process::Pid;

/// The children of this process's main thread: where the kernel re-parents
/// every orphan of a child subreaper (its first live thread), so every check
/// descendant we adopted is listed here. Check leaders are children of the
/// worker threads that spawned them and are not listed; they are tracked by
/// the registry instead. Empty when the kernel lacks `CONFIG_PROC_CHILDREN`.
pub fn children() -> Vec<Pid> {
    // Opened once: a read from offset 0 of the open file lists the children
    // as they are now, at a fraction of the cost of opening it per check.
    static LIST: OnceLock<Option<File>> = OnceLock::new();
    let list = LIST.get_or_init(|| {
        File::open(format!("/proc/self/task/{}/children", rustix::process::getpid().as_raw_nonzero())).ok()
    });
    let Some(list) = list else { return Vec::new() };
    let mut buffer = vec![0; 4096];
    loop {
        let Ok(length) = list.read_at(&mut buffer, 0) else { return Vec::new() };
        if length < buffer.len() {
            buffer.truncate(length);
            break;
        }
        // Read again whole into a larger buffer: the list is one snapshot.
        buffer.resize(buffer.len() * 2, 0);
    }
    let text = String::from_utf8_lossy(&buffer);
    text.split_ascii_whitespace().filter_map(|pid| pid.parse().ok()).filter_map(Pid::from_raw).collect()
}

pub struct ProcessInfo {
    pub group: i32,
    pub session: i32,
}

/// Fields 5 and 6 of `/proc/PID/stat`; the command name before them may
/// hold spaces and parentheses, so parsing starts after its last `)`.
pub fn info(pid: Pid) -> Option<ProcessInfo> {
    let stat = fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero())).ok()?;
    let mut fields = stat.rsplit_once(')')?.1.split_ascii_whitespace();
    let (_state, _parent) = (fields.next()?, fields.next()?);
    let group = fields.next()?.parse().ok()?;
    let session = fields.next()?.parse().ok()?;
    Some(ProcessInfo { group, session })
}

/// True when `pid` holds a descriptor for the pipe with inode `inode`.
pub fn holds_pipe(pid: Pid, inodes: &[u64]) -> bool {
    let Ok(descriptors) = fs::read_dir(format!("/proc/{}/fd", pid.as_raw_nonzero())) else { return false };
    descriptors.flatten().filter_map(|fd| fs::read_link(fd.path()).ok()).any(|target| {
        let target = target.to_string_lossy();
        target
            .strip_prefix("pipe:[")
            .and_then(|rest| rest.strip_suffix(']'))
            .and_then(|inode| inode.parse::<u64>().ok())
            .is_some_and(|inode| inodes.contains(&inode))
    })
}
