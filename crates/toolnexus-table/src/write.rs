//! Writing a result table: every input column kept, then SPEC §24's flat
//! result columns, a chunk of rows at a time, into a temporary file beside
//! the out file that is renamed over it once complete.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use toolnexus::classifier::Questions;

use crate::columns::{columns, fields};
use crate::error::TableError;
use crate::format::Format;
use crate::journal::Journal;
use crate::read::Input;

/// Rows per Parquet row group: what the writer holds before it flushes.
const ROW_GROUP_ROWS: usize = 16 * 1024;

enum Sink {
    Csv(arrow_csv::Writer<BufWriter<File>>),
    Parquet(Box<parquet::arrow::ArrowWriter<BufWriter<File>>>),
    Arrow(arrow_ipc::writer::FileWriter<BufWriter<File>>),
    ArrowStream(arrow_ipc::writer::StreamWriter<BufWriter<File>>),
}

/// A table written a record batch at a time.
pub struct TableWriter {
    path: PathBuf,
    format: Format,
    sink: Sink,
}

impl TableWriter {
    /// Creates `path` as a `format` table of this schema (JSONL is no table:
    /// it is refused).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use arrow_array::{Int64Array, RecordBatch};
    /// use arrow_schema::{DataType, Field, Schema};
    /// use toolnexus_table::{Format, TableWriter};
    /// let path = std::env::temp_dir().join(format!("toolnexus-table-w-{}.csv", std::process::id()));
    /// let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
    /// let mut w = TableWriter::create(&path, Format::Csv, schema.clone())?;
    /// w.write(&RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(vec![1, 2]))])?)?;
    /// w.finish()?;
    /// assert_eq!(std::fs::read_to_string(&path)?, "n\n1\n2\n");
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create(
        path: &Path,
        format: Format,
        schema: SchemaRef,
    ) -> Result<TableWriter, TableError> {
        let file = File::create(path).map_err(|source| TableError::Io {
            path: path.to_path_buf(),
            what: "write",
            source,
        })?;
        let out = BufWriter::with_capacity(1 << 16, file);
        let bad = |message: String| TableError::Write {
            path: path.to_path_buf(),
            format: format.name(),
            message,
        };
        let sink = match format {
            Format::Csv | Format::Tsv => Sink::Csv(
                arrow_csv::WriterBuilder::new()
                    .with_header(true)
                    .with_delimiter(if format == Format::Tsv { b'\t' } else { b',' })
                    .build(out),
            ),
            Format::Parquet => {
                let props = parquet::file::properties::WriterProperties::builder()
                    .set_compression(parquet::basic::Compression::SNAPPY)
                    .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
                    .build();
                let w = parquet::arrow::ArrowWriter::try_new(out, schema, Some(props))
                    .map_err(|e| bad(e.to_string()))?;
                Sink::Parquet(Box::new(w))
            }
            Format::Arrow => Sink::Arrow(
                arrow_ipc::writer::FileWriter::try_new(out, &schema)
                    .map_err(|e| bad(e.to_string()))?,
            ),
            Format::ArrowStream => Sink::ArrowStream(
                arrow_ipc::writer::StreamWriter::try_new(out, &schema)
                    .map_err(|e| bad(e.to_string()))?,
            ),
            Format::Jsonl => {
                return Err(bad("JSONL is written line by line, not as a table".into()));
            }
        };
        Ok(TableWriter {
            path: path.to_path_buf(),
            format,
            sink,
        })
    }

    fn bad(&self, message: String) -> TableError {
        TableError::Write {
            path: self.path.clone(),
            format: self.format.name(),
            message,
        }
    }

