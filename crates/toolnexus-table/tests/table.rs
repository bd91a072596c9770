//! The table crate end to end: every format read in bounded chunks, states
//! from columns, errors naming the file, the row and the column, a result
//! table written from a journal in row order.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use serde_json::{Value, json};
use toolnexus_table::{
    CHUNK_ROWS, Format, Input, Journal, StateSpec, TableError, TableWriter, write_table,
};

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("toolnexus-table-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }
    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `n` rows: `id` 1..=n and `text` "state i".
fn batch(n: usize) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("text", DataType::Utf8, true),
    ]));
    let ids = Int64Array::from_iter_values(1..=n as i64);
    let texts = StringArray::from_iter_values((1..=n).map(|i| format!("state {i}")));
    RecordBatch::try_new(schema, vec![Arc::new(ids), Arc::new(texts)]).unwrap()
}

fn write(path: &Path, format: Format, b: &RecordBatch) {
    let mut w = TableWriter::create(path, format, b.schema()).unwrap();
    w.write(b).unwrap();
    w.finish().unwrap();
}

fn text_spec() -> StateSpec {
    StateSpec {
        column: Some("text".into()),
        id: Some("id".into()),
        ..Default::default()
    }
}

#[test]
fn every_format_reads_back_in_chunks_of_at_most_chunk_rows() {
    let dir = Dir::new("formats");
    let n = 2 * CHUNK_ROWS + 5;
    // One record batch larger than a chunk: the reader hands it out in slices.
    let b = batch(n);
    for (name, format) in [
        ("s.csv", Format::Csv),
        ("s.tsv", Format::Tsv),
        ("s.parquet", Format::Parquet),
        ("s.arrow", Format::Arrow),
        ("s.arrows", Format::ArrowStream),
    ] {
        let path = dir.join(name);
        write(&path, format, &b);
        let input = Input::open(&path, text_spec()).unwrap();
        assert_eq!(input.format(), format);
        let survey = input.survey().unwrap();
        assert_eq!((survey.rows, survey.last_line), (n, n), "{name}");
        let mut seen = 0;
        for chunk in input.reader().unwrap() {
            let chunk = chunk.unwrap();
            assert!(
                chunk.rows.len() <= CHUNK_ROWS,
                "{name}: a chunk of {}",
                chunk.rows.len()
            );
            assert_eq!(chunk.batch.num_rows(), chunk.rows.len());
            for row in &chunk.rows {
                seen += 1;
                assert_eq!(row.n, seen);
                assert_eq!(row.state, Ok(json!(format!("state {seen}"))), "{name}");
                // CSV keeps every column as its text.
                let id = if matches!(format, Format::Csv | Format::Tsv) {
                    json!(seen.to_string())
                } else {
                    json!(seen)
                };
                assert_eq!(row.id, Some(id), "{name}");
            }
        }
        assert_eq!(seen, n, "{name}");
    }
}

#[test]
fn a_jsonl_file_is_read_a_chunk_at_a_time_not_whole() {
    // A FIFO whose writer holds back the rest of the file until the first
    // chunk has been handed out: a reader that loaded the file whole could
    // not hand it out before the writer let go.
    let dir = Dir::new("fifo");
    let path = dir.join("states.jsonl");
    let made = std::process::Command::new("mkfifo").arg(&path).status();
    if !made.is_ok_and(|s| s.success()) {
        return; // no mkfifo here: nothing to show
    }
    let released = Arc::new(AtomicBool::new(false));
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let writer = {
        let (path, released) = (path.clone(), released.clone());
        std::thread::spawn(move || {
            use std::io::Write as _;
            let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            for i in 0..3 * CHUNK_ROWS {
                writeln!(f, "{{\"n\": {i}}}").unwrap();
            }
            f.flush().unwrap();
            // A safety net only: the test never waits on it unless it fails.
            let _ = wait.recv_timeout(std::time::Duration::from_secs(60));
            released.store(true, Ordering::SeqCst);
            for i in 3 * CHUNK_ROWS..4 * CHUNK_ROWS {
                writeln!(f, "{{\"n\": {i}}}").unwrap();
            }
        })
    };
    let input = Input::open(&path, StateSpec::default()).unwrap();
    let mut reader = input.reader().unwrap();
    let first = reader.next().unwrap().unwrap();
    assert!(
        !released.load(Ordering::SeqCst),
        "the first chunk waited for the whole file"
    );
    assert_eq!(first.rows.len(), CHUNK_ROWS);
    assert_eq!(first.rows[0].state, Ok(json!({"n": 0})));
    go.send(()).unwrap();
    let rest: usize = reader.map(|c| c.unwrap().rows.len()).sum();
    assert_eq!(rest, 3 * CHUNK_ROWS);
    writer.join().unwrap();
}

