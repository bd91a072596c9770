//! [`Tape`]: record a live classifier's decisions by call name, save them as a
//! versioned JSON file, load them and replay them offline. The file format is
//! documented in the [module docs](crate::judge#the-tape-file-format).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Map, Value};

use crate::classifier::{
    Classifier, ClassifierError, Decision, ErrorKind, EvalContext, EvalRequest, Evaluated,
    Evaluator, Fingerprint, FullEvaluator, Questions, canonical_json, questions_from_wire,
    questions_wire, write_canonical,
};
use crate::context::BoxFuture;

/// What [`Tape::recorder`] runs: the live classifier, each outcome recorded.
struct Recorder {
    tape: Tape,
    live: Classifier,
}

impl FullEvaluator for Recorder {
    fn call_full(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Evaluated, ClassifierError>> {
        let tape = self.tape.clone();
        let live = self.live.clone();
        Box::pin(async move {
            // A tape keys entries by state and questions only: what else a
            // request carries could not be replayed, so it is not recorded.
            let own = live.model().to_string();
            request.refuse_beyond("tape", &own)?;
            let call_name = ctx.call_name.clone();
            let (state, questions) = (request.state.clone(), request.questions.clone());
            let result = live.evaluate_request(ctx, request).await;
            let (outcome, request_id) = match &result {
                Ok(e) => (
                    Some(TapeOutcome::Decision(e.decision.clone())),
                    e.request_id.clone(),
                ),
                Err(e) if e.is_cancelled() => (None, None),
                Err(e) => (
                    Some(TapeOutcome::Failure {
                        kind: e.kind(),
                        message: e.to_string(),
                        status: e.status(),
                    }),
                    e.request_id().map(str::to_string),
                ),
            };
            if let Some(outcome) = outcome {
                tape.record(TapeEntry {
                    call_name,
                    model: own,
                    state,
                    questions,
                    outcome,
                    request_id,
                });
            }
            result
        })
    }
}

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

/// The tape file version this library writes and reads.
///
/// ```
/// let text = toolnexus::judge::Tape::new().to_json();
/// assert!(text.contains(&format!("\"version\": {}", toolnexus::judge::TAPE_VERSION)));
/// ```
pub const TAPE_VERSION: u64 = 1;

/// The value of a tape file's `format` field.
///
/// ```
/// assert_eq!(toolnexus::judge::TAPE_FORMAT, "toolnexus.tape");
/// ```
pub const TAPE_FORMAT: &str = "toolnexus.tape";

/// What a recorded call came to: a decision, or a failure kept as data.
///
/// ```
/// use toolnexus::classifier::{Decision, ErrorKind};
/// use toolnexus::judge::TapeOutcome;
///
/// let ok = TapeOutcome::Decision(Decision::from_slice(br#"{"model":"m","answers":{}}"#)?);
/// let failed = TapeOutcome::Failure {
///     kind: ErrorKind::Http,
///     message: "classifier: POST https://api.typesafe.ai/v1/systemone: HTTP 503: overloaded".into(),
///     status: Some(503),
/// };
/// assert!(ok.is_decision() && !failed.is_decision());
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum TapeOutcome {
    /// The live classifier decided.
    Decision(Decision),
    /// The live classifier failed; replay returns an error with this kind,
    /// message and HTTP status.
    Failure {
        /// What went wrong.
        kind: ErrorKind,
        /// The error's message, exactly as the live classifier gave it (already
        /// free of credentials and expanded header values).
        message: String,
        /// The HTTP status, for an HTTP failure.
        status: Option<u16>,
    },
}

impl TapeOutcome {
    /// Whether this is a decision rather than a failure.
    ///
    /// ```
    /// use toolnexus::classifier::ErrorKind;
    /// use toolnexus::judge::TapeOutcome;
    /// let f = TapeOutcome::Failure { kind: ErrorKind::Timeout, message: "classifier: request timeout after 10000ms".into(), status: None };
    /// assert!(!f.is_decision());
    /// ```
    pub fn is_decision(&self) -> bool {
        matches!(self, TapeOutcome::Decision(_))
    }

