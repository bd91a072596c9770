//! Calibration maps and their fitting: Platt and isotonic for noul, temperature
//! for choice and score distributions.
//!
//! Every fit is deterministic (folds come from a seeded shuffle) and checked
//! against scikit-learn: Platt's parameters against `_sigmoid_calibration`,
//! isotonic knots and predictions against `IsotonicRegression(out_of_bounds=
//! "clip")` (`scripts/assess-fixtures.py`).
//!
//! ```
//! use toolnexus::assess::calibrate::*;
//!
//! // An over-confident model: says 0.9 when it is right 80% of the time.
//! let p: Vec<f64> = (0..100).map(|i| if i % 2 == 0 { 0.9 } else { 0.1 }).collect();
//! let y: Vec<bool> = (0..100).map(|i| (i % 2 == 0) == (i % 10 < 7)).collect();
//! let fit = fit_noul(&p, &y, 5, 0);
//! assert!(fit.cv_log_loss_before > fit.cv_log_loss_platt.min(fit.cv_log_loss_isotonic));
//! assert!((fit.map.apply(0.9) - 0.8).abs() < 0.05);
//! ```

use super::metrics::{log_loss_binary, log_loss_multi};
use super::rng::Rng;

/// The clip applied before a logit, as scikit-learn's sigmoid calibration does.
const LOGIT_CLIP: f64 = 1e-6;

/// The smallest probability a log takes in temperature scaling.
const LOG_FLOOR: f64 = 1e-12;

fn logit(p: f64) -> f64 {
    let p = p.clamp(LOGIT_CLIP, 1.0 - LOGIT_CLIP);
    (p / (1.0 - p)).ln()
}

fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

/// Platt scaling on the logit of P(true): `P = 1 / (1 + exp(a·f + b))`, with
/// `f = logit(clip(p, 1e-6, 1 − 1e-6))` (scikit-learn's sigmoid calibration).
///
/// ```
/// use toolnexus::assess::calibrate::Platt;
/// let identity = Platt { a: -1.0, b: 0.0 };
/// assert!((identity.apply(0.8) - 0.8).abs() < 1e-12);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Platt {
    /// Slope.
    pub a: f64,
    /// Intercept.
    pub b: f64,
}

impl Platt {
    /// Fits on raw P(true) and outcomes: Newton's method on the cross-entropy
    /// against Platt's prior-smoothed targets (`(n₊+1)/(n₊+2)` and `1/(n₋+2)`),
    /// which keeps the fit finite on separable data.
    ///
    /// ```
    /// use toolnexus::assess::calibrate::Platt;
    /// let p = [0.9, 0.9, 0.9, 0.1, 0.1, 0.1];
    /// let y = [true, true, false, false, false, true];
    /// let fit = Platt::fit(&p, &y);
    /// assert!(fit.apply(0.9) < 0.9 && fit.apply(0.9) > 0.5);
    /// ```
    pub fn fit(p: &[f64], y: &[bool]) -> Platt {
        let f: Vec<f64> = p.iter().map(|&p| logit(p)).collect();
        let positives = y.iter().filter(|&&t| t).count() as f64;
        let negatives = y.len() as f64 - positives;
        let hi = (positives + 1.0) / (positives + 2.0);
        let lo = 1.0 / (negatives + 2.0);
        let t: Vec<f64> = y.iter().map(|&t| if t { hi } else { lo }).collect();
        let loss = |a: f64, b: f64| -> f64 {
            f.iter()
                .zip(&t)
                .map(|(&f, &t)| {
                    // −[t ln σ(−z) + (1−t) ln σ(z)], z = a·f + b, stably.
                    let z = a * f + b;
                    let softplus = |x: f64| {
                        if x > 0.0 {
                            x + (-x).exp().ln_1p()
                        } else {
                            x.exp().ln_1p()
                        }
                    };
                    t * softplus(z) + (1.0 - t) * softplus(-z)
                })
                .sum()
        };
        let (mut a, mut b) = (0.0, ((negatives + 1.0) / (positives + 1.0)).ln());
        let mut current = loss(a, b);
        for _ in 0..200 {
            let (mut ga, mut gb, mut haa, mut hab, mut hbb) = (0.0, 0.0, 0.0, 0.0, 0.0);
            for (&f, &t) in f.iter().zip(&t) {
                let prob = sigmoid(-(a * f + b));
                let d = t - prob;
                let w = (prob * (1.0 - prob)).max(1e-300);
                ga += d * f;
                gb += d;
                haa += w * f * f;
                hab += w * f;
                hbb += w;
            }
            let det = haa * hbb - hab * hab;
            let (da, db) = if det.abs() > 1e-12 * (haa * hbb).abs().max(1e-300) {
                ((hbb * ga - hab * gb) / det, (haa * gb - hab * ga) / det)
            } else {
                (0.0, gb / hbb.max(1e-300))
            };
            // Backtracking: never accept a step that raises the loss.
            let mut step = 1.0;
            let mut accepted = false;
            while step > 1e-10 {
                let (na, nb) = (a - step * da, b - step * db);
                let next = loss(na, nb);
                if next <= current {
                    accepted = true;
                    let moved = (na - a).abs().max((nb - b).abs());
                    (a, b, current) = (na, nb, next);
                    if moved < 1e-12 {
                        return Platt { a, b };
                    }
                    break;
                }
                step /= 2.0;
            }
            if !accepted {
                break;
            }
        }
        Platt { a, b }
    }

