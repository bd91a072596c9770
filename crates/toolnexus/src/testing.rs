//! A fake System One and chat backend on loopback, for your own tests.
//!
//! Enabled by the `test-util` cargo feature, usually only for tests:
//!
//! ```toml
//! [dev-dependencies]
//! toolnexus = { version = "0.1", features = ["test-util"] }
//! ```
//!
//! [`Server`] is a real HTTP/1.1 server on `127.0.0.1:0`: a free port on
//! loopback, never any other interface. Nothing is mocked on the client side;
//! your code talks to it through real sockets, exactly as it would talk to the
//! real service. The server:
//!
//! - answers each request from a script of [`Reply`]s in turn (the last one
//!   repeats), or from a handler that sees the request and its arrival index;
//! - records every request it reads ([`Server::requests`], [`Request`]);
//! - injects transport faults on demand: a reset, a hang before or inside the
//!   response head or body, a body cut short, bytes that are not HTTP, an
//!   endless chunked body, a delay before any of these;
//! - counts what it wrote of streamed bodies before the client hung up
//!   ([`Observed`]).
//!
//! Its [`base_url`](Server::base_url) ends in `/v1`, so the same server stands in
//! for System One (`POST /v1/systemone`), an OpenAI-style chat endpoint
//! (`POST /v1/chat/completions`) and an Anthropic-style one
//! (`POST /v1/messages`). [`Reply::openai_chat`] and [`Reply::anthropic_message`]
//! build well-formed chat answers.
//!
//! ```
//! use serde_json::json;
//! use toolnexus::classifier::{ClassifierOptions, Questions, create_classifier, questions_from_wire};
//! use toolnexus::testing::{Reply, Server};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The first call is refused with a 503, the retry gets a decision.
//! let server = Server::start([
//!     Reply::value(503, json!({"detail": {"message": "busy"}})),
//!     Reply::value(200, json!({
//!         "model": "jev-1.13",
//!         "answers": {"spam": {"type": "noul", "noul": 0.97}},
//!         "usage": {"input_tokens": 120, "output_tokens": 1},
//!     })),
//! ])
//! .await;
//! let judge = create_classifier(ClassifierOptions {
//!     base_url: server.base_url(),
//!     retry_base_ms: 1,
//!     ..Default::default()
//! })?;
//! let questions: Questions = questions_from_wire(&json!({
//!     "spam": {"type": "noul", "instructions": "Is this unsolicited bulk mail?"}
//! }))?;
//! let d = judge.evaluate(json!("WIN A PRIZE NOW"), &questions).await?;
//! assert_eq!(d.noul("spam")?.noul, 0.97);
//!
//! let sent = server.requests();
//! assert_eq!(sent.len(), 2, "one refusal, one retry");
//! assert_eq!((sent[1].method.as_str(), sent[1].path.as_str()), ("POST", "/v1/systemone"));
//! assert_eq!(sent[1].json()["state"], "WIN A PRIZE NOW");
//! # Ok(())
//! # }
//! ```
//!
//! [`Server::start`] runs the server on the caller's Tokio runtime (so a test
//! with paused time drives its delays too). Code without a runtime, such as a
//! plain `#[test]` that runs a child process, uses
//! [`Builder::start_on_thread`]: the server then brings its own runtime on a
//! thread of its own.
//!
//! [`three_questions`] and [`three_answers`] are questions and a decision
//! of every answer type, for a test that needs some.
//!
//! This is test code: plain HTTP, no TLS, no limits beyond a cap on the request
//! head. Do not expose it.

mod conn;
mod fixtures;
mod observed;
mod reply;
mod request;
mod server;

pub use fixtures::{three_answers, three_questions};
pub use observed::Observed;
pub use reply::{Reply, anthropic_message_body, closed_base_url, openai_chat_body};
pub use request::Request;
pub use server::{Builder, Server};
