//! Compositions over the [`Evaluator`](crate::classifier::Evaluator) seam
//! (SPEC §12): each takes classifiers and gives back a
//! [`Classifier`](crate::classifier::Classifier), so a composition is used,
//! shared, wrapped and composed again like any other.
//!
//! # Fallback
//!
//! [`fallback`](fn@fallback) (or the [`Fallback`] builder, for options) asks the backends in
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
//! [`shadow`](fn@shadow) answers every call with the primary and, on a sample of the calls
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

mod disagreement;
mod fallback;
mod shadow;

pub use disagreement::{CandidateFailure, Disagreement, KeyDiff, Side};
pub use fallback::{Fallback, fallback, is_unavailable};
pub use shadow::{DEFAULT_SHADOW_IN_FLIGHT, DisagreementFn, ShadowOptions, ShadowStats, shadow};
