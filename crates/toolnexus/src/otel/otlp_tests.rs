use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{
    Event, Link, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanExporter as _, SpanLinks};
use prost::Message as _;

use super::*;

fn resource() -> Resource {
    Resource::builder_empty()
        .with_schema_url(
            [
                KeyValue::new("service.name", "toolnexus"),
                KeyValue::new("service.version", "0.1.0"),
                KeyValue::new("host.cores", 2i64),
            ],
            "https://opentelemetry.io/schemas/1.30.0",
        )
        .build()
}

fn scope(name: &'static str) -> InstrumentationScope {
    InstrumentationScope::builder(name)
        .with_version("1.2.3")
        .with_schema_url("https://opentelemetry.io/schemas/1.29.0")
        .with_attributes([KeyValue::new("scope.kind", "library")])
        .build()
}

/// Every kind of attribute value the API has, and texts long enough for
/// lengths of two and three bytes.
fn every_value() -> Vec<KeyValue> {
    vec![
        KeyValue::new("s", "text"),
        KeyValue::new("s.empty", ""),
        KeyValue::new("s.long", "x".repeat(300)),
        KeyValue::new("s.longer", "y".repeat(20_000)),
        KeyValue::new("b.true", true),
        KeyValue::new("b.false", false),
        KeyValue::new("i", 42i64),
        KeyValue::new("i.zero", 0i64),
        KeyValue::new("i.negative", -7i64),
        KeyValue::new("f", 0.25),
        KeyValue::new("f.zero", 0.0),
        KeyValue::new("f.negative", -1.5e300),
        KeyValue::new("a.bool", Value::Array(Array::Bool(vec![true, false]))),
        KeyValue::new("a.i64", Value::Array(Array::I64(vec![1, -2, 0]))),
        KeyValue::new("a.f64", Value::Array(Array::F64(vec![0.7, 0.2, 0.1]))),
        KeyValue::new(
            "a.string",
            Value::Array(Array::String(vec![
                StringValue::from("billing"),
                StringValue::from(""),
                StringValue::from(std::sync::Arc::<str>::from("shared")),
            ])),
        ),
        KeyValue::new("a.empty", Value::Array(Array::F64(Vec::new()))),
    ]
}

fn at(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_nanos(secs * 1_000_000_000 + 123_456_789)
}

fn span(n: u8, scope: InstrumentationScope, parent: bool, status: Status) -> SpanData {
    let state = TraceState::from_key_value([("vendor", "a1")]).expect("a valid trace state");
    let linked = SpanContext::new(
        TraceId::from_bytes([9; 16]),
        SpanId::from_bytes([8; 8]),
        TraceFlags::SAMPLED,
        true,
        state.clone(),
    );
    let mut events = SpanEvents::default();
    events.events = vec![
        Event::new(
            "gen_ai.evaluation.result",
            at(1_765_000_001),
            every_value(),
            2,
        ),
        Event::new("empty", at(1_765_000_001), Vec::new(), 0),
    ];
    events.dropped_count = 1;
    let mut links = SpanLinks::default();
    links.links = vec![
        Link::new(linked, vec![KeyValue::new("link.why", "retry")], 1),
        Link::with_context(SpanContext::new(
            TraceId::from_bytes([7; 16]),
            SpanId::from_bytes([6; 8]),
            TraceFlags::default(),
            false,
            TraceState::default(),
        )),
    ];
    links.dropped_count = 3;
    SpanData {
        span_context: SpanContext::new(
            TraceId::from_bytes([n; 16]),
            SpanId::from_bytes([n.wrapping_add(1); 8]),
            TraceFlags::SAMPLED,
            false,
            if parent { state } else { TraceState::default() },
        ),
        parent_span_id: if parent {
            SpanId::from_bytes([3; 8])
        } else {
            SpanId::INVALID
        },
        parent_span_is_remote: parent,
        span_kind: if parent {
            SpanKind::Client
        } else {
            SpanKind::Internal
        },
        name: Cow::Owned(format!("evaluate jev-{n}")),
        start_time: at(1_765_000_000),
        end_time: at(1_765_000_001),
        attributes: every_value(),
        dropped_attributes_count: u32::from(n % 2),
        events,
        links,
        status,
        instrumentation_scope: scope,
    }
}

/// The value of an export's future, which is ready when it is made.
fn now<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match f.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("the export waited"),
    }
}

/// Our bytes for `batch`, through the exporter's own resource message.
fn ours(batch: &[SpanData], resource: &Resource) -> Vec<u8> {
    let mut exporter = OtlpHttp::new(Config {
        endpoint: "http://127.0.0.1:9/v1/traces".into(),
        headers: HeaderMap::new(),
        timeout: Duration::from_secs(1),
    });
    exporter.set_resource(resource);
    let mut out = Vec::new();
    encode_request(
        &mut out,
        &exporter.resource,
        &exporter.resource_schema,
        batch,
    );
    out
}

/// The SDK's OTLP exporter's request for `batch`.
fn sdk(batch: Vec<SpanData>, resource: &Resource) -> ExportTraceServiceRequest {
    let resource = ResourceAttributesWithSchema::from(resource);
    ExportTraceServiceRequest {
        resource_spans: group_spans_by_resource_and_scope(batch, &resource),
    }
}

