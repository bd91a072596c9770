//! The settings layer: the style flags and the layers a command asks for
//! (prices, caps, cache, fallback) become one `toolnexus_stack::StackSpec`,
//! built by the one stack builder into a [`Classifier`], its call name, and
//! (when the command fell back to recorded decisions) the reason it is offline.

use std::path::Path;

use anyhow::Result;
use toolnexus::classifier::Classifier;
use toolnexus::judge::Tape;

use crate::args::{LiveArgs, StyleArgs, StyleName};
use crate::demo;
use crate::exit;

pub mod pin;

/// What a command does when no style is named, no tape is given and no API key is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    /// The System One style when its key is set; with no key and no style
    /// named, refuse (exit 2) with [`no_key_line`] before anything is sent:
    /// the command's own states are nothing the demo tape could answer.
    SystemOne,
    /// Use this recorded style over the built-in demo tape, offline.
    Demo(StyleName),
}

/// A classifier ready to evaluate, and what it is.
pub struct Built {
    /// The classifier.
    pub classifier: Classifier,
    /// The style it runs.
    pub style: StyleName,
    /// The call name evaluations run under.
    pub call: String,
    /// The tape behind a tape or static style, and how to name it.
    pub tape: Option<(Tape, String)>,
    /// Set when the command fell back to the demo tape: why (e.g. `no TYPESAFE_API_KEY set`).
    pub offline_reason: Option<String>,
    /// With `--cascade`: how many calls the student answered and how many it passed on.
    pub cascade: Option<toolnexus_local::student::CascadeStats>,
    /// With `--cascade`: the student in front, and the `--student` it came from.
    pub cascade_student: Option<(toolnexus_local::student::Student, String)>,
    /// With caps: the budget they share.
    pub budget: Option<toolnexus::cost::budget::Budget>,
    /// How the stack settles each call's cost.
    pub pricing: toolnexus::cost::Pricing,
    /// With a shadow: the model its stack asks for.
    pub shadow_model: Option<String>,
}

/// The variable the API key is read from (a name, never a value).
pub fn key_env(live: &LiveArgs) -> String {
    match &live.api_key_env {
        Some(v) if !v.trim().is_empty() => v.trim().to_string(),
        _ => live
            .backend
            .unwrap_or_default()
            .default_api_key_env()
            .to_string(),
    }
}

/// Whether the variable holds a non-empty value (the value is never read out).
pub fn key_is_set(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| !v.is_empty())
}

/// The stack's layers a command asks for beyond the style flags: the price
/// table, caps and a decision cache. The one builder applies them in its one
/// order ([`toolnexus_stack`]).
#[derive(Default)]
pub struct Layers<'a> {
    /// `--prices`.
    pub prices: Option<&'a crate::args::PriceArgs>,
    /// `--max-cost`, `--max-tokens`, `--max-time`.
    pub caps: Option<&'a crate::args::CapArgs>,
    /// `--cache FILE` and `--alias-ttl`.
    pub cache: Option<(&'a Path, std::time::Duration)>,
    /// `--fallback-base-url`, repeated.
    pub fallback_base_urls: &'a [String],
    /// `batch --shadow-style`: a second stack answering in the shadow.
    pub shadow: Option<toolnexus_stack::ShadowSpec>,
}

/// Builds the classifier the flags describe, calibrated with `--calibration`
/// when given, with no caps or cache (priced on the built-in table).
pub fn build(args: &StyleArgs, fallback: Fallback) -> Result<Built> {
    build_with(args, fallback, &Layers::default())
}

/// Builds the whole stack: the style flags and `layers`, through the one
/// builder.
pub fn build_with(args: &StyleArgs, fallback: Fallback, layers: &Layers) -> Result<Built> {
    let (spec, style, offline_reason) = spec(args, fallback)?;
    let mut spec = spec;
    if let Some(p) = layers.prices {
        spec.prices = Some(prices(p)?);
    }
    spec.caps = layers.caps.map(|c| toolnexus_stack::Caps {
        max_cost: c.max_cost,
        max_tokens: c.max_tokens,
        max_time: c.max_time,
    });
    if let Some((path, alias_ttl)) = layers.cache
        && let Some(cache) = open_for_run(path)?
    {
        spec.cache = Some((std::sync::Arc::new(cache), alias_ttl));
    }
    spec.fallback_base_urls = layers.fallback_base_urls.to_vec();
    spec.shadow = layers.shadow.clone();
    let stack = toolnexus_stack::build(&spec).map_err(|e| exit::usage(e.to_string()))?;
    Ok(Built {
        classifier: stack.classifier,
        style,
        call: stack.call,
        tape: stack.tape,
        offline_reason,
        cascade: stack.cascade,
        cascade_student: stack.cascade_student,
        budget: stack.budget,
        pricing: stack.pricing,
        shadow_model: stack.shadow_model,
    })
}

