//! Reading the user's inputs: JSON given as a file, inline or on stdin, and
//! question sets. Every error is one line naming the flag and the file, with the
//! line and column of a JSON syntax error.

use std::io::Read as _;
use std::path::Path;

use anyhow::Result;
use serde_json::Value;
use toolnexus::classifier::Questions;

pub use toolnexus::classifier::{json_kind, parse_json_text, strip_bom};

use crate::exit;

/// Reads a whole file as text; a failure is bad input (exit 2) naming the flag
/// (or only the file, when `flag` is empty). A directory says so;
/// `/dev/stdin`, `<(…)` and other streams are read to their end like any file.
pub fn read_file(flag: &str, path: &Path) -> Result<String> {
    let shown = match flag {
        "" => path.display().to_string(),
        _ => format!("{flag} {}", path.display()),
    };
    if path.is_dir() {
        return Err(exit::usage(format!("{shown}: is a directory, not a file")));
    }
    let bytes =
        std::fs::read(path).map_err(|e| exit::usage(format!("{shown}: cannot read: {e}")))?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        exit::usage(format!(
            "{shown}: not UTF-8 text (an invalid byte at offset {at})"
        ))
    })
}

/// Whether `arg` reads as inline JSON rather than a path.
fn looks_inline(arg: &str) -> bool {
    let t = strip_bom(arg).trim_start();
    t.starts_with(['{', '[', '"'])
        || t == "null"
        || t == "true"
        || t == "false"
        || t.parse::<f64>().is_ok()
}

/// Reads a JSON value given as `-` (stdin), a file path, or inline JSON. An
/// existing path wins over inline reading (a file, a directory — refused by
/// name — or a stream such as `/dev/stdin` or `<(…)`); a value that is
/// neither names both.
pub fn read_json_arg(flag: &str, arg: &str) -> Result<Value> {
    let (text, source) = if arg == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| exit::usage(format!("{flag} -: cannot read standard input: {e}")))?;
        (s, "standard input".to_string())
    } else if Path::new(arg).exists() {
        (read_file(flag, Path::new(arg))?, arg.to_string())
    } else if looks_inline(arg) {
        (arg.to_string(), "inline JSON".to_string())
    } else {
        return Err(exit::usage(format!(
            "{flag} {arg}: no such file (and not inline JSON)"
        )));
    };
    parse_json_text(&text).map_err(|e| exit::usage(format!("{flag} {source}: {e}")))
}

/// A state is a string, an object or an array (as the System One wire and
/// `serve` take it); a bare number, boolean or null is refused, naming it.
pub use toolnexus_server::wire::check_state;

/// Reads and checks a question set: an object of key → wire question, within
/// the client-side limits.
pub fn read_questions(arg: &str) -> Result<Questions> {
    let v = read_json_arg("--questions", arg)?;
    parse_questions(arg, &v)
}

/// Checks a question set already read as JSON. A field no question has (a
/// misspelt `instructionz`) is an error naming the question and the field,
/// not a question silently asked without it.
pub fn parse_questions(source: &str, v: &Value) -> Result<Questions> {
    toolnexus_server::wire::read_questions(v)
        .map_err(|e| exit::usage(format!("--questions {source}: {e}")))
}

pub use toolnexus::states::{jsonl_lines, parse_line};
use toolnexus_table::{Input, StateSpec, Survey, TableError};

/// `--states` in any format (SPEC §24) opened and read through once (its
/// digest, its lines, its states), a refusal naming it: no state in it,
/// or a JSONL line that is a labelled example rather than a state (sent
/// whole, its gold answers would reach the judge as part of the state).
pub fn open_states(path: &Path, spec: StateSpec) -> Result<(Input, Survey)> {
    let input = Input::open(path, spec).map_err(states_error)?;
    let survey = input.survey().map_err(states_error)?;
    Ok((input, survey))
}

/// A states file's refusal as `--states` names it (exit 2).
pub fn states_error(e: TableError) -> anyhow::Error {
    exit::usage(format!("--states {e}"))
}

/// Whether two paths name one file (same device and inode), whatever their
/// spelling; a path that does not exist yet is no file at all.
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Refuses an output that is one of the command's own inputs (exit 2, naming
/// both flags): no command overwrites what it reads.
pub fn refuse_overwrite(out_flag: &str, out: &Path, inputs: &[(&str, &Path)]) -> Result<()> {
    for (flag, input) in inputs {
        if same_file(out, input) {
            return Err(exit::usage(format!(
                "{out_flag} {}: is the {flag} input {}; refusing to overwrite an input (choose another {out_flag})",
                out.display(),
                input.display()
            )));
        }
    }
    Ok(())
}

