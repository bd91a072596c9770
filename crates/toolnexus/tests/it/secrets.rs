//! The sentinel-secret sweep: a distinctive API key and a `${ENV}` header value
//! are set, every error path of the System One style and of the chat client
//! (OpenAI and Anthropic wires, directly and as the Llm style) is run against a
//! backend that echoes them back, and every text the library produces is
//! searched for them: error Display, Debug and source chains, the `Debug` of
//! options, classifiers and clients, every metric event, every tracing line,
//! and a saved tape.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::json;
use toolnexus::classifier::{
    Classifier, ClassifierError, ClassifierOptions, ClassifierStyle, EvalContext, MetricEvent,
    NoulQuestion, Questions, choice_over, create_classifier,
};
use toolnexus::client::{ChatMessage, ClientOptions, Style, create_client};
use toolnexus::judge::Tape;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

use crate::support::{Reply, Server, suite_env};

const KEY: &str = "sk-SWEEP-91c4e07b3a6d25f8";
const HDR: &str = "hdr-SWEEP-5d0a8e3f71c2";
const KEY_ENV: &str = "TOOLNEXUS_IT_SWEEP_KEY";
const HDR_ENV: &str = "TOOLNEXUS_IT_SWEEP_HDR";

/// Every line of text the library produced in a test.
#[derive(Clone, Default)]
pub(crate) struct Texts(Arc<Mutex<Vec<String>>>);

impl Texts {
    /// Every line captured so far.
    pub(crate) fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    fn push(&self, t: impl Into<String>) {
        self.0.lock().unwrap().push(t.into());
    }

    fn error(&self, e: &ClassifierError) {
        self.push(e.to_string());
        self.push(format!("{e:?}"));
        let mut src = std::error::Error::source(e);
        while let Some(s) = src {
            self.push(s.to_string());
            self.push(format!("{s:?}"));
            src = s.source();
        }
    }

    pub(crate) fn metric_sink(&self) -> toolnexus::classifier::MetricFn {
        let me = self.clone();
        Arc::new(move |m: &MetricEvent| me.push(format!("metric {m:?}")))
    }

    /// Fails naming the first text that holds a secret; returns how many were searched.
    fn assert_clean(&self) -> usize {
        let all = self.0.lock().unwrap();
        for t in all.iter() {
            assert!(
                !t.contains(KEY) && !t.contains(HDR),
                "a secret leaked in: {t}"
            );
        }
        all.len()
    }

    fn any(&self, needle: &str) -> bool {
        self.0.lock().unwrap().iter().any(|t| t.contains(needle))
    }
}

/// A tiny tracing subscriber: every span's fields and every event, as text.
struct Capture {
    texts: Texts,
    next_id: AtomicU64,
}

