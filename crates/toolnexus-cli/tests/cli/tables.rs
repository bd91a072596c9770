//! `batch` over tables: CSV, TSV, Parquet and Arrow in, JSONL or a table
//! out by the `--out` extension, with resume and `--rerun-errors` through
//! the table's journal.

use serde_json::{Value, json};
use toolnexus_table::{Input, StateSpec};

use crate::support::{TempDir, bulk_tape, out_lines, spam_p, spam_questions, tape_batch, tn_args};

/// A tape of `n` states and a CSV of them (`id`, `state` as a JSON object
/// string), with one state the tape lacks as the last row.
fn setup(dir: &TempDir, n: usize) -> (String, String, String) {
    let tape = dir.join("bulk.tape.json");
    bulk_tape(&tape, n, true);
    let q = dir.write("q.json", &spam_questions().to_string());
    let mut csv = String::from("id,state\n");
    for i in 0..=n {
        csv.push_str(&format!("r{i},\"{{\"\"n\"\": {i}}}\"\n"));
    }
    let states = dir.write("states.csv", &csv);
    (tape.display().to_string(), q, states)
}

/// A result table's rows as objects of the columns named.
fn table_rows(path: &std::path::Path, columns: &[&str]) -> Vec<Value> {
    let spec = StateSpec {
        columns: columns.iter().map(|c| c.to_string()).collect(),
        ..Default::default()
    };
    let input = Input::open(path, spec).unwrap();
    input
        .reader()
        .unwrap()
        .rows()
        .0
        .map(|r| r.state.unwrap())
        .collect()
}

