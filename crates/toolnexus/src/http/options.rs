//! [`TransportOptions`]: the connection, retry and size settings a System One
//! classifier and a chat client share, declared once, with the defaults that
//! both apply at construction.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use super::{Auth, HttpClient, TransportConfig};
use crate::defaults::{
    DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_RETRIES, DEFAULT_RETRY_BASE_MS, DEFAULT_RETRY_BUDGET_MS,
    DEFAULT_TIMEOUT_MS,
};
use crate::env::EnvSource;
use crate::error::Scope;
use crate::retry::{Jitter, OnErrorFn};

/// How requests reach a backend: where, with which key and headers, how long
/// an attempt may take, how failures are retried, and how large an answer may
/// be. [`ClassifierOptions`](crate::classifier::ClassifierOptions) and
/// [`ClientOptions`](crate::client::ClientOptions) carry these same fields
/// (their struct literals stay as they are); `transport()` reads them out as
/// one value and `with_transport` sets them all at once, so one set of
/// settings can serve a classifier and the chat client beside it. Both build
/// their HTTP transport from this struct alone.
///
/// Zero and empty fields take the defaults at construction:
///
/// | field | default |
/// |---|---|
/// | `base_url`, `api_key_env` | the classifier's backend preset; a chat client requires `base_url` and sends no key without `api_key_env` |
/// | `timeout_ms` | 10 000 (one attempt) |
/// | `retries` | 0 ⇒ 2; `-1` ⇒ no retries |
/// | `retry_base_ms` | 500 |
/// | `retry_budget_ms` | 30 000 (attempts and waits of one call) |
/// | `max_response_bytes` | 16 MiB |
///
/// `Debug` shows header names only, and the base URL without credentials or
/// query.
///
/// ```
/// use toolnexus::classifier::{ClassifierOptions, create_classifier};
/// use toolnexus::client::{ClientOptions, create_client};
/// use toolnexus::http::TransportOptions;
///
/// let transport = TransportOptions {
///     base_url: "http://127.0.0.1:8000/v1".into(),
///     timeout_ms: 2_000,
///     retries: -1,
///     headers: [("X-Team".to_string(), "${TEAM_TOKEN}".to_string())].into(),
///     ..Default::default()
/// };
/// let judge = create_classifier(
///     ClassifierOptions { model: "jev-1.13".into(), ..Default::default() }
///         .with_transport(transport.clone()),
/// )?;
/// let chat = create_client(
///     ClientOptions { model: "qwen2.5".into(), ..Default::default() }.with_transport(transport),
/// )?;
/// assert_eq!(judge.endpoint(), Some("http://127.0.0.1:8000/v1/systemone"));
/// assert_eq!(chat.endpoint(), "http://127.0.0.1:8000/v1/chat/completions");
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Clone, Default)]
pub struct TransportOptions {
    /// The API root; the style's path (`/systemone`, `/chat/completions`,
    /// `/messages`) is appended.
    pub base_url: String,
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
    /// The connection pool to send through; `None` shares the process-wide one
    /// ([`HttpClient::shared`]).
    pub http: Option<HttpClient>,
    /// A rate limiter every attempt draws on (shareable between classifiers
    /// and chat clients that spend one account's budget).
    pub limiter: Option<crate::limit::Limiter>,
    /// Where `api_key_env` and `${NAME}` header references are read, at each
    /// call: the process environment by default.
    pub env: EnvSource,
}

impl fmt::Debug for TransportOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransportOptions")
            .field("base_url", &crate::redact::redact_url(&self.base_url))
            .field("api_key_env", &self.api_key_env)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("timeout_ms", &self.timeout_ms)
            .field("retries", &self.retries)
            .field("retry_base_ms", &self.retry_base_ms)
            .field("retry_budget_ms", &self.retry_budget_ms)
            .field("retry_jitter", &self.retry_jitter)
            .field("retryable_statuses", &self.retryable_statuses)
            .field("on_error", &self.on_error.is_some())
            .field("max_response_bytes", &self.max_response_bytes)
            .field("http", &self.http)
            .field("limiter", &self.limiter)
            .field("env", &self.env)
            .finish()
    }
}

impl TransportOptions {
    /// The transport's settings with every default applied: the one place a
    /// zero or empty field becomes its default, for classifiers and chat
    /// clients alike. `endpoint` is already resolved from `base_url` (each
    /// caller checks it in its own order), and `api_key_env` is taken as given.
    pub(crate) fn resolve(
        self,
        scope: Scope,
        endpoint: reqwest::Url,
        auth: Auth,
        fixed_headers: Vec<(&'static str, &'static str)>,
    ) -> TransportConfig {
        let nz = |v: u64, d: u64| if v == 0 { d } else { v };
        TransportConfig {
            scope,
            endpoint,
            http: self.http,
            limiter: self.limiter,
            api_key_env: self.api_key_env,
            auth,
            headers: self.headers.into_iter().collect(),
            fixed_headers,
            timeout: Duration::from_millis(nz(self.timeout_ms, DEFAULT_TIMEOUT_MS)),
            retries: match self.retries {
                0 => DEFAULT_RETRIES,
                n if n < 0 => 0,
                n => n.unsigned_abs(),
            },
            retry_base: Duration::from_millis(nz(self.retry_base_ms, DEFAULT_RETRY_BASE_MS)),
            retry_budget: Duration::from_millis(nz(self.retry_budget_ms, DEFAULT_RETRY_BUDGET_MS)),
            jitter: self.retry_jitter,
            env: self.env,
            extra_retryable: self.retryable_statuses,
            on_error: self.on_error,
            max_response_bytes: if self.max_response_bytes == 0 {
                DEFAULT_MAX_RESPONSE_BYTES
            } else {
                self.max_response_bytes
            },
        }
    }
}

