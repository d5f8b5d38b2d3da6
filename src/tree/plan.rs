//! The two sections of a pipeline's `PLAN.md` that `tree` reads, parsed
//! strictly. Pure: text in, a `Plan` or the first problem (with its line)
//! out.
//!
//! `## Tree` lists every node by its tree id and ledger path, either as the
//! skill's nested list (`- 1.1 Backend ........ gates/node-1.1.md`) or as a
//! table with `Node` and `Ledger` columns (and optionally `Kind`, `Depends
//! on`, `State`). `## Leaf dispatch table` says each leaf's `Owns`, `Needs`,
//! `Planned wave` and `State`.

use std::collections::BTreeMap;

/// The states a leaf can be declared in.
pub const LEAF_STATES: [&str; 5] = ["WAITING", "READY", "IN-FLIGHT", "VERIFIED", "ABANDONED"];
/// The states a branch (or the root) can be declared in.
pub const BRANCH_STATES: [&str; 3] = ["OPEN", "VERIFIED", "ABANDONED"];

/// One node of the tree, in the order the plan lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanNode {
    /// `1`, `1.1`, `1.1.2`.
    pub id: String,
    pub title: String,
    /// Relative to the pipeline's directory: `GATES.md`, `gates/leaf-1.1.md`.
    pub ledger: String,
    /// One-based line in PLAN.md.
    pub line: usize,
    /// `leaf`, `branch` or `root` when a table column says so.
    pub kind: Option<String>,
}

/// What the plan declares about one leaf (or, in a tree table, any node).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Declared {
    /// The `Owns` mirror, when the plan keeps one (`None` in a tree table,
    /// whose `OWNS` column is a summary).
    pub owns: Option<Vec<String>>,
    pub needs: Vec<String>,
    pub wave: Option<String>,
    pub state: Option<String>,
    pub line: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub nodes: Vec<PlanNode>,
    /// By node id.
    pub declared: BTreeMap<String, Declared>,
}

/// A plan section that cannot be read: its one-based line and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanError {
    pub line: usize,
    pub message: String,
}

fn error<T>(line: usize, message: impl Into<String>) -> Result<T, PlanError> {
    Err(PlanError { line, message: message.into() })
}

/// The lines of a `## <heading>` section (case-insensitive), each with its
/// one-based number, up to the next `## ` heading.
fn section<'t>(text: &'t str, heading: &str) -> Option<Vec<(usize, &'t str)>> {
    let mut lines = text.lines().enumerate();
    lines.find(|(_, line)| line.strip_prefix("## ").is_some_and(|title| title.trim().eq_ignore_ascii_case(heading)))?;
    Some(lines.take_while(|(_, line)| !line.starts_with("## ")).map(|(at, line)| (at + 1, line)).collect())
}

/// The leaf name leases and dispatch waves use: the ledger's file stem.
pub fn leaf_name(ledger: &str) -> &str {
    let file = ledger.rsplit('/').next().unwrap_or(ledger);
    file.strip_suffix(".md").unwrap_or(file)
}

/// The tree id a plan cell names: a tree id the tree lists (`1.1`), or the
/// leaf name of a node's ledger (`leaf-1.1` for `gates/leaf-1.1.md`), the
/// name `--leaf` and `dispatch --leaf` take.
fn node_named<'p>(plan: &'p Plan, name: &str) -> Option<&'p str> {
    let by_id = plan.nodes.iter().find(|node| node.id == name);
    by_id.or_else(|| plan.nodes.iter().find(|node| leaf_name(&node.ledger) == name)).map(|node| node.id.as_str())
}

fn is_node_id(text: &str) -> bool {
    !text.is_empty() && text.split('.').all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
}

/// A ledger path a plan may name: relative, inside the pipeline, a `.md`.
fn check_ledger(line: usize, path: &str) -> Result<String, PlanError> {
    let path = path.trim().trim_matches('`');
    let inside = !path.starts_with('/') && !path.split('/').any(|part| part == ".." || part.is_empty());
    if !path.ends_with(".md") || !inside {
        return error(line, format!("ledger path \"{path}\" must be a relative .md path inside the pipeline"));
    }
    Ok(path.to_string())
}