    /// Maps one probability.
    ///
    /// ```
    /// use toolnexus::assess::calibrate::Platt;
    /// assert_eq!(Platt { a: 0.0, b: 0.0 }.apply(0.99), 0.5);
    /// ```
    pub fn apply(&self, p: f64) -> f64 {
        sigmoid(-(self.a * logit(p) + self.b))
    }
}

/// Isotonic regression (pool adjacent violators): a non-decreasing step map,
/// interpolated linearly between its knots and clipped outside them.
///
/// ```
/// use toolnexus::assess::calibrate::Isotonic;
/// let m = Isotonic { x: vec![0.2, 0.8], y: vec![0.1, 0.9] };
/// assert!((m.apply(0.5) - 0.5).abs() < 1e-12);
/// assert_eq!((m.apply(0.0), m.apply(1.0)), (0.1, 0.9));
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Isotonic {
    /// Knot inputs, increasing.
    pub x: Vec<f64>,
    /// Knot outputs, non-decreasing.
    pub y: Vec<f64>,
}

/// Inputs closer than this to a group's first input join the group.
const RESOLUTION: f64 = 1e-15;

impl Isotonic {
    /// Fits on raw P(true) and outcomes as scikit-learn does: inputs less than
    /// 1e-15 above a group's first are merged into it (their mean outcome,
    /// weighted by count), adjacent violators pooled, and interior knots whose
    /// output equals both neighbours' dropped.
    ///
    /// ```
    /// use toolnexus::assess::calibrate::Isotonic;
    /// let m = Isotonic::fit(&[0.1, 0.4, 0.6, 0.9], &[false, true, false, true]);
    /// assert_eq!(m.y, [0.0, 0.5, 0.5, 1.0]);
    /// ```
    pub fn fit(p: &[f64], y: &[bool]) -> Isotonic {
        let n = p.len().min(y.len());
        if n == 0 {
            return Isotonic {
                x: Vec::new(),
                y: Vec::new(),
            };
        }
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| p[a].total_cmp(&p[b]).then(y[a].cmp(&y[b])));
        // Unique inputs (within float64 resolution, as numpy's
        // `finfo.resolution`) with their summed weight and mean outcome.
        let mut xs: Vec<f64> = Vec::new();
        let mut sums: Vec<f64> = Vec::new();
        let mut weights: Vec<f64> = Vec::new();
        for &i in &order {
            let v = f64::from(u8::from(y[i]));
            if xs.last().is_some_and(|&first| p[i] - first < RESOLUTION) {
                *sums.last_mut().expect("parallel") += v;
                *weights.last_mut().expect("parallel") += 1.0;
            } else {
                xs.push(p[i]);
                sums.push(v);
                weights.push(1.0);
            }
        }
        // Pool adjacent violators over blocks (mean, weight, length).
        let mut blocks: Vec<(f64, f64, usize)> = Vec::with_capacity(xs.len());
        for (s, w) in sums.iter().zip(&weights) {
            let mut block = (s / w, *w, 1usize);
            while let Some(&(m, bw, len)) = blocks.last() {
                if m < block.0 {
                    break;
                }
                blocks.pop();
                let total = bw + block.1;
                block = ((m * bw + block.0 * block.1) / total, total, len + block.2);
            }
            blocks.push(block);
        }
        let fitted: Vec<f64> = blocks
            .iter()
            .flat_map(|&(m, _, len)| std::iter::repeat_n(m.clamp(0.0, 1.0), len))
            .collect();
        // Drop interior knots that change nothing.
        let k = xs.len();
        let keep = |i: usize| {
            i == 0 || i + 1 == k || fitted[i] != fitted[i - 1] || fitted[i] != fitted[i + 1]
        };
        let (x, y): (Vec<f64>, Vec<f64>) = (0..k)
            .filter(|&i| keep(i))
            .map(|i| (xs[i], fitted[i]))
            .unzip();
        Isotonic { x, y }
    }

    /// Maps one probability (`numpy.interp` over the knots, clipped at both
    /// ends; an empty map is the identity).
    ///
    /// ```
    /// use toolnexus::assess::calibrate::Isotonic;
    /// assert_eq!(Isotonic { x: vec![], y: vec![] }.apply(0.3), 0.3);
    /// ```
    pub fn apply(&self, p: f64) -> f64 {
        let (x, y) = (&self.x, &self.y);
        let Some((&first, &last)) = x.first().zip(x.last()) else {
            return p;
        };
        if p <= first {
            return y[0];
        }
        if p >= last {
            return y[y.len() - 1];
        }
        // The first knot above p; p lies in [x[j-1], x[j]).
        let j = x.partition_point(|&k| k <= p);
        let (x0, x1, y0, y1) = (x[j - 1], x[j], y[j - 1], y[j]);
        let slope = (y1 - y0) / (x1 - x0);
        slope * (p - x0) + y0
    }
}

