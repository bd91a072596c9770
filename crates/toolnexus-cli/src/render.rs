//! Output: a decision as a readable table or as its wire JSON. Pure functions
//! over data; nothing here prints.

use std::collections::BTreeMap;

use serde_json::Value;
use toolnexus::classifier::{Decision, DecisionAnswer, near_uniform};
use toolnexus::cost::{Cost, CostSource};

/// Any value pretty-printed.
pub fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// A number as the table shows it: two decimals.
fn num(x: f64) -> String {
    format!("{x:.2}")
}

/// A cost in US dollars with three significant digits; never rounded to $0.
pub fn cost(c: Option<f64>) -> String {
    match c {
        None => "not reported".to_string(),
        Some(0.0) => "$0 (reported by the backend)".to_string(),
        Some(c) => {
            let magnitude = c.abs().log10().floor() as i32;
            let decimals = (2 - magnitude).clamp(2, 12) as usize;
            format!("${c:.decimals$}")
        }
    }
}

/// Probability keys in level order when they are all numbers ("2" before "10"),
/// else in the map's own order.
fn ordered(p: &BTreeMap<String, f64>) -> Vec<(&String, f64)> {
    let mut v: Vec<(&String, f64)> = p.iter().map(|(k, x)| (k, *x)).collect();
    if v.iter().all(|(k, _)| k.parse::<u64>().is_ok()) {
        v.sort_by_key(|(k, _)| k.parse::<u64>().unwrap_or(0));
    }
    v
}

