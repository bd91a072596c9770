//! Exit codes and the one error type that carries them.
//!
//! Commands return `anyhow::Result`; an error built here says which exit code it
//! means. Anything else that escapes is an internal error (exit 1).

use std::fmt;
use std::process::ExitCode;

/// The documented exit codes (see `main.rs` and `toolnexus --help`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything worked.
    Success,
    /// An unexpected internal error.
    Internal,
    /// `toolnexus lint` found what fails the check (the same status as an
    /// internal error, as linters use 1 for findings).
    Findings,
    /// Usage or bad input: the user must fix the command or an input file.
    Usage,
    /// An evaluation failed (or some lines of a batch did).
    Eval,
    /// Writing output failed, a cache could not be opened, read or written, or
    /// the server could not bind.
    Io,
    /// Nothing to judge: no question of a thresholds file matched the run
    /// (`assess check`).
    NoMatch,
    /// A `--max-cost`, `--max-tokens` or `--max-time` cap was reached: what
    /// finished is written, the rest was not started (rerun to resume).
    CapReached,
    /// Stopped by Ctrl-C or SIGTERM.
    Interrupted,
    /// Standard output or standard error was closed by its reader (`| head`):
    /// the command stops quietly, as a process ended by SIGPIPE does.
    ClosedOutput,
}

impl Exit {
    /// The process exit status.
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Internal | Exit::Findings => 1,
            Exit::Usage => 2,
            Exit::Eval => 3,
            Exit::Io => 4,
            Exit::NoMatch => 5,
            Exit::CapReached => 6,
            Exit::Interrupted => 130,
            Exit::ClosedOutput => 141,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e.code())
    }
}

/// An error that knows its exit code. Its message is one line.
#[derive(Debug)]
pub struct Failure {
    exit: Exit,
    message: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

fn one_line(text: impl fmt::Display) -> String {
    text.to_string()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Bad usage or bad input (exit 2).
pub fn usage(text: impl fmt::Display) -> anyhow::Error {
    anyhow::Error::new(Failure {
        exit: Exit::Usage,
        message: one_line(text),
    })
}

/// A failed evaluation (exit 3).
pub fn eval(text: impl fmt::Display) -> anyhow::Error {
    anyhow::Error::new(Failure {
        exit: Exit::Eval,
        message: one_line(text),
    })
}

/// A failed write or bind (exit 4).
pub fn io(text: impl fmt::Display) -> anyhow::Error {
    anyhow::Error::new(Failure {
        exit: Exit::Io,
        message: one_line(text),
    })
}

/// Nothing matched: no question of a thresholds file is in the run (exit 5).
pub fn no_match(text: impl fmt::Display) -> anyhow::Error {
    anyhow::Error::new(Failure {
        exit: Exit::NoMatch,
        message: one_line(text),
    })
}

/// The exit code an error means: the first [`Failure`] in its chain, else internal.
pub fn exit_of(e: &anyhow::Error) -> Exit {
    e.chain()
        .find_map(|c| c.downcast_ref::<Failure>())
        .map_or(Exit::Internal, |f| f.exit)
}

/// The error as the one line printed on stderr.
pub fn render(e: &anyhow::Error) -> String {
    one_line(format!("toolnexus: error: {e:#}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exit_code_survives_context() {
        let e = usage("--state: bad").context("while reading input");
        assert_eq!(exit_of(&e), Exit::Usage);
        assert_eq!(exit_of(&anyhow::anyhow!("boom")), Exit::Internal);
        assert_eq!(
            render(&io("cannot write\nout.jsonl")),
            "toolnexus: error: cannot write out.jsonl"
        );
    }

    #[test]
    fn codes_are_the_documented_ones() {
        let codes: Vec<u8> = [
            Exit::Success,
            Exit::Internal,
            Exit::Usage,
            Exit::Eval,
            Exit::Io,
            Exit::NoMatch,
            Exit::CapReached,
            Exit::Interrupted,
            Exit::ClosedOutput,
        ]
        .iter()
        .map(|e| e.code())
        .collect();
        assert_eq!(codes, [0, 1, 2, 3, 4, 5, 6, 130, 141]);
        for c in ["0 ", "1 ", "2 ", "3 ", "4 ", "5 ", "6 ", "130 ", "141 "] {
            assert!(
                crate::args::AFTER_HELP.contains(&format!("  {c}")),
                "{c} is documented"
            );
        }
    }
}
