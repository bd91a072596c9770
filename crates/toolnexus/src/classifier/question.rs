//! The four question kinds, their wire form, the client-side limits, and the
//! degenerate-criteria check. Pure: no I/O.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::choice_options::ChoiceOptions;
use super::content::{Content, IntoDescription, json_kind};
use crate::error::{ClassifierError, msg};

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
    pub instructions: Content,
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
    pub when_true: Content,
    /// When it does not (wire key `"false"`).
    pub when_false: Content,
}

/// Pick one of up to 255 described options; the answer carries a full distribution.
///
/// An option's description may be `None` (null on the wire): the model then reads
/// the option by its name alone, which works only when the name says it all.
///
/// The options keep the order they were given in, and that order is what every
/// style sends to the model ([`ChoiceOptions`]); identity (tapes, cache keys,
/// question hashes) is canonical and ignores it.
///
/// ```
/// use toolnexus::classifier::{ChoiceQuestion, Content};
///
/// let q = ChoiceQuestion {
///     instructions: "Which team owns this ticket?".into(),
///     criteria: [
///         ("other".to_string(), None),
///         ("billing".to_string(), Some(Content::from("money moved"))),
///     ]
///     .into(),
/// };
/// assert_eq!(q.criteria["billing"].as_ref().unwrap(), "money moved");
/// assert_eq!(q.criteria["other"], None);
/// assert_eq!(q.criteria.keys().next().unwrap(), "other");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChoiceQuestion {
    /// What to decide.
    pub instructions: Content,
    /// Option id → what picking it would MEAN, or `None` for an option read by
    /// its name, in the caller's order. The descriptions are the only thing that
    /// tells the options apart to the model (see [`degenerate_criteria`]).
    pub criteria: ChoiceOptions,
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
    pub instructions: Content,
    /// The levels, lowest first. Never sorted: level `i` is `criteria[i]`.
    pub criteria: Vec<Content>,
}

/// Locate something in an image asset of the state; the answer is a box in
/// fractions of the image's height and width (see
/// [`BoxAnswer`](super::BoxAnswer)). Needs a backend with a vision model.
///
/// ```
/// use toolnexus::classifier::{BoxQuestion, Question};
///
/// let q = Question::from(BoxQuestion { instructions: "Where is the damaged corner?".into() });
/// assert_eq!(q.kind(), "box");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BoxQuestion {
    /// What to locate.
    pub instructions: Content,
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
    /// A box around something in an image.
    Box(BoxQuestion),
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

impl From<BoxQuestion> for Question {
    fn from(q: BoxQuestion) -> Self {
        Question::Box(q)
    }
}

/// Builds a choice question from any `(id, meaning)` pairs. A meaning is text,
/// [`Content`], or `None` for an option read by its name (see [`IntoDescription`]).
///
/// ```
/// use toolnexus::classifier::choice_over;
///
/// let q = choice_over("Which desk owns this?", [
///     ("billing", "money moved: a duplicate charge, a refund owed"),
///     ("shipping", "a physical parcel is late or damaged"),
/// ]);
/// assert_eq!(
///     q.criteria["billing"].as_ref().unwrap(),
///     "money moved: a duplicate charge, a refund owed"
/// );
/// let tone = choice_over("What is the tone?", [("calm", None::<&str>), ("angry", None)]);
/// assert_eq!(tone.criteria["calm"], None);
/// ```
pub fn choice_over<I, K, V>(instructions: impl Into<Content>, pairs: I) -> ChoiceQuestion
where
    I: IntoIterator<Item = (K, V)>,
    K: Into<String>,
    V: IntoDescription,
{
    ChoiceQuestion {
        instructions: instructions.into(),
        criteria: pairs
            .into_iter()
            .map(|(k, v)| (k.into(), v.into_description()))
            .collect(),
    }
}

