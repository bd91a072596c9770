//! The command line, as clap derive types. Parsing only: every value here is
//! checked and turned into library options in [`crate::style`] and the commands.

use clap::{Parser, Subcommand};

mod agents;
mod assess;
mod observe;
mod run;
mod style;

pub use agents::*;
pub use assess::*;
pub use observe::*;
pub use run::*;
pub use style::*;

/// Shown after `toolnexus --help`; the same table is in `main.rs`.
pub const AFTER_HELP: &str = "\
Exit codes:
  0    success
  1    unexpected internal error; lint: findings that fail the check
  2    usage or bad input: unknown flag or style, missing required flag, input
       file missing or unreadable, invalid JSON (with line and column), invalid
       questions, unreadable tape, an --out file that is not this batch's out
       file (another program's, other inputs', or locked by another batch), a
       tape journal that is not this tape's or a tape another tape record is
       recording into, an output that is one of the command's inputs, a bad
       labelled example or run file (with file:line:col)
  3    evaluation failed (HTTP error, timeout, replay miss, incoherent answer),
       or a batch out file holds an error line (also when nothing was left to
       do), or tape record finished with a failed call, or an assess gate
       (--min/--max) or check found a regression or drift, or assess drift
       went over --max-flips/--max-shift, or probe found a broken encoding
       or could measure nothing, or guard test let a deny call through
  4    I/O failure: writing the --out file or a tape file (a full disk is
       named), a --cache file that could not be opened, read or written
       (reported at the end of the run), or binding --addr
  5    nothing to judge: no question of the thresholds file matched the run
       (assess check)
  6    a --max-cost, --max-tokens or --max-time cap was reached (batch,
       assess run, tape record): what finished is written, nothing else was
       started; the message names the cap, what was spent and the command
       that resumes the run
  130  interrupted by Ctrl-C or SIGTERM (a batch, assess run or tape record
       resumes when rerun with the same arguments)
  141  standard output or standard error closed by its reader (`| head`):
       the command stops quietly, as a process ended by SIGPIPE does. A
       command whose work is a side effect (serve, batch, tape record,
       assess run, distill, model fetch) drops its status lines and finishes
       the work instead (batch --out - is a filter: it stops)

API keys are read only from the environment variable named by --api-key-env
(default TYPESAFE_API_KEY, or OPENROUTER_API_KEY with --backend openrouter) and
are never printed. With no key set, `toolnexus eval` replays the built-in demo
tape offline and says so.";

/// Evaluate typed questions against a JSON state with a judgment model, run
/// resumable JSONL batches, record and replay tapes, or serve any style as a
/// System One endpoint.
#[derive(Debug, Parser)]
#[command(name = "toolnexus", version, after_help = AFTER_HELP)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Print no warnings (option descriptions too alike, answers dropped, a
    /// cache that could not be read or written); errors still print.
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
    /// OpenTelemetry export of the commands that evaluate.
    #[command(flatten)]
    pub otel: OtelArgs,
}

impl Cli {
    /// The process's arguments parsed. A negative number after a flag that
    /// takes a value is that value, so the flag's own check says what it
    /// wants (`--concurrency -2`: `invalid value '-2' for '--concurrency
    /// <N>'`), where clap alone reads it as an unknown flag.
    pub fn parse_args() -> Result<Cli, clap::Error> {
        Cli::parse_from_args(std::env::args_os())
    }

    /// [`Cli::parse_args`] on the arguments given (the program name first).
    fn parse_from_args<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::{CommandFactory as _, FromArgMatches as _};
        let cmd = with_style_help(negatives_are_values(Cli::command()));
        let matches = cmd.try_get_matches_from(args)?;
        Cli::from_arg_matches(&matches)
    }
}

/// `cmd` and its subcommands with every option that takes a value accepting
/// a negative number as one.
/// Every `--style` with no help of its own gets the one written from the
/// engine registry: a new engine shows up there by registering.
fn with_style_help(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|a| {
        if a.get_id() == "style" && a.get_help().is_none() {
            a.help(style_help())
        } else {
            a
        }
    })
    .mut_subcommands(with_style_help)
}

fn negatives_are_values(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|a| {
        if a.get_action().takes_values() {
            a.allow_negative_numbers(true)
        } else {
            a
        }
    })
    .mut_subcommands(negatives_are_values)
}

impl Command {
    /// Whether the command's work is a side effect (a server, an out file, a
    /// tape, a run file, a student, a model) that must outlive a closed stdout
    /// or stderr: its status lines are then dropped, the work goes on. Other
    /// commands are filters and stop quietly, as on SIGPIPE.
    pub fn outlives_its_reader(&self) -> bool {
        match self {
            Command::Serve(_)
            | Command::Batch(_)
            | Command::Distill(_)
            | Command::Model(_)
            | Command::Tape(TapeCommand::Record(_)) => true,
            // A report that also writes files (--report, --junit) writes them
            // even when its reader has gone (`… --junit gates.xml | head`).
            Command::Assess(a) => match &a.command {
                Some(AssessCommand::Run(_)) => true,
                Some(AssessCommand::Report(r)) => r.report.is_some() || r.junit.is_some(),
                _ => false,
            },
            Command::Cost(CostCommand::Fit(f)) => f.out.is_some(),
            // The MCP server ends on its own when the client goes (stdin closed,
            // or a write that fails), with exit 0, never by SIGPIPE.
            Command::Mcp(a) => a.command.is_none(),
            _ => false,
        }
    }
}

