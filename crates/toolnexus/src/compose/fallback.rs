//! [`fallback`]: the next backend, only when one is unavailable (see the
//! [module docs](super#fallback)).

use std::sync::Arc;

use crate::classifier::{
    Classifier, ClassifierError, ErrorKind, EvalContext, EvalRequest, Evaluated, FullEvaluator,
};
use crate::context::BoxFuture;
use crate::error::msg;

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
/// it is unavailable ([`is_unavailable`]). See the [module docs](super) for
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
