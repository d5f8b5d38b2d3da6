//! Why an oracle approved before needs approval again: the bound fields
//! that differ between an approval record's oracle and the current one.
//! Pure: it compares values, it never reads the store.

use serde::Deserialize;

use super::Oracle;

/// The oracle an approval record holds, as far as it holds it. The Node
/// tool and gate-check both write the whole oracle into each record, but a
/// record is only required to carry `file`, `gate` and `signature`, so
/// every field may be unknown.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RecordedOracle {
    pub check: Option<String>,
    pub expect: Option<String>,
    pub cwd: Option<String>,
    pub shell: Option<String>,
    pub timeout_ms: Option<u64>,
    pub max_output_bytes: Option<u64>,
    pub regex_timeout_ms: Option<u64>,
    pub regex_startup_timeout_ms: Option<u64>,
    pub max_regex_workers: Option<u64>,
    pub platform: Option<String>,
    pub path: Option<String>,
}

impl RecordedOracle {
    /// The record's `oracle` value; a value of the wrong shape tells nothing.
    pub fn from_value(value: Option<&serde_json::Value>) -> RecordedOracle {
        value.and_then(|v| RecordedOracle::deserialize(v).ok()).unwrap_or_default()
    }
}

/// One sentence per bound field known to differ, e.g. `approved with
/// timeout 10s, now 120s` or `PATH differs: +/venv/bin at the front`.
/// Empty when the record does not say what differs.
pub fn differences(recorded: &RecordedOracle, current: &Oracle) -> Vec<String> {
    let mut found = Vec::new();
    let mut text = |name: &str, old: &Option<String>, new: &str| {
        if old.as_deref().is_some_and(|old| old != new) {
            found.push(format!("{name} changed"));
        }
    };
    text("CHECK", &recorded.check, &current.check);
    text("EXPECT", &recorded.expect, &current.expect);
    if let Some(old) = recorded.cwd.as_deref().filter(|old| *old != current.cwd) {
        found.push(format!("approved with CWD {old}, now {}", current.cwd));
    }
    if let Some(old) = recorded.shell.as_deref().filter(|old| *old != current.shell) {
        found.push(format!("approved with shell {old}, now {}", current.shell));
    }
    if let Some(old) = recorded.timeout_ms.filter(|old| *old != current.timeout_ms()) {
        found.push(format!("approved with timeout {}, now {}", seconds(old), seconds(current.timeout_ms())));
    }
    if let Some(old) = recorded.platform.as_deref().filter(|old| *old != current.platform()) {
        found.push(format!("approved on platform {old}, now {}", current.platform()));
    }
    let limits = [
        recorded.max_output_bytes,
        recorded.regex_timeout_ms,
        recorded.regex_startup_timeout_ms,
        recorded.max_regex_workers,
    ];
    if limits.iter().zip(current.limits()).any(|(old, new)| old.is_some_and(|old| old != new)) {
        found.push("approved with other output or regex limits".to_string());
    }
    // Node checkers before the regex worker pool signed oracles without
    // these two keys, so none of their approvals can match today's oracle.
    let holds_oracle = recorded.check.is_some() && recorded.timeout_ms.is_some();
    if holds_oracle && (recorded.regex_startup_timeout_ms.is_none() || recorded.max_regex_workers.is_none()) {
        found.push("approved by an older checker whose oracle had no regex worker limits".to_string());
    }
    if let Some(old) = recorded.path.as_deref().filter(|old| *old != current.path) {
        found.push(format!("PATH differs: {}", path_change(old, &current.path)));
    }
    found
}