    fn replay(&self) -> Result<Decision, ClassifierError> {
        match self {
            TapeOutcome::Decision(d) => Ok(d.clone()),
            TapeOutcome::Failure {
                kind,
                message,
                status,
            } => {
                let e = ClassifierError::from_message(*kind, message);
                Err(match status {
                    Some(s) => e.with_status(*s, None),
                    None => e,
                })
            }
        }
    }
}

/// One recorded call: under which call name, what was asked of which model, and
/// what came of it.
///
/// ```
/// use serde_json::json;
/// use toolnexus::classifier::Decision;
/// use toolnexus::judge::{Tape, TapeEntry, TapeOutcome, noul, questions};
///
/// let tape = Tape::new();
/// tape.record(TapeEntry {
///     call_name: "spam-check".into(),
///     model: "jev-latest".into(),
///     state: json!("WIN A PRIZE"),
///     questions: questions(&[noul("spam", "Is this unsolicited bulk mail?")])?,
///     outcome: TapeOutcome::Decision(Decision::from_slice(
///         br#"{"model":"jev-1.13","answers":{"spam":{"type":"noul","noul":0.98}}}"#,
///     )?),
///     request_id: None,
/// });
/// assert_eq!(tape.len(), 1);
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TapeEntry {
    /// The [`EvalContext::call_name`](crate::classifier::EvalContext) of the call.
    pub call_name: String,
    /// The model the live classifier asked for (the decision says what answered).
    pub model: String,
    /// The state judged.
    pub state: Value,
    /// The questions asked.
    pub questions: Questions,
    /// The decision or the failure.
    pub outcome: TapeOutcome,
    /// The request id the live backend answered with (`x-typesafe-request-id`),
    /// when it sent one; replays do not make it up.
    pub request_id: Option<String>,
}

/// Within one call name, entries are keyed by canonical questions and state.
fn entry_key(questions: &Questions, state: &Value) -> String {
    let mut key = canonical_json(&questions_wire(questions));
    key.push('\n');
    write_canonical(&mut key, state);
    key
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
    /// [`FromStr`](std::str::FromStr) reads).
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
struct Recording {
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
fn miss(call: &str, why: &str) -> ClassifierError {
    let plain = ClassifierError::tape_miss(call).to_string();
    ClassifierError::from_message(ErrorKind::TapeMiss, &format!("{plain}: {why}"))
}

/// How many call names a miss lists at most.
const NAMES_SHOWN: usize = 10;

/// Why an unknown call name misses: the tape is empty, or which names it has.
fn no_such_call(names: &[String]) -> String {
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

/// What a diff compares: `{"questions": …, "state": …}` (the state left out
/// when only questions matter).
fn diff_doc(questions: Value, state: Option<Value>) -> Value {
    let mut m = Map::new();
    m.insert("questions".into(), questions);
    if let Some(s) = state {
        m.insert("state".into(), s);
    }
    Value::Object(m)
}

/// Names the recording nearest to `asked` (fewest differing values, the
/// earliest among equals) and where it first differs.
fn nearest_text(recorded: impl Iterator<Item = Value>, asked: &Value) -> String {
    let recorded: Vec<Value> = recorded.collect();
    let total = recorded.len();
    let best = recorded
        .iter()
        .enumerate()
        .map(|(i, r)| (i, diff(r, asked, "")))
        .min_by_key(|(_, d)| d.count);
    let Some((i, d)) = best else {
        return "the tape has no recordings under that call".to_string();
    };
    let Some((path, was, now)) = d.first else {
        return format!(
            "the nearest recording ({} of {total}) differs only in form",
            i + 1
        );
    };
    let values = if d.count == 1 { "value" } else { "values" };
    format!(
        "the nearest recording ({} of {total}) differs in {} {values}, first at {path}: recorded {}, asked {}",
        i + 1,
        d.count,
        shown_value(was.as_ref()),
        shown_value(now.as_ref()),
    )
}

/// How long a value in a miss message may be, in characters.
const VALUE_SHOWN: usize = 60;

/// A value as a miss shows it: canonical JSON cut at [`VALUE_SHOWN`]
/// characters, or `(absent)`.
fn shown_value(v: Option<&Value>) -> String {
    let Some(v) = v else {
        return "(absent)".to_string();
    };
    let text = canonical_json(v);
    match text.char_indices().nth(VALUE_SHOWN) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// The outcome of a diff: how many values differ, and the first place one
/// does (its path, the recorded value and the asked one; `None` where absent).
#[derive(Debug, Default, PartialEq)]
struct Diff {
    count: usize,
    first: Option<(String, Option<Value>, Option<Value>)>,
}

impl Diff {
    fn note(&mut self, path: &str, count: usize, was: Option<&Value>, now: Option<&Value>) {
        self.count += count;
        if self.first.is_none() {
            self.first = Some((path.to_string(), was.cloned(), now.cloned()));
        }
    }
}

/// A pure JSON diff of `recorded` against `asked`: leaves (scalars, empty
/// arrays and objects) are compared in canonical form; object keys are walked
/// in sorted order, array items by index. A value present on one side only
/// counts as many differences as it has leaves. `root` names the top (empty for
/// a document whose keys start the path).
fn diff(recorded: &Value, asked: &Value, root: &str) -> Diff {
    let mut out = Diff::default();
    let mut path = root.to_string();
    diff_into(&mut out, &mut path, recorded, asked);
    out
}

fn diff_into(out: &mut Diff, path: &mut String, was: &Value, now: &Value) {
    match (was, now) {
        (Value::Object(a), Value::Object(b)) if !(a.is_empty() && b.is_empty()) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let len = path.len();
                push_key(path, k);
                match (a.get(k.as_str()), b.get(k.as_str())) {
                    (Some(x), Some(y)) => diff_into(out, path, x, y),
                    (x, y) => {
                        let n = x.or(y).map_or(1, leaves);
                        out.note(path, n, x, y);
                    }
                }
                path.truncate(len);
            }
        }
        (Value::Array(a), Value::Array(b)) if !(a.is_empty() && b.is_empty()) => {
            for i in 0..a.len().max(b.len()) {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                match (a.get(i), b.get(i)) {
                    (Some(x), Some(y)) => diff_into(out, path, x, y),
                    (x, y) => {
                        let n = x.or(y).map_or(1, leaves);
                        out.note(path, n, x, y);
                    }
                }
                path.truncate(len);
            }
        }
        (Value::Number(_), Value::Number(_)) if canonical_json(was) == canonical_json(now) => {}
        _ if was == now => {}
        _ => out.note(path, leaves(was).max(leaves(now)), Some(was), Some(now)),
    }
}

/// How many leaves a value has (a scalar or an empty container is one).
fn leaves(v: &Value) -> usize {
    match v {
        Value::Object(m) if !m.is_empty() => m.values().map(leaves).sum(),
        Value::Array(a) if !a.is_empty() => a.iter().map(leaves).sum(),
        _ => 1,
    }
}

/// Appends an object key to a path: `.key` for plain keys, else `["key"]`.
fn push_key(path: &mut String, key: &str) {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
    } else {
        path.push('[');
        write_canonical(path, &Value::String(key.to_string()));
        path.push(']');
    }
}

/// The entries of one call name.
#[derive(Default)]
struct CallData {
    /// entry key → (recording ordinal, entry): sorted by key, so a file's order
    /// never depends on the order calls finished in. The ordinal keeps the
    /// recording order for [`TapeMatch::Sequence`].
    entries: BTreeMap<String, (u64, TapeEntry)>,
    /// The ordinal the next new entry gets.
    next: u64,
}

impl CallData {
    /// The entries in recording order.
    fn in_order(&self) -> Vec<&TapeEntry> {
        let mut v: Vec<&(u64, TapeEntry)> = self.entries.values().collect();
        v.sort_by_key(|(n, _)| *n);
        v.into_iter().map(|(_, e)| e).collect()
    }

    /// Each entry's place in recording order (0, 1, …), in key order, or `None`
    /// when key order already is recording order (nothing to write).
    fn ranks(&self) -> Option<Vec<u64>> {
        let ordinals: Vec<u64> = self.entries.values().map(|(n, _)| *n).collect();
        if ordinals.windows(2).all(|w| w[0] < w[1]) {
            return None;
        }
        let mut sorted = ordinals.clone();
        sorted.sort_unstable();
        Some(
            ordinals
                .iter()
                .map(|n| sorted.partition_point(|m| m < n) as u64)
                .collect(),
        )
    }
}

#[derive(Default)]
struct TapeData {
    note: String,
    /// call name → its entries.
    calls: BTreeMap<String, CallData>,
}

/// Recorded decisions by call name: record them from a live classifier, save
/// them to a file, load them and replay them offline (in tests, CI, demos).
///
/// A `Tape` is a handle: clones share the same recording, so the classifier made
/// by [`Tape::recorder`] records into the tape you later [`save`](Tape::save).
///
/// ```
/// use std::sync::Arc;
/// use serde_json::json;
/// use toolnexus::classifier::*;
/// use toolnexus::judge::{Tape, noul, questions};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let live = create_classifier(ClassifierOptions {
///     style: ClassifierStyle::Custom,
///     evaluate: Some(Arc::new(|_ctx, _state, _qs| Box::pin(async {
///         Decision::from_slice(br#"{"model":"rule-1","answers":{"spam":{"type":"noul","noul":0.02}}}"#)
///             .map_err(|e| e.to_string())
///     }))),
///     ..Default::default()
/// })?;
/// let qs = questions(&[noul("spam", "Is this unsolicited bulk mail?")])?;
/// let ctx = EvalContext::new().with_call_name("inbox");
///
/// let tape = Tape::new().with_note("inbox filter, recorded from the rule engine");
/// let live_decision = tape.recorder(live).evaluate_ctx(ctx.clone(), json!("hi Bob"), &qs).await?;
///
/// let dir = std::env::temp_dir().join(format!("toolnexus-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("inbox.tape.json");
/// tape.save(&path)?;
///
/// let replayer = Tape::load(&path)?.replayer();
/// assert_eq!(replayer.evaluate_ctx(ctx, json!("hi Bob"), &qs).await?, live_decision);
/// let miss = replayer.evaluate_ctx(EvalContext::new().with_call_name("outbox"), json!("hi Bob"), &qs).await;
/// assert_eq!(
///     miss.unwrap_err().to_string(),
///     "tape: no recorded decision for call \"outbox\": the tape has no recordings under that call (its calls: \"inbox\")"
/// );
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Default)]
pub struct Tape {
    inner: Arc<Mutex<TapeData>>,
}

