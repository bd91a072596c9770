//! `toolnexus assess`: the offline demo, a run from a tape and its resume, and
//! every pure step over the run file (report, gates, thresholds, calibrate,
//! compare, check), plus `--thresholds` and `--calibration` on eval and batch.

use serde_json::Value;

use crate::support::{Server, TempDir, assess_tape, demo, out_lines, request, tn, tn_args};

/// Runs `assess run` over the demo tape into `dir/out` with `labels`.
fn run_demo(dir: &TempDir, labels: &str, out: &str) -> crate::support::Out {
    let out_path = dir.join(out).display().to_string();
    let tape = demo("tape.json");
    let args = assess_tape(&tape, &demo("questions.json"), labels, &out_path, &[]);
    tn_args(dir.path(), &args)
}

/// The demo labels with every `refund_requested` gold flipped: the same
/// recorded answers now look badly wrong on that question.
fn flipped_labels(dir: &TempDir) -> String {
    let text = std::fs::read_to_string(demo("labels.jsonl")).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with('#') {
            out.push_str(line);
        } else {
            let mut v: Value = serde_json::from_str(line).unwrap();
            let gold = v["labels"]["refund_requested"].as_bool().unwrap();
            v["labels"]["refund_requested"] = Value::Bool(!gold);
            out.push_str(&v.to_string());
        }
        out.push('\n');
    }
    dir.write("flipped.labels.jsonl", &out)
}

#[test]
fn bare_assess_runs_the_offline_demo_and_prints_the_table() {
    let dir = TempDir::new("assess-demo");
    let out = tn(dir.path(), &["assess"]);
    assert_eq!(out.code, 0, "{out:?}");
    let first = out.stdout.lines().next().unwrap();
    assert!(
        first.starts_with("offline: 120 project-written support tickets"),
        "{first}"
    );
    assert!(first.contains("no backend is called"), "{first}");
    for want in [
        "question          kind      n  failed  accuracy",
        "desk              choice  117       0",
        "refund_requested  noul    120       0",
        "urgency           score   118       0",
        "120 rows, 0 failed",
    ] {
        assert!(
            out.stdout.contains(want),
            "missing {want:?} in\n{}",
            out.stdout
        );
    }
}

#[test]
fn run_writes_a_run_file_and_a_rerun_asks_nothing_again() {
    let dir = TempDir::new("assess-run");
    let first = run_demo(&dir, &demo("labels.jsonl"), "run.jsonl");
    assert_eq!(first.code, 0, "{first:?}");
    let text = std::fs::read_to_string(dir.join("run.jsonl")).unwrap();
    assert_eq!(
        text.lines().count(),
        121,
        "a header line and one line per row"
    );
    let again = run_demo(&dir, &demo("labels.jsonl"), "run.jsonl");
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(
        std::fs::read_to_string(dir.join("run.jsonl")).unwrap(),
        text,
        "a finished run is complete: the rerun adds nothing"
    );
    assert_eq!(first.stdout, again.stdout);
}

#[test]
fn a_bad_labels_line_is_exit_2_naming_file_line_and_key() {
    let dir = TempDir::new("assess-bad");
    let labels = dir.write(
        "bad.labels.jsonl",
        "{\"state\": {}, \"labels\": {\"desk\": \"billing\"}}\n{\"state\": {}, \"labels\": {\"desk\": \"kitchen\"}}\n",
    );
    let out = run_demo(&dir, &labels, "run.jsonl");
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("bad.labels.jsonl:2:"), "{}", out.stderr);
    assert!(out.stderr.contains("desk"), "{}", out.stderr);
    assert!(out.stderr.contains("kitchen"), "{}", out.stderr);
}

