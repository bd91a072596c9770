//! Per-question summaries of a run: the figures `toolnexus assess` prints.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::examples::Gold;
use super::metrics::{self, Bin, Confusion, CoveragePoint, EceRows};
use super::run::Run;
use super::text::{columns, opt, pct};
use crate::classifier::{DecisionAnswer, Question, near_uniform};
use crate::judge::{Bands, Verdict};

pub use super::metrics::ECE_BINS;

/// The P(yes) cut-points a noul summary reports precision at.
///
/// ```
/// assert_eq!(toolnexus::assess::PRECISION_CUTS[0], 0.5);
/// ```
pub const PRECISION_CUTS: [f64; 4] = [0.5, 0.7, 0.9, 0.95];

/// What one question's answers look like next to its gold values: the arrays
/// every metric, threshold and calibration is computed from.
#[derive(Debug, Clone, Default)]
pub(crate) struct Observed {
    /// The question's kind: `noul`, `choice` or `score`.
    pub kind: &'static str,
    /// Class names: option ids, or level numbers.
    pub labels: Vec<String>,
    /// Index of each observation's row in the run.
    pub rows: Vec<usize>,
    /// Confidence (noul: max(p, 1 − p)).
    pub conf: Vec<f64>,
    /// Whether the answer was right.
    pub hit: Vec<bool>,
    /// Noul: P(yes) and the gold outcome.
    pub p_true: Vec<f64>,
    pub y: Vec<bool>,
    /// Choice and score: the distribution over `labels`, the gold and predicted index.
    pub probs: Vec<Vec<f64>>,
    pub gold: Vec<usize>,
    pub pred: Vec<usize>,
    /// Score: the expected level.
    pub score: Vec<f64>,
    pub near_uniform: Vec<bool>,
    /// Labelled rows whose evaluation failed, or whose decision lacks the key.
    pub failed: usize,
    /// The models that answered the observed rows, in first-seen order.
    pub models: Vec<String>,
}

impl Observed {
    /// No observations yet of `question`.
    pub(crate) fn of(question: &Question) -> Observed {
        Observed {
            kind: question.kind(),
            labels: match question {
                Question::Choice(c) => c.criteria.keys().cloned().collect(),
                Question::Score(s) => (0..s.criteria.len()).map(|i| i.to_string()).collect(),
                _ => Vec::new(),
            },
            ..Default::default()
        }
    }

    /// Adds row `i`, labelled `gold`, whose decision (by `model`) gave
    /// `answer`: an observation when the answer fits the gold's kind, else a
    /// failure.
    pub(crate) fn push(
        &mut self,
        i: usize,
        gold: &Gold,
        answer: Option<&DecisionAnswer>,
        model: Option<&str>,
    ) {
        let o = self;
        let ok = match (gold, answer) {
            (Gold::Noul(y), Some(DecisionAnswer::Noul(a))) => {
                let p = a.noul;
                o.p_true.push(p);
                o.y.push(*y);
                o.conf.push(p.max(1.0 - p));
                o.hit.push((p > 0.5) == *y);
                true
            }
            (Gold::Choice(g), Some(DecisionAnswer::Choice(a))) => {
                let probs: Vec<f64> = o
                    .labels
                    .iter()
                    .map(|l| a.probabilities.get(l).copied().unwrap_or(0.0))
                    .collect();
                let gi = o.labels.iter().position(|l| l == g).unwrap_or(0);
                let pi = o
                    .labels
                    .iter()
                    .position(|l| *l == a.choice)
                    .unwrap_or_else(|| argmax(&probs));
                o.probs.push(probs);
                o.gold.push(gi);
                o.pred.push(pi);
                o.conf.push(a.confidence);
                o.hit.push(gi == pi);
                o.near_uniform.push(a.near_uniform);
                true
            }
            (Gold::Score(g), Some(DecisionAnswer::Score(a))) => {
                let probs: Vec<f64> = o
                    .labels
                    .iter()
                    .map(|l| a.probabilities.get(l).copied().unwrap_or(0.0))
                    .collect();
                let pi = if a.probabilities.is_empty() {
                    (a.score.round().max(0.0) as usize).min(o.labels.len().saturating_sub(1))
                } else {
                    argmax(&probs)
                };
                o.near_uniform
                    .push(!a.probabilities.is_empty() && near_uniform(&a.probabilities));
                o.probs.push(probs);
                o.gold.push(*g);
                o.pred.push(pi);
                o.score.push(a.score);
                o.conf.push(a.confidence);
                o.hit.push(*g == pi);
                true
            }
            _ => false,
        };
        if ok {
            o.rows.push(i);
            if let Some(m) = model
                && !o.models.iter().any(|x| x == m)
            {
                o.models.push(m.to_string());
            }
        } else {
            o.failed += 1;
        }
    }
}

