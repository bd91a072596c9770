//! `--max-cost`, `--max-tokens`, `--max-time` for `batch`, `assess run` and
//! `tape record`: the library's [`Budget`] in front of the command's classifier
//! (beneath its cache, so hits cost nothing), and the one message a run
//! stopped by a cap ends with.
//!
//! Invariant: a request the budget refused was not sent and is not written;
//! the command's own resume (the out file, the run file, the tape) asks it
//! again when the printed command is rerun.
//!
//! A cap holds for the job, not for each run: what the command's own file
//! records as spent (each result line's cost and usage, each run row's, each
//! recording's) is [`carry`]-ed into the budget before anything is sent, so a
//! resume spends only what the cap has left. A `--max-cost` over a model no
//! price table lists is refused before anything starts: it could not be
//! enforced.

use std::ffi::OsString;

use anyhow::Result;
use toolnexus::classifier::{Classifier, ClassifierUsage, EvalRequest};
use toolnexus::cost::budget::{Budget, BudgetOptions, Cap, Spend, TokenPrice, budgeted};
use toolnexus::cost::{Cost, CostSource, Estimator, Pricing, Shape};

use toolnexus::judge::{Tape, TapeOutcome};

use crate::args::CapArgs;
use crate::exit;

/// `inner` behind a budget with the caps given, or unchanged without any.
/// `pricing` prices answers that report tokens but no cost, as the run's
/// lines are priced. `--max-cost` over a model no price table lists is a
/// usage error naming the model and how to give it a price: the cap could
/// not be enforced.
///
/// `recorded` is the tape and call name of a recorded style (tape, static):
/// its recordings are known before the run, so a cap over them holds when
/// every recording reports its cost or is priced on the model that answered
/// it (a cap rehearsed offline).
pub fn wrap(
    inner: Classifier,
    caps: &CapArgs,
    pricing: &Pricing,
    recorded: Option<(&Tape, &str)>,
) -> Result<(Classifier, Option<Budget>)> {
    if caps.max_cost.is_none() && caps.max_tokens.is_none() && caps.max_time.is_none() {
        return Ok((inner, None));
    }
    let price = price(pricing, inner.model());
    // A cascade (`cascade (student / teacher)`) bills only its teacher, and
    // is priced beneath the budget on the model that answered.
    let teacher_priced = inner
        .model()
        .strip_prefix("cascade (")
        .and_then(|m| m.strip_suffix(')'))
        .and_then(|m| m.rsplit_once(" / "))
        .is_some_and(|(_, teacher)| self::price(pricing, teacher).is_some());
    let recordings_priced = recorded.is_some_and(|(tape, call)| {
        tape.call_entries(call).iter().all(|e| match &e.outcome {
            TapeOutcome::Decision(d) => {
                d.usage.cost.is_some()
                    || (self::price(pricing, &d.model).is_some()
                        || self::price(pricing, &e.model).is_some())
            }
            TapeOutcome::Failure { .. } => true,
        })
    });
    if let (Some(usd), None, false) = (caps.max_cost, price, recordings_priced || teacher_priced) {
        return Err(exit::usage(format!(
            "--max-cost {usd}: no price for model {:?} in the price table, so the cap could not be enforced; give it one with --prices FILE or ${} (a price whose \"model\" pattern matches {:?}), or cap with --max-tokens instead",
            inner.model(),
            crate::commands::cost::PRICES_ENV,
            inner.model()
        )));
    }
    let budget = Budget::new(BudgetOptions {
        max_usd: caps.max_cost,
        max_tokens: caps.max_tokens,
        max_time: caps.max_time,
        price,
    });
    // Priced beneath the budget too, on the model that answered: a
    // cascade's teacher is billed at the teacher's price, not looked up
    // under the cascade's own name.
    let priced = toolnexus::cost::pricing(inner, pricing.clone());
    Ok((budgeted(priced, budget.clone(), estimate), Some(budget)))
}

/// Counts into `budget` what earlier runs of the job spent: one
/// `(cost, usage)` per answer the command's file already holds, as the
/// budget would have settled it (a cache hit or a local answer bills
/// nothing; a known cost counts; an unknown one is priced from the usage
/// at the budget's price, else counted unknown).
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

/// `inner` spending from a budget another classifier of the run already
/// spends from (a batch's shadow), priced by `pricing` as [`wrap`] prices:
/// the run's caps bound what both send together.
pub fn share(inner: Classifier, budget: &Budget, pricing: &Pricing) -> Classifier {
    budgeted(
        toolnexus::cost::pricing(inner, pricing.clone()),
        budget.clone(),
        estimate,
    )
}

/// The price of `model`'s tokens when an answer reports none: 0 for a style
/// on this machine, the price table's entry for the model, else none (its
/// answers' cost is then unknown and not counted).
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

/// A request's input tokens by the shared estimator's published defaults
/// (SPEC §19: per request, per question, per described option, per score
/// level, and the state).
fn estimate(request: &EvalRequest) -> Spend {
    let shape = Shape::of(&request.state, &request.questions);
    Spend::tokens(Estimator::default().input_tokens(&shape).ceil().max(0.0) as u64)
}

