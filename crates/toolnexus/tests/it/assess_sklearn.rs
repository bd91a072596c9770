//! `toolnexus::assess::metrics` and `::calibrate` against scikit-learn.
//!
//! `tests/fixtures/assess/sklearn.json` holds seeded datasets (three binary sets
//! of 40, 200 and 1000 rows with ties, values on the bin edges and exact 0/1
//! probabilities; one 4-class set of 300 rows) together with the figures
//! scikit-learn 1.5.2 computed for them: Brier score, log loss, ROC AUC, the
//! 15-bin uniform calibration curve with its counts and ECE, isotonic regression
//! and Platt's sigmoid parameters. `scripts/assess-fixtures.py` wrote it once
//! and says how to regenerate it; the file is checked in, so these tests and CI
//! need no Python.
//!
//! Closed-form quantities must agree to 1e-9, fitted ones (Platt's `a` and `b`,
//! isotonic values) to 1e-4, since scikit-learn's optimiser stops at its own
//! tolerance.

use std::sync::OnceLock;

use serde::Deserialize;
use toolnexus::assess::calibrate::{Isotonic, Platt};
use toolnexus::assess::metrics::{
    Bin, auroc, brier_binary, brier_multi, ece, log_loss_binary, log_loss_multi, reliability,
};

const FIXTURE: &str = include_str!("../fixtures/assess/sklearn.json");

/// Closed-form quantities.
const EXACT: f64 = 1e-9;
/// Quantities scikit-learn reaches by iterative fitting.
const FITTED: f64 = 1e-4;

/// The decision values our Platt feeds its sigmoid, as the fixture states them.
const PLATT_INPUT: &str = "logit(clip(p, 1e-6, 1 - 1e-6))";

#[derive(Deserialize)]
struct Fixture {
    note: String,
    sklearn: String,
    n_bins: usize,
    binary: Vec<BinarySet>,
    multiclass: Vec<MultiSet>,
}

#[derive(Deserialize)]
struct BinarySet {
    name: String,
    p: Vec<f64>,
    y: Vec<u8>,
    brier: f64,
    log_loss: f64,
    roc_auc: f64,
    reliability: Curve,
    isotonic: IsotonicFigures,
    platt: PlattFigures,
}

#[derive(Deserialize)]
struct MultiSet {
    name: String,
    probs: Vec<Vec<f64>>,
    gold: Vec<usize>,
    log_loss: f64,
    brier: f64,
    top_confidence: Vec<f64>,
    top_hit: Vec<u8>,
    top_reliability: Curve,
}

/// `calibration_curve(strategy="uniform")` and what follows from its bins.
#[derive(Deserialize)]
struct Curve {
    bin_edges: Vec<f64>,
    bin_counts: Vec<usize>,
    prob_true: Vec<f64>,
    prob_pred: Vec<f64>,
    ece: f64,
}

#[derive(Deserialize)]
struct IsotonicFigures {
    fitted: Vec<f64>,
    grid: Vec<f64>,
    grid_predictions: Vec<f64>,
}

#[derive(Deserialize)]
struct PlattFigures {
    input: String,
    a: f64,
    b: f64,
}

fn fixture() -> &'static Fixture {
    static PARSED: OnceLock<Fixture> = OnceLock::new();
    PARSED.get_or_init(|| serde_json::from_str(FIXTURE).expect("sklearn.json parses"))
}

fn labels(y: &[u8]) -> Vec<bool> {
    y.iter().map(|&v| v == 1).collect()
}

#[track_caller]
fn close(what: &str, ours: f64, sklearn: f64, tolerance: f64) {
    assert!(
        (ours - sklearn).abs() <= tolerance,
        "{what}: ours {ours:.17e}, scikit-learn {sklearn:.17e} (difference {:.3e}, tolerance {tolerance:e})",
        (ours - sklearn).abs()
    );
}

/// Our reliability table against scikit-learn's curve: every edge and count, and
/// observed / mean confidence for each non-empty bin in order; then the ECE.
#[track_caller]
fn check_curve(what: &str, confidence: &[f64], hit: &[bool], curve: &Curve, n_bins: usize) {
    let bins: Vec<Bin> = reliability(confidence, hit, n_bins);
    assert_eq!(bins.len(), n_bins, "{what}: bin count");
    assert_eq!(curve.bin_edges.len(), n_bins + 1, "{what}: fixture edges");
    for (j, b) in bins.iter().enumerate() {
        assert_eq!(b.lo, curve.bin_edges[j], "{what}: bin {j} lower edge");
        assert_eq!(b.hi, curve.bin_edges[j + 1], "{what}: bin {j} upper edge");
    }
    let counts: Vec<usize> = bins.iter().map(|b| b.count).collect();
    assert_eq!(counts, curve.bin_counts, "{what}: per-bin counts");
    let filled: Vec<&Bin> = bins.iter().filter(|b| b.count > 0).collect();
    assert_eq!(
        filled.len(),
        curve.prob_true.len(),
        "{what}: non-empty bins"
    );
    assert_eq!(
        filled.len(),
        curve.prob_pred.len(),
        "{what}: non-empty bins"
    );
    for (i, b) in filled.iter().enumerate() {
        let bin = format!(
            "{what}: prob_true of non-empty bin {i} [{}, {}]",
            b.lo, b.hi
        );
        close(&bin, b.observed, curve.prob_true[i], EXACT);
        let bin = format!(
            "{what}: prob_pred of non-empty bin {i} [{}, {}]",
            b.lo, b.hi
        );
        close(&bin, b.mean_confidence, curve.prob_pred[i], EXACT);
    }
    close(&format!("{what}: ECE"), ece(&bins), curve.ece, EXACT);
}

