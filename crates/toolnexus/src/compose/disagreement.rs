//! What a shadow reports: how the two answers under each key compare
//! ([`KeyDiff`]), a candidate's failure, and the [`Disagreement`] that holds
//! them with the state and both decisions.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::assess::answer_shift;
use crate::classifier::{BoxCoordinates, ClassifierError, Decision, DecisionAnswer, ErrorKind};

/// Which side of a comparison.
///
/// ```
/// use toolnexus::compose::Side;
/// assert_eq!(Side::Candidate.as_str(), "candidate");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The classifier whose answers the caller gets.
    Primary,
    /// The classifier under evaluation.
    Candidate,
}

impl Side {
    /// `"primary"` or `"candidate"`.
    ///
    /// ```
    /// assert_eq!(toolnexus::compose::Side::Primary.as_str(), "primary");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Primary => "primary",
            Side::Candidate => "candidate",
        }
    }
}

/// How the two answers under one key compare. Every difference is an absolute
/// value.
///
/// ```
/// use toolnexus::compose::{KeyDiff, Side};
///
/// let same = KeyDiff::Choice { primary: "refund".into(), candidate: "refund".into(), mismatch: false };
/// assert!(same.agrees());
/// assert!(!KeyDiff::Missing { missing_from: Side::Candidate }.agrees());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum KeyDiff {
    /// Both answered a noul question.
    Noul {
        /// The primary's P(true).
        primary: f64,
        /// The candidate's P(true).
        candidate: f64,
        /// |primary − candidate|.
        delta: f64,
    },
    /// Both answered a choice question.
    Choice {
        /// The primary's pick.
        primary: String,
        /// The candidate's pick.
        candidate: String,
        /// Whether the picks differ.
        mismatch: bool,
    },
    /// Both answered a score question.
    Score {
        /// The primary's expected level.
        primary: f64,
        /// The candidate's expected level.
        candidate: f64,
        /// |primary − candidate|.
        delta: f64,
    },
    /// Both answered a box question.
    Box {
        /// The primary's box.
        primary: BoxCoordinates,
        /// The candidate's box.
        candidate: BoxCoordinates,
        /// The largest |Δ| over the four edges.
        delta: f64,
    },
    /// Only one side answered this key.
    Missing {
        /// The side without an answer.
        missing_from: Side,
    },
    /// The two answers are of different types.
    TypeMismatch {
        /// The primary's answer type (`"noul"`, `"choice"`, `"score"`, `"box"`).
        primary: &'static str,
        /// The candidate's answer type.
        candidate: &'static str,
    },
}

impl KeyDiff {
    fn between(primary: &DecisionAnswer, candidate: &DecisionAnswer) -> KeyDiff {
        // Flip and shift have one definition, `assess::answer_shift`: a noul's
        // shift is |Δp|, and a choice flips when the picks differ. A score keeps
        // |Δ expected level|, the number this report has always given
        // (`answer_shift` measures the level distributions' total variation
        // instead), and a box its largest edge move, which `answer_shift` does
        // not compare. It answers `Some` for every noul and choice pair.
        match (primary, candidate, answer_shift(primary, candidate)) {
            (DecisionAnswer::Noul(p), DecisionAnswer::Noul(c), Some((_, shift))) => KeyDiff::Noul {
                primary: p.noul,
                candidate: c.noul,
                delta: shift,
            },
            (DecisionAnswer::Choice(p), DecisionAnswer::Choice(c), Some((flipped, _))) => {
                KeyDiff::Choice {
                    primary: p.choice.clone(),
                    candidate: c.choice.clone(),
                    mismatch: flipped,
                }
            }
            (DecisionAnswer::Score(p), DecisionAnswer::Score(c), _) => KeyDiff::Score {
                primary: p.score,
                candidate: c.score,
                delta: (p.score - c.score).abs(),
            },
            (DecisionAnswer::Box(p), DecisionAnswer::Box(c), _) => {
                let (a, b) = (p.coordinates, c.coordinates);
                let delta = [
                    a.top - b.top,
                    a.bottom - b.bottom,
                    a.left - b.left,
                    a.right - b.right,
                ]
                .into_iter()
                .map(f64::abs)
                .fold(0.0, f64::max);
                KeyDiff::Box {
                    primary: a,
                    candidate: b,
                    delta,
                }
            }
            (p, c, _) => KeyDiff::TypeMismatch {
                primary: p.answer_type(),
                candidate: c.answer_type(),
            },
        }
    }

