//! `gate-check man`: one roff manual page for the command and one for each
//! subcommand (`gate-check-lint(1)`, `gate-check-hook-stop(1)`, ...), each
//! with the EXIT STATUS, ENVIRONMENT, FILES and SEE ALSO sections clap's
//! renderer does not know. Rendering is pure; `run` prints one page or
//! writes them all into a directory.

use std::io;
use std::path::{Path, PathBuf};

use clap::Args;
use clap_mangen::roff::{bold, italic, roman, Roff};
use clap_mangen::Man;

use crate::terminal;

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write every page (gate-check.1, gate-check-lint.1, ...) into DIR instead of printing one
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,
    /// The subcommand whose page to print, e.g. `lint` or `hook stop` (default: the main page)
    #[arg(value_name = "SUBCOMMAND")]
    pub command: Vec<String>,
}

/// One rendered page: its name (`gate-check-hook-stop`) and roff text.
pub struct Page {
    pub name: String,
    pub roff: Vec<u8>,
}

impl Page {
    pub fn file_name(&self) -> String {
        format!("{}.1", self.name)
    }
}

/// A page's own sections, keyed by page name.
struct Extra {
    exit_status: &'static [(&'static str, &'static str)],
    environment: &'static [(&'static str, &'static str)],
    files: &'static [(&'static str, &'static str)],
}

const ROOT_EXIT: &[(&str, &str)] = &[
    ("0", "Every gate is met and every dispatch wave complete (ALL MET), or a pipeline action succeeded."),
    ("1", "Something is unmet, unapproved, stale or an incomplete wave, or something was abandoned (HANDOFF REQUIRED)."),
    ("2", "Usage error, parse error, or infrastructure failure (shell, working directory, approval store, ledger write, lease or dispatch state). Nothing is changed."),
    ("3", "Lease conflict (CLAIM REFUSED)."),
];

const SIMPLE_EXIT: &[(&str, &str)] =
    &[("0", "The output was written."), ("2", "Usage error, or the output could not be written.")];

const LINT_EXIT: &[(&str, &str)] = &[
    ("0", "No error finding (warnings allowed): LINT OK."),
    ("1", "An error finding, or with --strict any finding: LINT FINDINGS."),
    ("2", "Usage error, or a ledger that cannot be read or parsed (LINT NOT RUN)."),
];

const HOOK_EXIT: &[(&str, &str)] = &[(
    "0",
    "Always, even for a broken command line: every agent host reads exit status 2 as a block, so the decision is only ever the JSON document on stdout (or nothing).",
)];

const INSTALL_EXIT: &[(&str, &str)] = &[
    ("0", "The hook was registered, or removed with --uninstall."),
    ("2", "Usage error, malformed settings file, or a failed write; the settings file is unchanged."),
];

const INIT_EXIT: &[(&str, &str)] = &[
    ("0", "GATES.md was written."),
    ("2", "Usage error, a GATES.md (or anything of that name) already in the root, or a failed write; nothing is changed."),
];

const INIT_FILES: &[(&str, &str)] =
    &[("GATES.md", "Written into the root from the leaf template, mode 0644, only where no such name exists.")];

const DISPATCH_EXIT: &[(&str, &str)] = &[
    ("0", "The transition was recorded; for status, every wave shown is complete (or the scope has none)."),
    ("1", "status only: some wave shown is open, sealed or abandoned (HANDOFF REQUIRED)."),
    ("2", "Usage error, refused transition, unknown wave, or a state file that could not be read or validated."),
];

const ROOT_ENVIRONMENT: &[(&str, &str)] = &[
    ("UNLAZY_APPROVAL_DIR", "The approval store, instead of ~/.unlazy/approved. It must be a real, owner-owned 0700 directory whose canonical path lies outside the checked repository."),
    ("UNLAZY_SCOPE", "The pipeline to use when --scope is not given."),
    ("UNLAZY_SHELL", "The shell for checks when --shell is not given (default /bin/sh). A bare name is looked up on PATH."),
    ("UNLAZY_SANDBOX", "1 confines every check as --sandbox does; 0 does not. Any other value is a usage error."),
    ("UNLAZY_PROOF", "1 judges met gates by their proof as --proof does; 0 does not. Any other value is a usage error."),
    ("UNLAZY_RECEIPT_DIR", "The receipt store, instead of ~/.unlazy/receipts. Its rules are the approval store's: a real, owner-owned 0700 directory outside the checked repository."),
    ("GATE_CHECK_COMPLETE", "Set by a shell's completion script (gate-check completions SHELL): the process answers the completion request instead of running."),
    ("PATH", "Searched for a bare shell name and inherited by every check. The full value is part of each approval."),
    ("HOME", "Locates the default approval store ~/.unlazy/approved. The search for a ledger never climbs to HOME or above it."),
    ("NO_COLOR", "When set and not empty, no colour."),
    ("TERM", "dumb turns off colour and the live progress line."),
    ("CI", "When set, no live progress line."),
    ("GITHUB_ACTIONS", "true adds GitHub Actions annotations (::error, ::warning) on the ledger lines of gates that are not met; when set at all, no live progress line."),
    ("GITHUB_WORKSPACE", "The directory annotation paths are made relative to."),
];