/// `--thresholds FILE` (from `toolnexus assess thresholds`) as per-question
/// bands; a bad file is a usage error naming it and the key. With the
/// questions being asked, a question reworded since its cut was picked (the
/// file's hash differs) is a warning on stderr, once per question, here.
pub fn read_thresholds(
    path: &Path,
    asked: Option<&Questions>,
) -> Result<std::collections::BTreeMap<String, toolnexus::judge::Bands>> {
    let t = toolnexus::judge::Thresholds::load(path)
        .map_err(|e| exit::usage(format!("--thresholds: {e}")))?;
    for key in asked.map(|q| t.reworded(q)).unwrap_or_default() {
        // Never a panic on a closed stderr: serve calls this per request.
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr().lock(),
            "warning: --thresholds {}: question {key:?} was reworded since its cut was picked; \
             its bands may no longer hold (pick them again with `toolnexus assess thresholds`)",
            path.display()
        );
    }
    Ok(t.bands)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_json_and_missing_files_are_told_apart() {
        assert_eq!(
            read_json_arg("--state", r#"{"a": 1}"#).unwrap(),
            serde_json::json!({"a": 1})
        );
        assert_eq!(
            read_json_arg("--state", "42").unwrap(),
            serde_json::json!(42)
        );
        let e = read_json_arg("--state", "nope.json").unwrap_err();
        assert_eq!(
            e.to_string(),
            "--state nope.json: no such file (and not inline JSON)"
        );
        let e = read_json_arg("--state", "{\n  \"a\": }").unwrap_err();
        assert_eq!(
            e.to_string(),
            "--state inline JSON: invalid JSON at line 2, column 8: expected value"
        );
    }

    #[test]
    fn an_output_that_is_an_input_is_refused() {
        let dir = std::env::temp_dir().join(format!("toolnexus-cli-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let run = dir.join("run.jsonl");
        std::fs::write(&run, "{}\n").unwrap();
        let spelled = dir.join(".").join("run.jsonl");
        let e = refuse_overwrite("--out", &spelled, &[("run", &run)]).unwrap_err();
        assert!(e.to_string().contains("is the run input"), "{e}");
        assert_eq!(crate::exit::exit_of(&e), crate::exit::Exit::Usage);
        assert!(refuse_overwrite("--out", &dir.join("new.json"), &[("run", &run)]).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn streams_directories_boms_and_repeated_keys_are_named() {
        let dir =
            std::env::temp_dir().join(format!("toolnexus-cli-input-s-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let d = dir.display().to_string();
        let e = read_json_arg("--questions", &d).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("--questions {d}: is a directory, not a file")
        );
        let bom = dir.join("bom.json");
        std::fs::write(&bom, "\u{feff}{\"a\": 1}").unwrap();
        assert_eq!(
            read_json_arg("--state", &bom.display().to_string()).unwrap(),
            serde_json::json!({"a": 1})
        );
        std::fs::remove_dir_all(&dir).unwrap();
        let e = read_json_arg("--questions", r#"{"q": {"type": "noul", "type": "score"}}"#)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "--questions inline JSON: invalid JSON: the key \"type\" appears twice, at line 1, column 29"
        );
        let e = read_json_arg(
            "--questions",
            "{\"q\": {\"type\": \"noul\",\n  \"instructions\": \"x\"\n",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "--questions inline JSON: invalid JSON: the input ends at line 2, column 21: EOF while parsing an object"
        );
        let v = serde_json::json!({"s": {"type": "noul", "instructionz": "x"}});
        let e = parse_questions("q.json", &v).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--questions q.json: question \"s\": unknown field \"instructionz\" (a question has \"type\", \"instructions\" and \"criteria\")"
        );
        let v = serde_json::json!({"s": {"type": "noul", "instructions": "x", "x_trace": 1}});
        assert!(parse_questions("q.json", &v).is_ok());
        assert_eq!(
            parse_line(1, "\u{feff}{\"a\":1}").unwrap(),
            serde_json::json!({"a": 1})
        );
        assert_eq!(
            parse_line(3, r#"{"a":1,"a":2}"#).unwrap_err(),
            "line 3: invalid JSON: the key \"a\" appears twice"
        );
    }

    #[test]
    fn questions_are_checked_against_the_limits() {
        let v = serde_json::json!({"risk": {"type": "score", "instructions": "?", "criteria": ["one"]}});
        let e = parse_questions("q.json", &v).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--questions q.json: classifier: question \"risk\": a score needs 2..=10 levels, got 1"
        );
        let e = parse_questions("q.json", &serde_json::json!({})).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--questions q.json: classifier: "),
            "{e}"
        );
    }
}
