//! A System One server: any classifier stack behind the official System One
//! wire, so the official SDKs (base URL = the API root, `http://ADDR`) and the
//! library's SystemOne style (base URL `http://ADDR/v1`) can use it unchanged.
//! `toolnexus serve` is this server; its flags are [`ServeConfig`]'s fields,
//! and the server's messages name them as the flags.
//!
//! - `POST /v1/systemone` takes `{"model","questions","state","assets",…}` as
//!   JSON, or as `multipart/form-data` (a `request` part holding the JSON, whose
//!   assets name image parts), optionally `Content-Encoding: zstd` or `gzip`,
//!   and answers with the decision's wire JSON. The System One style forwards
//!   the model, the assets and every extra field; other styles refuse what they
//!   cannot honour with a 422 naming it.
//! - `GET /v1/models` answers `{"models":[{"name","description","release_date"}]}`;
//!   `release_date` is the date (UTC) this server started.
//! - Every response carries `x-typesafe-request-id` (`req_` + 24 hex digits,
//!   unique per request), and one access-log line goes to the [`Log`] per request.
//! - Errors: a body that is not JSON (or not valid zstd/gzip, or broken
//!   multipart) is 400 `{"detail":{"message","error_type"}}`; a schema error
//!   is 422 with the API's list `{"detail":[{"loc","msg","type"}]}`; 401 without
//!   the key `--require-key-env` names; 404 for unknown paths and replay
//!   misses; 413 for a body over `--max-body-bytes` before or after
//!   decompression; 415 for another `Content-Encoding`. An HTTP error of the
//!   backend behind passes through with its status and cause (with
//!   `Retry-After` when it gave one); its timeouts are 504, and its transport,
//!   decode and coherence failures 502.
//! - serve does not retry the backend behind it unless `--retries N` says so:
//!   the SDK in front retries already.
//! - Each answer's `usage` says what the call cost, settled as `batch` settles
//!   it (`--prices`): a cost the backend reported is its own `usage.cost`, left
//!   as sent; otherwise `usage.cost` in US dollars with `usage.cost_source`
//!   (`priced`, with `usage.cost_table` and `usage.cost_checked`; `local`; or
//!   `cache`, 0, for a `--cache` hit). An unknown cost has neither, never 0.
//!   In a forwarded answer these fields are spliced into its `usage` object;
//!   every other byte is the upstream's.
//! - With `--thresholds FILE`, a decision's response also carries
//!   `x-toolnexus-verdicts: key=verdict; …`, every answer read through its
//!   question's bands from the file (the body is unchanged).
//! - With `--fallback-base-url URL` (repeatable), an unavailable System One
//!   endpoint (timeout, transport, 5xx, 529, 429 after retries) passes the
//!   request to the next; 4xx, decode and coherence errors answer as they are.
//! - A request beyond `--max-concurrency` evaluations in flight (default 64)
//!   is shed at once: 529 `overloaded_error` with `Retry-After: 1`, its body
//!   unread. With `--cache FILE`, hits carry `x-toolnexus-cache: hit`.
//! - Every connection is bounded (its `conn` module): `--max-connections`,
//!   `--header-timeout`, `--idle-timeout`; a body that has not arrived within
//!   `--body-timeout` is a 408 and frees its slot. The errors the HTTP layer
//!   answers by itself (a 431 for headers too large, a 400 for a broken head)
//!   carry the same wire error body.
//! - A replay miss is a 404 naming the call only: never the recorded or the
//!   requested state or questions (`--log-misses` puts why it missed in the
//!   server's log). `GET /v1/models` never shows a file path.
//! - With `--metrics` ([`ServeConfig::metrics`]), `GET /metrics` answers the
//!   calls' figures in the Prometheus text format (`toolnexus_requests_total`,
//!   `toolnexus_answers_total`, … as [`toolnexus::metrics`] names them),
//!   behind the same key as every other endpoint.
//! - A request's W3C `traceparent` header is continued: with the
//!   OpenTelemetry export on, the call's span is a child of the caller's
//!   ([`toolnexus::classifier::with_trace_parent`]).
//! - Output never stops the server: what it says goes to the [`Log`] the
//!   caller handed in, and requests are still answered whatever the log does.
//! - When the future given to [`Server::run`] resolves (Ctrl-C or SIGTERM with
//!   [`shutdown_signal`](crate::shutdown_signal)), the server stops accepting,
//!   lets requests in flight finish for at most `--shutdown-grace` (default
//!   10 s), closes what is left, and returns how many it cut.

