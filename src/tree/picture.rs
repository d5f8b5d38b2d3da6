//! The picture `tree` draws: the plan's nodes with their ledgers' live
//! states, each leaf's declared state, lease and dispatch wave, and the
//! places where the plan and the ledgers disagree (drift). Pure: every
//! input is read by the caller.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::plan::{leaf_name, Plan};

/// The most unmet ids a node lists by name.
pub const LISTED_UNMET: usize = 3;

/// What one ledger says now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "status")]
pub enum LedgerView {
    /// The plan names it, the pipeline does not hold it.
    Missing,
    /// It does not parse; the line of its first problem.
    Invalid { line: Option<usize> },
    #[serde(rename_all = "camelCase")]
    Read {
        met: usize,
        total: usize,
        /// Unmet and stale gate ids, in ledger order.
        unmet: Vec<String>,
        stale: usize,
        abandoned: Vec<String>,
        /// The ledger's `OWNS:` header, normalized.
        #[serde(skip)]
        owns: Vec<String>,
        /// The ledger's own title (its first heading), shown for a node the
        /// plan gives none.
        #[serde(skip)]
        heading: Option<String>,
    },
}

impl LedgerView {
    /// Every gate met, none abandoned.
    pub fn is_met(&self) -> bool {
        matches!(self, LedgerView::Read { met, total, abandoned, .. } if met == total && abandoned.is_empty())
    }
}

/// A leaf's latest dispatch wave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WaveView {
    pub id: String,
    /// `open`, `sealed`, `complete` or `abandoned`.
    pub state: String,
    pub started: bool,
    pub returned: bool,
}

