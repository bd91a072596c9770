//! Turns the style flags into a library [`Classifier`], a call name, and (when
//! the command fell back to recorded decisions) the reason it is offline.

use std::path::Path;

use anyhow::Result;
use toolnexus::classifier::{
    Backend, Classifier, ClassifierOptions, ClassifierStyle, RecordedDecision, create_classifier,
};
use toolnexus::client::{ClientOptions, create_client};
use toolnexus::judge::{Tape, TapeOutcome};

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

/// Builds the classifier the flags describe, calibrated with `--calibration`
/// when given.
pub fn build(args: &StyleArgs, fallback: Fallback) -> Result<Built> {
    let mut built = build_style(args, fallback)?;
    if args.cascade {
        if matches!(built.style, StyleName::Student) {
            return Err(exit::usage(
                "--cascade puts the student in front of another style, not of --style student",
            ));
        }
        let local = local_student(args)?;
        let shown = args
            .student
            .as_deref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        built.cascade_student = Some((local.student().clone(), shown));
        let (classifier, stats) = toolnexus_local::student::cascade(local, built.classifier, None);
        built.classifier = classifier;
        built.cascade = Some(stats);
    }
    if let Some(path) = &args.calibration {
        let calibration = toolnexus::assess::Calibration::load(path)
            .map_err(|e| exit::usage(format!("--calibration: {e}")))?;
        built.classifier = toolnexus::assess::calibrating(built.classifier, calibration)
            .map_err(|e| exit::usage(format!("--calibration {}: {e}", path.display())))?;
    }
    Ok(built)
}

/// The classifier of the style flags alone.
fn build_style(args: &StyleArgs, fallback: Fallback) -> Result<Built> {
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
    refuse_unused_flags(live, style, offline_reason.as_deref(), args)?;
    if let (Some(m), false) = (args.tape_match, style == StyleName::Tape) {
        return Err(exit::usage(format!(
            "--match {m}: only --style tape matches recordings that way (this is --style {})",
            style.as_str()
        )));
    }
    match style {
        StyleName::Local | StyleName::Student => {
            if let Some(t) = &args.tape {
                return Err(exit::usage(format!(
                    "--tape {}: only --style tape or static read a tape",
                    t.display()
                )));
            }
            let classifier = match style {
                StyleName::Local => {
                    toolnexus_local::zero_shot(embedder(args.model_dir.as_deref())?)
                }
                _ => toolnexus_local::student::student(local_student(args)?),
            };
            Ok(Built {
                classifier,
                style,
                call: args.call.clone().unwrap_or_else(|| "cli".to_string()),
                tape: None,
                offline_reason,
                cascade: None,
                cascade_student: None,
            })
        }
        StyleName::Laya | StyleName::DecisionTune => {
            if let Some(t) = &args.tape {
                return Err(exit::usage(format!(
                    "--tape {}: only --style tape or static read a tape",
                    t.display()
                )));
            }
            Ok(Built {
                classifier: open_weights(style, args.model_dir.as_deref())?,
                style,
                call: args.call.clone().unwrap_or_else(|| "cli".to_string()),
                tape: None,
                offline_reason,
                cascade: None,
                cascade_student: None,
            })
        }
        StyleName::SystemOne | StyleName::Llm => {
            if let Some(t) = &args.tape {
                return Err(exit::usage(format!(
                    "--tape {}: only --style tape or static read a tape (use `toolnexus tape record` to record one)",
                    t.display()
                )));
            }
            Ok(Built {
                classifier: live_classifier(live, style)?,
                style,
                call: args.call.clone().unwrap_or_else(|| "cli".to_string()),
                tape: None,
                offline_reason,
                cascade: None,
                cascade_student: None,
            })
        }
        StyleName::Tape | StyleName::Static => {
            let (tape, label) = load_tape(args.tape.as_deref())?;
            let call = pick_call(
                &tape,
                &label,
                args.call.as_deref(),
                style,
                offline_reason.is_some(),
            )?;
            let classifier = match style {
                // The replayer answers by call name: another --call on the
                // same tape is another stack to a cache.
                StyleName::Tape => tape
                    .replayer_with(args.tape_match.unwrap_or_default())
                    .with_fingerprint_part("call", call.as_str()),
                _ => static_classifier(&tape, &label, live)?,
            };
            Ok(Built {
                classifier,
                style,
                call,
                tape: Some((tape, label)),
                offline_reason,
                cascade: None,
                cascade_student: None,
            })
        }
    }
}

