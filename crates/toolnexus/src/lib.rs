//! # toolnexus — a vendor-neutral client for judgment models
//!
//! Send a JSON **state** and typed **questions** under your own keys; get back a
//! typed [`Decision`](classifier::Decision) that fails loudly instead of handing
//! back a silent zero, says whether its probabilities are calibrated, flags flat
//! distributions, and never reports an unknown cost as $0.
//!
//! | question | answer |
//! |---|---|
//! | [`NoulQuestion`](classifier::NoulQuestion) — does a statement hold? | [`NoulAnswer`](classifier::NoulAnswer): P(true) |
//! | [`ChoiceQuestion`](classifier::ChoiceQuestion) — one of up to 255 described options | [`ChoiceAnswer`](classifier::ChoiceAnswer): pick, distribution, confidence, `near_uniform` |
//! | [`ScoreQuestion`](classifier::ScoreQuestion) — a level on an ordered rubric of 2..=10 | [`ScoreAnswer`](classifier::ScoreAnswer): expected level, distribution, confidence |
//!
//! Four styles reach a decision ([`ClassifierStyle`](classifier::ClassifierStyle)):
//! **SystemOne** over HTTP (TypeSafe's Jev, OpenRouter, Cloudflare, Ollama,
//! self-hosted), **Llm** emulation over any chat model (never calibrated),
//! **Custom** (your closure) and **Static** (recorded decisions, for hermetic tests).
//!
//! A classifier **interprets; it never authorises.** A schema-valid decision can be
//! confidently wrong: keep limits, permissions and allow-lists in your code. Neither
//! `calibrated` nor `near_uniform` detects a subtly wrong encoding of your options,
//! and a threshold tuned against one backend does not transfer to another.
//!
//! ```
//! use serde_json::json;
//! use toolnexus::classifier::{
//!     ClassifierOptions, ClassifierStyle, Questions, RecordedDecision, ScoreQuestion,
//!     create_classifier,
//! };
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let state = json!("rm -rf ./build");
//! let questions = Questions::from([(
//!     "risk".to_string(),
//!     ScoreQuestion {
//!         instructions: "How destructive is this shell command?".into(),
//!         criteria: vec!["harmless".into(), "reversible".into(), "destructive".into()],
//!     }
//!     .into(),
//! )]);
//! let judge = create_classifier(ClassifierOptions {
//!     style: ClassifierStyle::Static,
//!     decisions: vec![RecordedDecision {
//!         state: state.clone(),
//!         questions: questions.clone(),
//!         response: br#"{"model":"jev-1.13","answers":{"risk":{"type":"score","score":1.2,
//!             "legend":{"0":"harmless","1":"reversible","2":"destructive"},
//!             "probabilities":{"0":0.1,"1":0.6,"2":0.3},"confidence":0.7}}}"#.to_vec(),
//!     }],
//!     ..Default::default()
//! })?;
//! let d = judge.evaluate(state, &questions).await?;
//! let risk = d.score("risk")?;
//! assert!(d.noul("risk").is_err(), "a wrong-type read is an error, never a zero");
//! if risk.score >= 1.5 {
//!     println!("would require approval");
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Modules: [`classifier`] (the seam), [`client`] (the small chat client and
//! [`BoxFuture`](client::BoxFuture)), [`judge`] (builders, bands, gates,
//! tapes), [`assess`] (judgment quality, thresholds, calibration), [`limit`]
//! (a shared rate limiter), [`lint`] (static checks of question sets, before
//! anything is asked), [`cache`] (a decision cache; SQLite with the
//! `sqlite` feature), [`compose`] (fallback and shadow), [`cost`] (where a
//! cost came from, dated price tables, token estimates, and budgets that cap
//! what a run spends), [`probe`] (encoding probes: shuffle, order, polarity,
//! repeat, without labels) and [`pinning`] (floating aliases such as
//! `jev-latest`, and what one was seen to answer as). Two small leaves serve
//! the library and its binary alike: [`fs`] (files replaced atomically, lines
//! appended) and [`date`] (UTC calendar arithmetic).
//! With the `test-util` feature, `testing`: a loopback fake System One and chat
//! server for your own tests.
#![cfg_attr(not(test), forbid(unsafe_code))]
#![warn(missing_docs)]
// Without the `http` feature the transport's helpers (retry waits, HTTP messages)
// have no caller; they stay compiled so both builds share one source.
#![cfg_attr(not(feature = "http"), allow(dead_code))]

mod canonical;
mod context;
mod defaults;
mod env;
mod error;
mod json;
mod price;
mod redact;
mod retry;
mod usage;

#[cfg(feature = "http")]
pub mod http;

#[cfg(feature = "http")]
pub mod client;

pub mod assess;
pub mod cache;
pub mod classifier;
pub mod compose;
pub mod cost;
pub mod date;
pub mod fs;
pub mod judge;
pub mod limit;
pub mod lint;
pub mod metrics;
#[cfg(feature = "otel")]
pub mod otel;
pub mod pinning;
pub mod probe;
pub mod states;
#[cfg(feature = "test-util")]
pub mod testing;
