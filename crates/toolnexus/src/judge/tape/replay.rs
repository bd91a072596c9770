//! Replay: the match modes, the index a replayer builds once from a tape, and
//! the replaying classifier.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use crate::classifier::{
    Classifier, ClassifierError, Decision, ErrorKind, EvalContext, EvalRequest, Evaluator,
    Fingerprint, Questions, canonical_json, questions_wire,
};
use crate::context::BoxFuture;

use super::diagnose::{diff, diff_doc, nearest_text};
use super::format::{TapeOutcome, entry_key, entry_value};
use super::store::Tape;

/// What a replayer runs: lookups in an index built once.
struct Replayer {
    index: Arc<ReplayIndex>,
    own: String,
}

impl Evaluator for Replayer {
    fn call(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Decision, ClassifierError>> {
        let result = request.refuse_beyond("tape", &self.own).and_then(|()| {
            self.index
                .lookup(&ctx.call_name, &request.questions, &request.state)
        });
        Box::pin(async move { result })
    }
}

/// How a replayer ([`Tape::replayer_with`]) picks the recording for a call.
/// Every mode first narrows to the recordings under the call's
/// [`EvalContext::call_name`](crate::classifier::EvalContext).
///
/// ```
/// use toolnexus::judge::TapeMatch;
///
/// assert_eq!(TapeMatch::default(), TapeMatch::Exact);
/// let mode: TapeMatch = "sequence".parse()?;
/// assert_eq!(mode, TapeMatch::Sequence);
/// assert_eq!(mode.as_str(), "sequence");
/// assert_eq!(TapeMatch::Questions.to_string(), "questions");
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum TapeMatch {
    /// The recording with the same canonical questions and state (key order and
    /// `3.0` versus `3` do not matter). The default.
    #[default]
    Exact,
    /// A recording with the same canonical questions, whatever its state: the
    /// one whose state is closest to the call's (fewest differing values), the
    /// earliest recorded among equals, so an exact match always wins.
    Questions,
    /// VCR style: the n-th call under a call name gets the n-th recording under
    /// that name, in recording order ([`Tape::call_entries`]), whatever its
    /// questions and state. Calls past the last recording miss.
    Sequence,
}

impl TapeMatch {
    /// Every mode, in the order of the docs.
    ///
    /// ```
    /// use toolnexus::judge::TapeMatch;
    /// let names: Vec<&str> = TapeMatch::ALL.iter().map(|m| m.as_str()).collect();
    /// assert_eq!(names, ["exact", "questions", "sequence"]);
    /// ```
    pub const ALL: [TapeMatch; 3] = [TapeMatch::Exact, TapeMatch::Questions, TapeMatch::Sequence];

    /// The mode's name: `exact`, `questions` or `sequence` (what
    /// [`FromStr`] reads).
    ///
    /// ```
    /// assert_eq!(toolnexus::judge::TapeMatch::Exact.as_str(), "exact");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            TapeMatch::Exact => "exact",
            TapeMatch::Questions => "questions",
            TapeMatch::Sequence => "sequence",
        }
    }
}

impl fmt::Display for TapeMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TapeMatch {
    type Err = ClassifierError;

    /// Reads `exact`, `questions` or `sequence` (any case, surrounding blanks
    /// ignored). Anything else is a [`ErrorKind::Config`] error naming the three.
    ///
    /// ```
    /// use toolnexus::judge::TapeMatch;
    /// assert_eq!(" Questions ".parse::<TapeMatch>()?, TapeMatch::Questions);
    /// let e = "fuzzy".parse::<TapeMatch>().unwrap_err();
    /// assert_eq!(e.to_string(), "tape: unknown match mode \"fuzzy\" (want exact|questions|sequence)");
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let want = s.trim().to_ascii_lowercase();
        TapeMatch::ALL
            .into_iter()
            .find(|m| m.as_str() == want)
            .ok_or_else(|| {
                ClassifierError::from_message(
                    ErrorKind::Config,
                    &format!("tape: unknown match mode {s:?} (want exact|questions|sequence)"),
                )
            })
    }
}

/// One recording as a replayer sees it.
pub(super) struct Recording {
    /// The questions' wire form, for diffs.
    questions: Value,
    /// Its canonical text, for [`TapeMatch::Questions`].
    questions_key: String,
    state: Value,
    outcome: TapeOutcome,
}

/// The recordings under one call name, in recording order.
#[derive(Default)]
struct CallIndex {
    recordings: Vec<Recording>,
    /// entry key → index into `recordings`.
    by_key: HashMap<String, usize>,
    /// The next recording [`TapeMatch::Sequence`] hands out.
    cursor: AtomicUsize,
}

