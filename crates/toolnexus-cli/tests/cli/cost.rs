//! Cost you can see before you spend it: prices with provenance on every
//! batch line, run row and summary; `cost fit` on billed runs; `--estimate`
//! sends nothing and lands within 5% of a held-out run's bill.

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::support::{
    TempDir, Upstream, batch_args, batch_of, out_lines, strs, tn, tn_args, toolnexus,
};

mod cascade;
mod fit;

/// The hidden billing of the loopback upstream: a shape formula the estimator
/// does not know, with ±4% of deterministic noise per request.
fn billed_input_tokens(body: &Value) -> i64 {
    let qs = body["questions"].as_object().cloned().unwrap_or_default();
    let (mut described, mut levels) = (0.0, 0.0);
    for q in qs.values() {
        match q["type"].as_str() {
            Some("choice") => {
                described += q["criteria"]
                    .as_object()
                    .map_or(0, |c| c.values().filter(|d| !d.is_null()).count())
                    as f64;
            }
            Some("score") => levels += q["criteria"].as_array().map_or(0, Vec::len) as f64,
            _ => {}
        }
    }
    let state = body["state"].to_string();
    let exact = 240.0
        + 11.0 * qs.len() as f64
        + 19.0 * described
        + 7.0 * levels
        + 0.29 * state.chars().count() as f64;
    // Noise from the state's own bytes: the same request bills the same.
    let h = state
        .bytes()
        .fold(2166136261u32, |h, b| (h ^ b as u32).wrapping_mul(16777619));
    let noise = (h % 801) as f64 / 10_000.0 - 0.04;
    (exact * (1.0 + noise)).round() as i64
}

/// A decision answering every question of `body`, with the hidden bill as its usage.
fn answer(body: &Value, cost: Option<f64>) -> String {
    let mut answers = Map::new();
    let qs = body["questions"].as_object().cloned().unwrap_or_default();
    for (key, q) in &qs {
        let a = match q["type"].as_str() {
            Some("choice") => {
                let ids: Vec<String> = q["criteria"].as_object().unwrap().keys().cloned().collect();
                let p = 1.0 / ids.len() as f64;
                let probabilities: Map<String, Value> =
                    ids.iter().map(|id| (id.clone(), json!(p))).collect();
                json!({"type": "choice", "choice": ids[0], "probabilities": probabilities, "confidence": 0.0})
            }
            Some("score") => {
                let levels = q["criteria"].as_array().cloned().unwrap_or_default();
                let legend: Map<String, Value> = levels
                    .iter()
                    .enumerate()
                    .map(|(i, l)| (i.to_string(), l.clone()))
                    .collect();
                let p = 1.0 / levels.len() as f64;
                let probabilities: Map<String, Value> = (0..levels.len())
                    .map(|i| (i.to_string(), json!(p)))
                    .collect();
                let score: f64 = (0..levels.len()).map(|i| i as f64 * p).sum();
                json!({"type": "score", "score": score, "legend": legend, "probabilities": probabilities, "confidence": 0.0})
            }
            _ => json!({"type": "noul", "noul": 0.25}),
        };
        answers.insert(key.clone(), a);
    }
    let mut usage =
        json!({"input_tokens": billed_input_tokens(body), "output_tokens": 2 * qs.len()});
    if let Some(c) = cost {
        usage["cost"] = json!(c);
    }
    json!({"model": body["model"], "answers": answers, "usage": usage}).to_string()
}

/// An upstream that bills by the hidden formula and reports no cost (as
/// TypeSafe's own API does).
fn billing_upstream() -> Upstream {
    Upstream::start(|got| (200, vec![], answer(&got.json(), None)))
}

/// Three question sets of different shapes.
fn question_sets() -> Vec<(&'static str, Value)> {
    vec![
        (
            "one-noul",
            json!({"spam": {"type": "noul", "instructions": "Is this unsolicited bulk mail?"}}),
        ),
        (
            "choice-and-score",
            json!({
                "desk": {"type": "choice", "instructions": "Which desk handles it?", "criteria": {
                    "billing": "money moved or is owed", "shipping": "a parcel is late or lost",
                    "other": "anything else"}},
                "urgency": {"type": "score", "instructions": "How soon must someone act?",
                    "criteria": ["whenever", "this week", "today", "this hour", "now"]}
            }),
        ),
        (
            "three",
            json!({
                "spam": {"type": "noul", "instructions": "Is this unsolicited bulk mail?"},
                "angry": {"type": "noul", "instructions": "Is the writer angry?"},
                "lang": {"type": "choice", "instructions": "Which language?", "criteria": {
                    "en": "English", "de": "German", "fr": null, "es": null}}
            }),
        ),
    ]
}

