//! Output: a decision as a readable table or as its wire JSON. Pure functions
//! over data; nothing here prints.

use std::collections::BTreeMap;

use serde_json::Value;
use toolnexus::classifier::{Decision, DecisionAnswer, near_uniform};
use toolnexus::cost::Cost;

/// A decision's wire JSON with its settled cost, and verdicts as JSON: the
/// servers write them too, so they live with the wire.
pub use toolnexus_server::wire::{verdicts_json, with_cost};

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

/// Verdicts as a table: one line per answer with its bands.
pub fn verdicts_table(
    d: &Decision,
    key_bands: &BTreeMap<String, toolnexus::judge::Bands>,
) -> String {
    let mut out = String::from("read through the thresholds file:\n");
    for toolnexus_server::wire::Verdict {
        key,
        sure,
        verdict,
        bands: b,
    } in toolnexus_server::wire::verdicts(d, key_bands)
    {
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
    use toolnexus::cost::CostSource;
    use toolnexus::testing::three_answers;

    #[test]
    fn the_table_shows_every_field() {
        let t = decision_table(&three_answers(Some(0.0000564)));
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
        let t = decision_table(&three_answers(None));
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
        let t = decision_table_costed(&three_answers(None), &priced);
        assert!(
            t.contains("cost        $0.0000173, priced (toolnexus, checked 2026-12-05)\n"),
            "{t}"
        );
        let local = decision_table_costed(&three_answers(None), &Cost::new(0.0, CostSource::Local));
        assert!(local.contains("cost        $0, local\n"), "{local}");
        let unknown = decision_table_costed(&three_answers(None), &Cost::UNKNOWN);
        assert!(
            unknown.contains("cost        not reported, and no price for jev-1.13-20260917"),
            "{unknown}"
        );
        assert!(!unknown.contains('$'));
    }

    #[test]
    fn numeric_levels_sort_as_numbers() {
        let p: BTreeMap<String, f64> = [("10".into(), 0.5), ("2".into(), 0.5)].into();
        assert_eq!(probabilities(&p), "2=0.50 10=0.50");
    }
}
