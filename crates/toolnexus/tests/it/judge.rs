//! `toolnexus::judge` end to end: bands through `ask`, every gate and policy
//! path, builders, and tapes (round trip, misses, atomic saves, bad files,
//! secrets). Hermetic: no test leaves 127.0.0.1 or needs a credential.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use toolnexus::classifier::{
    Classifier, ClassifierOptions, ClassifierStyle, Decision, ErrorKind, EvalContext, Questions,
    create_classifier,
};
use toolnexus::judge::{
    Bands, Escalation, Policy, Rule, Ruling, Tape, TapeEntry, TapeErrorKind, TapeOutcome, Verdict,
    ask, choice, gate, noul, noul_with, questions, score, state,
};

/// A Custom classifier that answers every key from `state["answers"]` (the wire
/// answers object), or fails with `state["fail"]`.
fn echo() -> Classifier {
    create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        model: "echo-1".into(),
        evaluate: Some(Arc::new(|_ctx, state: Value, _qs| {
            Box::pin(async move {
                if let Some(f) = state.get("fail").and_then(Value::as_str) {
                    return Err(f.to_string());
                }
                Decision::from_value(&json!({
                    "model": "echo-1-20260917",
                    "answers": state["answers"],
                    "usage": {"input_tokens": 10, "output_tokens": 2}
                }))
                .map_err(|e| e.to_string())
            })
        })),
        ..Default::default()
    })
    .unwrap()
}

fn triage() -> Questions {
    questions(&[
        choice(
            "desk",
            "Which desk owns this ticket?",
            [
                ("billing", "money moved or is owed"),
                ("shipping", "a parcel is late, lost or damaged"),
                ("technical", "the product misbehaves"),
            ],
        ),
        score(
            "urgency",
            "How urgent?",
            ["low", "normal", "high", "critical"],
        ),
        noul("refund_requested", "Does the customer ask for money back?"),
    ])
    .unwrap()
}

fn noul_a(p: f64) -> Value {
    json!({"type": "noul", "noul": p})
}

fn choice_a(id: &str, confidence: f64, probs: Value) -> Value {
    json!({"type": "choice", "choice": id, "confidence": confidence, "probabilities": probs})
}

