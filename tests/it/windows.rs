//! Windows through the real binary (run under wine by `.ci/windows`): the
//! Node tool's Windows semantics (cmd.exe through %ComSpec%, PATHEXT and `;`
//! in the shell lookup, CRLF ledgers, `platform: "win32"` approvals,
//! case-insensitive containment), the Job Object that contains each check,
//! the owner-only ACL of the stores, and `--sandbox`, which Windows refuses.

use std::ffi::OsStr;
use std::fs;
use std::os::windows::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, Instant};

use windows_sys::Win32::Foundation::{CloseHandle, LocalFree, ERROR_SUCCESS, INVALID_HANDLE_VALUE};
use windows_sys::Win32::Security::Authorization::{
    ConvertStringSidToSidW, GetNamedSecurityInfoW, SetEntriesInAclW, SetNamedSecurityInfoW, EXPLICIT_ACCESS_W,
    GRANT_ACCESS, NO_MULTIPLE_TRUSTEE, SE_FILE_OBJECT, TRUSTEE_IS_SID, TRUSTEE_IS_WELL_KNOWN_GROUP, TRUSTEE_W,
};
use windows_sys::Win32::Security::{ACL, DACL_SECURITY_INFORMATION, NO_INHERITANCE, PSECURITY_DESCRIPTOR, PSID};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Process32FirstW, Process32NextW, PROCESSENTRY32W, TH32CS_SNAPPROCESS,
};

use crate::common::{gate, sh, Sandbox};
use crate::core_support::{record_name, sha256_hex};

/// How many processes run the program whose file name is `image` (any case).
fn processes_named(image: &str) -> usize {
    // SAFETY: a snapshot of all processes; the handle is closed below.
    let snapshot = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0) };
    assert_ne!(snapshot, INVALID_HANDLE_VALUE, "{}", std::io::Error::last_os_error());
    // SAFETY: an all-zero entry with its size set is what Process32FirstW takes.
    let mut entry: PROCESSENTRY32W = unsafe { std::mem::zeroed() };
    entry.dwSize = std::mem::size_of::<PROCESSENTRY32W>() as u32;
    let mut count = 0;
    // SAFETY: the snapshot is open and `entry` sized.
    let mut more = unsafe { Process32FirstW(snapshot, &mut entry) } != 0;
    while more {
        let length = entry.szExeFile.iter().position(|&c| c == 0).unwrap_or(entry.szExeFile.len());
        let name = String::from_utf16_lossy(&entry.szExeFile[..length]);
        if name.eq_ignore_ascii_case(image) {
            count += 1;
        }
        // SAFETY: as above.
        more = unsafe { Process32NextW(snapshot, &mut entry) } != 0;
    }
    // SAFETY: the snapshot handle is ours.
    unsafe { CloseHandle(snapshot) };
    count
}

/// Polls `done` every 100 ms for up to `limit`.
fn eventually(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    done()
}