/// Collects the observations of `key` over `rows` (all rows when `None`).
pub(crate) fn observe(run: &Run, key: &str, rows: Option<&[usize]>) -> Observed {
    let Some(question) = run.questions.get(key) else {
        return Observed::default();
    };
    let mut o = Observed::of(question);
    let mut add = |i: usize| {
        let row = &run.rows[i];
        if let Some(gold) = row.labels.get(key) {
            let d = row.decision();
            o.push(
                i,
                gold,
                d.and_then(|d| d.answers.get(key)),
                d.map(|d| d.model.as_str()),
            );
        }
    };
    match rows {
        Some(rows) => rows.iter().for_each(|&i| add(i)),
        None => (0..run.rows.len()).for_each(add),
    }
    o
}

/// The index of the largest value (the first on ties).
pub(crate) fn argmax(v: &[f64]) -> usize {
    let mut best = 0;
    for (i, x) in v.iter().enumerate() {
        if *x > v[best] {
            best = i;
        }
    }
    best
}

/// Precision of "yes" at one P(yes) cut.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrecisionAt {
    /// The cut: rows with P(yes) ≥ it.
    pub cut: f64,
    /// Precision among them, when there are any.
    pub precision: Option<f64>,
    /// How many there are.
    pub kept: usize,
}

/// Everything measured about one question.
///
/// ```
/// # use toolnexus::assess::*;
/// # let run = Run::new(Default::default(), Vec::new());
/// let s = summarize(&run, &SummaryOptions::default());
/// assert!(s.questions.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct QuestionSummary {
    /// The question key.
    pub key: String,
    /// `noul`, `choice` or `score`.
    pub kind: String,
    /// Labelled rows with an answer: what every figure below is over.
    pub n: usize,
    /// Labelled rows whose evaluation failed or lacked this answer.
    pub failed: usize,
    /// Share answered right (noul: P(yes) > 0.5 matches the gold).
    pub accuracy: f64,
    /// Log loss of the gold answer.
    pub log_loss: f64,
    /// Brier score.
    pub brier: f64,
    /// ECE over [`ECE_BINS`] equal-width bins ([`EceRows::ece`], the one every
    /// `assess` command prints: noul of P(yes), else of the top probability).
    pub ece: f64,
    /// ECE of the same confidences over equal-count bins.
    pub adaptive_ece: f64,
    /// Maximum calibration error.
    pub mce: f64,
    /// The reliability table behind `ece`.
    pub reliability: Vec<Bin>,
    /// Noul: area under the ROC curve (needs both outcomes).
    pub auroc: Option<f64>,
    /// Noul: precision at [`PRECISION_CUTS`].
    pub precision_at: Vec<PrecisionAt>,
    /// Choice: macro F1.
    pub macro_f1: Option<f64>,
    /// Choice and score: gold × predicted counts.
    pub confusion: Option<Confusion>,
    /// Score: share within one level.
    pub within_one: Option<f64>,
    /// Score: mean absolute error of the expected level.
    pub mae: Option<f64>,
    /// Score: quadratic-weighted kappa.
    pub kappa: Option<f64>,
    /// Score: predicted − gold level → count.
    pub score_errors: Vec<(i64, usize)>,
    /// Choice and score: share of near-uniform distributions.
    pub near_uniform_rate: Option<f64>,
    /// With bands: share that would not be sure (escalated).
    pub abstention_rate: Option<f64>,
    /// Coverage and accuracy from the highest observed confidence down to the
    /// lowest: every distinct cut, thinned to at most [`CURVE_POINTS`] points
    /// evenly spaced in coverage (the first and last always kept).
    pub risk_coverage: Vec<CoveragePoint>,
    /// Models that answered.
    pub models: Vec<String>,
}

