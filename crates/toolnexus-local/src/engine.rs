//! What every engine of this crate shares: what an engine says of itself
//! ([`EngineInfo`]: its name, which question kinds it answers, the model
//! directory it reads), the one place a request an engine cannot honour is
//! refused, the blocking forward pass moved off the async threads, and the
//! decision a local engine returns. The zero-shot style, the students, Laya
//! and DecisionTune all stand on this; a new engine does too
//! ([`local_classifier`]).

use std::collections::BTreeMap;

use serde_json::Value;
use toolnexus::classifier::{
    BoxFuture, Classifier, ClassifierError, ClassifierUsage, Decision, DecisionAnswer, EvalContext,
    EvalRequest, Evaluated, FullEvaluator, Identity, Question, Questions, validate_questions,
};

/// Which of the noul, choice and score question kinds an engine answers (no
/// engine here answers box questions).
///
/// ```
/// use toolnexus_local::QuestionKinds;
///
/// assert_eq!(QuestionKinds::NOUL_CHOICE_SCORE.to_string(), "noul, choice and score");
/// let noul = QuestionKinds { noul: true, choice: false, score: false };
/// assert_eq!(noul.to_string(), "noul");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuestionKinds {
    /// Answers noul (yes/no probability) questions.
    pub noul: bool,
    /// Answers choice questions.
    pub choice: bool,
    /// Answers score questions.
    pub score: bool,
}

impl QuestionKinds {
    /// Noul, choice and score: what every built-in engine answers.
    pub const NOUL_CHOICE_SCORE: QuestionKinds = QuestionKinds {
        noul: true,
        choice: true,
        score: true,
    };

    /// Whether a question of `q`'s kind is answered.
    ///
    /// ```
    /// use toolnexus::classifier::{BoxQuestion, Question};
    /// use toolnexus_local::QuestionKinds;
    ///
    /// let dent = Question::from(BoxQuestion { instructions: "Where?".into() });
    /// assert!(!QuestionKinds::NOUL_CHOICE_SCORE.answers(&dent));
    /// ```
    pub fn answers(&self, q: &Question) -> bool {
        match q {
            Question::Noul(_) => self.noul,
            Question::Choice(_) => self.choice,
            Question::Score(_) => self.score,
            Question::Box(_) => false,
        }
    }
}

impl std::fmt::Display for QuestionKinds {
    /// The kinds answered, as a list in words ("noul, choice and score";
    /// "nothing" for none).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kinds: Vec<&str> = [
            (self.noul, "noul"),
            (self.choice, "choice"),
            (self.score, "score"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        match kinds.as_slice() {
            [] => f.write_str("nothing"),
            [one] => f.write_str(one),
            [init @ .., last] => write!(f, "{} and {last}", init.join(", ")),
        }
    }
}

/// Which model directory an engine reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelDir {
    /// None: the engine reads no model directory.
    None,
    /// The embedded model (all-MiniLM-L6-v2), by default in the directory
    /// [`model_dir`](crate::model_dir) names.
    Embedded,
    /// A checkpoint the user downloaded: a directory must be given.
    Checkpoint,
}

/// What an engine says of itself: everything a surface shows or checks about
/// it (the CLI's `--style` help, serve's model list, pricing at $0) comes
/// from here, not from a list of names.
///
/// ```
/// use toolnexus_local::{EngineInfo, ModelDir, QuestionKinds};
///
/// const RULES: EngineInfo = EngineInfo {
///     name: "rules",
///     summary: "keyword rules, on this machine",
///     answers: QuestionKinds { noul: true, choice: false, score: false },
///     model_dir: ModelDir::None,
///     student: false,
/// };
/// assert_eq!(RULES.answers.to_string(), "noul");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineInfo {
    /// The engine's name: the `--style` that picks it, and the style its
    /// refusals name.
    pub name: &'static str,
    /// One line on what it is, shown in `--style` help and serve's model list.
    pub summary: &'static str,
    /// The question kinds it answers; any other is refused before it runs.
    pub answers: QuestionKinds,
    /// The model directory it reads.
    pub model_dir: ModelDir,
    /// Whether it needs a student file (from `toolnexus distill`).
    pub student: bool,
}

