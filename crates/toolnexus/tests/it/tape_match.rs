//! Tape matching modes (`TapeMatch`): exact, questions and sequence replay,
//! recording order surviving a save and load, and what a miss says.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use toolnexus::classifier::{
    Classifier, ClassifierOptions, ClassifierStyle, Decision, ErrorKind, EvalContext, Questions,
    create_classifier,
};
use toolnexus::judge::{Tape, TapeEntry, TapeMatch, TapeOutcome, noul, questions};

fn ctx(call: &str) -> EvalContext {
    EvalContext::new().with_call_name(call)
}

fn spam() -> Questions {
    questions(&[noul("spam", "Is this unsolicited bulk mail?")]).unwrap()
}

fn risk(instructions: &str) -> Questions {
    questions(&[noul("risk", instructions)]).unwrap()
}

fn decision(p: f64) -> Decision {
    Decision::from_value(&json!({
        "model": "rule-1",
        "answers": {"spam": {"type": "noul", "noul": p}, "risk": {"type": "noul", "noul": p}},
    }))
    .unwrap()
}

fn record(tape: &Tape, call: &str, qs: &Questions, state: Value, p: f64) {
    tape.record(TapeEntry {
        call_name: call.into(),
        model: "rule-1".into(),
        state,
        questions: qs.clone(),
        outcome: TapeOutcome::Decision(decision(p)),
        request_id: None,
    });
}

/// The spam answer a replayer gives, or the miss message.
async fn ask(r: &Classifier, call: &str, qs: &Questions, state: Value) -> Result<f64, String> {
    match r.evaluate_ctx(ctx(call), state, qs).await {
        Ok(d) => Ok(d.noul("spam").or_else(|_| d.noul("risk")).unwrap().noul),
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::TapeMiss, "{e}");
            assert!(e.is_miss() && !e.is_retryable());
            Err(e.to_string())
        }
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "toolnexus-it-tape-match-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Three customers recorded under "triage", not in key order.
fn customers() -> Tape {
    let tape = Tape::new();
    for (tier, p) in [("gold", 0.9), ("bronze", 0.1), ("platinum", 0.5)] {
        record(
            &tape,
            "triage",
            &spam(),
            json!({"customer": {"tier": tier, "id": 7}, "text": "hello"}),
            p,
        );
    }
    tape
}

#[test]
fn modes_parse_print_and_default_to_exact() {
    assert_eq!(TapeMatch::default(), TapeMatch::Exact);
    for (text, mode) in [
        ("exact", TapeMatch::Exact),
        ("questions", TapeMatch::Questions),
        ("SEQUENCE", TapeMatch::Sequence),
    ] {
        assert_eq!(text.parse::<TapeMatch>().unwrap(), mode);
        assert_eq!(mode.as_str(), text.to_ascii_lowercase());
    }
    let e = "vcr".parse::<TapeMatch>().unwrap_err();
    assert_eq!(
        e.to_string(),
        "tape: unknown match mode \"vcr\" (want exact|questions|sequence)"
    );
    assert_eq!(e.kind(), ErrorKind::Config);
}

#[tokio::test]
async fn exact_matches_questions_and_state_and_a_miss_names_the_nearest() {
    let tape = customers();
    for r in [tape.replayer(), tape.replayer_with(TapeMatch::Exact)] {
        let gold = json!({"text": "hello", "customer": {"id": 7.0, "tier": "gold"}});
        assert_eq!(ask(&r, "triage", &spam(), gold).await, Ok(0.9));
        let silver = json!({"customer": {"tier": "silver", "id": 7}, "text": "hello"});
        assert_eq!(
            ask(&r, "triage", &spam(), silver).await,
            Err("tape: no recorded decision for call \"triage\": the nearest recording (1 of 3) \
                 differs in 1 value, first at state.customer.tier: recorded \"gold\", asked \"silver\""
                .into())
        );
        // Questions differ: the path is under questions.
        let other = json!({"customer": {"tier": "bronze", "id": 7}, "text": "hello"});
        assert_eq!(
            ask(&r, "triage", &risk("Is it risky?"), other).await,
            Err(
                "tape: no recorded decision for call \"triage\": the nearest recording (2 of 3) \
                 differs in 4 values, first at questions.risk: recorded (absent), asked \
                 {\"instructions\":\"Is it risky?\",\"type\":\"noul\"}"
                    .into()
            )
        );
    }
}

