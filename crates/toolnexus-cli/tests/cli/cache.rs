//! `batch --cache` and `toolnexus cache stats|clear|export`: a rerun sends
//! nothing, duplicates in the input are asked once, hits are marked, and a
//! file that is not a cache is refused naming it.

use serde_json::Value;

use crate::support::{
    TempDir, Upstream, assess_tape, batch_args, batch_of, demo, demo_student, out_lines,
    spam_questions, strs, tape_batch, tn, tn_args,
};

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
    let extra = ["--cache", cache, "--no-progress"];
    tn_args(
        dir.path(),
        &batch_args(&questions, states, out, &up.base_url, &extra),
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
    let limits = ["--rpm", "60000", "--tpm", "10000000", "--no-progress"];
    let out = tn_args(
        dir.path(),
        &batch_args(&questions, &states, &out_file, &up.base_url, &limits),
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out_lines(std::path::Path::new(&out_file)).len(), 20);
    assert_eq!(up.requests().len(), 20);

    let tape = dir.join("t.json");
    crate::support::bulk_tape(&tape, 3, false);
    let tape = tape.display().to_string();
    let out = tn_args(
        dir.path(),
        &tape_batch(&tape, &questions, &states, &out_file, &["--tpm", "1000"]),
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--tpm"), "{}", out.stderr);
}

#[test]
fn kill_9_while_writing_the_cache_loses_nothing_and_corrupts_nothing() {
    let dir = TempDir::new("cache-kill");
    // A slow upstream: every answer waits 30 ms.
    let up = Upstream::start(|got| {
        std::thread::sleep(std::time::Duration::from_millis(30));
        let n = got.json()["state"]["n"].as_u64().unwrap_or(0);
        (
            200,
            vec![],
            format!(
                r#"{{"model":"jev-1.13","answers":{{"spam":{{"type":"noul","noul":{}}}}}}}"#,
                (n % 10) as f64 / 10.0
            ),
        )
    });
    let n = 200;
    let states: String = (0..n).map(|i| format!("{{\"n\": {i}}}\n")).collect();
    let states = dir.write("states.jsonl", &states);
    let cache = dir.join("c.db").display().to_string();
    let out_path = dir.join("out.jsonl");
    let out = out_path.display().to_string();
    let questions = spam_questions().to_string();
    let extra = ["--cache", &cache, "--concurrency", "8", "--no-progress"];
    let args = batch_args(&questions, &states, &out, &up.base_url, &extra);
    let mut cmd = crate::support::toolnexus(dir.path(), &strs(&args));
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = crate::support::Guard(cmd.spawn().unwrap());
    let start = std::time::Instant::now();
    while out_lines(&out_path).len() < 40 {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "the batch wrote nothing"
        );
        assert!(
            child.0.try_wait().unwrap().is_none(),
            "the batch ended early"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.0.kill().unwrap(); // SIGKILL: no chance to flush or close anything
    child.0.wait().unwrap();
    let written = out_lines(&out_path).len();
    let asked_before = up.requests().len();
    assert!(written < n, "killed mid-run ({written} written)");

    // The cache file opens and every entry in it is whole.
    let stats = tn(dir.path(), &["cache", "stats", &cache, "--json"]);
    assert_eq!(stats.code, 0, "{stats:?}");
    let stored = serde_json::from_str::<Value>(&stats.stdout).unwrap()["entries"]
        .as_u64()
        .unwrap() as usize;
    assert!(stored >= written, "{stored} stored, {written} written");

    // The rerun resumes: nothing lost, nothing stored asked again.
    let again = tn_args(dir.path(), &args);
    assert_eq!(again.code, 0, "{again:?}");
    let lines = out_lines(&out_path);
    let mut seen: Vec<u64> = lines.iter().map(|l| l["line"].as_u64().unwrap()).collect();
    seen.sort_unstable();
    assert_eq!(
        seen,
        (1..=n as u64).collect::<Vec<_>>(),
        "every line exactly once"
    );
    for l in &lines {
        let state = l["line"].as_u64().unwrap() - 1;
        assert_eq!(
            l["decision"]["answers"]["spam"]["noul"],
            Value::from((state % 10) as f64 / 10.0)
        );
    }
    // Only states in flight at the kill (at most --concurrency) were asked twice.
    let mut asked: std::collections::BTreeMap<u64, usize> = Default::default();
    for r in up.requests() {
        *asked
            .entry(r.json()["state"]["n"].as_u64().unwrap())
            .or_default() += 1;
    }
    assert_eq!(asked.len(), n, "every state asked");
    let twice = asked.values().filter(|&&c| c > 1).count();
    assert!(asked.values().all(|&c| c <= 2), "{asked:?}");
    assert!(
        twice <= 8,
        "{twice} states asked twice ({asked_before} asked before the kill)"
    );
    let export = tn(dir.path(), &["cache", "export", &cache]);
    assert_eq!(export.code, 0, "{export:?}");
    assert_eq!(
        export.stdout.lines().count(),
        n,
        "one whole entry per state"
    );
    for line in export.stdout.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert!(
            v["decision"]["answers"]["spam"]["noul"].is_number(),
            "{line}"
        );
    }
}

/// `batch` over the first `n` demo states on the demo tape, through `cache`,
/// with `extra` flags: the out file's lines, in input order.
fn demo_batch(dir: &TempDir, name: &str, cache: &str, n: usize, extra: &[&str]) -> Vec<Value> {
    let tape = crate::support::demo("tape.json");
    let mut style = vec!["--style", "tape", "--tape", &tape];
    style.extend(extra);
    demo_batch_as(dir, name, cache, n, &style)
}

/// `batch` over the first `n` demo states with the `style` flags, through
/// `cache`: the out file's lines, in input order.
fn demo_batch_as(dir: &TempDir, name: &str, cache: &str, n: usize, style: &[&str]) -> Vec<Value> {
    let states = demo_states(dir, name, n);
    let out = dir.join(&format!("{name}.jsonl")).display().to_string();
    let questions = crate::support::demo("questions.json");
    let extra = [style, &["--cache", cache, "--no-progress"]].concat();
    let args = batch_of(&questions, &states, &out, &extra);
    let run = tn_args(dir.path(), &args);
    assert_eq!(run.code, 0, "{run:?}");
    let mut lines = out_lines(std::path::Path::new(&out));
    lines.sort_by_key(|l| l["line"].as_u64());
    assert_eq!(lines.len(), n);
    lines
}

/// The first `n` states of the demo's labelled set, one per line, in
/// `{name}.states.jsonl`: the file's path.
fn demo_states(dir: &TempDir, name: &str, n: usize) -> String {
    let labels = std::fs::read_to_string(crate::support::demo("labels.jsonl")).unwrap();
    let states: String = labels
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .take(n)
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["state"].to_string() + "\n")
        .collect();
    dir.write(&format!("{name}.states.jsonl"), &states)
}

