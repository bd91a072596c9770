//! The OpenTelemetry export against a loopback collector: one call's span,
//! events and metrics arrive over OTLP/HTTP, no exported byte holds the API
//! key or a credential of the endpoint URL, and an unreachable collector
//! neither fails nor holds up a call.

use serde_json::json;
use toolnexus::classifier::{ClassifierOptions, Questions, create_classifier, questions_from_wire};
use toolnexus::otel::{OtelOptions, install};
use toolnexus::testing::{Reply, Server, closed_base_url};

use crate::support::suite_env;

const KEY: &str = "sk-OTEL-3b9d0e6a5c17f2";
const KEY_ENV: &str = "TOOLNEXUS_IT_OTEL_KEY";
const URL_SECRET: &str = "url-OTEL-7e21c4";

fn questions() -> Questions {
    questions_from_wire(&json!({
        "spam": {"type": "noul", "instructions": "INSTRUCTIONS-OTEL is it spam?"},
        "topic": {"type": "choice", "instructions": "Which topic?",
                  "criteria": {"billing": "about money", "other": "anything else"}},
    }))
    .expect("well-formed questions")
}

/// A System One that answers and echoes the key back as its model's name.
async fn system_one() -> Server {
    Server::start([Reply::value(
        200,
        json!({
            "model": format!("jev-1.13-{KEY}"),
            "answers": {
                "spam": {"type": "noul", "noul": 0.9},
                "topic": {"type": "choice", "choice": "billing",
                          "probabilities": {"billing": 0.8, "other": 0.2},
                          "confidence": 0.5, "near_uniform": false}
            },
            "usage": {"input_tokens": 40, "output_tokens": 2}
        }),
    )
    .with_header("x-typesafe-request-id", KEY)])
    .await
}

fn judge(server: &Server) -> toolnexus::classifier::Classifier {
    // The endpoint carries a credential of its own in its user part.
    let base = server
        .base_url()
        .replacen("http://", &format!("http://user:{URL_SECRET}@"), 1);
    create_classifier(ClassifierOptions {
        base_url: base,
        api_key_env: KEY_ENV.into(),
        retry_base_ms: 1,
        ..Default::default()
    })
    .expect("a classifier")
}

/// Both halves share the process-wide export, so they run in turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_is_exported_without_secrets_and_a_dead_collector_costs_nothing() {
    suite_env(KEY_ENV, KEY);
    exported_without_secrets().await;
    dead_collector_costs_nothing().await;
}

async fn exported_without_secrets() {
    // On its own thread: the guard's shutdown blocks while the collector answers.
    let collector = Server::builder()
        .script([Reply::json(200, "")])
        .start_on_thread();
    let guard = install(OtelOptions {
        endpoint: Some(format!("http://{}", collector.addr())),
        ..Default::default()
    })
    .expect("the export installs");
    let server = system_one().await;
    let d = judge(&server)
        .evaluate(json!("WIN A PRIZE"), &questions())
        .await
        .expect("the call succeeds");
    assert_eq!(d.noul("spam").unwrap().noul, 0.9);
    tokio::task::spawn_blocking(move || guard.shutdown())
        .await
        .unwrap();

    let sent = collector.requests();
    let traces: Vec<u8> = sent
        .iter()
        .filter(|r| r.path == "/v1/traces")
        .flat_map(|r| r.body.clone())
        .collect();
    let metrics: Vec<u8> = sent
        .iter()
        .filter(|r| r.path == "/v1/metrics")
        .flat_map(|r| r.body.clone())
        .collect();
    assert!(
        sent.iter()
            .all(|r| r.header("content-type") == Some("application/x-protobuf")),
        "OTLP/HTTP protobuf: {:?}",
        sent.iter()
            .map(|r| r.header("content-type"))
            .collect::<Vec<_>>()
    );
    let has =
        |bytes: &[u8], needle: &str| bytes.windows(needle.len()).any(|w| w == needle.as_bytes());
    for needle in [
        "gen_ai.evaluation.result",
        "gen_ai.request.model",
        "gen_ai.response.model",
        "jev-latest",
        "spam",
        "billing",
        "127.0.0.1",
        "toolnexus.near_uniform",
        "service.name",
    ] {
        assert!(has(&traces, needle), "the spans hold {needle}");
    }
    assert!(has(&metrics, "toolnexus.requests"), "the metrics arrived");
    assert_eq!(toolnexus::otel::undelivered_spans(), 0, "all delivered");
    for bytes in [&traces, &metrics] {
        for secret in [KEY, URL_SECRET, "INSTRUCTIONS-OTEL", "WIN A PRIZE"] {
            assert!(!has(bytes, secret), "{secret} was exported");
        }
    }
}

async fn dead_collector_costs_nothing() {
    let guard = install(OtelOptions {
        endpoint: Some(closed_base_url().trim_end_matches("/v1").to_string()),
        content: true,
        ..Default::default()
    })
    .expect("the export installs whether or not the collector listens");
    let server = system_one().await;
    for _ in 0..3 {
        judge(&server)
            .evaluate(json!("hello"), &questions())
            .await
            .expect("a dead collector fails no call");
    }
    tokio::task::spawn_blocking(move || guard.shutdown())
        .await
        .unwrap();
    assert!(
        toolnexus::otel::undelivered_spans() >= 3,
        "the lost spans are counted"
    );
}
