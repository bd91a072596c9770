//! Wire parity with the official SDK's schema (SPEC §15): the fourth question
//! type, null descriptions, structured content, image assets, unknown answer
//! types under keys nobody asked, request ids, and the schema's own documented
//! examples, against a real HTTP server on 127.0.0.1:0.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use toolnexus::classifier::*;
use toolnexus::client::{ClientOptions, Style, create_client};
use toolnexus::judge::{Tape, TapeEntry, TapeOutcome};

use crate::support::{Reply, Server};

fn wide_questions() -> Questions {
    Questions::from([
        (
            "billing".to_string(),
            NoulQuestion {
                instructions: Content::structured(json!({"task": "Is this about billing?"}))
                    .unwrap(),
                criteria: Some(NoulCriteria {
                    when_true: "money moved".into(),
                    when_false: Content::structured(json!(["anything", "else"])).unwrap(),
                }),
            }
            .into(),
        ),
        (
            "tone".to_string(),
            choice_over(
                "What is the tone?",
                [("calm", None::<&str>), ("angry", None)],
            )
            .into(),
        ),
        (
            "urgency".to_string(),
            ScoreQuestion {
                instructions: "How urgent?".into(),
                criteria: vec![
                    "can wait".into(),
                    Content::structured(json!({"level": "today"})).unwrap(),
                ],
            }
            .into(),
        ),
        (
            "dent".to_string(),
            BoxQuestion {
                instructions: "Where is the dent in img-1?".into(),
            }
            .into(),
        ),
    ])
}

/// The answer a System One model gives to [`wide_questions`], as the schema's
/// examples spell answers.
const WIDE_ANSWER: &str = r#"{"model":"jev-vision-20261101","answers":{
  "billing":{"type":"noul","noul":0.98},
  "tone":{"type":"choice","choice":"angry","confidence":0.9,"probabilities":{"angry":0.8,"calm":0.2}},
  "urgency":{"type":"score","score":0.7,"confidence":0.9,
     "legend":{"0":"can wait","1":{"level":"today"}},"probabilities":{"0":0.3,"1":0.7}},
  "dent":{"type":"box","box":{"top":0.2,"bottom":0.66,"left":0.19,"right":0.68},"confidence":null}},
  "usage":{"input_tokens":120,"output_tokens":12}}"#;

fn png() -> Asset {
    Asset {
        format: ImageFormat::Png,
        data: b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec(),
    }
}

fn systemone(server: &Server) -> Classifier {
    create_classifier(ClassifierOptions {
        base_url: server.base_url(),
        model: "jev-latest".into(),
        api_key_env: "TOOLNEXUS_IT_UNSET_KEY_VAR".into(),
        retries: -1,
        ..Default::default()
    })
    .unwrap()
}

#[test]
fn wide_questions_round_trip_through_wire_and_canonical_json() {
    let qs = wide_questions();
    let wire = questions_wire(&qs);
    assert_eq!(
        wire["tone"]["criteria"],
        json!({"angry": null, "calm": null})
    );
    assert_eq!(
        wire["billing"]["instructions"],
        json!({"task": "Is this about billing?"})
    );
    assert_eq!(
        wire["dent"],
        json!({"type": "box", "instructions": "Where is the dent in img-1?"})
    );
    assert_eq!(questions_from_wire(&wire).unwrap(), qs);
    let text: Value = serde_json::from_str(&canonical_json(&wire)).unwrap();
    assert_eq!(questions_from_wire(&text).unwrap(), qs);
    // The canonical request is written directly, without a Value; it must be
    // the same bytes as the canonical JSON of the wire form.
    let direct = canonical_request("jev-latest", &qs);
    let via_value = canonical_json(&json!({"model": "jev-latest", "questions": wire}));
    assert_eq!(direct, via_value);
    validate_questions(&qs).unwrap();
}

#[test]
fn content_that_is_not_text_object_or_array_is_refused_naming_the_key() {
    let e = questions_from_wire(&json!({"x": {"type": "noul", "instructions": 3}})).unwrap_err();
    assert_eq!(
        e.to_string(),
        "classifier: question \"x\": question \"instructions\" is a number, not a string, an object or an array"
    );
    let e = questions_from_wire(&json!({"t": {"type": "choice", "criteria": {"a": true}}}))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "classifier: question \"t\": choice question option \"a\" meaning is a bool, not a string, an object or an array"
    );
    let e =
        questions_from_wire(&json!({"s": {"type": "score", "criteria": ["a", null]}})).unwrap_err();
    assert_eq!(
        e.to_string(),
        "classifier: question \"s\": score question level 1 is null"
    );
}

