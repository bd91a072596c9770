//! The answers a file holds, row by row, for comparing two runs without
//! labels ([`drift`](super::drift())): an assess run file (rows named by id)
//! or a batch out file (rows named by the input line they answer), told apart
//! by the first line.

use std::path::Path;

use serde_json::Value;

use super::drift::Answered;
use super::error::{AssessError, AssessErrorKind};
use super::out::{LineFault, OutError, OutFile};
use super::run::{Outcome, RUN_FORMAT, Run};

/// Which of the two files of answers a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswersKind {
    /// An assess run file: rows pair by id.
    Run,
    /// A batch out file (or a header-less `batch --out -` stream): rows pair
    /// by input line.
    Batch,
}

impl AnswersKind {
    /// The kind a file's first line says, if either.
    ///
    /// ```
    /// use toolnexus::assess::AnswersKind;
    /// assert_eq!(AnswersKind::of(r#"{"toolnexus":"batch","version":1}"#), Some(AnswersKind::Batch));
    /// assert_eq!(AnswersKind::of(r#"{"line":1,"error":"x"}"#), Some(AnswersKind::Batch));
    /// assert_eq!(AnswersKind::of("{}"), None);
    /// ```
    pub fn of(first_line: &str) -> Option<AnswersKind> {
        let head: Value = serde_json::from_str(crate::classifier::strip_bom(first_line)).ok()?;
        if head.get("format").and_then(Value::as_str) == Some(RUN_FORMAT) {
            return Some(AnswersKind::Run);
        }
        let batch = head.get("toolnexus").and_then(Value::as_str) == Some("batch");
        (batch || head.get("line").is_some()).then_some(AnswersKind::Batch)
    }

    /// How messages name it: `an assess run file`, `a batch out file`.
    pub fn describe(self) -> &'static str {
        match self {
            AnswersKind::Run => "an assess run file",
            AnswersKind::Batch => "a batch out file",
        }
    }

    /// What pairs its rows with another file's: `id` or `line`.
    pub fn paired_by(self) -> &'static str {
        match self {
            AnswersKind::Run => "id",
            AnswersKind::Batch => "line",
        }
    }
}

/// The answers of one file.
#[derive(Debug)]
pub struct Answers {
    /// What the file is.
    pub kind: AnswersKind,
    /// Its rows, in file order: run rows named by id, batch lines `line N`.
    pub rows: Vec<Answered>,
    /// A batch header's `sha256:` of the states file it was written from.
    pub states: Option<String>,
    /// The line of a torn final line (an interrupted run's), left out.
    pub torn_line: Option<usize>,
}

/// Reads the answers of the run file or batch out file `text` (read from
/// `path`), naming the line of every fault.
///
/// ```
/// use toolnexus::assess::{AnswersKind, read_answers};
/// let text = "{\"line\":1,\"error\":\"timeout\"}\n";
/// let answers = read_answers(text, "out.jsonl".as_ref())?;
/// assert_eq!(answers.kind, AnswersKind::Batch);
/// assert_eq!(answers.rows[0].id, "line 1");
/// # Ok::<(), toolnexus::assess::AssessError>(())
/// ```
pub fn read_answers(text: &str, path: &Path) -> Result<Answers, AssessError> {
    let first = text.lines().next().unwrap_or("");
    match AnswersKind::of(first) {
        Some(AnswersKind::Run) => {
            let run = Run::parse(text, path)?;
            let rows = run
                .rows
                .into_iter()
                .map(|r| match r.outcome {
                    Outcome::Decided(d) => Answered::decided(r.id, d),
                    Outcome::Failed { kind, message } => {
                        Answered::failed(r.id, format!("{kind}: {message}"))
                    }
                })
                .collect();
            Ok(Answers {
                kind: AnswersKind::Run,
                rows,
                states: None,
                torn_line: run.torn_line,
            })
        }
        Some(AnswersKind::Batch) => read_batch(text, path),
        None => Err(AssessError::new(
            AssessErrorKind::Mismatch,
            format!(
                "neither an assess run file (a {RUN_FORMAT:?} header) nor a batch out file (a {{\"toolnexus\":\"batch\"}} header, or {{\"line\":n,…}} lines)"
            ),
        )
        .at_path(path)
        .at(1, None)),
    }
}

/// A batch out file's result lines (the out file's reader), named by the
/// input line each answers.
fn read_batch(text: &str, path: &Path) -> Result<Answers, AssessError> {
    let at_line = |at: usize, kind, message: String| {
        AssessError::new(kind, message).at_path(path).at(at, None)
    };
    let out = OutFile::parse(text, path).map_err(|e| match e {
        OutError::BadLine { at, fault, .. } => match fault {
            LineFault::NotJson(e) => at_line(
                at,
                AssessErrorKind::Syntax,
                format!("not JSON at column {}: {e}", e.column()),
            ),
            LineFault::NoLineNumber => at_line(
                at,
                AssessErrorKind::Invalid,
                "a result line has a positive whole \"line\"".into(),
            ),
            _ => at_line(
                at,
                AssessErrorKind::Invalid,
                "a result line holds exactly one of \"decision\" and \"error\"".into(),
            ),
        },
        e => AssessError::new(AssessErrorKind::Invalid, e.to_string()),
    })?;
    let mut rows = Vec::with_capacity(out.lines.len());
    for l in &out.lines {
        let id = format!("line {}", l.line);
        let row = match l.decision() {
            Some(d) => Answered::decided(
                id,
                d.map_err(|e| {
                    at_line(
                        l.at,
                        AssessErrorKind::Invalid,
                        format!("decision: {}", e.detail()),
                    )
                })?,
            ),
            None => {
                let e = &l.value()["error"];
                Answered::failed(id, e.as_str().map_or_else(|| e.to_string(), str::to_string))
            }
        };
        rows.push(row);
    }
    Ok(Answers {
        kind: AnswersKind::Batch,
        rows,
        states: out.header.and_then(|h| h.fingerprint).map(|f| f.states),
        torn_line: out.torn_line,
    })
}
