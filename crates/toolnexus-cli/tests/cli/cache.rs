//! `batch --cache` and `toolnexus cache stats|clear|export`: a rerun sends
//! nothing, duplicates in the input are asked once, hits are marked, and a
//! file that is not a cache is refused naming it.

use serde_json::Value;

use crate::support::{TempDir, Upstream, out_lines, spam_questions, tn};

fn upstream() -> Upstream {
    Upstream::start(|got| {
        let n = got.json()["state"]["n"].as_u64().unwrap_or(0);
        let p = (n % 10) as f64 / 10.0;
        (
            200,
            vec![],
            format!(
                r#"{{"model":"jev-1.13","answers":{{"spam":{{"type":"noul","noul":{p}}}}},"usage":{{"input_tokens":9,"output_tokens":1,"cost":0.0001}}}}"#
            ),
        )
    })
}

fn batch(
    dir: &TempDir,
    up: &Upstream,
    states: &str,
    out: &str,
    cache: &str,
) -> crate::support::Out {
    let questions = spam_questions().to_string();
    tn(
        dir.path(),
        &[
            "batch",
            "--style",
            "systemone",
            "--base-url",
            &up.base_url,
            "--questions",
            &questions,
            "--states",
            states,
            "--out",
            out,
            "--cache",
            cache,
            "--no-progress",
        ],
    )
}

#[test]
fn a_cached_rerun_sends_nothing_and_duplicates_are_asked_once() {
    let dir = TempDir::new("cache-batch");
    let up = upstream();
    // 12 lines, 8 distinct states.
    let states: String = [0, 1, 2, 3, 1, 4, 5, 2, 6, 7, 0, 1]
        .iter()
        .map(|n| format!("{{\"n\": {n}}}\n"))
        .collect();
    let states = dir.write("states.jsonl", &states);
    let cache = dir.join("c.db").display().to_string();
    let first = dir.join("first.jsonl").display().to_string();
    let out = batch(&dir, &up, &states, &first, &cache);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(up.requests().len(), 8, "each distinct state asked once");
    let lines = out_lines(std::path::Path::new(&first));
    assert_eq!(lines.len(), 12);
    let cached = lines
        .iter()
        .filter(|l| l["cached"] == Value::Bool(true))
        .count();
    assert_eq!(
        cached, 4,
        "the duplicates are marked as served from the cache"
    );
    assert!(
        out.stdout.contains("(4 from the cache, not sent)"),
        "{}",
        out.stdout
    );

    let second = dir.join("second.jsonl").display().to_string();
    let out = batch(&dir, &up, &states, &second, &cache);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(up.requests().len(), 8, "the rerun sent 0 requests");
    let lines = out_lines(std::path::Path::new(&second));
    assert!(
        lines.iter().all(|l| l["cached"] == Value::Bool(true)),
        "{lines:?}"
    );
    for l in &lines {
        let line = l["line"].as_u64().unwrap() as usize;
        let n = [0, 1, 2, 3, 1, 4, 5, 2, 6, 7, 0, 1][line - 1];
        assert_eq!(
            l["decision"]["answers"]["spam"]["noul"],
            Value::from((n % 10) as f64 / 10.0),
            "{l}"
        );
    }

    let out = tn(dir.path(), &["cache", "stats", &cache, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let s: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(s["entries"], 8, "{s}");
    assert_eq!(s["models"]["jev-1.13"], 8, "{s}");
    let out = tn(dir.path(), &["cache", "export", &cache]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout.lines().count(), 8);
    let first_line: Value = serde_json::from_str(out.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(first_line["model"], "jev-1.13");
    assert!(first_line["decision"]["answers"]["spam"].is_object());
    let out = tn(dir.path(), &["cache", "clear", &cache]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("cleared 8 entries"), "{}", out.stdout);
    let out = tn(dir.path(), &["cache", "stats", &cache]);
    assert!(out.stdout.contains("0 entries"), "{}", out.stdout);
}

#[test]
fn a_file_that_is_not_a_cache_is_refused_naming_it() {
    let dir = TempDir::new("cache-foreign");
    let notes = dir.write(
        "notes.txt",
        "not a database, only some words long enough for a header page\n",
    );
    for args in [
        vec!["cache", "stats", notes.as_str()],
        vec!["cache", "export", notes.as_str()],
    ] {
        let out = tn(dir.path(), &args);
        assert_eq!(out.code, 2, "{out:?}");
        assert!(out.stderr.contains("notes.txt"), "{}", out.stderr);
        assert!(
            out.stderr.contains("not a SQLite database"),
            "{}",
            out.stderr
        );
    }
    let up = upstream();
    let states = dir.write("states.jsonl", "{\"n\": 1}\n");
    let out_file = dir.join("out.jsonl").display().to_string();
    let out = batch(&dir, &up, &states, &out_file, &notes);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        up.requests().is_empty(),
        "nothing is sent before the cache opens"
    );
    let missing = dir.join("none.db").display().to_string();
    let out = tn(dir.path(), &["cache", "stats", &missing]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("no such cache file"), "{}", out.stderr);
}

#[test]
fn batch_rpm_and_tpm_limit_a_live_style_and_tpm_is_refused_for_a_tape() {
    let dir = TempDir::new("batch-limits");
    let up = upstream();
    let states: String = (0..20).map(|n| format!("{{\"n\": {n}}}\n")).collect();
    let states = dir.write("states.jsonl", &states);
    let out_file = dir.join("out.jsonl").display().to_string();
    let questions = spam_questions().to_string();
    let out = tn(
        dir.path(),
        &[
            "batch",
            "--style",
            "systemone",
            "--base-url",
            &up.base_url,
            "--questions",
            &questions,
            "--states",
            &states,
            "--out",
            &out_file,
            "--rpm",
            "60000",
            "--tpm",
            "10000000",
            "--no-progress",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out_lines(std::path::Path::new(&out_file)).len(), 20);
    assert_eq!(up.requests().len(), 20);

    let tape = dir.join("t.json");
    crate::support::bulk_tape(&tape, 3, false);
    let tape = tape.display().to_string();
    let out = tn(
        dir.path(),
        &[
            "batch",
            "--style",
            "tape",
            "--tape",
            &tape,
            "--call",
            "bulk",
            "--questions",
            &questions,
            "--states",
            &states,
            "--out",
            &out_file,
            "--tpm",
            "1000",
        ],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--tpm"), "{}", out.stderr);
}