    /// Whether both sides gave the same answer: a zero difference, the same
    /// pick.
    ///
    /// ```
    /// use toolnexus::compose::KeyDiff;
    /// assert!(KeyDiff::Noul { primary: 0.5, candidate: 0.5, delta: 0.0 }.agrees());
    /// assert!(!KeyDiff::Score { primary: 1.0, candidate: 1.5, delta: 0.5 }.agrees());
    /// ```
    pub fn agrees(&self) -> bool {
        match self {
            KeyDiff::Noul { delta, .. }
            | KeyDiff::Score { delta, .. }
            | KeyDiff::Box { delta, .. } => *delta == 0.0,
            KeyDiff::Choice { mismatch, .. } => !mismatch,
            KeyDiff::Missing { .. } | KeyDiff::TypeMismatch { .. } => false,
        }
    }

    /// The difference as JSON, tagged by `"kind"`: `noul`, `choice`, `score`,
    /// `box`, `missing` or `type_mismatch`.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::compose::{KeyDiff, Side};
    ///
    /// let d = KeyDiff::Noul { primary: 0.25, candidate: 0.75, delta: 0.5 };
    /// assert_eq!(d.to_json(), json!({"kind": "noul", "primary": 0.25, "candidate": 0.75, "delta": 0.5}));
    /// let m = KeyDiff::Missing { missing_from: Side::Primary };
    /// assert_eq!(m.to_json(), json!({"kind": "missing", "missing_from": "primary"}));
    /// ```
    pub fn to_json(&self) -> Value {
        let edges = |b: &BoxCoordinates| json!({"top": b.top, "bottom": b.bottom, "left": b.left, "right": b.right});
        match self {
            KeyDiff::Noul {
                primary,
                candidate,
                delta,
            } => {
                json!({"kind": "noul", "primary": primary, "candidate": candidate, "delta": delta})
            }
            KeyDiff::Choice {
                primary,
                candidate,
                mismatch,
            } => {
                json!({"kind": "choice", "primary": primary, "candidate": candidate, "mismatch": mismatch})
            }
            KeyDiff::Score {
                primary,
                candidate,
                delta,
            } => {
                json!({"kind": "score", "primary": primary, "candidate": candidate, "delta": delta})
            }
            KeyDiff::Box {
                primary,
                candidate,
                delta,
            } => {
                json!({"kind": "box", "primary": edges(primary), "candidate": edges(candidate), "delta": delta})
            }
            KeyDiff::Missing { missing_from } => {
                json!({"kind": "missing", "missing_from": missing_from.as_str()})
            }
            KeyDiff::TypeMismatch { primary, candidate } => {
                json!({"kind": "type_mismatch", "primary": primary, "candidate": candidate})
            }
        }
    }
}

/// A candidate's failure, as a shadow reports it.
///
/// ```
/// use toolnexus::classifier::{ClassifierError, ErrorKind};
/// use toolnexus::compose::CandidateFailure;
///
/// let f = CandidateFailure::from(&ClassifierError::http(503, "overloaded"));
/// assert_eq!((f.kind, f.status), (ErrorKind::Http, Some(503)));
/// assert_eq!(f.message, "classifier: HTTP 503: overloaded");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CandidateFailure {
    /// What went wrong.
    pub kind: ErrorKind,
    /// The HTTP status, for an HTTP failure.
    pub status: Option<u16>,
    /// The error's message (secrets already scrubbed by the candidate).
    pub message: String,
}

