//! Cost before it is spent: `toolnexus cost fit`, `batch --estimate`,
//! `assess run --estimate`, and the `--prices` table every run prices its
//! calls with.
//!
//! - `cost fit RUN…` reads batch out files (each decision line records its
//!   request's `"shape"`) and assess run files (the header's questions and each
//!   row's `state_len`), fits the estimator on their recorded
//!   `usage.input_tokens` and prints the fit's error; `--out` writes the file
//!   `--estimator` reads. Cache hits are left out: nothing was billed.
//! - `--estimate` reads the inputs, and the `--cache` file read-only (it is
//!   never created), and sends nothing: calls, cache hits, input tokens and
//!   cost, each with its range.
//! - Prices: a reported cost always wins; local styles cost an explicit 0; any
//!   other call is priced from `--prices FILE` (or `$TOOLNEXUS_PRICES`) over the
//!   compiled-in table, and a model no table lists stays unknown.

use std::collections::HashSet;
use std::path::Path;

use anyhow::Result;
use serde_json::{Value, json};
use toolnexus::assess::{Run, read_examples};
use toolnexus::cache::{Cache as _, cache_key_for};
use toolnexus::classifier::{EvalRequest, Questions};
use toolnexus::cost::{Cost, Estimate, Estimator, Pricing, Sample, Shape, usd_text};

use crate::args::{AssessRunArgs, BatchArgs, CostFitArgs, EstimateArgs};
use crate::exit::{self, Exit};
use crate::input;
use crate::style::{self, Fallback};

pub use crate::style::PRICES_ENV;

/// The costs of a run's lines, summed: known ones added, unknown ones counted.
#[derive(Debug, Default)]
pub struct Tally {
    known: usize,
    unknown: usize,
    usd: f64,
    sources: std::collections::BTreeMap<String, usize>,
}

impl Tally {
    /// Counts one call's cost.
    pub fn add(&mut self, cost: &Cost) {
        match cost.usd {
            Some(c) => {
                self.known += 1;
                self.usd += c;
            }
            None => self.unknown += 1,
        }
        let source = cost
            .source
            .as_ref()
            .map_or("unknown".to_string(), ToString::to_string);
        *self.sources.entry(source).or_default() += 1;
    }

    /// `cost $0.000123 (priced (toolnexus, checked 2026-12-05) 3)`, or
    /// `cost unknown (…)`; empty when nothing was counted.
    pub fn text(&self) -> String {
        if self.known + self.unknown == 0 {
            return String::new();
        }
        let sources: Vec<String> = self
            .sources
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let sources = sources.join(", ");
        match (self.known, self.unknown) {
            (_, 0) => format!("cost ${} ({sources})", usd_text(self.usd)),
            (0, _) => format!("cost unknown ({sources}: no price for the model; see --prices)"),
            (k, u) => format!(
                "cost ${} known on {k} of {} calls, unknown on {u} ({sources})",
                usd_text(self.usd),
                k + u
            ),
        }
    }
}

