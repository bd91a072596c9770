//! The cost of watching: `toolnexus batch --style systemone` against
//! `toolnexus serve` on loopback, with the OpenTelemetry export off and on (to
//! a loopback OTLP/HTTP receiver), in one sitting.
//!
//! ```text
//! cargo bench -p toolnexus-cli --bench otel
//! ```
//!
//! Beside them, the machine's busy CPU time per state (every process's and
//! the kernel's, from `/proc/stat`): what watching costs in CPU, whichever
//! process pays it and wherever the scheduler runs it.
//!
//! `OTEL_BENCH_CONTROL=1` runs the same rounds with the export off on both
//! sides: the spread of that sitting's ratios is the bench's noise floor.
//!
//! The scheduler places the processes; with `OTEL_BENCH_PIN=1` the batch
//! runs on CPU 0 alone and `serve` and the collector on the other CPUs
//! (`taskset`), as a client, its server and its collector on machines of
//! their own: the batch's CPU is then the bottleneck, and the whole of the
//! export's cost shows in its rate (the worst case).
//!
//! Each round (`OTEL_BENCH_ROUNDS`, default 5) runs the batch with export off
//! and on, back to back, the side going first alternating, over
//! `OTEL_BENCH_STATES` states (default 5000), concurrency 16, process start
//! included. Printed: the median of each side and their ratio; the median
//! and quartiles of each round's own ratio (runs seconds apart, so that a
//! machine drifting over the sitting weighs on both sides alike); and the
//! batch process's own CPU time per state (user and system, from
//! the kernel's count for a waited-for child), which other processes on the
//! machine do not inflate. Then a 95% interval for the median round (the
//! bootstrap), and what it settles about the budget (at most 5% slower):
//! shown when the whole interval is within it, refuted when none of it is,
//! else not settled by the sitting. The receiver is a lean OTLP/HTTP sink on a thread
//! of the bench: it reads each request into one reused buffer, counts the
//! spans by walking the protobuf (`ExportTraceServiceRequest` → resource
//! spans → scope spans → spans), and answers 200; the count is printed beside
//! the number exported, so that a queue dropping spans cannot pass for a
//! cheap export. A collector that keeps every body (the library's test server)
//! costs the shared two cores about as much again as the export itself.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

#[path = "support/mod.rs"]
mod support;

use support::{BIN, Inputs, Scratch, env_usize, start_serve, write_inputs};

/// One batch run: states per second, and the CPU its process spent per state.
struct Run {
    rate: f64,
    /// User and system CPU time of the batch process, µs per state (`None`
    /// where the kernel's count cannot be read).
    cpu_us: Option<(f64, f64)>,
    /// The machine's busy CPU time over the run, every process's and the
    /// kernel's, µs per state (`None` where `/proc/stat` cannot be read).
    machine_us: Option<f64>,
}

/// The machine's busy CPU time so far, in seconds: every CPU's user, nice,
/// system, interrupt and soft-interrupt time from `/proc/stat` (Linux; in
/// ticks of 1/100 s), without idle, I/O wait and time stolen by the host.
fn machine_busy() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let ticks: Vec<f64> = line
        .split_whitespace()
        .map(|t| t.parse::<f64>())
        .collect::<Result<_, _>>()
        .ok()?;
    // user nice system idle iowait irq softirq steal ...
    let busy = [0, 1, 2, 5, 6]
        .iter()
        .map(|&i| ticks.get(i))
        .sum::<Option<f64>>()?;
    Some(busy / 100.0)
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

/// Where the processes run: the batch on its own CPU, and `serve` and the
/// bench's collector on the others (`taskset`), or wherever the scheduler
/// puts them.
#[derive(Clone, Copy, PartialEq)]
enum Layout {
    Pinned,
    Free,
}

