use std::time::Duration;

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};

use super::*;
use crate::classifier::{ErrorKind, MetricEvent, MetricName, MetricStatus};

/// Keeps each collection as text: every series of every sum, with its
/// metric's name, description, unit, kind, temporality and labels.
#[derive(Debug, Clone, Default)]
struct Seen(Arc<Mutex<Vec<Vec<String>>>>);

impl PushMetricExporter for Seen {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        let mut lines = Vec::new();
        for sm in metrics.scope_metrics() {
            for m in sm.metrics() {
                let head = format!("{} | {} | {}", m.name(), m.description(), m.unit());
                let mut add = |kind: String, labels: Vec<String>, value: String| {
                    let mut labels = labels;
                    labels.sort();
                    lines.push(format!("{head} | {kind} | {labels:?} = {value}"));
                };
                let label = |kv: &KeyValue| format!("{}={}", kv.key, kv.value);
                match m.data() {
                    AggregatedMetrics::U64(MetricData::Sum(s)) => {
                        let kind = format!("u64 sum {:?} {}", s.temporality(), s.is_monotonic());
                        for p in s.data_points() {
                            let labels = p.attributes().map(label).collect();
                            add(kind.clone(), labels, p.value().to_string());
                        }
                    }
                    AggregatedMetrics::F64(MetricData::Sum(s)) => {
                        let kind = format!("f64 sum {:?} {}", s.temporality(), s.is_monotonic());
                        for p in s.data_points() {
                            let labels = p.attributes().map(label).collect();
                            add(kind.clone(), labels, p.value().to_string());
                        }
                    }
                    AggregatedMetrics::F64(MetricData::Histogram(h)) => {
                        let kind = format!("f64 histogram {:?}", h.temporality());
                        for p in h.data_points() {
                            let labels = p.attributes().map(label).collect();
                            let counts: Vec<u64> = p.bucket_counts().collect();
                            add(kind.clone(), labels, format!("{} {counts:?}", p.count()));
                        }
                    }
                    other => add(format!("{other:?}"), Vec::new(), String::new()),
                }
            }
        }
        lines.sort();
        self.0.lock().expect("not poisoned").push(lines);
        Ok(())
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }

    fn temporality(&self) -> Temporality {
        Temporality::Cumulative
    }
}

/// The counters as they were: one synchronous SDK `add` per count.
fn synchronous(m: &opentelemetry::metrics::Meter) -> impl Fn(&MetricEvent) {
    let counter =
        |name: &'static str, what: &'static str| m.u64_counter(name).with_description(what).build();
    let requests = counter(
        "toolnexus.requests",
        "Calls evaluated, by style, model and outcome.",
    );
    let answers = counter("toolnexus.answers", "Answers returned, by answer type.");
    let errors = counter("toolnexus.errors", "Failed calls, by error kind.");
    let warnings = counter(
        "toolnexus.warnings",
        "Warnings about questions and answers.",
    );
    let cache_hits = counter("toolnexus.cache_hits", "Calls answered from a cache.");
    let tokens = counter("toolnexus.tokens", "Tokens spent, by direction.");
    let cost_usd = m
        .f64_counter("toolnexus.cost_usd")
        .with_description("Known cost of the calls in US dollars.")
        .build();
    move |e: &MetricEvent| {
        if e.name == MetricName::Warning || e.status == MetricStatus::Warning {
            warnings.add(1, &[]);
            return;
        }
        let outcome = if e.status == MetricStatus::Ok {
            "ok"
        } else {
            "error"
        };
        requests.add(
            1,
            &[
                KeyValue::new("style", e.style.clone()),
                KeyValue::new("model", e.model.clone()),
                KeyValue::new("outcome", outcome),
            ],
        );
        for t in &e.answers {
            answers.add(1, &[KeyValue::new("type", *t)]);
        }
        if let Some(kind) = e.error_kind {
            errors.add(1, &[KeyValue::new("kind", kind.as_str())]);
        }
        if e.cache_hit {
            cache_hits.add(1, &[]);
        }
        tokens.add(
            e.input_tokens.max(0) as u64,
            &[KeyValue::new("direction", "input")],
        );
        tokens.add(
            e.output_tokens.max(0) as u64,
            &[KeyValue::new("direction", "output")],
        );
        if let Some(usd) = e.cost.filter(|c| c.is_finite() && *c > 0.0) {
            cost_usd.add(usd, &[]);
        }
    }
}

