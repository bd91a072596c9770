//! The bottom of a stack: the style or engine, with its fallback chain,
//! cascade and calibration above it.

use std::path::Path;

use toolnexus::classifier::{
    Backend, Classifier, ClassifierOptions, ClassifierStyle, RecordedDecision, create_classifier,
};
use toolnexus::client::{ClientOptions, create_client};
use toolnexus::cost::Pricing;
use toolnexus::judge::{Tape, TapeOutcome};

use toolnexus_local::{Engine, EngineSpec, ModelDir, Precision, Registry};

use crate::error::{StackError, bad};
use crate::spec::{StackSpec, StudentSource, TapeSource};
use crate::stack::Stack;

/// The styles that ask a backend over the network.
const LIVE: [&str; 2] = ["systemone", "llm"];
/// The styles that replay recordings.
const RECORDED: [&str; 2] = ["static", "tape"];
/// The styles a spec may name, in the order help lists them: the remote and
/// recorded styles, then every engine of the built-in [`Registry`].
pub fn style_names() -> Vec<&'static str> {
    let engines = Registry::builtin();
    LIVE.iter()
        .chain(&RECORDED)
        .copied()
        .chain(engines.iter().map(|e| e.info.name))
        .collect()
}

/// One line on what `style` is, as `serve`'s model list and the `--style`
/// help say it: the remote and recorded styles' own, an engine's from its
/// registry entry (`engines`: a surface's own registry, or the built-in one).
///
/// ```
/// use toolnexus_local::Registry;
/// let engines = Registry::builtin();
/// assert!(toolnexus_stack::style_summary(&engines, "laya").unwrap().contains("Laya"));
/// assert_eq!(toolnexus_stack::style_summary(&engines, "nope"), None);
/// ```
pub fn style_summary(engines: &Registry, style: &str) -> Option<&'static str> {
    Some(match style {
        "systemone" => "forwards each request to the System One backend behind it",
        "llm" => "emulates a System One model over a chat model (uncalibrated)",
        "static" | "tape" => "replays recorded decisions; a request never recorded is a 404",
        name => engines.get(name)?.info.summary,
    })
}

/// Whether a style name is an engine that judges on this machine (what a
/// file written before each line carried its cost says about its calls).
///
/// ```
/// assert!(toolnexus_stack::is_local_style("laya"));
/// assert!(!toolnexus_stack::is_local_style("systemone"));
/// ```
pub fn is_local_style(name: &str) -> bool {
    Registry::builtin().get(name).is_some()
}

/// The style a spec runs: the one named, else `tape` with a tape, else `systemone`.
fn style_of(spec: &StackSpec) -> Result<String, StackError> {
    let style = match (&spec.style, &spec.tape) {
        (Some(s), _) => s.trim().to_string(),
        (None, Some(_)) => "tape".to_string(),
        (None, None) if spec.tape_match.is_some() => "tape".to_string(),
        (None, None) => "systemone".to_string(),
    };
    let engines = registry(spec);
    let known = |s: &str| LIVE.contains(&s) || RECORDED.contains(&s) || engines.get(s).is_some();
    if !known(&style) {
        let mut all: Vec<&str> = LIVE.iter().chain(&RECORDED).copied().collect();
        all.extend(engines.iter().map(|e| e.info.name));
        return bad(format!(
            "--style {style}: no such style (want {})",
            all.join("|")
        ));
    }
    Ok(style)
}

