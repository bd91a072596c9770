//! `fallback` and `shadow` over real System One backends on 127.0.0.1:0.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use toolnexus::classifier::*;
use toolnexus::compose::*;
use toolnexus::judge::{choice, noul, questions, score};

use crate::support::{Reply, Server, closed_base_url};

fn spam() -> Questions {
    questions(&[noul("spam", "Is this unsolicited bulk mail?")]).unwrap()
}

/// A System One decision answering `spam` with `p`, from `model`.
fn answer(model: &str, p: f64) -> Reply {
    Reply::value(
        200,
        json!({"model": model, "answers": {"spam": {"type": "noul", "noul": p}}}),
    )
}

fn overloaded(status: u16) -> Reply {
    Reply::value(status, json!({"detail": {"message": "overloaded"}}))
}

/// The options of a System One backend at `base_url` that makes one attempt.
fn opts(base_url: String, model: &str) -> ClassifierOptions {
    ClassifierOptions {
        base_url,
        model: model.into(),
        api_key_env: "TOOLNEXUS_IT_COMPOSE_UNSET".into(),
        retries: -1,
        timeout_ms: 10_000,
        ..Default::default()
    }
}

fn backend(base_url: String, model: &str) -> Classifier {
    create_classifier(opts(base_url, model)).unwrap()
}

/// One call through `fallback(primary, [backup])`, the primary built from
/// `primary` and answering with `reply`, the backup answering as
/// `backup-answered`. Returns the result and how many requests each server read.
async fn through_with(
    reply: Reply,
    primary: impl FnOnce(ClassifierOptions) -> ClassifierOptions,
) -> (Result<Decision, ClassifierError>, usize, usize) {
    let first = Server::start([reply]).await;
    let second = Server::start([answer("backup-answered", 0.25)]).await;
    let judge = fallback(
        create_classifier(primary(opts(first.base_url(), "primary"))).unwrap(),
        [backend(second.base_url(), "backup")],
    );
    let result = judge.evaluate(json!("hello"), &spam()).await;
    (result, first.count(), second.count())
}

async fn through(reply: Reply) -> (Result<Decision, ClassifierError>, usize, usize) {
    through_with(reply, |o| o).await
}

/// Asserts the backup answered after exactly `primary_attempts` to the primary.
fn assert_fell_through(
    (result, primary, backup): (Result<Decision, ClassifierError>, usize, usize),
    primary_attempts: usize,
    what: &str,
) {
    let d = result.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(d.model, "backup-answered", "{what}: the backup answered");
    assert_eq!(d.noul("spam").unwrap().noul, 0.25, "{what}");
    assert_eq!(primary, primary_attempts, "{what}: attempts at the primary");
    assert_eq!(backup, 1, "{what}: the backup was asked once");
}

/// Asserts the primary's failure came back and the backup was never asked.
fn assert_stopped(
    (result, primary, backup): (Result<Decision, ClassifierError>, usize, usize),
    what: &str,
) -> ClassifierError {
    let e = result.expect_err(what);
    assert_eq!(primary, 1, "{what}: one attempt at the primary");
    assert_eq!(backup, 0, "{what}: the backup was never asked");
    assert!(
        !e.to_string().contains("fallback"),
        "{what}: the primary's own error, unchanged: {e}"
    );
    e
}

/// Waits (boundedly) until `done` holds.
async fn until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..2_000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("timed out waiting until {what}");
}

// ---------------------------------------------------------------- fallback

#[tokio::test]
async fn a_503_asks_the_next_backend() {
    assert_fell_through(through(overloaded(503)).await, 1, "503");
}

#[tokio::test]
async fn a_529_asks_the_next_backend() {
    assert_fell_through(through(overloaded(529)).await, 1, "529");
}

#[tokio::test]
async fn a_429_asks_the_next_backend_once_the_primary_has_given_up() {
    let outcome = through_with(overloaded(429), |o| ClassifierOptions {
        retries: 1,
        retry_base_ms: 1,
        ..o
    })
    .await;
    assert_fell_through(outcome, 2, "429 after the primary's own retry");
}

#[tokio::test]
async fn other_5xx_statuses_ask_the_next_backend() {
    for status in [500, 502, 504, 599] {
        assert_fell_through(through(overloaded(status)).await, 1, &status.to_string());
    }
}

