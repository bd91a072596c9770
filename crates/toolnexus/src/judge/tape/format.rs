//! The tape file: entries and outcomes, the key an entry is stored under, the
//! pretty canonical writer, the strict loader, and saving through the crate's
//! atomic write.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value};

use crate::classifier::{
    ClassifierError, Decision, ErrorKind, Questions, canonical_json, questions_from_wire,
    questions_wire, write_canonical,
};

use super::{Tape, TapeError, TapeErrorKind};

/// The tape file version this library writes and reads.
///
/// ```
/// let text = toolnexus::judge::Tape::new().to_json();
/// assert!(text.contains(&format!("\"version\": {}", toolnexus::judge::TAPE_VERSION)));
/// ```
pub const TAPE_VERSION: u64 = 1;

/// The value of a tape file's `format` field.
///
/// ```
/// assert_eq!(toolnexus::judge::TAPE_FORMAT, "toolnexus.tape");
/// ```
pub const TAPE_FORMAT: &str = "toolnexus.tape";

/// What a recorded call came to: a decision, or a failure kept as data.
///
/// ```
/// use toolnexus::classifier::{Decision, ErrorKind};
/// use toolnexus::judge::TapeOutcome;
///
/// let ok = TapeOutcome::Decision(Decision::from_slice(br#"{"model":"m","answers":{}}"#)?);
/// let failed = TapeOutcome::Failure {
///     kind: ErrorKind::Http,
///     message: "classifier: POST https://api.typesafe.ai/v1/systemone: HTTP 503: overloaded".into(),
///     status: Some(503),
/// };
/// assert!(ok.is_decision() && !failed.is_decision());
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum TapeOutcome {
    /// The live classifier decided.
    Decision(Decision),
    /// The live classifier failed; replay returns an error with this kind,
    /// message and HTTP status.
    Failure {
        /// What went wrong.
        kind: ErrorKind,
        /// The error's message, exactly as the live classifier gave it (already
        /// free of credentials and expanded header values).
        message: String,
        /// The HTTP status, for an HTTP failure.
        status: Option<u16>,
    },
}

impl TapeOutcome {
    /// Whether this is a decision rather than a failure.
    ///
    /// ```
    /// use toolnexus::classifier::ErrorKind;
    /// use toolnexus::judge::TapeOutcome;
    /// let f = TapeOutcome::Failure { kind: ErrorKind::Timeout, message: "classifier: request timeout after 10000ms".into(), status: None };
    /// assert!(!f.is_decision());
    /// ```
    pub fn is_decision(&self) -> bool {
        matches!(self, TapeOutcome::Decision(_))
    }

    pub(super) fn replay(&self) -> Result<Decision, ClassifierError> {
        match self {
            TapeOutcome::Decision(d) => Ok(d.clone()),
            TapeOutcome::Failure {
                kind,
                message,
                status,
            } => {
                let e = ClassifierError::from_message(*kind, message);
                Err(match status {
                    Some(s) => e.with_status(*s, None),
                    None => e,
                })
            }
        }
    }
}

/// One recorded call: under which call name, what was asked of which model, and
/// what came of it.
///
/// ```
/// use serde_json::json;
/// use toolnexus::classifier::Decision;
/// use toolnexus::judge::{Tape, TapeEntry, TapeOutcome, noul, questions};
///
/// let tape = Tape::new();
/// tape.record(TapeEntry {
///     call_name: "spam-check".into(),
///     model: "jev-latest".into(),
///     state: json!("WIN A PRIZE"),
///     questions: questions(&[noul("spam", "Is this unsolicited bulk mail?")])?,
///     outcome: TapeOutcome::Decision(Decision::from_slice(
///         br#"{"model":"jev-1.13","answers":{"spam":{"type":"noul","noul":0.98}}}"#,
///     )?),
///     request_id: None,
/// });
/// assert_eq!(tape.len(), 1);
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TapeEntry {
    /// The [`EvalContext::call_name`](crate::classifier::EvalContext) of the call.
    pub call_name: String,
    /// The model the live classifier asked for (the decision says what answered).
    pub model: String,
    /// The state judged.
    pub state: Value,
    /// The questions asked.
    pub questions: Questions,
    /// The decision or the failure.
    pub outcome: TapeOutcome,
    /// The request id the live backend answered with (`x-typesafe-request-id`),
    /// when it sent one; replays do not make it up.
    pub request_id: Option<String>,
}

/// Within one call name, entries are keyed by canonical questions and state.
pub(super) fn entry_key(questions: &Questions, state: &Value) -> String {
    let mut key = canonical_json(&questions_wire(questions));
    key.push('\n');
    write_canonical(&mut key, state);
    key
}

