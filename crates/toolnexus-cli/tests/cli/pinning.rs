//! Pinning (SPEC §20) end to end, against a loopback System One upstream whose
//! `jev-latest` moves from jev-1.13 to jev-1.14 mid-run: every record keeps
//! the answering model; `batch --cache` stops serving the old answer once the
//! move is seen and `--alias-ttl` forces a re-check; a floating alias and
//! files fitted on another model are warnings, and refusals under `--pinned`.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};
use toolnexus::assess::calibrate::NoulMap;
use toolnexus::assess::{CalibratedQuestion, Calibration, QuestionMap};
use toolnexus::classifier::{question_hash, questions_from_wire};

use crate::support::{Guard, TempDir, Upstream, out_lines, request, spam_questions, tn, toolnexus};

/// An upstream whose `jev-latest` answers as jev-1.13 until the flag is set,
/// then as jev-1.14 (with another probability, so a stale answer shows); a
/// pinned model name answers as itself.
fn moving() -> (Upstream, Arc<AtomicBool>) {
    let moved = Arc::new(AtomicBool::new(false));
    let flag = moved.clone();
    let up = Upstream::start(move |got| {
        let asked = got.json()["model"].as_str().unwrap_or("").to_string();
        let (model, p) = match asked.as_str() {
            "jev-latest" if flag.load(Ordering::SeqCst) => ("jev-1.14".to_string(), 0.2),
            "jev-latest" => ("jev-1.13".to_string(), 0.9),
            other => (other.to_string(), 0.5),
        };
        (
            200,
            vec![],
            json!({"model": model, "answers": {"spam": {"type": "noul", "noul": p}},
                   "usage": {"input_tokens": 9, "output_tokens": 1}})
            .to_string(),
        )
    });
    (up, moved)
}

fn states(dir: &TempDir, name: &str, ns: &[u32]) -> String {
    let text: String = ns.iter().map(|n| format!("{{\"n\": {n}}}\n")).collect();
    dir.write(name, &text)
}

/// `batch --style systemone` against `up` into `out`, then `extra`.
fn batch(
    dir: &TempDir,
    up: &Upstream,
    states: &str,
    out: &str,
    extra: &[&str],
) -> crate::support::Out {
    let questions = spam_questions().to_string();
    let mut args = vec![
        "batch",
        "--style",
        "systemone",
        "--base-url",
        &up.base_url,
        "--questions",
        &questions,
        "--states",
        states,
        "--out",
        out,
        "--no-progress",
    ];
    args.extend_from_slice(extra);
    tn(dir.path(), &args)
}

fn models_of(dir: &TempDir, out: &str) -> Vec<(String, bool)> {
    out_lines(&dir.join(out))
        .iter()
        .map(|l| {
            (
                l["decision"]["model"].as_str().unwrap_or("?").to_string(),
                l["cached"] == Value::Bool(true),
            )
        })
        .collect()
}

