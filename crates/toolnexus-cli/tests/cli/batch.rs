//! `toolnexus batch`: per-line results, per-line errors, and resume after a kill.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{
    Guard, Server, TempDir, bulk_tape, out_lines, run, spam_p, spam_questions, tn, toolnexus,
};

/// Input: states 0..n as lines 1..=n, then a bad-JSON line, then a state the tape lacks.
fn states_file(dir: &TempDir, n: usize) -> (String, usize) {
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&format!("{{\"n\": {i}}}\n"));
    }
    text.push_str("{\"n\": oops}\n");
    text.push_str("{\"n\": 100000}\n");
    (dir.write("in.jsonl", &text), n + 2)
}

/// Every input line appears exactly once, with the right content.
fn check_complete(out: &[Value], n: usize) {
    let mut seen: BTreeMap<u64, &Value> = BTreeMap::new();
    for v in out {
        let line = v["line"].as_u64().expect("a line number");
        assert!(seen.insert(line, v).is_none(), "line {line} written twice");
    }
    assert_eq!(seen.len(), n + 2, "every input line once");
    for i in 0..n {
        let v = seen[&(i as u64 + 1)];
        assert_eq!(
            v["decision"]["answers"]["spam"]["noul"].as_f64(),
            Some(spam_p(i)),
            "{v}"
        );
    }
    let bad = seen[&(n as u64 + 1)]["error"].as_str().unwrap();
    assert!(
        bad.starts_with(&format!("line {}: invalid JSON at column", n + 1)),
        "{bad}"
    );
    let miss = seen[&(n as u64 + 2)]["error"].as_str().unwrap();
    assert!(miss.contains("HTTP 404"), "{miss}");
}

#[test]
fn a_killed_batch_resumes_without_loss_or_repeats() {
    let dir = TempDir::new("batch-resume");
    let n = 40;
    let tape = dir.join("bulk.tape.json");
    bulk_tape(&tape, n, true);
    let tape = tape.display().to_string();
    // A slow System One backend: every answer waits 150 ms.
    let server = Server::start(
        dir.path(),
        &[
            "--style",
            "tape",
            "--tape",
            &tape,
            "--call",
            "bulk",
            "--delay-ms",
            "150",
        ],
    );
    let base = format!("{}/v1", server.url);
    let q = dir.write("q.json", &spam_questions().to_string());
    let (states, _) = states_file(&dir, n);
    let out_path = dir.join("out.jsonl");
    let out = out_path.display().to_string();
    let args = [
        "batch",
        "--questions",
        &q,
        "--states",
        &states,
        "--out",
        &out,
        "--concurrency",
        "4",
        "--style",
        "systemone",
        "--base-url",
        &base,
        "--retries",
        "-1",
    ];

    // First run: kill it once some, but not all, results are written.
    let mut cmd = toolnexus(dir.path(), &args);
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = Guard(cmd.spawn().unwrap());
    let start = Instant::now();
    while out_lines(&out_path).len() < 8 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the batch wrote nothing"
        );
        assert!(
            child.0.try_wait().unwrap().is_none(),
            "the batch ended early"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    let before = out_lines(&out_path).len();
    assert!(before < n + 2, "killed mid-run ({before} written)");

    // A kill during a write leaves a torn final line: simulate one.
    let mut torn = std::fs::read(&out_path).unwrap();
    torn.extend_from_slice(b"{\"line\":39,\"decis");
    std::fs::write(&out_path, torn).unwrap();

    // Second run, same arguments.
    let again = run(toolnexus(dir.path(), &args));
    assert_eq!(again.code, 3, "two lines failed: {again:?}");
    assert!(
        again.stderr.contains("dropped a torn final line"),
        "{}",
        again.stderr
    );
    let done = n + 2 - before;
    assert!(
        again.stdout.contains(&format!(
            "batch: done {}, failed 2, skipped {before} as already done",
            done - 2
        )) || again
            .stdout
            .contains(&format!("skipped {before} as already done")),
        "{}",
        again.stdout
    );
    check_complete(&out_lines(&out_path), n);

    // A third run has nothing left to do.
    let third = run(toolnexus(dir.path(), &args));
    assert_eq!(third.code, 0, "{third:?}");
    assert!(
        third.stdout.contains(&format!(
            "batch: done 0, failed 0, skipped {} as already done",
            n + 2
        )),
        "{}",
        third.stdout
    );
    check_complete(&out_lines(&out_path), n);
}

#[test]
fn a_rate_limited_batch_on_a_tape_writes_every_line() {
    let dir = TempDir::new("batch-rpm");
    let n = 6;
    let tape = dir.join("bulk.tape.json");
    bulk_tape(&tape, n, false);
    let tape = tape.display().to_string();
    let q = dir.write("q.json", &spam_questions().to_string());
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&format!("{{\"n\": {i}}}\n"));
    }
    let states = dir.write("in.jsonl", &text);
    let out = tn(
        dir.path(),
        &[
            "batch",
            "--questions",
            &q,
            "--states",
            &states,
            "--out",
            "out.jsonl",
            "--tape",
            &tape,
            "--rpm",
            "1200",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("batch: done 6, failed 0, skipped 0"),
        "{}",
        out.stdout
    );
    assert!(
        out.stderr.contains("batch: 6/6 (0 failed"),
        "plain progress when not a terminal: {}",
        out.stderr
    );
    let lines = out_lines(&dir.join("out.jsonl"));
    assert_eq!(lines.len(), n);
    assert!(
        lines
            .iter()
            .all(|v| v["decision"]["usage"].get("cost").is_none())
    );
}
