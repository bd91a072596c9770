//! One `TransportOptions` drives a System One classifier and a chat client
//! alike: the same retries, headers and size cap reach both wires.

use serde_json::json;
use toolnexus::classifier::{
    ClassifierOptions, EvalContext, Jitter, NoulQuestion, Questions, create_classifier,
};
use toolnexus::client::{ChatMessage, ClientOptions, TransportOptions, create_client};

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

/// The settings both sides share: two retries at a 1 ms base, one header.
fn shared(server: &Server) -> TransportOptions {
    TransportOptions {
        base_url: server.base_url(),
        api_key_env: "TOOLNEXUS_IT_UNSET_KEY_VAR".into(),
        headers: [("X-Team".to_string(), "ops".to_string())].into(),
        retries: 2,
        retry_base_ms: 1,
        retry_jitter: Jitter::Off,
        ..Default::default()
    }
}

#[tokio::test]
async fn one_transport_reaches_the_classifier_and_the_chat_client_alike() {
    let server = Server::start(vec![Reply::json(503, "{}")]).await;
    let judge = create_classifier(
        ClassifierOptions {
            model: "jev-1.13".into(),
            ..Default::default()
        }
        .with_transport(shared(&server)),
    )
    .unwrap();
    let e = judge.evaluate(json!("hi"), &spam()).await.unwrap_err();
    assert_eq!(e.status(), Some(503));
    let classifier_attempts = server.count();

    let server2 = Server::start(vec![Reply::json(503, "{}")]).await;
    let client = create_client(
        ClientOptions {
            model: "qwen2.5".into(),
            ..Default::default()
        }
        .with_transport(shared(&server2)),
    )
    .unwrap();
    let e = client
        .chat(&EvalContext::new(), &[ChatMessage::user("hi")])
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(503));
    assert_eq!(
        (classifier_attempts, server2.count()),
        (3, 3),
        "one attempt and the two retries the shared settings ask for, on both wires"
    );
    for r in server.requests().iter().chain(server2.requests().iter()) {
        assert_eq!(r.header("X-Team"), Some("ops"), "{}", r.path);
    }
}

#[tokio::test]
async fn transport_reads_back_what_the_options_hold() {
    let server = Server::start(vec![Reply::json(200, "{}")]).await;
    let t = shared(&server);
    let judge_opts = ClassifierOptions::default().with_transport(t.clone());
    let client_opts = ClientOptions::default().with_transport(t.clone());
    for back in [judge_opts.transport(), client_opts.transport()] {
        assert_eq!(back.base_url, t.base_url);
        assert_eq!(back.headers, t.headers);
        assert_eq!(
            (back.retries, back.retry_base_ms, back.retry_jitter),
            (2, 1, Jitter::Off)
        );
    }
}
