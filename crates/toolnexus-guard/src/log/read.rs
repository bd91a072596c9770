//! The log read back: its hash chain verified ([`verify`]) and its lines
//! summarised ([`summary`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::line_hash;

/// A log whose chain holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    /// Lines in the file.
    pub lines: usize,
    /// The first line that carries a `prev` (1-based; `lines + 1` when none does):
    /// the lines before it were written before the log was chained.
    pub chain_starts: usize,
    /// What the first chained line follows: the start of the log, the rotated
    /// file's last line, or a line no longer here.
    pub follows: String,
}

impl std::fmt::Display for Verified {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let chained = self.lines + 1 - self.chain_starts;
        if self.chain_starts > self.lines {
            return write!(
                f,
                "{} lines, none chained (written before the log carried hashes): nothing to verify",
                self.lines
            );
        }
        write!(f, "{chained} lines verified")?;
        if self.chain_starts > 1 {
            write!(
                f,
                " (lines 1–{} were written before the log carried hashes; the chain starts at line {})",
                self.chain_starts - 1,
                self.chain_starts
            )?;
        }
        write!(f, "; line {} follows {}", self.chain_starts, self.follows)
    }
}

/// Where the chain breaks: the first line changed or removed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Broken {
    /// The file cannot be read.
    #[error("cannot read {path}: {error}")]
    Unreadable {
        /// The file.
        path: String,
        /// Why.
        error: String,
    },
    /// A line's `prev` is not the hash of the line before it.
    #[error(
        "line {line} was changed, or the line after it removed: line {next}'s prev does not match it"
    )]
    Changed {
        /// The line changed (or followed by a removed one), 1-based.
        line: usize,
        /// The line whose `prev` shows it.
        next: usize,
    },
    /// A line that is not a log line, or lost its `prev` inside the chain.
    #[error("line {line} was changed: {why}")]
    NotALine {
        /// The line, 1-based.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// The rotated file's last line is not what the first line follows.
    #[error(
        "line 1 follows a line that is not the last of {rotated}: a line was removed from its end, or line 1 was changed"
    )]
    Rotated {
        /// The rotated file (`<path>.1`).
        rotated: String,
    },
}

impl Broken {
    /// The first line changed or removed (0 when the file cannot be read).
    pub fn line(&self) -> usize {
        match self {
            Broken::Unreadable { .. } => 0,
            Broken::Changed { line, .. } | Broken::NotALine { line, .. } => *line,
            Broken::Rotated { .. } => 1,
        }
    }
}

fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if body.is_empty() {
        return Vec::new();
    }
    body.split(|&b| b == b'\n').collect()
}

/// Checks the log's chain: every line's `prev` is the previous line's hash.
/// The first chained line's own `prev` is checked against the rotated file
/// (`<path>.1`) when there is one.
///
/// ```
/// use toolnexus_guard::log::verify;
/// let dir = std::env::temp_dir().join(format!("toolnexus-guard-doc-verify-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("guard.jsonl");
/// let first = r#"{"verdict":"allow","prev":null}"#;
/// let hash = toolnexus_guard::log::line_hash(first.as_bytes());
/// std::fs::write(&path, format!("{first}\n{{\"verdict\":\"ask\",\"prev\":\"{hash}\"}}\n"))?;
/// assert_eq!(verify(&path).unwrap().lines, 2);
/// std::fs::write(&path, format!("{{\"verdict\":\"deny\",\"prev\":null}}\n{{\"verdict\":\"ask\",\"prev\":\"{hash}\"}}\n"))?;
/// assert_eq!(verify(&path).unwrap_err().line(), 1);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn verify(path: &Path) -> Result<Verified, Broken> {
    let bytes = std::fs::read(path).map_err(|e| Broken::Unreadable {
        path: path.display().to_string(),
        error: e.to_string(),
    })?;
    let all = lines(&bytes);
    let mut start = None;
    let mut follows = String::from("the start of the log");
    for (i, line) in all.iter().enumerate() {
        let n = i + 1;
        let v: Value = serde_json::from_slice(line).map_err(|e| Broken::NotALine {
            line: n,
            why: format!("not JSON ({e})"),
        })?;
        let prev = match v.as_object() {
            Some(o) => o.get("prev"),
            None => {
                return Err(Broken::NotALine {
                    line: n,
                    why: "not a JSON object".into(),
                });
            }
        };
        let Some(prev) = prev else {
            if start.is_some() {
                return Err(Broken::NotALine {
                    line: n,
                    why: "it has no prev, inside the chain".into(),
                });
            }
            continue;
        };
        match start {
            None => {
                start = Some(n);
                if n > 1 {
                    let before = line_hash(all[i - 1]);
                    if prev.as_str() != Some(before.as_str()) {
                        return Err(Broken::Changed { line: i, next: n });
                    }
                    follows = format!("line {i}, the last written before the chain");
                } else if let Some(h) = prev.as_str() {
                    follows = rotated_follows(path, h)?;
                } else if !prev.is_null() {
                    return Err(Broken::NotALine {
                        line: n,
                        why: format!("its prev is {prev}, not a hash"),
                    });
                }
            }
            Some(_) => {
                if prev.as_str() != Some(line_hash(all[i - 1]).as_str()) {
                    return Err(Broken::Changed { line: i, next: n });
                }
            }
        }
    }
    Ok(Verified {
        lines: all.len(),
        chain_starts: start.unwrap_or(all.len() + 1),
        follows,
    })
}

