//! Dispatch waves as pure data: the state file's JSON shape, strict
//! validation of every invariant, the five transitions and the aggregate
//! reduction the checker uses. Nothing here touches the file system.
//!
//! A wave moves `open -> sealed -> complete`; `abandoned` is reachable from
//! `open` or `sealed` and is terminal. The barrier rules: every leaf must be
//! started (with a handle unique in the wave) before the wave is sealed, and
//! no leaf may return before the seal.

use std::cmp::Ordering;
use std::fmt;
use std::time::SystemTime;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use super::error::DispatchError;
use crate::ledger::text::{js_trim, utf16_len};
use crate::target::validate_scope_id;

/// A refused transition or value, worded like `format!`.
macro_rules! refused {
    ($($message:tt)*) => { DispatchError::Refused(format!($($message)*)) };
}

/// What is wrong with a state file's text, worded like `format!`.
macro_rules! shape {
    ($($message:tt)*) => { DispatchError::Shape(format!($($message)*)) };
}
use crate::terminal::is_unsafe;

pub const SCHEMA: u64 = 1;
/// Longest handle accepted, in UTF-16 code units as the Node tool counts.
pub const MAX_HANDLE_CHARS: usize = 256;
/// Longest abandonment reason accepted, in UTF-16 code units.
pub const MAX_REASON_CHARS: usize = 500;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaveState {
    Open,
    Sealed,
    Complete,
    Abandoned,
}

impl WaveState {
    fn parse(text: &str) -> Option<WaveState> {
        match text {
            "open" => Some(WaveState::Open),
            "sealed" => Some(WaveState::Sealed),
            "complete" => Some(WaveState::Complete),
            "abandoned" => Some(WaveState::Abandoned),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            WaveState::Open => "open",
            WaveState::Sealed => "sealed",
            WaveState::Complete => "complete",
            WaveState::Abandoned => "abandoned",
        }
    }
}

impl fmt::Display for WaveState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A timestamp as written (kept verbatim so a rewrite never reformats it)
/// and as the instant it denotes (for the ordering rules).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    text: String,
    at: SystemTime,
}

impl Stamp {
    /// `at` in the Node tool's `toISOString` form: UTC, milliseconds, `Z`.
    pub fn from_time(at: SystemTime) -> Stamp {
        Stamp { text: humantime::format_rfc3339_millis(at).to_string(), at }
    }

    pub fn now() -> Stamp {
        Stamp::from_time(SystemTime::now())
    }

    fn parse(text: &str, label: &str) -> Result<Stamp, DispatchError> {
        humantime::parse_rfc3339(text)
            .map(|at| Stamp { text: text.to_string(), at })
            .map_err(|_| shape!("{label} must be an ISO timestamp"))
    }

    pub fn at(&self) -> SystemTime {
        self.at
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Start {
    pub handle: String,
    pub at: Stamp,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wave {
    pub leaves: Vec<String>,
    pub state: WaveState,
    pub opened_at: Stamp,
    /// Leaf id -> start record, in the order they were recorded.
    pub started: Vec<(String, Start)>,
    /// Leaf id -> return time, in the order they were recorded.
    pub returned: Vec<(String, Stamp)>,
    pub sealed_at: Option<Stamp>,
    pub completed_at: Option<Stamp>,
    pub reason: Option<String>,
    pub abandoned_at: Option<Stamp>,
}

impl Wave {
    pub fn started_count(&self) -> usize {
        self.started.len()
    }

    pub fn returned_count(&self) -> usize {
        self.returned.len()
    }

    fn start_of(&self, leaf: &str) -> Option<&Start> {
        self.started.iter().find(|(id, _)| id == leaf).map(|(_, start)| start)
    }

    fn has_returned(&self, leaf: &str) -> bool {
        self.returned.iter().any(|(id, _)| id == leaf)
    }
}

/// Every wave of one scope, in the order they were opened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct State {
    pub waves: Vec<(String, Wave)>,
}

/// One requested transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Open { leaves: Vec<String> },
    Start { leaf: String, handle: String },
    Seal,
    Return { leaf: String },
    Abandon { reason: String },
}

/// What the checker folds into a scope's verdict: waves that still block
/// completion, and abandoned waves that force a handoff.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DispatchSummary {
    /// `dispatch:<wave> open (S/N started)` or `dispatch:<wave> sealed (R/N returned)`.
    pub blocking: Vec<String>,
    /// `dispatch:<wave>`.
    pub abandoned: Vec<String>,
}

