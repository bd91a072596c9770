//! Answers and the [`Decision`]: the wire form back (strict decoding, with
//! `Decision::from_slice`/`from_value`, lives in `wire.rs` beside the decoder),
//! typed accessors, `near_uniform`, and the coherence check against the
//! questions asked. Pure: no I/O.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::question::{Question, Questions};
use crate::error::{ClassifierError, msg};
use crate::usage::ClassifierUsage;

/// How far from 1/n every probability may be for a distribution to count as
/// near-uniform (inclusive).
pub const NEAR_UNIFORM_TOLERANCE: f64 = 0.05;

/// Whether a distribution is flat: max over i of |p_i − 1/n| ≤ 0.05, inclusive,
/// over the map exactly as given (never sorted, renormalised or rounded).
/// One option is trivially uniform; an empty map is not a distribution at all.
///
/// The comparison allows for the rounding error of binary floating point
/// (a few ulps), so decimal inputs that sit exactly on the tolerance, such as
/// 0.30 against 1/4, count as on it.
///
/// ```
/// use std::collections::BTreeMap;
/// use toolnexus::classifier::near_uniform;
///
/// let p: BTreeMap<String, f64> =
///     [("a".into(), 0.30), ("b".into(), 0.25), ("c".into(), 0.25), ("d".into(), 0.20)].into();
/// assert!(near_uniform(&p));
/// let p: BTreeMap<String, f64> = [("a".into(), 0.97), ("b".into(), 0.03)].into();
/// assert!(!near_uniform(&p));
/// ```
pub fn near_uniform(probabilities: &BTreeMap<String, f64>) -> bool {
    near_uniform_values(probabilities.values().copied(), probabilities.len())
}

/// The confidence of a choice over `n` options whose top probability is `m`,
/// by TypeSafe's documented formula: `(m − 1/n) / (1 − 1/n)`, so a flat
/// distribution is 0 and a certain one 1, whatever `n` (1 when `n ≤ 1`).
/// Clamped to [0, 1] against rounding; a NaN probability gives NaN (never a
/// confident-looking number). Every style that computes a choice distribution
/// itself (the local styles, log-probability Llm mode, the calibrating
/// wrapper) reports this, so a confidence means the same thing whoever
/// produced it; a decoded `confidence` is taken as sent.
///
/// ```
/// use toolnexus::classifier::choice_confidence;
///
/// assert_eq!(choice_confidence(&[1.0]), 1.0);
/// assert_eq!(choice_confidence(&[0.5, 0.5]), 0.0);
/// assert!((choice_confidence(&[0.7, 0.3]) - 0.4).abs() < 1e-12);
/// assert!((choice_confidence(&[0.6, 0.3, 0.1]) - 0.4).abs() < 1e-12);
/// ```
pub fn choice_confidence(probabilities: &[f64]) -> f64 {
    let n = probabilities.len();
    if n <= 1 {
        return 1.0;
    }
    if probabilities.iter().any(|p| p.is_nan()) {
        return f64::NAN;
    }
    let m = probabilities
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    let uniform = 1.0 / n as f64;
    ((m - uniform) / (1.0 - uniform)).clamp(0.0, 1.0)
}

/// The confidence of a score over `n` ordered levels with probabilities
/// `p[0..n]` (lowest level first), by TypeSafe's documented formula:
/// `max(0, 1 − Σ pᵢ·|i − k| / U(n))`, where `k` is the mode (the first most
/// probable level on a tie) and `U(n) = Σᵢ |i − (n−1)/2| / n` is the expected
/// distance from the middle under a flat distribution (1 when `n ≤ 1`). All
/// mass on one level is 1; mass spread as far as a flat distribution is 0.
/// A NaN probability gives NaN.
///
/// ```
/// use toolnexus::classifier::score_confidence;
///
/// assert_eq!(score_confidence(&[0.0, 1.0, 0.0]), 1.0);
/// assert_eq!(score_confidence(&[0.5, 0.5]), 0.0);
/// // n = 3: U = 2/3; mode 0; spread 0.3·1 + 0.1·2 = 0.5; 1 − 0.5 / (2/3) = 0.25.
/// assert!((score_confidence(&[0.6, 0.3, 0.1]) - 0.25).abs() < 1e-12);
/// ```
pub fn score_confidence(probabilities: &[f64]) -> f64 {
    let n = probabilities.len();
    if n <= 1 {
        return 1.0;
    }
    if probabilities.iter().any(|p| p.is_nan()) {
        return f64::NAN;
    }
    let mut k = 0;
    for (i, &p) in probabilities.iter().enumerate() {
        if p > probabilities[k] {
            k = i;
        }
    }
    let middle = (n as f64 - 1.0) / 2.0;
    let flat: f64 = (0..n).map(|i| (i as f64 - middle).abs()).sum::<f64>() / n as f64;
    let spread: f64 = probabilities
        .iter()
        .enumerate()
        .map(|(i, &p)| p * (i as f64 - k as f64).abs())
        .sum();
    (1.0 - spread / flat).clamp(0.0, 1.0)
}

