//! `toolnexus tape record | replay | show`.

use serde_json::Value;

use crate::support::{Server, TempDir, bulk_tape, spam_questions, tn};

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
    let text = std::fs::read_to_string(dir.join("rec.tape.json")).unwrap();
    assert!(!text.contains("API_KEY"), "no key material on the tape");

    let out = tn(dir.path(), &["tape", "show", "rec.tape.json"]);
    assert_eq!(out.code, 0, "{out:?}");
    for want in [
        "format    toolnexus.tape, version 1",
        "note      recorded in a test",
        "entries   3 (2 decisions, 1 failures)",
        "  inbox  3 entries (2 decisions, 1 failures)",
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
