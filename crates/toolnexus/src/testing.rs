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
//! This is test code: plain HTTP, no TLS, no limits beyond a cap on the request
//! head. Do not expose it.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// The largest request head the server reads before it drops the connection.
const MAX_HEAD_BYTES: usize = 1024 * 1024;

/// The size of each chunk of a [`Reply::Chunked`] body.
const CHUNK_BYTES: usize = 64 * 1024;

// ---------------------------------------------------------------- requests

/// One request the [`Server`] read, as it arrived.
///
/// ```
/// use toolnexus::testing::{Reply, Server};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = Server::start([Reply::json(200, "{}")]).await;
/// reqwest::Client::new()
///     .post(server.url("/v1/systemone?trace=1"))
///     .header("X-Team", "ops")
///     .header("X-Team", "billing")
///     .body(r#"{"state": 1}"#)
///     .send()
///     .await
///     .unwrap();
///
/// let r = &server.requests()[0];
/// assert_eq!(r.method, "POST");
/// assert_eq!(r.path, "/v1/systemone?trace=1");
/// assert_eq!(r.headers["x-team"], "ops, billing");
/// assert_eq!(r.header("X-Team"), Some("ops, billing"));
/// assert_eq!(r.body_str(), r#"{"state": 1}"#);
/// assert_eq!(r.json()["state"], 1);
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Request {
    /// The method, as sent (`POST`).
    pub method: String,
    /// The request target, as sent: path and query (`/v1/systemone`).
    pub path: String,
    /// Header names lower-cased; a header sent more than once has its values
    /// joined by `", "` in arrival order.
    pub headers: BTreeMap<String, String>,
    /// The body, de-chunked when it was sent chunked.
    pub body: Vec<u8>,
}

impl Request {
    /// The body parsed as JSON, or `null` when it is empty or not JSON.
    ///
    /// ```
    /// use toolnexus::testing::{Reply, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::json(200, "{}")]).await;
    /// let http = reqwest::Client::new();
    /// http.post(server.url("/v1/a")).body(r#"{"n": 7}"#).send().await.unwrap();
    /// http.get(server.url("/v1/b")).send().await.unwrap();
    ///
    /// let sent = server.requests();
    /// assert_eq!(sent[0].json()["n"], 7);
    /// assert!(sent[1].json().is_null(), "no body");
    /// # }
    /// ```
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The body as text.
    ///
    /// # Panics
    ///
    /// When the body is not UTF-8.
    ///
    /// ```
    /// use toolnexus::testing::{Reply, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::json(200, "{}")]).await;
    /// reqwest::Client::new().post(server.url("/")).body("hello").send().await.unwrap();
    /// assert_eq!(server.requests()[0].body_str(), "hello");
    /// # }
    /// ```
    pub fn body_str(&self) -> &str {
        match std::str::from_utf8(&self.body) {
            Ok(s) => s,
            Err(e) => panic!("the request body is not UTF-8: {e}"),
        }
    }