fn score_a(s: f64, confidence: f64) -> Value {
    json!({"type": "score", "score": s, "confidence": confidence})
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("toolnexus-it-judge-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn ctx(call: &str) -> EvalContext {
    EvalContext::new().with_call_name(call)
}

// ---------------------------------------------------------------- bands

#[tokio::test]
async fn ask_bands_every_answer_at_and_around_each_cut() {
    let judge = echo();
    let qs = triage();
    let flat = json!({"billing": 0.36, "shipping": 0.32, "technical": 0.32});
    let decisive = json!({"billing": 0.9, "shipping": 0.05, "technical": 0.05});
    // (noul p, verdict) × (choice confidence, probs, sure) × (score confidence, sure)
    let table: Vec<(f64, Verdict, f64, &Value, bool, f64, bool)> = vec![
        (0.0, Verdict::No, 0.0, &decisive, false, 0.0, false),
        (0.2999, Verdict::No, 0.2999, &decisive, false, 0.2999, false),
        (
            0.30,
            Verdict::Uncertain,
            0.30,
            &decisive,
            false,
            0.30,
            false,
        ),
        (
            0.3001,
            Verdict::Uncertain,
            0.3001,
            &decisive,
            false,
            0.3001,
            false,
        ),
        (
            0.6999,
            Verdict::Uncertain,
            0.6999,
            &decisive,
            false,
            0.6999,
            false,
        ),
        (
            0.70,
            Verdict::Uncertain,
            0.70,
            &decisive,
            false,
            0.70,
            false,
        ),
        (0.7001, Verdict::Yes, 0.7001, &decisive, true, 0.7001, true),
        (1.0, Verdict::Yes, 1.0, &decisive, true, 1.0, true),
        (0.95, Verdict::Yes, 0.95, &flat, false, 0.95, true),
    ];
    for (p, verdict, cc, probs, choice_sure, sc, score_sure) in table {
        let s = json!({"answers": {
            "refund_requested": noul_a(p),
            "desk": choice_a("billing", cc, probs.clone()),
            "urgency": score_a(1.0, sc),
        }});
        let asked = ask(&judge, ctx("bands"), s, &qs, Bands::default())
            .await
            .unwrap();
        let row = format!("p={p} choice={cc} {probs} score={sc}");
        assert_eq!(asked.verdict("refund_requested").unwrap(), verdict, "{row}");
        assert_eq!(
            asked.sure_choice("desk").unwrap(),
            choice_sure.then_some("billing"),
            "{row}"
        );
        assert_eq!(
            asked.sure_score("urgency").unwrap(),
            score_sure.then_some(1.0),
            "{row}"
        );
        // The raw answers are kept beside the banded ones.
        assert_eq!(asked.decision.noul("refund_requested").unwrap().noul, p);
        assert_eq!(asked.decision.model, "echo-1-20260917");
    }
}

#[tokio::test]
async fn ask_evaluates_once_and_rejects_bad_bands_before_sending() {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = calls.clone();
    let judge = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        evaluate: Some(Arc::new(move |_ctx, _s, _qs| {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Box::pin(async {
                Decision::from_value(&json!({"model": "m", "answers": {
                    "a": {"type": "noul", "noul": 0.9}, "b": {"type": "noul", "noul": 0.1}}}))
                .map_err(|e| e.to_string())
            })
        })),
        ..Default::default()
    })
    .unwrap();
    let qs = questions(&[noul("a", "A?"), noul("b", "B?")]).unwrap();
    let asked = ask(&judge, ctx("once"), json!(null), &qs, Bands::default())
        .await
        .unwrap();
    assert_eq!(asked.answers.len(), 2);
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);

    let bad = Bands {
        low: 0.9,
        high: 0.1,
    };
    let e = ask(&judge, ctx("once"), json!(null), &qs, bad)
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "classifier: bands need 0 <= low <= high <= 1, got low 0.9, high 0.1"
    );
    assert_eq!(
        calls.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "nothing sent"
    );
}

// ---------------------------------------------------------------- gates and policies