/// State `i`: a message whose length varies from a few words to a paragraph.
fn state(i: usize) -> Value {
    let words = [
        "refund", "parcel", "invoice", "late", "hello", "urgent", "thanks",
    ];
    let n = 3 + (i * 37) % 120;
    let text: Vec<&str> = (0..n).map(|k| words[(i + k * 3) % words.len()]).collect();
    json!({"id": i, "text": text.join(" ")})
}

fn states_file(dir: &TempDir, name: &str, ids: impl Iterator<Item = usize>) -> String {
    let body: String = ids.map(|i| format!("{}\n", state(i))).collect();
    dir.write(name, &body)
}

fn live<'a>(up: &'a Upstream, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "--style",
        "systemone",
        "--base-url",
        up.base_url.as_str(),
        "--model",
        "jev-1.13",
        "--retries",
        "0",
        "--no-progress",
    ];
    v.extend_from_slice(extra);
    v
}

fn batch(
    dir: &TempDir,
    up: &Upstream,
    q: &str,
    states: &str,
    out: &str,
    extra: &[&str],
) -> crate::support::Out {
    tn_args(dir.path(), &batch_of(q, states, out, &live(up, extra)))
}

/// `batch --estimate` of `states` against `up`'s jev-1.13, with `extra` flags.
fn estimate(
    dir: &TempDir,
    up: &Upstream,
    q: &str,
    states: &str,
    extra: &[&str],
) -> crate::support::Out {
    let mut args = vec!["batch", "--estimate", "--questions", q, "--states", states];
    args.extend(live(up, extra));
    tn(dir.path(), &args)
}

/// `batch --estimate` of `q` over `states` in the System One style, then
/// `extra`.
fn offline_estimate<'a>(q: &'a str, states: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let head = [
        "batch",
        "--estimate",
        "--questions",
        q,
        "--states",
        states,
        "--style",
        "systemone",
    ];
    [&head[..], extra].concat()
}

fn input_tokens(out: &Path) -> i64 {
    out_lines(out)
        .iter()
        .map(|l| l["decision"]["usage"]["input_tokens"].as_i64().unwrap())
        .sum()
}

