//! The run file: every labelled example asked once, each outcome one JSONL line.
//!
//! Line 1 is a header naming the questions; each further line is one row:
//! `{"id", "labels", "meta"?, "state_len", "decision" | "error", "latency_ms"?, "cost"?}`,
//! where `cost` is what the call cost and where that came from
//! ([`crate::cost::Cost::to_value`]); a row without it (an older file) costs
//! what its usage reported.
//! Rows are appended and flushed as they finish, so an interrupted run loses at
//! most the rows in flight, and running again asks only the ids not yet in the
//! file. A failed evaluation is a row with an `error`, never an abort. When an id
//! appears twice, the later row wins (that is how `rerun_errors` replaces a
//! failure). Everything after `run` is a pure function of this file.

use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt as _;
use serde_json::{Map, Value};

use super::error::{AssessError, AssessErrorKind};
use super::examples::{Example, Gold, json_error_text, kind_of};
use crate::canonical::canonical_json;
use crate::classifier::{
    Classifier, Decision, EvalContext, EvalRequest, Questions, check_coherence,
    questions_from_wire, questions_wire,
};
use crate::cost::Cost;

/// The `format` of a run file's header.
///
/// ```
/// assert_eq!(toolnexus::assess::RUN_FORMAT, "toolnexus.assess-run");
/// ```
pub const RUN_FORMAT: &str = "toolnexus.assess-run";
/// The run file version this build reads and writes.
///
/// ```
/// assert_eq!(toolnexus::assess::RUN_VERSION, 1);
/// ```
pub const RUN_VERSION: u64 = 1;

/// How one example came out.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The backend answered.
    Decided(Decision),
    /// The evaluation failed; the row stays in the data.
    Failed {
        /// The error kind's name (`ErrorKind::as_str`).
        kind: String,
        /// The error's detail.
        message: String,
    },
}

/// One row of a run.
///
/// ```
/// use toolnexus::assess::{Outcome, Row};
/// let r = Row::new("a", Default::default(), Outcome::Failed { kind: "timeout".into(), message: "slow".into() });
/// assert!(r.decision().is_none());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Row {
    /// The example's id.
    pub id: String,
    /// Its gold answers.
    pub labels: BTreeMap<String, Gold>,
    /// Its meta fields.
    pub meta: Map<String, Value>,
    /// Characters in the state's canonical JSON.
    pub state_len: usize,
    /// What came back.
    pub outcome: Outcome,
    /// Wall time of the evaluation, when measured.
    pub latency_ms: Option<f64>,
    /// What the call cost and where that came from (unknown for a failed row).
    pub cost: Cost,
}

impl Row {
    /// A row built in code.
    ///
    /// ```
    /// use toolnexus::assess::{Outcome, Row};
    /// let r = Row::new("a", Default::default(), Outcome::Failed { kind: "timeout".into(), message: "slow".into() });
    /// assert_eq!(r.state_len, 0);
    /// ```
    pub fn new(id: impl Into<String>, labels: BTreeMap<String, Gold>, outcome: Outcome) -> Row {
        let cost = match &outcome {
            Outcome::Decided(d) => Cost::of_usage(&d.usage),
            Outcome::Failed { .. } => Cost::UNKNOWN,
        };
        Row {
            id: id.into(),
            labels,
            meta: Map::new(),
            state_len: 0,
            outcome,
            latency_ms: None,
            cost,
        }
    }

    /// The decision, when the row has one.
    ///
    /// ```
    /// # use toolnexus::assess::{Outcome, Row};
    /// let d = toolnexus::classifier::Decision::from_slice(br#"{"model":"m","answers":{}}"#)?;
    /// assert_eq!(Row::new("a", Default::default(), Outcome::Decided(d)).decision().unwrap().model, "m");
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn decision(&self) -> Option<&Decision> {
        match &self.outcome {
            Outcome::Decided(d) => Some(d),
            Outcome::Failed { .. } => None,
        }
    }

    fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("id".into(), Value::from(self.id.as_str()));
        m.insert(
            "labels".into(),
            Value::Object(
                self.labels
                    .iter()
                    .map(|(k, g)| (k.clone(), g.to_value()))
                    .collect(),
            ),
        );
        if !self.meta.is_empty() {
            m.insert("meta".into(), Value::Object(self.meta.clone()));
        }
        m.insert("state_len".into(), Value::from(self.state_len));
        match &self.outcome {
            Outcome::Decided(d) => {
                m.insert("decision".into(), d.to_value());
            }
            Outcome::Failed { kind, message } => {
                let mut e = Map::new();
                e.insert("kind".into(), Value::from(kind.as_str()));
                e.insert("message".into(), Value::from(message.as_str()));
                m.insert("error".into(), Value::Object(e));
            }
        }
        if let Some(ms) = self.latency_ms {
            m.insert("latency_ms".into(), Value::from(ms));
        }
        if self.decision().is_some() {
            m.insert("cost".into(), self.cost.to_value());
        }
        Value::Object(m)
    }
}

/// A whole run: the questions and one row per example.
///
/// ```
/// use toolnexus::assess::{Outcome, Row, Run};
/// use toolnexus::judge::{noul, questions};
///
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// let run = Run::new(qs, vec![Row::new("a", Default::default(), Outcome::Failed { kind: "timeout".into(), message: "slow".into() })]);
/// let text = run.to_jsonl();
/// assert_eq!(Run::parse(&text, "run.jsonl")?, run);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Run {
    /// The questions every row was asked.
    pub questions: Questions,
    /// The rows, in file order, one per id.
    pub rows: Vec<Row>,
    /// The number of a torn final line left out when the file was read (a
    /// last line cut short by a crash: no newline, not JSON); `None` when the
    /// file ended cleanly or the run was built in code.
    pub torn_line: Option<usize>,
}

impl Run {
    /// A run built in code.
    ///
    /// ```
    /// let run = toolnexus::assess::Run::new(Default::default(), Vec::new());
    /// assert!(run.rows.is_empty());
    /// ```
    pub fn new(questions: Questions, rows: Vec<Row>) -> Run {
        Run {
            questions,
            rows,
            torn_line: None,
        }
    }

    /// Reads a run file.
    ///
    /// ```no_run
    /// let run = toolnexus::assess::Run::load("run.jsonl")?;
    /// println!("{} rows", run.rows.len());
    /// # Ok::<(), toolnexus::assess::AssessError>(())
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Run, AssessError> {
        let path = path.as_ref();
        let text =
            std::fs::read_to_string(path).map_err(|e| AssessError::io(path, "cannot read", e))?;
        Run::parse(&text, path)
    }

    /// Parses a run file's text; `source` names it in errors. A last line cut
    /// short by a crash (no newline, not JSON) is left out, and its number is
    /// kept in [`Run::torn_line`] so the reader can say so. Every row is
    /// checked against the header's questions: a probability outside [0, 1],
    /// a number that is not one, or an option the question does not offer is
    /// an error naming the line.
    ///
    /// ```
    /// let e = toolnexus::assess::Run::parse("{\"format\": \"other\"}\n", "r.jsonl").unwrap_err();
    /// assert_eq!(e.to_string(), "r.jsonl:1: not a run file: \"format\" is \"other\", not \"toolnexus.assess-run\"");
    /// ```
    pub fn parse(text: &str, source: impl AsRef<Path>) -> Result<Run, AssessError> {
        let source = source.as_ref();
        parse_run(text, source).map_err(|e| e.at_path(source))
    }

    /// The file form: a header line, then one line per row.
    ///
    /// ```
    /// let run = toolnexus::assess::Run::new(Default::default(), Vec::new());
    /// assert!(run.to_jsonl().starts_with("{\"format\":\"toolnexus.assess-run\""));
    /// ```
    pub fn to_jsonl(&self) -> String {
        let mut out = header_line(&self.questions);
        for r in &self.rows {
            out.push_str(&canonical_json(&r.to_value()));
            out.push('\n');
        }
        out
    }

    /// Writes the run file atomically (a temporary file renamed over `path`).
    ///
    /// ```no_run
    /// # let run = toolnexus::assess::Run::new(Default::default(), Vec::new());
    /// run.save("run.jsonl")?;
    /// # Ok::<(), toolnexus::assess::AssessError>(())
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), AssessError> {
        super::file::save_atomic(path.as_ref(), &self.to_jsonl())
    }

    /// The responding model ids, each once, in first-seen order.
    ///
    /// ```
    /// let run = toolnexus::assess::Run::new(Default::default(), Vec::new());
    /// assert!(run.models().is_empty());
    /// ```
    pub fn models(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in &self.rows {
            if let Some(d) = r.decision()
                && !out.contains(&d.model)
            {
                out.push(d.model.clone());
            }
        }
        out
    }
}