#[derive(Debug, PartialEq)]
enum Want {
    Fired(&'static str, usize),
    Default(&'static str),
    Escalated(Escalation, Option<usize>),
}

fn summarize(r: &Ruling<&'static str>) -> Want {
    match r {
        Ruling::Decided {
            outcome,
            rule: Some(i),
        } => Want::Fired(outcome, *i),
        Ruling::Decided {
            outcome,
            rule: None,
        } => Want::Default(outcome),
        Ruling::NeedsInput(q) => Want::Escalated(q.reason, q.rule),
    }
}

#[tokio::test]
async fn every_gate_and_policy_path() {
    use Escalation::*;
    let judge = echo();
    let qs = triage();
    let sure_billing = choice_a(
        "billing",
        0.9,
        json!({"billing": 0.9, "shipping": 0.05, "technical": 0.05}),
    );
    let unsure_billing = choice_a(
        "billing",
        0.5,
        json!({"billing": 0.5, "shipping": 0.3, "technical": 0.2}),
    );
    let rules = vec![
        Rule::at_least("urgency", 2.5, "page"),
        Rule::below("refund_requested", 0.3, "no refund"),
        Rule::is("desk", "billing", "billing"),
    ];
    // (name, answers, default, skip_uncertain, want)
    let table: Vec<(&str, Value, Option<&'static str>, bool, Want)> = vec![
        (
            "first rule fires",
            json!({"urgency": score_a(3.0, 0.9), "refund_requested": noul_a(0.1), "desk": sure_billing}),
            None,
            false,
            Want::Fired("page", 0),
        ),
        (
            "second rule fires after a pass",
            json!({"urgency": score_a(1.0, 0.9), "refund_requested": noul_a(0.2999), "desk": sure_billing}),
            None,
            false,
            Want::Fired("no refund", 1),
        ),
        (
            "third rule fires on a sure pick",
            json!({"urgency": score_a(1.0, 0.9), "refund_requested": noul_a(0.7001), "desk": sure_billing}),
            None,
            false,
            Want::Fired("billing", 2),
        ),
        (
            "fell through to the default",
            json!({"urgency": score_a(1.0, 0.9), "refund_requested": noul_a(0.9),
                   "desk": choice_a("shipping", 0.9, json!({"billing": 0.05, "shipping": 0.9, "technical": 0.05}))}),
            Some("general queue"),
            false,
            Want::Default("general queue"),
        ),
        (
            "fell through, no default: no rule fired",
            json!({"urgency": score_a(1.0, 0.9), "refund_requested": noul_a(0.9),
                   "desk": choice_a("shipping", 0.9, json!({"billing": 0.05, "shipping": 0.9, "technical": 0.05}))}),
            None,
            false,
            Want::Escalated(NoRuleFired, None),
        ),
        (
            "missing answer escalates",
            json!({"refund_requested": noul_a(0.1), "desk": sure_billing}),
            Some("general queue"),
            false,
            Want::Escalated(Missing, Some(0)),
        ),
        (
            "missing answer escalates even when skipping uncertain",
            json!({"refund_requested": noul_a(0.1), "desk": sure_billing}),
            Some("general queue"),
            true,
            Want::Escalated(Missing, Some(0)),
        ),
        (
            "uncertain score escalates (confidence exactly 0.70)",
            json!({"urgency": score_a(3.0, 0.70), "refund_requested": noul_a(0.1), "desk": sure_billing}),
            Some("general queue"),
            false,
            Want::Escalated(Uncertain, Some(0)),
        ),
        (
            "uncertain noul at exactly 0.30 escalates",
            json!({"urgency": score_a(1.0, 0.9), "refund_requested": noul_a(0.30), "desk": sure_billing}),
            None,
            false,
            Want::Escalated(Uncertain, Some(1)),
        ),
        (
            "uncertain noul skipped, later rule fires",
            json!({"urgency": score_a(1.0, 0.9), "refund_requested": noul_a(0.30), "desk": sure_billing}),
            None,
            true,
            Want::Fired("billing", 2),
        ),
        (
            "uncertain choice escalates",
            json!({"urgency": score_a(1.0, 0.9), "refund_requested": noul_a(0.9), "desk": unsure_billing}),
            Some("general queue"),
            false,
            Want::Escalated(Uncertain, Some(2)),
        ),
        (
            "everything uncertain and skipped: default",
            json!({"urgency": score_a(3.0, 0.5), "refund_requested": noul_a(0.5), "desk": unsure_billing}),
            Some("general queue"),
            true,
            Want::Default("general queue"),
        ),
        (
            "everything uncertain and skipped, no default",
            json!({"urgency": score_a(3.0, 0.5), "refund_requested": noul_a(0.5), "desk": unsure_billing}),
            None,
            true,
            Want::Escalated(NoRuleFired, None),
        ),
    ];
    for (name, answers, default, skip_uncertain, want) in table {
        let policy = Policy {
            rules: rules.clone(),
            default,
            skip_uncertain,
            ..Default::default()
        };
        let (asked, ruling) = policy
            .ask(&judge, ctx("gate"), json!({"answers": answers}), &qs)
            .await
            .unwrap();
        assert_eq!(summarize(&ruling), want, "{name}");
        // The same decision through decide gives the same ruling.
        assert_eq!(policy.decide(&asked.decision), ruling, "{name}");
        // gate() is a policy with no default that never skips.
        if default.is_none() && !skip_uncertain {
            assert_eq!(gate(&asked, &policy.rules), ruling, "{name}");
        }
    }
}

#[tokio::test]
async fn misfit_rules_escalate_naming_the_rule() {
    let judge = echo();
    let qs = triage();
    let answers = json!({"answers": {
        "urgency": score_a(3.0, 0.95),
        "refund_requested": noul_a(0.95),
        "desk": choice_a("billing", 0.9, json!({"billing": 0.9, "shipping": 0.05, "technical": 0.05})),
    }});
    let table: Vec<(Rule<&str>, &str)> = vec![
        (
            Rule::below("desk", 0.5, "x"),
            "needs input: rule 0 (desk below 0.5): rule does not fit the answer: \"below\" does not fit a choice answer",
        ),
        (
            Rule::at_least("desk", 0.5, "x"),
            "needs input: rule 0 (desk at_least 0.5): rule does not fit the answer: \"at_least\" does not fit a choice answer",
        ),
        (
            Rule::is("urgency", "critical", "x"),
            "needs input: rule 0 (urgency is \"critical\"): rule does not fit the answer: \"is\" does not fit a score answer",
        ),
        (
            Rule::is("refund_requested", "true", "x"),
            "needs input: rule 0 (refund_requested is \"true\"): rule does not fit the answer: a noul answer can only be \"yes\" or \"no\", not \"true\"",
        ),
    ];
    let asked = ask(&judge, ctx("misfit"), answers, &qs, Bands::default())
        .await
        .unwrap();
    for (rule, want) in table {
        for skip_uncertain in [false, true] {
            let policy = Policy {
                rules: vec![rule.clone()],
                default: Some("default"),
                skip_uncertain,
                ..Default::default()
            };
            let r = policy.decide(&asked.decision);
            let q = r.needs_input().expect("a misfit escalates");
            assert_eq!(q.reason, Escalation::Misfit);
            assert_eq!(q.to_string(), want);
        }
    }
}

#[test]
fn escalation_requests_name_the_rule_and_key() {
    let d = Decision::from_slice(br#"{"model":"m","answers":{"risk":{"type":"noul","noul":0.5}}}"#)
        .unwrap();
    let policy: Policy<&str> = Policy {
        rules: vec![
            Rule::below("risk", 0.3, "allow"),
            Rule::at_least("risk", 0.7, "block"),
        ],
        ..Default::default()
    };
    let r = policy.decide(&d);
    let q = r.needs_input().unwrap();
    assert_eq!((q.rule, q.key.as_deref()), (Some(0), Some("risk")));
    assert_eq!(q.rule_text.as_deref(), Some("risk below 0.3"));
    assert_eq!(
        q.to_string(),
        "needs input: rule 0 (risk below 0.3): uncertain answer: noul 0.5 is not below 0.3 nor above 0.7"
    );

    let missing = Policy {
        rules: vec![Rule::is("desk", "billing", "finance")],
        ..policy.clone()
    };
    assert_eq!(
        missing.decide(&d).needs_input().unwrap().to_string(),
        "needs input: rule 0 (desk is \"billing\"): missing answer: no answer \"desk\" in this decision"
    );
    let none: Policy<&str> = Policy::default();
    let q = none.decide(&d);
    let q = q.needs_input().unwrap();
    assert_eq!(q.reason.as_str(), "no rule fired");
    assert_eq!(q.to_string(), "needs input: no rule fired");
}

// ---------------------------------------------------------------- builders

#[test]
fn builders_and_duplicate_names() {
    let qs = questions(&[
        noul("a", "A?"),
        noul_with("b", "B?", "yes means this", "no means that"),
        choice("c", "C?", [("x", "the first"), ("y", "the second")]),
        score("d", "D?", ["low", "high"]),
    ])
    .unwrap();
    assert_eq!(
        qs.iter()
            .map(|(k, q)| (k.as_str(), q.kind()))
            .collect::<Vec<_>>(),
        [
            ("a", "noul"),
            ("b", "noul"),
            ("c", "choice"),
            ("d", "score")
        ]
    );
    assert_eq!(
        qs["b"].wire()["criteria"],
        json!({"true": "yes means this", "false": "no means that"})
    );

    let e = questions(&[noul("x", "1"), choice("x", "2", [("a", "b")])]).unwrap_err();
    assert_eq!(e.to_string(), "classifier: duplicate question name \"x\"");
    assert_eq!(e.kind(), ErrorKind::InvalidQuestion);

    assert_eq!(
        state("customer", "hello"),
        json!({"role": "customer", "data": "hello"})
    );
}

// ---------------------------------------------------------------- tapes

fn sample_states() -> Vec<(&'static str, Value)> {
    vec![
        (
            "triage",
            json!({"answers": {
                "urgency": score_a(2.0, 0.8),
                "refund_requested": noul_a(0.96),
                "desk": choice_a("billing", 0.91, json!({"billing": 0.91, "shipping": 0.03, "technical": 0.06})),
            }}),
        ),
        (
            "triage",
            json!({"answers": {
                "urgency": score_a(0.4, 0.6),
                "refund_requested": noul_a(0.02),
                "desk": choice_a("shipping", 0.5, json!({"billing": 0.2, "shipping": 0.5, "technical": 0.3})),
            }}),
        ),
        (
            "second-opinion",
            json!({"answers": {
                "urgency": score_a(3.0, 0.99),
                "refund_requested": noul_a(0.5),
                "desk": choice_a("technical", 0.99, json!({"billing": 0.005, "shipping": 0.005, "technical": 0.99})),
            }}),
        ),
        (
            "second-opinion",
            json!({"fail": "rate limited by the rule engine"}),
        ),
    ]
}

#[tokio::test]
async fn record_save_load_replay_round_trip() {
    let dir = temp_dir("round-trip");
    let path = dir.join("triage.tape.json");
    let qs = triage();
    let tape = Tape::new().with_note("round trip");
    let recorder = tape.recorder(echo());
    assert_eq!(recorder.style(), ClassifierStyle::Custom);
    assert_eq!(recorder.model(), "echo-1");

    let mut live = Vec::new();
    for (call, s) in sample_states() {
        let r = recorder.evaluate_ctx(ctx(call), s.clone(), &qs).await;
        live.push((call, s, r));
    }
    assert_eq!(tape.len(), 4);
    assert_eq!(tape.call_names(), ["second-opinion", "triage"]);
    tape.save(&path).unwrap();

    let loaded = Tape::load(&path).unwrap();
    assert_eq!(loaded.note(), "round trip");
    // States are stored in canonical form (3.0 is written 3), so compare the
    // file form; decisions compare equal as values.
    assert_eq!(loaded.to_json(), tape.to_json());
    let outcomes = |t: &Tape| {
        t.entries()
            .into_iter()
            .map(|e| e.outcome)
            .collect::<Vec<_>>()
    };
    assert_eq!(outcomes(&loaded), outcomes(&tape));
    assert_eq!(loaded.to_json(), std::fs::read_to_string(&path).unwrap());

    let replayer = loaded.replayer();
    assert_eq!(replayer.model(), "echo-1");
    for (call, s, want) in live {
        let got = replayer.evaluate_ctx(ctx(call), s, &qs).await;
        match (want, got) {
            (Ok(w), Ok(g)) => assert_eq!(g, w, "{call}"),
            (Err(w), Err(g)) => {
                assert_eq!(g.to_string(), w.to_string(), "{call}");
                assert_eq!(
                    g.to_string(),
                    "classifier: custom: rate limited by the rule engine"
                );
                assert_eq!(g.kind(), w.kind());
            }
            (w, g) => panic!("{call}: live {w:?}, replay {g:?}"),
        }
    }

    // Replay through the judge: same rulings as live.
    let (call, s) = &sample_states()[0];
    let policy = Policy {
        rules: vec![Rule::is("refund_requested", "yes", "refunds")],
        ..Default::default()
    };
    let (_, ruling) = policy
        .ask(&replayer, ctx(call), s.clone(), &qs)
        .await
        .unwrap();
    assert_eq!(ruling.outcome(), Some(&"refunds"));

    // And through evaluate_batch, in order.
    let states: Vec<Value> = sample_states()[..2]
        .iter()
        .map(|(_, s)| s.clone())
        .collect();
    let ds = replayer
        .evaluate_batch_ctx(ctx("triage"), states, &qs)
        .await
        .unwrap();
    assert_eq!(ds[0].choice("desk").unwrap().choice, "billing");
    assert_eq!(ds[1].choice("desk").unwrap().choice, "shipping");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_replay_miss_fails_at_evaluate_time_with_the_exact_message() {
    let qs = triage();
    let tape = Tape::new();
    let (call, s) = sample_states().remove(0);
    tape.recorder(echo())
        .evaluate_ctx(ctx(call), s.clone(), &qs)
        .await
        .unwrap();
    let replayer = tape.replayer();
    let other_qs = questions(&[noul("refund_requested", "Is a refund asked for?")]).unwrap();
    let table: Vec<(EvalContext, Value, &Questions, &str)> = vec![
        (
            ctx("unknown"),
            s.clone(),
            &qs,
            "tape: no recorded decision for call \"unknown\"",
        ),
        (
            ctx("triage"),
            json!("another state"),
            &qs,
            "tape: no recorded decision for call \"triage\"",
        ),
        (
            ctx("triage"),
            s.clone(),
            &other_qs,
            "tape: no recorded decision for call \"triage\"",
        ),
        (
            EvalContext::new(),
            s.clone(),
            &qs,
            "tape: no recorded decision for call \"\"",
        ),
    ];
    for (c, state, questions, want) in table {
        let e = replayer
            .evaluate_ctx(c, state, questions)
            .await
            .unwrap_err();
        // The message starts as it always has, then says why (see tape_match.rs).
        assert!(e.to_string().starts_with(&format!("{want}: ")), "{e}");
        assert_eq!(e.kind(), ErrorKind::TapeMiss);
        assert!(e.is_miss() && !e.is_retryable());
    }
    // The hit still works, and a key order change in the state does not matter.
    let reordered: Value = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert!(
        replayer
            .evaluate_ctx(ctx("triage"), reordered, &qs)
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn recorded_http_failures_replay_with_kind_and_status() {
    let qs = triage();
    let tape = Tape::new();
    let message = "classifier: POST https://api.typesafe.ai/v1/systemone: HTTP 503: overloaded";
    tape.record(TapeEntry {
        call_name: "triage".into(),
        model: "jev-latest".into(),
        state: json!("t"),
        questions: qs.clone(),
        outcome: TapeOutcome::Failure {
            kind: ErrorKind::Http,
            message: message.into(),
            status: Some(503),
        },
        request_id: None,
    });
    let dir = temp_dir("http-failure");
    let path = dir.join("t.json");
    tape.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"kind\": \"http\""), "{text}");
    assert!(text.contains("\"status\": 503"), "{text}");
    let e = Tape::load(&path)
        .unwrap()
        .replayer()
        .evaluate_ctx(ctx("triage"), json!("t"), &qs)
        .await
        .unwrap_err();
    assert_eq!(e.to_string(), message);
    assert_eq!((e.kind(), e.status()), (ErrorKind::Http, Some(503)));
    assert!(e.is_retryable());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_cancelled_call_is_not_recorded() {
    let never = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        evaluate: Some(Arc::new(|_ctx, _s, _qs| {
            Box::pin(futures::future::pending())
        })),
        ..Default::default()
    })
    .unwrap();
    let tape = Tape::new();
    let c = ctx("triage");
    c.cancel.cancel();
    let e = tape
        .recorder(never)
        .evaluate_ctx(c, json!("t"), &triage())
        .await
        .unwrap_err();
    assert!(e.is_cancelled(), "{e}");
    assert!(tape.is_empty());
}

#[test]
fn saves_replace_the_file_whole_and_leave_no_temp_files() {
    let dir = temp_dir("atomic");
    let path = dir.join("t.tape.json");
    Tape::new().with_note("first").save(&path).unwrap();
    let first = std::fs::read(&path).unwrap();

    // What a crash between writing and renaming leaves behind: a stray,
    // half-written temporary file beside the tape. The tape itself is whole.
    let stray = dir.join(".t.tape.json.99999.0.tmp");
    std::fs::write(&stray, &first[..first.len() / 2]).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), first);
    assert_eq!(Tape::load(&path).unwrap().note(), "first");

    Tape::new().with_note("second").save(&path).unwrap();
    assert_eq!(Tape::load(&path).unwrap().note(), "second");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [".t.tape.json.99999.0.tmp", "t.tape.json"],
        "only the stray is left over"
    );

