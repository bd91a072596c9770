//! The small chat client the Llm style talks through, and [`BoxFuture`].
//!
//! [`create_client`] builds a [`Client`] for one of two wires ([`Style`]):
//!
//! | style | endpoint | key header |
//! |---|---|---|
//! | [`Style::OpenAi`] (default) | `POST {base_url}/chat/completions` | `Authorization: Bearer <key>` |
//! | [`Style::Anthropic`] | `POST {base_url}/messages` | `x-api-key: <key>` and `anthropic-version: 2023-06-01` |
//!
//! [`Client::chat`] makes ONE chat completion: no agent loop, no tools, no
//! streaming. It shares the System One transport, so the same rules hold: a
//! per-attempt timeout, classified retries with backoff and `Retry-After`,
//! prompt cancellation, a response size cap, `${ENV}` header expansion, the key
//! read by name at call time, no 401/403 body and no secret in any error. Errors
//! from the transport start with `client: `.
//!
//! Handed to [`ClassifierOptions::client`](crate::classifier::ClassifierOptions)
//! with [`ClassifierStyle::Llm`](crate::classifier::ClassifierStyle), a client
//! emulates a System One model: the questions and the state become ONE prompt
//! ([`render_prompt`](crate::classifier::render_prompt)) and the reply's outermost JSON object is decoded strictly
//! ([`decode_reply`](crate::classifier::decode_reply)), never repaired. An emulated decision is never calibrated.
//!
//! Opt-in log-probability mode ([`ClientOptions::logprobs`], OpenAI-compatible
//! servers that return `logprobs`/`top_logprobs`: vLLM, llama.cpp, Ollama,
//! OpenAI): instead of the model's self-reported numbers, each question is asked
//! in its own constrained request and its distribution is read from the
//! probabilities of the answer tokens (option labels `A`…`Z`, `yes`/`no`, level
//! digits). It costs one request per question (run concurrently), and the result
//! is still **uncalibrated**: token probabilities measure the model's
//! uncertainty about its next token, not how often it is right.
//!
//! ```
//! use serde_json::json;
//! use toolnexus::classifier::{
//!     ClassifierOptions, ClassifierStyle, NoulQuestion, Questions, create_classifier,
//! };
//! use toolnexus::client::{ClientOptions, Style, create_client};
//!
//! let client = create_client(ClientOptions {
//!     base_url: "http://127.0.0.1:11434/v1".into(), // e.g. a local Ollama
//!     style: Style::OpenAi,
//!     model: "llama3.2".into(),
//!     ..Default::default()
//! })?;
//! let judge = create_classifier(ClassifierOptions {
//!     style: ClassifierStyle::Llm,
//!     client: Some(client),
//!     ..Default::default()
//! })?;
//! assert_eq!(judge.model(), "llama3.2");
//! // judge.evaluate(json!("..."), &questions).await? sends one chat completion.
//! # let _ = (json!(null), Questions::new(), NoulQuestion::default());
//! # Ok::<(), toolnexus::classifier::ClassifierError>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value};

pub use crate::context::BoxFuture;
use crate::context::EvalContext;
pub use crate::env::EnvSource;
use crate::error::{ClassifierError, Scope, msg};
use crate::http::{Auth, Transport};
pub use crate::http::{HttpClient, TransportOptions};
use crate::retry::{Jitter, OnErrorFn};

mod chat;

pub use chat::{ChatMessage, ChatReply, Role, Style, TokenLogprob};

/// The `anthropic-version` header the Anthropic style sends.
///
/// ```
/// assert_eq!(toolnexus::client::ANTHROPIC_VERSION, "2023-06-01");
/// ```
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` sent by the Anthropic style when [`ClientOptions::max_tokens`] is 0
/// (Anthropic requires the field; the OpenAI style omits it).
///
/// ```
/// assert_eq!(toolnexus::client::DEFAULT_ANTHROPIC_MAX_TOKENS, 4096);
/// ```
pub const DEFAULT_ANTHROPIC_MAX_TOKENS: u32 = 4096;
/// `top_logprobs` asked for in log-probability mode when
/// [`ClientOptions::top_logprobs`] is 0 (OpenAI's own maximum).
///
/// ```
/// assert_eq!(toolnexus::client::DEFAULT_TOP_LOGPROBS, 20);
/// ```
pub const DEFAULT_TOP_LOGPROBS: u32 = 20;

