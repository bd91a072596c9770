//! [`ClassifierOptions`], the styles, the backend presets and the defaults applied
//! at construction. Plain data: no environment is read here.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::EvalContext;
use super::decision::Decision;
use super::question::Questions;
#[cfg(feature = "http")]
use crate::client::Client;
use crate::context::BoxFuture;
use crate::defaults::*;
use crate::env::EnvSource;
use crate::error::{ClassifierError, msg};
#[cfg(feature = "http")]
use crate::http::HttpClient;
use crate::retry::{Jitter, OnErrorFn};

/// How a classifier reaches a judgment.
///
/// ```
/// use toolnexus::classifier::ClassifierStyle;
///
/// let s: ClassifierStyle = "static".parse()?;
/// assert_eq!(s, ClassifierStyle::Static);
/// assert_eq!(
///     "chat".parse::<ClassifierStyle>().unwrap_err().to_string(),
///     "classifier: unknown style \"chat\" (want systemone|llm|custom|static)"
/// );
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ClassifierStyle {
    /// A System One model over HTTP (TypeSafe's Jev, OpenRouter, Cloudflare, Ollama, self-hosted).
    #[default]
    SystemOne,
    /// An emulation over any chat LLM; never calibrated.
    Llm,
    /// Your own closure builds the decision.
    Custom,
    /// Recorded decisions, matched on model, questions and state. What CI runs.
    Static,
}

impl ClassifierStyle {
    /// The style's spelling: `systemone`, `llm`, `custom` or `static`.
    ///
    /// ```
    /// use toolnexus::classifier::ClassifierStyle;
    /// assert_eq!(ClassifierStyle::SystemOne.as_str(), "systemone");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            ClassifierStyle::SystemOne => "systemone",
            ClassifierStyle::Llm => "llm",
            ClassifierStyle::Custom => "custom",
            ClassifierStyle::Static => "static",
        }
    }
}

impl fmt::Display for ClassifierStyle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ClassifierStyle {
    type Err = ClassifierError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "systemone" => Ok(ClassifierStyle::SystemOne),
            "llm" => Ok(ClassifierStyle::Llm),
            "custom" => Ok(ClassifierStyle::Custom),
            "static" => Ok(ClassifierStyle::Static),
            _ => Err(msg::config(format!(
                "unknown style {s:?} (want systemone|llm|custom|static)"
            ))),
        }
    }
}

/// A System One provider preset: the base URL, model and key variable used when
/// the options leave them empty.
///
/// | preset | base_url | model | key env var |
/// |---|---|---|---|
/// | `TypeSafe` (default) | `https://api.typesafe.ai/v1` | `jev-latest` | `TYPESAFE_API_KEY` |
/// | `OpenRouter` | `https://openrouter.ai/api/v1` | `typesafe/jev-1.13` | `OPENROUTER_API_KEY` |
///
/// ```
/// use toolnexus::classifier::Backend;
///
/// let b: Backend = "openrouter".parse()?;
/// assert_eq!(b.default_model(), "typesafe/jev-1.13");
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Backend {
    /// TypeSafe's own API.
    #[default]
    TypeSafe,
    /// OpenRouter, which names Jev `typesafe/jev-…`.
    OpenRouter,
}

impl Backend {
    /// The preset's base URL.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Backend::TypeSafe => "https://api.typesafe.ai/v1",
            Backend::OpenRouter => "https://openrouter.ai/api/v1",
        }
    }

    /// The preset's model.
    pub fn default_model(self) -> &'static str {
        match self {
            Backend::TypeSafe => "jev-latest",
            Backend::OpenRouter => "typesafe/jev-1.13",
        }
    }

    /// The environment variable the preset reads its key from, at call time.
    pub fn default_api_key_env(self) -> &'static str {
        match self {
            Backend::TypeSafe => "TYPESAFE_API_KEY",
            Backend::OpenRouter => "OPENROUTER_API_KEY",
        }
    }
}

impl FromStr for Backend {
    type Err = ClassifierError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "typesafe" => Ok(Backend::TypeSafe),
            "openrouter" => Ok(Backend::OpenRouter),
            _ => Err(msg::config(format!(
                "unknown backend {s:?} (want typesafe|openrouter)"
            ))),
        }
    }
}

/// The closure behind the Custom style.
///
/// An `Err(text)` becomes `classifier: custom: <text>`. The decision it builds is
/// checked against the questions like any other.
pub type EvaluateFn =
    Arc<dyn Fn(EvalContext, Value, Questions) -> BoxFuture<Result<Decision, String>> + Send + Sync>;

