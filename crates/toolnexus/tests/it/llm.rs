//! The chat client and the Llm style against real HTTP servers on 127.0.0.1:0.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use toolnexus::classifier::{
    Classifier, ClassifierError, ClassifierOptions, ClassifierStyle, EvalContext, MetricEvent,
    NoulQuestion, Questions, create_classifier,
};
use toolnexus::client::{ChatMessage, Client, ClientOptions, Style, create_client};
use toolnexus::testing::three_questions;

use crate::support::{Reply, Request, Server, suite_env};

/// Every test here finishes in milliseconds; this only bounds a hang.
const HANG_GUARD: Duration = Duration::from_secs(20);

fn state() -> Value {
    json!({"message": "I was charged twice, please refund one", "tier": "gold"})
}

const ANSWERS: &str = r#"{"answers":{
  "refund":{"type":"noul","noul":0.94},
  "desk":{"type":"choice","choice":"billing","probabilities":{"billing":0.9,"shipping":0.1},"confidence":0.85},
  "urgency":{"type":"score","score":1.2,"legend":{"0":"can wait","1":"today","2":"now"},
             "probabilities":{"0":0.1,"1":0.6,"2":0.3},"confidence":0.6}}}"#;

fn openai_reply(text: &str, model: Option<&str>, finish: &str, usage: Value) -> Value {
    let mut v = json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": usage,
    });
    if let Some(m) = model {
        v["model"] = json!(m);
    }
    v
}

fn anthropic_reply(text: &str, stop: &str) -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test-1",
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop,
        "usage": {"input_tokens": 400, "output_tokens": 60},
    })
}

fn options(base_url: &str, style: Style, key_env: &str) -> ClientOptions {
    ClientOptions {
        base_url: base_url.to_string(),
        style,
        model: "test-model".into(),
        api_key_env: key_env.into(),
        retry_base_ms: 1,
        ..Default::default()
    }
}

fn llm(client: Client) -> Classifier {
    create_classifier(ClassifierOptions {
        style: ClassifierStyle::Llm,
        client: Some(client),
        ..Default::default()
    })
    .unwrap()
}

async fn evaluate(judge: &Classifier) -> Result<toolnexus::classifier::Decision, ClassifierError> {
    tokio::time::timeout(HANG_GUARD, judge.evaluate(state(), &three_questions()))
        .await
        .expect("the call hung")
}