fn event(model: &str, status: MetricStatus) -> MetricEvent {
    MetricEvent {
        name: MetricName::Evaluate,
        model: model.into(),
        call_name: String::new(),
        status,
        duration: Duration::from_millis(40),
        input_tokens: 0,
        output_tokens: 0,
        cost: None,
        cost_source: None,
        error: None,
        key: None,
        request_id: None,
        cache_hit: false,
        style: "systemone".into(),
        error_kind: None,
        answers: Vec::new(),
    }
}

/// What each collection of `record`'s counters holds after each of `steps`.
fn collections(steps: &[Vec<MetricEvent>], tally: bool) -> Vec<Vec<String>> {
    let seen = Seen::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(seen.clone()).build())
        .build();
    let m = provider.meter("toolnexus");
    let t = Arc::new(Tally::default());
    let _counters = tally.then(|| Counters::new(&m, &t));
    let sync = (!tally).then(|| synchronous(&m));
    for events in steps {
        for e in events {
            match &sync {
                Some(record) => record(e),
                None => t.record(&Count::of(e)),
            }
        }
        provider.force_flush().expect("collected");
    }
    provider.shutdown().expect("shut down");
    seen.0.lock().expect("not poisoned").clone()
}

/// The same collections, or the lines that differ in the first that does not.
fn same(now: &[Vec<String>], before: &[Vec<String>]) {
    assert_eq!(now.len(), before.len(), "as many collections");
    for (i, (a, b)) in now.iter().zip(before).enumerate() {
        let only_now: Vec<_> = a.iter().filter(|l| !b.contains(l)).take(5).collect();
        let only_before: Vec<_> = b.iter().filter(|l| !a.contains(l)).take(5).collect();
        assert!(
            a == b,
            "collection {i}: now only {only_now:?}; before only {only_before:?}"
        );
    }
}

#[test]
fn the_sums_are_those_the_synchronous_counters_made() {
    let zero = event("jev-1", MetricStatus::Ok);
    let answered = MetricEvent {
        input_tokens: 120,
        output_tokens: 3,
        answers: vec!["noul", "choice"],
        cost: Some(0.002),
        ..event("jev-1", MetricStatus::Ok)
    };
    let failed = MetricEvent {
        error_kind: Some(ErrorKind::Timeout),
        input_tokens: -4,
        ..event("jev-2", MetricStatus::Error)
    };
    let cached = MetricEvent {
        cache_hit: true,
        answers: vec!["score"],
        cost: Some(f64::NAN),
        ..event("jev-1", MetricStatus::Ok)
    };
    let warning = MetricEvent {
        name: MetricName::Warning,
        ..event("jev-1", MetricStatus::Warning)
    };
    let steps = vec![
        Vec::new(),
        // Zero tokens and nothing else: the token series exist, at 0.
        vec![zero],
        vec![answered.clone(), failed, cached],
        vec![warning, answered],
    ];
    let before = collections(&steps, false);
    let now = collections(&steps, true);
    assert!(before.len() >= steps.len(), "a collection per step");
    same(&now, &before);
    assert!(
        now[0]
            .iter()
            .any(|l| l.contains("direction=input") && l.ends_with("= 0"))
    );
}

#[test]
fn requests_past_the_cardinality_limit_overflow_as_the_sdk_does() {
    let steps = vec![
        (0..CARDINALITY_LIMIT + 5)
            .map(|i| event(&format!("m{i}"), MetricStatus::Ok))
            .collect::<Vec<_>>(),
    ];
    let before = collections(&steps, false);
    let now = collections(&steps, true);
    let requests = |c: &Vec<Vec<String>>| {
        c[0].iter()
            .filter(|l| l.starts_with("toolnexus.requests"))
            .cloned()
            .collect::<Vec<_>>()
    };
    same(&[requests(&now)], &[requests(&before)]);
    assert!(
        requests(&now)
            .iter()
            .any(|l| l.contains("otel.metric.overflow=true"))
    );
}
