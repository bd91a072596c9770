//! Fault injection: broken and hostile backends against the one HTTP transport,
//! through the System One style and the chat client (both wires). Every case
//! must end in a named error (kind, status and message shape) within a bound,
//! after the right number of attempts, with no secret in any text; an over-cap
//! body must be refused without being read to its end; and under load with
//! transient faults no state is lost, duplicated or reordered.
//!
//! Real sockets and real (short) timeouts throughout: paused time would let the
//! clock jump while a loopback answer is still in flight.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use toolnexus::classifier::{
    ClassifierError, ClassifierOptions, Decision, ErrorKind, ErrorTier, EvalContext, Jitter,
    MetricEvent, MetricName, MetricStatus, NoulQuestion, Questions, create_classifier,
};
use toolnexus::client::{ChatMessage, ClientOptions, Style, create_client};

use crate::support::{Reply, Server, suite_env};

/// The key every fault case sends; no error text may ever hold it.
const KEY: &str = "sk-FAULTS-4e1b7c90d2a35f68";
const KEY_ENV: &str = "TOOLNEXUS_IT_FAULTS_KEY";
/// One attempt's timeout in these tests.
const TIMEOUT_MS: u64 = 300;
/// The response cap in these tests.
const CAP: usize = 1024 * 1024;
/// No case may take longer than this: the proof that nothing hangs.
const NO_HANG: Duration = Duration::from_secs(20);

const DECISION: &str = r#"{"model":"m","answers":{"q":{"type":"noul","noul":0.5}}}"#;

fn questions() -> Questions {
    Questions::from([(
        "q".to_string(),
        NoulQuestion {
            instructions: "Does it hold?".into(),
            criteria: None,
        }
        .into(),
    )])
}

/// The three users of the transport.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Wire {
    SystemOne,
    OpenAi,
    Anthropic,
}

impl Wire {
    const ALL: [Wire; 3] = [Wire::SystemOne, Wire::OpenAi, Wire::Anthropic];

    fn prefix(self) -> &'static str {
        match self {
            Wire::SystemOne => "classifier",
            _ => "client",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Wire::SystemOne => "/v1/systemone",
            Wire::OpenAi => "/v1/chat/completions",
            Wire::Anthropic => "/v1/messages",
        }
    }

    /// A well-formed 2xx body for this wire.
    fn ok(self) -> Reply {
        Reply::json(
            200,
            match self {
                Wire::SystemOne => DECISION.to_string(),
                Wire::OpenAi => r#"{"model":"m","choices":[{"message":{"content":"fine"},"finish_reason":"stop"}]}"#.into(),
                Wire::Anthropic => r#"{"model":"m","content":[{"type":"text","text":"fine"}],"stop_reason":"end_turn"}"#.into(),
            },
        )
    }
}

/// Knobs of one run.
#[derive(Clone, Default)]
struct Knobs {
    retries: i32,
    delays: Option<Arc<Mutex<Vec<Duration>>>>,
}

/// Sends one request through `wire` and returns its outcome: `Ok(())` on success.
async fn call(wire: Wire, server: &Server, knobs: &Knobs) -> Result<(), ClassifierError> {
    suite_env(KEY_ENV, KEY);
    let on_error = knobs.delays.clone().map(|sink| {
        let f: toolnexus::classifier::OnErrorFn = Arc::new(move |info| {
            sink.lock().unwrap().push(info.delay);
            info.default_tier()
        });
        f
    });
    let work = async {
        match wire {
            Wire::SystemOne => create_classifier(ClassifierOptions {
                base_url: server.base_url(),
                model: "m".into(),
                api_key_env: KEY_ENV.into(),
                timeout_ms: TIMEOUT_MS,
                retries: knobs.retries,
                retry_base_ms: 1,
                retry_jitter: Jitter::Off,
                max_response_bytes: CAP,
                on_error,
                ..Default::default()
            })?
            .evaluate(json!("state"), &questions())
            .await
            .map(|_| ()),
            Wire::OpenAi | Wire::Anthropic => create_client(ClientOptions {
                base_url: server.base_url(),
                style: if wire == Wire::OpenAi {
                    Style::OpenAi
                } else {
                    Style::Anthropic
                },
                model: "m".into(),
                api_key_env: KEY_ENV.into(),
                timeout_ms: TIMEOUT_MS,
                retries: knobs.retries,
                retry_base_ms: 1,
                retry_jitter: Jitter::Off,
                max_response_bytes: CAP,
                on_error,
                ..Default::default()
            })?
            .chat(&EvalContext::new(), &[ChatMessage::user("hello")])
            .await
            .map(|_| ()),
        }
    };
    tokio::time::timeout(NO_HANG, work)
        .await
        .unwrap_or_else(|_| panic!("{wire:?}: the call hung past {NO_HANG:?}"))
}

