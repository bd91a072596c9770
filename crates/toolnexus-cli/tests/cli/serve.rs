//! `toolnexus serve`: the library's SystemOne style talks to it over loopback
//! and gets the decisions of the style behind it; the official wire's errors,
//! encodings, multipart bodies, keys and upstream statuses.

use serde_json::{Value, json};
use toolnexus::classifier::{ClassifierOptions, ClassifierStyle, EvalContext, create_classifier};
use toolnexus::judge::Tape;

use crate::support::{
    Answer, DEMO_TAPE, Server, TempDir, Upstream, http, request, spam_questions, tn,
};

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
fn requests_are_validated_with_the_apis_shapes() {
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
    // The API's validation list: where, what, which code.
    let invalid = |body: &str| -> Vec<(String, String)> {
        let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
        v["detail"]
            .as_array()
            .unwrap_or_else(|| panic!("{body}"))
            .iter()
            .map(|d| {
                let loc: Vec<String> = d["loc"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| l.as_str().unwrap().to_string())
                    .collect();
                assert!(d["msg"].as_str().is_some_and(|m| !m.is_empty()), "{d}");
                (loc.join("."), d["type"].as_str().unwrap().to_string())
            })
            .collect()
    };

    // Not JSON: 422 json_invalid located by byte offset, as FastAPI answers (SPEC §16).
    let (status, body) = http(&addr, "POST", "/v1/systemone", b"{\"model\": ");
    assert_eq!(status, 422, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["detail"][0]["type"], "json_invalid", "{body}");
    assert_eq!(v["detail"][0]["loc"], json!(["body", 10]), "{body}");
    assert!(
        v["detail"][0]["msg"]
            .as_str()
            .is_some_and(|m| m.starts_with("JSON decode error")),
        "{body}"
    );

    let req = json!({"model": "jev-1.13", "questions": {"x": {"type": "vote", "instructions": "?"}}, "state": "s"});
    let (status, body) = http(&addr, "POST", "/v1/systemone", req.to_string().as_bytes());
    assert_eq!(status, 422);
    assert_eq!(
        invalid(&body),
        [("body.questions.x.type".into(), "union_tag_invalid".into())]
    );
    assert!(body.contains("unknown type \\\"vote\\\""), "{body}");

    let req = json!({"model": "jev-1.13", "questions": {"r": {"type": "score", "instructions": "?", "criteria": ["a"]}}, "state": "s"});
    let (status, body) = http(&addr, "POST", "/v1/systemone", req.to_string().as_bytes());
    assert_eq!(status, 422);
    assert_eq!(
        invalid(&body),
        [("body.questions.r.criteria".into(), "value_error".into())]
    );

    let req = json!({"model": 7, "questions": {}, "state": 1});
    let (status, body) = http(&addr, "POST", "/v1/systemone", req.to_string().as_bytes());
    assert_eq!(status, 422);
    assert_eq!(
        invalid(&body),
        [
            ("body.model".into(), "string_type".into()),
            ("body.state".into(), "state_type".into()),
            ("body.questions".into(), "too_short".into()),
        ]
    );

    let req = json!({"model": "m", "questions": spam_questions()});
    let (status, body) = http(&addr, "POST", "/v1/systemone", req.to_string().as_bytes());
    assert_eq!(status, 422);
    assert_eq!(invalid(&body), [("body.state".into(), "missing".into())]);

    let (status, body) = http(&addr, "POST", "/v1/systemone", b"[1, 2]");
    assert_eq!(status, 422);
    assert_eq!(
        invalid(&body),
        [("body".into(), "model_attributes_type".into())]
    );

    // A model this server does not list is named; the SDK default is an alias.
    let req = json!({"model": "gpt-9", "questions": spam_questions(), "state": "s"});
    let (status, body) = http(&addr, "POST", "/v1/systemone", req.to_string().as_bytes());
    assert_eq!(status, 422);
    assert_eq!(
        invalid(&body),
        [("body.model".into(), "value_error".into())]
    );
    assert!(body.contains("gpt-9"), "{body}");
    let req = json!({"model": "jev-latest", "questions": spam_questions(), "state": "unseen"});
    let (status, body) = http(&addr, "POST", "/v1/systemone", req.to_string().as_bytes());
    assert_eq!(status, 404, "accepted, then not recorded: {body}");

    // Top-level fields the style cannot honour are ignored as the hosted API
    // ignores them, but named in a header (SPEC §16); --strict-fields refuses them.
    let req = json!({"model": "jev-latest", "questions": spam_questions(), "state": "s",
        "seed": 7, "x_trace": "t-1"});
    let r = request(
        &addr,
        "POST",
        "/v1/systemone",
        &[],
        req.to_string().as_bytes(),
    );
    assert_eq!(r.status, 404, "ignored, then not recorded: {}", r.body);
    assert_eq!(r.header("x-toolnexus-ignored"), Some("seed, x_trace"));
    let mut strict = Server::start(dir.path(), &["--style", "static", "--strict-fields"]);
    let (status, body) = http(
        &strict.addr,
        "POST",
        "/v1/systemone",
        req.to_string().as_bytes(),
    );
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        invalid(&body)[0],
        ("body.seed".into(), "value_error".into())
    );
    assert!(body.contains("extra field \\\"seed\\\""), "{body}");
    strict.terminate();
    let req = json!({"questions": spam_questions(), "state": "see img",
        "assets": {"img": {"type": "image", "format": "png", "data_base64": "iVBORw0KGgo="}}});
    let (status, body) = http(&addr, "POST", "/v1/systemone", req.to_string().as_bytes());
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        invalid(&body),
        [("body.assets.img".into(), "value_error".into())]
    );

    let big = json!({"model": "m", "questions": spam_questions(), "state": "x".repeat(4096)});
    let (status, body) = http(&addr, "POST", "/v1/systemone", big.to_string().as_bytes());
    assert_eq!(status, 413, "{body}");
    assert_eq!(detail(&body).0, "request_too_large");

    let r = request(&addr, "GET", "/v1/models", &[], b"");
    assert_eq!(r.status, 200);
    let v = r.json();
    let models = v["models"].as_array().unwrap();
    assert_eq!(models[0]["name"], "jev-1.13");
    assert_eq!(models[1]["name"], "jev-latest");
    for m in models {
        let date = m["release_date"].as_str().unwrap();
        assert_eq!(date.len(), 10, "{date}");
        assert_eq!(&date[4..5], "-");
        assert!(!m["description"].as_str().unwrap().is_empty());
    }

    let r = request(&addr, "GET", "/v2/nothing", &[], b"");
    assert_eq!(r.status, 404);
    assert!(r.header("x-typesafe-request-id").is_some(), "{r:?}");
    let r = request(&addr, "GET", "/v1/systemone", &[], b"");
    assert_eq!(r.status, 405);
    assert_eq!(r.json()["detail"]["error_type"], "method_not_allowed");

    let stopped = server.terminate();
    assert_eq!(stopped.code(), Some(0), "graceful exit on SIGTERM");
}

