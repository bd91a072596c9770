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
//! included; the median of each side and their ratio are printed, and beside
//! them the batch process's own CPU time per state (user and system, from
//! the kernel's count for a waited-for child), which other processes on the
//! machine do not inflate. The receiver answers 200 to every export and keeps
//! what it was sent, which is checked to hold spans.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use toolnexus::testing::{Reply, Server as Receiver};

#[path = "support/mod.rs"]
mod support;

use support::{BIN, Inputs, env_usize, start_serve, write_inputs};

/// One batch run: states per second, and the CPU its process spent per state.
struct Run {
    rate: f64,
    /// User and system CPU time of the batch process, µs per state (`None`
    /// where the kernel's count cannot be read).
    cpu_us: Option<(f64, f64)>,
}

/// The CPU time (user, system) in seconds of this process's waited-for
/// children, from `/proc/self/stat` (Linux; in ticks of 1/100 s).
fn children_cpu() -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name may hold spaces: the fields start after its `)`.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // Fields 16 and 17 (cutime, cstime), counted from the pid as field 1.
    let tick = |i: usize| fields.get(i)?.parse::<f64>().ok().map(|t| t / 100.0);
    Some((tick(13)?, tick(14)?))
}

/// One batch run; `collector` turns the export on.
fn batch(dir: &Path, args: &[&str], n: usize, collector: Option<&str>) -> Run {
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
    let before = children_cpu();
    let start = Instant::now();
    let status = cmd.status().expect("run batch");
    let secs = start.elapsed().as_secs_f64();
    assert!(status.success(), "batch failed: {status}");
    let per_state = |t: f64| t * 1e6 / n as f64;
    let cpu_us = before
        .zip(children_cpu())
        .map(|((u0, s0), (u1, s1))| (per_state(u1 - u0), per_state(s1 - s0)));
    Run {
        rate: n as f64 / secs,
        cpu_us,
    }
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
    // Each span carries one `gen_ai.evaluation.result` event per answer (two
    // here): counting the name in the bodies counts the spans delivered, so
    // that a queue dropping spans cannot pass for a cheap export.
    let needle = b"gen_ai.evaluation.result";
    let events: usize = receiver
        .requests()
        .iter()
        .filter(|r| r.path == "/v1/traces")
        .map(|r| r.body.windows(needle.len()).filter(|w| w == needle).count())
        .sum();
    let delivered = events / 2;
    assert!(delivered > 0, "the receiver got spans");
    let cpu = |runs: &[Run]| -> Option<(f64, f64)> {
        let all: Option<Vec<(f64, f64)>> = runs.iter().map(|r| r.cpu_us).collect();
        let all = all?;
        Some((
            median(all.iter().map(|c| c.0).collect()),
            median(all.iter().map(|c| c.1).collect()),
        ))
    };
    let (cpu_off, cpu_on) = (cpu(&off), cpu(&on));
    let rates = |runs: &[Run]| runs.iter().map(|r| r.rate).collect::<Vec<_>>();
    let (rates_off, rates_on) = (rates(&off), rates(&on));
    let (off, on) = (median(rates_off.clone()), median(rates_on.clone()));
    println!(
        "batch (systemone -> serve on loopback, {n} states, concurrency 16, {rounds} rounds each, medians):"
    );
    println!("  export off: {off:.0} states/s   rounds: {rates_off:.0?}");
    println!(
        "  export on:  {on:.0} states/s   rounds: {rates_on:.0?} (to a loopback OTLP/HTTP receiver)"
    );
    println!(
        "  on / off:   {:.3} ({:+.1}%)",
        on / off,
        (on / off - 1.0) * 100.0
    );
    if let (Some((u0, s0)), Some((u1, s1))) = (cpu_off, cpu_on) {
        println!("  batch CPU per state (medians): off {u0:.1} µs user + {s0:.1} µs system");
        println!("                                 on  {u1:.1} µs user + {s1:.1} µs system");
        println!(
            "  the export's CPU per state:    {:+.1} µs user, {:+.1} µs system",
            u1 - u0,
            s1 - s0
        );
    }
    println!(
        "  spans received: {delivered} of {} exported",
        n * (rounds + 1)
    );
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}
