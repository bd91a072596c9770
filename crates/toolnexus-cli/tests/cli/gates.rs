//! `assess report` gates on the run's cost and latency, and `--junit`.

use serde_json::json;

use crate::support::{Out, TempDir, assess_tape, bulk_tape, spam_questions, tn, tn_args};

/// A run file of `n` rows answered from a generated tape (each recording
/// billed $0.00002, or with no cost when `with_cost` is false).
fn run_file(dir: &TempDir, n: usize, with_cost: bool) -> String {
    let tape = dir.join("bulk.tape.json");
    bulk_tape(&tape, n, with_cost);
    let q = dir.write("q.json", &spam_questions().to_string());
    let examples: String = (0..n)
        .map(|i| {
            format!(
                "{}\n",
                json!({"id": format!("e{i}"), "state": {"n": i}, "labels": {"spam": true}})
            )
        })
        .collect();
    let examples = dir.write("labels.jsonl", &examples);
    let run = dir.join("run.jsonl").display().to_string();
    let tape = tape.display().to_string();
    let bulk = ["--call", "bulk", "--no-progress"];
    let out = tn_args(dir.path(), &assess_tape(&tape, &q, &examples, &run, &bulk));
    assert_eq!(out.code, 0, "{out:?}");
    run
}

fn report(dir: &TempDir, run: &str, extra: &[&str]) -> Out {
    let mut args = vec!["assess", "report", run];
    args.extend_from_slice(extra);
    tn(dir.path(), &args)
}

#[test]
fn cost_and_latency_gates_fail_with_the_figure_and_write_junit() {
    let dir = TempDir::new("gates-cost");
    let run = run_file(&dir, 4, true);
    let junit = dir.join("gates.xml");
    let junit_s = junit.display().to_string();
    let out = report(
        &dir,
        &run,
        &[
            "--max",
            "run.cost_per_row=0.00001",
            "--max",
            "run.cost_total=1",
            "--max",
            "run.latency_p95_ms=600000",
            "--min",
            "spam.n=4",
            "--junit",
            &junit_s,
        ],
    );
    assert_eq!(out.code, 3, "{out:?}");
    assert!(
        out.stderr
            .contains("gate failed: run.cost_per_row = 0.00002 is above the --max 0.00001"),
        "{}",
        out.stderr
    );
    assert_eq!(
        out.stderr.matches("gate failed").count(),
        1,
        "{}",
        out.stderr
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"),
        "{xml}"
    );
    assert!(
        xml.contains("<testsuites name=\"toolnexus assess report\" tests=\"4\" failures=\"1\">"),
        "{xml}"
    );
    assert_eq!(xml.matches("<testcase ").count(), 4, "{xml}");
    assert!(
        xml.contains("<testcase classname=\"") && xml.contains(
            "name=\"--max run.cost_per_row=0.00001\">\n      <failure type=\"gate\" message=\"run.cost_per_row = 0.00002 is above the --max 0.00001\">"
        ),
        "{xml}"
    );
    assert!(
        xml.contains("<system-out>run.cost_total = 0.00008 holds the --max 1</system-out>"),
        "{xml}"
    );
    assert!(
        xml.contains("<system-out>spam.n = 4 holds the --min 4</system-out>"),
        "{xml}"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with(".gates.xml") || n.contains(".tmp"))
        .collect();
    assert!(left.is_empty(), "no temporary left: {left:?}");

    // Every gate holding: exit 0, the file rewritten.
    let out = report(
        &dir,
        &run,
        &["--max", "run.cost_per_row=0.00002", "--junit", &junit_s],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("tests=\"1\" failures=\"0\""), "{xml}");
}

#[test]
fn an_unknown_cost_fails_a_cost_gate_saying_so() {
    let dir = TempDir::new("gates-unknown");
    let run = run_file(&dir, 3, false);
    let junit = dir.join("gates.xml").display().to_string();
    let out = report(
        &dir,
        &run,
        &["--max", "run.cost_per_row=100", "--junit", &junit],
    );
    assert_eq!(out.code, 3, "{out:?}");
    let said = "run.cost_per_row: the cost is unknown: 3 of 3 answered rows did not report one, so the --max 100 cannot hold";
    assert!(out.stderr.contains(said), "{}", out.stderr);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(&format!("<failure type=\"gate\" message=\"{said}\">")),
        "{xml}"
    );
}

#[test]
fn junit_never_overwrites_an_input_and_bad_gates_name_the_metrics() {
    let dir = TempDir::new("gates-junit-input");
    let run = run_file(&dir, 2, true);
    let before = std::fs::read(&run).unwrap();
    let out = report(&dir, &run, &["--max", "run.cost_total=1", "--junit", &run]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--junit"), "{}", out.stderr);
    assert_eq!(std::fs::read(&run).unwrap(), before);
    let out = report(&dir, &run, &["--max", "run.latency=1"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("unknown metric \"latency\" for the run (metrics: cost_per_row, cost_total, latency_p50_ms, latency_p95_ms)"),
        "{}",
        out.stderr
    );
    let missing = dir.join("no/such/dir/gates.xml").display().to_string();
    let out = report(
        &dir,
        &run,
        &["--max", "run.cost_total=1", "--junit", &missing],
    );
    assert_eq!(out.code, 4, "{out:?}");
    assert!(
        out.stderr.contains(&format!("--junit {missing}")),
        "{}",
        out.stderr
    );
}
