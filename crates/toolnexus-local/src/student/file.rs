//! The student file (`toolnexus.student`, version 1): the heads, the
//! embedding model and teacher they were trained on, the threshold, and how
//! a head answers from an embedding.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolnexus::classifier::{
    Decision, Question, Questions, choice_confidence, question_hash, score_confidence,
};

use crate::num::{dot, softmax};
use crate::state_text::StateText;

/// The `format` field of a student file.
pub const STUDENT_FORMAT: &str = "toolnexus.student";
/// The student file version this build writes and reads.
pub const STUDENT_VERSION: u64 = 1;
/// What went wrong training, loading or using a student.
///
/// ```
/// let e = toolnexus_local::student::Student::from_json("{}", "s.json").unwrap_err();
/// assert!(e.to_string().starts_with("s.json: not a student file"), "{e}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StudentError(String);

impl StudentError {
    pub(crate) fn new(message: impl Into<String>) -> StudentError {
        StudentError(message.into())
    }
}

impl fmt::Display for StudentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StudentError {}

/// Held-out figures of one head.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadReport {
    /// Rows trained on.
    pub train: usize,
    /// Rows held out.
    pub holdout: usize,
    /// Epochs run (the best one is kept).
    pub epochs: usize,
    /// Share of held-out rows whose top answer is the teacher's.
    pub agreement: f64,
    /// Held-out cross-entropy against the teacher's distributions.
    pub log_loss: f64,
    /// Expected calibration error of the student's top probability for
    /// agreeing with the teacher's top class (`EceRows::ece`, the ECE every
    /// `assess` command prints).
    pub ece: f64,
}

/// One question's head.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Head {
    /// `noul`, `choice` or `score`.
    pub kind: String,
    /// The canonical hash of the question it was trained on.
    pub hash: String,
    /// Class ids in output order: `false`/`true`, option ids, or levels.
    pub labels: Vec<String>,
    /// Score levels' texts, as the teacher gave them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub legend: BTreeMap<String, String>,
    /// One weight row per label.
    pub weights: Vec<Vec<f32>>,
    /// One bias per label.
    pub bias: Vec<f32>,
    /// Held-out figures.
    pub report: HeadReport,
}

impl Head {
    /// The head's distribution for one embedding.
    ///
    /// ```
    /// use toolnexus_local::student::{Head, HeadReport};
    /// let report = HeadReport { train: 0, holdout: 0, epochs: 0, agreement: 0.0, log_loss: 0.0, ece: 0.0 };
    /// let h = Head { kind: "noul".into(), hash: String::new(), labels: vec!["false".into(), "true".into()],
    ///     legend: Default::default(), weights: vec![vec![0.0], vec![2.0]], bias: vec![0.0, 0.0], report };
    /// let p = h.probabilities(&[1.0]);
    /// assert!((p[1] - 2f64.exp() / (1.0 + 2f64.exp())).abs() < 1e-6);
    /// ```
    pub fn probabilities(&self, x: &[f32]) -> Vec<f64> {
        let logits: Vec<f64> = self
            .weights
            .iter()
            .zip(&self.bias)
            .map(|(w, b)| f64::from(*b) + dot(w, x))
            .collect();
        softmax(&logits)
    }

    /// The wire answer for a distribution.
    fn answer(&self, p: &[f64]) -> Value {
        let top = argmax(p);
        let probabilities: serde_json::Map<String, Value> = self
            .labels
            .iter()
            .zip(p)
            .map(|(l, &v)| (l.clone(), Value::from(v)))
            .collect();
        match self.kind.as_str() {
            "noul" => json!({"type": "noul", "noul": p[1]}),
            "choice" => json!({
                "type": "choice",
                "choice": self.labels[top],
                "confidence": choice_confidence(p),
                "probabilities": probabilities,
            }),
            _ => json!({
                "type": "score",
                "score": p.iter().enumerate().map(|(i, v)| i as f64 * v).sum::<f64>(),
                "confidence": score_confidence(p),
                "legend": self.legend,
                "probabilities": probabilities,
            }),
        }
    }
}

/// How sure a head is, for the cascade's gate: its top probability. The
/// threshold in a student file is a cut on this; the `confidence` an answer
/// reports follows SPEC §16's formulas instead (`choice_confidence`,
/// `score_confidence`), as every style's does.
pub(super) fn top_probability(p: &[f64]) -> f64 {
    p.iter().copied().fold(0.0, f64::max)
}

