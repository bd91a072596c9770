use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;

use super::*;
use crate::assess::synthetic::{SyntheticOptions, synthetic_run};
use crate::assess::{Example, Gold, Outcome, Run, summarize};
use crate::classifier::{ClassifierOptions, ClassifierStyle, Decision, create_classifier};
use crate::judge::{noul, questions};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tn-stream-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Example lines without end, made only as they are read: a reader that
/// loaded its input whole would never return.
struct Endless {
    line: usize,
    pending: Vec<u8>,
    produced: Arc<AtomicUsize>,
}

impl Read for Endless {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pending.is_empty() {
            self.line += 1;
            self.pending = format!(
                "{{\"id\": \"e{}\", \"state\": {}, \"labels\": {{\"spam\": true}}}}\n",
                self.line, self.line
            )
            .into_bytes();
        }
        let n = buf.len().min(self.pending.len());
        buf[..n].copy_from_slice(&self.pending[..n]);
        self.pending.drain(..n);
        self.produced.fetch_add(n, Ordering::Relaxed);
        Ok(n)
    }
}

#[test]
fn the_examples_reader_reads_no_further_than_its_buffer() {
    let qs = questions(&[noul("spam", "Is it spam?")]).unwrap();
    let produced = Arc::new(AtomicUsize::new(0));
    let input = std::io::BufReader::with_capacity(
        4096,
        Endless {
            line: 0,
            pending: Vec::new(),
            produced: produced.clone(),
        },
    );
    let reader = ExampleReader::new(input, "endless.jsonl", &qs);
    let ids: Vec<String> = reader.take(1000).map(|e| e.unwrap().id).collect();
    assert_eq!(ids.last().map(String::as_str), Some("e1000"));
    // 1,000 lines of about 55 bytes, and at most one buffer more.
    let line = 60;
    assert!(produced.load(Ordering::Relaxed) <= 1000 * line + 4096);
}

fn answering(p: f64) -> crate::classifier::Classifier {
    create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
            Box::pin(async move {
                Decision::from_value(
                    &json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": p}}}),
                )
                .map_err(|e| e.to_string())
            })
        })),
        ..Default::default()
    })
    .unwrap()
}

fn example(i: usize) -> Example {
    Example::new(
        format!("x{i}"),
        json!(i),
        BTreeMap::from([("spam".to_string(), Gold::Noul(i.is_multiple_of(3)))]),
    )
}

