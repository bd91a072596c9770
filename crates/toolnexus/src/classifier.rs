//! The judgment seam: typed questions in, a typed [`Decision`] out.
//!
//! Build a [`Classifier`] with [`create_classifier`], then call
//! [`Classifier::evaluate`] with a JSON state and [`Questions`]. Every answer is
//! read through a typed accessor that fails loudly ([`Decision::noul`],
//! [`Decision::choice`], [`Decision::score`]).
//!
//! A classifier **interprets; it never authorises**. A schema-valid decision can be
//! confidently wrong. Numeric limits, permissions and allow-lists stay in your
//! code; the decision only informs them. Nothing here is a security control.
//!
//! ```
//! use serde_json::json;
//! use toolnexus::classifier::{
//!     ClassifierOptions, ClassifierStyle, NoulQuestion, Questions, RecordedDecision,
//!     create_classifier,
//! };
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let questions = Questions::from([(
//!     "refund".to_string(),
//!     NoulQuestion { instructions: "Does the customer ask for money back?".into(), criteria: None }
//!         .into(),
//! )]);
//! let state = json!({"message": "I was charged twice, please refund one"});
//! let judge = create_classifier(ClassifierOptions {
//!     style: ClassifierStyle::Static,
//!     decisions: vec![RecordedDecision {
//!         state: state.clone(),
//!         questions: questions.clone(),
//!         response: br#"{"model":"jev-1.13","answers":{"refund":{"type":"noul","noul":0.96}}}"#.to_vec(),
//!     }],
//!     ..Default::default()
//! })?;
//! let d = judge.evaluate(state, &questions).await?;
//! if d.noul("refund")?.noul > 0.9 {
//!     // The decision informs; the policy (who may refund, how much) stays here.
//! }
//! # Ok(())
//! # }
//! ```

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::{StreamExt, TryStreamExt};
use serde_json::{Map, Value};
use tracing::Instrument;

use crate::price::{Cost, CostSource, Pricing};

mod asset;
mod backend {
    pub(crate) mod custom;
    #[cfg(feature = "http")]
    pub(crate) mod llm;
    pub(crate) mod recorded;
    #[cfg(feature = "http")]
    pub(crate) mod systemone;
}
mod canonical;
mod choice_options;
mod content;
mod decision;
mod evaluated;
mod evaluator;
mod fingerprint;
mod identity;
mod observe;
mod options;
mod question;
mod request;
mod wire;

/// The future an [`Evaluator`] returns (also `toolnexus::client::BoxFuture`,
/// which exists only with the `http` feature).
pub use crate::context::BoxFuture;
pub use crate::context::EvalContext;
pub use crate::defaults::{
    DEFAULT_BATCH_CONCURRENCY, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_RETRIES, DEFAULT_RETRY_BASE_MS,
    DEFAULT_RETRY_BUDGET_MS, DEFAULT_TIMEOUT_MS,
};
pub use crate::env::EnvSource;
pub(crate) use crate::error::msg;
pub use crate::error::{ClassifierError, ErrorKind};
pub use crate::json::{
    json_error, json_error_in, json_error_what, json_kind, parse_json_strict, parse_json_text,
    strip_bom,
};
pub use crate::retry::{
    DEFAULT_RETRYABLE_STATUSES, ErrorInfo, ErrorTier, Jitter, MAX_RETRY_AFTER, OnErrorFn,
};
pub use crate::usage::ClassifierUsage;
#[cfg(feature = "http")]
pub use backend::llm::{decode_reply, render_prompt};

pub use asset::{Asset, Assets, ImageFormat};
pub use canonical::{canonical_json, canonical_request, question_hash, write_canonical};
pub use choice_options::ChoiceOptions;
pub use content::{Content, IntoDescription};
pub(crate) use decision::check_coherence;
pub use decision::{
    BoxAnswer, BoxCoordinates, ChoiceAnswer, Decision, DecisionAnswer, NEAR_UNIFORM_TOLERANCE,
    NoulAnswer, ScoreAnswer, choice_confidence, near_uniform, score_confidence,
};
pub use evaluated::Evaluated;
pub use evaluator::{Evaluator, FullEvaluator};
pub use fingerprint::Fingerprint;
pub use identity::Identity;
#[cfg_attr(not(feature = "otel"), allow(unused_imports))]
pub(crate) use observe::{
    CallEnd, CallExport, CallWatch, Count, EndedCall, clear_call_export, current_trace_parent,
    set_call_export,
};
use observe::{CallNotes, IN_CALL, Place};
pub use observe::{GuardVerdict, TraceParent, guard_call, record_cascade_stage, with_trace_parent};
pub use options::{
    Backend, BodyTransformFn, ClassifierOptions, ClassifierStyle, EvaluateFn, MetricEvent,
    MetricFn, MetricName, MetricStatus, RecordedDecision,
};
pub use question::{
    BoxQuestion, ChoiceQuestion, MAX_CHOICE_OPTIONS, MAX_SCORE_LEVELS, MIN_SCORE_LEVELS,
    NoulCriteria, NoulQuestion, Question, Questions, ScoreQuestion, choice_over,
    degenerate_criteria, questions_from_wire, questions_wire, validate_questions,
};
pub use request::EvalRequest;
pub(crate) use request::Extras;
#[cfg(feature = "http")]
pub(crate) use wire::{Decoded, decode_slice_for};

use backend::recorded::ReplayBackend;
#[cfg(feature = "http")]
use backend::systemone::HttpBackend;

// One engine lives per classifier, behind the `Arc`: variant size does not matter.
#[allow(clippy::large_enum_variant)]
enum Engine {
    #[cfg(feature = "http")]
    SystemOne(HttpBackend),
    Static(ReplayBackend),
    Custom(EvaluateFn),
    #[cfg(feature = "http")]
    Llm(crate::client::Client),
    /// An evaluator whose errors surface unchanged: every layer (built with
    /// [`Classifier::from_evaluator`]) and every engine of `toolnexus-local`.
    Evaluator(Arc<dyn Evaluator>),
}

struct Inner {
    style: ClassifierStyle,
    model: String,
    engine: Engine,
    batch_concurrency: usize,
    warned: Mutex<HashSet<String>>,
    pricing: Option<crate::price::Pricing>,
}

/// A configured classifier. Cheap to clone (an `Arc`), `Send + Sync`, and meant to
/// be shared across tasks.
///
/// ```
/// use toolnexus::classifier::{ClassifierOptions, create_classifier};
///
/// let judge = create_classifier(ClassifierOptions::default())?;
/// assert_eq!(judge.model(), "jev-latest");
/// let shared = judge.clone();
/// # let _ = shared;
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Clone)]
pub struct Classifier {
    inner: Arc<Inner>,
    /// Beside `inner`, so a layer can add its part to a built classifier.
    fingerprint: Arc<Fingerprint>,
    /// What the bottom of the stack is, forwarded by every layer.
    identity: Arc<Identity>,
    /// Called once per call this classifier opens (see [`Classifier::with_metrics`]).
    on_metric: Option<MetricFn>,
}

impl std::fmt::Debug for Classifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Classifier");
        d.field("style", &self.inner.style)
            .field("model", &self.inner.model);
        if let Some(e) = &self.identity.endpoint {
            d.field("endpoint", e);
        }
        d.finish_non_exhaustive()
    }
}

