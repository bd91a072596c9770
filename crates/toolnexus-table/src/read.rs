//! Reading states in bounded chunks: at most [`CHUNK_ROWS`] rows (and one
//! record batch of the file's own) are held at a time, whatever the file's
//! size.

use std::fs::File;
use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use serde_json::{Map, Value};
use toolnexus::states::{Digest, labelled_example, parse_line};

use crate::error::TableError;
use crate::format::Format;
use crate::value::{cell, state_of};

/// The most rows a [`Reader`] hands out at once.
pub const CHUNK_ROWS: usize = 1024;

/// Which columns make a row's state and name it.
///
/// ```
/// let spec = toolnexus_table::StateSpec { column: Some("text".into()), ..Default::default() };
/// assert!(!spec.is_whole());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateSpec {
    /// `--state-column`: this column is the state (text, or the object a
    /// string holding a JSON object spells).
    pub column: Option<String>,
    /// `--state-columns`: the state is an object of these columns.
    pub columns: Vec<String>,
    /// `--id-column`: this column names the row in results.
    pub id: Option<String>,
}

impl StateSpec {
    /// The spec of `--state-column`, `--state-columns` and `--id-column`.
    ///
    /// ```
    /// let spec = toolnexus_table::StateSpec::new(None, vec!["a".into(), "b".into()], None);
    /// assert_eq!(spec.columns, ["a", "b"]);
    /// ```
    pub fn new(column: Option<String>, columns: Vec<String>, id: Option<String>) -> StateSpec {
        StateSpec {
            column,
            columns,
            id,
        }
    }

    /// Whether a JSONL line is the state itself (no column named).
    ///
    /// ```
    /// assert!(toolnexus_table::StateSpec::default().is_whole());
    /// ```
    pub fn is_whole(&self) -> bool {
        self.column.is_none() && self.columns.is_empty()
    }

    /// What it adds to a run's fingerprint: nothing for the whole line, else
    /// the columns that make and name a state (another choice asks other
    /// states of the same file).
    fn fingerprint_text(&self) -> Option<String> {
        (!self.is_whole() || self.id.is_some()).then(|| {
            format!(
                "\nstate-column={:?} state-columns={:?} id-column={:?}",
                self.column, self.columns, self.id
            )
        })
    }
}

/// One row: its number (the 1-based physical line of a JSONL file, the
/// 1-based row of a table), its id when `--id-column` names one, and its
/// state or why it has none (bad JSON on its line, a null state).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The line (JSONL) or row (table) number, from 1.
    pub n: usize,
    /// The `--id-column` value.
    pub id: Option<Value>,
    /// The state, or the row's error as its result line says it.
    pub state: Result<Value, String>,
}

/// Up to [`CHUNK_ROWS`] rows and their input columns (for a table out file:
/// JSONL rows as `line`, `id` when named, and `state`, the line's text).
#[derive(Debug, Clone)]
pub struct Chunk {
    /// The rows, in file order.
    pub rows: Vec<Row>,
    /// Their input columns, one row each.
    pub batch: RecordBatch,
}

/// What a first pass over a states file finds: the digest a run's
/// fingerprint records, how many lines (rows) it has, how many states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Survey {
    /// `sha256:` of the file's bytes (and of the columns chosen, when any).
    pub digest: String,
    /// The last line number a result may name (physical lines, or rows).
    pub last_line: usize,
    /// Rows holding a state (non-blank lines, or rows).
    pub rows: usize,
}

/// A states file and how to read its states.
#[derive(Debug, Clone)]
pub struct Input {
    path: PathBuf,
    format: Format,
    spec: StateSpec,
}

