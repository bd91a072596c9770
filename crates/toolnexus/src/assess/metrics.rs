//! Pure metrics over confidences, probabilities and labels.
//!
//! Each function is a plain function of slices, so it can be checked against an
//! independent implementation: `scripts/assess-fixtures.py` computed the same
//! figures once with scikit-learn and NumPy, and the tests hold these to them
//! (to 1e-9). Where scikit-learn has a convention (clipping in log loss, bin
//! edges in the calibration curve, labels in macro F1) it is followed and the
//! function says so.
//!
//! ```
//! use toolnexus::assess::metrics::*;
//!
//! let p = [0.9, 0.8, 0.3, 0.1];
//! let y = [true, true, false, true];
//! assert_eq!(auroc(&p, &y), Some(2.0 / 3.0));
//! assert!((brier_binary(&p, &y) - 0.2375).abs() < 1e-12);
//! let bins = reliability(&p, &y, 15);
//! assert_eq!(bins.iter().map(|b| b.count).sum::<usize>(), 4);
//! ```

/// One bin of a reliability table.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Bin {
    /// Lower edge.
    pub lo: f64,
    /// Upper edge.
    pub hi: f64,
    /// Rows whose confidence fell in the bin.
    pub count: usize,
    /// Mean confidence of those rows (0 when empty).
    pub mean_confidence: f64,
    /// Share of those rows that were right (for noul: that were `true`); 0 when empty.
    pub observed: f64,
}

/// The `j`th of `bins + 1` equal-width edges over [0, 1], computed as
/// `numpy.linspace(0, 1, bins + 1)` does (so a fixture's edge values match).
fn edge(j: usize, bins: usize) -> f64 {
    if j == bins {
        1.0
    } else {
        j as f64 * (1.0 / bins as f64)
    }
}

/// Equal-width reliability table: `bins` bins over [0, 1], every bin listed
/// (empty ones with count 0). Rows go to bins as scikit-learn's
/// `calibration_curve(strategy="uniform")` puts them: a value on an inner edge
/// goes to the lower bin, 0 to the first, 1 to the last.
///
/// ```
/// use toolnexus::assess::metrics::reliability;
/// let bins = reliability(&[0.05, 0.95, 0.97], &[false, true, false], 10);
/// assert_eq!(bins.len(), 10);
/// assert_eq!((bins[0].count, bins[9].count), (1, 2));
/// assert_eq!(bins[9].observed, 0.5);
/// ```
pub fn reliability(confidence: &[f64], hit: &[bool], bins: usize) -> Vec<Bin> {
    let mut t = BinTally::new(bins);
    for (&c, &h) in confidence.iter().zip(hit) {
        t.push(c, h);
    }
    t.bins()
}

/// A [`reliability`] table added up a row at a time (rows in order, so the
/// sums are the same as over the slices).
#[derive(Debug, Clone, Default)]
pub(crate) struct BinTally {
    inner: Vec<f64>,
    count: Vec<usize>,
    sum: Vec<f64>,
    right: Vec<usize>,
}

impl BinTally {
    /// An empty table of `bins` equal-width bins.
    pub(crate) fn new(bins: usize) -> BinTally {
        let bins = bins.max(1);
        BinTally {
            inner: (1..bins).map(|j| edge(j, bins)).collect(),
            count: vec![0; bins],
            sum: vec![0.0; bins],
            right: vec![0; bins],
        }
    }

    /// Adds one row.
    pub(crate) fn push(&mut self, c: f64, h: bool) {
        // searchsorted(inner, c, side="left"): the edges strictly below c.
        let b = self.inner.partition_point(|&e| e < c);
        self.count[b] += 1;
        self.sum[b] += c;
        self.right[b] += usize::from(h);
    }

    /// The table.
    pub(crate) fn bins(&self) -> Vec<Bin> {
        let (count, sum, right, bins) = (&self.count, &self.sum, &self.right, self.count.len());
        (0..bins)
            .map(|b| Bin {
                lo: edge(b, bins),
                hi: edge(b + 1, bins),
                count: count[b],
                mean_confidence: if count[b] == 0 {
                    0.0
                } else {
                    sum[b] / count[b] as f64
                },
                observed: if count[b] == 0 {
                    0.0
                } else {
                    right[b] as f64 / count[b] as f64
                },
            })
            .collect()
    }
}

