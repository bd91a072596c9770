//! The batch out file's refusals and notes as the command line says them:
//! the library ([`toolnexus::assess::out`]) names what went wrong, this leaf
//! adds the flags to change it (`--out`, `--restart`, `--states`). Shared by
//! `batch` and `batch --estimate`, so no command imports another for it.

use toolnexus::assess::out::{Change, Note, OutError, Plan};

use crate::exit;

/// Who is reading the out file: a run refuses one that answers other
/// inputs; an estimate says a run would.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// `batch`.
    Run,
    /// `batch --estimate`.
    Estimate,
}

/// A change as `--out` names it: the states file is the `--states` one.
fn change(c: &Change) -> String {
    let text = c.to_string();
    match c {
        Change::States { .. } => text.replacen("the states file", "the --states file", 1),
        _ => text,
    }
}

/// The error a refusal of `--out` exits with (2 for what the file holds or
/// how it was named, 4 for the file system's failures), in one line.
pub fn error(e: OutError, plan: Plan, reader: Reader) -> anyhow::Error {
    match &e {
        OutError::Stream { path } => {
            let flag = if plan.restart {
                "--restart"
            } else {
                "--rerun-errors"
            };
            exit::usage(format!(
                "{flag}: --out {} is a stream, not a file a run can resume or rewrite",
                path.display()
            ))
        }
        OutError::Busy { .. } => exit::usage(format!(
            "--out {e}; left untouched: wait for that run to end, or choose another --out"
        )),
        OutError::Legacy { .. }
        | OutError::Foreign { .. }
        | OutError::OtherFile { .. }
        | OutError::Version { .. }
        | OutError::Incomplete { .. } => {
            exit::usage(format!("--out {e}; left untouched: choose another --out"))
        }
        OutError::Changed { path, changes } => {
            let said: Vec<String> = changes.iter().map(change).collect();
            let then = match reader {
                Reader::Run => {
                    "left untouched: rerun with --restart to start it over, or choose another --out"
                }
                Reader::Estimate => "a run would refuse it (--restart starts it over)",
            };
            exit::usage(format!(
                "--out {}: answers other inputs: {}; {then}",
                path.display(),
                said.join("; ")
            ))
        }
        OutError::BadLine { .. } => exit::usage(format!("--out {e}; left untouched")),
        OutError::BeyondStates {
            path,
            at,
            line,
            last_line,
        } => exit::usage(format!(
            "--out {}: line {at} answers input line {line}, but --states has {last_line} lines; left untouched",
            path.display()
        )),
        _ if e.is_io() => exit::io(format!("--out {e}")),
        _ => exit::usage(format!("--out {e}")),
    }
}

/// What `batch` says on stderr about what opening its out file did.
pub fn note(n: &Note, shown: &str) -> String {
    match n {
        Note::TornHeader => format!("batch: {shown} held only a torn header line; started over"),
        Note::NoStack => format!(
            "batch: {shown} was written before out files recorded what answers beneath the style (calibration, a cascade, a tape's contents); resuming without checking it"
        ),
        Note::NoLock(e) => format!(
            "batch: warning: --out {shown}: this file system cannot lock it ({e}); do not run two batches on it at once"
        ),
        _ => format!("batch: {shown}: {n:?}"),
    }
}
