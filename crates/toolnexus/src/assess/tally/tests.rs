use serde_json::json;
use sha2::{Digest as _, Sha256};

use super::*;
use crate::assess::Outcome;
use crate::assess::synthetic::{SyntheticOptions, synthetic_run};
use crate::price::{Cost, CostSource};

/// A synthetic run with what a real one has besides answers: latencies
/// (with ties), costs, meta and state lengths for slices, failed rows, rows
/// without one label, decisions without one answer, a second model, and
/// tied probabilities.
pub(crate) fn varied_run(rows: usize) -> Run {
    let mut run = synthetic_run(&SyntheticOptions {
        rows,
        overconfidence: 2.0,
        seed: 11,
    });
    for (i, r) in run.rows.iter_mut().enumerate() {
        r.latency_ms = (i % 5 != 0).then(|| ((i * 37) % 101) as f64 / 4.0);
        r.state_len = (i * 7919) % 300;
        r.meta
            .insert("lang".into(), json!(["en", "de", "fr"][i % 3]));
        if i % 13 == 0 {
            r.labels.remove("topic");
        }
        if let Outcome::Decided(d) = &mut r.outcome {
            if i % 3 == 0 {
                d.model = "student".into();
            }
            if let Some(DecisionAnswer::Noul(a)) = d.answers.get_mut("claim")
                && i % 4 == 0
            {
                a.noul = (a.noul * 10.0).round() / 10.0;
            }
            if i % 17 == 0 {
                d.answers.remove("quality");
            }
            r.cost = match i % 4 {
                0 => Cost::UNKNOWN,
                1 => Cost::new(0.001 * (i % 7) as f64, CostSource::Reported),
                _ => Cost::new(0.0, CostSource::Local),
            };
        }
        if i % 11 == 0 {
            r.outcome = Outcome::Failed {
                kind: "timeout".into(),
                message: "slow".into(),
            };
            r.cost = Cost::UNKNOWN;
        }
    }
    run
}

fn options() -> Vec<SummaryOptions> {
    vec![
        SummaryOptions::default(),
        SummaryOptions {
            gate_keys: Some(vec!["quality".into(), "claim".into()]),
            bands: Some((Default::default(), Default::default())),
            slices: vec![SliceBy::Meta("lang".into()), SliceBy::StateLength(3)],
        },
        SummaryOptions {
            gate_keys: Some(vec!["claim".into(), "nowhere".into()]),
            ..Default::default()
        },
    ]
}

fn digest(s: &Summary) -> String {
    let text = serde_json::to_string(s).unwrap();
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn the_figures_are_those_the_whole_run_gave() {
    // The digests of the summaries of `varied_run(3_000)` under `options()`
    // as the summary computed them from whole per-question arrays (before
    // it was added up a row at a time): every figure, bit for bit.
    let pinned = [
        "ad570dfef58b3500f7e9393ff30756333e1e391863009f9ae93b419f8a5924d6",
        "7dbe236fed653d872492356855a031e5798d6e22d95905ef66e702d12c18d0ee",
        "7704d0522fb1b603b9154932f05f396ed0ea8fad436e31879929c10a4c67d6ad",
    ];
    let run = varied_run(3_000);
    for (o, want) in options().iter().zip(pinned) {
        assert_eq!(digest(&summarize(&run, o)), want, "{o:?}");
    }
}

#[test]
fn a_bounded_tally_gives_the_summary_held_in_memory() {
    let run = varied_run(3_000);
    for o in options() {
        let mut t = Tally::new(&run.questions, &o, true);
        for r in &run.rows {
            t.push(r).unwrap();
        }
        assert!(
            t.gate.len() > crate::assess::sorted::CHUNK,
            "the tally spilled"
        );
        let mut want = summarize(&run, &o);
        want.slices.clear();
        assert_eq!(t.finish().unwrap(), want);
    }
}

#[test]
fn the_default_gate_counts_rows_read_on_every_labelled_question() {
    let run = varied_run(300);
    let s = summarize(&run, &SummaryOptions::default());
    let g = s.gate.unwrap();
    assert_eq!(g.keys, ["claim", "quality", "topic"]);
    let read_on_all = run
        .rows
        .iter()
        .filter(|r| {
            r.decision()
                .is_some_and(|d| r.labels.len() == 3 && d.answers.len() == 3)
        })
        .count();
    assert_eq!(g.n, read_on_all);
    // A gate over a question the run does not ask has no rows.
    let o = &options()[2];
    assert_eq!(summarize(&run, o).gate, None);
}

/// The curve thinned whole, as the summary did before it thinned the
/// points as they came.
fn thin_whole(curve: Vec<CoveragePoint>) -> Vec<CoveragePoint> {
    if curve.len() <= CURVE_POINTS {
        return curve;
    }
    let steps = (CURVE_POINTS - 2) as f64;
    let last = curve.len() - 1;
    let mut out = Vec::with_capacity(CURVE_POINTS);
    let mut next_step = 0.0;
    for (i, p) in curve.iter().enumerate() {
        if i == 0 || i == last || p.coverage >= next_step / steps {
            out.push(*p);
            while next_step / steps <= p.coverage {
                next_step += 1.0;
            }
        }
    }
    out
}

#[test]
fn thinning_as_the_points_come_is_thinning_the_whole_curve() {
    for n in [
        0,
        1,
        2,
        CURVE_POINTS - 1,
        CURVE_POINTS,
        CURVE_POINTS + 1,
        1_000,
    ] {
        let conf: Vec<f64> = (0..n).map(|i| ((i * 7) % 1009) as f64 / 1009.0).collect();
        let hit: Vec<bool> = (0..n).map(|i| i % 3 != 0).collect();
        let curve = metrics::risk_coverage(&conf, &hit);
        let mut t = Thinner::default();
        curve.iter().for_each(|p| t.push(*p));
        assert_eq!(t.finish(), thin_whole(curve), "{n} points");
    }
}
