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
