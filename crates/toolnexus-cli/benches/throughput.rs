//! Throughput of `toolnexus serve` and `toolnexus batch`, on loopback only.
//!
//! ```text
//! cargo bench -p toolnexus-cli --bench throughput
//! ```
//!
//! - serve: the library's SystemOne style posts to `toolnexus serve --style static`
//!   from 16 concurrent tasks; requests per second over a fixed request count.
//! - batch (tape): `toolnexus batch --style tape` over a JSONL file, no network;
//!   states per second, process start included.
//! - batch (serve): `toolnexus batch --style systemone` against the server above,
//!   concurrency 16; states per second.
//!
//! Sizes can be changed with `THROUGHPUT_REQUESTS` (default 20000) and
//! `THROUGHPUT_STATES` (default 5000). Every loop is bounded in count and time.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use toolnexus::classifier::{ClassifierOptions, ClassifierStyle, create_classifier};
use toolnexus::judge::Tape;

#[path = "support/mod.rs"]
mod support;

use support::{
    BIN, Inputs, Scratch, env_usize, questions, start_serve as start_server, write_inputs,
};

const CONCURRENCY: usize = 16;
const TIME_CAP: Duration = Duration::from_secs(120);

async fn serve_throughput(url: &str, tape: &Path, requests: usize) -> f64 {
    let judge = create_classifier(ClassifierOptions {
        style: ClassifierStyle::SystemOne,
        base_url: format!("{url}/v1"),
        retries: -1,
        ..Default::default()
    })
    .expect("classifier");
    let qs = Arc::new(questions());
    let states: Arc<Vec<serde_json::Value>> = Arc::new(
        Tape::load(tape)
            .expect("tape")
            .entries()
            .into_iter()
            .map(|e| e.state)
            .collect(),
    );
    let run = |count: usize| {
        let next = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..CONCURRENCY)
            .map(|_| {
                let (judge, qs, states, next) =
                    (judge.clone(), qs.clone(), states.clone(), next.clone());
                tokio::spawn(async move {
                    let start = Instant::now();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= count || start.elapsed() > TIME_CAP {
                            break;
                        }
                        let s = states[i % states.len()].clone();
                        judge.evaluate(s, &qs).await.expect("served decision");
                    }
                })
            })
            .collect();
        async move {
            for t in tasks {
                t.await.expect("task");
            }
        }
    };
    run(500).await; // warm up connections
    let start = Instant::now();
    run(requests).await;
    requests as f64 / start.elapsed().as_secs_f64()
}

fn batch_throughput(dir: &Path, args: &[&str], n: usize) -> f64 {
    let out = dir.join("out.jsonl");
    let _ = std::fs::remove_file(&out);
    let start = Instant::now();
    let status = Command::new(BIN)
        .arg("batch")
        .args(args)
        .arg("--out")
        .arg(&out)
        .args(["--no-progress", "--concurrency", "16"])
        .stdout(Stdio::null())
        .status()
        .expect("run batch");
    let secs = start.elapsed().as_secs_f64();
    assert!(status.success(), "batch failed: {status}");
    // Result lines only: the out file opens with its header line.
    let written = std::fs::read_to_string(&out)
        .expect("out")
        .lines()
        .filter(|l| l.starts_with("{\"line\":"))
        .count();
    assert_eq!(written, n);
    n as f64 / secs
}

fn main() {
    let requests = env_usize("THROUGHPUT_REQUESTS", 20_000);
    let n = env_usize("THROUGHPUT_STATES", 5_000);
    let scratch = Scratch::new("toolnexus-throughput");
    let dir = scratch.path();
    let Inputs {
        tape,
        questions: q,
        states,
    } = write_inputs(dir, n, "throughput bench");

    let server = start_server(&tape);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let rps = rt.block_on(serve_throughput(&server.1, &tape, requests));
    println!(
        "serve  (static, {requests} requests, concurrency {CONCURRENCY}, library SystemOne client): {rps:.0} requests/s"
    );

    let (q, s, t) = (
        q.display().to_string(),
        states.display().to_string(),
        tape.display().to_string(),
    );
    let base = format!("{}/v1", server.1);
    let local = batch_throughput(
        dir,
        &[
            "--questions",
            &q,
            "--states",
            &s,
            "--style",
            "tape",
            "--tape",
            &t,
            "--call",
            "bench",
        ],
        n,
    );
    println!("batch  (tape style, {n} states, concurrency 16): {local:.0} states/s");
    let remote = batch_throughput(
        dir,
        &[
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
        ],
        n,
    );
    println!(
        "batch  (systemone -> serve on loopback, {n} states, concurrency 16): {remote:.0} states/s"
    );
    drop(server);
}
