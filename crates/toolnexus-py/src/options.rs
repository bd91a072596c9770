//! `create_classifier`'s keyword arguments: a `StackSpec` for the one stack
//! builder, or, for the two styles whose bottom is a Python value (a custom
//! callable, recorded decisions), the library's classifier itself.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use toolnexus::classifier::{
    Classifier, ClassifierOptions, ClassifierStyle, Decision, EvalContext, Questions,
    RecordedDecision, create_classifier,
};
use toolnexus::client::BoxFuture;
use toolnexus::limit::{Limiter, LimiterOptions};
use toolnexus_stack::{Caps, StackSpec, StudentSource, TapeSource};

use crate::convert::{from_json, questions, questions_to_py, to_json};
use crate::decision;
use crate::error::{classifier_error, config_error};

/// Every keyword `create_classifier` takes, in the order its error lists them.
pub const KEYWORDS: &[&str] = &[
    "style",
    "model",
    "base_url",
    "backend",
    "api_key_env",
    "chat_style",
    "logprobs",
    "timeout_ms",
    "retries",
    "ca_cert",
    "tape",
    "tape_match",
    "call",
    "model_dir",
    "precision",
    "student",
    "cascade",
    "cascade_threshold",
    "calibration",
    "fallback",
    "cache",
    "alias_ttl_s",
    "max_cost",
    "max_tokens",
    "max_time_s",
    "rpm",
    "tpm",
    "concurrency",
    "decisions",
    "evaluate",
];

/// A classifier as `create_classifier` built it.
pub struct Built {
    /// The outermost classifier.
    pub classifier: Classifier,
    /// The style at the bottom.
    pub style: String,
    /// The call name evaluations run under.
    pub call: String,
}

/// Builds the classifier the keywords describe.
pub fn build(py: Python<'_>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Built> {
    let empty = PyDict::new(py);
    let kw = kwargs.unwrap_or(&empty);
    for key in kw.keys() {
        let key: String = key.extract()?;
        if !KEYWORDS.contains(&key.as_str()) {
            return Err(PyTypeError::new_err(format!(
                "create_classifier() got an unexpected keyword argument {key:?} (it takes {})",
                KEYWORDS.join(", ")
            )));
        }
    }
    let get = |name: &str| -> PyResult<Option<Bound<'_, PyAny>>> {
        Ok(kw.get_item(name)?.filter(|v| !v.is_none()))
    };
    let style: Option<String> = get("style")?.map(|s| s.extract()).transpose()?;
    // A bottom that is a Python value (a callable, recorded decisions) is
    // built here and given to the stack, which puts the layers over it.
    let bottom = match style.as_deref().map(str::trim) {
        Some("custom") => Some(custom(py, kw, get("evaluate")?)?),
        Some("static") if get("decisions")?.is_some() => Some(recorded(py, kw, get("decisions")?)?),
        _ => None,
    };
    if bottom.is_none() {
        for (name, goes_with) in [("evaluate", "custom"), ("decisions", "static")] {
            if get(name)?.is_some() {
                return Err(config_error(
                    py,
                    format!("create_classifier: {name}= goes with style=\"{goes_with}\""),
                ));
            }
        }
    }
    let mut spec = match bottom {
        Some(_) => stack_spec(py, None, &|name| match name {
            // Taken by the bottom itself.
            "model" => Ok(None),
            _ => get(name),
        })?,
        None => stack_spec(py, style, &get)?,
    };
    spec.bottom = bottom;
    let stack = toolnexus_stack::build(&spec).map_err(|e| config_error(py, e.to_string()))?;
    Ok(Built {
        classifier: stack.classifier,
        style: stack.style,
        call: stack.call,
    })
}

