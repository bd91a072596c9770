//! [`Reply`]: what the fake server answers, faults and delays included, and
//! the chat reply shapes of both wires.

use std::time::Duration;

use serde_json::{Value, json};

/// What the [`Server`](super::Server) does with one request: a complete response, or a fault.
///
/// Build complete responses with [`Reply::json`], [`Reply::value`] and the chat
/// shapes [`Reply::openai_chat`] and [`Reply::anthropic_message`]; add headers
/// with [`Reply::with_header`] and a delay with [`Reply::delayed`]. The fault
/// variants are built directly.
///
/// Every fault happens after the whole request was read and recorded, so
/// [`Server::count`](super::Server::count) counts attempts that met a fault too. Where a fault leaves
/// the connection open (the stalls), it stays open until the [`Server`](super::Server) is
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
    /// up is counted in [`Observed`](super::Observed).
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
    /// Tokio runtime with paused time, [`Server::start`](super::Server::start)'s delays are virtual.
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
