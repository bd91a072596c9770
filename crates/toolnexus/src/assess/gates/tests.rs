use std::collections::BTreeMap;

use serde_json::json;

use super::*;
use crate::assess::{Gold, Outcome, Row, Run, SummaryOptions, summarize};
use crate::classifier::Decision;
use crate::judge::{choice, noul, questions, score};

#[test]
fn parsing_names_the_text_and_the_metrics() {
    let g = Gate::parse_min(" spam.accuracy = 0.9 ").unwrap();
    assert_eq!(
        g,
        Gate {
            key: "spam".into(),
            metric: "accuracy".into(),
            bound: Bound::Min,
            value: 0.9
        }
    );
    assert_eq!(Gate::parse_max("gate.n=10").unwrap().key, "gate");
    let cases = [
        (
            "spam",
            "--min spam: want key.metric=value, e.g. spam.accuracy=0.9",
        ),
        (
            "spam=0.9",
            "--min spam=0.9: want key.metric=value, e.g. spam.accuracy=0.9",
        ),
        (
            ".accuracy=0.9",
            "--min .accuracy=0.9: no question key before the metric",
        ),
        (
            "spam.=0.9",
            "--min spam.=0.9: want key.metric=value, e.g. spam.accuracy=0.9",
        ),
        (
            "spam.accuracy=high",
            "--min spam.accuracy=high: \"high\" is not a number",
        ),
        (
            "spam.accuracy=NaN",
            "--min spam.accuracy=NaN: \"NaN\" is not a number",
        ),
        (
            "spam.accuracy=",
            "--min spam.accuracy=: \"\" is not a number",
        ),
    ];
    for (text, want) in cases {
        let e = Gate::parse_min(text).unwrap_err();
        assert_eq!(e.to_string(), want, "{text}");
        assert_eq!(e.kind(), AssessErrorKind::Invalid);
    }
    let e = Gate::parse_min("spam.f1=0.9").unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "--min spam.f1=0.9: unknown metric \"f1\" (metrics: {})",
            METRICS.join(", ")
        )
    );
    for m in METRICS {
        assert!(Gate::parse_max(&format!("k.{m}=1")).is_ok(), "{m}");
    }
}

#[test]
fn bounds_are_inclusive_and_failures_print_figures() {
    let min = Gate::parse_min("spam.accuracy=0.9").unwrap();
    let max = Gate::parse_max("spam.ece=0.05").unwrap();
    assert!(min.holds(0.9) && min.holds(1.0) && !min.holds(0.8999));
    assert!(max.holds(0.05) && !max.holds(0.0501));
    let f = GateFailure {
        gate: min.clone(),
        figure: Some(0.8126),
        undefined: None,
    };
    assert_eq!(
        f.to_string(),
        "spam.accuracy = 0.813 is below the --min 0.9"
    );
    let f = GateFailure {
        gate: min,
        figure: Some(0.8999),
        undefined: None,
    };
    assert_eq!(
        f.to_string(),
        "spam.accuracy = 0.8999 is below the --min 0.9",
        "never prints the bound itself as the figure"
    );
    let f = GateFailure {
        gate: max,
        figure: Some(0.081),
        undefined: None,
    };
    assert_eq!(f.to_string(), "spam.ece = 0.081 is above the --max 0.05");
    let f = GateFailure {
        gate: Gate::parse_min("spam.n=100").unwrap(),
        figure: Some(40.0),
        undefined: None,
    };
    assert_eq!(f.to_string(), "spam.n = 40 is below the --min 100");
}

fn decided(answers: serde_json::Value) -> Outcome {
    Outcome::Decided(Decision::from_value(&json!({"model": "m", "answers": answers})).unwrap())
}

