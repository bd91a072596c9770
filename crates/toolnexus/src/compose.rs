//! Compositions over the [`Evaluator`] seam (SPEC §12): each takes
//! classifiers and gives back a [`Classifier`], so a composition is used,
//! shared, wrapped and composed again like any other.
//!
//! # Fallback
//!
//! [`fallback`] (or the [`Fallback`] builder, for options) asks the backends in
//! order and returns the first decision. It moves on to the next backend only
//! when one is *unavailable* ([`is_unavailable`]); every other failure is an
//! answer about the request itself and is returned as it is:
//!
//! | failure | asks the next backend |
//! |---|---|
//! | timeout, transport (refused, reset, cut-off body) | yes |
//! | HTTP 5xx (529 included), HTTP 429 | yes |
//! | other HTTP 4xx (400, 401, 404, 422, …) | no, unless configured |
//! | decode, incoherent, missing answer, wrong type | no, unless configured |
//! | config, invalid question, unsupported, static or tape miss, custom | no, unless configured |
//! | cancelled | never |
//!
//! Each backend keeps its own timeout and retries: the chain moves on only once
//! a backend has given up. The decision is the answering backend's, untouched:
//! its `model` says who answered. When every backend is unavailable the error
//! names each failure in order —
//! `classifier: fallback: all 2 backends unavailable: [1] <detail>; [2] <detail>` —
//! and keeps the kind, status and `Retry-After` of the last one (which is also
//! its [`source`](std::error::Error::source)). Each move to the next backend is
//! logged as a warning with target `toolnexus::compose`, naming the backend,
//! the error kind and the (already scrubbed) message.
//!
//! ```
//! # use std::sync::Arc;
//! # use serde_json::json;
//! use toolnexus::classifier::*;
//! use toolnexus::client::BoxFuture;
//! use toolnexus::compose::fallback;
//! use toolnexus::judge::{noul, questions};
//!
//! /// A backend that is down: every call is an HTTP 503.
//! struct Down;
//! impl Evaluator for Down {
//!     fn call(&self, _: EvalContext, _: EvalRequest) -> BoxFuture<Result<Decision, ClassifierError>> {
//!         Box::pin(async { Err(ClassifierError::http(503, "overloaded")) })
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), ClassifierError> {
//! let primary = create_classifier(ClassifierOptions {
//!     style: ClassifierStyle::Custom,
//!     model: "jev-1.13".into(),
//!     evaluator: Some(Arc::new(Down)),
//!     ..Default::default()
//! })?;
//! let backup = create_classifier(ClassifierOptions {
//!     style: ClassifierStyle::Custom,
//!     evaluate: Some(Arc::new(|_ctx, _state, _qs| {
//!         Box::pin(async {
//!             Decision::from_slice(br#"{"model":"backup-7","answers":{"spam":{"type":"noul","noul":0.1}}}"#)
//!                 .map_err(|e| e.to_string())
//!         })
//!     })),
//!     ..Default::default()
//! })?;
//! let judge = fallback(primary, [backup]);
//! let d = judge.evaluate(json!("hello"), &questions(&[noul("spam", "Is it spam?")])?).await?;
//! assert_eq!(d.model, "backup-7", "the backup answered");
//! # Ok(())
//! # }
//! ```
//!
//! # Shadow
//!
//! [`shadow`] answers every call with the primary and, on a sample of the calls
//! the primary answered, asks a candidate the same request off the caller's
//! path (a Tokio task), then compares the two decisions key by key: |Δ noul|,
//! a choice mismatch with both choices, |Δ score|, keys one side did not
//! answer. Each comparison is a [`Disagreement`] (with the state and both
//! whole decisions), handed to
//! [`ShadowOptions::on_disagreement`] and appended as one line to
//! [`ShadowOptions::jsonl`]. A candidate failure is reported the same way (its
//! kind, status and message).
//!
//! The primary's result — decision or error — is returned as soon as it is
//! ready and exactly as it came; nothing the candidate does reaches the caller.
//! At most [`ShadowOptions::max_in_flight`] candidate calls run at once: a
//! sampled call beyond that is dropped, not queued, so a slow candidate cannot
//! pile up tasks. [`ShadowStats`] counts what happened (mirrored, compared,
//! disagreed, dropped, candidate failures, failed writes) and waits for the
//! calls in flight ([`ShadowStats::idle`]).
//!
//! ```
//! # use std::sync::{Arc, Mutex};
//! # use serde_json::json;
//! use toolnexus::classifier::*;
//! use toolnexus::compose::{Disagreement, KeyDiff, ShadowOptions, shadow};
//! use toolnexus::judge::{noul, questions};
//!
//! # fn answering(model: &'static str, p: f64) -> Classifier {
//! #     create_classifier(ClassifierOptions {
//! #         style: ClassifierStyle::Custom,
//! #         evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
//! #             Box::pin(async move {
//! #                 Decision::from_value(&json!({"model": model, "answers": {"spam": {"type": "noul", "noul": p}}}))
//! #                     .map_err(|e| e.to_string())
//! #             })
//! #         })),
//! #         ..Default::default()
//! #     })
//! #     .unwrap()
//! # }
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), ClassifierError> {
//! // `answering(model, p)`: a Custom classifier whose decision says noul `p`.
//! let (primary, candidate) = (answering("jev-1.13", 0.25), answering("jev-2", 0.75));
//! let seen: Arc<Mutex<Vec<Disagreement>>> = Arc::default();
//! let sink = seen.clone();
//! let options = ShadowOptions::new(1.0).with_on_disagreement(move |d| sink.lock().unwrap().push(d.clone()));
//! let stats = options.stats.clone();
//! let judge = shadow(primary, candidate, options);
//!
//! let d = judge.evaluate(json!("hello"), &questions(&[noul("spam", "Is it spam?")])?).await?;
//! assert_eq!((d.model.as_str(), d.noul("spam")?.noul), ("jev-1.13", 0.25), "the primary's answer");
//!
//! stats.idle().await;
//! let seen = seen.lock().unwrap();
//! assert_eq!(seen[0].keys["spam"], KeyDiff::Noul { primary: 0.25, candidate: 0.75, delta: 0.5 });
//! // The state asked and both whole decisions come with it.
//! assert_eq!(seen[0].state, json!("hello"));
//! assert_eq!(seen[0].candidate_decision.as_ref().map(|d| d.model.as_str()), Some("jev-2"));
//! assert_eq!((stats.compared(), stats.disagreed()), (1, 1));
//! # Ok(())
//! # }
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use crate::classifier::{
    BoxCoordinates, Classifier, ClassifierError, Decision, DecisionAnswer, ErrorKind, EvalContext,
    EvalRequest, Evaluated, FullEvaluator,
};
use crate::context::BoxFuture;
use crate::error::msg;

// ---------------------------------------------------------------- fallback

/// Whether `e` says the backend is unavailable rather than that the request
/// failed: a timeout, a transport failure, HTTP 5xx (529 included) or HTTP 429.
/// What [`fallback`] moves on after.
///
/// ```
/// use std::time::Duration;
/// use toolnexus::classifier::ClassifierError;
/// use toolnexus::compose::is_unavailable;
///
/// assert!(is_unavailable(&ClassifierError::http(529, "overloaded")));
/// assert!(is_unavailable(&ClassifierError::http(429, "slow down")));
/// assert!(is_unavailable(&ClassifierError::timeout(Duration::from_secs(10))));
/// assert!(is_unavailable(&ClassifierError::transport("connection refused")));
/// assert!(!is_unavailable(&ClassifierError::http(401, "bad key")));
/// assert!(!is_unavailable(&ClassifierError::decode("response is empty")));
/// assert!(!is_unavailable(&ClassifierError::cancelled()));
/// ```
pub fn is_unavailable(e: &ClassifierError) -> bool {
    match e.kind() {
        ErrorKind::Timeout | ErrorKind::Transport => true,
        ErrorKind::Http => e
            .status()
            .is_some_and(|s| s == 429 || (500..=599).contains(&s)),
        _ => false,
    }
}

/// A chain of backends asked in order, each only when the one before it is
/// unavailable. [`fallback`] builds the usual chain in one call; the builder
/// adds the failures that should also move on.
///
/// ```
/// # use std::sync::Arc;
/// # use serde_json::json;
/// use toolnexus::classifier::*;
/// use toolnexus::compose::Fallback;
/// use toolnexus::judge::{noul, questions};
///
/// # fn answering(model: &'static str, answer: &'static str) -> Classifier {
/// #     create_classifier(ClassifierOptions {
/// #         style: ClassifierStyle::Custom,
/// #         evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
/// #             Box::pin(async move {
/// #                 Decision::from_slice(format!(r#"{{"model":"{model}","answers":{answer}}}"#).as_bytes())
/// #                     .map_err(|e| e.to_string())
/// #             })
/// #         })),
/// #         ..Default::default()
/// #     })
/// #     .unwrap()
/// # }
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), ClassifierError> {
/// // `answering(model, answers)`: a Custom classifier whose decision has these answers.
/// let garbled = answering("jev-1.13", r#"{"spam":{"type":"noul","noul":7}}"#);
/// let steady = answering("backup-7", r#"{"spam":{"type":"noul","noul":0.1}}"#);
/// let judge = Fallback::new(garbled)
///     .then(steady)
///     .also_on(ErrorKind::Incoherent)
///     .build();
/// let d = judge.evaluate(json!("hi"), &questions(&[noul("spam", "Is it spam?")])?).await?;
/// assert_eq!(d.model, "backup-7");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a fallback chain does nothing until built"]
pub struct Fallback {
    backends: Vec<Classifier>,
    kinds: Vec<ErrorKind>,
    statuses: Vec<u16>,
}

impl Fallback {
    /// A chain that starts with `primary`. The built classifier answers to the
    /// primary's [`model`](Classifier::model).
    ///
    /// ```
    /// use toolnexus::classifier::{ClassifierOptions, create_classifier};
    /// use toolnexus::compose::Fallback;
    ///
    /// let primary = create_classifier(ClassifierOptions { model: "jev-1.13".into(), ..Default::default() })?;
    /// assert_eq!(Fallback::new(primary).build().model(), "jev-1.13");
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn new(primary: Classifier) -> Fallback {
        Fallback {
            backends: vec![primary],
            kinds: Vec::new(),
            statuses: Vec::new(),
        }
    }

    /// Adds `next` at the end of the chain.
    ///
    /// ```
    /// use toolnexus::classifier::{ClassifierOptions, create_classifier};
    /// use toolnexus::compose::Fallback;
    ///
    /// let a = create_classifier(ClassifierOptions::default())?;
    /// let b = create_classifier(ClassifierOptions::default())?;
    /// let judge = Fallback::new(a).then(b).build();
    /// # let _ = judge;
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn then(mut self, next: Classifier) -> Fallback {
        self.backends.push(next);
        self
    }

    /// Also moves on after a failure of this kind (for example
    /// [`ErrorKind::Decode`] when a backend is known to garble answers under
    /// load, or [`ErrorKind::Http`] for every HTTP status).
    /// [`ErrorKind::Cancelled`] never moves on: a cancelled call stops the chain.
    ///
    /// ```
    /// use toolnexus::classifier::{ClassifierError, ClassifierOptions, ErrorKind, create_classifier};
    /// use toolnexus::compose::Fallback;
    ///
    /// let chain = Fallback::new(create_classifier(ClassifierOptions::default())?)
    ///     .also_on(ErrorKind::Decode)
    ///     .also_on(ErrorKind::Cancelled);
    /// assert!(chain.falls_through(&ClassifierError::decode("response is empty")));
    /// assert!(!chain.falls_through(&ClassifierError::cancelled()));
    /// # Ok::<(), ClassifierError>(())
    /// ```
    pub fn also_on(mut self, kind: ErrorKind) -> Fallback {
        self.kinds.push(kind);
        self
    }

    /// Also moves on after an HTTP error with this status (for example 404 when
    /// a model exists on only some of the backends).
    ///
    /// ```
    /// use toolnexus::classifier::{ClassifierError, ClassifierOptions, create_classifier};
    /// use toolnexus::compose::Fallback;
    ///
    /// let chain = Fallback::new(create_classifier(ClassifierOptions::default())?).also_on_status(404);
    /// assert!(chain.falls_through(&ClassifierError::http(404, "no such model")));
    /// assert!(!chain.falls_through(&ClassifierError::http(400, "bad request")));
    /// # Ok::<(), ClassifierError>(())
    /// ```
    pub fn also_on_status(mut self, status: u16) -> Fallback {
        self.statuses.push(status);
        self
    }

    /// Whether this chain moves on to the next backend after `e`:
    /// [`is_unavailable`], or a kind or status added with
    /// [`also_on`](Fallback::also_on) or [`also_on_status`](Fallback::also_on_status);
    /// never after a cancellation.
    ///
    /// ```
    /// use toolnexus::classifier::{ClassifierError, ClassifierOptions, create_classifier};
    /// use toolnexus::compose::Fallback;
    ///
    /// let chain = Fallback::new(create_classifier(ClassifierOptions::default())?);
    /// assert!(chain.falls_through(&ClassifierError::http(503, "busy")));
    /// assert!(!chain.falls_through(&ClassifierError::http(422, "invalid body")));
    /// # Ok::<(), ClassifierError>(())
    /// ```
    pub fn falls_through(&self, e: &ClassifierError) -> bool {
        self.policy().falls_through(e)
    }

    /// The chain as one classifier.
    ///
    /// ```
    /// use toolnexus::classifier::{ClassifierOptions, ClassifierStyle, create_classifier};
    /// use toolnexus::compose::Fallback;
    ///
    /// let judge = Fallback::new(create_classifier(ClassifierOptions::default())?).build();
    /// assert_eq!(judge.style(), ClassifierStyle::Custom);
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn build(self) -> Classifier {
        let model = self.backends[0].model().to_string();
        let primary = self.backends[0].clone();
        let chain = self.chain_fingerprint();
        let built = Classifier::from_evaluator(
            model,
            Chain {
                inner: Arc::new(self),
            },
        )
        .layered_over(&primary);
        // A chain of one answers as its primary does.
        match chain {
            Some(chain) => built.with_fingerprint_part("fallback", chain),
            None => built,
        }
    }

    /// What the backends after the primary add to the chain's fingerprint:
    /// each one's whole fingerprint and model, in order, and what moves the
    /// chain on beyond unavailability; `None` for a chain of one.
    fn chain_fingerprint(&self) -> Option<String> {
        if self.backends.len() < 2 {
            return None;
        }
        let mut text = String::new();
        for (i, b) in self.backends.iter().enumerate().skip(1) {
            text.push_str(&format!(
                "[{}] {} model={}; ",
                i + 1,
                b.fingerprint(),
                b.model()
            ));
        }
        let kinds: Vec<&str> = self.kinds.iter().map(|k| k.as_str()).collect();
        text.push_str(&format!(
            "also_on={} also_on_status={:?}",
            kinds.join(","),
            self.statuses
        ));
        Some(text)
    }
}

/// `primary`, then each of `next` in order, each asked only when the one before
/// it is unavailable ([`is_unavailable`]). See the [module docs](self) for
/// what moves on and what the errors say; [`Fallback`] adds options.
///
/// ```
/// # use std::sync::Arc;
/// # use serde_json::json;
/// use toolnexus::classifier::*;
/// use toolnexus::client::BoxFuture;
/// use toolnexus::compose::fallback;
/// use toolnexus::judge::{noul, questions};
///
/// /// A backend that answers every call with this HTTP status.
/// struct Failing(u16);
/// impl Evaluator for Failing {
///     fn call(&self, _: EvalContext, _: EvalRequest) -> BoxFuture<Result<Decision, ClassifierError>> {
///         let status = self.0;
///         Box::pin(async move { Err(ClassifierError::http(status, "no")) })
///     }
/// }
/// fn failing(status: u16) -> Classifier {
///     create_classifier(ClassifierOptions {
///         style: ClassifierStyle::Custom,
///         evaluator: Some(Arc::new(Failing(status))),
///         ..Default::default()
///     })
///     .unwrap()
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), ClassifierError> {
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// let e = fallback(failing(503), [failing(529)]).evaluate(json!(1), &qs).await.unwrap_err();
/// assert_eq!(
///     e.to_string(),
///     "classifier: fallback: all 2 backends unavailable: [1] HTTP 503: no; [2] HTTP 529: no"
/// );
/// assert_eq!(e.status(), Some(529), "the last backend's status");
///
/// let e = fallback(failing(401), [failing(503)]).evaluate(json!(1), &qs).await.unwrap_err();
/// assert_eq!(e.to_string(), "classifier: HTTP 401: no", "a 401 is not an outage");
/// # Ok(())
/// # }
/// ```
pub fn fallback(primary: Classifier, next: impl IntoIterator<Item = Classifier>) -> Classifier {
    next.into_iter()
        .fold(Fallback::new(primary), Fallback::then)
        .build()
}

/// Which failures move a chain on.
struct Policy<'a> {
    kinds: &'a [ErrorKind],
    statuses: &'a [u16],
}