#[test]
fn batch_cache_stops_serving_an_alias_s_old_answers_once_it_moves() {
    let dir = TempDir::new("pin-move");
    let (up, moved) = moving();
    let cache = dir.join("c.db").display().to_string();
    let first = states(&dir, "first.jsonl", &[0, 1, 2]);
    let out = batch(&dir, &up, &first, "one.jsonl", &["--cache", &cache]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains(
            "toolnexus: warning: the default model jev-latest (--backend typesafe) is a floating alias"
        ),
        "{}",
        out.stderr
    );
    assert_eq!(up.requests().len(), 3);

    // Not moved yet: a rerun is served from the cache.
    let out = batch(&dir, &up, &first, "two.jsonl", &["--cache", &cache]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(up.requests().len(), 3, "nothing sent");
    assert!(
        models_of(&dir, "two.jsonl")
            .iter()
            .all(|(m, hit)| m == "jev-1.13" && *hit)
    );

    // The alias moves; a state never asked shows it.
    moved.store(true, Ordering::SeqCst);
    let fresh = states(&dir, "fresh.jsonl", &[7]);
    let out = batch(&dir, &up, &fresh, "three.jsonl", &["--cache", &cache]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains(
            "model \"jev-latest\" now answers as \"jev-1.14\" (it answered as \"jev-1.13\"); \
             decisions cached under it before are no longer served"
        ),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("cache: "),
        "a move is no cache failure: {}",
        out.stderr
    );

    // jev-1.13's answers are no longer served: every state is asked again.
    let out = batch(&dir, &up, &first, "four.jsonl", &["--cache", &cache]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(up.requests().len(), 3 + 1 + 3);
    assert_eq!(
        models_of(&dir, "four.jsonl"),
        vec![("jev-1.14".to_string(), false); 3]
    );
    // And the new answers are served in turn.
    let out = batch(&dir, &up, &first, "five.jsonl", &["--cache", &cache]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(up.requests().len(), 7);

    // The cache file says what the alias answers as now...
    let stats = tn(dir.path(), &["cache", "stats", &cache]);
    assert_eq!(stats.code, 0, "{stats:?}");
    assert!(
        stats
            .stdout
            .contains("jev-latest answers as jev-1.14 (last seen "),
        "{}",
        stats.stdout
    );
    let stats = tn(dir.path(), &["cache", "stats", &cache, "--json"]);
    let v: Value = serde_json::from_str(&stats.stdout).unwrap();
    assert_eq!(v["aliases"][0]["alias"], "jev-latest", "{v}");
    assert_eq!(v["aliases"][0]["model"], "jev-1.14", "{v}");
    // ...and tags each entry with both models.
    let export = tn(dir.path(), &["cache", "export", &cache]);
    assert_eq!(export.code, 0, "{export:?}");
    for line in export.stdout.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["requested"], "jev-latest", "{line}");
        assert_eq!(v["model"], "jev-1.14", "{line}");
    }
}

#[test]
fn the_alias_ttl_sends_states_the_cache_holds_and_re_checks_the_alias() {
    let dir = TempDir::new("pin-ttl");
    let (up, moved) = moving();
    let cache = dir.join("c.db").display().to_string();
    let first = states(&dir, "first.jsonl", &[0, 1]);
    assert_eq!(
        batch(&dir, &up, &first, "one.jsonl", &["--cache", &cache]).code,
        0
    );
    moved.store(true, Ordering::SeqCst);
    // Within the hour the cache cannot know the alias moved...
    let out = batch(
        &dir,
        &up,
        &first,
        "two.jsonl",
        &["--cache", &cache, "--quiet"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(up.requests().len(), 2);
    // ...with --alias-ttl 0 every state is sent, and the answers show the move.
    let out = batch(
        &dir,
        &up,
        &first,
        "three.jsonl",
        &["--cache", &cache, "--alias-ttl", "0"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(up.requests().len(), 4);
    assert_eq!(
        models_of(&dir, "three.jsonl"),
        vec![("jev-1.14".to_string(), false); 2]
    );
    // A pinned model is served whatever the TTL.
    let pinned = ["--cache", &cache, "--model", "jev-1.13", "--alias-ttl", "0"];
    assert_eq!(batch(&dir, &up, &first, "four.jsonl", &pinned).code, 0);
    let out = batch(&dir, &up, &first, "five.jsonl", &pinned);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(up.requests().len(), 6, "the pinned rerun sent nothing");
    assert!(!out.stderr.contains("floating"), "{}", out.stderr);

    // --alias-ttl belongs to --cache; a bad time names the flag.
    let out = batch(&dir, &up, &first, "six.jsonl", &["--alias-ttl", "5m"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--cache"), "{}", out.stderr);
    let out = batch(
        &dir,
        &up,
        &first,
        "six.jsonl",
        &["--cache", &cache, "--alias-ttl", "soon"],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--alias-ttl"), "{}", out.stderr);
}

#[test]
fn pinned_refuses_a_floating_alias_before_anything_is_sent() {
    let dir = TempDir::new("pin-refuse");
    let (up, _) = moving();
    let st = states(&dir, "s.jsonl", &[0]);
    let out = batch(&dir, &up, &st, "out.jsonl", &["--pinned"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains(
            "--pinned: the default model jev-latest (--backend typesafe) is a floating alias"
        ),
        "{}",
        out.stderr
    );
    for alias in ["jev-preview", "~jev", "jev-2-latest"] {
        let out = batch(&dir, &up, &st, "out.jsonl", &["--pinned", "--model", alias]);
        assert_eq!(out.code, 2, "{alias}: {out:?}");
        assert!(
            out.stderr
                .contains(&format!("--pinned: --model {alias} is a floating alias")),
            "{}",
            out.stderr
        );
    }
    let q = spam_questions().to_string();
    let eval = tn(
        dir.path(),
        &[
            "eval",
            "--style",
            "systemone",
            "--base-url",
            &up.base_url,
            "--questions",
            &q,
            "--state",
            "{\"n\": 1}",
            "--pinned",
        ],
    );
    assert_eq!(eval.code, 2, "{eval:?}");
    assert!(
        eval.stderr.contains("is a floating alias"),
        "{}",
        eval.stderr
    );
    let serve = tn(
        dir.path(),
        &[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--style",
            "systemone",
            "--base-url",
            &up.base_url,
            "--pinned",
        ],
    );
    assert_eq!(serve.code, 2, "{serve:?}");
    assert!(
        serve
            .stderr
            .contains("--pinned: the default model jev-latest"),
        "{}",
        serve.stderr
    );
    assert!(up.requests().is_empty(), "nothing was sent");

    // A pinned model runs, without a warning.
    let ok = batch(
        &dir,
        &up,
        &st,
        "out.jsonl",
        &["--pinned", "--model", "jev-1.13"],
    );
    assert_eq!(ok.code, 0, "{ok:?}");
    assert!(!ok.stderr.contains("warning"), "{}", ok.stderr);
}

/// A thresholds file for `spam` naming `models` (none: the key left out, as
/// older files were written).
fn thresholds(dir: &TempDir, name: &str, models: Option<&[&str]>) -> String {
    let mut t = json!({"format": "toolnexus.thresholds", "version": 1,
                       "bands": {"spam": {"low": 0.3, "high": 0.7}}});
    if let Some(m) = models {
        t["models"] = json!(m);
    }
    dir.write(name, &t.to_string())
}

/// A calibration file for `spam` fitted on `models`.
fn calibration(dir: &TempDir, name: &str, models: &[&str]) -> String {
    let qs = questions_from_wire(&spam_questions()).unwrap();
    let file = Calibration {
        questions: BTreeMap::from([(
            "spam".to_string(),
            CalibratedQuestion {
                hash: question_hash(&qs["spam"]),
                models: models.iter().map(|m| m.to_string()).collect(),
                rows: 500,
                map: QuestionMap::Noul {
                    map: NoulMap::Identity,
                },
            },
        )]),
    };
    dir.write(name, &file.to_json())
}

#[test]
fn files_fitted_on_another_model_warn_and_pinned_refuses_them() {
    let dir = TempDir::new("pin-files");
    let (up, _) = moving();
    let st = states(&dir, "s.jsonl", &[0]);
    let other = thresholds(&dir, "t-other.json", Some(&["jev-1.12"]));
    let same = thresholds(&dir, "t-same.json", Some(&["jev-1.13"]));
    let old = thresholds(&dir, "t-old.json", None);
    let pinned = ["--model", "jev-1.13"];

    let with = |extra: &[&str]| {
        let mut a = pinned.to_vec();
        a.extend_from_slice(extra);
        batch(&dir, &up, &st, "out.jsonl", &a)
    };
    let out = with(&["--thresholds", &other, "--restart"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains(&format!(
            "toolnexus: warning: --thresholds {other} holds for jev-1.12, not for jev-1.13, the model asked for"
        )),
        "{}",
        out.stderr
    );
    let out = with(&["--thresholds", &other, "--restart", "--pinned"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains(&format!(
            "--pinned: --thresholds {other} holds for jev-1.12, not for jev-1.13, the model asked for"
        )),
        "{}",
        out.stderr
    );
    let out = with(&["--thresholds", &same, "--restart", "--pinned"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
    // A file from before files named their model still loads, with a warning.
    let out = with(&["--thresholds", &old, "--restart", "--pinned"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains(&format!(
            "--thresholds {old} names no model its cuts were picked on (an older file)"
        )),
        "{}",
        out.stderr
    );
    assert!(out_lines(&dir.join("out.jsonl"))[0]["verdicts"].is_object());

    let cal_other = calibration(&dir, "c-other.json", &["jev-1.12"]);
    let cal_same = calibration(&dir, "c-same.json", &["jev-1.13"]);
    let out = with(&["--calibration", &cal_other, "--restart"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains(&format!(
            "--calibration {cal_other} holds for jev-1.12, not for jev-1.13, the model asked for"
        )),
        "{}",
        out.stderr
    );
    let out = with(&["--calibration", &cal_other, "--restart", "--pinned"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("--pinned: --calibration"),
        "{}",
        out.stderr
    );
    let out = with(&["--calibration", &cal_same, "--restart", "--pinned"]);
    assert_eq!(out.code, 0, "{out:?}");

    // eval reads the same files the same way.
    let q = spam_questions().to_string();
    let eval = tn(
        dir.path(),
        &[
            "eval",
            "--style",
            "systemone",
            "--base-url",
            &up.base_url,
            "--model",
            "jev-1.13",
            "--questions",
            &q,
            "--state",
            "{\"n\": 1}",
            "--thresholds",
            &other,
            "--pinned",
        ],
    );
    assert_eq!(eval.code, 2, "{eval:?}");
    assert!(
        eval.stderr.contains("holds for jev-1.12, not for jev-1.13"),
        "{}",
        eval.stderr
    );
}

#[test]
fn every_record_keeps_the_model_that_answered_an_alias() {
    let dir = TempDir::new("pin-records");
    let (up, _) = moving();
    let q = dir.write("q.json", &spam_questions().to_string());
    let st = states(&dir, "s.jsonl", &[0, 1]);

    // A batch line.
    assert_eq!(batch(&dir, &up, &st, "out.jsonl", &["--quiet"]).code, 0);
    for l in out_lines(&dir.join("out.jsonl")) {
        assert_eq!(l["decision"]["model"], "jev-1.13", "{l}");
    }

    // A tape entry: the model asked for and the decision's own.
    let rec = tn(
        dir.path(),
        &[
            "tape",
            "record",
            "--style",
            "systemone",
            "--tape",
            "rec.tape.json",
            "--call",
            "c",
            "--questions",
            &q,
            "--states",
            &st,
            "--base-url",
            &up.base_url,
            "--retries",
            "-1",
        ],
    );
    assert_eq!(rec.code, 0, "{rec:?}");
    let tape: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("rec.tape.json")).unwrap()).unwrap();
    let text = tape.to_string();
    assert!(
        text.contains("\"jev-latest\""),
        "the model asked for: {text}"
    );
    assert!(
        text.contains("\"jev-1.13\""),
        "the model that answered: {text}"
    );

    // An assess run row.
    let labels = dir.write(
        "labels.jsonl",
        "{\"id\": \"a\", \"state\": {\"n\": 1}, \"labels\": {\"spam\": true}}\n",
    );
    let run = tn(
        dir.path(),
        &[
            "assess",
            "run",
            "--style",
            "systemone",
            "--base-url",
            &up.base_url,
            "--questions",
            &q,
            "--examples",
            &labels,
            "--out",
            "run.jsonl",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let rows = std::fs::read_to_string(dir.join("run.jsonl")).unwrap();
    let row: Value = serde_json::from_str(rows.lines().last().unwrap()).unwrap();
    assert_eq!(row["decision"]["model"], "jev-1.13", "{rows}");
}

/// `toolnexus serve` with its stderr kept in a file, and its address.
fn serve_logged(dir: &TempDir, args: &[&str]) -> (Guard, String, std::path::PathBuf) {
    use std::io::BufRead as _;
    let log = dir.join("serve.err");
    let mut all = vec!["serve", "--addr", "127.0.0.1:0"];
    all.extend_from_slice(args);
    let mut cmd = toolnexus(dir.path(), &all);
    cmd.stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap());
    let mut child = Guard(cmd.spawn().unwrap());
    let stdout = child.0.stdout.take().unwrap();
    let mut first = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("{first:?}"))
        .to_string();
    (child, addr, log)
}

#[test]
fn serve_warns_of_a_floating_alias_and_pinned_refuses_requests_naming_one() {
    let dir = TempDir::new("pin-serve");
    let (up, _) = moving();
    let body = |model: &str| {
        json!({"model": model, "state": {"n": 1}, "questions": spam_questions()}).to_string()
    };
    let (mut child, addr, log) =
        serve_logged(&dir, &["--style", "systemone", "--base-url", &up.base_url]);
    let r = request(
        &addr,
        "POST",
        "/v1/systemone",
        &[("content-type", "application/json")],
        body("jev-latest").as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["model"], "jev-1.13");
    let _ = child.0.kill();
    let _ = child.0.wait();
    let stderr = std::fs::read_to_string(&log).unwrap();
    assert!(
        stderr.contains("the default model jev-latest (--backend typesafe) is a floating alias"),
        "{stderr}"
    );
    assert!(
        stderr.contains("a request asked for \"jev-latest\", a floating alias"),
        "{stderr}"
    );
    drop(child);

    let (child, addr, _) = serve_logged(
        &dir,
        &[
            "--style",
            "systemone",
            "--base-url",
            &up.base_url,
            "--model",
            "jev-1.13",
            "--pinned",
        ],
    );
    let sent = up.requests().len();
    let r = request(
        &addr,
        "POST",
        "/v1/systemone",
        &[("content-type", "application/json")],
        body("jev-latest").as_bytes(),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(r.json()["detail"][0]["loc"], json!(["body", "model"]));
    assert!(
        r.json()["detail"][0]["msg"]
            .as_str()
            .unwrap()
            .contains("\"jev-latest\" is a floating alias and this server runs with --pinned"),
        "{}",
        r.body
    );
    assert_eq!(up.requests().len(), sent, "nothing sent");
    let r = request(
        &addr,
        "POST",
        "/v1/systemone",
        &[("content-type", "application/json")],
        body("jev-1.13").as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    drop(child);
}