fn run() -> Run {
    let qs = questions(&[
        noul("spam", "Is it spam?"),
        choice(
            "desk",
            "Which desk?",
            [("billing", "money"), ("tech", "bugs")],
        ),
        score("risk", "How risky?", ["low", "mid", "high"]),
        noul("never", "Never answered?"),
    ])
    .unwrap();
    let mut rows = Vec::new();
    for i in 0..8 {
        let labels = BTreeMap::from([
            ("spam".to_string(), Gold::Noul(i % 2 == 0)),
            (
                "desk".to_string(),
                Gold::Choice(if i % 4 == 0 { "tech" } else { "billing" }.into()),
            ),
            ("risk".to_string(), Gold::Score(i % 3)),
            ("never".to_string(), Gold::Noul(true)),
        ]);
        let p = if i % 2 == 0 { 0.8 } else { 0.3 };
        rows.push(Row::new(
            i.to_string(),
            labels,
            decided(json!({
                "spam": {"type": "noul", "noul": p},
                "desk": {"type": "choice", "choice": "billing", "confidence": 0.7,
                         "probabilities": {"billing": 0.7, "tech": 0.3}},
                "risk": {"type": "score", "score": 1.0, "confidence": 0.6,
                         "probabilities": {"0": 0.2, "1": 0.6, "2": 0.2}}
            })),
        ));
    }
    Run::new(qs, rows)
}

#[test]
fn checks_figures_and_says_what_is_undefined() {
    let s = summarize(&run(), &SummaryOptions::default());
    let gates: Vec<Gate> = [
        ("spam.accuracy=1", Bound::Min),
        ("spam.accuracy=0.5", Bound::Min),
        ("desk.accuracy=0.9", Bound::Min),
        ("desk.mae=1", Bound::Max),
        ("spam.abstention_rate=0.2", Bound::Max),
        ("never.accuracy=0.5", Bound::Min),
        ("nope.accuracy=0.5", Bound::Min),
        ("risk.n=8", Bound::Min),
        ("gate.n=100", Bound::Min),
    ]
    .iter()
    .map(|(t, b)| Gate::parse(t, *b).unwrap())
    .collect();
    let failures = check_gates(&s, &gates);
    let text: Vec<String> = failures.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            "desk.accuracy = 0.75 is below the --min 0.9",
            "desk.mae: undefined: \"desk\" is a choice question and mae applies to score, so the --max 1 cannot hold",
            "spam.abstention_rate: undefined: abstentions are counted only with bands (a thresholds file), so the --max 0.2 cannot hold",
            "never.accuracy: undefined: no labelled row of \"never\" was answered (8 failed), so the --min 0.5 cannot hold",
            "nope.accuracy: no question \"nope\" in this run (it has desk, never, risk, spam), so the --min 0.5 cannot hold",
            "gate.n: this run has no row gate (no row is labelled and answered on every gated question), so the --min 100 cannot hold",
        ]
    );
    assert_eq!(failures[0].figure, Some(0.75));
    assert!(failures[1].figure.is_none());
}

#[test]
fn the_row_gate_is_addressed_by_its_key() {
    let s = summarize(
        &run(),
        &SummaryOptions {
            gate_keys: Some(vec!["spam".into(), "desk".into()]),
            ..Default::default()
        },
    );
    let g = s.gate.as_ref().expect("a row gate");
    assert_eq!(g.n, 8);
    let failures = check_gates(
        &s,
        &[
            Gate::parse_min("gate.n=8").unwrap(),
            Gate::parse_min("gate.accuracy=0.9").unwrap(),
        ],
    );
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].gate.metric, "accuracy");
    assert_eq!(failures[0].figure, Some(g.accuracy));
    assert!(
        failures[0]
            .to_string()
            .starts_with("gate.accuracy = 0.75 is below the --min 0.9"),
        "{}",
        failures[0]
    );
}
fn costed(id: &str, cost: Option<f64>, latency_ms: Option<f64>) -> Row {
    let mut row = Row::new(
        id,
        BTreeMap::from([("spam".to_string(), Gold::Noul(true))]),
        decided(json!({"spam": {"type": "noul", "noul": 0.9}})),
    );
    let usage = crate::classifier::ClassifierUsage {
        input_tokens: 300,
        output_tokens: 0,
        cost,
    };
    row.cost = crate::cost::Cost::of_usage(&usage);
    if let Outcome::Decided(d) = &mut row.outcome {
        d.usage = usage;
    }
    row.latency_ms = latency_ms;
    row
}

