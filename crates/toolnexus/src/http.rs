//! The one HTTP transport of the crate, and [`HttpClient`], the connection pool
//! it sends through.
//!
//! Every System One classifier and every chat [`Client`](crate::client::Client)
//! sends a JSON POST with per-attempt timeouts, classified retries with backoff
//! and `Retry-After`, cancellation, a response size cap, `${ENV}` header
//! expansion and secret scrubbing, through an [`HttpClient`]: the one you hand
//! them, or one process-wide pool created on first use. This is the only module
//! that names `reqwest`, and it exists only with the `http` feature (on by
//! default).

use std::fmt;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio_util::sync::CancellationToken;

use crate::error::{ClassifierError, Scope, msg};
pub(crate) use crate::redact::redact_url;
use crate::retry::{
    ErrorInfo, ErrorTier, Jitter, JitterSource, OnErrorFn, backoff, classify, retry_after_from,
};

mod options;

pub use options::TransportOptions;
pub(crate) use options::transport_fields;

/// The most of an error body that is read to find the backend's cause.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// The most characters of a backend's cause kept in an error message.
const MAX_CAUSE_CHARS: usize = 200;

/// How the API key is presented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Auth {
    /// `Authorization: Bearer <key>`.
    Bearer,
    /// `<name>: <key>` (Anthropic's `x-api-key`).
    Header(&'static str),
}

/// A shareable HTTP connection pool: clone it into any number of classifiers
/// and chat clients (`ClassifierOptions::http`, `ClientOptions::http`) and they
/// reuse each other's connections. Cheap to clone; opaque.
///
/// Nothing reads the environment: no proxy is used unless one is named with
/// [`HttpClientBuilder::proxy`], or [`HttpClientBuilder::proxy_from_env`] asks
/// for `HTTP(S)_PROXY`/`NO_PROXY`. Left unset, classifiers and clients share one
/// process-wide pool built with the defaults on first use.
///
/// ```
/// use std::time::Duration;
/// use toolnexus::classifier::{ClassifierOptions, create_classifier};
/// use toolnexus::http::HttpClient;
///
/// let pool = HttpClient::builder()
///     .connect_timeout(Duration::from_secs(3))
///     .pool_idle_timeout(Duration::from_secs(30))
///     .build()?;
/// let a = create_classifier(ClassifierOptions { http: Some(pool.clone()), ..Default::default() })?;
/// let b = create_classifier(ClassifierOptions { http: Some(pool), model: "jev-1.13".into(), ..Default::default() })?;
/// # let _ = (a, b);
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Clone)]
pub struct HttpClient {
    inner: reqwest::Client,
    /// Shown by `Debug` instead of the proxy URL, which may hold credentials.
    proxied: bool,
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient")
            .field("proxied", &self.proxied)
            .finish_non_exhaustive()
    }
}

impl HttpClient {
    /// A new pool with the defaults (no proxy, the platform's Mozilla roots
    /// bundled by rustls, no connect timeout beyond the attempt's own).
    ///
    /// ```
    /// let pool = toolnexus::http::HttpClient::new()?;
    /// assert!(format!("{pool:?}").starts_with("HttpClient"));
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn new() -> Result<HttpClient, crate::error::ClassifierError> {
        HttpClient::builder().build()
    }

    /// A builder for a pool with a proxy, extra roots or other timeouts.
    ///
    /// ```
    /// let b = toolnexus::http::HttpClient::builder().pool_max_idle_per_host(4);
    /// # let _ = b;
    /// ```
    pub fn builder() -> HttpClientBuilder {
        HttpClientBuilder::default()
    }

    /// The process-wide pool every classifier and client without an
    /// [`HttpClient`] of its own shares, created on first use.
    ///
    /// ```
    /// let a = toolnexus::http::HttpClient::shared()?;
    /// let b = toolnexus::http::HttpClient::shared()?;
    /// # let _ = (a, b);
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn shared() -> Result<HttpClient, crate::error::ClassifierError> {
        static SHARED: OnceLock<HttpClient> = OnceLock::new();
        if let Some(c) = SHARED.get() {
            return Ok(c.clone());
        }
        let built = HttpClient::new()?;
        Ok(SHARED.get_or_init(|| built).clone())
    }
}

