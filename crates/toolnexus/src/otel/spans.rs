//! The spans' way to the collector: each ended call is sampled and given
//! its ids here, then either written as OTLP protobuf on the calling thread
//! and queued as bytes (`fast.rs`, when our OTLP writer is in use), or made
//! the SDK's `SpanData`, once, and handed to the SDK's batch processor and
//! its OTLP exporter (a compression or an endpoint only the SDK reads).
//!
//! A call's span is complete when it is built (its times, attributes and
//! events are known), so the SDK's `Tracer` and `Span` — made for spans that
//! grow while code runs — would only copy it into one more shape first. What
//! they did beyond that is done here the SDK's way, with the SDK's parts: the
//! sampler and the span limits its `Config` reads (`OTEL_TRACES_SAMPLER`,
//! `OTEL_SPAN_*_LIMIT`), its random ids, and the `OTEL_BSP_*` bounded queue
//! (a full queue drops, it never blocks).

use std::borrow::Cow;
use std::cell::RefCell;
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

use super::delivery::{Counts, Notice};
use super::fast::{self, EVALUATION_RESULT};
use crate::classifier::{GuardVerdict, TraceParent};

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

/// The SDK's span machinery without its `Tracer`: sampler, ids, limits, and
/// the queue — ours of encoded spans, or the SDK's batch processor with the
/// OTLP exporter behind it.
pub(super) struct Spans {
    out: Out,
    sampler: Sampling,
    ids: Box<dyn IdGenerator>,
    limits: SpanLimits,
    scope: InstrumentationScope,
    counts: Arc<Counts>,
}

/// Where sampled spans go.
enum Out {
    /// As protobuf, to our queue of bytes.
    Ours(fast::Queue),
    /// As `SpanData`, to the SDK's batch processor.
    Sdk(BatchSpanProcessor),
}

/// How spans are sampled.
pub(super) enum Sampling {
    /// The SDK's default, `parentbased_always_on`, decided here without
    /// asking the SDK's sampler: a span is kept when it has no parent or
    /// its caller sampled the trace, with no attributes and the trace state
    /// that sampler would give (a remote parent's, empty). Asking it is a
    /// call through a box into code each span would touch once; where a
    /// call's own code does not fit in the cache, each line touched for the
    /// span costs the calls more than the decision itself (BENCHMARKS.md,
    /// the cost of watching in a cache simulation).
    ParentBasedAlwaysOn,
    /// Any other sampler the standard variables name, asked as the SDK's
    /// tracer asks it.
    Sdk(Box<dyn ShouldSample>),
}

impl Sampling {
    /// The sampling `OTEL_TRACES_SAMPLER` (`named`, when set) asks for, the
    /// SDK's `sampler` made from it: the default decided here, any other
    /// left to the SDK's sampler.
    pub(super) fn named(named: Option<&str>, sampler: Box<dyn ShouldSample>) -> Sampling {
        match named {
            None | Some("parentbased_always_on") => Sampling::ParentBasedAlwaysOn,
            Some(_) => Sampling::Sdk(sampler),
        }
    }
}

/// The SDK `Config`'s parts a span needs: sampler, ids and limits.
pub(super) struct Parts {
    pub(super) sampler: Sampling,
    pub(super) ids: Box<dyn IdGenerator>,
    pub(super) limits: SpanLimits,
}

impl Parts {
    /// As the SDK's `Config::default` reads them: `OTEL_TRACES_SAMPLER(_ARG)`
    /// and the `OTEL_SPAN_*_LIMIT` variables.
    pub(super) fn from_env() -> Parts {
        let Config {
            sampler,
            id_generator,
            span_limits,
            ..
        } = Config::default();
        let named = std::env::var("OTEL_TRACES_SAMPLER").ok();
        Parts {
            sampler: Sampling::named(named.as_deref(), sampler),
            ids: id_generator,
            limits: span_limits,
        }
    }
}

/// The sampler's answer for a span it keeps, and the span's ids.
struct Sampled {
    context: SpanContext,
    parent: Option<SpanContext>,
    attributes: Vec<KeyValue>,
}

