//! The batch out file: whose it is, what it answers, who is writing it.
//!
//! A regular out file starts with one header line,
//! `{"toolnexus":"batch","version":1,"fingerprint":{"states":"sha256:…","questions":"sha256:…","style":"…","model":"…","stack":"…"}}`,
//! then one result line per input line. Before anything is read or written the
//! file is locked (an exclusive advisory lock held until the run ends), so a
//! second run on it stops at once. The header is what lets a run touch the
//! file at all:
//!
//! - absent or zero bytes: a fresh file; the header is written first;
//! - anything else without our header (a one-line note without a newline,
//!   blank lines, another program's JSON, an out file of an older version) is
//!   refused and left byte for byte as it was, `--restart` or not;
//! - our header with another fingerprint (the states file's bytes, the
//!   canonical questions, the style, the model, or what answers beneath the
//!   style — `stack`: `plain`, or the names of the classifier's fingerprint
//!   parts (calibration, a cascade's student, a tape's contents, …) and one
//!   SHA-256 over them — changed) is refused naming what changed, unless
//!   `--restart` starts it over; a header written before `stack` was
//!   recorded resumes with a note that it could not be checked;
//! - our header with this fingerprint resumes: a torn final line is truncated,
//!   and `--rerun-errors` first replaces the file, atomically (a temporary file
//!   beside it, then a rename), by one without its error lines.
//!
//! `--out -` is standard output, and a path that is not a regular file
//! (`/dev/stdout`, a FIFO, `/dev/full`) is a stream: never read, truncated or
//! locked, and given no header.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{ErrorKind, Read as _, Write as _};
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::Value;
use toolnexus::classifier::{ClassifierUsage, Questions, canonical_json, questions_wire};
use toolnexus::cost::Cost;

use super::sha256;
use crate::exit;

/// The version of the out file format the header names.
pub const VERSION: u64 = 1;

/// What a run answers: the out file is resumed only by a run with the same one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    /// `sha256:` of the states file's bytes.
    pub states: String,
    /// `sha256:` of the questions' canonical wire JSON.
    pub questions: String,
    /// The style decisions come from (`systemone`, `tape`, …).
    pub style: String,
    /// The model the style asks for.
    pub model: String,
    /// What answers beneath the style's name: `plain`, or the names of the
    /// layers and engine settings that can change an answer (calibration, a
    /// cascade's student, a tape's contents, …) and one SHA-256 over the
    /// classifier's fingerprint parts (`calibration sha256:…`). `None` in a
    /// header written before out files recorded it.
    pub stack: Option<String>,
}

impl Fingerprint {
    pub fn new(
        states: &[u8],
        questions: &Questions,
        style: &str,
        model: &str,
        stack: &toolnexus::classifier::Fingerprint,
    ) -> Fingerprint {
        let canonical = canonical_json(&questions_wire(questions));
        Fingerprint {
            states: sha256::tagged(states),
            questions: sha256::tagged(canonical.as_bytes()),
            style: style.to_string(),
            model: model.to_string(),
            stack: Some(stack_text(stack)),
        }
    }

    /// The header line, newline included.
    pub fn header(&self) -> String {
        let stack = self
            .stack
            .as_deref()
            .map(|s| format!(",\"stack\":{}", Value::from(s)))
            .unwrap_or_default();
        format!(
            "{{\"toolnexus\":\"batch\",\"version\":{VERSION},\"fingerprint\":{{\"states\":{},\"questions\":{},\"style\":{},\"model\":{}{stack}}}}}\n",
            Value::from(self.states.as_str()),
            Value::from(self.questions.as_str()),
            Value::from(self.style.as_str()),
            Value::from(self.model.as_str()),
        )
    }

    /// The fingerprint a header's `"fingerprint"` object holds.
    fn from_value(v: &Value) -> Option<Fingerprint> {
        let field = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        Some(Fingerprint {
            states: field("states")?,
            questions: field("questions")?,
            style: field("style")?,
            model: field("model")?,
            stack: field("stack"),
        })
    }

