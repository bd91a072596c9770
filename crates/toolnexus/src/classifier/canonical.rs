//! The canonical request: questions written in the one byte form that Static
//! keys, tapes and request bodies rest on ([`crate::canonical`] writes the JSON).

use serde_json::Value;

pub use crate::canonical::{canonical_json, write_canonical};
use crate::canonical::{write_str, write_value};

use super::content::Content;
use super::question::{Question, Questions};

/// The canonical bytes of a request without its state: `{"model":…,"questions":…}`.
/// The same model and questions give the same bytes in every port of this library.
///
/// ```
/// use toolnexus::classifier::{NoulQuestion, Questions, canonical_request};
///
/// let qs = Questions::from([(
///     "spam".to_string(),
///     NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into(),
/// )]);
/// assert_eq!(
///     canonical_request("jev-latest", &qs),
///     r#"{"model":"jev-latest","questions":{"spam":{"instructions":"Is it spam?","type":"noul"}}}"#
/// );
/// ```
pub fn canonical_request(model: &str, questions: &Questions) -> String {
    let mut out = String::with_capacity(128);
    out.push_str("{\"model\":");
    write_str(&mut out, model);
    out.push_str(",\"questions\":");
    write_questions(&mut out, questions);
    out.push('}');
    out
}

/// Appends the canonical wire form of a question set: the same bytes as
/// `canonical_json(&questions_wire(questions))`, written without building a `Value`.
/// A `BTreeMap<String, _>` iterates in bytewise key order by definition, and each
/// question's own keys are written in their sorted order: `criteria`,
/// `instructions`, `type`.
pub(crate) fn write_questions(out: &mut String, questions: &Questions) {
    write_question_set(out, questions, Options::Sorted);
}

/// Appends a question set as it is sent to a model: canonical in every way but
/// one — a choice's options in the caller's order (SPEC §16), because models
/// read option order. Identity ([`write_questions`]) sorts them.
pub(crate) fn write_questions_sent(out: &mut String, questions: &Questions) {
    write_question_set(out, questions, Options::AsGiven);
}

/// How a choice's options are written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Options {
    /// Sorted by id: the identity of a question.
    Sorted,
    /// In the caller's order: what reaches the model.
    AsGiven,
}

fn write_question_set(out: &mut String, questions: &Questions, options: Options) {
    out.push('{');
    for (i, (key, q)) in questions.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_str(out, key);
        out.push(':');
        write_question(out, q, options);
    }
    out.push('}');
}

/// Appends the canonical wire form of one question: `{"criteria"?,"instructions","type"}`.
fn write_question(out: &mut String, q: &Question, options: Options) {
    out.push('{');
    match q {
        Question::Noul(n) => {
            if let Some(c) = &n.criteria {
                out.push_str("\"criteria\":{\"false\":");
                write_content(out, &c.when_false);
                out.push_str(",\"true\":");
                write_content(out, &c.when_true);
                out.push_str("},");
            }
        }
        Question::Choice(c) => {
            // Identity, not what is sent: the ids sorted, whatever the caller's order.
            out.push_str("\"criteria\":{");
            let ordered: Vec<(&String, &Option<Content>)> = match options {
                Options::Sorted => c.criteria.sorted(),
                Options::AsGiven => c.criteria.iter().collect(),
            };
            for (j, (id, meaning)) in ordered.into_iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                write_str(out, id);
                out.push(':');
                match meaning {
                    Some(m) => write_content(out, m),
                    None => out.push_str("null"),
                }
            }
            out.push_str("},");
        }
        Question::Score(s) => {
            out.push_str("\"criteria\":[");
            for (j, level) in s.criteria.iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                write_content(out, level);
            }
            out.push_str("],");
        }
        Question::Box(_) => {}
    }
    out.push_str("\"instructions\":");
    write_content(out, q.instructions());
    out.push_str(",\"type\":");
    write_str(out, q.kind());
    out.push('}');
}

/// A stable name for a question's wording: `sha256:` and the hex SHA-256 of its
/// canonical wire form. Any change to its instructions, criteria or kind changes
/// it; the key it is asked under does not. A calibration file names each
/// question by it, so a map is never applied to a reworded question.
///
/// ```
/// use toolnexus::classifier::{NoulQuestion, Question, question_hash};
///
/// let q = Question::from(NoulQuestion { instructions: "Is it spam?".into(), criteria: None });
/// let h = question_hash(&q);
/// assert!(h.starts_with("sha256:") && h.len() == 7 + 64);
/// let other = Question::from(NoulQuestion { instructions: "Is it ham?".into(), criteria: None });
/// assert_ne!(question_hash(&other), h);
/// ```
pub fn question_hash(question: &Question) -> String {
    use sha2::{Digest, Sha256};
    let mut bytes = String::with_capacity(128);
    write_question(&mut bytes, question, Options::Sorted);
    let digest = Sha256::digest(bytes.as_bytes());
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in digest {
        out.push(char::from_digit(u32::from(b >> 4), 16).expect("a nibble"));
        out.push(char::from_digit(u32::from(b & 15), 16).expect("a nibble"));
    }
    out
}