/// The builder's spec from the style flags, the style it runs, and why it is
/// offline when the command fell back to the demo tape.
pub fn spec(
    args: &StyleArgs,
    fallback: Fallback,
) -> Result<(toolnexus_stack::StackSpec, StyleName, Option<String>)> {
    let live = &args.live;
    let (style, offline_reason) = match (live.style, &args.tape) {
        (Some(s), _) => (s, None),
        (None, Some(_)) => (StyleName::Tape, None),
        (None, None) if args.tape_match.is_some() => (StyleName::Tape, None),
        (None, None) => {
            let var = key_env(live);
            match fallback {
                _ if key_is_set(&var) => (StyleName::SystemOne, None),
                Fallback::SystemOne => {
                    return Err(exit::usage(no_key_line(live, args.model_dir.as_deref())));
                }
                Fallback::Demo(s) => (s, Some(format!("no {var} set"))),
            }
        }
    };
    let mut spec = live_spec(live);
    spec.style = Some(style.as_str().to_string());
    // A connection flag with no key and no style: the user wanted a live
    // answer, so the demo tape is no answer; the one no-key line.
    if offline_reason.is_some() && toolnexus_stack::first_connection_flag(&spec).is_some() {
        return Err(exit::usage(no_key_line(live, args.model_dir.as_deref())));
    }
    spec.tape = match (&args.tape, style) {
        (Some(p), _) => Some(toolnexus_stack::TapeSource::File(p.clone())),
        (None, StyleName::Tape | StyleName::Static) => Some(toolnexus_stack::TapeSource::Loaded(
            demo::demo_tape()?,
            demo::DEMO_LABEL.to_string(),
        )),
        (None, _) => None,
    };
    spec.tape_match = args.tape_match;
    spec.call = match (&args.call, &offline_reason) {
        (Some(c), _) => Some(c.clone()),
        // Only the offline fallback picks the demo's first call by itself.
        (None, Some(_)) => Some(demo::DEMO_CALL.to_string()),
        (None, None) => None,
    };
    (spec.model_dir, spec.precision) = (args.model_dir.clone(), args.precision);
    spec.student = match &args.student {
        None => None,
        // The guard's own student is built in (what `toolnexus guard` runs).
        Some(p) if p == Path::new(toolnexus_guard::BUILTIN_STUDENT) => {
            Some(toolnexus_stack::StudentSource::Loaded(
                Box::new(toolnexus_guard::builtin_student().map_err(exit::usage)?),
                p.display().to_string(),
            ))
        }
        Some(p) => Some(toolnexus_stack::StudentSource::File(p.clone())),
    };
    (spec.cascade, spec.calibration) = (args.cascade, args.calibration.clone());
    Ok((spec, style, offline_reason))
}

/// The connection flags as the builder's options.
fn live_spec(live: &LiveArgs) -> toolnexus_stack::StackSpec {
    toolnexus_stack::StackSpec {
        model: live.model.clone(),
        base_url: live.base_url.clone(),
        backend: live.backend,
        api_key_env: live.api_key_env.clone(),
        chat_style: live.chat_style,
        logprobs: live.logprobs,
        timeout_ms: live.timeout_ms,
        retries: live.retries,
        ca_cert: live.ca_cert.clone(),
        limiter: live.limiter.clone(),
        ..Default::default()
    }
}

/// The one line every command that would ask a live backend says when no key
/// is set and no style is named (exit 2, nothing sent): what is missing and
/// how to get a real answer ([`real_answer_hint_in`]).
pub fn no_key_line(live: &LiveArgs, model_dir: Option<&Path>) -> String {
    format!(
        "no {} set and no --style named, so nothing was sent; {}",
        key_env(live),
        real_answer_hint_in(live, model_dir)
    )
}

