//! Reads the tree under the root as git sees it, for proofs: every tracked
//! file as it is on disk plus every untracked file that is not ignored
//! (gix reads the index and the ignore rules, in this process: `--status`
//! and the Stop hook start no process). Outside a git work tree, the files
//! under the root, honouring `.gitignore` and `.ignore` files (the `ignore`
//! crate's walk). `.unlazy/` and the root's own ledgers are never part of
//! the tree.
//!
//! Reading is cheap when nothing changed: a tracked file whose index entry
//! still matches it on disk takes its id from the index, and any other file
//! whose `stat` matches the stat cache (written by the last run that
//! proved something) takes its id from there. Only the rest is hashed.
//! Read-only: the cache is handed back for the receipt store to keep.

use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::proof::tree::{ContentId, Entry, Kind, Snapshot};

/// Files changed this recently are not cached: a second change within the
/// file system's timestamp granularity could leave the same `stat`.
const RACY_MARGIN: Duration = Duration::from_secs(2);

/// The `stat` fields that tell a changed file from an unchanged one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StatKey {
    mtime_ns: u128,
    ctime_ns: u128,
    size: u64,
    ino: u64,
    dev: u64,
    kind: Kind,
}

impl StatKey {
    fn of(meta: &gix::index::fs::Metadata) -> StatKey {
        let nanos = |time: Option<SystemTime>| {
            time.and_then(|time| time.duration_since(SystemTime::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos())
        };
        StatKey {
            mtime_ns: nanos(meta.modified()),
            ctime_ns: nanos(meta.created()),
            size: meta.len(),
            ino: meta.ino(),
            dev: meta.dev(),
            kind: kind_of(meta),
        }
    }
}

fn kind_of(meta: &gix::index::fs::Metadata) -> Kind {
    if meta.is_symlink() {
        Kind::Symlink
    } else if meta.is_executable() {
        Kind::Executable
    } else {
        Kind::File
    }
}

/// One file the cache knows: its path, `stat` and content id.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Cached {
    path: String,
    stat: StatKey,
    id: ContentId,
}

/// Content ids of files that were read, by path and `stat`, for one root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatCache {
    /// Sorted by path.
    files: Vec<Cached>,
}

const CACHE_HEADER: &str = "gate-check stat cache 1\n";

impl StatCache {
    fn lookup(&self, path: &str, stat: &StatKey) -> Option<ContentId> {
        let at = self.files.binary_search_by(|cached| cached.path.as_str().cmp(path)).ok()?;
        let cached = &self.files[at];
        (cached.stat == *stat).then_some(cached.id)
    }

    /// The cache's file text.
    pub fn to_text(&self) -> String {
        let mut text = String::from(CACHE_HEADER);
        for file in &self.files {
            let StatKey { mtime_ns, ctime_ns, size, ino, dev, kind } = file.stat;
            text.push_str(&format!(
                "{mtime_ns} {ctime_ns} {size} {ino} {dev} {}{} {}\n",
                kind.letter(),
                file.id.hex(),
                escape_path(&file.path)
            ));
        }
        text
    }

    /// A cache read back; an unreadable one is an empty cache.
    pub fn from_text(text: &str) -> StatCache {
        let Some(body) = text.strip_prefix(CACHE_HEADER) else { return StatCache::default() };
        let parsed: Option<Vec<Cached>> = body
            .lines()
            .map(|line| {
                let mut fields = line.splitn(7, ' ');
                let mut number = || fields.next()?.parse::<u128>().ok();
                let (mtime_ns, ctime_ns, size, ino, dev) = (number()?, number()?, number()?, number()?, number()?);
                let entry = fields.next()?;
                let path = unescape_path(fields.next()?)?;
                let stat = StatKey {
                    mtime_ns,
                    ctime_ns,
                    size: u64::try_from(size).ok()?,
                    ino: u64::try_from(ino).ok()?,
                    dev: u64::try_from(dev).ok()?,
                    kind: Kind::from_letter(*entry.as_bytes().first()?)?,
                };
                Some(Cached { path, stat, id: ContentId::from_hex(entry.get(1..)?)? })
            })
            .collect();
        match parsed {
            Some(files) if files.windows(2).all(|pair| pair[0].path < pair[1].path) => StatCache { files },
            _ => StatCache::default(),
        }
    }
}

/// A path on one line: `\` and newline escaped.
fn escape_path(path: &str) -> String {
    path.replace('\\', "\\\\").replace('\n', "\\n")
}

fn unescape_path(text: &str) -> Option<String> {
    let mut path = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next()? {
                '\\' => path.push('\\'),
                'n' => path.push('\n'),
                _ => return None,
            },
            c => path.push(c),
        }
    }
    Some(path)
}

/// The tree as read, the cache to keep for the next reading, and how many
/// files had to be hashed.
pub struct Reading {
    pub tree: Snapshot,
    pub cache: StatCache,
    pub hashed: usize,
}