fn user_content(r: &Request) -> String {
    r.json()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn openai_request_carries_model_messages_and_bearer_key() {
    suite_env("TOOLNEXUS_IT_LLM_KEY_OPENAI", "sk-sentinel-openai-41d9");
    let text = format!("Here is my judgment:\n```json\n{ANSWERS}\n```\nHope that helps {{:");
    let server = Server::start(vec![Reply::value(
        200,
        openai_reply(
            &text,
            Some("test-model-2025-06-01"),
            "stop",
            json!({"prompt_tokens": 321, "completion_tokens": 45, "total_tokens": 366}),
        ),
    )])
    .await;
    let judge = llm(create_client(options(
        &server.base_url(),
        Style::OpenAi,
        "TOOLNEXUS_IT_LLM_KEY_OPENAI",
    ))
    .unwrap());
    assert_eq!(judge.model(), "test-model");
    let d = evaluate(&judge).await.unwrap();

    let reqs = server.requests();
    assert_eq!(reqs.len(), 1, "one chat completion for all questions");
    let r = &reqs[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(r.headers["authorization"], "Bearer sk-sentinel-openai-41d9");
    assert_eq!(r.headers["content-type"], "application/json");
    assert!(!r.headers.contains_key("x-api-key"));
    assert!(!r.headers.contains_key("anthropic-version"));
    assert_eq!(r.json()["model"], "test-model");
    assert!(r.json().get("max_tokens").is_none(), "omitted unless set");
    let body = r.json();
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user"]);
    let user = user_content(r);
    for needle in [
        r#"- "billing": money moved or should move"#,
        r#"- "shipping": a parcel is late, lost or damaged"#,
        "- 0: can wait\n- 1: today\n- 2: now",
        "true when: they want a refund or a chargeback",
        r#"{"type":"choice","choice":id,"probabilities":{id:p,...},"confidence":c}"#,
        r#"{"message":"I was charged twice, please refund one","tier":"gold"}"#,
    ] {
        assert!(user.contains(needle), "prompt lacks {needle:?}:\n{user}");
    }

    assert_eq!(d.model, "test-model-2025-06-01", "what actually answered");
    assert!(!d.calibrated);
    assert_eq!(
        (d.usage.input_tokens, d.usage.output_tokens, d.usage.cost),
        (321, 45, None)
    );
    assert_eq!(d.noul("refund").unwrap().noul, 0.94);
    let desk = d.choice("desk").unwrap();
    assert_eq!(
        (desk.choice.as_str(), desk.confidence, desk.near_uniform),
        ("billing", 0.85, false)
    );
    let urgency = d.score("urgency").unwrap();
    assert_eq!(urgency.score, 1.2);
    assert_eq!(urgency.levels(), ["can wait", "today", "now"]);
}

#[tokio::test]
async fn anthropic_request_uses_x_api_key_and_version() {
    suite_env("TOOLNEXUS_IT_LLM_KEY_ANTHROPIC", "sk-ant-sentinel-77c1");
    let server = Server::start(vec![Reply::value(
        200,
        anthropic_reply(ANSWERS, "end_turn"),
    )])
    .await;
    let client = create_client(ClientOptions {
        temperature: Some(0.0),
        ..options(
            &server.base_url(),
            Style::Anthropic,
            "TOOLNEXUS_IT_LLM_KEY_ANTHROPIC",
        )
    })
    .unwrap();
    let d = evaluate(&llm(client)).await.unwrap();

    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.headers["x-api-key"], "sk-ant-sentinel-77c1");
    assert_eq!(r.headers["anthropic-version"], "2023-06-01");
    assert!(!r.headers.contains_key("authorization"));
    assert_eq!(r.json()["model"], "test-model");
    assert_eq!(
        r.json()["max_tokens"],
        4096,
        "Anthropic requires max_tokens"
    );
    assert_eq!(r.json()["temperature"], 0);
    assert!(
        r.json()["system"]
            .as_str()
            .unwrap()
            .contains("System One classifier")
    );
    let body = r.json();
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user"], "the system prompt is a top-level field");
    assert!(user_content(r).contains("- 2: now"));

    assert_eq!(d.model, "claude-test-1");
    assert!(!d.calibrated);
    assert_eq!(
        (d.usage.input_tokens, d.usage.output_tokens, d.usage.cost),
        (400, 60, None)
    );
    assert_eq!(d.choice("desk").unwrap().choice, "billing");
}

#[tokio::test]
async fn no_key_header_when_the_variable_is_unset_or_unnamed() {
    for (style, env) in [
        (Style::OpenAi, "TOOLNEXUS_IT_LLM_NEVER_SET_9QX"),
        (Style::Anthropic, "TOOLNEXUS_IT_LLM_NEVER_SET_9QX"),
        (Style::OpenAi, ""),
    ] {
        let reply = match style {
            Style::OpenAi => openai_reply(ANSWERS, Some("m"), "stop", json!({})),
            _ => anthropic_reply(ANSWERS, "end_turn"),
        };
        let server = Server::start(vec![Reply::value(200, reply)]).await;
        evaluate(&llm(
            create_client(options(&server.base_url(), style, env)).unwrap()
        ))
        .await
        .unwrap();
        let r = &server.requests()[0];
        assert!(!r.headers.contains_key("authorization"), "{style} {env:?}");
        assert!(!r.headers.contains_key("x-api-key"), "{style} {env:?}");
    }
}

#[tokio::test]
async fn provider_cost_is_kept_and_the_model_falls_back_to_the_clients() {
    let server = Server::start(vec![Reply::value(
        200,
        openai_reply(
            ANSWERS,
            None,
            "stop",
            json!({"prompt_tokens": 10, "completion_tokens": 5, "cost": 0.00042}),
        ),
    )])
    .await;
    let d = evaluate(&llm(create_client(options(
        &server.base_url(),
        Style::OpenAi,
        "",
    ))
    .unwrap()))
    .await
    .unwrap();
    assert_eq!(d.model, "test-model");
    assert_eq!(d.usage.cost, Some(0.00042));
}

#[tokio::test]
async fn chat_returns_text_usage_and_finish_reason() {
    let server = Server::start(vec![Reply::value(
        200,
        openai_reply(
            "Paris",
            Some("m-1"),
            "stop",
            json!({"prompt_tokens": 12, "completion_tokens": 1}),
        ),
    )])
    .await;
    let client = create_client(ClientOptions {
        max_tokens: 8,
        request_params: json!({"seed": 7}).as_object().unwrap().clone(),
        ..options(&server.base_url(), Style::OpenAi, "")
    })
    .unwrap();
    let reply = client
        .chat(
            &EvalContext::new(),
            &[
                ChatMessage::system("One word."),
                ChatMessage::user("Capital of France?"),
            ],
        )
        .await
        .unwrap();
    assert_eq!(reply.text, "Paris");
    assert_eq!(reply.model, "m-1");
    assert_eq!(reply.finish_reason.as_deref(), Some("stop"));
    assert!(reply.refusal.is_none() && !reply.is_truncated());
    assert_eq!(
        (reply.usage.input_tokens, reply.usage.output_tokens),
        (12, 1)
    );
    let body = &server.requests()[0].json();
    assert_eq!(body["max_tokens"], 8);
    assert_eq!(body["seed"], 7, "request_params are merged");
    assert_eq!(
        body["messages"],
        json!([{"role": "system", "content": "One word."}, {"role": "user", "content": "Capital of France?"}])
    );
}

#[tokio::test]
async fn unusable_replies_are_clear_errors() {
    let long_refusal = format!("I can't help with that. {}", "Really. ".repeat(40));
    let cases: Vec<(Style, Value, String)> = vec![
        (
            Style::OpenAi,
            openai_reply(
                "I think the customer wants a refund.",
                Some("m"),
                "stop",
                json!({}),
            ),
            "classifier: llm: reply holds no JSON object".into(),
        ),
        (
            Style::OpenAi,
            json!({"model": "m", "choices": [{"message": {"content": null, "refusal": long_refusal}, "finish_reason": "stop"}]}),
            format!(
                "classifier: llm: the model refused: {}…",
                long_refusal
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .chars()
                    .take(200)
                    .collect::<String>()
            ),
        ),
        (
            Style::Anthropic,
            anthropic_reply("I won't judge this.", "refusal"),
            "classifier: llm: the model refused: I won't judge this.".into(),
        ),
        (
            Style::OpenAi,
            openai_reply(
                "{\"answers\":{\"refund\":{\"type\":\"no",
                Some("m"),
                "length",
                json!({}),
            ),
            "classifier: llm: reply was cut off at the token limit (finish_reason \"length\")"
                .into(),
        ),
        (
            Style::Anthropic,
            anthropic_reply("{\"answers\":{", "max_tokens"),
            "classifier: llm: reply was cut off at the token limit (stop_reason \"max_tokens\")"
                .into(),
        ),
        (
            Style::OpenAi,
            openai_reply(
                r#"{"answers":{"desk":{"type":"choice","choice":"legal","probabilities":{},"confidence":0.9}}}"#,
                Some("m"),
                "stop",
                json!({}),
            ),
            "classifier: answer \"desk\": choice \"legal\" is not one of the offered options"
                .into(),
        ),
        (
            Style::OpenAi,
            openai_reply(
                r#"{"answers":{"refund":{"type":"noul"}}}"#,
                Some("m"),
                "stop",
                json!({}),
            ),
            "classifier: answer \"refund\": noul answer has no \"noul\" number".into(),
        ),
    ];
    for (style, reply, want) in cases {
        let server = Server::start(vec![Reply::value(200, reply)]).await;
        let e = evaluate(&llm(
            create_client(options(&server.base_url(), style, "")).unwrap()
        ))
        .await
        .unwrap_err();
        assert_eq!(e.to_string(), want);
        assert!(e.is_decode(), "{e}");
        assert!(!e.is_retryable(), "{e}");
        assert_eq!(server.requests().len(), 1, "not retried: {e}");
    }
}

#[tokio::test]
async fn provider_errors_keep_their_cause_and_auth_bodies_are_dropped() {
    suite_env("TOOLNEXUS_IT_LLM_KEY_PROVIDER", "sk-sentinel-provider-0b77");
    let server = Server::start(vec![Reply::value(
        400,
        json!({"error": {"message": "model \"test-model\" does not exist", "type": "invalid_request_error"}}),
    )])
    .await;
    let e = evaluate(&llm(create_client(options(
        &server.base_url(),
        Style::OpenAi,
        "TOOLNEXUS_IT_LLM_KEY_PROVIDER",
    ))
    .unwrap()))
    .await
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "client: POST {}/chat/completions: HTTP 400: model \"test-model\" does not exist",
            server.base_url()
        )
    );
    assert_eq!(e.status(), Some(400));

    let server = Server::start(vec![Reply::value(
        401,
        json!({"error": {"message": "invalid x-api-key sk-sentinel-provider-0b77"}}),
    )])
    .await;
    let e = evaluate(&llm(create_client(options(
        &server.base_url(),
        Style::Anthropic,
        "TOOLNEXUS_IT_LLM_KEY_PROVIDER",
    ))
    .unwrap()))
    .await
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "client: POST {}/messages: HTTP 401: unauthorized (response body not shown)",
            server.base_url()
        )
    );
    assert!(e.is_http() && !e.is_retryable());
    assert_eq!(server.requests().len(), 1);

    // A gateway that answers 200 with an error body.
    let server = Server::start(vec![Reply::value(
        200,
        json!({"error": {"message": "upstream provider timed out", "code": 502}}),
    )])
    .await;
    let e = evaluate(&llm(create_client(options(
        &server.base_url(),
        Style::OpenAi,
        "",
    ))
    .unwrap()))
    .await
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "client: POST {}/chat/completions: provider error: upstream provider timed out",
            server.base_url()
        )
    );
}