    /// Appends a batch of rows.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use arrow_array::{StringArray, RecordBatch};
    /// # use arrow_schema::{DataType, Field, Schema};
    /// # let path = std::env::temp_dir().join(format!("toolnexus-table-w2-{}.arrow", std::process::id()));
    /// # let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, false)]));
    /// let mut w = toolnexus_table::TableWriter::create(&path, toolnexus_table::Format::Arrow, schema.clone())?;
    /// w.write(&RecordBatch::try_new(schema, vec![Arc::new(StringArray::from(vec!["a"]))])?)?;
    /// w.finish()?;
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), TableError> {
        let done = match &mut self.sink {
            Sink::Csv(w) => w.write(batch).map_err(|e| e.to_string()),
            Sink::Parquet(w) => w.write(batch).map_err(|e| e.to_string()),
            Sink::Arrow(w) => w.write(batch).map_err(|e| e.to_string()),
            Sink::ArrowStream(w) => w.write(batch).map_err(|e| e.to_string()),
        };
        done.map_err(|m| self.bad(m))
    }

    /// Ends the table (a Parquet footer, an Arrow file's index), flushes it
    /// and makes it durable.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use arrow_schema::{DataType, Field, Schema};
    /// # let path = std::env::temp_dir().join(format!("toolnexus-table-w3-{}.parquet", std::process::id()));
    /// # let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, false)]));
    /// toolnexus_table::TableWriter::create(&path, toolnexus_table::Format::Parquet, schema)?.finish()?;
    /// assert!(std::fs::metadata(&path)?.len() > 0);
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn finish(self) -> Result<(), TableError> {
        let bad = |m: String| TableError::Write {
            path: self.path.clone(),
            format: self.format.name(),
            message: m,
        };
        let out = match self.sink {
            Sink::Csv(w) => Ok(w.into_inner()),
            Sink::Parquet(w) => w.into_inner().map_err(|e| bad(e.to_string())),
            Sink::Arrow(mut w) => w
                .finish()
                .and_then(|()| w.into_inner())
                .map_err(|e| bad(e.to_string())),
            Sink::ArrowStream(mut w) => w
                .finish()
                .and_then(|()| w.into_inner())
                .map_err(|e| bad(e.to_string())),
        }?;
        let file = out.into_inner().map_err(|e| bad(e.error().to_string()))?;
        file.sync_all().map_err(|source| TableError::Io {
            path: self.path.clone(),
            what: "write",
            source,
        })
    }
}

/// Writes the result table of a run: `input` read again a chunk at a time,
/// each row joined with its outcome in `journal` (a row the journal does not
/// answer gets the error `not asked yet`), written to `out` as `format`
/// through a temporary file beside it, renamed over it once complete.
/// Returns the rows written.
///
/// ```
/// use toolnexus_table::{Format, Input, write_table};
/// let dir = std::env::temp_dir().join(format!("toolnexus-table-wt-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join("s.csv"), "text\nhello\n")?;
/// std::fs::write(dir.join("j.jsonl"), "{\"toolnexus\":\"batch\"}\n{\"line\":1,\"error\":\"timed out\"}\n")?;
/// let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("spam", "Spam?")])?;
/// let input = Input::open(&dir.join("s.csv"), Default::default())?;
/// let n = write_table(&input, &dir.join("j.jsonl"), &qs, &dir.join("out.csv"), Format::Csv)?;
/// assert_eq!(n, 1);
/// let text = std::fs::read_to_string(dir.join("out.csv"))?;
/// assert!(text.starts_with("text,spam.noul,model,calibrated,input_tokens,output_tokens,cost,error\nhello,,,,,,,timed out"));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_table(
    input: &Input,
    journal: &Path,
    questions: &Questions,
    out: &Path,
    format: Format,
) -> Result<usize, TableError> {
    let temp = temp_beside(out);
    let written = write_to(input, journal, questions, &temp, format);
    let rows = match written {
        Ok(rows) => rows,
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            return Err(e);
        }
    };
    std::fs::rename(&temp, out).map_err(|source| {
        let _ = std::fs::remove_file(&temp);
        TableError::Io {
            path: out.to_path_buf(),
            what: "rename the finished table over",
            source,
        }
    })?;
    Ok(rows)
}

