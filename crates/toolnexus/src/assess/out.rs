//! The batch out file: whose it is, what it answers, who is writing it. The
//! format `toolnexus batch` writes, beside [`Run`](super::Run)'s run file;
//! [`OutFile`] reads one, [`open`] opens one for a run to resume.
//!
//! A regular out file starts with one header line,
//! `{"toolnexus":"batch","version":1,"fingerprint":{"states":"sha256:…","questions":"sha256:…","style":"…","model":"…","stack":"…"}}`,
//! then one result line per input line it answers,
//! `{"line":n,"decision":{…}}` or `{"line":n,"error":"…"}` (a decision line
//! also carries `"cost"` and `"shape"`, and may carry `"verdicts"` and
//! `"cached":true`). Each line is written in one write, newline included, so
//! a kill can tear only the final line. A stream (standard output, a FIFO)
//! gets no header.
//!
//! [`open`] locks the file (an exclusive advisory lock held until the run
//! ends), so a second run on it stops at once. The header is what lets a run
//! touch the file at all:
//!
//! - absent or zero bytes: a fresh file; the header is written first;
//! - anything else without our header (a one-line note without a newline,
//!   blank lines, another program's JSON, an out file of an older version) is
//!   refused and left byte for byte as it was, restart or not;
//! - our header with another [`Fingerprint`] (the states file's bytes, the
//!   canonical questions, the style, the model, or what answers beneath the
//!   style — `stack`: `plain`, or the names of the classifier's fingerprint
//!   parts (calibration, a cascade's student, a tape's contents, …) and one
//!   SHA-256 over them — changed) is refused naming what changed
//!   ([`OutError::Changed`]), unless the run restarts it; a header written
//!   before `stack` was recorded resumes with a [`Note::NoStack`];
//! - our header with this fingerprint resumes: a torn final line is
//!   truncated, and a rerun of the errors first replaces the file,
//!   atomically (a temporary file beside it, then a rename), by one without
//!   its error lines.
//!
//! A path that is not a regular file (`-` for standard output,
//! `/dev/stdout`, a FIFO, `/dev/full`) is a stream: never read, truncated or
//! locked, and given no header.

mod resume;
#[cfg(test)]
mod tests;

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::canonical::canonical_json;
use crate::classifier::{ClassifierError, ClassifierUsage, Decision, Questions, questions_wire};
use crate::cost::{Cost, Shape};

pub use resume::{Note, Opened, Plan, Sink, already_done, open};

/// The version of the out file format the header names.
pub const VERSION: u64 = 1;

/// What a run answers: the out file is resumed only by a run with the same one.
///
/// ```
/// use toolnexus::assess::out::Fingerprint;
/// use toolnexus::judge::{noul, questions};
///
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// let stack = toolnexus::classifier::Fingerprint::new("tape");
/// let f = Fingerprint::new(b"{}\n", &qs, "tape", "rule-1", &stack);
/// assert!(f.header().starts_with(r#"{"toolnexus":"batch","version":1,"fingerprint":{"states":"sha256:"#));
/// assert!(f.header().ends_with("\"stack\":\"plain\"}}\n"));
/// let other = Fingerprint::new(b"{}\n{}\n", &qs, "tape", "rule-1", &stack);
/// assert_eq!(f.changes(&other).len(), 1);
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    /// `sha256:` of the states file's bytes.
    pub states: String,
    /// `sha256:` of the questions' canonical wire JSON.
    pub questions: String,
    /// The style decisions come from (`systemone`, `tape`, …).
    pub style: String,
    /// The model the style asks for.
    pub model: String,
    /// What answers beneath the style's name: `plain`, or the names of the
    /// layers and engine settings that can change an answer (calibration, a
    /// cascade's student, a tape's contents, …) and one SHA-256 over the
    /// classifier's fingerprint parts (`calibration sha256:…`). `None` in a
    /// header written before out files recorded it.
    pub stack: Option<String>,
}

