//! `--match exact|questions|sequence` on `eval` and `tape replay`.

use serde_json::Value;

use crate::support::{TempDir, bulk_tape, spam_p, spam_questions, tn};

#[test]
fn eval_match_questions_answers_from_the_closest_state() {
    let dir = TempDir::new("match-questions");
    let tape = dir.join("bulk.tape.json");
    bulk_tape(&tape, 10, false);
    let tape = tape.display().to_string();
    let q = dir.write("q.json", &spam_questions().to_string());
    let state = r#"{"n": 3, "extra": true}"#;
    let eval = |extra: &[&str]| {
        let mut args = vec![
            "eval",
            "--tape",
            &tape,
            "--call",
            "bulk",
            "--questions",
            &q,
            "--state",
            state,
            "--json",
        ];
        args.extend_from_slice(extra);
        tn(dir.path(), &args)
    };

    let out = eval(&["--match", "questions"]);
    assert_eq!(out.code, 0, "{out:?}");
    let v: Value = serde_json::from_str(&out.stdout).expect("stdout is only JSON");
    assert_eq!(v["answers"]["spam"]["noul"], spam_p(3));

    // Exact (the default, and spelled out) misses, naming the nearest recording.
    for extra in [&[][..], &["--match", "exact"][..]] {
        let out = eval(extra);
        assert_eq!(out.code, 3, "{out:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(
            out.stderr.starts_with(
                "toolnexus: error: tape: no recorded decision for call \"bulk\": \
                 the nearest recording (4 of 10) differs in 1 value, \
                 first at state.extra: recorded (absent), asked true"
            ),
            "{}",
            out.stderr
        );
    }
}

#[test]
fn tape_replay_match_sequence_replays_in_recording_order() {
    let dir = TempDir::new("match-sequence");
    let tape = dir.join("bulk.tape.json");
    // States 10 and 11 sort before 2 in the file: recording order is kept apart.
    bulk_tape(&tape, 12, false);
    let tape = tape.display().to_string();
    let out = tn(
        dir.path(),
        &[
            "tape", "replay", "--tape", &tape, "--match", "sequence", "--json",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let got: Vec<f64> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["decision"]["answers"]["spam"]["noul"].as_f64().unwrap())
        .collect();
    assert_eq!(got, (0..12).map(spam_p).collect::<Vec<_>>());

    // One given state: the first recording, whatever the state; the table
    // output names the mode.
    let q = dir.write("q.json", &spam_questions().to_string());
    let out = tn(
        dir.path(),
        &[
            "tape",
            "replay",
            "--tape",
            &tape,
            "--match",
            "sequence",
            "--questions",
            &q,
            "--state",
            "\"anything\"",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains(&format!("replayed offline from {tape}, "))
            && out
                .stdout
                .contains("call \"bulk\" (--match sequence): 0 failed"),
        "{}",
        out.stdout
    );
}

#[test]
fn match_is_for_the_tape_style_and_a_bad_mode_names_the_three() {
    let dir = TempDir::new("match-usage");
    let out = tn(
        dir.path(),
        &["eval", "--style", "static", "--match", "questions"],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains(
            "--match questions: only --style tape matches recordings that way (this is --style static)"
        ),
        "{}",
        out.stderr
    );
    let out = tn(dir.path(), &["tape", "replay", "--match", "fuzzy"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("unknown match mode \"fuzzy\" (want exact|questions|sequence)"),
        "{}",
        out.stderr
    );
    let out = tn(dir.path(), &["eval", "--help"]);
    assert!(out.stdout.contains("--match <MODE>"), "{}", out.stdout);
    // --match alone implies the tape style (here over the built-in demo tape).
    let out = tn(
        dir.path(),
        &["eval", "--match", "sequence", "--call", "triage", "--json"],
    );
    assert_eq!(out.code, 0, "{out:?}");
}
