//! Bands: where an answer stops being a guess. [`ask`] evaluates once and bands
//! every answer. Banding itself is pure.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use crate::classifier::{
    BoxCoordinates, ChoiceAnswer, Classifier, ClassifierError, Decision, DecisionAnswer,
    EvalContext, NoulAnswer, Questions, ScoreAnswer, msg,
};

/// The cut points that turn a number into a sure or an uncertain reading.
///
/// Exclusive on the confident side: a noul below `low` is [`Verdict::No`], above
/// `high` is [`Verdict::Yes`], anything else (including exactly `low` and exactly
/// `high`) is [`Verdict::Uncertain`]. A choice is sure only when its confidence is
/// above `high` **and** its distribution is not near-uniform; a score is sure when
/// its confidence is above `high`. A NaN is never sure.
///
/// Bands tuned against one backend do not transfer to another: calibrated or not,
/// each model spreads its probabilities its own way.
///
/// ```
/// use toolnexus::judge::{Bands, Verdict};
///
/// let b = Bands::default();
/// assert_eq!((b.low, b.high), (0.30, 0.70));
/// assert_eq!(b.noul(0.29), Verdict::No);
/// assert_eq!(b.noul(0.30), Verdict::Uncertain);
/// assert_eq!(b.noul(0.70), Verdict::Uncertain);
/// assert_eq!(b.noul(0.71), Verdict::Yes);
/// Bands { low: 0.1, high: 0.9 }.check()?;
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bands {
    /// A noul strictly below this is "no".
    pub low: f64,
    /// A noul, or a choice's or score's confidence, strictly above this is sure.
    /// The confidence read is the answer's own: as the backend sent it, or, where
    /// toolnexus computed the distribution, SPEC §16's formulas
    /// ([`choice_confidence`](crate::classifier::choice_confidence),
    /// [`score_confidence`](crate::classifier::score_confidence)): 0 for a flat
    /// distribution, 1 for a certain one, whatever the number of options.
    pub high: f64,
}

/// The default lower cut.
///
/// ```
/// assert_eq!(toolnexus::judge::Bands::default().low, toolnexus::judge::DEFAULT_LOW);
/// ```
pub const DEFAULT_LOW: f64 = 0.30;
/// The default upper cut.
///
/// ```
/// assert_eq!(toolnexus::judge::Bands::default().high, toolnexus::judge::DEFAULT_HIGH);
/// ```
pub const DEFAULT_HIGH: f64 = 0.70;

impl Default for Bands {
    fn default() -> Self {
        Bands {
            low: DEFAULT_LOW,
            high: DEFAULT_HIGH,
        }
    }
}

/// A noul answer read through [`Bands`].
///
/// ```
/// use toolnexus::judge::{Bands, Verdict};
///
/// let v = Bands::default().noul(0.93);
/// assert_eq!(v, Verdict::Yes);
/// assert_eq!(v.to_string(), "yes");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Verdict {
    /// Above `high`.
    Yes,
    /// Below `low`.
    No,
    /// Between the cuts, inclusive, or not a number.
    Uncertain,
}

