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

struct Recorder(Arc<Mutex<Seen>>);

struct Watching(Arc<Mutex<Seen>>);

impl CallExport for Recorder {
    fn start(&self, _: &Value, _: &Questions, _: &str) -> Box<dyn CallWatch> {
        Box::new(Watching(self.0.clone()))
    }

    fn metric(&self, event: &MetricEvent) {
        if event.call_name == NAME {
            self.0.lock().unwrap().metrics += 1;
        }
    }
}

impl CallWatch for Watching {
    fn finish(self: Box<Self>, end: CallEnd<'_>) {
        if end.call_name == NAME {
            self.0.lock().unwrap().stages.push(end.cascade_stage);
        }
    }
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
