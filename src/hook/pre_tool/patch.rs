//! Codex's `apply_patch` envelope, read and applied the way Codex applies
//! it, so the guard judges the text a patch would leave. Pure.
//!
//! ```text
//! *** Begin Patch
//! *** Add File: <path>        lines of `+text`
//! *** Delete File: <path>
//! *** Update File: <path>
//! *** Move to: <path>         (optional)
//! @@ <context line>           (optional) then lines of ` keep`, `-drop`, `+add`
//! *** End of File             (optional: the hunk ends the file)
//! *** End Patch
//! ```

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";

/// One file of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    pub path: String,
    pub operation: Operation,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    /// A new file with this content.
    Add(String),
    Delete,
    Update {
        move_to: Option<String>,
        hunks: Vec<Hunk>,
    },
}

/// One change of an update: the lines it expects (`old`, context and
/// removed lines) and the lines it leaves (`new`, context and added lines).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hunk {
    /// The `@@ line` the hunk is found after.
    pub context: Option<String>,
    pub old: Vec<String>,
    pub new: Vec<String>,
    pub end_of_file: bool,
}

/// The files of every patch envelope in `text` (a patch on its own, or
/// several in a shell command's heredocs), in order; `None` when there is
/// none.
pub fn parse(text: &str) -> Option<Vec<FilePatch>> {
    let mut lines = text.lines().map(|line| line.strip_suffix('\r').unwrap_or(line));
    lines.by_ref().find(|line| line.trim() == BEGIN)?;
    let mut files: Vec<FilePatch> = Vec::new();
    let mut inside = true;
    for line in lines {
        if !inside {
            inside = line.trim() == BEGIN;
            continue;
        }
        if line.trim() == END {
            inside = false;
            continue;
        }
        if let Some(path) = line.strip_prefix(ADD) {
            files.push(FilePatch { path: path.trim().to_string(), operation: Operation::Add(String::new()) });
        } else if let Some(path) = line.strip_prefix(DELETE) {
            files.push(FilePatch { path: path.trim().to_string(), operation: Operation::Delete });
        } else if let Some(path) = line.strip_prefix(UPDATE) {
            let operation = Operation::Update { move_to: None, hunks: Vec::new() };
            files.push(FilePatch { path: path.trim().to_string(), operation });
        } else if let Some(file) = files.last_mut() {
            read_body_line(&mut file.operation, line);
        }
    }
    Some(files)
}

/// One line inside a file's section.
fn read_body_line(operation: &mut Operation, line: &str) {
    match operation {
        Operation::Add(content) => {
            if let Some(added) = line.strip_prefix('+') {
                content.push_str(added);
                content.push('\n');
            }
        }
        Operation::Delete => {}
        Operation::Update { move_to, hunks } => {
            if let Some(destination) = line.strip_prefix(MOVE) {
                *move_to = Some(destination.trim().to_string());
            } else if line.trim() == END_OF_FILE {
                if let Some(hunk) = hunks.last_mut() {
                    hunk.end_of_file = true;
                }
            } else if let Some(context) = line.strip_prefix("@@") {
                let context = context.strip_prefix(' ').filter(|context| !context.trim().is_empty());
                hunks.push(Hunk { context: context.map(str::to_string), ..Hunk::default() });
            } else {
                if hunks.is_empty() {
                    hunks.push(Hunk::default());
                }
                let hunk = hunks.last_mut().expect("a hunk was just ensured");
                // An empty line is an empty context line, as Codex reads it.
                let rest = line.get(1..).unwrap_or_default();
                match line.chars().next() {
                    Some('+') => hunk.new.push(rest.to_string()),
                    Some('-') => hunk.old.push(rest.to_string()),
                    Some(' ') | None => {
                        hunk.old.push(rest.to_string());
                        hunk.new.push(rest.to_string());
                    }
                    Some(_) => {}
                }
            }
        }
    }
}

/// `current` with `hunks` applied, or `None` when a hunk's lines are not
/// there: each is looked for after the previous one, exactly, then
/// ignoring trailing and then surrounding whitespace, as Codex does.
pub fn apply(current: &str, hunks: &[Hunk]) -> Option<String> {
    let mut lines: Vec<&str> = current.split('\n').collect();
    if lines.last() == Some(&"") {
        lines.pop();
    }
    let mut cursor = 0;
    let mut splices: Vec<(usize, usize, &[String])> = Vec::with_capacity(hunks.len());
    for hunk in hunks {
        if let Some(context) = &hunk.context {
            cursor = seek(&lines, std::slice::from_ref(context), cursor, false)? + 1;
        }
        if hunk.old.is_empty() {
            splices.push((lines.len(), 0, &hunk.new));
            continue;
        }
        let (mut old, mut new) = (&hunk.old[..], &hunk.new[..]);
        let found = match seek(&lines, old, cursor, hunk.end_of_file) {
            Some(found) => found,
            // Codex retries a hunk without its last line when that line is
            // empty: a patch often ends in a blank the file lacks.
            None if old.last().is_some_and(String::is_empty) => {
                old = &old[..old.len() - 1];
                if new.last().is_some_and(String::is_empty) {
                    new = &new[..new.len() - 1];
                }
                seek(&lines, old, cursor, hunk.end_of_file)?
            }
            None => return None,
        };
        splices.push((found, old.len(), new));
        cursor = found + old.len();
    }
    splices.sort_by_key(|(start, _, _)| *start);
    let mut result: Vec<&str> = lines.clone();
    for (start, length, new) in splices.into_iter().rev() {
        result.splice(start..start + length, new.iter().map(String::as_str));
    }
    let mut text = result.join("\n");
    text.push('\n');
    Some(text)
}

