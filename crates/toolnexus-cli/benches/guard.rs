//! Latency of `toolnexus guard` as a hook sees it: one process per tool call,
//! start to exit, with the hook input on stdin.
//!
//! ```text
//! cargo bench -p toolnexus-cli --bench guard
//! ```
//!
//! - with a server: `toolnexus serve --style local --cascade --student
//!   builtin:guard` is started once and warmed; then `GUARD_CALLS` (default
//!   200) runs of `toolnexus guard --server URL`, one after another.
//! - without one: `GUARD_COLD_CALLS` (default 40) runs of `toolnexus guard`,
//!   each loading the embedded model itself.
//!
//! Run without `--bench` (as `cargo test --all-targets` does), it is a smoke
//! test: three calls of each kind. The calls are the guard set's held-out hook
//! inputs, in a loop. Needs the
//! embedded model (`toolnexus model fetch`, or TOOLNEXUS_MODEL_DIR); without it
//! the bench says so and measures nothing. The log is written under a
//! temporary state directory.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_toolnexus");
const HELDOUT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../toolnexus-guard/data/calls.heldout.jsonl"
);

struct Server(Child, String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn hook_inputs() -> Vec<String> {
    std::fs::read_to_string(HELDOUT)
        .expect("the guard set")
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a labelled call");
            let s = &v["state"];
            json!({
                "session_id": "bench", "transcript_path": "/tmp/t.jsonl",
                "cwd": s["cwd"], "hook_event_name": "PreToolUse",
                "tool_name": s["tool_name"], "tool_input": s["tool_input"],
                "tool_use_id": "toolu_bench",
            })
            .to_string()
        })
        .collect()
}

fn start_server(state: &std::path::Path) -> Server {
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--style",
            "local",
            "--cascade",
            "--student",
            "builtin:guard",
        ])
        .env("XDG_STATE_HOME", state)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn serve");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut url = None;
    for line in lines.by_ref().map_while(Result::ok) {
        if let Some(u) = line.strip_prefix("listening on ") {
            url = Some(u.to_string());
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    Server(child, url.expect("serve prints its address"))
}

/// One hook run: spawn, write the input, wait. Returns the wall time.
fn one(args: &[&str], input: &str, state: &std::path::Path) -> Duration {
    let t = Instant::now();
    let mut child = Command::new(BIN)
        .arg("guard")
        .args(args)
        .env("XDG_STATE_HOME", state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn guard");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().expect("guard ran");
    assert!(out.status.success(), "guard exits 0");
    t.elapsed()
}

fn percentile(sorted: &[Duration], q: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

fn report(name: &str, mut times: Vec<Duration>) {
    times.sort();
    println!(
        "{name:<34} calls {:>4}  p50 {:>7.1} ms  p90 {:>7.1} ms  p99 {:>7.1} ms  max {:>7.1} ms",
        times.len(),
        percentile(&times, 0.5),
        percentile(&times, 0.9),
        percentile(&times, 0.99),
        percentile(&times, 1.0),
    );
}

fn main() {
    let dir = std::env::var_os("TOOLNEXUS_MODEL_DIR")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| {
                std::path::PathBuf::from(h).join(".cache/toolnexus/models/all-minilm-l6-v2")
            })
        });
    if !dir.is_some_and(|d| d.join("model.safetensors").is_file()) {
        println!("guard bench: no embedded model (toolnexus model fetch); nothing measured");
        return;
    }
    let state = std::env::temp_dir().join(format!("toolnexus-guard-bench-{}", std::process::id()));
    let inputs = hook_inputs();
    let bench = std::env::args().any(|a| a == "--bench");
    let (calls, cold) = if bench {
        (
            env_usize("GUARD_CALLS", 200),
            env_usize("GUARD_COLD_CALLS", 40),
        )
    } else {
        (3, 3)
    };

    let server = start_server(&state);
    let args = ["--server", server.1.as_str()];
    for input in inputs.iter().take(if bench { 10 } else { 1 }) {
        one(&args, input, &state); // warm the server and the page cache
    }
    let warm: Vec<Duration> = (0..calls)
        .map(|i| one(&args, &inputs[i % inputs.len()], &state))
        .collect();
    report("guard --server (warm serve)", warm);
    drop(server);

    let local: Vec<Duration> = (0..cold)
        .map(|i| one(&[], &inputs[i % inputs.len()], &state))
        .collect();
    report("guard (model loaded per call)", local);
    let _ = std::fs::remove_dir_all(&state);
}