#[test]
fn a_fit_on_billed_runs_estimates_a_held_out_half_within_5_percent() {
    let dir = TempDir::new("cost-fit");
    let up = billing_upstream();
    let train = states_file(&dir, "train.jsonl", (0..60).map(|i| 2 * i));
    let held = states_file(&dir, "held.jsonl", (0..60).map(|i| 2 * i + 1));
    let mut runs = Vec::new();
    let mut sets = Vec::new();
    for (name, qs) in question_sets() {
        let q = dir.write(&format!("{name}.questions.json"), &qs.to_string());
        let out = dir
            .join(&format!("{name}.train.jsonl"))
            .display()
            .to_string();
        let r = batch(&dir, &up, &q, &train, &out, &[]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        runs.push(out);
        sets.push((name, q));
    }
    let est = dir.join("estimator.json").display().to_string();
    let mut args = vec!["cost", "fit"];
    args.extend(runs.iter().map(String::as_str));
    args.extend(["--out", est.as_str()]);
    let fit = tn(dir.path(), &args);
    assert_eq!(fit.code, 0, "{}", fit.stderr);
    assert!(
        fit.stdout.contains("cost fit: 180 requests from 3 runs"),
        "{}",
        fit.stdout
    );
    assert!(
        fit.stdout
            .contains("fit error on these requests: mean absolute"),
        "{}",
        fit.stdout
    );

    let sent_before = up.requests().len();
    let (mut estimated, mut billed) = (0.0, 0i64);
    for (name, q) in &sets {
        let e = tn(
            dir.path(),
            &offline_estimate(
                q,
                &held,
                &[
                    "--estimator",
                    &est,
                    "--json",
                    "--base-url",
                    &up.base_url,
                    "--model",
                    "jev-1.13",
                ],
            ),
        );
        assert_eq!(e.code, 0, "{}", e.stderr);
        let v: Value = serde_json::from_str(&e.stdout).unwrap();
        assert_eq!(v["calls"], 60);
        assert_eq!(v["fitted"], true);
        assert_eq!(v["cost"]["source"], "priced");
        assert!(v["input_tokens_low"].as_f64() < v["input_tokens"].as_f64());
        estimated += v["input_tokens"].as_f64().unwrap();
        let out = dir.join(&format!("{name}.held.jsonl"));
        let r = batch(&dir, &up, q, &held, &out.display().to_string(), &[]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        billed += input_tokens(&out);
    }
    assert_eq!(
        up.requests().len(),
        sent_before + 180,
        "the estimates sent nothing"
    );
    let off = (estimated - billed as f64).abs() / billed as f64;
    assert!(
        off < 0.05,
        "estimated {estimated}, billed {billed}: {:.2}% off",
        off * 100.0
    );
}

#[test]
fn an_estimate_sends_nothing_needs_no_key_and_subtracts_cache_hits() {
    let dir = TempDir::new("cost-estimate");
    let up = billing_upstream();
    let (_, qs) = question_sets().remove(0);
    let q = dir.write("q.json", &qs.to_string());
    let first = states_file(&dir, "first.jsonl", 0..3);
    let all = states_file(&dir, "all.jsonl", (0..5).chain(0..2));
    let cache = dir.join("c.db").display().to_string();
    let out = dir.join("out.jsonl").display().to_string();
    let r = batch(&dir, &up, &q, &first, &out, &["--cache", &cache]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(up.requests().len(), 3);

    let e = estimate(&dir, &up, &q, &all, &["--cache", &cache]);
    assert_eq!(e.code, 0, "{}", e.stderr);
    assert!(
        e.stdout.contains(
            "7 inputs: 2 calls to systemone jev-1.13 (5 cache hits not sent); nothing was sent"
        ),
        "{}",
        e.stdout
    );
    assert!(
        e.stdout.contains("±30%: the published figures, not fitted"),
        "{}",
        e.stdout
    );
    assert!(
        e.stdout
            .contains("priced (toolnexus, checked 2026-12-05) for jev-1.13"),
        "{}",
        e.stdout
    );
    assert_eq!(up.requests().len(), 3, "nothing sent");

    // A cache file that is not there is not created.
    let missing = dir.join("none.db");
    let e = tn(
        dir.path(),
        &offline_estimate(
            &q,
            &all,
            &[
                "--json",
                "--cache",
                &missing.display().to_string(),
                "--model",
                "jev-1.13",
            ],
        ),
    );
    assert_eq!(e.code, 0, "{}", e.stderr);
    let v: Value = serde_json::from_str(&e.stdout).unwrap();
    assert_eq!(
        (v["calls"].as_u64(), v["cache_hits"].as_u64()),
        (Some(7), Some(0))
    );
    assert!(!missing.exists());

    // A model no table prices: unknown, never $0.
    let e = tn(
        dir.path(),
        &offline_estimate(&q, &all, &["--json", "--model", "someone-else-7b"]),
    );
    let v: Value = serde_json::from_str(&e.stdout).unwrap();
    assert_eq!(v["cost"], json!({"usd": null, "source": "unknown"}));
}

#[test]
fn a_batch_estimate_leaves_out_the_lines_its_out_file_holds() {
    let dir = TempDir::new("cost-estimate-resume");
    let up = billing_upstream();
    let (_, qs) = question_sets().remove(0);
    let q = dir.write("q.json", &qs.to_string());
    let states = states_file(&dir, "five.jsonl", 0..5);
    let out = dir.join("out.jsonl");
    let shown = out.display().to_string();
    let r = batch(&dir, &up, &q, &states, &shown, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // As a run stopped after three results leaves it: the header and three lines.
    let text = std::fs::read_to_string(&out).unwrap();
    let kept: String = text.lines().take(4).map(|l| format!("{l}\n")).collect();
    std::fs::write(&out, &kept).unwrap();
    let json = |extra: &[&str]| {
        let mut all = vec!["--json", "--out", &shown];
        all.extend_from_slice(extra);
        let e = estimate(&dir, &up, &q, &states, &all);
        assert_eq!(e.code, 0, "{}", e.stderr);
        serde_json::from_str::<Value>(&e.stdout).unwrap()
    };
    let v = json(&[]);
    assert_eq!(
        (v["calls"].as_u64(), v["already_done"].as_u64()),
        (Some(2), Some(3)),
        "{v}"
    );
    // --restart would ask them all again.
    let v = json(&["--restart"]);
    assert_eq!(
        (v["calls"].as_u64(), v["already_done"].as_u64()),
        (Some(5), Some(0))
    );
    // Read, never written: the file is as it was, and nothing was sent.
    assert_eq!(std::fs::read_to_string(&out).unwrap(), kept);
    assert_eq!(up.requests().len(), 5);
    // An out file of other inputs is refused, as the run would refuse it.
    let other = states_file(&dir, "other.jsonl", 10..12);
    let e = estimate(&dir, &up, &q, &other, &["--out", &shown]);
    assert_eq!(e.code, 2, "{e:?}");
    assert!(e.stderr.contains("answers other inputs"), "{}", e.stderr);
}

#[test]
fn every_batch_line_and_the_summary_say_where_the_cost_came_from() {
    let dir = TempDir::new("cost-lines");
    let up = billing_upstream();
    let (_, qs) = question_sets().remove(0);
    let q = dir.write("q.json", &qs.to_string());
    let states = states_file(&dir, "s.jsonl", 0..3);
    let out = dir.join("out.jsonl");
    let r = batch(&dir, &up, &q, &states, &out.display().to_string(), &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for l in out_lines(&out) {
        let tokens = l["decision"]["usage"]["input_tokens"].as_f64().unwrap();
        assert_eq!(l["cost"]["source"], "priced", "{l}");
        assert_eq!(l["cost"]["table"], "toolnexus");
        assert_eq!(l["cost"]["checked"], "2026-12-05");
        assert!((l["cost"]["usd"].as_f64().unwrap() - tokens * 0.042 / 1e6).abs() < 1e-15);
        assert!(
            l["decision"]["usage"].get("cost").is_none(),
            "the usage stays as sent"
        );
        assert_eq!(l["shape"]["questions"], 1);
    }
    assert!(r.stdout.contains("this run's cost $0.0000"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("(priced (toolnexus, checked 2026-12-05) 3)"),
        "{}",
        r.stdout
    );

    // A user's table goes over the compiled-in one, from the flag or the environment.
    let prices = dir.write(
        "ours.json",
        r#"{"format":"toolnexus.prices","version":1,"name":"contract-2026",
            "prices":[{"model":"jev-*","input_per_million":1,"output_per_million":0,
                       "source":"our contract","checked":"2026-11-30"}]}"#,
    );
    let out2 = dir.join("out2.jsonl");
    let args = batch_of(&q, &states, &out2.display().to_string(), &[]);
    let mut c = toolnexus(dir.path(), &strs(&args));
    c.args(live(&up, &[])).env("TOOLNEXUS_PRICES", &prices);
    let r = crate::support::run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for l in out_lines(&out2) {
        assert_eq!(l["cost"]["table"], "contract-2026", "{l}");
        let tokens = l["decision"]["usage"]["input_tokens"].as_f64().unwrap();
        assert!((l["cost"]["usd"].as_f64().unwrap() - tokens / 1e6).abs() < 1e-15);
    }

    // A reported cost always wins; a model no table lists stays unknown.
    let reporting = Upstream::start(|got| (200, vec![], answer(&got.json(), Some(0.5))));
    let out3 = dir.join("out3.jsonl");
    let r = batch(
        &dir,
        &reporting,
        &q,
        &states,
        &out3.display().to_string(),
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        out_lines(&out3)
            .iter()
            .all(|l| l["cost"] == json!({"usd": 0.5, "source": "reported"}))
    );
    assert!(
        r.stdout.contains("this run's cost $1.5000 (reported 3)"),
        "{}",
        r.stdout
    );
    let out4 = dir.join("out4.jsonl");
    let unlisted = ["--model", "someone-else-7b", "--no-progress"];
    let out4_arg = out4.display().to_string();
    let r = tn_args(
        dir.path(),
        &batch_args(&q, &states, &out4_arg, &up.base_url, &unlisted),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        out_lines(&out4)
            .iter()
            .all(|l| l["cost"] == json!({"usd": null, "source": "unknown"}))
    );
    assert!(
        r.stdout.contains("this run's cost unknown (unknown 3"),
        "{}",
        r.stdout
    );
}

#[test]
fn a_bad_prices_file_names_the_flag_the_file_and_the_key() {
    let dir = TempDir::new("cost-prices");
    let (_, qs) = question_sets().remove(0);
    let q = dir.write("q.json", &qs.to_string());
    let states = states_file(&dir, "s.jsonl", 0..2);
    let bad = dir.write(
        "p.json",
        r#"{"format":"toolnexus.prices","version":1,"prices":[{"model":"jev-*","input_per_million":0.04,
            "output_per_million":0,"source":"x","checked":"soon"}]}"#,
    );
    let out = dir.join("out.jsonl");
    let out_arg = out.display().to_string();
    let r = tn_args(
        dir.path(),
        &batch_args(
            &q,
            &states,
            &out_arg,
            "http://127.0.0.1:9/v1",
            &["--prices", &bad],
        ),
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("--prices {bad}: prices[0].checked is \"soon\"")),
        "{}",
        r.stderr
    );
    assert!(!out.exists(), "nothing was started");
    let mut c = toolnexus(dir.path(), &offline_estimate(&q, &states, &[]));
    c.env("TOOLNEXUS_PRICES", dir.join("missing.json"));
    let r = crate::support::run(c);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("$TOOLNEXUS_PRICES") && r.stderr.contains("missing.json: cannot read"),
        "{}",
        r.stderr
    );
}

