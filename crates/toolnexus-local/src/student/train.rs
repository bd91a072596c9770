//! Training students: the teacher's rows embedded and checked, one
//! softmax-regression head per question (Adam, early stopping on a held-out
//! split), the held-out report and the cascade threshold.

use std::collections::BTreeMap;
use std::ops::Range;

use serde_json::Value;
use toolnexus::assess::metrics::EceRows;
use toolnexus::classifier::{Decision, DecisionAnswer, Question, Questions, question_hash};

use crate::embed::Embedder;
use crate::error::LocalError;
use crate::num::softmax;
use crate::state_text::StateText;

use super::file::{Head, HeadReport, Student, StudentError, argmax, top_probability};
use super::rows::{Ordered, Row, TeacherRows, from_rows};

/// Fewest rows [`distill`] trains on.
pub const MIN_ROWS: usize = 20;

/// How heads are trained.
///
/// ```
/// let o = toolnexus_local::student::TrainOptions::default();
/// assert_eq!((o.holdout, o.target_agreement, o.seed), (0.2, 0.98, 0));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TrainOptions {
    /// L2 penalty on the weights.
    pub l2: f64,
    /// Adam's step size.
    pub learning_rate: f64,
    /// Most passes over the training rows.
    pub max_epochs: usize,
    /// Stop after this many epochs without a better held-out loss.
    pub patience: usize,
    /// Share of rows held out for early stopping, figures and the threshold.
    pub holdout: f64,
    /// Seed of the split.
    pub seed: u64,
    /// Agreement with the teacher the cascade threshold must keep.
    pub target_agreement: f64,
    /// Starting weights per question key, one row per label in the head's
    /// order (e.g. [`ZeroShot::linear_head`](crate::ZeroShot::linear_head)):
    /// training starts there, the L2 penalty pulls toward them rather than
    /// toward zero, and early stopping may keep them unchanged. A key without
    /// one starts from zero.
    pub priors: BTreeMap<String, Vec<Vec<f32>>>,
    /// How the rows' states were written for the embedding model
    /// ([`teacher_rows_as`]); the student records it and reads states the same way.
    pub state_text: StateText,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            l2: 1e-4,
            learning_rate: 0.05,
            max_epochs: 500,
            patience: 25,
            holdout: 0.2,
            seed: 0,
            target_agreement: 0.98,
            priors: BTreeMap::new(),
            state_text: StateText::Json,
        }
    }
}

/// One state's embedding with the teacher's decision on it.
#[derive(Debug, Clone, PartialEq)]
pub struct TeacherRow {
    /// The state's sentence embedding.
    pub embedding: Vec<f32>,
    /// What the teacher answered.
    pub decision: Decision,
}

/// Per-question figures of a [`distill`] run.
#[derive(Debug, Clone, PartialEq)]
pub struct DistillReport {
    /// Rows trained on and held out.
    pub rows: usize,
    /// Each head's held-out figures.
    pub questions: BTreeMap<String, HeadReport>,
    /// The cascade threshold chosen.
    pub threshold: f64,
    /// Share of held-out rows answered locally at it.
    pub served_locally: f64,
    /// Their agreement with the teacher on every key.
    pub local_agreement: Option<f64>,
}

