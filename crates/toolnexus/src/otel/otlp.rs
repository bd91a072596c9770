//! The spans' OTLP/HTTP exporter: a batch of the SDK's `SpanData` written
//! straight to an `ExportTraceServiceRequest` in protobuf, and posted.
//!
//! The SDK's own exporter first copies every span into the generated
//! `opentelemetry-proto` structs (a `String` for every key and value) and
//! then lets `prost` measure each nested message before writing it. A batch
//! of our spans is all of one resource and one scope, and its messages are
//! small: writing each field once into one buffer, a nested message's length
//! spliced in front of it when it is known, costs a fraction of that and
//! makes the same bytes (the tests compare them with the SDK's).
//!
//! The configuration is the SDK's, read from the same variables: the
//! endpoint (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is, or
//! `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/traces`), the headers
//! (`OTEL_EXPORTER_OTLP_TRACES_HEADERS` or `OTEL_EXPORTER_OTLP_HEADERS`) and
//! the timeout (`OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` or
//! `OTEL_EXPORTER_OTLP_TIMEOUT`, 10 s). What this module does not handle the
//! same way — a compression asked for, an endpoint it cannot read — is left
//! to the SDK's exporter ([`config`] answers `None`), so that such a setting
//! behaves, or fails, exactly as the SDK has it.

use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status};
use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value};
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, USER_AGENT};

/// Where and how the spans are posted.
#[derive(Debug, Clone)]
pub(super) struct Config {
    /// The full URL of the traces endpoint.
    pub(super) endpoint: String,
    /// The headers the variables ask for, and ours.
    pub(super) headers: HeaderMap,
    /// The bound on one post, the SDK's `OTEL_EXPORTER_OTLP_*TIMEOUT`.
    pub(super) timeout: Duration,
}

/// The collector the SDK would post to when nothing else is said.
const DEFAULT_ENDPOINT: &str = "http://localhost:4318";

/// The SDK's timeout when the variables set none.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How this exporter is configured, given the endpoint of the options (the
/// base URL, `/v1/traces` added); `None` when the SDK's exporter must be
/// used instead: a compression is asked for, or an endpoint is set that
/// this module does not read as an `http(s)` URL.
pub(super) fn config(endpoint: Option<&str>) -> Option<Config> {
    config_from(endpoint, |name| std::env::var(name).ok())
}

/// [`config`] with the variables read by `var`.
fn config_from(endpoint: Option<&str>, var: impl Fn(&str) -> Option<String>) -> Option<Config> {
    if var("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION").is_some()
        || var("OTEL_EXPORTER_OTLP_COMPRESSION").is_some()
    {
        return None;
    }
    // The SDK's order: the options', then the traces' variable as it is,
    // then the general one with the signal's path, then the default.
    let endpoint = match endpoint.filter(|e| !e.is_empty()) {
        Some(e) => web_url(format!("{}/v1/traces", e.trim_end_matches('/')))?,
        None => match var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            Some(e) => web_url(e)?,
            None => with_traces_path(
                var("OTEL_EXPORTER_OTLP_ENDPOINT")
                    .as_deref()
                    .unwrap_or(DEFAULT_ENDPOINT),
            )?,
        },
    };
    let mut headers = HeaderMap::new();
    headers.insert(
        USER_AGENT,
        HeaderValue::from_static(concat!("toolnexus/", env!("CARGO_PKG_VERSION"))),
    );
    if let Some(text) =
        var("OTEL_EXPORTER_OTLP_TRACES_HEADERS").or_else(|| var("OTEL_EXPORTER_OTLP_HEADERS"))
    {
        for (name, value) in parse_headers(&text) {
            if let (Ok(n), Ok(v)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(&value),
            ) {
                headers.insert(n, v);
            }
        }
    }
    let timeout = [
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
    ]
    .iter()
    .find_map(|v| var(v)?.parse::<u64>().ok())
    .map_or(DEFAULT_TIMEOUT, Duration::from_millis);
    Some(Config {
        endpoint,
        headers,
        timeout,
    })
}

/// `base` with the traces' path, without a doubled `/` (the SDK's rule).
fn with_traces_path(base: &str) -> Option<String> {
    let path = if base.ends_with('/') {
        "v1/traces"
    } else {
        "/v1/traces"
    };
    web_url(format!("{base}{path}"))
}

/// `url` when it reads as an `http` or `https` URL with a host.
fn web_url(url: String) -> Option<String> {
    let parsed = reqwest::Url::parse(&url).ok()?;
    (matches!(parsed.scheme(), "http" | "https") && parsed.host().is_some()).then_some(url)
}

