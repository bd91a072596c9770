//! Python values to and from JSON, and questions from Python.
//!
//! JSON crosses as text through Python's own `json` module: what `json.dumps`
//! accepts is a state, and a number or string keeps its exact form. A str
//! state, the common case, skips the round trip.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde_json::Value;
use toolnexus::classifier::{Question, Questions};

use crate::error::classifier_error;

/// A Python value as JSON: a str as itself, anything else through
/// `json.dumps` (NaN and infinities refused: the wire has no such numbers).
pub fn to_json(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    let py = obj.py();
    let json = py.import("json")?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("allow_nan", false)?;
    let text: String = json
        .call_method("dumps", (obj,), Some(&kwargs))?
        .extract()?;
    serde_json::from_str(&text)
        .map_err(|e| PyValueError::new_err(format!("not JSON the library can read: {e}")))
}

/// A JSON value as Python's `json.loads` would give it.
pub fn from_json<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    match value {
        Value::String(s) => Ok(PyString::new(py, s).into_any()),
        other => py
            .import("json")?
            .call_method1("loads", (other.to_string(),)),
    }
}

/// Questions from a mapping of key → question, each a `toolnexus` question
/// (`Noul`, `Choice`, `Score`: anything with `to_wire()`) or its wire dict.
/// A bad question is a `ClassifierError` naming its key.
pub fn questions(obj: &Bound<'_, PyAny>) -> PyResult<Questions> {
    let py = obj.py();
    let items = obj.call_method0("items").map_err(|_| {
        PyTypeError::new_err(
            "questions must be a dict of key → question (toolnexus.Noul, Choice or Score)",
        )
    })?;
    let mut out = Questions::new();
    for item in items.try_iter()? {
        let (key, q): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
        let key: String = key
            .extract()
            .map_err(|_| PyTypeError::new_err(format!("questions: key {key} is not a str")))?;
        let wire = match q.hasattr("to_wire")? {
            true => q.call_method0("to_wire")?,
            false => q,
        };
        let wire = to_json(&wire)?;
        let question = Question::from_wire(&wire).map_err(|e| {
            let named = toolnexus::classifier::ClassifierError::invalid_question(&key, e.detail());
            classifier_error(py, &named)
        })?;
        out.insert(key, question);
    }
    Ok(out)
}

/// Questions back to their wire dicts, for a Python callable.
pub fn questions_to_py<'py>(py: Python<'py>, qs: &Questions) -> PyResult<Bound<'py, PyAny>> {
    from_json(py, &toolnexus::classifier::questions_wire(qs))
}
