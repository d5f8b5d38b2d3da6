//! Windows access control for this layer's files: whether a directory may
//! be written (the access token against its ACL, as `access(W_OK)` asks on
//! Unix), an ACL carried over to a file that replaces another, and the
//! owner-only privacy of the approval and receipt stores.

use std::fs::File;
use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::Path;
use std::sync::OnceLock;

use windows_sys::core::PWSTR;
use windows_sys::Win32::Foundation::{LocalFree, ERROR_ACCESS_DENIED, ERROR_SUCCESS, HLOCAL};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, ConvertStringSidToSidW, GetNamedSecurityInfoW, SetEntriesInAclW, SetNamedSecurityInfoW,
    SetSecurityInfo, EXPLICIT_ACCESS_W, NO_MULTIPLE_TRUSTEE, SET_ACCESS, SE_FILE_OBJECT, TRUSTEE_IS_SID,
    TRUSTEE_IS_USER, TRUSTEE_W,
};
use windows_sys::Win32::Security::{
    AccessCheck, DuplicateToken, GetAce, GetSecurityDescriptorControl, GetTokenInformation, SecurityImpersonation,
    TokenOwner, TokenUser, ACE_HEADER, ACL, DACL_SECURITY_INFORMATION, GENERIC_MAPPING, GROUP_SECURITY_INFORMATION,
    INHERIT_ONLY_ACE, OWNER_SECURITY_INFORMATION, PRIVILEGE_SET, PROTECTED_DACL_SECURITY_INFORMATION,
    PSECURITY_DESCRIPTOR, PSID, SE_DACL_PROTECTED, SUB_CONTAINERS_AND_OBJECTS_INHERIT, TOKEN_DUPLICATE, TOKEN_OWNER,
    TOKEN_QUERY, TOKEN_USER, UNPROTECTED_DACL_SECURITY_INFORMATION,
};
use windows_sys::Win32::Storage::FileSystem::{
    FILE_ADD_FILE, FILE_ADD_SUBDIRECTORY, FILE_ALL_ACCESS, FILE_GENERIC_EXECUTE, FILE_GENERIC_READ, FILE_GENERIC_WRITE,
};
use windows_sys::Win32::System::SystemServices::{
    ACCESS_ALLOWED_ACE_TYPE, ACCESS_ALLOWED_CALLBACK_ACE_TYPE, ACCESS_DENIED_ACE_TYPE, ACCESS_DENIED_CALLBACK_ACE_TYPE,
    ACCESS_DENIED_CALLBACK_OBJECT_ACE_TYPE, ACCESS_DENIED_OBJECT_ACE_TYPE,
};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

use super::sys::wide;

/// Accounts besides the user's own that may hold rights on a private store:
/// LocalSystem and the Administrators group, which can read every file
/// anyway, and which every profile directory (where the default stores
/// live) grants; a store the Node tool made there inherits them.
const TRUSTED_ACCOUNTS: [&str; 2] = ["S-1-5-18", "S-1-5-32-544"];

/// CREATOR OWNER: in an inheritable entry, whoever creates the entry that
/// inherits it.
const CREATOR_OWNER: &str = "S-1-3-0";

/// The entry types whose SID follows the header and access mask, and which
/// grant.
const ALLOWING: [u32; 2] = [ACCESS_ALLOWED_ACE_TYPE, ACCESS_ALLOWED_CALLBACK_ACE_TYPE];

/// The entry types that only take rights away.
const DENYING: [u32; 4] = [
    ACCESS_DENIED_ACE_TYPE,
    ACCESS_DENIED_CALLBACK_ACE_TYPE,
    ACCESS_DENIED_OBJECT_ACE_TYPE,
    ACCESS_DENIED_CALLBACK_OBJECT_ACE_TYPE,
];

/// A security descriptor Windows allocated, freed when dropped.
struct Descriptor(PSECURITY_DESCRIPTOR);

impl Drop for Descriptor {
    fn drop(&mut self) {
        // SAFETY: allocated by the system with LocalAlloc, freed once.
        unsafe { LocalFree(self.0 as HLOCAL) };
    }
}

