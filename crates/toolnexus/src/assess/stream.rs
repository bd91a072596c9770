//! Run files and examples files read a line at a time, so that a run of a
//! million examples holds a million small figures, never a million rows.
//!
//! - [`RunReader`]: a run file's rows one at a time, with the errors
//!   [`Run::parse`](super::Run::parse) gives.
//! - [`summarize_file`]: [`summarize`](super::summarize)'s figures of a run
//!   file in bounded memory: counts and sums a row at a time, and the
//!   figures that need an order sorted through temporary files.
//! - [`run_examples_file`]: [`run_examples`](super::run_examples) over an
//!   examples file: the examples are checked in one pass, then read again and
//!   asked as calls finish; what the run file already holds is kept as one
//!   64-bit digest per id.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::error::{AssessError, AssessErrorKind};
use super::examples::{ExampleReader, check_each, id_hash, json_error_text};
use super::run::{Row, RunOptions, ask, check_questions, mend, parse_header, read_row, start_file};
use super::sorted::Spill;
use super::summary::{Summary, SummaryOptions};
use super::tally::Tally;
use crate::classifier::{Classifier, Questions};

/// A run file's rows read one at a time: an iterator of `Result<Row,
/// AssessError>` in file order (an id that appears twice comes twice; the
/// later row is the one that counts). Errors are [`Run::parse`]'s, naming
/// the file and line; a torn final line (cut short by a crash: no newline,
/// not JSON) ends the rows and is kept in [`RunReader::torn_line`].
///
/// [`Run::parse`]: super::Run::parse
///
/// ```
/// use toolnexus::assess::{Outcome, Row, Run, RunReader};
/// use toolnexus::judge::{noul, questions};
///
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// let failed = Outcome::Failed { kind: "timeout".into(), message: "slow".into() };
/// let path = std::env::temp_dir().join(format!("tn-run-reader-doc-{}.jsonl", std::process::id()));
/// let mut text = Run::new(qs.clone(), vec![Row::new("a", Default::default(), failed)]).to_jsonl();
/// text.push_str("{\"id\":\"b\",\"lab");
/// std::fs::write(&path, text)?;
/// let mut reader = RunReader::open(&path)?;
/// assert_eq!(reader.questions(), &qs);
/// assert_eq!(reader.next().unwrap()?.id, "a");
/// assert!(reader.next().is_none());
/// assert_eq!(reader.torn_line(), Some(3));
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RunReader {
    input: BufReader<File>,
    path: PathBuf,
    questions: Questions,
    buf: String,
    line_no: usize,
    /// Bytes read so far, and where the last line read starts.
    offset: u64,
    line_start: u64,
    ends_with_newline: bool,
    torn_line: Option<usize>,
    ended: bool,
}

impl RunReader {
    /// Opens a run file and reads its header.
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("tn-run-reader-open-{}.jsonl", std::process::id()));
    /// std::fs::write(&path, "{\"format\": \"other\"}\n")?;
    /// let e = toolnexus::assess::RunReader::open(&path).err().unwrap();
    /// assert!(e.to_string().ends_with(":1: not a run file: \"format\" is \"other\", not \"toolnexus.assess-run\""));
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<RunReader, AssessError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| AssessError::io(path, "cannot read", e))?;
        let mut input = BufReader::with_capacity(1 << 16, file);
        let mut buf = String::new();
        let n = input
            .read_line(&mut buf)
            .map_err(|e| AssessError::io(path, "cannot read", e))?;
        if n == 0 {
            return Err(AssessError::new(
                AssessErrorKind::Mismatch,
                "empty: a run file starts with its header line",
            )
            .at_path(path));
        }
        let questions = parse_header(&buf).map_err(|e| e.at_path(path))?;
        Ok(RunReader {
            input,
            path: path.to_path_buf(),
            questions,
            ends_with_newline: buf.ends_with('\n'),
            buf,
            line_no: 1,
            offset: n as u64,
            line_start: 0,
            torn_line: None,
            ended: false,
        })
    }

    /// The questions of the header.
    pub fn questions(&self) -> &Questions {
        &self.questions
    }

    /// The torn final line left out, once the rows are read to the end.
    pub fn torn_line(&self) -> Option<usize> {
        self.torn_line
    }

    /// The line of the row last read (1 is the header).
    pub fn line(&self) -> usize {
        self.line_no
    }

    /// Where a torn final line starts (what to cut the file to), and whether
    /// the file ends with a newline: once the rows are read to the end.
    fn end_state(&self) -> (Option<u64>, bool) {
        (
            self.torn_line.map(|_| self.line_start),
            self.ends_with_newline,
        )
    }

    fn fail(&mut self, e: AssessError) -> Option<Result<Row, AssessError>> {
        self.ended = true;
        Some(Err(e.at_path(&self.path)))
    }
}

