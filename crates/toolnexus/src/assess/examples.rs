//! Labelled examples: one JSON object a line,
//! `{"id"?, "state", "labels": {key: gold}, "meta"?}`.
//!
//! Blank lines and lines starting with `#` are skipped, so a set can say in its
//! header who wrote it and how. Reading is strict: an unknown field, a label for
//! a question that is not asked, or a gold value that does not fit its question
//! is an error naming the file, line, column and key.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::fs::File;
use std::hash::{Hash as _, Hasher as _};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::error::{AssessError, AssessErrorKind};
use super::sorted::Spill;
use crate::classifier::{Question, Questions};

/// A gold (true) answer to one question.
///
/// ```
/// use toolnexus::assess::Gold;
/// assert_eq!(Gold::Score(2).to_string(), "2");
/// assert_eq!(Gold::Choice("billing".into()).to_value(), serde_json::json!("billing"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gold {
    /// Whether the noul statement holds.
    Noul(bool),
    /// The right option id.
    Choice(String),
    /// The right level, counted from 0.
    Score(usize),
}

impl Gold {
    /// The JSON form, as in an examples file: `true`, `"id"` or a level number.
    ///
    /// ```
    /// use toolnexus::assess::Gold;
    /// assert_eq!(Gold::Noul(true).to_value(), serde_json::json!(true));
    /// ```
    pub fn to_value(&self) -> Value {
        match self {
            Gold::Noul(b) => Value::Bool(*b),
            Gold::Choice(s) => Value::from(s.as_str()),
            Gold::Score(l) => Value::from(*l),
        }
    }

    /// Reads a gold value for `question` (key `key`), or says why it does not fit.
    /// A score's gold is a level number, or the exact text of one level.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::assess::Gold;
    /// use toolnexus::judge::{questions, score};
    ///
    /// let qs = questions(&[score("risk", "How risky?", ["low", "high"])])?;
    /// assert_eq!(Gold::parse("risk", &qs["risk"], &json!("high"))?, Gold::Score(1));
    /// assert_eq!(
    ///     Gold::parse("risk", &qs["risk"], &json!(2)).unwrap_err(),
    ///     "score question \"risk\" takes a level from 0 to 1 or a level's text, got 2"
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn parse(key: &str, question: &Question, v: &Value) -> Result<Gold, String> {
        match question {
            Question::Noul(_) => v
                .as_bool()
                .map(Gold::Noul)
                .ok_or_else(|| format!("noul question {key:?} takes true or false, got {v}")),
            Question::Choice(c) => {
                let Some(id) = v.as_str() else {
                    return Err(format!(
                        "choice question {key:?} takes an option id (a string), got {v}"
                    ));
                };
                if c.criteria.contains_key(id) {
                    Ok(Gold::Choice(id.to_string()))
                } else {
                    let ids: Vec<&str> = c.criteria.keys().map(String::as_str).collect();
                    Err(format!(
                        "{id:?} is not an option of choice question {key:?} (options: {})",
                        ids.join(", ")
                    ))
                }
            }
            Question::Score(s) => {
                let n = s.criteria.len();
                let level = match v {
                    Value::Number(x) => x.as_u64().map(|l| l as usize).filter(|l| *l < n),
                    Value::String(t) => s.criteria.iter().position(|c| c.as_str() == Some(t)),
                    _ => None,
                };
                level.map(Gold::Score).ok_or_else(|| {
                    format!(
                        "score question {key:?} takes a level from 0 to {} or a level's text, got {v}",
                        n.saturating_sub(1)
                    )
                })
            }
            Question::Box(_) => Err(format!(
                "box question {key:?} cannot be assessed: there is no gold box format"
            )),
        }
    }
}

impl fmt::Display for Gold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Gold::Noul(b) => write!(f, "{b}"),
            Gold::Choice(s) => f.write_str(s),
            Gold::Score(l) => write!(f, "{l}"),
        }
    }
}

