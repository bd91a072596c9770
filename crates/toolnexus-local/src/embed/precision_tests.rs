//! The embedder in bf16 against f32 on the tiny model: near in value, alike
//! in what it ranks first, kept without an f32 copy of its linear layers,
//! and said so in fingerprints and decisions (f32's left as they were).

use serde_json::json;
use toolnexus::classifier::{EvalContext, EvalRequest, Questions, choice_over};

use super::*;
use crate::kernels::bf16::unit;
use crate::tiny::testing::{TempDir, tiny};
use crate::tiny_model_for_tests;

/// The tiny model in bf16 beside the same directory's f32 one, or `None`
/// (said on stderr) where the CPU has no bf16 unit: bf16 is then refused,
/// which `resolve_on`'s tests cover.
fn both(name: &str) -> Option<(TempDir, Embedder, Embedder)> {
    if !unit().in_hardware() {
        eprintln!("skipped: this CPU has no bf16 unit");
        return None;
    }
    let (dir, f32) = tiny(name);
    let bf16 = Embedder::load_with(dir.path(), Precision::Bf16).expect("bf16 loads");
    Some((dir, f32, bf16))
}

const TEXTS: [&str; 5] = [
    "a refund for a double charge",
    "my parcel is late",
    "hello world",
    "the invoice shows the wrong amount",
    "where is my order, it has been two weeks",
];

#[test]
fn bf16_embeddings_stay_within_a_hundredth_of_f32() {
    let Some((_dir, f32, bf16)) = both("bf16-near") else {
        return;
    };
    assert_eq!(
        (f32.precision(), bf16.precision()),
        (Precision::F32, Precision::Bf16)
    );
    let (a, b) = (f32.embed(&TEXTS).unwrap(), bf16.embed(&TEXTS).unwrap());
    for ((a, b), text) in a.iter().zip(&b).zip(TEXTS) {
        let gap = a
            .iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max);
        assert!(gap < 1e-2, "{text:?}: {gap}");
        assert_ne!(a, b, "{text:?}: bf16 ran the same products as f32");
    }
}

#[test]
fn bf16_ranks_the_texts_as_f32_does() {
    let Some((_dir, f32, bf16)) = both("bf16-rank") else {
        return;
    };
    let nearest = |e: &Embedder| -> Vec<usize> {
        let v = e.embed(&TEXTS).unwrap();
        (0..v.len())
            .map(|i| {
                let sim = |j: usize| v[i].iter().zip(&v[j]).map(|(a, b)| a * b).sum::<f32>();
                (0..v.len())
                    .filter(|&j| j != i)
                    .max_by(|&x, &y| sim(x).total_cmp(&sim(y)))
                    .unwrap()
            })
            .collect()
    };
    assert_eq!(nearest(&f32), nearest(&bf16));
}

#[test]
fn bf16_keeps_no_f32_linear_layers_and_leaves_the_prepared_layout_to_f32() {
    if !unit().in_hardware() {
        return;
    }
    let dir = TempDir::new("bf16-prepared");
    tiny_model_for_tests(dir.path()).unwrap();
    let weights = dir.path().join(WEIGHTS_FILE);
    let first = Embedder::load_with(dir.path(), Precision::Bf16).unwrap();
    assert!(first.inner.model.is_bf16());
    assert!(
        !prepared::path(&weights).exists(),
        "a bf16 load writes no f32 layout"
    );
    let f32 = Embedder::load(dir.path()).unwrap();
    assert!(!f32.inner.model.is_bf16());
    assert!(
        prepared::path(&weights).exists(),
        "an f32 load still prepares"
    );
    // Packed from the weights themselves, with or without a prepared layout.
    let again = Embedder::load_with(dir.path(), Precision::Bf16).unwrap();
    assert_eq!(first.embed(&TEXTS).unwrap(), again.embed(&TEXTS).unwrap());
    assert!(!again.reads_prepared_layout());
}

#[test]
fn the_fingerprint_names_bf16_and_leaves_f32_as_it_was() {
    let (dir, f32) = tiny("bf16-fingerprint");
    let part = |e: &Embedder| {
        let judge = crate::zero_shot(e.clone());
        judge.fingerprint().parts().to_vec()
    };
    let plain = part(&f32);
    assert_eq!(
        plain,
        [(
            "zero-shot".to_string(),
            format!("weights=sha256:{}", f32.model_hash())
        )]
    );
    if !unit().in_hardware() {
        return;
    }
    let bf16 = Embedder::load_with(dir.path(), Precision::Bf16).unwrap();
    assert_eq!(bf16.precision(), Precision::Bf16);
    assert_eq!(
        part(&bf16),
        [(
            "zero-shot".to_string(),
            format!("weights=sha256:{} precision=bf16", f32.model_hash())
        )]
    );
}

#[tokio::test]
async fn a_bf16_decision_says_so_under_every_key_and_an_f32_one_says_nothing() {
    let Some((_dir, f32, bf16)) = both("bf16-extension") else {
        return;
    };
    let qs = Questions::from([(
        "desk".to_string(),
        choice_over(
            "Which desk?",
            [("billing", "money"), ("shipping", "a parcel")],
        )
        .into(),
    )]);
    let ask = |e: &Embedder| {
        let judge = crate::zero_shot(e.clone());
        let request = EvalRequest::new(json!("my parcel is late"), qs.clone());
        async move {
            judge
                .evaluate_request(EvalContext::default(), request)
                .await
                .unwrap()
        }
    };
    let (plain, fast) = (ask(&f32).await, ask(&bf16).await);
    assert!(plain.extensions.is_empty(), "{:?}", plain.extensions);
    let desk = &fast.extensions["desk"];
    assert_eq!(desk["precision"], "bf16");
    assert_eq!(desk["precision_unit"], unit().name());
    assert_eq!(
        plain.decision.choice("desk").unwrap().choice,
        fast.decision.choice("desk").unwrap().choice
    );
}
