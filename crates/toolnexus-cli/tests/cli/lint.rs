//! `toolnexus lint`: every rule fires on its failing fixture and stays quiet on
//! its passing one (`tests/fixtures/lint/TNLnnn.{bad,good}.json`); positions,
//! the text and JSON reports, `--strict`, `--explain`, `--list-rules`, exit
//! codes, unreadable files; the near-duplicate check on the embedded model
//! when `TOOLNEXUS_MODEL_DIR` holds one, and its skip line when there is none.

use serde_json::Value;

use std::process::Stdio;

use crate::support::{Out, TempDir, collect, real_model, run, toolnexus};

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/lint/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// `toolnexus lint` with an empty model directory: the near-duplicate check
/// is skipped the same way on every machine.
fn lint(dir: &TempDir, args: &[&str]) -> Out {
    let empty = dir.join("no-model");
    std::fs::create_dir_all(&empty).unwrap();
    let mut cmd = toolnexus(dir.path(), &["lint"]);
    cmd.args(args).env("TOOLNEXUS_MODEL_DIR", &empty);
    run(cmd)
}

fn report(out: &Out) -> Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

fn rules_of(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

/// A question set of about `tokens` tokens (4 bytes a token) in one noul.
fn long_question(dir: &TempDir, name: &str, tokens: usize) -> String {
    let words = "the policy clause reads as follows ".repeat(tokens * 4 / 35 + 1);
    let body = serde_json::json!({
        "policy": {"type": "noul", "instructions": format!("Does the message break this policy: {words}")}
    });
    dir.write(name, &body.to_string())
}

#[test]
fn every_rule_fails_its_bad_fixture_and_passes_its_good_one() {
    let dir = TempDir::new("lint-rules");
    let listed = report(&lint(&dir, &["--list-rules", "--format", "json"]));
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 16, "{listed}");
    for id in ids {
        // The near-duplicate check needs the model: see the test below.
        if id == "TNL005" {
            continue;
        }
        let bad = match id {
            // Tens of kilobytes: made here rather than kept in the tree.
            "TNL012" => long_question(&dir, "TNL012.bad.json", 33_000),
            "TNL013" => long_question(&dir, "TNL013.bad.json", 17_000),
            _ => fixture(&format!("{id}.bad.json")),
        };
        let out = lint(&dir, &["--format", "json", &bad]);
        let r = report(&out);
        assert!(rules_of(&r).iter().any(|r| r == id), "{id}: {r}");
        let severity = r["findings"][0]["severity"].as_str().unwrap();
        let expected = match severity {
            "error" => 1,
            _ => 0,
        };
        assert_eq!(out.code, expected, "{id}: {out:?}");

        let good = fixture(&format!("{id}.good.json"));
        let out = lint(&dir, &["--format", "json", "--strict", &good]);
        let r = report(&out);
        assert_eq!(r["findings"], serde_json::json!([]), "{id}: {r}");
        assert_eq!(out.code, 0, "{id}: {out:?}");
    }
}

