//! The machine record of a run (`RunReport`, one `GateRecord` per gate)
//! and its three renderings: the JSON document, the JUnit document and
//! GitHub Actions annotations. Pure.

use serde::Serialize;

use crate::evidence::GateState;
use crate::terminal::{self, safe};

use super::tail;

/// What happened to a gate's check in this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckStatus {
    Pass,
    Fail,
    /// The result was discarded: the gate changed while its check ran.
    Stale,
    NotRun,
    /// An interrupt stopped the check; nothing was written for it.
    Interrupted,
}

impl CheckStatus {
    /// The name the JSON document carries.
    pub fn name(self) -> &'static str {
        match self {
            CheckStatus::Pass => "pass",
            CheckStatus::Fail => "fail",
            CheckStatus::Stale => "stale",
            CheckStatus::NotRun => "not-run",
            CheckStatus::Interrupted => "interrupted",
        }
    }
}

/// The check of one gate in this run.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckRecord {
    pub status: CheckStatus,
    pub exit: Option<i32>,
    pub signal: Option<String>,
    pub duration_ms: Option<u64>,
    pub reason: Option<String>,
    pub output_sha256: Option<String>,
    /// The end of a failed check's output, sanitized like every string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tail: Option<tail::OutputTail>,
}

/// A gate's state as a run counts it: the ledger's state, except for a
/// gate met on disk that the run counts unmet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RecordState {
    Abandoned,
    Unmet,
    UnmetNoEvidence,
    StaleUnmet,
    Met,
    /// Met on disk but not counted: the run was asked to verify it and
    /// could not, or (`--proof`) its proof is not current; `reason` says why.
    Unverified,
}

impl RecordState {
    pub fn name(self) -> &'static str {
        match self {
            RecordState::Unverified => "unverified",
            RecordState::Abandoned => GateState::Abandoned.name(),
            RecordState::Unmet => GateState::Unmet.name(),
            RecordState::UnmetNoEvidence => GateState::UnmetNoEvidence.name(),
            RecordState::StaleUnmet => GateState::StaleUnmet.name(),
            RecordState::Met => GateState::Met.name(),
        }
    }
}

