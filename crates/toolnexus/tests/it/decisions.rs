//! Questions, decisions, coherence, canonical bytes, and the Static and Custom
//! styles: everything that needs no socket.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolnexus::classifier::*;

mod construction;

fn risk_questions() -> Questions {
    Questions::from([(
        "risk".to_string(),
        ScoreQuestion {
            instructions: "How destructive is this shell command?".into(),
            criteria: vec!["harmless".into(), "reversible".into(), "destructive".into()],
        }
        .into(),
    )])
}

fn desk() -> Question {
    choice_over(
        "Which desk owns this?",
        [
            ("billing", "money moved: a duplicate charge, a refund owed"),
            ("shipping", "a physical parcel is late or damaged"),
            ("technical", "the product itself errors"),
        ],
    )
    .into()
}

fn three_questions() -> Questions {
    let mut qs = risk_questions();
    qs.insert("desk".into(), desk());
    qs.insert(
        "refund".into(),
        NoulQuestion {
            instructions: "Does the customer ask for money back?".into(),
            criteria: Some(NoulCriteria {
                when_true: "a refund or chargeback is requested".into(),
                when_false: "anything else".into(),
            }),
        }
        .into(),
    );
    qs
}

/// A classifier whose closure answers with `answers` (wire form) every time.
fn custom_answering(answers: Value) -> Classifier {
    custom_with(answers, None)
}

fn custom_with(answers: Value, on_metric: Option<MetricFn>) -> Classifier {
    create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        on_metric,
        evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
            let answers = answers.clone();
            Box::pin(async move {
                Decision::from_value(&json!({"model": "rule-1", "answers": answers}))
                    .map_err(|e| e.to_string())
            })
        })),
        ..Default::default()
    })
    .unwrap()
}

async fn eval_err(answers: Value, qs: &Questions) -> String {
    custom_answering(answers)
        .evaluate(json!("s"), qs)
        .await
        .expect_err("expected a coherence error")
        .to_string()
}

// ---- §2.2 accessors ---------------------------------------------------------

#[test]
fn accessors_name_absent_and_wrong_type_differently() {
    let d = Decision::from_value(&json!({"model": "m", "answers": {
        "risk": {"type": "score", "score": 1.0, "confidence": 0.5},
        "refund": {"type": "noul", "noul": 0.2},
        "desk": {"type": "choice", "choice": "billing", "confidence": 0.9}
    }}))
    .unwrap();
    let cases: &[(&str, &str, &str)] = &[
        (
            "noul",
            "risk",
            "classifier: answer \"risk\" is a score answer, not noul",
        ),
        (
            "choice",
            "risk",
            "classifier: answer \"risk\" is a score answer, not choice",
        ),
        (
            "score",
            "refund",
            "classifier: answer \"refund\" is a noul answer, not score",
        ),
        (
            "noul",
            "desk",
            "classifier: answer \"desk\" is a choice answer, not noul",
        ),
        (
            "score",
            "urgency",
            "classifier: no answer \"urgency\" in this decision",
        ),
        (
            "noul",
            "urgency",
            "classifier: no answer \"urgency\" in this decision",
        ),
        (
            "choice",
            "urgency",
            "classifier: no answer \"urgency\" in this decision",
        ),
    ];
    for (accessor, key, want) in cases {
        let e = match *accessor {
            "noul" => d.noul(key).map(|_| ()).unwrap_err(),
            "choice" => d.choice(key).map(|_| ()).unwrap_err(),
            _ => d.score(key).map(|_| ()).unwrap_err(),
        };
        assert_eq!(e.to_string(), *want, "{accessor}({key})");
        let kind = if key == &"urgency" {
            ErrorKind::MissingAnswer
        } else {
            ErrorKind::WrongType
        };
        assert_eq!(e.kind(), kind);
    }
}

// ---- §2.4 decoding ------------------------------------------------------------