/// One labelled example.
///
/// ```
/// use toolnexus::assess::{parse_examples, Gold};
/// use toolnexus::judge::{noul, questions};
///
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// let ex = parse_examples(
///     "# written by the team\n{\"id\": \"a\", \"state\": \"WIN NOW\", \"labels\": {\"spam\": true}, \"meta\": {\"lang\": \"en\"}}\n",
///     "set.jsonl",
///     &qs,
/// )?;
/// assert_eq!(ex[0].id, "a");
/// assert_eq!(ex[0].labels["spam"], Gold::Noul(true));
/// assert_eq!(ex[0].meta["lang"], "en");
/// assert_eq!(ex[0].line, 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Example {
    /// The example's id; `L<line>` when the line gives none.
    pub id: String,
    /// The state the questions are asked about.
    pub state: Value,
    /// Gold answers by question key (a subset of the questions).
    pub labels: BTreeMap<String, Gold>,
    /// Free-form fields to slice results by.
    pub meta: Map<String, Value>,
    /// The 1-based line it was read from.
    pub line: usize,
}

impl Example {
    /// An example built in code (for synthetic sets and tests).
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use toolnexus::assess::{Example, Gold};
    /// let e = Example::new("x", serde_json::json!("hi"), BTreeMap::from([("q".to_string(), Gold::Noul(false))]));
    /// assert_eq!(e.line, 0);
    /// ```
    pub fn new(id: impl Into<String>, state: Value, labels: BTreeMap<String, Gold>) -> Example {
        Example {
            id: id.into(),
            state,
            labels,
            meta: Map::new(),
            line: 0,
        }
    }

    /// The same example with `meta` set.
    ///
    /// ```
    /// use toolnexus::assess::Example;
    /// let meta = serde_json::json!({"lang": "de"}).as_object().unwrap().clone();
    /// let e = Example::new("x", serde_json::json!(1), Default::default()).with_meta(meta);
    /// assert_eq!(e.meta["lang"], "de");
    /// ```
    pub fn with_meta(mut self, meta: Map<String, Value>) -> Example {
        self.meta = meta;
        self
    }
}

/// Reads a labelled examples file (the format: [`parse_examples`]) whole; a
/// large file is better read a line at a time with [`ExampleReader`].
///
/// ```no_run
/// # let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("q", "?")])?;
/// let examples = toolnexus::assess::read_examples("labels.jsonl", &qs)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_examples(
    path: impl AsRef<Path>,
    questions: &Questions,
) -> Result<Vec<Example>, AssessError> {
    ExampleReader::open(path, questions)?.collect()
}

/// Parses labelled examples from text; `source` names it in errors.
///
/// ```
/// use toolnexus::assess::parse_examples;
/// use toolnexus::judge::{choice, questions};
///
/// let qs = questions(&[choice("desk", "Which desk?", [("billing", "money"), ("tech", "bugs")])])?;
/// let e = parse_examples("{\"state\": 1, \"labels\": {\"desk\": \"sales\"}}", "set.jsonl", &qs).unwrap_err();
/// assert_eq!(
///     e.to_string(),
///     "set.jsonl:1:25: label \"desk\": \"sales\" is not an option of choice question \"desk\" (options: billing, tech)"
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn parse_examples(
    text: &str,
    source: impl AsRef<Path>,
    questions: &Questions,
) -> Result<Vec<Example>, AssessError> {
    ExampleReader::new(text.as_bytes(), source, questions).collect()
}

/// Labelled examples read a line at a time: an iterator of
/// `Result<Example, AssessError>` over any [`BufRead`], holding one line and
/// (unless [`ExampleReader::unchecked_ids`]) the ids seen so far. Errors are
/// the ones [`parse_examples`] gives, naming the source, line, column and key;
/// the first error ends the iteration.
///
/// ```
/// use toolnexus::assess::ExampleReader;
/// use toolnexus::judge::{noul, questions};
///
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// let text = "{\"state\": \"a\", \"labels\": {\"spam\": true}}\n{\"state\": \"b\", \"labels\": {\"spam\": 1}}\n";
/// let mut reader = ExampleReader::new(text.as_bytes(), "set.jsonl", &qs);
/// assert_eq!(reader.next().unwrap()?.id, "L1");
/// let e = reader.next().unwrap().unwrap_err();
/// assert_eq!(e.to_string(), "set.jsonl:2:27: label \"spam\": noul question \"spam\" takes true or false, got 1");
/// assert!(reader.next().is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ExampleReader<'q, R> {
    input: R,
    source: PathBuf,
    questions: &'q Questions,
    line_no: usize,
    buf: String,
    /// Each id read so far and its line, for the duplicate check.
    seen: Option<HashMap<String, usize>>,
    ended: bool,
}

