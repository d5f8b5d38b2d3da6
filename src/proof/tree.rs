//! The tree a check ran on, as data: every file under the root with its
//! content id, the digest of the part a gate depends on, the manifest a
//! receipt keeps to name what changed, and the comparison of two trees.
//! Pure: reading the work tree is `work_tree`'s job.

use sha2::{Digest, Sha256};

/// A file's content as git names it: the SHA-1 of `blob <len>\0<bytes>`,
/// so a tracked file whose index entry still matches it on disk takes its
/// id from the index without being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ContentId(pub [u8; 20]);

impl ContentId {
    pub fn hex(&self) -> String {
        super::hex(&self.0)
    }

    pub fn from_hex(text: &str) -> Option<ContentId> {
        super::from_hex(text).map(ContentId)
    }
}

/// What kind of entry a path is; a change of kind (or of the executable
/// bit) is a change of the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    File,
    Executable,
    /// Its id is that of the link's target text.
    Symlink,
    /// A submodule, by the commit the index records for it.
    Submodule,
    /// A file that exists but cannot be read: it still counts, as itself.
    Unreadable,
}

impl Kind {
    /// The letter manifests and the stat cache spell the kind with.
    pub fn letter(self) -> char {
        match self {
            Kind::File => 'f',
            Kind::Executable => 'x',
            Kind::Symlink => 'l',
            Kind::Submodule => 'm',
            Kind::Unreadable => 'u',
        }
    }

    pub fn from_letter(letter: u8) -> Option<Kind> {
        Some(match letter {
            b'f' => Kind::File,
            b'x' => Kind::Executable,
            b'l' => Kind::Symlink,
            b'm' => Kind::Submodule,
            b'u' => Kind::Unreadable,
            _ => return None,
        })
    }
}

/// One path of the tree, relative to the root with `/` separators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub path: String,
    pub kind: Kind,
    pub id: ContentId,
}

/// Every path of a tree, in byte order of their paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    entries: Vec<Entry>,
}

/// The part of a tree a proof depends on: the gate's `INPUTS:` globs (the
/// whole tree when there are none), less the ledgers of the run that
/// proved it, which ticking boxes and writing evidence change.
#[derive(Debug)]
pub struct Scope {
    inputs: Option<globset::GlobSet>,
    /// The proving run's ledgers, sorted.
    excluded: Vec<String>,
}

impl Scope {
    /// `inputs` are normalized root-relative globs (see
    /// `ledger::input_globs`); `excluded` root-relative ledger paths.
    pub fn new(inputs: &[String], excluded: &[String]) -> Scope {
        let inputs = (!inputs.is_empty()).then(|| {
            let mut set = globset::GlobSetBuilder::new();
            for glob in inputs {
                // The parser refused a ledger with an invalid glob.
                if let Ok(glob) = globset::GlobBuilder::new(glob).literal_separator(true).build() {
                    set.add(glob);
                }
            }
            set.build().unwrap_or_else(|_| globset::GlobSet::empty())
        });
        let mut excluded = excluded.to_vec();
        excluded.sort();
        Scope { inputs, excluded }
    }

    /// Whether `path` belongs to the scope: not excluded (nor the temp file
    /// of an excluded ledger's write-back), and matched by an input glob
    /// itself or through one of its directories (`src` covers everything
    /// under `src/`).
    pub fn contains(&self, path: &str) -> bool {
        if self.excludes(path) || self.is_ledger_temp_file(path) {
            return false;
        }
        let Some(inputs) = &self.inputs else { return true };
        if inputs.is_match(path) {
            return true;
        }
        path.match_indices('/').any(|(at, _)| inputs.is_match(&path[..at]))
    }

    /// A write-back's temp file beside an excluded ledger: gate-check's own,
    /// and left behind only by a killed run.
    fn is_ledger_temp_file(&self, path: &str) -> bool {
        let (directory, name) = path.rsplit_once('/').unwrap_or(("", path));
        // Temp files are hidden: every other name is rejected at once.
        if !name.starts_with('.') {
            return false;
        }
        crate::durable::temp_file_target(name).is_some_and(|target| {
            let ledger = if directory.is_empty() { target.to_string() } else { format!("{directory}/{target}") };
            self.excludes(&ledger)
        })
    }

