//! JSON text as Python's `json.dumps(v, ensure_ascii=False)` writes it: the
//! form the open-weights decision models were trained to read. Keys in the
//! order given, non-ASCII kept, control characters escaped, floats as Python's
//! `repr` (`1e-05`, `1e+16`, `3.0`), and the separators of the caller's choice.

use std::fmt::Write as _;

use serde_json::{Number, Value};

/// The separators between members and before a value.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Separators {
    /// `", "` and `": "`: Python's default.
    Spaced,
    /// `","` and `":"`.
    Compact,
}

/// `v` as Python's `json.dumps(v, ensure_ascii=False, separators=…)` writes it.
pub(crate) fn dumps(v: &Value, sep: Separators) -> String {
    let mut out = String::new();
    write(&mut out, v, sep);
    out
}

fn write(out: &mut String, v: &Value, sep: Separators) {
    let (item, key) = match sep {
        Separators::Spaced => (", ", ": "),
        Separators::Compact => (",", ":"),
    };
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => number(out, n),
        Value::String(s) => string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(item);
                }
                write(out, x, sep);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, x)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(item);
                }
                string(out, k);
                out.push_str(key);
                write(out, x, sep);
            }
            out.push('}');
        }
    }
}

fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn number(out: &mut String, n: &Number) {
    if let Some(i) = n.as_i64() {
        let _ = write!(out, "{i}");
    } else if let Some(u) = n.as_u64() {
        let _ = write!(out, "{u}");
    } else if let Some(f) = n.as_f64() {
        float(out, f);
    }
}

/// A float as Python's `repr`: the shortest digits that read back exactly,
/// positional for decimal exponents in [-4, 16), scientific (with a sign and at
/// least two exponent digits) otherwise, and a positional whole number ends `.0`.
fn float(out: &mut String, f: f64) {
    if f == 0.0 {
        out.push_str(if f.is_sign_negative() { "-0.0" } else { "0.0" });
        return;
    }
    // Rust's `{:e}` gives the same shortest round-trip digits: "d.ddde-x".
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    out.push_str(sign);
    if (-4..16).contains(&exp) {
        let point = exp + 1; // digits before the decimal point
        if point <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-point) as usize));
            out.push_str(&digits);
        } else if point as usize >= digits.len() {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', point as usize - digits.len()));
            out.push_str(".0");
        } else {
            out.push_str(&digits[..point as usize]);
            out.push('.');
            out.push_str(&digits[point as usize..]);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn writes_what_python_writes() {
        // Each expected text is what CPython 3.12's json.dumps gives.
        let v = json!({"b": [1, 2.5, null, true], "a": "héllo \"x\"\n\u{1}", "n": {"k": -0.0}});
        assert_eq!(
            dumps(&v, Separators::Spaced),
            "{\"b\": [1, 2.5, null, true], \"a\": \"héllo \\\"x\\\"\\n\\u0001\", \"n\": {\"k\": -0.0}}"
        );
        assert_eq!(
            dumps(&json!({"a": [1, {}]}), Separators::Compact),
            "{\"a\":[1,{}]}"
        );
        let floats = [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (123456.789, "123456.789"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (9999999999999998.0, "9999999999999998.0"),
            (-2.5e-7, "-2.5e-07"),
            (1e100, "1e+100"),
            (3.0e15, "3000000000000000.0"),
        ];
        for (f, want) in floats {
            assert_eq!(dumps(&json!(f), Separators::Spaced), want, "{f}");
        }
        assert_eq!(
            dumps(&json!(u64::MAX), Separators::Spaced),
            "18446744073709551615"
        );
    }
}