impl Verdict {
    /// `"yes"`, `"no"` or `"uncertain"`.
    ///
    /// ```
    /// assert_eq!(toolnexus::judge::Verdict::No.as_str(), "no");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Yes => "yes",
            Verdict::No => "no",
            Verdict::Uncertain => "uncertain",
        }
    }

    /// Whether the verdict is yes or no.
    ///
    /// ```
    /// assert!(!toolnexus::judge::Verdict::Uncertain.is_sure());
    /// ```
    pub fn is_sure(self) -> bool {
        self != Verdict::Uncertain
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One answer read through [`Bands`], with the raw numbers it was read from.
///
/// ```
/// use toolnexus::classifier::{DecisionAnswer, NoulAnswer};
/// use toolnexus::judge::{Banded, Bands, Verdict};
///
/// let b = Bands::default().band(&DecisionAnswer::Noul(NoulAnswer { noul: 0.05 }));
/// assert_eq!(b, Banded::Noul { noul: 0.05, verdict: Verdict::No });
/// assert!(b.is_sure());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Banded {
    /// A noul: its probability and the verdict.
    Noul {
        /// P(statement holds), as answered.
        noul: f64,
        /// Yes, no or uncertain.
        verdict: Verdict,
    },
    /// A choice: the pick, its confidence, and whether it is sure.
    Choice {
        /// The option picked.
        choice: String,
        /// The answer's confidence.
        confidence: f64,
        /// Whether the distribution was near-uniform.
        near_uniform: bool,
        /// Confidence above `high` and not near-uniform.
        sure: bool,
    },
    /// A score: the expected level, its confidence, and whether it is sure.
    Score {
        /// The expected level (may fall between levels).
        score: f64,
        /// The answer's confidence.
        confidence: f64,
        /// Confidence above `high`.
        sure: bool,
    },
    /// A box: its edges, its confidence when given, and whether it is sure.
    Box {
        /// The box's edges.
        coordinates: BoxCoordinates,
        /// The answer's confidence, when the model gave one.
        confidence: Option<f64>,
        /// Confidence given and above `high`.
        sure: bool,
    },
}

impl Banded {
    /// Whether the reading is sure (a yes/no verdict, a sure pick or level).
    ///
    /// ```
    /// use toolnexus::judge::Banded;
    /// let b = Banded::Score { score: 1.0, confidence: 0.5, sure: false };
    /// assert!(!b.is_sure());
    /// ```
    pub fn is_sure(&self) -> bool {
        match self {
            Banded::Noul { verdict, .. } => verdict.is_sure(),
            Banded::Choice { sure, .. } | Banded::Score { sure, .. } | Banded::Box { sure, .. } => {
                *sure
            }
        }
    }

    /// The answer type: `"noul"`, `"choice"` or `"score"`.
    ///
    /// ```
    /// use toolnexus::judge::{Banded, Verdict};
    /// assert_eq!(Banded::Noul { noul: 0.5, verdict: Verdict::Uncertain }.answer_type(), "noul");
    /// ```
    pub fn answer_type(&self) -> &'static str {
        match self {
            Banded::Noul { .. } => "noul",
            Banded::Choice { .. } => "choice",
            Banded::Score { .. } => "score",
            Banded::Box { .. } => "box",
        }
    }

    /// Why the reading is not sure, in words (for escalation requests), or
    /// `None` when it is sure.
    pub(crate) fn doubt(&self, bands: &Bands) -> Option<String> {
        if self.is_sure() {
            return None;
        }
        Some(match self {
            Banded::Noul { noul, .. } => {
                format!(
                    "noul {noul} is not below {} nor above {}",
                    bands.low, bands.high
                )
            }
            Banded::Choice {
                choice,
                confidence,
                near_uniform,
                ..
            } => {
                if *near_uniform {
                    format!(
                        "choice {choice:?} comes from a near-uniform distribution (confidence {confidence})"
                    )
                } else {
                    format!(
                        "choice {choice:?} has confidence {confidence}, not above {}",
                        bands.high
                    )
                }
            }
            Banded::Score {
                score, confidence, ..
            } => format!(
                "score {score} has confidence {confidence}, not above {}",
                bands.high
            ),
            Banded::Box {
                confidence: None, ..
            } => "box has no confidence".to_string(),
            Banded::Box {
                confidence: Some(c),
                ..
            } => format!("box has confidence {c}, not above {}", bands.high),
        })
    }
}

impl Bands {
    /// Checks that `0 ≤ low ≤ high ≤ 1` (both finite). [`ask`] calls it first.
    ///
    /// ```
    /// use toolnexus::judge::Bands;
    /// let e = Bands { low: 0.8, high: 0.2 }.check().unwrap_err();
    /// assert_eq!(e.to_string(), "classifier: bands need 0 <= low <= high <= 1, got low 0.8, high 0.2");
    /// ```
    pub fn check(&self) -> Result<(), ClassifierError> {
        let ok = self.low.is_finite()
            && self.high.is_finite()
            && 0.0 <= self.low
            && self.low <= self.high
            && self.high <= 1.0;
        if ok {
            Ok(())
        } else {
            Err(msg::config(format!(
                "bands need 0 <= low <= high <= 1, got low {}, high {}",
                self.low, self.high
            )))
        }
    }