/// How many answered rows one model answered: for a cascade or a fallback
/// chain, the share each stage served (a student's rows are the share served
/// on this machine).
///
/// ```
/// use std::collections::BTreeMap;
/// use serde_json::json;
/// use toolnexus::assess::*;
/// use toolnexus::classifier::Decision;
/// use toolnexus::judge::{noul, questions};
///
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// let row = |id: &str, model: &str| Row::new(id, BTreeMap::from([("spam".to_string(), Gold::Noul(true))]),
///     Outcome::Decided(Decision::from_value(&json!({"model": model, "answers": {"spam": {"type": "noul", "noul": 0.9}}})).unwrap()));
/// let run = Run::new(qs, vec![row("a", "student"), row("b", "teacher"), row("c", "student")]);
/// let s = summarize(&run, &SummaryOptions::default());
/// assert_eq!(s.answered_by[0].model, "student");
/// assert_eq!(s.answered_by[0].rows, 2);
/// assert!((s.answered_by[0].share - 2.0 / 3.0).abs() < 1e-12);
/// assert!(table(&s).contains("answered by: student 2 (66.7%), teacher 1 (33.3%)"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnsweredBy {
    /// The decision's `model`.
    pub model: String,
    /// Rows it answered.
    pub rows: usize,
    /// Its share of the answered rows, in `[0, 1]`.
    pub share: f64,
}

/// Cost over the rows: known figures summed, unknown ones counted, never as $0.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CostSummary {
    /// Rows whose cost is known: reported, priced, local or a cache hit
    /// (see [`Summary::cost_sources`]).
    pub known_rows: usize,
    /// Rows whose cost nobody knows.
    pub unknown_rows: usize,
    /// Sum of the known costs (USD).
    pub known_total: f64,
}

impl CostSummary {
    /// The total when every row's cost is known.
    ///
    /// ```
    /// let c = toolnexus::assess::CostSummary { known_rows: 2, unknown_rows: 1, known_total: 0.5 };
    /// assert_eq!(c.total(), None, "one unknown row makes the total unknown");
    /// ```
    pub fn total(&self) -> Option<f64> {
        (self.unknown_rows == 0).then_some(self.known_total)
    }
}

/// The row-level gate: a row is kept when its lowest confidence over the gated
/// questions clears the cut, and right when every gated answer is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateSummary {
    /// The gated questions.
    pub keys: Vec<String>,
    /// Rows with a label and an answer for every gated key.
    pub n: usize,
    /// Share right on every gated key.
    pub accuracy: f64,
    /// Coverage and accuracy at the observed row confidences, thinned as
    /// [`QuestionSummary::risk_coverage`].
    pub risk_coverage: Vec<CoveragePoint>,
}

/// A subset of rows sharing a meta value or a state-length range.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Slice {
    /// What was sliced by: `meta.<field>` or `state_len`.
    pub by: String,
    /// The value or range.
    pub value: String,
    /// Rows in the slice.
    pub rows: usize,
    /// The per-question figures over those rows.
    pub questions: Vec<QuestionSummary>,
}

/// How rows are sliced.
#[derive(Debug, Clone, PartialEq)]
pub enum SliceBy {
    /// By the value of one `meta` field (`(none)` when absent).
    Meta(String),
    /// By state length, in this many equal-count ranges.
    StateLength(usize),
}

impl std::str::FromStr for SliceBy {
    type Err = String;
    /// `meta.<field>`, `state_len` (4 ranges) or `state_len:<n>`.
    ///
    /// ```
    /// use toolnexus::assess::SliceBy;
    /// assert_eq!("meta.lang".parse::<SliceBy>()?, SliceBy::Meta("lang".into()));
    /// assert_eq!("state_len:3".parse::<SliceBy>()?, SliceBy::StateLength(3));
    /// # Ok::<(), String>(())
    /// ```
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(f) = s.strip_prefix("meta.")
            && !f.is_empty()
        {
            return Ok(SliceBy::Meta(f.to_string()));
        }
        if s == "state_len" {
            return Ok(SliceBy::StateLength(4));
        }
        if let Some(n) = s.strip_prefix("state_len:")
            && let Ok(n) = n.parse::<usize>()
            && n >= 2
        {
            return Ok(SliceBy::StateLength(n));
        }
        Err(format!(
            "cannot slice by {s:?}: use meta.<field>, state_len or state_len:<n ≥ 2>"
        ))
    }
}

