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

/// A copy of a fixture's model directory, to break one file of.
fn copy_fixture(name: &str, into: &std::path::Path) {
    fn copy(from: &std::path::Path, to: &std::path::Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let target = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy(&e.path(), &target);
            } else {
                std::fs::copy(e.path(), target).unwrap();
            }
        }
    }
    copy(std::path::Path::new(&fixture(name)), into);
}

fn eval_on(dir: &TempDir, style: &str, model_dir: &std::path::Path) -> crate::support::Out {
    let qs = r#"{"refund": {"type": "noul", "instructions": "Refund?"}}"#;
    tn(
        dir.path(),
        &[
            "eval",
            "--style",
            style,
            "--model-dir",
            model_dir.to_str().unwrap(),
            "--questions",
            qs,
            "--state",
            "\"x\"",
        ],
    )
}

fn mkfifo(path: &std::path::Path) {
    std::fs::remove_file(path).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success());
}

/// A FIFO or a device in place of a checkpoint's weights is refused by name
/// before it is opened (opening a FIFO waits for a writer forever).
#[test]
fn weights_that_are_not_a_regular_file_are_refused_by_name() {
    let dir = TempDir::new("laya-fifo");
    for style in ["laya", "decisiontune"] {
        let model = dir.join(style);
        copy_fixture(style, &model);
        let weights = model.join("model.safetensors");
        mkfifo(&weights);
        let out = eval_on(&dir, style, &model);
        assert_eq!(out.code, 2, "{style}: {out:?}");
        assert!(
            out.stderr.contains(&weights.display().to_string())
                && out.stderr.contains("a FIFO, not a regular file"),
            "{style}: {}",
            out.stderr
        );
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    }
}

/// `max_len: 0` in Laya's config is bad input naming the file and the key.
#[test]
fn a_laya_max_len_of_zero_is_bad_input_naming_the_key() {
    let dir = TempDir::new("laya-maxlen");
    let model = dir.join("laya");
    copy_fixture("laya", &model);
    let cfg = model.join("rl_agent_config.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    v["max_len"] = json!(0);
    std::fs::write(&cfg, v.to_string()).unwrap();
    let out = eval_on(&dir, "laya", &model);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("rl_agent_config.json") && out.stderr.contains("\"max_len\" is 0"),
        "{}",
        out.stderr
    );
}

/// DecisionTune's manifest lists each file's size: a file of another size is
/// refused, naming it, before it is read.
#[test]
fn a_decisiontune_file_of_another_size_than_its_manifest_is_refused() {
    let dir = TempDir::new("decisiontune-size");
    let model = dir.join("dt");
    copy_fixture("decisiontune", &model);
    let manifest = model.join("manifest.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    v["files"]["head.safetensors"]["size"] = json!(277);
    std::fs::write(&manifest, v.to_string()).unwrap();
    let out = eval_on(&dir, "decisiontune", &model);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("head.safetensors")
            && out.stderr.contains("is 276 bytes")
            && out.stderr.contains("lists 277"),
        "{}",
        out.stderr
    );
}