#[tokio::test]
async fn questions_matches_any_state_preferring_the_closest() {
    let tape = customers();
    record(
        &tape,
        "triage",
        &risk("Is the customer at risk of leaving?"),
        json!(["a", {"name": "x"}]),
        0.3,
    );
    let r = tape.replayer_with(TapeMatch::Questions);
    // No recorded state is equal: the closest one (one value off) answers.
    let near_bronze = json!({"customer": {"tier": "bronze", "id": 8}, "text": "hello"});
    assert_eq!(ask(&r, "triage", &spam(), near_bronze).await, Ok(0.1));
    // An exact state wins; equally far states go to the earliest recorded.
    let platinum = json!({"customer": {"tier": "platinum", "id": 7}, "text": "hello"});
    assert_eq!(ask(&r, "triage", &spam(), platinum).await, Ok(0.5));
    assert_eq!(ask(&r, "triage", &spam(), json!(null)).await, Ok(0.9));
    // The state does not matter, the questions do.
    assert_eq!(
        ask(
            &r,
            "triage",
            &risk("Is the customer at risk of leaving?"),
            json!(1)
        )
        .await,
        Ok(0.3)
    );
    let miss = ask(
        &r,
        "triage",
        &risk("Is the customer at risk of churning?"),
        json!(1),
    )
    .await;
    assert_eq!(
        miss,
        Err("tape: no recorded decision for call \"triage\": the nearest recording (4 of 4) \
             differs in 1 value, first at questions.risk.instructions: recorded \
             \"Is the customer at risk of leaving?\", asked \"Is the customer at risk of churning?\""
            .into())
    );
    // Another call name never answers.
    let e = ask(&r, "inbox", &spam(), json!(null)).await.unwrap_err();
    assert_eq!(
        e,
        "tape: no recorded decision for call \"inbox\": the tape has no recordings under that call (its calls: \"triage\")"
    );
}

#[tokio::test]
async fn sequence_replays_in_recording_order_whatever_is_asked() {
    let tape = customers();
    record(&tape, "inbox", &spam(), json!("only"), 0.42);
    let r = tape.replayer_with(TapeMatch::Sequence);
    let clone = r.clone();
    // Questions and state are ignored; each call name has its own position,
    // and clones share it.
    assert_eq!(ask(&r, "triage", &risk("?"), json!(1)).await, Ok(0.9));
    assert_eq!(ask(&r, "inbox", &spam(), json!(2)).await, Ok(0.42));
    assert_eq!(ask(&clone, "triage", &spam(), json!(3)).await, Ok(0.1));
    assert_eq!(ask(&r, "triage", &spam(), json!(4)).await, Ok(0.5));
    assert_eq!(
        ask(&r, "triage", &spam(), json!(5)).await,
        Err(
            "tape: no recorded decision for call \"triage\": the sequence ran past its end \
             (this is call 4 under it; the tape has 3 recordings)"
                .into()
        )
    );
    assert_eq!(
        ask(&r, "inbox", &spam(), json!(6)).await,
        Err(
            "tape: no recorded decision for call \"inbox\": the sequence ran past its end \
             (this is call 2 under it; the tape has 1 recording)"
                .into()
        )
    );
    // Past the end stays past the end; a new replayer starts again.
    assert!(ask(&r, "triage", &spam(), json!(7)).await.is_err());
    let again = tape.replayer_with(TapeMatch::Sequence);
    assert_eq!(ask(&again, "triage", &spam(), json!(8)).await, Ok(0.9));
    assert!(
        ask(&again, "unknown", &spam(), json!(9))
            .await
            .unwrap_err()
            .ends_with("(its calls: \"inbox\", \"triage\")")
    );
}

