//! Encoding probes against fakes built to have one fault each: every probe
//! finds its fault and passes a clean fake.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value, json};
use toolnexus::classifier::Classifier;
use toolnexus::classifier::{
    ClassifierOptions, ClassifierStyle, Decision, NoulQuestion, Question, Questions, choice_over,
    create_classifier,
};
use toolnexus::probe::{NEGATION_PREFIX, Probe, ProbeOptions, ProbeReport, Verdict, run_probes};

/// How a fake answers a choice: the options (id, description) in the order
/// sent and the state → the picked id (given 0.8, the rest shared evenly).
type Chooser = dyn Fn(&[(String, String)], &Value) -> String + Send + Sync;
/// How a fake answers a noul: negated?, the state → p.
type Nouler = dyn Fn(bool, &Value) -> f64 + Send + Sync;

fn fake(choose: Arc<Chooser>, noul: Arc<Nouler>) -> Classifier {
    create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        evaluate: Some(Arc::new(move |_ctx, state: Value, qs: Questions| {
            let mut answers = Map::new();
            for (key, q) in &qs {
                let a = match q {
                    Question::Choice(c) => {
                        let options: Vec<(String, String)> = c
                            .criteria
                            .iter()
                            .map(|(id, d)| {
                                let d = d.as_ref().and_then(|d| d.as_str()).unwrap_or("");
                                (id.clone(), d.to_string())
                            })
                            .collect();
                        let picked = choose(&options, &state);
                        let rest = 0.2 / (options.len() - 1) as f64;
                        let probs: Map<String, Value> = options
                            .iter()
                            .map(|(id, _)| {
                                let p = if *id == picked { 0.8 } else { rest };
                                (id.clone(), json!(p))
                            })
                            .collect();
                        json!({"type": "choice", "choice": picked, "probabilities": probs, "confidence": 0.8})
                    }
                    Question::Noul(n) => {
                        let negated = n
                            .instructions
                            .as_str()
                            .is_some_and(|s| s.starts_with(NEGATION_PREFIX));
                        json!({"type": "noul", "noul": noul(negated, &state)})
                    }
                    _ => unreachable!("the probe tests ask choices and nouls"),
                };
                answers.insert(key.clone(), a);
            }
            Box::pin(async move {
                Decision::from_value(&json!({"model": "fake", "answers": answers}))
                    .map_err(|e| e.to_string())
            })
        })),
        ..Default::default()
    })
    .unwrap()
}

fn questions() -> Questions {
    Questions::from([
        (
            "desk".to_string(),
            choice_over(
                "Which desk owns this message?",
                [
                    ("billing", "money moved: a refund or a charge"),
                    ("shipping", "a parcel is late or damaged"),
                    ("other", "anything else"),
                ],
            )
            .into(),
        ),
        (
            "spam".to_string(),
            NoulQuestion {
                instructions: "Is this message unsolicited bulk mail?".into(),
                criteria: None,
            }
            .into(),
        ),
    ])
}

/// States naming a topic word of one description, and whether they are spam.
fn states() -> Vec<Value> {
    (0..12)
        .map(|i| {
            let topic = ["money", "parcel", "anything"][i % 3];
            let want = ["billing", "shipping", "other"][i % 3];
            json!({"topic": topic, "spam": i % 4 == 0, "want": want})
        })
        .collect()
}

/// Reads the descriptions: picks the option whose description holds the topic.
fn by_description(options: &[(String, String)], state: &Value) -> String {
    let topic = state["topic"].as_str().unwrap();
    options
        .iter()
        .find(|(_, d)| d.contains(topic))
        .map(|(id, _)| id.clone())
        .unwrap()
}

/// A noul that reads the statement: its negation is answered as the opposite.
fn honest_noul(negated: bool, state: &Value) -> f64 {
    let p = if state["spam"].as_bool().unwrap() {
        0.9
    } else {
        0.1
    };
    if negated { 1.0 - p } else { p }
}

async fn probe(judge: &Classifier) -> ProbeReport {
    run_probes(judge, &questions(), &states(), &ProbeOptions::default()).await
}

fn verdict(r: &ProbeReport, q: &str, p: Probe) -> Verdict {
    r.result(q, p)
        .unwrap_or_else(|| panic!("no {p} result for {q}: {r:#?}"))
        .verdict
}