/// A body for the demo tape's first triage recording.
fn demo_request() -> Value {
    let e = &Tape::load(DEMO_TAPE).unwrap().entries()[0];
    json!({
        "model": "jev-latest",
        "questions": toolnexus::classifier::questions_wire(&e.questions),
        "state": e.state,
    })
}

#[test]
fn every_response_has_its_own_request_id() {
    let dir = TempDir::new("serve-ids");
    let server = Server::start(dir.path(), &["--style", "static", "--tape", DEMO_TAPE]);
    let body = demo_request().to_string();
    let mut ids = std::collections::HashSet::new();
    for (method, path, body) in [
        ("POST", "/v1/systemone", body.as_bytes()),
        ("POST", "/v1/systemone", body.as_bytes()),
        ("POST", "/v1/systemone", b"nope".as_slice()),
        ("GET", "/v1/models", b"".as_slice()),
        ("GET", "/elsewhere", b"".as_slice()),
    ] {
        let r = request(
            &server.addr,
            method,
            path,
            &[("Content-Type", "application/json")],
            body,
        );
        let id = r
            .header("x-typesafe-request-id")
            .unwrap_or_else(|| panic!("{method} {path}: {r:?}"))
            .to_string();
        assert!(id.starts_with("req_") && id.len() == 28, "{id}");
        assert!(ids.insert(id), "ids are unique");
    }
}