/// The spec of a stack from the keywords.
fn stack_spec<'py>(
    py: Python<'py>,
    style: Option<String>,
    get: &dyn Fn(&str) -> PyResult<Option<Bound<'py, PyAny>>>,
) -> PyResult<StackSpec> {
    let text = |name: &str| -> PyResult<Option<String>> {
        get(name)?.map(|v| extract_named(&v, name)).transpose()
    };
    let path = |name: &str| -> PyResult<Option<PathBuf>> {
        get(name)?.map(|v| extract_named(&v, name)).transpose()
    };
    let parsed =
        |name: &str, e: String| config_error(py, format!("create_classifier: {name}=: {e}"));
    let mut spec = StackSpec {
        style,
        model: text("model")?,
        base_url: text("base_url")?,
        api_key_env: text("api_key_env")?,
        call: text("call")?,
        ca_cert: path("ca_cert")?,
        model_dir: path("model_dir")?,
        calibration: path("calibration")?,
        tape: path("tape")?.map(TapeSource::File),
        student: path("student")?.map(StudentSource::File),
        ..Default::default()
    };
    if let Some(b) = text("backend")? {
        spec.backend = Some(
            b.parse()
                .map_err(|e: toolnexus::classifier::ClassifierError| {
                    parsed("backend", e.detail().to_string())
                })?,
        );
    }
    if let Some(s) = text("chat_style")? {
        spec.chat_style = Some(s.parse().map_err(
            |e: toolnexus::classifier::ClassifierError| {
                parsed("chat_style", e.detail().to_string())
            },
        )?);
    }
    if let Some(p) = text("precision")? {
        spec.precision = p.parse().map_err(|e| parsed("precision", e))?;
    }
    if let Some(m) = text("tape_match")? {
        spec.tape_match = Some(m.parse().map_err(
            |e: toolnexus::classifier::ClassifierError| {
                parsed("tape_match", e.detail().to_string())
            },
        )?);
    }
    if let Some(v) = get("logprobs")? {
        spec.logprobs = extract_named(&v, "logprobs")?;
    }
    if let Some(v) = get("cascade")? {
        spec.cascade = extract_named(&v, "cascade")?;
    }
    spec.cascade_threshold = get("cascade_threshold")?
        .map(|v| extract_named(&v, "cascade_threshold"))
        .transpose()?;
    spec.timeout_ms = get("timeout_ms")?
        .map(|v| extract_named(&v, "timeout_ms"))
        .transpose()?;
    spec.retries = get("retries")?
        .map(|v| extract_named(&v, "retries"))
        .transpose()?;
    if let Some(v) = get("fallback")? {
        spec.fallback_base_urls = match v.extract::<String>() {
            Ok(one) => vec![one],
            Err(_) => extract_named(&v, "fallback")?,
        };
    }
    let caps = Caps {
        max_cost: get("max_cost")?
            .map(|v| extract_named(&v, "max_cost"))
            .transpose()?,
        max_tokens: get("max_tokens")?
            .map(|v| extract_named(&v, "max_tokens"))
            .transpose()?,
        max_time: get("max_time_s")?
            .map(|v| seconds(py, &v, "max_time_s"))
            .transpose()?,
    };
    spec.caps = caps.any().then_some(caps);
    let rpm: Option<u32> = get("rpm")?.map(|v| extract_named(&v, "rpm")).transpose()?;
    let tpm: Option<u64> = get("tpm")?.map(|v| extract_named(&v, "tpm")).transpose()?;
    let concurrency: Option<usize> = get("concurrency")?
        .map(|v| extract_named(&v, "concurrency"))
        .transpose()?;
    if rpm.is_some() || tpm.is_some() || concurrency.is_some() {
        let most = concurrency.unwrap_or(LimiterOptions::default().max_concurrency);
        if most == 0 {
            return Err(config_error(
                py,
                "create_classifier: concurrency= must be at least 1",
            ));
        }
        spec.limiter = Some(Limiter::new(LimiterOptions {
            requests_per_minute: rpm,
            tokens_per_minute: tpm,
            max_concurrency: most,
            initial_concurrency: most,
        }));
    }
    if let Some(v) = get("cache")? {
        let ttl = match get("alias_ttl_s")? {
            Some(t) => seconds(py, &t, "alias_ttl_s")?,
            // The command line's `--alias-ttl` default.
            None => Duration::from_secs(3600),
        };
        let store: Arc<dyn toolnexus::cache::Cache> = match v.extract::<bool>() {
            Ok(true) => Arc::new(toolnexus::cache::MemoryCache::new()),
            Ok(false) => return Ok(spec),
            Err(_) => {
                let file: PathBuf = extract_named(&v, "cache")?;
                let opened = toolnexus::cache::SqliteCache::open(&file, Default::default())
                    .map_err(|e| {
                        config_error(
                            py,
                            format!("create_classifier: cache={}: {e}", file.display()),
                        )
                    })?;
                Arc::new(opened)
            }
        };
        spec.cache = Some((store, ttl));
    }
    Ok(spec)
}

/// A keyword's value of the type it takes, or a TypeError naming it.
fn extract_named<'py, T: FromPyObjectOwned<'py>>(v: &Bound<'py, PyAny>, name: &str) -> PyResult<T> {
    v.extract::<T>().map_err(|e| {
        let e: PyErr = e.into();
        PyTypeError::new_err(format!("create_classifier: {name}=: {e}"))
    })
}

