//! Cost you can see before you spend it (SPEC §19): where a cost came from,
//! prices from a named and dated table, and token estimates from a request's
//! own shape.
//!
//! - [`CostSource`] and [`Cost`]: every cost says where it came from —
//!   `reported` (the backend said so; always wins), `priced` (tokens × a price
//!   from a named, dated table), `local` (an explicit 0 for judgments made on
//!   this machine, whether the whole style is local or a layer beneath marked
//!   the answer so, as a cascade's student does) or `cache` (a hit: nothing
//!   was spent). An unknown cost is `None`, never 0.
//! - [`Prices`]: the compiled-in table ([`Prices::builtin`]) and a user's file
//!   over it ([`Prices::load`], [`Prices::over`]).
//! - [`Pricing`] and [`pricing`]: a layer that settles each call's cost where
//!   its usage is recorded, without touching any backend (or
//!   `ClassifierOptions::pricing` on a classifier of your own): the decision's
//!   usage stays as the backend sent it, [`Evaluated::cost`](crate::classifier::Evaluated::cost) and the
//!   [`MetricEvent`](crate::classifier::MetricEvent) say what it cost and why.
//! - [`Estimator`], [`Shape`] and [`fit`]: input tokens from a request's shape,
//!   with coefficients fitted by least squares on real runs' recorded usage.
//!
//! ```
//! use toolnexus::classifier::ClassifierUsage;
//! use toolnexus::cost::{CostSource, Pricing, Prices};
//!
//! let usage = ClassifierUsage { input_tokens: 1_000_000, output_tokens: 10, cost: None };
//! let cost = Pricing::Table(Prices::builtin().into()).settle(&usage, "jev-1.13");
//! assert_eq!(cost.usd, Some(0.042));
//! assert!(matches!(cost.source, Some(CostSource::Priced { .. })));
//!
//! // A model no table lists stays unknown: never $0.
//! let unknown = Pricing::Table(Prices::builtin().into()).settle(&usage, "someone-else-7b");
//! assert_eq!((unknown.usd, unknown.source), (None, None));
//! ```

use std::sync::Arc;

use crate::classifier::{
    Classifier, ClassifierOptions, ClassifierStyle, MetricFn, create_classifier,
};

pub mod budget;
mod estimate;

pub use crate::price::{
    Cost, CostSource, CostTally, MAX_PER_MILLION, PRICES_FORMAT, PRICES_VERSION, Price, PriceError,
    Prices, Pricing, usd_text,
};
pub use estimate::{
    Coefficients, ESTIMATOR_FORMAT, ESTIMATOR_VERSION, Estimate, EstimateTally, Estimator,
    EstimatorError, FitError, FitTally, Fitter, PricedEstimate, Sample, Shape, fit,
};
/// `inner` with every call's cost settled by `pricing` (see [`Evaluated::price_with`](crate::classifier::Evaluated::price_with)):
/// the layer that makes a cost known without changing any backend. Put it
/// outside a cache ([`crate::cache::caching`]) so hits stay 0.
///
/// ```
/// use std::sync::Arc;
/// use serde_json::json;
/// use toolnexus::classifier::*;
/// use toolnexus::cost::{CostSource, Pricing, Prices, pricing};
/// use toolnexus::judge::{noul, questions};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let judge = create_classifier(ClassifierOptions {
///     style: ClassifierStyle::Custom,
///     model: "jev-1.13".into(),
///     evaluate: Some(Arc::new(|_ctx, _state, _qs| Box::pin(async {
///         Decision::from_value(&json!({"model": "jev-1.13", "answers": {"spam": {"type": "noul", "noul": 0.1}},
///             "usage": {"input_tokens": 1000, "output_tokens": 0}})).map_err(|e| e.to_string())
///     }))),
///     ..Default::default()
/// })?;
/// let priced = pricing(judge, Pricing::Table(Prices::builtin().into()));
/// # let qs = questions(&[noul("spam", "Is it spam?")])?;
/// let e = priced.evaluate_request(EvalContext::new(), EvalRequest::new(json!("hi"), qs)).await?;
/// assert!(matches!(e.cost.source, Some(CostSource::Priced { .. })));
/// assert_eq!(e.decision.usage.cost, None, "the usage stays as the backend sent it");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }
/// ```
pub fn pricing(inner: Classifier, pricing: Pricing) -> Classifier {
    pricing_with_metrics(inner, pricing, None)
}

/// [`pricing`], with `on_metric` receiving each call's [`MetricEvent`] with
/// the settled cost and its source.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use toolnexus::classifier::{ClassifierOptions, MetricEvent, create_classifier};
/// use toolnexus::cost::{Pricing, pricing_with_metrics};
///
/// let seen: Arc<Mutex<Vec<MetricEvent>>> = Arc::default();
/// let sink = seen.clone();
/// let judge = create_classifier(ClassifierOptions::default())?;
/// let priced = pricing_with_metrics(judge, Pricing::Local, Some(Arc::new(move |m: &MetricEvent| {
///     sink.lock().unwrap().push(m.clone());
/// })));
/// # let _ = priced;
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
///
/// [`MetricEvent`]: crate::classifier::MetricEvent
pub fn pricing_with_metrics(
    inner: Classifier,
    pricing: Pricing,
    on_metric: Option<MetricFn>,
) -> Classifier {
    let model = inner.model().to_string();
    let beneath = inner.clone();
    create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        model,
        evaluator: Some(Arc::new(inner)),
        pricing: Some(pricing),
        on_metric,
        ..Default::default()
    })
    // The Custom style with an evaluator and a model has nothing left to refuse.
    .expect("a Custom classifier with an evaluator always builds")
    // Pricing changes no answer: the stack's fingerprint passes on.
    .layered_over(&beneath)
}
