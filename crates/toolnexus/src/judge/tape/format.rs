//! The tape file: entries and outcomes, the key an entry is stored under, the
//! pretty canonical writer, the strict loader, and saving through the crate's
//! atomic write.

use std::path::Path;

use serde_json::{Map, Value};

use crate::classifier::{
    ClassifierError, Decision, ErrorKind, Questions, canonical_json, questions_from_wire,
    questions_wire, write_canonical,
};

use super::error::{TapeError, TapeErrorKind};

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
pub(super) fn write_pretty(out: &mut String, v: &Value, depth: usize) {
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

/// An entry's `ordinal`: `None` when absent, `Some(Err(()))` when not a u64.
pub(super) fn parse_ordinal(v: &Value) -> Option<Result<u64, ()>> {
    match v.get("ordinal") {
        None | Some(Value::Null) => None,
        Some(n) => Some(n.as_u64().ok_or(())),
    }
}

fn strip(e: ClassifierError) -> String {
    e.detail().to_string()
}

pub(super) fn parse_entry(call: &str, v: &Value) -> Result<TapeEntry, String> {
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
