//! Two runs side by side ([`compare_runs`]: a model change or a rewording, with
//! a paired test on accuracy) and a thresholds file against new labels
//! ([`check_thresholds`]: does each cut still deliver what it promised?).

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::error::{AssessError, AssessErrorKind};
use super::metrics::{EceRows, accuracy, log_loss_binary, log_loss_multi};
use super::run::Run;
use super::summary::{Observed, gate_observations, observe};
use super::text::{columns, f3, opt, pct};
use super::thresholds::{Pick, Status, Target, ThresholdReport, wilson};
use crate::classifier::question_hash;

/// One question of a [`Comparison`], over the rows both runs answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionComparison {
    /// The question key.
    pub key: String,
    /// Whether both runs asked the same wording (same [`question_hash`]).
    pub same_wording: bool,
    /// Rows both runs answered with a gold label.
    pub n: usize,
    /// Accuracy of run A over those rows.
    pub accuracy_a: f64,
    /// Accuracy of run B over those rows.
    pub accuracy_b: f64,
    /// Rows both got right.
    pub both_right: usize,
    /// Rows only A got right.
    pub only_a_right: usize,
    /// Rows only B got right.
    pub only_b_right: usize,
    /// Rows both got wrong.
    pub both_wrong: usize,
    /// Two-sided exact McNemar p-value of "A and B are equally accurate" (1 when
    /// they never disagree).
    pub p_value: f64,
    /// Log loss of A and of B over the same rows.
    pub log_loss: (f64, f64),
    /// ECE of A and of B over the same rows.
    pub ece: (f64, f64),
}

/// What [`compare_runs`] found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Model ids of run A.
    pub models_a: Vec<String>,
    /// Model ids of run B.
    pub models_b: Vec<String>,
    /// Ids present in both runs.
    pub paired_rows: usize,
    /// Ids only in A.
    pub only_in_a: usize,
    /// Ids only in B.
    pub only_in_b: usize,
    /// Per question both runs asked.
    pub questions: Vec<QuestionComparison>,
}

/// The significance level [`Comparison::table`] marks differences at.
const ALPHA: f64 = 0.05;

impl Comparison {
    /// The comparison as a terminal table.
    ///
    /// ```
    /// # use toolnexus::assess::*;
    /// # let c = Comparison { models_a: vec![], models_b: vec![], paired_rows: 0, only_in_a: 0, only_in_b: 0, questions: vec![] };
    /// assert!(c.table().starts_with("question"));
    /// ```
    pub fn table(&self) -> String {
        let header = [
            "question",
            "n",
            "A",
            "B",
            "Δ",
            "only A",
            "only B",
            "p",
            "log loss A→B",
            "ECE A→B",
            "",
        ];
        let rows: Vec<Vec<String>> = self
            .questions
            .iter()
            .map(|q| {
                let mut note = Vec::new();
                if (0.0..ALPHA).contains(&q.p_value) {
                    note.push(format!(
                        "{} is better (p < {ALPHA})",
                        if q.accuracy_b > q.accuracy_a {
                            "B"
                        } else {
                            "A"
                        }
                    ));
                }
                if !q.same_wording {
                    note.push("reworded".to_string());
                }
                vec![
                    q.key.clone(),
                    q.n.to_string(),
                    pct(q.accuracy_a),
                    pct(q.accuracy_b),
                    format!("{:+.1}", (q.accuracy_b - q.accuracy_a) * 100.0),
                    q.only_a_right.to_string(),
                    q.only_b_right.to_string(),
                    format!("{:.3}", q.p_value),
                    format!("{} → {}", f3(q.log_loss.0), f3(q.log_loss.1)),
                    format!("{} → {}", f3(q.ece.0), f3(q.ece.1)),
                    note.join("; "),
                ]
            })
            .collect();
        let mut out = columns(&header, &rows, |i| (1..8).contains(&i));
        let _ = writeln!(
            out,
            "A: {}; B: {}; {} rows paired, {} only in A, {} only in B; p: exact McNemar test",
            self.models_a.join(", "),
            self.models_b.join(", "),
            self.paired_rows,
            self.only_in_a,
            self.only_in_b
        );
        out
    }
}

