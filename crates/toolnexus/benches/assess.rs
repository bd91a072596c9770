//! `toolnexus assess` at scale, on synthetic runs (known true probabilities,
//! over-confident answers): the report over 100,000 rows of recorded answers
//! (parsing the run file included), thresholds with 1,000 bootstrap resamples
//! on 10,000 rows, and calibration on 10,000 rows.
//!
//! `cargo bench -p toolnexus --bench assess`

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use toolnexus::assess::report::report_html;
use toolnexus::assess::synthetic::{SyntheticOptions, synthetic_run};
use toolnexus::assess::{
    CalibrateOptions, Run, SummaryOptions, Target, ThresholdOptions, calibrate_run,
    choose_thresholds, summarize,
};

fn run(rows: usize) -> Run {
    synthetic_run(&SyntheticOptions {
        rows,
        overconfidence: 2.5,
        seed: 7,
    })
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("assess");
    g.sample_size(10).measurement_time(Duration::from_secs(20));

    // Three questions per row: 300,000 recorded answers.
    let text = run(100_000).to_jsonl();
    g.bench_function("report 100k rows (parse, summarize, html)", |b| {
        b.iter(|| {
            let run = Run::parse(black_box(&text), "bench.jsonl").expect("a valid run");
            let summary = summarize(&run, &SummaryOptions::default());
            black_box(report_html("bench", &[("bench".to_string(), summary)]))
        })
    });

    let ten = run(10_000);
    let options = ThresholdOptions::new(Target::Accuracy(0.9));
    assert_eq!(options.resamples, 1000);
    g.bench_function("thresholds 10k rows, 1000 resamples", |b| {
        b.iter(|| choose_thresholds(black_box(&ten), &options).expect("enough rows"))
    });

    g.bench_function("calibrate 10k rows (5-fold)", |b| {
        b.iter(|| calibrate_run(black_box(&ten), &CalibrateOptions::default()).expect("fits"))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
