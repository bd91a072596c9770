//! `toolnexus tape record | replay | show`.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolnexus::classifier::{Decision, questions_from_wire};
use toolnexus::judge::{Tape, TapeEntry, TapeOutcome};
use toolnexus::testing::{Reply, Server as Fake};

use crate::support::{
    DEADLINE, Guard, Server, TempDir, bulk_tape, spam_p, spam_questions, tn, toolnexus, wait,
};

#[test]
fn record_through_a_live_style_then_show_and_replay_offline() {
    let dir = TempDir::new("tape-record");
    let source = dir.join("source.tape.json");
    bulk_tape(&source, 10, true);
    let source = source.display().to_string();
    // The "live" model: a System One endpoint served from another tape.
    let server = Server::start(dir.path(), &["--style", "static", "--tape", &source]);
    let base = format!("{}/v1", server.url);
    let q = dir.write("q.json", &spam_questions().to_string());
    let states = dir.write("in.jsonl", "{\"n\": 1}\n{\"n\": 2}\n\n{\"n\": 999}\n");

    let out = tn(
        dir.path(),
        &[
            "tape",
            "record",
            "--style",
            "systemone",
            "--tape",
            "rec.tape.json",
            "--call",
            "inbox",
            "--questions",
            &q,
            "--states",
            &states,
            "--base-url",
            &base,
            "--retries",
            "-1",
            "--note",
            "recorded in a test",
        ],
    );
    assert_eq!(out.code, 3, "one state was a failure: {out:?}");
    assert!(out.stdout.contains("saved 3 entries"), "{}", out.stdout);
    assert!(out.stdout.contains("1 failure recorded"), "{}", out.stdout);
    let text = std::fs::read_to_string(dir.join("rec.tape.json")).unwrap();
    assert!(!text.contains("API_KEY"), "no key material on the tape");

    let out = tn(dir.path(), &["tape", "show", "rec.tape.json"]);
    assert_eq!(out.code, 0, "{out:?}");
    for want in [
        "format    toolnexus.tape, version 1",
        "note      recorded in a test",
        "tape      rec.tape.json\n",
        "entries   3 (2 decisions, 1 failure)",
        "  inbox  3 entries (2 decisions, 1 failure)",
    ] {
        assert!(out.stdout.contains(want), "{want:?} in\n{}", out.stdout);
    }
    let out = tn(dir.path(), &["tape", "show", "rec.tape.json", "--json"]);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["calls"]["inbox"]["decisions"], 2);

    // Replay one state offline (the server is no longer needed).
    drop(server);
    let out = tn(
        dir.path(),
        &[
            "tape",
            "replay",
            "--tape",
            "rec.tape.json",
            "--questions",
            &q,
            "--state",
            "{\"n\": 2}",
            "--json",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v[0]["decision"]["answers"]["spam"]["noul"], 0.02);
    assert_eq!(v[0]["decision"]["usage"]["cost"], 0.00002);

    // Replaying every entry reproduces the recorded failure too.
    let out = tn(dir.path(), &["tape", "replay", "--tape", "rec.tape.json"]);
    assert_eq!(out.code, 3, "{out:?}");
    assert!(out.stdout.contains("HTTP 404"), "{}", out.stdout);

    // A state never recorded.
    let out = tn(
        dir.path(),
        &[
            "tape",
            "replay",
            "--tape",
            "rec.tape.json",
            "--questions",
            &q,
            "--state",
            "{\"n\": 5}",
        ],
    );
    assert_eq!(out.code, 3, "{out:?}");
}