impl RunReader {
    /// Reads the next line that is not blank into `buf`; `false` at the end.
    fn advance(&mut self) -> Result<bool, AssessError> {
        loop {
            self.buf.clear();
            let n = self
                .input
                .read_line(&mut self.buf)
                .map_err(|e| AssessError::io(&self.path, "cannot read", e))?;
            if n == 0 {
                return Ok(false);
            }
            self.line_no += 1;
            self.line_start = self.offset;
            self.offset += n as u64;
            self.ends_with_newline = self.buf.ends_with('\n');
            if !self.buf.trim_end().is_empty() {
                return Ok(true);
            }
        }
    }

    /// The row of the line in `buf`, or the end (a torn last line), or the
    /// line's error.
    fn row(&mut self) -> Option<Result<Row, AssessError>> {
        let line_no = self.line_no;
        let v: Value = match serde_json::from_str(self.buf.trim_end()) {
            Ok(v) => v,
            // The crash this format is built to survive: a last line
            // without its newline that is not JSON is left out.
            Err(_) if !self.ends_with_newline => {
                self.torn_line = Some(line_no);
                self.ended = true;
                return None;
            }
            Err(e) => {
                let e = AssessError::new(
                    AssessErrorKind::Syntax,
                    format!("not JSON: {}", json_error_text(&e)),
                )
                .at(line_no, Some(e.column()));
                return self.fail(e);
            }
        };
        match read_row(&v, &self.questions) {
            Ok(row) => Some(Ok(row)),
            Err(m) => {
                let e = AssessError::new(AssessErrorKind::Invalid, m).at(line_no, None);
                self.fail(e)
            }
        }
    }

    /// The next row's id alone, read without building the row (a later
    /// whole read checks it); a line that does not read so is read whole,
    /// for the same end or error as [`Iterator::next`].
    fn next_id(&mut self) -> Option<Result<String, AssessError>> {
        #[derive(serde::Deserialize)]
        struct Id {
            id: String,
        }
        if self.ended {
            return None;
        }
        match self.advance() {
            Ok(true) => {}
            Ok(false) => {
                self.ended = true;
                return None;
            }
            Err(e) => {
                self.ended = true;
                return Some(Err(e));
            }
        }
        if let Ok(Id { id }) = serde_json::from_str(self.buf.trim_end()) {
            return Some(Ok(id));
        }
        self.row().map(|r| r.map(|row| row.id))
    }
}

impl Iterator for RunReader {
    type Item = Result<Row, AssessError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.ended {
            return None;
        }
        match self.advance() {
            Ok(true) => self.row(),
            Ok(false) => {
                self.ended = true;
                None
            }
            Err(e) => {
                self.ended = true;
                Some(Err(e))
            }
        }
    }
}

/// Which rows of a run file count when an id appears more than once (the
/// later row wins, in the place of the first).
struct Winners {
    /// Row positions (in file order) that do not count where they stand.
    moved: HashSet<usize>,
    /// The first position of each repeated id → the position of its last row.
    last_of: HashMap<usize, usize>,
}

/// Reads the ids of a run file's rows as digests, sorted with their
/// positions through a bounded [`Spill`]: which rows win. What it holds
/// grows with the repeated ids alone.
fn winners(path: &Path) -> Result<Winners, AssessError> {
    let mut spill = Spill::new(true);
    let mut reader = RunReader::open(path)?;
    let mut at = 0u64;
    while let Some(id) = reader.next_id() {
        spill.push(id_hash(&id?), at).map_err(sort_error)?;
        at += 1;
    }
    let mut w = Winners {
        moved: HashSet::new(),
        last_of: HashMap::new(),
    };
    // Positions ascend within a digest: the first is where the id counts,
    // the last is the row that counts there.
    let mut group: Option<(u64, usize, usize)> = None;
    let close = |g: Option<(u64, usize, usize)>, w: &mut Winners| {
        if let Some((_, first, last)) = g
            && first != last
        {
            w.last_of.insert(first, last);
        }
    };
    let mut sorted = spill.sorted().map_err(sort_error)?;
    for (digest, at) in sorted.by_ref() {
        let at = at as usize;
        match group.as_mut() {
            Some((d, _, last)) if *d == digest => {
                w.moved.insert(at);
                *last = at;
            }
            _ => close(group.replace((digest, at, at)), &mut w),
        }
    }
    close(group, &mut w);
    sorted.error().map_err(sort_error)?;
    Ok(w)
}