#[test]
fn batch_needs_out_unless_it_estimates() {
    let dir = TempDir::new("cost-out");
    let r = tn(
        dir.path(),
        &["batch", "--questions", "{}", "--states", "s.jsonl"],
    );
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--out"), "{}", r.stderr);
    let r = tn(
        dir.path(),
        &[
            "batch",
            "--estimator",
            "e.json",
            "--questions",
            "{}",
            "--states",
            "s",
            "--out",
            "o",
        ],
    );
    assert_eq!(r.code, 2, "--estimator needs --estimate: {}", r.stderr);
}

#[test]
fn assess_runs_record_the_cost_and_estimates_leave_out_rows_already_run() {
    let dir = TempDir::new("cost-assess");
    let up = billing_upstream();
    let (_, qs) = question_sets().remove(0);
    let q = dir.write("q.json", &qs.to_string());
    let examples: String = (0..4)
        .map(|i| {
            format!(
                "{}\n",
                json!({"id": format!("e{i}"), "state": state(i), "labels": {"spam": i % 2 == 0}})
            )
        })
        .collect();
    let ex = dir.write("ex.jsonl", &examples);
    let three: String = examples.lines().take(3).map(|l| format!("{l}\n")).collect();
    let ex3 = dir.write("ex3.jsonl", &three);
    let run = dir.join("run.jsonl").display().to_string();
    let mut args = vec![
        "assess",
        "run",
        "--questions",
        &q,
        "--examples",
        &ex3,
        "--out",
        &run,
    ];
    args.extend(live(&up, &[]));
    let r = tn(dir.path(), &args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rows: Vec<Value> = std::fs::read_to_string(&run)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 3);
    for row in &rows {
        assert_eq!(row["cost"]["source"], "priced", "{row}");
    }
    assert!(
        r.stdout
            .contains("(priced (toolnexus, checked 2026-12-05) 3)"),
        "{}",
        r.stdout
    );
    let report = tn(dir.path(), &["assess", "report", &run]);
    assert!(
        report
            .stdout
            .contains("priced (toolnexus, checked 2026-12-05) 3"),
        "{}",
        report.stdout
    );

    let sent = up.requests().len();
    let e = tn(
        dir.path(),
        &[
            "assess",
            "run",
            "--estimate",
            "--json",
            "--questions",
            &q,
            "--examples",
            &ex,
            "--out",
            &run,
            "--style",
            "systemone",
            "--model",
            "jev-1.13",
        ],
    );
    assert_eq!(e.code, 0, "{}", e.stderr);
    let v: Value = serde_json::from_str(&e.stdout).unwrap();
    assert_eq!(
        (v["calls"].as_u64(), v["already_done"].as_u64()),
        (Some(1), Some(3))
    );
    assert_eq!(up.requests().len(), sent);

    // The run file fits like a batch out file does.
    let fit = tn(dir.path(), &["cost", "fit", &run, "--json"]);
    assert_eq!(fit.code, 0, "{}", fit.stderr);
    let v: Value = serde_json::from_str(&fit.stdout).unwrap();
    assert_eq!(v["requests"], 3);
}