impl Policy<'_> {
    fn falls_through(&self, e: &ClassifierError) -> bool {
        if e.is_cancelled() {
            return false;
        }
        is_unavailable(e)
            || self.kinds.contains(&e.kind())
            || (e.is_http() && e.status().is_some_and(|s| self.statuses.contains(&s)))
    }
}

/// What a built [`Fallback`] runs.
struct Chain {
    inner: Arc<Fallback>,
}

impl FullEvaluator for Chain {
    fn call_full(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Evaluated, ClassifierError>> {
        let chain = Arc::clone(&self.inner);
        Box::pin(async move { chain.run(ctx, request).await })
    }
}

impl Fallback {
    fn policy(&self) -> Policy<'_> {
        Policy {
            kinds: &self.kinds,
            statuses: &self.statuses,
        }
    }

    async fn run(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> Result<Evaluated, ClassifierError> {
        let policy = self.policy();
        let (last, earlier) = self
            .backends
            .split_last()
            .expect("a chain starts with its primary");
        let mut failures: Vec<ClassifierError> = Vec::new();
        for (i, backend) in earlier.iter().enumerate() {
            if !failures.is_empty() && ctx.cancel.is_cancelled() {
                return Err(ClassifierError::cancelled());
            }
            let e = match backend.evaluate_request(ctx.clone(), request.clone()).await {
                Ok(answered) => return Ok(answered),
                Err(e) if !policy.falls_through(&e) => return Err(e),
                Err(e) => e,
            };
            tracing::warn!(
                target: "toolnexus::compose",
                call_name = %ctx.call_name,
                backend = i + 1,
                model = backend.model(),
                next_model = self.backends[i + 1].model(),
                kind = e.kind().as_str(),
                status = e.status().unwrap_or(0),
                error = %e,
                "fallback: backend unavailable, asking the next"
            );
            failures.push(e);
        }
        if !failures.is_empty() && ctx.cancel.is_cancelled() {
            return Err(ClassifierError::cancelled());
        }
        match last.evaluate_request(ctx, request).await {
            Ok(answered) => Ok(answered),
            Err(e) if failures.is_empty() || !policy.falls_through(&e) => Err(e),
            Err(e) => Err(msg::fallback_exhausted(&failures, e)),
        }
    }
}

// ---------------------------------------------------------------- shadow

/// How many candidate calls a [`shadow`] runs at once unless told otherwise.
///
/// ```
/// use toolnexus::compose::{DEFAULT_SHADOW_IN_FLIGHT, ShadowOptions};
/// assert_eq!(ShadowOptions::new(0.1).max_in_flight, DEFAULT_SHADOW_IN_FLIGHT);
/// ```
pub const DEFAULT_SHADOW_IN_FLIGHT: usize = 16;

/// Receives every [`Disagreement`] a [`shadow`] reports.
///
/// ```
/// use std::sync::Arc;
/// use toolnexus::compose::{Disagreement, DisagreementFn};
///
/// let log: DisagreementFn = Arc::new(|d: &Disagreement| {
///     if !d.agrees() {
///         eprintln!("{}", d.to_json());
///     }
/// });
/// # let _ = log;
/// ```
pub type DisagreementFn = Arc<dyn Fn(&Disagreement) + Send + Sync>;

/// What a [`shadow`] mirrors and where it reports. Build with
/// [`ShadowOptions::new`] and the `with_` methods; every field is public to read
/// and set.
///
/// ```
/// use toolnexus::compose::ShadowOptions;
///
/// let options = ShadowOptions::new(0.05)
///     .with_seed(7)
///     .with_jsonl("shadow.jsonl")
///     .with_max_in_flight(4)
///     .with_on_disagreement(|d| {
///         if !d.agrees() {
///             eprintln!("candidate disagrees on {:?}", d.keys.keys().collect::<Vec<_>>());
///         }
///     });
/// let stats = options.stats.clone(); // keep a handle before giving the options away
/// assert_eq!((options.sample, options.max_in_flight), (0.05, 4));
/// # let _ = stats;
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ShadowOptions {
    /// The share of the calls the primary answers that are mirrored to the
    /// candidate, in `0..=1`: 0 mirrors nothing, 1 every call. Above 1 counts as
    /// 1; below 0 or NaN as 0.
    pub sample: f64,
    /// Seeds the sampler. Which calls are mirrored depends only on the seed and
    /// on each call's position in the classifier's sequence of calls, so a run
    /// is reproducible, and periodic traffic is not aliased as it would be by
    /// taking every k-th call.
    pub seed: u64,
    /// Called with every comparison, from the candidate's task, including the
    /// ones that agree ([`Disagreement::agrees`]) and candidate failures.
    pub on_disagreement: Option<DisagreementFn>,
    /// A file to append one JSON line per comparison to
    /// ([`Disagreement::to_json`]), each written with a single write. Created
    /// when missing. A failed write is logged (target `toolnexus::compose`) and
    /// counted ([`ShadowStats::write_failed`]).
    pub jsonl: Option<PathBuf>,
    /// Candidate calls in flight at most, at least 1 (default
    /// [`DEFAULT_SHADOW_IN_FLIGHT`]). A sampled call while that many run is
    /// dropped and counted ([`ShadowStats::dropped`]).
    pub max_in_flight: usize,
    /// The counters this shadow updates. Clone it before handing the options
    /// to [`shadow`]; options cloned from one another share their counters.
    pub stats: ShadowStats,
}

impl ShadowOptions {
    /// Mirrors a share `sample` of the calls, seed 0, no callback, no file, at
    /// most [`DEFAULT_SHADOW_IN_FLIGHT`] in flight, fresh counters.
    ///
    /// ```
    /// use toolnexus::compose::ShadowOptions;
    /// let o = ShadowOptions::new(0.25);
    /// assert!(o.on_disagreement.is_none() && o.jsonl.is_none());
    /// assert_eq!(o.stats.mirrored(), 0);
    /// ```
    pub fn new(sample: f64) -> ShadowOptions {
        ShadowOptions {
            sample,
            seed: 0,
            on_disagreement: None,
            jsonl: None,
            max_in_flight: DEFAULT_SHADOW_IN_FLIGHT,
            stats: ShadowStats::default(),
        }
    }