#[test]
fn the_demo_tape_replays_and_shows() {
    let dir = TempDir::new("tape-demo");
    let out = tn(dir.path(), &["tape", "replay", "--call", "reply_review"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout.matches("call \"reply_review\" entry").count(), 4);
    assert!(out.stdout.contains("promises_refund"));
    let out = tn(dir.path(), &["tape", "show"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("  triage        4 entries (4 decisions, 0 failures)"),
        "{}",
        out.stdout
    );
}

/// A System One upstream answering state `{"n": i}` with noul `spam_p(i)`;
/// while `hold` is set, states from `from` on are answered only after `delay`.
fn upstream(from: u64, delay: Duration, hold: Arc<AtomicBool>) -> Fake {
    Fake::builder()
        .handler(move |_, req| {
            let n = req.json()["state"]["n"].as_u64().unwrap_or(0);
            let body = json!({
                "model": "jev-1.13",
                "answers": {"spam": {"type": "noul", "noul": spam_p(n as usize)}}
            });
            let reply = Reply::value(200, body);
            if n >= from && hold.load(Ordering::SeqCst) {
                reply.delayed(delay)
            } else {
                reply
            }
        })
        .start_on_thread()
}

/// `tape record` of states `{"n": 0}` … `{"n": 29}` into `rec.tape.json` under call `rec`.
fn record_args(dir: &TempDir, up: &Fake, concurrency: &str) -> Vec<String> {
    let states: String = (0..30).map(|i| format!("{{\"n\": {i}}}\n")).collect();
    let states = dir.write("states.jsonl", &states);
    let q = dir.write("q.json", &spam_questions().to_string());
    [
        "tape",
        "record",
        "--style",
        "systemone",
        "--tape",
        "rec.tape.json",
        "--call",
        "rec",
        "--questions",
        &q,
        "--states",
        &states,
        "--base-url",
        &up.base_url(),
        "--retries",
        "0",
        "--timeout-ms",
        "300000",
        "--concurrency",
        concurrency,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn spawn(dir: &TempDir, args: &[String]) -> Guard {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut cmd = toolnexus(dir.path(), &args);
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    Guard(cmd.spawn().expect("spawn toolnexus tape record"))
}

/// Polls until `done` holds, for at most [`DEADLINE`].
fn until(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

/// The states the upstream was asked, from request `from` on.
fn asked(up: &Fake, from: usize) -> Vec<u64> {
    let mut v: Vec<u64> = up.requests()[from..]
        .iter()
        .map(|r| r.json()["state"]["n"].as_u64().unwrap())
        .collect();
    v.sort_unstable();
    v
}

/// The states on the tape under call `rec`, each with its recorded answer checked.
fn recorded(path: &Path) -> Vec<u64> {
    let mut v: Vec<u64> = Tape::load(path)
        .unwrap()
        .call_entries("rec")
        .into_iter()
        .map(|e| {
            let n = e.state["n"].as_u64().unwrap();
            let TapeOutcome::Decision(d) = e.outcome else {
                panic!("state {n} recorded as a failure");
            };
            assert_eq!(d.noul("spam").unwrap().noul, spam_p(n as usize));
            n
        })
        .collect();
    v.sort_unstable();
    v
}

#[test]
fn record_killed_mid_run_keeps_every_journalled_call_and_the_rerun_asks_only_the_rest() {
    let dir = TempDir::new("tape-kill");
    let hold = Arc::new(AtomicBool::new(true));
    // States 0-9 answer at once; 10 and 11 hang in flight until the kill.
    let up = upstream(10, Duration::from_secs(600), hold.clone());
    let args = record_args(&dir, &up, "2");
    let journal = dir.join("rec.tape.json.journal");
    let mut child = spawn(&dir, &args);
    until("ten journalled calls and two in flight", || {
        lines(&journal) == 11 && up.count() == 12
    });

    // A second run on the same tape while the first holds it: refused, nothing asked.
    let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = tn(dir.path(), &arg_refs);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("another tape record is recording into it (its journal ")
            && out.stderr.contains("rec.tape.json.journal is locked"),
        "{}",
        out.stderr
    );
    assert_eq!(up.count(), 12);

    child.0.kill().unwrap(); // SIGKILL
    wait(&mut child.0, DEADLINE).expect("killed");
    assert!(!dir.join("rec.tape.json").exists(), "never saved");

    hold.store(false, Ordering::SeqCst);
    let out = tn(dir.path(), &arg_refs);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains("folded 10 recordings left in ")
            && out.stderr.contains("skipped 10 states already recorded"),
        "{}",
        out.stderr
    );
    assert_eq!(
        asked(&up, 12),
        (10..30).collect::<Vec<_>>(),
        "nothing journalled is asked again, every other state once"
    );
    assert_eq!(
        recorded(&dir.join("rec.tape.json")),
        (0..30).collect::<Vec<_>>()
    );
    assert!(!journal.exists(), "the journal is removed once saved");

    // A third run finds everything recorded and asks nothing.
    let out = tn(dir.path(), &arg_refs);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("0 new"), "{}", out.stdout);
    assert_eq!(up.count(), 32);
}

#[test]
fn record_interrupted_by_sigint_or_sigterm_finishes_the_calls_in_flight_saves_and_exits_130() {
    for signal in ["-INT", "-TERM"] {
        let dir = TempDir::new("tape-signal");
        let hold = Arc::new(AtomicBool::new(true));
        // States 10 and 11 take 3 s: they are in flight when the signal comes.
        let up = upstream(10, Duration::from_secs(3), hold.clone());
        let args = record_args(&dir, &up, "2");
        let mut child = spawn(&dir, &args);
        until("two calls in flight", || up.count() == 12);
        let pid = child.0.id().to_string();
        assert!(
            Command::new("kill")
                .args([signal, &pid])
                .status()
                .unwrap()
                .success()
        );
        let status = wait(&mut child.0, DEADLINE).expect("stopped after the signal");
        assert_eq!(status.code(), Some(130), "{signal}");
        assert_eq!(up.count(), 12, "{signal}: no call started after the signal");
        assert_eq!(
            recorded(&dir.join("rec.tape.json")),
            (0..12).collect::<Vec<_>>(),
            "{signal}: the calls in flight finished and were saved"
        );
        assert!(!dir.join("rec.tape.json.journal").exists());

        hold.store(false, Ordering::SeqCst);
        let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = tn(dir.path(), &arg_refs);
        assert_eq!(out.code, 0, "{out:?}");
        assert_eq!(asked(&up, 12), (12..30).collect::<Vec<_>>());
        assert_eq!(
            recorded(&dir.join("rec.tape.json")),
            (0..30).collect::<Vec<_>>()
        );
    }
}

#[test]
fn record_keeps_at_most_concurrency_calls_in_flight() {
    let dir = TempDir::new("tape-concurrency");
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let seen = arrivals.clone();
    let delay = Duration::from_millis(400);
    let up = Fake::builder()
        .handler(move |_, req| {
            seen.lock().unwrap().push(Instant::now());
            let n = req.json()["state"]["n"].as_u64().unwrap_or(0);
            let body = json!({
                "model": "jev-1.13",
                "answers": {"spam": {"type": "noul", "noul": spam_p(n as usize)}}
            });
            Reply::value(200, body).delayed(delay)
        })
        .start_on_thread();
    let args = record_args(&dir, &up, "3");
    let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = tn(dir.path(), &arg_refs);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(recorded(&dir.join("rec.tape.json")).len(), 30);
    // Each call is in flight at least `delay` after it arrives, so a window
    // shorter than that never holds more arrivals than calls in flight.
    let arrivals = arrivals.lock().unwrap().clone();
    let window = delay - Duration::from_millis(100);
    let most = arrivals
        .iter()
        .map(|a| {
            arrivals
                .iter()
                .filter(|b| *b <= a && a.duration_since(**b) < window)
                .count()
        })
        .max()
        .unwrap();
    assert!((2..=3).contains(&most), "{most} calls in flight at once");

    let out = tn(
        dir.path(),
        &[
            "tape",
            "record",
            "--tape",
            "x",
            "--call",
            "c",
            "--questions",
            "{}",
            "--state",
            "1",
            "--concurrency",
            "0",
        ],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--concurrency"), "{}", out.stderr);
}

/// A journal line as `tape record` writes it: a one-entry tape, compact.
fn journal_line(n: usize) -> String {
    let tape = Tape::new();
    let d = json!({"model": "jev-1.13", "answers": {"spam": {"type": "noul", "noul": spam_p(n)}}});
    tape.record(TapeEntry {
        call_name: "rec".into(),
        model: "jev-latest".into(),
        state: json!({"n": n}),
        questions: questions_from_wire(&spam_questions()).unwrap(),
        outcome: TapeOutcome::Decision(Decision::from_value(&d).unwrap()),
        request_id: None,
    });
    let v: Value = serde_json::from_str(&tape.to_json()).unwrap();
    v.to_string()
}

#[test]
fn record_folds_a_torn_journal_and_refuses_a_foreign_one() {
    let dir = TempDir::new("tape-journal");
    let up = upstream(0, Duration::ZERO, Arc::new(AtomicBool::new(false)));
    let args = record_args(&dir, &up, "4");
    let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let journal = dir.join("rec.tape.json.journal");

    // Not a journal at all, a one-line file without a newline included: refused, untouched.
    for foreign in [
        "{\"line\":1,\"decision\":{}}\n",
        "hello",
        "{\"format\":\"toolnexus.tape-journal\",\"version\":1,\"tape\":\"rec.tape.json\"}\nnot json\n",
    ] {
        std::fs::write(&journal, foreign).unwrap();
        let out = tn(dir.path(), &arg_refs);
        assert_eq!(out.code, 2, "{out:?}");
        assert!(
            out.stderr.contains("rec.tape.json.journal line ")
                && out.stderr.contains("not a journal of tape record"),
            "{}",
            out.stderr
        );
        assert_eq!(std::fs::read_to_string(&journal).unwrap(), foreign);
    }
    // Another tape's journal: refused, naming both.
    let other =
        "{\"format\":\"toolnexus.tape-journal\",\"tape\":\"other.tape.json\",\"version\":1}\n";
    std::fs::write(&journal, other).unwrap();
    let out = tn(dir.path(), &arg_refs);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains(
            "this journal belongs to the tape \"other.tape.json\", not to \"rec.tape.json\""
        ),
        "{}",
        out.stderr
    );
    assert_eq!(up.count(), 0, "nothing asked");

    // Ours, with two recordings and a torn final line: folded, the torn call asked again.
    let header =
        "{\"format\":\"toolnexus.tape-journal\",\"tape\":\"rec.tape.json\",\"version\":1}\n";
    let torn = journal_line(2);
    let text = format!(
        "{header}{}\n{}\n{}",
        journal_line(0),
        journal_line(1),
        &torn[..torn.len() / 2]
    );
    std::fs::write(&journal, &text).unwrap();
    let out = tn(dir.path(), &arg_refs);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains("dropped a torn final line (")
            && out.stderr.contains("folded 2 recordings left in ")
            && out.stderr.contains("skipped 2 states already recorded"),
        "{}",
        out.stderr
    );
    assert_eq!(asked(&up, 0), (2..30).collect::<Vec<_>>());
    assert_eq!(
        recorded(&dir.join("rec.tape.json")),
        (0..30).collect::<Vec<_>>()
    );
    assert!(!journal.exists());
}

#[test]
fn record_help_and_errors_name_only_the_live_styles_it_takes() {
    let dir = TempDir::new("tape-record-help");
    let out = tn(dir.path(), &["tape", "record", "--help"]);
    assert_eq!(out.code, 0, "{out:?}");
    let style = out
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("--style"))
        .unwrap();
    assert!(style.contains("systemone (the default) or llm"), "{style}");
    for other in ["static", "tape", "local", "student"] {
        assert!(!style.contains(other), "{style}");
        let out = tn(
            dir.path(),
            &[
                "tape",
                "record",
                "--tape",
                "x",
                "--call",
                "c",
                "--questions",
                "{}",
                "--state",
                "1",
                "--style",
                other,
            ],
        );
        assert_eq!(out.code, 2, "{out:?}");
        assert!(
            out.stderr.contains(&format!(
                "style \"{other}\" is not live: tape record records from systemone or llm"
            )),
            "{}",
            out.stderr
        );
    }
    assert!(!dir.join("x.journal").exists());
}

