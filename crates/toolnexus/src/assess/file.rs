//! The versioned JSON files `assess` writes (thresholds, calibration): one
//! reader that checks `format` and `version` and names the file in every error,
//! and one atomic writer.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::error::{AssessError, AssessErrorKind};
use super::examples::json_error_text;

/// Parses `text` as a `what` file of `format` at `version` into `T`.
pub(crate) fn parse_versioned<T: DeserializeOwned>(
    text: &str,
    source: &Path,
    what: &str,
    format: &str,
    version: u64,
) -> Result<T, AssessError> {
    let mismatch = |m: String| AssessError::new(AssessErrorKind::Mismatch, m).at_path(source);
    let v: Value = serde_json::from_str(text).map_err(|e| {
        AssessError::new(
            AssessErrorKind::Syntax,
            format!("not JSON: {}", json_error_text(&e)),
        )
        .at_path(source)
        .at(e.line(), Some(e.column()))
    })?;
    if v.get("format").and_then(Value::as_str) != Some(format) {
        return Err(mismatch(format!(
            "not a {what} file (\"format\" is not {format:?})"
        )));
    }
    if v.get("version").and_then(Value::as_u64) != Some(version) {
        return Err(mismatch(format!(
            "{what} file version {} is not supported (this build reads {version})",
            v.get("version").map_or("absent".into(), |x| x.to_string())
        )));
    }
    serde_json::from_value(v).map_err(|e| {
        AssessError::new(AssessErrorKind::Invalid, format!("{what} file: {e}")).at_path(source)
    })
}

/// Reads and parses a versioned file.
pub(crate) fn load_versioned<T: DeserializeOwned>(
    path: &Path,
    what: &str,
    format: &str,
    version: u64,
) -> Result<T, AssessError> {
    let text =
        std::fs::read_to_string(path).map_err(|e| AssessError::io(path, "cannot read", e))?;
    parse_versioned(&text, path, what, format, version)
}

/// Writes `text` to `path` atomically (a crash leaves the old file or the new
/// one, never half of either).
pub(crate) fn save_atomic(path: &Path, text: &str) -> Result<(), AssessError> {
    crate::fs::write_atomic(path, text.as_bytes()).map_err(|e| {
        // The text these files have always failed with (it was the tape's
        // writer's), kept byte for byte: `tape: <path>: cannot write: …`.
        AssessError::new(
            AssessErrorKind::Io,
            format!("tape: {}: {e}", path.display()),
        )
        .with_source(std::io::Error::from(e))
    })
}

/// `value` (an object) with `format` and `version` added, pretty-printed with a
/// final newline.
pub(crate) fn to_versioned_json(mut value: Value, format: &str, version: u64) -> String {
    if let Some(o) = value.as_object_mut() {
        o.insert("format".into(), Value::from(format));
        o.insert("version".into(), Value::from(version));
    }
    let mut s = serde_json::to_string_pretty(&value).expect("a value serialises");
    s.push('\n');
    s
}
