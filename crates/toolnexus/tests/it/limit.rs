//! The shared limiter against a loopback server that enforces a token bucket
//! (429 with a retry hint when empty): every state ends as its own decision,
//! each answered exactly once, and one caller's 429 pauses the others.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use toolnexus::classifier::*;
use toolnexus::limit::{Limiter, LimiterOptions};

use crate::support::{Reply, Server};

fn spam() -> Questions {
    Questions::from([(
        "spam".to_string(),
        NoulQuestion {
            instructions: "Is it spam?".into(),
            criteria: None,
        }
        .into(),
    )])
}

fn answer(n: u64) -> String {
    format!(
        r#"{{"model":"jev-1.13","answers":{{"spam":{{"type":"noul","noul":{}}}}},"usage":{{"input_tokens":12,"output_tokens":1}}}}"#,
        (n % 100) as f64 / 100.0
    )
}

/// A server that refills `per_sec` tokens a second into a bucket of `burst`
/// and answers 429 (`retry-after-ms`: until the next token) when it is empty.
/// Returns the server and the successes per state `n`.
async fn bucket_server(per_sec: f64, burst: f64) -> (Server, Arc<Mutex<HashMap<u64, usize>>>) {
    let answered = Arc::new(Mutex::new(HashMap::new()));
    let seen = answered.clone();
    let bucket = Mutex::new((burst, Instant::now()));
    let server = Server::start_with(move |_, req| {
        let mut b = bucket.lock().unwrap();
        let now = Instant::now();
        b.0 = (b.0 + now.duration_since(b.1).as_secs_f64() * per_sec).min(burst);
        b.1 = now;
        if b.0 < 1.0 {
            let wait_ms = ((1.0 - b.0) / per_sec * 1000.0).ceil() as u64;
            return Reply::json(429, r#"{"detail": "rate limited"}"#)
                .with_header("retry-after-ms", &wait_ms.to_string());
        }
        b.0 -= 1.0;
        let n = req.json()["state"]["n"].as_u64().unwrap();
        *seen.lock().unwrap().entry(n).or_insert(0) += 1;
        Reply::json(200, answer(n))
    })
    .await;
    (server, answered)
}

fn classifier(server: &Server, limiter: &Limiter) -> Classifier {
    create_classifier(ClassifierOptions {
        base_url: server.base_url(),
        model: "jev-1.13".into(),
        retries: 20,
        retry_base_ms: 10,
        limiter: Some(limiter.clone()),
        ..Default::default()
    })
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_classifiers_on_one_limiter_lose_nothing_and_duplicate_nothing() {
    // The server allows 3,000 a minute; so does the limiter the two share.
    let (server, answered) = bucket_server(50.0, 2.0).await;
    let limiter = Limiter::new(LimiterOptions {
        requests_per_minute: Some(3_000),
        ..Default::default()
    });
    let (a, b) = (classifier(&server, &limiter), classifier(&server, &limiter));
    let qs = spam();
    let results = futures::future::join_all((0..120u64).map(|n| {
        let judge = if n % 2 == 0 { a.clone() } else { b.clone() };
        let qs = qs.clone();
        async move { (n, judge.evaluate(json!({"n": n}), &qs).await) }
    }))
    .await;
    for (n, r) in &results {
        let d = r.as_ref().unwrap_or_else(|e| panic!("state {n}: {e}"));
        assert_eq!(
            d.noul("spam").unwrap().noul,
            (n % 100) as f64 / 100.0,
            "state {n}"
        );
    }
    let answered = answered.lock().unwrap();
    assert_eq!(answered.len(), 120, "every state answered");
    assert!(answered.values().all(|&c| c == 1), "none answered twice");
    let refused = server.count() - 120;
    assert!(
        refused <= 12,
        "{refused} of {} requests refused",
        server.count()
    );
    assert_eq!(limiter.stats().in_flight, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_callers_429_pauses_every_caller_of_the_limiter() {
    let server = Server::start_with(|i, req| {
        if i == 0 {
            return Reply::json(429, r#"{"detail": "slow down"}"#)
                .with_header("retry-after-ms", "400");
        }
        Reply::json(200, answer(req.json()["state"]["n"].as_u64().unwrap()))
    })
    .await;
    let limiter = Limiter::new(LimiterOptions::default());
    let first = create_classifier(ClassifierOptions {
        base_url: server.base_url(),
        model: "jev-1.13".into(),
        retries: -1,
        limiter: Some(limiter.clone()),
        ..Default::default()
    })
    .unwrap();
    let e = first.evaluate(json!({"n": 1}), &spam()).await.unwrap_err();
    assert_eq!(e.status(), Some(429), "{e}");
    assert!(limiter.stats().paused, "the 429 paused the limiter");
    // Another classifier on the same limiter waits out the pause.
    let other = classifier(&server, &limiter);
    let started = Instant::now();
    other.evaluate(json!({"n": 2}), &spam()).await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.count(), 2, "nothing was sent during the pause");
    assert_eq!(limiter.stats().throttled, 1);
}
