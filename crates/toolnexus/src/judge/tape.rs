//! [`Tape`]: record a live classifier's decisions by call name, save them as a
//! versioned JSON file, load them and replay them offline. The file format is
//! documented in the [module docs](crate::judge#the-tape-file-format).
//!
//! The pieces, each standing only on those listed before it: `error`
//! ([`TapeError`]), `format` (entries, outcomes, the key an entry is stored
//! under, the pretty canonical writer), `diagnose` (what a miss says: the
//! nearest recording and the first path that differs), `store` (the [`Tape`]
//! itself, saved and loaded strictly), `record` (the recording classifier),
//! `journal` (a run's recordings kept on disk until its tape is saved) and
//! `replay` (the match modes and the replaying classifier). This file only
//! names them.

mod diagnose;
mod error;
mod format;
mod journal;
mod record;
mod replay;
mod store;

pub use error::{TapeError, TapeErrorKind};
pub use format::{TAPE_FORMAT, TAPE_VERSION, TapeEntry, TapeOutcome, write_atomic};
pub use journal::{Folded, JOURNAL_FORMAT, Journal, JournalError};
pub use replay::TapeMatch;
pub use store::Tape;

#[cfg(test)]
mod tests;