#[test]
fn cost_fit_refuses_what_it_cannot_fit_on_naming_the_file() {
    let dir = TempDir::new("cost-fit-bad");
    let old = dir.write(
        "old.jsonl",
        "{\"toolnexus\":\"batch\",\"version\":1,\"fingerprint\":{\"states\":\"sha256:0\",\"questions\":\"sha256:0\",\"style\":\"systemone\",\"model\":\"m\"}}\n{\"line\":1,\"decision\":{\"model\":\"m\",\"answers\":{},\"usage\":{\"input_tokens\":300,\"output_tokens\":1}}}\n",
    );
    let r = tn(dir.path(), &["cost", "fit", &old]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains(&format!(
            "{old}: its 1 decision lines do not record their request's \"shape\""
        )),
        "{}",
        r.stderr
    );
    let other = dir.write("other.json", "{\"hello\": 1}\n");
    let r = tn(dir.path(), &["cost", "fit", &other]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains(&format!(
            "{other}: line 1: neither a batch out file nor an assess run file"
        )),
        "{}",
        r.stderr
    );
    let r = tn(dir.path(), &["cost", "fit", &old, "--out", &old]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}

#[test]
fn the_fixture_run_fits_and_its_estimator_file_reads_back() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cost");
    let dir = TempDir::new("cost-fixture");
    let est = dir.join("est.json").display().to_string();
    let mut args: Vec<String> = vec!["cost".into(), "fit".into()];
    for name in [
        "one-noul.train.jsonl",
        "choice-and-score.train.jsonl",
        "three.train.jsonl",
    ] {
        args.push(fixtures.join(name).display().to_string());
    }
    args.extend(["--out".into(), est.clone()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = tn(dir.path(), &args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&est).unwrap()).unwrap();
    assert_eq!(v["format"], "toolnexus.estimator");
    assert!(v["fit"]["worst_pct"].as_f64().unwrap() < 10.0, "{v}");
    // The held-out half, estimated offline against its recorded bill.
    let mut estimated = 0.0;
    let mut billed = 0;
    for name in ["one-noul", "choice-and-score", "three"] {
        let q = fixtures
            .join(format!("{name}.questions.json"))
            .display()
            .to_string();
        let e = tn(
            dir.path(),
            &offline_estimate(
                &q,
                &fixtures.join("held.jsonl").display().to_string(),
                &["--json", "--estimator", &est, "--model", "jev-1.13"],
            ),
        );
        assert_eq!(e.code, 0, "{}", e.stderr);
        estimated += serde_json::from_str::<Value>(&e.stdout).unwrap()["input_tokens"]
            .as_f64()
            .unwrap();
        billed += input_tokens(&fixtures.join(format!("{name}.held.jsonl")));
    }
    let off = (estimated - billed as f64).abs() / billed as f64;
    assert!(off < 0.05, "estimated {estimated}, billed {billed}");
}

/// Writes `tests/fixtures/cost/` again: the loopback upstream's bills for 60
/// training and 60 held-out states under three question sets. Run with
/// `cargo test -p toolnexus-cli --test cli cost::write_the_fixture -- --ignored`.
#[test]
#[ignore = "remakes the committed fixture"]
fn write_the_fixture() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cost");
    std::fs::create_dir_all(&fixtures).unwrap();
    let dir = TempDir::new("cost-fixture-write");
    let up = billing_upstream();
    let write = |name: &str, body: String| {
        std::fs::write(fixtures.join(name), body).unwrap();
        fixtures.join(name).display().to_string()
    };
    let train = write(
        "train.jsonl",
        (0..60).map(|i| format!("{}\n", state(2 * i))).collect(),
    );
    let held = write(
        "held.jsonl",
        (0..60).map(|i| format!("{}\n", state(2 * i + 1))).collect(),
    );
    for (name, qs) in question_sets() {
        let q = write(&format!("{name}.questions.json"), format!("{qs:#}\n"));
        for (half, states) in [("train", &train), ("held", &held)] {
            let out = fixtures.join(format!("{name}.{half}.jsonl"));
            let _ = std::fs::remove_file(&out);
            let r = batch(
                &dir,
                &up,
                &q,
                states,
                &out.display().to_string(),
                &["--concurrency", "1"],
            );
            assert_eq!(r.code, 0, "{}", r.stderr);
        }
    }
}

