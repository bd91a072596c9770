//! How a state is written as text for the embedding model: a string as it
//! is, anything else as compact canonical JSON or as `key: value` lines, and
//! only as far as the model reads when the state is huge. The zero-shot style
//! and the students read states through this; a student file records which
//! way its heads were trained on.

use std::borrow::Cow;

use serde_json::Value;
use toolnexus::classifier::{canonical_json, write_canonical};

use crate::embed::Embedder;
use crate::error::LocalError;
use crate::text::shorten_long_runs;

/// How a state that is not a JSON string is written as text for the embedding
/// model. A string state is always read as it is. A student file records the
/// way its heads were trained on, and reads every state the same way.
///
/// ```
/// use serde_json::json;
/// use toolnexus_local::StateText;
///
/// let call = json!({"tool_name": "Bash", "tool_input": {"command": "ls -la"}, "cwd": "/srv/app"});
/// assert_eq!(
///     StateText::Json.write(&call),
///     r#"{"cwd":"/srv/app","tool_input":{"command":"ls -la"},"tool_name":"Bash"}"#
/// );
/// assert_eq!(StateText::Lines.write(&call), "cwd: /srv/app\ncommand: ls -la\ntool_name: Bash");
/// assert_eq!(StateText::Lines.write(&json!("as it is")), "as it is");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StateText {
    /// Compact canonical JSON, keys sorted ([`state_text`]).
    #[default]
    Json,
    /// One line per leaf value (a string, number, boolean or null), `key:
    /// value`, where `key` is the name of the object key nearest above the
    /// leaf (no key at the top level): strings as they are, other leaves as
    /// JSON; an object's keys in sorted order, an array's items in order. No
    /// quotes, braces or escapes: about a third fewer tokens than JSON for
    /// small objects, and the encoder's time follows the token count.
    Lines,
}

impl StateText {
    /// Whether this is the default, [`StateText::Json`] (student files leave it out).
    pub fn is_json(&self) -> bool {
        *self == StateText::Json
    }

    /// The whole text of `state`.
    pub fn write(self, state: &Value) -> String {
        match (self, state) {
            (_, Value::String(s)) => s.clone(),
            (StateText::Json, other) => canonical_json(other),
            (StateText::Lines, other) => {
                let mut out = String::new();
                write_lines(&mut out, other, None, usize::MAX);
                out
            }
        }
    }

    /// The part of [`StateText::write`]'s text that `embedder` reads (see
    /// [`Embedder::read_part`]), written without ever serialising more of the
    /// state than that: a 50 MB state costs what a few kilobytes do. Runs of
    /// ASCII letters and digits too long to be anything but one unknown word
    /// are shortened (to one character past WordPiece's word limit), so a
    /// hex blob costs no more. Embedding it gives exactly what embedding the
    /// whole text gives.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus_local::{Embedder, StateText};
    ///
    /// # fn main() -> Result<(), toolnexus_local::LocalError> {
    /// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-state-text-write-for-{}", std::process::id()));
    /// # toolnexus_local::tiny_model_for_tests(&dir)?;
    /// let embedder = Embedder::load(&dir)?;
    /// let huge = json!({"log": vec!["hello world"; 1_000_000]});
    /// let read = StateText::Lines.write_for(&embedder, &huge)?;
    /// assert!(read.len() < 100_000 && read.starts_with("log: hello world\nlog: hello world"));
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(())
    /// # }
    /// ```
    pub fn write_for(self, embedder: &Embedder, state: &Value) -> Result<String, LocalError> {
        if let Value::String(s) = state {
            return Ok(embedder.readable(s)?.into_owned());
        }
        let mut budget = embedder.first_window();
        loop {
            let mut text = String::new();
            let complete = match self {
                StateText::Json => write_bounded(&mut text, state, budget),
                StateText::Lines => write_lines(&mut text, state, None, budget),
            };
            // Over-long runs of letters and digits shortened as the embedder
            // would (the same token ids): a hex blob is not tokenised whole.
            let text = match embedder.long_words() {
                Some(keep) => match shorten_long_runs(&text, keep) {
                    Cow::Owned(shorter) => shorter,
                    Cow::Borrowed(_) => text,
                },
                None => text,
            };
            if let Some(read) = embedder.settled(Cow::Owned(text), !complete)? {
                return Ok(read.into_owned());
            }
            budget = budget.saturating_mul(4);
        }
    }
}

/// The text of a state that gets embedded: a JSON string as it is, anything
/// else as compact canonical JSON (keys sorted): [`StateText::Json`].
///
/// ```
/// use serde_json::json;
/// use toolnexus_local::state_text;
///
/// assert_eq!(state_text(&json!("my parcel is late")), "my parcel is late");
/// assert_eq!(state_text(&json!({"b": 1, "a": "x"})), r#"{"a":"x","b":1}"#);
/// ```
pub fn state_text(state: &Value) -> String {
    StateText::Json.write(state)
}