    /// With this sampler seed.
    ///
    /// ```
    /// assert_eq!(toolnexus::compose::ShadowOptions::new(0.5).with_seed(42).seed, 42);
    /// ```
    pub fn with_seed(mut self, seed: u64) -> ShadowOptions {
        self.seed = seed;
        self
    }

    /// Calls `f` with every comparison.
    ///
    /// ```
    /// let o = toolnexus::compose::ShadowOptions::new(1.0).with_on_disagreement(|d| println!("{}", d.to_json()));
    /// assert!(o.on_disagreement.is_some());
    /// ```
    pub fn with_on_disagreement(
        mut self,
        f: impl Fn(&Disagreement) + Send + Sync + 'static,
    ) -> ShadowOptions {
        self.on_disagreement = Some(Arc::new(f));
        self
    }

    /// Appends one JSON line per comparison to the file at `path`.
    ///
    /// ```
    /// let o = toolnexus::compose::ShadowOptions::new(1.0).with_jsonl("/var/log/shadow.jsonl");
    /// assert_eq!(o.jsonl.as_deref(), Some(std::path::Path::new("/var/log/shadow.jsonl")));
    /// ```
    pub fn with_jsonl(mut self, path: impl Into<PathBuf>) -> ShadowOptions {
        self.jsonl = Some(path.into());
        self
    }