pub(super) fn argmax(p: &[f64]) -> usize {
    let mut best = 0;
    for (i, v) in p.iter().enumerate() {
        if *v > p[best] {
            best = i;
        }
    }
    best
}

/// A trained student: its heads and what they were trained on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Student {
    /// SHA-256 of the embedding model's weights.
    pub embedding_model: String,
    /// The teacher's model id.
    pub teacher_model: String,
    /// Answer locally when every asked key's confidence is at least this.
    pub threshold: f64,
    /// The agreement the threshold was chosen to keep.
    pub target_agreement: f64,
    /// Share of held-out rows the threshold answers locally.
    pub served_locally: f64,
    /// Agreement with the teacher on every key over those rows.
    pub local_agreement: Option<f64>,
    /// Heads by question key.
    pub questions: BTreeMap<String, Head>,
    /// How a state is written for the embedding model: as the rows the heads
    /// trained on were ([`TrainOptions::state_text`](crate::student::TrainOptions::state_text)). Left out of the file
    /// when it is the default, JSON.
    #[serde(default, skip_serializing_if = "StateText::is_json")]
    pub state_text: StateText,
}

impl Student {
    /// The student's decision on one embedded state and its row confidence
    /// (the least confident asked key). Every asked key needs a head trained
    /// on the same question (canonical hash), else an error naming the key.
    ///
    /// ```
    /// # use std::collections::BTreeMap;
    /// use toolnexus::classifier::Questions;
    /// # let s = toolnexus_local::student::Student { embedding_model: "m".into(), teacher_model: "t".into(),
    /// #     threshold: 0.9, target_agreement: 0.98, served_locally: 0.0, local_agreement: None, questions: BTreeMap::new(), state_text: Default::default() };
    /// let qs = Questions::from([("spam".to_string(), toolnexus::classifier::NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into())]);
    /// let e = s.answer(&[0.0], &qs).unwrap_err();
    /// assert!(e.to_string().contains("\"spam\""), "{e}");
    /// ```
    pub fn answer(
        &self,
        embedding: &[f32],
        questions: &Questions,
    ) -> Result<(Decision, f64), StudentError> {
        let mut answers = serde_json::Map::new();
        let mut least = f64::INFINITY;
        for (key, q) in questions {
            let head = self.head_for(key, q)?;
            if head
                .weights
                .first()
                .is_some_and(|w| w.len() != embedding.len())
            {
                return Err(StudentError::new(format!(
                    "student: question {key:?}: the head takes {} dimensions, the embedding has {}",
                    head.weights[0].len(),
                    embedding.len()
                )));
            }
            let p = head.probabilities(embedding);
            least = least.min(top_probability(&p));
            answers.insert(key.clone(), head.answer(&p));
        }
        let d = Decision::from_value(&json!({
            "model": format!("toolnexus-student (teacher {})", self.teacher_model),
            "answers": answers,
            "calibrated": false,
        }))
        .map_err(|e| StudentError::new(format!("student: {}", e.detail())))?;
        Ok((d, if least.is_finite() { least } else { 0.0 }))
    }

    /// The head for `key` trained on question `q`, or why there is none.
    ///
    /// ```
    /// # use std::collections::BTreeMap;
    /// # let s = toolnexus_local::student::Student { embedding_model: "m".into(), teacher_model: "t".into(),
    /// #     threshold: 0.9, target_agreement: 0.98, served_locally: 0.0, local_agreement: None, questions: BTreeMap::new(), state_text: Default::default() };
    /// let q = toolnexus::classifier::NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into();
    /// assert!(s.head_for("spam", &q).is_err());
    /// ```
    pub fn head_for(&self, key: &str, q: &Question) -> Result<&Head, StudentError> {
        let head = self.questions.get(key).ok_or_else(|| {
            StudentError::new(format!(
                "student: no head for question {key:?} (trained on {})",
                names(&self.questions)
            ))
        })?;
        if head.hash != question_hash(q) {
            return Err(StudentError::new(format!(
                "student: question {key:?} has changed since the student was trained (hash {} there, {} asked)",
                head.hash,
                question_hash(q)
            )));
        }
        Ok(head)
    }