/// Equal-count reliability table: rows sorted by confidence and split into `bins`
/// groups as `numpy.array_split` does (the first `n % bins` groups one larger).
/// Each bin's edges are its lowest and highest confidence; with fewer rows than
/// bins, only the non-empty groups are listed.
///
/// ```
/// use toolnexus::assess::metrics::adaptive_reliability;
/// let bins = adaptive_reliability(&[0.9, 0.1, 0.5, 0.7, 0.3], &[true; 5], 2);
/// assert_eq!(bins.iter().map(|b| b.count).collect::<Vec<_>>(), [3, 2]);
/// assert_eq!((bins[0].lo, bins[0].hi), (0.1, 0.5));
/// ```
pub fn adaptive_reliability(confidence: &[f64], hit: &[bool], bins: usize) -> Vec<Bin> {
    let n = confidence.len().min(hit.len());
    let bins = bins.max(1);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| confidence[a].total_cmp(&confidence[b]));
    adaptive_sorted(order.iter().map(|&i| (confidence[i], hit[i])), n, bins)
}

/// [`adaptive_reliability`] of `n` rows given in ascending confidence (equal
/// confidences in row order), so that the rows can come from a sort that
/// does not hold them.
pub(crate) fn adaptive_sorted(
    sorted: impl IntoIterator<Item = (f64, bool)>,
    n: usize,
    bins: usize,
) -> Vec<Bin> {
    let bins = bins.max(1);
    let (base, extra) = (n / bins, n % bins);
    let mut out = Vec::with_capacity(bins.min(n));
    let mut rows = sorted.into_iter();
    for b in 0..bins {
        let size = base + usize::from(b < extra);
        if size == 0 {
            continue;
        }
        let (mut lo, mut hi, mut right) = (None, 0.0, 0usize);
        let sum: f64 = rows
            .by_ref()
            .take(size)
            .map(|(c, h)| {
                lo.get_or_insert(c);
                hi = c;
                right += usize::from(h);
                c
            })
            .sum();
        out.push(Bin {
            lo: lo.unwrap_or(hi),
            hi,
            count: size,
            mean_confidence: sum / size as f64,
            observed: right as f64 / size as f64,
        });
    }
    out
}

/// Expected calibration error: Σ count/n · |observed − mean confidence| (0 when
/// every bin is empty).
///
/// ```
/// use toolnexus::assess::metrics::{ece, reliability};
/// let bins = reliability(&[0.9, 0.9], &[true, false], 15);
/// assert!((ece(&bins) - 0.4).abs() < 1e-12);
/// ```
pub fn ece(bins: &[Bin]) -> f64 {
    let n: usize = bins.iter().map(|b| b.count).sum();
    if n == 0 {
        return 0.0;
    }
    bins.iter()
        .map(|b| b.count as f64 / n as f64 * (b.observed - b.mean_confidence).abs())
        .sum()
}

/// Equal-width bins of every ECE, MCE and reliability table `assess` prints
/// (the bins of [`EceRows::ece`]).
///
/// ```
/// assert_eq!(toolnexus::assess::metrics::ECE_BINS, 15);
/// ```
pub const ECE_BINS: usize = 15;

/// The rows an ECE is computed over, in its one definition, the one
/// torchmetrics' `BinaryCalibrationError` and `MulticlassCalibrationError`
/// (`norm="l1"`) use: for each row, the probability being judged and whether
/// what it is the probability of came true.
///
/// - A noul answer: P(yes) against the gold outcome (was the statement true?),
///   so a model that leans towards "yes" shows even where its "yes" and "no"
///   answers are equally confident.
/// - A choice or score answer with a distribution: its **top-label
///   confidence**, the probability of its most probable class (the first on
///   ties), against whether that class is the gold one. A row without a
///   distribution (no positive, finite probability) has no such confidence and
///   is not counted.
///
/// [`EceRows::ece`] is the expected calibration error every `assess` command
/// prints (`report`, `calibrate`, `compare`, and a student's held-out report
/// from `distill`): the rows in [`ECE_BINS`] equal-width bins over [0, 1] with
/// scikit-learn's edges ([`reliability`]: a value on an inner edge goes to the
/// lower bin), then Σ count/n · |share that came true − mean probability| over
/// the bins ([`ece`]), each bin weighted by its share of the rows.
///
/// ```
/// use toolnexus::assess::metrics::EceRows;
/// let noul = EceRows::from_noul(&[0.8, 0.2], &[true, true]);
/// assert_eq!((noul.confidence(), noul.hit()), (&[0.8, 0.2][..], &[true, true][..]));
/// assert!((noul.ece() - 0.5).abs() < 1e-12);
/// let choice = EceRows::from_distributions(&[vec![0.1, 0.7, 0.2], vec![0.0, 0.0, 0.0]], &[1, 0]);
/// assert_eq!((choice.confidence(), choice.hit()), (&[0.7][..], &[true][..]));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EceRows {
    confidence: Vec<f64>,
    hit: Vec<bool>,
}