    /// The value of a header, by any capitalisation of its name.
    ///
    /// ```
    /// use toolnexus::testing::{Reply, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::json(200, "{}")]).await;
    /// reqwest::Client::new()
    ///     .get(server.url("/v1/models"))
    ///     .bearer_auth("sk-test")
    ///     .send()
    ///     .await
    ///     .unwrap();
    /// let r = &server.requests()[0];
    /// assert_eq!(r.header("Authorization"), Some("Bearer sk-test"));
    /// assert_eq!(r.header("x-missing"), None);
    /// # }
    /// ```
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

// ---------------------------------------------------------------- replies

/// What the [`Server`] does with one request: a complete response, or a fault.
///
/// Build complete responses with [`Reply::json`], [`Reply::value`] and the chat
/// shapes [`Reply::openai_chat`] and [`Reply::anthropic_message`]; add headers
/// with [`Reply::with_header`] and a delay with [`Reply::delayed`]. The fault
/// variants are built directly.
///
/// Every fault happens after the whole request was read and recorded, so
/// [`Server::count`] counts attempts that met a fault too. Where a fault leaves
/// the connection open (the stalls), it stays open until the [`Server`] is
/// dropped.
///
/// ```
/// use std::time::Duration;
/// use toolnexus::testing::{Reply, Server};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = Server::start([
///     Reply::Reset,
///     Reply::CloseMidBody { status: 200, declared: 100, sent: b"{\"model\"".to_vec() },
///     Reply::json(200, r#"{"ok": true}"#).delayed(Duration::from_millis(5)),
/// ])
/// .await;
/// let http = reqwest::Client::new();
/// assert!(http.get(server.url("/")).send().await.is_err(), "reset");
/// let cut = http.get(server.url("/")).send().await.unwrap();
/// assert!(cut.bytes().await.is_err(), "the body ends early");
/// let ok = http.get(server.url("/")).send().await.unwrap();
/// assert_eq!(ok.text().await.unwrap(), r#"{"ok": true}"#);
/// assert_eq!(server.count(), 3);
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reply {
    /// A complete response. The server writes `content-length` itself; the
    /// connection stays open for the next request.
    Response {
        /// The status code.
        status: u16,
        /// Extra headers, written in this order after `content-length`.
        headers: Vec<(String, String)>,
        /// The body.
        body: Vec<u8>,
    },
    /// Wait this long, then answer with the inner reply.
    Delayed {
        /// How long to wait after reading the request.
        delay: Duration,
        /// What to do then.
        reply: Box<Reply>,
    },
    /// Never answer: the connection stays open and silent.
    Stall,
    /// Close the connection cleanly (FIN) without sending a byte.
    Close,
    /// Reset the connection (RST, through a zero `SO_LINGER`) without sending a byte.
    Reset,
    /// Send these bytes, which need not be HTTP, then close.
    Garbage(Vec<u8>),
    /// Send these bytes of a response head (no blank line ending it), then stall.
    StallInHead(Vec<u8>),
    /// Send a head declaring `declared` JSON body bytes and `sent` of them, then stall.
    StallMidBody {
        /// The status code.
        status: u16,
        /// The `content-length` sent.
        declared: usize,
        /// The part of the body that is sent.
        sent: Vec<u8>,
    },
    /// Send a head declaring `declared` JSON body bytes and `sent` of them, then reset.
    ResetMidBody {
        /// The status code.
        status: u16,
        /// The `content-length` sent.
        declared: usize,
        /// The part of the body that is sent.
        sent: Vec<u8>,
    },
    /// Send a head declaring `declared` JSON body bytes and `sent` of them, then
    /// close cleanly (FIN): a body truncated by the peer.
    CloseMidBody {
        /// The status code.
        status: u16,
        /// The `content-length` sent.
        declared: usize,
        /// The part of the body that is sent.
        sent: Vec<u8>,
    },
    /// A `200` with a chunked body of `total` spaces in 64 KiB chunks and no
    /// `content-length`: for size caps. What got written before the client hung
    /// up is counted in [`Observed`].
    Chunked {
        /// Body bytes in all.
        total: usize,
    },
}

impl Reply {
    /// A complete response with this JSON text (or any bytes) as its body and
    /// `content-type: application/json`.
    ///
    /// ```
    /// use toolnexus::testing::{Reply, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::json(422, r#"{"detail": "bad"}"#)]).await;
    /// let r = reqwest::get(server.url("/")).await.unwrap();
    /// assert_eq!(r.status(), 422);
    /// assert_eq!(r.headers()["content-type"], "application/json");
    /// assert_eq!(r.text().await.unwrap(), r#"{"detail": "bad"}"#);
    /// # }
    /// ```
    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Reply {
        Reply::Response {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.into(),
        }
    }

    /// A complete JSON response from a [`Value`].
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::testing::{Reply, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::value(200, json!({"n": 1}))]).await;
    /// let r = reqwest::get(server.url("/")).await.unwrap();
    /// assert_eq!(r.text().await.unwrap(), r#"{"n":1}"#);
    /// # }
    /// ```
    pub fn value(status: u16, body: Value) -> Reply {
        Reply::json(status, body.to_string())
    }

    /// A `200` OpenAI-style chat completion whose one choice says `content`
    /// (see [`openai_chat_body`]).
    ///
    /// ```
    /// use toolnexus::classifier::EvalContext;
    /// use toolnexus::client::{ChatMessage, ClientOptions, Style, create_client};
    /// use toolnexus::testing::{Reply, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::start([Reply::openai_chat("Paris.")]).await;
    /// let client = create_client(ClientOptions {
    ///     base_url: server.base_url(),
    ///     style: Style::OpenAi,
    ///     model: "test-model".into(),
    ///     ..Default::default()
    /// })?;
    /// let reply = client
    ///     .chat(&EvalContext::new(), &[ChatMessage::user("Capital of France?")])
    ///     .await?;
    /// assert_eq!(reply.text, "Paris.");
    /// assert_eq!(server.requests()[0].path, "/v1/chat/completions");
    /// # Ok(())
    /// # }
    /// ```
    pub fn openai_chat(content: &str) -> Reply {
        Reply::value(200, openai_chat_body(content))
    }

