//! Laya and DecisionTune against their reference packages: the tiny random
//! models in `tests/fixtures/{laya,decisiontune}` and the outputs the
//! packages gave for them (`scripts/laya-reference fixtures`). Every token id
//! must be the same, every logit and probability within 1e-4.

use std::path::{Path, PathBuf};

use serde_json::Value;
use toolnexus::classifier::{DecisionAnswer, Questions, questions_from_wire};
use toolnexus_local::{DecisionTune, Laya};

const TOLERANCE: f64 = 1e-4;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn cases(name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(fixture(name).join("cases.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v["cases"].as_array().unwrap().clone()
}

fn close(what: &str, got: &[f64], want: &Value) {
    let want: Vec<f64> = want
        .as_array()
        .unwrap_or_else(|| panic!("{what}: not a list"))
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= TOLERANCE,
            "{what}[{i}]: got {g}, reference {w} (off by {:.2e})",
            (g - w).abs()
        );
    }
}

fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect()
}

fn questions(request: &Value) -> Questions {
    questions_from_wire(&request["questions"]).unwrap()
}

#[test]
fn laya_reproduces_the_reference_ids_logits_and_probabilities() {
    let laya = Laya::load(fixture("laya")).unwrap();
    for case in cases("laya") {
        let name = case["name"].as_str().unwrap();
        let (states, request) = match case.get("request_batch") {
            Some(r) => (r["states"].as_array().unwrap().clone(), r),
            None => (vec![case["request"]["state"].clone()], &case["request"]),
        };
        let qs = questions(request);
        let rows = laya.trace(&states, &qs).unwrap();
        let results = case["results"].as_array().unwrap();
        assert_eq!(results.len(), states.len(), "{name}");
        let mut seen = 0;
        for (s, result) in results.iter().enumerate() {
            for want in result["rows"].as_array().unwrap() {
                let key = want["question"].as_str().unwrap();
                let what = format!("{name}: state {s}: {key}");
                let got = rows
                    .iter()
                    .find(|r| r.state == s && r.key == key)
                    .unwrap_or_else(|| panic!("{what}: no row"));
                seen += 1;
                assert_eq!(got.ids, ids(&want["input_ids"]), "{what}: input ids");
                assert_eq!(got.markers, usizes(&want["markers"]), "{what}: markers");
                let logits: Vec<f64> = got.logits.iter().map(|x| f64::from(*x)).collect();
                close(&format!("{what}: logits"), &logits, &want["logits"]);
                close(
                    &format!("{what}: probabilities"),
                    &got.probabilities,
                    &want["probabilities"],
                );
                let act: Vec<f64> = got.act.iter().map(|x| f64::from(*x)).collect();
                close(
                    &format!("{what}: act head"),
                    &act,
                    &want["act_probabilities"],
                );
            }
        }
        assert_eq!(seen, rows.len(), "{name}: every row is checked");

        // The decisions: the package's own answers (rounded to 4 decimals; a
        // last digit may differ by one where the unrounded numbers straddle it).
        let decided = laya.decide_batch(&states, &qs).unwrap();
        for (s, (result, got)) in results.iter().zip(&decided).enumerate() {
            let what = format!("{name}: state {s}");
            assert_eq!(
                got.decision.usage.input_tokens,
                result["usage"]["input_tokens"].as_i64().unwrap(),
                "{what}: usage"
            );
            assert!(got.decision.calibrated);
            for (key, want) in result["answers"].as_object().unwrap() {
                let near = |g: f64, w: &Value, field: &str| {
                    let w = w.as_f64().unwrap();
                    assert!((g - w).abs() <= 1.5e-4, "{what}: {key}.{field}: {g} vs {w}");
                };
                match &got.decision.answers[key] {
                    DecisionAnswer::Choice(c) => {
                        assert_eq!(c.choice, want["choice"].as_str().unwrap(), "{what}: {key}");
                        near(c.confidence, &want["confidence"], "confidence");
                        for (id, p) in want["probabilities"].as_object().unwrap() {
                            near(c.probabilities[id], p, id);
                        }
                    }
                    DecisionAnswer::Score(sc) => {
                        near(sc.score, &want["score"], "score");
                        near(sc.confidence, &want["confidence"], "confidence");
                    }
                    DecisionAnswer::Noul(n) => near(n.noul, &want["noul"], "noul"),
                    other => panic!("{what}: {key}: {other:?}"),
                }
                let ext = &got.extensions[key];
                near(
                    ext["answer_confidence"].as_f64().unwrap(),
                    &want["answer_confidence"],
                    "answer_confidence",
                );
                near(
                    ext["action"]["act_probability"].as_f64().unwrap(),
                    &want["action"]["act_probability"],
                    "act_probability",
                );
            }
        }
    }
}