mod auth;
mod body;
mod config;
mod conn;
mod error;
mod errors;
mod ids;
mod request;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Extension, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use toolnexus::classifier::{Classifier, ClassifierError, ErrorKind, EvalContext, EvalRequest};
use toolnexus::judge::Bands;

use crate::backend::Backend;
use crate::log::Log;
use crate::wire;

use body::BodyError;
use request::{Invalid, Parsed};

pub use config::{ApiKey, ServeConfig, ThresholdsFile};
pub use conn::Stopped;
pub use error::ServeError;

use auth::authorised;
use errors::{
    Hints, body_problem, byte_offset, failure, miss, problem, unprocessable, upstream_id,
};
use ids::{RequestId, RequestIds};

/// The response header every answer carries.
pub const REQUEST_ID_HEADER: &str = "x-typesafe-request-id";

/// With a cache in the stack: `hit` on a decision answered from it.
pub const CACHE_HEADER: &str = "x-toolnexus-cache";

/// With `--thresholds`: each answer read through its question's bands,
/// `key=verdict` joined by `; ` (`yes`/`no`/`uncertain` for a noul, `sure` or
/// `unsure` otherwise).
pub const VERDICTS_HEADER: &str = "x-toolnexus-verdicts";

/// The response header naming top-level request fields the style ignored.
pub const IGNORED_HEADER: &str = "x-toolnexus-ignored";

/// The request id the backend behind answered with, when it sent one.
pub const UPSTREAM_REQUEST_ID_HEADER: &str = "x-upstream-request-id";

/// The model name the official SDKs ask for by default.
pub const SDK_DEFAULT_MODEL: &str = "jev-latest";

/// What every request handler shares.
struct App {
    classifier: Classifier,
    call: String,
    /// The System One style forwards model, assets and extra fields.
    forwards: bool,
    /// `--strict-fields`: top-level fields a style cannot honour are a 422
    /// instead of ignored and named.
    strict_fields: bool,
    /// The System One style with nothing that rewrites its answers (no
    /// calibration, no cascade): a JSON request goes upstream as sent and the
    /// upstream's answer comes back as it arrived.
    as_sent: bool,
    /// `GET /v1/models`: name and description of each model listed.
    models: Vec<(String, String)>,
    /// The date (UTC, YYYY-MM-DD) this server started.
    started_on: String,
    delay: Duration,
    max_body: usize,
    /// The key `--require-key-env` named, read once at start-up.
    key: Option<ApiKey>,
    ids: RequestIds,
    /// `--thresholds`: per-question bands for the verdicts header.
    bands: Option<std::collections::BTreeMap<String, Bands>>,
    /// `--max-concurrency`: a slot per evaluation in flight, and the limit.
    slots: (Arc<tokio::sync::Semaphore>, u32),
    /// `--body-timeout`: the whole body within this time of the head.
    body_timeout: Duration,
    /// `--log-misses`: why a replay missed goes to the log.
    log_misses: bool,
    /// `--thresholds`: the wording each cut was picked on, to warn once per
    /// question a request asks reworded.
    reworded: Option<Reworded>,
    /// `--pinned`: a forwarded request naming a floating alias is a 422
    /// (without it, a warning once per alias).
    pinned: bool,
    /// Where the server's own lines go.
    log: Arc<dyn Log>,
    /// `--metrics`: the figures `GET /metrics` renders.
    metrics: Option<toolnexus::metrics::Metrics>,
}