    /// A `200` Anthropic-style message whose one text block says `text`
    /// (see [`anthropic_message_body`]).
    ///
    /// ```
    /// use toolnexus::classifier::EvalContext;
    /// use toolnexus::client::{ChatMessage, ClientOptions, Style, create_client};
    /// use toolnexus::testing::{Reply, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::start([Reply::anthropic_message("Paris.")]).await;
    /// let client = create_client(ClientOptions {
    ///     base_url: server.base_url(),
    ///     style: Style::Anthropic,
    ///     model: "test-model".into(),
    ///     ..Default::default()
    /// })?;
    /// let reply = client
    ///     .chat(&EvalContext::new(), &[ChatMessage::user("Capital of France?")])
    ///     .await?;
    /// assert_eq!(reply.text, "Paris.");
    /// assert_eq!(server.requests()[0].path, "/v1/messages");
    /// # Ok(())
    /// # }
    /// ```
    pub fn anthropic_message(text: &str) -> Reply {
        Reply::value(200, anthropic_message_body(text))
    }

    /// Adds a response header. A [`Delayed`](Reply::Delayed) reply passes it to
    /// the reply it wraps; faults, which send no complete head, are returned
    /// unchanged.
    ///
    /// ```
    /// use toolnexus::testing::{Reply, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::json(429, "{}").with_header("Retry-After", "2")]).await;
    /// let r = reqwest::get(server.url("/")).await.unwrap();
    /// assert_eq!(r.status(), 429);
    /// assert_eq!(r.headers()["retry-after"], "2");
    /// # }
    /// ```
    pub fn with_header(self, name: &str, value: &str) -> Reply {
        match self {
            Reply::Response {
                status,
                mut headers,
                body,
            } => {
                headers.push((name.into(), value.into()));
                Reply::Response {
                    status,
                    headers,
                    body,
                }
            }
            Reply::Delayed { delay, reply } => Reply::Delayed {
                delay,
                reply: Box::new(reply.with_header(name, value)),
            },
            other => other,
        }
    }

    /// This reply, after waiting `delay` once the request is read. Under a
    /// Tokio runtime with paused time, [`Server::start`]'s delays are virtual.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use toolnexus::testing::{Reply, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::json(200, "{}").delayed(Duration::from_millis(50))]).await;
    /// let started = Instant::now();
    /// reqwest::get(server.url("/")).await.unwrap();
    /// assert!(started.elapsed() >= Duration::from_millis(50));
    /// # }
    /// ```
    pub fn delayed(self, delay: Duration) -> Reply {
        Reply::Delayed {
            delay,
            reply: Box::new(self),
        }
    }
}

/// An OpenAI-style chat completion body: one choice saying `content`, finish
/// reason `stop`, model `test-model`, 10 prompt and 5 completion tokens. Change
/// any field before sending it with [`Reply::value`].
///
/// ```
/// use serde_json::json;
/// use toolnexus::testing::{Reply, openai_chat_body};
///
/// let mut body = openai_chat_body("It was cut off mid-");
/// body["choices"][0]["finish_reason"] = json!("length");
/// body["usage"]["cost"] = json!(0.0002);
/// let reply = Reply::value(200, body);
/// # let _ = reply;
/// ```
pub fn openai_chat_body(content: &str) -> Value {
    json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "test-model",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop",
        }],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    })
}

