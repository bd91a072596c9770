//! The billed requests of a run file, as samples to fit the cost estimator on
//! ([`crate::cost::fit`]): a batch out file (each decision line records its
//! request's `"shape"`) or an assess run file (the header's questions and each
//! row's `state_len`), with cache hits, failures and answers judged on this
//! machine left out and counted.

use std::path::Path;

use serde_json::Value;

use super::answers::AnswersKind;
use super::error::{AssessError, AssessErrorKind};
use super::out::{LineFault, OutError, OutFile};
use super::run::Run;
use crate::cost::{CostSource, Sample, Shape};

/// One billed request of a run file.
#[derive(Debug, Clone)]
pub struct RunSample {
    /// Its shape and the tokens it was billed.
    pub sample: Sample,
    /// The model that answered it.
    pub model: String,
    /// Where it is: `FILE line N` or `FILE row "id"`.
    pub at: String,
}

/// What one run file gives a fit.
#[derive(Debug, Clone, Default)]
pub struct RunSamples {
    /// The billed requests, in file order.
    pub samples: Vec<RunSample>,
    /// Calls left out: cache hits, failures, a torn final line, no recorded
    /// input tokens.
    pub left: usize,
    /// Answers judged on this machine: nothing was billed.
    pub local: usize,
}

/// The fit samples of the run file `text` (read from `path`). `local_style`
/// says whether a style name judges on this machine, for the lines of a batch
/// written before each line carried its cost source.
///
/// ```
/// use toolnexus::assess::fit_samples;
/// let e = fit_samples("{\"hello\": 1}\n", "x.jsonl".as_ref(), |_| false).unwrap_err();
/// assert_eq!(e.to_string(), "x.jsonl: line 1: neither a batch out file nor an assess run file");
/// ```
pub fn fit_samples(
    text: &str,
    path: &Path,
    local_style: impl Fn(&str) -> bool,
) -> Result<RunSamples, AssessError> {
    let kind = AnswersKind::of(text.lines().next().unwrap_or_default());
    let shown = path.display();
    let mut read = RunSamples::default();
    if kind == Some(AnswersKind::Run) {
        let run = Run::parse(text, path)?;
        for r in &run.rows {
            match (r.decision(), &r.cost.source) {
                (_, Some(CostSource::Local)) => read.local += 1,
                (Some(d), source)
                    if !matches!(source, Some(CostSource::Cache)) && d.usage.input_tokens > 0 =>
                {
                    read.samples.push(RunSample {
                        sample: Sample::new(
                            Shape::of_questions(&run.questions, r.state_len as u64),
                            d.usage.input_tokens,
                            d.usage.output_tokens,
                        ),
                        model: d.model.clone(),
                        at: format!("{shown} row {:?}", r.id),
                    });
                }
                _ => read.left += 1,
            }
        }
        return Ok(read);
    }
    if kind != Some(AnswersKind::Batch) {
        return Err(AssessError::new(
            AssessErrorKind::Mismatch,
            "line 1: neither a batch out file nor an assess run file",
        )
        .at_path(path));
    }
    let out = OutFile::parse(text, path).map_err(|e| match e {
        OutError::BadLine {
            at,
            fault: LineFault::NotJson(e),
            ..
        } => AssessError::new(AssessErrorKind::Syntax, format!("not JSON: {e}"))
            .at_path(path)
            .at(at, None),
        e => AssessError::new(AssessErrorKind::Invalid, e.to_string()),
    })?;
    // A torn final line of an interrupted run: left out.
    read.left += usize::from(out.torn_line.is_some());
    // Lines written before each line carried its cost: the header's style says.
    let local = out
        .header
        .as_ref()
        .and_then(|h| h.fingerprint.as_ref())
        .is_some_and(|f| local_style(&f.style));
    let mut shapeless = 0usize;
    for l in &out.lines {
        let Some(d) = l.decision_value() else {
            read.left += 1;
            continue;
        };
        if l.cached() {
            read.left += 1;
            continue;
        }
        let source = l.value().pointer("/cost/source").and_then(Value::as_str);
        if source == Some("local") || (source.is_none() && local) {
            read.local += 1;
            continue;
        }
        if source == Some("cache") {
            read.left += 1;
            continue;
        }
        let Some(shape) = l.shape() else {
            shapeless += 1;
            continue;
        };
        let usage = l.usage();
        if usage.input_tokens > 0 {
            let model = d.get("model").and_then(Value::as_str).unwrap_or_default();
            read.samples.push(RunSample {
                sample: Sample::new(shape, usage.input_tokens, usage.output_tokens),
                model: model.to_string(),
                at: format!("{shown} line {}", l.at),
            });
        } else {
            read.left += 1;
        }
    }
    if read.samples.is_empty() && shapeless > 0 {
        return Err(AssessError::new(
            AssessErrorKind::Mismatch,
            format!(
                "its {shapeless} decision lines do not record their request's \"shape\" (written by an earlier version); run the batch again with --restart, or fit on an assess run file"
            ),
        )
        .at_path(path));
    }
    read.left += shapeless;
    Ok(read)
}
