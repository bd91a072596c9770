//! Tables for toolnexus: states read from JSONL, CSV, TSV, Parquet and Arrow
//! IPC (file and stream) in bounded chunks, and results written as tables
//! with SPEC §24's flat result columns.
//!
//! - [`Input`] opens a states file by its extension ([`Format::of`]) with a
//!   [`StateSpec`] (`--state-column`, `--state-columns`, `--id-column`);
//!   [`Input::survey`] reads it once for a run's fingerprint and line count,
//!   [`Input::reader`] hands out [`Chunk`]s of at most [`CHUNK_ROWS`] rows.
//!   Nothing reads a whole file into memory.
//! - [`fields`] and [`columns`](fn@columns) build the flat result columns per question
//!   (what Python's `evaluate_table` returns and `batch` writes).
//! - [`write_table`] writes a run's result table from its JSONL journal
//!   ([`journal_path`]) and its input, read again in chunks: every input
//!   column kept, then the result columns and `error`.

mod columns;
mod error;
mod format;
mod journal;
mod read;
mod value;
mod write;

pub use columns::{Outcome, columns, fields};
pub use error::TableError;
pub use format::Format;
pub use journal::Journal;
pub use read::{CHUNK_ROWS, Chunk, Failure, Input, Reader, Row, StateSpec, Survey};
pub use value::{cell, state_of};
pub use write::{TableWriter, journal_path, results_path, write_table};
