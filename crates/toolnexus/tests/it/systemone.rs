//! The System One wire against a real HTTP server on 127.0.0.1:0.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use toolnexus::classifier::*;

use crate::support::{Reply, Server, closed_base_url, suite_env};

const OK_BODY: &str = r#"{"model":"typesafe/jev-1.13-20260917","calibrated":true,
  "answers":{"risk":{"type":"score","score":1.21,"legend":{"0":"harmless","1":"reversible","2":"destructive"},
  "probabilities":{"0":0.10,"1":0.59,"2":0.31},"confidence":0.71}},
  "usage":{"input_tokens":210,"output_tokens":24,"cost":0.00042}}"#;

fn ok() -> Reply {
    Reply::json(200, OK_BODY)
}

fn questions() -> Questions {
    Questions::from([(
        "risk".to_string(),
        ScoreQuestion {
            instructions: "How destructive is this shell command?".into(),
            criteria: vec!["harmless".into(), "reversible".into(), "destructive".into()],
        }
        .into(),
    )])
}

fn options(server: &Server) -> ClassifierOptions {
    ClassifierOptions {
        base_url: server.base_url(),
        model: "jev-1.13".into(),
        api_key_env: "TOOLNEXUS_IT_UNSET_KEY_VAR".into(),
        retry_base_ms: 1,
        ..Default::default()
    }
}

async fn run(opts: ClassifierOptions) -> Result<Decision, ClassifierError> {
    create_classifier(opts)
        .unwrap()
        .evaluate(json!("rm -rf ./build"), &questions())
        .await
}

#[tokio::test]
async fn posts_the_exact_canonical_body_and_decodes_the_answer() {
    let server = Server::start(vec![ok()]).await;
    let d = run(options(&server)).await.unwrap();
    assert_eq!(d.model, "typesafe/jev-1.13-20260917");
    assert_eq!(d.score("risk").unwrap().score, 1.21);
    assert_eq!(d.usage.cost, Some(0.00042));

    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/systemone")
    );
    assert_eq!(r.headers["content-type"], "application/json");
    assert!(
        !r.headers.contains_key("authorization"),
        "no key set, no header"
    );
    assert_eq!(
        r.body_str(),
        concat!(
            r#"{"model":"jev-1.13","questions":{"risk":{"criteria":["harmless","reversible","destructive"],"#,
            r#""instructions":"How destructive is this shell command?","type":"score"}},"state":"rm -rf ./build"}"#
        )
    );
}

#[tokio::test]
async fn an_empty_key_sends_no_header_and_a_key_is_sent_as_bearer() {
    suite_env("TOOLNEXUS_IT_BEARER_EMPTY", "");
    suite_env("TOOLNEXUS_IT_BEARER_KEY", "ts-key-123");
    let server = Server::start(vec![ok()]).await;
    for var in ["TOOLNEXUS_IT_BEARER_EMPTY", "TOOLNEXUS_IT_BEARER_KEY"] {
        let judge = create_classifier(ClassifierOptions {
            api_key_env: var.into(),
            ..options(&server)
        })
        .unwrap();
        judge.evaluate(json!(1), &questions()).await.unwrap();
    }
    let reqs = server.requests();
    assert!(
        !reqs[0].headers.contains_key("authorization"),
        "an empty key sends no header"
    );
    assert_eq!(reqs[1].headers["authorization"], "Bearer ts-key-123");
}

#[tokio::test]
async fn headers_expand_env_references_at_call_time() {
    let server = Server::start(vec![ok()]).await;
    suite_env("TOOLNEXUS_IT_HEADER_VALUE", "team-7");
    run(ClassifierOptions {
        headers: [(
            "X-Team".to_string(),
            "id=${TOOLNEXUS_IT_HEADER_VALUE}".to_string(),
        )]
        .into(),
        ..options(&server)
    })
    .await
    .unwrap();
    assert_eq!(server.requests()[0].headers["x-team"], "id=team-7");
}