/// An Anthropic-style message body: one text block saying `text`, stop reason
/// `end_turn`, model `test-model`, 10 input and 5 output tokens. Change any field
/// before sending it with [`Reply::value`].
///
/// ```
/// use serde_json::json;
/// use toolnexus::testing::{Reply, anthropic_message_body};
///
/// let mut body = anthropic_message_body("I can't help with that.");
/// body["stop_reason"] = json!("refusal");
/// let reply = Reply::value(200, body);
/// # let _ = reply;
/// ```
pub fn anthropic_message_body(text: &str) -> Value {
    json!({
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": "test-model",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    })
}

/// A base URL (`http://127.0.0.1:<port>/v1`) on which nothing listens, so that
/// connecting fails at once: a port bound on loopback and released again.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let url = toolnexus::testing::closed_base_url();
/// assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/v1"));
/// let e = reqwest::get(format!("{url}/models")).await.unwrap_err();
/// assert!(e.is_connect());
/// # }
/// ```
pub fn closed_base_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("a bound address");
    drop(listener);
    format!("http://{addr}/v1")
}

// ---------------------------------------------------------------- the server

type Handler = Arc<dyn Fn(usize, &Request) -> Reply + Send + Sync>;

/// What the [`Server`] saw of the connections and streamed bodies it served.
///
/// ```
/// use toolnexus::testing::{Reply, Server};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = Server::start([Reply::Chunked { total: 100_000 }]).await;
/// let body = reqwest::get(server.url("/")).await.unwrap().bytes().await.unwrap();
/// assert_eq!(body.len(), 100_000);
/// let seen = server.observed();
/// assert_eq!(seen.connections(), 1);
/// assert_eq!(seen.chunked_bytes_sent(), 100_000);
/// assert_eq!(seen.chunked_completed(), 1);
/// assert_eq!(seen.chunked_hung_up(), 0);
/// # }
/// ```
#[derive(Debug, Default)]
pub struct Observed {
    connections: AtomicUsize,
    chunked_bytes_sent: AtomicUsize,
    chunked_hung_up: AtomicUsize,
    chunked_completed: AtomicUsize,
}

impl Observed {
    /// TCP connections accepted so far.
    ///
    /// ```
    /// use toolnexus::testing::{Reply, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::json(200, "{}")]).await;
    /// let pooled = reqwest::Client::new();
    /// for _ in 0..3 {
    ///     pooled.get(server.url("/")).send().await.unwrap().bytes().await.unwrap();
    /// }
    /// assert_eq!(server.count(), 3);
    /// assert_eq!(server.observed().connections(), 1, "one kept-alive connection");
    /// # }
    /// ```
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Body bytes of [`Reply::Chunked`] answers written to sockets so far.
    ///
    /// ```
    /// # use toolnexus::testing::{Reply, Server};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::Chunked { total: 10 }]).await;
    /// reqwest::get(server.url("/")).await.unwrap().bytes().await.unwrap();
    /// assert_eq!(server.observed().chunked_bytes_sent(), 10);
    /// # }
    /// ```
    pub fn chunked_bytes_sent(&self) -> usize {
        self.chunked_bytes_sent.load(Ordering::SeqCst)
    }

    /// [`Reply::Chunked`] bodies whose writing failed because the client went away.
    ///
    /// ```
    /// use std::time::Duration;
    /// # use toolnexus::testing::{Reply, Server};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::Chunked { total: 1 << 30 }]).await;
    /// let r = reqwest::get(server.url("/")).await.unwrap();
    /// drop(r); // hang up after the head
    /// while server.observed().chunked_hung_up() == 0 {
    ///     tokio::time::sleep(Duration::from_millis(5)).await;
    /// }
    /// assert!(server.observed().chunked_bytes_sent() < 1 << 30);
    /// assert_eq!(server.observed().chunked_completed(), 0);
    /// # }
    /// ```
    pub fn chunked_hung_up(&self) -> usize {
        self.chunked_hung_up.load(Ordering::SeqCst)
    }

    /// [`Reply::Chunked`] bodies written to the end.
    ///
    /// ```
    /// # use toolnexus::testing::{Reply, Server};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::Chunked { total: 10 }]).await;
    /// reqwest::get(server.url("/")).await.unwrap().bytes().await.unwrap();
    /// assert_eq!(server.observed().chunked_completed(), 1);
    /// # }
    /// ```
    pub fn chunked_completed(&self) -> usize {
        self.chunked_completed.load(Ordering::SeqCst)
    }
}

/// State shared by the server's tasks and its handle.
#[derive(Default)]
struct Shared {
    requests: Mutex<Vec<Request>>,
    observed: Observed,
}

impl Shared {
    fn requests(&self) -> MutexGuard<'_, Vec<Request>> {
        // A panicking handler must not hide what was recorded before it.
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// How the server's accept loop runs, and so how it is stopped.
enum Runner {
    /// A task on the caller's runtime.
    Task(tokio::task::AbortHandle),
    /// A runtime on a thread of its own, stopped when the sender drops.
    Thread {
        _stop: tokio::sync::oneshot::Sender<()>,
    },
}

/// A running fake server on `127.0.0.1`. Dropping it stops it and closes every
/// connection it holds open.
///
/// ```
/// use toolnexus::testing::{Reply, Server};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = Server::start([Reply::json(200, r#"{"data": []}"#)]).await;
/// assert!(server.base_url().starts_with("http://127.0.0.1:"));
/// let r = reqwest::get(format!("{}/models", server.base_url())).await.unwrap();
/// assert_eq!(r.text().await.unwrap(), r#"{"data": []}"#);
/// assert_eq!(server.requests()[0].path, "/v1/models");
/// # }
/// ```
pub struct Server {
    addr: SocketAddr,
    shared: Arc<Shared>,
    runner: Runner,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.addr)
            .field("requests", &self.count())
            .finish_non_exhaustive()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // A thread runner stops when its sender drops with the server.
        if let Runner::Task(task) = &self.runner {
            task.abort();
        }
    }
}

