//! [`Journal`]: the recordings of a run not yet saved in its tape, one line
//! each, flushed to disk as every call ends, so a run that is killed loses no
//! answer it paid for: the next run folds them into the tape.
//!
//! The journal of the tape `FILE` is `FILE.journal`. Its first line names the
//! format and the tape; every other line is a one-entry tape in compact JSON,
//! read back with the tape's strict loader. The file is locked for the whole
//! run, so two recorders never write one tape.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::format::TapeEntry;
use super::store::Tape;

/// The first line of a journal names this format.
pub const JOURNAL_FORMAT: &str = "toolnexus.tape-journal";

/// Why a journal could not be opened, read, written or removed. Each variant
/// carries what a message needs; [`Display`](std::fmt::Display) says it in one
/// line.
///
/// ```
/// use toolnexus::judge::{Journal, JournalError};
/// let e = Journal::open("/".as_ref()).unwrap_err();
/// assert!(matches!(e, JournalError::NotAFile { .. }));
/// assert_eq!(e.to_string(), "/: not a file path");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// The tape's path names no file, so it has no journal.
    #[error("{}: not a file path", tape.display())]
    NotAFile {
        /// The tape's path.
        tape: PathBuf,
    },
    /// Another run holds the journal's lock: it is recording into the tape.
    #[error("{}: another tape record is recording into it (its journal {} is locked)", tape.display(), journal.display())]
    Locked {
        /// The tape's path.
        tape: PathBuf,
        /// The journal's path.
        journal: PathBuf,
    },
    /// The journal kept being replaced between opening and locking it.
    #[error("its journal {} keeps being replaced by another run", journal.display())]
    Replaced {
        /// The journal's path.
        journal: PathBuf,
    },
    /// The operating system refused a step (`doing`: open, lock, read, write).
    #[error("cannot {doing} its journal {}: {source}", journal.display())]
    Io {
        /// The step: `open`, `lock`, `read` or `write`.
        doing: &'static str,
        /// The journal's path.
        journal: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A torn final line could not be cut off.
    #[error("{}: cannot cut a torn final line: {source}", journal.display())]
    Cut {
        /// The journal's path.
        journal: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file is not a journal of this format, so it is not folded.
    #[error("{} line {line}: not a journal of tape record ({why}); refusing to fold it into the tape (move it away if it is not needed)", journal.display())]
    Foreign {
        /// The journal's path.
        journal: PathBuf,
        /// The 1-based line at fault.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// The journal names another tape.
    #[error("{}: this journal belongs to the tape {owner:?}, not to {tape:?}; refusing to fold it (move it away, or record into {owner:?})", journal.display())]
    OtherTape {
        /// The journal's path.
        journal: PathBuf,
        /// The tape file name its header names.
        owner: String,
        /// The tape file name it was opened for.
        tape: String,
    },
    /// The journal could not be removed after the tape was saved.
    #[error("cannot remove the journal {} after saving the tape: {source}", journal.display())]
    Remove {
        /// The journal's path.
        journal: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
}

impl JournalError {
    /// Whether the operating system refused (reading, writing, locking,
    /// removing), rather than the file being someone else's or in use.
    ///
    /// ```
    /// use toolnexus::judge::Journal;
    /// assert!(!Journal::open("/".as_ref()).unwrap_err().is_io());
    /// ```
    pub fn is_io(&self) -> bool {
        matches!(
            self,
            JournalError::Io { .. }
                | JournalError::Cut { .. }
                | JournalError::Remove { .. }
                | JournalError::Replaced { .. }
        )
    }
}

/// What [`Journal::fold`] found an earlier run left.
#[derive(Debug, Default)]
pub struct Folded {
    /// The recordings, in the order they were journalled.
    pub entries: Vec<TapeEntry>,
    /// Bytes of a torn final line that were cut off.
    pub torn: usize,
}

/// The open, locked journal of one tape. See the module's docs.
///
/// ```
/// use std::sync::Arc;
/// use toolnexus::classifier::*;
/// use toolnexus::judge::{Journal, Tape, noul, questions};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = std::env::temp_dir().join(format!("toolnexus-journal-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let tape_path = dir.join("rec.tape.json");
/// let qs = questions(&[noul("ok", "Is it fine?")])?;
/// let live = create_classifier(ClassifierOptions {
///     style: ClassifierStyle::Custom,
///     evaluate: Some(Arc::new(|_ctx, _state, _qs| Box::pin(async { Err("model unavailable".to_string()) }))),
///     ..Default::default()
/// })?;
/// {
///     let mut journal = Journal::open(&tape_path)?;
///     assert!(journal.fold()?.entries.is_empty());
///     // One call, one recorder: its tape holds exactly that call's entry.
///     let one = Tape::new();
///     let _ = one.recorder(live).evaluate_ctx(EvalContext::new(), serde_json::json!("hi"), &qs).await;
///     journal.append(&one)?;
///     // The run is killed here: the journal keeps the recording.
/// }
/// let mut journal = Journal::open(&tape_path)?;
/// assert_eq!(journal.fold()?.entries.len(), 1);
/// journal.remove()?;
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
    /// The tape's file name, as the header names it.
    tape_name: String,
}

impl Journal {
    /// Opens (creating) and locks the journal of the tape at `tape`. Refused
    /// when another run holds it ([`JournalError::Locked`]).
    pub fn open(tape: &Path) -> Result<Journal, JournalError> {
        let tape_name = tape
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| JournalError::NotAFile {
                tape: tape.to_path_buf(),
            })?;
        let mut name = tape.as_os_str().to_owned();
        name.push(".journal");
        let path = PathBuf::from(name);
        let io = |doing, source| JournalError::Io {
            doing,
            journal: path.clone(),
            source,
        };
        // The journal can be removed between our open and our lock by a run
        // that just finished: lock the file the path names, not an unlinked one.
        for _ in 0..8 {
            let file = OpenOptions::new()
                .read(true)
                .append(true)
                .create(true)
                .open(&path)
                .map_err(|e| io("open", e))?;
            match file.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(JournalError::Locked {
                        tape: tape.to_path_buf(),
                        journal: path,
                    });
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(io("lock", e)),
            }
            if same_file(&file, &path) {
                return Ok(Journal {
                    path,
                    file,
                    tape_name,
                });
            }
        }
        Err(JournalError::Replaced { journal: path })
    }

    /// The journal's path (`FILE.journal`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn header(&self) -> String {
        format!(
            "{}\n",
            json!({"format": JOURNAL_FORMAT, "version": 1, "tape": self.tape_name})
        )
    }

    /// Reads the recordings an earlier run left and writes the header into a
    /// new journal. A torn final line is cut off (and counted); a file that is
    /// not this tape's journal is refused, naming it.
    pub fn fold(&mut self) -> Result<Folded, JournalError> {
        let mut bytes = Vec::new();
        self.file
            .read_to_end(&mut bytes)
            .map_err(|e| self.io("read", e))?;
        let header = self.header();
        let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let foreign = |line: usize, why: &str| JournalError::Foreign {
            journal: self.path.clone(),
            line,
            why: why.to_string(),
        };
        let mut folded = Folded {
            entries: Vec::new(),
            torn: bytes.len() - complete,
        };
        if complete == 0 && !header.as_bytes().starts_with(&bytes) {
            // Not even a torn header: someone else's file.
            return Err(foreign(1, "it does not start with a journal header"));
        }
        let mut lines = bytes[..complete].split(|b| *b == b'\n');
        if complete > 0 {
            let first = lines.next().unwrap_or_default();
            let v: Value = serde_json::from_slice(first)
                .map_err(|e| foreign(1, &crate::classifier::json_error(&e)))?;
            if v.get("format").and_then(Value::as_str) != Some(JOURNAL_FORMAT) {
                return Err(foreign(1, "no journal header"));
            }
            if v.get("version").and_then(Value::as_u64) != Some(1) {
                return Err(foreign(1, "a journal version this build does not read"));
            }
            let owner = v.get("tape").and_then(Value::as_str).unwrap_or_default();
            if owner != self.tape_name {
                return Err(JournalError::OtherTape {
                    journal: self.path.clone(),
                    owner: owner.to_string(),
                    tape: self.tape_name.clone(),
                });
            }
        }
        for (i, raw) in lines.enumerate() {
            if raw.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let text = std::str::from_utf8(raw).map_err(|_| foreign(i + 2, "not UTF-8"))?;
            let one = Tape::from_json(text).map_err(|e| foreign(i + 2, &e.to_string()))?;
            folded.entries.extend(one.entries());
        }
        if folded.torn > 0 {
            self.file
                .set_len(complete as u64)
                .map_err(|source| JournalError::Cut {
                    journal: self.path.clone(),
                    source,
                })?;
        }
        if complete == 0 {
            let header = header.clone();
            self.write_line(&header).map_err(|e| self.io("write", e))?;
            sync_dir(&self.path);
        }
        Ok(folded)
    }

    /// Appends the entries of `one` (a call's own recorder's tape) as one
    /// line: one write, then flushed to disk.
    pub fn append(&mut self, one: &Tape) -> std::io::Result<()> {
        let v: Value = serde_json::from_str(&one.to_json()).map_err(std::io::Error::other)?;
        self.write_line(&format!("{v}\n"))
    }

    fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        self.file.write_all(line.as_bytes())?;
        self.file.sync_data()
    }

    fn io(&self, doing: &'static str, source: std::io::Error) -> JournalError {
        JournalError::Io {
            doing,
            journal: self.path.clone(),
            source,
        }
    }

    /// Removes a journal this run created and never wrote to (a run that
    /// stopped before [`fold`](Journal::fold)).
    pub fn discard_if_new(self) {
        if self.file.metadata().is_ok_and(|m| m.len() == 0) {
            let _ = std::fs::remove_file(&self.path);
        }
    }

    /// Removes the journal once the tape holding its entries is saved.
    pub fn remove(self) -> Result<(), JournalError> {
        std::fs::remove_file(&self.path).map_err(|source| JournalError::Remove {
            journal: self.path.clone(),
            source,
        })
    }
}

/// Whether `path` still names the open `file`.
fn same_file(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        match (file.metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        true
    }
}

/// Makes a new directory entry durable (best effort).
fn sync_dir(path: &Path) {
    #[cfg(unix)]
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}