/// The part of [`state_text`] that `embedder` reads (see
/// [`Embedder::read_part`]), written without ever serialising more of the
/// state than that: a 50 MB state costs what a few kilobytes do, and so does
/// a state holding a hex blob of megabytes (see [`StateText::write_for`]).
/// Embedding it gives exactly what embedding the whole `state_text` gives.
/// The zero-shot style embeds states through it.
///
/// ```
/// use serde_json::json;
/// use toolnexus_local::{Embedder, state_text, state_text_for};
///
/// # fn main() -> Result<(), toolnexus_local::LocalError> {
/// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-state-text-for-{}", std::process::id()));
/// # toolnexus_local::tiny_model_for_tests(&dir)?;
/// let embedder = Embedder::load(&dir)?;
/// let small = json!({"message": "my parcel is late"});
/// assert_eq!(state_text_for(&embedder, &small)?, state_text(&small));
/// let huge = json!({"log": vec!["hello world"; 1_000_000]});
/// let read = state_text_for(&embedder, &huge)?;
/// assert!(read.len() < 100_000 && state_text(&huge).starts_with(&read));
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok(())
/// # }
/// ```
pub fn state_text_for(embedder: &Embedder, state: &Value) -> Result<String, LocalError> {
    StateText::Json.write_for(embedder, state)
}

/// Appends the [`StateText::Lines`] text of `v` (under `key`) to `out` until
/// `out` holds `budget` bytes: true when all of `v` was written, false when it
/// was cut short (then `out` is a prefix of the whole text, at least `budget`
/// bytes long).
fn write_lines(out: &mut String, v: &Value, key: Option<&str>, budget: usize) -> bool {
    if out.len() >= budget {
        return false;
    }
    match v {
        Value::Object(map) => {
            let sorted = map.keys().zip(map.keys().skip(1)).all(|(a, b)| a <= b);
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            if !sorted {
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            }
            entries
                .into_iter()
                .all(|(k, x)| write_lines(out, x, Some(k), budget))
        }
        Value::Array(items) => items.iter().all(|x| write_lines(out, x, key, budget)),
        leaf => {
            if !out.is_empty() {
                out.push('\n');
            }
            if let Some(k) = key {
                out.push_str(k);
                out.push_str(": ");
            }
            match leaf {
                Value::String(s) => {
                    let room = budget.saturating_sub(out.len());
                    if s.len() <= room {
                        out.push_str(s);
                    } else {
                        let mut cut = room;
                        while !s.is_char_boundary(cut) {
                            cut -= 1;
                        }
                        out.push_str(&s[..cut]);
                        return false;
                    }
                }
                other => write_canonical(out, other),
            }
            true
        }
    }
}

/// Appends the canonical JSON of `v` ([`canonical_json`]'s bytes) to `out`
/// until `out` holds `budget` bytes: true when all of `v` was written, false
/// when it was cut short (then `out` is a prefix of the whole text, at least
/// `budget` bytes long).
fn write_bounded(out: &mut String, v: &Value, budget: usize) -> bool {
    if out.len() >= budget {
        return false;
    }
    match v {
        Value::String(s) => {
            let room = budget - out.len();
            if s.len() <= room {
                write_canonical(out, v);
                return true;
            }
            // Escaping works character by character, so the canonical form of
            // a prefix, less its closing quote, is a prefix of the whole.
            let mut cut = room;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            write_canonical(out, &Value::String(s[..cut].to_string()));
            out.pop();
            false
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if !write_bounded(out, item, budget) {
                    return false;
                }
            }
            out.push(']');
            true
        }
        Value::Object(map) => {
            // Canonical JSON sorts keys. A map already in order (serde_json
            // keeps the order it read) is written as it stands, so a huge
            // object is read only as far as it is written; the keys are checked
            // first (cheap: no value is touched), since a budget can run out
            // before a key out of order would show.
            let sorted = map.keys().zip(map.keys().skip(1)).all(|(a, b)| a <= b);
            if sorted {
                write_entries(out, map.iter(), budget)
            } else {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                write_entries(out, entries.into_iter(), budget)
            }
        }
        leaf => {
            write_canonical(out, leaf);
            true
        }
    }
}

/// The entries of an object, in the order given; whether all were written.
fn write_entries<'a>(
    out: &mut String,
    entries: impl Iterator<Item = (&'a String, &'a Value)>,
    budget: usize,
) -> bool {
    out.push('{');
    for (i, (key, value)) in entries.enumerate() {
        if i > 0 {
            out.push(',');
        }
        let key = Value::String(key.clone());
        if !write_bounded(out, &key, budget) {
            return false;
        }
        out.push(':');
        if !write_bounded(out, value, budget) {
            return false;
        }
    }
    out.push('}');
    true
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_bounded_writer_writes_canonical_json() {
        let values = [
            json!(null),
            json!(1.5e-7),
            json!("a \"quoted\" line\n\u{2028}é"),
            json!({"b": [1, {"z": null, "a": true}], "a": "x", "": []}),
            json!([[], {}, "", 0]),
        ];
        for v in &values {
            let whole = canonical_json(v);
            for budget in 0..whole.len() + 4 {
                let mut out = String::new();
                let done = write_bounded(&mut out, v, budget);
                assert!(whole.starts_with(&out), "{v} at {budget}: {out:?}");
                if done {
                    assert_eq!(out, whole, "{v} at {budget}");
                } else {
                    assert!(out.len() >= budget, "{v} at {budget}: {out:?}");
                }
            }
        }
    }
}
