//! The built-in judge on the embedded model: the guard's student answers
//! every policy question with a typed, finite answer, so a call the rules
//! leave to the judge is judged, not sent to on_error. Skipped when
//! `TOOLNEXUS_MODEL_DIR` holds no model, unless `TOOLNEXUS_REQUIRE_MODEL` is set.

use serde_json::json;
use toolnexus_guard::{Guard, JudgeSource, Permission, Policy, ToolCall};

fn model_dir() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("TOOLNEXUS_MODEL_DIR").map(std::path::PathBuf::from);
    let present = dir
        .as_ref()
        .is_some_and(|d| d.join("model.safetensors").is_file());
    if !present {
        assert!(
            std::env::var_os("TOOLNEXUS_REQUIRE_MODEL").is_none(),
            "TOOLNEXUS_REQUIRE_MODEL is set but TOOLNEXUS_MODEL_DIR holds no model"
        );
        return None;
    }
    dir
}

fn call(tool: &str, input: serde_json::Value) -> ToolCall {
    ToolCall {
        tool_name: tool.into(),
        tool_input: input.as_object().cloned().unwrap_or_default(),
        cwd: Some("/home/dev/shop".into()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_built_in_judge_answers_every_question_on_the_embedded_model() {
    let Some(dir) = model_dir() else { return };
    let policy = Policy::parse(
        r#"{"toolnexus":"guard-policy","version":1,"log":null,"budget_ms":60000}"#,
        None,
    )
    .unwrap();
    let guard = Guard::new(policy, JudgeSource::builtin(Some(dir)));
    for (tool, input) in [
        ("Bash", json!({"command": "cargo test -p shop"})),
        (
            "Write",
            json!({"file_path": "src/lib.rs", "content": "pub fn add(a: i32, b: i32) -> i32 { a + b }"}),
        ),
    ] {
        let j = guard.judge(&call(tool, input)).await;
        assert!(j.detail.get("error").is_none(), "{tool}: {}", j.reason);
        assert_eq!(
            j.detail["judge"].as_str().map(|m| !m.is_empty()),
            Some(true),
            "{}",
            j.detail
        );
        let answers = j.detail["answers"].as_object().unwrap();
        assert!(answers.keys().any(|k| k.starts_with("risk")), "{answers:?}");
        assert!(
            answers
                .values()
                .all(|v| v.as_f64().is_some_and(|p| (0.0..=1.0).contains(&p)))
        );
        assert_ne!(j.permission, Permission::Deny, "{tool}: {}", j.reason);
    }
}

/// `--precision` reaches the built-in judge: asked for bf16 (where the CPU
/// has a bf16 unit), its fingerprint and every answer's extensions say
/// bf16 and it answers as f32 does; f32's say nothing of precision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_built_in_judge_runs_in_the_precision_asked() {
    use toolnexus::classifier::{EvalContext, EvalRequest};
    use toolnexus_guard::judge::builtin_judge;
    use toolnexus_local::{Precision, resolve_precision};

    let Some(dir) = model_dir() else { return };
    if resolve_precision(Precision::Bf16).is_err() {
        eprintln!("skipped: this CPU has no bf16 unit");
        return;
    }
    let policy = Policy::builtin().unwrap();
    let state = json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf target"}});
    let mut answered = Vec::new();
    for precision in [Precision::F32, Precision::Bf16] {
        let judge = builtin_judge(Some(&dir), precision).unwrap();
        let parts = judge.fingerprint().parts().to_vec();
        let named = parts.iter().any(|(_, p)| p.contains("precision=bf16"));
        assert_eq!(
            named,
            precision == Precision::Bf16,
            "{precision}: {parts:?}"
        );
        let request = EvalRequest::new(state.clone(), policy.questions.clone());
        let e = judge
            .evaluate_request(EvalContext::default(), request)
            .await
            .unwrap();
        let keys: Vec<&String> = e.decision.answers.keys().collect();
        assert!(!keys.is_empty());
        for key in keys {
            let said = e.extensions.get(key).and_then(|x| x.get("precision"));
            match precision {
                Precision::Bf16 => assert_eq!(said, Some(&json!("bf16")), "{key}"),
                _ => assert_eq!(said, None, "{key}"),
            }
        }
        answered.push(e.decision);
    }
    for key in answered[0].answers.keys() {
        let noul = |i: usize| answered[i].noul(key).ok().map(|a| a.noul);
        if let (Some(p), Some(q)) = (noul(0), noul(1)) {
            assert!((p - q).abs() < 1e-2, "{key}: f32 {p}, bf16 {q}");
        }
    }

    // Through the guard: a source asked for bf16 builds that judge.
    let source = JudgeSource::builtin(Some(dir)).with_precision(Precision::Bf16);
    assert!(
        format!("{source:?}").contains("precision: Bf16"),
        "{source:?}"
    );
    let guard = Guard::new(policy, source);
    let j = guard
        .judge(&call("Bash", json!({"command": "cargo test -p shop"})))
        .await;
    assert!(j.detail.get("error").is_none(), "{}", j.reason);
}
