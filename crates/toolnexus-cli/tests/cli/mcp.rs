//! `toolnexus mcp`: the MCP server driven over stdio with JSON-RPC lines, as an
//! agent's client drives it.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolnexus::classifier::{Decision, questions_from_wire};
use toolnexus::judge::{Tape, TapeEntry, TapeOutcome};

use crate::support::{Guard, TempDir, real_model, toolnexus, wait};

/// How long any one MCP session may take before the test gives up.
const LIMIT: Duration = Duration::from_secs(30);

/// The state every recorded call is about.
const STATE: &str = "WIN A FREE CRUISE!!! Reply now with your card number.";

/// A tape under call `mcp` answering the questions the tools below ask.
fn mcp_tape(path: &Path) {
    let tape = Tape::new().with_note("generated for the CLI tests");
    let add = |questions: Value, decision: Value| {
        tape.record(TapeEntry {
            call_name: "mcp".into(),
            model: "rule-1".into(),
            state: json!(STATE),
            questions: questions_from_wire(&questions).unwrap(),
            outcome: TapeOutcome::Decision(Decision::from_value(&decision).unwrap()),
            request_id: None,
        });
    };
    add(
        json!({"answer": {"type": "noul", "instructions": "Is this unsolicited bulk mail?"}}),
        json!({"model": "rule-1", "answers": {"answer": {"type": "noul", "noul": 0.93}}}),
    );
    add(
        json!({"answer": {"type": "choice", "instructions": "Which desk owns this?",
            "criteria": {"fraud": "someone is trying to steal money or data", "sales": "a real offer"}}}),
        json!({"model": "rule-1", "answers": {"answer": {"type": "choice", "choice": "fraud",
            "probabilities": {"fraud": 0.9, "sales": 0.1}, "confidence": 0.8}}}),
    );
    add(
        json!({"answer": {"type": "score", "instructions": "How risky is replying?",
            "criteria": ["harmless", "annoying", "dangerous"]}}),
        json!({"model": "rule-1", "answers": {"answer": {"type": "score", "score": 1.8,
            "legend": {"0": "harmless", "1": "annoying", "2": "dangerous"},
            "probabilities": {"0": 0.05, "1": 0.1, "2": 0.85}, "confidence": 0.7}}}),
    );
    add(
        json!({
            "spam": {"type": "noul", "instructions": "Is this unsolicited bulk mail?"},
            "phishing": {"type": "noul", "instructions": "Does it ask for credentials or card data?"}
        }),
        json!({"model": "rule-1", "answers": {
            "spam": {"type": "noul", "noul": 0.93},
            "phishing": {"type": "noul", "noul": 0.97}
        }}),
    );
    tape.save(path).unwrap();
}

/// A running `toolnexus mcp`: frames in on stdin, frames out line by line.
struct Session {
    child: Guard,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    stderr: std::thread::JoinHandle<String>,
    next_id: u64,
}

impl Session {
    fn start(cwd: &Path, args: &[&str]) -> Session {
        Session::start_with(cwd, args, &[])
    }

    fn start_with(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Session {
        let mut all = vec!["mcp"];
        all.extend_from_slice(args);
        let mut cmd = toolnexus(cwd, &all);
        cmd.envs(env.iter().copied());
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = Guard(cmd.spawn().expect("spawn toolnexus mcp"));
        let stdin = child.0.stdin.take();
        let stdout = child.0.stdout.take().unwrap();
        let mut stderr = child.0.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
            s
        });
        Session {
            child,
            stdin,
            lines,
            stderr,
            next_id: 1,
        }
    }

    fn send(&mut self, frame: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{frame}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends one line as it is, whatever it holds.
    fn send_raw(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next frame on stdout: every line must be one JSON-RPC 2.0 message.
    fn frame(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(LIMIT)
            .expect("a frame from toolnexus mcp in time");
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carries JSON-RPC frames only, got {line:?}: {e}"));
        assert_eq!(v["jsonrpc"], "2.0", "{line}");
        v
    }

    /// Sends a request and returns its response (skipping notifications).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let f = self.frame();
            if f["id"] == json!(id) {
                return f;
            }
            assert!(f.get("id").is_none(), "a response to another request: {f}");
        }
    }

    fn initialize(&mut self) -> Value {
        let r = self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "cli-test", "version": "0"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        r
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let r = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert!(
            r.get("error").is_none(),
            "a tool result, not a protocol error: {r}"
        );
        r["result"].clone()
    }

    /// Closes stdin and returns the exit code and stderr; nothing more may
    /// appear on stdout.
    fn finish(mut self) -> (i32, String) {
        drop(self.stdin.take());
        let status = wait(&mut self.child.0, LIMIT).expect("mcp ends when stdin closes");
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(200)) {
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carries frames only, got {line:?}: {e}"));
            assert_eq!(v["jsonrpc"], "2.0");
        }
        (status.code().unwrap_or(-1), self.stderr.join().unwrap())
    }
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn is_error(result: &Value) -> bool {
    result["isError"] == json!(true)
}

