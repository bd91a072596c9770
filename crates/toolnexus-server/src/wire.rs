//! The System One wire as toolnexus writes it: a decision with the cost its
//! stack settled, answers read through thresholds bands, and the checks a
//! request's state and questions pass. Pure functions over values; shared by
//! both servers and by the command line's own output.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use toolnexus::classifier::{Decision, Questions, questions_from_wire, validate_questions};
use toolnexus::cost::{Cost, CostSource};
use toolnexus::judge::{Asked, Banded, Bands};

/// Writes a cost toolnexus settled into a decision's wire JSON, beside the
/// usage it priced: `usage.cost` (US dollars, the spelling the wire already
/// has) and `usage.cost_source` (`priced`, `local` or `cache`), with
/// `usage.cost_table` and `usage.cost_checked` for a priced one. A cost the
/// backend reported is its own `usage.cost` already and is left as sent; an
/// unknown cost writes nothing: no `cost` key, never 0. Only fields are added
/// or set; the ones already there keep their types and order.
///
/// ```
/// use toolnexus::cost::{Cost, CostSource};
/// let mut v = serde_json::json!({"model": "m", "usage": {"input_tokens": 3}});
/// toolnexus_server::wire::with_cost(&mut v, &Cost::new(0.0, CostSource::Local));
/// assert_eq!(v["usage"], serde_json::json!({"input_tokens": 3, "cost": 0.0, "cost_source": "local"}));
/// toolnexus_server::wire::with_cost(&mut v, &Cost::UNKNOWN); // writes nothing, never 0
/// # assert_eq!(v["usage"]["cost_source"], "local");
/// ```
pub fn with_cost(v: &mut Value, settled: &Cost) {
    let Some(fields) = cost_fields(settled) else {
        return;
    };
    let Some(o) = v.as_object_mut() else { return };
    let usage = o
        .entry("usage")
        .or_insert_with(|| Value::Object(Default::default()));
    let Some(u) = usage.as_object_mut() else {
        return;
    };
    for (k, v) in fields {
        u.insert(k.into(), v);
    }
}

/// The usage fields [`with_cost`] writes, in order; `None` when it writes none.
fn cost_fields(settled: &Cost) -> Option<Vec<(&'static str, Value)>> {
    let (Some(usd), Some(source)) = (settled.usd, &settled.source) else {
        return None;
    };
    if *source == CostSource::Reported {
        return None;
    }
    let mut fields = vec![
        ("cost", Value::from(usd)),
        ("cost_source", Value::from(source.as_str())),
    ];
    if let CostSource::Priced { table, checked } = source {
        fields.push(("cost_table", Value::from(table.as_str())));
        fields.push(("cost_checked", Value::from(checked.as_str())));
    }
    Some(fields)
}

/// [`with_cost`] on an answer's bytes as they arrived: the fields go in just
/// before the `}` that closes its top-level `usage` object, and every other
/// byte stays as it came (numbers keep their spelling, keys their order and
/// spacing). When the answer has no such object, or its usage already has a
/// `cost` key (`null`), it is written again through [`with_cost`] instead.
///
/// ```
/// use toolnexus::cost::{Cost, CostSource};
/// let body = br#"{"model": "m", "usage": {"input_tokens": 3}}"#;
/// let out = toolnexus_server::wire::with_cost_bytes(body, &Cost::new(0.0, CostSource::Cache));
/// assert_eq!(out, br#"{"model": "m", "usage": {"input_tokens": 3,"cost":0.0,"cost_source":"cache"}}"#);
/// ```
pub fn with_cost_bytes(body: &[u8], settled: &Cost) -> Vec<u8> {
    let Some(fields) = cost_fields(settled) else {
        return body.to_vec();
    };
    if let Some((close, empty)) = usage_close(body) {
        let mut out = Vec::with_capacity(body.len() + 96);
        out.extend_from_slice(&body[..close]);
        for (i, (k, v)) in fields.iter().enumerate() {
            if i > 0 || !empty {
                out.push(b',');
            }
            out.extend_from_slice(Value::from(*k).to_string().as_bytes());
            out.push(b':');
            out.extend_from_slice(v.to_string().as_bytes());
        }
        out.extend_from_slice(&body[close..]);
        return out;
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(mut v) => {
            with_cost(&mut v, settled);
            serde_json::to_vec(&v).unwrap_or_else(|_| body.to_vec())
        }
        Err(_) => body.to_vec(),
    }
}

