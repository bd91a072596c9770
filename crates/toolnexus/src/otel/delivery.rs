//! Delivery to the collector: a span exporter that warns, once, when the
//! collector does not take a batch, and counts the spans so lost. The calls
//! themselves never wait for any of it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

/// Spans the collector did not take, since the process started.
static UNDELIVERED: AtomicU64 = AtomicU64::new(0);

/// How many exported spans the collector did not take (unreachable, refusing,
/// too slow), since the process started. Spans the full queue dropped before
/// export are counted by the OpenTelemetry SDK itself.
///
/// ```
/// // Nothing was exported, so nothing was lost.
/// assert_eq!(toolnexus::otel::undelivered_spans(), 0);
/// ```
pub fn undelivered_spans() -> u64 {
    UNDELIVERED.load(Ordering::Relaxed)
}

/// The OTLP exporter, warning about the first batch the collector refuses.
#[derive(Debug)]
pub(super) struct Warned<E> {
    inner: E,
    /// The collector's URL without credentials or query, for the warning.
    collector: String,
    warned: AtomicBool,
}

impl<E> Warned<E> {
    pub(super) fn new(inner: E, collector: &str) -> Warned<E> {
        Warned {
            inner,
            collector: crate::redact::redact_url(collector),
            warned: AtomicBool::new(false),
        }
    }
}

impl<E: SpanExporter> SpanExporter for Warned<E> {
    fn export(
        &self,
        batch: Vec<SpanData>,
    ) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        let n = batch.len() as u64;
        let sent = self.inner.export(batch);
        async move {
            let result = sent.await;
            if result.is_err() {
                UNDELIVERED.fetch_add(n, Ordering::Relaxed);
                // The error's text may quote the URL with its credentials:
                // the warning names the collector as configured, redacted.
                if !self.warned.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        target: "toolnexus::otel",
                        "otel: the collector at {} did not take the spans; calls go on without it",
                        self.collector
                    );
                }
            }
            result
        }
    }

    fn shutdown_with_timeout(&mut self, timeout: std::time::Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&mut self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}