/// Temperature scaling of a distribution: `softmax(ln p / t)`.
///
/// ```
/// use toolnexus::assess::calibrate::Temperature;
/// let soft = Temperature { t: 2.0 }.apply(&[0.9, 0.1]);
/// assert!((soft[0] - 0.75).abs() < 1e-12);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Temperature {
    /// The temperature (> 0; above 1 softens).
    pub t: f64,
}

/// Lowest and highest temperature a fit considers.
const T_RANGE: (f64, f64) = (0.05, 20.0);

impl Temperature {
    /// Fits `t` in [0.05, 20] by minimising log loss: safeguarded Newton steps
    /// on `1/t`, over which the loss is convex (a bisection step whenever
    /// Newton would leave the bracket the gradient's sign keeps).
    ///
    /// ```
    /// use toolnexus::assess::calibrate::Temperature;
    /// // Says 0.9 / 0.1 but is right 75% of the time: t ≈ 2.
    /// let probs: Vec<Vec<f64>> = (0..100).map(|_| vec![0.9, 0.1]).collect();
    /// let gold: Vec<usize> = (0..100).map(|i| usize::from(i % 4 == 0)).collect();
    /// assert!((Temperature::fit(&probs, &gold).t - 2.0).abs() < 1e-3);
    /// ```
    pub fn fit(probs: &[Vec<f64>], gold: &[usize]) -> Temperature {
        let rows: Vec<(Vec<f64>, f64)> = probs
            .iter()
            .zip(gold)
            .map(|(row, &g)| {
                let logs: Vec<f64> = row.iter().map(|&p| p.max(LOG_FLOOR).ln()).collect();
                let at_gold = logs.get(g).copied().unwrap_or(LOG_FLOOR.ln());
                (logs, at_gold)
            })
            .collect();
        // The loss's first and second derivatives in beta = 1/t: per row, the
        // softmax mean of the logs minus the gold's, and their softmax variance.
        let derivatives = |beta: f64| -> (f64, f64) {
            let (mut grad, mut hess) = (0.0, 0.0);
            for (logs, at_gold) in &rows {
                let max = logs.iter().fold(f64::NEG_INFINITY, |m, &l| m.max(beta * l));
                let (mut z, mut m1, mut m2) = (0.0, 0.0, 0.0);
                for &l in logs {
                    let e = (beta * l - max).exp();
                    z += e;
                    m1 += e * l;
                    m2 += e * l * l;
                }
                let (mean, second) = (m1 / z, m2 / z);
                grad += mean - at_gold;
                hess += (second - mean * mean).max(0.0);
            }
            (grad, hess)
        };
        let (mut lo, mut hi) = (1.0 / T_RANGE.1, 1.0 / T_RANGE.0);
        if derivatives(lo).0 >= 0.0 {
            return Temperature { t: 1.0 / lo };
        }
        if derivatives(hi).0 <= 0.0 {
            return Temperature { t: 1.0 / hi };
        }
        let mut beta = 1.0_f64.clamp(lo, hi);
        for _ in 0..200 {
            let (grad, hess) = derivatives(beta);
            if grad > 0.0 {
                hi = beta;
            } else if grad < 0.0 {
                lo = beta;
            } else {
                break;
            }
            let newton = beta - grad / hess;
            let next = if hess > 0.0 && newton > lo && newton < hi {
                newton
            } else {
                0.5 * (lo + hi)
            };
            let done = (next - beta).abs() <= 1e-13 * beta.max(1.0) || hi - lo <= 1e-13;
            beta = next;
            if done {
                break;
            }
        }
        Temperature { t: 1.0 / beta }
    }

