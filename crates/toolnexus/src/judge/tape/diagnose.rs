//! What a miss says: the recording nearest to what was asked, and the first
//! path where the two differ.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::classifier::{canonical_json, write_canonical};

/// What a diff compares: `{"questions": …, "state": …}` (the state left out
/// when only questions matter).
pub(super) fn diff_doc(questions: Value, state: Option<Value>) -> Value {
    let mut m = Map::new();
    m.insert("questions".into(), questions);
    if let Some(s) = state {
        m.insert("state".into(), s);
    }
    Value::Object(m)
}

/// Names the recording nearest to `asked` (fewest differing values, the
/// earliest among equals) and where it first differs.
pub(super) fn nearest_text(recorded: impl Iterator<Item = Value>, asked: &Value) -> String {
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
pub(super) const VALUE_SHOWN: usize = 60;

/// A value as a miss shows it: canonical JSON cut at [`VALUE_SHOWN`]
/// characters, or `(absent)`.
pub(super) fn shown_value(v: Option<&Value>) -> String {
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
pub(super) struct Diff {
    pub(super) count: usize,
    pub(super) first: Option<(String, Option<Value>, Option<Value>)>,
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
pub(super) fn diff(recorded: &Value, asked: &Value, root: &str) -> Diff {
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
pub(super) fn leaves(v: &Value) -> usize {
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
