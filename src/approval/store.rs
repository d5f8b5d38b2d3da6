//! The approval store: the only module that reads or writes approval
//! records. It fails closed: anything about the store or a record that is
//! not exactly a private, single-link, owner-owned regular file in a real
//! private directory outside the repository is an error, never a "yes".
//! Private means mode bits granting nothing to group or others on Unix,
//! and on Windows an ACL granting nothing to anyone but the owner, SYSTEM
//! and the Administrators group (see `durable::check_private`).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;
use thiserror::Error;

use super::changes::RecordedOracle;
use super::{Consent, Oracle, Terms};
use crate::config::Environment;
use crate::digest::sha256_hex;
use crate::durable::{self, Change, LockFile, OpenDirectory, ReadRefusal};
use crate::layout::StateDir;
use crate::paths;

/// Largest approval record, for the writer and the reader alike.
pub const MAX_RECORD_BYTES: u64 = 256 * 1024;

/// Which of the owner's private stores a `Store` is: they follow the same
/// rules and differ only in their names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    Approval,
    Receipt,
}

impl StoreKind {
    /// The variable that names the store.
    pub fn variable(self) -> &'static str {
        match self {
            StoreKind::Approval => "UNLAZY_APPROVAL_DIR",
            StoreKind::Receipt => "UNLAZY_RECEIPT_DIR",
        }
    }

    pub fn noun(self) -> &'static str {
        match self {
            StoreKind::Approval => "approval",
            StoreKind::Receipt => "receipt",
        }
    }
}

impl std::fmt::Display for StoreKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.noun())
    }
}

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("{variable} must be outside the repository root {root}", variable = .kind.variable())]
    InsideRoot { kind: StoreKind, root: String },
    #[error(
        "the default {kind} store {store} lies inside the repository root {root}; set {variable} to a private \
         directory outside it",
        variable = .kind.variable()
    )]
    DefaultInsideRoot { kind: StoreKind, store: String, root: String },
    #[error("{0} directory resolves inside the repository root: {1}")]
    CanonicalInsideRoot(StoreKind, String),
    #[error("cannot find the home directory for the default {kind} store; set {variable}", variable = .kind.variable())]
    NoHome { kind: StoreKind },
    #[error("{0} must be a real {1}")]
    NotReal(String, &'static str),
    #[error("{0} must be owned by the current user")]
    WrongOwner(String),
    #[cfg(unix)]
    #[error("{0} must not grant group or other permissions")]
    LoosePermissions(String),
    /// Windows: the ACL lets someone else in.
    #[cfg(windows)]
    #[error("{0} must grant no access to anyone but its owner, SYSTEM and Administrators: {1}")]
    SharedAccess(String, String),
    #[error("refusing linked or replaced {0} record {1}")]
    Linked(StoreKind, String),
    #[error("{0} record exceeds {MAX_RECORD_BYTES} bytes: {1}")]
    TooLarge(StoreKind, String),
    #[error(
        "gate {gate} cannot be approved: its approval record would be {bytes} bytes, over the \
         {MAX_RECORD_BYTES}-byte limit; shorten its CHECK, EXPECT or CWD (or PATH)"
    )]
    DefinitionTooLarge { gate: String, bytes: usize },
    #[error("{0} record changed while it was read: {1}")]
    ChangedWhileRead(StoreKind, String),
    #[error("{0} directory changed during use: {1}")]
    DirectoryChanged(StoreKind, String),
    /// The approval lock could not be taken (the error names it).
    #[error("{0}")]
    Lock(std::io::Error),
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |error| StoreError::Io(path.display().to_string(), error)
}

/// Checks that a store entry is the right kind, owned by us, and private.
fn assert_private(path: &Path, meta: &fs::Metadata, directory: bool) -> Result<(), StoreError> {
    let kind_ok = if directory { meta.file_type().is_dir() } else { meta.file_type().is_file() };
    if meta.file_type().is_symlink() || !kind_ok {
        let kind = if directory { "directory" } else { "file" };
        return Err(StoreError::NotReal(path.display().to_string(), kind));
    }
    assert_owned_and_private(path, meta)
}

