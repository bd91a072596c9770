//! Opening an out file for a run: the lock, the header check, resume, the
//! torn-line truncation and the rewrite without error lines (the module docs
//! of [`out`](super) say when each applies).

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{BufRead as _, BufReader, ErrorKind, Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Fingerprint, IoStep, OutError, OutLine, VERSION, parse_line};
use crate::classifier::ClassifierUsage;
use crate::cost::Cost;

/// How the run wants the out file treated.
///
/// ```
/// let plan = toolnexus::assess::out::Plan { restart: false, rerun_errors: true, last_line: 100 };
/// assert!(plan.rerun_errors);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Start our own out file over.
    pub restart: bool,
    /// Ask the states of its error lines again.
    pub rerun_errors: bool,
    /// The last physical line of the states file: no result line may name a later one.
    pub last_line: usize,
}

/// Something [`open`] did or found that the caller should say.
#[derive(Debug)]
#[non_exhaustive]
pub enum Note {
    /// The file held only a torn header line (a run stopped by a full disk
    /// while writing it); it was started over.
    TornHeader,
    /// The header was written before out files recorded `stack`: resumed
    /// without checking what answers beneath the style.
    NoStack,
    /// The file system cannot lock the file: nothing stops a second run.
    NoLock(std::io::Error),
}

/// Where result lines go.
#[derive(Debug)]
pub enum Sink {
    /// Standard output (`-`).
    Stdout,
    /// A path that is not a regular file: written only.
    Stream(File),
    /// A regular out file, locked.
    File {
        /// The file, open for appending.
        file: File,
        /// Keeps the lock on the file a rewrite replaced, so no run that
        /// opened it before the rename can take it over.
        _held: Option<File>,
    },
}

impl Sink {
    /// One result line, in one write.
    ///
    /// ```
    /// use toolnexus::assess::out::Sink;
    ///
    /// let path = std::env::temp_dir().join(format!("toolnexus-doc-sink-{}", std::process::id()));
    /// let mut sink = Sink::Stream(std::fs::File::create(&path)?);
    /// sink.write("{\"line\":1,\"error\":\"x\"}\n")?;
    /// sink.finish()?;
    /// assert_eq!(std::fs::read_to_string(&path)?, "{\"line\":1,\"error\":\"x\"}\n");
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
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
    ///
    /// ```
    /// toolnexus::assess::out::Sink::Stdout.finish()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn finish(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Stdout => std::io::stdout().flush(),
            Sink::Stream(_) => Ok(()),
            Sink::File { file, .. } => file.sync_data(),
        }
    }
}

/// The out file, opened for this run.
#[derive(Debug)]
pub struct Opened {
    /// Where result lines go.
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
    /// Error lines removed for a rerun: their states are asked again.
    pub rerun: usize,
    /// Whether a restart discarded earlier results.
    pub restarted: bool,
    /// What each decision line already in the file cost and the usage it
    /// reported: what earlier runs of this job spent, which a run's caps
    /// count ([`OutLine::spent`]).
    pub spent: Vec<(Cost, ClassifierUsage)>,
    /// What the caller should say, in the order it happened.
    pub notes: Vec<Note>,
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
            notes: Vec::new(),
        }
    }
}

/// An I/O failure of `step` on `path`.
fn io(path: &Path, step: IoStep) -> impl FnOnce(std::io::Error) -> OutError + '_ {
    move |source| OutError::Io {
        path: path.to_path_buf(),
        step,
        source,
    }
}

