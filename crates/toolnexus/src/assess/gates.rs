//! `--min key.metric=value` / `--max ...` gates over a summary: a CI regression
//! gate for prompts and models.
//!
//! A gate names a question key and one of its figures (the fields of
//! [`QuestionSummary`]: see [`METRICS`]); the key `gate` names the row-level
//! gate ([`GateSummary`], metrics `accuracy` and `n`); the key `run` names the
//! run's cost and latency ([`RUN_METRICS`]). [`check_gates`] lists every gate
//! that does not hold; [`gate_outcomes`] gives every gate's figure, and
//! [`junit_xml`] writes them as JUnit XML for CI systems. A figure that is
//! undefined for the run (an AUROC with one outcome only, a score metric on a
//! choice question, a question with no answered row, a cost some row did not
//! report) or a question the summary does not have is a failure too, and says
//! so: a gate never passes on a missing number.
//!
//! ```
//! use toolnexus::assess::gates::{Gate, check_gates};
//! # use std::collections::BTreeMap;
//! # use serde_json::json;
//! # use toolnexus::assess::*;
//! # use toolnexus::classifier::Decision;
//! # use toolnexus::judge::{noul, questions};
//! # let qs = questions(&[noul("spam", "Is it spam?")])?;
//! # let row = |id: &str, p: f64, y: bool| Row::new(id, BTreeMap::from([("spam".to_string(), Gold::Noul(y))]),
//! #     Outcome::Decided(Decision::from_value(&json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": p}}})).unwrap()));
//! # let run = Run::new(qs, vec![row("a", 0.9, true), row("b", 0.2, false), row("c", 0.7, false)]);
//! let summary = summarize(&run, &SummaryOptions::default());
//! let gates = [Gate::parse_min("spam.accuracy=0.9")?, Gate::parse_max("spam.brier=0.5")?];
//! let failures = check_gates(&summary, &gates);
//! assert_eq!(failures.len(), 1);
//! assert_eq!(failures[0].to_string(), "spam.accuracy = 0.667 is below the --min 0.9");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;

use super::error::{AssessError, AssessErrorKind};
use super::summary::{GateSummary, QuestionSummary, Summary};

/// The metric names a gate can name on a question, in the order of
/// [`QuestionSummary`]'s fields.
///
/// ```
/// assert!(toolnexus::assess::gates::METRICS.contains(&"adaptive_ece"));
/// ```
pub const METRICS: [&str; 14] = [
    "n",
    "accuracy",
    "log_loss",
    "brier",
    "ece",
    "adaptive_ece",
    "mce",
    "auroc",
    "macro_f1",
    "within_one",
    "mae",
    "kappa",
    "near_uniform_rate",
    "abstention_rate",
];

/// The metric names a gate can name on the row gate (key [`GATE_KEY`]).
///
/// ```
/// assert_eq!(toolnexus::assess::gates::GATE_METRICS, ["accuracy", "n"]);
/// ```
pub const GATE_METRICS: [&str; 2] = ["accuracy", "n"];

/// The metric names a gate can name on the run as a whole (key [`RUN_KEY`]):
/// the cost per answered row and in total (US dollars; unknown when any
/// answered row did not report its cost) and the latency quantiles (ms).
///
/// ```
/// assert!(toolnexus::assess::gates::RUN_METRICS.contains(&"latency_p95_ms"));
/// ```
pub const RUN_METRICS: [&str; 4] = [
    "cost_per_row",
    "cost_total",
    "latency_p50_ms",
    "latency_p95_ms",
];

/// The key that addresses the run's cost and latency instead of a question.
///
/// ```
/// use toolnexus::assess::gates::Gate;
/// let g = Gate::parse_max("run.cost_per_row=0.0005")?;
/// assert_eq!((g.key.as_str(), g.metric.as_str()), ("run", "cost_per_row"));
/// # Ok::<(), toolnexus::assess::AssessError>(())
/// ```
pub const RUN_KEY: &str = "run";

/// The key that addresses the row-level gate instead of a question.
///
/// ```
/// assert_eq!(toolnexus::assess::gates::GATE_KEY, "gate");
/// ```
pub const GATE_KEY: &str = "gate";

/// Which side of the value a figure must stay on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// The figure must be at least the value (`--min`).
    Min,
    /// The figure must be at most the value (`--max`).
    Max,
}

