//! [`Teacher`]: the decisions a student is distilled from, read from a tape (a
//! live model's recorded answers) or from labelled examples (each gold label a
//! teacher's certain answer), every one checked against the questions.

use serde_json::{Map, Value, json};
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use toolnexus::assess::{AssessError, Example, ExampleReader, Gold};
use toolnexus::classifier::{Decision, Question, Questions};
use toolnexus::judge::{Tape, TapeOutcome};

use super::train::check_teacher;

/// Why a teacher's decisions cannot be distilled from.
///
/// ```
/// use toolnexus::judge::Tape;
/// use toolnexus_local::student::{Teacher, TeacherError};
/// let e = Teacher::from_tape(&Tape::new(), None, Some("triage")).unwrap_err();
/// assert!(matches!(e, TeacherError::Empty { .. }));
/// assert_eq!(e.to_string(), "no recorded decisions under call \"triage\"");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum TeacherError {
    /// The tape's recordings ask different question sets and none was named.
    MixedQuestions,
    /// A recorded decision does not fit the questions.
    RecordingMisfit {
        /// The call name.
        call: String,
        /// The entry's index within the call, in recording order.
        index: usize,
        /// What does not fit.
        why: String,
    },
    /// The tape holds no decision (under the call, when one was named).
    Empty {
        /// The call named.
        call: Option<String>,
    },
    /// A label of an example, as a certain answer, does not decode.
    Label {
        /// The example's 1-based line.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// The examples file cannot be read, or a line of it is not an example.
    Examples(AssessError),
    /// A label does not fit its question.
    LabelMisfit {
        /// The example's 1-based line.
        line: usize,
        /// What does not fit.
        why: String,
    },
}

impl std::fmt::Display for TeacherError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TeacherError::MixedQuestions => f.write_str(
                "the recordings ask different question sets; name the questions (and the call)",
            ),
            TeacherError::RecordingMisfit { call, index, why } => write!(
                f,
                "call {call:?} entry {index}: the teacher's decision does not fit: {why}"
            ),
            TeacherError::Empty { call: None } => f.write_str("no recorded decisions"),
            TeacherError::Empty { call: Some(c) } => {
                write!(f, "no recorded decisions under call {c:?}")
            }
            TeacherError::Label { line, why } => write!(f, "{line}: {why}"),
            TeacherError::Examples(e) => write!(f, "{e}"),
            TeacherError::LabelMisfit { line, why } => {
                write!(f, "{line}: the label does not fit: {why}")
            }
        }
    }
}

impl std::error::Error for TeacherError {}

/// A teacher's decisions: the questions they answer and each state with the
/// decision the student learns to give.
#[derive(Debug, Clone)]
pub struct Teacher {
    /// The questions every decision answers.
    pub questions: Questions,
    /// Each state with its teacher's decision.
    pub items: Vec<(Value, Decision)>,
}

impl Teacher {
    /// Every recorded decision of `tape` (of `call` only, when given), with
    /// `questions`, or the recordings' own when they all ask the same set.
    /// Entries are named as `tape replay` names them: call and index.
    ///
    /// ```
    /// use toolnexus::judge::Tape;
    /// use toolnexus_local::student::Teacher;
    /// assert!(Teacher::from_tape(&Tape::new(), None, None).is_err(), "nothing to learn from");
    /// ```
    pub fn from_tape(
        tape: &Tape,
        questions: Option<Questions>,
        call: Option<&str>,
    ) -> Result<Teacher, TeacherError> {
        let named = questions.is_some();
        let mut asked = questions;
        let mut items = Vec::new();
        for name in tape.call_names() {
            if call.is_some_and(|c| c != name) {
                continue;
            }
            for (index, e) in tape.call_entries(&name).into_iter().enumerate() {
                let TapeOutcome::Decision(d) = e.outcome else {
                    continue;
                };
                let want = asked.get_or_insert_with(|| e.questions.clone());
                if !named && *want != e.questions {
                    return Err(TeacherError::MixedQuestions);
                }
                check_teacher(&d, want, Some(&e.questions)).map_err(|err| {
                    TeacherError::RecordingMisfit {
                        call: name.clone(),
                        index,
                        why: err.to_string(),
                    }
                })?;
                items.push((e.state, d));
            }
        }
        let questions = asked.ok_or_else(|| TeacherError::Empty {
            call: call.map(str::to_string),
        })?;
        Ok(Teacher { questions, items })
    }

