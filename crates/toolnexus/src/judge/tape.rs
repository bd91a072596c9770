//! [`Tape`]: record a live classifier's decisions by call name, save them as a
//! versioned JSON file, load them and replay them offline. The file format is
//! documented in the [module docs](crate::judge#the-tape-file-format).
//!
//! The pieces live beside it: `format` (the file: entries, outcomes, the
//! pretty canonical writer and the strict loader), `record` (the recording
//! classifier), `replay` (the match modes and the replaying classifier),
//! `diagnose` (what a miss says: the nearest recording and the first path
//! that differs) and `error` ([`TapeError`]).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

mod diagnose;
mod error;
mod format;
mod record;
mod replay;

pub use error::{TapeError, TapeErrorKind};
pub use format::{TAPE_FORMAT, TAPE_VERSION, TapeEntry, TapeOutcome, write_atomic};
pub use replay::TapeMatch;

use format::{entry_key, entry_value};

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
}

#[cfg(test)]
mod tests;
