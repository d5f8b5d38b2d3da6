//! What a pre-tool payload asks the host to do, read from each host's own
//! shape into one model. Pure: JSON in, a `ToolCall` out.
//!
//! File tools are told by the shape of their input rather than by name, so
//! every host's spelling (Claude Code's `Write`, `Edit`, `MultiEdit` and
//! `NotebookEdit`, Gemini CLI's `write_file` and `replace`, Cursor's tools,
//! an MCP server's `write_file`) lands in the same place: a path plus new
//! content, or a path plus replacements. A `command` is a shell command,
//! or for Codex's `apply_patch` (and a shell command carrying a patch
//! envelope) a patch.

use serde_json::{Map, Value};

use super::change::{Change, Replacement};
use super::patch;

/// One tool call, as far as the guard cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolCall {
    /// Writes to files: each with the path whose current text the change
    /// applies to (its own, or for a moved file the one it came from).
    Files(Vec<FileWrite>),
    /// A shell command, run in `directory` when the payload names one; a
    /// command that carries a patch envelope writes its files too.
    Shell { command: String, directory: Option<String>, patched: Vec<FileWrite> },
    /// Anything else: reads, searches, web tools. Always allowed.
    Other,
}

/// One file a tool call writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileWrite {
    /// The file written, as the payload spells it.
    pub target: String,
    /// The file whose current text `change` applies to.
    pub base: String,
    pub change: Change,
}

impl FileWrite {
    fn of(path: &str, change: Change) -> FileWrite {
        FileWrite { target: path.to_string(), base: path.to_string(), change }
    }
}

/// The keys under which hosts name the file a tool works on.
const PATH_KEYS: [&str; 5] = ["file_path", "path", "notebook_path", "target_file", "filePath"];
/// The keys under which hosts pass a file's whole new content.
const CONTENT_KEYS: [&str; 4] = ["content", "contents", "file_text", "fileText"];
/// The keys under which hosts pass the text a replacement takes away, and
/// the text it puts in.
const OLD_KEYS: [&str; 3] = ["old_string", "old_str", "oldString"];
const NEW_KEYS: [&str; 3] = ["new_string", "new_str", "newString"];
/// The keys under which a shell tool names its working directory.
const DIRECTORY_KEYS: [&str; 4] = ["dir_path", "directory", "working_directory", "cwd"];

fn text<'a>(object: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|key| object.get(*key).and_then(Value::as_str))
}

/// The tool call of a pre-tool payload: `tool_name` and `tool_input`
/// (Claude Code, Codex, Gemini CLI, Cursor's `preToolUse`), or the
/// top-level `command` of Cursor's `beforeShellExecution`.
pub fn read(payload: &Map<String, Value>) -> ToolCall {
    let name = payload.get("tool_name").and_then(Value::as_str).unwrap_or_default();
    match payload.get("tool_input") {
        Some(Value::Object(input)) => from_input(name, input),
        Some(_) => ToolCall::Other,
        None => match payload.get("command").and_then(Value::as_str) {
            Some(command) => shell(command, payload.get("cwd").and_then(Value::as_str)),
            None => ToolCall::Other,
        },
    }
}

/// A tool that edits a notebook, whose result the guard cannot work out.
fn is_notebook(name: &str, input: &Map<String, Value>) -> bool {
    name.eq_ignore_ascii_case("NotebookEdit") || input.contains_key("new_source")
}

/// Whether a tool's name says it writes (`Write`, `StrReplace`,
/// `write_file`, `mcp__fs__edit_file`) or deletes.
fn named_like(name: &str, words: &[&str]) -> bool {
    let name = name.to_ascii_lowercase();
    words.iter().any(|word| name.contains(word))
}

