//! The three question kinds, their wire form, the client-side limits, and the
//! degenerate-criteria check. Pure: no I/O.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::error::{ClassifierError, msg};

/// The most options a choice question may offer.
pub const MAX_CHOICE_OPTIONS: usize = 255;
/// The fewest levels a score question may have.
pub const MIN_SCORE_LEVELS: usize = 2;
/// The most levels a score question may have.
pub const MAX_SCORE_LEVELS: usize = 10;

/// A yes/no question answered with P(statement holds).
///
/// ```
/// use toolnexus::classifier::{NoulCriteria, NoulQuestion, Question};
///
/// let q: Question = NoulQuestion {
///     instructions: "Does this message ask for a refund?".into(),
///     criteria: Some(NoulCriteria {
///         when_true: "the customer wants money back".into(),
///         when_false: "anything else".into(),
///     }),
/// }
/// .into();
/// assert_eq!(q.kind(), "noul");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NoulQuestion {
    /// The statement, or what to judge about the state.
    pub instructions: String,
    /// What true and false mean. `None` is absent on the wire; `Some(default)` is
    /// sent as `{"false":"","true":""}` — absent is not empty.
    pub criteria: Option<NoulCriteria>,
}

/// What a noul question's two outcomes mean.
///
/// ```
/// use toolnexus::classifier::NoulCriteria;
///
/// let c = NoulCriteria { when_true: "spam".into(), when_false: "not spam".into() };
/// assert_eq!(c.when_true, "spam");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NoulCriteria {
    /// When the statement holds (wire key `"true"`).
    pub when_true: String,
    /// When it does not (wire key `"false"`).
    pub when_false: String,
}

/// Pick one of up to 255 described options; the answer carries a full distribution.
///
/// ```
/// use toolnexus::classifier::ChoiceQuestion;
///
/// let q = ChoiceQuestion {
///     instructions: "Which team owns this ticket?".into(),
///     criteria: [("billing".to_string(), "money moved".to_string())].into(),
/// };
/// assert_eq!(q.criteria.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChoiceQuestion {
    /// What to decide.
    pub instructions: String,
    /// Option id → what picking it would MEAN. The descriptions are the only thing
    /// that tells the options apart to the model (see [`degenerate_criteria`]).
    pub criteria: BTreeMap<String, String>,
}

/// Place the state on an ordered rubric of 2..=10 levels.
///
/// ```
/// use toolnexus::classifier::ScoreQuestion;
///
/// let q = ScoreQuestion {
///     instructions: "How destructive is this command?".into(),
///     criteria: vec!["harmless".into(), "reversible".into(), "destructive".into()],
/// };
/// assert_eq!(q.criteria[0], "harmless");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ScoreQuestion {
    /// What to rate.
    pub instructions: String,
    /// The levels, lowest first. Never sorted: level `i` is `criteria[i]`.
    pub criteria: Vec<String>,
}

/// One typed question.
///
/// ```
/// use toolnexus::classifier::{Question, ScoreQuestion};
///
/// let q = Question::from(ScoreQuestion {
///     instructions: "How urgent?".into(),
///     criteria: vec!["low".into(), "high".into()],
/// });
/// let wire = q.wire();
/// assert_eq!(Question::from_wire(&wire)?, q);
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Question {
    /// A probability that a statement holds.
    Noul(NoulQuestion),
    /// One of a set of described options.
    Choice(ChoiceQuestion),
    /// A level on an ordered rubric.
    Score(ScoreQuestion),
}

/// Questions under the caller's own keys. Keys address answers; they are never
/// sent as content to judge.
///
/// ```
/// use toolnexus::classifier::{Questions, choice_over};
///
/// let qs = Questions::from([(
///     "desk".to_string(),
///     choice_over("Which desk?", [("a", "first"), ("b", "second")]).into(),
/// )]);
/// assert!(qs.contains_key("desk"));
/// ```
pub type Questions = BTreeMap<String, Question>;