/// What [`summarize`] computes besides the per-question figures.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SummaryOptions {
    /// Bands to count abstentions with: the default and per-key overrides.
    pub bands: Option<(Bands, BTreeMap<String, Bands>)>,
    /// Questions the row-level gate covers (`None`: every assessable question).
    pub gate_keys: Option<Vec<String>>,
    /// Slices to report.
    pub slices: Vec<SliceBy>,
}

/// A run's summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Summary {
    /// Rows in the run.
    pub rows: usize,
    /// Rows whose evaluation failed.
    pub failed_rows: usize,
    /// One entry per question with at least one label, in key order.
    pub questions: Vec<QuestionSummary>,
    /// The row-level gate, when there are gated rows.
    pub gate: Option<GateSummary>,
    /// Answered rows per model, most rows first (ties by name).
    pub answered_by: Vec<AnsweredBy>,
    /// Cost over the answered rows.
    pub cost: CostSummary,
    /// Where the answered rows' costs came from: answered rows per source
    /// (`reported`, `priced (TABLE, checked DATE)`, `local`, `cache`, `unknown`).
    pub cost_sources: BTreeMap<String, usize>,
    /// Median latency (ms), when measured.
    pub latency_p50_ms: Option<f64>,
    /// 95th percentile latency (ms), when measured.
    pub latency_p95_ms: Option<f64>,
    /// The requested slices.
    pub slices: Vec<Slice>,
}

impl Summary {
    /// The figures for `key`, when it was labelled.
    ///
    /// ```
    /// # use toolnexus::assess::*;
    /// # let run = Run::new(Default::default(), Vec::new());
    /// assert!(summarize(&run, &SummaryOptions::default()).question("spam").is_none());
    /// ```
    pub fn question(&self, key: &str) -> Option<&QuestionSummary> {
        self.questions.iter().find(|q| q.key == key)
    }
}

/// Summarises a run: every figure of SPEC §13 per question, the row gate,
/// cost, latency and slices. Pure: the same run gives the same summary.
///
/// ```
/// use std::collections::BTreeMap;
/// use serde_json::json;
/// use toolnexus::assess::*;
/// use toolnexus::classifier::Decision;
/// use toolnexus::judge::{noul, questions};
///
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// let row = |id: &str, p: f64, y: bool| Row::new(id, BTreeMap::from([("spam".to_string(), Gold::Noul(y))]),
///     Outcome::Decided(Decision::from_value(&json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": p}}})).unwrap()));
/// let run = Run::new(qs, vec![row("a", 0.9, true), row("b", 0.2, false), row("c", 0.7, false)]);
/// let s = summarize(&run, &SummaryOptions::default());
/// let spam = s.question("spam").unwrap();
/// assert_eq!(spam.n, 3);
/// assert!((spam.accuracy - 2.0 / 3.0).abs() < 1e-12);
/// assert_eq!(spam.auroc, Some(1.0));
/// assert_eq!(s.cost.total(), None, "no row said what it cost");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn summarize(run: &Run, options: &SummaryOptions) -> Summary {
    let observed: Vec<(String, Observed)> = run
        .questions
        .keys()
        .map(|k| (k.clone(), observe(run, k, None)))
        .collect();
    let mut totals = Totals::default();
    for r in &run.rows {
        totals.push(r);
    }
    let mut s = summary_of(&observed, totals, options);
    for by in &options.slices {
        for (name, value, rows) in slice_rows(run, by) {
            s.slices.push(Slice {
                by: name,
                value,
                rows: rows.len(),
                questions: summarize_questions(run, Some(&rows), options),
            });
        }
    }
    s
}