fn valid_id(value: &str, label: &'static str) -> Result<(), DispatchError> {
    Ok(validate_scope_id(value, label)?)
}

fn printable_bounded(value: &str, max: usize) -> Option<&str> {
    let trimmed = js_trim(value);
    let ok = !trimmed.is_empty() && utf16_len(trimmed) <= max && !trimmed.chars().any(is_unsafe);
    ok.then_some(trimmed)
}

/// A host agent handle: trimmed, nonblank, at most 256 characters, and free
/// of control and bidi characters (so it can never rewrite a terminal).
pub fn valid_handle(value: &str) -> Result<String, DispatchError> {
    printable_bounded(value, MAX_HANDLE_CHARS)
        .map(str::to_string)
        .ok_or_else(|| refused!("handle must be printable, nonblank, and at most {MAX_HANDLE_CHARS} characters"))
}

/// An abandonment reason: trimmed, nonblank, at most 500 characters, printable.
pub fn valid_reason(value: &str) -> Result<String, DispatchError> {
    printable_bounded(value, MAX_REASON_CHARS)
        .map(str::to_string)
        .ok_or_else(|| refused!("reason must be printable, nonblank, and at most {MAX_REASON_CHARS} characters"))
}

/// The Node tool sorts wave ids with `localeCompare`. For the id alphabet
/// `[A-Za-z0-9._-]` the root collation orders `_ - .` before digits before
/// letters, compares letters case-blind first and puts lowercase first on a
/// tie; this reproduces that order.
pub fn collate(left: &str, right: &str) -> Ordering {
    fn primary(c: char) -> (u8, char) {
        match c {
            '_' => (0, c),
            '-' => (1, c),
            '.' => (2, c),
            '0'..='9' => (3, c),
            _ => (4, c.to_ascii_lowercase()),
        }
    }
    let keys = |s: &str| s.chars().map(primary).collect::<Vec<_>>();
    let tertiary = |s: &str| s.chars().map(|c| c.is_ascii_uppercase()).collect::<Vec<_>>();
    keys(left).cmp(&keys(right)).then_with(|| tertiary(left).cmp(&tertiary(right))).then_with(|| left.cmp(right))
}

impl State {
    pub fn wave(&self, id: &str) -> Option<&Wave> {
        self.waves.iter().find(|(wave, _)| wave == id).map(|(_, wave)| wave)
    }

    fn wave_mut(&mut self, id: &str) -> Option<&mut Wave> {
        self.waves.iter_mut().find(|(wave, _)| wave == id).map(|(_, wave)| wave)
    }

    /// Waves sorted as the Node tool lists them.
    pub fn sorted(&self) -> Vec<(&str, &Wave)> {
        let mut waves: Vec<(&str, &Wave)> = self.waves.iter().map(|(id, wave)| (id.as_str(), wave)).collect();
        waves.sort_by(|(a, _), (b, _)| collate(a, b));
        waves
    }

    /// Parses and strictly validates the text of a state file.
    pub fn parse(text: &str) -> Result<State, DispatchError> {
        let raw: RawState = serde_json::from_str(text).map_err(|e| DispatchError::Shape(e.to_string()))?;
        if raw.schema.as_f64() != Some(SCHEMA as f64) {
            return Err(shape!("expected schema 1 with a waves object"));
        }
        let mut state = State::default();
        for (id, wave) in raw.waves.0 {
            valid_id(&id, "wave")?;
            let wave = Wave::from_raw(&id, wave)?;
            check_wave(&id, &wave)?;
            state.waves.push((id, wave));
        }
        Ok(state)
    }

    /// The state file's text: two-space indented JSON and a final newline,
    /// as the Node tool writes it.
    pub fn render(&self) -> String {
        let raw = RawState {
            schema: SCHEMA.into(),
            waves: Ordered(self.waves.iter().map(|(id, wave)| (id.clone(), wave.to_raw())).collect()),
        };
        let mut text = serde_json::to_string_pretty(&raw).expect("dispatch state always serializes");
        text.push('\n');
        text
    }

