//! Training students: the teacher's rows embedded and checked, one
//! softmax-regression head per question (Adam, early stopping on a held-out
//! split), the held-out report and the cascade threshold.

use std::collections::BTreeMap;

use serde_json::Value;
use toolnexus::classifier::{Decision, DecisionAnswer, Question, Questions};

use crate::embed::Embedder;
use crate::error::LocalError;
use crate::state_text::StateText;

use super::file::{HeadReport, StudentError};

/// Fewest rows [`distill`](super::distill) trains on.
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

/// Per-question figures of a [`distill`](super::distill) run.
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

/// Embeds each state (as [`state_text`](crate::state_text::state_text) writes
/// it) and pairs it with the teacher's decision: the rows [`distill`](super::distill) trains on.
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