impl EceRows {
    /// Adds a noul answer P(yes) = `p_true` whose gold is `y` (a non-finite
    /// probability is not counted).
    ///
    /// ```
    /// let mut t = toolnexus::assess::metrics::EceRows::default();
    /// t.push_noul(0.3, false);
    /// assert_eq!((t.confidence()[0], t.hit()[0]), (0.3, false));
    /// ```
    pub fn push_noul(&mut self, p_true: f64, y: bool) {
        if p_true.is_finite() {
            self.confidence.push(p_true);
            self.hit.push(y);
        }
    }

    /// Adds a distribution `probs` whose gold class is `gold`: its top-label
    /// confidence (not counted without a positive, finite probability).
    ///
    /// ```
    /// let mut t = toolnexus::assess::metrics::EceRows::default();
    /// t.push_distribution(&[0.4, 0.4, 0.2], 1);
    /// assert_eq!((t.confidence()[0], t.hit()[0]), (0.4, false), "the first on ties");
    /// t.push_distribution(&[], 0);
    /// assert_eq!(t.len(), 1);
    /// ```
    pub fn push_distribution(&mut self, probs: &[f64], gold: usize) {
        if probs.iter().any(|p| !p.is_finite()) || !probs.iter().any(|&p| p > 0.0) {
            return;
        }
        let mut top = 0;
        for (i, &p) in probs.iter().enumerate() {
            if p > probs[top] {
                top = i;
            }
        }
        self.confidence.push(probs[top]);
        self.hit.push(top == gold);
    }

    /// Noul answers P(yes) against their gold outcomes.
    ///
    /// ```
    /// let t = toolnexus::assess::metrics::EceRows::from_noul(&[0.9, 0.4], &[true, true]);
    /// assert_eq!(t.confidence(), [0.9, 0.4]);
    /// ```
    pub fn from_noul(p_true: &[f64], y: &[bool]) -> EceRows {
        let mut t = EceRows::default();
        for (&p, &y) in p_true.iter().zip(y) {
            t.push_noul(p, y);
        }
        t
    }

    /// Distributions' top labels against their gold classes.
    ///
    /// ```
    /// let t = toolnexus::assess::metrics::EceRows::from_distributions(&[vec![0.2, 0.8]], &[1]);
    /// assert_eq!((t.confidence(), t.hit()), (&[0.8][..], &[true][..]));
    /// ```
    pub fn from_distributions(probs: &[Vec<f64>], gold: &[usize]) -> EceRows {
        let mut t = EceRows::default();
        for (row, &g) in probs.iter().zip(gold) {
            t.push_distribution(row, g);
        }
        t
    }

    /// Each counted row's probability.
    ///
    /// ```
    /// assert!(toolnexus::assess::metrics::EceRows::default().confidence().is_empty());
    /// ```
    pub fn confidence(&self) -> &[f64] {
        &self.confidence
    }

    /// Whether what each counted row's probability is of came true.
    ///
    /// ```
    /// assert!(toolnexus::assess::metrics::EceRows::default().hit().is_empty());
    /// ```
    pub fn hit(&self) -> &[bool] {
        &self.hit
    }