    /// Maps one distribution (in the same order).
    ///
    /// ```
    /// use toolnexus::assess::calibrate::Temperature;
    /// assert_eq!(Temperature { t: 1.0 }.apply(&[0.5, 0.5]), [0.5, 0.5]);
    /// ```
    pub fn apply(&self, probs: &[f64]) -> Vec<f64> {
        let beta = 1.0 / self.t;
        let logs: Vec<f64> = probs
            .iter()
            .map(|&p| beta * p.max(LOG_FLOOR).ln())
            .collect();
        let max = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let exps: Vec<f64> = logs.iter().map(|&l| (l - max).exp()).collect();
        let total: f64 = exps.iter().sum();
        exps.into_iter().map(|e| e / total).collect()
    }
}

/// A fitted map for noul probabilities.
///
/// ```
/// use toolnexus::assess::calibrate::{NoulMap, Platt};
/// let map = NoulMap::Platt(Platt { a: -1.0, b: 0.0 });
/// let text = serde_json::to_string(&map).unwrap();
/// assert_eq!(text, r#"{"method":"platt","a":-1.0,"b":0.0}"#);
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "method", rename_all = "lowercase")]
pub enum NoulMap {
    /// No change.
    Identity,
    /// Platt scaling.
    Platt(Platt),
    /// Isotonic regression.
    Isotonic(Isotonic),
}

impl NoulMap {
    /// Maps one probability.
    ///
    /// ```
    /// assert_eq!(toolnexus::assess::calibrate::NoulMap::Identity.apply(0.3), 0.3);
    /// ```
    pub fn apply(&self, p: f64) -> f64 {
        match self {
            NoulMap::Identity => p,
            NoulMap::Platt(m) => m.apply(p),
            NoulMap::Isotonic(m) => m.apply(p),
        }
    }
}

/// Fold index (0..k) for each of `n` rows: a seeded shuffle dealt round-robin,
/// so fold sizes differ by at most one.
///
/// ```
/// let folds = toolnexus::assess::calibrate::kfold(10, 3, 7);
/// assert_eq!(folds.len(), 10);
/// assert_eq!(folds.iter().filter(|&&f| f == 0).count(), 4);
/// ```
pub fn kfold(n: usize, k: usize, seed: u64) -> Vec<usize> {
    let k = k.max(1);
    let mut order: Vec<usize> = (0..n).collect();
    Rng::new(seed).shuffle(&mut order);
    let mut folds = vec![0; n];
    for (pos, &i) in order.iter().enumerate() {
        folds[i] = pos % k;
    }
    folds
}

/// Splits `values` into the rows outside fold `f` and the positions inside it.
fn split<T: Clone>(values: &[T], folds: &[usize], f: usize) -> Vec<T> {
    values
        .iter()
        .zip(folds)
        .filter(|&(_, &g)| g != f)
        .map(|(v, _)| v.clone())
        .collect()
}

/// Out-of-fold predictions: row i mapped by `fit` on the rows of other folds.
fn out_of_fold<P: Clone, Y: Clone, M, O>(
    p: &[P],
    y: &[Y],
    folds: usize,
    seed: u64,
    fit: impl Fn(&[P], &[Y]) -> M,
    apply: impl Fn(&M, &P) -> O,
) -> Vec<O>
where
    O: Clone,
{
    let n = p.len().min(y.len());
    let fold = kfold(n, folds, seed);
    let k = folds.max(1);
    let mut out: Vec<Option<O>> = vec![None; n];
    for f in 0..k {
        if !fold.contains(&f) {
            continue;
        }
        let model = fit(&split(&p[..n], &fold, f), &split(&y[..n], &fold, f));
        for i in (0..n).filter(|&i| fold[i] == f) {
            out[i] = Some(apply(&model, &p[i]));
        }
    }
    out.into_iter()
        .map(|o| o.expect("every row is in a fold"))
        .collect()
}

/// The noul map chosen by cross-validated log loss, with the figures that chose it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NoulFit {
    /// The chosen map, fitted on all rows.
    pub map: NoulMap,
    /// Out-of-fold log loss of the raw probabilities.
    pub cv_log_loss_before: f64,
    /// Out-of-fold log loss under Platt scaling.
    pub cv_log_loss_platt: f64,
    /// Out-of-fold log loss under isotonic regression.
    pub cv_log_loss_isotonic: f64,
}

