//! `toolnexus cost fit`: the estimator fitted on what earlier runs spent
//! (the estimates themselves, `batch --estimate` and `assess run
//! --estimate`, are in [`crate::spend`]).
//!
//! - `cost fit RUN…` reads batch out files, a line at a time (each decision line records its
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
use toolnexus::assess::{AssessErrorKind, fit_runs};

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
    let fitted =
        fit_runs(&a.runs, toolnexus_stack::is_local_style).map_err(|e| match e.kind() {
            AssessErrorKind::Io => exit::usage(format!("RUN {e}")),
            _ => exit::usage(e),
        })?;
    let (est, skipped, model) = (&fitted.estimator, fitted.skipped, &fitted.model);
    let f = est.fit.expect("a fit reports its error");
    let defaults = toolnexus::cost::Coefficients::default();
    // Which undetermined coefficients count something no request had.
    let occurs = |k: &str| {
        !matches!(
            k,
            "per_described_option" | "per_score_level" | "per_state_char"
        ) || fitted.fitter.occurs(k)
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
                "model": model,
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
