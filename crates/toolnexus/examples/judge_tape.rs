//! Support-desk triage judged offline, from a recorded tape.
//!
//! Replays `examples/tapes/demo.tape.json`: no network, no API key. Two call
//! names are on the tape: `triage` (which desk, how urgent, is a refund asked
//! for) over four customer tickets, and `reply_review` (does a draft reply
//! promise a refund, what is its tone) over four draft answers. A [`Policy`]
//! turns each decision into a routing outcome or a request for a person.
//!
//! ```text
//! cargo run -p toolnexus --example judge_tape
//! cargo run -p toolnexus --example judge_tape -- --record   # rewrite the tape
//! ```
//!
//! `--record` re-records the tape from a scripted stand-in classifier (a
//! Custom closure holding hand-written, Jev-shaped answers), so the demo never
//! needs a key. Point `Tape::recorder` at a real classifier to record your own.

use std::sync::Arc;

use serde_json::{Value, json};
use toolnexus::classifier::{
    ClassifierOptions, ClassifierStyle, Decision, EvalContext, Question, Questions,
    create_classifier,
};
use toolnexus::judge::{Policy, Rule, Ruling, Tape, choice, noul_with, questions, score, state};

const TAPE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/tapes/demo.tape.json");

fn triage_questions() -> Result<Questions, Box<dyn std::error::Error>> {
    Ok(questions(&[
        choice(
            "desk",
            "Which support desk should own this ticket?",
            [
                (
                    "billing",
                    "money moved or is owed: charges, double charges, refunds, invoices, VAT, plans",
                ),
                (
                    "shipping",
                    "a physical parcel: late, lost, marked delivered but not received, damaged, returns",
                ),
                (
                    "technical",
                    "the product misbehaves: errors, crashes, outages, login or checkout failures",
                ),
            ],
        ),
        score(
            "urgency",
            "How soon must someone act on this ticket?",
            [
                "low: a question or request that can wait a few days",
                "normal: a problem for one customer, answer within a day",
                "high: money or a delivery at risk, answer within hours",
                "critical: the customer's business is blocked now, page on-call",
            ],
        ),
        noul_with(
            "refund_requested",
            "Does the customer ask for money back?",
            "a refund, chargeback, credit or reversal of a charge is requested",
            "no money back is asked for, even if the customer is unhappy",
        ),
    ])?)
}

fn review_questions() -> Result<Questions, Box<dyn std::error::Error>> {
    Ok(questions(&[
        noul_with(
            "promises_refund",
            "Does this draft reply promise or confirm a refund?",
            "the reply says money will be, or has been, returned",
            "the reply promises no money back",
        ),
        score(
            "tone",
            "How does this draft reply read to an upset customer?",
            [
                "hostile: blames or dismisses the customer",
                "curt: correct but cold, no acknowledgement",
                "neutral: polite and factual",
                "warm: acknowledges the trouble and says what happens next",
            ],
        ),
    ])?)
}

fn tickets() -> Vec<Value> {
    vec![
        state(
            "customer",
            json!({"ticket": "T-1182", "subject": "Charged twice for order 1182",
                   "body": "My card was charged twice for the same order this morning. Please refund the duplicate."}),
        ),
        state(
            "customer",
            json!({"ticket": "T-1185", "subject": "Parcel marked delivered, nothing here",
                   "body": "Tracking says my parcel was delivered on Monday but it never arrived. What now?"}),
        ),
        state(
            "customer",
            json!({"ticket": "T-1190", "subject": "Checkout broken on launch day",
                   "body": "Every customer gets 'payment failed' at checkout since 9am. Our sale launched today!"}),
        ),
        state(
            "customer",
            json!({"ticket": "T-1191", "subject": "VAT number on invoices",
                   "body": "Can our VAT number appear on invoices? The current PDF format is missing it."}),
        ),
    ]
}

fn drafts() -> Vec<Value> {
    vec![
        state(
            "agent_draft",
            json!({"ticket": "T-1182", "reply": "Sorry about the double charge. I've refunded the duplicate payment; you'll see it in 3-5 days."}),
        ),
        state(
            "agent_draft",
            json!({"ticket": "T-1185", "reply": "Our records show the parcel was delivered. Please check with your neighbours."}),
        ),
        state(
            "agent_draft",
            json!({"ticket": "T-1190", "reply": "We're on it: engineers are rolling back the checkout release now. Next update within the hour."}),
        ),
        state(
            "agent_draft",
            json!({"ticket": "T-1191", "reply": "Done: your invoices now show your VAT number, and a corrected PDF is attached."}),
        ),
    ]
}