    /// Reads a noul probability: below `low` is no, above `high` yes, else uncertain.
    ///
    /// ```
    /// use toolnexus::judge::{Bands, Verdict};
    /// assert_eq!(Bands::default().noul(0.3001), Verdict::Uncertain);
    /// ```
    pub fn noul(&self, p: f64) -> Verdict {
        if p < self.low {
            Verdict::No
        } else if p > self.high {
            Verdict::Yes
        } else {
            Verdict::Uncertain
        }
    }

    /// Whether a choice answer is sure: confidence above `high` and not near-uniform.
    ///
    /// ```
    /// use toolnexus::classifier::Decision;
    /// use toolnexus::judge::Bands;
    ///
    /// let d = Decision::from_slice(br#"{"model":"m","answers":{"desk":{"type":"choice",
    ///     "choice":"billing","probabilities":{"billing":0.9,"shipping":0.1},"confidence":0.9}}}"#)?;
    /// assert!(Bands::default().choice_is_sure(d.choice("desk")?));
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn choice_is_sure(&self, a: &ChoiceAnswer) -> bool {
        a.confidence > self.high && !a.near_uniform
    }

    /// Whether a score answer is sure: confidence above `high`.
    ///
    /// ```
    /// use toolnexus::classifier::ScoreAnswer;
    /// use toolnexus::judge::Bands;
    ///
    /// let a = ScoreAnswer { score: 2.0, legend: Default::default(), probabilities: Default::default(), confidence: 0.7 };
    /// assert!(!Bands::default().score_is_sure(&a), "exactly high is not above it");
    /// ```
    pub fn score_is_sure(&self, a: &ScoreAnswer) -> bool {
        a.confidence > self.high
    }

    /// Reads one answer.
    ///
    /// ```
    /// use toolnexus::classifier::Decision;
    /// use toolnexus::judge::{Banded, Bands};
    ///
    /// let d = Decision::from_slice(br#"{"model":"m","answers":{"u":{"type":"score","score":2.6,
    ///     "probabilities":{"0":0.05,"1":0.05,"2":0.2,"3":0.7},"confidence":0.7}}}"#)?;
    /// let b = Bands::default().band(d.answer("u")?);
    /// assert_eq!(b, Banded::Score { score: 2.6, confidence: 0.7, sure: false });
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn band(&self, answer: &DecisionAnswer) -> Banded {
        match answer {
            DecisionAnswer::Noul(NoulAnswer { noul }) => Banded::Noul {
                noul: *noul,
                verdict: self.noul(*noul),
            },
            DecisionAnswer::Choice(a) => Banded::Choice {
                choice: a.choice.clone(),
                confidence: a.confidence,
                near_uniform: a.near_uniform,
                sure: self.choice_is_sure(a),
            },
            DecisionAnswer::Score(a) => Banded::Score {
                score: a.score,
                confidence: a.confidence,
                sure: self.score_is_sure(a),
            },
            DecisionAnswer::Box(a) => Banded::Box {
                coordinates: a.coordinates,
                confidence: a.confidence,
                sure: a.confidence.is_some_and(|c| c > self.high),
            },
        }
    }

    /// Reads every answer of a decision, by key.
    ///
    /// ```
    /// use toolnexus::classifier::Decision;
    /// use toolnexus::judge::Bands;
    ///
    /// let d = Decision::from_slice(br#"{"model":"m","answers":{"spam":{"type":"noul","noul":0.5}}}"#)?;
    /// assert!(!Bands::default().band_all(&d)["spam"].is_sure());
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn band_all(&self, decision: &Decision) -> BTreeMap<String, Banded> {
        decision
            .answers
            .iter()
            .map(|(k, a)| (k.clone(), self.band(a)))
            .collect()
    }
}

