//! The four renderings of a `Picture`: a tree drawn for a terminal (box
//! characters, or plain ASCII), a mermaid flowchart, a Markdown job
//! summary, and JSON. Pure: text out.

use std::collections::HashMap;

use super::picture::{unmet_text, LedgerView, NodeView, Picture};
use crate::visible::visible;

/// The widest line the human tree prints.
pub const WIDTH: usize = 100;

/// How the terminal tree is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drawing {
    /// Box-drawing characters (a UTF-8 terminal) or plain ASCII.
    pub unicode: bool,
    pub color: bool,
}

const GREEN: anstyle::Style = anstyle::AnsiColor::Green.on_default();
const RED: anstyle::Style = anstyle::AnsiColor::Red.on_default();
const YELLOW: anstyle::Style = anstyle::AnsiColor::Yellow.on_default();

fn status(live: &LedgerView) -> String {
    match live {
        LedgerView::Missing => "no ledger".to_string(),
        LedgerView::Invalid { line: Some(line) } => format!("does not parse (line {line})"),
        LedgerView::Invalid { line: None } => "cannot be read".to_string(),
        LedgerView::Read { met, total, unmet, stale, abandoned, .. } => {
            let mut text = format!("{met}/{total} met");
            if !unmet.is_empty() {
                text.push_str(&format!(" ({})", unmet_text(unmet)));
            }
            if *stale > 0 {
                text.push_str(&format!(", {stale} stale"));
            }
            if !abandoned.is_empty() {
                text.push_str(&format!(", HANDOFF {}", unmet_text(abandoned)));
            }
            text
        }
    }
}

/// Declared state, lease and wave, as short words.
fn extras(node: &NodeView) -> String {
    let mut parts = Vec::new();
    if let Some(declared) = &node.declared {
        parts.push(declared.clone());
    }
    if node.lease.is_some() {
        parts.push("leased".to_string());
    }
    if let Some(wave) = &node.wave {
        let progress = if wave.returned {
            "returned"
        } else if wave.started {
            "started"
        } else {
            "not started"
        };
        parts.push(format!("wave {} {}, {progress}", wave.id, wave.state));
    }
    parts.join("  ")
}

fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let kept: String = text.chars().take(width.saturating_sub(3)).collect();
    format!("{kept}...")
}

/// Each node's branch prefix, from whether each ancestor is its parent's
/// last child.
fn prefixes(picture: &Picture, drawing: Drawing) -> Vec<String> {
    let (pipe, space, tee, elbow) =
        if drawing.unicode { ("│  ", "   ", "├─ ", "└─ ") } else { ("|  ", "   ", "|- ", "`- ") };
    // The last child of every node, and the last root.
    let mut last: std::collections::HashSet<&str> =
        picture.nodes.iter().filter_map(|node| node.children.last().map(String::as_str)).collect();
    last.extend(picture.nodes.iter().rfind(|node| !node.id.contains('.')).map(|node| node.id.as_str()));
    let is_last = |id: &str| last.contains(id);
    picture
        .nodes
        .iter()
        .map(|node| {
            if node.depth == 0 {
                return String::new();
            }
            let parts: Vec<&str> = node.id.split('.').collect();
            let mut prefix = String::new();
            for depth in 2..parts.len() {
                prefix.push_str(if is_last(&parts[..depth].join(".")) { space } else { pipe });
            }
            prefix.push_str(if is_last(&node.id) { elbow } else { tee });
            prefix
        })
        .collect()
}

