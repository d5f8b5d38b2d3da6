//! Property tests of the pure ledger parser and its edits (no process is
//! spawned): any input parses without panicking, rendering is byte-exact,
//! and a write-back edit changes only the edited gate's lines and is stable
//! under re-parsing.

use gate_check::ledger::{parse, Document};
use proptest::prelude::*;

/// Fragments that exercise every branch of the grammar, glued into lines.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("- [ ] ".to_string()),
        Just("- [x] ".to_string()),
        Just("- [X] G1: ".to_string()),
        Just("  CHECK: ".to_string()),
        Just("  EXPECT: ".to_string()),
        Just("  EXPECT: /a(b|c)*$/mi".to_string()),
        Just("  EXPECT: /[/".to_string()),
        Just("  CWD: sub".to_string()),
        Just("  EVIDENCE: pending".to_string()),
        Just("CHECK: ".to_string()),
        Just("ABANDON: G1 reason".to_string()),
        Just("  ABANDON: G2".to_string()),
        Just("OWNS: src/**, ../x".to_string()),
        Just("```".to_string()),
        Just("~~~~".to_string()),
        Just("   ```` info".to_string()),
        Just("# heading".to_string()),
        Just("\r\n".to_string()),
        Just("\n".to_string()),
        Just("\r".to_string()),
        Just("\t".to_string()),
        Just("\u{0}".to_string()),
        Just("\u{2028}".to_string()),
        Just("é😀".to_string()),
        "[A-Za-z0-9._:-]{1,6}",
        "[ -~]{0,12}",
    ]
}

fn ledger_text() -> impl Strategy<Value = String> {
    prop::collection::vec(fragment(), 0..60).prop_map(|parts| parts.concat())
}

/// A well-formed ledger with `count` runnable gates and free text between.
fn valid_ledger() -> impl Strategy<Value = (String, usize)> {
    (1usize..6, prop::bool::ANY, prop::bool::ANY, "[ -~]{0,20}").prop_map(|(count, crlf, evidence, note)| {
        let eol = if crlf { "\r\n" } else { "\n" };
        // The note follows a word so it stays prose: a bare note could open a
        // fence (```), or be a gate or attribute line of its own.
        let mut text = format!("# Gates{eol}Note: {note}{eol}");
        for i in 0..count {
            text.push_str(&format!("- [ ] G{i}: outcome {i}{eol}  CHECK: run {i}{eol}  EXPECT: ok {i}{eol}"));
            if evidence {
                text.push_str(&format!("  EVIDENCE: pending{eol}"));
            }
            text.push_str(&format!("free text {i}{eol}"));
        }
        (text, count)
    })
}

/// (id, CHECK, EXPECT, CWD) of each gate.
type Definition = (String, Option<String>, Option<String>, Option<String>);

fn gate_definitions(document: &Document) -> Vec<Definition> {
    document
        .gates
        .iter()
        .map(|g| {
            (g.id().to_string(), g.check().map(String::from), g.expect().map(String::from), g.cwd().map(String::from))
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn parse_never_panics_and_render_is_exact(text in ledger_text()) {
        let outcome = parse(&text);
        prop_assert_eq!(outcome.document.render(), text);
    }

    #[test]
    fn reparsing_rendered_output_is_stable(text in ledger_text()) {
        let first = parse(&text);
        let second = parse(first.document.render());
        prop_assert_eq!(gate_definitions(&first.document), gate_definitions(&second.document));
        prop_assert_eq!(first.errors, second.errors);
    }

    #[test]
    fn edits_touch_only_their_gate((text, count) in valid_ledger(), target in 0usize..6, pass in prop::bool::ANY) {
        let target = target % count;
        let outcome = parse(&text);
        prop_assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
        let mut document = outcome.document;
        let gate = document.gates[target].clone();
        document.set_checked(gate.line(), pass);
        document.set_evidence(&gate, if pass { "recorded" } else { "pending" });
        let edited = document.render();

        let reparsed = parse(&edited);
        prop_assert!(reparsed.errors.is_empty());
        prop_assert_eq!(gate_definitions(&reparsed.document), gate_definitions(&parse(&text).document));
        let fresh = &reparsed.document.gates[target];
        prop_assert_eq!(fresh.checked(), pass);
        let expected_evidence = if pass { "recorded" } else { "pending" };
        prop_assert_eq!(fresh.evidence(), Some(expected_evidence));

        // Every other line is byte-identical, in order.
        let before: Vec<&str> = text.split_inclusive('\n').collect();
        let after: Vec<&str> = edited.split_inclusive('\n').collect();
        let changed: Vec<usize> = (0..after.len()).filter(|&i| before.get(i) != after.get(i)).collect();
        let gate_line = gate.line();
        let evidence_line = fresh.evidence_line().unwrap();
        if gate.evidence_line().is_some() {
            prop_assert_eq!(before.len(), after.len());
            prop_assert!(changed.iter().all(|&i| i == gate_line || i == evidence_line), "{:?}", changed);
        } else {
            let mut without_inserted = after.clone();
            without_inserted.remove(evidence_line);
            let diff: Vec<usize> = (0..before.len()).filter(|&i| before[i] != without_inserted[i]).collect();
            prop_assert!(diff.iter().all(|&i| i == gate_line), "{:?}", diff);
        }

        // Applying the same edit again changes nothing.
        let mut again = reparsed.document;
        let gate = again.gates[target].clone();
        again.set_checked(gate.line(), pass);
        again.set_evidence(&gate, expected_evidence);
        prop_assert_eq!(again.render(), edited);
    }
}
