use std::time::Duration;

use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value};
use opentelemetry_proto::tonic::common::v1::InstrumentationScope as ProtoScope;
use opentelemetry_proto::tonic::resource::v1::Resource as ProtoResource;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_sdk::Resource;
use prost::Message as _;

use super::*;

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

#[test]
fn every_value_is_written_as_prost_writes_it() {
    let resource = Resource::builder_empty()
        .with_schema_url(every_value(), "https://opentelemetry.io/schemas/1.30.0")
        .build();
    let (ours, schema) = resource_message(&resource);
    let sdk = ResourceAttributesWithSchema::from(&resource);
    let expected = ProtoResource {
        attributes: sdk.attributes.0,
        dropped_attributes_count: 0,
        entity_refs: Vec::new(),
    };
    assert_eq!(
        ProtoResource::decode(ours.as_slice()).expect("valid"),
        expected
    );
    assert_eq!(ours, expected.encode_to_vec());
    assert_eq!(schema, "https://opentelemetry.io/schemas/1.30.0");

    let scope = InstrumentationScope::builder("toolnexus")
        .with_version("1.2.3")
        .with_attributes([KeyValue::new("scope.kind", "library")])
        .build();
    let (ours, _) = scope_message(&scope);
    let expected = ProtoScope {
        name: "toolnexus".into(),
        version: "1.2.3".into(),
        attributes: vec![(&KeyValue::new("scope.kind", "library")).into()],
        dropped_attributes_count: 0,
    };
    assert_eq!(ours, expected.encode_to_vec());
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

/// Variables from a list, for the functions that take `var`.
fn vars<'a>(list: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |name| {
        list.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    }
}

#[test]
fn only_a_plain_http_collector_without_a_tls_proxy_goes_without_roots() {
    assert!(plain_http("http://127.0.0.1:4318/v1/traces", vars(&[])));
    assert!(plain_http("HTTP://collector:4318", vars(&[])));
    assert!(!plain_http("https://collector:4318/v1/traces", vars(&[])));
    assert!(!plain_http("not a url", vars(&[])));
    let proxied = [("HTTP_PROXY", "http://proxy:3128")];
    assert!(plain_http("http://collector:4318", vars(&proxied)));
    for v in ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"] {
        let tls = [(v, " HTTPS://proxy:443")];
        assert!(!plain_http("http://collector:4318", vars(&tls)), "{v}");
    }
    // An HTTPS_PROXY is not used for a plain URL.
    let other = [("HTTPS_PROXY", "https://proxy:443")];
    assert!(plain_http("http://collector:4318", vars(&other)));
    assert!(blocking_client(Duration::from_secs(1), true).is_ok());
}

#[test]
fn the_metrics_client_is_ours_only_for_a_plain_http_endpoint_in_the_sdk_order() {
    let ten = Some(Duration::from_secs(10));
    assert_eq!(plain_metrics(None, vars(&[])), ten, "the default is plain");
    assert_eq!(plain_metrics(Some("http://127.0.0.1:9"), vars(&[])), ten);
    let https = [("OTEL_EXPORTER_OTLP_ENDPOINT", "https://c:4318")];
    assert_eq!(plain_metrics(None, vars(&https)), None);
    assert_eq!(plain_metrics(Some("http://c:4318"), vars(&https)), ten);
    let both = [
        (
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            "http://c:4318/v1/metrics",
        ),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://c:4318"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "1500"),
    ];
    assert_eq!(
        plain_metrics(None, vars(&both)),
        Some(Duration::from_millis(1500))
    );
    let timeouts = [
        ("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "700"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "1500"),
    ];
    assert_eq!(
        plain_metrics(None, vars(&timeouts)),
        Some(Duration::from_millis(700))
    );
}

#[test]
fn a_request_is_posted_as_protobuf_with_the_headers() {
    use crate::testing::{Reply, Server};
    let receiver = Server::builder()
        .script([Reply::json(200, ""), Reply::json(503, "")])
        .start_on_thread();
    let mut headers = HeaderMap::new();
    headers.insert("x-tenant", HeaderValue::from_static("t1"));
    let config = Config {
        endpoint: format!("http://{}/v1/traces", receiver.addr()),
        headers,
        timeout: Duration::from_secs(5),
    };
    // The post runs where the export runs it: on a plain thread.
    let (first, second) = std::thread::spawn(move || {
        let mut poster = Poster::new(config, Duration::from_secs(30));
        (
            poster.post(vec![1, 2, 3].into()),
            poster.post(vec![4].into()),
        )
    })
    .join()
    .expect("the export thread");
    assert!(first.is_ok(), "{first:?}");
    assert!(second.is_err(), "a refusing collector is an error");
    let requests = receiver.requests();
    assert_eq!(requests.len(), 2);
    let r = &requests[0];
    assert_eq!(r.path, "/v1/traces");
    assert_eq!(r.header("content-type"), Some("application/x-protobuf"));
    assert_eq!(r.header("x-tenant"), Some("t1"));
    assert_eq!(r.body, vec![1, 2, 3]);
}

#[test]
fn a_post_is_bounded_by_the_batch_timeout_too() {
    let config = Config {
        endpoint: "http://127.0.0.1:9/v1/traces".into(),
        headers: HeaderMap::new(),
        timeout: Duration::from_secs(10),
    };
    assert_eq!(
        Poster::new(config.clone(), Duration::from_millis(1500))
            .config
            .timeout,
        Duration::from_millis(1500)
    );
    assert_eq!(
        Poster::new(config, Duration::from_secs(30)).config.timeout,
        Duration::from_secs(10)
    );
}
