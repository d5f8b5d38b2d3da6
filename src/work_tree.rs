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
use std::sync::OnceLock;

use gix::bstr::ByteSlice;
use std::time::{Duration, SystemTime};

use crate::layout::{GATES_DIR, LEGACY_HOOK_STATE, STATE_DIR};
use crate::proof::tree::{escape_path, unescape_path, ContentId, Entry, Kind, Snapshot};

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

/// What `lstat` says of one path, as the tree and both caches compare it.
#[derive(Debug, Clone, Copy)]
struct FileStat {
    mtime: (i64, u32),
    ctime: (i64, u32),
    size: u64,
    ino: u64,
    dev: u64,
    uid: u32,
    gid: u32,
    /// `None` for a directory or anything else that is no file of the tree.
    kind: Option<Kind>,
}

impl FileStat {
    fn key(&self, kind: Kind) -> StatKey {
        let nanos = |(secs, nsecs): (i64, u32)| u128::try_from(secs).unwrap_or(0) * 1_000_000_000 + u128::from(nsecs);
        StatKey {
            mtime_ns: nanos(self.mtime),
            ctime_ns: nanos(self.ctime),
            size: self.size,
            ino: self.ino,
            dev: self.dev,
            kind,
        }
    }

    /// The same fields as git's index keeps them, to compare with an entry.
    fn git(&self) -> gix::index::entry::Stat {
        let time = |(secs, nsecs): (i64, u32)| gix::index::entry::stat::Time { secs: secs as u32, nsecs };
        // Truncated to 32 bits, as git does.
        gix::index::entry::Stat {
            mtime: time(self.mtime),
            ctime: time(self.ctime),
            dev: self.dev as u32,
            ino: self.ino as u32,
            uid: self.uid,
            gid: self.gid,
            size: self.size as u32,
        }
    }

    fn modified(&self) -> SystemTime {
        let (secs, nsecs) = self.mtime;
        SystemTime::UNIX_EPOCH + Duration::new(u64::try_from(secs).unwrap_or(0), nsecs)
    }
}

/// `lstat` of root-relative paths. Paths that share a directory (the index
/// lists them together) share one open handle on it on Unix, so each lookup
/// resolves a single name rather than the whole path.
struct Lookup<'r> {
    root: &'r Path,
    #[cfg(unix)]
    directory: Option<(String, std::os::fd::OwnedFd)>,
}

impl<'r> Lookup<'r> {
    fn new(root: &'r Path) -> Lookup<'r> {
        Lookup {
            root,
            #[cfg(unix)]
            directory: None,
        }
    }

    #[cfg(unix)]
    fn lstat(&mut self, path: &str) -> std::io::Result<FileStat> {
        use rustix::fs::{AtFlags, FileType, Mode, OFlags};
        let (directory, name) = path.rsplit_once('/').unwrap_or(("", path));
        if self.directory.as_ref().is_none_or(|(open, _)| open != directory) {
            let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
            let fd = rustix::fs::open(self.root.join(directory), flags, Mode::empty())?;
            self.directory = Some((directory.to_string(), fd));
        }
        let Some((_, fd)) = &self.directory else { unreachable!("opened above") };
        let stat = rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW)?;
        let kind = match FileType::from_raw_mode(stat.st_mode) {
            FileType::Symlink => Some(Kind::Symlink),
            FileType::RegularFile if stat.st_mode & 0o100 != 0 => Some(Kind::Executable),
            FileType::RegularFile => Some(Kind::File),
            _ => None,
        };
        // The casts widen on every Unix; a few platforms' fields are signed.
        #[allow(clippy::unnecessary_cast)]
        Ok(FileStat {
            mtime: (stat.st_mtime as i64, stat.st_mtime_nsec as u32),
            ctime: (stat.st_ctime as i64, stat.st_ctime_nsec as u32),
            size: stat.st_size as u64,
            ino: stat.st_ino as u64,
            dev: stat.st_dev as u64,
            uid: stat.st_uid,
            gid: stat.st_gid,
            kind,
        })
    }

    #[cfg(not(unix))]
    fn lstat(&mut self, path: &str) -> std::io::Result<FileStat> {
        let meta = std::fs::symlink_metadata(self.root.join(path))?;
        let since = |time: std::io::Result<SystemTime>| {
            let elapsed =
                time.ok().and_then(|time| time.duration_since(SystemTime::UNIX_EPOCH).ok()).unwrap_or_default();
            (elapsed.as_secs() as i64, elapsed.subsec_nanos())
        };
        let kind = if meta.file_type().is_symlink() {
            Some(Kind::Symlink)
        } else if meta.is_file() {
            Some(Kind::File)
        } else {
            None
        };
        Ok(FileStat {
            mtime: since(meta.modified()),
            ctime: since(meta.created()),
            size: meta.len(),
            ino: 0,
            dev: 0,
            uid: 0,
            gid: 0,
            kind,
        })
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

/// The stat cache, loaded the first time a file is not clean in git's
/// index: a warm run over a clean tree never reads it.
struct Cache<'c> {
    loaded: OnceLock<StatCache>,
    load: &'c (dyn Fn() -> StatCache + Sync),
}

impl Cache<'_> {
    fn get(&self) -> &StatCache {
        self.loaded.get_or_init(self.load)
    }
}