#[tokio::test]
async fn a_clean_fake_passes_every_probe() {
    let clean = fake(Arc::new(by_description), Arc::new(honest_noul));
    let r = probe(&clean).await;
    assert_eq!(r.failed_calls, 0, "{r:#?}");
    // Per state: the request, shuffled, reversed, rotated, negated, 2 repeats.
    assert_eq!(r.calls, 12 * 7);
    assert_eq!(
        r.calls,
        ProbeOptions::default().planned_calls(&questions(), 12)
    );
    for (q, p) in [
        ("desk", Probe::Shuffle),
        ("desk", Probe::Order),
        ("desk", Probe::Repeat),
        ("spam", Probe::Polarity),
        ("spam", Probe::Repeat),
    ] {
        assert_eq!(verdict(&r, q, p), Verdict::Ok, "{q} {p}: {r:#?}");
    }
    let shuffle = r.result("desk", Probe::Shuffle).unwrap();
    assert_eq!(shuffle.figure, Some(1.0));
    let (lo, hi) = shuffle.range.unwrap();
    assert!(lo > 0.7 && hi == 1.0, "Wilson range {lo}..{hi}");
    assert_eq!(r.result("desk", Probe::Order).unwrap().figure, Some(0.0));
    assert_eq!(r.result("spam", Probe::Polarity).unwrap().figure, Some(0.0));
    assert!(!r.any_broken());
    // What does not apply to a kind is neither measured nor listed.
    assert!(r.result("spam", Probe::Order).is_none());
    assert!(r.result("desk", Probe::Polarity).is_none());
    assert!(r.skipped.is_empty(), "{:?}", r.skipped);
}

#[tokio::test]
async fn an_order_sensitive_fake_is_found_by_order_and_shuffle() {
    let first = fake(
        Arc::new(|options: &[(String, String)], _: &Value| options[0].0.clone()),
        Arc::new(honest_noul),
    );
    let r = probe(&first).await;
    let order = r.result("desk", Probe::Order).unwrap();
    assert_eq!(order.verdict, Verdict::Broken, "{order:#?}");
    assert!(order.figure.unwrap() > 0.5, "{order:#?}");
    assert_eq!(verdict(&r, "desk", Probe::Shuffle), Verdict::Broken);
    // It is deterministic, and its nouls are fine.
    assert_eq!(verdict(&r, "desk", Probe::Repeat), Verdict::Ok);
    assert_eq!(verdict(&r, "spam", Probe::Polarity), Verdict::Ok);
    assert!(r.any_broken());
}

#[tokio::test]
async fn a_fake_that_follows_the_id_fails_the_shuffle_only() {
    let by_id = fake(
        Arc::new(|_: &[(String, String)], state: &Value| state["want"].as_str().unwrap().into()),
        Arc::new(honest_noul),
    );
    let r = probe(&by_id).await;
    let shuffle = r.result("desk", Probe::Shuffle).unwrap();
    assert_eq!(shuffle.verdict, Verdict::Broken, "{shuffle:#?}");
    assert_eq!(shuffle.figure, Some(0.0));
    assert!(
        shuffle.line.contains("12 kept the same option id"),
        "{}",
        shuffle.line
    );
    assert_eq!(verdict(&r, "desk", Probe::Order), Verdict::Ok);
    assert_eq!(verdict(&r, "desk", Probe::Repeat), Verdict::Ok);
}

#[tokio::test]
async fn a_polarity_broken_fake_fails_polarity_only() {
    let deaf = fake(
        Arc::new(by_description),
        Arc::new(|_negated: bool, state: &Value| honest_noul(false, state)),
    );
    let r = probe(&deaf).await;
    let polarity = r.result("spam", Probe::Polarity).unwrap();
    assert_eq!(polarity.verdict, Verdict::Broken, "{polarity:#?}");
    assert!((polarity.figure.unwrap() - 0.8).abs() < 1e-9);
    assert_eq!(verdict(&r, "spam", Probe::Repeat), Verdict::Ok);
    assert_eq!(verdict(&r, "desk", Probe::Order), Verdict::Ok);
    assert_eq!(verdict(&r, "desk", Probe::Shuffle), Verdict::Ok);
}