impl Server {
    /// Starts a server on the current Tokio runtime that answers requests in
    /// turn from `script`; its last reply repeats.
    ///
    /// # Panics
    ///
    /// When `script` is empty, or outside a Tokio runtime.
    ///
    /// ```
    /// use toolnexus::testing::{Reply, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::json(503, "{}"), Reply::json(200, "{}")]).await;
    /// let statuses: Vec<u16> = futures::future::join_all(
    ///     (0..3).map(|_| async { reqwest::get(server.url("/")).await.unwrap().status().as_u16() }),
    /// )
    /// .await;
    /// let mut sorted = statuses.clone();
    /// sorted.sort();
    /// assert_eq!(sorted, [200, 200, 503], "the last reply repeats");
    /// # }
    /// ```
    pub async fn start(script: impl IntoIterator<Item = Reply>) -> Server {
        Server::builder().script(script).start().await
    }

    /// Starts a server on the current Tokio runtime whose `handler` picks each
    /// reply from the request's arrival index (from 0) and the request itself.
    ///
    /// The request is recorded before the handler runs. A handler that panics
    /// drops that connection.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    ///
    /// ```
    /// use toolnexus::testing::{Reply, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start_with(|i, req| {
    ///     if req.header("authorization").is_none() {
    ///         Reply::json(401, r#"{"detail": "no key"}"#)
    ///     } else {
    ///         Reply::json(200, format!(r#"{{"call": {i}}}"#))
    ///     }
    /// })
    /// .await;
    /// let http = reqwest::Client::new();
    /// let anonymous = http.get(server.url("/")).send().await.unwrap();
    /// assert_eq!(anonymous.status(), 401);
    /// let keyed = http.get(server.url("/")).bearer_auth("k").send().await.unwrap();
    /// assert_eq!(keyed.text().await.unwrap(), r#"{"call": 1}"#);
    /// # }
    /// ```
    pub async fn start_with(
        handler: impl Fn(usize, &Request) -> Reply + Send + Sync + 'static,
    ) -> Server {
        Server::builder().handler(handler).start().await
    }

    /// A [`Builder`], for a server on a thread of its own or for options beyond
    /// a script or a handler.
    ///
    /// ```
    /// use toolnexus::testing::{Reply, Server};
    ///
    /// // No runtime here: the server brings its own.
    /// let server = Server::builder()
    ///     .script([Reply::json(200, "{}")])
    ///     .start_on_thread();
    /// assert_eq!(server.count(), 0);
    /// ```
    pub fn builder() -> Builder {
        Builder { handler: None }
    }

    /// The address the server listens on: `127.0.0.1` and a free port.
    ///
    /// ```
    /// # use toolnexus::testing::{Reply, Server};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::Close]).await;
    /// assert!(server.addr().ip().is_loopback());
    /// assert_ne!(server.addr().port(), 0);
    /// # }
    /// ```
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL to hand a System One classifier or a chat client:
    /// `http://127.0.0.1:<port>/v1`.
    ///
    /// ```
    /// # use toolnexus::testing::{Reply, Server};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::Close]).await;
    /// assert_eq!(server.base_url(), format!("http://{}/v1", server.addr()));
    /// # }
    /// ```
    pub fn base_url(&self) -> String {
        self.url("/v1")
    }

    /// The URL of `path` (which starts with `/`) on this server.
    ///
    /// ```
    /// # use toolnexus::testing::{Reply, Server};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::Close]).await;
    /// assert_eq!(server.url("/health"), format!("http://{}/health", server.addr()));
    /// # }
    /// ```
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Every request read so far, in arrival order.
    ///
    /// ```
    /// # use toolnexus::testing::{Reply, Server};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::json(200, "{}")]).await;
    /// let http = reqwest::Client::new();
    /// http.post(server.url("/one")).send().await.unwrap();
    /// http.post(server.url("/two")).send().await.unwrap();
    /// let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    /// assert_eq!(paths, ["/one", "/two"]);
    /// # }
    /// ```
    pub fn requests(&self) -> Vec<Request> {
        self.shared.requests().clone()
    }

