//! A run's summary added up a row at a time: counts and sums in row order,
//! and the figures that need an order (AUROC, adaptive ECE, the
//! risk-coverage curves, latency quantiles) through a [`Spill`], which holds
//! a bounded chunk in memory when asked to. [`summarize`] and
//! [`summarize_file`](super::summarize_file) both go through it, so a run
//! and its file give one summary.

use std::collections::BTreeMap;
use std::io;

use super::examples::Gold;
use super::metrics::{self, BinTally, Confusion, CoveragePoint, ECE_BINS, Mean};
use super::run::{Row, Run};
use super::sorted::{Spill, key, value};
use super::summary::{
    AnsweredBy, CURVE_POINTS, CostSummary, GateSummary, PRECISION_CUTS, PrecisionAt,
    QuestionSummary, Reading, Slice, SliceBy, Summary, SummaryOptions,
};
use crate::classifier::{DecisionAnswer, Question, Questions};
use crate::judge::{Bands, Verdict};

/// Why [`summarize`] may `expect` its tallies: a sort held in memory writes
/// no file, so it has no error to give.
const IN_MEMORY: &str = "a tally held in memory does no I/O";

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
    let mut t = Tally::new(&run.questions, options, false);
    for r in &run.rows {
        t.push(r).expect(IN_MEMORY);
    }
    let mut s = t.finish().expect(IN_MEMORY);
    for by in &options.slices {
        for (name, value, rows) in slice_rows(run, by) {
            s.slices.push(Slice {
                by: name,
                value,
                rows: rows.len(),
                questions: slice_questions(run, &rows, options),
            });
        }
    }
    s
}

fn bands_of(options: &SummaryOptions, key: &str) -> Option<Bands> {
    options
        .bands
        .as_ref()
        .map(|(d, per)| per.get(key).copied().unwrap_or(*d))
}

/// The per-question figures over the rows at `rows` (in that order).
fn slice_questions(run: &Run, rows: &[usize], options: &SummaryOptions) -> Vec<QuestionSummary> {
    run.questions
        .iter()
        .filter_map(|(key, question)| {
            let mut q = QuestionTally::new(question, bands_of(options, key), false);
            for &i in rows {
                let row = &run.rows[i];
                if let Some(gold) = row.labels.get(key) {
                    let d = row.decision();
                    q.push(
                        gold,
                        d.and_then(|d| d.answers.get(key)),
                        d.map(|d| d.model.as_str()),
                    )
                    .expect(IN_MEMORY);
                }
            }
            (q.n > 0 || q.failed > 0).then(|| q.finish(key).expect(IN_MEMORY))
        })
        .collect()
}

/// The whole summary (without slices), a row at a time.
pub(crate) struct Tally {
    questions: Vec<(String, QuestionTally)>,
    /// What each question read of the row being added.
    seen: Vec<Option<(f64, bool)>>,
    /// The gated questions' places among `questions` when the keys are
    /// given (`None` for a key the run does not ask); `None`: every
    /// question with a label.
    gate_at: Option<Vec<Option<usize>>>,
    gate_keys: Option<Vec<String>>,
    /// Each row's lowest confidence over the gated questions it was read
    /// on (descending), tagged with how many and whether all were right.
    gate: Spill,
    /// Rows by how many gated questions they were read on: (rows, all right).
    gate_counts: Vec<(usize, usize)>,
    totals: Totals,
}

impl Tally {
    /// An empty tally of a run asking `questions`; `bounded` keeps a bounded
    /// part of the ordered figures in memory and the rest in temporary files.
    pub(crate) fn new(questions: &Questions, options: &SummaryOptions, bounded: bool) -> Tally {
        let keys: Vec<&String> = questions.keys().collect();
        Tally {
            questions: questions
                .iter()
                .map(|(k, q)| {
                    (
                        k.clone(),
                        QuestionTally::new(q, bands_of(options, k), bounded),
                    )
                })
                .collect(),
            seen: vec![None; questions.len()],
            gate_at: options.gate_keys.as_ref().map(|g| {
                g.iter()
                    .map(|k| keys.iter().position(|x| *x == k))
                    .collect()
            }),
            gate_keys: options.gate_keys.clone(),
            gate: Spill::new(bounded),
            gate_counts: Vec::new(),
            totals: Totals {
                latencies: Spill::new(bounded),
                ..Totals::default()
            },
        }
    }