#[tokio::test]
async fn a_timeout_asks_the_next_backend() {
    let outcome = through_with(Reply::Stall, |o| ClassifierOptions {
        timeout_ms: 100,
        ..o
    })
    .await;
    assert_fell_through(outcome, 1, "timeout");
}

#[tokio::test]
async fn a_reset_connection_asks_the_next_backend() {
    assert_fell_through(through(Reply::Reset).await, 1, "reset");
}

#[tokio::test]
async fn a_refused_connection_asks_the_next_backend() {
    let second = Server::start([answer("backup-answered", 0.25)]).await;
    let judge = fallback(
        backend(closed_base_url(), "primary"),
        [backend(second.base_url(), "backup")],
    );
    let d = judge.evaluate(json!("hello"), &spam()).await.unwrap();
    assert_eq!(d.model, "backup-answered");
    assert_eq!(second.count(), 1);
}

#[tokio::test]
async fn client_errors_do_not_ask_the_next_backend() {
    for status in [400, 401, 403, 404, 408, 422] {
        let what = status.to_string();
        let e = assert_stopped(through(overloaded(status)).await, &what);
        assert_eq!((e.kind(), e.status()), (ErrorKind::Http, Some(status)));
    }
}

#[tokio::test]
async fn a_garbage_body_does_not_ask_the_next_backend() {
    let e = assert_stopped(
        through(Reply::json(200, "<html>gateway</html>")).await,
        "garbage",
    );
    assert_eq!(e.kind(), ErrorKind::Decode, "{e}");
}

#[tokio::test]
async fn an_incoherent_answer_does_not_ask_the_next_backend() {
    let e = assert_stopped(through(answer("primary", 1.5)).await, "noul 1.5");
    assert_eq!(e.kind(), ErrorKind::Incoherent, "{e}");

    let wrong_type = Reply::value(
        200,
        json!({"model": "primary", "answers": {"spam": {"type": "score", "score": 1.0, "confidence": 0.5}}}),
    );
    let e = assert_stopped(through(wrong_type).await, "a score for a noul question");
    assert!(e.is_decode(), "{e}");
}

#[tokio::test]
async fn configured_kinds_and_statuses_ask_the_next_backend() {
    for (reply, what) in [
        (Reply::json(200, "not json"), "decode"),
        (overloaded(404), "404"),
    ] {
        let first = Server::start([reply]).await;
        let second = Server::start([answer("backup-answered", 0.25)]).await;
        let judge = Fallback::new(backend(first.base_url(), "primary"))
            .then(backend(second.base_url(), "backup"))
            .also_on(ErrorKind::Decode)
            .also_on_status(404)
            .build();
        let d = judge.evaluate(json!("hello"), &spam()).await.unwrap();
        assert_eq!(d.model, "backup-answered", "{what}");
        assert_eq!((first.count(), second.count()), (1, 1), "{what}");
    }
}

#[tokio::test]
async fn the_first_answer_wins_and_later_backends_are_not_asked() {
    let first = Server::start([answer("primary-answered", 0.75)]).await;
    let second = Server::start([answer("backup-answered", 0.25)]).await;
    let judge = fallback(
        backend(first.base_url(), "primary"),
        [backend(second.base_url(), "backup")],
    );
    assert_eq!(judge.model(), "primary");
    let d = judge.evaluate(json!("hello"), &spam()).await.unwrap();
    assert_eq!(d.model, "primary-answered");
    assert_eq!(second.count(), 0);
}

#[tokio::test]
async fn every_backend_unavailable_names_each_failure_in_order() {
    let first = Server::start([overloaded(503)]).await;
    let closed = closed_base_url();
    let third = Server::start([overloaded(529).with_header("retry-after", "2")]).await;
    let judge = fallback(
        backend(first.base_url(), "a"),
        [backend(closed.clone(), "b"), backend(third.base_url(), "c")],
    );
    let e = judge.evaluate(json!("hello"), &spam()).await.unwrap_err();
    let text = e.to_string();
    let head = format!(
        "classifier: fallback: all 3 backends unavailable: [1] POST {}/systemone: HTTP 503: overloaded; [2] POST {closed}/systemone: ",
        first.base_url()
    );
    assert!(text.starts_with(&head), "{text}");
    assert!(
        text.ends_with(&format!(
            "; [3] POST {}/systemone: HTTP 529: overloaded",
            third.base_url()
        )),
        "{text}"
    );
    assert_eq!(text.matches("; [").count(), 2, "{text}");
    assert_eq!(
        (e.kind(), e.status(), e.retry_after()),
        (ErrorKind::Http, Some(529), Some(Duration::from_secs(2))),
        "the last backend's kind, status and Retry-After"
    );
    let last = std::error::Error::source(&e)
        .and_then(|s| s.downcast_ref::<ClassifierError>())
        .expect("the last failure is the source");
    assert_eq!(last.status(), Some(529));
    assert_eq!((first.count(), third.count()), (1, 1));
}