fn zstd(data: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[test]
fn compressed_bodies_are_accepted_and_bombs_refused() {
    let dir = TempDir::new("serve-encodings");
    let server = Server::start(
        dir.path(),
        &[
            "--style",
            "static",
            "--tape",
            DEMO_TAPE,
            "--max-body-bytes",
            "65536",
        ],
    );
    let addr = server.addr.as_str();
    let plain = demo_request().to_string();
    let want = request(
        addr,
        "POST",
        "/v1/systemone",
        &[("Content-Type", "application/json")],
        plain.as_bytes(),
    );
    assert_eq!(want.status, 200, "{want:?}");
    for (enc, wire) in [
        ("zstd", zstd(plain.as_bytes())),
        ("gzip", gzip(plain.as_bytes())),
    ] {
        let r = request(
            addr,
            "POST",
            "/v1/systemone",
            &[
                ("Content-Type", "application/json"),
                ("Content-Encoding", enc),
            ],
            &wire,
        );
        assert_eq!(
            (r.status, r.body.as_str()),
            (200, want.body.as_str()),
            "{enc}"
        );
    }
    // 16 MiB of one state under a 64 KiB cap: small on the wire, 413 once decoded.
    let mut bomb = plain.clone().into_bytes();
    let at = plain.find("\"state\":").unwrap();
    let pad = format!("\"pad\":\"{}\",", "a".repeat(16 << 20));
    bomb.splice(at..at, pad.into_bytes());
    for (enc, wire) in [("zstd", zstd(&bomb)), ("gzip", gzip(&bomb))] {
        assert!(wire.len() < 65536, "{enc}: {}", wire.len());
        let r = request(
            addr,
            "POST",
            "/v1/systemone",
            &[
                ("Content-Type", "application/json"),
                ("Content-Encoding", enc),
            ],
            &wire,
        );
        assert_eq!(r.status, 413, "{enc}: {r:?}");
        assert_eq!(r.json()["detail"]["error_type"], "request_too_large");
    }
    let r = request(
        addr,
        "POST",
        "/v1/systemone",
        &[("Content-Encoding", "br")],
        b"x",
    );
    assert_eq!(r.status, 415, "{r:?}");
    let r = request(
        addr,
        "POST",
        "/v1/systemone",
        &[("Content-Encoding", "zstd")],
        plain.as_bytes(),
    );
    assert_eq!(r.status, 400, "{r:?}");
    assert!(r.body.contains("not valid zstd"), "{r:?}");
}

fn multipart(boundary: &str, json: &str, images: &[(&str, &[u8])]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(
        format!("--{boundary}\r\nContent-Disposition: form-data; name=\"request\"\r\nContent-Type: application/json\r\n\r\n{json}\r\n").as_bytes(),
    );
    for (name, data) in images {
        b.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{name}\"\r\nContent-Type: image/png\r\n\r\n").as_bytes(),
        );
        b.extend_from_slice(data);
        b.extend_from_slice(b"\r\n");
    }
    b.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    b
}

const PNG: &[u8] =
    b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";