impl Fingerprint {
    /// The fingerprint of a run over these states (the file's bytes), these
    /// questions, this style and model, and this classifier stack.
    ///
    /// ```
    /// use toolnexus::assess::out::Fingerprint;
    /// let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("spam", "Spam?")])?;
    /// let f = Fingerprint::new(b"", &qs, "systemone", "jev-1", &toolnexus::classifier::Fingerprint::new("https://x"));
    /// assert_eq!(f.states, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    /// assert_eq!(f.stack.as_deref(), Some("plain"));
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn new(
        states: &[u8],
        questions: &Questions,
        style: &str,
        model: &str,
        stack: &crate::classifier::Fingerprint,
    ) -> Fingerprint {
        let canonical = canonical_json(&questions_wire(questions));
        Fingerprint {
            states: crate::classifier::Fingerprint::digest(states),
            questions: crate::classifier::Fingerprint::digest(canonical.as_bytes()),
            style: style.to_string(),
            model: model.to_string(),
            stack: Some(stack_text(stack)),
        }
    }

    /// The header line, newline included.
    ///
    /// ```
    /// # let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("spam", "Spam?")])?;
    /// # let f = toolnexus::assess::out::Fingerprint::new(b"", &qs, "tape", "m", &toolnexus::classifier::Fingerprint::new("tape"));
    /// let line = f.header();
    /// assert!(line.ends_with("}}\n") && line.matches('\n').count() == 1);
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn header(&self) -> String {
        let stack = self
            .stack
            .as_deref()
            .map(|s| format!(",\"stack\":{}", Value::from(s)))
            .unwrap_or_default();
        format!(
            "{{\"toolnexus\":\"batch\",\"version\":{VERSION},\"fingerprint\":{{\"states\":{},\"questions\":{},\"style\":{},\"model\":{}{stack}}}}}\n",
            Value::from(self.states.as_str()),
            Value::from(self.questions.as_str()),
            Value::from(self.style.as_str()),
            Value::from(self.model.as_str()),
        )
    }

    /// The fingerprint a header's `"fingerprint"` object holds.
    fn from_value(v: &Value) -> Option<Fingerprint> {
        let field = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        Some(Fingerprint {
            states: field("states")?,
            questions: field("questions")?,
            style: field("style")?,
            model: field("model")?,
            stack: field("stack"),
        })
    }

    /// What differs from `now`; empty when nothing does. A `stack` only one
    /// side recorded is no change: it could not be checked.
    ///
    /// ```
    /// use toolnexus::assess::out::{Change, Fingerprint};
    /// # let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("spam", "Spam?")])?;
    /// # let stack = toolnexus::classifier::Fingerprint::new("tape");
    /// let then = Fingerprint::new(b"a\n", &qs, "tape", "m", &stack);
    /// let now = Fingerprint { style: "systemone".into(), ..then.clone() };
    /// let changes = then.changes(&now);
    /// assert!(matches!(&changes[..], [Change::Style { .. }]));
    /// assert_eq!(changes[0].to_string(), "the style changed (tape then, systemone now)");
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn changes(&self, now: &Fingerprint) -> Vec<Change> {
        let mut out = Vec::new();
        if self.states != now.states {
            out.push(Change::States {
                then: self.states.clone(),
                now: now.states.clone(),
            });
        }
        if self.questions != now.questions {
            out.push(Change::Questions);
        }
        if self.style != now.style {
            out.push(Change::Style {
                then: self.style.clone(),
                now: now.style.clone(),
            });
        }
        if self.model != now.model {
            out.push(Change::Model {
                then: self.model.clone(),
                now: now.model.clone(),
            });
        }
        if let (Some(then), Some(cur)) = (&self.stack, &now.stack)
            && then != cur
        {
            out.push(Change::Stack {
                then: then.clone(),
                now: cur.clone(),
            });
        }
        out
    }
}

/// One way an out file's fingerprint differs from a run's.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// The states file's bytes (both `sha256:` digests).
    States {
        /// The file's.
        then: String,
        /// The run's.
        now: String,
    },
    /// The canonical questions.
    Questions,
    /// The style.
    Style {
        /// The file's.
        then: String,
        /// The run's.
        now: String,
    },
    /// The model asked for.
    Model {
        /// The file's.
        then: String,
        /// The run's.
        now: String,
    },
    /// What answers beneath the style (the header's `stack`).
    Stack {
        /// The file's.
        then: String,
        /// The run's.
        now: String,
    },
}

