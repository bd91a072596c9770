//! Words as the shell sees them after quote removal: each character knows
//! whether it was quoted, and the text of an expansion the guard cannot know
//! is kept as written. Brace expansion, `$IFS` splitting, `$'…'` decoding and
//! the basename of a command's path live here.

/// How one character of a word came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Written outside quotes: brace and glob syntax apply.
    Bare,
    /// Quoted or escaped: plain text.
    Quoted,
    /// Part of an expansion the guard cannot know (`$x`, `$(…)`).
    Expansion,
    /// An unquoted `$IFS`: the shell splits the word here (default IFS).
    Split,
}

/// A word being built, one character at a time with its origin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Chars(pub Vec<(char, Origin)>);

impl Chars {
    /// Appends text of one origin.
    pub fn push_str(&mut self, text: &str, origin: Origin) {
        self.0.extend(text.chars().map(|c| (c, origin)));
    }

    /// Appends another word's characters.
    pub fn append(&mut self, other: Chars) {
        self.0.extend(other.0);
    }
}

/// A word after expansion, as the guard reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Word {
    /// The text, expansions kept as written.
    pub text: String,
    /// The text as written in the source, for reasons.
    pub raw: String,
    /// Whether part of it comes from an expansion the guard cannot know.
    pub dynamic: bool,
    /// Whether it holds an unquoted glob character (`*`, `?`, `[`).
    pub glob: bool,
}

impl Word {
    /// A word of plain literal text (runners build these from strings).
    pub fn literal(text: &str) -> Word {
        Word {
            text: text.to_string(),
            raw: text.to_string(),
            dynamic: false,
            glob: false,
        }
    }
}

/// The most words one brace expansion may produce before the rest of it is
/// kept as written: a guard must answer quickly whatever the input.
const BRACE_LIMIT: usize = 256;

/// Splits a built word at unquoted `$IFS`, brace-expands each part and
/// returns the words the shell would pass, each with `raw` as its source.
pub(crate) fn finish(chars: Chars, raw: &str) -> Vec<Word> {
    let mut parts: Vec<Vec<(char, Origin)>> = vec![Vec::new()];
    for (c, o) in chars.0 {
        if o == Origin::Split {
            parts.push(Vec::new());
        } else if let Some(last) = parts.last_mut() {
            last.push((c, o));
        }
    }
    let split = parts.len() > 1;
    let mut words = Vec::new();
    for part in parts {
        // A split leaves no empty words where `$IFS` stood at an edge.
        if split && part.is_empty() {
            continue;
        }
        let mut out = Vec::new();
        expand_braces(part, &mut out);
        for p in out {
            words.push(render(&p, raw));
        }
    }
    words
}

fn render(chars: &[(char, Origin)], raw: &str) -> Word {
    Word {
        text: chars.iter().map(|(c, _)| *c).collect(),
        raw: raw.to_string(),
        dynamic: chars.iter().any(|(_, o)| *o == Origin::Expansion),
        glob: chars
            .iter()
            .any(|(c, o)| *o == Origin::Bare && matches!(c, '*' | '?' | '[')),
    }
}

fn bare(c: &(char, Origin), want: char) -> bool {
    c.1 == Origin::Bare && c.0 == want
}

/// Bash's brace expansion over unquoted braces: `a{b,c}d` and `{1..3}`.
fn expand_braces(word: Vec<(char, Origin)>, out: &mut Vec<Vec<(char, Origin)>>) {
    if out.len() >= BRACE_LIMIT {
        out.push(word);
        return;
    }
    let Some((open, close, commas)) = find_brace(&word) else {
        out.push(word);
        return;
    };
    let prefix = &word[..open];
    let suffix = &word[close + 1..];
    let inner = &word[open + 1..close];
    let alternatives: Vec<Vec<(char, Origin)>> = if commas.is_empty() {
        match sequence(inner) {
            Some(items) => items
                .into_iter()
                .map(|s| s.chars().map(|c| (c, Origin::Quoted)).collect())
                .collect(),
            None => {
                out.push(word);
                return;
            }
        }
    } else {
        let mut alts = Vec::new();
        let mut start = open + 1;
        for &comma in &commas {
            alts.push(word[start..comma].to_vec());
            start = comma + 1;
        }
        alts.push(word[start..close].to_vec());
        alts
    };
    for alt in alternatives {
        let mut next = prefix.to_vec();
        next.extend(alt);
        next.extend_from_slice(suffix);
        expand_braces(next, out);
        if out.len() >= BRACE_LIMIT {
            return;
        }
    }
}

/// The first unquoted brace pair that expands: its open and close indices and
/// the top-level commas between them (none for a sequence).
fn find_brace(word: &[(char, Origin)]) -> Option<(usize, usize, Vec<usize>)> {
    let mut i = 0;
    while i < word.len() {
        if bare(&word[i], '{') && !(i > 0 && bare(&word[i - 1], '$')) {
            let mut depth = 0usize;
            let mut commas = Vec::new();
            for j in i + 1..word.len() {
                if bare(&word[j], '{') {
                    depth += 1;
                } else if bare(&word[j], '}') {
                    if depth == 0 {
                        let inner = &word[i + 1..j];
                        if !commas.is_empty() || sequence(inner).is_some() {
                            return Some((i, j, commas));
                        }
                        break;
                    }
                    depth -= 1;
                } else if depth == 0 && bare(&word[j], ',') {
                    commas.push(j);
                }
            }
        }
        i += 1;
    }
    None
}