/// Every text an error exposes: Display, Debug, and its source chain.
fn texts(e: &ClassifierError) -> Vec<String> {
    let mut out = vec![e.to_string(), format!("{e:?}")];
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        out.push(s.to_string());
        out.push(format!("{s:?}"));
        src = s.source();
    }
    out
}

/// One row of the fault table.
struct Case {
    name: &'static str,
    script: Vec<Reply>,
    kind: ErrorKind,
    status: Option<u16>,
    /// The message after `<prefix>: POST <endpoint>: ` starts with this.
    tail: &'static str,
    retryable: bool,
}

fn big_body() -> Vec<u8> {
    let mut b = br#"{"model":"m","answers":{},"pad":""#.to_vec();
    b.extend(std::iter::repeat_n(b'x', 2 * CAP));
    b.extend_from_slice(br#""}"#);
    b
}

fn cases() -> Vec<Case> {
    let echo = format!(r#"{{"error":{{"message":"invalid key {KEY}"}}}}"#);
    vec![
        Case {
            name: "reset before the head",
            script: vec![Reply::Reset],
            kind: ErrorKind::Transport,
            status: None,
            tail: "request failed",
            retryable: true,
        },
        Case {
            name: "reset inside the body",
            script: vec![Reply::ResetMidBody {
                status: 200,
                declared: 400,
                sent: br#"{"model":"m","ans"#.to_vec(),
            }],
            kind: ErrorKind::Transport,
            status: None,
            tail: "response body broken",
            retryable: true,
        },
        Case {
            name: "closed inside the body",
            script: vec![Reply::CloseMidBody {
                status: 200,
                declared: 400,
                sent: br#"{"model":"m","ans"#.to_vec(),
            }],
            kind: ErrorKind::Transport,
            status: None,
            tail: "response body broken",
            retryable: true,
        },
        Case {
            name: "closed without a byte",
            script: vec![Reply::Close],
            kind: ErrorKind::Transport,
            status: None,
            tail: "request failed",
            retryable: true,
        },
        Case {
            name: "stall before the head",
            script: vec![Reply::Stall],
            kind: ErrorKind::Timeout,
            status: None,
            tail: "request timeout after 300ms",
            retryable: true,
        },
        Case {
            name: "stall inside the head",
            script: vec![Reply::StallInHead(
                b"HTTP/1.1 200 OK\r\ncontent-type: appl".to_vec(),
            )],
            kind: ErrorKind::Timeout,
            status: None,
            tail: "request timeout after 300ms",
            retryable: true,
        },
        Case {
            name: "stall inside the body",
            script: vec![Reply::StallMidBody {
                status: 200,
                declared: 400,
                sent: br#"{"model":"m","ans"#.to_vec(),
            }],
            kind: ErrorKind::Timeout,
            status: None,
            tail: "request timeout after 300ms",
            retryable: true,
        },
        Case {
            name: "garbage instead of HTTP",
            script: vec![Reply::Garbage(
                format!("\u{0}\u{1}SMTP {KEY} ready\r\n\r\n").into_bytes(),
            )],
            kind: ErrorKind::Transport,
            status: None,
            tail: "request failed",
            retryable: true,
        },
        Case {
            name: "truncated JSON in a complete answer",
            script: vec![Reply::json(200, r#"{"model":"m","answers":{"q":{"ty"#)],
            kind: ErrorKind::Decode,
            status: None,
            tail: "response is not valid JSON",
            retryable: false,
        },
        Case {
            name: "not JSON at all",
            script: vec![Reply::json(200, format!("<html>{KEY}</html>"))],
            kind: ErrorKind::Decode,
            status: None,
            tail: "response is not valid JSON",
            retryable: false,
        },
        Case {
            name: "declared body over the cap",
            script: vec![Reply::json(200, big_body())],
            kind: ErrorKind::ResponseTooLarge,
            status: None,
            tail: "response body exceeds 1048576 bytes",
            retryable: false,
        },
        Case {
            name: "chunked body over the cap",
            script: vec![Reply::Chunked {
                total: 3 * 1024 * 1024,
            }],
            kind: ErrorKind::ResponseTooLarge,
            status: None,
            tail: "response body exceeds 1048576 bytes",
            retryable: false,
        },
        Case {
            name: "429 without Retry-After",
            script: vec![Reply::json(429, r#"{"error":{"message":"slow down"}}"#)],
            kind: ErrorKind::Http,
            status: Some(429),
            tail: "HTTP 429: slow down",
            retryable: true,
        },
        Case {
            name: "503 with Retry-After",
            script: vec![
                Reply::json(503, r#"{"detail":{"message":"overloaded"}}"#)
                    .with_header("retry-after", "0"),
            ],
            kind: ErrorKind::Http,
            status: Some(503),
            tail: "HTTP 503: overloaded",
            retryable: true,
        },
        Case {
            name: "529 with a body echoing the key",
            script: vec![Reply::json(529, echo.clone())],
            kind: ErrorKind::Http,
            status: Some(529),
            tail: "HTTP 529: invalid key [redacted]",
            retryable: true,
        },
        Case {
            name: "401 with a body echoing the key",
            script: vec![Reply::json(401, echo.clone())],
            kind: ErrorKind::Http,
            status: Some(401),
            tail: "HTTP 401: unauthorized (response body not shown)",
            retryable: false,
        },
        Case {
            name: "403 with a body echoing the key",
            script: vec![Reply::json(403, echo)],
            kind: ErrorKind::Http,
            status: Some(403),
            tail: "HTTP 403: forbidden (response body not shown)",
            retryable: false,
        },
        Case {
            name: "400 is not retried",
            script: vec![Reply::json(400, r#"{"message":"bad request shape"}"#)],
            kind: ErrorKind::Http,
            status: Some(400),
            tail: "HTTP 400: bad request shape",
            retryable: false,
        },
    ]
}

/// Runs the whole table through one wire, with one retry allowed.
async fn run_table(wire: Wire) {
    let mut report = Vec::new();
    for case in cases() {
        let server = Server::start(case.script).await;
        let started = Instant::now();
        let e = call(
            wire,
            &server,
            &Knobs {
                retries: 1,
                ..Knobs::default()
            },
        )
        .await
        .expect_err(case.name);
        let took = started.elapsed();
        let what = format!("{wire:?} / {}: {e}", case.name);
        assert_eq!(e.kind(), case.kind, "{what}");
        assert_eq!(e.status(), case.status, "{what}");
        assert_eq!(e.is_retryable(), case.retryable, "{what}");
        let head = format!(
            "{}: POST http://{}{}: ",
            wire.prefix(),
            server.addr(),
            wire.path()
        );
        let tail = e
            .to_string()
            .strip_prefix(&head)
            .unwrap_or_else(|| panic!("{what}: the message does not start {head:?}"))
            .to_string();
        assert!(tail.starts_with(case.tail), "{what}: want {:?}", case.tail);
        let attempts = if case.retryable { 2 } else { 1 };
        assert_eq!(server.count(), attempts, "{what}: attempts");
        for t in texts(&e) {
            assert!(!t.contains(KEY), "{what}: the key leaked in {t}");
        }
        if case.kind == ErrorKind::Timeout {
            assert!(
                took >= Duration::from_millis(2 * TIMEOUT_MS),
                "{what}: both attempts waited their timeout"
            );
        }
        report.push(format!("{:<40} {:?} {took:?}", case.name, e.kind()));
    }
    eprintln!("{wire:?} fault table:\n{}", report.join("\n"));
}

#[tokio::test]
async fn every_fault_is_a_named_error_through_systemone() {
    run_table(Wire::SystemOne).await;
}

#[tokio::test]
async fn every_fault_is_a_named_error_through_the_openai_client() {
    run_table(Wire::OpenAi).await;
}

#[tokio::test]
async fn every_fault_is_a_named_error_through_the_anthropic_client() {
    run_table(Wire::Anthropic).await;
}

#[tokio::test]
async fn a_transient_fault_then_an_answer_recovers_on_every_wire() {
    let transient = || {
        vec![
            Reply::Reset,
            Reply::Close,
            Reply::Stall,
            Reply::ResetMidBody {
                status: 200,
                declared: 100,
                sent: b"{".to_vec(),
            },
            Reply::CloseMidBody {
                status: 200,
                declared: 100,
                sent: b"{".to_vec(),
            },
            Reply::Garbage(b"nope\r\n\r\n".to_vec()),
            Reply::json(408, "{}"),
            Reply::json(429, "{}"),
            Reply::json(500, "{}"),
            Reply::json(502, "{}"),
            Reply::json(503, "{}").with_header("retry-after", "0"),
            Reply::json(504, "{}"),
            Reply::json(529, "{}"),
        ]
    };
    for wire in Wire::ALL {
        for fault in transient() {
            let name = format!("{wire:?} after {fault:?}");
            let server = Server::start(vec![fault, wire.ok()]).await;
            call(wire, &server, &Knobs::default())
                .await
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(server.count(), 2, "{name}");
        }
    }
}

#[tokio::test]
async fn retries_are_counted_and_retry_after_sets_the_wait() {
    // (status, Retry-After, the wait before each retry)
    let table: &[(u16, Option<&str>, [Duration; 2])] = &[
        (
            429,
            None,
            [Duration::from_millis(1), Duration::from_millis(2)],
        ),
        (
            503,
            None,
            [Duration::from_millis(1), Duration::from_millis(2)],
        ),
        (
            529,
            None,
            [Duration::from_millis(1), Duration::from_millis(2)],
        ),
        (429, Some("0.02"), [Duration::from_millis(20); 2]),
        (503, Some("0"), [Duration::ZERO; 2]),
        (529, Some("0.01"), [Duration::from_millis(10); 2]),
        // An HTTP date already past means "retry now", as the official client reads it.
        (
            503,
            Some("Wed, 21 Oct 2015 07:28:00 GMT"),
            [Duration::ZERO; 2],
        ),
    ];
    for wire in Wire::ALL {
        for (status, retry_after, waits) in table {
            let mut reply = Reply::json(*status, r#"{"message":"busy"}"#);
            if let Some(ra) = retry_after {
                reply = reply.with_header("retry-after", ra);
            }
            let server = Server::start(vec![reply]).await;
            let delays: Arc<Mutex<Vec<Duration>>> = Arc::default();
            let e = call(
                wire,
                &server,
                &Knobs {
                    retries: 2,
                    delays: Some(delays.clone()),
                },
            )
            .await
            .unwrap_err();
            let what = format!("{wire:?} HTTP {status} retry-after {retry_after:?}");
            assert_eq!(e.status(), Some(*status), "{what}");
            assert!(
                e.to_string().ends_with(&format!(": HTTP {status}: busy")),
                "{what}: {e}"
            );
            assert_eq!(server.count(), 3, "{what}: one attempt and two retries");
            // on_error sees all three failures; the last one's wait is never taken.
            let seen = delays.lock().unwrap().clone();
            assert_eq!(seen.len(), 3, "{what}");
            assert_eq!(seen[..2], waits[..], "{what}");
        }
    }
}

#[tokio::test]
async fn on_error_fail_stops_a_retryable_fault_at_once() {
    let server = Server::start(vec![Reply::Reset]).await;
    let judge = create_classifier(ClassifierOptions {
        base_url: server.base_url(),
        model: "m".into(),
        api_key_env: "TOOLNEXUS_IT_FAULTS_UNSET".into(),
        retries: 5,
        retry_base_ms: 1,
        on_error: Some(Arc::new(|_| ErrorTier::Fail)),
        ..Default::default()
    })
    .unwrap();
    let e = judge.evaluate(json!("s"), &questions()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Transport);
    assert_eq!(server.count(), 1);
}

/// A 64 MiB chunked body against a 1 MiB cap: refused as too large, and the
/// server sees the client hang up long before the end (it is never buffered).
#[tokio::test]
async fn a_huge_streamed_body_is_refused_without_reading_it_all() {
    const TOTAL: usize = 64 * 1024 * 1024;
    for wire in Wire::ALL {
        let server = Server::start(vec![Reply::Chunked { total: TOTAL }]).await;
        let e = call(wire, &server, &Knobs::default()).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ResponseTooLarge, "{wire:?}: {e}");
        assert!(
            e.to_string()
                .ends_with(": response body exceeds 1048576 bytes"),
            "{e}"
        );
        assert_eq!(server.count(), 1, "{wire:?}: too large is not retried");
        // Wait (bounded) for the server's writer to notice the client left.
        let observed = server.observed();
        let deadline = Instant::now() + NO_HANG;
        while observed.chunked_hung_up() == 0 {
            assert!(
                observed.chunked_completed() == 0,
                "{wire:?}: the whole body was read"
            );
            assert!(
                Instant::now() < deadline,
                "{wire:?}: the server never saw the client leave"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let sent = observed.chunked_bytes_sent();
        eprintln!("{wire:?}: server wrote {sent} of {TOTAL} bytes before the client hung up");
        // The client read at most the cap; the rest sat in socket buffers.
        assert!(sent < TOTAL / 4, "{wire:?}: {sent} bytes went out");
    }
}

/// Load: how each request of the load server is answered.
#[derive(Clone, Copy)]
struct LoadPlan {
    /// States whose index is 7 mod 20 fail their first attempt with a 503 (5 %).
    transient: bool,
    /// States 999 mod 1000 always get 503; states 500 mod 1000 always get 400.
    permanent: bool,
}

const STATES: usize = 10_000;

fn state_index(body: &[u8]) -> usize {
    let v: Value = serde_json::from_slice(body).expect("a JSON request");
    v["state"]["i"].as_u64().expect("state.i") as usize
}

/// Attempts the plan expects the server to see for state `i` (retries: 2).
fn attempts_for(plan: LoadPlan, i: usize) -> usize {
    if plan.permanent && i % 1000 == 999 {
        3
    } else if plan.permanent && i % 1000 == 500 {
        1
    } else if plan.transient && i % 20 == 7 {
        2
    } else {
        1
    }
}

async fn load_server(plan: LoadPlan) -> Server {
    let seen: Arc<Mutex<HashMap<usize, usize>>> = Arc::default();
    Server::start_with(move |_, req| {
        let i = state_index(&req.body);
        let attempt = {
            let mut s = seen.lock().unwrap();
            let n = s.entry(i).or_default();
            *n += 1;
            *n
        };
        if plan.permanent && i % 1000 == 999 {
            Reply::json(503, r#"{"detail":{"message":"permanently overloaded"}}"#)
        } else if plan.permanent && i % 1000 == 500 {
            Reply::json(400, r#"{"detail":{"message":"state refused"}}"#)
        } else if plan.transient && i % 20 == 7 && attempt == 1 {
            Reply::json(503, r#"{"detail":{"message":"transient"}}"#)
        } else {
            Reply::json(
                200,
                format!(
                    r#"{{"model":"echo-{i}","answers":{{"q":{{"type":"noul","noul":0.5}}}},"usage":{{"input_tokens":{i},"output_tokens":1}}}}"#
                ),
            )
        }
    })
    .await
}

/// Checks that the server saw every state exactly as often as the plan says.
fn check_server_saw(server: &Server, plan: LoadPlan) -> usize {
    let mut per_state = vec![0usize; STATES];
    for r in server.requests() {
        per_state[state_index(&r.body)] += 1;
    }
    for (i, n) in per_state.iter().enumerate() {
        assert_eq!(*n, attempts_for(plan, i), "state {i}: attempts seen");
    }
    per_state.iter().sum()
}

fn load_classifier(
    server: &Server,
    metrics: Arc<Mutex<Vec<MetricEvent>>>,
) -> toolnexus::classifier::Classifier {
    create_classifier(ClassifierOptions {
        base_url: server.base_url(),
        model: "load".into(),
        api_key_env: "TOOLNEXUS_IT_FAULTS_LOAD_UNSET".into(),
        timeout_ms: 10_000,
        retry_base_ms: 1,
        on_metric: Some(Arc::new(move |m: &MetricEvent| {
            metrics.lock().unwrap().push(m.clone())
        })),
        ..Default::default()
    })
    .unwrap()
}

#[tokio::test]
async fn ten_thousand_states_under_faults_lose_nothing() {
    // Per-state outcomes, 16 in flight, transient and permanent faults.
    let plan = LoadPlan {
        transient: true,
        permanent: true,
    };
    let server = load_server(plan).await;
    let metrics: Arc<Mutex<Vec<MetricEvent>>> = Arc::default();
    let judge = load_classifier(&server, metrics.clone());
    let qs = questions();
    let started = Instant::now();
    let outcomes: Vec<Result<Decision, ClassifierError>> = futures::stream::iter(0..STATES)
        .map(|i| {
            let (judge, qs) = (judge.clone(), qs.clone());
            async move { judge.evaluate(json!({ "i": i }), &qs).await }
        })
        .buffered(16)
        .collect()
        .await;
    let took = started.elapsed();
    assert_eq!(outcomes.len(), STATES);
    let (mut ok, mut failed) = (0, 0);
    for (i, o) in outcomes.iter().enumerate() {
        match o {
            Ok(d) => {
                ok += 1;
                assert_eq!(d.model, format!("echo-{i}"), "decision {i} is its own");
                assert_eq!(d.usage.input_tokens, i as i64);
            }
            Err(e) => {
                failed += 1;
                let (status, cause) = match i % 1000 {
                    999 => (503, "permanently overloaded"),
                    500 => (400, "state refused"),
                    _ => panic!("state {i} failed: {e}"),
                };
                assert_eq!(e.kind(), ErrorKind::Http, "state {i}");
                assert_eq!(e.status(), Some(status), "state {i}");
                assert_eq!(
                    e.to_string(),
                    format!(
                        "classifier: POST http://{}/v1/systemone: HTTP {status}: {cause}",
                        server.addr()
                    )
                );
            }
        }
    }
    assert_eq!((ok, failed), (STATES - 20, 20));
    let requests = check_server_saw(&server, plan);
    assert_eq!(requests, STATES + 500 + 10 * 2);
    let m = metrics.lock().unwrap();
    let evaluated = m.iter().filter(|m| m.name == MetricName::Evaluate);
    assert_eq!(evaluated.clone().count(), STATES, "one metric per state");
    assert_eq!(
        evaluated
            .filter(|m| m.status == MetricStatus::Error)
            .count(),
        20
    );
    eprintln!(
        "load (per state, buffered 16): {STATES} states, {requests} requests, \
         {} fault answers, {ok} decisions, {failed} named errors, {took:?}",
        requests - ok
    );
}

#[tokio::test]
async fn evaluate_batch_of_ten_thousand_succeeds_through_transient_faults() {
    let plan = LoadPlan {
        transient: true,
        permanent: false,
    };
    let server = load_server(plan).await;
    let metrics: Arc<Mutex<Vec<MetricEvent>>> = Arc::default();
    let judge = load_classifier(&server, metrics.clone());
    let states: Vec<Value> = (0..STATES).map(|i| json!({ "i": i })).collect();
    let started = Instant::now();
    let ds = judge
        .evaluate_batch(states, &questions())
        .await
        .expect("every transient fault is retried away");
    let took = started.elapsed();
    assert_eq!(ds.len(), STATES);
    for (i, d) in ds.iter().enumerate() {
        assert_eq!(d.model, format!("echo-{i}"), "order kept at {i}");
    }
    let requests = check_server_saw(&server, plan);
    assert_eq!(requests, STATES + STATES / 20);
    let m = metrics.lock().unwrap();
    assert_eq!(
        m.iter()
            .filter(|m| m.name == MetricName::Evaluate && m.status == MetricStatus::Ok)
            .count(),
        STATES
    );
    eprintln!(
        "load (evaluate_batch): {STATES} states, {requests} requests, {} transient 503s retried, \
         {STATES} decisions in order, {took:?}",
        STATES / 20
    );
}
