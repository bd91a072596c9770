//! How a failure answers: problem documents with the System One error types,
//! the upstream's status and request id passed on, and `Retry-After`.

use super::*;

/// `{"detail":{"message":…,"error_type":…}}` with a status.
pub(super) fn problem(
    status: StatusCode,
    error_type: &str,
    message: impl Into<String>,
) -> Response {
    let body = json!({"detail": {"message": message.into(), "error_type": error_type}});
    (status, axum::Json(body)).into_response()
}

/// A 422 with the API's validation list.
pub(super) fn unprocessable(errors: &[Invalid]) -> Response {
    let detail: Vec<Value> = errors.iter().map(Invalid::wire).collect();
    (
        StatusCode::UNPROCESSABLE_ENTITY,
        axum::Json(json!({ "detail": detail })),
    )
        .into_response()
}

pub(super) fn body_problem(e: BodyError) -> Response {
    match e {
        BodyError::TooLarge(m) => problem(StatusCode::PAYLOAD_TOO_LARGE, "request_too_large", m),
        BodyError::Malformed(m) => problem(StatusCode::BAD_REQUEST, "invalid_body", m),
        BodyError::UnsupportedEncoding(m) => problem(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_encoding",
            m,
        ),
    }
}

/// Where a JSON syntax error is, as a byte offset into the body (the `loc`
/// FastAPI gives a `json_invalid` error).
pub(super) fn byte_offset(body: &[u8], e: &serde_json::Error) -> usize {
    if e.is_eof() {
        return body.len();
    }
    let line_start: usize = body
        .split(|b| *b == b'\n')
        .take(e.line().saturating_sub(1))
        .map(|l| l.len() + 1)
        .sum();
    (line_start + e.column().saturating_sub(1)).min(body.len())
}

/// A replay miss: 404 naming the call only. The library's message says which
/// recording came nearest and how it differs, quoting recorded and requested
/// states and questions: that is for the server's log, not for any client.
pub(super) fn miss(app: &App, e: &ClassifierError) -> Response {
    let message = match e.kind() {
        ErrorKind::TapeMiss => ClassifierError::tape_miss(&app.call).to_string(),
        _ => ClassifierError::static_miss().to_string(),
    };
    let mut resp = problem(StatusCode::NOT_FOUND, "not_recorded", message);
    upstream_id(&mut resp, e.request_id());
    resp
}

/// The names a refusal may quote, to say where in the body it points.
pub(super) struct Hints {
    assets: Vec<String>,
    extra: Vec<String>,
    questions: Vec<String>,
}

impl Hints {
    pub(super) fn of(r: &EvalRequest) -> Hints {
        Hints {
            assets: r.assets.keys().cloned().collect(),
            extra: r.extra.keys().cloned().collect(),
            questions: r.questions.keys().cloned().collect(),
        }
    }

    /// Where in the body an error quoting one of these names points.
    fn loc(&self, text: &str) -> Vec<Value> {
        let quoted = |n: &String| text.contains(&format!("{n:?}"));
        let mut loc = vec![json!("body")];
        if let Some(a) = self.assets.iter().find(|n| quoted(n)) {
            loc.extend([json!("assets"), json!(a)]);
        } else if let Some(k) = self.extra.iter().find(|n| quoted(n)) {
            loc.push(json!(k));
        } else if let Some(q) = self.questions.iter().find(|n| quoted(n)) {
            loc.extend([json!("questions"), json!(q)]);
        } else if text.contains("model") {
            loc.push(json!("model"));
        }
        loc
    }
}

pub(super) fn upstream_id(resp: &mut Response, id: Option<&str>) {
    if let Some(v) = id.and_then(|v| HeaderValue::from_str(v).ok()) {
        resp.headers_mut().insert(UPSTREAM_REQUEST_ID_HEADER, v);
    }
}

/// The cause an upstream HTTP error carries, without `POST <url>: HTTP <n>: `.
pub(super) fn upstream_cause(e: &ClassifierError, status: u16) -> String {
    let d = e.detail();
    let marker = format!("HTTP {status}: ");
    match d.find(&marker) {
        Some(i) => d[i + marker.len()..].to_string(),
        None => d.to_string(),
    }
}

/// Seconds for `Retry-After`, rounded up.
pub(super) fn retry_after_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// How a failed evaluation is answered.
pub(super) fn failure(e: &ClassifierError, hints: &Hints) -> Response {
    let mut resp = match e.kind() {
        ErrorKind::Http => match e.status().and_then(|s| StatusCode::from_u16(s).ok()) {
            // The upstream's own error type passes through unchanged (SPEC §16).
            Some(status) if status.is_client_error() || status.is_server_error() => problem(
                status,
                e.error_type().unwrap_or("upstream_http"),
                upstream_cause(e, status.as_u16()),
            ),
            _ => problem(StatusCode::BAD_GATEWAY, "upstream_http", e.to_string()),
        },
        ErrorKind::Unsupported | ErrorKind::InvalidQuestion => unprocessable(&[Invalid {
            loc: hints.loc(&e.to_string()),
            msg: e.detail().to_string(),
            kind: "value_error",
        }]),
        ErrorKind::Timeout => problem(
            StatusCode::GATEWAY_TIMEOUT,
            "upstream_timeout",
            e.to_string(),
        ),
        ErrorKind::Transport => problem(
            StatusCode::BAD_GATEWAY,
            "upstream_unreachable",
            e.to_string(),
        ),
        ErrorKind::Decode | ErrorKind::Incoherent | ErrorKind::ResponseTooLarge => {
            problem(StatusCode::BAD_GATEWAY, "upstream_invalid", e.to_string())
        }
        ErrorKind::Cancelled => {
            problem(StatusCode::SERVICE_UNAVAILABLE, "cancelled", e.to_string())
        }
        _ => problem(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()),
    };
    if let Some(d) = e.retry_after()
        && let Ok(v) = HeaderValue::from_str(&retry_after_secs(d).to_string())
    {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    upstream_id(&mut resp, e.request_id());
    resp
}
