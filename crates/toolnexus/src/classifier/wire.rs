//! Strict decoding of a wire decision, in one place. Pure: no I/O.
//!
//! Decoding runs in two steps. First a streaming pass (serde visitors, no
//! intermediate `Value`) records the JSON shape of every field it knows —
//! missing, null, the right kind, or the wrong kind — and skips the rest. Then
//! [`RawDecision::finish`] applies every rule in one fixed order and builds the
//! [`Decision`]. The same visitors read bytes and an already-parsed `Value`, so
//! both paths share every rule and every message.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::decision::{
    BoxAnswer, BoxCoordinates, ChoiceAnswer, Decision, DecisionAnswer, NoulAnswer, ScoreAnswer,
    near_uniform,
};
use super::question::Questions;
use crate::canonical::canonical_json;
use crate::error::{ClassifierError, msg};
use crate::json::{
    Keys, Skip, StrictValue, duplicate, duplicate_error, is_duplicate, skip_map, skip_seq,
};
use crate::usage::ClassifierUsage;

// The public constructors live beside the decoder they call, so the answer
// types in `decision.rs` import nothing from here and the two files stay a
// layer apart.
impl Decision {
    /// Decodes a wire response strictly (see [`Decision::from_value`]).
    ///
    /// ```
    /// use toolnexus::classifier::Decision;
    /// let e = Decision::from_slice(br#"{"model":"m","answers":{"q":{"type":"noul"}}}"#).unwrap_err();
    /// assert_eq!(e.to_string(), "classifier: answer \"q\": noul answer has no \"noul\" number");
    /// ```
    pub fn from_slice(b: &[u8]) -> Result<Decision, ClassifierError> {
        decode_slice(b, None, |e| format!("response is not valid JSON: {e}"))
    }

    /// Decodes a wire value strictly: it must be an object with a string `model`,
    /// an object `answers` whose entries each carry a known `type` and their number,
    /// finite numbers throughout, and `calibrated` a bool, `null` or absent (absent
    /// and `null` mean `true`). Unknown extra fields are ignored; nothing is repaired.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::Decision;
    ///
    /// let d = Decision::from_value(&json!({
    ///     "model": "m", "calibrated": null, "extra": 1,
    ///     "answers": {"q": {"type": "noul", "noul": 0.4}},
    ///     "usage": {"input_tokens": 3, "output_tokens": 1, "cost": 0.0002}
    /// }))?;
    /// assert!(d.calibrated);
    /// assert_eq!(d.usage.cost, Some(0.0002));
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn from_value(v: &Value) -> Result<Decision, ClassifierError> {
        decode_value(v, None)
    }
}

/// A decoded decision, and the keys of answers dropped because nobody asked them.
#[derive(Debug)]
pub(crate) struct Decoded {
    pub decision: Decision,
    pub dropped: Vec<String>,
}

/// Decodes wire bytes. `default_model` stands in for an absent `model`;
/// `not_json` builds the error for bytes that are not JSON, so each caller can
/// say where they came from.
pub(crate) fn decode_slice(
    bytes: &[u8],
    default_model: Option<&str>,
    not_json: impl FnOnce(&serde_json::Error) -> String,
) -> Result<Decision, ClassifierError> {
    Ok(decode_slice_for(bytes, default_model, None, not_json)?.decision)
}

/// [`decode_slice`] where the questions are known: an answer under a key none of
/// them asked is dropped (its key reported) whatever it holds, even an unknown
/// type; an asked key is decoded strictly.
pub(crate) fn decode_slice_for(
    bytes: &[u8],
    default_model: Option<&str>,
    asked: Option<&Questions>,
    not_json: impl FnOnce(&serde_json::Error) -> String,
) -> Result<Decoded, ClassifierError> {
    let raw: RawDecision = serde_json::from_slice(bytes).map_err(|e| {
        if is_duplicate(&e) {
            duplicate_error("response", e)
        } else {
            msg::decode(not_json(&e)).with_source(e)
        }
    })?;
    raw.finish(default_model, asked)
}

