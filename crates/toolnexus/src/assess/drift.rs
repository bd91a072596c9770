//! Drift without labels (SPEC §20): the same states answered twice — two runs,
//! two batch out files, or a golden tape against a live style — compared
//! answer by answer. No gold label is read.
//!
//! Per question key:
//! - a **flip** is a changed answer: another choice pick, another score level
//!   (the expected level rounded to the nearest level), or a noul on the other
//!   side of 0.5 (`p ≥ 0.5` reads as true);
//! - a **shift** is the total-variation distance between the two
//!   distributions, `½ Σ |a_i − b_i|` over the union of options or levels (an
//!   option one side leaves out counts as 0 there); a noul is the two-point
//!   distribution `(p, 1 − p)`, so its shift is `|p_a − p_b|`. A choice or
//!   score answer without probabilities counts as all its mass on its pick.
//!
//! Box answers have no distribution and are not compared. [`drift`] is a pure
//! function of the two sides' answers.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::metrics::quantile;
use super::text::{columns, f3, pct};
use crate::classifier::{Decision, DecisionAnswer};

/// One side's answer for one row: the decision, or the error the row holds.
///
/// ```
/// use toolnexus::assess::Answered;
/// let a = Answered::failed("L3", "timeout");
/// assert!(a.outcome.is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Answered {
    /// What pairs the row with the other side's (a run row's id, a batch
    /// line's number, a tape entry's call and position).
    pub id: String,
    /// The decision, or the row's error message.
    pub outcome: Result<Decision, String>,
}

impl Answered {
    /// A row that was answered.
    ///
    /// ```
    /// # use toolnexus::assess::Answered;
    /// let d = toolnexus::classifier::Decision::from_slice(br#"{"model":"m","answers":{}}"#)?;
    /// assert_eq!(Answered::decided("a", d).id, "a");
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn decided(id: impl Into<String>, decision: Decision) -> Answered {
        Answered {
            id: id.into(),
            outcome: Ok(decision),
        }
    }

    /// A row that failed.
    ///
    /// ```
    /// # use toolnexus::assess::Answered;
    /// assert_eq!(Answered::failed("a", "HTTP 503").outcome, Err("HTTP 503".to_string()));
    /// ```
    pub fn failed(id: impl Into<String>, message: impl Into<String>) -> Answered {
        Answered {
            id: id.into(),
            outcome: Err(message.into()),
        }
    }
}

/// How [`drift`] compares and what it gates on.
///
/// ```
/// let o = toolnexus::assess::DriftOptions::default();
/// assert_eq!((o.show, o.max_flips, o.max_shift), (10, None, None));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DriftOptions {
    /// The changes to list (largest shift first).
    pub show: usize,
    /// A question breaks the gate when its flip rate is above this share.
    pub max_flips: Option<f64>,
    /// A question breaks the gate when its mean shift is above this distance.
    pub max_shift: Option<f64>,
}

impl Default for DriftOptions {
    fn default() -> Self {
        DriftOptions {
            show: 10,
            max_flips: None,
            max_shift: None,
        }
    }
}

impl DriftOptions {
    /// With the flip-rate gate.
    ///
    /// ```
    /// assert_eq!(toolnexus::assess::DriftOptions::default().with_max_flips(0.05).max_flips, Some(0.05));
    /// ```
    pub fn with_max_flips(mut self, share: f64) -> DriftOptions {
        self.max_flips = Some(share);
        self
    }

    /// With the mean-shift gate.
    ///
    /// ```
    /// assert_eq!(toolnexus::assess::DriftOptions::default().with_max_shift(0.1).max_shift, Some(0.1));
    /// ```
    pub fn with_max_shift(mut self, tvd: f64) -> DriftOptions {
        self.max_shift = Some(tvd);
        self
    }

    /// With the number of changes listed.
    ///
    /// ```
    /// assert_eq!(toolnexus::assess::DriftOptions::default().with_show(3).show, 3);
    /// ```
    pub fn with_show(mut self, n: usize) -> DriftOptions {
        self.show = n;
        self
    }
}

