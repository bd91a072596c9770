//! Simple judgments on top of the classifier: builders, bands, gates, policies
//! and tapes.
//!
//! - **Builders** name each question where it is written:
//!   [`noul`], [`noul_with`], [`choice`], [`score`], gathered by [`questions`]
//!   (a repeated name is an error); [`state`] labels whose words a state holds.
//! - **Bands** ([`Bands`], default 0.30 / 0.70) turn numbers into readings that are
//!   either sure or uncertain; [`ask`] evaluates **once** and bands every answer.
//! - **Gates** ([`gate`](fn@gate), [`Rule`]) and **policies** ([`Policy`]) turn banded
//!   answers into a caller-named outcome, first match wins — or, when an answer
//!   is missing, uncertain or does not fit its rule, into a request for input
//!   ([`Ruling::NeedsInput`]) instead of a guess.
//! - **Tapes** ([`Tape`]) record a live classifier's decisions by call name and
//!   replay them offline, for tests, CI and demos.
//!
//! A classifier **interprets; it never authorises.** A gate that decides only
//! routes work on the strength of a model's reading; limits, permissions and
//! allow-lists stay in your code. Nothing here is a security control, and bands
//! tuned against one backend do not transfer to another.
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use toolnexus::classifier::*;
//! use toolnexus::judge::{Policy, Rule, choice, noul, questions, state};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A stand-in for a real model: any style works the same way.
//! let judge = create_classifier(ClassifierOptions {
//!     style: ClassifierStyle::Custom,
//!     evaluate: Some(Arc::new(|_ctx, _state, _qs| Box::pin(async {
//!         Decision::from_value(&json!({"model": "rules", "answers": {
//!             "refund_requested": {"type": "noul", "noul": 0.94},
//!             "desk": {"type": "choice", "choice": "billing",
//!                      "probabilities": {"billing": 0.88, "shipping": 0.12}, "confidence": 0.88}}}))
//!         .map_err(|e| e.to_string())
//!     }))),
//!     ..Default::default()
//! })?;
//!
//! let qs = questions(&[
//!     noul("refund_requested", "Does the customer ask for money back?"),
//!     choice("desk", "Which desk should handle this ticket?", [
//!         ("billing", "money moved or is owed: charges, refunds, invoices"),
//!         ("shipping", "a parcel is late, lost or damaged"),
//!     ]),
//! ])?;
//! let policy = Policy {
//!     rules: vec![
//!         Rule::is("refund_requested", "yes", "refund queue"),
//!         Rule::is("desk", "shipping", "warehouse"),
//!     ],
//!     default: Some("general queue"),
//!     ..Default::default()
//! };
//! let ticket = state("customer", "I was charged twice for order 1182, please refund one");
//! let ctx = EvalContext::new().with_call_name("triage");
//! let (asked, ruling) = policy.ask(&judge, ctx, ticket, &qs).await?;
//! assert_eq!(ruling.outcome(), Some(&"refund queue"));
//! assert_eq!(asked.sure_choice("desk")?, Some("billing"));
//! # Ok(())
//! # }
//! ```
//!
//! # The tape file format
//!
//! A tape is one UTF-8 JSON file, pretty-printed with two-space indents and a
//! final newline, its object keys sorted bytewise at every depth (written by
//! hand, never left to a map type), so the same recordings always give the same
//! bytes and diffs stay small. Version 1:
//!
//! ```text
//! {
//!   "calls": {                      call name → entries (EvalContext::call_name)
//!     "triage": [                   sorted by canonical questions, then state
//!       {
//!         "decision": { … },        the decision's wire form (Decision::to_value)
//!         "model": "jev-latest",    the model the live classifier asked for
//!         "questions": { … },       the questions' wire form (questions_wire)
//!         "state": …                the state, any JSON value
//!       },
//!       {
//!         "error": {                a failure, kept as data instead of "decision"
//!           "kind": "http",         config|invalid_question|decode|incoherent|
//!                                   missing_answer|wrong_type|http|transport|timeout|
//!                                   response_too_large|static_miss|tape_miss|custom
//!           "message": "classifier: POST …: HTTP 503: …",
//!           "status": 503           only for HTTP failures
//!         },
//!         "model": "jev-latest",
//!         "questions": { … },
//!         "state": …
//!       }
//!     ]
//!   },
//!   "format": "toolnexus.tape",     optional on read; must match when present
//!   "note": "free text",            optional on read
//!   "version": 1                    required; a newer version is refused
//! }
//! ```
//!
//! Replay matches on the call name, then on the canonical form of the questions
//! and the state (so key order and `3.0` versus `3` do not matter); the recorded
//! `model` is informational. States are written in canonical form. Within one call name,
//! recording the same questions and state again replaces the earlier entry.
//! Unknown extra fields are ignored on read; everything else is decoded
//! strictly, and every error names the file (and for invalid JSON, the line and
//! column). Saving is atomic: write a temporary file in the same directory,
//! flush it to disk, rename it over the old one.
//!
//! **No secret is ever in a tape.** A tape holds only what the caller passed
//! (state, questions), the model name, the decision, and error messages that the
//! library builds without credentials or expanded header values. Request
//! headers, keys and URLs' user-info are never recorded. The state itself is
//! yours: do not record states that hold secrets.

mod bands;
mod build;
mod gate;
mod tape;
mod thresholds;

pub use bands::{Asked, Banded, Bands, DEFAULT_HIGH, DEFAULT_LOW, Verdict, ask};
pub use build::{NamedQuestion, choice, noul, noul_with, questions, score, state};
pub use gate::{Condition, Escalation, InputRequest, Policy, Rule, Ruling, gate};
pub use tape::{
    Folded, JOURNAL_FORMAT, Journal, JournalError, TAPE_FORMAT, TAPE_VERSION, Tape, TapeEntry,
    TapeError, TapeErrorKind, TapeMatch, TapeOutcome, write_atomic,
};
pub use thresholds::{THRESHOLDS_FORMAT, THRESHOLDS_VERSION, Thresholds};
