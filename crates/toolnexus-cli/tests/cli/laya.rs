//! The open-weights decision models on the command line, on the tiny random
//! fixtures of `toolnexus-local`: `eval` and `serve` with `--style laya` and
//! `--style decisiontune` give the reference packages' own answers; a missing
//! or broken `--model-dir` is bad input naming the flag or the file.

use serde_json::{Value, json};

use crate::support::{Server, TempDir, http, tn};

fn fixture(name: &str) -> String {
    format!(
        "{}/../toolnexus-local/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The first recorded case of an engine: its request and the package's answers.
fn first_case(name: &str) -> (Value, Value) {
    let text = std::fs::read_to_string(format!("{}/cases.json", fixture(name))).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let case = v["cases"][0].clone();
    let answers = match case.get("results") {
        Some(r) => r[0]["answers"].clone(),
        None => case["answers"].clone(),
    };
    (case["request"].clone(), answers)
}

fn near(got: &Value, want: &Value, what: &str) {
    let (g, w) = (got.as_f64().unwrap(), want.as_f64().unwrap());
    assert!((g - w).abs() <= 1.5e-4, "{what}: {g} vs {w}");
}

/// Laya's answers as the package gave them (rounded to 4 decimals).
fn same_as_laya(got: &Value, want: &Value, extras: bool) {
    for (key, w) in want.as_object().unwrap() {
        let g = &got[key];
        assert_eq!(g["type"], w["type"], "{key}");
        match w["type"].as_str().unwrap() {
            "noul" => near(&g["noul"], &w["noul"], key),
            "choice" => {
                assert_eq!(g["choice"], w["choice"], "{key}");
                for (id, p) in w["probabilities"].as_object().unwrap() {
                    near(&g["probabilities"][id], p, id);
                }
            }
            _ => near(&g["score"], &w["score"], key),
        }
        if extras {
            near(&g["answer_confidence"], &w["answer_confidence"], key);
            near(
                &g["action"]["act_probability"],
                &w["action"]["act_probability"],
                key,
            );
        }
    }
}

#[test]
fn eval_with_laya_gives_the_reference_answers() {
    let dir = TempDir::new("laya-eval");
    let (request, want) = first_case("laya");
    let out = tn(
        dir.path(),
        &[
            "eval",
            "--style",
            "laya",
            "--model-dir",
            &fixture("laya"),
            "--questions",
            &request["questions"].to_string(),
            "--state",
            &request["state"].to_string(),
            "--json",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let d: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(d["model"], "laya");
    assert_eq!(d["calibrated"], true);
    same_as_laya(&d["answers"], &want, false);
}

#[test]
fn eval_with_decisiontune_gives_the_reference_answers() {
    let dir = TempDir::new("dt-eval");
    let (request, want) = first_case("decisiontune");
    let out = tn(
        dir.path(),
        &[
            "eval",
            "--style",
            "decisiontune",
            "--model-dir",
            &fixture("decisiontune"),
            "--questions",
            &request["questions"].to_string(),
            "--state",
            &request["state"].to_string(),
            "--json",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let d: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(d["calibrated"], false);
    near(
        &d["answers"]["refund"]["noul"],
        &want["refund"]["p_yes"],
        "refund",
    );
    assert_eq!(d["answers"]["team"]["choice"], want["team"]["choice"]);
    near(
        &d["answers"]["urgency"]["score"],
        &want["urgency"]["expected_level"],
        "urgency",
    );
}

#[test]
fn a_missing_or_broken_model_dir_is_bad_input_naming_it() {
    let dir = TempDir::new("laya-bad");
    let qs = r#"{"refund": {"type": "noul", "instructions": "Refund?"}}"#;
    let out = tn(
        dir.path(),
        &[
            "eval",
            "--style",
            "laya",
            "--questions",
            qs,
            "--state",
            "\"x\"",
        ],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--model-dir"), "{}", out.stderr);

    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    for style in ["laya", "decisiontune"] {
        let out = tn(
            dir.path(),
            &[
                "eval",
                "--style",
                style,
                "--model-dir",
                empty.to_str().unwrap(),
                "--questions",
                qs,
                "--state",
                "\"x\"",
            ],
        );
        assert_eq!(out.code, 2, "{out:?}");
        let file = if style == "laya" {
            "rl_agent_config.json"
        } else {
            "manifest.json"
        };
        assert!(out.stderr.contains(file), "{}", out.stderr);
        assert!(!out.stderr.contains("model fetch"), "{}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    }
}

#[test]
fn serve_with_laya_answers_with_its_extra_numbers() {
    let dir = TempDir::new("laya-serve");
    let (request, want) = first_case("laya");
    let server = Server::start(
        dir.path(),
        &["--style", "laya", "--model-dir", &fixture("laya")],
    );
    let body = json!({
        "model": "laya",
        "questions": request["questions"],
        "state": request["state"],
    });
    let (status, reply) = http(
        &server.addr,
        "POST",
        "/v1/systemone",
        body.to_string().as_bytes(),
    );
    assert_eq!(status, 200, "{reply}");
    let v: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(v["model"], "laya");
    same_as_laya(&v["answers"], &want, true);
}
