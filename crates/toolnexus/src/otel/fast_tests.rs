use std::sync::atomic::AtomicU64;
use std::time::SystemTime;

use opentelemetry::trace::{
    Link, SamplingDecision, SamplingResult, SpanId, SpanKind, TraceContextExt as _, TraceId,
    TraceState,
};
use opentelemetry::{Array, Context, StringValue, Value};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{IdGenerator, ShouldSample, SpanData, SpanLimits};
use prost::Message as _;
use serde_json::json;

use super::*;
use crate::classifier::{
    CallEnd, CallExport as _, CallWatch as _, ClassifierError, Decision, Evaluated, Identity,
    TraceParent,
};
use crate::otel::delivery::{Counts, Warned};
use crate::otel::spans::{Parts, Sampling, Spans};
use crate::otel::tests::{decision, priced};
use crate::otel::{Ended, Export, Instruments, Watch};

/// Ids counted up from 1, the same sequence for each path.
#[derive(Debug, Default)]
struct Counted(AtomicU64);

impl IdGenerator for Counted {
    fn new_trace_id(&self) -> TraceId {
        let n = u128::from(self.0.fetch_add(1, Ordering::Relaxed) + 1);
        TraceId::from_bytes((n << 64 | 0xabc).to_be_bytes())
    }

    fn new_span_id(&self) -> SpanId {
        SpanId::from_bytes((self.0.fetch_add(1, Ordering::Relaxed) + 1).to_be_bytes())
    }
}

/// A sampler that follows a caller's decision and keeps every root span,
/// adding attributes of every kind and a trace state, as a vendor's may.
#[derive(Debug, Clone)]
struct Tagging;

impl ShouldSample for Tagging {
    fn should_sample(
        &self,
        parent: Option<&Context>,
        _trace_id: TraceId,
        _name: &str,
        _kind: &SpanKind,
        _attributes: &[KeyValue],
        _links: &[Link],
    ) -> SamplingResult {
        if let Some(cx) = parent.filter(|cx| cx.has_active_span()) {
            let sampled = cx.span().span_context().is_sampled();
            return SamplingResult {
                decision: if sampled {
                    SamplingDecision::RecordAndSample
                } else {
                    SamplingDecision::Drop
                },
                attributes: Vec::new(),
                trace_state: cx.span().span_context().trace_state().clone(),
            };
        }
        SamplingResult {
            decision: SamplingDecision::RecordAndSample,
            attributes: vec![
                KeyValue::new("sampler.rule", "keep-all"),
                KeyValue::new("sampler.ratio", 1.0),
                KeyValue::new("sampler.n", -3i64),
                KeyValue::new("sampler.on", true),
                KeyValue::new("sampler.ids", Value::Array(Array::I64(vec![1, 0, -1]))),
                KeyValue::new(
                    "sampler.flags",
                    Value::Array(Array::Bool(vec![true, false])),
                ),
                KeyValue::new(
                    "sampler.tags",
                    Value::Array(Array::String(vec![StringValue::from("a"), "".into()])),
                ),
            ],
            trace_state: TraceState::from_key_value([("vendor", "a1")]).expect("valid"),
        }
    }
}

fn parts(limits: SpanLimits) -> Parts {
    sampled(Sampling::Sdk(Box::new(Tagging)), limits)
}

/// Counted ids, `sampler` and `limits`.
fn sampled(sampler: Sampling, limits: SpanLimits) -> Parts {
    Parts {
        sampler,
        ids: Box::new(Counted::default()),
        limits,
    }
}

/// A resource with a schema and attributes of several kinds.
fn resource() -> Resource {
    Resource::builder_empty()
        .with_schema_url(
            [
                KeyValue::new("service.name", "toolnexus"),
                KeyValue::new("service.version", "0.1.0"),
                KeyValue::new("host.cores", 2i64),
                KeyValue::new("host.load", 0.5),
                KeyValue::new("host.on", true),
                KeyValue::new("host.long", "z".repeat(300)),
            ],
            "https://opentelemetry.io/schemas/1.30.0",
        )
        .build()
}