#[cfg(unix)]
fn assert_owned_and_private(path: &Path, meta: &fs::Metadata) -> Result<(), StoreError> {
    use std::os::unix::fs::MetadataExt;
    if meta.uid() != effective_uid() {
        return Err(StoreError::WrongOwner(path.display().to_string()));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(StoreError::LoosePermissions(path.display().to_string()));
    }
    Ok(())
}

/// Windows: the owner and the ACL, read from the entry itself.
#[cfg(windows)]
fn assert_owned_and_private(path: &Path, _meta: &fs::Metadata) -> Result<(), StoreError> {
    use crate::durable::Exposure;
    let shown = || path.display().to_string();
    match durable::check_private(path) {
        Ok(()) => Ok(()),
        Err(Exposure::Owner) => Err(StoreError::WrongOwner(shown())),
        Err(Exposure::NoAccessList) => {
            Err(StoreError::SharedAccess(shown(), "it has no ACL, which grants everyone everything".into()))
        }
        Err(Exposure::Grants(account)) => {
            Err(StoreError::SharedAccess(shown(), format!("its ACL grants access to {account}")))
        }
        Err(Exposure::UnknownEntry(kind)) => Err(StoreError::SharedAccess(
            shown(),
            format!("its ACL holds an entry of type {kind}, which gate-check cannot judge"),
        )),
        Err(Exposure::Io(error)) => Err(StoreError::Io(shown(), error)),
    }
}

/// This process never changes its user, so one system call answers for the
/// whole run.
#[cfg(unix)]
fn effective_uid() -> u32 {
    static UID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *UID.get_or_init(|| nix::unistd::geteuid().as_raw())
}

/// A validated store directory, the identity it had when validated, and a
/// handle on it: records are looked up in the directory that was
/// validated, whatever its path names meanwhile.
pub(crate) struct OpenStore {
    kind: StoreKind,
    pub(crate) path: PathBuf,
    id: durable::FileId,
    directory: OpenDirectory,
}

impl OpenStore {
    /// Fails unless the store's path still names the directory validated,
    /// and it is still private.
    pub(crate) fn assert_unchanged(&self) -> Result<(), StoreError> {
        let (now, id) = durable::entry_metadata(&self.path).map_err(io_error(&self.path))?;
        assert_private(&self.path, &now, true)?;
        if id != self.id {
            return Err(StoreError::DirectoryChanged(self.kind, self.path.display().to_string()));
        }
        Ok(())
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Record<'a> {
    schema: u32,
    file: &'a str,
    gate: &'a str,
    signature: &'a str,
    oracle: &'a Oracle,
    approved_at: String,
    /// gate-check's own field, which the Node tool ignores: present (and
    /// `true`) only on an approval given for confined runs alone.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    confined_only: bool,
    /// gate-check's own field: the gate's `INPUTS:` as approved, present
    /// only when it has them.
    #[serde(skip_serializing_if = "Option::is_none")]
    inputs: Option<&'a str>,
}

/// The store's valid records, by (ledger, gate).
#[derive(Debug, Default)]
pub struct EarlierRecords(HashMap<(String, String), Vec<RecordedOracle>>);

impl EarlierRecords {
    /// The oracles approved before for this ledger and gate.
    pub fn records_for(&self, ledger: &str, gate: &str) -> &[RecordedOracle] {
        self.0.get(&(ledger.to_string(), gate.to_string())).map_or(&[], Vec::as_slice)
    }
}

#[derive(Debug, Clone)]
pub struct Store {
    kind: StoreKind,
    dir: PathBuf,
    canonical_roots: Vec<PathBuf>,
}

/// Where the approval store is, as the environment names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// `UNLAZY_APPROVAL_DIR`, resolved against the working directory.
    Named(PathBuf),
    /// `~/.unlazy/approved`; `None` without a home directory (an error
    /// only once a run needs the store).
    Default(Option<PathBuf>),
}

