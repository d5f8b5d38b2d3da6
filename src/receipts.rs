//! The receipt store: the only module that reads or writes receipts, the
//! owner key that seals them, the manifests of the trees they were proven
//! on, and the stat cache of each root. It lives outside every repository
//! (`~/.unlazy/receipts`, or `UNLAZY_RECEIPT_DIR`) under the approval
//! store's rules: a real, private, owner-owned directory; files that are
//! private, single-link and never followed; atomic replacement under a lock.
//!
//! A receipt file that cannot be read or parsed is no receipt: the gate is
//! then unproven, which is the fail-closed answer for a proof.

use std::ffi::OsStr;
use std::fs;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::approval::store::{self, OpenStore, Store, StoreError, StoreKind, StoreLocation};
use crate::digest::sha256_hex;
use crate::durable::{Entry, FileLock, LockFile, OpenDirectory};
use crate::proof::receipt::{OwnerKey, Receipt, KEY_BYTES};
use crate::proof::tree::Snapshot;
use crate::work_tree::StatCache;

/// The owner key's file: 64 hex digits.
const KEY_FILE: &str = "key";
const LOCK_FILE: &str = "receipts.lock";
/// The store keeps at most this many receipts (one per ledger and gate):
/// over it, those of ledgers that are gone go first, then the oldest.
const MAX_RECEIPTS: usize = 10_000;
/// Manifests only name what changed; a few recent trees suffice.
const MAX_MANIFESTS: usize = 16;
/// One stat cache per root.
const MAX_STAT_CACHES: usize = 64;
/// A temp file this old is a killed write's, never a live one's.
const ABANDONED_TEMP_AGE: std::time::Duration = std::time::Duration::from_secs(3600);
/// Largest manifest or stat cache read back (a tree of about a million files).
const MAX_TREE_BYTES: u64 = 64 * 1024 * 1024;

/// The receipt store, located but not yet opened.
pub struct Receipts {
    store: Store,
}

/// An open receipt store and its owner key, when it has one.
pub struct OpenReceipts {
    store: OpenStore,
    key: Option<OwnerKey>,
}

fn receipt_name(ledger: &str, gate: &str) -> String {
    format!("{}.json", sha256_hex(format!("{ledger}\0{gate}")))
}

fn manifest_name(id: &str) -> String {
    format!("{id}.tree")
}

fn stat_cache_name(root: &str) -> String {
    format!("{}.stat", sha256_hex(root))
}

/// The id a manifest is stored under: the SHA-256 of its text.
pub fn manifest_id(manifest: &str) -> String {
    sha256_hex(manifest)
}

impl Receipts {
    /// The store at `location`, which must lie outside each of `roots`.
    pub fn locate(roots: &[PathBuf], location: &StoreLocation) -> Result<Receipts, StoreError> {
        Ok(Receipts { store: Store::locate_kind(StoreKind::Receipt, roots, location)? })
    }

    /// The store as it is, for reading; `None` when there is none yet.
    pub fn open_to_read(&self) -> Result<Option<OpenReceipts>, StoreError> {
        let Some(store) = self.store.open(false)? else { return Ok(None) };
        let key = settled_key(&store, false)?;
        Ok(Some(OpenReceipts { store, key }))
    }

    /// The store for writing: created, with a fresh owner key, when missing.
    pub fn open_to_write(&self) -> Result<OpenReceipts, StoreError> {
        let store = self.store.open(true)?.ok_or_else(|| StoreError::NotReal("receipt store".into(), "directory"))?;
        let key = settled_key(&store, true)?;
        Ok(OpenReceipts { store, key })
    }
}

/// The owner key, made once under the store's lock when `create` asks and
/// there is none. A key read while a concurrent run makes it (linked under
/// its temp name too, for an instant) is read again once that run's lock
/// is released, so concurrent first runs share one key.
fn settled_key(store: &OpenStore, create: bool) -> Result<Option<OwnerKey>, StoreError> {
    match read_key(store) {
        Ok(Some(key)) => return Ok(Some(key)),
        Ok(None) if !create => return Ok(None),
        Ok(None) | Err(StoreError::Linked(..)) => {}
        Err(error) => return Err(error),
    }
    let _held = locked_directory(store)?;
    match read_key(store)? {
        None if create => create_key(store).map(Some),
        key => Ok(key),
    }
}