    /// Adds one row (rows in run order). Errors only when a bounded tally
    /// cannot write its temporary file.
    pub(crate) fn push(&mut self, row: &Row) -> io::Result<()> {
        let d = row.decision();
        for ((key, q), seen) in self.questions.iter_mut().zip(&mut self.seen) {
            *seen = match row.labels.get(key) {
                Some(gold) => q.push(
                    gold,
                    d.and_then(|d| d.answers.get(key)),
                    d.map(|d| d.model.as_str()),
                )?,
                None => None,
            };
        }
        // The row's gate figures: the lowest confidence (from 1) and all
        // right, over the gated questions in the order they are named.
        let (mut c, mut h, mut count) = (1.0f64, true, 0usize);
        let mut add = |s: Option<(f64, bool)>| {
            if let Some((qc, qh)) = s {
                c = c.min(qc);
                h &= qh;
                count += 1;
            }
        };
        match &self.gate_at {
            Some(at) => at.iter().for_each(|i| add(i.and_then(|i| self.seen[i]))),
            None => self.seen.iter().for_each(|s| add(*s)),
        }
        if count > 0 {
            self.gate
                .push(!key(c), (count as u64) << 1 | u64::from(h))?;
            if self.gate_counts.len() <= count {
                self.gate_counts.resize(count + 1, (0, 0));
            }
            self.gate_counts[count].0 += 1;
            self.gate_counts[count].1 += usize::from(h);
        }
        self.totals.push(row)
    }

    /// The summary of the rows added.
    pub(crate) fn finish(self) -> io::Result<Summary> {
        let mut questions = Vec::new();
        for (k, q) in self.questions {
            if q.n > 0 || q.failed > 0 {
                questions.push(q.finish(&k)?);
            }
        }
        // A row counts in the gate when it was read on every gated question:
        // by default the summary's questions, which hold every question a
        // row was read on, so the rows read on as many as there are.
        let keys_known = self
            .gate_at
            .as_ref()
            .is_none_or(|at| at.iter().all(Option::is_some));
        let gate_keys = self
            .gate_keys
            .unwrap_or_else(|| questions.iter().map(|q| q.key.clone()).collect());
        let k = gate_keys.len();
        let (n, _) = self.gate_counts.get(k).copied().unwrap_or((0, 0));
        let gate = if keys_known && k > 0 && n > 0 {
            let (risk_coverage, right) = curve(self.gate, n, |tag| tag >> 1 == k as u64)?;
            Some(GateSummary {
                keys: gate_keys,
                n,
                accuracy: right as f64 / n as f64,
                risk_coverage,
            })
        } else {
            None
        };
        let t = self.totals;
        let answered = t.rows - t.failed_rows;
        let mut answered_by: Vec<AnsweredBy> = t
            .by_model
            .into_iter()
            .map(|(model, rows)| AnsweredBy {
                model,
                rows,
                share: rows as f64 / answered as f64,
            })
            .collect();
        answered_by.sort_by(|a, b| b.rows.cmp(&a.rows).then_with(|| a.model.cmp(&b.model)));
        let [p50, p95] = quantiles(t.latencies, [0.5, 0.95])?;
        Ok(Summary {
            rows: t.rows,
            failed_rows: t.failed_rows,
            questions,
            gate,
            answered_by,
            cost: t.cost,
            cost_sources: t.cost_sources,
            latency_p50_ms: p50,
            latency_p95_ms: p95,
            slices: Vec::new(),
        })
    }
}

