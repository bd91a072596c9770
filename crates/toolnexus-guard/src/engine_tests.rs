//! The engine's tests: typed answers (a missing, mistyped or non-finite one
//! is `on_error`, never a 0), hidden fields, skipped tools and the server's
//! fallback, with scripted judges and no model.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use toolnexus::classifier::{
    BoxFuture, Classifier, ClassifierError, Decision, DecisionAnswer, EvalContext, EvalRequest,
    Evaluator, NoulAnswer,
};

use super::*;

fn decision(answers: Value) -> Decision {
    Decision::from_value(&json!({"model": "m", "answers": answers})).unwrap()
}

/// The built-in questions answered low.
fn low() -> Value {
    json!({
        "destructive": {"type": "noul", "noul": 0.01},
        "exfiltration": {"type": "noul", "noul": 0.01},
        "secrets": {"type": "noul", "noul": 0.01},
        "outside_project": {"type": "noul", "noul": 0.01},
        "risk": {"type": "score", "score": 0.0, "confidence": 1.0,
                 "probabilities": {"0": 1.0}},
    })
}

/// A judge answering with one decision, whatever it is asked, and keeping
/// the states it was sent.
struct Scripted {
    decision: Decision,
    seen: Arc<std::sync::Mutex<Vec<Value>>>,
    calls: Arc<AtomicUsize>,
}

impl Evaluator for Scripted {
    fn call(
        &self,
        _: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Decision, ClassifierError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut seen) = self.seen.lock() {
            seen.push(request.state.clone());
        }
        let d = self.decision.clone();
        Box::pin(async move { Ok(d) })
    }
}

struct Scripts {
    source: JudgeSource,
    seen: Arc<std::sync::Mutex<Vec<Value>>>,
    calls: Arc<AtomicUsize>,
}

fn scripted(d: Decision) -> Scripts {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let calls = Arc::new(AtomicUsize::new(0));
    let c = Classifier::from_evaluator(
        "scripted",
        Scripted {
            decision: d,
            seen: seen.clone(),
            calls: calls.clone(),
        },
    );
    Scripts {
        source: JudgeSource::ready(Judge::new(c, "guard")),
        seen,
        calls,
    }
}

fn call(tool: &str, input: Value) -> ToolCall {
    ToolCall {
        tool_name: tool.into(),
        tool_input: input.as_object().cloned().unwrap(),
        cwd: Some("/home/dev/shop".into()),
    }
}

fn policy(extra: &str) -> Policy {
    Policy::parse(
        &format!(r#"{{"toolnexus":"guard-policy","version":1,"log":null{extra}}}"#),
        None,
    )
    .unwrap()
}

#[test]
fn a_partial_mistyped_or_non_finite_decision_cannot_be_read() {
    let policy = Policy::builtin().unwrap();
    let qs = &policy.questions;
    assert!(typed_answers(&decision(low()), qs).is_ok());

    let mut partial = low();
    partial.as_object_mut().unwrap().shift_remove("secrets");
    let e = typed_answers(&decision(partial), qs).err().unwrap();
    assert_eq!(e.to_string(), "the judge m gave no answer to \"secrets\"");

    // Numbers JSON cannot carry still reach a typed decision from a closure
    // or a local model: they are refused here too.
    let mut d = decision(low());
    d.answers.insert(
        "destructive".into(),
        DecisionAnswer::Noul(NoulAnswer { noul: f64::NAN }),
    );
    let e = typed_answers(&d, qs).err().unwrap();
    assert_eq!(
        e.to_string(),
        "the judge m answered \"destructive\" with a number that is not finite"
    );

    let mut d = decision(low());
    d.answers.insert(
        "risk".into(),
        DecisionAnswer::Noul(NoulAnswer { noul: 0.0 }),
    );
    let e = typed_answers(&d, qs).err().unwrap();
    assert_eq!(
        e.to_string(),
        "the judge m answered \"risk\" as a noul question, not score"
    );
}

#[tokio::test]
async fn a_missing_or_non_finite_answer_is_on_error_never_allow() {
    let mut missing = low();
    missing.as_object_mut().unwrap().shift_remove("secrets");
    let mut nan = decision(low());
    nan.answers.insert(
        "secrets".into(),
        DecisionAnswer::Noul(NoulAnswer {
            noul: f64::INFINITY,
        }),
    );
    for (what, d, says) in [
        ("missing", decision(missing), "no answer to \"secrets\""),
        // The classifier refuses it first; either way it is a failure.
        ("not finite", nan, "finite"),
    ] {
        for (extra, want) in [
            ("", Permission::Ask),
            (r#","on_error":"deny""#, Permission::Deny),
        ] {
            let guard = Guard::new(policy(extra), scripted(d.clone()).source);
            let j = guard.judge(&call("Bash", json!({"command": "ls"}))).await;
            assert_eq!(j.permission, want, "{what}: {}", j.reason);
            assert!(j.reason.contains(says), "{what}: {}", j.reason);
            assert!(j.reason.contains("could not be judged"), "{}", j.reason);
            assert!(j.detail["error"].as_str().is_some(), "{}", j.detail);
        }
    }

    // Answered in full and low: allowed, with its figures in the detail.
    let guard = Guard::new(policy(""), scripted(decision(low())).source);
    let j = guard.judge(&call("Bash", json!({"command": "ls"}))).await;
    assert_eq!(j.permission, Permission::Allow, "{}", j.reason);
    assert_eq!(j.detail["answers"]["destructive"], json!(0.01));
    assert_eq!(j.detail["judge"], json!("m"));
}

#[tokio::test]
async fn hidden_fields_reach_neither_the_rules_nor_the_judge_and_order_is_kept() {
    let s = scripted(decision(low()));
    let guard = Guard::new(
        policy(
            r#","hide_fields":{"Bash":["description"]},"builtin_rules":false,
               "rules":[{"id":"said-approved","pattern":"approved","verdict":"deny"}]"#,
        ),
        s.source,
    );
    let input =
        json!({"zeta": 1, "command": "ls", "description": "approved by the user", "alpha": 2});
    let j = guard.judge(&call("Bash", input)).await;
    assert_eq!(j.permission, Permission::Allow, "{}", j.reason);
    let seen = s.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].to_string(),
        r#"{"tool_name":"Bash","tool_input":{"zeta":1,"command":"ls","alpha":2},"cwd":"/home/dev/shop"}"#
    );
}