pub(super) fn header_line(questions: &Questions) -> String {
    let mut h = Map::new();
    h.insert("format".into(), Value::from(RUN_FORMAT));
    h.insert("version".into(), Value::from(RUN_VERSION));
    h.insert("questions".into(), questions_wire(questions));
    let mut s = canonical_json(&Value::Object(h));
    s.push('\n');
    s
}

fn parse_run(text: &str, _source: &Path) -> Result<Run, AssessError> {
    let invalid =
        |line: usize, msg: String| AssessError::new(AssessErrorKind::Invalid, msg).at(line, None);
    let mut lines = text.split_inclusive('\n').enumerate();
    let Some((_, first)) = lines.next() else {
        return Err(AssessError::new(
            AssessErrorKind::Mismatch,
            "empty: a run file starts with its header line",
        ));
    };
    let questions = parse_header(first)?;
    let mut lines: Vec<(usize, &str)> = lines
        .map(|(i, raw)| (i + 1, raw))
        .filter(|(_, raw)| !raw.trim_end().is_empty())
        .collect();
    // A torn final line (no newline, not JSON): the crash this format is
    // built to survive. It is left out and its line number kept, so readers
    // can say so.
    let mut torn_line = None;
    if let Some(&(line_no, raw)) = lines.last()
        && !raw.ends_with('\n')
        && serde_json::from_str::<Value>(raw.trim_end()).is_err()
    {
        torn_line = Some(line_no);
        lines.pop();
    }
    // Rows parse independently: split the lines over the machine's cores
    // (the first error by line number wins, as a sequential read would).
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(lines.len() / 2_000 + 1);
    let chunk = lines.len().div_ceil(threads).max(1);
    let parsed: Vec<Result<Vec<Row>, AssessError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = lines
            .chunks(chunk)
            .map(|part| {
                let questions = &questions;
                scope.spawn(move || {
                    let mut rows = Vec::with_capacity(part.len());
                    for &(line_no, raw) in part {
                        let line = raw.trim_end();
                        let v: Value = match serde_json::from_str(line) {
                            Ok(v) => v,
                            Err(e) => {
                                return Err(AssessError::new(
                                    AssessErrorKind::Syntax,
                                    format!("not JSON: {}", json_error_text(&e)),
                                )
                                .at(line_no, Some(e.column())));
                            }
                        };
                        rows.push(read_row(&v, questions).map_err(|m| invalid(line_no, m))?);
                    }
                    Ok(rows)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a run file reader panicked"))
            .collect()
    });
    let mut rows: Vec<Row> = Vec::with_capacity(lines.len());
    let mut index: HashMap<String, usize> = HashMap::with_capacity(lines.len());
    for part in parsed {
        for row in part? {
            match index.get(&row.id) {
                Some(&at) => rows[at] = row,
                None => {
                    index.insert(row.id.clone(), rows.len());
                    rows.push(row);
                }
            }
        }
    }
    Ok(Run {
        questions,
        rows,
        torn_line,
    })
}

/// The questions of a run file's first line.
pub(super) fn parse_header(first: &str) -> Result<Questions, AssessError> {
    let header: Value = serde_json::from_str(first.trim_end()).map_err(|e| {
        AssessError::new(
            AssessErrorKind::Syntax,
            format!("header is not JSON: {}", json_error_text(&e)),
        )
        .at(1, Some(e.column()))
    })?;
    read_header(&header).map_err(|m| AssessError::new(AssessErrorKind::Mismatch, m).at(1, None))
}

fn read_header(h: &Value) -> Result<Questions, String> {
    let format = h.get("format").and_then(Value::as_str);
    if format != Some(RUN_FORMAT) {
        let got = h
            .get("format")
            .map_or("absent".to_string(), |v| v.to_string());
        return Err(format!(
            "not a run file: \"format\" is {got}, not {RUN_FORMAT:?}"
        ));
    }
    match h.get("version").and_then(Value::as_u64) {
        Some(RUN_VERSION) => {}
        other => {
            return Err(format!(
                "run file version {} is not supported (this build reads version {RUN_VERSION})",
                other.map_or("absent".to_string(), |v| v.to_string())
            ));
        }
    }
    let q = h.get("questions").ok_or("header has no \"questions\"")?;
    questions_from_wire(q).map_err(|e| format!("header questions: {}", e.detail()))
}

/// A number as written, anything else by its kind (a row's text may be long).
fn shown(v: &Value) -> String {
    match v {
        Value::Number(n) => n.to_string(),
        other => kind_of(other).to_string(),
    }
}

pub(super) fn read_row(v: &Value, questions: &Questions) -> Result<Row, String> {
    let o = v
        .as_object()
        .ok_or_else(|| format!("a row is a JSON object, got {}", kind_of(v)))?;
    let id = o
        .get("id")
        .and_then(Value::as_str)
        .ok_or("row has no string \"id\"")?
        .to_string();
    let mut labels = BTreeMap::new();
    if let Some(l) = o.get("labels") {
        let l = l.as_object().ok_or("\"labels\" is not an object")?;
        for (k, g) in l {
            let q = questions
                .get(k)
                .ok_or_else(|| format!("label {k:?}: no such question in the header"))?;
            labels.insert(
                k.clone(),
                Gold::parse(k, q, g).map_err(|m| format!("label {k:?}: {m}"))?,
            );
        }
    }
    let meta = match o.get("meta") {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => return Err(format!("\"meta\" is {}, not an object", kind_of(other))),
    };
    let state_len = match o.get("state_len") {
        None | Some(Value::Null) => 0,
        Some(v) => v.as_u64().ok_or_else(|| {
            format!(
                "row {id:?}: \"state_len\" is {}, not a whole number",
                shown(v)
            )
        })? as usize,
    };
    let outcome = match (o.get("decision"), o.get("error")) {
        (Some(d), None) => {
            let mut d = Decision::from_value(d)
                .map_err(|e| format!("row {id:?}: decision: {}", e.detail()))?;
            // The numbers must be what the header's questions allow: a
            // probability outside [0, 1] or an option not offered would make
            // every figure computed from this row meaningless.
            check_coherence(&mut d, questions)
                .map_err(|e| format!("row {id:?}: decision: {}", e.detail()))?;
            Outcome::Decided(d)
        }
        (None, Some(e)) => Outcome::Failed {
            kind: e
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("unknown")
                .to_string(),
            message: e
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        },
        _ => {
            return Err(format!(
                "row {id:?} needs exactly one of \"decision\" and \"error\""
            ));
        }
    };
    let latency_ms = match o.get("latency_ms") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_f64().filter(|x| *x >= 0.0).ok_or_else(|| {
            format!(
                "row {id:?}: \"latency_ms\" is {}, not a number of milliseconds",
                shown(v)
            )
        })?),
    };
    let cost = match (o.get("cost"), &outcome) {
        (_, Outcome::Failed { .. }) => Cost::UNKNOWN,
        (None, Outcome::Decided(d)) => Cost::of_usage(&d.usage),
        (Some(v), Outcome::Decided(_)) => Cost::from_value(v).ok_or_else(|| {
            format!(
                "row {id:?}: \"cost\" is {}, not {{\"usd\": …, \"source\": \"reported\"|\"priced\"|\"local\"|\"cache\"|\"unknown\"}}",
                shown(v)
            )
        })?,
    };
    Ok(Row {
        id,
        labels,
        meta,
        state_len,
        outcome,
        latency_ms,
        cost,
    })
}