#[test]
fn jsonl_lines_keep_their_numbers_and_columns_make_states() {
    let dir = Dir::new("jsonl");
    let path = dir.join("s.jsonl");
    std::fs::write(
        &path,
        "{\"id\":\"a\",\"text\":\"hi\",\"lang\":\"en\"}\n\n{\"id\":\"b\",\"text\":null}\r\n{oops\n",
    )
    .unwrap();
    let survey = Input::open(&path, text_spec()).unwrap().survey().unwrap();
    assert_eq!((survey.rows, survey.last_line), (3, 5));
    let plain = Input::open(&path, StateSpec::default())
        .unwrap()
        .survey()
        .unwrap();
    assert_ne!(
        plain.digest, survey.digest,
        "the columns chosen are part of the digest"
    );
    let rows: Vec<_> = Input::open(&path, text_spec())
        .unwrap()
        .reader()
        .unwrap()
        .rows()
        .0
        .collect();
    assert_eq!(rows[0].state, Ok(json!("hi")));
    assert_eq!(rows[0].id, Some(json!("a")));
    assert_eq!(rows[1].n, 3);
    assert_eq!(
        rows[1].state,
        Err("line 3: field \"text\" is null, not a state".into())
    );
    assert!(
        rows[2]
            .state
            .as_ref()
            .unwrap_err()
            .starts_with("line 4: invalid JSON")
    );
    let spec = StateSpec {
        columns: vec!["text".into(), "lang".into()],
        ..Default::default()
    };
    let rows: Vec<_> = Input::open(&path, spec)
        .unwrap()
        .reader()
        .unwrap()
        .rows()
        .0
        .collect();
    assert_eq!(rows[0].state, Ok(json!({"text": "hi", "lang": "en"})));
    assert_eq!(rows[1].state, Err("line 3: no field \"lang\"".into()));
}

#[test]
fn bad_input_names_the_file_the_row_and_the_column() {
    let dir = Dir::new("bad");
    let csv = dir.join("s.csv");
    std::fs::write(&csv, "id,text\n1,\"{\"\"a\"\": 1}\"\n2,\n").unwrap();
    let spec = StateSpec {
        column: Some("txt".into()),
        ..Default::default()
    };
    let e = Input::open(&csv, spec).unwrap_err();
    assert!(matches!(e, TableError::NoColumn { .. }));
    assert_eq!(
        e.to_string(),
        format!(
            "{}: no column \"txt\" (its columns: \"id\", \"text\")",
            csv.display()
        )
    );
    let rows: Vec<_> = Input::open(&csv, text_spec())
        .unwrap()
        .reader()
        .unwrap()
        .rows()
        .0
        .collect();
    assert_eq!(rows[0].state, Ok(json!({"a": 1})));
    assert_eq!(
        rows[1].state,
        Err("row 2: column \"text\" is null, not a state".into())
    );
    // A row with a field too many: the CSV reader's own words, with the file.
    std::fs::write(&csv, "id,text\n1,a\n2,b,c\n").unwrap();
    let e = Input::open(&csv, text_spec())
        .unwrap()
        .survey()
        .unwrap_err();
    let said = e.to_string();
    assert!(
        said.starts_with(&format!("{}: cannot read it as CSV: ", csv.display())),
        "{said}"
    );
    // A JSONL file with a labelled example, and an empty one.
    let jsonl = dir.join("s.jsonl");
    std::fs::write(
        &jsonl,
        "\"a\"\n{\"state\": \"x\", \"labels\": {\"spam\": true}}\n",
    )
    .unwrap();
    let e = Input::open(&jsonl, StateSpec::default())
        .unwrap()
        .survey()
        .unwrap_err();
    assert!(matches!(e, TableError::Labelled { line: 2, .. }), "{e}");
    std::fs::write(&jsonl, "\n\n").unwrap();
    let e = Input::open(&jsonl, StateSpec::default())
        .unwrap()
        .survey()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}: no state in it (the file is empty or holds only blank lines)",
            jsonl.display()
        )
    );
    std::fs::write(&jsonl, b"\"a\"\n\"\xff\"\n").unwrap();
    let e = Input::open(&jsonl, StateSpec::default())
        .unwrap()
        .survey()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}: not UTF-8 text (an invalid byte at offset 5)",
            jsonl.display()
        )
    );
}

