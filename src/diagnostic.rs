//! The printed form of every diagnostic: `path:line: severity: message`
//! when it has a place in a file (editors and terminals link it), else
//! `gate-check: error: message`. Pure, and a leaf: the parser and every
//! layer above it use it.

/// A problem at a place in a file. Displays as `path:line: message`, the
/// form editors, terminals and CI log viewers turn into a link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub path: String,
    /// One-based; `None` for a problem with the whole file.
    pub line: Option<usize>,
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.path, self.message),
            None => write!(f, "{}: {}", self.path, self.message),
        }
    }
}

impl Diagnostic {
    pub fn new(path: impl Into<String>, line: Option<usize>, message: impl Into<String>) -> Diagnostic {
        Diagnostic { path: path.into(), line, message: message.into() }
    }

    /// The printed error line: `path:line: error: message`.
    pub fn error_line(&self) -> String {
        self.printed("error")
    }

    /// The printed warning line: `path:line: warning: message`.
    pub fn warning_line(&self) -> String {
        self.printed("warning")
    }

    fn printed(&self, severity: &str) -> String {
        match self.line {
            Some(line) => format!("{}:{line}: {severity}: {}", self.path, self.message),
            None => format!("{}: {severity}: {}", self.path, self.message),
        }
    }
}

/// The printed line of an error that has no place in a file.
pub fn error_line(message: &str) -> String {
    format!("gate-check: error: {message}")
}