#[test]
fn decoding_fails_loudly_naming_the_key() {
    let cases: &[(&str, &str)] = &[
        ("[1]", "classifier: response is not a JSON object"),
        (
            "not json",
            "classifier: response is not valid JSON: expected ident at line 1 column 2",
        ),
        (
            r#"{"model":"m","answers":[]}"#,
            "classifier: response \"answers\" is not an object",
        ),
        (
            r#"{"model":"m"}"#,
            "classifier: response has no \"answers\"",
        ),
        (
            r#"{"model":7,"answers":{}}"#,
            "classifier: response \"model\" is not a string",
        ),
        (r#"{"answers":{}}"#, "classifier: response has no \"model\""),
        (
            r#"{"model":"m","answers":{},"calibrated":"yes"}"#,
            "classifier: response \"calibrated\" is not a bool",
        ),
        (
            r#"{"model":"m","answers":{"k":{"noul":0.5}}}"#,
            "classifier: answer \"k\": answer has no \"type\"",
        ),
        (
            r#"{"model":"m","answers":{"k":{"type":"vote"}}}"#,
            "classifier: answer \"k\": answer has unknown type \"vote\" (want noul|choice|score|box)",
        ),
        (
            r#"{"model":"m","answers":{"k":{"type":3}}}"#,
            "classifier: answer \"k\": answer \"type\" is not a string",
        ),
        (
            r#"{"model":"m","answers":{"k":7}}"#,
            "classifier: answer \"k\": answer is not a JSON object",
        ),
        (
            r#"{"model":"m","answers":{"k":{"type":"noul"}}}"#,
            "classifier: answer \"k\": noul answer has no \"noul\" number",
        ),
        (
            r#"{"model":"m","answers":{"k":{"type":"noul","noul":null}}}"#,
            "classifier: answer \"k\": noul answer has no \"noul\" number",
        ),
        (
            r#"{"model":"m","answers":{"k":{"type":"noul","noul":"0.5"}}}"#,
            "classifier: answer \"k\": noul answer \"noul\" is not a finite number",
        ),
        (
            r#"{"model":"m","answers":{"k":{"type":"choice","confidence":1}}}"#,
            "classifier: answer \"k\": choice answer has no \"choice\"",
        ),
        (
            r#"{"model":"m","answers":{"k":{"type":"choice","choice":"a"}}}"#,
            "classifier: answer \"k\": choice answer has no \"confidence\" number",
        ),
        (
            r#"{"model":"m","answers":{"k":{"type":"choice","choice":1,"confidence":1}}}"#,
            "classifier: answer \"k\": choice answer \"choice\" is not a string",
        ),
        (
            r#"{"model":"m","answers":{"k":{"type":"choice","choice":"a","confidence":1,"probabilities":{"a":"x"}}}}"#,
            "classifier: answer \"k\": probability \"a\" is not a finite number",
        ),
        (
            r#"{"model":"m","answers":{"k":{"type":"choice","choice":"a","confidence":1,"probabilities":[1]}}}"#,
            "classifier: answer \"k\": \"probabilities\" is not an object",
        ),
        (
            r#"{"model":"m","answers":{"k":{"type":"score","confidence":1}}}"#,
            "classifier: answer \"k\": score answer has no \"score\" number",
        ),
        (
            r#"{"model":"m","answers":{"k":{"type":"score","score":1}}}"#,
            "classifier: answer \"k\": score answer has no \"confidence\" number",
        ),
        (
            r#"{"model":"m","answers":{"k":{"type":"score","score":1,"confidence":1,"legend":{"0":0}}}}"#,
            "classifier: answer \"k\": legend \"0\" is not a string",
        ),
        (
            r#"{"model":"m","answers":{},"usage":{"input_tokens":1.5}}"#,
            "classifier: response usage \"input_tokens\" is not a whole number",
        ),
        (
            r#"{"model":"m","answers":{},"usage":{"cost":"free"}}"#,
            "classifier: response usage \"cost\" is not a finite number",
        ),
        (
            r#"{"model":"m","answers":{},"usage":7}"#,
            "classifier: response \"usage\" is not an object",
        ),
    ];
    for (input, want) in cases {
        let e = Decision::from_slice(input.as_bytes()).expect_err(input);
        assert_eq!(e.to_string(), *want, "decoding {input}");
        assert!(e.is_decode(), "{input}: {:?}", e.kind());
    }
}

#[test]
fn calibrated_absent_or_null_is_true_and_extras_are_ignored() {
    for (body, want) in [
        (r#"{"model":"m","answers":{}}"#, true),
        (r#"{"model":"m","answers":{},"calibrated":null}"#, true),
        (r#"{"model":"m","answers":{},"calibrated":false}"#, false),
        (
            r#"{"model":"m","answers":{},"calibrated":true,"latency_ms":12,"id":"x"}"#,
            true,
        ),
    ] {
        assert_eq!(
            Decision::from_slice(body.as_bytes()).unwrap().calibrated,
            want,
            "{body}"
        );
    }
}

#[test]
fn cost_absent_is_none_never_zero() {
    let d = Decision::from_slice(
        br#"{"model":"m","answers":{},"usage":{"input_tokens":5,"output_tokens":2}}"#,
    )
    .unwrap();
    assert_eq!(d.usage.cost, None);
    assert_eq!(
        d.to_value()["usage"].get("cost"),
        None,
        "an unknown cost is not written as 0"
    );
    let d = Decision::from_slice(br#"{"model":"m","answers":{},"usage":{"cost":0}}"#).unwrap();
    assert_eq!(
        d.usage.cost,
        Some(0.0),
        "a reported zero stays a reported zero"
    );
}

#[test]
fn near_uniform_is_derived_on_decode_never_read() {
    let d = Decision::from_slice(
        br#"{"model":"m","answers":{"k":{"type":"choice","choice":"a","confidence":0.9,
            "near_uniform":false,"probabilities":{"a":0.34,"b":0.33,"c":0.33}}}}"#,
    )
    .unwrap();
    assert!(d.choice("k").unwrap().near_uniform);
    assert!(d.to_value()["answers"]["k"].get("near_uniform").is_none());
}

#[test]
fn decisions_round_trip_through_the_wire_form() {
    let wire = json!({
        "model": "typesafe/jev-1.13-20260917",
        "calibrated": false,
        "answers": {
            "risk": {"type": "score", "score": 1.21, "legend": {"0": "a", "1": "b", "2": "c"},
                     "probabilities": {"0": 0.1, "1": 0.59, "2": 0.31}, "confidence": 0.71},
            "desk": {"type": "choice", "choice": "billing",
                     "probabilities": {"billing": 0.8, "shipping": 0.2}, "confidence": 0.6},
            "refund": {"type": "noul", "noul": 0.25}
        },
        "usage": {"input_tokens": 210, "output_tokens": 24, "cost": 0.00042}
    });
    let d = Decision::from_value(&wire).unwrap();
    assert_eq!(d.to_value(), wire);
    assert_eq!(Decision::from_value(&d.to_value()).unwrap(), d);
    assert_eq!(d.answers["desk"].answer_type(), "choice");
}

// ---- §2.4 coherence -----------------------------------------------------------

#[tokio::test]
async fn coherence_rules_each_name_the_key() {
    let qs = three_questions();
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"refund": {"type": "score", "score": 1, "confidence": 0.5}}),
            "classifier: answer \"refund\": answer is of type score, but the question asks for noul",
        ),
        (
            json!({"desk": {"type": "choice", "choice": "legal", "confidence": 0.5}}),
            "classifier: answer \"desk\": choice \"legal\" is not one of the offered options",
        ),
        (
            json!({"desk": {"type": "choice", "choice": "billing", "confidence": 0.5, "probabilities": {"billing": 1.2}}}),
            "classifier: answer \"desk\": probability \"billing\" 1.2 is outside [0, 1]",
        ),
        (
            json!({"desk": {"type": "choice", "choice": "billing", "confidence": 0.5, "probabilities": {"legal": 0.2}}}),
            "classifier: answer \"desk\": probability for \"legal\", which is not one of the offered options",
        ),
        (
            json!({"desk": {"type": "choice", "choice": "billing", "confidence": 1.5}}),
            "classifier: answer \"desk\": confidence 1.5 is outside [0, 1]",
        ),
        (
            json!({"refund": {"type": "noul", "noul": -0.1}}),
            "classifier: answer \"refund\": noul -0.1 is outside [0, 1]",
        ),
        (
            json!({"refund": {"type": "noul", "noul": 1.0000001}}),
            "classifier: answer \"refund\": noul 1.0000001 is outside [0, 1]",
        ),
        (
            json!({"risk": {"type": "score", "score": 2.5, "confidence": 0.5}}),
            "classifier: answer \"risk\": score 2.5 is outside [0, 2]",
        ),
        (
            json!({"risk": {"type": "score", "score": -1, "confidence": 0.5}}),
            "classifier: answer \"risk\": score -1 is outside [0, 2]",
        ),
        (
            json!({"risk": {"type": "score", "score": 1, "confidence": 0.5, "probabilities": {"3": 0.1}}}),
            "classifier: answer \"risk\": probability for level \"3\", which the rubric does not have",
        ),
        (
            json!({"risk": {"type": "score", "score": 1, "confidence": 0.5, "probabilities": {"1": -0.5}}}),
            "classifier: answer \"risk\": probability \"1\" -0.5 is outside [0, 1]",
        ),
    ];
    for (answers, want) in cases {
        let got = eval_err(answers.clone(), &qs).await;
        assert_eq!(got, want, "answers {answers}");
    }
}