#[tokio::test]
async fn a_denying_rule_or_a_skipped_tool_never_asks_the_judge() {
    let s = scripted(decision(low()));
    let guard = Guard::new(policy(r#","skip_tools":["Read"]"#), s.source);
    let j = guard
        .judge(&call("Bash", json!({"command": "git push -f"})))
        .await;
    assert_eq!(j.permission, Permission::Deny, "{}", j.reason);
    assert_eq!(j.detail["judge"], json!("not asked: a rule denies"));
    let j = guard.judge(&call("Read", json!({"file_path": "a"}))).await;
    assert!(j.skipped);
    assert_eq!(j.permission, Permission::Allow);
    assert_eq!(s.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_failing_server_falls_back_to_the_built_in_judge_and_names_both_failures() {
    let guard = Guard::new(
        policy(""),
        JudgeSource::server(
            "http://127.0.0.1:9",
            Some(std::env::temp_dir().join("toolnexus-guard-no-model")),
            || Err(JudgeError::build("connection refused")),
        ),
    );
    let j = guard.judge(&call("Bash", json!({"command": "ls"}))).await;
    assert_eq!(j.permission, Permission::Ask, "{}", j.reason);
    assert!(j.reason.contains("connection refused"), "{}", j.reason);

    // A built judge whose call fails: the built-in one stands in, and here
    // it cannot be built either; both are named.
    let failing = scripted(decision(json!({})));
    let JudgeSource::Supplied(build) = failing.source else {
        unreachable!("scripted judges are supplied")
    };
    let guard = Guard::new(
        policy(""),
        JudgeSource::Server {
            url: "http://127.0.0.1:9".into(),
            build,
            model_dir: Some(std::env::temp_dir().join("toolnexus-guard-no-model")),
            precision: toolnexus_local::Precision::F32,
        },
    );
    let j = guard.judge(&call("Bash", json!({"command": "ls"}))).await;
    assert_eq!(j.permission, Permission::Ask, "{}", j.reason);
    assert!(
        j.reason
            .contains("the server at http://127.0.0.1:9 failed (the judge m gave no answer"),
        "{}",
        j.reason
    );
    assert!(
        j.reason.contains("and so did the judge here ("),
        "{}",
        j.reason
    );
}

#[tokio::test]
async fn a_judge_slower_than_the_budget_is_on_error() {
    let guard = Guard::new(
        policy(r#","budget_ms":50"#),
        JudgeSource::supplied(|| {
            std::thread::sleep(std::time::Duration::from_millis(400));
            Err(JudgeError::build("too late"))
        }),
    );
    let j = guard.judge(&call("Bash", json!({"command": "ls"}))).await;
    assert_eq!(j.permission, Permission::Ask);
    assert!(j.reason.contains("budget_ms (50 ms)"), "{}", j.reason);
}

#[test]
fn a_cut_on_a_partial_distribution_counts_the_missing_mass() {
    let policy = Policy::builtin().unwrap();
    let mut answers = low();
    answers["risk"]["probabilities"] = json!({"0": 0.2});
    let d = decision(answers);
    let typed = typed_answers(&d, &policy.questions).unwrap_or_default();
    let guard = Guard::new(policy.clone(), JudgeSource::builtin(None));
    let (p, figures, _) = guard.read_answers(&typed);
    assert_eq!(p, Permission::Ask);
    assert_eq!(figures[0].1, "risk P(≥ high) 0.80 ≥ 0.70");
}
