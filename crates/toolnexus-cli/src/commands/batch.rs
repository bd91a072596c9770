//! `toolnexus batch`: every state of a states file (JSONL, CSV, TSV,
//! Parquet or Arrow, read in chunks by `toolnexus_table`, never whole)
//! against one question set, with bounded concurrency, an optional
//! requests-per-minute limit, progress, and resume.
//!
//! The out file ([`toolnexus::assess::out`] has the format and its rules:
//! header and fingerprint, lock, resume, `--restart`, `--rerun-errors`) gets
//! one line per input line, each in one write as its state finishes; a
//! failed state is an error line, never the run's end, and the run exits 3
//! while the file holds one. A table `--out` (`.parquet`, `.csv`, `.tsv`,
//! `.arrow`, `.arrows`) is written, once every row has a result, from that
//! out file kept beside it as `FILE.jsonl` (its journal, in row order): a
//! crash loses no finished row, and resume and reruns work as for JSONL.
//! Ctrl-C and SIGTERM stop starting states, what finished is written (exit
//! 130); a cap ([`caps`](crate::caps)) stops them too (exit 6).

mod shadow;

use std::collections::BTreeMap;
use std::io::IsTerminal as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use futures::{FutureExt as _, StreamExt as _};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;
use toolnexus::assess::out;
use toolnexus::classifier::{Classifier, EvalContext, EvalRequest, Questions};
use toolnexus::cost::budget::Budget;
use toolnexus::cost::{Cost, Shape};
use toolnexus::judge::Bands;
use toolnexus::limit::{Limiter, LimiterOptions};

use crate::args::{BatchArgs, StyleName};
use crate::exit::{self, Exit};
use crate::style::{self, Fallback};
use crate::{input, render};
use toolnexus_table::{Format, results_path};

