//! `toolnexus serve`: the library's SystemOne style talks to it over loopback
//! and gets the decisions of the style behind it; bad requests get 400 / 413.

use serde_json::{Value, json};
use toolnexus::classifier::{ClassifierOptions, ClassifierStyle, EvalContext, create_classifier};
use toolnexus::judge::Tape;

use crate::support::{DEMO_TAPE, Server, TempDir, http, spam_questions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_systemone_style_gets_the_decisions_of_the_style_behind_the_server() {
    let dir = TempDir::new("serve-parity");
    for style in ["tape", "static"] {
        let server = Server::start(
            dir.path(),
            &["--style", style, "--tape", DEMO_TAPE, "--call", "triage"],
        );
        let remote = create_classifier(ClassifierOptions {
            style: ClassifierStyle::SystemOne,
            base_url: format!("{}/v1", server.url),
            model: "jev-1.13".into(),
            retries: -1,
            ..Default::default()
        })
        .unwrap();
        let local = Tape::load(DEMO_TAPE).unwrap().replayer();
        let entries: Vec<_> = Tape::load(DEMO_TAPE)
            .unwrap()
            .entries()
            .into_iter()
            .filter(|e| e.call_name == "triage")
            .collect();
        assert_eq!(entries.len(), 4);
        for e in entries {
            let ctx = EvalContext::new().with_call_name("triage");
            let want = local
                .evaluate_ctx(ctx.clone(), e.state.clone(), &e.questions)
                .await
                .unwrap();
            let got = remote
                .evaluate_ctx(ctx, e.state.clone(), &e.questions)
                .await
                .unwrap();
            assert_eq!(got, want, "{style}: state {}", e.state);
        }
        // A state the tape never saw: the server says 404, the client names it.
        let qs = entries_questions();
        let e = remote.evaluate(json!("unseen"), &qs).await.unwrap_err();
        assert_eq!(e.status(), Some(404), "{e}");
    }
}

fn entries_questions() -> toolnexus::classifier::Questions {
    Tape::load(DEMO_TAPE).unwrap().entries()[0]
        .questions
        .clone()
}

#[test]
fn requests_are_validated_with_a_detail_body() {
    let dir = TempDir::new("serve-validate");
    let mut server = Server::start(
        dir.path(),
        &["--style", "static", "--max-body-bytes", "2048"],
    );
    let addr = server.addr.clone();
    let detail = |body: &str| -> (String, String) {
        let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
        (
            v["detail"]["error_type"].as_str().unwrap().to_string(),
            v["detail"]["message"].as_str().unwrap().to_string(),
        )
    };

    let (status, body) = http(&addr, "POST", "/v1/systemone", b"{\"model\": ");
    assert_eq!(status, 400);
    let (kind, message) = detail(&body);
    assert_eq!(kind, "invalid_json");
    assert!(message.contains("invalid JSON at line 1"), "{message}");

    let req = json!({"model": "m", "questions": {"x": {"type": "vote", "instructions": "?"}}, "state": 1});
    let (status, body) = http(&addr, "POST", "/v1/systemone", req.to_string().as_bytes());
    assert_eq!(status, 400);
    let (kind, message) = detail(&body);
    assert_eq!(kind, "invalid_question");
    assert!(message.contains("question \"x\""), "{message}");

    let req = json!({"model": "m", "questions": {"r": {"type": "score", "instructions": "?", "criteria": ["a"]}}, "state": 1});
    let (status, body) = http(&addr, "POST", "/v1/systemone", req.to_string().as_bytes());
    assert_eq!(
        (status, detail(&body).0.as_str()),
        (400, "invalid_question")
    );

    let req = json!({"model": "m", "questions": {}, "state": 1});
    let (status, body) = http(&addr, "POST", "/v1/systemone", req.to_string().as_bytes());
    assert_eq!(
        (status, detail(&body).0.as_str()),
        (400, "invalid_question")
    );

    let req = json!({"model": "m", "questions": spam_questions()});
    let (status, body) = http(&addr, "POST", "/v1/systemone", req.to_string().as_bytes());
    assert_eq!(status, 400);
    assert_eq!(detail(&body).1, "missing \"state\"");

    let big = json!({"model": "m", "questions": spam_questions(), "state": "x".repeat(4096)});
    let (status, body) = http(&addr, "POST", "/v1/systemone", big.to_string().as_bytes());
    assert_eq!(status, 413, "{body}");
    assert_eq!(detail(&body).0, "request_too_large");

    let (status, body) = http(&addr, "GET", "/v1/models", b"");
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["data"][0]["id"], "jev-1.13");

    let (status, _) = http(&addr, "GET", "/v2/nothing", b"");
    assert_eq!(status, 404);

    let stopped = server.terminate();
    assert_eq!(stopped.code(), Some(0), "graceful exit on SIGTERM");
}