#[tokio::test]
async fn sequence_replays_recorded_failures_in_their_place() {
    let live = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        model: "rule-1".into(),
        evaluate: Some(Arc::new(|_ctx, state: Value, _qs| {
            Box::pin(async move {
                match state.as_f64() {
                    Some(p) => Decision::from_value(&json!({
                        "model": "rule-1",
                        "answers": {"spam": {"type": "noul", "noul": p}},
                    }))
                    .map_err(|e| e.to_string()),
                    None => Err("not a number".to_string()),
                }
            })
        })),
        ..Default::default()
    })
    .unwrap();
    let tape = Tape::new();
    let recorder = tape.recorder(live);
    for s in [json!(0.75), json!("oops"), json!(0.25), json!(0.75)] {
        let _ = recorder.evaluate_ctx(ctx("c"), s, &spam()).await;
    }
    // 0.75 was recorded twice: one entry, in its first place.
    let states: Vec<Value> = tape
        .call_entries("c")
        .into_iter()
        .map(|e| e.state)
        .collect();
    assert_eq!(states, [json!(0.75), json!("oops"), json!(0.25)]);
    let r = tape.replayer_with(TapeMatch::Sequence);
    assert_eq!(ask(&r, "c", &spam(), json!(null)).await, Ok(0.75));
    let e = r
        .evaluate_ctx(ctx("c"), json!(null), &spam())
        .await
        .unwrap_err();
    assert_eq!(e.to_string(), "classifier: custom: not a number");
    assert_eq!(ask(&r, "c", &spam(), json!(null)).await, Ok(0.25));
}

#[tokio::test]
async fn sequence_order_survives_save_and_load() {
    let dir = temp_dir("save-load");
    let path = dir.join("seq.tape.json");
    let tape = customers();
    tape.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.matches("\"ordinal\"").count(), 3, "{text}");

    let loaded = Tape::load(&path).unwrap();
    assert_eq!(loaded.to_json(), text, "a load and save keeps the bytes");
    let r = loaded.replayer_with(TapeMatch::Sequence);
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(ask(&r, "triage", &spam(), json!(null)).await.unwrap());
    }
    assert_eq!(got, [0.9, 0.1, 0.5]);
    // The file still lists entries by canonical questions and state.
    let v: Value = serde_json::from_str(&text).unwrap();
    let tiers: Vec<&str> = v["calls"]["triage"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["state"]["customer"]["tier"].as_str().unwrap())
        .collect();
    assert_eq!(tiers, ["bronze", "gold", "platinum"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_file_without_ordinals_replays_in_file_order() {
    let entry = |n: u64, p: f64| {
        json!({
            "model": "rule-1",
            "questions": {"spam": {"type": "noul", "instructions": "Is this unsolicited bulk mail?"}},
            "state": {"n": n},
            "decision": {"model": "rule-1", "answers": {"spam": {"type": "noul", "noul": p}}},
        })
    };
    let text = json!({
        "version": 1,
        "calls": {"bulk": [entry(2, 0.2), entry(1, 0.1), entry(3, 0.3)]},
    })
    .to_string();
    let tape = Tape::from_json(&text).unwrap();
    let r = tape.replayer_with(TapeMatch::Sequence);
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(ask(&r, "bulk", &spam(), json!(null)).await.unwrap());
    }
    assert_eq!(got, [0.2, 0.1, 0.3]);
    // Saved, the entries are sorted and carry their place.
    let reloaded = Tape::from_json(&tape.to_json()).unwrap();
    let states: Vec<Value> = reloaded
        .call_entries("bulk")
        .into_iter()
        .map(|e| e.state)
        .collect();
    assert_eq!(states, [json!({"n": 2}), json!({"n": 1}), json!({"n": 3})]);
}

#[tokio::test]
async fn a_miss_shows_long_values_cut_short() {
    let tape = Tape::new();
    let long = "a".repeat(200);
    record(
        &tape,
        "c",
        &spam(),
        json!({"note": long, "items": [1, 2, 3]}),
        0.5,
    );
    let asked = json!({"note": "b".repeat(200), "items": [1, 2, 3]});
    let e = ask(&tape.replayer(), "c", &spam(), asked)
        .await
        .unwrap_err();
    let want_was = format!("\"{}…", "a".repeat(59));
    let want_now = format!("\"{}…", "b".repeat(59));
    assert_eq!(
        e,
        format!(
            "tape: no recorded decision for call \"c\": the nearest recording (1 of 1) differs in 1 value, \
             first at state.note: recorded {want_was}, asked {want_now}"
        )
    );
    let e = ask(
        &tape.replayer(),
        "c",
        &spam(),
        json!({"note": "a".repeat(200), "items": [1, 2, {"k": 1}]}),
    )
    .await
    .unwrap_err();
    assert!(
        e.ends_with("first at state.items[2]: recorded 3, asked {\"k\":1}"),
        "{e}"
    );
    let e = ask(&Tape::new().replayer(), "c", &spam(), json!(1))
        .await
        .unwrap_err();
    assert_eq!(
        e,
        "tape: no recorded decision for call \"c\": the tape is empty"
    );
}
