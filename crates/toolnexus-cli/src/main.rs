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
//! | 1 | unexpected internal error; `lint`: findings that fail the check |
//! | 2 | usage or bad input: unknown flag or style, missing required flag, an input file missing or unreadable, invalid JSON (with line and column), invalid questions, an unreadable tape, an `--out` file that is not this batch's out file (another program's, other inputs', or locked by another batch), a tape journal that is not this tape's, an output that is one of the command's inputs, a bad labelled example or run file |
//! | 3 | evaluation failed (HTTP error, timeout, replay miss, incoherent answer), or a batch out file holds an error line (also when nothing was left to do), or `tape record` finished with a failed call, or an assess gate or check found a regression or drift, or `assess drift` went over a gate, or `probe` found a broken encoding or could measure nothing, or `guard test` let a deny call through |
//! | 4 | I/O failure: writing the `--out` file or a tape file (a full disk is named), a `--cache` file that could not be opened, read or written (reported at the end of the run), or binding `--addr` |
//! | 5 | nothing to judge: no question of the thresholds file matched the run (`assess check`) |
//! | 130 | interrupted by Ctrl-C or SIGTERM (a batch, `assess run` or `tape record` resumes when rerun with the same arguments) |
//! | 141 | standard output or standard error closed by its reader (`\| head`): a filter stops quietly, as a process ended by SIGPIPE does; a command whose work is a side effect (serve, batch, tape record, assess run, distill, model fetch) drops its status lines and finishes the work |
//!
//! API keys are read only from the environment variable named by `--api-key-env`
//! (or the backend preset's) and are never printed.

use std::process::ExitCode;

#[macro_use]
mod out;

mod args;
mod caps;
mod commands;
mod demo;
mod exit;
mod input;
mod otel;
mod out_file;
mod render;
mod signals;
mod spend;
mod stdio;
mod style;
mod warnings;

use exit::Exit;

fn main() -> ExitCode {
    stdio::reopen_closed();
    let cli = match args::Cli::parse_args() {
        Ok(cli) => cli,
        Err(e) => return parse_error(e),
    };
    // A filter stops quietly when its reader goes away (`| head`), as Unix
    // filters do. A command whose work is a side effect (serve, batch, tape
    // record, assess run, distill, model fetch) keeps going: its status lines
    // are written with `say!`/`tell!`, which drop what a closed stream refuses.
    if !cli.command.outlives_its_reader() {
        stdio::default_sigpipe();
    }
    stdio::panic_hook();
    warnings::install(cli.quiet);
    // Before the runtime and after it: the export's own threads send what the
    // calls queue, and dropping the guard sends the rest (a bounded wait).
    let otel = otel::start(&cli.otel, &cli.command);
    // The hook answers one call and exits: no worker threads to start. A judge
    // runs on the blocking pool either way, so the budget's timer still fires.
    let mut runtime = match &cli.command {
        args::Command::Guard(g) if g.command.is_none() => {
            tokio::runtime::Builder::new_current_thread()
        }
        _ => tokio::runtime::Builder::new_multi_thread(),
    };
    let runtime = match runtime.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tell!("toolnexus: error: cannot start the async runtime: {e}");
            return Exit::Internal.into();
        }
    };
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        runtime.block_on(commands::run(cli))
    }));
    // The command is done and has said so. Work it abandoned (a forward pass
    // past a time budget, which runs on a blocking thread to its end) is not
    // waited for: dropping the runtime would, and a hook must exit once it
    // has answered. Everything a command writes, it awaits before returning.
    runtime.shutdown_background();
    drop(otel);
    let code = match ran {
        Ok(Ok(code)) => code,
        Ok(Err(e)) => {
            tell!("{}", exit::render(&e));
            exit::exit_of(&e)
        }
        // The hook has printed the one line; no backtrace, no exit 101.
        Err(_) => Exit::Internal,
    };
    // A cache that failed is not silent: the run's results stand, the exit says so.
    let failures = warnings::cache_failures();
    if failures > 0 && code == Exit::Success {
        tell!(
            "toolnexus: error: the cache failed {failures} time{} (see the warnings above); \
             those decisions were asked of the style and not stored",
            if failures == 1 { "" } else { "s" }
        );
        return Exit::Io.into();
    }
    code.into()
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
            tell!("toolnexus: error: missing required {missing} (see toolnexus --help)");
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
            tell!("toolnexus: error: {first} (see toolnexus --help)");
            Exit::Usage.into()
        }
    }
}