/// Builds a classifier, applying the defaults of [`ClassifierOptions`] and
/// rejecting what cannot work: a style without its required option
/// (`classifier: style "llm" requires Client`, `classifier: style "custom" requires Evaluate`,
/// `classifier: style "static" requires Decisions`), a Jev model spelled for
/// TypeSafe on an openrouter.ai base URL, a bad URL or header name, or a
/// recorded decision that does not decode.
///
/// ```
/// use toolnexus::classifier::{ClassifierOptions, ClassifierStyle, create_classifier};
///
/// let e = create_classifier(ClassifierOptions {
///     style: ClassifierStyle::Custom,
///     ..Default::default()
/// })
/// .unwrap_err();
/// assert_eq!(e.to_string(), "classifier: style \"custom\" requires Evaluate");
///
/// let e = create_classifier(ClassifierOptions {
///     base_url: "https://openrouter.ai/api/v1".into(),
///     model: "jev-1.13".into(),
///     ..Default::default()
/// })
/// .unwrap_err();
/// assert!(e.to_string().contains("\"typesafe/jev-1.13\""), "{e}");
/// ```
pub fn create_classifier(options: ClassifierOptions) -> Result<Classifier, ClassifierError> {
    let r = options::resolve(&options)?;
    let engine = match options.style {
        #[cfg(feature = "http")]
        ClassifierStyle::SystemOne => Engine::SystemOne(HttpBackend::new(&options, &r)?),
        #[cfg(not(feature = "http"))]
        ClassifierStyle::SystemOne | ClassifierStyle::Llm => {
            return Err(msg::needs_http(options.style.as_str()));
        }
        ClassifierStyle::Static => {
            if options.decisions.is_empty() {
                return Err(msg::requires("static", "Decisions"));
            }
            Engine::Static(ReplayBackend::new(&r.model, &options.decisions)?)
        }
        ClassifierStyle::Custom => match (options.evaluator.clone(), options.evaluate.clone()) {
            (Some(_), Some(_)) => {
                return Err(msg::custom_both());
            }
            (Some(e), None) => Engine::Evaluator(e),
            (None, Some(f)) => Engine::Custom(f),
            (None, None) => {
                return Err(msg::requires("custom", "Evaluate"));
            }
        },
        #[cfg(feature = "http")]
        ClassifierStyle::Llm => match options.client.clone() {
            Some(c) => Engine::Llm(c),
            None => return Err(msg::requires("llm", "Client")),
        },
    };
    let model = match &engine {
        #[cfg(feature = "http")]
        Engine::Llm(c) if options.model.trim().is_empty() => c.model().to_string(),
        _ => r.model.clone(),
    };
    let fingerprint = engine_fingerprint(&engine, &options, &model);
    let endpoint = match &engine {
        #[cfg(feature = "http")]
        Engine::SystemOne(b) => Some(b.endpoint().to_string()),
        _ => None,
    };
    Ok(Classifier {
        fingerprint: Arc::new(fingerprint),
        identity: Arc::new(Identity::new(options.style.as_str(), &model, endpoint)),
        on_metric: options.on_metric.clone(),
        inner: Arc::new(Inner {
            style: options.style,
            model,
            engine,
            batch_concurrency: r.batch_concurrency,
            warned: Mutex::new(HashSet::new()),
            pricing: options.pricing.clone(),
        }),
    })
}

