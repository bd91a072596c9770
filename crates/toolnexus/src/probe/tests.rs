use super::measure::*;
use super::*;

#[test]
fn derangements_move_every_option() {
    let mut rng = Rng::new(7);
    for n in 2..12 {
        let p = derangement(n, &mut rng);
        assert!(p.iter().enumerate().all(|(i, &j)| i != j), "{p:?}");
        let mut s = p.clone();
        s.sort_unstable();
        assert_eq!(s, (0..n).collect::<Vec<_>>());
    }
}

#[test]
fn shift_is_total_variation_over_the_union_of_ids() {
    let a = Dist::Probs([("x".into(), 0.8), ("y".into(), 0.2)].into());
    let b = Dist::Probs([("x".into(), 0.2), ("z".into(), 0.8)].into());
    assert!((shift(&a, &b) - 0.8).abs() < 1e-12);
    assert!((shift(&Dist::P(0.3), &Dist::P(0.5)) - 0.2).abs() < 1e-12);
}

#[test]
fn bootstrap_brackets_the_mean_and_repeats_with_its_seed() {
    let v: Vec<f64> = (0..30).map(|i| (i % 7) as f64 / 10.0).collect();
    let (m, (lo, hi)) = bootstrap(&v, 3).unwrap();
    assert!(lo <= m && m <= hi && lo < hi);
    assert_eq!(bootstrap(&v, 3), bootstrap(&v, 3));
    assert_eq!(bootstrap(&[], 3), None);
}

#[test]
fn verdict_cuts() {
    assert_eq!(shift_verdict(0.05, TOLERANCE), Verdict::Ok);
    assert_eq!(shift_verdict(0.2, TOLERANCE), Verdict::Sensitive);
    assert_eq!(shift_verdict(0.3, TOLERANCE), Verdict::Broken);
    assert_eq!(shift_verdict(0.35, 0.4), Verdict::Ok);
}
