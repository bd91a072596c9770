//! The `student` engine: a student with the embedder it was trained on,
//! answering requests on this machine.

use std::fmt;

use serde_json::Value;
use toolnexus::classifier::{Decision, Questions};

use crate::embed::Embedder;
use crate::engine::{self, EngineInfo, ModelDir, QuestionKinds};

use super::file::{Student, StudentError, names};

/// The model name of a student's decisions starts with this.
pub const STUDENT_STYLE: &str = "student";

/// The student engine: `--style student --student FILE`, on the embedded
/// model.
pub const STUDENT_ENGINE: EngineInfo = EngineInfo {
    name: STUDENT_STYLE,
    summary: "answers on this machine with a student distilled from a teacher (uncalibrated)",
    answers: QuestionKinds::NOUL_CHOICE_SCORE,
    model_dir: ModelDir::Embedded,
    student: true,
};

/// A student with the embedder it was trained on: the `student` style's
/// evaluator, and the local half of a [`cascade`](fn@crate::student::cascade).
#[derive(Clone)]
pub struct LocalStudent {
    embedder: Embedder,
    student: std::sync::Arc<Student>,
}

impl fmt::Debug for LocalStudent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalStudent")
            .field("teacher_model", &self.student.teacher_model)
            .field(
                "questions",
                &self.student.questions.keys().collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl LocalStudent {
    /// Pairs a student with an embedder; refused when the student was trained
    /// on another embedding model.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-pair-{}", std::process::id()));
    /// # toolnexus_local::tiny_model_for_tests(&dir)?;
    /// # use std::collections::BTreeMap;
    /// let embedder = toolnexus_local::Embedder::load(&dir)?;
    /// let other = toolnexus_local::student::Student { embedding_model: "sha256:other".into(), teacher_model: "t".into(),
    ///     threshold: 0.9, target_agreement: 0.98, served_locally: 0.0, local_agreement: None, questions: BTreeMap::new(), state_text: Default::default() };
    /// let e = toolnexus_local::student::LocalStudent::new(embedder, other).unwrap_err();
    /// assert!(e.to_string().contains("another embedding model"), "{e}");
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(embedder: Embedder, student: Student) -> Result<LocalStudent, StudentError> {
        if student.embedding_model != embedder.model_hash() {
            return Err(StudentError::new(format!(
                "student: trained on another embedding model ({}; this model is {})",
                student.embedding_model,
                embedder.model_hash()
            )));
        }
        Ok(LocalStudent {
            embedder,
            student: std::sync::Arc::new(student),
        })
    }

    /// The student file's content.
    pub fn student(&self) -> &Student {
        &self.student
    }

    /// The decision on one state and its row confidence (blocking: embeds).
    pub fn decide(
        &self,
        state: &Value,
        questions: &Questions,
    ) -> Result<(Decision, f64), toolnexus::classifier::ClassifierError> {
        use toolnexus::classifier::ClassifierError;
        for (key, q) in questions {
            if !self.student.questions.contains_key(key) {
                return Err(ClassifierError::unsupported(
                    STUDENT_STYLE,
                    format_args!(
                        "question {key:?}: it has no head for it (trained on {})",
                        names(&self.student.questions)
                    ),
                ));
            }
            self.student.head_for(key, q).map_err(|e| {
                let why = e.to_string();
                ClassifierError::unsupported(
                    STUDENT_STYLE,
                    why.trim_start_matches("student: ").to_string(),
                )
            })?;
        }
        // Written and cut only as far as the model reads: a huge state costs
        // what a small one does.
        let text = self
            .student
            .state_text
            .write_for(&self.embedder, state)
            .map_err(|e| ClassifierError::custom(format_args!("local: {e}")))?;
        let embedded = self
            .embedder
            .embed_counted(&[text.as_str()])
            .map_err(|e| ClassifierError::custom(format_args!("local: {e}")))?;
        let (mut d, least) = self
            .student
            .answer(&embedded.vectors[0], questions)
            .map_err(|e| ClassifierError::custom(e.to_string()))?;
        d.usage.input_tokens = embedded.total_tokens() as i64;
        Ok((d, least))
    }

    /// [`decide`](LocalStudent::decide) after the shared checks of every
    /// engine, off the async threads.
    pub(super) fn decide_blocking(
        &self,
        request: toolnexus::classifier::EvalRequest,
    ) -> toolnexus::classifier::BoxFuture<
        Result<(Decision, f64), toolnexus::classifier::ClassifierError>,
    > {
        let me = self.clone();
        engine::run(&STUDENT_ENGINE, &self.model(), "local", request, move |r| {
            me.decide(&r.state, &r.questions)
        })
    }

    pub(super) fn model(&self) -> String {
        format!("toolnexus-student (teacher {})", self.student.teacher_model)
    }
}

impl toolnexus::classifier::Evaluator for LocalStudent {
    fn call(
        &self,
        _ctx: toolnexus::classifier::EvalContext,
        request: toolnexus::classifier::EvalRequest,
    ) -> toolnexus::classifier::BoxFuture<Result<Decision, toolnexus::classifier::ClassifierError>>
    {
        let fut = self.decide_blocking(request);
        Box::pin(async move { fut.await.map(|(d, _)| d) })
    }

    /// [`call`](toolnexus::classifier::Evaluator::call), the decision's
    /// extensions saying which precision answered when it was not f32.
    fn call_full(
        &self,
        _ctx: toolnexus::classifier::EvalContext,
        request: toolnexus::classifier::EvalRequest,
    ) -> toolnexus::classifier::BoxFuture<
        Result<toolnexus::classifier::Evaluated, toolnexus::classifier::ClassifierError>,
    > {
        let (fut, me) = (self.decide_blocking(request), self.clone());
        Box::pin(async move {
            let (d, _) = fut.await?;
            Ok(me.mark_precision(toolnexus::classifier::Evaluated::new(d)))
        })
    }
}

/// The `student` style: every asked question answered by its head (a question
/// without one, or changed since training, is `Unsupported` naming the key).
/// `calibrated = false`.
///
/// Its [`fingerprint`](toolnexus::classifier::Classifier::fingerprint) names
/// the student file's contents and the embedder's weights, so a cache never
/// serves one student's answer for another's.
pub fn student(local: LocalStudent) -> toolnexus::classifier::Classifier {
    let part = local.fingerprint();
    let model = local.model();
    let judge = toolnexus::classifier::Classifier::from_evaluator(model.clone(), local)
        .with_fingerprint_part(STUDENT_STYLE, part);
    engine::marked_local(judge, STUDENT_STYLE, &model)
}

impl LocalStudent {
    /// The student's contents (its file's text, hashed) and the weights it
    /// reads embeddings from: what a `student` or cascade fingerprint names.
    pub(super) fn fingerprint(&self) -> String {
        format!(
            "{} weights=sha256:{}{}",
            toolnexus::classifier::Fingerprint::digest(self.student.to_json()),
            self.embedder.model_hash(),
            self.embedder.precision_part()
        )
    }

    /// `e` marked with the precision its embeddings ran in (nothing for f32).
    pub(super) fn mark_precision(
        &self,
        e: toolnexus::classifier::Evaluated,
    ) -> toolnexus::classifier::Evaluated {
        self.embedder.mark_precision(e)
    }
}