/// The questions of a thresholds file, and those already said to be reworded.
struct Reworded {
    file: ThresholdsFile,
    warned: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

impl Reworded {
    /// Logs (once per question, as eval and batch say it) which questions of
    /// `asked` were reworded since their cut was picked.
    fn check(&self, asked: &toolnexus::classifier::Questions, log: &dyn Log) {
        let new: toolnexus::classifier::Questions = {
            let mut warned = self.warned.lock().unwrap_or_else(|e| e.into_inner());
            self.file
                .thresholds
                .reworded(asked)
                .into_iter()
                .filter(|k| warned.insert(k.clone()))
                .map(|k| (k.clone(), asked[&k].clone()))
                .collect()
        };
        for key in self.file.thresholds.reworded(&new) {
            log.line(&format!(
                "warning: --thresholds {}: question {key:?} was reworded since its cut was picked; \
                 its bands may no longer hold (pick them again with `toolnexus assess thresholds`)",
                self.file.path.display()
            ));
        }
    }
}

/// The models `GET /v1/models` lists: the one that answers, and for styles
/// other than System One the SDKs' default name as an alias of it.
fn listed_models(backend: &Backend) -> Vec<(String, String)> {
    let model = backend.classifier.model().to_string();
    let what =
        toolnexus_stack::style_summary(&toolnexus_local::Registry::builtin(), &backend.style)
            .unwrap_or("answers on this machine");
    // Never the tape's file: a client has no business knowing paths on the server.
    let served = match backend.style.as_str() {
        "tape" => format!("style tape, call {:?}", backend.call),
        other => format!("style {other}, model {model}"),
    };
    // A calibration may make "uncalibrated" untrue for the questions it covers.
    let what = match backend.has_layer("calibration") {
        true => what.replace(
            "(uncalibrated)",
            "(uncalibrated, but for the questions a --calibration file covers)",
        ),
        false => what.to_string(),
    };
    let mut out = vec![(model.clone(), format!("toolnexus serve, {served}: {what}"))];
    if backend.style != "systemone" && model != SDK_DEFAULT_MODEL {
        out.push((
            SDK_DEFAULT_MODEL.to_string(),
            format!(
                "alias of {model:?} on this toolnexus serve (the name the official SDKs ask for by default)"
            ),
        ));
    }
    out
}

/// A System One server bound to its address, ready to [`run`](Server::run).
pub struct Server {
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
    app: Arc<App>,
    limits: conn::Limits,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.addr)
            .field("call", &self.app.call)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Binds `addr` ([`listen`]) and makes the server that answers there with
    /// `backend` under `config`, saying what it says to `log`.
    pub async fn bind(
        addr: &str,
        backend: Backend,
        config: ServeConfig,
        log: Arc<dyn Log>,
    ) -> Result<Server, ServeError> {
        let listener = listen(addr).await?;
        let local = listener
            .local_addr()
            .map_err(|source| ServeError::LocalAddr {
                addr: addr.to_string(),
                source,
            })?;
        Ok(Server::assemble(listener, local, backend, config, log))
    }

