//! What `baseline` finds, as typed values computed once: each gate's
//! result (`discriminates`, `vacuous`, `failing`, `unknown`, or not run
//! for want of approval), the sentence every reporter shows for it, and
//! the run's record with its JSON, JUnit and annotation renderings. Pure.

use serde::Serialize;

use crate::report::record::{
    escape_data, escape_property, failure_body, junit_case_start, junit_error_suite, sanitize_strings, xml_escape,
    CheckRecord, SandboxRecord,
};
use crate::report::tail::OutputTail;
use crate::terminal;

/// How one run of a gate's check went, on one side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Side {
    Passed,
    Failed,
    /// It could not be judged there; the reason.
    Unknown(String),
}

/// What a gate's check can tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Judgement {
    /// It fails on REF and passes now.
    Discriminates,
    /// It passes on REF too: it does not tell the change apart.
    Vacuous,
    /// It fails now.
    Failing,
    /// It passes now, but REF's checkout cannot run it.
    Unknown,
    /// It holds no approval, so nothing of it ran.
    ApprovalRequired,
}

impl Judgement {
    pub fn name(self) -> &'static str {
        match self {
            Judgement::Discriminates => "discriminates",
            Judgement::Vacuous => "vacuous",
            Judgement::Failing => "failing",
            Judgement::Unknown => "unknown",
            Judgement::ApprovalRequired => "approval-required",
        }
    }

    /// The marker that opens its human line.
    pub fn marker(self) -> &'static str {
        match self {
            Judgement::Discriminates => "DISCRIMINATES",
            Judgement::Vacuous => "VACUOUS",
            Judgement::Failing => "FAILING",
            Judgement::Unknown => "UNKNOWN",
            Judgement::ApprovalRequired => "NOT RUN",
        }
    }
}

/// The result of an approved gate from how its check went now and on REF.
/// Failing now decides first: a check that does not pass on the work tree
/// tells nothing apart, whatever REF does.
pub fn judge(now: &Side, base: &Side) -> (Judgement, Option<String>) {
    match (now, base) {
        (Side::Failed, _) => (Judgement::Failing, None),
        (Side::Unknown(reason), _) => (Judgement::Unknown, Some(format!("now: {reason}"))),
        (Side::Passed, Side::Unknown(reason)) => (Judgement::Unknown, Some(reason.clone())),
        (Side::Passed, Side::Passed) => (Judgement::Vacuous, None),
        (Side::Passed, Side::Failed) => (Judgement::Discriminates, None),
    }
}

/// REF as the run resolved it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reference {
    /// As given on the command line.
    #[serde(rename = "ref")]
    pub given: String,
    pub commit: String,
    pub short_commit: String,
}

impl Reference {
    /// `abc1234 (origin/main)`: how every line names REF.
    pub fn shown(&self) -> String {
        format!("{} ({})", self.short_commit, self.given)
    }
}

/// One run of a gate's check in this baseline, as a record: the check's
/// own record, and where the verdict came from.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SideRecord {
    #[serde(flatten)]
    pub check: CheckRecord,
    /// `run`: the check ran in this baseline; `proof`: its current proof
    /// on this tree stood in for the run (now only).
    pub source: &'static str,
    /// With `proof`: when gate-check proved it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proven_at: Option<String>,
    /// `exit=...; EXPECT=...; output=...`, as the human line shows it.
    #[serde(skip)]
    pub outcome: String,
}

/// One gate's result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GateResult {
    pub ledger: String,
    /// One-based line of the gate.
    pub line: usize,
    pub id: String,
    pub qualified_id: String,
    pub title: String,
    pub result: Judgement,
    /// Why it is `unknown` or `approval-required`.
    pub reason: Option<String>,
    /// Its check on the work tree as it is now; absent when nothing ran.
    pub now: Option<SideRecord>,
    /// Its check on REF's checkout; absent when nothing ran there.
    pub base: Option<SideRecord>,
}