pub(crate) fn near_uniform_values(values: impl Iterator<Item = f64>, n: usize) -> bool {
    match n {
        0 => false,
        1 => true,
        _ => {
            let uniform = 1.0 / n as f64;
            // |p − 1/n| is computed in binary, so a decimal deviation of exactly 0.05
            // can come out a few ulps above it (0.30 − 0.25 = 0.04999…, 0.20 − 0.25 =
            // −0.05000000000000002). Allow that much and no more: 1e-12 is far below
            // any meaningful difference in a probability.
            const SLACK: f64 = 1e-12;
            let mut worst: f64 = 0.0;
            for p in values {
                if p.is_nan() {
                    return false;
                }
                worst = worst.max((p - uniform).abs());
            }
            worst <= NEAR_UNIFORM_TOLERANCE + SLACK
        }
    }
}

/// A noul answer: P(statement holds). There is no confidence: the number IS the answer.
///
/// ```
/// use toolnexus::classifier::Decision;
///
/// let d = Decision::from_slice(
///     br#"{"model":"m","answers":{"spam":{"type":"noul","noul":0.93}}}"#,
/// )?;
/// assert_eq!(d.noul("spam")?.noul, 0.93);
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct NoulAnswer {
    /// The probability that the statement holds, in [0, 1].
    pub noul: f64,
}

/// A choice answer: the picked option and the full distribution.
///
/// ```
/// use toolnexus::classifier::Decision;
///
/// let d = Decision::from_slice(br#"{"model":"m","answers":{"desk":{"type":"choice",
///     "choice":"billing","probabilities":{"billing":0.9,"shipping":0.1},"confidence":0.8}}}"#)?;
/// let desk = d.choice("desk")?;
/// assert_eq!(desk.choice, "billing");
/// assert!(!desk.near_uniform);
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ChoiceAnswer {
    /// The picked option id.
    pub choice: String,
    /// Option id → probability, exactly as returned.
    pub probabilities: BTreeMap<String, f64>,
    /// How sure the model is about the question (not about this answer alone).
    pub confidence: f64,
    /// Derived on decode by [`near_uniform`]; never read from the wire.
    pub near_uniform: bool,
}

/// A score answer: an expected level on the rubric, which may fall between levels.
///
/// ```
/// use toolnexus::classifier::Decision;
///
/// let d = Decision::from_slice(br#"{"model":"m","answers":{"risk":{"type":"score",
///     "score":1.2,"legend":{"0":"low","1":"mid","2":"high"},
///     "probabilities":{"0":0.1,"1":0.6,"2":0.3},"confidence":0.7}}}"#)?;
/// assert_eq!(d.score("risk")?.levels(), ["low", "mid", "high"]);
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreAnswer {
    /// The expected level, in [0, levels − 1].
    pub score: f64,
    /// Level index (as a decimal string) → the level's text. A level whose
    /// content is structured (a JSON object or array) is kept as its canonical
    /// JSON text.
    pub legend: BTreeMap<String, String>,
    /// Level index (as a decimal string) → probability.
    pub probabilities: BTreeMap<String, f64>,
    /// How sure the model is about the question.
    pub confidence: f64,
}