#[tokio::test]
async fn a_run_pulls_an_example_only_when_a_call_has_finished() {
    let qs = questions(&[noul("spam", "Is it spam?")]).unwrap();
    let d = dir("pull");
    let path = d.join("run.jsonl");
    start_file(&path, &qs).unwrap();
    let pulled = Arc::new(AtomicUsize::new(0));
    let written = Arc::new(AtomicUsize::new(0));
    let most_ahead = Arc::new(AtomicUsize::new(0));
    let (p, w, m) = (pulled.clone(), written.clone(), most_ahead.clone());
    let judge = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
            let ahead = p.load(Ordering::SeqCst) - w.load(Ordering::SeqCst);
            m.fetch_max(ahead, Ordering::SeqCst);
            Box::pin(async move {
                tokio::task::yield_now().await;
                Decision::from_value(
                    &json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": 0.7}}}),
                )
                .map_err(|e| e.to_string())
            })
        })),
        ..Default::default()
    })
    .unwrap();
    let examples = (0..500).map(example).inspect(|_| {
        pulled.fetch_add(1, Ordering::SeqCst);
    });
    let options = RunOptions {
        concurrency: 4,
        ..Default::default()
    };
    ask(&judge, &qs, examples, 500, &path, &options, |_| {
        written.fetch_add(1, Ordering::SeqCst);
    })
    .await
    .unwrap();
    assert_eq!(written.load(Ordering::SeqCst), 500);
    let ahead = most_ahead.load(Ordering::SeqCst);
    assert!(ahead <= 4, "{ahead} examples held at once, concurrency 4");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_file_summary_is_the_summary_of_the_loaded_run() {
    let d = dir("summary");
    let path = d.join("run.jsonl");
    let mut run = synthetic_run(&SyntheticOptions {
        rows: 3_000,
        ..Default::default()
    });
    // A failure replaced by a later row (as a rerun of the errors writes
    // it), a failure left, and a torn last line.
    let failed = |id: &str| {
        let mut r = run.rows[0].clone();
        r.id = id.to_string();
        r.outcome = Outcome::Failed {
            kind: "timeout".into(),
            message: "slow".into(),
        };
        r
    };
    let (f7, f9) = (failed("s7"), failed("s9"));
    run.rows.insert(7, f7);
    run.rows.remove(8);
    run.rows[9] = f9;
    let mut again = run.rows[7].clone();
    again.outcome = synthetic_run(&SyntheticOptions {
        rows: 8,
        ..Default::default()
    })
    .rows[7]
        .outcome
        .clone();
    let loaded = written_again_and_torn(&path, &run, again);
    assert_eq!(loaded.rows.len(), 3_000);
    for s in file_summaries_match(&path, &loaded, ["claim", "topic"]) {
        assert_eq!((s.rows, s.failed_rows), (3_000, 1));
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// `run` written to `path` with `again` (a row of an id already there, as a
/// rerun of the errors writes it) and a torn last line after it; the run as
/// `Run::load` reads it back.
fn written_again_and_torn(path: &Path, run: &Run, again: crate::assess::Row) -> Run {
    let mut text = run.to_jsonl();
    text.push_str(
        Run::new(run.questions.clone(), vec![again])
            .to_jsonl()
            .lines()
            .nth(1)
            .unwrap(),
    );
    text.push_str("\n{\"id\":\"s5\",\"lab");
    std::fs::write(path, &text).unwrap();
    Run::load(path).unwrap()
}

/// The file's summaries equal the loaded run's, with default options and
/// with a gate on `gate` and bands; they are returned for more checks.
fn file_summaries_match(path: &Path, loaded: &Run, gate: [&str; 2]) -> Vec<Summary> {
    let options = [
        SummaryOptions::default(),
        SummaryOptions {
            gate_keys: Some(gate.map(String::from).to_vec()),
            bands: Some((Default::default(), Default::default())),
            ..Default::default()
        },
    ];
    options
        .iter()
        .map(|options| {
            let (s, torn) = summarize_file(path, options).unwrap();
            assert_eq!(s, summarize(loaded, options));
            assert_eq!(torn, loaded.torn_line);
            s
        })
        .collect()
}

#[test]
fn a_varied_file_summary_is_the_summary_of_the_loaded_run() {
    // Every question kind, latencies and costs, failed rows, rows without a
    // label, decisions without an answer; a failed row asked again later
    // (the later row wins) and a torn last line; enough rows that each
    // ordered figure spills to its temporary file in a test build.
    let d = dir("varied");
    let path = d.join("run.jsonl");
    let run = crate::assess::tally::tests::varied_run(2_000);
    assert!(matches!(run.rows[11].outcome, Outcome::Failed { .. }));
    let mut again = run.rows[11].clone();
    again.outcome = run.rows[12].outcome.clone();
    let loaded = written_again_and_torn(&path, &run, again);
    assert_eq!(loaded.rows.len(), 2_000);
    assert!(loaded.rows[11].decision().is_some());
    for s in file_summaries_match(&path, &loaded, ["quality", "topic"]) {
        assert!(s.latency_p95_ms.is_some() && s.cost.known_rows > 0);
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[tokio::test]
async fn a_new_run_file_is_summarised_as_its_rows_are_written() {
    // Answers that vary with the state, several calls at once (rows are
    // written as calls finish, not in the examples' order) and one failure.
    let qs = questions(&[noul("spam", "Is it spam?")]).unwrap();
    let d = dir("fresh");
    let (examples, out) = (d.join("ex.jsonl"), d.join("run.jsonl"));
    let text: String = (0..600)
        .map(|i| {
            format!(
                "{{\"id\": \"x{i}\", \"state\": {i}, \"labels\": {{\"spam\": {}}}}}\n",
                i % 3 == 0
            )
        })
        .collect();
    std::fs::write(&examples, text).unwrap();
    let judge = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        evaluate: Some(Arc::new(|_ctx, state, _qs| {
            let i = state.as_u64().unwrap_or(0);
            Box::pin(async move {
                if i == 7 {
                    return Err("no answer".to_string());
                }
                tokio::task::yield_now().await;
                let p = (i % 97) as f64 / 97.0;
                Decision::from_value(
                    &json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": p}}}),
                )
                .map_err(|e| e.to_string())
            })
        })),
        ..Default::default()
    })
    .unwrap();
    let options = RunOptions {
        concurrency: 8,
        ..Default::default()
    };
    let r = run_examples_file(&judge, &qs, &examples, &out, options)
        .await
        .unwrap();
    assert_eq!((r.asked, r.summary.failed_rows), (600, 1));
    let (s, _) = summarize_file(&out, &SummaryOptions::default()).unwrap();
    assert_eq!(r.summary, s);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_run_reader_gives_the_errors_of_a_whole_read() {
    let d = dir("errors");
    let path = d.join("run.jsonl");
    let qs = questions(&[noul("spam", "Is it spam?")]).unwrap();
    let mut text = Run::new(qs, Vec::new()).to_jsonl();
    text.push_str("\n{\"id\":\"a\",\"labels\":{\"spam\":true}}\n");
    std::fs::write(&path, &text).unwrap();
    let whole = Run::load(&path).unwrap_err().to_string();
    let e = RunReader::open(&path)
        .unwrap()
        .find_map(Result::err)
        .unwrap();
    assert_eq!(e.to_string(), whole);
    assert!(whole.ends_with(":3: row \"a\" needs exactly one of \"decision\" and \"error\""));
    std::fs::write(&path, "").unwrap();
    let whole = Run::load(&path).unwrap_err().to_string();
    assert_eq!(RunReader::open(&path).err().unwrap().to_string(), whole);
    std::fs::remove_dir_all(&d).unwrap();
}

#[tokio::test]
async fn a_file_run_resumes_as_the_in_memory_run_does() {
    let qs = questions(&[noul("spam", "Is it spam?")]).unwrap();
    let d = dir("resume");
    let (labels, a, b) = (d.join("l.jsonl"), d.join("a.jsonl"), d.join("b.jsonl"));
    let examples: Vec<Example> = (0..40).map(example).collect();
    let line = |e: &Example| {
        format!(
            "{{\"id\": {:?}, \"state\": {}, \"labels\": {{\"spam\": {}}}}}\n",
            e.id, e.state, e.labels["spam"]
        )
    };
    let all: String = examples.iter().map(line).collect();
    let first: String = examples[..25].iter().map(line).collect();
    // A first run over part of the set, then a torn row, then the whole set.
    let judge = answering(0.8);
    // One at a time: both files get their rows in the same order.
    let one_by_one = || RunOptions {
        concurrency: 1,
        ..Default::default()
    };
    std::fs::write(&labels, &first).unwrap();
    let one = run_examples_file(&judge, &qs, &labels, &a, one_by_one())
        .await
        .unwrap();
    assert_eq!((one.asked, one.summary.rows), (25, 25));
    crate::assess::run_examples(&judge, &qs, &examples[..25], &b, one_by_one())
        .await
        .unwrap();
    for p in [&a, &b] {
        let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
        std::io::Write::write_all(&mut f, b"{\"id\":\"x30\",\"lab").unwrap();
    }
    std::fs::write(&labels, &all).unwrap();
    let two = run_examples_file(&judge, &qs, &labels, &a, one_by_one())
        .await
        .unwrap();
    crate::assess::run_examples(&judge, &qs, &examples, &b, one_by_one())
        .await
        .unwrap();
    let whole = Run::load(&b).unwrap();
    assert_eq!(two.asked, 15);
    assert_eq!(two.torn_line, Some(27));
    let mut s = summarize(&whole, &SummaryOptions::default());
    // Latencies are measured, so they differ between the two files.
    let mut t = two.summary.clone();
    (s.latency_p50_ms, s.latency_p95_ms) = (None, None);
    (t.latency_p50_ms, t.latency_p95_ms) = (None, None);
    assert_eq!(t, s);
    let again = run_examples_file(&judge, &qs, &labels, &a, RunOptions::default())
        .await
        .unwrap();
    assert_eq!((again.asked, again.summary.rows), (0, 40));
    std::fs::remove_dir_all(&d).unwrap();
}

#[tokio::test]
async fn a_bad_examples_file_asks_nothing() {
    let qs = questions(&[noul("spam", "Is it spam?")]).unwrap();
    let d = dir("bad");
    let (labels, out) = (d.join("l.jsonl"), d.join("run.jsonl"));
    let mut text: String = (0..10)
        .map(|i| format!("{{\"id\": \"a{i}\", \"state\": {i}, \"labels\": {{\"spam\": true}}}}\n"))
        .collect();
    text.push_str("{\"id\": \"a3\", \"state\": 0, \"labels\": {\"spam\": true}}\n{\"state\": 1,\n");
    std::fs::write(&labels, &text).unwrap();
    let e = run_examples_file(&answering(0.5), &qs, &labels, &out, RunOptions::default())
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        crate::assess::read_examples(&labels, &qs)
            .unwrap_err()
            .to_string()
    );
    assert!(
        e.to_string()
            .ends_with(":11: duplicate id \"a3\" (first on line 4)"),
        "{e}"
    );
    assert!(!out.exists());
    std::fs::remove_dir_all(&d).unwrap();
}

/// A FIFO at `path` whose writer writes `head`, then holds back `tail` until
/// told to go (or a minute has passed, a safety net the test never waits on
/// unless it fails): a reader that loaded the file whole could hand out
/// nothing before the writer let go. `None` where there is no `mkfifo`.
fn held_back(
    path: &Path,
    head: String,
    tail: String,
) -> Option<(
    Arc<std::sync::atomic::AtomicBool>,
    std::sync::mpsc::Sender<()>,
    std::thread::JoinHandle<()>,
)> {
    let made = std::process::Command::new("mkfifo").arg(path).status();
    if !made.is_ok_and(|s| s.success()) {
        return None;
    }
    let released = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let (path, r) = (path.to_path_buf(), released.clone());
    let writer = std::thread::spawn(move || {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.write_all(head.as_bytes()).unwrap();
        f.flush().unwrap();
        let _ = wait.recv_timeout(std::time::Duration::from_secs(60));
        r.store(true, Ordering::SeqCst);
        f.write_all(tail.as_bytes()).unwrap();
    });
    Some((released, go, writer))
}

#[test]
fn a_run_file_is_read_a_row_at_a_time_not_whole() {
    let d = dir("fifo-run");
    let path = d.join("run.jsonl");
    let rows = synthetic_run(&SyntheticOptions {
        rows: 200,
        ..Default::default()
    });
    let text = rows.to_jsonl();
    let cut = text.match_indices('\n').nth(100).unwrap().0 + 1;
    let (head, tail) = (text[..cut].to_string(), text[cut..].to_string());
    let Some((released, go, writer)) = held_back(&path, head, tail) else {
        return;
    };
    let mut reader = RunReader::open(&path).unwrap();
    assert_eq!(reader.next().unwrap().unwrap().id, "s0");
    assert!(
        !released.load(Ordering::SeqCst),
        "the first row waited for the whole file"
    );
    go.send(()).unwrap();
    assert_eq!(reader.collect::<Result<Vec<_>, _>>().unwrap().len(), 199);
    writer.join().unwrap();
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_out_file_is_read_a_line_at_a_time_not_whole() {
    let d = dir("fifo-out");
    let path = d.join("out.jsonl");
    let line = |i: usize| format!("{{\"line\":{i},\"error\":\"e{i}\"}}\n");
    let head: String = std::iter::once("{\"toolnexus\":\"batch\",\"version\":1}\n".to_string())
        .chain((1..=100).map(line))
        .collect();
    let Some((released, go, writer)) = held_back(&path, head, (101..=200).map(line).collect())
    else {
        return;
    };
    let mut lines = crate::assess::out::OutLines::open(&path).unwrap();
    assert_eq!(lines.next().unwrap().unwrap().error(), Some("e1"));
    assert!(
        !released.load(Ordering::SeqCst),
        "the first line waited for the whole file"
    );
    go.send(()).unwrap();
    assert_eq!(lines.collect::<Result<Vec<_>, _>>().unwrap().len(), 199);
    writer.join().unwrap();
    std::fs::remove_dir_all(&d).unwrap();
}