/// Whether two paths name the same file.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Opens an out file for a run with this fingerprint (see the
/// [module docs](super)): `-` is standard output.
///
/// ```
/// use toolnexus::assess::out::{Fingerprint, Plan, open};
///
/// let path = std::env::temp_dir().join(format!("toolnexus-doc-open-{}.jsonl", std::process::id()));
/// # let _ = std::fs::remove_file(&path);
/// let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("spam", "Spam?")])?;
/// let f = Fingerprint::new(b"{}\n{}\n", &qs, "tape", "m", &toolnexus::classifier::Fingerprint::new("tape"));
/// let plan = Plan { restart: false, rerun_errors: false, last_line: 3 };
/// let mut opened = open(&path, &f, plan)?;
/// opened.sink.write("{\"line\":1,\"decision\":{}}\n")?;
/// drop(opened);
/// // A second run with the same fingerprint resumes: line 1 is done.
/// let again = open(&path, &f, plan)?;
/// assert_eq!(again.done.into_iter().collect::<Vec<_>>(), [1]);
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn open(path: &Path, fingerprint: &Fingerprint, plan: Plan) -> Result<Opened, OutError> {
    let is_dash = path.as_os_str() == "-";
    let meta = std::fs::metadata(path);
    let is_stream = is_dash || meta.as_ref().is_ok_and(|m| !m.is_file() && !m.is_dir());
    if is_stream && (plan.restart || plan.rerun_errors) {
        return Err(OutError::Stream {
            path: path.to_path_buf(),
        });
    }
    if is_dash {
        return Ok(Opened::stream(Sink::Stdout, true));
    }
    if meta.as_ref().is_ok_and(std::fs::Metadata::is_dir) {
        return Err(OutError::Directory {
            path: path.to_path_buf(),
        });
    }
    if is_stream {
        let file = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(io(path, IoStep::Open))?;
        let is_stdout = same_file(path, Path::new("/dev/stdout"));
        return Ok(Opened::stream(Sink::Stream(file), is_stdout));
    }
    let mut notes = Vec::new();
    let mut file = open_locked(path, &mut notes)?;
    let is_stdout = same_file(path, Path::new("/dev/stdout"));
    // The header line only (the whole file when it has no newline): the
    // result lines are read a line at a time, never held whole.
    let bytes = head(&file).map_err(io(path, IoStep::Read))?;
    let write_header = |file: &mut File| {
        file.write_all(fingerprint.header().as_bytes())
            .map_err(io(path, IoStep::Write))
    };
    let fresh = |file: File, restarted: bool, notes: Vec<Note>| Opened {
        sink: Sink::File { file, _held: None },
        is_stdout,
        is_stream: false,
        done: BTreeSet::new(),
        errors: 0,
        truncated: 0,
        rerun: 0,
        restarted,
        spent: Vec::new(),
        notes,
    };
    if bytes.is_empty() {
        write_header(&mut file)?;
        return Ok(fresh(file, false, notes));
    }
    if is_torn_header(&bytes, fingerprint) {
        // A run that could not finish writing its header (a full disk): ours,
        // and holding nothing yet.
        file.set_len(0).map_err(io(path, IoStep::StartOver))?;
        write_header(&mut file)?;
        notes.push(Note::TornHeader);
        return Ok(fresh(file, false, notes));
    }

    let earlier = read_header(path, &bytes)?;
    if plan.restart {
        file.set_len(0).map_err(io(path, IoStep::StartOver))?;
        write_header(&mut file)?;
        return Ok(fresh(file, true, notes));
    }
    let changes = earlier.changes(fingerprint);
    if !changes.is_empty() {
        return Err(OutError::Changed {
            path: path.to_path_buf(),
            changes,
        });
    }
    if earlier.stack.is_none() {
        notes.push(Note::NoStack);
    }

    let results = read_results(path, &file, plan.last_line, true)?;
    let torn = results.len - results.end;
    let mut done = results.done;
    let spent = results.spent;
    if plan.rerun_errors && !results.errors.is_empty() {
        let end = results.end;
        let replaced = rewrite(path, &file, |out| copy_decided(&file, &bytes, end, out))?;
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
            spent,
            notes,
        });
    }
    if torn > 0 {
        file.set_len(results.end)
            .map_err(io(path, IoStep::Truncate))?;
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
        spent,
        notes,
    })
}

