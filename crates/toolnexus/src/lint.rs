//! Static checks of question sets, before anything is asked of a model
//! (SPEC §20): the rule table ([`RULES`], stable ids `TNL001`…), the text
//! heuristics behind it, and a JSON scanner that places every finding at the
//! offending key or phrase as a line and column of the file.
//!
//! Everything here is pure: no file is read, no model is asked. The one rule
//! that needs a model, the near-duplicate check between option descriptions
//! (TNL005), takes its similarity from the caller ([`Lint::similar`]); a
//! caller without one says so with [`Lint::skip_similar`].
//!
//! ```
//! use toolnexus::lint::{Lint, Severity};
//!
//! let text = r#"{"refund": {"type": "noul", "instructions": "The customer did not ask for a refund."}}"#;
//! let mut lint = Lint::new();
//! lint.add("questions.json", text);
//! let report = lint.finish();
//! assert_eq!(report.questions, 1);
//! let f = &report.findings[0];
//! assert_eq!((f.rule.id, f.rule.severity), ("TNL007", Severity::Warning));
//! assert_eq!((f.at.line, f.at.column), (1, 63));
//! assert_eq!(f.path, "refund.instructions");
//! assert!(!report.failed(false) && report.failed(true));
//! ```

mod rules;
mod scan;
mod text;

use serde_json::Value;

use crate::classifier::{
    ChoiceQuestion, Question, Questions, degenerate_criteria, parse_json_strict, validate_questions,
};
pub use rules::{QUESTION_TOKENS, REQUEST_TOKENS, RULES, Rule, SIMILAR_CUT, Severity, find};
pub use scan::LineCol;
use scan::{Seg, Spans};

/// One thing a rule found.
#[derive(Debug, Clone)]
pub struct Finding {
    /// The file, as it was named to [`Lint::add`].
    pub file: String,
    /// Where in the file: the offending key, value or phrase.
    pub at: LineCol,
    /// The rule that found it.
    pub rule: &'static Rule,
    /// The question's key; none for a finding about the whole file.
    pub question: Option<String>,
    /// The key path as people read it (`desk.criteria.billing`,
    /// `risk.criteria[2]`); empty for the whole file.
    pub path: String,
    /// What was found, in one line.
    pub message: String,
}

/// A file, or a question of it, that could not be linted, and why: a file
/// that is not JSON, a question that does not decode or breaks a limit.
#[derive(Debug, Clone)]
pub struct Unreadable {
    /// The file, as it was named.
    pub file: String,
    /// Where, when the fault is inside the file.
    pub at: Option<LineCol>,
    /// Why, in one line.
    pub message: String,
}

/// A rule that was not run, and why (TNL005 without a model).
#[derive(Debug, Clone)]
pub struct Skipped {
    /// The rule left out.
    pub rule: &'static Rule,
    /// Why, in one line.
    pub reason: String,
}

/// An option description waiting for the near-duplicate check.
#[derive(Debug)]
struct Described {
    file: String,
    spans_index: usize,
    question: String,
    option: String,
    path: Vec<Seg>,
    text: String,
}

impl Described {
    /// The choice it belongs to: only descriptions of one choice are compared.
    fn group(&self) -> (usize, &str) {
        (self.spans_index, &self.question)
    }
}

/// A lint run over one or more question files: add the files, run the
/// near-duplicate check if there is a similarity to run it with, then
/// [`finish`](Lint::finish) for the report.
///
/// ```
/// use toolnexus::lint::Lint;
///
/// let mut lint = Lint::new();
/// lint.add("a.json", r#"{"desk": {"type": "choice", "instructions": "Which desk?",
///     "criteria": {"billing": "money moved", "shipping": "a parcel is late",
///                  "other": "anything else"}}}"#);
/// lint.unreadable("b.json", "cannot read: No such file or directory");
/// let report = lint.finish();
/// assert_eq!((report.files, report.questions), (2, 1));
/// assert!(report.findings.is_empty());
/// assert_eq!(report.unreadable[0].file, "b.json");
/// ```
#[derive(Debug, Default)]
pub struct Lint {
    /// Every file named, in order: findings are sorted by it.
    names: Vec<String>,
    findings: Vec<Finding>,
    unreadable: Vec<Unreadable>,
    described: Vec<Described>,
    spans: Vec<Spans>,
    questions: usize,
    skipped: Vec<Skipped>,
}

impl Lint {
    /// An empty run.
    ///
    /// ```
    /// let report = toolnexus::lint::Lint::new().finish();
    /// assert_eq!(report.files, 0);
    /// ```
    pub fn new() -> Lint {
        Lint::default()
    }