/// Runs `toolnexus batch`.
pub async fn run(mut args: BatchArgs) -> Result<Exit> {
    args.out = args.out_file.clone().unwrap_or_default();
    if args.estimate.estimate {
        return crate::spend::estimate_batch(args).await;
    }
    // Ctrl-C and SIGTERM are watched from the start: one that arrives while
    // the run sets up still stops it before any state is asked.
    let mut signals = crate::signals::Signals::new("batch")?;
    // A stream (`-`, a terminal, a FIFO) is never overwritten: only a regular
    // file, or one yet to be created, can be an input written over.
    let regular = std::fs::metadata(&args.out).map_or(true, |m| m.is_file());
    if args.out.as_os_str() != "-" && regular {
        input::refuse_overwrite("--out", &args.out, &input_files(&args))?;
    }
    if let Some(path) = shadow::Shadow::path(&args) {
        let mut inputs = input_files(&args);
        inputs.push(("--out", args.out.as_path()));
        input::refuse_overwrite("--shadow-out", path, &inputs)?;
    }
    let questions = Arc::new(input::read_questions(&args.questions)?);
    let (states, survey) = input::open_states(&args.states, args.columns.spec())?;
    // A table --out is written at the end from the journal the run appends to.
    let journal = results_path(&args.out).map_err(|e| exit::usage(format!("--out {e}")))?;
    input::refuse_overwrite("--out", &journal, &input_files(&args))?;
    if args.rpm.is_some() || args.tpm.is_some() {
        args.style.live.limiter = Some(Limiter::new(LimiterOptions {
            requests_per_minute: args.rpm,
            tokens_per_minute: args.tpm,
            max_concurrency: args.concurrency as usize,
            initial_concurrency: args.concurrency as usize,
        }));
    }
    let (shadow_spec, mut shadow) = shadow::Shadow::spec(&args)?.unzip();
    let mut built = style::build_with(
        &args.style,
        Fallback::SystemOne,
        &style::Layers {
            prices: Some(&args.prices),
            caps: Some(&args.caps),
            cache: args.cache.as_deref().map(|p| (p, args.alias_ttl)),
            shadow: shadow_spec,
            ..Default::default()
        },
    )?;
    style::check_cascade(&built, &questions);
    let live = matches!(built.style, StyleName::SystemOne | StyleName::Llm);
    if let (Some(_), false) = (args.tpm, live) {
        return Err(exit::usage(format!(
            "--tpm limits the tokens a live style sends (systemone, llm); style {} sends none",
            built.style.as_str()
        )));
    }
    let mut fingerprint = out::Fingerprint::new(
        b"",
        &questions,
        built.style.as_str(),
        built.classifier.model(),
        built.classifier.fingerprint(),
    );
    fingerprint.states = survey.digest.clone();
    let budget = built.budget.take();
    let bands = args
        .thresholds
        .as_deref()
        .map(|p| input::read_thresholds(p, Some(questions.as_ref())))
        .transpose()?
        .map(Arc::new);
    style::pin::check(
        &args.pin,
        &args.style,
        built.style,
        args.thresholds.as_deref(),
    )?;
    if built.style == StyleName::SystemOne && !style::key_is_set(&style::key_env(&args.style.live))
    {
        tell!(
            "batch: note: no {} set; requests carry no API key ({})",
            style::key_env(&args.style.live),
            style::describe(&built)
        );
    }

    let plan = out::Plan {
        restart: args.restart,
        rerun_errors: args.rerun_errors,
        last_line: survey.last_line,
    };
    let mut opened = out::open(&journal, &fingerprint, plan)
        .map_err(|e| crate::out_file::error(e, plan, crate::out_file::Reader::Run))?;
    let shown = journal.display();
    for note in &opened.notes {
        tell!("{}", crate::out_file::note(note, &shown.to_string()));
    }
    if opened.truncated > 0 {
        tell!(
            "batch: dropped a torn final line ({} bytes) from {shown} left by an interrupted run; its state is redone",
            opened.truncated,
        );
    }
    if opened.restarted {
        tell!("batch: --restart: {shown} started over; every state is asked again");
    }
    if opened.rerun > 0 {
        tell!(
            "batch: --rerun-errors: {} removed from {shown}; their states are asked again",
            count(opened.rerun, "error line")
        );
    }
    // A cap holds for the job: what the out file records as spent counts.
    toolnexus_stack::carry(budget.as_ref(), std::mem::take(&mut opened.spent));
    // The pending rows stream from the file: a chunk is read as they are asked.
    let done = std::mem::take(&mut opened.done);
    let skipped = done.len();
    let read = || states.reader().map_err(input::states_error);
    // The shadow's file is opened only once the out file is ours.
    if let Some(s) = shadow.as_mut() {
        let mine = read()?.rows().0.filter(|r| !done.contains(&r.n));
        s.open(mine, built.shadow_model.as_deref())?;
    }
    let (rows, failure) = read()?.rows();
    let pending = rows.filter(move |r| !done.contains(&r.n));
    let mut progress = Progress::new(survey.rows.saturating_sub(skipped) as u64, args.no_progress);
    let asked = Arc::new(Asked {
        classifier: built.classifier.clone(),
        questions: questions.clone(),
        // A live style is paced by its limiter; recorded styles by the pacer.
        pacer: args.rpm.filter(|_| !live).map(Pacer::per_minute),
        bands: bands.clone(),
        call: built.call.clone(),
        budget: budget.clone(),
    });
    // Each ask is a task of its own, on whichever worker is free (the calls'
    // work spreads over the cores); dropped with its handle, it is cancelled.
    let asks = futures::stream::iter(pending).map(|row| {
        let asked = asked.clone();
        let (ask, handle) =
            async move { (row.n, row.id, asked.evaluate(row.state).await) }.remote_handle();
        tokio::spawn(ask);
        handle
    });
    // A table's journal is kept in row order: one merge writes the table.
    let (c, ordered) = (args.concurrency as usize, journal != args.out);
    let mut results = match ordered {
        true => asks.buffered(c).boxed_local(),
        false => asks.buffer_unordered(c).boxed_local(),
    };

    let is_stdout = opened.is_stdout;
    let write_failed = |e: std::io::Error| {
        if is_stdout && e.kind() == std::io::ErrorKind::BrokenPipe {
            return Ok(Exit::ClosedOutput);
        }
        let cause = out::cause(&e);
        Err(exit::io(format!("--out {shown}: cannot write: {cause}")))
    };
    let (mut ok, mut failed, mut hits, mut not_started) = (0usize, 0usize, 0usize, 0usize);
    let mut spent = toolnexus::cost::CostTally::default();
    let interrupted = loop {
        let next = tokio::select! {
            biased;
            () = signals.recv() => break true,
            next = results.next() => next,
        };
        let Some((n, id, result)) = next else {
            break false;
        };
        // Refused by a cap: not sent, not written; a rerun asks it.
        let Some(result) = result else {
            not_started += 1;
            continue;
        };
        let id = id.map_or(String::new(), |v| format!(",\"id\":{v}"));
        let record = match &result {
            Ok((fields, ..)) => format!("{{\"line\":{n}{id},{fields}}}\n"),
            Err(e) => format!(
                "{{\"line\":{n}{id},\"error\":{}}}\n",
                Value::from(e.as_str())
            ),
        };
        if let Err(e) = opened.sink.write(&record) {
            return write_failed(e);
        }
        match result {
            Ok((_, hit, cost)) => {
                ok += 1;
                hits += usize::from(hit);
                spent.add(&cost);
            }
            Err(_) => failed += 1,
        }
        progress.tick(ok, failed);
    };
    progress.finish(ok, failed);
    drop(results);
    if let Err(e) = opened.sink.finish() {
        return write_failed(e);
    }
    failure
        .take()
        .map_or(Ok(()), |e| Err(input::states_error(e)))?;
    let shadow_said = match shadow {
        Some(s) => Some(s.finish(!interrupted).await?),
        None => None,
    };
    if let Some((line, _)) = &shadow_said {
        tell!("{line}");
    }
    // States the shadow never asked are counted where the run is summed up.
    let shadow_skipped = match shadow_said.as_ref().map_or(0, |(_, n)| *n) {
        0 => String::new(),
        n => format!(
            "; the shadow skipped {} (it was busy)",
            count(n as usize, "state")
        ),
    };

    if interrupted {
        tell!(
            "batch: interrupted: {} results written this run; rerun the same command to resume",
            ok + failed
        );
        return Ok(Exit::Interrupted);
    }
    if let Some(b) = budget.as_ref().filter(|_| not_started > 0) {
        let done = format!(
            "{} written to {shown} this run, {} not started",
            count(ok + failed, "result"),
            count(not_started, "state")
        );
        tell!("{}", crate::caps::message("batch", b, &args.caps, &done));
        return Ok(Exit::CapReached);
    }
    let from_cache = match (&args.cache, crate::warnings::cache_failures()) {
        (Some(_), 0) => format!(" ({hits} from the cache, not sent)"),
        (Some(_), n) => format!(
            " ({hits} from the cache; it failed {n} time{}, see the warnings)",
            if n == 1 { "" } else { "s" }
        ),
        (None, _) => String::new(),
    };
    // A cascade's split: the student's answers never reached the judge behind it.
    let local = match &built.cascade {
        Some(stats) => format!(
            "; the student answered {} and passed {} on",
            stats.local(),
            stats.teacher()
        ),
        None => String::new(),
    };
    // Every row has a result: the table is written from the journal.
    if journal != args.out && skipped + ok + failed == survey.rows {
        toolnexus_table::write_table(
            &states,
            &journal,
            &questions,
            &args.out,
            Format::of(&args.out),
        )
        .map_err(|e| exit::io(format!("--out {e}")))?;
    }
    let place = if opened.is_stdout && args.out.as_os_str() == "-" {
        "standard output".to_string()
    } else {
        args.out.display().to_string()
    };
    // Every error line the file holds, this run's and earlier ones.
    let errors = opened.errors + failed;
    let held = if errors > 0 && !opened.is_stream {
        format!(
            ", which holds {}: rerun with --rerun-errors to ask them again",
            count(errors, "error line")
        )
    } else {
        String::new()
    };
    let cost = match crate::spend::tally_text(&spent) {
        t if t.is_empty() => t,
        t => format!("; this run's {t}"),
    };
    let summary = format!(
        "batch: done {ok}{from_cache}, failed {failed}, skipped {skipped} as already done{local}{shadow_skipped}{cost}; results in {place}{held}"
    );
    if opened.is_stdout {
        tell!("{summary}");
    } else {
        say!("{summary}");
    }
    Ok(if errors > 0 {
        Exit::Eval
    } else {
        Exit::Success
    })
}

