//! The one error type of `assess`: where it happened (file, line, column, key)
//! and what was wrong, in one line.

use std::fmt;
use std::path::{Path, PathBuf};

/// What kind of failure an [`AssessError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AssessErrorKind {
    /// A file could not be read or written.
    Io,
    /// A line is not the JSON it should be.
    Syntax,
    /// A labelled example or run row is malformed (a missing or unknown field,
    /// a gold value that does not fit its question).
    Invalid,
    /// A file was written for other questions, or by another tool or version.
    Mismatch,
    /// Too few rows to say anything honest.
    TooFew,
}

/// A failure reading labelled examples, run files, thresholds or calibration
/// files, or computing from them. The message names the file, line, column and
/// key it is about:
///
/// ```
/// use toolnexus::assess::{parse_examples, AssessErrorKind};
/// use toolnexus::judge::{noul, questions};
///
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// let e = parse_examples("{\"state\": \"hi\", \"labels\": {\"spam\": \"yes\"}}\n", "set.jsonl", &qs)
///     .unwrap_err();
/// assert_eq!(e.kind(), AssessErrorKind::Invalid);
/// assert_eq!(
///     e.to_string(),
///     "set.jsonl:1:28: label \"spam\": noul question \"spam\" takes true or false, got \"yes\""
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct AssessError(Box<Inner>);

/// Boxed, so a `Result<_, AssessError>` stays one pointer wide.
struct Inner {
    kind: AssessErrorKind,
    path: Option<PathBuf>,
    line: Option<usize>,
    column: Option<usize>,
    key: Option<(&'static str, String)>,
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl AssessError {
    pub(crate) fn new(kind: AssessErrorKind, message: impl Into<String>) -> AssessError {
        AssessError(Box::new(Inner {
            kind,
            path: None,
            line: None,
            column: None,
            key: None,
            message: message.into(),
            source: None,
        }))
    }

    pub(crate) fn io(path: &Path, what: &str, e: std::io::Error) -> AssessError {
        AssessError::new(AssessErrorKind::Io, format!("{what}: {e}"))
            .at_path(path)
            .with_source(e)
    }

    pub(crate) fn at_path(mut self, path: impl Into<PathBuf>) -> AssessError {
        self.0.path = Some(path.into());
        self
    }

    pub(crate) fn at(mut self, line: usize, column: Option<usize>) -> AssessError {
        self.0.line = Some(line);
        self.0.column = column;
        self
    }

    /// About one label of an example (`label "k": `).
    pub(crate) fn for_key(mut self, key: impl Into<String>) -> AssessError {
        self.0.key = Some(("label", key.into()));
        self
    }

    /// About one question (`question "k": `).
    pub(crate) fn for_question(mut self, key: impl Into<String>) -> AssessError {
        self.0.key = Some(("question", key.into()));
        self
    }

    pub(crate) fn with_source(
        mut self,
        e: impl std::error::Error + Send + Sync + 'static,
    ) -> AssessError {
        self.0.source = Some(Box::new(e));
        self
    }

    /// What kind of failure this is.
    ///
    /// ```
    /// # use toolnexus::assess::{parse_examples, AssessErrorKind};
    /// # let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("q", "?")])?;
    /// let e = parse_examples("not json\n", "x.jsonl", &qs).unwrap_err();
    /// assert_eq!(e.kind(), AssessErrorKind::Syntax);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn kind(&self) -> AssessErrorKind {
        self.0.kind
    }

    /// The file the error is about, when there is one.
    ///
    /// ```
    /// # use toolnexus::assess::parse_examples;
    /// # let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("q", "?")])?;
    /// let e = parse_examples("[]\n", "x.jsonl", &qs).unwrap_err();
    /// assert_eq!(e.path().unwrap().to_str(), Some("x.jsonl"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> Option<&Path> {
        self.0.path.as_deref()
    }

    /// The 1-based line, when the error is about one.
    ///
    /// ```
    /// # use toolnexus::assess::parse_examples;
    /// # let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("q", "?")])?;
    /// let e = parse_examples("# a comment\n{}\n", "x.jsonl", &qs).unwrap_err();
    /// assert_eq!(e.line(), Some(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn line(&self) -> Option<usize> {
        self.0.line
    }

    /// The 1-based column within the line, when known.
    ///
    /// ```
    /// # use toolnexus::assess::parse_examples;
    /// # let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("q", "?")])?;
    /// let e = parse_examples("{\"state\": 1, \"labels\": {\"q\": 3}}\n", "x.jsonl", &qs).unwrap_err();
    /// assert_eq!(e.column(), Some(25));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn column(&self) -> Option<usize> {
        self.0.column
    }

    /// The question key the error is about, when it is about one.
    ///
    /// ```
    /// # use toolnexus::assess::parse_examples;
    /// # let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("q", "?")])?;
    /// let e = parse_examples("{\"state\": 1, \"labels\": {\"r\": true}}\n", "x.jsonl", &qs).unwrap_err();
    /// assert_eq!(e.key(), Some("r"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn key(&self) -> Option<&str> {
        self.0.key.as_ref().map(|(_, k)| k.as_str())
    }

    /// The message without the location prefix.
    ///
    /// ```
    /// # use toolnexus::assess::parse_examples;
    /// # let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("q", "?")])?;
    /// let e = parse_examples("{\"labels\": {\"q\": true}}\n", "x.jsonl", &qs).unwrap_err();
    /// assert_eq!(e.message(), "no \"state\"");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn message(&self) -> &str {
        &self.0.message
    }
}

impl fmt::Display for AssessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = &self.0.path {
            write!(f, "{}", p.display())?;
            if let Some(l) = self.0.line {
                write!(f, ":{l}")?;
                if let Some(c) = self.0.column {
                    write!(f, ":{c}")?;
                }
            }
            f.write_str(": ")?;
        }
        if let Some((role, k)) = &self.0.key {
            write!(f, "{role} {k:?}: ")?;
        }
        f.write_str(&self.0.message)
    }
}

impl fmt::Debug for AssessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AssessError")
            .field("kind", &self.0.kind)
            .field("message", &self.to_string())
            .finish()
    }
}

impl std::error::Error for AssessError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0
            .source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}