/// Where the top-level object's `"usage"` object closes (the offset of its
/// `}`) and whether it is empty; `None` without one, or when it already has
/// a `"cost"` key.
fn usage_close(b: &[u8]) -> Option<(usize, bool)> {
    let mut i = ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        i = ws(b, i);
        if b.get(i) == Some(&b'}') {
            return None;
        }
        let (key, after) = string(b, i)?;
        i = ws(b, after);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = ws(b, i + 1);
        if key == b"usage" && b.get(i) == Some(&b'{') {
            let mut j = i + 1;
            let mut empty = true;
            loop {
                j = ws(b, j);
                if b.get(j) == Some(&b'}') {
                    return Some((j, empty));
                }
                empty = false;
                let (inner, after) = string(b, j)?;
                if inner == b"cost" {
                    return None;
                }
                j = ws(b, after);
                if b.get(j) != Some(&b':') {
                    return None;
                }
                j = ws(b, skip_value(b, ws(b, j + 1))?);
                match b.get(j) {
                    Some(b',') => j += 1,
                    Some(b'}') => {}
                    _ => return None,
                }
            }
        }
        i = ws(b, skip_value(b, i)?);
        match b.get(i) {
            Some(b',') => i += 1,
            _ => return None,
        }
    }
}

/// The first byte at or after `i` that is not JSON whitespace.
fn ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// The raw bytes of the string starting at `i` (between its quotes, escapes
/// as written) and the offset after its closing quote.
fn string(b: &[u8], i: usize) -> Option<(&[u8], usize)> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    loop {
        match b.get(j)? {
            b'\\' => j += 2,
            b'"' => return Some((&b[i + 1..j], j + 1)),
            _ => j += 1,
        }
    }
}