impl fmt::Debug for Tape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let data = self.lock();
        f.debug_struct("Tape")
            .field("note", &data.note)
            .field("calls", &data.calls.keys().collect::<Vec<_>>())
            .field(
                "entries",
                &data.calls.values().map(|c| c.entries.len()).sum::<usize>(),
            )
            .finish()
    }
}

impl Tape {
    /// An empty tape.
    ///
    /// ```
    /// assert!(toolnexus::judge::Tape::new().is_empty());
    /// ```
    pub fn new() -> Tape {
        Tape::default()
    }

    fn lock(&self) -> MutexGuard<'_, TapeData> {
        // A panic while holding the lock cannot leave the map half-updated (every
        // update is one insert), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sets the free-text note saved with the tape (what was recorded, from where, why).
    ///
    /// ```
    /// let tape = toolnexus::judge::Tape::new().with_note("triage, recorded 2026-09-17");
    /// assert_eq!(tape.note(), "triage, recorded 2026-09-17");
    /// ```
    pub fn with_note(self, note: impl Into<String>) -> Tape {
        self.set_note(note);
        self
    }

    /// Replaces the note.
    ///
    /// ```
    /// let tape = toolnexus::judge::Tape::new();
    /// tape.set_note("re-recorded after the rubric change");
    /// assert_eq!(tape.note(), "re-recorded after the rubric change");
    /// ```
    pub fn set_note(&self, note: impl Into<String>) {
        self.lock().note = note.into();
    }

    /// The note.
    ///
    /// ```
    /// assert_eq!(toolnexus::judge::Tape::new().note(), "");
    /// ```
    pub fn note(&self) -> String {
        self.lock().note.clone()
    }

