//! A backtracking matcher with ECMAScript semantics and a deterministic step budget, for
//! what the linear engine cannot express (backreferences, lookaround, and a few
//! input-dependent cases). It runs on an explicit stack, so no input can overflow the
//! thread's stack, and every executed instruction or undone choice costs one step.

use super::case_fold;
use super::charset::{self, CodeSet};
use super::parser::{Assertion, Flags, Node};
use super::Limits;

/// Work (steps, and frames or slots no step pays for) between two looks at the caller's
/// limits.
const LIMIT_CHECK_WORK: u64 = 1 << 16;

/// Steps one whole `test()` may take before it is declared a budget failure.
pub const STEP_BUDGET: u64 = 40_000_000;

/// Most memory the backtracking stack may hold. Steps alone do not bound it: a pattern
/// such as `^(a|aa)*\1b$` on 1 MiB of output keeps several frames per character, so
/// without this cap one check could take hundreds of megabytes.
pub const STACK_BYTES_LIMIT: usize = 32 << 20;

const MAX_FRAMES: usize = STACK_BYTES_LIMIT / std::mem::size_of::<Frame>();
const _: () = assert!(std::mem::size_of::<Frame>() == 16, "frames stay 16 bytes");

const UNSET: u32 = u32::MAX;

#[derive(Clone, Debug)]
enum Inst {
    Set {
        set: usize,
        backward: bool,
    },
    /// Greedy or lazy repetition of a single set: handled in one instruction.
    RepeatSet {
        set: usize,
        min: u32,
        max: u32,
        greedy: bool,
        backward: bool,
    },
    Split {
        first: usize,
        second: usize,
    },
    Jump(usize),
    Save(usize),
    ClearSlots {
        from: usize,
        to: usize,
    },
    Assert(Assertion),
    BackReference {
        groups: Box<[usize]>,
        ignore_case: bool,
        backward: bool,
    },
    LookStart {
        negative: bool,
        resume: usize,
    },
    LookEnd,
    CounterReset(usize),
    LoopHead {
        counter: usize,
        min: u32,
        max: u32,
        greedy: bool,
        body: usize,
        exit: usize,
        /// Where the body can match empty (see `caps_required_iterations`).
        empty: EmptyIteration,
        backward: bool,
    },
    IterationStart {
        mark: usize,
    },
    IterationEnd {
        counter: usize,
        mark: usize,
        min: u32,
        head: usize,
    },
    Match,
}

/// One entry of the backtracking stack. Fields are 32-bit (positions, instruction and slot
/// indexes; inputs are far below 4 Gi units) and what the RepeatSet instruction before `pc`
/// already knows is not repeated, so a frame is 16 bytes.
enum Frame {
    Retry {
        pc: u32,
        pos: u32,
    },
    /// Remaining choices of a greedy RepeatSet: positions from `next` towards `last`.
    GreedyRun {
        pc: u32,
        next: u32,
        last: u32,
    },
    /// The next choice of a lazy RepeatSet: one more repetition from `pos`.
    LazyRun {
        pc: u32,
        pos: u32,
        taken: u32,
    },
    RestoreSlot {
        slot: u32,
        value: u32,
    },
    RestoreCounter {
        counter: u32,
        value: u32,
    },
    RestoreMark {
        mark: u32,
        value: u32,
    },
    Look {
        negative: bool,
        pos: u32,
        resume: u32,
    },
}

#[derive(Debug, Clone)]
pub struct Program {
    insts: Vec<Inst>,
    sets: Vec<CodeSet>,
    slot_count: usize,
    counter_count: usize,
    mark_count: usize,
    unicode: bool,
    sticky: bool,
    word: CodeSet,
    /// `\w` with U+017F and U+212A, for `\b` and `\B` under `i` with `u`/`v`.
    folded_word: CodeSet,
}

/// Why a match was abandoned without an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exhausted {
    Steps,
    Memory,
    /// The caller's limits said stop (its deadline passed, or it was told
    /// to): `MatchError::Deadline` or `Interrupted`.
    Stopped(super::MatchError),
}

