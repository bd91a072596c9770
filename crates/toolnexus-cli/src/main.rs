//! `toolnexus`: the command line of the toolnexus library.
//!
//! A thin binary: [`args`] parses, [`commands`] validates the arguments into
//! library options and calls the library, and `main` maps the outcome to an exit
//! code. Every error is printed as one line on stderr, `toolnexus: error: …`,
//! naming the flag and file involved.
//!
//! Exit codes (also shown by `toolnexus --help`):
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | unexpected internal error |
//! | 2 | usage or bad input: unknown flag or style, missing required flag, an input file missing or unreadable, invalid JSON (with line and column), invalid questions, an unreadable tape, an `--out` file that is not a batch result file |
//! | 3 | evaluation failed (HTTP error, timeout, replay miss, incoherent answer), or a batch / `tape record` finished with at least one failed line |
//! | 4 | I/O failure: writing the `--out` file or a tape file (a full disk is named), a `--cache` file that could not be opened, read or written (reported at the end of the run), or binding `--addr` |
//! | 5 | nothing to judge: no question of the thresholds file matched the run (`assess check`) |
//! | 130 | interrupted by Ctrl-C or SIGTERM (a batch, `assess run` or `tape record` resumes when rerun with the same arguments) |
//! | 141 | standard output or standard error closed by its reader (`\| head`): the command stops quietly, as a process ended by SIGPIPE does |
//!
//! API keys are read only from the environment variable named by `--api-key-env`
//! (or the backend preset's) and are never printed.

use std::process::ExitCode;

use clap::Parser as _;

mod args;
mod commands;
mod demo;
mod exit;
mod input;
mod render;
mod style;

use exit::Exit;

fn main() -> ExitCode {
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_error(e),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("toolnexus: error: cannot start the async runtime: {e}");
            return Exit::Internal.into();
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(code) => code.into(),
        Err(e) => {
            eprintln!("{}", exit::render(&e));
            exit::exit_of(&e).into()
        }
    }
}

/// Help and version go to stdout with exit 0; a usage error is one line on
/// stderr with exit 2.
fn parse_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                Exit::Usage.into()
            } else {
                Exit::Success.into()
            }
        }
        ErrorKind::MissingRequiredArgument => {
            use clap::error::{ContextKind, ContextValue};
            let missing = match e.get(ContextKind::InvalidArg) {
                Some(ContextValue::Strings(v)) => v.join(", "),
                Some(ContextValue::String(s)) => s.clone(),
                _ => "an argument".to_string(),
            };
            eprintln!("toolnexus: error: missing required {missing} (see toolnexus --help)");
            Exit::Usage.into()
        }
        _ => {
            let text = e.render().to_string();
            let first = text
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("toolnexus: error: {first} (see toolnexus --help)");
            Exit::Usage.into()
        }
    }
}