/// Reads the tree under `root`; `load_cache` gives the stat cache the last
/// proving run kept, when it is needed.
pub fn read(root: &Path, load_cache: &(dyn Fn() -> StatCache + Sync)) -> Result<Reading, TreeError> {
    let reader = Reader {
        cache: Cache { loaded: OnceLock::new(), load: load_cache },
        racy_after: SystemTime::now() - RACY_MARGIN,
    };
    let (entries, mut tally) = match gix::discover(root) {
        Ok(repository) if repository.workdir().is_some() => reader.git(root, &repository)?,
        _ => reader.files(root)?,
    };
    tally.fresh.sort_by(|a, b| a.path.cmp(&b.path));
    tally.fresh.dedup_by(|later, first| later.path == first.path);
    Ok(Reading { tree: Snapshot::new(entries), cache: StatCache { files: tally.fresh }, hashed: tally.hashed })
}

/// One reading in progress.
struct Reader<'c> {
    cache: Cache<'c>,
    /// Files modified after this are not cached.
    racy_after: SystemTime,
}

/// What one part of a reading found beyond its entries: what the next
/// cache holds (every file hashed or found in the cache), and how many
/// files were hashed.
#[derive(Default)]
struct Tally {
    fresh: Vec<Cached>,
    hashed: usize,
}

impl Tally {
    fn join(mut self, other: Tally) -> Tally {
        self.fresh.extend(other.fresh);
        self.hashed += other.hashed;
        self
    }
}

/// Whether a root-relative path is never part of the tree: gate-check's
/// own state (`.unlazy/`, pipelines' ledgers included, and the Stop hook's
/// `.unlazy-hook-state.json` beside it), the ledgers it finds at the root
/// (`GATES.md`, `gates/*.md`), which every run that proves a gate rewrites,
/// and the temp files a killed write of any of them leaves.
pub(crate) fn is_state(path: &str) -> bool {
    let (directory, name) = path.rsplit_once('/').unwrap_or(("", path));
    let name = crate::durable::temp_file_target(name).unwrap_or(name);
    let root_ledger = match directory {
        "" => name == "GATES.md",
        GATES_DIR => name.ends_with(".md"),
        _ => false,
    };
    let hook_state = directory.is_empty() && name == LEGACY_HOOK_STATE;
    let in_state_dir = path.strip_prefix(STATE_DIR).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
    root_ledger || hook_state || in_state_dir
}