#[tokio::test]
async fn the_key_and_header_references_are_read_again_at_every_call() {
    let server = Server::start(vec![ok(), ok(), ok()]).await;
    let vars = Arc::new(Mutex::new(vec![("MY_KEY", "ts-first"), ("MY_TEAM", "t-1")]));
    let env = {
        let vars = vars.clone();
        EnvSource::from_fn(move |name| {
            let vars = vars.lock().unwrap();
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    };
    let judge = create_classifier(ClassifierOptions {
        api_key_env: "MY_KEY".into(),
        headers: [("X-Team".to_string(), "${MY_TEAM}".to_string())].into(),
        env,
        ..options(&server)
    })
    .unwrap();
    judge.evaluate(json!(1), &questions()).await.unwrap();
    *vars.lock().unwrap() = vec![("MY_KEY", "ts-rotated"), ("MY_TEAM", "t-2")];
    judge.evaluate(json!(1), &questions()).await.unwrap();
    vars.lock().unwrap().clear();
    judge.evaluate(json!(1), &questions()).await.unwrap();
    let reqs = server.requests();
    assert_eq!(reqs[0].headers["authorization"], "Bearer ts-first");
    assert_eq!(reqs[0].headers["x-team"], "t-1");
    assert_eq!(
        reqs[1].headers["authorization"], "Bearer ts-rotated",
        "a rotated key is used by the next call"
    );
    assert_eq!(reqs[1].headers["x-team"], "t-2");
    assert!(
        !reqs[2].headers.contains_key("authorization"),
        "an unset key sends no header"
    );
    assert_eq!(reqs[2].headers["x-team"], "");
    assert!(!format!("{judge:?}").contains("ts-"), "no key in Debug");
}

#[tokio::test]
async fn request_params_merge_over_the_body_and_body_transform_runs_last() {
    let server = Server::start(vec![ok()]).await;
    let mut params = serde_json::Map::new();
    params.insert("temperature".into(), json!(0));
    params.insert("model".into(), json!("jev-override"));
    run(ClassifierOptions {
        request_params: params.clone(),
        ..options(&server)
    })
    .await
    .unwrap();
    run(ClassifierOptions {
        request_params: params,
        body_transform: Some(Arc::new(|body: Value| {
            json!({"model": body["model"], "input": {"questions": body["questions"], "state": body["state"]}})
        })),
        ..options(&server)
    })
    .await
    .unwrap();
    let reqs = server.requests();
    let first: Value = serde_json::from_slice(&reqs[0].body).unwrap();
    assert_eq!(
        first["model"], "jev-override",
        "a key in request_params wins"
    );
    assert_eq!(first["temperature"], 0);
    assert!(
        reqs[1]
            .body_str()
            .starts_with(r#"{"input":{"questions":{"risk""#)
    );
    assert!(
        reqs[1]
            .body_str()
            .ends_with(r#""state":"rm -rf ./build"},"model":"jev-override"}"#)
    );
}

#[tokio::test]
async fn a_response_without_a_model_names_the_model_asked_for() {
    let server = Server::start(vec![Reply::json(
        200,
        r#"{"answers":{"risk":{"type":"score","score":0,"confidence":1}}}"#,
    )])
    .await;
    assert_eq!(run(options(&server)).await.unwrap().model, "jev-1.13");
}

#[tokio::test]
async fn retryable_statuses_are_retried_and_others_are_not() {
    for status in [408u16, 429, 500, 502, 503, 504, 529] {
        let server = Server::start(vec![Reply::json(status, "{}"), ok()]).await;
        run(options(&server))
            .await
            .unwrap_or_else(|e| panic!("{status}: {e}"));
        assert_eq!(
            server.count(),
            2,
            "HTTP {status} is retried once, then succeeds"
        );
    }
    for status in [400u16, 401, 403, 404, 422] {
        let server = Server::start(vec![Reply::json(status, "{}"), ok()]).await;
        let e = run(options(&server)).await.unwrap_err();
        assert_eq!(e.status(), Some(status));
        assert!(!e.is_retryable());
        assert_eq!(server.count(), 1, "HTTP {status} is not retried");
    }
}

#[tokio::test]
async fn retries_default_to_two_and_minus_one_means_none() {
    let server = Server::start(vec![Reply::json(
        503,
        r#"{"detail":{"message":"overloaded"}}"#,
    )])
    .await;
    let e = run(options(&server)).await.unwrap_err();
    assert_eq!(server.count(), 3, "one attempt and two retries");
    assert_eq!(
        e.to_string(),
        format!(
            "classifier: POST http://{}/v1/systemone: HTTP 503: overloaded",
            server.addr()
        )
    );
    assert!(e.is_retryable() && e.is_http());

    let server = Server::start(vec![Reply::json(503, "{}")]).await;
    run(ClassifierOptions {
        retries: -1,
        ..options(&server)
    })
    .await
    .unwrap_err();
    assert_eq!(server.count(), 1);

    let server = Server::start(vec![Reply::json(503, "{}")]).await;
    run(ClassifierOptions {
        retries: 4,
        ..options(&server)
    })
    .await
    .unwrap_err();
    assert_eq!(server.count(), 5);
}

#[tokio::test]
async fn retryable_statuses_only_add() {
    let server = Server::start(vec![Reply::json(409, "{}"), Reply::json(503, "{}"), ok()]).await;
    run(ClassifierOptions {
        retryable_statuses: vec![409],
        ..options(&server)
    })
    .await
    .unwrap();
    assert_eq!(server.count(), 3, "409 added, 503 still retried");
}

#[tokio::test]
async fn on_error_overrides_the_tier() {
    let server = Server::start(vec![Reply::json(503, "{}")]).await;
    run(ClassifierOptions {
        on_error: Some(Arc::new(|_info| ErrorTier::Fail)),
        ..options(&server)
    })
    .await
    .unwrap_err();
    assert_eq!(server.count(), 1);

    let server = Server::start(vec![Reply::json(400, "{}")]).await;
    let seen: Arc<Mutex<Vec<(u32, bool)>>> = Arc::default();
    let sink = seen.clone();
    run(ClassifierOptions {
        on_error: Some(Arc::new(move |info| {
            sink.lock().unwrap().push((info.attempt, info.retryable));
            ErrorTier::Retry
        })),
        ..options(&server)
    })
    .await
    .unwrap_err();
    assert_eq!(
        server.count(),
        3,
        "on_error may retry a 400, within the retry budget"
    );
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        [(0, false), (1, false), (2, false)]
    );
}

#[tokio::test]
async fn backoff_doubles_and_retry_after_wins() {
    let server = Server::start(vec![
        Reply::json(503, "{}"),
        Reply::json(503, "{}"),
        Reply::json(429, "{}").with_header("retry-after", "1"),
        ok(),
    ])
    .await;
    let delays: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let sink = delays.clone();
    let started = std::time::Instant::now();
    run(ClassifierOptions {
        retries: 3,
        retry_base_ms: 5,
        retry_jitter: Jitter::Off,
        on_error: Some(Arc::new(move |info| {
            sink.lock().unwrap().push(info.delay);
            info.default_tier()
        })),
        ..options(&server)
    })
    .await
    .unwrap();
    assert_eq!(
        delays.lock().unwrap().as_slice(),
        [
            Duration::from_millis(5),
            Duration::from_millis(10),
            Duration::from_secs(1)
        ]
    );
    assert_eq!(server.count(), 4);
    // A lower bound only: the waits were really taken.
    assert!(started.elapsed() >= Duration::from_millis(1015));
}

#[tokio::test(start_paused = true)]
async fn one_attempt_is_bounded_by_the_timeout() {
    let server = Server::start(vec![Reply::Stall]).await;
    let started = tokio::time::Instant::now();
    let e = run(ClassifierOptions {
        retries: -1,
        ..options(&server)
    })
    .await
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "classifier: POST http://{}/v1/systemone: request timeout after 10000ms",
            server.addr()
        )
    );
    assert!(e.is_timeout() && e.is_retryable());
    assert!(started.elapsed() >= Duration::from_secs(10));
}

#[tokio::test]
async fn a_timed_out_attempt_is_retried() {
    let server = Server::start(vec![Reply::Stall, ok()]).await;
    run(ClassifierOptions {
        timeout_ms: 250,
        ..options(&server)
    })
    .await
    .unwrap();
    assert_eq!(server.count(), 2, "a timed-out attempt is retried");
}

#[tokio::test(start_paused = true)]
async fn a_body_that_stalls_midway_times_out() {
    let server = Server::start(vec![Reply::StallMidBody {
        status: 200,
        declared: 500,
        sent: b"{\"model\":".to_vec(),
    }])
    .await;
    let e = run(ClassifierOptions {
        retries: -1,
        timeout_ms: 300,
        ..options(&server)
    })
    .await
    .unwrap_err();
    assert!(e.is_timeout(), "{e}");
}

#[tokio::test(start_paused = true)]
async fn cancellation_returns_within_100ms_during_a_request() {
    let server = Server::start(vec![Reply::Stall]).await;
    let judge = create_classifier(options(&server)).unwrap();
    let ctx = EvalContext::new();
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let started = tokio::time::Instant::now();
    let e = judge
        .evaluate_ctx(ctx, json!(1), &questions())
        .await
        .unwrap_err();
    assert_eq!(e.to_string(), "classifier: context canceled");
    assert!(e.is_cancelled() && !e.is_retryable());
    assert!(
        started.elapsed() < Duration::from_millis(100),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn cancellation_returns_within_100ms_during_a_backoff() {
    let server = Server::start(vec![Reply::json(503, "{}")]).await;
    let ctx = EvalContext::new();
    let cancel = ctx.cancel.clone();
    let started: Arc<Mutex<Option<tokio::time::Instant>>> = Arc::default();
    let backoff_began = started.clone();
    // Cancel 50 ms into the 60 s backoff that follows the first 503.
    let judge = create_classifier(ClassifierOptions {
        retry_base_ms: 60_000,
        retry_budget_ms: 600_000,
        on_error: Some(Arc::new(move |info| {
            *backoff_began.lock().unwrap() = Some(tokio::time::Instant::now());
            let cancel = cancel.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                cancel.cancel();
            });
            info.default_tier()
        })),
        ..options(&server)
    })
    .unwrap();
    let e = judge
        .evaluate_ctx(ctx, json!(1), &questions())
        .await
        .unwrap_err();
    assert_eq!(e.to_string(), "classifier: context canceled");
    assert_eq!(server.count(), 1, "cancelled while waiting to retry");
    let waited = started.lock().unwrap().unwrap().elapsed();
    assert!(waited < Duration::from_millis(100), "{waited:?}");
}

#[tokio::test]
async fn oversized_bodies_are_rejected() {
    let big = format!(
        r#"{{"model":"m","answers":{{}},"pad":"{}"}}"#,
        "x".repeat(4096)
    );
    let server = Server::start(vec![Reply::json(200, big)]).await;
    let e = run(ClassifierOptions {
        max_response_bytes: 1024,
        ..options(&server)
    })
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ResponseTooLarge);
    assert_eq!(
        e.to_string(),
        format!(
            "classifier: POST http://{}/v1/systemone: response body exceeds 1024 bytes",
            server.addr()
        )
    );
    assert_eq!(server.count(), 1, "a body over the cap is not retried");

    // Without a Content-Length the cap holds while streaming.
    let server = Server::start(vec![Reply::Chunked {
        total: 3 * 1024 * 1024,
    }])
    .await;
    let e = run(ClassifierOptions {
        max_response_bytes: 1024 * 1024,
        ..options(&server)
    })
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ResponseTooLarge);
}

