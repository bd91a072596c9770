//! `toolnexus assess`: run labelled examples, then report, gate, pick
//! thresholds, calibrate, compare, check and drift — all but `run` (and
//! `drift --tape`) pure functions of run files. With no subcommand, the
//! offline demo.

mod drift;

use std::io::IsTerminal as _;
use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use toolnexus::assess::gates::{Gate, gate_outcomes, junit_xml};
use toolnexus::assess::report::report_html;
use toolnexus::assess::*;
use toolnexus::judge::{Bands, Tape};

use crate::args::{
    AssessArgs, AssessCommand, AssessRunArgs, CalibrateArgs, CheckArgs, CompareArgs, ReportArgs,
    ThresholdsArgs,
};
use crate::exit::{self, Exit};
use crate::input;
use crate::style::{self, Fallback};

/// The demo's questions, labelled set and recorded decisions, compiled in.
const DEMO_QUESTIONS: &str = include_str!("../../../toolnexus/examples/assess/demo.questions.json");
const DEMO_LABELS: &str = include_str!("../../../toolnexus/examples/assess/demo.labels.jsonl");
const DEMO_TAPE: &str = include_str!("../../../toolnexus/examples/assess/demo.tape.json");
const DEMO_CALL: &str = "assess_demo";

/// Runs `toolnexus assess`.
pub async fn run(args: AssessArgs) -> Result<Exit> {
    match args.command {
        None => demo().await,
        Some(AssessCommand::Run(a)) => run_cmd(a).await,
        Some(AssessCommand::Report(a)) => report(a),
        Some(AssessCommand::Thresholds(a)) => thresholds(a),
        Some(AssessCommand::Calibrate(a)) => calibrate(a),
        Some(AssessCommand::Compare(a)) => compare(a),
        Some(AssessCommand::Check(a)) => check(a),
        Some(AssessCommand::Drift(a)) => drift::run(a).await,
    }
}

/// Bad input (exit 2): the error already names file, line, column and key.
fn bad(e: AssessError) -> anyhow::Error {
    match e.kind() {
        AssessErrorKind::Io if e.message().starts_with("cannot write") => exit::io(e),
        _ => exit::usage(e),
    }
}

/// A write failure (exit 4).
fn write_failed(e: AssessError) -> anyhow::Error {
    exit::io(e)
}

/// Reads a run file for reporting; a torn final line (an interrupted run) is
/// left out and said so on stderr, naming the file and the line.
fn load_run(path: &Path) -> Result<Run> {
    let run = Run::load(path).map_err(bad)?;
    if let Some(line) = run.torn_line {
        tell!("{}", torn_warning(path, line, "left out"));
    }
    Ok(run)
}

/// The one wording of the torn-line warning.
fn torn_warning(path: &Path, line: usize, what: &str) -> String {
    format!(
        "warning: {}:{line}: torn final line (cut short by an interrupted run) {what}",
        path.display()
    )
}

fn print_json(v: &impl serde::Serialize) {
    say!(
        "{}",
        serde_json::to_string_pretty(v).expect("figures serialise")
    );
}

