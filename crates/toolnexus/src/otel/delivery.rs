//! Delivery to the collector: a span exporter that warns, once, when the
//! collector does not take a batch, and counts the spans so lost, and the
//! count of spans still waiting when the export is given up on at exit. The
//! calls themselves never wait for any of it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

/// Spans the collector did not take, since the process started.
static UNDELIVERED: AtomicU64 = AtomicU64::new(0);

/// How many exported spans the collector did not take (unreachable, refusing,
/// too slow), since the process started; once an export has ended
/// ([`OtelGuard::shutdown`](super::OtelGuard::shutdown)) past its flush
/// timeout, also the spans it left queued or that the full queue dropped.
///
/// ```
/// // Nothing was exported, so nothing was lost.
/// assert_eq!(toolnexus::otel::undelivered_spans(), 0);
/// ```
pub fn undelivered_spans() -> u64 {
    UNDELIVERED.load(Ordering::Relaxed)
}

/// One export's span counts: handed to the queue, and settled (the
/// collector's answer came, taken or refused). Their difference at exit is
/// what the queue still held or dropped.
#[derive(Debug, Default)]
pub(super) struct Counts {
    queued: AtomicU64,
    settle: Mutex<Settle>,
}

/// What the collector answered, and whether the export was given up on (what
/// settles after that was already counted).
#[derive(Debug, Default)]
struct Settle {
    settled: u64,
    abandoned: bool,
}

impl Counts {
    /// One span handed to the queue.
    pub(super) fn queued(&self) {
        self.queued.fetch_add(1, Ordering::Relaxed);
    }

    /// A batch of `n` spans settled; `lost` when the collector did not take it.
    fn settled(&self, n: u64, lost: bool) {
        // A poisoned lock holds two plain counts, whole either way.
        let mut s = self.settle.lock().unwrap_or_else(|p| p.into_inner());
        s.settled += n;
        if lost && !s.abandoned {
            UNDELIVERED.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// The export is given up on: the spans not settled are counted as
    /// undelivered, and their number returned.
    pub(super) fn give_up(&self) -> u64 {
        let mut s = self.settle.lock().unwrap_or_else(|p| p.into_inner());
        if std::mem::replace(&mut s.abandoned, true) {
            return 0;
        }
        let lost = self
            .queued
            .load(Ordering::Relaxed)
            .saturating_sub(s.settled);
        UNDELIVERED.fetch_add(lost, Ordering::Relaxed);
        lost
    }
}

/// What is told of each batch the collector answered: counted, and the
/// first one it did not take warned about, naming the collector without
/// its credentials.
#[derive(Debug)]
pub(super) struct Notice {
    /// The collector's URL without credentials or query, for the warning.
    collector: String,
    warned: AtomicBool,
    counts: Arc<Counts>,
}

impl Notice {
    pub(super) fn new(collector: &str, counts: Arc<Counts>) -> Notice {
        Notice {
            collector: crate::redact::redact_url(collector),
            warned: AtomicBool::new(false),
            counts,
        }
    }

    /// A batch of `n` spans settled: taken by the collector or not.
    pub(super) fn settled(&self, n: u64, taken: bool) {
        self.counts.settled(n, !taken);
        // The error's text may quote the URL with its credentials: the
        // warning names the collector as configured, redacted.
        if !taken && !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                target: "toolnexus::otel",
                "otel: the collector at {} did not take the spans; calls go on without it",
                self.collector
            );
        }
    }
}

/// The SDK's OTLP exporter, warning about the first batch the collector
/// refuses.
#[derive(Debug)]
pub(super) struct Warned<E> {
    inner: E,
    notice: Notice,
}

impl<E> Warned<E> {
    pub(super) fn new(inner: E, collector: &str, counts: Arc<Counts>) -> Warned<E> {
        Warned {
            inner,
            notice: Notice::new(collector, counts),
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
            self.notice.settled(n, result.is_ok());
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