/// `k1=v1,k2=v2` as the SDK reads it: trimmed, values percent-decoded, pairs
/// with an empty key or value left out.
fn parse_headers(text: &str) -> impl Iterator<Item = (&str, String)> {
    text.split_terminator(',')
        .map(str::trim)
        .filter_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            let (k, value) = (k.trim(), percent_decode(v.trim()).unwrap_or(v.to_string()));
            (!k.is_empty() && !value.is_empty()).then_some((k, value))
        })
}

/// `%XX` escapes decoded; `None` for a broken escape or bytes that are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The exporter the batch processor hands each batch to, on its own thread.
#[derive(Debug)]
pub(super) struct OtlpHttp {
    config: Config,
    /// The resource's message, written once.
    resource: Vec<u8>,
    resource_schema: String,
    state: Mutex<Posting>,
}

/// What the processor's thread keeps between batches.
#[derive(Debug, Default)]
struct Posting {
    /// Made on the first batch, on the processor's thread: a blocking client
    /// must not be made (nor dropped) inside an async runtime, where the
    /// export may be installed from.
    client: Option<reqwest::blocking::Client>,
    /// The size of the last body, for the next one's buffer.
    last_len: usize,
    shut: bool,
}

impl OtlpHttp {
    pub(super) fn new(config: Config) -> OtlpHttp {
        OtlpHttp {
            config,
            resource: Vec::new(),
            resource_schema: String::new(),
            state: Mutex::default(),
        }
    }

    fn post(&self, batch: &[SpanData]) -> OTelSdkResult {
        // Only the processor's thread exports; a poisoned lock holds a
        // client and a size, whole either way.
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.shut {
            return Err(OTelSdkError::AlreadyShutdown);
        }
        let mut body = Vec::with_capacity(state.last_len + state.last_len / 8);
        encode_request(&mut body, &self.resource, &self.resource_schema, batch);
        state.last_len = body.len();
        let client = match &state.client {
            Some(c) => c.clone(),
            None => {
                let c = reqwest::blocking::Client::builder()
                    .timeout(self.config.timeout)
                    .build()
                    .map_err(|e| OTelSdkError::InternalFailure(format!("HTTP client: {e}")))?;
                state.client = Some(c.clone());
                c
            }
        };
        drop(state);
        // The error's text may hold the URL: it goes no further than the
        // SDK's result, and `delivery` warns with the redacted collector.
        let response = client
            .post(&self.config.endpoint)
            .headers(self.config.headers.clone())
            .header(CONTENT_TYPE, "application/x-protobuf")
            .body(body)
            .send()
            .map_err(|e| OTelSdkError::InternalFailure(format!("trace export: {e}")))?;
        let status = response.status();
        // Read to its end so that the connection is kept for the next batch.
        let _ = response.bytes();
        if status.is_success() {
            Ok(())
        } else {
            Err(OTelSdkError::InternalFailure(format!(
                "trace export answered {}",
                status.as_u16()
            )))
        }
    }
}

impl SpanExporter for OtlpHttp {
    fn export(
        &self,
        batch: Vec<SpanData>,
    ) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        // The processor blocks on this future on its own thread: posting
        // with the blocking client there is what the SDK's exporter does.
        std::future::ready(self.post(&batch))
    }

    fn shutdown_with_timeout(&mut self, _timeout: Duration) -> OTelSdkResult {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        if std::mem::replace(&mut state.shut, true) {
            return Err(OTelSdkError::AlreadyShutdown);
        }
        state.client = None;
        Ok(())
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        let mut buf = Vec::new();
        for (k, v) in resource.iter() {
            let at = begin(&mut buf, 1);
            string(&mut buf, 1, k.as_str());
            any_value(&mut buf, 2, v);
            end(&mut buf, at);
        }
        self.resource = buf;
        self.resource_schema = resource.schema_url().unwrap_or_default().to_string();
    }
}

/// The traces' exporter: ours, or the SDK's where [`config`] leaves a
/// setting to it.
#[derive(Debug)]
pub(super) enum Traces {
    /// Written and posted by this module.
    Ours(OtlpHttp),
    /// The SDK's OTLP exporter.
    Sdk(opentelemetry_otlp::SpanExporter),
}