/// The owner key, if the store has one; a key file that is not one is an
/// error, never a fresh key over it.
fn read_key(store: &OpenStore) -> Result<Option<OwnerKey>, StoreError> {
    let Some(bytes) = store::read_named(store, KEY_FILE, 2 * KEY_BYTES as u64 + 1)? else { return Ok(None) };
    let text = String::from_utf8_lossy(&bytes);
    let key = crate::proof::from_hex::<KEY_BYTES>(text.trim_end_matches('\n'))
        .ok_or_else(|| StoreError::NotReal(store.path.join(KEY_FILE).display().to_string(), "owner key"))?;
    Ok(Some(OwnerKey::new(key)))
}

/// Creates the owner key (under the store's lock): random, 0600, whole or
/// not at all (a temp file linked into place), never replacing a key that
/// is there, which is then the key.
fn create_key(store: &OpenStore) -> Result<OwnerKey, StoreError> {
    let path = store.path.join(KEY_FILE);
    let io = |error| StoreError::Io(path.display().to_string(), error);
    let mut key = [0u8; KEY_BYTES];
    getrandom::fill(&mut key).map_err(|error| io(std::io::Error::other(error.to_string())))?;
    let directory = OpenDirectory::open(&store.path).map_err(io)?;
    let text = format!("{}\n", crate::proof::hex(&key));
    if directory.write_new(std::ffi::OsStr::new(KEY_FILE), text.as_bytes(), 0o600).map_err(io)? {
        return Ok(OwnerKey::new(key));
    }
    read_key(store)?.ok_or_else(|| StoreError::NotReal(path.display().to_string(), "owner key"))
}

/// The store's directory held open, and its lock held.
fn locked_directory(store: &OpenStore) -> Result<(OpenDirectory, FileLock), StoreError> {
    let io = |error| StoreError::Io(store.path.display().to_string(), error);
    let directory = OpenDirectory::open(&store.path).map_err(io)?;
    let lock = LockFile::at(&store.path.join(LOCK_FILE)).map_err(io)?;
    let held = lock.acquire().map_err(StoreError::Lock)?;
    store.assert_unchanged()?;
    Ok((directory, held))
}

impl OpenReceipts {
    pub fn key(&self) -> Option<&OwnerKey> {
        self.key.as_ref()
    }

    /// The receipt for this ledger and gate, if one is readable.
    pub fn receipt(&self, ledger: &str, gate: &str) -> Option<Receipt> {
        let text = store::read_record(&self.store, &receipt_name(ledger, gate)).ok()??;
        Receipt::from_text(&text)
    }

    /// The tree a manifest id names, if the store still keeps it.
    pub fn manifest(&self, id: &str) -> Option<Snapshot> {
        let bytes = store::read_named(&self.store, &manifest_name(id), MAX_TREE_BYTES).ok()??;
        let text = String::from_utf8(bytes).ok()?;
        (manifest_id(&text) == id).then(|| Snapshot::from_manifest(&text))?
    }

    /// What the last proving run under `root` knew of its files.
    pub fn stat_cache(&self, root: &str) -> StatCache {
        let read = store::read_named(&self.store, &stat_cache_name(root), MAX_TREE_BYTES);
        read.ok().flatten().map(|bytes| StatCache::from_text(&String::from_utf8_lossy(&bytes))).unwrap_or_default()
    }

