//! Every metric event says where its cost came from: reported, priced (table
//! and date), local, a cache hit, or unknown — never an unknown $0.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolnexus::cache::{MemoryCache, caching};
use toolnexus::classifier::{
    Classifier, ClassifierOptions, ClassifierStyle, Decision, MetricEvent, MetricName,
    create_classifier,
};
use toolnexus::cost::{CostSource, Prices, Pricing, pricing, pricing_with_metrics};
use toolnexus::judge::{noul, questions};

/// A Custom classifier asking for `model` whose decisions carry `usage`.
fn judge(model: &str, usage: Value, options: ClassifierOptions) -> Classifier {
    let answered = model.to_string();
    create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        model: model.into(),
        evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
            let d = json!({"model": answered, "answers": {"spam": {"type": "noul", "noul": 0.2}}, "usage": usage});
            Box::pin(async move { Decision::from_value(&d).map_err(|e| e.to_string()) })
        })),
        ..options
    })
    .unwrap()
}

type Seen = Arc<Mutex<Vec<MetricEvent>>>;

fn metrics() -> (Seen, toolnexus::classifier::MetricFn) {
    let seen: Seen = Arc::default();
    let sink = seen.clone();
    (
        seen,
        Arc::new(move |m: &MetricEvent| {
            if m.name == MetricName::Evaluate {
                sink.lock().unwrap().push(m.clone());
            }
        }),
    )
}

fn last(seen: &Seen) -> (Option<f64>, Option<CostSource>) {
    let m = seen.lock().unwrap().last().cloned().expect("a metric");
    (m.cost, m.cost_source)
}

#[tokio::test]
async fn metric_events_carry_the_cost_source() {
    let qs = questions(&[noul("spam", "Is it spam?")]).unwrap();
    let jev = Pricing::Table(Prices::builtin().into());
    let priced = CostSource::Priced {
        table: "toolnexus".into(),
        checked: "2026-12-05".into(),
    };

    // No pricing: a reported cost is reported, anything else unknown.
    let (seen, f) = metrics();
    let usage = json!({"input_tokens": 1_000_000, "output_tokens": 3});
    let plain = judge(
        "jev-1.13",
        usage.clone(),
        ClassifierOptions {
            on_metric: Some(f),
            ..Default::default()
        },
    );
    plain.evaluate(json!("hi"), &qs).await.unwrap();
    assert_eq!(last(&seen), (None, None), "unknown, never $0");

    // Priced from the compiled-in table, with its name and date.
    let (seen, f) = metrics();
    let with = judge(
        "jev-1.13",
        usage.clone(),
        ClassifierOptions {
            on_metric: Some(f),
            pricing: Some(jev.clone()),
            ..Default::default()
        },
    );
    let e = with
        .evaluate_request(
            Default::default(),
            toolnexus::classifier::EvalRequest::new(json!("hi"), qs.clone()),
        )
        .await
        .unwrap();
    assert_eq!(last(&seen), (Some(0.042), Some(priced.clone())));
    assert_eq!(e.cost.source, Some(priced.clone()));
    assert_eq!(
        e.decision.usage.cost, None,
        "the usage stays as the backend sent it"
    );

    // A reported cost always wins over a price.
    let (seen, f) = metrics();
    let reported = judge(
        "jev-1.13",
        json!({"input_tokens": 10, "output_tokens": 1, "cost": 0.5}),
        ClassifierOptions {
            on_metric: Some(f),
            pricing: Some(jev.clone()),
            ..Default::default()
        },
    );
    reported.evaluate(json!("hi"), &qs).await.unwrap();
    assert_eq!(last(&seen), (Some(0.5), Some(CostSource::Reported)));

    // Local styles: an explicit 0.
    let (seen, f) = metrics();
    let local = pricing_with_metrics(
        judge("minilm", usage.clone(), Default::default()),
        Pricing::Local,
        Some(f),
    );
    local.evaluate(json!("hi"), &qs).await.unwrap();
    assert_eq!(last(&seen), (Some(0.0), Some(CostSource::Local)));

    // Outside a cache: the miss is priced, the hit is a known 0.
    let (seen, f) = metrics();
    let cached = caching(
        judge("jev-1.13", usage.clone(), Default::default()),
        Arc::new(MemoryCache::new()),
    );
    let layered = pricing_with_metrics(cached, jev.clone(), Some(f));
    layered.evaluate(json!("same"), &qs).await.unwrap();
    assert_eq!(last(&seen), (Some(0.042), Some(priced.clone())));
    layered.evaluate(json!("same"), &qs).await.unwrap();
    assert_eq!(last(&seen), (Some(0.0), Some(CostSource::Cache)));

    // A model no table lists stays unknown through the layer too.
    let (seen, f) = metrics();
    let other = pricing_with_metrics(
        judge("someone-else-7b", usage, Default::default()),
        jev,
        Some(f),
    );
    other.evaluate(json!("hi"), &qs).await.unwrap();
    assert_eq!(last(&seen), (None, None));
}