impl GateResult {
    /// What the line after the marker says: `passes on abc1234
    /// (origin/main) too`.
    pub fn sentence(&self, reference: &Reference) -> String {
        let on = reference.shown();
        let base_passed = self.base.as_ref().map(|base| base.check.status.name() == "pass");
        let proven =
            if self.now.as_ref().is_some_and(|now| now.source == "proof") { " (proven on this tree)" } else { "" };
        match self.result {
            Judgement::Discriminates => format!("fails on {on}, passes now{proven}"),
            Judgement::Vacuous => format!("passes on {on} too"),
            Judgement::Failing => match base_passed {
                Some(true) => format!("fails now, but passes on {on}"),
                Some(false) => format!("fails now, and on {on}"),
                None => "fails now".to_string(),
            },
            Judgement::Unknown => {
                format!("passes now{proven}, but cannot be judged on {on}: {}", self.reason.as_deref().unwrap_or(""))
            }
            Judgement::ApprovalRequired => "approval required; nothing of it ran".to_string(),
        }
    }

    /// The run a reader should look at: the base run of a gate that
    /// discriminates (a failure for the wrong reason shows there), the
    /// now run of one that fails.
    pub fn telling_side(&self) -> Option<(&'static str, &SideRecord)> {
        match self.result {
            Judgement::Discriminates => self.base.as_ref().map(|base| ("on REF", base)),
            Judgement::Failing => self.now.as_ref().map(|now| ("now", now)),
            _ => None,
        }
    }
}

/// Counts by result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub discriminates: usize,
    pub vacuous: usize,
    pub failing: usize,
    pub unknown: usize,
    pub approval_required: usize,
}

impl Summary {
    pub fn of(gates: &[GateResult]) -> Summary {
        let mut summary = Summary::default();
        for gate in gates {
            *match gate.result {
                Judgement::Discriminates => &mut summary.discriminates,
                Judgement::Vacuous => &mut summary.vacuous,
                Judgement::Failing => &mut summary.failing,
                Judgement::Unknown => &mut summary.unknown,
                Judgement::ApprovalRequired => &mut summary.approval_required,
            } += 1;
        }
        summary
    }

    pub fn total(&self) -> usize {
        self.discriminates + self.vacuous + self.failing + self.unknown + self.approval_required
    }

    /// Every gate judged discriminates.
    pub fn all_discriminate(&self) -> bool {
        self.total() > 0 && self.discriminates == self.total()
    }

    /// The verdict line after its marker: `1 of 4 (vacuous: 1, ...)`.
    pub fn line(&self) -> String {
        let others: Vec<String> = [
            ("vacuous", self.vacuous),
            ("failing", self.failing),
            ("unknown", self.unknown),
            ("approval required", self.approval_required),
        ]
        .iter()
        .filter(|(_, count)| *count > 0)
        .map(|(name, count)| format!("{name}: {count}"))
        .collect();
        match others.is_empty() {
            true => format!("{} gate(s)", self.discriminates),
            false => format!("{} of {} ({})", self.discriminates, self.total(), others.join(", ")),
        }
    }
}

/// How the runs on REF were confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaseConfinement {
    Confined(SandboxRecord),
    /// `--unconfined`.
    Unconfined,
}

/// What the run says once, before any result: REF and how it runs there.
#[derive(Debug, Clone)]
pub struct Header {
    pub reference: Reference,
    pub base: BaseConfinement,
    /// `--sandbox`: how the runs on the work tree are confined.
    pub now: Option<SandboxRecord>,
}

impl Header {
    /// The line saying what runs where, and that the runs on REF reuse
    /// each gate's approval.
    pub fn line(&self) -> String {
        let (on, short) = (self.reference.shown(), &self.reference.short_commit);
        format!(
            "{on}: each approved gate's check runs on a temporary checkout of {short} and on the work tree; a run on \
             {short} reuses the gate's approval, its CWD mapped into the checkout"
        )
    }

    /// The confinement of the runs on REF, after its marker.
    pub fn base_line(&self) -> String {
        let short = &self.reference.short_commit;
        match &self.base {
            BaseConfinement::Confined(record) => {
                format!("runs on {short} are confined: {}", confined(record, "the checkout"))
            }
            BaseConfinement::Unconfined => {
                format!("runs on {short} are not confined (--unconfined): its code runs with your full authority")
            }
        }
    }