impl Change {
    /// A digest cut to `sha256:` and 12 hex digits, as a change shows it.
    fn short(h: &str) -> String {
        h.chars().take(19).collect()
    }

    /// A stack cut to its names and 12 hex digits of its digest.
    fn short_stack(s: &str) -> String {
        match s.rsplit_once(" sha256:") {
            Some((names, hash)) => format!("{names} sha256:{}…", &hash[..hash.len().min(12)]),
            None => s.to_string(),
        }
    }
}

/// `the style changed (tape then, systemone now)`, with digests cut short.
impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::States { then, now } => write!(
                f,
                "the states file changed ({}… then, {}… now)",
                Change::short(then),
                Change::short(now)
            ),
            Change::Questions => f.write_str("the questions changed"),
            Change::Style { then, now } => {
                write!(f, "the style changed ({then} then, {now} now)")
            }
            Change::Model { then, now } => {
                write!(f, "the model changed ({then} then, {now} now)")
            }
            Change::Stack { then, now } => write!(
                f,
                "what answers beneath the style changed ({} then, {} now)",
                Change::short_stack(then),
                Change::short_stack(now)
            ),
        }
    }
}

/// A stack's fingerprint as an out file's header records it: `plain`, or the
/// names of its parts and one SHA-256 over them (the origin, such as a
/// System One endpoint, is left out: the same model at another address
/// answers the same).
fn stack_text(stack: &crate::classifier::Fingerprint) -> String {
    if stack.is_plain() {
        return "plain".to_string();
    }
    let mut names: Vec<&str> = Vec::new();
    let mut all = String::new();
    for (layer, value) in stack.parts() {
        if !names.contains(&layer.as_str()) {
            names.push(layer);
        }
        all.push_str(&format!(
            "{}:{layer}={}:{value}\n",
            layer.len(),
            value.len()
        ));
    }
    format!(
        "{} {}",
        names.join("+"),
        crate::classifier::Fingerprint::digest(all)
    )
}

/// What the file operation that failed was doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum IoStep {
    /// Opening it.
    Open,
    /// Reading it.
    Read,
    /// Writing the header.
    Write,
    /// Taking its lock.
    Lock,
    /// Emptying it to start over.
    StartOver,
    /// Cutting a torn final line off.
    Truncate,
}

/// `open`, `read`, `write`, `lock`, `start over`, `truncate a torn final line`.
impl fmt::Display for IoStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IoStep::Open => "open",
            IoStep::Read => "read",
            IoStep::Write => "write",
            IoStep::Lock => "lock",
            IoStep::StartOver => "start over",
            IoStep::Truncate => "truncate a torn final line",
        })
    }
}

/// Why a line of an out file is not a result line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LineFault {
    /// Not JSON.
    #[error("invalid JSON at line {}, column {}: {}", .0.line(), .0.column(), json_what(.0))]
    NotJson(#[source] serde_json::Error),
    /// No positive whole `"line"` number.
    #[error("no \"line\" number")]
    NoLineNumber,
    /// Neither a `"decision"` nor an `"error"`.
    #[error("neither \"decision\" nor \"error\"")]
    NoOutcome,
    /// Both a `"decision"` and an `"error"`.
    #[error("both \"decision\" and \"error\"")]
    BothOutcomes,
}

/// What a serde_json error says, without its ` at line L column C`.
fn json_what(e: &serde_json::Error) -> String {
    let full = e.to_string();
    match full.rsplit_once(" at line ") {
        Some((what, _)) => what.to_string(),
        None => full,
    }
}

/// `no space left on device (ENOSPC)` for a full disk, else the error as the
/// OS says it: how every out file error names its cause.
///
/// ```
/// let full = std::io::Error::from(std::io::ErrorKind::StorageFull);
/// assert_eq!(toolnexus::assess::out::cause(&full), "no space left on device (ENOSPC)");
/// ```
pub fn cause(e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::StorageFull {
        "no space left on device (ENOSPC)".to_string()
    } else {
        e.to_string()
    }
}

