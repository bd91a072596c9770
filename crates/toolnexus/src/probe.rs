//! Encoding probes (SPEC §20): ask the backend variants of the same questions
//! over sample states and measure, without labels, whether the encoding is
//! read the way it was meant.
//!
//! Four probes, each a figure per question with a 95% range and a verdict:
//!
//! | probe | questions | variant sent | figure |
//! |---|---|---|---|
//! | [`Probe::Shuffle`] | choice | the descriptions moved across the option ids (a derangement, one per question, drawn from the seed) | share of states whose pick follows the description: the id that now carries the originally picked description (Wilson 95% range) |
//! | [`Probe::Order`] | choice | the options reversed, and rotated by one | mean total-variation distance between the original distribution and each reordered one, matched by option id (bootstrap 95% range) |
//! | [`Probe::Polarity`] | noul | the noul negated: `criteria` true and false swapped when present, and the instructions rewritten as `Is the following false? <instructions>` (structured instructions are written as compact JSON after that prefix) | mean \|p + p_neg − 1\| (bootstrap 95% range) |
//! | [`Probe::Repeat`] | noul, choice, score | the same request again, `repeat − 1` more times | mean over states of the mean pairwise total-variation distance (choice, score) or \|Δp\| (noul) between the answers: the noise floor (bootstrap 95% range) |
//!
//! Score questions are not reordered: their levels are an ordered rubric, and
//! another order is another question. Box questions are not probed.
//!
//! A bootstrap range resamples the states ([`BOOTSTRAP_RESAMPLES`] times, from
//! the seed) and takes the 2.5th and 97.5th percentiles of the mean.
//!
//! # Verdicts
//!
//! The noise floor `r` of a question is its repeat figure when the repeat
//! probe ran, and the tolerance is `max(`[`TOLERANCE`]`, `[`NOISE_FACTOR`]` × r)`
//! (without the repeat probe, [`TOLERANCE`]):
//!
//! - *repeat*: `ok` at most [`TOLERANCE`], `broken` from [`BROKEN_SHIFT`] on,
//!   `sensitive` between;
//! - *order*, *polarity*: `ok` within the tolerance, `broken` from
//!   [`BROKEN_SHIFT`] on (and beyond the tolerance), `sensitive` between;
//! - *shuffle*: with `c` the share of states whose pick never changed under
//!   repeat (1 without the repeat probe), `ok` when the follow share is at least
//!   `c −` [`FOLLOW_SLACK`], `broken` below [`FOLLOW_BROKEN`], `sensitive` between.
//!
//! A question whose every variant call failed is [`Verdict::Unmeasured`]. A
//! failed call is counted, never an abort: the state drops out of the figures
//! that needed it.
//!
//! ```
//! # use std::sync::Arc;
//! # use serde_json::json;
//! # use toolnexus::classifier::*;
//! # use toolnexus::probe::{Probe, ProbeOptions, Verdict, run_probes};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! // A judge that always picks the first option offered, whatever it means.
//! let first = create_classifier(ClassifierOptions {
//!     style: ClassifierStyle::Custom,
//!     evaluate: Some(Arc::new(|_ctx, _state, qs: Questions| {
//!         Box::pin(async move {
//!             let Question::Choice(c) = &qs["desk"] else { unreachable!() };
//!             let ids: Vec<&String> = c.criteria.keys().collect();
//!             let probs: serde_json::Map<_, _> = ids.iter().enumerate()
//!                 .map(|(i, id)| (id.to_string(), json!(if i == 0 { 0.9 } else { 0.1 / (ids.len() - 1) as f64 })))
//!                 .collect();
//!             Decision::from_value(&json!({"model": "m", "answers": {"desk": {
//!                 "type": "choice", "choice": ids[0], "probabilities": probs, "confidence": 0.9}}}))
//!                 .map_err(|e| e.to_string())
//!         })
//!     })),
//!     ..Default::default()
//! }).unwrap();
//! let qs = Questions::from([("desk".to_string(), choice_over("Which desk?", [
//!     ("billing", "money moved"), ("shipping", "a parcel"), ("other", "anything else"),
//! ]).into())]);
//! let states = vec![json!("refund please"), json!("where is my parcel")];
//! let options = ProbeOptions::default();
//! assert_eq!(options.planned_calls(&qs, states.len()), 2 * (1 + 1 + 2 + 2));
//! let report = run_probes(&first, &qs, &states, &options).await;
//! assert_eq!(report.result("desk", Probe::Order).unwrap().verdict, Verdict::Broken);
//! assert_eq!(report.result("desk", Probe::Shuffle).unwrap().verdict, Verdict::Broken);
//! assert_eq!(report.result("desk", Probe::Repeat).unwrap().verdict, Verdict::Ok);
//! # }
//! ```