fn seconds(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// What changed between two PATH values, in entries: added at the front or
/// the end, else the entries added and removed, else a reordering.
fn path_change(old: &str, new: &str) -> String {
    let delimiter = crate::paths::PATH_DELIMITER;
    let entries = |path: &str| -> Vec<String> { path.split(delimiter).map(str::to_string).collect() };
    let (old_entries, new_entries) = (entries(old), entries(new));
    let listed = |items: &[String]| items.join(&delimiter.to_string());
    if new_entries.len() > old_entries.len() {
        let extra = new_entries.len() - old_entries.len();
        if new_entries[extra..] == old_entries[..] {
            return format!("+{} at the front", listed(&new_entries[..extra]));
        }
        if new_entries[..old_entries.len()] == old_entries[..] {
            return format!("+{} at the end", listed(&new_entries[old_entries.len()..]));
        }
    }
    let added: Vec<String> = new_entries.iter().filter(|e| !old_entries.contains(e)).cloned().collect();
    let removed: Vec<String> = old_entries.iter().filter(|e| !new_entries.contains(e)).cloned().collect();
    let mut parts = Vec::new();
    if !added.is_empty() {
        parts.push(format!("+{}", added.join(", +")));
    }
    if !removed.is_empty() {
        parts.push(format!("-{}", removed.join(", -")));
    }
    if parts.is_empty() {
        "same entries in another order or with repeats".to_string()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn current() -> Oracle {
        Oracle::new("make test", "ok", "/r", "/bin/sh", 120, "/usr/bin:/bin")
    }

    fn recorded(oracle: &Oracle) -> RecordedOracle {
        let value: serde_json::Value = serde_json::from_str(&oracle.to_json()).unwrap();
        RecordedOracle::from_value(Some(&value))
    }

    #[test]
    fn an_identical_record_differs_in_nothing() {
        assert!(differences(&recorded(&current()), &current()).is_empty());
    }

    #[test]
    fn each_changed_field_is_named() {
        let old = Oracle::new("make check", "fine", "/r/sub", "/bin/bash", 10, "/usr/bin:/bin");
        assert_eq!(
            differences(&recorded(&old), &current()),
            [
                "CHECK changed",
                "EXPECT changed",
                "approved with CWD /r/sub, now /r",
                "approved with shell /bin/bash, now /bin/sh",
                "approved with timeout 10s, now 120s",
            ]
        );
    }

    #[test]
    fn path_changes_are_described_by_entry() {
        // Written with `:`, split on the platform's delimiter.
        let p = |text: &str| text.replace(':', &crate::paths::PATH_DELIMITER.to_string());
        let case = |old: &str, new: &str| path_change(&p(old), &p(new));
        assert_eq!(case("/usr/bin:/bin", "/venv/bin:/usr/bin:/bin"), "+/venv/bin at the front");
        assert_eq!(case("/usr/bin:/bin", "/usr/bin:/bin:/opt/a:/opt/b"), p("+/opt/a:/opt/b at the end"));
        assert_eq!(case("/usr/bin:/bin", "/usr/bin:/sbin"), "+/sbin, -/bin");
        assert_eq!(case("/usr/bin:/bin", "/bin:/usr/bin"), "same entries in another order or with repeats");
        let old = Oracle::new("make test", "ok", "/r", "/bin/sh", 120, &p("/usr/bin:/bin"));
        let new = Oracle::new("make test", "ok", "/r", "/bin/sh", 120, &p("/venv/bin:/usr/bin:/bin"));
        assert_eq!(differences(&recorded(&old), &new), ["PATH differs: +/venv/bin at the front"]);
    }

    #[test]
    fn an_oracle_from_before_the_regex_worker_limits_is_named() {
        let mut value: serde_json::Value = serde_json::from_str(&current().to_json()).unwrap();
        let fields = value.as_object_mut().unwrap();
        fields.remove("regexStartupTimeoutMs");
        fields.remove("maxRegexWorkers");
        assert_eq!(
            differences(&RecordedOracle::from_value(Some(&value)), &current()),
            ["approved by an older checker whose oracle had no regex worker limits"]
        );
    }

    #[test]
    fn a_record_without_an_oracle_tells_nothing() {
        let bare = RecordedOracle::from_value(None);
        assert!(differences(&bare, &current()).is_empty());
        let wrong_shape = serde_json::json!({"timeoutMs": "ten"});
        assert!(differences(&RecordedOracle::from_value(Some(&wrong_shape)), &current()).is_empty());
    }
}