#[test]
fn near_duplicate_descriptions_on_the_embedded_model() {
    let Some(model) = real_model() else { return };
    let dir = TempDir::new("lint-similar");
    let mut cmd = toolnexus(dir.path(), &["lint", "--format", "json"]);
    cmd.arg(fixture("TNL005.bad.json"))
        .arg(fixture("TNL005.good.json"))
        .env("TOOLNEXUS_MODEL_DIR", &model);
    let out = run(cmd);
    assert_eq!(out.code, 0, "a warning fails only under --strict: {out:?}");
    let r = report(&out);
    assert_eq!(r["skipped"], serde_json::json!([]), "{r}");
    let found = r["findings"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{r}");
    let f = &found[0];
    assert_eq!(f["rule"], "TNL005");
    assert_eq!(f["question"], "intent");
    assert_eq!(f["path"], "intent.criteria.end");
    assert!(
        f["file"].as_str().unwrap().ends_with("TNL005.bad.json"),
        "{f}"
    );
    assert_eq!(
        (f["line"].as_u64(), f["column"].as_u64()),
        (Some(7), Some(14))
    );
}

#[test]
fn without_a_model_the_near_duplicate_check_says_it_was_skipped() {
    let dir = TempDir::new("lint-skip");
    let bad = fixture("TNL005.bad.json");
    let out = lint(&dir, &[&bad]);
    assert_eq!(out.code, 0, "{out:?}");
    let no_model = dir.join("no-model").display().to_string();
    let skips: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.contains("skipped"))
        .collect();
    assert_eq!(skips.len(), 1, "{}", out.stdout);
    assert!(
        skips[0].starts_with("note: TNL005 (similar-descriptions) skipped: no embedded model in ")
            && skips[0].contains(&no_model)
            && skips[0].contains("toolnexus model fetch")
            && skips[0].contains("--model-dir"),
        "{}",
        skips[0]
    );
    // --model-dir wins over the environment, and JSON lists the skip.
    let other = dir.join("other-empty");
    std::fs::create_dir_all(&other).unwrap();
    let other = other.display().to_string();
    let r = report(&lint(
        &dir,
        &["--format", "json", "--model-dir", &other, &bad],
    ));
    assert_eq!(r["skipped"][0]["rule"], "TNL005", "{r}");
    assert!(
        r["skipped"][0]["reason"].as_str().unwrap().contains(&other),
        "{r}"
    );
    // No choice to compare: nothing was skipped, nothing is said.
    let out = lint(&dir, &[&fixture("TNL006.good.json")]);
    assert!(!out.stdout.contains("skipped"), "{}", out.stdout);
}

#[test]
fn findings_are_placed_at_the_offending_phrase_in_text_and_json() {
    let dir = TempDir::new("lint-text");
    let bad = fixture("TNL006.bad.json");
    let out = lint(&dir, &[&bad]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        format!(
            "{bad}:4:42: warning[TNL006]: a number to compare or compute: \"more than 3\" in the instructions; do it in code (question \"bulk\")\n\
             lint: 1 file, 1 question: 1 warning\n"
        )
    );
    let line = std::fs::read_to_string(&bad)
        .unwrap()
        .lines()
        .nth(3)
        .unwrap()
        .to_string();
    assert!(line[41..].starts_with("more than 3"), "{line}");

    // An escaped string keeps the phrase where it is written.
    let q = dir.write(
        "escaped.json",
        "{\"q\": {\"type\": \"noul\", \"instructions\": \"Caf\\u00e9 \\\"orders\\\" with at least 10 cups\"}}",
    );
    let r = report(&lint(&dir, &["--format", "json", &q]));
    let f = &r["findings"][0];
    assert_eq!(f["rule"], "TNL006", "{r}");
    let col = f["column"].as_u64().unwrap() as usize;
    let text = std::fs::read_to_string(&q).unwrap();
    assert!(text[col - 1..].starts_with("at least 10"), "{r}");

    // Several files, findings in file order then position, one summary.
    let out = lint(
        &dir,
        &[
            &fixture("TNL010.bad.json"),
            &fixture("TNL001.bad.json"),
            &fixture("TNL009.bad.json"),
        ],
    );
    assert_eq!(out.code, 1, "an error fails the run: {out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines[0].contains("TNL010.bad.json:5:18: warning[TNL010]: levels run highest first"),
        "{}",
        out.stdout
    );
    assert!(
        lines[1].contains("TNL001.bad.json:5:26: error[TNL001]:"),
        "{}",
        out.stdout
    );
    assert!(
        lines[2].contains("TNL009.bad.json:5:5: info[TNL009]:"),
        "{}",
        out.stdout
    );
    assert!(
        lines[3].starts_with("note: TNL005 (similar-descriptions) skipped"),
        "{}",
        out.stdout
    );
    assert_eq!(
        lines[4],
        "lint: 3 files, 3 questions: 1 error, 1 warning, 1 info (fails)"
    );
}