#[tokio::test]
async fn edges_of_the_ranges_are_coherent() {
    let qs = three_questions();
    let d = custom_answering(json!({
        "refund": {"type": "noul", "noul": 0.0},
        "risk": {"type": "score", "score": 2, "confidence": 1.0, "probabilities": {"0": 0, "1": 0, "2": 1}},
        "desk": {"type": "choice", "choice": "technical", "confidence": 0.0, "probabilities": {"technical": 1}}
    }))
    .evaluate(json!("s"), &qs)
    .await
    .unwrap();
    assert_eq!(d.score("risk").unwrap().score, 2.0);
}

#[tokio::test]
async fn a_non_finite_number_from_a_closure_is_an_error() {
    let qs = three_questions();
    let judge = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        evaluate: Some(Arc::new(|_ctx, _state, _qs| {
            Box::pin(async {
                Ok(Decision {
                    model: "m".into(),
                    answers: [(
                        "refund".to_string(),
                        DecisionAnswer::Noul(NoulAnswer { noul: f64::NAN }),
                    )]
                    .into(),
                    usage: ClassifierUsage::default(),
                    calibrated: true,
                })
            })
        })),
        ..Default::default()
    })
    .unwrap();
    let e = judge.evaluate(json!(1), &qs).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "classifier: answer \"refund\": noul is not a finite number"
    );
    assert_eq!(e.kind(), ErrorKind::Incoherent);
}