/// The flag that set `cap`, with its value.
fn flag(cap: Cap, caps: &CapArgs) -> String {
    match cap {
        Cap::Cost => format!("--max-cost {}", caps.max_cost.unwrap_or_default()),
        Cap::Tokens => format!("--max-tokens {}", caps.max_tokens.unwrap_or_default()),
        Cap::Time => {
            let t = caps.max_time.unwrap_or_default();
            format!("--max-time {}s", trim(t.as_secs_f64()))
        }
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Dollars: cents from $1 on, else up to six decimals (`$12.30`, `$0.0512`,
/// `$0.00006`).
fn usd(x: f64) -> String {
    if !x.is_finite() {
        return "an amount too large to show".to_string();
    }
    if x >= 1.0 {
        return format!("${x:.2}");
    }
    let mut s = format!("{x:.6}");
    while s.ends_with('0') && s.len() > 4 {
        s.pop();
    }
    format!("${s}")
}

/// The line a run stopped by a cap ends with: `{command}: stopped at --max-…:
/// spent …; {done}; resume with: …`.
pub fn message(command: &str, budget: &Budget, caps: &CapArgs, done: &str) -> String {
    let spent = budget.spent();
    let cap = budget.reached().unwrap_or(Cap::Cost);
    let calls = if spent.calls == 1 { "call" } else { "calls" };
    // An unknown cost is never shown as $0.
    let cost = match spent.unknown_cost {
        0 => usd(spent.usd),
        n if n == spent.calls => "an unknown amount".to_string(),
        _ => format!("{} plus an unknown amount", usd(spent.usd)),
    };
    let mut text = format!(
        "{command}: stopped at {}: spent {cost} on {} {calls} ({} tokens, {:.1}s)",
        flag(cap, caps),
        spent.calls,
        spent.tokens,
        spent.elapsed.as_secs_f64()
    );
    if spent.earlier_calls > 0 {
        let n = spent.earlier_calls;
        text.push_str(&format!(
            ", of which {} and {} tokens on {n} {} by earlier runs of this job",
            usd(spent.earlier_usd),
            spent.earlier_tokens,
            if n == 1 { "call" } else { "calls" }
        ));
    }
    if spent.unknown_cost > 0 {
        let n = spent.unknown_cost;
        text.push_str(&format!(
            "; the cost of {n} {} is unknown (not reported, no price) and not counted{}",
            if n == 1 { "call" } else { "calls" },
            if caps.max_cost.is_some() {
                " against --max-cost"
            } else {
                ""
            }
        ));
    }
    let (command, elided) = resume_command(std::env::args_os());
    let elided = if elided {
        " (a URL's credentials or query are left out here: put them back)"
    } else {
        ""
    };
    let holds = match cap {
        Cap::Cost => {
            "; the cap holds for the whole job (what earlier runs spent counts on resume): raise --max-cost to ask the rest"
        }
        Cap::Tokens => {
            "; the cap holds for the whole job (what earlier runs spent counts on resume): raise --max-tokens to ask the rest"
        }
        Cap::Time => "",
    };
    format!("{text}; {done}{holds}; resume with: {command}{elided}")
}

/// The command line as it was typed, shell-quoted, less `--restart` (which
/// would start the resumed run over), and whether a URL in it had
/// credentials or a query left out (never printed: they may be secrets).
fn resume_command(args: impl Iterator<Item = OsString>) -> (String, bool) {
    let mut elided = false;
    let words: Vec<String> = args
        .filter(|a| a != "--restart")
        .map(|a| {
            let word = a.to_string_lossy();
            let (shown, cut) = without_secrets(&word);
            elided |= cut;
            quote(&shown)
        })
        .collect();
    (words.join(" "), elided)
}

/// `word` with any URL in it (`--base-url=…` too) stripped of `user:pass@`,
/// query and fragment, and whether anything was cut.
fn without_secrets(word: &str) -> (String, bool) {
    let Some(scheme) = word.find("://") else {
        return (word.to_string(), false);
    };
    let start = word[..scheme]
        .char_indices()
        .rev()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || "+-.".contains(*c)))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let url = &word[start..];
    let cut_at = url.find(['?', '#']).unwrap_or(url.len());
    let rest = &url[scheme - start + 3..cut_at];
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    let userinfo = authority.rfind('@').map_or(0, |i| i + 1);
    if cut_at == url.len() && userinfo == 0 {
        return (word.to_string(), false);
    }
    let head = &url[..scheme - start + 3];
    let host_path = &rest[userinfo..];
    (format!("{}{head}{host_path}", &word[..start]), true)
}

/// `s` as one word for a POSIX shell.
fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
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

    #[test]
    fn the_resume_command_is_the_command_less_restart() {
        let args = [
            "toolnexus",
            "batch",
            "--restart",
            "--states",
            "my states.jsonl",
            "--max-cost",
            "0.5",
        ]
        .map(OsString::from);
        assert_eq!(
            resume_command(args.into_iter()),
            (
                "toolnexus batch --states 'my states.jsonl' --max-cost 0.5".to_string(),
                false
            )
        );
        let args = [
            "toolnexus",
            "--base-url",
            "https://me:s3cret@api.example/v1?key=k",
        ]
        .map(OsString::from);
        assert_eq!(
            resume_command(args.into_iter()),
            (
                "toolnexus --base-url https://api.example/v1".to_string(),
                true
            )
        );
        assert_eq!(
            without_secrets("--base-url=http://u@h:8/v1#x"),
            ("--base-url=http://h:8/v1".to_string(), true)
        );
        assert_eq!(without_secrets("é://u@h"), ("é://h".to_string(), true));
        assert_eq!(without_secrets("://"), ("://".to_string(), false));
        assert_eq!(
            without_secrets("http://127.0.0.1:9/v1"),
            ("http://127.0.0.1:9/v1".to_string(), false)
        );
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
    }

    #[test]
    fn dollars_keep_their_small_digits() {
        assert_eq!(usd(12.3), "$12.30");
        assert_eq!(usd(0.0512), "$0.0512");
        assert_eq!(usd(0.00006), "$0.00006");
        assert_eq!(usd(0.1), "$0.10");
        assert_eq!(usd(0.0), "$0.00");
        assert_eq!(usd(f64::INFINITY), "an amount too large to show");
        assert_eq!(usd(f64::NAN), "an amount too large to show");
    }
}