/// What a style's own settings add to its [`Fingerprint`]: a System One
/// endpoint with its `request_params` and body transform, the recorded
/// decisions of a Static classifier, the chat client of an Llm one. A Custom
/// classifier adds nothing: its closure is the caller's to name
/// ([`Classifier::with_fingerprint_part`]).
fn engine_fingerprint(engine: &Engine, options: &ClassifierOptions, model: &str) -> Fingerprint {
    match engine {
        #[cfg(feature = "http")]
        Engine::SystemOne(b) => {
            let mut fp = Fingerprint::new(b.endpoint());
            if !options.request_params.is_empty() {
                fp = fp.with_part(
                    "request_params",
                    canonical_json(&Value::Object(options.request_params.clone())),
                );
            }
            if options.body_transform.is_some() {
                // A closure cannot be read: every transformed stack is told
                // apart from the plain one, and the caller names its own.
                fp = fp.with_part("body_transform", "unnamed");
            }
            fp
        }
        Engine::Static(_) => {
            let mut bytes = Vec::new();
            let mut part = |b: &[u8]| {
                bytes.extend_from_slice(&(b.len() as u64).to_le_bytes());
                bytes.extend_from_slice(b);
            };
            for d in &options.decisions {
                part(canonical_request(model, &d.questions).as_bytes());
                part(canonical_json(&d.state).as_bytes());
                part(&d.response);
            }
            Fingerprint::new(options.style.as_str())
                .with_part("static", Fingerprint::digest(&bytes))
        }
        #[cfg(feature = "http")]
        Engine::Llm(c) => {
            Fingerprint::new(options.style.as_str()).with_part("llm", c.fingerprint())
        }
        _ => Fingerprint::new(options.style.as_str()),
    }
}

impl Classifier {
    /// A [`Custom`](ClassifierStyle::Custom) classifier around `evaluator`,
    /// answering to `model`: the one-line way to turn a wrapper of your own
    /// into a classifier that is shared, wrapped and composed like any other.
    /// It cannot fail (a Custom classifier with an evaluator has nothing to
    /// refuse); `create_classifier` with [`ClassifierOptions::evaluator`] builds
    /// the same with the other options set.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use serde_json::json;
    /// use toolnexus::classifier::*;
    ///
    /// /// Counts the calls that reach the classifier inside.
    /// struct Counted(Classifier, Arc<AtomicU64>);
    ///
    /// impl Evaluator for Counted {
    ///     fn call(&self, ctx: EvalContext, request: EvalRequest) -> BoxFuture<Result<Decision, ClassifierError>> {
    ///         self.1.fetch_add(1, Ordering::Relaxed);
    ///         let inner = self.0.clone();
    ///         Box::pin(async move { inner.evaluate_request(ctx, request).await.map(|e| e.decision) })
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let qs = Questions::from([("spam".to_string(), NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into())]);
    /// let inner = create_classifier(ClassifierOptions {
    ///     style: ClassifierStyle::Static,
    ///     decisions: vec![RecordedDecision {
    ///         state: json!("hello"),
    ///         questions: qs.clone(),
    ///         response: br#"{"model":"rules-v1","answers":{"spam":{"type":"noul","noul":0.1}}}"#.to_vec(),
    ///     }],
    ///     ..Default::default()
    /// })?;
    /// let calls = Arc::new(AtomicU64::new(0));
    /// let judge = Classifier::from_evaluator("rules-v1", Counted(inner, calls.clone()));
    /// judge.evaluate(json!("hello"), &qs).await?;
    /// assert_eq!((judge.model(), calls.load(Ordering::Relaxed)), ("rules-v1", 1));
    /// # Ok(())
    /// # }
    /// ```
    pub fn from_evaluator(model: impl Into<String>, evaluator: impl Evaluator) -> Classifier {
        create_classifier(ClassifierOptions {
            style: ClassifierStyle::Custom,
            model: model.into(),
            evaluator: Some(Arc::new(evaluator)),
            ..Default::default()
        })
        // The Custom style with an evaluator and a model has nothing left to refuse.
        .expect("a Custom classifier with an evaluator always builds")
    }