#[test]
fn decisiontune_reproduces_the_reference_ids_logits_and_probabilities() {
    let dt = DecisionTune::load(fixture("decisiontune")).unwrap();
    for case in cases("decisiontune") {
        let name = case["name"].as_str().unwrap();
        let request = &case["request"];
        let qs = questions(request);
        if let Some(refused) = case.get("error") {
            // The package refuses a row one id past the context; so must we.
            let e = dt.trace(&request["state"], &qs).unwrap_err().to_string();
            let want = refused.as_str().unwrap();
            assert!(e.contains(want), "{name}: {e:?} does not say {want:?}");
            continue;
        }
        let rows = dt.trace(&request["state"], &qs).unwrap();
        let wanted = case["rows"].as_array().unwrap();
        assert_eq!(rows.len(), wanted.len(), "{name}");
        for want in wanted {
            let key = want["question"].as_str().unwrap();
            let what = format!("{name}: {key}");
            let got = rows.iter().find(|r| r.key == key).unwrap();
            assert_eq!(got.ids, ids(&want["input_ids"]), "{what}: input ids");
            assert_eq!(got.markers, usizes(&want["markers"]), "{what}: markers");
            let logits: Vec<f64> = got.logits.iter().map(|x| f64::from(*x)).collect();
            close(&format!("{what}: logits"), &logits, &want["logits"]);
            close(
                &format!("{what}: probabilities"),
                &got.probabilities,
                &want["probabilities"],
            );
        }
        let d = dt.decide(&request["state"], &qs).unwrap();
        assert!(!d.calibrated);
        let tokens: usize = wanted
            .iter()
            .map(|r| r["input_ids"].as_array().unwrap().len())
            .sum();
        assert_eq!(d.usage.input_tokens, tokens as i64, "{name}: usage");
        for (key, want) in case["answers"].as_object().unwrap() {
            let what = format!("{name}: {key}");
            match &d.answers[key] {
                DecisionAnswer::Noul(n) => {
                    assert!(
                        (n.noul - want["p_yes"].as_f64().unwrap()).abs() <= TOLERANCE,
                        "{what}"
                    )
                }
                DecisionAnswer::Choice(c) => {
                    assert_eq!(c.choice, want["choice"].as_str().unwrap(), "{what}");
                    assert!(
                        (c.confidence - want["confidence"].as_f64().unwrap()).abs() <= TOLERANCE
                    );
                }
                DecisionAnswer::Score(s) => {
                    let level = want["expected_level"].as_f64().unwrap();
                    assert!(
                        (s.score - level).abs() <= TOLERANCE,
                        "{what}: {} vs {level}",
                        s.score
                    );
                }
                other => panic!("{what}: {other:?}"),
            }
        }
    }
}

/// A copy of a fixture directory to break, removed on drop.
struct Copy(PathBuf);

impl Copy {
    fn of(name: &str, tag: &str) -> Copy {
        let to = std::env::temp_dir().join(format!("toolnexus-laya-{tag}-{}", std::process::id()));
        std::fs::remove_dir_all(&to).ok();
        copy_dir(&fixture(name), &to);
        Copy(to)
    }
}

impl Drop for Copy {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn decisiontune_refuses_a_file_its_manifest_does_not_vouch_for() {
    let dir = Copy::of("decisiontune", "digest");
    let head = dir.0.join("head.safetensors");
    let mut bytes = std::fs::read(&head).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&head, bytes).unwrap();
    let e = DecisionTune::load(&dir.0).unwrap_err();
    assert!(e.is_invalid_file(), "{e}");
    assert_eq!(e.path(), Some(head.as_path()));
    assert!(e.to_string().contains("manifest.json"), "{e}");