impl From<NoulQuestion> for Question {
    fn from(q: NoulQuestion) -> Self {
        Question::Noul(q)
    }
}

impl From<ChoiceQuestion> for Question {
    fn from(q: ChoiceQuestion) -> Self {
        Question::Choice(q)
    }
}

impl From<ScoreQuestion> for Question {
    fn from(q: ScoreQuestion) -> Self {
        Question::Score(q)
    }
}

/// Builds a choice question from any `(id, meaning)` pairs.
///
/// ```
/// use toolnexus::classifier::choice_over;
///
/// let q = choice_over("Which desk owns this?", [
///     ("billing", "money moved: a duplicate charge, a refund owed"),
///     ("shipping", "a physical parcel is late or damaged"),
/// ]);
/// assert_eq!(q.criteria["billing"], "money moved: a duplicate charge, a refund owed");
/// ```
pub fn choice_over<I, K, V>(instructions: impl Into<String>, pairs: I) -> ChoiceQuestion
where
    I: IntoIterator<Item = (K, V)>,
    K: Into<String>,
    V: Into<String>,
{
    ChoiceQuestion {
        instructions: instructions.into(),
        criteria: pairs
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect(),
    }
}

impl Question {
    /// The wire discriminator: `"noul"`, `"choice"` or `"score"`.
    ///
    /// ```
    /// use toolnexus::classifier::{NoulQuestion, Question};
    /// assert_eq!(Question::from(NoulQuestion::default()).kind(), "noul");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            Question::Noul(_) => "noul",
            Question::Choice(_) => "choice",
            Question::Score(_) => "score",
        }
    }

    /// The instructions, whatever the kind.
    ///
    /// ```
    /// use toolnexus::classifier::{NoulQuestion, Question};
    /// let q = Question::from(NoulQuestion { instructions: "Is it spam?".into(), criteria: None });
    /// assert_eq!(q.instructions(), "Is it spam?");
    /// ```
    pub fn instructions(&self) -> &str {
        match self {
            Question::Noul(q) => &q.instructions,
            Question::Choice(q) => &q.instructions,
            Question::Score(q) => &q.instructions,
        }
    }

    /// The wire form: `{"type", "instructions", "criteria"}`, with a noul's
    /// `criteria` absent when it is `None`.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::{NoulCriteria, NoulQuestion, Question};
    ///
    /// let absent = Question::from(NoulQuestion { instructions: "x".into(), criteria: None });
    /// assert_eq!(absent.wire(), json!({"type": "noul", "instructions": "x"}));
    /// let empty = Question::from(NoulQuestion {
    ///     instructions: "x".into(),
    ///     criteria: Some(NoulCriteria::default()),
    /// });
    /// assert_eq!(empty.wire()["criteria"], json!({"false": "", "true": ""}));
    /// ```
    pub fn wire(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), Value::from(self.kind()));
        m.insert("instructions".into(), Value::from(self.instructions()));
        match self {
            Question::Noul(q) => {
                if let Some(c) = &q.criteria {
                    let mut cm = Map::new();
                    cm.insert("false".into(), Value::from(c.when_false.as_str()));
                    cm.insert("true".into(), Value::from(c.when_true.as_str()));
                    m.insert("criteria".into(), Value::Object(cm));
                }
            }
            Question::Choice(q) => {
                let cm = q
                    .criteria
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
                    .collect();
                m.insert("criteria".into(), Value::Object(cm));
            }
            Question::Score(q) => {
                let levels = q.criteria.iter().map(|s| Value::from(s.as_str())).collect();
                m.insert("criteria".into(), Value::Array(levels));
            }
        }
        Value::Object(m)
    }

    /// Reads the wire form back, strictly: an unknown `type`, a missing or
    /// non-string `instructions`, or `criteria` of the wrong shape is an error.
    /// Limits are not checked here (see [`validate_questions`]).
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::Question;
    ///
    /// let q = Question::from_wire(&json!({
    ///     "type": "choice", "instructions": "Which?", "criteria": {"a": "first", "b": "second"}
    /// }))?;
    /// assert_eq!(q.kind(), "choice");
    /// assert!(Question::from_wire(&json!({"type": "poll"})).is_err());
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn from_wire(v: &Value) -> Result<Question, ClassifierError> {
        let o = v
            .as_object()
            .ok_or_else(|| msg::decode("question is not a JSON object"))?;
        let instructions = match o.get("instructions") {
            Some(Value::String(s)) => s.clone(),
            None | Some(Value::Null) => String::new(),
            Some(_) => return Err(msg::decode("question \"instructions\" is not a string")),
        };
        let criteria = o.get("criteria").filter(|c| !c.is_null());
        let ty = match o.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(_) => return Err(msg::decode("question \"type\" is not a string")),
            None => return Err(msg::decode("question has no \"type\"")),
        };
        match ty {
            "noul" => {
                let criteria = match criteria {
                    None => None,
                    Some(Value::Object(c)) => {
                        let side = |k: &str| match c.get(k) {
                            None | Some(Value::Null) => Ok(String::new()),
                            Some(Value::String(s)) => Ok(s.clone()),
                            Some(_) => Err(msg::decode(format!(
                                "noul question criteria {k:?} is not a string"
                            ))),
                        };
                        Some(NoulCriteria {
                            when_true: side("true")?,
                            when_false: side("false")?,
                        })
                    }
                    Some(_) => {
                        return Err(msg::decode(
                            "noul question \"criteria\" is not an object of \"true\"/\"false\"",
                        ));
                    }
                };
                Ok(NoulQuestion {
                    instructions,
                    criteria,
                }
                .into())
            }
            "choice" => {
                let c = match criteria {
                    Some(Value::Object(c)) => c,
                    _ => {
                        return Err(msg::decode(
                            "choice question \"criteria\" is not an object of option id to meaning",
                        ));
                    }
                };
                let mut out = BTreeMap::new();
                for (id, meaning) in c {
                    let Value::String(m) = meaning else {
                        return Err(msg::decode(format!(
                            "choice question option {id:?} meaning is not a string"
                        )));
                    };
                    out.insert(id.clone(), m.clone());
                }
                Ok(ChoiceQuestion {
                    instructions,
                    criteria: out,
                }
                .into())
            }
            "score" => {
                let Some(Value::Array(levels)) = criteria else {
                    return Err(msg::decode(
                        "score question \"criteria\" is not an array of levels",
                    ));
                };
                let mut out = Vec::with_capacity(levels.len());
                for (i, l) in levels.iter().enumerate() {
                    let Value::String(s) = l else {
                        return Err(msg::decode(format!(
                            "score question level {i} is not a string"
                        )));
                    };
                    out.push(s.clone());
                }
                Ok(ScoreQuestion {
                    instructions,
                    criteria: out,
                }
                .into())
            }
            other => Err(msg::decode(format!(
                "question has unknown type {other:?} (want noul|choice|score)"
            ))),
        }
    }
}

