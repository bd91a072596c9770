//! `--otel` and the `OTEL_*` variables: a command that evaluates exports its
//! calls to the collector named, one that does not evaluates exports nothing.

use serde_json::json;

use crate::support::{TempDir, Upstream, run, spam_questions, toolnexus};

fn system_one() -> Upstream {
    Upstream::start(|_| {
        (
            200,
            vec![],
            json!({
                "model": "jev-1.13",
                "answers": {"spam": {"type": "noul", "noul": 0.9}},
                "usage": {"input_tokens": 12, "output_tokens": 1}
            })
            .to_string(),
        )
    })
}

fn has(body: &[u8], needle: &str) -> bool {
    body.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn eval_exports_its_call_to_the_collector_the_environment_names() {
    let dir = TempDir::new("otel-eval");
    let upstream = system_one();
    let collector = Upstream::start(|_| (200, vec![], String::new()));
    let endpoint = collector.base_url.trim_end_matches("/v1").to_string();
    let questions = spam_questions().to_string();
    let mut cmd = toolnexus(
        dir.path(),
        &[
            "eval",
            "--style",
            "systemone",
            "--base-url",
            &upstream.base_url,
            "--questions",
            &questions,
            "--state",
            "\"WIN A PRIZE\"",
        ],
    );
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("TYPESAFE_API_KEY", "sk-otel-cli-5e2a");
    let out = run(cmd);
    assert_eq!(out.code, 0, "{out:?}");
    let sent = collector.requests();
    let traces: Vec<u8> = sent
        .iter()
        .filter(|r| r.path == "/v1/traces")
        .flat_map(|r| r.body.clone())
        .collect();
    assert!(has(&traces, "gen_ai.evaluation.result"), "{sent:?}");
    assert!(has(&traces, "jev-1.13") && has(&traces, "spam"));
    assert!(
        !has(&traces, "WIN A PRIZE"),
        "no state without --otel-content"
    );
    assert!(
        sent.iter().all(|r| !has(&r.body, "sk-otel-cli-5e2a")),
        "the key is never exported"
    );
    assert!(
        sent.iter().any(|r| r.path == "/v1/metrics"),
        "the metrics are sent when the command ends"
    );
}

#[test]
fn a_command_that_does_not_evaluate_exports_nothing() {
    let dir = TempDir::new("otel-lint");
    let collector = Upstream::start(|_| (200, vec![], String::new()));
    let questions = dir.write("q.json", &spam_questions().to_string());
    let mut cmd = toolnexus(dir.path(), &["lint", &questions, "--otel"]);
    cmd.env(
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        collector.base_url.trim_end_matches("/v1"),
    );
    let out = run(cmd);
    assert!(out.code <= 1, "lint ran: {out:?}");
    assert!(collector.requests().is_empty());
}
