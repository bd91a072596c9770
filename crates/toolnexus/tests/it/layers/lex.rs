//! The lexer of the layers' reader: Rust source reduced to the tokens paths
//! are made of, the brackets and items they stand in, and `use` trees.

/// A token of Rust source, reduced to what paths are made of. Comments,
/// numbers, characters and lifetimes are dropped; strings are kept only so
/// that `#[path = "…"]` can be read (a path inside a string is no arrow).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Tok {
    Ident(String),
    Str(String),
    Punct(char),
    /// `::`
    Sep,
}

#[derive(Clone, Debug)]
pub(super) struct Token {
    pub(super) tok: Tok,
    pub(super) line: usize,
}

impl Token {
    pub(super) fn is(&self, c: char) -> bool {
        self.tok == Tok::Punct(c)
    }

    pub(super) fn ident(&self) -> Option<&str> {
        match &self.tok {
            Tok::Ident(s) => Some(s),
            _ => None,
        }
    }
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

pub(super) fn lex(src: &str) -> Vec<Token> {
    let c: Vec<char> = src.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            // Block comments nest in Rust.
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            }
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && is_ident_char(c[i]) {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let next = at(i);
            if word == "r" && next == '#' && (at(i + 1).is_alphabetic() || at(i + 1) == '_') {
                // A raw identifier, `r#type`.
                i += 1;
                let s = i;
                while i < c.len() && is_ident_char(c[i]) {
                    i += 1;
                }
                let tok = Tok::Ident(c[s..i].iter().collect());
                out.push(Token { tok, line });
            } else if matches!(word.as_str(), "r" | "br" | "cr") && matches!(next, '"' | '#') {
                let first = line;
                let mut hashes = 0;
                while at(i) == '#' {
                    hashes += 1;
                    i += 1;
                }
                i += 1;
                let s = i;
                while i < c.len() && !(c[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#')) {
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
                let tok = Tok::Str(c[s..i.min(c.len())].iter().collect());
                out.push(Token { tok, line: first });
                i += 1 + hashes;
            } else if !(matches!(word.as_str(), "b" | "c") && next == '"'
                || word == "b" && next == '\'')
            {
                // (A `b"…"`, `c"…"` or `b'…'` prefix is dropped: the literal
                // that follows is read on the next turn.)
                out.push(Token {
                    tok: Tok::Ident(word),
                    line,
                });
            }
        } else if ch.is_ascii_digit() {
            while i < c.len() && (is_ident_char(c[i]) || c[i] == '.' && at(i + 1).is_ascii_digit())
            {
                i += 1;
            }
        } else if ch == '"' {
            let first = line;
            i += 1;
            let s = i;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                line += usize::from(at(i) == '\n');
                i += 1;
            }
            let tok = Tok::Str(c[s..i.min(c.len())].iter().collect());
            out.push(Token { tok, line: first });
            i += 1;
        } else if ch == '\'' {
            if at(i + 1) == '\\' {
                // An escaped character: `'\n'`, `'\''`, `'\u{1F600}'`.
                i += 3;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                // A lifetime or a loop label.
                i += 1;
                while i < c.len() && is_ident_char(c[i]) {
                    i += 1;
                }
            }
        } else if ch == ':' && at(i + 1) == ':' {
            out.push(Token {
                tok: Tok::Sep,
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                tok: Tok::Punct(ch),
                line,
            });
            i += 1;
        }
    }
    out
}

/// The index just past the bracket that closes the one at `open`.
pub(super) fn closing(toks: &[Token], open: usize) -> usize {
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().skip(open) {
        match t.tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                if depth <= 1 {
                    return k + 1;
                }
                depth -= 1;
            }
            _ => {}
        }
    }
    toks.len()
}

/// The end of the item, field or statement that starts at `i`: past its
/// `;` or `,`, past its first `{ … }` block, or at the bracket that closes
/// the group it stands in.
pub(super) fn item_end(toks: &[Token], i: usize) -> usize {
    let mut k = i;
    while k < toks.len() {
        match toks[k].tok {
            Tok::Punct(';' | ',') => return k + 1,
            Tok::Punct('{') => return closing(toks, k),
            Tok::Punct('(' | '[') => k = closing(toks, k),
            Tok::Punct(')' | ']' | '}') => return k,
            _ => k += 1,
        }
    }
    k
}

/// Whether the `use` at `i` is a re-export (`pub use`, `pub(crate) use`, …).
pub(super) fn is_public(toks: &[Token], i: usize) -> bool {
    let Some(p) = i.checked_sub(1) else {
        return false;
    };
    if toks[p].ident() == Some("pub") {
        return true;
    }
    if toks[p].is(')') {
        // Walk back over `pub( … )`.
        let mut k = p;
        while k > 0 && !toks[k].is('(') {
            k -= 1;
        }
        return k > 0 && toks[k - 1].ident() == Some("pub");
    }
    false
}

/// Expands the use tree at `*k` into its paths, each with the name it binds
/// (`None` for a glob).
pub(super) fn use_tree(
    toks: &[Token],
    k: &mut usize,
    mut prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    while let Some(t) = toks.get(*k) {
        match &t.tok {
            Tok::Sep => *k += 1,
            Tok::Punct('*') => {
                *k += 1;
                out.push((prefix, None));
                return;
            }
            Tok::Punct('{') => {
                *k += 1;
                while let Some(t) = toks.get(*k) {
                    if t.is('}') {
                        *k += 1;
                        break;
                    }
                    let before = *k;
                    use_tree(toks, k, prefix.clone(), out);
                    if toks.get(*k).is_some_and(|t| t.is(',')) {
                        *k += 1;
                    }
                    if *k == before {
                        *k += 1;
                    }
                }
                return;
            }
            Tok::Ident(name) => {
                *k += 1;
                if toks.get(*k).is_some_and(|t| t.tok == Tok::Sep) {
                    prefix.push(name.clone());
                    continue;
                }
                let mut bound = name.clone();
                if toks.get(*k).and_then(Token::ident) == Some("as") {
                    bound = toks
                        .get(*k + 1)
                        .and_then(Token::ident)
                        .unwrap_or("_")
                        .to_string();
                    *k += 2;
                }
                if name == "self" {
                    if bound == "self" {
                        bound = prefix.last().cloned().unwrap_or_default();
                    }
                } else {
                    prefix.push(name.clone());
                }
                out.push((prefix, Some(bound)));
                return;
            }
            _ => return,
        }
    }
}