/// `- 1.1 Backend ........ gates/node-1.1.md`.
fn list_node(line: usize, text: &str) -> Result<PlanNode, PlanError> {
    let body = text.trim_start().trim_start_matches(['-', '*']).trim();
    let (id, rest) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    if !is_node_id(id) {
        return error(line, format!("tree entry \"{}\" does not start with a tree id such as 1.2", body));
    }
    let (title, ledger) = rest.trim().rsplit_once(char::is_whitespace).unwrap_or(("", rest.trim()));
    if !ledger.ends_with(".md") {
        return error(line, format!("tree entry {id} names no ledger (a path ending in .md)"));
    }
    let title = title.trim_end().trim_end_matches(['.', '·', ' ']).trim().to_string();
    Ok(PlanNode { id: id.to_string(), title, ledger: check_ledger(line, ledger)?, line, kind: None })
}

/// A Markdown table: its header cells (lower case) and its rows, each cell
/// trimmed; a row with another number of cells is an error.
/// A table's lower-case header cells, and its rows with their lines.
type Table = (Vec<String>, Vec<(usize, Vec<String>)>);

fn table(rows: &[(usize, &str)]) -> Result<Option<Table>, PlanError> {
    let cells = |text: &str| -> Vec<String> {
        let inner = text.trim().trim_start_matches('|');
        let inner = inner.strip_suffix('|').unwrap_or(inner);
        inner.split('|').map(|cell| cell.trim().to_string()).collect()
    };
    let mut lines = rows.iter().filter(|(_, text)| text.trim_start().starts_with('|'));
    let Some((_, header)) = lines.next() else { return Ok(None) };
    let header: Vec<String> = cells(header).iter().map(|cell| cell.to_ascii_lowercase()).collect();
    let mut body = Vec::new();
    for (line, text) in lines {
        let row = cells(text);
        if row.iter().all(|cell| !cell.is_empty() && cell.chars().all(|c| matches!(c, '-' | ':' | ' '))) {
            continue;
        }
        if row.len() != header.len() {
            return error(*line, format!("table row has {} cells, its header {}", row.len(), header.len()));
        }
        body.push((*line, row));
    }
    Ok(Some((header, body)))
}

fn column(header: &[String], names: &[&str]) -> Option<usize> {
    header.iter().position(|cell| names.iter().any(|name| cell == name || cell.starts_with(&format!("{name} "))))
}

/// A comma list cell; `-` or empty is none.
fn list_cell(cell: &str) -> Vec<String> {
    cell.split(',')
        .map(|item| item.trim().trim_matches('`').to_string())
        .filter(|item| !item.is_empty() && item != "-")
        .collect()
}

fn state_cell(line: usize, cell: &str, allowed: &[&str]) -> Result<Option<String>, PlanError> {
    let state = cell.trim().trim_matches('`').to_ascii_uppercase();
    if state.is_empty() || state == "-" {
        return Ok(None);
    }
    if !allowed.contains(&state.as_str()) {
        return error(line, format!("state \"{}\" is none of {}", cell.trim(), allowed.join(", ")));
    }
    Ok(Some(state))
}

/// Parses the plan's tree and leaf dispatch table. `Ok(None)` when the plan
/// has no `## Tree` section.
pub fn parse(text: &str) -> Result<Option<Plan>, PlanError> {
    let Some(tree) = section(text, "Tree") else { return Ok(None) };
    let mut plan = Plan::default();
    if let Some((header, rows)) = table(&tree)? {
        let (Some(node), Some(ledger)) = (column(&header, &["node"]), column(&header, &["ledger"])) else {
            let line = tree.iter().find(|(_, text)| text.trim_start().starts_with('|')).map_or(0, |(at, _)| *at);
            return error(line, "the tree table needs Node and Ledger columns");
        };
        let (kind, needs, state) =
            (column(&header, &["kind"]), column(&header, &["depends on", "needs"]), column(&header, &["state"]));
        let title = column(&header, &["title", "outcome"]);
        for (line, row) in rows {
            let id = row[node].trim_matches('`').to_string();
            if !is_node_id(&id) {
                return error(line, format!("tree row \"{id}\" is not a tree id such as 1.2"));
            }
            let kind = kind.map(|at| row[at].to_ascii_lowercase());
            let allowed: &[&str] = if kind.as_deref() == Some("leaf") { &LEAF_STATES } else { &BRANCH_STATES };
            let declared = Declared {
                owns: None,
                needs: needs.map(|at| list_cell(&row[at])).unwrap_or_default(),
                wave: None,
                state: state.map(|at| state_cell(line, &row[at], allowed)).transpose()?.flatten(),
                line,
            };
            plan.declared.insert(id.clone(), declared);
            plan.nodes.push(PlanNode {
                id,
                title: title.map(|at| row[at].clone()).unwrap_or_default(),
                ledger: check_ledger(line, &row[ledger])?,
                line,
                kind,
            });
        }
    } else {
        for (line, text) in &tree {
            if text.trim_start().starts_with("- ") || text.trim_start().starts_with("* ") {
                plan.nodes.push(list_node(*line, text)?);
            }
        }
    }
    check_nodes(&plan)?;
    // A tree table's `Depends on` may name leaves as the dispatch table does.
    let resolved: Vec<(String, Vec<String>)> = plan
        .declared
        .iter()
        .map(|(id, declared)| {
            let needs = declared.needs.iter().map(|need| node_named(&plan, need).unwrap_or(need).to_string()).collect();
            (id.clone(), needs)
        })
        .collect();
    for (id, needs) in resolved {
        if let Some(declared) = plan.declared.get_mut(&id) {
            declared.needs = needs;
        }
    }
    if let Some(dispatch) = section(text, "Leaf dispatch table") {
        read_dispatch_table(&mut plan, &dispatch)?;
    }
    Ok(Some(plan))
}