    /// Runs at most `n` candidate calls at once (at least 1).
    ///
    /// ```
    /// assert_eq!(toolnexus::compose::ShadowOptions::new(1.0).with_max_in_flight(2).max_in_flight, 2);
    /// ```
    pub fn with_max_in_flight(mut self, n: usize) -> ShadowOptions {
        self.max_in_flight = n;
        self
    }
}

impl fmt::Debug for ShadowOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShadowOptions")
            .field("sample", &self.sample)
            .field("seed", &self.seed)
            .field("on_disagreement", &self.on_disagreement.is_some())
            .field("jsonl", &self.jsonl)
            .field("max_in_flight", &self.max_in_flight)
            .field("stats", &self.stats)
            .finish()
    }
}

#[derive(Default)]
struct Counters {
    mirrored: AtomicU64,
    dropped: AtomicU64,
    compared: AtomicU64,
    disagreed: AtomicU64,
    candidate_failed: AtomicU64,
    write_failed: AtomicU64,
    in_flight: AtomicUsize,
    idle: Notify,
}

/// The counters of a [`shadow`], shared by every clone: read them at any
/// time, or wait for the candidate calls in flight with [`idle`](ShadowStats::idle).
///
/// Every mirrored call ends compared: `compared` counts the candidate's answers
/// and its failures alike, `disagreed` the answers that differ somewhere from
/// the primary's, `candidate_failed` the failures. `dropped` counts the sampled
/// calls not mirrored because the in-flight bound was reached (or no Tokio
/// runtime was running): `mirrored + dropped` is the number of sampled calls
/// the primary answered.
///
/// ```
/// use toolnexus::compose::ShadowStats;
///
/// let stats = ShadowStats::default();
/// assert_eq!(
///     format!("{stats:?}"),
///     "ShadowStats { mirrored: 0, dropped: 0, compared: 0, disagreed: 0, candidate_failed: 0, write_failed: 0, in_flight: 0 }"
/// );
/// ```
#[derive(Clone, Default)]
pub struct ShadowStats {
    inner: Arc<Counters>,
}

