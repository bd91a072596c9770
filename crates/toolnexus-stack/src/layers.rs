//! The layers over the bottom of a stack, in the crate's one order: pricing,
//! the budget of the caps, the cache, pricing again, and the shadow.

use toolnexus::classifier::{ClassifierUsage, EvalRequest};
use toolnexus::cost::budget::{Budget, BudgetOptions, Spend, TokenPrice, budgeted};
use toolnexus::cost::{Cost, CostSource, Estimator, Pricing, Shape};
use toolnexus::judge::TapeOutcome;

use crate::error::{StackError, bad};
use crate::spec::StackSpec;
use crate::stack::Stack;

/// The variable a price table's path is read from (the command line's `--prices`).
const PRICES_ENV: &str = "TOOLNEXUS_PRICES";

/// Pricing, caps, cache, outer pricing and the shadow over the answering stack.
pub fn apply(spec: &StackSpec, stack: &mut Stack) -> Result<(), StackError> {
    // The budget sits beneath the cache: a hit costs nothing.
    let inner = stack.classifier.clone();
    if let Some(caps) = spec.caps.filter(|c| c.any()) {
        let price = price(&stack.pricing, &inner.identity().model);
        let recordings_priced = stack.tape.as_ref().is_some_and(|(tape, _)| {
            tape.call_entries(&stack.call)
                .iter()
                .all(|e| match &e.outcome {
                    TapeOutcome::Decision(d) => {
                        d.usage.cost.is_some()
                            || self::price(&stack.pricing, &d.model).is_some()
                            || self::price(&stack.pricing, &e.model).is_some()
                    }
                    TapeOutcome::Failure { .. } => true,
                })
        });
        if let (Some(usd), None, false) = (caps.max_cost, price, recordings_priced) {
            let model = &inner.identity().model;
            return bad(format!(
                "--max-cost {usd}: no price for model {model:?} in the price table, so the cap could not be enforced; give it one with --prices FILE or ${PRICES_ENV} (a price whose \"model\" pattern matches {model:?}), or cap with --max-tokens instead"
            ));
        }
        let budget = Budget::new(BudgetOptions {
            max_usd: caps.max_cost,
            max_tokens: caps.max_tokens,
            max_time: caps.max_time,
            price,
        });
        // Priced beneath the budget too, on the model that answered: a
        // cascade's teacher is billed at the teacher's price.
        stack.classifier = share(stack.classifier.clone(), &budget, &stack.pricing);
        stack.budget = Some(budget);
    }
    if let Some((cache, alias_ttl)) = &spec.cache {
        stack.classifier = toolnexus::cache::caching_with(
            stack.classifier.clone(),
            cache.clone(),
            toolnexus::cache::CachingOptions {
                alias_ttl: *alias_ttl,
            },
        );
    }
    // Outermost, so a hit is a known $0.
    stack.classifier = toolnexus::cost::pricing(stack.classifier.clone(), stack.pricing.clone());
    if let Some(shadow) = &spec.shadow {
        // The shadow is compared with what the caller gets (a cache hit
        // included), and its calls count against the same caps.
        let second = crate::bottom::build(&shadow.spec)
            .map_err(|e| StackError::new(format!("--shadow-style: {e}")))?;
        stack.shadow_model = Some(second.classifier.model().to_string());
        let candidate = match &stack.budget {
            Some(budget) => share(second.classifier, budget, &second.pricing),
            None => second.classifier,
        };
        stack.classifier =
            toolnexus::compose::shadow(stack.classifier.clone(), candidate, shadow.options.clone());
    }
    Ok(())
}

