//! Fitting students: one softmax-regression head per question trained on
//! [`TeacherRows`] read back in the split's order (Adam, early stopping on the
//! held-out rows), the held-out report and the cascade threshold.

use std::collections::BTreeMap;
use std::ops::Range;

use toolnexus::assess::metrics::EceRows;
use toolnexus::classifier::{Questions, question_hash};

use crate::num::softmax;

use super::file::{Head, HeadReport, Student, StudentError, argmax, top_probability};
use super::rows::{Ordered, Row, TeacherRows, from_rows};
use super::train::{DistillReport, MIN_ROWS, TeacherRow, TrainOptions, shuffled};

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
