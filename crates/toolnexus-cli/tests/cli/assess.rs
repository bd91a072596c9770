//! `toolnexus assess`: the offline demo, a run from a tape and its resume, and
//! every pure step over the run file (report, gates, thresholds, calibrate,
//! compare, check), plus `--thresholds` and `--calibration` on eval and batch.

use serde_json::Value;

use crate::support::{Server, TempDir, out_lines, request, tn};

/// The shipped demo: questions, labelled set and recorded decisions.
fn demo(name: &str) -> String {
    format!(
        "{}/../toolnexus/examples/assess/demo.{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Runs `assess run` over the demo tape into `dir/out` with `labels`.
fn run_demo(dir: &TempDir, labels: &str, out: &str) -> crate::support::Out {
    let out_path = dir.join(out).display().to_string();
    tn(
        dir.path(),
        &[
            "assess",
            "run",
            "--style",
            "tape",
            "--tape",
            &demo("tape.json"),
            "--questions",
            &demo("questions.json"),
            "--examples",
            labels,
            "--out",
            &out_path,
        ],
    )
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