    fn excludes(&self, path: &str) -> bool {
        self.excluded.binary_search_by(|ledger| ledger.as_str().cmp(path)).is_ok()
    }
}

impl Snapshot {
    /// A tree of these entries, in any order; a path given twice keeps its
    /// first entry.
    pub fn new(mut entries: Vec<Entry>) -> Snapshot {
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        entries.dedup_by(|later, first| later.path == first.path);
        Snapshot { entries }
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The SHA-256 of the scope's entries, as lowercase hex (what evidence
    /// carries as `tree-sha256=` and a receipt as its tree), and how many
    /// entries the scope holds.
    pub fn digest(&self, scope: &Scope) -> (String, usize) {
        let mut hasher = Sha256::new();
        let mut files = 0;
        for entry in self.entries.iter().filter(|entry| scope.contains(&entry.path)) {
            hasher.update(entry.path.as_bytes());
            hasher.update([0, entry.kind.letter() as u8]);
            hasher.update(entry.id.0);
            files += 1;
        }
        (format!("{:x}", hasher.finalize()), files)
    }

    /// The manifest text: one `<kind><id> <path>` line per entry, in path
    /// order, with `\\` and newlines in paths escaped.
    pub fn manifest(&self) -> String {
        let mut text = String::with_capacity(self.entries.len() * 64);
        for entry in &self.entries {
            text.push(entry.kind.letter());
            text.push_str(&entry.id.hex());
            text.push(' ');
            text.push_str(&escape_path(&entry.path));
            text.push('\n');
        }
        text
    }

    /// A tree read back from its manifest; `None` when the text is not one.
    pub fn from_manifest(text: &str) -> Option<Snapshot> {
        let entries = text
            .lines()
            .map(|line| {
                let kind = Kind::from_letter(*line.as_bytes().first()?)?;
                let id = ContentId::from_hex(line.get(1..41)?)?;
                let path = unescape_path(line.get(41..)?.strip_prefix(' ')?)?;
                Some(Entry { path, kind, id })
            })
            .collect::<Option<Vec<Entry>>>()?;
        let sorted = entries.windows(2).all(|pair| pair[0].path < pair[1].path);
        sorted.then_some(Snapshot { entries })
    }

    /// The paths of the scope that differ between `earlier` and this tree
    /// (added, removed or changed), in path order.
    pub fn changed_since(&self, earlier: &Snapshot, scope: &Scope) -> Vec<String> {
        let (old, new) = (&earlier.entries, &self.entries);
        let (mut at_old, mut at_new) = (0, 0);
        let mut changed = Vec::new();
        while at_old < old.len() || at_new < new.len() {
            let order = match (old.get(at_old), new.get(at_new)) {
                (Some(before), Some(now)) => before.path.cmp(&now.path),
                (Some(_), None) => std::cmp::Ordering::Less,
                _ => std::cmp::Ordering::Greater,
            };
            let path = match order {
                std::cmp::Ordering::Less => {
                    at_old += 1;
                    Some(&old[at_old - 1].path)
                }
                std::cmp::Ordering::Greater => {
                    at_new += 1;
                    Some(&new[at_new - 1].path)
                }
                std::cmp::Ordering::Equal => {
                    let (before, now) = (&old[at_old], &new[at_new]);
                    (at_old, at_new) = (at_old + 1, at_new + 1);
                    (before.kind != now.kind || before.id != now.id).then_some(&now.path)
                }
            };
            if let Some(path) = path.filter(|path| scope.contains(path)) {
                changed.push(path.clone());
            }
        }
        changed
    }
}

/// A path on one line: `\\` and newline escaped.
pub(crate) fn escape_path(path: &str) -> String {
    path.replace('\\', "\\\\").replace('\n', "\\n")
}

pub(crate) fn unescape_path(text: &str) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, byte: u8) -> Entry {
        Entry { path: path.to_string(), kind: Kind::File, id: ContentId([byte; 20]) }
    }

    fn everything() -> Scope {
        Scope::new(&[], &[])
    }

    #[test]
    fn a_scope_takes_globs_directories_and_leaves_out_the_ledgers() {
        let scope = Scope::new(&["src".into(), "tests/*.py".into()], &["src/GATES.md".into()]);
        assert!(scope.contains("src/lib.py") && scope.contains("src/deep/er.py") && scope.contains("src"));
        assert!(scope.contains("tests/test_a.py"));
        assert!(!scope.contains("tests/unit/test_b.py"), "a single star stays within its directory");
        assert!(!scope.contains("srcs/x.py") && !scope.contains("README.md"));
        assert!(!scope.contains("src/GATES.md"), "an excluded ledger is out even under an input");
        let all = Scope::new(&[], &["GATES.md".into(), "gates/a.md".into()]);
        assert!(all.contains("anything/at/all") && !all.contains("GATES.md"));
        assert!(!all.contains(".GATES.md.a1B2c3.tmp") && !all.contains("gates/.a.md.a1B2c3.tmp"));
        assert!(all.contains(".README.md.a1B2c3.tmp") && all.contains(".GATES.md.x.tmp"));
    }

    #[test]
    fn the_digest_covers_path_kind_and_content_of_the_scope_only() {
        let tree = Snapshot::new(vec![entry("b.py", 2), entry("a.py", 1)]);
        let same = Snapshot::new(vec![entry("a.py", 1), entry("b.py", 2)]);
        assert_eq!(tree.digest(&everything()).0, same.digest(&everything()).0, "order of discovery is irrelevant");
        let edited = Snapshot::new(vec![entry("a.py", 1), entry("b.py", 3)]);
        assert_ne!(tree.digest(&everything()).0, edited.digest(&everything()).0);
        let only_a = Scope::new(&["a.py".into()], &[]);
        assert_eq!(tree.digest(&only_a), edited.digest(&only_a), "a change outside the inputs is no change");
        assert_eq!(tree.digest(&only_a).1, 1);
        assert_eq!(tree.digest(&Scope::new(&["none".into()], &[])).1, 0);
        let renamed = Snapshot::new(vec![entry("a.py", 1), entry("c.py", 2)]);
        assert_ne!(tree.digest(&everything()).0, renamed.digest(&everything()).0);
        let mut executable = tree.clone();
        executable.entries[0].kind = Kind::Executable;
        assert_ne!(tree.digest(&everything()).0, executable.digest(&everything()).0);
        assert_eq!(tree.digest(&everything()).0.len(), 64);
    }

    #[test]
    fn a_manifest_reads_back_and_names_what_changed() {
        let before = Snapshot::new(vec![
            entry("a.py", 1),
            entry("b.py", 2),
            entry("gone.py", 4),
            entry("d i r/x", 5),
            entry("new\nline\\n", 7),
        ]);
        let text = before.manifest();
        assert_eq!(Snapshot::from_manifest(&text), Some(before.clone()));
        assert_eq!(Snapshot::from_manifest("f00 a\n"), None);
        assert_eq!(Snapshot::from_manifest(&format!("z{} a\n", "0".repeat(40))), None);
        let unsorted = format!("f{id} b\nf{id} a\n", id = "0".repeat(40));
        assert_eq!(Snapshot::from_manifest(&unsorted), None);
        let after = Snapshot::new(vec![
            entry("a.py", 1),
            entry("b.py", 3),
            entry("c.py", 6),
            entry("d i r/x", 5),
            entry("new\nline\\n", 7),
        ]);
        assert_eq!(after.changed_since(&before, &everything()), ["b.py", "c.py", "gone.py"]);
        assert_eq!(after.changed_since(&before, &Scope::new(&["c.py".into()], &[])), ["c.py"]);
        assert!(after.changed_since(&after, &everything()).is_empty());
    }
}
