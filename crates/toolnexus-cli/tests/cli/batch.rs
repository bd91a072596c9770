//! `toolnexus batch`: per-line results, per-line errors, and resume after a kill.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{
    Guard, Server, TempDir, batch_args, batch_of, bulk_tape, out_lines, run, spam_p,
    spam_questions, strs, tape_batch, tn_args, toolnexus,
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
    let args = batch_args(
        &q,
        &states,
        &out,
        &base,
        &["--concurrency", "4", "--retries", "-1"],
    );

    // First run: kill it once some, but not all, results are written.
    let mut cmd = toolnexus(dir.path(), &strs(&args));
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
    let again = run(toolnexus(dir.path(), &strs(&args)));
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

    // A third run has nothing left to do, but the file still holds the two
    // error lines: that is still a failed batch.
    let third = run(toolnexus(dir.path(), &strs(&args)));
    assert_eq!(third.code, 3, "{third:?}");
    assert!(
        third.stdout.contains(&format!(
            "batch: done 0, failed 0, skipped {} as already done",
            n + 2
        )) && third
            .stdout
            .contains("which holds 2 error lines: rerun with --rerun-errors"),
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
    let out = tn_args(
        dir.path(),
        &batch_of(
            &q,
            &states,
            "out.jsonl",
            &["--tape", &tape, "--rpm", "1200"],
        ),
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

// ---------------------------------------------------------------------------
// The out file: only ever our own, one run at a time, errors reported.

/// The System One answer for state `{"n": n}`.
fn answer_for(n: u64) -> String {
    format!(
        r#"{{"model":"jev-1.13","answers":{{"spam":{{"type":"noul","noul":{}}}}},"usage":{{"input_tokens":9,"output_tokens":1}}}}"#,
        (n % 10) as f64 / 10.0
    )
}

/// A System One upstream answering every state after `delay`.
fn slow_upstream(delay: Duration) -> toolnexus::testing::Server {
    use toolnexus::testing::{Reply, Server as Fake};
    Fake::builder()
        .handler(move |_, got| {
            let n = got.json()["state"]["n"].as_u64().unwrap_or(0);
            Reply::json(200, answer_for(n)).delayed(delay)
        })
        .start_on_thread()
}

/// `{"n": 0}` … `{"n": n-1}`, one per line.
fn plain_states(n: usize) -> String {
    (0..n).map(|i| format!("{{\"n\": {i}}}\n")).collect()
}

/// `batch` against a System One base URL, no retries, no progress, then
/// `extra`.
fn live_args(base: &str, q: &str, states: &str, out: &str, extra: &[&str]) -> Vec<String> {
    let quiet = ["--retries", "-1", "--no-progress"];
    batch_args(q, states, out, base, &[&quiet[..], extra].concat())
}

/// The input lines a batch out file answers, each once, and how many are errors.
fn answered(path: &std::path::Path) -> (Vec<u64>, usize) {
    let lines = out_lines(path);
    let mut seen: Vec<u64> = lines.iter().map(|v| v["line"].as_u64().unwrap()).collect();
    let errors = lines.iter().filter(|v| v.get("error").is_some()).count();
    seen.sort_unstable();
    let mut unique = seen.clone();
    unique.dedup();
    assert_eq!(seen, unique, "an input line answered twice");
    (seen, errors)
}

#[test]
fn a_foreign_out_file_is_refused_and_left_byte_for_byte() {
    let dir = TempDir::new("batch-foreign");
    let n = 3;
    let tape = dir.join("bulk.tape.json");
    bulk_tape(&tape, n, false);
    let tape = tape.display().to_string();
    let q = dir.write("q.json", &spam_questions().to_string());
    let states = dir.write("in.jsonl", &plain_states(n));
    let foreign: &[(&str, &[u8])] = &[
        ("hello.txt", b"hello"),
        ("blank.txt", b"\n\n"),
        ("spaces.txt", b"   "),
        ("notes.jsonl", b"{\"line\": 1, \"note\": \"mine\"}\n"),
        (
            "old.jsonl",
            b"{\"line\":1,\"error\":\"x\"}\n{\"line\":2,\"deci",
        ),
        ("object.json", b"{\"toolnexus\": \"tape\"}\n"),
    ];
    for (name, body) in foreign {
        let path = dir.join(name);
        std::fs::write(&path, body).unwrap();
        let shown = path.display().to_string();
        for extra in [&[][..], &["--restart"][..]] {
            let args = batch_of(
                &q,
                &states,
                &shown,
                &[&["--tape", &tape][..], extra].concat(),
            );
            let out = tn_args(dir.path(), &args);
            assert_eq!(out.code, 2, "{name} {extra:?}: {out:?}");
            assert!(out.stderr.contains(&shown), "{name}: {}", out.stderr);
            assert!(
                out.stderr.contains("left untouched"),
                "{name}: {}",
                out.stderr
            );
            assert_eq!(
                std::fs::read(&path).unwrap(),
                *body,
                "{name} {extra:?}: changed"
            );
        }
    }

    // A directory is named as one.
    std::fs::create_dir(dir.join("results")).unwrap();
    let out = tn_args(
        dir.path(),
        &batch_of(&q, &states, "results", &["--tape", &tape]),
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("--out results: is a directory"),
        "{}",
        out.stderr
    );

    // --out naming the --states file, however spelled.
    let before = std::fs::read(dir.join("in.jsonl")).unwrap();
    let out = tn_args(
        dir.path(),
        &batch_of(&q, &states, "./in.jsonl", &["--tape", &tape]),
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("is the --states input"),
        "{}",
        out.stderr
    );
    assert_eq!(std::fs::read(dir.join("in.jsonl")).unwrap(), before);
}

#[test]
fn resume_refuses_changed_inputs_unless_restart() {
    let dir = TempDir::new("batch-fingerprint");
    let n = 4;
    let tape = dir.join("bulk.tape.json");
    bulk_tape(&tape, n + 1, false);
    let tape = tape.display().to_string();
    let q = dir.write("q.json", &spam_questions().to_string());
    let states = dir.write("in.jsonl", &plain_states(n));
    let args = |extra: &[&str]| {
        let tape = ["--tape", tape.as_str(), "--no-progress"];
        tn_args(
            dir.path(),
            &batch_of(&q, &states, "out.jsonl", &[&tape[..], extra].concat()),
        )
    };
    let first = args(&[]);
    assert_eq!(first.code, 0, "{first:?}");
    let out_path = dir.join("out.jsonl");
    let written = std::fs::read(&out_path).unwrap();
    let header: Value =
        serde_json::from_slice(written.split(|b| *b == b'\n').next().unwrap()).unwrap();
    assert_eq!(header["toolnexus"], "batch", "{header}");
    assert_eq!(header["version"], 1, "{header}");
    for key in ["states", "questions"] {
        assert!(
            header["fingerprint"][key]
                .as_str()
                .is_some_and(|s| s.starts_with("sha256:") && s.len() == 71),
            "{header}"
        );
    }
    assert_eq!(header["fingerprint"]["style"], "tape", "{header}");
    // The states digest is the one `sha256sum` prints, where it is installed.
    if let Ok(sum) = std::process::Command::new("sha256sum")
        .arg(&states)
        .output()
    {
        let hex = String::from_utf8_lossy(&sum.stdout);
        let hex = hex.split_whitespace().next().unwrap_or_default();
        assert_eq!(header["fingerprint"]["states"], format!("sha256:{hex}"));
    }

    // The states file changed: refused, untouched.
    std::fs::write(dir.join("in.jsonl"), plain_states(n + 1)).unwrap();
    let changed = args(&[]);
    assert_eq!(changed.code, 2, "{changed:?}");
    assert!(
        changed.stderr.contains("the --states file changed")
            && changed.stderr.contains("--restart"),
        "{}",
        changed.stderr
    );
    assert_eq!(std::fs::read(&out_path).unwrap(), written);

    // The questions changed too: both are named.
    let reworded = serde_json::json!({"spam": {"type": "noul", "instructions": "Is this junk?"}});
    std::fs::write(dir.join("q.json"), reworded.to_string()).unwrap();
    let changed = args(&[]);
    assert_eq!(changed.code, 2, "{changed:?}");
    assert!(
        changed.stderr.contains("the questions changed"),
        "{}",
        changed.stderr
    );
    assert_eq!(std::fs::read(&out_path).unwrap(), written);
    std::fs::write(dir.join("q.json"), spam_questions().to_string()).unwrap();

    // --restart starts our own file over for the new states.
    let restarted = args(&["--restart"]);
    assert_eq!(restarted.code, 0, "{restarted:?}");
    let (lines, errors) = answered(&out_path);
    assert_eq!(lines, (1..=n as u64 + 1).collect::<Vec<_>>());
    assert_eq!(errors, 0);
    let again = args(&[]);
    assert_eq!(again.code, 0, "{again:?}");
    assert!(
        again
            .stdout
            .contains(&format!("skipped {} as already done", n + 1)),
        "{}",
        again.stdout
    );
}

#[test]
fn two_batches_on_one_out_file_cannot_both_run() {
    let dir = TempDir::new("batch-lock");
    let n = 12;
    let up = slow_upstream(Duration::from_millis(250));
    let base = up.base_url();
    let q = dir.write("q.json", &spam_questions().to_string());
    let states = dir.write("in.jsonl", &plain_states(n));
    let out_path = dir.join("out.jsonl");
    let out = out_path.display().to_string();
    let args = live_args(&base, &q, &states, &out, &["--concurrency", "1"]);

    let mut first = toolnexus(dir.path(), &strs(&args));
    first
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut first = Guard(first.spawn().unwrap());
    let start = Instant::now();
    while out_lines(&out_path).is_empty() {
        assert!(start.elapsed() < Duration::from_secs(60), "nothing written");
        assert!(first.0.try_wait().unwrap().is_none(), "ended early");
        std::thread::sleep(Duration::from_millis(10));
    }
    let second = tn_args(dir.path(), &args);
    assert_eq!(second.code, 2, "{second:?}");
    assert!(
        second.stderr.contains(&out) && second.stderr.contains("another batch"),
        "{}",
        second.stderr
    );
    let status = crate::support::wait(&mut first.0, Duration::from_secs(60)).unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(up.requests().len(), n, "no state asked twice");
    let (lines, errors) = answered(&out_path);
    assert_eq!(lines, (1..=n as u64).collect::<Vec<_>>());
    assert_eq!(errors, 0);
}

#[test]
fn error_lines_fail_every_run_until_rerun_errors_asks_them_again() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = TempDir::new("batch-errors");
    let n = 6;
    // Odd states fail until `healed` is set.
    let healed = Arc::new(AtomicBool::new(false));
    let up = {
        let healed = healed.clone();
        crate::support::Upstream::start(move |got| {
            let k = got.json()["state"]["n"].as_u64().unwrap_or(0);
            if k % 2 == 1 && !healed.load(Ordering::SeqCst) {
                (
                    400,
                    vec![],
                    r#"{"detail":{"message":"no","error_type":"x"}}"#.into(),
                )
            } else {
                (200, vec![], answer_for(k))
            }
        })
    };
    let q = dir.write("q.json", &spam_questions().to_string());
    let states = dir.write("in.jsonl", &plain_states(n));
    let out_path = dir.join("out.jsonl");
    let out = out_path.display().to_string();
    let args = live_args(&up.base_url, &q, &states, &out, &[]);

    let first = tn_args(dir.path(), &args);
    assert_eq!(first.code, 3, "{first:?}");
    assert_eq!(answered(&out_path).1, n / 2);

    // Nothing left to do, but the file still holds errors.
    let second = tn_args(dir.path(), &args);
    assert_eq!(second.code, 3, "{second:?}");
    assert!(
        second
            .stdout
            .contains(&format!("holds {} error lines", n / 2))
            && second.stdout.contains("--rerun-errors"),
        "{}",
        second.stdout
    );
    assert_eq!(up.requests().len(), n, "the second run asked nothing");

    healed.store(true, Ordering::SeqCst);
    let rerun = live_args(&up.base_url, &q, &states, &out, &["--rerun-errors"]);
    let third = tn_args(dir.path(), &rerun);
    assert_eq!(third.code, 0, "{third:?}");
    assert_eq!(
        up.requests().len(),
        n + n / 2,
        "only the errors asked again"
    );
    let (lines, errors) = answered(&out_path);
    assert_eq!(lines, (1..=n as u64).collect::<Vec<_>>());
    assert_eq!(errors, 0);
    let fourth = tn_args(dir.path(), &args);
    assert_eq!(fourth.code, 0, "{fourth:?}");
}

/// Runs the binary with stdout and stderr piped; `None` if it did not end in `limit`.
fn run_bounded(cmd: std::process::Command, limit: Duration) -> Option<crate::support::Out> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(run(cmd));
    });
    rx.recv_timeout(limit).ok()
}

