//! The guard's decisions and what each refusal tells the agent. Pure: the
//! tool call, and what the edge found about each path it names (protected
//! or not, a ledger or not, and a ledger's current text), go in; a refusal
//! or nothing comes out.
//!
//! A ledger edit is judged by what it changes, gate by gate: the current
//! text and the text the edit would leave are both parsed, and a runnable
//! gate (one with CHECK and EXPECT, before or after the edit) whose box
//! becomes ticked, or whose EVIDENCE becomes anything but `pending`, is
//! decided by the edit. Everything else in a ledger is the agent's to
//! write: unticking, new gates with `EVIDENCE: pending`, prose, CHECK,
//! EXPECT, CWD and INPUTS lines, manual gates.

use std::collections::HashMap;

use super::call::FileWrite;
use super::change::{Change, Unapplied};
use super::shell::Writer;
use crate::evidence::{self, EvidenceKind};
use crate::ledger::{self, Gate};

/// State only gate-check writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protected {
    Approvals,
    Receipts,
    Locks,
}

impl Protected {
    fn describe(self) -> &'static str {
        match self {
            Protected::Approvals => "the approval store, where the person's approvals are kept",
            Protected::Receipts => "the receipt store, which holds gate-check's receipts and the owner's key",
            Protected::Locks => "a .unlazy/locks directory, where running checks hold their locks",
        }
    }
}

/// What the edge found about one path a tool call names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place {
    /// The path as a reply shows it.
    pub shown: String,
    pub protected: Option<Protected>,
    /// Whether gate-check reads a file there as a ledger.
    pub ledger: bool,
    /// The file's current text, read when it is a ledger or is moved onto
    /// one; `None` when there is no file (or it was not read).
    pub text: Option<String>,
}

/// The places of a call's paths, by the path as the payload spells it.
pub type Places = HashMap<String, Place>;

/// Why a tool call is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denial {
    /// The edit ticks these runnable gates' boxes, or writes their EVIDENCE.
    Decides {
        ledger: String,
        ticked: Vec<String>,
        evidenced: Vec<String>,
    },
    /// The edit does not apply to the ledger as it is, and what it puts in
    /// holds a ticked box or an EVIDENCE line.
    Unseen {
        ledger: String,
    },
    /// A tool whose effect on a ledger cannot be worked out.
    Opaque {
        ledger: String,
    },
    Protected {
        path: String,
        store: Protected,
    },
    SelfApproval,
    ShellRewrite {
        ledger: String,
        how: Writer,
    },
}

/// The most gate ids a refusal names.
const LISTED: usize = 5;

fn listed(ids: &[String]) -> String {
    let shown: Vec<String> = ids.iter().take(LISTED).map(|id| crate::terminal::safe(id)).collect();
    match ids.len() > LISTED {
        true => format!("{} (+{} more)", shown.join(", "), ids.len() - LISTED),
        false => shown.join(", "),
    }
}

/// What the agent may do instead of deciding a gate itself.
const INSTEAD: &str = "Run gate-check: it runs the approved CHECK lines and ticks the box and writes the EVIDENCE \
                       line itself when a check passes. A CHECK that needs approval is the person's to approve: ask \
                       them. You may still untick boxes, add gates (with EVIDENCE: pending), and edit prose and \
                       CHECK, EXPECT, CWD and INPUTS lines.";

impl Denial {
    /// The reply's reason: what was refused, why, and what to do instead.
    pub fn reason(&self) -> String {
        match self {
            Denial::Decides { ledger, ticked, evidenced } => {
                let mut what = Vec::new();
                if !ticked.is_empty() {
                    what.push(format!("tick the box of runnable gate(s) {}", listed(ticked)));
                }
                if !evidenced.is_empty() {
                    what.push(format!("write the EVIDENCE of runnable gate(s) {}", listed(evidenced)));
                }
                format!(
                    "unlazy: refused: this edit would {} in the ledger {}. Only gate-check decides a runnable \
                     gate. {INSTEAD}",
                    what.join(" and "),
                    crate::terminal::safe(ledger)
                )
            }
            Denial::Unseen { ledger } => format!(
                "unlazy: refused: this edit does not apply to the ledger {} as it is now, and what it adds holds a \
                 ticked box or an EVIDENCE line, so the guard cannot tell which gates it decides. Read the file \
                 again and make the edit exactly. {INSTEAD}",
                crate::terminal::safe(ledger)
            ),
            Denial::Opaque { ledger } => format!(
                "unlazy: refused: the guard cannot work out what this tool does to the ledger {}. Edit ledgers \
                 with a plain file write or text replacement. {INSTEAD}",
                crate::terminal::safe(ledger)
            ),
            Denial::Protected { path, store } => format!(
                "unlazy: refused: {} lies in {}; only gate-check writes there. Run gate-check, and ask the person \
                 to approve what needs approval.",
                crate::terminal::safe(path),
                store.describe()
            ),
            Denial::SelfApproval => "unlazy: refused: approving a CHECK is the person's act, not the agent's, so \
                 gate-check --approve (and the Node tool's --approve) does not run from here. Run gate-check \
                 without --approve to see which CHECK lines wait for approval, then ask the person to review them \
                 and run the approving command themselves."
                .to_string(),
            Denial::ShellRewrite { ledger, how } => format!(
                "unlazy: refused: this command rewrites the ledger {} with {}, which the guard cannot check. Edit \
                 ledgers with your file edit tool instead. {INSTEAD}",
                crate::terminal::safe(ledger),
                how.describe()
            ),
        }
    }
}