/// The offline demo: the shipped labelled set replayed from its tape.
async fn demo() -> Result<Exit> {
    let qv: serde_json::Value = serde_json::from_str(DEMO_QUESTIONS)
        .map_err(|e| anyhow::anyhow!("built-in demo questions: {e}"))?;
    let questions = input::parse_questions("built-in demo questions", &qv)?;
    let examples = parse_examples(DEMO_LABELS, "demo.labels.jsonl", &questions)
        .map_err(|e| anyhow::anyhow!("built-in demo set: {e}"))?;
    let tape =
        Tape::from_json(DEMO_TAPE).map_err(|e| anyhow::anyhow!("built-in demo tape: {e}"))?;
    say!(
        "offline: {} project-written support tickets (the built-in demo set), answered from recorded decisions; no backend is called",
        examples.len()
    );
    let dir = std::env::temp_dir().join(format!("toolnexus-assess-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| exit::io(format!("{}: {e}", dir.display())))?;
    let path = dir.join("run.jsonl");
    let _ = std::fs::remove_file(&path);
    let mut options = RunOptions::default();
    options.call_name = Some(DEMO_CALL.to_string());
    let result = run_examples(&tape.replayer(), &questions, &examples, &path, options).await;
    let _ = std::fs::remove_dir_all(&dir);
    let run = result.map_err(bad)?;
    say!();
    put!("{}", table(&summarize(&run, &SummaryOptions::default())));
    say!();
    say!(
        "next: toolnexus assess run --questions Q --examples L --out run.jsonl (any style), then report | thresholds | calibrate | compare | check"
    );
    Ok(Exit::Success)
}

/// A progress callback drawing a bar on a terminal.
fn progress_bar(off: bool) -> Option<(Progress, ProgressBar)> {
    if off || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template("{bar:40.cyan/blue} {pos}/{len} {per_sec} eta {eta}")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    let b = bar.clone();
    let progress: Progress = Arc::new(move |done, total| {
        b.set_length(total as u64);
        b.set_position(done as u64);
    });
    Some((progress, bar))
}

/// `assess run`: the one step that calls a backend.
async fn run_cmd(mut a: AssessRunArgs) -> Result<Exit> {
    a.out = a.out_file.clone().unwrap_or_default();
    if a.estimate.estimate {
        return crate::spend::estimate_assess(a).await;
    }
    let mut inputs: Vec<(&str, &Path)> = vec![("--examples", &a.examples)];
    if Path::new(&a.questions).is_file() {
        inputs.push(("--questions", Path::new(&a.questions)));
    }
    for (flag, file) in [
        ("--tape", &a.style.tape),
        ("--calibration", &a.style.calibration),
        ("--student", &a.style.student),
    ] {
        if let Some(f) = file {
            inputs.push((flag, f));
        }
    }
    input::refuse_overwrite("--out", &a.out, &inputs)?;
    let mut built = style::build_with(
        &a.style,
        Fallback::SystemOne,
        &style::Layers {
            prices: Some(&a.prices),
            caps: Some(&a.caps),
            ..Default::default()
        },
    )?;
    let budget = built.budget.take();
    let questions = input::read_questions(&a.questions)?;
    style::check_cascade(&built, &questions);
    // A cap holds for the job: what the run file's rows record as spent
    // counts (a file that does not read is reported by the run below).
    if let Some(b) = budget.as_ref()
        && !a.out.as_os_str().is_empty()
        && a.out.exists()
        && let Ok(earlier) = RunReader::open(&a.out)
    {
        toolnexus_stack::carry(
            Some(b),
            earlier
                .map_while(Result::ok)
                .filter_map(|r| r.decision().map(|d| (r.cost.clone(), d.usage.clone()))),
        );
    }
    let mut options = RunOptions::default();
    options.budget = budget.clone();
    options.concurrency = a.concurrency as usize;
    options.rerun_errors = a.rerun_errors;
    options.call_name = Some(built.call.clone());
    let bar = progress_bar(a.no_progress);
    options.progress = bar.as_ref().map(|(p, _)| p.clone());
    let run = run_examples_file(&built.classifier, &questions, &a.examples, &a.out, options)
        .await
        .map_err(bad)?;
    if let Some(line) = run.torn_line {
        tell!(
            "{}",
            torn_warning(&a.out, line, "dropped; its example was asked again")
        );
    }
    if let Some((_, bar)) = bar {
        bar.finish_and_clear();
    }
    let (s, out) = (&run.summary, a.out.display());
    let describe = style::describe(&built);
    tell!(
        "{out}: {} rows, {} failed ({describe})",
        s.rows,
        s.failed_rows
    );
    put!("{}", table(s));
    if let Some(b) = budget
        .as_ref()
        .filter(|b| run.not_started > 0 && b.reached().is_some())
    {
        let (rows, left) = (s.rows, run.not_started);
        let done = format!("{out} holds {rows} rows, {left} examples not asked");
        tell!("{}", crate::caps::message("assess run", b, &a.caps, &done));
        return Ok(Exit::CapReached);
    }
    Ok(Exit::Success)
}

/// `assess report`.
fn report(a: ReportArgs) -> Result<Exit> {
    let mut inputs: Vec<(&str, &Path)> = a.runs.iter().map(|r| ("run", r.as_path())).collect();
    if let Some(t) = &a.thresholds {
        inputs.push(("--thresholds", t));
    }
    if let Some(out) = &a.report {
        input::refuse_overwrite("--report", out, &inputs)?;
        inputs.push(("--report", out));
    }
    if let Some(out) = &a.junit {
        input::refuse_overwrite("--junit", out, &inputs)?;
    }
    let mut runs = Vec::new();
    for path in &a.runs {
        runs.push((path, load_run(path)?));
    }
    let mut options = SummaryOptions::default();
    if let Some(p) = &a.thresholds {
        let asked = runs.first().map(|(_, r)| &r.questions);
        options.bands = Some((Bands::default(), input::read_thresholds(p, asked)?));
    }
    options.gate_keys = a.gate.clone();
    for s in &a.slice {
        options.slices.push(
            s.parse::<SliceBy>()
                .map_err(|e| exit::usage(format!("--slice {s}: {e}")))?,
        );
    }
    let mut gates = Vec::new();
    for g in &a.min {
        gates.push(Gate::parse_min(g).map_err(bad)?);
    }
    for g in &a.max {
        gates.push(Gate::parse_max(g).map_err(bad)?);
    }
    let mut summaries = Vec::new();
    for (path, run) in &runs {
        summaries.push((path.display().to_string(), summarize(run, &options)));
    }
    if a.json {
        if summaries.len() == 1 {
            print_json(&summaries[0].1);
        } else {
            let all: Vec<&Summary> = summaries.iter().map(|(_, s)| s).collect();
            print_json(&all);
        }
    } else {
        for (i, (name, s)) in summaries.iter().enumerate() {
            if summaries.len() > 1 {
                if i > 0 {
                    say!();
                }
                say!("== {name}");
            }
            put!("{}", table(s));
        }
    }
    if let Some(out) = &a.report {
        let html = report_html("toolnexus assess", &summaries);
        std::fs::write(out, html)
            .map_err(|e| exit::io(format!("--report {}: cannot write: {e}", out.display())))?;
        tell!("wrote {}", out.display());
    }
    let mut failed = false;
    let mut suites = Vec::new();
    for (name, s) in &summaries {
        let outcomes = gate_outcomes(s, &gates);
        for f in outcomes.iter().filter_map(|o| o.failure.as_ref()) {
            failed = true;
            if summaries.len() > 1 {
                tell!("gate failed: {name}: {f}");
            } else {
                tell!("gate failed: {f}");
            }
        }
        suites.push((name.clone(), outcomes));
    }
    if let Some(out) = &a.junit {
        toolnexus::judge::write_atomic(out, junit_xml(&suites).as_bytes()).map_err(|e| {
            let text = e.to_string();
            exit::io(format!(
                "--junit {}",
                text.strip_prefix("tape: ").unwrap_or(&text)
            ))
        })?;
        tell!("wrote {}", out.display());
    }
    Ok(if failed { Exit::Eval } else { Exit::Success })
}

/// `assess thresholds`.
fn thresholds(a: ThresholdsArgs) -> Result<Exit> {
    let target = match (a.target_accuracy, a.max_escalation) {
        (Some(x), _) => Target::Accuracy(x),
        (None, Some(e)) => Target::MaxEscalation(e),
        (None, None) => {
            return Err(exit::usage(
                "--target-accuracy or --max-escalation is required",
            ));
        }
    };
    if let Some(out) = &a.out {
        input::refuse_overwrite("--out", out, &[("run", &a.run)])?;
    }
    let run = load_run(&a.run)?;
    let mut o = ThresholdOptions::new(target);
    o.resamples = a.resamples;
    o.seed = a.seed;
    o.holdout = a.holdout;
    o.gate = a.gate.clone();
    let r = choose_thresholds(&run, &o).map_err(bad)?;
    // The file first: a reader that stops early (`| head`) ends the printing,
    // never the saving.
    if let Some(out) = &a.out {
        r.save(out).map_err(write_failed)?;
        tell!("wrote {}", out.display());
    }
    if a.json {
        put!("{}", r.to_json());
    } else {
        put!("{}", r.table());
    }
    Ok(Exit::Success)
}

/// `assess calibrate`.
fn calibrate(a: CalibrateArgs) -> Result<Exit> {
    if let Some(out) = &a.out {
        input::refuse_overwrite("--out", out, &[("run", &a.run)])?;
    }
    let run = load_run(&a.run)?;
    let o = CalibrateOptions {
        folds: a.folds as usize,
        seed: a.seed,
    };
    let r = calibrate_run(&run, &o).map_err(bad)?;
    if let Some(out) = &a.out {
        r.file.save(out).map_err(write_failed)?;
        tell!("wrote {}", out.display());
    }
    if a.json {
        put!("{}", r.file.to_json());
    } else {
        put!("{}", r.table());
    }
    Ok(Exit::Success)
}

/// `assess compare`.
fn compare(a: CompareArgs) -> Result<Exit> {
    let c = compare_runs(&load_run(&a.a)?, &load_run(&a.b)?).map_err(bad)?;
    if a.json {
        print_json(&c);
    } else {
        put!("{}", c.table());
    }
    Ok(Exit::Success)
}

/// `assess check`: exit 3 on drift, naming the question and the figures;
/// exit 5 when no question of the thresholds file is asked by the run (there
/// is nothing to check), naming the questions on both sides. A question
/// reworded since its cut was picked is a warning.
fn check(a: CheckArgs) -> Result<Exit> {
    let file = ThresholdReport::load(&a.thresholds).map_err(bad)?;
    let run = load_run(&a.run)?;
    let mut picked: Vec<&String> = file.questions.keys().collect();
    if let Some(g) = &file.gate {
        picked.extend(g.keys.iter().filter(|k| !file.questions.contains_key(*k)));
    }
    if !picked.iter().any(|k| run.questions.contains_key(*k)) {
        let names = |keys: &mut dyn Iterator<Item = &String>| {
            let v: Vec<String> = keys.map(|k| format!("{k:?}")).collect();
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        return Err(exit::no_match(format!(
            "assess check: no question of the thresholds file {} ({}) is asked by the run {} ({}); nothing to check",
            a.thresholds.display(),
            names(&mut picked.iter().copied()),
            a.run.display(),
            names(&mut run.questions.keys()),
        )));
    }
    // The rewording warning, worded as eval and batch word it.
    input::read_thresholds(&a.thresholds, Some(&run.questions))?;
    let r = check_thresholds(&run, &file);
    if a.json {
        print_json(&r);
    } else {
        put!("{}", r.table());
    }
    let drift = r.drifted();
    for d in &drift {
        tell!("drift: {d}");
    }
    Ok(if drift.is_empty() {
        Exit::Success
    } else {
        Exit::Eval
    })
}