impl Input {
    /// A states file read as its extension says; a table's columns are
    /// checked against the spec at once (a missing one names the columns it
    /// has).
    ///
    /// ```
    /// use toolnexus_table::{Input, StateSpec};
    /// let path = std::env::temp_dir().join(format!("toolnexus-table-doc-{}.csv", std::process::id()));
    /// std::fs::write(&path, "id,text\n1,hello\n")?;
    /// let spec = StateSpec { column: Some("txt".into()), ..Default::default() };
    /// let e = Input::open(&path, spec).unwrap_err();
    /// assert!(e.to_string().ends_with("no column \"txt\" (its columns: \"id\", \"text\")"));
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: &Path, spec: StateSpec) -> Result<Input, TableError> {
        let input = Input {
            path: path.to_path_buf(),
            format: Format::of(path),
            spec,
        };
        if path.is_dir() {
            return Err(TableError::Directory {
                path: input.path.clone(),
            });
        }
        if input.format.is_table() {
            input.reader()?;
        }
        Ok(input)
    }

    /// The file.
    ///
    /// ```
    /// # let input = toolnexus_table::Input::open("s.jsonl".as_ref(), Default::default())?;
    /// assert_eq!(input.path(), std::path::Path::new("s.jsonl"));
    /// # Ok::<(), toolnexus_table::TableError>(())
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its format.
    ///
    /// ```
    /// # let input = toolnexus_table::Input::open("s.jsonl".as_ref(), Default::default())?;
    /// assert_eq!(input.format(), toolnexus_table::Format::Jsonl);
    /// # Ok::<(), toolnexus_table::TableError>(())
    /// ```
    pub fn format(&self) -> Format {
        self.format
    }

    /// One pass over the file in bounded pieces: its digest, its last line,
    /// its number of states. A JSONL file that is not UTF-8, holds no state,
    /// or holds a labelled example (when its lines are the states) is
    /// refused here, before anything is asked.
    ///
    /// ```
    /// use toolnexus_table::Input;
    /// let path = std::env::temp_dir().join(format!("toolnexus-table-survey-{}.jsonl", std::process::id()));
    /// std::fs::write(&path, "\"a\"\n\n\"b\"\n")?;
    /// let s = Input::open(&path, Default::default())?.survey()?;
    /// assert_eq!((s.last_line, s.rows), (4, 2));
    /// assert_eq!(s.digest, toolnexus::classifier::Fingerprint::digest(b"\"a\"\n\n\"b\"\n"));
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn survey(&self) -> Result<Survey, TableError> {
        let mut digest = Digest::new();
        let mut file = BufReader::with_capacity(1 << 16, self.open_file()?);
        let read = |e| self.io("read", e);
        let (last_line, rows) = if self.format.is_table() {
            let mut block = vec![0u8; 1 << 16];
            loop {
                let n = file.read(&mut block).map_err(read)?;
                if n == 0 {
                    break;
                }
                digest.update(&block[..n]);
            }
            let rows = self.count_rows()?;
            (rows, rows)
        } else {
            let (mut line, mut rows, mut offset) = (Vec::new(), 0usize, 0u64);
            let (mut n, mut newline_last) = (0usize, true);
            loop {
                line.clear();
                let got = file.read_until(b'\n', &mut line).map_err(read)?;
                if got == 0 {
                    break;
                }
                n += 1;
                newline_last = line.last() == Some(&b'\n');
                digest.update(&line);
                let text = self.text(&line, offset)?;
                offset += got as u64;
                if text.trim().is_empty() {
                    continue;
                }
                rows += 1;
                if self.spec.is_whole()
                    && let Some(keys) = labelled_example(text)
                {
                    return Err(TableError::Labelled {
                        path: self.path.clone(),
                        line: n,
                        keys,
                    });
                }
            }
            // As `text.split('\n').count()`: a final newline starts one more line.
            (n + usize::from(newline_last), rows)
        };
        if rows == 0 {
            return Err(TableError::Empty {
                path: self.path.clone(),
                why: if self.format.is_table() {
                    "the table has no rows"
                } else {
                    "the file is empty or holds only blank lines"
                },
            });
        }
        if let Some(t) = self.spec.fingerprint_text() {
            digest.update(t.as_bytes());
        }
        Ok(Survey {
            digest: digest.finish(),
            last_line,
            rows,
        })
    }

    /// A reader of its rows from the start, in chunks of at most
    /// [`CHUNK_ROWS`].
    ///
    /// ```
    /// use toolnexus_table::Input;
    /// let path = std::env::temp_dir().join(format!("toolnexus-table-read-{}.csv", std::process::id()));
    /// std::fs::write(&path, "id,text\n7,hello\n8,\"{\"\"cmd\"\": \"\"ls\"\"}\"\n")?;
    /// let spec = toolnexus_table::StateSpec { column: Some("text".into()), id: Some("id".into()), ..Default::default() };
    /// let chunk = Input::open(&path, spec)?.reader()?.next().unwrap()?;
    /// assert_eq!(chunk.rows[0].state, Ok(serde_json::json!("hello")));
    /// assert_eq!(chunk.rows[1].state, Ok(serde_json::json!({"cmd": "ls"})));
    /// assert_eq!(chunk.rows[1].id, Some(serde_json::json!("8")));
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reader(&self) -> Result<Reader, TableError> {
        let file = self.open_file()?;
        let source = match self.format {
            Format::Jsonl => Source::Jsonl {
                file: BufReader::with_capacity(1 << 16, file),
                line: 0,
                offset: 0,
            },
            _ => {
                let (schema, batches) = self.batches(file)?;
                let at = |name: &String| {
                    schema.index_of(name).map_err(|_| TableError::NoColumn {
                        path: self.path.clone(),
                        column: name.clone(),
                        columns: schema.fields().iter().map(|f| f.name().clone()).collect(),
                    })
                };
                let state = match (&self.spec.column, &self.spec.columns[..]) {
                    (Some(c), _) => StateAt::Column(at(c)?),
                    (None, []) if schema.fields().len() == 1 => StateAt::Column(0),
                    (None, []) => StateAt::Column(match schema.index_of("state") {
                        Ok(i) => i,
                        Err(_) => at(&"state".to_string())?,
                    }),
                    (None, cs) => StateAt::Columns(
                        cs.iter()
                            .map(|c| Ok((c.clone(), at(c)?)))
                            .collect::<Result<_, TableError>>()?,
                    ),
                };
                let id = self.spec.id.as_ref().map(at).transpose()?;
                Source::Batches {
                    batches,
                    pending: None,
                    state,
                    id,
                    schema,
                }
            }
        };
        Ok(Reader {
            input: self.clone(),
            source,
            rows: 0,
        })
    }

    fn io(&self, what: &'static str, source: std::io::Error) -> TableError {
        TableError::Io {
            path: self.path.clone(),
            what,
            source,
        }
    }

    fn open_file(&self) -> Result<File, TableError> {
        File::open(&self.path).map_err(|e| self.io("read", e))
    }

    fn text<'a>(&self, line: &'a [u8], offset: u64) -> Result<&'a str, TableError> {
        std::str::from_utf8(line).map_err(|e| TableError::NotText {
            path: self.path.clone(),
            offset: offset + e.valid_up_to() as u64,
        })
    }

    fn read_error(&self, e: impl std::fmt::Display) -> TableError {
        TableError::Read {
            path: self.path.clone(),
            format: self.format.name(),
            message: e.to_string(),
        }
    }

    /// The table's schema and its record batches, each at most
    /// [`CHUNK_ROWS`] rows where the format lets the reader choose.
    fn batches(&self, file: File) -> Result<(SchemaRef, Batches), TableError> {
        let bad = |e: &dyn std::fmt::Display| self.read_error(e);
        match self.format {
            Format::Csv | Format::Tsv => {
                let delimiter = if self.format == Format::Tsv {
                    b'\t'
                } else {
                    b','
                };
                let format = arrow_csv::reader::Format::default()
                    .with_header(true)
                    .with_delimiter(delimiter);
                let (inferred, _) = format
                    .infer_schema(BufReader::new(&file), Some(0))
                    .map_err(|e| bad(&e))?;
                // Every column as text, as the file spells it: no number is
                // reparsed, no leading zero lost.
                let fields: Vec<Field> = inferred
                    .fields()
                    .iter()
                    .map(|f| Field::new(f.name(), DataType::Utf8, true))
                    .collect();
                let schema = Arc::new(Schema::new(fields));
                let reader = arrow_csv::ReaderBuilder::new(schema.clone())
                    .with_header(true)
                    .with_delimiter(delimiter)
                    .with_batch_size(CHUNK_ROWS)
                    .build(self.open_file()?)
                    .map_err(|e| bad(&e))?;
                Ok((schema, Box::new(reader)))
            }
            Format::Parquet => {
                let builder =
                    parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
                        .map_err(|e| bad(&e))?;
                let schema = builder.schema().clone();
                let reader = builder
                    .with_batch_size(CHUNK_ROWS)
                    .build()
                    .map_err(|e| bad(&e))?;
                Ok((schema, Box::new(reader)))
            }
            Format::Arrow | Format::ArrowStream => {
                let mut magic = [0u8; 6];
                let is_file = (&file).read_exact(&mut magic).is_ok() && &magic == b"ARROW1";
                let file = self.open_file()?;
                if is_file {
                    let r = arrow_ipc::reader::FileReader::try_new_buffered(file, None)
                        .map_err(|e| bad(&e))?;
                    Ok((r.schema(), Box::new(r)))
                } else {
                    let r = arrow_ipc::reader::StreamReader::try_new_buffered(file, None)
                        .map_err(|e| bad(&e))?;
                    Ok((r.schema(), Box::new(r)))
                }
            }
            Format::Jsonl => Err(bad(&"not a table")),
        }
    }

    /// The rows of a table: Parquet's footer says; other formats are read
    /// through, a batch at a time.
    fn count_rows(&self) -> Result<usize, TableError> {
        if self.format == Format::Parquet {
            let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
                self.open_file()?,
            )
            .map_err(|e| self.read_error(e))?;
            return Ok(builder.metadata().file_metadata().num_rows().max(0) as usize);
        }
        let (_, batches) = self.batches(self.open_file()?)?;
        let mut rows = 0;
        for b in batches {
            rows += b.map_err(|e| self.read_error(e))?.num_rows();
        }
        Ok(rows)
    }
}