#[tokio::test]
async fn a_failure_that_ends_the_chain_comes_back_unchanged() {
    let first = Server::start([overloaded(503)]).await;
    let second = Server::start([overloaded(401)]).await;
    let judge = fallback(
        backend(first.base_url(), "a"),
        [backend(second.base_url(), "b")],
    );
    let e = judge.evaluate(json!("hello"), &spam()).await.unwrap_err();
    assert_eq!((e.kind(), e.status()), (ErrorKind::Http, Some(401)));
    assert!(
        e.to_string().starts_with(&format!(
            "classifier: POST {}/systemone: HTTP 401: ",
            second.base_url()
        )),
        "the second backend's own error: {e}"
    );
    assert_eq!((first.count(), second.count()), (1, 1));
}

#[tokio::test]
async fn cancelling_stops_the_chain() {
    let ctx = EvalContext::new();
    let token = ctx.cancel.clone();
    let first = Server::start_with(move |_, _| {
        token.cancel();
        overloaded(503)
    })
    .await;
    let second = Server::start([answer("backup-answered", 0.25)]).await;
    let judge = fallback(
        backend(first.base_url(), "a"),
        [backend(second.base_url(), "b")],
    );
    let e = judge
        .evaluate_ctx(ctx, json!("hello"), &spam())
        .await
        .unwrap_err();
    assert!(e.is_cancelled(), "{e}");
    assert_eq!(second.count(), 0, "a cancelled call asks nobody else");
}

#[tokio::test]
async fn each_backend_is_sent_the_same_request() {
    let first = Server::start([overloaded(503)]).await;
    let second = Server::start([answer("backup-answered", 0.25)]).await;
    let judge = fallback(
        backend(first.base_url(), "a"),
        [backend(second.base_url(), "b")],
    );
    judge
        .evaluate(json!({"subject": "WIN"}), &spam())
        .await
        .unwrap();
    let (a, b) = (first.requests()[0].json(), second.requests()[0].json());
    assert_eq!(a["state"], json!({"subject": "WIN"}));
    assert_eq!(
        (&a["state"], &a["questions"]),
        (&b["state"], &b["questions"])
    );
    assert_eq!((&a["model"], &b["model"]), (&json!("a"), &json!("b")));
}

// ---------------------------------------------------------------- shadow

/// A shadow options whose every report lands in the returned list.
fn recording(sample: f64) -> (ShadowOptions, Arc<Mutex<Vec<Disagreement>>>) {
    let seen: Arc<Mutex<Vec<Disagreement>>> = Arc::default();
    let sink = seen.clone();
    let options = ShadowOptions::new(sample)
        .with_on_disagreement(move |d| sink.lock().unwrap().push(d.clone()));
    (options, seen)
}

fn temp_file(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!(
        "toolnexus-it-compose-{name}-{}.jsonl",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&p);
    p
}

#[tokio::test]
async fn the_primary_answers_while_the_candidate_is_still_unanswered() {
    let primary = Server::start([answer("primary-answered", 0.25)]).await;
    let candidate = Server::start([Reply::Stall]).await;
    let (options, seen) = recording(1.0);
    let stats = options.stats.clone();
    let judge = shadow(
        backend(primary.base_url(), "p"),
        backend(candidate.base_url(), "c"),
        options,
    );

    let d = judge
        .evaluate(json!("hello"), &spam())
        .await
        .expect("the primary's answer");
    let direct = backend(primary.base_url(), "p")
        .evaluate(json!("hello"), &spam())
        .await
        .unwrap();
    assert_eq!(d, direct, "the decision is the primary's, unaltered");

    // The candidate has the request and has not answered it: the caller already
    // has its decision.
    until("the candidate has the request", || candidate.count() == 1).await;
    assert_eq!(candidate.requests()[0].json()["state"], "hello");
    assert_eq!(
        (stats.mirrored(), stats.compared(), stats.in_flight()),
        (1, 0, 1)
    );
    assert!(seen.lock().unwrap().is_empty(), "nothing reported yet");

    // Closing the candidate's connection ends its call; the failure is reported.
    drop(candidate);
    stats.idle().await;
    assert_eq!((stats.compared(), stats.candidate_failed()), (1, 1));
    let seen = seen.lock().unwrap();
    let failure = seen[0]
        .candidate_error
        .as_ref()
        .expect("a candidate failure");
    assert_eq!(failure.kind, ErrorKind::Transport, "{failure:?}");
}