#[test]
fn the_json_report_has_findings_skips_and_a_summary() {
    let dir = TempDir::new("lint-json");
    let bad = fixture("TNL002.bad.json");
    let out = lint(
        &dir,
        &["--format", "json", &bad, &fixture("TNL003.bad.json")],
    );
    assert_eq!(out.code, 1, "{out:?}");
    let r = report(&out);
    assert_eq!(
        r["findings"][0],
        serde_json::json!({
            "file": bad, "line": 6, "column": 18, "rule": "TNL002", "name": "name-only",
            "severity": "warning", "question": "desk", "path": "desk.criteria.billing",
            "message": "option \"billing\" is described by its own name",
        })
    );
    assert_eq!(r["findings"][1]["rule"], "TNL003");
    assert_eq!(r["skipped"][0]["rule"], "TNL005");
    assert_eq!(r["unreadable"], serde_json::json!([]));
    assert_eq!(
        r["summary"],
        serde_json::json!({"files": 2, "questions": 2, "errors": 1, "warnings": 1, "infos": 0,
                           "unreadable": 0, "strict": false, "failed": true})
    );
}

#[test]
fn strict_fails_on_warnings_and_infos_never_fail() {
    let dir = TempDir::new("lint-strict");
    let warning = fixture("TNL007.bad.json");
    assert_eq!(lint(&dir, &[&warning]).code, 0);
    let out = lint(&dir, &["--strict", &warning]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stdout
            .ends_with("1 warning (warnings fail under --strict)\n"),
        "{}",
        out.stdout
    );
    let info = fixture("TNL009.bad.json");
    assert_eq!(lint(&dir, &["--strict", &info]).code, 0);
    let error = fixture("TNL004.bad.json");
    assert_eq!(lint(&dir, &[&error]).code, 1);
}