    /// Rows counted.
    ///
    /// ```
    /// assert_eq!(toolnexus::assess::metrics::EceRows::from_noul(&[0.5], &[false]).len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.confidence.len()
    }

    /// Whether no row was counted.
    ///
    /// ```
    /// assert!(toolnexus::assess::metrics::EceRows::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.confidence.is_empty()
    }

    /// The reliability table behind [`EceRows::ece`]: [`ECE_BINS`]
    /// equal-width bins, every bin listed.
    ///
    /// ```
    /// let t = toolnexus::assess::metrics::EceRows::from_noul(&[0.95], &[true]);
    /// let bins = t.reliability();
    /// assert_eq!((bins.len(), bins[14].count), (15, 1));
    /// ```
    pub fn reliability(&self) -> Vec<Bin> {
        reliability(&self.confidence, &self.hit, ECE_BINS)
    }

    /// The expected calibration error, in its one definition (see
    /// [`EceRows`]): [`ECE_BINS`] equal-width bins with scikit-learn's edges,
    /// bins weighted by their count. 0 when no row was counted.
    ///
    /// ```
    /// use toolnexus::assess::metrics::EceRows;
    /// // Bins [0.8, 0.867): 0.85, 0.85 (one true); [0.933, 1]: 0.95 (true).
    /// let t = EceRows::from_noul(&[0.85, 0.85, 0.95], &[true, false, true]);
    /// let want = 2.0 / 3.0 * (0.5f64 - 0.85).abs() + 1.0 / 3.0 * (1.0f64 - 0.95).abs();
    /// assert!((t.ece() - want).abs() < 1e-12);
    /// ```
    pub fn ece(&self) -> f64 {
        ece(&self.reliability())
    }

    /// ECE over [`ECE_BINS`] equal-count bins ([`adaptive_reliability`]) of
    /// the same rows.
    ///
    /// ```
    /// let t = toolnexus::assess::metrics::EceRows::from_noul(&[0.9, 0.9], &[true, false]);
    /// // Two rows, two bins of one: gaps 0.1 and 0.9; one equal-width bin: 0.4.
    /// assert!((t.adaptive_ece() - 0.5).abs() < 1e-12);
    /// assert!((t.ece() - 0.4).abs() < 1e-12);
    /// ```
    pub fn adaptive_ece(&self) -> f64 {
        ece(&adaptive_reliability(&self.confidence, &self.hit, ECE_BINS))
    }
}

/// Maximum calibration error over non-empty bins (0 when all are empty).
///
/// ```
/// use toolnexus::assess::metrics::{mce, reliability};
/// let bins = reliability(&[0.9, 0.9, 0.2], &[true, false, false], 15);
/// assert!((mce(&bins) - 0.4).abs() < 1e-12);
/// ```
pub fn mce(bins: &[Bin]) -> f64 {
    bins.iter()
        .filter(|b| b.count > 0)
        .map(|b| (b.observed - b.mean_confidence).abs())
        .fold(0.0, f64::max)
}

/// Share of `true`; 0 for an empty slice.
///
/// ```
/// assert_eq!(toolnexus::assess::metrics::accuracy(&[true, false, true, true]), 0.75);
/// ```
pub fn accuracy(hit: &[bool]) -> f64 {
    if hit.is_empty() {
        return 0.0;
    }
    hit.iter().filter(|&&h| h).count() as f64 / hit.len() as f64
}

/// Mean of a sequence of per-row losses (0 when empty).
fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let mut m = Mean::default();
    for v in values {
        m.push(v);
    }
    m.value()
}

/// A mean added up a value at a time, in order (0 when empty).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Mean {
    sum: f64,
    n: usize,
}

impl Mean {
    /// Adds one value.
    pub(crate) fn push(&mut self, v: f64) {
        self.sum += v;
        self.n += 1;
    }

    /// The mean so far.
    pub(crate) fn value(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum / self.n as f64
        }
    }
}

/// Binary log loss of P(true), as scikit-learn's `log_loss` computes it: the
/// two columns `1 − p` and `p` clipped to `[ε, 1 − ε]` (ε = `f64::EPSILON`) and
/// renormalised, so a confident miss costs about 36 nats, never infinity.
///
/// ```
/// use toolnexus::assess::metrics::log_loss_binary;
/// let loss = log_loss_binary(&[0.8, 0.4], &[true, false]);
/// assert!((loss - (-(0.8f64.ln()) - 0.6f64.ln()) / 2.0).abs() < 1e-12);
/// assert!(log_loss_binary(&[0.0], &[true]).is_finite());
/// ```
pub fn log_loss_binary(p_true: &[f64], y: &[bool]) -> f64 {
    mean(
        p_true
            .iter()
            .zip(y)
            .map(|(&p, &t)| log_loss_binary_term(p, t)),
    )
}