    /// Lints one file's text: parsed here (a UTF-8 byte-order mark skipped, a
    /// key twice an error), a file that is not JSON recorded as unreadable.
    ///
    /// ```
    /// use toolnexus::lint::Lint;
    ///
    /// let mut lint = Lint::new();
    /// lint.add("q.json", r#"{"spam": {"type": "noul", "type": "score"}}"#);
    /// let report = lint.finish();
    /// assert!(report.unreadable[0].message.contains("\"type\" twice"));
    /// ```
    pub fn add(&mut self, file: &str, text: &str) {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        match parse_json_strict(text.as_bytes()) {
            Ok(value) => self.add_parsed(file, text, &value),
            Err(e) => self.unreadable(file, e.detail()),
        }
    }

    /// Lints one file the caller has parsed already: `text` is what `value`
    /// was parsed from (after any byte-order mark), for the positions.
    ///
    /// ```
    /// use toolnexus::lint::Lint;
    ///
    /// let text = r#"{"risk": {"type": "score", "instructions": "How risky?", "criteria": ["high", "medium", "low"]}}"#;
    /// let value: serde_json::Value = serde_json::from_str(text)?;
    /// let mut lint = Lint::new();
    /// lint.add_parsed("q.json", text, &value);
    /// let report = lint.finish();
    /// assert_eq!(report.findings[0].rule.id, "TNL010");
    /// assert_eq!(report.findings[0].path, "risk.criteria[0]");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn add_parsed(&mut self, file: &str, text: &str, value: &Value) {
        self.names.push(file.to_string());
        let spans = Spans::scan(text);
        let set = read_questions(file, value, &spans, &mut self.unreadable);
        self.questions += set.len();
        let mut cx = Cx {
            file,
            spans: &spans,
            spans_index: self.spans.len(),
            findings: &mut self.findings,
            described: &mut self.described,
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
        self.spans.push(spans);
    }

    /// Records a file that could not be read at all (the caller's I/O), in
    /// its place among the files.
    ///
    /// ```
    /// let mut lint = toolnexus::lint::Lint::new();
    /// lint.unreadable("gone.json", "cannot read: No such file or directory");
    /// assert_eq!(lint.finish().unreadable.len(), 1);
    /// ```
    pub fn unreadable(&mut self, file: &str, message: impl Into<String>) {
        self.names.push(file.to_string());
        self.unreadable.push(Unreadable {
            file: file.to_string(),
            at: None,
            message: message.into(),
        });
    }

    /// The option descriptions the near-duplicate check compares, in the
    /// order they were found; empty when no choice has two to compare, so a
    /// caller loads no model for nothing.
    ///
    /// ```
    /// let mut lint = toolnexus::lint::Lint::new();
    /// lint.add("q.json", r#"{"desk": {"type": "choice", "instructions": "Which desk?",
    ///     "criteria": {"billing": "money moved", "shipping": "a parcel is late"}}}"#);
    /// assert_eq!(lint.descriptions(), ["money moved", "a parcel is late"]);
    /// ```
    pub fn descriptions(&self) -> Vec<String> {
        let needed = self
            .described
            .windows(2)
            .any(|w| w[0].group() == w[1].group());
        if !needed {
            return Vec::new();
        }
        self.described.iter().map(|d| d.text.clone()).collect()
    }