const HOOK_ENVIRONMENT: &[(&str, &str)] =
    &[("UNLAZY_SCOPE", "The pipeline to guard when neither --scope nor a session binding chooses one.")];

const GUARD_ENVIRONMENT: &[(&str, &str)] = &[
    ("UNLAZY_APPROVAL_DIR", "An approval store the guard protects, besides ~/.unlazy/approved."),
    ("UNLAZY_RECEIPT_DIR", "A receipt store the guard protects, besides ~/.unlazy/receipts."),
    ("HOME", "Locates the default stores, and expands ~ in the paths a tool call names."),
];

const TREE_ENVIRONMENT: &[(&str, &str)] = &[
    ("UNLAZY_SCOPE", "The pipeline to draw when --scope is not given."),
    ("LANG, LC_ALL, LC_CTYPE", "A UTF-8 locale draws the tree with box characters; otherwise plain ASCII."),
];

const INSTALL_ENVIRONMENT: &[(&str, &str)] =
    &[("HOME", "Locates the user's file for --global: ~/.claude/settings.json, ~/.codex/hooks.json, ~/.gemini/settings.json or ~/.cursor/hooks.json.")];

const ROOT_FILES: &[(&str, &str)] = &[
    ("GATES.md, gates/*.md", "Ledgers under the root when no pipeline is chosen."),
    (".unlazy/<scope>/GATES.md, .unlazy/<scope>/gates/*.md", "A pipeline's ledgers, beside its PLAN.md."),
    (".unlazy/<scope>/session, .unlazy/<scope>/status.log", "The session bound with --bind and the log appended by --log and dispatch transitions."),
    (".unlazy/locks/", "Write-back locks and ownership leases (*.lease)."),
    (".unlazy/.gitignore", "Written only when gate-check itself creates .unlazy/; it keeps locks and session state out of version control, never the ledgers."),
    ("~/.unlazy/approved/", "Approval records, one <sha256>.json per exact oracle (see UNLAZY_APPROVAL_DIR)."),
    ("~/.unlazy/receipts/", "Receipts of the gates gate-check proved, the owner key that seals them, the manifests of the trees they were proven on, and a stat cache per root (see UNLAZY_RECEIPT_DIR)."),
];

const TREE_EXIT: &[(&str, &str)] = &[
    ("0", "Every node's ledger is met and nothing drifts: TREE OK."),
    ("1", "A node is not met, or the plan and the ledgers disagree: TREE NOT DONE."),
    ("2", "Usage error, a pipeline that cannot be found, or a PLAN.md section that cannot be read (PLAN.md:N: error: ...)."),
];

const TREE_FILES: &[(&str, &str)] = &[
    (".unlazy/<scope>/PLAN.md", "Its ## Tree and ## Leaf dispatch table sections."),
    (".unlazy/<scope>/GATES.md, .unlazy/<scope>/gates/*.md", "The ledgers whose live state the tree shows."),
    (".unlazy/locks/*.lease", "Whose lease each leaf holds."),
    (".unlazy/<scope>/dispatch.json", "Each leaf's latest wave."),
];

const DISPATCH_FILES: &[(&str, &str)] = &[
    (".unlazy/<scope>/dispatch.json", "The scope's launch waves."),
    (".unlazy/<scope>/status.log", "One audit line per transition."),
];

const HOOK_FILES: &[(&str, &str)] = &[
    (".unlazy/<scope>/hook-state.json", "Per-session block counts of a pipeline's Stop hook."),
    (".unlazy-hook-state.json", "The same for ledgers outside a pipeline."),
];