#[test]
fn every_tool_answers_over_stdio_and_the_server_ends_with_stdin() {
    let dir = TempDir::new("mcp-tools");
    let tape = dir.join("mcp.tape.json");
    mcp_tape(&tape);
    let started = Instant::now();
    let mut s = Session::start(
        dir.path(),
        &["--style", "tape", "--tape", tape.to_str().unwrap()],
    );

    let init = s.initialize();
    assert_eq!(init["result"]["serverInfo"]["name"], "toolnexus", "{init}");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );

    let listed = s.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().expect("tools").clone();
    let by_name = |n: &str| {
        tools
            .iter()
            .find(|t| t["name"] == n)
            .unwrap_or_else(|| panic!("no tool {n}: {listed}"))
            .clone()
    };
    for (name, required) in [
        ("noul", vec!["state", "instructions"]),
        ("choice", vec!["state", "instructions", "options"]),
        ("score", vec!["state", "instructions", "levels"]),
        ("evaluate", vec!["state", "questions"]),
        ("guard", vec!["tool_name", "tool_input"]),
    ] {
        let t = by_name(name);
        assert!(
            t["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{t}"
        );
        let schema = &t["inputSchema"];
        assert_eq!(schema["type"], "object", "{t}");
        assert_eq!(schema["required"], json!(required), "{t}");
    }
    assert_eq!(tools.len(), 5, "{listed}");
    let score = by_name("score");
    assert_eq!(score["inputSchema"]["properties"]["levels"]["minItems"], 2);
    assert_eq!(score["inputSchema"]["properties"]["levels"]["maxItems"], 10);
    let noul = by_name("noul");
    assert_eq!(
        noul["inputSchema"]["properties"]["criteria"]["required"],
        json!(["true", "false"])
    );

    let r = s.call(
        "noul",
        json!({"state": STATE, "instructions": "Is this unsolicited bulk mail?"}),
    );
    assert!(!is_error(&r), "{r}");
    assert_eq!(
        r["structuredContent"]["answers"]["answer"],
        json!({"type": "noul", "noul": 0.93})
    );
    assert_eq!(r["structuredContent"]["model"], "rule-1");
    assert_eq!(text_of(&r), "answer: true (p=0.93)");

    let r = s.call(
        "choice",
        json!({"state": STATE, "instructions": "Which desk owns this?",
               "options": {"fraud": "someone is trying to steal money or data", "sales": "a real offer"}}),
    );
    assert!(!is_error(&r), "{r}");
    assert_eq!(
        r["structuredContent"]["answers"]["answer"]["choice"],
        "fraud"
    );
    assert!(text_of(&r).starts_with("answer: fraud (p=0.90"), "{r}");

    let r = s.call(
        "score",
        json!({"state": STATE, "instructions": "How risky is replying?",
               "levels": ["harmless", "annoying", "dangerous"]}),
    );
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["answers"]["answer"]["score"], 1.8);
    assert!(text_of(&r).contains("dangerous"), "{r}");

    let r = s.call(
        "evaluate",
        json!({"state": STATE, "questions": {
            "spam": {"type": "noul", "instructions": "Is this unsolicited bulk mail?"},
            "phishing": {"type": "noul", "instructions": "Does it ask for credentials or card data?"}
        }}),
    );
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["answers"]["phishing"]["noul"], 0.97);
    assert_eq!(text_of(&r), "phishing: true (p=0.97); spam: true (p=0.93)");

    // The guard judges a tool call by the built-in policy: a rule denies this
    // one without a model.
    let r = s.call(
        "guard",
        json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}, "cwd": "/tmp"}),
    );
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["verdict"], "deny", "{r}");
    let reason = r["structuredContent"]["reason"].as_str().unwrap_or("");
    assert!(reason.contains("rule rm-recursive-outside"), "{r}");

    // Bad calls: tool errors naming the argument.
    for (tool, args, says) in [
        (
            "noul",
            json!({"instructions": "Spam?"}),
            "noul: argument \"state\" is required",
        ),
        (
            "noul",
            json!({"state": "x", "instructions": "Spam?", "instructionz": "typo"}),
            "noul: unknown argument \"instructionz\"",
        ),
        (
            "noul",
            json!({"state": 42, "instructions": "Spam?"}),
            "noul: argument \"state\": a state is a string, an object or an array, not a number",
        ),
        (
            "score",
            json!({"state": "x", "instructions": "Risk?", "levels": ["only one"]}),
            "a score needs 2..=10 levels, got 1",
        ),
        (
            "choice",
            json!({"state": "x", "instructions": "Desk?", "options": ["a", "b"]}),
            "choice: argument \"options\" is an object",
        ),
        (
            "evaluate",
            json!({"state": "x", "questions": {"q": {"type": "noul", "instructionz": "typo"}}}),
            "question \"q\": unknown field \"instructionz\"",
        ),
        (
            "guard",
            json!({"tool_name": "Bash", "tool_input": "ls"}),
            "guard: argument \"tool_input\" is an object",
        ),
        // A replay miss is an evaluation failure: a tool error too.
        (
            "noul",
            json!({"state": "never recorded", "instructions": "Spam?"}),
            "noul: tape: no recorded decision",
        ),
    ] {
        let r = s.call(tool, args.clone());
        assert!(is_error(&r), "{tool} {args}: {r}");
        assert!(text_of(&r).contains(says), "{tool} {args}: {r}");
    }

    // An unknown tool is the protocol's own error, and the session goes on.
    let r = s.request("tools/call", json!({"name": "vote", "arguments": {}}));
    assert!(r.get("error").is_some(), "{r}");
    let r = s.request("tools/list", json!({}));
    assert!(r["result"]["tools"].is_array(), "{r}");

    let (code, stderr) = s.finish();
    assert_eq!(code, 0, "exit 0 when stdin closes; stderr: {stderr}");
    assert!(stderr.contains("mcp: serving on stdio"), "{stderr}");
    assert!(started.elapsed() < LIMIT * 2, "bounded");
}

