//! The seam every style, engine and layer implements.

use super::*;

/// A typed evaluator: what the Custom style runs when given one
/// ([`ClassifierOptions::evaluator`]), and what every [`Classifier`] is, so a
/// classifier can wrap another (a cache, a fallback, a calibrator, a fake that
/// times out or answers 429 in your own tests) with public items only.
///
/// Unlike the seed's [`EvaluateFn`], it takes the whole [`EvalRequest`] (model,
/// assets and extra fields included: refuse what you cannot honour, e.g. with
/// [`EvalRequest::refuse_beyond`]) and its errors are [`ClassifierError`]s
/// passed on as they are. The classifier around it still checks every decision
/// against the questions, applies cancellation, and reports metrics.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use serde_json::json;
/// use toolnexus::classifier::*;
/// use toolnexus::client::BoxFuture;
///
/// /// Counts the calls that reach the classifier it wraps.
/// struct Counting { inner: Classifier, calls: AtomicUsize }
///
/// impl Evaluator for Counting {
///     fn call(&self, ctx: EvalContext, request: EvalRequest) -> BoxFuture<Result<Decision, ClassifierError>> {
///         self.calls.fetch_add(1, Ordering::Relaxed);
///         self.inner.call(ctx, request)
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), ClassifierError> {
/// let qs = Questions::from([("spam".to_string(), NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into())]);
/// let recorded = create_classifier(ClassifierOptions {
///     style: ClassifierStyle::Static,
///     decisions: vec![RecordedDecision {
///         state: json!("hi"),
///         questions: qs.clone(),
///         response: br#"{"model":"jev-1.13","answers":{"spam":{"type":"noul","noul":0.02}}}"#.to_vec(),
///     }],
///     ..Default::default()
/// })?;
/// let counting = Arc::new(Counting { inner: recorded, calls: AtomicUsize::new(0) });
/// let judge = create_classifier(ClassifierOptions {
///     style: ClassifierStyle::Custom,
///     evaluator: Some(counting.clone()),
///     ..Default::default()
/// })?;
/// assert_eq!(judge.evaluate(json!("hi"), &qs).await?.noul("spam")?.noul, 0.02);
/// assert_eq!(counting.calls.load(Ordering::Relaxed), 1);
/// # Ok(())
/// # }
/// ```
pub trait Evaluator: Send + Sync + 'static {
    /// Evaluates one request.
    fn call(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Decision, ClassifierError>>;

    /// Evaluates one request, with the backend's request id and the keys of
    /// answers dropped because nobody asked them. The default wraps
    /// [`call`](Evaluator::call); a [`Classifier`] fills in both.
    fn call_full(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Evaluated, ClassifierError>> {
        let fut = self.call(ctx, request);
        Box::pin(async move { fut.await.map(Evaluated::new) })
    }
}

/// An [`Evaluator`] written as [`call_full`](FullEvaluator::call_full) alone:
/// for a wrapper that passes on what the layer beneath settled (request id,
/// cost, extensions). Implement this and the type is an `Evaluator`, whose
/// `call` keeps the decision of `call_full`.
///
/// ```
/// use std::sync::Arc;
/// use serde_json::json;
/// use toolnexus::classifier::*;
///
/// /// Stamps every answer it passes on with a request id of its own.
/// struct Stamped(Classifier);
///
/// impl FullEvaluator for Stamped {
///     fn call_full(&self, ctx: EvalContext, request: EvalRequest) -> BoxFuture<Result<Evaluated, ClassifierError>> {
///         let inner = self.0.clone();
///         Box::pin(async move {
///             let mut e = inner.evaluate_request(ctx, request).await?;
///             e.request_id = Some("stamped".into());
///             Ok(e)
///         })
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), ClassifierError> {
/// let qs = Questions::from([("spam".to_string(), NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into())]);
/// let recorded = create_classifier(ClassifierOptions {
///     style: ClassifierStyle::Static,
///     decisions: vec![RecordedDecision {
///         state: json!("hi"),
///         questions: qs.clone(),
///         response: br#"{"model":"jev-1.13","answers":{"spam":{"type":"noul","noul":0.02}}}"#.to_vec(),
///     }],
///     ..Default::default()
/// })?;
/// let judge = Classifier::from_evaluator("jev-1.13", Stamped(recorded));
/// let e = judge.evaluate_request(EvalContext::default(), EvalRequest::new(json!("hi"), qs)).await?;
/// assert_eq!(e.request_id.as_deref(), Some("stamped"));
/// assert_eq!(e.decision.noul("spam")?.noul, 0.02);
/// # Ok(())
/// # }
/// ```
pub trait FullEvaluator: Send + Sync + 'static {
    /// Evaluates one request, with everything [`Evaluated`] carries.
    fn call_full(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Evaluated, ClassifierError>>;
}

impl<T: FullEvaluator> Evaluator for T {
    fn call(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Decision, ClassifierError>> {
        let fut = FullEvaluator::call_full(self, ctx, request);
        Box::pin(async move { fut.await.map(|e| e.decision) })
    }

    fn call_full(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Evaluated, ClassifierError>> {
        FullEvaluator::call_full(self, ctx, request)
    }
}

/// A classifier is an evaluator: wrap it to add behaviour around it.
impl Evaluator for Classifier {
    fn call(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Decision, ClassifierError>> {
        let me = self.clone();
        Box::pin(async move { me.evaluate_request(ctx, request).await.map(|e| e.decision) })
    }

    fn call_full(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Evaluated, ClassifierError>> {
        let me = self.clone();
        Box::pin(async move { me.evaluate_request(ctx, request).await })
    }
}