const GUARD_FILES: &[(&str, &str)] = &[
    ("GATES.md, gates/*.md", "Ledgers, wherever they lie (a pipeline's too): an edit that ticks a runnable gate or writes its EVIDENCE is refused."),
    ("~/.unlazy/approved/, ~/.unlazy/receipts/", "Protected stores: no tool call may write there."),
    (".unlazy/locks/", "Protected in every repository."),
];

const INSTALL_FILES: &[(&str, &str)] = &[
    (".claude/settings.local.json", "Written by default (Claude Code)."),
    (".claude/settings.json", "Written with --shared (Claude Code)."),
    ("~/.claude/settings.json", "Written with --global (Claude Code)."),
    (".codex/hooks.json, ~/.codex/hooks.json", "--agent codex, and with --global."),
    (".gemini/settings.json, ~/.gemini/settings.json", "--agent gemini, and with --global."),
    (".cursor/hooks.json, ~/.cursor/hooks.json", "--agent cursor, and with --global."),
    ("<settings file>.unlazy.bak", "The previous settings, saved before each replacement."),
];

fn extra(page: &str) -> Extra {
    let (exit_status, environment, files): (&[_], &[_], &[_]) = match page {
        "gate-check" => (ROOT_EXIT, ROOT_ENVIRONMENT, ROOT_FILES),
        "gate-check-lint" => (LINT_EXIT, &[], &[]),
        "gate-check-init" => (INIT_EXIT, &[], INIT_FILES),
        "gate-check-tree" => (TREE_EXIT, TREE_ENVIRONMENT, TREE_FILES),
        "gate-check-hook" | "gate-check-hook-stop" => (HOOK_EXIT, HOOK_ENVIRONMENT, HOOK_FILES),
        "gate-check-hook-pre-tool" => (HOOK_EXIT, GUARD_ENVIRONMENT, GUARD_FILES),
        "gate-check-install-hooks" => (INSTALL_EXIT, INSTALL_ENVIRONMENT, INSTALL_FILES),
        name if name.starts_with("gate-check-dispatch") => (DISPATCH_EXIT, &[], DISPATCH_FILES),
        _ => (SIMPLE_EXIT, &[], &[]),
    };
    Extra { exit_status, environment, files }
}

fn page_name(command: &clap::Command) -> String {
    command.get_display_name().unwrap_or_else(|| command.get_name()).to_string()
}

fn visible_subcommands(command: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    command.get_subcommands().filter(|sub| !sub.is_hide_set())
}

/// The after-help text without its exit-code paragraph, which EXIT STATUS
/// replaces, as (the `format:` paragraph, the other paragraphs).
fn notes(command: &clap::Command) -> (Option<String>, Vec<String>) {
    let Some(text) = command.get_after_long_help().or_else(|| command.get_after_help()) else {
        return (None, Vec::new());
    };
    let text = text.to_string();
    let kept = match text.find("exit codes:") {
        Some(at) => text[..at].trim_end(),
        None => text.as_str(),
    };
    let (mut format, mut others) = (None, Vec::new());
    for paragraph in kept.split("\n\n").filter(|paragraph| !paragraph.trim().is_empty()) {
        match paragraph.strip_prefix("format: ") {
            Some(rest) => format = Some(rest.to_string()),
            None => others.push(paragraph.to_string()),
        }
    }
    (format, others)
}

/// FORMAT: the help's ledger example, its first line as text and the
/// example as it is laid out.
fn format_section(roff: &mut Roff, text: &str) {
    let mut lines = text.lines();
    roff.control("SH", ["FORMAT"]);
    // A sentence of its own on the page: "a ledger ..." becomes "A ledger ...".
    let first = lines.next().unwrap_or_default();
    let mut chars = first.chars();
    let sentence: String = chars.next().map(|c| c.to_ascii_uppercase()).into_iter().chain(chars).collect();
    roff.text([roman(sentence)]);
    roff.control("PP", []);
    roff.control("nf", []);
    for line in lines {
        roff.text([roman(line)]);
    }
    roff.control("fi", []);
}

fn tagged_paragraphs(roff: &mut Roff, heading: &str, entries: &[(&str, &str)]) {
    if entries.is_empty() {
        return;
    }
    roff.control("SH", [heading]);
    for (tag, text) in entries {
        roff.control("TP", []);
        roff.text([bold(*tag)]);
        roff.text([roman(*text)]);
    }
}

fn reference(name: &str) -> [clap_mangen::roff::Inline; 2] {
    [bold(name), roman("(1)")]
}