impl ScoreAnswer {
    /// The answer a distribution `p` over the levels (in level order) gives:
    /// the expected level as `score`, each level's text and probability under
    /// its index, and `confidence` as given.
    ///
    /// ```
    /// use toolnexus::classifier::ScoreAnswer;
    ///
    /// let a = ScoreAnswer::from_distribution(&[0.2, 0.8], ["low", "high"], 0.6);
    /// assert!((a.score - 0.8).abs() < 1e-12);
    /// assert_eq!(a.legend["1"], "high");
    /// assert_eq!(a.probabilities["0"], 0.2);
    /// ```
    pub fn from_distribution<L: std::fmt::Display>(
        p: &[f64],
        levels: impl IntoIterator<Item = L>,
        confidence: f64,
    ) -> ScoreAnswer {
        ScoreAnswer {
            score: p.iter().enumerate().map(|(i, x)| i as f64 * x).sum(),
            legend: levels
                .into_iter()
                .enumerate()
                .map(|(i, l)| (i.to_string(), l.to_string()))
                .collect(),
            probabilities: p
                .iter()
                .enumerate()
                .map(|(i, x)| (i.to_string(), *x))
                .collect(),
            confidence,
        }
    }

    /// The legend's texts in numeric level order: `"2"` before `"10"`. Keys that
    /// are not numbers come last, in their map order.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use toolnexus::classifier::ScoreAnswer;
    ///
    /// let legend: BTreeMap<String, String> =
    ///     (0..11).map(|i| (i.to_string(), format!("level {i}"))).collect();
    /// let a = ScoreAnswer { score: 0.0, legend, probabilities: BTreeMap::new(), confidence: 1.0 };
    /// assert_eq!(a.levels()[2], "level 2");
    /// assert_eq!(a.levels()[10], "level 10");
    /// ```
    pub fn levels(&self) -> Vec<String> {
        let mut keyed: Vec<(Option<u64>, &String, &String)> = self
            .legend
            .iter()
            .map(|(k, v)| (k.trim().parse::<u64>().ok(), k, v))
            .collect();
        keyed.sort_by(|a, b| match (a.0, b.0) {
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.1.cmp(b.1),
        });
        keyed.into_iter().map(|(_, _, v)| v.clone()).collect()
    }
}

/// A box answer: where something is in an image, with the model's confidence
/// when it gives one.
///
/// ```
/// use toolnexus::classifier::Decision;
///
/// let d = Decision::from_slice(br#"{"model":"m","answers":{"dent":{"type":"box",
///     "box":{"top":0.2,"bottom":0.66,"left":0.19,"right":0.68},"confidence":null}}}"#)?;
/// let dent = d.bounding_box("dent")?;
/// assert_eq!(dent.coordinates.bottom, 0.66);
/// assert_eq!(dent.confidence, None);
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct BoxAnswer {
    /// The box's edges (wire key `"box"`).
    pub coordinates: BoxCoordinates,
    /// How sure the model is, in [0, 1]; `None` when it does not say (null on
    /// the wire), which is not the same as 0.
    pub confidence: Option<f64>,
}

/// A box's edges as fractions of the image: `top` and `bottom` of its height
/// from the top, `left` and `right` of its width from the left, each in [0, 1].
///
/// ```
/// use toolnexus::classifier::BoxCoordinates;
///
/// let b = BoxCoordinates { top: 0.2, bottom: 0.66, left: 0.19, right: 0.68 };
/// assert!((b.bottom - b.top) > 0.4);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoxCoordinates {
    /// Top edge, as a fraction of the image height from the top.
    pub top: f64,
    /// Bottom edge, as a fraction of the image height from the top.
    pub bottom: f64,
    /// Left edge, as a fraction of the image width from the left.
    pub left: f64,
    /// Right edge, as a fraction of the image width from the left.
    pub right: f64,
}

/// One typed answer.
///
/// ```
/// use toolnexus::classifier::{DecisionAnswer, NoulAnswer};
///
/// let a = DecisionAnswer::Noul(NoulAnswer { noul: 0.2 });
/// assert_eq!(a.answer_type(), "noul");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum DecisionAnswer {
    /// The answer to a noul question.
    Noul(NoulAnswer),
    /// The answer to a choice question.
    Choice(ChoiceAnswer),
    /// The answer to a score question.
    Score(ScoreAnswer),
    /// The answer to a box question.
    Box(BoxAnswer),
}