#[test]
fn out_dash_and_dev_stdout_stream_the_results_to_stdout() {
    let dir = TempDir::new("batch-stdout");
    let n = 3;
    let tape = dir.join("bulk.tape.json");
    bulk_tape(&tape, n, false);
    let tape = tape.display().to_string();
    let q = dir.write("q.json", &spam_questions().to_string());
    let states = dir.write("in.jsonl", &plain_states(n));
    for target in ["-", "/dev/stdout"] {
        let args = batch_of(&q, &states, target, &["--tape", &tape, "--no-progress"]);
        let cmd = toolnexus(dir.path(), &strs(&args));
        let out = run_bounded(cmd, Duration::from_secs(30))
            .unwrap_or_else(|| panic!("--out {target} hung"));
        assert_eq!(out.code, 0, "{target}: {out:?}");
        let lines: Vec<Value> = out
            .stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
            .collect();
        assert_eq!(lines.len(), n, "{target}: results only: {}", out.stdout);
        assert!(lines.iter().all(|v| v["decision"].is_object()), "{target}");
        assert!(
            out.stderr.contains("batch: done 3, failed 0"),
            "{target}: the summary on stderr: {}",
            out.stderr
        );
    }
    assert!(!dir.join("-").exists(), "no file named -");

    // A stream has nothing to start over or rewrite.
    for flag in ["--restart", "--rerun-errors"] {
        let out = tn_args(
            dir.path(),
            &batch_of(&q, &states, "-", &["--tape", &tape, flag]),
        );
        assert_eq!(out.code, 2, "{flag}: {out:?}");
        assert!(
            out.stderr.contains(&format!("{flag}: --out - is a stream")),
            "{}",
            out.stderr
        );
        assert!(out.stdout.is_empty(), "{flag}: {}", out.stdout);
    }
}