/// One row's term of [`log_loss_binary`].
pub(crate) fn log_loss_binary_term(p: f64, t: bool) -> f64 {
    let eps = f64::EPSILON;
    let q0 = (1.0 - p).clamp(eps, 1.0 - eps);
    let q1 = p.clamp(eps, 1.0 - eps);
    let q = if t { q1 } else { q0 };
    -(q / (q0 + q1)).ln()
}

/// Multi-class log loss: `probs[i]` is row i's distribution, `gold[i]` its class
/// (each probability clipped to `[ε, 1 − ε]` and the row renormalised, as
/// scikit-learn does).
///
/// ```
/// use toolnexus::assess::metrics::log_loss_multi;
/// let loss = log_loss_multi(&[vec![0.7, 0.2, 0.1]], &[0]);
/// assert!((loss + 0.7f64.ln()).abs() < 1e-12);
/// ```
pub fn log_loss_multi(probs: &[Vec<f64>], gold: &[usize]) -> f64 {
    mean(
        probs
            .iter()
            .zip(gold)
            .map(|(row, &g)| log_loss_multi_term(row, g)),
    )
}

/// One row's term of [`log_loss_multi`].
pub(crate) fn log_loss_multi_term(row: &[f64], g: usize) -> f64 {
    let eps = f64::EPSILON;
    let total: f64 = row.iter().map(|&p| p.clamp(eps, 1.0 - eps)).sum();
    let q = row.get(g).copied().unwrap_or(0.0).clamp(eps, 1.0 - eps);
    -(q / total).ln()
}

/// Binary Brier score of P(true): the mean of (p − y)².
///
/// ```
/// assert_eq!(toolnexus::assess::metrics::brier_binary(&[1.0, 0.5], &[true, false]), 0.125);
/// ```
pub fn brier_binary(p_true: &[f64], y: &[bool]) -> f64 {
    mean(p_true.iter().zip(y).map(|(&p, &t)| brier_binary_term(p, t)))
}

/// One row's term of [`brier_binary`].
pub(crate) fn brier_binary_term(p: f64, t: bool) -> f64 {
    let d = p - f64::from(u8::from(t));
    d * d
}

/// Multi-class Brier score: mean over rows of Σₖ (pₖ − [k = gold])².
///
/// ```
/// let b = toolnexus::assess::metrics::brier_multi(&[vec![0.5, 0.5, 0.0]], &[0]);
/// assert_eq!(b, 0.5);
/// ```
pub fn brier_multi(probs: &[Vec<f64>], gold: &[usize]) -> f64 {
    mean(
        probs
            .iter()
            .zip(gold)
            .map(|(row, &g)| brier_multi_term(row, g)),
    )
}

/// One row's term of [`brier_multi`].
pub(crate) fn brier_multi_term(row: &[f64], g: usize) -> f64 {
    row.iter()
        .enumerate()
        .map(|(k, &p)| {
            let d = p - if k == g { 1.0 } else { 0.0 };
            d * d
        })
        .sum()
}

/// Area under the ROC curve (the Mann–Whitney statistic, ties get average
/// ranks); `None` without both classes.
///
/// ```
/// use toolnexus::assess::metrics::auroc;
/// assert_eq!(auroc(&[0.2, 0.2], &[true, false]), Some(0.5));
/// assert_eq!(auroc(&[0.2, 0.9], &[true, true]), None);
/// ```
pub fn auroc(score: &[f64], y: &[bool]) -> Option<f64> {
    let n = score.len().min(y.len());
    let positives = y[..n].iter().filter(|&&t| t).count();
    let negatives = n - positives;
    if positives == 0 || negatives == 0 {
        return None;
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| score[a].total_cmp(&score[b]));
    auroc_sorted(
        order.iter().map(|&i| (score[i], y[i])),
        positives,
        negatives,
    )
}