#[tokio::test]
async fn answers_never_asked_are_dropped_and_reported() {
    let seen: Arc<Mutex<Vec<MetricEvent>>> = Arc::default();
    let sink = seen.clone();
    let judge = custom_with(
        json!({"refund": {"type": "noul", "noul": 0.5}, "mood": {"type": "noul", "noul": 0.9}}),
        Some(Arc::new(move |m: &MetricEvent| {
            sink.lock().unwrap().push(m.clone())
        })),
    );
    let d = judge
        .evaluate(json!("s"), &three_questions())
        .await
        .unwrap();
    assert!(d.answers.contains_key("refund"));
    assert!(!d.answers.contains_key("mood"));
    let seen = seen.lock().unwrap();
    let warning = seen
        .iter()
        .find(|m| m.name == MetricName::Warning)
        .expect("a warning");
    assert_eq!(warning.key.as_deref(), Some("mood"));
    assert_eq!(
        warning.error.as_deref(),
        Some("classifier: answer \"mood\" answers no question that was asked; dropped")
    );
}

#[tokio::test]
async fn missing_answers_are_reported_by_the_accessor_not_at_decode() {
    let d = custom_answering(json!({"refund": {"type": "noul", "noul": 0.5}}))
        .evaluate(json!("s"), &three_questions())
        .await
        .unwrap();
    assert_eq!(
        d.score("risk").unwrap_err().to_string(),
        "classifier: no answer \"risk\" in this decision"
    );
}