impl From<&ClassifierError> for CandidateFailure {
    fn from(e: &ClassifierError) -> CandidateFailure {
        CandidateFailure {
            kind: e.kind(),
            status: e.status(),
            message: e.to_string(),
        }
    }
}

/// One comparison of a candidate with the primary, for one mirrored call:
/// every key either side answered, with how the answers differ, or the
/// candidate's failure. Reported also when the two agree.
///
/// ```
/// use toolnexus::compose::{Disagreement, KeyDiff};
///
/// fn worst_noul_gap(d: &Disagreement) -> f64 {
///     d.keys
///         .values()
///         .filter_map(|k| match k {
///             KeyDiff::Noul { delta, .. } => Some(*delta),
///             _ => None,
///         })
///         .fold(0.0, f64::max)
/// }
/// # let _ = worst_noul_gap;
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Disagreement {
    /// The call's [`EvalContext::call_name`](crate::classifier::EvalContext::call_name), possibly empty.
    pub call_name: String,
    /// The model that answered for the primary (its decision's `model`).
    pub primary_model: String,
    /// The model that answered for the candidate, when it answered.
    pub candidate_model: Option<String>,
    /// Every key either side answered, with how the answers compare; empty
    /// when the candidate failed.
    pub keys: BTreeMap<String, KeyDiff>,
    /// The candidate's failure, when it failed.
    pub candidate_error: Option<CandidateFailure>,
    /// How long the candidate took.
    pub candidate_elapsed: Duration,
    /// When the comparison was made.
    pub at: SystemTime,
    /// The state both were asked about (what ties the comparison to the
    /// caller's own record of the call).
    pub state: Value,
    /// The primary's whole decision (every distribution, not only the
    /// differences in `keys`).
    pub primary_decision: Decision,
    /// The candidate's whole decision, when it answered.
    pub candidate_decision: Option<Decision>,
}

impl Disagreement {
    pub(super) fn new(
        call_name: String,
        state: Value,
        primary: Decision,
        candidate: Result<Decision, ClassifierError>,
        candidate_elapsed: Duration,
    ) -> Disagreement {
        let (candidate_model, keys, candidate_error, candidate_decision) = match candidate {
            Ok(c) => (Some(c.model.clone()), compare(&primary, &c), None, Some(c)),
            Err(e) => (
                None,
                BTreeMap::new(),
                Some(CandidateFailure::from(&e)),
                None,
            ),
        };
        Disagreement {
            call_name,
            primary_model: primary.model.clone(),
            candidate_model,
            keys,
            candidate_error,
            candidate_elapsed,
            at: SystemTime::now(),
            state,
            primary_decision: primary,
            candidate_decision,
        }
    }

    /// Whether the candidate answered every key exactly as the primary did.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use serde_json::json;
    /// # use toolnexus::classifier::*;
    /// # use toolnexus::compose::*;
    /// # use toolnexus::judge::{noul, questions};
    /// # fn answering(p: f64) -> Classifier {
    /// #     create_classifier(ClassifierOptions {
    /// #         style: ClassifierStyle::Custom,
    /// #         evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
    /// #             Box::pin(async move {
    /// #                 Decision::from_value(&json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": p}}}))
    /// #                     .map_err(|e| e.to_string())
    /// #             })
    /// #         })),
    /// #         ..Default::default()
    /// #     })
    /// #     .unwrap()
    /// # }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ClassifierError> {
    /// let agreed = Arc::new(std::sync::Mutex::new(None));
    /// let sink = agreed.clone();
    /// let options = ShadowOptions::new(1.0).with_on_disagreement(move |d| *sink.lock().unwrap() = Some(d.agrees()));
    /// let stats = options.stats.clone();
    /// let judge = shadow(answering(0.5), answering(0.5), options);
    /// judge.evaluate(json!(1), &questions(&[noul("spam", "Is it spam?")])?).await?;
    /// stats.idle().await;
    /// assert_eq!(*agreed.lock().unwrap(), Some(true));
    /// # Ok(())
    /// # }
    /// ```
    pub fn agrees(&self) -> bool {
        self.candidate_error.is_none() && self.keys.values().all(KeyDiff::agrees)
    }

