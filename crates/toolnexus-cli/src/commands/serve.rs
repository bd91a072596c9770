//! `toolnexus serve`: any style behind a System One–compatible HTTP endpoint.
//!
//! - `POST /v1/systemone` takes `{"model","questions","state"}` exactly as the
//!   library's SystemOne style posts it and answers with the decision's wire
//!   JSON. The server has one backend: the decision's `model` says what answered,
//!   whatever model was asked for.
//! - `GET /v1/models` lists that backend's model.
//! - Errors are `{"detail":{"message":"…","error_type":"…"}}`: 400 for a body that
//!   is not JSON, not an object, or holds invalid questions; 413 for a body over
//!   `--max-body-bytes`; 404 for a replay miss; 502 / 504 when the backend behind
//!   failed or timed out.
//! - Ctrl-C or SIGTERM stops accepting, lets requests in flight finish, and exits 0.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use toolnexus::classifier::{
    Classifier, ClassifierError, ErrorKind, EvalContext, questions_from_wire, validate_questions,
};

use crate::args::{ServeArgs, StyleName};
use crate::exit::{self, Exit};
use crate::style::{self, Fallback};

/// What every request handler shares.
struct App {
    classifier: Classifier,
    call: String,
    style: &'static str,
    delay: Duration,
    max_body: usize,
}

/// Runs `toolnexus serve` until Ctrl-C or SIGTERM.
pub async fn run(args: ServeArgs) -> Result<Exit> {
    let built = style::build(&args.style, Fallback::Demo(StyleName::Static))?;
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .map_err(|e| exit::io(format!("--addr {}: cannot listen: {e}", args.addr)))?;
    let addr: SocketAddr = listener
        .local_addr()
        .map_err(|e| exit::io(format!("--addr {}: {e}", args.addr)))?;
    let app = Arc::new(App {
        classifier: built.classifier.clone(),
        call: built.call.clone(),
        style: built.style.as_str(),
        delay: Duration::from_millis(args.delay_ms),
        max_body: args.max_body_bytes,
    });
    // The first line is what scripts and tests read to find the server.
    println!("listening on http://{addr}");
    if let Some(why) = &built.offline_reason {
        println!("offline: {why}; serving recorded decisions");
    }
    println!(
        "serving {}: POST http://{addr}/v1/systemone, GET http://{addr}/v1/models (base URL http://{addr}/v1)",
        style::describe(&built)
    );
    axum::serve(listener, router(app))
        .with_graceful_shutdown(shutdown())
        .await
        .map_err(|e| exit::io(format!("serve: {e}")))?;
    eprintln!("serve: stopped");
    Ok(Exit::Success)
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
        .with_state(app)
}

/// Resolves on Ctrl-C or, on Unix, SIGTERM.
async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

/// `{"detail":{"message":…,"error_type":…}}` with a status.
fn problem(status: StatusCode, error_type: &str, message: impl Into<String>) -> Response {
    let body = json!({"detail": {"message": message.into(), "error_type": error_type}});
    (status, axum::Json(body)).into_response()
}

async fn models(State(app): State<Arc<App>>) -> Response {
    let body = json!({
        "object": "list",
        "data": [{
            "id": app.classifier.model(),
            "object": "model",
            "owned_by": "toolnexus",
            "style": app.style,
        }]
    });
    axum::Json(body).into_response()
}

async fn systemone(State(app): State<Arc<App>>, body: Body) -> Response {
    let bytes = match axum::body::to_bytes(body, app.max_body).await {
        Ok(b) => b,
        Err(e) => {
            let too_large = std::error::Error::source(&e)
                .into_iter()
                .chain(std::iter::once(&e as &dyn std::error::Error))
                .any(|c| c.is::<http_body_util::LengthLimitError>())
                || e.to_string().contains("length limit");
            return if too_large {
                problem(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "request_too_large",
                    format!("request body is larger than {} bytes", app.max_body),
                )
            } else {
                problem(
                    StatusCode::BAD_REQUEST,
                    "invalid_body",
                    format!("cannot read the request body: {e}"),
                )
            };
        }
    };
    let request: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            return problem(
                StatusCode::BAD_REQUEST,
                "invalid_json",
                format!(
                    "request body is not valid JSON: {}",
                    crate::input::json_error(&e)
                ),
            );
        }
    };
    let Some(fields) = request.as_object() else {
        return problem(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "request body is not a JSON object",
        );
    };
    if fields
        .get("model")
        .is_some_and(|m| !m.is_string() && !m.is_null())
    {
        return problem(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "\"model\" is not a string",
        );
    }
    let Some(questions) = fields.get("questions") else {
        return problem(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "missing \"questions\"",
        );
    };
    let questions = match questions_from_wire(questions) {
        Ok(q) => q,
        Err(e) => return problem(StatusCode::BAD_REQUEST, "invalid_question", e.to_string()),
    };
    if let Err(e) = validate_questions(&questions) {
        return problem(StatusCode::BAD_REQUEST, "invalid_question", e.to_string());
    }
    let Some(state) = fields.get("state").cloned() else {
        return problem(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "missing \"state\"",
        );
    };
    if !app.delay.is_zero() {
        tokio::time::sleep(app.delay).await;
    }
    let ctx = EvalContext::new().with_call_name(app.call.clone());
    match app.classifier.evaluate_ctx(ctx, state, &questions).await {
        Ok(d) => axum::Json(d.to_value()).into_response(),
        Err(e) => {
            let (status, kind) = status_of(&e);
            problem(status, kind, e.to_string())
        }
    }
}

/// The HTTP status and error type a backend failure is reported with.
fn status_of(e: &ClassifierError) -> (StatusCode, &'static str) {
    match e.kind() {
        ErrorKind::InvalidQuestion => (StatusCode::BAD_REQUEST, "invalid_question"),
        ErrorKind::StaticMiss | ErrorKind::TapeMiss => (StatusCode::NOT_FOUND, "not_recorded"),
        ErrorKind::Timeout => (StatusCode::GATEWAY_TIMEOUT, "upstream_timeout"),
        ErrorKind::Http => (StatusCode::BAD_GATEWAY, "upstream_http"),
        ErrorKind::Transport => (StatusCode::BAD_GATEWAY, "upstream_unreachable"),
        ErrorKind::Decode | ErrorKind::Incoherent | ErrorKind::ResponseTooLarge => {
            (StatusCode::BAD_GATEWAY, "upstream_invalid")
        }
        ErrorKind::Cancelled => (StatusCode::SERVICE_UNAVAILABLE, "cancelled"),
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
    }
}
