//! Every ledger rule of SPEC.md "Ledger format", through the real binary:
//! what parses, what is diagnosed (exit 2, file and line named, ledger bytes
//! untouched), fence handling, and byte-exact write-back.

use crate::common::Sandbox;
use crate::core_support::lines_with_endings;

/// Writes `bytes` as GATES.md and asserts that both a status and a normal
/// run refuse it with exit 2, name the file (and line), and change nothing.
fn assert_rejected(bytes: &[u8], fragment: &str, line: Option<usize>) {
    let sandbox = Sandbox::new();
    let path = sandbox.path("GATES.md");
    std::fs::write(&path, bytes).unwrap();
    let wanted = match line {
        Some(n) => format!("{}:{n}: error: {fragment}", path.display()),
        None => format!("{}: error: {fragment}", path.display()),
    };
    for args in [&["--status"][..], &[][..], &["--approve"][..]] {
        sandbox.run(args).code(2).stderr_contains(&wanted).stderr_lacks("panicked").stdout_lacks("ALL MET");
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "a refused ledger was changed");
    }
    assert_eq!(sandbox.approval_count(), 0);
}

/// Runs `--status` on GATES.md holding `text` and returns (exit, stdout).
fn status_of(text: &str) -> (i32, String) {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", text);
    let run = sandbox.run(&["--status"]);
    let code = run.exit_code();
    assert_ne!(code, 2, "unexpected parse failure for {text:?}: {}", run.stderr());
    // The caller asserts the code.
    (code, run.code(code).into_stdout())
}

fn gate_count(text: &str) -> usize {
    let (_, out) = status_of(text);
    let line = out.lines().find(|l| l.starts_with("GATES.md: ")).expect("gate count line");
    line.trim_start_matches("GATES.md: ").trim_end_matches(" gates").parse().unwrap()
}

#[test]
fn gate_lines_and_attributes() {
    let text = "# Title\n\
                - [ ] G1: unchecked runnable\n  CHECK: true\n\tEXPECT: ok\n  EVIDENCE: pending\n\
                - [x] G2: checked manual\n  EVIDENCE: I read it\n\
                - [X] G3: capital X counts as checked\n   EVIDENCE: seen on 2024-01-01\n\
                -  [ ] NOTAGATE: two spaces\n- [ ]NOTAGATE2: no space\n- [y] NOTAGATE3: bad mark\n\
                - [ ] G4: id then colon: rest of title\n";
    let (code, out) = status_of(text);
    assert_eq!(code, 1);
    assert!(out.contains("GATES.md: 4 gates"), "{out}");
    assert!(out.contains("UNMET GATES:G1 (unchecked): unchecked runnable"), "{out}");
    assert!(out.contains("UNMET GATES:G4 (unchecked): id then colon: rest of title"), "{out}");
    assert!(out.contains("UNMET: 2 (met: 2)"), "{out}");
    assert!(out.contains("  GATES:G1, GATES:G4"), "{out}");
}

#[test]
fn manual_and_runnable_gates() {
    // A checked manual gate with human evidence is met; a checked runnable
    // gate is met only by v1 evidence, so its prose evidence is stale.
    let (code, out) = status_of(
        "- [x] M: manual\n  EVIDENCE: looked\n- [x] R: runnable\n  CHECK: true\n  EXPECT: x\n  EVIDENCE: looked\n",
    );
    assert_eq!(code, 1);
    assert!(out.contains("UNMET GATES:R (checked but automatic evidence is stale or unbound)"), "{out}");
    assert!(out.contains("UNMET: 1 (met: 1)"), "{out}");
}