impl DecisionAnswer {
    /// The wire discriminator: `"noul"`, `"choice"`, `"score"` or `"box"`.
    ///
    /// ```
    /// use toolnexus::classifier::{DecisionAnswer, NoulAnswer};
    /// assert_eq!(DecisionAnswer::Noul(NoulAnswer { noul: 1.0 }).answer_type(), "noul");
    /// ```
    pub fn answer_type(&self) -> &'static str {
        match self {
            DecisionAnswer::Noul(_) => "noul",
            DecisionAnswer::Choice(_) => "choice",
            DecisionAnswer::Score(_) => "score",
            DecisionAnswer::Box(_) => "box",
        }
    }

    /// The wire form of this answer (`near_uniform` is not written: it is derived).
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::{DecisionAnswer, NoulAnswer};
    /// assert_eq!(
    ///     DecisionAnswer::Noul(NoulAnswer { noul: 0.5 }).to_value(),
    ///     json!({"type": "noul", "noul": 0.5})
    /// );
    /// ```
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), Value::from(self.answer_type()));
        match self {
            DecisionAnswer::Noul(a) => {
                m.insert("noul".into(), Value::from(a.noul));
            }
            DecisionAnswer::Choice(a) => {
                m.insert("choice".into(), Value::from(a.choice.as_str()));
                m.insert("probabilities".into(), probs_value(&a.probabilities));
                m.insert("confidence".into(), Value::from(a.confidence));
            }
            DecisionAnswer::Score(a) => {
                m.insert("score".into(), Value::from(a.score));
                let legend = a
                    .legend
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
                    .collect();
                m.insert("legend".into(), Value::Object(legend));
                m.insert("probabilities".into(), probs_value(&a.probabilities));
                m.insert("confidence".into(), Value::from(a.confidence));
            }
            DecisionAnswer::Box(a) => {
                let c = &a.coordinates;
                let mut b = Map::new();
                b.insert("bottom".into(), Value::from(c.bottom));
                b.insert("left".into(), Value::from(c.left));
                b.insert("right".into(), Value::from(c.right));
                b.insert("top".into(), Value::from(c.top));
                m.insert("box".into(), Value::Object(b));
                m.insert(
                    "confidence".into(),
                    a.confidence.map_or(Value::Null, Value::from),
                );
            }
        }
        Value::Object(m)
    }
}

fn probs_value(p: &BTreeMap<String, f64>) -> Value {
    Value::Object(
        p.iter()
            .map(|(k, v)| (k.clone(), Value::from(*v)))
            .collect(),
    )
}

/// One typed answer per question key, plus who answered, usage, and whether the
/// probabilities are calibrated.
///
/// Read it through [`noul`](Decision::noul), [`choice`](Decision::choice) and
/// [`score`](Decision::score): they fail loudly, with different messages for an
/// absent key and a wrong type, instead of handing back a default.
///
/// A decision interprets; it never authorises. Keep limits, permissions and
/// allow-lists in your code and let the decision inform them.
///
/// ```
/// use toolnexus::classifier::Decision;
///
/// let d = Decision::from_slice(br#"{"model":"jev-1.13","answers":{
///     "risk":{"type":"score","score":1.21,"legend":{"0":"a","1":"b","2":"c"},
///             "probabilities":{"0":0.1,"1":0.59,"2":0.31},"confidence":0.71}}}"#)?;
/// assert!(d.calibrated, "absent calibrated decodes as true");
/// assert_eq!(
///     d.noul("risk").unwrap_err().to_string(),
///     "classifier: answer \"risk\" is a score answer, not noul"
/// );
/// assert_eq!(
///     d.score("urgency").unwrap_err().to_string(),
///     "classifier: no answer \"urgency\" in this decision"
/// );
/// assert_eq!(Decision::from_value(&d.to_value())?, d);
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// What actually answered; may be more specific than the model asked for.
    pub model: String,
    /// The answers under the caller's question keys.
    pub answers: BTreeMap<String, DecisionAnswer>,
    /// Tokens and cost.
    pub usage: ClassifierUsage,
    /// Whether the probabilities are calibrated. Advisory: calibrated is not
    /// correct, and a threshold tuned on one backend does not transfer to another.
    pub calibrated: bool,
}