#[test]
fn thresholds_add_verdicts_to_the_structured_content() {
    let dir = TempDir::new("mcp-thresholds");
    let tape = dir.join("mcp.tape.json");
    mcp_tape(&tape);
    let thresholds = dir.write(
        "thresholds.json",
        r#"{"format": "toolnexus.thresholds", "version": 1, "bands": {"answer": {"low": 0.2, "high": 0.8}}}"#,
    );
    let mut s = Session::start(
        dir.path(),
        &[
            "--style",
            "tape",
            "--tape",
            tape.to_str().unwrap(),
            "--thresholds",
            &thresholds,
        ],
    );
    s.initialize();
    let r = s.call(
        "noul",
        json!({"state": STATE, "instructions": "Is this unsolicited bulk mail?"}),
    );
    assert!(!is_error(&r), "{r}");
    assert_eq!(
        r["structuredContent"]["verdicts"]["answer"]["sure"], true,
        "{r}"
    );
    assert_eq!(
        r["structuredContent"]["verdicts"]["answer"]["verdict"], "yes",
        "{r}"
    );
    let (code, stderr) = s.finish();
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn no_style_no_key_and_no_model_is_exit_2_naming_the_fetch() {
    let dir = TempDir::new("mcp-nomodel");
    let empty = dir.join("no-model");
    std::fs::create_dir_all(&empty).unwrap();
    let mut cmd = toolnexus(dir.path(), &["mcp"]);
    cmd.env("TOOLNEXUS_MODEL_DIR", &empty);
    let out = crate::support::run(cmd);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stdout.is_empty(), "stdout carries frames only: {out:?}");
    assert!(out.stderr.contains("toolnexus model fetch"), "{out:?}");
    assert!(out.stderr.contains("--style"), "{out:?}");
    assert_eq!(out.stderr.trim().lines().count(), 1, "{out:?}");
}