/// Refuses a request `info`'s engine cannot honour, before any work: a model
/// override (the engine answers with `model`), image assets or extra fields
/// ([`EvalRequest::refuse_beyond`]); invalid questions; and a question of a
/// kind the engine does not answer, named with its key and what the engine
/// does answer.
///
/// ```
/// use serde_json::json;
/// use toolnexus::classifier::{EvalRequest, Questions, choice_over};
/// use toolnexus_local::{EngineInfo, ModelDir, QuestionKinds, refuse_unanswerable};
///
/// const RULES: EngineInfo = EngineInfo {
///     name: "rules",
///     summary: "keyword rules",
///     answers: QuestionKinds { noul: true, choice: false, score: false },
///     model_dir: ModelDir::None,
///     student: false,
/// };
/// let qs = Questions::from([("desk".to_string(), choice_over("Which desk?", [("a", ""), ("b", "")]).into())]);
/// let e = refuse_unanswerable(&RULES, "rules-v1", &EvalRequest::new(json!("x"), qs)).unwrap_err();
/// assert_eq!(
///     e.to_string(),
///     "classifier: style \"rules\" cannot use choice question \"desk\" (it answers noul questions)"
/// );
/// ```
pub fn refuse_unanswerable(
    info: &EngineInfo,
    model: &str,
    request: &EvalRequest,
) -> Result<(), ClassifierError> {
    request.refuse_beyond(info.name, model)?;
    validate_questions(&request.questions)?;
    for (key, q) in &request.questions {
        if !info.answers.answers(q) {
            return Err(ClassifierError::unsupported(
                info.name,
                format_args!(
                    "{} question {key:?} (it answers {} questions)",
                    kind_name(q),
                    info.answers
                ),
            ));
        }
    }
    Ok(())
}

/// The kind of a question as the wire names it.
fn kind_name(q: &Question) -> &'static str {
    match q {
        Question::Noul(_) => "noul",
        Question::Choice(_) => "choice",
        Question::Score(_) => "score",
        Question::Box(_) => "box",
    }
}

/// Runs `work` on tokio's blocking pool when called inside a runtime (inline
/// otherwise). Dropping the future abandons the result; a forward pass
/// already started runs to its end. `style` names the engine if the work
/// panics.
pub(crate) fn off_thread<T: Send + 'static>(
    style: &'static str,
    work: impl FnOnce() -> Result<T, ClassifierError> + Send + 'static,
) -> BoxFuture<Result<T, ClassifierError>> {
    Box::pin(async move {
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => rt
                .spawn_blocking(work)
                .await
                .map_err(|e| ClassifierError::custom(format_args!("{style}: {e}")))?,
            Err(_) => work(),
        }
    })
}

/// The shared evaluator of every engine: the request checked once
/// ([`refuse_unanswerable`]), then `work` run off the async threads
/// ([`off_thread`], its panics named as `panics_as`'s).
pub(crate) fn run<T: Send + 'static>(
    info: &EngineInfo,
    model: &str,
    panics_as: &'static str,
    request: EvalRequest,
    work: impl FnOnce(EvalRequest) -> Result<T, ClassifierError> + Send + 'static,
) -> BoxFuture<Result<T, ClassifierError>> {
    if let Err(e) = refuse_unanswerable(info, model, &request) {
        return Box::pin(async move { Err(e) });
    }
    off_thread(panics_as, move || work(request))
}

/// The decision of a local engine: its `model`, `answers` and the `tokens`
/// it read as input tokens; no output tokens, no cost (a pricing layer
/// settles a local call at $0), uncalibrated.
pub(crate) fn local_decision(
    model: impl Into<String>,
    answers: BTreeMap<String, DecisionAnswer>,
    tokens: usize,
) -> Decision {
    Decision {
        model: model.into(),
        answers,
        usage: ClassifierUsage {
            input_tokens: i64::try_from(tokens).unwrap_or(i64::MAX),
            output_tokens: 0,
            cost: None,
        },
        calibrated: false,
    }
}

/// `classifier` marked as `engine`'s, answering with `model` on this machine:
/// what pricing reads to settle its calls at $0, and what a layer over it
/// forwards.
pub(crate) fn marked_local(classifier: Classifier, engine: &str, model: &str) -> Classifier {
    classifier.with_identity(Identity::local(engine, model))
}

/// An engine's blocking work on one request: what [`local_classifier`] runs
/// off the async threads, after the request was checked.
pub trait LocalEvaluator: Send + Sync + 'static {
    /// Answers `questions` on `state`, blocking the calling thread. Only
    /// questions of the kinds the engine's [`EngineInfo::answers`] lists
    /// reach it.
    fn evaluate_blocking(
        &self,
        state: &Value,
        questions: &Questions,
    ) -> Result<Evaluated, ClassifierError>;
}