/// The input lines a run with this fingerprint and plan would not ask again:
/// what [`open`] would find done in the out file, read without locking,
/// creating or changing it (an estimate before a run). A stream, a missing
/// or empty file, or a restart has none; a file that answers other inputs is
/// refused as a run would refuse it.
///
/// ```
/// use toolnexus::assess::out::{Fingerprint, Plan, already_done};
///
/// let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("spam", "Spam?")])?;
/// let f = Fingerprint::new(b"{}\n", &qs, "tape", "m", &toolnexus::classifier::Fingerprint::new("tape"));
/// let plan = Plan { restart: false, rerun_errors: false, last_line: 2 };
/// let missing = std::env::temp_dir().join("toolnexus-doc-no-such-out.jsonl");
/// assert!(already_done(&missing, &f, plan)?.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn already_done(
    path: &Path,
    fingerprint: &Fingerprint,
    plan: Plan,
) -> Result<BTreeSet<usize>, OutError> {
    let regular = std::fs::metadata(path).is_ok_and(|m| m.is_file());
    if path.as_os_str() == "-" || !regular || plan.restart {
        return Ok(BTreeSet::new());
    }
    let file = File::open(path).map_err(io(path, IoStep::Read))?;
    let bytes = head(&file).map_err(io(path, IoStep::Read))?;
    if bytes.is_empty() || is_torn_header(&bytes, fingerprint) {
        return Ok(BTreeSet::new());
    }
    let changes = read_header(path, &bytes)?.changes(fingerprint);
    if !changes.is_empty() {
        return Err(OutError::Changed {
            path: path.to_path_buf(),
            changes,
        });
    }
    let results = read_results(path, &file, plan.last_line, false)?;
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
/// (another run's rewrite renamed over it), the new file is opened instead.
fn open_locked(path: &Path, notes: &mut Vec<Note>) -> Result<File, OutError> {
    use std::os::unix::fs::MetadataExt as _;
    for _ in 0..8 {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(io(path, IoStep::Open))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(OutError::Busy {
                    path: path.to_path_buf(),
                });
            }
            Err(TryLockError::Error(e)) if e.kind() == ErrorKind::Unsupported => {
                notes.push(Note::NoLock(e));
                return Ok(file);
            }
            Err(TryLockError::Error(e)) => return Err(io(path, IoStep::Lock)(e)),
        }
        let held = file.metadata().map_err(io(path, IoStep::Read))?;
        match std::fs::metadata(path) {
            Ok(now) if now.dev() == held.dev() && now.ino() == held.ino() => return Ok(file),
            _ => continue,
        }
    }
    Err(OutError::Replaced {
        path: path.to_path_buf(),
    })
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
/// else is refused and the file left as it is.
pub(super) fn read_header(path: &Path, bytes: &[u8]) -> Result<Fingerprint, OutError> {
    let path_buf = || path.to_path_buf();
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
        return Err(if legacy {
            OutError::Legacy { path: path_buf() }
        } else {
            OutError::Foreign { path: path_buf() }
        });
    };
    if header.get("toolnexus").and_then(Value::as_str) != Some("batch") {
        return Err(OutError::OtherFile { path: path_buf() });
    }
    let version = header.get("version").and_then(Value::as_u64);
    if version != Some(VERSION) {
        return Err(OutError::Version {
            path: path_buf(),
            version,
        });
    }
    header
        .get("fingerprint")
        .and_then(Fingerprint::from_value)
        .ok_or_else(|| OutError::Incomplete { path: path_buf() })
}

/// The file's first line, its newline included (the whole file when it has
/// none), read from the start.
fn head(file: &File) -> std::io::Result<Vec<u8>> {
    let mut f = file;
    f.seek(SeekFrom::Start(0))?;
    let mut line = Vec::new();
    BufReader::new(f).read_until(b'\n', &mut line)?;
    Ok(line)
}

/// What our own out file's result lines say, read a line at a time.
pub(super) struct Results {
    /// Bytes up to the end of the last complete line.
    pub(super) end: u64,
    /// Bytes in the file.
    len: u64,
    pub(super) done: BTreeSet<usize>,
    /// Input lines answered with an error and by no decision line.
    pub(super) errors: BTreeSet<usize>,
    /// What each decision line cost and the usage it reported (when asked).
    spent: Vec<(Cost, ClassifierUsage)>,
}