impl Program {
    pub fn compile(root: &Node, capture_count: usize, flags: Flags) -> Program {
        let mut program = Program {
            insts: Vec::new(),
            sets: Vec::new(),
            slot_count: (capture_count + 1) * 2,
            counter_count: 0,
            mark_count: 0,
            unicode: flags.full_unicode(),
            sticky: flags.sticky,
            word: charset::word_set(false),
            folded_word: charset::word_set(true),
        };
        program.emit_node(root, false);
        program.insts.push(Inst::Match);
        program
    }

    fn add_set(&mut self, set: &CodeSet) -> usize {
        self.sets.push(set.clone());
        self.sets.len() - 1
    }

    fn emit_node(&mut self, node: &Node, backward: bool) {
        match node {
            Node::Empty => {}
            Node::Set(set) => {
                let set = self.add_set(set);
                self.insts.push(Inst::Set { set, backward });
            }
            Node::Concat(items) => {
                if backward {
                    for item in items.iter().rev() {
                        self.emit_node(item, backward);
                    }
                } else {
                    for item in items {
                        self.emit_node(item, backward);
                    }
                }
            }
            Node::Alternation(alternatives) => {
                let mut exits = Vec::new();
                for (i, alternative) in alternatives.iter().enumerate() {
                    if i + 1 < alternatives.len() {
                        let split = self.insts.len();
                        self.insts.push(Inst::Split { first: split + 1, second: 0 });
                        self.emit_node(alternative, backward);
                        exits.push(self.insts.len());
                        self.insts.push(Inst::Jump(0));
                        let next = self.insts.len();
                        self.insts[split] = Inst::Split { first: split + 1, second: next };
                    } else {
                        self.emit_node(alternative, backward);
                    }
                }
                let end = self.insts.len();
                for exit in exits {
                    self.insts[exit] = Inst::Jump(end);
                }
            }
            Node::Capture(index, body) => {
                let (open, close) = if backward { (index * 2 + 1, index * 2) } else { (index * 2, index * 2 + 1) };
                self.insts.push(Inst::Save(open));
                self.emit_node(body, backward);
                self.insts.push(Inst::Save(close));
            }
            Node::Repeat { body, min, max, greedy } => self.emit_repeat(body, *min, *max, *greedy, backward),
            Node::Assert(assertion) => self.insts.push(Inst::Assert(*assertion)),
            Node::BackReference { groups, ignore_case } => self.insts.push(Inst::BackReference {
                groups: groups.as_slice().into(),
                ignore_case: *ignore_case,
                backward,
            }),
            Node::Look { behind, negative, body } => {
                let start = self.insts.len();
                self.insts.push(Inst::LookStart { negative: *negative, resume: 0 });
                self.emit_node(body, *behind);
                self.insts.push(Inst::LookEnd);
                let resume = self.insts.len();
                self.insts[start] = Inst::LookStart { negative: *negative, resume };
            }
        }
    }

    fn emit_repeat(&mut self, body: &Node, min: u32, max: Option<u32>, greedy: bool, backward: bool) {
        let max = max.unwrap_or(u32::MAX);
        if max == 0 {
            return;
        }
        if let Node::Set(set) = body {
            let set = self.add_set(set);
            self.insts.push(Inst::RepeatSet { set, min, max, greedy, backward });
            return;
        }
        let (first_group, last_group) = capture_range(body);
        if never_consumes(body) {
            // Every iteration of a body that cannot consume starts where the
            // last one did, with its captures reset: it has the outcomes of
            // one iteration, and an optional one fails by the empty-iteration
            // rule. So `X{n,m}` is `X` for n >= 1 and nothing for n = 0,
            // however large n is.
            if min >= 1 {
                if let Some(first) = first_group {
                    self.insts.push(Inst::ClearSlots { from: first * 2, to: (last_group + 1) * 2 });
                }
                self.emit_node(body, backward);
            }
            return;
        }
        let empty = EmptyIteration::of(body);
        let counter = self.counter_count;
        self.counter_count += 1;
        let mark = self.mark_count;
        self.mark_count += 1;
        self.insts.push(Inst::CounterReset(counter));
        let head = self.insts.len();
        self.insts.push(Inst::LoopHead { counter, min, max, greedy, body: head + 1, exit: 0, empty, backward });
        self.insts.push(Inst::IterationStart { mark });
        if let Some(first) = first_group {
            self.insts.push(Inst::ClearSlots { from: first * 2, to: (last_group + 1) * 2 });
        }
        self.emit_node(body, backward);
        self.insts.push(Inst::IterationEnd { counter, mark, min, head });
        let exit = self.insts.len();
        self.insts[head] = Inst::LoopHead { counter, min, max, greedy, body: head + 1, exit, empty, backward };
    }