    /// How many calls are recorded.
    ///
    /// ```
    /// assert_eq!(toolnexus::judge::Tape::new().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.lock().calls.values().map(|c| c.entries.len()).sum()
    }

    /// Whether nothing is recorded.
    ///
    /// ```
    /// assert!(toolnexus::judge::Tape::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The call names recorded, sorted.
    ///
    /// ```
    /// assert!(toolnexus::judge::Tape::new().call_names().is_empty());
    /// ```
    pub fn call_names(&self) -> Vec<String> {
        self.lock().calls.keys().cloned().collect()
    }

    /// Every entry, by call name, then by canonical questions and state (the file's order).
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::ErrorKind;
    /// use toolnexus::judge::{Tape, TapeEntry, TapeOutcome, noul, questions};
    ///
    /// let tape = Tape::new();
    /// tape.record(TapeEntry {
    ///     call_name: "c".into(),
    ///     model: "m".into(),
    ///     state: json!(1),
    ///     questions: questions(&[noul("q", "?")])?,
    ///     outcome: TapeOutcome::Failure { kind: ErrorKind::Timeout, message: "classifier: request timeout after 10000ms".into(), status: None },
    ///     request_id: None,
    /// });
    /// assert_eq!(tape.entries()[0].call_name, "c");
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn entries(&self) -> Vec<TapeEntry> {
        self.lock()
            .calls
            .values()
            .flat_map(|c| c.entries.values().map(|(_, e)| e.clone()))
            .collect()
    }

    /// The entries under one call name in recording order: the order
    /// [`TapeMatch::Sequence`] replays them in. An entry recorded again keeps
    /// its first place. Empty when the call name has no recordings.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::ErrorKind;
    /// use toolnexus::judge::{Tape, TapeEntry, TapeOutcome, noul, questions};
    ///
    /// let tape = Tape::new();
    /// for n in [3, 1, 2] {
    ///     tape.record(TapeEntry {
    ///         call_name: "c".into(),
    ///         model: "m".into(),
    ///         state: json!(n),
    ///         questions: questions(&[noul("q", "?")])?,
    ///         outcome: TapeOutcome::Failure { kind: ErrorKind::Timeout, message: "classifier: request timeout after 10000ms".into(), status: None },
    ///         request_id: None,
    ///     });
    /// }
    /// let states = |v: Vec<TapeEntry>| v.into_iter().map(|e| e.state).collect::<Vec<_>>();
    /// assert_eq!(states(tape.call_entries("c")), [json!(3), json!(1), json!(2)]);
    /// assert_eq!(states(tape.entries()), [json!(1), json!(2), json!(3)], "the file's order");
    /// assert!(tape.call_entries("other").is_empty());
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn call_entries(&self, call_name: &str) -> Vec<TapeEntry> {
        self.lock()
            .calls
            .get(call_name)
            .map(|c| c.in_order().into_iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Adds an entry. An entry for the same call name, questions and state is
    /// replaced: the last recording wins, in the place of the first (see
    /// [`Tape::call_entries`]).
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::{Decision, ErrorKind};
    /// use toolnexus::judge::{Tape, TapeEntry, TapeOutcome, noul, questions};
    ///
    /// let tape = Tape::new();
    /// let entry = TapeEntry {
    ///     call_name: "c".into(),
    ///     model: "m".into(),
    ///     state: json!("s"),
    ///     questions: questions(&[noul("q", "?")])?,
    ///     outcome: TapeOutcome::Failure { kind: ErrorKind::Transport, message: "classifier: connection refused".into(), status: None },
    ///     request_id: None,
    /// };
    /// tape.record(entry.clone());
    /// tape.record(TapeEntry { outcome: TapeOutcome::Decision(Decision::from_slice(br#"{"model":"m","answers":{}}"#)?), ..entry });
    /// assert_eq!(tape.len(), 1);
    /// assert!(tape.entries()[0].outcome.is_decision());
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn record(&self, entry: TapeEntry) {
        let key = entry_key(&entry.questions, &entry.state);
        let mut data = self.lock();
        let call = data.calls.entry(entry.call_name.clone()).or_default();
        match call.entries.get_mut(&key) {
            Some(slot) => slot.1 = entry,
            None => {
                let n = call.next;
                call.next += 1;
                call.entries.insert(key, (n, entry));
            }
        }
    }

    /// Wraps a live classifier so every call is recorded into this tape under its
    /// [`EvalContext::call_name`](crate::classifier::EvalContext): the decision,
    /// or the failure (kind, message, HTTP status) as data. A cancelled call is
    /// not recorded: cancelling is the caller's act, not the model's answer.
    ///
    /// The returned classifier has style `Custom` and the live one's model, and
    /// returns exactly what the live one returns, errors unchanged.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use serde_json::json;
    /// use toolnexus::classifier::*;
    /// use toolnexus::judge::{Tape, noul, questions};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let live = create_classifier(ClassifierOptions {
    ///     style: ClassifierStyle::Custom,
    ///     evaluate: Some(Arc::new(|_ctx, _state, _qs| Box::pin(async { Err("model unavailable".to_string()) }))),
    ///     ..Default::default()
    /// })?;
    /// let tape = Tape::new();
    /// let qs = questions(&[noul("spam", "Is this unsolicited bulk mail?")])?;
    /// let e = tape.recorder(live).evaluate(json!("hi"), &qs).await.unwrap_err();
    /// assert_eq!(e.to_string(), "classifier: custom: model unavailable");
    /// assert!(!tape.entries()[0].outcome.is_decision(), "the failure is on the tape");
    /// # Ok(())
    /// # }
    /// ```
    pub fn recorder(&self, live: Classifier) -> Classifier {
        let tape = self.clone();
        let model = live.model().to_string();
        // Recording changes no answer: the live stack's fingerprint passes on.
        let beneath = live.clone();
        Classifier::from_evaluator(model, Recorder { tape, live }).layered_over(&beneath)
    }

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

    /// The file's text: pretty-printed JSON, keys sorted bytewise at every depth,
    /// two-space indents, a final newline. The same tape gives the same bytes.
    ///
    /// Within a call name, entries are listed by canonical questions and state.
    /// When that is not the order they were recorded in, every entry of that
    /// call also gets an `"ordinal"` (its place in recording order, from 0), so
    /// [`TapeMatch::Sequence`] replays the same after a save and load; a call
    /// whose entries were recorded in listed order (like every file written
    /// before ordinals existed) is written without them, byte for byte as before.
    ///
    /// ```
    /// let text = toolnexus::judge::Tape::new().with_note("empty").to_json();
    /// assert_eq!(text, "{\n  \"calls\": {},\n  \"format\": \"toolnexus.tape\",\n  \"note\": \"empty\",\n  \"version\": 1\n}\n");
    /// ```
    pub fn to_json(&self) -> String {
        let data = self.lock();
        let mut calls = Map::new();
        for (name, call) in &data.calls {
            let ranks = call.ranks();
            let list = call
                .entries
                .values()
                .enumerate()
                .map(|(i, (_, e))| {
                    let mut v = entry_value(e);
                    if let (Some(r), Value::Object(m)) = (&ranks, &mut v) {
                        m.insert("ordinal".into(), Value::from(r[i]));
                    }
                    v
                })
                .collect();
            calls.insert(name.clone(), Value::Array(list));
        }
        let mut top = Map::new();
        top.insert("calls".into(), Value::Object(calls));
        top.insert("format".into(), Value::from(TAPE_FORMAT));
        top.insert("note".into(), Value::from(data.note.as_str()));
        top.insert("version".into(), Value::from(TAPE_VERSION));
        let mut out = String::with_capacity(4096);
        write_pretty(&mut out, &Value::Object(top), 0);
        out.push('\n');
        out
    }

    /// Reads a tape from its text (see [`Tape::load`] for the checks). Errors
    /// name the source as `<input>`.
    ///
    /// ```
    /// use toolnexus::judge::Tape;
    /// let tape = Tape::from_json(r#"{"version": 1, "calls": {}}"#)?;
    /// assert!(tape.is_empty());
    /// let e = Tape::from_json(r#"{"version": 2, "calls": {}}"#).unwrap_err();
    /// assert!(e.is_unsupported_version());
    /// # Ok::<(), toolnexus::judge::TapeError>(())
    /// ```
    pub fn from_json(text: &str) -> Result<Tape, TapeError> {
        parse(text, None)
    }

    /// Loads a tape file. A file that is not valid JSON is an error naming the
    /// file, line and column; so is a file written by a newer version of the
    /// format, a file with no `version`, and a file of the wrong shape (naming the
    /// call and entry). Every decision is decoded as strictly as a live one.
    /// Unknown extra fields are ignored.
    ///
    /// Recording order (see [`Tape::to_json`]) comes from the entries'
    /// `"ordinal"`s when a call's entries have them, else from their order in
    /// the file. Ordinals must be distinct non-negative integers (gaps are
    /// fine), on every entry of a call or on none.
    ///
    /// ```
    /// use toolnexus::judge::Tape;
    ///
    /// let path = std::env::temp_dir().join(format!("toolnexus-doc-load-{}.json", std::process::id()));
    /// std::fs::write(&path, "{\"version\": 1, \"calls\": {\n  \"triage\": [}\n}")?;
    /// let e = Tape::load(&path).unwrap_err();
    /// assert!(e.to_string().contains(&path.display().to_string()), "{e}");
    /// assert_eq!(e.line(), Some(2));
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Tape, TapeError> {
        let path = path.as_ref();
        let text = fs::read_to_string(path).map_err(|e| {
            TapeError::new(TapeErrorKind::Io, Some(path), format!("cannot read: {e}")).source(e)
        })?;
        parse(&text, Some(path))
    }

    /// Saves the tape atomically: the text is written to a temporary file in the
    /// same directory, flushed to disk, then renamed over `path`, so a crash
    /// mid-save leaves the previous file whole. (A crash can leave a stray
    /// `.<name>.<pid>.<n>.tmp` file beside it; it is never read.)
    ///
    /// ```
    /// use toolnexus::judge::Tape;
    ///
    /// let path = std::env::temp_dir().join(format!("toolnexus-doc-save-{}.json", std::process::id()));
    /// Tape::new().with_note("first").save(&path)?;
    /// Tape::new().with_note("second").save(&path)?;
    /// assert_eq!(Tape::load(&path)?.note(), "second");
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), TapeError> {
        write_atomic(path, self.to_json().as_bytes())
    }
}