#[test]
fn stdin_closed_before_initialize_is_a_clean_exit() {
    let dir = TempDir::new("mcp-eof");
    let tape = dir.join("mcp.tape.json");
    mcp_tape(&tape);
    let s = Session::start(
        dir.path(),
        &["--style", "tape", "--tape", tape.to_str().unwrap()],
    );
    let (code, stderr) = s.finish();
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn cache_stores_what_the_tools_decided() {
    let dir = TempDir::new("mcp-cache");
    let tape = dir.join("mcp.tape.json");
    mcp_tape(&tape);
    let cache = dir.join("decisions.db");
    let mut s = Session::start(
        dir.path(),
        &[
            "--style",
            "tape",
            "--tape",
            tape.to_str().unwrap(),
            "--cache",
            cache.to_str().unwrap(),
        ],
    );
    s.initialize();
    let r = s.call(
        "noul",
        json!({"state": STATE, "instructions": "Is this unsolicited bulk mail?"}),
    );
    assert!(!is_error(&r), "{r}");
    let (code, stderr) = s.finish();
    assert_eq!(code, 0, "{stderr}");
    let stats = crate::support::tn(dir.path(), &["cache", "stats", cache.to_str().unwrap()]);
    assert_eq!(stats.code, 0, "{stats:?}");
    assert!(stats.stdout.contains("1 entries"), "{stats:?}");
}

#[test]
fn a_failing_backend_is_a_tool_error_without_the_key() {
    const KEY: &str = "sk-mcp-test-0123456789abcdef";
    let dir = TempDir::new("mcp-upstream");
    // The upstream echoes what it was sent, key included, in its error body.
    let up = crate::support::Upstream::start(|got| {
        let auth = got
            .headers
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        (
            500,
            vec![],
            json!({"detail": format!("boom: {auth}")}).to_string(),
        )
    });
    let mut s = Session::start_with(
        dir.path(),
        &[
            "--style",
            "systemone",
            "--base-url",
            &up.base_url,
            "--retries",
            "0",
        ],
        &[("TYPESAFE_API_KEY", KEY)],
    );
    s.initialize();
    let r = s.call("noul", json!({"state": "hello", "instructions": "Spam?"}));
    assert!(is_error(&r), "{r}");
    assert!(text_of(&r).starts_with("noul: "), "{r}");
    assert!(!r.to_string().contains(KEY), "the key leaked: {r}");
    assert!(!up.requests().is_empty(), "the upstream was asked");
    let (code, stderr) = s.finish();
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains(KEY), "the key leaked to stderr: {stderr}");
}

#[test]
fn with_nothing_named_the_embedded_model_serves() {
    let dir = TempDir::new("mcp-local");
    let model = dir.join("model");
    toolnexus_local::tiny_model_for_tests(&model).unwrap();
    let mut s = Session::start_with(
        dir.path(),
        &[],
        &[("TOOLNEXUS_MODEL_DIR", model.to_str().unwrap())],
    );
    s.initialize();
    let r = s.call(
        "choice",
        json!({"state": "my parcel is late", "instructions": "Which desk owns this?",
               "options": {"shipping": "a parcel is late or lost", "billing": "money moved"}}),
    );
    assert!(!is_error(&r), "{r}");
    assert_eq!(
        r["structuredContent"]["model"], "local-minilm-zero-shot",
        "{r}"
    );
    let p = &r["structuredContent"]["answers"]["answer"]["probabilities"];
    assert!(p["shipping"].is_number() && p["billing"].is_number(), "{r}");
    // Answered on this machine: an explicit $0, and it says so.
    let usage = &r["structuredContent"]["usage"];
    assert_eq!(
        (&usage["cost"], &usage["cost_source"]),
        (&json!(0.0), &json!("local")),
        "{r}"
    );
    let (code, stderr) = s.finish();
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("style local"), "{stderr}");
}

#[test]
fn the_guard_tool_judges_on_the_model_directory_given() {
    let dir = TempDir::new("mcp-guard-model");
    let tape = dir.join("mcp.tape.json");
    mcp_tape(&tape);
    let models = dir.join("no-model-here");
    let mut s = Session::start(
        dir.path(),
        &[
            "--style",
            "tape",
            "--tape",
            tape.to_str().unwrap(),
            "--model-dir",
            models.to_str().unwrap(),
        ],
    );
    s.initialize();
    // No rule settles `ls`: the guard's judge is asked, on --model-dir, which
    // holds no model: the policy's on_error (ask) names that directory.
    let r = s.call(
        "guard",
        json!({"tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": "/tmp"}),
    );
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["verdict"], "ask", "{r}");
    let reason = r["structuredContent"]["reason"].as_str().unwrap_or("");
    assert!(reason.contains("no-model-here"), "{r}");
}