#[tokio::test]
async fn disagreements_are_reported_key_by_key() {
    let qs = questions(&[
        noul("spam", "Is it spam?"),
        choice(
            "tone",
            "Tone?",
            [("a", "angry"), ("b", "bored"), ("c", "calm")],
        ),
        score("risk", "Risk?", ["low", "mid", "high"]),
        noul("urgent", "Is it urgent?"),
        noul("late", "Is it late?"),
    ])
    .unwrap();
    let tone = |pick: &str| {
        json!({"type": "choice", "choice": pick, "confidence": 0.6,
               "probabilities": {"a": 0.2, "b": 0.2, "c": 0.2, pick: 0.6}})
    };
    let primary = Server::start([Reply::value(
        200,
        json!({"model": "primary-answered", "answers": {
            "spam": {"type": "noul", "noul": 0.25},
            "tone": tone("a"),
            "risk": {"type": "score", "score": 1.0, "confidence": 0.5},
            "urgent": {"type": "noul", "noul": 0.5},
        }}),
    )])
    .await;
    let candidate = Server::start([Reply::value(
        200,
        json!({"model": "candidate-answered", "answers": {
            "spam": {"type": "noul", "noul": 0.75},
            "tone": tone("b"),
            "risk": {"type": "score", "score": 1.5, "confidence": 0.5},
            "late": {"type": "noul", "noul": 0.0},
        }}),
    )
    .delayed(Duration::from_millis(20))])
    .await;
    let (options, seen) = recording(1.0);
    let stats = options.stats.clone();
    let judge = shadow(
        backend(primary.base_url(), "p"),
        backend(candidate.base_url(), "c"),
        options,
    );

    let ctx = EvalContext::new().with_call_name("triage");
    let d = judge.evaluate_ctx(ctx, json!("hello"), &qs).await.unwrap();
    assert_eq!(d.model, "primary-answered");
    assert_eq!(d.noul("spam").unwrap().noul, 0.25);
    stats.idle().await;

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    let r = &seen[0];
    assert_eq!(r.call_name, "triage");
    assert_eq!(r.primary_model, "primary-answered");
    assert_eq!(r.candidate_model.as_deref(), Some("candidate-answered"));
    assert!(r.candidate_error.is_none());
    assert!(!r.agrees());
    let want = BTreeMap::from([
        (
            "spam".to_string(),
            KeyDiff::Noul {
                primary: 0.25,
                candidate: 0.75,
                delta: 0.5,
            },
        ),
        (
            "tone".to_string(),
            KeyDiff::Choice {
                primary: "a".into(),
                candidate: "b".into(),
                mismatch: true,
            },
        ),
        (
            "risk".to_string(),
            KeyDiff::Score {
                primary: 1.0,
                candidate: 1.5,
                delta: 0.5,
            },
        ),
        (
            "urgent".to_string(),
            KeyDiff::Missing {
                missing_from: Side::Candidate,
            },
        ),
        (
            "late".to_string(),
            KeyDiff::Missing {
                missing_from: Side::Primary,
            },
        ),
    ]);
    assert_eq!(r.keys, want);
    assert_eq!(
        (
            stats.mirrored(),
            stats.compared(),
            stats.disagreed(),
            stats.candidate_failed()
        ),
        (1, 1, 1, 0)
    );
}

#[tokio::test]
async fn a_candidate_failure_is_reported_and_never_reaches_the_caller() {
    let primary = Server::start([answer("primary-answered", 0.25)]).await;
    let candidate = Server::start([overloaded(500)]).await;
    let (options, seen) = recording(1.0);
    let stats = options.stats.clone();
    let judge = shadow(
        backend(primary.base_url(), "p"),
        backend(candidate.base_url(), "c"),
        options,
    );
    let d = judge.evaluate(json!("hello"), &spam()).await.unwrap();
    assert_eq!(d.model, "primary-answered");
    stats.idle().await;

    let seen = seen.lock().unwrap();
    let failure = seen[0]
        .candidate_error
        .as_ref()
        .expect("a candidate failure");
    assert_eq!((failure.kind, failure.status), (ErrorKind::Http, Some(500)));
    assert_eq!(
        failure.message,
        format!(
            "classifier: POST {}/systemone: HTTP 500: overloaded",
            candidate.base_url()
        )
    );
    assert!(seen[0].keys.is_empty() && seen[0].candidate_model.is_none());
    assert_eq!(
        (
            stats.compared(),
            stats.candidate_failed(),
            stats.disagreed()
        ),
        (1, 1, 0)
    );
}