/// The row-level figures of a summary, added up a row at a time.
#[derive(Debug, Default)]
pub(crate) struct Totals {
    rows: usize,
    failed_rows: usize,
    cost: CostSummary,
    cost_sources: BTreeMap<String, usize>,
    latencies: Vec<f64>,
    by_model: BTreeMap<String, usize>,
}

impl Totals {
    /// Adds one row (rows in run order).
    pub(crate) fn push(&mut self, r: &super::run::Row) {
        self.rows += 1;
        match r.decision() {
            Some(d) => {
                match self.by_model.get_mut(d.model.as_str()) {
                    Some(n) => *n += 1,
                    None => {
                        self.by_model.insert(d.model.clone(), 1);
                    }
                }
                match r.cost.usd {
                    Some(c) => {
                        self.cost.known_rows += 1;
                        self.cost.known_total += c;
                    }
                    None => self.cost.unknown_rows += 1,
                }
                let source = r
                    .cost
                    .source
                    .as_ref()
                    .map_or("unknown".to_string(), |s| s.to_string());
                *self.cost_sources.entry(source).or_default() += 1;
            }
            None => self.failed_rows += 1,
        }
        if let Some(ms) = r.latency_ms {
            self.latencies.push(ms);
        }
    }
}

/// A summary (without slices) of each question's observations over the
/// whole run and the run's row totals.
pub(crate) fn summary_of(
    observed: &[(String, Observed)],
    totals: Totals,
    options: &SummaryOptions,
) -> Summary {
    let questions: Vec<QuestionSummary> = observed
        .iter()
        .filter(|(_, o)| !(o.rows.is_empty() && o.failed == 0))
        .map(|(key, o)| {
            let bands = options
                .bands
                .as_ref()
                .map(|(d, per)| per.get(key).copied().unwrap_or(*d));
            question_summary(key, o, bands)
        })
        .collect();
    let gate_keys = options
        .gate_keys
        .clone()
        .unwrap_or_else(|| questions.iter().map(|q| q.key.clone()).collect());
    let gated: Option<Vec<&Observed>> = gate_keys
        .iter()
        .map(|k| observed.iter().find(|(key, _)| key == k).map(|(_, o)| o))
        .collect();
    let gate = gated
        .and_then(|g| gate_of(&g))
        .map(|(conf, hit)| GateSummary {
            keys: gate_keys.clone(),
            n: conf.len(),
            accuracy: metrics::accuracy(&hit),
            risk_coverage: thin(metrics::risk_coverage(&conf, &hit)),
        });
    let answered = totals.rows - totals.failed_rows;
    let mut answered_by: Vec<AnsweredBy> = totals
        .by_model
        .into_iter()
        .map(|(model, rows)| AnsweredBy {
            model,
            rows,
            share: rows as f64 / answered as f64,
        })
        .collect();
    answered_by.sort_by(|a, b| b.rows.cmp(&a.rows).then_with(|| a.model.cmp(&b.model)));
    Summary {
        rows: totals.rows,
        failed_rows: totals.failed_rows,
        questions,
        gate,
        answered_by,
        cost: totals.cost,
        cost_sources: totals.cost_sources,
        latency_p50_ms: metrics::quantile(&totals.latencies, 0.5),
        latency_p95_ms: metrics::quantile(&totals.latencies, 0.95),
        slices: Vec::new(),
    }
}

/// Row-level confidences (the minimum over the questions) and hits (all
/// right) of the rows observed on every one of `observed` (each over the
/// whole run, so its rows ascend); `None` when there are none.
fn gate_of(observed: &[&Observed]) -> Option<(Vec<f64>, Vec<bool>)> {
    let (first, rest) = observed.split_first()?;
    let mut at = vec![0usize; rest.len()];
    let (mut conf, mut hit) = (Vec::new(), Vec::new());
    'rows: for (j, &r) in first.rows.iter().enumerate() {
        let (mut c, mut h) = (1.0f64.min(first.conf[j]), first.hit[j]);
        for (o, k) in rest.iter().zip(at.iter_mut()) {
            while *k < o.rows.len() && o.rows[*k] < r {
                *k += 1;
            }
            if o.rows.get(*k) != Some(&r) {
                continue 'rows;
            }
            c = c.min(o.conf[*k]);
            h &= o.hit[*k];
        }
        conf.push(c);
        hit.push(h);
    }
    (!conf.is_empty()).then_some((conf, hit))
}

