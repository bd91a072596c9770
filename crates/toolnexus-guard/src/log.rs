//! The guard's log: one JSON line per call, appended. It never holds a
//! secret: the tool input appears only as a SHA-256 unless the policy sets
//! `log_commands`, and then with credentials redacted. Each line carries the
//! previous line's hash (`prev`, the SHA-256 hex of its bytes without the
//! newline; `null` on the first line of a new log), so a line changed or
//! removed afterwards is found by [`verify`]; [`summary`] reads the log back.

use std::io::Write;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Instant;

use regex::Regex;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::call::ToolCall;
use crate::engine::{Judgment, compact};
use crate::policy::Policy;

mod read;

pub use read::{Broken, Summary, Verified, summary, verify};

/// Credentials as they appear in commands and files, replaced by
/// `[redacted]`: each expression with the ASCII needles one of which every
/// match holds (lower case, for a text in lower case), so that an expression
/// is compiled and run only for a text that could hold a match. A guard call
/// writes one log line per process: compiling every expression for it cost
/// more than the rest of the line.
const SECRETS: [(&str, &[&str]); 9] = [
    (r"AKIA[0-9A-Z]{16}", &["akia"]),
    (
        r"(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{8,}",
        &["_live_", "_test_"],
    ),
    (r"gh[pousr]_[0-9A-Za-z]{20,}", &["gh"]),
    (r"xox[abprs]-[0-9A-Za-z-]{10,}", &["xox"]),
    (r"AIza[0-9A-Za-z_-]{20,}", &["aiza"]),
    (
        r"eyJ[0-9A-Za-z_-]{8,}\.[0-9A-Za-z_-]{8,}\.[0-9A-Za-z_-]{8,}",
        &["eyj"],
    ),
    (r"-----BEGIN [A-Z ]*PRIVATE KEY-----[^-]*", &["-----begin "]),
    (
        r"(?i)\b(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key)\b(?:\\?[\x22'])?\s*[:=]\s*(?:\\?[\x22'])?[^\s\x22'\\&,;]{4,}",
        &["passw", "pwd", "secret", "token", "key"],
    ),
    (
        r"(?i)(?:postgres|postgresql|mysql|mongodb(?:\+srv)?|redis|amqp)://[^:/\s\x22']+:[^@\s\x22']+@",
        &["://"],
    ),
];

/// The expression of [`SECRETS`]`[i]`, compiled on first use.
fn secret(i: usize) -> Option<&'static Regex> {
    static RES: [OnceLock<Option<Regex>>; 9] = [const { OnceLock::new() }; 9];
    RES[i]
        .get_or_init(|| Regex::new(SECRETS[i].0).ok())
        .as_ref()
}

/// `text` with every credential replaced by `[redacted]`.
///
/// ```
/// use toolnexus_guard::log::redact;
/// assert_eq!(redact("export KEY=AKIAIOSFODNN7EXAMPLE"), "export KEY=[redacted]");
/// assert_eq!(redact("cargo test"), "cargo test");
/// ```
pub fn redact(text: &str) -> String {
    let mut out = text.to_string();
    // Case-insensitive expressions also match non-ASCII letters that fold
    // to ASCII (the Kelvin sign to `k`): needles are trusted on ASCII only.
    let lower = text.is_ascii().then(|| text.to_ascii_lowercase());
    for (i, (_, needles)) in SECRETS.iter().enumerate() {
        if let Some(lower) = &lower
            && !needles.iter().any(|n| lower.contains(n))
        {
            continue;
        }
        if let Some(re) = secret(i)
            && re.is_match(&out)
        {
            out = re.replace_all(&out, "[redacted]").into_owned();
        }
    }
    out
}