/// Rewrites the System One request body just before it is encoded (for example
/// into Cloudflare's `{model, input: {…}}` envelope).
pub type BodyTransformFn = Arc<dyn Fn(Value) -> Value + Send + Sync>;

/// Receives every [`MetricEvent`].
pub type MetricFn = Arc<dyn Fn(&MetricEvent) + Send + Sync>;

/// One metric: `classifier.evaluate` once per call, `classifier.warning` for a
/// degenerate choice encoding or an answer to a question never asked.
///
/// Never carries a credential or an expanded header value.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use toolnexus::classifier::{ClassifierOptions, MetricEvent};
///
/// let seen: Arc<Mutex<Vec<String>>> = Arc::default();
/// let sink = seen.clone();
/// let opts = ClassifierOptions {
///     on_metric: Some(Arc::new(move |m: &MetricEvent| {
///         sink.lock().unwrap().push(format!("{} {}", m.name, m.status));
///     })),
///     ..Default::default()
/// };
/// # let _ = opts;
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct MetricEvent {
    /// An evaluation or a warning.
    pub name: MetricName,
    /// The model asked for (for `classifier.evaluate` with status `ok`, the model
    /// that answered).
    pub model: String,
    /// The `EvalContext::call_name` of the call, possibly empty.
    pub call_name: String,
    /// `Ok` or `Error` for an evaluation; `Warning` for a warning.
    pub status: MetricStatus,
    /// Wall time of the call.
    pub duration: Duration,
    /// Input tokens of a successful call.
    pub input_tokens: i64,
    /// Output tokens of a successful call.
    pub output_tokens: i64,
    /// The cost in US dollars, when it is known: reported by the backend,
    /// settled by a pricing layer ([`crate::cost::pricing`]), 0 for a cache hit.
    pub cost: Option<f64>,
    /// Where `cost` came from; `None` exactly when `cost` is.
    pub cost_source: Option<crate::price::CostSource>,
    /// The error text of a failed call, or the warning text.
    pub error: Option<String>,
    /// The question key a warning is about.
    pub key: Option<String>,
    /// The backend's request id (`x-typesafe-request-id`) for an evaluation,
    /// when it sent one: what to quote to the provider about this call.
    pub request_id: Option<String>,
    /// The decision came from a cache: then the tokens are 0 and `cost` is
    /// `Some(0.0)` (nothing was spent), whatever the recorded decision's usage.
    pub cache_hit: bool,
    /// The style or engine at the bottom of the stack
    /// ([`Identity::style`](super::Identity::style)): `systemone`, `llm`, `laya`, …
    pub style: String,
    /// The kind of a failed call's error (`None` for a success or a warning).
    pub error_kind: Option<super::ErrorKind>,
    /// The answer type (`noul`, `choice`, `score`, `box`) of each answer of a
    /// successful call, in key order; empty for a failure or a warning.
    pub answers: Vec<&'static str>,
}

/// What a [`MetricEvent`] reports. Shown as its `tracing` name.
///
/// ```
/// use toolnexus::classifier::MetricName;
/// assert_eq!(MetricName::Evaluate.to_string(), "classifier.evaluate");
/// assert_eq!(MetricName::Warning.as_str(), "classifier.warning");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MetricName {
    /// One call: `classifier.evaluate`.
    Evaluate,
    /// A warning about the questions or an answer: `classifier.warning`.
    Warning,
}

impl MetricName {
    /// The name as `tracing` and the metric sinks show it.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricName::Evaluate => "classifier.evaluate",
            MetricName::Warning => "classifier.warning",
        }
    }
}

impl std::fmt::Display for MetricName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the call or warning a [`MetricEvent`] reports ended.
///
/// ```
/// use toolnexus::classifier::MetricStatus;
/// assert_eq!(MetricStatus::Ok.to_string(), "ok");
/// assert_eq!(MetricStatus::Error.as_str(), "error");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MetricStatus {
    /// The call answered.
    Ok,
    /// The call failed; [`MetricEvent::error`] says why.
    Error,
    /// A warning; [`MetricEvent::error`] holds its text.
    Warning,
}

impl MetricStatus {
    /// `ok`, `error` or `warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricStatus::Ok => "ok",
            MetricStatus::Error => "error",
            MetricStatus::Warning => "warning",
        }
    }
}