#[test]
fn a_full_disk_is_exit_4_naming_the_file_and_enospc() {
    if !std::path::Path::new("/dev/full").exists() {
        return;
    }
    let dir = TempDir::new("batch-full");
    let tape = dir.join("bulk.tape.json");
    bulk_tape(&tape, 2, false);
    let tape = tape.display().to_string();
    let q = dir.write("q.json", &spam_questions().to_string());
    let states = dir.write("in.jsonl", &plain_states(2));
    let args = batch_of(
        &q,
        &states,
        "/dev/full",
        &["--tape", &tape, "--no-progress"],
    );
    let cmd = toolnexus(dir.path(), &strs(&args));
    let out = run_bounded(cmd, Duration::from_secs(30)).expect("--out /dev/full hung");
    assert_eq!(out.code, 4, "{out:?}");
    assert!(
        out.stderr.contains("--out /dev/full") && out.stderr.contains("no space left on device"),
        "{}",
        out.stderr
    );
}

#[test]
fn sigterm_stops_a_batch_as_ctrl_c_does() {
    stopped_by("TERM");
}

#[test]
fn ctrl_c_stops_a_batch_and_a_rerun_finishes_it() {
    stopped_by("INT");
}

/// Stops a batch with this signal mid-run: exit 130, every finished result
/// written, and the rerun asks only what is missing.
fn stopped_by(signal: &str) {
    let dir = TempDir::new("batch-signal");
    let n = 20;
    let up = slow_upstream(Duration::from_millis(200));
    let base = up.base_url();
    let q = dir.write("q.json", &spam_questions().to_string());
    let states = dir.write("in.jsonl", &plain_states(n));
    let out_path = dir.join("out.jsonl");
    let out = out_path.display().to_string();
    let args = live_args(&base, &q, &states, &out, &["--concurrency", "1"]);
    let mut cmd = toolnexus(dir.path(), &strs(&args));
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = Guard(cmd.spawn().unwrap());
    let start = Instant::now();
    while out_lines(&out_path).len() < 2 {
        assert!(start.elapsed() < Duration::from_secs(60), "nothing written");
        assert!(child.0.try_wait().unwrap().is_none(), "ended early");
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = child.0.id().to_string();
    let sent = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = crate::support::wait(&mut child.0, Duration::from_secs(60)).unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.0.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}: {stderr}");
    assert!(stderr.contains("batch: interrupted"), "{stderr}");
    let (before, _) = answered(&out_path);
    assert!(before.len() < n, "stopped early");

    // The rerun asks only what is missing.
    let asked = up.requests().len();
    let again = tn_args(dir.path(), &live_args(&base, &q, &states, &out, &[]));
    assert_eq!(again.code, 0, "{again:?}");
    let (lines, _) = answered(&out_path);
    assert_eq!(lines, (1..=n as u64).collect::<Vec<_>>());
    assert_eq!(up.requests().len() - asked, n - before.len());
}