/// `eval` through the run's pricing: a Jev answer with no reported cost is
/// priced from the table (in the table and in `--json`'s usage); a reported
/// cost wins; a model no table lists stays unknown, never $0.
#[test]
fn eval_prices_a_jev_answer_and_keeps_a_reported_cost() {
    let dir = TempDir::new("cost-eval");
    let up = billing_upstream();
    let (_, qs) = question_sets().remove(0);
    let q = dir.write("q.json", &qs.to_string());
    let state = state(4).to_string();
    let eval = |up: &Upstream, model: &str, json: bool| {
        let mut args = vec![
            "eval",
            "--questions",
            &q,
            "--state",
            &state,
            "--style",
            "systemone",
            "--base-url",
            up.base_url.as_str(),
            "--model",
            model,
            "--retries",
            "0",
        ];
        if json {
            args.push("--json");
        }
        let r = tn(dir.path(), &args);
        assert_eq!(r.code, 0, "{}", r.stderr);
        r.stdout
    };

    let table = eval(&up, "jev-1.13", false);
    assert!(
        table.contains(", priced (toolnexus, checked 2026-12-05)\n"),
        "{table}"
    );
    let d: Value = serde_json::from_str(&eval(&up, "jev-1.13", true)).unwrap();
    let usage = &d["usage"];
    let tokens = usage["input_tokens"].as_f64().unwrap();
    assert!((usage["cost"].as_f64().unwrap() - tokens * 0.042 / 1e6).abs() < 1e-15);
    assert_eq!(usage["cost_source"], "priced", "{d}");
    assert_eq!(usage["cost_table"], "toolnexus");
    assert_eq!(usage["cost_checked"], "2026-12-05");

    let reporting = Upstream::start(|got| (200, vec![], answer(&got.json(), Some(0.5))));
    let table = eval(&reporting, "jev-1.13", false);
    assert!(table.contains("cost        $0.500, reported\n"), "{table}");
    let d: Value = serde_json::from_str(&eval(&reporting, "jev-1.13", true)).unwrap();
    assert_eq!(d["usage"]["cost"], 0.5, "the backend's own report: {d}");
    assert!(d["usage"].get("cost_source").is_none(), "{d}");

    let table = eval(&up, "someone-else-7b", false);
    assert!(
        table.contains("cost        not reported, and no price for someone-else-7b"),
        "{table}"
    );
    assert!(!table.contains('$'), "{table}");
    let d: Value = serde_json::from_str(&eval(&up, "someone-else-7b", true)).unwrap();
    assert!(d["usage"].get("cost").is_none(), "unknown is no cost: {d}");
    assert!(d["usage"].get("cost_source").is_none(), "{d}");
}

