//! The `.unlazy/` directory of a repository. When gate-check is the one that
//! creates it, it also writes `.unlazy/.gitignore` covering only its own
//! machine-local state, so the first run does not leave untracked lock files
//! behind. A `.unlazy/` that already exists (made by a user, an agent or the
//! Node tool) is never given one, and an existing ignore file is never
//! replaced.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use crate::target::STATE_DIR;

pub const IGNORE_FILE: &str = ".gitignore";

/// Ledgers, plans, the status log and dispatch state stay visible to version
/// control: a pipeline's ledgers may be meant to be committed, and a
/// `--status --scope` in CI judges dispatch waves from the committed state.
pub const IGNORE_TEXT: &str = "\
# Written by gate-check when it created this directory; it never rewrites it.
# Ignored: machine-local state (locks and ownership leases, session bindings,
# Stop-hook progress, interrupted atomic writes). Not ignored: ledgers, plans,
# status logs and dispatch state. Add a line `*` to ignore everything here.
/locks/
/*/session
/*/hook-state.json
*.tmp
";

/// Makes sure `<root>/.unlazy` exists, creating it 0700 when missing; a
/// directory this call creates also gets the ignore file, written whole (a
/// temp file linked into place) so no reader sees part of it.
pub fn ensure(root: &Path) -> io::Result<()> {
    let state = root.join(STATE_DIR);
    match fs::DirBuilder::new().mode(0o700).create(&state) {
        Ok(()) => write_ignore_file(&state),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(io::Error::new(error.kind(), format!("{}: {error}", state.display()))),
    }
}

fn write_ignore_file(state: &Path) -> io::Result<()> {
    let path = state.join(IGNORE_FILE);
    let failed = |error: io::Error| io::Error::new(error.kind(), format!("{}: {error}", path.display()));
    let mut temp = tempfile::Builder::new().prefix(".gitignore.").suffix(".tmp").tempfile_in(state).map_err(failed)?;
    temp.write_all(IGNORE_TEXT.as_bytes()).map_err(failed)?;
    temp.as_file().sync_all().map_err(failed)?;
    match temp.persist_noclobber(&path) {
        Ok(_) => Ok(()),
        // Someone wrote one in the instant since the directory appeared: theirs stays.
        Err(error) if error.error.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(failed(error.error)),
    }
}