fn error_kind_name(kind: ErrorKind) -> &'static str {
    kind.as_str()
}

fn error_kind_from_name(name: &str) -> Option<ErrorKind> {
    name.parse().ok()
}

fn entry_value(e: &TapeEntry) -> Value {
    let mut m = Map::new();
    m.insert("model".into(), Value::from(e.model.as_str()));
    m.insert("questions".into(), questions_wire(&e.questions));
    m.insert("state".into(), e.state.clone());
    if let Some(id) = &e.request_id {
        m.insert("request_id".into(), Value::from(id.as_str()));
    }
    match &e.outcome {
        TapeOutcome::Decision(d) => {
            m.insert("decision".into(), d.to_value());
        }
        TapeOutcome::Failure {
            kind,
            message,
            status,
        } => {
            let mut f = Map::new();
            f.insert("kind".into(), Value::from(error_kind_name(*kind)));
            f.insert("message".into(), Value::from(message.as_str()));
            if let Some(s) = status {
                f.insert("status".into(), Value::from(*s));
            }
            m.insert("error".into(), Value::Object(f));
        }
    }
    Value::Object(m)
}

/// Pretty JSON with keys sorted bytewise, written by hand so the order never
/// depends on the map type a build happens to use. Scalars and empty containers
/// are written in canonical form.
fn write_pretty(out: &mut String, v: &Value, depth: usize) {
    let pad = |out: &mut String, depth: usize| {
        for _ in 0..depth {
            out.push_str("  ");
        }
    };
    match v {
        Value::Object(m) if !m.is_empty() => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push_str("{\n");
            for (i, k) in keys.iter().enumerate() {
                pad(out, depth + 1);
                write_canonical(out, &Value::String((*k).clone()));
                out.push_str(": ");
                write_pretty(out, &m[k.as_str()], depth + 1);
                if i + 1 < keys.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            pad(out, depth);
            out.push('}');
        }
        Value::Array(a) if !a.is_empty() => {
            out.push_str("[\n");
            for (i, item) in a.iter().enumerate() {
                pad(out, depth + 1);
                write_pretty(out, item, depth + 1);
                if i + 1 < a.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            pad(out, depth);
            out.push(']');
        }
        other => write_canonical(out, other),
    }
}

fn parse(text: &str, path: Option<&Path>) -> Result<Tape, TapeError> {
    let v: Value = serde_json::from_str(text).map_err(|e| {
        let full = e.to_string();
        let what = full
            .rsplit_once(" at line ")
            .map_or(full.as_str(), |(what, _)| what)
            .to_string();
        let (line, column) = (e.line(), e.column());
        let mut err = TapeError::new(
            TapeErrorKind::Syntax,
            path,
            format!("invalid JSON at line {line}, column {column}: {what}"),
        )
        .source(e);
        err.line = Some(line);
        err.column = Some(column);
        err
    })?;
    let shape = |text: String| TapeError::new(TapeErrorKind::Shape, path, text);
    let top = v
        .as_object()
        .ok_or_else(|| shape("a tape is a JSON object".into()))?;
    match top.get("version") {
        None => {
            return Err(TapeError::new(
                TapeErrorKind::Version,
                path,
                "no \"version\" field: not a toolnexus tape".to_string(),
            ));
        }
        Some(Value::Number(n)) if n.as_u64() == Some(TAPE_VERSION) => {}
        Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n > TAPE_VERSION) => {
            return Err(TapeError::new(
                TapeErrorKind::Version,
                path,
                format!(
                    "version {n} is newer than this library reads (up to {TAPE_VERSION}); upgrade toolnexus to replay it"
                ),
            ));
        }
        Some(other) => {
            return Err(TapeError::new(
                TapeErrorKind::Version,
                path,
                format!("unsupported version {other} (this library reads {TAPE_VERSION})"),
            ));
        }
    }
    match top.get("format") {
        None | Some(Value::Null) => {}
        Some(Value::String(f)) if f == TAPE_FORMAT => {}
        Some(other) => {
            return Err(shape(format!(
                "\"format\" is {other}, want \"{TAPE_FORMAT}\""
            )));
        }
    }
    let note = match top.get("note") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(shape("\"note\" is not a string".into())),
    };
    let calls = match top.get("calls") {
        Some(Value::Object(c)) => c,
        Some(_) => {
            return Err(shape(
                "\"calls\" is not an object of call name to entries".into(),
            ));
        }
        None => return Err(shape("no \"calls\" field".into())),
    };
    let tape = Tape::new().with_note(note);
    for (call, entries) in calls {
        let Value::Array(entries) = entries else {
            return Err(shape(format!("call {call:?}: entries are not an array")));
        };
        let mut parsed = Vec::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            let entry = parse_entry(call, e)
                .map_err(|text| shape(format!("call {call:?} entry {i}: {text}")))?;
            parsed.push((parse_ordinal(e), entry));
        }
        // Recording order: by ordinal when the entries carry one, else file order.
        let mut seen: HashMap<u64, usize> = HashMap::new();
        let mut order = Vec::with_capacity(parsed.len());
        let with = parsed.iter().filter(|(o, _)| o.is_some()).count();
        for (i, (ordinal, entry)) in parsed.into_iter().enumerate() {
            let at = |text: String| shape(format!("call {call:?} entry {i}: {text}"));
            let n = match ordinal {
                None if with == 0 => i as u64,
                None => {
                    return Err(at(
                        "no \"ordinal\", but other entries of this call have one (give every entry of a call an ordinal, or none)".into(),
                    ));
                }
                Some(Err(())) => {
                    return Err(at("\"ordinal\" is not a non-negative integer".into()));
                }
                Some(Ok(n)) => n,
            };
            if let Some(j) = seen.insert(n, i) {
                return Err(at(format!("\"ordinal\" {n} is also entry {j}'s")));
            }
            order.push((n, entry));
        }
        order.sort_by_key(|(n, _)| *n);
        for (_, entry) in order {
            tape.record(entry);
        }
    }
    Ok(tape)
}

/// An entry's `ordinal`: `None` when absent, `Some(Err(()))` when not a u64.
fn parse_ordinal(v: &Value) -> Option<Result<u64, ()>> {
    match v.get("ordinal") {
        None | Some(Value::Null) => None,
        Some(n) => Some(n.as_u64().ok_or(())),
    }
}

fn strip(e: ClassifierError) -> String {
    e.detail().to_string()
}