/// `P(X ≤ k)` for `X ~ Binomial(n, 1/2)`. The terms are summed in log space
/// (so that none underflows however large `n` is) and the sum is returned as a
/// probability, in [0, 1].
fn binomial_half_cdf(k: usize, n: usize) -> f64 {
    let ln2n = n as f64 * std::f64::consts::LN_2;
    let mut ln_c = 0.0f64; // ln C(n, 0)
    let mut terms = Vec::with_capacity(k.min(n) + 1);
    for i in 0..=k.min(n) {
        terms.push(ln_c - ln2n);
        ln_c += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
    }
    let max = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let ln_cdf = max + terms.iter().map(|t| (t - max).exp()).sum::<f64>().ln();
    ln_cdf.exp().clamp(0.0, 1.0)
}

/// Two-sided exact McNemar p-value for `b` and `c` discordant pairs: the exact
/// binomial test of `min(b, c)` successes in `b + c` trials at 1/2, that is
/// `min(1, 2·P(X ≤ min(b, c)))` for `X ~ Binomial(b + c, 1/2)`, and 1 when
/// there is no discordant pair (SciPy's `binomtest(min(b, c), b + c, 0.5)`).
pub(crate) fn mcnemar(b: usize, c: usize) -> f64 {
    if b + c == 0 {
        return 1.0;
    }
    (2.0 * binomial_half_cdf(b.min(c), b + c)).min(1.0)
}

/// Log loss and ECE ([`EceRows::ece`]) of the observations at `positions`.
fn fit_figures(o: &Observed, positions: &[usize]) -> (f64, f64) {
    if o.kind == "noul" {
        let p: Vec<f64> = positions.iter().map(|&i| o.p_true[i]).collect();
        let y: Vec<bool> = positions.iter().map(|&i| o.y[i]).collect();
        (log_loss_binary(&p, &y), EceRows::from_noul(&p, &y).ece())
    } else {
        let probs: Vec<Vec<f64>> = positions.iter().map(|&i| o.probs[i].clone()).collect();
        let gold: Vec<usize> = positions.iter().map(|&i| o.gold[i]).collect();
        (
            log_loss_multi(&probs, &gold),
            EceRows::from_distributions(&probs, &gold).ece(),
        )
    }
}