/// Builds an [`HttpClient`]. Every setting is optional.
///
/// ```
/// use std::time::Duration;
/// use toolnexus::http::HttpClient;
///
/// let pool = HttpClient::builder()
///     .proxy("http://proxy.internal:3128")
///     .connect_timeout(Duration::from_secs(2))
///     .build()?;
/// assert!(format!("{pool:?}").contains("proxied: true"));
/// let e = HttpClient::builder().proxy("not a url").build().unwrap_err();
/// assert!(e.to_string().starts_with("classifier: http client: proxy \"not a url\""), "{e}");
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Clone, Default)]
pub struct HttpClientBuilder {
    proxy: Option<String>,
    env_proxies: bool,
    platform_roots: bool,
    roots: Vec<Vec<u8>>,
    connect_timeout: Option<Duration>,
    pool_idle_timeout: Option<Duration>,
    pool_max_idle_per_host: Option<usize>,
}

impl fmt::Debug for HttpClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClientBuilder")
            .field("proxy", &self.proxy.as_deref().map(redact_url))
            .field("env_proxies", &self.env_proxies)
            .field("platform_roots", &self.platform_roots)
            .field("roots", &self.roots.len())
            .field("connect_timeout", &self.connect_timeout)
            .field("pool_idle_timeout", &self.pool_idle_timeout)
            .field("pool_max_idle_per_host", &self.pool_max_idle_per_host)
            .finish()
    }
}

impl HttpClientBuilder {
    /// Sends every request through this proxy (`http://`, `https://` or
    /// `socks5://` if reqwest supports it in this build).
    pub fn proxy(mut self, url: impl Into<String>) -> Self {
        self.proxy = Some(url.into());
        self
    }

    /// Reads `HTTP_PROXY`, `HTTPS_PROXY` and `NO_PROXY` from the environment
    /// when the pool is built. Off unless asked for.
    pub fn proxy_from_env(mut self) -> Self {
        self.env_proxies = true;
        self
    }

    /// Also trusts the platform's certificate store when the pool is built:
    /// the files `SSL_CERT_FILE` and `SSL_CERT_DIR` name when either is set,
    /// else the system's CA bundle (on Linux the distribution's, as OpenSSL
    /// finds it; the keychain on macOS; the Windows store). A company's
    /// TLS-inspecting proxy is usually trusted there. Off unless asked for:
    /// the bundled Mozilla roots are always trusted.
    ///
    /// ```
    /// let pool = toolnexus::http::HttpClient::builder().platform_roots().build()?;
    /// # let _ = pool;
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn platform_roots(mut self) -> Self {
        self.platform_roots = true;
        self
    }

