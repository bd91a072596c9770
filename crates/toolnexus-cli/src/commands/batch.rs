//! `toolnexus batch`: every state of a JSONL file against one question set, with
//! bounded concurrency, an optional requests-per-minute limit, progress, and
//! resume.
//!
//! Invariants:
//! - Each output line names its input line: `{"line":n,"decision":{..}}` or
//!   `{"line":n,"error":".."}` (with `--thresholds`, decision lines also carry
//!   `"verdicts"`, and with `--cache` a hit carries `"cached":true`), and is written with one `write` call, newline
//!   included, as soon as its state finishes. A kill can therefore tear only the
//!   final line.
//! - On start the existing out file is read: every complete result line counts as
//!   done and is skipped; a torn final line (no newline) is truncated away and its
//!   state redone. So a run restarted with the same arguments does no state twice
//!   and loses none.
//! - A failed state (bad JSON on its line included) is written as an error line;
//!   it never aborts the run. To retry failures, delete their lines from the out
//!   file and rerun.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::{IsTerminal as _, Write as _};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use futures::StreamExt as _;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;
use toolnexus::classifier::{Classifier, EvalContext, EvalRequest, Questions};
use toolnexus::judge::Bands;
use toolnexus::limit::{Limiter, LimiterOptions};

use crate::args::{BatchArgs, StyleName};
use crate::exit::{self, Exit};
use crate::style::{self, Fallback};
use crate::{input, render};

/// Runs `toolnexus batch`.
pub async fn run(mut args: BatchArgs) -> Result<Exit> {
    let questions = Arc::new(input::read_questions(&args.questions)?);
    let text = input::read_file("--states", &args.states)?;
    let lines: Vec<(usize, &str)> = input::jsonl_lines(&text).collect();
    let last_line = text.split('\n').count();
    if args.rpm.is_some() || args.tpm.is_some() {
        args.style.live.limiter = Some(Limiter::new(LimiterOptions {
            requests_per_minute: args.rpm,
            tokens_per_minute: args.tpm,
            max_concurrency: args.concurrency as usize,
            initial_concurrency: args.concurrency as usize,
        }));
    }
    let mut built = style::build(&args.style, Fallback::SystemOne)?;
    let live = matches!(built.style, StyleName::SystemOne | StyleName::Llm);
    if let (Some(_), false) = (args.tpm, live) {
        return Err(exit::usage(format!(
            "--tpm limits the tokens a live style sends (systemone, llm); style {} sends none",
            built.style.as_str()
        )));
    }
    if let Some(path) = &args.cache {
        let cache = crate::commands::cache::open(path)?;
        built.classifier = toolnexus::cache::caching(built.classifier, Arc::new(cache));
    }
    let bands = args
        .thresholds
        .as_deref()
        .map(|p| input::read_thresholds(p, Some(questions.as_ref())))
        .transpose()?
        .map(Arc::new);
    if built.style == StyleName::SystemOne && !style::key_is_set(&style::key_env(&args.style.live))
    {
        eprintln!(
            "batch: note: no {} set; requests carry no API key ({})",
            style::key_env(&args.style.live),
            style::describe(&built)
        );
    }

    let resumed = resume(&args.out, last_line)?;
    let done_before: BTreeSet<usize> = resumed.done;
    if resumed.truncated > 0 {
        eprintln!(
            "batch: dropped a torn final line ({} bytes) from {} left by an interrupted run; its state is redone",
            resumed.truncated,
            args.out.display()
        );
    }
    let pending: Vec<(usize, String)> = lines
        .iter()
        .filter(|(n, _)| !done_before.contains(n))
        .map(|(n, l)| (*n, l.to_string()))
        .collect();
    let skipped = lines.len() - pending.len();

    let mut out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args.out)
        .map_err(|e| exit::io(format!("--out {}: cannot open: {e}", args.out.display())))?;

    let mut progress = Progress::new(pending.len() as u64, args.no_progress);
    // A live style is paced by its limiter; recorded styles by the pacer.
    let pacer = args
        .rpm
        .filter(|_| !live)
        .map(|n| Arc::new(Pacer::per_minute(n)));
    let call = built.call.clone();
    let classifier = built.classifier.clone();
    let mut results = futures::stream::iter(pending)
        .map(|(n, line)| {
            let (classifier, questions, pacer, call, bands) = (
                classifier.clone(),
                questions.clone(),
                pacer.clone(),
                call.clone(),
                bands.clone(),
            );
            async move {
                let asked = Asked {
                    classifier: &classifier,
                    questions: &questions,
                    pacer: pacer.as_deref(),
                    bands: bands.as_deref(),
                    call,
                };
                (n, asked.evaluate(n, &line).await)
            }
        })
        .buffer_unordered(args.concurrency as usize);

    let (mut ok, mut failed, mut hits) = (0usize, 0usize, 0usize);
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let interrupted = loop {
        let next = tokio::select! {
            biased;
            _ = &mut ctrl_c => break true,
            next = results.next() => next,
        };
        let Some((n, result)) = next else {
            break false;
        };
        let record = match &result {
            Ok((fields, _)) => format!("{{\"line\":{n},{fields}}}\n"),
            Err(e) => format!("{{\"line\":{n},\"error\":{}}}\n", Value::from(e.as_str())),
        };
        write_record(&mut out, &record)
            .map_err(|e| exit::io(format!("--out {}: cannot write: {e}", args.out.display())))?;
        match result {
            Ok((_, hit)) => {
                ok += 1;
                hits += usize::from(hit);
            }
            Err(_) => failed += 1,
        }
        progress.tick(ok, failed);
    };
    progress.finish(ok, failed);
    drop(results);

    if interrupted {
        eprintln!(
            "batch: interrupted: {} results written this run; rerun the same command to resume",
            ok + failed
        );
        return Ok(Exit::Interrupted);
    }
    let from_cache = match &args.cache {
        Some(_) => format!(" ({hits} from the cache, not sent)"),
        None => String::new(),
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
    println!(
        "batch: done {ok}{from_cache}, failed {failed}, skipped {skipped} as already done{local}; results in {}",
        args.out.display()
    );
    Ok(if failed > 0 {
        Exit::Eval
    } else {
        Exit::Success
    })
}