#[test]
fn fixture_covers_the_awkward_cases() {
    let f = fixture();
    assert!(f.note.contains("scripts/assess-fixtures.py"), "{}", f.note);
    assert_eq!(f.sklearn, "1.5.2");
    assert_eq!(f.n_bins, 15);
    let sizes: Vec<usize> = f.binary.iter().map(|s| s.p.len()).collect();
    assert_eq!(sizes, [40, 200, 1000]);
    for s in &f.binary {
        assert_eq!(s.p.len(), s.y.len(), "{}: rows", s.name);
        assert!(s.y.iter().all(|&v| v <= 1), "{}: labels are 0/1", s.name);
        let mut sorted = s.p.clone();
        sorted.sort_by(f64::total_cmp);
        assert!(
            sorted.windows(2).any(|w| w[0] == w[1]),
            "{}: has ties",
            s.name
        );
        assert!(
            s.p.contains(&0.0) && s.p.contains(&1.0),
            "{}: has 0 and 1",
            s.name
        );
        let confident_miss =
            s.p.iter()
                .zip(&s.y)
                .any(|(&p, &y)| (p == 0.0 && y == 1) || (p == 1.0 && y == 0));
        assert!(confident_miss, "{}: has a confident miss", s.name);
        let inner = &s.reliability.bin_edges[1..f.n_bins];
        assert!(
            s.p.iter().any(|p| inner.contains(p)),
            "{}: has a value on an inner bin edge",
            s.name
        );
        assert_eq!(s.platt.input, PLATT_INPUT, "{}: Platt input", s.name);
    }
    let m = &f.multiclass[0];
    assert_eq!(
        (m.probs.len(), m.probs[0].len()),
        (300, 4),
        "{}: shape",
        m.name
    );
    assert!(
        m.probs.iter().zip(&m.gold).any(|(row, &g)| row[g] == 0.0),
        "{}: a row puts 0 on its gold class",
        m.name
    );
}

#[test]
fn brier_matches_brier_score_loss() {
    for s in &fixture().binary {
        let ours = brier_binary(&s.p, &labels(&s.y));
        close(&format!("{}: brier_binary", s.name), ours, s.brier, EXACT);
    }
    for m in &fixture().multiclass {
        let ours = brier_multi(&m.probs, &m.gold);
        close(&format!("{}: brier_multi", m.name), ours, m.brier, EXACT);
    }
}

#[test]
fn log_loss_matches_sklearn_clipping() {
    for s in &fixture().binary {
        let ours = log_loss_binary(&s.p, &labels(&s.y));
        close(
            &format!("{}: log_loss_binary", s.name),
            ours,
            s.log_loss,
            EXACT,
        );
    }
    for m in &fixture().multiclass {
        let ours = log_loss_multi(&m.probs, &m.gold);
        close(
            &format!("{}: log_loss_multi", m.name),
            ours,
            m.log_loss,
            EXACT,
        );
    }
}

#[test]
fn auroc_matches_roc_auc_score() {
    for s in &fixture().binary {
        let ours = auroc(&s.p, &labels(&s.y)).expect("both classes present");
        close(&format!("{}: auroc", s.name), ours, s.roc_auc, EXACT);
    }
}

#[test]
fn reliability_and_ece_match_calibration_curve() {
    let f = fixture();
    for s in &f.binary {
        let what = format!("{}: reliability", s.name);
        check_curve(&what, &s.p, &labels(&s.y), &s.reliability, f.n_bins);
    }
    for m in &f.multiclass {
        let what = format!("{}: top-label reliability", m.name);
        let hit = labels(&m.top_hit);
        check_curve(&what, &m.top_confidence, &hit, &m.top_reliability, f.n_bins);
    }
}

#[test]
fn platt_matches_sigmoid_calibration() {
    for s in &fixture().binary {
        let fit = Platt::fit(&s.p, &labels(&s.y));
        close(&format!("{}: Platt a", s.name), fit.a, s.platt.a, FITTED);
        close(&format!("{}: Platt b", s.name), fit.b, s.platt.b, FITTED);
    }
}

#[test]
fn isotonic_matches_isotonic_regression() {
    for s in &fixture().binary {
        let fit = Isotonic::fit(&s.p, &labels(&s.y));
        let iso = &s.isotonic;
        assert_eq!(iso.fitted.len(), s.p.len(), "{}: fixture rows", s.name);
        for (i, (&p, &want)) in s.p.iter().zip(&iso.fitted).enumerate() {
            let what = format!("{}: isotonic fitted value at row {i} (p = {p})", s.name);
            close(&what, fit.apply(p), want, FITTED);
        }
        assert_eq!(iso.grid.len(), 21, "{}: grid points", s.name);
        for (&x, &want) in iso.grid.iter().zip(&iso.grid_predictions) {
            let what = format!("{}: isotonic prediction at grid point {x}", s.name);
            close(&what, fit.apply(x), want, FITTED);
        }
    }
}

#[test]
fn isotonic_merges_inputs_within_float_resolution_as_sklearn_does() {
    // IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1) in
    // scikit-learn 1.5.2 on these rows: 0.9999999999999999 and 1.0 are one
    // input (numpy's float64 resolution is 1e-15), predicting 2/3 at 0.5, 2/3
    // at 1.0 and 1/3 at 0.35.
    let m = Isotonic::fit(
        &[0.2, 0.5, 0.9999999999999999, 1.0],
        &[false, true, false, true],
    );
    assert_eq!(m.x, [0.2, 0.5, 0.9999999999999999]);
    for (p, want) in [(0.5, 2.0 / 3.0), (1.0, 2.0 / 3.0), (0.35, 1.0 / 3.0)] {
        close(
            &format!("isotonic near-ties at {p}"),
            m.apply(p),
            want,
            1e-12,
        );
    }
}
