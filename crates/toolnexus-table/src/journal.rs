//! A table run's journal read back in row order, a line at a time.
//!
//! The journal is the run's JSONL out file: a header, then one result line
//! per row in the order rows finished. A run asks rows in file order and
//! writes them nearly in order; each later run (a resume, a rerun of the
//! errors) appends another such stretch. [`Journal`] finds where each
//! stretch of rising line numbers starts, then merges them (one open cursor
//! per stretch): memory grows with the number of runs, never the rows.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufRead as _, BufReader, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};

use serde_json::Value;
use toolnexus::classifier::Decision;

use crate::columns::Outcome;
use crate::error::TableError;

/// The result lines of a journal, by ascending line number: each line's
/// outcome once (a decision wins over an error for the same line).
pub struct Journal {
    path: PathBuf,
    cursors: Vec<Cursor>,
    /// The next line of each cursor, smallest first.
    heap: BinaryHeap<Reverse<(usize, usize)>>,
    /// Each cursor's next result line, read ahead.
    heads: Vec<Option<(usize, usize, Value)>>,
}

struct Cursor {
    file: BufReader<File>,
    /// Bytes of its stretch not read yet.
    left: u64,
    /// The journal line it reads next (from 1).
    at: usize,
}

/// The input line a result line answers, read from its start when it is
/// spelt as `batch` writes it (`{"line":N,`), else from its JSON.
fn line_number(raw: &[u8]) -> Option<usize> {
    if let Some(rest) = raw.strip_prefix(b"{\"line\":") {
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0 && rest.get(digits) == Some(&b',') {
            return std::str::from_utf8(&rest[..digits]).ok()?.parse().ok();
        }
    }
    let v: Value = serde_json::from_slice(raw).ok()?;
    v.get("line")?.as_u64().map(|n| n as usize)
}

impl Journal {
    /// Opens a journal: one pass finds the stretches of rising line numbers.
    ///
    /// ```
    /// use toolnexus_table::Journal;
    /// let path = std::env::temp_dir().join(format!("toolnexus-table-journal-{}.jsonl", std::process::id()));
    /// std::fs::write(&path, "{\"toolnexus\":\"batch\"}\n{\"line\":2,\"error\":\"x\"}\n{\"line\":1,\"error\":\"y\"}\n")?;
    /// let mut j = Journal::open(&path)?;
    /// assert_eq!(j.take(1)?, Some(Err("y".to_string())));
    /// assert_eq!(j.take(2)?, Some(Err("x".to_string())));
    /// assert_eq!(j.take(3)?, None);
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: &Path) -> Result<Journal, TableError> {
        let io = |what, source| TableError::Io {
            path: path.to_path_buf(),
            what,
            source,
        };
        let open = || File::open(path).map_err(|e| io("read", e));
        let mut file = BufReader::with_capacity(1 << 16, open()?);
        // (byte offset, journal line) where each stretch starts.
        let mut starts: Vec<(u64, usize)> = Vec::new();
        let (mut raw, mut offset, mut at, mut last) = (Vec::new(), 0u64, 0usize, None);
        loop {
            raw.clear();
            let got = file
                .read_until(b'\n', &mut raw)
                .map_err(|e| io("read", e))?;
            if got == 0 {
                break;
            }
            at += 1;
            let here = offset;
            offset += got as u64;
            let Some(n) = line_number(raw.trim_ascii()) else {
                continue;
            };
            if last.is_none_or(|l| n < l) {
                starts.push((here, at));
            }
            last = Some(n);
        }
        let mut cursors = Vec::with_capacity(starts.len());
        for (k, &(start, at)) in starts.iter().enumerate() {
            let end = starts.get(k + 1).map_or(offset, |s| s.0);
            let mut f = open()?;
            f.seek(SeekFrom::Start(start)).map_err(|e| io("read", e))?;
            cursors.push(Cursor {
                file: BufReader::with_capacity(1 << 13, f),
                left: end - start,
                at,
            });
        }
        let mut j = Journal {
            path: path.to_path_buf(),
            heads: (0..cursors.len()).map(|_| None).collect(),
            cursors,
            heap: BinaryHeap::new(),
        };
        for k in 0..j.cursors.len() {
            j.advance(k)?;
        }
        Ok(j)
    }

    /// Reads cursor `k`'s next result line into its head.
    fn advance(&mut self, k: usize) -> Result<(), TableError> {
        let c = &mut self.cursors[k];
        let mut raw = Vec::new();
        while c.left > 0 {
            raw.clear();
            let got = c
                .file
                .read_until(b'\n', &mut raw)
                .map_err(|source| TableError::Io {
                    path: self.path.clone(),
                    what: "read",
                    source,
                })?;
            if got == 0 {
                break;
            }
            c.left = c.left.saturating_sub(got as u64);
            let at = c.at;
            c.at += 1;
            let line = raw.trim_ascii();
            let Some(n) = line_number(line) else {
                continue;
            };
            let value: Value = serde_json::from_slice(line).map_err(|e| TableError::Journal {
                path: self.path.clone(),
                at,
                message: e.to_string(),
            })?;
            self.heads[k] = Some((n, at, value));
            self.heap.push(Reverse((n, k)));
            return Ok(());
        }
        self.heads[k] = None;
        Ok(())
    }

    /// The outcome recorded for input line `n`, or `None` when the journal
    /// has none; lines below `n` not taken yet are passed over. Lines must
    /// be taken in ascending order.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("toolnexus-table-take-{}.jsonl", std::process::id()));
    /// # std::fs::write(&path, "{\"line\":1,\"error\":\"x\"}\n{\"line\":1,\"decision\":{\"model\":\"m\",\"answers\":{}}}\n")?;
    /// let mut j = toolnexus_table::Journal::open(&path)?;
    /// assert_eq!(j.take(1)?.unwrap().unwrap().model, "m");
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn take(&mut self, n: usize) -> Result<Option<Outcome>, TableError> {
        let mut found: Option<(usize, Value)> = None;
        while let Some(&Reverse((m, k))) = self.heap.peek() {
            if m > n {
                break;
            }
            self.heap.pop();
            if let Some((_, at, value)) = self.heads[k].take()
                && m == n
            {
                let decided = |v: &Value| v.get("decision").is_some();
                if found.as_ref().is_none_or(|(_, f)| !decided(f)) {
                    found = Some((at, value));
                }
            }
            self.advance(k)?;
        }
        let Some((at, value)) = found else {
            return Ok(None);
        };
        let bad = |message: String| TableError::Journal {
            path: self.path.clone(),
            at,
            message,
        };
        match (value.get("decision"), value.get("error")) {
            (Some(d), _) => Decision::from_value(d)
                .map(|d| Some(Ok(d)))
                .map_err(|e| bad(format!("its decision does not decode: {e}"))),
            (None, Some(e)) => Ok(Some(Err(e.as_str().unwrap_or_default().to_string()))),
            (None, None) => Err(bad("neither \"decision\" nor \"error\"".into())),
        }
    }
}
