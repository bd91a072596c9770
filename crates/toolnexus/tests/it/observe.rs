//! One call, one span, one metric: a stack of layers (pricing, a budget, a
//! cache) reports each evaluate once, from its outermost classifier, with what
//! the bottom of the stack is; and a cap's refusal is an error of its own kind.

use std::sync::Arc;

use serde_json::json;
use toolnexus::cache::{MemoryCache, caching};
use toolnexus::classifier::{
    Classifier, ClassifierOptions, ClassifierStyle, Questions, RecordedDecision, create_classifier,
};
use toolnexus::cost::budget::{Budget, BudgetOptions, Spend, budgeted};
use toolnexus::cost::{Prices, Pricing, pricing};
use toolnexus::judge::{noul, questions};

use crate::secrets::{Texts, capture};

fn spam() -> Questions {
    questions(&[noul("spam", "Is it spam?")]).unwrap()
}

fn recorded() -> Classifier {
    create_classifier(ClassifierOptions {
        style: ClassifierStyle::Static,
        model: "jev-1.13".into(),
        decisions: vec![RecordedDecision {
            state: json!("hi"),
            questions: spam(),
            response: br#"{"model":"jev-1.13","answers":{"spam":{"type":"noul","noul":0.8}},"usage":{"input_tokens":100,"output_tokens":0}}"#.to_vec(),
        }],
        ..Default::default()
    })
    .unwrap()
}

/// The stack `batch` runs: the style, priced, under a budget, behind a cache,
/// priced again on top (so a hit is a known $0).
fn stack(budget: &Budget) -> Classifier {
    let table = Pricing::Table(Prices::builtin().into());
    let priced = pricing(recorded(), table.clone());
    let capped = budgeted(priced, budget.clone(), |_| Spend::tokens(1));
    pricing(caching(capped, Arc::new(MemoryCache::new())), table)
}

#[tokio::test(flavor = "current_thread")]
async fn a_stack_opens_one_span_and_sends_one_metric_per_call() {
    let texts = Texts::default();
    let _guard = capture(&texts);
    let budget = Budget::new(BudgetOptions::default());
    let judge = stack(&budget).with_metrics(texts.metric_sink());

    judge.evaluate(json!("hi"), &spam()).await.unwrap();
    judge.evaluate(json!("hi"), &spam()).await.unwrap();

    let lines = texts.lines();
    let spans: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("span classifier.evaluate"))
        .collect();
    assert_eq!(
        spans.len(),
        2,
        "one span per call, not one per layer: {lines:#?}"
    );
    assert!(
        spans.iter().all(|s| s.contains("style=static")),
        "the span says what the bottom of the stack is: {spans:#?}"
    );
    let metrics: Vec<&String> = lines.iter().filter(|l| l.starts_with("metric ")).collect();
    assert_eq!(metrics.len(), 2, "one metric per call: {metrics:#?}");
    assert!(metrics[0].contains("cache_hit: false"), "{}", metrics[0]);
    assert!(metrics[1].contains("cache_hit: true"), "{}", metrics[1]);
    let logged = lines
        .iter()
        .filter(|l| l.contains("classifier.evaluate ok"))
        .count();
    assert_eq!(logged, 2, "one log line per call: {lines:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("record") && l.contains("cache_hit=true")),
        "the hit is a field of the call's span: {lines:#?}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn every_layer_keeps_the_identity_of_what_it_wraps() {
    let budget = Budget::new(BudgetOptions::default());
    let bottom = recorded();
    let top = stack(&budget);
    assert_eq!(top.identity(), bottom.identity());
    assert_eq!(top.identity().style, "static");
    assert!(!top.identity().local);
}

#[tokio::test(flavor = "current_thread")]
async fn a_reached_cap_is_its_own_error_kind() {
    let budget = Budget::new(BudgetOptions {
        max_tokens: Some(1),
        ..Default::default()
    });
    let judge = stack(&budget);
    judge.evaluate(json!("hi"), &spam()).await.unwrap();
    let e = judge.evaluate(json!("other"), &spam()).await.unwrap_err();
    assert!(e.is_cap_reached(), "{e:?}");
    assert!(!e.is_cancelled(), "a cap is not a cancellation: {e:?}");
    assert_eq!(e.kind().as_str(), "cap_reached");
}