#[test]
fn cost_and_latency_gates_read_the_run_and_an_unknown_cost_never_passes() {
    let qs = questions(&[noul("spam", "Is it spam?")]).unwrap();
    let known = Run::new(
        qs.clone(),
        vec![
            costed("a", Some(0.00001), Some(100.0)),
            costed("b", Some(0.00003), Some(300.0)),
        ],
    );
    let s = summarize(&known, &SummaryOptions::default());
    let gates: Vec<Gate> = [
        "run.cost_per_row=0.00002",
        "run.cost_total=0.00003",
        "run.latency_p95_ms=250",
        "run.latency_p50_ms=200",
    ]
    .iter()
    .map(|t| Gate::parse_max(t).unwrap())
    .collect();
    let text: Vec<String> = gate_outcomes(&s, &gates)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        text,
        [
            "run.cost_per_row = 0.00002 holds the --max 0.00002",
            "run.cost_total = 0.00004 is above the --max 0.00003",
            "run.latency_p95_ms = 290 is above the --max 250",
            "run.latency_p50_ms = 200 holds the --max 200",
        ]
    );
    let unknown = Run::new(
        qs,
        vec![costed("a", Some(0.00001), None), costed("b", None, None)],
    );
    let s = summarize(&unknown, &SummaryOptions::default());
    let failures = check_gates(
        &s,
        &[
            Gate::parse_max("run.cost_per_row=100").unwrap(),
            Gate::parse_max("run.latency_p95_ms=1000").unwrap(),
        ],
    );
    let text: Vec<String> = failures.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            "run.cost_per_row: the cost is unknown: 1 of 2 answered rows did not report one, so the --max 100 cannot hold",
            "run.latency_p95_ms: undefined: no row of this run has a measured latency, so the --max 1000 cannot hold",
        ]
    );
    let e = Gate::parse_max("run.cost=1").unwrap_err().to_string();
    assert_eq!(
        e,
        "--max run.cost=1: unknown metric \"cost\" for the run (metrics: cost_per_row, cost_total, latency_p50_ms, latency_p95_ms)"
    );
}

#[test]
fn junit_has_one_testcase_per_gate_and_escapes_every_text() {
    let s = summarize(&run(), &SummaryOptions::default());
    let gates = [
        Gate::parse_min("spam.accuracy=0.5").unwrap(),
        Gate::parse_min("desk.accuracy=0.9").unwrap(),
        Gate::parse_min("a<b>&\"c'.n=1").unwrap(),
    ];
    let xml = junit_xml(&[(
        "runs/<new>\u{1}.jsonl".to_string(),
        gate_outcomes(&s, &gates),
    )]);
    assert_eq!(
        xml,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <testsuites name=\"toolnexus assess report\" tests=\"3\" failures=\"2\">\n  \
             <testsuite name=\"runs/&lt;new&gt;\u{FFFD}.jsonl\" tests=\"3\" failures=\"2\">\n    \
             <testcase classname=\"runs/&lt;new&gt;\u{FFFD}.jsonl\" name=\"--min spam.accuracy=0.5\">\n      \
             <system-out>spam.accuracy = 1 holds the --min 0.5</system-out>\n    \
             </testcase>\n    \
             <testcase classname=\"runs/&lt;new&gt;\u{FFFD}.jsonl\" name=\"--min desk.accuracy=0.9\">\n      \
             <failure type=\"gate\" message=\"desk.accuracy = 0.75 is below the --min 0.9\">desk.accuracy = 0.75 is below the --min 0.9</failure>\n    \
             </testcase>\n    \
             <testcase classname=\"runs/&lt;new&gt;\u{FFFD}.jsonl\" name=\"--min a&lt;b&gt;&amp;&quot;c&apos;.n=1\">\n      \
             <failure type=\"gate\" message=\"a&lt;b&gt;&amp;&quot;c&apos;.n: no question &quot;a&lt;b&gt;&amp;\\&quot;c&apos;&quot; in this run (it has desk, never, risk, spam), so the --min 1 cannot hold\">a&lt;b&gt;&amp;&quot;c&apos;.n: no question &quot;a&lt;b&gt;&amp;\\&quot;c&apos;&quot; in this run (it has desk, never, risk, spam), so the --min 1 cannot hold</failure>\n    \
             </testcase>\n  \
             </testsuite>\n\
             </testsuites>\n"
    );
}
