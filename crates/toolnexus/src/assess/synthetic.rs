//! Synthetic runs with known true probabilities: the ground truth the
//! calibration and threshold code is tested and benchmarked against.
//!
//! Each row has one question of each kind. A latent logit (noul) or logit
//! vector (choice over 4 options, score over 5 levels) is drawn from a normal
//! distribution; the gold label is drawn from the *true* probabilities
//! (`softmax` of the logits), and the recorded answer reports
//! `softmax(overconfidence × logits)`. With `overconfidence` 1 the answers are
//! calibrated; above 1 they are over-confident in exactly the way Platt and
//! temperature scaling can undo.
//!
//! ```
//! use toolnexus::assess::synthetic::{SyntheticOptions, synthetic_run};
//! use toolnexus::assess::{SummaryOptions, summarize};
//!
//! let run = synthetic_run(&SyntheticOptions { rows: 2_000, overconfidence: 3.0, seed: 1 });
//! let s = summarize(&run, &SummaryOptions::default());
//! assert!(s.question("claim").unwrap().ece > 0.1);
//! ```

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::examples::Gold;
use super::rng::Rng;
use super::run::{Outcome, Row, Run};
use crate::classifier::{Decision, Questions};
use crate::judge::{choice, noul, questions, score};

/// The choice question's options.
pub const TOPICS: [&str; 4] = ["billing", "bug", "account", "other"];

/// The score question's number of levels.
pub const LEVELS: usize = 5;

/// What [`synthetic_run`] draws.
///
/// ```
/// let o = toolnexus::assess::synthetic::SyntheticOptions::default();
/// assert_eq!((o.rows, o.overconfidence, o.seed), (1_000, 1.0, 0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SyntheticOptions {
    /// Rows to draw.
    pub rows: usize,
    /// How much sharper the reported probabilities are than the truth (1:
    /// calibrated).
    pub overconfidence: f64,
    /// Seed of every draw.
    pub seed: u64,
}

impl Default for SyntheticOptions {
    fn default() -> Self {
        SyntheticOptions {
            rows: 1_000,
            overconfidence: 1.0,
            seed: 0,
        }
    }
}

/// The three questions a synthetic run asks: `claim` (noul), `topic` (choice
/// over [`TOPICS`]) and `quality` (score over [`LEVELS`] levels).
///
/// ```
/// assert_eq!(toolnexus::assess::synthetic::synthetic_questions().len(), 3);
/// ```
pub fn synthetic_questions() -> Questions {
    questions(&[
        noul("claim", "Does the message make a factual claim?"),
        choice(
            "topic",
            "What is the message about?",
            TOPICS.map(|t| (t, None::<String>)),
        ),
        score(
            "quality",
            "How well written is it?",
            ["0", "1", "2", "3", "4"],
        ),
    ])
    .expect("fixed, valid questions")
}

fn softmax(logits: &[f64], scale: f64) -> Vec<f64> {
    let max = logits
        .iter()
        .fold(f64::NEG_INFINITY, |m, &l| m.max(scale * l));
    let e: Vec<f64> = logits.iter().map(|&l| (scale * l - max).exp()).collect();
    let total: f64 = e.iter().sum();
    e.into_iter().map(|x| x / total).collect()
}

/// Draws an index from a distribution.
fn draw(rng: &mut Rng, probs: &[f64]) -> usize {
    let mut u = rng.next_f64();
    for (i, &p) in probs.iter().enumerate() {
        if u < p {
            return i;
        }
        u -= p;
    }
    probs.len() - 1
}

fn top(probs: &[f64]) -> (usize, f64) {
    probs
        .iter()
        .copied()
        .enumerate()
        .fold((0, f64::MIN), |b, (i, p)| if p > b.1 { (i, p) } else { b })
}

/// A run of `rows` labelled rows, recorded answers included (model
/// `synthetic`, latency and cost unknown).
///
/// ```
/// use toolnexus::assess::synthetic::{SyntheticOptions, synthetic_run};
/// let run = synthetic_run(&SyntheticOptions { rows: 10, ..Default::default() });
/// assert_eq!(run.rows.len(), 10);
/// assert_eq!(run.rows[0].labels.len(), 3);
/// ```
pub fn synthetic_run(options: &SyntheticOptions) -> Run {
    let mut rng = Rng::new(options.seed);
    let gamma = options.overconfidence;
    let mut rows = Vec::with_capacity(options.rows);
    for i in 0..options.rows {
        let mut labels = BTreeMap::new();
        let mut answers = Map::new();

        let z = 1.5 * rng.normal();
        let truth = softmax(&[0.0, z], 1.0)[1];
        labels.insert("claim".to_string(), Gold::Noul(rng.next_f64() < truth));
        answers.insert(
            "claim".into(),
            json!({"type": "noul", "noul": softmax(&[0.0, z], gamma)[1]}),
        );

        let logits: Vec<f64> = (0..TOPICS.len()).map(|_| 1.5 * rng.normal()).collect();
        let gold = draw(&mut rng, &softmax(&logits, 1.0));
        labels.insert("topic".to_string(), Gold::Choice(TOPICS[gold].to_string()));
        let reported = softmax(&logits, gamma);
        let (best, confidence) = top(&reported);
        let probabilities: Map<String, Value> = TOPICS
            .iter()
            .zip(&reported)
            .map(|(t, &p)| (t.to_string(), json!(p)))
            .collect();
        answers.insert(
            "topic".into(),
            json!({"type": "choice", "choice": TOPICS[best], "probabilities": probabilities, "confidence": confidence}),
        );

        let logits: Vec<f64> = (0..LEVELS).map(|_| 1.5 * rng.normal()).collect();
        labels.insert(
            "quality".to_string(),
            Gold::Score(draw(&mut rng, &softmax(&logits, 1.0))),
        );
        let reported = softmax(&logits, gamma);
        let (_, confidence) = top(&reported);
        let expected: f64 = reported
            .iter()
            .enumerate()
            .map(|(l, &p)| l as f64 * p)
            .sum();
        let legend: Map<String, Value> = (0..LEVELS)
            .map(|l| (l.to_string(), json!(l.to_string())))
            .collect();
        let probabilities: Map<String, Value> = reported
            .iter()
            .enumerate()
            .map(|(l, &p)| (l.to_string(), json!(p)))
            .collect();
        answers.insert(
            "quality".into(),
            json!({"type": "score", "score": expected, "legend": legend, "probabilities": probabilities, "confidence": confidence}),
        );

        let decision = Decision::from_value(&json!({"model": "synthetic", "answers": answers}))
            .expect("a well-formed synthetic decision");
        rows.push(Row::new(
            format!("s{i}"),
            labels,
            Outcome::Decided(decision),
        ));
    }
    Run::new(synthetic_questions(), rows)
}