/// Compares two runs over the rows they share (by id): per question asked in
/// both, accuracy of each over the rows both answered, the paired counts, an
/// exact McNemar test, and log loss and ECE side by side.
///
/// ```
/// # use std::collections::BTreeMap;
/// # use serde_json::json;
/// use toolnexus::assess::*;
/// # use toolnexus::classifier::Decision;
/// # use toolnexus::judge::{noul, questions};
/// # let qs = questions(&[noul("spam", "Is it spam?")])?;
/// # let run = |model: &str, right: usize| Run::new(qs.clone(), (0..100).map(|i| {
/// #     let p = if i < right { 0.9 } else { 0.1 };
/// #     Row::new(i.to_string(), BTreeMap::from([("spam".to_string(), Gold::Noul(true))]),
/// #         Outcome::Decided(Decision::from_value(&json!({"model": model, "answers": {"spam": {"type": "noul", "noul": p}}})).unwrap()))
/// # }).collect());
/// // Model a is right on 60 of 100 rows, model b on 80 (the same 60 and 20 more).
/// let c = compare_runs(&run("a", 60), &run("b", 80))?;
/// let spam = &c.questions[0];
/// assert_eq!((spam.only_a_right, spam.only_b_right), (0, 20));
/// assert!(spam.p_value < 1e-5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn compare_runs(a: &Run, b: &Run) -> Result<Comparison, AssessError> {
    let index_b: HashMap<&str, usize> = b
        .rows
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.as_str(), i))
        .collect();
    let pairs: Vec<(usize, usize)> = a
        .rows
        .iter()
        .enumerate()
        .filter_map(|(i, r)| index_b.get(r.id.as_str()).map(|&j| (i, j)))
        .collect();
    if pairs.is_empty() {
        return Err(AssessError::new(
            AssessErrorKind::Mismatch,
            "the two runs share no row id: compare needs runs over the same labelled examples",
        ));
    }
    let keys: Vec<&String> = a
        .questions
        .keys()
        .filter(|k| b.questions.contains_key(*k))
        .collect();
    if keys.is_empty() {
        return Err(AssessError::new(
            AssessErrorKind::Mismatch,
            "the two runs share no question key",
        ));
    }
    let mut questions = Vec::new();
    for key in keys {
        let (oa, ob) = (observe(a, key, None), observe(b, key, None));
        let pos = |o: &Observed| -> HashMap<usize, usize> {
            o.rows.iter().enumerate().map(|(p, &r)| (r, p)).collect()
        };
        let (pa, pb) = (pos(&oa), pos(&ob));
        let (mut at, mut bt) = (Vec::new(), Vec::new());
        for &(i, j) in &pairs {
            if let (Some(&x), Some(&y)) = (pa.get(&i), pb.get(&j)) {
                // Only rows whose gold agrees are comparable.
                if a.rows[i].labels.get(key) == b.rows[j].labels.get(key) {
                    at.push(x);
                    bt.push(y);
                }
            }
        }
        let ha: Vec<bool> = at.iter().map(|&x| oa.hit[x]).collect();
        let hb: Vec<bool> = bt.iter().map(|&y| ob.hit[y]).collect();
        let count =
            |f: &dyn Fn(bool, bool) -> bool| ha.iter().zip(&hb).filter(|&(&x, &y)| f(x, y)).count();
        let (only_a, only_b) = (count(&|x, y| x && !y), count(&|x, y| !x && y));
        let (lla, ecea) = fit_figures(&oa, &at);
        let (llb, eceb) = fit_figures(&ob, &bt);
        questions.push(QuestionComparison {
            key: key.clone(),
            same_wording: question_hash(&a.questions[key]) == question_hash(&b.questions[key]),
            n: ha.len(),
            accuracy_a: accuracy(&ha),
            accuracy_b: accuracy(&hb),
            both_right: count(&|x, y| x && y),
            only_a_right: only_a,
            only_b_right: only_b,
            both_wrong: count(&|x, y| !x && !y),
            p_value: mcnemar(only_a, only_b),
            log_loss: (lla, llb),
            ece: (ecea, eceb),
        });
    }
    Ok(Comparison {
        models_a: a.models(),
        models_b: b.models(),
        paired_rows: pairs.len(),
        only_in_a: a.rows.len() - pairs.len(),
        only_in_b: b.rows.len() - pairs.len(),
        questions,
    })
}

/// Whether a cut still holds on new rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// The new figures are consistent with what the file promised.
    Holds,
    /// The new figures are significantly worse (their 95% range lies beyond
    /// the promise).
    Drifted,
    /// Nothing to check: no cut in the file, or no new labelled rows.
    Unchecked,
}

/// One cut of a thresholds file, checked on new rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CutCheck {
    /// The question key, or `gate` for the row gate.
    pub key: String,
    /// The file's cut (keep confidence above it).
    pub cut: Option<f64>,
    /// New labelled, answered rows.
    pub n: usize,
    /// Of those, rows above the cut.
    pub kept: usize,
    /// Accuracy over the kept rows, with its 95% (Wilson) range.
    pub accuracy: Option<(f64, f64, f64)>,
    /// Share kept, with its 95% range.
    pub coverage: Option<(f64, f64, f64)>,
    /// The accuracy the file promised over kept rows.
    pub promised_accuracy: Option<f64>,
    /// The least coverage the file promised.
    pub promised_coverage: Option<f64>,
    /// The verdict.
    pub status: CheckStatus,
    /// What drifted, one line each, naming the question and the figures.
    pub drift: Vec<String>,
}

/// What [`check_thresholds`] found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    /// The target the file was chosen for.
    pub target: Target,
    /// Models of the new run.
    pub models: Vec<String>,
    /// Models the file was chosen on.
    pub file_models: Vec<String>,
    /// Per question of the file, then the row gate.
    pub cuts: Vec<CutCheck>,
}

impl CheckReport {
    /// Every drift line; empty when every cut holds (the CLI exits 3 otherwise).
    ///
    /// ```
    /// # use toolnexus::assess::*;
    /// # let r = CheckReport { target: Target::Accuracy(0.9), models: vec![], file_models: vec![], cuts: vec![] };
    /// assert!(r.drifted().is_empty());
    /// ```
    pub fn drifted(&self) -> Vec<String> {
        self.cuts
            .iter()
            .flat_map(|c| c.drift.iter().cloned())
            .collect()
    }

