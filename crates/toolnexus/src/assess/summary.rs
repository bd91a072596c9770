//! Per-question summaries of a run: the figures `toolnexus assess` prints.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::examples::Gold;
use super::metrics::{Bin, Confusion, CoveragePoint};
use super::run::Run;
use super::text::{columns, opt, pct};
use crate::classifier::{DecisionAnswer, Question, near_uniform};
use crate::judge::Bands;

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
        let Some(r) = Reading::read(&o.labels, gold, answer) else {
            o.failed += 1;
            return;
        };
        let (conf, hit) = r.conf_hit();
        o.conf.push(conf);
        o.hit.push(hit);
        match r {
            Reading::Noul { p, y } => {
                o.p_true.push(p);
                o.y.push(y);
            }
            Reading::Multi {
                probs,
                gold,
                pred,
                near_uniform,
                score,
                ..
            } => {
                o.probs.push(probs);
                o.gold.push(gold);
                o.pred.push(pred);
                o.near_uniform.push(near_uniform);
                o.score.extend(score);
            }
        }
        o.rows.push(i);
        if let Some(m) = model
            && !o.models.iter().any(|x| x == m)
        {
            o.models.push(m.to_string());
        }
    }
}

/// One labelled answer read against its gold: what a summary takes of it.
pub(crate) enum Reading {
    /// A noul answer: P(yes) and the gold outcome.
    Noul { p: f64, y: bool },
    /// A choice or score answer: the distribution over the question's
    /// labels, the gold and predicted index, the answer's confidence,
    /// whether it is near uniform, and (score) the expected level.
    Multi {
        probs: Vec<f64>,
        gold: usize,
        pred: usize,
        conf: f64,
        near_uniform: bool,
        score: Option<f64>,
    },
}

impl Reading {
    /// The reading of `answer` against `gold` over `labels` (a question's
    /// class names); `None` when the answer does not fit the gold's kind.
    pub(crate) fn read(
        labels: &[String],
        gold: &Gold,
        answer: Option<&DecisionAnswer>,
    ) -> Option<Reading> {
        match (gold, answer) {
            (Gold::Noul(y), Some(DecisionAnswer::Noul(a))) => {
                Some(Reading::Noul { p: a.noul, y: *y })
            }
            (Gold::Choice(g), Some(DecisionAnswer::Choice(a))) => {
                let probs: Vec<f64> = labels
                    .iter()
                    .map(|l| a.probabilities.get(l).copied().unwrap_or(0.0))
                    .collect();
                let gold = labels.iter().position(|l| l == g).unwrap_or(0);
                let pred = labels
                    .iter()
                    .position(|l| *l == a.choice)
                    .unwrap_or_else(|| argmax(&probs));
                Some(Reading::Multi {
                    probs,
                    gold,
                    pred,
                    conf: a.confidence,
                    near_uniform: a.near_uniform,
                    score: None,
                })
            }
            (Gold::Score(g), Some(DecisionAnswer::Score(a))) => {
                let probs: Vec<f64> = labels
                    .iter()
                    .map(|l| a.probabilities.get(l).copied().unwrap_or(0.0))
                    .collect();
                let pred = if a.probabilities.is_empty() {
                    (a.score.round().max(0.0) as usize).min(labels.len().saturating_sub(1))
                } else {
                    argmax(&probs)
                };
                Some(Reading::Multi {
                    probs,
                    gold: *g,
                    pred,
                    conf: a.confidence,
                    near_uniform: !a.probabilities.is_empty() && near_uniform(&a.probabilities),
                    score: Some(a.score),
                })
            }
            _ => None,
        }
    }

    /// The confidence (noul: max(p, 1 − p)) and whether the answer was
    /// right (noul: P(yes) > 0.5 matches the gold).
    pub(crate) fn conf_hit(&self) -> (f64, bool) {
        match self {
            Reading::Noul { p, y } => (p.max(1.0 - p), (*p > 0.5) == *y),
            Reading::Multi {
                gold, pred, conf, ..
            } => (*conf, gold == pred),
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
    /// ECE over [`ECE_BINS`] equal-width bins ([`EceRows::ece`](crate::assess::metrics::EceRows::ece), the one every
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

/// What [`summarize`](crate::assess::summarize) computes besides the per-question figures.
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