/// `1 error line`, `3 error lines`.
fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// What every state of the batch is asked with.
struct Asked {
    classifier: Classifier,
    questions: Arc<Questions>,
    pacer: Option<Pacer>,
    /// `--thresholds`: per-question bands the verdicts are read through.
    bands: Option<Arc<BTreeMap<String, Bands>>>,
    call: String,
    /// The run's caps: a state they refuse is not written.
    budget: Option<Budget>,
}

impl Asked {
    /// One state (or why its row has none): the rate limit honoured, then evaluated.
    /// The result line's fields come back as compact JSON (`"decision":…`,
    /// `"verdicts":…` with `--thresholds`, `"cached":true` for a cache hit,
    /// then `"cost"` and `"shape"`) with whether it was a hit and what it
    /// cost; a failure as its message. `None`: a cap refused it before it
    /// was sent.
    async fn evaluate(
        &self,
        state: Result<Value, String>,
    ) -> Option<Result<(String, bool, Cost), String>> {
        let state = match state {
            Ok(s) => s,
            Err(e) => return Some(Err(e)),
        };
        if self.budget.as_ref().is_some_and(|b| b.reached().is_some()) {
            return None;
        }
        let shape = Shape::of(&state, &self.questions);
        if let Some(p) = &self.pacer {
            p.wait().await;
        }
        let ctx = EvalContext::new().with_call_name(self.call.clone());
        let request = EvalRequest::new(state, (*self.questions).clone());
        let done = match self.classifier.evaluate_request(ctx, request).await {
            Ok(done) => done,
            Err(e) if e.is_cap_reached() => return None,
            Err(e) => return Some(Err(e.to_string())),
        };
        let d = &done.decision;
        let mut fields = format!("\"decision\":{}", d.to_value());
        if let Some(b) = &self.bands {
            fields.push_str(&format!(",\"verdicts\":{}", render::verdicts_json(d, b)));
        }
        if done.cache_hit {
            fields.push_str(",\"cached\":true");
        }
        fields.push_str(&format!(
            ",\"cost\":{},\"shape\":{}",
            done.cost.to_value(),
            shape.to_value()
        ));
        Some(Ok((fields, done.cache_hit, done.cost)))
    }
}

