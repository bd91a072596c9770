//! Retries, request ids and error bodies as the official client handles them
//! (SPEC §15), against a real HTTP server on 127.0.0.1:0. Waits run on tokio's
//! paused clock, so the delays asserted are the ones the client chose.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use toolnexus::classifier::*;

use crate::support::{Reply, Server};

const OK: &str = r#"{"model":"jev-1.13","answers":{"q":{"type":"noul","noul":0.7}}}"#;

fn qs() -> Questions {
    Questions::from([(
        "q".to_string(),
        NoulQuestion {
            instructions: "Is it spam?".into(),
            criteria: None,
        }
        .into(),
    )])
}

fn options(server: &Server) -> ClassifierOptions {
    ClassifierOptions {
        base_url: server.base_url(),
        api_key_env: "TOOLNEXUS_IT_UNSET_KEY_VAR".into(),
        retry_base_ms: 1,
        ..Default::default()
    }
}

async fn run(opts: ClassifierOptions) -> Result<Decision, ClassifierError> {
    create_classifier(opts)
        .unwrap()
        .evaluate(json!("x"), &qs())
        .await
}

#[tokio::test(start_paused = true)]
async fn retry_after_ms_wins_over_retry_after() {
    let server = Server::start(vec![
        Reply::json(429, "{}")
            .with_header("retry-after-ms", "1500")
            .with_header("retry-after", "20"),
        Reply::json(200, OK),
    ])
    .await;
    let started = tokio::time::Instant::now();
    run(options(&server)).await.unwrap();
    let waited = started.elapsed();
    assert_eq!(server.count(), 2);
    assert!(waited >= Duration::from_millis(1500), "{waited:?}");
    assert!(
        waited < Duration::from_secs(20),
        "retry-after-ms was not preferred: {waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn retry_after_as_an_http_date_is_honoured() {
    // A date in the past means "now": the retry is immediate, not the backoff.
    let server = Server::start(vec![
        Reply::json(503, "{}").with_header("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT"),
        Reply::json(200, OK),
    ])
    .await;
    let e = run(ClassifierOptions {
        retry_base_ms: 9_000,
        ..options(&server)
    });
    let started = tokio::time::Instant::now();
    e.await.unwrap();
    assert_eq!(server.count(), 2);
    assert!(
        started.elapsed() < Duration::from_secs(9),
        "the date, not the backoff, decided"
    );
}

#[tokio::test(start_paused = true)]
async fn a_retry_whose_wait_passes_the_budget_is_not_made() {
    let server = Server::start(vec![
        Reply::json(429, r#"{"error":"slow down"}"#).with_header("retry-after", "5"),
        Reply::json(200, OK),
    ])
    .await;
    let e = run(ClassifierOptions {
        retry_budget_ms: 1_000,
        ..options(&server)
    })
    .await
    .unwrap_err();
    assert_eq!(server.count(), 1, "a 5 s wait does not fit a 1 s budget");
    assert_eq!(e.status(), Some(429));
    assert_eq!(e.retry_after(), Some(Duration::from_secs(5)));
    assert!(e.to_string().ends_with("HTTP 429: slow down"), "{e}");

    // The default budget (30 s) fits the same wait.
    let server = Server::start(vec![
        Reply::json(429, "{}").with_header("retry-after", "5"),
        Reply::json(200, OK),
    ])
    .await;
    run(options(&server)).await.unwrap();
    assert_eq!(server.count(), 2);
}

#[tokio::test]
async fn retries_carry_their_count_and_every_request_names_the_client() {
    let server = Server::start(vec![
        Reply::json(500, "{}"),
        Reply::json(502, "{}"),
        Reply::json(200, OK),
    ])
    .await;
    run(options(&server)).await.unwrap();
    let reqs = server.requests();
    let counts: Vec<Option<&str>> = reqs
        .iter()
        .map(|r| r.headers.get("x-typesafe-retry-count").map(String::as_str))
        .collect();
    assert_eq!(counts, [None, Some("1"), Some("2")]);
    let version = env!("CARGO_PKG_VERSION");
    for r in &reqs {
        assert_eq!(r.headers["user-agent"], format!("toolnexus/{version}"));
        assert_eq!(r.headers["x-typesafe-sdk"], format!("toolnexus/{version}"));
    }
}

#[tokio::test]
async fn the_request_id_reaches_errors_metrics_and_results() {
    let server = Server::start(vec![
        Reply::json(500, r#"{"detail":"boom"}"#).with_header("x-typesafe-request-id", "req_err_1"),
        Reply::json(200, OK).with_header("x-typesafe-request-id", "req_ok_2"),
    ])
    .await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let judge = create_classifier(ClassifierOptions {
        retries: -1,
        on_metric: Some(Arc::new(move |m: &MetricEvent| {
            sink.lock().unwrap().push((m.status, m.request_id.clone()));
        })),
        ..options(&server)
    })
    .unwrap();
    let e = judge.evaluate(json!("x"), &qs()).await.unwrap_err();
    assert_eq!(e.request_id(), Some("req_err_1"));
    assert!(format!("{e:?}").contains("req_err_1"));
    let ok = judge
        .evaluate_request(EvalContext::new(), EvalRequest::new(json!("x"), qs()))
        .await
        .unwrap();
    assert_eq!(ok.request_id.as_deref(), Some("req_ok_2"));
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (MetricStatus::Error, Some("req_err_1".to_string())),
            (MetricStatus::Ok, Some("req_ok_2".to_string()))
        ]
    );
}

#[tokio::test]
async fn every_error_body_the_api_sends_becomes_one_clear_cause() {
    let cases = [
        (
            400,
            r#"{"detail":"State is required."}"#,
            "State is required.",
        ),
        (
            404,
            r#"{"detail":{"message":"no such model","error_type":"not_found"}}"#,
            "no such model",
        ),
        (
            422,
            r#"{"detail":[{"loc":["body","questions","urgency","score","criteria"],"msg":"Field required","type":"missing"},{"loc":["body","state"],"msg":"Field required","type":"missing"}]}"#,
            "questions.urgency.score.criteria: Field required; state: Field required",
        ),
        (429, r#"{"error":"rate limited"}"#, "rate limited"),
        (
            503,
            r#"{"error":{"message":"overloaded","type":"server"}}"#,
            "overloaded",
        ),
        (529, r#"{"message":"model busy"}"#, "model busy"),
        (500, "upstream fell over", "upstream fell over"),
    ];
    for (status, body, cause) in cases {
        let server = Server::start(vec![Reply::json(status, body)]).await;
        let e = run(ClassifierOptions {
            retries: -1,
            ..options(&server)
        })
        .await
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "classifier: POST http://{}/v1/systemone: HTTP {status}: {cause}",
                server.addr()
            )
        );
        assert_eq!(e.status(), Some(status));
    }
}

#[test]
fn openrouter_with_the_default_model_points_at_the_openrouter_preset() {
    let e = create_classifier(ClassifierOptions {
        base_url: "https://openrouter.ai/api/v1".into(),
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "classifier: model \"jev-latest\" is not an OpenRouter model id: on openrouter.ai set \
         backend: Backend::OpenRouter (model \"typesafe/jev-1.13\") or name the model"
    );
    assert!(!e.to_string().contains("typesafe/jev-latest"));
    create_classifier(ClassifierOptions {
        backend: Backend::OpenRouter,
        ..Default::default()
    })
    .unwrap();
}