/// The first refusal the file writes earn, if any.
pub fn files(writes: &[FileWrite], places: &Places) -> Option<Denial> {
    writes.iter().find_map(|write| file(write, places))
}

fn file(write: &FileWrite, places: &Places) -> Option<Denial> {
    let target = places.get(&write.target)?;
    if let Some(store) = target.protected {
        return Some(Denial::Protected { path: target.shown.clone(), store });
    }
    if !target.ledger {
        return None;
    }
    // The change applies to the text of its base (the file it was moved
    // from, if it was). A moved ledger keeps the decisions it had; another
    // file moved onto a ledger is judged against the ledger it replaces.
    let base = places.get(&write.base).unwrap_or(target);
    let source = base.text.as_deref();
    let before = if base.ledger { source } else { target.text.as_deref() };
    let ledger = target.shown.clone();
    match write.change.after(source) {
        Ok(None) => None,
        Ok(Some(after)) => {
            let (ticked, evidenced) = decided(before.unwrap_or_default(), &after);
            (!ticked.is_empty() || !evidenced.is_empty()).then_some(Denial::Decides { ledger, ticked, evidenced })
        }
        Err(Unapplied) if write.change == Change::Unknown => Some(Denial::Opaque { ledger }),
        Err(Unapplied) => adds_decisions(&write.change).then_some(Denial::Unseen { ledger }),
    }
}

/// The runnable gates of `after` whose box the change from `before` ticks,
/// and those whose EVIDENCE it sets to anything but pending.
pub fn decided(before: &str, after: &str) -> (Vec<String>, Vec<String>) {
    let before = ledger::parse(before).document;
    let after = ledger::parse(after).document;
    // The first declaration of an id is the gate the checker judges.
    let prior: HashMap<&str, &Gate> = before.gates.iter().rev().map(|gate| (gate.id(), gate)).collect();
    let (mut ticked, mut evidenced) = (Vec::new(), Vec::new());
    for gate in &after.gates {
        // A gate that was manual had no box or evidence a check decided:
        // made runnable, it is judged as if it had been unticked and
        // pending, so a ticked manual gate cannot become a met runnable one.
        let was = prior.get(gate.id()).copied().filter(|was| was.is_runnable());
        if !gate.is_runnable() && was.is_none() {
            continue;
        }
        if gate.checked() && !was.is_some_and(Gate::checked) {
            ticked.push(gate.id().to_string());
        }
        let evidence = gate.evidence();
        if evidence::classify(evidence, None) != EvidenceKind::Pending && evidence != was.and_then(Gate::evidence) {
            evidenced.push(gate.id().to_string());
        }
    }
    (ticked, evidenced)
}

/// Whether a change that does not apply puts in a ticked box or a
/// non-pending EVIDENCE line that the text it takes away does not hold.
fn adds_decisions(change: &Change) -> bool {
    let decides = |line: &&str| {
        ledger::is_ticked_gate_line(line)
            || ledger::indented_evidence(line)
                .is_some_and(|value| evidence::classify(Some(value), None) != EvidenceKind::Pending)
    };
    change.pieces().iter().any(|(old, new)| {
        let taken: Vec<&str> = old.lines().filter(decides).collect();
        new.lines().filter(decides).any(|line| !taken.contains(&line))
    })
}

