//! A stand-in judge and call builders shared by the guard's integration tests.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use toolnexus::classifier::{
    BoxFuture, Classifier, ClassifierError, Decision, EvalContext, EvalRequest, Evaluator,
};
use toolnexus_guard::{Guard, Judge, JudgeSource, Policy, ToolCall};

/// A judge answering every built-in question with `p` (risk: level 0 unless
/// `p` is high), counting its calls.
pub struct StandIn {
    p: f64,
    calls: Arc<AtomicUsize>,
}

impl Evaluator for StandIn {
    fn call(&self, _: EvalContext, _: EvalRequest) -> BoxFuture<Result<Decision, ClassifierError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let p = self.p;
        let high = if p >= 0.5 { 1.0 } else { 0.0 };
        Box::pin(async move {
            Decision::from_value(&json!({"model": "stand-in", "answers": {
                "destructive": {"type": "noul", "noul": p},
                "exfiltration": {"type": "noul", "noul": p},
                "secrets": {"type": "noul", "noul": p},
                "outside_project": {"type": "noul", "noul": p},
                "risk": {"type": "score", "score": 0.0, "confidence": 1.0,
                         "probabilities": {"0": 1.0 - high, "4": high}},
            }}))
        })
    }
}

/// A judge that finds every call harmless (every answer 0.01), and its call count.
pub fn allowing() -> (JudgeSource, Arc<AtomicUsize>) {
    standing(0.01)
}

/// A judge answering every question with `p`, and its call count.
pub fn standing(p: f64) -> (JudgeSource, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = Classifier::from_evaluator(
        "stand-in",
        StandIn {
            p,
            calls: calls.clone(),
        },
    );
    (JudgeSource::ready(Judge::new(c, "guard")), calls)
}

/// The built-in policy with no log (tests write none).
pub fn builtin() -> Policy {
    policy(r#"{"toolnexus":"guard-policy","version":2,"log":null}"#)
}

/// A policy from its text.
pub fn policy(text: &str) -> Policy {
    Policy::parse(text, None).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// A guard over `policy` whose judge allows everything.
pub fn guard(policy: Policy) -> Guard {
    Guard::new(policy, allowing().0)
}

/// A call of `tool` with `input` in `cwd`.
pub fn call_in(cwd: &str, tool: &str, input: Value) -> ToolCall {
    ToolCall {
        tool_name: tool.into(),
        tool_input: input.as_object().cloned().unwrap_or_default(),
        cwd: Some(cwd.into()),
    }
}

/// A Bash call in a project directory that does not exist on this machine.
pub fn bash(command: &str) -> ToolCall {
    call_in("/home/dev/shop", "Bash", json!({"command": command}))
}

/// A temporary directory, removed when dropped.
pub struct Temp(pub std::path::PathBuf);

impl Temp {
    pub fn new(name: &str) -> Temp {
        let d =
            std::env::temp_dir().join(format!("toolnexus-guard-it-{name}-{}", std::process::id()));
        std::fs::remove_dir_all(&d).ok();
        std::fs::create_dir_all(&d).unwrap();
        Temp(d)
    }

    pub fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}
