//! Which table format a path holds, by its extension.

use std::path::Path;

/// A format states are read from and results written to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// One JSON value per line (`.jsonl`, `.ndjson`, and any extension not
    /// named below, as states files always were).
    Jsonl,
    /// Comma-separated values with a header row (`.csv`).
    Csv,
    /// Tab-separated values with a header row (`.tsv`, `.tab`).
    Tsv,
    /// Apache Parquet (`.parquet`, `.pq`).
    Parquet,
    /// Arrow IPC, the file format (`.arrow`, `.feather`, `.ipc`); read either
    /// way, by the file's magic bytes.
    Arrow,
    /// Arrow IPC, the stream format (`.arrows`).
    ArrowStream,
}

impl Format {
    /// The format a path's extension names (case-insensitive); JSONL for any
    /// other.
    ///
    /// ```
    /// use toolnexus_table::Format;
    /// assert_eq!(Format::of("runs/out.parquet".as_ref()), Format::Parquet);
    /// assert_eq!(Format::of("states.TSV".as_ref()), Format::Tsv);
    /// assert_eq!(Format::of("states.txt".as_ref()), Format::Jsonl);
    /// ```
    pub fn of(path: &Path) -> Format {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        match ext.as_str() {
            "csv" => Format::Csv,
            "tsv" | "tab" => Format::Tsv,
            "parquet" | "pq" => Format::Parquet,
            "arrow" | "feather" | "ipc" => Format::Arrow,
            "arrows" => Format::ArrowStream,
            _ => Format::Jsonl,
        }
    }

    /// Whether it is a table (every format but JSONL): a table out file is
    /// written whole at the end of a run, from its JSONL journal.
    ///
    /// ```
    /// assert!(toolnexus_table::Format::Csv.is_table());
    /// assert!(!toolnexus_table::Format::Jsonl.is_table());
    /// ```
    pub fn is_table(self) -> bool {
        self != Format::Jsonl
    }

    /// Its name in messages: `JSONL`, `CSV`, `TSV`, `Parquet`, `Arrow IPC`,
    /// `Arrow IPC stream`.
    ///
    /// ```
    /// assert_eq!(toolnexus_table::Format::Parquet.name(), "Parquet");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Format::Jsonl => "JSONL",
            Format::Csv => "CSV",
            Format::Tsv => "TSV",
            Format::Parquet => "Parquet",
            Format::Arrow => "Arrow IPC",
            Format::ArrowStream => "Arrow IPC stream",
        }
    }
}
