//! The call metrics, counted from [`MetricEvent`]s and rendered as Prometheus
//! text (SPEC §25): what `serve --metrics` answers on `GET /metrics`, with
//! the names the OpenTelemetry export uses (`otel` feature).
//!
//! | Prometheus name | kind | labels | OpenTelemetry instrument |
//! |---|---|---|---|
//! | `toolnexus_requests_total` | counter | `style`, `model`, `outcome` | `toolnexus.requests` |
//! | `toolnexus_answers_total` | counter | `type` | `toolnexus.answers` |
//! | `toolnexus_errors_total` | counter | `kind` | `toolnexus.errors` |
//! | `toolnexus_warnings_total` | counter | | `toolnexus.warnings` |
//! | `toolnexus_cache_hits_total` | counter | | `toolnexus.cache_hits` |
//! | `toolnexus_tokens_total` | counter | `direction` (`input`, `output`) | `toolnexus.tokens` |
//! | `toolnexus_cost_usd_total` | counter | | `toolnexus.cost_usd` |
//! | `toolnexus_request_duration_seconds` | histogram | | `toolnexus.request.duration` (s) |

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use crate::classifier::{MetricEvent, MetricFn, MetricName, MetricStatus};

/// The upper bounds (seconds) of the latency histogram's buckets.
pub const DURATION_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Counts the calls of every classifier it is given to, and renders them as
/// Prometheus text. Cheap to clone (an `Arc`); a clone counts into the same
/// figures.
///
/// ```
/// use std::collections::BTreeMap;
/// use std::sync::Arc;
/// use toolnexus::classifier::{ClassifierOptions, ClassifierStyle, ClassifierUsage, Decision,
///     DecisionAnswer, EvaluateFn, NoulAnswer, NoulQuestion, Questions, create_classifier};
/// use toolnexus::metrics::Metrics;
///
/// let metrics = Metrics::new();
/// let evaluate: EvaluateFn = Arc::new(|_, _, _| Box::pin(async {
///     Ok(Decision {
///         model: "rules-v1".into(),
///         answers: BTreeMap::from([("ok".into(), DecisionAnswer::Noul(NoulAnswer { noul: 0.9 }))]),
///         usage: ClassifierUsage { input_tokens: 3, output_tokens: 1, ..Default::default() },
///         calibrated: false,
///     })
/// }));
/// let judge = create_classifier(ClassifierOptions {
///     style: ClassifierStyle::Custom,
///     model: "rules-v1".into(),
///     evaluate: Some(evaluate),
///     ..Default::default()
/// })?
/// .with_metrics(metrics.metric_fn());
/// let mut questions = Questions::new();
/// questions.insert("ok".into(), NoulQuestion { instructions: "Is it fine?".into(), criteria: None }.into());
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// judge.evaluate(serde_json::json!({"x": 1}), &questions).await?;
/// # Ok::<(), toolnexus::classifier::ClassifierError>(()) })?;
///
/// let text = metrics.render();
/// assert!(text.contains("toolnexus_requests_total{style=\"custom\",model=\"rules-v1\",outcome=\"ok\"} 1\n"));
/// assert!(text.contains("toolnexus_answers_total{type=\"noul\"} 1\n"));
/// assert!(text.contains("toolnexus_tokens_total{direction=\"input\"} 3\n"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default)]
pub struct Metrics {
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    requests: BTreeMap<(String, String, &'static str), u64>,
    answers: BTreeMap<&'static str, u64>,
    errors: BTreeMap<&'static str, u64>,
    warnings: u64,
    cache_hits: u64,
    input_tokens: u64,
    output_tokens: u64,
    cost_usd: f64,
    /// Per bucket of [`DURATION_BUCKETS`], the calls at most that long (not
    /// yet cumulative).
    buckets: [u64; DURATION_BUCKETS.len()],
    duration_sum: f64,
    duration_count: u64,
}

impl Metrics {
    /// Empty figures.
    ///
    /// ```
    /// let text = toolnexus::metrics::Metrics::new().render();
    /// assert!(text.contains("toolnexus_cache_hits_total 0\n"));
    /// ```
    pub fn new() -> Metrics {
        Metrics::default()
    }

    /// Counts one event: a call (`classifier.evaluate`) or a warning.
    ///
    /// ```
    /// use toolnexus::metrics::Metrics;
    /// let m = Metrics::new();
    /// // Usually fed by a classifier: `judge.with_metrics(m.metric_fn())`.
    /// assert!(m.render().contains("toolnexus_warnings_total 0\n"));
    /// ```
    pub fn record(&self, e: &MetricEvent) {
        // A poisoned lock only means a panic elsewhere mid-update: the
        // figures are still counts, so keep counting into them.
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if e.name == MetricName::Warning || e.status == MetricStatus::Warning {
            s.warnings += 1;
            return;
        }
        let outcome = match e.status {
            MetricStatus::Ok => "ok",
            _ => "error",
        };
        *s.requests
            .entry((e.style.clone(), e.model.clone(), outcome))
            .or_default() += 1;
        for t in &e.answers {
            *s.answers.entry(t).or_default() += 1;
        }
        if let Some(kind) = e.error_kind {
            *s.errors.entry(kind.as_str()).or_default() += 1;
        }
        if e.cache_hit {
            s.cache_hits += 1;
        }
        s.input_tokens += e.input_tokens.max(0) as u64;
        s.output_tokens += e.output_tokens.max(0) as u64;
        if let Some(usd) = e.cost.filter(|c| c.is_finite() && *c > 0.0) {
            s.cost_usd += usd;
        }
        let secs = e.duration.as_secs_f64();
        if let Some(i) = DURATION_BUCKETS.iter().position(|b| secs <= *b) {
            s.buckets[i] += 1;
        }
        s.duration_sum += secs;
        s.duration_count += 1;
    }