// ---- §2.1 limits ----------------------------------------------------------------

#[tokio::test]
async fn limits_are_checked_before_anything_is_sent() {
    let judge = custom_answering(json!({}));
    let options = |n: usize| -> Question {
        choice_over(
            "pick",
            (0..n).map(|i| (format!("o{i}"), format!("option number {i}"))),
        )
        .into()
    };
    let levels = |n: usize| -> Question {
        ScoreQuestion {
            instructions: "rate".into(),
            criteria: (0..n).map(|i| format!("level {i}").into()).collect(),
        }
        .into()
    };
    let cases: Vec<(Question, Option<&str>)> = vec![
        (
            options(0),
            Some("classifier: question \"q\": a choice needs 1..=255 options, got 0"),
        ),
        (options(1), None),
        (options(MAX_CHOICE_OPTIONS), None),
        (
            options(256),
            Some("classifier: question \"q\": a choice needs 1..=255 options, got 256"),
        ),
        (
            levels(1),
            Some("classifier: question \"q\": a score needs 2..=10 levels, got 1"),
        ),
        (levels(MIN_SCORE_LEVELS), None),
        (levels(MAX_SCORE_LEVELS), None),
        (
            levels(11),
            Some("classifier: question \"q\": a score needs 2..=10 levels, got 11"),
        ),
    ];
    for (q, want) in cases {
        let qs = Questions::from([("q".to_string(), q)]);
        let got = judge
            .evaluate(json!("s"), &qs)
            .await
            .err()
            .map(|e| e.to_string());
        assert_eq!(got.as_deref(), want);
    }
    let e = judge
        .evaluate(json!("s"), &Questions::new())
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "classifier: no questions to ask (the question set is empty)"
    );
    assert_eq!(e.kind(), ErrorKind::InvalidQuestion);
}

