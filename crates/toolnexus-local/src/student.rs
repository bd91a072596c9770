//! Students: per-question heads trained on a teacher's decisions.
//!
//! A student answers from a sentence embedding of the state with one small
//! softmax-regression head per question, trained to reproduce the teacher's
//! distributions (soft targets, L2, Adam, early stopping on a held-out split of
//! the rows). [`distill`] trains every head on one split, reports each head's
//! held-out agreement with the teacher and its calibration, and picks the
//! cascade threshold: the lowest row confidence (the least confident of the
//! asked keys) at which the rows answered locally still agree with the teacher
//! on every key at least `target_agreement` of the time.
//!
//! The student file (`toolnexus.student`, version 1) pins what it was trained
//! on: the embedding model's SHA-256, each question's canonical hash and the
//! teacher's model id. A student answers only questions whose hash matches.
//!
//! ```
//! use serde_json::json;
//! use toolnexus::classifier::{Decision, Questions, choice_over};
//! use toolnexus_local::student::{TeacherRow, TrainOptions, distill};
//!
//! let qs = Questions::from([(
//!     "desk".to_string(),
//!     choice_over("Which desk?", [("billing", "money"), ("shipping", "parcels")]).into(),
//! )]);
//! // Two clusters of embeddings; the teacher sends the first to billing.
//! let rows: Vec<TeacherRow> = (0..200)
//!     .map(|i| {
//!         let billing = i % 2 == 0;
//!         let x = if billing { 1.0 } else { -1.0 };
//!         let e = vec![x, 0.1 * ((i % 7) as f32 - 3.0), 0.3];
//!         let d = Decision::from_value(&json!({"model": "teacher-1", "answers": {"desk": {
//!             "type": "choice", "choice": if billing { "billing" } else { "shipping" },
//!             "confidence": 0.9,
//!             "probabilities": {"billing": if billing { 0.9 } else { 0.1 }, "shipping": if billing { 0.1 } else { 0.9 }}}}}))
//!             .unwrap();
//!         TeacherRow { embedding: e, decision: d }
//!     })
//!     .collect();
//! let (student, report) = distill(&rows, &qs, "sha256:model", &TrainOptions::default())?;
//! assert!(report.questions["desk"].agreement > 0.99, "{report:?}");
//! let (d, confidence) = student.answer(&[1.0, 0.0, 0.3], &qs)?;
//! assert_eq!(d.choice("desk").unwrap().choice, "billing");
//! assert!(confidence > 0.5 && !d.calibrated);
//! # Ok::<(), toolnexus_local::student::StudentError>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolnexus::assess::metrics::EceRows;
use toolnexus::classifier::{
    Decision, DecisionAnswer, Question, Questions, choice_confidence, question_hash,
    score_confidence,
};

use crate::num::{dot, softmax};
use crate::zero_shot::StateText;

/// The `format` field of a student file.
pub const STUDENT_FORMAT: &str = "toolnexus.student";
/// The student file version this build writes and reads.
pub const STUDENT_VERSION: u64 = 1;
/// Fewest rows [`distill`] trains on.
pub const MIN_ROWS: usize = 20;

/// What went wrong training, loading or using a student.
///
/// ```
/// let e = toolnexus_local::student::Student::from_json("{}", "s.json").unwrap_err();
/// assert!(e.to_string().starts_with("s.json: not a student file"), "{e}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StudentError(String);

impl StudentError {
    fn new(message: impl Into<String>) -> StudentError {
        StudentError(message.into())
    }
}

impl fmt::Display for StudentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StudentError {}

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

/// Held-out figures of one head.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadReport {
    /// Rows trained on.
    pub train: usize,
    /// Rows held out.
    pub holdout: usize,
    /// Epochs run (the best one is kept).
    pub epochs: usize,
    /// Share of held-out rows whose top answer is the teacher's.
    pub agreement: f64,
    /// Held-out cross-entropy against the teacher's distributions.
    pub log_loss: f64,
    /// Expected calibration error of the student's top probability for
    /// agreeing with the teacher's top class (`EceRows::ece`, the ECE every
    /// `assess` command prints).
    pub ece: f64,
}

/// One question's head.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Head {
    /// `noul`, `choice` or `score`.
    pub kind: String,
    /// The canonical hash of the question it was trained on.
    pub hash: String,
    /// Class ids in output order: `false`/`true`, option ids, or levels.
    pub labels: Vec<String>,
    /// Score levels' texts, as the teacher gave them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub legend: BTreeMap<String, String>,
    /// One weight row per label.
    pub weights: Vec<Vec<f32>>,
    /// One bias per label.
    pub bias: Vec<f32>,
    /// Held-out figures.
    pub report: HeadReport,
}