    /// The file form: pretty JSON with `format` and `version`, final newline.
    ///
    /// ```
    /// # use std::collections::BTreeMap;
    /// # let s = toolnexus_local::student::Student { embedding_model: "m".into(), teacher_model: "t".into(),
    /// #     threshold: 0.9, target_agreement: 0.98, served_locally: 0.0, local_agreement: None, questions: BTreeMap::new(), state_text: Default::default() };
    /// let text = s.to_json();
    /// assert!(text.contains("\"format\": \"toolnexus.student\""));
    /// assert_eq!(toolnexus_local::student::Student::from_json(&text, "s.json").unwrap(), s);
    /// ```
    pub fn to_json(&self) -> String {
        let mut v = serde_json::to_value(self).expect("a student serialises");
        if let Some(o) = v.as_object_mut() {
            o.insert("format".into(), Value::from(STUDENT_FORMAT));
            o.insert("version".into(), Value::from(STUDENT_VERSION));
            // JSON has no infinity: "never local" is written as null.
            if !self.threshold.is_finite() {
                o.insert("threshold".into(), Value::Null);
            }
        }
        let mut s = serde_json::to_string_pretty(&v).expect("a student serialises");
        s.push('\n');
        s
    }

    /// Parses a student file's text; `source` names it in errors.
    pub fn from_json(text: &str, source: impl AsRef<Path>) -> Result<Student, StudentError> {
        let src = source.as_ref().display().to_string();
        let mut v: Value = serde_json::from_str(text).map_err(|e| {
            StudentError::new(format!("{src}:{}:{}: not JSON: {e}", e.line(), e.column()))
        })?;
        let format = v.get("format").and_then(Value::as_str);
        if format != Some(STUDENT_FORMAT) {
            return Err(StudentError::new(format!(
                "{src}: not a student file (\"format\" is {}, not {STUDENT_FORMAT:?})",
                v.get("format")
                    .map_or("absent".to_string(), Value::to_string)
            )));
        }
        match v.get("version").and_then(Value::as_u64) {
            Some(STUDENT_VERSION) => {}
            other => {
                return Err(StudentError::new(format!(
                    "{src}: student file version {} is not supported (this build reads version {STUDENT_VERSION})",
                    other.map_or("absent".to_string(), |n| n.to_string())
                )));
            }
        }
        if let Some(o) = v.as_object_mut() {
            o.remove("format");
            o.remove("version");
            if o.get("threshold").is_some_and(Value::is_null) {
                o.insert("threshold".into(), Value::from(f64::MAX));
            }
        }
        let mut s: Student =
            serde_json::from_value(v).map_err(|e| StudentError::new(format!("{src}: {e}")))?;
        if s.threshold == f64::MAX {
            s.threshold = f64::INFINITY;
        }
        for (key, h) in &s.questions {
            let k = h.labels.len();
            let d = h.weights.first().map_or(0, Vec::len);
            if k < 2
                || h.weights.len() != k
                || h.bias.len() != k
                || h.weights.iter().any(|w| w.len() != d)
            {
                return Err(StudentError::new(format!(
                    "{src}: question {key:?}: {k} labels, {} weight rows, {} biases: the shapes do not fit",
                    h.weights.len(),
                    h.bias.len()
                )));
            }
        }
        Ok(s)
    }

    /// Reads a student file.
    ///
    /// ```
    /// let e = toolnexus_local::student::Student::load("/nonexistent/s.json").unwrap_err();
    /// assert!(e.to_string().starts_with("/nonexistent/s.json: cannot read"), "{e}");
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Student, StudentError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| StudentError::new(format!("{}: cannot read: {e}", path.display())))?;
        Student::from_json(&text, path)
    }

    /// Writes the student file atomically.
    ///
    /// ```no_run
    /// # fn f(s: toolnexus_local::student::Student) -> Result<(), toolnexus_local::student::StudentError> {
    /// s.save("student.json")?;
    /// # Ok(()) }
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), StudentError> {
        toolnexus::judge::write_atomic(path, self.to_json().as_bytes())
            .map_err(|e| StudentError::new(e.to_string()))
    }
}

pub(super) fn names(heads: &BTreeMap<String, Head>) -> String {
    if heads.is_empty() {
        return "none".to_string();
    }
    heads
        .keys()
        .map(|k| format!("{k:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}