#[test]
fn a_check_that_times_out_leaves_nothing_it_started_behind() {
    let sandbox = Sandbox::new();
    // A grandchild of its own name, so no other test's processes count: cmd
    // starts it in the background (`start /b`), then waits on a second one.
    let image = format!("contained-{}.exe", std::process::id());
    let system = std::env::var("SystemRoot").unwrap_or_else(|_| r"C:\windows".into());
    fs::copy(Path::new(&system).join(r"system32\ping.exe"), sandbox.path(&image)).unwrap();
    let wait = format!("{image} -n 120 127.0.0.1 > nul");
    sandbox.write("GATES.md", &gate("G1", &format!("start /b {wait}& {wait}"), "never"));
    let child = sandbox
        .std_cmd()
        .args(["--approve", "--timeout", "5"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Positive first: the check and its background grandchild both run.
    assert!(eventually(Duration::from_secs(20), || processes_named(&image) == 2), "the check never started both");
    let output = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{out}");
    assert!(out.contains("FAIL GATES:G1") && out.contains("timed out after 5s;"), "{out}");
    // The job took both down with the check: nothing of it is left.
    assert!(eventually(Duration::from_secs(5), || processes_named(&image) == 0), "a process of the check survived");
    assert_eq!(sandbox.read("GATES.md"), gate("G1", &format!("start /b {wait}& {wait}"), "never"));
}

#[test]
fn a_ledger_held_open_by_another_program_is_written_once_it_lets_go() {
    use std::os::windows::fs::OpenOptionsExt;
    use windows_sys::Win32::Storage::FileSystem::{FILE_SHARE_READ, FILE_SHARE_WRITE};
    let sandbox = Sandbox::new();
    let ledger = gate("G1", &format!("{}& echo ok", sh::touch("done")), "ok");
    sandbox.write("GATES.md", &ledger);
    // An indexer's or a scanner's handle: reading and writing shared, but no
    // delete sharing, so nothing can replace the file while it is open.
    let held = fs::OpenOptions::new()
        .read(true)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
        .open(sandbox.path("GATES.md"))
        .unwrap();
    let mut child = sandbox
        .std_cmd()
        .arg("--approve")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The check has run; its result waits for the file, well inside the 2 s
    // gate-check keeps trying for.
    assert!(eventually(Duration::from_secs(30), || sandbox.path("done").exists()), "the check never ran");
    std::thread::sleep(Duration::from_millis(400));
    assert!(child.try_wait().unwrap().is_none(), "gate-check gave up while the ledger was held");
    assert_eq!(sandbox.read("GATES.md"), ledger, "written while held open");
    drop(held);
    let output = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{out}{}", String::from_utf8_lossy(&output.stderr));
    assert!(sandbox.read("GATES.md").starts_with("- [x] G1:"), "{}", sandbox.read("GATES.md"));
}

#[test]
fn a_crlf_ledger_is_approved_and_run_through_cmd_and_keeps_its_line_endings() {
    let sandbox = Sandbox::new();
    let text = "# Gates\r\n\r\n- [ ] G1: prints ok\r\n  CHECK: echo ok\r\n  EXPECT: ok\r\n  EVIDENCE: pending\r\n\r\nprose\r\n";
    sandbox.write("GATES.md", text);
    let shell = sh::default_shell();
    sandbox
        .run(&["--approve"])
        .code(0)
        .stdout_contains(&format!("    SHELL: {shell}\n"))
        .stdout_contains("  PASS GATES:G1: prints ok\n")
        .stdout_contains("\nALL MET (1 met)\n");
    let after = fs::read(sandbox.path("GATES.md")).unwrap();
    let after = String::from_utf8(after).unwrap();
    assert!(
        after.starts_with("# Gates\r\n\r\n- [x] G1: prints ok\r\n  CHECK: echo ok\r\n  EXPECT: ok\r\n"),
        "{after:?}"
    );
    assert!(after.ends_with("\r\n\r\nprose\r\n"), "{after:?}");
    assert_eq!(after.matches('\n').count(), after.matches("\r\n").count(), "a bare LF was written: {after:?}");
    // cmd's `echo ok` prints `ok` and CRLF: four bytes, as under the Node tool.
    let evidence = after.lines().find_map(|line| line.strip_prefix("  EVIDENCE: ")).unwrap();
    assert!(evidence.contains(&format!("output-sha256={}; output-bytes=4;", sha256_hex("ok\r\n"))), "{evidence}");
    assert!(evidence.contains(&format!("; shell={shell};")), "{evidence}");
}

#[test]
fn the_approval_record_is_named_and_signed_by_the_node_tools_win32_rule() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "echo ok", "ok"));
    let path = r"C:\windows\system32;C:\windows";
    sandbox.run_with(sandbox.cmd().env("PATH", path).arg("--approve")).code(0).stdout_contains("\nALL MET (");
    // The Node tool's oracle on win32, spelled out: path.win32 spellings,
    // %ComSpec% as the shell, PATH as it is, and platform "win32".
    let json = |text: &str| serde_json::to_string(text).unwrap();
    let oracle = format!(
        "{{\"schema\":1,\"check\":\"echo ok\",\"expect\":\"ok\",\"cwd\":{},\"shell\":{},\"timeoutMs\":120000,\
         \"maxOutputBytes\":1048576,\"regexTimeoutMs\":250,\"regexStartupTimeoutMs\":5000,\"maxRegexWorkers\":4,\
         \"platform\":\"win32\",\"path\":{}}}",
        json(sandbox.root.to_str().unwrap()),
        json(&sh::default_shell()),
        json(path)
    );
    let ledger = sandbox.path("GATES.md");
    let (name, signature) = record_name(ledger.to_str().unwrap(), "G1", &oracle);
    let record: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(sandbox.approvals.join(&name)).unwrap()).unwrap();
    assert_eq!(record["signature"], signature.as_str());
    assert_eq!(record["file"], ledger.to_str().unwrap());
    assert_eq!(record["oracle"]["platform"], "win32");
    assert_eq!(record["oracle"], serde_json::from_str::<serde_json::Value>(&oracle).unwrap());
}