    /// This classifier as a layer over `inner`: it takes `inner`'s
    /// [`Fingerprint`] (its origin and parts) as the start of its own, so a
    /// cache in front of it keys on everything beneath. Call it on every
    /// wrapper built with [`from_evaluator`](Classifier::from_evaluator) around
    /// another classifier; then add the wrapper's own part with
    /// [`with_fingerprint_part`](Classifier::with_fingerprint_part) when it can
    /// change an answer. A wrapper built without it fingerprints as a plain
    /// Custom classifier, as if nothing were beneath it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use serde_json::json;
    /// use toolnexus::cache::{MemoryCache, caching};
    /// use toolnexus::classifier::*;
    ///
    /// /// Halves every noul answer: a layer that changes answers.
    /// struct Halved(Classifier);
    ///
    /// impl FullEvaluator for Halved {
    ///     fn call_full(&self, ctx: EvalContext, request: EvalRequest) -> BoxFuture<Result<Evaluated, ClassifierError>> {
    ///         let inner = self.0.clone();
    ///         Box::pin(async move {
    ///             let mut e = inner.evaluate_request(ctx, request).await?;
    ///             for a in e.decision.answers.values_mut() {
    ///                 if let DecisionAnswer::Noul(n) = a { n.noul /= 2.0; }
    ///             }
    ///             Ok(e)
    ///         })
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ClassifierError> {
    /// let qs = Questions::from([("spam".to_string(), NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into())]);
    /// let base = create_classifier(ClassifierOptions {
    ///     style: ClassifierStyle::Static,
    ///     decisions: vec![RecordedDecision {
    ///         state: json!("hi"),
    ///         questions: qs.clone(),
    ///         response: br#"{"model":"jev-1.13","answers":{"spam":{"type":"noul","noul":0.8}}}"#.to_vec(),
    ///     }],
    ///     ..Default::default()
    /// })?;
    /// let halved = Classifier::from_evaluator(base.model(), Halved(base.clone()))
    ///     .layered_over(&base)
    ///     .with_fingerprint_part("halved", "v1");
    /// assert_eq!(halved.fingerprint().parts().len(), 2, "the recordings, then the halving");
    ///
    /// // One store, two stacks: neither is served the other's answer.
    /// let store = Arc::new(MemoryCache::new());
    /// let plain = caching(base, store.clone()).evaluate(json!("hi"), &qs).await?;
    /// let half = caching(halved, store.clone()).evaluate(json!("hi"), &qs).await?;
    /// assert_eq!((plain.noul("spam")?.noul, half.noul("spam")?.noul), (0.8, 0.4));
    /// assert_eq!(store.len(), 2);
    /// # Ok(())
    /// # }
    /// ```
    pub fn layered_over(mut self, inner: &Classifier) -> Classifier {
        let own = Fingerprint::clone(&self.fingerprint);
        self.fingerprint = Arc::new(own.over(&inner.fingerprint));
        self.identity = inner.identity.clone();
        self
    }

    /// What the bottom of this stack is ([`Identity`]): its style or engine,
    /// endpoint, requested model and locality, forwarded by every layer built
    /// with [`layered_over`](Classifier::layered_over).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use toolnexus::cache::{MemoryCache, caching};
    /// use toolnexus::classifier::{ClassifierOptions, create_classifier};
    /// let judge = create_classifier(ClassifierOptions {
    ///     base_url: "http://127.0.0.1:9/v1".into(),
    ///     ..Default::default()
    /// })?;
    /// let cached = caching(judge.clone(), Arc::new(MemoryCache::new()));
    /// assert_eq!(cached.identity(), judge.identity(), "a cache still says what it wraps");
    /// assert_eq!(cached.identity().style, "systemone");
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// This classifier, saying it is `identity`: what an engine built with
    /// [`from_evaluator`](Classifier::from_evaluator) calls to name itself and
    /// say whether it judges on this machine (then pricing settles its calls
    /// at $0).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use serde_json::json;
    /// use toolnexus::classifier::*;
    ///
    /// struct Rules;
    /// impl Evaluator for Rules {
    ///     fn call(&self, _ctx: EvalContext, _r: EvalRequest) -> BoxFuture<Result<Decision, ClassifierError>> {
    ///         Box::pin(async { Decision::from_value(&json!({"model": "rules-v1", "answers": {}})) })
    ///     }
    /// }
    /// let judge = Classifier::from_evaluator("rules-v1", Rules)
    ///     .with_identity(Identity::local("rules", "rules-v1"));
    /// assert!(judge.identity().local);
    /// ```
    pub fn with_identity(mut self, identity: Identity) -> Classifier {
        self.identity = Arc::new(identity);
        self
    }

    /// This classifier with `on_metric` called once for each call it opens (a
    /// [`MetricEvent`] per evaluate, one per warning), in place of the one its
    /// options set. A stack's builder sets it on the outermost layer only: one
    /// call, one event. The classifier is shared, not copied.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use serde_json::json;
    /// use toolnexus::classifier::*;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ClassifierError> {
    /// let qs = Questions::from([("spam".to_string(), NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into())]);
    /// let judge = create_classifier(ClassifierOptions {
    ///     style: ClassifierStyle::Static,
    ///     decisions: vec![RecordedDecision {
    ///         state: json!("hi"),
    ///         questions: qs.clone(),
    ///         response: br#"{"model":"jev-1.13","answers":{"spam":{"type":"noul","noul":0.8}}}"#.to_vec(),
    ///     }],
    ///     ..Default::default()
    /// })?;
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let log = seen.clone();
    /// let judge = judge.with_metrics(Arc::new(move |e: &MetricEvent| {
    ///     log.lock().unwrap().push((e.name, e.status));
    /// }));
    /// judge.evaluate(json!("hi"), &qs).await?;
    /// assert_eq!(*seen.lock().unwrap(), [(MetricName::Evaluate, MetricStatus::Ok)]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_metrics(mut self, on_metric: MetricFn) -> Classifier {
        self.on_metric = Some(on_metric);
        self
    }