/// Decodes an already-parsed wire value with the same rules as [`decode_slice`].
pub(crate) fn decode_value(
    v: &Value,
    default_model: Option<&str>,
) -> Result<Decision, ClassifierError> {
    // A `Value` cannot be malformed JSON, and the visitors never fail on shape,
    // so this only errs if serde itself breaks its contract.
    let raw = RawDecision::deserialize(v)
        .map_err(|e| msg::decode(format!("response could not be read: {e}")))?;
    Ok(raw.finish(default_model, None)?.decision)
}

/// What one field looked like on the wire.
#[derive(Debug, Default)]
enum Field<T> {
    #[default]
    Missing,
    Null,
    Ok(T),
    /// Present, but of the wrong JSON kind (or not a finite number).
    Bad,
}

impl<T> Field<T> {
    /// Missing and null are the same to most rules.
    fn absent(&self) -> bool {
        matches!(self, Field::Missing | Field::Null)
    }
}

/// A scalar as seen on the wire; compound values are skipped.
enum Scalar {
    Null,
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(String),
    Compound,
}

impl Scalar {
    fn number(&self) -> Option<f64> {
        match *self {
            Scalar::I64(i) => Some(i as f64),
            Scalar::U64(u) => Some(u as f64),
            Scalar::F64(f) if f.is_finite() => Some(f),
            _ => None,
        }
    }
}

fn num_field(s: Scalar) -> Field<f64> {
    match s {
        Scalar::Null => Field::Null,
        s => s.number().map_or(Field::Bad, Field::Ok),
    }
}

fn str_field(s: Scalar) -> Field<String> {
    match s {
        Scalar::Null => Field::Null,
        Scalar::Str(s) => Field::Ok(s),
        _ => Field::Bad,
    }
}

