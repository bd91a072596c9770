//! The billed requests of a run file, as samples to fit the cost estimator on
//! ([`crate::cost::fit`]): a batch out file (each decision line records its
//! request's `"shape"`) or an assess run file (the header's questions and each
//! row's `state_len`), with cache hits, failures and answers judged on this
//! machine left out and counted.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::answers::AnswersKind;
use super::error::{AssessError, AssessErrorKind};
use super::out::{LineFault, OutError, OutFile, OutLine, OutLines};
use super::run::Run;
use crate::cost::{CostSource, Estimator, FitTally, Fitter, Sample, Shape};

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

/// How many requests of a run file [`read_fit_samples`] gave, and left out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SampleCounts {
    /// The billed requests given.
    pub billed: usize,
    /// Calls left out: cache hits, failures, a torn final line, no recorded
    /// input tokens.
    pub left: usize,
    /// Answers judged on this machine: nothing was billed.
    pub local: usize,
}

/// [`fit_samples`] of the run file at `path`, read a line at a time: `each`
/// gets every billed request in file order, and nothing is held. A path that
/// is a directory, does not read or is not UTF-8 text is an error of kind
/// `Io` naming it.
///
/// ```
/// use toolnexus::assess::read_fit_samples;
/// let path = std::env::temp_dir().join(format!("tn-fit-samples-doc-{}.jsonl", std::process::id()));
/// std::fs::write(&path, "{\"line\":1,\"decision\":{\"model\":\"m\",\"usage\":{\"input_tokens\":120}},\"shape\":{\"questions\":1,\"described_options\":0,\"score_levels\":0,\"state_chars\":30}}\n")?;
/// let mut tokens = Vec::new();
/// let counts = read_fit_samples(&path, |_| false, |s| tokens.push(s.sample.input_tokens))?;
/// assert_eq!((counts.billed, tokens), (1, vec![120]));
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_fit_samples(
    path: &Path,
    local_style: impl Fn(&str) -> bool,
    mut each: impl FnMut(RunSample),
) -> Result<SampleCounts, AssessError> {
    let io = |m: String| AssessError::new(AssessErrorKind::Io, m).at_path(path);
    if path.is_dir() {
        return Err(io("is a directory, not a file".into()));
    }
    let first = check_text(path).map_err(|e| match e {
        Ok(at) => io(format!("not UTF-8 text (an invalid byte at offset {at})")),
        Err(e) => AssessError::io(path, "cannot read", e),
    })?;
    let shown = path.display();
    let mut read = SampleCounts::default();
    let mut give = |read: &mut SampleCounts, s: RunSample| {
        read.billed += 1;
        each(s);
    };
    match AnswersKind::of(&first) {
        Some(AnswersKind::Run) => {
            super::stream::winning_rows(path, |questions, r| {
                match (r.decision(), &r.cost.source) {
                    (_, Some(CostSource::Local)) => read.local += 1,
                    (Some(d), source)
                        if !matches!(source, Some(CostSource::Cache))
                            && d.usage.input_tokens > 0 =>
                    {
                        let sample = RunSample {
                            sample: Sample::new(
                                Shape::of_questions(questions, r.state_len as u64),
                                d.usage.input_tokens,
                                d.usage.output_tokens,
                            ),
                            model: d.model.clone(),
                            at: format!("{shown} row {:?}", r.id),
                        };
                        give(&mut read, sample);
                    }
                    _ => read.left += 1,
                }
            })?;
            return Ok(read);
        }
        Some(AnswersKind::Batch) => {}
        None => {
            return Err(AssessError::new(
                AssessErrorKind::Mismatch,
                "line 1: neither a batch out file nor an assess run file",
            )
            .at_path(path));
        }
    }
    let mut lines = OutLines::open(path).map_err(|e| out_error(e, path))?;
    // Lines written before each line carried its cost: the header's style says.
    let local = lines
        .header()
        .and_then(|h| h.fingerprint.as_ref())
        .is_some_and(|f| local_style(&f.style));
    let mut shapeless = 0usize;
    for l in lines.by_ref() {
        let l = l.map_err(|e| out_error(e, path))?;
        match batch_sample(&l, local, &shown) {
            Fits::Sample(s) => give(&mut read, s),
            Fits::Left => read.left += 1,
            Fits::Local => read.local += 1,
            Fits::Shapeless => shapeless += 1,
        }
    }
    read.left += usize::from(lines.torn_line().is_some());
    if read.billed == 0 && shapeless > 0 {
        return Err(shapeless_error(shapeless, path));
    }
    read.left += shapeless;
    Ok(read)
}

/// An estimator fitted on run files ([`fit_runs`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RunsFit {
    /// The fitted estimator, its error on the requests included.
    pub estimator: Estimator,
    /// The sums it was fitted from (what [`Fitter::occurs`] tells).
    pub fitter: Fitter,
    /// Calls left out: cache hits, answers judged on this machine, failed
    /// calls or no recorded input tokens.
    pub skipped: usize,
    /// The model that answered them.
    pub model: Option<String>,
}