impl StoreLocation {
    pub fn of(env: &Environment) -> StoreLocation {
        match env.approval_dir.as_deref() {
            Some(dir) => StoreLocation::Named(paths::resolve(&env.cwd, dir)),
            None => StoreLocation::Default(env.home.as_deref().map(StateDir::default_approval_store)),
        }
    }

    /// The receipt store: `UNLAZY_RECEIPT_DIR`, else `~/.unlazy/receipts`.
    pub fn of_receipts(env: &Environment) -> StoreLocation {
        match env.receipt_dir.as_deref() {
            Some(dir) => StoreLocation::Named(paths::resolve(&env.cwd, dir)),
            None => StoreLocation::Default(env.home.as_deref().map(StateDir::default_receipt_store)),
        }
    }
}

impl Store {
    /// The store at `location`. `roots` are the repository roots of the
    /// run's ledgers as given; the store must lie outside each both
    /// lexically (checked here) and canonically (checked on use).
    pub fn locate(roots: &[PathBuf], location: &StoreLocation) -> Result<Store, StoreError> {
        Store::locate_kind(StoreKind::Approval, roots, location)
    }

    /// The store of `kind` at `location`, under the same rules.
    pub fn locate_kind(kind: StoreKind, roots: &[PathBuf], location: &StoreLocation) -> Result<Store, StoreError> {
        let dir = match location {
            StoreLocation::Named(dir) => dir.clone(),
            StoreLocation::Default(dir) => dir.clone().ok_or(StoreError::NoHome { kind })?,
        };
        let mut canonical_roots = Vec::with_capacity(roots.len());
        for root in roots {
            if paths::is_inside(root, &dir) {
                let root = root.display().to_string();
                return Err(match location {
                    StoreLocation::Named(_) => StoreError::InsideRoot { kind, root },
                    StoreLocation::Default(_) => {
                        StoreError::DefaultInsideRoot { kind, store: dir.display().to_string(), root }
                    }
                });
            }
            canonical_roots.push(durable::real_path(root).map_err(io_error(root))?);
        }
        Ok(Store { kind, dir, canonical_roots })
    }

    /// The store's directory, validated (kind, owner, mode, canonical place
    /// outside every root) and held open; `None` when it does not exist
    /// and `create` is false.
    pub(crate) fn open(&self, create: bool) -> Result<Option<OpenStore>, StoreError> {
        if create {
            create_private_directory(&self.dir).map_err(io_error(&self.dir))?;
        }
        let meta = match fs::symlink_metadata(&self.dir) {
            Ok(meta) => meta,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(StoreError::Io(self.dir.display().to_string(), error)),
        };
        assert_private(&self.dir, &meta, true)?;
        let canonical = durable::real_path(&self.dir).map_err(io_error(&self.dir))?;
        if self.canonical_roots.iter().any(|root| paths::is_inside(root, &canonical)) {
            return Err(StoreError::CanonicalInsideRoot(self.kind, canonical.display().to_string()));
        }
        // Looking records up needs only search permission on the directory,
        // as a path would (see `OpenDirectory`).
        let directory = OpenDirectory::open_no_follow(&canonical).map_err(io_error(&canonical))?;
        // The directory held is private, as the one its path names is
        // checked to be below, and is the same one.
        let held = directory.metadata().map_err(io_error(&canonical))?;
        assert_private(&canonical, &held, true)?;
        let id = directory.id().map_err(io_error(&canonical))?;
        let store = OpenStore { kind: self.kind, path: canonical, id, directory };
        // The directory held is the one validated.
        store.assert_unchanged()?;
        Ok(Some(store))
    }

