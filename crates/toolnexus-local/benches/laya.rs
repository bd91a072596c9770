//! Laya's speed and memory on a checkpoint of the real shape: random weights
//! of the English checkpoint's ModernBERT-large encoder (`scripts/laya-reference
//! bench-model DIR` writes one, in the release layout, fp16), named by
//! `TOOLNEXUS_LAYA_BENCH_DIR`. Without it the bench says so and stops.
//!
//! `TOOLNEXUS_LAYA_BENCH_DIR=/tmp/laya-bench cargo bench -p toolnexus-local --bench laya`
//!
//! Measures, on the request `scripts/laya-reference bench` times on torch:
//! - one request, 3 questions (noul, choice of 4, score of 5) on a ~120-token
//!   state, one forward pass: p50 and p90 over 20+ runs after warm-up;
//! - a batch of 32 such states, one forward pass: states per second;
//! - where the time goes: the encoder's dense layers timed alone at the same
//!   shapes, as a share of the request;
//! - peak resident memory (`VmHWM`), load included.
//!
//! Run by `cargo test` (without `--bench`) it only checks that it runs, with
//! 2 timed requests and no batch. `TOOLNEXUS_LAYA_BENCH_RUNS=N` times N
//! requests instead. `TOOLNEXUS_LAYA_BENCH_PRECISION=bf16` (or `auto`) runs
//! the encoder in that precision (default `f32`).

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolnexus::classifier::{Questions, questions_from_wire};
use toolnexus_local::{Laya, Precision};

const STATE: &str = "Ticket 4711 from a gold customer in Lisbon: I was charged twice for the same order last \
Tuesday and my parcel has still not arrived. The tracking page has not changed in a week, \
the login page now says my account is locked, and I cannot reset my password because the \
reset email never comes. Please refund one of the two payments, unlock the account and \
tell me when the parcel will be delivered, otherwise I will cancel my subscription.";

fn questions() -> Questions {
    questions_from_wire(&json!({
        "refund": {"type": "noul", "instructions": "Does the customer ask for a refund?"},
        "team": {"type": "choice", "instructions": "Which team should handle this ticket?",
                 "criteria": {"billing": "payments, charges and refunds",
                              "shipping": "parcels and deliveries",
                              "security": "accounts, logins and passwords",
                              "support": "anything else"}},
        "urgency": {"type": "score", "instructions": "How urgent is this ticket?",
                    "criteria": ["not urgent", "this week", "today", "within the hour",
                                 "the customer is blocked right now"]},
    }))
    .expect("the bench questions are valid")
}

/// Peak resident memory of this process so far, in MiB.
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

/// CPU time this process has used so far (user + system, all threads), in
/// seconds: under a loaded machine a fairer figure than wall time.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command's closing parenthesis; utime and stime are the
    // 12th and 13th of them, in clock ticks (100 a second on Linux).
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let f: Vec<f64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    (f.get(11).copied().unwrap_or(f64::NAN) + f.get(12).copied().unwrap_or(f64::NAN)) / 100.0
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    sorted[((q * (sorted.len() - 1) as f64).round() as usize).min(sorted.len() - 1)]
}