impl<'q> ExampleReader<'q, BufReader<File>> {
    /// Opens an examples file.
    ///
    /// ```no_run
    /// # let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("q", "?")])?;
    /// for example in toolnexus::assess::ExampleReader::open("labels.jsonl", &qs)? {
    ///     println!("{}", example?.id);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(
        path: impl AsRef<Path>,
        questions: &'q Questions,
    ) -> Result<ExampleReader<'q, BufReader<File>>, AssessError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| AssessError::io(path, "cannot read", e))?;
        Ok(ExampleReader::new(
            BufReader::with_capacity(1 << 16, file),
            path,
            questions,
        ))
    }
}

impl<'q, R: BufRead> ExampleReader<'q, R> {
    /// Reads examples from `input`; `source` names it in errors.
    ///
    /// ```
    /// # let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("q", "?")])?;
    /// let n = toolnexus::assess::ExampleReader::new(&b"# none yet\n"[..], "set.jsonl", &qs).count();
    /// assert_eq!(n, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(input: R, source: impl AsRef<Path>, questions: &'q Questions) -> Self {
        ExampleReader {
            input,
            source: source.as_ref().to_path_buf(),
            questions,
            line_no: 0,
            buf: String::new(),
            seen: Some(HashMap::new()),
            ended: false,
        }
    }

    /// The same reader without the duplicate-id check, so that it holds one
    /// line whatever the file's size: for a file [`check_examples`] passed.
    ///
    /// ```
    /// # let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("q", "?")])?;
    /// let line = "{\"id\": \"a\", \"state\": 1, \"labels\": {\"q\": true}}\n";
    /// let twice = line.repeat(2);
    /// let r = toolnexus::assess::ExampleReader::new(twice.as_bytes(), "set.jsonl", &qs).unchecked_ids();
    /// assert_eq!(r.count(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn unchecked_ids(mut self) -> Self {
        self.seen = None;
        self
    }

    fn fail(&mut self, e: AssessError) -> Option<Result<Example, AssessError>> {
        self.ended = true;
        Some(Err(e))
    }
}

impl<R: BufRead> Iterator for ExampleReader<'_, R> {
    type Item = Result<Example, AssessError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.ended {
            self.buf.clear();
            match self.input.read_line(&mut self.buf) {
                Ok(0) => self.ended = true,
                Ok(_) => {}
                Err(e) => {
                    let e = AssessError::io(&self.source, "cannot read", e);
                    return self.fail(e);
                }
            }
            if self.ended {
                break;
            }
            self.line_no += 1;
            let line_no = self.line_no;
            // As `str::lines` splits: one `\n`, then any `\r` before it.
            let line = self.buf.strip_suffix('\n').unwrap_or(&self.buf);
            let line = line.trim_end_matches('\r');
            let trimmed = line.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let ex = match parse_line(line, line_no, self.questions) {
                Ok(ex) => ex,
                Err(e) => {
                    let e = e.at_path(&self.source);
                    return self.fail(e);
                }
            };
            if let Some(seen) = &mut self.seen
                && let Some(first) = seen.insert(ex.id.clone(), line_no)
            {
                let e = AssessError::new(
                    AssessErrorKind::Invalid,
                    format!("duplicate id {:?} (first on line {first})", ex.id),
                )
                .at_path(&self.source)
                .at(line_no, None);
                return self.fail(e);
            }
            return Some(Ok(ex));
        }
        None
    }
}

/// A 64-bit digest of an example id: what the bounded readers keep of an id.
pub(crate) fn id_hash(id: &str) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    id.hash(&mut h);
    h.finish()
}

/// Checks a whole examples file as [`read_examples`] would, holding 8 bytes
/// per example (a digest of its id) instead of the examples; returns how many
/// there are. The first error is the one [`read_examples`] gives: when two
/// digests agree, the file is read again with the exact check, so a digest
/// collision is never taken for a duplicate.
///
/// ```
/// use toolnexus::assess::check_examples;
/// # let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("q", "?")])?;
/// let path = std::env::temp_dir().join(format!("tn-check-doc-{}.jsonl", std::process::id()));
/// std::fs::write(&path, "{\"id\": \"a\", \"state\": 1, \"labels\": {\"q\": true}}\n{\"id\": \"a\", \"state\": 2, \"labels\": {\"q\": true}}\n")?;
/// let e = check_examples(&path, &qs).unwrap_err();
/// assert!(e.to_string().ends_with(":2: duplicate id \"a\" (first on line 1)"), "{e}");
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn check_examples(path: impl AsRef<Path>, questions: &Questions) -> Result<usize, AssessError> {
    check_each(path.as_ref(), questions, |_| {})
}