/// The style with its fallback, cascade and calibration.
pub fn build(spec: &StackSpec) -> Result<Stack, StackError> {
    if let Some(classifier) = &spec.bottom {
        return given(spec, classifier);
    }
    let style = style_of(spec)?;
    refuse_unused_flags(spec, &style)?;
    if let (Some(m), false) = (spec.tape_match, style == "tape") {
        return bad(format!(
            "--match {m}: only --style tape matches recordings that way (this is --style {style})"
        ));
    }
    if !RECORDED.contains(&style.as_str())
        && let Some(TapeSource::File(t)) = &spec.tape
    {
        let hint = if LIVE.contains(&style.as_str()) {
            " (use `toolnexus tape record` to record one)"
        } else {
            ""
        };
        return bad(format!(
            "--tape {}: only --style tape or static read a tape{hint}",
            t.display()
        ));
    }
    if spec.precision != Precision::F32 && !spec.cascade && registry(spec).get(&style).is_none() {
        return bad(format!(
            "--precision {}: --style {style} runs no encoder on this machine (it goes with a local engine or --cascade)",
            spec.precision
        ));
    }
    let call = || spec.call.clone().unwrap_or_else(|| "cli".to_string());
    // The embedded model, loaded once for an engine and a cascade's student.
    let mut shared: Option<toolnexus_local::Embedder> = None;
    let engines = registry(spec);
    let stack = match style.as_str() {
        "systemone" | "llm" => bare(live_classifier(spec, &style)?, &style, call()),
        name if !RECORDED.contains(&name) => {
            let Some(engine) = engines.get(name) else {
                return bad(format!("--style {name}: no such style"));
            };
            let (classifier, loaded) = open_engine(spec, engine)?;
            shared = loaded;
            bare(classifier, &style, call())
        }
        _ => {
            let (tape, label) = load_tape(spec.tape.as_ref())?;
            let call = pick_call(&tape, &label, spec.call.as_deref(), &style)?;
            let classifier = match style.as_str() {
                // The replayer answers by call name: another call on the same
                // tape is another stack to a cache.
                "tape" => tape
                    .replayer_with(spec.tape_match.unwrap_or_default())
                    .with_fingerprint_part("call", call.as_str()),
                _ => static_classifier(&tape, &label, spec)?,
            };
            let mut s = bare(classifier, &style, call);
            s.tape = Some((tape, label));
            s
        }
    };
    layer(spec, stack, &style, shared)
}

/// A classifier the caller built, at the bottom in place of a style: only the
/// layers apply; every option that builds a style is refused by name.
fn given(spec: &StackSpec, classifier: &Classifier) -> Result<Stack, StackError> {
    let style = classifier.identity().style.clone();
    let builds_a_style = [
        ("--style", spec.style.is_some()),
        ("--model", spec.model.is_some()),
        ("--base-url", spec.base_url.is_some()),
        ("--tape", spec.tape.is_some()),
        ("--model-dir", spec.model_dir.is_some() && !spec.cascade),
    ];
    if let Some((flag, _)) = builds_a_style.iter().find(|(_, set)| *set) {
        return bad(format!(
            "{flag}: the stack's bottom is a classifier already built ({style}); a style option has no use"
        ));
    }
    let call = spec.call.clone().unwrap_or_else(|| "cli".to_string());
    layer(spec, bare(classifier.clone(), &style, call), &style, None)
}

/// Pricing, fallback, cascade and calibration over the bottom.
fn layer(
    spec: &StackSpec,
    mut stack: Stack,
    style: &str,
    shared: Option<toolnexus_local::Embedder>,
) -> Result<Stack, StackError> {
    // Locality is the engine's identity, never a list of names.
    stack.pricing = match stack.classifier.identity().local {
        true => Pricing::Local,
        false => Pricing::Table(
            spec.prices
                .clone()
                .unwrap_or_else(|| std::sync::Arc::new(toolnexus::cost::Prices::builtin())),
        ),
    };
    if !spec.fallback_base_urls.is_empty() {
        if style != "systemone" {
            return bad(format!(
                "--fallback-base-url: only --style systemone falls back to another endpoint (this is --style {style})"
            ));
        }
        let mut next = Vec::new();
        for url in &spec.fallback_base_urls {
            let mut one = spec.clone();
            one.base_url = Some(url.clone());
            next.push(
                live_classifier(&one, "systemone")
                    .map_err(|e| StackError::new(format!("--fallback-base-url {url}: {e}")))?,
            );
        }
        stack.classifier = toolnexus::compose::fallback(stack.classifier, next);
    }
    if spec.cascade {
        if style == "student" {
            return bad(
                "--cascade puts the student in front of another style, not of --style student",
            );
        }
        let local = local_student(spec, style, shared)?;
        let shown = spec
            .student
            .as_ref()
            .map(StudentSource::label)
            .unwrap_or_default();
        stack.cascade_student = Some((local.student().clone(), shown));
        let (classifier, stats) =
            toolnexus_local::student::cascade(local, stack.classifier, spec.cascade_threshold);
        stack.classifier = classifier;
        stack.cascade = Some(stats);
    }
    if let Some(path) = &spec.calibration {
        let calibration = toolnexus::assess::Calibration::load(path)
            .map_err(|e| StackError::new(format!("--calibration: {e}")))?;
        stack.classifier = toolnexus::assess::calibrating(stack.classifier, calibration)
            .map_err(|e| StackError::new(format!("--calibration {}: {e}", path.display())))?;
    }
    Ok(stack)
}