impl Bound {
    /// The flag that sets it: `--min` or `--max`.
    ///
    /// ```
    /// assert_eq!(toolnexus::assess::gates::Bound::Max.flag(), "--max");
    /// ```
    pub fn flag(self) -> &'static str {
        match self {
            Bound::Min => "--min",
            Bound::Max => "--max",
        }
    }
}

/// One gate: `key.metric` must stay at or above (`Min`) or at or below (`Max`) `value`.
///
/// ```
/// use toolnexus::assess::gates::{Bound, Gate};
/// let g = Gate::parse_max("desk.ece=0.05")?;
/// assert_eq!((g.key.as_str(), g.metric.as_str(), g.bound, g.value), ("desk", "ece", Bound::Max, 0.05));
/// assert_eq!(g.to_string(), "--max desk.ece=0.05");
/// # Ok::<(), toolnexus::assess::AssessError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    /// The question key, or [`GATE_KEY`] for the row gate.
    pub key: String,
    /// The metric: one of [`METRICS`] (or [`GATE_METRICS`] for the row gate).
    pub metric: String,
    /// Whether the figure must stay above or below `value`.
    pub bound: Bound,
    /// The bound.
    pub value: f64,
}

impl Gate {
    /// Parses `key.metric=value` as a `--min` gate. Errors name the text and,
    /// for an unknown metric, list the metric names.
    ///
    /// ```
    /// use toolnexus::assess::gates::Gate;
    /// assert_eq!(Gate::parse_min("spam.accuracy=0.9")?.value, 0.9);
    /// let e = Gate::parse_min("spam.acc=0.9").unwrap_err();
    /// assert!(e.to_string().starts_with("--min spam.acc=0.9: unknown metric \"acc\" (metrics: n, accuracy, log_loss,"), "{e}");
    /// # Ok::<(), toolnexus::assess::AssessError>(())
    /// ```
    pub fn parse_min(text: &str) -> Result<Gate, AssessError> {
        Gate::parse(text, Bound::Min)
    }

    /// Parses `key.metric=value` as a `--max` gate.
    ///
    /// ```
    /// use toolnexus::assess::gates::Gate;
    /// let e = Gate::parse_max("spam.ece").unwrap_err();
    /// assert_eq!(e.to_string(), "--max spam.ece: want key.metric=value, e.g. spam.ece=0.05");
    /// # Ok::<(), toolnexus::assess::AssessError>(())
    /// ```
    pub fn parse_max(text: &str) -> Result<Gate, AssessError> {
        Gate::parse(text, Bound::Max)
    }

    /// Parses `key.metric=value` with the given bound. The key is everything
    /// before the last `.` of the left-hand side, so keys may hold dots.
    ///
    /// ```
    /// use toolnexus::assess::gates::{Bound, Gate};
    /// let g = Gate::parse("v2.spam.n=100", Bound::Min)?;
    /// assert_eq!((g.key.as_str(), g.metric.as_str()), ("v2.spam", "n"));
    /// let e = Gate::parse("gate.ece=0.1", Bound::Max).unwrap_err();
    /// assert_eq!(e.to_string(), "--max gate.ece=0.1: unknown metric \"ece\" for the row gate (metrics: accuracy, n)");
    /// # Ok::<(), toolnexus::assess::AssessError>(())
    /// ```
    pub fn parse(text: &str, bound: Bound) -> Result<Gate, AssessError> {
        let flag = bound.flag();
        let bad = |why: String| {
            AssessError::new(AssessErrorKind::Invalid, format!("{flag} {text}: {why}"))
        };
        let example = match bound {
            Bound::Min => "spam.accuracy=0.9",
            Bound::Max => "spam.ece=0.05",
        };
        let shape = || bad(format!("want key.metric=value, e.g. {example}"));
        let (lhs, value) = text.split_once('=').ok_or_else(shape)?;
        let (key, metric) = lhs.trim().rsplit_once('.').ok_or_else(shape)?;
        let (key, metric, value) = (key.trim(), metric.trim(), value.trim());
        if key.is_empty() {
            return Err(bad("no question key before the metric".to_string()));
        }
        if metric.is_empty() {
            return Err(shape());
        }
        if key == RUN_KEY {
            if !RUN_METRICS.contains(&metric) {
                return Err(bad(format!(
                    "unknown metric {metric:?} for the run (metrics: {})",
                    RUN_METRICS.join(", ")
                )));
            }
        } else if key == GATE_KEY {
            if !GATE_METRICS.contains(&metric) {
                return Err(bad(format!(
                    "unknown metric {metric:?} for the row gate (metrics: {})",
                    GATE_METRICS.join(", ")
                )));
            }
        } else if !METRICS.contains(&metric) {
            return Err(bad(format!(
                "unknown metric {metric:?} (metrics: {})",
                METRICS.join(", ")
            )));
        }
        let value: f64 = value
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| bad(format!("{value:?} is not a number")))?;
        Ok(Gate {
            key: key.to_string(),
            metric: metric.to_string(),
            bound,
            value,
        })
    }

    /// Whether a defined figure satisfies the gate (bounds are inclusive).
    ///
    /// ```
    /// use toolnexus::assess::gates::Gate;
    /// let g = Gate::parse_min("spam.accuracy=0.9")?;
    /// assert!(g.holds(0.9) && !g.holds(0.89));
    /// # Ok::<(), toolnexus::assess::AssessError>(())
    /// ```
    pub fn holds(&self, figure: f64) -> bool {
        match self.bound {
            Bound::Min => figure >= self.value,
            Bound::Max => figure <= self.value,
        }
    }
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}.{}={}",
            self.bound.flag(),
            self.key,
            self.metric,
            self.value
        )
    }
}