/// A reproducible stream of uniform numbers shared by every call.
fn noise(counter: &AtomicU64) -> f64 {
    let mut z = counter
        .fetch_add(1, Ordering::Relaxed)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z ^= z >> 27;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

#[tokio::test]
async fn a_noisy_fake_is_found_by_repeat() {
    let counter = Arc::new(AtomicU64::new(1));
    let c2 = counter.clone();
    let noisy = fake(
        Arc::new(move |options: &[(String, String)], _: &Value| {
            options[(noise(&c2) * options.len() as f64) as usize]
                .0
                .clone()
        }),
        Arc::new(move |_: bool, _: &Value| noise(&counter)),
    );
    let r = probe(&noisy).await;
    for q in ["desk", "spam"] {
        let repeat = r.result(q, Probe::Repeat).unwrap();
        assert_eq!(repeat.verdict, Verdict::Broken, "{repeat:#?}");
        let (lo, hi) = repeat.range.unwrap();
        assert!(lo <= repeat.figure.unwrap() && repeat.figure.unwrap() <= hi);
    }
    // The noise floor widens the other probes' tolerance: their lines say so.
    let order = r.result("desk", Probe::Order).unwrap();
    assert!(order.line.contains("tolerance"), "{}", order.line);
}

#[tokio::test]
async fn failed_calls_are_counted_never_an_abort() {
    let calls = Arc::new(AtomicU64::new(0));
    let seen = calls.clone();
    let flaky = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
            let n = seen.fetch_add(1, Ordering::Relaxed);
            Box::pin(async move {
                if n.is_multiple_of(2) {
                    return Err("backend down".to_string());
                }
                Decision::from_value(
                    &json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": 0.5}}}),
                )
                .map_err(|e| e.to_string())
            })
        })),
        ..Default::default()
    })
    .unwrap();
    let qs = Questions::from([(
        "spam".to_string(),
        NoulQuestion {
            instructions: "Spam?".into(),
            criteria: None,
        }
        .into(),
    )]);
    let options = ProbeOptions {
        concurrency: 1,
        ..Default::default()
    };
    let r = run_probes(&flaky, &qs, &states(), &options).await;
    assert_eq!(r.calls, 12 * 4);
    assert_eq!(r.failed_calls, 24);
    assert!(r.first_error.as_deref().unwrap().contains("backend down"));
    let polarity = r.result("spam", Probe::Polarity).unwrap();
    assert_eq!(polarity.states + polarity.failed, 12);
    assert!(polarity.failed > 0);

    // Everything failing leaves every figure unmeasured, still a report.
    let down = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        evaluate: Some(Arc::new(|_ctx, _state, _qs| {
            Box::pin(async { Err("backend down".to_string()) })
        })),
        ..Default::default()
    })
    .unwrap();
    let r = run_probes(&down, &qs, &states()[..2], &ProbeOptions::default()).await;
    assert_eq!(r.failed_calls, r.calls);
    assert!(
        r.results
            .iter()
            .all(|x| x.verdict == Verdict::Unmeasured && x.figure.is_none())
    );
}

#[tokio::test]
async fn a_choice_whose_descriptions_cannot_be_told_apart_skips_the_shuffle() {
    let qs = Questions::from([(
        "tone".to_string(),
        choice_over("Tone?", [("calm", None::<&str>), ("angry", None)]).into(),
    )]);
    let options = ProbeOptions {
        probes: vec![Probe::Shuffle, Probe::Order],
        ..Default::default()
    };
    // The request and two orders: no shuffled variant is sent.
    assert_eq!(options.planned_calls(&qs, 5), 15);
    let judge = fake(
        Arc::new(|options: &[(String, String)], _: &Value| options[1].0.clone()),
        Arc::new(honest_noul),
    );
    let r = run_probes(&judge, &qs, &states()[..5], &options).await;
    assert_eq!(r.calls, 15);
    let skip = r
        .skipped
        .iter()
        .find(|s| s.probe == Probe::Shuffle)
        .unwrap();
    assert!(skip.why.contains("no description"), "{}", skip.why);
    assert!(r.result("tone", Probe::Shuffle).is_none());
    assert_eq!(verdict(&r, "tone", Probe::Order), Verdict::Broken);
}