    /// JavaScript `test()` from index 0 with a fresh RegExp.
    pub fn is_match(&self, input: &[u32], step_budget: u64, limits: &Limits) -> Result<bool, Exhausted> {
        if u32::try_from(input.len()).map_or(true, |len| len == UNSET) {
            return Err(Exhausted::Memory);
        }
        let mut machine = Machine {
            program: self,
            input,
            slots: vec![UNSET; self.slot_count],
            counters: vec![0; self.counter_count],
            marks: vec![0; self.mark_count],
            stack: Vec::new(),
            looks: Vec::new(),
            steps: 0,
            step_budget,
            limits,
            unchecked: 0,
            mid_pair: false,
        };
        let last_start = if self.sticky { 0 } else { input.len() };
        for start in 0..=last_start {
            if machine.run(start)? {
                return Ok(true);
            }
        }
        // With u/v the input is code points, but V8 still tries the positions between the
        // halves of a surrogate pair, where only an empty match can succeed. All such
        // positions behave alike, so one attempt on a stand-in empty input covers them.
        if self.unicode && !self.sticky && input.iter().any(|&u| u > 0xFFFF) {
            machine.input = &[];
            machine.mid_pair = true;
            return machine.run(0);
        }
        Ok(false)
    }
}

/// True when no path through `node` consumes input. A backreference that can only find
/// its group unset is no longer one here (see `references`).
fn never_consumes(node: &Node) -> bool {
    match node {
        Node::Empty | Node::Assert(_) | Node::Look { .. } => true,
        Node::Set(_) | Node::BackReference { .. } => false,
        Node::Concat(items) | Node::Alternation(items) => items.iter().all(never_consumes),
        Node::Capture(_, body) => never_consumes(body),
        Node::Repeat { body, max, .. } => *max == Some(0) || never_consumes(body),
    }
}

/// Where a loop body can match the empty string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EmptyIteration {
    Never,
    /// At every position: a path without sets, assertions, lookarounds or
    /// backreferences. A capture on it captures the empty string, which a
    /// backreference cannot tell from unset.
    Anywhere,
    /// Only where an assertion, a lookaround or a backreference on the way allows it.
    Somewhere,
}

impl EmptyIteration {
    fn of(body: &Node) -> EmptyIteration {
        if matches_empty_unconditionally(body) {
            EmptyIteration::Anywhere
        } else if can_match_empty(body) {
            EmptyIteration::Somewhere
        } else {
            EmptyIteration::Never
        }
    }
}

fn matches_empty_unconditionally(node: &Node) -> bool {
    match node {
        Node::Empty => true,
        Node::Set(_) | Node::Assert(_) | Node::Look { .. } | Node::BackReference { .. } => false,
        Node::Concat(items) => items.iter().all(matches_empty_unconditionally),
        Node::Alternation(items) => items.iter().any(matches_empty_unconditionally),
        Node::Capture(_, body) => matches_empty_unconditionally(body),
        Node::Repeat { body, min, .. } => *min == 0 || matches_empty_unconditionally(body),
    }
}