/// A gate that does not hold, with the figure it saw. Its `Display` is one
/// line naming the gate and the figures.
///
/// ```
/// # use toolnexus::assess::gates::{Gate, check_gates};
/// # use toolnexus::assess::*;
/// # let summary = summarize(&Run::new(Default::default(), Vec::new()), &SummaryOptions::default());
/// let f = &check_gates(&summary, &[Gate::parse_min("spam.accuracy=0.9")?])[0];
/// assert_eq!(f.figure, None);
/// assert_eq!(f.to_string(), "spam.accuracy: no question \"spam\" in this run (it has none), so the --min 0.9 cannot hold");
/// # Ok::<(), toolnexus::assess::AssessError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct GateFailure {
    /// The gate.
    pub gate: Gate,
    /// The figure measured, when it is defined.
    pub figure: Option<f64>,
    /// Why there is no figure, when there is none.
    pub undefined: Option<String>,
}

impl fmt::Display for GateFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let g = &self.gate;
        let name = format!("{}.{}", g.key, g.metric);
        let bound = number(g.value);
        match (self.figure, &self.undefined) {
            (Some(x), _) => {
                let side = match g.bound {
                    Bound::Min => "below",
                    Bound::Max => "above",
                };
                write!(
                    f,
                    "{name} = {} is {side} the {} {bound}",
                    figure_text(&g.metric, x, g.value),
                    g.bound.flag()
                )
            }
            (None, Some(why)) => write!(
                f,
                "{name}: {why}, so the {} {bound} cannot hold",
                g.bound.flag()
            ),
            (None, None) => write!(
                f,
                "{name} is undefined, so the {} {bound} cannot hold",
                g.bound.flag()
            ),
        }
    }
}

/// `x` with three decimals (an integer for `n`), with more digits when three
/// would print the bound itself.
fn figure_text(metric: &str, x: f64, bound: f64) -> String {
    if metric == "n" {
        return format!("{}", x as u64);
    }
    // Dollars per row can be millionths: four significant digits.
    let decimals = if metric.starts_with("cost") && x.abs() > 0.0 && x.abs() < 1.0 {
        (3 - x.abs().log10().floor() as i32).clamp(3, 12) as usize
    } else {
        3
    };
    let short = trim(format!("{x:.decimals$}"));
    if short == trim(format!("{bound:.decimals$}")) || short.parse::<f64>() == Ok(bound) {
        number(x)
    } else {
        short
    }
}

fn trim(mut s: String) -> String {
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    if s == "-0" { "0".to_string() } else { s }
}

/// The shortest text that reads back as `x`.
fn number(x: f64) -> String {
    format!("{x}")
}

/// The question kinds a metric is defined for, when it is not every kind.
fn applies_to(metric: &str) -> Option<&'static str> {
    match metric {
        "auroc" => Some("noul"),
        "macro_f1" => Some("choice"),
        "within_one" | "mae" | "kappa" => Some("score"),
        "near_uniform_rate" => Some("choice and score"),
        _ => None,
    }
}