#[test]
fn explain_and_list_rules() {
    let dir = TempDir::new("lint-explain");
    let out = lint(&dir, &["--explain", "tnl006"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .starts_with("TNL006 numeric-threshold (warning)\n"),
        "{}",
        out.stdout
    );
    for part in ["Bad:", "Good:", "Fix:"] {
        assert!(out.stdout.contains(part), "{}", out.stdout);
    }
    let out = lint(&dir, &["--explain", "TNL999"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "toolnexus: error: --explain TNL999: no such rule (the rules are TNL001..TNL016; see toolnexus lint --list-rules)\n"
    );
    let out = lint(&dir, &["--list-rules"]);
    assert_eq!(out.code, 0, "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 16, "{}", out.stdout);
    assert!(
        lines[0].starts_with("TNL001  error    empty-text "),
        "{}",
        lines[0]
    );
    assert!(lines.iter().all(|l| l.starts_with("TNL")), "{}", out.stdout);
    // No file and nothing else asked for is a usage error.
    assert_eq!(lint(&dir, &[]).code, 2);
}

#[test]
fn unreadable_files_exit_2_with_their_position_and_the_rest_is_still_linted() {
    let dir = TempDir::new("lint-bad");
    let missing = dir.join("missing.json").display().to_string();
    let syntax = dir.write("syntax.json", "{\n  \"q\": {\"type\": \"noul\",}\n}");
    let twice = dir.write(
        "twice.json",
        "{\"q\": {\"type\": \"noul\", \"type\": \"score\"}}",
    );
    let levels = dir.write(
        "levels.json",
        "{\n  \"risk\": {\n    \"type\": \"score\",\n    \"instructions\": \"How risky?\",\n    \"criteria\": [\"only\"]\n  }\n}",
    );
    let field = dir.write(
        "field.json",
        "{\"s\": {\"type\": \"noul\",\n  \"instructionz\": \"Spam?\"}}",
    );
    let not_set = dir.write("array.json", "[1, 2]");
    let good = fixture("TNL007.bad.json");
    let out = lint(
        &dir,
        &[&missing, &syntax, &twice, &levels, &field, &not_set, &good],
    );
    assert_eq!(out.code, 2, "{out:?}");
    let err: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(err.len(), 6, "{}", out.stderr);
    assert!(
        err[0].starts_with(&format!("toolnexus: error: {missing}: cannot read: ")),
        "{}",
        err[0]
    );
    assert_eq!(
        err[1],
        format!("toolnexus: error: {syntax}: invalid JSON at line 2, column 24: trailing comma")
    );
    assert!(
        err[2].contains("the key \"type\" appears twice, at line 1, column"),
        "{}",
        err[2]
    );
    assert_eq!(
        err[3],
        format!(
            "toolnexus: error: {levels}:5:5: question \"risk\": a score needs 2..=10 levels, got 1"
        )
    );
    assert_eq!(
        err[4],
        format!(
            "toolnexus: error: {field}:2:3: question \"s\": unknown field \"instructionz\" (a question has \"type\", \"instructions\" and \"criteria\")"
        )
    );
    assert!(
        err[5].starts_with(&format!("toolnexus: error: {not_set}:1:1: not questions")),
        "{}",
        err[5]
    );
    // The readable file was linted all the same.
    assert!(out.stdout.contains("warning[TNL007]"), "{}", out.stdout);
    assert!(
        out.stdout
            .ends_with("lint: 7 files, 1 question: 1 warning; 6 files not read (see above)\n"),
        "{}",
        out.stdout
    );
    let r = report(&lint(&dir, &["--format", "json", &levels]));
    assert_eq!(r["unreadable"][0]["line"], 5, "{r}");
    assert_eq!(r["summary"]["failed"], true, "{r}");
}

#[test]
fn the_repositorys_own_question_files_pass_strict() {
    let dir = TempDir::new("lint-repo");
    let root = env!("CARGO_MANIFEST_DIR");
    let files = [
        format!("{root}/../toolnexus-guard/data/guard.questions.json"),
        crate::support::demo("questions.json"),
        format!("{root}/../toolnexus-local/examples/routing/routing.questions.json"),
    ];
    let args: Vec<&str> = std::iter::once("--strict")
        .chain(files.iter().map(String::as_str))
        .collect();
    let out = lint(&dir, &args);
    assert_eq!(out.code, 0, "{out:?}");
}

#[test]
fn a_dash_reads_standard_input() {
    use std::io::Write as _;
    let dir = TempDir::new("lint-stdin");
    let mut cmd = toolnexus(
        dir.path(),
        &["lint", "--model-dir", dir.path().to_str().unwrap(), "-"],
    );
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"late": {"type": "noul", "instructions": "Is the parcel never coming?"}}"#)
        .unwrap();
    let out = collect(child);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .starts_with("-:1:58: warning[TNL007]: a negated statement: \"never\""),
        "{}",
        out.stdout
    );
}

/// Direction controls and invisible characters are named by code point at the
/// character, in keys and texts alike; keys that differ only in case,
/// separators or look-alike letters are named with the key they look like.
#[test]
fn hidden_characters_and_look_alike_keys_are_named() {
    let dir = TempDir::new("lint-hidden");
    let q = dir.write(
        "q.json",
        "{\"spam\": {\"type\": \"noul\", \"instructions\": \"Is it spam?\\u202e yes\"},\n\
          \"sp\u{0430}m\": {\"type\": \"noul\", \"instructions\": \"Is it bulk?\"},\n\
          \"ur\u{200b}gency\": {\"type\": \"choice\", \"instructions\": \"How urgent?\", \"criteria\": {\"low\": \"can wait\", \"Low\": \"can wait a day\", \"other\": \"any\u{2066}thing else\"}}}\n",
    );
    let out = lint(&dir, &[&q]);
    assert_eq!(out.code, 1, "a direction control is an error: {out:?}");
    let want = [
        format!(
            "{q}:1:55: error[TNL014]: U+202E RIGHT-TO-LEFT OVERRIDE in the text at spam.instructions (question \"spam\")"
        ),
        format!(
            "{q}:2:1: warning[TNL016]: question key \"sp\u{0430}m\" looks like question key \"spam\": they differ only in case, separators or look-alike characters (question \"sp\u{0430}m\")"
        ),
        format!(
            "{q}:3:1: warning[TNL015]: U+200B ZERO WIDTH SPACE in the question key \"ur\\u{{200b}}gency\" (question \"ur\\u{{200b}}gency\")"
        ),
        "warning[TNL016]: option \"Low\" looks like option \"low\"".to_string(),
        "error[TNL014]: U+2066 LEFT-TO-RIGHT ISOLATE in the text at".to_string(),
    ];
    for w in &want {
        assert!(
            out.stdout.contains(w.as_str()),
            "want {w:?} in:\n{}",
            out.stdout
        );
    }
    assert!(
        out.stdout
            .ends_with("lint: 1 file, 3 questions: 2 errors, 3 warnings (fails)\n"),
        "{}",
        out.stdout
    );
}