impl Command {
    /// Whether the command evaluates (eval, batch, serve, mcp, guard, assess
    /// run): the ones `--otel` and the `OTEL_*` variables export.
    pub fn evaluates(&self) -> bool {
        match self {
            Command::Eval(_) | Command::Batch(_) | Command::Serve(_) | Command::Guard(_) => true,
            Command::Mcp(a) => a.command.is_none(),
            Command::Assess(a) => matches!(a.command, Some(AssessCommand::Run(_))),
            _ => false,
        }
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Evaluate a questions file against one state and print the decision.
    ///
    /// With no flags and no API key set, replays the built-in demo tape offline.
    Eval(EvalArgs),
    /// Evaluate a questions file against every state of a JSONL, CSV, Parquet or Arrow file, resumably.
    Batch(Box<BatchArgs>),
    /// Record, replay and inspect tapes of decisions.
    #[command(subcommand)]
    Tape(TapeCommand),
    /// Serve a style as a System One endpoint (POST /v1/systemone, GET /v1/models).
    Serve(ServeArgs),
    /// Measure judgment quality against labelled examples: run, report, gate,
    /// pick thresholds, calibrate, compare and check.
    ///
    /// With no subcommand, runs the built-in demo set offline on recorded decisions.
    Assess(AssessArgs),
    /// Inspect a decision cache file: stats, clear, export.
    #[command(subcommand)]
    Cache(CacheCommand),
    /// Train a student on a teacher's decisions (a tape or labelled examples),
    /// on the embedded model; report its agreement and the cascade threshold.
    Distill(DistillArgs),
    /// Get the embedded model (all-MiniLM-L6-v2) for --style local/student.
    #[command(subcommand)]
    Model(ModelCommand),
    /// Judge one Claude Code PreToolUse hook input (stdin) by a guard policy and
    /// answer per the hook protocol (stdout); check a policy; install the hook.
    Guard(GuardArgs),
    /// Serve judgments as MCP tools over stdio (noul, choice, score, evaluate,
    /// guard); install the server into an agent's configuration.
    Mcp(McpArgs),
    /// Check question files for encodings judgment models misread, before any call.
    ///
    /// Empty or alike option descriptions, numbers to compare, negated or
    /// double statements, choices with no way out, disordered score levels,
    /// instructions that ask two things, token budgets. No model is asked (the
    /// embedded model, when it is there, only compares option descriptions).
    Lint(LintArgs),
    /// Ask the backend variants of the questions over sample states, without
    /// labels: are the option descriptions read (shuffle), does the option
    /// order move the answer (order), is a negated noul answered as the
    /// opposite (polarity), how far do identical requests differ (repeat).
    Probe(ProbeArgs),
    /// Cost before it is spent: fit the token estimator on real runs
    /// (`cost fit`); `batch --estimate` and `assess run --estimate` use it.
    #[command(subcommand)]
    Cost(CostCommand),
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use std::time::Duration;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
        negatives_are_values(Cli::command()).debug_assert();
    }

    #[test]
    fn a_negative_number_is_a_flags_value_and_its_check_names_it() {
        let batch = [
            "toolnexus",
            "batch",
            "--questions",
            "{}",
            "--states",
            "s.jsonl",
        ];
        for (flag, value, want) in [
            (
                "--concurrency",
                "-2",
                "invalid value '-2' for '--concurrency <N>'",
            ),
            (
                "--max-cost",
                "-1",
                "\"-1\" is not an amount of US dollars above zero",
            ),
        ] {
            let args = batch.iter().copied().chain([flag, value]);
            let e = Cli::parse_from_args(args).unwrap_err().to_string();
            assert!(e.contains(want), "{flag} {value}: {e}");
        }
        // A flag after an option is still a flag.
        let args = batch.iter().copied().chain(["--out", "o.jsonl", "-q"]);
        let cli = Cli::parse_from_args(args).unwrap();
        assert!(cli.quiet);
    }

    #[test]
    fn match_modes_parse_and_a_bad_one_names_the_three() {
        let Command::Eval(a) = Cli::try_parse_from(["toolnexus", "eval", "--match", "questions"])
            .unwrap()
            .command
        else {
            panic!("not eval");
        };
        assert_eq!(
            a.style.tape_match,
            Some(toolnexus::judge::TapeMatch::Questions)
        );
        let e = Cli::try_parse_from(["toolnexus", "tape", "replay", "--match", "vcr"]).unwrap_err();
        let first = e.to_string();
        let first = first.lines().next().unwrap();
        assert!(
            first.contains("unknown match mode \"vcr\" (want exact|questions|sequence)"),
            "{first}"
        );
    }

    #[test]
    fn an_unknown_style_is_named_on_one_line() {
        let e = Cli::try_parse_from(["toolnexus", "eval", "--style", "chat"]).unwrap_err();
        let first = e.to_string();
        let first = first.lines().next().unwrap();
        assert!(
            first.contains("unknown style \"chat\" (want systemone|llm|static|tape|local|student|laya|decisiontune)"),
            "{first}"
        );
    }

    #[test]
    fn serve_times_take_a_unit_and_refuse_nonsense() {
        assert_eq!(parse_serve_time("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_serve_time("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_serve_time("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_serve_time("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_serve_time("1.5s"), Ok(Duration::from_millis(1500)));
        for bad in ["", "0", "0s", "-1s", "10h", "s", "1e9"] {
            assert!(parse_serve_time(bad).is_err(), "{bad}");
        }
    }
}
