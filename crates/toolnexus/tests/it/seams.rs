//! The seams users build on: a shared connection pool, explicit proxies, one
//! URL resolution for every wire, typed evaluators wrapping classifiers with
//! public items only, seedable jitter, and duplicate wire keys refused.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use toolnexus::classifier::*;
use toolnexus::client::BoxFuture;
use toolnexus::http::HttpClient;

use crate::support::{Reply, Server};

const ANSWER: &str = r#"{"model":"jev-1.13","answers":{"spam":{"type":"noul","noul":0.25}}}"#;

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

fn systemone(base_url: String, http: Option<HttpClient>) -> Classifier {
    create_classifier(ClassifierOptions {
        base_url,
        model: "jev-1.13".into(),
        api_key_env: "TOOLNEXUS_IT_SEAMS_UNSET".into(),
        http,
        ..Default::default()
    })
    .unwrap()
}

/// A keep-alive HTTP/1.1 server that answers every request with `ANSWER` and
/// counts the TCP connections it accepted.
async fn counting_server() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = Vec::new();
                loop {
                    // Read one request: the head, then Content-Length bytes.
                    let head_end = loop {
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                        let mut chunk = [0u8; 4096];
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map_or(0, |v| v.trim().parse().unwrap());
                    while buf.len() < head_end + len {
                        let mut chunk = [0u8; 4096];
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    buf.drain(..head_end + len);
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{ANSWER}",
                        ANSWER.len()
                    );
                    if sock.write_all(reply.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (format!("http://{addr}/v1"), accepted)
}

#[tokio::test]
async fn two_classifiers_sharing_one_pool_reuse_one_connection() {
    let (base, accepted) = counting_server().await;
    let pool = HttpClient::builder()
        .pool_idle_timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let a = systemone(base.clone(), Some(pool.clone()));
    let b = systemone(base.clone(), Some(pool));
    for judge in [&a, &b, &a, &b] {
        let d = judge.evaluate(json!("hi"), &spam()).await.unwrap();
        assert_eq!(d.noul("spam").unwrap().noul, 0.25);
    }
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "one pool, one connection"
    );

    // Two pools of their own open two connections.
    let (base, accepted) = counting_server().await;
    let c = systemone(base.clone(), Some(HttpClient::new().unwrap()));
    let d = systemone(base, Some(HttpClient::new().unwrap()));
    for judge in [&c, &d, &c, &d] {
        judge.evaluate(json!("hi"), &spam()).await.unwrap();
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_chat_client_and_a_classifier_share_a_pool() {
    let (base, accepted) = counting_server().await;
    let pool = HttpClient::new().unwrap();
    let judge = systemone(base.clone(), Some(pool.clone()));
    judge.evaluate(json!("hi"), &spam()).await.unwrap();
    let chat = toolnexus::client::create_client(toolnexus::client::ClientOptions {
        base_url: base,
        model: "m".into(),
        api_key_env: "TOOLNEXUS_IT_SEAMS_UNSET".into(),
        http: Some(pool),
        ..Default::default()
    })
    .unwrap();
    // The counting server answers every path with a System One body, which
    // is not a chat reply: the point is the connection it arrived on.
    let _ = chat
        .chat(
            &EvalContext::new(),
            &[toolnexus::client::ChatMessage::user("hi")],
        )
        .await;
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_proxy_is_used_only_when_named() {
    let proxy = Server::start(vec![Reply::json(200, ANSWER)]).await;
    let proxy_url = format!("http://{}", proxy.addr());
    let pool = HttpClient::builder().proxy(proxy_url).build().unwrap();
    // The target does not exist: only the proxy can answer.
    let judge = systemone("http://backend.invalid/v1".into(), Some(pool));
    let d = judge.evaluate(json!("hi"), &spam()).await.unwrap();
    assert_eq!(d.noul("spam").unwrap().noul, 0.25);
    let seen = proxy.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "http://backend.invalid/v1/systemone");

    // Without one, the request goes straight to its host.
    let direct = Server::start(vec![Reply::json(200, ANSWER)]).await;
    systemone(direct.base_url(), None)
        .evaluate(json!("hi"), &spam())
        .await
        .unwrap();
    assert_eq!(direct.requests()[0].path, "/v1/systemone");
    let e = HttpClient::builder()
        .proxy("not a url")
        .build()
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("classifier: http client: proxy \"not a url\" is not a valid URL"),
        "{e}"
    );
}

#[tokio::test]
async fn a_query_on_the_base_url_stays_after_the_path_on_every_wire() {
    let server = Server::start(vec![Reply::json(200, ANSWER)]).await;
    let judge = systemone(format!("{}/?k=1", server.base_url()), None);
    judge.evaluate(json!("hi"), &spam()).await.unwrap();
    assert_eq!(server.requests()[0].path, "/v1/systemone?k=1");

    let chat_server = Server::start(vec![Reply::json(
        200,
        r#"{"model":"m","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}"#,
    )])
    .await;
    let chat = toolnexus::client::create_client(toolnexus::client::ClientOptions {
        base_url: format!("{}?api-version=2024-06-01", chat_server.base_url()),
        model: "m".into(),
        api_key_env: "TOOLNEXUS_IT_SEAMS_UNSET".into(),
        ..Default::default()
    })
    .unwrap();
    chat.chat(
        &EvalContext::new(),
        &[toolnexus::client::ChatMessage::user("hi")],
    )
    .await
    .unwrap();
    assert_eq!(
        chat_server.requests()[0].path,
        "/v1/chat/completions?api-version=2024-06-01"
    );
}

/// A fault injector built from public items only: the first `fail` calls
/// answer 429 with a Retry-After, then it passes through.
struct Flaky {
    inner: Classifier,
    fail: usize,
    calls: AtomicUsize,
}

impl Evaluator for Flaky {
    fn call(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Decision, ClassifierError>> {
        if self.calls.fetch_add(1, Ordering::SeqCst) < self.fail {
            let e = ClassifierError::http(429, "slow down")
                .with_retry_after(Duration::from_secs(2))
                .with_request_id("req_fake");
            return Box::pin(async move { Err(e) });
        }
        self.inner.call(ctx, request)
    }
}

#[tokio::test]
async fn a_typed_evaluator_wraps_a_classifier_and_its_errors_pass_through() {
    let qs = spam();
    let recorded = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Static,
        decisions: vec![RecordedDecision {
            state: json!("hi"),
            questions: qs.clone(),
            response: ANSWER.as_bytes().to_vec(),
        }],
        ..Default::default()
    })
    .unwrap();
    let flaky = Arc::new(Flaky {
        inner: recorded,
        fail: 1,
        calls: AtomicUsize::new(0),
    });
    let judge = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        evaluator: Some(flaky.clone()),
        ..Default::default()
    })
    .unwrap();
    let e = judge.evaluate(json!("hi"), &qs).await.unwrap_err();
    assert_eq!(e.to_string(), "classifier: HTTP 429: slow down");
    assert_eq!(e.status(), Some(429));
    assert!(e.is_retryable());
    assert_eq!(e.retry_after(), Some(Duration::from_secs(2)));
    assert_eq!(e.request_id(), Some("req_fake"));
    let d = judge.evaluate(json!("hi"), &qs).await.unwrap();
    assert_eq!(d.noul("spam").unwrap().noul, 0.25);

    // The classifier around it still checks coherence: an answer of the wrong
    // type from the evaluator is an error naming the key.
    let wrong: Arc<dyn Evaluator> = Arc::new(Fixed(
        r#"{"model":"m","answers":{"spam":{"type":"choice","choice":"a","probabilities":{"a":1}}}}"#,
    ));
    let judge = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        evaluator: Some(wrong),
        ..Default::default()
    })
    .unwrap();
    let e = judge.evaluate(json!("hi"), &qs).await.unwrap_err();
    assert!(
        e.to_string().starts_with("classifier: answer \"spam\""),
        "{e}"
    );

    // Evaluate and Evaluator together are a configuration error.
    let both = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        evaluator: Some(flaky),
        evaluate: Some(Arc::new(|_, _, _| Box::pin(async { Err("x".to_string()) }))),
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(both.kind(), ErrorKind::Config);
}

