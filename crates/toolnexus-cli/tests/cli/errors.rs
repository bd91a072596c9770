//! Bad input anywhere: one line on stderr naming the flag or file, and the
//! documented exit code.

use crate::support::{TempDir, spam_questions, tn};

#[test]
fn every_bad_input_has_one_line_and_its_exit_code() {
    let dir = TempDir::new("errors");
    let q = dir.write("q.json", &spam_questions().to_string());
    let bad = dir.write("bad.json", "{\n  \"spam\": {\"type\": \"noul\",,}\n}");
    let vote = dir.write(
        "vote.json",
        r#"{"x": {"type": "vote", "instructions": "?"}}"#,
    );
    let one_level = dir.write(
        "one.json",
        r#"{"risk": {"type": "score", "instructions": "?", "criteria": ["only"]}}"#,
    );
    let states = dir.write("in.jsonl", "{\"n\": 1}\n");
    let missing_dir_out = dir.join("no/such/dir/out.jsonl").display().to_string();
    let foreign_out = dir.write("foreign.jsonl", "not a result\n");
    let corrupt_tape = dir.write("t.tape.json", "{\"version\": 1, \"calls\": {\n  [}");

    #[rustfmt::skip]
    let cases: &[(&[&str], i32, &str)] = &[
        (&["eval", "--style", "chat"], 2, "unknown style \"chat\" (want systemone|llm|static|tape|local|student|laya|decisiontune)"),
        (&["eval", "--questions", "nope.json", "--state", "1"], 2, "--questions nope.json: no such file"),
        (&["eval", "--questions", &bad, "--state", "1"], 2, "bad.json: invalid JSON at line 2, column 27"),
        (&["eval", "--questions", &q, "--state", "{\"a\": }"], 2, "--state inline JSON: invalid JSON at line 1, column 7"),
        (&["eval", "--questions", &vote, "--state", "1"], 2, "question \"x\""),
        (&["eval", "--questions", &one_level, "--state", "1"], 2, "a score needs 2..=10 levels, got 1"),
        (&["eval", "--questions", &q], 2, "--state is required with --questions"),
        (&["eval", "--tape", &corrupt_tape], 2, "t.tape.json: invalid JSON at line 2, column 3"),
        (&["eval", "--style", "llm", "--questions", &q, "--state", "1"], 2, "--style llm needs --base-url"),
        (&["eval", "--no-such-flag"], 2, "--no-such-flag"),
        (&["eval", "--style", "tape", "--call", "nope"], 2, "--call \"nope\": the built-in demo tape has no such call"),
        (&["batch", "--questions", &q, "--states", &states], 2, "missing required --out"),
        (&["batch", "--questions", &q, "--states", "none.jsonl", "--out", "o.jsonl"], 2, "--states none.jsonl: cannot read"),
        (&["batch", "--questions", &q, "--states", &states, "--out", &foreign_out, "--style", "tape", "--call", "triage"], 2, "line 1 is not a batch result line"),
        (&["batch", "--questions", &q, "--states", &states, "--out", &missing_dir_out, "--style", "tape", "--call", "triage"], 4, "cannot open"),
        (&["batch", "--questions", &q, "--states", &states, "--out", "o.jsonl", "--concurrency", "0"], 2, "--concurrency"),
        (&["tape", "show", "nope.tape.json"], 2, "nope.tape.json: cannot read"),
        (&["tape", "record", "--tape", "t.json", "--call", "c", "--questions", &q], 2, "--state"),
        (&["serve", "--addr", "nonsense"], 2, "--addr"),
    ];
    for (args, code, want) in cases {
        let out = tn(dir.path(), args);
        assert_eq!(out.code, *code, "{args:?}: {out:?}");
        assert_eq!(
            out.stderr.lines().count(),
            1,
            "{args:?}: one line, got {:?}",
            out.stderr
        );
        assert!(
            out.stderr.starts_with("toolnexus: error: "),
            "{args:?}: {}",
            out.stderr
        );
        assert!(
            out.stderr.contains(want),
            "{args:?}: want {want:?} in {}",
            out.stderr
        );
    }
}

#[test]
fn help_documents_the_exit_codes() {
    let dir = TempDir::new("help");
    let out = tn(dir.path(), &["--help"]);
    assert_eq!(out.code, 0);
    for line in [
        "Exit codes:",
        "  2    usage or bad input",
        "  3    evaluation failed",
        "  4    I/O failure",
    ] {
        assert!(out.stdout.contains(line), "{line:?} in\n{}", out.stdout);
    }
}

#[test]
fn an_address_in_use_is_an_io_failure() {
    let dir = TempDir::new("addr-in-use");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = tn(dir.path(), &["serve", "--addr", &addr]);
    assert_eq!(out.code, 4, "{out:?}");
    assert!(
        out.stderr
            .contains(&format!("--addr {addr}: cannot listen")),
        "{}",
        out.stderr
    );
}