impl std::fmt::Display for MetricStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One recorded response for the Static style.
///
/// ```
/// use serde_json::json;
/// use toolnexus::classifier::{NoulQuestion, Questions, RecordedDecision};
///
/// let rec = RecordedDecision {
///     state: json!("hello"),
///     questions: Questions::from([("spam".to_string(), NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into())]),
///     response: br#"{"model":"m","answers":{"spam":{"type":"noul","noul":0.01}}}"#.to_vec(),
/// };
/// # let _ = rec;
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedDecision {
    /// The state it answers.
    pub state: Value,
    /// The questions it answers.
    pub questions: Questions,
    /// The wire response, as a System One backend would send it.
    pub response: Vec<u8>,
}

/// Everything `create_classifier` needs. Build it with a struct literal and
/// `..Default::default()`; empty and zero fields take the defaults below at
/// construction, so explicit values always win.
///
/// | field | default |
/// |---|---|
/// | `style` | `SystemOne` |
/// | `backend` | `TypeSafe` (see [`Backend`] for its base URL, model and key variable) |
/// | `base_url`, `model`, `api_key_env` | the backend preset's |
/// | `timeout_ms` | 10 000 (one attempt) |
/// | `retries` | 0 ⇒ 2; `-1` ⇒ no retries |
/// | `retry_base_ms` | 500 |
/// | `retry_budget_ms` | 30 000 (attempts and waits of one call) |
/// | `max_response_bytes` | 16 MiB |
/// | `batch_concurrency` | 16 |
///
/// The API key is never stored here: `api_key_env` names the variable, read at
/// call time. `headers` values may say `${ENV_VAR}`, also expanded at call time.
/// `Debug` shows header names only.
///
/// ```
/// use toolnexus::classifier::{Backend, ClassifierOptions};
///
/// let opts = ClassifierOptions {
///     backend: Backend::OpenRouter,
///     timeout_ms: 5_000,
///     headers: [("X-Team".to_string(), "${TEAM_TOKEN}".to_string())].into(),
///     ..Default::default()
/// };
/// assert!(!format!("{opts:?}").contains("TEAM_TOKEN"));
/// ```
#[derive(Clone, Default)]
pub struct ClassifierOptions {
    /// How decisions are reached.
    pub style: ClassifierStyle,
    /// The System One provider preset.
    pub backend: Backend,
    /// The API root; `/systemone` is appended.
    pub base_url: String,
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
    /// Backoff base in milliseconds.
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
    /// Top-level body fields merged over `model`/`questions`/`state` (a key here wins).
    pub request_params: Map<String, Value>,
    /// Rewrites the body after the merge.
    pub body_transform: Option<BodyTransformFn>,
    /// Receives metrics.
    pub on_metric: Option<MetricFn>,
    /// The chat client the Llm style talks through.
    #[cfg(feature = "http")]
    pub client: Option<Client>,
    /// The connection pool the System One style sends through; `None` shares
    /// the process-wide one ([`HttpClient::shared`]).
    #[cfg(feature = "http")]
    pub http: Option<HttpClient>,
    /// A rate limiter every HTTP attempt of the System One style draws on;
    /// share one [`Limiter`](crate::limit::Limiter) between classifiers and chat
    /// clients that spend one account's budget.
    pub limiter: Option<crate::limit::Limiter>,
    /// Where `api_key_env` and `${NAME}` header references are read, at each
    /// call: the process environment by default.
    pub env: EnvSource,
    /// The closure of the Custom style.
    pub evaluate: Option<EvaluateFn>,
    /// The typed evaluator of the Custom style (instead of `evaluate`): takes
    /// the whole request, and its errors pass through as they are.
    pub evaluator: Option<Arc<dyn super::Evaluator>>,
    /// The recordings of the Static style.
    pub decisions: Vec<RecordedDecision>,
    /// Cap on a response body, in bytes.
    pub max_response_bytes: usize,
    /// States in flight at once in `evaluate_batch`.
    pub batch_concurrency: usize,
    /// How each call's cost is settled when the backend reports none (see
    /// [`crate::price::Pricing`]): the cost and its source then reach
    /// [`Evaluated::cost`](super::Evaluated::cost) and every [`MetricEvent`].
    /// `None`: only a reported cost is known.
    pub pricing: Option<crate::price::Pricing>,
}