thread_local! {
    /// The few bytes of the span a calling thread is closing that are not
    /// in its buffer (ids, times, status), kept for its next.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl Spans {
    /// Spans exported by the SDK's batch processor and `exporter` for
    /// `resource`, configured by the standard variables the SDK reads.
    pub(super) fn new<E>(
        exporter: E,
        resource: &opentelemetry_sdk::Resource,
        counts: Arc<Counts>,
    ) -> Spans
    where
        E: SpanExporter + Send + Sync + 'static,
    {
        Spans::with_sdk(exporter, resource, counts, Parts::from_env())
    }

    /// [`Spans::new`] with the sampler, ids and limits given.
    pub(super) fn with_sdk<E>(
        mut exporter: E,
        resource: &opentelemetry_sdk::Resource,
        counts: Arc<Counts>,
        parts: Parts,
    ) -> Spans
    where
        E: SpanExporter + Send + Sync + 'static,
    {
        exporter.set_resource(resource);
        // The batch config reads OTEL_BSP_*.
        let processor = BatchSpanProcessor::builder(exporter).build();
        Spans::with_out(Out::Sdk(processor), counts, parts)
    }

    /// Spans written as protobuf on the calling threads, queued as
    /// `batch` says and posted by `post` for `resource`, each batch told
    /// to `notice`.
    pub(super) fn ours(
        post: fast::Post,
        notice: Notice,
        resource: &opentelemetry_sdk::Resource,
        counts: Arc<Counts>,
        batch: fast::Batch,
        parts: Parts,
    ) -> std::io::Result<Spans> {
        let envelope = fast::Envelope::new(resource, &scope());
        let queue = fast::Queue::start(batch, envelope, post, notice)?;
        Ok(Spans::with_out(Out::Ours(queue), counts, parts))
    }

    fn with_out(out: Out, counts: Arc<Counts>, parts: Parts) -> Spans {
        Spans {
            out,
            sampler: parts.sampler,
            ids: parts.ids,
            limits: parts.limits,
            scope: scope(),
            counts,
        }
    }

    /// Whether spans are written with [`Spans::open`] and [`Spans::close`]
    /// (our queue) rather than sent as a [`Draft`].
    pub(super) fn writes_protobuf(&self) -> bool {
        matches!(self.out, Out::Ours(_))
    }

    /// Samples a span as the SDK's tracer would; `None` when it is not
    /// exported (dropped, or only recorded: a caller's unsampled trace).
    fn sample(
        &self,
        name: &str,
        kind: &SpanKind,
        parent: Option<TraceParent>,
        attributes: &[KeyValue],
    ) -> Option<Sampled> {
        let parent = parent.map(remote_parent);
        let trace_id = match &parent {
            Some(p) => p.trace_id(),
            None => self.ids.new_trace_id(),
        };
        let (trace_state, attributes) = match &self.sampler {
            Sampling::ParentBasedAlwaysOn => {
                if parent.as_ref().is_some_and(|p| !p.is_sampled()) {
                    return None;
                }
                (TraceState::default(), Vec::new())
            }
            Sampling::Sdk(sampler) => {
                let parent_cx = parent
                    .as_ref()
                    .map(|p| Context::new().with_remote_span_context(p.clone()));
                let sampled = sampler.should_sample(
                    parent_cx.as_ref(),
                    trace_id,
                    name,
                    kind,
                    attributes,
                    &[],
                );
                if sampled.decision != SamplingDecision::RecordAndSample {
                    return None;
                }
                (sampled.trace_state, sampled.attributes)
            }
        };
        let flags = parent
            .as_ref()
            .map_or(TraceFlags::default(), SpanContext::trace_flags)
            .with_sampled(true);
        let context = SpanContext::new(trace_id, self.ids.new_span_id(), flags, false, trace_state);
        Some(Sampled {
            context,
            parent,
            attributes,
        })
    }

    /// A span to write as protobuf, sampled as the SDK's tracer would
    /// (the sampler is asked before any attribute is made: those the
    /// standard variables configure do not read them); `None` when it is
    /// not exported.
    pub(super) fn open(
        &self,
        name: Cow<'static, str>,
        kind: SpanKind,
        (started, ended): (SystemTime, SystemTime),
        parent: Option<TraceParent>,
        error: Option<&'static str>,
    ) -> Option<fast::Open> {
        let s = self.sample(&name, &kind, parent, &[])?;
        let head = fast::Head {
            trace_id: s.context.trace_id().to_bytes(),
            span_id: s.context.span_id().to_bytes(),
            trace_state: s.context.trace_state().header(),
            parent: s.parent.as_ref().map(|p| p.span_id().to_bytes()),
            flags: s.context.trace_flags().to_u8(),
            name,
            kind: super::otlp::span_kind(&kind),
            start: super::otlp::nanos(started),
            end: super::otlp::nanos(ended),
            error,
            sampler: s.attributes,
        };
        let limits = fast::Limits {
            attributes: self.limits.max_attributes_per_span,
            events: self.limits.max_events_per_span,
            per_event: self.limits.max_attributes_per_event,
        };
        Some(fast::Open::new(head, limits))
    }

    /// Finishes a span [`Spans::open`] began, with the verdict of the guard
    /// it was made for, and queues it (a full queue drops it: the call never
    /// waits).
    pub(super) fn close(&self, span: fast::Open, guard: Option<&GuardVerdict>) {
        let Out::Ours(queue) = &self.out else {
            // Only a queue of ours opens spans.
            return;
        };
        self.counts.queued();
        let queue_in = |span: fast::Open, small: &mut Vec<u8>| {
            let closed = span.close(guard, small);
            queue.push(&closed.pieces(small));
            closed.done();
        };
        let mut span = Some(span);
        let queued = SCRATCH.try_with(|scratch| {
            if let Some(span) = span.take() {
                queue_in(span, &mut scratch.borrow_mut());
            }
        });
        // A thread being torn down has no scratch: a buffer of its own.
        if queued.is_err()
            && let Some(span) = span
        {
            queue_in(span, &mut Vec::new());
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
        // A span the sampler dropped or only records (a caller's unsampled
        // trace) is never exported: only the others wait to be delivered.
        let Some(sampled) = self.sample(&name, &kind, parent, &attributes) else {
            return;
        };
        attributes.extend(sampled.attributes);
        let (context, parent) = (sampled.context, sampled.parent);
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
        let Out::Sdk(processor) = &self.out else {
            // Our queue takes only spans written as protobuf.
            return;
        };
        self.counts.queued();
        processor.on_end(data);
    }

    /// Sends what is queued and stops the processor's thread, waiting at
    /// most `timeout` (the SDK's own bound).
    pub(super) fn shutdown(&self, timeout: Duration) -> OTelSdkResult {
        match &self.out {
            Out::Ours(queue) => queue.shutdown(timeout),
            Out::Sdk(processor) => processor.shutdown_with_timeout(timeout),
        }
    }

    /// How many spans our full queue dropped (the SDK's processor keeps
    /// its count to itself).
    #[cfg(test)]
    pub(super) fn dropped(&self) -> u64 {
        match &self.out {
            Out::Ours(queue) => queue.dropped(),
            Out::Sdk(_) => 0,
        }
    }
}

/// This library's instrumentation scope.
pub(super) fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("toolnexus").build()
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
