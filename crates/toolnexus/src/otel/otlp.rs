//! The spans' OTLP/HTTP wire: the configuration read as the SDK reads it,
//! the protobuf writer, and the post of a finished request.
//!
//! The SDK's own exporter first copies every span into the generated
//! `opentelemetry-proto` structs (a `String` for every key and value) and
//! then lets `prost` measure each nested message before writing it. Our
//! spans are written field by field into one buffer instead, a nested
//! message's length spliced in front of it when it is known, in tag order
//! with proto3 defaults left out as `prost` writes them: the same bytes (the
//! tests compare them with the SDK's) at a fraction of the cost.
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

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use opentelemetry::trace::SpanKind;
use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value};
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

/// Whether a client posting to `url` never makes a TLS connection: a plain
/// `http://` URL, and no proxy variable (as reqwest reads them for such a
/// URL) naming an `https://` proxy. Such a client is built without root
/// certificates: loading the platform's (a directory of files, read and
/// parsed) costs a short batch more than its whole export.
pub(super) fn plain_http(url: &str, var: impl Fn(&str) -> Option<String>) -> bool {
    let http = |u: &str| reqwest::Url::parse(u).is_ok_and(|u| u.scheme() == "http");
    http(url)
        && ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]
            .iter()
            .filter_map(|v| var(v).filter(|p| !p.trim().is_empty()))
            .all(|p| !p.trim().to_ascii_lowercase().starts_with("https:"))
}

/// The blocking client that posts to a collector: bounded by `timeout`, and
/// without root certificates where [`plain_http`] says none is needed (else
/// with every root it trusted before: the bundled and the platform's).
/// Made outside any async runtime (on the export's own thread, or one
/// started for it): a blocking client cannot be made inside one.
pub(super) fn blocking_client(
    timeout: Duration,
    plain: bool,
) -> reqwest::Result<reqwest::blocking::Client> {
    let builder = reqwest::blocking::Client::builder().timeout(timeout);
    if plain {
        builder.tls_built_in_root_certs(false)
    } else {
        builder
    }
    .build()
}

/// The bound on a metrics post when the metrics endpoint (the SDK's order:
/// the options' base URL, `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`, then
/// `OTEL_EXPORTER_OTLP_ENDPOINT`, then the default) is [`plain_http`]:
/// the metrics exporter is then given a client without root certificates.
/// `None` leaves the client to the SDK, as before.
pub(super) fn plain_metrics(
    endpoint: Option<&str>,
    var: impl Fn(&str) -> Option<String>,
) -> Option<Duration> {
    let url = match endpoint.filter(|e| !e.is_empty()) {
        Some(e) => e.to_string(),
        None => var("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
            .or_else(|| var("OTEL_EXPORTER_OTLP_ENDPOINT"))
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string()),
    };
    plain_http(&url, &var).then(|| {
        [
            "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT",
            "OTEL_EXPORTER_OTLP_TIMEOUT",
        ]
        .iter()
        .find_map(|v| var(v)?.parse::<u64>().ok())
        .map_or(DEFAULT_TIMEOUT, Duration::from_millis)
    })
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

/// Posts finished OTLP requests to the collector, from the export's own
/// thread.
#[derive(Debug)]
pub(super) struct Poster {
    config: Config,
    /// Made on the first post, on the export's thread: a blocking client
    /// must not be made (nor dropped) inside an async runtime, where the
    /// export may be installed from.
    client: Option<reqwest::blocking::Client>,
}

impl Poster {
    /// A poster for `config`, each post bounded by the smaller of its timeout
    /// and `bound` (`OTEL_BSP_EXPORT_TIMEOUT`).
    pub(super) fn new(mut config: Config, bound: Duration) -> Poster {
        config.timeout = config.timeout.min(bound);
        Poster {
            config,
            client: None,
        }
    }

    /// Posts one `ExportTraceServiceRequest`; the error names what failed
    /// without the URL's credentials ever leaving this module's caller (its
    /// text goes no further: `delivery` warns with the redacted collector).
    pub(super) fn post(&mut self, body: bytes::Bytes) -> Result<(), String> {
        let client = match &self.client {
            Some(c) => c,
            None => {
                let plain = plain_http(&self.config.endpoint, |v| std::env::var(v).ok());
                let c = blocking_client(self.config.timeout, plain)
                    .map_err(|e| format!("HTTP client: {e}"))?;
                self.client.insert(c)
            }
        };
        let response = client
            .post(&self.config.endpoint)
            .headers(self.config.headers.clone())
            .header(CONTENT_TYPE, "application/x-protobuf")
            .body(body)
            .send()
            .map_err(|e| format!("trace export: {e}"))?;
        let status = response.status();
        // Read to its end so that the connection is kept for the next batch.
        let _ = response.bytes();
        if status.is_success() {
            Ok(())
        } else {
            Err(format!("trace export answered {}", status.as_u16()))
        }
    }
}

/// The traces' exporter: ours, or the SDK's where [`config`] leaves a
/// setting to it.
#[derive(Debug)]
pub(super) enum Traces {
    /// Written on the calling threads and posted by `otel/fast.rs`.
    Ours(Config),
    /// The SDK's OTLP exporter behind its batch processor.
    Sdk(opentelemetry_otlp::SpanExporter),
}

/// The resource's `Resource` message (its attributes) and its schema URL,
/// written once for every request.
pub(super) fn resource_message(resource: &opentelemetry_sdk::Resource) -> (Vec<u8>, String) {
    let mut buf = Vec::new();
    for (k, v) in resource.iter() {
        let at = begin(&mut buf, 1);
        string(&mut buf, 1, k.as_str());
        any_value(&mut buf, 2, v);
        end(&mut buf, at);
    }
    let schema = resource.schema_url().unwrap_or_default().to_string();
    (buf, schema)
}

/// The scope's `InstrumentationScope` message and its schema URL.
pub(super) fn scope_message(scope: &InstrumentationScope) -> (Vec<u8>, String) {
    let mut out = Vec::new();
    string(&mut out, 1, scope.name());
    string(&mut out, 2, scope.version().unwrap_or_default());
    for kv in scope.attributes() {
        key_value(&mut out, 3, kv);
    }
    let schema = scope.schema_url().unwrap_or_default().to_string();
    (out, schema)
}

// Protobuf wire types.
pub(super) const VARINT: u8 = 0;
pub(super) const FIXED64: u8 = 1;
pub(super) const LEN: u8 = 2;
pub(super) const FIXED32: u8 = 5;

/// The SDK's span flags: the parent's trace flags, and whether the parent is
/// remote (OTLP `SpanFlags`: bit 8 says bit 9 is known).
pub(super) fn span_flags(is_remote: bool, trace_flags: u8) -> u32 {
    u32::from(trace_flags) | 0x100 | if is_remote { 0x200 } else { 0 }
}

/// The OTLP `SpanKind` number.
pub(super) fn span_kind(kind: &SpanKind) -> u64 {
    match kind {
        SpanKind::Internal => 1,
        SpanKind::Server => 2,
        SpanKind::Client => 3,
        SpanKind::Producer => 4,
        SpanKind::Consumer => 5,
    }
}

pub(super) fn nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos() as u64
}

