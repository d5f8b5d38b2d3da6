//! Confined checks (`--sandbox`): on Linux, each check runs in private user,
//! network, mount and IPC namespaces with a session keyring of its own,
//! under a Landlock domain that lets it write only under its ledger's
//! repository (its fence), into its own fresh `TMPDIR` and to a few
//! devices, while it may read and execute everywhere the user can. In its
//! mount namespace every mount but the fence and the TMPDIR is read-only,
//! so what Landlock does not govern (changing modes, owners, times and
//! extended attributes) fails there too, and the check keeps no
//! capability across its exec, so it cannot undo that. Everything is
//! prepared in the parent; the child only makes system calls on what was
//! prepared (it runs between fork and exec). Anything unavailable fails
//! the run closed: a check never runs unconfined when confinement was
//! asked for.

#[cfg(target_os = "linux")]
use std::io;
use std::path::{Path, PathBuf};

/// Why the run cannot confine its checks.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SandboxError {
    /// The machine cannot confine a check.
    #[error("sandbox unavailable: {0}")]
    Unavailable(String),
    /// A fence that would leave what it must protect open to the checks.
    #[error(
        "--sandbox cannot confine checks to {}: {reason}; keep the ledger in a repository of its own (a directory \
         holding .git or .unlazy)",
        .fence.display()
    )]
    Fence { fence: PathBuf, reason: String },
}

/// A place a fence must never hold: the home directory, the approval store,
/// the receipt store.
#[derive(Debug, Clone)]
pub struct Protected {
    /// What it is, as the refusal names it ("the home directory").
    pub what: &'static str,
    pub path: PathBuf,
}

/// The tree one check may write to besides its TMPDIR: its ledger's
/// repository, canonical, and checked to be neither `/` nor anything
/// holding a `Protected` place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteRoot(PathBuf);

impl WriteRoot {
    /// Checks `root` (a ledger's repository) as a fence. Protected places
    /// are compared as they resolve now, also when they do not exist yet:
    /// a check could otherwise create a store inside its fence.
    pub fn new(root: &Path, protected: &[Protected]) -> Result<WriteRoot, SandboxError> {
        // Canonical as `paths::real_path` spells the protected places (on
        // Windows without `\\?\`), so the two compare.
        let fence = dunce::canonicalize(root).map_err(|error| SandboxError::Fence {
            fence: root.to_path_buf(),
            reason: format!("it cannot be resolved ({error})"),
        })?;
        let refuse = |reason: String| Err(SandboxError::Fence { fence: fence.clone(), reason });
        if fence.parent().is_none() {
            return refuse("it is the file system root".into());
        }
        for place in protected {
            let resolved = crate::paths::real_path(&place.path);
            if resolved == fence {
                return refuse(format!("it is {}", place.what));
            }
            if resolved.starts_with(&fence) {
                return refuse(format!("it holds {} {}", place.what, resolved.display()));
            }
        }
        Ok(WriteRoot(fence))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

/// What this run confines checks with, probed once before any runs.
/// Elsewhere than on Linux none is ever made: `prepare` refuses.
#[derive(Debug, Clone)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub struct Confinement {
    #[cfg(target_os = "linux")]
    abi: landlock::ABI,
}

impl Confinement {
    /// Probes Landlock, then puts a whole confinement up once, fenced to
    /// `fence`, in a child that exits at once: every step a check's
    /// confinement takes must work before anything runs.
    pub fn prepare(fence: &WriteRoot) -> Result<Confinement, SandboxError> {
        #[cfg(target_os = "linux")]
        {
            let abi = linux::best_abi().ok_or_else(|| {
                SandboxError::Unavailable("the kernel has no Landlock (not built in, or not enabled at boot)".into())
            })?;
            let confinement = Confinement { abi };
            linux::probe(&confinement, fence).map_err(SandboxError::Unavailable)?;
            Ok(confinement)
        }
        #[cfg(windows)]
        {
            let _ = fence;
            Err(SandboxError::Unavailable(
                "confinement is not available on Windows yet (SECURITY.md has the plan: an AppContainer, or a \
                 restricted token and a job); gate-check never runs a check unconfined when --sandbox asks for \
                 confinement"
                    .into(),
            ))
        }
        #[cfg(all(not(target_os = "linux"), not(windows)))]
        {
            let _ = fence;
            Err(SandboxError::Unavailable(
                "confinement needs Linux (Landlock and user namespaces); gate-check never runs a check unconfined \
                 when --sandbox asks for confinement"
                    .into(),
            ))
        }
    }