#[tokio::test]
async fn broken_answers_are_decode_errors() {
    let server = Server::start(vec![Reply::json(
        200,
        r#"{"model":"m","answers":{"risk":{"type":"score","confidence":1}}}"#,
    )])
    .await;
    let e = run(options(&server)).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "classifier: answer \"risk\": score answer has no \"score\" number"
    );

    let server = Server::start(vec![Reply::json(200, r#"{"model":"m","ans"#)]).await;
    let e = run(options(&server)).await.unwrap_err();
    assert!(e.is_decode(), "{e}");
    assert!(
        e.to_string().starts_with(&format!(
            "classifier: POST http://{}/v1/systemone: response is not valid JSON",
            server.addr()
        )),
        "{e}"
    );

    let server = Server::start(vec![Reply::json(
        200,
        r#"{"model":"m","answers":{"risk":{"type":"score","score":7,"confidence":1}}}"#,
    )])
    .await;
    let e = run(options(&server)).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "classifier: answer \"risk\": score 7 is outside [0, 2]"
    );
}

#[tokio::test]
async fn transport_failures_are_named_and_retried() {
    let base = closed_base_url();
    let e = run(ClassifierOptions {
        base_url: base.clone(),
        retry_base_ms: 1,
        ..Default::default()
    })
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Transport);
    assert!(
        e.to_string().starts_with(&format!(
            "classifier: POST {base}/systemone: connection failed"
        )),
        "{e}"
    );
    assert!(e.is_retryable());

    let server = Server::start(vec![
        Reply::Close,
        Reply::Garbage(b"SMTP ready\r\n\r\n".to_vec()),
        ok(),
    ])
    .await;
    run(options(&server)).await.unwrap();
    assert_eq!(server.count(), 3);
}