impl ShadowStats {
    /// Calls sent to the candidate.
    ///
    /// ```
    /// assert_eq!(toolnexus::compose::ShadowStats::default().mirrored(), 0);
    /// ```
    pub fn mirrored(&self) -> u64 {
        self.inner.mirrored.load(Ordering::SeqCst)
    }

    /// Sampled calls not sent because [`ShadowOptions::max_in_flight`] calls
    /// were already running.
    ///
    /// ```
    /// assert_eq!(toolnexus::compose::ShadowStats::default().dropped(), 0);
    /// ```
    pub fn dropped(&self) -> u64 {
        self.inner.dropped.load(Ordering::SeqCst)
    }

    /// Comparisons reported: every mirrored call, once it has ended.
    ///
    /// ```
    /// assert_eq!(toolnexus::compose::ShadowStats::default().compared(), 0);
    /// ```
    pub fn compared(&self) -> u64 {
        self.inner.compared.load(Ordering::SeqCst)
    }

    /// Comparisons where the candidate answered and some key differs.
    ///
    /// ```
    /// assert_eq!(toolnexus::compose::ShadowStats::default().disagreed(), 0);
    /// ```
    pub fn disagreed(&self) -> u64 {
        self.inner.disagreed.load(Ordering::SeqCst)
    }

    /// Comparisons where the candidate failed.
    ///
    /// ```
    /// assert_eq!(toolnexus::compose::ShadowStats::default().candidate_failed(), 0);
    /// ```
    pub fn candidate_failed(&self) -> u64 {
        self.inner.candidate_failed.load(Ordering::SeqCst)
    }

    /// JSONL lines that could not be written.
    ///
    /// ```
    /// assert_eq!(toolnexus::compose::ShadowStats::default().write_failed(), 0);
    /// ```
    pub fn write_failed(&self) -> u64 {
        self.inner.write_failed.load(Ordering::SeqCst)
    }

    /// Candidate calls running now (their reports included).
    ///
    /// ```
    /// assert_eq!(toolnexus::compose::ShadowStats::default().in_flight(), 0);
    /// ```
    pub fn in_flight(&self) -> usize {
        self.inner.in_flight.load(Ordering::SeqCst)
    }

    /// Waits until no candidate call is in flight: every call mirrored so far
    /// has been compared and reported (callback run, line written). Use it
    /// before reading the counters in a test, or before shutting down.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let stats = toolnexus::compose::ShadowStats::default();
    /// stats.idle().await; // nothing in flight: returns at once
    /// # }
    /// ```
    pub async fn idle(&self) {
        loop {
            let mut notified = std::pin::pin!(self.inner.idle.notified());
            notified.as_mut().enable();
            if self.in_flight() == 0 {
                return;
            }
            notified.await;
        }
    }

    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::SeqCst);
    }
}

impl fmt::Debug for ShadowStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShadowStats")
            .field("mirrored", &self.mirrored())
            .field("dropped", &self.dropped())
            .field("compared", &self.compared())
            .field("disagreed", &self.disagreed())
            .field("candidate_failed", &self.candidate_failed())
            .field("write_failed", &self.write_failed())
            .field("in_flight", &self.in_flight())
            .finish()
    }
}

/// One candidate call in flight: holds its permit and keeps `in_flight`
/// counted until it ends, however it ends (a panicking callback included).
struct InFlight {
    stats: ShadowStats,
    _permit: OwnedSemaphorePermit,
}

impl InFlight {
    fn enter(stats: ShadowStats, permit: OwnedSemaphorePermit) -> InFlight {
        stats.inner.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight {
            stats,
            _permit: permit,
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.stats.inner.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.stats.inner.idle.notify_waiters();
        }
    }
}

/// Which side of a comparison.
///
/// ```
/// use toolnexus::compose::Side;
/// assert_eq!(Side::Candidate.as_str(), "candidate");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The classifier whose answers the caller gets.
    Primary,
    /// The classifier under evaluation.
    Candidate,
}

impl Side {
    /// `"primary"` or `"candidate"`.
    ///
    /// ```
    /// assert_eq!(toolnexus::compose::Side::Primary.as_str(), "primary");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Primary => "primary",
            Side::Candidate => "candidate",
        }
    }
}

/// How the two answers under one key compare. Every difference is an absolute
/// value.
///
/// ```
/// use toolnexus::compose::{KeyDiff, Side};
///
/// let same = KeyDiff::Choice { primary: "refund".into(), candidate: "refund".into(), mismatch: false };
/// assert!(same.agrees());
/// assert!(!KeyDiff::Missing { missing_from: Side::Candidate }.agrees());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum KeyDiff {
    /// Both answered a noul question.
    Noul {
        /// The primary's P(true).
        primary: f64,
        /// The candidate's P(true).
        candidate: f64,
        /// |primary − candidate|.
        delta: f64,
    },
    /// Both answered a choice question.
    Choice {
        /// The primary's pick.
        primary: String,
        /// The candidate's pick.
        candidate: String,
        /// Whether the picks differ.
        mismatch: bool,
    },
    /// Both answered a score question.
    Score {
        /// The primary's expected level.
        primary: f64,
        /// The candidate's expected level.
        candidate: f64,
        /// |primary − candidate|.
        delta: f64,
    },
    /// Both answered a box question.
    Box {
        /// The primary's box.
        primary: BoxCoordinates,
        /// The candidate's box.
        candidate: BoxCoordinates,
        /// The largest |Δ| over the four edges.
        delta: f64,
    },
    /// Only one side answered this key.
    Missing {
        /// The side without an answer.
        missing_from: Side,
    },
    /// The two answers are of different types.
    TypeMismatch {
        /// The primary's answer type (`"noul"`, `"choice"`, `"score"`, `"box"`).
        primary: &'static str,
        /// The candidate's answer type.
        candidate: &'static str,
    },
}

