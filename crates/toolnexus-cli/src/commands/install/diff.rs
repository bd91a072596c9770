//! A small unified-style line diff for `--dry-run` (pure).
//!
//! The files it compares are agents' configuration files: small, and changed
//! in one place. The common head and tail are set aside first, and the longest
//! common subsequence is taken over what is left; a middle too large for that
//! table is shown as removed and added whole.
//!
//! The files hold other programs' secrets (an MCP server's token in its
//! `env`, an API key in `~/.claude.json`), and a context line may be one of
//! them: every printed line is [`redact`]ed first.

/// Lines of unchanged context around each change.
const CONTEXT: usize = 3;

/// The largest middle (lines before × lines after) the LCS table is built for.
const MAX_TABLE: usize = 4_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// The same line at `old` and `new`.
    Keep(usize, usize),
    /// Old line `i` removed.
    Remove(usize),
    /// New line `j` added.
    Add(usize),
}

/// The edit script turning `old` into `new`, in order.
fn script(old: &[&str], new: &[&str]) -> Vec<Op> {
    let head = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let tail = old[head..]
        .iter()
        .rev()
        .zip(new[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (a, b) = (&old[head..old.len() - tail], &new[head..new.len() - tail]);
    let mut ops: Vec<Op> = (0..head).map(|i| Op::Keep(i, i)).collect();
    if a.len().saturating_mul(b.len()) > MAX_TABLE {
        ops.extend((0..a.len()).map(|i| Op::Remove(head + i)));
        ops.extend((0..b.len()).map(|j| Op::Add(head + j)));
    } else {
        // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
        let w = b.len() + 1;
        let mut lcs = vec![0u32; (a.len() + 1) * w];
        for i in (0..a.len()).rev() {
            for j in (0..b.len()).rev() {
                lcs[i * w + j] = if a[i] == b[j] {
                    lcs[(i + 1) * w + j + 1] + 1
                } else {
                    lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < a.len() || j < b.len() {
            if i < a.len() && j < b.len() && a[i] == b[j] {
                ops.push(Op::Keep(head + i, head + j));
                i += 1;
                j += 1;
            } else if i < a.len() && (j == b.len() || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1]) {
                ops.push(Op::Remove(head + i));
                i += 1;
            } else {
                ops.push(Op::Add(head + j));
                j += 1;
            }
        }
    }
    let (o, n) = (old.len() - tail, new.len() - tail);
    ops.extend((0..tail).map(|k| Op::Keep(o + k, n + k)));
    ops
}

/// `old` → `new` as a unified diff under `--- label` / `+++ label`, hunks
/// with [`CONTEXT`] lines of context; empty when the texts are equal.
pub fn unified(label: &str, old: &str, new: &str) -> String {
    let old: Vec<&str> = old.lines().collect();
    let new: Vec<&str> = new.lines().collect();
    let ops = script(&old, &new);
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, op)| !matches!(op, Op::Keep(..)))
        .map(|(k, _)| k)
        .collect();
    if changed.is_empty() {
        return String::new();
    }
    let mut out = format!("--- {label}\n+++ {label}\n");
    let mut k = 0;
    while k < changed.len() {
        // One hunk: changes whose context windows touch.
        let start = changed[k].saturating_sub(CONTEXT);
        let mut last = changed[k];
        while k + 1 < changed.len() && changed[k + 1] <= last + 2 * CONTEXT + 1 {
            k += 1;
            last = changed[k];
        }
        k += 1;
        let end = (last + CONTEXT + 1).min(ops.len());
        let hunk = &ops[start..end];
        let old_lines = hunk.iter().filter(|op| !matches!(op, Op::Add(_))).count();
        let new_lines = hunk
            .iter()
            .filter(|op| !matches!(op, Op::Remove(_)))
            .count();
        // The first old and new line numbers of the hunk: the old (new) line
        // of its first op that has one, else the count of lines before it.
        let old_at = ops[..end]
            .iter()
            .skip(start)
            .find_map(|op| match op {
                Op::Keep(i, _) | Op::Remove(i) => Some(*i),
                Op::Add(_) => None,
            })
            .unwrap_or_else(|| lines_before(&ops[..start], true));
        let new_at = ops[..end]
            .iter()
            .skip(start)
            .find_map(|op| match op {
                Op::Keep(_, j) | Op::Add(j) => Some(*j),
                Op::Remove(_) => None,
            })
            .unwrap_or_else(|| lines_before(&ops[..start], false));
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            range(old_at, old_lines),
            range(new_at, new_lines)
        ));
        for op in hunk {
            match *op {
                Op::Keep(i, _) => out.push_str(&format!(" {}\n", redact(old[i]))),
                Op::Remove(i) => out.push_str(&format!("-{}\n", redact(old[i]))),
                Op::Add(j) => out.push_str(&format!("+{}\n", redact(new[j]))),
            }
        }
    }
    out
}

/// How many old (or new) lines the ops before a hunk cover.
fn lines_before(ops: &[Op], old: bool) -> usize {
    ops.iter()
        .filter(|op| match op {
            Op::Keep(..) => true,
            Op::Remove(_) => old,
            Op::Add(_) => !old,
        })
        .count()
}

/// A hunk header's `start,count` (1-based; an empty range names the line before).
fn range(at: usize, count: usize) -> String {
    match count {
        0 => format!("{at},0"),
        1 => format!("{}", at + 1),
        _ => format!("{},{count}", at + 1),
    }
}