#[tokio::test]
async fn auth_failure_bodies_are_dropped_and_other_causes_kept() {
    let server = Server::start(vec![Reply::json(
        401,
        r#"{"detail":{"message":"key sk-live-abc is revoked"}}"#,
    )])
    .await;
    let e = run(options(&server)).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "classifier: POST http://{}/v1/systemone: HTTP 401: unauthorized (response body not shown)",
            server.addr()
        )
    );
    let server = Server::start(vec![Reply::json(403, "forbidden for sk-live-abc")]).await;
    let e = run(options(&server)).await.unwrap_err();
    assert!(
        e.to_string()
            .ends_with("HTTP 403: forbidden (response body not shown)"),
        "{e}"
    );

    let long = format!("{{\"detail\":{{\"message\":\"{}\"}}}}", "q".repeat(300));
    let server = Server::start(vec![Reply::json(400, long)]).await;
    let e = run(options(&server)).await.unwrap_err();
    let cause = e.to_string().rsplit(": ").next().unwrap().to_string();
    assert_eq!(
        cause,
        format!("{}…", "q".repeat(200)),
        "the cause is kept, cut at 200 characters"
    );
}

#[tokio::test]
async fn batch_against_the_server_keeps_order() {
    let server = Server::start(vec![ok()]).await;
    let judge = create_classifier(ClassifierOptions {
        batch_concurrency: 3,
        ..options(&server)
    })
    .unwrap();
    let states: Vec<Value> = (0..25).map(|i| json!({"i": i})).collect();
    let ds = judge.evaluate_batch(states, &questions()).await.unwrap();
    assert_eq!(ds.len(), 25);
    let mut posted: Vec<i64> = server
        .requests()
        .iter()
        .map(|r| {
            serde_json::from_slice::<Value>(&r.body).unwrap()["state"]["i"]
                .as_i64()
                .unwrap()
        })
        .collect();
    posted.sort();
    assert_eq!(posted, (0..25).collect::<Vec<_>>(), "each state sent once");

    let server = Server::start(vec![
        ok(),
        ok(),
        Reply::json(400, r#"{"detail":"bad state"}"#),
    ])
    .await;
    let judge = create_classifier(ClassifierOptions {
        batch_concurrency: 1,
        ..options(&server)
    })
    .unwrap();
    let e = judge
        .evaluate_batch((0..5).map(|i| json!(i)).collect(), &questions())
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "state 2: classifier: POST http://{}/v1/systemone: HTTP 400: bad state",
            server.addr()
        )
    );
    assert_eq!(e.status(), Some(400));
}