/// `priced (toolnexus, checked 2026-12-05) 40, cache 2`: where the costs came from.
pub(crate) fn cost_sources_text(sources: &BTreeMap<String, usize>) -> String {
    let parts: Vec<String> = sources.iter().map(|(k, n)| format!("{k} {n}")).collect();
    parts.join(", ")
}

/// The most points a summary keeps of a risk-coverage curve.
///
/// ```
/// use toolnexus::assess::synthetic::{SyntheticOptions, synthetic_run};
/// use toolnexus::assess::{CURVE_POINTS, SummaryOptions, summarize};
/// let run = synthetic_run(&SyntheticOptions { rows: 5_000, ..Default::default() });
/// let curve = &summarize(&run, &SummaryOptions::default()).questions[0].risk_coverage;
/// assert!(curve.len() <= CURVE_POINTS && curve.len() > 100);
/// assert_eq!(curve.last().unwrap().coverage, 1.0);
/// assert!(curve.windows(2).all(|w| w[0].coverage < w[1].coverage));
/// ```
pub const CURVE_POINTS: usize = 201;

/// A curve thinned to at most [`CURVE_POINTS`]: the first point at or past
/// each of `CURVE_POINTS - 1` even coverage steps from 0 to 1, and the last.
fn thin(curve: Vec<CoveragePoint>) -> Vec<CoveragePoint> {
    if curve.len() <= CURVE_POINTS {
        return curve;
    }
    let steps = (CURVE_POINTS - 2) as f64;
    let last = curve.len() - 1;
    let mut out = Vec::with_capacity(CURVE_POINTS);
    let mut next_step = 0.0;
    for (i, p) in curve.iter().enumerate() {
        if i == 0 || i == last || p.coverage >= next_step / steps {
            out.push(*p);
            while next_step / steps <= p.coverage {
                next_step += 1.0;
            }
        }
    }
    out
}

fn summarize_questions(
    run: &Run,
    rows: Option<&[usize]>,
    options: &SummaryOptions,
) -> Vec<QuestionSummary> {
    run.questions
        .keys()
        .filter_map(|key| {
            let o = observe(run, key, rows);
            if o.rows.is_empty() && o.failed == 0 {
                return None;
            }
            let bands = options
                .bands
                .as_ref()
                .map(|(d, per)| per.get(key).copied().unwrap_or(*d));
            Some(question_summary(key, &o, bands))
        })
        .collect()
}