type Batches = Box<dyn Iterator<Item = Result<RecordBatch, ArrowError>> + Send>;

/// Where a table row's state is.
enum StateAt {
    Column(usize),
    Columns(Vec<(String, usize)>),
}

enum Source {
    Jsonl {
        file: BufReader<File>,
        /// The last physical line read.
        line: usize,
        /// Its byte offset after it.
        offset: u64,
    },
    Batches {
        batches: Batches,
        /// What is left of a batch larger than a chunk.
        pending: Option<RecordBatch>,
        state: StateAt,
        id: Option<usize>,
        schema: SchemaRef,
    },
}

/// The rows of an [`Input`], a chunk at a time: an iterator of [`Chunk`]s
/// that holds no more than one of them (and one record batch of the file).
pub struct Reader {
    input: Input,
    source: Source,
    /// Table rows handed out so far.
    rows: usize,
}

impl Iterator for Reader {
    type Item = Result<Chunk, TableError>;

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.source {
            Source::Jsonl { .. } => self.next_jsonl().transpose(),
            Source::Batches { .. } => self.next_batch().transpose(),
        }
    }
}

/// Where [`Reader::rows`] keeps the error that ended its rows early.
#[derive(Debug, Clone, Default)]
pub struct Failure(Arc<Mutex<Option<TableError>>>);