/// A progress callback: `(rows done, rows to do)` after each row.
pub type Progress = Arc<dyn Fn(usize, usize) + Send + Sync>;

/// How [`run_examples`] runs.
///
/// ```
/// let o = toolnexus::assess::RunOptions::default();
/// assert_eq!(o.concurrency, 8);
/// assert!(!o.rerun_errors);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct RunOptions {
    /// Evaluations in flight at once (at least 1).
    pub concurrency: usize,
    /// Ask again the ids whose row in the file is an error.
    pub rerun_errors: bool,
    /// Called after each row is written.
    pub progress: Option<Progress>,
    /// The call name each evaluation carries (what a tape files recordings
    /// under; `None`: none).
    pub call_name: Option<String>,
    /// The budget the classifier is behind ([`budgeted`](crate::cost::budget::budgeted)),
    /// if any: once a cap is reached no example starts, and an example the
    /// budget refused gets no row (a later run asks it).
    pub budget: Option<crate::cost::budget::Budget>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            concurrency: 8,
            rerun_errors: false,
            progress: None,
            call_name: None,
            budget: None,
        }
    }
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("concurrency", &self.concurrency)
            .field("rerun_errors", &self.rerun_errors)
            .field("progress", &self.progress.is_some())
            .field("call_name", &self.call_name)
            .field("budget", &self.budget)
            .finish()
    }
}