impl Head {
    /// The head's distribution for one embedding.
    ///
    /// ```
    /// use toolnexus_local::student::{Head, HeadReport};
    /// let report = HeadReport { train: 0, holdout: 0, epochs: 0, agreement: 0.0, log_loss: 0.0, ece: 0.0 };
    /// let h = Head { kind: "noul".into(), hash: String::new(), labels: vec!["false".into(), "true".into()],
    ///     legend: Default::default(), weights: vec![vec![0.0], vec![2.0]], bias: vec![0.0, 0.0], report };
    /// let p = h.probabilities(&[1.0]);
    /// assert!((p[1] - 2f64.exp() / (1.0 + 2f64.exp())).abs() < 1e-6);
    /// ```
    pub fn probabilities(&self, x: &[f32]) -> Vec<f64> {
        let logits: Vec<f64> = self
            .weights
            .iter()
            .zip(&self.bias)
            .map(|(w, b)| f64::from(*b) + dot(w, x))
            .collect();
        softmax(&logits)
    }

    /// The wire answer for a distribution.
    fn answer(&self, p: &[f64]) -> Value {
        let top = argmax(p);
        let probabilities: serde_json::Map<String, Value> = self
            .labels
            .iter()
            .zip(p)
            .map(|(l, &v)| (l.clone(), Value::from(v)))
            .collect();
        match self.kind.as_str() {
            "noul" => json!({"type": "noul", "noul": p[1]}),
            "choice" => json!({
                "type": "choice",
                "choice": self.labels[top],
                "confidence": choice_confidence(p),
                "probabilities": probabilities,
            }),
            _ => json!({
                "type": "score",
                "score": p.iter().enumerate().map(|(i, v)| i as f64 * v).sum::<f64>(),
                "confidence": score_confidence(p),
                "legend": self.legend,
                "probabilities": probabilities,
            }),
        }
    }
}

/// How sure a head is, for the cascade's gate: its top probability. The
/// threshold in a student file is a cut on this; the `confidence` an answer
/// reports follows SPEC §16's formulas instead (`choice_confidence`,
/// `score_confidence`), as every style's does.
fn top_probability(p: &[f64]) -> f64 {
    p.iter().copied().fold(0.0, f64::max)
}

fn argmax(p: &[f64]) -> usize {
    let mut best = 0;
    for (i, v) in p.iter().enumerate() {
        if *v > p[best] {
            best = i;
        }
    }
    best
}

/// A trained student: its heads and what they were trained on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Student {
    /// SHA-256 of the embedding model's weights.
    pub embedding_model: String,
    /// The teacher's model id.
    pub teacher_model: String,
    /// Answer locally when every asked key's confidence is at least this.
    pub threshold: f64,
    /// The agreement the threshold was chosen to keep.
    pub target_agreement: f64,
    /// Share of held-out rows the threshold answers locally.
    pub served_locally: f64,
    /// Agreement with the teacher on every key over those rows.
    pub local_agreement: Option<f64>,
    /// Heads by question key.
    pub questions: BTreeMap<String, Head>,
    /// How a state is written for the embedding model: as the rows the heads
    /// trained on were ([`TrainOptions::state_text`]). Left out of the file
    /// when it is the default, JSON.
    #[serde(default, skip_serializing_if = "StateText::is_json")]
    pub state_text: StateText,
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
fn labels_of(q: &Question) -> Option<Vec<String>> {
    match q {
        Question::Noul(_) => Some(vec!["false".into(), "true".into()]),
        Question::Choice(c) => Some(c.criteria.keys().cloned().collect()),
        Question::Score(s) => Some((0..s.criteria.len()).map(|i| i.to_string()).collect()),
        _ => None,
    }
}

