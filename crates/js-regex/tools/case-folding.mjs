// Case-insensitive matching as node's RegExp answers it: which characters `/x/i` (UTF-16
// code units) and `/x/iu` (code points; `iv` folds the same way) treat as equal. Imported
// by generate-unicode-tables.mjs, which writes the result to src/case_folding_tables.rs.
//
// Nothing here assumes a case mapping: every answer is node's. The orbits (sets of
// characters that match each other) are read from node on the characters that have any case
// property, and node is then shown to give every other character no partner at all, so the
// tables are exact for every code point (see `proveSingletons`).

const SURROGATE_LOW = 0xd800;
const SURROGATE_HIGH = 0xdfff;
const hex = (n) => n.toString(16).toUpperCase();

const MODES = {
  // Without u: code units, including lone surrogates (JavaScript strings may hold them).
  legacy: { flags: 'i', max: 0xffff, skip: () => false, escape: (c) => `\\u${hex(c).padStart(4, '0')}`, bits: 16 },
  // With u: code points; a lone surrogate is a code point too, but output never holds one.
  unicode: {
    flags: 'iu',
    max: 0x10ffff,
    skip: (c) => c >= SURROGATE_LOW && c <= SURROGATE_HIGH,
    escape: (c) => `\\u{${hex(c)}}`,
    bits: 21,
  },
};

// The characters as a string (in chunks: a call takes only so many arguments).
function text(mode, units) {
  const make = mode === MODES.legacy ? String.fromCharCode : String.fromCodePoint;
  let out = '';
  for (let i = 0; i < units.length; i += 4096) out += make(...units.slice(i, i + 4096));
  return out;
}

function universe(mode) {
  const out = [];
  for (let c = 0; c <= mode.max; c++) if (!mode.skip(c)) out.push(c);
  return out;
}

// Sorted list of characters -> inclusive ranges, as class source.
function classSource(mode, sorted) {
  let out = '';
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    out += i === j ? mode.escape(sorted[i]) : `${mode.escape(sorted[i])}-${mode.escape(sorted[j])}`;
    i = j + 1;
  }
  return `[${out}]`;
}

// The characters of `subject` that `regex` (global) matches, in order.
function matched(mode, regex, subject) {
  const out = [];
  for (const match of subject.matchAll(regex)) {
    if (mode === MODES.legacy) {
      for (let i = 0; i < match[0].length; i++) out.push(match[0].charCodeAt(i));
    } else {
      for (const ch of match[0]) out.push(ch.codePointAt(0));
    }
  }
  return out;
}

const sameList = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

// Orbits among `cased` (characters with any case property): exact, every pair asked.
function readOrbits(mode, cased) {
  const subject = text(mode, cased);
  const orbitOf = new Map();
  for (const c of cased) {
    const viaClass = matched(mode, new RegExp(`[${mode.escape(c)}]+`, `g${mode.flags}`), subject);
    const viaLiteral = matched(mode, new RegExp(`${mode.escape(c)}+`, `g${mode.flags}`), subject);
    if (!sameList(viaClass, viaLiteral)) {
      throw new Error(`/${mode.flags}: ${hex(c)} folds differently as a literal and in a class`);
    }
    orbitOf.set(c, viaClass);
  }
  // Matching must be an equivalence: every member of an orbit has that same orbit.
  for (const [c, orbit] of orbitOf) {
    if (!orbit.includes(c)) throw new Error(`/${mode.flags}: ${hex(c)} does not match itself`);
    for (const d of orbit) {
      if (!sameList(orbitOf.get(d), orbit)) throw new Error(`/${mode.flags}: matching ${hex(c)} is not symmetric`);
    }
  }
  // Backreferences compare case-insensitively too: they must agree with the orbits.
  const backreference = new RegExp('^([^])\\1$', mode.flags);
  for (const c of cased) {
    const orbit = new Set(orbitOf.get(c));
    for (const d of cased) {
      if (backreference.test(text(mode, [c, d])) !== orbit.has(d)) {
        throw new Error(`/${mode.flags}: a backreference to ${hex(c)} disagrees on ${hex(d)}`);
      }
    }
  }
  const orbits = [];
  for (const [c, orbit] of orbitOf) if (orbit.length > 1 && orbit[0] === c) orbits.push(orbit);
  return orbits;
}