/// [`check_examples`], showing `each` every example as it is read.
pub(crate) fn check_each(
    path: &Path,
    questions: &Questions,
    mut each: impl FnMut(&Example),
) -> Result<usize, AssessError> {
    // The digests go through a bounded sort: equal ones come out side by side.
    let mut digests = Spill::new(true);
    let sort_error =
        |e| AssessError::io(&std::env::temp_dir(), "cannot sort the example ids in", e);
    let mut first_error = None;
    for ex in ExampleReader::open(path, questions)?.unchecked_ids() {
        match ex {
            Ok(ex) => {
                each(&ex);
                digests.push(id_hash(&ex.id), 0).map_err(sort_error)?;
            }
            Err(e) => {
                first_error = Some(e);
                break;
            }
        }
    }
    let n = digests.len();
    let mut sorted = digests.sorted().map_err(sort_error)?;
    let mut previous = None;
    let repeated = sorted.by_ref().any(|(d, _)| previous.replace(d) == Some(d));
    sorted.error().map_err(sort_error)?;
    drop(sorted);
    if repeated {
        // A duplicate before the first error (or a collision): the exact
        // check, which reports whichever comes first in the file.
        let mut exact = ExampleReader::open(path, questions)?;
        let mut read = 0;
        for ex in exact.by_ref() {
            ex?;
            read += 1;
            if read == n {
                break;
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(n),
    }
}

/// The 1-based column of `needle` in `line` at or after byte `from`.
pub(crate) fn column_of(line: &str, needle: &str, from: usize) -> Option<usize> {
    let at = line.get(from..)?.find(needle)? + from;
    Some(line[..at].chars().count() + 1)
}

fn key_column(line: &str, key: &str, after: &str) -> Option<usize> {
    let start = line.find(after).map(|p| p + after.len()).unwrap_or(0);
    let quoted = serde_json::to_string(key).ok()?;
    column_of(line, &quoted, start)
}

fn parse_line(line: &str, line_no: usize, questions: &Questions) -> Result<Example, AssessError> {
    let invalid = |msg: String, col: Option<usize>| {
        AssessError::new(AssessErrorKind::Invalid, msg).at(line_no, col)
    };
    let v: Value = serde_json::from_str(line).map_err(|e| {
        AssessError::new(
            AssessErrorKind::Syntax,
            format!("not JSON: {}", json_error_text(&e)),
        )
        .at(line_no, Some(e.column()))
        .with_source(e)
    })?;
    let Value::Object(mut obj) = v else {
        return Err(invalid(
            format!("an example is a JSON object, got {}", kind_of(&v)),
            Some(1),
        ));
    };
    for k in obj.keys() {
        if !matches!(k.as_str(), "id" | "state" | "labels" | "meta") {
            return Err(invalid(
                format!("unknown field {k:?} (an example has id, state, labels, meta)"),
                key_column(line, k, ""),
            ));
        }
    }
    let id = match obj.remove("id") {
        None | Some(Value::Null) => format!("L{line_no}"),
        Some(Value::String(s)) if !s.is_empty() => s,
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => n.to_string(),
        Some(other) => {
            return Err(invalid(
                format!("\"id\" is a non-empty string or an integer, got {other}"),
                key_column(line, "id", ""),
            ));
        }
    };
    let state = obj
        .remove("state")
        .ok_or_else(|| invalid("no \"state\"".into(), None))?;
    let meta = match obj.remove("meta") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(other) => {
            return Err(invalid(
                format!("\"meta\" is an object, got {}", kind_of(&other)),
                key_column(line, "meta", ""),
            ));
        }
    };
    let labels_v = obj
        .remove("labels")
        .ok_or_else(|| invalid("no \"labels\"".into(), None))?;
    let Value::Object(labels_v) = labels_v else {
        return Err(invalid(
            format!(
                "\"labels\" is an object of question key to gold value, got {}",
                kind_of(&labels_v)
            ),
            key_column(line, "labels", ""),
        ));
    };
    if labels_v.is_empty() {
        return Err(invalid(
            "\"labels\" is empty: an example needs at least one gold value".into(),
            key_column(line, "labels", ""),
        ));
    }
    let mut labels = BTreeMap::new();
    for (key, gold) in &labels_v {
        let col = key_column(line, key, "\"labels\"");
        let Some(q) = questions.get(key) else {
            let names: Vec<&str> = questions.keys().map(String::as_str).collect();
            return Err(invalid(
                format!(
                    "no question {key:?} is asked (questions: {})",
                    names.join(", ")
                ),
                col,
            )
            .for_key(key));
        };
        let g = Gold::parse(key, q, gold).map_err(|m| invalid(m, col).for_key(key))?;
        labels.insert(key.clone(), g);
    }
    Ok(Example {
        id,
        state,
        labels,
        meta,
        line: line_no,
    })
}

/// serde_json's message without its own ` at line L column C` (the location is
/// given once, in front).
pub(crate) fn json_error_text(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let tail = format!(" at line {} column {}", e.line(), e.column());
    text.strip_suffix(&tail).unwrap_or(&text).to_string()
}

pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::{choice, noul, questions, score};

    fn qs() -> Questions {
        questions(&[
            noul("spam", "Is it spam?"),
            choice(
                "desk",
                "Which desk?",
                [("billing", "money"), ("tech", "bugs")],
            ),
            score("risk", "How risky?", ["low", "mid", "high"]),
        ])
        .unwrap()
    }

    #[test]
    fn reads_every_kind_and_skips_comments() {
        let text = "# Labelled by the toolnexus team.\n\n\
            {\"id\": 7, \"state\": {\"t\": 1}, \"labels\": {\"spam\": false, \"desk\": \"tech\", \"risk\": \"mid\"}}\n\
            {\"state\": \"x\", \"labels\": {\"risk\": 2}}\r\n";
        let ex = parse_examples(text, "s.jsonl", &qs()).unwrap();
        assert_eq!(ex.len(), 2);
        assert_eq!(ex[0].id, "7");
        assert_eq!(ex[0].labels["desk"], Gold::Choice("tech".into()));
        assert_eq!(ex[0].labels["risk"], Gold::Score(1));
        assert_eq!(ex[1].id, "L4");
        assert_eq!(ex[1].labels["risk"], Gold::Score(2));
    }

    #[test]
    fn errors_name_file_line_column_and_key() {
        let cases: &[(&str, &str)] = &[
            (
                "{\"state\": 1, \"labels\": {\"spam\": 1}}",
                "s.jsonl:1:25: label \"spam\": noul question \"spam\" takes true or false, got 1",
            ),
            (
                "{\"state\": 1, \"labels\": {\"nope\": 1}}",
                "s.jsonl:1:25: label \"nope\": no question \"nope\" is asked (questions: desk, risk, spam)",
            ),
            (
                "{\"state\": 1, \"label\": {}}",
                "s.jsonl:1:14: unknown field \"label\" (an example has id, state, labels, meta)",
            ),
            (
                "{\"state\": 1, \"labels\": {}}",
                "s.jsonl:1:14: \"labels\" is empty: an example needs at least one gold value",
            ),
            (
                "{\"state\": 1, \"labels\": {\"risk\": 3}}",
                "s.jsonl:1:25: label \"risk\": score question \"risk\" takes a level from 0 to 2 or a level's text, got 3",
            ),
            (
                "{\"state\": 1,",
                "s.jsonl:1:12: not JSON: EOF while parsing a value",
            ),
            (
                "[1]",
                "s.jsonl:1:1: an example is a JSON object, got an array",
            ),
            (
                "{\"id\": true, \"state\": 1, \"labels\": {\"spam\": true}}",
                "s.jsonl:1:2: \"id\" is a non-empty string or an integer, got true",
            ),
        ];
        for (line, want) in cases {
            let e = parse_examples(line, "s.jsonl", &qs()).unwrap_err();
            assert_eq!(e.to_string(), *want, "{line}");
        }
    }

    #[test]
    fn duplicate_ids_name_both_lines() {
        let text = "{\"id\": \"a\", \"state\": 1, \"labels\": {\"spam\": true}}\n{\"id\": \"a\", \"state\": 2, \"labels\": {\"spam\": true}}\n";
        let e = parse_examples(text, "s.jsonl", &qs()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "s.jsonl:2: duplicate id \"a\" (first on line 1)"
        );
    }

    #[test]
    fn a_missing_file_is_named() {
        let e = read_examples("/nonexistent/labels.jsonl", &qs()).unwrap_err();
        assert_eq!(e.kind(), AssessErrorKind::Io);
        assert!(
            e.to_string()
                .starts_with("/nonexistent/labels.jsonl: cannot read: "),
            "{e}"
        );
    }
}