fn probabilities(p: &BTreeMap<String, f64>) -> String {
    ordered(p)
        .into_iter()
        .map(|(k, x)| format!("{k}={}", num(x)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// The short name of the level nearest an expected score: the legend text up to
/// its first `:`, cut to 24 characters.
fn level_label(score: f64, legend: &BTreeMap<String, String>) -> Option<String> {
    let nearest = score.round().max(0.0) as u64;
    let text = legend.get(&nearest.to_string())?;
    let short = text.split(':').next().unwrap_or(text).trim();
    let mut out: String = short.chars().take(24).collect();
    if short.chars().count() > 24 {
        out.push('…');
    }
    Some(out)
}

/// One row per answer: key, type, answer, confidence, near-uniform, probabilities.
fn rows(d: &Decision) -> Vec<[String; 6]> {
    d.answers
        .iter()
        .map(|(key, a)| match a {
            DecisionAnswer::Noul(n) => [
                key.clone(),
                "noul".into(),
                num(n.noul),
                "-".into(),
                "-".into(),
                format!("true={} false={}", num(n.noul), num(1.0 - n.noul)),
            ],
            DecisionAnswer::Choice(c) => [
                key.clone(),
                "choice".into(),
                c.choice.clone(),
                num(c.confidence),
                yes_no(c.near_uniform).into(),
                probabilities(&c.probabilities),
            ],
            DecisionAnswer::Score(s) => [
                key.clone(),
                "score".into(),
                match level_label(s.score, &s.legend) {
                    Some(l) => format!("{} ({l})", num(s.score)),
                    None => num(s.score),
                },
                num(s.confidence),
                yes_no(near_uniform(&s.probabilities)).into(),
                probabilities(&s.probabilities),
            ],
            DecisionAnswer::Box(b) => [
                key.clone(),
                "box".into(),
                format!(
                    "top={} bottom={} left={} right={}",
                    num(b.coordinates.top),
                    num(b.coordinates.bottom),
                    num(b.coordinates.left),
                    num(b.coordinates.right)
                ),
                b.confidence.map(num).unwrap_or_else(|| "-".into()),
                "-".into(),
                "-".into(),
            ],
        })
        .collect()
}

/// The decision as a table, then model, calibrated, tokens and cost. A cost the
/// backend did not report reads "not reported", never $0.
pub fn decision_table(d: &Decision) -> String {
    table(d, cost(d.usage.cost))
}

/// [`decision_table`] with the cost the run's pricing settled and where it
/// came from: `$0.0000173, priced (toolnexus, checked 2026-12-05)`, `$0,
/// local`, or for a model no table prices "not reported, and no price for
/// MODEL (see --prices)", never $0.
pub fn decision_table_costed(d: &Decision, settled: &Cost) -> String {
    table(d, settled_cost(settled, &d.model))
}

/// The table's text for a settled cost (see [`decision_table_costed`]).
pub fn settled_cost(settled: &Cost, model: &str) -> String {
    match (settled.usd, &settled.source) {
        (Some(0.0), Some(source)) => format!("$0, {source}"),
        (Some(usd), Some(source)) => format!("{}, {source}", cost(Some(usd))),
        _ => format!("not reported, and no price for {model} (see --prices)"),
    }
}

/// Writes a cost toolnexus settled into a decision's wire JSON, beside the
/// usage it priced: `usage.cost` (US dollars, the spelling the wire already
/// has) and `usage.cost_source` (`priced`, `local` or `cache`), with
/// `usage.cost_table` and `usage.cost_checked` for a priced one. A cost the
/// backend reported is its own `usage.cost` already and is left as sent; an
/// unknown cost writes nothing: no `cost` key, never 0. Only fields are added
/// or set; the ones already there keep their types and order.
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

fn table(d: &Decision, cost_text: String) -> String {
    const HEAD: [&str; 6] = [
        "KEY",
        "TYPE",
        "ANSWER",
        "CONFIDENCE",
        "NEAR-UNIFORM",
        "PROBABILITIES",
    ];
    let rows = rows(d);
    let mut width = HEAD.map(|h| h.chars().count());
    for r in &rows {
        for (w, cell) in width.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: &[&str]| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                l.push_str(c);
            } else {
                l.push_str(c);
                l.extend(std::iter::repeat_n(' ', width[i] - c.chars().count() + 2));
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&mut out, &HEAD);
    for r in &rows {
        let cells: Vec<&str> = r.iter().map(String::as_str).collect();
        line(&mut out, &cells);
    }
    if rows.is_empty() {
        out.push_str("(no answers)\n");
    }
    out.push('\n');
    let calibrated = if d.calibrated {
        "yes"
    } else {
        "no (probabilities are the model's own report)"
    };
    for (k, v) in [
        ("model", d.model.clone()),
        ("calibrated", calibrated.to_string()),
        (
            "tokens",
            format!("{} in, {} out", d.usage.input_tokens, d.usage.output_tokens),
        ),
        ("cost", cost_text),
    ] {
        out.push_str(&format!("{k:<12}{v}\n"));
    }
    out
}

/// A JSON value on one line, cut to `max` characters.
pub fn compact(v: &Value, max: usize) -> String {
    let s = v.to_string();
    if s.chars().count() <= max {
        return s;
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Each answer of `d` read through its question's bands (from a thresholds
/// file; others through the defaults), in key order.
fn verdicts(
    d: &Decision,
    key_bands: &BTreeMap<String, toolnexus::judge::Bands>,
) -> Vec<(String, bool, Option<&'static str>, toolnexus::judge::Bands)> {
    use toolnexus::judge::{Asked, Banded, Bands};
    let asked = Asked::with_key_bands(d.clone(), Bands::default(), key_bands.clone());
    d.answers
        .keys()
        .filter_map(|key| {
            let banded = asked.get(key).ok()?;
            let verdict = match banded {
                Banded::Noul { verdict, .. } => Some(verdict.as_str()),
                _ => None,
            };
            Some((key.clone(), banded.is_sure(), verdict, asked.bands_for(key)))
        })
        .collect()
}

/// Verdicts as JSON: `{"key": {"sure": bool, "verdict"?: …, "bands": {low, high}}}`.
pub fn verdicts_json(d: &Decision, key_bands: &BTreeMap<String, toolnexus::judge::Bands>) -> Value {
    let mut out = serde_json::Map::new();
    for (key, sure, verdict, b) in verdicts(d, key_bands) {
        let mut v = serde_json::Map::new();
        v.insert("sure".into(), Value::Bool(sure));
        if let Some(verdict) = verdict {
            v.insert("verdict".into(), Value::from(verdict));
        }
        v.insert(
            "bands".into(),
            serde_json::json!({"low": b.low, "high": b.high}),
        );
        out.insert(key, Value::Object(v));
    }
    Value::Object(out)
}

/// Verdicts as one header value: `key=verdict` joined by `; ` (a noul's
/// verdict, else `sure` or `unsure`).
pub fn verdicts_header(
    d: &Decision,
    key_bands: &BTreeMap<String, toolnexus::judge::Bands>,
) -> String {
    verdicts(d, key_bands)
        .into_iter()
        .map(|(key, sure, verdict, _)| {
            let what = verdict.unwrap_or(if sure { "sure" } else { "unsure" });
            format!("{key}={what}")
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Verdicts as a table: one line per answer with its bands.
pub fn verdicts_table(
    d: &Decision,
    key_bands: &BTreeMap<String, toolnexus::judge::Bands>,
) -> String {
    let mut out = String::from("read through the thresholds file:\n");
    for (key, sure, verdict, b) in verdicts(d, key_bands) {
        let what = match (verdict, sure) {
            (Some(v), _) => v.to_string(),
            (None, true) => "sure".to_string(),
            (None, false) => "unsure (escalate)".to_string(),
        };
        let from = if key_bands.contains_key(&key) {
            "file"
        } else {
            "default"
        };
        out.push_str(&format!(
            "  {key}: {what} (bands {:.2}/{:.2}, {from})\n",
            b.low, b.high
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn demo_decision(cost: Option<f64>) -> Decision {
        let mut v = serde_json::json!({
            "model": "jev-1.13-20260917",
            "answers": {
                "desk": {"type": "choice", "choice": "billing", "confidence": 0.41,
                         "probabilities": {"billing": 0.41, "shipping": 0.26, "technical": 0.33}},
                "refund": {"type": "noul", "noul": 0.09},
                "urgency": {"type": "score", "score": 0.34, "confidence": 0.71,
                            "legend": {"0": "low: can wait", "1": "normal", "2": "high", "3": "critical"},
                            "probabilities": {"0": 0.71, "1": 0.25, "2": 0.03, "3": 0.01}}
            },
            "usage": {"input_tokens": 412, "output_tokens": 38}
        });
        if let Some(c) = cost {
            v["usage"]["cost"] = c.into();
        }
        Decision::from_value(&v).unwrap()
    }

    #[test]
    fn the_table_shows_every_field() {
        let t = decision_table(&demo_decision(Some(0.0000564)));
        let want = "\
KEY      TYPE    ANSWER      CONFIDENCE  NEAR-UNIFORM  PROBABILITIES
desk     choice  billing     0.41        no            billing=0.41 shipping=0.26 technical=0.33
refund   noul    0.09        -           -             true=0.09 false=0.91
urgency  score   0.34 (low)  0.71        no            0=0.71 1=0.25 2=0.03 3=0.01

model       jev-1.13-20260917
calibrated  yes
tokens      412 in, 38 out
cost        $0.0000564
";
        assert_eq!(t, want);
    }

    #[test]
    fn an_unreported_cost_is_never_zero() {
        let t = decision_table(&demo_decision(None));
        assert!(t.contains("cost        not reported\n"), "{t}");
        assert!(!t.contains('$'));
        assert_eq!(cost(Some(1.5)), "$1.50");
        assert_eq!(cost(Some(0.012345)), "$0.0123");
    }

    #[test]
    fn a_settled_cost_says_where_it_came_from() {
        let priced = Cost::new(
            0.0000173,
            CostSource::Priced {
                table: "toolnexus".into(),
                checked: "2026-12-05".into(),
            },
        );
        let t = decision_table_costed(&demo_decision(None), &priced);
        assert!(
            t.contains("cost        $0.0000173, priced (toolnexus, checked 2026-12-05)\n"),
            "{t}"
        );
        let local = decision_table_costed(&demo_decision(None), &Cost::new(0.0, CostSource::Local));
        assert!(local.contains("cost        $0, local\n"), "{local}");
        let unknown = decision_table_costed(&demo_decision(None), &Cost::UNKNOWN);
        assert!(
            unknown.contains("cost        not reported, and no price for jev-1.13-20260917"),
            "{unknown}"
        );
        assert!(!unknown.contains('$'));

        let mut v = demo_decision(None).to_value();
        with_cost(&mut v, &priced);
        assert_eq!(
            v["usage"],
            serde_json::json!({"input_tokens": 412, "output_tokens": 38, "cost": 0.0000173,
                "cost_source": "priced", "cost_table": "toolnexus", "cost_checked": "2026-12-05"})
        );
        let before = demo_decision(None).to_value();
        let mut v = before.clone();
        with_cost(&mut v, &Cost::UNKNOWN);
        assert_eq!(v, before, "an unknown cost adds nothing, never 0");
        let reported = demo_decision(Some(0.25)).to_value();
        let mut v = reported.clone();
        with_cost(&mut v, &Cost::new(0.25, CostSource::Reported));
        assert_eq!(v, reported, "a reported cost is the backend's own, as sent");
    }

    #[test]
    fn numeric_levels_sort_as_numbers() {
        let p: BTreeMap<String, f64> = [("10".into(), 0.5), ("2".into(), 0.5)].into();
        assert_eq!(probabilities(&p), "2=0.50 10=0.50");
    }
}
