//! The real all-MiniLM-L6-v2 in bf16 against f32, on the project's labelled
//! sets: the zero-shot style on the routing set and the guard's built-in
//! student on its held-out calls. bf16 must give the same answer (argmax) on
//! every example and assess figures within 0.005 of f32's. Skipped as the
//! other model tests are without the model, and where the CPU has no bf16
//! unit.

use std::sync::OnceLock;

use serde_json::Value;
use toolnexus::classifier::{Classifier, Questions};
use toolnexus_local::student::{LocalStudent, Student, student};
use toolnexus_local::{Embedder, Precision, resolve_precision, zero_shot};

use super::model::{assess, load_real, model, routing};

/// The real model in bf16, loaded once; `None` (after a note) without the
/// model or without a bf16 unit.
fn bf16_model() -> Option<&'static Embedder> {
    static MODEL: OnceLock<Option<Embedder>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            model()?;
            if resolve_precision(Precision::Bf16).is_err() {
                eprintln!("skipped: this CPU has no bf16 unit");
                return None;
            }
            load_real(Precision::Bf16)
        })
        .as_ref()
}

/// Each answer's argmax (a noul's side of 0.5, else the most probable
/// option or level) and its probabilities, by key.
fn answers(d: &Value) -> Vec<(String, String, Vec<f64>)> {
    let answers = d["answers"].as_object().expect("answers");
    answers
        .iter()
        .map(|(key, a)| match a["noul"].as_f64() {
            Some(p) => (key.clone(), (p > 0.5).to_string(), vec![p]),
            None => {
                let probs = a["probabilities"].as_object().expect("probabilities");
                let top = probs
                    .iter()
                    .max_by(|x, y| x.1.as_f64().unwrap().total_cmp(&y.1.as_f64().unwrap()))
                    .map(|(k, _)| k.clone())
                    .unwrap_or_default();
                (
                    key.clone(),
                    top,
                    probs.values().filter_map(Value::as_f64).collect(),
                )
            }
        })
        .collect()
}

/// Both judges over `examples`: the answers that differ (example, key, f32's
/// and bf16's), the answers compared, and the largest gap of a probability.
async fn compare(
    f32: &Classifier,
    bf16: &Classifier,
    questions: &Questions,
    examples: &[toolnexus::assess::Example],
) -> (Vec<String>, usize, f64) {
    let (mut differ, mut compared, mut gap) = (Vec::new(), 0, 0f64);
    for (i, ex) in examples.iter().enumerate() {
        let a = f32.evaluate(ex.state.clone(), questions).await.unwrap();
        let b = bf16.evaluate(ex.state.clone(), questions).await.unwrap();
        for ((key, x, px), (_, y, py)) in answers(&a.to_value())
            .into_iter()
            .zip(answers(&b.to_value()))
        {
            compared += 1;
            gap = px
                .iter()
                .zip(&py)
                .map(|(p, q)| (p - q).abs())
                .fold(gap, f64::max);
            if x != y {
                differ.push(format!("example {i} {key}: f32 {x}, bf16 {y}"));
            }
        }
    }
    (differ, compared, gap)
}

/// f32's and bf16's assess figures side by side: accuracy and AUROC per key
/// within 0.005.
fn figures_agree(a: &toolnexus::assess::Summary, b: &toolnexus::assess::Summary) {
    for q in &a.questions {
        let other = b.question(&q.key).unwrap();
        assert!(
            (q.accuracy - other.accuracy).abs() <= 0.005,
            "{}: accuracy f32 {} bf16 {}",
            q.key,
            q.accuracy,
            other.accuracy
        );
        if let (Some(x), Some(y)) = (q.auroc, other.auroc) {
            assert!((x - y).abs() <= 0.005, "{}: AUROC f32 {x} bf16 {y}", q.key);
        }
    }
}