/// Bands every answer, each key through its own bands when `key_bands` has them.
pub(crate) fn band_keyed(
    bands: &Bands,
    key_bands: &BTreeMap<String, Bands>,
    decision: &Decision,
) -> BTreeMap<String, Banded> {
    decision
        .answers
        .iter()
        .map(|(k, a)| (k.clone(), key_bands.get(k).unwrap_or(bands).band(a)))
        .collect()
}

/// What [`ask`] returns: the raw decision, the bands used, and every answer banded.
///
/// ```
/// use toolnexus::classifier::Decision;
/// use toolnexus::judge::{Asked, Bands, Verdict};
///
/// let d = Decision::from_slice(br#"{"model":"m","answers":{
///     "refund":{"type":"noul","noul":0.92},
///     "desk":{"type":"choice","choice":"billing","probabilities":{"billing":0.55,"shipping":0.45},"confidence":0.55}}}"#)?;
/// let asked = Asked::new(d, Bands::default());
/// assert_eq!(asked.verdict("refund")?, Verdict::Yes);
/// assert_eq!(asked.sure_choice("desk")?, None, "0.55 is not above 0.70");
/// assert_eq!(asked.decision.noul("refund")?.noul, 0.92, "the raw answers are kept");
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Asked {
    /// The decision as the classifier returned it.
    pub decision: Decision,
    /// The bands the answers were read through.
    pub bands: Bands,
    /// Every answer of the decision, banded, by key.
    pub answers: BTreeMap<String, Banded>,
    /// Per-question bands that replace `bands` for their keys (from a thresholds file).
    pub key_bands: BTreeMap<String, Bands>,
}

impl Asked {
    /// Bands every answer of `decision`.
    ///
    /// ```
    /// use toolnexus::classifier::Decision;
    /// use toolnexus::judge::{Asked, Bands};
    /// let d = Decision::from_slice(br#"{"model":"m","answers":{"q":{"type":"noul","noul":0.1}}}"#)?;
    /// assert_eq!(Asked::new(d, Bands::default()).answers.len(), 1);
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn new(decision: Decision, bands: Bands) -> Asked {
        Asked::with_key_bands(decision, bands, BTreeMap::new())
    }

    /// Bands every answer of `decision`, each key through its own entry in
    /// `key_bands` when it has one, else through `bands`.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use toolnexus::classifier::Decision;
    /// use toolnexus::judge::{Asked, Bands, Verdict};
    ///
    /// let d = Decision::from_slice(br#"{"model":"m","answers":{"a":{"type":"noul","noul":0.8},"b":{"type":"noul","noul":0.8}}}"#)?;
    /// let strict = BTreeMap::from([("b".to_string(), Bands { low: 0.1, high: 0.9 })]);
    /// let asked = Asked::with_key_bands(d, Bands::default(), strict);
    /// assert_eq!(asked.verdict("a")?, Verdict::Yes);
    /// assert_eq!(asked.verdict("b")?, Verdict::Uncertain);
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn with_key_bands(
        decision: Decision,
        bands: Bands,
        key_bands: BTreeMap<String, Bands>,
    ) -> Asked {
        let answers = band_keyed(&bands, &key_bands, &decision);
        Asked {
            decision,
            bands,
            answers,
            key_bands,
        }
    }

    /// The bands `key` is read through.
    ///
    /// ```
    /// use toolnexus::classifier::Decision;
    /// use toolnexus::judge::{Asked, Bands};
    /// let d = Decision::from_slice(br#"{"model":"m","answers":{}}"#)?;
    /// assert_eq!(Asked::new(d, Bands::default()).bands_for("x"), Bands::default());
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn bands_for(&self, key: &str) -> Bands {
        self.key_bands.get(key).copied().unwrap_or(self.bands)
    }

