//! What a new user runs into first: input errors that name the real problem,
//! a first run that explains itself, and the library's warnings said once.

use std::process::Stdio;

use crate::support::{TempDir, Upstream, tn, toolnexus};

#[test]
fn input_errors_name_the_real_problem() {
    let dir = TempDir::new("inputs");
    let q = dir.write(
        "q.json",
        r#"{"spam": {"type": "noul", "instructions": "Is this spam?"}}"#,
    );
    dir.write(
        "bom.json",
        "\u{feff}{\"spam\": {\"type\": \"noul\", \"instructions\": \"Spam?\"}}",
    );
    std::fs::create_dir(dir.join("qdir")).unwrap();
    dir.write(
        "twice.json",
        "{\"spam\": {\"type\": \"noul\",\n  \"type\": \"score\"}}",
    );
    dir.write(
        "option.json",
        r#"{"desk": {"type": "choice", "instructions": "?", "criteria": {"a": "x", "a": "y"}}}"#,
    );
    dir.write(
        "field.json",
        r#"{"spam": {"type": "noul", "instrucions": "Is this spam?"}}"#,
    );
    dir.write("short.json", "{\"spam\": {\"type\": \"noul\",\n");

    #[rustfmt::skip]
    let cases: &[(&[&str], &str)] = &[
        (&["eval", "--questions", "qdir", "--state", "{}"], "--questions qdir: is a directory, not a file"),
        (&["eval", "--questions", "twice.json", "--state", "{}"], "--questions twice.json: invalid JSON: the key \"type\" appears twice, at line 2, column 8"),
        (&["eval", "--questions", "option.json", "--state", "{}"], "invalid JSON: the key \"a\" appears twice"),
        (&["eval", "--questions", "field.json", "--state", "{}"], "question \"spam\": unknown field \"instrucions\""),
        (&["eval", "--questions", "short.json", "--state", "{}"], "--questions short.json: invalid JSON: the input ends at line 1, column 25"),
        (&["eval", "--questions", &q, "--state", "42"], "--state 42: a state is a string, an object or an array, not a number"),
        (&["eval", "--questions", &q, "--state", "true"], "not a boolean"),
        (&["eval", "--questions", &q, "--state", "null"], "not null"),
        (&["eval", "--style", "tape", "--model", "jev-1.13"], "--model: --style tape has no use for it"),
        (&["eval", "--style", "static", "--base-url", "http://127.0.0.1:9"], "--base-url: --style static has no use for it"),
        (&["eval", "--style", "local", "--base-url", "http://127.0.0.1:9"], "--base-url: --style local has no use for it"),
        (&["eval", "--model", "jev-1.13"], "no TYPESAFE_API_KEY set and no --style named, so nothing was sent; for a real answer"),
    ];
    for (args, want) in cases {
        let out = tn(dir.path(), args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains(want),
            "{args:?}: want {want:?}, got {}",
            out.stderr
        );
    }

    // A byte-order mark is accepted; /dev/stdin is read as a stream.
    let mut cmd = toolnexus(
        dir.path(),
        &[
            "eval",
            "--questions",
            "bom.json",
            "--state",
            "/dev/stdin",
            "--json",
        ],
    );
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"\"hello\"").unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // It got past reading both: with no key, the one no-key line, nothing sent.
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no --style named, so nothing was sent"),
        "{stderr}"
    );
}

