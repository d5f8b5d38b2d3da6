//! A proposed change to one file, and the text it would leave there. Pure:
//! the file's current text comes in, its next text goes out.

use super::patch::{self, Hunk};

/// What a tool call does to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The whole new content.
    Write(String),
    /// Replacements applied in order, each to the result of the one before.
    Replace(Vec<Replacement>),
    /// The hunks of an `apply_patch` update.
    Patch(Vec<Hunk>),
    Delete,
    /// A write whose result cannot be worked out (a notebook cell edit, a
    /// tool of unknown shape).
    Unknown,
}

/// `old` replaced by `new`: the first (and only) occurrence, or every one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    pub old: String,
    pub new: String,
}

/// The change does not apply to the file as it is: the tool would fail,
/// or (where a host corrects near misses) apply it somewhere the guard
/// cannot see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unapplied;

impl Change {
    /// The text the file would hold: `current` is its text now (`None`
    /// when it does not exist), and `None` comes back when the change
    /// leaves no file.
    pub fn after(&self, current: Option<&str>) -> Result<Option<String>, Unapplied> {
        match self {
            Change::Write(content) => Ok(Some(content.clone())),
            Change::Delete => Ok(None),
            Change::Unknown => Err(Unapplied),
            Change::Replace(replacements) => {
                let mut text = current.map(str::to_string);
                for replacement in replacements {
                    text = Some(replacement.apply(text.as_deref())?);
                }
                Ok(text)
            }
            Change::Patch(hunks) => patch::apply(current.ok_or(Unapplied)?, hunks).map(Some).ok_or(Unapplied),
        }
    }

    /// The text each piece of the change takes away and puts in, for a
    /// change that does not apply: the guard can still see what it adds.
    pub fn pieces(&self) -> Vec<(String, String)> {
        match self {
            Change::Write(content) => vec![(String::new(), content.clone())],
            Change::Replace(replacements) => replacements.iter().map(|r| (r.old.clone(), r.new.clone())).collect(),
            Change::Patch(hunks) => hunks.iter().map(|hunk| (hunk.old.join("\n"), hunk.new.join("\n"))).collect(),
            Change::Delete | Change::Unknown => Vec::new(),
        }
    }
}

impl Replacement {
    /// `text` with this replacement made. An empty `old` creates the file
    /// (Claude Code and Gemini CLI both read it so); an `old` that occurs
    /// more than once is replaced everywhere, which covers whichever
    /// occurrences a host would pick, `replace_all` or not.
    fn apply(&self, text: Option<&str>) -> Result<String, Unapplied> {
        match text {
            _ if self.old.is_empty() => match text {
                None | Some("") => Ok(self.new.clone()),
                Some(_) => Err(Unapplied),
            },
            Some(text) if text.contains(self.old.as_str()) => Ok(text.replace(self.old.as_str(), &self.new)),
            _ => Err(Unapplied),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replace(old: &str, new: &str) -> Change {
        Change::Replace(vec![Replacement { old: old.into(), new: new.into() }])
    }

    #[test]
    fn replacements_apply_in_order_or_not_at_all() {
        let steps = Change::Replace(vec![
            Replacement { old: "a".into(), new: "b".into() },
            Replacement { old: "b".into(), new: "c".into() },
        ]);
        assert_eq!(steps.after(Some("a b")), Ok(Some("c c".into())));
        assert_eq!(replace("x", "y").after(Some("a")), Err(Unapplied));
        assert_eq!(replace("x", "y").after(None), Err(Unapplied));
        assert_eq!(replace("", "new file").after(None), Ok(Some("new file".into())));
        assert_eq!(replace("", "new file").after(Some("old")), Err(Unapplied));
        assert_eq!(replace("- [ ]", "- [x]").after(Some("- [ ] A\n- [ ] B")), Ok(Some("- [x] A\n- [x] B".into())));
    }

    #[test]
    fn writes_deletes_and_unknowns() {
        assert_eq!(Change::Write("t".into()).after(None), Ok(Some("t".into())));
        assert_eq!(Change::Delete.after(Some("t")), Ok(None));
        assert_eq!(Change::Unknown.after(Some("t")), Err(Unapplied));
        assert_eq!(replace("o", "n").pieces(), [("o".to_string(), "n".to_string())]);
    }
}