/// A distinctive key and header value set, every error path run, and every text
/// the library produces searched for them.
#[tokio::test]
async fn the_sentinel_secret_never_appears() {
    const KEY: &str = "sk-SENTINEL-7f3a9c2e51d04b8e";
    const HDR: &str = "hdr-SENTINEL-0b6e2d9a4c";
    suite_env("TOOLNEXUS_IT_SENTINEL_KEY", KEY);
    suite_env("TOOLNEXUS_IT_SENTINEL_HDR", HDR);
    let echo = format!(r#"{{"detail":{{"message":"bad key {KEY} with {HDR}"}}}}"#);
    let server = Server::start(vec![
        Reply::json(401, echo.clone()),
        Reply::json(403, echo.clone()),
        Reply::json(500, echo.clone()),
        Reply::json(400, echo.clone()),
        Reply::json(200, format!(r#"{{"model":"{KEY}x","answers":7}}"#)),
        Reply::Garbage(format!("{KEY}\r\n\r\n").into_bytes()),
        Reply::StallMidBody {
            status: 200,
            declared: 100,
            sent: KEY.as_bytes().to_vec(),
        },
    ])
    .await;
    let metrics: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = metrics.clone();
    let opts = ClassifierOptions {
        base_url: server.base_url(),
        api_key_env: "TOOLNEXUS_IT_SENTINEL_KEY".into(),
        headers: [
            (
                "X-Secret".to_string(),
                "${TOOLNEXUS_IT_SENTINEL_HDR}".to_string(),
            ),
            ("X-Literal".to_string(), HDR.to_string()),
        ]
        .into(),
        retries: -1,
        timeout_ms: 300,
        on_metric: Some(Arc::new(move |m: &MetricEvent| {
            sink.lock().unwrap().push(format!("{m:?}"))
        })),
        ..Default::default()
    };
    let mut texts = vec![format!("{opts:?}")];
    let judge = create_classifier(opts).unwrap();
    texts.push(format!("{judge:?}"));
    for _ in 0..7 {
        let e = judge.evaluate(json!(1), &questions()).await.unwrap_err();
        texts.push(e.to_string());
        texts.push(format!("{e:?}"));
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            texts.push(s.to_string());
            texts.push(format!("{s:?}"));
            src = s.source();
        }
    }
    texts.extend(metrics.lock().unwrap().iter().cloned());
    let reqs = server.requests();
    assert_eq!(
        reqs[0].headers["authorization"],
        format!("Bearer {KEY}"),
        "the key was really sent"
    );
    assert_eq!(reqs[0].headers["x-secret"], HDR);
    for t in &texts {
        assert!(
            !t.contains(KEY) && !t.contains(HDR),
            "secret leaked in: {t}"
        );
    }
    assert!(
        texts
            .iter()
            .any(|t| t.contains("bad key [redacted] with [redacted]")),
        "{texts:#?}"
    );
}

/// SPEC §16: the caller's option order reaches the model. The same question in
/// two orders goes on the wire in each order as given, while its identity
/// (canonical JSON, the question hash) stays one.
#[tokio::test]
async fn a_choice_reaches_the_model_in_the_callers_option_order() {
    let answer = r#"{"model":"m","answers":{"desk":{"type":"choice","choice":"billing",
        "probabilities":{"billing":0.7,"shipping":0.2,"technical":0.1},"confidence":0.55}}}"#;
    let server = Server::start(vec![Reply::json(200, answer), Reply::json(200, answer)]).await;
    let classifier = create_classifier(options(&server)).unwrap();
    let order = [
        ("shipping", "a parcel"),
        ("billing", "money moved"),
        ("technical", "it broke"),
    ];
    let forward = choice_over("Which desk?", order);
    let backward = choice_over("Which desk?", order.iter().rev().copied());
    for q in [&forward, &backward] {
        let qs = Questions::from([("desk".to_string(), q.clone().into())]);
        classifier
            .evaluate(json!("my card was charged twice"), &qs)
            .await
            .unwrap();
    }
    let sent: Vec<String> = server
        .requests()
        .iter()
        .map(|r| String::from_utf8(r.body.clone()).unwrap())
        .collect();
    let positions = |body: &str| -> Vec<usize> {
        ["\"shipping\"", "\"billing\"", "\"technical\""]
            .iter()
            .map(|id| body.find(id).unwrap_or_else(|| panic!("{id} in {body}")))
            .collect()
    };
    let (a, b) = (positions(&sent[0]), positions(&sent[1]));
    assert!(a[0] < a[1] && a[1] < a[2], "as given: {}", sent[0]);
    assert!(b[2] < b[1] && b[1] < b[0], "reversed as given: {}", sent[1]);
    // One question, whatever the order: the identity is canonical.
    let (f, r): (Question, Question) = (forward.into(), backward.into());
    assert_eq!(question_hash(&f), question_hash(&r));
    assert_eq!(f, r);
    assert_eq!(
        canonical_json(&f.wire()),
        canonical_json(&r.wire()),
        "canonical JSON sorts the ids"
    );
}
