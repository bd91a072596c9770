//! Where things are in a JSON text: every key and value by its path
//! (`desk.criteria.billing`, `risk.criteria[2]`), as byte offsets turned into
//! line and column. Pure; run only on text serde_json has already accepted, so
//! it never needs to report a syntax error (on malformed text it stops early
//! and knows less).

use std::collections::HashMap;

/// One step of a path: an object key or an array index.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// A path from the top of the document.
pub type Path = Vec<Seg>;

/// The path as people read it: `desk.criteria.billing`, `risk.criteria[2]`;
/// a key that is not a plain word is quoted (`desk.criteria["a.b"]`).
pub fn show(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                let plain = !k.is_empty()
                    && k.chars()
                        .all(|c| c.is_alphanumeric() || c == '_' || c == '-');
                if plain {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                } else {
                    out.push('[');
                    out.push_str(&serde_json::Value::from(k.as_str()).to_string());
                    out.push(']');
                }
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// Where one key and its value start (byte offsets into the text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// The opening quote of the key, for an object member.
    pub key: Option<usize>,
    /// The first byte of the value.
    pub value: usize,
}

/// Every path of a document and where it is.
#[derive(Debug, Default)]
pub struct Spans {
    text: String,
    spans: HashMap<Path, Span>,
}

/// A 1-based line and column (the column counts characters, not bytes).
///
/// ```
/// let mut lint = toolnexus::lint::Lint::new();
/// lint.add("q.json", r#"{"é": {"type": "noul", "instructions": "Not spam?"}}"#);
/// let at = lint.finish().findings[0].at;
/// assert_eq!((at.line, at.column), (1, 41), "at \"Not\", after the two-byte é");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineCol {
    /// The line, from 1.
    pub line: usize,
    /// The character of the line, from 1.
    pub column: usize,
}

impl Spans {
    /// Scans `text` (a JSON document serde_json accepted).
    pub fn scan(text: &str) -> Spans {
        let mut s = Scanner {
            b: text.as_bytes(),
            at: 0,
            spans: HashMap::new(),
        };
        let mut path = Vec::new();
        s.ws();
        let start = s.at;
        if s.value(&mut path).is_some() {
            s.spans.insert(
                Vec::new(),
                Span {
                    key: None,
                    value: start,
                },
            );
        }
        Spans {
            text: text.to_string(),
            spans: s.spans,
        }
    }

    /// Where `path` is, if the document has it.
    pub fn get(&self, path: &[Seg]) -> Option<Span> {
        self.spans.get(path).copied()
    }

    /// The position of the value at `path`; with `within`, of that byte of the
    /// decoded string (a phrase inside a text); the nearest enclosing path the
    /// document has when it lacks this one.
    pub fn value_at(&self, path: &[Seg], within: Option<usize>) -> LineCol {
        let mut p = path;
        loop {
            if let Some(span) = self.get(p) {
                let mut at = span.value;
                if p.len() == path.len()
                    && let Some(off) = within
                {
                    at = raw_offset(&self.text, span.value, off);
                }
                return self.line_col(at);
            }
            match p.split_last() {
                Some((_, rest)) => p = rest,
                None => return LineCol { line: 1, column: 1 },
            }
        }
    }

    /// The position of the key of `path` (its value's when it has no key).
    pub fn key_at(&self, path: &[Seg]) -> LineCol {
        match self.get(path) {
            Some(Span { key: Some(k), .. }) => self.line_col(k),
            _ => self.value_at(path, None),
        }
    }

    /// Line and column of a byte offset.
    pub fn line_col(&self, at: usize) -> LineCol {
        let at = at.min(self.text.len());
        let before = &self.text.as_bytes()[..at];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let column = String::from_utf8_lossy(&before[start..]).chars().count() + 1;
        LineCol { line, column }
    }
}

/// The byte offset in `text` of byte `decoded` of the string literal that
/// starts (at its opening quote) at `start`: escapes are walked, so a phrase
/// found in the decoded text is placed where it is written.
fn raw_offset(text: &str, start: usize, decoded: usize) -> usize {
    let b = text.as_bytes();
    if b.get(start) != Some(&b'"') {
        return start;
    }
    let mut raw = start + 1;
    let mut seen = 0;
    while raw < b.len() && seen < decoded {
        match b[raw] {
            b'"' => break,
            b'\\' => {
                if b.get(raw + 1) == Some(&b'u') {
                    let hex = |i: usize| {
                        text.get(i..i + 4)
                            .and_then(|h| u32::from_str_radix(h, 16).ok())
                    };
                    let hi = hex(raw + 2).unwrap_or(0);
                    if (0xD800..0xDC00).contains(&hi) && b.get(raw + 7) == Some(&b'u') {
                        raw += 12;
                        seen += 4;
                    } else {
                        raw += 6;
                        seen += char::from_u32(hi).map_or(3, char::len_utf8);
                    }
                } else {
                    raw += 2;
                    seen += 1;
                }
            }
            _ => {
                let ch = text[raw..].chars().next().map_or(1, char::len_utf8);
                raw += ch;
                seen += ch;
            }
        }
    }
    raw
}