/// The wire form of a whole question set: key → [`Question::wire`].
///
/// ```
/// use toolnexus::classifier::{NoulQuestion, Questions, questions_wire};
///
/// let qs = Questions::from([("spam".to_string(), NoulQuestion::default().into())]);
/// assert_eq!(questions_wire(&qs)["spam"]["type"], "noul");
/// ```
pub fn questions_wire(questions: &Questions) -> Value {
    Value::Object(
        questions
            .iter()
            .map(|(k, q)| (k.clone(), q.wire()))
            .collect(),
    )
}

/// Reads a whole question set from its wire form (an object of key → question),
/// naming the key of any question that does not decode.
///
/// ```
/// use serde_json::json;
/// use toolnexus::classifier::questions_from_wire;
///
/// let qs = questions_from_wire(&json!({"spam": {"type": "noul", "instructions": "Spam?"}}))?;
/// assert_eq!(qs.len(), 1);
/// let e = questions_from_wire(&json!({"x": {"type": "vote"}})).unwrap_err();
/// assert!(e.to_string().contains("question \"x\""), "{e}");
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
pub fn questions_from_wire(v: &Value) -> Result<Questions, ClassifierError> {
    let o = v
        .as_object()
        .ok_or_else(|| msg::decode("questions are not a JSON object of key to question"))?;
    o.iter()
        .map(|(k, q)| {
            let q = Question::from_wire(q).map_err(|e| {
                let text = e.to_string();
                let text = text.strip_prefix("classifier: ").unwrap_or(&text);
                msg::question(k, text)
            })?;
            Ok((k.clone(), q))
        })
        .collect()
}