/// Content is a string (the common case, written directly) or structured JSON.
fn write_content(out: &mut String, c: &Content) {
    match c.as_value() {
        Value::String(s) => write_str(out, s),
        v => write_value(out, v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::write_f64;
    use serde_json::json;

    fn num(f: f64) -> String {
        let mut s = String::new();
        write_f64(&mut s, f);
        s
    }

    #[test]
    fn numbers_follow_the_shortest_round_trip_form() {
        let table: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "0"),
            (1.0, "1"),
            (2.0, "2"),
            (-3.5, "-3.5"),
            (0.1, "0.1"),
            (0.30000000000000004, "0.30000000000000004"),
            (1.21, "1.21"),
            (1e-6, "0.000001"),
            (1.5e-6, "0.0000015"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (-1.5e-7, "-1.5e-7"),
            (123456789.0, "123456789"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1.5e21, "1.5e+21"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (0.000123, "0.000123"),
            (123.456, "123.456"),
        ];
        for (f, want) in table {
            assert_eq!(num(*f), *want, "formatting {f:e}");
        }
    }

    #[test]
    fn integers_stay_integers() {
        assert_eq!(canonical_json(&json!(u64::MAX)), "18446744073709551615");
        assert_eq!(canonical_json(&json!(i64::MIN)), "-9223372036854775808");
    }

    #[test]
    fn strings_escape_only_what_they_must() {
        let s = "<>&'\"\\ é 漢 \u{1F600}\n\r\t\u{0}\u{8}\u{c}\u{1f}\u{7f}\u{2028}\u{2029}";
        assert_eq!(
            canonical_json(&json!(s)),
            "\"<>&'\\\"\\\\ é 漢 \u{1F600}\\n\\r\\t\\u0000\\u0008\\u000c\\u001f\u{7f}\\u2028\\u2029\""
        );
    }

    #[test]
    fn keys_sort_bytewise_at_every_depth_and_arrays_keep_order() {
        let v = json!({"b": {"z": 1, "B": 2, "é": 3, "a": 4}, "a": [3, 2, {"y": 1, "x": 2}]});
        assert_eq!(
            canonical_json(&v),
            r#"{"a":[3,2,{"x":2,"y":1}],"b":{"B":2,"a":4,"z":1,"é":3}}"#
        );
    }

    #[test]
    fn questions_are_written_as_their_canonical_wire_form() {
        use crate::classifier::question::{
            ChoiceQuestion, NoulCriteria, NoulQuestion, ScoreQuestion, questions_wire,
        };
        let qs: Questions = [
            (
                "z\u{2028}".to_string(),
                Question::from(NoulQuestion {
                    instructions: "\"q\"".into(),
                    criteria: None,
                }),
            ),
            (
                "n".to_string(),
                NoulQuestion {
                    instructions: "i".into(),
                    criteria: Some(NoulCriteria::default()),
                }
                .into(),
            ),
            (
                "é".to_string(),
                ScoreQuestion {
                    instructions: "s".into(),
                    criteria: vec!["b".into(), "a".into()],
                }
                .into(),
            ),
            (
                "C".to_string(),
                ChoiceQuestion {
                    instructions: "c".into(),
                    criteria: [
                        ("y".to_string(), Some("\n".into())),
                        ("x".to_string(), Some("<&>".into())),
                        ("w".to_string(), None),
                        (
                            "v".to_string(),
                            Some(
                                Content::structured(
                                    serde_json::json!({"b": [1, "\u{2028}"], "a": null}),
                                )
                                .unwrap(),
                            ),
                        ),
                    ]
                    .into(),
                }
                .into(),
            ),
        ]
        .into();
        let mut direct = String::new();
        write_questions(&mut direct, &qs);
        assert_eq!(direct, canonical_json(&questions_wire(&qs)));
    }

    #[test]
    fn canonical_form_is_idempotent() {
        let v = json!({"k": [1.0, 0.5, 1e-9, "x\u{2028}"], "j": {"n": null, "t": true}});
        let once = canonical_json(&v);
        let back: Value = serde_json::from_str(&once).unwrap();
        assert_eq!(canonical_json(&back), once);
    }
}