/// Asks every example not yet in the run file at `path` and appends its row;
/// returns the whole run. A file made for other questions is refused, naming it.
///
/// ```
/// use std::collections::BTreeMap;
/// use std::sync::Arc;
/// use serde_json::json;
/// use toolnexus::assess::{run_examples, Example, Gold, RunOptions};
/// use toolnexus::classifier::*;
/// use toolnexus::judge::{noul, questions};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// let judge = create_classifier(ClassifierOptions {
///     style: ClassifierStyle::Custom,
///     evaluate: Some(Arc::new(|_ctx, _state, _qs| Box::pin(async {
///         Decision::from_value(&json!({"model": "rule", "answers": {"spam": {"type": "noul", "noul": 0.9}}}))
///             .map_err(|e| e.to_string())
///     }))),
///     ..Default::default()
/// })?;
/// let examples = vec![Example::new("a", json!("WIN"), BTreeMap::from([("spam".to_string(), Gold::Noul(true))]))];
/// let dir = std::env::temp_dir().join(format!("tn-run-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("run.jsonl");
/// # let _ = std::fs::remove_file(&path);
/// let run = run_examples(&judge, &qs, &examples, &path, RunOptions::default()).await?;
/// assert_eq!(run.rows.len(), 1);
/// // Running again asks nothing: every id is in the file.
/// let again = run_examples(&judge, &qs, &examples, &path, RunOptions::default()).await?;
/// assert_eq!(again, run);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(())
/// # }
/// ```
pub async fn run_examples(
    classifier: &Classifier,
    questions: &Questions,
    examples: &[Example],
    path: impl AsRef<Path>,
    options: RunOptions,
) -> Result<Run, AssessError> {
    let path = path.as_ref();
    let mut run = match std::fs::read_to_string(path) {
        Ok(text) if !text.is_empty() => {
            let run = Run::parse(&text, path)?;
            check_questions(&run.questions, questions, path)?;
            // A whole last row that only lacks its newline is kept.
            let keep = text.rfind('\n').map_or(0, |p| p as u64 + 1);
            mend(path, run.torn_line.map(|_| keep), text.ends_with('\n'))?;
            run
        }
        Ok(_) => start_file(path, questions)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => start_file(path, questions)?,
        Err(e) => return Err(AssessError::io(path, "cannot read", e)),
    };
    let mut index: HashMap<String, usize> = run
        .rows
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.clone(), i))
        .collect();
    let todo: Vec<&Example> = examples
        .iter()
        .filter(|e| match index.get(&e.id) {
            None => true,
            Some(&i) => options.rerun_errors && run.rows[i].decision().is_none(),
        })
        .collect();
    let total = todo.len();
    ask(classifier, questions, todo, total, path, &options, |row| {
        // Refused by the budget's cap: not asked, no row.
        let Some(row) = row else { return };
        match index.get(&row.id) {
            Some(&i) => run.rows[i] = row,
            None => {
                index.insert(row.id.clone(), run.rows.len());
                run.rows.push(row);
            }
        }
    })
    .await?;
    Ok(run)
}

/// Refuses a run file made for other questions, naming the first difference.
pub(super) fn check_questions(
    was: &Questions,
    now: &Questions,
    path: &Path,
) -> Result<(), AssessError> {
    if was == now {
        return Ok(());
    }
    Err(AssessError::new(
        AssessErrorKind::Mismatch,
        format!(
            "this run file was made for other questions ({}); use another file to run these",
            first_question_difference(was, now)
        ),
    )
    .at_path(path))
}

