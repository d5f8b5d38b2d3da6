//! `gate-check tree` through the real binary on a generated pipeline: the
//! drawn tree (exact), each drift warning, the exit codes, the mermaid text
//! (checked by mermaid's documented flowchart grammar), the Markdown job
//! summary and the JSON against its schema.

use std::collections::BTreeSet;
use std::path::Path;

use crate::common::{Run, Sandbox};
use serde_json::Value;

const PLAN: &str = "# Plan: ship the pricing page

## Tree

- 1 Ship the pricing page .......... GATES.md
  - 1.1 Backend ..................... gates/node-1.1.md
    - 1.1.1 Price model ............. gates/leaf-1.1.1.md
    - 1.1.2 Price API ............... gates/leaf-1.1.2.md
  - 1.2 Frontend .................... gates/node-1.2.md
    - 1.2.1 Pricing table ........... gates/leaf-1.2.1.md
    - 1.2.2 Toggle .................. gates/leaf-1.2.2.md

## Leaf dispatch table

| Leaf | Owns | Needs | Tier | Planned wave | State |
|---|---|---|---|---|---|
| 1.1.1 | src/model/** | - | mechanical | 1 | VERIFIED |
| 1.1.2 | src/api/** | 1.1.1 | judgment | 2 | IN-FLIGHT |
| 1.2.1 | src/table/**, tests/table/** | - | mechanical | 1 | READY |
| 1.2.2 | src/toggle/** | 1.2.1 | judgment | 2 | WAITING |

## Status log
";

/// A root, two branches, four leaves: 1.1.1 declared VERIFIED with an
/// unmet gate, an orphan ledger (leaf-9.9), a missing ledger (node-1.2),
/// an Owns mismatch (1.2.1), a lease held (1.1.2) and an open wave.
fn pipeline() -> Sandbox {
    let sandbox = Sandbox::new();
    std::fs::create_dir(sandbox.path(".git")).unwrap();
    let at = |file: &str, text: &str| {
        sandbox.write(&format!(".unlazy/shop/{file}"), text);
    };
    at("PLAN.md", PLAN);
    at("GATES.md", "- [x] R1: the page ships\n  EVIDENCE: seen\n");
    at("gates/node-1.1.md", "- [ ] N1: backend integrated\n");
    at("gates/leaf-1.1.1.md", "OWNS: src/model/**\n\n- [x] M1: model done\n  EVIDENCE: ok\n- [ ] M2: rounding\n");
    at("gates/leaf-1.1.2.md", "OWNS: src/api/**\n\n- [ ] A1: api\n");
    at("gates/leaf-1.2.1.md", "OWNS: src/table/**\n\n- [x] T1: table\n  EVIDENCE: ok\n");
    at("gates/leaf-1.2.2.md", "OWNS: src/toggle/**\n\n- [ ] G1: toggle\n");
    at("gates/leaf-9.9.md", "OWNS: src/stray/**\n\n- [x] S1: stray\n  EVIDENCE: ok\n");
    // The lease gate-check --claim writes; its pid is the claiming
    // command's, long exited, and is not shown.
    let name = &crate::core_support::sha256_hex("shop::leaf-1.1.2")[..24];
    sandbox.write(
        &format!(".unlazy/locks/{name}.lease"),
        r#"{"scope":"shop","leaf":"leaf-1.1.2","globs":["src/api/**"],"pid":4242}"#,
    );
    // gate-check's own registry reads that record as a lease like its own.
    sandbox.run(&["--claim", "--scope", "shop", "--leaf", "leaf-1.2.1"]).code(0).stdout_starts_with("CLAIMED 1 ");
    sandbox
        .run(&["--release", "--scope", "shop", "--leaf", "leaf-1.2.1"])
        .code(0)
        .stdout_starts_with("released 1 lease(s)");
    let dispatch = |args: &[&str], said: &str| {
        let mut command = sandbox.cmd();
        command.arg("dispatch").args(args).args(["--scope", "shop", "--wave", "w2"]);
        sandbox.run_with(&mut command).code(0).stdout_starts_with(said);
    };
    dispatch(&["open", "--leaf", "leaf-1.1.2", "--leaf", "leaf-1.2.2"], "OPEN w2");
    dispatch(&["start", "--leaf", "leaf-1.1.2", "--handle", "agent-7"], "STARTED w2 leaf-1.1.2");
    sandbox
}

fn tree(sandbox: &Sandbox, args: &[&str]) -> Run {
    sandbox.run_with(sandbox.cmd().arg("tree").args(args).env("LANG", "C.UTF-8"))
}

#[test]
fn the_tree_shows_live_states_leases_waves_and_every_drift() {
    let sandbox = pipeline();
    let expected = "tree of .unlazy/shop/ from .unlazy/shop/PLAN.md: 7 node(s), 4 leaf(s)
1 Ship the pricing page  GATES.md  1/1 met
|- 1.1 Backend  node-1.1.md  0/1 met (N1)
|  |- 1.1.1 Price model  leaf-1.1.1.md  1/2 met (M2)  VERIFIED
|  `- 1.1.2 Price API  leaf-1.1.2.md  0/1 met (A1)  IN-FLIGHT  leased  wave w2 open, started
`- 1.2 Frontend  node-1.2.md  no ledger
   |- 1.2.1 Pricing table  leaf-1.2.1.md  1/1 met  READY
   `- 1.2.2 Toggle  leaf-1.2.2.md  0/1 met (G1)  WAITING  wave w2 open, not started
DRIFT: 5
  1.1.1 [verified-not-met]: declared VERIFIED, but its ledger has unmet or stale gates (M2)
  1.2 [missing-ledger]: the tree names gates/node-1.2.md, which does not exist
  1.2.1 [not-started-but-met]: declared READY, but every gate of its ledger is met: verify it and declare it VERIFIED
  1.2.1 [owns-mismatch]: the plan's Owns differs from the ledger's OWNS: only in the plan: tests/table/**; only in the ledger: -
  [orphan-ledger]: gates/leaf-9.9.md is in the pipeline, but the tree does not name it
TREE NOT DONE: 5 node(s) not met, 5 drift warning(s)
";
    let out = tree(&sandbox, &["--color", "never"]).code(1).into_stdout();
    assert_eq!(out, expected);
    let node_lines = out.lines().skip(1).take_while(|line| !line.starts_with("DRIFT"));
    assert!(node_lines.into_iter().all(|line| line.chars().count() <= 100), "{out}");
    // A UTF-8 terminal gets box characters; the same tree otherwise.
    let boxes = tree(&sandbox, &[]).code(1).into_stdout();
    assert!(boxes.contains("├─ 1.1 Backend") && boxes.contains("│  └─ 1.1.2 Price"), "{boxes}");
    assert_eq!(boxes.replace("├─ ", "|- ").replace("└─ ", "`- ").replace("│  ", "|  "), expected);
    // Coloured only when asked: the state carries the colour.
    let coloured = tree(&sandbox, &["--color", "always"]).code(1).into_stdout();
    assert!(coloured.contains("\u{1b}[31m0/1 met (N1)\u{1b}[0m"), "{coloured}");
    // A long title is cut so every node keeps to 100 columns, its state whole.
    sandbox.write(".unlazy/shop/PLAN.md", &PLAN.replace("Toggle", &"Toggle with a very long title ".repeat(8)));
    let long = tree(&sandbox, &["--color", "never"]).code(1).into_stdout();
    let line = long.lines().find(|line| line.contains("1.2.2 Toggle")).unwrap();
    assert!(
        line.chars().count() <= 100 && line.ends_with("0/1 met (G1)  WAITING  wave w2 open, not started"),
        "{line}"
    );
    assert!(line.contains("...  leaf-1.2.2.md"), "{line}");
    // tree never executes or writes: the pipeline is as it was.
    assert!(!sandbox.path(".unlazy/shop/hook-state.json").exists());
}

#[test]
fn the_other_drift_kinds_and_a_clean_tree_exit_zero() {
    let sandbox = pipeline();
    // READY with an unmet Needs, WAITING with every Needs VERIFIED, IN-FLIGHT
    // with neither lease nor start.
    let plan = PLAN
        .replace(
            "| 1.1.2 | src/api/** | 1.1.1 | judgment | 2 | IN-FLIGHT |",
            "| 1.1.2 | src/api/** | 1.2.2 | judgment | 2 | READY |",
        )
        .replace(
            "| 1.2.1 | src/table/**, tests/table/** | - | mechanical | 1 | READY |",
            "| 1.2.1 | src/table/** | - | mechanical | 1 | IN-FLIGHT |",
        )
        .replace(
            "| 1.2.2 | src/toggle/** | 1.2.1 | judgment | 2 | WAITING |",
            "| 1.2.2 | src/toggle/** | 1.1.1 | judgment | 2 | WAITING |",
        );
    sandbox.write(".unlazy/shop/PLAN.md", &plan);
    let document = tree(&sandbox, &["--format", "json"]).code(1).stdout_json();
    let kinds: BTreeSet<(String, String)> = document["drift"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["node"].as_str().unwrap_or("-").to_string(), d["kind"].as_str().unwrap().to_string()))
        .collect();
    for (node, kind) in [
        ("1.1.2", "ready-but-waiting"),
        ("1.2.2", "waiting-but-ready"),
        ("1.2.1", "in-flight-unleased"),
        ("1.2.1", "in-flight-unstarted"),
        ("1.1.1", "verified-not-met"),
    ] {
        assert!(kinds.contains(&(node.to_string(), kind.to_string())), "{kind} for {node}: {kinds:?}");
    }
    assert_valid_tree(&document);

    // Everything met and nothing drifting: exit 0.
    let met = |id: &str| format!("- [x] {id}: done\n  EVIDENCE: seen\n");
    let clean = PLAN
        .replace(
            "| 1.1.2 | src/api/** | 1.1.1 | judgment | 2 | IN-FLIGHT |",
            "| 1.1.2 | src/api/** | 1.1.1 | judgment | 2 | VERIFIED |",
        )
        .replace(
            "| 1.2.1 | src/table/**, tests/table/** | - | mechanical | 1 | READY |",
            "| 1.2.1 | src/table/** | - | mechanical | 1 | VERIFIED |",
        )
        .replace(
            "| 1.2.2 | src/toggle/** | 1.2.1 | judgment | 2 | WAITING |",
            "| 1.2.2 | src/toggle/** | 1.2.1 | judgment | 2 | VERIFIED |",
        );
    sandbox.write(".unlazy/shop/PLAN.md", &clean);
    for (file, owns, id) in [
        ("leaf-1.1.1", "src/model/**", "M1"),
        ("leaf-1.1.2", "src/api/**", "A1"),
        ("leaf-1.2.2", "src/toggle/**", "G1"),
    ] {
        sandbox.write(&format!(".unlazy/shop/gates/{file}.md"), &format!("OWNS: {owns}\n\n{}", met(id)));
    }
    sandbox.write(".unlazy/shop/gates/node-1.1.md", &met("N1"));
    sandbox.write(".unlazy/shop/gates/node-1.2.md", &met("N2"));
    std::fs::remove_file(sandbox.path(".unlazy/shop/gates/leaf-9.9.md")).unwrap();
    sandbox
        .run(&["dispatch", "abandon", "--scope", "shop", "--wave", "w2", "--reason", "replanned after review"])
        .code(0)
        .stdout_starts_with("ABANDONED w2");
    let out = tree(&sandbox, &["--color", "never"]).code(0).into_stdout();
    assert!(out.ends_with("TREE OK (7 node(s) met)\n") && !out.contains("DRIFT"), "{out}");
}

#[test]
fn a_malformed_plan_is_a_file_line_error_and_no_plan_is_a_flat_view() {
    let sandbox = pipeline();
    sandbox.write(".unlazy/shop/PLAN.md", &PLAN.replace("| 1 | READY |", "| 1 | DONE |"));
    tree(&sandbox, &[]).code(2).stderr_is(&format!(
        "{}:19: error: state \"DONE\" is none of WAITING, READY, IN-FLIGHT, VERIFIED, ABANDONED\n",
        sandbox.path(".unlazy/shop/PLAN.md").display()
    ));
    std::fs::remove_file(sandbox.path(".unlazy/shop/PLAN.md")).unwrap();
    let out = tree(&sandbox, &["--color", "never"]).code(1).into_stdout();
    assert!(out.starts_with("no PLAN.md for .unlazy/shop/: its ledgers, flat\nGATES.md  1/1 met\n"), "{out}");
    assert!(out.contains("gates/leaf-9.9.md  1/1 met\n"), "{out}");
    let flat = tree(&sandbox, &["--format", "json"]).code(1).stdout_json();
    assert_eq!(flat["plan"], Value::Null);
    assert_valid_tree(&flat);
}

fn assert_valid_tree(document: &Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("references/tree.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let errors: Vec<String> =
        validator.iter_errors(document).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "{errors:#?}\n{document:#}");
}

/// Checks flowchart text by mermaid's documented grammar for what it uses:
/// the `flowchart TD` header; nodes `id["label"]` with ids of letters,
/// digits and `_`, labels free of `"` (written `#quot;`) and of markup but
/// `<br/>`; edges `a --> b` between declared nodes; `class ids name` over
/// declared nodes and defined classes; `classDef name prop:value,...`.
fn assert_valid_mermaid(text: &str) -> BTreeSet<String> {
    let node = regex::Regex::new(r#"^  ([A-Za-z][A-Za-z0-9_]*)\["([^"]*)"\]$"#).unwrap();
    let edge = regex::Regex::new(r"^  ([A-Za-z][A-Za-z0-9_]*) --> ([A-Za-z][A-Za-z0-9_]*)$").unwrap();
    let class = regex::Regex::new(r"^  class ([A-Za-z0-9_,]+) ([A-Za-z][A-Za-z0-9_-]*)$").unwrap();
    let class_def = regex::Regex::new(
        r"^  classDef ([A-Za-z][A-Za-z0-9_-]*) ([a-z-]+:[^,\s]+( [^,\s]+)*)(,[a-z-]+:[^,\s]+( [^,\s]+)*)*$",
    )
    .unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("flowchart TD"));
    let (mut nodes, mut defined, mut used) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    let mut classed: BTreeSet<String> = BTreeSet::new();
    for line in lines {
        if let Some(found) = node.captures(line) {
            let label = &found[2];
            assert!(!label.replace("<br/>", "").contains(['<', '>']), "markup in {line}");
            nodes.insert(found[1].to_string());
        } else if let Some(found) = edge.captures(line) {
            assert!(nodes.contains(&found[1]) && nodes.contains(&found[2]), "edge to an undeclared node: {line}");
        } else if let Some(found) = class.captures(line) {
            for id in found[1].split(',') {
                assert!(nodes.contains(id), "class for an undeclared node: {line}");
                if &found[2] != "drift" {
                    assert!(classed.insert(id.to_string()), "{id} has two state classes");
                }
            }
            used.insert(found[2].to_string());
        } else if let Some(found) = class_def.captures(line) {
            defined.insert(found[1].to_string());
        } else {
            panic!("not flowchart grammar: {line:?}");
        }
    }
    assert!(used.is_subset(&defined), "classes used but not defined: {used:?} {defined:?}");
    assert_eq!(classed, nodes, "every node has one state class");
    nodes
}

#[test]
fn mermaid_markdown_and_json_carry_the_same_tree() {
    let sandbox = pipeline();
    let mermaid = tree(&sandbox, &["--format", "mermaid"]).code(1).into_stdout();
    let nodes = assert_valid_mermaid(&mermaid);
    assert_eq!(nodes.len(), 7);
    assert!(mermaid.contains("  n1_1_1[\"1.1.1 Price model<br/>1/2 met (M2)<br/>VERIFIED\"]\n"), "{mermaid}");
    assert!(
        mermaid.contains("  class n1_2 missing\n") && mermaid.contains("  class n1_1_1,n1_2,n1_2_1 drift\n"),
        "{mermaid}"
    );
    // A title cannot break out of its label.
    sandbox.write(".unlazy/shop/PLAN.md", &PLAN.replace("Toggle", "Toggle \"]; click n1 <x>"));
    assert_valid_mermaid(&tree(&sandbox, &["--format", "mermaid"]).code(1).into_stdout());
    sandbox.write(".unlazy/shop/PLAN.md", PLAN);

    let markdown = tree(&sandbox, &["--format", "markdown"]).code(1).into_stdout();
    assert!(markdown.starts_with("## gate-check tree: scope `shop`\n\n**Not done.** Plan: `.unlazy/shop/PLAN.md`.\n\n```mermaid\nflowchart TD\n"), "{markdown}");
    assert!(markdown.contains("```\n\n| Node | Title | Ledger | Gates | Declared | Lease | Wave |\n"), "{markdown}");
    assert!(
        markdown.contains("| 1.1.1 | Price model | gates/leaf-1.1.1.md | 1/2 met (M2) | VERIFIED | - | - |\n"),
        "{markdown}"
    );
    assert!(markdown.contains("### Drift (5)\n\n- **1.1.1** `verified-not-met`: declared VERIFIED"), "{markdown}");
    assert_valid_mermaid(markdown.split("```mermaid\n").nth(1).unwrap().split("```").next().unwrap());

    let json = tree(&sandbox, &["--format", "json"]).code(1).stdout_json();
    assert_valid_tree(&json);
    assert_eq!(json["nodes"].as_array().unwrap().len(), 7);
    assert_eq!(json["nodes"][3]["lease"], "held");
    assert_eq!(json["nodes"][3]["wave"]["started"], true);
    assert_eq!(json["drift"].as_array().unwrap().len(), 5);
}

#[test]
fn the_shipped_plan_template_is_read_as_a_tree() {
    let sandbox = Sandbox::new();
    let template = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("templates/PLAN.md")).unwrap();
    sandbox.write(".unlazy/demo/PLAN.md", &template);
    sandbox.write(".unlazy/demo/GATES.md", "- [ ] R1: the task is done\n");
    let out = tree(&sandbox, &["--color", "never"]).code(1).into_stdout();
    // Titles come from its Title column; leaf states from its dispatch
    // table, whose rows name leaves by their ledgers.
    assert!(
        out.starts_with(
            "tree of .unlazy/demo/ from .unlazy/demo/PLAN.md: 6 node(s), 3 leaf(s)\n1 <the task>  GATES.md  0/1 met \
             (R1)\n|- 1.1 <branch outcome>  node-1.1.md  no ledger\n|  |- 1.1.1 <leaf outcome>  leaf-1.1.1.md  no \
             ledger  READY\n|  `- 1.1.2 <leaf outcome>  leaf-1.1.2.md  no ledger  WAITING\n"
        ),
        "{out}"
    );
    assert!(out.contains("   `- 1.2.1 <leaf outcome>  leaf-1.2.1.md  no ledger  READY\n"), "{out}");
}

/// A ledger file name written to inject: a forged workflow command, a line
/// that closes the mermaid fence, a fake verdict and HTML.
#[cfg(unix)]
const FORGED_NAME: &str = "x\n::error title=FORGED::pwned\n```\n**All met, no drift.**\n<img src=x>\n.md";

/// Every line a runner would read as a workflow command.
#[cfg(unix)]
fn workflow_commands(text: &str) -> Vec<&str> {
    text.lines().filter(|line| line.trim_start().starts_with("::")).collect()
}

// Names a ledger file with control characters (or `:`), which Windows file
// systems refuse.
#[cfg(unix)]
#[test]
fn ledger_names_and_titles_cannot_inject_into_any_tree_format() {
    let sandbox = Sandbox::new();
    sandbox.write("gates/plain.md", "- [ ] P1: plain\n");
    sandbox.write(&format!("gates/{FORGED_NAME}"), "- [ ] F1: forged\n");
    sandbox.write("gates/::error title=FORGED::start.md", "- [ ] S1: starts with colons\n");
    let under_actions = |format: &str| {
        let mut command = sandbox.cmd();
        command.args(["tree", "--format", format, "--color", "never"]).env("GITHUB_ACTIONS", "true");
        sandbox.run_with(&mut command).code(1).into_stdout()
    };
    // The positive case: every ledger is drawn, its name shown escaped.
    let human = under_actions("human");
    assert!(human.contains("gates/plain.md  0/1 met (P1)"), "{human}");
    assert!(human.contains("gates/x\\x0A::error title=FORGED::pwned\\x0A```"), "{human}");
    assert_eq!(workflow_commands(&human), Vec::<&str>::new(), "{human}");

    let mermaid = under_actions("mermaid");
    assert_eq!(workflow_commands(&mermaid), Vec::<&str>::new(), "{mermaid}");
    assert_eq!(assert_valid_mermaid(&mermaid).len(), 3, "{mermaid}");

    let markdown = under_actions("markdown");
    assert_eq!(workflow_commands(&markdown), Vec::<&str>::new(), "{markdown}");
    // One fence, opened and closed by gate-check; the only verdict is its own.
    let fences: Vec<&str> = markdown.lines().filter(|line| line.trim_start().starts_with("```")).collect();
    assert_eq!(fences, ["```mermaid", "```"], "{markdown}");
    let (before, rest) = markdown.split_once("```mermaid\n").unwrap();
    let outside = format!("{before}{}", rest.split_once("```\n").unwrap().1);
    assert_eq!(outside.matches("**").count(), 2, "only gate-check's own verdict is bold: {markdown}");
    assert!(!outside.replace("\\<", "").contains('<'), "raw HTML: {markdown}");
    assert_valid_mermaid(markdown.split("```mermaid\n").nth(1).unwrap().split("```").next().unwrap());

    // With a plan, titles and ledger paths reach the table and the labels.
    std::fs::create_dir(sandbox.path(".git")).unwrap();
    let title = "<img src=x onerror=alert(1)> [click](https://example.com) **All met, no drift.** `x` | y";
    sandbox.write(".unlazy/p/PLAN.md", &format!("# Plan\n\n## Tree\n\n- 1 {title} .... gates/<b>leaf</b>.md\n"));
    sandbox.write(".unlazy/p/gates/<b>leaf</b>.md", "- [ ] L1: leaf\n");
    let markdown = under_actions("markdown");
    let row = markdown.lines().find(|line| line.starts_with("| 1 |")).unwrap();
    assert_eq!(
        row,
        "| 1 | \\<img src=x onerror=alert(1)\\> \\[click\\](https\\://example.com) \\*\\*All met, no drift.\\*\\* \
         \\`x\\` \\| y | gates/\\<b\\>leaf\\</b\\>.md | 0/1 met (L1) | - | - | - |",
        "{markdown}"
    );
    let mermaid = under_actions("mermaid");
    assert_valid_mermaid(&mermaid);
    assert!(mermaid.contains("  n1[\"1 #lt;img src=x onerror=alert(1)#gt; [click](https://example.com)"), "{mermaid}");
}