/// A states file with no state in it, or a labelled-examples file given as
/// `--states`, is refused before anything is asked, naming the file (and the
/// line of the first labelled example): its gold answers would otherwise
/// reach the judge as part of each state.
#[test]
fn an_empty_states_file_or_a_labels_file_as_states_is_refused_by_name() {
    let dir = TempDir::new("batch-states-kind");
    let tape = dir.join("t.tape.json");
    bulk_tape(&tape, 3, false);
    let tape = tape.display().to_string();
    let q = dir.write("q.json", &spam_questions().to_string());
    let empty = dir.write("empty.jsonl", "\n  \n");
    let labels = crate::support::demo("labels.jsonl");
    let gold = dir.write(
        "gold.jsonl",
        "{\"n\": 1}\n{\"state\": {\"n\": 2}, \"gold\": {\"spam\": true}}\n",
    );
    let cases = [
        (
            empty.clone(),
            format!(
                "--states {empty}: no state in it (the file is empty or holds only blank lines)"
            ),
        ),
        (
            labels.clone(),
            format!(
                "--states {labels} line 5: this is a labelled example (\"id\", \"state\", \"labels\", \"meta\"), not a state"
            ),
        ),
        (
            gold.clone(),
            format!(
                "--states {gold} line 2: this is a labelled example (\"state\", \"gold\"), not a state"
            ),
        ),
    ];
    for (states, want) in cases {
        let out = tn_args(
            dir.path(),
            &tape_batch(&tape, &q, &states, "out.jsonl", &[]),
        );
        assert_eq!(out.code, 2, "{states}: {out:?}");
        assert!(
            out.stderr.contains(&want),
            "want {want:?}, got {}",
            out.stderr
        );
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(!dir.join("out.jsonl").exists(), "nothing was started");
    }

    // A state that merely has a "labels" field (an issue, say) is a state.
    let issue = dir.write(
        "issues.jsonl",
        "{\"title\": \"crash\", \"labels\": [\"bug\"], \"state\": \"open\"}\n",
    );
    let out = tn_args(
        dir.path(),
        &tape_batch(&tape, &q, &issue, "out.jsonl", &["--no-progress"]),
    );
    assert_eq!(out.code, 3, "asked (the tape has no such state): {out:?}");
}

