//! Fitting the estimator's coefficients on recorded requests: least squares
//! kept non-negative, from sums that grow with the coefficients, never with
//! the requests.

use super::{Coefficients, Estimator, EstimatorError, FitError, Sample};

/// Fits the coefficients by least squares on recorded requests, and reports
/// the fit's error on them.
///
/// Every coefficient is kept at zero or above (non-negative least squares,
/// by an active set): a request's tokens never fall as it grows. A
/// coefficient the runs cannot tell apart from another (every request asked
/// the same questions, so the per-question and per-request tokens always come
/// together), or whose feature never occurs, is named in
/// [`Estimator::undetermined`] and stays as near the published default as the
/// data allows: the normal equations carry a vanishing pull toward the
/// defaults, which decides only what the data leaves open. Requests that
/// recorded no input tokens are left out. Usage that cannot be a bill (no
/// tokens per request at all) is refused.
///
/// The caller chooses what is fitted on: one model's billed requests (a
/// local style's usage, or two models' bills together, fit nothing true).
///
/// ```
/// use toolnexus::cost::{Sample, Shape, fit};
///
/// // A backend that bills 200 + 10/question + 30/described option + 5/level + state/3.
/// let bill = |s: &Shape| 200 + 10 * s.questions + 30 * s.described_options + 5 * s.score_levels + s.state_chars / 3;
/// let samples: Vec<Sample> = (0..60u64)
///     .map(|i| Shape::new(1 + i % 3, i % 4, (i % 2) * 5, 30 + 9 * i))
///     .map(|s| Sample::new(s, bill(&s) as i64, 0))
///     .collect();
/// let e = fit(&samples)?;
/// assert!(e.fit.unwrap().worst_pct < 1.0);
/// assert!((e.coefficients.per_described_option - 30.0).abs() < 0.5);
/// assert!(e.undetermined.is_empty());
/// # Ok::<(), toolnexus::cost::EstimatorError>(())
/// ```
pub fn fit(samples: &[Sample]) -> Result<Estimator, EstimatorError> {
    let mut fitter = Fitter::default();
    samples.iter().for_each(|s| fitter.push(s));
    let mut e = fitter.solve()?;
    let mut error = FitTally::default();
    samples.iter().for_each(|s| error.push(&e, s));
    e.fit = error.finish();
    Ok(e)
}

/// [`fit`] a request at a time: the least-squares sums of the requests seen
/// so far (a few dozen numbers, whatever their count), so that runs of any
/// size are fitted without holding their requests. Pushing the same requests
/// in the same order gives exactly what [`fit`] gives; the fit's error is a
/// second pass ([`FitTally`]).
///
/// ```
/// use toolnexus::cost::{FitTally, Fitter, Sample, Shape, fit};
///
/// let samples: Vec<Sample> = (0..20u64)
///     .map(|i| Sample::new(Shape::new(1 + i % 2, 0, 0, 40 + i), 100 + 7 * (1 + i as i64 % 2) + (40 + i as i64) / 4, 2))
///     .collect();
/// let mut fitter = Fitter::default();
/// samples.iter().for_each(|s| fitter.push(s));
/// assert!(fitter.occurs("per_state_char") && !fitter.occurs("per_score_level"));
/// let mut e = fitter.solve()?;
/// let mut error = FitTally::default();
/// samples.iter().for_each(|s| error.push(&e, s));
/// e.fit = error.finish();
/// assert_eq!(e, fit(&samples)?);
/// # Ok::<(), toolnexus::cost::EstimatorError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Fitter {
    /// XᵀX and Xᵀy over the requests that recorded input tokens.
    a: [[f64; 5]; 5],
    b: [f64; 5],
    rows: usize,
    questions: u64,
    output: i64,
}

impl Fitter {
    /// Adds one request (one that recorded no input tokens is left out).
    pub fn push(&mut self, s: &Sample) {
        if s.input_tokens <= 0 {
            return;
        }
        let x = s.shape.features();
        let y = s.input_tokens as f64;
        for i in 0..5 {
            self.b[i] += x[i] * y;
            for j in 0..5 {
                self.a[i][j] += x[i] * x[j];
            }
        }
        self.rows += 1;
        self.questions += s.shape.questions;
        self.output += s.output_tokens.max(0);
    }