/// [`auroc`] of rows given in ascending score, `positives` of them true and
/// `negatives` false (`None` when either is 0).
pub(crate) fn auroc_sorted(
    sorted: impl IntoIterator<Item = (f64, bool)>,
    positives: usize,
    negatives: usize,
) -> Option<f64> {
    if positives == 0 || negatives == 0 {
        return None;
    }
    let mut rows = sorted.into_iter().peekable();
    let mut rank_sum = 0.0;
    let mut i = 0usize;
    while let Some((s, y)) = rows.next() {
        let (mut j, mut tied_positives) = (i, usize::from(y));
        while let Some((_, y)) = rows.next_if(|(t, _)| *t == s) {
            j += 1;
            tied_positives += usize::from(y);
        }
        // Ranks i+1 ..= j+1 share their average.
        let rank = (i + j + 2) as f64 / 2.0;
        rank_sum += rank * tied_positives as f64;
        i = j + 1;
    }
    let p = positives as f64;
    Some((rank_sum - p * (p + 1.0) / 2.0) / (p * negatives as f64))
}

/// Precision among rows with P(true) ≥ `cut`, and how many rows that is
/// (`None` when none).
///
/// ```
/// use toolnexus::assess::metrics::precision_at;
/// assert_eq!(precision_at(&[0.9, 0.8, 0.3], &[true, false, true], 0.5), (Some(0.5), 2));
/// assert_eq!(precision_at(&[0.3], &[true], 0.5), (None, 0));
/// ```
pub fn precision_at(p_true: &[f64], y: &[bool], cut: f64) -> (Option<f64>, usize) {
    let (mut kept, mut right) = (0usize, 0usize);
    for (&p, &t) in p_true.iter().zip(y) {
        if p >= cut {
            kept += 1;
            right += usize::from(t);
        }
    }
    if kept == 0 {
        (None, 0)
    } else {
        (Some(right as f64 / kept as f64), kept)
    }
}

/// A confusion matrix: `counts[gold][predicted]`.
///
/// ```
/// use toolnexus::assess::metrics::Confusion;
/// let labels = vec!["a".to_string(), "b".to_string()];
/// let m = Confusion::new(labels, &[0, 0, 1], &[0, 1, 1]);
/// assert_eq!(m.counts, [[1, 1], [0, 1]]);
/// assert!((m.macro_f1() - 2.0 / 3.0).abs() < 1e-12);
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Confusion {
    /// Class names, in index order.
    pub labels: Vec<String>,
    /// `counts[gold][predicted]`.
    pub counts: Vec<Vec<usize>>,
}

/// Precision, recall and F1 of one class.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClassStats {
    /// The class.
    pub label: String,
    /// Precision (0 when never predicted).
    pub precision: f64,
    /// Recall (0 when never gold).
    pub recall: f64,
    /// F1 (0 when precision + recall is 0).
    pub f1: f64,
    /// Gold rows of this class.
    pub support: usize,
}

impl Confusion {
    /// Counts gold/predicted index pairs over `labels` (pairs naming an index
    /// beyond the labels are not counted).
    ///
    /// ```
    /// use toolnexus::assess::metrics::Confusion;
    /// let m = Confusion::new(vec!["x".into(), "y".into()], &[1], &[0]);
    /// assert_eq!(m.counts[1][0], 1);
    /// ```
    pub fn new(labels: Vec<String>, gold: &[usize], predicted: &[usize]) -> Confusion {
        let k = labels.len();
        let mut counts = vec![vec![0usize; k]; k];
        for (&g, &p) in gold.iter().zip(predicted) {
            if g < k && p < k {
                counts[g][p] += 1;
            }
        }
        Confusion { labels, counts }
    }

    /// Per-class statistics, in label order.
    ///
    /// ```
    /// use toolnexus::assess::metrics::Confusion;
    /// let m = Confusion::new(vec!["x".into(), "y".into()], &[0, 1, 1], &[0, 0, 1]);
    /// let s = m.per_class();
    /// assert_eq!((s[0].precision, s[0].recall, s[0].support), (0.5, 1.0, 1));
    /// ```
    pub fn per_class(&self) -> Vec<ClassStats> {
        self.labels
            .iter()
            .enumerate()
            .map(|(c, label)| {
                let (tp, gold, predicted) = self.tallies(c);
                let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
                ClassStats {
                    label: label.clone(),
                    precision: ratio(tp, predicted),
                    recall: ratio(tp, gold),
                    f1: ratio(2 * tp, gold + predicted),
                    support: gold,
                }
            })
            .collect()
    }

    /// True positives, gold count and predicted count of class `c`.
    fn tallies(&self, c: usize) -> (usize, usize, usize) {
        let gold = self.counts[c].iter().sum();
        let predicted = self.counts.iter().map(|row| row[c]).sum();
        (self.counts[c][c], gold, predicted)
    }