/// The call export of `spans`, content off, its metrics going nowhere.
fn export_of(spans: &Arc<Spans>) -> Export {
    Export {
        spans: spans.clone(),
        instruments: Instruments::new(&opentelemetry_sdk::metrics::SdkMeterProvider::default()),
        content: false,
    }
}

fn noul() -> Decision {
    Decision::from_value(&json!({
        "model": "jev-1.13",
        "answers": {"spam": {"type": "noul", "noul": 0.75}},
        "usage": {"input_tokens": 12, "output_tokens": 1},
        "calibrated": false
    }))
    .expect("a well-formed decision")
}

/// The same calls, in the same order, through `spans`: a noul; a choice and
/// a score with content on, a cascade stage and a priced cost; a failure; a
/// call a guard judged; a guard's own span; a call in a caller's sampled
/// trace and one in its unsampled trace.
fn calls(spans: &Arc<Spans>) {
    let start = SystemTime::UNIX_EPOCH + Duration::from_nanos(1_800_000_000_123_456_789);
    let id = Identity::new(
        "systemone",
        "jev-latest",
        Some("https://user:secret@api.example.com:8443/v1/systemone".into()),
    );
    let watch = |parent: Option<TraceParent>, content: bool| {
        Box::new(Watch {
            spans: spans.clone(),
            started: start,
            parent,
            // Long enough for lengths of three bytes in the attribute, its
            // value and the span.
            state: content.then(|| format!("{{\"text\":\"{}\"}}", "hello ".repeat(3_000))),
            instructions: if content {
                vec![("spam".into(), "Is it spam?".into())]
            } else {
                Vec::new()
            },
            ended: Ended::Dropped,
        })
    };
    fn end<'a>(
        id: &'a Identity,
        result: &'a Result<Evaluated, ClassifierError>,
        stage: Option<&'static str>,
        asked: &'a str,
    ) -> CallEnd<'a> {
        CallEnd {
            identity: id,
            asked,
            call_name: "triage",
            duration: Duration::from_millis(42),
            result,
            cascade_stage: stage,
            answered: "jev-1.13",
        }
    }
    let verdict = GuardVerdict {
        tool: "Bash".into(),
        verdict: "deny",
        rule: Some("force-push".into()),
        decided_by: "rule",
        judge_asked: false,
    };
    let parent = |sampled| TraceParent {
        trace_id: [7; 16],
        span_id: [9; 8],
        sampled,
    };

    let noul = Ok(Evaluated::new(noul()));
    watch(None, false)
        .finish(end(&id, &noul, None, "jev-latest"))
        .export(None);
    let priced = Ok(priced());
    watch(None, true)
        .finish(end(&id, &priced, Some("teacher"), "jev-latest"))
        .export(None);
    let failed = Err(ClassifierError::cancelled());
    watch(None, false)
        .finish(CallEnd {
            answered: "",
            ..end(&id, &failed, None, "jev-latest")
        })
        .export(None);
    watch(None, false)
        .finish(end(&id, &noul, None, "jev-guard"))
        .export(Some(&verdict));
    let export = export_of(spans);
    export.guard(start, Duration::from_micros(250), &verdict);
    let both = Ok(Evaluated::new(decision()));
    watch(Some(parent(true)), false)
        .finish(end(&id, &both, None, "jev-latest"))
        .export(None);
    watch(Some(parent(false)), false)
        .finish(end(&id, &both, None, "jev-latest"))
        .export(None);
}

/// The request the SDK's exporter writes for the spans of [`calls`] built
/// the SDK's way (`SpanData` through its batch processor).
fn sdk_request(parts: Parts, resource: &Resource) -> Vec<u8> {
    #[derive(Debug, Clone, Default)]
    struct Kept(Arc<Mutex<Vec<SpanData>>>);
    impl opentelemetry_sdk::trace::SpanExporter for Kept {
        async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
            self.0.lock().expect("not poisoned").extend(batch);
            Ok(())
        }
    }
    let kept = Kept::default();
    let counts = Arc::new(Counts::default());
    let spans = Arc::new(Spans::with_sdk(
        Warned::new(kept.clone(), "http://127.0.0.1:9", counts.clone()),
        resource,
        counts,
        parts,
    ));
    assert!(!spans.writes_protobuf());
    calls(&spans);
    spans.shutdown(Duration::from_secs(10)).expect("flushed");
    let batch = std::mem::take(&mut *kept.0.lock().expect("not poisoned"));
    assert_eq!(batch.len(), 6, "the unsampled trace is not exported");
    let resource = ResourceAttributesWithSchema::from(resource);
    ExportTraceServiceRequest {
        resource_spans: group_spans_by_resource_and_scope(batch, &resource),
    }
    .encode_to_vec()
}