/// An upstream that answers every question with a fixed answer of its type,
/// echoing the model asked for.
fn answering(got: &crate::support::Captured) -> Answer {
    let req = got.json();
    let mut answers = serde_json::Map::new();
    for (k, q) in req["questions"].as_object().unwrap() {
        let a = match q["type"].as_str().unwrap() {
            "noul" => json!({"type": "noul", "noul": 0.25}),
            "choice" => {
                let first = q["criteria"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .next()
                    .unwrap()
                    .clone();
                json!({"type": "choice", "choice": first, "confidence": 1.0, "probabilities": {first.clone(): 1.0}})
            }
            "box" => {
                json!({"type": "box", "box": {"top": 0.1, "bottom": 0.9, "left": 0.2, "right": 0.8}, "confidence": null})
            }
            _ => {
                json!({"type": "score", "score": 0.0, "confidence": 1.0, "legend": {"0": "a", "1": "b"}, "probabilities": {"0": 1.0, "1": 0.0}})
            }
        };
        answers.insert(k.clone(), a);
    }
    let model = format!("{}-20260915", req["model"].as_str().unwrap_or("none"));
    (
        200,
        vec![("x-typesafe-request-id", "req_upstream_1".to_string())],
        json!({"model": model, "answers": answers, "usage": {"input_tokens": 3, "output_tokens": 1}}).to_string(),
    )
}

#[test]
fn the_systemone_style_forwards_model_assets_and_extra_fields() {
    let dir = TempDir::new("serve-forward");
    let upstream = Upstream::start(answering);
    let server = Server::start_with(
        dir.path(),
        &[
            "--style",
            "systemone",
            "--base-url",
            &upstream.base_url,
            "--api-key-env",
            "UP_KEY",
        ],
        &[("UP_KEY", "sk-upstream-secret")],
    );
    let json = json!({
        "model": "jev-vision",
        "state": {"photo": "<image:1>"},
        "questions": {"dent": {"type": "box", "instructions": "Where is the dent?"},
                      "tone": {"type": "choice", "instructions": "Tone?", "criteria": {"calm": null, "angry": null}}},
        "assets": {"<image:1>": {"type": "image", "part": "asset-0"}},
        "priority": "low",
    })
    .to_string();
    let body = multipart("b0undary", &json, &[("asset-0", PNG)]);
    let r = request(
        &server.addr,
        "POST",
        "/v1/systemone",
        &[
            ("Content-Type", "multipart/form-data; boundary=b0undary"),
            ("Authorization", "Bearer sk-client-key"),
        ],
        &body,
    );
    assert_eq!(r.status, 200, "{r:?}");
    let d = r.json();
    assert_eq!(d["model"], "jev-vision-20260915");
    assert_eq!(d["answers"]["dent"]["box"]["bottom"], 0.9);
    assert_eq!(d["answers"]["dent"]["confidence"], Value::Null);
    assert_eq!(r.header("x-upstream-request-id"), Some("req_upstream_1"));
    assert_ne!(r.header("x-typesafe-request-id"), Some("req_upstream_1"));

    let seen = upstream.requests();
    assert_eq!(seen.len(), 1);
    let sent = seen[0].json();
    assert_eq!(sent["model"], "jev-vision");
    assert_eq!(sent["priority"], "low");
    assert_eq!(sent["state"], json!({"photo": "<image:1>"}));
    assert_eq!(sent["assets"]["<image:1>"]["format"], "png");
    let b64 = sent["assets"]["<image:1>"]["data_base64"].as_str().unwrap();
    let asset =
        toolnexus::classifier::Asset::from_base64(toolnexus::classifier::ImageFormat::Png, b64)
            .unwrap();
    assert_eq!(asset.data, PNG);
    assert_eq!(
        sent["questions"]["tone"]["criteria"],
        json!({"angry": null, "calm": null})
    );
    let headers = &seen[0].headers;
    assert_eq!(
        headers["authorization"], "Bearer sk-upstream-secret",
        "{headers:?}"
    );
    assert!(
        !headers.values().any(|v| v.contains("sk-client-key")),
        "the client's key is not forwarded"
    );
}

#[test]
fn upstream_statuses_pass_through_without_retries() {
    let dir = TempDir::new("serve-passthrough");
    let upstream = Upstream::start(|got| {
        let state = got.json()["state"].as_str().unwrap_or("").to_string();
        let status: u16 = state
            .strip_prefix("status:")
            .and_then(|s| s.parse().ok())
            .unwrap_or(200);
        let headers = match status {
            429 | 529 => vec![("Retry-After", "2".to_string())],
            _ => vec![],
        };
        if status == 200 {
            return answering(got);
        }
        (
            status,
            headers,
            json!({"detail": {"message": format!("upstream says {status}")}}).to_string(),
        )
    });
    let server = Server::start(
        dir.path(),
        &["--style", "systemone", "--base-url", &upstream.base_url],
    );
    let mut hits = 0;
    for status in [400u16, 401, 403, 404, 422, 429, 500, 503, 529] {
        let body = json!({"model": "jev-latest", "questions": spam_questions(), "state": format!("status:{status}")});
        let r = request(
            &server.addr,
            "POST",
            "/v1/systemone",
            &[],
            body.to_string().as_bytes(),
        );
        assert_eq!(r.status, status, "{r:?}");
        hits += 1;
        assert_eq!(
            upstream.requests().len(),
            hits,
            "{status}: serve did not retry"
        );
        let message = r.json()["detail"]["message"].as_str().unwrap().to_string();
        if status == 401 || status == 403 {
            assert!(message.contains("response body not shown"), "{message}");
        } else {
            assert_eq!(message, format!("upstream says {status}"));
        }
        match status {
            429 | 529 => assert_eq!(r.header("retry-after"), Some("2"), "{r:?}"),
            _ => assert_eq!(r.header("retry-after"), None, "{r:?}"),
        }
    }

    // --retries N turns the backend retries back on.
    let retrying = Server::start(
        dir.path(),
        &[
            "--style",
            "systemone",
            "--base-url",
            &upstream.base_url,
            "--retries",
            "1",
            "--timeout-ms",
            "2000",
        ],
    );
    let before = upstream.requests().len();
    let body = json!({"model": "jev-latest", "questions": spam_questions(), "state": "status:503"});
    let r = request(
        &retrying.addr,
        "POST",
        "/v1/systemone",
        &[],
        body.to_string().as_bytes(),
    );
    assert_eq!(r.status, 503);
    assert_eq!(upstream.requests().len() - before, 2, "one retry");

    // An unreachable backend is a 502.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let gone = Server::start(dir.path(), &["--style", "systemone", "--base-url", &dead]);
    let r = request(
        &gone.addr,
        "POST",
        "/v1/systemone",
        &[],
        body.to_string().as_bytes(),
    );
    assert_eq!(r.status, 502, "{r:?}");
}

#[test]
fn a_required_key_is_checked_and_never_shown() {
    let dir = TempDir::new("serve-key");
    let out = tn(
        dir.path(),
        &[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--require-key-env",
            "TN_SERVE_KEY_UNSET",
        ],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("TN_SERVE_KEY_UNSET is not set"),
        "{out:?}"
    );
    let mut cmd = crate::support::toolnexus(
        dir.path(),
        &[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--require-key-env",
            "TN_SERVE_KEY",
        ],
    );
    cmd.env("TN_SERVE_KEY", "  ");
    let out = crate::support::run(cmd);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("TN_SERVE_KEY is empty"), "{out:?}");

    let server = Server::start_with(
        dir.path(),
        &[
            "--style",
            "static",
            "--tape",
            DEMO_TAPE,
            "--require-key-env",
            "TN_SERVE_KEY",
        ],
        &[("TN_SERVE_KEY", "sk-serve-secret")],
    );
    let body = demo_request().to_string();
    for auth in [
        None,
        Some("Bearer sk-serve-secreT"),
        Some("Bearer sk-serve-secret-and-more"),
        Some("Basic sk-serve-secret"),
    ] {
        let headers: Vec<(&str, &str)> = auth.map(|a| ("Authorization", a)).into_iter().collect();
        for (method, path) in [
            ("POST", "/v1/systemone"),
            ("GET", "/v1/models"),
            ("GET", "/x"),
        ] {
            let r = request(&server.addr, method, path, &headers, body.as_bytes());
            assert_eq!(r.status, 401, "{auth:?} {path}: {r:?}");
            assert_eq!(r.json()["detail"]["error_type"], "authentication_error");
            assert!(r.header("x-typesafe-request-id").is_some());
            assert!(!r.body.contains("sk-serve"), "{r:?}");
        }
    }
    let r = request(
        &server.addr,
        "POST",
        "/v1/systemone",
        &[("Authorization", "Bearer sk-serve-secret")],
        body.as_bytes(),
    );
    assert_eq!(r.status, 200, "{r:?}");
}

