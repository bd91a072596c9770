//! `toolnexus tape record | replay | show`.

use std::collections::BTreeMap;

use anyhow::Result;
use serde_json::{Value, json};
use toolnexus::classifier::{EvalContext, Questions};
use toolnexus::judge::{TAPE_FORMAT, TAPE_VERSION, Tape, TapeMatch, TapeOutcome};

use crate::args::{RecordArgs, ReplayArgs, ShowArgs, StyleArgs, StyleName};
use crate::exit::{self, Exit};
use crate::style::{self, Fallback};
use crate::{demo, input, render};

/// `tape record`: evaluates live through [`Tape::recorder`] and saves the tape
/// atomically. An existing tape is added to (a new recording of the same call,
/// questions and state replaces the old one). Failures are recorded as data.
pub async fn record(args: RecordArgs) -> Result<Exit> {
    let style = args.live.style.unwrap_or(StyleName::SystemOne);
    let questions = input::read_questions(&args.questions)?;
    let states: Vec<(String, Value)> = match (&args.state, &args.states) {
        (Some(s), _) => vec![("--state".to_string(), input::read_json_arg("--state", s)?)],
        (None, Some(path)) => {
            let text = input::read_file("--states", path)?;
            input::jsonl_lines(&text)
                .map(|(n, l)| {
                    input::parse_line(n, l)
                        .map(|v| (format!("line {n}"), v))
                        .map_err(|e| exit::usage(format!("--states {}: {e}", path.display())))
                })
                .collect::<Result<_>>()?
        }
        (None, None) => return Err(exit::usage("--state or --states is required")),
    };
    let live = style::live_classifier(&args.live, style)?;
    let tape = if args.tape.exists() {
        Tape::load(&args.tape).map_err(|e| exit::usage(format!("--tape: {e}")))?
    } else {
        Tape::new()
    };
    if let Some(note) = &args.note {
        tape.set_note(note.clone());
    }
    let before = tape.len();
    let recorder = tape.recorder(live);
    let mut failed = 0;
    for (what, state) in states {
        let ctx = EvalContext::new().with_call_name(args.call.clone());
        match recorder.evaluate_ctx(ctx, state, &questions).await {
            Ok(d) => println!("recorded {what}: decision from {}", d.model),
            Err(e) => {
                failed += 1;
                println!("recorded {what}: failure: {e}");
            }
        }
    }
    tape.save(&args.tape)
        .map_err(|e| exit::io(format!("--tape: {e}")))?;
    println!(
        "tape: saved {} entries to {} ({} new, {failed} failed calls recorded as failures)",
        tape.len(),
        args.tape.display(),
        tape.len().saturating_sub(before)
    );
    Ok(if failed > 0 {
        Exit::Eval
    } else {
        Exit::Success
    })
}

/// `tape replay`: one given state, or every recorded entry of the call (in
/// recording order), matched as `--match` says.
pub async fn replay(args: ReplayArgs) -> Result<Exit> {
    let style_args = StyleArgs {
        tape: args.tape.clone(),
        call: args.call.clone(),
        tape_match: args.tape_match,
        ..Default::default()
    };
    let mut style_args = style_args;
    style_args.live.style = Some(StyleName::Tape);
    let built = style::build(&style_args, Fallback::SystemOne)?;
    let (tape, label) = built
        .tape
        .clone()
        .ok_or_else(|| anyhow::anyhow!("tape style without a tape"))?;

    let cases: Vec<(Questions, Value)> = match (&args.questions, &args.state) {
        (Some(q), Some(s)) => vec![(
            input::read_questions(q)?,
            input::read_json_arg("--state", s)?,
        )],
        // Recording order, so `--match sequence` replays each entry in its place.
        _ => tape
            .call_entries(&built.call)
            .into_iter()
            .map(|e| (e.questions, e.state))
            .collect(),
    };
    let mut decisions = Vec::new();
    let mut failed = 0;
    for (i, (questions, state)) in cases.into_iter().enumerate() {
        let ctx = EvalContext::new().with_call_name(built.call.clone());
        let shown = render::compact(&state, 100);
        let result = built.classifier.evaluate_ctx(ctx, state, &questions).await;
        if args.json {
            decisions.push(match &result {
                Ok(d) => json!({"decision": d.to_value()}),
                Err(e) => json!({"error": e.to_string()}),
            });
            if result.is_err() {
                failed += 1;
            }
            continue;
        }
        if i > 0 {
            println!();
        }
        println!("call {:?} entry {i}: state {shown}", built.call);
        match result {
            Ok(d) => print!("{}", render::decision_table(&d)),
            Err(e) => {
                failed += 1;
                println!("error: {e}");
            }
        }
    }
    if args.json {
        println!("{}", render::pretty(&Value::Array(decisions)));
    } else {
        let mode = match args.tape_match {
            Some(m) if m != TapeMatch::Exact => format!(" (--match {m})"),
            _ => String::new(),
        };
        println!(
            "\nreplayed offline from {label}, call {:?}{mode}: {failed} failed",
            built.call
        );
    }
    if failed > 0 && args.questions.is_some() {
        return Err(exit::eval(format!(
            "{label} has no decision for this state under call {:?}",
            built.call
        )));
    }
    Ok(if failed > 0 {
        Exit::Eval
    } else {
        Exit::Success
    })
}

/// `tape show`: version, note, call names and entry counts.
pub fn show(args: ShowArgs) -> Result<Exit> {
    let (tape, label) = style::load_tape(args.file.as_deref()).map_err(|e| {
        // A positional file reads better without the flag name.
        let text = format!("{e:#}");
        exit::usage(text.strip_prefix("--tape: ").unwrap_or(&text))
    })?;
    #[derive(Default)]
    struct Counts {
        decisions: usize,
        failures: usize,
    }
    let mut calls: BTreeMap<String, Counts> = BTreeMap::new();
    let mut models = std::collections::BTreeSet::new();
    for e in tape.entries() {
        models.insert(e.model.clone());
        let c = calls.entry(e.call_name.clone()).or_default();
        match e.outcome {
            TapeOutcome::Decision(_) => c.decisions += 1,
            TapeOutcome::Failure { .. } => c.failures += 1,
        }
    }
    if args.json {
        let v = json!({
            "source": label,
            "format": TAPE_FORMAT,
            "version": TAPE_VERSION,
            "note": tape.note(),
            "entries": tape.len(),
            "models": models,
            "calls": calls.iter().map(|(name, c)| (name.clone(), json!({
                "entries": c.decisions + c.failures,
                "decisions": c.decisions,
                "failures": c.failures,
            }))).collect::<serde_json::Map<_, _>>(),
        });
        println!("{}", render::pretty(&v));
        return Ok(Exit::Success);
    }
    let (d, f) = calls
        .values()
        .fold((0, 0), |(d, f), c| (d + c.decisions, f + c.failures));
    println!("tape      {label}");
    println!("format    {TAPE_FORMAT}, version {TAPE_VERSION}");
    println!(
        "note      {}",
        if tape.note().is_empty() {
            "(none)".to_string()
        } else {
            tape.note()
        }
    );
    println!("entries   {} ({d} decisions, {f} failures)", tape.len());
    println!(
        "models    {}",
        demo::names(&models.into_iter().collect::<Vec<_>>())
    );
    println!("calls     {}", calls.len());
    let width = calls.keys().map(String::len).max().unwrap_or(0);
    for (name, c) in &calls {
        println!(
            "  {name:<width$}  {} entries ({} decisions, {} failures)",
            c.decisions + c.failures,
            c.decisions,
            c.failures
        );
    }
    Ok(Exit::Success)
}