/// The terminal tree: a heading, one line per node (at most `WIDTH`
/// columns), the drift warnings, and a closing verdict line.
pub fn human(picture: &Picture, drawing: Drawing) -> String {
    let paint = |style: anstyle::Style, text: &str| {
        if drawing.color {
            format!("{}{text}{}", style.render(), style.render_reset())
        } else {
            text.to_string()
        }
    };
    let mut out = String::new();
    let leaves = picture.nodes.iter().filter(|node| node.kind == "leaf").count();
    let where_ =
        picture.scope.as_deref().map(|scope| format!(".unlazy/{scope}/")).unwrap_or_else(|| "the repository".into());
    match &picture.plan {
        Some(plan) => {
            out.push_str(&format!("tree of {where_} from {plan}: {} node(s), {leaves} leaf(s)\n", picture.nodes.len()))
        }
        None => out.push_str(&format!("no PLAN.md for {where_}: its ledgers, flat\n")),
    }
    for (node, prefix) in picture.nodes.iter().zip(prefixes(picture, drawing)) {
        let file = node.ledger.rsplit('/').next().unwrap_or(&node.ledger);
        let state = status(&node.live);
        let extras = extras(node);
        // Without a plan a node is its ledger: the path says it all.
        let file = if node.kind == "ledger" { "" } else { file };
        let right = match (file.is_empty(), extras.is_empty()) {
            (true, _) => format!("  {state}"),
            (false, true) => format!("  {file}  {state}"),
            (false, false) => format!("  {file}  {state}  {extras}"),
        };
        let head = if node.title.is_empty() { node.id.clone() } else { format!("{} {}", node.id, node.title) };
        let room = WIDTH.saturating_sub(prefix.chars().count() + right.chars().count()).max(12);
        let line = cut(&format!("{prefix}{}{right}", cut(&visible(&head), room)), WIDTH);
        let style = match node.live {
            _ if node.live.is_met() => GREEN,
            LedgerView::Read { .. } => RED,
            _ => YELLOW,
        };
        match line.find(&state) {
            Some(at) if drawing.color => {
                out.push_str(&line[..at]);
                out.push_str(&paint(style, &state));
                out.push_str(&line[at + state.len()..]);
            }
            _ => out.push_str(&line),
        }
        out.push('\n');
    }
    if !picture.drift.is_empty() {
        out.push_str(&paint(YELLOW, &format!("DRIFT: {}", picture.drift.len())));
        out.push('\n');
        for drift in &picture.drift {
            let node = drift.node.as_deref().map(|node| format!("{node} ")).unwrap_or_default();
            out.push_str(&format!("  {node}[{}]: {}\n", drift.kind, visible(&drift.message)));
        }
    }
    let unmet = picture.nodes.iter().filter(|node| !node.live.is_met()).count();
    if picture.ok {
        out.push_str(&paint(GREEN, &format!("TREE OK ({} node(s) met)", picture.nodes.len())));
    } else {
        out.push_str(&paint(
            RED,
            &format!("TREE NOT DONE: {unmet} node(s) not met, {} drift warning(s)", picture.drift.len()),
        ));
    }
    out.push('\n');
    out
}

/// Each node's id in the flowchart, from letters, digits and `_` only: a
/// tree id (digits and dots, as every plan's are) keeps its shape (`1.2`
/// is `n1_2`); any other id (a ledger path, when there is no plan) is its
/// position (`l3`), so no file name reaches the flowchart's syntax.
fn mermaid_ids(picture: &Picture) -> HashMap<&str, String> {
    let tree_id = |id: &str| id.split('.').all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()));
    picture
        .nodes
        .iter()
        .enumerate()
        .map(|(at, node)| {
            let id = if tree_id(&node.id) { format!("n{}", node.id.replace('.', "_")) } else { format!("l{}", at + 1) };
            (node.id.as_str(), id)
        })
        .collect()
}

/// Text inside a quoted mermaid label: hidden characters escaped as
/// everywhere (`\x0A` for a line break), then quotes, angle brackets, `#`
/// and backticks as entity codes, so no label can close its node, start a
/// Markdown label or inject markup.
fn mermaid_text(text: &str) -> String {
    let text = visible(text);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '#' => out.push_str("#35;"),
            '`' => out.push_str("#96;"),
            c => out.push(c),
        }
    }
    out
}

/// The class a node's state gives it in the flowchart.
fn class_of(node: &NodeView) -> &'static str {
    match node.live {
        _ if node.live.is_met() => "met",
        LedgerView::Read { .. } => "unmet",
        LedgerView::Missing => "missing",
        LedgerView::Invalid { .. } => "invalid",
    }
}

/// A mermaid flowchart of the tree, each node's state as its class.
pub fn mermaid(picture: &Picture) -> String {
    let ids = mermaid_ids(picture);
    let mermaid_id = |id: &str| ids.get(id).cloned().unwrap_or_default();
    let mut out = String::from("flowchart TD\n");
    for node in &picture.nodes {
        let head = if node.title.is_empty() { node.id.clone() } else { format!("{} {}", node.id, node.title) };
        let mut label = format!("{}<br/>{}", mermaid_text(&head), mermaid_text(&status(&node.live)));
        if let Some(declared) = &node.declared {
            label.push_str(&format!("<br/>{}", mermaid_text(declared)));
        }
        out.push_str(&format!("  {}[\"{label}\"]\n", mermaid_id(&node.id)));
    }
    for node in &picture.nodes {
        for child in node.children.iter().filter(|child| ids.contains_key(child.as_str())) {
            out.push_str(&format!("  {} --> {}\n", mermaid_id(&node.id), mermaid_id(child)));
        }
    }
    for class in ["met", "unmet", "missing", "invalid"] {
        let members: Vec<String> =
            picture.nodes.iter().filter(|node| class_of(node) == class).map(|node| mermaid_id(&node.id)).collect();
        if !members.is_empty() {
            out.push_str(&format!("  class {} {class}\n", members.join(",")));
        }
    }
    let drifting: Vec<String> = picture
        .nodes
        .iter()
        .filter(|node| picture.drift.iter().any(|drift| drift.node.as_deref() == Some(&node.id)))
        .map(|node| mermaid_id(&node.id))
        .collect();
    if !drifting.is_empty() {
        out.push_str(&format!("  class {} drift\n", drifting.join(",")));
    }
    out.push_str("  classDef met fill:#dcfce7,stroke:#15803d,color:#14532d\n");
    out.push_str("  classDef unmet fill:#fee2e2,stroke:#b91c1c,color:#7f1d1d\n");
    out.push_str("  classDef missing fill:#fef9c3,stroke:#a16207,color:#713f12\n");
    out.push_str("  classDef invalid fill:#fef9c3,stroke:#a16207,color:#713f12\n");
    out.push_str("  classDef drift stroke-width:3px,stroke-dasharray:5 3\n");
    out
}