    /// How many requests were read so far: attempts, retries included, whatever
    /// they were answered with.
    ///
    /// ```
    /// # use toolnexus::testing::{Reply, Server};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::Reset]).await;
    /// assert!(reqwest::get(server.url("/")).await.is_err());
    /// assert_eq!(server.count(), 1);
    /// # }
    /// ```
    pub fn count(&self) -> usize {
        self.shared.requests().len()
    }

    /// What the server saw of its connections and streamed bodies.
    ///
    /// ```
    /// # use toolnexus::testing::{Reply, Server};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::json(200, "{}")]).await;
    /// assert_eq!(server.observed().connections(), 0);
    /// # }
    /// ```
    pub fn observed(&self) -> &Observed {
        &self.shared.observed
    }
}

/// Configures a [`Server`]: what it answers, and where it runs.
///
/// ```
/// use toolnexus::testing::{Reply, Server};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = Server::builder().script([Reply::json(200, "{}")]).start().await;
/// assert_eq!(reqwest::get(server.url("/")).await.unwrap().status(), 200);
/// # }
/// ```
#[must_use = "a builder does nothing until started"]
pub struct Builder {
    handler: Option<Handler>,
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("answers", &self.handler.is_some())
            .finish_non_exhaustive()
    }
}

impl Builder {
    /// Answers requests in turn from `script`; its last reply repeats. Replaces
    /// any handler set before.
    ///
    /// # Panics
    ///
    /// When `script` is empty.
    ///
    /// ```
    /// # use toolnexus::testing::{Reply, Server};
    /// let builder = Server::builder().script([Reply::Stall, Reply::json(200, "{}")]);
    /// # let _ = builder;
    /// ```
    pub fn script(self, script: impl IntoIterator<Item = Reply>) -> Builder {
        let script: Vec<Reply> = script.into_iter().collect();
        assert!(!script.is_empty(), "a script needs at least one reply");
        self.handler(move |i, _| script[i.min(script.len() - 1)].clone())
    }

    /// Answers each request with what `handler` returns for its arrival index
    /// (from 0) and the request. Replaces any script set before.
    ///
    /// ```
    /// # use toolnexus::testing::{Reply, Server};
    /// let builder = Server::builder().handler(|i, _req| Reply::json(200, format!("{i}")));
    /// # let _ = builder;
    /// ```
    pub fn handler(
        mut self,
        handler: impl Fn(usize, &Request) -> Reply + Send + Sync + 'static,
    ) -> Builder {
        self.handler = Some(Arc::new(handler));
        self
    }

    /// Starts the server on the current Tokio runtime.
    ///
    /// # Panics
    ///
    /// When neither a script nor a handler was set, or outside a Tokio runtime.
    ///
    /// ```
    /// # use toolnexus::testing::{Reply, Server};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::builder().script([Reply::json(204, "")]).start().await;
    /// assert_eq!(reqwest::get(server.url("/")).await.unwrap().status(), 204);
    /// # }
    /// ```
    pub async fn start(self) -> Server {
        let handler = self.into_handler();
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("a bound address");
        let shared = Arc::<Shared>::default();
        let task = tokio::spawn(accept_loop(listener, handler, shared.clone()));
        Server {
            addr,
            shared,
            runner: Runner::Task(task.abort_handle()),
        }
    }

    /// Starts the server on a thread of its own, with its own single-threaded
    /// Tokio runtime: for tests without a runtime (a plain `#[test]` driving a
    /// child process), or whose runtime should not drive the server.
    ///
    /// # Panics
    ///
    /// When neither a script nor a handler was set.
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use toolnexus::testing::{Reply, Server};
    ///
    /// let server = Server::builder()
    ///     .script([Reply::json(200, r#"{"ok":true}"#)])
    ///     .start_on_thread();
    /// let mut s = std::net::TcpStream::connect(server.addr()).unwrap();
    /// s.write_all(b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    /// let mut answer = String::new();
    /// s.read_to_string(&mut answer).unwrap();
    /// assert!(answer.starts_with("HTTP/1.1 200 "));
    /// assert!(answer.ends_with(r#"{"ok":true}"#));
    /// assert_eq!(server.requests()[0].path, "/v1/models");
    /// ```
    pub fn start_on_thread(self) -> Server {
        let handler = self.into_handler();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let addr = listener.local_addr().expect("a bound address");
        let shared = Arc::<Shared>::default();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a Tokio runtime for the test server");
        let state = shared.clone();
        std::thread::Builder::new()
            .name(format!("toolnexus-testing-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = TcpListener::from_std(listener).expect("a Tokio listener");
                    let task = tokio::spawn(accept_loop(listener, handler, state));
                    // Resolves when the server handle, and with it the sender, drops.
                    let _ = stopped.await;
                    task.abort();
                });
                // Dropping the runtime here cancels every connection task.
            })
            .expect("spawn the test server thread");
        Server {
            addr,
            shared,
            runner: Runner::Thread { _stop: stop },
        }
    }

    fn into_handler(self) -> Handler {
        self.handler
            .expect("a test server needs a script or a handler (Builder::script, Builder::handler)")
    }
}