/// A replayer's snapshot of a tape.
struct ReplayIndex {
    mode: TapeMatch,
    calls: HashMap<String, CallIndex>,
    /// Every recorded call name, sorted (for a miss on an unknown one).
    names: Vec<String>,
}

impl ReplayIndex {
    fn lookup(
        &self,
        call: &str,
        questions: &Questions,
        state: &Value,
    ) -> Result<Decision, ClassifierError> {
        let Some(c) = self.calls.get(call) else {
            return Err(miss(call, &no_such_call(&self.names)));
        };
        match self.mode {
            TapeMatch::Exact => match c.by_key.get(&entry_key(questions, state)) {
                Some(&i) => c.recordings[i].outcome.replay(),
                None => {
                    let asked = diff_doc(questions_wire(questions), Some(state.clone()));
                    let docs = c
                        .recordings
                        .iter()
                        .map(|r| diff_doc(r.questions.clone(), Some(r.state.clone())));
                    Err(miss(call, &nearest_text(docs, &asked)))
                }
            },
            TapeMatch::Questions => {
                let wire = questions_wire(questions);
                let key = canonical_json(&wire);
                let best = c
                    .recordings
                    .iter()
                    .filter(|r| r.questions_key == key)
                    .min_by_key(|r| diff(&r.state, state, "state").count);
                match best {
                    Some(r) => r.outcome.replay(),
                    None => {
                        let asked = diff_doc(wire, None);
                        let docs = c
                            .recordings
                            .iter()
                            .map(|r| diff_doc(r.questions.clone(), None));
                        Err(miss(call, &nearest_text(docs, &asked)))
                    }
                }
            }
            TapeMatch::Sequence => {
                let n = c.cursor.fetch_add(1, Ordering::Relaxed);
                match c.recordings.get(n) {
                    Some(r) => r.outcome.replay(),
                    None => {
                        let total = c.recordings.len();
                        let s = if total == 1 { "" } else { "s" };
                        Err(miss(
                            call,
                            &format!(
                                "the sequence ran past its end (this is call {} under it; the tape has {total} recording{s})",
                                n.saturating_add(1)
                            ),
                        ))
                    }
                }
            }
        }
    }
}

/// A tape miss: `tape: no recorded decision for call "<name>": <why>`.
pub(super) fn miss(call: &str, why: &str) -> ClassifierError {
    let plain = ClassifierError::tape_miss(call).to_string();
    ClassifierError::from_message(ErrorKind::TapeMiss, &format!("{plain}: {why}"))
}

/// How many call names a miss lists at most.
const NAMES_SHOWN: usize = 10;

/// Why an unknown call name misses: the tape is empty, or which names it has.
pub(super) fn no_such_call(names: &[String]) -> String {
    if names.is_empty() {
        return "the tape is empty".to_string();
    }
    let mut shown: Vec<String> = names
        .iter()
        .take(NAMES_SHOWN)
        .map(|n| format!("{n:?}"))
        .collect();
    if names.len() > NAMES_SHOWN {
        shown.push(format!("… {} in all", names.len()));
    }
    format!(
        "the tape has no recordings under that call (its calls: {})",
        shown.join(", ")
    )
}

impl Tape {
    /// A classifier that answers from this tape, offline, matching in
    /// [`TapeMatch::Exact`] mode: by the call's
    /// [`EvalContext::call_name`](crate::classifier::EvalContext), then by its
    /// canonical questions and state. Same as
    /// [`replayer_with(TapeMatch::Exact)`](Tape::replayer_with), which
    /// describes misses and the replayer's model.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::{EvalContext, ErrorKind};
    /// use toolnexus::judge::{Tape, noul, questions};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let replayer = Tape::new().replayer();
    /// let qs = questions(&[noul("spam", "Is this unsolicited bulk mail?")])?;
    /// let ctx = EvalContext::new().with_call_name("inbox");
    /// let e = replayer.evaluate_ctx(ctx, json!("hi"), &qs).await.unwrap_err();
    /// assert_eq!(e.to_string(), "tape: no recorded decision for call \"inbox\": the tape is empty");
    /// assert_eq!(e.kind(), ErrorKind::TapeMiss);
    /// assert!(e.is_miss());
    /// # Ok(())
    /// # }
    /// ```
    pub fn replayer(&self) -> Classifier {
        self.replayer_with(TapeMatch::Exact)
    }