/// A new run file: its header line only.
pub(super) fn start_file(path: &Path, questions: &Questions) -> Result<Run, AssessError> {
    std::fs::write(path, header_line(questions))
        .map_err(|e| AssessError::io(path, "cannot write", e))?;
    Ok(Run::new(questions.clone(), Vec::new()))
}

/// Makes an existing run file ready for appending: a torn final line is cut
/// (the file kept to `torn_cut` bytes) so appended rows start on a line of
/// their own (its example is asked again; `Run::torn_line` says so), and a
/// last line without its newline gets one.
pub(super) fn mend(
    path: &Path,
    torn_cut: Option<u64>,
    ends_with_newline: bool,
) -> Result<(), AssessError> {
    if let Some(keep) = torn_cut {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| AssessError::io(path, "cannot open", e))?;
        f.set_len(keep)
            .map_err(|e| AssessError::io(path, "cannot trim a torn line", e))?;
    } else if !ends_with_newline {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| AssessError::io(path, "cannot open for appending", e))?;
        f.write_all(b"\n")
            .map_err(|e| AssessError::io(path, "cannot end the last line", e))?;
    }
    Ok(())
}

/// Asks each example of `todo` (`total` of them, `options.concurrency` at a
/// time, pulled from `todo` only as calls finish) and appends its row to the
/// run file at `path`, flushed as it comes; `each` sees every row after it is
/// written, and `None` for an example the budget's cap refused.
pub(super) async fn ask<E: std::borrow::Borrow<Example>>(
    classifier: &Classifier,
    questions: &Questions,
    todo: impl IntoIterator<Item = E>,
    total: usize,
    path: &Path,
    options: &RunOptions,
    mut each: impl FnMut(Option<Row>),
) -> Result<(), AssessError> {
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(|e| AssessError::io(path, "cannot open for appending", e))?;
    let mut stream = futures::stream::iter(todo)
        .map(|ex| {
            let classifier = classifier.clone();
            let budget = options.budget.clone();
            let ctx = match &options.call_name {
                Some(name) => EvalContext::new().with_call_name(name.clone()),
                None => EvalContext::new(),
            };
            async move {
                let ex: &Example = ex.borrow();
                if budget.as_ref().is_some_and(|b| b.reached().is_some()) {
                    return None;
                }
                let started = Instant::now();
                let request = EvalRequest::new(ex.state.clone(), questions.clone());
                let result = classifier.evaluate_request(ctx, request).await;
                let latency_ms = started.elapsed().as_secs_f64() * 1e3;
                let (outcome, cost) = match result {
                    Ok(e) => (Outcome::Decided(e.decision), e.cost),
                    Err(e) if e.is_cap_reached() => return None,
                    Err(e) => (
                        Outcome::Failed {
                            kind: e.kind().as_str().to_string(),
                            message: e.detail().to_string(),
                        },
                        Cost::UNKNOWN,
                    ),
                };
                Some(Row {
                    id: ex.id.clone(),
                    labels: ex.labels.clone(),
                    meta: ex.meta.clone(),
                    state_len: canonical_json(&ex.state).chars().count(),
                    outcome,
                    latency_ms: Some(latency_ms),
                    cost,
                })
            }
        })
        .buffer_unordered(options.concurrency.max(1));
    let mut done = 0;
    while let Some(row) = stream.next().await {
        let Some(row) = row else {
            each(None);
            continue;
        };
        let mut line = canonical_json(&row.to_value());
        line.push('\n');
        file.write_all(line.as_bytes())
            .map_err(|e| AssessError::io(path, "cannot append a row", e))?;
        each(Some(row));
        done += 1;
        if let Some(p) = &options.progress {
            p(done, total);
        }
    }
    file.sync_all()
        .map_err(|e| AssessError::io(path, "cannot flush", e))
}