/// What a queue of ours posted.
#[derive(Clone, Default)]
struct Posted(Arc<Mutex<Vec<Vec<u8>>>>);

impl Posted {
    fn post(&self, answer: Result<(), String>) -> Post {
        let posted = self.clone();
        Box::new(move |body| {
            posted.0.lock().expect("not poisoned").push(body.to_vec());
            answer.clone()
        })
    }

    fn bodies(&self) -> Vec<Vec<u8>> {
        self.0.lock().expect("not poisoned").clone()
    }
}

fn batch(max_queue: usize, max_batch: usize, delay: Duration) -> Batch {
    Batch {
        max_queue,
        delay,
        max_batch,
        timeout: Duration::from_secs(5),
    }
}

/// Our spans, posting into `posted`, counting into `counts`.
fn ours(posted: &Posted, counts: &Arc<Counts>, limits: SpanLimits, b: Batch) -> Arc<Spans> {
    ours_for(posted, counts, limits, b, &resource())
}

/// [`ours`] for `resource`.
fn ours_for(
    posted: &Posted,
    counts: &Arc<Counts>,
    limits: SpanLimits,
    b: Batch,
    resource: &Resource,
) -> Arc<Spans> {
    posting(posted.post(Ok(())), counts, limits, b, resource)
}

/// Our spans, each request handed to `post`, counting into `counts`.
fn posting(
    post: Post,
    counts: &Arc<Counts>,
    limits: SpanLimits,
    b: Batch,
    resource: &Resource,
) -> Arc<Spans> {
    posting_with(post, counts, parts(limits), b, resource)
}

/// [`posting`] with the sampler, ids and limits of `parts`.
fn posting_with(
    post: Post,
    counts: &Arc<Counts>,
    parts: Parts,
    b: Batch,
    resource: &Resource,
) -> Arc<Spans> {
    let spans = Spans::ours(
        post,
        Notice::new("http://127.0.0.1:9", counts.clone()),
        resource,
        counts.clone(),
        b,
        parts,
    )
    .expect("the thread starts");
    Arc::new(spans)
}

#[test]
fn a_batch_decodes_as_the_sdk_encodes_it_byte_for_byte() {
    let tight = SpanLimits {
        max_attributes_per_span: 9,
        max_events_per_span: 2,
        max_attributes_per_event: 4,
        ..SpanLimits::default()
    };
    // Fewer attributes an event than its head (given again when it fits).
    let tighter = SpanLimits {
        max_attributes_per_event: 1,
        ..tight
    };
    // One resource for all: its attributes are kept in a hash map, in an
    // order of its own.
    let resource = resource();
    for limits in [SpanLimits::default(), tight, tighter, SpanLimits::default()] {
        let posted = Posted::default();
        let counts = Arc::new(Counts::default());
        let spans = ours_for(
            &posted,
            &counts,
            limits,
            batch(64, 64, Duration::from_secs(60)),
            &resource,
        );
        assert!(spans.writes_protobuf());
        calls(&spans);
        spans.shutdown(Duration::from_secs(10)).expect("flushed");
        let bodies = posted.bodies();
        assert_eq!(bodies.len(), 1, "one batch at shutdown");
        let expected = sdk_request(parts(limits), &resource);
        let decoded = ExportTraceServiceRequest::decode(bodies[0].as_slice()).expect("valid");
        assert_eq!(
            decoded,
            ExportTraceServiceRequest::decode(expected.as_slice()).expect("valid"),
            "{limits:?}"
        );
        assert_eq!(bodies[0], expected, "{limits:?}");
        assert_eq!(counts.give_up(), 0, "every queued span settled");
    }
}