impl fmt::Debug for ClassifierOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("ClassifierOptions");
        d.field("style", &self.style)
            .field("backend", &self.backend)
            .field("base_url", &crate::redact::redact_url(&self.base_url))
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
            .field(
                "request_params",
                &self.request_params.keys().collect::<Vec<_>>(),
            )
            .field("body_transform", &self.body_transform.is_some())
            .field("on_metric", &self.on_metric.is_some())
            .field("evaluate", &self.evaluate.is_some())
            .field("evaluator", &self.evaluator.is_some());
        #[cfg(feature = "http")]
        d.field("client", &self.client).field("http", &self.http);
        d.field("limiter", &self.limiter);
        d.field("decisions", &self.decisions.len())
            .field("max_response_bytes", &self.max_response_bytes)
            .field("batch_concurrency", &self.batch_concurrency)
            .field("pricing", &self.pricing)
            .finish()
    }
}

#[cfg(feature = "http")]
impl ClassifierOptions {
    /// The transport settings of these options as one value: base URL, key
    /// variable, headers, timeouts, retries, size cap, pool, limiter and
    /// environment (see [`TransportOptions`](crate::http::TransportOptions)),
    /// as given: the backend preset fills an empty `base_url` or `api_key_env`
    /// at construction. What the System One style's HTTP transport is built
    /// from.
    ///
    /// ```
    /// use toolnexus::classifier::ClassifierOptions;
    ///
    /// let opts = ClassifierOptions { timeout_ms: 5_000, retries: -1, ..Default::default() };
    /// let t = opts.transport();
    /// assert_eq!((t.timeout_ms, t.retries), (5_000, -1));
    /// ```
    pub fn transport(&self) -> crate::http::TransportOptions {
        crate::http::transport_fields!(read self)
    }

    /// These options with every transport field set from `transport`: the
    /// same settings a chat client uses can serve the classifier beside it.
    ///
    /// ```
    /// use toolnexus::classifier::ClassifierOptions;
    /// use toolnexus::http::TransportOptions;
    ///
    /// let t = TransportOptions { base_url: "http://127.0.0.1:8000/v1".into(), timeout_ms: 900, ..Default::default() };
    /// let opts = ClassifierOptions { model: "jev-1.13".into(), ..Default::default() }.with_transport(t);
    /// assert_eq!((opts.base_url.as_str(), opts.timeout_ms), ("http://127.0.0.1:8000/v1", 900));
    /// assert_eq!(opts.model, "jev-1.13", "other fields are kept");
    /// ```
    pub fn with_transport(mut self, transport: crate::http::TransportOptions) -> ClassifierOptions {
        crate::http::transport_fields!(write self, transport);
        self
    }
}

/// The options with every default applied and checked.
#[derive(Clone)]
pub(crate) struct Resolved {
    pub base_url: String,
    pub model: String,
    pub api_key_env: String,
    pub batch_concurrency: usize,
}

pub(crate) fn resolve(o: &ClassifierOptions) -> Result<Resolved, ClassifierError> {
    let pick = |v: &str, d: &str| {
        if v.trim().is_empty() {
            d.to_string()
        } else {
            v.trim().to_string()
        }
    };
    let base_url = pick(&o.base_url, o.backend.default_base_url())
        .trim_end_matches('/')
        .to_string();
    let model = pick(&o.model, o.backend.default_model());
    let api_key_env = pick(&o.api_key_env, o.backend.default_api_key_env());
    if o.style == ClassifierStyle::SystemOne {
        let host_is_openrouter = base_url
            .split("://")
            .nth(1)
            .and_then(|rest| rest.split(['/', '?', '#']).next())
            .is_some_and(|host| {
                let host = host.rsplit('@').next().unwrap_or(host);
                let host = host.split(':').next().unwrap_or(host);
                host == "openrouter.ai" || host.ends_with(".openrouter.ai")
            });
        if host_is_openrouter && model.starts_with("jev-") {
            // A model left at the TypeSafe preset's default has no OpenRouter
            // twin of the same name: point at the OpenRouter preset instead.
            let suggest = if o.model.trim().is_empty() {
                format!(
                    "set backend: Backend::OpenRouter (model {:?}) or name the model",
                    Backend::OpenRouter.default_model()
                )
            } else {
                format!("use \"typesafe/{model}\"")
            };
            return Err(msg::config(format!(
                "model {model:?} is not an OpenRouter model id: on openrouter.ai {suggest}"
            )));
        }
    }
    // The transport's own defaults (timeouts, retries, size cap) are applied
    // where it is built, from `ClassifierOptions::transport`.
    Ok(Resolved {
        base_url,
        model,
        api_key_env,
        batch_concurrency: if o.batch_concurrency == 0 {
            DEFAULT_BATCH_CONCURRENCY
        } else {
            o.batch_concurrency
        },
    })
}
