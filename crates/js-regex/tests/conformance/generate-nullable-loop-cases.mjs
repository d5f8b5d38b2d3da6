// Generates nullable-loop-cases.json: loops whose body can match empty anywhere, with
// required counts above what the input can consume, so the backtracker's cap on
// required iterations decides them; node's answers are the reference. Run:
//   node crates/js-regex/tests/conformance/generate-nullable-loop-cases.mjs
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const bodies = ['a|', '|a', '(a)|', '|(a)', 'a?', '(a?)', 'a*', '(?:ab|)', '(b|)a?', '(a|b|)', '(a)?(b)?', 'a??'];
const suffixes = ['', 'b', '\\1', 'a\\1', '$', '(?<=a)', 'b\\1'];
const inputs = ['', 'a', 'b', 'ab', 'aab', 'ba', 'abb'];
const cases = [];
for (const body of bodies) {
  for (const count of ['{7}', '{7,}', '{7,9}', '{7}?', '{7,}?']) {
    for (const suffix of suffixes) {
      for (const flags of ['', 'i']) {
        const source = `(?:${body})${count}${suffix}`;
        let regex;
        try { regex = new RegExp(source, flags); } catch { continue; }
        for (const input of inputs) cases.push({ source, flags, input, expected: regex.test(input) });
      }
    }
  }
}
const out = join(dirname(fileURLToPath(import.meta.url)), 'nullable-loop-cases.json');
writeFileSync(out, JSON.stringify({ generator: 'generate-nullable-loop-cases.mjs', node: process.version, cases }, null, 1) + '\n');
console.log(`${cases.length} cases`);