/// How to get a real answer when a command fell back to the demo tape: the
/// embedded model when it is on this machine, else how to fetch it; or the key.
pub fn real_answer_hint(live: &LiveArgs) -> String {
    real_answer_hint_in(live, None)
}

/// [`real_answer_hint`] with the embedded model looked for in `model_dir`
/// (`--model-dir`) before the environment and the default directory.
pub fn real_answer_hint_in(live: &LiveArgs, model_dir: Option<&Path>) -> String {
    let var = key_env(live);
    let present =
        toolnexus_local::model_dir(model_dir, &toolnexus::classifier::EnvSource::process())
            .is_ok_and(|d| {
                d.join("model.safetensors").is_file() && d.join("tokenizer.json").is_file()
            });
    if present {
        format!(
            "for a real answer use --style local (the embedded model, on this machine) or set {var}"
        )
    } else {
        format!(
            "for a real answer set {var}, or run `toolnexus model fetch` once and use --style local"
        )
    }
}

/// With `--cascade`, warns (once, naming the student file and the questions)
/// when the student cannot answer the asked questions: it answers a request
/// only when it has a head for every asked question, trained on that wording,
/// so otherwise the teacher answers every request and the cascade saves
/// nothing. Returns the warning, if any.
pub fn check_cascade(
    built: &Built,
    questions: &toolnexus::classifier::Questions,
) -> Option<String> {
    let (student, shown) = built.cascade_student.as_ref()?;
    let mut missing = Vec::new();
    let mut changed = Vec::new();
    for (key, q) in questions {
        match student.questions.get(key) {
            None => missing.push(format!("{key:?}")),
            Some(_) if student.head_for(key, q).is_err() => changed.push(format!("{key:?}")),
            Some(_) => {}
        }
    }
    if missing.is_empty() && changed.is_empty() {
        return None;
    }
    let mut why = Vec::new();
    if !missing.is_empty() {
        let trained: Vec<String> = student.questions.keys().map(|k| format!("{k:?}")).collect();
        why.push(format!(
            "no head for {} (it was trained on {})",
            missing.join(", "),
            if trained.is_empty() {
                "none".to_string()
            } else {
                trained.join(", ")
            }
        ));
    }
    if !changed.is_empty() {
        why.push(format!(
            "{} reworded since it was trained",
            changed.join(", ")
        ));
    }
    let text = format!(
        "--cascade --student {shown}: {}; the student answers only when it has a head for every asked question, so the teacher answers every request",
        why.join("; ")
    );
    crate::warnings::warn(&text);
    Some(text)
}

/// Where `toolnexus guard`'s judge comes from: `--server` (a warm serve, with
/// the built-in judge here as its fallback), the style flags, or (neither)
/// the built-in judge on `--model-dir`, its encoder in `--precision`.
/// Nothing is built until a call needs the judge, but `--precision bf16` on
/// a CPU without a bf16 unit is bad usage now, as is naming both a server
/// and a style.
pub fn guard_judge(
    style: &StyleArgs,
    server: Option<&str>,
) -> Result<toolnexus_guard::JudgeSource> {
    use toolnexus_guard::{Judge, JudgeError, JudgeSource};
    // Checked here, not when the first call builds the judge: by then a
    // refusal would be the policy's on_error, not a usage error.
    let precision = judge_precision(style)?;
    let named = style.live.style.is_some() || style.tape.is_some() || style.cascade;
    let built = |args: &StyleArgs| {
        build(args, Fallback::SystemOne)
            .map(|b| Judge::new(b.classifier, b.call))
            .map_err(|e| JudgeError::build(format!("{e:#}")))
    };
    Ok(match (server, named) {
        (Some(_), true) => {
            return Err(exit::usage(
                "--server asks a toolnexus serve; the style flags choose another judge: give one or the other",
            ));
        }
        (Some(url), false) => {
            let mut args = StyleArgs::default();
            args.live.style = Some(StyleName::SystemOne);
            args.live.base_url = Some(toolnexus_guard::judge::server_base_url(url));
            args.live.retries = Some(0);
            JudgeSource::server(url, style.model_dir.clone(), move || built(&args))
                .with_precision(precision)
        }
        (None, true) => {
            let args = style.clone();
            JudgeSource::supplied(move || built(&args))
        }
        (None, false) => JudgeSource::builtin(style.model_dir.clone()).with_precision(precision),
    })
}