/// A stack of one classifier, its pricing settled by the caller.
fn bare(classifier: Classifier, style: &str, call: String) -> Stack {
    Stack {
        classifier,
        style: style.to_string(),
        call,
        tape: None,
        // Settled once the bottom is built: local, or the spec's price table.
        pricing: Pricing::Local,
        budget: None,
        cascade: None,
        cascade_student: None,
        shadow_model: None,
    }
}

/// The connection options a spec sets, by their flags.
fn connection_flags(spec: &StackSpec) -> [(&'static str, bool); 8] {
    // `--retries` is left out: `serve` sets its own default (none) for any style.
    [
        ("--model", spec.model.is_some()),
        ("--base-url", spec.base_url.is_some()),
        ("--backend", spec.backend.is_some()),
        ("--api-key-env", spec.api_key_env.is_some()),
        ("--chat-style", spec.chat_style.is_some()),
        ("--logprobs", spec.logprobs),
        ("--timeout-ms", spec.timeout_ms.is_some()),
        ("--ca-cert", spec.ca_cert.is_some()),
    ]
}

/// The first connection option a spec sets, by its flag: a caller that falls
/// back to recorded answers for want of a key refuses such a spec (the user
/// wanted a live answer).
///
/// ```
/// use toolnexus_stack::{StackSpec, first_connection_flag};
/// let spec = StackSpec { model: Some("jev-1.13".into()), ..Default::default() };
/// assert_eq!(first_connection_flag(&spec), Some("--model"));
/// assert_eq!(first_connection_flag(&StackSpec::default()), None);
/// ```
pub fn first_connection_flag(spec: &StackSpec) -> Option<&'static str> {
    connection_flags(spec)
        .into_iter()
        .find(|(_, set)| *set)
        .map(|(flag, _)| flag)
}

/// A connection option given to a style that has no use for it is an error
/// naming the option, never silently ignored (`--model` on a tape would
/// otherwise look like it picked a model).
fn refuse_unused_flags(spec: &StackSpec, style: &str) -> Result<(), StackError> {
    let takes = |flag: &str| match style {
        "systemone" => !matches!(flag, "--chat-style" | "--logprobs"),
        "llm" => flag != "--backend",
        // The Static style names its decisions' model after --model.
        "static" => flag == "--model",
        _ => false,
    };
    let Some((flag, _)) = connection_flags(spec)
        .into_iter()
        .find(|(flag, set)| *set && !takes(flag))
    else {
        return Ok(());
    };
    let goes_with = match style {
        "systemone" => "--style llm",
        "llm" => "--style systemone",
        _ => "--style systemone or llm",
    };
    bad(format!(
        "{flag}: --style {style} has no use for it (it goes with {goes_with})"
    ))
}

/// The variable the API key is read from (a name, never a value).
///
/// ```
/// use toolnexus_stack::{StackSpec, key_env};
/// assert_eq!(key_env(&StackSpec::default()), "TYPESAFE_API_KEY");
/// let spec = StackSpec { api_key_env: Some(" MY_KEY ".into()), ..Default::default() };
/// assert_eq!(key_env(&spec), "MY_KEY");
/// ```
pub fn key_env(spec: &StackSpec) -> String {
    match &spec.api_key_env {
        Some(v) if !v.trim().is_empty() => v.trim().to_string(),
        _ => spec
            .backend
            .unwrap_or_default()
            .default_api_key_env()
            .to_string(),
    }
}