/// Everything [`create_client`] needs. Build it with a struct literal and
/// `..Default::default()`; zero and empty fields take the defaults below.
///
/// | field | default |
/// |---|---|
/// | `base_url`, `model` | none: required |
/// | `style` | [`Style::OpenAi`] |
/// | `api_key_env` | empty: no key is sent |
/// | `timeout_ms` | 10 000 (one attempt) |
/// | `retries` | 0 ⇒ 2; `-1` ⇒ no retries |
/// | `retry_base_ms` | 500 |
/// | `retry_budget_ms` | 30 000 (attempts and waits of one call) |
/// | `max_response_bytes` | 16 MiB |
/// | `max_tokens` | 0 ⇒ omitted (OpenAI) / 4096 (Anthropic) |
/// | `temperature` | `None` ⇒ omitted |
/// | `logprobs` | `false` |
/// | `top_logprobs` | 0 ⇒ 20 |
///
/// There is no default key variable on purpose: a client pointed at your own
/// server never sends a cloud key it was not told to. The key is never stored:
/// `api_key_env` names the variable, read at call time (unset or empty ⇒ no
/// key header). `headers` values may say `${ENV_VAR}`, also expanded at call
/// time. `Debug` shows header names only.
///
/// ```
/// use toolnexus::client::{ClientOptions, Style};
///
/// let opts = ClientOptions {
///     base_url: "https://api.anthropic.com/v1".into(),
///     style: Style::Anthropic,
///     model: "claude-sonnet-4-5".into(),
///     api_key_env: "ANTHROPIC_API_KEY".into(),
///     headers: [("X-Team".to_string(), "${TEAM_TOKEN}".to_string())].into(),
///     temperature: Some(0.0),
///     ..Default::default()
/// };
/// assert!(!format!("{opts:?}").contains("TEAM_TOKEN"));
/// ```
#[derive(Clone, Default)]
pub struct ClientOptions {
    /// The API root, e.g. `https://api.openai.com/v1`; the style's path is appended.
    pub base_url: String,
    /// Which wire to speak.
    pub style: Style,
    /// The model to ask for.
    pub model: String,
    /// The environment variable holding the API key (read per call, never stored).
    pub api_key_env: String,
    /// Extra request headers; values expand `${ENV_VAR}` at call time.
    pub headers: BTreeMap<String, String>,
    /// Time allowed to one attempt, in milliseconds.
    pub timeout_ms: u64,
    /// Retries after the first attempt: 0 means the default (2), -1 means none.
    pub retries: i32,
    /// Backoff base in milliseconds: retry `n` waits up to `base × 2^n` unless
    /// the server sent `Retry-After`.
    pub retry_base_ms: u64,
    /// Total retry budget of one call in milliseconds, attempts and waits
    /// together: 0 means the default (30 000). A retry whose wait would reach
    /// it is not made; the last error is returned.
    pub retry_budget_ms: u64,
    /// How backoff waits are spread: full jitter by default (each wait drawn
    /// from `0..=retry_base_ms × 2^attempt`), [`Jitter::Seeded`] for
    /// reproducible tests, [`Jitter::Off`] for none. `Retry-After` stays exact.
    pub retry_jitter: Jitter,
    /// HTTP statuses to retry on top of the default set (it only adds).
    pub retryable_statuses: Vec<u16>,
    /// Overrides the retry decision per failed attempt.
    pub on_error: Option<OnErrorFn>,
    /// Cap on a response body, in bytes.
    pub max_response_bytes: usize,
    /// The most tokens a reply may have (`max_tokens` on both wires).
    pub max_tokens: u32,
    /// Sampling temperature; `None` leaves the server's default.
    pub temperature: Option<f64>,
    /// Log-probability mode for the Llm style (OpenAI style only): one
    /// constrained request per question (`logprobs: true`, `top_logprobs`, and
    /// `max_tokens: 1` unless `max_tokens` is set), distributions read from the
    /// answer tokens' log-probabilities. Costs n requests for n questions, run
    /// concurrently; still uncalibrated. A choice may have at most 26 options
    /// here (one letter label each).
    pub logprobs: bool,
    /// How many alternatives per token to ask for in log-probability mode.
    pub top_logprobs: u32,
    /// Top-level body fields merged over the built request (a key here wins),
    /// e.g. `response_format` or a provider's routing options.
    pub request_params: Map<String, Value>,
    /// The connection pool to send through; `None` shares the process-wide one
    /// ([`HttpClient::shared`]).
    pub http: Option<HttpClient>,
    /// A rate limiter every attempt draws on (shareable with classifiers).
    pub limiter: Option<crate::limit::Limiter>,
    /// Where `api_key_env` and `${NAME}` header references are read, at each
    /// call: the process environment by default.
    pub env: EnvSource,
}

