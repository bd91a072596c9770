//! Where the guard's judge comes from. The guard builds no style of its own:
//! its caller hands it a [`JudgeSource`], whose judge is built on the first
//! call that needs one (a call settled by a rule never loads a model). The one
//! judge the guard knows how to build is its built-in one: the guard's
//! student on the embedded model, in a cascade in front of the zero-shot style.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolnexus::classifier::{Classifier, ClassifierError, EnvSource};
use toolnexus_local::Precision;

use crate::json::one_line;
use crate::policy::GUARD_STUDENT;

/// A classifier ready to judge calls, and the call name it evaluates under
/// (what a tape or a server's log files the requests as).
#[derive(Clone)]
pub struct Judge {
    /// The classifier asked about each call.
    pub classifier: Classifier,
    /// The call name given to each evaluation.
    pub call: String,
}

impl Judge {
    /// A judge from a classifier and its call name.
    ///
    /// ```
    /// use toolnexus::classifier::*;
    /// use toolnexus_guard::{Judge, JudgeSource};
    ///
    /// /// A judge with no opinion: it answers nothing.
    /// struct Silent;
    /// impl Evaluator for Silent {
    ///     fn call(&self, _: EvalContext, _: EvalRequest) -> BoxFuture<Result<Decision, ClassifierError>> {
    ///         Box::pin(async { Decision::from_slice(br#"{"model":"silent","answers":{}}"#) })
    ///     }
    /// }
    /// let judge = Judge::new(Classifier::from_evaluator("silent", Silent), "guard");
    /// assert_eq!(judge.classifier.model(), "silent");
    /// let source = JudgeSource::ready(judge);
    /// # let _ = source;
    /// ```
    pub fn new(classifier: Classifier, call: impl Into<String>) -> Judge {
        Judge {
            classifier,
            call: call.into(),
        }
    }
}

impl std::fmt::Debug for Judge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Judge")
            .field("model", &self.classifier.model())
            .field("call", &self.call)
            .finish()
    }
}

/// Builds a judge when the first call needs one. It runs once, off the async
/// threads (loading a model reads files), and its error is kept: every later
/// call that needs the judge reports it.
pub type JudgeBuilder = Arc<dyn Fn() -> Result<Judge, JudgeError> + Send + Sync>;

/// Where a [`Guard`](crate::Guard)'s judge comes from.
#[derive(Clone)]
pub enum JudgeSource {
    /// The built-in judge ([`builtin_judge`]) on the embedded model in this
    /// directory (`None`: `$TOOLNEXUS_MODEL_DIR`, else the default one).
    Builtin {
        /// The embedded model's directory.
        model_dir: Option<PathBuf>,
        /// What the encoder multiplies in (see [`Precision`]).
        precision: Precision,
    },
    /// A judge the caller builds (a style, a stack), on first use.
    Supplied(JudgeBuilder),
    /// A toolnexus serve at `url`, built by the caller on first use; when it
    /// fails, the built-in judge on `model_dir` answers instead, and the
    /// reason says so.
    Server {
        /// The server as the user named it (reasons quote it).
        url: String,
        /// Builds the server's client (see [`server_base_url`]).
        build: JudgeBuilder,
        /// The embedded model's directory for the built-in judge.
        model_dir: Option<PathBuf>,
        /// What the built-in judge's encoder multiplies in.
        precision: Precision,
    },
}

impl JudgeSource {
    /// The built-in judge on the embedded model in `model_dir`, in f32.
    ///
    /// ```
    /// let source = toolnexus_guard::JudgeSource::builtin(None);
    /// assert!(format!("{source:?}").starts_with("Builtin"));
    /// ```
    pub fn builtin(model_dir: Option<PathBuf>) -> JudgeSource {
        JudgeSource::Builtin {
            model_dir,
            precision: Precision::F32,
        }
    }

    /// This source with the built-in judge (its own, or a server's
    /// fallback) running its encoder in `precision`; a supplied judge is
    /// left as it is (its builder chose its own).
    ///
    /// ```
    /// use toolnexus_guard::JudgeSource;
    /// use toolnexus_local::Precision;
    ///
    /// let source = JudgeSource::builtin(None).with_precision(Precision::Bf16);
    /// assert!(format!("{source:?}").contains("precision: Bf16"), "{source:?}");
    /// ```
    pub fn with_precision(mut self, precision: Precision) -> JudgeSource {
        match &mut self {
            JudgeSource::Builtin { precision: p, .. }
            | JudgeSource::Server { precision: p, .. } => {
                *p = precision;
            }
            JudgeSource::Supplied(_) => {}
        }
        self
    }