#[test]
fn report_prints_json_writes_html_and_gates_exit_3_naming_the_gate() {
    let dir = TempDir::new("assess-report");
    assert_eq!(run_demo(&dir, &demo("labels.jsonl"), "run.jsonl").code, 0);
    let run = dir.join("run.jsonl").display().to_string();
    let html = dir.join("r.html").display().to_string();

    let out = tn(
        dir.path(),
        &["assess", "report", &run, "--json", "--report", &html],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let v: Value = serde_json::from_str(&out.stdout).expect("--json prints one JSON value");
    assert!(v.is_object(), "{v}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg"), "the report draws its figures inline");
    assert!(
        !page.contains("src=\"http") && !page.contains("<link"),
        "one self-contained page"
    );

    let out = tn(
        dir.path(),
        &["assess", "report", &run, "--min", "desk.accuracy=1.01"],
    );
    assert_eq!(out.code, 3, "{out:?}");
    assert!(out.stderr.contains("desk.accuracy"), "{}", out.stderr);
    let out = tn(
        dir.path(),
        &["assess", "report", &run, "--min", "desk.accuracy=0.5"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let out = tn(
        dir.path(),
        &["assess", "report", &run, "--min", "desk.nonsense=0.5"],
    );
    assert_eq!(out.code, 2, "an unknown metric is bad input: {out:?}");
}

#[test]
fn thresholds_feed_eval_and_batch_and_check_exits_3_on_drift() {
    let dir = TempDir::new("assess-thresholds");
    assert_eq!(run_demo(&dir, &demo("labels.jsonl"), "run.jsonl").code, 0);
    let run = dir.join("run.jsonl").display().to_string();
    let th = dir.join("th.json").display().to_string();
    let out = tn(
        dir.path(),
        &[
            "assess",
            "thresholds",
            &run,
            "--target-accuracy",
            "0.9",
            "--out",
            &th,
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("out of bag"), "{}", out.stdout);
    assert!(
        out.stdout.contains("provisional"),
        "under 200 rows: {}",
        out.stdout
    );

    // eval reads every answer through the file's bands.
    let labels = std::fs::read_to_string(demo("labels.jsonl")).unwrap();
    let first: Value =
        serde_json::from_str(labels.lines().find(|l| !l.starts_with('#')).unwrap()).unwrap();
    let state = first["state"].to_string();
    let tape = demo("tape.json");
    let questions = demo("questions.json");
    let style = [
        "--style",
        "tape",
        "--tape",
        &tape,
        "--questions",
        &questions,
    ];
    let mut args = vec!["eval"];
    args.extend(style);
    args.extend(["--state", &state, "--thresholds", &th, "--json"]);
    let out = tn(dir.path(), &args);
    assert_eq!(out.code, 0, "{out:?}");
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(v["decision"]["answers"].is_object(), "{v}");
    assert!(
        v["verdicts"]["refund_requested"]["verdict"].is_string(),
        "{v}"
    );
    assert!(v["verdicts"]["desk"]["sure"].is_boolean(), "{v}");

    // batch adds the verdicts to each decision line.
    let states = dir.write("states.jsonl", &format!("{state}\n"));
    let out_file = dir.join("b.jsonl").display().to_string();
    let mut args = vec!["batch"];
    args.extend(style);
    args.extend([
        "--states",
        &states,
        "--out",
        &out_file,
        "--thresholds",
        &th,
        "--no-progress",
    ]);
    let out = tn(dir.path(), &args);
    assert_eq!(out.code, 0, "{out:?}");
    let lines = out_lines(&dir.join("b.jsonl"));
    assert!(
        lines[0]["verdicts"]["refund_requested"].is_object(),
        "{:?}",
        lines[0]
    );

    // The same rows hold; rows where the recorded answers are now wrong drift.
    let out = tn(dir.path(), &["assess", "check", &run, "--thresholds", &th]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("holds"), "{}", out.stdout);
    let flipped = flipped_labels(&dir);
    assert_eq!(run_demo(&dir, &flipped, "new.jsonl").code, 0);
    let new = dir.join("new.jsonl").display().to_string();
    let out = tn(dir.path(), &["assess", "check", &new, "--thresholds", &th]);
    assert_eq!(out.code, 3, "{out:?}");
    assert!(out.stderr.contains("refund_requested"), "{}", out.stderr);
}

#[test]
fn calibrate_writes_a_file_that_eval_applies() {
    let dir = TempDir::new("assess-calibrate");
    assert_eq!(run_demo(&dir, &demo("labels.jsonl"), "run.jsonl").code, 0);
    let run = dir.join("run.jsonl").display().to_string();
    let cal = dir.join("cal.json").display().to_string();
    let out = tn(dir.path(), &["assess", "calibrate", &run, "--out", &cal]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("ECE before"), "{}", out.stdout);
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&cal).unwrap()).unwrap();
    assert_eq!(file["format"], "toolnexus.calibration");

    let labels = std::fs::read_to_string(demo("labels.jsonl")).unwrap();
    let first: Value =
        serde_json::from_str(labels.lines().find(|l| !l.starts_with('#')).unwrap()).unwrap();
    let state = first["state"].to_string();
    let tape = demo("tape.json");
    let questions = demo("questions.json");
    let base = [
        "eval",
        "--style",
        "tape",
        "--tape",
        &tape,
        "--questions",
        &questions,
        "--state",
        &state,
        "--json",
    ];
    let plain = tn(dir.path(), &base);
    assert_eq!(plain.code, 0, "{plain:?}");
    let mut args = base.to_vec();
    args.extend(["--calibration", &cal]);
    let calibrated = tn(dir.path(), &args);
    assert_eq!(calibrated.code, 0, "{calibrated:?}");
    let p: Value = serde_json::from_str(&plain.stdout).unwrap();
    let c: Value = serde_json::from_str(&calibrated.stdout).unwrap();
    assert_eq!(p["calibrated"], false);
    assert_eq!(c["calibrated"], true, "hash and model match: {c}");
    assert_ne!(
        p["answers"]["refund_requested"],
        c["answers"]["refund_requested"]
    );

    let bad = dir.write(
        "bad.json",
        "{\"format\": \"toolnexus.calibration\", \"version\": 99}",
    );
    let mut args = base.to_vec();
    args.extend(["--calibration", &bad]);
    let out = tn(dir.path(), &args);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("bad.json"), "{}", out.stderr);
}

