//! OpenTelemetry export (the `otel` feature, SPEC §25): each call becomes one
//! GenAI client span with one `gen_ai.evaluation.result` event per answer,
//! and the call metrics become OpenTelemetry metrics, sent over OTLP/HTTP
//! (protobuf) by the OpenTelemetry SDK.
//!
//! The outermost classifier of a stack already knows the whole call when it
//! ends — the decision, the usage, the cost, the cascade's stage — so the
//! span is built there, once, directly: no `tracing` layer translating every
//! span and field, and nothing at all when no export is installed.
//!
//! Configuration follows the standard variables: `OTEL_EXPORTER_OTLP_ENDPOINT`
//! (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `_METRICS_ENDPOINT`),
//! `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT`,
//! `OTEL_SERVICE_NAME` (`toolnexus` when unset), `OTEL_RESOURCE_ATTRIBUTES`,
//! `OTEL_BSP_*` for the span queue and `OTEL_METRIC_EXPORT_INTERVAL`.
//! `OTEL_EXPORTER_OTLP_PROTOCOL` other than `http/protobuf` is warned about
//! and http/protobuf is used.
//!
//! Spans wait in a bounded queue sent by a background thread: an unreachable
//! collector costs a warning (and the spans the full queue drops, counted by
//! the SDK), never a slower or failed call. State text and instructions are
//! exported only with [`OtelOptions::content`]; credentials never (endpoints
//! are exported as their host, error texts not at all: only their kind).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Histogram, MeterProvider as _};
use opentelemetry::trace::SpanKind;
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use serde_json::Value;

use crate::classifier::{
    CallEnd, CallExport, CallWatch, Count, EndedCall, GuardVerdict, Questions, TraceParent,
};

mod attributes;
mod delivery;
mod fast;
mod otlp;
mod spans;
mod tally;

pub use attributes::{CallRecord, evaluation_events, guard_attributes, span_attributes};
pub use delivery::undelivered_spans;

/// How [`install`] sets the export up; the rest comes from the standard
/// `OTEL_*` variables.
///
/// ```
/// let opts = toolnexus::otel::OtelOptions { content: true, ..Default::default() };
/// assert!(opts.endpoint.is_none());
/// ```
#[derive(Debug, Clone, Default)]
pub struct OtelOptions {
    /// Export the state text and the questions' instructions (`toolnexus.state`,
    /// `toolnexus.instructions`). Off by default: they may hold personal data.
    pub content: bool,
    /// The collector's base URL (`http://host:4318`), in place of
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`; `/v1/traces` and `/v1/metrics` are added.
    pub endpoint: Option<String>,
    /// The `service.name` resource attribute, in place of `OTEL_SERVICE_NAME`.
    pub service_name: Option<String>,
    /// How long [`OtelGuard::shutdown`] waits for the collector to take what
    /// is queued ([`DEFAULT_FLUSH_TIMEOUT`] when `None`): past it the process
    /// goes on without it, warns naming the collector, and counts the spans
    /// left as undelivered ([`undelivered_spans`]).
    pub flush_timeout: Option<Duration>,
}

/// How long [`OtelGuard::shutdown`] waits for the collector when
/// [`OtelOptions::flush_timeout`] is not set.
///
/// ```
/// assert_eq!(toolnexus::otel::DEFAULT_FLUSH_TIMEOUT.as_secs(), 5);
/// ```
pub const DEFAULT_FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// Why [`install`] could not set the export up.
///
/// ```
/// let e = toolnexus::otel::OtelError::new("traces exporter: no HTTP client");
/// assert_eq!(e.to_string(), "otel: traces exporter: no HTTP client");
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[error("otel: {0}")]
pub struct OtelError(String);

impl OtelError {
    /// An error with this text.
    ///
    /// ```
    /// let e = toolnexus::otel::OtelError::new("x");
    /// assert_eq!(e.to_string(), "otel: x");
    /// ```
    pub fn new(text: impl Into<String>) -> OtelError {
        OtelError(text.into())
    }
}

/// Whether the standard variables ask for an export: `OTEL_EXPORTER_OTLP_ENDPOINT`
/// or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` set and not empty, and the SDK
/// not turned off ([`disabled_by_env`]).
///
/// ```
/// // SAFETY-free check: it only reads the environment.
/// let _asked: bool = toolnexus::otel::configured_by_env();
/// ```
pub fn configured_by_env() -> bool {
    !disabled_by_env()
        && [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        ]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|s| !s.trim().is_empty()))
}