#[tokio::test]
async fn a_primary_failure_is_returned_as_is_and_not_mirrored() {
    let primary = Server::start([overloaded(503)]).await;
    let candidate = Server::start([answer("candidate-answered", 0.25)]).await;
    let (options, seen) = recording(1.0);
    let stats = options.stats.clone();
    let judge = shadow(
        backend(primary.base_url(), "p"),
        backend(candidate.base_url(), "c"),
        options,
    );
    let e = judge.evaluate(json!("hello"), &spam()).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "classifier: POST {}/systemone: HTTP 503: overloaded",
            primary.base_url()
        )
    );
    stats.idle().await;
    assert_eq!((candidate.count(), stats.mirrored()), (0, 0));
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn sampling_zero_sends_nothing_to_the_candidate() {
    let primary = Server::start([answer("primary-answered", 0.25)]).await;
    let candidate = Server::start([answer("candidate-answered", 0.25)]).await;
    let (options, seen) = recording(0.0);
    let stats = options.stats.clone();
    let judge = shadow(
        backend(primary.base_url(), "p"),
        backend(candidate.base_url(), "c"),
        options,
    );
    for i in 0..20 {
        judge.evaluate(json!(i), &spam()).await.unwrap();
    }
    stats.idle().await;
    assert_eq!(primary.count(), 20);
    assert_eq!(candidate.count(), 0);
    assert_eq!((stats.mirrored(), stats.dropped()), (0, 0));
    assert!(seen.lock().unwrap().is_empty());
}

/// The states a `sample`/`seed` shadow mirrors over 200 calls, seen by a
/// candidate that records them.
async fn mirrored_states(sample: f64, seed: u64) -> BTreeSet<i64> {
    let asked: Arc<Mutex<BTreeSet<i64>>> = Arc::default();
    let record = asked.clone();
    let candidate = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        evaluate: Some(Arc::new(move |_ctx, state: Value, _qs| {
            record.lock().unwrap().insert(state.as_i64().unwrap());
            Box::pin(async {
                Decision::from_value(
                    &json!({"model": "c", "answers": {"spam": {"type": "noul", "noul": 0.5}}}),
                )
                .map_err(|e| e.to_string())
            })
        })),
        ..Default::default()
    })
    .unwrap();
    let primary = Server::start([answer("primary-answered", 0.5)]).await;
    let options = ShadowOptions::new(sample).with_seed(seed);
    let stats = options.stats.clone();
    let judge = shadow(backend(primary.base_url(), "p"), candidate, options);
    for i in 0..200 {
        judge.evaluate(json!(i), &spam()).await.unwrap();
    }
    stats.idle().await;
    assert_eq!(stats.compared(), stats.mirrored());
    assert_eq!(stats.disagreed(), 0);
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len() as u64, stats.mirrored());
    asked
}

#[tokio::test]
async fn sampling_is_a_share_of_the_calls_reproducible_by_seed() {
    let a = mirrored_states(0.3, 9).await;
    assert!(
        (30..=90).contains(&a.len()),
        "about 30% of 200: {}",
        a.len()
    );
    assert_eq!(
        mirrored_states(0.3, 9).await,
        a,
        "the same seed mirrors the same calls"
    );
    assert_ne!(
        mirrored_states(0.3, 10).await,
        a,
        "another seed, other calls"
    );
    assert_eq!(
        mirrored_states(1.0, 0).await.len(),
        200,
        "1 mirrors every call"
    );
}