/// `toolnexus cost fit`.
///
/// Fits one model's billed requests only: a run whose answers were all
/// judged on this machine (cost source `local`) is refused by name, a
/// cascade's local answers are left out, and runs answered by two models are
/// refused naming both. Coefficients the runs do not determine are named in
/// a warning.
pub fn fit(a: CostFitArgs) -> Result<Exit> {
    if let Some(out) = &a.out {
        let inputs: Vec<(&str, &Path)> = a.runs.iter().map(|r| ("RUN", r.as_path())).collect();
        input::refuse_overwrite("--out", out, &inputs)?;
    }
    let mut samples = Vec::new();
    let mut skipped = 0usize;
    // The first answering model, and where it was seen.
    let mut model: Option<(String, String)> = None;
    for path in &a.runs {
        let read = read_samples(path)?;
        if read.samples.is_empty() {
            return Err(exit::usage(if read.local > 0 {
                format!(
                    "{}: its {} answers were judged on this machine (cost source local): no billed usage to fit on; fit on runs of a billed style (systemone, llm, or a tape recorded from one)",
                    path.display(),
                    read.local
                )
            } else {
                format!(
                    "{}: no call in it recorded usage.input_tokens to fit on",
                    path.display()
                )
            }));
        }
        for (sample, (m, at)) in read.samples {
            match &model {
                None => model = Some((m, at)),
                Some((first, first_at)) if *first != m => {
                    return Err(exit::usage(format!(
                        "cost fit: {first_at} was answered by {first:?} and {at} by {m:?}: an estimator fits one model's billing; fit each model's runs apart"
                    )));
                }
                Some(_) => {}
            }
            samples.push(sample);
        }
        skipped += read.left + read.local;
    }
    let est = toolnexus::cost::fit(&samples).map_err(|e| exit::usage(format!("cost fit: {e}")))?;
    let f = est.fit.expect("a fit reports its error");
    let defaults = toolnexus::cost::Coefficients::default();
    // Which undetermined coefficients count something no request had.
    let occurs = |k: &str| {
        samples.iter().any(|s| match k {
            "per_described_option" => s.shape.described_options > 0,
            "per_score_level" => s.shape.score_levels > 0,
            "per_state_char" => s.shape.state_chars > 0,
            _ => true,
        })
    };
    for k in &est.undetermined {
        let default = match *k {
            "per_request" => defaults.per_request,
            "per_question" => defaults.per_question,
            "per_described_option" => defaults.per_described_option,
            "per_score_level" => defaults.per_score_level,
            _ => defaults.per_state_char,
        };
        let why = if occurs(k) {
            let others: Vec<&str> = est
                .undetermined
                .iter()
                .copied()
                .filter(|o| o != k && occurs(o))
                .collect();
            format!(
                "across their requests it moves only together with {}, so the split between them is not measured; estimates for the question sets fitted on are not affected",
                if others.is_empty() {
                    "the others".to_string()
                } else {
                    others.join(", ")
                }
            )
        } else {
            "no request in them has what it counts".to_string()
        };
        tell!(
            "cost fit: warning: {k} is not determined by these runs ({why}): it stays near the published {default}; runs whose question sets vary it would measure it"
        );
    }
    if let Some(out) = &a.out {
        write_atomic(out, &(est.to_json() + "\n"))?;
    }
    let c = est.coefficients;
    if a.json {
        say!(
            "{}",
            json!({
                "requests": f.rows,
                "skipped": skipped,
                "model": model.as_ref().map(|(m, _)| m),
                "runs": a.runs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
                "coefficients": {
                    "per_request": c.per_request,
                    "per_question": c.per_question,
                    "per_described_option": c.per_described_option,
                    "per_score_level": c.per_score_level,
                    "per_state_char": c.per_state_char,
                },
                "undetermined": est.undetermined,
                "output_per_question": est.output_per_question,
                "mean_abs_pct": f.mean_abs_pct,
                "worst_pct": f.worst_pct,
                "out": a.out.as_ref().map(|p| p.display().to_string()),
            })
        );
        return Ok(Exit::Success);
    }
    let left = if skipped > 0 {
        format!(
            " ({skipped} left out: cache hits, answers judged on this machine, failed calls or no recorded input tokens)"
        )
    } else {
        String::new()
    };
    say!(
        "cost fit: {} requests from {} run{}{left}",
        f.rows,
        a.runs.len(),
        if a.runs.len() == 1 { "" } else { "s" }
    );
    say!(
        "input tokens = {:.1} per request + {:.2} per question + {:.2} per described option + {:.2} per score level + {:.4} per state character",
        c.per_request,
        c.per_question,
        c.per_described_option,
        c.per_score_level,
        c.per_state_char
    );
    say!(
        "output tokens = {:.2} per question",
        est.output_per_question
    );
    say!(
        "fit error on these requests: mean absolute {:.1}%, worst {:.1}%",
        f.mean_abs_pct,
        f.worst_pct
    );
    match &a.out {
        Some(out) => say!(
            "estimator written to {} (use it with --estimate --estimator {})",
            out.display(),
            out.display()
        ),
        None => {
            say!("nothing written: --out FILE keeps the estimator for --estimate --estimator FILE")
        }
    }
    Ok(Exit::Success)
}

/// What one run file gives a fit.
struct Read {
    /// Billed requests, each with the model that answered it and where
    /// (`FILE line N`, `FILE row "id"`).
    samples: Vec<(Sample, (String, String))>,
    /// Calls left out: cache hits, failures, no recorded input tokens.
    left: usize,
    /// Answers judged on this machine: nothing billed.
    local: usize,
}