/// Where `pattern` starts in `lines` at or after `start` (from the end
/// first when it should end the file).
fn seek(lines: &[&str], pattern: &[String], start: usize, end_of_file: bool) -> Option<usize> {
    if pattern.is_empty() {
        return Some(start);
    }
    let last = lines.len().checked_sub(pattern.len())?;
    let same: [fn(&str, &str) -> bool; 3] =
        [|a, b| a == b, |a, b| a.trim_end() == b.trim_end(), |a, b| a.trim() == b.trim()];
    for equal in same {
        let matches = |at: usize| lines[at..at + pattern.len()].iter().zip(pattern).all(|(a, b)| equal(a, b));
        if end_of_file && last >= start && matches(last) {
            return Some(last);
        }
        if let Some(found) = (start..=last).find(|&at| matches(at)) {
            return Some(found);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEDGER: &str = "# Gates\n- [ ] G1: one\n  CHECK: make\n  EXPECT: ok\n- [ ] G2: two\n";

    fn update(body: &str) -> Vec<Hunk> {
        let text = format!("*** Begin Patch\n*** Update File: GATES.md\n{body}*** End Patch\n");
        match parse(&text).unwrap().remove(0).operation {
            Operation::Update { hunks, .. } => hunks,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_operation_is_read() {
        let text = "noise\n*** Begin Patch\n*** Add File: new.md\n+a\n+b\n*** Delete File: old.md\n\
                    *** Update File: x.md\n*** Move to: y.md\n@@ fn main\n-a\n+b\n*** End of File\n*** End Patch\n";
        let files = parse(text).unwrap();
        assert_eq!(files[0], FilePatch { path: "new.md".into(), operation: Operation::Add("a\nb\n".into()) });
        assert_eq!(files[1], FilePatch { path: "old.md".into(), operation: Operation::Delete });
        let hunk =
            Hunk { context: Some("fn main".into()), old: vec!["a".into()], new: vec!["b".into()], end_of_file: true };
        let moved = Operation::Update { move_to: Some("y.md".into()), hunks: vec![hunk] };
        assert_eq!(files[2], FilePatch { path: "x.md".into(), operation: moved });
        assert_eq!(parse("no patch here"), None);
        // Every envelope counts: a second heredoc is read like the first.
        let two = "*** Begin Patch\n*** Add File: notes.txt\n+n\n*** End Patch\nbetween\n\
                   *** Begin Patch\n*** Update File: GATES.md\n@@\n-a\n+b\n*** End Patch\n";
        let paths: Vec<String> = parse(two).unwrap().into_iter().map(|file| file.path).collect();
        assert_eq!(paths, ["notes.txt", "GATES.md"]);
        // A line that opens with a multi-byte character is no hunk line, and no panic.
        assert_eq!(update("\u{e9}t\u{e9}\n"), vec![Hunk::default()]);
    }

    #[test]
    fn hunks_apply_as_codex_applies_them() {
        let tick = update("@@\n-- [ ] G1: one\n+- [x] G1: one\n   CHECK: make\n");
        assert_eq!(apply(LEDGER, &tick).unwrap(), LEDGER.replace("- [ ] G1", "- [x] G1"));
        // Found after its context line, and with loose whitespace.
        let second = update("@@ - [ ] G2: two\n@@\n+  EVIDENCE: forged\n");
        assert!(apply(LEDGER, &second).unwrap().ends_with("- [ ] G2: two\n  EVIDENCE: forged\n"));
        let loose = update("-- [ ] G1: one   \n+- [x] G1: one\n");
        assert_eq!(apply(LEDGER, &loose).unwrap(), LEDGER.replace("- [ ] G1", "- [x] G1"));
        assert_eq!(apply(LEDGER, &update("-not there\n+x\n")), None);
        // A trailing blank the file lacks is forgiven.
        let blank = update(" - [ ] G2: two\n+- [ ] G3: three\n \n");
        assert!(apply(LEDGER, &blank).unwrap().ends_with("- [ ] G2: two\n- [ ] G3: three\n"));
    }
}