#[tokio::test]
async fn retries_a_503_then_succeeds_and_honours_retries_off() {
    let ok = Reply::value(200, openai_reply(ANSWERS, Some("m"), "stop", json!({})));
    let server = Server::start(vec![
        Reply::value(503, json!({"error": {"message": "overloaded"}})),
        Reply::json(429, "{}").with_header("retry-after", "0"),
        ok,
    ])
    .await;
    let d = evaluate(&llm(create_client(options(
        &server.base_url(),
        Style::OpenAi,
        "",
    ))
    .unwrap()))
    .await
    .unwrap();
    assert_eq!(d.noul("refund").unwrap().noul, 0.94);
    assert_eq!(server.requests().len(), 3);
    assert_eq!(
        server.requests()[0].json(),
        server.requests()[2].json(),
        "the same body each attempt"
    );

    let server = Server::start(vec![Reply::value(
        503,
        json!({"error": {"message": "overloaded"}}),
    )])
    .await;
    let e = evaluate(&llm(create_client(ClientOptions {
        retries: -1,
        ..options(&server.base_url(), Style::OpenAi, "")
    })
    .unwrap()))
    .await
    .unwrap_err();
    assert_eq!(e.status(), Some(503));
    assert!(e.is_retryable());
    assert!(e.to_string().ends_with("HTTP 503: overloaded"), "{e}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn cancellation_and_timeouts_end_a_hung_call() {
    let server = Server::start(vec![Reply::Stall]).await;
    let judge = llm(create_client(options(&server.base_url(), Style::OpenAi, "")).unwrap());
    let ctx = EvalContext::new().with_call_name("hung");
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let e = tokio::time::timeout(
        HANG_GUARD,
        judge.evaluate_ctx(ctx, state(), &three_questions()),
    )
    .await
    .expect("cancellation did not end the call")
    .unwrap_err();
    assert!(e.is_cancelled(), "{e}");
    assert_eq!(e.to_string(), "client: context canceled");

    let client = create_client(ClientOptions {
        timeout_ms: 100,
        retries: -1,
        ..options(&server.base_url(), Style::OpenAi, "")
    })
    .unwrap();
    let e = evaluate(&llm(client)).await.unwrap_err();
    assert!(e.is_timeout(), "{e}");
    assert_eq!(
        e.to_string(),
        format!(
            "client: POST {}/chat/completions: request timeout after 100ms",
            server.base_url()
        )
    );
}

#[tokio::test]
async fn secrets_never_show_in_errors_debug_or_metrics() {
    const KEY: &str = "sk-sentinel-secret-c0ffee51";
    const TEAM: &str = "team-token-sentinel-5eed";
    suite_env("TOOLNEXUS_IT_LLM_KEY_SECRET", KEY);
    suite_env("TOOLNEXUS_IT_LLM_TEAM_SECRET", TEAM);
    let server = Server::start(vec![
        Reply::value(
            500,
            json!({"error": {"message": format!("bad key {KEY} for team {TEAM}")}}),
        ),
        Reply::value(401, json!({"error": {"message": format!("bad key {KEY}")}})),
    ])
    .await;
    let opts = ClientOptions {
        headers: BTreeMap::from([(
            "X-Team".to_string(),
            "${TOOLNEXUS_IT_LLM_TEAM_SECRET}".to_string(),
        )]),
        ..options(
            &server.base_url(),
            Style::OpenAi,
            "TOOLNEXUS_IT_LLM_KEY_SECRET",
        )
    };
    let opts_debug = format!("{opts:?}");
    let client = create_client(opts).unwrap();
    let events: Arc<Mutex<Vec<MetricEvent>>> = Arc::default();
    let sink = events.clone();
    let cls_opts = ClassifierOptions {
        style: ClassifierStyle::Llm,
        client: Some(client.clone()),
        on_metric: Some(Arc::new(move |m: &MetricEvent| {
            sink.lock().unwrap().push(m.clone())
        })),
        ..Default::default()
    };
    let cls_opts_debug = format!("{cls_opts:?}");
    let judge = create_classifier(cls_opts).unwrap();

    // 500 (retried, cause scrubbed) then 401 (body dropped).
    let e = evaluate(&judge).await.unwrap_err();
    assert_eq!(e.status(), Some(401));
    let reqs = server.requests();
    assert_eq!(
        reqs[0].headers["x-team"], TEAM,
        "headers expand ${{VAR}} at call time"
    );
    assert_eq!(reqs[0].headers["authorization"], format!("Bearer {KEY}"));

    // The 500's cause alone, with retries off.
    let server500 = Server::start(vec![Reply::value(
        500,
        json!({"error": {"message": format!("bad key {KEY} for team {TEAM}")}}),
    )])
    .await;
    let e500 = evaluate(&llm(create_client(ClientOptions {
        retries: -1,
        headers: BTreeMap::from([(
            "X-Team".to_string(),
            "${TOOLNEXUS_IT_LLM_TEAM_SECRET}".to_string(),
        )]),
        ..options(
            &server500.base_url(),
            Style::OpenAi,
            "TOOLNEXUS_IT_LLM_KEY_SECRET",
        )
    })
    .unwrap()))
    .await
    .unwrap_err();
    assert!(
        e500.to_string()
            .ends_with("HTTP 500: bad key [redacted] for team [redacted]"),
        "{e500}"
    );

    let metrics = format!("{:?}", events.lock().unwrap());
    assert!(metrics.contains("Evaluate"), "{metrics}");
    let texts = [
        e.to_string(),
        format!("{e:?}"),
        e500.to_string(),
        format!("{e500:?}"),
        format!("{client:?}"),
        format!("{judge:?}"),
        opts_debug,
        cls_opts_debug,
        metrics,
    ];
    for t in &texts {
        assert!(
            !t.contains(KEY) && !t.contains(TEAM),
            "a secret leaked: {t}"
        );
    }
}

/// A logprobs reply whose first token position offers `top` alternatives.
fn logprob_reply(top: &[(&str, f64)], cost: f64) -> Value {
    let alts: Vec<Value> = top
        .iter()
        .map(|(t, p)| json!({"token": t, "logprob": p.ln(), "bytes": t.as_bytes()}))
        .collect();
    json!({
        "model": "vllm-test",
        "choices": [{
            "message": {"role": "assistant", "content": top[0].0},
            "finish_reason": "length",
            "logprobs": {"content": [{"token": top[0].0, "logprob": top[0].1.ln(), "top_logprobs": alts}]},
        }],
        "usage": {"prompt_tokens": 100, "completion_tokens": 1, "cost": cost},
    })
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[tokio::test]
async fn logprob_mode_derives_distributions_from_answer_tokens() {
    let server = Server::start_with(|_, r: &Request| {
        let body = r.json();
        let system = body["messages"][0]["content"].as_str().unwrap_or_default();
        let reply = if system.contains("(A, B)") {
            // desk: A = billing, B = shipping; "Billing" is not a label and is dropped.
            logprob_reply(
                &[("A", 0.6), (" A", 0.1), ("B", 0.2), ("Billing", 0.1)],
                0.001,
            )
        } else if system.contains("yes if the statement holds") {
            logprob_reply(&[("Yes", 0.72), ("No", 0.18), ("Maybe", 0.1)], 0.001)
        } else if system.contains("(0, 1, 2)") {
            logprob_reply(&[("1", 0.5), ("2", 0.3), ("0", 0.2)], 0.001)
        } else {
            return Reply::value(500, json!({"error": {"message": "unexpected prompt"}}));
        };
        Reply::value(200, reply)
    })
    .await;
    let client = create_client(ClientOptions {
        logprobs: true,
        ..options(&server.base_url(), Style::OpenAi, "")
    })
    .unwrap();
    let d = evaluate(&llm(client)).await.unwrap();

    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "one constrained request per question");
    for r in &reqs {
        assert_eq!(r.json()["logprobs"], true);
        assert_eq!(r.json()["top_logprobs"], 20);
        assert_eq!(r.json()["max_tokens"], 1);
        let user = user_content(r);
        for key in ["\"refund\"", "\"desk\"", "\"urgency\""] {
            assert!(
                !user.contains(key),
                "question keys are addresses, not content: {user}"
            );
        }
    }

    assert!(!d.calibrated, "log-probabilities are still uncalibrated");
    assert_eq!(d.model, "vllm-test");
    assert_eq!((d.usage.input_tokens, d.usage.output_tokens), (300, 3));
    assert!(close(d.usage.cost.unwrap(), 0.003));

    assert!(close(d.noul("refund").unwrap().noul, 0.8));
    let desk = d.choice("desk").unwrap();
    assert_eq!(desk.choice, "billing");
    assert!(close(desk.probabilities["billing"], 0.7 / 0.9));
    assert!(close(desk.probabilities["shipping"], 0.2 / 0.9));
    // SPEC §16: (m − 1/n) / (1 − 1/n) with m = 7/9, n = 2.
    assert!(close(desk.confidence, (0.7 / 0.9 - 0.5) / 0.5));
    assert!(!desk.near_uniform);
    let urgency = d.score("urgency").unwrap();
    assert!(close(urgency.score, 0.5 + 2.0 * 0.3));
    assert!(close(urgency.probabilities["0"], 0.2));
    // Mode 1, spread 0.2 + 0.3 = 0.5 over U(3) = 2/3.
    assert!(close(urgency.confidence, 0.25));
    assert_eq!(urgency.levels(), ["can wait", "today", "now"]);
}

#[tokio::test]
async fn logprob_mode_needs_logprobs_in_the_reply() {
    let server = Server::start(vec![Reply::value(
        200,
        openai_reply("yes", Some("m"), "length", json!({})),
    )])
    .await;
    let client = create_client(ClientOptions {
        logprobs: true,
        ..options(&server.base_url(), Style::OpenAi, "")
    })
    .unwrap();
    let qs = Questions::from([(
        "spam".to_string(),
        NoulQuestion {
            instructions: "Is it spam?".into(),
            criteria: None,
        }
        .into(),
    )]);
    let e = llm(client).evaluate(json!("hi"), &qs).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "classifier: llm: logprobs: the reply for question \"spam\" has no log-probabilities \
         (does the server support \"logprobs\"?)"
    );

    let server = Server::start(vec![Reply::value(
        200,
        logprob_reply(&[("The", 0.9), ("A", 0.1)], 0.0),
    )])
    .await;
    let client = create_client(ClientOptions {
        logprobs: true,
        ..options(&server.base_url(), Style::OpenAi, "")
    })
    .unwrap();
    let e = llm(client).evaluate(json!("hi"), &qs).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "classifier: llm: logprobs: the reply for question \"spam\" gives no probability to any answer token (yes, no)"
    );
}