/// A question whose every text is blank would be answered with confidence
/// about nothing (the local styles answered such a noul p = 1.00): it is
/// refused by its key before the backend is called, whatever the style.
#[tokio::test]
async fn a_question_with_nothing_to_read_is_refused_before_anything_is_sent() {
    let calls = Arc::new(Mutex::new(0usize));
    let seen = calls.clone();
    let judge = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
            *seen.lock().unwrap() += 1;
            Box::pin(async {
                Decision::from_slice(br#"{"model":"m","answers":{}}"#).map_err(|e| e.to_string())
            })
        })),
        ..Default::default()
    })
    .unwrap();
    let blank_json = Content::structured(json!({})).unwrap();
    let noul = |instructions: Content, criteria: Option<(&str, &str)>| -> Question {
        NoulQuestion {
            instructions,
            criteria: criteria.map(|(t, f)| NoulCriteria {
                when_true: t.into(),
                when_false: f.into(),
            }),
        }
        .into()
    };
    let refused: Vec<(Question, &str)> = vec![
        (noul("".into(), None), "a noul needs instructions"),
        (noul(" \n\t".into(), None), "a noul needs instructions"),
        (noul(blank_json.clone(), None), "a noul needs instructions"),
        (
            noul("".into(), Some(("", "not spam"))),
            "a noul needs instructions",
        ),
        (
            ChoiceQuestion {
                instructions: "  ".into(),
                criteria: [
                    ("billing".to_string(), None),
                    ("shipping".to_string(), Some(Content::from(""))),
                ]
                .into(),
            }
            .into(),
            "a choice needs instructions or an option's description",
        ),
        (
            ScoreQuestion {
                instructions: "".into(),
                criteria: vec!["".into(), " ".into(), blank_json.clone()],
            }
            .into(),
            "a score needs instructions or a level's text",
        ),
        (
            BoxQuestion {
                instructions: "".into(),
            }
            .into(),
            "a box needs instructions",
        ),
    ];
    for (q, needs) in refused {
        let qs = Questions::from([("fine".to_string(), desk()), ("k".to_string(), q.clone())]);
        let e = judge.evaluate(json!("s"), &qs).await.unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("classifier: question \"k\": {needs}: there is nothing to read"),
            "{q:?}"
        );
        assert_eq!(e.kind(), ErrorKind::InvalidQuestion);
        assert_eq!(
            validate_questions(&qs).unwrap_err().to_string(),
            e.to_string()
        );
    }
    assert_eq!(*calls.lock().unwrap(), 0, "nothing was sent");

    // Something to read anywhere is enough: a true criterion, one option's
    // description, one level's text, structured instructions.
    let read: Vec<Question> = vec![
        noul("".into(), Some(("the customer wants money back", ""))),
        noul(Content::structured(json!({"ask": "spam?"})).unwrap(), None),
        ChoiceQuestion {
            instructions: "".into(),
            criteria: [
                ("billing".to_string(), Some(Content::from("money moved"))),
                ("shipping".to_string(), None),
            ]
            .into(),
        }
        .into(),
        ScoreQuestion {
            instructions: "".into(),
            criteria: vec!["".into(), "urgent".into()],
        }
        .into(),
    ];
    for q in read {
        let qs = Questions::from([("k".to_string(), q.clone())]);
        assert!(validate_questions(&qs).is_ok(), "{q:?}");
    }
}

#[test]
fn question_wire_form_round_trips_and_absent_is_not_empty() {
    let cases = vec![
        (
            Question::from(NoulQuestion {
                instructions: "i".into(),
                criteria: None,
            }),
            json!({"type": "noul", "instructions": "i"}),
        ),
        (
            Question::from(NoulQuestion {
                instructions: "i".into(),
                criteria: Some(NoulCriteria::default()),
            }),
            json!({"type": "noul", "instructions": "i", "criteria": {"false": "", "true": ""}}),
        ),
        (
            Question::from(ScoreQuestion {
                instructions: "i".into(),
                criteria: vec!["z".into(), "a".into()],
            }),
            json!({"type": "score", "instructions": "i", "criteria": ["z", "a"]}),
        ),
        (
            desk(),
            json!({"type": "choice", "instructions": "Which desk owns this?", "criteria": {
            "billing": "money moved: a duplicate charge, a refund owed",
            "shipping": "a physical parcel is late or damaged",
            "technical": "the product itself errors"}}),
        ),
    ];
    for (q, wire) in cases {
        assert_eq!(q.wire(), wire);
        assert_eq!(Question::from_wire(&wire).unwrap(), q);
    }
    let e = Question::from_wire(&json!({"type": "score", "criteria": "low,high"})).unwrap_err();
    assert_eq!(
        e.to_string(),
        "classifier: score question \"criteria\" is not an array of levels"
    );
}

// ---- §2.5 errors -------------------------------------------------------------

#[test]
fn errors_are_send_sync_static_std_errors() {
    fn assert_error<E: std::error::Error + Send + Sync + 'static>() {}
    assert_error::<ClassifierError>();
}

// ---- §6 degenerate criteria ------------------------------------------------------------