/// One question of a [`Drift`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct QuestionDrift {
    /// The question key.
    pub key: String,
    /// Its answer type (`noul`, `choice`, `score`), from side A.
    pub kind: String,
    /// Rows where both sides answered this key with the same type.
    pub n: usize,
    /// Rows whose answer changed.
    pub flips: usize,
    /// `flips / n` (0 when `n` is 0).
    pub flip_rate: f64,
    /// The mean total-variation distance (0 when `n` is 0).
    pub mean_shift: f64,
    /// The 95th percentile of the distance (linear interpolation; 0 when `n` is 0).
    pub p95_shift: f64,
    /// The largest distance.
    pub max_shift: f64,
    /// Rows both sides answered where only one answered this key, or the
    /// two answered it with different types.
    pub unmatched: usize,
    /// The gates this question breaks, in words; empty when none.
    pub breaches: Vec<String>,
}

/// One changed answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Change {
    /// The row (as [`Answered::id`]).
    pub id: String,
    /// The question key.
    pub key: String,
    /// Side A's answer, in short (`0.820`, `billing 0.71`, `1.40`).
    pub a: String,
    /// Side B's answer, in short.
    pub b: String,
    /// Whether the answer flipped.
    pub flipped: bool,
    /// The total-variation distance.
    pub shift: f64,
}

/// What [`drift`] found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Drift {
    /// Rows present on both sides.
    pub paired: usize,
    /// Rows only on side A.
    pub only_in_a: usize,
    /// Rows only on side B.
    pub only_in_b: usize,
    /// Paired rows where side A holds an error.
    pub errors_a: usize,
    /// Paired rows where side B holds an error.
    pub errors_b: usize,
    /// Paired rows both sides answered.
    pub compared: usize,
    /// Per question key, in key order.
    pub questions: Vec<QuestionDrift>,
    /// Flips and non-zero shifts: the largest shift first, at most
    /// [`DriftOptions::show`] of them.
    pub changes: Vec<Change>,
    /// All flips and non-zero shifts, of which `changes` lists the first.
    pub changed: usize,
}

impl Drift {
    /// Whether any question breaks a gate.
    ///
    /// ```
    /// use toolnexus::assess::{DriftOptions, drift};
    /// assert!(!drift(&[], &[], &DriftOptions::default()).breached());
    /// ```
    pub fn breached(&self) -> bool {
        self.questions.iter().any(|q| !q.breaches.is_empty())
    }

    /// Whether no answer was compared: no paired row that both sides
    /// answered, or none of those with an answer of the same type on both
    /// sides. A gate (`max_flips`, `max_shift`) then has nothing to judge.
    ///
    /// ```
    /// use toolnexus::assess::{DriftOptions, drift};
    /// assert!(drift(&[], &[], &DriftOptions::default()).nothing_compared());
    /// ```
    pub fn nothing_compared(&self) -> bool {
        self.compared == 0 || self.questions.iter().all(|q| q.n == 0)
    }

    /// The drift as a terminal table, then the changes.
    ///
    /// ```
    /// use toolnexus::assess::{DriftOptions, drift};
    /// assert!(drift(&[], &[], &DriftOptions::default()).table().starts_with("question"));
    /// ```
    pub fn table(&self) -> String {
        let header = [
            "question",
            "kind",
            "n",
            "flips",
            "flip rate",
            "mean shift",
            "p95 shift",
            "max shift",
            "",
        ];
        let rows: Vec<Vec<String>> = self
            .questions
            .iter()
            .map(|q| {
                let mut note = q.breaches.join("; ");
                if q.unmatched > 0 {
                    if !note.is_empty() {
                        note.push_str("; ");
                    }
                    let _ = write!(note, "{} unmatched", q.unmatched);
                }
                vec![
                    q.key.clone(),
                    q.kind.clone(),
                    q.n.to_string(),
                    q.flips.to_string(),
                    pct(q.flip_rate),
                    f3(q.mean_shift),
                    f3(q.p95_shift),
                    f3(q.max_shift),
                    note,
                ]
            })
            .collect();
        let mut out = columns(&header, &rows, |i| (2..8).contains(&i));
        let _ = writeln!(
            out,
            "{} rows paired ({} compared; errors: {} in A, {} in B), {} only in A, {} only in B; shift: total-variation distance",
            self.paired,
            self.compared,
            self.errors_a,
            self.errors_b,
            self.only_in_a,
            self.only_in_b
        );
        if !self.changes.is_empty() {
            let _ = writeln!(
                out,
                "\nchanges ({} of {}, largest shift first):",
                self.changes.len(),
                self.changed
            );
            let header = ["row", "question", "A", "B", "shift", ""];
            let rows: Vec<Vec<String>> = self
                .changes
                .iter()
                .map(|c| {
                    vec![
                        c.id.clone(),
                        c.key.clone(),
                        c.a.clone(),
                        c.b.clone(),
                        f3(c.shift),
                        if c.flipped { "flip" } else { "" }.to_string(),
                    ]
                })
                .collect();
            out.push_str(&columns(&header, &rows, |i| i == 4));
        }
        out
    }
}