    /// The server on a listener the caller bound (a test's `127.0.0.1:0`).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::sync::Arc;
    /// use toolnexus_server::systemone::{ServeConfig, Server};
    /// use toolnexus_server::{Backend, Stderr};
    /// let stack = toolnexus_stack::build(&toolnexus_stack::StackSpec {
    ///     style: Some("systemone".into()),
    ///     base_url: Some("http://127.0.0.1:9/v1".into()),
    ///     ..Default::default()
    /// })?;
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let server = Server::on(listener, Backend::from_stack(&stack), ServeConfig::default(), Arc::new(Stderr::default()))?;
    /// assert!(server.local_addr().ip().is_loopback());
    /// let stopped = server.run(async {}).await;
    /// assert_eq!(stopped.cut, 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn on(
        listener: tokio::net::TcpListener,
        backend: Backend,
        config: ServeConfig,
        log: Arc<dyn Log>,
    ) -> Result<Server, ServeError> {
        let local = listener
            .local_addr()
            .map_err(|source| ServeError::LocalAddr {
                addr: "the listener".to_string(),
                source,
            })?;
        Ok(Server::assemble(listener, local, backend, config, log))
    }

    fn assemble(
        listener: tokio::net::TcpListener,
        addr: SocketAddr,
        backend: Backend,
        config: ServeConfig,
        log: Arc<dyn Log>,
    ) -> Server {
        let started = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let forwards = backend.style == "systemone";
        let limits = conn::Limits {
            max_connections: config.max_connections.max(1) as usize,
            header_timeout: config.header_timeout,
            idle_timeout: config.idle_timeout,
            shutdown_grace: config.shutdown_grace,
        };
        let max_concurrency = config.max_concurrency.max(1);
        let app = Arc::new(App {
            models: listed_models(&backend),
            as_sent: forwards && !backend.has_layer("calibration") && !backend.has_layer("cascade"),
            // Counted at the stack's outermost classifier, once per call.
            classifier: match &config.metrics {
                Some(m) => backend.classifier.with_metrics(m.metric_fn()),
                None => backend.classifier,
            },
            call: backend.call,
            forwards,
            strict_fields: config.strict_fields,
            started_on: toolnexus::date::ymd(i64::try_from(started).unwrap_or(i64::MAX)),
            delay: config.delay,
            max_body: config.max_body_bytes,
            key: config.key,
            ids: RequestIds::new(),
            bands: config
                .thresholds
                .as_ref()
                .map(|t| t.thresholds.bands.clone()),
            slots: (
                Arc::new(tokio::sync::Semaphore::new(max_concurrency as usize)),
                max_concurrency,
            ),
            body_timeout: config.body_timeout,
            log_misses: config.log_misses,
            reworded: config.thresholds.map(|file| Reworded {
                file,
                warned: Default::default(),
            }),
            pinned: config.pinned,
            log,
            metrics: config.metrics,
        });
        Server {
            listener,
            addr,
            app,
            limits,
        }
    }

    /// The address the server listens on (the port picked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The models `GET /v1/models` lists: name and description.
    pub fn models(&self) -> &[(String, String)] {
        &self.app.models
    }

    /// Serves until `shutdown` resolves, then stops accepting, lets requests
    /// in flight finish for at most `--shutdown-grace` and closes the rest.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Stopped {
        let wire: Arc<dyn conn::Wire> = self.app.clone();
        conn::serve(self.listener, router(self.app), self.limits, wire, shutdown).await
    }
}

/// Binds `addr`: HOST:PORT, the host an IP address or a name; of the
/// addresses a name resolves to, IPv4 loopback is tried first, then IPv6
/// loopback, then the others in the resolver's order.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), toolnexus_server::systemone::ServeError> {
/// let listener = toolnexus_server::systemone::listen("localhost:0").await?;
/// assert!(listener.local_addr().unwrap().ip().is_loopback());
/// # Ok(())
/// # }
/// ```
pub async fn listen(addr: &str) -> Result<tokio::net::TcpListener, ServeError> {
    let has_port = addr
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
    if !has_port {
        return Err(ServeError::NotHostPort {
            addr: addr.to_string(),
        });
    }
    let mut candidates: Vec<SocketAddr> = tokio::net::lookup_host(addr)
        .await
        .map_err(|source| ServeError::Resolve {
            addr: addr.to_string(),
            source,
        })?
        .collect();
    candidates.sort_by_key(|a| match (a.ip().is_loopback(), a.is_ipv4()) {
        (true, true) => 0,
        (true, false) => 1,
        _ => 2,
    });
    let mut last = None;
    for a in &candidates {
        match tokio::net::TcpListener::bind(a).await {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(format!("{a}: {e}")),
        }
    }
    Err(ServeError::Listen {
        addr: addr.to_string(),
        reason: last.unwrap_or_else(|| "the host resolves to no address".into()),
    })
}