    /// This classifier with one more part on its [`Fingerprint`]: `layer` names
    /// what can change an answer (a rescaler, a prompt, a threshold) and
    /// `value` its setting or the hash of its contents
    /// ([`Fingerprint::digest`]). A cache in front then keeps its answers
    /// apart from those of the same stack with another value, or without the
    /// part. The classifier itself is shared, not copied: only the
    /// fingerprint differs.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use serde_json::json;
    /// use toolnexus::cache::{MemoryCache, caching};
    /// use toolnexus::classifier::*;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ClassifierError> {
    /// let rules = |p: f64| create_classifier(ClassifierOptions {
    ///     style: ClassifierStyle::Custom,
    ///     evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
    ///         Box::pin(async move {
    ///             Decision::from_value(&json!({"model": "rules", "answers": {"spam": {"type": "noul", "noul": p}}}))
    ///                 .map_err(|e| e.to_string())
    ///         })
    ///     })),
    ///     ..Default::default()
    /// });
    /// // Two rule sets behind one model name: the part keeps them apart.
    /// let strict = rules(0.9)?.with_fingerprint_part("rules", "strict");
    /// let lenient = rules(0.1)?.with_fingerprint_part("rules", "lenient");
    /// let store = Arc::new(MemoryCache::new());
    /// let qs = Questions::from([("spam".to_string(), NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into())]);
    /// caching(strict, store.clone()).evaluate(json!("hi"), &qs).await?;
    /// let d = caching(lenient, store.clone()).evaluate(json!("hi"), &qs).await?;
    /// assert_eq!(d.noul("spam")?.noul, 0.1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_fingerprint_part(
        mut self,
        layer: impl Into<String>,
        value: impl Into<String>,
    ) -> Classifier {
        let own = Fingerprint::clone(&self.fingerprint);
        self.fingerprint = Arc::new(own.with_part(layer, value));
        self
    }

    /// Everything beneath this classifier that can change an answer (see
    /// [`Fingerprint`]); what a cache in front of it keys on.
    ///
    /// ```
    /// use toolnexus::classifier::{ClassifierOptions, create_classifier};
    /// let judge = create_classifier(ClassifierOptions::default())?;
    /// assert!(judge.fingerprint().origin().ends_with("/systemone"));
    /// assert!(judge.fingerprint().is_plain());
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn fingerprint(&self) -> &Fingerprint {
        &self.fingerprint
    }

    /// The style this classifier runs.
    pub fn style(&self) -> ClassifierStyle {
        self.inner.style
    }

    /// Where a System One classifier posts (credentials and query removed),
    /// also seen through the layers over one ([`Identity::endpoint`]); `None`
    /// for the other styles.
    ///
    /// ```
    /// use toolnexus::classifier::{ClassifierOptions, create_classifier};
    /// let judge = create_classifier(ClassifierOptions {
    ///     base_url: "http://127.0.0.1:9/v1".into(),
    ///     ..Default::default()
    /// })?;
    /// assert_eq!(judge.endpoint(), Some("http://127.0.0.1:9/v1/systemone"));
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn endpoint(&self) -> Option<&str> {
        self.identity.endpoint.as_deref()
    }

    /// The model it asks for (a decision's `model` says what actually answered).
    pub fn model(&self) -> &str {
        &self.inner.model
    }

    /// Evaluates `questions` against `state` with a default [`EvalContext`].
    ///
    /// Dropping the future abandons the call (an HTTP request in flight is aborted).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use serde_json::json;
    /// # use toolnexus::classifier::*;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ClassifierError> {
    /// let judge = create_classifier(ClassifierOptions {
    ///     style: ClassifierStyle::Custom,
    ///     evaluate: Some(Arc::new(|_ctx, _state, _qs| {
    ///         Box::pin(async {
    ///             Decision::from_slice(br#"{"model":"rule","answers":{"spam":{"type":"noul","noul":0.0}}}"#)
    ///                 .map_err(|e| e.to_string())
    ///         })
    ///     })),
    ///     ..Default::default()
    /// })?;
    /// let qs = Questions::from([("spam".to_string(), NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into())]);
    /// let d = judge.evaluate(json!("hello"), &qs).await?;
    /// assert_eq!(d.noul("spam")?.noul, 0.0);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn evaluate(
        &self,
        state: Value,
        questions: &Questions,
    ) -> Result<Decision, ClassifierError> {
        self.evaluate_ctx(EvalContext::default(), state, questions)
            .await
    }

    /// Evaluates with a context: cancel through `ctx.cancel` and the call returns
    /// `classifier: context canceled` promptly, also during a backoff sleep.
    ///
    /// The questions are checked first (limits, non-empty), then sent; the answer
    /// is decoded strictly and checked against the questions: an answer of the
    /// wrong type, a choice that was not offered, a probability outside [0, 1] or
    /// a score outside the rubric is an error naming the key. Answers to keys
    /// never asked are dropped and reported as a `classifier.warning`.
    ///
    /// Dropping the future abandons the call: an HTTP request in flight is
    /// aborted, and no metric is emitted for it.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use serde_json::json;
    /// # use toolnexus::classifier::*;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ClassifierError> {
    /// let judge = create_classifier(ClassifierOptions {
    ///     style: ClassifierStyle::Custom,
    ///     evaluate: Some(Arc::new(|_ctx, _state, _qs| {
    ///         Box::pin(async {
    ///             Decision::from_slice(br#"{"model":"m","answers":{"q":{"type":"noul","noul":1.5}}}"#)
    ///                 .map_err(|e| e.to_string())
    ///         })
    ///     })),
    ///     ..Default::default()
    /// })?;
    /// let qs = Questions::from([("q".to_string(), NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into())]);
    /// let ctx = EvalContext::new().with_call_name("example");
    /// let e = judge.evaluate_ctx(ctx, json!(null), &qs).await.unwrap_err();
    /// assert_eq!(e.to_string(), "classifier: answer \"q\": noul 1.5 is outside [0, 1]");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn evaluate_ctx(
        &self,
        ctx: EvalContext,
        state: Value,
        questions: &Questions,
    ) -> Result<Decision, ClassifierError> {
        self.run(ctx, state, questions, Extras::none())
            .await
            .map(|e| e.decision)
    }

    /// Evaluates a whole [`EvalRequest`]: a model override, image assets and
    /// extra wire fields as well as the state and questions. The System One
    /// style sends them all; Static honours a model (it is part of the lookup);
    /// every other style refuses what it cannot honour with
    /// [`ErrorKind::Unsupported`], naming it, before anything is sent. Returns
    /// the decision with the backend's request id and the keys of dropped
    /// answers.
    ///
    /// Dropping the future abandons the call, as for
    /// [`evaluate_ctx`](Classifier::evaluate_ctx).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use serde_json::json;
    /// # use toolnexus::classifier::*;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ClassifierError> {
    /// let judge = create_classifier(ClassifierOptions {
    ///     style: ClassifierStyle::Custom,
    ///     evaluate: Some(Arc::new(|_ctx, _state, _qs| {
    ///         Box::pin(async {
    ///             Decision::from_slice(br#"{"model":"m","answers":{"q":{"type":"noul","noul":0.2}}}"#)
    ///                 .map_err(|e| e.to_string())
    ///         })
    ///     })),
    ///     ..Default::default()
    /// })?;
    /// let qs = Questions::from([("q".to_string(), NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into())]);
    /// let photo = Asset { format: ImageFormat::Png, data: b"\x89PNG\r\n\x1a\n".to_vec() };
    /// let req = EvalRequest::new(json!("see img-1"), qs.clone())
    ///     .with_assets(Assets::from([("img-1".to_string(), photo)]));
    /// let e = judge.evaluate_request(EvalContext::new(), req).await.unwrap_err();
    /// assert_eq!(e.to_string(), "classifier: style \"custom\" cannot use image asset \"img-1\"");
    /// assert_eq!(e.kind(), ErrorKind::Unsupported);
    ///
    /// let ok = judge.evaluate_request(EvalContext::new(), EvalRequest::new(json!("hi"), qs)).await?;
    /// assert_eq!(ok.decision.noul("q")?.noul, 0.2);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn evaluate_request(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> Result<Evaluated, ClassifierError> {
        let EvalRequest {
            state,
            questions,
            model,
            assets,
            extra,
            wire,
        } = request;
        let extras = Extras {
            model: model.as_deref(),
            assets: &assets,
            extra: &extra,
            wire: wire.as_ref(),
        };
        self.run(ctx, state, &questions, extras).await
    }

    async fn run(
        &self,
        ctx: EvalContext,
        state: Value,
        questions: &Questions,
        extras: Extras<'_>,
    ) -> Result<Evaluated, ClassifierError> {
        validate_questions(questions)?;
        if IN_CALL.try_with(|_| ()).is_ok() {
            // A layer of a stack, inside the call its outermost classifier
            // opened: that one's span, log line and metric cover this call.
            return self
                .evaluate_checked(ctx, state, questions, extras, Place::Inside)
                .await;
        }
        let id = &self.identity;
        let span = tracing::info_span!(
            "classifier.evaluate",
            style = %id.style,
            model = %id.model,
            endpoint = id.endpoint.as_deref().unwrap_or(""),
            local = id.local,
            call_name = %ctx.call_name,
            answered_model = tracing::field::Empty,
            outcome = tracing::field::Empty,
            error_kind = tracing::field::Empty,
            ms = tracing::field::Empty,
            input_tokens = tracing::field::Empty,
            output_tokens = tracing::field::Empty,
            cache_hit = tracing::field::Empty,
            cost_usd = tracing::field::Empty,
            cost_source = tracing::field::Empty,
            cascade_stage = tracing::field::Empty,
        );
        let call = self
            .evaluate_checked(ctx, state, questions, extras, Place::Outermost(&span))
            .instrument(span.clone());
        IN_CALL.scope(CallNotes::default(), call).await
    }

    async fn dispatch(
        &self,
        ctx: &EvalContext,
        state: Value,
        questions: &Questions,
        extras: Extras<'_>,
    ) -> Result<Evaluated, ClassifierError> {
        let style = self.inner.style.as_str();
        match &self.inner.engine {
            #[cfg(feature = "http")]
            Engine::SystemOne(b) => b.evaluate(ctx, &state, questions, extras).await,
            Engine::Static(b) => {
                if ctx.cancel.is_cancelled() {
                    return Err(msg::cancelled());
                }
                let model = extras.model.unwrap_or(&self.inner.model);
                Extras {
                    model: None,
                    ..extras
                }
                .refuse_beyond(style, model)?;
                b.evaluate(model, &state, questions)
            }
            Engine::Custom(f) => {
                extras.refuse_beyond(style, &self.inner.model)?;
                backend::custom::evaluate(f, ctx, state, questions)
                    .await
                    .map(Evaluated::new)
            }
            #[cfg(feature = "http")]
            Engine::Llm(c) => {
                extras.refuse_beyond(style, &self.inner.model)?;
                backend::llm::evaluate(c, ctx, &state, questions).await
            }
            Engine::Evaluator(f) => {
                let request = EvalRequest {
                    state,
                    questions: questions.clone(),
                    model: extras.model.map(str::to_string),
                    assets: extras.assets.clone(),
                    extra: extras.extra.clone(),
                    wire: extras.wire.cloned(),
                };
                let fut = f.call_full(ctx.clone(), request);
                match ctx.cancel.run_until_cancelled(fut).await {
                    None => Err(msg::cancelled()),
                    Some(r) => r,
                }
            }
        }
    }

    async fn evaluate_checked(
        &self,
        ctx: EvalContext,
        state: Value,
        questions: &Questions,
        extras: Extras<'_>,
        place: Place<'_>,
    ) -> Result<Evaluated, ClassifierError> {
        let started = Instant::now();
        if let Place::Outermost(_) = place {
            self.warn_degenerate(&ctx, questions);
        }
        let asked = extras.model.unwrap_or(&self.inner.model).to_string();
        let watch = match place {
            Place::Outermost(_) => observe::start_watch(&state, questions),
            Place::Inside => None,
        };
        let result = self.dispatch(&ctx, state, questions, extras).await;
        let result = result.and_then(|mut e| {
            // A wrapped classifier (a tape recorder) has already reported what it
            // dropped, scrubbed with the secrets only it knows.
            let reported = match self.inner.engine {
                Engine::Evaluator(_) => e.dropped.len(),
                _ => 0,
            };
            let more = check_coherence(&mut e.decision, questions)?;
            e.dropped.extend(more);
            // Dropped keys came from the backend: they may echo a secret.
            for key in &mut e.dropped[reported..] {
                *key = self.scrub(key);
            }
            for key in &e.dropped[reported..] {
                self.warning(&ctx, key, msg::dropped_answer(key));
            }
            Ok(e)
        });
        // Decode and coherence errors quote backend strings (answer keys, types,
        // option ids, a refusal), which a hostile backend can make the credential
        // it was sent: scrub them like the transport scrubs error bodies.
        let mut result = result.map_err(|e| e.scrubbed(|text| self.scrub(text)));
        if let (Ok(e), Some(p)) = (&mut result, &self.inner.pricing) {
            e.price_with(p, &asked);
        }
        self.report(&ctx, &asked, started, &result, place, watch);
        result
    }

    /// `text` without the secrets of this classifier's HTTP backend, if it has one.
    fn scrub(&self, text: &str) -> String {
        match &self.inner.engine {
            #[cfg(feature = "http")]
            Engine::SystemOne(b) => b.scrub(text),
            #[cfg(feature = "http")]
            Engine::Llm(c) => c.scrub(text),
            _ => text.to_string(),
        }
    }

    /// Evaluates every state against the same questions, in order, with at most
    /// `batch_concurrency` (default 16) in flight. Fails closed: if any state
    /// fails, the lowest-index failure is returned, its message starting
    /// `state <i>: `, and the rest are abandoned. An empty list is an error.
    ///
    /// Dropping the future abandons every state still in flight.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use serde_json::json;
    /// # use toolnexus::classifier::*;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ClassifierError> {
    /// let judge = create_classifier(ClassifierOptions {
    ///     style: ClassifierStyle::Custom,
    ///     evaluate: Some(Arc::new(|_ctx, state: serde_json::Value, _qs| {
    ///         Box::pin(async move {
    ///             let p = if state.as_str() == Some("spam!") { 0.99 } else { 0.01 };
    ///             Decision::from_value(&json!({"model": "rule", "answers": {"spam": {"type": "noul", "noul": p}}}))
    ///                 .map_err(|e| e.to_string())
    ///         })
    ///     })),
    ///     ..Default::default()
    /// })?;
    /// let qs = Questions::from([("spam".to_string(), NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into())]);
    /// let ds = judge.evaluate_batch(vec![json!("hi"), json!("spam!")], &qs).await?;
    /// assert_eq!(ds[1].noul("spam")?.noul, 0.99);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn evaluate_batch(
        &self,
        states: Vec<Value>,
        questions: &Questions,
    ) -> Result<Vec<Decision>, ClassifierError> {
        self.evaluate_batch_ctx(EvalContext::default(), states, questions)
            .await
    }

    /// [`evaluate_batch`](Classifier::evaluate_batch) with a context shared by
    /// every state: cancelling it cancels them all.
    ///
    /// ```
    /// # use serde_json::json;
    /// # use toolnexus::classifier::*;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # let judge = create_classifier(ClassifierOptions::default()).unwrap();
    /// # let qs = Questions::from([("q".to_string(), NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into())]);
    /// let e = judge.evaluate_batch_ctx(EvalContext::new(), vec![], &qs).await.unwrap_err();
    /// assert_eq!(e.to_string(), "classifier: evaluate_batch needs at least one state");
    /// # }
    /// ```
    pub async fn evaluate_batch_ctx(
        &self,
        ctx: EvalContext,
        states: Vec<Value>,
        questions: &Questions,
    ) -> Result<Vec<Decision>, ClassifierError> {
        if states.is_empty() {
            return Err(msg::no_states());
        }
        validate_questions(questions)?;
        // A failure stops the states not yet finished; the caller's token still
        // cancels everything.
        let stop = ctx.cancel.child_token();
        let _guard = stop.clone().drop_guard();
        let n = states.len();
        futures::stream::iter(states.into_iter().enumerate())
            .map(|(i, state)| {
                let ctx = EvalContext {
                    cancel: stop.clone(),
                    call_name: ctx.call_name.clone(),
                };
                async move {
                    self.evaluate_ctx(ctx, state, questions)
                        .await
                        .map_err(|e| e.in_state(i))
                }
            })
            .buffered(self.inner.batch_concurrency.min(n))
            .try_collect()
            .await
    }
}
