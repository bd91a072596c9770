//! [`TapeError`]: the error of loading or saving a tape.

use std::fmt;
use std::path::{Path, PathBuf};

/// What kind of [`TapeError`] occurred.
///
/// ```
/// use toolnexus::judge::{Tape, TapeErrorKind};
/// let e = Tape::from_json("[]").unwrap_err();
/// assert_eq!(e.kind(), TapeErrorKind::Shape);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TapeErrorKind {
    /// The file could not be read or written.
    Io,
    /// The file is not valid JSON.
    Syntax,
    /// The file has no version, or one this library does not read.
    Version,
    /// The file is JSON of the wrong shape (or holds a decision that does not decode).
    Shape,
}

/// The error of loading or saving a tape. Its message starts `tape: <path>: `
/// and, for invalid JSON, gives the line and column.
///
/// ```
/// use toolnexus::judge::Tape;
/// let e = Tape::from_json("{\"version\": 1,").unwrap_err();
/// assert!(e.is_corrupt());
/// assert!(e.to_string().starts_with("tape: <input>: invalid JSON at line 1, column"), "{e}");
/// ```
pub struct TapeError {
    kind: TapeErrorKind,
    path: Option<PathBuf>,
    message: String,
    pub(super) line: Option<usize>,
    pub(super) column: Option<usize>,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl TapeError {
    pub(super) fn new(kind: TapeErrorKind, path: Option<&Path>, text: String) -> TapeError {
        let shown = path.map_or_else(|| "<input>".to_string(), |p| p.display().to_string());
        TapeError {
            kind,
            path: path.map(Path::to_path_buf),
            message: format!("tape: {shown}: {text}"),
            line: None,
            column: None,
            source: None,
        }
    }

    pub(super) fn source(mut self, e: impl std::error::Error + Send + Sync + 'static) -> TapeError {
        self.source = Some(Box::new(e));
        self
    }

    /// What went wrong.
    ///
    /// ```
    /// use toolnexus::judge::{Tape, TapeErrorKind};
    /// assert_eq!(Tape::load("/nonexistent/dir/x.json").unwrap_err().kind(), TapeErrorKind::Io);
    /// ```
    pub fn kind(&self) -> TapeErrorKind {
        self.kind
    }

    /// The file involved (`None` for [`Tape::from_json`](super::Tape::from_json)).
    ///
    /// ```
    /// use toolnexus::judge::Tape;
    /// let e = Tape::load("/nonexistent/dir/x.json").unwrap_err();
    /// assert_eq!(e.path(), Some(std::path::Path::new("/nonexistent/dir/x.json")));
    /// ```
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The 1-based line of a JSON syntax error.
    ///
    /// ```
    /// let e = toolnexus::judge::Tape::from_json("{\n\n  oops").unwrap_err();
    /// assert_eq!(e.line(), Some(3));
    /// ```
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// The 1-based column of a JSON syntax error.
    ///
    /// ```
    /// let e = toolnexus::judge::Tape::from_json("{\n\n  oops").unwrap_err();
    /// assert_eq!(e.column(), Some(3));
    /// ```
    pub fn column(&self) -> Option<usize> {
        self.column
    }

    /// The file is not a readable tape: invalid JSON or the wrong shape.
    ///
    /// ```
    /// assert!(toolnexus::judge::Tape::from_json("nope").unwrap_err().is_corrupt());
    /// ```
    pub fn is_corrupt(&self) -> bool {
        matches!(self.kind, TapeErrorKind::Syntax | TapeErrorKind::Shape)
    }

    /// The file has no version or one this library does not read (e.g. a newer one).
    ///
    /// ```
    /// let e = toolnexus::judge::Tape::from_json(r#"{"version": 9, "calls": {}}"#).unwrap_err();
    /// assert!(e.is_unsupported_version());
    /// ```
    pub fn is_unsupported_version(&self) -> bool {
        self.kind == TapeErrorKind::Version
    }
}

impl fmt::Display for TapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for TapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TapeError")
            .field("kind", &self.kind)
            .field("message", &self.message)
            .finish()
    }
}

impl std::error::Error for TapeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}