    std::fs::remove_file(dir.0.join("manifest.json")).unwrap();
    let e = DecisionTune::load(&dir.0).unwrap_err();
    assert!(e.is_missing_file(), "{e}");
    assert_eq!(e.path(), Some(dir.0.join("manifest.json").as_path()));
}

#[test]
fn laya_refuses_a_layout_it_does_not_run_naming_the_file_and_field() {
    let dir = Copy::of("laya", "layout");
    let cfg = dir.0.join("rl_agent_config.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    v["option_layout"] = "parallel".into();
    std::fs::write(&cfg, v.to_string()).unwrap();
    let e = Laya::load(&dir.0).unwrap_err();
    assert!(e.is_invalid_file(), "{e}");
    assert_eq!(e.path(), Some(cfg.as_path()));
    assert!(e.to_string().contains("\"option_layout\""), "{e}");

    v["option_layout"] = "sequential".into();
    v["temperature"] = serde_json::json!([1.0, 2.0]);
    std::fs::write(&cfg, v.to_string()).unwrap();
    let e = Laya::load(&dir.0).unwrap_err();
    assert!(e.to_string().contains("\"temperature\""), "{e}");

    // The encoder's config in a spelling it cannot run.
    v["temperature"] = serde_json::json!([1.0, 2.0, 1.0]);
    std::fs::write(&cfg, v.to_string()).unwrap();
    let enc = dir.0.join("encoder/config.json");
    let mut c: Value = serde_json::from_str(&std::fs::read_to_string(&enc).unwrap()).unwrap();
    c["layer_types"][1] = "chunked_attention".into();
    std::fs::write(&enc, c.to_string()).unwrap();
    let e = Laya::load(&dir.0).unwrap_err();
    assert_eq!(e.path(), Some(enc.as_path()));
    assert!(e.to_string().contains("\"layer_types\""), "{e}");
}

#[test]
fn laya_refuses_a_tokenizer_without_its_special_tokens() {
    let dir = Copy::of("laya", "special");
    let cfg = dir.0.join("tokenizer/tokenizer_config.json");
    std::fs::write(
        &cfg,
        r#"{"cls_token": "[CLS]", "sep_token": "[SEP]", "mask_token": "<nope>"}"#,
    )
    .unwrap();
    let e = Laya::load(&dir.0).unwrap_err();
    assert_eq!(e.path(), Some(cfg.as_path()));
    assert!(e.to_string().contains("\"mask_token\""), "{e}");
}

#[test]
fn a_box_question_is_refused_naming_its_key() {
    let laya = Laya::load(fixture("laya")).unwrap();
    let qs = questions_from_wire(&serde_json::json!({
        "dent": {"type": "box", "instructions": "Where?"}
    }))
    .unwrap();
    let e = laya.decide(&Value::from("photo"), &qs).unwrap_err();
    assert_eq!(
        e.to_string(),
        "classifier: style \"laya\" cannot use box question \"dent\""
    );
}

#[tokio::test]
async fn the_classifiers_answer_through_the_library_with_laya_extras() {
    let judge = toolnexus_local::laya(Laya::load(fixture("laya")).unwrap());
    let qs = questions_from_wire(&serde_json::json!({
        "refund": {"type": "noul", "instructions": "Does the customer ask for a refund?"}
    }))
    .unwrap();
    let request = toolnexus::classifier::EvalRequest::new(Value::from("refund me"), qs.clone());
    let done = judge
        .evaluate_request(toolnexus::classifier::EvalContext::new(), request)
        .await
        .unwrap();
    assert_eq!(done.decision.model, "laya");
    let extra = &done.extensions["refund"];
    assert!(extra["answer_confidence"].as_f64().unwrap() >= 0.5);
    assert!(extra["action"]["act_probability"].is_number());

    let dt = toolnexus_local::decisiontune(DecisionTune::load(fixture("decisiontune")).unwrap());
    let d = dt.evaluate(Value::from("refund me"), &qs).await.unwrap();
    assert!(!d.calibrated && (0.0..=1.0).contains(&d.noul("refund").unwrap().noul));
}

/// Laya and DecisionTune in bf16 on the tiny fixtures: the same token ids,
/// every probability near f32's and the same answer (argmax), and the
/// decisions saying which precision answered. Skipped where the CPU has no
/// bf16 unit (bf16 is then refused, which the unit tests cover).
#[tokio::test]
async fn laya_and_decisiontune_in_bf16_stay_near_f32_on_the_tiny_fixtures() {
    use toolnexus_local::{Precision, resolve_precision};
    if resolve_precision(Precision::Bf16).is_err() {
        eprintln!("skipped: this CPU has no bf16 unit");
        return;
    }
    let mut gap = 0f64;
    let (f32, bf16) = (
        Laya::load(fixture("laya")).unwrap(),
        Laya::load_with(fixture("laya"), Precision::Bf16).unwrap(),
    );
    for case in cases("laya") {
        let (states, request) = match case.get("request_batch") {
            Some(r) => (r["states"].as_array().unwrap().clone(), r),
            None => (vec![case["request"]["state"].clone()], &case["request"]),
        };
        let qs = questions(request);
        let (a, b) = (
            f32.trace(&states, &qs).unwrap(),
            bf16.trace(&states, &qs).unwrap(),
        );
        let rows = |r: &[toolnexus_local::LayaRow]| {
            r.iter()
                .map(|r| (r.key.clone(), r.ids.clone(), r.probabilities.clone()))
                .collect()
        };
        gap = gap.max(same_answers(rows(&a), rows(&b)));
    }
    let (f32, bf16) = (
        DecisionTune::load(fixture("decisiontune")).unwrap(),
        DecisionTune::load_with(fixture("decisiontune"), Precision::Bf16).unwrap(),
    );
    for case in cases("decisiontune")
        .iter()
        .filter(|c| c.get("error").is_none())
    {
        let request = &case["request"];
        let qs = questions(request);
        let (a, b) = (
            f32.trace(&request["state"], &qs).unwrap(),
            bf16.trace(&request["state"], &qs).unwrap(),
        );
        let rows = |r: &[toolnexus_local::DecisionTuneRow]| {
            r.iter()
                .map(|r| (r.key.clone(), r.ids.clone(), r.probabilities.clone()))
                .collect()
        };
        gap = gap.max(same_answers(rows(&a), rows(&b)));
    }
    eprintln!("tiny Laya and DecisionTune: largest probability gap bf16 vs f32 {gap:.2e}");
    assert!(gap < 2e-2, "{gap}");

    // The decision says so; the fingerprint too, f32's unchanged.
    let qs = questions_from_wire(&serde_json::json!({
        "refund": {"type": "noul", "instructions": "Does the customer ask for a refund?"}
    }))
    .unwrap();
    let plain = toolnexus_local::laya(Laya::load(fixture("laya")).unwrap());
    let fast = toolnexus_local::laya(Laya::load_with(fixture("laya"), Precision::Bf16).unwrap());
    let request = toolnexus::classifier::EvalRequest::new(Value::from("refund me"), qs);
    let done = fast
        .evaluate_request(toolnexus::classifier::EvalContext::new(), request)
        .await
        .unwrap();
    let extra = &done.extensions["refund"];
    assert_eq!(extra["precision"], "bf16");
    assert!(extra["answer_confidence"].is_number());
    let (p, f) = (
        &plain.fingerprint().parts()[0].1,
        &fast.fingerprint().parts()[0].1,
    );
    assert_eq!(f, &format!("{p} precision=bf16"));
}

/// f32's and bf16's rows (key, token ids, probabilities) of one request: the
/// same ids and the same answer (argmax) on every row; the largest gap of a
/// probability.
fn same_answers(a: Vec<(String, Vec<u32>, Vec<f64>)>, b: Vec<(String, Vec<u32>, Vec<f64>)>) -> f64 {
    let argmax = |p: &[f64]| (0..p.len()).fold(0, |b, i| if p[i] > p[b] { i } else { b });
    let mut gap = 0f64;
    for ((key, ids_a, pa), (_, ids_b, pb)) in a.iter().zip(&b) {
        assert_eq!(ids_a, ids_b, "{key}");
        for (x, y) in pa.iter().zip(pb) {
            gap = gap.max((x - y).abs());
        }
        assert_eq!(argmax(pa), argmax(pb), "{key}");
    }
    gap
}