#[test]
fn the_default_sampler_keeps_what_the_sdks_keeps_byte_for_byte() {
    // `parentbased_always_on` decided without the SDK's sampler, against
    // that sampler on the SDK's path: the same spans, ids, flags and trace
    // states (roots kept, a sampled caller's trace continued, an unsampled
    // caller's dropped).
    use opentelemetry_sdk::trace::Sampler;
    let resource = resource();
    let posted = Posted::default();
    let counts = Arc::new(Counts::default());
    let spans = posting_with(
        posted.post(Ok(())),
        &counts,
        sampled(Sampling::ParentBasedAlwaysOn, SpanLimits::default()),
        batch(64, 64, Duration::from_secs(60)),
        &resource,
    );
    calls(&spans);
    spans.shutdown(Duration::from_secs(10)).expect("flushed");
    let bodies = posted.bodies();
    assert_eq!(bodies.len(), 1, "one batch at shutdown");
    let sdk = Sampling::Sdk(Box::new(Sampler::ParentBased(Box::new(Sampler::AlwaysOn))));
    let expected = sdk_request(sampled(sdk, SpanLimits::default()), &resource);
    assert_eq!(bodies[0], expected);
}

#[test]
fn only_the_default_sampler_is_decided_without_the_sdk() {
    use opentelemetry_sdk::trace::Sampler;
    let sdk = || Box::new(Sampler::AlwaysOff) as Box<dyn ShouldSample>;
    for (named, ours) in [
        (None, true),
        (Some("parentbased_always_on"), true),
        (Some("always_on"), false),
        (Some("parentbased_traceidratio"), false),
        (Some(""), false),
    ] {
        let decided = matches!(Sampling::named(named, sdk()), Sampling::ParentBasedAlwaysOn);
        assert_eq!(decided, ours, "{named:?}");
    }
}

#[test]
fn the_limits_drop_and_count_as_the_sdk_does() {
    let tight = SpanLimits {
        max_attributes_per_span: 9,
        max_events_per_span: 2,
        max_attributes_per_event: 4,
        ..SpanLimits::default()
    };
    let posted = Posted::default();
    let counts = Arc::new(Counts::default());
    let spans = ours(
        &posted,
        &counts,
        tight,
        batch(64, 64, Duration::from_secs(60)),
    );
    calls(&spans);
    spans.shutdown(Duration::from_secs(10)).expect("flushed");
    let decoded = ExportTraceServiceRequest::decode(posted.bodies()[0].as_slice()).expect("valid");
    let spans = &decoded.resource_spans[0].scope_spans[0].spans;
    // The call with three answers: 9 attributes kept, 2 events, 4 of each's.
    let three = &spans[1];
    assert_eq!(three.attributes.len(), 9);
    assert!(three.dropped_attributes_count > 0);
    assert_eq!(three.events.len(), 2);
    assert_eq!(three.dropped_events_count, 1);
    assert!(three.events.iter().all(|e| e.attributes.len() == 4));
    assert!(three.events.iter().all(|e| e.dropped_attributes_count > 0));
}

/// A guard's verdict: the judge allowed a Bash call.
fn judge_allowed() -> GuardVerdict {
    GuardVerdict {
        tool: "Bash".into(),
        verdict: "allow",
        rule: None,
        decided_by: "judge",
        judge_asked: true,
    }
}