#[test]
fn null_descriptions_warn_as_degenerate_but_are_sent_unchanged() {
    let all_null: BTreeMap<String, Option<Content>> =
        [("calm".into(), None), ("angry".into(), None)].into();
    assert_eq!(
        degenerate_criteria(&all_null),
        Some("no option has a description, so each is read by its name alone")
    );
    let one_described: BTreeMap<String, Option<Content>> = [
        ("calm".into(), None),
        ("angry".into(), Some("shouting, insults".into())),
    ]
    .into();
    assert_eq!(degenerate_criteria(&one_described), None);
}

#[tokio::test]
async fn systemone_sends_wide_questions_and_decodes_every_answer_type() {
    let server = Server::start(vec![
        Reply::json(200, WIDE_ANSWER).with_header("x-typesafe-request-id", "req_wide_1"),
    ])
    .await;
    let judge = systemone(&server);
    let qs = wide_questions();
    let out = judge
        .evaluate_request(
            EvalContext::new(),
            EvalRequest::new(json!("see img-1"), qs.clone()),
        )
        .await
        .unwrap();
    assert_eq!(out.request_id.as_deref(), Some("req_wide_1"));
    let d = &out.decision;
    assert_eq!(d.model, "jev-vision-20261101");
    let dent = d.bounding_box("dent").unwrap();
    assert_eq!(
        dent.coordinates,
        BoxCoordinates {
            top: 0.2,
            bottom: 0.66,
            left: 0.19,
            right: 0.68
        }
    );
    assert_eq!(dent.confidence, None);
    assert_eq!(d.choice("tone").unwrap().choice, "angry");
    // A structured level comes back as its canonical JSON text.
    assert_eq!(
        d.score("urgency").unwrap().levels(),
        ["can wait", r#"{"level":"today"}"#]
    );

    let sent = server.requests()[0].json();
    assert_eq!(sent["questions"], questions_wire(&qs));
    assert!(
        sent.get("assets").is_none(),
        "no assets, no key: the API rejects an empty map"
    );

    // Through a decision's own wire form and a tape, the box survives.
    assert_eq!(&Decision::from_value(&d.to_value()).unwrap(), d);
    let tape = Tape::new();
    tape.record(TapeEntry {
        call_name: "c".into(),
        model: "jev-latest".into(),
        state: json!("see img-1"),
        questions: qs.clone(),
        outcome: TapeOutcome::Decision(d.clone()),
        request_id: out.request_id.clone(),
    });
    let loaded = Tape::from_json(&tape.to_json()).unwrap();
    assert_eq!(loaded.entries(), tape.entries());
    let replayed = loaded
        .replayer()
        .evaluate_ctx(
            EvalContext::new().with_call_name("c"),
            json!("see img-1"),
            &qs,
        )
        .await
        .unwrap();
    assert_eq!(&replayed, d);
}

#[tokio::test]
async fn systemone_sends_assets_model_and_extra_fields() {
    let server = Server::start(vec![Reply::json(
        200,
        r#"{"model":"jev-vision","answers":{"dent":{"type":"box","box":{"top":0,"bottom":1,"left":0,"right":1},"confidence":0.9}}}"#,
    )])
    .await;
    let qs = Questions::from([(
        "dent".to_string(),
        BoxQuestion {
            instructions: "Where is the dent in img-1?".into(),
        }
        .into(),
    )]);
    let req = EvalRequest::new(json!({"photo": "img-1"}), qs)
        .with_model("jev-vision")
        .with_assets(Assets::from([("img-1".to_string(), png())]))
        .with_extra(Map::from_iter([("priority".to_string(), json!("low"))]));
    let out = systemone(&server)
        .evaluate_request(EvalContext::new(), req)
        .await
        .unwrap();
    assert_eq!(
        out.decision.bounding_box("dent").unwrap().confidence,
        Some(0.9)
    );
    let sent = server.requests()[0].json();
    assert_eq!(sent["model"], "jev-vision");
    assert_eq!(sent["priority"], "low");
    assert_eq!(
        sent["assets"],
        json!({"img-1": {"type": "image", "format": "png", "data_base64": png().to_base64()}})
    );
    let back = Asset::from_wire("img-1", &sent["assets"]["img-1"]).unwrap();
    assert_eq!(back, png());
}

#[tokio::test]
async fn an_unknown_type_under_a_key_nobody_asked_is_dropped_with_a_warning() {
    let server = Server::start(vec![
        Reply::json(
            200,
            r#"{"model":"m","answers":{"q":{"type":"noul","noul":0.4},"future":{"type":"polygon","points":[1,2]}}}"#,
        ),
        Reply::json(200, r#"{"model":"m","answers":{"q":{"type":"polygon"}}}"#),
    ])
    .await;
    let warnings = Arc::new(Mutex::new(Vec::new()));
    let sink = warnings.clone();
    let judge = create_classifier(ClassifierOptions {
        base_url: server.base_url(),
        api_key_env: "TOOLNEXUS_IT_UNSET_KEY_VAR".into(),
        retries: -1,
        on_metric: Some(Arc::new(move |m: &MetricEvent| {
            if m.name == MetricName::Warning {
                sink.lock()
                    .unwrap()
                    .push(m.error.clone().unwrap_or_default());
            }
        })),
        ..Default::default()
    })
    .unwrap();
    let qs = Questions::from([(
        "q".to_string(),
        NoulQuestion {
            instructions: "Is it spam?".into(),
            criteria: None,
        }
        .into(),
    )]);
    let out = judge
        .evaluate_request(EvalContext::new(), EvalRequest::new(json!("x"), qs.clone()))
        .await
        .unwrap();
    assert_eq!(out.dropped, ["future"]);
    assert_eq!(out.decision.noul("q").unwrap().noul, 0.4);
    assert!(!out.decision.answers.contains_key("future"));
    assert_eq!(
        *warnings.lock().unwrap(),
        ["classifier: answer \"future\" answers no question that was asked; dropped"]
    );
    // Under an asked key an unknown type is still an error naming the key.
    let e = judge.evaluate(json!("x"), &qs).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "classifier: answer \"q\": answer has unknown type \"polygon\" (want noul|choice|score|box)"
    );
}

#[tokio::test]
async fn static_recordings_drop_unasked_answers_whatever_their_type() {
    let qs = Questions::from([(
        "q".to_string(),
        NoulQuestion {
            instructions: "Is it spam?".into(),
            criteria: None,
        }
        .into(),
    )]);
    let judge = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Static,
        decisions: vec![RecordedDecision {
            state: json!(1),
            questions: qs.clone(),
            response:
                br#"{"model":"m","answers":{"q":{"type":"noul","noul":0.1},"x":{"type":"mesh"}}}"#
                    .to_vec(),
        }],
        ..Default::default()
    })
    .unwrap();
    let out = judge
        .evaluate_request(EvalContext::new(), EvalRequest::new(json!(1), qs.clone()))
        .await
        .unwrap();
    assert_eq!(out.dropped, ["x"]);
    // Static honours a model override: it is part of the lookup, so another
    // model misses; an asset is refused by name.
    let e = judge
        .evaluate_request(
            EvalContext::new(),
            EvalRequest::new(json!(1), qs.clone()).with_model("other"),
        )
        .await
        .unwrap_err();
    assert!(e.is_miss(), "{e}");
    let e = judge
        .evaluate_request(
            EvalContext::new(),
            EvalRequest::new(json!(1), qs).with_assets(Assets::from([("p".to_string(), png())])),
        )
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "classifier: style \"static\" cannot use image asset \"p\""
    );
    assert_eq!(e.kind(), ErrorKind::Unsupported);
}

