//! The spans' way to the collector: each ended call becomes the SDK's
//! `SpanData`, built once, and goes straight to the SDK's batch processor
//! and its OTLP exporter.
//!
//! A call's span is complete when it is built (its times, attributes and
//! events are known), so the SDK's `Tracer` and `Span` — made for spans that
//! grow while code runs — would only copy it into one more shape first. What
//! they did beyond that is done here the SDK's way, with the SDK's parts: the
//! sampler and the span limits its `Config` reads (`OTEL_TRACES_SAMPLER`,
//! `OTEL_SPAN_*_LIMIT`), its random ids, and its `BatchSpanProcessor` with
//! the `OTEL_BSP_*` bounded queue (a full queue drops, it never blocks).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{
    Event, SamplingDecision, SpanContext, SpanId, SpanKind, Status, TraceContextExt as _,
    TraceFlags, TraceId, TraceState,
};
use opentelemetry::{Context, InstrumentationScope, KeyValue};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchSpanProcessor, Config, IdGenerator, ShouldSample, SpanData, SpanEvents, SpanExporter,
    SpanLimits, SpanLinks, SpanProcessor as _,
};

use super::delivery::Counts;
use crate::classifier::TraceParent;

/// The name of each answer's event (GenAI semantic conventions).
const EVALUATION_RESULT: &str = "gen_ai.evaluation.result";

/// One span, built and not yet sampled or sent.
pub(super) struct Draft {
    pub(super) name: Cow<'static, str>,
    pub(super) kind: SpanKind,
    pub(super) started: SystemTime,
    pub(super) ended: SystemTime,
    /// The incoming request's trace this span continues, if any.
    pub(super) parent: Option<TraceParent>,
    pub(super) attributes: Vec<KeyValue>,
    /// One `gen_ai.evaluation.result` event per answer, at the span's end.
    pub(super) events: Vec<Vec<KeyValue>>,
    /// The failed call's error kind: the span's status.
    pub(super) error: Option<&'static str>,
}

/// The SDK's span machinery without its `Tracer`: sampler, ids, limits, the
/// batch processor and, behind it, the OTLP exporter.
pub(super) struct Spans {
    processor: BatchSpanProcessor,
    sampler: Box<dyn ShouldSample>,
    ids: Box<dyn IdGenerator>,
    limits: SpanLimits,
    scope: InstrumentationScope,
    counts: Arc<Counts>,
}

impl Spans {
    /// Spans exported by `exporter` for `resource`, configured by the
    /// standard variables the SDK reads.
    pub(super) fn new<E>(
        mut exporter: E,
        resource: &opentelemetry_sdk::Resource,
        counts: Arc<Counts>,
    ) -> Spans
    where
        E: SpanExporter + Send + Sync + 'static,
    {
        exporter.set_resource(resource);
        // `Config::default` reads OTEL_TRACES_SAMPLER(_ARG) and the
        // OTEL_SPAN_*_LIMIT variables; the batch config reads OTEL_BSP_*.
        let Config {
            sampler,
            id_generator,
            span_limits,
            ..
        } = Config::default();
        Spans {
            processor: BatchSpanProcessor::builder(exporter).build(),
            sampler,
            ids: id_generator,
            limits: span_limits,
            scope: InstrumentationScope::builder("toolnexus").build(),
            counts,
        }
    }

    /// Samples `draft` as the SDK's tracer would and, if sampled, hands it to
    /// the queue (which drops it when full: the call never waits).
    pub(super) fn send(&self, draft: Draft) {
        let Draft {
            name,
            kind,
            started,
            ended,
            parent,
            mut attributes,
            events,
            error,
        } = draft;
        let parent = parent.map(remote_parent);
        let trace_id = match &parent {
            Some(p) => p.trace_id(),
            None => self.ids.new_trace_id(),
        };
        let parent_cx = parent
            .as_ref()
            .map(|p| Context::new().with_remote_span_context(p.clone()));
        let sampled = self.sampler.should_sample(
            parent_cx.as_ref(),
            trace_id,
            &name,
            &kind,
            &attributes,
            &[],
        );
        // A span the sampler dropped or only records (a caller's unsampled
        // trace) is never exported: only the others wait to be delivered.
        if sampled.decision != SamplingDecision::RecordAndSample {
            return;
        }
        attributes.extend(sampled.attributes);
        let flags = parent
            .as_ref()
            .map_or(TraceFlags::default(), SpanContext::trace_flags)
            .with_sampled(true);
        let context = SpanContext::new(
            trace_id,
            self.ids.new_span_id(),
            flags,
            false,
            sampled.trace_state,
        );
        let limit = self.limits.max_attributes_per_span as usize;
        let dropped_attributes_count = attributes.len().saturating_sub(limit) as u32;
        attributes.truncate(limit);
        let mut span_events = SpanEvents::default();
        let limit = self.limits.max_events_per_span as usize;
        span_events.dropped_count = events.len().saturating_sub(limit) as u32;
        let per_event = self.limits.max_attributes_per_event as usize;
        span_events.events = events
            .into_iter()
            .take(limit)
            .map(|mut attrs| {
                let dropped = attrs.len().saturating_sub(per_event) as u32;
                attrs.truncate(per_event);
                Event::new(EVALUATION_RESULT, ended, attrs, dropped)
            })
            .collect();
        let data = SpanData {
            span_context: context,
            parent_span_id: parent.as_ref().map_or(SpanId::INVALID, |p| p.span_id()),
            parent_span_is_remote: parent.is_some(),
            span_kind: kind,
            name,
            start_time: started,
            end_time: ended,
            attributes,
            dropped_attributes_count,
            events: span_events,
            links: SpanLinks::default(),
            status: match error {
                Some(kind) => Status::error(kind),
                None => Status::Unset,
            },
            instrumentation_scope: self.scope.clone(),
        };
        self.counts.queued();
        self.processor.on_end(data);
    }

    /// Sends what is queued and stops the processor's thread, waiting at
    /// most `timeout` (the SDK's own bound).
    pub(super) fn shutdown(&self, timeout: Duration) -> OTelSdkResult {
        self.processor.shutdown_with_timeout(timeout)
    }
}

/// The incoming request's span, as the SDK names a remote parent.
fn remote_parent(p: TraceParent) -> SpanContext {
    SpanContext::new(
        TraceId::from_bytes(p.trace_id),
        SpanId::from_bytes(p.span_id),
        if p.sampled {
            TraceFlags::SAMPLED
        } else {
            TraceFlags::default()
        },
        true,
        TraceState::default(),
    )
}