    /// Macro F1 over the classes present in gold or predicted (scikit-learn's
    /// `f1_score(average="macro")`); 0 when nothing was counted.
    ///
    /// ```
    /// use toolnexus::assess::metrics::Confusion;
    /// // "z" never occurs, so it does not drag the mean down.
    /// let m = Confusion::new(vec!["x".into(), "y".into(), "z".into()], &[0, 1], &[0, 1]);
    /// assert_eq!(m.macro_f1(), 1.0);
    /// ```
    pub fn macro_f1(&self) -> f64 {
        let present: Vec<f64> = (0..self.labels.len())
            .filter_map(|c| {
                let (tp, gold, predicted) = self.tallies(c);
                (gold + predicted > 0).then(|| 2.0 * tp as f64 / (gold + predicted) as f64)
            })
            .collect();
        mean(present.into_iter())
    }
}

/// Quadratic-weighted Cohen's kappa over levels `0..k` (scikit-learn's
/// `cohen_kappa_score(weights="quadratic", labels=range(k))`); `None` when
/// undefined (no rows, or chance agreement is total).
///
/// ```
/// use toolnexus::assess::metrics::quadratic_kappa;
/// assert_eq!(quadratic_kappa(&[0, 1, 2], &[0, 1, 2], 3), Some(1.0));
/// assert!(quadratic_kappa(&[0, 1, 2], &[2, 1, 0], 3).unwrap() < 0.0);
/// ```
pub fn quadratic_kappa(gold: &[usize], predicted: &[usize], k: usize) -> Option<f64> {
    let mut m = vec![vec![0.0f64; k]; k];
    let mut n = 0.0;
    for (&g, &p) in gold.iter().zip(predicted) {
        if g < k && p < k {
            m[g][p] += 1.0;
            n += 1.0;
        }
    }
    kappa_of(&m, n, k)
}

/// [`quadratic_kappa`] of its gold × predicted counts `m` (over `n` rows).
pub(crate) fn kappa_of(m: &[Vec<f64>], n: f64, k: usize) -> Option<f64> {
    if n == 0.0 {
        return None;
    }
    let rows: Vec<f64> = m.iter().map(|r| r.iter().sum()).collect();
    let cols: Vec<f64> = (0..k).map(|j| m.iter().map(|r| r[j]).sum()).collect();
    let (mut observed, mut expected) = (0.0, 0.0);
    for i in 0..k {
        for j in 0..k {
            let w = ((i as f64) - (j as f64)).powi(2);
            observed += w * m[i][j];
            expected += w * rows[i] * cols[j] / n;
        }
    }
    (expected != 0.0).then(|| 1.0 - observed / expected)
}

/// Mean absolute error (0 when empty).
///
/// ```
/// assert_eq!(toolnexus::assess::metrics::mae(&[1.0, 2.0], &[2.0, 2.0]), 0.5);
/// ```
pub fn mae(gold: &[f64], predicted: &[f64]) -> f64 {
    mean(gold.iter().zip(predicted).map(|(g, p)| (g - p).abs()))
}

/// The `q` quantile with linear interpolation (numpy's default); `None` when empty.
///
/// ```
/// use toolnexus::assess::metrics::quantile;
/// assert_eq!(quantile(&[4.0, 1.0, 3.0, 2.0], 0.5), Some(2.5));
/// assert_eq!(quantile(&[], 0.5), None);
/// ```
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let (lo, hi, t) = quantile_at(sorted.len(), q);
    Some(lerp(sorted[lo], sorted[hi], t))
}

/// Where the `q` quantile of `n > 0` sorted values lies: between positions
/// `lo` and `hi`, at `t` of the way.
pub(crate) fn quantile_at(n: usize, q: f64) -> (usize, usize, f64) {
    let h = (n - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    (lo, (lo + 1).min(n - 1), h - lo as f64)
}

/// `t` of the way from `a` to `b`, as numpy interpolates a quantile.
pub(crate) fn lerp(a: f64, b: f64, t: f64) -> f64 {
    // numpy's lerp: from the nearer end, so t = 1 gives exactly b.
    if t >= 0.5 {
        b - (b - a) * (1.0 - t)
    } else {
        a + (b - a) * t
    }
}

/// One point of a risk-coverage curve: keep rows with confidence ≥ `cut`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CoveragePoint {
    /// The confidence cut (an observed confidence).
    pub cut: f64,
    /// Share of rows kept.
    pub coverage: f64,
    /// Accuracy over the kept rows.
    pub accuracy: f64,
    /// Rows kept.
    pub kept: usize,
}