// Shows that no character outside `cased` matches any character but itself. A class
// matches exactly the characters equal to one of its members, so a class with a member
// that has an unreported partner matches that partner too. For x != y: if one is in
// `cased`, the class of all the others would match it; if neither is, some halving of an
// aligned range separates them (the class of the lower half matches within the range),
// or, inside one 256-character block, one of their differing bits does.
function proveSingletons(mode, all, cased) {
  const inCased = new Set(cased);
  const others = all.filter((c) => !inCased.has(c));
  const closed = (members, subject, what) => {
    if (members.length === 0) return;
    const got = matched(mode, new RegExp(`${classSource(mode, members)}+`, `g${mode.flags}`), subject);
    if (!sameList(got, members)) throw new Error(`/${mode.flags}: ${what} has case partners node did not report`);
  };
  closed(others, text(mode, all), 'a character without case properties');
  const BLOCK = 256;
  const halve = (members, low, size) => {
    if (members.length < 2) return;
    if (size === BLOCK) {
      const subject = text(mode, members);
      for (let bit = 0; (1 << bit) < BLOCK; bit++) {
        closed(members.filter((c) => ((c >> bit) & 1) === 0), subject, `${hex(low)}.. bit ${bit}`);
      }
      return;
    }
    const middle = low + size / 2;
    const lower = members.filter((c) => c < middle);
    closed(lower, text(mode, members), `${hex(low)}..${hex(middle)}`);
    halve(lower, low, size / 2);
    halve(members.filter((c) => c >= middle), middle, size / 2);
  };
  halve(others, 0, 2 ** mode.bits);
}

// Every orbit (two or more characters that match each other) under `i` without u
// (`legacy`) or with u (`unicode`), as sorted lists, sorted by their first member.
export function caseOrbits(modeName) {
  const mode = MODES[modeName];
  const all = universe(mode);
  const hasCase = /[\p{Cased}\p{Changes_When_Casemapped}\p{Changes_When_Casefolded}]/u;
  // Only a starting point: proveSingletons shows that nothing outside it has a partner.
  const cased = all.filter((c) => hasCase.test(String.fromCodePoint(c)));
  const orbits = readOrbits(mode, cased);
  proveSingletons(mode, all, cased);
  return orbits;
}

// Ring encoding: each orbit member points to the next larger one, the largest back to the
// smallest. Consecutive characters that share a step become one run `(first, last, step)`;
// step 0 (no ring member points to itself) marks alternating pairs, c -> c+1 at even
// offsets from `first` and c -> c-1 at odd ones.
export function ringRuns(orbits) {
  const next = new Map();
  for (const orbit of orbits) orbit.forEach((c, i) => next.set(c, orbit[(i + 1) % orbit.length]));
  const members = [...next.keys()].sort((a, b) => a - b);
  const runs = [];
  for (let i = 0; i < members.length; ) {
    const first = members[i];
    const delta = next.get(first) - first;
    // Alternating pairs: first -> first+1 -> first, first+2 -> first+3 -> first+2, ...
    const pairStep = (offset) => (offset % 2 === 0 ? 1 : -1);
    let pairs = i - 1;
    while (
      pairs + 1 < members.length &&
      members[pairs + 1] === first + (pairs + 1 - i) &&
      next.get(members[pairs + 1]) - members[pairs + 1] === pairStep(pairs + 1 - i)
    ) {
      pairs++;
    }
    let shifted = i;
    while (
      shifted + 1 < members.length &&
      members[shifted + 1] === members[shifted] + 1 &&
      next.get(members[shifted + 1]) - members[shifted + 1] === delta
    ) {
      shifted++;
    }
    // A pair run must end on a complete pair; prefer it when it covers more.
    if ((pairs - i) % 2 === 0) pairs--;
    if (pairs > shifted) {
      runs.push([first, members[pairs], 0]);
      i = pairs + 1;
    } else {
      runs.push([first, members[shifted], delta]);
      i = shifted + 1;
    }
  }
  return runs;
}

// Decodes `runs` as the Rust side does and checks it gives exactly `orbits` for every
// character of the mode (a character in no run has no partner).
export function checkRuns(modeName, runs, orbits) {
  const mode = MODES[modeName];
  const runOf = new Map();
  for (const run of runs) for (let c = run[0]; c <= run[1]; c++) runOf.set(c, run);
  const next = (c) => {
    const [first, , step] = runOf.get(c);
    if (step !== 0) return c + step;
    return (c - first) % 2 === 0 ? c + 1 : c - 1;
  };
  const expected = new Map();
  for (const orbit of orbits) for (const c of orbit) expected.set(c, orbit);
  for (let c = 0; c <= mode.max; c++) {
    const orbit = [c];
    if (runOf.has(c)) {
      for (let d = next(c); d !== c; d = next(d)) {
        if (orbit.length > 8) throw new Error(`${hex(c)}: the ring does not close`);
        orbit.push(d);
      }
    }
    orbit.sort((a, b) => a - b);
    if (!sameList(orbit, expected.get(c) ?? [c])) throw new Error(`/${mode.flags}: tables differ from node at ${hex(c)}`);
  }
}