fn write_to(
    input: &Input,
    journal: &Path,
    questions: &Questions,
    temp: &Path,
    format: Format,
) -> Result<usize, TableError> {
    let mut results = Journal::open(journal)?;
    let mut writer: Option<(TableWriter, SchemaRef)> = None;
    let mut rows = 0;
    for chunk in input.reader()? {
        let chunk = chunk?;
        let mut outcomes = Vec::with_capacity(chunk.rows.len());
        for row in &chunk.rows {
            let outcome = match (&row.state, results.take(row.n)?) {
                (_, Some(o)) => o,
                (Err(e), None) => Err(e.clone()),
                (Ok(_), None) => Err("not asked yet".to_string()),
            };
            outcomes.push(outcome);
        }
        // An input column named as a result column (a table this command
        // wrote, read again) is replaced by this run's.
        let ours = fields(questions);
        let input_schema = chunk.batch.schema();
        let kept: Vec<usize> = (0..input_schema.fields().len())
            .filter(|&i| {
                !ours
                    .iter()
                    .any(|f| f.name() == input_schema.field(i).name())
            })
            .collect();
        let (w, schema) = match &mut writer {
            Some(w) => w,
            None => {
                let all: Vec<_> = (kept.iter().map(|&i| input_schema.fields()[i].clone()))
                    .chain(ours.into_iter().map(Arc::new))
                    .collect();
                let schema = Arc::new(Schema::new(all));
                let w = TableWriter::create(temp, format, schema.clone())?;
                writer.insert((w, schema))
            }
        };
        let mut cols: Vec<_> = kept
            .iter()
            .map(|&i| chunk.batch.column(i).clone())
            .collect();
        cols.extend(columns(questions, &outcomes));
        let batch = RecordBatch::try_new(schema.clone(), cols).map_err(|e| TableError::Write {
            path: temp.to_path_buf(),
            format: format.name(),
            message: e.to_string(),
        })?;
        w.write(&batch)?;
        rows += chunk.rows.len();
    }
    match writer {
        Some((w, _)) => w.finish()?,
        None => {
            let schema = Arc::new(Schema::new(fields(questions)));
            TableWriter::create(temp, format, schema)?.finish()?;
        }
    }
    Ok(rows)
}

/// `.NAME.PID.tmp` beside `out`.
fn temp_beside(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    out.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

/// The journal of a table out file: the JSONL out file beside it
/// (`out.parquet` → `out.parquet.jsonl`) that a run appends each result to
/// as it finishes, and resumes and reruns from; the table is written from it
/// once every row has a result.
///
/// ```
/// let j = toolnexus_table::journal_path("runs/out.parquet".as_ref());
/// assert_eq!(j, std::path::Path::new("runs/out.parquet.jsonl"));
/// ```
pub fn journal_path(out: &Path) -> PathBuf {
    let mut s = out.as_os_str().to_os_string();
    s.push(".jsonl");
    PathBuf::from(s)
}

/// Where a run with `--out out` appends its result lines: `out` itself for
/// JSONL and for a stream (`-`, a path that is not a regular file), else the
/// table's journal ([`journal_path`]). A table that exists without its
/// journal is refused (it is not one a run wrote, or its results are gone):
/// it is left untouched.
///
/// ```
/// use std::path::Path;
/// use toolnexus_table::results_path;
/// assert_eq!(results_path(Path::new("o.csv"))?, Path::new("o.csv.jsonl"));
/// assert_eq!(results_path(Path::new("o.jsonl"))?, Path::new("o.jsonl"));
/// assert_eq!(results_path(Path::new("-"))?, Path::new("-"));
/// # Ok::<(), toolnexus_table::TableError>(())
/// ```
pub fn results_path(out: &Path) -> Result<PathBuf, TableError> {
    let stream = out.as_os_str() == "-" || std::fs::metadata(out).is_ok_and(|m| !m.is_file());
    if stream || !Format::of(out).is_table() {
        return Ok(out.to_path_buf());
    }
    let journal = journal_path(out);
    if out.exists() && !journal.exists() {
        return Err(TableError::NoJournal {
            path: out.to_path_buf(),
            journal,
        });
    }
    Ok(journal)
}