    /// A classifier that answers from this tape, offline, choosing the recording
    /// by the call's [`EvalContext::call_name`](crate::classifier::EvalContext)
    /// and then as `mode` says (see [`TapeMatch`]). A recorded failure is
    /// returned as an error with its kind, message and status.
    ///
    /// Anything not on the tape fails at evaluate time with an error of kind
    /// [`ErrorKind::TapeMiss`] whose message starts
    /// `tape: no recorded decision for call "<name>"` and goes on to say why:
    /// that the call name has no recordings (naming those the tape has), that a
    /// sequence ran past its end, or which recording under that call is nearest
    /// (fewest differing values over its questions and state, or its questions
    /// alone in `Questions` mode), and the first JSON path where it differs with
    /// both values, e.g.
    /// `…: the nearest recording (2 of 3) differs in 1 value, first at state.customer.tier: recorded "gold", asked "silver"`.
    /// Values come from the questions and states only and are cut at 60
    /// characters.
    ///
    /// The replayer works on a snapshot: entries recorded later are not seen.
    /// In `Sequence` mode the replayer (and its clones) keep one position per
    /// call name; make a new replayer to start again. Its style is `Custom`; its
    /// model is the recorded model when the tape has one, else `tape`.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::{Decision, EvalContext};
    /// use toolnexus::judge::{Tape, TapeEntry, TapeMatch, TapeOutcome, noul, questions};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let qs = questions(&[noul("spam", "Is this unsolicited bulk mail?")])?;
    /// let tape = Tape::new();
    /// for (state, p) in [(json!({"tier": "gold"}), 0.9), (json!({"tier": "bronze"}), 0.1)] {
    ///     let d = json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": p}}});
    ///     tape.record(TapeEntry {
    ///         call_name: "inbox".into(),
    ///         model: "m".into(),
    ///         state,
    ///         questions: qs.clone(),
    ///         outcome: TapeOutcome::Decision(Decision::from_value(&d)?),
    ///         request_id: None,
    ///     });
    /// }
    /// let ctx = || EvalContext::new().with_call_name("inbox");
    /// let silver = json!({"tier": "silver"});
    ///
    /// let e = tape.replayer().evaluate_ctx(ctx(), silver.clone(), &qs).await.unwrap_err();
    /// assert_eq!(
    ///     e.to_string(),
    ///     "tape: no recorded decision for call \"inbox\": the nearest recording (1 of 2) differs in 1 value, \
    ///      first at state.tier: recorded \"gold\", asked \"silver\""
    /// );
    ///
    /// // Questions: any state will do; the closest (here the first) answers.
    /// let d = tape.replayer_with(TapeMatch::Questions).evaluate_ctx(ctx(), silver.clone(), &qs).await?;
    /// assert_eq!(d.noul("spam")?.noul, 0.9);
    ///
    /// // Sequence: the n-th call gets the n-th recording, then the tape runs out.
    /// let vcr = tape.replayer_with(TapeMatch::Sequence);
    /// assert_eq!(vcr.evaluate_ctx(ctx(), json!(null), &qs).await?.noul("spam")?.noul, 0.9);
    /// assert_eq!(vcr.evaluate_ctx(ctx(), json!(null), &qs).await?.noul("spam")?.noul, 0.1);
    /// assert!(vcr.evaluate_ctx(ctx(), json!(null), &qs).await.unwrap_err().is_miss());
    /// # Ok(())
    /// # }
    /// ```
    pub fn replayer_with(&self, mode: TapeMatch) -> Classifier {
        let data = self.lock();
        let mut calls = HashMap::new();
        let mut models = BTreeSet::new();
        // The fingerprint covers what the replayer answers from: every entry
        // of the snapshot, by call name and in recording order, and the mode.
        let mut contents = Vec::new();
        let mut part = |b: &[u8]| {
            contents.extend_from_slice(&(b.len() as u64).to_le_bytes());
            contents.extend_from_slice(b);
        };
        for (call, entries) in &data.calls {
            let mut index = CallIndex::default();
            for (i, e) in entries.in_order().into_iter().enumerate() {
                part(call.as_bytes());
                part(canonical_json(&entry_value(e)).as_bytes());
                models.insert(e.model.clone());
                let questions = questions_wire(&e.questions);
                let key = entry_key(&e.questions, &e.state);
                index.by_key.insert(key, i);
                index.recordings.push(Recording {
                    questions_key: canonical_json(&questions),
                    questions,
                    state: e.state.clone(),
                    outcome: e.outcome.clone(),
                });
            }
            calls.insert(call.clone(), index);
        }
        let names = data.calls.keys().cloned().collect();
        drop(data);
        let model = match models.len() {
            1 => models.into_iter().next().unwrap_or_default(),
            _ => "tape".to_string(),
        };
        let index = Arc::new(ReplayIndex { mode, calls, names });
        let own = model.clone();
        Classifier::from_evaluator(model, Replayer { index, own }).with_fingerprint_part(
            "tape",
            format!("{} match={}", Fingerprint::digest(&contents), mode.as_str()),
        )
    }
}
