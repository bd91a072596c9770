//! Builders for named questions and states. Pure: no I/O.

use serde_json::Value;

use crate::classifier::{
    ClassifierError, Content, IntoDescription, NoulCriteria, NoulQuestion, Question, Questions,
    ScoreQuestion, choice_over, validate_questions,
};
use crate::error::msg;

/// A question under the key its answer will be read by. Made by [`noul`],
/// [`noul_with`], [`choice`] and [`score`]; gathered by [`questions`].
///
/// ```
/// use toolnexus::judge::noul;
///
/// let q = noul("refund_requested", "Does the customer ask for money back?");
/// assert_eq!(q.name, "refund_requested");
/// assert_eq!(q.question.kind(), "noul");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedQuestion {
    /// The key the answer is stored and read under.
    pub name: String,
    /// The question itself.
    pub question: Question,
}

/// A yes/no question: "does this statement hold?", with no criteria (absent on the wire).
///
/// ```
/// use toolnexus::judge::{noul, questions};
///
/// let qs = questions(&[noul("spam", "Is this message unsolicited bulk mail?")])?;
/// assert_eq!(qs["spam"].instructions(), "Is this message unsolicited bulk mail?");
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
pub fn noul(name: impl Into<String>, instructions: impl Into<Content>) -> NamedQuestion {
    NamedQuestion {
        name: name.into(),
        question: NoulQuestion {
            instructions: instructions.into(),
            criteria: None,
        }
        .into(),
    }
}

/// A yes/no question that also says what true and what false mean.
///
/// ```
/// use serde_json::json;
/// use toolnexus::judge::{noul_with, questions};
///
/// let qs = questions(&[noul_with(
///     "refund_requested",
///     "Does the customer ask for money back?",
///     "a refund, chargeback or credit is requested",
///     "no money is asked for",
/// )])?;
/// assert_eq!(qs["refund_requested"].wire()["criteria"]["true"], json!("a refund, chargeback or credit is requested"));
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
pub fn noul_with(
    name: impl Into<String>,
    instructions: impl Into<Content>,
    when_true: impl Into<Content>,
    when_false: impl Into<Content>,
) -> NamedQuestion {
    NamedQuestion {
        name: name.into(),
        question: NoulQuestion {
            instructions: instructions.into(),
            criteria: Some(NoulCriteria {
                when_true: when_true.into(),
                when_false: when_false.into(),
            }),
        }
        .into(),
    }
}

/// A choice among described options, given as `(id, meaning)` pairs. The
/// meanings are the only thing that tells the options apart to the model:
/// describe each one.
///
/// ```
/// use toolnexus::judge::{choice, questions};
///
/// let qs = questions(&[choice("desk", "Which desk should handle this ticket?", [
///     ("billing", "money moved or is owed: charges, refunds, invoices"),
///     ("shipping", "a parcel is late, lost or damaged"),
/// ])])?;
/// assert_eq!(qs["desk"].kind(), "choice");
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
pub fn choice<I, K, V>(
    name: impl Into<String>,
    instructions: impl Into<Content>,
    options: I,
) -> NamedQuestion
where
    I: IntoIterator<Item = (K, V)>,
    K: Into<String>,
    V: IntoDescription,
{
    NamedQuestion {
        name: name.into(),
        question: choice_over(instructions, options).into(),
    }
}

/// A score on an ordered rubric, levels lowest first (kept in the order given).
///
/// ```
/// use toolnexus::judge::{questions, score};
///
/// let qs = questions(&[score("urgency", "How soon must someone act?", ["low", "normal", "high"])])?;
/// assert_eq!(qs["urgency"].wire()["criteria"][2], "high");
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
pub fn score<I>(
    name: impl Into<String>,
    instructions: impl Into<Content>,
    levels: I,
) -> NamedQuestion
where
    I: IntoIterator,
    I::Item: Into<Content>,
{
    NamedQuestion {
        name: name.into(),
        question: ScoreQuestion {
            instructions: instructions.into(),
            criteria: levels.into_iter().map(Into::into).collect(),
        }
        .into(),
    }
}

