//! The recording classifier: the live classifier's outcomes, each put on the
//! tape as it arrives.

use crate::classifier::{
    Classifier, ClassifierError, EvalContext, EvalRequest, Evaluated, FullEvaluator,
};
use crate::context::BoxFuture;

use super::format::{TapeEntry, TapeOutcome};
use super::store::Tape;

/// What [`Tape::recorder`] runs: the live classifier, each outcome recorded.
struct Recorder {
    tape: Tape,
    live: Classifier,
}

impl FullEvaluator for Recorder {
    fn call_full(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Evaluated, ClassifierError>> {
        let tape = self.tape.clone();
        let live = self.live.clone();
        Box::pin(async move {
            // A tape keys entries by state and questions only: what else a
            // request carries could not be replayed, so it is not recorded.
            let own = live.model().to_string();
            request.refuse_beyond("tape", &own)?;
            let call_name = ctx.call_name.clone();
            let (state, questions) = (request.state.clone(), request.questions.clone());
            let result = live.evaluate_request(ctx, request).await;
            let (outcome, request_id) = match &result {
                Ok(e) => (
                    Some(TapeOutcome::Decision(e.decision.clone())),
                    e.request_id.clone(),
                ),
                Err(e) if e.is_cancelled() => (None, None),
                Err(e) => (
                    Some(TapeOutcome::Failure {
                        kind: e.kind(),
                        message: e.to_string(),
                        status: e.status(),
                    }),
                    e.request_id().map(str::to_string),
                ),
            };
            if let Some(outcome) = outcome {
                tape.record(TapeEntry {
                    call_name,
                    model: own,
                    state,
                    questions,
                    outcome,
                    request_id,
                });
            }
            result
        })
    }
}

impl Tape {
    /// Wraps a live classifier so every call is recorded into this tape under its
    /// [`EvalContext::call_name`](crate::classifier::EvalContext): the decision,
    /// or the failure (kind, message, HTTP status) as data. A cancelled call is
    /// not recorded: cancelling is the caller's act, not the model's answer.
    ///
    /// The returned classifier has style `Custom` and the live one's model, and
    /// returns exactly what the live one returns, errors unchanged.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use serde_json::json;
    /// use toolnexus::classifier::*;
    /// use toolnexus::judge::{Tape, noul, questions};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let live = create_classifier(ClassifierOptions {
    ///     style: ClassifierStyle::Custom,
    ///     evaluate: Some(Arc::new(|_ctx, _state, _qs| Box::pin(async { Err("model unavailable".to_string()) }))),
    ///     ..Default::default()
    /// })?;
    /// let tape = Tape::new();
    /// let qs = questions(&[noul("spam", "Is this unsolicited bulk mail?")])?;
    /// let e = tape.recorder(live).evaluate(json!("hi"), &qs).await.unwrap_err();
    /// assert_eq!(e.to_string(), "classifier: custom: model unavailable");
    /// assert!(!tape.entries()[0].outcome.is_decision(), "the failure is on the tape");
    /// # Ok(())
    /// # }
    /// ```
    pub fn recorder(&self, live: Classifier) -> Classifier {
        let tape = self.clone();
        let model = live.model().to_string();
        // Recording changes no answer: the live stack's fingerprint passes on.
        let beneath = live.clone();
        Classifier::from_evaluator(model, Recorder { tape, live }).layered_over(&beneath)
    }
}
