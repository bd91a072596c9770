//! `toolnexus cost fit`: the estimator fitted on what earlier runs spent
//! (the estimates themselves, `batch --estimate` and `assess run
//! --estimate`, are in [`crate::spend`]).
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

use std::path::Path;

use anyhow::Result;
use serde_json::json;
use toolnexus::assess::{RunSample, fit_samples};

use crate::args::CostFitArgs;
use crate::exit::{self, Exit};
use crate::input;

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
        let text = input::read_file("RUN", path)?;
        let read =
            fit_samples(&text, path, toolnexus_stack::is_local_style).map_err(exit::usage)?;
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
        for RunSample {
            sample,
            model: m,
            at,
        } in read.samples
        {
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
        toolnexus::fs::write_atomic(out, (est.to_json() + "\n").as_bytes())
            .map_err(|e| exit::io(format!("--out {}: {e}", out.display())))?;
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