/// The thinned risk-coverage curve of the `n` records of a descending
/// `spill` whose tag passes `keep` (bit 0 of the tag: right), and how many
/// of them were right.
fn curve(
    spill: Spill,
    n: usize,
    keep: impl Fn(u64) -> bool,
) -> io::Result<(Vec<CoveragePoint>, usize)> {
    let mut thin = Thinner::default();
    let mut right = 0;
    let mut sorted = spill.sorted()?;
    let rows = sorted.by_ref().filter(|(_, t)| keep(*t)).map(|(k, t)| {
        right += (t & 1) as usize;
        (value(!k), t & 1 == 1)
    });
    metrics::risk_coverage_sorted(rows, n, |p| thin.push(p));
    sorted.error()?;
    Ok((thin.finish(), right))
}

/// The quantiles `qs` of the values in `spill` (`None` when it is empty),
/// as [`metrics::quantile`] computes each.
fn quantiles<const N: usize>(spill: Spill, qs: [f64; N]) -> io::Result<[Option<f64>; N]> {
    let n = spill.len();
    if n == 0 {
        return Ok([None; N]);
    }
    let at = qs.map(|q| metrics::quantile_at(n, q));
    let mut got = [(0.0, 0.0); N];
    let mut sorted = spill.sorted()?;
    for (i, (k, _)) in sorted.by_ref().enumerate() {
        for ((lo, hi, _), g) in at.iter().zip(&mut got) {
            if i == *lo {
                g.0 = value(k);
            }
            if i == *hi {
                g.1 = value(k);
            }
        }
    }
    sorted.error()?;
    let mut out = [None; N];
    for ((o, (a, b)), (_, _, t)) in out.iter_mut().zip(got).zip(at) {
        *o = Some(metrics::lerp(a, b, t));
    }
    Ok(out)
}

/// A risk-coverage curve thinned to at most [`CURVE_POINTS`] as its points
/// come: the first point at or past each of `CURVE_POINTS - 1` even
/// coverage steps from 0 to 1, and the last (all of them when there are no
/// more than that).
#[derive(Default)]
struct Thinner {
    /// The points while there are no more than [`CURVE_POINTS`].
    head: Vec<CoveragePoint>,
    thinning: bool,
    /// The latest point, held until the next shows it is not the last.
    held: Option<CoveragePoint>,
    out: Vec<CoveragePoint>,
    seen: usize,
    next_step: f64,
}

impl Thinner {
    fn push(&mut self, p: CoveragePoint) {
        if !self.thinning {
            self.head.push(p);
            if self.head.len() > CURVE_POINTS {
                self.thinning = true;
                let mut head = std::mem::take(&mut self.head);
                self.held = head.pop();
                head.into_iter().for_each(|p| self.step(p, false));
            }
            return;
        }
        if let Some(h) = self.held.replace(p) {
            self.step(h, false);
        }
    }

    fn step(&mut self, p: CoveragePoint, last: bool) {
        let steps = (CURVE_POINTS - 2) as f64;
        if self.seen == 0 || last || p.coverage >= self.next_step / steps {
            self.out.push(p);
            while self.next_step / steps <= p.coverage {
                self.next_step += 1.0;
            }
        }
        self.seen += 1;
    }

    fn finish(mut self) -> Vec<CoveragePoint> {
        if !self.thinning {
            return self.head;
        }
        if let Some(h) = self.held.take() {
            self.step(h, true);
        }
        self.out
    }
}

/// One question's figures, a labelled row at a time.
pub(crate) struct QuestionTally {
    kind: &'static str,
    labels: Vec<String>,
    bands: Option<Bands>,
    n: usize,
    failed: usize,
    hits: usize,
    models: Vec<String>,
    /// Confidence, descending, tagged with whether it was right.
    risk: Spill,
    log_loss: Mean,
    brier: Mean,
    unsure: usize,
    /// Noul: P(yes), ascending, tagged with the gold; precision at the cuts.
    auroc: Spill,
    positives: usize,
    precision: [(usize, usize); PRECISION_CUTS.len()],
    /// What the ECE is over (noul: P(yes) against the gold, else the top
    /// probability against being right): fixed bins in row order, and
    /// ascending for the equal-count bins, tagged with the order read and
    /// whether it was right.
    ece: BinTally,
    adaptive: Spill,
    /// Choice and score.
    counts: Vec<Vec<usize>>,
    kappa: Vec<Vec<f64>>,
    kappa_n: f64,
    near_uniform: usize,
    within: usize,
    mae: Mean,
    score_errors: BTreeMap<i64, usize>,
}

