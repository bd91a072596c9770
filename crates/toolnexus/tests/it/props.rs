//! Properties over generated inputs: decisions and questions survive their wire
//! forms unchanged, and canonical JSON is a faithful, idempotent encoding whose
//! bytes do not depend on the order keys arrived in.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{Map, Value};
use toolnexus::classifier::{
    BoxQuestion, ChoiceAnswer, ChoiceQuestion, ClassifierUsage, Content, Decision, DecisionAnswer,
    NoulAnswer, NoulCriteria, NoulQuestion, Question, Questions, ScoreAnswer, ScoreQuestion,
    canonical_json, near_uniform, questions_from_wire, questions_wire,
};

fn finite() -> impl Strategy<Value = f64> {
    prop_oneof![
        // Probabilities and scores as backends send them...
        (0.0..=1.0f64),
        (0.0..=9.0f64),
        Just(0.0),
        Just(-0.0),
        Just(1.0),
        // ...and any finite double, tiny and huge ones included.
        any::<f64>().prop_filter("finite", |f| f.is_finite()),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9_]{0,12}",
        any::<String>(),
        Just("\u{2028}\u{0}\"\\</script>".to_string()),
    ]
}

fn probabilities() -> impl Strategy<Value = BTreeMap<String, f64>> {
    prop::collection::btree_map(text(), finite(), 0..6)
}

fn answer() -> impl Strategy<Value = DecisionAnswer> {
    prop_oneof![
        finite().prop_map(|noul| DecisionAnswer::Noul(NoulAnswer { noul })),
        (text(), probabilities(), finite()).prop_map(|(choice, probabilities, confidence)| {
            DecisionAnswer::Choice(ChoiceAnswer {
                choice,
                near_uniform: near_uniform(&probabilities),
                probabilities,
                confidence,
            })
        }),
        (
            finite(),
            prop::collection::btree_map(text(), text(), 0..6),
            probabilities(),
            finite()
        )
            .prop_map(|(score, legend, probabilities, confidence)| {
                DecisionAnswer::Score(ScoreAnswer {
                    score,
                    legend,
                    probabilities,
                    confidence,
                })
            }),
    ]
}

fn decision() -> impl Strategy<Value = Decision> {
    (
        text(),
        prop::collection::btree_map(text(), answer(), 0..5),
        any::<i64>(),
        any::<i64>(),
        prop::option::of(finite()),
        any::<bool>(),
    )
        .prop_map(
            |(model, answers, input_tokens, output_tokens, cost, calibrated)| Decision {
                model,
                answers,
                usage: ClassifierUsage {
                    input_tokens,
                    output_tokens,
                    cost,
                },
                calibrated,
            },
        )
}

/// Question content: mostly text, sometimes a JSON object or array (numbers
/// kept whole so a canonical round trip cannot change their JSON kind).
fn content() -> impl Strategy<Value = Content> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    let structured = leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(text(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    });
    prop_oneof![
        3 => text().prop_map(Content::from),
        1 => structured.prop_filter_map("objects and arrays only", |v| {
            (v.is_object() || v.is_array()).then(|| Content::structured(v).unwrap())
        }),
    ]
}

fn question() -> impl Strategy<Value = Question> {
    prop_oneof![
        (content(), prop::option::of((content(), content()))).prop_map(|(instructions, c)| {
            NoulQuestion {
                instructions,
                criteria: c.map(|(when_true, when_false)| NoulCriteria {
                    when_true,
                    when_false,
                }),
            }
            .into()
        }),
        (
            content(),
            prop::collection::btree_map(text(), prop::option::of(content()), 0..8)
        )
            .prop_map(|(instructions, criteria)| ChoiceQuestion {
                instructions,
                criteria: criteria.into()
            }
            .into()),
        (content(), prop::collection::vec(content(), 0..12)).prop_map(
            |(instructions, criteria)| {
                ScoreQuestion {
                    instructions,
                    criteria,
                }
                .into()
            }
        ),
        content().prop_map(|instructions| BoxQuestion { instructions }.into()),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        finite().prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map(text(), inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Equality where numbers compare by value: canonical JSON writes `2.0` as `2`
/// and `-0` as `0`, which parse back as other JSON number kinds.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(p), Some(q), _, _) => p == q,
                (_, _, Some(p), Some(q)) => p == q,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, p)| y.get(k).is_some_and(|q| same(p, q)))
        }
        _ => a == b,
    }
}