#[test]
fn the_banner_gives_both_base_url_conventions() {
    let dir = TempDir::new("serve-banner");
    let mut cmd = crate::support::toolnexus(
        dir.path(),
        &["serve", "--addr", "127.0.0.1:0", "--style", "static"],
    );
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = crate::support::Guard(cmd.spawn().unwrap());
    let stdout = child.0.stdout.take().unwrap();
    let lines: Vec<String> = std::io::BufRead::lines(std::io::BufReader::new(stdout))
        .take(5)
        .map(Result::unwrap)
        .collect();
    let url = lines[0].strip_prefix("listening on ").unwrap().to_string();
    let all = lines.join("\n");
    assert!(
        all.contains(&format!("TypeSafeClient(base_url=\"{url}\")")),
        "{all}"
    );
    assert!(all.contains(&format!("TYPESAFE_BASE_URL={url}\n")), "{all}");
    assert!(all.contains(&format!("--base-url {url}/v1")), "{all}");
    assert!(all.contains("no authentication"), "{all}");
}

#[test]
fn over_max_concurrency_requests_are_shed_with_529_and_it_recovers() {
    let dir = TempDir::new("serve-shed");
    let server = Server::start(
        dir.path(),
        &[
            "--style",
            "static",
            "--tape",
            DEMO_TAPE,
            "--delay-ms",
            "400",
            "--max-concurrency",
            "2",
        ],
    );
    let body = demo_request().to_string();
    let replies: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (addr, body) = (server.addr.clone(), body.clone());
                s.spawn(move || {
                    request(
                        &addr,
                        "POST",
                        "/v1/systemone",
                        &[("Content-Type", "application/json")],
                        body.as_bytes(),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let ok = replies.iter().filter(|r| r.status == 200).count();
    let shed: Vec<_> = replies.iter().filter(|r| r.status == 529).collect();
    assert_eq!(ok + shed.len(), 8, "{replies:?}");
    assert!((1..=2).contains(&ok), "at most two in flight: {replies:?}");
    for r in &shed {
        assert_eq!(r.header("retry-after"), Some("1"), "{r:?}");
        let v = r.json();
        assert_eq!(v["detail"]["error_type"], "overloaded_error", "{v}");
        assert!(
            v["detail"]["message"]
                .as_str()
                .unwrap()
                .contains("--max-concurrency 2"),
            "{v}"
        );
    }
    // Once the flood has passed, it answers again.
    let r = request(
        &server.addr,
        "POST",
        "/v1/systemone",
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    );
    assert_eq!(r.status, 200, "{r:?}");
}

#[test]
fn serve_cache_answers_a_repeat_from_the_file() {
    let dir = TempDir::new("serve-cache");
    let cache = dir.join("c.db").display().to_string();
    let server = Server::start(
        dir.path(),
        &["--style", "static", "--tape", DEMO_TAPE, "--cache", &cache],
    );
    let body = demo_request().to_string();
    let ask = || {
        request(
            &server.addr,
            "POST",
            "/v1/systemone",
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        )
    };
    let first = ask();
    let second = ask();
    assert_eq!(
        (first.status, second.status),
        (200, 200),
        "{first:?} {second:?}"
    );
    assert_eq!(first.header("x-toolnexus-cache"), None);
    assert_eq!(second.header("x-toolnexus-cache"), Some("hit"));
    let (first, second) = (first.json(), second.json());
    assert_eq!(first["answers"], second["answers"]);
    assert_eq!(first["model"], second["model"]);
    // The hit spent nothing, and its usage says so.
    assert_eq!(second["usage"]["cost"], 0.0, "{second}");
    assert_eq!(second["usage"]["cost_source"], "cache", "{second}");
}

#[test]
fn a_fallback_chain_answers_when_the_primary_is_unavailable_and_not_on_a_4xx() {
    let dir = TempDir::new("serve-fallback");
    let down = Upstream::start(|got| {
        if got.json()["state"] == "bad" {
            (
                400,
                vec![],
                r#"{"detail":{"message":"bad state","error_type":"invalid_request_error"}}"#
                    .to_string(),
            )
        } else {
            (
                503,
                vec![],
                r#"{"detail":{"message":"down","error_type":"overloaded"}}"#.to_string(),
            )
        }
    });
    let spare = Upstream::start(|_| {
        (
            200,
            vec![],
            r#"{"model":"spare-1","answers":{"spam":{"type":"noul","noul":0.2}}}"#.to_string(),
        )
    });
    let server = Server::start(
        dir.path(),
        &[
            "--style",
            "systemone",
            "--base-url",
            &down.base_url,
            "--fallback-base-url",
            &spare.base_url,
        ],
    );
    let ask = |state: &str| {
        let body = json!({"questions": spam_questions(), "state": state}).to_string();
        request(
            &server.addr,
            "POST",
            "/v1/systemone",
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        )
    };
    let r = ask("hello");
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.json()["model"],
        "spare-1",
        "the decision names who answered"
    );
    assert_eq!(spare.requests().len(), 1);
    let r = ask("bad");
    assert_eq!(r.status, 400, "a 4xx is the caller's problem: {r:?}");
    assert_eq!(spare.requests().len(), 1, "the spare was not asked");

    let out = tn(
        dir.path(),
        &[
            "serve",
            "--style",
            "static",
            "--fallback-base-url",
            &spare.base_url,
        ],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--fallback-base-url"), "{}", out.stderr);
}
