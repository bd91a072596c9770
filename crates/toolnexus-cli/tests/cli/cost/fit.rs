//! `cost fit`: what it refuses to fit on, and coefficients it keeps
//! non-negative or names as undetermined.

use super::*;

/// A batch out file of `style` whose line `i` asked `shape(i)` and was
/// billed `tokens(i)` input tokens by `model`, its cost from `source`.
fn fit_file(
    dir: &TempDir,
    name: &str,
    style: &str,
    model: &str,
    source: &str,
    rows: impl Iterator<Item = (Value, i64)>,
) -> String {
    let mut body = json!({"toolnexus": "batch", "version": 1, "fingerprint": {
        "states": "sha256:0", "questions": "sha256:0", "style": style, "model": model}})
    .to_string()
        + "\n";
    for (i, (shape, tokens)) in rows.enumerate() {
        let cost = match source {
            "local" => json!({"usd": 0.0, "source": "local"}),
            _ => json!({"usd": null, "source": "unknown"}),
        };
        body += &json!({"line": i + 1, "decision": {"model": model, "answers": {},
            "usage": {"input_tokens": tokens, "output_tokens": 0}},
            "cost": cost, "shape": shape})
        .to_string();
        body.push('\n');
    }
    dir.write(name, &body)
}

fn shape(questions: u64, described: u64, levels: u64, state_chars: u64) -> Value {
    json!({"questions": questions, "described_options": described,
        "score_levels": levels, "state_chars": state_chars})
}

/// Issue 32: a local style's usage is no bill. A run judged on this machine
/// is refused by name, never fitted into an estimator that prices requests
/// at 0 tokens.
#[test]
fn cost_fit_refuses_a_run_judged_on_this_machine() {
    let dir = TempDir::new("cost-fit-local");
    // What a local style's lines look like: its own token counts, source local.
    let local = fit_file(
        &dir,
        "local.jsonl",
        "local",
        "minilm",
        "local",
        (0..40u64).map(|i| {
            (
                shape(1 + i % 5, 3 * (i % 4), 0, 50 + 7 * i),
                (60 - i) as i64,
            )
        }),
    );
    let r = tn(dir.path(), &["cost", "fit", &local]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains(&format!(
            "{local}: its 40 answers were judged on this machine (cost source local): no billed usage to fit on"
        )),
        "{}",
        r.stderr
    );
}

#[test]
fn cost_fit_refuses_to_mix_models_naming_both() {
    let dir = TempDir::new("cost-fit-mixed");
    let rows = || (0..20u64).map(|i| (shape(1 + i % 3, i % 4, 0, 40 + 9 * i), 300 + i as i64));
    let a = fit_file(&dir, "a.jsonl", "systemone", "jev-1.13", "priced", rows());
    let b = fit_file(&dir, "b.jsonl", "llm", "acme-judge-2", "unknown", rows());
    let r = tn(dir.path(), &["cost", "fit", &a, &b]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains(&format!(
            "cost fit: {a} line 2 was answered by \"jev-1.13\" and {b} line 2 by \"acme-judge-2\""
        )),
        "{}",
        r.stderr
    );
}

/// Usage that falls as states grow (least squares would fit a negative
/// coefficient) fits none below zero; what the runs cannot tell apart is
/// named; the estimate of 200 calls of five 255-option questions is never
/// 0 tokens or $0.
#[test]
fn cost_fit_keeps_coefficients_non_negative_and_names_what_it_cannot_determine() {
    let dir = TempDir::new("cost-fit-nonneg");
    // Every request asks two questions; bigger states billed fewer tokens.
    let run = fit_file(
        &dir,
        "run.jsonl",
        "systemone",
        "jev-1.13",
        "priced",
        (0..40u64).map(|i| (shape(2, 0, 0, 100 + 10 * i), (900 - 5 * i) as i64)),
    );
    let est = dir.join("est.json").display().to_string();
    let r = tn(dir.path(), &["cost", "fit", &run, "--out", &est, "--json"]);
    assert_eq!(r.code, 0, "{r:?}");
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    for (k, c) in v["coefficients"].as_object().unwrap() {
        assert!(c.as_f64().unwrap() >= 0.0, "{k} is {c}: {v}");
    }
    assert_eq!(v["coefficients"]["per_state_char"], 0.0, "{v}");
    for k in ["per_question", "per_described_option", "per_score_level"] {
        assert!(
            r.stderr.contains(&format!(
                "cost fit: warning: {k} is not determined by these runs"
            )),
            "{k}: {}",
            r.stderr
        );
    }
    let choices: Map<String, Value> = (0..5)
        .map(|q| {
            let options: Map<String, Value> = (0..255)
                .map(|o| (format!("o{o}"), json!(format!("option {o}"))))
                .collect();
            (
                format!("q{q}"),
                json!({"type": "choice", "instructions": "Which?", "criteria": options}),
            )
        })
        .collect();
    let q = dir.write("q.json", &Value::Object(choices).to_string());
    let states = dir.write(
        "s.jsonl",
        &(0..200)
            .map(|i| format!("{{\"n\":{i}}}\n"))
            .collect::<String>(),
    );
    let e = tn(
        dir.path(),
        &offline_estimate(
            &q,
            &states,
            &["--json", "--estimator", &est, "--model", "jev-1.13"],
        ),
    );
    assert_eq!(e.code, 0, "{e:?}");
    let v: Value = serde_json::from_str(&e.stdout).unwrap();
    assert_eq!(v["calls"], 200);
    assert!(v["input_tokens"].as_f64().unwrap() >= 200.0 * 600.0, "{v}");
    assert!(v["cost"]["usd"].as_f64().unwrap() > 0.0, "{v}");
}

#[test]
fn an_estimator_file_with_a_negative_or_zero_coefficient_is_refused_by_name() {
    let dir = TempDir::new("cost-est-bad");
    let q = dir.write(
        "q.json",
        &json!({"spam": {"type": "noul", "instructions": "Spam?"}}).to_string(),
    );
    let states = dir.write("s.jsonl", "{\"n\":1}\n");
    for (coefficients, want) in [
        (
            json!({"per_request": 261, "per_question": -8, "per_described_option": 21, "per_score_level": 8, "per_state_char": 0.25}),
            "coefficients.per_question is -8",
        ),
        (
            json!({"per_request": 0, "per_question": 0, "per_described_option": 0, "per_score_level": 0, "per_state_char": 0}),
            "coefficients.per_request is 0",
        ),
    ] {
        let est = dir.write(
            "est.json",
            &json!({"format": "toolnexus.estimator", "version": 1, "coefficients": coefficients})
                .to_string(),
        );
        let e = tn(
            dir.path(),
            &offline_estimate(&q, &states, &["--estimator", &est, "--model", "jev-1.13"]),
        );
        assert_eq!(e.code, 2, "{e:?}");
        assert!(
            e.stderr.contains(&format!("--estimator {est}: {want}")),
            "{}",
            e.stderr
        );
    }
}