fn from_input(name: &str, input: &Map<String, Value>) -> ToolCall {
    if let Some(command) = shell_text(input) {
        if name.eq_ignore_ascii_case("apply_patch") || input.contains_key("patch") {
            return ToolCall::Files(patch::parse(&command).map(patch_writes).unwrap_or_default());
        }
        return shell(&command, text(input, &DIRECTORY_KEYS));
    }
    let Some(path) = text(input, &PATH_KEYS) else {
        return ToolCall::Other;
    };
    let change = if let Some(edits) = input.get("edits").and_then(Value::as_array) {
        match edits.iter().map(replacement).collect::<Option<Vec<_>>>() {
            Some(replacements) => Change::Replace(replacements),
            None => Change::Unknown,
        }
    } else if OLD_KEYS.iter().chain(&NEW_KEYS).any(|key| input.contains_key(*key)) {
        replacement(&Value::Object(input.clone())).map_or(Change::Unknown, |one| Change::Replace(vec![one]))
    } else if let Some(content) = text(input, &CONTENT_KEYS) {
        Change::Write(content.to_string())
    } else if is_notebook(name, input) || named_like(name, &["write", "edit", "replace", "patch", "create"]) {
        Change::Unknown
    } else if named_like(name, &["delete", "remove"]) {
        Change::Delete
    } else {
        return ToolCall::Other;
    };
    ToolCall::Files(vec![FileWrite::of(path, change)])
}

/// A shell tool's command (Codex's `apply_patch` passes its patch the same
/// way): a string, or an argument vector joined as a shell would read it.
fn shell_text(input: &Map<String, Value>) -> Option<String> {
    match input.get("command").or_else(|| input.get("patch"))? {
        Value::String(command) => Some(command.clone()),
        Value::Array(words) => {
            let words: Option<Vec<&str>> = words.iter().map(Value::as_str).collect();
            Some(words?.iter().map(|word| crate::shell_words::quote(word)).collect::<Vec<_>>().join(" "))
        }
        _ => None,
    }
}

fn shell(command: &str, directory: Option<&str>) -> ToolCall {
    let patched = patch::parse(command).map(patch_writes).unwrap_or_default();
    ToolCall::Shell { command: command.to_string(), directory: directory.map(str::to_string), patched }
}

/// One `old_string` to `new_string` replacement: Claude Code's `Edit` and
/// each of `MultiEdit`'s `edits`, Gemini CLI's `replace`. It is judged as
/// replacing every occurrence (see `Replacement::apply`), so `replace_all`
/// and `expected_replacements` need no reading.
fn replacement(value: &Value) -> Option<Replacement> {
    let object = value.as_object()?;
    let old = text(object, &OLD_KEYS)?;
    let new = text(object, &NEW_KEYS)?;
    Some(Replacement { old: old.to_string(), new: new.to_string() })
}