    /// Applies one transition at `now`, revalidates the wave, and returns the
    /// audit event text (`dispatch <wave> ...`). On error nothing changed.
    pub fn apply(&mut self, wave_id: &str, action: &Action, now: &Stamp) -> Result<String, DispatchError> {
        valid_id(wave_id, "wave")?;
        let mut next = self.clone();
        let event = next.transition(wave_id, action, now)?;
        let wave = next.wave(wave_id).expect("a transition leaves its wave in place");
        check_wave(wave_id, wave)?;
        *self = next;
        Ok(format!("dispatch {wave_id} {event}"))
    }

    fn transition(&mut self, wave_id: &str, action: &Action, now: &Stamp) -> Result<String, DispatchError> {
        if let Action::Open { leaves } = action {
            if self.wave(wave_id).is_some() {
                return Err(refused!("wave {wave_id} already exists"));
            }
            for leaf in leaves {
                valid_id(leaf, "leaf")?;
            }
            if leaves.is_empty() {
                return Err(refused!("open requires at least one --leaf"));
            }
            for (index, leaf) in leaves.iter().enumerate() {
                if leaves[..index].contains(leaf) {
                    return Err(refused!("duplicate leaf {leaf}"));
                }
            }
            self.waves.push((
                wave_id.to_string(),
                Wave {
                    leaves: leaves.clone(),
                    state: WaveState::Open,
                    opened_at: now.clone(),
                    started: Vec::new(),
                    returned: Vec::new(),
                    sealed_at: None,
                    completed_at: None,
                    reason: None,
                    abandoned_at: None,
                },
            ));
            return Ok(format!("opened: {}", leaves.join(", ")));
        }
        let wave = self.wave_mut(wave_id).ok_or_else(|| refused!("unknown wave {wave_id}"))?;
        match action {
            Action::Open { .. } => unreachable!("handled above"),
            Action::Abandon { reason } => {
                if matches!(wave.state, WaveState::Complete | WaveState::Abandoned) {
                    return Err(refused!("wave {wave_id} is {}; abandon requires an open or sealed wave", wave.state));
                }
                let reason = valid_reason(reason)?;
                wave.state = WaveState::Abandoned;
                wave.abandoned_at = Some(now.clone());
                let event = format!("abandoned: {reason}");
                wave.reason = Some(reason);
                Ok(event)
            }
            Action::Start { leaf, handle } => {
                valid_id(leaf, "leaf")?;
                let handle = valid_handle(handle)?;
                if wave.state != WaveState::Open {
                    return Err(refused!("wave {wave_id} is {}; start requires an open wave", wave.state));
                }
                if !wave.leaves.contains(leaf) {
                    return Err(refused!("unknown leaf {leaf} in wave {wave_id}"));
                }
                if wave.start_of(leaf).is_some() {
                    return Err(refused!("leaf {leaf} already started"));
                }
                if let Some((owner, _)) = wave.started.iter().find(|(_, start)| start.handle == handle) {
                    return Err(refused!("handle is already assigned to {owner}"));
                }
                let event = format!("started {leaf} as {handle}");
                wave.started.push((leaf.clone(), Start { handle, at: now.clone() }));
                Ok(event)
            }
            Action::Seal => {
                if wave.state != WaveState::Open {
                    return Err(refused!("wave {wave_id} is {}; seal requires an open wave", wave.state));
                }
                let missing: Vec<&str> =
                    wave.leaves.iter().filter(|leaf| wave.start_of(leaf).is_none()).map(String::as_str).collect();
                if !missing.is_empty() {
                    return Err(refused!("cannot seal {wave_id}: missing starts for {}", missing.join(", ")));
                }
                wave.state = WaveState::Sealed;
                wave.sealed_at = Some(now.clone());
                Ok("sealed".into())
            }
            Action::Return { leaf } => {
                valid_id(leaf, "leaf")?;
                if wave.state != WaveState::Sealed {
                    return Err(refused!("return requires a sealed wave; {wave_id} is {}", wave.state));
                }
                if !wave.leaves.contains(leaf) {
                    return Err(refused!("unknown leaf {leaf} in wave {wave_id}"));
                }
                if wave.has_returned(leaf) {
                    return Err(refused!("leaf {leaf} already returned"));
                }
                wave.returned.push((leaf.clone(), now.clone()));
                if wave.returned.len() == wave.leaves.len() {
                    wave.state = WaveState::Complete;
                    wave.completed_at = Some(now.clone());
                }
                Ok(format!("returned {leaf}"))
            }
        }
    }