    /// The check as a terminal table.
    ///
    /// ```
    /// # use toolnexus::assess::*;
    /// # let r = CheckReport { target: Target::Accuracy(0.9), models: vec![], file_models: vec![], cuts: vec![] };
    /// assert!(r.table().starts_with("question"));
    /// ```
    pub fn table(&self) -> String {
        let header = [
            "question",
            "cut",
            "n",
            "kept",
            "accuracy (95%)",
            "promised",
            "coverage (95%)",
            "promised",
            "status",
        ];
        let range = |x: Option<(f64, f64, f64)>| {
            x.map_or("—".to_string(), |(v, lo, hi)| {
                format!("{} ({}–{})", pct(v), pct(lo), pct(hi))
            })
        };
        let rows: Vec<Vec<String>> = self
            .cuts
            .iter()
            .map(|c| {
                vec![
                    c.key.clone(),
                    opt(c.cut, |x| format!("{x:.4}")),
                    c.n.to_string(),
                    c.kept.to_string(),
                    range(c.accuracy),
                    opt(c.promised_accuracy, pct),
                    range(c.coverage),
                    opt(c.promised_coverage, pct),
                    match c.status {
                        CheckStatus::Holds => "holds",
                        CheckStatus::Drifted => "DRIFTED",
                        CheckStatus::Unchecked => "unchecked",
                    }
                    .to_string(),
                ]
            })
            .collect();
        let mut out = columns(&header, &rows, |i| (1..8).contains(&i));
        let _ = writeln!(
            out,
            "target {}; file chosen on {}; new rows from {}",
            self.target,
            self.file_models.join(", "),
            self.models.join(", ")
        );
        out
    }
}

/// Rounding room: a range that reaches the promise to 1e-9 still meets it.
const SLACK: f64 = 1e-9;

/// Checks one pick against new confidences and hits.
fn check_cut(key: &str, pick: &Pick, target: Target, conf: &[f64], hit: &[bool]) -> CutCheck {
    let mut c = CutCheck {
        key: key.to_string(),
        cut: pick.cut,
        n: conf.len(),
        kept: 0,
        accuracy: None,
        coverage: None,
        promised_accuracy: None,
        promised_coverage: None,
        status: CheckStatus::Unchecked,
        drift: Vec::new(),
    };
    let Some(cut) = pick
        .cut
        .filter(|_| matches!(pick.status, Status::Ok | Status::Provisional))
    else {
        return c;
    };
    let honest = pick.honest.as_ref();
    c.promised_accuracy = match target {
        Target::Accuracy(a) => Some(a),
        Target::MaxEscalation(_) => honest
            .map(|h| h.accuracy_low)
            .or(pick.same_rows.map(|m| m.accuracy)),
    };
    c.promised_coverage = match target {
        Target::Accuracy(_) => honest
            .map(|h| h.coverage_low)
            .or(pick.same_rows.map(|m| m.coverage)),
        Target::MaxEscalation(e) => Some(1.0 - e),
    };
    if conf.is_empty() {
        return c;
    }
    let kept: Vec<bool> = conf
        .iter()
        .zip(hit)
        .filter(|&(&x, _)| x > cut)
        .map(|(_, &h)| h)
        .collect();
    c.kept = kept.len();
    let coverage = kept.len() as f64 / conf.len() as f64;
    let (clo, chi) = wilson(coverage, conf.len());
    c.coverage = Some((coverage, clo, chi));
    c.status = CheckStatus::Holds;
    let what = if key == super::gates::GATE_KEY {
        "row gate".to_string()
    } else {
        format!("question {key:?}")
    };
    if !kept.is_empty() {
        let acc = accuracy(&kept);
        let (lo, hi) = wilson(acc, kept.len());
        c.accuracy = Some((acc, lo, hi));
        if let Some(promise) = c.promised_accuracy.filter(|&p| hi + SLACK < p) {
            c.drift.push(format!(
                "{what}: accuracy {} (95% range {}–{}) on {} kept of {} new rows is below the promised {} at cut {cut:.4}",
                pct(acc), pct(lo), pct(hi), kept.len(), conf.len(), pct(promise)
            ));
        }
    }
    if let Some(promise) = c.promised_coverage.filter(|&p| chi + SLACK < p) {
        c.drift.push(format!(
            "{what}: coverage {} (95% range {}–{}) on {} new rows is below the promised {} at cut {cut:.4}",
            pct(coverage), pct(clo), pct(chi), conf.len(), pct(promise)
        ));
    }
    if !c.drift.is_empty() {
        c.status = CheckStatus::Drifted;
    }
    c
}