/// The HTTP layer's own answers, the refusal beyond the connection cap and
/// the log, in this server's wire.
impl conn::Wire for App {
    fn automatic(&self, status: u16) -> Option<Vec<u8>> {
        let (reason, error_type, message) = match status {
            431 => (
                "Request Header Fields Too Large",
                "request_header_fields_too_large",
                "request headers too large",
            ),
            414 => ("URI Too Long", "uri_too_long", "request URI too long"),
            400 => (
                "Bad Request",
                "invalid_request",
                "malformed HTTP request head",
            ),
            _ => return None,
        };
        let id = self.ids.next();
        self.log
            .line(&format!("serve: {id} - - {status} 0ms ({message})"));
        Some(raw_problem(
            status,
            reason,
            error_type,
            message,
            &[(REQUEST_ID_HEADER, &id)],
        ))
    }

    fn over_capacity(&self, limit: usize) -> Vec<u8> {
        let message = format!(
            "overloaded: {limit} connections open (--max-connections {limit}); retry after 1 s"
        );
        let id = self.ids.next();
        raw_problem(
            529,
            "Site Overloaded",
            "overloaded_error",
            &message,
            &[(REQUEST_ID_HEADER, &id), ("retry-after", "1")],
        )
    }

    fn log(&self, line: &str) {
        self.log.line(line);
    }
}

/// A whole HTTP/1.1 error response with the wire error body, closing the connection.
fn raw_problem(
    status: u16,
    reason: &str,
    error_type: &str,
    message: &str,
    headers: &[(&str, &str)],
) -> Vec<u8> {
    let body = json!({"detail": {"message": message, "error_type": error_type}}).to_string();
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

fn router(app: Arc<App>) -> Router {
    let routes = Router::new()
        .route("/v1/systemone", post(systemone))
        .route("/v1/models", get(models));
    let routes = match app.metrics {
        Some(_) => routes.route("/metrics", get(metrics)),
        None => routes,
    };
    routes
        .fallback(|| async {
            problem(
                StatusCode::NOT_FOUND,
                "not_found",
                "no such endpoint (POST /v1/systemone, GET /v1/models)",
            )
        })
        .method_not_allowed_fallback(|| async {
            problem(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "method not allowed (POST /v1/systemone, GET /v1/models)",
            )
        })
        .layer(middleware::from_fn_with_state(app.clone(), around))
        .with_state(app)
}

/// Around every request: the key check, the request id, the access log line.
async fn around(State(app): State<Arc<App>>, mut req: Request, next: Next) -> Response {
    let id = app.ids.next();
    req.extensions_mut().insert(RequestId(id.clone()));
    let started = Instant::now();
    let method = req.method().clone();
    let path: String = req.uri().path().chars().take(120).collect();
    let mut resp = match &app.key {
        Some(key) if !authorised(key, req.headers()) => problem(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "missing or invalid API key: send Authorization: Bearer <key>",
        ),
        _ => next.run(req).await,
    };
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert(REQUEST_ID_HEADER, v);
    }
    let upstream = resp
        .headers()
        .get(UPSTREAM_REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(|v| format!(" upstream {v}"))
        .unwrap_or_default();
    app.log.line(&format!(
        "serve: {id} {method} {path:?} {} {}ms{upstream}",
        resp.status().as_u16(),
        started.elapsed().as_millis()
    ));
    resp
}

/// `GET /metrics` (`--metrics`): the calls' figures as Prometheus text.
async fn metrics(State(app): State<Arc<App>>) -> Response {
    let text = app.metrics.as_ref().map(|m| m.render()).unwrap_or_default();
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static(toolnexus::metrics::CONTENT_TYPE),
        )],
        text,
    )
        .into_response()
}

