//! The probes' figures: the shift between two answers' distributions, the
//! noise floor the repeat probe measures, bootstrap ranges, and the verdict
//! each probe's measure comes to.

use std::collections::{BTreeMap, BTreeSet};

use crate::assess::rng::Rng;
use crate::assess::wilson;
use crate::classifier::{Decision, DecisionAnswer, Question, Questions};

use super::result::{
    BOOTSTRAP_RESAMPLES, BROKEN_SHIFT, FOLLOW_BROKEN, FOLLOW_SLACK, NOISE_FACTOR, Probe,
    ProbeResult, TOLERANCE, Variant, Verdict,
};

/// The repeat probe's figures on one question.
pub(super) struct Noise {
    /// Per state measured: mean pairwise shift between its answers.
    shifts: Vec<f64>,
    /// States whose pick (choice) never changed across the repeats.
    agree: usize,
    failed: usize,
}

impl Noise {
    fn floor(&self) -> Option<f64> {
        mean(&self.shifts)
    }
    fn tolerance(noise: Option<&Noise>) -> f64 {
        noise
            .and_then(Noise::floor)
            .map_or(TOLERANCE, |r| (NOISE_FACTOR * r).max(TOLERANCE))
    }
}

pub(super) struct Measure<'a> {
    pub(super) by_state: &'a [BTreeMap<Variant, Decision>],
    pub(super) questions: &'a Questions,
    pub(super) derangements: &'a BTreeMap<String, Vec<usize>>,
    pub(super) repeat: usize,
    pub(super) seed: u64,
}

/// A comparable form of one answer: a noul's p, or a distribution.
pub(super) enum Dist {
    P(f64),
    Probs(BTreeMap<String, f64>),
}

fn dist(d: &Decision, key: &str) -> Option<Dist> {
    match d.answers.get(key)? {
        DecisionAnswer::Noul(n) => Some(Dist::P(n.noul)),
        DecisionAnswer::Choice(c) => Some(Dist::Probs(c.probabilities.clone())),
        DecisionAnswer::Score(s) => Some(Dist::Probs(s.probabilities.clone())),
        DecisionAnswer::Box(_) => None,
    }
}

/// Total-variation distance over the union of ids (|Δp| for two nouls).
pub(super) fn shift(a: &Dist, b: &Dist) -> f64 {
    match (a, b) {
        (Dist::P(a), Dist::P(b)) => (a - b).abs(),
        (Dist::Probs(a), Dist::Probs(b)) => {
            let ids: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            0.5 * ids
                .into_iter()
                .map(|id| (a.get(id).unwrap_or(&0.0) - b.get(id).unwrap_or(&0.0)).abs())
                .sum::<f64>()
        }
        _ => 1.0,
    }
}

pub(super) fn pick(d: &Decision, key: &str) -> Option<String> {
    match d.answers.get(key)? {
        DecisionAnswer::Choice(c) => Some(c.choice.clone()),
        _ => None,
    }
}