    /// What differs from `now`, in words; empty when nothing does.
    fn changes(&self, now: &Fingerprint) -> Vec<String> {
        let short = |h: &str| h.chars().take(19).collect::<String>();
        let mut out = Vec::new();
        if self.states != now.states {
            out.push(format!(
                "the --states file changed ({}… then, {}… now)",
                short(&self.states),
                short(&now.states)
            ));
        }
        if self.questions != now.questions {
            out.push("the questions changed".to_string());
        }
        if self.style != now.style {
            out.push(format!(
                "the style changed ({} then, {} now)",
                self.style, now.style
            ));
        }
        if self.model != now.model {
            out.push(format!(
                "the model changed ({} then, {} now)",
                self.model, now.model
            ));
        }
        if let (Some(then), Some(cur)) = (&self.stack, &now.stack)
            && then != cur
        {
            let short = |s: &str| match s.rsplit_once(" sha256:") {
                Some((names, hash)) => format!("{names} sha256:{}…", &hash[..hash.len().min(12)]),
                None => s.to_string(),
            };
            out.push(format!(
                "what answers beneath the style changed ({} then, {} now)",
                short(then),
                short(cur)
            ));
        }
        out
    }
}

/// A stack's fingerprint as an out file's header records it: `plain`, or the
/// names of its parts and one SHA-256 over them (the origin, such as a
/// System One endpoint, is left out: the same model at another address
/// answers the same).
fn stack_text(stack: &toolnexus::classifier::Fingerprint) -> String {
    if stack.is_plain() {
        return "plain".to_string();
    }
    let mut names: Vec<&str> = Vec::new();
    let mut all = String::new();
    for (layer, value) in stack.parts() {
        if !names.contains(&layer.as_str()) {
            names.push(layer);
        }
        all.push_str(&format!(
            "{}:{layer}={}:{value}\n",
            layer.len(),
            value.len()
        ));
    }
    format!(
        "{} {}",
        names.join("+"),
        toolnexus::classifier::Fingerprint::digest(all)
    )
}

/// How the run wants the out file treated.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// `--restart`: start our own out file over.
    pub restart: bool,
    /// `--rerun-errors`: ask the states of its error lines again.
    pub rerun_errors: bool,
    /// The last physical line of the states file: no result line may name a later one.
    pub last_line: usize,
}

/// Where result lines go.
pub enum Sink {
    /// `--out -`.
    Stdout,
    /// A path that is not a regular file: written only.
    Stream(File),
    /// A regular out file, locked. `_held` keeps the lock on the file a
    /// `--rerun-errors` rewrite replaced, so no run that opened it before the
    /// rename can take it over.
    File { file: File, _held: Option<File> },
}

impl Sink {
    /// One result line, in one write.
    pub fn write(&mut self, record: &str) -> std::io::Result<()> {
        match self {
            Sink::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(record.as_bytes())?;
                out.flush()
            }
            Sink::Stream(f) | Sink::File { file: f, .. } => f.write_all(record.as_bytes()),
        }
    }

    /// Makes what was written durable (a regular file) or delivered (stdout):
    /// an error a disk reports late is still an error of this run.
    pub fn finish(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Stdout => std::io::stdout().flush(),
            Sink::Stream(_) => Ok(()),
            Sink::File { file, .. } => file.sync_data(),
        }
    }
}

/// The out file, opened for this run.
pub struct Opened {
    pub sink: Sink,
    /// Whether results go to this process's standard output (`-`, `/dev/stdout`).
    pub is_stdout: bool,
    /// Whether it is a stream (no resume): standard output, a FIFO, a device.
    pub is_stream: bool,
    /// Input lines already answered.
    pub done: BTreeSet<usize>,
    /// Error lines the file keeps from earlier runs.
    pub errors: usize,
    /// Bytes of a torn final line removed.
    pub truncated: u64,
    /// Error lines removed for `--rerun-errors`: their states are asked again.
    pub rerun: usize,
    /// Whether `--restart` discarded earlier results.
    pub restarted: bool,
    /// What each decision line already in the file cost and the usage it
    /// reported: what earlier runs of this job spent, which the run's caps
    /// count (see [`spent_of`]).
    pub spent: Vec<(Cost, ClassifierUsage)>,
}

impl Opened {
    fn stream(sink: Sink, is_stdout: bool) -> Opened {
        Opened {
            sink,
            is_stdout,
            is_stream: true,
            done: BTreeSet::new(),
            errors: 0,
            truncated: 0,
            rerun: 0,
            restarted: false,
            spent: Vec::new(),
        }
    }
}