/// A shadow too slow to keep up skips states rather than queue them; the
/// run's summary counts them, as does the shadow's own line and file.
#[test]
fn a_shadow_that_was_busy_is_counted_in_the_summary() {
    use toolnexus::testing::{Reply, Server as Fake};
    let dir = TempDir::new("batch-shadow-busy");
    let n = 120;
    let tape = dir.join("t.tape.json");
    bulk_tape(&tape, n, false);
    let tape = tape.display().to_string();
    let q = dir.write("q.json", &spam_questions().to_string());
    let states: String = (0..n).map(|i| format!("{{\"n\": {i}}}\n")).collect();
    let states = dir.write("s.jsonl", &states);
    // Each shadow call answers only after a long pause: at most 64 are ever
    // in flight (the bound with --concurrency 1), the rest are skipped.
    let shadow = Fake::builder()
        .handler(|_, _| {
            Reply::json(
                200,
                r#"{"model":"jev-2","answers":{"spam":{"type":"noul","noul":0.5}}}"#,
            )
            .delayed(Duration::from_secs(3))
        })
        .start_on_thread();
    let shadow_out = dir.join("shadow.jsonl");
    let out = tn_args(
        dir.path(),
        &tape_batch(
            &tape,
            &q,
            &states,
            "out.jsonl",
            &[
                "--concurrency",
                "1",
                "--shadow-style",
                "systemone",
                "--shadow-base-url",
                &shadow.base_url(),
                "--shadow-out",
                &shadow_out.display().to_string(),
                "--no-progress",
            ],
        ),
    );
    assert_eq!(out.code, 0, "{out:?}");
    let text = std::fs::read_to_string(&shadow_out).unwrap();
    let summary: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let skipped = summary["summary"]["not_mirrored"].as_u64().unwrap();
    let compared = summary["summary"]["compared"].as_u64().unwrap();
    assert!(skipped > 0, "{text}");
    assert_eq!(skipped + compared, n as u64, "{text}");
    assert!(
        out.stdout.contains(&format!(
            "; the shadow skipped {skipped} states (it was busy)"
        )),
        "{}",
        out.stdout
    );
    assert!(
        out.stderr.contains(&format!(
            "{skipped} not asked (the shadow was busy: more than 64 calls in flight)"
        )),
        "{}",
        out.stderr
    );
}