#[test]
fn a_full_queue_drops_and_counts_and_never_waits() {
    let posted = Posted::default();
    let counts = Arc::new(Counts::default());
    // Room for two spans; the first post holds the thread until every span
    // was offered, so that the queue fills.
    let (open, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let post = posted.post(Ok(()));
    let held: Post = Box::new({
        let mut post = post;
        move |body| {
            let _ = gate
                .lock()
                .expect("not poisoned")
                .recv_timeout(Duration::from_secs(20));
            post(body)
        }
    });
    let spans = posting(
        held,
        &counts,
        SpanLimits::default(),
        batch(2, 2, Duration::from_secs(60)),
        &resource(),
    );
    let export = export_of(&spans);
    let verdict = judge_allowed();
    let start = SystemTime::now();
    let offered = Instant::now();
    for _ in 0..200 {
        export.guard(start, Duration::from_millis(1), &verdict);
    }
    assert!(
        offered.elapsed() < Duration::from_secs(15),
        "the calls never waited for the held post"
    );
    drop(open);
    spans.shutdown(Duration::from_secs(10)).expect("flushed");
    let dropped = spans.dropped();
    let sent: usize = posted
        .bodies()
        .iter()
        .map(|b| {
            let r = ExportTraceServiceRequest::decode(b.as_slice()).expect("valid");
            r.resource_spans[0].scope_spans[0].spans.len()
        })
        .sum();
    assert!(dropped > 0, "a queue of two dropped some of 200");
    assert_eq!(sent as u64 + dropped, 200, "each span sent or dropped");
    assert!(
        posted.bodies().iter().all(|b| {
            let r = ExportTraceServiceRequest::decode(b.as_slice()).expect("valid");
            r.resource_spans[0].scope_spans[0].spans.len() <= 2
        }),
        "no request holds more than a batch"
    );
    assert_eq!(counts.give_up(), dropped, "the dropped never settled");
}

#[test]
fn a_batch_leaves_when_it_is_full_or_the_delay_passed() {
    let posted = Posted::default();
    let counts = Arc::new(Counts::default());
    let spans = ours(
        &posted,
        &counts,
        SpanLimits::default(),
        batch(100, 3, Duration::from_millis(50)),
    );
    let export = export_of(&spans);
    let verdict = GuardVerdict {
        tool: "Read".into(),
        verdict: "allow",
        rule: None,
        decided_by: "rule",
        judge_asked: false,
    };
    export.guard(SystemTime::now(), Duration::from_millis(1), &verdict);
    // One span waits for the delay, not for shutdown.
    let waited = Instant::now();
    while posted.bodies().is_empty() {
        assert!(waited.elapsed() < Duration::from_secs(30), "never sent");
        std::thread::sleep(Duration::from_millis(5));
    }
    spans.shutdown(Duration::from_secs(10)).expect("flushed");
    assert_eq!(counts.give_up(), 0);
}

#[test]
fn a_post_that_fails_warns_and_counts() {
    let posted = Posted::default();
    let counts = Arc::new(Counts::default());
    let before = crate::otel::undelivered_spans();
    let spans = Arc::new(
        Spans::ours(
            posted.post(Err("trace export answered 503".into())),
            Notice::new("http://user:secret@127.0.0.1:9", counts.clone()),
            &resource(),
            counts.clone(),
            batch(64, 64, Duration::from_secs(60)),
            parts(SpanLimits::default()),
        )
        .expect("the thread starts"),
    );
    calls(&spans);
    let result = spans.shutdown(Duration::from_secs(10));
    assert!(matches!(result, Err(OTelSdkError::InternalFailure(_))));
    // Other tests of the process may count too: at least these six.
    assert!(crate::otel::undelivered_spans() >= before + 6);
    assert_eq!(counts.give_up(), 0, "settled, as lost, not left waiting");
    assert!(matches!(
        spans.shutdown(Duration::from_secs(1)),
        Err(OTelSdkError::AlreadyShutdown)
    ));
}

#[test]
fn shutdown_waits_no_longer_than_its_bound() {
    let counts = Arc::new(Counts::default());
    // A post that hangs far past the bound.
    let slow: Post = Box::new(|_| {
        std::thread::sleep(Duration::from_secs(30));
        Ok(())
    });
    let spans = posting(
        slow,
        &counts,
        SpanLimits::default(),
        batch(64, 64, Duration::from_secs(60)),
        &resource(),
    );
    calls(&spans);
    let asked = Instant::now();
    let result = spans.shutdown(Duration::from_millis(200));
    assert!(
        matches!(result, Err(OTelSdkError::Timeout(_))),
        "{result:?}"
    );
    assert!(asked.elapsed() < Duration::from_secs(20));
    assert_eq!(counts.give_up(), 6, "the spans not delivered are counted");
}

#[test]
fn batch_settings_are_read_as_the_sdk_reads_them() {
    let vars = |pairs: &'static [(&'static str, &'static str)]| {
        Batch::from_vars(move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    };
    assert_eq!(
        vars(&[]),
        Batch {
            max_queue: 2048,
            delay: Duration::from_secs(5),
            max_batch: 512,
            timeout: Duration::from_secs(30),
        }
    );
    let b = vars(&[
        ("OTEL_BSP_MAX_QUEUE_SIZE", "100"),
        ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "400"),
        ("OTEL_BSP_SCHEDULE_DELAY", "250"),
        ("OTEL_BSP_EXPORT_TIMEOUT", "1500"),
    ]);
    assert_eq!(b.max_queue, 100);
    assert_eq!(b.max_batch, 100, "a batch is never larger than the queue");
    assert_eq!(b.delay, Duration::from_millis(250));
    assert_eq!(b.timeout, Duration::from_millis(1500));
    let b = vars(&[
        ("OTEL_BSP_MAX_QUEUE_SIZE", "-1"),
        ("OTEL_BSP_SCHEDULE_DELAY", "1s"),
    ]);
    assert_eq!(b.max_queue, 2048, "not a whole number: ignored");
    assert_eq!(b.delay, Duration::from_secs(5));
}

