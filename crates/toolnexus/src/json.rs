//! Strict JSON reading: the one place that refuses an object holding the same
//! key twice (serde_json keeps the last one silently). A leaf: it names nothing
//! else in the crate but the error type.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::error::{ClassifierError, msg};

/// The serde error a strict visitor raises for a repeated key; serde_json adds
/// the line and column.
pub(crate) fn duplicate<E: de::Error>(key: &str) -> E {
    E::custom(format_args!("has the key {key:?} twice"))
}

/// Whether a serde_json error is one of ours (a duplicate key) rather than
/// malformed JSON: the strict visitors raise no other data errors.
pub(crate) fn is_duplicate(e: &serde_json::Error) -> bool {
    e.classify() == serde_json::error::Category::Data
}

/// The error for `what` (e.g. "response") holding a key twice:
/// `classifier: response has the key "noul" twice at line 1 column 40`.
pub(crate) fn duplicate_error(what: &str, e: serde_json::Error) -> ClassifierError {
    msg::duplicate_key(what, &e).with_source(e)
}

/// Parses JSON text strictly: like `serde_json::from_slice::<Value>`, except
/// that an object with the same key twice, at any depth, is an error naming
/// the key, the line and the column.
///
/// ```
/// use toolnexus::classifier::parse_json_strict;
///
/// assert_eq!(parse_json_strict(br#"{"a":[1,{"b":2}]}"#)?["a"][1]["b"], 2);
/// let e = parse_json_strict(br#"{"q":{"type":"noul","type":"score"}}"#).unwrap_err();
/// assert_eq!(e.to_string(), "classifier: JSON has the key \"type\" twice at line 1 column 26");
/// assert!(parse_json_strict(b"{").unwrap_err().to_string().starts_with("classifier: JSON is not valid: "));
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
pub fn parse_json_strict(bytes: &[u8]) -> Result<Value, ClassifierError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let v = StrictValue::deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v.0))
        .map_err(|e| {
            if is_duplicate(&e) {
                duplicate_error("JSON", e)
            } else {
                msg::decode(format!("JSON is not valid: {e}")).with_source(e)
            }
        })?;
    Ok(v)
}

/// A JSON value read with duplicate keys refused.
pub(crate) struct StrictValue(pub Value);

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<StrictValue, D::Error> {
        d.deserialize_any(StrictVisitor).map(StrictValue)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        // JSON text cannot hold a non-finite number; keep serde_json's own rule.
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(StrictValue(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            if out.contains_key(&k) {
                return Err(duplicate(&k));
            }
            let StrictValue(v) = map.next_value()?;
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}

/// Skips a value of any shape, refusing duplicate keys in it at any depth.
pub(crate) struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Skip, D::Error> {
        d.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = Skip;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_none<E: de::Error>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Skip, D::Error> {
        d.deserialize_any(SkipVisitor)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Skip, A::Error> {
        skip_seq(seq).map(|()| Skip)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Skip, A::Error> {
        skip_map(map).map(|()| Skip)
    }
}

/// Skips every element of an array, refusing duplicate keys inside them.
pub(crate) fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<Skip>()?.is_some() {}
    Ok(())
}

/// Skips every entry of an object, refusing a key seen twice at any depth.
pub(crate) fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    let mut seen = Keys::default();
    while let Some(k) = map.next_key::<String>()? {
        seen.check(k)?;
        map.next_value::<Skip>()?;
    }
    Ok(())
}

/// The keys of one object seen so far.
#[derive(Default)]
pub(crate) struct Keys(HashSet<String>);

impl Keys {
    /// Records `key`, or fails if the object had it already.
    pub(crate) fn check<E: de::Error>(&mut self, key: String) -> Result<(), E> {
        if self.0.contains(&key) {
            return Err(duplicate(&key));
        }
        self.0.insert(key);
        Ok(())
    }
}

/// What a serde_json error says, without its ` at line L column C`.
///
/// ```
/// let e = serde_json::from_str::<serde_json::Value>("[1,]").unwrap_err();
/// assert_eq!(toolnexus::classifier::json_error_what(&e), "trailing comma");
/// ```
pub fn json_error_what(e: &serde_json::Error) -> String {
    let full = e.to_string();
    match full.rsplit_once(" at line ") {
        Some((what, _)) => what.to_string(),
        None => full,
    }
}

/// `invalid JSON at line L, column C: <what>` for a serde_json error.
///
/// ```
/// let e = serde_json::from_str::<serde_json::Value>("{\"a\": tru}").unwrap_err();
/// assert_eq!(toolnexus::classifier::json_error(&e), "invalid JSON at line 1, column 10: expected ident");
/// ```
pub fn json_error(e: &serde_json::Error) -> String {
    format!(
        "invalid JSON at line {}, column {}: {}",
        e.line(),
        e.column(),
        json_error_what(e)
    )
}

/// [`json_error`] for an error in `text`, where an input that ends too soon is
/// placed at its last character (serde_json says "column 0" of the line after).
///
/// ```
/// let text = "{\"a\": [1,\n";
/// let e = serde_json::from_str::<serde_json::Value>(text).unwrap_err();
/// assert!(toolnexus::classifier::json_error_in(text, &e).starts_with("invalid JSON: the input ends at line 1, column 9: "));
/// ```
pub fn json_error_in(text: &str, e: &serde_json::Error) -> String {
    if !e.is_eof() {
        return json_error(e);
    }
    let end = text.trim_end();
    let line = end.matches('\n').count() + 1;
    let column = end.rsplit('\n').next().map_or(0, |l| l.chars().count());
    format!(
        "invalid JSON: the input ends at line {line}, column {column}: {}",
        json_error_what(e)
    )
}

/// Text without a leading UTF-8 byte-order mark.
///
/// ```
/// assert_eq!(toolnexus::classifier::strip_bom("\u{feff}{}"), "{}");
/// ```
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Parses a JSON document the way every input a person writes is read: a
/// UTF-8 byte-order mark is skipped, a syntax error names its line and column,
/// and an object with the same key twice is an error naming the key
/// ([`parse_json_strict`]), never "the last one wins". The error is the
/// one-line message to show.
///
/// ```
/// use toolnexus::classifier::parse_json_text;
/// assert_eq!(parse_json_text("\u{feff}[1]").unwrap(), serde_json::json!([1]));
/// let e = parse_json_text("{\"a\": 1, \"a\": 2}").unwrap_err();
/// assert_eq!(e, "invalid JSON: the key \"a\" appears twice, at line 1, column 12");
/// ```
pub fn parse_json_text(text: &str) -> Result<Value, String> {
    let text = strip_bom(text);
    let v: Value = serde_json::from_str(text).map_err(|e| json_error_in(text, &e))?;
    if has_objects(&v) {
        parse_json_strict(text.as_bytes()).map_err(|e| {
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
///
/// ```
/// assert_eq!(toolnexus::classifier::json_kind(&serde_json::json!([])), "an array");
/// ```
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
