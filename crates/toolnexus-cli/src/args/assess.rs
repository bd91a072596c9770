//! The commands that measure: `assess`, `probe`, `lint` and `cost`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::style::*;

/// `toolnexus cost`.
#[derive(Debug, Subcommand)]
pub enum CostCommand {
    /// Fit the estimator's coefficients (tokens per request, question,
    /// described option, score level and state character) by least squares on
    /// runs' recorded usage.input_tokens, and print the fit's error.
    Fit(CostFitArgs),
}

/// `toolnexus cost fit`.
#[derive(Debug, Clone, Args)]
pub struct CostFitArgs {
    /// Runs with recorded usage: batch out files (written by this version,
    /// whose decision lines record each request's "shape") and assess run files.
    /// Cache hits and calls that recorded no input tokens are left out.
    #[arg(value_name = "RUN", required = true, num_args = 1..)]
    pub runs: Vec<PathBuf>,
    /// Write the fitted estimator here (what --estimator reads).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print the fit as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `toolnexus probe`: encoding probes over sample states.
#[derive(Debug, Clone, Args)]
#[command(after_help = PROBE_AFTER_HELP)]
pub struct ProbeArgs {
    /// Questions: a JSON file (or inline JSON) of key -> wire question.
    #[arg(long, value_name = "FILE|JSON")]
    pub questions: String,
    /// Sample states: one JSON state per line (blank lines are skipped); the
    /// first --max-states are probed.
    #[arg(long, value_name = "FILE")]
    pub states: PathBuf,
    /// The probes to run, comma-separated: shuffle (choice: descriptions moved
    /// across option ids), order (choice: options reversed and rotated),
    /// polarity (noul: the question negated, instructions asked as
    /// "Is the following false? …" and its true/false criteria swapped),
    /// repeat (the same request --repeat times: the noise floor). Score
    /// questions are only repeated; box questions are not probed.
    #[arg(long, value_name = "LIST", value_delimiter = ',',
          default_value = "shuffle,order,polarity,repeat",
          value_parser = ["shuffle", "order", "polarity", "repeat"])]
    pub probes: Vec<String>,
    /// Answers per state for the repeat probe, the first request included.
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(2..=20))]
    pub repeat: u32,
    /// Probe at most this many states (the first ones of --states).
    #[arg(long, value_name = "N", default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_states: u32,
    /// Refuse to start when the run would make more calls than this
    /// (states × variants, printed before anything is sent).
    #[arg(long, value_name = "N", default_value_t = 500,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_calls: u64,
    /// Calls in flight at once.
    #[arg(long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub concurrency: u32,
    /// Seeds the shuffle's permutations and the bootstrap ranges.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Print the report as one JSON object (the call count goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Where decisions come from.
    #[command(flatten)]
    pub style: StyleArgs,
}

/// Shown after `toolnexus probe --help`.
pub(crate) const PROBE_AFTER_HELP: &str = "\
Figures, per question and probe, with a 95% range (Wilson for the shuffle's
share, a bootstrap over states otherwise):
  shuffle   share of states whose pick follows the description (1 is good)
  order     mean total-variation distance between the original distribution
            and the reversed and rotated ones, matched by option id (0 is good)
  polarity  mean |p + p_neg - 1| (0 is good)
  repeat    mean distance between identical requests: the noise floor
Verdicts: ok, sensitive, broken. The tolerance is max(0.05, 2 x the question's
noise floor); order and polarity are ok within it and broken from 0.30; repeat
is ok up to 0.05 and broken from 0.30; the shuffle is broken below 0.50 and ok
within 0.10 of the share of states whose pick never changed under repeat.
A failed call is counted and reported; the states it leaves out are not measured.

Exit codes: 0 no probe found a broken encoding; 2 bad input, or the run would
make more calls than --max-calls; 3 a verdict is broken, or a probe measured no
state because every call it needed failed.";

/// `toolnexus lint`: static checks of question files.
#[derive(Debug, Clone, Args)]
#[command(after_help = LINT_AFTER_HELP)]
pub struct LintArgs {
    /// Question files, each an object of key → question as `--questions` reads
    /// them (`-` reads standard input).
    #[arg(value_name = "FILE", required_unless_present_any = ["list_rules", "explain"])]
    pub files: Vec<PathBuf>,
    /// How to print the findings: text (`FILE:LINE:COL: warning[TNL006]: …`,
    /// one a line, then a summary) or json (one object: findings, skipped
    /// checks, unreadable files, summary).
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
    /// Print every rule (id, severity, name, what goes wrong) and exit.
    #[arg(long, conflicts_with = "explain")]
    pub list_rules: bool,
    /// Print what a rule checks, why, a bad and a good example and the fix
    /// (e.g. `--explain TNL006`), and exit.
    #[arg(long, value_name = "ID")]
    pub explain: Option<String>,
    /// Warnings fail too (exit 1), not only errors.
    #[arg(long)]
    pub strict: bool,
    /// The embedded model's directory, for the near-duplicate check between
    /// option descriptions (default: $TOOLNEXUS_MODEL_DIR, else
    /// ~/.cache/toolnexus/models/all-minilm-l6-v2; fill it with `toolnexus
    /// model fetch`). Without a model that check is skipped, and said so.
    #[arg(long, value_name = "DIR")]
    pub model_dir: Option<PathBuf>,
}