/// Whether the standard `OTEL_SDK_DISABLED` turns every signal off: its
/// value `true` in any case (any other value, or none, leaves it on, as the
/// OpenTelemetry specification reads a boolean variable). [`install`] then
/// refuses, and [`configured_by_env`] is false.
///
/// ```
/// let _off: bool = toolnexus::otel::disabled_by_env();
/// ```
pub fn disabled_by_env() -> bool {
    sdk_disabled(std::env::var("OTEL_SDK_DISABLED").ok().as_deref())
}

/// `OTEL_SDK_DISABLED`'s value read as the specification reads a boolean.
fn sdk_disabled(value: Option<&str>) -> bool {
    value.is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// The export the classifiers call into (see `classifier::CallExport`).
struct Export {
    spans: Arc<spans::Spans>,
    instruments: Instruments,
    content: bool,
}

struct Instruments {
    /// The counters' sums, read by the SDK's observable counters.
    tally: Arc<tally::Tally>,
    _counters: tally::Counters,
    duration: Histogram<f64>,
}

/// Keeps the export running; [`OtelGuard::shutdown`] (or dropping it) sends
/// what is queued, waiting a bounded time, and uninstalls it.
#[must_use = "dropping the guard ends the export"]
pub struct OtelGuard {
    export: Arc<dyn CallExport>,
    spans: Arc<spans::Spans>,
    meters: SdkMeterProvider,
    counts: Arc<delivery::Counts>,
    /// The collector, redacted, for the warning when it does not answer in time.
    collector: String,
    flush_timeout: Duration,
    done: bool,
}

impl std::fmt::Debug for OtelGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtelGuard").finish_non_exhaustive()
    }
}

