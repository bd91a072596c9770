//! `--otel` and the `OTEL_*` variables: a command that evaluates exports its
//! calls to the collector named, one that does not evaluates exports nothing;
//! a guard call carries its verdict, serve continues a caller's trace, and a
//! collector that never answers holds no exit for long.

use std::io::Write;
use std::net::TcpListener;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{
    Out, Server, TempDir, Upstream, collect, request, run, spam_questions, toolnexus,
};

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

/// `eval` of a spam state against the System One server at `base_url`.
fn eval_spam<'a>(base_url: &'a str, questions: &'a str) -> Vec<&'a str> {
    vec![
        "eval",
        "--style",
        "systemone",
        "--base-url",
        base_url,
        "--questions",
        questions,
        "--state",
        "\"WIN A PRIZE\"",
    ]
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
    let mut cmd = toolnexus(dir.path(), &eval_spam(&upstream.base_url, &questions));
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

#[test]
fn otel_sdk_disabled_turns_the_export_off_and_the_call_still_runs() {
    let dir = TempDir::new("otel-disabled");
    let upstream = system_one();
    let collector = Upstream::start(|_| (200, vec![], String::new()));
    let endpoint = collector.base_url.trim_end_matches("/v1").to_string();
    let questions = spam_questions().to_string();
    for flag in [None, Some("--otel")] {
        let mut args = eval_spam(&upstream.base_url, &questions);
        args.extend(flag);
        let mut cmd = toolnexus(dir.path(), &args);
        cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
            .env("OTEL_SDK_DISABLED", "true");
        let out = run(cmd);
        assert_eq!(out.code, 0, "{out:?}");
        assert!(out.stdout.contains("spam"), "{out:?}");
        // Asked for by name, the export says why there is none.
        assert_eq!(
            out.stderr.contains("OTEL_SDK_DISABLED"),
            flag.is_some(),
            "{out:?}"
        );
    }
    assert!(collector.requests().is_empty(), "nothing is exported");
}

/// The spans' bytes a collector was sent.
fn traces(collector: &Upstream) -> Vec<u8> {
    collector
        .requests()
        .iter()
        .filter(|r| r.path == "/v1/traces")
        .flat_map(|r| r.body.clone())
        .collect()
}

fn has_bytes(body: &[u8], needle: &[u8]) -> bool {
    body.windows(needle.len()).any(|w| w == needle)
}

/// A Claude Code PreToolUse hook input for a Bash command.
fn bash_hook(command: &str) -> String {
    json!({
        "session_id": "s-otel",
        "cwd": "/home/dev/shop",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": "toolu_otel",
    })
    .to_string()
}

/// Runs `toolnexus guard ARGS` on `stdin` with the export on to `endpoint`,
/// no model, and a home of its own; returns what it printed and how long the
/// process took to exit.
fn guard(dir: &TempDir, args: &[&str], stdin: &str, endpoint: &str) -> (Out, Duration) {
    let mut all = vec!["guard"];
    all.extend_from_slice(args);
    let mut cmd = toolnexus(dir.path(), &all);
    cmd.env("HOME", dir.path())
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("TOOLNEXUS_MODEL_DIR", dir.join("no-model"))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env_remove("TOOLNEXUS_GUARD_FAULT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd.spawn().expect("spawn toolnexus guard");
    let mut pipe = child.stdin.take().unwrap();
    pipe.write_all(stdin.as_bytes()).unwrap();
    drop(pipe);
    let out = collect(child);
    (out, started.elapsed())
}

/// The hook's permission decision, from its one line of JSON.
fn decision(out: &Out) -> String {
    assert_eq!(out.code, 0, "a hook exits 0: {out:?}");
    let v: Value = serde_json::from_str(out.stdout.trim()).expect("one JSON answer");
    v["hookSpecificOutput"]["permissionDecision"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_guard_call_carries_its_verdict_whether_a_rule_or_the_judge_decided() {
    let dir = TempDir::new("otel-guard");
    let collector = Upstream::start(|_| (200, vec![], String::new()));
    let endpoint = collector.base_url.trim_end_matches("/v1").to_string();

    // A rule settles it: no judge, so the guard call is a span of its own.
    let (out, _) = guard(
        &dir,
        &[],
        &bash_hook("git push --force origin main"),
        &endpoint,
    );
    assert_eq!(decision(&out), "deny");
    let sent = traces(&collector);
    for needle in [
        "guard Bash",
        "toolnexus.guard.verdict",
        "deny",
        "toolnexus.guard.rule",
        "force-push",
        "toolnexus.guard.decided_by",
        "toolnexus.guard.judge_asked",
    ] {
        assert!(
            has_bytes(&sent, needle.as_bytes()),
            "the span holds {needle}"
        );
    }
    assert!(
        !has_bytes(&sent, b"origin main"),
        "the command is not exported"
    );
    assert!(!has_bytes(&sent, b"gen_ai.operation.name"), "no judge span");

    // The judge answers: its span carries the verdict it led to.
    let judge = Upstream::start(|_| {
        let body = json!({
            "model": "jev-guard-otel",
            "answers": {
                "destructive": {"type": "noul", "noul": 0.01},
                "exfiltration": {"type": "noul", "noul": 0.01},
                "secrets": {"type": "noul", "noul": 0.01},
                "outside_project": {"type": "noul", "noul": 0.01},
                "risk": {"type": "score", "score": 0.0, "confidence": 0.9,
                         "probabilities": {"0": 0.97, "1": 0.01, "2": 0.01, "3": 0.01, "4": 0.0}},
            },
            "usage": {"input_tokens": 40, "output_tokens": 0}
        });
        (200, vec![], body.to_string())
    });
    let before = collector.requests().len();
    let (out, _) = guard(
        &dir,
        &["--server", &judge.base_url],
        &bash_hook("ls -la src"),
        &endpoint,
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.trim().is_empty(), "an allow is silent: {out:?}");
    let sent: Vec<u8> = collector.requests()[before..]
        .iter()
        .filter(|r| r.path == "/v1/traces")
        .flat_map(|r| r.body.clone())
        .collect();
    for needle in [
        "gen_ai.operation.name",
        "jev-guard-otel",
        "toolnexus.guard.verdict",
        "allow",
        "judge",
    ] {
        assert!(
            has_bytes(&sent, needle.as_bytes()),
            "the span holds {needle}"
        );
    }
    assert!(!has_bytes(&sent, b"guard Bash"), "one span: the judge's");
    assert!(!has_bytes(&sent, b"ls -la"), "the command is not exported");
}

/// A collector that accepts connections and never answers: each connection
/// is held open, unread, until the test ends.
fn black_hole() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming() {
            held.push(conn);
        }
    });
    format!("http://{addr}")
}

/// The exit waits for the collector a bounded time: 200 ms for the guard's
/// hook, 1 s for other commands. The bound asserted is a hang guard (the
/// SDK alone would wait 10 s for the HTTP timeout), not a speed claim.
#[test]
fn a_collector_that_never_answers_holds_the_exit_only_a_bounded_time() {
    let dir = TempDir::new("otel-black-hole");
    let endpoint = black_hole();
    let (out, took) = guard(
        &dir,
        &[],
        &bash_hook("git push --force origin main"),
        &endpoint,
    );
    assert_eq!(decision(&out), "deny");
    assert!(took < Duration::from_secs(5), "guard took {took:?}");
    assert!(
        out.stderr
            .contains(&format!("otel: the collector at {endpoint}"))
            && out.stderr.contains("did not answer within 200 ms"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("1 span not delivered"),
        "{}",
        out.stderr
    );

    let upstream = system_one();
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
    let started = Instant::now();
    let out = run(cmd);
    let took = started.elapsed();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(took < Duration::from_secs(5), "eval took {took:?}");
    assert!(
        out.stderr.contains("did not answer within 1000 ms"),
        "{}",
        out.stderr
    );
}

/// A caller's W3C `traceparent` is continued: the call's span has the
/// caller's trace id and the caller's span as its parent.
#[test]
fn serve_continues_the_trace_of_the_request() {
    let dir = TempDir::new("otel-serve-trace");
    let collector = Upstream::start(|_| (200, vec![], String::new()));
    let endpoint = collector.base_url.trim_end_matches("/v1").to_string();
    let upstream = system_one();
    let mut server = Server::start_with(
        dir.path(),
        &["--style", "systemone", "--base-url", &upstream.base_url],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("TYPESAFE_API_KEY", "sk-otel-cli-5e2a"),
        ],
    );
    let body = json!({"questions": spam_questions(), "state": "hello"}).to_string();
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent = "00f067aa0ba902b7";
    let r = request(
        &server.addr,
        "POST",
        "/v1/systemone",
        &[
            ("Content-Type", "application/json"),
            ("traceparent", &format!("00-{trace}-{parent}-01")),
        ],
        body.as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // Without a header, or with a broken one, the call starts a trace of its own.
    let r = request(
        &server.addr,
        "POST",
        "/v1/systemone",
        &[
            ("Content-Type", "application/json"),
            ("traceparent", "00-not-a-trace-01"),
        ],
        body.as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // The export's last flush comes as serve stops.
    assert!(server.terminate().success());
    let sent = traces(&collector);
    let bytes = |hex: &str| -> Vec<u8> {
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect()
    };
    assert!(has_bytes(&sent, &bytes(trace)), "the caller's trace id");
    assert!(
        has_bytes(&sent, &bytes(parent)),
        "the caller's span as parent"
    );
    let spans = sent
        .windows(b"gen_ai.operation.name".len())
        .filter(|w| *w == b"gen_ai.operation.name")
        .count();
    assert_eq!(spans, 2, "a span per request");
}