fn triage_policy() -> Policy<&'static str> {
    Policy {
        rules: vec![
            Rule::at_least("urgency", 2.5, "page on-call"),
            Rule::is("refund_requested", "yes", "refunds desk"),
            Rule::is("desk", "billing", "billing desk"),
            Rule::is("desk", "shipping", "shipping desk"),
            Rule::is("desk", "technical", "technical desk"),
        ],
        // No default: a ticket no rule routes goes to a person.
        default: None,
        // An unsure urgency or desk skips its rule; later rules may still route.
        skip_uncertain: true,
        ..Default::default()
    }
}

fn review_policy() -> Policy<&'static str> {
    Policy {
        rules: vec![
            Rule::is("promises_refund", "yes", "hold for approval"),
            Rule::below("tone", 1.5, "rewrite"),
        ],
        default: Some("send"),
        // An unsure reading stops the draft and asks a person.
        skip_uncertain: false,
        ..Default::default()
    }
}

fn show(ruling: &Ruling<&str>) -> String {
    match ruling {
        Ruling::Decided {
            outcome,
            rule: Some(i),
        } => format!("{outcome} (rule {i})"),
        Ruling::Decided {
            outcome,
            rule: None,
        } => format!("{outcome} (default)"),
        Ruling::NeedsInput(request) => request.to_string(),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().any(|a| a == "--record") {
        return record().await;
    }
    let tape = Tape::load(TAPE)?;
    println!(
        "running offline on the recorded tape examples/tapes/demo.tape.json (no network, no API key)"
    );
    println!(
        "tape: {} recorded calls under {:?}; note: {}",
        tape.len(),
        tape.call_names(),
        tape.note()
    );
    let judge = tape.replayer();
    let (mut decided, mut escalated) = (0, 0);

    let (qs, policy) = (triage_questions()?, triage_policy());
    for t in tickets() {
        let ctx = EvalContext::new().with_call_name("triage");
        let (asked, ruling) = policy.ask(&judge, ctx, t.clone(), &qs).await?;
        let urgency = asked.decision.score("urgency")?;
        println!(
            "triage {}: desk={} urgency={:.2} (confidence {:.2}) refund={} -> {}",
            t["data"]["ticket"].as_str().unwrap_or("?"),
            asked.decision.choice("desk")?.choice,
            urgency.score,
            urgency.confidence,
            asked.verdict("refund_requested")?,
            show(&ruling)
        );
        if ruling.is_decided() {
            decided += 1
        } else {
            escalated += 1
        }
    }

    let (qs, policy) = (review_questions()?, review_policy());
    for d in drafts() {
        let ctx = EvalContext::new().with_call_name("reply_review");
        let (asked, ruling) = policy.ask(&judge, ctx, d.clone(), &qs).await?;
        println!(
            "reply_review {}: promises_refund={} tone={:.2} -> {}",
            d["data"]["ticket"].as_str().unwrap_or("?"),
            asked.verdict("promises_refund")?,
            asked.decision.score("tone")?.score,
            show(&ruling)
        );
        if ruling.is_decided() {
            decided += 1
        } else {
            escalated += 1
        }
    }

    // A ticket that was never recorded: replay fails loudly instead of guessing.
    let unseen = state(
        "customer",
        json!({"ticket": "T-1200", "subject": "New ticket"}),
    );
    let ctx = EvalContext::new().with_call_name("triage");
    let miss = judge
        .evaluate_ctx(ctx, unseen, &triage_questions()?)
        .await
        .expect_err("T-1200 is not on the tape");
    assert!(miss.is_miss(), "{miss}");
    println!("unrecorded ticket T-1200: {miss}");

    println!(
        "ok: {} decisions replayed offline from the tape: {decided} decided, {escalated} sent to a person",
        decided + escalated
    );
    Ok(())
}

/// Re-records the demo tape from a scripted stand-in classifier.
async fn record() -> Result<(), Box<dyn std::error::Error>> {
    let stand_in = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        model: "jev-1.13".into(),
        evaluate: Some(Arc::new(|ctx: EvalContext, state: Value, qs: Questions| {
            Box::pin(async move {
                let ticket = state["data"]["ticket"].as_str().unwrap_or_default();
                let mut answer = scripted(&ctx.call_name, ticket)
                    .ok_or_else(|| format!("no scripted answer for {} {ticket}", ctx.call_name))?;
                // Like a System One server, echo each score's rubric as its legend.
                for (key, q) in &qs {
                    if let Question::Score(sq) = q {
                        let legend: serde_json::Map<String, Value> = sq
                            .criteria
                            .iter()
                            .enumerate()
                            .map(|(i, level)| (i.to_string(), Value::from(level.as_str())))
                            .collect();
                        answer["answers"][key]["legend"] = Value::Object(legend);
                    }
                }
                Decision::from_value(&answer).map_err(|e| e.to_string())
            })
        })),
        ..Default::default()
    })?;
    let tape = Tape::new().with_note(
        "toolnexus demo: support-desk triage and reply review. Recorded from a scripted \
         stand-in classifier with Jev-shaped answers (illustrative numbers, not a real model's); \
         re-record with `cargo run -p toolnexus --example judge_tape -- --record`.",
    );
    let recorder = tape.recorder(stand_in);
    for (call, qs, states) in [
        ("triage", triage_questions()?, tickets()),
        ("reply_review", review_questions()?, drafts()),
    ] {
        for s in states {
            let ctx = EvalContext::new().with_call_name(call);
            recorder.evaluate_ctx(ctx, s, &qs).await?;
        }
    }
    tape.save(TAPE)?;
    println!("ok: recorded {} calls to {TAPE}", tape.len());
    Ok(())
}

