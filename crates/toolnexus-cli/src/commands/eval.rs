//! `toolnexus eval`: one state, one decision, printed as a table or wire JSON.
//!
//! With no flags and no API key set it replays the first `triage` example of the
//! built-in demo tape and says so on its first line.
//!
//! The cost is settled by the same pricing layer `batch` uses: a reported cost
//! wins, local styles (and a cascade's student) an explicit 0 (`local`), any
//! other call priced from `--prices` over the compiled-in table, and a model
//! no table lists stays unknown. The table's `cost` line says which; with
//! `--json` a cost toolnexus settled is written into the usage as `serve`
//! writes it (`usage.cost` and `usage.cost_source`), a reported one is the
//! backend's own `usage.cost`.

use anyhow::Result;
use serde_json::Value;
use toolnexus::classifier::{EvalContext, EvalRequest, Questions};

use crate::args::{EvalArgs, StyleName};
use crate::exit::{self, Exit};
use crate::style::{self, Built, Fallback};
use crate::{demo, input, render};

/// Runs `toolnexus eval`.
pub async fn run(args: EvalArgs) -> Result<Exit> {
    let built = style::build_with(
        &args.style,
        Fallback::Demo(StyleName::Tape),
        &style::Layers {
            prices: Some(&args.prices),
            ..Default::default()
        },
    )?;
    let (questions, state, example) = inputs(&args, &built)?;
    // No key and no style: the demo tape answers only its own recordings, so
    // the user's own questions (read and checked first, so their errors are
    // named) get the one no-key line every command gives.
    if built.offline_reason.is_some() && args.questions.is_some() {
        return Err(exit::usage(style::no_key_line(
            &args.style.live,
            args.style.model_dir.as_deref(),
        )));
    }
    style::check_cascade(&built, &questions);
    let bands = args
        .thresholds
        .as_deref()
        .map(|p| input::read_thresholds(p, Some(&questions)))
        .transpose()?;
    style::pin::check(
        &args.pin,
        &args.style,
        built.style,
        args.thresholds.as_deref(),
    )?;

    // With --json, stdout carries only the decision; status lines go to stderr.
    let status = |line: String| {
        if args.json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    };
    if let (Some(why), Some((_, label))) = (&built.offline_reason, &built.tape) {
        status(format!(
            "offline: {why}; replaying {label} (call {:?})",
            built.call
        ));
    }
    if let Some(source) = &example {
        status(format!(
            "example: {source}; state {}",
            render::compact(&state, 100)
        ));
    }

    let ctx = EvalContext::new().with_call_name(built.call.clone());
    let done = built
        .classifier
        .evaluate_request(ctx, EvalRequest::new(state, questions.clone()))
        .await
        .map_err(|e| exit::eval(format!("{} ({})", e, style::describe(&built))))?;
    let decision = &done.decision;
    let mut wire = decision.to_value();
    render::with_cost(&mut wire, &done.cost);
    // Said after the answer, so it agrees with the decision's own `calibrated`
    // (a --calibration file may have applied).
    if built.style == StyleName::LOCAL {
        status(format!(
            "heuristic: the zero-shot style compares the state with the question's own words on this machine; \
             good for topical choices only, {}",
            if decision.calibrated {
                "calibrated by --calibration"
            } else {
                "not calibrated"
            }
        ));
    }

    match (args.json, &bands) {
        (true, None) => println!("{}", render::pretty(&wire)),
        (true, Some(b)) => println!(
            "{}",
            serde_json::json!({
                "decision": wire,
                "verdicts": render::verdicts_json(decision, b),
            })
        ),
        (false, _) => {
            if example.is_some()
                || built.offline_reason.is_some()
                || built.style == StyleName::LOCAL
            {
                println!();
            }
            print!("{}", render::decision_table_costed(decision, &done.cost));
            if let Some(b) = &bands {
                println!();
                print!("{}", render::verdicts_table(decision, b));
            }
        }
    }
    Ok(Exit::Success)
}

/// The questions and state to evaluate: both flags, or neither (then the first
/// recorded example of the call on the tape, or of the demo tape). The third
/// value names where an example came from.
fn inputs(args: &EvalArgs, built: &Built) -> Result<(Questions, Value, Option<String>)> {
    match (&args.questions, &args.state) {
        (Some(q), Some(s)) => {
            let questions = input::read_questions(q)?;
            let state = input::read_json_arg("--state", s)?;
            input::check_state(&state).map_err(|e| exit::usage(format!("--state {s}: {e}")))?;
            Ok((questions, state, None))
        }
        (Some(_), None) => Err(exit::usage("--state is required with --questions")),
        (None, Some(_)) => Err(exit::usage("--questions is required with --state")),
        (None, None) => {
            let (tape, label) = match &built.tape {
                Some((t, l)) => (t.clone(), l.clone()),
                None => (demo::demo_tape()?, demo::DEMO_LABEL.to_string()),
            };
            let call = if built.tape.is_some() {
                built.call.clone()
            } else {
                demo::DEMO_CALL.to_string()
            };
            let (q, s) = demo::first_example(&tape, &call, &label)?;
            Ok((
                q,
                s,
                Some(format!("the first {call:?} recording of {label}")),
            ))
        }
    }
}
