//! The System One server as a library: bound on loopback, asked through the
//! library's own System One style, stopped by the caller's future, and its
//! lines sent to the caller's log.

use std::sync::{Arc, Mutex};

use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use toolnexus::classifier::{ClassifierOptions, create_classifier, questions_from_wire};
use toolnexus::testing::{Reply, Server as Upstream};
use toolnexus_server::systemone::{ServeConfig, Server};
use toolnexus_server::{Backend, Log};

/// Keeps every line and warning, for the test to read.
#[derive(Default)]
struct Kept {
    lines: Mutex<Vec<String>>,
    warnings: Mutex<Vec<String>>,
}

impl Log for Kept {
    fn line(&self, line: &str) {
        self.lines.lock().unwrap().push(line.to_string());
    }

    fn warn(&self, text: &str) {
        self.warnings.lock().unwrap().push(text.to_string());
    }
}

fn decision() -> serde_json::Value {
    json!({
        "model": "jev-1.13",
        "answers": {"spam": {"type": "noul", "noul": 0.97}},
        "usage": {"input_tokens": 120, "output_tokens": 1},
    })
}

/// A server in front of a fake System One, running until the returned sender fires.
async fn serve(
    config: ServeConfig,
) -> (
    std::net::SocketAddr,
    Arc<Kept>,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<toolnexus_server::systemone::Stopped>,
    Upstream,
) {
    let upstream = Upstream::start([Reply::value(200, decision())]).await;
    let judge = create_classifier(ClassifierOptions {
        base_url: upstream.base_url(),
        ..Default::default()
    })
    .unwrap();
    let log = Arc::new(Kept::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = Server::on(
        listener,
        Backend::new(judge, "systemone", "cli"),
        config,
        log.clone(),
    )
    .unwrap();
    let addr = server.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));
    (addr, log, stop, running, upstream)
}

/// One raw HTTP/1.1 request with `Connection: close`; the whole response.
async fn raw(addr: std::net::SocketAddr, head: &str, body: &str) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "{head}\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}

#[tokio::test]
async fn a_server_answers_the_library_and_logs_each_request_to_the_callers_log() {
    let (addr, log, stop, running, upstream) = serve(ServeConfig::default()).await;
    let through = create_classifier(ClassifierOptions {
        base_url: format!("http://{addr}/v1"),
        ..Default::default()
    })
    .unwrap();
    let questions = questions_from_wire(&json!({
        "spam": {"type": "noul", "instructions": "Is this unsolicited bulk mail?"}
    }))
    .unwrap();
    let d = through
        .evaluate(json!("WIN A PRIZE NOW"), &questions)
        .await
        .unwrap();
    assert_eq!(d.noul("spam").unwrap().noul, 0.97);
    assert_eq!(upstream.count(), 1, "forwarded once");

    let models = raw(addr, "GET /v1/models HTTP/1.1", "").await;
    assert!(models.starts_with("HTTP/1.1 200"), "{models}");
    assert!(models.contains("x-typesafe-request-id: req_"), "{models}");
    assert!(
        models.contains("toolnexus serve, style systemone"),
        "{models}"
    );

    stop.send(()).unwrap();
    let stopped = running.await.unwrap();
    assert_eq!(stopped.cut, 0);
    let lines = log.lines.lock().unwrap().clone();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("serve: req_") && lines[0].contains(" POST \"/v1/systemone\" 200 "),
        "{lines:?}"
    );
    assert!(lines[1].contains(" GET \"/v1/models\" 200 "), "{lines:?}");
}

#[tokio::test]
async fn a_floating_alias_is_a_warning_to_the_log_or_under_pinned_a_422() {
    let body = json!({
        "model": "jev-latest",
        "state": "hi",
        "questions": {"spam": {"type": "noul", "instructions": "Spam?"}},
    })
    .to_string();

    let (addr, log, stop, running, _upstream) = serve(ServeConfig::default()).await;
    let answer = raw(addr, "POST /v1/systemone HTTP/1.1", &body).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let _ = stop.send(());
    running.await.unwrap();
    let warnings = log.warnings.lock().unwrap().clone();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("a request asked for \"jev-latest\", a floating alias"),
        "{warnings:?}"
    );

    let pinned = ServeConfig {
        pinned: true,
        ..Default::default()
    };
    let (addr, log, stop, running, upstream) = serve(pinned).await;
    let refused = raw(addr, "POST /v1/systemone HTTP/1.1", &body).await;
    assert!(refused.starts_with("HTTP/1.1 422"), "{refused}");
    assert!(
        refused.contains("is a floating alias and this server runs with --pinned"),
        "{refused}"
    );
    assert_eq!(upstream.count(), 0, "nothing was sent upstream");
    let _ = stop.send(());
    running.await.unwrap();
    assert!(log.warnings.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_bad_address_is_a_setting_and_a_taken_one_is_not() {
    let e = toolnexus_server::systemone::listen("nowhere")
        .await
        .unwrap_err();
    assert!(e.is_input(), "{e}");
    let taken = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let e = toolnexus_server::systemone::listen(&taken.local_addr().unwrap().to_string())
        .await
        .unwrap_err();
    assert!(!e.is_input(), "{e}");
    assert!(e.to_string().contains(": cannot listen: "), "{e}");
}

#[tokio::test]
async fn with_metrics_get_metrics_counts_the_calls_as_prometheus_text_and_without_it_is_404() {
    let body = json!({
        "model": "jev-1.13",
        "state": "hi",
        "questions": {"spam": {"type": "noul", "instructions": "Spam?"}},
    })
    .to_string();
    let with = ServeConfig {
        metrics: Some(toolnexus::metrics::Metrics::new()),
        ..Default::default()
    };
    let (addr, _log, stop, running, _upstream) = serve(with).await;
    for _ in 0..2 {
        let answer = raw(addr, "POST /v1/systemone HTTP/1.1", &body).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    let metrics = raw(addr, "GET /metrics HTTP/1.1", "").await;
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    assert!(
        metrics.contains("content-type: text/plain; version=0.0.4"),
        "{metrics}"
    );
    for line in [
        "toolnexus_requests_total{style=\"systemone\",model=\"jev-1.13\",outcome=\"ok\"} 2\n",
        "toolnexus_answers_total{type=\"noul\"} 2\n",
        "toolnexus_tokens_total{direction=\"input\"} 240\n",
        "toolnexus_request_duration_seconds_count 2\n",
    ] {
        assert!(metrics.contains(line), "{line} in {metrics}");
    }
    let _ = stop.send(());
    running.await.unwrap();

    let (addr, _log, stop, running, _upstream) = serve(ServeConfig::default()).await;
    let none = raw(addr, "GET /metrics HTTP/1.1", "").await;
    assert!(none.starts_with("HTTP/1.1 404"), "{none}");
    let _ = stop.send(());
    running.await.unwrap();
}