impl Tape {
    /// The file's text: pretty-printed JSON, keys sorted bytewise at every depth,
    /// two-space indents, a final newline. The same tape gives the same bytes.
    ///
    /// Within a call name, entries are listed by canonical questions and state.
    /// When that is not the order they were recorded in, every entry of that
    /// call also gets an `"ordinal"` (its place in recording order, from 0), so
    /// [`TapeMatch::Sequence`](super::TapeMatch::Sequence) replays the same after a save and load; a call
    /// whose entries were recorded in listed order (like every file written
    /// before ordinals existed) is written without them, byte for byte as before.
    ///
    /// ```
    /// let text = toolnexus::judge::Tape::new().with_note("empty").to_json();
    /// assert_eq!(text, "{\n  \"calls\": {},\n  \"format\": \"toolnexus.tape\",\n  \"note\": \"empty\",\n  \"version\": 1\n}\n");
    /// ```
    pub fn to_json(&self) -> String {
        let data = self.lock();
        let mut calls = Map::new();
        for (name, call) in &data.calls {
            let ranks = call.ranks();
            let list = call
                .entries
                .values()
                .enumerate()
                .map(|(i, (_, e))| {
                    let mut v = entry_value(e);
                    if let (Some(r), Value::Object(m)) = (&ranks, &mut v) {
                        m.insert("ordinal".into(), Value::from(r[i]));
                    }
                    v
                })
                .collect();
            calls.insert(name.clone(), Value::Array(list));
        }
        let mut top = Map::new();
        top.insert("calls".into(), Value::Object(calls));
        top.insert("format".into(), Value::from(TAPE_FORMAT));
        top.insert("note".into(), Value::from(data.note.as_str()));
        top.insert("version".into(), Value::from(TAPE_VERSION));
        let mut out = String::with_capacity(4096);
        write_pretty(&mut out, &Value::Object(top), 0);
        out.push('\n');
        out
    }

    /// Reads a tape from its text (see [`Tape::load`] for the checks). Errors
    /// name the source as `<input>`.
    ///
    /// ```
    /// use toolnexus::judge::Tape;
    /// let tape = Tape::from_json(r#"{"version": 1, "calls": {}}"#)?;
    /// assert!(tape.is_empty());
    /// let e = Tape::from_json(r#"{"version": 2, "calls": {}}"#).unwrap_err();
    /// assert!(e.is_unsupported_version());
    /// # Ok::<(), toolnexus::judge::TapeError>(())
    /// ```
    pub fn from_json(text: &str) -> Result<Tape, TapeError> {
        parse(text, None)
    }

    /// Loads a tape file. A file that is not valid JSON is an error naming the
    /// file, line and column; so is a file written by a newer version of the
    /// format, a file with no `version`, and a file of the wrong shape (naming the
    /// call and entry). Every decision is decoded as strictly as a live one.
    /// Unknown extra fields are ignored.
    ///
    /// Recording order (see [`Tape::to_json`]) comes from the entries'
    /// `"ordinal"`s when a call's entries have them, else from their order in
    /// the file. Ordinals must be distinct non-negative integers (gaps are
    /// fine), on every entry of a call or on none.
    ///
    /// ```
    /// use toolnexus::judge::Tape;
    ///
    /// let path = std::env::temp_dir().join(format!("toolnexus-doc-load-{}.json", std::process::id()));
    /// std::fs::write(&path, "{\"version\": 1, \"calls\": {\n  \"triage\": [}\n}")?;
    /// let e = Tape::load(&path).unwrap_err();
    /// assert!(e.to_string().contains(&path.display().to_string()), "{e}");
    /// assert_eq!(e.line(), Some(2));
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Tape, TapeError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| {
            TapeError::new(TapeErrorKind::Io, Some(path), format!("cannot read: {e}")).source(e)
        })?;
        parse(&text, Some(path))
    }

    /// Saves the tape atomically: the text is written to a temporary file in the
    /// same directory, flushed to disk, then renamed over `path`, so a crash
    /// mid-save leaves the previous file whole. (A crash can leave a stray
    /// `.<name>.<pid>.<n>.tmp` file beside it; it is never read.)
    ///
    /// ```
    /// use toolnexus::judge::Tape;
    ///
    /// let path = std::env::temp_dir().join(format!("toolnexus-doc-save-{}.json", std::process::id()));
    /// Tape::new().with_note("first").save(&path)?;
    /// Tape::new().with_note("second").save(&path)?;
    /// assert_eq!(Tape::load(&path)?.note(), "second");
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), TapeError> {
        write_atomic(path, self.to_json().as_bytes())
    }
}

pub(super) fn error_kind_name(kind: ErrorKind) -> &'static str {
    kind.as_str()
}