impl fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientOptions")
            .field("base_url", &crate::http::redact_url(&self.base_url))
            .field("style", &self.style)
            .field("model", &self.model)
            .field("api_key_env", &self.api_key_env)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("timeout_ms", &self.timeout_ms)
            .field("retries", &self.retries)
            .field("retry_base_ms", &self.retry_base_ms)
            .field("retry_budget_ms", &self.retry_budget_ms)
            .field("retry_jitter", &self.retry_jitter)
            .field("env", &self.env)
            .field("retryable_statuses", &self.retryable_statuses)
            .field("on_error", &self.on_error.is_some())
            .field("max_response_bytes", &self.max_response_bytes)
            .field("max_tokens", &self.max_tokens)
            .field("temperature", &self.temperature)
            .field("logprobs", &self.logprobs)
            .field("top_logprobs", &self.top_logprobs)
            .field(
                "request_params",
                &self.request_params.keys().collect::<Vec<_>>(),
            )
            .field("http", &self.http)
            .field("limiter", &self.limiter)
            .finish()
    }
}

impl ClientOptions {
    /// The transport settings of these options as one value: base URL, key
    /// variable, headers, timeouts, retries, size cap, pool, limiter and
    /// environment (see [`TransportOptions`]). What the client's HTTP
    /// transport is built from.
    ///
    /// ```
    /// use toolnexus::client::ClientOptions;
    ///
    /// let opts = ClientOptions { base_url: "http://127.0.0.1:8000/v1".into(), timeout_ms: 900, ..Default::default() };
    /// let t = opts.transport();
    /// assert_eq!((t.base_url.as_str(), t.timeout_ms), ("http://127.0.0.1:8000/v1", 900));
    /// ```
    pub fn transport(&self) -> TransportOptions {
        crate::http::transport_fields!(read self)
    }

    /// These options with every transport field set from `transport`: the
    /// same settings a classifier uses can serve the chat client beside it.
    ///
    /// ```
    /// use toolnexus::client::{ClientOptions, TransportOptions};
    ///
    /// let t = TransportOptions { base_url: "http://127.0.0.1:8000/v1".into(), retries: -1, ..Default::default() };
    /// let opts = ClientOptions { model: "qwen2.5".into(), ..Default::default() }.with_transport(t);
    /// assert_eq!((opts.base_url.as_str(), opts.retries), ("http://127.0.0.1:8000/v1", -1));
    /// assert_eq!(opts.model, "qwen2.5", "other fields are kept");
    /// ```
    pub fn with_transport(mut self, transport: TransportOptions) -> ClientOptions {
        crate::http::transport_fields!(write self, transport);
        self
    }
}

/// A configured chat-completion client. Cheap to clone (an `Arc`), `Send + Sync`.
///
/// `Debug` shows the style, model and endpoint (no credentials, no query).
///
/// ```
/// use toolnexus::client::{ClientOptions, create_client};
///
/// let client = create_client(ClientOptions {
///     base_url: "https://user:pw@llm.internal/v1?token=x".into(),
///     model: "qwen2.5".into(),
///     ..Default::default()
/// })?;
/// let shown = format!("{client:?}");
/// assert!(shown.contains("https://llm.internal/v1/chat/completions"), "{shown}");
/// assert!(!shown.contains("pw") && !shown.contains("token"), "{shown}");
/// // A query on the base URL (Azure's `?api-version=…`) is sent after the path.
/// assert_eq!(client.endpoint(), "https://llm.internal/v1/chat/completions");
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

struct ClientInner {
    style: Style,
    model: String,
    transport: Transport,
    max_tokens: u32,
    temperature: Option<f64>,
    logprobs: bool,
    top_logprobs: u32,
    request_params: Map<String, Value>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("style", &self.inner.style)
            .field("model", &self.inner.model)
            .field("endpoint", &self.inner.transport.shown())
            .field("logprobs", &self.inner.logprobs)
            .finish_non_exhaustive()
    }
}

fn client_config(text: impl fmt::Display) -> ClassifierError {
    msg::scoped_config(Scope::Client, text)
}