impl Layout {
    /// Pinned with `OTEL_BENCH_PIN=1` where the machine has two CPUs or
    /// more and `taskset` can move this process; else free. Pinning moves
    /// this process, and so every thread and child it starts from then on,
    /// off CPU 0; each batch is started on CPU 0 alone.
    fn choose() -> Layout {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        if std::env::var("OTEL_BENCH_PIN").map_or(true, |v| v != "1") || cpus < 2 {
            return Layout::Free;
        }
        let others = format!("1-{}", cpus - 1);
        let moved = Command::new("taskset")
            .args(["-c", "-p", &others, &std::process::id().to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if moved { Layout::Pinned } else { Layout::Free }
    }

    /// The command that runs the toolnexus binary in this layout.
    fn command(self) -> Command {
        match self {
            Layout::Pinned => {
                let mut c = Command::new("taskset");
                c.args(["-c", "0", BIN]);
                c
            }
            Layout::Free => Command::new(BIN),
        }
    }
}

/// One batch run; `collector` turns the export on.
fn batch(layout: Layout, dir: &Path, args: &[&str], n: usize, collector: Option<&str>) -> Run {
    let out = dir.join("out.jsonl");
    let _ = std::fs::remove_file(&out);
    let mut cmd = layout.command();
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
    let busy = machine_busy();
    let start = Instant::now();
    let status = cmd.status().expect("run batch");
    let secs = start.elapsed().as_secs_f64();
    assert!(status.success(), "batch failed: {status}");
    let per_state = |t: f64| t * 1e6 / n as f64;
    let cpu_us = before
        .zip(children_cpu())
        .map(|((u0, s0), (u1, s1))| (per_state(u1 - u0), per_state(s1 - s0)));
    let machine_us = busy.zip(machine_busy()).map(|(b0, b1)| per_state(b1 - b0));
    Run {
        rate: n as f64 / secs,
        cpu_us,
        machine_us,
    }
}

/// A protobuf varint at `b[*at..]`, moving `at` past it.
fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Some(v);
        }
    }
    None
}

/// The length-delimited fields numbered `field` of the message `b`, each as
/// its bytes; `None` if `b` is not a well-formed message.
fn fields(b: &[u8], field: u64) -> Option<Vec<&[u8]>> {
    let (mut at, mut out) = (0, Vec::new());
    while at < b.len() {
        let key = varint(b, &mut at)?;
        match key & 7 {
            0 => {
                varint(b, &mut at)?;
            }
            1 => at += 8,
            5 => at += 4,
            2 => {
                let len = usize::try_from(varint(b, &mut at)?).ok()?;
                let body = b.get(at..at.checked_add(len)?)?;
                if key >> 3 == field {
                    out.push(body);
                }
                at += len;
            }
            _ => return None,
        }
    }
    (at == b.len()).then_some(out)
}

/// The spans in an `ExportTraceServiceRequest`.
fn spans_in(request: &[u8]) -> Option<u64> {
    let mut n = 0;
    for resource in fields(request, 1)? {
        for scope in fields(resource, 2)? {
            n += fields(scope, 2)?.len() as u64;
        }
    }
    Some(n)
}

/// The bench's collector: answers 200 to every request on every connection,
/// counting the spans of each `/v1/traces` body (a body it cannot read
/// counts none, so the check below fails).
struct Receiver {
    addr: std::net::SocketAddr,
    spans: Arc<AtomicU64>,
}

impl Receiver {
    fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the receiver");
        let addr = listener.local_addr().expect("receiver address");
        let spans = Arc::new(AtomicU64::new(0));
        let counted = spans.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let counted = counted.clone();
                std::thread::spawn(move || serve_sink(conn, &counted));
            }
        });
        Receiver { addr, spans }
    }
}

/// One connection of the sink: requests read into one reused buffer.
fn serve_sink(conn: std::net::TcpStream, counted: &AtomicU64) {
    let mut out = conn.try_clone().expect("clone the connection");
    let mut reader = BufReader::with_capacity(1 << 16, conn);
    let mut body = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let traces = line.contains("/v1/traces");
        let mut len = 0usize;
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                len = value.trim().parse().unwrap_or(0);
            }
        }
        body.resize(len, 0);
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        if traces {
            counted.fetch_add(spans_in(&body).unwrap_or(0), Ordering::Relaxed);
        }
        if out
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
            .is_err()
        {
            return;
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The budget: export on at most 5% slower than off.
const BUDGET: f64 = 0.95;

/// A 95% interval for the median of `v` by the bootstrap: the medians of
/// 2,000 resamples drawn with replacement, by a generator of fixed seed
/// (xorshift), so that the interval can be worked out again from the rounds
/// printed.
fn median_interval(v: &[f64]) -> (f64, f64) {
    const RESAMPLES: usize = 2_000;
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut pick = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        v[(state % v.len() as u64) as usize]
    };
    let mut medians: Vec<f64> = (0..RESAMPLES)
        .map(|_| median((0..v.len()).map(|_| pick()).collect()))
        .collect();
    medians.sort_by(f64::total_cmp);
    (
        medians[RESAMPLES / 40],
        medians[RESAMPLES - 1 - RESAMPLES / 40],
    )
}

/// What a sitting settles about the budget, from the interval of its median
/// round: shown when all of it is within, refuted when none of it is.
fn verdict((low, high): (f64, f64)) -> &'static str {
    if low >= BUDGET {
        "shown"
    } else if high < BUDGET {
        "refuted"
    } else {
        "not settled by this sitting"
    }
}

