//! `gate-check lint`: the side-effect half of the linter. Reads each file,
//! runs the pure rules in `lint`, and prints the report.

use std::path::PathBuf;

use crate::config::Environment;
use crate::exit::Exit;
use crate::layout::STATE_DIR;
use crate::target::TargetError;
use crate::{lint, target, terminal};

/// The ledgers to lint: the named files, or with none the ledgers the
/// checker itself would target from the current directory.
/// Why `gate-check lint` found nothing to lint.
#[derive(Debug, thiserror::Error)]
pub enum LintError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error("no gate files found (looked for {STATE_DIR}/<scope>/, then GATES.md and gates/*.md under {})", .0.display())]
    NoLedgers(PathBuf),
    #[error("cannot write the JSON document: {0}")]
    Output(#[source] std::io::Error),
    #[error("--allow {0}: no such lint rule (rules: {rules})", rules = lint::RULES.join(", "))]
    UnknownRule(String),
}

/// `lint --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LintFormat {
    /// Findings as lines, then `LINT OK` or `LINT FINDINGS`
    Text,
    /// One JSON document (the same as --json)
    Json,
}

fn ledgers(env: &Environment, files: &[PathBuf], scope: Option<&str>) -> Result<Vec<PathBuf>, LintError> {
    if !files.is_empty() {
        return Ok(files.to_vec());
    }
    let root = &env.cwd;
    let found = target::resolve(root, &[], scope.or(env.scope.as_deref()))?.files;
    if found.is_empty() {
        return Err(LintError::NoLedgers(root.clone()));
    }
    Ok(found)
}

/// Findings that say a gate may pass whatever the code does: a static
/// suspicion only a run can settle.
const SUSPECTS_VACUOUS: [&str; 2] = ["tautological-check", "expect-in-check"];

/// The line naming `baseline` for the gates lint suspects of passing on any
/// code: the command that runs their checks on the code before the change.
fn baseline_hint(findings: &[lint::Finding]) -> Option<String> {
    let mut suspects: Vec<String> = Vec::new();
    for finding in findings.iter().filter(|finding| SUSPECTS_VACUOUS.contains(&finding.code)) {
        let Some(gate) = &finding.gate else { continue };
        let qualified = crate::ledger::qualify(std::path::Path::new(&finding.file), gate);
        if !suspects.contains(&qualified) {
            suspects.push(qualified);
        }
    }
    if suspects.is_empty() {
        return None;
    }
    let gates = suspects.join(",");
    Some(format!(
        "hint: {} may pass whatever the code does; see whether each fails on the code before the change: \
         gate-check baseline REF --gate {} (REF: that commit, such as HEAD or origin/main)",
        suspects.join(", "),
        crate::shell_words::quote(&gates)
    ))
}

/// `gate-check lint`, as asked.
#[derive(Debug, Clone)]
pub struct LintConfig {
    /// Warnings fail the run (exit 1).
    pub strict: bool,
    /// One JSON document instead of text.
    pub json: bool,
    /// `--allow`: rules not reported in any ledger.
    pub allow: Vec<String>,
    /// The pipeline whose ledgers to lint when no file is named.
    pub scope: Option<String>,
    pub files: Vec<PathBuf>,
}

/// Lints each file; prints findings and the `LINT OK` / `LINT FINDINGS`
/// marker (or one JSON document). Exit 2 when a ledger cannot be found,
/// read or parsed, 1 with `--strict` when there are warnings, else 0: the
/// rules are advisory, as in the Node linter.
pub fn run(env: &Environment, config: &LintConfig) -> Result<Exit, LintError> {
    let (strict, json) = (config.strict, config.json);
    if let Some(unknown) = config.allow.iter().find(|rule| !lint::RULES.contains(&rule.as_str())) {
        return Err(LintError::UnknownRule(unknown.clone()));
    }
    let files = ledgers(env, &config.files, config.scope.as_deref())?;
    let mut findings = Vec::new();
    let mut unusable = false;
    for file in &files {
        let shown = file.display().to_string();
        // (line, message, the printed stderr line)
        let problems: Vec<(Option<usize>, String, String)> = match crate::ledger::file::read(file) {
            Err(error) => {
                let message = error.to_string();
                vec![(None, message, error.printed_line())]
            }
            Ok(text) => {
                let outcome = crate::ledger::parse(&text);
                if outcome.errors.is_empty() {
                    findings.extend(lint::lint_allowing(&shown, &outcome.document, &outcome.warnings, &config.allow));
                    continue;
                }
                // A misspelled attribute is often why the ledger does not
                // parse (`EXPECTS:` leaves a CHECK without EXPECT): said first.
                for finding in lint::misspelled_attributes(&shown, &outcome.warnings) {
                    if !json {
                        terminal::warn(&lint::format_finding(&finding));
                    }
                    findings.push(finding);
                }
                outcome.errors.iter().map(|e| (e.line, e.message.clone(), e.at(&shown).error_line())).collect()
            }
        };
        unusable = true;
        for (line, message, diagnostic) in problems {
            if !json {
                terminal::warn(&diagnostic);
            }
            findings.push(lint::Finding {
                file: shown.clone(),
                line,
                gate: None,
                severity: lint::Severity::Error,
                code: "parse",
                message,
            });
        }
    }
    let totals = lint::totals(&findings);
    let failed = unusable || totals.errors > 0 || (strict && totals.warnings > 0);
    if json {
        let mut document = lint::json_report(&findings, failed);
        document.push('\n');
        if let Err(error) = terminal::write_document(document.as_bytes()) {
            if error.kind() != std::io::ErrorKind::BrokenPipe {
                return Err(LintError::Output(error));
            }
        }
    } else {
        let audited: Vec<lint::Finding> = findings.iter().filter(|f| f.code != "parse").cloned().collect();
        for finding in audited.iter().take(lint::MAX_REPORTED_FINDINGS) {
            terminal::say(&lint::format_finding(finding));
        }
        if let Some(line) = lint::truncation_line(audited.len()) {
            terminal::say(&line);
        }
        if let Some(line) = baseline_hint(&audited) {
            terminal::say(&line);
        }
        if unusable {
            // Reported on stderr already: no verdict on what could not be read.
            let count = findings.iter().filter(|f| f.code == "parse").count();
            terminal::say(&format!("LINT NOT RUN: {count} problem(s) reading or parsing the ledgers"));
        } else {
            terminal::say(&lint::summary(lint::totals(&audited), failed));
        }
    }
    Ok(match (unusable, failed) {
        (true, _) => Exit::Error,
        (false, true) => Exit::Unmet,
        (false, false) => Exit::Met,
    })
}