#[test]
fn a_first_run_with_own_questions_says_how_to_get_a_real_answer() {
    let dir = TempDir::new("inputs-first");
    let q = r#"{"spam": {"type": "noul", "instructions": "Is this spam?"}}"#;
    let eval = tn(
        dir.path(),
        &["eval", "--questions", q, "--state", "\"win a prize now\""],
    );
    // The same one line as every other command with no key and no style.
    let s = dir.write("s.jsonl", "\"win a prize now\"\n");
    let out = dir.join("out.jsonl").display().to_string();
    let batch = tn(
        dir.path(),
        &["batch", "--questions", q, "--states", &s, "--out", &out],
    );
    assert_eq!((eval.code, batch.code), (2, 2), "{eval:?} {batch:?}");
    assert_eq!(eval.stderr, batch.stderr);
    assert!(eval.stdout.is_empty(), "{eval:?}");
    let line = eval.stderr.trim_end();
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(
        line.starts_with("toolnexus: error: no TYPESAFE_API_KEY set and no --style named, so nothing was sent; for a real answer"),
        "{line}"
    );
    assert!(line.contains("--style local"), "{line}");
}

/// A choice whose options carry no description, answered with an extra key
/// nobody asked, over several states: each warning once, `--quiet` none.
#[test]
fn library_warnings_are_printed_once_each_and_quiet_silences_them() {
    let dir = TempDir::new("inputs-warn");
    let upstream = Upstream::start(|_| {
        (
            200,
            vec![],
            r#"{"model": "m", "answers": {
                "route": {"type": "choice", "choice": "a", "probabilities": {"a": 0.7, "b": 0.3}, "confidence": 0.7},
                "surprise": {"type": "noul", "noul": 0.5}}}"#
                .to_string(),
        )
    });
    let q = dir.write(
        "q.json",
        r#"{"route": {"type": "choice", "instructions": "Where to?", "criteria": {"a": null, "b": null}}}"#,
    );
    let states = dir.write("s.jsonl", "\"one\"\n\"two\"\n\"three\"\n");
    for quiet in [false, true] {
        let out_file = dir
            .join(&format!("out-{quiet}.jsonl"))
            .display()
            .to_string();
        let mut args = vec![
            "batch",
            "--style",
            "systemone",
            "--base-url",
            &upstream.base_url,
            "--questions",
            &q,
            "--states",
            &states,
            "--out",
            &out_file,
            "--no-progress",
            "--concurrency",
            "1",
            // A pinned model: a floating alias would be a warning of its own.
            "--model",
            "jev-1.13",
        ];
        if quiet {
            args.push("--quiet");
        }
        let out = tn(dir.path(), &args);
        assert_eq!(out.code, 0, "{out:?}");
        let warnings: Vec<&str> = out
            .stderr
            .lines()
            .filter(|l| l.starts_with("toolnexus: warning: "))
            .collect();
        if quiet {
            assert!(warnings.is_empty(), "{}", out.stderr);
            continue;
        }
        assert_eq!(warnings.len(), 2, "{}", out.stderr);
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("\"route\"") && w.contains("description")),
            "{warnings:?}"
        );
        assert!(
            warnings.iter().any(|w| w.contains("surprise")),
            "{warnings:?}"
        );
    }
}

/// A cache that cannot be opened: a warning naming it, the run goes on
/// without it, the summary says so, and the exit is 4 — never zero hits as if
/// nothing happened.
#[test]
fn a_cache_that_cannot_be_opened_is_a_warning_and_exit_4() {
    let dir = TempDir::new("inputs-cache");
    let bulk = crate::support::Bulk::new(&dir, 3);
    let cache = dir.join("no/such/dir/c.db").display().to_string();
    let out_file = dir.join("out.jsonl").display().to_string();
    let args = bulk.batch(&out_file, &["--cache", &cache, "--no-progress"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = tn(dir.path(), &args);
    assert_eq!(out.code, 4, "{out:?}");
    let warning = out
        .stderr
        .lines()
        .find(|l| l.starts_with("toolnexus: warning: --cache "))
        .unwrap_or_else(|| panic!("{}", out.stderr));
    assert!(warning.contains("no/such/dir/c.db"), "{warning}");
    assert!(
        out.stdout.contains("it failed 1 time, see the warnings"),
        "{}",
        out.stdout
    );
    assert!(
        out.stderr.contains("toolnexus: error: the cache failed"),
        "{}",
        out.stderr
    );
    // Every state was still answered.
    assert_eq!(
        crate::support::out_lines(std::path::Path::new(&out_file)).len(),
        3
    );
}

/// Plain `toolnexus serve` with no key and no style says at start-up that it
/// serves the demo tape and how to get real answers.
#[test]
fn plain_serve_with_no_key_says_how_to_get_a_real_answer() {
    use std::io::BufRead as _;
    let dir = TempDir::new("inputs-serve");
    let mut cmd = toolnexus(dir.path(), &["serve", "--addr", "127.0.0.1:0"]);
    cmd.stdout(Stdio::piped()).stderr(Stdio::null());
    let mut child = crate::support::Guard(cmd.spawn().unwrap());
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if line.starts_with("offline:") {
                let _ = tx.send(line);
                return;
            }
        }
    });
    let line = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("serve said it is offline");
    assert!(line.contains("built-in demo tape"), "{line}");
    assert!(line.contains("for a real answer"), "{line}");
    assert!(line.contains("TYPESAFE_API_KEY"), "{line}");
}