/// The figure `metric` names on a question summary: `None` when the name is not
/// a metric, `Some(None)` when the figure is undefined for this question.
///
/// ```
/// use toolnexus::assess::gates::question_metric;
/// # use toolnexus::assess::*;
/// # use std::collections::BTreeMap;
/// # use serde_json::json;
/// # use toolnexus::classifier::Decision;
/// # use toolnexus::judge::{noul, questions};
/// # let qs = questions(&[noul("spam", "Is it spam?")])?;
/// # let row = |id: &str, p: f64, y: bool| Row::new(id, BTreeMap::from([("spam".to_string(), Gold::Noul(y))]),
/// #     Outcome::Decided(Decision::from_value(&json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": p}}})).unwrap()));
/// # let run = Run::new(qs, vec![row("a", 0.9, true), row("b", 0.2, false)]);
/// let s = summarize(&run, &SummaryOptions::default());
/// let spam = s.question("spam").unwrap();
/// assert_eq!(question_metric(spam, "n"), Some(Some(2.0)));
/// assert_eq!(question_metric(spam, "mae"), Some(None), "a score metric on a noul question");
/// assert_eq!(question_metric(spam, "nope"), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn question_metric(q: &QuestionSummary, metric: &str) -> Option<Option<f64>> {
    let answered = q.n > 0;
    let always = |x: f64| Some(answered.then_some(x));
    match metric {
        "n" => Some(Some(q.n as f64)),
        "accuracy" => always(q.accuracy),
        "log_loss" => always(q.log_loss),
        "brier" => always(q.brier),
        "ece" => always(q.ece),
        "adaptive_ece" => always(q.adaptive_ece),
        "mce" => always(q.mce),
        "auroc" => Some(q.auroc),
        "macro_f1" => Some(q.macro_f1),
        "within_one" => Some(q.within_one),
        "mae" => Some(q.mae),
        "kappa" => Some(q.kappa),
        "near_uniform_rate" => Some(q.near_uniform_rate),
        "abstention_rate" => Some(q.abstention_rate),
        _ => None,
    }
    .map(|x| x.filter(|v| v.is_finite()))
}

/// The figure `metric` names on the row gate (`accuracy` or `n`).
///
/// ```
/// use toolnexus::assess::gates::gate_metric;
/// # use toolnexus::assess::*;
/// # let s = summarize(&Run::new(Default::default(), Vec::new()), &SummaryOptions::default());
/// assert!(s.gate.is_none());
/// # let _ = gate_metric;
/// ```
pub fn gate_metric(g: &GateSummary, metric: &str) -> Option<Option<f64>> {
    match metric {
        "n" => Some(Some(g.n as f64)),
        "accuracy" => Some((g.n > 0 && g.accuracy.is_finite()).then_some(g.accuracy)),
        _ => None,
    }
}

/// Why a question's figure is undefined, in words.
fn why_undefined(q: &QuestionSummary, metric: &str) -> String {
    if q.n == 0 {
        return format!(
            "undefined: no labelled row of {:?} was answered ({} failed)",
            q.key, q.failed
        );
    }
    if let Some(kinds) = applies_to(metric)
        && !kinds.contains(q.kind.as_str())
    {
        return format!(
            "undefined: {:?} is a {} question and {metric} applies to {kinds}",
            q.key, q.kind
        );
    }
    match metric {
        "auroc" => "undefined: AUROC needs both outcomes among the gold labels".to_string(),
        "kappa" => {
            "undefined: kappa needs more than one level among gold and predicted".to_string()
        }
        "abstention_rate" => {
            "undefined: abstentions are counted only with bands (a thresholds file)".to_string()
        }
        _ => "undefined for this run".to_string(),
    }
}

/// The run's cost or latency figure `metric` names, or why it has none.
fn run_figure(summary: &Summary, metric: &str) -> Result<f64, String> {
    let c = &summary.cost;
    let answered = c.known_rows + c.unknown_rows;
    match metric {
        "cost_per_row" | "cost_total" => {
            if answered == 0 {
                return Err("undefined: no row of this run was answered".to_string());
            }
            if c.unknown_rows > 0 {
                return Err(format!(
                    "the cost is unknown: {} of {answered} answered rows did not report one",
                    c.unknown_rows
                ));
            }
            Ok(if metric == "cost_total" {
                c.known_total
            } else {
                c.known_total / answered as f64
            })
        }
        "latency_p50_ms" | "latency_p95_ms" => {
            let q = if metric == "latency_p50_ms" {
                summary.latency_p50_ms
            } else {
                summary.latency_p95_ms
            };
            q.filter(|x| x.is_finite())
                .ok_or_else(|| "undefined: no row of this run has a measured latency".to_string())
        }
        _ => Err(format!("the run has no metric {metric:?}")),
    }
}