/// [`summarize`](super::summarize) of the run file at `path`, read a line at a
/// time in bounded memory: counts and sums are added up as rows come, and
/// the figures that need an order (AUROC, adaptive ECE, risk-coverage
/// curves, latency quantiles) keep a bounded chunk of their values in
/// memory and the rest sorted in temporary files under
/// [`std::env::temp_dir`], removed when done. The same file gives the same
/// summary, bit for bit, as [`Run::load`](super::Run::load) then
/// `summarize`; slices, which group whole rows, are computed that way. Also
/// returns the torn final line left out, if any.
///
/// ```
/// use std::collections::BTreeMap;
/// use serde_json::json;
/// use toolnexus::assess::*;
/// use toolnexus::classifier::Decision;
/// use toolnexus::judge::{noul, questions};
///
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// let row = |id: &str, p: f64, y: bool| Row::new(id, BTreeMap::from([("spam".to_string(), Gold::Noul(y))]),
///     Outcome::Decided(Decision::from_value(&json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": p}}})).unwrap()));
/// let run = Run::new(qs, vec![row("a", 0.9, true), row("b", 0.2, false), row("c", 0.7, false)]);
/// let path = std::env::temp_dir().join(format!("tn-summarize-file-doc-{}.jsonl", std::process::id()));
/// run.save(&path)?;
/// let (s, torn) = summarize_file(&path, &SummaryOptions::default())?;
/// assert_eq!(s, summarize(&run, &SummaryOptions::default()));
/// assert_eq!(torn, None);
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn summarize_file(
    path: impl AsRef<Path>,
    options: &SummaryOptions,
) -> Result<(Summary, Option<usize>), AssessError> {
    let path = path.as_ref();
    if !options.slices.is_empty() {
        let run = super::Run::load(path)?;
        return Ok((super::summarize(&run, options), run.torn_line));
    }
    let mut tally: Option<Tally> = None;
    let mut failed = None;
    let (questions, torn_line) = winning_rows(path, |questions, row| {
        let t = tally.get_or_insert_with(|| Tally::new(questions, options, true));
        if failed.is_none()
            && let Err(e) = t.push(&row)
        {
            failed = Some(e);
        }
    })?;
    if let Some(e) = failed {
        return Err(sort_error(e));
    }
    let tally = tally.unwrap_or_else(|| Tally::new(&questions, options, true));
    Ok((tally.finish().map_err(sort_error)?, torn_line))
}

/// A temporary file of a summary's sort that could not be written or read.
fn sort_error(e: std::io::Error) -> AssessError {
    AssessError::io(&std::env::temp_dir(), "cannot sort the run's figures in", e)
}

/// The rows of the run file at `path` as [`Run::load`](super::Run::load)
/// keeps them, one at a time: each id once, where it first appears, with its
/// last row. `each` gets the header's questions too. Returns the questions
/// and the torn final line left out, if any.
pub(super) fn winning_rows(
    path: &Path,
    mut each: impl FnMut(&Questions, Row),
) -> Result<(Questions, Option<usize>), AssessError> {
    let w = winners(path)?;
    // The later rows of repeated ids, read ahead (there are few: a rerun of
    // the errors writes them).
    let mut later: HashMap<usize, Row> = HashMap::new();
    if !w.last_of.is_empty() {
        let wanted: HashMap<usize, usize> = w.last_of.iter().map(|(f, l)| (*l, *f)).collect();
        for (i, row) in RunReader::open(path)?.enumerate() {
            if let Some(first) = wanted.get(&i) {
                later.insert(*first, row?);
            }
        }
    }
    let mut reader = RunReader::open(path)?;
    let questions = reader.questions().clone();
    for (i, row) in reader.by_ref().enumerate() {
        let row = row?;
        if !w.moved.contains(&i) {
            each(&questions, later.remove(&i).unwrap_or(row));
        }
    }
    Ok((questions, reader.torn_line()))
}