    /// Trusts more root certificates (PEM: one, or a bundle of several), on
    /// top of the bundled roots.
    pub fn add_root_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.roots.push(pem.into());
        self
    }

    /// Bounds the TCP (and TLS) connect; the attempt's `timeout_ms` still
    /// bounds the whole request.
    pub fn connect_timeout(mut self, d: Duration) -> Self {
        self.connect_timeout = Some(d);
        self
    }

    /// How long an idle connection is kept for reuse.
    pub fn pool_idle_timeout(mut self, d: Duration) -> Self {
        self.pool_idle_timeout = Some(d);
        self
    }

    /// The most idle connections kept per host.
    pub fn pool_max_idle_per_host(mut self, n: usize) -> Self {
        self.pool_max_idle_per_host = Some(n);
        self
    }

    /// Builds the pool. A proxy that is not a URL or a root that is not PEM is
    /// a `classifier: http client: …` configuration error.
    pub fn build(self) -> Result<HttpClient, crate::error::ClassifierError> {
        let mut b = reqwest::Client::builder()
            .use_rustls_tls()
            .tls_built_in_native_certs(self.platform_roots)
            .user_agent(concat!("toolnexus/", env!("CARGO_PKG_VERSION")));
        if !self.env_proxies {
            b = b.no_proxy();
        }
        let proxied = self.proxy.is_some() || self.env_proxies;
        if let Some(p) = &self.proxy {
            let proxy = reqwest::Proxy::all(p.as_str()).map_err(|e| {
                msg::http_client_setting(format!(
                    "proxy {:?} is not a valid URL: {e}",
                    redact_url(p)
                ))
            })?;
            b = b.proxy(proxy);
        }
        for (i, pem) in self.roots.iter().enumerate() {
            let certs = reqwest::Certificate::from_pem_bundle(pem)
                .ok()
                .filter(|c| !c.is_empty())
                .ok_or_else(|| {
                    msg::http_client_setting(format!("root certificate {} is not PEM", i + 1))
                })?;
            for cert in certs {
                b = b.add_root_certificate(cert);
            }
        }
        if let Some(d) = self.connect_timeout {
            b = b.connect_timeout(d);
        }
        if let Some(d) = self.pool_idle_timeout {
            b = b.pool_idle_timeout(d);
        }
        if let Some(n) = self.pool_max_idle_per_host {
            b = b.pool_max_idle_per_host(n);
        }
        let inner = b
            .build()
            .map_err(|e| msg::http_client(Scope::Classifier).with_source(e))?;
        Ok(HttpClient { inner, proxied })
    }
}

/// `base_url` + `/path`, parsed once: the query (Azure's `?api-version=…`)
/// stays after the path, a trailing `/` is not doubled, and only `http(s)`
/// is accepted. The one resolution System One and the chat client share.
pub(crate) fn endpoint_url(
    scope: Scope,
    base_url: &str,
    path: &str,
) -> Result<reqwest::Url, ClassifierError> {
    let raw = base_url.trim();
    let shown = redact_url(raw);
    let mut url = reqwest::Url::parse(raw).map_err(|e| msg::bad_endpoint(scope, &shown, e))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(msg::not_http(scope, &shown));
    }
    let joined = format!(
        "{}/{}",
        url.path().trim_end_matches('/'),
        path.trim_start_matches('/')
    );
    url.set_path(&joined);
    Ok(url)
}

/// Everything the transport needs, resolved.
pub(crate) struct TransportConfig {
    /// Whose messages: `classifier: …` or `client: …`.
    pub scope: Scope,
    pub endpoint: reqwest::Url,
    /// The pool to send through; `None` is the process-wide one.
    pub http: Option<HttpClient>,
    /// Every attempt takes a permit first and reports how it went.
    pub limiter: Option<crate::limit::Limiter>,
    pub api_key_env: String,
    pub auth: Auth,
    /// User headers; values may hold `${ENV}` references expanded per call.
    pub headers: Vec<(String, String)>,
    /// Fixed headers that are not secret (e.g. `anthropic-version`).
    pub fixed_headers: Vec<(&'static str, &'static str)>,
    pub timeout: Duration,
    pub retries: u32,
    pub retry_base: Duration,
    /// The most a call may spend on attempts and waits before a retry is
    /// given up: a retry whose wait would reach it is not made.
    pub retry_budget: Duration,
    pub jitter: Jitter,
    /// Where the key and `${NAME}` references are read, per call.
    pub env: crate::env::EnvSource,
    pub extra_retryable: Vec<u16>,
    pub on_error: Option<OnErrorFn>,
    pub max_response_bytes: usize,
}

/// A configured JSON POST endpoint. Cheap to share behind an `Arc`.
pub(crate) struct Transport {
    client: reqwest::Client,
    url: reqwest::Url,
    shown: String,
    cfg: TransportConfig,
    header_names: Vec<HeaderName>,
    jitter: JitterSource,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("endpoint", &self.shown)
            .field("api_key_env", &self.cfg.api_key_env)
            .field("headers", &self.header_names)
            .finish_non_exhaustive()
    }
}

