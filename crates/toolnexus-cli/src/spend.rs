//! Cost before it is spent and after: `batch --estimate` and `assess run
//! --estimate` (the inputs read, the `--cache` file read-only — it is never
//! created — and nothing sent: calls, cache hits, input tokens and cost, each
//! with its range), and the run's cost summed for its last line.
//!
//! Prices: a reported cost always wins; local engines cost an explicit 0; any
//! other call is priced from `--prices FILE` (or `$TOOLNEXUS_PRICES`) over the
//! compiled-in table, and a model no table lists stays unknown.

use std::collections::HashSet;

use anyhow::Result;
use serde_json::json;
use toolnexus::assess::out;
use toolnexus::assess::{ExampleReader, RunIds, check_examples};
use toolnexus::cache::{Cache as _, cache_key_for};
use toolnexus::classifier::{EvalRequest, Questions};
use toolnexus::cost::{
    Cost, CostTally, Estimate, Estimator, PricedEstimate, Pricing, Shape, usd_text,
};

use crate::args::{AssessRunArgs, BatchArgs, EstimateArgs};
use crate::exit::{self, Exit};
use crate::input;
use crate::style::{self, Fallback, PRICES_ENV};

/// The costs of a run's lines, summed ([`CostTally`]): the line `batch` ends with.
pub fn tally_text(t: &CostTally) -> String {
    t.text("; see --prices")
}

/// The estimator `--estimator FILE` names, or the published defaults.
fn estimator(args: &EstimateArgs) -> Result<(Estimator, String)> {
    Ok(match &args.estimator {
        Some(p) => (
            Estimator::load(p).map_err(|e| exit::usage(format!("--estimator {e}")))?,
            p.display().to_string(),
        ),
        None => (Estimator::default(), "default".to_string()),
    })
}

/// What an estimate counted before the estimator ran.
struct Counted {
    /// Inputs read (states or examples).
    inputs: usize,
    /// Answered from the cache (or a duplicate of an earlier input, with a cache).
    hits: usize,
    /// Already done in the out file.
    done: usize,
    /// Lines that are not a state (sent nowhere; the run writes an error line).
    unreadable: usize,
}

/// `batch --estimate`.
pub async fn estimate_batch(args: BatchArgs) -> Result<Exit> {
    let questions = input::read_questions(&args.questions)?;
    let (states, survey) = input::open_states(&args.states, args.columns.spec())?;
    let built = style::build_with(
        &args.style,
        Fallback::SystemOne,
        &style::Layers {
            prices: Some(&args.prices),
            ..Default::default()
        },
    )?;
    let cache = match &args.cache {
        // Read-only: a cache that is not there (or empty) is never created.
        Some(p) if std::fs::metadata(p).is_ok_and(|m| m.len() > 0) => {
            Some(crate::style::open_cache(p)?)
        }
        _ => None,
    };
    // The run's cache keys on the stack's fingerprint: so does the count.
    let stack = built.classifier.fingerprint().clone();
    let model = built.classifier.model().to_string();
    // The lines a resumed run would not ask again.
    let mut fingerprint =
        out::Fingerprint::new(b"", &questions, built.style.as_str(), &model, &stack);
    fingerprint.states = survey.digest;
    let plan = out::Plan {
        restart: args.restart,
        rerun_errors: args.rerun_errors,
        last_line: survey.last_line,
    };
    let journal = toolnexus_table::results_path(&args.out)
        .map_err(|e| crate::exit::usage(format!("--out {e}")))?;
    let done = out::already_done(&journal, &fingerprint, plan)
        .map_err(|e| crate::out_file::error(e, plan, crate::out_file::Reader::Estimate))?;
    // Loaded now so that each request is added as it is read (never held),
    // but a bad --estimator is still reported after the states, as before.
    let estimator = estimator(&args.estimate);
    let mut tally = estimator.as_ref().ok().map(|(est, _)| est.tally());
    let mut seen = HashSet::new();
    let mut counted = Counted {
        inputs: 0,
        hits: 0,
        done: 0,
        unreadable: 0,
    };
    let (rows, failure) = states.reader().map_err(input::states_error)?.rows();
    for row in rows {
        counted.inputs += 1;
        if done.contains(&row.n) {
            counted.done += 1;
            continue;
        }
        let Ok(state) = row.state else {
            counted.unreadable += 1;
            continue;
        };
        let shape = Shape::of(&state, &questions);
        if let Some(c) = &cache {
            let key = cache_key_for(&stack, &model, &EvalRequest::new(state, questions.clone()));
            let stored = c.get(&key).map_err(crate::style::cache_failed)?.is_some();
            if !seen.insert(key) || stored {
                counted.hits += 1;
                continue;
            }
        }
        if let Some(t) = &mut tally {
            t.push(&shape);
        }
    }
    failure
        .take()
        .map_or(Ok(()), |e| Err(input::states_error(e)))?;
    if let Some(style) = args.shadow_style {
        tell!(
            "batch: note: --shadow-style {} asks a second style about every state; its calls are not in this estimate (a cap counts them)",
            style.as_str()
        );
    }
    let e = tally.map(|t| t.finish());
    let (est, from) = estimator?;
    let e = e.unwrap_or_else(|| est.tally().finish());
    report(
        "batch",
        &args.estimate,
        &built.pricing,
        built.style.as_str(),
        &model,
        counted,
        (est, from, e),
    )
}