#[test]
fn attribute_errors() {
    assert_rejected(b"- [ ] A: x\nCHECK: true\n  EXPECT: ok\n", "unindented CHECK is not attached to a gate", Some(2));
    assert_rejected(b"- [ ] A: x\n  CHECK: true\nEXPECT: ok\n", "unindented EXPECT", Some(3));
    assert_rejected(b"- [ ] A: x\nEVIDENCE: pending\n", "unindented EVIDENCE", Some(2));
    assert_rejected(b"- [ ] A: x\nCWD: sub\n", "unindented CWD", Some(2));
    assert_rejected(b"# T\n  CHECK: true\n- [ ] A: x\n", "orphan CHECK is not attached to a gate", Some(2));
    // A heading ends the gate's attribute block.
    assert_rejected(b"- [ ] A: x\n# section\n  EVIDENCE: y\n", "orphan EVIDENCE", Some(3));
    assert_rejected(
        b"- [ ] A: x\n  CHECK: true\n",
        "gate A: runnable gates require both non-blank CHECK and EXPECT",
        Some(1),
    );
    assert_rejected(b"- [ ] A: x\n  EXPECT: ok\n", "gate A: runnable gates require both", Some(1));
    assert_rejected(b"- [ ] A: x\n  CHECK:\n  EXPECT: ok\n", "gate A: CHECK and EXPECT cannot be blank", Some(1));
    assert_rejected(b"- [ ] A: x\n  CHECK: true\n  EXPECT:   \n", "gate A: CHECK and EXPECT cannot be blank", Some(1));
    assert_rejected(b"- [ ] A: x\n  CHECK: a\n  CHECK: b\n  EXPECT: ok\n", "duplicate CHECK for gate A", Some(3));
    assert_rejected(b"- [ ] A: x\n  EVIDENCE: a\n  EVIDENCE: b\n", "duplicate EVIDENCE for gate A", Some(3));
}

#[test]
fn id_errors() {
    assert_rejected(b"- [ ] A: x\n- [ ] A: y\n", "duplicate gate id A (first declared on line 1)", Some(2));
    assert_rejected(b"- [ ] no id here\n", "gate needs an explicit ID followed by a colon", Some(1));
    assert_rejected(b"- [ ] -bad: x\n", "invalid gate id -bad", Some(1));
    assert_rejected(b"- [ ] A:\n", "gate outcome is blank", Some(1));
    assert_rejected(b"# nothing here\n\nprose\n", "ledger contains zero live gates", None);
    assert_rejected(b"", "ledger contains zero live gates", None);
}

#[test]
fn expect_patterns() {
    // One valid and one invalid pattern; regex semantics are tested elsewhere.
    let (code, _) = status_of("- [ ] A: x\n  CHECK: true\n  EXPECT: /^ok$/m\n");
    assert_eq!(code, 1);
    assert_rejected(b"- [ ] A: x\n  CHECK: true\n  EXPECT: /(/\n", "gate A: invalid EXPECT regex", Some(1));
}

#[test]
fn owns_header() {
    let (code, _) = status_of("OWNS: ./src/**, docs//a.md, ./lib/./x\n- [ ] A: x\n");
    assert_eq!(code, 1);
    assert_rejected(b"OWNS: /etc/**\n- [ ] A: x\n", "OWNS path must be relative: /etc/**", Some(1));
    assert_rejected(b"OWNS: C:/x\n- [ ] A: x\n", "OWNS path must be relative", Some(1));
    assert_rejected(b"OWNS: src/../../x\n- [ ] A: x\n", "OWNS path cannot contain traversal", Some(1));
    assert_rejected(b"OWNS: ..\n- [ ] A: x\n", "OWNS path cannot contain traversal", Some(1));
    assert_rejected(b"OWNS: ./.\n- [ ] A: x\n", "OWNS path cannot claim an implicit root", Some(1));
    assert_rejected(b"OWNS: ./\n- [ ] A: x\n", "OWNS path is blank", Some(1));
    assert_rejected(b"OWNS: ,\n- [ ] A: x\n", "OWNS declares no paths", Some(1));
    assert_rejected(b"- [ ] A: x\nOWNS: src/**\n", "OWNS must appear before the first gate", Some(2));
}

#[test]
fn abandon_rules() {
    let sandbox = Sandbox::new();
    sandbox.write("GATES.md", "- [ ] A: x\n- [x] B: y\n  EVIDENCE: done\nABANDON: A: needs hardware we do not have\n");
    sandbox
        .run(&["--status"])
        .code(1)
        .stdout_is("GATES.md: 2 gates\nHANDOFF REQUIRED: 1 abandoned (met: 1)\n  GATES:A\n");

    assert_rejected(b"- [ ] A: x\nABANDON: A\n", "ABANDON A needs a non-blank reason", Some(2));
    assert_rejected(b"- [ ] A: x\nABANDON: A:   \n", "ABANDON A needs a non-blank reason", Some(2));
    assert_rejected(b"- [ ] A: x\nABANDON:\n", "ABANDON needs a gate id and reason", Some(2));
    assert_rejected(b"- [ ] A: x\nABANDON: TYPO out of scope\n", "ABANDON references unknown gate TYPO", Some(2));
    assert_rejected(
        b"- [ ] A: x\n  ABANDON: A out of scope\n",
        "indented ABANDON is not applied; start ABANDON at column 1",
        Some(2),
    );
    assert_rejected(b"- [ ] A: x\nABANDON: A one\nABANDON: A two\n", "duplicate ABANDON for A", Some(3));
}