/// The embedded model from `dir`, `$TOOLNEXUS_MODEL_DIR` or the default
/// directory; a missing model names the directory and how to fetch it.
pub fn embedder(dir: Option<&Path>) -> Result<toolnexus_local::Embedder, StackError> {
    embedder_in(dir, Precision::F32)
}

/// [`embedder`], its encoder running in `precision`; bf16 on a CPU without
/// a bf16 unit is refused naming `--precision`.
///
/// ```
/// use toolnexus_local::Precision;
/// let nowhere = std::env::temp_dir().join("toolnexus-stack-doc-no-model");
/// assert!(toolnexus_stack::embedder_in(Some(&nowhere), Precision::Auto).is_err());
/// ```
pub fn embedder_in(
    dir: Option<&Path>,
    precision: Precision,
) -> Result<toolnexus_local::Embedder, StackError> {
    let dir = toolnexus_local::model_dir(dir, &toolnexus::classifier::EnvSource::process())
        .map_err(|e| StackError::new(format!("--model-dir: {e}")))?;
    toolnexus_local::Embedder::load_with(&dir, precision).map_err(|e| match e.is_bad_spec() {
        true => StackError::new(format!("--precision {precision}: {e}")),
        false => StackError::new(e.to_string()),
    })
}

/// The registry a spec builds its engines from: its own, else the built-in one.
fn registry(spec: &StackSpec) -> Registry {
    spec.engines.clone().unwrap_or_else(Registry::builtin)
}

/// An engine of the registry on what the spec gives it, with the embedded
/// model it loaded (for a cascade in front to share). What the engine needs
/// and is not given is refused naming the option; a checkpoint that is not
/// the engine's is named with the file and field at fault.
fn open_engine(
    spec: &StackSpec,
    engine: &Engine,
) -> Result<(Classifier, Option<toolnexus_local::Embedder>), StackError> {
    let name = engine.info.name;
    let student = match engine.info.student {
        true => Some(load_student(spec)?),
        false => None,
    };
    let on = |embedder, model_dir| EngineSpec {
        model_dir,
        student: student.as_ref().map(|(s, _)| s),
        embedder,
        precision: spec.precision,
        ..Default::default()
    };
    let misfit = |e: toolnexus_local::LocalError| match &student {
        Some((_, shown)) => StackError::new(format!("--student {shown}: {e}")),
        None => StackError::new(e.to_string()),
    };
    match engine.info.model_dir {
        ModelDir::Checkpoint => {
            let Some(dir) = spec.model_dir.as_deref() else {
                return bad(format!(
                    "--style {name} needs --model-dir DIR: the directory of a downloaded {name} checkpoint"
                ));
            };
            let built = engine.open(&on(None, Some(dir))).map_err(|e| {
                StackError::new(format!("--style {name} --model-dir {}: {e}", dir.display()))
            })?;
            Ok((built, None))
        }
        ModelDir::Embedded => {
            let e = embedder_in(spec.model_dir.as_deref(), spec.precision)?;
            let built = engine.open(&on(Some(&e), None)).map_err(misfit)?;
            Ok((built, Some(e)))
        }
        _ => Ok((engine.open(&on(None, None)).map_err(misfit)?, None)),
    }
}

/// The spec's student, and how messages name it.
fn load_student(spec: &StackSpec) -> Result<(Student, String), StackError> {
    match &spec.student {
        None => bad("--style student and --cascade need --student FILE (from toolnexus distill)"),
        Some(StudentSource::Loaded(s, label)) => Ok((Student::clone(s), label.clone())),
        Some(StudentSource::File(path)) => Ok((
            Student::load(path).map_err(|e| StackError::new(format!("--student: {e}")))?,
            path.display().to_string(),
        )),
    }
}

/// The spec's student on the embedded model.
fn local_student(
    spec: &StackSpec,
    style: &str,
    loaded: Option<toolnexus_local::Embedder>,
) -> Result<toolnexus_local::student::LocalStudent, StackError> {
    let (student, shown) = load_student(spec)?;
    // With a checkpoint style, the model directory is the checkpoint's: the
    // student's embedded model is then in the default directory.
    let checkpoint = registry(spec)
        .get(style)
        .is_some_and(|e| e.info.model_dir == ModelDir::Checkpoint);
    let dir = match checkpoint {
        true => None,
        false => spec.model_dir.as_deref(),
    };
    let embedder = match loaded {
        Some(e) => e,
        None => embedder_in(dir, spec.precision)?,
    };
    toolnexus_local::student::LocalStudent::new(embedder, student)
        .map_err(|e| StackError::new(format!("--student {shown}: {e}")))
}