impl From<GateState> for RecordState {
    fn from(state: GateState) -> RecordState {
        match state {
            GateState::Abandoned => RecordState::Abandoned,
            GateState::Unmet => RecordState::Unmet,
            GateState::UnmetNoEvidence => RecordState::UnmetNoEvidence,
            GateState::StaleUnmet => RecordState::StaleUnmet,
            GateState::Met => RecordState::Met,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GateRecord {
    pub ledger: String,
    /// One-based line of the gate.
    pub line: usize,
    pub id: String,
    pub qualified_id: String,
    pub title: String,
    pub state: RecordState,
    /// Why a gate met on disk is not counted (`unverified`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub checked: bool,
    pub runnable: bool,
    /// The definition digest that automatic evidence must be bound to.
    pub definition_digest: Option<String>,
    /// With `--gate`: whether this gate was chosen (an unchosen one is
    /// neither run nor counted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selected: Option<bool>,
    pub check: Option<CheckRecord>,
    /// A met runnable gate's proof: whether gate-check proved it on the
    /// tree as it is now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proof: Option<crate::proof::ProofRecord>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LedgerRecord {
    pub path: String,
    pub gates: usize,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub met: usize,
    pub unmet: usize,
    pub abandoned: usize,
    pub reran: Option<usize>,
    pub previously_met_reverified: Option<usize>,
    /// With `--gate`: the gates not counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_selected: Option<usize>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunReport {
    pub schema: u32,
    pub tool: &'static str,
    pub version: &'static str,
    /// `run`, `status`, `approve`, `reverify` or `approve+reverify`.
    pub mode: String,
    pub scope: Option<String>,
    /// `--sandbox`: how the run's checks were confined; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxRecord>,
    /// The repository's own ledgers (`GATES.md`, `gates/*.md`) the run left
    /// out because it chose the only pipeline on its own; absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_targeted: Vec<String>,
    /// Beside `not_targeted`: their gates that are not met, qualified (a
    /// ledger that does not parse is `<stem>:PARSE`), which no verdict judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_targeted_unmet: Option<Vec<String>>,
    /// `all-met`, `unmet`, `handoff-required` or `error`.
    pub outcome: &'static str,
    pub exit_code: i32,
    pub summary: Summary,
    /// Everything counted unmet, qualified, with a note where the reason
    /// is not the gate's own state (for example `(reverify not run)`).
    pub unmet: IdList,
    pub abandoned: Vec<String>,
    pub ledgers: Vec<LedgerRecord>,
    pub gates: Vec<GateRecord>,
    /// The scope's dispatch waves that are not complete.
    pub waves: WaveRecords,
    pub errors: Vec<String>,
    /// Where each of `errors` is in a ledger, when it is (a parse error):
    /// GitHub annotations point at that line.
    #[serde(skip)]
    pub error_places: Vec<Option<crate::diagnostic::Diagnostic>>,
    /// The command that moves an unmet run on, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_command: Option<String>,
    /// What left gates unselected (`--gate`, `--partition 2/4`), for the
    /// JUnit skip message; the JSON says it per gate (`selected`).
    #[serde(skip)]
    pub selected_by: String,
}

/// How a `--sandbox` run confined its checks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxRecord {
    /// The Landlock ABI version the kernel enforced.
    pub landlock_abi: u8,
    /// The trees checks could write to besides each check's own TMPDIR:
    /// each ledger's repository (a check only its own ledger's), in
    /// ledger order.
    pub writable: Vec<String>,
    /// Always `false`: each check had a network namespace of its own.
    pub network: bool,
    /// The names (never the values) of the variables checks did not inherit.
    pub withheld_variables: Vec<String>,
}

impl SandboxRecord {
    /// The human line before the first RUN line.
    pub fn summary(&self) -> String {
        let withheld = match self.withheld_variables.as_slice() {
            [] => "no credential variable to withhold".to_string(),
            names => format!("withheld {}", names.join(", ")),
        };
        let fences = match self.writable.as_slice() {
            [one] => one.clone(),
            several => format!("its ledger's repository ({})", several.join(", ")),
        };
        format!(
            "checks run confined: writes only under {fences} and a private TMPDIR (Landlock ABI {}; every other mount \
             read-only), no network, {withheld}",
            self.landlock_abi
        )
    }
}

/// A test suite's `<properties>` saying how its checks were confined.
fn sandbox_properties(sandbox: &SandboxRecord) -> String {
    let mut properties = vec![
        ("gate-check.sandbox", "confined".to_string()),
        ("gate-check.sandbox.landlockAbi", sandbox.landlock_abi.to_string()),
    ];
    // One property per fence: a path may hold any separator.
    properties.extend(sandbox.writable.iter().map(|fence| ("gate-check.sandbox.writable", fence.clone())));
    properties.extend([
        ("gate-check.sandbox.network", "none".to_string()),
        ("gate-check.sandbox.withheldVariables", sandbox.withheld_variables.join(",")),
    ]);
    let mut xml = String::from("    <properties>\n");
    for (name, value) in properties {
        xml.push_str(&format!("      <property name=\"{name}\" value=\"{}\"/>\n", xml_escape(&value)));
    }
    xml.push_str("    </properties>\n");
    xml
}

/// Dispatch waves that keep a scope from being complete.
#[derive(Debug, Clone, Default, Serialize)]
pub struct WaveRecords {
    /// `dispatch:<wave> open (S/N started)` or `... sealed (R/N returned)`.
    pub blocking: Vec<String>,
    /// `dispatch:<wave>`: abandoned waves, a handoff.
    pub abandoned: Vec<String>,
}

impl RunReport {
    /// A report for a run that stopped on a usage, parse or infrastructure
    /// error before it could judge any gate.
    pub fn failed(
        mode: String,
        errors: Vec<String>,
        error_places: Vec<Option<crate::diagnostic::Diagnostic>>,
    ) -> RunReport {
        RunReport {
            schema: 1,
            tool: "gate-check",
            version: env!("CARGO_PKG_VERSION"),
            mode,
            scope: None,
            sandbox: None,
            not_targeted: Vec::new(),
            not_targeted_unmet: None,
            outcome: "error",
            exit_code: 2,
            summary: Summary {
                met: 0,
                unmet: 0,
                abandoned: 0,
                reran: None,
                previously_met_reverified: None,
                not_selected: None,
            },
            unmet: Default::default(),
            abandoned: Vec::new(),
            ledgers: Vec::new(),
            gates: Vec::new(),
            waves: WaveRecords::default(),
            errors,
            error_places,
            next_command: None,
            selected_by: String::new(),
        }
    }

    /// The JSON document; every string in it has passed the sanitizer, so
    /// no decoder can get a control or bidi character out of it.
    pub fn to_json(&self) -> String {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        sanitize_strings(&mut value);
        let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
        text.push('\n');
        text
    }

    /// The JUnit document; `display_path` names each ledger (relative to
    /// the repository, or the Actions workspace).
    pub fn to_junit(&self, display_path: impl Fn(&str) -> String) -> String {
        let unselected = |g: &GateRecord| g.selected == Some(false);
        let failing = |g: &GateRecord| !matches!(g.state, RecordState::Met | RecordState::Abandoned) && !unselected(g);
        let skipping = |g: &GateRecord| g.state == RecordState::Abandoned || unselected(g);
        let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let waves = self.waves.blocking.len() + self.waves.abandoned.len();
        let failures = self.gates.iter().filter(|g| failing(g)).count() + self.waves.blocking.len();
        let skipped = self.gates.iter().filter(|g| skipping(g)).count() + self.waves.abandoned.len();
        let seconds = |gates: &[&GateRecord]| -> f64 {
            gates.iter().filter_map(|g| g.check.as_ref()?.duration_ms).sum::<u64>() as f64 / 1000.0
        };
        let all: Vec<&GateRecord> = self.gates.iter().collect();
        xml.push_str(&format!(
            "<testsuites name=\"gate-check\" tests=\"{}\" failures=\"{failures}\" errors=\"{}\" skipped=\"{skipped}\" time=\"{:.3}\">\n",
            self.gates.len() + waves,
            self.errors.len(),
            seconds(&all)
        ));
        xml.push_str(&junit_error_suite("gate-check", "ledger", &self.errors));
        for ledger in &self.ledgers {
            let gates: Vec<&GateRecord> = self.gates.iter().filter(|g| g.ledger == ledger.path).collect();
            xml.push_str(&format!(
                "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{:.3}\">\n",
                xml_escape(&display_path(&ledger.path)),
                gates.len(),
                gates.iter().filter(|g| failing(g)).count(),
                gates.iter().filter(|g| skipping(g)).count(),
                seconds(&gates)
            ));
            if let Some(sandbox) = &self.sandbox {
                xml.push_str(&sandbox_properties(sandbox));
            }
            for gate in gates {
                xml.push_str(&junit_case_start(
                    &gate.qualified_id,
                    &gate.id,
                    &gate.title,
                    &display_path(&gate.ledger),
                    gate.line,
                    seconds(&[gate]),
                ));
                let properties = proof_properties(gate);
                if gate.state == RecordState::Met && !unselected(gate) && properties.is_empty() {
                    xml.push_str("/>\n");
                    continue;
                }
                xml.push_str(">\n");
                xml.push_str(&properties);
                if gate.state == RecordState::Met && !unselected(gate) {
                    xml.push_str("    </testcase>\n");
                    continue;
                }
                let message = describe(gate);
                if unselected(gate) {
                    xml.push_str(&format!(
                        "      <skipped message=\"not selected ({})\"/>\n",
                        xml_escape(&self.selected_by)
                    ));
                } else if gate.state == RecordState::Abandoned {
                    xml.push_str(&format!("      <skipped message=\"{}\"/>\n", xml_escape(&message)));
                } else {
                    xml.push_str(&format!(
                        "      <failure message=\"{}\" type=\"{}\">{}</failure>\n",
                        xml_escape(&message),
                        gate.state.name(),
                        failure_body(&message, gate.check.as_ref().and_then(|c| c.output_tail.as_ref()))
                    ));
                }
                xml.push_str("    </testcase>\n");
            }
            xml.push_str("  </testsuite>\n");
        }
        if waves > 0 {
            xml.push_str(&format!(
                "  <testsuite name=\"dispatch waves\" tests=\"{waves}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n",
                self.waves.blocking.len(),
                self.waves.abandoned.len()
            ));
            for wave in &self.waves.blocking {
                let name = xml_escape(wave);
                xml.push_str(&format!(
                    "    <testcase classname=\"dispatch\" name=\"{name}\">\n      <failure message=\"wave incomplete: {name}\" type=\"wave-incomplete\"/>\n    </testcase>\n"
                ));
            }
            for wave in &self.waves.abandoned {
                let name = xml_escape(wave);
                xml.push_str(&format!(
                    "    <testcase classname=\"dispatch\" name=\"{name}\">\n      <skipped message=\"wave abandoned (handoff required)\"/>\n    </testcase>\n"
                ));
            }
            xml.push_str("  </testsuite>\n");
        }
        xml.push_str("</testsuites>\n");
        // Check output inside the document must not drive a CI runner that
        // prints it, whenever it is printed.
        terminal::neutralize_workflow_commands(&xml).into_owned()
    }

    /// `::error`/`::warning` workflow commands, one per gate that is not
    /// met, pointing at its line. `display_path` maps a ledger path to the
    /// path GitHub should link (relative to the workspace where possible).
    pub fn github_annotations(&self, display_path: impl Fn(&str) -> String) -> Vec<String> {
        let mut lines: Vec<String> = self
            .gates
            .iter()
            .filter(|g| g.state != RecordState::Met && g.selected != Some(false))
            .map(|gate| {
                let level = if gate.state == RecordState::Abandoned { "warning" } else { "error" };
                format!(
                    "::{level} file={},line={},title={}::{}",
                    escape_property(&display_path(&gate.ledger)),
                    gate.line,
                    escape_property(&format!("gate {}", gate.qualified_id)),
                    escape_data(&describe(gate))
                )
            })
            .collect();
        lines.extend(
            self.waves
                .blocking
                .iter()
                .map(|w| format!("::error title=dispatch wave::{} is incomplete", escape_data(w))),
        );
        lines.extend(
            self.waves
                .abandoned
                .iter()
                .map(|w| format!("::warning title=dispatch wave::{} was abandoned (handoff required)", escape_data(w))),
        );
        for (at, error) in self.errors.iter().enumerate() {
            lines.push(match self.error_places.get(at).and_then(Option::as_ref) {
                Some(place) => {
                    let line = place.line.map(|line| format!(",line={line}")).unwrap_or_default();
                    format!(
                        "::error file={}{line},title=gate-check::{}",
                        escape_property(&display_path(&place.path)),
                        escape_data(&place.message)
                    )
                }
                None => format!("::error title=gate-check::{}", escape_data(error)),
            });
        }
        lines
    }
}

/// A test case's `<properties>` naming its gate's proof, when it has one.
fn proof_properties(gate: &GateRecord) -> String {
    let Some(proof) = &gate.proof else { return String::new() };
    let mut xml = String::from("      <properties>\n");
    xml.push_str(&format!("        <property name=\"gate-check.proof\" value=\"{}\"/>\n", proof.state));
    if !proof.changed.is_empty() {
        let changed = xml_escape(&proof.changed.join(","));
        xml.push_str(&format!("        <property name=\"gate-check.proof.changed\" value=\"{changed}\"/>\n"));
    }
    if let Some(at) = &proof.proven_at {
        xml.push_str(&format!("        <property name=\"gate-check.proof.provenAt\" value=\"{}\"/>\n", xml_escape(at)));
    }
    xml.push_str("      </properties>\n");
    xml
}

/// One sentence for a gate that is not met.
fn describe(gate: &GateRecord) -> String {
    let unverified;
    let state = match gate.state {
        RecordState::Unmet => "unmet (unchecked)",
        RecordState::UnmetNoEvidence => "unmet (checked but EVIDENCE pending)",
        RecordState::StaleUnmet => "unmet (checked but automatic evidence is stale or unbound)",
        RecordState::Abandoned => "abandoned (handoff required)",
        RecordState::Met => "met",
        RecordState::Unverified => {
            unverified = format!("not counted met ({})", gate.reason.as_deref().unwrap_or("unverified"));
            &unverified
        }
    };
    match gate.check.as_ref() {
        Some(check) if check.status != CheckStatus::Pass => {
            let reason = check.reason.as_deref().unwrap_or("EXPECT not matched or non-zero exit");
            format!("{}: {state}; {}: {reason}", gate.title, check.status.name())
        }
        _ => format!("{}: {state}", gate.title),
    }
}

/// The JUnit suite that reports a run's errors as one errored test case
/// `case` of suite `suite`; nothing when there were none.
pub(crate) fn junit_error_suite(suite: &str, case: &str, errors: &[String]) -> String {
    let Some(first) = errors.first() else { return String::new() };
    format!(
        "  <testsuite name=\"{suite}\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\">\n    \
         <testcase classname=\"gate-check\" name=\"{case}\">\n      <error message=\"{}\">{}</error>\n    \
         </testcase>\n  </testsuite>\n",
        xml_escape(first),
        errors.iter().map(|error| xml_escape(error)).collect::<Vec<_>>().join("\n")
    )
}

/// The start of a gate's JUnit test case, without its closing `>`: the
/// gate's ledger stem as class, `ID: title` as name, and where it is.
pub(crate) fn junit_case_start(
    qualified_id: &str,
    id: &str,
    title: &str,
    file: &str,
    line: usize,
    seconds: f64,
) -> String {
    let classname = qualified_id.rsplit_once(':').map_or("", |(stem, _)| stem);
    format!(
        "    <testcase classname=\"{}\" name=\"{}\" file=\"{}\" line=\"{line}\" time=\"{seconds:.3}\"",
        xml_escape(classname),
        xml_escape(&format!("{id}: {title}")),
        xml_escape(file),
    )
}

/// A JUnit `<failure>` text: the sentence, then the output tail line by
/// line (each line sanitized on its own, so the line breaks survive).
pub(crate) fn failure_body(message: &str, tail: Option<&tail::OutputTail>) -> String {
    let mut body = xml_escape(message);
    if let Some(tail) = tail {
        body.push_str("\n\n");
        body.push_str(&xml_escape(&tail.heading()));
        for line in &tail.lines {
            body.push('\n');
            body.push_str(&xml_escape(line));
        }
    }
    body
}

/// Every string in a JSON value, sanitized in place.
pub(crate) fn sanitize_strings(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(text) if text.chars().any(terminal::is_unsafe) => *text = safe(text),
        serde_json::Value::Array(items) => items.iter_mut().for_each(sanitize_strings),
        serde_json::Value::Object(fields) => fields.values_mut().for_each(sanitize_strings),
        _ => {}
    }
}

/// One XML 1.0 attribute or text value: sanitized (so no control or bidi
/// character survives), markup characters escaped, the non-characters XML
/// cannot carry replaced.
pub(crate) fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in safe(text).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

pub(crate) fn escape_data(text: &str) -> String {
    text.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

pub(crate) fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// Qualified ids in one buffer, in order: a verdict over 100,000 unmet
/// gates costs two allocations rather than a string per gate. A list may
/// keep only its first few ids and count the rest, for a reader that shows
/// no more (see [`IdList::keeping`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdList {
    text: String,
    ends: Vec<u32>,
    /// How many ids are kept; the rest are only counted.
    limit: usize,
    count: usize,
}

impl Default for IdList {
    fn default() -> IdList {
        IdList::keeping(usize::MAX)
    }
}

impl IdList {
    /// A list that keeps its first `limit` ids and counts every one.
    pub fn keeping(limit: usize) -> IdList {
        IdList { text: String::new(), ends: Vec::new(), limit, count: 0 }
    }