    // A save into a directory that does not exist fails naming the file, and
    // leaves nothing behind.
    let nowhere = dir.join("missing").join("t.json");
    let e = Tape::new().save(&nowhere).unwrap_err();
    assert_eq!(e.kind(), TapeErrorKind::Io);
    assert!(
        e.to_string()
            .starts_with(&format!("tape: {}: cannot write", nowhere.display())),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn bad_files_are_rejected_naming_the_file() {
    let dir = temp_dir("bad-files");
    let entry = |extra: &str| {
        format!(
            r#"{{"version": 1, "calls": {{"triage": [{{"model": "m", "state": 1,
                "questions": {{"q": {{"type": "noul", "instructions": "?"}}}}{extra}}}]}}}}"#
        )
    };
    let table: Vec<(&str, String, TapeErrorKind, &str)> = vec![
        ("truncated.json", "{\n  \"version\": 1,\n  \"calls\": {\n".into(), TapeErrorKind::Syntax, "invalid JSON at line 4, column 0: EOF while parsing an object"),
        ("garbage.json", "{\n  \"version\": 1,\n  \"calls\": nope\n}".into(), TapeErrorKind::Syntax, "invalid JSON at line 3, column 13: expected ident"),
        ("empty.json", String::new(), TapeErrorKind::Syntax, "invalid JSON at line 1, column 0: EOF while parsing a value"),
        ("future.json", r#"{"version": 2, "calls": {}}"#.into(), TapeErrorKind::Version, "version 2 is newer than this library reads (up to 1); upgrade toolnexus to replay it"),
        ("no-version.json", r#"{"calls": {}}"#.into(), TapeErrorKind::Version, "no \"version\" field: not a toolnexus tape"),
        ("zero-version.json", r#"{"version": 0, "calls": {}}"#.into(), TapeErrorKind::Version, "unsupported version 0 (this library reads 1)"),
        ("string-version.json", r#"{"version": "1", "calls": {}}"#.into(), TapeErrorKind::Version, "unsupported version \"1\" (this library reads 1)"),
        ("array.json", "[]".into(), TapeErrorKind::Shape, "a tape is a JSON object"),
        ("other-format.json", r#"{"version": 1, "format": "har", "calls": {}}"#.into(), TapeErrorKind::Shape, "\"format\" is \"har\", want \"toolnexus.tape\""),
        ("no-calls.json", r#"{"version": 1}"#.into(), TapeErrorKind::Shape, "no \"calls\" field"),
        ("calls-array.json", r#"{"version": 1, "calls": []}"#.into(), TapeErrorKind::Shape, "\"calls\" is not an object of call name to entries"),
        ("entries-object.json", r#"{"version": 1, "calls": {"triage": {}}}"#.into(), TapeErrorKind::Shape, "call \"triage\": entries are not an array"),
        ("neither.json", entry(""), TapeErrorKind::Shape, "call \"triage\" entry 0: has neither \"decision\" nor \"error\""),
        ("bad-decision.json", entry(r#", "decision": {"model": "m", "answers": {"q": {"type": "noul"}}}"#), TapeErrorKind::Shape, "call \"triage\" entry 0: decision: answer \"q\": noul answer has no \"noul\" number"),
        ("bad-kind.json", entry(r#", "error": {"kind": "gremlins", "message": "x"}"#), TapeErrorKind::Shape, "call \"triage\" entry 0: error has unknown kind \"gremlins\""),
        ("bad-question.json", r#"{"version": 1, "calls": {"c": [{"model": "m", "state": 1, "questions": {"q": {"type": "poll"}}, "error": {"kind": "http", "message": "x"}}]}}"#.into(), TapeErrorKind::Shape, "call \"c\" entry 0: question \"q\": question has unknown type \"poll\" (want noul|choice|score|box)"),
    ];
    for (name, text, kind, want) in table {
        let path = write(&dir, name, &text);
        let e = Tape::load(&path).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("tape: {}: {want}", path.display()),
            "{name}"
        );
        assert_eq!(e.kind(), kind, "{name}");
        assert_eq!(e.path(), Some(path.as_path()), "{name}");
        if kind == TapeErrorKind::Syntax {
            assert!(e.line().is_some() && e.column().is_some(), "{name}");
            assert!(e.is_corrupt());
        }
    }
    let missing = dir.join("absent.json");
    let e = Tape::load(&missing).unwrap_err();
    assert_eq!(e.kind(), TapeErrorKind::Io);
    assert!(
        e.to_string()
            .starts_with(&format!("tape: {}: cannot read: ", missing.display())),
        "{e}"
    );

    // Unknown extra fields are ignored.
    let path = write(
        &dir,
        "extras.json",
        &entry(r#", "recorded_at": "2026-09-17", "error": {"kind": "timeout", "message": "classifier: request timeout after 10000ms", "retry": 3}"#)
            .replace(r#"{"version": 1,"#, r#"{"version": 1, "tool": "x","#),
    );
    assert_eq!(Tape::load(&path).unwrap().len(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn no_secret_ever_reaches_a_tape() {
    const VAR: &str = "TOOLNEXUS_IT_JUDGE_TAPE_SENTINEL_KEY";
    const SENTINEL: &str = "sk-sentinel-5b1e0c77-never-in-a-tape";
    crate::support::suite_env(VAR, SENTINEL);

    // A port with nothing listening: bind, note it, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let live = create_classifier(ClassifierOptions {
        style: ClassifierStyle::SystemOne,
        base_url: format!("http://127.0.0.1:{port}/v1"),
        api_key_env: VAR.into(),
        headers: [("X-Team-Token".to_string(), format!("${{{VAR}}}"))].into(),
        retries: -1,
        timeout_ms: 5_000,
        ..Default::default()
    })
    .unwrap();
    let tape = Tape::new();
    let qs = triage();
    let e = tape
        .recorder(live)
        .evaluate_ctx(ctx("triage"), state("customer", "refund please"), &qs)
        .await
        .unwrap_err();
    assert!(!e.to_string().contains(SENTINEL), "{e}");

    let entries = tape.entries();
    assert_eq!(entries.len(), 1);
    let TapeOutcome::Failure { kind, message, .. } = &entries[0].outcome else {
        panic!("expected a recorded failure, got {:?}", entries[0].outcome);
    };
    assert_eq!(*kind, e.kind());
    assert_eq!(message, &e.to_string());

    let dir = temp_dir("secrets");
    let path = dir.join("failure.tape.json");
    tape.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains(SENTINEL),
        "the key leaked into the tape:\n{text}"
    );
    assert!(!text.contains("sk-sentinel"), "{text}");
    assert!(
        text.contains(&format!("127.0.0.1:{port}")),
        "the failure names the endpoint:\n{text}"
    );

    // The failure replays as recorded.
    let replayed = Tape::load(&path)
        .unwrap()
        .replayer()
        .evaluate_ctx(ctx("triage"), state("customer", "refund please"), &qs)
        .await
        .unwrap_err();
    assert_eq!(replayed.to_string(), e.to_string());
    assert_eq!(replayed.kind(), e.kind());
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------- the demo tape

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/tapes/demo.tape.json");

#[tokio::test]
async fn the_demo_tape_loads_replays_and_is_in_canonical_form() {
    let tape = Tape::load(DEMO).unwrap();
    assert_eq!(tape.call_names(), ["reply_review", "triage"]);
    assert_eq!(tape.len(), 8);
    // The checked-in bytes are exactly what a save would write.
    assert_eq!(tape.to_json(), std::fs::read_to_string(DEMO).unwrap());

    let replayer = tape.replayer();
    assert_eq!(replayer.model(), "jev-1.13");
    for e in tape.entries() {
        let TapeOutcome::Decision(want) = &e.outcome else {
            panic!("the demo tape records no failures");
        };
        let got = replayer
            .evaluate_ctx(ctx(&e.call_name), e.state.clone(), &e.questions)
            .await
            .unwrap();
        assert_eq!(&got, want);
        assert!(got.calibrated);
        assert!(got.usage.cost.is_some());
    }
    let triage_entry = tape
        .entries()
        .into_iter()
        .find(|e| e.call_name == "triage")
        .unwrap();
    let mut keys: Vec<_> = triage_entry.questions.keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["desk", "refund_requested", "urgency"]);
}
