//! JSON as the guard reads it: strict (a key given twice is an error naming
//! it, never "the last one wins"), a UTF-8 byte-order mark skipped, and a
//! syntax error placed at its line and column. The same texts the command
//! line gives for its own inputs, so a policy's errors read like any other.

use serde_json::Value;

/// What a serde_json error says, without its ` at line L column C`.
fn what(e: &serde_json::Error) -> String {
    let full = e.to_string();
    match full.rsplit_once(" at line ") {
        Some((what, _)) => what.to_string(),
        None => full,
    }
}

/// `invalid JSON at line L, column C: <what>`, where an input that ends too
/// soon is placed at its last character (serde_json says "column 0" of the
/// line after).
fn json_error_in(text: &str, e: &serde_json::Error) -> String {
    if !e.is_eof() {
        return format!(
            "invalid JSON at line {}, column {}: {}",
            e.line(),
            e.column(),
            what(e)
        );
    }
    let end = text.trim_end();
    let line = end.matches('\n').count() + 1;
    let column = end.rsplit('\n').next().map_or(0, |l| l.chars().count());
    format!(
        "invalid JSON: the input ends at line {line}, column {column}: {}",
        what(e)
    )
}

/// Text without a leading UTF-8 byte-order mark.
pub(crate) fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Parses JSON text strictly: a byte-order mark is skipped, a syntax error
/// names its line and column, and an object with the same key twice is an
/// error naming the key (the library's strict parser).
pub(crate) fn parse_strict(text: &str) -> Result<Value, String> {
    let text = strip_bom(text);
    let v: Value = serde_json::from_str(text).map_err(|e| json_error_in(text, &e))?;
    if has_objects(&v) {
        toolnexus::classifier::parse_json_strict(text.as_bytes()).map_err(|e| {
            let d = e.detail();
            d.strip_prefix("JSON has ").map_or(d.to_string(), |rest| {
                let rest = rest
                    .replacen(" twice at line ", " appears twice, at line ", 1)
                    .replacen(" column ", ", column ", 1);
                format!("invalid JSON: {rest}")
            })
        })?;
    }
    Ok(v)
}

/// Whether a value holds an object anywhere (only those can repeat a key).
fn has_objects(v: &Value) -> bool {
    match v {
        Value::Object(_) => true,
        Value::Array(a) => a.iter().any(has_objects),
        _ => false,
    }
}

/// A JSON value's kind, with its article, for messages (`a string`, `null`).
pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A message on one line: its lines trimmed and joined by spaces, so a
/// reason or a log field never breaks a line of its own.
pub(crate) fn one_line(text: impl std::fmt::Display) -> String {
    text.to_string()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_line_and_column_and_a_repeated_key() {
        assert_eq!(
            parse_strict("\u{feff}{\"a\": 1}").unwrap(),
            serde_json::json!({"a": 1})
        );
        assert_eq!(
            parse_strict("{\n  \"a\": }").unwrap_err(),
            "invalid JSON at line 2, column 8: expected value"
        );
        assert_eq!(
            parse_strict(r#"{"q": {"type": "noul", "type": "score"}}"#).unwrap_err(),
            "invalid JSON: the key \"type\" appears twice, at line 1, column 29"
        );
        assert_eq!(
            parse_strict("{\"q\": {\n  \"a\": 1\n").unwrap_err(),
            "invalid JSON: the input ends at line 2, column 8: EOF while parsing an object"
        );
        assert_eq!(one_line("a\n  b \n\nc"), "a b c");
    }
}