    /// A judge built by `build` on first use.
    ///
    /// ```
    /// use toolnexus_guard::{JudgeError, JudgeSource};
    /// let source = JudgeSource::supplied(|| Err(JudgeError::build("no key for the judge")));
    /// # let _ = source;
    /// ```
    pub fn supplied(
        build: impl Fn() -> Result<Judge, JudgeError> + Send + Sync + 'static,
    ) -> JudgeSource {
        JudgeSource::Supplied(Arc::new(build))
    }

    /// A judge already built.
    pub fn ready(judge: Judge) -> JudgeSource {
        JudgeSource::supplied(move || Ok(judge.clone()))
    }

    /// A toolnexus serve at `url` (`build` makes its client), falling back to
    /// the built-in judge on `model_dir`.
    ///
    /// ```
    /// use toolnexus_guard::{JudgeError, JudgeSource};
    /// let url = "http://127.0.0.1:8080/v1/systemone";
    /// let base = toolnexus_guard::judge::server_base_url(url);
    /// assert_eq!(base, "http://127.0.0.1:8080/v1");
    /// let source = JudgeSource::server(url, None, move || Err(JudgeError::build(format!("{base}: not built here"))));
    /// # let _ = source;
    /// ```
    pub fn server(
        url: impl Into<String>,
        model_dir: Option<PathBuf>,
        build: impl Fn() -> Result<Judge, JudgeError> + Send + Sync + 'static,
    ) -> JudgeSource {
        JudgeSource::Server {
            url: url.into(),
            build: Arc::new(build),
            model_dir,
            precision: Precision::F32,
        }
    }
}

impl std::fmt::Debug for JudgeSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JudgeSource::Builtin {
                model_dir,
                precision,
            } => f
                .debug_struct("Builtin")
                .field("model_dir", model_dir)
                .field("precision", precision)
                .finish(),
            JudgeSource::Supplied(_) => f.write_str("Supplied(..)"),
            JudgeSource::Server {
                url,
                model_dir,
                precision,
                ..
            } => f
                .debug_struct("Server")
                .field("url", url)
                .field("model_dir", model_dir)
                .field("precision", precision)
                .finish(),
        }
    }
}

/// The System One base URL (`…/v1`) of a toolnexus serve named as its root,
/// its `/v1`, or its `/v1/systemone` endpoint.
///
/// ```
/// use toolnexus_guard::judge::server_base_url;
/// assert_eq!(server_base_url("http://h:1/"), "http://h:1/v1");
/// assert_eq!(server_base_url("http://h:1/v1"), "http://h:1/v1");
/// assert_eq!(server_base_url("http://h:1/v1/systemone/"), "http://h:1/v1");
/// ```
pub fn server_base_url(url: &str) -> String {
    let base = url.trim_end_matches('/');
    let base = base.strip_suffix("/v1/systemone").unwrap_or(base);
    if base.ends_with("/v1") {
        base.to_string()
    } else {
        format!("{base}/v1")
    }
}