/// `{1..5}`, `{a..e}` and `{1..10..2}`: the items, or `None` when the inner
/// text is not a sequence (or too long a one).
fn sequence(inner: &[(char, Origin)]) -> Option<Vec<String>> {
    if inner.iter().any(|(_, o)| *o != Origin::Bare) {
        return None;
    }
    let text: String = inner.iter().map(|(c, _)| *c).collect();
    let parts: Vec<&str> = text.split("..").collect();
    if !(parts.len() == 2 || parts.len() == 3) {
        return None;
    }
    let step: i64 = match parts.get(2) {
        Some(s) => s.parse::<i64>().ok()?.checked_abs()?.max(1),
        None => 1,
    };
    if let (Ok(a), Ok(b)) = (parts[0].parse::<i64>(), parts[1].parse::<i64>()) {
        let count = (a - b).unsigned_abs() / step.unsigned_abs() + 1;
        if count > BRACE_LIMIT as u64 {
            return None;
        }
        let mut items = Vec::new();
        let mut v = a;
        for _ in 0..count {
            items.push(v.to_string());
            v = if a <= b { v + step } else { v - step };
        }
        return Some(items);
    }
    let (a, b) = (single_char(parts[0])?, single_char(parts[1])?);
    let (lo, hi) = (a.min(b) as u32, a.max(b) as u32);
    let mut items: Vec<String> = (lo..=hi)
        .step_by(usize::try_from(step).ok()?)
        .filter_map(char::from_u32)
        .map(String::from)
        .collect();
    if a > b {
        items.reverse();
    }
    Some(items)
}

fn single_char(s: &str) -> Option<char> {
    let mut it = s.chars();
    let c = it.next()?;
    (it.next().is_none() && c.is_ascii_alphabetic()).then_some(c)
}

/// Removes the backslashes of an unquoted word: `r\m` is `rm`, the escaped
/// character quoted (an escaped `*` is no glob).
pub(crate) fn unquote_bare(text: &str, into: &mut Chars) {
    let mut it = text.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                // A continuation left by the grammar inside a word.
                Some('\n') => {}
                Some(n) => into.0.push((n, Origin::Quoted)),
                None => {}
            }
        } else {
            into.0.push((c, Origin::Bare));
        }
    }
}

/// The text of a double-quoted part: only `\$`, `` \` ``, `\"`, `\\` and a
/// backslash-newline lose their backslash.
pub(crate) fn unquote_double(text: &str, into: &mut Chars) {
    let mut it = text.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.peek() {
                Some('\n') => {
                    it.next();
                }
                Some(&n) if matches!(n, '$' | '`' | '"' | '\\') => {
                    it.next();
                    into.0.push((n, Origin::Quoted));
                }
                _ => into.0.push(('\\', Origin::Quoted)),
            }
        } else {
            into.0.push((c, Origin::Quoted));
        }
    }
}

/// Decodes the body of `$'…'` (without the `$'` and `'`) as bash does.
pub(crate) fn decode_ansi_c(body: &str) -> String {
    let chars: Vec<char> = body.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c != '\\' || i >= chars.len() {
            out.push(c);
            continue;
        }
        let e = chars[i];
        i += 1;
        let simple = match e {
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'e' | 'E' => Some('\x1b'),
            'f' => Some('\x0c'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\x0b'),
            '\\' => Some('\\'),
            '\'' => Some('\''),
            '"' => Some('"'),
            '?' => Some('?'),
            _ => None,
        };
        if let Some(s) = simple {
            out.push(s);
            continue;
        }
        let (radix, max) = match e {
            'x' => (16, 2),
            'u' => (16, 4),
            'U' => (16, 8),
            '0'..='7' => {
                i -= 1;
                (8, 3)
            }
            'c' if i < chars.len() => {
                out.push(
                    char::from_u32(chars[i].to_ascii_uppercase() as u32 ^ 0x40).unwrap_or('?'),
                );
                i += 1;
                continue;
            }
            _ => {
                out.push('\\');
                out.push(e);
                continue;
            }
        };
        let start = i;
        while i < chars.len() && i - start < max && chars[i].is_digit(radix) {
            i += 1;
        }
        if i == start {
            out.push('\\');
            out.push(e);
            continue;
        }
        let digits: String = chars[start..i].iter().collect();
        match u32::from_str_radix(&digits, radix)
            .ok()
            .and_then(char::from_u32)
        {
            Some(ch) => out.push(ch),
            None => out.push('\u{fffd}'),
        }
    }
    out
}

/// The command name the shell looks up: the basename of a path.
pub(crate) fn basename(program: &str) -> &str {
    let trimmed = program.trim_end_matches('/');
    match trimmed.rfind('/') {
        Some(i) => &trimmed[i + 1..],
        None => trimmed,
    }
}
