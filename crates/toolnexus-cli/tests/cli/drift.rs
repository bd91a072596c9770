//! `assess drift` (run files, batch out files, a golden tape against a live
//! style) and `batch --shadow-style`: flips and shifts without labels.

use serde_json::{Value, json};

use crate::support::{
    TempDir, Upstream, batch_args, batch_of, bulk_tape, spam_p, spam_questions, tape_batch, tn,
    tn_args,
};

fn questions() -> Value {
    json!({
        "spam": {"type": "noul", "instructions": "Is this unsolicited bulk mail?"},
        "desk": {"type": "choice", "instructions": "Which desk owns it?",
                 "criteria": {"billing": "money", "shipping": "parcels"}}
    })
}

/// A decision with a spam noul and a desk pick at P(billing) = `billing`.
fn decision(spam: f64, billing: f64) -> Value {
    let pick = if billing >= 0.5 {
        "billing"
    } else {
        "shipping"
    };
    json!({"model": "m", "answers": {
        "spam": {"type": "noul", "noul": spam},
        "desk": {"type": "choice", "choice": pick,
                 "probabilities": {"billing": billing, "shipping": 1.0 - billing}, "confidence": 0.5}
    }})
}

/// A run file with one row per `(id, spam, billing)`.
fn run_file(dir: &TempDir, name: &str, rows: &[(&str, f64, f64)]) -> String {
    let mut text =
        json!({"format": "toolnexus.assess-run", "version": 1, "questions": questions()})
            .to_string();
    text.push('\n');
    for (id, spam, billing) in rows {
        let row =
            json!({"id": id, "labels": {}, "state_len": 3, "decision": decision(*spam, *billing)});
        text.push_str(&row.to_string());
        text.push('\n');
    }
    dir.write(name, &text)
}

/// Ten rows; B flips spam on rows 0 and 1 (0.9 → 0.35) and moves desk a
/// little on every row (0.8 → 0.7), flipping it on row 9 (0.8 → 0.2).
fn two_runs(dir: &TempDir) -> (String, String) {
    let ids: Vec<String> = (0..10).map(|i| format!("r{i}")).collect();
    let a: Vec<(&str, f64, f64)> = ids.iter().map(|id| (id.as_str(), 0.9, 0.8)).collect();
    let b: Vec<(&str, f64, f64)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let spam = if i < 2 { 0.35 } else { 0.9 };
            let billing = if i == 9 { 0.2 } else { 0.7 };
            (id.as_str(), spam, billing)
        })
        .collect();
    (run_file(dir, "a.jsonl", &a), run_file(dir, "b.jsonl", &b))
}

fn question<'a>(report: &'a Value, key: &str) -> &'a Value {
    report["questions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["key"] == key)
        .unwrap_or_else(|| panic!("no {key} in {report}"))
}

fn close(v: &Value, x: f64) -> bool {
    (v.as_f64().unwrap() - x).abs() < 1e-9
}