impl KeyDiff {
    fn between(primary: &DecisionAnswer, candidate: &DecisionAnswer) -> KeyDiff {
        match (primary, candidate) {
            (DecisionAnswer::Noul(p), DecisionAnswer::Noul(c)) => KeyDiff::Noul {
                primary: p.noul,
                candidate: c.noul,
                delta: (p.noul - c.noul).abs(),
            },
            (DecisionAnswer::Choice(p), DecisionAnswer::Choice(c)) => KeyDiff::Choice {
                primary: p.choice.clone(),
                candidate: c.choice.clone(),
                mismatch: p.choice != c.choice,
            },
            (DecisionAnswer::Score(p), DecisionAnswer::Score(c)) => KeyDiff::Score {
                primary: p.score,
                candidate: c.score,
                delta: (p.score - c.score).abs(),
            },
            (DecisionAnswer::Box(p), DecisionAnswer::Box(c)) => {
                let (a, b) = (p.coordinates, c.coordinates);
                let delta = [
                    a.top - b.top,
                    a.bottom - b.bottom,
                    a.left - b.left,
                    a.right - b.right,
                ]
                .into_iter()
                .map(f64::abs)
                .fold(0.0, f64::max);
                KeyDiff::Box {
                    primary: a,
                    candidate: b,
                    delta,
                }
            }
            (p, c) => KeyDiff::TypeMismatch {
                primary: p.answer_type(),
                candidate: c.answer_type(),
            },
        }
    }

    /// Whether both sides gave the same answer: a zero difference, the same
    /// pick.
    ///
    /// ```
    /// use toolnexus::compose::KeyDiff;
    /// assert!(KeyDiff::Noul { primary: 0.5, candidate: 0.5, delta: 0.0 }.agrees());
    /// assert!(!KeyDiff::Score { primary: 1.0, candidate: 1.5, delta: 0.5 }.agrees());
    /// ```
    pub fn agrees(&self) -> bool {
        match self {
            KeyDiff::Noul { delta, .. }
            | KeyDiff::Score { delta, .. }
            | KeyDiff::Box { delta, .. } => *delta == 0.0,
            KeyDiff::Choice { mismatch, .. } => !mismatch,
            KeyDiff::Missing { .. } | KeyDiff::TypeMismatch { .. } => false,
        }
    }

    /// The difference as JSON, tagged by `"kind"`: `noul`, `choice`, `score`,
    /// `box`, `missing` or `type_mismatch`.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::compose::{KeyDiff, Side};
    ///
    /// let d = KeyDiff::Noul { primary: 0.25, candidate: 0.75, delta: 0.5 };
    /// assert_eq!(d.to_json(), json!({"kind": "noul", "primary": 0.25, "candidate": 0.75, "delta": 0.5}));
    /// let m = KeyDiff::Missing { missing_from: Side::Primary };
    /// assert_eq!(m.to_json(), json!({"kind": "missing", "missing_from": "primary"}));
    /// ```
    pub fn to_json(&self) -> Value {
        let edges = |b: &BoxCoordinates| json!({"top": b.top, "bottom": b.bottom, "left": b.left, "right": b.right});
        match self {
            KeyDiff::Noul {
                primary,
                candidate,
                delta,
            } => {
                json!({"kind": "noul", "primary": primary, "candidate": candidate, "delta": delta})
            }
            KeyDiff::Choice {
                primary,
                candidate,
                mismatch,
            } => {
                json!({"kind": "choice", "primary": primary, "candidate": candidate, "mismatch": mismatch})
            }
            KeyDiff::Score {
                primary,
                candidate,
                delta,
            } => {
                json!({"kind": "score", "primary": primary, "candidate": candidate, "delta": delta})
            }
            KeyDiff::Box {
                primary,
                candidate,
                delta,
            } => {
                json!({"kind": "box", "primary": edges(primary), "candidate": edges(candidate), "delta": delta})
            }
            KeyDiff::Missing { missing_from } => {
                json!({"kind": "missing", "missing_from": missing_from.as_str()})
            }
            KeyDiff::TypeMismatch { primary, candidate } => {
                json!({"kind": "type_mismatch", "primary": primary, "candidate": candidate})
            }
        }
    }
}

/// A candidate's failure, as a shadow reports it.
///
/// ```
/// use toolnexus::classifier::{ClassifierError, ErrorKind};
/// use toolnexus::compose::CandidateFailure;
///
/// let f = CandidateFailure::from(&ClassifierError::http(503, "overloaded"));
/// assert_eq!((f.kind, f.status), (ErrorKind::Http, Some(503)));
/// assert_eq!(f.message, "classifier: HTTP 503: overloaded");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CandidateFailure {
    /// What went wrong.
    pub kind: ErrorKind,
    /// The HTTP status, for an HTTP failure.
    pub status: Option<u16>,
    /// The error's message (secrets already scrubbed by the candidate).
    pub message: String,
}

impl From<&ClassifierError> for CandidateFailure {
    fn from(e: &ClassifierError) -> CandidateFailure {
        CandidateFailure {
            kind: e.kind(),
            status: e.status(),
            message: e.to_string(),
        }
    }
}

/// One comparison of a candidate with the primary, for one mirrored call:
/// every key either side answered, with how the answers differ, or the
/// candidate's failure. Reported also when the two agree.
///
/// ```
/// use toolnexus::compose::{Disagreement, KeyDiff};
///
/// fn worst_noul_gap(d: &Disagreement) -> f64 {
///     d.keys
///         .values()
///         .filter_map(|k| match k {
///             KeyDiff::Noul { delta, .. } => Some(*delta),
///             _ => None,
///         })
///         .fold(0.0, f64::max)
/// }
/// # let _ = worst_noul_gap;
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Disagreement {
    /// The call's [`EvalContext::call_name`], possibly empty.
    pub call_name: String,
    /// The model that answered for the primary (its decision's `model`).
    pub primary_model: String,
    /// The model that answered for the candidate, when it answered.
    pub candidate_model: Option<String>,
    /// Every key either side answered, with how the answers compare; empty
    /// when the candidate failed.
    pub keys: BTreeMap<String, KeyDiff>,
    /// The candidate's failure, when it failed.
    pub candidate_error: Option<CandidateFailure>,
    /// How long the candidate took.
    pub candidate_elapsed: Duration,
    /// When the comparison was made.
    pub at: SystemTime,
    /// The state both were asked about (what ties the comparison to the
    /// caller's own record of the call).
    pub state: Value,
    /// The primary's whole decision (every distribution, not only the
    /// differences in `keys`).
    pub primary_decision: Decision,
    /// The candidate's whole decision, when it answered.
    pub candidate_decision: Option<Decision>,
}

