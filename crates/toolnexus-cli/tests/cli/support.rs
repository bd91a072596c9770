//! Running the built binary: bounded waits, children always killed, temp dirs
//! always removed, a tiny HTTP/1.1 client for loopback requests, and a scripted
//! upstream built on the library's fake server (`toolnexus::testing`).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolnexus::classifier::{Decision, Questions, questions_from_wire};
use toolnexus::judge::{Tape, TapeEntry, TapeOutcome};

/// The longest any child may run before the test gives up on it.
pub const DEADLINE: Duration = Duration::from_secs(120);

/// The demo tape the binary embeds.
pub const DEMO_TAPE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../toolnexus/examples/tapes/demo.tape.json"
);

/// The embedded model's directory, when `TOOLNEXUS_MODEL_DIR` holds one.
/// Without it a test is skipped (`None`), unless CI, which fetches the
/// model, requires it (`TOOLNEXUS_REQUIRE_MODEL`): then this fails.
pub fn real_model() -> Option<PathBuf> {
    let dir = std::env::var_os("TOOLNEXUS_MODEL_DIR")
        .map(PathBuf::from)
        .filter(|d| d.join("model.safetensors").is_file());
    assert!(
        dir.is_some() || std::env::var_os("TOOLNEXUS_REQUIRE_MODEL").is_none(),
        "TOOLNEXUS_REQUIRE_MODEL is set but TOOLNEXUS_MODEL_DIR holds no model"
    );
    dir
}

/// `--precision bf16` refused on a CPU without a bf16 unit: bad usage
/// (exit 2) naming the flag.
pub fn no_bf16_unit(out: &Out) {
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("--precision bf16: local: bf16 needs a CPU"),
        "{}",
        out.stderr
    );
}