    /// Appends one id written as the concatenation of `parts`.
    pub fn push_joined(&mut self, parts: &[&str]) {
        self.count += 1;
        if self.ends.len() < self.limit {
            parts.iter().for_each(|part| self.text.push_str(part));
            // Ids come from ledgers of at most 8 MiB each, and a run keeps
            // a complete list only for a machine report of them.
            self.ends.push(u32::try_from(self.text.len()).expect("unmet ids over 4 GiB"));
        }
    }

    pub fn push(&mut self, id: &str) {
        self.push_joined(&[id]);
    }

    /// Every id pushed, kept or only counted.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The ids kept, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.ends.iter().enumerate().map(|(at, &end)| {
            let start = if at == 0 { 0 } else { self.ends[at - 1] as usize };
            &self.text[start..end as usize]
        })
    }
}

impl serde::Serialize for IdList {
    /// Only a complete list is ever serialized: a run keeps every id
    /// whenever a reporter renders records.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        debug_assert_eq!(self.ends.len(), self.count, "a shortened id list serialized");
        serializer.collect_seq(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_list_keeps_each_id_whole_and_in_order() {
        let mut list = IdList::default();
        list.push_joined(&["GATES:", "A"]);
        list.push("");
        list.push("dispatch:w1 open (0/1 started)");
        assert_eq!(list.iter().collect::<Vec<_>>(), ["GATES:A", "", "dispatch:w1 open (0/1 started)"]);
        assert_eq!(list.iter().len(), 3);
        let json = serde_json::to_string(&list).unwrap();
        assert_eq!(json, r#"["GATES:A","","dispatch:w1 open (0/1 started)"]"#);
    }

    #[test]
    fn a_shortened_id_list_keeps_its_first_ids_and_counts_them_all() {
        let mut list = IdList::keeping(2);
        for id in ["a:1", "a:2", "a:3", "b:4"] {
            list.push(id);
        }
        assert_eq!(list.iter().collect::<Vec<_>>(), ["a:1", "a:2"]);
        assert_eq!(list.len(), 4);
        assert!(!list.is_empty() && IdList::keeping(0).is_empty());
    }

    fn report() -> RunReport {
        let mut report = RunReport::failed("run".into(), Vec::new(), Vec::new());
        report.outcome = "unmet";
        report.exit_code = 1;
        report.ledgers.push(LedgerRecord { path: "/r/GATES.md".into(), gates: 2 });
        for (id, state) in [("G1", RecordState::Met), ("G2", RecordState::StaleUnmet)] {
            report.gates.push(GateRecord {
                ledger: "/r/GATES.md".into(),
                line: 3,
                id: id.into(),
                qualified_id: format!("GATES:{id}"),
                title: "a <b> & \"c\"".into(),
                state,
                reason: None,
                checked: true,
                runnable: true,
                definition_digest: None,
                selected: None,
                check: None,
                proof: None,
            });
        }
        report
    }

    #[test]
    fn a_check_status_serializes_as_its_name() {
        use CheckStatus::*;
        for status in [Pass, Fail, Stale, NotRun, Interrupted] {
            assert_eq!(serde_json::to_value(status).unwrap(), status.name());
        }
    }

    #[test]
    fn junit_counts_and_escapes() {
        let xml = report().to_junit(str::to_string);
        assert!(xml.contains("tests=\"2\" failures=\"1\""), "{xml}");
        assert!(xml.contains("a &lt;b&gt; &amp; &quot;c&quot;"), "{xml}");
        assert!(xml.contains("<failure message="), "{xml}");
    }

    #[test]
    fn annotations_escape_workflow_syntax() {
        let lines = report().github_annotations(|p| p.trim_start_matches("/r/").to_string());
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with("::error file=GATES.md,line=3,title=gate GATES%3AG2::"), "{}", lines[0]);
        assert_eq!(escape_data("50%\nx"), "50%25%0Ax");
    }
}