/// A calibration of the demo tape, as `assess calibrate` writes it: its path.
fn demo_calibration(dir: &TempDir) -> String {
    let run = dir.join("run.jsonl").display().to_string();
    let (tape, questions) = (demo("tape.json"), demo("questions.json"));
    let args = assess_tape(&tape, &questions, &demo("labels.jsonl"), &run, &[]);
    let out = tn_args(dir.path(), &args);
    assert_eq!(out.code, 0, "{out:?}");
    let cal = dir.join("cal.json").display().to_string();
    let out = tn(dir.path(), &["assess", "calibrate", &run, "--out", &cal]);
    assert_eq!(out.code, 0, "{out:?}");
    cal
}

#[test]
fn a_calibrated_batch_and_a_plain_one_on_one_cache_never_answer_for_each_other() {
    let dir = TempDir::new("cache-calibration");
    let cal = demo_calibration(&dir);
    let cache = dir.join("c.db").display().to_string();
    let decision = |l: &Value| l["decision"].clone();

    // Calibrated first, then the same batch without --calibration.
    let calibrated = demo_batch(&dir, "calibrated", &cache, 6, &["--calibration", &cal]);
    assert!(
        calibrated.iter().all(|l| decision(l)["calibrated"] == true),
        "{calibrated:?}"
    );
    let plain = demo_batch(&dir, "plain", &cache, 6, &[]);
    assert!(
        plain
            .iter()
            .all(|l| decision(l)["calibrated"] == false && l["cached"] != true),
        "the plain run is never served the calibrated answers: {plain:?}"
    );
    for (c, p) in calibrated.iter().zip(&plain) {
        assert_ne!(
            decision(c)["answers"]["refund_requested"],
            decision(p)["answers"]["refund_requested"]
        );
    }
    // Each stack is served its own answers from then on.
    let again = demo_batch(
        &dir,
        "calibrated-again",
        &cache,
        6,
        &["--calibration", &cal],
    );
    assert!(again.iter().all(|l| l["cached"] == true), "{again:?}");
    for (a, c) in again.iter().zip(&calibrated) {
        assert_eq!(decision(a)["answers"], decision(c)["answers"]);
    }
    let plain_again = demo_batch(&dir, "plain-again", &cache, 6, &[]);
    assert!(
        plain_again
            .iter()
            .all(|l| l["cached"] == true && decision(l)["calibrated"] == false),
        "{plain_again:?}"
    );
}