/// Spaces evaluation starts evenly: at most `n` per minute, no bursts.
struct Pacer {
    interval: Duration,
    next: tokio::sync::Mutex<tokio::time::Instant>,
}

impl Pacer {
    fn per_minute(n: u32) -> Pacer {
        Pacer {
            interval: Duration::from_secs(60) / n.max(1),
            next: tokio::sync::Mutex::new(tokio::time::Instant::now()),
        }
    }

    async fn wait(&self) {
        let slot = {
            let mut next = self.next.lock().await;
            let slot = (*next).max(tokio::time::Instant::now());
            *next = slot + self.interval;
            slot
        };
        tokio::time::sleep_until(slot).await;
    }
}

/// A progress bar on a terminal; plain lines every few seconds otherwise.
enum Progress {
    Bar(ProgressBar),
    Lines {
        total: u64,
        started: Instant,
        last: Instant,
    },
    Off,
}

const LINE_EVERY: Duration = Duration::from_secs(2);

impl Progress {
    fn new(total: u64, off: bool) -> Progress {
        if off {
            return Progress::Off;
        }
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template(
                "{bar:40.cyan/blue} {pos}/{len} {per_sec} eta {eta} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            return Progress::Bar(bar);
        }
        let now = Instant::now();
        Progress::Lines {
            total,
            started: now,
            last: now,
        }
    }

    fn tick(&mut self, ok: usize, failed: usize) {
        match self {
            Progress::Bar(bar) => {
                bar.inc(1);
                if failed > 0 {
                    bar.set_message(format!("{failed} failed"));
                }
            }
            Progress::Lines {
                total,
                started,
                last,
            } => {
                if last.elapsed() >= LINE_EVERY {
                    *last = Instant::now();
                    tell!("{}", progress_line(ok, failed, *total, started.elapsed()));
                }
            }
            Progress::Off => {}
        }
    }

    fn finish(&mut self, ok: usize, failed: usize) {
        match self {
            Progress::Bar(bar) => bar.finish_and_clear(),
            Progress::Lines { total, started, .. } => {
                tell!("{}", progress_line(ok, failed, *total, started.elapsed()));
            }
            Progress::Off => {}
        }
    }
}

fn progress_line(ok: usize, failed: usize, total: u64, elapsed: Duration) -> String {
    let n = ok + failed;
    let rate = n as f64 / elapsed.as_secs_f64().max(1e-9);
    format!("batch: {n}/{total} ({failed} failed, {rate:.1} states/s)")
}

/// The files a batch reads, by flag: none of its outputs may be one of them.
fn input_files(args: &BatchArgs) -> Vec<(&'static str, &Path)> {
    let mut inputs: Vec<(&str, &Path)> = vec![
        ("--states", args.states.as_path()),
        ("--questions", Path::new(&args.questions)),
    ];
    for (flag, path) in [
        ("--thresholds", &args.thresholds),
        ("--cache", &args.cache),
        ("--tape", &args.style.tape),
        ("--student", &args.style.student),
        ("--calibration", &args.style.calibration),
    ] {
        if let Some(p) = path {
            inputs.push((flag, p.as_path()));
        }
    }
    inputs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_pacer_spaces_starts_evenly() {
        let p = Pacer::per_minute(120);
        let t0 = tokio::time::Instant::now();
        for _ in 0..3 {
            p.wait().await;
        }
        assert_eq!(t0.elapsed(), Duration::from_millis(1000));
    }
}