/// Implements `Deserialize` for a type through `deserialize_any` and a visitor
/// whose every non-map method yields `$other` (after skipping the value) and
/// whose null yields `$null`.
macro_rules! shape_visitor {
    ($ty:ty, $visitor:ident, $expect:literal, null => $null:expr, other => $other:expr, map($map:ident) => $body:block) => {
        struct $visitor;

        impl<'de> Visitor<'de> for $visitor {
            type Value = $ty;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str($expect)
            }
            fn visit_unit<E: de::Error>(self) -> Result<$ty, E> {
                Ok($null)
            }
            fn visit_none<E: de::Error>(self) -> Result<$ty, E> {
                Ok($null)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<$ty, E> {
                Ok($other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<$ty, E> {
                Ok($other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<$ty, E> {
                Ok($other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<$ty, E> {
                Ok($other)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<$ty, E> {
                Ok($other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<$ty, A::Error> {
                skip_seq(seq)?;
                Ok($other)
            }
            #[allow(unused_mut)]
            fn visit_map<A: MapAccess<'de>>(self, mut $map: A) -> Result<$ty, A::Error> $body
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$ty, D::Error> {
                d.deserialize_any($visitor)
            }
        }
    };
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Null)
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Scalar, E> {
        Ok(Scalar::Bool(b))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar::I64(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
        Ok(Scalar::U64(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar::F64(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar::Str(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Scalar, E> {
        Ok(Scalar::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Scalar, A::Error> {
        skip_seq(seq)?;
        Ok(Scalar::Compound)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Scalar, A::Error> {
        skip_map(map)?;
        Ok(Scalar::Compound)
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Scalar, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

/// A field name, matched without allocating; an unknown name is kept so a
/// repeat of it can be refused.
struct Key(KeyName, Option<String>);

/// The keys of one wire object seen so far: known names in a bit set, unknown
/// ones by text.
#[derive(Default)]
struct Seen {
    known: u32,
    other: Option<Keys>,
}

impl Seen {
    fn check<E: de::Error>(&mut self, key: Key) -> Result<KeyName, E> {
        match key.1 {
            Some(name) => self.other.get_or_insert_with(Keys::default).check(name)?,
            None => {
                let bit = 1u32 << (key.0 as u32);
                if self.known & bit != 0 {
                    return Err(duplicate(key.0.as_str()));
                }
                self.known |= bit;
            }
        }
        Ok(key.0)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum KeyName {
    Model,
    Calibrated,
    Answers,
    Usage,
    Type,
    Noul,
    Choice,
    Probabilities,
    Confidence,
    Score,
    Legend,
    InputTokens,
    OutputTokens,
    Cost,
    Box,
    Top,
    Bottom,
    Left,
    Right,
    Other,
}

impl KeyName {
    fn as_str(self) -> &'static str {
        match self {
            KeyName::Model => "model",
            KeyName::Calibrated => "calibrated",
            KeyName::Answers => "answers",
            KeyName::Usage => "usage",
            KeyName::Type => "type",
            KeyName::Noul => "noul",
            KeyName::Choice => "choice",
            KeyName::Probabilities => "probabilities",
            KeyName::Confidence => "confidence",
            KeyName::Score => "score",
            KeyName::Legend => "legend",
            KeyName::InputTokens => "input_tokens",
            KeyName::OutputTokens => "output_tokens",
            KeyName::Cost => "cost",
            KeyName::Box => "box",
            KeyName::Top => "top",
            KeyName::Bottom => "bottom",
            KeyName::Left => "left",
            KeyName::Right => "right",
            KeyName::Other => "",
        }
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
        let name = match v {
            "model" => KeyName::Model,
            "calibrated" => KeyName::Calibrated,
            "answers" => KeyName::Answers,
            "usage" => KeyName::Usage,
            "type" => KeyName::Type,
            "noul" => KeyName::Noul,
            "choice" => KeyName::Choice,
            "probabilities" => KeyName::Probabilities,
            "confidence" => KeyName::Confidence,
            "score" => KeyName::Score,
            "legend" => KeyName::Legend,
            "input_tokens" => KeyName::InputTokens,
            "output_tokens" => KeyName::OutputTokens,
            "cost" => KeyName::Cost,
            "box" => KeyName::Box,
            "top" => KeyName::Top,
            "bottom" => KeyName::Bottom,
            "left" => KeyName::Left,
            "right" => KeyName::Right,
            _ => return Ok(Key(KeyName::Other, Some(v.to_owned()))),
        };
        Ok(Key(name, None))
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        d.deserialize_str(KeyVisitor)
    }
}

/// A map of id → value where every value must be of one kind. Records the
/// smallest offending id, so the message names the same id whatever the
/// order on the wire.
#[derive(Debug)]
struct Entries<T> {
    map: BTreeMap<String, T>,
    bad: Option<String>,
}

type Probabilities = Field<Entries<f64>>;
type Legend = Field<Entries<String>>;

fn entries<'de, A: MapAccess<'de>, T>(
    mut map: A,
    convert: fn(Scalar) -> Option<T>,
) -> Result<Entries<T>, A::Error> {
    let mut out = Entries {
        map: BTreeMap::new(),
        bad: None,
    };
    let mut bad_ids = Vec::new();
    while let Some(id) = map.next_key::<String>()? {
        if out.map.contains_key(&id) || bad_ids.contains(&id) {
            return Err(duplicate(&id));
        }
        let v: Scalar = map.next_value()?;
        match convert(v) {
            Some(x) => {
                out.map.insert(id, x);
            }
            None => {
                if out.bad.as_ref().is_none_or(|b| id < *b) {
                    out.bad = Some(id.clone());
                }
                bad_ids.push(id);
            }
        }
    }
    Ok(out)
}

struct ProbabilitiesField(Probabilities);
shape_visitor!(ProbabilitiesField, ProbabilitiesVisitor, "an object of probabilities",
    null => ProbabilitiesField(Field::Null),
    other => ProbabilitiesField(Field::Bad),
    map(map) => { Ok(ProbabilitiesField(Field::Ok(entries(map, |s| s.number())?))) });

/// A legend entry: a level's text, or its structured content kept as canonical
/// JSON text.
struct LegendText(Option<String>);

impl<'de> Deserialize<'de> for LegendText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<LegendText, D::Error> {
        Ok(LegendText(match StrictValue::deserialize(d)?.0 {
            Value::String(s) => Some(s),
            v @ (Value::Object(_) | Value::Array(_)) => Some(canonical_json(&v)),
            _ => None,
        }))
    }
}

struct LegendField(Legend);
shape_visitor!(LegendField, LegendVisitor, "an object of level texts",
null => LegendField(Field::Null),
other => LegendField(Field::Bad),
map(map) => {
    let mut out = Entries { map: BTreeMap::new(), bad: None };
    let mut bad_ids = Vec::new();
    while let Some(id) = map.next_key::<String>()? {
        if out.map.contains_key(&id) || bad_ids.contains(&id) {
            return Err(duplicate(&id));
        }
        match map.next_value::<LegendText>()?.0 {
            Some(text) => {
                out.map.insert(id, text);
            }
            None => {
                if out.bad.as_ref().is_none_or(|b| id < *b) {
                    out.bad = Some(id.clone());
                }
                bad_ids.push(id);
            }
        }
    }
    Ok(LegendField(Field::Ok(out)))
});

/// A box's edges as seen on the wire.
#[derive(Debug, Default)]
struct RawBox {
    top: Field<f64>,
    bottom: Field<f64>,
    left: Field<f64>,
    right: Field<f64>,
}

struct BoxField(Field<RawBox>);
shape_visitor!(BoxField, BoxVisitor, "a box object",
null => BoxField(Field::Null),
other => BoxField(Field::Bad),
map(map) => {
    let mut b = RawBox::default();
    let mut seen = Seen::default();
    while let Some(key) = map.next_key::<Key>()? {
        match seen.check(key)? {
            KeyName::Top => b.top = num_field(map.next_value()?),
            KeyName::Bottom => b.bottom = num_field(map.next_value()?),
            KeyName::Left => b.left = num_field(map.next_value()?),
            KeyName::Right => b.right = num_field(map.next_value()?),
            _ => {
                map.next_value::<Skip>()?;
            }
        }
    }
    Ok(BoxField(Field::Ok(b)))
});

/// One answer as seen on the wire.
#[derive(Debug, Default)]
struct RawAnswer {
    ty: Field<String>,
    noul: Field<f64>,
    choice: Field<String>,
    probabilities: Probabilities,
    confidence: Field<f64>,
    score: Field<f64>,
    legend: Legend,
    bbox: Field<RawBox>,
}

struct AnswerField(Field<RawAnswer>);
shape_visitor!(AnswerField, AnswerVisitor, "an answer object",
null => AnswerField(Field::Null),
other => AnswerField(Field::Bad),
map(map) => {
    let mut a = RawAnswer::default();
    let mut seen = Seen::default();
    while let Some(key) = map.next_key::<Key>()? {
        match seen.check(key)? {
            KeyName::Type => a.ty = str_field(map.next_value()?),
            KeyName::Noul => a.noul = num_field(map.next_value()?),
            KeyName::Choice => a.choice = str_field(map.next_value()?),
            KeyName::Probabilities => a.probabilities = map.next_value::<ProbabilitiesField>()?.0,
            KeyName::Confidence => a.confidence = num_field(map.next_value()?),
            KeyName::Score => a.score = num_field(map.next_value()?),
            KeyName::Legend => a.legend = map.next_value::<LegendField>()?.0,
            KeyName::Box => a.bbox = map.next_value::<BoxField>()?.0,
            _ => {
                map.next_value::<Skip>()?;
            }
        }
    }
    Ok(AnswerField(Field::Ok(a)))
});

struct AnswersField(Field<BTreeMap<String, Field<RawAnswer>>>);
shape_visitor!(AnswersField, AnswersVisitor, "an object of answers",
null => AnswersField(Field::Null),
other => AnswersField(Field::Bad),
map(map) => {
    let mut out = BTreeMap::new();
    while let Some(key) = map.next_key::<String>()? {
        if out.contains_key(&key) {
            return Err(duplicate(&key));
        }
        let a: AnswerField = map.next_value()?;
        out.insert(key, a.0);
    }
    Ok(AnswersField(Field::Ok(out)))
});

#[derive(Debug, Default)]
struct RawUsage {
    input_tokens: Field<i64>,
    output_tokens: Field<i64>,
    cost: Field<f64>,
}

fn token_field(s: Scalar) -> Field<i64> {
    match s {
        Scalar::Null => Field::Null,
        Scalar::I64(i) => Field::Ok(i),
        Scalar::U64(u) => i64::try_from(u).map_or(Field::Bad, Field::Ok),
        _ => Field::Bad,
    }
}

struct UsageField(Field<RawUsage>);
shape_visitor!(UsageField, UsageVisitor, "a usage object",
null => UsageField(Field::Null),
other => UsageField(Field::Bad),
map(map) => {
    let mut u = RawUsage::default();
    let mut seen = Seen::default();
    while let Some(key) = map.next_key::<Key>()? {
        match seen.check(key)? {
            KeyName::InputTokens => u.input_tokens = token_field(map.next_value()?),
            KeyName::OutputTokens => u.output_tokens = token_field(map.next_value()?),
            KeyName::Cost => u.cost = num_field(map.next_value()?),
            _ => {
                map.next_value::<Skip>()?;
            }
        }
    }
    Ok(UsageField(Field::Ok(u)))
});

/// A whole response as seen on the wire.
#[derive(Debug, Default)]
struct RawDecision {
    is_object: bool,
    model: Field<String>,
    calibrated: Field<bool>,
    answers: Field<BTreeMap<String, Field<RawAnswer>>>,
    usage: Field<RawUsage>,
}

shape_visitor!(RawDecision, DecisionVisitor, "a decision object",
null => RawDecision::default(),
other => RawDecision::default(),
map(map) => {
    let mut d = RawDecision { is_object: true, ..RawDecision::default() };
    let mut seen = Seen::default();
    while let Some(key) = map.next_key::<Key>()? {
        match seen.check(key)? {
            KeyName::Model => d.model = str_field(map.next_value()?),
            KeyName::Calibrated => {
                d.calibrated = match map.next_value::<Scalar>()? {
                    Scalar::Null => Field::Null,
                    Scalar::Bool(b) => Field::Ok(b),
                    _ => Field::Bad,
                }
            }
            KeyName::Answers => d.answers = map.next_value::<AnswersField>()?.0,
            KeyName::Usage => d.usage = map.next_value::<UsageField>()?.0,
            _ => {
                map.next_value::<Skip>()?;
            }
        }
    }
    Ok(d)
});

impl RawDecision {
    /// Applies every rule, in one fixed order, and builds the decision.
    fn finish(
        self,
        default_model: Option<&str>,
        asked: Option<&Questions>,
    ) -> Result<Decoded, ClassifierError> {
        if !self.is_object {
            return Err(msg::decode("response is not a JSON object"));
        }
        let model = match self.model {
            Field::Ok(s) => s,
            Field::Missing | Field::Null => match default_model {
                Some(m) => m.to_string(),
                None => return Err(msg::decode("response has no \"model\"")),
            },
            Field::Bad => return Err(msg::decode("response \"model\" is not a string")),
        };
        let calibrated = match self.calibrated {
            Field::Missing | Field::Null => true,
            Field::Ok(b) => b,
            Field::Bad => return Err(msg::decode("response \"calibrated\" is not a bool")),
        };
        let raw_answers = match self.answers {
            Field::Ok(a) => a,
            Field::Missing => return Err(msg::decode("response has no \"answers\"")),
            Field::Null | Field::Bad => {
                return Err(msg::decode("response \"answers\" is not an object"));
            }
        };
        let mut answers = BTreeMap::new();
        let mut dropped = Vec::new();
        for (key, raw) in raw_answers {
            if asked.is_some_and(|q| !q.contains_key(&key)) {
                dropped.push(key);
                continue;
            }
            let a = finish_answer(&key, raw)?;
            answers.insert(key, a);
        }
        let usage = match self.usage {
            Field::Missing | Field::Null => ClassifierUsage::default(),
            Field::Bad => return Err(msg::decode("response \"usage\" is not an object")),
            Field::Ok(u) => ClassifierUsage {
                input_tokens: tokens(u.input_tokens, "input_tokens")?,
                output_tokens: tokens(u.output_tokens, "output_tokens")?,
                cost: match u.cost {
                    Field::Missing | Field::Null => None,
                    Field::Ok(c) => Some(c),
                    Field::Bad => {
                        return Err(msg::decode(
                            "response usage \"cost\" is not a finite number",
                        ));
                    }
                },
            },
        };
        Ok(Decoded {
            decision: Decision {
                model,
                answers,
                usage,
                calibrated,
            },
            dropped,
        })
    }
}

fn tokens(f: Field<i64>, name: &str) -> Result<i64, ClassifierError> {
    match f {
        Field::Missing | Field::Null => Ok(0),
        Field::Ok(n) => Ok(n),
        Field::Bad => Err(msg::decode(format!(
            "response usage {name:?} is not a whole number"
        ))),
    }
}

fn number(key: &str, f: Field<f64>, ty: &str, field: &str) -> Result<f64, ClassifierError> {
    match f {
        Field::Ok(n) => Ok(n),
        Field::Missing | Field::Null => Err(msg::answer(
            key,
            format!("{ty} answer has no {field:?} number"),
        )),
        Field::Bad => Err(msg::answer(
            key,
            format!("{ty} answer {field:?} is not a finite number"),
        )),
    }
}

fn probabilities(key: &str, f: Probabilities) -> Result<BTreeMap<String, f64>, ClassifierError> {
    match f {
        Field::Missing | Field::Null => Ok(BTreeMap::new()),
        Field::Bad => Err(msg::answer(key, "\"probabilities\" is not an object")),
        Field::Ok(Entries { bad: Some(id), .. }) => Err(msg::answer(
            key,
            format!("probability {id:?} is not a finite number"),
        )),
        Field::Ok(Entries { map, bad: None }) => Ok(map),
    }
}

fn finish_answer(key: &str, raw: Field<RawAnswer>) -> Result<DecisionAnswer, ClassifierError> {
    let a = match raw {
        Field::Ok(a) => a,
        _ => return Err(msg::answer(key, "answer is not a JSON object")),
    };
    let ty = match &a.ty {
        Field::Ok(t) => t.as_str(),
        Field::Missing | Field::Null => return Err(msg::answer(key, "answer has no \"type\"")),
        Field::Bad => return Err(msg::answer(key, "answer \"type\" is not a string")),
    };
    match ty {
        "noul" => Ok(DecisionAnswer::Noul(NoulAnswer {
            noul: number(key, a.noul, "noul", "noul")?,
        })),
        "choice" => {
            let choice = match a.choice {
                Field::Ok(s) => s,
                f if f.absent() => return Err(msg::answer(key, "choice answer has no \"choice\"")),
                _ => return Err(msg::answer(key, "choice answer \"choice\" is not a string")),
            };
            let probabilities = probabilities(key, a.probabilities)?;
            let confidence = number(key, a.confidence, "choice", "confidence")?;
            Ok(DecisionAnswer::Choice(ChoiceAnswer {
                choice,
                near_uniform: near_uniform(&probabilities),
                probabilities,
                confidence,
            }))
        }
        "score" => {
            let score = number(key, a.score, "score", "score")?;
            let legend = match a.legend {
                Field::Missing | Field::Null => BTreeMap::new(),
                Field::Bad => return Err(msg::answer(key, "\"legend\" is not an object")),
                Field::Ok(Entries { bad: Some(lvl), .. }) => {
                    return Err(msg::answer(key, format!("legend {lvl:?} is not a string")));
                }
                Field::Ok(Entries { map, bad: None }) => map,
            };
            let probabilities = probabilities(key, a.probabilities)?;
            let confidence = number(key, a.confidence, "score", "confidence")?;
            Ok(DecisionAnswer::Score(ScoreAnswer {
                score,
                legend,
                probabilities,
                confidence,
            }))
        }
        "box" => {
            let b = match a.bbox {
                Field::Ok(b) => b,
                f if f.absent() => return Err(msg::answer(key, "box answer has no \"box\"")),
                _ => return Err(msg::answer(key, "box answer \"box\" is not an object")),
            };
            let coordinates = BoxCoordinates {
                top: number(key, b.top, "box", "top")?,
                bottom: number(key, b.bottom, "box", "bottom")?,
                left: number(key, b.left, "box", "left")?,
                right: number(key, b.right, "box", "right")?,
            };
            let confidence = match a.confidence {
                Field::Ok(c) => Some(c),
                Field::Missing | Field::Null => None,
                Field::Bad => {
                    return Err(msg::answer(
                        key,
                        "box answer \"confidence\" is not a finite number",
                    ));
                }
            };
            Ok(DecisionAnswer::Box(BoxAnswer {
                coordinates,
                confidence,
            }))
        }
        other => Err(msg::answer(
            key,
            format!("answer has unknown type {other:?} (want noul|choice|score|box)"),
        )),
    }
}
