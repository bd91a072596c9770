use std::sync::{Arc, Mutex};

use serde_json::json;

use super::*;

/// What a fake export saw of the calls named `NAME`.
#[derive(Default)]
struct Seen {
    stages: Vec<Option<&'static str>>,
    metrics: usize,
}

const NAME: &str = "observe-cascade-note";

/// The export is process-wide: the tests that install one take turns.
static ONE_EXPORT: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

struct Recorder(Arc<Mutex<Seen>>);

struct Watching(Arc<Mutex<Seen>>);

impl CallExport for Recorder {
    fn start(&self, _: &Value, _: &Questions) -> Box<dyn CallWatch> {
        Box::new(Watching(self.0.clone()))
    }

    fn count(&self, count: &Count<'_>) {
        if count.call_name == NAME {
            self.0.lock().unwrap().metrics += 1;
        }
    }

    fn guard(&self, _: std::time::SystemTime, _: std::time::Duration, _: &GuardVerdict) {}
}

impl CallWatch for Watching {
    fn finish(self: Box<Self>, end: CallEnd<'_>) -> Box<dyn EndedCall> {
        if end.call_name == NAME {
            self.0.lock().unwrap().stages.push(end.cascade_stage);
        }
        Box::new(Nothing)
    }
}

/// A span this fake export does not keep.
struct Nothing;

impl EndedCall for Nothing {
    fn export(self: Box<Self>, _: Option<&GuardVerdict>) {}
}

/// A cascade's stage, noted inside the call, reaches the export when the
/// call ends; a layer over the classifier adds no second span or metric.
#[tokio::test]
async fn the_stage_noted_inside_a_call_reaches_the_export_once() {
    let evaluate: EvaluateFn = Arc::new(|_, _, _| {
        record_cascade_stage("student");
        Box::pin(async {
            Decision::from_value(&json!({
                "model": "m",
                "answers": {"ok": {"type": "noul", "noul": 0.8}},
                "usage": {"input_tokens": 1, "output_tokens": 1}
            }))
            .map_err(|e| e.to_string())
        })
    });
    let inner = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        model: "m".into(),
        evaluate: Some(evaluate),
        ..Default::default()
    })
    .unwrap();
    let outer = Classifier::from_evaluator("layer", inner);
    let seen = Arc::new(Mutex::new(Seen::default()));
    let export: Arc<dyn CallExport> = Arc::new(Recorder(seen.clone()));
    let _turn = ONE_EXPORT.lock().await;
    set_call_export(export.clone());
    let questions = Questions::from([(
        "ok".to_string(),
        Question::Noul(NoulQuestion {
            instructions: "Fine?".into(),
            criteria: None,
        }),
    )]);
    let ctx = EvalContext {
        call_name: NAME.into(),
        ..Default::default()
    };
    let got = outer.evaluate_ctx(ctx, json!("x"), &questions).await;
    clear_call_export(&export);
    assert!(got.is_ok(), "{got:?}");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.stages, vec![Some("student")]);
    assert_eq!(seen.metrics, 1, "one metric per call");
}

/// What a fake export saw of the guard judgments for the tool `TOOL`.
#[derive(Default)]
struct GuardSeen {
    /// Each call span exported, with the guard verdict it carried.
    calls: Vec<Option<GuardVerdict>>,
    /// Each span of a judgment of its own.
    own: Vec<GuardVerdict>,
}

const GUARDED: &str = "observe-guard-call";
const TOOL: &str = "ObserveGuardTool";

struct GuardRecorder(Arc<Mutex<GuardSeen>>);

struct GuardWatching(Arc<Mutex<GuardSeen>>);

struct GuardEnded(Arc<Mutex<GuardSeen>>, String);

impl CallExport for GuardRecorder {
    fn start(&self, _: &Value, _: &Questions) -> Box<dyn CallWatch> {
        Box::new(GuardWatching(self.0.clone()))
    }

    fn count(&self, _: &Count<'_>) {}

    fn guard(&self, _: std::time::SystemTime, _: std::time::Duration, v: &GuardVerdict) {
        if v.tool == TOOL {
            self.0.lock().unwrap().own.push(v.clone());
        }
    }
}

impl CallWatch for GuardWatching {
    fn finish(self: Box<Self>, end: CallEnd<'_>) -> Box<dyn EndedCall> {
        Box::new(GuardEnded(self.0, end.call_name.to_string()))
    }
}

impl EndedCall for GuardEnded {
    fn export(self: Box<Self>, guard: Option<&GuardVerdict>) {
        if self.1 == GUARDED {
            self.0.lock().unwrap().calls.push(guard.cloned());
        }
    }
}

fn verdict(decided_by: &'static str, judge_asked: bool) -> GuardVerdict {
    GuardVerdict {
        tool: TOOL.into(),
        verdict: "ask",
        rule: None,
        decided_by,
        judge_asked,
    }
}

/// The guard decides after its judge's call ended: the call's span waits
/// for the verdict and carries it; a judgment that asked no judge is
/// exported as a span of its own, so every guard call is seen once.
#[tokio::test]
async fn a_guard_verdict_reaches_the_judge_call_or_a_span_of_its_own() {
    let evaluate: EvaluateFn = Arc::new(|_, _, _| {
        Box::pin(async {
            Decision::from_value(&json!({
                "model": "m",
                "answers": {"ok": {"type": "noul", "noul": 0.8}},
                "usage": {"input_tokens": 1, "output_tokens": 1}
            }))
            .map_err(|e| e.to_string())
        })
    });
    let judge = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        model: "m".into(),
        evaluate: Some(evaluate),
        ..Default::default()
    })
    .unwrap();
    let questions = Questions::from([(
        "ok".to_string(),
        Question::Noul(NoulQuestion {
            instructions: "Fine?".into(),
            criteria: None,
        }),
    )]);
    let seen = Arc::new(Mutex::new(GuardSeen::default()));
    let export: Arc<dyn CallExport> = Arc::new(GuardRecorder(seen.clone()));
    let _turn = ONE_EXPORT.lock().await;
    set_call_export(export.clone());

    let asked = guard_call(async {
        let ctx = EvalContext::new().with_call_name(GUARDED);
        let got = judge.evaluate_ctx(ctx, json!("x"), &questions).await;
        assert!(
            seen.lock().unwrap().calls.is_empty(),
            "the span waits for the verdict"
        );
        (got.is_ok(), verdict("judge", true))
    })
    .await;
    let settled = guard_call(async { (7, verdict("rule", false)) }).await;
    clear_call_export(&export);

    assert!(asked);
    assert_eq!(settled, 7);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.calls, vec![Some(verdict("judge", true))]);
    assert_eq!(seen.own, vec![verdict("rule", false)]);
}

#[test]
fn trace_context_is_read_as_w3c_defines_it() {
    let ok = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let p = TraceParent::parse(ok).expect("valid");
    assert_eq!(p.trace_id[..2], [0x0a, 0xf7]);
    assert_eq!(p.span_id[..2], [0xb7, 0xad]);
    assert!(p.sampled);
    assert_eq!(TraceParent::parse(&format!(" {ok}\t")), Some(p));
    let unsampled = ok.replace("-01", "-00");
    assert_eq!(
        TraceParent::parse(&unsampled).map(|p| p.sampled),
        Some(false)
    );
    for bad in [
        "",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-",
        "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
        "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "0g-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0x",
        "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x",
        "00-0af7651916cd43dd8448eb211c80319é-b7ad6b7169203331-01",
    ] {
        assert_eq!(TraceParent::parse(bad), None, "{bad:?}");
    }
}