/// What one successful POST returned.
pub(crate) struct Response {
    pub body: Bytes,
    /// The backend's `x-typesafe-request-id`, when it sent one.
    pub request_id: Option<String>,
    /// The tokens the limiter charged for it (request bytes / 4), to settle
    /// against the backend's count.
    pub estimated_tokens: u64,
}

impl Transport {
    pub(crate) fn new(cfg: TransportConfig) -> Result<Transport, ClassifierError> {
        let shown = redact_url(cfg.endpoint.as_str());
        let cfg_jitter = cfg.jitter;
        let url = cfg.endpoint.clone();
        let mut header_names = Vec::with_capacity(cfg.headers.len());
        for (name, _) in &cfg.headers {
            let n = HeaderName::from_bytes(name.trim().as_bytes())
                .map_err(|_| msg::bad_header_name(cfg.scope, name))?;
            header_names.push(n);
        }
        // Proxies only when the pool was built to use them: the environment is
        // never read here.
        let client = match &cfg.http {
            Some(c) => c.inner.clone(),
            None => HttpClient::shared()?.inner,
        };
        Ok(Transport {
            client,
            url,
            shown,
            cfg,
            header_names,
            jitter: JitterSource::new(cfg_jitter),
        })
    }

    /// The limiter attempts draw on, if any.
    pub(crate) fn limiter(&self) -> Option<&crate::limit::Limiter> {
        self.cfg.limiter.as_ref()
    }

    /// The endpoint as it may be shown: no credentials, no query.
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// `text` with the secrets of a call made now (the API key and every
    /// expanded header value) replaced by `[redacted]`. For text built from what
    /// a backend sent on a 2xx answer, which may echo them anywhere.
    pub(crate) fn scrub(&self, text: &str) -> String {
        Secrets::collect(&self.cfg).scrub(text)
    }

    /// POSTs `body` as JSON, retrying as configured. Dropping the future aborts the
    /// request in flight; cancelling `cancel` returns `context canceled` promptly,
    /// also during a backoff sleep.
    pub(crate) async fn post_json(
        &self,
        cancel: &CancellationToken,
        body: Bytes,
    ) -> Result<Response, ClassifierError> {
        let mut attempt: u32 = 0;
        let call_started = tokio::time::Instant::now();
        loop {
            if cancel.is_cancelled() {
                return Err(self.cancelled());
            }
            // The limiter's wait is not part of the attempt's timeout.
            let estimated_tokens = (body.len() / 4) as u64;
            let permit = match &self.cfg.limiter {
                Some(l) => match l.acquire(estimated_tokens, cancel).await {
                    Some(p) => Some(p),
                    None => return Err(self.cancelled()),
                },
                None => None,
            };
            let secrets = Secrets::collect(&self.cfg);
            let started = Instant::now();
            let outcome = cancel
                .run_until_cancelled(tokio::time::timeout(
                    self.cfg.timeout,
                    self.attempt(body.clone(), &secrets, attempt),
                ))
                .await;
            let err = match outcome {
                None => return Err(self.cancelled()),
                Some(Ok(Ok(mut resp))) => {
                    if let Some(p) = permit {
                        p.finish(crate::limit::Outcome::Success);
                    }
                    resp.estimated_tokens = estimated_tokens;
                    return Ok(resp);
                }
                Some(Ok(Err(e))) => e,
                Some(Err(_elapsed)) => {
                    msg::timeout(self.cfg.scope, Some(&self.shown), self.cfg.timeout)
                }
            };
            if let Some(p) = permit {
                p.finish(match err.status() {
                    Some(429 | 529) => crate::limit::Outcome::Throttled {
                        retry_after: err.retry_after(),
                    },
                    _ => crate::limit::Outcome::Failed,
                });
            }
            let retryable = classify(&err, &self.cfg.extra_retryable);
            let delay = backoff(
                self.cfg.retry_base,
                attempt,
                err.retry_after(),
                &self.jitter,
            );
            let tier = match &self.cfg.on_error {
                Some(f) => f(&ErrorInfo {
                    attempt,
                    error: &err,
                    retryable,
                    delay,
                }),
                None if retryable => ErrorTier::Retry,
                None => ErrorTier::Fail,
            };
            tracing::debug!(
                target: "toolnexus::http",
                endpoint = %self.shown,
                attempt,
                elapsed_ms = started.elapsed().as_millis() as u64,
                retry = (tier == ErrorTier::Retry && attempt < self.cfg.retries),
                error = %err,
                "attempt failed"
            );
            if tier == ErrorTier::Fail || attempt >= self.cfg.retries {
                return Err(err);
            }
            if call_started.elapsed() + delay >= self.cfg.retry_budget {
                tracing::debug!(
                    target: "toolnexus::http",
                    endpoint = %self.shown,
                    attempt,
                    budget_ms = self.cfg.retry_budget.as_millis() as u64,
                    "retry budget spent; not retrying"
                );
                return Err(err);
            }
            if cancel
                .run_until_cancelled(tokio::time::sleep(delay))
                .await
                .is_none()
            {
                return Err(self.cancelled());
            }
            attempt += 1;
        }
    }