    /// The Landlock ABI version in use.
    pub fn landlock_abi(&self) -> u8 {
        #[cfg(target_os = "linux")]
        {
            linux::abi_number(self.abi)
        }
        #[cfg(not(target_os = "linux"))]
        {
            0
        }
    }

    /// The fence of one check: its own TMPDIR and the ruleset allowing
    /// writes there and under `root`. Dropping it removes the TMPDIR.
    #[cfg(target_os = "linux")]
    pub(super) fn fence(&self, root: &WriteRoot) -> io::Result<linux::Fence> {
        linux::Fence::new(self, root)
    }
}

#[cfg(target_os = "linux")]
pub(super) mod linux {
    use super::*;

    use std::ffi::{CStr, CString};
    use std::os::fd::{AsRawFd, OwnedFd, RawFd};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    use landlock::{
        Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
        Scope, ABI,
    };
    use nix::libc;
    use rustix::mount::{MountPropagationFlags, MoveMountFlags, OpenTreeFlags};
    use rustix::thread::{CapabilitiesSecureBits, UnshareFlags};

    /// Every ABI this build knows, newest first.
    const ABIS: [ABI; 10] = [ABI::V10, ABI::V9, ABI::V8, ABI::V7, ABI::V6, ABI::V5, ABI::V4, ABI::V3, ABI::V2, ABI::V1];

    /// Devices a shell and ordinary tools open for writing. A device stays
    /// writable on a read-only mount, so the mount namespace leaves them be.
    const DEVICES: [&str; 6] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"];

    pub fn abi_number(abi: ABI) -> u8 {
        ABIS.iter().position(|known| *known == abi).map_or(0, |at| (ABIS.len() - at) as u8)
    }

    /// A ruleset handling every file-system right of `abi` (and, from ABI
    /// 6, scoping signals and abstract Unix sockets to the check's own
    /// domain), refusing to be weaker than asked.
    fn ruleset(abi: ABI) -> Result<landlock::RulesetCreated, landlock::RulesetError> {
        let ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(abi))?;
        let ruleset = if abi >= ABI::V6 { ruleset.scope(Scope::from_all(abi))? } else { ruleset };
        ruleset.create()
    }