/// Reads every complete result line after the header, one at a time; a line
/// that is not one is refused, and the file is left as it is. A final line
/// without its newline is a torn one: not read, left past `end`.
pub(super) fn read_results(
    path: &Path,
    file: &File,
    last_line: usize,
    with_spent: bool,
) -> Result<Results, OutError> {
    let mut f = file;
    f.seek(SeekFrom::Start(0)).map_err(io(path, IoStep::Read))?;
    let mut reader = BufReader::with_capacity(1 << 16, f);
    let mut raw = Vec::new();
    let read = |reader: &mut BufReader<&File>, raw: &mut Vec<u8>| {
        raw.clear();
        reader
            .read_until(b'\n', raw)
            .map_err(io(path, IoStep::Read))
    };
    let header = read(&mut reader, &mut raw)? as u64;
    let mut results = Results {
        end: if raw.last() == Some(&b'\n') {
            header
        } else {
            0
        },
        len: header,
        done: BTreeSet::new(),
        errors: BTreeSet::new(),
        spent: Vec::new(),
    };
    let mut decided = BTreeSet::new();
    let mut at = 1;
    loop {
        let got = read(&mut reader, &mut raw)? as u64;
        if got == 0 {
            break;
        }
        results.len += got;
        if raw.last() != Some(&b'\n') {
            break; // a torn final line
        }
        results.end = results.len;
        at += 1;
        let line = &raw[..raw.len() - 1];
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let (value, n) = parse_line(line).map_err(|fault| OutError::BadLine {
            path: path.to_path_buf(),
            at,
            fault,
        })?;
        if n > last_line {
            return Err(OutError::BeyondStates {
                path: path.to_path_buf(),
                at,
                line: n,
                last_line,
            });
        }
        results.done.insert(n);
        let out = OutLine { at, line: n, value };
        if out.is_error() {
            results.errors.insert(n);
        } else {
            decided.insert(n);
            if with_spent {
                results.spent.push((out.spent(), out.usage()));
            }
        }
    }
    // A line answered by a decision somewhere in the file is no error to redo.
    results.errors.retain(|n| !decided.contains(n));
    Ok(results)
}

/// Writes the header and every complete result line up to `end` that is not
/// an error line to `out`, a line at a time: the body of a rewrite without
/// error lines.
fn copy_decided(file: &File, header: &[u8], end: u64, out: &mut File) -> std::io::Result<()> {
    let mut f = file;
    f.seek(SeekFrom::Start(header.len() as u64))?;
    let mut reader = BufReader::with_capacity(1 << 16, f.take(end - header.len() as u64));
    let mut writer = std::io::BufWriter::with_capacity(1 << 16, out);
    writer.write_all(header)?;
    let mut raw = Vec::new();
    loop {
        raw.clear();
        if reader.read_until(b'\n', &mut raw)? == 0 {
            break;
        }
        let line = raw.strip_suffix(b"\n").unwrap_or(&raw);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if parse_line(line).is_ok_and(|(v, _)| v.get("decision").is_some()) {
            writer.write_all(line)?;
            writer.write_all(b"\n")?;
        }
    }
    writer.flush()
}

/// Replaces the out file by what `body` writes, atomically: a temporary
/// file beside it, locked, written and synced, then renamed over it. Returns the new file,
/// open for appending. `old` is the locked file being replaced (its
/// permissions are kept). It is its own atomic write, not the library's
/// `judge::write_atomic`: the new file must be locked before the rename makes
/// it visible, and the run keeps appending to that same handle.
fn rewrite(
    path: &Path,
    old: &File,
    body: impl FnOnce(&mut File) -> std::io::Result<()>,
) -> Result<File, OutError> {
    let shown = path.to_path_buf();
    // Beside the file itself: a symbolic link named as the out file stays one.
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
    let fail = |step: &'static str, source: std::io::Error| {
        let _ = std::fs::remove_file(&temp);
        OutError::Rewrite {
            path: shown.clone(),
            step,
            temp: temp.clone(),
            source,
        }
    };
    // No other run can be rewriting this out file (we hold its lock): a
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
    body(&mut file).map_err(|e| fail("writing", e))?;
    file.sync_all().map_err(|e| fail("syncing", e))?;
    std::fs::rename(&temp, path).map_err(|e| fail("renaming", e))?;
    // The rename is durable once the directory is; a failure here loses nothing.
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(file)
}
