//! Questions and a decision of every answer type, ready for a test.

use serde_json::json;

use crate::classifier::{
    Decision, NoulCriteria, NoulQuestion, Questions, ScoreQuestion, choice_over,
};

/// A support desk's three questions, one of each type: `refund` (noul, with
/// both criteria), `desk` (choice: `billing` or `shipping`) and `urgency`
/// (score: `can wait`, `today`, `now`).
///
/// ```
/// let qs = toolnexus::testing::three_questions();
/// assert_eq!(qs.keys().collect::<Vec<_>>(), ["desk", "refund", "urgency"]);
/// ```
pub fn three_questions() -> Questions {
    Questions::from([
        (
            "refund".to_string(),
            NoulQuestion {
                instructions: "Does the customer ask for money back?".into(),
                criteria: Some(NoulCriteria {
                    when_true: "they want a refund or a chargeback".into(),
                    when_false: "anything else".into(),
                }),
            }
            .into(),
        ),
        (
            "desk".to_string(),
            choice_over(
                "Which team should handle this ticket?",
                [
                    ("billing", "money moved or should move"),
                    ("shipping", "a parcel is late, lost or damaged"),
                ],
            )
            .into(),
        ),
        (
            "urgency".to_string(),
            ScoreQuestion {
                instructions: "How urgent is it?".into(),
                criteria: vec!["can wait".into(), "today".into(), "now".into()],
            }
            .into(),
        ),
    ])
}

/// A decision with one answer of each type — `desk` (choice of `billing`,
/// `shipping`, `technical`), `refund` (noul) and `urgency` (score of four
/// levels, with its legend) — and its usage (412 tokens in, 38 out), priced
/// at `cost` USD as reported by the backend when given.
///
/// ```
/// let d = toolnexus::testing::three_answers(Some(0.25));
/// assert_eq!(d.choice("desk")?.choice, "billing");
/// assert_eq!(d.noul("refund")?.noul, 0.09);
/// assert_eq!(d.score("urgency")?.score, 0.34);
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
pub fn three_answers(cost: Option<f64>) -> Decision {
    let mut v = json!({
        "model": "jev-1.13-20260917",
        "answers": {
            "desk": {"type": "choice", "choice": "billing", "confidence": 0.41,
                     "probabilities": {"billing": 0.41, "shipping": 0.26, "technical": 0.33}},
            "refund": {"type": "noul", "noul": 0.09},
            "urgency": {"type": "score", "score": 0.34, "confidence": 0.71,
                        "legend": {"0": "low: can wait", "1": "normal", "2": "high", "3": "critical"},
                        "probabilities": {"0": 0.71, "1": 0.25, "2": 0.03, "3": 0.01}}
        },
        "usage": {"input_tokens": 412, "output_tokens": 38}
    });
    if let Some(c) = cost {
        v["usage"]["cost"] = c.into();
    }
    Decision::from_value(&v).expect("a well-formed decision")
}
