//! Embedding speed on the real model: one short state, and batches of states.
//! Prints medians; needs the model (scripts/fetch-model) and says so otherwise.
//!
//! `cargo bench -p toolnexus-local --bench embed` (`-- --precision bf16` for
//! the encoder in bf16; `auto` too). Run by `cargo test` (without `--bench`),
//! it only checks that it runs, on the tiny test model.

use std::time::{Duration, Instant};

use serde_json::json;
use toolnexus::classifier::{EnvSource, Questions, choice_over};
use toolnexus_local::{Embedder, Precision, ZeroShot, model_dir, state_text};

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn time(runs: usize, mut f: impl FnMut()) -> Duration {
    f();
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

/// Seconds of CPU this process has used, all threads (`/proc/self/stat`'s
/// user and system ticks, 100 a second on Linux); `None` elsewhere. On a
/// shared machine the wall clock counts other processes' turns on the
/// cores, CPU time does not.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        smoke();
        return;
    }
    let dir = match model_dir(None, &EnvSource::process()) {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("embed bench: {e}");
            return;
        }
    };
    let args: Vec<String> = std::env::args().collect();
    let precision = match args.iter().position(|a| a == "--precision") {
        Some(i) => match args.get(i + 1).map(|p| p.parse::<Precision>()) {
            Some(Ok(p)) => p,
            _ => {
                eprintln!("embed bench: --precision takes f32, bf16 or auto");
                return;
            }
        },
        None => Precision::F32,
    };
    let started = Instant::now();
    let e = match Embedder::load_with(&dir, precision) {
        Ok(e) => e,
        Err(err) => {
            eprintln!("embed bench skipped: {err}");
            return;
        }
    };
    println!("precision: {}", e.precision());
    println!("load: {}", ms(started.elapsed()));

    let state = state_text(&json!({"message": "I was charged twice, please refund one"}));
    let tokens = e.token_ids(&state).unwrap().len();
    println!(
        "one short state ({tokens} tokens): {}",
        ms(time(30, || {
            e.embed(&[state.as_str()]).unwrap();
        }))
    );

    let states: Vec<String> = (0..256)
        .map(|i| {
            state_text(&json!({
                "message": format!("order {i}: my parcel is late and I was charged twice, ticket {}", i * 7)
            }))
        })
        .collect();
    for n in [64, 256] {
        let batch = &states[..n];
        let cpu_before = cpu_seconds();
        let d = time(3, || {
            e.embed(batch).unwrap();
        });
        // The warm-up and the three timed runs: four batches of CPU time.
        let cpu = match (cpu_before, cpu_seconds()) {
            (Some(a), Some(b)) if b > a => {
                format!(", {:.0} states per CPU-second", 4.0 * n as f64 / (b - a))
            }
            _ => String::new(),
        };
        println!(
            "a batch of {n} states: {} ({:.0} states/s{cpu})",
            ms(d),
            n as f64 / d.as_secs_f64()
        );
    }

    let local = ZeroShot::new(e.clone());
    let qs = Questions::from([(
        "desk".to_string(),
        choice_over(
            "Which desk?",
            [
                ("billing", "payments, charges, invoices and refunds"),
                ("shipping", "delivery of a parcel: late, lost or damaged"),
                (
                    "account",
                    "signing in: passwords, logins and locked accounts",
                ),
                ("product", "how the product works: features and settings"),
            ],
        )
        .into(),
    )]);
    let state = json!({"message": "my parcel is late"});
    println!(
        "zero-shot decision, options cached: {}",
        ms(time(30, || {
            local.decide(&state, &qs).unwrap();
        }))
    );
}

/// What `cargo test` runs: the bench's calls once, on the tiny model.
fn smoke() {
    let dir = std::env::temp_dir().join(format!("toolnexus-local-bench-{}", std::process::id()));
    toolnexus_local::tiny_model_for_tests(&dir).unwrap();
    let e = Embedder::load(&dir).unwrap();
    let states = [state_text(&json!({"message": "my parcel is late"}))];
    assert_eq!(e.embed(&states).unwrap().len(), 1);
    std::fs::remove_dir_all(&dir).ok();
    println!("embed bench: ok (timings need `cargo bench` and the real model)");
}