/// Every id once, every parent present.
fn check_nodes(plan: &Plan) -> Result<(), PlanError> {
    let mut seen = std::collections::BTreeSet::new();
    for node in &plan.nodes {
        if !seen.insert(node.id.as_str()) {
            return error(node.line, format!("tree id {} appears twice", node.id));
        }
        if let Some((parent, _)) = node.id.rsplit_once('.') {
            if !seen.contains(parent) {
                return error(node.line, format!("tree id {} comes before its parent {parent}, or has none", node.id));
            }
        }
    }
    Ok(())
}

fn read_dispatch_table(plan: &mut Plan, rows: &[(usize, &str)]) -> Result<(), PlanError> {
    let Some((header, rows)) = table(rows)? else { return Ok(()) };
    let first = rows.first().map_or(0, |(line, _)| *line);
    let Some(leaf) = column(&header, &["leaf"]) else {
        return error(first, "the leaf dispatch table needs a Leaf column");
    };
    let (owns, needs) = (column(&header, &["owns"]), column(&header, &["needs"]));
    let (wave, state) = (column(&header, &["planned wave", "wave"]), column(&header, &["state"]));
    let parents: std::collections::HashSet<&str> =
        plan.nodes.iter().filter_map(|node| node.id.rsplit_once('.').map(|(parent, _)| parent)).collect();
    let mut declared_rows = Vec::with_capacity(rows.len());
    for (line, row) in rows {
        let named = row[leaf].trim_matches('`');
        let Some(id) = node_named(plan, named).map(str::to_string) else {
            return error(
                line,
                format!(
                    "dispatch row for {named}, which the tree does not list (name a leaf by its tree id, such as \
                     1.1, or its ledger's name, such as leaf-1.1)"
                ),
            );
        };
        if parents.contains(id.as_str()) {
            return error(line, format!("dispatch row for {named}, which is a branch, not a leaf"));
        }
        let mut needs = needs.map(|at| list_cell(&row[at])).unwrap_or_default();
        for need in &mut needs {
            match node_named(plan, need) {
                Some(needed) => *need = needed.to_string(),
                None => return error(line, format!("{named} needs {need}, which the tree does not list")),
            }
        }
        let declared = Declared {
            owns: owns.map(|at| list_cell(&row[at])),
            needs,
            wave: wave.map(|at| row[at].trim().to_string()).filter(|wave| !wave.is_empty() && wave != "-"),
            state: state.map(|at| state_cell(line, &row[at], &LEAF_STATES)).transpose()?.flatten(),
            line,
        };
        declared_rows.push((id, declared));
    }
    plan.declared.extend(declared_rows);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "# Plan: x\n\n## Tree\n\nUse this tree.\n\n\
        - 1 Ship it .............. GATES.md\n  - 1.1 Backend ........ gates/node-1.1.md\n    \
        - 1.1.1 Parser ...... gates/leaf-1.1.1.md\n\n\
        ## Leaf dispatch table\n\n| Leaf | Owns | Needs | Tier | Planned wave | State |\n|---|---|---|---|---|---|\n\
        | 1.1.1 | src/parser/**, tests/parser/** | - | mechanical | 1 | READY |\n\n## Status log\n";

    #[test]
    fn reads_the_list_tree_and_the_dispatch_table() {
        let plan = parse(PLAN).unwrap().unwrap();
        let ids: Vec<(&str, &str, &str)> =
            plan.nodes.iter().map(|n| (n.id.as_str(), n.title.as_str(), n.ledger.as_str())).collect();
        assert_eq!(
            ids,
            [
                ("1", "Ship it", "GATES.md"),
                ("1.1", "Backend", "gates/node-1.1.md"),
                ("1.1.1", "Parser", "gates/leaf-1.1.1.md")
            ]
        );
        let leaf = &plan.declared["1.1.1"];
        assert_eq!(leaf.owns.as_deref(), Some(&["src/parser/**".to_string(), "tests/parser/**".to_string()][..]));
        assert_eq!((leaf.needs.len(), leaf.wave.as_deref(), leaf.state.as_deref()), (0, Some("1"), Some("READY")));
        assert_eq!(parse("# no tree\n").unwrap(), None);
    }

    #[test]
    fn reads_a_tree_table() {
        let text = "## Tree\n\n| Node | Kind | Ledger | Depends on | OWNS (summary) | State |\n|---|---|---|---|---|---|\n\
                    | 1 | root | GATES.md | 1.1 | - | OPEN |\n| 1.1 | leaf | gates/leaf-1.1.md | - | src/** | READY |\n";
        let plan = parse(text).unwrap().unwrap();
        assert_eq!(plan.nodes.len(), 2);
        assert_eq!(plan.declared["1.1"].state.as_deref(), Some("READY"));
        assert_eq!(plan.declared["1.1"].owns, None, "a summary is no mirror");
    }

    #[test]
    fn a_dispatch_row_names_its_leaf_by_tree_id_or_by_its_ledgers_name() {
        let by_name = PLAN.replace("| 1.1.1 | src", "| leaf-1.1.1 | src");
        assert_eq!(parse(&by_name).unwrap(), parse(PLAN).unwrap());
        let text = "## Tree\n\n| Node | Title | Ledger | Depends on |\n|---|---|---|---|\n| 1 | Ship | GATES.md | - |\n\
                    | 1.1 | Parser | gates/leaf-1.1.md | - |\n| 1.2 | CLI | gates/leaf-1.2.md | leaf-1.1 |\n\n\
                    ## Leaf dispatch table\n\n| Leaf | Needs | State |\n|---|---|---|\n| leaf-1.2 | leaf-1.1 | WAITING |\n\
                    | 1.1 | - | READY |\n";
        let plan = parse(text).unwrap().unwrap();
        assert_eq!(plan.nodes[2].title, "CLI");
        assert_eq!((plan.declared["1.2"].needs.as_slice(), plan.declared["1.2"].line), (&["1.1".to_string()][..], 13));
        assert_eq!(plan.declared["1.1"].state.as_deref(), Some("READY"));
        let unknown = parse(&text.replace("| leaf-1.2 |", "| leaf-9 |")).unwrap_err();
        assert_eq!((unknown.line, unknown.message.as_str()), (13, "dispatch row for leaf-9, which the tree does not list (name a leaf by its tree id, such as 1.1, or its ledger's name, such as leaf-1.1)"));
        let branch = parse(&PLAN.replace("| 1.1.1 | src", "| node-1.1 | src")).unwrap_err();
        assert!(branch.message.contains("dispatch row for node-1.1, which is a branch"), "{branch:?}");
    }

    #[test]
    fn malformed_sections_name_their_line() {
        let cases = [
            (PLAN.replace("- 1.1 Backend", "- x.1 Backend"), 8, "does not start with a tree id"),
            (PLAN.replace("gates/node-1.1.md", "gates/node-1.1"), 8, "names no ledger"),
            (PLAN.replace("gates/node-1.1.md", "../node.md"), 8, "must be a relative .md path"),
            (PLAN.replace("- 1.1.1 Parser", "- 1.2.1 Parser"), 9, "comes before its parent 1.2"),
            (PLAN.replace("| READY |", "| DONE |"), 15, "state \"DONE\" is none of"),
            (PLAN.replace("| 1.1.1 | src", "| 1.1.9 | src"), 15, "which the tree does not list"),
            (PLAN.replace("| 1 | READY |", "| READY |"), 15, "table row has 5 cells, its header 6"),
            (PLAN.replace("| - | mechanical", "| 9 | mechanical"), 15, "needs 9, which the tree does not list"),
        ];
        for (text, line, message) in cases {
            let problem = parse(&text).unwrap_err();
            assert_eq!(problem.line, line, "{problem:?}");
            assert!(problem.message.contains(message), "{problem:?}");
        }
    }
}