/// The fit samples of one run file, and how many of its calls were left out.
fn read_samples(path: &Path) -> Result<Read> {
    let text = input::read_file("RUN", path)?;
    let first = text.lines().next().unwrap_or_default();
    let head: Option<Value> = serde_json::from_str(first).ok();
    let format = head
        .as_ref()
        .and_then(|h| h.get("format"))
        .and_then(Value::as_str);
    let shown = path.display();
    let mut read = Read {
        samples: Vec::new(),
        left: 0,
        local: 0,
    };
    if format == Some(toolnexus::assess::RUN_FORMAT) {
        use toolnexus::cost::CostSource;
        let run = Run::parse(&text, path).map_err(exit::usage)?;
        for r in &run.rows {
            match (r.decision(), &r.cost.source) {
                (_, Some(CostSource::Local)) => read.local += 1,
                (Some(d), source)
                    if !matches!(source, Some(CostSource::Cache)) && d.usage.input_tokens > 0 =>
                {
                    read.samples.push((
                        Sample::new(
                            Shape::of_questions(&run.questions, r.state_len as u64),
                            d.usage.input_tokens,
                            d.usage.output_tokens,
                        ),
                        (d.model.clone(), format!("{shown} row {:?}", r.id)),
                    ));
                }
                _ => read.left += 1,
            }
        }
        return Ok(read);
    }
    let is_batch = head.as_ref().is_some_and(|h| {
        h.get("toolnexus").and_then(Value::as_str) == Some("batch") || h.get("line").is_some()
    });
    if !is_batch {
        return Err(exit::usage(format!(
            "{shown}: line 1: neither a batch out file nor an assess run file"
        )));
    }
    // Lines written before each line carried its cost: the header's style says.
    let local_style = head
        .as_ref()
        .and_then(|h| h.pointer("/fingerprint/style"))
        .and_then(Value::as_str)
        .is_some_and(toolnexus_stack::is_local_style);
    let mut shapeless = 0usize;
    let last = text.split('\n').count();
    for (n, line) in input::jsonl_lines(&text) {
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            // A torn final line of an interrupted run: left out.
            Err(_) if n == last && !text.ends_with('\n') => {
                read.left += 1;
                continue;
            }
            Err(e) => {
                return Err(exit::usage(format!("{shown}:{n}: not JSON: {e}")));
            }
        };
        if v.get("toolnexus").is_some() {
            continue;
        }
        let Some(d) = v.get("decision") else {
            read.left += 1;
            continue;
        };
        if v.get("cached").and_then(Value::as_bool) == Some(true) {
            read.left += 1;
            continue;
        }
        let source = v.pointer("/cost/source").and_then(Value::as_str);
        if source == Some("local") || (source.is_none() && local_style) {
            read.local += 1;
            continue;
        }
        if source == Some("cache") {
            read.left += 1;
            continue;
        }
        let Some(shape) = v.get("shape").and_then(Shape::from_value) else {
            shapeless += 1;
            continue;
        };
        let tokens = |k: &str| {
            d.get("usage")
                .and_then(|u| u.get(k))
                .and_then(Value::as_i64)
                .unwrap_or(0)
        };
        if tokens("input_tokens") > 0 {
            let model = d.get("model").and_then(Value::as_str).unwrap_or_default();
            read.samples.push((
                Sample::new(shape, tokens("input_tokens"), tokens("output_tokens")),
                (model.to_string(), format!("{shown} line {n}")),
            ));
        } else {
            read.left += 1;
        }
    }
    if read.samples.is_empty() && shapeless > 0 {
        return Err(exit::usage(format!(
            "{shown}: its {shapeless} decision lines do not record their request's \"shape\" (written by an earlier version); run the batch again with --restart, or fit on an assess run file"
        )));
    }
    read.left += shapeless;
    Ok(read)
}

/// Writes `text` to `path` through a temporary file renamed over it.
fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let shown = path.display();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "estimator".into());
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let write = || -> std::io::Result<()> {
        use std::io::Write as _;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        exit::io(format!("--out {shown}: cannot write: {e}"))
    })
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
    /// Shapes of the requests that would be sent.
    shapes: Vec<Shape>,
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
    let text = input::read_file("--states", &args.states)?;
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
            Some(crate::commands::cache::open(p)?)
        }
        _ => None,
    };
    // The run's cache keys on the stack's fingerprint: so does the count.
    let stack = built.classifier.fingerprint().clone();
    let model = built.classifier.model().to_string();
    // The lines a resumed run would not ask again.
    let fingerprint = crate::commands::batch::out::Fingerprint::new(
        text.as_bytes(),
        &questions,
        built.style.as_str(),
        &model,
        &stack,
    );
    let done = crate::commands::batch::out::already_done(
        &args.out,
        &fingerprint,
        crate::commands::batch::out::Plan {
            restart: args.restart,
            rerun_errors: args.rerun_errors,
            last_line: text.split('\n').count(),
        },
    )?;
    let mut seen = HashSet::new();
    let mut counted = Counted {
        inputs: 0,
        shapes: Vec::new(),
        hits: 0,
        done: 0,
        unreadable: 0,
    };
    for (n, line) in input::jsonl_lines(&text) {
        counted.inputs += 1;
        if done.contains(&n) {
            counted.done += 1;
            continue;
        }
        let Ok(state) = input::parse_line(n, line) else {
            counted.unreadable += 1;
            continue;
        };
        let shape = Shape::of(&state, &questions);
        if let Some(c) = &cache {
            let key = cache_key_for(&stack, &model, &EvalRequest::new(state, questions.clone()));
            let stored = c
                .get(&key)
                .map_err(crate::commands::cache::failed)?
                .is_some();
            if !seen.insert(key) || stored {
                counted.hits += 1;
                continue;
            }
        }
        counted.shapes.push(shape);
    }
    if let Some(style) = args.shadow_style {
        tell!(
            "batch: note: --shadow-style {} asks a second style about every state; its calls are not in this estimate (a cap counts them)",
            style.as_str()
        );
    }
    report(
        "batch",
        &args.estimate,
        &built.pricing,
        built.style.as_str(),
        &model,
        counted,
    )
}