use std::collections::{BTreeMap, BTreeSet};

use futures::StreamExt as _;
use serde_json::{Value, json};

use crate::assess::rng::Rng;
use crate::classifier::{
    ChoiceOptions, Classifier, Content, Decision, EvalContext, NoulCriteria, NoulQuestion,
    Question, Questions,
};

mod measure;
mod result;

pub use result::{
    BOOTSTRAP_RESAMPLES, BROKEN_SHIFT, FOLLOW_BROKEN, FOLLOW_SLACK, NEGATION_PREFIX, NOISE_FACTOR,
    Probe, ProbeResult, TOLERANCE, Verdict,
};

use measure::Measure;
use result::Variant;

/// What to probe and how.
///
/// ```
/// use toolnexus::probe::{Probe, ProbeOptions};
///
/// let o = ProbeOptions { probes: vec![Probe::Repeat], repeat: 5, ..Default::default() };
/// assert_eq!(o.concurrency, 4);
/// # let _ = o;
/// ```
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// The probes to run (default: all four). Order and duplicates do not matter.
    pub probes: Vec<Probe>,
    /// Answers per state for the repeat probe, the first request included
    /// (default 3; at least 2).
    pub repeat: usize,
    /// Calls in flight at once (default 4; at least 1).
    pub concurrency: usize,
    /// Seeds the shuffle's derangements and the bootstrap (default 0).
    pub seed: u64,
    /// The context every call runs under: its call name, and its cancellation
    /// (a cancelled call counts as failed).
    pub context: EvalContext,
}

impl Default for ProbeOptions {
    fn default() -> ProbeOptions {
        ProbeOptions {
            probes: Probe::ALL.to_vec(),
            repeat: 3,
            concurrency: 4,
            seed: 0,
            context: EvalContext::default(),
        }
    }
}

impl ProbeOptions {
    fn runs(&self, p: Probe) -> bool {
        self.probes.contains(&p)
    }

    /// The calls a probe run makes: states × variants, where the variants are
    /// the request as written, one with the descriptions shuffled (when a
    /// choice question can be shuffled), two reordered (when a choice is
    /// asked), one negated (when a noul is asked) and `repeat − 1` repeats.
    ///
    /// ```
    /// use toolnexus::classifier::{NoulQuestion, Questions};
    /// use toolnexus::probe::ProbeOptions;
    ///
    /// let qs = Questions::from([("spam".to_string(), NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into())]);
    /// // The request, its negation, two repeats.
    /// assert_eq!(ProbeOptions::default().planned_calls(&qs, 10), 10 * 4);
    /// ```
    pub fn planned_calls(&self, questions: &Questions, states: usize) -> usize {
        states * self.variants(questions).len()
    }

    fn variants(&self, questions: &Questions) -> Vec<Variant> {
        let mut v = vec![Variant::Original];
        let any = |f: &dyn Fn(&Question) -> bool| questions.values().any(f);
        if self.runs(Probe::Shuffle) && any(&|q| shuffle_skip(q).is_none()) {
            v.push(Variant::Shuffled);
        }
        if self.runs(Probe::Order) && any(&|q| Probe::Order.applies_to(q)) {
            v.extend([Variant::Reversed, Variant::Rotated]);
        }
        if self.runs(Probe::Polarity) && any(&|q| Probe::Polarity.applies_to(q)) {
            v.push(Variant::Negated);
        }
        if self.runs(Probe::Repeat) && any(&|q| Probe::Repeat.applies_to(q)) {
            v.extend((1..self.repeat.max(2)).map(Variant::Repeat));
        }
        v
    }
}

/// A probe that could not run on a question, and why.
///
/// ```
/// use toolnexus::probe::{Probe, Skipped};
/// let s = Skipped { question: "tone".into(), probe: Probe::Shuffle, why: "two options share a description".into() };
/// assert_eq!(s.probe, Probe::Shuffle);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The question's key.
    pub question: String,
    /// The probe.
    pub probe: Probe,
    /// Why it did not run.
    pub why: String,
}

/// Everything a probe run measured.
///
/// ```
/// use toolnexus::probe::ProbeReport;
/// let r = ProbeReport::default();
/// assert!(!r.any_broken());
/// assert_eq!(r.to_value()["calls"], 0);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProbeReport {
    /// States probed.
    pub states: usize,
    /// Calls made.
    pub calls: usize,
    /// Calls that failed.
    pub failed_calls: usize,
    /// The first failure's message (the library's, free of secrets), if any.
    pub first_error: Option<String>,
    /// Per question (by key), then per probe in [`Probe::ALL`] order.
    pub results: Vec<ProbeResult>,
    /// Probes that apply to a question's kind but could not run on it (a
    /// probe that does not apply to a kind is not listed).
    pub skipped: Vec<Skipped>,
}

