use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};
use toolnexus::classifier::{
    ChoiceAnswer, ClassifierOptions, ClassifierStyle, ClassifierUsage, Decision, DecisionAnswer,
    EvalContext, Questions, choice_over, create_classifier, near_uniform,
};
use toolnexus::client::BoxFuture;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let judge = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        evaluate: Some(Arc::new(|_ctx: EvalContext, _state: Value, _qs: Questions| -> BoxFuture<Result<Decision, String>> {
            Box::pin(async {
                let probs: BTreeMap<String, f64> =
                    [("billing".into(), 0.34), ("shipping".into(), 0.33), ("technical".into(), 0.33)].into();
                let mut answers = BTreeMap::new();
                answers.insert("desk".to_string(), DecisionAnswer::Choice(ChoiceAnswer {
                    choice: "billing".into(),
                    near_uniform: near_uniform(&probs),
                    probabilities: probs,
                    confidence: 0.95, // round self-reported numbers are an llm-style tell
                }));
                Ok(Decision {
                    model: "gpt-4o-mini".into(),
                    answers,
                    // An llm-style backend self-reports; no threshold tuned elsewhere transfers.
                    calibrated: false,
                    usage: ClassifierUsage { input_tokens: 516, output_tokens: 72, cost: None },
                })
            })
        })),
        ..Default::default()
    })?;

    let qs = Questions::from([("desk".to_string(), choice_over("Which desk owns this?", [
        ("billing", "own it here when money moved: a duplicate charge, a refund owed"),
        ("shipping", "own it here when a physical parcel is late or damaged"),
        ("technical", "own it here when the product itself errors"),
    ]).into())]);

    let d = judge.evaluate(json!("charged twice"), &qs).await?;
    let desk = d.choice("desk")?;
    assert!(desk.near_uniform, "this distribution is flat within 0.05 of 1/3");
    assert!(!d.calibrated, "an llm-style decision reports calibrated: false");

    // Absent is NOT zero: printing $0.00 here would be a lie about money.
    let cost = match d.usage.cost {
        Some(c) => format!("${c}"),
        None => "not reported by this backend".to_string(),
    };

    println!("ok: choice={} near_uniform={} calibrated={} cost={cost}", desk.choice, desk.near_uniform, d.calibrated);
    Ok(())
}