/// With no key and no style, every command that would ask a live backend says
/// the same one line (what is missing, how to get a real answer), exits 2 and
/// sends nothing: a loopback backend named by `--base-url` sees no request.
/// (Plain `eval` and `serve` replay the demo tape instead; with a connection
/// flag they too say the line.)
#[test]
fn no_key_and_no_style_is_one_line_and_nothing_sent_by_every_command() {
    let dir = TempDir::new("inputs-nokey");
    let up = Upstream::start(|_| {
        (
            200,
            vec![],
            r#"{"model": "m", "answers": {"spam": {"type": "noul", "noul": 0.5}}}"#.to_string(),
        )
    });
    let no_model = dir.join("no-model");
    std::fs::create_dir_all(&no_model).unwrap();
    let q = dir.write(
        "q.json",
        r#"{"spam": {"type": "noul", "instructions": "Is this spam?"}}"#,
    );
    let states = dir.write("s.jsonl", "\"win a prize\"\n\"hello\"\n");
    let labels = dir.write(
        "labels.jsonl",
        "{\"id\": \"a\", \"state\": \"win a prize\", \"labels\": {\"spam\": true}}\n",
    );
    let url = up.base_url.as_str();
    #[rustfmt::skip]
    let commands: &[&[&str]] = &[
        &["eval", "--questions", &q, "--state", "\"win\"", "--base-url", url],
        &["batch", "--questions", &q, "--states", &states, "--out", "out.jsonl", "--base-url", url],
        &["batch", "--estimate", "--questions", &q, "--states", &states, "--base-url", url],
        &["assess", "run", "--questions", &q, "--examples", &labels, "--out", "run.jsonl", "--base-url", url],
        &["probe", "--questions", &q, "--states", &states, "--base-url", url],
        &["tape", "record", "--tape", "t.tape.json", "--call", "c", "--questions", &q, "--states", &states, "--base-url", url],
        &["assess", "drift", "--tape", crate::support::DEMO_TAPE, "--call", "triage", "--base-url", url],
        &["serve", "--addr", "127.0.0.1:0", "--base-url", url],
        &["mcp", "--base-url", url],
    ];
    let want = "toolnexus: error: no TYPESAFE_API_KEY set and no --style named, so nothing was sent; \
                for a real answer set TYPESAFE_API_KEY, or run `toolnexus model fetch` once and use --style local";
    for args in commands {
        let mut cmd = toolnexus(dir.path(), args);
        cmd.env("TOOLNEXUS_MODEL_DIR", &no_model)
            .env("HOME", dir.path());
        let out = crate::support::run(cmd);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert_eq!(out.stderr.trim_end(), want, "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
    }
    assert!(!dir.join("out.jsonl").exists(), "no out file was started");
    assert!(!dir.join("t.tape.json").exists(), "no tape was started");
    assert_eq!(up.requests().len(), 0, "nothing was sent");
}
