//! `toolnexus serve`: any style behind the official System One wire, so the
//! official SDKs (base URL = the API root, `http://ADDR`) and the library's
//! SystemOne style (base URL `http://ADDR/v1`) can use it unchanged.
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
//!   unique per request), and one access-log line goes to stderr per request.
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
//! - Every connection is bounded (see [`conn`]): `--max-connections`,
//!   `--header-timeout`, `--idle-timeout`; a body that has not arrived within
//!   `--body-timeout` is a 408 and frees its slot. The errors the HTTP layer
//!   answers by itself (a 431 for headers too large, a 400 for a broken head)
//!   carry the same wire error body.
//! - A replay miss is a 404 naming the call only: never the recorded or the
//!   requested state or questions (`--log-misses` puts why it missed in the
//!   server's log). `GET /v1/models` never shows a file path.
//! - Output never stops the server: a closed stdout or stderr (the access log,
//!   the start-up lines) is ignored and requests are still answered.
//! - Ctrl-C or SIGTERM stops accepting, lets requests in flight finish for at
//!   most `--shutdown-grace` (default 10 s), closes what is left, and exits 0.

mod auth;
mod body;
mod conn;
mod errors;
mod ids;
mod request;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Result;
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

use crate::args::{ServeArgs, StyleName};
use crate::exit::{self, Exit};
use crate::style::{self, Fallback};

use body::BodyError;
use request::{Invalid, Parsed};

use auth::{authorised, required_key};
use errors::{
    Hints, body_problem, byte_offset, failure, miss, problem, unprocessable, upstream_id,
};
use ids::{RequestId, RequestIds};

/// The response header every answer carries.
pub const REQUEST_ID_HEADER: &str = "x-typesafe-request-id";

/// With `--cache`: `hit` on a decision answered from the cache.
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
    /// `--calibration`, no `--cascade`): a JSON request goes upstream as sent
    /// and the upstream's answer comes back as it arrived.
    as_sent: bool,
    /// `GET /v1/models`: name and description of each model listed.
    models: Vec<(String, String)>,
    /// The date (UTC, YYYY-MM-DD) this server started.
    started_on: String,
    delay: Duration,
    max_body: usize,
    /// The key `--require-key-env` named, read once at start-up.
    key: Option<Vec<u8>>,
    ids: RequestIds,
    /// `--thresholds`: per-question bands for the verdicts header.
    bands: Option<BTreeMap<String, Bands>>,
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
    pin: crate::args::PinArgs,
}