    /// TNL005: option descriptions of one choice that mean nearly the same,
    /// by `similarity` (a cosine on embeddings: at or above [`SIMILAR_CUT`] is
    /// a finding). A pair told apart by a negation is never reported
    /// (embeddings barely see one), and each option is reported once, against
    /// the first earlier option it is close to. Call it after every file is
    /// added.
    ///
    /// ```
    /// use toolnexus::lint::Lint;
    ///
    /// let mut lint = Lint::new();
    /// lint.add("q.json", r#"{"plan": {"type": "choice", "instructions": "What does the customer want?",
    ///     "criteria": {"cancel": "cancel the subscription", "end": "cancel their subscription",
    ///                  "other": "anything else"}}}"#);
    /// // A stand-in for an embedding model: shared words over all words.
    /// let words = |t: &str| t.split(' ').map(str::to_string).collect::<std::collections::BTreeSet<_>>();
    /// lint.similar(&|a, b| {
    ///     let (a, b) = (words(a), words(b));
    ///     a.intersection(&b).count() as f32 * 2.0 / (a.len() + b.len()) as f32
    /// });
    /// let report = lint.finish();
    /// assert_eq!(report.findings.len(), 0, "2/3 of the words is below the cut");
    /// ```
    pub fn similar(&mut self, similarity: &dyn Fn(&str, &str) -> f32) {
        let described = &self.described;
        let negated = |t: &str| !text::negations(t).is_empty();
        let mut pairs = Vec::new();
        for j in 0..described.len() {
            for i in 0..j {
                let (a, b) = (&described[i], &described[j]);
                if a.group() != b.group() {
                    continue;
                }
                let whole = similarity(&a.text, &b.text);
                if whole >= SIMILAR_CUT && negated(&a.text) == negated(&b.text) {
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
            self.findings.push(Finding {
                file: b.file.clone(),
                at: self.spans[b.spans_index].value_at(&b.path, None),
                rule: rules::SIMILAR,
                question: Some(b.question.clone()),
                path: scan::show(&b.path),
                message: format!(
                    "option {:?} means nearly the same as option {:?} (cosine {score:.2} >= {:.2})",
                    b.option, described[i].option, SIMILAR_CUT
                ),
            });
        }
    }

    /// Says that TNL005 was not run, and why (no model to compare with).
    ///
    /// ```
    /// let mut lint = toolnexus::lint::Lint::new();
    /// lint.skip_similar("no embedded model");
    /// let report = lint.finish();
    /// assert_eq!(report.skipped[0].rule.id, "TNL005");
    /// ```
    pub fn skip_similar(&mut self, reason: impl Into<String>) {
        self.skipped.push(Skipped {
            rule: rules::SIMILAR,
            reason: reason.into(),
        });
    }

    /// The report: findings sorted by file (in the order the files were
    /// named), line, column and rule.
    ///
    /// ```
    /// let mut lint = toolnexus::lint::Lint::new();
    /// lint.add("q.json", r#"{"a": {"type": "noul", "instructions": "Spam?",
    ///     "criteria": {"true": "", "false": "a real message"}}}"#);
    /// let report = lint.finish();
    /// assert_eq!(report.findings[0].rule.id, "TNL001");
    /// assert!(report.failed(false));
    /// ```
    pub fn finish(mut self) -> Report {
        let names = &self.names;
        let order = |f: &Finding| names.iter().position(|n| *n == f.file);
        self.findings.sort_by(|a, b| {
            (order(a), a.at.line, a.at.column, a.rule.id).cmp(&(
                order(b),
                b.at.line,
                b.at.column,
                b.rule.id,
            ))
        });
        Report {
            findings: self.findings,
            skipped: self.skipped,
            unreadable: self.unreadable,
            files: self.names.len(),
            questions: self.questions,
        }
    }
}

/// What a lint run found.
///
/// ```
/// use toolnexus::lint::{Lint, Severity};
///
/// let mut lint = Lint::new();
/// lint.add("q.json", r#"{"desk": {"type": "choice", "instructions": "Which desk?",
///     "criteria": {"billing": "money moved", "shipping": "a parcel is late"}}}"#);
/// let report = lint.finish();
/// assert_eq!(report.count(Severity::Info), 1, "no way out (TNL009)");
/// assert!(!report.failed(true), "infos never fail");
/// ```
#[derive(Debug, Clone)]
pub struct Report {
    /// Every finding, sorted by file, line, column and rule.
    pub findings: Vec<Finding>,
    /// Rules that were not run, and why.
    pub skipped: Vec<Skipped>,
    /// Files and questions that could not be linted.
    pub unreadable: Vec<Unreadable>,
    /// The files named, read or not.
    pub files: usize,
    /// The questions linted.
    pub questions: usize,
}

impl Report {
    /// How many findings are of this severity.
    ///
    /// ```
    /// use toolnexus::lint::{Lint, Severity};
    /// let report = Lint::new().finish();
    /// assert_eq!(report.count(Severity::Error), 0);
    /// ```
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.rule.severity == severity)
            .count()
    }

    /// Whether the findings fail the check: an error, or under `strict` a
    /// warning (infos never fail; unreadable files are the caller's to judge).
    ///
    /// ```
    /// let report = toolnexus::lint::Lint::new().finish();
    /// assert!(!report.failed(true));
    /// ```
    pub fn failed(&self, strict: bool) -> bool {
        self.count(Severity::Error) > 0 || (strict && self.count(Severity::Warning) > 0)
    }
}

/// The fields a wire question may have (`x_…` extension fields too), as a
/// question set is read.
const QUESTION_FIELDS: [&str; 3] = ["type", "instructions", "criteria"];

/// The file's questions, each with its raw JSON; a question that does not
/// decode or breaks a limit is unreadable, placed at its key, and left out of
/// the checks.
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

/// Whether a text is absent or says nothing.
fn blank(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.trim().is_empty(),
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    }
}

/// A key step of a path.
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

    fn choice(&mut self, k: &str, c: &ChoiceQuestion, criteria: Option<&Value>, cpath: &[Seg]) {
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