/// Installs the export for every classifier of the process: from now on each
/// call's outermost classifier exports its span, events and metrics. A second
/// install replaces the first (whose guard then only flushes its own queue).
/// With `OTEL_SDK_DISABLED=true` ([`disabled_by_env`]) nothing is installed
/// and the error says why.
///
/// ```no_run
/// # fn main() -> Result<(), toolnexus::otel::OtelError> {
/// // OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 (Jaeger, or any collector)
/// let guard = toolnexus::otel::install(toolnexus::otel::OtelOptions::default())?;
/// // ... evaluate ...
/// guard.shutdown();
/// # Ok(()) }
/// ```
pub fn install(options: OtelOptions) -> Result<OtelGuard, OtelError> {
    if disabled_by_env() {
        return Err(OtelError(
            "OTEL_SDK_DISABLED is true: nothing is exported".into(),
        ));
    }
    match std::env::var("OTEL_EXPORTER_OTLP_PROTOCOL") {
        Ok(p) if !p.is_empty() && p != "http/protobuf" => tracing::warn!(
            target: "toolnexus::otel",
            "OTEL_EXPORTER_OTLP_PROTOCOL={p} is not supported: exporting with http/protobuf"
        ),
        _ => {}
    }
    let resource = resource(&options);
    let traces = match otlp::config(options.endpoint.as_deref()) {
        Some(config) => otlp::Traces::Ours(config),
        None => {
            let spans = opentelemetry_otlp::SpanExporter::builder().with_http();
            let spans = match &options.endpoint {
                Some(e) => spans.with_endpoint(format!("{}/v1/traces", e.trim_end_matches('/'))),
                None => spans,
            }
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .build()
            .map_err(|e| OtelError(format!("traces exporter: {e}")))?;
            otlp::Traces::Sdk(spans)
        }
    };
    let metrics = opentelemetry_otlp::MetricExporter::builder().with_http();
    let metrics = match &options.endpoint {
        Some(e) => metrics.with_endpoint(format!("{}/v1/metrics", e.trim_end_matches('/'))),
        None => metrics,
    };
    // The SDK's own client would load the platform's root certificates,
    // which a plain-HTTP collector never uses. Made on a thread of its own,
    // as the SDK makes it: this may run inside an async runtime.
    let plain = otlp::plain_metrics(options.endpoint.as_deref(), |v| std::env::var(v).ok())
        .and_then(|timeout| {
            std::thread::spawn(move || otlp::blocking_client(timeout, true).ok())
                .join()
                .ok()
                .flatten()
        });
    let metrics = match plain {
        Some(client) => metrics.with_http_client(client),
        None => metrics,
    }
    .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
    .build()
    .map_err(|e| OtelError(format!("metrics exporter: {e}")))?;
    let collector = options
        .endpoint
        .clone()
        .or_else(|| std::env::var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").ok())
        .or_else(|| std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").ok())
        .filter(|e| !e.trim().is_empty())
        .unwrap_or_else(|| "http://localhost:4318".into());
    let counts = Arc::new(delivery::Counts::default());
    let spans = match traces {
        otlp::Traces::Ours(config) => {
            let batch = fast::Batch::from_env();
            let mut poster = otlp::Poster::new(config, batch.timeout);
            spans::Spans::ours(
                Box::new(move |body| poster.post(body)),
                delivery::Notice::new(&collector, counts.clone()),
                &resource,
                counts.clone(),
                batch,
                spans::Parts::from_env(),
            )
            .map_err(|e| OtelError(format!("traces exporter: {e}")))?
        }
        otlp::Traces::Sdk(exporter) => spans::Spans::new(
            delivery::Warned::new(exporter, &collector, counts.clone()),
            &resource,
            counts.clone(),
        ),
    };
    let spans = Arc::new(spans);
    let meters = SdkMeterProvider::builder()
        .with_periodic_exporter(metrics)
        .with_resource(resource)
        .build();
    let export = Export {
        spans: spans.clone(),
        instruments: Instruments::new(&meters),
        content: options.content,
    };
    let export: Arc<dyn CallExport> = Arc::new(export);
    crate::classifier::set_call_export(export.clone());
    Ok(OtelGuard {
        export,
        spans,
        meters,
        counts,
        collector: crate::redact::redact_url(&collector),
        flush_timeout: options.flush_timeout.unwrap_or(DEFAULT_FLUSH_TIMEOUT),
        done: false,
    })
}

fn resource(options: &OtelOptions) -> opentelemetry_sdk::Resource {
    let builder = opentelemetry_sdk::Resource::builder();
    let from_env = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|s| !s.is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|s| s.contains("service.name="));
    match &options.service_name {
        Some(name) => builder.with_service_name(name.clone()),
        None if from_env => builder,
        None => builder.with_service_name("toolnexus"),
    }
    .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
    .build()
}

impl OtelGuard {
    /// Sends what is queued and ends the export, waiting at most
    /// [`OtelOptions::flush_timeout`]. A collector that has not answered by
    /// then is given up on: a warning names it, and the spans it did not
    /// take are counted in [`undelivered_spans`].
    ///
    /// ```no_run
    /// let guard = toolnexus::otel::install(Default::default()).unwrap();
    /// guard.shutdown();
    /// ```
    pub fn shutdown(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        crate::classifier::clear_call_export(&self.export);
        // The SDK's own shutdowns wait on the exporter's HTTP timeout
        // (OTEL_EXPORTER_OTLP_TIMEOUT, 10 s) and the metrics' hard-coded 5 s:
        // a collector that accepts the connection and never answers would
        // hold the process that long. Each runs on a thread of its own, and
        // the wait for them is bounded here; a thread left behind ends with
        // the process. What failed earlier was warned about as it failed
        // (see `delivery`) and is counted.
        let budget = self.flush_timeout;
        let deadline = std::time::Instant::now() + budget;
        // Each job says whether it finished in time (a collector that
        // refused was warned about by `delivery` and still finished). The
        // SDK's own bound on the traces is set past ours, so that a collector
        // that never answers is always seen here, as ours running out.
        let (tx, rx) = std::sync::mpsc::channel::<bool>();
        let spans = self.spans.clone();
        let meters = self.meters.clone();
        let in_time = |r: opentelemetry_sdk::error::OTelSdkResult| {
            !matches!(r, Err(opentelemetry_sdk::error::OTelSdkError::Timeout(_)))
        };
        let jobs: [Box<dyn FnOnce() -> bool + Send>; 2] = [
            Box::new(move || in_time(spans.shutdown(budget + Duration::from_secs(1)))),
            Box::new(move || in_time(meters.shutdown())),
        ];
        let mut waiting = jobs.len();
        for job in jobs {
            let tx = tx.clone();
            // A thread that cannot be started leaves its job waiting: what
            // it would have sent is given up on, not waited for unbounded.
            let _ = std::thread::Builder::new()
                .name("toolnexus-otel-flush".into())
                .spawn(move || {
                    let _ = tx.send(job());
                });
        }
        while waiting > 0 {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(true) => waiting -= 1,
                Ok(false) | Err(_) => break,
            }
        }
        if waiting > 0 {
            let lost = self.counts.give_up();
            tracing::warn!(
                target: "toolnexus::otel",
                "otel: the collector at {} did not answer within {} ms as the export ended; \
                 going on without it ({lost} span{} not delivered)",
                self.collector,
                budget.as_millis(),
                if lost == 1 { "" } else { "s" }
            );
        }
    }
}

impl Drop for OtelGuard {
    fn drop(&mut self) {
        self.finish();
    }
}