/// A failure opening, reading or resuming an out file. Each names the path
/// as it was given; a refusal leaves the file byte for byte as it was.
///
/// ```
/// use toolnexus::assess::out::{OutError, OutFile};
///
/// let e = OutFile::parse("{\"line\":1}\n", "out.jsonl").unwrap_err();
/// assert!(matches!(e, OutError::BadLine { at: 1, .. }));
/// assert_eq!(e.to_string(), "out.jsonl: line 1 is not a batch result line (neither \"decision\" nor \"error\")");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutError {
    /// A file operation failed.
    #[error("{}: cannot {step}: {}", .path.display(), cause(.source))]
    Io {
        /// The out file.
        path: PathBuf,
        /// What was being done.
        step: IoStep,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The atomic rewrite without error lines failed; the file is unchanged.
    #[error("{}: cannot rewrite it without its error lines ({step} {}): {}; the file is unchanged", .path.display(), .temp.display(), cause(.source))]
    Rewrite {
        /// The out file.
        path: PathBuf,
        /// `creating`, `locking`, `writing`, `syncing` or `renaming`.
        step: &'static str,
        /// The temporary file beside it.
        temp: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// Another run holds the file's lock.
    #[error("{}: another batch is writing to it (it holds the file's lock)", .path.display())]
    Busy {
        /// The out file.
        path: PathBuf,
    },
    /// The path kept being replaced while it was opened.
    #[error("{}: the file keeps being replaced while it is opened; is another program writing it?", .path.display())]
    Replaced {
        /// The out file.
        path: PathBuf,
    },
    /// The path is a directory.
    #[error("{}: is a directory", .path.display())]
    Directory {
        /// The out file.
        path: PathBuf,
    },
    /// The path is a stream; it cannot be restarted or rewritten.
    #[error("{}: is a stream, not a file a run can resume or rewrite", .path.display())]
    Stream {
        /// The out file.
        path: PathBuf,
    },
    /// The file is not UTF-8 text.
    #[error("{}: not UTF-8 text (an invalid byte at offset {offset})", .path.display())]
    NotText {
        /// The out file.
        path: PathBuf,
        /// The byte offset of the first invalid byte.
        offset: usize,
    },
    /// Result lines without a header: an out file of an earlier version.
    #[error("{}: is a batch out file without a header (written by an earlier version), so the inputs it answers cannot be checked", .path.display())]
    Legacy {
        /// The out file.
        path: PathBuf,
    },
    /// Not a batch out file at all.
    #[error("{}: is not a toolnexus batch out file (line 1 is not a batch result line or header)", .path.display())]
    Foreign {
        /// The out file.
        path: PathBuf,
    },
    /// Another toolnexus file.
    #[error("{}: is another toolnexus file, not a batch out file", .path.display())]
    OtherFile {
        /// The out file.
        path: PathBuf,
    },
    /// A version of the format this one does not read.
    #[error("{}: is a batch out file of format version {}, this version reads {VERSION}", .path.display(), .version.map_or_else(|| "(none)".to_string(), |v| v.to_string()))]
    Version {
        /// The out file.
        path: PathBuf,
        /// The version the header names, if any.
        version: Option<u64>,
    },
    /// A header without a complete fingerprint.
    #[error("{}: line 1 is a batch header without a complete fingerprint", .path.display())]
    Incomplete {
        /// The out file.
        path: PathBuf,
    },
    /// The file answers other inputs.
    #[error("{}: answers other inputs: {}", .path.display(), join(.changes))]
    Changed {
        /// The out file.
        path: PathBuf,
        /// What changed.
        changes: Vec<Change>,
    },
    /// A line that is not a result line.
    #[error("{}: line {at} is not a batch result line ({fault})", .path.display())]
    BadLine {
        /// The out file.
        path: PathBuf,
        /// The line of the out file (from 1).
        at: usize,
        /// What is wrong with it.
        fault: LineFault,
    },
    /// A result line answering an input line the states file does not have.
    #[error("{}: line {at} answers input line {line}, but the states file has {last_line} lines", .path.display())]
    BeyondStates {
        /// The out file.
        path: PathBuf,
        /// The line of the out file.
        at: usize,
        /// The input line it answers.
        line: usize,
        /// The states file's last line.
        last_line: usize,
    },
}

impl OutError {
    /// Whether it is the file system's failure (I/O) rather than what the
    /// file holds or how it was named.
    ///
    /// ```
    /// use toolnexus::assess::out::OutError;
    /// let e = OutError::Busy { path: "o.jsonl".into() };
    /// assert!(!e.is_io());
    /// ```
    pub fn is_io(&self) -> bool {
        matches!(
            self,
            OutError::Io { .. } | OutError::Rewrite { .. } | OutError::Replaced { .. }
        )
    }
}

/// Changes joined by `; `.
fn join(changes: &[Change]) -> String {
    changes
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// An out file read whole: its header (none for a stream's output) and its
/// result lines. A torn final line (no newline, not JSON: an interrupted
/// run's) is left out and its number kept in `torn_line`.
///
/// ```
/// use toolnexus::assess::out::OutFile;
///
/// let text = "{\"toolnexus\":\"batch\",\"version\":1,\"fingerprint\":{}}\n\
///             {\"line\":2,\"decision\":{\"model\":\"m\",\"answers\":{}}}\n\
///             {\"line\":1,\"error\":\"timed out\"}\n\
///             {\"line\":3,\"deci";
/// let out = OutFile::parse(text, "out.jsonl")?;
/// assert!(out.header.is_some());
/// assert_eq!(out.lines.len(), 2);
/// assert_eq!((out.lines[0].at, out.lines[0].line), (2, 2));
/// assert_eq!(out.lines[1].error(), Some("timed out"));
/// assert_eq!(out.torn_line, Some(4));
/// # Ok::<(), toolnexus::assess::out::OutError>(())
/// ```
#[derive(Debug, Clone)]
pub struct OutFile {
    /// The header, when the file has one.
    pub header: Option<Header>,
    /// Every result line, in file order.
    pub lines: Vec<OutLine>,
    /// The number of a torn final line left out.
    pub torn_line: Option<usize>,
}

/// An out file's header line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The format version it names.
    pub version: Option<u64>,
    /// Its fingerprint, when complete.
    pub fingerprint: Option<Fingerprint>,
}

/// One result line: the input line it answers, and what it holds.
#[derive(Debug, Clone)]
pub struct OutLine {
    /// Its line in the out file (from 1).
    pub at: usize,
    /// The input line it answers (from 1).
    pub line: usize,
    value: Value,
}

impl OutLine {
    /// The whole line as JSON.
    ///
    /// ```
    /// # let out = toolnexus::assess::out::OutFile::parse("{\"line\":1,\"error\":\"x\"}\n", "o")?;
    /// assert_eq!(out.lines[0].value()["line"], 1);
    /// # Ok::<(), toolnexus::assess::out::OutError>(())
    /// ```
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// Whether it is an error line.
    ///
    /// ```
    /// # let out = toolnexus::assess::out::OutFile::parse("{\"line\":1,\"error\":\"x\"}\n", "o")?;
    /// assert!(out.lines[0].is_error());
    /// # Ok::<(), toolnexus::assess::out::OutError>(())
    /// ```
    pub fn is_error(&self) -> bool {
        self.value.get("decision").is_none()
    }

    /// The decision as written, for a decision line.
    ///
    /// ```
    /// # let out = toolnexus::assess::out::OutFile::parse("{\"line\":1,\"decision\":{}}\n", "o")?;
    /// assert!(out.lines[0].decision_value().is_some());
    /// # Ok::<(), toolnexus::assess::out::OutError>(())
    /// ```
    pub fn decision_value(&self) -> Option<&Value> {
        self.value.get("decision")
    }

    /// The decision decoded, for a decision line; a decision that does not
    /// decode is an error.
    ///
    /// ```
    /// let line = r#"{"line":1,"decision":{"model":"m","answers":{"spam":{"type":"noul","noul":0.9}}}}"#;
    /// let out = toolnexus::assess::out::OutFile::parse(line, "o")?;
    /// let d = out.lines[0].decision().unwrap()?;
    /// assert_eq!(d.noul("spam")?.noul, 0.9);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn decision(&self) -> Option<Result<Decision, ClassifierError>> {
        self.decision_value().map(Decision::from_value)
    }

    /// The error's text, for an error line.
    ///
    /// ```
    /// # let out = toolnexus::assess::out::OutFile::parse("{\"line\":1,\"error\":\"x\"}\n", "o")?;
    /// assert_eq!(out.lines[0].error(), Some("x"));
    /// # Ok::<(), toolnexus::assess::out::OutError>(())
    /// ```
    pub fn error(&self) -> Option<&str> {
        self.value.get("error").and_then(Value::as_str)
    }

    /// Whether the answer came from a cache (`"cached":true`).
    ///
    /// ```
    /// # let out = toolnexus::assess::out::OutFile::parse("{\"line\":1,\"decision\":{},\"cached\":true}\n", "o")?;
    /// assert!(out.lines[0].cached());
    /// # Ok::<(), toolnexus::assess::out::OutError>(())
    /// ```
    pub fn cached(&self) -> bool {
        self.value.get("cached").and_then(Value::as_bool) == Some(true)
    }

    /// What the call cost and where that came from, as the line records it
    /// (lines written before lines carried it have none).
    ///
    /// ```
    /// use toolnexus::cost::CostSource;
    /// # let out = toolnexus::assess::out::OutFile::parse("{\"line\":1,\"decision\":{},\"cost\":{\"usd\":0,\"source\":\"local\"}}\n", "o")?;
    /// assert_eq!(out.lines[0].cost().and_then(|c| c.source), Some(CostSource::Local));
    /// # Ok::<(), toolnexus::assess::out::OutError>(())
    /// ```
    pub fn cost(&self) -> Option<Cost> {
        self.value.get("cost").and_then(Cost::from_value)
    }

    /// The request's shape (what `cost fit` fits on), when recorded.
    ///
    /// ```
    /// # let out = toolnexus::assess::out::OutFile::parse("{\"line\":1,\"decision\":{}}\n", "o")?;
    /// assert!(out.lines[0].shape().is_none());
    /// # Ok::<(), toolnexus::assess::out::OutError>(())
    /// ```
    pub fn shape(&self) -> Option<Shape> {
        self.value.get("shape").and_then(Shape::from_value)
    }

    /// The usage the decision reported (missing counts read as 0).
    ///
    /// ```
    /// let line = r#"{"line":1,"decision":{"usage":{"input_tokens":120,"output_tokens":3}}}"#;
    /// # let out = toolnexus::assess::out::OutFile::parse(line, "o")?;
    /// assert_eq!(out.lines[0].usage().input_tokens, 120);
    /// # Ok::<(), toolnexus::assess::out::OutError>(())
    /// ```
    pub fn usage(&self) -> ClassifierUsage {
        let u = self.decision_value().and_then(|d| d.get("usage"));
        let n = |k: &str| {
            u.and_then(|u| u.get(k))
                .and_then(Value::as_i64)
                .unwrap_or(0)
        };
        ClassifierUsage {
            input_tokens: n("input_tokens"),
            output_tokens: n("output_tokens"),
            cost: u
                .and_then(|u| u.get("cost"))
                .and_then(Value::as_f64)
                .filter(|c| c.is_finite()),
        }
    }

    /// What the line counts as spent: its `"cost"` (a cache hit's
    /// `"cached":true` costs nothing), or for a line without one the cost its
    /// usage reports.
    ///
    /// ```
    /// # let out = toolnexus::assess::out::OutFile::parse("{\"line\":1,\"decision\":{},\"cached\":true}\n", "o")?;
    /// assert_eq!(out.lines[0].spent(), toolnexus::cost::Cost::cache_hit());
    /// # Ok::<(), toolnexus::assess::out::OutError>(())
    /// ```
    pub fn spent(&self) -> Cost {
        if self.cached() {
            Cost::cache_hit()
        } else {
            self.cost().unwrap_or_else(|| Cost::of_usage(&self.usage()))
        }
    }
}