async fn models(State(app): State<Arc<App>>) -> Response {
    let models: Vec<Value> = app
        .models
        .iter()
        .map(|(name, description)| {
            json!({"name": name, "description": description, "release_date": app.started_on})
        })
        .collect();
    axum::Json(json!({ "models": models })).into_response()
}

/// Reads, decodes and splits a request body into its JSON and its parts.
async fn request_body(
    app: &App,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Bytes, Vec<body::Part>), Response> {
    let raw = match tokio::time::timeout(app.body_timeout, body::read(body, app.max_body)).await {
        Ok(read) => read.map_err(body_problem)?,
        Err(_) => {
            // The rest of the body is never read: the connection closes.
            let mut resp = problem(
                StatusCode::REQUEST_TIMEOUT,
                "request_timeout",
                format!(
                    "the request body did not arrive within {:?} (--body-timeout)",
                    app.body_timeout
                ),
            );
            resp.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return Err(resp);
        }
    };
    let encoding = match headers.get(header::CONTENT_ENCODING) {
        None => None,
        Some(v) => Some(
            v.to_str()
                .map_err(|_| {
                    body_problem(BodyError::UnsupportedEncoding(
                        "Content-Encoding is not ASCII".into(),
                    ))
                })?
                .to_string(),
        ),
    };
    let decoded = match encoding {
        None => raw,
        Some(enc) => {
            let cap = app.max_body;
            tokio::task::spawn_blocking(move || body::decode(raw, Some(&enc), cap))
                .await
                .map_err(|e| {
                    problem(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "internal",
                        format!("decoding the body failed: {e}"),
                    )
                })?
                .map_err(body_problem)?
        }
    };
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    match body::multipart_boundary(content_type) {
        None => Ok((decoded, Vec::new())),
        Some(Err(m)) => Err(problem(StatusCode::BAD_REQUEST, "invalid_multipart", m)),
        Some(Ok(boundary)) => {
            let parts = body::parse_multipart(&decoded, &boundary)
                .map_err(|m| problem(StatusCode::BAD_REQUEST, "invalid_multipart", m))?;
            let Some(json) = parts
                .iter()
                .find(|p| p.name == request::REQUEST_PART)
                .map(|p| p.data.clone())
            else {
                return Err(unprocessable(&[Invalid {
                    loc: vec![json!("body"), json!(request::REQUEST_PART)],
                    msg: "the multipart body has no \"request\" part holding the JSON request"
                        .into(),
                    kind: "missing",
                }]));
            };
            Ok((json, parts))
        }
    }
}