/// `inner` priced and behind `budget`: a second stack (a shadow) that spends
/// from the same caps as the first.
///
/// ```
/// use toolnexus::classifier::{ClassifierOptions, create_classifier};
/// use toolnexus::cost::Pricing;
/// use toolnexus::cost::budget::{Budget, BudgetOptions};
/// let judge = create_classifier(ClassifierOptions::default())?;
/// let budget = Budget::new(BudgetOptions { max_tokens: Some(1_000), ..Default::default() });
/// let shared = toolnexus_stack::share(judge.clone(), &budget, &Pricing::Local);
/// assert_eq!(shared.identity(), judge.identity());
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
pub fn share(
    inner: toolnexus::classifier::Classifier,
    budget: &Budget,
    pricing: &Pricing,
) -> toolnexus::classifier::Classifier {
    budgeted(
        toolnexus::cost::pricing(inner, pricing.clone()),
        budget.clone(),
        estimate,
    )
}

/// Counts what earlier runs of the same job spent against `budget`: the cap
/// holds for the job, not for each run. Each item is one earlier call's cost
/// and usage, as the run's own file recorded them.
///
/// ```
/// use toolnexus::classifier::ClassifierUsage;
/// use toolnexus::cost::budget::{Budget, BudgetOptions};
/// use toolnexus::cost::{Cost, CostSource};
/// let budget = Budget::new(BudgetOptions { max_usd: Some(1.0), ..Default::default() });
/// let earlier = Cost::new(0.25, CostSource::Reported);
/// toolnexus_stack::carry(Some(&budget), [(earlier, ClassifierUsage::default())]);
/// assert_eq!(budget.spent().earlier_calls, 1);
/// ```
pub fn carry(budget: Option<&Budget>, earlier: impl IntoIterator<Item = (Cost, ClassifierUsage)>) {
    let Some(budget) = budget else { return };
    let price = budget.options().price;
    let (mut known, mut known_spend) = (0u64, Spend::tokens(0).with_usd(0.0));
    let (mut unknown, mut unknown_tokens) = (0u64, 0u64);
    for (cost, usage) in earlier {
        if matches!(cost.source, Some(CostSource::Cache | CostSource::Local)) {
            known += 1;
            continue;
        }
        let tokens = Spend::of_usage(&usage).tokens;
        let usd = cost
            .usd
            .or(usage.cost)
            .or_else(|| price.map(|p| p.usd_of(&usage)))
            .filter(|u| u.is_finite());
        match usd {
            Some(u) => {
                known += 1;
                known_spend.tokens = known_spend.tokens.saturating_add(tokens);
                known_spend.usd = known_spend.usd.map(|k| k + u.max(0.0));
            }
            None => {
                unknown += 1;
                unknown_tokens = unknown_tokens.saturating_add(tokens);
            }
        }
    }
    if known > 0 {
        budget.carry(known, known_spend);
    }
    if unknown > 0 {
        budget.carry(unknown, Spend::tokens(unknown_tokens));
    }
}

/// The token price of `model` under `pricing`: $0 for a local stack.
fn price(pricing: &Pricing, model: &str) -> Option<TokenPrice> {
    match pricing {
        Pricing::Local => Some(TokenPrice {
            input_usd_per_million: 0.0,
            output_usd_per_million: 0.0,
        }),
        Pricing::Table(prices) => prices.find(model).map(|p| TokenPrice {
            input_usd_per_million: p.input_per_million,
            output_usd_per_million: p.output_per_million,
        }),
        _ => None,
    }
}

/// What a request is reserved at before it is sent: its estimated input tokens.
fn estimate(request: &EvalRequest) -> Spend {
    let shape = Shape::of(&request.state, &request.questions);
    Spend::tokens(Estimator::default().input_tokens(&shape).ceil().max(0.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolnexus::judge::{choice, noul, questions, score};

    #[test]
    fn the_estimate_has_the_published_shape() {
        let qs = questions(&[
            noul("spam", "Is it spam?"),
            choice(
                "desk",
                "Which desk?",
                [("billing", "money"), ("tech", "bugs")],
            ),
            score("risk", "How risky?", ["low", "mid", "high"]),
        ])
        .unwrap();
        // "abcdefgh" is 10 bytes of canonical JSON: 3 tokens.
        let s = estimate(&EvalRequest::new(json!("abcdefgh"), qs));
        assert_eq!(s.tokens, 261 + 3 * 8 + 2 * 21 + 3 * 8 + 3);
        assert_eq!(s.usd, None);
    }
}