/// A connection flag given to a style that has no use for it is an error
/// naming the flag, never silently ignored (`--model` on a tape would
/// otherwise look like it picked a model).
fn refuse_unused_flags(
    live: &LiveArgs,
    style: StyleName,
    offline: Option<&str>,
    args: &StyleArgs,
) -> Result<()> {
    // `--retries` is left out: `serve` sets its own default (none) for any style.
    let given: [(&str, bool); 8] = [
        ("--model", live.model.is_some()),
        ("--base-url", live.base_url.is_some()),
        ("--backend", live.backend.is_some()),
        ("--api-key-env", live.api_key_env.is_some()),
        ("--chat-style", live.chat_style.is_some()),
        ("--logprobs", live.logprobs),
        ("--timeout-ms", live.timeout_ms.is_some()),
        ("--ca-cert", live.ca_cert.is_some()),
    ];
    let takes = |flag: &str| match style {
        StyleName::SystemOne => !matches!(flag, "--chat-style" | "--logprobs"),
        StyleName::Llm => flag != "--backend",
        // The Static style names its decisions' model after --model.
        StyleName::Static => flag == "--model",
        StyleName::Tape
        | StyleName::Local
        | StyleName::Student
        | StyleName::Laya
        | StyleName::DecisionTune => false,
    };
    let Some((flag, _)) = given.iter().find(|(flag, set)| *set && !takes(flag)) else {
        return Ok(());
    };
    // A connection flag with no key and no style: the user wanted a live
    // answer, so the demo tape is no answer; the one no-key line.
    if offline.is_some() {
        return Err(exit::usage(no_key_line(live, args.model_dir.as_deref())));
    }
    let goes_with = match style {
        StyleName::SystemOne => "--style llm",
        StyleName::Llm => "--style systemone",
        _ => "--style systemone or llm",
    };
    Err(exit::usage(format!(
        "{flag}: --style {} has no use for it (it goes with {goes_with})",
        style.as_str()
    )))
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

/// The embedded model from `--model-dir`, `$TOOLNEXUS_MODEL_DIR` or the
/// default directory; a missing model names the directory and, once, how to
/// fetch it (the library's message carries the advice).
pub fn embedder(dir: Option<&Path>) -> Result<toolnexus_local::Embedder> {
    let dir = toolnexus_local::model_dir(dir, &toolnexus::classifier::EnvSource::process())
        .map_err(|e| exit::usage(format!("--model-dir: {e}")))?;
    toolnexus_local::Embedder::load(&dir).map_err(exit::usage)
}

/// Where `toolnexus guard`'s judge comes from: `--server` (a warm serve, with
/// the built-in judge here as its fallback), the style flags, or (neither)
/// the built-in judge on `--model-dir`. Nothing is built until a call needs
/// the judge; naming both a server and a style is bad usage.
pub fn guard_judge(
    style: &StyleArgs,
    server: Option<&str>,
) -> Result<toolnexus_guard::JudgeSource> {
    use toolnexus_guard::{Judge, JudgeError, JudgeSource};
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
        }
        (None, true) => {
            let args = style.clone();
            JudgeSource::supplied(move || built(&args))
        }
        (None, false) => JudgeSource::builtin(style.model_dir.clone()),
    })
}

/// `--style laya` or `decisiontune` on the checkpoint in `--model-dir`. A
/// directory that is not such a checkpoint is bad input, named with the file
/// and field at fault.
fn open_weights(style: StyleName, dir: Option<&Path>) -> Result<Classifier> {
    let name = style.as_str();
    let dir = dir.ok_or_else(|| {
        exit::usage(format!(
            "--style {name} needs --model-dir DIR: the directory of a downloaded {name} checkpoint"
        ))
    })?;
    let loaded = match style {
        StyleName::Laya => toolnexus_local::Laya::load(dir).map(toolnexus_local::laya),
        _ => toolnexus_local::DecisionTune::load(dir).map(toolnexus_local::decisiontune),
    };
    loaded.map_err(|e| exit::usage(format!("--style {name} --model-dir {}: {e}", dir.display())))
}