// ---------------------------------------------------------------- serving

async fn accept_loop(listener: TcpListener, handler: Handler, shared: Arc<Shared>) {
    // Owning the connection tasks here means aborting this task ends them all.
    let mut connections = JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let Ok((sock, _)) = listener.accept().await else {
            // Out of descriptors, say: back off instead of spinning.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        shared.observed.connections.fetch_add(1, Ordering::SeqCst);
        let _ = sock.set_nodelay(true);
        connections.spawn(serve_connection(
            Connection::new(sock),
            handler.clone(),
            shared.clone(),
        ));
    }
}

/// What to do with a connection after one reply.
enum After {
    KeepOpen,
    Done,
}

async fn serve_connection(mut conn: Connection, handler: Handler, shared: Arc<Shared>) {
    while let Some(req) = conn.read_request().await {
        let close = req
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let index = {
            let mut all = shared.requests();
            all.push(req.clone());
            all.len() - 1
        };
        let reply = handler(index, &req);
        match conn.reply(reply, &shared.observed).await {
            After::KeepOpen if !close => {}
            After::KeepOpen => {
                let _ = conn.sock.shutdown().await;
                return;
            }
            After::Done => return,
        }
    }
}

/// One accepted connection and the bytes read from it but not yet consumed.
struct Connection {
    sock: TcpStream,
    buf: Vec<u8>,
}

impl Connection {
    fn new(sock: TcpStream) -> Connection {
        Connection {
            sock,
            buf: Vec::with_capacity(8192),
        }
    }

    /// Reads more bytes into the buffer; `None` at EOF or on an error.
    async fn fill(&mut self) -> Option<()> {
        let mut tmp = [0u8; 8192];
        match self.sock.read(&mut tmp).await {
            Ok(0) | Err(_) => None,
            Ok(n) => {
                self.buf.extend_from_slice(&tmp[..n]);
                Some(())
            }
        }
    }

    /// Takes the first `n` bytes, reading until there are that many.
    async fn take(&mut self, n: usize) -> Option<Vec<u8>> {
        while self.buf.len() < n {
            self.fill().await?;
        }
        Some(self.buf.drain(..n).collect())
    }

