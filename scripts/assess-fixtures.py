#!/usr/bin/env python3
"""Writes crates/toolnexus/tests/fixtures/assess/sklearn.json, the scikit-learn
reference figures that `toolnexus::assess::metrics` and
`toolnexus::assess::calibrate` are held to (tests/it/assess_sklearn.rs).

The fixture was generated once by this script and is checked in, so the tests
and CI need no Python. To regenerate it (the datasets come from a seeded NumPy
generator, so the inputs are the same on every run):

    python3 -m venv /tmp/skl && /tmp/skl/bin/pip install scikit-learn==1.5.2 numpy==2.4.6 && /tmp/skl/bin/python scripts/assess-fixtures.py

Then: cargo test -p toolnexus --test it assess_sklearn

Each binary set records P(true) and outcomes with:
  - brier_score_loss, log_loss (eps handling of 1.5.2: the columns 1 - p and p
    clipped to [eps, 1 - eps] with eps = float64 machine epsilon, then
    renormalised), roc_auc_score;
  - calibration_curve(y, p, n_bins=15, strategy="uniform"), plus the edges, the
    per-bin counts as calibration_curve bins rows (np.searchsorted on
    bins[1:-1]) and the ECE over those bins (sum of count/n * |acc - conf|);
  - IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1): fitted values at
    the inputs and predictions at 21 points of np.linspace(0, 1, 21);
  - sklearn.calibration._sigmoid_calibration(f, y), fed the decision values that
    toolnexus's Platt feeds its sigmoid: f = logit(clip(p, 1e-6, 1 - 1e-6)).
The multi-class set records log_loss (labels 0..k), the multi-class Brier score
(computed with NumPy, since brier_score_loss in 1.5.2 is binary only) and the
top-label reliability curve and ECE.
"""

import json
from pathlib import Path

import numpy as np
import sklearn
from sklearn.calibration import _sigmoid_calibration, calibration_curve
from sklearn.isotonic import IsotonicRegression
from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "crates" / "toolnexus" / "tests" / "fixtures" / "assess" / "sklearn.json"
SEED = 20260117
N_BINS = 15
GRID = 21
LOGIT_CLIP = 1e-6
PLATT_INPUT = "logit(clip(p, 1e-6, 1 - 1e-6))"


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def logit(p):
    p = np.clip(p, LOGIT_CLIP, 1.0 - LOGIT_CLIP)
    return np.log(p / (1.0 - p))


def floats(a):
    return [float(v) for v in a]


def binary_set(rng, n):
    """An over-confident model: P(true) from a beta distribution, outcomes drawn
    from a softened version of it. A quarter of the rows are rounded to two
    places (ties), a few sit on the inner bin edges, and a few are exactly 0 or
    1 with either outcome (confident misses for the log loss)."""
    p = rng.beta(0.7, 0.7, n)
    truth = sigmoid(logit(p) / 2.5)
    y = (rng.random(n) < truth).astype(np.int64)
    rows = rng.permutation(n)
    k = max(n // 4, 4)
    p[rows[:k]] = np.round(p[rows[:k]], 2)
    edges = np.linspace(0.0, 1.0, N_BINS + 1)
    m = max(n // 40, 2)
    p[rows[k : k + m]] = rng.choice(edges[1:-1], m)
    extremes = rows[k + m : k + m + 4]
    p[extremes] = [0.0, 1.0, 0.0, 1.0]
    y[extremes] = [0, 1, 1, 0]
    return p, y


def reliability(conf, hit):
    bins = np.linspace(0.0, 1.0, N_BINS + 1)
    prob_true, prob_pred = calibration_curve(hit, conf, n_bins=N_BINS, strategy="uniform")
    binids = np.searchsorted(bins[1:-1], conf)
    counts = np.bincount(binids, minlength=N_BINS)
    assert counts.shape == (N_BINS,) and counts.sum() == len(conf)
    nonzero = counts[counts != 0]
    ece = float(np.sum(nonzero / len(conf) * np.abs(prob_true - prob_pred)))
    return {
        "bin_edges": floats(bins),
        "bin_counts": [int(c) for c in counts],
        "prob_true": floats(prob_true),
        "prob_pred": floats(prob_pred),
        "ece": ece,
    }


def describe_binary(name, p, y):
    iso = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(p, y)
    grid = np.linspace(0.0, 1.0, GRID)
    a, b = _sigmoid_calibration(logit(p), y)
    return {
        "name": name,
        "p": floats(p),
        "y": [int(v) for v in y],
        "brier": float(brier_score_loss(y, p)),
        "log_loss": float(log_loss(y, p)),
        "roc_auc": float(roc_auc_score(y, p)),
        "reliability": reliability(p, y),
        "isotonic": {
            "fitted": floats(iso.predict(p)),
            "grid": floats(grid),
            "grid_predictions": floats(iso.predict(grid)),
        },
        "platt": {"input": PLATT_INPUT, "a": float(a), "b": float(b)},
    }


def multiclass_set(rng, n, k):
    """Softmax of sharpened logits, gold drawn from the unsharpened ones; a few
    rows carry exact zeros (one of them on the gold class) and one is one-hot."""
    logits = rng.normal(0.0, 1.5, (n, k))

    def softmax(z):
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    probs = softmax(2.0 * logits)
    truth = softmax(logits)
    gold = np.array([rng.choice(k, p=row) for row in truth], dtype=np.int64)
    probs[0] = np.eye(k)[gold[0]]
    probs[1] = np.eye(k)[(gold[1] + 1) % k]
    probs[2] = 0.0
    probs[2, gold[2]] = 0.5
    probs[2, (gold[2] + 1) % k] = 0.5
    probs[3] = 0.0
    probs[3, (gold[3] + 1) % k] = 0.25
    probs[3, (gold[3] + 2) % k] = 0.75
    return probs, gold


def describe_multiclass(name, probs, gold):
    k = probs.shape[1]
    onehot = np.eye(k)[gold]
    top = probs.argmax(axis=1)
    conf = probs.max(axis=1)
    hit = (top == gold).astype(np.int64)
    return {
        "name": name,
        "probs": [floats(row) for row in probs],
        "gold": [int(g) for g in gold],
        "log_loss": float(log_loss(gold, probs, labels=list(range(k)))),
        "brier": float(np.mean(np.sum((probs - onehot) ** 2, axis=1))),
        "top_confidence": floats(conf),
        "top_hit": [int(h) for h in hit],
        "top_reliability": reliability(conf, hit),
    }


def main():
    rng = np.random.default_rng(SEED)
    binary = [describe_binary(f"binary_{n}", *binary_set(rng, n)) for n in (40, 200, 1000)]
    multiclass = [describe_multiclass("multiclass_4x300", *multiclass_set(rng, 300, 4))]
    fixture = {
        "note": (
            "Generated by scripts/assess-fixtures.py with scikit-learn "
            f"{sklearn.__version__} and numpy {np.__version__} (seed {SEED}); "
            "reference figures for toolnexus::assess::metrics and ::calibrate."
        ),
        "sklearn": sklearn.__version__,
        "numpy": np.__version__,
        "n_bins": N_BINS,
        "binary": binary,
        "multiclass": multiclass,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(fixture, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