fn decision(p: f64) -> String {
    json!({"model": "rule-1", "answers": {"spam": {"type": "noul", "noul": p}},
           "usage": {"input_tokens": 10, "output_tokens": 1}})
    .to_string()
}

#[test]
fn a_journal_of_several_runs_reads_back_in_row_order() {
    let dir = Dir::new("journal");
    let path = dir.join("j.jsonl");
    // Run one: rows 2, 1, 4 (an error), 5; run two (a rerun): 3 and 4 decided.
    let lines = [
        "{\"toolnexus\":\"batch\",\"version\":1}".to_string(),
        format!("{{\"line\":2,\"decision\":{}}}", decision(0.2)),
        format!("{{\"line\":1,\"decision\":{}}}", decision(0.1)),
        "{\"line\":4,\"error\":\"timed out\"}".to_string(),
        format!("{{\"line\":5,\"decision\":{}}}", decision(0.5)),
        format!("{{\"line\":3,\"decision\":{}}}", decision(0.3)),
        format!("{{\"line\":4,\"id\":\"x\",\"decision\":{}}}", decision(0.4)),
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let mut j = Journal::open(&path).unwrap();
    for n in 1..=5 {
        let d = j.take(n).unwrap().unwrap().unwrap();
        assert_eq!(d.noul("spam").unwrap().noul, n as f64 / 10.0, "line {n}");
    }
    assert!(j.take(6).unwrap().is_none());
}

#[test]
fn a_result_table_keeps_the_input_columns_and_adds_the_flat_ones() {
    let dir = Dir::new("write");
    let states = dir.join("s.arrow");
    write(&states, Format::Arrow, &batch(3));
    let journal = dir.join("j.jsonl");
    let body = [
        "{\"toolnexus\":\"batch\"}".to_string(),
        format!("{{\"line\":3,\"decision\":{}}}", decision(0.3)),
        "{\"line\":1,\"error\":\"timed out\"}".to_string(),
    ];
    std::fs::write(&journal, body.join("\n") + "\n").unwrap();
    let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("spam", "Spam?")]).unwrap();
    let input = Input::open(&states, text_spec()).unwrap();
    for (name, format) in [
        ("o.parquet", Format::Parquet),
        ("o.arrows", Format::ArrowStream),
    ] {
        let out = dir.join(name);
        assert_eq!(write_table(&input, &journal, &qs, &out, format).unwrap(), 3);
        // Read back: every column, as JSON objects.
        let spec = StateSpec {
            columns: [
                "id",
                "text",
                "spam.noul",
                "model",
                "input_tokens",
                "cost",
                "error",
            ]
            .map(String::from)
            .to_vec(),
            ..Default::default()
        };
        let rows: Vec<Value> = Input::open(&out, spec)
            .unwrap()
            .reader()
            .unwrap()
            .rows()
            .0
            .map(|r| r.state.unwrap())
            .collect();
        assert_eq!(
            rows,
            [
                json!({"id": 1, "text": "state 1", "spam.noul": null, "model": null, "input_tokens": null, "cost": null, "error": "timed out"}),
                json!({"id": 2, "text": "state 2", "spam.noul": null, "model": null, "input_tokens": null, "cost": null, "error": "not asked yet"}),
                json!({"id": 3, "text": "state 3", "spam.noul": 0.3, "model": "rule-1", "input_tokens": 10, "cost": null, "error": null}),
            ],
            "{name}"
        );
    }
    // Nothing is left behind: the temporary file was renamed over the table.
    let leftovers = |d: &Path| {
        std::fs::read_dir(d)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".tmp")
            })
            .count()
    };
    assert_eq!(leftovers(&dir.0), 0);
}
