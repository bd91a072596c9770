//! Values sorted without holding them all: a merge sort that keeps a bounded
//! chunk in memory and writes each sorted chunk to a temporary file, so that
//! a summary's exact order statistics (AUROC, adaptive ECE, the risk-coverage
//! curve, latency quantiles) of a million rows hold a few hundred kilobytes.
//!
//! A record is an ordering key and a tag (the tag breaks ties, so equal
//! keys come out in the order of their tags). [`key`] maps an `f64` to a key
//! that orders as [`f64::total_cmp`] does; `!key(x)` orders descending.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufWriter, Read as _, Seek as _, SeekFrom, Write as _};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// Records a bounded sort keeps in memory before it writes them out sorted
/// (few in tests, so that small runs spill and merge).
pub(crate) const CHUNK: usize = if cfg!(test) { 1 << 8 } else { 1 << 14 };

/// Records read at a time from each sorted chunk while merging.
const READ_AHEAD: usize = 256;

/// A record's bytes in the temporary file.
const RECORD: usize = 16;

/// The ordering key of `x`: keys compare as [`f64::total_cmp`] compares.
pub(crate) fn key(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 { !b } else { b | 1 << 63 }
}

/// The value of a key made by [`key`].
pub(crate) fn value(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// A temporary file under [`std::env::temp_dir`], open for reading and
/// writing, removed when dropped (on success and on every error path): where
/// the summary's sorts and `distill`'s training rows spill.
///
/// ```
/// use std::io::Write as _;
/// let mut t = toolnexus::assess::TempFile::create("toolnexus-doc")?;
/// t.file.write_all(b"rows")?;
/// let path = t.path().to_path_buf();
/// assert!(path.is_file());
/// drop(t);
/// assert!(!path.exists());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct TempFile {
    /// The open file.
    pub file: File,
    path: PathBuf,
}

impl TempFile {
    /// A new, empty file named `PREFIX-PID-N-NANOS`, never one that exists.
    pub fn create(prefix: &str) -> io::Result<TempFile> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!(
            "{prefix}-{}-{}-{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        Ok(TempFile { file, path })
    }

    /// Where the file is.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        // Best effort: the file holds only spilled intermediate records, and
        // a failure to remove it must not turn a finished result into an error.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Records to be read back sorted. Bounded: at most [`CHUNK`] records in
/// memory, the rest in sorted runs in a temporary file; unbounded: all in
/// memory, with no I/O at all.
pub(crate) struct Spill {
    buf: Vec<(u64, u64)>,
    bounded: bool,
    file: Option<(TempFile, BufWriter<File>)>,
    /// Each run's first record and length, in the file.
    runs: Vec<(u64, u64)>,
    written: u64,
    len: usize,
}

impl Spill {
    /// An empty sort: `bounded` writes what does not fit a chunk to a
    /// temporary file.
    pub(crate) fn new(bounded: bool) -> Spill {
        Spill {
            buf: Vec::new(),
            bounded,
            file: None,
            runs: Vec::new(),
            written: 0,
            len: 0,
        }
    }

