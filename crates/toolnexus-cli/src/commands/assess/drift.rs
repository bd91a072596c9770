//! `toolnexus assess drift`: two sides' answers to the same states compared
//! without labels ([`toolnexus::assess::drift`] does the arithmetic).
//!
//! A side is an assess run file (rows paired by id), a batch out file (result
//! lines paired by line number: both written from the same states file; a
//! header-less stream from `batch --out -` reads alike), or, with `--tape`, a
//! golden tape replayed through a live style (each recorded call is side A,
//! the live answer to its state and questions side B; rows are named
//! `CALL#k`, the k-th entry of the call as the tape file holds them).

use std::path::Path;

use anyhow::Result;
use futures::StreamExt as _;
use serde_json::Value;
use toolnexus::assess::{Answered, Answers, Drift, DriftOptions, drift, read_answers};
use toolnexus::classifier::{EvalContext, EvalRequest};
use toolnexus::judge::{Tape, TapeOutcome};

use crate::args::{DriftArgs, StyleName};
use crate::exit::{self, Exit};
use crate::style::{self, Fallback};

/// Live calls in flight at once when a tape is asked again.
const TAPE_CONCURRENCY: usize = 8;

/// Runs `toolnexus assess drift`.
pub async fn run(args: DriftArgs) -> Result<Exit> {
    let mut options = DriftOptions::default().with_show(args.show);
    if let Some(share) = args.max_flips {
        options = options.with_max_flips(share);
    }
    if let Some(tvd) = args.max_shift {
        options = options.with_max_shift(tvd);
    }
    let (report, a_name, b_name, paired_by) = match (&args.a, &args.b, &args.style.tape) {
        (Some(a), Some(b), None) => {
            let (sa, sb) = (read_side(a)?, read_side(b)?);
            if sa.kind != sb.kind {
                return Err(exit::usage(format!(
                    "assess drift: {} is {} and {} is {}: compare two of a kind",
                    a.display(),
                    sa.kind.describe(),
                    b.display(),
                    sb.kind.describe()
                )));
            }
            if let (Some(x), Some(y)) = (&sa.states, &sb.states)
                && x != y
            {
                tell!(
                    "warning: {} and {} were written from different states files; their lines are paired by number all the same",
                    a.display(),
                    b.display()
                );
            }
            let paired_by = sa.kind.paired_by();
            (
                drift(&sa.rows, &sb.rows, &options),
                a.display().to_string(),
                b.display().to_string(),
                paired_by,
            )
        }
        (None, None, Some(tape)) => {
            let (a, b, live) = ask_tape(&args, tape).await?;
            (
                drift(&a, &b, &options),
                tape.display().to_string(),
                live,
                "recorded call",
            )
        }
        _ => {
            return Err(exit::usage(
                "assess drift: give two files A B, or --tape GOLDEN.tape.json and a live style",
            ));
        }
    };
    if report.paired == 0 {
        return Err(exit::usage(format!(
            "assess drift: {a_name} and {b_name} share no row (paired by {paired_by}); nothing to compare"
        )));
    }
    print(&report, &a_name, &b_name, paired_by, args.json);
    if report.nothing_compared() {
        let why = if report.compared == 0 {
            format!(
                "no row was compared: each of the {} paired rows holds an error ({} in A, {} in B)",
                report.paired, report.errors_a, report.errors_b
            )
        } else {
            format!(
                "no answer was compared: the {} rows both sides answered share no question answered with the same type on both sides",
                report.compared
            )
        };
        let gates: Vec<&str> = [
            args.max_flips.map(|_| "--max-flips"),
            args.max_shift.map(|_| "--max-shift"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !gates.is_empty() {
            return Err(exit::no_match(format!(
                "assess drift: {why}; {} {} nothing to judge",
                gates.join(" and "),
                if gates.len() == 1 { "has" } else { "have" }
            )));
        }
        tell!("warning: assess drift: {why}");
    }
    Ok(if report.breached() {
        Exit::Eval
    } else {
        Exit::Success
    })
}

fn print(report: &Drift, a: &str, b: &str, paired_by: &str, json: bool) {
    if json {
        let mut v = serde_json::to_value(report).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.insert("a".into(), Value::from(a));
            m.insert("b".into(), Value::from(b));
            m.insert("paired_by".into(), Value::from(paired_by));
            m.insert("breached".into(), Value::from(report.breached()));
        }
        say!(
            "{}",
            serde_json::to_string_pretty(&v).unwrap_or_else(|_| v.to_string())
        );
        return;
    }
    say!("A: {a}\nB: {b}\n");
    put!("{}", report.table());
    for q in report.questions.iter().filter(|q| !q.breaches.is_empty()) {
        say!("gate: {}: {}", q.key, q.breaches.join("; "));
    }
}

/// Reads A or B: a run file or a batch out file (the library tells them
/// apart); a torn final line is left out and said so.
fn read_side(path: &Path) -> Result<Answers> {
    let text = crate::input::read_file("", path)?;
    let side = read_answers(&text, path).map_err(|e| exit::usage(e.to_string()))?;
    if let Some(line) = side.torn_line {
        tell!(
            "warning: {}:{line}: torn final line (cut short by an interrupted run) left out",
            path.display()
        );
    }
    Ok(side)
}

/// Every recorded call of the tape (of `--call` only, when given) asked again
/// of the live style: the recordings as side A, the live answers as side B,
/// and how to name the live side.
async fn ask_tape(args: &DriftArgs, path: &Path) -> Result<(Vec<Answered>, Vec<Answered>, String)> {
    let tape = Tape::load(path).map_err(|e| exit::usage(format!("--tape: {e}")))?;
    let mut live_args = args.style.clone();
    live_args.tape = None;
    live_args.call = None;
    if matches!(
        live_args.live.style,
        Some(StyleName::Tape | StyleName::Static)
    ) || live_args.tape_match.is_some()
    {
        return Err(exit::usage(
            "assess drift --tape: the tape is side A; name a live style (--style systemone, llm, local or student) for side B",
        ));
    }
    let built = style::build(&live_args, Fallback::SystemOne)?;
    let entries = match &args.style.call {
        Some(c) => {
            let e = tape.call_entries(c);
            if e.is_empty() {
                return Err(exit::usage(format!(
                    "--call {c:?}: {} has no such call (it has {})",
                    path.display(),
                    tape.call_names().join(", ")
                )));
            }
            e
        }
        None => tape.entries(),
    };
    let live_name = format!(
        "--style {} ({})",
        built.style.as_str(),
        built.classifier.model()
    );
    tell!(
        "assess drift: asking {live_name} again for {} recorded call{} of {}",
        entries.len(),
        if entries.len() == 1 { "" } else { "s" },
        path.display()
    );
    let mut seen: std::collections::HashMap<String, usize> = Default::default();
    let ids: Vec<String> = entries
        .iter()
        .map(|e| {
            let n = seen.entry(e.call_name.clone()).or_default();
            *n += 1;
            format!("{}#{n}", e.call_name)
        })
        .collect();
    let a: Vec<Answered> = entries
        .iter()
        .zip(&ids)
        .map(|(e, id)| match &e.outcome {
            TapeOutcome::Decision(d) => Answered::decided(id.clone(), d.clone()),
            TapeOutcome::Failure { message, .. } => Answered::failed(id.clone(), message.clone()),
        })
        .collect();
    let classifier = built.classifier.clone();
    let b: Vec<Answered> = futures::stream::iter(entries.into_iter().zip(ids))
        .map(|(e, id)| {
            let classifier = classifier.clone();
            async move {
                let ctx = EvalContext::new().with_call_name(e.call_name.clone());
                match classifier
                    .evaluate_request(ctx, EvalRequest::new(e.state, e.questions))
                    .await
                {
                    Ok(done) => Answered::decided(id, done.decision),
                    Err(err) => Answered::failed(id, err.to_string()),
                }
            }
        })
        .buffered(TAPE_CONCURRENCY)
        .collect()
        .await;
    Ok((a, b, live_name))
}