/// `no space left on device (ENOSPC)` for a full disk, else the error as the OS says it.
pub fn cause(e: &std::io::Error) -> String {
    if e.kind() == ErrorKind::StorageFull {
        "no space left on device (ENOSPC)".to_string()
    } else {
        e.to_string()
    }
}

/// Opens `--out` for a run with this fingerprint (see the module docs).
pub fn open(path: &Path, fingerprint: &Fingerprint, plan: Plan) -> Result<Opened> {
    let shown = path.display();
    let is_dash = path.as_os_str() == "-";
    let meta = std::fs::metadata(path);
    let is_stream = is_dash || meta.as_ref().is_ok_and(|m| !m.is_file() && !m.is_dir());
    if is_stream && (plan.restart || plan.rerun_errors) {
        let flag = if plan.restart {
            "--restart"
        } else {
            "--rerun-errors"
        };
        return Err(exit::usage(format!(
            "{flag}: --out {shown} is a stream, not a file a run can resume or rewrite"
        )));
    }
    if is_dash {
        return Ok(Opened::stream(Sink::Stdout, true));
    }
    if meta.as_ref().is_ok_and(std::fs::Metadata::is_dir) {
        return Err(exit::usage(format!("--out {shown}: is a directory")));
    }
    if is_stream {
        let file = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| exit::io(format!("--out {shown}: cannot open: {}", cause(&e))))?;
        let is_stdout = crate::input::same_file(path, Path::new("/dev/stdout"));
        return Ok(Opened::stream(Sink::Stream(file), is_stdout));
    }
    let mut file = open_locked(path)?;
    let is_stdout = crate::input::same_file(path, Path::new("/dev/stdout"));
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| exit::io(format!("--out {shown}: cannot read: {}", cause(&e))))?;
    let write_header = |file: &mut File| {
        file.write_all(fingerprint.header().as_bytes())
            .map_err(|e| exit::io(format!("--out {shown}: cannot write: {}", cause(&e))))
    };
    let fresh = |file: File, restarted: bool| Opened {
        sink: Sink::File { file, _held: None },
        is_stdout,
        is_stream: false,
        done: BTreeSet::new(),
        errors: 0,
        truncated: 0,
        rerun: 0,
        restarted,
        spent: Vec::new(),
    };
    if bytes.is_empty() {
        write_header(&mut file)?;
        return Ok(fresh(file, false));
    }
    if is_torn_header(&bytes, fingerprint) {
        // A run that could not finish writing its header (a full disk): ours,
        // and holding nothing yet.
        file.set_len(0)
            .map_err(|e| exit::io(format!("--out {shown}: cannot start over: {}", cause(&e))))?;
        write_header(&mut file)?;
        tell!("batch: {shown} held only a torn header line; started over");
        return Ok(fresh(file, false));
    }

    let earlier = read_header(path, &bytes)?;
    if plan.restart {
        file.set_len(0)
            .map_err(|e| exit::io(format!("--out {shown}: cannot start over: {}", cause(&e))))?;
        write_header(&mut file)?;
        return Ok(fresh(file, true));
    }
    let changes = earlier.changes(fingerprint);
    if !changes.is_empty() {
        return Err(exit::usage(format!(
            "--out {shown}: answers other inputs: {}; left untouched: rerun with --restart to start it over, or choose another --out",
            changes.join("; ")
        )));
    }
    if earlier.stack.is_none() {
        tell!(
            "batch: {shown} was written before out files recorded what answers beneath the style (calibration, a cascade, a tape's contents); resuming without checking it"
        );
    }

    let results = read_results(path, &bytes, plan.last_line)?;
    let torn = (bytes.len() - results.end) as u64;
    let mut done = results.done;
    if plan.rerun_errors && !results.errors.is_empty() {
        let mut body = Vec::with_capacity(results.end);
        body.extend_from_slice(&bytes[..results.header_end]);
        for (_, is_error, raw) in &results.lines {
            if !is_error {
                body.extend_from_slice(raw);
                body.push(b'\n');
            }
        }
        let replaced = rewrite(path, &file, &body)?;
        for n in &results.errors {
            done.remove(n);
        }
        return Ok(Opened {
            sink: Sink::File {
                file: replaced,
                _held: Some(file),
            },
            is_stdout,
            is_stream: false,
            done,
            errors: 0,
            truncated: torn,
            rerun: results.errors.len(),
            restarted: false,
            spent: spent_of(&results.lines),
        });
    }
    if torn > 0 {
        file.set_len(results.end as u64).map_err(|e| {
            exit::io(format!(
                "--out {shown}: cannot truncate a torn final line: {}",
                cause(&e)
            ))
        })?;
    }
    Ok(Opened {
        sink: Sink::File { file, _held: None },
        is_stdout,
        is_stream: false,
        done,
        errors: results.errors.len(),
        truncated: torn,
        rerun: 0,
        restarted: false,
        spent: spent_of(&results.lines),
    })
}