#[tokio::test]
async fn the_layer_keeps_the_model_and_prices_on_the_asked_one_when_the_answering_one_is_unlisted()
{
    let qs = questions(&[noul("spam", "Is it spam?")]).unwrap();
    // Asked for "jev-1.13", the backend answers as a snapshot the table does
    // not list: the call is priced on the model asked for.
    let inner = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        model: "jev-1.13".into(),
        evaluate: Some(Arc::new(|_ctx, _state, _qs| {
            let d = json!({"model": "snapshot-7", "answers": {"spam": {"type": "noul", "noul": 0.2}},
                           "usage": {"input_tokens": 2_000_000, "output_tokens": 0}});
            Box::pin(async move { Decision::from_value(&d).map_err(|e| e.to_string()) })
        })),
        ..Default::default()
    })
    .unwrap();
    let priced = pricing(inner, Pricing::Table(Prices::builtin().into()));
    assert_eq!(priced.model(), "jev-1.13");
    let e = priced
        .evaluate_request(
            Default::default(),
            toolnexus::classifier::EvalRequest::new(json!("x"), qs),
        )
        .await
        .unwrap();
    assert!((e.cost.usd.unwrap() - 0.084).abs() < 1e-12, "{:?}", e.cost);
}

/// A budget beneath a cache (`caching(budgeted(…))`): hits never reach it, so
/// twenty identical calls spend one call's tokens.
#[tokio::test]
async fn cache_hits_cost_nothing_under_a_budget() {
    use toolnexus::cost::budget::{Budget, BudgetOptions, Spend, budgeted};
    let inner = judge(
        "m",
        json!({"input_tokens": 300, "output_tokens": 0, "cost": 0.01}),
        ClassifierOptions::default(),
    );
    let budget = Budget::new(BudgetOptions {
        max_tokens: Some(1_000),
        ..Default::default()
    });
    let shape =
        |r: &toolnexus::classifier::EvalRequest| Spend::tokens(261 + 8 * r.questions.len() as u64);
    let judge = caching(
        budgeted(inner, budget.clone(), shape),
        Arc::new(MemoryCache::new()),
    );
    let qs = questions(&[noul("spam", "Is it spam?")]).unwrap();
    for _ in 0..20 {
        judge.evaluate(json!("same"), &qs).await.unwrap();
    }
    assert_eq!(budget.spent().tokens, 300);
    assert_eq!(budget.reached(), None);
}

/// An evaluator that answers on this machine and says so, as a cascade's
/// student does: its decisions report tokens but cost an explicit 0.
struct OnThisMachine;

impl toolnexus::classifier::FullEvaluator for OnThisMachine {
    fn call_full(
        &self,
        _ctx: toolnexus::classifier::EvalContext,
        _request: toolnexus::classifier::EvalRequest,
    ) -> toolnexus::classifier::BoxFuture<
        Result<toolnexus::classifier::Evaluated, toolnexus::classifier::ClassifierError>,
    > {
        Box::pin(async {
            let d = Decision::from_value(&json!({"model": "student-on-cpu",
                "answers": {"spam": {"type": "noul", "noul": 0.2}},
                "usage": {"input_tokens": 40, "output_tokens": 0}}))
            .unwrap();
            let mut e = toolnexus::classifier::Evaluated::new(d);
            e.cost = toolnexus::cost::Cost::new(0.0, CostSource::Local);
            Ok(e)
        })
    }
}

#[tokio::test]
async fn a_local_answer_beneath_a_priced_layer_stays_local_through_every_wrapper() {
    use toolnexus::assess::calibrate::{NoulMap, Platt};
    use toolnexus::assess::{CalibratedQuestion, Calibration, QuestionMap, calibrating};
    use toolnexus::classifier::{EvalContext, EvalRequest, question_hash};
    use toolnexus::cost::budget::{Budget, BudgetOptions, Spend, budgeted};

    let qs = questions(&[noul("spam", "Is it spam?")]).unwrap();
    let local = Classifier::from_evaluator("cascade (student / jev-1.13)", OnThisMachine);
    let mut file = Calibration::default();
    file.questions.insert(
        "spam".into(),
        CalibratedQuestion {
            hash: question_hash(&qs["spam"]),
            models: vec!["student-on-cpu".into()],
            rows: 500,
            map: QuestionMap::Noul {
                map: NoulMap::Platt(Platt { a: -0.5, b: 0.0 }),
            },
        },
    );
    let calibrated = calibrating(local, file).unwrap();
    let budget = Budget::new(BudgetOptions {
        max_usd: Some(1.0),
        ..Default::default()
    });
    let capped = budgeted(calibrated, budget.clone(), |_: &EvalRequest| {
        Spend::tokens(100).with_usd(0.001)
    });
    let (seen, f) = metrics();
    let priced = pricing_with_metrics(capped, Pricing::Table(Prices::builtin().into()), Some(f));
    let e = priced
        .evaluate_request(EvalContext::new(), EvalRequest::new(json!("hi"), qs))
        .await
        .unwrap();
    assert!(e.decision.calibrated, "the calibration applied");
    assert_eq!(
        (e.cost.usd, e.cost.source),
        (Some(0.0), Some(CostSource::Local))
    );
    assert_eq!(last(&seen), (Some(0.0), Some(CostSource::Local)));
    let spent = budget.spent();
    assert_eq!(
        (spent.calls, spent.usd, spent.unknown_cost),
        (1, 0.0, 0),
        "settled as nothing billed: {spent:?}"
    );
}
