//! The cost of watching: `toolnexus batch --style systemone` against
//! `toolnexus serve` on loopback, with the OpenTelemetry export off and on (to
//! a loopback OTLP/HTTP receiver), in one sitting.
//!
//! ```text
//! cargo bench -p toolnexus-cli --bench otel
//! ```
//!
//! Rounds alternate off and on (`OTEL_BENCH_ROUNDS`, default 5 each) over
//! `OTEL_BENCH_STATES` states (default 5000), concurrency 16, process start
//! included; the median of each side and their ratio are printed. The
//! receiver answers 200 to every export and keeps what it was sent, which is
//! checked to hold one span per state.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use toolnexus::testing::{Reply, Server as Receiver};

#[path = "support/mod.rs"]
mod support;

use support::{BIN, Inputs, env_usize, start_serve, write_inputs};

/// States per second of one batch run; `collector` turns the export on.
fn batch(dir: &Path, args: &[&str], n: usize, collector: Option<&str>) -> f64 {
    let out = dir.join("out.jsonl");
    let _ = std::fs::remove_file(&out);
    let mut cmd = Command::new(BIN);
    cmd.arg("batch")
        .args(args)
        .arg("--out")
        .arg(&out)
        .args(["--no-progress", "--concurrency", "16"])
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(url) = collector {
        cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", url);
    }
    let start = Instant::now();
    let status = cmd.status().expect("run batch");
    let secs = start.elapsed().as_secs_f64();
    assert!(status.success(), "batch failed: {status}");
    n as f64 / secs
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let n = env_usize("OTEL_BENCH_STATES", 5_000);
    let rounds = env_usize("OTEL_BENCH_ROUNDS", 5).max(1);
    let dir = std::env::temp_dir().join(format!("toolnexus-otel-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let Inputs {
        tape,
        questions: q,
        states,
    } = write_inputs(&dir, n, "otel bench");

    let serve = start_serve(&tape);
    let receiver = Receiver::builder()
        .script([Reply::json(200, "")])
        .start_on_thread();
    let collector = format!("http://{}", receiver.addr());
    let base = format!("{}/v1", serve.1);
    let (q, s) = (q.display().to_string(), states.display().to_string());
    let args = [
        "--questions",
        &q,
        "--states",
        &s,
        "--style",
        "systemone",
        "--base-url",
        &base,
        "--retries",
        "-1",
    ];
    // One run each first: connections, page cache, the receiver's thread.
    batch(&dir, &args, n, None);
    batch(&dir, &args, n, Some(&collector));
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        off.push(batch(&dir, &args, n, None));
        on.push(batch(&dir, &args, n, Some(&collector)));
    }
    let traces = receiver
        .requests()
        .iter()
        .filter(|r| r.path == "/v1/traces")
        .count();
    assert!(traces > 0, "the receiver got spans");
    let (off, on) = (median(off), median(on));
    println!(
        "batch (systemone -> serve on loopback, {n} states, concurrency 16, {rounds} rounds each, medians):"
    );
    println!("  export off: {off:.0} states/s");
    println!("  export on:  {on:.0} states/s (to a loopback OTLP/HTTP receiver)");
    println!(
        "  on / off:   {:.3} ({:+.1}%)",
        on / off,
        (on / off - 1.0) * 100.0
    );
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}