    /// Whether a request fitted on has what coefficient `key` counts
    /// (`per_request`, `per_question`, `per_described_option`,
    /// `per_score_level` or `per_state_char`).
    pub fn occurs(&self, key: &str) -> bool {
        Coefficients::KEYS
            .iter()
            .position(|k| *k == key)
            .is_some_and(|i| self.a[i][i] > 0.0)
    }

    /// The coefficients (see [`fit`]), with no fit error yet.
    pub fn solve(&self) -> Result<Estimator, EstimatorError> {
        let fail = |message: String| EstimatorError {
            file: String::new(),
            message,
        };
        if self.rows == 0 {
            return Err(fail(
                "nothing to fit on: no request recorded its usage.input_tokens".into(),
            ));
        }
        let prior = Coefficients::default().to_array();
        let (mut a, mut b) = (self.a, self.b);
        let undetermined: Vec<&'static str> = undetermined(&a)
            .into_iter()
            .map(|i| Coefficients::KEYS[i])
            .collect();
        // The pull toward the defaults: relative to each column's own scale, so
        // small enough never to move what the data determines.
        for i in 0..5 {
            let lambda = 1e-7 * (a[i][i] + 1.0);
            a[i][i] += lambda;
            b[i] += lambda * prior[i];
        }
        let beta =
            nnls(&a, &b).ok_or_else(|| fail("the fit's normal equations are singular".into()))?;
        if beta[0] < 1.0 {
            return Err(fail(format!(
                "the recorded usage fits no tokens per request (per_request {:.2}): these requests do not look billed by one model's instructions; fit on billed runs of one model",
                beta[0]
            )));
        }
        let mut e = Estimator::new(Coefficients::from_array(beta));
        e.undetermined = undetermined;
        e.output_per_question = if self.questions > 0 {
            self.output as f64 / self.questions as f64
        } else {
            0.0
        };
        Ok(e)
    }
}

/// A fit's error on its requests, added up a request at a time (see
/// [`Fitter`]).
#[derive(Debug, Clone, Default)]
pub struct FitTally {
    rows: usize,
    sum: f64,
    worst: f64,
}

impl FitTally {
    /// Adds one request's error under `e` (one that recorded no input tokens
    /// is left out, as [`Fitter::push`] leaves it out).
    pub fn push(&mut self, e: &Estimator, s: &Sample) {
        if s.input_tokens <= 0 {
            return;
        }
        let y = s.input_tokens as f64;
        let pct = (e.input_tokens(&s.shape) - y).abs() / y * 100.0;
        self.rows += 1;
        self.sum += pct;
        self.worst = self.worst.max(pct);
    }

    /// The error, when a request was added.
    pub fn finish(&self) -> Option<FitError> {
        (self.rows > 0).then(|| FitError {
            rows: self.rows,
            mean_abs_pct: self.sum / self.rows as f64,
            worst_pct: self.worst,
        })
    }
}

/// The columns of the Gram matrix `g` (XᵀX of the features) the data cannot
/// determine: a feature that never occurs, or one (nearly) a combination of
/// the others, so that its coefficient trades off against theirs.
fn undetermined<const N: usize>(g: &[[f64; N]; N]) -> Vec<usize> {
    let present: Vec<usize> = (0..N).filter(|&i| g[i][i] > 0.0).collect();
    let mut out: Vec<usize> = (0..N).filter(|&i| g[i][i] <= 0.0).collect();
    // Scaled to a unit diagonal, the share of column i no other column
    // explains is 1 / (C⁻¹)ᵢᵢ; a whisker of ridge keeps C invertible.
    let n = present.len();
    let c: Vec<Vec<f64>> = present
        .iter()
        .map(|&i| {
            present
                .iter()
                .map(|&j| g[i][j] / (g[i][i] * g[j][j]).sqrt() + if i == j { 1e-10 } else { 0.0 })
                .collect()
        })
        .collect();
    for (k, &i) in present.iter().enumerate() {
        let mut e = vec![0.0; n];
        e[k] = 1.0;
        let alone = solve_dyn(c.clone(), e).map_or(0.0, |x| 1.0 / x[k]);
        if alone.is_nan() || alone <= 1e-6 {
            out.push(i);
        }
    }
    out.sort_unstable();
    out
}