/// Checks the client-side limits that hold before anything is sent: a non-empty
/// set, a choice of 1..=255 options, a score of 2..=10 levels. Errors name the key.
///
/// ```
/// use toolnexus::classifier::{Questions, ScoreQuestion, validate_questions};
///
/// let qs = Questions::from([(
///     "risk".to_string(),
///     ScoreQuestion { instructions: "How risky?".into(), criteria: vec!["only one".into()] }.into(),
/// )]);
/// let e = validate_questions(&qs).unwrap_err();
/// assert_eq!(e.to_string(), "classifier: question \"risk\": a score needs 2..=10 levels, got 1");
/// ```
pub fn validate_questions(questions: &Questions) -> Result<(), ClassifierError> {
    if questions.is_empty() {
        return Err(msg::no_questions());
    }
    for (key, q) in questions {
        match q {
            Question::Noul(_) => {}
            Question::Choice(c) => {
                let n = c.criteria.len();
                if !(1..=MAX_CHOICE_OPTIONS).contains(&n) {
                    return Err(msg::question(
                        key,
                        format!("a choice needs 1..={MAX_CHOICE_OPTIONS} options, got {n}"),
                    ));
                }
            }
            Question::Score(s) => {
                let n = s.criteria.len();
                if !(MIN_SCORE_LEVELS..=MAX_SCORE_LEVELS).contains(&n) {
                    return Err(msg::question(
                        key,
                        format!(
                            "a score needs {MIN_SCORE_LEVELS}..={MAX_SCORE_LEVELS} levels, got {n}"
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Flags a choice whose descriptions cannot tell its options apart: at least two
/// options, and every description empty, every description equal to its own id,
/// or every description the same. Returns why, or `None` when the encoding is usable.
///
/// Detection only: `evaluate` warns once per question key and sends the request
/// unchanged. It cannot tell a good encoding from a subtly wrong one.
///
/// ```
/// use std::collections::BTreeMap;
/// use toolnexus::classifier::degenerate_criteria;
///
/// let ids_only: BTreeMap<String, String> =
///     [("yes".into(), "yes".into()), ("no".into(), "no".into())].into();
/// assert!(degenerate_criteria(&ids_only).is_some());
///
/// let described: BTreeMap<String, String> =
///     [("yes".into(), "the user agreed".into()), ("no".into(), "anything else".into())].into();
/// assert_eq!(degenerate_criteria(&described), None);
/// ```
pub fn degenerate_criteria(criteria: &BTreeMap<String, String>) -> Option<&'static str> {
    if criteria.len() < 2 {
        return None;
    }
    if criteria.values().all(|d| d.trim().is_empty()) {
        return Some("every option's description is empty");
    }
    if criteria.iter().all(|(id, d)| d.trim() == id.as_str()) {
        return Some("every option's description is just its own id");
    }
    let mut it = criteria.values();
    let first = it.next().map(|s| s.trim());
    if it.all(|d| Some(d.trim()) == first) {
        return Some("every option has the same description");
    }
    None
}