#[test]
fn degenerate_criteria_cases() {
    let c = |pairs: &[(&str, &str)]| -> BTreeMap<String, Option<Content>> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Some(Content::from(*v))))
            .collect()
    };
    type Pairs<'a> = &'a [(&'a str, &'a str)];
    let cases: &[(Pairs, Option<&str>)] = &[
        (
            &[("a", ""), ("b", " ")],
            Some("every option's description is empty"),
        ),
        (
            &[("yes", "yes"), ("no", "no")],
            Some("every option's description is just its own id"),
        ),
        (
            &[("a", "pick me"), ("b", "pick me")],
            Some("every option has the same description"),
        ),
        (&[("only", "")], None),
        (&[("a", "first"), ("b", "")], None),
        (&[("yes", "yes"), ("no", "the user declined")], None),
        (&[], None),
    ];
    for (pairs, want) in cases {
        assert_eq!(degenerate_criteria(&c(pairs)), *want, "{pairs:?}");
    }
}

#[tokio::test]
async fn a_degenerate_choice_warns_once_per_key_and_is_sent_unchanged() {
    let seen: Arc<Mutex<Vec<MetricEvent>>> = Arc::default();
    let sink = seen.clone();
    let asked: Arc<Mutex<Vec<Questions>>> = Arc::default();
    let asked_sink = asked.clone();
    let judge = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        on_metric: Some(Arc::new(move |m: &MetricEvent| {
            sink.lock().unwrap().push(m.clone())
        })),
        evaluate: Some(Arc::new(move |_ctx, _state, qs: Questions| {
            asked_sink.lock().unwrap().push(qs);
            Box::pin(async {
                Decision::from_slice(br#"{"model":"m","answers":{}}"#).map_err(|e| e.to_string())
            })
        })),
        ..Default::default()
    })
    .unwrap();
    let qs = Questions::from([
        (
            "flat".to_string(),
            choice_over("?", [("yes", "yes"), ("no", "no")]).into(),
        ),
        (
            "also".to_string(),
            choice_over("?", [("a", ""), ("b", "")]).into(),
        ),
    ]);
    for _ in 0..3 {
        judge.evaluate(json!("s"), &qs).await.unwrap();
    }
    let seen = seen.lock().unwrap();
    let warnings: Vec<_> = seen
        .iter()
        .filter(|m| m.name == MetricName::Warning)
        .collect();
    assert_eq!(
        warnings.len(),
        2,
        "one per key per classifier: {warnings:?}"
    );
    assert_eq!(
        warnings[0].error.as_deref(),
        Some(
            "classifier: question \"also\": degenerate choice criteria: every option's description is empty; the model can only rank these options at chance"
        )
    );
    assert_eq!(
        seen.iter()
            .filter(|m| m.name == MetricName::Evaluate)
            .count(),
        3
    );
    assert!(
        asked.lock().unwrap().iter().all(|q| q == &qs),
        "detection, never repair"
    );
}

// ---- §4 metrics ---------------------------------------------------------------------------

#[tokio::test]
async fn every_call_emits_one_evaluate_metric() {
    let seen: Arc<Mutex<Vec<MetricEvent>>> = Arc::default();
    let sink = seen.clone();
    let judge = custom_with(
        json!({"refund": {"type": "noul", "noul": 0.5}}),
        Some(Arc::new(move |m: &MetricEvent| {
            sink.lock().unwrap().push(m.clone())
        })),
    );
    judge
        .evaluate_ctx(
            EvalContext::new().with_call_name("c1"),
            json!(1),
            &three_questions(),
        )
        .await
        .unwrap();
    let _ = judge
        .evaluate(json!(1), &Questions::from([("refund".to_string(), desk())]))
        .await
        .unwrap_err();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        (seen[0].name, seen[0].status, seen[0].call_name.as_str()),
        (MetricName::Evaluate, MetricStatus::Ok, "c1")
    );
    assert_eq!(seen[0].model, "rule-1");
    assert_eq!(
        (seen[1].name, seen[1].status),
        (MetricName::Evaluate, MetricStatus::Error)
    );
    assert!(
        seen[1]
            .error
            .as_deref()
            .unwrap()
            .contains("answer \"refund\"")
    );
}