/// What a first line whose `prev` is `hash` follows: the rotated file's last line.
fn rotated_follows(path: &Path, hash: &str) -> Result<String, Broken> {
    let mut name = path.as_os_str().to_owned();
    name.push(".1");
    let rotated = Path::new(&name);
    match std::fs::read(rotated) {
        Ok(bytes) => match lines(&bytes).last() {
            Some(last) if line_hash(last) == hash => {
                Ok(format!("the last line of {} (rotated)", rotated.display()))
            }
            _ => Err(Broken::Rotated {
                rotated: rotated.display().to_string(),
            }),
        },
        Err(_) => Ok(format!(
            "a line no longer here ({} is gone: rotated away, or removed)",
            rotated.display()
        )),
    }
}

/// What a log holds: how many calls, their verdicts, the rules that fired
/// most, and the latency.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Summary {
    /// Lines read.
    pub lines: usize,
    /// Lines that are not JSON objects (skipped).
    pub unreadable: usize,
    /// Calls per verdict (`skipped` for a tool the policy skips).
    pub verdicts: BTreeMap<String, usize>,
    /// Calls that could not be judged (an `error` on the line).
    pub errors: usize,
    /// Rules by how many calls they fired on, most first (ties by name).
    pub rules: Vec<(String, usize)>,
    /// The median latency in milliseconds (`None`: no line gave one).
    pub p50_ms: Option<f64>,
    /// The 99th percentile latency in milliseconds.
    pub p99_ms: Option<f64>,
}

impl Summary {
    /// The summary as `toolnexus guard log` prints it: calls by verdict,
    /// unreadable lines, latency and the rules that fired most; one line
    /// each, no final newline.
    ///
    /// ```
    /// use toolnexus_guard::log::Summary;
    /// let s = Summary { lines: 2, verdicts: [("deny".to_string(), 2)].into(), ..Default::default() };
    /// let text = s.text("guard.jsonl".as_ref());
    /// assert!(text.starts_with("guard.jsonl: 2 calls (deny 2)"), "{text}");
    /// ```
    pub fn text(&self, path: &Path) -> String {
        let mut out: Vec<String> = Vec::new();
        macro_rules! line {
            ($($t:tt)*) => { out.push(format!($($t)*)) };
        }
        let s = self;
        let verdicts: Vec<String> = s.verdicts.iter().map(|(v, n)| format!("{v} {n}")).collect();
        line!(
            "{}: {} calls ({}){}",
            path.display(),
            s.lines - s.unreadable,
            if verdicts.is_empty() {
                "none".into()
            } else {
                verdicts.join(", ")
            },
            if s.errors > 0 {
                format!("; {} could not be judged (on_error)", s.errors)
            } else {
                String::new()
            }
        );
        if s.unreadable > 0 {
            line!("{} lines are not log lines (skipped)", s.unreadable);
        }
        match (s.p50_ms, s.p99_ms) {
            (Some(p50), Some(p99)) => line!("latency: p50 {p50:.1} ms, p99 {p99:.1} ms"),
            _ => line!("latency: not recorded"),
        }
        if s.rules.is_empty() {
            line!("rules: none fired");
        } else {
            line!("top rules:");
            for (id, n) in s.rules.iter().take(10) {
                line!("  {n:>6}  {id}");
            }
        }
        out.join("\n")
    }
}