/// The figure a gate reads on `summary`, or why there is none.
fn measure(summary: &Summary, gate: &Gate) -> Result<f64, String> {
    if gate.key == RUN_KEY {
        return run_figure(summary, &gate.metric);
    }
    if gate.key == GATE_KEY {
        return match &summary.gate {
            None => Err(
                "this run has no row gate (no row is labelled and answered on every gated question)"
                    .to_string(),
            ),
            Some(g) => match gate_metric(g, &gate.metric) {
                None => Err(format!("the row gate has no metric {:?}", gate.metric)),
                Some(None) => Err("undefined: the row gate has no rows".to_string()),
                Some(Some(x)) => Ok(x),
            },
        };
    }
    match summary.question(&gate.key) {
        None => {
            let keys: Vec<&str> = summary.questions.iter().map(|q| q.key.as_str()).collect();
            let has = if keys.is_empty() {
                "none".to_string()
            } else {
                keys.join(", ")
            };
            Err(format!(
                "no question {:?} in this run (it has {has})",
                gate.key
            ))
        }
        Some(q) => match question_metric(q, &gate.metric) {
            None => Err(format!("no metric {:?}", gate.metric)),
            Some(None) => Err(why_undefined(q, &gate.metric)),
            Some(Some(x)) => Ok(x),
        },
    }
}

/// One gate checked: the figure it read, and its failure when it does not
/// hold. Its `Display` is one line: the failure's, or the figure that holds.
///
/// ```
/// use toolnexus::assess::gates::{Gate, gate_outcomes};
/// # use toolnexus::assess::*;
/// # let summary = summarize(&Run::new(Default::default(), Vec::new()), &SummaryOptions::default());
/// let o = &gate_outcomes(&summary, &[Gate::parse_max("run.cost_total=1")?])[0];
/// assert!(!o.holds());
/// assert_eq!(o.to_string(), "run.cost_total: undefined: no row of this run was answered, so the --max 1 cannot hold");
/// # Ok::<(), toolnexus::assess::AssessError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct GateOutcome {
    /// The gate.
    pub gate: Gate,
    /// The figure measured, when it is defined.
    pub figure: Option<f64>,
    /// Why the gate does not hold; `None` when it holds.
    pub failure: Option<GateFailure>,
}

impl GateOutcome {
    /// Whether the gate holds.
    pub fn holds(&self) -> bool {
        self.failure.is_none()
    }
}

impl fmt::Display for GateOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.failure, self.figure) {
            (Some(failure), _) => failure.fmt(f),
            (None, Some(x)) => {
                let g = &self.gate;
                write!(
                    f,
                    "{}.{} = {} holds the {} {}",
                    g.key,
                    g.metric,
                    figure_text(&g.metric, x, g.value),
                    g.bound.flag(),
                    number(g.value)
                )
            }
            (None, None) => write!(f, "{} holds", self.gate),
        }
    }
}

/// Every gate checked on `summary`, in the order given.
///
/// ```
/// use toolnexus::assess::gates::{Gate, gate_outcomes};
/// # use std::collections::BTreeMap;
/// # use serde_json::json;
/// # use toolnexus::assess::*;
/// # use toolnexus::classifier::Decision;
/// # use toolnexus::judge::{noul, questions};
/// # let qs = questions(&[noul("spam", "Is it spam?")])?;
/// # let row = |id: &str, cost: f64| Row::new(id, BTreeMap::from([("spam".to_string(), Gold::Noul(true))]),
/// #     Outcome::Decided(Decision::from_value(&json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": 0.9}},
/// #         "usage": {"input_tokens": 300, "output_tokens": 0, "cost": cost}})).unwrap()));
/// # let run = Run::new(qs, vec![row("a", 0.00001), row("b", 0.00003)]);
/// let s = summarize(&run, &SummaryOptions::default());
/// let o = gate_outcomes(&s, &[Gate::parse_max("run.cost_per_row=0.00001")?]);
/// assert_eq!(o[0].figure, Some(0.00002));
/// assert_eq!(o[0].to_string(), "run.cost_per_row = 0.00002 is above the --max 0.00001");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn gate_outcomes(summary: &Summary, gates: &[Gate]) -> Vec<GateOutcome> {
    gates
        .iter()
        .map(|gate| {
            let (figure, failure) = match measure(summary, gate) {
                Ok(x) if gate.holds(x) => (Some(x), None),
                Ok(x) => (Some(x), Some((Some(x), None))),
                Err(why) => (None, Some((None, Some(why)))),
            };
            GateOutcome {
                gate: gate.clone(),
                figure,
                failure: failure.map(|(figure, undefined)| GateFailure {
                    gate: gate.clone(),
                    figure,
                    undefined,
                }),
            }
        })
        .collect()
}