/// The owner and DACL of the file or directory at `path` (its security
/// descriptor keeps both alive). A null DACL grants everyone everything.
fn owner_and_access_list(path: &Path) -> io::Result<(Descriptor, PSID, *mut ACL)> {
    let name = wide(path);
    let (mut owner, mut dacl, mut descriptor): (PSID, *mut ACL, PSECURITY_DESCRIPTOR) =
        (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: the name is NUL-terminated; the out pointers are valid and
    // point into the descriptor the call allocates and `Descriptor` frees.
    let status = unsafe {
        GetNamedSecurityInfoW(
            name.as_ptr(),
            SE_FILE_OBJECT,
            OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
            &mut owner,
            std::ptr::null_mut(),
            &mut dacl,
            std::ptr::null_mut(),
            &mut descriptor,
        )
    };
    if status != ERROR_SUCCESS {
        return Err(io::Error::from_raw_os_error(status as i32));
    }
    Ok((Descriptor(descriptor), owner, dacl))
}

/// A SID in its text form (`S-1-5-…`).
fn sid_text(sid: PSID) -> io::Result<String> {
    let mut text: PWSTR = std::ptr::null_mut();
    // SAFETY: `sid` is a valid SID; the call allocates `text`.
    if unsafe { ConvertSidToStringSidW(sid, &mut text) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `text` is a NUL-terminated string the call allocated.
    let length = (0..).take_while(|&index| unsafe { *text.add(index) } != 0).count();
    // SAFETY: `length` characters precede the NUL.
    let converted = String::from_utf16_lossy(unsafe { std::slice::from_raw_parts(text, length) });
    // SAFETY: allocated by the call with LocalAlloc, freed once.
    unsafe { LocalFree(text as HLOCAL) };
    Ok(converted)
}

/// This process's access token, for queries.
fn process_token(access: u32) -> io::Result<OwnedHandle> {
    let mut token = std::ptr::null_mut();
    // SAFETY: the pseudo-handle of this process; `token` receives a new handle.
    if unsafe { OpenProcessToken(GetCurrentProcess(), access, &mut token) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new handle that nothing else owns.
    Ok(unsafe { OwnedHandle::from_raw_handle(token) })
}

/// The token's user and the owner it gives new files (an elevated
/// administrator's files belong to the Administrators group), as SID texts.
/// A process never changes its token's user, so this is read once.
fn me() -> io::Result<&'static (String, String)> {
    static ME: OnceLock<Result<(String, String), String>> = OnceLock::new();
    let read = || -> io::Result<(String, String)> {
        let token = process_token(TOKEN_QUERY)?;
        let query = |class| -> io::Result<Vec<u8>> {
            let mut buffer = vec![0u8; 256];
            loop {
                let mut needed = 0u32;
                // SAFETY: the buffer is writable for its length.
                let ok = unsafe {
                    GetTokenInformation(
                        token.as_raw_handle(),
                        class,
                        buffer.as_mut_ptr().cast(),
                        buffer.len() as u32,
                        &mut needed,
                    )
                };
                if ok != 0 {
                    return Ok(buffer);
                }
                if needed as usize <= buffer.len() {
                    return Err(io::Error::last_os_error());
                }
                buffer.resize(needed as usize, 0);
            }
        };
        let user = query(TokenUser)?;
        let owner = query(TokenOwner)?;
        // SAFETY: the buffers hold a TOKEN_USER and a TOKEN_OWNER, whose SIDs
        // point into the same buffers.
        let (user, owner) = unsafe {
            (
                sid_text((*user.as_ptr().cast::<TOKEN_USER>()).User.Sid)?,
                sid_text((*owner.as_ptr().cast::<TOKEN_OWNER>()).Owner)?,
            )
        };
        Ok((user, owner))
    };
    ME.get_or_init(|| read().map_err(|error| error.to_string()))
        .as_ref()
        .map_err(|message| io::Error::other(message.clone()))
}

/// Whether this process's token may create files and directories in the
/// directory at `path`, as its ACL decides (the read-only attribute does
/// not stop that on Windows).
pub fn check_writable(path: &Path) -> io::Result<()> {
    let name = wide(path);
    let mut needed = 0u32;
    let information = OWNER_SECURITY_INFORMATION | GROUP_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION;
    // SAFETY: a size query: no buffer yet.
    unsafe {
        windows_sys::Win32::Security::GetFileSecurityW(name.as_ptr(), information, std::ptr::null_mut(), 0, &mut needed)
    };
    let mut descriptor = vec![0u8; needed.max(1) as usize];
    // SAFETY: the buffer is writable for its length.
    let read = unsafe {
        windows_sys::Win32::Security::GetFileSecurityW(
            name.as_ptr(),
            information,
            descriptor.as_mut_ptr().cast(),
            descriptor.len() as u32,
            &mut needed,
        )
    };
    if read == 0 {
        return Err(io::Error::last_os_error());
    }
    let token = process_token(TOKEN_QUERY | TOKEN_DUPLICATE)?;
    let mut impersonation = std::ptr::null_mut();
    // SAFETY: the token is open with duplicate access.
    if unsafe { DuplicateToken(token.as_raw_handle(), SecurityImpersonation, &mut impersonation) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new handle that nothing else owns.
    let impersonation = unsafe { OwnedHandle::from_raw_handle(impersonation) };
    let mapping = GENERIC_MAPPING {
        GenericRead: FILE_GENERIC_READ,
        GenericWrite: FILE_GENERIC_WRITE,
        GenericExecute: FILE_GENERIC_EXECUTE,
        GenericAll: FILE_ALL_ACCESS,
    };
    // SAFETY: an all-zero privilege set is valid output space.
    let mut privileges: PRIVILEGE_SET = unsafe { std::mem::zeroed() };
    let mut privileges_length = std::mem::size_of::<PRIVILEGE_SET>() as u32;
    let (mut granted, mut allowed) = (0u32, 0);
    // SAFETY: every pointer is valid for the call; the descriptor was read above.
    let checked = unsafe {
        AccessCheck(
            descriptor.as_mut_ptr().cast(),
            impersonation.as_raw_handle(),
            FILE_ADD_FILE | FILE_ADD_SUBDIRECTORY,
            &mapping,
            &mut privileges,
            &mut privileges_length,
            &mut granted,
            &mut allowed,
        )
    };
    if checked == 0 {
        return Err(io::Error::last_os_error());
    }
    if allowed == 0 {
        return Err(io::Error::from_raw_os_error(ERROR_ACCESS_DENIED as i32));
    }
    Ok(())
}

/// Sets the DACL of the file at `from` on `to`, protected from inheritance
/// if it was protected there. Best effort: where it cannot be read or set,
/// `to` keeps the one it inherited.
pub fn copy_access_list(from: &Path, to: &File) {
    let Ok((descriptor, _, dacl)) = owner_and_access_list(from) else {
        return;
    };
    let (mut control, mut revision) = (0u16, 0u32);
    // SAFETY: the descriptor is valid; the out pointers are writable.
    if unsafe { GetSecurityDescriptorControl(descriptor.0, &mut control, &mut revision) } == 0 {
        return;
    }
    let inheritance = if control & SE_DACL_PROTECTED != 0 {
        PROTECTED_DACL_SECURITY_INFORMATION
    } else {
        UNPROTECTED_DACL_SECURITY_INFORMATION
    };
    // SAFETY: the handle was opened with WRITE_DAC; the DACL lives in
    // `descriptor`, alive for the call.
    unsafe {
        SetSecurityInfo(
            to.as_raw_handle(),
            SE_FILE_OBJECT,
            DACL_SECURITY_INFORMATION | inheritance,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            dacl,
            std::ptr::null(),
        )
    };
}

/// Why a store entry is not private.
#[derive(Debug)]
pub enum Exposure {
    /// Owned by someone else than this user (or the owner this user's
    /// token gives new files).
    Owner,
    /// It has no DACL at all, which grants everyone everything.
    NoAccessList,
    /// Its DACL grants rights to this account (a SID), which is neither the
    /// user, SYSTEM nor the Administrators group.
    Grants(String),
    /// Its DACL holds an entry of a type this check cannot judge (an object
    /// or compound entry), which might grant anything.
    UnknownEntry(u8),
    /// Its security could not be read.
    Io(io::Error),
}

/// Checks that the file or directory at `path` is private: owned by this
/// user, and its DACL grants nothing to any account but the user, SYSTEM
/// and the Administrators group, neither on it nor, through inheritable
/// entries, on what is made in it (where CREATOR OWNER stands for this
/// user). Denying entries only take rights away and pass; an entry of any
/// other type fails closed.
pub fn check_private(path: &Path) -> Result<(), Exposure> {
    let (user, token_owner) = me().map_err(Exposure::Io)?;
    let (_descriptor, owner, dacl) = owner_and_access_list(path).map_err(Exposure::Io)?;
    let owner = sid_text(owner).map_err(Exposure::Io)?;
    if owner != *user && owner != *token_owner {
        return Err(Exposure::Owner);
    }
    // SAFETY: the DACL of a descriptor that lives to the end of this call.
    unsafe { judge_access_list(dacl, &|account| account == *user || account == *token_owner) }
}

/// Whether the DACL `dacl` (null: none) grants nothing to any account but
/// those `own` accepts, SYSTEM and Administrators, on its object or, by
/// inheritable entries, on what is made in it (see `check_private`).
///
/// # Safety
/// `dacl` is null or points to a valid ACL that outlives the call.
unsafe fn judge_access_list(dacl: *const ACL, own: &dyn Fn(&str) -> bool) -> Result<(), Exposure> {
    if dacl.is_null() {
        return Err(Exposure::NoAccessList);
    }
    // SAFETY: a non-null, valid ACL (the caller's promise).
    let count = unsafe { (*dacl).AceCount };
    for index in 0..u32::from(count) {
        let mut ace = std::ptr::null_mut();
        // SAFETY: `index` is below the ACL's count; `ace` receives a pointer into it.
        if unsafe { GetAce(dacl, index, &mut ace) } == 0 {
            return Err(Exposure::Io(io::Error::last_os_error()));
        }
        // SAFETY: every ACE starts with its header.
        let header = unsafe { *ace.cast::<ACE_HEADER>() };
        let ace_type = u32::from(header.AceType);
        if DENYING.contains(&ace_type) {
            continue;
        }
        if !ALLOWING.contains(&ace_type) {
            return Err(Exposure::UnknownEntry(header.AceType));
        }
        // SAFETY: an allowing ACE: header, access mask, then the SID.
        let (mask, sid) = unsafe { (*ace.cast::<u8>().add(4).cast::<u32>(), ace.cast::<u8>().add(8) as PSID) };
        let account = sid_text(sid).map_err(Exposure::Io)?;
        let inherit_only = u32::from(header.AceFlags) & INHERIT_ONLY_ACE != 0;
        let trusted =
            own(&account) || TRUSTED_ACCOUNTS.contains(&account.as_str()) || (inherit_only && account == CREATOR_OWNER);
        if mask != 0 && !trusted {
            return Err(Exposure::Grants(account));
        }
    }
    Ok(())
}

/// Gives the directory at `path` a DACL of its own, protected from
/// inheritance, that grants this user full access and nobody else any:
/// Windows' counterpart of mode 0700. Entries made in it inherit it.
pub fn make_private(path: &Path) -> io::Result<()> {
    let (user, _) = me()?;
    let text: Vec<u16> = user.encode_utf16().chain([0]).collect();
    let mut sid: PSID = std::ptr::null_mut();
    // SAFETY: `text` is NUL-terminated; the call allocates `sid`.
    if unsafe { ConvertStringSidToSidW(text.as_ptr(), &mut sid) } == 0 {
        return Err(io::Error::last_os_error());
    }
    let sid = Descriptor(sid);
    let entry = EXPLICIT_ACCESS_W {
        grfAccessPermissions: FILE_ALL_ACCESS,
        grfAccessMode: SET_ACCESS,
        grfInheritance: SUB_CONTAINERS_AND_OBJECTS_INHERIT,
        Trustee: TRUSTEE_W {
            pMultipleTrustee: std::ptr::null_mut(),
            MultipleTrusteeOperation: NO_MULTIPLE_TRUSTEE,
            TrusteeForm: TRUSTEE_IS_SID,
            TrusteeType: TRUSTEE_IS_USER,
            ptstrName: sid.0.cast(),
        },
    };
    let mut acl: *mut ACL = std::ptr::null_mut();
    // SAFETY: one valid entry; the call allocates `acl`.
    let status = unsafe { SetEntriesInAclW(1, &entry, std::ptr::null(), &mut acl) };
    if status != ERROR_SUCCESS {
        return Err(io::Error::from_raw_os_error(status as i32));
    }
    let acl = Descriptor(acl.cast());
    let name = wide(path);
    // SAFETY: the name is NUL-terminated and the ACL valid for the call.
    let status = unsafe {
        SetNamedSecurityInfoW(
            name.as_ptr(),
            SE_FILE_OBJECT,
            DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            acl.0.cast(),
            std::ptr::null(),
        )
    };
    if status != ERROR_SUCCESS {
        return Err(io::Error::from_raw_os_error(status as i32));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use windows_sys::Win32::Security::{
        AddAccessAllowedAceEx, AddAccessDeniedAce, AddAce, GetLengthSid, InitializeAcl, ACL_REVISION_DS,
        CONTAINER_INHERIT_ACE, OBJECT_INHERIT_ACE,
    };

    use super::*;

    /// A SID from its text, allocated by the system (and left to the end of
    /// the test process, which is short).
    fn sid(text: &str) -> PSID {
        let wide: Vec<u16> = text.encode_utf16().chain([0]).collect();
        let mut sid: PSID = std::ptr::null_mut();
        // SAFETY: a NUL-terminated SID string; the call allocates `sid`.
        assert_ne!(unsafe { ConvertStringSidToSidW(wide.as_ptr(), &mut sid) }, 0);
        sid
    }

    /// An in-memory ACL built by `build`, judged with `S-1-5-21-1-2-3-1001`
    /// as the user.
    fn judged(build: impl Fn(*mut ACL)) -> Result<(), Exposure> {
        let mut memory = vec![0u64; 128];
        let acl = memory.as_mut_ptr().cast::<ACL>();
        // SAFETY: 1 KiB of aligned, writable memory for the ACL.
        assert_ne!(unsafe { InitializeAcl(acl, 1024, ACL_REVISION_DS) }, 0);
        build(acl);
        // SAFETY: the ACL lives in `memory` for the call.
        unsafe { judge_access_list(acl, &|account| account == "S-1-5-21-1-2-3-1001") }
    }

    #[test]
    fn owner_only_entries_pass_and_any_other_grant_fails_closed() {
        let user = "S-1-5-21-1-2-3-1001";
        let allow = |acl: *mut ACL, flags: u32, sid: PSID| {
            // SAFETY: a valid ACL with room, and a valid SID.
            assert_ne!(unsafe { AddAccessAllowedAceEx(acl, ACL_REVISION_DS, flags, FILE_ALL_ACCESS, sid) }, 0);
        };
        // What a profile grants: the user, SYSTEM and Administrators, inherited by all.
        let inherited = OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE;
        assert!(judged(|acl| {
            for account in [user, "S-1-5-18", "S-1-5-32-544"] {
                allow(acl, inherited, sid(account));
            }
            // CREATOR OWNER for what is made inside: whoever makes it.
            allow(acl, INHERIT_ONLY_ACE | inherited, sid(CREATOR_OWNER));
            // A denial takes rights away from anyone.
            // SAFETY: as above.
            assert_ne!(unsafe { AddAccessDeniedAce(acl, ACL_REVISION_DS, FILE_ALL_ACCESS, sid("S-1-1-0")) }, 0);
        })
        .is_ok());
        // Everyone, on the object or only on what is made in it.
        for flags in [0, INHERIT_ONLY_ACE | OBJECT_INHERIT_ACE] {
            let verdict = judged(|acl| {
                allow(acl, 0, sid(user));
                allow(acl, flags, sid("S-1-1-0"));
            });
            assert!(matches!(verdict, Err(Exposure::Grants(ref account)) if account == "S-1-1-0"), "{flags:#x}");
        }
        // CREATOR OWNER on the object itself is an account like any other.
        assert!(judged(|acl| allow(acl, 0, sid(CREATOR_OWNER))).is_err());
        // An object entry, whose rights this judge cannot read, fails closed.
        let object = judged(|acl| {
            allow(acl, 0, sid(user));
            // An ACCESS_ALLOWED_OBJECT_ACE with no object types, laid out by
            // hand: header, mask, flags, then the SID.
            let everyone = sid("S-1-1-0");
            // SAFETY: a valid SID.
            let sid_length = unsafe { GetLengthSid(everyone) } as usize;
            let size = 12 + sid_length;
            let mut entry = vec![5u8, 0];
            entry.extend_from_slice(&(size as u16).to_le_bytes());
            entry.extend_from_slice(&FILE_ALL_ACCESS.to_le_bytes());
            entry.extend_from_slice(&0u32.to_le_bytes());
            // SAFETY: the SID is `sid_length` bytes long.
            entry.extend_from_slice(unsafe { std::slice::from_raw_parts(everyone.cast::<u8>(), sid_length) });
            // SAFETY: a valid ACL with room, and one whole entry.
            let added = unsafe { AddAce(acl, ACL_REVISION_DS, u32::MAX, entry.as_ptr().cast(), size as u32) };
            assert_ne!(added, 0);
        });
        assert!(matches!(object, Err(Exposure::UnknownEntry(5))), "{object:?}");
        // SAFETY: a null ACL is what the judge is told to refuse.
        assert!(matches!(unsafe { judge_access_list(std::ptr::null(), &|_| true) }, Err(Exposure::NoAccessList)));
    }
}
