//! EXPECT regular expressions through the real binary: which ledgers the validator accepts,
//! that matching gives JavaScript's answer where a step budget used to get in the way, and
//! that one check's regex memory stays bounded.

use crate::common::{gate, outcome, Sandbox};

/// `--status` on a ledger of one gate per EXPECT: (exit code, stderr).
fn status_of_expects(expects: &[&str]) -> (i32, String) {
    let sandbox = Sandbox::new();
    let ledger: String = expects.iter().enumerate().map(|(i, expect)| gate(&format!("G{i}"), "true", expect)).collect();
    sandbox.write("GATES.md", &ledger);
    let (code, _, err) = outcome(&sandbox.cmd().arg("--status").output().unwrap());
    (code, err)
}

#[test]
fn patterns_javascript_accepts_do_not_refuse_the_ledger() {
    for expect in [
        r"/\p{Combining_Mark}/u",
        r"/\p{gc=Combining_Mark}/v",
        r"/\p{General_Category=Combining_Mark}/u",
        r"/a{2147483648,2147483647}/",
        r"/[\k]/",
    ] {
        let (code, err) = status_of_expects(&[expect]);
        assert_eq!(code, 1, "{expect} was refused: {err}");
    }
}

#[test]
fn patterns_javascript_rejects_refuse_the_ledger_with_file_and_line() {
    for expect in [r"/[^\q{ab}--\q{ab}]/v", r"/[^[\q{ab}--\q{ab}]]/v", r"/(?<a>)[\k]/"] {
        // The bad pattern is the second gate's, whose line is 5.
        let (code, err) = status_of_expects(&["plain", expect]);
        assert_eq!(code, 2, "{expect} was accepted");
        assert!(err.contains("GATES.md: line 5: gate G1: invalid EXPECT regex"), "{expect}: {err}");
    }
}