impl Decision {
    /// The wire form: what a tape or a Static recording stores. Round-trips
    /// through [`Decision::from_value`]. `cost` is written only when known.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use toolnexus::classifier::{ClassifierUsage, Decision};
    ///
    /// let d = Decision {
    ///     model: "m".into(),
    ///     answers: BTreeMap::new(),
    ///     usage: ClassifierUsage::default(),
    ///     calibrated: false,
    /// };
    /// let v = d.to_value();
    /// assert_eq!(v["calibrated"], false);
    /// assert!(v["usage"].get("cost").is_none());
    /// ```
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("model".into(), Value::from(self.model.as_str()));
        m.insert(
            "answers".into(),
            Value::Object(
                self.answers
                    .iter()
                    .map(|(k, a)| (k.clone(), a.to_value()))
                    .collect(),
            ),
        );
        let mut u = Map::new();
        u.insert("input_tokens".into(), Value::from(self.usage.input_tokens));
        u.insert(
            "output_tokens".into(),
            Value::from(self.usage.output_tokens),
        );
        if let Some(c) = self.usage.cost {
            u.insert("cost".into(), Value::from(c));
        }
        m.insert("usage".into(), Value::Object(u));
        m.insert("calibrated".into(), Value::from(self.calibrated));
        Value::Object(m)
    }

    /// The noul answer under `key`, or an error that says whether the key is absent
    /// or holds another type. Never a default.
    ///
    /// ```
    /// use toolnexus::classifier::Decision;
    /// let d = Decision::from_slice(br#"{"model":"m","answers":{"q":{"type":"noul","noul":0.1}}}"#)?;
    /// assert_eq!(d.noul("q")?.noul, 0.1);
    /// assert!(d.noul("other").is_err());
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn noul(&self, key: &str) -> Result<&NoulAnswer, ClassifierError> {
        match self.answer(key)? {
            DecisionAnswer::Noul(a) => Ok(a),
            other => Err(msg::wrong_type(key, other.answer_type(), "noul")),
        }
    }

    /// The choice answer under `key` (see [`Decision::noul`] for the failures).
    ///
    /// ```
    /// use toolnexus::classifier::Decision;
    /// let d = Decision::from_slice(br#"{"model":"m","answers":{"q":{"type":"noul","noul":0.1}}}"#)?;
    /// let e = d.choice("q").unwrap_err();
    /// assert_eq!(e.to_string(), "classifier: answer \"q\" is a noul answer, not choice");
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn choice(&self, key: &str) -> Result<&ChoiceAnswer, ClassifierError> {
        match self.answer(key)? {
            DecisionAnswer::Choice(a) => Ok(a),
            other => Err(msg::wrong_type(key, other.answer_type(), "choice")),
        }
    }

    /// The score answer under `key` (see [`Decision::noul`] for the failures).
    ///
    /// ```
    /// use toolnexus::classifier::Decision;
    /// let d = Decision::from_slice(br#"{"model":"m","answers":{}}"#)?;
    /// let e = d.score("risk").unwrap_err();
    /// assert_eq!(e.to_string(), "classifier: no answer \"risk\" in this decision");
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn score(&self, key: &str) -> Result<&ScoreAnswer, ClassifierError> {
        match self.answer(key)? {
            DecisionAnswer::Score(a) => Ok(a),
            other => Err(msg::wrong_type(key, other.answer_type(), "score")),
        }
    }

    /// The box answer under `key` (see [`Decision::noul`] for the failures).
    ///
    /// ```
    /// use toolnexus::classifier::Decision;
    /// let d = Decision::from_slice(br#"{"model":"m","answers":{"q":{"type":"noul","noul":0.1}}}"#)?;
    /// let e = d.bounding_box("q").unwrap_err();
    /// assert_eq!(e.to_string(), "classifier: answer \"q\" is a noul answer, not box");
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn bounding_box(&self, key: &str) -> Result<&BoxAnswer, ClassifierError> {
        match self.answer(key)? {
            DecisionAnswer::Box(a) => Ok(a),
            other => Err(msg::wrong_type(key, other.answer_type(), "box")),
        }
    }

    /// The answer under `key`, whatever its type, or the absent-key error.
    ///
    /// ```
    /// use toolnexus::classifier::Decision;
    /// let d = Decision::from_slice(br#"{"model":"m","answers":{"q":{"type":"noul","noul":0.1}}}"#)?;
    /// assert_eq!(d.answer("q")?.answer_type(), "noul");
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn answer(&self, key: &str) -> Result<&DecisionAnswer, ClassifierError> {
        self.answers
            .get(key)
            .ok_or_else(|| msg::missing_answer(key))
    }
}

/// What [`check_coherence`] removed: answers under keys that were never asked.
pub(crate) type Dropped = Vec<String>;