/// The transport fields of an options struct that holds every field of
/// [`TransportOptions`] under the same name (`ClassifierOptions`,
/// `ClientOptions`): `transport_fields!(read opts)` is a `TransportOptions` of
/// them, `transport_fields!(write opts, transport)` sets them all. One list of
/// the fields for both structs.
macro_rules! transport_fields {
    (read $opts:expr) => {
        $crate::http::TransportOptions {
            base_url: $opts.base_url.clone(),
            api_key_env: $opts.api_key_env.clone(),
            headers: $opts.headers.clone(),
            timeout_ms: $opts.timeout_ms,
            retries: $opts.retries,
            retry_base_ms: $opts.retry_base_ms,
            retry_budget_ms: $opts.retry_budget_ms,
            retry_jitter: $opts.retry_jitter,
            retryable_statuses: $opts.retryable_statuses.clone(),
            on_error: $opts.on_error.clone(),
            max_response_bytes: $opts.max_response_bytes,
            http: $opts.http.clone(),
            limiter: $opts.limiter.clone(),
            env: $opts.env.clone(),
        }
    };
    (write $opts:expr, $transport:expr) => {{
        let $crate::http::TransportOptions {
            base_url,
            api_key_env,
            headers,
            timeout_ms,
            retries,
            retry_base_ms,
            retry_budget_ms,
            retry_jitter,
            retryable_statuses,
            on_error,
            max_response_bytes,
            http,
            limiter,
            env,
        } = $transport;
        $opts.base_url = base_url;
        $opts.api_key_env = api_key_env;
        $opts.headers = headers;
        $opts.timeout_ms = timeout_ms;
        $opts.retries = retries;
        $opts.retry_base_ms = retry_base_ms;
        $opts.retry_budget_ms = retry_budget_ms;
        $opts.retry_jitter = retry_jitter;
        $opts.retryable_statuses = retryable_statuses;
        $opts.on_error = on_error;
        $opts.max_response_bytes = max_response_bytes;
        $opts.http = http;
        $opts.limiter = limiter;
        $opts.env = env;
    }};
}
pub(crate) use transport_fields;

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint() -> reqwest::Url {
        reqwest::Url::parse("http://127.0.0.1:1/v1/systemone").unwrap()
    }

    #[test]
    fn zero_and_empty_fields_take_the_defaults() {
        let c = TransportOptions::default().resolve(
            Scope::Classifier,
            endpoint(),
            Auth::Bearer,
            Vec::new(),
        );
        assert_eq!(c.timeout, Duration::from_millis(DEFAULT_TIMEOUT_MS));
        assert_eq!(c.retries, DEFAULT_RETRIES);
        assert_eq!(c.retry_base, Duration::from_millis(DEFAULT_RETRY_BASE_MS));
        assert_eq!(
            c.retry_budget,
            Duration::from_millis(DEFAULT_RETRY_BUDGET_MS)
        );
        assert_eq!(c.max_response_bytes, DEFAULT_MAX_RESPONSE_BYTES);
    }

    #[test]
    fn explicit_fields_win_and_minus_one_means_no_retries() {
        let c = TransportOptions {
            timeout_ms: 7,
            retries: -1,
            retry_base_ms: 3,
            retry_budget_ms: 11,
            max_response_bytes: 5,
            retryable_statuses: vec![409],
            headers: [("b".to_string(), "2".to_string()), ("a".into(), "1".into())].into(),
            ..Default::default()
        }
        .resolve(Scope::Client, endpoint(), Auth::Bearer, Vec::new());
        assert_eq!(
            (c.timeout, c.retries, c.retry_base, c.retry_budget),
            (
                Duration::from_millis(7),
                0,
                Duration::from_millis(3),
                Duration::from_millis(11)
            )
        );
        assert_eq!((c.max_response_bytes, c.extra_retryable), (5, vec![409]));
        assert_eq!(
            c.headers,
            [("a".to_string(), "1".to_string()), ("b".into(), "2".into())],
            "headers in name order, as the map held them"
        );
        let five = TransportOptions {
            retries: 5,
            ..Default::default()
        };
        let c = five.resolve(Scope::Client, endpoint(), Auth::Bearer, Vec::new());
        assert_eq!(c.retries, 5);
    }

    #[test]
    fn debug_shows_header_names_and_no_credentials() {
        let t = TransportOptions {
            base_url: "https://user:pw@llm.internal/v1?token=x".into(),
            headers: [("X-Team".to_string(), "${TEAM_TOKEN}".to_string())].into(),
            ..Default::default()
        };
        let shown = format!("{t:?}");
        assert!(shown.contains("X-Team"), "{shown}");
        for secret in ["TEAM_TOKEN", "pw", "token=x"] {
            assert!(!shown.contains(secret), "{secret}: {shown}");
        }
    }
}