    /// The banded answer under `key`, or `classifier: no answer "<key>" in this decision`.
    ///
    /// ```
    /// use toolnexus::classifier::Decision;
    /// use toolnexus::judge::{Asked, Bands};
    /// let d = Decision::from_slice(br#"{"model":"m","answers":{}}"#)?;
    /// let e = Asked::new(d, Bands::default()).get("urgency").unwrap_err();
    /// assert_eq!(e.to_string(), "classifier: no answer \"urgency\" in this decision");
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn get(&self, key: &str) -> Result<&Banded, ClassifierError> {
        self.answers
            .get(key)
            .ok_or_else(|| msg::missing_answer(key))
    }

    /// The verdict of the noul answer under `key` (an error if absent or not a noul).
    ///
    /// ```
    /// use toolnexus::classifier::Decision;
    /// use toolnexus::judge::{Asked, Bands, Verdict};
    /// let d = Decision::from_slice(br#"{"model":"m","answers":{"q":{"type":"noul","noul":0.3}}}"#)?;
    /// assert_eq!(Asked::new(d, Bands::default()).verdict("q")?, Verdict::Uncertain);
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn verdict(&self, key: &str) -> Result<Verdict, ClassifierError> {
        match self.get(key)? {
            Banded::Noul { verdict, .. } => Ok(*verdict),
            other => Err(msg::wrong_type(key, other.answer_type(), "noul")),
        }
    }

    /// The pick of the choice answer under `key` when it is sure, `None` when it is
    /// uncertain (an error if absent or not a choice).
    ///
    /// ```
    /// use toolnexus::classifier::Decision;
    /// use toolnexus::judge::{Asked, Bands};
    /// let d = Decision::from_slice(br#"{"model":"m","answers":{"desk":{"type":"choice",
    ///     "choice":"billing","probabilities":{"billing":0.9,"shipping":0.1},"confidence":0.9}}}"#)?;
    /// assert_eq!(Asked::new(d, Bands::default()).sure_choice("desk")?, Some("billing"));
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn sure_choice(&self, key: &str) -> Result<Option<&str>, ClassifierError> {
        match self.get(key)? {
            Banded::Choice { choice, sure, .. } => Ok(sure.then_some(choice.as_str())),
            other => Err(msg::wrong_type(key, other.answer_type(), "choice")),
        }
    }

    /// The expected level of the score answer under `key` when it is sure, `None`
    /// when it is uncertain (an error if absent or not a score).
    ///
    /// ```
    /// use toolnexus::classifier::Decision;
    /// use toolnexus::judge::{Asked, Bands};
    /// let d = Decision::from_slice(br#"{"model":"m","answers":{"u":{"type":"score","score":2.0,"confidence":0.95}}}"#)?;
    /// assert_eq!(Asked::new(d, Bands::default()).sure_score("u")?, Some(2.0));
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn sure_score(&self, key: &str) -> Result<Option<f64>, ClassifierError> {
        match self.get(key)? {
            Banded::Score { score, sure, .. } => Ok(sure.then_some(*score)),
            other => Err(msg::wrong_type(key, other.answer_type(), "score")),
        }
    }
}