pub(super) fn first_question_difference(was: &Questions, now: &Questions) -> String {
    for k in was.keys().chain(now.keys()) {
        match (was.get(k), now.get(k)) {
            (Some(_), None) => return format!("it has question {k:?}, which is not asked now"),
            (None, Some(_)) => return format!("question {k:?} is not in it"),
            (Some(a), Some(b)) if a != b => {
                return format!("question {k:?} is worded differently");
            }
            _ => {}
        }
    }
    "they differ".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::{noul, questions};

    fn qs() -> Questions {
        questions(&[noul("spam", "Is it spam?")]).unwrap()
    }

    fn decided(p: f64) -> Outcome {
        Outcome::Decided(
            Decision::from_value(&serde_json::json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": p}}}))
                .unwrap(),
        )
    }

    #[test]
    fn a_torn_last_line_is_ignored_and_later_rows_win() {
        let labels = BTreeMap::from([("spam".to_string(), Gold::Noul(true))]);
        let run = Run::new(
            qs(),
            vec![
                Row::new(
                    "a",
                    labels.clone(),
                    Outcome::Failed {
                        kind: "timeout".into(),
                        message: "slow".into(),
                    },
                ),
                Row::new("a", labels.clone(), decided(0.8)),
            ],
        );
        let mut text = run.to_jsonl();
        text.push_str("{\"id\":\"b\",\"lab");
        let back = Run::parse(&text, "r.jsonl").unwrap();
        assert_eq!(back.rows.len(), 1);
        assert_eq!(back.rows[0].outcome, decided(0.8));
        assert_eq!(back.torn_line, Some(4), "the reader can say which line");
        let clean = Run::parse(&run.to_jsonl(), "r.jsonl").unwrap();
        assert_eq!(clean.torn_line, None);
    }

    #[test]
    fn impossible_numbers_in_a_row_are_named_by_file_and_line() {
        let header = Run::new(qs(), Vec::new()).to_jsonl();
        let row = |decision: &str, extra: &str| {
            format!(
                "{header}{{\"id\":\"a\",\"labels\":{{\"spam\":true}},\"decision\":{decision}{extra}}}\n"
            )
        };
        let noul = |v: &str| {
            format!(r#"{{"model":"m","answers":{{"spam":{{"type":"noul","noul":{v}}}}}}}"#)
        };
        let cases = [
            (
                row(&noul("1.5"), ""),
                "r.jsonl:2: row \"a\": decision: answer \"spam\": noul 1.5 is outside [0, 1]",
            ),
            (
                row(&noul("-0.1"), ""),
                "r.jsonl:2: row \"a\": decision: answer \"spam\": noul -0.1 is outside [0, 1]",
            ),
            (
                row(&noul("\"0.5\""), ""),
                "r.jsonl:2: row \"a\": decision: answer \"spam\": noul answer \"noul\" is not a finite number",
            ),
            (
                row(&noul("0.5"), ",\"state_len\":\"long\""),
                "r.jsonl:2: row \"a\": \"state_len\" is a string, not a whole number",
            ),
            (
                row(&noul("0.5"), ",\"latency_ms\":-4"),
                "r.jsonl:2: row \"a\": \"latency_ms\" is -4, not a number of milliseconds",
            ),
        ];
        for (text, want) in cases {
            let e = Run::parse(&text, "r.jsonl").unwrap_err();
            assert_eq!(e.to_string(), want);
            assert_eq!(e.line(), Some(2));
        }
    }

    #[test]
    fn a_choice_outside_the_offered_options_is_refused() {
        let qs = crate::judge::questions(&[crate::judge::choice(
            "desk",
            "Which desk?",
            [("billing", "money"), ("shipping", "parcels")],
        )])
        .unwrap();
        let mut text = Run::new(qs, Vec::new()).to_jsonl();
        text.push_str(r#"{"id":"a","labels":{"desk":"billing"},"decision":{"model":"m","answers":{"desk":{"type":"choice","choice":"kitchen","confidence":0.9,"probabilities":{"kitchen":0.9}}}}}"#);
        text.push('\n');
        let e = Run::parse(&text, "r.jsonl").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("r.jsonl:2: row \"a\": decision: answer \"desk\": choice \"kitchen\""),
            "{e}"
        );
    }

    #[test]
    fn bad_rows_are_named_by_line() {
        let mut text = Run::new(qs(), Vec::new()).to_jsonl();
        text.push_str("{\"id\":\"a\",\"labels\":{\"spam\":true}}\n");
        let e = Run::parse(&text, "r.jsonl").unwrap_err();
        assert_eq!(
            e.to_string(),
            "r.jsonl:2: row \"a\" needs exactly one of \"decision\" and \"error\""
        );
    }
}