/// Two stacks on one cache never answer for each other: `run(name, stack)`
/// of the first stack asks everything, of the second too (`why`: it is
/// another stack), and of the first again is all served from the cache.
/// `names`: the three runs' names.
fn kept_apart(
    names: [&str; 3],
    first: &str,
    second: &str,
    why: &str,
    run: impl Fn(&str, &str) -> Vec<Value>,
) {
    assert!(none_cached(&run(names[0], first)));
    let other = run(names[1], second);
    assert!(none_cached(&other), "{why}: {other:?}");
    assert!(all_cached(&run(names[2], first)));
}

/// Whether no line of a run was served from the cache.
fn none_cached(lines: &[Value]) -> bool {
    lines.iter().all(|l| l["cached"] != true)
}

/// Whether every line of a run was served from the cache.
fn all_cached(lines: &[Value]) -> bool {
    lines.iter().all(|l| l["cached"] == true)
}

/// The demo tape, and the same with every refund answer turned around: same
/// calls, same states, same model, other answers.
fn demo_tape_turned() -> (Value, Value) {
    let text = std::fs::read_to_string(crate::support::demo("tape.json")).unwrap();
    let original: Value = serde_json::from_str(&text).unwrap();
    let mut tape = original.clone();
    for call in tape["calls"].as_object_mut().unwrap().values_mut() {
        for e in call.as_array_mut().unwrap() {
            if let Some(p) = e["decision"]["answers"]["refund_requested"]["noul"].as_f64() {
                e["decision"]["answers"]["refund_requested"]["noul"] = (1.0 - p).into();
            }
        }
    }
    (original, tape)
}

#[test]
fn two_tapes_on_one_cache_never_answer_for_each_other() {
    let dir = TempDir::new("cache-tapes");
    let cache = dir.join("c.db").display().to_string();
    let (_, tape) = demo_tape_turned();
    let other = dir.write("other.tape.json", &tape.to_string());
    let first = demo_batch(&dir, "first", &cache, 4, &[]);
    assert!(none_cached(&first), "{first:?}");
    let second = demo_batch_as(
        &dir,
        "second",
        &cache,
        4,
        &["--style", "tape", "--tape", &other],
    );
    assert!(none_cached(&second), "another tape's answers: {second:?}");
    for (a, b) in first.iter().zip(&second) {
        assert_ne!(
            a["decision"]["answers"]["refund_requested"],
            b["decision"]["answers"]["refund_requested"]
        );
    }
    assert!(all_cached(&demo_batch(&dir, "again", &cache, 4, &[])));
}

/// Two tiny models in `dir`, the second with one weight nudged (another
/// weights hash): their paths.
fn two_models(dir: &TempDir) -> (String, String) {
    let a = dir.join("model-a");
    toolnexus_local::tiny_model_for_tests(&a).unwrap();
    let b = dir.join("model-b");
    toolnexus_local::tiny_model_for_tests(&b).unwrap();
    let weights = b.join("model.safetensors");
    let mut bytes = std::fs::read(&weights).unwrap();
    let at = bytes.len() - 4;
    bytes[at] ^= 1;
    std::fs::write(&weights, bytes).unwrap();
    (a.display().to_string(), b.display().to_string())
}

