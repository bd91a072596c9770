//! `toolnexus probe` against a scripted System One upstream: an order-sensitive
//! one is found, a clean one passes, the call cap refuses before anything is
//! sent, and bad input is exit 2.

use serde_json::{Map, Value, json};

use crate::support::{Captured, TempDir, Upstream, tn};

fn questions() -> String {
    json!({
        "desk": {"type": "choice", "instructions": "Which desk owns this message?", "criteria": {
            "billing": "money moved: a refund or a charge",
            "shipping": "a parcel is late or damaged",
            "other": "anything else"
        }},
        "spam": {"type": "noul", "instructions": "Is this message unsolicited bulk mail?"}
    })
    .to_string()
}

fn states(dir: &TempDir, n: usize) -> String {
    let lines: String = (0..n)
        .map(|i| {
            let topic = ["money", "parcel", "anything"][i % 3];
            format!("{}\n", json!({"topic": topic, "spam": i % 2 == 0}))
        })
        .collect();
    dir.write("states.jsonl", &lines)
}

/// An upstream answering every question asked; `first` picks the first option
/// sent whatever it means, otherwise the option whose description holds the
/// state's topic. Nouls read the statement (a negation gets 1 - p).
fn upstream(first: bool) -> Upstream {
    Upstream::start(move |got: &Captured| {
        let body = got.json();
        let state = &body["state"];
        let mut answers = Map::new();
        for (key, q) in body["questions"].as_object().unwrap() {
            let answer = if q["type"] == "choice" {
                let options = q["criteria"].as_object().unwrap();
                let topic = state["topic"].as_str().unwrap();
                let picked = if first {
                    options.keys().next().unwrap().clone()
                } else {
                    options
                        .iter()
                        .find(|(_, d)| d.as_str().unwrap().contains(topic))
                        .map(|(id, _)| id.clone())
                        .unwrap()
                };
                let rest = 0.2 / (options.len() - 1) as f64;
                let probs: Map<String, Value> = options
                    .keys()
                    .map(|id| (id.clone(), json!(if *id == picked { 0.8 } else { rest })))
                    .collect();
                json!({"type": "choice", "choice": picked, "probabilities": probs, "confidence": 0.8})
            } else {
                let p = if state["spam"].as_bool().unwrap() {
                    0.9
                } else {
                    0.1
                };
                let negated = q["instructions"]
                    .as_str()
                    .unwrap()
                    .starts_with("Is the following false? ");
                json!({"type": "noul", "noul": if negated { 1.0 - p } else { p }})
            };
            answers.insert(key.clone(), answer);
        }
        (
            200,
            vec![],
            json!({"model": "jev-1.13", "answers": answers}).to_string(),
        )
    })
}

fn probe(dir: &TempDir, up: &Upstream, extra: &[&str]) -> crate::support::Out {
    let questions = questions();
    let states = states(dir, 6);
    let mut args = vec![
        "probe",
        "--style",
        "systemone",
        "--base-url",
        &up.base_url,
        "--questions",
        &questions,
        "--states",
        &states,
    ];
    args.extend_from_slice(extra);
    tn(dir.path(), &args)
}

#[test]
fn an_order_sensitive_upstream_is_broken_and_exits_3() {
    let dir = TempDir::new("probe-order");
    let up = upstream(true);
    let out = probe(&dir, &up, &[]);
    assert_eq!(out.code, 3, "{out:?}");
    // The request, shuffled, reversed, rotated, negated, two repeats.
    assert!(
        out.stdout
            .starts_with("probe: 6 states × 7 variants = 42 calls (style systemone"),
        "{}",
        out.stdout
    );
    assert_eq!(up.requests().len(), 42);
    // What it would spend is said before anything is sent: jev-latest is priced.
    let spend = out.stdout.lines().nth(1).unwrap_or_default();
    assert!(
        spend.starts_with("probe: input tokens ≈ ")
            && spend.contains("cost ≈ $")
            && spend.contains("priced (toolnexus, checked 2026-12-05) for jev-latest"),
        "{spend}"
    );
    assert!(out.stdout.contains("\ndesk (choice)\n"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("  order: broken: the answer follows the option order"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("  shuffle: broken: the pick does not follow the descriptions"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("  polarity: ok: "), "{}", out.stdout);
    assert!(out.stdout.contains("42 calls, 0 failed"), "{}", out.stdout);
}

#[test]
fn a_clean_upstream_passes_and_json_is_one_object() {
    let dir = TempDir::new("probe-clean");
    let up = upstream(false);
    let out = probe(&dir, &up, &["--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("42 calls"), "{}", out.stderr);
    let report: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(report["calls"], 42);
    assert_eq!(report["failed_calls"], 0);
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), 5, "{report:#}");
    for r in results {
        assert_eq!(r["verdict"], "ok", "{r}");
        assert_eq!(r["range"].as_array().unwrap().len(), 2, "{r}");
    }
    // The text report says the same.
    let text = probe(&dir, &up, &["--probes", "order,polarity"]);
    assert_eq!(text.code, 0, "{text:?}");
    assert!(
        text.stdout
            .starts_with("probe: 6 states × 4 variants = 24 calls"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("  order: ok: "), "{}", text.stdout);
    assert!(!text.stdout.contains("repeat"), "{}", text.stdout);
}

#[test]
fn the_call_cap_refuses_before_anything_is_sent() {
    let dir = TempDir::new("probe-cap");
    let up = upstream(false);
    let out = probe(&dir, &up, &["--max-calls", "41"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("probe: 6 states × 7 variants = 42 calls"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("more than --max-calls 41"),
        "{}",
        out.stderr
    );
    assert!(up.requests().is_empty());
    // --max-states bounds the states read, and so the calls.
    let out = probe(&dir, &up, &["--max-calls", "41", "--max-states", "5"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(up.requests().len(), 35);
}

#[test]
fn bad_input_is_exit_2_naming_the_flag_and_line() {
    let dir = TempDir::new("probe-bad");
    let up = upstream(false);
    let questions = questions();
    let states = dir.write("states.jsonl", "{\"topic\": \"money\"}\n\n42\n");
    let base = ["probe", "--style", "systemone", "--base-url", &up.base_url];
    let with = |extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        tn(dir.path(), &a)
    };
    let out = with(&["--questions", &questions, "--states", &states]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--states"), "{}", out.stderr);
    assert!(out.stderr.contains("line 3"), "{}", out.stderr);

    let empty = dir.write("empty.jsonl", "\n");
    let out = with(&["--questions", &questions, "--states", &empty]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("no state"), "{}", out.stderr);

    let ok = dir.write("ok.jsonl", "{\"topic\": \"money\", \"spam\": true}\n");
    let out = with(&[
        "--questions",
        &questions,
        "--states",
        &ok,
        "--probes",
        "sideways",
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("sideways"), "{}", out.stderr);
    assert!(up.requests().is_empty());
}

#[test]
fn an_upstream_that_fails_every_call_is_exit_3_with_its_error() {
    let dir = TempDir::new("probe-down");
    let up = Upstream::start(|_| {
        (
            401,
            vec![],
            r#"{"detail":{"message":"bad key","error_type":"authentication_error"}}"#.into(),
        )
    });
    let out = probe(&dir, &up, &["--probes", "polarity"]);
    assert_eq!(out.code, 3, "{out:?}");
    assert!(out.stdout.contains("unmeasured"), "{}", out.stdout);
    assert!(out.stdout.contains("12 calls, 12 failed"), "{}", out.stdout);
    assert!(
        out.stderr.contains("12 of 12 calls failed"),
        "{}",
        out.stderr
    );
}