impl Question {
    /// The wire discriminator: `"noul"`, `"choice"`, `"score"` or `"box"`.
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
            Question::Box(_) => "box",
        }
    }

    /// The instructions, whatever the kind.
    ///
    /// ```
    /// use toolnexus::classifier::{NoulQuestion, Question};
    /// let q = Question::from(NoulQuestion { instructions: "Is it spam?".into(), criteria: None });
    /// assert_eq!(q.instructions(), "Is it spam?");
    /// ```
    pub fn instructions(&self) -> &Content {
        match self {
            Question::Noul(q) => &q.instructions,
            Question::Choice(q) => &q.instructions,
            Question::Score(q) => &q.instructions,
            Question::Box(q) => &q.instructions,
        }
    }

    /// The wire form: `{"type", "instructions", "criteria"}`, with a noul's
    /// `criteria` absent when it is `None`, a choice option with no description
    /// written as `null`, and a box question carrying no `criteria`.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::{NoulCriteria, NoulQuestion, Question, choice_over};
    ///
    /// let absent = Question::from(NoulQuestion { instructions: "x".into(), criteria: None });
    /// assert_eq!(absent.wire(), json!({"type": "noul", "instructions": "x"}));
    /// let empty = Question::from(NoulQuestion {
    ///     instructions: "x".into(),
    ///     criteria: Some(NoulCriteria::default()),
    /// });
    /// assert_eq!(empty.wire()["criteria"], json!({"false": "", "true": ""}));
    /// let tone = Question::from(choice_over("Tone?", [("calm", None::<&str>)]));
    /// assert_eq!(tone.wire()["criteria"], json!({"calm": null}));
    /// ```
    pub fn wire(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), Value::from(self.kind()));
        m.insert(
            "instructions".into(),
            self.instructions().as_value().clone(),
        );
        match self {
            Question::Noul(q) => {
                if let Some(c) = &q.criteria {
                    let mut cm = Map::new();
                    cm.insert("false".into(), c.when_false.as_value().clone());
                    cm.insert("true".into(), c.when_true.as_value().clone());
                    m.insert("criteria".into(), Value::Object(cm));
                }
            }
            Question::Choice(q) => {
                let cm = q
                    .criteria
                    .iter()
                    .map(|(k, v)| {
                        let v = v.as_ref().map_or(Value::Null, |c| c.as_value().clone());
                        (k.clone(), v)
                    })
                    .collect();
                m.insert("criteria".into(), Value::Object(cm));
            }
            Question::Score(q) => {
                let levels = q.criteria.iter().map(|c| c.as_value().clone()).collect();
                m.insert("criteria".into(), Value::Array(levels));
            }
            Question::Box(_) => {}
        }
        Value::Object(m)
    }

    /// Reads the wire form back, strictly: an unknown `type`, `instructions`
    /// that is not a string, an object or an array, or `criteria` of the wrong
    /// shape is an error. Absent or null `instructions` read as empty text; a
    /// null choice description reads as `None`. Limits are not checked here (see
    /// [`validate_questions`]).
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::Question;
    ///
    /// let q = Question::from_wire(&json!({
    ///     "type": "choice", "instructions": {"task": "tone"}, "criteria": {"calm": null, "angry": "shouting"}
    /// }))?;
    /// assert_eq!(q.kind(), "choice");
    /// assert_eq!(Question::from_wire(&q.wire())?, q);
    /// assert!(Question::from_wire(&json!({"type": "poll"})).is_err());
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn from_wire(v: &Value) -> Result<Question, ClassifierError> {
        read_question(v).map_err(msg::decode)
    }
}

/// Content where the wire allows a string, an object or an array; `what` names
/// the field in the message.
fn content(v: Option<&Value>, what: &str) -> Result<Content, String> {
    match v {
        None | Some(Value::Null) => Ok(Content::default()),
        Some(v @ (Value::String(_) | Value::Object(_) | Value::Array(_))) => {
            Ok(Content::structured(v.clone()).expect("a string, an object or an array"))
        }
        Some(other) => Err(format!(
            "{what} is {}, not a string, an object or an array",
            json_kind(other)
        )),
    }
}

/// [`Question::from_wire`], its failure as the detail text (no prefix).
fn read_question(v: &Value) -> Result<Question, String> {
    let o = v
        .as_object()
        .ok_or_else(|| "question is not a JSON object".to_string())?;
    let instructions = content(o.get("instructions"), "question \"instructions\"")?;
    let criteria = o.get("criteria").filter(|c| !c.is_null());
    let ty = match o.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(_) => return Err("question \"type\" is not a string".into()),
        None => return Err("question has no \"type\"".into()),
    };
    match ty {
        "noul" => {
            let criteria = match criteria {
                None => None,
                Some(Value::Object(c)) => Some(NoulCriteria {
                    when_true: content(c.get("true"), "noul question criteria \"true\"")?,
                    when_false: content(c.get("false"), "noul question criteria \"false\"")?,
                }),
                Some(_) => {
                    return Err(
                        "noul question \"criteria\" is not an object of \"true\"/\"false\"".into(),
                    );
                }
            };
            Ok(NoulQuestion {
                instructions,
                criteria,
            }
            .into())
        }
        "choice" => {
            let Some(Value::Object(c)) = criteria else {
                return Err(
                    "choice question \"criteria\" is not an object of option id to meaning".into(),
                );
            };
            // In the order the wire gave them (serde_json keeps it).
            let mut out = ChoiceOptions::new();
            for (id, meaning) in c {
                let meaning = match meaning {
                    Value::Null => None,
                    m => Some(content(
                        Some(m),
                        &format!("choice question option {id:?} meaning"),
                    )?),
                };
                out.insert(id.clone(), meaning);
            }
            Ok(ChoiceQuestion {
                instructions,
                criteria: out,
            }
            .into())
        }
        "score" => {
            let Some(Value::Array(levels)) = criteria else {
                return Err("score question \"criteria\" is not an array of levels".into());
            };
            let mut out = Vec::with_capacity(levels.len());
            for (i, l) in levels.iter().enumerate() {
                if l.is_null() {
                    return Err(format!("score question level {i} is null"));
                }
                out.push(content(Some(l), &format!("score question level {i}"))?);
            }
            Ok(ScoreQuestion {
                instructions,
                criteria: out,
            }
            .into())
        }
        "box" => Ok(BoxQuestion { instructions }.into()),
        other => Err(format!(
            "question has unknown type {other:?} (want noul|choice|score|box)"
        )),
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
            let q = read_question(q).map_err(|text| msg::question(k, text))?;
            Ok((k.clone(), q))
        })
        .collect()
}

