//! The Llm style: a System One model emulated over a chat [`Client`]. The
//! questions and the state become one prompt ([`render_prompt`]) and the reply's
//! outermost JSON object is decoded strictly ([`decode_reply`]); in
//! log-probability mode each question is asked on its own and its distribution
//! read from the answer tokens. Never calibrated.

mod logprobs;
mod prompt;

pub use prompt::{decode_reply, render_prompt};

use serde_json::Value;

use crate::classifier::{Evaluated, Questions};
use crate::client::{ChatReply, Client};
use crate::context::EvalContext;
use crate::error::{ClassifierError, msg};

/// One chat completion for all questions, or one constrained request per
/// question in log-probability mode.
pub(crate) async fn evaluate(
    client: &Client,
    ctx: &EvalContext,
    state: &Value,
    questions: &Questions,
) -> Result<Evaluated, ClassifierError> {
    prompt::unsupported_for_llm(questions)?;
    if client.is_logprobs() {
        return logprobs::evaluate(client, ctx, state, questions, client.top_logprobs())
            .await
            .map(Evaluated::new);
    }
    let messages = render_prompt(state, questions);
    let reply = client.chat(ctx, &messages).await?;
    check_reply(client, &reply)?;
    let mut out = prompt::decode_reply_for(&reply.text, &reply.model, Some(questions))?;
    out.decision.usage = reply.usage;
    Ok(Evaluated {
        cost: crate::price::Cost::of_usage(&out.decision.usage),
        decision: out.decision,
        request_id: None,
        dropped: out.dropped,
        cache_hit: false,
        wire_body: None,
        extensions: Default::default(),
    })
}

/// Turns a refusal or a reply cut at the token limit into an error.
pub(crate) fn check_reply(client: &Client, reply: &ChatReply) -> Result<(), ClassifierError> {
    if let Some(r) = &reply.refusal {
        return Err(msg::llm_refused(&prompt::cut(r, 200)));
    }
    if reply.is_truncated() {
        return Err(msg::llm_truncated(
            client.style().stop_field(),
            reply.finish_reason.as_deref().unwrap_or_default(),
        ));
    }
    Ok(())
}