    /// A run of lookups against this store, validated once (see `Lookups`).
    pub fn lookups(&self) -> Lookups<'_> {
        Lookups { store: self, opened: None }
    }

    /// The terms of the intact record approving exactly this oracle, if
    /// there is one.
    fn holds_record(store: &OpenStore, ledger: &str, gate: &str, oracle: &Oracle) -> Result<Option<Terms>, StoreError> {
        let Some(text) = read_record(store, &oracle.record_name(ledger, gate))? else {
            return Ok(None);
        };
        let Ok(identity) = serde_json::from_str::<RecordIdentity>(&text) else {
            return Ok(None);
        };
        let approves = identity.file.as_deref() == Some(ledger)
            && identity.gate.as_deref() == Some(gate)
            && identity.signature.as_deref() == Some(oracle.signature());
        Ok(approves.then_some(Terms { consent: identity.consent, inputs: identity.inputs }))
    }

    /// Every valid record of the store, by ledger and gate, whatever its
    /// signature: what a person approved for each gate before. Records are
    /// found by reading the whole store (their names hash the signature),
    /// once per run. A record counts only if it passes the same checks as an
    /// approval (private, single-link, not swapped while read) and sits at
    /// the name its own `file`, `gate` and `signature` give it; anything else
    /// is left out, never guessed at.
    pub fn earlier_records(&self) -> Result<EarlierRecords, StoreError> {
        let mut records = EarlierRecords::default();
        let Some(store) = self.open(false)? else {
            return Ok(records);
        };
        let mut names = Vec::new();
        // Records that cannot be listed (a 0300 store) are none that is known.
        let Some(entries) = list(&store)? else {
            return Ok(records);
        };
        for entry in entries {
            names.push(entry.map_err(io_error(&store.path))?.file_name());
        }
        // In name order, so the explanation does not depend on directory order.
        names.sort();
        for name in &names {
            let Some(name) = name.to_str().filter(|name| name.ends_with(".json")) else {
                continue;
            };
            let Ok(Some(text)) = read_record(&store, name) else {
                continue;
            };
            let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
                continue;
            };
            let field = |key: &str| value.get(key).and_then(|v| v.as_str());
            let (Some(file), Some(gate), Some(signature)) = (field("file"), field("gate"), field("signature")) else {
                continue;
            };
            if name == format!("{}.json", sha256_hex(format!("{file}\0{gate}\0{signature}"))) {
                let oracle = RecordedOracle::from_value(value.get("oracle"));
                records.0.entry((file.to_string(), gate.to_string())).or_default().push(oracle);
            }
        }
        store.assert_unchanged()?;
        Ok(records)
    }

    /// Records consent to run this oracle on `terms`. An approval that
    /// admits them is kept (one for confined runs only is replaced by one
    /// without that limit, never the reverse).
    /// Writers of one record are
    /// serialized by the Node tool's approval lock, `<record>.json.lock`
    /// (created exclusively; a Node holder is waited for 10 s, as Node
    /// waits, then refused), which needs only write and search permission
    /// on the store. Returns the record's path.
    pub fn approve(&self, ledger: &str, gate: &str, oracle: &Oracle, terms: &Terms) -> Result<PathBuf, StoreError> {
        let store = self.open(true)?.ok_or_else(|| StoreError::NotReal(self.dir.display().to_string(), "directory"))?;
        let path = store.path.join(oracle.record_name(ledger, gate));
        let lock_path = approval_lock(&path);
        let lock = LockFile::at(&lock_path)
            .and_then(|lock| lock.acquire_waiting_for_foreign(NODE_APPROVAL_LOCK_WAIT))
            .map_err(StoreError::Lock)?;
        sweep_stale_temp_files(&store, &path)?;
        // A concurrent approver got here first: replacing its valid record
        // would make runs reading it right now fail closed on a replaced file.
        let decide = || {
            if Self::holds_record(&store, ledger, gate, oracle)?.is_some_and(|held| held.admit(terms)) {
                return Ok(Change::Keep(()));
            }
            let text = record_text(ledger, gate, oracle, terms, std::time::SystemTime::now());
            check_record_size(gate, &text)?;
            Ok(Change::Replace { value: (), bytes: text.into_bytes(), mode: 0o600 })
        };
        // Still under the lock: the record was written into the store checked.
        let (directory, name) = OpenDirectory::containing(&path).map_err(io_error(&path))?;
        let written = durable::update_locked_then(lock, &directory, name, decide, |()| store.assert_unchanged());
        written.map_err(|error| error.into_error(io_error(&path)))??;
        Ok(path)
    }
}