pub(super) fn error_kind_from_name(name: &str) -> Option<ErrorKind> {
    name.parse().ok()
}

pub(super) fn entry_value(e: &TapeEntry) -> Value {
    let mut m = Map::new();
    m.insert("model".into(), Value::from(e.model.as_str()));
    m.insert("questions".into(), questions_wire(&e.questions));
    m.insert("state".into(), e.state.clone());
    if let Some(id) = &e.request_id {
        m.insert("request_id".into(), Value::from(id.as_str()));
    }
    match &e.outcome {
        TapeOutcome::Decision(d) => {
            m.insert("decision".into(), d.to_value());
        }
        TapeOutcome::Failure {
            kind,
            message,
            status,
        } => {
            let mut f = Map::new();
            f.insert("kind".into(), Value::from(error_kind_name(*kind)));
            f.insert("message".into(), Value::from(message.as_str()));
            if let Some(s) = status {
                f.insert("status".into(), Value::from(*s));
            }
            m.insert("error".into(), Value::Object(f));
        }
    }
    Value::Object(m)
}

/// Pretty JSON with keys sorted bytewise, written by hand so the order never
/// depends on the map type a build happens to use. Scalars and empty containers
/// are written in canonical form.
fn write_pretty(out: &mut String, v: &Value, depth: usize) {
    let pad = |out: &mut String, depth: usize| {
        for _ in 0..depth {
            out.push_str("  ");
        }
    };
    match v {
        Value::Object(m) if !m.is_empty() => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push_str("{\n");
            for (i, k) in keys.iter().enumerate() {
                pad(out, depth + 1);
                write_canonical(out, &Value::String((*k).clone()));
                out.push_str(": ");
                write_pretty(out, &m[k.as_str()], depth + 1);
                if i + 1 < keys.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            pad(out, depth);
            out.push('}');
        }
        Value::Array(a) if !a.is_empty() => {
            out.push_str("[\n");
            for (i, item) in a.iter().enumerate() {
                pad(out, depth + 1);
                write_pretty(out, item, depth + 1);
                if i + 1 < a.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            pad(out, depth);
            out.push(']');
        }
        other => write_canonical(out, other),
    }
}

pub(super) fn parse(text: &str, path: Option<&Path>) -> Result<Tape, TapeError> {
    let v: Value = serde_json::from_str(text).map_err(|e| {
        let full = e.to_string();
        let what = full
            .rsplit_once(" at line ")
            .map_or(full.as_str(), |(what, _)| what)
            .to_string();
        let (line, column) = (e.line(), e.column());
        let mut err = TapeError::new(
            TapeErrorKind::Syntax,
            path,
            format!("invalid JSON at line {line}, column {column}: {what}"),
        )
        .source(e);
        err.line = Some(line);
        err.column = Some(column);
        err
    })?;
    let shape = |text: String| TapeError::new(TapeErrorKind::Shape, path, text);
    let top = v
        .as_object()
        .ok_or_else(|| shape("a tape is a JSON object".into()))?;
    match top.get("version") {
        None => {
            return Err(TapeError::new(
                TapeErrorKind::Version,
                path,
                "no \"version\" field: not a toolnexus tape".to_string(),
            ));
        }
        Some(Value::Number(n)) if n.as_u64() == Some(TAPE_VERSION) => {}
        Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n > TAPE_VERSION) => {
            return Err(TapeError::new(
                TapeErrorKind::Version,
                path,
                format!(
                    "version {n} is newer than this library reads (up to {TAPE_VERSION}); upgrade toolnexus to replay it"
                ),
            ));
        }
        Some(other) => {
            return Err(TapeError::new(
                TapeErrorKind::Version,
                path,
                format!("unsupported version {other} (this library reads {TAPE_VERSION})"),
            ));
        }
    }
    match top.get("format") {
        None | Some(Value::Null) => {}
        Some(Value::String(f)) if f == TAPE_FORMAT => {}
        Some(other) => {
            return Err(shape(format!(
                "\"format\" is {other}, want \"{TAPE_FORMAT}\""
            )));
        }
    }
    let note = match top.get("note") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(shape("\"note\" is not a string".into())),
    };
    let calls = match top.get("calls") {
        Some(Value::Object(c)) => c,
        Some(_) => {
            return Err(shape(
                "\"calls\" is not an object of call name to entries".into(),
            ));
        }
        None => return Err(shape("no \"calls\" field".into())),
    };
    let tape = Tape::new().with_note(note);
    for (call, entries) in calls {
        let Value::Array(entries) = entries else {
            return Err(shape(format!("call {call:?}: entries are not an array")));
        };
        let mut parsed = Vec::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            let entry = parse_entry(call, e)
                .map_err(|text| shape(format!("call {call:?} entry {i}: {text}")))?;
            parsed.push((parse_ordinal(e), entry));
        }
        // Recording order: by ordinal when the entries carry one, else file order.
        let mut seen: HashMap<u64, usize> = HashMap::new();
        let mut order = Vec::with_capacity(parsed.len());
        let with = parsed.iter().filter(|(o, _)| o.is_some()).count();
        for (i, (ordinal, entry)) in parsed.into_iter().enumerate() {
            let at = |text: String| shape(format!("call {call:?} entry {i}: {text}"));
            let n = match ordinal {
                None if with == 0 => i as u64,
                None => {
                    return Err(at(
                        "no \"ordinal\", but other entries of this call have one (give every entry of a call an ordinal, or none)".into(),
                    ));
                }
                Some(Err(())) => {
                    return Err(at("\"ordinal\" is not a non-negative integer".into()));
                }
                Some(Ok(n)) => n,
            };
            if let Some(j) = seen.insert(n, i) {
                return Err(at(format!("\"ordinal\" {n} is also entry {j}'s")));
            }
            order.push((n, entry));
        }
        order.sort_by_key(|(n, _)| *n);
        for (_, entry) in order {
            tape.record(entry);
        }
    }
    Ok(tape)
}

