//! Emulates a System One classifier with any chat model.
//!
//! Runs against an OpenAI-compatible (or Anthropic) endpoint named by the
//! environment, and skips cleanly when none is set:
//!
//! ```text
//! TOOLNEXUS_LLM_BASE_URL=http://127.0.0.1:11434/v1 \
//! TOOLNEXUS_LLM_MODEL=llama3.2 \
//! cargo run -p toolnexus --example llm_emulation
//! ```
//!
//! | variable | meaning |
//! |---|---|
//! | `TOOLNEXUS_LLM_BASE_URL` | the API root, e.g. `https://api.openai.com/v1` (required) |
//! | `TOOLNEXUS_LLM_MODEL` | the model id (required) |
//! | `TOOLNEXUS_LLM_API_KEY_ENV` | the NAME of the variable holding the key (optional) |
//! | `TOOLNEXUS_LLM_STYLE` | `openai` (default) or `anthropic` |
//! | `TOOLNEXUS_LLM_LOGPROBS` | `1` for log-probability mode (OpenAI-compatible servers) |

use serde_json::json;
use toolnexus::classifier::{
    ClassifierOptions, ClassifierStyle, NoulCriteria, NoulQuestion, Questions, ScoreQuestion,
    choice_over, create_classifier,
};
use toolnexus::client::{ClientOptions, Style, create_client};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let (Some(base_url), Some(model)) = (var("TOOLNEXUS_LLM_BASE_URL"), var("TOOLNEXUS_LLM_MODEL"))
    else {
        println!(
            "skipped: set TOOLNEXUS_LLM_BASE_URL and TOOLNEXUS_LLM_MODEL (and optionally \
             TOOLNEXUS_LLM_API_KEY_ENV, TOOLNEXUS_LLM_STYLE, TOOLNEXUS_LLM_LOGPROBS) to run \
             this example against a chat model"
        );
        return Ok(());
    };
    let style: Style = var("TOOLNEXUS_LLM_STYLE")
        .as_deref()
        .unwrap_or("openai")
        .parse()?;
    let client = create_client(ClientOptions {
        base_url,
        style,
        model,
        api_key_env: var("TOOLNEXUS_LLM_API_KEY_ENV").unwrap_or_default(),
        temperature: Some(0.0),
        timeout_ms: 60_000,
        logprobs: var("TOOLNEXUS_LLM_LOGPROBS").is_some_and(|v| v == "1"),
        ..Default::default()
    })?;
    let judge = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Llm,
        client: Some(client),
        ..Default::default()
    })?;

    let questions = Questions::from([
        (
            "refund".to_string(),
            NoulQuestion {
                instructions: "Does the customer ask for money back?".into(),
                criteria: Some(NoulCriteria {
                    when_true: "they want a refund, a chargeback or a credit".into(),
                    when_false: "anything else".into(),
                }),
            }
            .into(),
        ),
        (
            "desk".to_string(),
            choice_over(
                "Which team should handle this ticket?",
                [
                    (
                        "billing",
                        "money moved, or should move: charges, refunds, invoices",
                    ),
                    ("shipping", "a parcel is late, lost or damaged"),
                    ("account", "logins, passwords, profile settings"),
                ],
            )
            .into(),
        ),
        (
            "urgency".to_string(),
            ScoreQuestion {
                instructions: "How soon must someone act?".into(),
                criteria: vec![
                    "it can wait a week".into(),
                    "today".into(),
                    "right now".into(),
                ],
            }
            .into(),
        ),
    ]);
    let state = json!({"message": "I was charged twice for order 1182 - please refund one today."});

    let d = judge.evaluate(state, &questions).await?;
    println!("model: {} (calibrated: {})", d.model, d.calibrated);
    println!("refund: P(true) = {:.2}", d.noul("refund")?.noul);
    let desk = d.choice("desk")?;
    println!(
        "desk: {} (confidence {:.2}{}) {:?}",
        desk.choice,
        desk.confidence,
        if desk.near_uniform {
            ", near-uniform"
        } else {
            ""
        },
        desk.probabilities
    );
    let urgency = d.score("urgency")?;
    println!("urgency: {:.2} on {:?}", urgency.score, urgency.levels());
    match d.usage.cost {
        Some(c) => println!(
            "usage: {} in / {} out, cost {c}",
            d.usage.input_tokens, d.usage.output_tokens
        ),
        None => println!(
            "usage: {} in / {} out, cost not reported",
            d.usage.input_tokens, d.usage.output_tokens
        ),
    }
    Ok(())
}