fn patch_writes(files: Vec<patch::FilePatch>) -> Vec<FileWrite> {
    let mut writes = Vec::new();
    for file in files {
        match file.operation {
            patch::Operation::Add(content) => writes.push(FileWrite::of(&file.path, Change::Write(content))),
            patch::Operation::Delete => writes.push(FileWrite::of(&file.path, Change::Delete)),
            patch::Operation::Update { move_to: None, hunks } => {
                writes.push(FileWrite::of(&file.path, Change::Patch(hunks)))
            }
            // The moved file keeps the decisions it had: it is judged
            // against the text it came from.
            patch::Operation::Update { move_to: Some(destination), hunks } => {
                writes.push(FileWrite::of(&file.path, Change::Delete));
                writes.push(FileWrite { target: destination, base: file.path, change: Change::Patch(hunks) });
            }
        }
    }
    writes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(value: Value) -> ToolCall {
        read(value.as_object().unwrap())
    }

    fn one(path: &str, change: Change) -> ToolCall {
        ToolCall::Files(vec![FileWrite::of(path, change)])
    }

    fn replace(old: &str, new: &str) -> Replacement {
        Replacement { old: old.into(), new: new.into() }
    }

    #[test]
    fn each_hosts_file_tools_are_read_by_their_shape() {
        let write = json!({ "tool_name": "Write", "tool_input": { "file_path": "/r/GATES.md", "content": "x" } });
        assert_eq!(call(write), one("/r/GATES.md", Change::Write("x".into())));
        let gemini = json!({ "tool_name": "write_file", "tool_input": { "file_path": "a", "content": "y" } });
        assert_eq!(call(gemini), one("a", Change::Write("y".into())));
        let edit = json!({ "tool_name": "Edit", "tool_input":
            { "file_path": "a", "old_string": "o", "new_string": "n", "replace_all": true } });
        assert_eq!(call(edit), one("a", Change::Replace(vec![replace("o", "n")])));
        let gemini_replace = json!({ "tool_name": "replace", "tool_input":
            { "file_path": "a", "old_string": "o", "new_string": "n", "expected_replacements": 1 } });
        assert_eq!(call(gemini_replace), one("a", Change::Replace(vec![replace("o", "n")])));
        let multi = json!({ "tool_name": "MultiEdit", "tool_input": { "file_path": "a", "edits": [
            { "old_string": "1", "new_string": "2" }, { "old_string": "3", "new_string": "4", "replace_all": true }
        ] } });
        assert_eq!(call(multi), one("a", Change::Replace(vec![replace("1", "2"), replace("3", "4")])));
        let notebook = json!({ "tool_name": "NotebookEdit", "tool_input":
            { "notebook_path": "n.ipynb", "new_source": "x", "cell_id": "c" } });
        assert_eq!(call(notebook), one("n.ipynb", Change::Unknown));
        let str_replace =
            json!({ "tool_name": "StrReplace", "tool_input": { "path": "a", "old_str": "o", "new_str": "n" } });
        assert_eq!(call(str_replace), one("a", Change::Replace(vec![replace("o", "n")])));
        let cursor_delete = json!({ "tool_name": "Delete", "tool_input": { "path": "a" } });
        assert_eq!(call(cursor_delete), one("a", Change::Delete));
        let broken_edit = json!({ "tool_name": "Edit", "tool_input": { "file_path": "a", "old_string": 1 } });
        assert_eq!(call(broken_edit), one("a", Change::Unknown));
    }

    #[test]
    fn reads_and_unknown_shapes_are_other() {
        for value in [
            json!({ "tool_name": "Read", "tool_input": { "file_path": "/r/GATES.md" } }),
            json!({ "tool_name": "Grep", "tool_input": { "pattern": "x", "path": "." } }),
            json!({ "tool_name": "mcp__db__query", "tool_input": "{\"sql\": 1}" }),
            json!({ "hook_event_name": "PreToolUse" }),
        ] {
            assert_eq!(call(value), ToolCall::Other);
        }
    }

    #[test]
    fn shell_commands_come_with_their_directory() {
        let bash = json!({ "tool_name": "Bash", "tool_input": { "command": "ls", "description": "d" } });
        assert_eq!(call(bash), ToolCall::Shell { command: "ls".into(), directory: None, patched: vec![] });
        let gemini = json!({ "tool_name": "run_shell_command", "tool_input": { "command": "ls", "dir_path": "sub" } });
        assert_eq!(
            call(gemini),
            ToolCall::Shell { command: "ls".into(), directory: Some("sub".into()), patched: vec![] }
        );
        let cursor = json!({ "hook_event_name": "beforeShellExecution", "command": "ls", "cwd": "/w" });
        assert_eq!(
            call(cursor),
            ToolCall::Shell { command: "ls".into(), directory: Some("/w".into()), patched: vec![] }
        );
        let argv = json!({ "tool_name": "shell", "tool_input": { "command": ["bash", "-lc", "a b"] } });
        assert_eq!(call(argv), ToolCall::Shell { command: "bash -lc 'a b'".into(), directory: None, patched: vec![] });
    }

    #[test]
    fn codex_patches_name_their_files() {
        let text = "*** Begin Patch\n*** Add File: a.md\n+x\n*** Update File: b.md\n*** Move to: c.md\n@@\n-o\n+n\n*** End Patch\n";
        let ToolCall::Files(writes) = call(json!({ "tool_name": "apply_patch", "tool_input": { "command": text } }))
        else {
            panic!()
        };
        let targets: Vec<(&str, &str)> = writes.iter().map(|w| (w.target.as_str(), w.base.as_str())).collect();
        assert_eq!(targets, [("a.md", "a.md"), ("b.md", "b.md"), ("c.md", "b.md")]);
        assert_eq!(writes[1].change, Change::Delete);
        let heredoc = format!("apply_patch <<'EOF'\n{text}EOF\n");
        let ToolCall::Shell { patched, .. } =
            call(json!({ "tool_name": "Bash", "tool_input": { "command": heredoc } }))
        else {
            panic!()
        };
        assert_eq!(patched.len(), 3);
    }
}