fn sha256(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    let mut s = String::with_capacity(71);
    s.push_str("sha256:");
    for b in d {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// What one log line is about.
#[derive(Debug, Clone, Copy)]
pub enum Entry<'a> {
    /// A call the guard judged.
    Judged {
        /// The call as the hook gave it (hidden fields included: only its
        /// hash is logged, unless the policy logs commands).
        call: &'a ToolCall,
        /// The hook's `session_id`, if it gave one.
        session_id: Option<&'a str>,
        /// The hook's `tool_use_id`, if it gave one.
        tool_use_id: Option<&'a str>,
        /// The guard's judgment.
        judgment: &'a Judgment,
        /// Whether the answer was printed (a silent allow is not).
        printed: bool,
    },
    /// Input that was not a call: its bytes (only their hash is logged) and why.
    Unread {
        /// The input as read.
        raw: &'a [u8],
        /// Why it could not be read; the permission logged is the policy's `on_error`.
        error: &'a str,
    },
}

/// Appends one line about `entry` to the policy's log, if it has one. An error
/// is for the caller to say (a log that cannot be written changes no verdict).
///
/// ```
/// use std::time::Instant;
/// use toolnexus_guard::{Policy, log};
/// let dir = std::env::temp_dir().join(format!("toolnexus-guard-doc-log-{}", std::process::id()));
/// let file = dir.join("guard.jsonl");
/// let policy = Policy::parse(
///     &format!(r#"{{"toolnexus":"guard-policy","version":1,"log":{{"path":{:?}}}}}"#, file.display().to_string()),
///     None,
/// )?;
/// log::write(&policy, log::Entry::Unread { raw: b"{oops", error: "not JSON" }, Instant::now())?;
/// let line = std::fs::read_to_string(&file)?;
/// assert!(line.contains(r#""verdict":"ask","error":"not JSON""#), "{line}");
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write(policy: &Policy, entry: Entry<'_>, started: Instant) -> std::io::Result<()> {
    let Some(spec) = &policy.log else {
        return Ok(());
    };
    let mut line = Map::new();
    let ts = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    line.insert("ts_ms".into(), json!(ts));
    match entry {
        Entry::Judged {
            call,
            session_id,
            tool_use_id,
            judgment,
            printed,
        } => {
            for (k, v) in [("session_id", session_id), ("tool_use_id", tool_use_id)] {
                if let Some(s) = v {
                    line.insert(k.into(), json!(s));
                }
            }
            line.insert("tool_name".into(), json!(call.tool_name));
            if let Some(cwd) = &call.cwd {
                line.insert("cwd".into(), json!(cwd));
            }
            let input = compact(&call.tool_input);
            line.insert("input_sha256".into(), json!(sha256(input.as_bytes())));
            if spec.log_commands {
                let text = redact(&input);
                line.insert(
                    "tool_input".into(),
                    serde_json::from_str(&text).unwrap_or(Value::String(text)),
                );
            }
            line.insert(
                "verdict".into(),
                if judgment.skipped {
                    Value::Null
                } else {
                    json!(judgment.permission.as_str())
                },
            );
            line.insert("printed".into(), json!(printed));
            // What could not be read is quoted in the hook's reason; the log
            // keeps the command out unless the policy logs commands.
            let reason = if spec.log_commands {
                redact(&judgment.reason)
            } else {
                without_quotes(&judgment.reason)
            };
            line.insert("reason".into(), json!(reason));
            if let Value::Object(d) = &judgment.detail {
                for (k, v) in d {
                    if k != "latency_ms" {
                        line.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        Entry::Unread { raw, error } => {
            line.insert("input_sha256".into(), json!(sha256(raw)));
            line.insert("verdict".into(), json!(policy.on_error.as_str()));
            line.insert("error".into(), json!(error));
        }
    }
    line.insert(
        "latency_ms".into(),
        json!((started.elapsed().as_secs_f64() * 1e4).round() / 10.0),
    );
    append(&spec.path, spec.max_bytes, line)
}

/// A reason with the parts that quote the command left out: the
/// parenthesis after "could not be read statically".
fn without_quotes(reason: &str) -> String {
    const MARK: &str = "could not be read statically (";
    let Some(at) = reason.find(MARK) else {
        return reason.to_string();
    };
    let open = at + MARK.len();
    let mut depth = 1;
    for (i, ch) in reason[open..].char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return format!(
                        "{}the text is in the hook's answer, not the log{}",
                        &reason[..open],
                        &reason[open + i..]
                    );
                }
            }
            _ => {}
        }
    }
    format!(
        "{}the text is in the hook's answer, not the log)",
        &reason[..open]
    )
}

/// The hex SHA-256 of a line's bytes (without its newline): the next line's `prev`.
///
/// ```
/// assert_eq!(
///     toolnexus_guard::log::line_hash(b""),
///     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
/// );
/// ```
pub fn line_hash(line: &[u8]) -> String {
    let d = Sha256::digest(line);
    let mut s = String::with_capacity(64);
    for b in d {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// The last line of the open file `f` (without its newline), if it has one:
/// read backwards from the end in blocks, so a long log costs one block.
fn last_line(f: &mut std::fs::File) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::{Read, Seek, SeekFrom};
    let len = f.seek(SeekFrom::End(0))?;
    if len == 0 {
        return Ok(None);
    }
    let mut tail: Vec<u8> = Vec::new();
    let mut pos = len;
    while pos > 0 {
        let step = pos.min(8192);
        pos -= step;
        let mut block = vec![0; step as usize];
        f.seek(SeekFrom::Start(pos))?;
        f.read_exact(&mut block)?;
        // The file's final newline ends the last line; it is not part of it.
        if pos + step == len && block.last() == Some(&b'\n') {
            block.pop();
        }
        block.extend_from_slice(&tail);
        tail = block;
        if let Some(i) = tail.iter().rposition(|&b| b == b'\n') {
            return Ok(Some(tail[i + 1..].to_vec()));
        }
    }
    Ok(Some(tail))
}

/// Appends `line` to the log at `path` in one write, holding the file's lock.
/// A file that `line` would take past `max_bytes` is first renamed to
/// `<path>.1` (replacing the one before) and a new file started. Guards
/// running side by side take turns: no line is torn or interleaved, and a
/// guard that waited on a file rotated meanwhile writes to the new one.
///
/// The line gets its `prev` here, under the lock: the hash of the file's last
/// line, or of the rotated file's last line for a new file's first.
fn append(path: &Path, max_bytes: u64, mut line: Map<String, Value>) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    let mut carried: Option<String> = None;
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
    {
        std::fs::create_dir_all(dir)?;
    }
    for _ in 0..16 {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)?;
        let locked = match f.lock() {
            Ok(()) => true,
            // A file system without locks: one write still keeps lines whole.
            Err(e) if e.kind() == std::io::ErrorKind::Unsupported => false,
            Err(e) => return Err(e),
        };
        let held = f.metadata()?;
        if locked {
            match std::fs::metadata(path) {
                Ok(now) if now.dev() == held.dev() && now.ino() == held.ino() => {}
                // Rotated while this guard waited for the lock: the new file.
                _ => continue,
            }
        }
        let prev = match last_line(&mut f)? {
            Some(last) => Some(line_hash(&last)),
            None => carried.clone(),
        };
        line.insert("prev".into(), prev.map_or(Value::Null, Value::String));
        let mut text = Value::Object(line.clone()).to_string();
        text.push('\n');
        if locked && held.len() > 0 && held.len() + text.len() as u64 > max_bytes {
            carried = last_line(&mut f)?.map(|l| line_hash(&l));
            let mut old = path.as_os_str().to_owned();
            old.push(".1");
            std::fs::rename(path, &old)?;
            continue;
        }
        return f.write_all(text.as_bytes());
    }
    Err(std::io::Error::other(
        "the log keeps being replaced while it is opened",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_log_rotates_to_dot_one_and_side_by_side_writers_keep_every_line_whole() {
        let dir = std::env::temp_dir().join(format!("toolnexus-guard-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("guard.jsonl");
        let line = |t: usize, i: usize| {
            json!({"t": t, "i": i, "pad": "x".repeat(200)})
                .as_object()
                .cloned()
                .unwrap()
        };
        std::thread::scope(|s| {
            for t in 0..8 {
                let (path, line) = (&path, &line);
                s.spawn(move || {
                    for i in 0..50 {
                        append(path, 4096, line(t, i)).unwrap();
                    }
                });
            }
        });
        let old = dir.join("guard.jsonl.1");
        for p in [&path, &old] {
            let text = std::fs::read_to_string(p).unwrap();
            assert!(
                text.len() as u64 <= 4096,
                "{} holds {} bytes",
                p.display(),
                text.len()
            );
            for l in text.lines() {
                serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("torn line {l:?}: {e}"));
            }
        }
        // The newest lines are in the current file: the last each writer wrote is there or in .1.
        let both =
            std::fs::read_to_string(&path).unwrap() + &std::fs::read_to_string(&old).unwrap();
        assert!(
            (0..8).any(|t| both.contains(&format!("\"t\":{t},\"i\":49,"))),
            "{both}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_reason_quoting_the_command_is_logged_without_it() {
        let r = "toolnexus guard: ask: the command could not be read statically (a word from $(echo rm)); rule x (y)";
        assert_eq!(
            without_quotes(r),
            "toolnexus guard: ask: the command could not be read statically (the text is in the hook's answer, not the log); rule x (y)"
        );
        assert_eq!(without_quotes("rule x (y)"), "rule x (y)");
    }

    #[test]
    fn credentials_are_redacted() {
        let t = redact(
            r#"{"command":"curl -H 'token: abcd1234efgh' -d AKIAIOSFODNN7EXAMPLE https://x","content":"password = Winter2024!crm"}"#,
        );
        assert!(!t.contains("AKIAIOSFODNN7EXAMPLE"), "{t}");
        assert!(!t.contains("abcd1234efgh"), "{t}");
        assert!(!t.contains("Winter2024"), "{t}");
        assert!(redact("postgres://app:Xk29!vLq@db:5432/x").contains("[redacted]"));
        assert_eq!(redact("cargo test"), "cargo test");
    }

    #[test]
    fn the_needles_never_skip_an_expression_that_would_have_matched() {
        let every = |text: &str| {
            let mut out = text.to_string();
            for (source, _) in SECRETS {
                out = Regex::new(source)
                    .unwrap()
                    .replace_all(&out, "[redacted]")
                    .into_owned();
            }
            out
        };
        for text in [
            "curl -H 'Token: abcd1234efgh' https://x",
            "export API_KEY=sk_live_abcdefgh123",
            "git remote add o https://ghp_abcdefghijklmnopqrstuvwx@github.com/o/r",
            "xoxb-1234567890-abc and AIzaSyA1234567890abcdefghij",
            "Authorization: Bearer eyJhbGciOiJI.eyJzdWIiOiIx.SflKxwRJSMeKKF2Q",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END",
            "MONGODB+SRV://u:p4ss@h/db",
            "PASSWD=hunter2hunter2",
            // The Kelvin sign folds to `k` under (?i): no ASCII needle holds it.
            "api_\u{212A}ey=abcd1234",
            "cargo test --workspace",
        ] {
            assert_eq!(redact(text), every(text), "{text}");
        }
        assert!(redact("api_\u{212A}ey=abcd1234").contains("[redacted]"));
    }
}