impl ProbeReport {
    /// The result of one probe on one question.
    ///
    /// ```
    /// # use toolnexus::probe::{Probe, ProbeReport};
    /// assert!(ProbeReport::default().result("desk", Probe::Order).is_none());
    /// ```
    pub fn result(&self, question: &str, probe: Probe) -> Option<&ProbeResult> {
        self.results
            .iter()
            .find(|r| r.question == question && r.probe == probe)
    }

    /// Whether any verdict is `broken`.
    ///
    /// ```
    /// # use toolnexus::probe::ProbeReport;
    /// assert!(!ProbeReport::default().any_broken());
    /// ```
    pub fn any_broken(&self) -> bool {
        self.results.iter().any(|r| r.verdict == Verdict::Broken)
    }

    /// The report as one JSON object: `states`, `calls`, `failed_calls`,
    /// `first_error`, `results` (see [`ProbeResult::to_value`]) and `skipped`
    /// (`question`, `probe`, `why`).
    ///
    /// ```
    /// # use toolnexus::probe::ProbeReport;
    /// assert_eq!(ProbeReport::default().to_value()["results"], serde_json::json!([]));
    /// ```
    pub fn to_value(&self) -> Value {
        json!({
            "states": self.states,
            "calls": self.calls,
            "failed_calls": self.failed_calls,
            "first_error": self.first_error,
            "results": self.results.iter().map(ProbeResult::to_value).collect::<Vec<_>>(),
            "skipped": self.skipped.iter().map(|s| json!({
                "question": s.question, "probe": s.probe.as_str(), "why": s.why,
            })).collect::<Vec<_>>(),
        })
    }
}

/// Why the shuffle cannot run on a question, or `None` when it can.
fn shuffle_skip(q: &Question) -> Option<String> {
    let Question::Choice(c) = q else {
        return Some("not a choice question".into());
    };
    let mut seen = BTreeSet::new();
    for (id, d) in c.criteria.iter() {
        let Some(d) = d else {
            return Some(format!(
                "option {id:?} has no description: the pick can only follow its name"
            ));
        };
        if !seen.insert(crate::classifier::canonical_json(d.as_value())) {
            return Some(format!(
                "option {id:?} shares its description with another: a pick cannot tell them apart"
            ));
        }
    }
    None
}

/// The negated noul (see the module docs).
///
/// ```
/// use toolnexus::classifier::{NoulCriteria, NoulQuestion};
/// use toolnexus::probe::negate;
///
/// let q = NoulQuestion {
///     instructions: "Is this a refund request?".into(),
///     criteria: Some(NoulCriteria { when_true: "money back".into(), when_false: "anything else".into() }),
/// };
/// let n = negate(&q);
/// assert_eq!(n.instructions, "Is the following false? Is this a refund request?");
/// assert_eq!(n.criteria.unwrap().when_true, "anything else");
/// ```
pub fn negate(q: &NoulQuestion) -> NoulQuestion {
    let text = match q.instructions.as_str() {
        Some(s) => s.to_string(),
        None => q.instructions.as_value().to_string(),
    };
    NoulQuestion {
        instructions: Content::text(format!("{NEGATION_PREFIX}{text}")),
        criteria: q.criteria.as_ref().map(|c| NoulCriteria {
            when_true: c.when_false.clone(),
            when_false: c.when_true.clone(),
        }),
    }
}

/// The questions a variant sends: only those it changes (all for the
/// original and repeats).
fn variant_questions(
    questions: &Questions,
    variant: Variant,
    derangements: &BTreeMap<String, Vec<usize>>,
) -> Questions {
    let mut out = Questions::new();
    for (key, q) in questions {
        let changed = match (variant, q) {
            (Variant::Original | Variant::Repeat(_), q) if Probe::Repeat.applies_to(q) => {
                Some(q.clone())
            }
            (Variant::Original, q) => Some(q.clone()),
            (Variant::Shuffled, Question::Choice(c)) => derangements.get(key).map(|perm| {
                let entries: Vec<_> = c.criteria.iter().collect();
                let mut c = c.clone();
                c.criteria = entries
                    .iter()
                    .enumerate()
                    .map(|(i, (id, _))| ((*id).clone(), entries[perm[i]].1.clone()))
                    .collect();
                Question::Choice(c)
            }),
            (Variant::Reversed, Question::Choice(c)) => {
                let mut c = c.clone();
                c.criteria = c.criteria.clone().into_iter().rev().collect();
                Some(Question::Choice(c))
            }
            (Variant::Rotated, Question::Choice(c)) => {
                let mut entries: Vec<_> = c.criteria.clone().into_iter().collect();
                entries.rotate_left(1);
                let mut c = c.clone();
                c.criteria = ChoiceOptions::from(entries);
                Some(Question::Choice(c))
            }
            (Variant::Negated, Question::Noul(n)) => Some(Question::Noul(negate(n))),
            _ => None,
        };
        if let Some(q) = changed {
            out.insert(key.clone(), q);
        }
    }
    out
}