    fn cancelled(&self) -> ClassifierError {
        msg::scoped_cancelled(self.cfg.scope)
    }

    async fn attempt(
        &self,
        body: Bytes,
        secrets: &Secrets,
        attempt: u32,
    ) -> Result<Response, ClassifierError> {
        let headers = self.headers(secrets, attempt)?;
        let resp = self
            .client
            .post(self.url.clone())
            .headers(headers)
            .body(body)
            .send()
            .await
            .map_err(|e| self.transport_error(e, secrets))?;
        let status = resp.status().as_u16();
        let request_id = resp
            .headers()
            .get("x-typesafe-request-id")
            .and_then(|v| v.to_str().ok())
            .map(|v| secrets.scrub(v.trim()))
            .filter(|v| !v.is_empty());
        if (200..300).contains(&status) {
            let body = self
                .read_capped(resp, self.cfg.max_response_bytes, secrets)
                .await
                .map_err(|e| e.with_request_id_opt(request_id.clone()))?;
            return Ok(Response {
                body,
                request_id,
                estimated_tokens: 0,
            });
        }
        let header = |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok());
        let retry_after = retry_after_from(
            header("retry-after-ms"),
            header("retry-after"),
            std::time::SystemTime::now(),
        );
        let reason = resp
            .status()
            .canonical_reason()
            .unwrap_or("error")
            .to_ascii_lowercase();
        let mut error_type = None;
        let cause = if status == 401 || status == 403 {
            // The body of an auth failure may echo the credential: never shown.
            format!("{reason} (response body not shown)")
        } else {
            match self.read_capped(resp, MAX_ERROR_BODY, secrets).await {
                Ok(b) => {
                    error_type = backend_error_type(&b);
                    let c = backend_cause(&b);
                    if c.is_empty() {
                        reason
                    } else {
                        secrets.scrub(&c)
                    }
                }
                Err(_) => reason,
            }
        };
        Err(msg::http(self.cfg.scope, Some(&self.shown), status, cause)
            .with_status(status, retry_after)
            .with_request_id_opt(request_id)
            .with_error_type(error_type))
    }

    fn headers(&self, secrets: &Secrets, attempt: u32) -> Result<HeaderMap, ClassifierError> {
        let mut h = HeaderMap::with_capacity(6 + self.cfg.headers.len());
        h.insert(
            HeaderName::from_static("x-typesafe-sdk"),
            HeaderValue::from_static(concat!("toolnexus/", env!("CARGO_PKG_VERSION"))),
        );
        if attempt > 0 {
            h.insert(
                HeaderName::from_static("x-typesafe-retry-count"),
                HeaderValue::from(attempt),
            );
        }
        h.insert(
            reqwest::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        h.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("application/json"),
        );
        for (name, value) in &self.cfg.fixed_headers {
            h.insert(*name, HeaderValue::from_static(value));
        }
        if let Some(key) = &secrets.api_key {
            let (name, value) = match self.cfg.auth {
                Auth::Bearer => (reqwest::header::AUTHORIZATION, format!("Bearer {key}")),
                Auth::Header(n) => (HeaderName::from_static(n), key.clone()),
            };
            let mut v = HeaderValue::from_str(&value)
                .map_err(|_| msg::bad_key_value(self.cfg.scope, &self.cfg.api_key_env))?;
            v.set_sensitive(true);
            h.insert(name, v);
        }
        for (name, value) in self.header_names.iter().zip(&secrets.header_values) {
            let mut v = HeaderValue::from_str(value)
                .map_err(|_| msg::bad_header_value(self.cfg.scope, name.as_str()))?;
            v.set_sensitive(true);
            h.insert(name.clone(), v);
        }
        Ok(h)
    }

    async fn read_capped(
        &self,
        mut resp: reqwest::Response,
        cap: usize,
        secrets: &Secrets,
    ) -> Result<Bytes, ClassifierError> {
        let too_large = || msg::too_large(self.cfg.scope, Some(&self.shown), cap);
        if resp.content_length().is_some_and(|n| n > cap as u64) {
            return Err(too_large());
        }
        let mut first: Option<Bytes> = None;
        let mut buf: Vec<u8> = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| self.transport_error(e, secrets))?
        {
            let have = first.as_ref().map_or(buf.len(), |f| f.len());
            if have + chunk.len() > cap {
                return Err(too_large());
            }
            match first.take() {
                None if buf.is_empty() => first = Some(chunk),
                None => buf.extend_from_slice(&chunk),
                Some(f) => {
                    buf.reserve(f.len() + chunk.len());
                    buf.extend_from_slice(&f);
                    buf.extend_from_slice(&chunk);
                }
            }
        }
        Ok(first.unwrap_or_else(|| Bytes::from(buf)))
    }

    fn transport_error(&self, e: reqwest::Error, secrets: &Secrets) -> ClassifierError {
        let what = if e.is_connect() {
            "connection failed"
        } else if e.is_body() || e.is_decode() {
            "response body broken"
        } else if e.is_redirect() {
            "too many redirects"
        } else {
            "request failed"
        };
        // The chain below reqwest's own error holds no URL; reqwest's own Display does.
        let mut causes = Vec::new();
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            let text = s.to_string();
            if !causes.contains(&text) {
                causes.push(text);
            }
            src = s.source();
        }
        let detail = if causes.is_empty() {
            String::new()
        } else {
            format!(": {}", secrets.scrub(&causes.join(": ")))
        };
        msg::transport(self.cfg.scope, &self.shown, format!("{what}{detail}"))
            .with_source(e.without_url())
    }
}