/// The cost and usage of each decision line: its `"cost"` (a cache hit's
/// `"cached":true` costs nothing), or for a line without one the cost its
/// usage reports; the usage as the decision reported it.
fn spent_of(lines: &[(usize, bool, &[u8])]) -> Vec<(Cost, ClassifierUsage)> {
    lines
        .iter()
        .filter(|(_, is_error, _)| !is_error)
        .filter_map(|(_, _, raw)| serde_json::from_slice::<Value>(raw).ok())
        .map(|v| {
            let u = v.get("decision").and_then(|d| d.get("usage"));
            let n = |k: &str| {
                u.and_then(|u| u.get(k))
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
            };
            let usage = ClassifierUsage {
                input_tokens: n("input_tokens"),
                output_tokens: n("output_tokens"),
                cost: u
                    .and_then(|u| u.get("cost"))
                    .and_then(Value::as_f64)
                    .filter(|c| c.is_finite()),
            };
            let cost = if v.get("cached").and_then(Value::as_bool) == Some(true) {
                Cost::cache_hit()
            } else {
                v.get("cost")
                    .and_then(Cost::from_value)
                    .unwrap_or_else(|| Cost::of_usage(&usage))
            };
            (cost, usage)
        })
        .collect()
}

/// The input lines a run with this fingerprint and plan would not ask again:
/// what [`open`] would find done in the out file, read without locking,
/// creating or changing it (`batch --estimate`). A stream, a missing or empty
/// file, or `--restart` has none; a file that answers other inputs is refused
/// as a run would refuse it.
pub fn already_done(path: &Path, fingerprint: &Fingerprint, plan: Plan) -> Result<BTreeSet<usize>> {
    let shown = path.display();
    let regular = std::fs::metadata(path).is_ok_and(|m| m.is_file());
    if path.as_os_str() == "-" || !regular || plan.restart {
        return Ok(BTreeSet::new());
    }
    let bytes = std::fs::read(path)
        .map_err(|e| exit::io(format!("--out {shown}: cannot read: {}", cause(&e))))?;
    if bytes.is_empty() || is_torn_header(&bytes, fingerprint) {
        return Ok(BTreeSet::new());
    }
    let changes = read_header(path, &bytes)?.changes(fingerprint);
    if !changes.is_empty() {
        return Err(exit::usage(format!(
            "--out {shown}: answers other inputs: {}; a run would refuse it (--restart starts it over)",
            changes.join("; ")
        )));
    }
    let results = read_results(path, &bytes, plan.last_line)?;
    let mut done = results.done;
    if plan.rerun_errors {
        for n in &results.errors {
            done.remove(n);
        }
    }
    Ok(done)
}

/// Opens (creating it if absent, never truncating) and locks the out file.
/// The lock is taken on what was opened; if the path was replaced meanwhile
/// (another run's `--rerun-errors` rename), the new file is opened instead.
fn open_locked(path: &Path) -> Result<File> {
    use std::os::unix::fs::MetadataExt as _;
    let shown = path.display();
    for _ in 0..8 {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(|e| exit::io(format!("--out {shown}: cannot open: {}", cause(&e))))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(exit::usage(format!(
                    "--out {shown}: another batch is writing to it (it holds the file's lock); left untouched: wait for that run to end, or choose another --out"
                )));
            }
            Err(TryLockError::Error(e)) if e.kind() == ErrorKind::Unsupported => {
                tell!(
                    "batch: warning: --out {shown}: this file system cannot lock it ({e}); do not run two batches on it at once"
                );
                return Ok(file);
            }
            Err(TryLockError::Error(e)) => {
                return Err(exit::io(format!(
                    "--out {shown}: cannot lock: {}",
                    cause(&e)
                )));
            }
        }
        let held = file
            .metadata()
            .map_err(|e| exit::io(format!("--out {shown}: cannot read: {}", cause(&e))))?;
        match std::fs::metadata(path) {
            Ok(now) if now.dev() == held.dev() && now.ino() == held.ino() => return Ok(file),
            _ => continue,
        }
    }
    Err(exit::io(format!(
        "--out {shown}: the file keeps being replaced while it is opened; is another program writing it?"
    )))
}