/// The teacher's distribution over `labels` for one answer.
fn target_of(answer: &DecisionAnswer, labels: &[String]) -> Option<Vec<f64>> {
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
fn shuffled(n: usize, seed: u64) -> Vec<usize> {
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

/// Softmax regression with soft targets: full-batch Adam with L2, keeping the
/// epoch with the best held-out cross-entropy.
fn train(
    x: &[&[f32]],
    t: &[Vec<f64>],
    train: &[usize],
    held: &[usize],
    k: usize,
    prior: Option<&[Vec<f32>]>,
    o: &TrainOptions,
) -> (Vec<Vec<f64>>, Vec<f64>, usize) {
    let d = x.first().map_or(0, |r| r.len());
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
    let loss = |w: &[Vec<f64>], b: &[f64], rows: &[usize]| -> f64 {
        rows.iter()
            .map(|&i| {
                let p = softmax(&logits(w, b, x[i]));
                -t[i]
                    .iter()
                    .zip(&p)
                    .map(|(ti, pi)| ti * pi.max(1e-15).ln())
                    .sum::<f64>()
            })
            .sum::<f64>()
            / rows.len().max(1) as f64
    };
    let held_or_train = if held.is_empty() { train } else { held };
    // Epoch 0 competes too: with a prior, no training may be the best.
    let mut best = (loss(&w, &b, held_or_train), w.clone(), b.clone(), 0usize);
    let mut since_best = 0;
    let mut epochs = 0;
    let n = train.len().max(1) as f64;
    for epoch in 1..=o.max_epochs {
        epochs = epoch;
        let mut gw = vec![vec![0.0f64; d]; k];
        let mut gb = vec![0.0f64; k];
        for &i in train {
            let p = softmax(&logits(&w, &b, x[i]));
            for c in 0..k {
                let g = (p[c] - t[i][c]) / n;
                gb[c] += g;
                for (gj, xj) in gw[c].iter_mut().zip(x[i]) {
                    *gj += g * f64::from(*xj);
                }
            }
        }
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
        let held_loss = loss(&w, &b, held_or_train);
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
    let _ = epochs;
    (best.1, best.2, best.3)
}

/// Trains one head per question on the teacher's decisions, reports held-out
/// agreement and calibration, and picks the cascade threshold.
///
/// Rows whose decision lacks a key are left out of that key's head. Box
/// questions cannot be distilled (an error naming the key).
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
        return Err(StudentError::new(format!(
            "distill: {} rows; at least {MIN_ROWS} are needed",
            rows.len()
        )));
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
    for (i, r) in rows.iter().enumerate() {
        check_teacher(&r.decision, questions, None)
            .map_err(|e| StudentError::new(format!("distill: row {i}: {e}")))?;
    }
    let mut teachers: Vec<String> = Vec::new();
    for r in rows {
        if !teachers.contains(&r.decision.model) {
            teachers.push(r.decision.model.clone());
        }
    }
    let order = shuffled(rows.len(), options.seed);
    let n_held = ((rows.len() as f64 * options.holdout).round() as usize).clamp(1, rows.len() - 1);
    let (held_rows, train_rows) = order.split_at(n_held);
    let x: Vec<&[f32]> = rows.iter().map(|r| r.embedding.as_slice()).collect();

    let mut heads = BTreeMap::new();
    let mut reports = BTreeMap::new();
    // Per held-out row: the least confident key and whether every key agrees.
    let mut row_conf = vec![f64::INFINITY; rows.len()];
    let mut row_agrees = vec![true; rows.len()];
    for (key, q) in questions {
        let labels = labels_of(q).ok_or_else(|| {
            StudentError::new(format!("distill: question {key:?} is a box question; students answer noul, choice and score"))
        })?;
        let mut t: Vec<Vec<f64>> = vec![Vec::new(); rows.len()];
        let mut has = vec![false; rows.len()];
        let mut legend = BTreeMap::new();
        for (i, r) in rows.iter().enumerate() {
            if let Some(a) = r.decision.answers.get(key)
                && let (Some(target), true) = (target_of(a, &labels), a.answer_type() == q.kind())
            {
                t[i] = target;
                has[i] = true;
                if let (DecisionAnswer::Score(s), true) = (a, legend.is_empty()) {
                    legend = s.legend.clone();
                }
            }
        }
        let train_i: Vec<usize> = train_rows.iter().copied().filter(|&i| has[i]).collect();
        let held_i: Vec<usize> = held_rows.iter().copied().filter(|&i| has[i]).collect();
        if train_i.len() < MIN_ROWS / 2 {
            return Err(StudentError::new(format!(
                "distill: question {key:?}: the teacher answered it on {} training rows; at least {} are needed",
                train_i.len(),
                MIN_ROWS / 2
            )));
        }
        // A head learns to tell answers apart: one answer everywhere teaches
        // it nothing, and its figures would say nothing either.
        let mut classes: Vec<usize> = (0..rows.len())
            .filter(|&i| has[i])
            .map(|i| argmax(&t[i]))
            .collect();
        classes.sort_unstable();
        classes.dedup();
        if let [only] = classes[..] {
            return Err(StudentError::new(format!(
                "distill: question {key:?}: the teacher gave the same answer ({:?}) on all {} rows that answer it; a head needs at least two different answers to learn from (add examples of the others)",
                labels[only],
                has.iter().filter(|&&h| h).count()
            )));
        }
        if held_i.is_empty() {
            return Err(StudentError::new(format!(
                "distill: question {key:?}: none of the {} held-out rows answers it, so its agreement cannot be measured (more teacher decisions on it, or a larger --holdout)",
                held_rows.len()
            )));
        }
        let prior = options.priors.get(key.as_str());
        if let Some(rows) = prior
            && (rows.len() != labels.len() || rows.iter().any(|r| r.len() != dim))
        {
            return Err(StudentError::new(format!(
                "distill: question {key:?}: the prior has {} rows of {} numbers; the head needs {} of {dim}",
                rows.len(),
                rows.first().map_or(0, Vec::len),
                labels.len()
            )));
        }
        let (w, b, epochs) = train(
            &x,
            &t,
            &train_i,
            &held_i,
            labels.len(),
            prior.map(Vec::as_slice),
            options,
        );
        let head = Head {
            kind: q.kind().to_string(),
            hash: question_hash(q),
            labels,
            legend,
            weights: w
                .iter()
                .map(|r| r.iter().map(|&v| v as f32).collect())
                .collect(),
            bias: b.iter().map(|&v| v as f32).collect(),
            report: HeadReport {
                train: train_i.len(),
                holdout: held_i.len(),
                epochs,
                agreement: 0.0,
                log_loss: 0.0,
                ece: 0.0,
            },
        };
        let (mut agree, mut ll, mut top) = (0usize, 0.0, EceRows::default());
        for &i in &held_i {
            let p = head.probabilities(x[i]);
            let ok = argmax(&p) == argmax(&t[i]);
            agree += usize::from(ok);
            ll -= t[i]
                .iter()
                .zip(&p)
                .map(|(ti, pi)| ti * pi.max(1e-15).ln())
                .sum::<f64>();
            top.push_distribution(&p, argmax(&t[i]));
            row_conf[i] = row_conf[i].min(top_probability(&p));
            row_agrees[i] &= ok;
        }
        // Over the held-out rows that answer this question (never empty here).
        let m = held_i.len() as f64;
        let mut head = head;
        head.report.agreement = agree as f64 / m;
        // Cross-entropy against a distribution is never negative; rounding in
        // a probability of 1 must not print -0.000.
        head.report.log_loss = (ll / m).max(0.0);
        head.report.ece = top.ece();
        reports.insert(key.clone(), head.report.clone());
        heads.insert(key.clone(), head);
    }
    // The threshold: the largest local share whose rows still agree enough.
    let mut held: Vec<(f64, bool)> = held_rows
        .iter()
        .filter(|&&i| row_conf[i].is_finite())
        .map(|&i| (row_conf[i], row_agrees[i]))
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
        rows: rows.len(),
        questions: reports,
        threshold,
        served_locally: served,
        local_agreement,
    };
    Ok((student, report))
}

impl Student {
    /// The student's decision on one embedded state and its row confidence
    /// (the least confident asked key). Every asked key needs a head trained
    /// on the same question (canonical hash), else an error naming the key.
    ///
    /// ```
    /// # use std::collections::BTreeMap;
    /// use toolnexus::classifier::Questions;
    /// # let s = toolnexus_local::student::Student { embedding_model: "m".into(), teacher_model: "t".into(),
    /// #     threshold: 0.9, target_agreement: 0.98, served_locally: 0.0, local_agreement: None, questions: BTreeMap::new(), state_text: Default::default() };
    /// let qs = Questions::from([("spam".to_string(), toolnexus::classifier::NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into())]);
    /// let e = s.answer(&[0.0], &qs).unwrap_err();
    /// assert!(e.to_string().contains("\"spam\""), "{e}");
    /// ```
    pub fn answer(
        &self,
        embedding: &[f32],
        questions: &Questions,
    ) -> Result<(Decision, f64), StudentError> {
        let mut answers = serde_json::Map::new();
        let mut least = f64::INFINITY;
        for (key, q) in questions {
            let head = self.head_for(key, q)?;
            if head
                .weights
                .first()
                .is_some_and(|w| w.len() != embedding.len())
            {
                return Err(StudentError::new(format!(
                    "student: question {key:?}: the head takes {} dimensions, the embedding has {}",
                    head.weights[0].len(),
                    embedding.len()
                )));
            }
            let p = head.probabilities(embedding);
            least = least.min(top_probability(&p));
            answers.insert(key.clone(), head.answer(&p));
        }
        let d = Decision::from_value(&json!({
            "model": format!("toolnexus-student (teacher {})", self.teacher_model),
            "answers": answers,
            "calibrated": false,
        }))
        .map_err(|e| StudentError::new(format!("student: {}", e.detail())))?;
        Ok((d, if least.is_finite() { least } else { 0.0 }))
    }

    /// The head for `key` trained on question `q`, or why there is none.
    ///
    /// ```
    /// # use std::collections::BTreeMap;
    /// # let s = toolnexus_local::student::Student { embedding_model: "m".into(), teacher_model: "t".into(),
    /// #     threshold: 0.9, target_agreement: 0.98, served_locally: 0.0, local_agreement: None, questions: BTreeMap::new(), state_text: Default::default() };
    /// let q = toolnexus::classifier::NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into();
    /// assert!(s.head_for("spam", &q).is_err());
    /// ```
    pub fn head_for(&self, key: &str, q: &Question) -> Result<&Head, StudentError> {
        let head = self.questions.get(key).ok_or_else(|| {
            StudentError::new(format!(
                "student: no head for question {key:?} (trained on {})",
                names(&self.questions)
            ))
        })?;
        if head.hash != question_hash(q) {
            return Err(StudentError::new(format!(
                "student: question {key:?} has changed since the student was trained (hash {} there, {} asked)",
                head.hash,
                question_hash(q)
            )));
        }
        Ok(head)
    }

    /// The file form: pretty JSON with `format` and `version`, final newline.
    ///
    /// ```
    /// # use std::collections::BTreeMap;
    /// # let s = toolnexus_local::student::Student { embedding_model: "m".into(), teacher_model: "t".into(),
    /// #     threshold: 0.9, target_agreement: 0.98, served_locally: 0.0, local_agreement: None, questions: BTreeMap::new(), state_text: Default::default() };
    /// let text = s.to_json();
    /// assert!(text.contains("\"format\": \"toolnexus.student\""));
    /// assert_eq!(toolnexus_local::student::Student::from_json(&text, "s.json").unwrap(), s);
    /// ```
    pub fn to_json(&self) -> String {
        let mut v = serde_json::to_value(self).expect("a student serialises");
        if let Some(o) = v.as_object_mut() {
            o.insert("format".into(), Value::from(STUDENT_FORMAT));
            o.insert("version".into(), Value::from(STUDENT_VERSION));
            // JSON has no infinity: "never local" is written as null.
            if !self.threshold.is_finite() {
                o.insert("threshold".into(), Value::Null);
            }
        }
        let mut s = serde_json::to_string_pretty(&v).expect("a student serialises");
        s.push('\n');
        s
    }

    /// Parses a student file's text; `source` names it in errors.
    pub fn from_json(text: &str, source: impl AsRef<Path>) -> Result<Student, StudentError> {
        let src = source.as_ref().display().to_string();
        let mut v: Value = serde_json::from_str(text).map_err(|e| {
            StudentError::new(format!("{src}:{}:{}: not JSON: {e}", e.line(), e.column()))
        })?;
        let format = v.get("format").and_then(Value::as_str);
        if format != Some(STUDENT_FORMAT) {
            return Err(StudentError::new(format!(
                "{src}: not a student file (\"format\" is {}, not {STUDENT_FORMAT:?})",
                v.get("format")
                    .map_or("absent".to_string(), Value::to_string)
            )));
        }
        match v.get("version").and_then(Value::as_u64) {
            Some(STUDENT_VERSION) => {}
            other => {
                return Err(StudentError::new(format!(
                    "{src}: student file version {} is not supported (this build reads version {STUDENT_VERSION})",
                    other.map_or("absent".to_string(), |n| n.to_string())
                )));
            }
        }
        if let Some(o) = v.as_object_mut() {
            o.remove("format");
            o.remove("version");
            if o.get("threshold").is_some_and(Value::is_null) {
                o.insert("threshold".into(), Value::from(f64::MAX));
            }
        }
        let mut s: Student =
            serde_json::from_value(v).map_err(|e| StudentError::new(format!("{src}: {e}")))?;
        if s.threshold == f64::MAX {
            s.threshold = f64::INFINITY;
        }
        for (key, h) in &s.questions {
            let k = h.labels.len();
            let d = h.weights.first().map_or(0, Vec::len);
            if k < 2
                || h.weights.len() != k
                || h.bias.len() != k
                || h.weights.iter().any(|w| w.len() != d)
            {
                return Err(StudentError::new(format!(
                    "{src}: question {key:?}: {k} labels, {} weight rows, {} biases: the shapes do not fit",
                    h.weights.len(),
                    h.bias.len()
                )));
            }
        }
        Ok(s)
    }

    /// Reads a student file.
    ///
    /// ```
    /// let e = toolnexus_local::student::Student::load("/nonexistent/s.json").unwrap_err();
    /// assert!(e.to_string().starts_with("/nonexistent/s.json: cannot read"), "{e}");
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Student, StudentError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| StudentError::new(format!("{}: cannot read: {e}", path.display())))?;
        Student::from_json(&text, path)
    }

    /// Writes the student file atomically.
    ///
    /// ```no_run
    /// # fn f(s: toolnexus_local::student::Student) -> Result<(), toolnexus_local::student::StudentError> {
    /// s.save("student.json")?;
    /// # Ok(()) }
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), StudentError> {
        toolnexus::judge::write_atomic(path, self.to_json().as_bytes())
            .map_err(|e| StudentError::new(e.to_string()))
    }
}