/// How two answers under one key compare: `None` when they cannot be
/// compared (different types, or box answers).
///
/// ```
/// use toolnexus::assess::answer_shift;
/// use toolnexus::classifier::{DecisionAnswer, NoulAnswer};
/// let (a, b) = (DecisionAnswer::Noul(NoulAnswer { noul: 0.7 }), DecisionAnswer::Noul(NoulAnswer { noul: 0.4 }));
/// let (flipped, shift) = answer_shift(&a, &b).unwrap();
/// assert!(flipped);
/// assert!((shift - 0.3).abs() < 1e-12);
/// ```
pub fn answer_shift(a: &DecisionAnswer, b: &DecisionAnswer) -> Option<(bool, f64)> {
    match (a, b) {
        (DecisionAnswer::Noul(a), DecisionAnswer::Noul(b)) => {
            Some(((a.noul >= 0.5) != (b.noul >= 0.5), (a.noul - b.noul).abs()))
        }
        (DecisionAnswer::Choice(a), DecisionAnswer::Choice(b)) => Some((
            a.choice != b.choice,
            tvd(
                &mass(&a.probabilities, &a.choice),
                &mass(&b.probabilities, &b.choice),
            ),
        )),
        (DecisionAnswer::Score(a), DecisionAnswer::Score(b)) => {
            let (la, lb) = (level(a.score), level(b.score));
            Some((
                la != lb,
                tvd(
                    &mass(&a.probabilities, &la.to_string()),
                    &mass(&b.probabilities, &lb.to_string()),
                ),
            ))
        }
        _ => None,
    }
}

/// An answer in short, as [`Change`] shows it.
///
/// ```
/// use toolnexus::assess::answer_text;
/// use toolnexus::classifier::{DecisionAnswer, NoulAnswer};
/// assert_eq!(answer_text(&DecisionAnswer::Noul(NoulAnswer { noul: 0.82 })), "0.820");
/// ```
pub fn answer_text(a: &DecisionAnswer) -> String {
    match a {
        DecisionAnswer::Noul(n) => format!("{:.3}", n.noul),
        DecisionAnswer::Choice(c) => match c.probabilities.get(&c.choice) {
            Some(p) => format!("{} {p:.2}", c.choice),
            None => c.choice.clone(),
        },
        DecisionAnswer::Score(s) => format!("{:.2}", s.score),
        DecisionAnswer::Box(b) => {
            let c = b.coordinates;
            format!(
                "box {:.2} {:.2} {:.2} {:.2}",
                c.top, c.bottom, c.left, c.right
            )
        }
    }
}

/// The expected level rounded to the nearest level (halves up).
fn level(score: f64) -> i64 {
    (score + 0.5).floor() as i64
}

/// A distribution, or all the mass on `pick` when there is none.
fn mass(probabilities: &BTreeMap<String, f64>, pick: &str) -> BTreeMap<String, f64> {
    if probabilities.is_empty() {
        BTreeMap::from([(pick.to_string(), 1.0)])
    } else {
        probabilities.clone()
    }
}

/// `½ Σ |a_i − b_i|` over the union of the two supports.
fn tvd(a: &BTreeMap<String, f64>, b: &BTreeMap<String, f64>) -> f64 {
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let sum: f64 = keys
        .into_iter()
        .map(|k| (a.get(k).copied().unwrap_or(0.0) - b.get(k).copied().unwrap_or(0.0)).abs())
        .sum();
    (sum / 2.0).min(1.0)
}