/// Coverage and selective accuracy at every distinct observed confidence,
/// from the highest cut (fewest rows) down to the lowest (all rows).
///
/// ```
/// use toolnexus::assess::metrics::risk_coverage;
/// let curve = risk_coverage(&[0.9, 0.6, 0.9], &[true, false, true]);
/// assert_eq!(curve.len(), 2);
/// assert_eq!((curve[0].cut, curve[0].kept, curve[0].accuracy), (0.9, 2, 1.0));
/// assert_eq!(curve[1].coverage, 1.0);
/// ```
pub fn risk_coverage(confidence: &[f64], hit: &[bool]) -> Vec<CoveragePoint> {
    let n = confidence.len().min(hit.len());
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| confidence[b].total_cmp(&confidence[a]));
    let mut out = Vec::new();
    risk_coverage_sorted(order.iter().map(|&i| (confidence[i], hit[i])), n, |p| {
        out.push(p)
    });
    out
}

/// [`risk_coverage`] of `n` rows given in descending confidence: each point
/// to `each`, so that a caller can thin the curve as it comes.
pub(crate) fn risk_coverage_sorted(
    sorted: impl IntoIterator<Item = (f64, bool)>,
    n: usize,
    mut each: impl FnMut(CoveragePoint),
) {
    let mut rows = sorted.into_iter().peekable();
    let (mut kept, mut right) = (0usize, 0usize);
    while let Some((c, h)) = rows.next() {
        kept += 1;
        right += usize::from(h);
        if rows.peek().is_none_or(|(next, _)| *next != c) {
            each(CoveragePoint {
                cut: c,
                coverage: kept as f64 / n as f64,
                accuracy: right as f64 / kept as f64,
                kept,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ece_by_hand() {
        // Top labels: 0.5 right (bin 7), 0.55 wrong (bin 8), 0.9 right (bin 13),
        // 0.95 wrong and 0.98 right (bin 14); the empty distribution is not counted.
        let probs = [
            vec![0.5, 0.3, 0.2],
            vec![0.45, 0.55],
            vec![0.1, 0.9],
            vec![0.05, 0.95],
            vec![0.02, 0.98],
            vec![0.0, 0.0, 0.0],
        ];
        let t = EceRows::from_distributions(&probs, &[0, 0, 1, 0, 1, 0]);
        assert_eq!(t.len(), 5);
        let counts: Vec<(usize, usize)> = t
            .reliability()
            .iter()
            .enumerate()
            .filter(|(_, b)| b.count > 0)
            .map(|(i, b)| (i, b.count))
            .collect();
        assert_eq!(counts, [(7, 1), (8, 1), (13, 1), (14, 2)]);
        // (|1 − 0.5| + |0 − 0.55| + |1 − 0.9| + 2 · |0.5 − 0.965|) / 5
        assert!((t.ece() - 0.416).abs() < 1e-12, "{}", t.ece());

        // Noul: P(yes) against the outcome, each alone in its bin: 0.1 true,
        // 0.2 false, 0.7 true, 0.75 false, 0.85 true; NaN is not counted.
        let n = EceRows::from_noul(
            &[0.1, 0.2, 0.7, 0.75, 0.85, f64::NAN],
            &[true, false, true, false, true, true],
        );
        assert_eq!(n.len(), 5);
        // (0.9 + 0.2 + 0.3 + 0.75 + 0.15) / 5
        assert!((n.ece() - 0.46).abs() < 1e-12, "{}", n.ece());
        // A lean towards "yes": 0.2 and 0.8 both came true (gaps 0.8 and 0.2).
        // Folded to top labels it would read as confidence 0.8 right half the
        // time (0.3).
        let lean = EceRows::from_noul(&[0.2, 0.8], &[true, true]);
        assert!((lean.ece() - 0.5).abs() < 1e-12, "{}", lean.ece());
        assert_eq!(EceRows::default().ece(), 0.0);
    }
}