/// Why the tree could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error("cannot read the git repository at {0}: {1}")]
    Git(String, String),
    #[error("cannot read {0}: {1}")]
    Io(String, std::io::Error),
}

/// Reads the tree under `root`.
pub fn read(root: &Path, cache: &StatCache) -> Result<Reading, TreeError> {
    let started = SystemTime::now();
    let mut reader = Reader { cache, fresh: Vec::new(), hashed: 0, racy_after: started - RACY_MARGIN };
    let entries = match gix::discover(root) {
        Ok(repository) if repository.workdir().is_some() => reader.git(root, &repository)?,
        _ => reader.files(root)?,
    };
    let Reader { mut fresh, hashed, .. } = reader;
    fresh.sort_by(|a, b| a.path.cmp(&b.path));
    fresh.dedup_by(|later, first| later.path == first.path);
    Ok(Reading { tree: Snapshot::new(entries), cache: StatCache { files: fresh }, hashed })
}

/// One reading in progress.
struct Reader<'c> {
    cache: &'c StatCache,
    /// What the next cache holds: every file read or found in the cache now.
    fresh: Vec<Cached>,
    hashed: usize,
    /// Files modified after this are not cached.
    racy_after: SystemTime,
}

/// Whether a root-relative path is never part of the tree: gate-check's
/// own state (`.unlazy/`, pipelines' ledgers included) and the ledgers it
/// finds at the root (`GATES.md`, `gates/*.md`), which every run that
/// proves a gate rewrites.
fn is_state(path: &str) -> bool {
    let ledger = path == "GATES.md"
        || path.strip_prefix("gates/").is_some_and(|name| name.ends_with(".md") && !name.contains('/'));
    ledger || path == ".unlazy" || path.starts_with(".unlazy/")
}

impl Reader<'_> {
    /// Tracked files from the index, untracked ones from gix's walk.
    fn git(&mut self, root: &Path, repository: &gix::Repository) -> Result<Vec<Entry>, TreeError> {
        let git = |error: &dyn std::fmt::Display| TreeError::Git(root.display().to_string(), error.to_string());
        let workdir = repository.workdir().unwrap_or(root);
        let canonical =
            |path: &Path| path.canonicalize().map_err(|error| TreeError::Io(path.display().to_string(), error));
        let (workdir, root) = (canonical(workdir)?, canonical(root)?);
        let prefix = match root.strip_prefix(&workdir) {
            Ok(relative) => relative.to_string_lossy().replace('\\', "/"),
            // The root is not in the work tree (a symlink out of it).
            Err(_) => return self.files(&root),
        };
        let index = repository.index_or_empty().map_err(|error| git(&error))?;
        let stat_options = repository.stat_options().map_err(|error| git(&error))?;
        let mut entries = Vec::with_capacity(index.entries().len());
        let relative = |path: &str| -> Option<String> {
            let path = if prefix.is_empty() { path } else { path.strip_prefix(prefix.as_str())?.strip_prefix('/')? };
            (!is_state(path)).then(|| path.to_string())
        };
        for entry in index.entries() {
            let Some(path) = relative(&entry.path(&index).to_string()) else { continue };
            if entry.mode.is_submodule() {
                if let Ok(id) = entry.id.as_slice().try_into() {
                    entries.push(Entry { path, kind: Kind::Submodule, id: ContentId(id) });
                }
                continue;
            }
            let on_disk = root.join(&path);
            let Ok(meta) = gix::index::fs::Metadata::from_path_no_follow(&on_disk) else {
                // Not checked out (sparse, or deleted): as git has it, or gone.
                if entry.flags.contains(gix::index::entry::Flags::SKIP_WORKTREE) {
                    if let Ok(id) = entry.id.as_slice().try_into() {
                        entries.push(Entry { path, kind: Kind::File, id: ContentId(id) });
                    }
                }
                continue;
            };
            if meta.is_dir() {
                continue;
            }
            let clean = gix::index::entry::Stat::from_fs(&meta)
                .is_ok_and(|stat| entry.stat.matches(&stat, stat_options))
                && !entry.stat.is_racy(index.timestamp(), stat_options);
            let indexed: Option<[u8; 20]> = entry.id.as_slice().try_into().ok();
            match indexed.filter(|_| clean) {
                Some(id) => entries.push(Entry { path, kind: kind_of(&meta), id: ContentId(id) }),
                None => entries.push(self.file(&on_disk, path, &meta)),
            }
        }
        let mut options = repository
            .dirwalk_options()
            .map_err(|error| git(&error))?
            .emit_untracked(gix::dir::walk::EmissionMode::Matching)
            .emit_ignored(None)
            .emit_tracked(false)
            .emit_pruned(false)
            .recurse_repositories(false);
        options = options.emit_empty_directories(false);
        let mut found = gix::dir::walk::delegate::Collect::default();
        let interrupt = std::sync::atomic::AtomicBool::new(false);
        let patterns: Vec<&str> = if prefix.is_empty() { Vec::new() } else { vec![prefix.as_str()] };
        repository.dirwalk(&index, patterns, &interrupt, options, &mut found).map_err(|error| git(&error))?;
        for (untracked, _) in found.unorded_entries {
            let is_file =
                matches!(untracked.disk_kind, Some(gix::dir::entry::Kind::File | gix::dir::entry::Kind::Symlink));
            if untracked.status != gix::dir::entry::Status::Untracked || !is_file {
                continue;
            }
            let Some(path) = relative(&untracked.rela_path.to_string()) else { continue };
            let on_disk = root.join(&path);
            if let Ok(meta) = gix::index::fs::Metadata::from_path_no_follow(&on_disk) {
                entries.push(self.file(&on_disk, path, &meta));
            }
        }
        Ok(entries)
    }

    /// Every file under `root` that no ignore file leaves out.
    fn files(&mut self, root: &Path) -> Result<Vec<Entry>, TreeError> {
        let mut entries = Vec::new();
        let walk = ignore::WalkBuilder::new(root)
            .hidden(false)
            .parents(false)
            .git_global(false)
            .git_exclude(false)
            .require_git(false)
            .follow_links(false)
            .filter_entry(|entry| entry.depth() != 1 || !matches!(entry.file_name().to_str(), Some(".unlazy" | ".git")))
            .build();
        let root_relative = |path: &Path| Some(path.strip_prefix(root).ok()?.to_string_lossy().replace('\\', "/"));
        for found in walk {
            let found =
                found.map_err(|error| TreeError::Io(root.display().to_string(), std::io::Error::other(error)))?;
            if found.file_type().is_none_or(|kind| kind.is_dir()) {
                continue;
            }
            let Some(path) = root_relative(found.path()).filter(|path| !is_state(path)) else { continue };
            if let Ok(meta) = gix::index::fs::Metadata::from_path_no_follow(found.path()) {
                entries.push(self.file(found.path(), path, &meta));
            }
        }
        Ok(entries)
    }

    /// A file's entry: from the cache when its `stat` is unchanged, else
    /// hashed (and then cached, unless it changed too recently).
    fn file(&mut self, on_disk: &Path, path: String, meta: &gix::index::fs::Metadata) -> Entry {
        let stat = StatKey::of(meta);
        let id = match self.cache.lookup(&path, &stat) {
            Some(id) => Some(id),
            None => {
                self.hashed += 1;
                content_id(on_disk, meta).ok()
            }
        };
        let Some(id) = id else {
            return Entry { path, kind: Kind::Unreadable, id: ContentId([0; 20]) };
        };
        if meta.modified().is_some_and(|modified| modified < self.racy_after) {
            self.fresh.push(Cached { path: path.clone(), stat, id });
        }
        Entry { path, kind: stat.kind, id }
    }
}