fn main() {
    let n = env_usize("OTEL_BENCH_STATES", 5_000);
    let rounds = env_usize("OTEL_BENCH_ROUNDS", 5).max(1);
    let scratch = Scratch::new("toolnexus-otel-bench");
    let dir = scratch.path();
    let Inputs {
        tape,
        questions: q,
        states,
    } = write_inputs(dir, n, "otel bench");

    let layout = Layout::choose();
    let serve = start_serve(&tape);
    let receiver = Receiver::start();
    let collector = format!("http://{}", receiver.addr);
    // The control: the "on" side exports nothing either, so that the
    // ratios show what the sitting's noise alone makes of two equal sides.
    let control = std::env::var("OTEL_BENCH_CONTROL").is_ok_and(|v| v == "1");
    let exporting = (!control).then_some(collector.as_str());
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
    batch(layout, dir, &args, n, None);
    batch(layout, dir, &args, n, exporting);
    // Each round runs both sides back to back, the side going first
    // alternating (off-on, on-off, ...): a machine that slows or speeds up
    // over a minute weighs on both alike, and each round's ratio compares
    // runs seconds apart.
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        if round % 2 == 0 {
            off.push(batch(layout, dir, &args, n, None));
            on.push(batch(layout, dir, &args, n, exporting));
        } else {
            on.push(batch(layout, dir, &args, n, exporting));
            off.push(batch(layout, dir, &args, n, None));
        }
    }
    let delivered = receiver.spans.load(Ordering::Relaxed);
    assert!(control || delivered > 0, "the receiver got spans");
    let cpu = |runs: &[Run]| -> Option<(f64, f64)> {
        let all: Option<Vec<(f64, f64)>> = runs.iter().map(|r| r.cpu_us).collect();
        let all = all?;
        Some((
            median(all.iter().map(|c| c.0).collect()),
            median(all.iter().map(|c| c.1).collect()),
        ))
    };
    let (cpu_off, cpu_on) = (cpu(&off), cpu(&on));
    let machine = |runs: &[Run]| -> Option<f64> {
        let all: Option<Vec<f64>> = runs.iter().map(|r| r.machine_us).collect();
        Some(median(all?))
    };
    let machine_off_on = (machine(&off), machine(&on));
    let rates = |runs: &[Run]| runs.iter().map(|r| r.rate).collect::<Vec<_>>();
    let (rates_off, rates_on) = (rates(&off), rates(&on));
    let paired: Vec<f64> = rates_on
        .iter()
        .zip(&rates_off)
        .map(|(on, off)| on / off)
        .collect();
    let (off, on) = (median(rates_off.clone()), median(rates_on.clone()));
    println!(
        "batch (systemone -> serve on loopback, {n} states, concurrency 16, {rounds} rounds each, medians):"
    );
    println!(
        "  {}",
        match layout {
            Layout::Pinned => "pinned: the batch on CPU 0; serve and the collector on the others",
            Layout::Free => "not pinned: every process where the scheduler puts it",
        }
    );
    if control {
        println!("  control (OTEL_BENCH_CONTROL=1): the \"on\" side exports nothing either");
    }
    println!("  export off: {off:.0} states/s   rounds: {rates_off:.0?}");
    println!(
        "  export on:  {on:.0} states/s   rounds: {rates_on:.0?} (to a loopback OTLP/HTTP receiver)"
    );
    println!(
        "  on / off:   {:.3} ({:+.1}%)",
        on / off,
        (on / off - 1.0) * 100.0
    );
    let mut sorted = paired.clone();
    sorted.sort_by(f64::total_cmp);
    let quartile = |q: usize| sorted[(sorted.len() - 1) * q / 4];
    println!(
        "  each round's on / off: median {:.3}, quartiles {:.3}..{:.3}   rounds: {paired:.3?}",
        quartile(2),
        quartile(1),
        quartile(3),
    );
    let interval = median_interval(&paired);
    println!(
        "  95% interval of the median round (bootstrap): {:.3}..{:.3}; at most {:.0}% slower: {}",
        interval.0,
        interval.1,
        (1.0 - BUDGET) * 100.0,
        verdict(interval),
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
    if let (Some(m0), Some(m1)) = machine_off_on {
        println!(
            "  machine CPU per state, every process (medians): off {m0:.1} µs, on {m1:.1} µs ({:+.1}%)",
            (m1 / m0 - 1.0) * 100.0
        );
    }
    println!(
        "  spans received: {delivered} of {} exported",
        if control { 0 } else { n * (rounds + 1) }
    );
    drop(serve);
}
