// Generates nullable-loop-cases.json: loops whose body can match empty, anywhere or only
// where an assertion, a lookaround or a backreference lets it, with required counts above
// what the input can consume, so the backtracker's cap on required iterations decides
// them; node's answers are the reference. Run with the newest node:
//   node crates/js-regex/tests/conformance/generate-nullable-loop-cases.mjs
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const cases = [];
function add(source, flags, inputs) {
  let regex;
  try { regex = new RegExp(source, flags); } catch { return; }
  for (const input of inputs) cases.push({ source, flags, input, expected: regex.test(input) });
}

// Bodies that match empty anywhere.
const bodies = ['a|', '|a', '(a)|', '|(a)', 'a?', '(a?)', 'a*', '(?:ab|)', '(b|)a?', '(a|b|)', '(a)?(b)?', 'a??'];
const suffixes = ['', 'b', '\\1', 'a\\1', '$', '(?<=a)', 'b\\1'];
const inputs = ['', 'a', 'b', 'ab', 'aab', 'ba', 'abb'];
for (const body of bodies) {
  for (const count of ['{7}', '{7,}', '{7,9}', '{7}?', '{7,}?']) {
    for (const suffix of suffixes) {
      for (const flags of ['', 'i']) add(`(?:${body})${count}${suffix}`, flags, inputs);
    }
  }
}

// Bodies that match empty only somewhere, alone and inside a lookahead whose captures
// the rest of the pattern reads.
const somewhere = ['a|^', '^|a', '(a)|^', 'a|$', '(a|$)', '$|(a)', 'a|\\b', '\\B|a', '(?=a)|b', 'a|(?!a)',
  'a|(?<=a)', '(?:^|a)(b)?', '(a)|\\1', '(a)?\\1', '(?=(a))|b', '\\b(a)?'];
const somewhereInputs = ['', 'a', 'b', 'ab', 'aab', 'ba', 'bab', 'a\nb'];
for (const body of somewhere) {
  for (const count of ['{9}', '{9,}', '{9}?']) {
    for (const suffix of ['', 'b', '\\1', '\\1b']) {
      for (const flags of /[$^]/.test(body) ? ['', 'm'] : ['']) {
        add(`(?:${body})${count}${suffix}`, flags, somewhereInputs);
        add(`(?=(?:${body})${count})${suffix}`, flags, somewhereInputs);
      }
    }
  }
}

const out = join(dirname(fileURLToPath(import.meta.url)), 'nullable-loop-cases.json');
writeFileSync(out, JSON.stringify({ generator: 'generate-nullable-loop-cases.mjs', node: process.version, cases }, null, 1) + '\n');
console.log(`${cases.length} cases`);