/// The questions of a thresholds file, and those already said to be reworded.
struct Reworded {
    path: std::path::PathBuf,
    thresholds: toolnexus::judge::Thresholds,
    warned: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

impl Reworded {
    /// Says on stderr (once per question, as eval and batch say it) which
    /// questions of `asked` were reworded since their cut was picked.
    fn check(&self, asked: &toolnexus::classifier::Questions) {
        let new: toolnexus::classifier::Questions = {
            let mut warned = self.warned.lock().unwrap_or_else(|e| e.into_inner());
            self.thresholds
                .reworded(asked)
                .into_iter()
                .filter(|k| warned.insert(k.clone()))
                .map(|k| (k.clone(), asked[&k].clone()))
                .collect()
        };
        if !new.is_empty() {
            let _ = crate::input::read_thresholds(&self.path, Some(&new));
        }
    }
}

/// The models `GET /v1/models` lists: the one that answers, and for styles
/// other than System One the SDKs' default name as an alias of it.
fn listed_models(built: &style::Built, calibration: bool) -> Vec<(String, String)> {
    let model = built.classifier.model().to_string();
    let what =
        toolnexus_stack::style_summary(&toolnexus_local::Registry::builtin(), built.style.as_str())
            .unwrap_or("answers on this machine");
    // Not style::describe: that names the tape file, and a client has no
    // business knowing paths on the server.
    let served = match built.style {
        StyleName::Tape => format!("style tape, call {:?}", built.call),
        other => format!("style {}, model {model}", other.as_str()),
    };
    // A --calibration file may make "uncalibrated" untrue for the questions it covers.
    let what = match calibration {
        true => what.replace(
            "(uncalibrated)",
            "(uncalibrated, but for the questions a --calibration file covers)",
        ),
        false => what.to_string(),
    };
    let mut out = vec![(model.clone(), format!("toolnexus serve, {served}: {what}"))];
    if built.style != StyleName::SystemOne && model != SDK_DEFAULT_MODEL {
        out.push((
            SDK_DEFAULT_MODEL.to_string(),
            format!(
                "alias of {model:?} on this toolnexus serve (the name the official SDKs ask for by default)"
            ),
        ));
    }
    out
}

/// Runs `toolnexus serve` until Ctrl-C or SIGTERM.
pub async fn run(mut args: ServeArgs) -> Result<Exit> {
    // The SDK in front retries; serve does not multiply its attempts unless asked.
    args.style.live.retries = Some(args.style.live.retries.unwrap_or(-1));
    let key = required_key(args.require_key_env.as_deref())?;
    // A cache that cannot be opened is a warning and exit 4 at the end, never
    // a silent run without one; a file that is not a cache is exit 2 now.
    let built = style::build_with(
        &args.style,
        Fallback::Demo(StyleName::Static),
        &style::Layers {
            prices: Some(&args.prices),
            cache: args.cache.as_deref().map(|p| (p, args.alias_ttl)),
            fallback_base_urls: &args.fallback_base_urls,
            ..Default::default()
        },
    )?;
    let bands = args
        .thresholds
        .as_deref()
        .map(|p| crate::input::read_thresholds(p, None))
        .transpose()?;
    style::pin::check(
        &args.pin,
        &args.style,
        built.style,
        args.thresholds.as_deref(),
    )?;
    let reworded = match &args.thresholds {
        Some(p) => Some(Reworded {
            path: p.clone(),
            thresholds: toolnexus::judge::Thresholds::load(p)
                .map_err(|e| exit::usage(format!("--thresholds: {e}")))?,
            warned: Default::default(),
        }),
        None => None,
    };
    let listener = listen(&args.addr).await?;
    let addr: SocketAddr = listener
        .local_addr()
        .map_err(|e| exit::io(format!("--addr {}: {e}", args.addr)))?;
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let app = Arc::new(App {
        classifier: built.classifier.clone(),
        call: built.call.clone(),
        forwards: built.style == StyleName::SystemOne,
        strict_fields: args.strict_fields,
        as_sent: built.style == StyleName::SystemOne
            && args.style.calibration.is_none()
            && !args.style.cascade,
        models: listed_models(&built, args.style.calibration.is_some()),
        started_on: toolnexus::date::ymd(i64::try_from(started).unwrap_or(i64::MAX)),
        delay: Duration::from_millis(args.delay_ms),
        max_body: args.max_body_bytes,
        key,
        ids: RequestIds::new(),
        bands,
        slots: (
            Arc::new(tokio::sync::Semaphore::new(args.max_concurrency as usize)),
            args.max_concurrency,
        ),
        body_timeout: args.body_timeout,
        log_misses: args.log_misses,
        reworded,
        pin: args.pin.clone(),
    });
    let stop = shutdown();
    // The first line is what scripts and tests read to find the server.
    say!("listening on http://{addr}");
    if let Some(why) = &built.offline_reason {
        say!(
            "offline: {why}; serving the recorded decisions of the built-in demo tape; {}",
            style::real_answer_hint(&args.style.live)
        );
    }
    say!(
        "serving {}: POST http://{addr}/v1/systemone, GET http://{addr}/v1/models",
        style::describe(&built)
    );
    say!(
        "official SDKs take the API root as base URL and append /v1/systemone: TypeSafeClient(base_url=\"http://{addr}\") or TYPESAFE_BASE_URL=http://{addr}"
    );
    say!(
        "the toolnexus library and CLI take it with /v1: base_url \"http://{addr}/v1\", --base-url http://{addr}/v1"
    );
    match &args.require_key_env {
        Some(var) => say!(
            "requests must carry Authorization: Bearer <the value of {}>",
            var.trim()
        ),
        None => {
            say!("no authentication (--require-key-env VAR to require a key): keep it on loopback")
        }
    }
    let limits = conn::Limits {
        max_connections: args.max_connections as usize,
        header_timeout: args.header_timeout,
        idle_timeout: args.idle_timeout,
        shutdown_grace: args.shutdown_grace,
    };
    let wire: Arc<dyn conn::Wire> = app.clone();
    let stopped = conn::serve(listener, router(app), limits, wire, stop).await;
    if stopped.cut > 0 {
        let s = if stopped.cut == 1 { "" } else { "s" };
        tell!(
            "serve: {} connection{s} still busy after --shutdown-grace {:?}: closed",
            stopped.cut,
            args.shutdown_grace
        );
    }
    tell!("serve: stopped");
    Ok(Exit::Success)
}

/// Binds `--addr`: HOST:PORT, the host an IP address or a name; of the
/// addresses a name resolves to, IPv4 loopback is tried first, then IPv6
/// loopback, then the others in the resolver's order.
async fn listen(addr: &str) -> Result<tokio::net::TcpListener> {
    let has_port = addr
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
    if !has_port {
        return Err(exit::usage(format!(
            "--addr {addr:?}: want HOST:PORT, e.g. 127.0.0.1:8787 or localhost:8787 (port 0 picks a free one)"
        )));
    }
    let mut candidates: Vec<SocketAddr> = tokio::net::lookup_host(addr)
        .await
        .map_err(|e| exit::usage(format!("--addr {addr}: cannot resolve the host: {e}")))?
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
    Err(exit::io(format!(
        "--addr {addr}: cannot listen: {}",
        last.unwrap_or_else(|| "the host resolves to no address".into())
    )))
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
        tell!("serve: {id} - - {status} 0ms ({message})");
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
        tell!("{line}");
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
    Router::new()
        .route("/v1/systemone", post(systemone))
        .route("/v1/models", get(models))
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

/// Resolves on Ctrl-C or, on Unix, SIGTERM. The handlers are installed
/// here, before the address is printed, so a signal sent as soon as the
/// address is known still stops the server gracefully.
fn shutdown() -> impl Future<Output = ()> {
    #[cfg(unix)]
    let signals = {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::interrupt()).ok(),
            signal(SignalKind::terminate()).ok(),
        )
    };
    async move {
        #[cfg(unix)]
        {
            let (mut int, mut term) = signals;
            let int = async {
                match int.as_mut() {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => {
                        let _ = tokio::signal::ctrl_c().await;
                    }
                }
            };
            let term = async {
                match term.as_mut() {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = int => {},
                _ = term => {},
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
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
    tell!(
        "serve: {id} {method} {path:?} {} {}ms{upstream}",
        resp.status().as_u16(),
        started.elapsed().as_millis()
    );
    resp
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
                msg: format!("JSON decode error: {}", crate::input::json_error(&e)),
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
        tell!("serve: {id} ignored fields: {}", ignored.join(", "));
    }
    drop(parts);
    if let Some(r) = &app.reworded {
        r.check(&parsed.questions);
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
    let mut resp = answer(&app, &id, ctx, eval, &hints).await;
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
/// its usage and every other byte as it came ([`crate::render::with_cost_bytes`]).
fn as_sent_with_cost(body: &[u8], settled: &toolnexus::cost::Cost) -> Vec<u8> {
    crate::render::with_cost_bytes(body, settled)
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
                    crate::render::with_cost(&mut v, &done.cost);
                    axum::Json(v).into_response()
                }
            };
            upstream_id(&mut resp, done.request_id.as_deref());
            if done.cache_hit {
                resp.headers_mut()
                    .insert(CACHE_HEADER, HeaderValue::from_static("hit"));
            }
            if let Some(bands) = &app.bands {
                let verdicts = crate::render::verdicts_header(&done.decision, bands);
                if let Ok(v) = HeaderValue::from_str(&verdicts) {
                    resp.headers_mut().insert(VERDICTS_HEADER, v);
                }
            }
            resp
        }
        Err(e) if e.is_miss() => {
            if app.log_misses {
                tell!("serve: {id} miss: {e}");
            }
            miss(app, &e)
        }
        Err(e) => failure(&e, hints),
    }
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
            if let Some(refusal) = style::pin::request_model(&app.pin, &m) {
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
        let mut h = HeaderMap::new();
        assert!(!authorised(b"k", &h));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("bearer k"));
        assert!(authorised(b"k", &h));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic k"));
        assert!(!authorised(b"k", &h));
    }

    #[test]
    fn retry_after_rounds_up() {
        assert_eq!(retry_after_secs(Duration::from_millis(1500)), 2);
        assert_eq!(retry_after_secs(Duration::from_secs(3)), 3);
        assert_eq!(retry_after_secs(Duration::ZERO), 0);
    }
}