/// Creates `directory` and its missing parents private to this user: mode
/// 0700 on Unix; on Windows the store itself gets an ACL of its own
/// granting this user alone (the parents inherit theirs, as the Node tool's
/// do).
fn create_private_directory(directory: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        fs::DirBuilder::new().recursive(true).mode(0o700).create(directory)
    }
    #[cfg(windows)]
    {
        if fs::symlink_metadata(directory).is_ok() {
            return Ok(());
        }
        fs::create_dir_all(directory)?;
        durable::make_private(directory)
    }
}

/// How long the Node tool waits for another writer's approval lock.
const NODE_APPROVAL_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The Node tool's lock for writing `record`: `<record>.lock`.
fn approval_lock(record: &Path) -> PathBuf {
    let mut lock = record.as_os_str().to_owned();
    lock.push(".lock");
    PathBuf::from(lock)
}

/// Removes the temp files killed approvals left in the store. A record's
/// temp file is provably stale while its approval lock is held: ours for
/// `own`, and for any other record a lock taken here only if nobody holds
/// it. A store without read permission cannot be listed, so nothing is
/// swept there (see SECURITY.md).
fn sweep_stale_temp_files(store: &OpenStore, own: &Path) -> Result<(), StoreError> {
    let Some(entries) = list(store)? else {
        return Ok(());
    };
    let mut records = std::collections::BTreeSet::new();
    for entry in entries {
        let name = entry.map_err(io_error(&store.path))?.file_name();
        let target = name.to_str().and_then(durable::temp_file_target).filter(|target| is_record_name(target));
        records.extend(target.map(|target| store.path.join(target)));
    }
    for record in records {
        let held = if record == own {
            None
        } else {
            LockFile::at(&approval_lock(&record)).and_then(LockFile::try_acquire).ok()
        };
        if record == own || held.is_some() {
            durable::remove_stale_temp_files(&record).map_err(io_error(&record))?;
        }
    }
    Ok(())
}

/// The store's entries, or `None` when it may not be listed: a store with
/// write and search permission only (0300) holds records that can be
/// looked up and written by name, but not listed.
pub(crate) fn list(store: &OpenStore) -> Result<Option<fs::ReadDir>, StoreError> {
    match fs::read_dir(&store.path) {
        Ok(entries) => Ok(Some(entries)),
        Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => Ok(None),
        Err(error) => Err(io_error(&store.path)(error)),
    }
}

/// `<64 lowercase hex>.json`: the name of an approval record.
fn is_record_name(name: &str) -> bool {
    name.strip_suffix(".json")
        .is_some_and(|hash| hash.len() == 64 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// Lookups of approvals, one at a time, against a store directory that is
/// validated once (kind, owner, mode, canonical place outside every root),
/// at the first lookup: each record is then read from that directory through
/// its handle, a handful of system calls and a hash. A store that could not
/// be validated is tried again by every later lookup, each reporting its own
/// error, as separate lookups would.
pub struct Lookups<'a> {
    store: &'a Store,
    /// The validated store (`None` inside when it does not exist), once the
    /// first lookup validated it.
    opened: Option<Option<OpenStore>>,
}

impl Lookups<'_> {
    /// The terms of the intact private record naming exactly this ledger
    /// (as records spell it), gate and oracle signature, if there is one.
    pub fn approved(&mut self, ledger: &str, gate: &str, oracle: &Oracle) -> Result<Option<Terms>, StoreError> {
        if self.opened.is_none() {
            self.opened = Some(self.store.open(false)?);
        }
        match &self.opened {
            Some(Some(store)) => Store::holds_record(store, ledger, gate, oracle),
            _ => Ok(None),
        }
    }
}

/// The record approving `oracle` for `gate` of `ledger` at `approved_at`.
fn record_text(ledger: &str, gate: &str, oracle: &Oracle, terms: &Terms, approved_at: std::time::SystemTime) -> String {
    let signature = oracle.signature();
    let record = Record {
        schema: 1,
        file: ledger,
        gate,
        signature,
        oracle,
        approved_at: humantime::format_rfc3339_millis(approved_at).to_string(),
        confined_only: terms.consent == Consent::ConfinedOnly,
        inputs: terms.inputs.as_deref(),
    };
    let mut text = serde_json::to_string_pretty(&record).unwrap_or_default();
    text.push('\n');
    text
}