/// `assess run --estimate`: the examples checked, then read again a line at
/// a time into the estimate; the run file's ids kept as digests.
pub async fn estimate_assess(a: AssessRunArgs) -> Result<Exit> {
    let questions: Questions = input::read_questions(&a.questions)?;
    let inputs = check_examples(&a.examples, &questions).map_err(exit::usage)?;
    let built = style::build_with(
        &a.style,
        Fallback::SystemOne,
        &style::Layers {
            prices: Some(&a.prices),
            ..Default::default()
        },
    )?;
    // The ids a resumed run would not ask again.
    let held = match !a.out.as_os_str().is_empty() && a.out.exists() {
        true => Some(RunIds::read(&a.out).map_err(exit::usage)?),
        false => None,
    };
    let (est, from) = estimator(&a.estimate)?;
    let (mut done, mut failed) = (0, None);
    let shapes = ExampleReader::open(&a.examples, &questions)
        .map_err(exit::usage)?
        .unchecked_ids()
        .map_while(|ex| ex.map_err(|e| failed = Some(e)).ok())
        .filter(|ex| {
            let asked = held
                .as_ref()
                .is_none_or(|h| h.wanted(&ex.id, a.rerun_errors));
            done += usize::from(!asked);
            asked
        })
        .map(|ex| Shape::of(&ex.state, &questions));
    let e = est.estimate_each(shapes);
    failed.map_or(Ok(()), |e| Err(exit::usage(e)))?;
    let counted = Counted {
        inputs,
        hits: 0,
        done,
        unreadable: 0,
    };
    let model = built.classifier.model().to_string();
    let pricing = &built.pricing;
    report(
        "assess run",
        &a.estimate,
        pricing,
        built.style.as_str(),
        &model,
        counted,
        (est, from, e),
    )
}

/// The line that says what an estimate costs ([`Estimate::priced`]'s answer).
pub fn cost_line(pricing: &Pricing, model: &str, cost: Option<&PricedEstimate>) -> String {
    match cost {
        Some(p) if matches!(pricing, Pricing::Local) => {
            format!("cost {}: judged on this machine", p.cost)
        }
        Some(p) => format!(
            "cost ≈ ${} (${} to ${}), {} for {model}",
            usd_text(p.usd),
            usd_text(p.low),
            usd_text(p.high),
            p.cost
                .source
                .as_ref()
                .map(|s| s.to_string())
                .unwrap_or_default()
        ),
        None => format!(
            "cost unknown: no price for {model} in the price table (--prices FILE or ${PRICES_ENV} adds one); never counted as $0"
        ),
    }
}

/// Prints an estimate (text or `--json`); exit 0.
fn report(
    command: &str,
    args: &EstimateArgs,
    pricing: &Pricing,
    style: &str,
    model: &str,
    counted: Counted,
    (est, from, e): (Estimator, String, Estimate),
) -> Result<Exit> {
    let cost = e.priced(pricing, model);
    if args.json {
        let mut cost_json = cost
            .as_ref()
            .map_or_else(|| Cost::UNKNOWN.to_value(), |p| p.cost.to_value());
        if let Some(p) = &cost {
            cost_json["low"] = json!(p.low);
            cost_json["high"] = json!(p.high);
        }
        say!(
            "{}",
            json!({
                "command": command,
                "style": style,
                "model": model,
                "inputs": counted.inputs,
                "calls": e.calls,
                "cache_hits": counted.hits,
                "already_done": counted.done,
                "unreadable": counted.unreadable,
                "input_tokens": e.input_tokens.round(),
                "input_tokens_low": e.input_low.round(),
                "input_tokens_high": e.input_high.round(),
                "output_tokens": e.output_tokens.round(),
                "range_pct": e.range_pct,
                "cost": cost_json,
                "estimator": from,
                "fitted": est.fit.is_some(),
            })
        );
        return Ok(Exit::Success);
    }
    let mut skipped = Vec::new();
    if counted.hits > 0 {
        skipped.push(format!("{} cache hits", counted.hits));
    }
    if counted.done > 0 {
        skipped.push(format!("{} already in --out", counted.done));
    }
    if counted.unreadable > 0 {
        skipped.push(format!("{} lines that are not JSON", counted.unreadable));
    }
    let skipped = if skipped.is_empty() {
        String::new()
    } else {
        format!(" ({} not sent)", skipped.join(", "))
    };
    say!(
        "{command} --estimate: {} inputs: {} calls to {style} {model}{skipped}; nothing was sent",
        counted.inputs,
        e.calls
    );
    let basis = match (&est.fit, &args.estimator) {
        (Some(f), Some(p)) => format!(
            "±{:.1}%, the worst request of the fit in {} ({} requests, mean {:.1}%)",
            f.worst_pct,
            p.display(),
            f.rows,
            f.mean_abs_pct
        ),
        _ => format!(
            "±{:.0}%: the published figures, not fitted; `toolnexus cost fit` fits them on your runs",
            e.range_pct
        ),
    };
    say!(
        "input tokens ≈ {} ({} to {}, {basis})",
        e.input_tokens.round(),
        e.input_low.round(),
        e.input_high.round()
    );
    say!("{}", cost_line(pricing, model, cost.as_ref()));
    Ok(Exit::Success)
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolnexus::cost::CostSource;

    #[test]
    fn a_tally_never_sums_an_unknown_cost_as_zero() {
        let mut t = CostTally::default();
        assert_eq!(tally_text(&t), "");
        t.add(&Cost::new(0.25, CostSource::Reported));
        assert_eq!(tally_text(&t), "cost $0.2500 (reported 1)");
        t.add(&Cost::UNKNOWN);
        assert_eq!(
            tally_text(&t),
            "cost $0.2500 known on 1 of 2 calls, unknown on 1 (reported 1, unknown 1)"
        );
        let mut u = CostTally::default();
        u.add(&Cost::UNKNOWN);
        assert!(
            tally_text(&u).starts_with("cost unknown (unknown 1"),
            "{}",
            tally_text(&u)
        );
    }
}