#[tokio::test]
async fn styles_that_cannot_honour_a_part_refuse_it_by_name() {
    let custom = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        model: "rule".into(),
        evaluate: Some(Arc::new(|_ctx, _state, _qs| {
            Box::pin(async { Err("never called".to_string()) })
        })),
        ..Default::default()
    })
    .unwrap();
    let qs = Questions::from([(
        "q".to_string(),
        NoulQuestion {
            instructions: "Is it spam?".into(),
            criteria: None,
        }
        .into(),
    )]);
    let cases = [
        (
            EvalRequest::new(json!(1), qs.clone()).with_model("jev-latest"),
            "classifier: style \"custom\" cannot use model \"jev-latest\" (it answers with \"rule\")",
        ),
        (
            EvalRequest::new(json!(1), qs.clone())
                .with_extra(Map::from_iter([("seed".to_string(), json!(1))])),
            "classifier: style \"custom\" cannot use extra field \"seed\"",
        ),
        (
            EvalRequest::new(json!(1), qs.clone())
                .with_assets(Assets::from([("img-9".to_string(), png())])),
            "classifier: style \"custom\" cannot use image asset \"img-9\"",
        ),
    ];
    for (req, want) in cases {
        let e = custom
            .evaluate_request(EvalContext::new(), req)
            .await
            .unwrap_err();
        assert_eq!(e.to_string(), want);
        assert_eq!(e.kind(), ErrorKind::Unsupported);
    }
    // Its own model name is no override.
    let e = custom
        .evaluate_request(
            EvalContext::new(),
            EvalRequest::new(json!(1), qs).with_model("rule"),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Custom);

    // The Llm style refuses a box question before anything is sent.
    let server = Server::start(vec![Reply::json(500, "unused")]).await;
    let client = create_client(ClientOptions {
        base_url: server.base_url(),
        style: Style::OpenAi,
        model: "gpt-test".into(),
        api_key_env: "TOOLNEXUS_IT_UNSET_KEY_VAR".into(),
        ..Default::default()
    })
    .unwrap();
    let llm = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Llm,
        client: Some(client),
        ..Default::default()
    })
    .unwrap();
    let boxed = Questions::from([(
        "dent".to_string(),
        BoxQuestion {
            instructions: "Where?".into(),
        }
        .into(),
    )]);
    let e = llm.evaluate(json!("x"), &boxed).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "classifier: style \"llm\" cannot use box question \"dent\""
    );
    assert_eq!(server.count(), 0);
}