struct Fields<'a>(&'a mut String);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut line = format!("span {}", span.metadata().name());
        span.record(&mut Fields(&mut line));
        self.texts.push(line);
        Id::from_u64(self.next_id.fetch_add(1, Ordering::Relaxed) + 1)
    }

    fn record(&self, _: &Id, values: &Record<'_>) {
        let mut line = "record".to_string();
        values.record(&mut Fields(&mut line));
        self.texts.push(line);
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let m = event.metadata();
        let mut line = format!("event {} {}", m.level(), m.target());
        event.record(&mut Fields(&mut line));
        self.texts.push(line);
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// Installs the capturing subscriber on this thread for the guard's life.
pub(crate) fn capture(texts: &Texts) -> tracing::subscriber::DefaultGuard {
    tracing::subscriber::set_default(Capture {
        texts: texts.clone(),
        next_id: AtomicU64::new(0),
    })
}

fn questions() -> Questions {
    Questions::from([
        (
            "q".to_string(),
            NoulQuestion {
                instructions: "Does it hold?".into(),
                criteria: None,
            }
            .into(),
        ),
        (
            "desk".to_string(),
            choice_over(
                "Which desk?",
                [("billing", "money"), ("shipping", "parcels")],
            )
            .into(),
        ),
    ])
}

fn secret_headers() -> std::collections::BTreeMap<String, String> {
    [
        ("X-Secret".to_string(), format!("${{{HDR_ENV}}}")),
        ("X-Wrapped".to_string(), format!("token=${{{HDR_ENV}}};")),
    ]
    .into()
}

fn set_secrets() {
    suite_env(KEY_ENV, KEY);
    suite_env(HDR_ENV, HDR);
}

/// Decision bodies that smuggle the secrets into every backend-controlled string
/// an error or a warning may quote.
fn hostile_decisions() -> Vec<String> {
    vec![
        // An answer of an unknown type under a key named after the secret,
        // which nobody asked: dropped with a warning naming the key (scrubbed).
        format!(r#"{{"model":"m","answers":{{"{KEY}":{{"type":"poll"}}}}}}"#),
        // An unknown answer type spelled as the secret.
        format!(r#"{{"model":"m","answers":{{"q":{{"type":"{HDR}"}}}}}}"#),
        // A choice that was never offered, spelled as the secret.
        format!(
            r#"{{"model":"m","answers":{{"desk":{{"type":"choice","choice":"{KEY}","probabilities":{{"billing":0.5,"shipping":0.5}},"confidence":0.5}}}}}}"#
        ),
        // A probability for an option never offered.
        format!(
            r#"{{"model":"m","answers":{{"desk":{{"type":"choice","choice":"billing","probabilities":{{"{HDR}":0.5}},"confidence":0.5}}}}}}"#
        ),
        // A score legend entry that is not a string.
        format!(
            r#"{{"model":"m","answers":{{"q":{{"type":"score","score":0,"legend":{{"{KEY}":1}},"confidence":1}}}}}}"#
        ),
        // A valid decision answering a question never asked, under the secret:
        // dropped with a warning (metric and log line).
        format!(
            r#"{{"model":"{KEY}","answers":{{"q":{{"type":"noul","noul":0.5}},"{HDR}":{{"type":"noul","noul":0.1}}}}}}"#
        ),
    ]
}

/// Error answers that echo the secrets.
fn hostile_statuses() -> Vec<Reply> {
    let echo = format!(r#"{{"error":{{"message":"key {KEY} header {HDR}"}}}}"#);
    vec![
        Reply::json(401, echo.clone()),
        Reply::json(403, echo.clone()),
        Reply::json(400, echo.clone()),
        Reply::json(500, echo.clone()),
        Reply::json(529, echo.clone()).with_header("retry-after", "0"),
        Reply::json(200, format!("not json {KEY} {HDR}")),
        Reply::Garbage(format!("{KEY} {HDR}\r\n\r\n").into_bytes()),
        Reply::ResetMidBody {
            status: 200,
            declared: 500,
            sent: KEY.as_bytes().to_vec(),
        },
        Reply::CloseMidBody {
            status: 200,
            declared: 500,
            sent: HDR.as_bytes().to_vec(),
        },
        Reply::StallMidBody {
            status: 200,
            declared: 500,
            sent: KEY.as_bytes().to_vec(),
        },
        Reply::json(200, format!(r#"{{"pad":"{KEY}{}"}}"#, "x".repeat(4096))),
    ]
}

/// Runs `judge` once per scripted reply, recording every error.
async fn sweep(judge: &Classifier, texts: &Texts, replies: usize) -> usize {
    let mut failures = 0;
    for i in 0..replies {
        let ctx = EvalContext::new().with_call_name(format!("call-{i}"));
        match judge.evaluate_ctx(ctx, json!({"n": i}), &questions()).await {
            // A decision is the backend's data, returned as sent: not searched.
            Ok(d) => texts.push(format!("decided {} answers", d.answers.len())),
            Err(e) => {
                failures += 1;
                texts.error(&e);
            }
        }
    }
    failures
}

fn systemone_options(server: &Server, texts: &Texts) -> ClassifierOptions {
    ClassifierOptions {
        base_url: server.base_url(),
        model: "jev-sweep".into(),
        api_key_env: KEY_ENV.into(),
        headers: secret_headers(),
        timeout_ms: 300,
        retries: -1,
        max_response_bytes: 1024,
        on_metric: Some(texts.metric_sink()),
        ..Default::default()
    }
}

#[tokio::test(flavor = "current_thread")]
async fn systemone_never_shows_a_secret() {
    set_secrets();
    let texts = Texts::default();
    let _guard = capture(&texts);
    let mut script = hostile_statuses();
    script.extend(hostile_decisions().into_iter().map(|b| Reply::json(200, b)));
    let n = script.len();
    let server = Server::start(script).await;
    let opts = systemone_options(&server, &texts);
    texts.push(format!("{opts:?}"));
    let judge = create_classifier(opts).unwrap();
    texts.push(format!("{judge:?}"));
    let failures = sweep(&judge, &texts, n).await;
    assert_eq!(
        failures,
        n - 2,
        "all but the two dropped-answer decisions fail"
    );

    let reqs = server.requests();
    assert_eq!(reqs.len(), n);
    assert_eq!(reqs[0].headers["authorization"], format!("Bearer {KEY}"));
    assert_eq!(
        reqs[0].headers["x-secret"], HDR,
        "the header really went out"
    );
    assert_eq!(reqs[0].headers["x-wrapped"], format!("token={HDR};"));
    let searched = texts.assert_clean();
    assert!(
        texts.any("[redacted]"),
        "echoed causes are scrubbed, not lost"
    );
    assert!(
        texts.any(r#"answer \"[redacted]\" answers no question that was asked; dropped"#),
        "the warning for an answer never asked is kept, scrubbed"
    );
    assert!(texts.any("event WARN"), "the tracing lines were captured");
    assert!(texts.any("metric MetricEvent"), "the metrics were captured");
    eprintln!("systemone sweep: {n} hostile answers, {searched} texts searched");
}

/// The chat client, called directly and as the Llm style, on both wires.
#[tokio::test(flavor = "current_thread")]
async fn the_chat_client_never_shows_a_secret() {
    set_secrets();
    let texts = Texts::default();
    let _guard = capture(&texts);
    for style in [Style::OpenAi, Style::Anthropic] {
        let reply_with = |text: &str| -> String {
            let text = serde_json::Value::from(text);
            match style {
                Style::OpenAi => format!(
                    r#"{{"model":"m","choices":[{{"message":{{"content":{text}}},"finish_reason":"stop"}}]}}"#
                ),
                _ => format!(
                    r#"{{"model":"m","content":[{{"type":"text","text":{text}}}],"stop_reason":"end_turn"}}"#
                ),
            }
        };
        let mut script = hostile_statuses();
        // A 200 that carries a provider error echoing the secrets.
        script.push(Reply::json(
            200,
            format!(r#"{{"error":{{"message":"upstream rejected {KEY} / {HDR}"}}}}"#),
        ));
        // A refusal quoting the secrets.
        script.push(Reply::json(
            200,
            match style {
                Style::OpenAi => format!(
                    r#"{{"model":"m","choices":[{{"message":{{"content":null,"refusal":"I will not repeat {KEY}"}},"finish_reason":"stop"}}]}}"#
                ),
                _ => format!(
                    r#"{{"model":"m","content":[{{"type":"text","text":"I will not repeat {HDR}"}}],"stop_reason":"refusal"}}"#
                ),
            },
        ));
        // Replies whose JSON smuggles the secrets into decoded strings.
        script.push(Reply::json(
            200,
            reply_with(&format!("no JSON here, only {KEY}")),
        ));
        script.push(Reply::json(
            200,
            reply_with(&format!(
                r#"{{"answers":{{"q":{{"type":"noul","noul":{KEY}}}}}}}"#
            )),
        ));
        for body in hostile_decisions() {
            script.push(Reply::json(200, reply_with(&body)));
        }
        let n = script.len();

        // Directly: every transport and wire error of `chat`.
        let server = Server::start(script.clone()).await;
        let opts = ClientOptions {
            base_url: server.base_url(),
            style,
            model: "chat-sweep".into(),
            api_key_env: KEY_ENV.into(),
            headers: secret_headers(),
            timeout_ms: 300,
            retries: -1,
            max_response_bytes: 1024,
            ..Default::default()
        };
        texts.push(format!("{opts:?}"));
        let client = create_client(opts).unwrap();
        texts.push(format!("{client:?}"));
        for _ in 0..n {
            match client
                .chat(&EvalContext::new(), &[ChatMessage::user("hi")])
                .await
            {
                Ok(reply) => texts.push(format!("{reply:?}").replace(KEY, "").replace(HDR, "")),
                Err(e) => texts.error(&e),
            }
        }
        let key_header = match style {
            Style::OpenAi => ("authorization", format!("Bearer {KEY}")),
            _ => ("x-api-key", KEY.to_string()),
        };
        assert_eq!(server.requests()[0].headers[key_header.0], key_header.1);

        // As the Llm style: the same script through `evaluate`.
        let server = Server::start(script).await;
        let client = create_client(ClientOptions {
            base_url: server.base_url(),
            style,
            model: "chat-sweep".into(),
            api_key_env: KEY_ENV.into(),
            headers: secret_headers(),
            timeout_ms: 300,
            retries: -1,
            max_response_bytes: 1024,
            ..Default::default()
        })
        .unwrap();
        let opts = ClassifierOptions {
            style: ClassifierStyle::Llm,
            client: Some(client),
            on_metric: Some(texts.metric_sink()),
            ..Default::default()
        };
        texts.push(format!("{opts:?}"));
        let judge = create_classifier(opts).unwrap();
        texts.push(format!("{judge:?}"));
        let failures = sweep(&judge, &texts, n).await;
        assert!(failures >= n - 2, "{style:?}: {failures} of {n} failed");
    }
    let searched = texts.assert_clean();
    assert!(texts.any("[redacted]"));
    eprintln!("chat sweep: {searched} texts searched");
}

/// A failing live classifier recorded on a tape: the saved file holds no secret.
#[tokio::test(flavor = "current_thread")]
async fn a_tape_of_failures_holds_no_secret() {
    set_secrets();
    let texts = Texts::default();
    let _guard = capture(&texts);
    let mut script = hostile_statuses();
    script.extend(
        hostile_decisions()
            .into_iter()
            .take(5)
            .map(|b| Reply::json(200, b)),
    );
    let n = script.len();
    let server = Server::start(script).await;
    let live = create_classifier(systemone_options(&server, &texts)).unwrap();
    let tape = Tape::new().with_note("failures of a hostile backend");
    let recorder = tape.recorder(live);
    let failures = sweep(&recorder, &texts, n).await;
    assert_eq!(failures, n - 1, "all but the dropped-answer decision fail");
    assert_eq!(tape.len(), n, "every outcome is on the tape");
    texts.push(format!("{tape:?}"));

    let dir = std::env::temp_dir().join(format!("toolnexus-it-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("failures.tape.json");
    tape.save(&path).unwrap();
    let saved = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(saved.contains("\"kind\": \"http\""), "{saved}");
    texts.push(saved);
    texts.assert_clean();
}
