//! [`TeacherRows`]: the rows a student is trained on, held flat and in
//! bounded memory. Each row is one fixed-size record (the embedding's `f32`s,
//! every head's target distribution as `f64`s, one byte per head saying
//! whether the teacher answered it); past [`MEMORY_ROWS`] rows the records go
//! to a temporary file, removed on drop. Training reads them back in the
//! split's shuffled order, written once in that order, so every pass is one
//! sequential read and every sum runs in the order it always has: a spilled
//! run trains the same student, bit for bit, as one held in memory.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::ops::Range;

use serde_json::Value;
use toolnexus::assess::TempFile;
use toolnexus::classifier::{Decision, DecisionAnswer, Questions};

use crate::embed::Embedder;
use crate::state_text::StateText;

use super::file::StudentError;
use super::train::{TeacherRow, check_teacher, labels_of, target_of, teacher_rows_as};

/// Rows [`TeacherRows`] holds in memory before it writes them to a
/// temporary file (about 6 MB of MiniLM rows).
pub const MEMORY_ROWS: usize = 4096;

/// Records read from the file at once.
const READ_ROWS: usize = 256;

/// One head's place in a record.
#[derive(Debug, Clone)]
pub(super) struct HeadLayout {
    /// The question's key.
    pub(super) key: String,
    /// Its class ids in head order; `None` for a question no head answers.
    pub(super) labels: Option<Vec<String>>,
    /// Where its targets start among a record's `f64`s.
    pub(super) at: usize,
}

/// The teacher's rows, flat: what [`distill_rows`](super::distill_rows)
/// trains on. Built a row at a time ([`TeacherRows::push`]), so a caller that
/// embeds its states a chunk at a time holds one chunk of states and a bounded
/// number of rows, whatever the number of rows.
///
/// ```
/// use serde_json::json;
/// use toolnexus::classifier::Decision;
/// use toolnexus::judge::{noul, questions};
/// use toolnexus_local::student::TeacherRows;
///
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// let mut rows = TeacherRows::new(&qs);
/// let d = Decision::from_value(&json!({"model": "t", "answers": {"spam": {"type": "noul", "noul": 1.5}}}))?;
/// let e = rows.push(&[0.5, 0.1], &d).unwrap_err();
/// assert_eq!(e.to_string(), "distill: row 0: question \"spam\": noul 1.5 is outside [0, 1]");
/// assert!(rows.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TeacherRows {
    pub(super) questions: Questions,
    pub(super) heads: Vec<HeadLayout>,
    /// `f64`s of targets a record holds.
    width: usize,
    dim: Option<usize>,
    len: usize,
    /// Each teacher model's name, in the order first seen.
    pub(super) teachers: Vec<String>,
    /// Per question key: the first non-empty score legend a teacher gave.
    pub(super) legends: BTreeMap<String, BTreeMap<String, String>>,
    memory_rows: usize,
    buf: Vec<u8>,
    file: Option<(TempFile, BufWriter<File>)>,
}

impl std::fmt::Debug for TeacherRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeacherRows")
            .field("len", &self.len)
            .field("dim", &self.dim)
            .field("spilled", &self.file.is_some())
            .finish_non_exhaustive()
    }
}

