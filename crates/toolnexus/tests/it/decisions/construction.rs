//! SPEC §3: what construction refuses, presets, and the Static and Custom
//! styles.

use super::*;

// ---- §3 construction ----------------------------------------------------------

#[test]
fn construction_rejects_what_cannot_work() {
    let cases: Vec<(ClassifierOptions, &str)> = vec![
        (
            ClassifierOptions {
                style: ClassifierStyle::Llm,
                ..Default::default()
            },
            "classifier: style \"llm\" requires Client",
        ),
        (
            ClassifierOptions {
                style: ClassifierStyle::Custom,
                ..Default::default()
            },
            "classifier: style \"custom\" requires Evaluate",
        ),
        (
            ClassifierOptions {
                style: ClassifierStyle::Static,
                ..Default::default()
            },
            "classifier: style \"static\" requires Decisions",
        ),
        (
            ClassifierOptions {
                base_url: "https://openrouter.ai/api/v1".into(),
                model: "jev-1.13".into(),
                ..Default::default()
            },
            "classifier: model \"jev-1.13\" is not an OpenRouter model id: on openrouter.ai use \"typesafe/jev-1.13\"",
        ),
        (
            ClassifierOptions {
                backend: Backend::OpenRouter,
                model: "jev-latest".into(),
                ..Default::default()
            },
            "classifier: model \"jev-latest\" is not an OpenRouter model id: on openrouter.ai use \"typesafe/jev-latest\"",
        ),
        (
            ClassifierOptions {
                base_url: "ftp://example.com".into(),
                ..Default::default()
            },
            "classifier: base_url \"ftp://example.com\" is not an http(s) URL",
        ),
        (
            ClassifierOptions {
                headers: [("bad header".to_string(), "v".to_string())].into(),
                ..Default::default()
            },
            "classifier: header name \"bad header\" is not a valid HTTP header name",
        ),
    ];
    for (opts, want) in cases {
        let e = create_classifier(opts).unwrap_err();
        assert_eq!(e.to_string(), want);
        assert_eq!(e.kind(), ErrorKind::Config);
    }
    assert_eq!(
        "System One"
            .parse::<ClassifierStyle>()
            .unwrap_err()
            .to_string(),
        "classifier: unknown style \"System One\" (want systemone|llm|custom|static)"
    );
    for s in ["systemone", "llm", "custom", "static"] {
        assert_eq!(s.parse::<ClassifierStyle>().unwrap().as_str(), s);
    }
}