impl QuestionTally {
    pub(crate) fn new(question: &Question, bands: Option<Bands>, bounded: bool) -> QuestionTally {
        let labels: Vec<String> = match question {
            Question::Choice(c) => c.criteria.keys().cloned().collect(),
            Question::Score(s) => (0..s.criteria.len()).map(|i| i.to_string()).collect(),
            _ => Vec::new(),
        };
        let k = labels.len();
        QuestionTally {
            kind: question.kind(),
            labels,
            bands,
            n: 0,
            failed: 0,
            hits: 0,
            models: Vec::new(),
            risk: Spill::new(bounded),
            log_loss: Mean::default(),
            brier: Mean::default(),
            unsure: 0,
            auroc: Spill::new(bounded),
            positives: 0,
            precision: [(0, 0); PRECISION_CUTS.len()],
            ece: BinTally::new(ECE_BINS),
            adaptive: Spill::new(bounded),
            counts: vec![vec![0; k]; k],
            kappa: vec![vec![0.0; k]; k],
            kappa_n: 0.0,
            near_uniform: 0,
            within: 0,
            mae: Mean::default(),
            score_errors: BTreeMap::new(),
        }
    }

    /// Adds a row labelled `gold` whose decision (by `model`) gave `answer`,
    /// as [`Observed::push`](super::summary::Observed::push) does: the
    /// confidence and whether it was right when the answer fits the gold.
    pub(crate) fn push(
        &mut self,
        gold: &Gold,
        answer: Option<&DecisionAnswer>,
        model: Option<&str>,
    ) -> io::Result<Option<(f64, bool)>> {
        let Some(r) = Reading::read(&self.labels, gold, answer) else {
            self.failed += 1;
            return Ok(None);
        };
        let (conf, hit) = r.conf_hit();
        let order = (self.n as u64) << 1;
        self.n += 1;
        self.hits += usize::from(hit);
        self.risk.push(!key(conf), u64::from(hit))?;
        match r {
            Reading::Noul { p, y } => {
                self.log_loss.push(metrics::log_loss_binary_term(p, y));
                self.brier.push(metrics::brier_binary_term(p, y));
                self.auroc.push(key(p), u64::from(y))?;
                self.positives += usize::from(y);
                for (cut, (kept, right)) in PRECISION_CUTS.iter().zip(&mut self.precision) {
                    if p >= *cut {
                        *kept += 1;
                        *right += usize::from(y);
                    }
                }
                if let Some(b) = self.bands
                    && b.noul(p) == Verdict::Uncertain
                {
                    self.unsure += 1;
                }
                // EceRows::push_noul: a P(yes) that is not a number is left out.
                if p.is_finite() {
                    self.ece.push(p, y);
                    self.adaptive.push(key(p), order | u64::from(y))?;
                }
            }
            Reading::Multi {
                probs,
                gold,
                pred,
                conf,
                near_uniform,
                score,
            } => {
                self.log_loss
                    .push(metrics::log_loss_multi_term(&probs, gold));
                self.brier.push(metrics::brier_multi_term(&probs, gold));
                let k = self.labels.len();
                if gold < k && pred < k {
                    self.counts[gold][pred] += 1;
                    self.kappa[gold][pred] += 1.0;
                    self.kappa_n += 1.0;
                }
                self.near_uniform += usize::from(near_uniform);
                if let Some(b) = self.bands {
                    let sure = conf > b.high && (self.kind == "score" || !near_uniform);
                    self.unsure += usize::from(!sure);
                }
                if let Some(s) = score {
                    self.within += usize::from(gold.abs_diff(pred) <= 1);
                    self.mae.push((gold as f64 - s).abs());
                    *self
                        .score_errors
                        .entry(pred as i64 - gold as i64)
                        .or_default() += 1;
                }
                // EceRows::push_distribution: the top probability (the first
                // on ties), when every one is a number and one is above 0.
                if probs.iter().all(|p| p.is_finite()) && probs.iter().any(|&p| p > 0.0) {
                    let mut top = 0;
                    for (i, &p) in probs.iter().enumerate() {
                        if p > probs[top] {
                            top = i;
                        }
                    }
                    self.ece.push(probs[top], top == gold);
                    self.adaptive
                        .push(key(probs[top]), order | u64::from(top == gold))?;
                }
            }
        }
        if let Some(m) = model
            && !self.models.iter().any(|x| x == m)
        {
            self.models.push(m.to_string());
        }
        Ok(Some((conf, hit)))
    }