impl TeacherRows {
    /// No rows yet, for a student of `questions`.
    ///
    /// ```
    /// let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("spam", "Is it spam?")])?;
    /// assert_eq!(toolnexus_local::student::TeacherRows::new(&qs).len(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(questions: &Questions) -> TeacherRows {
        let mut width = 0;
        let heads = questions
            .iter()
            .map(|(key, q)| {
                let labels = labels_of(q);
                let at = width;
                width += labels.as_ref().map_or(0, Vec::len);
                HeadLayout {
                    key: key.clone(),
                    labels,
                    at,
                }
            })
            .collect();
        TeacherRows {
            questions: questions.clone(),
            heads,
            width,
            dim: None,
            len: 0,
            teachers: Vec::new(),
            legends: BTreeMap::new(),
            memory_rows: MEMORY_ROWS,
            buf: Vec::new(),
            file: None,
        }
    }

    /// The same, holding at most `rows` rows in memory (tests force a spill).
    #[cfg(test)]
    pub(super) fn with_memory_rows(mut self, rows: usize) -> TeacherRows {
        self.memory_rows = rows;
        self
    }

    /// Rows pushed.
    ///
    /// ```
    /// let qs = toolnexus::classifier::Questions::new();
    /// assert!(toolnexus_local::student::TeacherRows::new(&qs).is_empty());
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no row was pushed.
    ///
    /// ```
    /// let qs = toolnexus::classifier::Questions::new();
    /// assert!(toolnexus_local::student::TeacherRows::new(&qs).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Embeds each state as `text` says (64 at a time, as [`teacher_rows_as`]
    /// does) and pushes it with the teacher's decision; an embedding error
    /// is given in its own words.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-rows-embed-{}", std::process::id()));
    /// # toolnexus_local::tiny_model_for_tests(&dir)?;
    /// use serde_json::json;
    /// use toolnexus::classifier::{Decision, Questions};
    /// use toolnexus_local::StateText;
    /// let embedder = toolnexus_local::Embedder::load(&dir)?;
    /// let d = Decision::from_value(&json!({"model": "t", "answers": {}}))?;
    /// let mut rows = toolnexus_local::student::TeacherRows::new(&Questions::new());
    /// rows.embed(&embedder, &[(json!("hello"), d)], StateText::Json)?;
    /// assert_eq!(rows.len(), 1);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(())
    /// # }
    /// ```
    pub fn embed(
        &mut self,
        embedder: &Embedder,
        items: &[(Value, Decision)],
        text: StateText,
    ) -> Result<(), StudentError> {
        for part in items.chunks(64) {
            let rows = teacher_rows_as(embedder, part, text)
                .map_err(|e| StudentError::new(e.to_string()))?;
            for r in rows {
                self.push(&r.embedding, &r.decision)?;
            }
        }
        Ok(())
    }

    /// Whether the rows went to a temporary file.
    #[cfg(test)]
    pub(super) fn spilled(&self) -> bool {
        self.file.is_some()
    }

    /// Bytes of one record.
    fn record_len(&self) -> usize {
        self.dim.unwrap_or(0) * 4 + self.width * 8 + self.heads.len()
    }

    /// Adds a state's embedding with the teacher's decision on it, checked
    /// against the questions ([`check_teacher`]); the error names the row
    /// (0-based) and the question. Every row's embedding has the first one's
    /// dimensions. Nothing is added on an error.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::Decision;
    /// let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("spam", "Is it spam?")])?;
    /// let mut rows = toolnexus_local::student::TeacherRows::new(&qs);
    /// let d = Decision::from_value(&json!({"model": "t", "answers": {"spam": {"type": "noul", "noul": 1.0}}}))?;
    /// rows.push(&[0.5, 0.1], &d)?;
    /// let e = rows.push(&[0.5], &d).unwrap_err();
    /// assert_eq!(e.to_string(), "distill: row 1's embedding has 1 dimensions, row 0's 2");
    /// assert_eq!(rows.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn push(&mut self, embedding: &[f32], decision: &Decision) -> Result<(), StudentError> {
        let i = self.len;
        let dim = self.dim.unwrap_or(embedding.len());
        if embedding.len() != dim {
            return Err(StudentError::new(format!(
                "distill: row {i}'s embedding has {} dimensions, row 0's {dim}",
                embedding.len()
            )));
        }
        check_teacher(decision, &self.questions, None)
            .map_err(|e| StudentError::new(format!("distill: row {i}: {e}")))?;
        if !self.teachers.contains(&decision.model) {
            self.teachers.push(decision.model.clone());
        }
        self.dim = Some(dim);
        let start = self.buf.len();
        for v in embedding {
            self.buf.extend_from_slice(&v.to_le_bytes());
        }
        let mut has = Vec::with_capacity(self.heads.len());
        let mut targets = vec![0.0f64; self.width];
        for h in &self.heads {
            let (Some(labels), Some(q)) = (&h.labels, self.questions.get(&h.key)) else {
                has.push(0u8);
                continue;
            };
            let mut answered = 0u8;
            if let Some(a) = decision.answers.get(&h.key)
                && let (Some(target), true) = (target_of(a, labels), a.answer_type() == q.kind())
            {
                targets[h.at..h.at + labels.len()].copy_from_slice(&target);
                answered = 1;
                if let DecisionAnswer::Score(s) = a {
                    let legend = self.legends.entry(h.key.clone()).or_default();
                    if legend.is_empty() {
                        legend.clone_from(&s.legend);
                    }
                }
            }
            has.push(answered);
        }
        for v in targets {
            self.buf.extend_from_slice(&v.to_le_bytes());
        }
        self.buf.extend_from_slice(&has);
        debug_assert_eq!(self.buf.len() - start, self.record_len());
        self.len += 1;
        if self.buf.len() >= self.memory_rows.max(1) * self.record_len() {
            self.spill().map_err(|e| spill_error(&e))?;
        }
        Ok(())
    }

    /// Moves the rows held in memory to the file.
    fn spill(&mut self) -> io::Result<()> {
        if self.file.is_none() {
            let t = TempFile::create("toolnexus-distill")?;
            let w = BufWriter::with_capacity(1 << 16, t.file.try_clone()?);
            self.file = Some((t, w));
        }
        if let Some((_, w)) = &mut self.file {
            w.write_all(&self.buf)?;
        }
        self.buf.clear();
        Ok(())
    }

    /// The rows in `order` (every row once), for passes in that order.
    pub(super) fn ordered(mut self, order: &[usize]) -> Result<Ordered, StudentError> {
        let len = self.record_len();
        let store = match self.file.take() {
            None => {
                let mut bytes = Vec::with_capacity(self.buf.len());
                for &i in order {
                    bytes.extend_from_slice(&self.buf[i * len..(i + 1) * len]);
                }
                Store::Memory(bytes)
            }
            Some((from, mut w)) => {
                let copy = || -> io::Result<TempFile> {
                    w.write_all(&self.buf)?;
                    w.flush()?;
                    drop(w);
                    self.buf = Vec::new();
                    let to = TempFile::create("toolnexus-distill")?;
                    let mut out = BufWriter::with_capacity(1 << 16, to.file.try_clone()?);
                    let mut src = from.file.try_clone()?;
                    let mut record = vec![0u8; len];
                    for &i in order {
                        src.seek(SeekFrom::Start((i * len) as u64))?;
                        src.read_exact(&mut record)?;
                        out.write_all(&record)?;
                    }
                    out.flush()?;
                    Ok(to)
                };
                Store::File(copy().map_err(|e| spill_error(&e))?)
            }
        };
        Ok(Ordered {
            store,
            dim: self.dim.unwrap_or(0),
            width: self.width,
            heads: self.heads.len(),
            len: self.len,
        })
    }
}