fn check_record_size(gate: &str, text: &str) -> Result<(), StoreError> {
    if text.len() as u64 > MAX_RECORD_BYTES {
        return Err(StoreError::DefinitionTooLarge { gate: gate.to_string(), bytes: text.len() });
    }
    Ok(())
}

/// Refuses, before anything runs, a gate whose approval record would exceed
/// what the reader accepts: such a record could be written but never
/// honoured. Pure: the record's size does not depend on when it is written
/// (the timestamp has a fixed width).
pub fn check_recordable(ledger: &str, gate: &str, oracle: &Oracle, inputs: Option<&str>) -> Result<(), StoreError> {
    if record_size_bound(ledger, gate, oracle, inputs) <= MAX_RECORD_BYTES as usize {
        return Ok(());
    }
    let terms = Terms { consent: Consent::ConfinedOnly, inputs: inputs.map(str::to_string) };
    let largest = record_text(ledger, gate, oracle, &terms, std::time::SystemTime::UNIX_EPOCH);
    check_record_size(gate, &largest)
}

/// What the record's fixed parts (keys, indentation, numbers, signature,
/// timestamp, platform) take at most; far more than they do.
const RECORD_SKELETON_BYTES: usize = 2048;

/// An upper bound of the record's size without writing it: every text
/// appears once, and JSON escaping turns one byte into at most six
/// (`\u001f`).
fn record_size_bound(ledger: &str, gate: &str, oracle: &Oracle, inputs: Option<&str>) -> usize {
    let inputs = inputs.unwrap_or_default();
    let texts = [ledger, gate, &oracle.check, &oracle.expect, &oracle.cwd, &oracle.shell, &oracle.path, inputs];
    RECORD_SKELETON_BYTES + 6 * texts.iter().map(|text| text.len()).sum::<usize>()
}

/// Reads the record `name` of `store` without following links, blocking on
/// FIFOs, or trusting a file that is linked, foreign, loose or swapped while
/// being read. `None` when there is no record.
pub(crate) fn read_record(store: &OpenStore, name: &str) -> Result<Option<String>, StoreError> {
    // A record that is not text is simply not an approval.
    Ok(read_named(store, name, MAX_RECORD_BYTES)?.map(|bytes| {
        String::from_utf8(bytes).unwrap_or_else(|invalid| String::from_utf8_lossy(invalid.as_bytes()).into_owned())
    }))
}

/// The bytes of the file `name` of `store`, under `read_record`'s rules and
/// at most `max_bytes` long.
pub(crate) fn read_named(store: &OpenStore, name: &str, max_bytes: u64) -> Result<Option<Vec<u8>>, StoreError> {
    let shown = || store.path.join(name).display().to_string();
    let read = match store.directory.read_stable(OsStr::new(name), max_bytes) {
        Ok(Some(read)) => read,
        Ok(None) => return Ok(None),
        Err(ReadRefusal::Link | ReadRefusal::NotRegular) => return Err(StoreError::NotReal(shown(), "file")),
        Err(ReadRefusal::Linked) => return Err(StoreError::Linked(store.kind, shown())),
        Err(ReadRefusal::TooLarge) => return Err(StoreError::TooLarge(store.kind, shown())),
        Err(ReadRefusal::Changed) => return Err(StoreError::ChangedWhileRead(store.kind, shown())),
        Err(ReadRefusal::Io(error)) => return Err(StoreError::Io(shown(), error)),
    };
    assert_private(&store.path.join(name), &read.metadata, false)?;
    Ok(Some(read.bytes))
}

/// The fields of a record an approval is decided on. As with `JSON.parse`,
/// the last of repeated keys wins and a value that is not a string is no
/// value; everything else (the `oracle` object above all) is skipped
/// without being built. `confinedOnly` limits the consent unless it is
/// absent or `false`: a value gate-check never writes limits it too.
struct RecordIdentity {
    file: Option<String>,
    gate: Option<String>,
    signature: Option<String>,
    consent: Consent,
    /// `inputs`, the gate's `INPUTS:` as approved (absent: none).
    inputs: Option<String>,
}