#[test]
fn two_run_files_count_flips_and_shifts_per_question() {
    let dir = TempDir::new("drift-runs");
    let (a, b) = two_runs(&dir);
    let out = tn(dir.path(), &["assess", "drift", &a, &b, "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r: Value = serde_json::from_str(&out.stdout).expect("one JSON object");
    assert_eq!(
        (&r["paired"], &r["only_in_a"], &r["paired_by"]),
        (&json!(10), &json!(0), &json!("id"))
    );
    let spam = question(&r, "spam");
    assert_eq!((&spam["n"], &spam["flips"]), (&json!(10), &json!(2)));
    assert!(close(&spam["flip_rate"], 0.2));
    assert!(close(&spam["mean_shift"], 0.11), "{spam}");
    let desk = question(&r, "desk");
    assert_eq!(desk["flips"], 1);
    // Nine rows move 0.1, one moves 0.6: mean 0.15, largest 0.6.
    assert!(close(&desk["mean_shift"], 0.15), "{desk}");
    assert!(close(&desk["max_shift"], 0.6), "{desk}");
    // The largest shift is listed first, with both answers.
    let first = &r["changes"][0];
    assert_eq!(
        (&first["id"], &first["key"], &first["a"], &first["b"]),
        (
            &json!("r9"),
            &json!("desk"),
            &json!("billing 0.80"),
            &json!("shipping 0.80")
        )
    );
    assert_eq!(
        r["changes"].as_array().unwrap().len(),
        10,
        "--show 10 by default"
    );
    assert_eq!(r["changed"], 12);
}

#[test]
fn gates_exit_3_naming_the_question_and_a_passing_gate_exits_0() {
    let dir = TempDir::new("drift-gates");
    let (a, b) = two_runs(&dir);
    let out = tn(
        dir.path(),
        &[
            "assess",
            "drift",
            &a,
            &b,
            "--max-flips",
            "0.1",
            "--show",
            "2",
        ],
    );
    assert_eq!(out.code, 3, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("gate: spam: flip rate 20.0% above --max-flips 0.1"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("gate: desk"), "{}", out.stdout);
    assert!(out.stdout.contains("changes (2 of 12"), "{}", out.stdout);
    let out = tn(
        dir.path(),
        &["assess", "drift", &a, &b, "--max-shift", "0.1"],
    );
    assert_eq!(out.code, 3, "{}", out.stdout);
    assert!(
        out.stdout
            .contains("gate: spam: mean shift 0.110 above --max-shift 0.1")
    );
    assert!(
        out.stdout
            .contains("gate: desk: mean shift 0.150 above --max-shift 0.1")
    );
    let out = tn(
        dir.path(),
        &[
            "assess",
            "drift",
            &a,
            &b,
            "--max-flips",
            "0.2",
            "--max-shift",
            "0.2",
        ],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let out = tn(dir.path(), &["assess", "drift", &a, &b, "--max-flips", "2"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--max-flips"), "{}", out.stderr);
}

#[test]
fn rows_only_in_one_run_and_errors_are_reported_not_compared() {
    let dir = TempDir::new("drift-partial");
    let a = run_file(
        &dir,
        "a.jsonl",
        &[("x", 0.9, 0.8), ("y", 0.9, 0.8), ("z", 0.9, 0.8)],
    );
    let mut b = run_file(&dir, "b.jsonl", &[("x", 0.9, 0.8), ("w", 0.1, 0.1)]);
    let mut text = std::fs::read_to_string(&b).unwrap();
    text.push_str(
        &json!({"id": "y", "labels": {}, "error": {"kind": "timeout", "message": "slow"}})
            .to_string(),
    );
    text.push('\n');
    b = dir.write("b.jsonl", &text);
    let out = tn(dir.path(), &["assess", "drift", &a, &b, "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        [
            &r["paired"],
            &r["compared"],
            &r["errors_b"],
            &r["only_in_a"],
            &r["only_in_b"]
        ],
        [&json!(2), &json!(1), &json!(1), &json!(1), &json!(1)]
    );
}

#[test]
fn a_gate_with_no_row_compared_exits_5_nothing_to_judge() {
    let dir = TempDir::new("drift-nothing");
    let a = run_file(&dir, "a.jsonl", &[("x", 0.9, 0.8), ("y", 0.9, 0.8)]);
    let mut errors =
        json!({"format": "toolnexus.assess-run", "version": 1, "questions": questions()})
            .to_string();
    errors.push('\n');
    for id in ["x", "y"] {
        errors.push_str(
            &json!({"id": id, "labels": {}, "state_len": 3, "error": {"kind": "timeout", "message": "slow"}})
                .to_string(),
        );
        errors.push('\n');
    }
    let b = dir.write("b.jsonl", &errors);
    for gate in [
        vec!["--max-flips", "0.05"],
        vec!["--max-shift", "0.1"],
        vec!["--max-flips", "0.05", "--max-shift", "0.1"],
    ] {
        let mut args = vec!["assess", "drift", &a, &b];
        args.extend(&gate);
        let out = tn(dir.path(), &args);
        assert_eq!(out.code, 5, "{gate:?}: {out:?}");
        assert!(
            out.stderr.contains("no row was compared")
                && out.stderr.contains("2 in B")
                && out.stderr.contains("nothing to judge")
                && out.stderr.contains(gate[0]),
            "{gate:?}: {}",
            out.stderr
        );
    }
    // Without a gate the report is printed and the emptiness said: exit 0.
    let out = tn(dir.path(), &["assess", "drift", &a, &b]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("no row was compared"), "{}", out.stderr);
    // Rows answered on both sides but sharing no question judge nothing either.
    let spam_desk = dir.write(
        "a.out.jsonl",
        &format!("{}\n", json!({"line": 1, "decision": decision(0.9, 0.8)})),
    );
    let other = dir.write(
        "b.out.jsonl",
        &format!(
            "{}\n",
            json!({"line": 1, "decision": {"model": "m", "answers": {"other": {"type": "noul", "noul": 0.5}}}})
        ),
    );
    let out = tn(
        dir.path(),
        &["assess", "drift", &spam_desk, &other, "--max-flips", "0.05"],
    );
    assert_eq!(out.code, 5, "{out:?}");
    assert!(
        out.stderr.contains("no answer was compared"),
        "{}",
        out.stderr
    );
}

#[test]
fn bad_input_names_the_file_and_line_and_kinds_must_match() {
    let dir = TempDir::new("drift-bad");
    let (a, _) = two_runs(&dir);
    let other = dir.write("notes.txt", "hello\n");
    let out = tn(dir.path(), &["assess", "drift", &a, &other]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("notes.txt:1: neither"),
        "{}",
        out.stderr
    );

    let batch = dir.write(
        "out.jsonl",
        &format!(
            "{{\"line\":1,\"decision\":{}}}\n{{\"line\":2,\"decision\":{{\"model\":1}}}}\n",
            decision(0.5, 0.5)
        ),
    );
    let out = tn(dir.path(), &["assess", "drift", &batch, &batch]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("out.jsonl:2: decision:"),
        "{}",
        out.stderr
    );

    let good_batch = dir.write(
        "good.jsonl",
        &format!("{{\"line\":1,\"decision\":{}}}\n", decision(0.5, 0.5)),
    );
    let out = tn(dir.path(), &["assess", "drift", &a, &good_batch]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("is an assess run file") && out.stderr.contains("is a batch out file"),
        "{}",
        out.stderr
    );

    let mut bad_row = std::fs::read_to_string(&a).unwrap();
    bad_row.push_str("{\"id\": \"q\", \"decision\": {\"model\": \"m\", \"answers\": {\"spam\": {\"type\": \"noul\", \"noul\": 1.5}}}}\n");
    let bad_row = dir.write("bad-row.jsonl", &bad_row);
    let out = tn(dir.path(), &["assess", "drift", &a, &bad_row]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("bad-row.jsonl:12:"), "{}", out.stderr);
}

#[test]
fn batch_out_files_pair_by_line_and_name_their_lines() {
    let dir = TempDir::new("drift-batch");
    let n = 20;
    // A: the generated tape through batch; B: the same states asked of a
    // loopback upstream that answers 0.9 on every fifth state.
    let tape = dir.join("bulk.tape.json");
    bulk_tape(&tape, n, false);
    let states: String = (0..n).map(|i| format!("{{\"n\": {i}}}\n")).collect();
    let states = dir.write("states.jsonl", &states);
    let qs = dir.write("q.json", &spam_questions().to_string());
    let tape = tape.display().to_string();
    let a_out = dir.join("a.out.jsonl").display().to_string();
    let out = tn_args(dir.path(), &tape_batch(&tape, &qs, &states, &a_out, &[]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let up = Upstream::start(|got| {
        let i = got.json()["state"]["n"].as_u64().unwrap() as usize;
        let p = if i.is_multiple_of(5) { 0.9 } else { spam_p(i) };
        (
            200,
            vec![],
            format!(r#"{{"model":"jev-2","answers":{{"spam":{{"type":"noul","noul":{p}}}}}}}"#),
        )
    });
    let b_out = dir.join("b.out.jsonl").display().to_string();
    let out = tn_args(
        dir.path(),
        &batch_args(&qs, &states, &b_out, &up.base_url, &[]),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = tn(dir.path(), &["assess", "drift", &a_out, &b_out, "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        (&r["paired"], &r["paired_by"]),
        (&json!(20), &json!("line"))
    );
    let spam = question(&r, "spam");
    // States 0, 5, 10, 15 move to 0.9 from 0.00, 0.05, 0.10, 0.15: all flip.
    assert_eq!(spam["flips"], 4);
    assert!(
        close(&spam["mean_shift"], (0.9 + 0.85 + 0.8 + 0.75) / 20.0),
        "{spam}"
    );
    assert_eq!(r["changes"][0]["id"], "line 1");
    assert_eq!(r["changes"][0]["a"], "0.000");
    assert_eq!(r["changes"][0]["b"], "0.900");

    // A torn final line is left out, and said so.
    let mut torn = std::fs::read_to_string(&b_out).unwrap();
    torn.push_str("{\"line\":99,\"decis");
    let torn = dir.write("torn.jsonl", &torn);
    let out = tn(dir.path(), &["assess", "drift", &a_out, &torn]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("torn.jsonl:22: torn final line"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_golden_tape_against_a_live_style_that_answers_otherwise() {
    let dir = TempDir::new("drift-tape");
    let n = 12;
    let tape = dir.join("golden.tape.json");
    bulk_tape(&tape, n, false);
    // The live model agrees except on states 3 and 7, where it says 0.95.
    let up = Upstream::start(|got| {
        let i = got.json()["state"]["n"].as_u64().unwrap() as usize;
        let p = if i == 3 || i == 7 { 0.95 } else { spam_p(i) };
        (
            200,
            vec![],
            format!(r#"{{"model":"jev-2","answers":{{"spam":{{"type":"noul","noul":{p}}}}}}}"#),
        )
    });
    let tape = tape.display().to_string();
    let out = tn(
        dir.path(),
        &[
            "assess",
            "drift",
            "--tape",
            &tape,
            "--style",
            "systemone",
            "--base-url",
            &up.base_url,
            "--max-flips",
            "0.1",
        ],
    );
    assert_eq!(out.code, 3, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("for 12 recorded calls of"),
        "the call count first: {}",
        out.stderr
    );
    assert_eq!(up.requests().len(), 12);
    assert!(
        out.stdout.contains("gate: spam: flip rate 16.7%"),
        "{}",
        out.stdout
    );
    // Rows are named by call and position in the tape file; both answers shown.
    assert!(
        out.stdout.contains("spam      0.030  0.950  0.920  flip"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("bulk#"), "{}", out.stdout);

    let out = tn(
        dir.path(),
        &[
            "assess",
            "drift",
            "--tape",
            &tape,
            "--style",
            "systemone",
            "--base-url",
            &up.base_url,
            "--json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r: Value = serde_json::from_str(&out.stdout).unwrap();
    let spam = question(&r, "spam");
    assert_eq!((&spam["n"], &spam["flips"]), (&json!(12), &json!(2)));
    assert!(close(&spam["max_shift"], 0.92), "{spam}");

    // The tape is side A: replaying it as side B is refused.
    let out = tn(
        dir.path(),
        &["assess", "drift", "--tape", &tape, "--style", "tape"],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("name a live style"), "{}", out.stderr);
}

/// A loopback System One whose spam answer for state `{"n": i}` is `p(i)`.
fn answering(model: &'static str, p: fn(usize) -> f64) -> Upstream {
    Upstream::start(move |got| {
        let i = got.json()["state"]["n"].as_u64().unwrap() as usize;
        (
            200,
            vec![],
            format!(
                r#"{{"model":"{model}","answers":{{"spam":{{"type":"noul","noul":{}}}}}}}"#,
                p(i)
            ),
        )
    })
}

#[test]
fn batch_shadow_style_writes_each_disagreement_and_leaves_the_primary_alone() {
    let dir = TempDir::new("drift-shadow");
    let n = 30;
    let states: String = (0..n).map(|i| format!("{{\"n\": {i}}}\n")).collect();
    let states = dir.write("states.jsonl", &states);
    let qs = dir.write("q.json", &spam_questions().to_string());
    let primary = answering("jev-1", |i| (i % 10) as f64 / 10.0);
    // The shadow flips states 4, 14, 24 (0.4 → 0.6), shifts 6, 16, 26 by 0.15
    // without a flip (0.6 → 0.75), and moves 8, 18, 28 by only 0.05 (under
    // the default 0.1).
    let shadow = answering("jev-2", |i| match i % 10 {
        4 => 0.6,
        6 => 0.75,
        8 => 0.85,
        _ => (i % 10) as f64 / 10.0,
    });
    let out_path = dir.join("out.jsonl");
    let out = out_path.display().to_string();
    let shadow_out = dir.join("shadow.jsonl");
    let shadow_arg = shadow_out.display().to_string();
    let shadow_flags = [
        "--shadow-style",
        "systemone",
        "--shadow-base-url",
        &shadow.base_url,
        "--shadow-model",
        "jev-2",
        "--shadow-out",
        &shadow_arg,
        "--no-progress",
    ];
    let args = batch_args(&qs, &states, &out, &primary.base_url, &shadow_flags);
    let run = tn_args(dir.path(), &args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("batch: shadow --shadow-style systemone (jev-2): compared 30, 6 disagreeing"),
        "{}",
        run.stderr
    );
    // The primary's answers, untouched.
    let lines = crate::support::out_lines(&out_path);
    assert_eq!(lines.len(), n);
    for l in &lines {
        let i = l["line"].as_u64().unwrap() as usize - 1;
        assert_eq!(l["decision"]["model"], "jev-1");
        assert!(close(
            &l["decision"]["answers"]["spam"]["noul"],
            (i % 10) as f64 / 10.0
        ));
    }
    assert_eq!(shadow.requests().len(), n);
    assert_eq!(shadow.requests()[0].json()["model"], "jev-2");
    // One line per disagreement, then the summary.
    let text = std::fs::read_to_string(&shadow_out).unwrap();
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (summary, found) = rows.split_last().unwrap();
    let mut found: Vec<(u64, bool)> = found
        .iter()
        .map(|v| (v["line"].as_u64().unwrap(), v["flip"].as_bool().unwrap()))
        .collect();
    found.sort();
    // States 4, 6, 14, 16, 24, 26 are lines 5, 7, 15, 17, 25, 27.
    assert_eq!(
        found,
        [
            (5, true),
            (7, false),
            (15, true),
            (17, false),
            (25, true),
            (27, false)
        ]
    );
    let flip = rows.iter().find(|v| v["line"] == 5).unwrap();
    assert_eq!(flip["key"], "spam");
    assert!(close(&flip["primary"]["noul"], 0.4) && close(&flip["shadow"]["noul"], 0.6));
    assert!(close(&flip["shift"], 0.2));
    assert_eq!(summary["summary"]["compared"], 30);
    assert_eq!(summary["summary"]["disagreements"], 6);

    // Resumed with nothing left to ask: the shadow file is rewritten, empty
    // but for its summary.
    let run = tn_args(dir.path(), &args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = std::fs::read_to_string(&shadow_out).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains("\"compared\":0"), "{text}");

    // A lower --shadow-min-shift also lists the small shift of state 8.
    let mut again = args.clone();
    again.extend(["--restart", "--shadow-min-shift", "0.01"].map(String::from));
    let run = tn_args(dir.path(), &again);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = std::fs::read_to_string(&shadow_out).unwrap();
    assert_eq!(text.lines().count(), 10, "{text}");

    // The shadow file may not be the out file or an input.
    let into_input = ["--shadow-style", "systemone", "--shadow-out", &states];
    let run = tn_args(
        dir.path(),
        &batch_args(&qs, &states, &out, &primary.base_url, &into_input),
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--shadow-out"), "{}", run.stderr);
    // --shadow-out without --shadow-style is a usage error.
    let run = tn_args(
        dir.path(),
        &batch_of(&qs, &states, &out, &["--shadow-out", &shadow_arg]),
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn a_failing_shadow_is_reported_and_never_fails_the_batch() {
    let dir = TempDir::new("drift-shadow-fail");
    let states = dir.write("states.jsonl", "{\"n\": 1}\n{\"n\": 2}\n");
    let qs = dir.write("q.json", &spam_questions().to_string());
    let primary = answering("jev-1", |_| 0.2);
    let broken = Upstream::start(|_| (400, vec![], r#"{"detail":"bad request"}"#.to_string()));
    let out_path = dir.join("out.jsonl");
    let shadow_out = dir.join("shadow.jsonl");
    let run = tn_args(
        dir.path(),
        &batch_args(
            &qs,
            &states,
            &out_path.display().to_string(),
            &primary.base_url,
            &[
                "--shadow-style",
                "systemone",
                "--shadow-base-url",
                &broken.base_url,
                "--shadow-out",
                &shadow_out.display().to_string(),
            ],
        ),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(crate::support::out_lines(&out_path).len(), 2);
    let text = std::fs::read_to_string(&shadow_out).unwrap();
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert!(rows[0]["error"].as_str().unwrap().contains("400"), "{text}");
    assert_eq!(rows[2]["summary"]["shadow_failed"], 2);
}