#[test]
fn fences_follow_commonmark() {
    let live = "- [ ] A: live\n";
    // (ledger after the live gate A, gates the parser must see)
    let cases = [
        ("```\n- [ ] B: hidden\n```\n", 1),
        ("~~~\n- [ ] B: hidden\n~~~\n", 1),
        // A different marker character does not close.
        ("```\n~~~\n- [ ] B: hidden\n```\n", 1),
        // A longer closing fence closes.
        ("```\n- [ ] B: hidden\n`````\n- [ ] C: visible\n", 2),
        // A shorter one does not.
        ("````\n```\n- [ ] B: hidden\n````\n", 1),
        // Trailing text keeps it open; trailing blanks do not.
        ("```\n``` x\n- [ ] B: hidden\n```\n", 1),
        ("```\n```  \t\n- [ ] B: visible\n", 2),
        // Up to three spaces of indentation open and close; four do neither.
        ("   ```\n- [ ] B: hidden\n   ```\n- [ ] C: visible\n", 2),
        ("    ```\n- [ ] B: visible\n", 2),
        ("```\n    ```\n- [ ] B: hidden\n```\n", 1),
        // A backtick in a backtick info string is not a fence; in a tilde one it is.
        ("``` a`b\n- [ ] B: visible\n", 2),
        ("~~~ a`b\n- [ ] B: hidden\n~~~\n", 1),
        // Nested shorter fences stay inside the outer block.
        ("`````md\n```\n- [ ] A: duplicate hidden\n```\nCHECK: hidden\n`````\n- [ ] C: visible\n", 2),
    ];
    for (rest, gates) in cases {
        let text = format!("{live}{rest}");
        assert_eq!(gate_count(&text), gates, "{text:?}");
    }
    assert_rejected(b"- [ ] A: x\n\n````\n- [ ] B: y\n```\n", "unclosed fenced block", Some(3));
    assert_rejected(b"```\n- [ ] A: x\n```\n", "ledger contains zero live gates", None);
}

/// A ledger with one runnable gate that passes, run with --approve; returns
/// (before, after) bytes.
fn approve_run(bytes: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let sandbox = Sandbox::new();
    let path = sandbox.path("GATES.md");
    std::fs::write(&path, bytes).unwrap();
    let run = sandbox.run(&["--approve"]);
    let code = run.exit_code();
    assert!(code == 0 || code == 1, "{}{}", run.stdout(), run.stderr());
    run.code(code).stdout_contains("PASS GATES:A");
    (bytes.to_vec(), std::fs::read(&path).unwrap())
}

/// Asserts `after` equals `before` except the gate line (ticked) and the
/// EVIDENCE line, which keep their own terminators.
fn assert_only_gate_changed(before: &[u8], after: &[u8], gate_line: usize, evidence_line: usize) {
    let (b, a) = (lines_with_endings(before), lines_with_endings(after));
    assert_eq!(b.len(), a.len(), "line count changed:\n{}", String::from_utf8_lossy(after));
    for (i, (x, y)) in b.iter().zip(&a).enumerate() {
        if i == gate_line {
            assert_eq!(String::from_utf8_lossy(y), String::from_utf8_lossy(x).replacen("- [ ]", "- [x]", 1));
        } else if i == evidence_line {
            let text = String::from_utf8_lossy(y);
            assert!(text.starts_with("  EVIDENCE: automatic-evidence=v1; "), "{text}");
            assert_eq!(x.ends_with(b"\r\n"), y.ends_with(b"\r\n"), "line ending changed on line {i}");
            assert_eq!(x.ends_with(b"\n"), y.ends_with(b"\n"), "line ending changed on line {i}");
        } else {
            assert_eq!(x, y, "line {i} changed");
        }
    }
}

const CRLF_LEDGER: &str =
    "# T\r\n\r\n- [ ] A: a\r\n  CHECK: echo ok\r\n  EXPECT: ok\r\n  EVIDENCE: pending\r\n\r\ntail\r\n";