/// Gathers named questions into [`Questions`], checking them as `evaluate` will:
/// a repeated name is an error (`classifier: duplicate question name "x"`), and
/// so is an empty list or a question that breaks a client-side limit.
///
/// ```
/// use toolnexus::judge::{noul, questions, score};
///
/// let qs = questions(&[
///     noul("spam", "Is this unsolicited bulk mail?"),
///     score("urgency", "How urgent?", ["low", "high"]),
/// ])?;
/// assert_eq!(qs.len(), 2);
///
/// let e = questions(&[noul("x", "first"), noul("x", "second")]).unwrap_err();
/// assert_eq!(e.to_string(), "classifier: duplicate question name \"x\"");
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
pub fn questions(list: &[NamedQuestion]) -> Result<Questions, ClassifierError> {
    let mut out = Questions::new();
    for q in list {
        if out.insert(q.name.clone(), q.question.clone()).is_some() {
            return Err(msg::duplicate_question(&q.name));
        }
    }
    validate_questions(&out)?;
    Ok(out)
}

/// A state that says whose words it holds: `{"data": <data>, "role": <role>}`.
///
/// The shape is a JSON object with exactly two keys: `role`, a string naming who
/// or what produced the data (`"customer"`, `"agent"`, `"tool_call"`), and `data`,
/// the content to judge, as given (a string, an object, an array). Keys sort in
/// canonical form, so `data` comes first on the wire.
///
/// ```
/// use serde_json::json;
/// use toolnexus::judge::state;
///
/// let s = state("customer", "I was charged twice for order 1182");
/// assert_eq!(s, json!({"role": "customer", "data": "I was charged twice for order 1182"}));
/// let s = state("tool_call", json!({"cmd": "rm -rf ./build"}));
/// assert_eq!(s["data"]["cmd"], "rm -rf ./build");
/// ```
pub fn state(role: impl Into<String>, data: impl Into<Value>) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("data".into(), data.into());
    m.insert("role".into(), Value::String(role.into()));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classifier::ErrorKind;
    use serde_json::json;

    #[test]
    fn builders_make_the_wire_they_promise() {
        let table: &[(NamedQuestion, Value)] = &[
            (
                noul("a", "Is it?"),
                json!({"type": "noul", "instructions": "Is it?"}),
            ),
            (
                noul_with("a", "Is it?", "", ""),
                json!({"type": "noul", "instructions": "Is it?", "criteria": {"true": "", "false": ""}}),
            ),
            (
                choice("a", "Which?", [("x", "the first"), ("y", "the second")]),
                json!({"type": "choice", "instructions": "Which?", "criteria": {"x": "the first", "y": "the second"}}),
            ),
            (
                score("a", "How much?", ["z-high", "a-low"]),
                json!({"type": "score", "instructions": "How much?", "criteria": ["z-high", "a-low"]}),
            ),
        ];
        for (q, want) in table {
            assert_eq!(&q.question.wire(), want, "{q:?}");
            assert_eq!(q.name, "a");
        }
    }

    #[test]
    fn questions_rejects_what_evaluate_would() {
        let table: &[(Vec<NamedQuestion>, &str)] = &[
            (
                vec![noul("x", "1"), noul("y", "2"), noul("x", "3")],
                "classifier: duplicate question name \"x\"",
            ),
            (
                vec![noul("x", "1"), score("x", "2", ["a", "b"])],
                "classifier: duplicate question name \"x\"",
            ),
            (
                vec![],
                "classifier: no questions to ask (the question set is empty)",
            ),
            (
                vec![score("u", "How?", ["only"])],
                "classifier: question \"u\": a score needs 2..=10 levels, got 1",
            ),
            (
                vec![choice("d", "Which?", Vec::<(String, String)>::new())],
                "classifier: question \"d\": a choice needs 1..=255 options, got 0",
            ),
        ];
        for (list, want) in table {
            let e = questions(list).unwrap_err();
            assert_eq!(e.to_string(), *want);
            assert_eq!(e.kind(), ErrorKind::InvalidQuestion);
        }
    }

    #[test]
    fn state_shape() {
        assert_eq!(
            state("agent", json!([1, 2])),
            json!({"role": "agent", "data": [1, 2]})
        );
        assert_eq!(state("", Value::Null), json!({"role": "", "data": null}));
    }
}