    /// The leaf whose agent the host launched as `handle`, in the latest
    /// opened wave that recorded that handle (a handle is unique within a
    /// wave, not across waves). `None` when no wave recorded it, or when
    /// that wave was abandoned: the driver gave up on it and hands it off.
    pub fn leaf_launched_as(&self, handle: &str) -> Option<&str> {
        let handle = js_trim(handle);
        let (wave, leaf) = self.waves.iter().rev().find_map(|(_, wave)| {
            wave.started.iter().find(|(_, start)| start.handle == handle).map(|(leaf, _)| (wave, leaf))
        })?;
        (wave.state != WaveState::Abandoned).then_some(leaf.as_str())
    }

    /// The checker's reduction: every wave that is not complete either
    /// blocks (open or sealed) or demands a handoff (abandoned).
    pub fn summary(&self) -> DispatchSummary {
        let mut summary = DispatchSummary::default();
        for (id, wave) in self.sorted() {
            let total = wave.leaves.len();
            match wave.state {
                WaveState::Complete => {}
                WaveState::Abandoned => summary.abandoned.push(format!("dispatch:{id}")),
                WaveState::Open => {
                    summary.blocking.push(format!("dispatch:{id} open ({}/{total} started)", wave.started_count()))
                }
                WaveState::Sealed => {
                    summary.blocking.push(format!("dispatch:{id} sealed ({}/{total} returned)", wave.returned_count()))
                }
            }
        }
        summary
    }
}

const TRUNCATION_MARKER: &str = "...[truncated]";

/// Untrusted text made safe to print: each control or bidi character becomes
/// a visible `\xNN` / `\uNNNN` escape, and the result fits in `max_bytes`
/// of UTF-8 (ending in `...[truncated]` when it had to be cut).
pub fn escape_bounded(text: &str, max_bytes: usize) -> String {
    let mut pieces: Vec<String> = Vec::new();
    let mut bytes = 0;
    let mut truncated = false;
    for c in text.chars() {
        let piece = match c as u32 {
            code if is_unsafe(c) && code <= 0xff => format!("\\x{code:02x}"),
            code if is_unsafe(c) => format!("\\u{code:04x}"),
            _ => c.to_string(),
        };
        if bytes + piece.len() > max_bytes {
            truncated = true;
            break;
        }
        bytes += piece.len();
        pieces.push(piece);
    }
    if truncated {
        while bytes + TRUNCATION_MARKER.len() > max_bytes {
            let Some(last) = pieces.pop() else { break };
            bytes -= last.len();
        }
        pieces.push(TRUNCATION_MARKER.to_string());
    }
    pieces.concat()
}