/// Shown after `toolnexus lint --help`.
pub(crate) const LINT_AFTER_HELP: &str = "\
Exit codes: 0 no finding that fails (info findings never fail; warnings fail
only with --strict); 1 an error finding, or a warning with --strict; 2 a file
missing, unreadable or not valid questions (with file:line:column), or an
unknown rule id for --explain.";

/// `toolnexus assess`: a subcommand, or none for the offline demo.
#[derive(Debug, Args)]
pub struct AssessArgs {
    /// What to do (none: the offline demo on the built-in demo set).
    #[command(subcommand)]
    pub command: Option<AssessCommand>,
}

/// The `assess` subcommands. Only `run` calls a backend; the others are pure
/// functions of run files.
#[derive(Debug, Subcommand)]
pub enum AssessCommand {
    /// Ask every labelled example once and append its row to a run file (resumable).
    Run(AssessRunArgs),
    /// Summarise run files: a table, --json, or --report FILE.html; --min/--max gate.
    Report(ReportArgs),
    /// Pick per-question cut-points for a target accuracy or an escalation budget.
    Thresholds(ThresholdsArgs),
    /// Fit calibration maps per question, with cross-validated figures.
    Calibrate(CalibrateArgs),
    /// Compare two runs over the same rows (a model or wording change).
    Compare(CompareArgs),
    /// Check that a thresholds file still holds on a run over new labels.
    Check(CheckArgs),
    /// How far answers moved between two runs or batch out files, or a golden
    /// tape and a live style: flips and shifts per question, no labels needed.
    Drift(DriftArgs),
}

/// `toolnexus assess run`.
#[derive(Debug, Clone, Args)]
pub struct AssessRunArgs {
    /// Questions: a JSON file (or inline JSON) of key -> wire question.
    #[arg(long, value_name = "FILE|JSON")]
    pub questions: String,
    /// Labelled examples: one {"id"?, "state", "labels", "meta"?} per line.
    #[arg(long, value_name = "FILE")]
    pub examples: PathBuf,
    /// The run file: created, or resumed (only ids not yet in it are asked).
    /// Required, except with --estimate (which leaves out the ids already in it).
    #[arg(
        long = "out",
        value_name = "FILE",
        required_unless_present = "estimate"
    )]
    pub out_file: Option<PathBuf>,
    /// `--out`, once the command has checked it was given (empty with --estimate).
    #[arg(skip)]
    pub out: PathBuf,
    /// Examples in flight at once.
    #[arg(long, value_name = "N", default_value_t = 8,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub concurrency: u32,
    /// Ask again the ids whose row in the run file is an error.
    #[arg(long)]
    pub rerun_errors: bool,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
    /// Caps on the run's spend.
    #[command(flatten)]
    pub caps: CapArgs,
    /// Where decisions come from (a tape works: --style tape --tape FILE).
    #[command(flatten)]
    pub style: StyleArgs,
    /// Prices for the cost each row records.
    #[command(flatten)]
    pub prices: PriceArgs,
    /// What the run would cost, sent nothing.
    #[command(flatten)]
    pub estimate: EstimateArgs,
}

/// `toolnexus assess report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Run files; several are shown side by side.
    #[arg(value_name = "RUN.jsonl", required = true, num_args = 1..)]
    pub runs: Vec<PathBuf>,
    /// Print the summary as JSON (one object per run file, an array for several).
    #[arg(long)]
    pub json: bool,
    /// Also write one self-contained HTML page (SVG charts, no external assets).
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
    /// Also report per slice: meta.FIELD, state_len or state_len:N.
    #[arg(long, value_name = "BY")]
    pub slice: Vec<String>,
    /// Fail (exit 3) when KEY.METRIC is below VALUE, e.g. spam.accuracy=0.9.
    /// KEY `gate` is the row gate (accuracy, n). Repeatable.
    #[arg(long = "min", value_name = "KEY.METRIC=VALUE")]
    pub min: Vec<String>,
    /// Fail (exit 3) when KEY.METRIC is above VALUE, e.g. spam.ece=0.05. Repeatable.
    /// KEY `run` is the run's cost and latency: run.cost_per_row and
    /// run.cost_total (US dollars over the answered rows; a cost some row did
    /// not report fails the gate, saying so), run.latency_p50_ms and
    /// run.latency_p95_ms.
    #[arg(long = "max", value_name = "KEY.METRIC=VALUE")]
    pub max: Vec<String>,
    /// Also write the gates as JUnit XML for CI systems: a testsuite per run
    /// file, a testcase per gate, a failure with the figure and the bound for
    /// each gate that does not hold. Written atomically.
    #[arg(long, value_name = "FILE.xml")]
    pub junit: Option<PathBuf>,
    /// The questions the row gate covers (default: every labelled question).
    #[arg(long, value_name = "KEY,KEY", value_delimiter = ',')]
    pub gate: Option<Vec<String>>,
    /// Count abstentions with the bands of a thresholds file.
    #[arg(long, value_name = "FILE")]
    pub thresholds: Option<PathBuf>,
}