/// Untrusted text as Markdown that shows it literally: hidden characters
/// escaped as everywhere, then every ASCII punctuation character that can
/// start inline syntax (emphasis, code, links and images, raw HTML,
/// entities, autolinks, strikethrough, a table's `|`) escaped with a
/// backslash. `-` when empty, so no table cell is blank.
fn cell(text: &str) -> String {
    let text = visible(text);
    if text.is_empty() {
        return "-".to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if matches!(c, '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '&' | '|' | '~' | '!' | ':' | '@') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Untrusted text in a code span, where nothing but a backtick is syntax.
fn code(text: &str) -> String {
    format!("`{}`", visible(text).replace('`', "'"))
}

/// A job summary: the flowchart, a table of nodes and the drift.
pub fn markdown(picture: &Picture) -> String {
    let title = match &picture.scope {
        Some(scope) => format!("## gate-check tree: scope {}\n\n", code(scope)),
        None => "## gate-check tree\n\n".to_string(),
    };
    let mut out = title;
    let verdict = if picture.ok { "**All met, no drift.**" } else { "**Not done.**" };
    match &picture.plan {
        Some(plan) => out.push_str(&format!("{verdict} Plan: {}.\n\n", code(plan))),
        None => out.push_str(&format!("{verdict} No `PLAN.md`: the ledgers, flat.\n\n")),
    }
    out.push_str("```mermaid\n");
    out.push_str(&mermaid(picture));
    out.push_str("```\n\n| Node | Title | Ledger | Gates | Declared | Lease | Wave |\n|---|---|---|---|---|---|---|\n");
    for node in &picture.nodes {
        let wave = node.wave.as_ref().map(|wave| format!("{} {}", wave.id, wave.state)).unwrap_or_default();
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            cell(&node.id),
            cell(&node.title),
            cell(&node.ledger),
            cell(&status(&node.live)),
            cell(node.declared.as_deref().unwrap_or("")),
            cell(node.lease.as_deref().unwrap_or("")),
            cell(&wave)
        ));
    }
    if !picture.drift.is_empty() {
        out.push_str(&format!("\n### Drift ({})\n\n", picture.drift.len()));
        for drift in &picture.drift {
            let node = drift.node.as_deref().map(|node| format!("**{}** ", cell(node))).unwrap_or_default();
            out.push_str(&format!("- {node}`{}`: {}\n", drift.kind, cell(&drift.message)));
        }
    }
    out
}

/// The JSON document (`references/tree.schema.json`).
pub fn json(picture: &Picture) -> String {
    let mut value = serde_json::to_value(picture).unwrap_or_default();
    crate::report::record::sanitize_strings(&mut value);
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_names_unmet_stale_and_abandoned_gates() {
        let unmet: Vec<String> = ["G1", "G2", "G3", "G4"].iter().map(|id| id.to_string()).collect();
        let live = LedgerView::Read {
            met: 1,
            total: 6,
            unmet,
            stale: 2,
            abandoned: vec!["G6".into()],
            owns: Vec::new(),
            heading: None,
        };
        assert_eq!(status(&live), "1/6 met (G1, G2, G3, +1 more), 2 stale, HANDOFF G6");
        assert_eq!(status(&LedgerView::Invalid { line: Some(7) }), "does not parse (line 7)");
        assert_eq!(mermaid_text("a \"b\" <c> #d `e`\nf"), "a #quot;b#quot; #lt;c#gt; #35;d #96;e#96;\\x0Af");
        assert_eq!(
            cell("**a** <img> [x](y) a|b `c` \\ https://z"),
            "\\*\\*a\\*\\* \\<img\\> \\[x\\](y) a\\|b \\`c\\` \\\\ https\\://z"
        );
        assert_eq!(cell(""), "-");
    }
}