/// A number of seconds, finite and not negative.
fn seconds(py: Python<'_>, v: &Bound<'_, PyAny>, name: &str) -> PyResult<Duration> {
    let s: f64 = extract_named(v, name)?;
    Duration::try_from_secs_f64(s).map_err(|_| {
        config_error(
            py,
            format!("create_classifier: {name}={s}: want a number of seconds, 0 or more"),
        )
    })
}

/// The custom style's bottom: a Python callable `(state, questions) -> dict` (the
/// wire JSON of a decision) or a `Decision`, run on the blocking pool.
fn custom(
    py: Python<'_>,
    kw: &Bound<'_, PyDict>,
    evaluate: Option<Bound<'_, PyAny>>,
) -> PyResult<Classifier> {
    let Some(callable) = evaluate else {
        let e =
            toolnexus::classifier::ClassifierError::config("style \"custom\" requires Evaluate");
        return Err(classifier_error(py, &e));
    };
    if !callable.is_callable() {
        return Err(PyTypeError::new_err(
            "create_classifier: evaluate= must be callable: (state, questions) -> dict",
        ));
    }
    let callable: Arc<Py<PyAny>> = Arc::new(callable.unbind());
    let model: Option<String> = kw
        .get_item("model")?
        .filter(|v| !v.is_none())
        .map(|v| v.extract())
        .transpose()?;
    let evaluate: toolnexus::classifier::EvaluateFn = Arc::new(
        move |_ctx: EvalContext, state, qs: Questions| -> BoxFuture<Result<Decision, String>> {
            let callable = callable.clone();
            Box::pin(async move {
                // The GIL is taken off the runtime's workers: a slow callable
                // holds one blocking thread, never an async worker.
                tokio::task::spawn_blocking(move || {
                    Python::attach(|py| call_custom(py, &callable, &state, &qs))
                })
                .await
                .map_err(|e| format!("the evaluate callable did not finish: {e}"))?
            })
        },
    );
    create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        model: model.unwrap_or_default(),
        evaluate: Some(evaluate),
        ..Default::default()
    })
    .map_err(|e| classifier_error(py, &e))
}

/// One call of a custom callable: its dict decoded strictly, or its
/// Decision taken as is; an exception is the call's error, as `Type: text`.
fn call_custom(
    py: Python<'_>,
    callable: &Py<PyAny>,
    state: &serde_json::Value,
    qs: &Questions,
) -> Result<Decision, String> {
    let run = || -> PyResult<Decision> {
        let state = from_json(py, state)?;
        let qs = questions_to_py(py, qs)?;
        let out = callable.bind(py).call1((state, qs))?;
        if let Ok(d) = out.cast::<decision::Decision>() {
            return Ok(d.get().inner.clone());
        }
        let wire = to_json(&out)?;
        Decision::from_value(&wire).map_err(|e| PyValueError::new_err(e.detail().to_string()))
    };
    run().map_err(|e| e.to_string())
}

/// The static style's bottom over `decisions`: `toolnexus.RecordedDecision(state,
/// questions, response)` values, the response as bytes, str or a dict.
fn recorded(
    py: Python<'_>,
    kw: &Bound<'_, PyDict>,
    decisions: Option<Bound<'_, PyAny>>,
) -> PyResult<Classifier> {
    let mut out = Vec::new();
    if let Some(list) = decisions {
        for (i, item) in list.try_iter()?.enumerate() {
            let item = item?;
            let field = |name: &str| {
                item.getattr(name).map_err(|_| {
                    PyTypeError::new_err(format!(
                        "create_classifier: decisions[{i}] is not a toolnexus.RecordedDecision (no .{name})"
                    ))
                })
            };
            let response = field("response")?;
            let response: Vec<u8> = if let Ok(b) = response.cast::<PyBytes>() {
                b.as_bytes().to_vec()
            } else if let Ok(s) = response.extract::<String>() {
                s.into_bytes()
            } else {
                serde_json::to_vec(&to_json(&response)?).unwrap_or_default()
            };
            out.push(RecordedDecision {
                state: to_json(&field("state")?)?,
                questions: questions(&field("questions")?)?,
                response,
            });
        }
    }
    let model: Option<String> = kw
        .get_item("model")?
        .filter(|v| !v.is_none())
        .map(|v| v.extract())
        .transpose()?;
    create_classifier(ClassifierOptions {
        style: ClassifierStyle::Static,
        model: model.unwrap_or_default(),
        decisions: out,
        ..Default::default()
    })
    .map_err(|e| classifier_error(py, &e))
}