/// The secret values of one call: the API key and every expanded header value.
/// They exist only for the call and are scrubbed from any text the backend sends back.
struct Secrets {
    api_key: Option<String>,
    header_values: Vec<String>,
}

impl Secrets {
    fn collect(cfg: &TransportConfig) -> Secrets {
        let api_key = cfg
            .env
            .get(&cfg.api_key_env)
            .map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty());
        let header_values = cfg.headers.iter().map(|(_, v)| cfg.env.expand(v)).collect();
        Secrets {
            api_key,
            header_values,
        }
    }

    fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in self.api_key.iter().chain(&self.header_values) {
            if s.len() >= 4 && out.contains(s.as_str()) {
                out = out.replace(s.as_str(), "[redacted]");
            }
        }
        out
    }
}

/// The backend's own words from an error body, read as the official clients
/// read it: `error` (a string), `error.message`, `message`, `detail` (a string),
/// `detail.message`, or the `detail` validation list (`loc: msg` entries joined
/// by `; `, a leading `body` dropped from each `loc`); else the text itself.
/// Whitespace folded, cut at 200 characters.
pub(crate) fn backend_cause(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let from_json = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| json_cause(&v));
    let raw = from_json.unwrap_or_else(|| text.into_owned());
    let folded: String = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    match folded.char_indices().nth(MAX_CAUSE_CHARS) {
        Some((i, _)) => format!("{}…", &folded[..i]),
        None => folded,
    }
}