/// True when some path through `node` may match empty somewhere (a backreference
/// matches empty when its group captured nothing).
fn can_match_empty(node: &Node) -> bool {
    match node {
        Node::Empty | Node::Assert(_) | Node::Look { .. } | Node::BackReference { .. } => true,
        Node::Set(_) => false,
        Node::Concat(items) => items.iter().all(can_match_empty),
        Node::Alternation(items) => items.iter().any(can_match_empty),
        Node::Capture(_, body) => can_match_empty(body),
        Node::Repeat { body, min, .. } => *min == 0 || can_match_empty(body),
    }
}

/// The iterations still required of a loop whose body can match empty, capped
/// without changing the answer.
///
/// An iteration starts with the body's captures unset, and nothing else it reads
/// changes while the loop runs, so what an iteration can do depends only on where it
/// starts. A path from here makes at most `remaining` consuming iterations; the empty
/// required ones sit in runs at the positions it passes (at most `remaining + 1`), and
/// a run can repeat its last iteration any number of times, or drop all but that one,
/// without changing what follows. So any path can be made to require exactly
/// `2 * remaining + 2` iterations and back, and requiring that many has the same
/// outcomes. Where the body matches empty anywhere, the empty iterations can also be
/// moved before the first consuming one (or kept one at the end), and `remaining + 2`
/// suffices. This ends `(?:a|){2147483647}b` and `(a|^){1000000}` at once, as
/// JavaScript's answers do.
fn caps_required_iterations(required: u32, remaining: usize, empty: EmptyIteration) -> u32 {
    let cap = match empty {
        EmptyIteration::Never => return required,
        EmptyIteration::Anywhere => remaining.saturating_add(2),
        EmptyIteration::Somewhere => remaining.saturating_mul(2).saturating_add(2),
    };
    required.min(u32::try_from(cap).unwrap_or(u32::MAX))
}

/// Lowest and highest capture numbers inside `node`.
fn capture_range(node: &Node) -> (Option<usize>, usize) {
    fn walk(node: &Node, low: &mut Option<usize>, high: &mut usize) {
        match node {
            Node::Capture(index, body) => {
                *low = Some(low.map_or(*index, |l| l.min(*index)));
                *high = (*high).max(*index);
                walk(body, low, high);
            }
            Node::Concat(items) | Node::Alternation(items) => items.iter().for_each(|n| walk(n, low, high)),
            Node::Repeat { body, .. } | Node::Look { body, .. } => walk(body, low, high),
            _ => {}
        }
    }
    let (mut low, mut high) = (None, 0);
    walk(node, &mut low, &mut high);
    (low, high)
}

struct Machine<'p, 'i, 'l> {
    program: &'p Program,
    input: &'i [u32],
    slots: Vec<u32>,
    counters: Vec<u32>,
    marks: Vec<u32>,
    stack: Vec<Frame>,
    looks: Vec<usize>,
    steps: u64,
    step_budget: u64,
    limits: &'l Limits<'l>,
    /// Work since the last look at `limits`.
    unchecked: u64,
    /// Evaluating at a position inside a surrogate pair (see `is_match`).
    mid_pair: bool,
}

