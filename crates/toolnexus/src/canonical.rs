//! Canonical JSON: the one byte form that Static keys, tapes and request bodies
//! rest on. Pure, and explicit about every choice: keys are sorted here, never
//! left to whatever map type a build happens to use. A leaf: it names nothing
//! else in the crate.

use std::fmt::Write as _;

use serde_json::{Map, Number, Value};

/// Encodes `value` canonically: object keys sorted bytewise at every depth,
/// arrays in their order, no whitespace, `<>&'` and non-ASCII written raw, control
/// characters as `\u00XX` (short forms only for `\n \r \t \" \\`), U+2028 and
/// U+2029 escaped, and numbers in the shortest form that round-trips, with an
/// exponent only for magnitudes below 1e-6 or from 1e21 (`1e+21`, `1.5e-7`).
///
/// ```
/// use serde_json::json;
/// use toolnexus::classifier::canonical_json;
///
/// let v = json!({"b": [3, 1.5e-7, 1e21], "a": "<é>\n", "c": 2.0});
/// assert_eq!(canonical_json(&v), r#"{"a":"<é>\n","b":[3,1.5e-7,1e+21],"c":2}"#);
/// ```
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::with_capacity(64);
    write_value(&mut out, value);
    out
}

/// Appends the canonical form of `value` to `out` (see [`canonical_json`]).
///
/// ```
/// use serde_json::json;
/// use toolnexus::classifier::write_canonical;
///
/// let mut s = String::from("key=");
/// write_canonical(&mut s, &json!({"z": 1, "a": null}));
/// assert_eq!(s, r#"key={"a":null,"z":1}"#);
/// ```
pub fn write_canonical(out: &mut String, value: &Value) {
    write_value(out, value);
}

pub(crate) fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_str(out, s),
        Value::Array(a) => {
            out.push('[');
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(m) => write_object(out, m),
    }
}

fn write_object(out: &mut String, m: &Map<String, Value>) {
    let mut entries: Vec<(&String, &Value)> = m.iter().collect();
    // Bytewise order on UTF-8 is `str`'s `Ord`. Checking first keeps the common
    // already-sorted case linear without ever trusting the map's iteration order.
    if !entries.is_sorted_by(|a, b| a.0 <= b.0) {
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    }
    out.push('{');
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_str(out, k);
        out.push(':');
        write_value(out, v);
    }
    out.push('}');
}

#[inline]
pub(crate) fn write_str(out: &mut String, s: &str) {
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, ch) in s.char_indices() {
        let esc: Option<&str> = match ch {
            '"' => Some("\\\""),
            '\\' => Some("\\\\"),
            '\n' => Some("\\n"),
            '\r' => Some("\\r"),
            '\t' => Some("\\t"),
            '\u{2028}' => Some("\\u2028"),
            '\u{2029}' => Some("\\u2029"),
            c if (c as u32) < 0x20 => None,
            _ => continue,
        };
        out.push_str(&s[start..i]);
        match esc {
            Some(e) => out.push_str(e),
            None => {
                let _ = write!(out, "\\u{:04x}", ch as u32);
            }
        }
        start = i + ch.len_utf8();
    }
    out.push_str(&s[start..bytes.len()]);
    out.push('"');
}

fn write_number(out: &mut String, n: &Number) {
    if let Some(i) = n.as_i64() {
        let _ = write!(out, "{i}");
    } else if let Some(u) = n.as_u64() {
        let _ = write!(out, "{u}");
    } else if let Some(f) = n.as_f64() {
        write_f64(out, f);
    } else {
        // Arbitrary-precision numbers (a feature elsewhere in a build) keep their text.
        out.push_str(&n.to_string());
    }
}

/// Formats a finite `f64` the way ECMAScript's `Number::toString` and Go's
/// `encoding/json` do: shortest round-trip digits, plain notation for
/// 1e-6 <= |x| < 1e21, otherwise `d[.ddd]e±x`.
pub(crate) fn write_f64(out: &mut String, f: f64) {
    if f == 0.0 || !f.is_finite() {
        // JSON has no NaN or infinity; -0 is written as 0, like the other ports.
        out.push('0');
        return;
    }
    // `{:e}` gives the shortest round-trip digits: "d.ddde-7", "1e21".
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i32; // number of significant digits
    let n = exp + 1; // position of the decimal point relative to the digits
    if f < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        // An integer: the digits followed by zeros.
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
        return;
    }
    if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
        return;
    }
    if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
        return;
    }
    // Exponent form.
    out.push_str(&digits[..1]);
    if k > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    out.push('e');
    let e = n - 1;
    if e >= 0 {
        out.push('+');
    }
    let _ = write!(out, "{e}");
}