impl SpanExporter for Traces {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        match self {
            Traces::Ours(e) => e.export(batch).await,
            Traces::Sdk(e) => e.export(batch).await,
        }
    }

    fn shutdown_with_timeout(&mut self, timeout: Duration) -> OTelSdkResult {
        match self {
            Traces::Ours(e) => e.shutdown_with_timeout(timeout),
            Traces::Sdk(e) => e.shutdown_with_timeout(timeout),
        }
    }

    fn force_flush(&mut self) -> OTelSdkResult {
        match self {
            Traces::Ours(e) => e.force_flush(),
            Traces::Sdk(e) => e.force_flush(),
        }
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        match self {
            Traces::Ours(e) => e.set_resource(resource),
            Traces::Sdk(e) => e.set_resource(resource),
        }
    }
}

// Protobuf wire types.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const FIXED32: u8 = 5;

/// The SDK's span flags: the parent's trace flags, and whether the parent is
/// remote (OTLP `SpanFlags`: bit 8 says bit 9 is known).
fn span_flags(is_remote: bool, trace_flags: u8) -> u32 {
    u32::from(trace_flags) | 0x100 | if is_remote { 0x200 } else { 0 }
}

/// Writes `batch` as one `ExportTraceServiceRequest` into `out`: one
/// `ResourceSpans` (the resource's message already written in `resource`),
/// one `ScopeSpans` per instrumentation scope in the order first seen.
pub(super) fn encode_request(
    out: &mut Vec<u8>,
    resource: &[u8],
    resource_schema: &str,
    batch: &[SpanData],
) {
    if batch.is_empty() {
        return;
    }
    let rs = begin(out, 1);
    let r = begin(out, 1);
    out.extend_from_slice(resource);
    end(out, r);
    let mut scopes: Vec<&InstrumentationScope> = Vec::with_capacity(1);
    for s in batch {
        if !scopes.contains(&&s.instrumentation_scope) {
            scopes.push(&s.instrumentation_scope);
        }
    }
    for scope in scopes {
        let ss = begin(out, 2);
        let sc = begin(out, 1);
        string(out, 1, scope.name());
        string(out, 2, scope.version().unwrap_or_default());
        for kv in scope.attributes() {
            key_value(out, 3, kv);
        }
        end(out, sc);
        for span in batch.iter().filter(|s| &s.instrumentation_scope == scope) {
            encode_span(out, span);
        }
        string(out, 3, scope.schema_url().unwrap_or_default());
        end(out, ss);
    }
    string(out, 3, resource_schema);
    end(out, rs);
}

/// One `Span` (field 2 of `ScopeSpans`), its fields in tag order as `prost`
/// writes them, defaults left out.
fn encode_span(out: &mut Vec<u8>, s: &SpanData) {
    let at = begin(out, 2);
    let cx = &s.span_context;
    bytes(out, 1, &cx.trace_id().to_bytes());
    bytes(out, 2, &cx.span_id().to_bytes());
    trace_state(out, 3, cx);
    if s.parent_span_id != SpanId::INVALID {
        bytes(out, 4, &s.parent_span_id.to_bytes());
    }
    string(out, 5, &s.name);
    uint(out, 6, span_kind(&s.span_kind));
    fixed64(out, 7, nanos(s.start_time));
    fixed64(out, 8, nanos(s.end_time));
    for kv in &s.attributes {
        key_value(out, 9, kv);
    }
    uint(out, 10, u64::from(s.dropped_attributes_count));
    for e in s.events.iter() {
        let ev = begin(out, 11);
        fixed64(out, 1, nanos(e.timestamp));
        string(out, 2, &e.name);
        for kv in &e.attributes {
            key_value(out, 3, kv);
        }
        uint(out, 4, u64::from(e.dropped_attributes_count));
        end(out, ev);
    }
    uint(out, 12, u64::from(s.events.dropped_count));
    for l in s.links.iter() {
        let lk = begin(out, 13);
        let lcx = &l.span_context;
        bytes(out, 1, &lcx.trace_id().to_bytes());
        bytes(out, 2, &lcx.span_id().to_bytes());
        trace_state(out, 3, lcx);
        for kv in &l.attributes {
            key_value(out, 4, kv);
        }
        uint(out, 5, u64::from(l.dropped_attributes_count));
        fixed32(
            out,
            6,
            span_flags(lcx.is_remote(), lcx.trace_flags().to_u8()),
        );
        end(out, lk);
    }
    uint(out, 14, u64::from(s.links.dropped_count));
    let st = begin(out, 15);
    match &s.status {
        Status::Error { description } => {
            string(out, 2, description);
            uint(out, 3, 2);
        }
        Status::Ok => uint(out, 3, 1),
        Status::Unset => {}
    }
    end(out, st);
    fixed32(
        out,
        16,
        span_flags(s.parent_span_is_remote, cx.trace_flags().to_u8()),
    );
    end(out, at);
}