impl DistillReport {
    /// The report as a table.
    ///
    /// ```
    /// let r = toolnexus_local::student::DistillReport {
    ///     rows: 10, questions: Default::default(), threshold: 0.9, served_locally: 0.5, local_agreement: Some(1.0),
    /// };
    /// assert!(r.table().contains("served locally 50.0%"));
    /// let none = toolnexus_local::student::DistillReport { threshold: f64::INFINITY, served_locally: 0.0, local_agreement: None, ..r };
    /// assert!(none.table().contains("every call to the teacher"));
    /// ```
    pub fn table(&self) -> String {
        let header = [
            "question",
            "train",
            "held out",
            "epochs",
            "agreement",
            "log loss",
            "ECE",
        ]
        .map(String::from);
        let mut rows = vec![header];
        for (k, r) in &self.questions {
            rows.push([
                k.clone(),
                r.train.to_string(),
                r.holdout.to_string(),
                r.epochs.to_string(),
                format!("{:.1}%", 100.0 * r.agreement),
                format!("{:.3}", r.log_loss),
                format!("{:.3}", r.ece),
            ]);
        }
        let widths: Vec<usize> = (0..7)
            .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
            .collect();
        let mut out = String::new();
        for r in &rows {
            let mut line = format!("{:<w$}", r[0], w = widths[0]);
            for (cell, w) in r.iter().zip(&widths).skip(1) {
                line.push_str(&format!("  {cell:>w$}"));
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        if self.threshold.is_finite() {
            out.push_str(&format!(
                "cascade threshold {:.4}: served locally {:.1}% of held-out rows, agreeing with the teacher on every key {}\n",
                self.threshold,
                100.0 * self.served_locally,
                self.local_agreement
                    .map_or("—".to_string(), |a| format!("{:.1}%", 100.0 * a))
            ));
        } else {
            out.push_str(
                "cascade threshold: none keeps the target agreement on the held-out rows, so a cascade sends every call to the teacher (more teacher decisions, or a lower --target-agreement)\n",
            );
        }
        out
    }
}

/// The class ids of a question, in head order.
pub(super) fn labels_of(q: &Question) -> Option<Vec<String>> {
    match q {
        Question::Noul(_) => Some(vec!["false".into(), "true".into()]),
        Question::Choice(c) => Some(c.criteria.keys().cloned().collect()),
        Question::Score(s) => Some((0..s.criteria.len()).map(|i| i.to_string()).collect()),
        _ => None,
    }
}

/// The teacher's distribution over `labels` for one answer.
pub(super) fn target_of(answer: &DecisionAnswer, labels: &[String]) -> Option<Vec<f64>> {
    let from = |probs: &BTreeMap<String, f64>, fallback: usize| {
        let mut t: Vec<f64> = labels
            .iter()
            .map(|l| probs.get(l).copied().unwrap_or(0.0).max(0.0))
            .collect();
        let total: f64 = t.iter().sum();
        if total > 0.0 {
            t.iter_mut().for_each(|v| *v /= total);
        } else {
            t = vec![0.0; labels.len()];
            t[fallback.min(labels.len() - 1)] = 1.0;
        }
        t
    };
    match answer {
        DecisionAnswer::Noul(a) => Some(vec![1.0 - a.noul, a.noul]),
        DecisionAnswer::Choice(a) => {
            let pick = labels.iter().position(|l| *l == a.choice).unwrap_or(0);
            Some(from(&a.probabilities, pick))
        }
        DecisionAnswer::Score(a) => Some(from(&a.probabilities, a.score.round().max(0.0) as usize)),
        _ => None,
    }
}

/// Checks that a teacher's decision fits the questions a student is trained
/// for: every answered key has its question's type; a noul, a probability or
/// a confidence is a number in [0, 1]; a choice and every probability name an
/// option the question offers; a score and its probabilities stay within the
/// rubric's levels, and its legend has as many levels as the rubric. With
/// `teacher_asked` (the questions the teacher was given, as a tape records
/// them), each of those must offer the same options or levels as the
/// question trained for. Keys the decision does not answer are not checked
/// (their rows are left out of that head). The error names the question.
///
/// ```
/// use serde_json::json;
/// use toolnexus::classifier::Decision;
/// use toolnexus::judge::{noul, questions};
/// use toolnexus_local::student::check_teacher;
///
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// let d = Decision::from_value(&json!({"model": "t", "answers": {"spam": {"type": "noul", "noul": 1.2}}}))?;
/// let e = check_teacher(&d, &qs, None).unwrap_err();
/// assert_eq!(e.to_string(), "question \"spam\": noul 1.2 is outside [0, 1]");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn check_teacher(
    decision: &Decision,
    questions: &Questions,
    teacher_asked: Option<&Questions>,
) -> Result<(), StudentError> {
    for (key, q) in questions {
        let Some(labels) = labels_of(q) else {
            continue;
        };
        let fail = |m: String| Err(StudentError::new(format!("question {key:?}: {m}")));
        if let Some(asked) = teacher_asked.and_then(|t| t.get(key)) {
            if asked.kind() != q.kind() {
                return fail(format!(
                    "the teacher was asked a {} question, this is a {} question",
                    asked.kind(),
                    q.kind()
                ));
            }
            let theirs = labels_of(asked).unwrap_or_default();
            if theirs != labels {
                return fail(match q {
                    Question::Score(_) => format!(
                        "the teacher was asked on {} levels, this rubric has {}",
                        theirs.len(),
                        labels.len()
                    ),
                    _ => format!(
                        "the teacher was offered options {}, this question offers {}",
                        listed(&theirs),
                        listed(&labels)
                    ),
                });
            }
        }
        let Some(answer) = decision.answers.get(key) else {
            continue;
        };
        if answer.answer_type() != q.kind() {
            return fail(format!(
                "the teacher's answer is a {} answer, the question asks for {}",
                answer.answer_type(),
                q.kind()
            ));
        }
        let unit = |what: String, v: f64| {
            if v.is_finite() && (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                fail(format!("{what} {v} is outside [0, 1]"))
            }
        };
        let offered = |id: &str, what: &str| {
            if labels.iter().any(|l| l == id) {
                Ok(())
            } else {
                fail(format!(
                    "{what} {id:?} is not one of the options offered ({})",
                    listed(&labels)
                ))
            }
        };
        match answer {
            DecisionAnswer::Noul(a) => unit("noul".into(), a.noul)?,
            DecisionAnswer::Choice(a) => {
                offered(&a.choice, "choice")?;
                unit("confidence".into(), a.confidence)?;
                for (id, &p) in &a.probabilities {
                    offered(id, "probability for")?;
                    unit(format!("probability {id:?}"), p)?;
                }
            }
            DecisionAnswer::Score(a) => {
                let top = labels.len() - 1;
                if !(a.score.is_finite() && (0.0..=top as f64).contains(&a.score)) {
                    return fail(format!(
                        "score {} is outside the rubric's levels 0..={top}",
                        a.score
                    ));
                }
                unit("confidence".into(), a.confidence)?;
                for (level, &p) in &a.probabilities {
                    if !labels.iter().any(|l| l == level.trim()) {
                        return fail(format!(
                            "probability for level {level:?}, which the rubric (levels 0..={top}) does not have"
                        ));
                    }
                    unit(format!("probability {level:?}"), p)?;
                }
                if !a.legend.is_empty() && a.legend.len() != labels.len() {
                    return fail(format!(
                        "the teacher's legend has {} levels, this rubric has {}",
                        a.legend.len(),
                        labels.len()
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// `"a", "b", "c"`.
fn listed(labels: &[String]) -> String {
    labels
        .iter()
        .map(|l| format!("{l:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A seeded shuffle (SplitMix64), so a split repeats.
pub(super) fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut state = seed ^ 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// One head's rows in an [`Ordered`] set: positions `train` are trained on,
/// positions `held` (when it holds a row that answers) stop training early.
struct HeadRows<'a> {
    rows: &'a Ordered,
    head: usize,
    at: usize,
    k: usize,
    train: Range<usize>,
    held: Range<usize>,
    held_answers: bool,
}

/// A trained head: its weights (one row per label), its biases and the epoch kept.
type Trained = (Vec<Vec<f64>>, Vec<f64>, usize);

/// Softmax regression with soft targets: full-batch Adam with L2, keeping the
/// epoch with the best held-out cross-entropy.
fn train(
    data: &HeadRows<'_>,
    prior: Option<&[Vec<f32>]>,
    o: &TrainOptions,
) -> Result<Trained, StudentError> {
    let (d, k) = (data.rows.dim(), data.k);
    let pass = |range: &Range<usize>, each: &mut dyn FnMut(Row<'_>)| {
        data.rows.pass(range.clone(), data.head, data.at, k, each)
    };
    // Where training starts and where L2 pulls: the prior, else zero.
    let w0: Vec<Vec<f64>> = match prior {
        Some(rows) => rows
            .iter()
            .map(|r| r.iter().map(|&v| f64::from(v)).collect())
            .collect(),
        None => vec![vec![0.0f64; d]; k],
    };
    let mut w = w0.clone();
    let mut b = vec![0.0f64; k];
    let (mut mw, mut vw) = (vec![vec![0.0; d]; k], vec![vec![0.0; d]; k]);
    let (mut mb, mut vb) = (vec![0.0; k], vec![0.0; k]);
    let (beta1, beta2, eps) = (0.9f64, 0.999f64, 1e-8f64);
    let logits = |w: &[Vec<f64>], b: &[f64], row: &[f32]| -> Vec<f64> {
        (0..k)
            .map(|c| {
                b[c] + w[c]
                    .iter()
                    .zip(row)
                    .map(|(a, v)| a * f64::from(*v))
                    .sum::<f64>()
            })
            .collect()
    };
    let held_or_train = if data.held_answers {
        &data.held
    } else {
        &data.train
    };
    let loss = |w: &[Vec<f64>], b: &[f64]| -> Result<f64, StudentError> {
        let (mut total, mut m) = (0.0f64, 0usize);
        pass(held_or_train, &mut |r| {
            let p = softmax(&logits(w, b, r.x));
            total +=
                -r.t.iter()
                    .zip(&p)
                    .map(|(ti, pi)| ti * pi.max(1e-15).ln())
                    .sum::<f64>();
            m += 1;
        })?;
        Ok(total / m.max(1) as f64)
    };
    // Epoch 0 competes too: with a prior, no training may be the best.
    let mut best = (loss(&w, &b)?, w.clone(), b.clone(), 0usize);
    let mut since_best = 0;
    let mut n = 0usize;
    pass(&data.train, &mut |_| n += 1)?;
    let n = n.max(1) as f64;
    for epoch in 1..=o.max_epochs {
        let mut gw = vec![vec![0.0f64; d]; k];
        let mut gb = vec![0.0f64; k];
        pass(&data.train, &mut |r| {
            let p = softmax(&logits(&w, &b, r.x));
            for c in 0..k {
                let g = (p[c] - r.t[c]) / n;
                gb[c] += g;
                for (gj, xj) in gw[c].iter_mut().zip(r.x) {
                    *gj += g * f64::from(*xj);
                }
            }
        })?;
        let step = epoch as i32;
        let (c1, c2) = (1.0 - beta1.powi(step), 1.0 - beta2.powi(step));
        for c in 0..k {
            for j in 0..d {
                let g = gw[c][j] + o.l2 * (w[c][j] - w0[c][j]);
                mw[c][j] = beta1 * mw[c][j] + (1.0 - beta1) * g;
                vw[c][j] = beta2 * vw[c][j] + (1.0 - beta2) * g * g;
                w[c][j] -= o.learning_rate * (mw[c][j] / c1) / ((vw[c][j] / c2).sqrt() + eps);
            }
            let g = gb[c];
            mb[c] = beta1 * mb[c] + (1.0 - beta1) * g;
            vb[c] = beta2 * vb[c] + (1.0 - beta2) * g * g;
            b[c] -= o.learning_rate * (mb[c] / c1) / ((vb[c] / c2).sqrt() + eps);
        }
        let held_loss = loss(&w, &b)?;
        if held_loss < best.0 - 1e-9 {
            best = (held_loss, w.clone(), b.clone(), epoch);
            since_best = 0;
        } else {
            since_best += 1;
            if since_best >= o.patience {
                break;
            }
        }
    }
    Ok((best.1, best.2, best.3))
}

/// Trains one head per question on the teacher's decisions, reports held-out
/// agreement and calibration, and picks the cascade threshold.
///
/// Rows whose decision lacks a key are left out of that key's head. Box
/// questions cannot be distilled (an error naming the key). The rows are held
/// whole here; [`distill_rows`] trains on rows built a chunk at a time.
///
/// ```
/// use toolnexus::classifier::Questions;
/// use toolnexus_local::student::{TrainOptions, distill};
/// let e = distill(&[], &Questions::new(), "m", &TrainOptions::default()).unwrap_err();
/// assert!(e.to_string().contains("at least 20 are needed"), "{e}");
/// ```
pub fn distill(
    rows: &[TeacherRow],
    questions: &Questions,
    embedding_model: &str,
    options: &TrainOptions,
) -> Result<(Student, DistillReport), StudentError> {
    if rows.len() < MIN_ROWS {
        return Err(too_few(rows.len()));
    }
    let dim = rows[0].embedding.len();
    if let Some((i, _)) = rows
        .iter()
        .enumerate()
        .find(|(_, r)| r.embedding.len() != dim)
    {
        return Err(StudentError::new(format!(
            "distill: row {i}'s embedding has {} dimensions, row 0's {dim}",
            rows[i].embedding.len()
        )));
    }
    distill_rows(from_rows(rows, questions)?, embedding_model, options)
}

fn too_few(n: usize) -> StudentError {
    StudentError::new(format!("distill: {n} rows; at least {MIN_ROWS} are needed"))
}

/// [`distill`] on rows built a row at a time ([`TeacherRows`]), for the
/// questions they were built for: memory holds a bounded number of rows
/// (the rest wait in a temporary file), whatever their number, and the
/// student is the one [`distill`] trains on the same rows.
///
/// ```
/// use serde_json::json;
/// use toolnexus::classifier::Decision;
/// use toolnexus::judge::{noul, questions};
/// use toolnexus_local::student::{TeacherRows, TrainOptions, distill_rows};
///
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// let mut rows = TeacherRows::new(&qs);
/// for i in 0..100 {
///     let spam = i % 2 == 0;
///     let d = Decision::from_value(&json!({"model": "t", "answers": {"spam": {"type": "noul", "noul": if spam { 0.9 } else { 0.1 }}}}))?;
///     rows.push(&[if spam { 1.0 } else { -1.0 }, 0.2], &d)?;
/// }
/// let (student, report) = distill_rows(rows, "sha256:model", &TrainOptions::default())?;
/// assert!(report.questions["spam"].agreement > 0.99, "{report:?}");
/// assert_eq!(student.teacher_model, "t");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn distill_rows(
    rows: TeacherRows,
    embedding_model: &str,
    options: &TrainOptions,
) -> Result<(Student, DistillReport), StudentError> {
    let n_rows = rows.len();
    if n_rows < MIN_ROWS {
        return Err(too_few(n_rows));
    }
    let teachers = rows.teachers.clone();
    let questions = rows.questions.clone();
    let layout = rows.heads.clone();
    let mut legends = rows.legends.clone();
    let n_held = ((n_rows as f64 * options.holdout).round() as usize).clamp(1, n_rows - 1);
    // From here on a row is named by its position in the shuffled order: the
    // held-out rows come first, then the training rows.
    let ordered = rows.ordered(&shuffled(n_rows, options.seed))?;
    let dim = ordered.dim();

    let mut heads = BTreeMap::new();
    let mut reports = BTreeMap::new();
    // Per held-out row: the least confident key and whether every key agrees.
    let mut row_conf = vec![f64::INFINITY; n_held];
    let mut row_agrees = vec![true; n_held];
    for (index, h) in layout.iter().enumerate() {
        let key = &h.key;
        let (Some(q), Some(labels)) = (questions.get(key), h.labels.clone()) else {
            return Err(StudentError::new(format!(
                "distill: question {key:?} is a box question; students answer noul, choice and score"
            )));
        };
        let k = labels.len();
        let mut data = HeadRows {
            rows: &ordered,
            head: index,
            at: h.at,
            k,
            train: n_held..n_rows,
            held: 0..n_held,
            held_answers: false,
        };
        // How many rows answer it on each side, and which answers they give.
        let (mut n_train, mut n_held_i, mut seen) = (0usize, 0usize, vec![false; k]);
        data.rows.pass(0..n_rows, index, h.at, k, |r| {
            if r.pos < n_held {
                n_held_i += 1;
            } else {
                n_train += 1;
            }
            seen[argmax(r.t)] = true;
        })?;
        data.held_answers = n_held_i > 0;
        if n_train < MIN_ROWS / 2 {
            return Err(StudentError::new(format!(
                "distill: question {key:?}: the teacher answered it on {n_train} training rows; at least {} are needed",
                MIN_ROWS / 2
            )));
        }
        // A head learns to tell answers apart: one answer everywhere teaches
        // it nothing, and its figures would say nothing either.
        if let [only] = seen
            .iter()
            .enumerate()
            .filter(|(_, s)| **s)
            .map(|(c, _)| c)
            .collect::<Vec<_>>()[..]
        {
            return Err(StudentError::new(format!(
                "distill: question {key:?}: the teacher gave the same answer ({:?}) on all {} rows that answer it; a head needs at least two different answers to learn from (add examples of the others)",
                labels[only],
                n_train + n_held_i
            )));
        }
        if n_held_i == 0 {
            return Err(StudentError::new(format!(
                "distill: question {key:?}: none of the {n_held} held-out rows answers it, so its agreement cannot be measured (more teacher decisions on it, or a larger --holdout)"
            )));
        }
        let prior = options.priors.get(key.as_str());
        if let Some(rows) = prior
            && (rows.len() != k || rows.iter().any(|r| r.len() != dim))
        {
            return Err(StudentError::new(format!(
                "distill: question {key:?}: the prior has {} rows of {} numbers; the head needs {k} of {dim}",
                rows.len(),
                rows.first().map_or(0, Vec::len),
            )));
        }
        let (w, b, epochs) = train(&data, prior.map(Vec::as_slice), options)?;
        let mut head = Head {
            kind: q.kind().to_string(),
            hash: question_hash(q),
            labels,
            legend: legends.remove(key).unwrap_or_default(),
            weights: w
                .iter()
                .map(|r| r.iter().map(|&v| v as f32).collect())
                .collect(),
            bias: b.iter().map(|&v| v as f32).collect(),
            report: HeadReport {
                train: n_train,
                holdout: n_held_i,
                epochs,
                agreement: 0.0,
                log_loss: 0.0,
                ece: 0.0,
            },
        };
        let (mut agree, mut ll, mut top) = (0usize, 0.0, EceRows::default());
        data.rows.pass(0..n_held, index, h.at, k, |r| {
            let p = head.probabilities(r.x);
            let ok = argmax(&p) == argmax(r.t);
            agree += usize::from(ok);
            ll -=
                r.t.iter()
                    .zip(&p)
                    .map(|(ti, pi)| ti * pi.max(1e-15).ln())
                    .sum::<f64>();
            top.push_distribution(&p, argmax(r.t));
            row_conf[r.pos] = row_conf[r.pos].min(top_probability(&p));
            row_agrees[r.pos] &= ok;
        })?;
        // Over the held-out rows that answer this question (never empty here).
        let m = n_held_i as f64;
        head.report.agreement = agree as f64 / m;
        // Cross-entropy against a distribution is never negative; rounding in
        // a probability of 1 must not print -0.000.
        head.report.log_loss = (ll / m).max(0.0);
        head.report.ece = top.ece();
        reports.insert(key.clone(), head.report.clone());
        heads.insert(key.clone(), head);
    }
    // The threshold: the largest local share whose rows still agree enough.
    let mut held: Vec<(f64, bool)> = (0..n_held)
        .filter(|&i| row_conf[i].is_finite())
        .map(|i| (row_conf[i], row_agrees[i]))
        .collect();
    held.sort_by(|a, b| b.0.total_cmp(&a.0));
    let (mut kept, mut right) = (0usize, 0usize);
    let mut pick: Option<(f64, usize, usize)> = None;
    for (pos, &(c, ok)) in held.iter().enumerate() {
        kept += 1;
        right += usize::from(ok);
        let last_of_tie = held.get(pos + 1).is_none_or(|n| n.0 != c);
        if last_of_tie && right as f64 >= options.target_agreement * kept as f64 {
            pick = Some((c, kept, right));
        }
    }
    let (threshold, served, local_agreement) = match pick {
        Some((c, k, r)) => (
            c,
            k as f64 / held.len().max(1) as f64,
            Some(r as f64 / k as f64),
        ),
        // No cut keeps the target: everything goes to the teacher.
        None => (f64::INFINITY, 0.0, None),
    };
    let student = Student {
        embedding_model: embedding_model.to_string(),
        teacher_model: teachers.join(", "),
        threshold,
        target_agreement: options.target_agreement,
        served_locally: served,
        local_agreement,
        questions: heads,
        state_text: options.state_text,
    };
    let report = DistillReport {
        rows: n_rows,
        questions: reports,
        threshold,
        served_locally: served,
        local_agreement,
    };
    Ok((student, report))
}

/// Embeds each state (as [`state_text`](crate::state_text::state_text) writes
/// it) and pairs it with the teacher's decision: the rows [`distill`] trains on.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-rows-{}", std::process::id()));
/// # toolnexus_local::tiny_model_for_tests(&dir)?;
/// use serde_json::json;
/// use toolnexus::classifier::Decision;
/// let embedder = toolnexus_local::Embedder::load(&dir)?;
/// let d = Decision::from_value(&json!({"model": "t", "answers": {}}))?;
/// let rows = toolnexus_local::student::teacher_rows(&embedder, &[(json!("hello"), d)])?;
/// assert_eq!(rows[0].embedding.len(), embedder.dimension());
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok(())
/// # }
/// ```
pub fn teacher_rows(
    embedder: &Embedder,
    items: &[(Value, Decision)],
) -> Result<Vec<TeacherRow>, LocalError> {
    teacher_rows_as(embedder, items, StateText::Json)
}

/// [`teacher_rows`] with each state written as `text` says; train with the
/// same [`TrainOptions::state_text`].
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-rows-as-{}", std::process::id()));
/// # toolnexus_local::tiny_model_for_tests(&dir)?;
/// use serde_json::json;
/// use toolnexus::classifier::Decision;
/// use toolnexus_local::StateText;
/// let embedder = toolnexus_local::Embedder::load(&dir)?;
/// let d = Decision::from_value(&json!({"model": "t", "answers": {}}))?;
/// let state = json!({"tool_name": "Bash", "tool_input": {"command": "ls"}});
/// let rows = toolnexus_local::student::teacher_rows_as(&embedder, &[(state, d)], StateText::Lines)?;
/// assert_eq!(rows[0].embedding, embedder.embed(&["command: ls\ntool_name: Bash"])?[0]);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok(())
/// # }
/// ```
pub fn teacher_rows_as(
    embedder: &Embedder,
    items: &[(Value, Decision)],
    text: StateText,
) -> Result<Vec<TeacherRow>, LocalError> {
    let texts: Vec<String> = items
        .iter()
        .map(|(s, _)| text.write_for(embedder, s))
        .collect::<Result<_, _>>()?;
    let mut rows = Vec::with_capacity(items.len());
    for (chunk, part) in texts.chunks(64).zip(items.chunks(64)) {
        let embedded = embedder.embed(chunk)?;
        for (embedding, (_, decision)) in embedded.into_iter().zip(part) {
            rows.push(TeacherRow {
                embedding,
                decision: decision.clone(),
            });
        }
    }
    Ok(rows)
}