/// `--student FILE` on the embedded model.
fn local_student(args: &StyleArgs) -> Result<toolnexus_local::student::LocalStudent> {
    let path = args.student.as_deref().ok_or_else(|| {
        exit::usage("--style student and --cascade need --student FILE (from toolnexus distill)")
    })?;
    // The guard's own student is built in (what `toolnexus guard` runs).
    let s = if path == Path::new(toolnexus_guard::BUILTIN_STUDENT) {
        toolnexus_guard::builtin_student().map_err(exit::usage)?
    } else {
        toolnexus_local::student::Student::load(path)
            .map_err(|e| exit::usage(format!("--student: {e}")))?
    };
    // With a checkpoint style, --model-dir is the checkpoint's: the student's
    // embedded model is then in the default directory.
    let dir = match args.live.style {
        Some(StyleName::Laya | StyleName::DecisionTune) => None,
        _ => args.model_dir.as_deref(),
    };
    toolnexus_local::student::LocalStudent::new(embedder(dir)?, s)
        .map_err(|e| exit::usage(format!("--student {}: {e}", path.display())))
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

/// The call name to replay: `--call`, else the tape's only one — the same
/// rule for the built-in demo tape and a user's. Only the offline fallback (no
/// style named, no key) picks the demo's first call by itself.
fn pick_call(
    tape: &Tape,
    label: &str,
    call: Option<&str>,
    style: StyleName,
    fallback: bool,
) -> Result<String> {
    let names = tape.call_names();
    if let Some(c) = call {
        if style == StyleName::Tape && !names.iter().any(|n| n == c) {
            return Err(exit::usage(format!(
                "--call {c:?}: {label} has no such call (it has {})",
                demo::names(&names)
            )));
        }
        return Ok(c.to_string());
    }
    if fallback && label == demo::DEMO_LABEL {
        return Ok(demo::DEMO_CALL.to_string());
    }
    match names.as_slice() {
        [one] => Ok(one.clone()),
        [] if style == StyleName::Static => Ok("cli".to_string()),
        [] => Err(exit::usage(format!("{label} is empty: nothing to replay"))),
        _ if style == StyleName::Static => Ok("cli".to_string()),
        _ => Err(exit::usage(format!(
            "--call is required: {label} has calls {}",
            demo::names(&names)
        ))),
    }
}

/// The Static style over every recorded decision of a tape, whatever its call name.
fn static_classifier(tape: &Tape, label: &str, live: &LiveArgs) -> Result<Classifier> {
    let mut models = std::collections::BTreeSet::new();
    let decisions: Vec<RecordedDecision> = tape
        .entries()
        .into_iter()
        .filter_map(|e| match e.outcome {
            TapeOutcome::Decision(d) => {
                models.insert(e.model.clone());
                Some(RecordedDecision {
                    state: e.state,
                    questions: e.questions,
                    response: serde_json::to_vec(&d.to_value()).unwrap_or_default(),
                })
            }
            TapeOutcome::Failure { .. } => None,
        })
        .collect();
    if decisions.is_empty() {
        return Err(exit::usage(format!(
            "--style static: {label} holds no recorded decision"
        )));
    }
    let model = match (&live.model, models.len()) {
        (Some(m), _) => m.clone(),
        (None, 1) => models.into_iter().next().unwrap_or_default(),
        (None, _) => "static".to_string(),
    };
    create_classifier(ClassifierOptions {
        style: ClassifierStyle::Static,
        model,
        decisions,
        ..Default::default()
    })
    .map_err(|e| {
        exit::usage(format!(
            "--style static: {label}: {e} (replay it with --style tape --call NAME)"
        ))
    })
}

/// `--retries` as the library's `retries` option: absent keeps the library's
/// default (its 0), and 0 or any negative number means none (its -1).
pub fn library_retries(flag: Option<i32>) -> i32 {
    match flag {
        None => 0,
        Some(n) if n <= 0 => -1,
        Some(n) => n,
    }
}

/// A System One or Llm classifier from the connection flags.
pub fn live_classifier(live: &LiveArgs, style: StyleName) -> Result<Classifier> {
    let text = |o: &Option<String>| o.as_deref().map(str::trim).unwrap_or("").to_string();
    let timeout_ms = live.timeout_ms.unwrap_or(0);
    let retries = library_retries(live.retries);
    let options = match style {
        StyleName::SystemOne => {
            if live.chat_style.is_some() || live.logprobs {
                return Err(exit::usage(
                    "--chat-style and --logprobs go with --style llm",
                ));
            }
            ClassifierOptions {
                style: ClassifierStyle::SystemOne,
                backend: live.backend.unwrap_or(Backend::TypeSafe),
                base_url: text(&live.base_url),
                model: text(&live.model),
                api_key_env: key_env(live),
                timeout_ms,
                retries,
                limiter: live.limiter.clone(),
                http: Some(http_client(live)?),
                ..Default::default()
            }
        }
        StyleName::Llm => {
            if live.base_url.is_none() {
                return Err(exit::usage(
                    "--style llm needs --base-url (the chat API root, e.g. http://127.0.0.1:11434/v1)",
                ));
            }
            if live.model.is_none() {
                return Err(exit::usage(
                    "--style llm needs --model (the chat model to ask)",
                ));
            }
            let client = create_client(ClientOptions {
                base_url: text(&live.base_url),
                style: live.chat_style.unwrap_or_default(),
                model: text(&live.model),
                api_key_env: text(&live.api_key_env),
                timeout_ms,
                retries,
                logprobs: live.logprobs,
                limiter: live.limiter.clone(),
                http: Some(http_client(live)?),
                ..Default::default()
            })
            .map_err(|e| exit::usage(format!("--style llm: {e}")))?;
            ClassifierOptions {
                style: ClassifierStyle::Llm,
                client: Some(client),
                ..Default::default()
            }
        }
        other => {
            return Err(exit::usage(format!(
                "--style {} is not a live style here (want systemone|llm)",
                other.as_str()
            )));
        }
    };
    create_classifier(options).map_err(|e| exit::usage(format!("--style {}: {e}", style.as_str())))
}

/// The connection pool of a live style: the platform's certificate store
/// (SSL_CERT_FILE/SSL_CERT_DIR when set) beside the bundled roots, `--ca-cert`'s
/// certificates, and the proxy the environment names (HTTPS_PROXY, HTTP_PROXY,
/// ALL_PROXY, NO_PROXY).
pub fn http_client(live: &LiveArgs) -> Result<toolnexus::http::HttpClient> {
    let mut b = toolnexus::http::HttpClient::builder()
        .platform_roots()
        .proxy_from_env();
    if let Some(pem) = ca_cert_pem(live.ca_cert.as_deref())? {
        b = b.add_root_pem(pem);
    }
    b.build()
        .map_err(|e| exit::usage(format!("cannot set up HTTPS: {e}")))
}

/// The most bytes of a `--ca-cert` file read.
const MAX_CA_CERT_BYTES: u64 = 4 << 20;

/// The PEM text of `--ca-cert FILE`, checked to hold at least one certificate.
pub fn ca_cert_pem(path: Option<&Path>) -> Result<Option<Vec<u8>>> {
    use std::io::Read as _;
    let Some(path) = path else { return Ok(None) };
    let bad = |why: String| exit::usage(format!("--ca-cert {}: {why}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| bad(e.to_string()))?;
    if !meta.is_file() {
        return Err(bad("is not a regular file".into()));
    }
    let mut pem = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_CA_CERT_BYTES + 1).read_to_end(&mut pem))
        .map_err(|e| bad(e.to_string()))?;
    if pem.len() as u64 > MAX_CA_CERT_BYTES {
        return Err(bad(
            "is larger than 4 MiB; a CA file holds a few certificates".into(),
        ));
    }
    match reqwest::Certificate::from_pem_bundle(&pem) {
        Ok(c) if !c.is_empty() => Ok(Some(pem)),
        _ => Err(bad(
            "holds no PEM certificate (-----BEGIN CERTIFICATE----- …)".into(),
        )),
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

#[cfg(test)]
mod tests {
    use super::library_retries;

    #[test]
    fn zero_retries_means_none() {
        assert_eq!(library_retries(None), 0, "the library default");
        assert_eq!(library_retries(Some(0)), -1);
        assert_eq!(library_retries(Some(-1)), -1);
        assert_eq!(library_retries(Some(-7)), -1);
        assert_eq!(library_retries(Some(3)), 3);
    }
}