/// The offset after the JSON value starting at `i`.
fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => string(b, i).map(|(_, after)| after),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match b.get(j)? {
                    b'"' => {
                        j = string(b, j)?.1;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while let Some(c) = b.get(j) {
                if matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                    break;
                }
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

/// One answer read through its question's bands.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The question's key.
    pub key: String,
    /// Whether the answer is outside its uncertain band.
    pub sure: bool,
    /// A noul's verdict (`yes`, `no` or `uncertain`); `None` for other kinds.
    pub verdict: Option<&'static str>,
    /// The bands it was read through: the file's, else the defaults.
    pub bands: Bands,
}

/// Each answer of `d` read through its question's bands (from a thresholds
/// file; others through the defaults), in key order.
///
/// ```
/// use std::collections::BTreeMap;
/// use toolnexus::classifier::Decision;
/// let d = Decision::from_value(&serde_json::json!({
///     "model": "m", "answers": {"spam": {"type": "noul", "noul": 0.97}},
///     "usage": {"input_tokens": 1, "output_tokens": 0}
/// }))?;
/// let read = toolnexus_server::wire::verdicts(&d, &BTreeMap::new());
/// assert_eq!((read[0].key.as_str(), read[0].verdict, read[0].sure), ("spam", Some("yes"), true));
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
pub fn verdicts(d: &Decision, key_bands: &BTreeMap<String, Bands>) -> Vec<Verdict> {
    let asked = Asked::with_key_bands(d.clone(), Bands::default(), key_bands.clone());
    d.answers
        .keys()
        .filter_map(|key| {
            let banded = asked.get(key).ok()?;
            let verdict = match banded {
                Banded::Noul { verdict, .. } => Some(verdict.as_str()),
                _ => None,
            };
            Some(Verdict {
                key: key.clone(),
                sure: banded.is_sure(),
                verdict,
                bands: asked.bands_for(key),
            })
        })
        .collect()
}

/// Verdicts as JSON: `{"key": {"sure": bool, "verdict"?: …, "bands": {low, high}}}`
/// (what `eval`, `batch` and the MCP tools add under `"verdicts"`).
///
/// ```
/// use std::collections::BTreeMap;
/// use toolnexus::classifier::Decision;
/// let d = Decision::from_value(&serde_json::json!({
///     "model": "m", "answers": {"spam": {"type": "noul", "noul": 0.97}},
///     "usage": {"input_tokens": 1, "output_tokens": 0}
/// }))?;
/// let v = toolnexus_server::wire::verdicts_json(&d, &BTreeMap::new());
/// assert_eq!(v["spam"]["verdict"], "yes");
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
pub fn verdicts_json(d: &Decision, key_bands: &BTreeMap<String, Bands>) -> Value {
    let mut out = serde_json::Map::new();
    for Verdict {
        key,
        sure,
        verdict,
        bands: b,
    } in verdicts(d, key_bands)
    {
        let mut v = serde_json::Map::new();
        v.insert("sure".into(), Value::Bool(sure));
        if let Some(verdict) = verdict {
            v.insert("verdict".into(), Value::from(verdict));
        }
        v.insert("bands".into(), json!({"low": b.low, "high": b.high}));
        out.insert(key, Value::Object(v));
    }
    Value::Object(out)
}

/// Verdicts as one header value: `key=verdict` joined by `; ` (a noul's
/// verdict, else `sure` or `unsure`): serve's `x-toolnexus-verdicts`.
///
/// ```
/// use std::collections::BTreeMap;
/// use toolnexus::classifier::Decision;
/// let d = Decision::from_value(&serde_json::json!({
///     "model": "m", "answers": {"spam": {"type": "noul", "noul": 0.02}},
///     "usage": {"input_tokens": 1, "output_tokens": 0}
/// }))?;
/// assert_eq!(toolnexus_server::wire::verdicts_header(&d, &BTreeMap::new()), "spam=no");
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
pub fn verdicts_header(d: &Decision, key_bands: &BTreeMap<String, Bands>) -> String {
    verdicts(d, key_bands)
        .into_iter()
        .map(|v| {
            let what = v.verdict.unwrap_or(if v.sure { "sure" } else { "unsure" });
            format!("{}={what}", v.key)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A state is a string, an object or an array (as the System One wire takes
/// it); a bare number, boolean or null is refused, naming it.
///
/// ```
/// use serde_json::json;
/// use toolnexus_server::wire::check_state;
/// assert!(check_state(&json!({"message": "hi"})).is_ok());
/// assert_eq!(
///     check_state(&json!(3)).unwrap_err(),
///     "a state is a string, an object or an array, not a number (quote it to send text: '\"…\"')"
/// );
/// ```
pub fn check_state(v: &Value) -> Result<(), String> {
    let kind = match v {
        Value::String(_) | Value::Object(_) | Value::Array(_) => return Ok(()),
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
    };
    Err(format!(
        "a state is a string, an object or an array, not {kind} (quote it to send text: '\"…\"')"
    ))
}

/// The fields a wire question may have; `x_…` extension fields are allowed too.
const QUESTION_FIELDS: [&str; 3] = ["type", "instructions", "criteria"];

/// Reads a question set: an object of key → wire question, within the
/// client-side limits. A field no question has (a misspelt `instructionz`) is
/// an error naming the question and the field, not a question silently asked
/// without it. The error is the text alone; the caller says where it was read.
///
/// ```
/// use serde_json::json;
/// use toolnexus_server::wire::read_questions;
/// let qs = read_questions(&json!({"spam": {"type": "noul", "instructions": "Spam?"}})).unwrap();
/// assert_eq!(qs.len(), 1);
/// let e = read_questions(&json!({"spam": {"type": "noul", "instructionz": "Spam?"}})).unwrap_err();
/// assert!(e.starts_with("question \"spam\": unknown field \"instructionz\""), "{e}");
/// ```
pub fn read_questions(v: &Value) -> Result<Questions, String> {
    if let Value::Object(questions) = v {
        for (key, q) in questions {
            let Value::Object(fields) = q else { continue };
            if let Some(field) = fields
                .keys()
                .find(|f| !QUESTION_FIELDS.contains(&f.as_str()) && !f.starts_with("x_"))
            {
                return Err(format!(
                    "question {key:?}: unknown field {field:?} (a question has \"type\", \"instructions\" and \"criteria\")"
                ));
            }
        }
    }
    let questions = questions_from_wire(v).map_err(|e| e.to_string())?;
    validate_questions(&questions).map_err(|e| e.to_string())?;
    Ok(questions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolnexus::testing::three_answers;

    #[test]
    fn a_settled_cost_goes_into_the_usage_bytes_and_nothing_else_moves() {
        let priced = Cost::new(
            0.0000173,
            CostSource::Priced {
                table: "toolnexus".into(),
                checked: "2026-12-05".into(),
            },
        );
        let fields = r#","cost":0.0000173,"cost_source":"priced","cost_table":"toolnexus","cost_checked":"2026-12-05""#;
        // Spacing, key order, number spelling and braces inside strings kept.
        let body = br#"{ "model" : "jev-1.13", "note": "a } and \" in a string",
  "answers": {"x": {"type": "noul", "noul": 0.10, "list": [1, {"a": "}"}]}},
  "usage": { "input_tokens" : 412, "output_tokens": 0 } , "tail": null }"#;
        let out = String::from_utf8(with_cost_bytes(body, &priced)).unwrap();
        let at = std::str::from_utf8(body)
            .unwrap()
            .find(" } , \"tail\"")
            .unwrap();
        let want = format!(
            "{}{fields}{}",
            &std::str::from_utf8(body).unwrap()[..at + 1],
            &std::str::from_utf8(body).unwrap()[at + 1..]
        );
        assert_eq!(out, want);
        serde_json::from_str::<Value>(&out).unwrap();
        // An empty usage takes the fields without a leading comma.
        let out = with_cost_bytes(br#"{"usage":{}}"#, &priced);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!("{{\"usage\":{{{}}}}}", &fields[1..])
        );
        // A usage with `"cost": null` is written again: one `cost` key.
        let out = with_cost_bytes(br#"{"usage":{"input_tokens":3,"cost":null}}"#, &priced);
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["usage"]["cost"], 0.0000173);
        assert_eq!(v["usage"]["input_tokens"], 3);
        // No usage object: one is added by writing the answer again.
        let v: Value =
            serde_json::from_slice(&with_cost_bytes(br#"{"model":"m"}"#, &priced)).unwrap();
        assert_eq!(v["usage"]["cost_source"], "priced");
        // A reported or unknown cost leaves the bytes alone.
        for settled in [Cost::UNKNOWN, Cost::new(0.5, CostSource::Reported)] {
            assert_eq!(with_cost_bytes(body, &settled), body.to_vec());
        }
    }

    #[test]
    fn a_settled_cost_goes_beside_the_usage_it_priced() {
        let priced = Cost::new(
            0.0000173,
            CostSource::Priced {
                table: "toolnexus".into(),
                checked: "2026-12-05".into(),
            },
        );
        let mut v = three_answers(None).to_value();
        with_cost(&mut v, &priced);
        assert_eq!(
            v["usage"],
            serde_json::json!({"input_tokens": 412, "output_tokens": 38, "cost": 0.0000173,
                "cost_source": "priced", "cost_table": "toolnexus", "cost_checked": "2026-12-05"})
        );
        let before = three_answers(None).to_value();
        let mut v = before.clone();
        with_cost(&mut v, &Cost::UNKNOWN);
        assert_eq!(v, before, "an unknown cost adds nothing, never 0");
        let reported = three_answers(Some(0.25)).to_value();
        let mut v = reported.clone();
        with_cost(&mut v, &Cost::new(0.25, CostSource::Reported));
        assert_eq!(v, reported, "a reported cost is the backend's own, as sent");
    }
}