/// `assess run --estimate`.
pub async fn estimate_assess(a: AssessRunArgs) -> Result<Exit> {
    let questions: Questions = input::read_questions(&a.questions)?;
    let examples = read_examples(&a.examples, &questions).map_err(exit::usage)?;
    let built = style::build_with(
        &a.style,
        Fallback::SystemOne,
        &style::Layers {
            prices: Some(&a.prices),
            ..Default::default()
        },
    )?;
    // The ids a resumed run would not ask again.
    let mut done: HashSet<String> = HashSet::new();
    if !a.out.as_os_str().is_empty() && a.out.exists() {
        let run = Run::load(&a.out).map_err(exit::usage)?;
        for r in &run.rows {
            if r.decision().is_some() || !a.rerun_errors {
                done.insert(r.id.clone());
            }
        }
    }
    let mut counted = Counted {
        inputs: examples.len(),
        shapes: Vec::new(),
        hits: 0,
        done: 0,
        unreadable: 0,
    };
    for ex in &examples {
        if done.contains(&ex.id) {
            counted.done += 1;
        } else {
            counted.shapes.push(Shape::of(&ex.state, &questions));
        }
    }
    let model = built.classifier.model().to_string();
    report(
        "assess run",
        &a.estimate,
        &built.pricing,
        built.style.as_str(),
        &model,
        counted,
    )
}

/// An estimate's cost at `model`'s price: (low, estimate, high, the cost with
/// its provenance); `None` when no price covers the model.
pub fn priced(pricing: &Pricing, model: &str, e: &Estimate) -> Option<(f64, f64, f64, Cost)> {
    match pricing {
        Pricing::Local => Some((
            0.0,
            0.0,
            0.0,
            Cost::new(0.0, toolnexus::cost::CostSource::Local),
        )),
        Pricing::Table(t) => t.find(model).map(|p| {
            let (lo, mid, hi) = e.usd(p);
            let source = toolnexus::cost::CostSource::Priced {
                table: p.table.clone(),
                checked: p.checked.clone(),
            };
            (lo, mid, hi, Cost::new(mid, source))
        }),
        _ => None,
    }
}

/// The line that says what an estimate costs ([`priced`]'s answer).
pub fn cost_line(pricing: &Pricing, model: &str, cost: Option<&(f64, f64, f64, Cost)>) -> String {
    match cost {
        Some((_, _, _, c)) if matches!(pricing, Pricing::Local) => {
            format!("cost {c}: judged on this machine")
        }
        Some((lo, mid, hi, c)) => format!(
            "cost ≈ ${} (${} to ${}), {} for {model}",
            usd_text(*mid),
            usd_text(*lo),
            usd_text(*hi),
            c.source.as_ref().map(|s| s.to_string()).unwrap_or_default()
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
) -> Result<Exit> {
    let (est, from) = estimator(args)?;
    let e: Estimate = est.estimate(counted.shapes.iter());
    let cost = priced(pricing, model, &e);
    if args.json {
        let mut cost_json = cost
            .as_ref()
            .map_or_else(|| Cost::UNKNOWN.to_value(), |(_, _, _, c)| c.to_value());
        if let Some((lo, _, hi, _)) = &cost {
            cost_json["low"] = json!(lo);
            cost_json["high"] = json!(hi);
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
        let mut t = Tally::default();
        assert_eq!(t.text(), "");
        t.add(&Cost::new(0.25, CostSource::Reported));
        assert_eq!(t.text(), "cost $0.2500 (reported 1)");
        t.add(&Cost::UNKNOWN);
        assert_eq!(
            t.text(),
            "cost $0.2500 known on 1 of 2 calls, unknown on 1 (reported 1, unknown 1)"
        );
        let mut u = Tally::default();
        u.add(&Cost::UNKNOWN);
        assert!(
            u.text().starts_with("cost unknown (unknown 1"),
            "{}",
            u.text()
        );
    }
}