struct Scanner<'t> {
    b: &'t [u8],
    at: usize,
    spans: HashMap<Path, Span>,
}

impl Scanner<'_> {
    fn ws(&mut self) {
        while self.at < self.b.len() && matches!(self.b[self.at], b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.b.get(self.at) == Some(&c)).then(|| self.at += 1)
    }

    /// One value at `path`; its own span is recorded by the caller.
    fn value(&mut self, path: &mut Path) -> Option<()> {
        self.ws();
        match *self.b.get(self.at)? {
            b'{' => {
                self.at += 1;
                if self.eat(b'}').is_some() {
                    return Some(());
                }
                loop {
                    self.ws();
                    let key_at = self.at;
                    let key = self.string()?;
                    self.eat(b':')?;
                    self.ws();
                    let value_at = self.at;
                    path.push(Seg::Key(key));
                    let ok = self.value(path);
                    let p = path.clone();
                    path.pop();
                    ok?;
                    self.spans.insert(
                        p,
                        Span {
                            key: Some(key_at),
                            value: value_at,
                        },
                    );
                    if self.eat(b',').is_none() {
                        return self.eat(b'}');
                    }
                }
            }
            b'[' => {
                self.at += 1;
                if self.eat(b']').is_some() {
                    return Some(());
                }
                let mut i = 0;
                loop {
                    self.ws();
                    let value_at = self.at;
                    path.push(Seg::Index(i));
                    let ok = self.value(path);
                    let p = path.clone();
                    path.pop();
                    ok?;
                    self.spans.insert(
                        p,
                        Span {
                            key: None,
                            value: value_at,
                        },
                    );
                    i += 1;
                    if self.eat(b',').is_none() {
                        return self.eat(b']');
                    }
                }
            }
            b'"' => self.string().map(|_| ()),
            _ => {
                let start = self.at;
                while self.at < self.b.len()
                    && !matches!(
                        self.b[self.at],
                        b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'
                    )
                {
                    self.at += 1;
                }
                (self.at > start).then_some(())
            }
        }
    }

    /// A string literal at the cursor, decoded.
    fn string(&mut self) -> Option<String> {
        if self.b.get(self.at) != Some(&b'"') {
            return None;
        }
        let start = self.at;
        self.at += 1;
        loop {
            match *self.b.get(self.at)? {
                b'"' => break,
                b'\\' => self.at += 2,
                _ => self.at += 1,
            }
        }
        self.at += 1;
        let literal = std::str::from_utf8(&self.b[start..self.at]).ok()?;
        serde_json::from_str(literal).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> Seg {
        Seg::Key(k.to_string())
    }

    #[test]
    fn keys_and_values_are_placed() {
        let text = "{\n  \"desk\": {\n    \"criteria\": {\"billing\": \"money\", \"a.b\": null},\n    \"levels\": [1, \"two\"]\n  }\n}";
        let s = Spans::scan(text);
        let p = [key("desk"), key("criteria"), key("billing")];
        assert_eq!(
            s.key_at(&p),
            LineCol {
                line: 3,
                column: 18
            }
        );
        assert_eq!(
            s.value_at(&p, None),
            LineCol {
                line: 3,
                column: 29
            }
        );
        assert_eq!(
            s.value_at(&p, Some(2)),
            LineCol {
                line: 3,
                column: 32
            }
        );
        let l = [key("desk"), key("levels"), Seg::Index(1)];
        assert_eq!(
            s.value_at(&l, None),
            LineCol {
                line: 4,
                column: 19
            }
        );
        assert_eq!(s.key_at(&[key("desk")]), LineCol { line: 2, column: 3 });
        // A path the document lacks falls back to its nearest parent.
        let missing = [key("desk"), key("nope")];
        assert_eq!(
            s.value_at(&missing, None),
            LineCol {
                line: 2,
                column: 11
            }
        );
        assert_eq!(
            show(&[key("desk"), key("criteria"), key("a.b"), Seg::Index(0)]),
            "desk.criteria[\"a.b\"][0]"
        );
    }

    #[test]
    fn escapes_and_wide_characters_keep_phrases_in_place() {
        let text = r#"{"q": "caf\u00e9 \"more than 3\" \ud83d\ude00 ok é x"}"#;
        let s = Spans::scan(text);
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        let decoded = v["q"].as_str().unwrap();
        let p = [key("q")];
        let at = decoded.find("more").unwrap();
        let col = s.value_at(&p, Some(at)).column;
        assert_eq!(&text[col - 1..col + 3], "more");
        let at = decoded.find(" x").unwrap() + 1;
        let col = s.value_at(&p, Some(at)).column;
        assert_eq!(text.chars().nth(col - 1), Some('x'));
    }
}