/// Checks a decision against the questions asked and drops answers for keys that
/// were never asked (returning their keys so the caller can report them).
///
/// Errors, each naming the key: an answer whose type differs from its question's;
/// a non-finite number; a probability or confidence outside [0, 1]; a choice (or a
/// probability) for an option that was not offered; a score outside
/// [0, levels − 1] or a score probability for a level that does not exist.
/// Missing answers are not an error here: the typed accessors report them.
pub(crate) fn check_coherence(
    decision: &mut Decision,
    questions: &Questions,
) -> Result<Dropped, ClassifierError> {
    let mut dropped = Vec::new();
    decision.answers.retain(|k, _| {
        let keep = questions.contains_key(k);
        if !keep {
            dropped.push(k.clone());
        }
        keep
    });
    for (key, answer) in &decision.answers {
        let question = &questions[key];
        check_answer(key, answer, question)?;
    }
    Ok(dropped)
}

fn unit(key: &str, what: &str, v: f64) -> Result<(), ClassifierError> {
    if !v.is_finite() {
        return Err(msg::incoherent(
            key,
            format!("{what} is not a finite number"),
        ));
    }
    if !(0.0..=1.0).contains(&v) {
        return Err(msg::incoherent(
            key,
            format!("{what} {v} is outside [0, 1]"),
        ));
    }
    Ok(())
}

