//! The guard's log: one JSON line per call, appended. It never holds a
//! secret: the tool input appears only as a SHA-256 unless the policy sets
//! `log_commands`, and then with credentials redacted.

use std::io::Write;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Instant;

use regex::Regex;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::policy::Policy;
use super::{Judgment, ToolCall};

/// Credentials as they appear in commands and files: replaced by `[redacted]`.
fn secrets() -> &'static [Regex] {
    static RES: OnceLock<Vec<Regex>> = OnceLock::new();
    RES.get_or_init(|| {
        [
            r"AKIA[0-9A-Z]{16}",
            r"(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{8,}",
            r"gh[pousr]_[0-9A-Za-z]{20,}",
            r"xox[abprs]-[0-9A-Za-z-]{10,}",
            r"AIza[0-9A-Za-z_-]{20,}",
            r"eyJ[0-9A-Za-z_-]{8,}\.[0-9A-Za-z_-]{8,}\.[0-9A-Za-z_-]{8,}",
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----[^-]*",
            r"(?i)\b(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key)\b(?:\\?[\x22'])?\s*[:=]\s*(?:\\?[\x22'])?[^\s\x22'\\&,;]{4,}",
            r"(?i)(?:postgres|postgresql|mysql|mongodb(?:\+srv)?|redis|amqp)://[^:/\s\x22']+:[^@\s\x22']+@",
        ]
        .iter()
        .filter_map(|p| Regex::new(p).ok())
        .collect()
    })
}

/// `text` with every credential replaced by `[redacted]`.
pub fn redact(text: &str) -> String {
    let mut out = text.to_string();
    for re in secrets() {
        if re.is_match(&out) {
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

/// Appends one line for a call (or for input that was not a call). A log that
/// cannot be written is said on stderr and changes no verdict.
pub fn write(
    policy: &Policy,
    call: Option<(&ToolCall, &Map<String, Value>)>,
    raw: &[u8],
    judged: Option<(&Judgment, bool)>,
    error: Option<&str>,
    started: Instant,
) {
    let Some(spec) = &policy.log else { return };
    let mut line = Map::new();
    let ts = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    line.insert("ts_ms".into(), json!(ts));
    match call {
        Some((call, hook)) => {
            for k in ["session_id", "tool_use_id"] {
                if let Some(Value::String(s)) = hook.get(k) {
                    line.insert(k.into(), json!(s));
                }
            }
            line.insert("tool_name".into(), json!(call.tool_name));
            if let Some(cwd) = &call.cwd {
                line.insert("cwd".into(), json!(cwd));
            }
            line.insert(
                "input_sha256".into(),
                json!(sha256(call.tool_input.to_string().as_bytes())),
            );
            if spec.log_commands {
                let text = redact(&call.tool_input.to_string());
                line.insert(
                    "tool_input".into(),
                    serde_json::from_str(&text).unwrap_or(Value::String(text)),
                );
            }
        }
        None => {
            line.insert("input_sha256".into(), json!(sha256(raw)));
        }
    }
    if let Some((j, printed)) = judged {
        line.insert(
            "verdict".into(),
            if j.skipped {
                Value::Null
            } else {
                json!(j.verdict.as_str())
            },
        );
        line.insert("printed".into(), json!(printed));
        line.insert("reason".into(), json!(j.reason));
        if let Value::Object(d) = &j.detail {
            for (k, v) in d {
                if k != "latency_ms" {
                    line.insert(k.clone(), v.clone());
                }
            }
        }
    }
    if let Some(e) = error {
        line.insert("verdict".into(), json!(super::on_error_now().as_str()));
        line.insert("error".into(), json!(e));
    }
    line.insert(
        "latency_ms".into(),
        json!((started.elapsed().as_secs_f64() * 1e4).round() / 10.0),
    );
    let mut text = Value::Object(line).to_string();
    text.push('\n');
    if let Err(e) = append(&spec.path, spec.max_bytes, text.as_bytes()) {
        tell!(
            "toolnexus guard: the log {} could not be written: {e}",
            spec.path.display()
        );
    }
}

/// Appends `line` to the log at `path` in one write, holding the file's lock.
/// A file that `line` would take past `max_bytes` is first renamed to
/// `<path>.1` (replacing the one before) and a new file started. Guards
/// running side by side take turns: no line is torn or interleaved, and a
/// guard that waited on a file rotated meanwhile writes to the new one.
fn append(path: &Path, max_bytes: u64, line: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
    {
        std::fs::create_dir_all(dir)?;
    }
    for _ in 0..16 {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
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
            if held.len() > 0 && held.len() + line.len() as u64 > max_bytes {
                let mut old = path.as_os_str().to_owned();
                old.push(".1");
                std::fs::rename(path, &old)?;
                continue;
            }
        }
        return f.write_all(line);
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
            format!("{{\"t\":{t},\"i\":{i},\"pad\":\"{}\"}}\n", "x".repeat(200))
        };
        std::thread::scope(|s| {
            for t in 0..8 {
                let (path, line) = (&path, &line);
                s.spawn(move || {
                    for i in 0..50 {
                        append(path, 4096, line(t, i).as_bytes()).unwrap();
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
}
