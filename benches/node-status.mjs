// Baseline for gate-bench: the work `--status` does, done the way the Node
// checker does it (read each ledger, parse it with line regexes, classify
// every gate's evidence against its definition digest), so the two can be
// timed on the same files. Usage: node node-status.mjs FILE...
import { readFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { basename } from "node:path";

const sha256 = (text) => createHash("sha256").update(text).digest("hex");
const gateLine = /^- \[( |x|X)\] (.*)$/;
const attributeLine = /^(\s+)(CHECK|EXPECT|EVIDENCE|CWD):\s?(.*)$/;
const fenceOpen = /^( {0,3})(`{3,}|~{3,})(.*)$/;
const fenceClose = /^( {0,3})(`+|~+)[ \t]*$/;
const abandonLine = /^ABANDON:\s*(\S*)\s*(.*)$/;
const success = /^ exit=0; EXPECT=matched; output-sha256=[a-f0-9]{64}; output-bytes=(0|[1-9][0-9]{0,6}); shell=./;

function parse(text) {
  const gates = [];
  const abandoned = new Set();
  let current = null;
  let fence = null;
  for (const line of text.split(/\r?\n/)) {
    if (fence) {
      const close = line.match(fenceClose);
      if (close && close[2][0] === fence.marker && close[2].length >= fence.length) fence = null;
      continue;
    }
    const open = line.match(fenceOpen);
    if (open && !(open[2][0] === "`" && open[3].includes("`"))) {
      fence = { marker: open[2][0], length: open[2].length };
      continue;
    }
    const gate = line.match(gateLine);
    if (gate) {
      const title = gate[2].trim();
      const id = (title.match(/^(\S+?):(?:\s+|$)/) || [null, title])[1];
      current = { id, checked: gate[1] !== " ", check: null, expect: null, cwd: null, evidence: null };
      gates.push(current);
      continue;
    }
    const attribute = current && line.match(attributeLine);
    if (attribute) {
      current[attribute[2].toLowerCase()] = attribute[3].trim();
      continue;
    }
    const abandon = line.match(abandonLine);
    if (abandon) {
      abandoned.add(abandon[1].replace(/:$/, ""));
      current = null;
    }
  }
  return { gates, abandoned };
}

function state(gate, abandoned) {
  if (abandoned.has(gate.id)) return "abandoned";
  if (!gate.checked) return "unmet";
  const evidence = gate.evidence || "";
  const pending = evidence === "" || /^pending$/i.test(evidence);
  if (gate.check && gate.expect) {
    const digest = sha256(JSON.stringify(["unlazy.gate-definition", 1, gate.check, gate.expect, gate.cwd]));
    const prefix = "automatic-evidence=v1; definition-sha256=" + digest + ";";
    const match = evidence.slice(prefix.length).match(success);
    return evidence.length <= 900 && evidence.startsWith(prefix) && match ? "met" : "stale-unmet";
  }
  return pending ? "unmet-no-evidence" : "met";
}

let met = 0;
let unmet = 0;
for (const file of process.argv.slice(2)) {
  const { gates, abandoned } = parse(readFileSync(file, "utf8"));
  for (const gate of gates) {
    const value = state(gate, abandoned);
    if (value === "met") met++;
    else if (value !== "abandoned") {
      unmet++;
      console.log("  UNMET " + basename(file).replace(/\.md$/i, "") + ":" + gate.id + " (" + value + ")");
    }
  }
  console.log(basename(file) + ": " + gates.length + " gates");
}
console.log(unmet ? "UNMET: " + unmet + " (met: " + met + ")" : "ALL MET (" + met + " met)");
