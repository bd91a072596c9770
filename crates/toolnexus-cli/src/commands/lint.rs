//! `toolnexus lint`: static checks of question files, before anything is
//! asked of a model. Each file is read as `--questions` reads it (a syntax
//! error, a repeated key, a question that does not decode or breaks a limit
//! is exit 2, with its file:line:column); each question is then checked by
//! the rules of [`rules`], the text heuristics of [`text`], and, for the
//! near-duplicate check between option descriptions, the embedded model when
//! it is there (said when it is not). Findings point at the offending key or
//! phrase by [`scan`]. No network, no model call beyond that embedding.

mod rules;
mod scan;
mod text;

use std::path::Path;

use anyhow::Result;
use serde_json::{Value, json};
use toolnexus::classifier::{Question, Questions, degenerate_criteria, validate_questions};

use crate::args::LintArgs;
use crate::exit::{self, Exit};
use rules::{RULES, Rule, Severity};
use scan::{LineCol, Seg, Spans};

/// Findings that fail the run exit 1 (the code the command's help documents).
const FINDINGS_FAIL: Exit = Exit::Findings;

/// One thing a rule found.
#[derive(Debug)]
struct Finding {
    file: String,
    at: LineCol,
    rule: &'static Rule,
    /// The question's key; none for a finding about the whole file.
    question: Option<String>,
    path: String,
    message: String,
}

/// A file that could not be linted, and why (exit 2).
#[derive(Debug)]
struct Unreadable {
    file: String,
    at: Option<LineCol>,
    message: String,
}

/// An option description waiting for the near-duplicate check.
struct Described {
    file: String,
    spans_index: usize,
    question: String,
    option: String,
    path: Vec<Seg>,
    text: String,
}