/// Non-negative least squares on normal equations (`a x = b` with `x ≥ 0`,
/// `a` symmetric positive definite): the active-set method of Lawson and
/// Hanson in the form of Bro and de Jong, on columns scaled to a unit
/// diagonal. `None` when a step cannot be solved.
pub(super) fn nnls<const N: usize>(a: &[[f64; N]; N], b: &[f64; N]) -> Option<[f64; N]> {
    let d: Vec<f64> = (0..N).map(|i| 1.0 / a[i][i].sqrt()).collect();
    if d.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let g: Vec<Vec<f64>> = (0..N)
        .map(|i| (0..N).map(|j| a[i][j] * d[i] * d[j]).collect())
        .collect();
    let h: Vec<f64> = (0..N).map(|i| b[i] * d[i]).collect();
    let tol = 1e-12 * (1.0 + h.iter().fold(0.0f64, |m, v| m.max(v.abs())));
    let mut x = vec![0.0f64; N];
    let mut passive = [false; N];
    let solve_passive = |passive: &[bool; N]| -> Option<Vec<f64>> {
        let idx: Vec<usize> = (0..N).filter(|&i| passive[i]).collect();
        let sub: Vec<Vec<f64>> = idx
            .iter()
            .map(|&i| idx.iter().map(|&j| g[i][j]).collect())
            .collect();
        let rhs: Vec<f64> = idx.iter().map(|&i| h[i]).collect();
        let z = solve_dyn(sub, rhs)?;
        let mut s = vec![0.0; N];
        for (k, &i) in idx.iter().enumerate() {
            s[i] = z[k];
        }
        Some(s)
    };
    for _ in 0..(4 * N) {
        let w: Vec<f64> = (0..N)
            .map(|i| h[i] - (0..N).map(|j| g[i][j] * x[j]).sum::<f64>())
            .collect();
        let Some(j) = (0..N)
            .filter(|&i| !passive[i] && w[i] > tol)
            .max_by(|&p, &q| w[p].total_cmp(&w[q]))
        else {
            break;
        };
        passive[j] = true;
        for _ in 0..(4 * N) {
            let s = solve_passive(&passive)?;
            if (0..N).all(|i| !passive[i] || s[i] > 0.0) {
                x = s;
                break;
            }
            let alpha = (0..N)
                .filter(|&i| passive[i] && s[i] <= 0.0)
                .map(|i| x[i] / (x[i] - s[i]))
                .fold(1.0f64, f64::min);
            for i in 0..N {
                x[i] += alpha * (s[i] - x[i]);
                if passive[i] && x[i] <= 1e-15 {
                    passive[i] = false;
                    x[i] = 0.0;
                }
            }
        }
    }
    let mut out = [0.0; N];
    for i in 0..N {
        out[i] = (x[i] * d[i]).max(0.0);
    }
    out.iter().all(|v| v.is_finite()).then_some(out)
}

/// Solves `a x = b` by Gaussian elimination with partial pivoting; `None`
/// when `a` is singular.
pub(super) fn solve_dyn(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for col in 0..n {
        let pivot = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() < 1e-300 || !a[pivot][col].is_finite() {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        let (top, rest) = a.split_at_mut(col + 1);
        let pivot_row = &top[col];
        for (i, row) in rest.iter_mut().enumerate() {
            let f = row[col] / pivot_row[col];
            if f == 0.0 {
                continue;
            }
            for (x, p) in row[col..].iter_mut().zip(&pivot_row[col..]) {
                *x -= f * p;
            }
            b[col + 1 + i] -= f * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for row in (0..n).rev() {
        let rest: f64 = (row + 1..n).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - rest) / a[row][row];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}