#[test]
fn a_varint_length_is_counted_as_it_is_written() {
    for v in [
        0usize,
        1,
        127,
        128,
        16_383,
        16_384,
        1 << 21,
        usize::MAX >> 1,
    ] {
        let mut out = Vec::new();
        otlp::varint(&mut out, v as u64);
        assert_eq!(otlp::varint_len(v), out.len(), "{v}");
    }
}

/// Offers `n` guard spans, then `more` while the thread is held inside its
/// first post, so that its next take holds several batches at once; gives
/// what was posted.
fn taken_together(resource: &Resource, max_batch: usize, more: usize) -> Vec<Vec<u8>> {
    let posted = Posted::default();
    let counts = Arc::new(Counts::default());
    let (entered, inside) = mpsc::channel::<()>();
    let (open, gate) = mpsc::channel::<()>();
    let (entered, gate) = (Mutex::new(entered), Mutex::new(gate));
    let mut post = posted.post(Ok(()));
    let mut first = true;
    let held: Post = Box::new(move |body| {
        if std::mem::take(&mut first) {
            let _ = entered.lock().expect("not poisoned").send(());
            let _ = gate
                .lock()
                .expect("not poisoned")
                .recv_timeout(Duration::from_secs(20));
        }
        post(body)
    });
    let b = batch(1_000, max_batch, Duration::from_secs(60));
    let spans = posting(held, &counts, SpanLimits::default(), b, resource);
    let export = export_of(&spans);
    let verdict = judge_allowed();
    let start = SystemTime::now();
    for _ in 0..max_batch {
        export.guard(start, Duration::from_millis(1), &verdict);
    }
    inside
        .recv_timeout(Duration::from_secs(20))
        .expect("the first batch is posted");
    for _ in 0..more {
        export.guard(start, Duration::from_millis(1), &verdict);
    }
    drop(open);
    spans.shutdown(Duration::from_secs(10)).expect("flushed");
    posted.bodies()
}

#[test]
fn batches_taken_together_each_go_in_a_whole_request_of_their_own() {
    let plain = Resource::builder_empty()
        .with_attribute(KeyValue::new("service.name", "toolnexus"))
        .build();
    // With the schemas' fields after the spans (copied where another batch
    // follows), and without any (every request written where it lies).
    for resource in [resource(), plain] {
        let bodies = taken_together(&resource, 2, 9);
        let decoded: Vec<ExportTraceServiceRequest> = bodies
            .iter()
            .map(|b| ExportTraceServiceRequest::decode(b.as_slice()).expect("a whole request"))
            .collect();
        let counts: Vec<usize> = decoded
            .iter()
            .map(|r| r.resource_spans[0].scope_spans[0].spans.len())
            .collect();
        assert_eq!(counts, [2, 2, 2, 2, 2, 1], "a batch per request");
        let envelope = Envelope::new(&resource, &crate::otel::spans::scope());
        for (body, r) in bodies.iter().zip(&decoded) {
            let rs = &r.resource_spans[0];
            assert_eq!(
                rs.schema_url,
                resource.schema_url().unwrap_or_default(),
                "the resource's schema"
            );
            assert_eq!(
                rs.scope_spans[0].scope.as_ref().expect("scope").name,
                "toolnexus"
            );
            // Byte for byte the request written in a buffer of its own.
            let spans: Vec<u8> = rs.scope_spans[0]
                .spans
                .iter()
                .flat_map(|s| {
                    let mut one = Vec::new();
                    otlp::key(&mut one, 2, LEN);
                    otlp::varint(&mut one, s.encoded_len() as u64);
                    s.encode(&mut one).expect("room");
                    one
                })
                .collect();
            assert_eq!(body, &envelope.request(&spans));
        }
    }
}

