//! Calibration and the threshold honesty guard against synthetic data whose
//! true probabilities are known (`toolnexus::assess::synthetic`).

use toolnexus::assess::synthetic::{SyntheticOptions, synthetic_run};
use toolnexus::assess::*;

#[test]
fn calibrate_brings_an_over_confident_backend_to_within_two_points_held_out() {
    let run = synthetic_run(&SyntheticOptions {
        rows: 20_000,
        overconfidence: 2.5,
        seed: 7,
    });
    let report = calibrate_run(&run, &CalibrateOptions::default()).unwrap();
    for key in ["claim", "topic", "quality"] {
        let q = report.questions.iter().find(|q| q.key == key).unwrap();
        let after = q.ece_after.unwrap();
        assert!(q.ece_before >= 0.10, "{key}: ECE before {}", q.ece_before);
        assert!(
            after <= 0.02,
            "{key}: held-out ECE after {after}\n{}",
            report.table()
        );
        assert!(q.log_loss_after.unwrap() < q.log_loss_before, "{key}");
        assert!(report.file.questions.contains_key(key), "{key}");
    }
    let t = report
        .questions
        .iter()
        .find(|q| q.key == "topic")
        .unwrap()
        .temperature
        .unwrap();
    assert!(
        (t - 2.5).abs() < 0.15,
        "the temperature undoes the sharpening: {t}"
    );
}

#[test]
fn a_calibrated_backend_is_left_about_where_it_was() {
    let run = synthetic_run(&SyntheticOptions {
        rows: 10_000,
        overconfidence: 1.0,
        seed: 3,
    });
    let report = calibrate_run(&run, &CalibrateOptions::default()).unwrap();
    for q in &report.questions {
        assert!(q.ece_after.unwrap() <= 0.02, "{}: {:?}", q.key, q.ece_after);
    }
}

#[test]
fn the_bootstrap_range_covers_the_true_accuracy_in_nine_seeds_of_ten() {
    const SEEDS: u64 = 40;
    // The truth at a cut: accuracy over many fresh rows from the same source.
    let fresh = synthetic_run(&SyntheticOptions {
        rows: 200_000,
        overconfidence: 1.5,
        seed: 999,
    });
    let fresh = summarize(&fresh, &SummaryOptions::default());
    let truth_at = |key: &str, cut: f64| {
        let curve = &fresh.question(key).unwrap().risk_coverage;
        // Points run from the highest cut down; keep confidence > cut.
        let p = curve.iter().rev().find(|p| p.cut > cut).unwrap();
        p.accuracy
    };
    for key in ["claim", "topic"] {
        let mut covered = 0;
        for seed in 0..SEEDS {
            let run = synthetic_run(&SyntheticOptions {
                rows: 1_000,
                overconfidence: 1.5,
                seed,
            });
            let mut o = ThresholdOptions::new(Target::Accuracy(0.85));
            o.seed = seed;
            let r = choose_thresholds(&run, &o).unwrap();
            let pick = &r.questions[key];
            let (Some(cut), Some(h)) = (pick.cut, pick.honest.as_ref()) else {
                panic!("{key}, seed {seed}: no pick: {pick:?}");
            };
            let truth = truth_at(key, cut);
            if h.accuracy_low <= truth && truth <= h.accuracy_high {
                covered += 1;
            }
        }
        assert!(
            covered * 10 >= SEEDS * 9,
            "{key}: {covered} of {SEEDS} seeds covered the truth"
        );
    }
}