    /// `--sandbox`: the confinement of the runs on the work tree.
    pub fn now_line(&self) -> Option<String> {
        let record = self.now.as_ref()?;
        let fences = record.writable.join(", ");
        Some(format!("runs on the work tree are confined: {}", confined(record, &fences)))
    }
}

fn confined(record: &SandboxRecord, fence: &str) -> String {
    let withheld = match record.withheld_variables.as_slice() {
        [] => "no credential variable to withhold".to_string(),
        names => format!("withheld {}", names.join(", ")),
    };
    format!(
        "writes only under {fence} and a private TMPDIR (Landlock ABI {}; every other mount read-only), no network, \
         {withheld}",
        record.landlock_abi
    )
}

/// What a baseline run tells its reporters, beside the checker's events.
pub enum BaselineEvent<'a> {
    /// Said once, before anything is approved or run.
    Header(&'a Header),
    /// The approval shown last is missing: baseline approves nothing.
    NotRun,
    /// One gate's result, in ledger order.
    Judged { gate: &'a GateResult, reference: &'a Reference, tail: Option<&'a OutputTail> },
    /// The record of the whole run, also of one that failed.
    Report(&'a BaselineReport),
}

/// The record of a baseline run (`baseline --format json`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BaselineReport {
    pub schema: u32,
    pub tool: &'static str,
    pub version: &'static str,
    pub mode: &'static str,
    /// REF, once resolved.
    pub reference: Option<Reference>,
    /// How the runs on REF were confined: absent with `--unconfined` (and
    /// before REF was checked out).
    pub sandbox: Option<SandboxRecord>,
    /// `--unconfined` was given.
    pub unconfined: bool,
    pub scope: Option<String>,
    /// `all-discriminate`, `not-all-discriminate`, `error` or `interrupted`.
    pub outcome: &'static str,
    pub exit_code: i32,
    pub summary: Summary,
    pub gates: Vec<GateResult>,
    pub errors: Vec<String>,
    /// The command that approves the gates that were not run, when some were not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_command: Option<String>,
}

impl BaselineReport {
    /// A report of a run that stopped before judging anything.
    pub fn failed(errors: Vec<String>, outcome: &'static str, exit_code: i32) -> BaselineReport {
        BaselineReport {
            schema: 1,
            tool: "gate-check",
            version: env!("CARGO_PKG_VERSION"),
            mode: "baseline",
            reference: None,
            sandbox: None,
            unconfined: false,
            scope: None,
            outcome,
            exit_code,
            summary: Summary::default(),
            gates: Vec::new(),
            errors,
            next_command: None,
        }
    }

    /// The JSON document; every string sanitized.
    pub fn to_json(&self) -> String {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        sanitize_strings(&mut value);
        let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
        text.push('\n');
        text
    }

    /// The message a test report and an annotation give a gate that does
    /// not discriminate: `vacuous: passes on abc1234 (origin/main) too`.
    fn message(&self, gate: &GateResult) -> String {
        match &self.reference {
            Some(reference) => format!("{}: {}", gate.result.name(), gate.sentence(reference)),
            None => gate.result.name().to_string(),
        }
    }

    /// The JUnit document: one suite per ledger, a gate that discriminates
    /// is a passing test case and every other result a failure of its
    /// type; a run error is one errored test case.
    pub fn to_junit(&self, display_path: impl Fn(&str) -> String) -> String {
        let failing = |gate: &GateResult| gate.result != Judgement::Discriminates;
        let seconds = |gates: &[&GateResult]| -> f64 {
            let side = |side: &Option<SideRecord>| side.as_ref().and_then(|side| side.check.duration_ms).unwrap_or(0);
            gates.iter().map(|gate| side(&gate.now) + side(&gate.base)).sum::<u64>() as f64 / 1000.0
        };
        let all: Vec<&GateResult> = self.gates.iter().collect();
        let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        xml.push_str(&format!(
            "<testsuites name=\"gate-check baseline\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\" time=\"{:.3}\">\n",
            self.gates.len(),
            all.iter().filter(|gate| failing(gate)).count(),
            self.errors.len(),
            seconds(&all)
        ));
        xml.push_str(&junit_error_suite("gate-check baseline", "baseline", &self.errors));
        let mut ledgers: Vec<&str> = Vec::new();
        for gate in &self.gates {
            if !ledgers.contains(&gate.ledger.as_str()) {
                ledgers.push(&gate.ledger);
            }
        }
        for ledger in ledgers {
            let gates: Vec<&GateResult> = self.gates.iter().filter(|gate| gate.ledger == ledger).collect();
            xml.push_str(&format!(
                "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\" time=\"{:.3}\">\n",
                xml_escape(&display_path(ledger)),
                gates.len(),
                gates.iter().filter(|gate| failing(gate)).count(),
                seconds(&gates)
            ));
            xml.push_str("    <properties>\n");
            if let Some(reference) = &self.reference {
                for (name, value) in [("ref", &reference.given), ("commit", &reference.commit)] {
                    let value = xml_escape(value);
                    xml.push_str(&format!("      <property name=\"gate-check.baseline.{name}\" value=\"{value}\"/>\n"));
                }
            }
            let confinement = if self.sandbox.is_some() { "confined" } else { "unconfined" };
            xml.push_str(&format!("      <property name=\"gate-check.baseline.sandbox\" value=\"{confinement}\"/>\n"));
            xml.push_str("    </properties>\n");
            for gate in gates {
                xml.push_str(&junit_case_start(
                    &gate.qualified_id,
                    &gate.id,
                    &gate.title,
                    &display_path(&gate.ledger),
                    gate.line,
                    seconds(&[gate]),
                ));
                xml.push_str(">\n");
                xml.push_str(&format!(
                    "      <properties>\n        <property name=\"gate-check.baseline\" value=\"{}\"/>\n      </properties>\n",
                    gate.result.name()
                ));
                if failing(gate) {
                    let message = self.message(gate);
                    let tail = gate.telling_side().and_then(|(_, side)| side.check.output_tail.as_ref());
                    xml.push_str(&format!(
                        "      <failure message=\"{}\" type=\"{}\">{}</failure>\n",
                        xml_escape(&message),
                        gate.result.name(),
                        failure_body(&message, tail)
                    ));
                }
                xml.push_str("    </testcase>\n");
            }
            xml.push_str("  </testsuite>\n");
        }
        xml.push_str("</testsuites>\n");
        terminal::neutralize_workflow_commands(&xml).into_owned()
    }

    /// `::error` workflow commands: one per gate that does not
    /// discriminate, at its ledger line, and one per run error.
    pub fn github_annotations(&self, display_path: impl Fn(&str) -> String) -> Vec<String> {
        let mut lines: Vec<String> = self
            .gates
            .iter()
            .filter(|gate| gate.result != Judgement::Discriminates)
            .map(|gate| {
                format!(
                    "::error file={},line={},title={}::{}",
                    escape_property(&display_path(&gate.ledger)),
                    gate.line,
                    escape_property(&format!("baseline {}", gate.qualified_id)),
                    escape_data(&self.message(gate))
                )
            })
            .collect();
        lines.extend(
            self.errors.iter().map(|error| format!("::error title=gate-check baseline::{}", escape_data(error))),
        );
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::record::CheckStatus;

    fn unknown(reason: &str) -> Side {
        Side::Unknown(reason.to_string())
    }

    #[test]
    fn failing_now_decides_before_anything_on_ref() {
        for base in [Side::Passed, Side::Failed, unknown("no CWD")] {
            assert_eq!(judge(&Side::Failed, &base), (Judgement::Failing, None));
        }
        assert_eq!(judge(&Side::Passed, &Side::Failed), (Judgement::Discriminates, None));
        assert_eq!(judge(&Side::Passed, &Side::Passed), (Judgement::Vacuous, None));
        assert_eq!(judge(&Side::Passed, &unknown("no CWD")), (Judgement::Unknown, Some("no CWD".into())));
        assert_eq!(judge(&unknown("no fd"), &Side::Passed), (Judgement::Unknown, Some("now: no fd".into())));
    }

    fn side(status: CheckStatus, source: &'static str) -> SideRecord {
        let check = CheckRecord {
            status,
            exit: None,
            signal: None,
            duration_ms: Some(1500),
            reason: None,
            output_sha256: None,
            output_tail: None,
        };
        SideRecord { check, source, proven_at: None, outcome: String::new() }
    }

    fn gate(id: &str, result: Judgement, now: Option<SideRecord>, base: Option<SideRecord>) -> GateResult {
        GateResult {
            ledger: "/r/GATES.md".into(),
            line: 3,
            id: id.into(),
            qualified_id: format!("GATES:{id}"),
            title: "a <b>".into(),
            result,
            reason: (result == Judgement::Unknown).then(|| "its CWD sub does not exist there".to_string()),
            now,
            base,
        }
    }

    fn reference() -> Reference {
        Reference { given: "HEAD~1".into(), commit: "abc1234def".into(), short_commit: "abc1234".into() }
    }

    #[test]
    fn each_result_reads_as_one_sentence_naming_the_short_commit() {
        let (pass, fail) = (Some(side(CheckStatus::Pass, "run")), Some(side(CheckStatus::Fail, "run")));
        let proven = Some(side(CheckStatus::Pass, "proof"));
        let sentence = |gate: GateResult| gate.sentence(&reference());
        assert_eq!(
            sentence(gate("V1", Judgement::Vacuous, pass.clone(), pass.clone())),
            "passes on abc1234 (HEAD~1) too"
        );
        assert_eq!(
            sentence(gate("D1", Judgement::Discriminates, proven.clone(), fail.clone())),
            "fails on abc1234 (HEAD~1), passes now (proven on this tree)"
        );
        assert_eq!(
            sentence(gate("F1", Judgement::Failing, fail.clone(), pass.clone())),
            "fails now, but passes on abc1234 (HEAD~1)"
        );
        assert_eq!(sentence(gate("F2", Judgement::Failing, fail.clone(), None)), "fails now");
        assert_eq!(
            sentence(gate("X1", Judgement::Unknown, pass.clone(), None)),
            "passes now, but cannot be judged on abc1234 (HEAD~1): its CWD sub does not exist there"
        );
    }

    #[test]
    fn every_report_says_what_the_exit_code_says() {
        let pass = Some(side(CheckStatus::Pass, "run"));
        let mut report = BaselineReport::failed(Vec::new(), "not-all-discriminate", 1);
        report.reference = Some(reference());
        report.gates = vec![
            gate("D1", Judgement::Discriminates, pass.clone(), Some(side(CheckStatus::Fail, "run"))),
            gate("V1", Judgement::Vacuous, pass.clone(), pass.clone()),
            gate("U1", Judgement::ApprovalRequired, None, None),
        ];
        report.summary = Summary::of(&report.gates);
        assert_eq!(report.summary.line(), "1 of 3 (vacuous: 1, approval required: 1)");
        assert!(!report.summary.all_discriminate());
        let xml = report.to_junit(|ledger| ledger.trim_start_matches("/r/").to_string());
        assert!(xml.contains("tests=\"3\" failures=\"2\" errors=\"0\""), "{xml}");
        assert!(
            xml.contains("<failure message=\"vacuous: passes on abc1234 (HEAD~1) too\" type=\"vacuous\">"),
            "{xml}"
        );
        assert!(xml.contains("name=\"D1: a &lt;b&gt;\" file=\"GATES.md\" line=\"3\" time=\"3.000\">"), "{xml}");
        let annotations = report.github_annotations(|ledger| ledger.trim_start_matches("/r/").to_string());
        assert_eq!(
            annotations,
            [
                "::error file=GATES.md,line=3,title=baseline GATES%3AV1::vacuous: passes on abc1234 (HEAD~1) too",
                "::error file=GATES.md,line=3,title=baseline GATES%3AU1::approval-required: approval required; nothing of it ran",
            ]
        );
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(json["reference"]["ref"], "HEAD~1");
        assert_eq!(json["gates"][0]["base"]["status"], "fail");
        assert_eq!(json["gates"][0]["now"]["source"], "run");
        assert_eq!(json["summary"]["approvalRequired"], 1);
    }
}