/// What the outermost classifier keeps from the start of a call for its
/// span: when it started, the trace it continues, and the content when
/// opted in; then, once the call ended, the span (in the same allocation:
/// a watch becomes its ended call).
struct Watch {
    spans: Arc<spans::Spans>,
    started: SystemTime,
    parent: Option<TraceParent>,
    state: Option<String>,
    instructions: Vec<(String, String)>,
    ended: Ended,
}

/// A call's span, built when the call ended and sent when it is exported.
enum Ended {
    /// Written as protobuf but for the guard's verdict.
    Written(fast::Open),
    /// Made of `KeyValue`s for the SDK's path.
    Draft(spans::Draft),
    /// Not sampled, or not ended yet: nothing to send.
    Dropped,
}

impl EndedCall for Watch {
    fn export(self: Box<Self>, guard: Option<&GuardVerdict>) {
        let Watch { spans, ended, .. } = *self;
        match ended {
            Ended::Written(span) => spans.close(span, guard),
            Ended::Draft(mut draft) => {
                if let Some(v) = guard {
                    draft.attributes.extend(guard_attributes(v));
                }
                spans.send(draft);
            }
            Ended::Dropped => {}
        }
    }
}

impl CallExport for Export {
    fn start(&self, state: &Value, questions: &Questions) -> Box<dyn CallWatch> {
        let (state, instructions) = if self.content {
            (
                Some(state.to_string()),
                questions
                    .iter()
                    .map(|(k, q)| (k.clone(), attributes::instructions_text(q)))
                    .collect(),
            )
        } else {
            (None, Vec::new())
        };
        Box::new(Watch {
            spans: self.spans.clone(),
            started: SystemTime::now(),
            parent: crate::classifier::current_trace_parent(),
            state,
            instructions,
            ended: Ended::Dropped,
        })
    }

    fn count(&self, count: &Count<'_>) {
        self.instruments.record(count);
    }

    fn guard(&self, started: SystemTime, took: Duration, verdict: &GuardVerdict) {
        let name = attributes::intern_joined("guard ", &verdict.tool);
        let parent = crate::classifier::current_trace_parent();
        if self.spans.writes_protobuf() {
            let times = (started, started + took);
            if let Some(span) = self
                .spans
                .open(name, SpanKind::Internal, times, parent, None)
            {
                self.spans.close(span, Some(verdict));
            }
            return;
        }
        self.spans.send(spans::Draft {
            name,
            kind: SpanKind::Internal,
            started,
            ended: started + took,
            parent,
            attributes: guard_attributes(verdict),
            events: Vec::new(),
            error: None,
        });
    }
}

impl CallWatch for Watch {
    /// Builds the call's span and its events.
    fn finish(mut self: Box<Self>, end: CallEnd<'_>) -> Box<dyn EndedCall> {
        let record = CallRecord {
            identity: end.identity,
            asked: end.asked,
            call_name: end.call_name,
            result: end.result,
            answered: end.answered,
            cascade_stage: end.cascade_stage,
            state: self.state.as_deref(),
        };
        let error = end.result.as_ref().err().map(|e| e.kind().as_str());
        let name = attributes::intern_joined("evaluate ", end.asked);
        let ended = self.started + end.duration;
        self.ended = if self.spans.writes_protobuf() {
            let times = (self.started, ended);
            match self
                .spans
                .open(name, SpanKind::Client, times, self.parent, error)
            {
                Some(mut span) => {
                    attributes::write_span_attributes(&record, &mut span.attributes());
                    for (key, answer) in attributes::answers(&record) {
                        span.event(|a| {
                            attributes::write_event_attributes(key, answer, &self.instructions, a);
                        });
                    }
                    Ended::Written(span)
                }
                None => Ended::Dropped,
            }
        } else {
            Ended::Draft(spans::Draft {
                attributes: span_attributes(&record),
                events: evaluation_events(&record, &self.instructions),
                error,
                name,
                kind: SpanKind::Client,
                started: self.started,
                ended,
                parent: self.parent,
            })
        };
        self
    }
}

impl Instruments {
    fn new(meters: &SdkMeterProvider) -> Instruments {
        let m = meters.meter("toolnexus");
        let tally = Arc::new(tally::Tally::default());
        Instruments {
            _counters: tally::Counters::new(&m, &tally),
            tally,
            duration: m
                .f64_histogram("toolnexus.request.duration")
                .with_unit("s")
                .with_description("Wall time of a call.")
                .with_boundaries(crate::metrics::DURATION_BUCKETS.to_vec())
                .build(),
        }
    }

    /// Counts one call or warning.
    fn record(&self, c: &Count<'_>) {
        self.tally.record(c);
        if !c.warning {
            self.duration.record(c.duration.as_secs_f64(), &[]);
        }
    }
}

#[cfg(test)]
mod tests;
