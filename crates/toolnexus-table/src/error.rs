//! What can go wrong reading a states table or writing a result table. Every
//! error names the file as it was given; one about a row names the row (or
//! the line, for JSONL) and the column.

use std::path::PathBuf;

/// A failure reading states or writing results.
///
/// ```
/// use toolnexus_table::TableError;
/// let e = TableError::NoColumn {
///     path: "states.csv".into(),
///     column: "txt".into(),
///     columns: vec!["id".into(), "text".into()],
/// };
/// assert_eq!(e.to_string(), "states.csv: no column \"txt\" (its columns: \"id\", \"text\")");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TableError {
    /// A file operation failed.
    #[error("{}: cannot {what}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done (`read`, `open`, `write`, `rename`).
        what: &'static str,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The path is a directory.
    #[error("{}: is a directory, not a file", .path.display())]
    Directory {
        /// The path.
        path: PathBuf,
    },
    /// A JSONL file that is not UTF-8 text.
    #[error("{}: not UTF-8 text (an invalid byte at offset {offset})", .path.display())]
    NotText {
        /// The file.
        path: PathBuf,
        /// The byte offset of the first invalid byte.
        offset: u64,
    },
    /// A file with no state in it.
    #[error("{}: no state in it ({why})", .path.display())]
    Empty {
        /// The file.
        path: PathBuf,
        /// Why: an empty file, blank lines only, a table without rows.
        why: &'static str,
    },
    /// A JSONL line that is a labelled example, not a state: sent whole, its
    /// gold answers would reach the judge as part of the state.
    #[error(
        "{} line {line}: this is a labelled example ({keys}), not a state; \
         each line is sent whole as the state, its gold answers included: \
         give the states alone, or pass this file to `assess run --examples`",
        .path.display()
    )]
    Labelled {
        /// The file.
        path: PathBuf,
        /// The line (from 1).
        line: usize,
        /// Its keys, quoted.
        keys: String,
    },
    /// A column named by `--state-column`, `--state-columns` or `--id-column`
    /// that the table does not have.
    #[error("{}: no column {column:?} (its columns: {})", .path.display(), quoted(.columns))]
    NoColumn {
        /// The file.
        path: PathBuf,
        /// The column asked for.
        column: String,
        /// The columns it has.
        columns: Vec<String>,
    },
    /// The table's own reader refused it (a CSV row with too many fields, a
    /// truncated Parquet or Arrow file).
    #[error("{}: cannot read it as {format}: {message}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// `CSV`, `Parquet`, …
        format: &'static str,
        /// What the reader said.
        message: String,
    },
    /// The result table could not be written (a column type the format
    /// cannot hold, a full disk).
    #[error("{}: cannot write it as {format}: {message}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// `CSV`, `Parquet`, …
        format: &'static str,
        /// What the writer said.
        message: String,
    },
    /// A table out file that exists without its journal.
    #[error(
        "{}: exists without its journal {} (the results a table is written from); left untouched: choose another --out",
        .path.display(), .journal.display()
    )]
    NoJournal {
        /// The table.
        path: PathBuf,
        /// The journal it lacks.
        journal: PathBuf,
    },
    /// The journal of a table run (its JSONL out file) holds a line that is
    /// not a result line.
    #[error("{} line {at}: not a batch result line ({message})", .path.display())]
    Journal {
        /// The journal.
        path: PathBuf,
        /// Its line (from 1).
        at: usize,
        /// What is wrong.
        message: String,
    },
}

fn quoted(columns: &[String]) -> String {
    columns
        .iter()
        .map(|c| format!("{c:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}