/// What a table of `n + 1` rows over the tape holds: each row's id, its
/// answer, and the last row's error.
fn check_table(path: &std::path::Path, n: usize) {
    let rows = table_rows(path, &["id", "state", "spam.noul", "model", "error"]);
    assert_eq!(rows.len(), n + 1, "{}", path.display());
    for (i, row) in rows.iter().enumerate().take(n) {
        // CSV and TSV read every column back as text.
        let p = row["spam.noul"]
            .as_f64()
            .or_else(|| row["spam.noul"].as_str()?.parse().ok());
        assert_eq!(p, Some(spam_p(i)), "{row}");
        assert_eq!(row["id"], json!(format!("r{i}")), "{row}");
        assert!(row["error"].is_null() || row["error"] == json!(""), "{row}");
    }
    let last = &rows[n];
    assert!(
        last["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{last}"
    );
    assert!(
        last["spam.noul"].is_null() || last["spam.noul"] == json!(""),
        "{last}"
    );
}

#[test]
fn every_format_round_trips_through_batch() {
    let dir = TempDir::new("tables-round-trip");
    let n = 12;
    let (tape, q, states) = setup(&dir, n);
    let cols = [
        "--state-column",
        "state",
        "--id-column",
        "id",
        "--no-progress",
    ];
    // CSV in → Parquet out → TSV → Arrow file → Arrow stream → CSV: each out
    // the next run's states, every input column kept along the way.
    let mut from = states;
    for out in ["o.parquet", "o.tsv", "o.arrow", "o.arrows", "o.csv"] {
        let run = tn_args(dir.path(), &tape_batch(&tape, &q, &from, out, &cols));
        assert_eq!(run.code, 3, "{out}: one row is not on the tape: {run:?}");
        assert!(run.stdout.contains(&format!("results in {out}")), "{run:?}");
        let path = dir.join(out);
        check_table(&path, n);
        let journal = out_lines(&dir.join(&format!("{out}.jsonl")));
        assert_eq!(journal.len(), n + 1, "{out}");
        assert!(journal.iter().all(|l| l["id"].is_string()), "{journal:?}");
        // The next run reads this one's table: its result columns are
        // replaced by the next run's own.
        from = path.display().to_string();
    }
    // A table in, JSONL out: today's result lines, with the row's id.
    let run = tn_args(dir.path(), &tape_batch(&tape, &q, &from, "o.jsonl", &cols));
    assert_eq!(run.code, 3, "{run:?}");
    let lines = out_lines(&dir.join("o.jsonl"));
    assert_eq!(lines.len(), n + 1);
    let first = lines.iter().find(|l| l["line"] == 1).unwrap();
    assert_eq!(first["id"], "r0");
    assert_eq!(
        first["decision"]["answers"]["spam"]["noul"].as_f64(),
        Some(spam_p(0))
    );
}

#[test]
fn a_parquet_run_resumes_and_reruns_its_errors_through_its_journal() {
    let dir = TempDir::new("tables-resume");
    let n = 20;
    let (tape, q, states) = setup(&dir, n);
    let cols = [
        "--state-column",
        "state",
        "--id-column",
        "id",
        "--no-progress",
    ];
    let args = tape_batch(&tape, &q, &states, "o.parquet", &cols);
    let first = tn_args(dir.path(), &args);
    assert_eq!(first.code, 3, "{first:?}");
    let journal = dir.join("o.parquet.jsonl");
    // A crash: the table not written, the journal's last lines lost (one torn).
    std::fs::remove_file(dir.join("o.parquet")).unwrap();
    let text = std::fs::read_to_string(&journal).unwrap();
    let kept: Vec<&str> = text.lines().take(1 + n - 5).collect();
    std::fs::write(&journal, kept.join("\n") + "\n{\"line\":7,\"deci").unwrap();
    let resumed = tn_args(dir.path(), &args);
    assert_eq!(resumed.code, 3, "{resumed:?}");
    assert!(
        resumed.stderr.contains("dropped a torn final line"),
        "{resumed:?}"
    );
    assert!(
        resumed
            .stdout
            .contains(&format!("skipped {} as already done", n - 5)),
        "{resumed:?}"
    );
    check_table(&dir.join("o.parquet"), n);
    assert_eq!(out_lines(&journal).len(), n + 1, "no row twice");
    // --rerun-errors asks the failed row again and writes the table anew.
    let mut rerun = args.clone();
    rerun.push("--rerun-errors".into());
    let again = tn_args(dir.path(), &rerun);
    assert_eq!(again.code, 3, "{again:?}");
    assert!(
        again
            .stderr
            .contains("--rerun-errors: 1 error line removed"),
        "{again:?}"
    );
    assert!(
        again
            .stdout
            .contains(&format!("done 0, failed 1, skipped {n}")),
        "{again:?}"
    );
    check_table(&dir.join("o.parquet"), n);
    // Other inputs are refused as for JSONL: the journal's fingerprint.
    let mut other = args.clone();
    let at = other.iter().position(|a| a == "state").unwrap();
    other[at] = "id".into();
    let refused = tn_args(dir.path(), &other);
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(
        refused.stderr.contains("answers other inputs"),
        "{refused:?}"
    );
}

#[test]
fn a_bad_column_or_a_table_without_its_journal_is_refused_by_name() {
    let dir = TempDir::new("tables-bad");
    let (tape, q, states) = setup(&dir, 3);
    let bad = ["--state-column", "txt"];
    let out = tn_args(dir.path(), &tape_batch(&tape, &q, &states, "o.csv", &bad));
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr.trim_end(),
        format!(
            "toolnexus: error: --states {states}: no column \"txt\" (its columns: \"id\", \"state\")"
        )
    );
    assert!(!dir.join("o.csv").exists() && !dir.join("o.csv.jsonl").exists());
    std::fs::write(dir.join("o.parquet"), "someone else's").unwrap();
    let cols = ["--state-column", "state"];
    let out = tn_args(
        dir.path(),
        &tape_batch(&tape, &q, &states, "o.parquet", &cols),
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("exists without its journal"), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(dir.join("o.parquet")).unwrap(),
        "someone else's"
    );
}