    /// Takes bytes up to the next `\r\n` (dropping it).
    async fn line(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(i) = find(&self.buf, b"\r\n") {
                let line = self.buf[..i].to_vec();
                self.buf.drain(..i + 2);
                return Some(line);
            }
            if self.buf.len() > MAX_HEAD_BYTES {
                return None;
            }
            self.fill().await?;
        }
    }

    /// The next request; `None` when the peer closed or sent something else.
    async fn read_request(&mut self) -> Option<Request> {
        let head_end = loop {
            if let Some(i) = find(&self.buf, b"\r\n\r\n") {
                break i;
            }
            if self.buf.len() > MAX_HEAD_BYTES {
                return None;
            }
            self.fill().await?;
        };
        let head = String::from_utf8_lossy(&self.buf[..head_end]).into_owned();
        self.buf.drain(..head_end + 4);
        let mut lines = head.split("\r\n");
        let mut first = lines.next()?.split(' ');
        let method = first.next()?.to_string();
        let path = first.next()?.to_string();
        let mut headers: BTreeMap<String, String> = BTreeMap::new();
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
            headers
                .entry(name)
                .and_modify(|v| {
                    v.push_str(", ");
                    v.push_str(value);
                })
                .or_insert_with(|| value.to_string());
        }
        let chunked = headers
            .get("transfer-encoding")
            .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
        let body = if chunked {
            self.read_chunked().await?
        } else {
            let len = match headers.get("content-length") {
                Some(v) => v.parse().ok()?,
                None => 0,
            };
            self.take(len).await?
        };
        Some(Request {
            method,
            path,
            headers,
            body,
        })
    }

    async fn read_chunked(&mut self) -> Option<Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let line = self.line().await?;
            let line = String::from_utf8_lossy(&line);
            let size = usize::from_str_radix(line.split(';').next()?.trim(), 16).ok()?;
            if size == 0 {
                // Trailers, if any, up to the blank line.
                while !self.line().await?.is_empty() {}
                return Some(body);
            }
            body.extend_from_slice(&self.take(size).await?);
            if self.take(2).await? != b"\r\n" {
                return None;
            }
        }
    }

    async fn reply(&mut self, mut reply: Reply, observed: &Observed) -> After {
        while let Reply::Delayed { delay, reply: next } = reply {
            tokio::time::sleep(delay).await;
            reply = *next;
        }
        let sock = &mut self.sock;
        match reply {
            Reply::Response {
                status,
                headers,
                body,
            } => {
                let mut head = format!(
                    "HTTP/1.1 {status} {}\r\ncontent-length: {}\r\n",
                    reason(status),
                    body.len()
                );
                for (name, value) in headers {
                    head.push_str(&format!("{name}: {value}\r\n"));
                }
                head.push_str("\r\n");
                // One write: a head and body sent apart meet the peer's delayed ACK.
                let mut frame = head.into_bytes();
                frame.extend_from_slice(&body);
                match sock.write_all(&frame).await {
                    Ok(()) => After::KeepOpen,
                    Err(_) => After::Done,
                }
            }
            Reply::Delayed { .. } => unreachable!("delays are unwrapped above"),
            Reply::Stall => stall().await,
            Reply::Close => {
                let _ = sock.shutdown().await;
                After::Done
            }
            Reply::Reset => {
                reset(sock);
                After::Done
            }
            Reply::Garbage(bytes) => {
                let _ = sock.write_all(&bytes).await;
                let _ = sock.shutdown().await;
                After::Done
            }
            Reply::StallInHead(bytes) => {
                let _ = sock.write_all(&bytes).await;
                stall().await
            }
            Reply::StallMidBody {
                status,
                declared,
                sent,
            } => {
                let _ = sock.write_all(&body_head(status, declared)).await;
                let _ = sock.write_all(&sent).await;
                stall().await
            }
            Reply::ResetMidBody {
                status,
                declared,
                sent,
            } => {
                let _ = sock.write_all(&body_head(status, declared)).await;
                let _ = sock.write_all(&sent).await;
                let _ = sock.flush().await;
                reset(sock);
                After::Done
            }
            Reply::CloseMidBody {
                status,
                declared,
                sent,
            } => {
                let _ = sock.write_all(&body_head(status, declared)).await;
                let _ = sock.write_all(&sent).await;
                let _ = sock.shutdown().await;
                After::Done
            }
            Reply::Chunked { total } => match write_chunked(sock, total, observed).await {
                Ok(()) => {
                    observed.chunked_completed.fetch_add(1, Ordering::SeqCst);
                    After::KeepOpen
                }
                Err(_) => {
                    observed.chunked_hung_up.fetch_add(1, Ordering::SeqCst);
                    After::Done
                }
            },
        }
    }
}

async fn write_chunked(
    sock: &mut TcpStream,
    total: usize,
    observed: &Observed,
) -> std::io::Result<()> {
    sock.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n",
    )
    .await?;
    let chunk = vec![b' '; CHUNK_BYTES];
    let mut left = total;
    while left > 0 {
        let n = left.min(chunk.len());
        sock.write_all(format!("{n:x}\r\n").as_bytes()).await?;
        sock.write_all(&chunk[..n]).await?;
        sock.write_all(b"\r\n").await?;
        observed.chunked_bytes_sent.fetch_add(n, Ordering::SeqCst);
        left -= n;
    }
    sock.write_all(b"0\r\n\r\n").await
}

/// Holds the connection open and silent until the server stops.
async fn stall() -> After {
    std::future::pending::<()>().await;
    After::Done
}

/// The head of a JSON response declaring `declared` body bytes.
fn body_head(status: u16, declared: usize) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {declared}\r\n\r\n",
        reason(status)
    )
    .into_bytes()
}

/// Resets the connection: with a zero linger, closing sends RST, not FIN. The
/// socket closes when its owner drops it, right after this.
fn reset(sock: &TcpStream) {
    let _ = sock.set_zero_linger();
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A reason phrase for the status line; clients read only the code.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Content Too Large",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}
