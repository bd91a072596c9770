//! Reading the user's inputs: JSON given as a file, inline or on stdin, and
//! question sets. Every error is one line naming the flag and the file, with the
//! line and column of a JSON syntax error.

use std::io::Read as _;
use std::path::Path;

use anyhow::Result;
use serde_json::Value;
use toolnexus::classifier::{Questions, questions_from_wire, validate_questions};

use crate::exit;

/// `invalid JSON at line L, column C: <what>` for a serde_json error.
pub fn json_error(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let what = full
        .rsplit_once(" at line ")
        .map_or(full.as_str(), |(what, _)| what);
    format!(
        "invalid JSON at line {}, column {}: {what}",
        e.line(),
        e.column()
    )
}

/// Reads a whole file as text; a failure is bad input (exit 2) naming the flag.
pub fn read_file(flag: &str, path: &Path) -> Result<String> {
    std::fs::read_to_string(path)
        .map_err(|e| exit::usage(format!("{flag} {}: cannot read: {e}", path.display())))
}

/// Whether `arg` reads as inline JSON rather than a path.
fn looks_inline(arg: &str) -> bool {
    let t = arg.trim_start();
    t.starts_with(['{', '[', '"'])
        || t == "null"
        || t == "true"
        || t == "false"
        || t.parse::<f64>().is_ok()
}

/// Reads a JSON value given as `-` (stdin), a file path, or inline JSON. An
/// existing file wins over inline reading; a value that is neither names both.
pub fn read_json_arg(flag: &str, arg: &str) -> Result<Value> {
    let (text, source) = if arg == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| exit::usage(format!("{flag} -: cannot read standard input: {e}")))?;
        (s, "standard input".to_string())
    } else if Path::new(arg).is_file() {
        (read_file(flag, Path::new(arg))?, arg.to_string())
    } else if looks_inline(arg) {
        (arg.to_string(), "inline JSON".to_string())
    } else {
        return Err(exit::usage(format!(
            "{flag} {arg}: no such file (and not inline JSON)"
        )));
    };
    serde_json::from_str(&text)
        .map_err(|e| exit::usage(format!("{flag} {source}: {}", json_error(&e))))
}

/// Reads and checks a question set: an object of key → wire question, within
/// the client-side limits.
pub fn read_questions(arg: &str) -> Result<Questions> {
    let v = read_json_arg("--questions", arg)?;
    parse_questions(arg, &v)
}

/// Checks a question set already read as JSON.
pub fn parse_questions(source: &str, v: &Value) -> Result<Questions> {
    let questions =
        questions_from_wire(v).map_err(|e| exit::usage(format!("--questions {source}: {e}")))?;
    validate_questions(&questions)
        .map_err(|e| exit::usage(format!("--questions {source}: {e}")))?;
    Ok(questions)
}

/// One line of a JSONL file: its 1-based number and text. Blank lines are not states.
pub fn jsonl_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
        .filter(|(_, l)| !l.trim().is_empty())
}

/// Parses one JSONL line: the error names the line (`line 7: invalid JSON at column 3: …`).
pub fn parse_line(n: usize, text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| {
        let full = e.to_string();
        let what = full
            .rsplit_once(" at line ")
            .map_or(full.as_str(), |(what, _)| what);
        format!("line {n}: invalid JSON at column {}: {what}", e.column())
    })
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
    }

    #[test]
    fn jsonl_numbers_physical_lines_and_skips_blanks() {
        let lines: Vec<_> = jsonl_lines("1\n\n{\"a\":2}\r\n").collect();
        assert_eq!(lines, [(1, "1"), (3, "{\"a\":2}")]);
        assert_eq!(
            parse_line(4, "{oops").unwrap_err(),
            "line 4: invalid JSON at column 2: key must be a string"
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