/// Summarises the log at `path`.
///
/// ```
/// use toolnexus_guard::log::summary;
/// let dir = std::env::temp_dir().join(format!("toolnexus-guard-doc-summary-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("guard.jsonl");
/// std::fs::write(&path, concat!(
///     r#"{"verdict":"deny","rules":["force-push"],"latency_ms":2.0}"#, "\n",
///     r#"{"verdict":"allow","rules":[],"latency_ms":8.0}"#, "\n",
/// ))?;
/// let s = summary(&path)?;
/// assert_eq!((s.lines, s.verdicts["deny"], s.rules[0].0.as_str()), (2, 1, "force-push"));
/// assert_eq!(s.p50_ms, Some(2.0));
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn summary(path: &Path) -> std::io::Result<Summary> {
    let bytes = std::fs::read(path)?;
    let mut s = Summary::default();
    let mut rules: BTreeMap<String, usize> = BTreeMap::new();
    let mut latency = Vec::new();
    for line in lines(&bytes) {
        s.lines += 1;
        let Ok(Value::Object(o)) = serde_json::from_slice::<Value>(line) else {
            s.unreadable += 1;
            continue;
        };
        let verdict = match o.get("verdict") {
            Some(Value::String(v)) => v.clone(),
            _ => "skipped".to_string(),
        };
        *s.verdicts.entry(verdict).or_default() += 1;
        if o.contains_key("error") {
            s.errors += 1;
        }
        for r in o
            .get("rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(id) = r.as_str() {
                *rules.entry(id.to_string()).or_default() += 1;
            }
        }
        if let Some(ms) = o.get("latency_ms").and_then(Value::as_f64) {
            latency.push(ms);
        }
    }
    let mut ranked: Vec<(String, usize)> = rules.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    s.rules = ranked;
    latency.sort_by(f64::total_cmp);
    let at = |q: f64| {
        (!latency.is_empty()).then(|| {
            let i = ((latency.len() as f64 * q).ceil() as usize).clamp(1, latency.len()) - 1;
            latency[i]
        })
    };
    s.p50_ms = at(0.5);
    s.p99_ms = at(0.99);
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("toolnexus-guard-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_written_log_verifies_and_a_changed_or_removed_line_is_named() {
        let d = dir("verify");
        let path = d.join("guard.jsonl");
        for i in 0..5 {
            let line = serde_json::json!({"i": i, "verdict": "allow"});
            super::super::append(&path, 1 << 20, line.as_object().cloned().unwrap()).unwrap();
        }
        let v = verify(&path).unwrap();
        assert_eq!((v.lines, v.chain_starts), (5, 1));
        assert!(v.to_string().starts_with("5 lines verified"), "{v}");
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();

        // Changed: line 3's verdict.
        let changed = lines[2].replace("allow", "deny");
        let mut edited = lines.clone();
        edited[2] = &changed;
        std::fs::write(&path, edited.join("\n") + "\n").unwrap();
        let e = verify(&path).unwrap_err();
        assert_eq!(e.line(), 3, "{e}");

        // Removed: line 4.
        lines.remove(3);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let e = verify(&path).unwrap_err();
        assert_eq!(e.line(), 3, "{e}");
        assert!(
            e.to_string().contains("or the line after it removed"),
            "{e}"
        );

        // An old log: no hashes, then the chain.
        std::fs::write(&path, "{\"verdict\":\"ask\"}\n{\"verdict\":\"allow\"}\n").unwrap();
        for _ in 0..2 {
            super::super::append(&path, 1 << 20, serde_json::Map::new()).unwrap();
        }
        let v = verify(&path).unwrap();
        assert_eq!((v.lines, v.chain_starts), (4, 3));
        assert!(v.to_string().contains("the chain starts at line 3"), "{v}");
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn the_chain_continues_across_a_rotation() {
        let d = dir("verify-rotate");
        let path = d.join("guard.jsonl");
        for i in 0..40 {
            let line = serde_json::json!({"i": i, "pad": "x".repeat(200)});
            super::super::append(&path, 4096, line.as_object().cloned().unwrap()).unwrap();
        }
        let v = verify(&path).unwrap();
        assert!(v.follows.contains("rotated"), "{v}");
        let mut rotated = path.as_os_str().to_owned();
        rotated.push(".1");
        assert!(verify(Path::new(&rotated)).is_ok());
        // The rotated file's last line removed: the current file's first line says so.
        let text = std::fs::read_to_string(&rotated).unwrap();
        let kept: Vec<&str> = text.lines().collect();
        std::fs::write(&rotated, kept[..kept.len() - 1].join("\n") + "\n").unwrap();
        assert_eq!(verify(&path).unwrap_err().line(), 1);
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn a_summary_counts_verdicts_rules_and_latency() {
        let d = dir("summary");
        let path = d.join("guard.jsonl");
        let mut text = String::new();
        for i in 0..100 {
            let verdict = if i % 10 == 0 { "deny" } else { "allow" };
            let rules: Vec<&str> = if i % 10 == 0 {
                vec!["force-push"]
            } else {
                vec![]
            };
            text.push_str(&format!(
                "{}\n",
                serde_json::json!({"verdict": verdict, "rules": rules, "latency_ms": i as f64})
            ));
        }
        text.push_str("{\"verdict\":null}\nnot json\n");
        std::fs::write(&path, text).unwrap();
        let s = summary(&path).unwrap();
        assert_eq!(s.lines, 102);
        assert_eq!(s.unreadable, 1);
        assert_eq!(s.verdicts["deny"], 10);
        assert_eq!(s.verdicts["skipped"], 1);
        assert_eq!(s.rules, [("force-push".to_string(), 10)]);
        assert_eq!((s.p50_ms, s.p99_ms), (Some(49.0), Some(98.0)));
        std::fs::remove_dir_all(&d).ok();
    }
}