/// One line's JSON as a result line: its input line number and whether it
/// is an error line.
fn parse_line(raw: &[u8]) -> Result<(Value, usize), LineFault> {
    let v: Value = serde_json::from_slice(raw).map_err(LineFault::NotJson)?;
    let n = v
        .get("line")
        .and_then(Value::as_u64)
        .filter(|n| *n >= 1)
        .ok_or(LineFault::NoLineNumber)? as usize;
    match (v.get("decision"), v.get("error")) {
        (Some(_), Some(_)) => Err(LineFault::BothOutcomes),
        (None, None) => Err(LineFault::NoOutcome),
        _ => Ok((v, n)),
    }
}

/// An out file's result lines read one at a time: an iterator of
/// `Result<OutLine, OutError>` in file order, with [`OutFile::parse`]'s
/// rules and errors (a line that is not UTF-8 is [`OutError::NotText`] when
/// it is reached), holding one line.
///
/// ```
/// use toolnexus::assess::out::OutLines;
/// let path = std::env::temp_dir().join(format!("toolnexus-doc-out-lines-{}.jsonl", std::process::id()));
/// std::fs::write(&path, "{\"toolnexus\":\"batch\",\"version\":1}\n{\"line\":1,\"error\":\"x\"}\n{\"line\":2,\"deci")?;
/// let mut lines = OutLines::open(&path)?;
/// assert_eq!(lines.header().unwrap().version, Some(1));
/// assert_eq!(lines.next().unwrap()?.error(), Some("x"));
/// assert!(lines.next().is_none());
/// assert_eq!(lines.torn_line(), Some(3));
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct OutLines {
    input: std::io::BufReader<std::fs::File>,
    path: PathBuf,
    header: Option<Header>,
    /// The first line, when it is not a header (read ahead to tell).
    first: Option<Vec<u8>>,
    buf: Vec<u8>,
    at: usize,
    offset: usize,
    torn_line: Option<usize>,
    ended: bool,
}