    /// Records pushed.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Adds a record. Errors only when a bounded sort cannot write its file.
    pub(crate) fn push(&mut self, key: u64, tag: u64) -> io::Result<()> {
        self.buf.push((key, tag));
        self.len += 1;
        if self.bounded && self.buf.len() >= CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the chunk in memory out as one sorted run.
    fn flush(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.buf.sort_unstable();
        if self.file.is_none() {
            let t = TempFile::create("toolnexus-sort")?;
            let w = BufWriter::with_capacity(1 << 16, t.file.try_clone()?);
            self.file = Some((t, w));
        }
        let Some((_, w)) = self.file.as_mut() else {
            return Ok(());
        };
        for (k, t) in &self.buf {
            w.write_all(&k.to_le_bytes())?;
            w.write_all(&t.to_le_bytes())?;
        }
        let n = self.buf.len() as u64;
        self.runs.push((self.written, n));
        self.written += n;
        self.buf.clear();
        Ok(())
    }

    /// The records in ascending (key, tag) order.
    pub(crate) fn sorted(mut self) -> io::Result<Sorted> {
        if self.file.is_none() {
            self.buf.sort_unstable();
            return Ok(Sorted {
                memory: std::mem::take(&mut self.buf).into_iter(),
                merge: None,
                error: None,
            });
        }
        self.flush()?;
        let Some((temp, mut w)) = self.file.take() else {
            return Ok(Sorted::empty());
        };
        w.flush()?;
        drop(w);
        let mut merge = Merge {
            temp,
            runs: self
                .runs
                .iter()
                .map(|&(start, len)| RunCursor {
                    next: start,
                    end: start + len,
                    buf: Vec::new(),
                    at: 0,
                })
                .collect(),
            heap: BinaryHeap::new(),
        };
        for i in 0..merge.runs.len() {
            if let Some(r) = merge.read(i)? {
                merge.heap.push(Reverse((r, i)));
            }
        }
        Ok(Sorted {
            memory: Vec::new().into_iter(),
            merge: Some(merge),
            error: None,
        })
    }
}

/// Where one sorted run stands while merging.
struct RunCursor {
    /// The next record to read from the file, and the run's end.
    next: u64,
    end: u64,
    buf: Vec<(u64, u64)>,
    at: usize,
}

struct Merge {
    temp: TempFile,
    runs: Vec<RunCursor>,
    heap: BinaryHeap<Reverse<((u64, u64), usize)>>,
}

impl Merge {
    /// The next record of run `i`, reading ahead from the file when its
    /// buffer is spent.
    fn read(&mut self, i: usize) -> io::Result<Option<(u64, u64)>> {
        let run = &mut self.runs[i];
        if run.at == run.buf.len() {
            let n = (run.end - run.next).min(READ_AHEAD as u64) as usize;
            if n == 0 {
                return Ok(None);
            }
            let mut bytes = vec![0u8; n * RECORD];
            let mut f = &self.temp.file;
            f.seek(SeekFrom::Start(run.next * RECORD as u64))?;
            f.read_exact(&mut bytes)?;
            run.buf.clear();
            run.buf.extend(bytes.chunks_exact(RECORD).map(|r| {
                let (k, t) = r.split_at(8);
                (le(k), le(t))
            }));
            run.next += n as u64;
            run.at = 0;
        }
        let r = run.buf[run.at];
        run.at += 1;
        Ok(Some(r))
    }
}

fn le(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    u64::from_le_bytes(a)
}

impl Default for Spill {
    fn default() -> Spill {
        Spill::new(false)
    }
}

/// A [`Spill`]'s records in order. A read error of the temporary file ends
/// the records early and is kept: check [`Sorted::error`] after reading.
pub(crate) struct Sorted {
    memory: std::vec::IntoIter<(u64, u64)>,
    merge: Option<Merge>,
    error: Option<io::Error>,
}

impl Sorted {
    fn empty() -> Sorted {
        Sorted {
            memory: Vec::new().into_iter(),
            merge: None,
            error: None,
        }
    }

    /// The read error that ended the records early, if any.
    pub(crate) fn error(&mut self) -> io::Result<()> {
        self.error.take().map_or(Ok(()), Err)
    }
}

impl Iterator for Sorted {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        let Some(m) = self.merge.as_mut() else {
            return self.memory.next();
        };
        let Reverse((r, i)) = m.heap.pop()?;
        match m.read(i) {
            Ok(Some(next)) => m.heap.push(Reverse((next, i))),
            Ok(None) => {}
            Err(e) => {
                self.error = Some(e);
                m.heap.clear();
            }
        }
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_as_total_cmp() {
        let xs = [
            f64::NEG_INFINITY,
            -1.5,
            -0.0,
            0.0,
            1e-300,
            0.5,
            1.0,
            f64::INFINITY,
            f64::NAN,
        ];
        for a in xs {
            assert_eq!(value(key(a)).to_bits(), a.to_bits());
            for b in xs {
                assert_eq!(key(a).cmp(&key(b)), a.total_cmp(&b), "{a} {b}");
            }
        }
    }

    #[test]
    fn a_bounded_sort_spills_and_merges_in_order() {
        // Enough records for several runs, with repeated keys whose tags
        // must come out ascending.
        let n = CHUNK * 3 + 17;
        let (mut bounded, mut memory) = (Spill::new(true), Spill::new(false));
        let mut x = 12345u64;
        for i in 0..n as u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let k = key(((x >> 40) % 1000) as f64 / 7.0);
            bounded.push(k, i).unwrap();
            memory.push(k, i).unwrap();
        }
        assert!(bounded.runs.len() >= 3, "the bounded sort wrote runs");
        assert!(memory.file.is_none());
        let mut sorted = bounded.sorted().unwrap();
        let a: Vec<(u64, u64)> = sorted.by_ref().collect();
        sorted.error().unwrap();
        let b: Vec<(u64, u64)> = memory.sorted().unwrap().collect();
        assert_eq!(a.len(), n);
        assert_eq!(a, b);
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn the_temporary_file_is_removed_when_the_sort_is_dropped() {
        let mut s = Spill::new(true);
        for i in 0..CHUNK as u64 + 1 {
            s.push(i, 0).unwrap();
        }
        let path = s
            .file
            .as_ref()
            .map(|(t, _)| t.path().to_path_buf())
            .unwrap();
        assert!(path.exists());
        let mut sorted = s.sorted().unwrap();
        assert_eq!(sorted.next(), Some((0, 0)));
        drop(sorted);
        assert!(!path.exists());
    }
}