/// Whether the file holds only the start of the header this run writes (a run
/// stopped by a full disk while writing it): long enough to name the format,
/// no newline, and every byte what this run would write.
fn is_torn_header(bytes: &[u8], fingerprint: &Fingerprint) -> bool {
    const NAMED: &[u8] = br#"{"toolnexus":"batch","#;
    bytes.len() >= NAMED.len()
        && !bytes.contains(&b'\n')
        && fingerprint.header().as_bytes().starts_with(bytes)
}

/// The fingerprint of the header line that proves the file is ours; anything
/// else is refused (exit 2) and the file left as it is.
fn read_header(path: &Path, bytes: &[u8]) -> Result<Fingerprint> {
    let shown = path.display();
    let first = bytes
        .iter()
        .position(|b| *b == b'\n')
        .map(|i| &bytes[..i])
        .unwrap_or(bytes);
    let v: Option<Value> = serde_json::from_slice(first).ok();
    let header = v.as_ref().filter(|v| v.get("toolnexus").is_some());
    let Some(header) = header.filter(|_| first.len() < bytes.len()) else {
        let legacy = v.as_ref().is_some_and(|v| {
            v.get("line").is_some() && (v.get("decision").is_some() || v.get("error").is_some())
        }) && first.len() < bytes.len();
        return Err(exit::usage(if legacy {
            format!(
                "--out {shown}: is a batch out file without a header (written by an earlier version), so the inputs it answers cannot be checked; left untouched: choose another --out"
            )
        } else {
            format!(
                "--out {shown}: is not a toolnexus batch out file (line 1 is not a batch result line or header); left untouched: choose another --out"
            )
        }));
    };
    if header.get("toolnexus").and_then(Value::as_str) != Some("batch") {
        return Err(exit::usage(format!(
            "--out {shown}: is another toolnexus file, not a batch out file; left untouched: choose another --out"
        )));
    }
    let version = header.get("version").and_then(Value::as_u64);
    if version != Some(VERSION) {
        return Err(exit::usage(format!(
            "--out {shown}: is a batch out file of format version {}, this version reads {VERSION}; left untouched: choose another --out",
            version.map_or_else(|| "(none)".to_string(), |v| v.to_string())
        )));
    }
    header
        .get("fingerprint")
        .and_then(Fingerprint::from_value)
        .ok_or_else(|| {
            exit::usage(format!(
                "--out {shown}: line 1 is a batch header without a complete fingerprint; left untouched: choose another --out"
            ))
        })
}

/// The result lines of our own out file.
struct Results<'a> {
    /// Bytes of the header line, newline included.
    header_end: usize,
    /// Bytes up to the end of the last complete line.
    end: usize,
    /// Each result line's input line, whether it is an error, and its raw
    /// bytes (no newline).
    lines: Vec<(usize, bool, &'a [u8])>,
    done: BTreeSet<usize>,
    /// Input lines answered with an error and by no decision line.
    errors: BTreeSet<usize>,
}