impl Failure {
    /// The error that ended the rows, once.
    ///
    /// ```
    /// assert!(toolnexus_table::Failure::default().take().is_none());
    /// ```
    pub fn take(&self) -> Option<TableError> {
        self.0.lock().ok()?.take()
    }
}

impl Reader {
    /// Its rows one at a time, a chunk read ahead at most; an error reading
    /// the file ends them and is kept in the [`Failure`].
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("toolnexus-table-rows-{}.jsonl", std::process::id()));
    /// # std::fs::write(&path, "\"a\"\n{bad\n")?;
    /// let input = toolnexus_table::Input::open(&path, Default::default())?;
    /// let (rows, failure) = input.reader()?.rows();
    /// let rows: Vec<_> = rows.collect();
    /// assert_eq!(rows[0].state, Ok(serde_json::json!("a")));
    /// assert!(rows[1].state.as_ref().unwrap_err().starts_with("line 2: invalid JSON"));
    /// assert!(failure.take().is_none());
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rows(self) -> (impl Iterator<Item = Row> + Send, Failure) {
        let failure = Failure::default();
        let slot = failure.0.clone();
        let rows = self
            .map_while(move |chunk| match chunk {
                Ok(c) => Some(c.rows),
                Err(e) => {
                    if let Ok(mut s) = slot.lock() {
                        *s = Some(e);
                    }
                    None
                }
            })
            .flatten();
        (rows, failure)
    }

    fn next_jsonl(&mut self) -> Result<Option<Chunk>, TableError> {
        let Source::Jsonl { file, line, offset } = &mut self.source else {
            return Ok(None);
        };
        let input = &self.input;
        let (mut rows, mut texts) = (Vec::new(), Vec::new());
        let mut buf = Vec::new();
        while rows.len() < CHUNK_ROWS {
            buf.clear();
            let got = file
                .read_until(b'\n', &mut buf)
                .map_err(|e| input.io("read", e))?;
            if got == 0 {
                break;
            }
            *line += 1;
            let text = input.text(&buf, *offset)?;
            *offset += got as u64;
            let text = text.strip_suffix('\n').unwrap_or(text);
            let text = text.strip_suffix('\r').unwrap_or(text);
            if text.trim().is_empty() {
                continue;
            }
            rows.push(jsonl_row(&input.spec, *line, text));
            texts.push(text.to_string());
        }
        if rows.is_empty() {
            return Ok(None);
        }
        let mut fields = vec![Field::new("line", DataType::Int64, false)];
        let mut columns: Vec<ArrayRef> = vec![Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|r| r.n as i64),
        ))];
        if input.spec.id.is_some() {
            fields.push(Field::new("id", DataType::Utf8, true));
            columns.push(Arc::new(StringArray::from_iter(
                rows.iter().map(|r| r.id.as_ref().map(id_text)),
            )));
        }
        fields.push(Field::new("state", DataType::Utf8, false));
        columns.push(Arc::new(StringArray::from_iter_values(texts)));
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
            .map_err(|e| input.read_error(e))?;
        Ok(Some(Chunk { rows, batch }))
    }

    fn next_batch(&mut self) -> Result<Option<Chunk>, TableError> {
        let Source::Batches {
            batches,
            pending,
            state,
            id,
            schema,
        } = &mut self.source
        else {
            return Ok(None);
        };
        let batch = loop {
            let b = match pending.take() {
                Some(b) => b,
                None => match batches.next() {
                    Some(b) => b.map_err(|e| self.input.read_error(e))?,
                    None => return Ok(None),
                },
            };
            if b.num_rows() > CHUNK_ROWS {
                *pending = Some(b.slice(CHUNK_ROWS, b.num_rows() - CHUNK_ROWS));
                break b.slice(0, CHUNK_ROWS);
            }
            if b.num_rows() > 0 {
                break b;
            }
        };
        let mut rows = Vec::with_capacity(batch.num_rows());
        for i in 0..batch.num_rows() {
            self.rows += 1;
            let n = self.rows;
            let state = match state {
                StateAt::Column(c) => {
                    let column = batch.column(*c);
                    if column.is_null(i) {
                        Err(format!(
                            "row {n}: column {:?} is null, not a state",
                            schema.field(*c).name()
                        ))
                    } else {
                        Ok(state_of(cell(column.as_ref(), i)))
                    }
                }
                StateAt::Columns(cs) => Ok(Value::Object(
                    cs.iter()
                        .map(|(name, c)| (name.clone(), cell(batch.column(*c).as_ref(), i)))
                        .collect(),
                )),
            };
            let id = id.map(|c| cell(batch.column(c).as_ref(), i));
            rows.push(Row { n, id, state });
        }
        Ok(Some(Chunk { rows, batch }))
    }
}

