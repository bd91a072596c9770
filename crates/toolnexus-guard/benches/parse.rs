//! How long the shell reader takes per command: `shell::parse` and
//! `shell::effects` over the bypass and benign corpora, timed with the
//! standard clock (no bench framework). Each command is read `ROUNDS` times;
//! the figures are percentiles of the per-read times over every command.
//!
//! Run with `cargo bench -p toolnexus-guard --bench parse`. Built as a test
//! (`cargo test --all-targets`, which does not pass `--bench`) it reads each
//! command once: a smoke run, not a measurement.

use std::hint::black_box;
use std::time::Instant;

use toolnexus_guard::shell;

/// Reads of each command when measuring.
const ROUNDS: usize = 200;

fn commands(file: &str) -> Vec<String> {
    let path = format!("{}/data/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v.get("command").and_then(|c| c.as_str()).map(String::from))
        .collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() {
    let rounds = if std::env::args().any(|a| a == "--bench") {
        ROUNDS
    } else {
        1
    };
    for file in ["benign.jsonl", "bypass.jsonl"] {
        let cmds = commands(file);
        // The first read loads the grammar into the thread's parser.
        let cold = Instant::now();
        black_box(shell::parse("true"));
        let cold = cold.elapsed().as_secs_f64() * 1e6;
        let mut times = Vec::with_capacity(cmds.len() * rounds);
        for _ in 0..rounds {
            for c in &cmds {
                let t = Instant::now();
                let script = shell::parse(black_box(c));
                for command in &script.commands {
                    black_box(shell::effects(command));
                }
                times.push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
        times.sort_by(f64::total_cmp);
        println!(
            "{file}: {} commands x {rounds}: parse+effects p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs (first parser {:.1} µs)",
            cmds.len(),
            percentile(&times, 0.50),
            percentile(&times, 0.99),
            times.last().copied().unwrap_or(0.0),
            cold,
        );
    }
}