/// An entry's `ordinal`: `None` when absent, `Some(Err(()))` when not a u64.
fn parse_ordinal(v: &Value) -> Option<Result<u64, ()>> {
    match v.get("ordinal") {
        None | Some(Value::Null) => None,
        Some(n) => Some(n.as_u64().ok_or(())),
    }
}

fn strip(e: ClassifierError) -> String {
    e.detail().to_string()
}

fn parse_entry(call: &str, v: &Value) -> Result<TapeEntry, String> {
    let o = v.as_object().ok_or("entry is not a JSON object")?;
    let model = match o.get("model") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err("\"model\" is not a string".into()),
        None => return Err("no \"model\"".into()),
    };
    let state = o.get("state").cloned().ok_or("no \"state\"")?;
    let questions =
        questions_from_wire(o.get("questions").ok_or("no \"questions\"")?).map_err(strip)?;
    let outcome = match (o.get("decision"), o.get("error")) {
        (Some(d), None) => TapeOutcome::Decision(
            Decision::from_value(d).map_err(|e| format!("decision: {}", strip(e)))?,
        ),
        (None, Some(Value::Object(f))) => {
            let kind = match f.get("kind") {
                Some(Value::String(k)) => error_kind_from_name(k)
                    .ok_or_else(|| format!("error has unknown kind {k:?}"))?,
                _ => return Err("error has no string \"kind\"".into()),
            };
            let message = match f.get("message") {
                Some(Value::String(m)) => m.clone(),
                _ => return Err("error has no string \"message\"".into()),
            };
            let status = match f.get("status") {
                None | Some(Value::Null) => None,
                Some(s) => Some(
                    s.as_u64()
                        .and_then(|s| u16::try_from(s).ok())
                        .ok_or("error \"status\" is not an HTTP status")?,
                ),
            };
            TapeOutcome::Failure {
                kind,
                message,
                status,
            }
        }
        (None, Some(_)) => return Err("\"error\" is not an object".into()),
        (Some(_), Some(_)) => return Err("has both \"decision\" and \"error\"".into()),
        (None, None) => return Err("has neither \"decision\" nor \"error\"".into()),
    };
    let request_id = match o.get("request_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("\"request_id\" is not a string".into()),
    };
    Ok(TapeEntry {
        call_name: call.to_string(),
        model,
        state,
        questions,
        outcome,
        request_id,
    })
}

/// Writes `bytes` to `path` atomically, as [`crate::fs::write_atomic`] does,
/// with a failure told as a [`TapeError`] (`tape: <path>: cannot write: …`).
/// How a tape is saved; other files are better written with
/// [`crate::fs::write_atomic`], whose error names no tape.
///
/// ```
/// let path = std::env::temp_dir().join(format!("toolnexus-doc-tape-atomic-{}", std::process::id()));
/// toolnexus::judge::write_atomic(&path, b"one")?;
/// toolnexus::judge::write_atomic(&path, b"two")?;
/// assert_eq!(std::fs::read(&path).unwrap(), b"two");
/// # std::fs::remove_file(&path).unwrap();
/// # Ok::<(), toolnexus::judge::TapeError>(())
/// ```
pub fn write_atomic(path: impl AsRef<Path>, bytes: &[u8]) -> Result<(), TapeError> {
    let path = path.as_ref();
    crate::fs::write_atomic(path, bytes).map_err(|e| {
        let text = e.to_string();
        TapeError::new(TapeErrorKind::Io, Some(path), text).source(std::io::Error::from(e))
    })
}