/// `serve` through the run's pricing: forwarding as sent, the answer's usage
/// gains the priced cost and its source (the upstream's key order kept); a
/// reported cost comes back byte for byte; a cache hit is a known 0.
#[test]
fn serve_answers_carry_the_priced_cost_and_its_source() {
    use crate::support::{Server, request};
    let dir = TempDir::new("cost-serve");
    // Pretty-printed, as no serializer of ours would write it: what comes
    // back must be these bytes, not the answer written again.
    let up = Upstream::start(|got| {
        let compact: Value = serde_json::from_str(&answer(&got.json(), None)).unwrap();
        (200, vec![], serde_json::to_string_pretty(&compact).unwrap())
    });
    // Not in sorted order: the upstream answers in the order it was asked.
    let (_, qs) = question_sets().remove(2);
    let body = json!({"model": "jev-1.13", "state": state(2), "questions": qs}).to_string();
    let cache = dir.join("c.db").display().to_string();
    let mut server = Server::start(
        dir.path(),
        &[
            "--style",
            "systemone",
            "--base-url",
            &up.base_url,
            "--cache",
            &cache,
        ],
    );
    let post = |addr: &str| request(addr, "POST", "/v1/systemone", &[], body.as_bytes());
    let r = post(&server.addr);
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    let usage = &v["usage"];
    let tokens = usage["input_tokens"].as_f64().unwrap();
    assert!((usage["cost"].as_f64().unwrap() - tokens * 0.042 / 1e6).abs() < 1e-15);
    assert_eq!(usage["cost_source"], "priced", "{v}");
    assert_eq!(usage["cost_table"], "toolnexus");
    assert_eq!(usage["cost_checked"], "2026-12-05");
    // Still the upstream's answer byte for byte: only the cost went into its usage.
    let keys: Vec<&String> = v["answers"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["spam", "angry", "lang"]);
    let direct = post(upstream_addr(&up.base_url).as_str());
    let close = direct
        .body
        .find("\"usage\":")
        .map(|u| u + direct.body[u..].find('}').unwrap())
        .unwrap();
    let fields = format!(
        r#","cost":{},"cost_source":"priced","cost_table":"toolnexus","cost_checked":"2026-12-05""#,
        usage["cost"]
    );
    assert_eq!(
        r.body,
        format!("{}{fields}{}", &direct.body[..close], &direct.body[close..])
    );
    assert!(usage["input_tokens"].is_i64(), "types unchanged: {v}");
    // The library reads serve's answer like any System One answer.
    toolnexus::classifier::Decision::from_value(&v).unwrap();

    let hit = post(&server.addr);
    assert_eq!(hit.header("x-toolnexus-cache"), Some("hit"));
    let h = hit.json();
    assert_eq!(h["usage"]["cost"], 0.0, "{h}");
    assert_eq!(h["usage"]["cost_source"], "cache", "{h}");
    server.terminate();

    // A reported cost wins and the upstream's bytes come back as they were.
    let reporting = Upstream::start(|got| (200, vec![], answer(&got.json(), Some(0.5))));
    let mut server = Server::start(
        dir.path(),
        &["--style", "systemone", "--base-url", &reporting.base_url],
    );
    let served = post(&server.addr);
    let direct = post(upstream_addr(&reporting.base_url).as_str());
    assert_eq!(served.status, 200, "{}", served.body);
    assert_eq!(served.body, direct.body);
    assert_eq!(served.json()["usage"]["cost"], 0.5);
    server.terminate();
}