#[test]
fn create_client_names_what_is_missing() {
    let table: &[(ClientOptions, &str)] = &[
        (
            ClientOptions {
                model: "m".into(),
                ..Default::default()
            },
            "client: base_url is required (e.g. \"https://api.openai.com/v1\")",
        ),
        (
            ClientOptions {
                base_url: "http://127.0.0.1:1/v1".into(),
                ..Default::default()
            },
            "client: model is required (the model id to ask for)",
        ),
        (
            ClientOptions {
                base_url: "ftp://x".into(),
                model: "m".into(),
                ..Default::default()
            },
            "client: base_url \"ftp://x\" is not an http(s) URL",
        ),
        (
            ClientOptions {
                base_url: "http://127.0.0.1:1/v1".into(),
                model: "m".into(),
                style: Style::Anthropic,
                logprobs: true,
                ..Default::default()
            },
            "client: logprobs needs style \"openai\" (the Anthropic API returns no log-probabilities)",
        ),
        (
            ClientOptions {
                base_url: "http://127.0.0.1:1/v1".into(),
                model: "m".into(),
                headers: BTreeMap::from([("bad header".to_string(), "v".to_string())]),
                ..Default::default()
            },
            "client: header name \"bad header\" is not a valid HTTP header name",
        ),
    ];
    for (opts, want) in table {
        assert_eq!(create_client(opts.clone()).unwrap_err().to_string(), *want);
    }
    let e = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Llm,
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(e.to_string(), "classifier: style \"llm\" requires Client");
}

#[tokio::test]
async fn a_base_url_query_stays_after_the_path_and_out_of_messages() {
    let server = Server::start(vec![Reply::value(
        400,
        json!({"error": {"message": "deployment not found"}}),
    )])
    .await;
    let client = create_client(options(
        &format!("{}/?api-version=2024-10-21", server.base_url()),
        Style::OpenAi,
        "",
    ))
    .unwrap();
    let e = client
        .chat(&EvalContext::new(), &[ChatMessage::user("hi")])
        .await
        .unwrap_err();
    assert_eq!(
        server.requests()[0].path,
        "/v1/chat/completions?api-version=2024-10-21"
    );
    assert_eq!(
        e.to_string(),
        format!(
            "client: POST {}/chat/completions: HTTP 400: deployment not found",
            server.base_url()
        )
    );
}