/// What was gathered beside the plan and the ledgers.
#[derive(Debug, Clone, Default)]
pub struct Gathered {
    /// By ledger path relative to the pipeline directory.
    pub ledgers: BTreeMap<String, LedgerView>,
    /// Ledger files the pipeline holds, relative to its directory.
    pub present: BTreeSet<String>,
    /// Leases (`held`) by leaf name.
    pub leases: BTreeMap<String, String>,
    /// Latest wave by leaf name (a dispatch leaf id).
    pub waves: BTreeMap<String, WaveView>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeView {
    pub id: String,
    pub title: String,
    pub kind: &'static str,
    pub ledger: String,
    pub depth: usize,
    pub children: Vec<String>,
    pub live: LedgerView,
    pub declared: Option<String>,
    pub lease: Option<String>,
    pub wave: Option<WaveView>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Drift {
    /// The node it is about, or `null` for an orphan ledger.
    pub node: Option<String>,
    /// `verified-not-met`, `waiting-but-ready`, `ready-but-waiting`,
    /// `not-started-but-leased`, `not-started-but-met`, `orphan-ledger`,
    /// `missing-ledger`, `owns-mismatch`, `in-flight-unleased`,
    /// `in-flight-unstarted`.
    pub kind: &'static str,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Picture {
    pub schema: u32,
    pub scope: Option<String>,
    /// The plan read, relative to the root; `None` without one.
    pub plan: Option<String>,
    pub nodes: Vec<NodeView>,
    pub drift: Vec<Drift>,
    /// Everything met and nothing drifts.
    pub ok: bool,
}

fn kind_of(id: &str, has_children: bool, declared_kind: Option<&str>) -> &'static str {
    match declared_kind {
        Some("leaf") => "leaf",
        Some("root") => "root",
        Some(_) if has_children => "branch",
        _ if !id.contains('.') => "root",
        _ if has_children => "branch",
        _ => "leaf",
    }
}

/// The tree with live states and its drift.
pub fn with_plan(scope: Option<String>, plan_path: String, plan: &Plan, gathered: &Gathered) -> Picture {
    let mut nodes = Vec::with_capacity(plan.nodes.len());
    let mut children: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for node in &plan.nodes {
        if let Some((parent, _)) = node.id.rsplit_once('.') {
            children.entry(parent).or_default().push(node.id.clone());
        }
    }
    for node in &plan.nodes {
        let children = children.remove(node.id.as_str()).unwrap_or_default();
        let kind = kind_of(&node.id, !children.is_empty(), node.kind.as_deref());
        let name = leaf_name(&node.ledger);
        let wave = gathered.waves.get(&node.id).or_else(|| gathered.waves.get(name)).cloned();
        let live = gathered.ledgers.get(&node.ledger).cloned().unwrap_or(LedgerView::Missing);
        let title = match (&live, node.title.is_empty()) {
            (LedgerView::Read { heading: Some(heading), .. }, true) => heading.clone(),
            _ => node.title.clone(),
        };
        nodes.push(NodeView {
            id: node.id.clone(),
            title,
            kind,
            ledger: node.ledger.clone(),
            depth: node.id.split('.').count() - 1,
            children,
            live,
            declared: plan.declared.get(&node.id).and_then(|declared| declared.state.clone()),
            lease: (kind == "leaf").then(|| gathered.leases.get(name).cloned()).flatten(),
            wave: (kind == "leaf").then_some(wave).flatten(),
        });
    }
    let drift = drift(plan, &nodes, gathered);
    let ok = drift.is_empty() && nodes.iter().all(|node| node.live.is_met());
    Picture { schema: 1, scope, plan: Some(plan_path), nodes, drift, ok }
}

/// Without a plan: every ledger, flat, in order.
pub fn flat(scope: Option<String>, gathered: &Gathered) -> Picture {
    let nodes: Vec<NodeView> = gathered
        .ledgers
        .iter()
        .map(|(ledger, live)| NodeView {
            id: ledger.clone(),
            title: String::new(),
            kind: "ledger",
            ledger: ledger.clone(),
            depth: 0,
            children: Vec::new(),
            live: live.clone(),
            declared: None,
            lease: None,
            wave: None,
        })
        .collect();
    let ok = nodes.iter().all(|node| node.live.is_met());
    Picture { schema: 1, scope, plan: None, nodes, drift: Vec::new(), ok }
}

fn drift(plan: &Plan, nodes: &[NodeView], gathered: &Gathered) -> Vec<Drift> {
    let mut found = Vec::new();
    let mut add = |node: Option<&str>, kind: &'static str, message: String| {
        found.push(Drift { node: node.map(str::to_string), kind, message });
    };
    let states: BTreeMap<&str, Option<&str>> =
        nodes.iter().map(|node| (node.id.as_str(), node.declared.as_deref())).collect();
    let state_of = |id: &str| states.get(id).copied().flatten();
    for node in nodes {
        let id = Some(node.id.as_str());
        if node.live == LedgerView::Missing {
            add(id, "missing-ledger", format!("the tree names {}, which does not exist", node.ledger));
        }
        let declared = plan.declared.get(&node.id);
        match node.declared.as_deref() {
            Some("VERIFIED") if !node.live.is_met() => {
                let why = match &node.live {
                    LedgerView::Read { unmet, abandoned, .. } if !unmet.is_empty() => {
                        format!("unmet or stale gates ({})", listed(unmet))
                    }
                    LedgerView::Read { abandoned, .. } => format!("abandoned gates ({})", listed(abandoned)),
                    LedgerView::Invalid { .. } => "a ledger that does not parse".to_string(),
                    LedgerView::Missing => "no ledger".to_string(),
                };
                add(id, "verified-not-met", format!("declared VERIFIED, but its ledger has {why}"));
            }
            Some("WAITING") => {
                let needs = declared.map(|d| d.needs.as_slice()).unwrap_or_default();
                if needs.iter().all(|need| state_of(need) == Some("VERIFIED")) {
                    let why = if needs.is_empty() {
                        "it needs nothing".to_string()
                    } else {
                        "every Needs is VERIFIED".into()
                    };
                    add(id, "waiting-but-ready", format!("declared WAITING, but {why}"));
                }
            }
            Some("READY") => {
                let needs = declared.map(|d| d.needs.as_slice()).unwrap_or_default();
                let open: Vec<&String> = needs.iter().filter(|need| state_of(need) != Some("VERIFIED")).collect();
                if !open.is_empty() {
                    let open: Vec<String> = open.into_iter().cloned().collect();
                    add(
                        id,
                        "ready-but-waiting",
                        format!("declared READY, but it needs {} (not VERIFIED)", open.join(", ")),
                    );
                }
            }
            Some("IN-FLIGHT") => {
                if node.lease.is_none() {
                    add(id, "in-flight-unleased", "declared IN-FLIGHT, but no lease is held for it".to_string());
                }
                if !node.wave.as_ref().is_some_and(|wave| wave.started) {
                    add(id, "in-flight-unstarted", "declared IN-FLIGHT, but no dispatch wave started it".to_string());
                }
            }
            _ => {}
        }
        // A leaf declared not started that was claimed, or whose gates are
        // all met, has moved on without the plan.
        if let Some(state @ ("READY" | "WAITING")) = node.declared.as_deref() {
            if node.lease.is_some() {
                add(
                    id,
                    "not-started-but-leased",
                    format!("declared {state}, but a lease is held for it: it was claimed, so it is IN-FLIGHT"),
                );
            }
            if node.live.is_met() {
                add(
                    id,
                    "not-started-but-met",
                    format!("declared {state}, but every gate of its ledger is met: verify it and declare it VERIFIED"),
                );
            }
        }
        if let (Some(mirror), LedgerView::Read { owns, .. }) = (declared.and_then(|d| d.owns.as_ref()), &node.live) {
            let normalized: BTreeSet<String> = mirror
                .iter()
                .map(|glob| crate::ledger::normalize_owns_glob(glob).unwrap_or_else(|_| glob.clone()))
                .collect();
            let ledger: BTreeSet<String> = owns.iter().cloned().collect();
            if normalized != ledger {
                let only_plan: Vec<&String> = normalized.difference(&ledger).collect();
                let only_ledger: Vec<&String> = ledger.difference(&normalized).collect();
                add(
                    id,
                    "owns-mismatch",
                    format!(
                        "the plan's Owns differs from the ledger's OWNS: only in the plan: {}; only in the ledger: {}",
                        joined(&only_plan),
                        joined(&only_ledger)
                    ),
                );
            }
        }
    }
    let named: BTreeSet<&str> = plan.nodes.iter().map(|node| node.ledger.as_str()).collect();
    for ledger in
        gathered.present.iter().filter(|ledger| ledger.starts_with("gates/") && !named.contains(ledger.as_str()))
    {
        add(None, "orphan-ledger", format!("{ledger} is in the pipeline, but the tree does not name it"));
    }
    found
}

fn listed(ids: &[String]) -> String {
    let mut text = ids.iter().take(LISTED_UNMET).cloned().collect::<Vec<_>>().join(", ");
    if ids.len() > LISTED_UNMET {
        text.push_str(&format!(", +{} more", ids.len() - LISTED_UNMET));
    }
    text
}

fn joined(items: &[&String]) -> String {
    if items.is_empty() {
        "-".to_string()
    } else {
        items.iter().map(|item| item.as_str()).collect::<Vec<_>>().join(", ")
    }
}

/// Text for a node's unmet ids, as `listed` shows them.
pub fn unmet_text(unmet: &[String]) -> String {
    listed(unmet)
}