/// The `host:port` of a loopback upstream's base URL.
fn upstream_addr(base_url: &str) -> String {
    base_url
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_string()
}

/// Issue 32: a price of 1e308 per million tokens printed `$inf`. A price no
/// judge is billed at is refused, naming the file and the key.
#[test]
fn an_absurd_price_is_refused_naming_the_file_and_the_key() {
    let dir = TempDir::new("cost-prices-absurd");
    let (_, qs) = question_sets().remove(0);
    let q = dir.write("q.json", &qs.to_string());
    let states = states_file(&dir, "s.jsonl", 0..3);
    for (key, value) in [
        ("input_per_million", "1.7e308"),
        ("output_per_million", "250000"),
    ] {
        let price = r#"{"format":"toolnexus.prices","version":1,"prices":[{"model":"jev-*",
            "input_per_million":0.04,"output_per_million":0,"source":"x","checked":"2026-12-01"}]}"#
            .replace(
                &format!(
                    "\"{key}\":{}",
                    if key.starts_with("in") { "0.04" } else { "0" }
                ),
                &format!("\"{key}\":{value}"),
            );
        let bad = dir.write("p.json", &price);
        let r = tn(
            dir.path(),
            &offline_estimate(&q, &states, &["--model", "jev-1.13", "--prices", &bad]),
        );
        assert_eq!(r.code, 2, "{r:?}");
        assert!(
            r.stderr
                .contains(&format!("--prices {bad}: prices[0].{key} is "))
                && r.stderr.contains(": more than $100000 per million"),
            "{}",
            r.stderr
        );
        assert!(
            !r.stdout.contains("inf") && !r.stderr.contains("$inf"),
            "{r:?}"
        );
    }
}