fn check_answer(
    key: &str,
    answer: &DecisionAnswer,
    question: &Question,
) -> Result<(), ClassifierError> {
    match (answer, question) {
        (DecisionAnswer::Noul(a), Question::Noul(_)) => unit(key, "noul", a.noul),
        (DecisionAnswer::Choice(a), Question::Choice(q)) => {
            if !q.criteria.contains_key(&a.choice) {
                return Err(msg::incoherent(
                    key,
                    format!("choice {:?} is not one of the offered options", a.choice),
                ));
            }
            unit(key, "confidence", a.confidence)?;
            for (id, p) in &a.probabilities {
                if !q.criteria.contains_key(id) {
                    return Err(msg::incoherent(
                        key,
                        format!("probability for {id:?}, which is not one of the offered options"),
                    ));
                }
                unit(key, &format!("probability {id:?}"), *p)?;
            }
            Ok(())
        }
        (DecisionAnswer::Score(a), Question::Score(q)) => {
            let top = q.criteria.len().saturating_sub(1) as f64;
            if !a.score.is_finite() {
                return Err(msg::incoherent(key, "score is not a finite number"));
            }
            if !(0.0..=top).contains(&a.score) {
                return Err(msg::incoherent(
                    key,
                    format!("score {} is outside [0, {top}]", a.score),
                ));
            }
            unit(key, "confidence", a.confidence)?;
            for (lvl, p) in &a.probabilities {
                let in_range = lvl
                    .trim()
                    .parse::<usize>()
                    .is_ok_and(|i| i < q.criteria.len());
                if !in_range {
                    return Err(msg::incoherent(
                        key,
                        format!("probability for level {lvl:?}, which the rubric does not have"),
                    ));
                }
                unit(key, &format!("probability {lvl:?}"), *p)?;
            }
            Ok(())
        }
        (DecisionAnswer::Box(a), Question::Box(_)) => {
            let c = &a.coordinates;
            for (edge, v) in [
                ("top", c.top),
                ("bottom", c.bottom),
                ("left", c.left),
                ("right", c.right),
            ] {
                unit(key, &format!("box {edge}"), v)?;
            }
            if c.top > c.bottom {
                return Err(msg::incoherent(
                    key,
                    format!("box top {} is below its bottom {}", c.top, c.bottom),
                ));
            }
            if c.left > c.right {
                return Err(msg::incoherent(
                    key,
                    format!("box left {} is right of its right {}", c.left, c.right),
                ));
            }
            if let Some(conf) = a.confidence {
                unit(key, "confidence", conf)?;
            }
            Ok(())
        }
        (a, q) => Err(msg::incoherent(
            key,
            format!(
                "answer is of type {}, but the question asks for {}",
                a.answer_type(),
                q.kind()
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SPEC §16's formulas, by hand: n = 1, 2, 3, 10; ties at the mode.
    #[test]
    fn confidence_follows_the_documented_formulas() {
        #[rustfmt::skip]
        let choice: &[(&[f64], f64)] = &[
            (&[1.0], 1.0),
            (&[0.5, 0.5], 0.0),
            (&[0.9, 0.1], 0.8),           // (0.9 − 0.5) / 0.5
            (&[0.2, 0.5, 0.3], 0.25),     // (0.5 − 1/3) / (2/3)
            (&[0.4, 0.4, 0.2], 0.1),      // a tie at the top: (0.4 − 1/3) / (2/3)
            (&[0.1; 10], 0.0),
            (&[0.55, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05], 0.5), // (0.55 − 0.1) / 0.9
        ];
        for (p, want) in choice {
            let got = choice_confidence(p);
            assert!((got - want).abs() < 1e-12, "choice {p:?}: {got} != {want}");
        }
        #[rustfmt::skip]
        let score: &[(&[f64], f64)] = &[
            (&[1.0], 1.0),
            (&[0.5, 0.5], 0.0),           // U(2) = 0.5, mode 0, spread 0.5
            (&[0.8, 0.2], 0.6),           // 1 − 0.2 / 0.5
            (&[0.25, 0.5, 0.25], 0.25),   // U(3) = 2/3, spread 0.5
            (&[0.4, 0.2, 0.4], 0.0),      // tie at the mode: the first (0); spread 0.2 + 0.8 = 1.0 ≥ U
            (&[0.2, 0.4, 0.4], 0.1),      // tie: mode 1; spread 0.2 + 0.4 = 0.6; 1 − 0.6 / (2/3)
            (&[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], 1.0),
            (&[0.1; 10], 0.0),            // flat: spread from mode 0 is 4.5 > U(10) = 2.5
            (&[0.0, 0.0, 0.0, 0.0, 0.5, 0.5, 0.0, 0.0, 0.0, 0.0], 0.8), // mode 4, spread 0.5, 1 − 0.5 / 2.5
        ];
        for (p, want) in score {
            let got = score_confidence(p);
            assert!((got - want).abs() < 1e-12, "score {p:?}: {got} != {want}");
        }
        assert!(choice_confidence(&[f64::NAN, 0.5]).is_nan());
        assert!(score_confidence(&[0.5, f64::NAN]).is_nan());
    }

    fn p(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn near_uniform_boundaries() {
        let table: &[(&str, BTreeMap<String, f64>, bool)] = &[
            (
                "seed: at the tolerance",
                p(&[("a", 0.30), ("b", 0.25), ("c", 0.25), ("d", 0.20)]),
                true,
            ),
            ("seed: just outside", p(&[("a", 0.56), ("b", 0.44)]), false),
            ("seed: decisive", p(&[("a", 0.97), ("b", 0.03)]), false),
            ("seed: one option", p(&[("only", 0.02)]), true),
            ("seed: empty", p(&[]), false),
            (
                "two at exactly 0.55/0.45",
                p(&[("a", 0.55), ("b", 0.45)]),
                true,
            ),
            (
                "two just past",
                p(&[("a", 0.5500001), ("b", 0.4499999)]),
                false,
            ),
            ("thirds", p(&[("a", 0.34), ("b", 0.33), ("c", 0.33)]), true),
            (
                "thirds, one at +0.05",
                p(&[("a", 1.0 / 3.0 + 0.05), ("b", 0.3), ("c", 0.3)]),
                true,
            ),
            (
                "thirds, one past",
                p(&[("a", 0.3834), ("b", 0.3083), ("c", 0.3083)]),
                false,
            ),
            ("never renormalised", p(&[("a", 0.05), ("b", 0.05)]), false),
            (
                "nan is not uniform",
                p(&[("a", f64::NAN), ("b", 0.5)]),
                false,
            ),
            (
                "ten at 0.15/0.05",
                p(&[
                    ("0", 0.15),
                    ("1", 0.05),
                    ("2", 0.1),
                    ("3", 0.1),
                    ("4", 0.1),
                    ("5", 0.1),
                    ("6", 0.1),
                    ("7", 0.1),
                    ("8", 0.1),
                    ("9", 0.1),
                ]),
                true,
            ),
        ];
        for (name, probs, want) in table {
            assert_eq!(near_uniform(probs), *want, "{name}");
        }
    }

    #[test]
    fn levels_sort_numerically() {
        let legend: BTreeMap<String, String> =
            [("10", "ten"), ("2", "two"), ("0", "zero"), ("x", "odd")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        let a = ScoreAnswer {
            score: 0.0,
            legend,
            probabilities: BTreeMap::new(),
            confidence: 1.0,
        };
        assert_eq!(a.levels(), ["zero", "two", "ten", "odd"]);
    }
}