/// A file of the shipped assess demo: `demo("questions.json")`,
/// `demo("labels.jsonl")`, ….
pub fn demo(name: &str) -> String {
    format!(
        "{}/../toolnexus/examples/assess/demo.{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// `toolnexus distill` of the demo's labels on the model in `model`, into
/// `dir/student.json`: the student file's path, and what the run printed
/// (it exited 0).
pub fn demo_student(dir: &TempDir, model: &str) -> (String, Out) {
    let student = dir.join("student.json").display().to_string();
    let out = tn(
        dir.path(),
        &[
            "distill",
            "--labels",
            &demo("labels.jsonl"),
            "--questions",
            &demo("questions.json"),
            "--model-dir",
            model,
            "--out",
            &student,
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    (student, out)
}

/// A fresh directory, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "toolnexus-cli-it-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Writes a file and returns its path as a string.
    pub fn write(&self, name: &str, body: &str) -> String {
        let p = self.join(name);
        std::fs::write(&p, body).unwrap();
        p.display().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The binary, with no API key in its environment, run from `cwd`.
pub fn toolnexus(cwd: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_toolnexus"));
    c.args(args)
        .current_dir(cwd)
        .env_remove("TYPESAFE_API_KEY")
        .env_remove("OPENROUTER_API_KEY")
        .stdin(Stdio::null());
    // The binary honours the proxy variables: none from the machine.
    for var in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"] {
        c.env_remove(var).env_remove(var.to_ascii_lowercase());
    }
    // Nor the machine's OpenTelemetry collector: a test that exports names its own.
    for var in [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        "OTEL_SDK_DISABLED",
    ] {
        c.env_remove(var);
    }
    c
}

/// What a finished child printed and exited with.
#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// A child that is killed when dropped.
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs a command to completion within [`DEADLINE`].
pub fn run(mut cmd: Command) -> Out {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    collect(cmd.spawn().expect("spawn toolnexus"))
}

/// Waits (within [`DEADLINE`]) for a child spawned with piped stdout and
/// stderr, and returns what it printed.
pub fn collect(child: Child) -> Out {
    let mut child = Guard(child);
    let mut so = child.0.stdout.take().unwrap();
    let mut se = child.0.stderr.take().unwrap();
    let so = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let se = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    let status = wait(&mut child.0, DEADLINE).expect("toolnexus did not finish in time");
    Out {
        code: status.code().unwrap_or(-1),
        stdout: so.join().unwrap(),
        stderr: se.join().unwrap(),
    }
}

/// Polls a child until it exits or `limit` passes.
pub fn wait(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Runs the binary with `args` from `cwd`.
pub fn tn(cwd: &Path, args: &[&str]) -> Out {
    run(toolnexus(cwd, args))
}

/// Owned arguments (as the helpers below build them) as `&str`s.
pub fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// Runs the binary with owned `args` (as the helpers below build them).
pub fn tn_args(cwd: &Path, args: &[String]) -> Out {
    tn(cwd, &strs(args))
}

/// `batch` of the questions `q` over the states `s` into `out`, then `extra`.
pub fn batch_of(q: &str, s: &str, out: &str, extra: &[&str]) -> Vec<String> {
    ["batch", "--questions", q, "--states", s, "--out", out]
        .iter()
        .chain(extra)
        .map(|a| a.to_string())
        .collect()
}

/// `batch` of `q` over `s` into `out`, asking a System One upstream at
/// `base_url`, then `extra`.
pub fn batch_args(q: &str, s: &str, out: &str, base_url: &str, extra: &[&str]) -> Vec<String> {
    let upstream = ["--style", "systemone", "--base-url", base_url];
    batch_of(q, s, out, &[&upstream[..], extra].concat())
}

/// `batch` over call `bulk` of the tape at `tape`: questions `q`, states
/// `s`, into `out`, then `extra`.
pub fn tape_batch(tape: &str, q: &str, s: &str, out: &str, extra: &[&str]) -> Vec<String> {
    let head = [
        "batch",
        "--style",
        "tape",
        "--tape",
        tape,
        "--call",
        "bulk",
        "--questions",
        q,
        "--states",
        s,
        "--out",
        out,
    ];
    head.iter().chain(extra).map(|a| a.to_string()).collect()
}

/// `assess run` of the tape at `tape` with the questions `q` over the
/// labelled `examples` into `out`, then `extra`.
pub fn assess_tape(tape: &str, q: &str, examples: &str, out: &str, extra: &[&str]) -> Vec<String> {
    let head = [
        "assess",
        "run",
        "--style",
        "tape",
        "--tape",
        tape,
        "--questions",
        q,
        "--examples",
        examples,
        "--out",
        out,
    ];
    head.iter().chain(extra).map(|a| a.to_string()).collect()
}

/// `eval` by a `--cascade` of `student` (over the embedded model in
/// `model`) in front of a tape, then `extra`.
pub fn cascade_eval(cwd: &Path, student: &str, model: &str, extra: &[&str]) -> Out {
    let head = [
        "eval",
        "--cascade",
        "--student",
        student,
        "--model-dir",
        model,
        "--style",
        "tape",
    ];
    tn(cwd, &[&head[..], extra].concat())
}

/// A running `toolnexus serve`, killed on drop.
pub struct Server {
    pub child: Guard,
    /// `http://127.0.0.1:PORT`
    pub url: String,
    pub addr: String,
}

impl Server {
    /// Starts `toolnexus serve --addr 127.0.0.1:0 <args>` and reads the bound address.
    pub fn start(cwd: &Path, args: &[&str]) -> Server {
        Server::start_with(cwd, args, &[])
    }

    /// [`Server::start`] with these environment variables set.
    pub fn start_with(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Server {
        let mut all = vec!["serve", "--addr", "127.0.0.1:0"];
        all.extend_from_slice(args);
        let mut cmd = toolnexus(cwd, &all);
        cmd.envs(env.iter().copied());
        cmd.stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = Guard(cmd.spawn().expect("spawn toolnexus serve"));
        let stdout = child.0.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let first = lines.next().and_then(Result::ok).unwrap_or_default();
            let _ = tx.send(first);
            // Keep draining so the server never blocks on a full pipe.
            for _ in lines {}
        });
        let first = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("serve printed its address");
        let url = first
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
            .trim()
            .to_string();
        let addr = url.trim_start_matches("http://").to_string();
        Server { child, url, addr }
    }

    /// Sends SIGTERM and waits for a graceful exit.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.child.0.id().to_string();
        let ok = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -TERM {pid}");
        wait(&mut self.child.0, DEADLINE).expect("serve stopped after SIGTERM")
    }
}

/// One HTTP/1.1 request over loopback; returns status and body.
pub fn http(addr: &str, method: &str, path: &str, body: &[u8]) -> (u16, String) {
    let r = request(
        addr,
        method,
        path,
        &[("Content-Type", "application/json")],
        body,
    );
    (r.status, r.body)
}

/// What [`request`] got back.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    /// Header lines, names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    /// The first header of this (lower-case) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {:?}", self.body))
    }
}

/// One HTTP/1.1 request with these headers over loopback.
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    s.write_all(head.as_bytes()).unwrap();
    // A server may answer (413) before reading a large body; ignore a reset here.
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .map(|(h, b)| (h.to_string(), b.to_string()))
        .unwrap_or((text.clone(), String::new()));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {text:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Reply {
        status,
        headers,
        body,
    }
}

/// One request an [`Upstream`] received: the library's captured request.
pub use toolnexus::testing::Request as Captured;

/// What an [`Upstream`] answers: status, extra headers, JSON body.
pub type Answer = (u16, Vec<(&'static str, String)>, String);

/// A scripted System One backend on 127.0.0.1:0, every request captured: the
/// library's fake server (`toolnexus::testing`) on a thread of its own, so
/// plain `#[test]`s can use it. Stops when dropped.
pub struct Upstream {
    /// `http://127.0.0.1:PORT/v1`, the library's base URL for it.
    pub base_url: String,
    server: toolnexus::testing::Server,
}

impl Upstream {
    pub fn start(answer: impl Fn(&Captured) -> Answer + Send + Sync + 'static) -> Upstream {
        let server = toolnexus::testing::Server::builder()
            .handler(move |_, got| {
                let (status, headers, body) = answer(got);
                headers.into_iter().fold(
                    toolnexus::testing::Reply::json(status, body),
                    |r, (k, v)| r.with_header(k, &v),
                )
            })
            .start_on_thread();
        Upstream {
            base_url: server.base_url(),
            server,
        }
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<Captured> {
        self.server.requests()
    }
}

/// The single-question set the generated tapes use.
pub fn spam_questions() -> Value {
    json!({"spam": {"type": "noul", "instructions": "Is this unsolicited bulk mail?"}})
}

/// The answer recorded for state `i` of a generated tape.
pub fn spam_p(i: usize) -> f64 {
    (i % 100) as f64 / 100.0
}

/// A tape with `n` recordings under call `bulk`: state `{"n": i}` → noul `spam_p(i)`.
pub fn bulk_tape(path: &Path, n: usize, with_cost: bool) {
    let qs: Questions = questions_from_wire(&spam_questions()).unwrap();
    let tape = Tape::new().with_note("generated for the CLI tests");
    for i in 0..n {
        let mut d = json!({
            "model": "rule-1",
            "answers": {"spam": {"type": "noul", "noul": spam_p(i)}},
            "usage": {"input_tokens": 10, "output_tokens": 1}
        });
        if with_cost {
            d["usage"]["cost"] = json!(0.00002);
        }
        tape.record(TapeEntry {
            call_name: "bulk".into(),
            model: "rule-1".into(),
            state: json!({"n": i}),
            questions: qs.clone(),
            outcome: TapeOutcome::Decision(Decision::from_value(&d).unwrap()),
            request_id: None,
        });
    }
    tape.save(path).unwrap();
}

/// The parsed result lines of a batch out file (its header line left out).
pub fn out_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .filter(|v| v.get("toolnexus").is_none())
        .collect()
}

/// A `batch` over a generated tape: `n` states `{"n": i}` under call `bulk`
/// with the spam question, all written into a test's directory.
pub struct Bulk {
    pub tape: String,
    pub questions: String,
    pub states: String,
}

impl Bulk {
    pub fn new(dir: &TempDir, n: usize) -> Bulk {
        let tape = dir.join("bulk.tape.json");
        bulk_tape(&tape, n, true);
        let states: String = (0..n).map(|i| format!("{{\"n\": {i}}}\n")).collect();
        Bulk {
            tape: tape.display().to_string(),
            questions: dir.write("bulk.questions.json", &spam_questions().to_string()),
            states: dir.write("bulk.states.jsonl", &states),
        }
    }

    /// `batch` over the tape into `out`, then `extra`.
    pub fn batch(&self, out: &str, extra: &[&str]) -> Vec<String> {
        tape_batch(&self.tape, &self.questions, &self.states, out, extra)
    }
}