/// Runs `toolnexus lint`.
pub fn run(args: LintArgs) -> Result<Exit> {
    let json_out = args.format == "json";
    if args.list_rules {
        list_rules(json_out);
        return Ok(Exit::Success);
    }
    if let Some(id) = &args.explain {
        let rule = rules::find(id).ok_or_else(|| {
            exit::usage(format!(
                "--explain {id}: no such rule (the rules are {}..{}; see toolnexus lint --list-rules)",
                RULES[0].id,
                RULES[RULES.len() - 1].id
            ))
        })?;
        explain(rule, json_out);
        return Ok(Exit::Success);
    }

    let mut findings = Vec::new();
    let mut unreadable = Vec::new();
    let mut described = Vec::new();
    let mut all_spans = Vec::new();
    let mut questions = 0;
    for path in &args.files {
        let file = path.display().to_string();
        let parsed = read(path).and_then(|owned| {
            let v = crate::input::parse_json_text(crate::input::strip_bom(&owned))?;
            Ok((owned, v))
        });
        let (owned, v) = match parsed {
            Ok(x) => x,
            Err(message) => {
                unreadable.push(Unreadable {
                    file,
                    at: None,
                    message,
                });
                continue;
            }
        };
        let text = crate::input::strip_bom(&owned);
        let spans = Spans::scan(text);
        let set = read_questions(&file, &v, &spans, &mut unreadable);
        questions += set.len();
        let mut cx = Cx {
            file: &file,
            spans: &spans,
            spans_index: all_spans.len(),
            findings: &mut findings,
            described: &mut described,
        };
        for (key, (q, raw)) in &set {
            cx.question(key, q, raw);
        }
        let keys: Vec<&str> = set.iter().map(|(k, _)| k.as_str()).collect();
        for (later, first) in text::look_alikes(&keys) {
            cx.push_key(
                rules::LOOK_ALIKE_KEYS,
                later,
                &[key(later)],
                format!("question key {later:?} looks like question key {first:?}: they differ only in case, separators or look-alike characters"),
            );
        }
        cx.budget(&set);
        all_spans.push(spans);
    }

    let mut skipped = Vec::new();
    similar(&args, &described, &all_spans, &mut findings, &mut skipped);

    findings.sort_by(|a, b| {
        let order = |f: &Finding| {
            args.files
                .iter()
                .position(|p| p.display().to_string() == f.file)
        };
        (order(a), a.at.line, a.at.column, a.rule.id).cmp(&(
            order(b),
            b.at.line,
            b.at.column,
            b.rule.id,
        ))
    });
    let count = |s: Severity| findings.iter().filter(|f| f.rule.severity == s).count();
    let (errors, warnings, infos) = (
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Info),
    );
    let failed = errors > 0 || (args.strict && warnings > 0);
    let files = args.files.len();

    for u in &unreadable {
        let at =
            u.at.map_or(String::new(), |a| format!(":{}:{}", a.line, a.column));
        tell!("toolnexus: error: {}{at}: {}", u.file, u.message);
    }
    if json_out {
        let report = json!({
            "findings": findings.iter().map(|f| json!({
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
            "skipped": skipped.iter().map(|(rule, reason): &(&Rule, String)| json!({
                "rule": rule.id,
                "name": rule.name,
                "reason": reason,
            })).collect::<Vec<_>>(),
            "unreadable": unreadable.iter().map(|u| json!({
                "file": u.file,
                "line": u.at.map(|a| a.line),
                "column": u.at.map(|a| a.column),
                "message": u.message,
            })).collect::<Vec<_>>(),
            "summary": {
                "files": files,
                "questions": questions,
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
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        for f in &findings {
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
        for (rule, reason) in &skipped {
            say!("note: {} ({}) skipped: {reason}", rule.id, rule.name);
        }
        say!(
            "{}",
            summary(
                files,
                questions,
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

/// The fields a wire question may have (`x_…` extension fields too), as
/// `--questions` reads them.
const QUESTION_FIELDS: [&str; 3] = ["type", "instructions", "criteria"];

/// The file's questions, each with its raw JSON; a question that does not
/// decode or breaks a limit is unreadable (exit 2), placed at its key, and
/// left out of the checks.
fn read_questions<'v>(
    file: &str,
    v: &'v Value,
    spans: &Spans,
    unreadable: &mut Vec<Unreadable>,
) -> Vec<(String, (Question, &'v Value))> {
    let mut bad = |at: LineCol, message: String| {
        unreadable.push(Unreadable {
            file: file.to_string(),
            at: Some(at),
            message,
        })
    };
    let Value::Object(set) = v else {
        bad(
            spans.value_at(&[], None),
            "not questions: a questions file is a JSON object of key → question".into(),
        );
        return Vec::new();
    };
    if set.is_empty() {
        bad(
            spans.value_at(&[], None),
            "no questions: the object is empty".into(),
        );
    }
    let mut out = Vec::new();
    for (key, raw) in set {
        let path = [Seg::Key(key.clone())];
        if let Value::Object(fields) = raw
            && let Some(field) = fields
                .keys()
                .find(|f| !QUESTION_FIELDS.contains(&f.as_str()) && !f.starts_with("x_"))
        {
            let at = spans.key_at(&[Seg::Key(key.clone()), Seg::Key(field.clone())]);
            bad(
                at,
                format!(
                    "question {key:?}: unknown field {field:?} (a question has \"type\", \"instructions\" and \"criteria\")"
                ),
            );
            continue;
        }
        let q = match Question::from_wire(raw) {
            Ok(q) => q,
            Err(e) => {
                let detail = e.to_string();
                let detail = detail.strip_prefix("classifier: ").unwrap_or(&detail);
                bad(spans.key_at(&path), format!("question {key:?}: {detail}"));
                continue;
            }
        };
        let one = Questions::from([(key.clone(), q.clone())]);
        if let Err(e) = validate_questions(&one) {
            let criteria = [Seg::Key(key.clone()), Seg::Key("criteria".into())];
            let detail = e.to_string();
            let detail = detail.strip_prefix("classifier: ").unwrap_or(&detail);
            bad(spans.key_at(&criteria), detail.to_string());
            continue;
        }
        out.push((key.clone(), (q, raw)));
    }
    out
}

/// What one file's checks need.
struct Cx<'a> {
    file: &'a str,
    spans: &'a Spans,
    spans_index: usize,
    findings: &'a mut Vec<Finding>,
    described: &'a mut Vec<Described>,
}

/// A text heuristic: each hit's byte offset in the text and what it found.
type TextCheck = fn(&str) -> Vec<(usize, String)>;

/// A text at a path, and whether phrase offsets inside it can be placed (only
/// in a JSON string; structured content is placed at its start).
fn text_of(v: Option<&Value>) -> Option<(String, bool)> {
    match v? {
        Value::String(s) => Some((s.clone(), true)),
        Value::Null => None,
        other => Some((other.to_string(), false)),
    }
}

fn blank(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.trim().is_empty(),
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    }
}

fn key(k: &str) -> Seg {
    Seg::Key(k.to_string())
}

impl Cx<'_> {
    fn push(
        &mut self,
        rule: &'static Rule,
        question: &str,
        path: &[Seg],
        within: Option<usize>,
        message: String,
    ) {
        self.push_at(
            rule,
            question,
            path,
            self.spans.value_at(path, within),
            message,
        );
    }

    fn push_key(&mut self, rule: &'static Rule, question: &str, path: &[Seg], message: String) {
        self.push_at(rule, question, path, self.spans.key_at(path), message);
    }

    fn push_at(
        &mut self,
        rule: &'static Rule,
        question: &str,
        path: &[Seg],
        at: LineCol,
        message: String,
    ) {
        self.findings.push(Finding {
            file: self.file.to_string(),
            at,
            rule,
            question: Some(question.to_string()),
            path: scan::show(path),
            message,
        });
    }

    /// Runs a text heuristic over the text at `path`, one finding per hit.
    fn heuristic(
        &mut self,
        rule: &'static Rule,
        q: &str,
        path: &[Seg],
        raw: Option<&Value>,
        check: TextCheck,
        say: &dyn Fn(&str) -> String,
    ) {
        let Some((text, placeable)) = text_of(raw) else {
            return;
        };
        for (at, what) in check(&text) {
            self.push(rule, q, path, placeable.then_some(at), say(&what));
        }
    }

    /// TNL014/TNL015: direction controls and invisible characters in the
    /// question's key, and in every key and text beneath it.
    fn hidden(&mut self, q: &str, path: &[Seg], v: &Value) {
        let checks: [(&'static Rule, TextCheck); 2] = [
            (rules::BIDI_CONTROL, text::bidi_controls),
            (rules::ZERO_WIDTH, text::zero_width),
        ];
        let name = |path: &[Seg]| match path.last() {
            Some(Seg::Key(k)) if path.len() == 1 => format!("the question key {k:?}"),
            Some(Seg::Key(k)) => format!("the key {k:?}"),
            _ => "a key".to_string(),
        };
        if path.len() == 1 {
            for (rule, check) in checks {
                if let Some(Seg::Key(k)) = path.last() {
                    for (_, what) in check(k) {
                        let message = format!("{what} in {}", name(path));
                        self.push_key(rule, q, path, message);
                    }
                }
            }
        }
        match v {
            Value::String(t) => {
                for (rule, check) in checks {
                    for (at, what) in check(t) {
                        let message = format!("{what} in the text at {}", scan::show(path));
                        self.push(rule, q, path, Some(at), message);
                    }
                }
            }
            Value::Object(m) => {
                for (k, inner) in m {
                    let mut p = path.to_vec();
                    p.push(key(k));
                    for (rule, check) in checks {
                        for (_, what) in check(k) {
                            let message = format!("{what} in {}", name(&p));
                            self.push_key(rule, q, &p, message);
                        }
                    }
                    self.hidden(q, &p, inner);
                }
            }
            Value::Array(a) => {
                for (i, inner) in a.iter().enumerate() {
                    let mut p = path.to_vec();
                    p.push(Seg::Index(i));
                    self.hidden(q, &p, inner);
                }
            }
            _ => {}
        }
    }

    fn question(&mut self, k: &str, q: &Question, raw: &Value) {
        self.hidden(k, &[key(k)], raw);
        let qpath = vec![key(k)];
        let ipath = vec![key(k), key("instructions")];
        let instructions = raw.get("instructions");
        if blank(instructions) {
            let message = format!("{} question has no instructions", q.kind());
            if instructions.is_some() {
                self.push(rules::EMPTY_TEXT, k, &ipath, None, message);
            } else {
                self.push_key(rules::EMPTY_TEXT, k, &qpath, message);
            }
        }
        let where_ = |what: &'static str| move |w: &str| format!("{what} {w} in the instructions");
        self.heuristic(
            rules::NUMERIC,
            k,
            &ipath,
            instructions,
            text::numeric,
            &|w| format!("a number to compare or compute: {w} in the instructions; do it in code"),
        );
        self.heuristic(
            rules::TWO_THINGS,
            k,
            &ipath,
            instructions,
            text::two_things,
            &|w| format!("the instructions ask two things: {w}"),
        );
        let criteria = raw.get("criteria");
        let cpath = vec![key(k), key("criteria")];
        match q {
            Question::Noul(n) => {
                self.heuristic(
                    rules::NEGATED,
                    k,
                    &ipath,
                    instructions,
                    text::negations,
                    &where_("a negated statement:"),
                );
                self.heuristic(
                    rules::COMPOUND,
                    k,
                    &ipath,
                    instructions,
                    text::compound,
                    &where_("two claims in one statement:"),
                );
                if n.criteria.is_some() {
                    for side in ["true", "false"] {
                        let path = [key(k), key("criteria"), key(side)];
                        let v = criteria.and_then(|c| c.get(side));
                        if blank(v) {
                            let message = format!("the noul's meaning of {side:?} is empty");
                            if v.is_some() {
                                self.push(rules::EMPTY_TEXT, k, &path, None, message);
                            } else {
                                self.push_key(rules::EMPTY_TEXT, k, &cpath, message);
                            }
                        }
                        self.heuristic(rules::NUMERIC, k, &path, v, text::numeric, &|w| {
                            format!("a number to compare or compute: {w} in the meaning of {side:?}; do it in code")
                        });
                    }
                }
            }
            Question::Choice(c) => self.choice(k, c, criteria, &cpath),
            Question::Score(_) => {
                let levels: Vec<&Value> = criteria
                    .and_then(Value::as_array)
                    .map(|a| a.iter().collect())
                    .unwrap_or_default();
                for (i, l) in levels.iter().enumerate() {
                    let path = [key(k), key("criteria"), Seg::Index(i)];
                    if blank(Some(l)) {
                        self.push(
                            rules::EMPTY_TEXT,
                            k,
                            &path,
                            None,
                            format!("score level {i} is empty"),
                        );
                    }
                    self.heuristic(rules::NUMERIC, k, &path, Some(l), text::numeric, &|w| {
                        format!(
                            "a number to compare or compute: {w} in a score level; do it in code"
                        )
                    });
                }
                let texts: Vec<Option<String>> = levels
                    .iter()
                    .map(|l| text_of(Some(l)).map(|(t, _)| t))
                    .collect();
                if let Some((i, why)) = text::score_order(&texts) {
                    let path = [key(k), key("criteria"), Seg::Index(i)];
                    self.push(rules::SCORE_ORDER, k, &path, None, why);
                }
            }
            Question::Box(_) => {}
        }
    }

    fn choice(
        &mut self,
        k: &str,
        c: &toolnexus::classifier::ChoiceQuestion,
        criteria: Option<&Value>,
        cpath: &[Seg],
    ) {
        let options: Vec<(&String, &Value)> = criteria
            .and_then(Value::as_object)
            .map(|m| m.iter().collect())
            .unwrap_or_default();
        let degenerate = if options.len() == 1 {
            Some("a choice of one option always answers it (a question with one outcome is a noul)")
        } else {
            degenerate_criteria(&c.criteria)
        };
        if let Some(why) = degenerate {
            self.push_key(
                rules::DEGENERATE_CHOICE,
                k,
                cpath,
                format!("the options cannot be told apart: {why}"),
            );
        }
        let mut seen: Vec<(String, String)> = Vec::new();
        let mut way_out = false;
        for (id, v) in &options {
            let path = [key(k), key("criteria"), key(id)];
            let text = text_of(Some(v));
            way_out |= text::is_way_out(id, v.as_str());
            if degenerate.is_none() {
                match &text {
                    None => self.push(
                        rules::NAME_ONLY,
                        k,
                        &path,
                        None,
                        format!("option {id:?} has no description: it is read by its name alone"),
                    ),
                    Some(_) if blank(Some(v)) => self.push(
                        rules::EMPTY_TEXT,
                        k,
                        &path,
                        None,
                        format!("option {id:?} has an empty description"),
                    ),
                    Some((t, _)) if text::is_name_only(id, t) => self.push(
                        rules::NAME_ONLY,
                        k,
                        &path,
                        None,
                        format!("option {id:?} is described by its own name"),
                    ),
                    Some((t, _)) => {
                        let norm = text::normalise(t);
                        if let Some((first, _)) = seen.iter().find(|(_, n)| *n == norm) {
                            let message = format!(
                                "option {id:?} has the same description as option {first:?}"
                            );
                            self.push(rules::DUPLICATE, k, &path, None, message);
                        } else {
                            seen.push((id.to_string(), norm));
                            self.described.push(Described {
                                spans_index: self.spans_index,
                                question: k.to_string(),
                                option: id.to_string(),
                                path: path.to_vec(),
                                text: t.clone(),
                                file: self.file.to_string(),
                            });
                        }
                    }
                }
            }
            self.heuristic(rules::NUMERIC, k, &path, Some(v), text::numeric, &|w| {
                format!("a number to compare or compute: {w} in option {id:?}; do it in code")
            });
        }
        let ids: Vec<&str> = options.iter().map(|(id, _)| id.as_str()).collect();
        for (later, first) in text::look_alikes(&ids) {
            let path = [key(k), key("criteria"), key(later)];
            self.push_key(
                rules::LOOK_ALIKE_KEYS,
                k,
                &path,
                format!("option {later:?} looks like option {first:?}: they differ only in case, separators or look-alike characters"),
            );
        }
        if degenerate.is_none() && options.len() >= 2 && !way_out {
            self.push_key(
                rules::NO_WAY_OUT,
                k,
                cpath,
                "the choice has no way out: no option for an input that fits none of the others (add e.g. \"other\": \"anything else\")".into(),
            );
        }
    }

    /// TNL012/TNL013: the set's and each question's share of the token budgets.
    fn budget(&mut self, set: &[(String, (Question, &Value))]) {
        let tokens = |k: &str, q: &Question| (k.len() + 3 + q.wire().to_string().len()).div_ceil(4);
        let total: usize = set.iter().map(|(k, (q, _))| tokens(k, q)).sum();
        if total > rules::REQUEST_TOKENS {
            self.findings.push(Finding {
                file: self.file.to_string(),
                at: self.spans.value_at(&[], None),
                rule: rules::OVER_BUDGET,
                question: None,
                path: String::new(),
                message: format!(
                    "the questions are about {total} tokens (4 bytes a token), over the {} a request may hold with its state",
                    rules::REQUEST_TOKENS
                ),
            });
        }
        for (k, (q, _)) in set {
            let n = tokens(k, q);
            let path = [key(k)];
            if n > rules::QUESTION_TOKENS {
                self.push_key(
                    rules::OVER_BUDGET,
                    k,
                    &path,
                    format!(
                        "the question is about {n} tokens (4 bytes a token), over the {} it may share with the state",
                        rules::QUESTION_TOKENS
                    ),
                );
            } else if n > rules::QUESTION_TOKENS / 2 {
                self.push_key(
                    rules::TIGHT_BUDGET,
                    k,
                    &path,
                    format!(
                        "the question is about {n} tokens (4 bytes a token) of the {} it shares with the state: a state over about {} tokens will not fit (the state's share is unknown here)",
                        rules::QUESTION_TOKENS,
                        rules::QUESTION_TOKENS - n
                    ),
                );
            }
        }
    }
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

/// TNL005: option descriptions of one choice that mean nearly the same, by
/// the embedded model; skipped (and said) when it cannot be loaded. The model
/// is loaded only when some choice has two descriptions to compare.
fn similar(
    args: &LintArgs,
    described: &[Described],
    spans: &[Spans],
    findings: &mut Vec<Finding>,
    skipped: &mut Vec<(&'static Rule, String)>,
) {
    fn group(d: &Described) -> (usize, &str) {
        (d.spans_index, &d.question)
    }
    let needed = described.windows(2).any(|w| group(&w[0]) == group(&w[1]));
    if !needed {
        return;
    }
    let env = toolnexus::classifier::EnvSource::process();
    let dir = match toolnexus_local::model_dir(args.model_dir.as_deref(), &env) {
        Ok(d) => d,
        Err(e) => {
            skipped.push((rules::SIMILAR, format!("{e}; {ENABLE}")));
            return;
        }
    };
    let embedder = match toolnexus_local::Embedder::load(&dir) {
        Ok(e) => e,
        Err(e) if e.is_missing_file() => {
            skipped.push((
                rules::SIMILAR,
                format!("no embedded model in {}; {ENABLE}", dir.display()),
            ));
            return;
        }
        Err(e) => {
            skipped.push((
                rules::SIMILAR,
                format!(
                    "the embedded model in {} could not be loaded ({e}); {ENABLE}",
                    dir.display()
                ),
            ));
            return;
        }
    };
    let texts: Vec<&str> = described.iter().map(|d| d.text.as_str()).collect();
    let vectors = match embedder.embed(&texts) {
        Ok(v) => v,
        Err(e) => {
            skipped.push((rules::SIMILAR, format!("the embedded model failed: {e}")));
            return;
        }
    };
    let cosine = |x: &[f32], y: &[f32]| -> f32 { x.iter().zip(y).map(|(a, b)| a * b).sum() };
    // Pairs of one question close enough, unless a negation tells them apart
    // (embeddings barely see one: "wants a refund" and "does not want a
    // refund" are close). Each option is reported once, against the first
    // earlier option it is close to.
    let mut pairs = Vec::new();
    for j in 0..described.len() {
        for i in 0..j {
            let (a, b) = (&described[i], &described[j]);
            if group(a) != group(b) {
                continue;
            }
            let whole = cosine(&vectors[i], &vectors[j]);
            let negated = |t: &str| !text::negations(t).is_empty();
            if whole >= rules::SIMILAR_CUT && negated(&a.text) == negated(&b.text) {
                pairs.push((i, j, whole));
            }
        }
    }
    let mut reported = std::collections::BTreeSet::new();
    for &(i, j, score) in &pairs {
        if !reported.insert(j) {
            continue;
        }
        let b = &described[j];
        findings.push(Finding {
            file: b.file.clone(),
            at: spans[b.spans_index].value_at(&b.path, None),
            rule: rules::SIMILAR,
            question: Some(b.question.clone()),
            path: scan::show(&b.path),
            message: format!(
                "option {:?} means nearly the same as option {:?} (cosine {score:.2} >= {:.2})",
                b.option,
                described[i].option,
                rules::SIMILAR_CUT
            ),
        });
    }
}

/// How to turn the near-duplicate check on.
const ENABLE: &str = "fetch the model with `toolnexus model fetch`, or point --model-dir or $TOOLNEXUS_MODEL_DIR at it, to run this check";