pub(super) fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The mean and its percentile-bootstrap 95% range over the values.
pub(super) fn bootstrap(values: &[f64], seed: u64) -> Option<(f64, (f64, f64))> {
    let m = mean(values)?;
    if values.len() == 1 {
        return Some((m, (m, m)));
    }
    let mut rng = Rng::new(seed);
    let n = values.len();
    let mut means: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| (0..n).map(|_| values[rng.below(n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let at = |q: f64| means[((q * (BOOTSTRAP_RESAMPLES - 1) as f64).round()) as usize];
    Some((m, (at(0.025).min(m), at(0.975).max(m))))
}

/// A verdict on a mean shift against the tolerance.
pub(super) fn shift_verdict(m: f64, tolerance: f64) -> Verdict {
    if m <= tolerance {
        Verdict::Ok
    } else if m >= BROKEN_SHIFT {
        Verdict::Broken
    } else {
        Verdict::Sensitive
    }
}

pub(super) fn unmeasured(key: &str, probe: Probe, failed: usize) -> ProbeResult {
    ProbeResult {
        question: key.to_string(),
        probe,
        figure: None,
        range: None,
        states: 0,
        failed,
        verdict: Verdict::Unmeasured,
        line: "no state could be measured: every call it needed failed".into(),
    }
}

impl Measure<'_> {
    fn both(&self, i: usize, a: Variant, b: Variant, key: &str) -> Option<(Dist, Dist)> {
        let s = &self.by_state[i];
        Some((dist(s.get(&a)?, key)?, dist(s.get(&b)?, key)?))
    }

    pub(super) fn repeat(&self, key: &str, q: &Question) -> Option<Noise> {
        if !Probe::Repeat.applies_to(q) {
            return None;
        }
        let mut noise = Noise {
            shifts: Vec::new(),
            agree: 0,
            failed: 0,
        };
        let runs: Vec<Variant> = std::iter::once(Variant::Original)
            .chain((1..self.repeat).map(Variant::Repeat))
            .collect();
        for s in self.by_state {
            let got: Option<Vec<&Decision>> = runs.iter().map(|v| s.get(v)).collect();
            let Some(got) = got else {
                noise.failed += 1;
                continue;
            };
            let Some(ds) = got.iter().map(|d| dist(d, key)).collect::<Option<Vec<_>>>() else {
                noise.failed += 1;
                continue;
            };
            let mut pairs = Vec::new();
            for a in 0..ds.len() {
                for b in a + 1..ds.len() {
                    pairs.push(shift(&ds[a], &ds[b]));
                }
            }
            noise.shifts.push(mean(&pairs).unwrap_or(0.0));
            let picks: BTreeSet<Option<String>> = got.iter().map(|d| pick(d, key)).collect();
            if picks.len() == 1 {
                noise.agree += 1;
            }
        }
        Some(noise)
    }

    pub(super) fn repeat_result(&self, key: &str, noise: Option<&Noise>) -> ProbeResult {
        let Some(noise) = noise else {
            return unmeasured(key, Probe::Repeat, self.by_state.len());
        };
        let Some((m, range)) = bootstrap(&noise.shifts, self.seed) else {
            return unmeasured(key, Probe::Repeat, noise.failed);
        };
        let verdict = shift_verdict(m, TOLERANCE);
        let line = match verdict {
            Verdict::Ok => format!(
                "identical requests get the same answer (mean shift {m:.2} over {} answers a state)",
                self.repeat
            ),
            _ => format!(
                "identical requests get different answers (mean shift {m:.2}): differences below {:.2} are noise",
                (NOISE_FACTOR * m).max(TOLERANCE)
            ),
        };
        ProbeResult {
            question: key.to_string(),
            probe: Probe::Repeat,
            figure: Some(m),
            range: Some(range),
            states: noise.shifts.len(),
            failed: noise.failed,
            verdict,
            line,
        }
    }

    pub(super) fn order(&self, key: &str, noise: Option<&Noise>) -> ProbeResult {
        let mut shifts = Vec::new();
        let mut failed = 0;
        for i in 0..self.by_state.len() {
            let per: Vec<f64> = [Variant::Reversed, Variant::Rotated]
                .into_iter()
                .filter_map(|v| self.both(i, Variant::Original, v, key))
                .map(|(a, b)| shift(&a, &b))
                .collect();
            match mean(&per) {
                Some(m) => shifts.push(m),
                None => failed += 1,
            }
        }
        let Some((m, range)) = bootstrap(&shifts, self.seed) else {
            return unmeasured(key, Probe::Order, failed);
        };
        let tolerance = Noise::tolerance(noise);
        let verdict = shift_verdict(m, tolerance);
        let line = match verdict {
            Verdict::Ok => format!(
                "reversing or rotating the options does not move the answer (mean shift {m:.2}, tolerance {tolerance:.2})"
            ),
            Verdict::Sensitive => format!(
                "the answer moves somewhat with the option order (mean shift {m:.2}, tolerance {tolerance:.2})"
            ),
            _ => format!(
                "the answer follows the option order, not its meaning (mean shift {m:.2}, tolerance {tolerance:.2})"
            ),
        };
        ProbeResult {
            question: key.to_string(),
            probe: Probe::Order,
            figure: Some(m),
            range: Some(range),
            states: shifts.len(),
            failed,
            verdict,
            line,
        }
    }

    pub(super) fn polarity(&self, key: &str, noise: Option<&Noise>) -> ProbeResult {
        let mut gaps = Vec::new();
        let mut failed = 0;
        for i in 0..self.by_state.len() {
            match self.both(i, Variant::Original, Variant::Negated, key) {
                Some((Dist::P(p), Dist::P(n))) => gaps.push((p + n - 1.0).abs()),
                _ => failed += 1,
            }
        }
        let Some((m, range)) = bootstrap(&gaps, self.seed) else {
            return unmeasured(key, Probe::Polarity, failed);
        };
        let tolerance = Noise::tolerance(noise);
        let verdict = shift_verdict(m, tolerance);
        let line = match verdict {
            Verdict::Ok => format!(
                "the negated question gets the opposite answer (mean |p + p_neg - 1| {m:.2}, tolerance {tolerance:.2})"
            ),
            Verdict::Sensitive => format!(
                "the negated question is answered only partly as the opposite (mean |p + p_neg - 1| {m:.2}, tolerance {tolerance:.2})"
            ),
            _ => format!(
                "the negated question is not answered as the opposite: the statement is not what is judged (mean |p + p_neg - 1| {m:.2}, tolerance {tolerance:.2})"
            ),
        };
        ProbeResult {
            question: key.to_string(),
            probe: Probe::Polarity,
            figure: Some(m),
            range: Some(range),
            states: gaps.len(),
            failed,
            verdict,
            line,
        }
    }

    pub(super) fn shuffle(&self, key: &str, noise: Option<&Noise>) -> ProbeResult {
        let (Some(Question::Choice(c)), Some(perm)) =
            (self.questions.get(key), self.derangements.get(key))
        else {
            return unmeasured(key, Probe::Shuffle, self.by_state.len());
        };
        let ids: Vec<&String> = c.criteria.keys().collect();
        let mut follow = 0;
        let mut by_id = 0;
        let mut measured = 0;
        let mut failed = 0;
        for s in self.by_state {
            let (Some(Some(before)), Some(Some(after))) = (
                s.get(&Variant::Original).map(|d| pick(d, key)),
                s.get(&Variant::Shuffled).map(|d| pick(d, key)),
            ) else {
                failed += 1;
                continue;
            };
            let Some(from) = ids.iter().position(|id| **id == before) else {
                failed += 1;
                continue;
            };
            // The id that now carries the description `before` had.
            let Some(to) = perm.iter().position(|&src| src == from) else {
                failed += 1;
                continue;
            };
            measured += 1;
            if *ids[to] == after {
                follow += 1;
            } else if before == after {
                by_id += 1;
            }
        }
        if measured == 0 {
            return unmeasured(key, Probe::Shuffle, failed);
        }
        let share = follow as f64 / measured as f64;
        let ceiling = noise
            .filter(|n| !n.shifts.is_empty())
            .map_or(1.0, |n| n.agree as f64 / n.shifts.len() as f64);
        let verdict = if share < FOLLOW_BROKEN {
            Verdict::Broken
        } else if share >= ceiling - FOLLOW_SLACK {
            Verdict::Ok
        } else {
            Verdict::Sensitive
        };
        let line = match verdict {
            Verdict::Ok => {
                format!("the pick follows the descriptions ({follow} of {measured} states)")
            }
            Verdict::Sensitive => format!(
                "the pick follows the descriptions in {follow} of {measured} states, fewer than repeats agree ({ceiling:.2})"
            ),
            _ => format!(
                "the pick does not follow the descriptions ({follow} of {measured} states; {by_id} kept the same option id): the encoding is not what decides"
            ),
        };
        ProbeResult {
            question: key.to_string(),
            probe: Probe::Shuffle,
            figure: Some(share),
            range: Some(wilson(share, measured)),
            states: measured,
            failed,
            verdict,
            line,
        }
    }
}