    /// Keeps a batch of a run's receipts and the manifest of the tree they
    /// were proven on (written once: its name is its content's digest).
    pub fn keep(&self, receipts: &[Receipt], manifest: &str) -> Result<(), StoreError> {
        let directory = locked_directory(&self.store)?;
        let manifest_file = manifest_name(&manifest_id(manifest));
        if directory.0.entry(OsStr::new(&manifest_file)).map_err(|error| self.io(&manifest_file, error))?
            == Entry::Missing
        {
            self.replace(&directory.0, &manifest_file, manifest.as_bytes())?;
        }
        for receipt in receipts {
            self.replace(&directory.0, &receipt_name(&receipt.ledger, &receipt.gate), receipt.to_text().as_bytes())?;
        }
        self.store.assert_unchanged()
    }

    /// At the end of a run that proved gates: keeps each root's stat cache
    /// and prunes the store, never removing the `in_use` manifests.
    pub fn finish(&self, caches: &[(&str, &StatCache)], in_use: &[&str]) -> Result<(), StoreError> {
        let directory = locked_directory(&self.store)?;
        for (root, cache) in caches {
            self.replace(&directory.0, &stat_cache_name(root), cache.to_text().as_bytes())?;
        }
        let in_use: Vec<String> = in_use.iter().map(|id| manifest_name(id)).collect();
        self.prune(&in_use)?;
        self.store.assert_unchanged()
    }

    fn io(&self, name: &str, error: std::io::Error) -> StoreError {
        StoreError::Io(self.store.path.join(name).display().to_string(), error)
    }

    fn replace(&self, directory: &OpenDirectory, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
        directory.replace(OsStr::new(name), bytes, 0o600).map_err(|error| self.io(name, error))
    }

    /// Keeps the store bounded: the newest receipts, manifests and stat
    /// caches, by kind (the `keep` names are never removed), and no temp
    /// file a killed write left an hour ago or more.
    fn prune(&self, keep: &[String]) -> Result<(), StoreError> {
        let Some(entries) = store::list(&self.store)? else { return Ok(()) };
        let mut kinds: [Vec<(SystemTime, PathBuf)>; 3] = Default::default();
        let abandoned = SystemTime::now() - ABANDONED_TEMP_AGE;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str().filter(|name| !keep.iter().any(|kept| kept == name)) else { continue };
            let modified = entry.metadata().and_then(|meta| meta.modified()).unwrap_or(UNIX_EPOCH);
            if crate::durable::temp_file_target(name).is_some() {
                if modified < abandoned {
                    let _ = fs::remove_file(entry.path());
                }
                continue;
            }
            let slot = match name.rsplit_once('.').map(|(_, extension)| extension) {
                Some("json") => 0,
                Some("tree") => 1,
                Some("stat") => 2,
                _ => continue,
            };
            kinds[slot].push((modified, entry.path()));
        }
        let [receipts, manifests, stat_caches] = kinds;
        let receipts = if receipts.len() > MAX_RECEIPTS { self.without_lost_ledgers(receipts) } else { receipts };
        let kept_manifests = keep.len().min(MAX_MANIFESTS);
        for (mut files, limit) in
            [(receipts, MAX_RECEIPTS), (manifests, MAX_MANIFESTS - kept_manifests), (stat_caches, MAX_STAT_CACHES)]
        {
            if files.len() <= limit {
                continue;
            }
            files.sort();
            for (_, path) in &files[..files.len() - limit] {
                let _ = fs::remove_file(path);
            }
        }
        Ok(())
    }

    /// `receipts` less those that prove nothing any more, which are
    /// removed: a receipt whose ledger is gone, or that is not a receipt.
    fn without_lost_ledgers(&self, mut receipts: Vec<(SystemTime, PathBuf)>) -> Vec<(SystemTime, PathBuf)> {
        receipts.retain(|(_, path)| {
            let name = path.file_name().and_then(OsStr::to_str).unwrap_or_default();
            let receipt =
                store::read_record(&self.store, name).ok().flatten().and_then(|text| Receipt::from_text(&text));
            let lost = receipt.is_none_or(|receipt| fs::symlink_metadata(&receipt.ledger).is_err());
            if lost {
                let _ = fs::remove_file(path);
            }
            !lost
        });
        receipts
    }
}