#[test]
fn replay_without_call_reads_the_demo_tape_and_a_users_tape_alike() {
    let dir = TempDir::new("tape-replay-calls");
    // A user's tape with two call names, like the demo tape.
    let tape = dir.join("two.tape.json");
    bulk_tape(&tape, 3, false);
    let t = Tape::load(&tape).unwrap();
    for mut e in t.call_entries("bulk") {
        e.call_name = "other".into();
        t.record(e);
    }
    t.save(&tape).unwrap();
    let tape = tape.display().to_string();

    let demo = Tape::load(crate::support::DEMO_TAPE).unwrap();
    let demo_calls = demo.call_names();
    assert!(demo_calls.len() > 1);
    for (source, calls, entries) in [
        (
            vec!["--tape", tape.as_str()],
            vec!["bulk".to_string(), "other".to_string()],
            6,
        ),
        (vec![], demo_calls.clone(), demo.len()),
    ] {
        let mut a = vec!["tape", "replay"];
        a.extend(&source);
        let out = tn(dir.path(), &a);
        assert_eq!(out.code, 0, "{out:?}");
        assert_eq!(
            out.stdout.matches(" entry ").count(),
            entries,
            "{}",
            out.stdout
        );
        let names: Vec<String> = calls.iter().map(|c| format!("{c:?}")).collect();
        assert!(
            out.stdout
                .contains(&format!("calls {}: 0 failed", names.join(", "))),
            "{}",
            out.stdout
        );
        // One given state needs the call named, on either tape.
        a.extend(["--questions", "{}", "--state", "1"]);
        let out = tn(dir.path(), &a);
        assert_eq!(out.code, 2, "{out:?}");
        assert!(
            out.stderr.contains("--call is required with --state: "),
            "{}",
            out.stderr
        );
    }
    let seen: BTreeSet<String> = Tape::load(&tape)
        .unwrap()
        .call_names()
        .into_iter()
        .collect();
    assert_eq!(seen.len(), 2);
}

#[test]
fn record_keeps_the_order_of_states_whatever_order_the_calls_finish_in() {
    let dir = TempDir::new("tape-order");
    // Later states answer sooner: with all 30 in flight they finish in reverse.
    let up = Fake::builder()
        .handler(move |_, req| {
            let n = req.json()["state"]["n"].as_u64().unwrap_or(0);
            let body = json!({
                "model": "jev-1.13",
                "answers": {"spam": {"type": "noul", "noul": spam_p(n as usize)}}
            });
            Reply::value(200, body).delayed(Duration::from_millis(20 * (30 - n)))
        })
        .start_on_thread();
    let args = record_args(&dir, &up, "30");
    let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = tn(dir.path(), &arg_refs);
    assert_eq!(out.code, 0, "{out:?}");
    let order: Vec<u64> = Tape::load(dir.join("rec.tape.json"))
        .unwrap()
        .call_entries("rec")
        .iter()
        .map(|e| e.state["n"].as_u64().unwrap())
        .collect();
    assert_eq!(
        order,
        (0..30).collect::<Vec<_>>(),
        "recording order is --states order"
    );
}