impl OutLines {
    /// Opens an out file and reads its header, if it has one.
    pub fn open(path: impl AsRef<Path>) -> Result<OutLines, OutError> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|source| OutError::Io {
            path: path.to_path_buf(),
            step: IoStep::Read,
            source,
        })?;
        let mut lines = OutLines {
            input: std::io::BufReader::with_capacity(1 << 16, file),
            path: path.to_path_buf(),
            header: None,
            first: None,
            buf: Vec::new(),
            at: 0,
            offset: 0,
            torn_line: None,
            ended: false,
        };
        if !lines.read_raw()? {
            return Ok(lines);
        }
        let first = String::from_utf8_lossy(&lines.buf).into_owned();
        let text = first.trim_end_matches(['\n', '\r']);
        let head: Option<Value> =
            serde_json::from_str(text.strip_prefix('\u{feff}').unwrap_or(text)).ok();
        match head.as_ref().and_then(|h| h.get("toolnexus")) {
            Some(t) if t.as_str() == Some("batch") => {
                lines.header = head.as_ref().map(|h| Header {
                    version: h.get("version").and_then(Value::as_u64),
                    fingerprint: h.get("fingerprint").and_then(Fingerprint::from_value),
                });
            }
            Some(_) => {
                return Err(OutError::OtherFile {
                    path: path.to_path_buf(),
                });
            }
            None => lines.first = Some(lines.buf.clone()),
        }
        Ok(lines)
    }

    /// The header, when the file has one.
    pub fn header(&self) -> Option<&Header> {
        self.header.as_ref()
    }

    /// The torn final line left out, once the lines are read to the end.
    pub fn torn_line(&self) -> Option<usize> {
        self.torn_line
    }

    /// Reads the next raw line (its newline kept) into `buf`, checked to be
    /// text; `false` at the end.
    fn read_raw(&mut self) -> Result<bool, OutError> {
        use std::io::BufRead as _;
        self.buf.clear();
        let n = self
            .input
            .read_until(b'\n', &mut self.buf)
            .map_err(|source| OutError::Io {
                path: self.path.clone(),
                step: IoStep::Read,
                source,
            })?;
        if n == 0 {
            return Ok(false);
        }
        self.at += 1;
        let start = self.offset;
        self.offset += n;
        match std::str::from_utf8(&self.buf) {
            Ok(_) => Ok(true),
            Err(e) => Err(OutError::NotText {
                path: self.path.clone(),
                offset: start + e.valid_up_to(),
            }),
        }
    }

    fn next_line(&mut self) -> Result<Option<OutLine>, OutError> {
        loop {
            match self.first.take() {
                Some(first) => self.buf = first,
                None if self.read_raw()? => {}
                None => return Ok(None),
            }
            let raw = std::str::from_utf8(&self.buf).unwrap_or_default();
            if raw.trim().is_empty() {
                continue;
            }
            let line = raw.trim_end();
            let line = line.strip_prefix('\u{feff}').unwrap_or(line);
            let at = self.at;
            return match parse_line(line.as_bytes()) {
                Ok((value, line)) => Ok(Some(OutLine { at, line, value })),
                Err(LineFault::NotJson(_)) if !raw.ends_with('\n') => {
                    self.torn_line = Some(at);
                    Ok(None)
                }
                Err(fault) => Err(OutError::BadLine {
                    path: self.path.clone(),
                    at,
                    fault,
                }),
            };
        }
    }
}