/// Fits Platt and isotonic with `folds`-fold CV and keeps the one with the lower
/// out-of-fold log loss (identity when neither beats the raw probabilities).
///
/// ```
/// use toolnexus::assess::calibrate::{NoulMap, fit_noul};
/// // Already calibrated: nothing to fix.
/// let p: Vec<f64> = (0..200).map(|i| if i % 2 == 0 { 0.8 } else { 0.2 }).collect();
/// let y: Vec<bool> = (0..200).map(|i| (i % 2 == 0) == (i % 10 < 8)).collect();
/// let fit = fit_noul(&p, &y, 5, 0);
/// assert!(fit.cv_log_loss_before <= fit.cv_log_loss_platt + 0.01);
/// ```
pub fn fit_noul(p: &[f64], y: &[bool], folds: usize, seed: u64) -> NoulFit {
    let n = p.len().min(y.len());
    let (p, y) = (&p[..n], &y[..n]);
    let platt = out_of_fold(p, y, folds, seed, Platt::fit, |m, &p| m.apply(p));
    let isotonic = out_of_fold(p, y, folds, seed, Isotonic::fit, |m, &p| m.apply(p));
    let before = log_loss_binary(p, y);
    let (lp, li) = (log_loss_binary(&platt, y), log_loss_binary(&isotonic, y));
    let map = if lp.min(li) >= before {
        NoulMap::Identity
    } else if lp <= li {
        NoulMap::Platt(Platt::fit(p, y))
    } else {
        NoulMap::Isotonic(Isotonic::fit(p, y))
    };
    NoulFit {
        map,
        cv_log_loss_before: before,
        cv_log_loss_platt: lp,
        cv_log_loss_isotonic: li,
    }
}

/// A fitted temperature with its cross-validated figures.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TemperatureFit {
    /// The temperature, fitted on all rows.
    pub map: Temperature,
    /// Out-of-fold log loss before.
    pub cv_log_loss_before: f64,
    /// Out-of-fold log loss after.
    pub cv_log_loss_after: f64,
}

/// Fits a temperature with `folds`-fold CV figures.
///
/// ```
/// use toolnexus::assess::calibrate::fit_temperature;
/// let probs: Vec<Vec<f64>> = (0..100).map(|_| vec![0.9, 0.1]).collect();
/// let gold: Vec<usize> = (0..100).map(|i| usize::from(i % 4 == 0)).collect();
/// let fit = fit_temperature(&probs, &gold, 5, 0);
/// assert!(fit.cv_log_loss_after < fit.cv_log_loss_before);
/// ```
pub fn fit_temperature(
    probs: &[Vec<f64>],
    gold: &[usize],
    folds: usize,
    seed: u64,
) -> TemperatureFit {
    let n = probs.len().min(gold.len());
    let (probs, gold) = (&probs[..n], &gold[..n]);
    let held_out = cross_validated_temperature(probs, gold, folds, seed);
    TemperatureFit {
        map: Temperature::fit(probs, gold),
        cv_log_loss_before: log_loss_multi(probs, gold),
        cv_log_loss_after: log_loss_multi(&held_out, gold),
    }
}

/// Out-of-fold calibrated P(true): each row mapped by the map [`fit_noul`] picks
/// on the other folds (held-out figures for a report).
///
/// ```
/// use toolnexus::assess::calibrate::cross_validated_noul;
/// let p = vec![0.9; 50];
/// let y: Vec<bool> = (0..50).map(|i| i % 2 == 0).collect();
/// let held_out = cross_validated_noul(&p, &y, 5, 0);
/// assert!(held_out.iter().all(|&q| (q - 0.5).abs() < 0.1));
/// ```
pub fn cross_validated_noul(p: &[f64], y: &[bool], folds: usize, seed: u64) -> Vec<f64> {
    // The inner choice uses a different split of the training rows.
    let inner_seed = seed ^ 0x005E_ED0F_F01D;
    out_of_fold(
        p,
        y,
        folds,
        seed,
        |p, y| fit_noul(p, y, folds, inner_seed).map,
        |m, &p| m.apply(p),
    )
}

/// Out-of-fold temperature-scaled distributions.
///
/// ```
/// use toolnexus::assess::calibrate::cross_validated_temperature;
/// let probs: Vec<Vec<f64>> = (0..20).map(|_| vec![0.9, 0.1]).collect();
/// let gold = vec![0usize; 20];
/// let held_out = cross_validated_temperature(&probs, &gold, 4, 0);
/// assert!(held_out[0][0] > 0.9);
/// ```
pub fn cross_validated_temperature(
    probs: &[Vec<f64>],
    gold: &[usize],
    folds: usize,
    seed: u64,
) -> Vec<Vec<f64>> {
    out_of_fold(probs, gold, folds, seed, Temperature::fit, |m, row| {
        m.apply(row)
    })
}