fn parse_entry(call: &str, v: &Value) -> Result<TapeEntry, String> {
    let o = v.as_object().ok_or("entry is not a JSON object")?;
    let model = match o.get("model") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err("\"model\" is not a string".into()),
        None => return Err("no \"model\"".into()),
    };
    let state = o.get("state").cloned().ok_or("no \"state\"")?;
    let questions =
        questions_from_wire(o.get("questions").ok_or("no \"questions\"")?).map_err(strip)?;
    let outcome = match (o.get("decision"), o.get("error")) {
        (Some(d), None) => TapeOutcome::Decision(
            Decision::from_value(d).map_err(|e| format!("decision: {}", strip(e)))?,
        ),
        (None, Some(Value::Object(f))) => {
            let kind = match f.get("kind") {
                Some(Value::String(k)) => error_kind_from_name(k)
                    .ok_or_else(|| format!("error has unknown kind {k:?}"))?,
                _ => return Err("error has no string \"kind\"".into()),
            };
            let message = match f.get("message") {
                Some(Value::String(m)) => m.clone(),
                _ => return Err("error has no string \"message\"".into()),
            };
            let status = match f.get("status") {
                None | Some(Value::Null) => None,
                Some(s) => Some(
                    s.as_u64()
                        .and_then(|s| u16::try_from(s).ok())
                        .ok_or("error \"status\" is not an HTTP status")?,
                ),
            };
            TapeOutcome::Failure {
                kind,
                message,
                status,
            }
        }
        (None, Some(_)) => return Err("\"error\" is not an object".into()),
        (Some(_), Some(_)) => return Err("has both \"decision\" and \"error\"".into()),
        (None, None) => return Err("has neither \"decision\" nor \"error\"".into()),
    };
    let request_id = match o.get("request_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("\"request_id\" is not a string".into()),
    };
    Ok(TapeEntry {
        call_name: call.to_string(),
        model,
        state,
        questions,
        outcome,
        request_id,
    })
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The first half of a save: writes `bytes` to a fresh temporary file beside
/// `path` and flushes it to disk. `path` itself is untouched. Returns the
/// temporary file's path for [`commit`].
pub(crate) fn stage(path: &Path, bytes: &[u8]) -> Result<PathBuf, TapeError> {
    let io = |what: &str, e: std::io::Error| {
        TapeError::new(TapeErrorKind::Io, Some(path), format!("{what}: {e}")).source(e)
    };
    let name = path.file_name().ok_or_else(|| {
        TapeError::new(TapeErrorKind::Io, Some(path), "not a file path".to_string())
    })?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(
        ".{}.{}.{n}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        });
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(io("cannot write", e));
    }
    Ok(tmp)
}

/// The second half of a save: renames the staged file over `path`, then flushes
/// the directory entry where the platform allows it.
pub(crate) fn commit(tmp: &Path, path: &Path) -> Result<(), TapeError> {
    if let Err(e) = fs::rename(tmp, path) {
        let _ = fs::remove_file(tmp);
        return Err(TapeError::new(
            TapeErrorKind::Io,
            Some(path),
            format!("cannot replace: {e}"),
        )
        .source(e));
    }
    #[cfg(unix)]
    if let Some(dir) = tmp.parent() {
        // Best effort: the rename is already visible; this makes it durable.
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` so that a crash leaves either the old file or the
/// new one, never a mix: a temporary file beside it, flushed, then renamed
/// over it (the way tapes, run files and calibration files are saved).
///
/// ```
/// let path = std::env::temp_dir().join(format!("toolnexus-doc-atomic-{}", std::process::id()));
/// toolnexus::judge::write_atomic(&path, b"one")?;
/// toolnexus::judge::write_atomic(&path, b"two")?;
/// assert_eq!(std::fs::read(&path).unwrap(), b"two");
/// # std::fs::remove_file(&path).unwrap();
/// # Ok::<(), toolnexus::judge::TapeError>(())
/// ```
pub fn write_atomic(path: impl AsRef<Path>, bytes: &[u8]) -> Result<(), TapeError> {
    let path = path.as_ref();
    let tmp = stage(path, bytes)?;
    commit(&tmp, path)
}

/// What kind of [`TapeError`] occurred.
///
/// ```
/// use toolnexus::judge::{Tape, TapeErrorKind};
/// let e = Tape::from_json("[]").unwrap_err();
/// assert_eq!(e.kind(), TapeErrorKind::Shape);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TapeErrorKind {
    /// The file could not be read or written.
    Io,
    /// The file is not valid JSON.
    Syntax,
    /// The file has no version, or one this library does not read.
    Version,
    /// The file is JSON of the wrong shape (or holds a decision that does not decode).
    Shape,
}

/// The error of loading or saving a tape. Its message starts `tape: <path>: `
/// and, for invalid JSON, gives the line and column.
///
/// ```
/// use toolnexus::judge::Tape;
/// let e = Tape::from_json("{\"version\": 1,").unwrap_err();
/// assert!(e.is_corrupt());
/// assert!(e.to_string().starts_with("tape: <input>: invalid JSON at line 1, column"), "{e}");
/// ```
pub struct TapeError {
    kind: TapeErrorKind,
    path: Option<PathBuf>,
    message: String,
    line: Option<usize>,
    column: Option<usize>,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl TapeError {
    fn new(kind: TapeErrorKind, path: Option<&Path>, text: String) -> TapeError {
        let shown = path.map_or_else(|| "<input>".to_string(), |p| p.display().to_string());
        TapeError {
            kind,
            path: path.map(Path::to_path_buf),
            message: format!("tape: {shown}: {text}"),
            line: None,
            column: None,
            source: None,
        }
    }

    fn source(mut self, e: impl std::error::Error + Send + Sync + 'static) -> TapeError {
        self.source = Some(Box::new(e));
        self
    }

    /// What went wrong.
    ///
    /// ```
    /// use toolnexus::judge::{Tape, TapeErrorKind};
    /// assert_eq!(Tape::load("/nonexistent/dir/x.json").unwrap_err().kind(), TapeErrorKind::Io);
    /// ```
    pub fn kind(&self) -> TapeErrorKind {
        self.kind
    }

    /// The file involved (`None` for [`Tape::from_json`]).
    ///
    /// ```
    /// use toolnexus::judge::Tape;
    /// let e = Tape::load("/nonexistent/dir/x.json").unwrap_err();
    /// assert_eq!(e.path(), Some(std::path::Path::new("/nonexistent/dir/x.json")));
    /// ```
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The 1-based line of a JSON syntax error.
    ///
    /// ```
    /// let e = toolnexus::judge::Tape::from_json("{\n\n  oops").unwrap_err();
    /// assert_eq!(e.line(), Some(3));
    /// ```
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// The 1-based column of a JSON syntax error.
    ///
    /// ```
    /// let e = toolnexus::judge::Tape::from_json("{\n\n  oops").unwrap_err();
    /// assert_eq!(e.column(), Some(3));
    /// ```
    pub fn column(&self) -> Option<usize> {
        self.column
    }

    /// The file is not a readable tape: invalid JSON or the wrong shape.
    ///
    /// ```
    /// assert!(toolnexus::judge::Tape::from_json("nope").unwrap_err().is_corrupt());
    /// ```
    pub fn is_corrupt(&self) -> bool {
        matches!(self.kind, TapeErrorKind::Syntax | TapeErrorKind::Shape)
    }

    /// The file has no version or one this library does not read (e.g. a newer one).
    ///
    /// ```
    /// let e = toolnexus::judge::Tape::from_json(r#"{"version": 9, "calls": {}}"#).unwrap_err();
    /// assert!(e.is_unsupported_version());
    /// ```
    pub fn is_unsupported_version(&self) -> bool {
        self.kind == TapeErrorKind::Version
    }
}

impl fmt::Display for TapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for TapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TapeError")
            .field("kind", &self.kind)
            .field("message", &self.message)
            .finish()
    }
}