/// Builds a client, applying the defaults of [`ClientOptions`] and rejecting
/// what cannot work: an empty `model` or `base_url` (the message names the
/// field), a base URL that is not http(s), a bad header name, or log-probability
/// mode on the Anthropic style (its API returns no log-probabilities).
///
/// No request is made and no environment variable is read here.
///
/// ```
/// use toolnexus::client::{ClientOptions, Style, create_client};
///
/// let e = create_client(ClientOptions { base_url: "http://127.0.0.1:8000/v1".into(), ..Default::default() })
///     .unwrap_err();
/// assert_eq!(e.to_string(), "client: model is required (the model id to ask for)");
///
/// let client = create_client(ClientOptions {
///     base_url: "https://api.anthropic.com/v1/".into(),
///     style: Style::Anthropic,
///     model: "claude-haiku-4-5".into(),
///     api_key_env: "ANTHROPIC_API_KEY".into(),
///     ..Default::default()
/// })?;
/// assert_eq!(client.endpoint(), "https://api.anthropic.com/v1/messages");
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
pub fn create_client(options: ClientOptions) -> Result<Client, ClassifierError> {
    let model = options.model.trim().to_string();
    if options.base_url.trim().is_empty() {
        return Err(client_config(
            "base_url is required (e.g. \"https://api.openai.com/v1\")",
        ));
    }
    let endpoint =
        crate::http::endpoint_url(Scope::Client, &options.base_url, options.style.path())?;
    if model.is_empty() {
        return Err(client_config("model is required (the model id to ask for)"));
    }
    if options.logprobs && options.style == Style::Anthropic {
        return Err(client_config(
            "logprobs needs style \"openai\" (the Anthropic API returns no log-probabilities)",
        ));
    }
    if options.temperature.is_some_and(|t| !t.is_finite()) {
        return Err(client_config("temperature is not a finite number"));
    }
    let (auth, fixed_headers) = match options.style {
        Style::OpenAi => (Auth::Bearer, Vec::new()),
        Style::Anthropic => (
            Auth::Header("x-api-key"),
            vec![("anthropic-version", ANTHROPIC_VERSION)],
        ),
    };
    let mut transport = options.transport();
    transport.api_key_env = transport.api_key_env.trim().to_string();
    let transport =
        Transport::new(transport.resolve(Scope::Client, endpoint, auth, fixed_headers))?;
    Ok(Client {
        inner: Arc::new(ClientInner {
            style: options.style,
            model,
            transport,
            max_tokens: options.max_tokens,
            temperature: options.temperature,
            logprobs: options.logprobs,
            top_logprobs: if options.top_logprobs == 0 {
                DEFAULT_TOP_LOGPROBS
            } else {
                options.top_logprobs
            },
            request_params: options.request_params,
        }),
    })
}

/// Per-request settings that differ between a free reply and a constrained one.
pub(crate) struct RequestShape {
    pub max_tokens: Option<u32>,
    pub top_logprobs: Option<u32>,
}

impl Client {
    /// The model this client asks for.
    ///
    /// ```
    /// # use toolnexus::client::{ClientOptions, create_client};
    /// let c = create_client(ClientOptions { base_url: "http://127.0.0.1:1/v1".into(), model: "m".into(), ..Default::default() })?;
    /// assert_eq!(c.model(), "m");
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn model(&self) -> &str {
        &self.inner.model
    }

    /// The wire this client speaks.
    ///
    /// ```
    /// # use toolnexus::client::{ClientOptions, Style, create_client};
    /// let c = create_client(ClientOptions { base_url: "http://127.0.0.1:1/v1".into(), model: "m".into(), ..Default::default() })?;
    /// assert_eq!(c.style(), Style::OpenAi);
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn style(&self) -> Style {
        self.inner.style
    }

    /// The endpoint as it may be shown: no credentials, no query.
    ///
    /// ```
    /// # use toolnexus::client::{ClientOptions, create_client};
    /// let c = create_client(ClientOptions { base_url: "http://127.0.0.1:8000/v1".into(), model: "m".into(), ..Default::default() })?;
    /// assert_eq!(c.endpoint(), "http://127.0.0.1:8000/v1/chat/completions");
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn endpoint(&self) -> &str {
        self.inner.transport.shown()
    }

    /// Whether the Llm style reads distributions from token log-probabilities.
    ///
    /// ```
    /// # use toolnexus::client::{ClientOptions, create_client};
    /// let c = create_client(ClientOptions {
    ///     base_url: "http://127.0.0.1:8000/v1".into(),
    ///     model: "m".into(),
    ///     logprobs: true,
    ///     ..Default::default()
    /// })?;
    /// assert!(c.is_logprobs());
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn is_logprobs(&self) -> bool {
        self.inner.logprobs
    }

