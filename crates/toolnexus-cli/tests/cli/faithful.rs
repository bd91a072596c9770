//! SPEC §16: `serve --style systemone` forwards as sent. An order-sensitive
//! upstream gives the same answer asked directly and through serve: question,
//! option and state-key order, absent fields and `x_…` fields reach it as the
//! caller wrote them, and its answer comes back in its own order and form.

use serde_json::{Map, Value, json};

use crate::support::{Captured, Server, TempDir, Upstream, request};

/// The keys of an object in the order they were written.
fn keys(v: &Value) -> Vec<String> {
    v.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// An upstream whose answer depends on everything order-sensitive in the body:
/// each choice picks the option listed first, the answers come in the order the
/// questions were listed, a structured score level is echoed as an object, and
/// the model name spells the top-level, state and per-question field orders.
fn order_sensitive(got: &Captured) -> (u16, Vec<(&'static str, String)>, String) {
    let body: Value = serde_json::from_slice(&got.body).unwrap_or(Value::Null);
    let questions = &body["questions"];
    let mut answers = Map::new();
    let mut shape = vec![keys(&body).join(","), keys(&body["state"]).join(",")];
    for (key, q) in questions.as_object().into_iter().flatten() {
        shape.push(format!("{key}:{}", keys(q).join(",")));
        let answer = match q["type"].as_str() {
            Some("choice") => {
                let ids = keys(&q["criteria"]);
                let n = ids.len() as f64;
                // Weights n, n-1, …, 1 by position: the first listed wins.
                let total: f64 = (1..=ids.len()).map(|w| w as f64).sum();
                let probabilities: Map<String, Value> = ids
                    .iter()
                    .enumerate()
                    .map(|(i, id)| (id.clone(), json!((n - i as f64) / total)))
                    .collect();
                json!({"type": "choice", "choice": ids[0], "probabilities": probabilities, "confidence": 0.5})
            }
            Some("score") => {
                let levels = q["criteria"].as_array().cloned().unwrap_or_default();
                let legend: Map<String, Value> = levels
                    .iter()
                    .enumerate()
                    .map(|(i, l)| (i.to_string(), l.clone()))
                    .collect();
                let p = 1.0 / levels.len() as f64;
                let probabilities: Map<String, Value> = (0..levels.len())
                    .map(|i| (i.to_string(), json!(p)))
                    .collect();
                let score: f64 = (0..levels.len()).map(|i| i as f64 * p).sum();
                json!({"type": "score", "score": score, "legend": legend, "probabilities": probabilities, "confidence": 0.0})
            }
            _ => {
                json!({"type": "noul", "noul": if q.get("criteria").is_some() { 0.9 } else { 0.1 }})
            }
        };
        answers.insert(key.clone(), answer);
    }
    // A reported cost: serve adds nothing to it, so the answer can come back
    // byte for byte (a cost serve prices is spliced into the usage: cost.rs).
    let answer = json!({
        "model": shape.join(" | "),
        "answers": answers,
        "usage": {"input_tokens": 10, "output_tokens": 2, "cost": 0.00042},
    });
    (200, vec![], answer.to_string())
}

#[test]
fn serve_forwards_as_sent_and_answers_as_the_upstream_did() {
    let dir = TempDir::new("faithful");
    let upstream = Upstream::start(order_sensitive);
    let mut server = Server::start(
        dir.path(),
        &["--style", "systemone", "--base-url", &upstream.base_url],
    );
    // Not in sorted order anywhere; a noul with no criteria; a structured
    // score level; an `x_` field.
    let req = r##"{"state":{"zeta":"my card was charged twice","alpha":{"order":"#4471"}},"questions":{"tone":{"type":"choice","instructions":"What is the tone?","criteria":{"neutral":null,"angry":"upset, blaming","calm":"polite"}},"refund":{"type":"noul","instructions":"Refund?"},"urgency":{"type":"score","instructions":"How urgent?","criteria":["can wait",{"level":"today","why":"money"}]}},"model":"jev-1.13","x_trace":"t-1"}"##;
    let path = upstream.base_url.trim_end_matches("/v1").to_string();
    let upstream_addr = path.trim_start_matches("http://").to_string();
    let direct = request(&upstream_addr, "POST", "/v1/systemone", &[], req.as_bytes());
    let served = request(&server.addr, "POST", "/v1/systemone", &[], req.as_bytes());
    assert_eq!(direct.status, 200, "{}", direct.body);
    assert_eq!(served.status, 200, "{}", served.body);
    assert_eq!(served.body, direct.body, "the same answer, byte for byte");

    // The upstream saw the caller's bytes' structure both times.
    let seen = upstream.requests();
    assert_eq!(seen.len(), 2);
    let (a, b): (Value, Value) = (
        serde_json::from_slice(&seen[0].body).unwrap(),
        serde_json::from_slice(&seen[1].body).unwrap(),
    );
    assert_eq!(keys(&b), ["state", "questions", "model", "x_trace"]);
    assert_eq!(keys(&b["state"]), ["zeta", "alpha"]);
    assert_eq!(keys(&b["questions"]), ["tone", "refund", "urgency"]);
    assert_eq!(
        keys(&b["questions"]["tone"]["criteria"]),
        ["neutral", "angry", "calm"]
    );
    assert_eq!(
        keys(&b["questions"]["refund"]),
        ["type", "instructions"],
        "absent stays absent"
    );
    assert_eq!(a.to_string(), b.to_string());

    // The answer keeps the upstream's order and form: the first listed option,
    // the structured level an object, not a JSON string.
    let answer: Value = serde_json::from_str(&served.body).unwrap();
    assert_eq!(keys(&answer["answers"]), ["tone", "refund", "urgency"]);
    assert_eq!(answer["answers"]["tone"]["choice"], "neutral");
    assert_eq!(
        answer["answers"]["urgency"]["legend"]["1"]["level"],
        "today"
    );

    // The official SDK's quickstart question, as the SDK sends it: its null
    // descriptions listed calm first, so an order-sensitive model says calm.
    let quickstart = r#"{"model":"jev-latest","state":"I was charged twice. Please help.","questions":{"billing":{"type":"noul","instructions":"Is this about billing?"},"tone":{"type":"choice","instructions":"What is the tone?","criteria":{"calm":null,"angry":null}}}}"#;
    let direct = request(
        &upstream_addr,
        "POST",
        "/v1/systemone",
        &[],
        quickstart.as_bytes(),
    );
    let served = request(
        &server.addr,
        "POST",
        "/v1/systemone",
        &[],
        quickstart.as_bytes(),
    );
    assert_eq!(
        (direct.status, served.status),
        (200, 200),
        "{}",
        served.body
    );
    assert_eq!(served.body, direct.body);
    let answer: Value = serde_json::from_str(&served.body).unwrap();
    assert_eq!(answer["answers"]["tone"]["choice"], "calm");
    server.terminate();
}

#[test]
fn an_upstream_error_type_passes_through_unchanged() {
    let dir = TempDir::new("faithful-error");
    let upstream = Upstream::start(|_| {
        (
            429,
            vec![("retry-after", "0".to_string())],
            r#"{"detail":{"error_type":"rate_limit_error","message":"slow down"}}"#.to_string(),
        )
    });
    let mut server = Server::start(
        dir.path(),
        &["--style", "systemone", "--base-url", &upstream.base_url],
    );
    let req = json!({"model": "jev-1.13", "state": "s",
        "questions": {"spam": {"type": "noul", "instructions": "Spam?"}}});
    let r = request(
        &server.addr,
        "POST",
        "/v1/systemone",
        &[],
        req.to_string().as_bytes(),
    );
    assert_eq!(r.status, 429, "{}", r.body);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["detail"]["error_type"], "rate_limit_error", "{}", r.body);
    assert!(
        v["detail"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("slow down")),
        "{}",
        r.body
    );
    server.terminate();
}