/// What [`run_examples_file`] did.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FileRun {
    /// The summary of the whole run file afterwards ([`summarize_file`]).
    pub summary: Summary,
    /// A torn final line cut from the run file before appending (its example
    /// was asked again).
    pub torn_line: Option<usize>,
    /// Examples asked in this run.
    pub asked: usize,
    /// Examples that got no row: the budget's cap refused them.
    pub not_started: usize,
}

/// Each id the run file holds, as a digest, and whether its row (the last
/// one) has a decision: sorted, 8 bytes an id.
struct Done(Vec<u64>);

impl Done {
    fn read(reader: &mut RunReader) -> Result<Done, AssessError> {
        // Sorted through a bounded spill by digest, then position: the later
        // row of an id comes last in its group and wins. The low bit of the
        // digest carries the outcome.
        let mut spill = Spill::new(true);
        for (at, row) in reader.by_ref().enumerate() {
            let row = row?;
            let d = (id_hash(&row.id) & !1) | u64::from(row.decision().is_some());
            spill
                .push(d >> 1, (at as u64) << 1 | (d & 1))
                .map_err(sort_error)?;
        }
        let mut done: Vec<u64> = Vec::with_capacity(spill.len());
        let mut sorted = spill.sorted().map_err(sort_error)?;
        for (key, tag) in sorted.by_ref() {
            let d = key << 1 | (tag & 1);
            match done.last_mut() {
                Some(last) if *last >> 1 == key => *last = d,
                _ => done.push(d),
            }
        }
        sorted.error().map_err(sort_error)?;
        done.shrink_to_fit();
        Ok(Done(done))
    }

    /// `None` when the id has no row, else whether that row was decided.
    fn outcome(&self, id: &str) -> Option<bool> {
        let key = id_hash(id) >> 1;
        let at = self.0.binary_search_by_key(&key, |d| d >> 1).ok()?;
        Some(self.0[at] & 1 == 1)
    }
}

/// The ids a run file holds, each as a 64-bit digest with whether its row
/// (the last one, when an id appears twice) was decided: 8 bytes an id, so
/// that what a run would ask again is counted without holding the rows.
///
/// ```
/// use toolnexus::assess::{Outcome, Row, Run, RunIds};
/// use toolnexus::judge::{noul, questions};
///
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// let failed = Outcome::Failed { kind: "timeout".into(), message: "slow".into() };
/// let path = std::env::temp_dir().join(format!("tn-run-ids-doc-{}.jsonl", std::process::id()));
/// Run::new(qs, vec![Row::new("a", Default::default(), failed)]).save(&path)?;
/// let ids = RunIds::read(&path)?;
/// assert!(ids.wanted("b", false), "no row: asked");
/// assert!(!ids.wanted("a", false), "a failed row is kept");
/// assert!(ids.wanted("a", true), "unless errors are asked again");
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RunIds(Done);

impl RunIds {
    /// Reads the run file at `path`, with the errors [`Run::load`] gives.
    ///
    /// [`Run::load`]: super::Run::load
    pub fn read(path: impl AsRef<Path>) -> Result<RunIds, AssessError> {
        Ok(RunIds(Done::read(&mut RunReader::open(path)?)?))
    }

    /// Whether a run would ask example `id`: the file has no row for it, or
    /// its row failed and `rerun_errors` asks failures again.
    pub fn wanted(&self, id: &str, rerun_errors: bool) -> bool {
        match self.0.outcome(id) {
            None => true,
            Some(decided) => rerun_errors && !decided,
        }
    }
}

