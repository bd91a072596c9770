//! The [`Tape`] itself: entries by call name and key, with their recording
//! order, written in the pretty canonical form and loaded strictly.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Map, Value};

use super::error::{TapeError, TapeErrorKind};
use super::format::{
    TAPE_FORMAT, TAPE_VERSION, TapeEntry, entry_key, entry_value, parse_entry, parse_ordinal,
    write_atomic, write_pretty,
};

/// The entries of one call name.
#[derive(Default)]
pub(super) struct CallData {
    /// entry key → (recording ordinal, entry): sorted by key, so a file's order
    /// never depends on the order calls finished in. The ordinal keeps the
    /// recording order for [`TapeMatch::Sequence`](super::TapeMatch::Sequence).
    entries: BTreeMap<String, (u64, TapeEntry)>,
    /// The ordinal the next new entry gets.
    next: u64,
}

impl CallData {
    /// The entries in recording order.
    pub(super) fn in_order(&self) -> Vec<&TapeEntry> {
        let mut v: Vec<&(u64, TapeEntry)> = self.entries.values().collect();
        v.sort_by_key(|(n, _)| *n);
        v.into_iter().map(|(_, e)| e).collect()
    }

    /// Each entry's place in recording order (0, 1, …), in key order, or `None`
    /// when key order already is recording order (nothing to write).
    pub(super) fn ranks(&self) -> Option<Vec<u64>> {
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
pub(super) struct TapeData {
    note: String,
    /// call name → its entries.
    pub(super) calls: BTreeMap<String, CallData>,
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

    pub(super) fn lock(&self) -> MutexGuard<'_, TapeData> {
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
    /// [`TapeMatch::Sequence`](super::TapeMatch::Sequence) replays them in.
    /// An entry recorded again keeps its first place. Empty when the call name
    /// has no recordings.
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

impl Tape {
    /// The file's text: pretty-printed JSON, keys sorted bytewise at every depth,
    /// two-space indents, a final newline. The same tape gives the same bytes.
    ///
    /// Within a call name, entries are listed by canonical questions and state.
    /// When that is not the order they were recorded in, every entry of that
    /// call also gets an `"ordinal"` (its place in recording order, from 0), so
    /// [`TapeMatch::Sequence`](super::TapeMatch::Sequence) replays the same
    /// after a save and load; a call whose entries were recorded in listed
    /// order (like every file written before ordinals existed) is written
    /// without them, byte for byte as before.
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
        let text = std::fs::read_to_string(path).map_err(|e| {
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

pub(super) fn parse(text: &str, path: Option<&Path>) -> Result<Tape, TapeError> {
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