/// Every gate that does not hold on `summary`, in the order given. An empty
/// list means every gate holds.
///
/// ```
/// use toolnexus::assess::gates::{Gate, check_gates};
/// # use toolnexus::assess::*;
/// # let summary = summarize(&Run::new(Default::default(), Vec::new()), &SummaryOptions::default());
/// let f = check_gates(&summary, &[Gate::parse_min("gate.accuracy=0.8")?]);
/// assert_eq!(f[0].to_string(), "gate.accuracy: this run has no row gate (no row is labelled and answered on every gated question), so the --min 0.8 cannot hold");
/// # Ok::<(), toolnexus::assess::AssessError>(())
/// ```
pub fn check_gates(summary: &Summary, gates: &[Gate]) -> Vec<GateFailure> {
    gate_outcomes(summary, gates)
        .into_iter()
        .filter_map(|o| o.failure)
        .collect()
}

/// The gates as JUnit XML, for CI systems: one `<testsuite>` per named run
/// (its file name), one `<testcase>` per gate, a `<failure>` whose message
/// says the figure and the bound (or why there is no figure) for each gate
/// that does not hold; a gate that holds says its figure in `<system-out>`.
/// Every text is escaped; characters XML 1.0 cannot hold become U+FFFD.
///
/// ```
/// use toolnexus::assess::gates::{Gate, gate_outcomes, junit_xml};
/// # use toolnexus::assess::*;
/// # let summary = summarize(&Run::new(Default::default(), Vec::new()), &SummaryOptions::default());
/// let outcomes = gate_outcomes(&summary, &[Gate::parse_min("gate.n=1")?]);
/// let xml = junit_xml(&[("runs/a&b.jsonl".to_string(), outcomes)]);
/// assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"toolnexus assess report\" tests=\"1\" failures=\"1\">"));
/// assert!(xml.contains("<testsuite name=\"runs/a&amp;b.jsonl\" tests=\"1\" failures=\"1\">"));
/// # Ok::<(), toolnexus::assess::AssessError>(())
/// ```
pub fn junit_xml(suites: &[(String, Vec<GateOutcome>)]) -> String {
    let count = |o: &[GateOutcome]| (o.len(), o.iter().filter(|g| !g.holds()).count());
    let (tests, failures) = suites.iter().fold((0, 0), |(t, f), (_, o)| {
        let (a, b) = count(o);
        (t + a, f + b)
    });
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x.push_str(&format!(
        "<testsuites name=\"toolnexus assess report\" tests=\"{tests}\" failures=\"{failures}\">\n"
    ));
    for (name, outcomes) in suites {
        let (tests, failures) = count(outcomes);
        let name = xml_escape(name);
        x.push_str(&format!(
            "  <testsuite name=\"{name}\" tests=\"{tests}\" failures=\"{failures}\">\n"
        ));
        for o in outcomes {
            let case = xml_escape(&o.gate.to_string());
            let said = xml_escape(&o.to_string());
            x.push_str(&format!(
                "    <testcase classname=\"{name}\" name=\"{case}\">\n"
            ));
            if o.holds() {
                x.push_str(&format!("      <system-out>{said}</system-out>\n"));
            } else {
                x.push_str(&format!(
                    "      <failure type=\"gate\" message=\"{said}\">{said}</failure>\n"
                ));
            }
            x.push_str("    </testcase>\n");
        }
        x.push_str("  </testsuite>\n");
    }
    x.push_str("</testsuites>\n");
    x
}

/// `text` escaped for XML 1.0 text and attribute values.
fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c if (c as u32) < 0x20 || matches!(c, '\u{FFFE}' | '\u{FFFF}') => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests;
