//! What a System One server is given beside its stack: its settings
//! ([`ServeConfig`]), plain values.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use toolnexus::judge::Thresholds;

/// The key clients must send as `Authorization: Bearer <key>`. Its `Debug`
/// never shows it.
///
/// ```
/// let key = toolnexus_server::systemone::ApiKey::new("sk-local");
/// assert_eq!(format!("{key:?}"), "ApiKey(…)");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(pub(super) Vec<u8>);

impl ApiKey {
    /// A key from its text (surrounding whitespace is not part of it).
    pub fn new(key: impl AsRef<str>) -> ApiKey {
        ApiKey(key.as_ref().trim().as_bytes().to_vec())
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(…)")
    }
}

/// A thresholds file (from `toolnexus assess thresholds`) and where it was read.
#[derive(Debug, Clone)]
pub struct ThresholdsFile {
    /// Where it was read: named when a question was reworded since its cut was picked.
    pub path: PathBuf,
    /// Its per-question bands and the wording each cut was picked on.
    pub thresholds: Thresholds,
}

/// A System One server's settings. Each field is a `toolnexus serve` flag,
/// and the server's messages name it as the flag (`--max-concurrency`); the
/// defaults are the flags' defaults.
///
/// ```
/// use std::time::Duration;
/// use toolnexus_server::systemone::ServeConfig;
/// let config = ServeConfig {
///     max_concurrency: 8,
///     body_timeout: Duration::from_secs(5),
///     ..Default::default()
/// };
/// assert_eq!(config.max_body_bytes, 1024 * 1024);
/// ```
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// `--max-body-bytes`: the largest request body, on the wire and once
    /// decoded (larger: 413).
    pub max_body_bytes: usize,
    /// `--delay-ms`: a wait before each answer (load tests, demos).
    pub delay: Duration,
    /// `--require-key-env`: the key every request must carry (else 401);
    /// `None` serves without authentication.
    pub key: Option<ApiKey>,
    /// `--thresholds`: every decision also gets `x-toolnexus-verdicts`, and a
    /// request asking a question reworded since its cut was picked is logged
    /// once per question.
    pub thresholds: Option<ThresholdsFile>,
    /// `--max-concurrency`: evaluations in flight; beyond it a request is
    /// shed at once with 529 (at least 1).
    pub max_concurrency: u32,
    /// `--max-connections`: connections open; one beyond it is answered 529
    /// and closed (at least 1).
    pub max_connections: u32,
    /// `--header-timeout`: the whole request head within this time of its first byte.
    pub header_timeout: Duration,
    /// `--body-timeout`: the whole body within this time of the head (else 408).
    pub body_timeout: Duration,
    /// `--idle-timeout`: a connection waiting this long for a request is closed.
    pub idle_timeout: Duration,
    /// `--shutdown-grace`: how long requests in flight may finish once stopped.
    pub shutdown_grace: Duration,
    /// `--log-misses`: why a replay missed goes to the log (never to the client).
    pub log_misses: bool,
    /// `--strict-fields`: top-level fields a style cannot honour are a 422
    /// instead of ignored and named.
    pub strict_fields: bool,
    /// `--pinned`: a forwarded request naming a floating alias as its model
    /// is a 422 (without it, a warning through the log).
    pub pinned: bool,
    /// `--metrics`: every call is counted into these figures and `GET
    /// /metrics` answers them as Prometheus text
    /// ([`toolnexus::metrics::Metrics::render`]); `None`: no such endpoint.
    pub metrics: Option<toolnexus::metrics::Metrics>,
}

impl Default for ServeConfig {
    fn default() -> ServeConfig {
        ServeConfig {
            max_body_bytes: 1024 * 1024,
            delay: Duration::ZERO,
            key: None,
            thresholds: None,
            max_concurrency: 64,
            max_connections: 512,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(10),
            log_misses: false,
            strict_fields: false,
            pinned: false,
            metrics: None,
        }
    }
}