/// One `KeyValue` message.
pub(super) fn key_value(out: &mut Vec<u8>, field: u32, kv: &KeyValue) {
    let at = begin(out, field);
    string(out, 1, kv.key.as_str());
    any_value(out, 2, &kv.value);
    end(out, at);
}

/// One `AnyValue` message: the oneof is written even when it holds its
/// type's default, as `prost` does.
pub(super) fn any_value(out: &mut Vec<u8>, field: u32, v: &Value) {
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

#[inline]
pub(super) fn bool_always(out: &mut Vec<u8>, b: bool) {
    key(out, 2, VARINT);
    out.push(u8::from(b));
}

#[inline]
pub(super) fn int_always(out: &mut Vec<u8>, i: i64) {
    key(out, 3, VARINT);
    // Two's complement, as protobuf writes a negative int64.
    varint(out, i as u64);
}

#[inline]
pub(super) fn double_always(out: &mut Vec<u8>, f: f64) {
    out.extend_from_slice(&double(f));
}

/// An `AnyValue`'s double (field 4), key and value: nine bytes, to be
/// written in one go.
#[inline]
pub(super) fn double(f: f64) -> [u8; 9] {
    let mut b = [4 << 3 | FIXED64; 9];
    b[1..].copy_from_slice(&f.to_le_bytes());
    b
}

#[inline]
pub(super) fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, u64::from(field << 3 | u32::from(wire)));
}

#[inline]
pub(super) fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// How many bytes `v` takes as a varint.
#[inline]
pub(super) fn varint_len(v: usize) -> usize {
    let bits = usize::BITS - (v | 1).leading_zeros();
    bits.div_ceil(7) as usize
}

/// How many bytes a length-delimited field of `len` bytes takes, key
/// (a field number below 16) and length included.
#[inline]
pub(super) fn field_len(len: usize) -> usize {
    1 + varint_len(len) + len
}

#[inline]
pub(super) fn uint(out: &mut Vec<u8>, field: u32, v: u64) {
    if v != 0 {
        key(out, field, VARINT);
        varint(out, v);
    }
}

#[inline]
pub(super) fn fixed64(out: &mut Vec<u8>, field: u32, v: u64) {
    if v != 0 {
        key(out, field, FIXED64);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

#[inline]
pub(super) fn fixed32(out: &mut Vec<u8>, field: u32, v: u32) {
    if v != 0 {
        key(out, field, FIXED32);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

#[inline]
pub(super) fn string(out: &mut Vec<u8>, field: u32, s: &str) {
    bytes(out, field, s.as_bytes());
}

#[inline]
pub(super) fn string_always(out: &mut Vec<u8>, field: u32, s: &str) {
    key(out, field, LEN);
    varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

#[inline]
pub(super) fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    if !b.is_empty() {
        key(out, field, LEN);
        varint(out, b.len() as u64);
        out.extend_from_slice(b);
    }
}

/// Starts a nested message: its key and one byte for its length, which
/// [`end`] fills (most messages here are shorter than 128 bytes; a longer
/// one moves its bytes up by the few its length needs more).
#[inline]
pub(super) fn begin(out: &mut Vec<u8>, field: u32) -> usize {
    key(out, field, LEN);
    out.push(0);
    out.len()
}

/// Ends the message [`begin`] started at `at`.
#[inline]
pub(super) fn end(out: &mut Vec<u8>, at: usize) {
    let len = out.len() - at;
    if len < 0x80 {
        out[at - 1] = len as u8;
        return;
    }
    // The body moves on by the bytes the length takes past the one left
    // for it.
    let more = varint_len(len) - 1;
    let old = out.len();
    out.resize(old + more, 0);
    out.copy_within(at..old, at + more);
    let (mut i, mut v) = (at - 1, len as u64);
    while v >= 0x80 {
        out[i] = v as u8 | 0x80;
        v >>= 7;
        i += 1;
    }
    out[i] = v as u8;
}

#[cfg(test)]
#[path = "otlp_tests.rs"]
mod tests;