/// Checks the client-side limits that hold before anything is sent: a non-empty
/// set, a choice of 1..=255 options, a score of 2..=10 levels, and something
/// to read in every question. Errors name the key.
///
/// A question has nothing to read when every text that says what it asks is
/// blank (empty, whitespace, or an empty JSON object or array): a noul's
/// instructions and its true criterion; a box's instructions; a choice's
/// instructions and every option's description (an option's id is its name,
/// not what the question asks); a score's instructions and every level. Such a
/// question would get a confident answer to nothing, so it is refused in every
/// style, before anything is sent.
///
/// ```
/// use toolnexus::classifier::{NoulQuestion, Questions, ScoreQuestion, validate_questions};
///
/// let qs = Questions::from([(
///     "risk".to_string(),
///     ScoreQuestion { instructions: "How risky?".into(), criteria: vec!["only one".into()] }.into(),
/// )]);
/// let e = validate_questions(&qs).unwrap_err();
/// assert_eq!(e.to_string(), "classifier: question \"risk\": a score needs 2..=10 levels, got 1");
///
/// let qs = Questions::from([("spam".to_string(), NoulQuestion::default().into())]);
/// let e = validate_questions(&qs).unwrap_err();
/// assert_eq!(
///     e.to_string(),
///     "classifier: question \"spam\": a noul needs instructions: there is nothing to read"
/// );
/// ```
pub fn validate_questions(questions: &Questions) -> Result<(), ClassifierError> {
    if questions.is_empty() {
        return Err(msg::no_questions());
    }
    for (key, q) in questions {
        match q {
            Question::Noul(n) => {
                let criterion = n.criteria.as_ref().is_some_and(|c| !c.when_true.is_blank());
                if n.instructions.is_blank() && !criterion {
                    return Err(msg::nothing_to_read(key, "a noul needs instructions"));
                }
            }
            Question::Box(b) => {
                if b.instructions.is_blank() {
                    return Err(msg::nothing_to_read(key, "a box needs instructions"));
                }
            }
            Question::Choice(c) => {
                let n = c.criteria.len();
                if !(1..=MAX_CHOICE_OPTIONS).contains(&n) {
                    return Err(msg::question(
                        key,
                        format!("a choice needs 1..={MAX_CHOICE_OPTIONS} options, got {n}"),
                    ));
                }
                let described = c
                    .criteria
                    .values()
                    .any(|d| d.as_ref().is_some_and(|d| !d.is_blank()));
                if c.instructions.is_blank() && !described {
                    return Err(msg::nothing_to_read(
                        key,
                        "a choice needs instructions or an option's description",
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
                if s.instructions.is_blank() && s.criteria.iter().all(Content::is_blank) {
                    return Err(msg::nothing_to_read(
                        key,
                        "a score needs instructions or a level's text",
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Flags a choice whose descriptions cannot tell its options apart: at least two
/// options, and every description absent or empty, every description equal to
/// its own id, or every description the same. Returns why, or `None` when the
/// encoding is usable.
///
/// Detection only: `evaluate` warns once per question key and sends the request
/// unchanged. It cannot tell a good encoding from a subtly wrong one. Options
/// with no description at all (`None`) are read by their names, which is the
/// same as a description equal to the id. It takes the options as a
/// [`ChoiceOptions`] or any map of id → description.
///
/// ```
/// use toolnexus::classifier::{ChoiceOptions, Content, degenerate_criteria};
///
/// let ids_only: ChoiceOptions =
///     [("yes".into(), Some("yes".into())), ("no".into(), Some("no".into()))].into();
/// assert!(degenerate_criteria(&ids_only).is_some());
///
/// let described: ChoiceOptions = [
///     ("yes".into(), Some("the user agreed".into())),
///     ("no".into(), Some("anything else".into())),
/// ]
/// .into();
/// assert_eq!(degenerate_criteria(&described), None);
/// ```
pub fn degenerate_criteria<'a, I>(criteria: I) -> Option<&'static str>
where
    I: IntoIterator<Item = (&'a String, &'a Option<Content>)>,
{
    let options: Vec<(&String, &Option<Content>)> = criteria.into_iter().collect();
    if options.len() < 2 {
        return None;
    }
    let values = || options.iter().map(|(_, d)| *d);
    if values().all(Option::is_none) {
        return Some("no option has a description, so each is read by its name alone");
    }
    if values().all(|d| d.as_ref().is_none_or(Content::is_blank)) {
        return Some("every option's description is empty");
    }
    if options.iter().all(|(id, d)| {
        d.as_ref()
            .is_none_or(|d| d.as_str().map(str::trim) == Some(id.as_str()))
    }) {
        return Some("every option's description is just its own id");
    }
    let norm = |d: &Option<Content>| d.as_ref().map(|c| c.render().trim().to_string());
    let mut it = values();
    let first = it.next().map(norm);
    if it.all(|d| Some(norm(d)) == first) {
        return Some("every option has the same description");
    }
    None
}