/// A cyclic permutation (Sattolo): no index keeps its place.
fn derangement(n: usize, rng: &mut Rng) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = rng.below(i);
        p.swap(i, j);
    }
    p
}

/// Runs the probes over `states` and measures them (see the module docs).
/// Failed calls are counted and reported, never returned as an error.
///
/// ```
/// # use std::sync::Arc;
/// # use serde_json::json;
/// # use toolnexus::classifier::*;
/// # use toolnexus::probe::{Probe, ProbeOptions, Verdict, run_probes};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// // Answers the same p for a noul and its negation.
/// let deaf = create_classifier(ClassifierOptions {
///     style: ClassifierStyle::Custom,
///     evaluate: Some(Arc::new(|_ctx, _state, _qs| Box::pin(async {
///         Decision::from_value(&json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": 0.9}}}))
///             .map_err(|e| e.to_string())
///     }))),
///     ..Default::default()
/// }).unwrap();
/// let qs = Questions::from([("spam".to_string(), NoulQuestion { instructions: "Is this spam?".into(), criteria: None }.into())]);
/// let report = run_probes(&deaf, &qs, &[json!("buy now")], &ProbeOptions::default()).await;
/// let polarity = report.result("spam", Probe::Polarity).unwrap();
/// assert_eq!(polarity.verdict, Verdict::Broken);
/// assert!((polarity.figure.unwrap() - 0.8).abs() < 1e-9);
/// # }
/// ```
pub async fn run_probes(
    classifier: &Classifier,
    questions: &Questions,
    states: &[Value],
    options: &ProbeOptions,
) -> ProbeReport {
    let mut rng = Rng::new(options.seed);
    let mut derangements = BTreeMap::new();
    let mut skipped = Vec::new();
    for (key, q) in questions {
        let Question::Choice(c) = q else { continue };
        if !options.runs(Probe::Shuffle) {
            continue;
        }
        match shuffle_skip(q) {
            Some(why) => skipped.push(Skipped {
                question: key.clone(),
                probe: Probe::Shuffle,
                why,
            }),
            None => {
                derangements.insert(key.clone(), derangement(c.criteria.len(), &mut rng));
            }
        }
    }

    let variants = options.variants(questions);
    let requests: Vec<(Variant, Questions)> = variants
        .iter()
        .map(|&v| (v, variant_questions(questions, v, &derangements)))
        .collect();
    let jobs = states.iter().enumerate().flat_map(|(i, state)| {
        requests
            .iter()
            .map(move |(variant, qs)| (i, *variant, state, qs))
    });
    let answers: Vec<(usize, Variant, Result<Decision, String>)> = futures::stream::iter(jobs)
        .map(|(i, variant, state, qs)| {
            let ctx = options.context.clone();
            async move {
                let got = classifier
                    .evaluate_ctx(ctx, state.clone(), qs)
                    .await
                    .map_err(|e| e.to_string());
                (i, variant, got)
            }
        })
        .buffer_unordered(options.concurrency.max(1))
        .collect()
        .await;

    let mut report = ProbeReport {
        states: states.len(),
        calls: answers.len(),
        skipped,
        ..Default::default()
    };
    let mut by_state: Vec<BTreeMap<Variant, Decision>> = vec![BTreeMap::new(); states.len()];
    let mut failures: Vec<(usize, Variant, String)> = Vec::new();
    for (i, variant, got) in answers {
        match got {
            Ok(d) => {
                by_state[i].insert(variant, d);
            }
            Err(e) => failures.push((i, variant, e)),
        }
    }
    failures.sort();
    report.failed_calls = failures.len();
    report.first_error = failures.into_iter().next().map(|(_, _, e)| e);

    let measure = Measure {
        by_state: &by_state,
        questions,
        derangements: &derangements,
        repeat: options.repeat.max(2),
        seed: options.seed,
    };
    for (key, q) in questions {
        let noise = options
            .runs(Probe::Repeat)
            .then(|| measure.repeat(key, q))
            .flatten();
        for probe in Probe::ALL {
            if !options.runs(probe) || !probe.applies_to(q) {
                continue;
            }
            let result = match probe {
                Probe::Shuffle if derangements.contains_key(key) => {
                    measure.shuffle(key, noise.as_ref())
                }
                Probe::Shuffle => continue,
                Probe::Order => measure.order(key, noise.as_ref()),
                Probe::Polarity => measure.polarity(key, noise.as_ref()),
                Probe::Repeat => measure.repeat_result(key, noise.as_ref()),
            };
            report.results.push(result);
        }
    }
    report
}

#[cfg(test)]
mod tests;