/// Two students of the demo labels on `model`, the second with another seed
/// and another target (so another cascade threshold): their paths.
fn two_students(dir: &TempDir, model: &str) -> (String, String) {
    let (s1, _) = demo_student(dir, model);
    let s2 = dir.join("student-2.json").display().to_string();
    let out = tn(
        dir.path(),
        &[
            "distill",
            "--labels",
            &crate::support::demo("labels.jsonl"),
            "--questions",
            &crate::support::demo("questions.json"),
            "--model-dir",
            model,
            "--seed",
            "7",
            "--target-agreement",
            "0.6",
            "--out",
            &s2,
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    (s1, s2)
}

#[test]
fn two_model_dirs_on_one_cache_never_answer_for_each_other() {
    let dir = TempDir::new("cache-model-dirs");
    let cache = dir.join("c.db").display().to_string();
    let (a, b) = two_models(&dir);
    let local = |name: &str, model: &str| {
        demo_batch_as(
            &dir,
            name,
            &cache,
            4,
            &["--style", "local", "--model-dir", model],
        )
    };
    kept_apart(
        ["local-a", "local-b", "local-a-again"],
        &a,
        &b,
        "another model directory is another stack",
        local,
    );
}

#[test]
fn two_students_on_one_cache_never_answer_for_each_other() {
    let dir = TempDir::new("cache-students");
    let cache = dir.join("c.db").display().to_string();
    let (a, _) = two_models(&dir);
    let (s1, s2) = two_students(&dir, &a);
    let student = |name: &str, file: &str| {
        demo_batch_as(
            &dir,
            name,
            &cache,
            4,
            &["--style", "student", "--student", file, "--model-dir", &a],
        )
    };
    kept_apart(
        ["student-1", "student-2", "student-1-again"],
        &s1,
        &s2,
        "another student is another stack",
        student,
    );
}

#[test]
fn two_cascades_on_one_cache_never_answer_for_each_other() {
    let dir = TempDir::new("cache-cascades");
    let cache = dir.join("c.db").display().to_string();
    let (a, _) = two_models(&dir);
    let (s1, s2) = two_students(&dir, &a);
    let cascade = |name: &str, file: &str| {
        demo_batch(
            &dir,
            name,
            &cache,
            4,
            &["--cascade", "--student", file, "--model-dir", &a],
        )
    };
    kept_apart(
        ["cascade-1", "cascade-2", "cascade-1-again"],
        &s1,
        &s2,
        "a cascade with another student and threshold is another stack",
        cascade,
    );
}

#[test]
fn two_calls_of_one_tape_on_one_cache_never_answer_for_each_other() {
    let dir = TempDir::new("cache-calls");
    let cache = dir.join("c.db").display().to_string();
    // One tape holding the demo's call and its turned copy under another
    // name: each --call is its own stack.
    let (original, turned) = demo_tape_turned();
    let name = original["calls"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap();
    let mut both = original.clone();
    both["calls"]["turned"] = turned["calls"][name].clone();
    let both = dir.write("both.tape.json", &both.to_string());
    let call = |run: &str, call: &str| {
        demo_batch_as(
            &dir,
            run,
            &cache,
            4,
            &["--style", "tape", "--tape", &both, "--call", call],
        )
    };
    kept_apart(
        ["call-a", "call-b", "call-a-again"],
        name,
        "turned",
        "another call name",
        call,
    );
}

/// An out file records what answers beneath the style: a batch resumed with
/// `--calibration` added (or dropped) would mix calibrated and plain lines in
/// one file, so it is refused by name; the same stack resumes.
#[test]
fn a_batch_out_file_is_resumed_only_by_the_stack_that_wrote_it() {
    let dir = TempDir::new("out-stack");
    let cal = demo_calibration(&dir);
    let states = demo_states(&dir, "out", 4);
    let (tape, questions) = (demo("tape.json"), demo("questions.json"));
    let results = dir.join("out.jsonl").display().to_string();
    let batch = |extra: &[&str]| {
        let style = [
            &["--style", "tape", "--tape", &tape, "--no-progress"],
            extra,
        ]
        .concat();
        tn_args(dir.path(), &batch_of(&questions, &states, &results, &style))
    };
    let first = batch(&["--calibration", &cal]);
    assert_eq!(first.code, 0, "{first:?}");
    let header = std::fs::read_to_string(&results).unwrap();
    let header = header.lines().next().unwrap();
    assert!(
        header.contains(r#""stack":"tape+call+calibration sha256:"#),
        "{header}"
    );
    let before = std::fs::read(&results).unwrap();
    let plain = batch(&[]);
    assert_eq!(plain.code, 2, "{plain:?}");
    assert!(
        plain
            .stderr
            .contains("what answers beneath the style changed (tape+call+calibration sha256:"),
        "{}",
        plain.stderr
    );
    assert_eq!(std::fs::read(&results).unwrap(), before, "left untouched");
    // The same stack resumes: nothing left to ask.
    let again = batch(&["--calibration", &cal]);
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(std::fs::read(&results).unwrap(), before);
}