/// Evaluates `questions` against `state` **once** and bands every answer.
///
/// Fails before sending anything if the bands are malformed ([`Bands::check`]);
/// otherwise fails exactly as [`Classifier::evaluate_ctx`] does. A question the
/// decision does not answer is simply absent from [`Asked::answers`] (the
/// accessors and the gates report it). Dropping the future abandons the call.
///
/// Dropping the future abandons the evaluation (see `Classifier::evaluate_ctx`).
///
/// ```
/// use serde_json::json;
/// use toolnexus::classifier::{ClassifierOptions, ClassifierStyle, EvalContext, RecordedDecision, create_classifier};
/// use toolnexus::judge::{Bands, Verdict, ask, noul, questions, state};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let qs = questions(&[noul("refund", "Does the customer ask for money back?")])?;
/// let s = state("customer", "I was charged twice, please refund one");
/// let judge = create_classifier(ClassifierOptions {
///     style: ClassifierStyle::Static,
///     decisions: vec![RecordedDecision {
///         state: s.clone(),
///         questions: qs.clone(),
///         response: br#"{"model":"jev-1.13","answers":{"refund":{"type":"noul","noul":0.96}}}"#.to_vec(),
///     }],
///     ..Default::default()
/// })?;
/// let asked = ask(&judge, EvalContext::new(), s, &qs, Bands::default()).await?;
/// assert_eq!(asked.verdict("refund")?, Verdict::Yes);
/// # Ok(())
/// # }
/// ```
pub async fn ask(
    classifier: &Classifier,
    ctx: EvalContext,
    state: Value,
    questions: &Questions,
    bands: Bands,
) -> Result<Asked, ClassifierError> {
    bands.check()?;
    let decision = classifier.evaluate_ctx(ctx, state, questions).await?;
    Ok(Asked::new(decision, bands))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn noul_cuts() {
        let b = Bands::default();
        let table: &[(f64, Verdict)] = &[
            (0.0, Verdict::No),
            (0.2999, Verdict::No),
            (0.30, Verdict::Uncertain),
            (0.3001, Verdict::Uncertain),
            (0.5, Verdict::Uncertain),
            (0.6999, Verdict::Uncertain),
            (0.70, Verdict::Uncertain),
            (0.7001, Verdict::Yes),
            (1.0, Verdict::Yes),
            (f64::NAN, Verdict::Uncertain),
        ];
        for (p, want) in table {
            assert_eq!(b.noul(*p), *want, "noul {p}");
        }
    }

    fn choice(confidence: f64, probs: &[(&str, f64)]) -> ChoiceAnswer {
        let probabilities: BTreeMap<String, f64> =
            probs.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        ChoiceAnswer {
            choice: probs[0].0.to_string(),
            near_uniform: crate::classifier::near_uniform(&probabilities),
            probabilities,
            confidence,
        }
    }

    #[test]
    fn choice_cuts() {
        let b = Bands::default();
        let decisive = [("a", 0.9), ("b", 0.1)];
        let flat4 = [("a", 0.30), ("b", 0.25), ("c", 0.25), ("d", 0.20)];
        type Row<'a> = (f64, &'a [(&'a str, f64)], bool);
        let table: &[Row] = &[
            (0.6999, &decisive, false),
            (0.70, &decisive, false),
            (0.7001, &decisive, true),
            (0.99, &decisive, true),
            (0.99, &flat4, false),
            (0.7001, &[("only", 1.0)], false),
            (f64::NAN, &decisive, false),
        ];
        for (conf, probs, want) in table {
            assert_eq!(
                b.choice_is_sure(&choice(*conf, probs)),
                *want,
                "{conf} {probs:?}"
            );
        }
    }

    #[test]
    fn score_cuts() {
        let b = Bands::default();
        for (conf, want) in [(0.6999, false), (0.70, false), (0.7001, true), (1.0, true)] {
            let a = ScoreAnswer {
                score: 1.0,
                legend: BTreeMap::new(),
                probabilities: BTreeMap::new(),
                confidence: conf,
            };
            assert_eq!(b.score_is_sure(&a), want, "{conf}");
        }
    }

    #[test]
    fn custom_bands_move_the_cuts() {
        let b = Bands {
            low: 0.1,
            high: 0.9,
        };
        assert_eq!(b.noul(0.0999), Verdict::No);
        assert_eq!(b.noul(0.1), Verdict::Uncertain);
        assert_eq!(b.noul(0.9), Verdict::Uncertain);
        assert_eq!(b.noul(0.9001), Verdict::Yes);
        let point = Bands {
            low: 0.5,
            high: 0.5,
        };
        assert!(point.check().is_ok());
        assert_eq!(point.noul(0.5), Verdict::Uncertain);
    }

    #[test]
    fn malformed_bands() {
        for (low, high) in [
            (0.8, 0.2),
            (-0.1, 0.5),
            (0.2, 1.1),
            (f64::NAN, 0.7),
            (0.3, f64::INFINITY),
        ] {
            let e = Bands { low, high }.check().unwrap_err();
            assert!(e.to_string().starts_with("classifier: bands need"), "{e}");
        }
    }
}