#[test]
fn the_shell_is_comspec_else_cmd_found_on_path_with_pathext() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "echo ok", "ok"));
    let system32 = Path::new(&std::env::var("SystemRoot").unwrap_or_else(|_| r"C:\windows".into())).join("system32");
    let cmd = system32.join("cmd.exe").display().to_string();
    let shown = |run: crate::common::Run, shell: &str| {
        run.code(1).stdout_contains(&format!("    SHELL: {shell}\n")).stdout_contains("NOT RUN");
    };
    let path = format!("{};{}", system32.display(), system32.parent().unwrap().display());
    // %ComSpec% when set.
    shown(sandbox.run_with(sandbox.cmd().env("ComSpec", &cmd)), &cmd);
    // Else cmd.exe, looked up on PATH (split on `;`).
    shown(sandbox.run_with(sandbox.cmd().env_remove("ComSpec").env("PATH", &path)), &cmd);
    // A bare name is tried with each PATHEXT ending, lower case first.
    shown(
        sandbox.run_with(sandbox.cmd().env("PATH", &path).env("PATHEXT", ".COM;.EXE").args(["--shell", "cmd"])),
        &cmd,
    );
    // A path with `/` is a path, spelled with `\` as path.win32 resolves it.
    let forward = cmd.replace('\\', "/");
    shown(sandbox.run_with(sandbox.cmd().args(["--shell", &forward])), &cmd);
    sandbox
        .run_with(sandbox.cmd().env("PATH", &path).env("PATHEXT", ".BAT").args(["--shell", "cmd"]))
        .code(2)
        .stderr_contains("cannot resolve command shell \"cmd\" from PATH");
}

#[test]
fn paths_compare_without_case_as_path_win32_does() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", "echo ok", "ok"));
    // Positive first: a store beside the repository is used.
    sandbox.run(&["--approve"]).code(0).stdout_contains("\nALL MET (");
    // The same repository spelled in upper case still holds a store under it.
    let inside = sandbox.root.join("approvals").display().to_string().to_uppercase();
    sandbox
        .run_with(sandbox.cmd().env("UNLAZY_APPROVAL_DIR", &inside).arg("--reverify"))
        .code(2)
        .stderr_contains("UNLAZY_APPROVAL_DIR must be outside the repository root");
}

#[test]
fn sandbox_is_refused_and_nothing_runs() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", &format!("{}& echo ok", sh::touch("ran")), "ok"));
    // Positive first: the check runs unconfined.
    sandbox.run(&["--approve"]).code(0).stdout_contains("\nALL MET (");
    fs::remove_file(sandbox.path("ran")).unwrap();
    let before = sandbox.read("GATES.md");
    sandbox
        .run(&["--reverify", "--sandbox"])
        .code(2)
        .stderr_contains("sandbox unavailable: confinement is not available on Windows")
        .stderr_contains("never runs a check unconfined")
        .stdout_lacks("RUN");
    assert!(!sandbox.path("ran").exists(), "a check ran despite --sandbox");
    assert_eq!(sandbox.read("GATES.md"), before);
}