/// Checks that each cut of a thresholds file still delivers on `run` (new
/// labelled rows): a cut has drifted when the 95% range of its new accuracy
/// lies below the accuracy promised (the target, or for an escalation budget
/// the file's honest lower bound), or that of its new coverage below the
/// coverage promised (the file's honest lower bound, or 1 − the budget).
///
/// ```
/// # use std::collections::BTreeMap;
/// # use serde_json::json;
/// use toolnexus::assess::*;
/// # use toolnexus::classifier::Decision;
/// # use toolnexus::judge::{noul, questions};
/// # let qs = questions(&[noul("spam", "Is it spam?")])?;
/// # let run = |right_every: usize| Run::new(qs.clone(), (0..400).map(|i| {
/// #     let p = if i % 2 == 0 { 0.97 } else { 0.6 };
/// #     let y = i % right_every != 0;
/// #     Row::new(i.to_string(), BTreeMap::from([("spam".to_string(), Gold::Noul(y))]),
/// #         Outcome::Decided(Decision::from_value(&json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": p}}})).unwrap()))
/// # }).collect());
/// let file = choose_thresholds(&run(50), &ThresholdOptions::new(Target::Accuracy(0.95)))?;
/// assert!(check_thresholds(&run(50), &file).drifted().is_empty());
/// let drift = check_thresholds(&run(3), &file).drifted();
/// assert!(drift[0].starts_with("question \"spam\": accuracy"), "{drift:?}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn check_thresholds(run: &Run, thresholds: &ThresholdReport) -> CheckReport {
    let mut cuts = Vec::new();
    for (key, pick) in &thresholds.questions {
        let o = observe(run, key, None);
        cuts.push(check_cut(key, pick, thresholds.target, &o.conf, &o.hit));
    }
    if let Some(g) = &thresholds.gate {
        let (conf, hit) = gate_observations(run, &g.keys, None).unwrap_or_default();
        cuts.push(check_cut(
            super::gates::GATE_KEY,
            &g.pick,
            thresholds.target,
            &conf,
            &hit,
        ));
    }
    CheckReport {
        target: thresholds.target,
        models: run.models(),
        file_models: thresholds.models.clone(),
        cuts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SciPy's exact binomial test for b, c in 0..=40 (scripts/mcnemar-fixture.py).
    const SCIPY: &str = include_str!("../../tests/fixtures/assess/mcnemar-exact.tsv");

    #[test]
    fn mcnemar_matches_scipy() {
        let mut checked = 0;
        for line in SCIPY.lines().filter(|l| !l.starts_with('#')) {
            let cells: Vec<&str> = line.split('\t').collect();
            let (b, c): (usize, usize) = (cells[0].parse().unwrap(), cells[1].parse().unwrap());
            let want: f64 = cells[2].parse().unwrap();
            let got = mcnemar(b, c);
            assert!(
                (0.0..=1.0).contains(&got) && (got - want).abs() <= 1e-12 * want.max(1e-300),
                "b = {b}, c = {c}: {got} but SciPy says {want}"
            );
            checked += 1;
        }
        assert_eq!(checked, 41 * 41);
    }

    #[test]
    fn mcnemar_edges() {
        // No discordant pair, ties, one side empty.
        assert_eq!(mcnemar(0, 0), 1.0);
        assert_eq!(mcnemar(22, 23), 1.0);
        assert_eq!(mcnemar(40, 40), 1.0);
        assert_eq!(mcnemar(0, 1), 1.0);
        assert_eq!(mcnemar(0, 5), 0.0625);
        assert_eq!(mcnemar(5, 0), 0.0625);
        // Large counts stay probabilities.
        let p = mcnemar(10_000, 10_400);
        assert!(p > 0.0 && p < 0.05, "{p}");
        assert_eq!(mcnemar(50_000, 50_000), 1.0);
    }
}