async fn systemone(
    State(app): State<Arc<App>>,
    Extension(RequestId(id)): Extension<RequestId>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    // Shed before reading the body: an overloaded server does no work for it.
    let (slots, limit) = &app.slots;
    let _slot = match Arc::clone(slots).try_acquire_owned() {
        Ok(slot) => slot,
        Err(_) => {
            let mut resp = problem(
                StatusCode::from_u16(529).expect("529 is a valid status"),
                "overloaded_error",
                format!(
                    "overloaded: {limit} evaluations in flight (--max-concurrency {limit}); retry after 1 s"
                ),
            );
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return resp;
        }
    };
    let (json_bytes, parts) = match request_body(&app, &headers, body).await {
        Ok(b) => b,
        Err(resp) => return resp,
    };
    // Not JSON: the hosted API's (FastAPI's) 422, located by byte offset.
    let request: Value = match serde_json::from_slice(&json_bytes) {
        Ok(v) => v,
        Err(e) => {
            return unprocessable(&[Invalid {
                loc: vec![json!("body"), json!(byte_offset(&json_bytes, &e))],
                msg: format!(
                    "JSON decode error: {}",
                    toolnexus::classifier::json_error(&e)
                ),
                kind: "json_invalid",
            }]);
        }
    };
    // Kept to forward as sent: the caller's order, absent fields, `x_…`
    // fields. A multipart body's JSON points at parts, so it is rebuilt instead.
    let sent = (app.as_sent && parts.is_empty()).then(|| request.clone());
    let mut parsed = match request::parse(request, &parts) {
        Ok(p) => p,
        Err(errors) => return unprocessable(&errors),
    };
    // Fields a style cannot honour are ignored as the hosted API ignores
    // them, but never silently: the header and the log name them.
    let ignored: Vec<String> = match (app.forwards, app.strict_fields) {
        (false, false) => std::mem::take(&mut parsed.extra)
            .into_iter()
            .map(|(k, _)| k)
            .collect(),
        _ => Vec::new(),
    };
    if !ignored.is_empty() {
        app.log.line(&format!(
            "serve: {id} ignored fields: {}",
            ignored.join(", ")
        ));
    }
    drop(parts);
    if let Some(r) = &app.reworded {
        r.check(&parsed.questions, app.log.as_ref());
    }
    let eval = match eval_request(&app, parsed) {
        Ok(r) => match sent {
            Some(body) => r.with_wire(body),
            None => r,
        },
        Err(invalid) => return unprocessable(&[invalid]),
    };
    if !app.delay.is_zero() {
        tokio::time::sleep(app.delay).await;
    }
    let ctx = EvalContext::new().with_call_name(app.call.clone());
    let hints = Hints::of(&eval);
    // A caller's W3C trace context: the call's exported span continues its
    // trace (a child of the caller's span); a malformed header is ignored.
    let parent = headers
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .and_then(toolnexus::classifier::TraceParent::parse);
    let mut resp =
        toolnexus::classifier::with_trace_parent(parent, answer(&app, &id, ctx, eval, &hints))
            .await;
    if !ignored.is_empty()
        && let Ok(v) = HeaderValue::from_str(&ignored.join(", "))
    {
        resp.headers_mut().insert(IGNORED_HEADER, v);
    }
    resp
}

/// The decision's wire form with each answer's extras merged in (a style's
/// numbers beyond the answer types' fields: Laya's `answer_confidence` and
/// `action.act_probability`); the answer's own fields win a clash.
fn with_extensions(done: &toolnexus::classifier::Evaluated) -> serde_json::Value {
    let mut v = done.decision.to_value();
    if let Some(answers) = v.get_mut("answers").and_then(|a| a.as_object_mut()) {
        for (key, extra) in &done.extensions {
            if let Some(answer) = answers.get_mut(key).and_then(|a| a.as_object_mut()) {
                for (name, value) in extra {
                    answer.entry(name.clone()).or_insert_with(|| value.clone());
                }
            }
        }
    }
    v
}

/// A forwarded answer as it arrived, with the cost serve settled added inside
/// its usage and every other byte as it came ([`wire::with_cost_bytes`]).
fn as_sent_with_cost(body: &[u8], settled: &toolnexus::cost::Cost) -> Vec<u8> {
    wire::with_cost_bytes(body, settled)
}

/// The style's answer to one request, as the response.
async fn answer(
    app: &App,
    id: &str,
    ctx: EvalContext,
    eval: EvalRequest,
    hints: &Hints,
) -> Response {
    match app.classifier.evaluate_request(ctx, eval).await {
        Ok(done) => {
            // Forwarded as sent: the upstream's answer in its own order and
            // form (checked already into `done.decision`).
            let mut resp = match &done.wire_body {
                Some(body) => (
                    [(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/json"),
                    )],
                    as_sent_with_cost(body, &done.cost),
                )
                    .into_response(),
                None => {
                    let mut v = with_extensions(&done);
                    wire::with_cost(&mut v, &done.cost);
                    axum::Json(v).into_response()
                }
            };
            upstream_id(&mut resp, done.request_id.as_deref());
            if done.cache_hit {
                resp.headers_mut()
                    .insert(CACHE_HEADER, HeaderValue::from_static("hit"));
            }
            if let Some(bands) = &app.bands {
                let verdicts = wire::verdicts_header(&done.decision, bands);
                if let Ok(v) = HeaderValue::from_str(&verdicts) {
                    resp.headers_mut().insert(VERDICTS_HEADER, v);
                }
            }
            resp
        }
        Err(e) if e.is_miss() => {
            if app.log_misses {
                app.log.line(&format!("serve: {id} miss: {e}"));
            }
            miss(app, &e)
        }
        Err(e) => failure(&e, hints),
    }
}