#[test]
fn the_guard_tool_judges_in_the_precision_asked() {
    let Some(model) = real_model() else { return };
    use toolnexus_local::{Precision, resolve_precision};
    if resolve_precision(Precision::Bf16).is_err() {
        eprintln!("skipped: this CPU has no bf16 unit");
        return;
    }
    let dir = TempDir::new("mcp-guard-precision");
    // The guard's own judge: its answers in bf16 are near f32's, not f32's
    // to the letter (they were, while the judge ignored --precision).
    let answers = |precision: &str| {
        let mut s = Session::start_with(
            dir.path(),
            &["--precision", precision],
            &[("TOOLNEXUS_MODEL_DIR", model.to_str().unwrap())],
        );
        s.initialize();
        let r = s.call(
            "guard",
            json!({"tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": "/tmp"}),
        );
        assert!(!is_error(&r), "{r}");
        let answers = r["structuredContent"]["detail"]["answers"].clone();
        assert!(answers.as_object().is_some_and(|a| !a.is_empty()), "{r}");
        answers
    };
    let (f32, bf16) = (answers("f32"), answers("bf16"));
    assert_ne!(
        f32, bf16,
        "--precision bf16 did not reach the guard's judge"
    );
    for (key, p) in f32.as_object().unwrap() {
        let q = &bf16[key];
        let gap = (p.as_f64().unwrap() - q.as_f64().unwrap()).abs();
        assert!(gap < 1e-2, "{key}: f32 {p}, bf16 {q}");
    }
}

/// The error frame the server sends for a line: its id and code.
fn error_of(f: &Value) -> (Value, i64) {
    assert!(
        f.get("result").is_none(),
        "an error frame, not a result: {f}"
    );
    (f["id"].clone(), f["error"]["code"].as_i64().unwrap_or(0))
}

#[test]
fn every_bad_frame_gets_a_json_rpc_error_and_the_session_goes_on() {
    let dir = TempDir::new("mcp-frames");
    let tape = dir.join("mcp.tape.json");
    mcp_tape(&tape);
    let mut s = Session::start(
        dir.path(),
        &["--style", "tape", "--tape", tape.to_str().unwrap()],
    );
    s.initialize();

    // Not JSON: a parse error, id null (it cannot be known).
    s.send_raw(b"{\"jsonrpc\": \"2.0\", \"id\": 5, \"method\": ");
    let f = s.frame();
    assert_eq!(error_of(&f), (Value::Null, -32700), "{f}");

    // Params that do not fit a known method: invalid params, with the id
    // (this was -32601, method not found).
    for (id, params) in [
        (11, json!({"name": "noul", "arguments": 5})),
        (12, json!({"arguments": {}})),
        (13, json!("noul")),
    ] {
        s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}));
        let f = s.frame();
        assert_eq!(error_of(&f), (json!(id), -32602), "{f}");
        assert!(
            f["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("tools/call")),
            "{f}"
        );
    }
    // Not JSON-RPC 2.0: invalid request, with the id it gave (it had null).
    s.send(&json!({"jsonrpc": "1.0", "id": 14, "method": "ping"}));
    let f = s.frame();
    assert_eq!(error_of(&f), (json!(14), -32600), "{f}");
    // An unknown method stays method not found.
    s.send(&json!({"jsonrpc": "2.0", "id": 15, "method": "nope"}));
    let f = s.frame();
    assert_eq!(error_of(&f), (json!(15), -32601), "{f}");

    // Over the 16 MiB frame limit: an error naming the limit, with the id
    // its first bytes carry (this was silence: the client waited forever).
    let big = json!({"jsonrpc": "2.0", "id": 16, "method": "tools/call",
        "params": {"name": "noul", "arguments": {"state": "a".repeat(17 << 20), "instructions": "Spam?"}}});
    s.send_raw(big.to_string().as_bytes());
    let f = s.frame();
    assert_eq!(error_of(&f), (json!(16), -32600), "{f}");
    assert!(
        f["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("16 MiB")),
        "{f}"
    );

    // The session goes on.
    let r = s.call(
        "noul",
        json!({"state": STATE, "instructions": "Is this unsolicited bulk mail?"}),
    );
    assert!(!is_error(&r), "{r}");
    assert_eq!(
        r["structuredContent"]["answers"]["answer"]["noul"],
        json!(0.93),
        "{r}"
    );

    // A bad line just before the client hangs up is still answered.
    s.send_raw(b"not json");
    drop(s.stdin.take());
    let f = s.frame();
    assert_eq!(error_of(&f), (Value::Null, -32700), "{f}");
    let (code, stderr) = s.finish();
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("parse error"), "{stderr}");
}