/// `--precision` for a judge built later (the guard's built-in one): `auto`
/// settled now, and `bf16` on a CPU without a bf16 unit refused now, as bad
/// usage naming the flag.
pub fn judge_precision(style: &StyleArgs) -> Result<toolnexus_local::Precision> {
    toolnexus_local::resolve_precision(style.precision)
        .map_err(|e| exit::usage(format!("--precision {}: {e}", style.precision)))
}

/// Loads `--tape FILE`, or the built-in demo tape without one.
pub fn load_tape(path: Option<&Path>) -> Result<(Tape, String)> {
    match path {
        None => Ok((demo::demo_tape()?, demo::DEMO_LABEL.to_string())),
        Some(p) => {
            let tape = Tape::load(p).map_err(|e| exit::usage(format!("--tape: {e}")))?;
            Ok((tape, p.display().to_string()))
        }
    }
}

/// The PEM text of `--ca-cert FILE`, checked to hold at least one certificate.
pub fn ca_cert_pem(path: Option<&Path>) -> Result<Option<Vec<u8>>> {
    toolnexus_stack::ca_cert_pem(path).map_err(|e| exit::usage(e.to_string()))
}

/// The environment variable naming a prices file when `--prices` is not given.
pub const PRICES_ENV: &str = "TOOLNEXUS_PRICES";

/// The price table of a run: `--prices FILE` (or `$TOOLNEXUS_PRICES`) over the
/// compiled-in one. A bad file is bad input naming the flag, the file and the key.
pub fn prices(args: &crate::args::PriceArgs) -> Result<std::sync::Arc<toolnexus::cost::Prices>> {
    use toolnexus::cost::Prices;
    let (flag, path) = match &args.prices {
        Some(p) => ("--prices".to_string(), Some(p.clone())),
        None => match std::env::var_os(PRICES_ENV) {
            Some(v) if !v.is_empty() => {
                (format!("${PRICES_ENV}"), Some(std::path::PathBuf::from(v)))
            }
            _ => (String::new(), None),
        },
    };
    let builtin = Prices::builtin();
    Ok(std::sync::Arc::new(match path {
        None => builtin,
        Some(p) => Prices::load(&p)
            .map_err(|e| exit::usage(format!("{flag} {e}")))?
            .over(builtin),
    }))
}

/// Opens a cache file (bad or foreign files are bad input, exit 2).
pub fn open_cache(path: &Path) -> Result<toolnexus::cache::SqliteCache> {
    use toolnexus::cache::{SqliteCache, SqliteOptions};
    SqliteCache::open(path, SqliteOptions::default()).map_err(cache_failed)
}

/// Opens the `--cache FILE` of a run (`batch`, `serve`): a file that is not a
/// cache is bad input (exit 2) and stops the run before anything is asked; a
/// file that cannot be opened (permissions, a full disk, a missing directory)
/// is a warning naming it, the run goes on without a cache, and the command
/// ends with exit 4 (see [`crate::warnings::cache_failures`]).
pub fn open_for_run(path: &Path) -> Result<Option<toolnexus::cache::SqliteCache>> {
    use toolnexus::cache::{CacheErrorKind, SqliteCache, SqliteOptions};
    match SqliteCache::open(path, SqliteOptions::default()) {
        Ok(c) => Ok(Some(c)),
        Err(e) if matches!(e.kind(), CacheErrorKind::Open | CacheErrorKind::Io) => {
            crate::warnings::cache_failed(&format!(
                "--cache {}: {e}; going on without a cache (exit 4 at the end)",
                path.display()
            ));
            Ok(None)
        }
        Err(e) => Err(cache_failed(e)),
    }
}

/// A cache error as the CLI reports it: a file that is not a cache is bad
/// input (exit 2); a read or write that fails is I/O (exit 4).
pub fn cache_failed(e: toolnexus::cache::CacheError) -> anyhow::Error {
    match e.kind() {
        toolnexus::cache::CacheErrorKind::Io => exit::io(e),
        _ => exit::usage(e),
    }
}

/// How a built classifier describes itself in a status line.
pub fn describe(b: &Built) -> String {
    match &b.tape {
        Some((_, label)) if b.style == StyleName::Tape => {
            format!("style tape, {label}, call {:?}", b.call)
        }
        Some((_, label)) => format!("style static, {label}, model {}", b.classifier.model()),
        None => format!("style {}, model {}", b.style.as_str(), b.classifier.model()),
    }
}