fn spill_error(e: &io::Error) -> StudentError {
    StudentError::new(format!(
        "distill: cannot write the training rows to a temporary file in {}: {e}",
        std::env::temp_dir().display()
    ))
}

enum Store {
    Memory(Vec<u8>),
    File(TempFile),
}

/// The rows in the split's order: position 0 is the first row of the
/// shuffled order.
pub(super) struct Ordered {
    store: Store,
    dim: usize,
    width: usize,
    heads: usize,
    len: usize,
}

/// One row as a pass shows it: its position, embedding and one head's target.
pub(super) struct Row<'a> {
    pub(super) pos: usize,
    pub(super) x: &'a [f32],
    pub(super) t: &'a [f64],
}

impl Ordered {
    /// The embedding's dimensions.
    pub(super) fn dim(&self) -> usize {
        self.dim
    }

    /// Calls `each` on the rows at `positions` that answer head `head`
    /// (whose `k` targets start at `at`), in order.
    pub(super) fn pass(
        &self,
        positions: Range<usize>,
        head: usize,
        at: usize,
        k: usize,
        mut each: impl FnMut(Row<'_>),
    ) -> Result<(), StudentError> {
        let len = self.dim * 4 + self.width * 8 + self.heads;
        let positions = positions.start.min(self.len)..positions.end.min(self.len);
        let mut x = vec![0.0f32; self.dim];
        let mut t = vec![0.0f64; k];
        let mut one = |pos: usize, record: &[u8]| {
            if record[self.dim * 4 + self.width * 8 + head] == 0 {
                return;
            }
            for (v, b) in x.iter_mut().zip(record.chunks_exact(4)) {
                *v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
            let from = self.dim * 4 + at * 8;
            for (v, b) in t.iter_mut().zip(record[from..].chunks_exact(8)) {
                *v = f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
            }
            each(Row { pos, x: &x, t: &t });
        };
        match &self.store {
            Store::Memory(bytes) => {
                for pos in positions {
                    one(pos, &bytes[pos * len..(pos + 1) * len]);
                }
            }
            Store::File(f) => {
                let mut read = || -> io::Result<()> {
                    let mut src = f.file.try_clone()?;
                    src.seek(SeekFrom::Start((positions.start * len) as u64))?;
                    let mut block = vec![0u8; READ_ROWS * len];
                    let mut pos = positions.start;
                    while pos < positions.end {
                        let n = READ_ROWS.min(positions.end - pos);
                        src.read_exact(&mut block[..n * len])?;
                        for (j, record) in block[..n * len].chunks_exact(len).enumerate() {
                            one(pos + j, record);
                        }
                        pos += n;
                    }
                    Ok(())
                };
                read().map_err(|e| {
                    StudentError::new(format!(
                        "distill: cannot read the training rows back from {}: {e}",
                        f.path().display()
                    ))
                })?;
            }
        }
        Ok(())
    }
}

/// Rows given whole ([`distill`](super::distill)) as [`TeacherRows`].
pub(super) fn from_rows(
    rows: &[TeacherRow],
    questions: &Questions,
) -> Result<TeacherRows, StudentError> {
    let mut flat = TeacherRows::new(questions);
    for r in rows {
        flat.push(&r.embedding, &r.decision)?;
    }
    Ok(flat)
}