fn question_summary(key: &str, o: &Observed, bands: Option<Bands>) -> QuestionSummary {
    let n = o.rows.len();
    let models = o.models.clone();
    let mut s = QuestionSummary {
        key: key.to_string(),
        kind: o.kind.to_string(),
        n,
        failed: o.failed,
        accuracy: metrics::accuracy(&o.hit),
        log_loss: 0.0,
        brier: 0.0,
        ece: 0.0,
        adaptive_ece: 0.0,
        mce: 0.0,
        reliability: Vec::new(),
        auroc: None,
        precision_at: Vec::new(),
        macro_f1: None,
        confusion: None,
        within_one: None,
        mae: None,
        kappa: None,
        score_errors: Vec::new(),
        near_uniform_rate: None,
        abstention_rate: None,
        risk_coverage: thin(metrics::risk_coverage(&o.conf, &o.hit)),
        models,
    };
    if n == 0 {
        return s;
    }
    if o.kind == "noul" {
        s.log_loss = metrics::log_loss_binary(&o.p_true, &o.y);
        s.brier = metrics::brier_binary(&o.p_true, &o.y);
        s.auroc = metrics::auroc(&o.p_true, &o.y);
        s.precision_at = PRECISION_CUTS
            .iter()
            .map(|&cut| {
                let (precision, kept) = metrics::precision_at(&o.p_true, &o.y, cut);
                PrecisionAt {
                    cut,
                    precision,
                    kept,
                }
            })
            .collect();
        if let Some(b) = bands {
            let unsure = o
                .p_true
                .iter()
                .filter(|p| b.noul(**p) == Verdict::Uncertain)
                .count();
            s.abstention_rate = Some(unsure as f64 / n as f64);
        }
    } else {
        s.log_loss = metrics::log_loss_multi(&o.probs, &o.gold);
        s.brier = metrics::brier_multi(&o.probs, &o.gold);
        let confusion = Confusion::new(o.labels.clone(), &o.gold, &o.pred);
        let nu = o.near_uniform.iter().filter(|b| **b).count();
        s.near_uniform_rate = Some(nu as f64 / n as f64);
        if let Some(b) = bands {
            let unsure = (0..n)
                .filter(|&i| {
                    let sure = o.conf[i] > b.high && (o.kind == "score" || !o.near_uniform[i]);
                    !sure
                })
                .count();
            s.abstention_rate = Some(unsure as f64 / n as f64);
        }
        if o.kind == "choice" {
            s.macro_f1 = Some(confusion.macro_f1());
        } else {
            let within = (0..n)
                .filter(|&i| o.gold[i].abs_diff(o.pred[i]) <= 1)
                .count();
            s.within_one = Some(within as f64 / n as f64);
            let gold_f: Vec<f64> = o.gold.iter().map(|g| *g as f64).collect();
            s.mae = Some(metrics::mae(&gold_f, &o.score));
            s.kappa = metrics::quadratic_kappa(&o.gold, &o.pred, o.labels.len());
            let mut errs: BTreeMap<i64, usize> = BTreeMap::new();
            for i in 0..n {
                *errs.entry(o.pred[i] as i64 - o.gold[i] as i64).or_default() += 1;
            }
            s.score_errors = errs.into_iter().collect();
        }
        s.confusion = Some(confusion);
    }
    let top = ece_rows(o);
    s.reliability = top.reliability();
    s.ece = top.ece();
    s.adaptive_ece = top.adaptive_ece();
    s.mce = metrics::mce(&s.reliability);
    s
}

/// What one question's ECE is over ([`EceRows`]).
fn ece_rows(o: &Observed) -> EceRows {
    if o.kind == "noul" {
        EceRows::from_noul(&o.p_true, &o.y)
    } else {
        EceRows::from_distributions(&o.probs, &o.gold)
    }
}

/// Row-level confidences (the minimum over `keys`) and hits (all right) for
/// rows labelled and answered on every key; `None` when there are none.
pub(crate) fn gate_observations(
    run: &Run,
    keys: &[String],
    rows: Option<&[usize]>,
) -> Option<(Vec<f64>, Vec<bool>)> {
    if keys.is_empty() {
        return None;
    }
    let mut by_row: BTreeMap<usize, (f64, bool, usize)> = BTreeMap::new();
    for key in keys {
        let o = observe(run, key, rows);
        for (j, &r) in o.rows.iter().enumerate() {
            let e = by_row.entry(r).or_insert((1.0, true, 0));
            e.0 = e.0.min(o.conf[j]);
            e.1 &= o.hit[j];
            e.2 += 1;
        }
    }
    let (conf, hit): (Vec<f64>, Vec<bool>) = by_row
        .into_values()
        .filter(|e| e.2 == keys.len())
        .map(|e| (e.0, e.1))
        .unzip();
    (!conf.is_empty()).then_some((conf, hit))
}