#[test]
fn a_batch_decodes_as_the_sdk_encodes_it_byte_for_byte() {
    let resource = resource();
    let batch = vec![
        span(1, scope("toolnexus"), true, Status::error("timeout")),
        span(2, scope("toolnexus"), false, Status::Ok),
        span(3, scope("toolnexus"), false, Status::Unset),
    ];
    let bytes = ours(&batch, &resource);
    let expected = sdk(batch, &resource);
    let decoded = ExportTraceServiceRequest::decode(bytes.as_slice()).expect("valid protobuf");
    assert_eq!(decoded, expected);
    assert_eq!(bytes, expected.encode_to_vec());
}

#[test]
fn spans_of_two_scopes_are_grouped_as_the_sdk_groups_them() {
    let resource = resource();
    let batch = vec![
        span(1, scope("toolnexus"), false, Status::Unset),
        span(2, scope("other"), true, Status::Unset),
        span(3, scope("toolnexus"), false, Status::error("http")),
    ];
    let by_scope = |mut r: ExportTraceServiceRequest| {
        for rs in &mut r.resource_spans {
            rs.scope_spans.sort_by(|a, b| {
                a.scope
                    .as_ref()
                    .map(|s| &s.name)
                    .cmp(&b.scope.as_ref().map(|s| &s.name))
            });
        }
        r
    };
    let decoded =
        ExportTraceServiceRequest::decode(ours(&batch, &resource).as_slice()).expect("valid");
    assert_eq!(decoded.resource_spans[0].scope_spans.len(), 2);
    assert_eq!(by_scope(decoded), by_scope(sdk(batch, &resource)));
}

#[test]
fn an_empty_batch_is_an_empty_request() {
    assert!(ours(&[], &resource()).is_empty());
}

#[test]
fn the_endpoint_follows_the_sdk_order() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    };
    let endpoint = |given: Option<&str>, pairs| config_from(given, env(pairs)).map(|c| c.endpoint);
    assert_eq!(
        endpoint(None, &[]).as_deref(),
        Some("http://localhost:4318/v1/traces")
    );
    assert_eq!(
        endpoint(
            Some("http://c:4318/"),
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x")]
        )
        .as_deref(),
        Some("http://c:4318/v1/traces")
    );
    assert_eq!(
        endpoint(
            None,
            &[
                (
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "https://t.example/otlp"
                ),
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x")
            ]
        )
        .as_deref(),
        Some("https://t.example/otlp"),
        "the traces' endpoint is taken as it is"
    );
    assert_eq!(
        endpoint(
            None,
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/base/")]
        )
        .as_deref(),
        Some("http://c:4318/base/v1/traces")
    );
    // What this module does not read the SDK's exporter handles, as before.
    assert!(endpoint(None, &[("OTEL_EXPORTER_OTLP_ENDPOINT", "c:4318")]).is_none());
    assert!(endpoint(None, &[("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")]).is_none());
    assert!(endpoint(None, &[("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "zstd")]).is_none());
}

#[test]
fn headers_and_timeout_are_read_as_the_sdk_reads_them() {
    let vars = |name: &str| match name {
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS" => {
            Some("Authorization=Bearer%20abc, x-tenant = t1 ,empty=,=novalue,bad%zz=1".into())
        }
        "OTEL_EXPORTER_OTLP_HEADERS" => Some("x-general=ignored".into()),
        "OTEL_EXPORTER_OTLP_TIMEOUT" => Some("2500".into()),
        _ => None,
    };
    let c = config_from(None, vars).expect("our exporter");
    assert_eq!(c.headers["authorization"], "Bearer abc");
    assert_eq!(c.headers["x-tenant"], "t1");
    assert!(
        c.headers.get("x-general").is_none(),
        "the traces' headers win"
    );
    assert!(c.headers.get("empty").is_none());
    assert!(c.headers.get(USER_AGENT).is_some());
    assert_eq!(c.timeout, Duration::from_millis(2500));
    let c = config_from(None, |_| None).expect("our exporter");
    assert_eq!(c.timeout, Duration::from_secs(10));
}

#[test]
fn a_batch_is_posted_as_protobuf_with_the_headers() {
    use crate::testing::{Reply, Server};
    let receiver = Server::builder()
        .script([Reply::json(200, ""), Reply::json(503, "")])
        .start_on_thread();
    let mut headers = HeaderMap::new();
    headers.insert("x-tenant", HeaderValue::from_static("t1"));
    let mut exporter = OtlpHttp::new(Config {
        endpoint: format!("http://{}/v1/traces", receiver.addr()),
        headers,
        timeout: Duration::from_secs(5),
    });
    let resource = resource();
    exporter.set_resource(&resource);
    let batch = vec![span(1, scope("toolnexus"), false, Status::Unset)];
    // The export runs where the batch processor runs it: on a plain thread.
    let (first, second, after) = std::thread::scope(|s| {
        s.spawn(|| {
            let first = now(exporter.export(batch.clone()));
            let second = now(exporter.export(batch.clone()));
            exporter
                .shutdown_with_timeout(Duration::from_secs(1))
                .expect("shut");
            let after = now(exporter.export(batch.clone()));
            (first, second, after)
        })
        .join()
        .expect("the export thread")
    });
    assert!(first.is_ok(), "{first:?}");
    assert!(second.is_err(), "a refusing collector is an error");
    assert!(matches!(after, Err(OTelSdkError::AlreadyShutdown)));
    let requests = receiver.requests();
    assert_eq!(requests.len(), 2);
    let r = &requests[0];
    assert_eq!(r.path, "/v1/traces");
    assert_eq!(r.header("content-type"), Some("application/x-protobuf"));
    assert_eq!(r.header("x-tenant"), Some("t1"));
    let decoded = ExportTraceServiceRequest::decode(r.body.as_slice()).expect("valid");
    assert_eq!(decoded, sdk(batch, &resource));
}