/// The ordering and completeness rules a wave must satisfy in any state.
fn check_wave(id: &str, wave: &Wave) -> Result<(), DispatchError> {
    let state = wave.state;
    if wave.leaves.is_empty() {
        return Err(shape!("wave {id} has an invalid shape"));
    }
    if state == WaveState::Abandoned {
        if wave.abandoned_at.is_none() {
            return Err(shape!("wave {id} abandonedAt must be an ISO timestamp"));
        }
        if wave.reason.is_none() {
            return Err(shape!("reason must be a string"));
        }
    } else if wave.abandoned_at.is_some() || wave.reason.is_some() {
        return Err(shape!("{state} wave {id} contains abandonment metadata"));
    }
    for (index, leaf) in wave.leaves.iter().enumerate() {
        valid_id(leaf, "leaf")?;
        if wave.leaves[..index].contains(leaf) {
            return Err(shape!("wave {id} has duplicate leaf {leaf}"));
        }
    }
    let mut latest = wave.opened_at.at;
    for (index, (leaf, start)) in wave.started.iter().enumerate() {
        if !wave.leaves.contains(leaf) {
            return Err(shape!("wave {id} started unknown leaf {leaf}"));
        }
        if wave.started[..index].iter().any(|(_, earlier)| earlier.handle == start.handle) {
            return Err(shape!("wave {id} reuses handle {}", start.handle));
        }
        if start.at.at < wave.opened_at.at {
            return Err(shape!("wave {id} starts {leaf} before it opened"));
        }
        latest = latest.max(start.at.at);
    }
    let mut latest_return = None::<SystemTime>;
    for (leaf, at) in &wave.returned {
        let Some(start) = wave.start_of(leaf) else {
            return Err(shape!("wave {id} returned unstarted leaf {leaf}"));
        };
        if at.at < start.at.at {
            return Err(shape!("wave {id} returns {leaf} before it started"));
        }
        latest_return = Some(latest_return.map_or(at.at, |t| t.max(at.at)));
    }
    let all_started = wave.started.len() == wave.leaves.len();
    let all_returned = wave.returned.len() == wave.leaves.len();
    if state == WaveState::Open && !wave.returned.is_empty() {
        return Err(shape!("open wave {id} contains returns"));
    }
    if matches!(state, WaveState::Sealed | WaveState::Complete) && !all_started {
        return Err(shape!("{state} wave {id} is missing starts"));
    }
    if state == WaveState::Complete && !all_returned {
        return Err(shape!("complete wave {id} is missing returns"));
    }
    if state == WaveState::Sealed && all_returned {
        return Err(shape!("sealed wave {id} should be complete"));
    }
    let needs_seal = matches!(state, WaveState::Sealed | WaveState::Complete);
    match &wave.sealed_at {
        None if needs_seal => return Err(shape!("wave {id} sealedAt must be an ISO timestamp")),
        Some(_) if state == WaveState::Open => return Err(shape!("{state} wave {id} contains seal metadata")),
        Some(sealed) => {
            if !all_started {
                return Err(shape!("{state} wave {id} is missing starts after sealing"));
            }
            if sealed.at < latest {
                return Err(shape!("wave {id} was sealed before its final start"));
            }
            latest = sealed.at;
        }
        None => {}
    }
    if let Some(last) = latest_return {
        let Some(sealed) = &wave.sealed_at else {
            return Err(shape!("{state} wave {id} contains returns without being sealed"));
        };
        if wave.returned.iter().any(|(_, at)| at.at < sealed.at) {
            return Err(shape!("wave {id} contains a return before sealing"));
        }
        latest = latest.max(last);
    }
    match (&wave.completed_at, state) {
        (None, WaveState::Complete) => return Err(shape!("wave {id} completedAt must be an ISO timestamp")),
        (Some(completed), WaveState::Complete) if completed.at < latest => {
            return Err(shape!("wave {id} completed before its final return"))
        }
        (Some(_), WaveState::Complete) | (None, _) => {}
        (Some(_), _) => return Err(shape!("{state} wave {id} contains completion metadata")),
    }
    if let Some(abandoned_at) = &wave.abandoned_at {
        if all_returned {
            return Err(shape!("abandoned wave {id} already has every return and must be complete"));
        }
        if abandoned_at.at < latest {
            return Err(shape!("wave {id} was abandoned before its latest transition"));
        }
    }
    Ok(())
}

impl Wave {
    fn from_raw(id: &str, raw: RawWave) -> Result<Wave, DispatchError> {
        let state = WaveState::parse(&raw.state).ok_or_else(|| shape!("wave {id} has an invalid shape"))?;
        let stamp = |text: &str, what: &str| Stamp::parse(text, &format!("wave {id} {what}"));
        let optional = |text: &Option<String>, what: &str| text.as_deref().map(|t| stamp(t, what)).transpose();
        let mut started = Vec::new();
        for (leaf, start) in raw.started.0 {
            started.push((
                leaf.clone(),
                Start {
                    handle: valid_handle(&start.handle)?,
                    at: stamp(&start.at, &format!("start time for {leaf}"))?,
                },
            ));
        }
        let mut returned = Vec::new();
        for (leaf, back) in raw.returned.0 {
            let at = stamp(&back.at, &format!("return time for {leaf}"))?;
            returned.push((leaf, at));
        }
        Ok(Wave {
            opened_at: stamp(&raw.opened_at, "openedAt")?,
            sealed_at: optional(&raw.sealed_at, "sealedAt")?,
            completed_at: optional(&raw.completed_at, "completedAt")?,
            abandoned_at: optional(&raw.abandoned_at, "abandonedAt")?,
            reason: raw.reason.as_deref().map(valid_reason).transpose()?,
            leaves: raw.leaves,
            state,
            started,
            returned,
        })
    }