// ---- §8 evaluate_batch ---------------------------------------------------------------------

#[tokio::test]
async fn batch_keeps_order_bounds_concurrency_and_fails_closed() {
    let in_flight = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let peak = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (f, p) = (in_flight.clone(), peak.clone());
    let judge = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        batch_concurrency: 4,
        evaluate: Some(Arc::new(move |_ctx, state: Value, _qs| {
            let (f, p) = (f.clone(), p.clone());
            Box::pin(async move {
                use std::sync::atomic::Ordering::SeqCst;
                let now = f.fetch_add(1, SeqCst) + 1;
                p.fetch_max(now, SeqCst);
                let i = state.as_u64().unwrap();
                // Later states finish first, so order must come from the batch, not timing.
                tokio::time::sleep(std::time::Duration::from_millis(30 - i)).await;
                f.fetch_sub(1, SeqCst);
                if i == 7 || i == 11 {
                    return Err(format!("state {i} is poison"));
                }
                let p = i as f64 / 100.0;
                Decision::from_value(
                    &json!({"model": "m", "answers": {"refund": {"type": "noul", "noul": p}}}),
                )
                .map_err(|e| e.to_string())
            })
        })),
        ..Default::default()
    })
    .unwrap();
    let qs = three_questions();
    let ok: Vec<Value> = (0..6).map(|i| json!(i)).collect();
    let ds = judge.evaluate_batch(ok, &qs).await.unwrap();
    let got: Vec<f64> = ds.iter().map(|d| d.noul("refund").unwrap().noul).collect();
    assert_eq!(got, [0.0, 0.01, 0.02, 0.03, 0.04, 0.05]);
    assert!(peak.load(std::sync::atomic::Ordering::SeqCst) <= 4);

    let e = judge
        .evaluate_batch((0..20).map(|i| json!(i)).collect(), &qs)
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "state 7: classifier: custom: state 7 is poison"
    );
    assert_eq!(e.state_index(), Some(7));

    let e = judge.evaluate_batch(vec![], &qs).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "classifier: evaluate_batch needs at least one state"
    );
}

// ---- §5 canonical JSON ----------------------------------------------------------------------

#[test]
fn canonical_request_bytes_are_stable() {
    // A snapshot: these bytes are shared with every port of the library. Change
    // them only with a format version bump.
    let want = concat!(
        r#"{"model":"typesafe/jev-1.13","questions":{"#,
        r#""desk":{"criteria":{"billing":"money moved: a duplicate charge, a refund owed","shipping":"a physical parcel is late or damaged","technical":"the product itself errors"},"instructions":"Which desk owns this?","type":"choice"},"#,
        r#""refund":{"criteria":{"false":"anything else","true":"a refund or chargeback is requested"},"instructions":"Does the customer ask for money back?","type":"noul"},"#,
        r#""risk":{"criteria":["harmless","reversible","destructive"],"instructions":"How destructive is this shell command?","type":"score"}}}"#
    );
    assert_eq!(
        canonical_request("typesafe/jev-1.13", &three_questions()),
        want
    );
}

#[test]
fn canonical_json_snapshot_of_awkward_values() {
    let v: Value = serde_json::from_str(
        r#"{"z":[1e21,1e-7,0.000001,-0.0,2.50,100],"é":"<tag> & 'q' \"d\" \u2028","A":{"b":null,"a":true},"ctl":"\u0001\b\f\n"}"#,
    )
    .unwrap();
    assert_eq!(
        canonical_json(&v),
        "{\"A\":{\"a\":true,\"b\":null},\"ctl\":\"\\u0001\\u0008\\u000c\\n\",\"z\":[1e+21,1e-7,0.000001,0,2.5,100],\"é\":\"<tag> & 'q' \\\"d\\\" \\u2028\"}"
    );
}