use toolnexus_local::student::Student;

/// The spec's tape, loaded.
fn load_tape(source: Option<&TapeSource>) -> Result<(Tape, String), StackError> {
    match source {
        None => bad("--style tape and static need --tape FILE"),
        Some(TapeSource::Loaded(tape, label)) => Ok((tape.clone(), label.clone())),
        Some(TapeSource::File(p)) => {
            let tape = Tape::load(p).map_err(|e| StackError::new(format!("--tape: {e}")))?;
            Ok((tape, p.display().to_string()))
        }
    }
}

/// `"a", "b"` for messages.
fn names(names: &[String]) -> String {
    if names.is_empty() {
        return "none".to_string();
    }
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The call name to replay: the one given, else the tape's only one.
fn pick_call(
    tape: &Tape,
    label: &str,
    call: Option<&str>,
    style: &str,
) -> Result<String, StackError> {
    let all = tape.call_names();
    if let Some(c) = call {
        if style == "tape" && !all.iter().any(|n| n == c) {
            return bad(format!(
                "--call {c:?}: {label} has no such call (it has {})",
                names(&all)
            ));
        }
        return Ok(c.to_string());
    }
    match all.as_slice() {
        [one] => Ok(one.clone()),
        [] if style == "static" => Ok("cli".to_string()),
        [] => bad(format!("{label} is empty: nothing to replay")),
        _ if style == "static" => Ok("cli".to_string()),
        _ => bad(format!(
            "--call is required: {label} has calls {}",
            names(&all)
        )),
    }
}

/// The Static style over every recorded decision of a tape, whatever its call name.
fn static_classifier(tape: &Tape, label: &str, spec: &StackSpec) -> Result<Classifier, StackError> {
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
        return bad(format!(
            "--style static: {label} holds no recorded decision"
        ));
    }
    let model = match (&spec.model, models.len()) {
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
        StackError::new(format!(
            "--style static: {label}: {e} (replay it with --style tape --call NAME)"
        ))
    })
}

/// Retries as the command line counts them as the library's `retries`
/// option: absent keeps the library's default (its 0), and 0 or any negative
/// number means none (its -1).
///
/// ```
/// use toolnexus_stack::library_retries;
/// assert_eq!(library_retries(None), 0, "the library default");
/// assert_eq!(library_retries(Some(0)), -1);
/// assert_eq!(library_retries(Some(-7)), -1);
/// assert_eq!(library_retries(Some(3)), 3);
/// ```
pub fn library_retries(flag: Option<i32>) -> i32 {
    match flag {
        None => 0,
        Some(n) if n <= 0 => -1,
        Some(n) => n,
    }
}

/// A System One or Llm classifier from the connection options.
fn live_classifier(spec: &StackSpec, style: &str) -> Result<Classifier, StackError> {
    let text = |o: &Option<String>| o.as_deref().map(str::trim).unwrap_or("").to_string();
    let timeout_ms = spec.timeout_ms.unwrap_or(0);
    let retries = library_retries(spec.retries);
    let options = match style {
        "systemone" => {
            if spec.chat_style.is_some() || spec.logprobs {
                return bad("--chat-style and --logprobs go with --style llm");
            }
            ClassifierOptions {
                style: ClassifierStyle::SystemOne,
                backend: spec.backend.unwrap_or(Backend::TypeSafe),
                base_url: text(&spec.base_url),
                model: text(&spec.model),
                api_key_env: key_env(spec),
                timeout_ms,
                retries,
                limiter: spec.limiter.clone(),
                http: Some(http_client(spec)?),
                ..Default::default()
            }
        }
        _ => {
            if spec.base_url.is_none() {
                return bad(
                    "--style llm needs --base-url (the chat API root, e.g. http://127.0.0.1:11434/v1)",
                );
            }
            if spec.model.is_none() {
                return bad("--style llm needs --model (the chat model to ask)");
            }
            let client = create_client(ClientOptions {
                base_url: text(&spec.base_url),
                style: spec.chat_style.unwrap_or_default(),
                model: text(&spec.model),
                api_key_env: text(&spec.api_key_env),
                timeout_ms,
                retries,
                logprobs: spec.logprobs,
                limiter: spec.limiter.clone(),
                http: Some(http_client(spec)?),
                ..Default::default()
            })
            .map_err(|e| StackError::new(format!("--style llm: {e}")))?;
            ClassifierOptions {
                style: ClassifierStyle::Llm,
                client: Some(client),
                ..Default::default()
            }
        }
    };
    create_classifier(options).map_err(|e| StackError::new(format!("--style {style}: {e}")))
}