/// Compares side A with side B row by row (rows paired by [`Answered::id`];
/// when an id appears twice on one side, the later row wins): per question
/// key, the flip rate and the mean, 95th-percentile and largest shift; the
/// changes, largest shift first; the rows only on one side and the errors.
/// Gates in `options` fill [`QuestionDrift::breaches`].
///
/// ```
/// # use serde_json::json;
/// use toolnexus::assess::{Answered, DriftOptions, drift};
/// use toolnexus::classifier::Decision;
///
/// let noul = |p: f64| Decision::from_value(&json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": p}}})).unwrap();
/// let a = [Answered::decided("1", noul(0.9)), Answered::decided("2", noul(0.2))];
/// let b = [Answered::decided("1", noul(0.4)), Answered::decided("2", noul(0.2))];
/// let d = drift(&a, &b, &DriftOptions::default().with_max_flips(0.25));
/// let spam = &d.questions[0];
/// assert_eq!((spam.n, spam.flips), (2, 1));
/// assert!((spam.mean_shift - 0.25).abs() < 1e-12);
/// assert!(d.breached());
/// ```
pub fn drift(a: &[Answered], b: &[Answered], options: &DriftOptions) -> Drift {
    let mut b_index: HashMap<&str, &Answered> = HashMap::with_capacity(b.len());
    for row in b {
        b_index.insert(row.id.as_str(), row);
    }
    // A's rows in first-seen order, the later row winning.
    let mut a_rows: Vec<&Answered> = Vec::with_capacity(a.len());
    let mut a_index: HashMap<&str, usize> = HashMap::with_capacity(a.len());
    for row in a {
        match a_index.get(row.id.as_str()) {
            Some(&at) => a_rows[at] = row,
            None => {
                a_index.insert(row.id.as_str(), a_rows.len());
                a_rows.push(row);
            }
        }
    }
    let only_in_b = b_index
        .keys()
        .filter(|id| !a_index.contains_key(*id))
        .count();

    #[derive(Default)]
    struct Acc {
        kind: String,
        shifts: Vec<f64>,
        flips: usize,
        unmatched: usize,
    }
    let mut per_key: BTreeMap<String, Acc> = BTreeMap::new();
    let mut changes: Vec<Change> = Vec::new();
    let (mut paired, mut only_in_a, mut errors_a, mut errors_b, mut compared) = (0, 0, 0, 0, 0);
    for row_a in a_rows {
        let Some(row_b) = b_index.get(row_a.id.as_str()) else {
            only_in_a += 1;
            continue;
        };
        paired += 1;
        let (da, db) = match (&row_a.outcome, &row_b.outcome) {
            (Ok(da), Ok(db)) => (da, db),
            (ea, eb) => {
                errors_a += usize::from(ea.is_err());
                errors_b += usize::from(eb.is_err());
                continue;
            }
        };
        compared += 1;
        let keys: BTreeSet<&String> = da.answers.keys().chain(db.answers.keys()).collect();
        for key in keys {
            let (aa, ab) = (da.answers.get(key), db.answers.get(key));
            let first = aa.or(ab).map_or("", DecisionAnswer::answer_type);
            if first == "box" {
                continue;
            }
            let acc = per_key.entry(key.clone()).or_default();
            if acc.kind.is_empty() {
                acc.kind = first.to_string();
            }
            let (Some(aa), Some(ab)) = (aa, ab) else {
                acc.unmatched += 1;
                continue;
            };
            let Some((flipped, shift)) = answer_shift(aa, ab) else {
                acc.unmatched += 1;
                continue;
            };
            acc.shifts.push(shift);
            acc.flips += usize::from(flipped);
            if flipped || shift > 0.0 {
                changes.push(Change {
                    id: row_a.id.clone(),
                    key: key.clone(),
                    a: answer_text(aa),
                    b: answer_text(ab),
                    flipped,
                    shift,
                });
            }
        }
    }
    let questions = per_key
        .into_iter()
        .map(|(key, acc)| {
            let n = acc.shifts.len();
            let flip_rate = if n == 0 {
                0.0
            } else {
                acc.flips as f64 / n as f64
            };
            let mean_shift = if n == 0 {
                0.0
            } else {
                acc.shifts.iter().sum::<f64>() / n as f64
            };
            let p95_shift = quantile(&acc.shifts, 0.95).unwrap_or(0.0);
            let max_shift = acc.shifts.iter().copied().fold(0.0, f64::max);
            let mut breaches = Vec::new();
            if let Some(limit) = options.max_flips
                && flip_rate > limit
            {
                breaches.push(format!(
                    "flip rate {} above --max-flips {limit}",
                    pct(flip_rate)
                ));
            }
            if let Some(limit) = options.max_shift
                && mean_shift > limit
            {
                breaches.push(format!(
                    "mean shift {} above --max-shift {limit}",
                    f3(mean_shift)
                ));
            }
            QuestionDrift {
                key,
                kind: acc.kind,
                n,
                flips: acc.flips,
                flip_rate,
                mean_shift,
                p95_shift,
                max_shift,
                unmatched: acc.unmatched,
                breaches,
            }
        })
        .collect();
    // Largest shift first; a flip before a shift of the same size; then in
    // row order (a stable sort keeps it).
    changes.sort_by(|x, y| {
        y.shift
            .total_cmp(&x.shift)
            .then_with(|| y.flipped.cmp(&x.flipped))
    });
    let changed = changes.len();
    changes.truncate(options.show);
    Drift {
        paired,
        only_in_a,
        only_in_b,
        errors_a,
        errors_b,
        compared,
        questions,
        changes,
        changed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decision(answers: serde_json::Value) -> Decision {
        Decision::from_value(&json!({"model": "m", "answers": answers})).unwrap()
    }

    fn choice(pick: &str, probs: serde_json::Value) -> Decision {
        decision(
            json!({"desk": {"type": "choice", "choice": pick, "probabilities": probs, "confidence": 0.5}}),
        )
    }

    fn score(s: f64, probs: serde_json::Value) -> Decision {
        decision(json!({"risk": {"type": "score", "score": s,
            "legend": {"0": "low", "1": "mid", "2": "high"}, "probabilities": probs, "confidence": 0.5}}))
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn a_noul_flips_across_one_half_and_shifts_by_its_difference() {
        let n = |p: f64| decision(json!({"spam": {"type": "noul", "noul": p}}));
        let a = [
            Answered::decided("1", n(0.6)),
            Answered::decided("2", n(0.5)),
            Answered::decided("3", n(0.1)),
            Answered::decided("4", n(0.3)),
        ];
        let b = [
            Answered::decided("1", n(0.4)),
            Answered::decided("2", n(0.49)),
            Answered::decided("3", n(0.1)),
            Answered::decided("4", n(0.45)),
        ];
        let d = drift(&a, &b, &DriftOptions::default());
        let q = &d.questions[0];
        assert_eq!(
            (q.key.as_str(), q.kind.as_str(), q.n, q.flips),
            ("spam", "noul", 4, 2)
        );
        assert!(close(q.flip_rate, 0.5));
        assert!(close(q.mean_shift, (0.2 + 0.01 + 0.0 + 0.15) / 4.0));
        assert!(close(q.max_shift, 0.2));
        // numpy: np.quantile([0, 0.01, 0.15, 0.2], 0.95) = 0.1925
        assert!((q.p95_shift - 0.1925).abs() < 1e-9);
        // Three changes (row 3 did not move), the largest shift first.
        assert_eq!(d.changed, 3);
        let ids: Vec<&str> = d.changes.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["1", "4", "2"]);
        assert_eq!(
            (d.changes[0].a.as_str(), d.changes[0].b.as_str()),
            ("0.600", "0.400")
        );
    }

    #[test]
    fn a_choice_shift_is_the_total_variation_over_the_union_of_options() {
        let a = [Answered::decided(
            "r",
            choice("billing", json!({"billing": 0.7, "shipping": 0.3})),
        )];
        let b = [Answered::decided(
            "r",
            choice(
                "shipping",
                json!({"billing": 0.2, "shipping": 0.5, "other": 0.3}),
            ),
        )];
        let d = drift(&a, &b, &DriftOptions::default());
        let q = &d.questions[0];
        assert_eq!((q.kind.as_str(), q.flips), ("choice", 1));
        // ½ (|0.7 − 0.2| + |0.3 − 0.5| + |0 − 0.3|) = 0.5
        assert!(close(q.mean_shift, 0.5));
        assert_eq!(d.changes[0].a, "billing 0.70");
    }

    #[test]
    fn a_choice_without_probabilities_is_all_mass_on_its_pick() {
        let a = [Answered::decided("r", choice("billing", json!({})))];
        let b = [Answered::decided("r", choice("shipping", json!({})))];
        let q = &drift(&a, &b, &DriftOptions::default()).questions[0];
        assert!(close(q.mean_shift, 1.0));
        assert_eq!(q.flips, 1);
    }

    #[test]
    fn a_score_flips_when_its_rounded_level_changes() {
        let a = [
            Answered::decided("1", score(1.4, json!({"0": 0.1, "1": 0.4, "2": 0.5}))),
            Answered::decided("2", score(1.0, json!({"0": 0.0, "1": 1.0, "2": 0.0}))),
        ];
        let b = [
            Answered::decided("1", score(1.6, json!({"0": 0.0, "1": 0.4, "2": 0.6}))),
            Answered::decided("2", score(1.2, json!({"0": 0.0, "1": 0.8, "2": 0.2}))),
        ];
        let q = &drift(&a, &b, &DriftOptions::default()).questions[0];
        assert_eq!((q.kind.as_str(), q.n, q.flips), ("score", 2, 1));
        assert!(close(q.mean_shift, (0.1 + 0.2) / 2.0));
    }

    #[test]
    fn rows_only_on_one_side_and_errors_are_counted_apart() {
        let n = |p: f64| decision(json!({"spam": {"type": "noul", "noul": p}}));
        let a = [
            Answered::decided("1", n(0.6)),
            Answered::failed("2", "timeout"),
            Answered::decided("3", n(0.6)),
            Answered::decided("only-a", n(0.6)),
        ];
        let b = [
            Answered::decided("1", n(0.6)),
            Answered::decided("2", n(0.6)),
            Answered::failed("3", "HTTP 503"),
            Answered::decided("only-b", n(0.6)),
            Answered::decided("only-b2", n(0.6)),
        ];
        let d = drift(&a, &b, &DriftOptions::default());
        assert_eq!(
            (
                d.paired,
                d.compared,
                d.errors_a,
                d.errors_b,
                d.only_in_a,
                d.only_in_b
            ),
            (3, 1, 1, 1, 1, 2)
        );
        assert_eq!(d.questions[0].n, 1);
        assert!(d.changes.is_empty());
    }

    #[test]
    fn a_key_one_side_left_out_is_unmatched_not_a_shift() {
        let a = [Answered::decided(
            "1",
            decision(
                json!({"spam": {"type": "noul", "noul": 0.6}, "lang": {"type": "noul", "noul": 0.2}}),
            ),
        )];
        let b = [Answered::decided(
            "1",
            decision(json!({"spam": {"type": "noul", "noul": 0.6}})),
        )];
        let d = drift(&a, &b, &DriftOptions::default());
        let lang = d.questions.iter().find(|q| q.key == "lang").unwrap();
        assert_eq!((lang.n, lang.unmatched), (0, 1));
    }

    #[test]
    fn gates_name_what_each_question_breaks_and_show_bounds_the_list() {
        let n = |p: f64| decision(json!({"spam": {"type": "noul", "noul": p}}));
        let a: Vec<Answered> = (0..10)
            .map(|i| Answered::decided(i.to_string(), n(0.6)))
            .collect();
        let b: Vec<Answered> = (0..10)
            .map(|i| Answered::decided(i.to_string(), n(if i < 2 { 0.4 } else { 0.55 })))
            .collect();
        let options = DriftOptions::default().with_show(3);
        // 2 flips of 10 = 20%; mean shift (2 × 0.2 + 8 × 0.05) / 10 = 0.08.
        let loose = drift(
            &a,
            &b,
            &options.clone().with_max_flips(0.2).with_max_shift(0.08),
        );
        assert!(!loose.breached(), "{:?}", loose.questions[0].breaches);
        let strict = drift(&a, &b, &options.with_max_flips(0.1).with_max_shift(0.05));
        assert_eq!(
            strict.questions[0].breaches,
            [
                "flip rate 20.0% above --max-flips 0.1",
                "mean shift 0.080 above --max-shift 0.05"
            ]
        );
        assert_eq!((strict.changes.len(), strict.changed), (3, 10));
        assert!(strict.changes[0].flipped && strict.changes[1].flipped);
    }

    #[test]
    fn the_later_row_of_an_id_wins() {
        let n = |p: f64| decision(json!({"spam": {"type": "noul", "noul": p}}));
        let a = [
            Answered::failed("1", "timeout"),
            Answered::decided("1", n(0.3)),
        ];
        let b = [Answered::decided("1", n(0.3))];
        let d = drift(&a, &b, &DriftOptions::default());
        assert_eq!((d.paired, d.errors_a, d.questions[0].n), (1, 0, 1));
    }
}