/// Hand-written answers in the System One wire shape, by call name and ticket.
fn scripted(call: &str, ticket: &str) -> Option<Value> {
    let usage = |i: i64, o: i64| json!({"input_tokens": i, "output_tokens": o, "cost": (i + 4 * o) as f64 * 1e-7});
    let answers = match (call, ticket) {
        ("triage", "T-1182") => json!({
            "desk": {"type": "choice", "choice": "billing", "confidence": 0.91,
                     "probabilities": {"billing": 0.91, "shipping": 0.03, "technical": 0.06}},
            "urgency": {"type": "score", "score": 1.75, "confidence": 0.74,
                        "probabilities": {"0": 0.05, "1": 0.18, "2": 0.74, "3": 0.03}},
            "refund_requested": {"type": "noul", "noul": 0.96}
        }),
        ("triage", "T-1185") => json!({
            "desk": {"type": "choice", "choice": "shipping", "confidence": 0.86,
                     "probabilities": {"billing": 0.08, "shipping": 0.86, "technical": 0.06}},
            "urgency": {"type": "score", "score": 1.34, "confidence": 0.62,
                        "probabilities": {"0": 0.04, "1": 0.62, "2": 0.30, "3": 0.04}},
            "refund_requested": {"type": "noul", "noul": 0.22}
        }),
        ("triage", "T-1190") => json!({
            "desk": {"type": "choice", "choice": "technical", "confidence": 0.58,
                     "probabilities": {"billing": 0.35, "shipping": 0.07, "technical": 0.58}},
            "urgency": {"type": "score", "score": 2.74, "confidence": 0.80,
                        "probabilities": {"0": 0.01, "1": 0.04, "2": 0.15, "3": 0.80}},
            "refund_requested": {"type": "noul", "noul": 0.04}
        }),
        ("triage", "T-1191") => json!({
            "desk": {"type": "choice", "choice": "billing", "confidence": 0.41,
                     "probabilities": {"billing": 0.41, "shipping": 0.26, "technical": 0.33}},
            "urgency": {"type": "score", "score": 0.34, "confidence": 0.71,
                        "probabilities": {"0": 0.71, "1": 0.25, "2": 0.03, "3": 0.01}},
            "refund_requested": {"type": "noul", "noul": 0.09}
        }),
        ("reply_review", "T-1182") => json!({
            "promises_refund": {"type": "noul", "noul": 0.97},
            "tone": {"type": "score", "score": 2.64, "confidence": 0.70,
                     "probabilities": {"0": 0.01, "1": 0.04, "2": 0.25, "3": 0.70}}
        }),
        ("reply_review", "T-1185") => json!({
            "promises_refund": {"type": "noul", "noul": 0.03},
            "tone": {"type": "score", "score": 1.11, "confidence": 0.78,
                     "probabilities": {"0": 0.06, "1": 0.78, "2": 0.15, "3": 0.01}}
        }),
        ("reply_review", "T-1190") => json!({
            "promises_refund": {"type": "noul", "noul": 0.05},
            "tone": {"type": "score", "score": 2.37, "confidence": 0.48,
                     "probabilities": {"0": 0.01, "1": 0.06, "2": 0.48, "3": 0.45}}
        }),
        ("reply_review", "T-1191") => json!({
            "promises_refund": {"type": "noul", "noul": 0.02},
            "tone": {"type": "score", "score": 2.72, "confidence": 0.75,
                     "probabilities": {"0": 0.0, "1": 0.03, "2": 0.22, "3": 0.75}}
        }),
        _ => return None,
    };
    let (i, o) = if call == "triage" {
        (412, 38)
    } else {
        (236, 21)
    };
    Some(json!({
        "model": "jev-1.13-20260917",
        "calibrated": true,
        "answers": answers,
        "usage": usage(i, o)
    }))
}
