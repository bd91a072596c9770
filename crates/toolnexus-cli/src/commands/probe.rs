//! `toolnexus probe`: the library's encoding probes (`toolnexus::probe`) over
//! the first `--max-states` states of a JSONL file. The call count, input
//! tokens and cost (the shared estimator and price table) are printed before
//! anything is sent, and a run above `--max-calls` is refused. A failed
//! call is counted in the report, never an abort.

use anyhow::Result;
use serde_json::Value;
use toolnexus::classifier::EvalContext;
use toolnexus::cost::{Estimator, Shape};
use toolnexus::probe::{Probe, ProbeOptions, ProbeReport, ProbeResult, Verdict, run_probes};

use crate::args::ProbeArgs;
use crate::exit::{self, Exit};
use crate::input;
use crate::style::{self, Fallback};

/// Runs `toolnexus probe`.
pub async fn run(args: ProbeArgs) -> Result<Exit> {
    let questions = input::read_questions(&args.questions)?;
    let states = read_states(&args)?;
    let probes: Vec<Probe> = args
        .probes
        .iter()
        .map(|p| {
            p.parse::<Probe>()
                .map_err(|e| exit::usage(format!("--probes: {e}")))
        })
        .collect::<Result<_>>()?;
    let built = style::build(&args.style, Fallback::SystemOne)?;
    let options = ProbeOptions {
        probes,
        repeat: args.repeat as usize,
        concurrency: args.concurrency as usize,
        seed: args.seed,
        context: EvalContext::new().with_call_name(built.call.clone()),
    };

    let calls = options.planned_calls(&questions, states.len());
    let per_state = calls / states.len().max(1);
    let plan = format!(
        "probe: {} state{} × {per_state} variant{} = {calls} call{} ({})",
        states.len(),
        plural(states.len()),
        plural(per_state),
        plural(calls),
        style::describe(&built)
    );
    if calls as u64 > args.max_calls {
        return Err(exit::usage(format!(
            "{plan}: more than --max-calls {}; raise --max-calls, or lower --max-states, --repeat or --probes",
            args.max_calls
        )));
    }
    // What the run would spend, before anything is sent: each state's request
    // shape times its variants, by the published estimator and the price table.
    let shapes: Vec<Shape> = states
        .iter()
        .flat_map(|s| std::iter::repeat_n(Shape::of(s, &questions), per_state))
        .collect();
    let e = Estimator::default().estimate(shapes.iter());
    let pricing = built.pricing.clone();
    let model = built.classifier.model().to_string();
    let cost = e.priced(&pricing, &model);
    let spend = format!(
        "probe: input tokens ≈ {} (±{:.0}%); {}",
        e.input_tokens.round(),
        e.range_pct,
        crate::spend::cost_line(&pricing, &model, cost.as_ref())
    );
    if args.json {
        eprintln!("{plan}\n{spend}");
    } else {
        println!("{plan}\n{spend}");
    }

    let report = run_probes(&built.classifier, &questions, &states, &options).await;
    if args.json {
        println!("{}", report.to_value());
    } else {
        print!("{}", table(&report, &questions));
    }
    let unmeasured = report
        .results
        .iter()
        .any(|r| r.verdict == Verdict::Unmeasured);
    if unmeasured && let Some(e) = &report.first_error {
        eprintln!(
            "toolnexus: probe: {} of {} calls failed; the first: {e}",
            report.failed_calls, report.calls
        );
    }
    Ok(if report.any_broken() || unmeasured {
        Exit::Eval
    } else {
        Exit::Success
    })
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The first `--max-states` states, each checked; an error names the line.
fn read_states(args: &ProbeArgs) -> Result<Vec<Value>> {
    let path = args.states.display();
    let mut states = Vec::new();
    let (file, _) = input::open_states(&args.states, Default::default())?;
    let bad = |e: String| exit::usage(format!("--states {path}: {e}"));
    let (rows, _) = file.reader().map_err(input::states_error)?.rows();
    for row in rows.take(args.max_states as usize) {
        let (n, state) = (row.n, row.state.map_err(bad)?);
        input::check_state(&state)
            .map_err(|e| exit::usage(format!("--states {path}: line {n}: {e}")))?;
        states.push(state);
    }
    if states.is_empty() {
        return Err(exit::usage(format!(
            "--states {path}: no state in the file"
        )));
    }
    Ok(states)
}

/// Per question: a table of its probes, then each verdict in plain words;
/// then what was skipped and how many calls failed.
fn table(report: &ProbeReport, questions: &toolnexus::classifier::Questions) -> String {
    let mut out = String::new();
    for (key, q) in questions {
        let rows: Vec<&ProbeResult> = report
            .results
            .iter()
            .filter(|r| r.question == *key)
            .collect();
        if rows.is_empty() {
            continue;
        }
        out.push_str(&format!("\n{key} ({})\n", q.kind()));
        out.push_str(&format!(
            "  {:<9} {:>6}  {:<11}  {:>6}  {:>6}  {}\n",
            "probe", "figure", "95% range", "states", "failed", "verdict"
        ));
        for r in &rows {
            let figure = r.figure.map_or("-".to_string(), |f| format!("{f:.2}"));
            let range = r
                .range
                .map_or("-".to_string(), |(lo, hi)| format!("{lo:.2}..{hi:.2}"));
            out.push_str(&format!(
                "  {:<9} {figure:>6}  {range:<11}  {:>6}  {:>6}  {}\n",
                r.probe.as_str(),
                r.states,
                r.failed,
                r.verdict
            ));
        }
        for r in &rows {
            out.push_str(&format!("  {}: {}: {}\n", r.probe, r.verdict, r.line));
        }
    }
    if !report.skipped.is_empty() {
        out.push('\n');
        for s in &report.skipped {
            out.push_str(&format!("skipped: {} {}: {}\n", s.question, s.probe, s.why));
        }
    }
    out.push_str(&format!(
        "\n{} call{}, {} failed",
        report.calls,
        plural(report.calls),
        report.failed_calls
    ));
    if let Some(e) = &report.first_error {
        out.push_str(&format!(" (the first: {e})"));
    }
    out.push('\n');
    out
}