#[test]
fn arrays_of_every_length_are_written_as_prost_writes_them() {
    use opentelemetry_proto::tonic::common::v1::{
        AnyValue, ArrayValue, KeyValue as ProtoKeyValue, any_value,
    };
    // Labels about where an item's length takes a second byte (an item is
    // its label and two bytes), and past it.
    let lengths = [0usize, 1, 123, 124, 125, 126, 127, 128, 300];
    let cases = [0usize, 1, 3, 11, 40, 255]
        .into_iter()
        .map(|n| (0..n).map(|i| format!("option-{i}")).collect::<Vec<_>>())
        .chain(std::iter::once(
            lengths
                .iter()
                .map(|l| "é".repeat(l / 2) + &"x".repeat(l % 2))
                .collect(),
        ));
    for labels in cases {
        let n = labels.len();
        let values: Vec<f64> = (0..n).map(|i| i as f64 / 7.0).collect();
        let mut out = Vec::new();
        let mut kept = Kept::new(128);
        let mut a = Proto {
            out: &mut out,
            field: 9,
            kept: &mut kept,
        };
        a.texts("toolnexus.labels", labels.iter().map(String::as_str));
        a.floats("toolnexus.probabilities", values.iter().copied());
        let array = |items: Vec<any_value::Value>| AnyValue {
            value: Some(any_value::Value::ArrayValue(ArrayValue {
                values: items
                    .into_iter()
                    .map(|v| AnyValue { value: Some(v) })
                    .collect(),
            })),
        };
        let mut expected = Vec::new();
        for kv in [
            ProtoKeyValue {
                key: "toolnexus.labels".into(),
                value: Some(array(
                    labels
                        .iter()
                        .map(|l| any_value::Value::StringValue(l.clone()))
                        .collect(),
                )),
            },
            ProtoKeyValue {
                key: "toolnexus.probabilities".into(),
                value: Some(array(
                    values
                        .iter()
                        .map(|v| any_value::Value::DoubleValue(*v))
                        .collect(),
                )),
            },
        ] {
            otlp::key(&mut expected, 9, LEN);
            otlp::varint(&mut expected, kv.encoded_len() as u64);
            kv.encode(&mut expected).expect("room");
        }
        assert_eq!(out, expected, "{n} items");
    }
}

#[test]
fn a_buffer_a_post_still_held_is_taken_back_once_free() {
    let posted = |n: usize| Bytes::from(vec![7u8; n]);
    let (first, second) = (posted(4096), posted(8192));
    let at = first.as_ptr();
    // The post's client still holds the first: nothing to take back yet.
    let holder = first.slice(10..20);
    let mut held = vec![first];
    assert!(take_back(&mut held).is_none());
    assert_eq!(held.len(), 1, "it waits");
    // A round that took nothing has no memory to wait for.
    held.push(Bytes::new());
    assert!(take_back(&mut held).is_none());
    assert_eq!(held.len(), 1, "only the first waits");
    // Free now: the same memory comes back, whole.
    drop(holder);
    held.push(second.slice(..));
    let back = take_back(&mut held).expect("taken back");
    assert_eq!((back.as_ptr(), back.capacity()), (at, 4096));
    assert_eq!(held.len(), 1, "the second is still held by `second`");
    // Held by their clients for good: at most HELD_KEPT wait.
    let holders: Vec<Bytes> = (0..HELD_KEPT + 3).map(|_| posted(64)).collect();
    held.extend(holders.iter().cloned());
    assert!(take_back(&mut held).is_none());
    assert_eq!(held.len(), HELD_KEPT);
    assert!(std::ptr::eq(
        held[HELD_KEPT - 1].as_ptr(),
        holders[HELD_KEPT + 2].as_ptr()
    ));
}