    /// The kernel's Landlock ABI version, 0 without Landlock.
    fn kernel_abi() -> u8 {
        const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
        // SAFETY: with a null attribute and size 0 this call only returns
        // the ABI version (or an error); it reads and writes no memory.
        let version = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<u8>(),
                0usize,
                LANDLOCK_CREATE_RULESET_VERSION,
            )
        };
        u8::try_from(version.max(0)).unwrap_or(u8::MAX)
    }

    /// The newest ABI both this build and the kernel know, if the kernel
    /// then enforces every right of it (a ruleset refusing to be weaker).
    pub fn best_abi() -> Option<ABI> {
        let kernel = kernel_abi();
        ABIS.into_iter().filter(|abi| abi_number(*abi) <= kernel).find(|abi| ruleset(*abi).is_ok())
    }

    /// What a confined child writes into its own id maps: its ids, mapped
    /// to themselves, so files it creates keep their owner.
    #[derive(Clone)]
    struct IdMaps {
        uid_map: String,
        gid_map: String,
    }

    impl IdMaps {
        fn own() -> IdMaps {
            let (uid, gid) = (rustix::process::getuid().as_raw(), rustix::process::getgid().as_raw());
            IdMaps { uid_map: format!("{uid} {uid} 1\n"), gid_map: format!("{gid} {gid} 1\n") }
        }
    }

    /// A tree that stays writable in the check's mount namespace, and the
    /// identity it had when the fence was made: the child mounts exactly
    /// that directory again, or fails.
    #[derive(Clone)]
    struct Writable {
        path: CString,
        device: u64,
        inode: u64,
    }

    impl Writable {
        fn new(path: &Path) -> io::Result<Writable> {
            let metadata = std::fs::metadata(path)?;
            let path = CString::new(path.as_os_str().as_bytes())
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))?;
            Ok(Writable { path, device: metadata.dev(), inode: metadata.ino() })
        }
    }

    /// The steps of a confinement, in the order the child takes them; a
    /// failure names its step.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Step {
        Descriptors,
        Namespaces,
        Keyring,
        Mounts,
        Privileges,
        Landlock,
    }

    impl Step {
        const ALL: [Step; 6] =
            [Step::Descriptors, Step::Namespaces, Step::Keyring, Step::Mounts, Step::Privileges, Step::Landlock];

        fn doing(self) -> &'static str {
            match self {
                Step::Descriptors => "close the inherited descriptors (close_range)",
                Step::Namespaces => "create private user, network, mount and IPC namespaces",
                Step::Keyring => "give the check a session keyring of its own",
                Step::Mounts => "make every mount but the fence and the TMPDIR read-only",
                Step::Privileges => "drop the check's capabilities (no_new_privs, securebits)",
                Step::Landlock => "apply the Landlock domain",
            }
        }
    }

    fn write_file(path: &CStr, bytes: &[u8]) -> io::Result<()> {
        let file = rustix::fs::open(path, rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC, 0.into())?;
        let written = rustix::io::write(&file, bytes)?;
        if written == bytes.len() {
            Ok(())
        } else {
            Err(io::Error::from(io::ErrorKind::WriteZero))
        }
    }

    /// Marks every descriptor above stderr close-on-exec: whatever
    /// gate-check inherited without that flag (a file, a socket) never
    /// reaches the check. Marked, not closed, so the descriptors the
    /// confinement itself still uses stay open until the exec.
    fn close_inherited_on_exec() -> io::Result<()> {
        // SAFETY: a plain system call on this process's descriptor table.
        let marked = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC) };
        if marked == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Moves the calling process, alone and single-threaded, into new user,
    /// network, mount and IPC namespaces, its own ids mapped to themselves.
    /// The network namespace's loopback is down, so nothing is reachable;
    /// the IPC namespace's System V objects and message queues end with it.
    fn enter_namespaces(maps: &IdMaps) -> io::Result<()> {
        let flags = UnshareFlags::NEWUSER | UnshareFlags::NEWNET | UnshareFlags::NEWNS | UnshareFlags::NEWIPC;
        // SAFETY: called in a freshly forked, single-threaded child that
        // shares no file table or fs context with another thread.
        unsafe { rustix::thread::unshare_unsafe(flags)? };
        // An unprivileged process may map only its own ids, and only after
        // giving up setgroups.
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", maps.uid_map.as_bytes())?;
        write_file(c"/proc/self/gid_map", maps.gid_map.as_bytes())
    }

    /// Replaces the session keyring inherited from the caller with a new,
    /// empty one, so the check can neither read nor add to the caller's
    /// keys. (The user keyrings belong to the new user namespace already.)
    /// A kernel built without keys has none to share.
    fn join_own_session_keyring() -> io::Result<()> {
        const KEYCTL_JOIN_SESSION_KEYRING: libc::c_long = 1;
        // SAFETY: with a null name the kernel reads no memory of ours; it
        // makes an anonymous keyring the session keyring of this process.
        let joined = unsafe { libc::syscall(libc::SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, std::ptr::null::<u8>()) };
        match joined {
            0.. => Ok(()),
            _ if io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }

    /// In the check's own mount namespace: makes every mount read-only but
    /// `writable`, which are mounted again, as they were, on top of
    /// themselves; then enters `cwd` again, so the check's working
    /// directory is on those mounts, not on the read-only ones under them.
    fn remount_read_only(writable: &[Writable; 2], cwd: &CStr) -> io::Result<()> {
        use rustix::fs::CWD;
        // First, no mount event crosses between this namespace and the
        // caller's: a mount made outside during the check does not appear
        // here writable, and nothing done here shows outside.
        rustix::mount::mount_change(c"/", MountPropagationFlags::PRIVATE | MountPropagationFlags::REC)?;
        // Copies of the writable trees (with everything mounted under
        // them), taken while they are still writable; detached, so the
        // read-only pass below does not reach them.
        let clone = OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::AT_RECURSIVE | OpenTreeFlags::OPEN_TREE_CLOEXEC;
        let copies = [
            rustix::mount::open_tree(CWD, writable[0].path.as_c_str(), clone)?,
            rustix::mount::open_tree(CWD, writable[1].path.as_c_str(), clone)?,
        ];
        for (tree, copy) in writable.iter().zip(&copies) {
            let stat = rustix::fs::fstat(copy)?;
            if stat.st_dev != tree.device || stat.st_ino != tree.inode {
                // The path names another directory than the fence was made for.
                return Err(io::Error::from_raw_os_error(libc::ESTALE));
            }
        }
        let read_only =
            libc::mount_attr { attr_set: libc::MOUNT_ATTR_RDONLY, attr_clr: 0, propagation: 0, userns_fd: 0 };
        // SAFETY: `read_only` is a valid `mount_attr` of the size passed;
        // the kernel only reads it.
        let set = unsafe {
            libc::syscall(
                libc::SYS_mount_setattr,
                libc::AT_FDCWD,
                c"/".as_ptr(),
                libc::AT_RECURSIVE,
                &read_only as *const libc::mount_attr,
                std::mem::size_of::<libc::mount_attr>(),
            )
        };
        if set != 0 {
            return Err(io::Error::last_os_error());
        }
        for (tree, copy) in writable.iter().zip(&copies) {
            rustix::mount::move_mount(copy, c"", CWD, tree.path.as_c_str(), MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH)?;
        }
        rustix::process::chdir(cwd)?;
        Ok(())
    }

    /// The check keeps no capability across its exec, even as root (whose
    /// capabilities in its own user namespace would let it make the mounts
    /// writable again), and gains none from set-user-id programs.
    fn drop_privileges() -> io::Result<()> {
        rustix::thread::set_no_new_privs(true)?;
        rustix::thread::set_capabilities_secure_bits(
            CapabilitiesSecureBits::NO_ROOT | CapabilitiesSecureBits::NO_ROOT_LOCKED,
        )?;
        Ok(())
    }

    fn restrict_self(ruleset: RawFd) -> io::Result<()> {
        // SAFETY: a plain system call on the fence's ruleset descriptor,
        // open in the parent (and so in this child) for the spawn;
        // `landlock_restrict_self(fd, 0)` reads no memory of ours.
        let restricted = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0) };
        if restricted == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Puts a whole confinement up once, fenced to `fence`, in a forked
    /// child that exits at once; the error names the step that failed.
    pub fn probe(confinement: &Confinement, fence: &WriteRoot) -> Result<(), String> {
        use nix::sys::wait::{waitpid, WaitStatus};
        use nix::unistd::{fork, ForkResult};
        let prepared = Fence::new(confinement, fence).map_err(|error| format!("cannot prepare a fence: {error}"))?;
        let steps = prepared.steps(fence.path()).map_err(|error| format!("cannot prepare a fence: {error}"))?;
        let (reader, writer) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
            .map_err(|error| format!("cannot prepare a fence: {error}"))?;
        // SAFETY: the child only makes system calls on memory prepared
        // before the fork, then leaves with `_exit`.
        match unsafe { fork() }.map_err(|error| format!("cannot fork: {error}"))? {
            ForkResult::Child => {
                let code = match steps.confine_self() {
                    Ok(()) => 0,
                    Err((step, error)) => {
                        let errno = error.raw_os_error().unwrap_or(libc::EIO);
                        let mut report = [0u8; 5];
                        report[0] = step as u8;
                        report[1..].copy_from_slice(&errno.to_ne_bytes());
                        let _ = rustix::io::write(&writer, &report);
                        1
                    }
                };
                // SAFETY: ends the child without running the parent's exit handlers.
                unsafe { libc::_exit(code) }
            }
            ForkResult::Parent { child } => {
                drop(writer);
                let status = waitpid(child, None).map_err(|error| format!("cannot wait for the probe: {error}"))?;
                let mut report = [0u8; 5];
                let read = rustix::io::read(&reader, &mut report).unwrap_or(0);
                match (status, read) {
                    (WaitStatus::Exited(_, 0), _) => Ok(()),
                    (_, 5) => {
                        let step = Step::ALL.get(usize::from(report[0])).copied().unwrap_or(Step::Landlock);
                        let errno = i32::from_ne_bytes([report[1], report[2], report[3], report[4]]);
                        Err(format!("cannot {}: {}", step.doing(), io::Error::from_raw_os_error(errno)))
                    }
                    (other, _) => Err(format!("the probe ended as {other:?}")),
                }
            }
        }
    }

    /// A check's private TMPDIR (0700), removed when dropped, also when
    /// the fence or the spawn failed for want of descriptors: an empty one
    /// goes with one `rmdir`, which needs none.
    struct PrivateTmp(PathBuf);

    impl PrivateTmp {
        fn new() -> io::Result<PrivateTmp> {
            let made = tempfile::Builder::new()
                .prefix("gate-check-sandbox-")
                .permissions(std::fs::Permissions::from_mode(0o700))
                .tempdir()?;
            Ok(PrivateTmp(made.keep()))
        }

        /// Removes it: a used one whole (a descriptor per level, which
        /// other checks may hold all of), then its emptied top once more.
        /// False when some of it is still there.
        fn remove(&self) -> bool {
            if std::fs::remove_dir(&self.0).is_err() {
                let _ = std::fs::remove_dir_all(&self.0);
                let _ = std::fs::remove_dir(&self.0);
            }
            std::fs::symlink_metadata(&self.0).is_err()
        }
    }

    impl Drop for PrivateTmp {
        fn drop(&mut self) {
            self.remove();
        }
    }

    /// One check's confinement, made in the parent before the spawn.
    pub struct Fence {
        /// The check's private TMPDIR, removed when the fence is dropped.
        tmpdir: PrivateTmp,
        ruleset: OwnedFd,
        maps: IdMaps,
        /// The fence, then the TMPDIR.
        writable: [Writable; 2],
    }

    impl Fence {
        pub fn new(confinement: &Confinement, root: &WriteRoot) -> io::Result<Fence> {
            let tmpdir = PrivateTmp::new()?;
            let abi = confinement.abi;
            let landlock = |error: landlock::RulesetError| io::Error::other(format!("Landlock: {error}"));
            let mut ruleset = ruleset(abi).map_err(landlock)?;
            let beneath = |path: &Path, access| -> io::Result<PathBeneath<PathFd>> {
                let fd = PathFd::new(path).map_err(|error| io::Error::other(format!("{}: {error}", path.display())))?;
                Ok(PathBeneath::new(fd, access))
            };
            ruleset = ruleset.add_rule(beneath(Path::new("/"), AccessFs::from_read(abi))?).map_err(landlock)?;
            for writable in [root.path(), tmpdir.0.as_path()] {
                ruleset = ruleset.add_rule(beneath(writable, AccessFs::from_all(abi))?).map_err(landlock)?;
            }
            for device in DEVICES.iter().map(Path::new).filter(|device| device.exists()) {
                ruleset = ruleset.add_rule(beneath(device, AccessFs::from_file(abi))?).map_err(landlock)?;
            }
            let ruleset = Option::<OwnedFd>::from(ruleset).ok_or_else(|| io::Error::other("Landlock: no ruleset"))?;
            let writable = [Writable::new(root.path())?, Writable::new(&tmpdir.0)?];
            Ok(Fence { tmpdir, ruleset, maps: IdMaps::own(), writable })
        }

        pub fn tmpdir(&self) -> &Path {
            &self.tmpdir.0
        }

        /// Removes the check's TMPDIR now that it has ended; the path when
        /// some of it is still there, to be removed at the end of the run.
        pub fn remove_tmpdir(&self) -> Option<PathBuf> {
            (!self.tmpdir.remove()).then(|| self.tmpdir.0.clone())
        }

        /// What the child does to itself before it execs in `cwd`; it
        /// borrows the ruleset by number, so the fence must outlive the
        /// spawn.
        pub fn steps(&self, cwd: &Path) -> io::Result<ChildSteps> {
            let cwd = CString::new(cwd.as_os_str().as_bytes())
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))?;
            Ok(ChildSteps {
                ruleset: self.ruleset.as_raw_fd(),
                maps: self.maps.clone(),
                writable: self.writable.clone(),
                cwd,
            })
        }
    }

    /// A fence's work in the child, owned so it can move into the spawn.
    pub struct ChildSteps {
        ruleset: RawFd,
        maps: IdMaps,
        writable: [Writable; 2],
        cwd: CString,
    }

    impl ChildSteps {
        /// Confines the calling process: run in the child between fork and
        /// exec, so it only makes system calls on what it holds.
        pub fn confine_self(&self) -> Result<(), (Step, io::Error)> {
            let at = |step: Step| move |error: io::Error| (step, error);
            close_inherited_on_exec().map_err(at(Step::Descriptors))?;
            enter_namespaces(&self.maps).map_err(at(Step::Namespaces))?;
            join_own_session_keyring().map_err(at(Step::Keyring))?;
            remount_read_only(&self.writable, &self.cwd).map_err(at(Step::Mounts))?;
            drop_privileges().map_err(at(Step::Privileges))?;
            restrict_self(self.ruleset).map_err(at(Step::Landlock))
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn abi_numbers_follow_the_kernels() {
            assert_eq!(abi_number(ABI::V1), 1);
            assert_eq!(abi_number(ABI::V7), 7);
            assert_eq!(abi_number(ABI::V10), 10);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn protected(what: &'static str, path: &Path) -> Protected {
        Protected { what, path: path.to_path_buf() }
    }

    #[test]
    fn a_fence_holding_a_protected_place_or_the_root_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let base = dunce::canonicalize(base.path()).unwrap();
        let home = base.join("home");
        let repository = home.join("repository");
        std::fs::create_dir_all(&repository).unwrap();
        let places =
            [protected("the home directory", &home), protected("the approval store", &home.join(".unlazy/approved"))];
        assert_eq!(WriteRoot::new(&repository, &places).unwrap().path(), repository);
        let refused = |root: &Path| match WriteRoot::new(root, &places) {
            Err(SandboxError::Fence { reason, .. }) => reason,
            other => panic!("{other:?}"),
        };
        assert_eq!(refused(Path::new("/")), "it is the file system root");
        assert_eq!(refused(&home), "it is the home directory");
        assert_eq!(refused(&base), format!("it holds the home directory {}", home.display()));
        // A store that does not exist yet is still inside once created.
        let store_home = base.join("other");
        std::fs::create_dir_all(&store_home).unwrap();
        let store = [protected("the receipt store", &store_home.join("not/yet"))];
        assert_eq!(
            match WriteRoot::new(&store_home, &store) {
                Err(SandboxError::Fence { reason, .. }) => reason,
                other => panic!("{other:?}"),
            },
            format!("it holds the receipt store {}", store_home.join("not").join("yet").display())
        );
    }

    // Symbolic links: Windows lets only administrators (or Developer Mode)
    // create one.
    #[cfg(unix)]
    #[test]
    fn a_store_named_through_a_dangling_link_into_the_fence_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let base = dunce::canonicalize(base.path()).unwrap();
        let repository = base.join("repo");
        std::fs::create_dir(&repository).unwrap();
        std::os::unix::fs::symlink(repository.join("receipts"), base.join("receipts")).unwrap();
        let store = [protected("the receipt store", &base.join("receipts"))];
        assert!(WriteRoot::new(&base.join("elsewhere-made-below"), &store).is_err(), "a fence that does not exist");
        std::fs::create_dir(base.join("other")).unwrap();
        assert!(WriteRoot::new(&base.join("other"), &store).is_ok(), "a fence the link does not reach");
        assert_eq!(
            match WriteRoot::new(&repository, &store) {
                Err(SandboxError::Fence { reason, .. }) => reason,
                other => panic!("{other:?}"),
            },
            format!("it holds the receipt store {}", repository.join("receipts").display())
        );
    }
}