fn wide(path: &Path) -> Vec<u16> {
    path.as_os_str().encode_wide().chain([0]).collect()
}

/// Adds an entry to the DACL of `path` that lets Everyone (S-1-1-0) read it.
fn let_everyone_read(path: &Path) {
    let everyone: Vec<u16> = OsStr::new("S-1-1-0").encode_wide().chain([0]).collect();
    let mut sid: PSID = std::ptr::null_mut();
    // SAFETY: a NUL-terminated SID string; the call allocates `sid`.
    assert_ne!(unsafe { ConvertStringSidToSidW(everyone.as_ptr(), &mut sid) }, 0);
    let name = wide(path);
    let (mut dacl, mut descriptor): (*mut ACL, PSECURITY_DESCRIPTOR) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: the name is NUL-terminated; the descriptor is freed below.
    let status = unsafe {
        GetNamedSecurityInfoW(
            name.as_ptr(),
            SE_FILE_OBJECT,
            DACL_SECURITY_INFORMATION,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut dacl,
            std::ptr::null_mut(),
            &mut descriptor,
        )
    };
    assert_eq!(status, ERROR_SUCCESS);
    let entry = EXPLICIT_ACCESS_W {
        grfAccessPermissions: windows_sys::Win32::Storage::FileSystem::FILE_GENERIC_READ,
        grfAccessMode: GRANT_ACCESS,
        grfInheritance: NO_INHERITANCE,
        Trustee: TRUSTEE_W {
            pMultipleTrustee: std::ptr::null_mut(),
            MultipleTrusteeOperation: NO_MULTIPLE_TRUSTEE,
            TrusteeForm: TRUSTEE_IS_SID,
            TrusteeType: TRUSTEE_IS_WELL_KNOWN_GROUP,
            ptstrName: sid.cast(),
        },
    };
    let mut widened: *mut ACL = std::ptr::null_mut();
    // SAFETY: one valid entry merged into the existing DACL.
    assert_eq!(unsafe { SetEntriesInAclW(1, &entry, dacl, &mut widened) }, ERROR_SUCCESS);
    // SAFETY: the name is NUL-terminated; the ACL is valid for the call.
    let status = unsafe {
        SetNamedSecurityInfoW(
            name.as_ptr(),
            SE_FILE_OBJECT,
            DACL_SECURITY_INFORMATION,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            widened,
            std::ptr::null(),
        )
    };
    assert_eq!(status, ERROR_SUCCESS);
    // SAFETY: each was allocated by the system with LocalAlloc, freed once.
    unsafe {
        LocalFree(widened.cast());
        LocalFree(descriptor);
        LocalFree(sid);
    }
}

#[test]
fn a_store_whose_acl_lets_others_read_is_refused() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", &gate("G1", &format!("{}& echo ok", sh::touch("ran")), "ok"));
    // Positive first: a new store gate-check made is owner-only, and used.
    let store = sandbox.approvals.join("made-here");
    sandbox
        .run_with(sandbox.cmd().env("UNLAZY_APPROVAL_DIR", &store).arg("--approve"))
        .code(0)
        .stdout_contains("\nALL MET (");
    sandbox
        .run_with(sandbox.cmd().env("UNLAZY_APPROVAL_DIR", &store).arg("--reverify"))
        .code(0)
        .stdout_contains("\nALL MET (");
    fs::remove_file(sandbox.path("ran")).unwrap();
    let_everyone_read(&store);
    sandbox
        .run_with(sandbox.cmd().env("UNLAZY_APPROVAL_DIR", &store).arg("--reverify"))
        .code(2)
        .stdout_is("GATES.md: 1 gates\n")
        .stderr_contains(&format!(
        "{} must grant no access to anyone but its owner, SYSTEM and Administrators: its ACL grants access to S-1-1-0",
        store.display()
    ));
    assert!(!sandbox.path("ran").exists(), "a check ran on a store others can read");
}
