//! The call counters' running sums, kept here and read by the SDK when it
//! collects.
//!
//! A synchronous SDK counter hashes its attribute set and takes its
//! instrument's lock on every `add`: six of them per call cost about as much
//! as the whole span. The sums here are plain atomics (and a short list under
//! a lock for the sets of labels), and the SDK's observable counters read
//! them in their callbacks, once per collection. What the collector receives
//! is the same: the same cumulative sums under the same names, descriptions
//! and labels, each series present from the first call that touched it (a
//! token count of 0 included, as an `add(0)` made it exist), and past the
//! SDK's default cardinality limit the same overflow series.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use opentelemetry::KeyValue;
use opentelemetry::metrics::{AsyncInstrument, Meter, ObservableCounter};

use super::attributes;
use crate::classifier::Count;

/// The SDK's default cardinality limit: past this many label sets in one
/// instrument, measurements go to one `otel.metric.overflow` series.
const CARDINALITY_LIMIT: usize = 2000;

/// One sum without labels, and whether anything was added to it yet.
#[derive(Debug, Default)]
struct Plain {
    n: AtomicU64,
    seen: AtomicBool,
}

impl Plain {
    fn add(&self, v: u64) {
        self.n.fetch_add(v, Ordering::Relaxed);
        if !self.seen.load(Ordering::Relaxed) {
            self.seen.store(true, Ordering::Relaxed);
        }
    }

    fn observe(&self, o: &dyn AsyncInstrument<u64>, labels: &[KeyValue]) {
        if self.seen.load(Ordering::Relaxed) {
            o.observe(self.n.load(Ordering::Relaxed), labels);
        }
    }
}

/// Sums by one label whose values are the program's own texts (answer types,
/// error kinds): a handful, kept in the order first seen.
#[derive(Debug, Default)]
struct ByText(Mutex<Vec<(&'static str, u64)>>);

impl ByText {
    fn add(&self, text: &'static str, v: u64) {
        // A poisoned lock holds whole counts either way.
        let mut sums = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match sums.iter_mut().find(|(t, _)| *t == text) {
            Some((_, n)) => *n += v,
            None => sums.push((text, v)),
        }
    }

    fn observe(&self, o: &dyn AsyncInstrument<u64>, label: &'static str) {
        let sums = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        for (text, n) in sums {
            o.observe(n, &[KeyValue::new(label, text)]);
        }
    }
}

/// The requests' sums by style, model and outcome, in the order first seen;
/// past the cardinality limit, one overflow sum.
#[derive(Debug, Default)]
struct Requests {
    sums: Mutex<Vec<(String, String, &'static str, u64)>>,
    overflow: Plain,
}

impl Requests {
    fn add(&self, style: &str, model: &str, outcome: &'static str) {
        let mut sums = self.sums.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = sums
            .iter_mut()
            .find(|(s, m, o, _)| *o == outcome && s == style && m == model)
        {
            s.3 += 1;
            return;
        }
        if sums.len() < CARDINALITY_LIMIT {
            sums.push((style.to_string(), model.to_string(), outcome, 1));
            return;
        }
        drop(sums);
        self.overflow.add(1);
    }

    fn observe(&self, o: &dyn AsyncInstrument<u64>) {
        let sums = self.sums.lock().unwrap_or_else(|p| p.into_inner());
        for (style, model, outcome, n) in sums.iter() {
            o.observe(
                *n,
                &[
                    KeyValue::new("style", attributes::shared(style)),
                    KeyValue::new("model", attributes::shared(model)),
                    KeyValue::new("outcome", *outcome),
                ],
            );
        }
        drop(sums);
        self.overflow
            .observe(o, &[KeyValue::new("otel.metric.overflow", true)]);
    }
}

/// Every counter's sums.
#[derive(Debug, Default)]
pub(super) struct Tally {
    requests: Requests,
    answers: ByText,
    errors: ByText,
    warnings: Plain,
    cache_hits: Plain,
    input_tokens: Plain,
    output_tokens: Plain,
    /// US dollars, as the bits of an `f64`.
    cost_usd: AtomicU64,
    cost_seen: AtomicBool,
}

impl Tally {
    /// Counts one call or warning (the histogram of durations stays the
    /// SDK's: its buckets are its own).
    pub(super) fn record(&self, e: &Count<'_>) {
        if e.warning {
            self.warnings.add(1);
            return;
        }
        let outcome = if e.ok { "ok" } else { "error" };
        self.requests.add(e.style, e.model, outcome);
        e.answers.each(|t| self.answers.add(t, 1));
        if let Some(kind) = e.error_kind {
            self.errors.add(kind.as_str(), 1);
        }
        if e.cache_hit {
            self.cache_hits.add(1);
        }
        self.input_tokens.add(e.input_tokens.max(0) as u64);
        self.output_tokens.add(e.output_tokens.max(0) as u64);
        if let Some(usd) = e.cost.filter(|c| c.is_finite() && *c > 0.0) {
            let _ = self
                .cost_usd
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                    Some((f64::from_bits(bits) + usd).to_bits())
                });
            if !self.cost_seen.load(Ordering::Relaxed) {
                self.cost_seen.store(true, Ordering::Relaxed);
            }
        }
    }
}

/// The SDK's observable counters over a [`Tally`]: kept alive with it.
pub(super) struct Counters {
    _u64: Vec<ObservableCounter<u64>>,
    _f64: ObservableCounter<f64>,
}

impl Counters {
    /// The counters of `tally`, under the names and descriptions the call
    /// metrics always had.
    pub(super) fn new(m: &Meter, tally: &Arc<Tally>) -> Counters {
        type Read = fn(&Tally, &dyn AsyncInstrument<u64>);
        let counter = |name: &'static str, what: &'static str, read: Read| {
            let t = tally.clone();
            m.u64_observable_counter(name)
                .with_description(what)
                .with_callback(move |o| read(&t, o))
                .build()
        };
        let u64s = vec![
            counter(
                "toolnexus.requests",
                "Calls evaluated, by style, model and outcome.",
                |t, o| t.requests.observe(o),
            ),
            counter(
                "toolnexus.answers",
                "Answers returned, by answer type.",
                |t, o| t.answers.observe(o, "type"),
            ),
            counter(
                "toolnexus.errors",
                "Failed calls, by error kind.",
                |t, o| t.errors.observe(o, "kind"),
            ),
            counter(
                "toolnexus.warnings",
                "Warnings about questions and answers.",
                |t, o| t.warnings.observe(o, &[]),
            ),
            counter(
                "toolnexus.cache_hits",
                "Calls answered from a cache.",
                |t, o| t.cache_hits.observe(o, &[]),
            ),
            counter("toolnexus.tokens", "Tokens spent, by direction.", |t, o| {
                t.input_tokens
                    .observe(o, &[KeyValue::new("direction", "input")]);
                t.output_tokens
                    .observe(o, &[KeyValue::new("direction", "output")]);
            }),
        ];
        let t = tally.clone();
        let cost = m
            .f64_observable_counter("toolnexus.cost_usd")
            .with_description("Known cost of the calls in US dollars.")
            .with_callback(move |o| {
                if t.cost_seen.load(Ordering::Relaxed) {
                    o.observe(f64::from_bits(t.cost_usd.load(Ordering::Relaxed)), &[]);
                }
            })
            .build();
        Counters {
            _u64: u64s,
            _f64: cost,
        }
    }
}

#[cfg(test)]
#[path = "tally_tests.rs"]
mod tests;