impl Disagreement {
    fn new(
        call_name: String,
        state: Value,
        primary: Decision,
        candidate: Result<Decision, ClassifierError>,
        candidate_elapsed: Duration,
    ) -> Disagreement {
        let (candidate_model, keys, candidate_error, candidate_decision) = match candidate {
            Ok(c) => (Some(c.model.clone()), compare(&primary, &c), None, Some(c)),
            Err(e) => (
                None,
                BTreeMap::new(),
                Some(CandidateFailure::from(&e)),
                None,
            ),
        };
        Disagreement {
            call_name,
            primary_model: primary.model.clone(),
            candidate_model,
            keys,
            candidate_error,
            candidate_elapsed,
            at: SystemTime::now(),
            state,
            primary_decision: primary,
            candidate_decision,
        }
    }

    /// Whether the candidate answered every key exactly as the primary did.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use serde_json::json;
    /// # use toolnexus::classifier::*;
    /// # use toolnexus::compose::*;
    /// # use toolnexus::judge::{noul, questions};
    /// # fn answering(p: f64) -> Classifier {
    /// #     create_classifier(ClassifierOptions {
    /// #         style: ClassifierStyle::Custom,
    /// #         evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
    /// #             Box::pin(async move {
    /// #                 Decision::from_value(&json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": p}}}))
    /// #                     .map_err(|e| e.to_string())
    /// #             })
    /// #         })),
    /// #         ..Default::default()
    /// #     })
    /// #     .unwrap()
    /// # }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ClassifierError> {
    /// let agreed = Arc::new(std::sync::Mutex::new(None));
    /// let sink = agreed.clone();
    /// let options = ShadowOptions::new(1.0).with_on_disagreement(move |d| *sink.lock().unwrap() = Some(d.agrees()));
    /// let stats = options.stats.clone();
    /// let judge = shadow(answering(0.5), answering(0.5), options);
    /// judge.evaluate(json!(1), &questions(&[noul("spam", "Is it spam?")])?).await?;
    /// stats.idle().await;
    /// assert_eq!(*agreed.lock().unwrap(), Some(true));
    /// # Ok(())
    /// # }
    /// ```
    pub fn agrees(&self) -> bool {
        self.candidate_error.is_none() && self.keys.values().all(KeyDiff::agrees)
    }

    /// The comparison as one JSON object, as the JSONL file has it:
    /// `call_name`, `primary_model`, `candidate_model` (or null), `agrees`,
    /// `keys` (each [`KeyDiff::to_json`]), `candidate_error` (null, or `kind`,
    /// `status`, `message`), `candidate_ms` and `at_ms` (Unix milliseconds).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use serde_json::json;
    /// # use toolnexus::classifier::*;
    /// # use toolnexus::compose::*;
    /// # use toolnexus::judge::{noul, questions};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ClassifierError> {
    /// let primary = create_classifier(ClassifierOptions {
    ///     style: ClassifierStyle::Custom,
    ///     evaluate: Some(Arc::new(|_ctx, _state, _qs| {
    ///         Box::pin(async {
    ///             Decision::from_slice(br#"{"model":"jev-1.13","answers":{"spam":{"type":"noul","noul":0.5}}}"#)
    ///                 .map_err(|e| e.to_string())
    ///         })
    ///     })),
    ///     ..Default::default()
    /// })?;
    /// let broken = create_classifier(ClassifierOptions {
    ///     style: ClassifierStyle::Custom,
    ///     evaluate: Some(Arc::new(|_ctx, _state, _qs| Box::pin(async { Err("model file missing".to_string()) }))),
    ///     ..Default::default()
    /// })?;
    /// let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
    /// let sink = lines.clone();
    /// let options = ShadowOptions::new(1.0).with_on_disagreement(move |d| sink.lock().unwrap().push(d.to_json()));
    /// let stats = options.stats.clone();
    /// shadow(primary, broken, options)
    ///     .evaluate_ctx(EvalContext::new().with_call_name("triage"), json!(1), &questions(&[noul("spam", "Is it spam?")])?)
    ///     .await?;
    /// stats.idle().await;
    /// let line = &lines.lock().unwrap()[0];
    /// assert_eq!(line["call_name"], "triage");
    /// assert_eq!(line["agrees"], false);
    /// assert_eq!(line["candidate_error"], json!({"kind": "custom", "status": null, "message": "classifier: custom: model file missing"}));
    /// # Ok(())
    /// # }
    /// ```
    pub fn to_json(&self) -> Value {
        let keys: serde_json::Map<String, Value> = self
            .keys
            .iter()
            .map(|(k, d)| (k.clone(), d.to_json()))
            .collect();
        let candidate_error = self
            .candidate_error
            .as_ref()
            .map(|f| json!({"kind": f.kind.as_str(), "status": f.status, "message": f.message}));
        let at_ms = self
            .at
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        json!({
            "call_name": self.call_name,
            "primary_model": self.primary_model,
            "candidate_model": self.candidate_model,
            "agrees": self.agrees(),
            "keys": keys,
            "candidate_error": candidate_error,
            "candidate_ms": self.candidate_elapsed.as_millis() as u64,
            "at_ms": at_ms,
        })
    }
}

/// Every key either decision answered, with how the answers compare.
fn compare(primary: &Decision, candidate: &Decision) -> BTreeMap<String, KeyDiff> {
    let mut keys = BTreeMap::new();
    for (key, p) in &primary.answers {
        let diff = match candidate.answers.get(key) {
            Some(c) => KeyDiff::between(p, c),
            None => KeyDiff::Missing {
                missing_from: Side::Candidate,
            },
        };
        keys.insert(key.clone(), diff);
    }
    for key in candidate.answers.keys() {
        if !primary.answers.contains_key(key) {
            keys.insert(
                key.clone(),
                KeyDiff::Missing {
                    missing_from: Side::Primary,
                },
            );
        }
    }
    keys
}

