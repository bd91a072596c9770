//! `toolnexus.ClassifierError`: the library's error with its message
//! unchanged, and what a caller branches on as attributes.

use pyo3::prelude::*;

pyo3::create_exception!(
    toolnexus,
    ClassifierError,
    pyo3::exceptions::PyException,
    "A classifier's failure. str(e) is the library's message, word for word; \
     .kind is the ErrorKind's snake-case name, .status the HTTP status (or None), \
     .is_retryable whether a retry may succeed."
);

/// The library's error as a `ClassifierError` carrying its kind, status and
/// predicates.
pub fn classifier_error(py: Python<'_>, e: &toolnexus::classifier::ClassifierError) -> PyErr {
    build(
        py,
        e.to_string(),
        e.kind().as_str(),
        e.status(),
        e.is_retryable(),
        e.is_timeout(),
        e.is_cancelled(),
    )
}

/// A configuration error (a bad keyword, a file a stack cannot read) as a
/// `ClassifierError` of kind `config`.
pub fn config_error(py: Python<'_>, message: impl Into<String>) -> PyErr {
    build(py, message.into(), "config", None, false, false, false)
}

/// The exception with its attributes set.
fn build(
    py: Python<'_>,
    message: String,
    kind: &str,
    status: Option<u16>,
    retryable: bool,
    timeout: bool,
    cancelled: bool,
) -> PyErr {
    let err = ClassifierError::new_err(message);
    let value = err.value(py);
    // Setting an attribute on a fresh exception instance cannot fail short
    // of memory exhaustion; the message alone still reaches the caller then.
    let _ = value.setattr("kind", kind);
    let _ = value.setattr("status", status);
    let _ = value.setattr("is_retryable", retryable);
    let _ = value.setattr("is_timeout", timeout);
    let _ = value.setattr("is_cancelled", cancelled);
    err
}