/// A floating alias as a forwarded request's model: under `--pinned` the
/// refusal's text (the caller gets it as a 422); otherwise a warning through
/// the log, and `None`.
fn floating_model(app: &App, model: &str) -> Option<String> {
    if !toolnexus::pinning::is_floating(model) {
        return None;
    }
    if app.pinned {
        return Some(format!(
            "model {model:?} is a floating alias and this server runs with --pinned; name a pinned model"
        ));
    }
    app.log.warn(&format!(
        "a request asked for {model:?}, a floating alias: the model behind it can change without notice \
         (each decision's \"model\" says which answered); refuse such requests with --pinned"
    ));
    None
}

/// The library request for a parsed one. The System One style gets everything;
/// other styles answer with their own model, so `model` must name one that
/// `GET /v1/models` lists (it is then not passed on), and the library refuses
/// the assets and extra fields they cannot honour.
fn eval_request(app: &App, p: Parsed) -> Result<EvalRequest, Invalid> {
    let Parsed {
        state,
        questions,
        model,
        assets,
        extra,
    } = p;
    let mut req = EvalRequest::new(state, questions)
        .with_assets(assets)
        .with_extra(extra);
    match model {
        Some(m) if app.forwards => {
            if let Some(refusal) = floating_model(app, &m) {
                return Err(Invalid {
                    loc: vec![json!("body"), json!("model")],
                    msg: refusal,
                    kind: "value_error",
                });
            }
            req = req.with_model(m)
        }
        Some(m) if !app.models.iter().any(|(name, _)| *name == m) => {
            let names: Vec<String> = app.models.iter().map(|(n, _)| format!("{n:?}")).collect();
            return Err(Invalid {
                loc: vec![json!("body"), json!("model")],
                msg: format!(
                    "model {m:?} is not served here (GET /v1/models lists {})",
                    names.join(", ")
                ),
                kind: "value_error",
            });
        }
        _ => {}
    }
    Ok(req)
}

#[cfg(test)]
mod tests {
    use super::auth::constant_time_eq;
    use super::errors::retry_after_secs;
    use super::*;

    #[test]
    fn request_ids_are_unique_and_shaped() {
        let ids = RequestIds::new();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let id = ids.next();
            assert_eq!(id.len(), 4 + 24, "{id}");
            assert!(id.starts_with("req_"));
            assert!(id[4..].chars().all(|c| c.is_ascii_hexdigit()));
            assert!(seen.insert(id));
        }
    }

    #[test]
    fn keys_compare_whole() {
        assert!(constant_time_eq(b"sk-123", b"sk-123"));
        assert!(!constant_time_eq(b"sk-12", b"sk-123"));
        assert!(!constant_time_eq(b"sk-1234", b"sk-123"));
        assert!(!constant_time_eq(b"sk-124", b"sk-123"));
        assert!(!constant_time_eq(b"", b"sk-123"));
        let key = ApiKey::new("k");
        let mut h = HeaderMap::new();
        assert!(!authorised(&key, &h));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("bearer k"));
        assert!(authorised(&key, &h));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic k"));
        assert!(!authorised(&key, &h));
    }

    #[test]
    fn retry_after_rounds_up() {
        assert_eq!(retry_after_secs(Duration::from_millis(1500)), 2);
        assert_eq!(retry_after_secs(Duration::from_secs(3)), 3);
        assert_eq!(retry_after_secs(Duration::ZERO), 0);
    }
}