fn slice_rows(run: &Run, by: &SliceBy) -> Vec<(String, String, Vec<usize>)> {
    match by {
        SliceBy::Meta(field) => {
            let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
            for (i, r) in run.rows.iter().enumerate() {
                let v = match r.meta.get(field) {
                    None | Some(serde_json::Value::Null) => "(none)".to_string(),
                    Some(serde_json::Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                };
                groups.entry(v).or_default().push(i);
            }
            groups
                .into_iter()
                .map(|(v, rows)| (format!("meta.{field}"), v, rows))
                .collect()
        }
        SliceBy::StateLength(k) => {
            let mut order: Vec<usize> = (0..run.rows.len()).collect();
            order.sort_by_key(|&i| run.rows[i].state_len);
            let n = order.len();
            let k = (*k).max(1).min(n.max(1));
            let mut out = Vec::new();
            let mut start = 0;
            for b in 0..k {
                let mut end = (n * (b + 1)) / k;
                // Keep equal lengths in one range.
                while end < n
                    && end > 0
                    && run.rows[order[end]].state_len == run.rows[order[end - 1]].state_len
                {
                    end += 1;
                }
                if end <= start {
                    continue;
                }
                let lo = run.rows[order[start]].state_len;
                let hi = run.rows[order[end - 1]].state_len;
                out.push((
                    "state_len".to_string(),
                    format!("{lo}–{hi} chars"),
                    order[start..end].to_vec(),
                ));
                start = end;
            }
            out
        }
    }
}

/// The summary as a terminal table, one line per question, then the gate,
/// cost and latency.
///
/// ```
/// # use toolnexus::assess::*;
/// # let run = Run::new(Default::default(), Vec::new());
/// let text = table(&summarize(&run, &SummaryOptions::default()));
/// assert!(text.starts_with("question"));
/// ```
pub fn table(s: &Summary) -> String {
    let header = [
        "question", "kind", "n", "failed", "accuracy", "log loss", "Brier", "ECE", "aECE", "MCE",
        "detail",
    ];
    let mut rows: Vec<Vec<String>> = Vec::new();
    for q in &s.questions {
        rows.push(question_cells(q, &q.key));
    }
    for sl in &s.slices {
        for q in &sl.questions {
            rows.push(question_cells(
                q,
                &format!("  {} [{}={}]", q.key, sl.by, sl.value),
            ));
        }
    }
    let mut out = columns(&header, &rows, |i| (2..10).contains(&i));
    if let Some(g) = &s.gate {
        let _ = writeln!(
            out,
            "row gate over {}: {} rows, all right on {}",
            g.keys.join(", "),
            g.n,
            pct(g.accuracy)
        );
    }
    if !s.answered_by.is_empty() {
        let parts: Vec<String> = s
            .answered_by
            .iter()
            .map(|a| format!("{} {} ({})", a.model, a.rows, pct(a.share)))
            .collect();
        let _ = writeln!(out, "answered by: {}", parts.join(", "));
    }
    let _ = write!(out, "{} rows, {} failed; cost ", s.rows, s.failed_rows);
    let c = &s.cost;
    match c.total() {
        Some(t) => {
            let _ = write!(out, "${t:.4}");
        }
        None if c.known_rows == 0 => out.push_str("unknown"),
        None => {
            let _ = write!(
                out,
                "${:.4} on {} rows, unknown on {}",
                c.known_total, c.known_rows, c.unknown_rows
            );
        }
    }
    if c.known_rows > 0 {
        let _ = write!(out, " ({})", cost_sources_text(&s.cost_sources));
    }
    if let (Some(p50), Some(p95)) = (s.latency_p50_ms, s.latency_p95_ms) {
        let _ = write!(
            out,
            "; latency p50 {}, p95 {}",
            super::text::ms(p50),
            super::text::ms(p95)
        );
    }
    out.push('\n');
    out
}

fn question_cells(q: &QuestionSummary, name: &str) -> Vec<String> {
    let f3 = |x: f64| format!("{x:.3}");
    let detail = match q.kind.as_str() {
        "noul" => format!("AUROC {}", opt(q.auroc, f3)),
        "choice" => format!(
            "macro-F1 {}{}",
            opt(q.macro_f1, f3),
            q.near_uniform_rate
                .filter(|r| *r > 0.0)
                .map_or(String::new(), |r| format!(", near-uniform {}", pct(r)))
        ),
        _ => format!(
            "MAE {}, within 1 {}, κ {}",
            opt(q.mae, f3),
            opt(q.within_one, pct),
            opt(q.kappa, f3)
        ),
    };
    let detail = match q.abstention_rate {
        Some(a) => format!("{detail}, abstains {}", pct(a)),
        None => detail,
    };
    let empty = q.n == 0;
    let num = |x: f64| if empty { "—".to_string() } else { f3(x) };
    vec![
        name.to_string(),
        q.kind.clone(),
        q.n.to_string(),
        q.failed.to_string(),
        if empty {
            "—".to_string()
        } else {
            pct(q.accuracy)
        },
        num(q.log_loss),
        num(q.brier),
        num(q.ece),
        num(q.adaptive_ece),
        num(q.mce),
        detail,
    ]
}