/// The error type an API error body names: `detail.error_type` (System One),
/// else `error.type`; only a plain word of at most 64 characters
/// (`[A-Za-z0-9_.-]`), so nothing a backend echoes can ride along.
pub(crate) fn backend_error_type(body: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let t = v
        .pointer("/detail/error_type")
        .or_else(|| v.pointer("/error/type"))?
        .as_str()?;
    let plain = !t.is_empty()
        && t.len() <= 64
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    plain.then(|| t.to_string())
}

fn json_cause(v: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    let o = v.as_object()?;
    fn text(x: Option<&Value>) -> Option<&str> {
        x.and_then(Value::as_str).filter(|s| !s.is_empty())
    }
    fn nested(x: Option<&Value>) -> Option<&str> {
        text(x.and_then(|e| e.get("message")))
    }
    if let Some(s) = text(o.get("error")).or_else(|| nested(o.get("error"))) {
        return Some(s.to_string());
    }
    if let Some(s) = text(o.get("message"))
        .or_else(|| text(o.get("detail")))
        .or_else(|| nested(o.get("detail")))
    {
        return Some(s.to_string());
    }
    let list = o.get("detail")?.as_array()?;
    let parts: Vec<String> = list
        .iter()
        .filter_map(|entry| {
            let msg = entry.get("msg")?.as_str()?;
            let path: Vec<String> = entry
                .get("loc")
                .and_then(Value::as_array)
                .map(|loc| {
                    loc.iter()
                        .filter(|p| p.as_str() != Some("body"))
                        .map(|p| match p {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            Some(if path.is_empty() {
                msg.to_string()
            } else {
                format!("{}: {msg}", path.join("."))
            })
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_that_are_not_pem_are_named_and_the_platform_store_loads() {
        let e = HttpClient::builder()
            .add_root_pem(b"-----BEGIN NOTHING-----".to_vec())
            .build()
            .unwrap_err();
        assert!(
            e.to_string().contains("root certificate 1 is not PEM"),
            "{e}"
        );
        let pool = HttpClient::builder().platform_roots().build().unwrap();
        assert!(format!("{pool:?}").starts_with("HttpClient"));
    }

    #[test]
    fn urls_lose_credentials_and_queries() {
        assert_eq!(
            redact_url("https://user:pw@api.example.com:8443/v1/systemone?key=s3cret#x"),
            "https://api.example.com:8443/v1/systemone"
        );
        assert_eq!(redact_url("http://127.0.0.1:9/v1"), "http://127.0.0.1:9/v1");
    }

    #[test]
    fn causes_prefer_the_json_message_and_are_cut() {
        assert_eq!(
            backend_cause(br#"{"detail":{"message":"model overloaded","error_type":"x"}}"#),
            "model overloaded"
        );
        assert_eq!(
            backend_cause(br#"{"error":{"message":"bad key"}}"#),
            "bad key"
        );
        assert_eq!(backend_cause(b"  upstream\n  down "), "upstream down");
        assert_eq!(
            backend_cause(br#"{"error":"rate limited"}"#),
            "rate limited"
        );
        assert_eq!(
            backend_cause(br#"{"message":"no such model"}"#),
            "no such model"
        );
        assert_eq!(backend_cause(br#"{"detail":"Not Found"}"#), "Not Found");
        assert_eq!(
            backend_cause(
                br#"{"detail":[{"loc":["body","questions","x","criteria"],"msg":"Field required","type":"missing"},
                    {"loc":["body","state"],"msg":"Field required","type":"missing"},{"loc":["body"]},
                    {"loc":["body",0],"msg":"bad"}]}"#
            ),
            "questions.x.criteria: Field required; state: Field required; 0: bad"
        );
        assert_eq!(backend_cause(br#"{"detail":[]}"#), r#"{"detail":[]}"#);
        let long = "é".repeat(500);
        let c = backend_cause(long.as_bytes());
        assert_eq!(c.chars().count(), MAX_CAUSE_CHARS + 1);
    }
}