    /// The question's summary.
    pub(crate) fn finish(self, key: &str) -> io::Result<QuestionSummary> {
        let n = self.n;
        let (risk_coverage, _) = curve(self.risk, n, |_| true)?;
        let mut s = QuestionSummary {
            key: key.to_string(),
            kind: self.kind.to_string(),
            n,
            failed: self.failed,
            accuracy: if n == 0 {
                0.0
            } else {
                self.hits as f64 / n as f64
            },
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
            risk_coverage,
            models: self.models,
        };
        if n == 0 {
            return Ok(s);
        }
        let rate = |x: usize| x as f64 / n as f64;
        s.log_loss = self.log_loss.value();
        s.brier = self.brier.value();
        if self.bands.is_some() {
            s.abstention_rate = Some(rate(self.unsure));
        }
        if self.kind == "noul" {
            let mut sorted = self.auroc.sorted()?;
            s.auroc = metrics::auroc_sorted(
                sorted.by_ref().map(|(k, t)| (value(k), t == 1)),
                self.positives,
                n - self.positives,
            );
            sorted.error()?;
            s.precision_at = PRECISION_CUTS
                .iter()
                .zip(self.precision)
                .map(|(&cut, (kept, right))| PrecisionAt {
                    cut,
                    precision: (kept > 0).then(|| right as f64 / kept as f64),
                    kept,
                })
                .collect();
        } else {
            let confusion = Confusion {
                labels: self.labels,
                counts: self.counts,
            };
            s.near_uniform_rate = Some(rate(self.near_uniform));
            if self.kind == "choice" {
                s.macro_f1 = Some(confusion.macro_f1());
            } else {
                s.within_one = Some(rate(self.within));
                s.mae = Some(self.mae.value());
                s.kappa = metrics::kappa_of(&self.kappa, self.kappa_n, confusion.labels.len());
                s.score_errors = self.score_errors.into_iter().collect();
            }
            s.confusion = Some(confusion);
        }
        let reliability = self.ece.bins();
        let m = self.adaptive.len();
        let mut sorted = self.adaptive.sorted()?;
        let adaptive = metrics::adaptive_sorted(
            sorted.by_ref().map(|(k, t)| (value(k), t & 1 == 1)),
            m,
            ECE_BINS,
        );
        sorted.error()?;
        s.ece = metrics::ece(&reliability);
        s.adaptive_ece = metrics::ece(&adaptive);
        s.mce = metrics::mce(&reliability);
        s.reliability = reliability;
        Ok(s)
    }
}

/// The row-level figures of a summary, added up a row at a time.
#[derive(Default)]
struct Totals {
    rows: usize,
    failed_rows: usize,
    cost: CostSummary,
    cost_sources: BTreeMap<String, usize>,
    latencies: Spill,
    by_model: BTreeMap<String, usize>,
}

impl Totals {
    /// Adds one row (rows in run order).
    fn push(&mut self, r: &Row) -> io::Result<()> {
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
            self.latencies.push(key(ms), 0)?;
        }
        Ok(())
    }
}

/// The rows of each slice: (what it is by, its value, its rows in order).
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

#[cfg(test)]
pub(crate) mod tests;