/// `toolnexus assess thresholds`.
#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["target_accuracy", "max_escalation"])))]
pub struct ThresholdsArgs {
    /// The run file to pick on.
    #[arg(value_name = "RUN.jsonl")]
    pub run: PathBuf,
    /// Keep as many rows as possible at this accuracy or better, e.g. 0.95.
    #[arg(long, value_name = "A")]
    pub target_accuracy: Option<f64>,
    /// Send at most this share of rows to a person, e.g. 0.2.
    #[arg(long, value_name = "E")]
    pub max_escalation: Option<f64>,
    /// Bootstrap resamples for the out-of-bag estimate.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub resamples: usize,
    /// Seed of the resampling or of the hold-out split.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Pick on the rest and measure on this share of rows instead of bootstrapping.
    #[arg(long, value_name = "SHARE")]
    pub holdout: Option<f64>,
    /// Also pick a row-level gate over these questions.
    #[arg(long, value_name = "KEY,KEY", value_delimiter = ',')]
    pub gate: Option<Vec<String>>,
    /// Write the thresholds file (read by eval/batch --thresholds and the judge).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print the report as JSON (the thresholds file's content).
    #[arg(long)]
    pub json: bool,
}

/// `toolnexus assess calibrate`.
#[derive(Debug, Clone, Args)]
pub struct CalibrateArgs {
    /// The run file to fit on.
    #[arg(value_name = "RUN.jsonl")]
    pub run: PathBuf,
    /// Cross-validation folds.
    #[arg(long, value_name = "K", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(2..=100))]
    pub folds: u32,
    /// Seed of the fold split.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Write the calibration file (read by eval/batch/serve --calibration).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print the calibration file's content as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `toolnexus assess compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The run before the change.
    #[arg(value_name = "A.jsonl")]
    pub a: PathBuf,
    /// The run after it, over the same rows.
    #[arg(value_name = "B.jsonl")]
    pub b: PathBuf,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `toolnexus assess drift`.
#[derive(Debug, Clone, Args)]
#[command(after_help = DRIFT_AFTER_HELP)]
pub struct DriftArgs {
    /// Side A: an assess run file (rows paired by id) or a batch out file
    /// (lines paired by line number: both from the same states file).
    #[arg(
        value_name = "A",
        required_unless_present = "tape",
        conflicts_with = "tape"
    )]
    pub a: Option<PathBuf>,
    /// Side B: a file of the same kind as A.
    #[arg(value_name = "B", required_unless_present = "tape")]
    pub b: Option<PathBuf>,
    /// Fail (exit 3) when a question's flip rate is above this share, e.g. 0.05.
    #[arg(long, value_name = "SHARE", value_parser = parse_unit_share)]
    pub max_flips: Option<f64>,
    /// Fail (exit 3) when a question's mean shift (total-variation distance,
    /// 0 to 1) is above this, e.g. 0.1.
    #[arg(long, value_name = "TVD", value_parser = parse_unit_share)]
    pub max_shift: Option<f64>,
    /// The changes to list, largest shift first.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub show: usize,
    /// Print the drift as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// With --tape GOLDEN.tape.json instead of A and B: every recorded call's
    /// state and questions (of --call only, when given) asked again of the
    /// style the flags name; the tape's decisions are A, the live answers B.
    #[command(flatten)]
    pub style: StyleArgs,
}

/// Shown after `toolnexus assess drift --help`.
pub(crate) const DRIFT_AFTER_HELP: &str = "\
A flip is a changed answer (another choice pick, another score level, a noul
across 0.5); a shift is the total-variation distance between the two answers'
distributions (a noul as p, 1 - p). Run files pair rows by id, batch out files
by line number. No labels are read.

A golden tape instead of A and B: `assess drift --tape GOLDEN.tape.json
--style systemone --model M` asks every recorded call's state and questions
(of --call only, when given) again of the live style; the recordings are A,
the live answers B. The number of calls is printed before any is made.

Exit codes:
  0    no gate broken
  2    bad input: a file that is not a run or batch out file (named with its
       line), A and B of different kinds, or no row on both sides
  3    a question breaks --max-flips or --max-shift";

/// `toolnexus assess check`.
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// A run over new labels.
    #[arg(value_name = "RUN.jsonl")]
    pub run: PathBuf,
    /// The thresholds file to check (from `toolnexus assess thresholds --out`).
    #[arg(long, value_name = "FILE")]
    pub thresholds: PathBuf,
    /// Print the check as JSON.
    #[arg(long)]
    pub json: bool,
}