#[tokio::test]
async fn bf16_routes_the_routing_set_as_f32_does() {
    let (Some(f32), Some(bf16)) = (model(), bf16_model()) else {
        return;
    };
    let (questions, examples) = routing();
    let (a, b) = (zero_shot(f32.clone()), zero_shot(bf16.clone()));
    let (differ, compared, gap) = compare(&a, &b, &questions, &examples).await;
    eprintln!(
        "routing, zero-shot: {} of {compared} answers differ in bf16; largest probability gap {gap:.2e}",
        differ.len()
    );
    assert!(differ.is_empty(), "{differ:#?}");
    let (sa, sb) = (
        assess(&a, &questions, &examples, "routing-f32").await,
        assess(&b, &questions, &examples, "routing-bf16").await,
    );
    figures_agree(&sa, &sb);
}

#[tokio::test]
async fn the_guard_student_answers_its_held_out_calls_in_bf16_as_in_f32() {
    let (Some(f32), Some(bf16)) = (model(), bf16_model()) else {
        return;
    };
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../toolnexus-guard/data");
    let wire: Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("guard.questions.json")).unwrap())
            .unwrap();
    let questions = toolnexus::classifier::questions_from_wire(&wire).unwrap();
    let examples =
        toolnexus::assess::read_examples(data.join("calls.heldout.jsonl"), &questions).unwrap();
    let s = Student::load(data.join("guard.student.json")).unwrap();
    let judge = |e: &Embedder| student(LocalStudent::new(e.clone(), s.clone()).unwrap());
    let (a, b) = (judge(f32), judge(bf16));
    let (differ, compared, gap) = compare(&a, &b, &questions, &examples).await;
    eprintln!(
        "guard held-out, student: {} of {compared} answers differ in bf16; largest probability gap {gap:.2e}",
        differ.len()
    );
    assert!(differ.is_empty(), "{differ:#?}");
    let (sa, sb) = (
        assess(&a, &questions, &examples, "guard-f32").await,
        assess(&b, &questions, &examples, "guard-bf16").await,
    );
    figures_agree(&sa, &sb);
}

/// Laya on a checkpoint of the real shape (ModernBERT-large, 28 layers, from
/// `scripts/laya-reference bench-model DIR`, named by
/// `TOOLNEXUS_LAYA_BENCH_DIR`): on the bench request every probability in
/// bf16 is within 2e-3 of f32's and every answer (argmax) is the same.
/// Skipped without the directory (it is ~850 MB, never in the repository) or
/// without a bf16 unit. Loads both precisions: ~2.6 GB of memory.
#[test]
fn laya_in_bf16_answers_the_bench_request_within_2e_3_of_f32() {
    let Some(dir) = std::env::var_os("TOOLNEXUS_LAYA_BENCH_DIR") else {
        eprintln!("skipped: TOOLNEXUS_LAYA_BENCH_DIR is not set");
        return;
    };
    if resolve_precision(Precision::Bf16).is_err() {
        eprintln!("skipped: this CPU has no bf16 unit");
        return;
    }
    let dir = std::path::Path::new(&dir);
    let request: Value = serde_json::from_slice(
        &std::fs::read(dir.join("bench-request.json")).expect("bench-request.json beside it"),
    )
    .expect("bench-request.json is JSON");
    let questions = toolnexus::classifier::questions_from_wire(&request["request"]["questions"])
        .expect("the bench questions");
    let state = &request["request"]["state"];
    let decide = |precision| {
        let laya = toolnexus_local::Laya::load_with(dir, precision).expect("the bench model");
        laya.decide(state, &questions)
            .expect("an answer")
            .to_value()
    };
    let (f32, bf16) = (decide(Precision::F32), decide(Precision::Bf16));
    let mut gap = 0f64;
    for ((key, x, px), (_, y, py)) in answers(&f32).into_iter().zip(answers(&bf16)) {
        eprintln!("{key}: f32 {px:?}, bf16 {py:?}");
        assert_eq!(x, y, "{key}: f32 answers {x}, bf16 {y}");
        assert_eq!(px.len(), py.len(), "{key}");
        gap = px
            .iter()
            .zip(&py)
            .map(|(p, q)| (p - q).abs())
            .fold(gap, f64::max);
    }
    eprintln!("largest probability gap on the bench request: {gap:.2e}");
    assert!(gap <= 2e-3, "a probability moved by {gap:.2e} in bf16");
}