    /// The comparison as one JSON object, as the JSONL file has it:
    /// `call_name`, `primary_model`, `candidate_model` (or null), `agrees`,
    /// `keys` (each [`KeyDiff::to_json`]), `candidate_error` (null, or `kind`,
    /// `status`, `message`), `candidate_ms` and `at_ms` (Unix milliseconds).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use serde_json::json;
    /// # use toolnexus::classifier::*;
    /// # use toolnexus::compose::*;
    /// # use toolnexus::judge::{noul, questions};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ClassifierError> {
    /// let primary = create_classifier(ClassifierOptions {
    ///     style: ClassifierStyle::Custom,
    ///     evaluate: Some(Arc::new(|_ctx, _state, _qs| {
    ///         Box::pin(async {
    ///             Decision::from_slice(br#"{"model":"jev-1.13","answers":{"spam":{"type":"noul","noul":0.5}}}"#)
    ///                 .map_err(|e| e.to_string())
    ///         })
    ///     })),
    ///     ..Default::default()
    /// })?;
    /// let broken = create_classifier(ClassifierOptions {
    ///     style: ClassifierStyle::Custom,
    ///     evaluate: Some(Arc::new(|_ctx, _state, _qs| Box::pin(async { Err("model file missing".to_string()) }))),
    ///     ..Default::default()
    /// })?;
    /// let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
    /// let sink = lines.clone();
    /// let options = ShadowOptions::new(1.0).with_on_disagreement(move |d| sink.lock().unwrap().push(d.to_json()));
    /// let stats = options.stats.clone();
    /// shadow(primary, broken, options)
    ///     .evaluate_ctx(EvalContext::new().with_call_name("triage"), json!(1), &questions(&[noul("spam", "Is it spam?")])?)
    ///     .await?;
    /// stats.idle().await;
    /// let line = &lines.lock().unwrap()[0];
    /// assert_eq!(line["call_name"], "triage");
    /// assert_eq!(line["agrees"], false);
    /// assert_eq!(line["candidate_error"], json!({"kind": "custom", "status": null, "message": "classifier: custom: model file missing"}));
    /// # Ok(())
    /// # }
    /// ```
    pub fn to_json(&self) -> Value {
        let keys: serde_json::Map<String, Value> = self
            .keys
            .iter()
            .map(|(k, d)| (k.clone(), d.to_json()))
            .collect();
        let candidate_error = self
            .candidate_error
            .as_ref()
            .map(|f| json!({"kind": f.kind.as_str(), "status": f.status, "message": f.message}));
        let at_ms = self
            .at
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        json!({
            "call_name": self.call_name,
            "primary_model": self.primary_model,
            "candidate_model": self.candidate_model,
            "agrees": self.agrees(),
            "keys": keys,
            "candidate_error": candidate_error,
            "candidate_ms": self.candidate_elapsed.as_millis() as u64,
            "at_ms": at_ms,
        })
    }
}

/// Every key either decision answered, with how the answers compare.
pub(super) fn compare(primary: &Decision, candidate: &Decision) -> BTreeMap<String, KeyDiff> {
    let mut keys = BTreeMap::new();
    for (key, p) in &primary.answers {
        let diff = match candidate.answers.get(key) {
            Some(c) => KeyDiff::between(p, c),
            None => KeyDiff::Missing {
                missing_from: Side::Candidate,
            },
        };
        keys.insert(key.clone(), diff);
    }
    for key in candidate.answers.keys() {
        if !primary.answers.contains_key(key) {
            keys.insert(
                key.clone(),
                KeyDiff::Missing {
                    missing_from: Side::Primary,
                },
            );
        }
    }
    keys
}