/// JSON text for `v` with every object's members written in a rotated order,
/// so a parser sees the keys arrive in an order other than sorted.
fn shuffled_text(v: &Value, turn: usize) -> String {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.reverse();
            if !entries.is_empty() {
                let by = turn % entries.len();
                entries.rotate_left(by);
            }
            let body: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| {
                    format!(
                        "{}:{}",
                        Value::from(k.as_str()),
                        shuffled_text(v, turn.wrapping_mul(31).wrapping_add(7))
                    )
                })
                .collect();
            format!("{{ {} }}", body.join(" , "))
        }
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(|x| shuffled_text(x, turn + 1)).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn decisions_round_trip_through_their_wire_form(d in decision()) {
        let wire = d.to_value();
        prop_assert_eq!(&Decision::from_value(&wire).unwrap(), &d);
        // And through the bytes a tape or a backend would carry.
        let bytes = canonical_json(&wire);
        prop_assert_eq!(&Decision::from_slice(bytes.as_bytes()).unwrap(), &d);
    }

    #[test]
    fn questions_round_trip_through_their_wire_form(
        qs in prop::collection::btree_map(text(), question(), 0..6)
    ) {
        for q in qs.values() {
            prop_assert_eq!(&Question::from_wire(&q.wire()).unwrap(), q);
        }
        let qs: Questions = qs;
        let wire = questions_wire(&qs);
        prop_assert_eq!(&questions_from_wire(&wire).unwrap(), &qs);
        let text: Value = serde_json::from_str(&canonical_json(&wire)).unwrap();
        prop_assert_eq!(&questions_from_wire(&text).unwrap(), &qs);
    }

    #[test]
    fn canonical_json_is_faithful_and_idempotent(v in json()) {
        let once = canonical_json(&v);
        let back: Value = serde_json::from_str(&once).unwrap();
        prop_assert!(same(&back, &v), "changed: {} -> {}", v, once);
        prop_assert_eq!(canonical_json(&back), once);
    }

    #[test]
    fn canonical_json_ignores_the_order_keys_arrive_in(v in json(), turn in 0usize..64) {
        let text = shuffled_text(&v, turn);
        let reparsed: Value = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(canonical_json(&reparsed), canonical_json(&v));
    }
}

/// Regression: without serde_json's `float_roundtrip`, parsing the shortest
/// digits of some doubles lands one ulp away, so a decision read back from a
/// tape differed from the one recorded, and a state with such a number changed
/// its canonical bytes after a save and load, so its replay missed.
#[test]
fn doubles_survive_their_own_text() {
    for f in [0.9559191729507203f64, 1.1627343366883545e-268] {
        let text = canonical_json(&Value::from(f));
        let back: f64 = serde_json::from_str(&text).unwrap();
        assert_eq!(back.to_bits(), f.to_bits(), "{text}");
    }
}

#[tokio::test]
async fn a_tape_replays_a_state_holding_an_awkward_double() {
    use serde_json::json;
    use toolnexus::classifier::EvalContext;
    use toolnexus::judge::{Tape, TapeEntry, TapeOutcome, noul, questions};

    let qs = questions(&[noul("q", "Does it hold?")]).unwrap();
    let state = json!({"reading": 0.9559191729507203});
    let decision = Decision::from_value(
        &json!({"model": "m", "answers": {"q": {"type": "noul", "noul": 1.1627343366883545e-268}}}),
    )
    .unwrap();
    let tape = Tape::new();
    tape.record(TapeEntry {
        call_name: "c".into(),
        model: "m".into(),
        state: state.clone(),
        questions: qs.clone(),
        outcome: TapeOutcome::Decision(decision.clone()),
        request_id: Some("req_1".into()),
    });
    let loaded = Tape::from_json(&tape.to_json()).unwrap();
    assert_eq!(loaded.entries(), tape.entries());
    let replayed = loaded
        .replayer()
        .evaluate_ctx(EvalContext::new().with_call_name("c"), state, &qs)
        .await
        .unwrap();
    assert_eq!(replayed, decision);
}