/// The connection pool of a live style: the platform's certificate store
/// (SSL_CERT_FILE/SSL_CERT_DIR when set) beside the bundled roots, the
/// `ca_cert` file's certificates, and the proxy the environment names
/// (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY). The platform's store is
/// read only when TLS can be spoken ([`speaks_tls`]): reading it costs a
/// plain-HTTP call to a local server (the guard's `--server`) more than the
/// call itself.
fn http_client(spec: &StackSpec) -> Result<toolnexus::http::HttpClient, StackError> {
    let proxies = [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
    ]
    .map(|name| std::env::var(name).unwrap_or_default());
    let mut b = toolnexus::http::HttpClient::builder().proxy_from_env();
    if speaks_tls(spec, &proxies) {
        b = b.platform_roots();
    }
    if let Some(pem) = ca_cert_pem(spec.ca_cert.as_deref())? {
        b = b.add_root_pem(pem);
    }
    b.build()
        .map_err(|e| StackError::new(format!("cannot set up HTTPS: {e}")))
}

/// Whether a live style's pool may speak TLS: an endpoint that is not plain
/// `http://` (none given is the backend's own HTTPS root), or a proxy that
/// is `https://`.
fn speaks_tls(spec: &StackSpec, proxies: &[String]) -> bool {
    let plain = |url: &str| {
        url.get(..7)
            .is_some_and(|s| s.eq_ignore_ascii_case("http://"))
    };
    !spec.base_url.as_deref().is_some_and(plain)
        || !spec.fallback_base_urls.iter().all(|u| plain(u))
        || proxies.iter().any(|p| {
            p.get(..8)
                .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
        })
}

/// The most bytes of a `--ca-cert` file read.
const MAX_CA_CERT_BYTES: u64 = 4 << 20;

/// The PEM text of a CA file, checked to hold at least one certificate
/// (at most 4 MiB read); `None` without a file.
pub fn ca_cert_pem(path: Option<&Path>) -> Result<Option<Vec<u8>>, StackError> {
    use std::io::Read as _;
    let Some(path) = path else { return Ok(None) };
    let bad = |why: String| StackError::new(format!("--ca-cert {}: {why}", path.display()));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_platform_store_is_read_only_where_tls_may_be_spoken() {
        let spec = |base: Option<&str>, fallbacks: &[&str]| StackSpec {
            base_url: base.map(str::to_string),
            fallback_base_urls: fallbacks.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        let none: [String; 0] = [];
        assert!(!speaks_tls(
            &spec(Some("http://127.0.0.1:8787/v1"), &[]),
            &none
        ));
        assert!(!speaks_tls(
            &spec(Some("HTTP://localhost/v1"), &["http://b/v1"]),
            &none
        ));
        // The backend's own root, an HTTPS endpoint or fallback, an HTTPS proxy.
        assert!(speaks_tls(&spec(None, &[]), &none));
        assert!(speaks_tls(
            &spec(Some("https://api.example/v1"), &[]),
            &none
        ));
        assert!(speaks_tls(
            &spec(Some("http://a/v1"), &["https://b/v1"]),
            &none
        ));
        let proxy = ["https://proxy.corp:3128".to_string()];
        assert!(speaks_tls(&spec(Some("http://a/v1"), &[]), &proxy));
        assert!(!speaks_tls(
            &spec(Some("http://a/v1"), &[]),
            &["http://proxy:3128".to_string()]
        ));
    }
}