struct Fixed(&'static str);

impl Evaluator for Fixed {
    fn call(&self, _: EvalContext, _: EvalRequest) -> BoxFuture<Result<Decision, ClassifierError>> {
        let d = Decision::from_slice(self.0.as_bytes());
        Box::pin(async move { d })
    }
}

#[tokio::test]
async fn public_constructors_make_every_kind() {
    let cases = [
        (ClassifierError::config("x"), ErrorKind::Config),
        (
            ClassifierError::invalid_question("k", "x"),
            ErrorKind::InvalidQuestion,
        ),
        (ClassifierError::decode("x"), ErrorKind::Decode),
        (ClassifierError::incoherent("k", "x"), ErrorKind::Incoherent),
        (
            ClassifierError::missing_answer("k"),
            ErrorKind::MissingAnswer,
        ),
        (
            ClassifierError::wrong_type("k", "score", "noul"),
            ErrorKind::WrongType,
        ),
        (ClassifierError::http(500, "x"), ErrorKind::Http),
        (ClassifierError::transport("x"), ErrorKind::Transport),
        (
            ClassifierError::timeout(Duration::from_secs(1)),
            ErrorKind::Timeout,
        ),
        (ClassifierError::cancelled(), ErrorKind::Cancelled),
        (
            ClassifierError::response_too_large(1),
            ErrorKind::ResponseTooLarge,
        ),
        (ClassifierError::static_miss(), ErrorKind::StaticMiss),
        (ClassifierError::tape_miss("c"), ErrorKind::TapeMiss),
        (ClassifierError::custom("x"), ErrorKind::Custom),
        (
            ClassifierError::unsupported("s", "x"),
            ErrorKind::Unsupported,
        ),
        (ClassifierError::cap_reached("x"), ErrorKind::CapReached),
    ];
    assert_eq!(
        cases.len(),
        ErrorKind::ALL.len(),
        "one constructor per kind"
    );
    for (e, kind) in cases {
        assert_eq!(e.kind(), kind, "{e}");
        assert_eq!(kind.as_str().parse::<ErrorKind>().unwrap(), kind);
        let shown = e.to_string();
        assert!(shown.ends_with(e.detail()), "{shown}");
        assert!(!e.detail().starts_with("classifier: ") && !e.detail().starts_with("tape: "));
    }
}

#[tokio::test(start_paused = true)]
async fn a_seeded_jitter_repeats_its_waits_and_stays_under_the_cap() {
    let server = Server::start(vec![Reply::json(503, "{}")]).await;
    let waits = |seed| {
        let base_url = server.base_url();
        async move {
            let seen: Arc<Mutex<Vec<Duration>>> = Arc::default();
            let sink = seen.clone();
            let judge = create_classifier(ClassifierOptions {
                base_url,
                model: "m".into(),
                api_key_env: "TOOLNEXUS_IT_SEAMS_UNSET".into(),
                retries: 4,
                retry_base_ms: 100,
                retry_jitter: Jitter::Seeded(seed),
                on_error: Some(Arc::new(move |info| {
                    sink.lock().unwrap().push(info.delay);
                    info.default_tier()
                })),
                ..Default::default()
            })
            .unwrap();
            judge.evaluate(json!("hi"), &spam()).await.unwrap_err();
            seen.lock().unwrap().clone()
        }
    };
    let a = waits(7).await;
    let b = waits(7).await;
    let c = waits(8).await;
    assert_eq!(a.len(), 5);
    assert_eq!(a, b, "the same seed, the same waits");
    assert_ne!(a, c);
    for (n, w) in a.iter().enumerate() {
        assert!(
            *w <= Duration::from_millis(100) * 2u32.pow(n as u32),
            "{n}: {w:?}"
        );
    }
}

#[tokio::test]
async fn a_key_twice_in_any_wire_object_is_refused_by_name() {
    let cases = [
        (r#"{"model":"m","model":"n","answers":{}}"#, "\"model\""),
        (
            r#"{"model":"m","answers":{"spam":{"type":"noul","noul":0.1},"spam":{"type":"noul","noul":0.9}}}"#,
            "\"spam\"",
        ),
        (
            r#"{"model":"m","answers":{"spam":{"type":"noul","noul":0.1,"noul":0.9}}}"#,
            "\"noul\"",
        ),
        (
            r#"{"model":"m","answers":{},"debug":{"a":1,"a":2}}"#,
            "\"a\"",
        ),
        (r#"{"model":"m","answers":{},"x":1,"x":2}"#, "\"x\""),
    ];
    for (body, key) in cases {
        let server = Server::start(vec![Reply::json(200, body)]).await;
        let e = systemone(server.base_url(), None)
            .evaluate(json!("hi"), &spam())
            .await
            .unwrap_err();
        assert!(e.is_decode(), "{body}: {e}");
        assert!(
            e.to_string().starts_with(&format!(
                "classifier: response has the key {key} twice at line 1 column "
            )),
            "{body}: {e}"
        );
        assert!(Decision::from_slice(body.as_bytes()).is_err(), "{body}");
    }
    let e = parse_json_strict(br#"[{"a":{"b":1,"b":2}}]"#).unwrap_err();
    assert!(e.to_string().contains("the key \"b\" twice"), "{e}");
}