    /// A [`MetricFn`] that counts into these figures, for
    /// [`Classifier::with_metrics`](crate::classifier::Classifier::with_metrics)
    /// or `ClassifierOptions::on_metric`.
    ///
    /// ```
    /// let m = toolnexus::metrics::Metrics::new();
    /// let f = m.metric_fn();
    /// # let _ = f;
    /// ```
    pub fn metric_fn(&self) -> MetricFn {
        let me = self.clone();
        Arc::new(move |e: &MetricEvent| me.record(e))
    }

    /// A [`MetricFn`] that counts into these figures and then hands the event
    /// to `next` (a classifier's own receiver, kept).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use toolnexus::classifier::MetricEvent;
    /// let m = toolnexus::metrics::Metrics::new();
    /// let f = m.metric_fn_then(Some(Arc::new(|e: &MetricEvent| println!("{}", e.name))));
    /// # let _ = f;
    /// ```
    pub fn metric_fn_then(&self, next: Option<MetricFn>) -> MetricFn {
        let me = self.clone();
        match next {
            None => self.metric_fn(),
            Some(next) => Arc::new(move |e: &MetricEvent| {
                me.record(e);
                next(e)
            }),
        }
    }

    /// The figures in the Prometheus text exposition format (version 0.0.4):
    /// `# HELP` and `# TYPE` for every metric, labels escaped.
    ///
    /// ```
    /// let text = toolnexus::metrics::Metrics::new().render();
    /// assert!(text.starts_with("# HELP toolnexus_requests_total "));
    /// assert!(text.contains("toolnexus_request_duration_seconds_bucket{le=\"+Inf\"} 0\n"));
    /// ```
    pub fn render(&self) -> String {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = String::new();
        header(
            &mut out,
            "toolnexus_requests_total",
            "counter",
            "Calls evaluated, by style, model and outcome.",
        );
        for ((style, model, outcome), n) in &s.requests {
            let _ = writeln!(
                out,
                "toolnexus_requests_total{{style=\"{}\",model=\"{}\",outcome=\"{outcome}\"}} {n}",
                escape(style),
                escape(model)
            );
        }
        header(
            &mut out,
            "toolnexus_answers_total",
            "counter",
            "Answers returned, by answer type.",
        );
        for (t, n) in &s.answers {
            let _ = writeln!(out, "toolnexus_answers_total{{type=\"{t}\"}} {n}");
        }
        header(
            &mut out,
            "toolnexus_errors_total",
            "counter",
            "Failed calls, by error kind.",
        );
        for (k, n) in &s.errors {
            let _ = writeln!(out, "toolnexus_errors_total{{kind=\"{k}\"}} {n}");
        }
        single(
            &mut out,
            "toolnexus_warnings_total",
            "Warnings about questions and answers.",
            s.warnings as f64,
        );
        single(
            &mut out,
            "toolnexus_cache_hits_total",
            "Calls answered from a cache.",
            s.cache_hits as f64,
        );
        header(
            &mut out,
            "toolnexus_tokens_total",
            "counter",
            "Tokens spent, by direction.",
        );
        let _ = writeln!(
            out,
            "toolnexus_tokens_total{{direction=\"input\"}} {}",
            s.input_tokens
        );
        let _ = writeln!(
            out,
            "toolnexus_tokens_total{{direction=\"output\"}} {}",
            s.output_tokens
        );
        single(
            &mut out,
            "toolnexus_cost_usd_total",
            "Known cost of the calls in US dollars.",
            s.cost_usd,
        );
        header(
            &mut out,
            "toolnexus_request_duration_seconds",
            "histogram",
            "Wall time of a call.",
        );
        let mut cumulative = 0;
        for (bound, n) in DURATION_BUCKETS.iter().zip(s.buckets) {
            cumulative += n;
            let _ = writeln!(
                out,
                "toolnexus_request_duration_seconds_bucket{{le=\"{}\"}} {cumulative}",
                number(*bound)
            );
        }
        let _ = writeln!(
            out,
            "toolnexus_request_duration_seconds_bucket{{le=\"+Inf\"}} {}",
            s.duration_count
        );
        let _ = writeln!(
            out,
            "toolnexus_request_duration_seconds_sum {}",
            number(s.duration_sum)
        );
        let _ = writeln!(
            out,
            "toolnexus_request_duration_seconds_count {}",
            s.duration_count
        );
        out
    }
}

/// The content type of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn single(out: &mut String, name: &str, help: &str, value: f64) {
    header(out, name, "counter", help);
    let _ = writeln!(out, "{name} {}", number(value));
}

/// A sample value as Prometheus reads it: integers without a fraction.
fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// A label value escaped as the exposition format asks: backslash, double
/// quote and line feed.
fn escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests;