/// The git blob id of a file's bytes (or of a link's target).
fn content_id(on_disk: &Path, meta: &gix::index::fs::Metadata) -> std::io::Result<ContentId> {
    let id = if meta.is_symlink() {
        let target = std::fs::read_link(on_disk)?;
        let bytes = gix::path::os_str_into_bstr(target.as_os_str()).map_err(std::io::Error::other)?;
        gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, bytes)
    } else {
        let mut file = std::fs::File::open(on_disk)?;
        let length = file.metadata()?.len();
        let interrupt = std::sync::atomic::AtomicBool::new(false);
        let mut progress = gix::progress::Discard;
        gix::objs::compute_stream_hash(
            gix::hash::Kind::Sha1,
            gix::objs::Kind::Blob,
            &mut file,
            length,
            &mut progress,
            &interrupt,
        )
    }
    .map_err(std::io::Error::other)?;
    id.as_slice().try_into().map(ContentId).map_err(|_| std::io::Error::other("not a SHA-1 id"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_cache_reads_back_and_refuses_what_it_did_not_write() {
        let stat = StatKey { mtime_ns: 1, ctime_ns: 2, size: 3, ino: 4, dev: 5, kind: Kind::Executable };
        let cache = StatCache {
            files: vec![
                Cached { path: "a b\\c".into(), stat, id: ContentId([9; 20]) },
                Cached { path: "new\nline".into(), stat: StatKey { kind: Kind::File, ..stat }, id: ContentId([1; 20]) },
            ],
        };
        let text = cache.to_text();
        assert_eq!(StatCache::from_text(&text), cache);
        assert_eq!(cache.lookup("a b\\c", &stat), Some(ContentId([9; 20])));
        assert_eq!(cache.lookup("a b\\c", &StatKey { size: 4, ..stat }), None, "another stat is another file");
        assert_eq!(cache.lookup("missing", &stat), None);
        assert_eq!(StatCache::from_text("something else"), StatCache::default());
        assert_eq!(StatCache::from_text(&format!("{CACHE_HEADER}1 2 x\n")), StatCache::default());
    }
}