impl Reader<'_> {
    /// Tracked files from the index, untracked ones from gix's walk.
    fn git(&self, root: &Path, repository: &gix::Repository) -> Result<(Vec<Entry>, Tally), TreeError> {
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
        let index = index_of(repository).map_err(|error| git(&error))?;
        // Strict, whatever the repository's config says: a `core.trustctime
        // false` or `core.checkStat minimal` there must not let a changed
        // file pass for the one in the index, and the nanoseconds git keeps
        // tell apart two writes within one second.
        let stat_options = gix::index::entry::stat::Options { use_nsec: true, ..Default::default() };
        let relative = |path: &str| -> Option<String> {
            let path = if prefix.is_empty() { path } else { path.strip_prefix(prefix.as_str())?.strip_prefix('/')? };
            (!is_state(path)).then(|| path.to_string())
        };
        let tracked: Vec<(String, &gix::index::Entry)> = index
            .entries()
            .iter()
            .filter_map(|entry| Some((relative(&entry.path(&index).to_string())?, entry)))
            .collect();
        // lstat and the walk for untracked files are most of a reading: the
        // walk runs beside the lstat workers, each of which takes a run of
        // paths (and so of directories) of its own.
        let workers = std::thread::available_parallelism().map_or(1, usize::from).clamp(1, 4);
        let share = tracked.len().div_ceil(workers).max(1);
        let timestamp = index.timestamp();
        let read_share = |share: &[(String, &gix::index::Entry)]| {
            let mut lookup = Lookup::new(&root);
            let mut tally = Tally::default();
            let entries: Vec<Entry> = share
                .iter()
                .filter_map(|(path, entry)| {
                    self.tracked(&mut lookup, &mut tally, path, entry, |stat| {
                        entry.stat.matches(&stat.git(), stat_options) && !entry.stat.is_racy(timestamp, stat_options)
                    })
                })
                .collect();
            (entries, tally)
        };
        let walk_untracked = || -> Result<Vec<String>, TreeError> {
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
            Ok(found
                .unorded_entries
                .into_iter()
                .filter(|(untracked, _)| {
                    let file = matches!(
                        untracked.disk_kind,
                        Some(gix::dir::entry::Kind::File | gix::dir::entry::Kind::Symlink)
                    );
                    file && untracked.status == gix::dir::entry::Status::Untracked
                })
                .filter_map(|(untracked, _)| relative(&untracked.rela_path.to_str_lossy()))
                .collect())
        };
        // gix's repository stays on this thread, which walks while the
        // workers stat.
        let (read, untracked) = std::thread::scope(|scope| {
            let running: Vec<_> = tracked.chunks(share).map(|share| scope.spawn(move || read_share(share))).collect();
            let untracked = walk_untracked();
            let mut read = Some((Vec::with_capacity(tracked.len()), Tally::default()));
            for done in running {
                // A worker that panicked read nothing trustworthy.
                read = match (read, done.join()) {
                    (Some((mut all, tally)), Ok((entries, more))) => {
                        all.extend(entries);
                        Some((all, tally.join(more)))
                    }
                    _ => None,
                };
            }
            (read, untracked)
        });
        let (mut entries, mut tally) = read.ok_or_else(|| git(&"a reader of the tree failed"))?;
        let mut lookup = Lookup::new(&root);
        for path in untracked? {
            if let Ok(stat) = lookup.lstat(&path) {
                entries.extend(self.file(&mut tally, &root, path, &stat));
            }
        }
        Ok((entries, tally))
    }

    /// A tracked file's entry: the index's id when `clean` says its entry
    /// still matches it on disk, else as any other file.
    fn tracked(
        &self,
        lookup: &mut Lookup,
        tally: &mut Tally,
        path: &str,
        entry: &gix::index::Entry,
        clean: impl Fn(&FileStat) -> bool,
    ) -> Option<Entry> {
        let indexed = entry.id.as_slice().try_into().ok().map(ContentId);
        if entry.mode.is_submodule() {
            return indexed.map(|id| Entry { path: path.to_string(), kind: Kind::Submodule, id });
        }
        // A file that is not on disk (deleted, or left out of a sparse
        // checkout) is not in the tree, whatever its index entry says.
        let stat = lookup.lstat(path).ok()?;
        let kind = stat.kind?;
        match indexed.filter(|_| clean(&stat)) {
            Some(id) => Some(Entry { path: path.to_string(), kind, id }),
            None => self.file(tally, lookup.root, path.to_string(), &stat),
        }
    }

    /// Every file under `root` that no ignore file leaves out.
    fn files(&self, root: &Path) -> Result<(Vec<Entry>, Tally), TreeError> {
        let (mut entries, mut tally) = (Vec::new(), Tally::default());
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
        let mut lookup = Lookup::new(root);
        for found in walk {
            let found =
                found.map_err(|error| TreeError::Io(root.display().to_string(), std::io::Error::other(error)))?;
            if found.file_type().is_none_or(|kind| kind.is_dir()) {
                continue;
            }
            let Some(path) = root_relative(found.path()).filter(|path| !is_state(path)) else { continue };
            if let Ok(stat) = lookup.lstat(&path) {
                entries.extend(self.file(&mut tally, root, path, &stat));
            }
        }
        Ok((entries, tally))
    }

    /// A file's entry: from the cache when its `stat` is unchanged, else
    /// hashed (and then cached, unless it changed too recently); `None`
    /// for what is no file (a directory, a socket).
    fn file(&self, tally: &mut Tally, root: &Path, path: String, stat: &FileStat) -> Option<Entry> {
        let kind = stat.kind?;
        let key = stat.key(kind);
        let id = match self.cache.get().lookup(&path, &key) {
            Some(id) => Some(id),
            None => {
                tally.hashed += 1;
                content_id(&root.join(&path), kind).ok()
            }
        };
        let Some(id) = id else {
            return Some(Entry { path, kind: Kind::Unreadable, id: ContentId([0; 20]) });
        };
        if stat.modified() < self.racy_after {
            tally.fresh.push(Cached { path: path.clone(), stat: key, id });
        }
        Some(Entry { path, kind, id })
    }
}

/// The repository's index as git reads it: without verifying its checksum,
/// which git leaves to `git fsck` (gix's own reader hashes the whole file).
/// No index yet (nothing was ever added) is an empty one.
fn index_of(repository: &gix::Repository) -> Result<gix::index::File, impl std::fmt::Display> {
    let options = gix::index::decode::Options::default();
    gix::index::File::at_or_default(repository.index_path(), repository.object_hash(), true, options)
}

/// The git blob id of a file's bytes (or of a link's target).
fn content_id(on_disk: &Path, kind: Kind) -> std::io::Result<ContentId> {
    let id = if kind == Kind::Symlink {
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
    fn gate_checks_own_files_are_never_part_of_the_tree() {
        for path in [
            "GATES.md",
            ".GATES.md.a1B2c3.tmp",
            "gates/leaf-1.md",
            "gates/.leaf-1.md.a1B2c3.tmp",
            ".unlazy",
            ".unlazy/api/GATES.md",
            ".unlazy/locks/x.filelock",
            ".unlazy-hook-state.json",
            "..unlazy-hook-state.json.a1B2c3.tmp",
        ] {
            assert!(is_state(path), "{path}");
        }
        for path in ["README.md", "docs/GATES.md", "gates/deep/notes.md", "gates/run.sh", ".unlazyx", "src/.unlazy"] {
            assert!(!is_state(path), "{path}");
        }
    }

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