/// The encoder's dense layers alone (q|k|v, out, GeGLU in, out; every layer)
/// on `tokens` rows, with random weights of the config's shape laid out as
/// the engine keeps them (`[in, out]`) and the same `gemm` call: how long the
/// matrix products of one forward pass take by themselves.
fn dense_layers(config: &Value, tokens: usize, runs: usize) -> Duration {
    let get = |k: &str| config[k].as_u64().expect("encoder config field") as usize;
    let (d, i, n) = (
        get("hidden_size"),
        get("intermediate_size"),
        get("num_hidden_layers"),
    );
    let threads = candle_core::utils::get_num_threads();
    let shapes = [(d, 3 * d), (d, d), (d, 2 * i), (i, d)];
    let weights: Vec<Vec<f32>> = shapes
        .iter()
        .map(|&(k, o)| (0..k * o).map(|j| (j % 13) as f32 * 1e-3).collect())
        .collect();
    let inputs: Vec<Vec<f32>> = shapes
        .iter()
        .map(|&(k, _)| (0..tokens * k).map(|j| (j % 7) as f32 * 1e-2).collect())
        .collect();
    let mut outs: Vec<Vec<f32>> = shapes
        .iter()
        .map(|&(_, o)| vec![0f32; tokens * o])
        .collect();
    let mut best = Duration::MAX;
    for _ in 0..runs {
        let t = Instant::now();
        for _ in 0..n {
            for (((&(k, o), w), x), out) in shapes.iter().zip(&weights).zip(&inputs).zip(&mut outs)
            {
                // SAFETY: every operand holds exactly the rows and columns
                // the call names, at the strides it names.
                unsafe {
                    gemm::gemm(
                        tokens,
                        o,
                        k,
                        out.as_mut_ptr(),
                        1,
                        o as isize,
                        false,
                        x.as_ptr(),
                        1,
                        k as isize,
                        w.as_ptr(),
                        1,
                        o as isize,
                        1.0,
                        1.0,
                        false,
                        false,
                        false,
                        gemm::Parallelism::Rayon(threads),
                    );
                }
                black_box(&out);
            }
        }
        best = best.min(t.elapsed());
    }
    best
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let Some(dir) = std::env::var_os("TOOLNEXUS_LAYA_BENCH_DIR") else {
        println!(
            "laya bench: skipped (set TOOLNEXUS_LAYA_BENCH_DIR to a checkpoint of the real \
             shape, e.g. from `scripts/laya-reference bench-model /tmp/laya-bench`)"
        );
        return;
    };
    let rss_before = peak_rss_mib();
    let t = Instant::now();
    let precision: Precision = std::env::var("TOOLNEXUS_LAYA_BENCH_PRECISION")
        .map_or(Ok(Precision::F32), |p| p.parse())
        .unwrap_or_else(|e| panic!("TOOLNEXUS_LAYA_BENCH_PRECISION: {e}"));
    println!("precision: {precision}");
    let laya = Laya::load_with(&dir, precision).expect("the bench checkpoint loads");
    let load = t.elapsed();
    let rss_loaded = peak_rss_mib();
    // The reference bench's own request and batch when the directory has
    // them (`bench-request.json`, written beside the weights), so both
    // engines time the same input; else the built-in one.
    let shared: Option<Value> =
        std::fs::read(std::path::Path::new(&dir).join("bench-request.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
    let (state, qs, batch) = match &shared {
        Some(r) => (
            r["request"]["state"].clone(),
            questions_from_wire(&r["request"]["questions"]).expect("bench-request.json questions"),
            r["batch"]["states"].as_array().cloned(),
        ),
        None => (Value::from(STATE), questions(), None),
    };
    println!(
        "request: {}",
        if shared.is_some() {
            "bench-request.json"
        } else {
            "built in"
        }
    );

    let first = laya.trace(std::slice::from_ref(&state), &qs).unwrap();
    let tokens: usize = first.iter().map(|r| r.ids.len()).sum();
    let longest = first.iter().map(|r| r.ids.len()).max().unwrap_or(0);
    // TOOLNEXUS_LAYA_BENCH_RUNS: timed requests (default 25; 2 without --bench).
    let runs = std::env::var("TOOLNEXUS_LAYA_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse::<usize>().ok())
        .filter(|r| *r > 0);
    let (warmup, runs) = if full {
        (3, runs.unwrap_or(25))
    } else {
        (0, runs.unwrap_or(2))
    };
    for _ in 0..warmup {
        black_box(laya.decide(&state, &qs).unwrap());
    }
    let mut cpu = Vec::with_capacity(runs);
    let mut lat: Vec<f64> = (0..runs)
        .map(|_| {
            let (t, c) = (Instant::now(), cpu_seconds());
            black_box(laya.decide(&state, &qs).unwrap());
            cpu.push(cpu_seconds() - c);
            ms(t.elapsed())
        })
        .collect();
    cpu.sort_by(f64::total_cmp);
    lat.sort_by(f64::total_cmp);
    let p50 = percentile(&lat, 0.5);
    println!(
        "laya: {} rows, {tokens} input tokens (longest row {longest}); load {:.1} s",
        first.len(),
        load.as_secs_f64()
    );
    println!(
        "one request: p50 {p50:.1} ms, p90 {:.1} ms, min {:.1} ms, max {:.1} ms over {runs} runs ({warmup} warm-up)",
        percentile(&lat, 0.9),
        lat[0],
        lat[lat.len() - 1]
    );
    println!(
        "  CPU time per request: p50 {:.2} s, min {:.2} s",
        percentile(&cpu, 0.5),
        cpu[0]
    );

    if full {
        let config: Value = serde_json::from_slice(
            &std::fs::read(std::path::Path::new(&dir).join("encoder/config.json")).unwrap(),
        )
        .unwrap();
        let dense = dense_layers(&config, tokens, 5);
        println!(
            "  the encoder's dense layers alone on these {tokens} tokens: {:.1} ms, {:.0}% of the p50",
            ms(dense),
            100.0 * ms(dense) / p50
        );

        let states: Vec<Value> = batch.clone().unwrap_or_else(|| {
            (0..32)
                .map(|i| Value::from(STATE.replace("4711", &(4711 + i).to_string())))
                .collect()
        });
        // TOOLNEXUS_LAYA_BENCH_BATCH_RUNS: timed batches (default 3, after
        // one untimed; a single timed batch runs without it).
        let batches = std::env::var("TOOLNEXUS_LAYA_BENCH_BATCH_RUNS")
            .ok()
            .and_then(|r| r.parse::<usize>().ok())
            .filter(|r| *r > 0)
            .unwrap_or(3);
        if batches > 1 {
            black_box(laya.decide_batch(&states, &qs).unwrap());
        }
        let mut batch_cpu = Vec::with_capacity(batches);
        let mut secs: Vec<f64> = (0..batches)
            .map(|_| {
                let (t, c) = (Instant::now(), cpu_seconds());
                black_box(laya.decide_batch(&states, &qs).unwrap());
                batch_cpu.push(cpu_seconds() - c);
                t.elapsed().as_secs_f64()
            })
            .collect();
        batch_cpu.sort_by(f64::total_cmp);
        secs.sort_by(f64::total_cmp);
        let median = secs[secs.len() / 2];
        println!(
            "batch of {} states ({} rows, one pass): median {median:.2} s, {:.2} states/s",
            states.len(),
            states.len() * first.len(),
            states.len() as f64 / median
        );
        println!(
            "  CPU time per batch: median {:.1} s",
            batch_cpu[batch_cpu.len() / 2]
        );
    }
    println!(
        "peak RSS: {:.0} MiB (before load {:.0}, after load {:.0})",
        peak_rss_mib(),
        rss_before,
        rss_loaded
    );
    let load_avg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "threads {}, load average {}",
        candle_core::utils::get_num_threads(),
        load_avg
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
}