/// Reads every complete result line after the header; a line that is not one
/// is bad input (exit 2), and the file is left as it is.
fn read_results<'a>(path: &Path, bytes: &'a [u8], last_line: usize) -> Result<Results<'a>> {
    let shown = path.display();
    let header_end = bytes.iter().position(|b| *b == b'\n').map_or(0, |i| i + 1);
    let end = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let mut results = Results {
        header_end,
        end,
        lines: Vec::new(),
        done: BTreeSet::new(),
        errors: BTreeSet::new(),
    };
    if end <= header_end {
        return Ok(results);
    }
    for (i, raw) in bytes[header_end..end - 1]
        .split(|b| *b == b'\n')
        .enumerate()
    {
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let k = i + 2;
        let bad = |why: &str| {
            exit::usage(format!(
                "--out {shown}: line {k} is not a batch result line ({why}); left untouched"
            ))
        };
        let v: Value =
            serde_json::from_slice(raw).map_err(|e| bad(&crate::input::json_error(&e)))?;
        let n = v
            .get("line")
            .and_then(Value::as_u64)
            .filter(|n| *n >= 1)
            .ok_or_else(|| bad("no \"line\" number"))? as usize;
        let is_error = match (v.get("decision"), v.get("error")) {
            (Some(_), _) => false,
            (None, Some(_)) => true,
            (None, None) => return Err(bad("neither \"decision\" nor \"error\"")),
        };
        if n > last_line {
            return Err(exit::usage(format!(
                "--out {shown}: line {k} answers input line {n}, but --states has {last_line} lines; left untouched"
            )));
        }
        results.done.insert(n);
        results.lines.push((n, is_error, raw));
    }
    // A line answered by a decision somewhere in the file is no error to redo.
    let decided: BTreeSet<usize> = results
        .lines
        .iter()
        .filter(|(_, is_error, _)| !is_error)
        .map(|(n, _, _)| *n)
        .collect();
    results.errors = results
        .lines
        .iter()
        .filter(|(n, is_error, _)| *is_error && !decided.contains(n))
        .map(|(n, _, _)| *n)
        .collect();
    Ok(results)
}

