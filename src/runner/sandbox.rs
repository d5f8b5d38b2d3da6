//! Confined checks (`--sandbox`): on Linux, each check runs in a private
//! user and network namespace (no network; files keep their owner) under a
//! Landlock domain that lets it write only under the repository, into its
//! own fresh `TMPDIR` and to a few devices, while it may read and execute
//! everywhere the user can. Everything is prepared in the parent; the child
//! only makes system calls on what was prepared (it runs between fork and
//! exec). Anything unavailable fails the run closed: a check never runs
//! unconfined when confinement was asked for.

use std::io;
use std::path::{Path, PathBuf};

/// Why the run cannot confine its checks.
#[derive(Debug, Clone, thiserror::Error)]
#[error("sandbox unavailable: {0}")]
pub struct SandboxUnavailable(pub String);

/// What this run confines checks with, probed once before any runs.
/// Elsewhere than on Linux none is ever made: `prepare` refuses.
#[derive(Debug, Clone)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub struct Confinement {
    /// The only tree a check may write to (besides its TMPDIR).
    write_root: PathBuf,
    #[cfg(target_os = "linux")]
    abi: landlock::ABI,
}

impl Confinement {
    /// Probes Landlock and namespaces; `write_root` is the repository root.
    pub fn prepare(write_root: &Path) -> Result<Confinement, SandboxUnavailable> {
        #[cfg(target_os = "linux")]
        {
            let abi = linux::best_abi().ok_or_else(|| {
                SandboxUnavailable("the kernel has no Landlock (not built in, or not enabled at boot)".into())
            })?;
            linux::probe_namespaces().map_err(|error| {
                SandboxUnavailable(format!("cannot create a private user and network namespace: {error}"))
            })?;
            Ok(Confinement { write_root: write_root.to_path_buf(), abi })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = write_root;
            Err(SandboxUnavailable(
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
    /// writes there and under the root. Dropping it removes the TMPDIR.
    #[cfg(target_os = "linux")]
    pub(super) fn fence(&self) -> io::Result<linux::Fence> {
        linux::Fence::new(self)
    }
}

#[cfg(target_os = "linux")]
pub(super) mod linux {
    use super::*;

    use std::ffi::CStr;
    use std::os::fd::{AsRawFd, OwnedFd, RawFd};

    use landlock::{
        Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
        Scope, ABI,
    };
    use rustix::thread::UnshareFlags;

    /// Every ABI this build knows, newest first.
    const ABIS: [ABI; 10] = [ABI::V10, ABI::V9, ABI::V8, ABI::V7, ABI::V6, ABI::V5, ABI::V4, ABI::V3, ABI::V2, ABI::V1];

    /// Devices a shell and ordinary tools open for writing.
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
        const LANDLOCK_CREATE_RULESET_VERSION: nix::libc::c_uint = 1;
        // SAFETY: with a null attribute and size 0 this call only returns
        // the ABI version (or an error); it reads and writes no memory.
        let version = unsafe {
            nix::libc::syscall(
                nix::libc::SYS_landlock_create_ruleset,
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

    fn write_file(path: &CStr, bytes: &[u8]) -> io::Result<()> {
        let file = rustix::fs::open(path, rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC, 0.into())?;
        let written = rustix::io::write(&file, bytes)?;
        if written == bytes.len() {
            Ok(())
        } else {
            Err(io::Error::from(io::ErrorKind::WriteZero))
        }
    }

    /// Moves the calling process, alone and single-threaded, into a new
    /// user namespace (its own ids mapped to themselves) and a new network
    /// namespace, whose loopback is down: nothing is reachable.
    fn enter_namespaces(maps: &IdMaps) -> io::Result<()> {
        // SAFETY: called in a freshly forked, single-threaded child that
        // shares no file table or fs context with another thread.
        unsafe { rustix::thread::unshare_unsafe(UnshareFlags::NEWUSER | UnshareFlags::NEWNET)? };
        // An unprivileged process may map only its own ids, and only after
        // giving up setgroups.
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", maps.uid_map.as_bytes())?;
        write_file(c"/proc/self/gid_map", maps.gid_map.as_bytes())
    }

    /// Checks that this process can create the namespaces a check gets, in
    /// a forked child that exits at once.
    pub fn probe_namespaces() -> io::Result<()> {
        use nix::sys::wait::{waitpid, WaitStatus};
        use nix::unistd::{fork, ForkResult};
        let maps = IdMaps::own();
        // SAFETY: the child only makes system calls on memory prepared
        // before the fork, then leaves with `_exit`.
        match unsafe { fork() }.map_err(io::Error::from)? {
            ForkResult::Child => {
                let code = match enter_namespaces(&maps) {
                    Ok(()) => 0,
                    Err(error) => error.raw_os_error().unwrap_or(nix::libc::EIO).clamp(1, 255),
                };
                // SAFETY: ends the child without running the parent's exit handlers.
                unsafe { nix::libc::_exit(code) }
            }
            ForkResult::Parent { child } => match waitpid(child, None).map_err(io::Error::from)? {
                WaitStatus::Exited(_, 0) => Ok(()),
                WaitStatus::Exited(_, code) => Err(io::Error::from_raw_os_error(code)),
                other => Err(io::Error::other(format!("the probe ended as {other:?}"))),
            },
        }
    }

    /// One check's confinement, made in the parent before the spawn.
    pub struct Fence {
        /// The check's private TMPDIR, removed when the fence is dropped.
        tmpdir: tempfile::TempDir,
        ruleset: OwnedFd,
        maps: IdMaps,
    }

    impl Fence {
        pub fn new(confinement: &Confinement) -> io::Result<Fence> {
            let tmpdir = tempfile::Builder::new().prefix("gate-check-sandbox-").tempdir()?;
            let abi = confinement.abi;
            let landlock = |error: landlock::RulesetError| io::Error::other(format!("Landlock: {error}"));
            let mut ruleset = ruleset(abi).map_err(landlock)?;
            let beneath = |path: &Path, access| -> io::Result<PathBeneath<PathFd>> {
                let fd = PathFd::new(path).map_err(|error| io::Error::other(format!("{}: {error}", path.display())))?;
                Ok(PathBeneath::new(fd, access))
            };
            ruleset = ruleset.add_rule(beneath(Path::new("/"), AccessFs::from_read(abi))?).map_err(landlock)?;
            for writable in [confinement.write_root.as_path(), tmpdir.path()] {
                ruleset = ruleset.add_rule(beneath(writable, AccessFs::from_all(abi))?).map_err(landlock)?;
            }
            for device in DEVICES.iter().map(Path::new).filter(|device| device.exists()) {
                ruleset = ruleset.add_rule(beneath(device, AccessFs::from_file(abi))?).map_err(landlock)?;
            }
            let ruleset = Option::<OwnedFd>::from(ruleset).ok_or_else(|| io::Error::other("Landlock: no ruleset"))?;
            Ok(Fence { tmpdir, ruleset, maps: IdMaps::own() })
        }

        pub fn tmpdir(&self) -> &Path {
            self.tmpdir.path()
        }

        /// What the child does to itself; it borrows the ruleset by number,
        /// so the fence must outlive the spawn.
        pub fn steps(&self) -> ChildSteps {
            ChildSteps { ruleset: self.ruleset.as_raw_fd(), maps: self.maps.clone() }
        }
    }

    /// A fence's work in the child, owned so it can move into the spawn.
    pub struct ChildSteps {
        ruleset: RawFd,
        maps: IdMaps,
    }

    impl ChildSteps {
        /// Confines the calling process: run in the child between fork and
        /// exec, so it only makes system calls on what it holds.
        pub fn confine_self(&self) -> io::Result<()> {
            enter_namespaces(&self.maps)?;
            rustix::thread::set_no_new_privs(true)?;
            // SAFETY: a plain system call on the fence's ruleset descriptor,
            // open in the parent (and so in this child) for the spawn;
            // `landlock_restrict_self(fd, 0)` reads no memory of ours.
            let restricted = unsafe { nix::libc::syscall(nix::libc::SYS_landlock_restrict_self, self.ruleset, 0) };
            if restricted == 0 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
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