#[test]
fn compare_pairs_two_runs_and_names_the_change() {
    let dir = TempDir::new("assess-compare");
    assert_eq!(run_demo(&dir, &demo("labels.jsonl"), "a.jsonl").code, 0);
    let flipped = flipped_labels(&dir);
    assert_eq!(run_demo(&dir, &flipped, "b.jsonl").code, 0);
    let a = dir.join("a.jsonl").display().to_string();
    let b = dir.join("b.jsonl").display().to_string();
    let out = tn(dir.path(), &["assess", "compare", &a, &b]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("120 rows paired"), "{}", out.stdout);
    let out = tn(dir.path(), &["assess", "compare", &a, &b, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["paired_rows"], 120, "{v}");
}

#[test]
fn serve_with_thresholds_adds_a_verdicts_header_and_keeps_the_wire_body() {
    let dir = TempDir::new("assess-serve");
    assert_eq!(run_demo(&dir, &demo("labels.jsonl"), "run.jsonl").code, 0);
    let run = dir.join("run.jsonl").display().to_string();
    let th = dir.join("th.json").display().to_string();
    let out = tn(
        dir.path(),
        &[
            "assess",
            "thresholds",
            &run,
            "--target-accuracy",
            "0.9",
            "--out",
            &th,
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let tape = demo("tape.json");
    let server = Server::start(
        dir.path(),
        &[
            "--style",
            "tape",
            "--tape",
            &tape,
            "--call",
            "assess_demo",
            "--thresholds",
            &th,
        ],
    );
    let labels = std::fs::read_to_string(demo("labels.jsonl")).unwrap();
    let first: Value =
        serde_json::from_str(labels.lines().find(|l| !l.starts_with('#')).unwrap()).unwrap();
    let questions: Value =
        serde_json::from_str(&std::fs::read_to_string(demo("questions.json")).unwrap()).unwrap();
    let body = serde_json::json!({"questions": questions, "state": first["state"]}).to_string();
    let r = request(
        &server.addr,
        "POST",
        "/v1/systemone",
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.json()["answers"]["desk"].is_object(), "{r:?}");
    assert!(
        r.json().get("verdicts").is_none(),
        "the body stays the wire"
    );
    let verdicts = r
        .header("x-toolnexus-verdicts")
        .expect("the verdicts header");
    let parts: Vec<&str> = verdicts.split("; ").collect();
    assert_eq!(parts.len(), 3, "{verdicts}");
    assert!(parts[0].starts_with("desk="), "{verdicts}");
    assert!(
        [
            "refund_requested=yes",
            "refund_requested=no",
            "refund_requested=uncertain"
        ]
        .contains(&parts[1]),
        "{verdicts}"
    );
    assert!(
        parts[2] == "urgency=sure" || parts[2] == "urgency=unsure",
        "{verdicts}"
    );
}

/// Runs the demo set into `dir/run.jsonl` and returns its path.
fn demo_run(dir: &TempDir) -> String {
    let out = run_demo(dir, &demo("labels.jsonl"), "run.jsonl");
    assert_eq!(out.code, 0, "{out:?}");
    dir.join("run.jsonl").display().to_string()
}

/// `assess thresholds RUN --target-accuracy 0.9 --out TH`.
fn pick_thresholds(dir: &TempDir, run: &str, th: &str) {
    let out = tn(
        dir.path(),
        &[
            "assess",
            "thresholds",
            run,
            "--target-accuracy",
            "0.9",
            "--out",
            th,
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
}

#[test]
fn no_assess_output_may_overwrite_one_of_its_inputs() {
    let dir = TempDir::new("assess-overwrite");
    let run = demo_run(&dir);
    let before = std::fs::read(&run).unwrap();
    let th = dir.join("th.json").display().to_string();
    pick_thresholds(&dir, &run, &th);
    // The same file under another spelling is still the same file.
    let spelled = dir.path().join(".").join("run.jsonl").display().to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec!["assess", "report", &run, "--report", &spelled],
        vec![
            "assess",
            "report",
            &run,
            "--thresholds",
            &th,
            "--report",
            &th,
        ],
        vec![
            "assess",
            "thresholds",
            &run,
            "--target-accuracy",
            "0.9",
            "--out",
            &spelled,
        ],
        vec!["assess", "calibrate", &run, "--out", &run],
    ];
    let th_before = std::fs::read(&th).unwrap();
    for args in cases {
        let out = tn(dir.path(), &args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(
            out.stderr.contains("refusing to overwrite an input"),
            "{args:?}: {}",
            out.stderr
        );
        assert!(out.stdout.is_empty(), "nothing is done: {args:?}");
    }
    assert_eq!(
        std::fs::read(&run).unwrap(),
        before,
        "the run file is untouched"
    );
    assert_eq!(
        std::fs::read(&th).unwrap(),
        th_before,
        "the thresholds file is untouched"
    );

    // assess run: --out is the run file it resumes, never the labelled set.
    let labels = dir.write(
        "set.jsonl",
        &std::fs::read_to_string(demo("labels.jsonl")).unwrap(),
    );
    let labels_before = std::fs::read(&labels).unwrap();
    let out = run_demo(&dir, &labels, "set.jsonl");
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--out"), "{}", out.stderr);
    assert!(out.stderr.contains("--examples"), "{}", out.stderr);
    assert_eq!(std::fs::read(&labels).unwrap(), labels_before);
}

/// The demo run file with line `n` (1-based) passed through `edit`.
fn edit_line(run: &str, n: usize, edit: impl Fn(&mut Value)) -> String {
    let text = std::fs::read_to_string(run).unwrap();
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        if i + 1 == n {
            let mut v: Value = serde_json::from_str(line).unwrap();
            edit(&mut v);
            out.push_str(&v.to_string());
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

#[test]
fn a_run_file_with_an_impossible_number_is_exit_2_naming_file_and_line() {
    let dir = TempDir::new("assess-impossible");
    let run = demo_run(&dir);
    type Edit = (&'static str, fn(&mut Value));
    let edits: [Edit; 3] = [
        ("noul 1.7 is outside [0, 1]", |v| {
            v["decision"]["answers"]["refund_requested"]["noul"] = 1.7.into()
        }),
        ("is not a finite number", |v| {
            v["decision"]["answers"]["refund_requested"]["noul"] = "0.4".into()
        }),
        ("is outside [0, 1]", |v| {
            let probs = v["decision"]["answers"]["desk"]["probabilities"]
                .as_object_mut()
                .unwrap();
            let first = probs.keys().next().unwrap().clone();
            probs.insert(first, (-0.2).into());
        }),
    ];
    for (want, edit) in edits {
        let bad = dir.write("bad.jsonl", &edit_line(&run, 5, edit));
        for args in [
            vec!["assess", "report", bad.as_str()],
            vec!["assess", "calibrate", bad.as_str()],
            vec![
                "assess",
                "thresholds",
                bad.as_str(),
                "--target-accuracy",
                "0.9",
            ],
        ] {
            let out = tn(dir.path(), &args);
            assert_eq!(out.code, 2, "{args:?}: {out:?}");
            assert!(
                out.stderr.contains(&format!("{bad}:5:")),
                "names the file and line: {}",
                out.stderr
            );
            assert!(out.stderr.contains(want), "{want:?} in {}", out.stderr);
        }
    }
}

#[test]
fn a_torn_final_line_is_reported_where_the_run_is_read() {
    let dir = TempDir::new("assess-torn");
    let run = demo_run(&dir);
    let mut text = std::fs::read_to_string(&run).unwrap();
    let last = text.trim_end().rfind('\n').unwrap() + 1;
    // An interrupted run: the last row cut halfway, no newline.
    text.truncate(last + 40);
    let torn = dir.write("torn.jsonl", &text);
    let out = tn(dir.path(), &["assess", "report", &torn, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr
            .contains(&format!("warning: {torn}:121: torn final line")),
        "{}",
        out.stderr
    );
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["rows"], 119, "the torn row is left out: {v}");

    // A resume drops it as before, and now says so.
    let out = run_demo(&dir, &demo("labels.jsonl"), "torn.jsonl");
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains(&format!(
            "warning: {torn}:121: torn final line (cut short by an interrupted run) dropped"
        )),
        "{}",
        out.stderr
    );
    assert_eq!(
        std::fs::read_to_string(&torn).unwrap().lines().count(),
        121,
        "the example is asked again and its row written whole"
    );
}

#[test]
fn check_exits_5_when_no_question_of_the_thresholds_file_is_in_the_run() {
    let dir = TempDir::new("assess-nomatch");
    let run = demo_run(&dir);
    let th = dir.join("th.json").display().to_string();
    pick_thresholds(&dir, &run, &th);
    // A run over other questions: the same rows, every key renamed.
    let renamed = std::fs::read_to_string(&run)
        .unwrap()
        .replace("\"desk\"", "\"team\"")
        .replace("\"refund_requested\"", "\"refund\"")
        .replace("\"urgency\"", "\"priority\"");
    let other = dir.write("other.jsonl", &renamed);
    let out = tn(
        dir.path(),
        &["assess", "check", &other, "--thresholds", &th],
    );
    assert_eq!(out.code, 5, "{out:?}");
    for want in [
        "\"desk\", \"refund_requested\", \"urgency\"",
        "\"priority\", \"refund\", \"team\"",
        "nothing to check",
    ] {
        assert!(out.stderr.contains(want), "{want:?} in {}", out.stderr);
    }
}

#[test]
fn a_thresholds_file_records_hashes_and_a_reworded_question_is_a_warning() {
    let dir = TempDir::new("assess-reworded");
    let run = demo_run(&dir);
    let th = dir.join("th.json").display().to_string();
    pick_thresholds(&dir, &run, &th);
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&th).unwrap()).unwrap();
    for key in ["desk", "refund_requested", "urgency"] {
        let hash = file["questions"][key]["hash"].as_str().unwrap_or_default();
        assert!(hash.starts_with("sha256:"), "{key}: {file}");
    }
    let same = tn(dir.path(), &["assess", "check", &run, "--thresholds", &th]);
    assert_eq!(same.code, 0, "{same:?}");
    assert!(!same.stderr.contains("reworded"), "{}", same.stderr);

    // The same rows, with one question worded differently in the header.
    let reworded_text = edit_line(&run, 1, |v| {
        v["questions"]["refund_requested"]["instructions"] =
            "Is the customer asking for a refund?".into()
    });
    let reworded = dir.write("reworded.jsonl", &reworded_text);
    let out = tn(
        dir.path(),
        &["assess", "check", &reworded, "--thresholds", &th],
    );
    assert_eq!(out.code, 0, "the figures still hold: {out:?}");
    let warning = format!(
        "warning: --thresholds {th}: question \"refund_requested\" was reworded since its cut was picked"
    );
    assert_eq!(out.stderr.matches(&warning).count(), 1, "{}", out.stderr);
    assert!(
        !out.stderr.contains("\"desk\" was reworded"),
        "{}",
        out.stderr
    );

    // eval and batch say it once, whatever the number of states.
    let mut questions: Value =
        serde_json::from_str(&std::fs::read_to_string(demo("questions.json")).unwrap()).unwrap();
    questions["refund_requested"]["instructions"] = "Is the customer asking for a refund?".into();
    let q = dir.write("q.json", &questions.to_string());
    let tape = demo("tape.json");
    let labels = std::fs::read_to_string(demo("labels.jsonl")).unwrap();
    let states: Vec<String> = labels
        .lines()
        .filter(|l| !l.starts_with('#'))
        .take(3)
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["state"].to_string())
        .collect();
    let style = [
        "--style",
        "tape",
        "--tape",
        &tape,
        "--match",
        "sequence",
        "--questions",
        &q,
    ];
    let mut args = vec!["eval", "--state", &states[0], "--thresholds", &th, "--json"];
    args.extend(style);
    let out = tn(dir.path(), &args);
    assert_eq!(out.stderr.matches(&warning).count(), 1, "{out:?}");
    let states_file = dir.write("states.jsonl", &(states.join("\n") + "\n"));
    let b = dir.join("b.jsonl").display().to_string();
    let mut args = vec![
        "batch",
        "--states",
        &states_file,
        "--out",
        &b,
        "--thresholds",
        &th,
        "--no-progress",
    ];
    args.extend(style);
    let out = tn(dir.path(), &args);
    assert_eq!(out.stderr.matches(&warning).count(), 1, "{out:?}");

    // A file written before hashes were recorded stays readable, without a warning.
    let mut old: Value = file.clone();
    for key in ["desk", "refund_requested", "urgency"] {
        old["questions"][key]
            .as_object_mut()
            .unwrap()
            .remove("hash");
    }
    let old_th = dir.write("old.json", &old.to_string());
    let out = tn(
        dir.path(),
        &["assess", "check", &reworded, "--thresholds", &old_th],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!out.stderr.contains("reworded"), "{}", out.stderr);
}

#[test]
fn serve_with_thresholds_warns_once_when_a_request_asks_a_reworded_question() {
    use std::io::BufRead as _;
    let dir = TempDir::new("assess-serve-reworded");
    let run = demo_run(&dir);
    let th = dir.join("th.json").display().to_string();
    pick_thresholds(&dir, &run, &th);
    let tape = demo("tape.json");
    let log = dir.join("serve.log");
    let mut cmd = crate::support::toolnexus(
        dir.path(),
        &[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--style",
            "static",
            "--tape",
            &tape,
            "--thresholds",
            &th,
        ],
    );
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap());
    let mut child = crate::support::Guard(cmd.spawn().unwrap());
    let mut lines = std::io::BufReader::new(child.0.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr = first
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("{first}"))
        .trim()
        .to_string();
    std::thread::spawn(move || for _ in lines {});

    let mut questions: Value =
        serde_json::from_str(&std::fs::read_to_string(demo("questions.json")).unwrap()).unwrap();
    let state = serde_json::json!({"message": "where is my parcel?"});
    let ask = |questions: &Value| {
        let body = serde_json::json!({"questions": questions, "state": state}).to_string();
        request(
            &addr,
            "POST",
            "/v1/systemone",
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        )
    };
    // The wording the cuts were picked on: no warning.
    ask(&questions);
    questions["urgency"]["instructions"] = "How quickly must we act?".into();
    for _ in 0..3 {
        ask(&questions);
    }
    drop(child);
    let text = std::fs::read_to_string(&log).unwrap();
    let warning = format!(
        "warning: --thresholds {th}: question \"urgency\" was reworded since its cut was picked"
    );
    assert_eq!(text.matches(&warning).count(), 1, "{text}");
    assert!(!text.contains("\"desk\" was reworded"), "{text}");
}

/// The demo run with each decided row's `refund_requested` answer made right
/// (P(yes) 0.9 on a true gold, 0.1 on a false one) when `right(k)` holds for
/// the k-th decided row, and wrong otherwise.
fn with_refund_hits(run: &str, right: impl Fn(usize) -> bool) -> String {
    let text = std::fs::read_to_string(run).unwrap();
    let mut out = String::new();
    let mut k = 0;
    for (i, line) in text.lines().enumerate() {
        let mut v: Value = serde_json::from_str(line).unwrap();
        if i > 0 && v["decision"].is_object() {
            let gold = v["labels"]["refund_requested"].as_bool().unwrap();
            let p = if gold == right(k) { 0.9 } else { 0.1 };
            v["decision"]["answers"]["refund_requested"]["noul"] = p.into();
            k += 1;
        }
        out.push_str(&v.to_string());
        out.push('\n');
    }
    out
}

/// `assess compare A B` as text and as JSON, with A and B written from `right_a`, `right_b`.
fn compare_split(
    dir: &TempDir,
    run: &str,
    right_a: impl Fn(usize) -> bool,
    right_b: impl Fn(usize) -> bool,
) -> (String, Value) {
    let a = dir.write("a.jsonl", &with_refund_hits(run, right_a));
    let b = dir.write("b.jsonl", &with_refund_hits(run, right_b));
    let text = tn(dir.path(), &["assess", "compare", &a, &b]);
    assert_eq!(text.code, 0, "{text:?}");
    let json = tn(dir.path(), &["assess", "compare", &a, &b, "--json"]);
    assert_eq!(json.code, 0, "{json:?}");
    let v: Value = serde_json::from_str(&json.stdout).unwrap();
    let refund = v["questions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["key"] == "refund_requested")
        .unwrap()
        .clone();
    let line = text
        .stdout
        .lines()
        .find(|l| l.starts_with("refund_requested"))
        .unwrap()
        .to_string();
    (line, refund)
}

#[test]
fn compare_calls_a_22_to_23_split_no_difference_and_a_real_one_significant() {
    let dir = TempDir::new("assess-compare-split");
    let run = demo_run(&dir);
    // Only A right on rows 0–21, only B right on rows 22–44: 22 against 23.
    let (line, q) = compare_split(&dir, &run, |k| !(22..45).contains(&k), |k| k >= 22);
    assert_eq!(
        (&q["only_a_right"], &q["only_b_right"]),
        (&22.into(), &23.into()),
        "{q}"
    );
    // SciPy: binomtest(22, 45, 0.5).pvalue = 1.0.
    assert_eq!(q["p_value"], 1.0, "{q}");
    assert!(!line.contains("better"), "{line}");
    assert!(line.contains(" 1.000 "), "{line}");

    // Only B right on rows 0–9, never only A: p = 2 · 2⁻¹⁰.
    let (line, q) = compare_split(&dir, &run, |k| k >= 10, |_| true);
    assert_eq!(
        (&q["only_a_right"], &q["only_b_right"]),
        (&0.into(), &10.into()),
        "{q}"
    );
    let p = q["p_value"].as_f64().unwrap();
    assert!((p - 2.0 / 1024.0).abs() < 1e-12, "{q}");
    assert!(line.contains("B is better (p < 0.05)"), "{line}");
    assert!(line.contains(" 0.002 "), "{line}");

    // Only A right on rows 0–4: p = 0.0625, not below 0.05, so no verdict.
    let (line, q) = compare_split(&dir, &run, |_| true, |k| k >= 5);
    assert!(
        (q["p_value"].as_f64().unwrap() - 0.0625).abs() < 1e-12,
        "{q}"
    );
    assert!(!line.contains("better"), "{line}");
}

#[test]
fn report_calibrate_and_compare_print_the_same_ece_for_the_same_run() {
    let dir = TempDir::new("assess-one-ece");
    let demo = demo_run(&dir);
    // A choice's or score's `confidence` is not a probability (the local styles
    // send TypeSafe's formula): set apart from the top probability, it must not
    // move the ECE.
    let mut text = String::new();
    for (i, line) in std::fs::read_to_string(&demo).unwrap().lines().enumerate() {
        let mut v: Value = serde_json::from_str(line).unwrap();
        if i > 0 && v["decision"].is_object() {
            for key in ["desk", "urgency"] {
                if v["decision"]["answers"][key].is_object() {
                    v["decision"]["answers"][key]["confidence"] = 0.2.into();
                }
            }
        }
        text.push_str(&v.to_string());
        text.push('\n');
    }
    let run = dir.write("spread.jsonl", &text);
    let report = tn(dir.path(), &["assess", "report", &run]);
    assert_eq!(report.code, 0, "{report:?}");
    let cal = dir.join("cal.json").display().to_string();
    let calibrate = tn(dir.path(), &["assess", "calibrate", &run, "--out", &cal]);
    assert_eq!(calibrate.code, 0, "{calibrate:?}");
    let copy = dir.write("copy.jsonl", &std::fs::read_to_string(&run).unwrap());
    let compare = tn(dir.path(), &["assess", "compare", &run, &copy]);
    assert_eq!(compare.code, 0, "{compare:?}");
    let json = tn(dir.path(), &["assess", "report", &run, "--json"]);
    assert_eq!(json.code, 0, "{json:?}");
    let summary: Value = serde_json::from_str(&json.stdout).unwrap();
    let row = |text: &str, key: &str| -> Vec<String> {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .unwrap_or_else(|| panic!("no {key} in\n{text}"));
        line.split_whitespace().map(str::to_string).collect()
    };
    // One question of each kind: a choice, a noul and a score.
    for key in ["desk", "refund_requested", "urgency"] {
        let exact = summary["questions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["key"] == key)
            .unwrap()["ece"]
            .as_f64()
            .unwrap();
        let want = format!("{exact:.3}");
        // report: question kind n failed accuracy "log loss" Brier ECE …
        assert_eq!(row(&report.stdout, key)[7], want, "report, {key}");
        // calibrate: … ECE-before after log-loss-before after
        let cells = row(&calibrate.stdout, key);
        assert_eq!(cells[cells.len() - 4], want, "calibrate, {key}");
        // compare: … "ECE A→B" is the last "x → y" of the row.
        let cells = row(&compare.stdout, key);
        let arrow = cells.iter().rposition(|c| c == "→").unwrap();
        assert_eq!(
            (&cells[arrow - 1], &cells[arrow + 1]),
            (&want, &want),
            "compare, {key}"
        );
    }
}