/// The refusal a shell command earns: running the checker with
/// `--approve`, or rewriting protected state or a ledger.
pub fn shell(approves: bool, written: &[(Place, Writer)]) -> Option<Denial> {
    if approves {
        return Some(Denial::SelfApproval);
    }
    written.iter().find_map(|(place, how)| match place.protected {
        Some(store) => Some(Denial::Protected { path: place.shown.clone(), store }),
        None if place.ledger => Some(Denial::ShellRewrite { ledger: place.shown.clone(), how: *how }),
        None => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hook::pre_tool::change::Replacement;

    const LEDGER: &str = "# Gates\n\n- [ ] G1: builds\n  CHECK: make\n  EXPECT: ok\n  EVIDENCE: pending\n\
                          - [ ] M1: read by a person\n";

    fn ledger_place(text: Option<&str>) -> Place {
        Place { shown: "GATES.md".into(), ledger: true, text: text.map(str::to_string), ..Place::default() }
    }

    fn places(text: Option<&str>) -> Places {
        HashMap::from([("GATES.md".to_string(), ledger_place(text))])
    }

    fn edit(old: &str, new: &str) -> Vec<FileWrite> {
        let change = Change::Replace(vec![Replacement { old: old.into(), new: new.into() }]);
        vec![FileWrite { target: "GATES.md".into(), base: "GATES.md".into(), change }]
    }

    #[test]
    fn a_ticked_manual_gate_made_runnable_is_a_tick() {
        let manual = "- [x] M1: read by a person\n  EVIDENCE: automatic-evidence=v1; definition-sha256=abc\n";
        let runnable = manual.replace(": read by a person\n", ": read by a person\n  CHECK: make\n  EXPECT: ok\n");
        assert_eq!(decided(manual, &runnable), (vec!["M1".to_string()], vec!["M1".to_string()]));
        // Left manual, the same gate decides nothing a check owns.
        assert_eq!(decided(manual, manual), (Vec::new(), Vec::new()));
    }

    fn judged(old: &str, new: &str) -> Option<Denial> {
        files(&edit(old, new), &places(Some(LEDGER)))
    }

    fn decides(ticked: &[&str], evidenced: &[&str]) -> Option<Denial> {
        let ids = |ids: &[&str]| ids.iter().map(|id| id.to_string()).collect();
        Some(Denial::Decides { ledger: "GATES.md".into(), ticked: ids(ticked), evidenced: ids(evidenced) })
    }

    #[test]
    fn ticking_or_evidencing_a_runnable_gate_is_refused() {
        assert_eq!(judged("- [ ] G1", "- [x] G1"), decides(&["G1"], &[]));
        assert_eq!(judged("EVIDENCE: pending", "EVIDENCE: it passed"), decides(&[], &["G1"]));
        let both = judged(
            "- [ ] G1: builds\n  CHECK: make\n  EXPECT: ok\n  EVIDENCE: pending",
            "- [X] G1: builds\n  CHECK: make\n  EXPECT: ok\n  EVIDENCE: exit=0; shell=/bin/sh",
        );
        assert_eq!(both, decides(&["G1"], &["G1"]));
        // A new gate that arrives ticked, and a runnable gate made manual in the same edit.
        assert_eq!(judged("- [ ] M1", "- [x] G2: new\n  CHECK: true\n  EXPECT: x\n- [ ] M1"), decides(&["G2"], &[]));
        assert_eq!(judged("- [ ] G1: builds\n  CHECK: make\n  EXPECT: ok", "- [x] G1: builds"), decides(&["G1"], &[]));
        let refusal = judged("- [ ] G1", "- [x] G1").unwrap().reason();
        assert!(
            refusal.starts_with(
                "unlazy: refused: this edit would tick the box of runnable gate(s) G1 in the ledger GATES.md."
            ),
            "{refusal}"
        );
        assert!(refusal.contains("Run gate-check"), "{refusal}");
    }

    #[test]
    fn the_agents_own_edits_pass() {
        let ticked = LEDGER.replace("- [ ] G1", "- [x] G1");
        let untick = files(&edit("- [x] G1", "- [ ] G1"), &places(Some(&ticked)));
        assert_eq!(untick, None);
        for (old, new) in [
            (
                "- [ ] M1: read by a person\n",
                "- [ ] M1: read by a person\n- [ ] G2: new\n  CHECK: x\n  EXPECT: y\n  EVIDENCE: pending\n",
            ),
            ("# Gates", "# Gates of the build\n\nSome prose."),
            ("CHECK: make", "CHECK: make all"),
            ("EXPECT: ok", "EXPECT: /^ok$/"),
            ("- [ ] M1: read by a person", "- [x] M1: read by a person\n  EVIDENCE: read it twice"),
        ] {
            assert_eq!(judged(old, new), None, "{old:?} -> {new:?}");
        }
        // Evidence that was there stays; resetting it to pending is allowed.
        let done =
            LEDGER.replace("- [ ] G1", "- [x] G1").replace("EVIDENCE: pending", "EVIDENCE: automatic-evidence=v1; x");
        assert_eq!(files(&edit("builds", "builds fast"), &places(Some(&done))), None);
        assert_eq!(files(&edit("EVIDENCE: automatic-evidence=v1; x", "EVIDENCE: pending"), &places(Some(&done))), None);
    }

    #[test]
    fn whole_writes_moves_and_deletes() {
        let write = |text: &str| {
            vec![FileWrite { target: "GATES.md".into(), base: "GATES.md".into(), change: Change::Write(text.into()) }]
        };
        assert_eq!(files(&write(LEDGER), &places(Some(LEDGER))), None, "rewriting the same gates decides nothing");
        assert_eq!(files(&write(&LEDGER.replace("- [ ] G1", "- [x] G1")), &places(None)), decides(&["G1"], &[]));
        let delete = vec![FileWrite { target: "GATES.md".into(), base: "GATES.md".into(), change: Change::Delete }];
        assert_eq!(files(&delete, &places(Some(LEDGER))), None);
        // A file moved onto a ledger is judged against the ledger it replaces;
        // a moved ledger against itself.
        let forged = LEDGER.replace("- [ ] G1", "- [x] G1");
        let moved = |from: &str| {
            vec![FileWrite { target: "GATES.md".into(), base: from.into(), change: Change::Patch(vec![]) }]
        };
        let mut with_notes = places(Some(LEDGER));
        with_notes.insert(
            "notes.md".into(),
            Place { shown: "notes.md".into(), text: Some(forged.clone()), ..Place::default() },
        );
        assert_eq!(files(&moved("notes.md"), &with_notes), decides(&["G1"], &[]));
        with_notes.insert("gates/old.md".into(), Place { ledger: true, ..with_notes["notes.md"].clone() });
        assert_eq!(files(&moved("gates/old.md"), &with_notes), None);
    }

    #[test]
    fn edits_that_do_not_apply_are_judged_by_what_they_add() {
        assert_eq!(judged("not in the file", "- [x] G9: x"), Some(Denial::Unseen { ledger: "GATES.md".into() }));
        assert_eq!(judged("not in the file", "  EVIDENCE: ok"), Some(Denial::Unseen { ledger: "GATES.md".into() }));
        assert_eq!(judged("not in the file", "  EVIDENCE: pending\nprose"), None);
        assert_eq!(judged("- [x] G9: x\nold", "- [x] G9: x\nnew"), None, "a ticked line it only keeps");
        let unknown = vec![FileWrite { target: "GATES.md".into(), base: "GATES.md".into(), change: Change::Unknown }];
        assert_eq!(files(&unknown, &places(Some(LEDGER))), Some(Denial::Opaque { ledger: "GATES.md".into() }));
    }

    #[test]
    fn protected_state_and_plain_files() {
        let store = Place {
            shown: "/home/u/.unlazy/approved/x.json".into(),
            protected: Some(Protected::Approvals),
            ..Place::default()
        };
        let writes = vec![FileWrite { target: "x".into(), base: "x".into(), change: Change::Write("{}".into()) }];
        let denial = files(&writes, &HashMap::from([("x".to_string(), store.clone())])).unwrap();
        assert!(denial.reason().contains("/home/u/.unlazy/approved/x.json lies in the approval store"), "{denial:?}");
        let source = Place { shown: "src/main.rs".into(), ..Place::default() };
        assert_eq!(files(&writes, &HashMap::from([("x".to_string(), source.clone())])), None);
        assert_eq!(shell(true, &[]), Some(Denial::SelfApproval));
        assert_eq!(shell(false, &[(source, Writer::Tee)]), None);
        assert!(matches!(shell(false, &[(store, Writer::Redirection)]), Some(Denial::Protected { .. })));
        let ledger = ledger_place(Some(LEDGER));
        assert_eq!(
            shell(false, &[(ledger, Writer::Sed)]),
            Some(Denial::ShellRewrite { ledger: "GATES.md".into(), how: Writer::Sed })
        );
        let many: Vec<String> = (1..=7).map(|i| format!("G{i}")).collect();
        assert_eq!(listed(&many), "G1, G2, G3, G4, G5 (+2 more)");
    }
}