/// The OTLP `SpanKind` number.
fn span_kind(kind: &SpanKind) -> u64 {
    match kind {
        SpanKind::Internal => 1,
        SpanKind::Server => 2,
        SpanKind::Client => 3,
        SpanKind::Producer => 4,
        SpanKind::Consumer => 5,
    }
}

/// A span context's W3C trace state, when it has one.
fn trace_state(out: &mut Vec<u8>, field: u32, cx: &SpanContext) {
    let header = cx.trace_state().header();
    string(out, field, &header);
}

fn nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos() as u64
}

/// One `KeyValue` message.
fn key_value(out: &mut Vec<u8>, field: u32, kv: &KeyValue) {
    let at = begin(out, field);
    string(out, 1, kv.key.as_str());
    any_value(out, 2, &kv.value);
    end(out, at);
}

/// One `AnyValue` message: the oneof is written even when it holds its
/// type's default, as `prost` does.
fn any_value(out: &mut Vec<u8>, field: u32, v: &Value) {
    let at = begin(out, field);
    match v {
        Value::String(s) => string_always(out, 1, s.as_str()),
        Value::Bool(b) => bool_always(out, *b),
        Value::I64(i) => int_always(out, *i),
        Value::F64(f) => double_always(out, *f),
        Value::Array(a) => {
            let arr = begin(out, 5);
            match a {
                Array::Bool(vals) => each(out, vals, |o, b| bool_always(o, *b)),
                Array::I64(vals) => each(out, vals, |o, i| int_always(o, *i)),
                Array::F64(vals) => each(out, vals, |o, f| double_always(o, *f)),
                Array::String(vals) => each(out, vals, |o, s: &StringValue| {
                    string_always(o, 1, s.as_str())
                }),
                // A kind of array added to the API later: written empty.
                _ => {}
            }
            end(out, arr);
        }
        // A kind of value added to the API later: an empty value.
        _ => {}
    }
    end(out, at);
}

/// An `ArrayValue`'s values, each an `AnyValue` (field 1).
fn each<T>(out: &mut Vec<u8>, vals: &[T], write: impl Fn(&mut Vec<u8>, &T)) {
    for v in vals {
        let at = begin(out, 1);
        write(out, v);
        end(out, at);
    }
}

fn bool_always(out: &mut Vec<u8>, b: bool) {
    key(out, 2, VARINT);
    out.push(u8::from(b));
}

fn int_always(out: &mut Vec<u8>, i: i64) {
    key(out, 3, VARINT);
    // Two's complement, as protobuf writes a negative int64.
    varint(out, i as u64);
}

fn double_always(out: &mut Vec<u8>, f: f64) {
    key(out, 4, FIXED64);
    out.extend_from_slice(&f.to_le_bytes());
}

fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, u64::from(field << 3 | u32::from(wire)));
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn uint(out: &mut Vec<u8>, field: u32, v: u64) {
    if v != 0 {
        key(out, field, VARINT);
        varint(out, v);
    }
}

fn fixed64(out: &mut Vec<u8>, field: u32, v: u64) {
    if v != 0 {
        key(out, field, FIXED64);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

fn fixed32(out: &mut Vec<u8>, field: u32, v: u32) {
    if v != 0 {
        key(out, field, FIXED32);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

fn string(out: &mut Vec<u8>, field: u32, s: &str) {
    bytes(out, field, s.as_bytes());
}

fn string_always(out: &mut Vec<u8>, field: u32, s: &str) {
    key(out, field, LEN);
    varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    if !b.is_empty() {
        key(out, field, LEN);
        varint(out, b.len() as u64);
        out.extend_from_slice(b);
    }
}

/// Starts a nested message: its key and one byte for its length, which
/// [`end`] fills (most messages here are shorter than 128 bytes; a longer
/// one moves its bytes up by the few its length needs more).
fn begin(out: &mut Vec<u8>, field: u32) -> usize {
    key(out, field, LEN);
    out.push(0);
    out.len()
}

/// Ends the message [`begin`] started at `at`.
fn end(out: &mut Vec<u8>, at: usize) {
    let len = out.len() - at;
    if len < 0x80 {
        out[at - 1] = len as u8;
        return;
    }
    let (mut head, mut n, mut v) = ([0u8; 10], 0, len as u64);
    while v >= 0x80 {
        head[n] = v as u8 | 0x80;
        v >>= 7;
        n += 1;
    }
    head[n] = v as u8;
    out.splice(at - 1..at, head[..=n].iter().copied());
}

#[cfg(test)]
#[path = "otlp_tests.rs"]
mod tests;