impl Machine<'_, '_, '_> {
    fn charge(&mut self) -> Result<(), Exhausted> {
        self.steps += 1;
        if self.steps > self.step_budget {
            return Err(Exhausted::Steps);
        }
        self.work(1)
    }

    /// Counts work towards the next look at the caller's limits: a step, or a loop over
    /// frames or slots that the step budget does not count. A clock read every 64 Ki of
    /// them costs nothing measurable.
    fn work(&mut self, amount: u64) -> Result<(), Exhausted> {
        self.unchecked += amount;
        if self.unchecked >= LIMIT_CHECK_WORK {
            self.unchecked = 0;
            self.limits.check().map_err(Exhausted::Stopped)?;
        }
        Ok(())
    }

    fn push(&mut self, frame: Frame) -> Result<(), Exhausted> {
        if self.stack.len() >= MAX_FRAMES {
            return Err(Exhausted::Memory);
        }
        self.stack.push(frame);
        Ok(())
    }

    /// The unit consumed from `pos` in the given direction, and the position after it.
    fn step(&self, pos: usize, backward: bool) -> Option<(u32, usize)> {
        if backward {
            let before = pos.checked_sub(1)?;
            Some((self.input[before], before))
        } else {
            self.input.get(pos).map(|&u| (u, pos + 1))
        }
    }

    fn is_word(&self, pos: Option<usize>, folded: bool) -> bool {
        let word = if folded { &self.program.folded_word } else { &self.program.word };
        pos.and_then(|p| self.input.get(p)).is_some_and(|&u| word.contains(u))
    }

    fn assertion_holds(&self, assertion: Assertion, pos: usize) -> bool {
        if self.mid_pair {
            // Both neighbours are surrogates: not line terminators, not word characters.
            return matches!(assertion, Assertion::NotWordBoundary { .. });
        }
        let len = self.input.len();
        match assertion {
            Assertion::InputStart => pos == 0,
            Assertion::InputEnd => pos == len,
            Assertion::LineStart => pos == 0 || charset::is_line_terminator(self.input[pos - 1]),
            Assertion::LineEnd => pos == len || charset::is_line_terminator(self.input[pos]),
            Assertion::WordBoundary { folded } => {
                self.is_word(pos.checked_sub(1), folded) != self.is_word(Some(pos), folded)
            }
            Assertion::NotWordBoundary { folded } => {
                self.is_word(pos.checked_sub(1), folded) == self.is_word(Some(pos), folded)
            }
            Assertion::NotMidPair => true,
        }
    }

    fn units_equal(&self, a: u32, b: u32, ignore_case: bool) -> bool {
        a == b || (ignore_case && case_fold::orbits(self.program.unicode).equal(a, b))
    }

    /// New position after matching the text of whichever of `groups` is set at `pos`
    /// (at most one is), or None.
    fn back_reference(
        &mut self,
        groups: &[usize],
        ignore_case: bool,
        pos: usize,
        backward: bool,
    ) -> Result<Option<usize>, Exhausted> {
        if self.mid_pair {
            // V8 rejects a backreference that would leave it inside a surrogate pair.
            return Ok(None);
        }
        let captured = groups
            .iter()
            .map(|&group| (self.slots[group * 2], self.slots[group * 2 + 1]))
            .find(|&(start, end)| start != UNSET && end != UNSET);
        let Some((start, end)) = captured else {
            return Ok(Some(pos));
        };
        let (start, end) = (start.min(end) as usize, start.max(end) as usize);
        let length = end - start;
        let from = if backward {
            match pos.checked_sub(length) {
                Some(from) => from,
                None => return Ok(None),
            }
        } else {
            if pos + length > self.input.len() {
                return Ok(None);
            }
            pos
        };
        for offset in 0..length {
            self.charge()?;
            if !self.units_equal(self.input[start + offset], self.input[from + offset], ignore_case) {
                return Ok(None);
            }
        }
        Ok(Some(if backward { from } else { pos + length }))
    }

    fn run(&mut self, start: usize) -> Result<bool, Exhausted> {
        self.slots.iter_mut().for_each(|s| *s = UNSET);
        self.stack.clear();
        self.looks.clear();
        let program = self.program;
        let mut pc = 0;
        let mut pos = start;
        loop {
            self.charge()?;
            let advanced = match &program.insts[pc] {
                Inst::Match => return Ok(true),
                Inst::Set { set, backward } => match self.step(pos, *backward) {
                    Some((unit, next)) if program.sets[*set].contains(unit) => {
                        pos = next;
                        pc += 1;
                        true
                    }
                    _ => false,
                },
                Inst::RepeatSet { set, min, max, greedy, backward } => {
                    let (set, min, max, greedy, backward) = (*set, *min, *max, *greedy, *backward);
                    let limit = if greedy { max } else { min };
                    let mut taken = 0u32;
                    let mut here = pos;
                    let mut ok = true;
                    while taken < limit {
                        match self.step(here, backward) {
                            Some((unit, next)) if program.sets[set].contains(unit) => {
                                self.charge()?;
                                here = next;
                                taken += 1;
                            }
                            _ => break,
                        }
                    }
                    if taken < min {
                        ok = false;
                    } else if greedy {
                        // Positions after min..taken-1 repetitions remain as choices.
                        let last = if backward { pos - min as usize } else { pos + min as usize };
                        if here != last {
                            let next = if backward { here + 1 } else { here - 1 };
                            self.push(Frame::GreedyRun { pc: pc as u32 + 1, next: next as u32, last: last as u32 })?;
                        }
                        pos = here;
                        pc += 1;
                    } else {
                        if taken < max {
                            self.push(Frame::LazyRun { pc: pc as u32 + 1, pos: here as u32, taken })?;
                        }
                        pos = here;
                        pc += 1;
                    }
                    ok
                }
                Inst::Split { first, second } => {
                    self.push(Frame::Retry { pc: *second as u32, pos: pos as u32 })?;
                    pc = *first;
                    true
                }
                Inst::Jump(target) => {
                    pc = *target;
                    true
                }
                Inst::Save(slot) => {
                    self.push(Frame::RestoreSlot { slot: *slot as u32, value: self.slots[*slot] })?;
                    self.slots[*slot] = pos as u32;
                    pc += 1;
                    true
                }
                Inst::ClearSlots { from, to } => {
                    self.work((to - from) as u64)?;
                    for slot in *from..*to {
                        if self.slots[slot] != UNSET {
                            self.push(Frame::RestoreSlot { slot: slot as u32, value: self.slots[slot] })?;
                            self.slots[slot] = UNSET;
                        }
                    }
                    pc += 1;
                    true
                }
                Inst::Assert(assertion) => {
                    if self.assertion_holds(*assertion, pos) {
                        pc += 1;
                        true
                    } else {
                        false
                    }
                }
                Inst::BackReference { groups, ignore_case, backward } => {
                    match self.back_reference(groups, *ignore_case, pos, *backward)? {
                        Some(next) => {
                            pos = next;
                            pc += 1;
                            true
                        }
                        None => false,
                    }
                }
                Inst::LookStart { negative, resume } => {
                    self.looks.push(self.stack.len());
                    self.push(Frame::Look { negative: *negative, pos: pos as u32, resume: *resume as u32 })?;
                    pc += 1;
                    true
                }
                Inst::LookEnd => {
                    let barrier = self.looks.pop().unwrap_or(0);
                    let Some(Frame::Look { negative, pos: saved, resume }) = self.stack.get(barrier) else {
                        return Ok(false);
                    };
                    let (negative, saved, resume) = (*negative, *saved as usize, *resume as usize);
                    if negative {
                        // The body matched, so the negative lookaround fails.
                        while self.stack.len() > barrier + 1 {
                            self.charge()?;
                            self.undo_top();
                        }
                        self.stack.pop();
                        false
                    } else {
                        // Lookarounds are atomic: drop choices made inside, keep undo records.
                        self.work((self.stack.len() - barrier) as u64)?;
                        let mut kept = barrier;
                        for index in barrier + 1..self.stack.len() {
                            let keep = matches!(
                                self.stack[index],
                                Frame::RestoreSlot { .. } | Frame::RestoreCounter { .. } | Frame::RestoreMark { .. }
                            );
                            if keep {
                                self.stack.swap(kept, index);
                                kept += 1;
                            }
                        }
                        self.stack.truncate(kept);
                        pos = saved;
                        pc = resume;
                        true
                    }
                }
                Inst::CounterReset(counter) => {
                    self.push(Frame::RestoreCounter { counter: *counter as u32, value: self.counters[*counter] })?;
                    self.counters[*counter] = 0;
                    pc += 1;
                    true
                }
                Inst::LoopHead { counter, min, max, greedy, body, exit, empty, backward } => {
                    let mut done = self.counters[*counter];
                    if *empty != EmptyIteration::Never && done < *min {
                        let remaining = if *backward { pos } else { self.input.len() - pos };
                        let required = caps_required_iterations(*min - done, remaining, *empty);
                        if required < *min - done {
                            self.push(Frame::RestoreCounter { counter: *counter as u32, value: done })?;
                            done = *min - required;
                            self.counters[*counter] = done;
                        }
                    }
                    if done < *min {
                        pc = *body;
                    } else if done >= *max {
                        pc = *exit;
                    } else if *greedy {
                        self.push(Frame::Retry { pc: *exit as u32, pos: pos as u32 })?;
                        pc = *body;
                    } else {
                        self.push(Frame::Retry { pc: *body as u32, pos: pos as u32 })?;
                        pc = *exit;
                    }
                    true
                }
                Inst::IterationStart { mark } => {
                    self.push(Frame::RestoreMark { mark: *mark as u32, value: self.marks[*mark] })?;
                    self.marks[*mark] = pos as u32;
                    pc += 1;
                    true
                }
                Inst::IterationEnd { counter, mark, min, head } => {
                    let done = self.counters[*counter];
                    // An optional iteration that consumed nothing fails (ECMAScript RepeatMatcher).
                    if done >= *min && self.marks[*mark] as usize == pos {
                        false
                    } else {
                        self.push(Frame::RestoreCounter { counter: *counter as u32, value: done })?;
                        self.counters[*counter] = done.saturating_add(1);
                        pc = *head;
                        true
                    }
                }
            };
            if !advanced {
                match self.backtrack()? {
                    Some((next_pc, next_pos)) => {
                        pc = next_pc;
                        pos = next_pos;
                    }
                    None => return Ok(false),
                }
            }
        }
    }

    fn undo_top(&mut self) {
        match self.stack.pop() {
            Some(Frame::RestoreSlot { slot, value }) => self.slots[slot as usize] = value,
            Some(Frame::RestoreCounter { counter, value }) => self.counters[counter as usize] = value,
            Some(Frame::RestoreMark { mark, value }) => self.marks[mark as usize] = value,
            Some(Frame::Look { .. }) => {
                self.looks.pop();
            }
            _ => {}
        }
    }

    /// Pops to the next pending choice: Some((pc, pos)) to resume, None if none is left.
    fn backtrack(&mut self) -> Result<Option<(usize, usize)>, Exhausted> {
        loop {
            self.charge()?;
            let Some(frame) = self.stack.pop() else {
                return Ok(None);
            };
            match frame {
                Frame::Retry { pc, pos } => return Ok(Some((pc as usize, pos as usize))),
                Frame::GreedyRun { pc, next, last } => {
                    let (_, _, backward) = self.repeat_set_before(pc);
                    if next != last {
                        let following = if backward { next + 1 } else { next - 1 };
                        self.push(Frame::GreedyRun { pc, next: following, last })?;
                    }
                    return Ok(Some((pc as usize, next as usize)));
                }
                Frame::LazyRun { pc, pos, taken } => {
                    let (set, max, backward) = self.repeat_set_before(pc);
                    if let Some((unit, next)) = self.step(pos as usize, backward) {
                        if self.program.sets[set].contains(unit) {
                            if taken + 1 < max {
                                self.push(Frame::LazyRun { pc, pos: next as u32, taken: taken + 1 })?;
                            }
                            return Ok(Some((pc as usize, next)));
                        }
                    }
                }
                Frame::RestoreSlot { slot, value } => self.slots[slot as usize] = value,
                Frame::RestoreCounter { counter, value } => self.counters[counter as usize] = value,
                Frame::RestoreMark { mark, value } => self.marks[mark as usize] = value,
                Frame::Look { negative, pos, resume } => {
                    self.looks.pop();
                    if negative {
                        // The body failed everywhere: the negative lookaround holds.
                        return Ok(Some((resume as usize, pos as usize)));
                    }
                }
            }
        }
    }

    /// (set, max, backward) of the RepeatSet whose choices a frame resuming at `pc` holds.
    fn repeat_set_before(&self, pc: u32) -> (usize, u32, bool) {
        match self.program.insts[pc as usize - 1] {
            Inst::RepeatSet { set, max, backward, .. } => (set, max, backward),
            _ => unreachable!("a repetition frame always resumes right after its RepeatSet"),
        }
    }
}