/// An id as a table cell: a string as itself, any other value as JSON.
fn id_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// Line `n` of a JSONL file as a row: the line is the state, or with
/// columns named, an object whose fields make and name it.
fn jsonl_row(spec: &StateSpec, n: usize, text: &str) -> Row {
    let parsed = parse_line(n, text);
    if spec.is_whole() && spec.id.is_none() {
        return Row {
            n,
            id: None,
            state: parsed,
        };
    }
    let record = match parsed {
        Ok(Value::Object(o)) => o,
        Ok(_) if spec.is_whole() => {
            return Row {
                n,
                id: None,
                state: parsed,
            };
        }
        Ok(v) => {
            return Row {
                n,
                id: None,
                state: Err(format!(
                    "line {n}: a {} is not an object, so it has no field {:?}",
                    toolnexus::classifier::json_kind(&v),
                    spec.column
                        .as_ref()
                        .or(spec.columns.first())
                        .map_or("", |s| s)
                )),
            };
        }
        Err(e) => {
            return Row {
                n,
                id: None,
                state: Err(e),
            };
        }
    };
    let field = |name: &String| {
        record
            .get(name)
            .cloned()
            .ok_or_else(|| format!("line {n}: no field {name:?}"))
    };
    let id = spec.id.as_ref().and_then(|c| record.get(c).cloned());
    let state = match (&spec.column, &spec.columns[..]) {
        (Some(c), _) => field(c).and_then(|v| match v {
            Value::Null => Err(format!("line {n}: field {c:?} is null, not a state")),
            v => Ok(state_of(v)),
        }),
        (None, []) => Ok(Value::Object(record.clone())),
        (None, cs) => cs
            .iter()
            .map(|c| Ok((c.clone(), field(c)?)))
            .collect::<Result<Map<_, _>, String>>()
            .map(Value::Object),
    };
    Row { n, id, state }
}
