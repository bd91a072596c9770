//! JSON as the guard reads it: strict (a key given twice is an error naming
//! it, never "the last one wins"), a UTF-8 byte-order mark skipped, and a
//! syntax error placed at its line and column. The same texts the command
//! line gives for its own inputs, so a policy's errors read like any other.

use serde_json::Value;

pub(crate) use toolnexus::classifier::json_kind as kind;

/// Parses JSON text strictly: a byte-order mark is skipped, a syntax error
/// names its line and column, and an object with the same key twice is an
/// error naming the key (the library's strict parser).
pub(crate) fn parse_strict(text: &str) -> Result<Value, String> {
    toolnexus::classifier::parse_json_text(text)
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
