//! Where decisions come from: the style flags, the caps and the price table
//! shared by the commands that evaluate, and their value parsers.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

/// The style names the command line accepts: the remote and recorded styles,
/// and every engine of `toolnexus-local`'s registry by its own name.
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
    /// An engine that judges on this machine (`local`, `student`, `laya`, …),
    /// as its registry entry names it.
    Engine(&'static str),
}

impl StyleName {
    /// The embedded model, zero-shot.
    pub const LOCAL: StyleName = StyleName::Engine("local");

    /// The spelling on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            StyleName::SystemOne => "systemone",
            StyleName::Llm => "llm",
            StyleName::Static => "static",
            StyleName::Tape => "tape",
            StyleName::Engine(name) => name,
        }
    }
}

pub(crate) fn parse_style(s: &str) -> Result<StyleName, String> {
    let s = s.trim().to_ascii_lowercase();
    match s.as_str() {
        "systemone" => Ok(StyleName::SystemOne),
        "llm" => Ok(StyleName::Llm),
        "static" => Ok(StyleName::Static),
        "tape" => Ok(StyleName::Tape),
        name => match toolnexus_local::Registry::builtin().get(name) {
            Some(engine) => Ok(StyleName::Engine(engine.info.name)),
            None => Err(format!(
                "unknown style {s:?} (want {})",
                toolnexus_stack::style_names().join("|")
            )),
        },
    }
}

/// The `--style` help: the remote and recorded styles, then each engine of the
/// registry with its own summary.
pub fn style_help() -> String {
    let mut text = String::from(
        "Where decisions come from: systemone (a System One model over HTTP), llm (an emulation over a chat model), \
         static or tape (recorded decisions from a tape)",
    );
    for e in toolnexus_local::Registry::builtin().iter() {
        text.push_str(&format!(", {} ({})", e.info.name, e.info.summary));
    }
    text.push_str(
        ". Default: tape when --tape is given, systemone when the API key variable is set, else (eval, serve) \
         the built-in demo tape; other commands then send nothing and exit 2 saying how to get a real answer. \
         laya and decisiontune run the open-weights decision models on this machine from the checkpoint in \
         --model-dir (downloaded by you; nothing here downloads). Proven: they reproduce their reference \
         packages (laya 0.4.15, decision-tune 1.0.0) on tiny random models, every token id and every number \
         within 1e-4. Not proven here: how good the real weights are on your questions; measure that with \
         `toolnexus assess`.",
    );
    text
}

pub(crate) fn parse_backend(s: &str) -> Result<toolnexus::classifier::Backend, String> {
    s.parse()
        .map_err(|e: toolnexus::classifier::ClassifierError| e.detail().to_string())
}

pub(crate) fn parse_match(s: &str) -> Result<toolnexus::judge::TapeMatch, String> {
    s.parse()
        .map_err(|e: toolnexus::classifier::ClassifierError| e.detail().to_string())
}

pub(crate) fn parse_chat_style(s: &str) -> Result<toolnexus::client::Style, String> {
    s.parse()
        .map_err(|e: toolnexus::classifier::ClassifierError| {
            let text = e.to_string();
            text.strip_prefix("client: ").unwrap_or(&text).to_string()
        })
}

/// How to reach a live model: the System One and Llm styles.
#[derive(Debug, Clone, Default, Args)]
pub struct LiveArgs {
    // Its help is written from the engine registry: see `style_help`.
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
    /// What a local engine's encoder multiplies in: f32, bf16 (AVX-512 BF16 or AMX; exit 2 without), or auto.
    #[arg(long, value_name = "f32|bf16|auto", default_value = "f32")]
    pub precision: toolnexus_local::Precision,
    /// A student file (from `toolnexus distill`) for --style student or
    /// --cascade; `builtin:guard` is the guard's built-in student.
    #[arg(long, value_name = "FILE")]
    pub student: Option<PathBuf>,
    /// Put the --student in front of the style: it answers when it is sure on
    /// every asked key (at the file's threshold), the style otherwise.
    #[arg(long)]
    pub cascade: bool,
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
pub(crate) fn parse_alias_ttl(s: &str) -> Result<Duration, String> {
    parse_time(s, true, "0, 30s, 10m, 1h")
}

/// A number of seconds, or with a unit of `ms`, `s`, `m` (and `h` when
/// `zero_ok`, as `--alias-ttl` takes), up to a year; zero only when
/// `zero_ok`. `examples` go into the error of a text that is no number.
pub(crate) fn parse_time(s: &str, zero_ok: bool, examples: &str) -> Result<Duration, String> {
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
pub(crate) fn parse_max_cost(s: &str) -> Result<f64, String> {
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
pub(crate) fn parse_max_time(s: &str) -> Result<Duration, String> {
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

/// A share or distance in [0, 1].
pub(crate) fn parse_unit_share(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(format!("{s:?}: want a number from 0 to 1")),
    }
}