fn names(heads: &BTreeMap<String, Head>) -> String {
    if heads.is_empty() {
        return "none".to_string();
    }
    heads
        .keys()
        .map(|k| format!("{k:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Embeds each state (as [`state_text`](crate::zero_shot::state_text) writes
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
    embedder: &crate::Embedder,
    items: &[(Value, Decision)],
) -> Result<Vec<TeacherRow>, crate::LocalError> {
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
    embedder: &crate::Embedder,
    items: &[(Value, Decision)],
    text: StateText,
) -> Result<Vec<TeacherRow>, crate::LocalError> {
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

/// The model name of a student's decisions starts with this.
pub const STUDENT_STYLE: &str = "student";

/// A student with the embedder it was trained on: the `student` style's
/// evaluator, and the local half of a [`cascade`].
#[derive(Clone)]
pub struct LocalStudent {
    embedder: crate::Embedder,
    student: std::sync::Arc<Student>,
}

impl fmt::Debug for LocalStudent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalStudent")
            .field("teacher_model", &self.student.teacher_model)
            .field(
                "questions",
                &self.student.questions.keys().collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl LocalStudent {
    /// Pairs a student with an embedder; refused when the student was trained
    /// on another embedding model.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-pair-{}", std::process::id()));
    /// # toolnexus_local::tiny_model_for_tests(&dir)?;
    /// # use std::collections::BTreeMap;
    /// let embedder = toolnexus_local::Embedder::load(&dir)?;
    /// let other = toolnexus_local::student::Student { embedding_model: "sha256:other".into(), teacher_model: "t".into(),
    ///     threshold: 0.9, target_agreement: 0.98, served_locally: 0.0, local_agreement: None, questions: BTreeMap::new(), state_text: Default::default() };
    /// let e = toolnexus_local::student::LocalStudent::new(embedder, other).unwrap_err();
    /// assert!(e.to_string().contains("another embedding model"), "{e}");
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(embedder: crate::Embedder, student: Student) -> Result<LocalStudent, StudentError> {
        if student.embedding_model != embedder.model_hash() {
            return Err(StudentError::new(format!(
                "student: trained on another embedding model ({}; this model is {})",
                student.embedding_model,
                embedder.model_hash()
            )));
        }
        Ok(LocalStudent {
            embedder,
            student: std::sync::Arc::new(student),
        })
    }

    /// The student file's content.
    pub fn student(&self) -> &Student {
        &self.student
    }

    /// The decision on one state and its row confidence (blocking: embeds).
    pub fn decide(
        &self,
        state: &Value,
        questions: &Questions,
    ) -> Result<(Decision, f64), toolnexus::classifier::ClassifierError> {
        use toolnexus::classifier::ClassifierError;
        for (key, q) in questions {
            if !self.student.questions.contains_key(key) {
                return Err(ClassifierError::unsupported(
                    STUDENT_STYLE,
                    format_args!(
                        "question {key:?}: it has no head for it (trained on {})",
                        names(&self.student.questions)
                    ),
                ));
            }
            self.student.head_for(key, q).map_err(|e| {
                let why = e.to_string();
                ClassifierError::unsupported(
                    STUDENT_STYLE,
                    why.trim_start_matches("student: ").to_string(),
                )
            })?;
        }
        // Written and cut only as far as the model reads: a huge state costs
        // what a small one does.
        let text = self
            .student
            .state_text
            .write_for(&self.embedder, state)
            .map_err(|e| ClassifierError::custom(format_args!("local: {e}")))?;
        let embedded = self
            .embedder
            .embed_counted(&[text.as_str()])
            .map_err(|e| ClassifierError::custom(format_args!("local: {e}")))?;
        let (mut d, least) = self
            .student
            .answer(&embedded.vectors[0], questions)
            .map_err(|e| ClassifierError::custom(e.to_string()))?;
        d.usage.input_tokens = embedded.total_tokens() as i64;
        Ok((d, least))
    }

    fn decide_blocking(
        &self,
        request: toolnexus::classifier::EvalRequest,
    ) -> impl std::future::Future<
        Output = Result<(Decision, f64), toolnexus::classifier::ClassifierError>,
    > + Send
    + 'static {
        let me = self.clone();
        async move {
            use toolnexus::classifier::ClassifierError;
            request.refuse_beyond(STUDENT_STYLE, &me.model())?;
            let toolnexus::classifier::EvalRequest {
                state, questions, ..
            } = request;
            match tokio::runtime::Handle::try_current() {
                Ok(rt) => rt
                    .spawn_blocking(move || me.decide(&state, &questions))
                    .await
                    .map_err(|e| ClassifierError::custom(format_args!("local: {e}")))?,
                Err(_) => me.decide(&state, &questions),
            }
        }
    }

    fn model(&self) -> String {
        format!("toolnexus-student (teacher {})", self.student.teacher_model)
    }
}

impl toolnexus::classifier::Evaluator for LocalStudent {
    fn call(
        &self,
        _ctx: toolnexus::classifier::EvalContext,
        request: toolnexus::classifier::EvalRequest,
    ) -> toolnexus::classifier::BoxFuture<Result<Decision, toolnexus::classifier::ClassifierError>>
    {
        let fut = self.decide_blocking(request);
        Box::pin(async move { fut.await.map(|(d, _)| d) })
    }
}

/// The `student` style: every asked question answered by its head (a question
/// without one, or changed since training, is `Unsupported` naming the key).
/// `calibrated = false`.
///
/// Its [`fingerprint`](toolnexus::classifier::Classifier::fingerprint) names
/// the student file's contents and the embedder's weights, so a cache never
/// serves one student's answer for another's.
pub fn student(local: LocalStudent) -> toolnexus::classifier::Classifier {
    let part = local.fingerprint();
    toolnexus::classifier::Classifier::from_evaluator(local.model(), local)
        .with_fingerprint_part(STUDENT_STYLE, part)
}

impl LocalStudent {
    /// The student's contents (its file's text, hashed) and the weights it
    /// reads embeddings from: what a `student` or cascade fingerprint names.
    fn fingerprint(&self) -> String {
        format!(
            "{} weights=sha256:{}",
            toolnexus::classifier::Fingerprint::digest(self.student.to_json()),
            self.embedder.model_hash()
        )
    }
}

/// How many calls a [`cascade`] answered where.
#[derive(Debug, Clone, Default)]
pub struct CascadeStats {
    local: std::sync::Arc<std::sync::atomic::AtomicU64>,
    teacher: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl CascadeStats {
    /// Calls the student answered.
    pub fn local(&self) -> u64 {
        self.local.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Calls passed to the teacher.
    pub fn teacher(&self) -> u64 {
        self.teacher.load(std::sync::atomic::Ordering::Relaxed)
    }
}

struct Cascade {
    local: LocalStudent,
    teacher: toolnexus::classifier::Classifier,
    threshold: f64,
    stats: CascadeStats,
}

impl toolnexus::classifier::FullEvaluator for Cascade {
    /// The student's answers cost an explicit 0 (`local`), whatever style the
    /// teacher is; the teacher's come back as its classifier settled them
    /// (request id, cost), for a pricing layer outside to price.
    fn call_full(
        &self,
        ctx: toolnexus::classifier::EvalContext,
        request: toolnexus::classifier::EvalRequest,
    ) -> toolnexus::classifier::BoxFuture<
        Result<toolnexus::classifier::Evaluated, toolnexus::classifier::ClassifierError>,
    > {
        use std::sync::atomic::Ordering;
        use toolnexus::cost::{Cost, CostSource};
        let (teacher, threshold, stats) =
            (self.teacher.clone(), self.threshold, self.stats.clone());
        // A student that never serves (no cut kept the target) is not asked.
        let local = threshold
            .is_finite()
            .then(|| self.local.decide_blocking(request.clone()));
        Box::pin(async move {
            let local = match local {
                Some(local) => Some(local.await),
                None => None,
            };
            match local {
                Some(Ok((d, least))) if least >= threshold => {
                    stats.local.fetch_add(1, Ordering::Relaxed);
                    let mut e = toolnexus::classifier::Evaluated::new(d);
                    e.cost = Cost::new(0.0, CostSource::Local);
                    Ok(e)
                }
                // Unsure, or a question it has no head for: the teacher answers.
                _ => {
                    stats.teacher.fetch_add(1, Ordering::Relaxed);
                    teacher.evaluate_request(ctx, request).await
                }
            }
        })
    }
}

/// Answers locally when the student is at least `threshold` confident on
/// every asked key (the file's threshold when `None`), else asks `teacher`.
/// The decision's `model` says which answered; `stats` counts both. The
/// student's answers carry an explicit 0 cost with source `local`
/// ([`toolnexus::cost::CostSource::Local`]), which a pricing layer outside
/// keeps; the teacher's are priced as the teacher's.
pub fn cascade(
    local: LocalStudent,
    teacher: toolnexus::classifier::Classifier,
    threshold: Option<f64>,
) -> (toolnexus::classifier::Classifier, CascadeStats) {
    let threshold = threshold.unwrap_or(local.student.threshold);
    let stats = CascadeStats::default();
    let model = format!("cascade ({} / {})", local.model(), teacher.model());
    // The teacher's fingerprint, then the student and the threshold that
    // decides which of the two answers.
    let part = format!("{} threshold={threshold:?}", local.fingerprint());
    let beneath = teacher.clone();
    let c = Cascade {
        local,
        teacher,
        threshold,
        stats: stats.clone(),
    };
    (
        toolnexus::classifier::Classifier::from_evaluator(model, c)
            .layered_over(&beneath)
            .with_fingerprint_part("cascade", part),
        stats,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qs() -> Questions {
        toolnexus::judge::questions(&[
            toolnexus::judge::noul("spam", "Is it spam?"),
            toolnexus::judge::noul("rude", "Is it rude?"),
        ])
        .unwrap()
    }

    /// 60 rows in two clusters; `answers(i)` is row i's answers object.
    fn rows(answers: impl Fn(usize) -> Value) -> Vec<TeacherRow> {
        (0..60)
            .map(|i| {
                let x = if i % 2 == 0 { 1.0 } else { -1.0 };
                TeacherRow {
                    embedding: vec![x, 0.1 * ((i % 7) as f32 - 3.0), 0.3],
                    decision: Decision::from_value(&json!({"model": "t", "answers": answers(i)}))
                        .unwrap(),
                }
            })
            .collect()
    }

    fn noul(p: f64) -> Value {
        json!({"type": "noul", "noul": p})
    }

    fn split(i: usize) -> f64 {
        if i.is_multiple_of(2) { 0.9 } else { 0.1 }
    }

    #[test]
    fn a_teacher_number_outside_zero_to_one_is_refused_naming_the_row() {
        let rows = rows(|i| {
            let spam = if i == 3 { 1.5 } else { split(i) };
            json!({"spam": noul(spam), "rude": noul(split(i + 1))})
        });
        let e = distill(&rows, &qs(), "m", &TrainOptions::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "distill: row 3: question \"spam\": noul 1.5 is outside [0, 1]"
        );
    }

    #[test]
    fn a_question_with_one_answer_everywhere_is_refused_naming_it() {
        let rows =
            rows(|i| json!({"spam": noul(split(i)), "rude": noul(0.2 + 0.01 * (i % 5) as f64)}));
        let e = distill(&rows, &qs(), "m", &TrainOptions::default()).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "distill: question \"rude\": the teacher gave the same answer (\"false\") on all 60 rows"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_question_no_held_out_row_answers_is_refused_not_reported_as_zero() {
        let o = TrainOptions::default();
        let n_held = (60.0 * o.holdout).round() as usize;
        let held: Vec<usize> = shuffled(60, o.seed)[..n_held].to_vec();
        let rows = rows(|i| {
            if held.contains(&i) {
                json!({"spam": noul(split(i))})
            } else {
                json!({"spam": noul(split(i)), "rude": noul(split(i + 1))})
            }
        });
        let e = distill(&rows, &qs(), "m", &o).unwrap_err();
        assert!(
            e.to_string().starts_with(&format!(
                "distill: question \"rude\": none of the {n_held} held-out rows answers it"
            )),
            "{e}"
        );
    }

    #[test]
    fn figures_are_possible_ones() {
        // Sure teachers: the held-out log loss is near 0 and never below it.
        let rows = rows(|i| {
            let y = if i % 2 == 0 { 1.0 } else { 0.0 };
            json!({"spam": noul(y), "rude": noul(1.0 - y)})
        });
        let (_, report) = distill(&rows, &qs(), "m", &TrainOptions::default()).unwrap();
        for (k, r) in &report.questions {
            assert!(
                r.log_loss >= 0.0 && r.log_loss.is_sign_positive(),
                "{k}: {r:?}"
            );
            assert!((0.0..=1.0).contains(&r.agreement), "{k}: {r:?}");
            assert!((0.0..=1.0).contains(&r.ece), "{k}: {r:?}");
            assert!(r.holdout > 0, "{k}: {r:?}");
        }
    }

    #[test]
    fn check_teacher_names_another_level_count() {
        let now = toolnexus::judge::questions(&[toolnexus::judge::score(
            "urgency",
            "How soon?",
            ["low", "high"],
        )])
        .unwrap();
        let then = toolnexus::judge::questions(&[toolnexus::judge::score(
            "urgency",
            "How soon?",
            ["low", "normal", "high"],
        )])
        .unwrap();
        let d = Decision::from_value(&json!({"model": "t", "answers": {"urgency": {
            "type": "score", "score": 2.0, "confidence": 0.8,
            "legend": {"0": "low", "1": "normal", "2": "high"},
            "probabilities": {"0": 0.1, "1": 0.1, "2": 0.8}}}}))
        .unwrap();
        let e = check_teacher(&d, &now, Some(&then)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "question \"urgency\": the teacher was asked on 3 levels, this rubric has 2"
        );
        let e = check_teacher(&d, &now, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "question \"urgency\": score 2 is outside the rubric's levels 0..=1"
        );
    }
}