impl<'de> serde::Deserialize<'de> for RecordIdentity {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = RecordIdentity;
            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("an approval record object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<RecordIdentity, A::Error> {
                let mut identity = RecordIdentity {
                    file: None,
                    gate: None,
                    signature: None,
                    consent: Consent::Unconfined,
                    inputs: None,
                };
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    let slot = match key.as_ref() {
                        "file" => &mut identity.file,
                        "gate" => &mut identity.gate,
                        "signature" => &mut identity.signature,
                        "inputs" => &mut identity.inputs,
                        "confinedOnly" => {
                            identity.consent = match map.next_value::<serde_json::Value>()? {
                                serde_json::Value::Bool(false) => Consent::Unconfined,
                                _ => Consent::ConfinedOnly,
                            };
                            continue;
                        }
                        _ => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                            continue;
                        }
                    };
                    *slot = match map.next_value::<serde_json::Value>()? {
                        serde_json::Value::String(text) => Some(text),
                        _ => None,
                    };
                }
                Ok(identity)
            }
        }
        deserializer.deserialize_map(Fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oracle(expect: &str) -> Oracle {
        Oracle::new("make check", expect, "/repo", "/bin/sh", 120, "/usr/bin:/bin")
    }

    #[test]
    fn the_record_size_limit_is_checked_before_writing() {
        assert!(check_recordable("/repo/GATES.md", "G1", &oracle("READY"), None).is_ok());
        let fits = MAX_RECORD_BYTES as usize - 2_000;
        assert!(check_recordable("/repo/GATES.md", "G1", &oracle(&"a".repeat(fits)), Some("src/**")).is_ok());
        match check_recordable("/repo/GATES.md", "G1", &oracle(&"a".repeat(300_000)), None) {
            Err(StoreError::DefinitionTooLarge { gate, bytes }) => {
                assert_eq!(gate, "G1");
                assert!(bytes > 300_000, "{bytes}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_size_bound_is_never_below_the_written_record() {
        let hostile: String = (0u8..0x20).map(char::from).chain(['"', '\\', 'é', '\u{2028}']).collect();
        for (ledger, gate, text) in [("/r/G.md", "G", ""), ("/r/\u{1}.md", "\"", hostile.as_str())] {
            let o = Oracle::new(text, text, text, text, 120, text);
            let terms = Terms { consent: Consent::ConfinedOnly, inputs: Some(text.to_string()) };
            let written = record_text(ledger, gate, &o, &terms, std::time::SystemTime::now()).len();
            assert!(record_size_bound(ledger, gate, &o, Some(text)) >= written, "{written}");
        }
        // Near the limit the bound says nothing and the written size decides.
        let escaped = "\u{1}".repeat(MAX_RECORD_BYTES as usize / 6 - 300);
        assert!(record_size_bound("/r", "G1", &oracle(&escaped), None) > MAX_RECORD_BYTES as usize);
        assert!(check_recordable("/r", "G1", &oracle(&escaped), None).is_ok());
        let too_many = "\u{1}".repeat(MAX_RECORD_BYTES as usize / 6 + 100);
        assert!(matches!(
            check_recordable("/r", "G1", &oracle(&too_many), None),
            Err(StoreError::DefinitionTooLarge { .. })
        ));
    }

    #[test]
    fn the_record_size_does_not_depend_on_when_it_is_written() {
        let now = std::time::SystemTime::now();
        let epoch = std::time::SystemTime::UNIX_EPOCH;
        let o = oracle("READY");
        for consent in [Consent::Unconfined, Consent::ConfinedOnly] {
            let terms = Terms { consent, inputs: Some("src/**".into()) };
            assert_eq!(
                record_text("/r", "G1", &o, &terms, now).len(),
                record_text("/r", "G1", &o, &terms, epoch).len()
            );
        }
    }
}