#[test]
fn presets_fill_what_is_left_empty_and_explicit_fields_win() {
    let c = create_classifier(ClassifierOptions::default()).unwrap();
    assert_eq!(c.model(), "jev-latest");
    assert!(format!("{c:?}").contains("https://api.typesafe.ai/v1/systemone"));
    let c = create_classifier(ClassifierOptions {
        backend: Backend::OpenRouter,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(c.model(), "typesafe/jev-1.13");
    assert!(format!("{c:?}").contains("https://openrouter.ai/api/v1/systemone"));
    let c = create_classifier(ClassifierOptions {
        backend: Backend::OpenRouter,
        model: "typesafe/jev-2".into(),
        base_url: "http://127.0.0.1:9/v1/".into(),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(c.model(), "typesafe/jev-2");
    assert!(format!("{c:?}").contains("http://127.0.0.1:9/v1/systemone"));
}

// ---- §3 Static -------------------------------------------------------------------

const SEED_RESPONSE: &[u8] = br#"{"model":"typesafe/jev-1.13-20260917","calibrated":true,
        "answers":{"risk":{"type":"score","score":1.21,
            "legend":{"0":"harmless","1":"reversible","2":"destructive"},
            "probabilities":{"0":0.10,"1":0.59,"2":0.31},"confidence":0.71}},
        "usage":{"input_tokens":210,"output_tokens":24}}"#;

fn static_judge(model: &str) -> Classifier {
    create_classifier(ClassifierOptions {
        style: ClassifierStyle::Static,
        model: model.into(),
        decisions: vec![RecordedDecision {
            state: json!({"cmd": "rm -rf ./build", "cwd": "/repo"}),
            questions: risk_questions(),
            response: SEED_RESPONSE.to_vec(),
        }],
        ..Default::default()
    })
    .unwrap()
}

#[tokio::test]
async fn static_hits_on_canonical_equality_and_misses_otherwise() {
    let judge = static_judge("typesafe/jev-1.13");
    // Key order in the state does not matter: the key is canonical.
    let d = judge
        .evaluate(
            json!({"cwd": "/repo", "cmd": "rm -rf ./build"}),
            &risk_questions(),
        )
        .await
        .unwrap();
    assert_eq!(d.model, "typesafe/jev-1.13-20260917");
    assert!(d.calibrated);
    assert_eq!(d.usage.cost, None);

    let miss = "classifier: static: no recorded decision for this request+state";
    let e = judge
        .evaluate(json!({"cmd": "ls"}), &risk_questions())
        .await
        .unwrap_err();
    assert_eq!(e.to_string(), miss);
    assert!(e.is_miss());
    let mut other_questions = risk_questions();
    other_questions.insert(
        "extra".into(),
        NoulQuestion {
            instructions: "Is it spam?".into(),
            criteria: None,
        }
        .into(),
    );
    let e = judge
        .evaluate(
            json!({"cmd": "rm -rf ./build", "cwd": "/repo"}),
            &other_questions,
        )
        .await
        .unwrap_err();
    assert_eq!(e.to_string(), miss);
    // Another model is another key.
    let e = static_judge("jev-latest")
        .evaluate(
            json!({"cmd": "rm -rf ./build", "cwd": "/repo"}),
            &risk_questions(),
        )
        .await
        .unwrap();
    assert_eq!(e.model, "typesafe/jev-1.13-20260917");
}

#[test]
fn static_recordings_are_checked_at_construction() {
    let rec = |response: &[u8]| RecordedDecision {
        state: json!(1),
        questions: risk_questions(),
        response: response.to_vec(),
    };
    let e = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Static,
        decisions: vec![rec(SEED_RESPONSE), rec(br#"{"model":"m","answers":{}}"#)],
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "classifier: static: recorded decisions 0 and 1 answer the same request+state"
    );
    let e = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Static,
        decisions: vec![rec(br#"{"model":"m","answers":{"risk":{"type":"score"}}}"#)],
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "classifier: static: recorded decision 0: answer \"risk\": score answer has no \"score\" number"
    );
}

// ---- §3 Custom ---------------------------------------------------------------------

#[tokio::test]
async fn custom_errors_and_context_reach_the_closure() {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = seen.clone();
    let judge = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        evaluate: Some(Arc::new(
            move |ctx: EvalContext, state: Value, qs: Questions| {
                sink.lock()
                    .unwrap()
                    .push(format!("{} {} {}", ctx.call_name, state, qs.len()));
                Box::pin(async { Err("rules engine offline".to_string()) })
            },
        )),
        ..Default::default()
    })
    .unwrap();
    let e = judge
        .evaluate_ctx(
            EvalContext::new().with_call_name("triage"),
            json!("x"),
            &three_questions(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.to_string(), "classifier: custom: rules engine offline");
    assert_eq!(e.kind(), ErrorKind::Custom);
    assert_eq!(seen.lock().unwrap().as_slice(), ["triage \"x\" 3"]);
}

#[tokio::test(start_paused = true)]
async fn cancelling_a_custom_call_returns_promptly() {
    let judge = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        evaluate: Some(Arc::new(|_ctx, _state, _qs| {
            Box::pin(async {
                tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
                Err("never".to_string())
            })
        })),
        ..Default::default()
    })
    .unwrap();
    let ctx = EvalContext::new();
    let cancel = ctx.cancel.clone();
    let started = tokio::time::Instant::now();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        cancel.cancel();
    });
    let e = judge
        .evaluate_ctx(ctx, json!(1), &three_questions())
        .await
        .unwrap_err();
    assert_eq!(e.to_string(), "classifier: context canceled");
    assert!(e.is_cancelled());
    assert!(started.elapsed() < std::time::Duration::from_millis(100));
}
