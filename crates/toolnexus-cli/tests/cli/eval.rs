//! `toolnexus eval`: offline on the built-in demo tape, and on given inputs.

use serde_json::Value;
use toolnexus::judge::Tape;

use crate::support::{DEMO_TAPE, TempDir, bulk_tape, spam_questions, tn};

#[test]
fn with_no_flags_it_replays_the_demo_tape_and_says_so() {
    let dir = TempDir::new("eval-offline");
    let out = tn(dir.path(), &["eval"]);
    assert_eq!(out.code, 0, "{out:?}");
    let first = out.stdout.lines().next().unwrap();
    assert_eq!(
        first,
        "offline: no TYPESAFE_API_KEY set; replaying the built-in demo tape (call \"triage\")"
    );
    for want in [
        "KEY ",
        "desk              choice  billing",
        "refund_requested  noul    0.09",
        "urgency           score   0.34 (low)",
        "model       jev-1.13-20260917",
        "calibrated  yes",
        "tokens      412 in, 38 out",
        "cost        $0.0000564",
    ] {
        assert!(
            out.stdout.contains(want),
            "missing {want:?} in\n{}",
            out.stdout
        );
    }
}

#[test]
fn json_output_is_the_decision_wire_form() {
    let dir = TempDir::new("eval-json");
    let out = tn(dir.path(), &["eval", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let v: Value = serde_json::from_str(&out.stdout).expect("stdout is only JSON");
    let demo = Tape::load(DEMO_TAPE).unwrap();
    let first = demo
        .entries()
        .into_iter()
        .find(|e| e.call_name == "triage")
        .unwrap();
    let toolnexus::judge::TapeOutcome::Decision(d) = first.outcome else {
        panic!("a decision")
    };
    assert_eq!(v, d.to_value());
    assert!(
        out.stderr.starts_with("offline: no TYPESAFE_API_KEY set;"),
        "{}",
        out.stderr
    );
}

#[test]
fn given_inputs_are_evaluated_and_an_unreported_cost_is_not_zero() {
    let dir = TempDir::new("eval-inputs");
    let tape = dir.join("bulk.tape.json");
    bulk_tape(&tape, 5, false);
    let q = dir.write("q.json", &spam_questions().to_string());
    let tape = tape.display().to_string();
    let out = tn(
        dir.path(),
        &[
            "eval",
            "--tape",
            &tape,
            "--questions",
            &q,
            "--state",
            r#"{"n": 3}"#,
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.starts_with("KEY"),
        "no offline line when a tape is named: {}",
        out.stdout
    );
    assert!(out.stdout.contains("spam  noul  0.03"), "{}", out.stdout);
    assert!(
        out.stdout.contains("cost        not reported"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("$0"), "{}", out.stdout);

    // The same through --style static and a state file.
    let s = dir.write("s.json", "{\"n\": 4}");
    let out = tn(
        dir.path(),
        &[
            "eval",
            "--style",
            "static",
            "--tape",
            &tape,
            "--questions",
            &q,
            "--state",
            &s,
            "--json",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["answers"]["spam"]["noul"], 0.04);
}

#[test]
fn a_state_not_on_the_tape_fails_the_evaluation() {
    let dir = TempDir::new("eval-miss");
    let q = dir.write("q.json", &spam_questions().to_string());
    let out = tn(
        dir.path(),
        &[
            "eval",
            "--style",
            "tape",
            "--call",
            "triage",
            "--questions",
            &q,
            "--state",
            "\"hi\"",
        ],
    );
    assert_eq!(out.code, 3, "{out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr
            .starts_with("toolnexus: error: tape: no recorded decision for call \"triage\""),
        "{}",
        out.stderr
    );
}

#[test]
fn with_a_key_set_it_goes_live_and_never_prints_the_key() {
    let dir = TempDir::new("eval-live");
    let server =
        crate::support::Server::start(dir.path(), &["--style", "tape", "--call", "triage"]);
    let base = format!("{}/v1", server.url);
    let mut cmd = crate::support::toolnexus(
        dir.path(),
        &["eval", "--base-url", &base, "--retries", "-1"],
    );
    cmd.env("TYPESAFE_API_KEY", "sk-test-secret-value");
    let out = crate::support::run(cmd);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!out.stdout.contains("offline:"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("example: the first \"triage\" recording of the built-in demo tape"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("desk              choice  billing"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("sk-test") && !out.stderr.contains("sk-test"));
}

#[test]
fn retries_zero_means_one_attempt() {
    let dir = TempDir::new("eval-retries");
    let upstream = crate::support::Upstream::start(|_| {
        (
            503,
            vec![],
            r#"{"detail":{"message":"down for a moment"}}"#.to_string(),
        )
    });
    let questions = crate::support::spam_questions().to_string();
    for (flag, attempts) in [("0", 1), ("-1", 1), ("1", 2)] {
        let before = upstream.requests().len();
        let out = crate::support::tn(
            dir.path(),
            &[
                "eval",
                "--style",
                "systemone",
                "--base-url",
                &upstream.base_url,
                "--retries",
                flag,
                "--questions",
                &questions,
                "--state",
                "\"hi\"",
            ],
        );
        assert_eq!(out.code, 3, "{out:?}");
        assert!(out.stderr.contains("HTTP 503"), "{out:?}");
        assert_eq!(
            upstream.requests().len() - before,
            attempts,
            "--retries {flag}"
        );
    }
}

/// A `--cascade` student with no head for an asked question never answers
/// (it answers only when it has a head for every asked question): said once,
/// naming the student file and the question; a question it has a head for
/// draws no warning.
#[test]
fn a_cascade_student_without_a_head_for_the_question_is_named() {
    let dir = crate::support::TempDir::new("eval-cascade-heads");
    let model = dir.join("model");
    toolnexus_local::tiny_model_for_tests(&model).unwrap();
    let model = model.display().to_string();
    let (student, _) = crate::support::demo_student(&dir, &model);
    let tape = dir.join("bulk.tape.json");
    crate::support::bulk_tape(&tape, 3, false);
    let tape = tape.display().to_string();
    let spam = crate::support::spam_questions().to_string();
    let out = crate::support::cascade_eval(
        dir.path(),
        &student,
        &model,
        &[
            "--tape",
            &tape,
            "--call",
            "bulk",
            "--questions",
            &spam,
            "--state",
            "{\"n\": 1}",
        ],
    );
    assert_eq!(out.code, 0, "the teacher answered: {out:?}");
    let want = format!(
        "toolnexus: warning: --cascade --student {student}: no head for \"spam\" (it was trained on \"desk\", \"refund_requested\", \"urgency\"); \
         the student answers only when it has a head for every asked question, so the teacher answers every request"
    );
    assert!(
        out.stderr.contains(&want),
        "want {want:?}, got {}",
        out.stderr
    );
    assert_eq!(out.stderr.matches("--cascade --student").count(), 1);

    // The questions it was trained on: no warning.
    let out = crate::support::cascade_eval(
        dir.path(),
        &student,
        &model,
        &[
            "--tape",
            crate::support::DEMO_TAPE,
            "--call",
            "triage",
            "--questions",
            &crate::support::demo("questions.json"),
            "--state",
            "{\"message\": \"my parcel is late\"}",
            "--match",
            "questions",
        ],
    );
    assert!(!out.stderr.contains("--cascade --student"), "{out:?}");
}