#[tokio::test]
async fn a_busy_candidate_drops_calls_instead_of_queueing_them() {
    let primary = Server::start([answer("primary-answered", 0.25)]).await;
    let candidate = Server::start([Reply::Stall]).await;
    let (options, seen) = recording(1.0);
    let options = options.with_max_in_flight(1);
    let stats = options.stats.clone();
    let judge = shadow(
        backend(primary.base_url(), "p"),
        backend(candidate.base_url(), "c"),
        options,
    );
    for i in 0..5 {
        judge.evaluate(json!(i), &spam()).await.unwrap();
    }
    assert_eq!(
        (stats.mirrored(), stats.dropped(), stats.in_flight()),
        (1, 4, 1)
    );
    until("the candidate has the one request", || {
        candidate.count() == 1
    })
    .await;

    drop(candidate);
    stats.idle().await;
    assert_eq!(seen.lock().unwrap().len(), 1);
    assert_eq!((stats.compared(), stats.dropped()), (1, 4));
}

#[tokio::test]
async fn the_candidate_outlives_the_callers_cancellation() {
    let primary = Server::start([answer("primary-answered", 0.25)]).await;
    let candidate =
        Server::start([answer("candidate-answered", 0.25).delayed(Duration::from_millis(50))])
            .await;
    let (options, seen) = recording(1.0);
    let stats = options.stats.clone();
    let judge = shadow(
        backend(primary.base_url(), "p"),
        backend(candidate.base_url(), "c"),
        options,
    );
    let ctx = EvalContext::new();
    let token = ctx.cancel.clone();
    judge
        .evaluate_ctx(ctx, json!("hello"), &spam())
        .await
        .unwrap();
    token.cancel();
    stats.idle().await;
    let seen = seen.lock().unwrap();
    assert!(seen[0].agrees(), "{:?}", seen[0]);
    assert_eq!(
        seen[0].candidate_model.as_deref(),
        Some("candidate-answered")
    );
}

#[tokio::test]
async fn the_jsonl_file_gets_one_line_per_comparison() {
    let path = temp_file("lines");
    let primary = Server::start([answer("primary-answered", 0.25)]).await;
    let candidate = Server::start([
        answer("candidate-answered", 0.25),
        answer("candidate-answered", 0.75),
        overloaded(503),
    ])
    .await;
    let options = ShadowOptions::new(1.0).with_jsonl(&path);
    let stats = options.stats.clone();
    let judge = shadow(
        backend(primary.base_url(), "p"),
        backend(candidate.base_url(), "c"),
        options,
    );
    for i in 0..3 {
        let ctx = EvalContext::new().with_call_name(format!("call-{i}"));
        judge.evaluate_ctx(ctx, json!(i), &spam()).await.unwrap();
        // One at a time, so the candidate's script lines up with the calls.
        stats.idle().await;
    }
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(text.ends_with('\n'), "{text}");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(stats.write_failed(), 0);

    assert_eq!(lines[0]["call_name"], "call-0");
    assert_eq!(lines[0]["agrees"], true);
    assert_eq!(lines[0]["primary_model"], "primary-answered");
    assert_eq!(lines[0]["candidate_model"], "candidate-answered");
    assert_eq!(
        lines[0]["keys"]["spam"],
        json!({"kind": "noul", "primary": 0.25, "candidate": 0.25, "delta": 0.0})
    );
    assert!(lines[0]["candidate_error"].is_null());

    assert_eq!(lines[1]["agrees"], false);
    assert_eq!(lines[1]["keys"]["spam"]["delta"], 0.5);

    assert_eq!(lines[2]["agrees"], false);
    assert!(lines[2]["candidate_model"].is_null());
    assert_eq!(lines[2]["candidate_error"]["kind"], "http");
    assert_eq!(lines[2]["candidate_error"]["status"], 503);
    for line in &lines {
        assert!(
            line["candidate_ms"].is_u64() && line["at_ms"].is_u64(),
            "{line}"
        );
    }
}

#[tokio::test]
async fn an_unwritable_jsonl_file_is_counted_and_never_reaches_the_caller() {
    let dir = std::env::temp_dir().join(format!(
        "toolnexus-it-compose-missing-{}",
        std::process::id()
    ));
    let primary = Server::start([answer("primary-answered", 0.25)]).await;
    let candidate = Server::start([answer("candidate-answered", 0.25)]).await;
    let options = ShadowOptions::new(1.0).with_jsonl(dir.join("no-such-dir").join("x.jsonl"));
    let stats = options.stats.clone();
    let judge = shadow(
        backend(primary.base_url(), "p"),
        backend(candidate.base_url(), "c"),
        options,
    );
    judge.evaluate(json!(1), &spam()).await.unwrap();
    stats.idle().await;
    assert_eq!((stats.compared(), stats.write_failed()), (1, 1));
}