/// [`run_examples`](super::run_examples) over the examples file at
/// `examples`, reading it a line at a time: it is checked whole first (the
/// errors [`read_examples`](super::read_examples) gives, before anything is
/// asked), then read again and asked `options.concurrency` at a time. What
/// the run file at `path` already holds is kept as a 64-bit digest per id (two
/// different ids share one with odds of about n² / 2⁶⁴). Returns the summary
/// of the whole run file afterwards.
///
/// ```
/// use std::sync::Arc;
/// use serde_json::json;
/// use toolnexus::assess::{run_examples_file, RunOptions};
/// use toolnexus::classifier::*;
/// use toolnexus::judge::{noul, questions};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// let judge = create_classifier(ClassifierOptions {
///     style: ClassifierStyle::Custom,
///     evaluate: Some(Arc::new(|_ctx, _state, _qs| Box::pin(async {
///         Decision::from_value(&json!({"model": "rule", "answers": {"spam": {"type": "noul", "noul": 0.9}}}))
///             .map_err(|e| e.to_string())
///     }))),
///     ..Default::default()
/// })?;
/// let dir = std::env::temp_dir().join(format!("tn-run-file-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let (examples, out) = (dir.join("labels.jsonl"), dir.join("run.jsonl"));
/// std::fs::write(&examples, "{\"id\": \"a\", \"state\": \"WIN\", \"labels\": {\"spam\": true}}\n")?;
/// # let _ = std::fs::remove_file(&out);
/// let first = run_examples_file(&judge, &qs, &examples, &out, RunOptions::default()).await?;
/// assert_eq!((first.asked, first.summary.rows), (1, 1));
/// // Running again asks nothing: every id is in the file.
/// let again = run_examples_file(&judge, &qs, &examples, &out, RunOptions::default()).await?;
/// assert_eq!((again.asked, again.summary.rows), (0, 1));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(())
/// # }
/// ```
pub async fn run_examples_file(
    classifier: &Classifier,
    questions: &Questions,
    examples: impl AsRef<Path>,
    path: impl AsRef<Path>,
    options: RunOptions,
) -> Result<FileRun, AssessError> {
    let (examples, path) = (examples.as_ref(), path.as_ref());
    let existing = match std::fs::metadata(path) {
        Ok(m) if m.len() > 0 => true,
        Ok(_) => false,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(AssessError::io(path, "cannot read", e)),
    };
    // What the run file holds, read first (nothing is written yet) so that
    // the examples' check counts what is left to ask; the examples' errors
    // still come first, as they did when the examples were read whole.
    let held = existing.then(|| -> Result<_, AssessError> {
        let mut reader = RunReader::open(path)?;
        let done = Done::read(&mut reader)?;
        Ok((done, reader))
    });
    let done_of = |held: &Option<Result<(Done, RunReader), AssessError>>, id: &str| match held {
        Some(Ok((done, _))) => done.outcome(id),
        _ => None,
    };
    let wanted = |outcome: Option<bool>| match outcome {
        None => true,
        Some(decided) => options.rerun_errors && !decided,
    };
    let mut total = 0;
    check_each(examples, questions, |ex| {
        total += usize::from(wanted(done_of(&held, &ex.id)));
    })?;
    let (done, torn_line) = match held {
        Some(held) => {
            let (done, reader) = held?;
            check_questions(reader.questions(), questions, path)?;
            let (torn_cut, ends_with_newline) = reader.end_state();
            mend(path, torn_cut, ends_with_newline)?;
            (done, reader.torn_line())
        }
        None => {
            start_file(path, questions)?;
            (Done(Vec::new()), None)
        }
    };
    let mut error = None;
    let todo = ExampleReader::open(examples, questions)?
        .unchecked_ids()
        .map_while(|ex| ex.map_err(|e| error = Some(e)).ok())
        .filter(|ex| wanted(done.outcome(&ex.id)));
    // A new file holds this run's rows alone, each id once (the examples'
    // ids are unique), in the order they are written: the summary is added
    // up as they are, and the file is not read again.
    let mut tally = (!existing).then(|| Tally::new(questions, &SummaryOptions::default(), true));
    let mut tally_error = None;
    let (mut asked, mut not_started) = (0, 0);
    ask(
        classifier,
        questions,
        todo,
        total,
        path,
        &options,
        |row| match row {
            Some(row) => {
                asked += 1;
                if let Some(t) = tally.as_mut()
                    && tally_error.is_none()
                    && let Err(e) = t.push(&row)
                {
                    tally_error = Some(e);
                }
            }
            None => not_started += 1,
        },
    )
    .await?;
    if let Some(e) = error {
        return Err(e);
    }
    drop(done);
    let summary = match tally {
        Some(t) => match tally_error {
            Some(e) => return Err(sort_error(e)),
            None => t.finish().map_err(sort_error)?,
        },
        None => summarize_file(path, &SummaryOptions::default())?.0,
    };
    Ok(FileRun {
        summary,
        torn_line,
        asked,
        not_started,
    })
}

#[cfg(test)]
mod tests;