/// `primary`'s answers, with `candidate` asked the same request off the
/// caller's path on a sample of the calls and compared with it (see the
/// [module docs](self)). The classifier answers to the primary's
/// [`model`](Classifier::model).
///
/// Only calls the primary answered are mirrored: a primary failure is returned
/// as it is, and there is nothing to compare it with. The candidate gets the
/// whole request (a model override included) under a context of its own with
/// the same call name: cancelling the caller's context after the primary has
/// answered does not stop it, and its own timeout and retries bound it. A
/// sampled call made outside a Tokio runtime is dropped.
///
/// ```
/// # use std::sync::Arc;
/// # use serde_json::json;
/// use toolnexus::classifier::*;
/// use toolnexus::compose::{ShadowOptions, shadow};
/// use toolnexus::judge::{noul, questions};
///
/// # fn answering(model: &'static str) -> Classifier {
/// #     create_classifier(ClassifierOptions {
/// #         style: ClassifierStyle::Custom,
/// #         evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
/// #             Box::pin(async move {
/// #                 Decision::from_value(&json!({"model": model, "answers": {"spam": {"type": "noul", "noul": 0.5}}}))
/// #                     .map_err(|e| e.to_string())
/// #             })
/// #         })),
/// #         ..Default::default()
/// #     })
/// #     .unwrap()
/// # }
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), ClassifierError> {
/// let options = ShadowOptions::new(0.5).with_seed(1);
/// let stats = options.stats.clone();
/// let judge = shadow(answering("jev-1.13"), answering("jev-2"), options);
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// for i in 0..100 {
///     assert_eq!(judge.evaluate(json!(i), &qs).await?.model, "jev-1.13");
/// }
/// stats.idle().await;
/// // A sampled call is mirrored, or dropped when the candidate is busy: here the
/// // loop never yields to the candidate's tasks until the bound is reached.
/// let sampled = stats.mirrored() + stats.dropped();
/// assert!((25..=75).contains(&sampled), "about half: {stats:?}");
/// assert_eq!(stats.compared(), stats.mirrored());
/// # Ok(())
/// # }
/// ```
pub fn shadow(primary: Classifier, candidate: Classifier, options: ShadowOptions) -> Classifier {
    let sample = if options.sample.is_nan() {
        0.0
    } else {
        options.sample.clamp(0.0, 1.0)
    };
    let model = primary.model().to_string();
    let permits = Arc::new(Semaphore::new(options.max_in_flight.max(1)));
    // Every answer is the primary's: its fingerprint passes on unchanged.
    let beneath = primary.clone();
    Classifier::from_evaluator(
        model,
        Shadow {
            primary,
            shared: Arc::new(ShadowShared {
                candidate,
                sample,
                seed: options.seed,
                calls: AtomicU64::new(0),
                permits,
                on_disagreement: options.on_disagreement,
                jsonl: options.jsonl,
                stats: options.stats,
            }),
        },
    )
    .layered_over(&beneath)
}

/// What a shadow's calls and candidate tasks share.
struct ShadowShared {
    candidate: Classifier,
    sample: f64,
    seed: u64,
    calls: AtomicU64,
    permits: Arc<Semaphore>,
    on_disagreement: Option<DisagreementFn>,
    jsonl: Option<PathBuf>,
    stats: ShadowStats,
}

/// What [`shadow`] runs.
struct Shadow {
    primary: Classifier,
    shared: Arc<ShadowShared>,
}

impl FullEvaluator for Shadow {
    fn call_full(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Evaluated, ClassifierError>> {
        let primary = self.primary.clone();
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let mirror = shared.picks().then(|| request.clone());
            let call_name = ctx.call_name.clone();
            let result = primary.evaluate_request(ctx, request).await;
            if let (Some(request), Ok(answered)) = (mirror, &result) {
                ShadowShared::mirror(&shared, call_name, request, answered.decision.clone());
            }
            result
        })
    }
}

/// The `n`-th output of SplitMix64 seeded with `seed`, as a uniform in [0, 1).
fn uniform(seed: u64, n: u64) -> f64 {
    const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut z = seed.wrapping_add(n.wrapping_add(1).wrapping_mul(GAMMA));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

impl ShadowShared {
    /// Whether this call is one of the sample.
    fn picks(&self) -> bool {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        self.sample > 0.0 && uniform(self.seed, n) < self.sample
    }

    /// Starts the candidate on `request` in a task of its own, unless the
    /// in-flight bound is reached.
    fn mirror(
        shared: &Arc<ShadowShared>,
        call_name: String,
        request: EvalRequest,
        primary: Decision,
    ) {
        let stats = &shared.stats;
        let (Ok(runtime), Ok(permit)) = (
            tokio::runtime::Handle::try_current(),
            Arc::clone(&shared.permits).try_acquire_owned(),
        ) else {
            ShadowStats::bump(&stats.inner.dropped);
            tracing::debug!(
                target: "toolnexus::compose",
                call_name = %call_name,
                dropped = stats.dropped(),
                "shadow: candidate busy, call not mirrored"
            );
            return;
        };
        ShadowStats::bump(&stats.inner.mirrored);
        let guard = InFlight::enter(stats.clone(), permit);
        let shared = Arc::clone(shared);
        runtime.spawn(async move {
            let _guard = guard;
            let ctx = EvalContext::new().with_call_name(call_name.clone());
            let state = request.state.clone();
            let started = Instant::now();
            let answered = shared.candidate.evaluate_request(ctx, request).await;
            let elapsed = started.elapsed();
            let report = Disagreement::new(
                call_name,
                state,
                primary,
                answered.map(|e| e.decision),
                elapsed,
            );
            shared.report(report).await;
        });
    }

    async fn report(&self, d: Disagreement) {
        let stats = &self.stats;
        ShadowStats::bump(&stats.inner.compared);
        match &d.candidate_error {
            Some(f) => {
                ShadowStats::bump(&stats.inner.candidate_failed);
                tracing::info!(
                    target: "toolnexus::compose",
                    call_name = %d.call_name,
                    kind = f.kind.as_str(),
                    status = f.status.unwrap_or(0),
                    error = %f.message,
                    "shadow: candidate failed"
                );
            }
            None => {
                let agrees = d.agrees();
                if !agrees {
                    ShadowStats::bump(&stats.inner.disagreed);
                }
                tracing::debug!(
                    target: "toolnexus::compose",
                    call_name = %d.call_name,
                    candidate_model = d.candidate_model.as_deref().unwrap_or(""),
                    agrees,
                    "shadow: compared"
                );
            }
        }
        if let Some(f) = &self.on_disagreement {
            f(&d);
        }
        let Some(path) = self.jsonl.clone() else {
            return;
        };
        let line = d.to_json().to_string().into_bytes();
        let written =
            tokio::task::spawn_blocking(move || crate::fs::append_line(&path, &line)).await;
        let failure = match written {
            Ok(Ok(())) => return,
            Ok(Err(e)) => e.to_string(),
            Err(e) => e.to_string(),
        };
        ShadowStats::bump(&stats.inner.write_failed);
        tracing::warn!(
            target: "toolnexus::compose",
            path = %self.jsonl.as_deref().unwrap_or(Path::new("")).display(),
            error = %failure,
            "shadow: cannot append to the JSONL file"
        );
    }
}