    fn to_raw(&self) -> RawWave {
        let text = |stamp: &Option<Stamp>| stamp.as_ref().map(|s| s.text.clone());
        RawWave {
            leaves: self.leaves.clone(),
            state: self.state.as_str().to_string(),
            opened_at: self.opened_at.text.clone(),
            started: Ordered(
                self.started
                    .iter()
                    .map(|(leaf, start)| {
                        (leaf.clone(), RawStart { handle: start.handle.clone(), at: start.at.text.clone() })
                    })
                    .collect(),
            ),
            returned: Ordered(
                self.returned.iter().map(|(leaf, at)| (leaf.clone(), RawReturn { at: at.text.clone() })).collect(),
            ),
            sealed_at: text(&self.sealed_at),
            completed_at: text(&self.completed_at),
            reason: self.reason.clone(),
            abandoned_at: text(&self.abandoned_at),
        }
    }
}

// The JSON shape. Unknown fields, duplicate keys and `null` where a value is
// optional are refused rather than guessed at.

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a dispatch state object")]
struct RawState {
    schema: serde_json::Number,
    waves: Ordered<RawWave>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", expecting = "a wave object")]
struct RawWave {
    leaves: Vec<String>,
    state: String,
    opened_at: String,
    started: Ordered<RawStart>,
    returned: Ordered<RawReturn>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    sealed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    completed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    abandoned_at: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a start record")]
struct RawStart {
    handle: String,
    at: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a return record")]
struct RawReturn {
    at: String,
}

/// An optional field that, when present, must be a string (not `null`).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    String::deserialize(deserializer).map(Some)
}

/// A JSON object kept in file order, refusing duplicate keys.
struct Ordered<T>(Vec<(String, T)>);

impl<T: Serialize> Serialize for Ordered<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OrderedVisitor<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for OrderedVisitor<T> {
            type Value = Ordered<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut access: M) -> Result<Self::Value, M::Error> {
                let mut entries: Vec<(String, T)> = Vec::new();
                while let Some(key) = access.next_key::<String>()? {
                    if entries.iter().any(|(seen, _)| *seen == key) {
                        return Err(de::Error::custom(format!("duplicate key {key:?}")));
                    }
                    let value = access.next_value()?;
                    entries.push((key, value));
                }
                Ok(Ordered(entries))
            }
        }
        deserializer.deserialize_map(OrderedVisitor(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(seconds: u64) -> Stamp {
        Stamp::from_time(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + seconds))
    }

    fn open(state: &mut State, leaves: &[&str]) {
        let leaves = leaves.iter().map(|s| s.to_string()).collect();
        state.apply("w1", &Action::Open { leaves }, &at(0)).unwrap();
    }

    fn start(leaf: &str, handle: &str) -> Action {
        Action::Start { leaf: leaf.into(), handle: handle.into() }
    }

    #[test]
    fn full_lifecycle_round_trips_through_json() {
        let mut state = State::default();
        open(&mut state, &["a", "b"]);
        assert_eq!(state.apply("w1", &start("a", "h1"), &at(1)).unwrap(), "dispatch w1 started a as h1");
        state.apply("w1", &start("b", "h2"), &at(2)).unwrap();
        state.apply("w1", &Action::Seal, &at(3)).unwrap();
        state.apply("w1", &Action::Return { leaf: "b".into() }, &at(4)).unwrap();
        assert_eq!(state.wave("w1").unwrap().state, WaveState::Sealed);
        state.apply("w1", &Action::Return { leaf: "a".into() }, &at(5)).unwrap();
        assert_eq!(state.wave("w1").unwrap().state, WaveState::Complete);
        let text = state.render();
        assert!(text.starts_with("{\n  \"schema\": 1,\n  \"waves\": {\n    \"w1\": {\n      \"leaves\": ["), "{text}");
        assert_eq!(State::parse(&text).unwrap(), state);
        assert_eq!(state.summary(), DispatchSummary::default());
    }

    #[test]
    fn barrier_refusals_leave_state_unchanged() {
        let mut state = State::default();
        open(&mut state, &["a", "b"]);
        state.apply("w1", &start("a", "h1"), &at(1)).unwrap();
        let before = state.clone();
        let refusals = [
            (Action::Return { leaf: "a".into() }, "return requires a sealed wave; w1 is open"),
            (Action::Seal, "cannot seal w1: missing starts for b"),
            (start("b", "h1"), "handle is already assigned to a"),
            (start("a", "h3"), "leaf a already started"),
            (start("c", "h3"), "unknown leaf c in wave w1"),
            (start("b", "bad\u{1b}[2J"), "handle must be printable"),
            (Action::Abandon { reason: "  ".into() }, "reason must be printable"),
        ];
        for (action, message) in refusals {
            let error = state.apply("w1", &action, &at(2)).unwrap_err().to_string();
            assert!(error.contains(message), "{error} / {message}");
            assert_eq!(state, before);
        }
        assert_eq!(state.summary().blocking, vec!["dispatch:w1 open (1/2 started)".to_string()]);
    }

    #[test]
    fn abandoned_is_terminal() {
        let mut state = State::default();
        open(&mut state, &["a"]);
        state.apply("w1", &Action::Abandon { reason: " launch failed ".into() }, &at(1)).unwrap();
        assert_eq!(state.wave("w1").unwrap().reason.as_deref(), Some("launch failed"));
        let error = state.apply("w1", &start("a", "h"), &at(2)).unwrap_err().to_string();
        assert_eq!(error, "wave w1 is abandoned; start requires an open wave");
        let error = state.apply("w1", &Action::Abandon { reason: "again".into() }, &at(2)).unwrap_err().to_string();
        assert_eq!(error, "wave w1 is abandoned; abandon requires an open or sealed wave");
        assert_eq!(state.summary().abandoned, vec!["dispatch:w1".to_string()]);
        assert_eq!(State::parse(&state.render()).unwrap(), state);
    }

    #[test]
    fn open_validates_leaves() {
        let mut state = State::default();
        let open = |leaves: &[&str]| Action::Open { leaves: leaves.iter().map(|s| s.to_string()).collect() };
        assert_eq!(state.apply("w1", &open(&["a", "a"]), &at(0)).unwrap_err().to_string(), "duplicate leaf a");
        assert!(state.apply("w1", &open(&["../x"]), &at(0)).unwrap_err().to_string().starts_with("leaf must match"));
        assert!(state.apply("../w", &open(&["a"]), &at(0)).unwrap_err().to_string().starts_with("wave must match"));
        assert_eq!(state.apply("w1", &open(&[]), &at(0)).unwrap_err().to_string(), "open requires at least one --leaf");
        state.apply("w1", &open(&["a"]), &at(0)).unwrap();
        assert_eq!(state.apply("w1", &open(&["b"]), &at(0)).unwrap_err().to_string(), "wave w1 already exists");
    }

    #[test]
    fn a_handle_names_its_leaf_in_the_latest_wave_that_recorded_it() {
        let now = Stamp::now();
        let mut state = State::default();
        state.apply("w1", &Action::Open { leaves: vec!["a".into(), "b".into()] }, &now).unwrap();
        state.apply("w1", &start("a", "agent-1"), &now).unwrap();
        state.apply("w1", &start("b", "agent-2"), &now).unwrap();
        assert_eq!(state.leaf_launched_as("agent-1"), Some("a"));
        assert_eq!(state.leaf_launched_as(" agent-2\n"), Some("b"));
        assert_eq!(state.leaf_launched_as("agent-3"), None);
        // The same handle in a later wave names that wave's leaf.
        state.apply("w2", &Action::Open { leaves: vec!["c".into()] }, &now).unwrap();
        state.apply("w2", &start("c", "agent-1"), &now).unwrap();
        assert_eq!(state.leaf_launched_as("agent-1"), Some("c"));
        // An abandoned wave holds nobody.
        state.apply("w2", &Action::Abandon { reason: "host refused".into() }, &now).unwrap();
        assert_eq!(state.leaf_launched_as("agent-1"), None);
        assert_eq!(state.leaf_launched_as("agent-2"), Some("b"));
    }

    #[test]
    fn handle_bounds_count_utf16_units() {
        assert!(valid_handle(&"x".repeat(256)).is_ok());
        assert!(valid_handle(&"x".repeat(257)).is_err());
        assert!(valid_handle(&"\u{1F600}".repeat(129)).is_err());
        assert_eq!(valid_handle("\n  agent-7 \t").unwrap(), "agent-7");
        assert!(valid_handle("a\u{202e}b").is_err());
    }

    fn wave_json(body: &str) -> String {
        format!("{{\"schema\":1,\"waves\":{{\"w1\":{{\"leaves\":[\"a\",\"b\"],\"openedAt\":\"2024-01-01T00:00:00.000Z\",{body}}}}}}}")
    }

    #[test]
    fn parse_refuses_broken_invariants() {
        let cases = [
            (
                r#""state":"sealed","started":{},"returned":{},"sealedAt":"2024-01-01T00:00:01.000Z""#,
                "sealed wave w1 is missing starts",
            ),
            (
                r#""state":"open","started":{"a":{"handle":"h","at":"2024-01-01T00:00:01.000Z"}},"returned":{"a":{"at":"2024-01-01T00:00:02.000Z"}}"#,
                "open wave w1 contains returns",
            ),
            (
                r#""state":"open","started":{"a":{"handle":"h","at":"2023-01-01T00:00:01.000Z"}},"returned":{}"#,
                "wave w1 starts a before it opened",
            ),
            (
                r#""state":"open","started":{"a":{"handle":"h","at":"2024-01-01T00:00:01.000Z"},"b":{"handle":"h","at":"2024-01-01T00:00:01.000Z"}},"returned":{}"#,
                "wave w1 reuses handle h",
            ),
            (
                r#""state":"open","started":{"c":{"handle":"h","at":"2024-01-01T00:00:01.000Z"}},"returned":{}"#,
                "wave w1 started unknown leaf c",
            ),
            (r#""state":"open","started":{},"returned":{},"reason":"x""#, "open wave w1 contains abandonment metadata"),
            (
                r#""state":"abandoned","started":{},"returned":{},"reason":"x""#,
                "wave w1 abandonedAt must be an ISO timestamp",
            ),
            (
                r#""state":"sealed","started":{"a":{"handle":"h","at":"2024-01-01T00:00:02.000Z"},"b":{"handle":"g","at":"2024-01-01T00:00:01.000Z"}},"returned":{},"sealedAt":"2024-01-01T00:00:01.500Z""#,
                "wave w1 was sealed before its final start",
            ),
            (r#""state":"open","started":{},"returned":{},"sealedAt":null"#, "invalid type: null"),
            (r#""state":"open","started":{},"returned":{},"extra":1"#, "unknown field `extra`"),
            (r#""state":"done","started":{},"returned":{}"#, "wave w1 has an invalid shape"),
            (
                r#""state":"open","started":{"a":{"handle":"h","at":"yesterday"}},"returned":{}"#,
                "wave w1 start time for a must be an ISO timestamp",
            ),
            (
                r#""state":"open","started":{"a":{"handle":"h","at":"2024-01-01T00:00:01.000Z"},"a":{"handle":"g","at":"2024-01-01T00:00:01.000Z"}},"returned":{}"#,
                "duplicate key \"a\"",
            ),
        ];
        for (body, message) in cases {
            let error = State::parse(&wave_json(body)).unwrap_err().to_string();
            assert!(error.contains(message), "{error} / {message}");
        }
        assert_eq!(
            State::parse(r#"{"schema":2,"waves":{}}"#).unwrap_err().to_string(),
            "expected schema 1 with a waves object"
        );
        assert!(State::parse("[]").unwrap_err().to_string().contains("a dispatch state object"));
    }

    #[test]
    fn collation_matches_locale_compare_for_ids() {
        let mut ids = vec!["b", "B", "a-2", "a_1", "a.3", "10", "A", "a"];
        ids.sort_by(|a, b| collate(a, b));
        assert_eq!(ids, vec!["10", "a", "A", "a_1", "a-2", "a.3", "b", "B"]);
    }

    #[test]
    fn escapes_and_bounds_hostile_text() {
        assert_eq!(escape_bounded("a\u{1b}[2J\nb\u{202e}", 500), "a\\x1b[2J\\x0ab\\u202e");
        let long = escape_bounded(&"\u{1b}".repeat(10_000), 500);
        assert!(long.len() <= 500 && long.ends_with("...[truncated]"), "{long}");
        assert!(!long.chars().any(is_unsafe));
        assert_eq!(escape_bounded("short", 500), "short");
    }
}
