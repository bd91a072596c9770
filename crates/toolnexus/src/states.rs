//! A states file: one JSON state per line (JSONL), as `batch`, `tape record`
//! and the bindings read it. Lines are numbered as a text editor numbers them
//! (blank lines are skipped, not renumbered); every line is strict JSON (a key
//! twice is refused by name, a byte-order mark is skipped); and a labelled
//! example — a state with its gold answers — is told apart from a state, so its
//! labels never reach a judge as part of the state.

use serde_json::Value;

use crate::json::{json_error_what, parse_json_strict, strip_bom};

/// Every non-blank line of a JSONL text: its 1-based physical number and its
/// text (a trailing `\r` removed).
///
/// ```
/// let lines: Vec<_> = toolnexus::states::jsonl_lines("1\n\n{\"a\":2}\r\n").collect();
/// assert_eq!(lines, [(1, "1"), (3, "{\"a\":2}")]);
/// ```
pub fn jsonl_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
        .filter(|(_, l)| !l.trim().is_empty())
}

/// Parses line `n` of a JSONL file; the error names the line
/// (`line 7: invalid JSON at column 3: …`). A byte-order mark is skipped; a
/// key twice in an object is an error naming it.
///
/// ```
/// use toolnexus::states::parse_line;
/// assert_eq!(parse_line(1, "\u{feff}{\"a\":1}").unwrap(), serde_json::json!({"a": 1}));
/// assert_eq!(parse_line(3, r#"{"a":1,"a":2}"#).unwrap_err(), "line 3: invalid JSON: the key \"a\" appears twice");
/// assert_eq!(parse_line(4, "{oops").unwrap_err(), "line 4: invalid JSON at column 2: key must be a string");
/// ```
pub fn parse_line(n: usize, text: &str) -> Result<Value, String> {
    let text = strip_bom(text);
    let v: Value = serde_json::from_str(text).map_err(|e| {
        let column = if e.is_eof() {
            text.trim_end().chars().count()
        } else {
            e.column()
        };
        format!(
            "line {n}: invalid JSON at column {column}: {}",
            json_error_what(&e)
        )
    })?;
    // Only an object can hold a key twice.
    if text.contains('{') {
        parse_json_strict(text.as_bytes()).map_err(|e| {
            let d = e.detail();
            let d = d.strip_prefix("JSON has ").unwrap_or(d);
            let d = d.split(" twice at line ").next().unwrap_or(d);
            format!("line {n}: invalid JSON: {d} appears twice")
        })?;
    }
    Ok(v)
}

/// Whether a JSONL line is a labelled example (`{"id"?, "state", "labels",
/// "meta"?}`, or a `label`/`gold` field in place of `labels`) rather than a
/// state: an object with a `state` and a gold field and nothing outside that
/// vocabulary. Returns its keys, quoted, for a message.
///
/// ```
/// use toolnexus::states::labelled_example;
/// assert_eq!(labelled_example(r#"{"state": "hi", "labels": {"spam": false}}"#).as_deref(), Some("\"state\", \"labels\""));
/// assert_eq!(labelled_example(r#"{"state": "hi", "note": "a state of its own"}"#), None);
/// ```
pub fn labelled_example(line: &str) -> Option<String> {
    const STATE: &str = "\"state\"";
    const GOLD: [&str; 3] = ["labels", "label", "gold"];
    const KNOWN: [&str; 6] = ["id", "state", "labels", "label", "gold", "meta"];
    if !line.contains(STATE) || !GOLD.iter().any(|g| line.contains(&format!("\"{g}\""))) {
        return None;
    }
    let v: Value = serde_json::from_str(strip_bom(line)).ok()?;
    let o = v.as_object()?;
    let gold = GOLD.iter().any(|g| o.contains_key(*g));
    let known = o.keys().all(|k| KNOWN.contains(&k.as_str()));
    (o.contains_key("state") && gold && known).then(|| {
        o.keys()
            .map(|k| format!("{k:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    })
}

/// The SHA-256 of a states file read in pieces, as
/// [`Fingerprint::digest`](crate::classifier::Fingerprint::digest) spells it
/// (`sha256:` and 64 hex digits): a batch's fingerprint names the file's
/// bytes without holding them all.
///
/// ```
/// use toolnexus::states::Digest;
/// let mut d = Digest::new();
/// d.update(b"{\"a\":1}\n");
/// d.update(b"\"two\"\n");
/// assert_eq!(d.finish(), toolnexus::classifier::Fingerprint::digest(b"{\"a\":1}\n\"two\"\n"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Digest(sha2::Sha256);

impl Digest {
    /// A digest of nothing yet.
    ///
    /// ```
    /// assert!(toolnexus::states::Digest::new().finish().starts_with("sha256:e3b0c442"));
    /// ```
    pub fn new() -> Digest {
        Digest::default()
    }

    /// Adds the next bytes of the file.
    ///
    /// ```
    /// let mut d = toolnexus::states::Digest::new();
    /// d.update(b"");
    /// assert_eq!(d.finish(), toolnexus::classifier::Fingerprint::digest(b""));
    /// ```
    pub fn update(&mut self, bytes: &[u8]) {
        use sha2::Digest as _;
        self.0.update(bytes);
    }

    /// `sha256:` and the hex digest of every byte added.
    ///
    /// ```
    /// let mut d = toolnexus::states::Digest::new();
    /// d.update(b"abc");
    /// assert!(d.finish().ends_with("f20015ad"));
    /// ```
    pub fn finish(self) -> String {
        use sha2::Digest as _;
        use std::fmt::Write as _;
        let mut s = String::with_capacity(71);
        s.push_str("sha256:");
        for b in self.0.finalize() {
            let _ = write!(s, "{b:02x}");
        }
        s
    }
}
