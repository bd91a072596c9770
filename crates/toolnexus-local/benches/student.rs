//! Student speed: training a head on 1,000 teacher decisions, and one head's
//! inference on an embedding. Needs no model: the embeddings are 384-dimensional
//! unit vectors around four seeded centres (the training cost depends on their
//! number and size, not on where they come from).
//!
//! `cargo bench -p toolnexus-local --bench student`. Run by `cargo test`
//! (without `--bench`), it only checks that it runs, on 40 rows.

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::json;
use toolnexus::classifier::{Decision, Questions, choice_over};
use toolnexus_local::student::{TeacherRow, TrainOptions, distill};

const DIM: usize = 384;
const OPTIONS: [&str; 4] = ["account", "billing", "shipping", "technical"];

/// A seeded xorshift, so every run trains on the same rows.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
}

fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= n);
    v
}

fn questions() -> Questions {
    Questions::from([(
        "desk".to_string(),
        choice_over("Which desk?", OPTIONS.map(|o| (o, format!("the {o} desk")))).into(),
    )])
}

/// `n` rows: each near one of four centres, the teacher fairly sure of it.
fn rows(n: usize) -> Vec<TeacherRow> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let centres: Vec<Vec<f32>> = (0..4)
        .map(|_| unit((0..DIM).map(|_| rng.next()).collect()))
        .collect();
    (0..n)
        .map(|i| {
            let c = i % 4;
            let embedding = unit(centres[c].iter().map(|x| x + 0.08 * rng.next()).collect());
            let probabilities: serde_json::Map<String, serde_json::Value> = OPTIONS
                .iter()
                .enumerate()
                .map(|(j, o)| (o.to_string(), json!(if j == c { 0.85 } else { 0.05 })))
                .collect();
            let decision = Decision::from_value(&json!({
                "model": "teacher",
                "answers": {"desk": {"type": "choice", "choice": OPTIONS[c], "confidence": 0.85,
                    "probabilities": probabilities}}
            }))
            .expect("a well-formed decision");
            TeacherRow {
                embedding,
                decision,
            }
        })
        .collect()
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let n = if bench { 1_000 } else { 40 };
    let rows = rows(n);
    let qs = questions();
    let options = TrainOptions::default();
    let train = || distill(&rows, &qs, "bench", &options).expect("distils");
    let (student, report) = train();
    if !bench {
        assert_eq!(report.rows, n);
        println!("student bench: ok (timings need `cargo bench`)");
        return;
    }
    let runs: Vec<Duration> = (0..5)
        .map(|_| {
            let t = Instant::now();
            black_box(train());
            t.elapsed()
        })
        .collect();
    let epochs = report.questions["desk"].epochs;
    println!(
        "train one 4-way head on {n} rows (best epoch {epochs}): {:.0} ms (median of 5)",
        median(runs).as_secs_f64() * 1e3
    );

    let head = &student.questions["desk"];
    let x = &rows[7].embedding;
    let calls = 100_000;
    let per_call = |f: &dyn Fn()| {
        median(
            (0..7)
                .map(|_| {
                    let t = Instant::now();
                    for _ in 0..calls {
                        f();
                    }
                    t.elapsed() / calls
                })
                .collect(),
        )
    };
    let probabilities = per_call(&|| {
        black_box(head.probabilities(black_box(x)));
    });
    println!(
        "head inference (384 -> 4 probabilities): {:.2} us",
        probabilities.as_secs_f64() * 1e6
    );
    let decision = per_call(&|| {
        black_box(student.answer(black_box(x), &qs).expect("answers"));
    });
    println!(
        "a whole student decision from an embedding (head + Decision): {:.2} us",
        decision.as_secs_f64() * 1e6
    );
}