impl Iterator for OutLines {
    type Item = Result<OutLine, OutError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.ended {
            return None;
        }
        let next = self.next_line().transpose();
        self.ended = !matches!(next, Some(Ok(_)));
        next
    }
}

impl OutFile {
    /// Reads an out file (see [`OutFile::parse`]).
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("toolnexus-doc-out-{}.jsonl", std::process::id()));
    /// std::fs::write(&path, "{\"line\":1,\"error\":\"x\"}\n")?;
    /// let out = toolnexus::assess::out::OutFile::read(&path)?;
    /// assert!(out.header.is_none() && out.lines.len() == 1);
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read(path: impl AsRef<Path>) -> Result<OutFile, OutError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| OutError::Io {
            path: path.to_path_buf(),
            step: IoStep::Read,
            source,
        })?;
        let text = String::from_utf8(bytes).map_err(|e| OutError::NotText {
            path: path.to_path_buf(),
            offset: e.utf8_error().valid_up_to(),
        })?;
        OutFile::parse(&text, path)
    }

    /// Reads an out file's text; `source` names it in errors. A header-less
    /// file (a stream's output) reads alike; blank lines are skipped and a
    /// byte-order mark at the start of a line is ignored. The header's
    /// version and fingerprint are not checked here: [`open`] does, before a
    /// run resumes a file.
    ///
    /// ```
    /// use toolnexus::assess::out::{LineFault, OutError, OutFile};
    ///
    /// let e = OutFile::parse("{\"line\":0,\"error\":\"x\"}\n", "o.jsonl").unwrap_err();
    /// assert!(matches!(e, OutError::BadLine { fault: LineFault::NoLineNumber, .. }));
    /// ```
    pub fn parse(text: &str, source: impl AsRef<Path>) -> Result<OutFile, OutError> {
        let path = source.as_ref();
        let strip = |l: &str| l.strip_prefix('\u{feff}').unwrap_or(l).to_string();
        let first = text.lines().next().map(strip).unwrap_or_default();
        let head: Option<Value> = serde_json::from_str(&first).ok();
        let header = match head.as_ref().and_then(|h| h.get("toolnexus")) {
            Some(t) if t.as_str() == Some("batch") => head.as_ref().map(|h| Header {
                version: h.get("version").and_then(Value::as_u64),
                fingerprint: h.get("fingerprint").and_then(Fingerprint::from_value),
            }),
            Some(_) => {
                return Err(OutError::OtherFile {
                    path: path.to_path_buf(),
                });
            }
            None => None,
        };
        let lines: Vec<(usize, &str)> = text
            .split_inclusive('\n')
            .enumerate()
            .skip(usize::from(header.is_some()))
            .map(|(i, l)| (i + 1, l))
            .filter(|(_, l)| !l.trim().is_empty())
            .collect();
        let mut out = OutFile {
            header,
            lines: Vec::with_capacity(lines.len()),
            torn_line: None,
        };
        let last = lines.len();
        for (k, (at, raw)) in lines.into_iter().enumerate() {
            let line = raw.trim_end();
            let line = line.strip_prefix('\u{feff}').unwrap_or(line);
            match parse_line(line.as_bytes()) {
                Ok((value, line)) => out.lines.push(OutLine { at, line, value }),
                Err(LineFault::NotJson(_)) if k + 1 == last && !raw.ends_with('\n') => {
                    out.torn_line = Some(at);
                }
                Err(fault) => {
                    return Err(OutError::BadLine {
                        path: path.to_path_buf(),
                        at,
                        fault,
                    });
                }
            }
        }
        Ok(out)
    }
}