/// Fits the cost estimator on the billed requests of run files (batch out
/// files or assess run files), each read a line at a time, twice (the sums,
/// then the fit's error), so that nothing grows with the files. A file with
/// no billed request, or runs answered by two models, are refused naming
/// them; an unreadable path is an error of kind `Io`.
///
/// ```
/// use toolnexus::assess::fit_runs;
/// let path = std::env::temp_dir().join(format!("tn-fit-runs-doc-{}.jsonl", std::process::id()));
/// std::fs::write(&path, "{\"line\":1,\"decision\":{\"model\":\"m\"},\"cost\":{\"usd\":0,\"source\":\"local\"}}\n")?;
/// let e = fit_runs(&[path.clone()], |_| false).unwrap_err();
/// assert!(e.to_string().ends_with(": its 1 answers were judged on this machine (cost source local): no billed usage to fit on; fit on runs of a billed style (systemone, llm, or a tape recorded from one)"), "{e}");
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn fit_runs(
    paths: &[PathBuf],
    local_style: impl Fn(&str) -> bool + Copy,
) -> Result<RunsFit, AssessError> {
    let mut fitter = Fitter::default();
    let mut skipped = 0usize;
    // The first answering model, and where it was seen.
    let mut model: Option<(String, String)> = None;
    for path in paths {
        let mut other = None;
        let read = read_fit_samples(path, local_style, |s| {
            match &model {
                None => model = Some((s.model, s.at)),
                Some((first, first_at)) if *first != s.model => {
                    let (m, at) = (&s.model, &s.at);
                    other.get_or_insert(format!(
                        "cost fit: {first_at} was answered by {first:?} and {at} by {m:?}: an estimator fits one model's billing; fit each model's runs apart"
                    ));
                }
                Some(_) => {}
            }
            fitter.push(&s.sample);
        })?;
        let refuse = |m: String| AssessError::new(AssessErrorKind::Mismatch, m);
        if read.billed == 0 {
            return Err(refuse(if read.local > 0 {
                format!(
                    "its {} answers were judged on this machine (cost source local): no billed usage to fit on; fit on runs of a billed style (systemone, llm, or a tape recorded from one)",
                    read.local
                )
            } else {
                "no call in it recorded usage.input_tokens to fit on".to_string()
            })
            .at_path(path));
        }
        if let Some(other) = other {
            return Err(refuse(other));
        }
        skipped += read.left + read.local;
    }
    let mut estimator = fitter
        .solve()
        .map_err(|e| AssessError::new(AssessErrorKind::Invalid, format!("cost fit: {e}")))?;
    let mut error = FitTally::default();
    for path in paths {
        read_fit_samples(path, local_style, |s| error.push(&estimator, &s.sample))?;
    }
    estimator.fit = error.finish();
    Ok(RunsFit {
        estimator,
        fitter,
        skipped,
        model: model.map(|(m, _)| m),
    })
}

/// The first line of the file at `path`, once the whole file is known to be
/// UTF-8 text (`Err(Ok(offset))`: the first invalid byte).
fn check_text(path: &Path) -> Result<String, Result<usize, std::io::Error>> {
    use std::io::BufRead as _;
    let mut input = std::io::BufReader::new(std::fs::File::open(path).map_err(Err)?);
    let (mut buf, mut offset, mut first) = (Vec::new(), 0, None);
    loop {
        buf.clear();
        let n = input.read_until(b'\n', &mut buf).map_err(Err)?;
        if n == 0 {
            return Ok(first.unwrap_or_default());
        }
        let text = std::str::from_utf8(&buf).map_err(|e| Ok(offset + e.valid_up_to()))?;
        if first.is_none() {
            first = Some(text.strip_suffix('\n').unwrap_or(text).to_string());
        }
        offset += n;
    }
}

/// What one batch out file line gives a fit.
enum Fits {
    Sample(RunSample),
    Left,
    Local,
    Shapeless,
}

fn batch_sample(l: &OutLine, local: bool, shown: &std::path::Display<'_>) -> Fits {
    let Some(d) = l.decision_value() else {
        return Fits::Left;
    };
    if l.cached() {
        return Fits::Left;
    }
    let source = l.value().pointer("/cost/source").and_then(Value::as_str);
    if source == Some("local") || (source.is_none() && local) {
        return Fits::Local;
    }
    if source == Some("cache") {
        return Fits::Left;
    }
    let Some(shape) = l.shape() else {
        return Fits::Shapeless;
    };
    let usage = l.usage();
    if usage.input_tokens <= 0 {
        return Fits::Left;
    }
    let model = d.get("model").and_then(Value::as_str).unwrap_or_default();
    Fits::Sample(RunSample {
        sample: Sample::new(shape, usage.input_tokens, usage.output_tokens),
        model: model.to_string(),
        at: format!("{shown} line {}", l.at),
    })
}

fn out_error(e: OutError, path: &Path) -> AssessError {
    match e {
        OutError::BadLine {
            at,
            fault: LineFault::NotJson(e),
            ..
        } => AssessError::new(AssessErrorKind::Syntax, format!("not JSON: {e}"))
            .at_path(path)
            .at(at, None),
        e => AssessError::new(AssessErrorKind::Invalid, e.to_string()),
    }
}

fn shapeless_error(shapeless: usize, path: &Path) -> AssessError {
    AssessError::new(
        AssessErrorKind::Mismatch,
        format!(
            "its {shapeless} decision lines do not record their request's \"shape\" (written by an earlier version); run the batch again with --restart, or fit on an assess run file"
        ),
    )
    .at_path(path)
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
    let out = OutFile::parse(text, path).map_err(|e| out_error(e, path))?;
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
        match batch_sample(l, local, &shown) {
            Fits::Sample(s) => read.samples.push(s),
            Fits::Left => read.left += 1,
            Fits::Local => read.local += 1,
            Fits::Shapeless => shapeless += 1,
        }
    }
    if read.samples.is_empty() && shapeless > 0 {
        return Err(shapeless_error(shapeless, path));
    }
    read.left += shapeless;
    Ok(read)
}
