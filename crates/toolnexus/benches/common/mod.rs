//! The fixture the `core` and `cache` benches share: a three-question set
//! (score, choice, noul) and a recorded System One answer to it.

use toolnexus::classifier::{NoulCriteria, NoulQuestion, Questions, ScoreQuestion, choice_over};

/// A System One response answering [`three_questions`], with usage and cost.
pub const THREE_ANSWERS: &str = r#"{"model":"typesafe/jev-1.13-20260917","calibrated":true,"answers":{
  "risk":{"type":"score","score":1.21,"legend":{"0":"harmless","1":"reversible","2":"destructive"},
          "probabilities":{"0":0.10,"1":0.59,"2":0.31},"confidence":0.71},
  "desk":{"type":"choice","choice":"billing","probabilities":{"billing":0.81,"shipping":0.12,"technical":0.07},"confidence":0.77},
  "refund":{"type":"noul","noul":0.93}},
  "usage":{"input_tokens":516,"output_tokens":72,"cost":0.00042}}"#;

/// A score, a choice and a noul question under `risk`, `desk` and `refund`.
pub fn three_questions() -> Questions {
    Questions::from([
        (
            "risk".to_string(),
            ScoreQuestion {
                instructions: "How destructive is this shell command?".into(),
                criteria: vec!["harmless".into(), "reversible".into(), "destructive".into()],
            }
            .into(),
        ),
        (
            "desk".to_string(),
            choice_over(
                "Which desk owns this?",
                [
                    ("billing", "money moved: a duplicate charge, a refund owed"),
                    ("shipping", "a physical parcel is late or damaged"),
                    ("technical", "the product itself errors"),
                ],
            )
            .into(),
        ),
        (
            "refund".to_string(),
            NoulQuestion {
                instructions: "Does the customer ask for money back?".into(),
                criteria: Some(NoulCriteria {
                    when_true: "a refund or chargeback is requested".into(),
                    when_false: "anything else".into(),
                }),
            }
            .into(),
        ),
    ])
}