    /// Labelled examples, each gold label the answer of a teacher sure of it.
    ///
    /// ```
    /// use toolnexus::assess::parse_examples;
    /// use toolnexus::judge::{noul, questions};
    /// use toolnexus_local::student::Teacher;
    /// let qs = questions(&[noul("spam", "Is it spam?")])?;
    /// let examples = parse_examples("{\"state\": \"win money\", \"labels\": {\"spam\": true}}\n", "set.jsonl", &qs)?;
    /// let teacher = Teacher::from_examples(examples, qs)?;
    /// assert_eq!(teacher.items[0].1.noul("spam")?.noul, 1.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_examples(
        examples: Vec<Example>,
        questions: Questions,
    ) -> Result<Teacher, TeacherError> {
        let mut items = Vec::new();
        for ex in examples {
            let mut answers = Map::new();
            for (key, gold) in &ex.labels {
                let Some(q) = questions.get(key) else {
                    continue;
                };
                answers.insert(key.clone(), certain(q, gold));
            }
            let d = Decision::from_value(&json!({"model": "labels", "answers": answers})).map_err(
                |e| TeacherError::Label {
                    line: ex.line,
                    why: e.detail().to_string(),
                },
            )?;
            check_teacher(&d, &questions, None).map_err(|e| TeacherError::LabelMisfit {
                line: ex.line,
                why: e.to_string(),
            })?;
            items.push((ex.state, d));
        }
        Ok(Teacher { questions, items })
    }
}

/// A labelled examples file read a chunk at a time, each chunk the
/// [`Teacher`] of [`Teacher::from_examples`]: memory holds one chunk.
///
/// ```no_run
/// # let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("q", "?")])?;
/// use toolnexus_local::student::Teacher;
/// toolnexus::assess::check_examples("labels.jsonl", &qs)?;
/// for chunk in Teacher::example_chunks("labels.jsonl", &qs, 64)? {
///     println!("{} decisions", chunk?.items.len());
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ExampleChunks<'q> {
    reader: ExampleReader<'q, BufReader<File>>,
    questions: &'q Questions,
    size: usize,
}

impl Teacher {
    /// The examples of a file [`check_examples`](toolnexus::assess::check_examples)
    /// passed, `size` at a time (at least one); the ids are not checked again.
    ///
    /// ```
    /// use toolnexus_local::student::{Teacher, TeacherError};
    /// # let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("q", "?")])?;
    /// let e = Teacher::example_chunks("no-such-file.jsonl", &qs, 64).err().unwrap();
    /// assert!(matches!(e, TeacherError::Examples(_)), "{e}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn example_chunks<'q>(
        path: impl AsRef<Path>,
        questions: &'q Questions,
        size: usize,
    ) -> Result<ExampleChunks<'q>, TeacherError> {
        let reader = ExampleReader::open(path, questions).map_err(TeacherError::Examples)?;
        Ok(ExampleChunks {
            reader: reader.unchecked_ids(),
            questions,
            size: size.max(1),
        })
    }
}

impl Iterator for ExampleChunks<'_> {
    type Item = Result<Teacher, TeacherError>;

    fn next(&mut self) -> Option<Self::Item> {
        let chunk = self
            .reader
            .by_ref()
            .take(self.size)
            .collect::<Result<Vec<_>, _>>();
        match chunk {
            Err(e) => Some(Err(TeacherError::Examples(e))),
            Ok(chunk) if chunk.is_empty() => None,
            Ok(chunk) => Some(Teacher::from_examples(chunk, self.questions.clone())),
        }
    }
}

/// A gold label as the answer of a teacher that is sure of it.
fn certain(q: &Question, gold: &Gold) -> Value {
    match (q, gold) {
        (_, Gold::Noul(y)) => json!({"type": "noul", "noul": if *y { 1.0 } else { 0.0 }}),
        (Question::Choice(c), Gold::Choice(id)) => {
            let probs: Map<String, Value> = c
                .criteria
                .keys()
                .map(|k| (k.clone(), Value::from(if k == id { 1.0 } else { 0.0 })))
                .collect();
            json!({"type": "choice", "choice": id, "confidence": 1.0, "probabilities": probs})
        }
        (Question::Score(s), Gold::Score(level)) => {
            let n = s.criteria.len();
            let probs: Map<String, Value> = (0..n)
                .map(|i| {
                    (
                        i.to_string(),
                        Value::from(if i == *level { 1.0 } else { 0.0 }),
                    )
                })
                .collect();
            let legend: Map<String, Value> = (0..n)
                .map(|i| (i.to_string(), Value::from(format!("level {i}"))))
                .collect();
            json!({"type": "score", "score": *level as f64, "confidence": 1.0, "legend": legend, "probabilities": probs})
        }
        _ => Value::Null,
    }
}