#[test]
fn crlf_and_lf_are_preserved() {
    let (before, after) = approve_run(CRLF_LEDGER.as_bytes());
    assert_only_gate_changed(&before, &after, 2, 5);
    assert!(!String::from_utf8_lossy(&after).replace("\r\n", "").contains('\n'), "an LF appeared");

    let lf = CRLF_LEDGER.replace("\r\n", "\n");
    let (before, after) = approve_run(lf.as_bytes());
    assert_only_gate_changed(&before, &after, 2, 5);
    assert!(!after.contains(&b'\r'));
}

#[test]
fn mixed_line_endings_are_preserved() {
    let mixed = "# T\n\r\n- [ ] A: a\n  CHECK: echo ok\r\n  EXPECT: ok\n  EVIDENCE: pending\n\r\ntail\n";
    let (before, after) = approve_run(mixed.as_bytes());
    assert_only_gate_changed(&before, &after, 2, 5);
    // An inserted line in a file with any CRLF uses CRLF; the rest is untouched.
    let mixed = "# T\n- [ ] A: a\r\n  CHECK: echo ok\n  EXPECT: ok\n\ntail\n";
    let (_, after) = approve_run(mixed.as_bytes());
    let after = String::from_utf8(after).unwrap();
    let evidence_at = after.find("  EVIDENCE: ").unwrap();
    assert_eq!(&after[..evidence_at], "# T\n- [x] A: a\r\n  CHECK: echo ok\n  EXPECT: ok\n");
    assert!(after.ends_with("\r\n\ntail\n"), "{after:?}");
}

#[test]
fn missing_evidence_is_inserted_after_the_attribute_block() {
    let text = "- [ ] A: a\n  CHECK: echo ok\n  CWD: .\n  EXPECT: ok\nprose that belongs to A\n- [ ] B: b\n";
    let (_, after) = approve_run(text.as_bytes());
    let after = String::from_utf8(after).unwrap();
    let lines: Vec<&str> = after.split('\n').collect();
    assert_eq!(lines[..4], ["- [x] A: a", "  CHECK: echo ok", "  CWD: .", "  EXPECT: ok"]);
    assert!(lines[4].starts_with("  EVIDENCE: automatic-evidence=v1; "), "{after}");
    assert_eq!(lines[5..], ["prose that belongs to A", "- [ ] B: b", ""]);
}

#[test]
fn file_without_final_newline() {
    let (_, after) = approve_run(b"- [ ] A: a\n  CHECK: echo ok\n  EXPECT: ok");
    let after = String::from_utf8(after).unwrap();
    assert!(
        after.starts_with("- [x] A: a\n  CHECK: echo ok\n  EXPECT: ok\n  EVIDENCE: automatic-evidence=v1; "),
        "{after}"
    );
    assert!(!after.ends_with('\n'), "a final newline was added: {after:?}");
    let (before, after) = approve_run(b"- [ ] A: a\n  CHECK: echo ok\n  EXPECT: ok\n  EVIDENCE: pending");
    assert_only_gate_changed(&before, &after, 0, 3);
    assert!(!after.ends_with(b"\n"));
}

#[test]
fn invalid_utf8_is_a_clear_error() {
    assert_rejected(b"- [ ] A: x\n  CHECK: true\n  EXPECT: caf\xe9\n", "invalid UTF-8", Some(3));
    assert_rejected(b"\xff\xfe- [ ] A: x\n", "invalid UTF-8", Some(1));
}

#[test]
fn nul_bytes_are_kept_and_never_printed_raw() {
    let text = b"prose with \0 inside\n- [ ] A: title\0x\n  CHECK: echo ok\n  EXPECT: ok\n  EVIDENCE: pending\n";
    let sandbox = Sandbox::new();
    let path = sandbox.path("GATES.md");
    std::fs::write(&path, text).unwrap();
    sandbox.run(&["--approve"]).code(0).stdout_lacks("\0").stdout_contains("PASS GATES:A: title x");
    let after = std::fs::read(&path).unwrap();
    assert_only_gate_changed(text, &after, 1, 4);
}

#[test]
fn oversize_ledger_is_refused() {
    let mut bytes = b"- [ ] A: x\n".to_vec();
    bytes.resize(8 * 1024 * 1024 + 1, b'y');
    let sandbox = Sandbox::new();
    let path = sandbox.path("GATES.md");
    std::fs::write(&path, &bytes).unwrap();
    sandbox
        .run_with(sandbox.cmd().arg("--status"))
        .code(2)
        .stderr_contains(&format!("exceeds 8388608 bytes: {}", path.display()));
    assert_eq!(std::fs::read(&path).unwrap().len(), bytes.len());
}