/// What every state of the batch is asked with.
struct Asked<'a> {
    classifier: &'a Classifier,
    questions: &'a Questions,
    pacer: Option<&'a Pacer>,
    /// `--thresholds`: per-question bands the verdicts are read through.
    bands: Option<&'a BTreeMap<String, Bands>>,
    call: String,
}

impl Asked<'_> {
    /// One state: its line parsed, the rate limit honoured, then evaluated.
    /// The result line's fields come back as compact JSON (`"decision":…`,
    /// `"verdicts":…` with `--thresholds`, `"cached":true` for a cache hit) with
    /// whether it was a hit; a failure as its message.
    async fn evaluate(self, n: usize, line: &str) -> Result<(String, bool), String> {
        let state = input::parse_line(n, line)?;
        if let Some(p) = self.pacer {
            p.wait().await;
        }
        let ctx = EvalContext::new().with_call_name(self.call);
        let request = EvalRequest::new(state, self.questions.clone());
        let done = self
            .classifier
            .evaluate_request(ctx, request)
            .await
            .map_err(|e| e.to_string())?;
        let d = &done.decision;
        let mut fields = format!("\"decision\":{}", d.to_value());
        if let Some(b) = self.bands {
            fields.push_str(&format!(",\"verdicts\":{}", render::verdicts_json(d, b)));
        }
        if done.cache_hit {
            fields.push_str(",\"cached\":true");
        }
        Ok((fields, done.cache_hit))
    }
}

/// One result line, in one write, then flushed.
fn write_record(out: &mut File, record: &str) -> std::io::Result<()> {
    out.write_all(record.as_bytes())?;
    out.flush()
}

/// What an existing out file says is already done.
#[derive(Debug)]
struct Resumed {
    done: BTreeSet<usize>,
    /// Bytes of a torn final line removed.
    truncated: u64,
}

/// Reads the out file of an earlier run: the input lines it already answers.
/// A torn final line is truncated away; any other line that is not a result
/// line is bad input (the file is not this command's output).
fn resume(path: &Path, last_line: usize) -> Result<Resumed> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Resumed {
                done: BTreeSet::new(),
                truncated: 0,
            });
        }
        Err(e) => {
            return Err(exit::io(format!(
                "--out {}: cannot read: {e}",
                path.display()
            )));
        }
    };
    let shown = path.display();
    let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let mut done = BTreeSet::new();
    for (i, raw) in bytes[..complete].split(|b| *b == b'\n').enumerate() {
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let k = i + 1;
        let bad = |why: &str| {
            exit::usage(format!(
                "--out {shown}: line {k} is not a batch result line ({why}); refusing to resume into it"
            ))
        };
        let v: Value = serde_json::from_slice(raw).map_err(|e| bad(&input::json_error(&e)))?;
        let n = v
            .get("line")
            .and_then(Value::as_u64)
            .filter(|n| *n >= 1)
            .ok_or_else(|| bad("no \"line\" number"))? as usize;
        if v.get("decision").is_none() && v.get("error").is_none() {
            return Err(bad("neither \"decision\" nor \"error\""));
        }
        if n > last_line {
            return Err(exit::usage(format!(
                "--out {shown}: line {k} answers input line {n}, but --states has {last_line} lines: is it the output of another input?"
            )));
        }
        done.insert(n);
    }
    let truncated = (bytes.len() - complete) as u64;
    if truncated > 0 {
        OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|f| f.set_len(complete as u64))
            .map_err(|e| {
                exit::io(format!(
                    "--out {shown}: cannot truncate a torn final line: {e}"
                ))
            })?;
    }
    Ok(Resumed { done, truncated })
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
                    eprintln!("{}", progress_line(ok, failed, *total, started.elapsed()));
                }
            }
            Progress::Off => {}
        }
    }

    fn finish(&mut self, ok: usize, failed: usize) {
        match self {
            Progress::Bar(bar) => bar.finish_and_clear(),
            Progress::Lines { total, started, .. } => {
                eprintln!("{}", progress_line(ok, failed, *total, started.elapsed()));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, body: &[u8]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("toolnexus-cli-batch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        p
    }

    #[test]
    fn a_torn_final_line_is_truncated_and_redone() {
        let p = temp(
            "torn.jsonl",
            b"{\"line\":2,\"decision\":{}}\n{\"line\":1,\"error\":\"x\"}\n{\"line\":3,\"deci",
        );
        let r = resume(&p, 3).unwrap();
        assert_eq!(r.done, BTreeSet::from([1, 2]));
        assert_eq!(r.truncated, 15);
        assert!(std::fs::read(&p).unwrap().ends_with(b"\"x\"}\n"));
    }

    #[test]
    fn a_foreign_out_file_is_refused() {
        let p = temp("foreign.jsonl", b"hello\n");
        let e = resume(&p, 3).unwrap_err();
        assert!(
            e.to_string().contains("line 1 is not a batch result line"),
            "{e}"
        );
        let p = temp("other.jsonl", b"{\"line\":9,\"error\":\"x\"}\n");
        let e = resume(&p, 3).unwrap_err();
        assert!(e.to_string().contains("--states has 3 lines"), "{e}");
    }

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