#[test]
fn box_answers_are_checked_against_the_unit_square() {
    let qs = Questions::from([(
        "b".to_string(),
        BoxQuestion {
            instructions: "Where is the dent?".into(),
        }
        .into(),
    )]);
    let cases = [
        (
            r#"{"type":"box","box":{"top":0.1,"bottom":1.2,"left":0,"right":1},"confidence":null}"#,
            "classifier: answer \"b\": box bottom 1.2 is outside [0, 1]",
        ),
        (
            r#"{"type":"box","box":{"top":0.7,"bottom":0.2,"left":0,"right":1},"confidence":null}"#,
            "classifier: answer \"b\": box top 0.7 is below its bottom 0.2",
        ),
        (
            r#"{"type":"box","box":{"top":0,"bottom":1,"left":0,"right":1},"confidence":2}"#,
            "classifier: answer \"b\": confidence 2 is outside [0, 1]",
        ),
        (
            r#"{"type":"box","box":{"top":0,"bottom":1,"left":0},"confidence":0.5}"#,
            "classifier: answer \"b\": box answer has no \"right\" number",
        ),
        (
            r#"{"type":"box","confidence":0.5}"#,
            "classifier: answer \"b\": box answer has no \"box\"",
        ),
    ];
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    for (answer, want) in cases {
        let response = format!(r#"{{"model":"m","answers":{{"b":{answer}}}}}"#);
        let judge = create_classifier(ClassifierOptions {
            style: ClassifierStyle::Custom,
            evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
                let r = response.clone();
                Box::pin(
                    async move { Decision::from_slice(r.as_bytes()).map_err(|e| e.to_string()) },
                )
            })),
            ..Default::default()
        })
        .unwrap();
        let e = rt.block_on(judge.evaluate(json!(1), &qs)).unwrap_err();
        let text = e.to_string();
        let text = text.replace("classifier: custom: ", "");
        assert_eq!(text, want, "{answer}");
    }
}

/// Every answer and response example the official schema documents decodes
/// into the type it describes.
#[test]
fn the_schemas_documented_examples_decode() {
    let examples = [
        (json!({"noul": 0.98, "type": "noul"}), "noul"),
        (
            json!({"type": "choice", "choice": "angry", "confidence": 0.9,
                   "probabilities": {"angry": 0.8, "calm": 0.1, "excited": 0.1}}),
            "choice",
        ),
        (
            json!({"type": "score", "score": 1.7, "confidence": 0.9,
                   "legend": {"0": "Can wait", "1": "Needs attention this week", "2": "Needs attention today"},
                   "probabilities": {"0": 0.1, "1": 0.1, "2": 0.8}}),
            "score",
        ),
        (
            json!({"type": "box", "box": {"bottom": 0.66, "left": 0.19, "right": 0.68, "top": 0.2},
                   "confidence": 0.9}),
            "box",
        ),
    ];
    for (answer, ty) in examples {
        let d = Decision::from_value(&json!({
            "model": "jev-latest",
            "answers": {"k": answer},
            "usage": {"input_tokens": 120, "output_tokens": 12}
        }))
        .unwrap();
        assert_eq!(d.answer("k").unwrap().answer_type(), ty);
        assert_eq!(d.usage.input_tokens, 120);
        assert!(
            d.usage.cost.is_none(),
            "the API reports no cost: unknown, not $0"
        );
    }
    // The request examples read as questions.
    let qs = questions_from_wire(&json!({
        "billing": {"instructions": "Is this message about billing?", "type": "noul"},
        "spam": {"type": "noul", "instructions": {"task": "Identify unsolicited advertising."},
                 "criteria": {"false": "A legitimate conversation", "true": "Unsolicited advertising"}},
        "tone": {"type": "choice", "instructions": "What is the tone of this message?",
                 "criteria": {"angry": "An upset or hostile message", "calm": "A neutral or polite message",
                              "excited": "An enthusiastic or eager message"}},
        "urgency": {"type": "score", "instructions": "How urgent is this message?",
                    "criteria": ["Can wait", "Needs attention this week", "Needs attention today"]},
        "where": {"type": "box", "instructions": "The product"}
    }))
    .unwrap();
    assert_eq!(qs.len(), 5);
    validate_questions(&qs).unwrap();
}