/// Replaces the out file by `body` atomically: a temporary file beside it,
/// locked, written and synced, then renamed over it. Returns the new file,
/// open for appending. `old` is the locked file being replaced (its
/// permissions are kept).
fn rewrite(path: &Path, old: &File, body: &[u8]) -> Result<File> {
    let shown = path.display();
    // Beside the file itself: a symbolic link named by --out stays one.
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let path = real.as_path();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".to_string());
    let temp = dir.join(format!(".{name}.rerun-errors.{}.tmp", std::process::id()));
    let fail = |what: &str, e: std::io::Error| {
        let _ = std::fs::remove_file(&temp);
        exit::io(format!(
            "--out {shown}: cannot rewrite it without its error lines ({what} {}): {}; the file is unchanged",
            temp.display(),
            cause(&e)
        ))
    };
    // No other batch can be rewriting this out file (we hold its lock): a
    // leftover of a killed run with our process id is stale.
    let _ = std::fs::remove_file(&temp);
    let mut file = OpenOptions::new()
        .read(true)
        .append(true)
        .create_new(true)
        .open(&temp)
        .map_err(|e| fail("creating", e))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::Error(e)) if e.kind() == ErrorKind::Unsupported => {}
        Err(TryLockError::WouldBlock) => {
            return Err(fail("locking", ErrorKind::WouldBlock.into()));
        }
        Err(TryLockError::Error(e)) => return Err(fail("locking", e)),
    }
    if let Ok(meta) = old.metadata() {
        let _ = file.set_permissions(meta.permissions());
    }
    file.write_all(body).map_err(|e| fail("writing", e))?;
    file.sync_all().map_err(|e| fail("syncing", e))?;
    std::fs::rename(&temp, path).map_err(|e| fail("renaming", e))?;
    // The rename is durable once the directory is; a failure here loses nothing.
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, body: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("toolnexus-cli-batch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        p
    }

    fn fp(states: &[u8]) -> Fingerprint {
        let q = toolnexus::classifier::questions_from_wire(&serde_json::json!(
            {"spam": {"type": "noul", "instructions": "Spam?"}}
        ))
        .unwrap();
        Fingerprint::new(
            states,
            &q,
            "tape",
            "rule-1",
            &toolnexus::classifier::Fingerprint::new("tape"),
        )
    }

    const PLAN: Plan = Plan {
        restart: false,
        rerun_errors: false,
        last_line: 3,
    };

    #[test]
    fn the_header_names_the_format_and_round_trips() {
        let f = fp(b"{}\n");
        let h = f.header();
        assert!(
            h.starts_with(r#"{"toolnexus":"batch","version":1,"fingerprint":{"states":"sha256:"#),
            "{h}"
        );
        assert!(
            h.ends_with("\"style\":\"tape\",\"model\":\"rule-1\",\"stack\":\"plain\"}}\n"),
            "{h}"
        );
        let back = read_header(Path::new("x"), h.as_bytes()).unwrap();
        assert_eq!(back, f);
        let other = Fingerprint {
            style: "systemone".into(),
            ..fp(b"{}\n{}\n")
        };
        let said = f.changes(&other).join("; ");
        assert!(
            said.contains("the --states file changed (sha256:"),
            "{said}"
        );
        assert!(
            said.contains("the style changed (tape then, systemone now)"),
            "{said}"
        );
        assert!(!said.contains("questions"), "{said}");
    }

    #[test]
    fn a_torn_final_line_of_our_own_file_is_truncated_and_redone() {
        let f = fp(b"a\nb\nc\n");
        let mut body = f.header().into_bytes();
        body.extend_from_slice(
            b"{\"line\":2,\"decision\":{}}\n{\"line\":1,\"error\":\"x\"}\n{\"line\":3,\"deci",
        );
        let p = temp("torn.jsonl", &body);
        let r = open(&p, &f, PLAN).unwrap();
        assert_eq!(r.done, BTreeSet::from([1, 2]));
        assert_eq!((r.truncated, r.errors), (15, 1));
        drop(r);
        assert!(std::fs::read(&p).unwrap().ends_with(b"\"x\"}\n"));
    }

    #[test]
    fn a_file_that_is_not_ours_is_refused_untouched() {
        let f = fp(b"a\n");
        // Another run's header without its newline: not provably ours.
        let other = fp(b"b\n").header();
        for (name, body) in [
            ("hello.txt", &b"hello"[..]),
            ("other-header.txt", other.trim_end().as_bytes()),
            ("blank.txt", b"\n"),
            ("old.jsonl", b"{\"line\":1,\"error\":\"x\"}\n{\"li"),
        ] {
            let p = temp(name, body);
            let e = open(
                &p,
                &f,
                Plan {
                    restart: true,
                    ..PLAN
                },
            )
            .err()
            .unwrap_or_else(|| panic!("{name} accepted"));
            assert_eq!(exit::exit_of(&e), exit::Exit::Usage, "{name}");
            assert!(e.to_string().contains("left untouched"), "{name}: {e}");
            assert_eq!(std::fs::read(&p).unwrap(), body, "{name}");
        }
    }

    #[test]
    fn a_torn_header_of_this_run_starts_over_and_nothing_shorter_does() {
        let f = fp(b"a\n");
        let header = f.header();
        let p = temp("torn-header.jsonl", &header.as_bytes()[..40]);
        let r = open(&p, &f, PLAN).unwrap();
        drop(r);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), header);
        for short in [&b"{"[..], b"{\"toolnexus\""] {
            let p = temp("short.jsonl", short);
            assert!(open(&p, &f, PLAN).is_err());
            assert_eq!(std::fs::read(&p).unwrap(), short);
        }
    }

    #[test]
    fn rerun_errors_rewrites_the_file_without_its_error_lines() {
        let f = fp(b"a\nb\nc\n");
        let mut body = f.header().into_bytes();
        body.extend_from_slice(
            b"{\"line\":2,\"decision\":{}}\n{\"line\":1,\"error\":\"x\"}\n{\"line\":3,\"error\":\"y\"}\n{\"line\":2,\"error\":\"z\"}\n",
        );
        let real = temp("rerun.jsonl", &body);
        // Named through a symbolic link, which stays one.
        let p = real.with_file_name("rerun-link.jsonl");
        let _ = std::fs::remove_file(&p);
        std::os::unix::fs::symlink(&real, &p).unwrap();
        let plan = Plan {
            rerun_errors: true,
            ..PLAN
        };
        let mut r = open(&p, &f, plan).unwrap();
        assert_eq!(r.done, BTreeSet::from([2]));
        assert_eq!((r.rerun, r.errors), (2, 0));
        r.sink.write("{\"line\":1,\"decision\":{}}\n").unwrap();
        let mut want = f.header();
        want.push_str("{\"line\":2,\"decision\":{}}\n{\"line\":1,\"decision\":{}}\n");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), want);
        assert!(
            std::fs::symlink_metadata(&p)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // The lock is held on the new file too.
        let e = open(&p, &f, PLAN).err().unwrap();
        assert!(e.to_string().contains("another batch"), "{e}");
    }
}
