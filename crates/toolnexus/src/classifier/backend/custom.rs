//! The Custom style: the caller's closure builds the decision.

use serde_json::Value;

use crate::classifier::EvalContext;
use crate::classifier::decision::Decision;
use crate::classifier::options::EvaluateFn;
use crate::classifier::question::Questions;
use crate::error::{ClassifierError, msg};

/// Runs an [`EvaluateFn`]; cancellation wins over a closure that is still running.
pub(crate) async fn evaluate(
    f: &EvaluateFn,
    ctx: &EvalContext,
    state: Value,
    questions: &Questions,
) -> Result<Decision, ClassifierError> {
    let fut = f(ctx.clone(), state, questions.clone());
    match ctx.cancel.run_until_cancelled(fut).await {
        None => Err(msg::cancelled()),
        Some(Ok(d)) => Ok(d),
        Some(Err(text)) => Err(msg::custom(text)),
    }
}
