//! `toolnexus eval`: one state, one decision, printed as a table or wire JSON.
//!
//! With no flags and no API key set it replays the first `triage` example of the
//! built-in demo tape and says so on its first line.

use anyhow::Result;
use serde_json::Value;
use toolnexus::classifier::{EvalContext, Questions};

use crate::args::{EvalArgs, StyleName};
use crate::exit::{self, Exit};
use crate::style::{self, Built, Fallback};
use crate::{demo, input, render};

/// Runs `toolnexus eval`.
pub async fn run(args: EvalArgs) -> Result<Exit> {
    let built = style::build(&args.style, Fallback::Demo(StyleName::Tape))?;
    let (questions, state, example) = inputs(&args, &built)?;
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
        // The user's own questions: the demo tape has none of their answers.
        let hint = match &args.questions {
            Some(_) => format!(
                ", which answers only its own recordings; {}",
                style::real_answer_hint(&args.style.live)
            ),
            None => String::new(),
        };
        status(format!(
            "offline: {why}; replaying {label} (call {:?}){hint}",
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
    let decision = built
        .classifier
        .evaluate_ctx(ctx, state, &questions)
        .await
        .map_err(|e| exit::eval(format!("{} ({})", e, style::describe(&built))))?;
    // Said after the answer, so it agrees with the decision's own `calibrated`
    // (a --calibration file may have applied).
    if built.style == StyleName::Local {
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
        (true, None) => println!("{}", render::decision_json(&decision)),
        (true, Some(b)) => println!(
            "{}",
            serde_json::json!({
                "decision": decision.to_value(),
                "verdicts": render::verdicts_json(&decision, b),
            })
        ),
        (false, _) => {
            if example.is_some()
                || built.offline_reason.is_some()
                || built.style == StyleName::Local
            {
                println!();
            }
            print!("{}", render::decision_table(&decision));
            if let Some(b) = &bands {
                println!();
                print!("{}", render::verdicts_table(&decision, b));
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