    /// The settings that can change what the chat model answers, for the Llm
    /// style's [`Fingerprint`](crate::classifier::Fingerprint): the wire,
    /// the endpoint (credentials removed), the sampling and log-probability
    /// settings and the extra body fields. Never a header or a key.
    pub(crate) fn fingerprint(&self) -> String {
        let i = &self.inner;
        format!(
            "{} {} max_tokens={} temperature={:?} logprobs={} top_logprobs={} request_params={}",
            i.style.as_str(),
            i.transport.shown(),
            i.max_tokens,
            i.temperature,
            i.logprobs,
            i.top_logprobs,
            crate::canonical::canonical_json(&Value::Object(i.request_params.clone())),
        )
    }

    /// `text` without this client's secrets (see [`Transport::scrub`]).
    pub(crate) fn scrub(&self, text: &str) -> String {
        self.inner.transport.scrub(text)
    }

    /// `top_logprobs` asked for in log-probability mode.
    pub(crate) fn top_logprobs(&self) -> u32 {
        self.inner.top_logprobs
    }

    /// Makes ONE chat completion and returns the reply: its text, the model that
    /// answered (the client's model when the server names none), token usage (a
    /// `cost` only when the provider reports one, as OpenRouter's `usage.cost`),
    /// the finish reason verbatim (`finish_reason` or `stop_reason`) and any
    /// refusal. A refused or truncated reply is returned, not an error: check
    /// [`ChatReply::refusal`] and [`ChatReply::is_truncated`].
    ///
    /// System messages go to `messages` (OpenAI) or the top-level `system` field
    /// (Anthropic). Retries, timeouts and the size cap apply as configured;
    /// errors from the wire start `client: `.
    ///
    /// Cancelling `ctx.cancel` returns `client: context canceled` promptly, also
    /// during a backoff sleep; dropping the future aborts the request in flight.
    ///
    /// Dropping the future aborts the request in flight.
    ///
    /// ```
    /// use toolnexus::classifier::EvalContext;
    /// use toolnexus::client::{ChatMessage, ClientOptions, create_client};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), toolnexus::classifier::ClassifierError> {
    /// let client = create_client(ClientOptions {
    ///     base_url: "http://127.0.0.1:11434/v1".into(),
    ///     model: "llama3.2".into(),
    ///     ..Default::default()
    /// })?;
    /// let ctx = EvalContext::new();
    /// ctx.cancel.cancel(); // so this example never leaves the machine
    /// let messages = [ChatMessage::system("Answer in one word."), ChatMessage::user("Capital of France?")];
    /// match client.chat(&ctx, &messages).await {
    ///     Ok(reply) => println!("{} ({} output tokens)", reply.text, reply.usage.output_tokens),
    ///     Err(e) if e.is_cancelled() => assert_eq!(e.to_string(), "client: context canceled"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn chat(
        &self,
        ctx: &EvalContext,
        messages: &[ChatMessage],
    ) -> Result<ChatReply, ClassifierError> {
        self.chat_shaped(
            ctx,
            messages,
            &RequestShape {
                max_tokens: None,
                top_logprobs: None,
            },
        )
        .await
    }

    pub(crate) async fn chat_shaped(
        &self,
        ctx: &EvalContext,
        messages: &[ChatMessage],
        shape: &RequestShape,
    ) -> Result<ChatReply, ClassifierError> {
        let i = &self.inner;
        let max_tokens = match (shape.max_tokens, i.max_tokens, i.style) {
            (_, n, _) if n > 0 => Some(n),
            (Some(n), _, _) => Some(n),
            (None, _, Style::Anthropic) => Some(DEFAULT_ANTHROPIC_MAX_TOKENS),
            (None, _, Style::OpenAi) => None,
        };
        let body = chat::request_body(&chat::RequestParts {
            style: i.style,
            model: &i.model,
            messages,
            max_tokens,
            temperature: i.temperature,
            top_logprobs: shape.top_logprobs,
            request_params: &i.request_params,
        });
        let started = std::time::Instant::now();
        let resp = i
            .transport
            .post_json(&ctx.cancel, Bytes::from(body))
            .await?;
        let reply = chat::parse_reply(i.style, &resp.body, &i.model).map_err(|text| {
            // The text may quote the body (a provider error), which may echo a secret.
            msg::reply_decode(Scope::Client, i.transport.shown(), i.transport.scrub(&text))
        })?;
        tracing::debug!(
            target: "toolnexus::client",
            endpoint = %i.transport.shown(),
            model = %reply.model,
            ms = started.elapsed().as_millis() as u64,
            input_tokens = reply.usage.input_tokens,
            output_tokens = reply.usage.output_tokens,
            finish_reason = reply.finish_reason.as_deref().unwrap_or(""),
            "client.chat ok"
        );
        Ok(reply)
    }
}