/// The classifier of a new engine: `evaluator` behind the shared checks (a
/// question of a kind `info` does not list is refused, naming the engine, the
/// key, the kind and what it answers), run off the async threads, answering
/// with `model` and marked local.
///
/// ```
/// use std::collections::BTreeMap;
/// use serde_json::{Value, json};
/// use toolnexus::classifier::*;
/// use toolnexus_local::{EngineInfo, LocalEvaluator, ModelDir, QuestionKinds, local_classifier};
///
/// /// Says "spam" when the state mentions a prize.
/// struct Prize;
/// impl LocalEvaluator for Prize {
///     fn evaluate_blocking(&self, state: &Value, qs: &Questions) -> Result<Evaluated, ClassifierError> {
///         let p = if state.to_string().contains("prize") { 0.9 } else { 0.1 };
///         let answers: serde_json::Map<String, Value> =
///             qs.keys().map(|k| (k.clone(), json!({"type": "noul", "noul": p}))).collect();
///         Ok(Evaluated::new(Decision::from_value(&json!({"model": "prize-1", "answers": answers}))?))
///     }
/// }
/// const PRIZE: EngineInfo = EngineInfo {
///     name: "prize",
///     summary: "says spam when a prize is mentioned",
///     answers: QuestionKinds { noul: true, choice: false, score: false },
///     model_dir: ModelDir::None,
///     student: false,
/// };
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), ClassifierError> {
/// let judge = local_classifier(&PRIZE, "prize-1", Prize);
/// assert!(judge.identity().local && judge.identity().style == "prize");
/// let qs = Questions::from([("spam".to_string(), NoulQuestion { instructions: "Spam?".into(), criteria: None }.into())]);
/// assert_eq!(judge.evaluate(json!("you won a prize"), &qs).await?.noul("spam")?.noul, 0.9);
/// # Ok(())
/// # }
/// ```
pub fn local_classifier(
    info: &EngineInfo,
    model: impl Into<String>,
    evaluator: impl LocalEvaluator,
) -> Classifier {
    let model = model.into();
    let wrapped = Wrapped {
        info: *info,
        model: model.clone(),
        evaluator: std::sync::Arc::new(evaluator),
    };
    marked_local(
        Classifier::from_evaluator(model.clone(), wrapped),
        info.name,
        &model,
    )
}

/// A [`LocalEvaluator`] behind the shared checks.
struct Wrapped<E> {
    info: EngineInfo,
    model: String,
    evaluator: std::sync::Arc<E>,
}

impl<E: LocalEvaluator> FullEvaluator for Wrapped<E> {
    fn call_full(
        &self,
        _ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Evaluated, ClassifierError>> {
        let evaluator = std::sync::Arc::clone(&self.evaluator);
        run(&self.info, &self.model, self.info.name, request, move |r| {
            evaluator.evaluate_blocking(&r.state, &r.questions)
        })
    }
}

/// The arithmetic an encoder's matrix products run in: `f32` (the default,
/// the reference's own), `bf16` (weights converted once at load and kept in
/// bf16, activations rounded to bf16 on the way in, every product
/// accumulated in f32: what torch's bf16 autocast does), or `auto` (bf16
/// where the CPU multiplies bf16 itself, f32 elsewhere). Parsed from and
/// shown as those three words.
///
/// ```
/// use toolnexus_local::Precision;
///
/// assert_eq!(Precision::default(), Precision::F32);
/// assert_eq!("bf16".parse::<Precision>(), Ok(Precision::Bf16));
/// assert_eq!(Precision::Auto.to_string(), "auto");
/// assert_eq!(
///     "fp16".parse::<Precision>().unwrap_err(),
///     "\"fp16\" is not a precision: use f32, bf16 or auto"
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Precision {
    /// f32 throughout (the default).
    #[default]
    F32,
    /// bf16 products with f32 accumulation; an error on a CPU without a bf16
    /// unit (see [`resolve_precision`](crate::resolve_precision)).
    Bf16,
    /// bf16 where its products outrun f32's on this CPU (AMX, or AVX-512
    /// BF16 on a CPU not Intel's), f32 elsewhere.
    Auto,
}

impl Precision {
    /// The word that names it: `f32`, `bf16` or `auto`.
    ///
    /// ```
    /// assert_eq!(toolnexus_local::Precision::Bf16.name(), "bf16");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::Auto => "auto",
        }
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Precision {
    type Err = String;

    /// `f32`, `bf16` or `auto`; anything else is an error naming the value.
    fn from_str(s: &str) -> Result<Precision, String> {
        match s {
            "f32" => Ok(Precision::F32),
            "bf16" => Ok(Precision::Bf16),
            "auto" => Ok(Precision::Auto),
            other => Err(format!(
                "{other:?} is not a precision: use f32, bf16 or auto"
            )),
        }
    }
}