impl std::error::Error for TapeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn temp_dir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("toolnexus-tape-unit-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn sample(note: &str) -> Tape {
        let tape = Tape::new().with_note(note);
        tape.record(TapeEntry {
            call_name: "c".into(),
            model: "m".into(),
            state: json!({"b": 1, "a": "x"}),
            questions: crate::judge::questions(&[crate::judge::noul("q", "Is it?")]).unwrap(),
            outcome: TapeOutcome::Decision(
                Decision::from_slice(
                    br#"{"model":"m","answers":{"q":{"type":"noul","noul":0.25}}}"#,
                )
                .unwrap(),
            ),
            request_id: None,
        });
        tape
    }

    #[test]
    fn a_save_interrupted_before_rename_leaves_the_old_file_whole() {
        let dir = temp_dir("interrupted");
        let path = dir.join("t.tape.json");
        sample("old").save(&path).unwrap();
        let before = fs::read(&path).unwrap();

        // Stage the new version, then stop as a crash would: no rename.
        let new = sample("new").to_json();
        let tmp = stage(&path, &new.as_bytes()[..new.len() / 2]).unwrap();
        assert!(tmp.exists());
        assert_eq!(
            tmp.parent(),
            path.parent(),
            "the temp file is in the same directory"
        );
        assert_eq!(
            fs::read(&path).unwrap(),
            before,
            "the old file is untouched"
        );
        assert_eq!(Tape::load(&path).unwrap().note(), "old");

        // A later save still works and replaces the file whole.
        sample("newer").save(&path).unwrap();
        assert_eq!(Tape::load(&path).unwrap().note(), "newer");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn commit_finishes_a_staged_save() {
        let dir = temp_dir("commit");
        let path = dir.join("t.tape.json");
        let tmp = stage(&path, sample("staged").to_json().as_bytes()).unwrap();
        assert!(!path.exists());
        commit(&tmp, &path).unwrap();
        assert!(!tmp.exists());
        assert_eq!(Tape::load(&path).unwrap().note(), "staged");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn pretty_form_is_sorted_and_stable() {
        let text = sample("n").to_json();
        let want = r#"{
  "calls": {
    "c": [
      {
        "decision": {
          "answers": {
            "q": {
              "noul": 0.25,
              "type": "noul"
            }
          },
          "calibrated": true,
          "model": "m",
          "usage": {
            "input_tokens": 0,
            "output_tokens": 0
          }
        },
        "model": "m",
        "questions": {
          "q": {
            "instructions": "Is it?",
            "type": "noul"
          }
        },
        "state": {
          "a": "x",
          "b": 1
        }
      }
    ]
  },
  "format": "toolnexus.tape",
  "note": "n",
  "version": 1
}
"#;
        assert_eq!(text, want);
        assert_eq!(Tape::from_json(&text).unwrap().to_json(), text);
    }

    fn first(d: &Diff) -> (&str, Option<&Value>, Option<&Value>) {
        let (p, a, b) = d.first.as_ref().expect("a difference");
        (p.as_str(), a.as_ref(), b.as_ref())
    }

    #[test]
    fn diff_names_the_first_differing_path_with_both_values() {
        let was = json!({"customer": {"tier": "gold", "id": 7}, "items": [{"name": "a"}, {"name": "b"}, {"name": "c"}]});
        let now = json!({"customer": {"tier": "silver", "id": 7.0}, "items": [{"name": "a"}, {"name": "b"}, {"name": "x"}]});
        let d = diff(&was, &now, "state");
        assert_eq!(d.count, 2);
        // Keys are walked sorted: "customer" before "items"; 7 and 7.0 are equal.
        assert_eq!(
            first(&d),
            (
                "state.customer.tier",
                Some(&json!("gold")),
                Some(&json!("silver"))
            )
        );
        let d = diff(
            &json!([1, 2, {"name": "p"}]),
            &json!([1, 2, {"name": "q"}]),
            "state",
        );
        assert_eq!(first(&d).0, "state[2].name");
        let d = diff(
            &json!({"a b": 1, "": 2}),
            &json!({"a b": 1, "": 3}),
            "state",
        );
        assert_eq!(first(&d).0, "state[\"\"]");
        let d = diff(&json!({"a b": 1}), &json!({"a b": 2}), "state");
        assert_eq!(first(&d).0, "state[\"a b\"]");
        assert_eq!(
            diff(&json!("same"), &json!("same"), "state"),
            Diff::default()
        );
        assert_eq!(diff(&json!({}), &json!({}), "state"), Diff::default());
        let d = diff(&json!(1), &json!("1"), "state");
        assert_eq!((d.count, first(&d).0), (1, "state"));
    }

    #[test]
    fn diff_counts_leaves_of_values_on_one_side_only() {
        let d = diff(
            &json!({"a": 1}),
            &json!({"a": 1, "b": {"c": 1, "d": [1, 2]}}),
            "state",
        );
        assert_eq!(d.count, 3);
        assert_eq!(
            first(&d),
            ("state.b", None, Some(&json!({"c": 1, "d": [1, 2]})))
        );
        let d = diff(&json!([1, 2, 3]), &json!([1]), "state");
        assert_eq!(d.count, 2);
        assert_eq!(first(&d), ("state[1]", Some(&json!(2)), None));
        // A container against a scalar counts the bigger side.
        assert_eq!(
            diff(&json!({"x": [1, 2, 3]}), &json!({"x": 0}), "s").count,
            3
        );
        // An empty container is one leaf.
        assert_eq!(diff(&json!({"x": []}), &json!({"x": {}}), "s").count, 1);
    }

    #[test]
    fn nearest_is_the_fewest_differences_then_the_earliest() {
        let asked = diff_doc(json!({"q": 1}), Some(json!({"a": 1, "b": 2, "c": 3})));
        let recorded = [
            json!({"a": 0, "b": 0, "c": 3}),
            json!({"a": 1, "b": 0, "c": 3}),
            json!({"a": 1, "b": 2, "c": 0}),
        ];
        let text = nearest_text(
            recorded
                .iter()
                .map(|s| diff_doc(json!({"q": 1}), Some(s.clone()))),
            &asked,
        );
        assert_eq!(
            text,
            "the nearest recording (2 of 3) differs in 1 value, first at state.b: recorded 0, asked 2"
        );
        let text = nearest_text(
            [json!({"q": 2}), json!({"q": 3, "r": 1})]
                .into_iter()
                .map(|q| diff_doc(q, None)),
            &diff_doc(json!({"q": 1, "r": 1}), None),
        );
        assert_eq!(
            text,
            "the nearest recording (2 of 2) differs in 1 value, first at questions.q: recorded 3, asked 1"
        );
        let text = nearest_text(
            [json!(1), json!(2)].into_iter().map(|q| diff_doc(q, None)),
            &diff_doc(json!({"x": [1, 2]}), None),
        );
        assert!(
            text.starts_with(
                "the nearest recording (1 of 2) differs in 2 values, first at questions:"
            ),
            "{text}"
        );
    }

    #[test]
    fn shown_values_are_cut_at_sixty_characters() {
        assert_eq!(shown_value(None), "(absent)");
        assert_eq!(
            shown_value(Some(&json!({"b": 1, "a": 2.0}))),
            r#"{"a":2,"b":1}"#
        );
        let long = "é".repeat(100);
        let shown = shown_value(Some(&json!(long)));
        assert_eq!(shown.chars().count(), VALUE_SHOWN + 1);
        assert!(
            shown.starts_with("\"éé") && shown.ends_with("é…"),
            "{shown}"
        );
        let exact = "x".repeat(VALUE_SHOWN - 2);
        assert_eq!(shown_value(Some(&json!(exact))), format!("\"{exact}\""));
    }

    #[test]
    fn an_unknown_call_names_the_recorded_ones() {
        assert_eq!(no_such_call(&[]), "the tape is empty");
        assert_eq!(
            no_such_call(&["a".into(), "b\n".into()]),
            "the tape has no recordings under that call (its calls: \"a\", \"b\\n\")"
        );
        let many: Vec<String> = (0..12).map(|i| format!("c{i:02}")).collect();
        let text = no_such_call(&many);
        assert!(
            text.contains("\"c09\", … 12 in all)") && !text.contains("c10"),
            "{text}"
        );
    }

    fn failure_at(tape: &Tape, call: &str, state: Value) {
        tape.record(TapeEntry {
            call_name: call.into(),
            model: "m".into(),
            state,
            questions: crate::judge::questions(&[crate::judge::noul("q", "Is it?")]).unwrap(),
            outcome: TapeOutcome::Failure {
                kind: ErrorKind::Timeout,
                message: "classifier: request timeout after 10ms".into(),
                status: None,
            },
            request_id: None,
        });
    }

    #[test]
    fn ordinals_are_written_only_when_recording_order_is_not_file_order() {
        let in_order = Tape::new();
        for n in [1, 2, 3] {
            failure_at(&in_order, "c", json!(n));
        }
        assert!(!in_order.to_json().contains("ordinal"));
        assert_eq!(in_order.lock().calls["c"].ranks(), None);

        let shuffled = Tape::new();
        for n in [3, 1, 2] {
            failure_at(&shuffled, "c", json!(n));
        }
        failure_at(&shuffled, "d", json!(1));
        failure_at(&shuffled, "c", json!(1)); // re-recorded: keeps its place
        assert_eq!(shuffled.lock().calls["c"].ranks(), Some(vec![1, 2, 0]));
        let text = shuffled.to_json();
        assert_eq!(text.matches("\"ordinal\"").count(), 3, "{text}");
        let loaded = Tape::from_json(&text).unwrap();
        assert_eq!(loaded.to_json(), text);
        let states: Vec<Value> = loaded
            .call_entries("c")
            .into_iter()
            .map(|e| e.state)
            .collect();
        assert_eq!(states, [json!(3), json!(1), json!(2)]);
    }

    #[test]
    fn bad_ordinals_are_refused_naming_the_entry() {
        let text = |a: &str, b: &str| {
            let mut v: Value = serde_json::from_str(&sample("n").to_json()).unwrap();
            let e = v["calls"]["c"][0].clone();
            let mut one = e.clone();
            let mut two = e;
            two["state"] = json!("other");
            if !a.is_empty() {
                one["ordinal"] = serde_json::from_str(a).unwrap();
            }
            if !b.is_empty() {
                two["ordinal"] = serde_json::from_str(b).unwrap();
            }
            v["calls"]["c"] = json!([one, two]);
            v.to_string()
        };
        let err = |a, b| Tape::from_json(&text(a, b)).unwrap_err().to_string();
        assert_eq!(
            err("0", ""),
            "tape: <input>: call \"c\" entry 1: no \"ordinal\", but other entries of this call have one (give every entry of a call an ordinal, or none)"
        );
        assert_eq!(
            err("4", "4"),
            "tape: <input>: call \"c\" entry 1: \"ordinal\" 4 is also entry 0's"
        );
        assert_eq!(
            err("-1", "0"),
            "tape: <input>: call \"c\" entry 0: \"ordinal\" is not a non-negative integer"
        );
        // Gaps are fine; order follows the ordinals.
        let t = Tape::from_json(&text("9", "2")).unwrap();
        let states: Vec<Value> = t.call_entries("c").into_iter().map(|e| e.state).collect();
        assert_eq!(states[0], json!("other"));
    }

    #[test]
    fn tape_match_names_read_back() {
        for m in TapeMatch::ALL {
            assert_eq!(m.as_str().parse::<TapeMatch>().unwrap(), m);
            assert_eq!(m.to_string(), m.as_str());
        }
        let e = "".parse::<TapeMatch>().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config);
        assert!(
            e.to_string().contains("(want exact|questions|sequence)"),
            "{e}"
        );
    }

    #[test]
    fn every_error_kind_has_a_name_that_reads_back() {
        for k in ErrorKind::ALL {
            assert_eq!(error_kind_from_name(error_kind_name(k)), Some(k));
        }
        assert_eq!(error_kind_from_name("nope"), None);
    }
}