/// Why a call could not be judged: every one is the policy's `on_error`.
///
/// ```
/// use toolnexus_guard::JudgeError;
/// let e = JudgeError::Missing { model: "m".into(), keys: vec!["secrets".into()] };
/// assert_eq!(e.to_string(), "the judge m gave no answer to \"secrets\"");
/// ```
#[derive(Debug, Clone, thiserror::Error)]
pub enum JudgeError {
    /// The judge could not be built (no model on this machine, a bad style).
    #[error("{0}")]
    Build(String),
    /// The judge failed to answer.
    #[error("{0}")]
    Evaluate(#[source] Arc<ClassifierError>),
    /// The judge left questions unanswered.
    #[error("the judge {model} gave no answer to {}", quoted(keys))]
    Missing {
        /// The answering model.
        model: String,
        /// The questions without an answer.
        keys: Vec<String>,
    },
    /// The judge answered a question as another type of question.
    #[error("the judge {model} answered {key:?} as a {answered} question, not {asked}")]
    Mistyped {
        /// The answering model.
        model: String,
        /// The question.
        key: String,
        /// The type of the answer.
        answered: &'static str,
        /// The type of the question.
        asked: &'static str,
    },
    /// The judge answered with a number that is not finite.
    #[error("the judge {model} answered {key:?} with a number that is not finite")]
    NotFinite {
        /// The answering model.
        model: String,
        /// The question.
        key: String,
    },
    /// The judge took longer than the policy's budget.
    #[error("the judge took longer than the policy's budget_ms ({0} ms)")]
    OverBudget(u64),
    /// A server failed, and so did the built-in judge that stands in for it.
    #[error("the server at {url} failed ({server}), and so did the judge here ({local})")]
    ServerAndLocal {
        /// The server as named.
        url: String,
        /// The server's failure.
        server: Box<JudgeError>,
        /// The built-in judge's failure.
        local: Box<JudgeError>,
    },
}

impl JudgeError {
    /// A judge that could not be built, and why (on one line).
    pub fn build(why: impl std::fmt::Display) -> JudgeError {
        JudgeError::Build(one_line(why))
    }
}

impl From<ClassifierError> for JudgeError {
    fn from(e: ClassifierError) -> JudgeError {
        JudgeError::Evaluate(Arc::new(e))
    }
}

fn quoted(keys: &[String]) -> String {
    keys.iter()
        .map(|k| format!("{k:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Builds a judge off the async threads (loading a model reads files).
pub(crate) async fn build(make: JudgeBuilder) -> Result<Judge, JudgeError> {
    tokio::task::spawn_blocking(move || make())
        .await
        .map_err(|e| JudgeError::build(format!("the judge could not be built: {e}")))?
}

/// The built-in judge as a builder, on `model_dir`, in `precision`.
pub(crate) fn builtin_builder(model_dir: Option<PathBuf>, precision: Precision) -> JudgeBuilder {
    Arc::new(move || builtin_judge(model_dir.as_deref(), precision).map(|c| Judge::new(c, "guard")))
}

/// The built-in judge: the guard's student on the embedded model, in a
/// cascade in front of the zero-shot style (which answers only a request with
/// a question the student has no head for). `model_dir`: the embedded model's
/// directory (`None`: `$TOOLNEXUS_MODEL_DIR`, else the default one);
/// `precision`: what its encoder multiplies in (bf16 on a CPU without a
/// bf16 unit is refused, naming `--precision`).
///
/// ```
/// use toolnexus_local::Precision;
///
/// let dir = std::env::temp_dir().join("toolnexus-guard-doc-no-model");
/// let e = toolnexus_guard::judge::builtin_judge(Some(&dir), Precision::F32).unwrap_err();
/// assert!(e.to_string().contains("toolnexus model fetch"), "{e}");
/// ```
pub fn builtin_judge(
    model_dir: Option<&Path>,
    precision: Precision,
) -> Result<Classifier, JudgeError> {
    let dir = toolnexus_local::model_dir(model_dir, &EnvSource::process()).map_err(|e| {
        JudgeError::build(format!(
            "the embedded model is not on this machine (run `toolnexus model fetch`): {e}"
        ))
    })?;
    // Through the one stack builder: the zero-shot style on the embedded
    // model, the built-in student in front at threshold 0 (it answers every
    // request it has heads for).
    let spec = toolnexus_stack::StackSpec {
        style: Some("local".into()),
        model_dir: Some(dir),
        student: Some(toolnexus_stack::StudentSource::Loaded(
            Box::new(builtin_student()?),
            BUILTIN_STUDENT.to_string(),
        )),
        cascade: true,
        cascade_threshold: Some(0.0),
        precision,
        ..Default::default()
    };
    toolnexus_stack::build_answering(&spec)
        .map(|s| s.classifier)
        .map_err(|e| JudgeError::build(e.to_string()))
}

/// How `--student` names the built-in guard student.
pub const BUILTIN_STUDENT: &str = "builtin:guard";

/// The built-in guard student (`--student builtin:guard`), distilled from the
/// guard set's train split and compiled in.
///
/// ```
/// let student = toolnexus_guard::builtin_student()?;
/// # let _ = student;
/// # Ok::<(), toolnexus_guard::JudgeError>(())
/// ```
pub fn builtin_student() -> Result<toolnexus_local::student::Student, JudgeError> {
    toolnexus_local::student::Student::from_json(GUARD_STUDENT, BUILTIN_STUDENT)
        .map_err(|e| JudgeError::build(format!("the built-in guard student: {e}")))
}
