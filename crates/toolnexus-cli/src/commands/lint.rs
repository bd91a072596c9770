//! `toolnexus lint`: static checks of question files, before anything is
//! asked of a model. Each file is read as `--questions` reads it (a syntax
//! error, a repeated key, a question that does not decode or breaks a limit
//! is exit 2, with its file:line:column); each question is then checked by
//! the library's rules ([`toolnexus::lint`]), and, for the near-duplicate
//! check between option descriptions, the embedded model when it is there
//! (said when it is not). No network, no model call beyond that embedding.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Result;
use serde_json::{Value, json};
use toolnexus::lint::{Lint, RULES, Rule, Severity};

use crate::args::LintArgs;
use crate::exit::{self, Exit};

/// Findings that fail the run exit 1 (the code the command's help documents).
const FINDINGS_FAIL: Exit = Exit::Findings;

/// Runs `toolnexus lint`.
pub fn run(args: LintArgs) -> Result<Exit> {
    let json_out = args.format == "json";
    if args.list_rules {
        list_rules(json_out);
        return Ok(Exit::Success);
    }
    if let Some(id) = &args.explain {
        let rule = toolnexus::lint::find(id).ok_or_else(|| {
            exit::usage(format!(
                "--explain {id}: no such rule (the rules are {}..{}; see toolnexus lint --list-rules)",
                RULES[0].id,
                RULES[RULES.len() - 1].id
            ))
        })?;
        explain(rule, json_out);
        return Ok(Exit::Success);
    }

    let mut lint = Lint::new();
    for path in &args.files {
        let file = path.display().to_string();
        let parsed = read(path).and_then(|owned| {
            let v = crate::input::parse_json_text(crate::input::strip_bom(&owned))?;
            Ok((owned, v))
        });
        match parsed {
            Ok((owned, v)) => lint.add_parsed(&file, crate::input::strip_bom(&owned), &v),
            Err(message) => lint.unreadable(&file, message),
        }
    }
    similar(&args, &mut lint);
    let report = lint.finish();

    let (errors, warnings, infos) = (
        report.count(Severity::Error),
        report.count(Severity::Warning),
        report.count(Severity::Info),
    );
    let failed = report.failed(args.strict);
    let unreadable = &report.unreadable;
    for u in unreadable {
        let at =
            u.at.map_or(String::new(), |a| format!(":{}:{}", a.line, a.column));
        tell!("toolnexus: error: {}{at}: {}", u.file, u.message);
    }
    if json_out {
        let json = json!({
            "findings": report.findings.iter().map(|f| json!({
                "file": f.file,
                "line": f.at.line,
                "column": f.at.column,
                "rule": f.rule.id,
                "name": f.rule.name,
                "severity": f.rule.severity.as_str(),
                "question": f.question,
                "path": f.path,
                "message": f.message,
            })).collect::<Vec<_>>(),
            "skipped": report.skipped.iter().map(|s| json!({
                "rule": s.rule.id,
                "name": s.rule.name,
                "reason": s.reason,
            })).collect::<Vec<_>>(),
            "unreadable": unreadable.iter().map(|u| json!({
                "file": u.file,
                "line": u.at.map(|a| a.line),
                "column": u.at.map(|a| a.column),
                "message": u.message,
            })).collect::<Vec<_>>(),
            "summary": {
                "files": report.files,
                "questions": report.questions,
                "errors": errors,
                "warnings": warnings,
                "infos": infos,
                "unreadable": unreadable.len(),
                "strict": args.strict,
                "failed": failed || !unreadable.is_empty(),
            },
        });
        say!(
            "{}",
            serde_json::to_string_pretty(&json).unwrap_or_default()
        );
    } else {
        for f in &report.findings {
            let question = f
                .question
                .as_ref()
                .map_or(String::new(), |q| format!(" (question {q:?})"));
            say!(
                "{}:{}:{}: {}[{}]: {}{question}",
                f.file,
                f.at.line,
                f.at.column,
                f.rule.severity.as_str(),
                f.rule.id,
                f.message
            );
        }
        for s in &report.skipped {
            say!(
                "note: {} ({}) skipped: {}",
                s.rule.id,
                s.rule.name,
                s.reason
            );
        }
        say!(
            "{}",
            summary(
                report.files,
                report.questions,
                errors,
                warnings,
                infos,
                unreadable.len(),
                args.strict
            )
        );
    }
    Ok(if !unreadable.is_empty() {
        Exit::Usage
    } else if failed {
        FINDINGS_FAIL
    } else {
        Exit::Success
    })
}