/// Parts of a key name that mark its value as a secret.
const SECRET_WORDS: &[&str] = &[
    "key",
    "token",
    "secret",
    "passw",
    "credential",
    "auth",
    "bearer",
    "cookie",
    "private",
];

/// A token of a JSON or TOML line.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Token {
    /// A quoted string (either quote), its quotes included.
    Str,
    /// A bare word: letters, digits, `_`, `-`, `.`.
    Word,
    /// Blanks.
    Blank,
    /// One other character.
    Punct(u8),
}

/// A JSON or TOML line with the string value of every key that looks secret
/// (`"GITHUB_TOKEN": "…"`, `api_key = "…"`, inline tables too) replaced by
/// `"…"`. Keys, structure and every other value are shown as they are.
pub fn redact(line: &str) -> String {
    let b = line.as_bytes();
    let mut tokens: Vec<(Token, usize, usize)> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let kind = match b[i] {
            q @ (b'"' | b'\'') => {
                i += 1;
                while i < b.len() && b[i] != q {
                    i += if q == b'"' && b[i] == b'\\' { 2 } else { 1 };
                }
                i = (i + 1).min(b.len());
                Token::Str
            }
            c if c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.') => {
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'_' | b'-' | b'.'))
                {
                    i += 1;
                }
                Token::Word
            }
            c if c.is_ascii_whitespace() => {
                while i < b.len() && b[i].is_ascii_whitespace() {
                    i += 1;
                }
                Token::Blank
            }
            c => {
                i += 1;
                // Keep multi-byte characters whole.
                while i < b.len() && !line.is_char_boundary(i) {
                    i += 1;
                }
                Token::Punct(c)
            }
        };
        tokens.push((kind, start, i));
    }
    let solid: Vec<usize> = (0..tokens.len())
        .filter(|&t| tokens[t].0 != Token::Blank)
        .collect();
    let mut hide = vec![false; tokens.len()];
    for w in solid.windows(3) {
        let (key, sep, value) = (tokens[w[0]], tokens[w[1]], tokens[w[2]]);
        let is_key = matches!(key.0, Token::Str | Token::Word);
        let is_sep = matches!(sep.0, Token::Punct(b':') | Token::Punct(b'='));
        if is_key && is_sep && value.0 == Token::Str {
            let name = line[key.1..key.2].to_ascii_lowercase();
            hide[w[2]] = SECRET_WORDS.iter().any(|s| name.contains(s));
        }
    }
    let mut out = String::with_capacity(line.len());
    for (t, &(_, a, z)) in tokens.iter().enumerate() {
        if hide[t] {
            out.push_str("\"…\"");
        } else {
            out.push_str(&line[a..z]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_have_no_diff() {
        assert_eq!(unified("f", "a\nb\n", "a\nb\n"), "");
    }

    #[test]
    fn a_new_file_is_all_added() {
        assert_eq!(
            unified("f", "", "{\n}\n"),
            "--- f\n+++ f\n@@ -0,0 +1,2 @@\n+{\n+}\n"
        );
    }

    #[test]
    fn a_change_in_the_middle_keeps_three_lines_of_context() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let new = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
        assert_eq!(
            unified("f", old, new),
            "--- f\n+++ f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
        );
    }

    #[test]
    fn distant_changes_are_separate_hunks() {
        let old: String = (1..=20).map(|i| format!("{i}\n")).collect();
        let new: String = (1..=20)
            .filter(|&i| i != 19)
            .map(|i| {
                if i == 2 {
                    "two\n".to_string()
                } else {
                    format!("{i}\n")
                }
            })
            .collect();
        let d = unified("f", &old, &new);
        assert_eq!(d.matches("@@ -").count(), 2, "{d}");
        assert!(d.contains("@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n"), "{d}");
        assert!(
            d.contains("@@ -16,5 +16,4 @@\n 16\n 17\n 18\n-19\n 20\n"),
            "{d}"
        );
    }

    #[test]
    fn secret_looking_values_are_never_printed() {
        assert_eq!(
            redact(r#"    "GITHUB_TOKEN": "ghp_x","#),
            r#"    "GITHUB_TOKEN": "…","#
        );
        assert_eq!(
            redact(r#"  "primaryApiKey": "sk-1""#),
            r#"  "primaryApiKey": "…""#
        );
        assert_eq!(
            redact(r#"api_key = 'sk-2'  # mine"#),
            r#"api_key = "…"  # mine"#
        );
        assert_eq!(
            redact(r#"env = { "DOCS_TOKEN" = "d\"x", "MODE" = "fast" }"#),
            r#"env = { "DOCS_TOKEN" = "…", "MODE" = "fast" }"#
        );
        for kept in [
            r#"      "command": "/bin/toolnexus guard --api-key-env K","#,
            r#"  "keys": 3,"#,
            r#"  "oauthAccount": {"#,
            "model = \"o3\"",
            "",
            "é: \"ü\"",
        ] {
            assert_eq!(redact(kept), kept);
        }
    }

    #[test]
    fn an_insertion_between_lines() {
        let d = unified("f", "a\nb\n", "a\nx\nb\n");
        assert_eq!(d, "--- f\n+++ f\n@@ -1,2 +1,3 @@\n a\n+x\n b\n");
    }
}