fn render_page(command: &clap::Command, parent: Option<&str>) -> io::Result<Page> {
    let name = page_name(command);
    // Subcommands carry no version of their own; every page is this release's.
    let version = env!("CARGO_PKG_VERSION");
    let man = Man::new(command.clone().version(version)).source(format!("gate-check {version}"));
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    if command.get_arguments().any(|arg| !arg.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    let children: Vec<String> = visible_subcommands(command).map(page_name).collect();
    if !children.is_empty() {
        // Every gate-check-NAME(1) it lists is a page this module renders.
        man.render_subcommands_section(&mut out)?;
    }
    let mut roff = Roff::default();
    let (format, notes) = notes(command);
    if let Some(text) = format {
        format_section(&mut roff, &text);
    }
    if !notes.is_empty() {
        roff.control("SH", ["NOTES"]);
        for paragraph in notes {
            roff.text([roman(paragraph.replace('\n', " "))]);
            roff.control("PP", []);
        }
    }
    let extra = extra(&name);
    tagged_paragraphs(&mut roff, "EXIT STATUS", extra.exit_status);
    tagged_paragraphs(&mut roff, "ENVIRONMENT", extra.environment);
    tagged_paragraphs(&mut roff, "FILES", extra.files);
    let mut see_also: Vec<String> = parent.into_iter().map(str::to_string).collect();
    see_also.extend(children);
    if !see_also.is_empty() {
        roff.control("SH", ["SEE ALSO"]);
        let mut inlines = Vec::new();
        for (index, page) in see_also.iter().enumerate() {
            if index > 0 {
                inlines.push(roman(", "));
            }
            inlines.extend(reference(page));
        }
        roff.text(inlines);
    }
    if parent.is_none() {
        roff.control("PP", []);
        roff.text([
            roman("The ledger format, output lines and security model are described in "),
            italic("references/gates.md"),
            roman(" and "),
            italic("SECURITY.md"),
            roman(" of the gate-check sources."),
        ]);
    }
    roff.to_writer(&mut out)?;
    man.render_version_section(&mut out)?;
    Ok(Page { name, roff: out })
}

/// Every page, the main one first, then each subcommand depth-first.
pub fn pages(command: clap::Command) -> io::Result<Vec<Page>> {
    fn walk(command: &clap::Command, parent: Option<&str>, pages: &mut Vec<Page>) -> io::Result<()> {
        let page = render_page(command, parent)?;
        let name = page.name.clone();
        pages.push(page);
        for sub in visible_subcommands(command) {
            walk(sub, Some(&name), pages)?;
        }
        Ok(())
    }
    let mut command = command.disable_help_subcommand(true);
    command.build();
    let mut found = Vec::new();
    walk(&command, None, &mut found)?;
    Ok(found)
}

/// Why `gate-check man` printed or wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum ManualError {
    #[error("cannot render the manual pages: {0}")]
    Render(#[source] std::io::Error),
    #[error("no manual page for {wanted:?} (have: {})", .have.join(", "))]
    NoPage { wanted: String, have: Vec<String> },
    #[error("cannot {doing} {}: {source}", .path.display())]
    Io { doing: &'static str, path: std::path::PathBuf, source: std::io::Error },
}

/// `gate-check man [--dir DIR] [SUBCOMMAND...]`.
pub fn run(args: &ManArgs, command: clap::Command) -> Result<(), ManualError> {
    let pages = pages(command).map_err(ManualError::Render)?;
    if let Some(dir) = &args.dir {
        return write_all(dir, &pages);
    }
    let wanted = std::iter::once("gate-check").chain(args.command.iter().map(String::as_str)).collect::<Vec<_>>();
    let wanted = wanted.join("-");
    match pages.iter().find(|page| page.name == wanted) {
        Some(page) => {
            terminal::emit(&page.roff);
            Ok(())
        }
        None => {
            let have =
                pages.iter().skip(1).map(|page| page.name.trim_start_matches("gate-check-").to_string()).collect();
            Err(ManualError::NoPage { wanted: args.command.join(" "), have })
        }
    }
}

fn write_all(dir: &Path, pages: &[Page]) -> Result<(), ManualError> {
    std::fs::create_dir_all(dir).map_err(|source| ManualError::Io {
        doing: "create",
        path: dir.to_path_buf(),
        source,
    })?;
    for page in pages {
        let path = dir.join(page.file_name());
        if let Err(source) = crate::durable::replace_file(&path, &page.roff, 0o644) {
            return Err(ManualError::Io { doing: "write", path, source });
        }
        terminal::say(&path.display().to_string());
    }
    Ok(())
}