/// `lint: 2 files, 9 questions: 1 error, 3 warnings, 1 info (fails)`.
fn summary(
    files: usize,
    questions: usize,
    errors: usize,
    warnings: usize,
    infos: usize,
    unreadable: usize,
    strict: bool,
) -> String {
    let n = |k: usize, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
    let mut parts = Vec::new();
    if errors > 0 {
        parts.push(n(errors, "error", "errors"));
    }
    if warnings > 0 {
        parts.push(n(warnings, "warning", "warnings"));
    }
    if infos > 0 {
        parts.push(n(infos, "info", "infos"));
    }
    let found = if parts.is_empty() {
        "no findings".to_string()
    } else {
        parts.join(", ")
    };
    let mut line = format!(
        "lint: {}, {}: {found}",
        n(files, "file", "files"),
        n(questions, "question", "questions")
    );
    if unreadable > 0 {
        line.push_str(&format!(
            "; {} not read (see above)",
            n(unreadable, "file", "files")
        ));
    }
    if errors > 0 || (strict && warnings > 0) {
        line.push_str(if strict && errors == 0 {
            " (warnings fail under --strict)"
        } else {
            " (fails)"
        });
    }
    line
}

/// The file's text; a failure says why (the caller names the file).
fn read(path: &Path) -> Result<String, String> {
    if path == Path::new("-") {
        use std::io::Read as _;
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
        return Ok(text);
    }
    if path.is_dir() {
        return Err("is a directory, not a file".into());
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read: {e}"))?;
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "not UTF-8 text (an invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

/// `--list-rules`: one rule a line (or a JSON array).
fn list_rules(json_out: bool) {
    if json_out {
        let all: Vec<Value> = RULES
            .iter()
            .map(|r| {
                json!({"id": r.id, "name": r.name, "severity": r.severity.as_str(), "rationale": r.rationale})
            })
            .collect();
        say!("{}", serde_json::to_string_pretty(&all).unwrap_or_default());
        return;
    }
    for r in &RULES {
        say!(
            "{}  {:<7}  {:<22}  {}",
            r.id,
            r.severity.as_str(),
            r.name,
            r.rationale
        );
    }
}

/// `--explain ID`.
fn explain(r: &Rule, json_out: bool) {
    if json_out {
        let one = json!({
            "id": r.id, "name": r.name, "severity": r.severity.as_str(),
            "rationale": r.rationale, "explain": r.explain,
        });
        say!("{}", serde_json::to_string_pretty(&one).unwrap_or_default());
        return;
    }
    say!("{} {} ({})", r.id, r.name, r.severity.as_str());
    say!("{}", r.rationale);
    say!();
    say!("{}", r.explain);
}

/// TNL005 on the embedded model: every description the library would compare
/// embedded in one batch, the similarity handed in as the cosine of two
/// embeddings. The model is loaded only when some choice has two descriptions
/// to compare; when it cannot be, the check is skipped and the report says so.
fn similar(args: &LintArgs, lint: &mut Lint) {
    let texts = lint.descriptions();
    if texts.is_empty() {
        return;
    }
    let env = toolnexus::classifier::EnvSource::process();
    let dir = match toolnexus_local::model_dir(args.model_dir.as_deref(), &env) {
        Ok(d) => d,
        Err(e) => {
            lint.skip_similar(format!("{e}; {ENABLE}"));
            return;
        }
    };
    let embedder = match toolnexus_local::Embedder::load(&dir) {
        Ok(e) => e,
        Err(e) if e.is_missing_file() => {
            lint.skip_similar(format!("no embedded model in {}; {ENABLE}", dir.display()));
            return;
        }
        Err(e) => {
            lint.skip_similar(format!(
                "the embedded model in {} could not be loaded ({e}); {ENABLE}",
                dir.display()
            ));
            return;
        }
    };
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = match embedder.embed(&refs) {
        Ok(v) => v,
        Err(e) => {
            lint.skip_similar(format!("the embedded model failed: {e}"));
            return;
        }
    };
    // Embeddings are L2-normalised: their dot product is the cosine.
    let mut by_text: HashMap<&str, &[f32]> = HashMap::new();
    for (t, v) in refs.iter().zip(&vectors) {
        by_text.entry(*t).or_insert(v.as_slice());
    }
    let cosine = |a: &str, b: &str| -> f32 {
        match (by_text.get(a), by_text.get(b)) {
            (Some(x), Some(y)) => x.iter().zip(*y).map(|(p, q)| p * q).sum(),
            _ => 0.0,
        }
    };
    lint.similar(&cosine);
}

/// How to turn the near-duplicate check on.
const ENABLE: &str = "fetch the model with `toolnexus model fetch`, or point --model-dir or $TOOLNEXUS_MODEL_DIR at it, to run this check";
