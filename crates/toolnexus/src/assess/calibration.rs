//! Calibration files and the calibrating classifier.
//!
//! [`calibrate_run`] fits one map per question of a run (noul: Platt or
//! isotonic, whichever has the lower cross-validated log loss; choice and score:
//! a temperature) and reports held-out ECE and log loss before and after. The
//! [`Calibration`] it writes names, per question, the [`question_hash`] of the
//! wording it was fitted on and the model ids that answered. [`calibrating`]
//! wraps any classifier and applies the maps at run time, but only to a
//! decision whose model and every question match the file: a model upgrade or a
//! reworded question never silently reuses a stale map.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::calibrate::{
    NoulMap, Temperature, cross_validated_noul, cross_validated_temperature, fit_noul,
};
use super::error::{AssessError, AssessErrorKind};
use super::file::{load_versioned, parse_versioned, save_atomic, to_versioned_json};
use super::metrics::{EceRows, log_loss_binary, log_loss_multi};
use super::run::Run;
use super::summary::{ECE_BINS, argmax, observe};
use super::text::{columns, f3};
use super::thresholds::MIN_ROWS;
use crate::classifier::{
    Classifier, ClassifierError, Decision, DecisionAnswer, EvalContext, EvalRequest, Evaluator,
    Question, Questions, choice_confidence, near_uniform, question_hash, score_confidence,
};
use crate::context::BoxFuture;

/// The `format` field of a calibration file.
///
/// ```
/// assert_eq!(toolnexus::assess::CALIBRATION_FORMAT, "toolnexus.calibration");
/// ```
pub const CALIBRATION_FORMAT: &str = "toolnexus.calibration";

/// The calibration file version this build reads and writes.
///
/// ```
/// assert_eq!(toolnexus::assess::CALIBRATION_VERSION, 1);
/// ```
pub const CALIBRATION_VERSION: u64 = 1;

/// One question's fitted map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum QuestionMap {
    /// A noul question: a map of P(yes).
    Noul {
        /// The map.
        map: NoulMap,
    },
    /// A choice question: a temperature over its options.
    Choice {
        /// The temperature.
        temperature: Temperature,
    },
    /// A score question: a temperature over its levels.
    Score {
        /// The temperature.
        temperature: Temperature,
    },
}

/// One question of a calibration file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibratedQuestion {
    /// [`question_hash`] of the question it was fitted on.
    pub hash: String,
    /// The model ids whose answers it was fitted on (a file naming none
    /// loads, and its map applies to no decision).
    #[serde(default)]
    pub models: Vec<String>,
    /// Labelled rows it was fitted on.
    pub rows: usize,
    /// The map.
    #[serde(flatten)]
    pub map: QuestionMap,
}

/// A calibration file: one map per question key.
///
/// ```
/// use toolnexus::assess::*;
/// let file = Calibration::from_json(
///     r#"{"format": "toolnexus.calibration", "version": 1, "questions": {}}"#, "c.json")?;
/// assert!(file.questions.is_empty());
/// let e = Calibration::from_json(r#"{"format": "other"}"#, "c.json").unwrap_err();
/// assert!(e.to_string().starts_with("c.json: not a calibration file"));
/// # Ok::<(), AssessError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Calibration {
    /// The maps, by question key.
    pub questions: BTreeMap<String, CalibratedQuestion>,
}

impl Calibration {
    /// Every model some map was fitted on, each once, in question order: the
    /// models the file holds for.
    ///
    /// ```
    /// let file = toolnexus::assess::Calibration::from_json(
    ///     r#"{"format": "toolnexus.calibration", "version": 1, "questions": {"spam": {"hash": "h",
    ///         "models": ["jev-1.13"], "rows": 60, "type": "choice", "temperature": {"t": 1.0}}}}"#, "c.json")?;
    /// assert_eq!(file.models(), ["jev-1.13"]);
    /// # Ok::<(), toolnexus::assess::AssessError>(())
    /// ```
    pub fn models(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for m in self.questions.values().flat_map(|q| &q.models) {
            if !out.contains(m) {
                out.push(m.clone());
            }
        }
        out
    }

    /// The file's text: versioned JSON.
    ///
    /// ```
    /// let text = toolnexus::assess::Calibration::default().to_json();
    /// assert!(text.contains("\"format\": \"toolnexus.calibration\""));
    /// ```
    pub fn to_json(&self) -> String {
        let v = serde_json::to_value(self).expect("a calibration serialises");
        to_versioned_json(v, CALIBRATION_FORMAT, CALIBRATION_VERSION)
    }

    /// Parses a calibration file; errors name `source`.
    ///
    /// ```
    /// let e = toolnexus::assess::Calibration::from_json("{", "c.json").unwrap_err();
    /// assert!(e.to_string().starts_with("c.json:1:1: not JSON"));
    /// ```
    pub fn from_json(text: &str, source: impl AsRef<Path>) -> Result<Calibration, AssessError> {
        parse_versioned(
            text,
            source.as_ref(),
            "calibration",
            CALIBRATION_FORMAT,
            CALIBRATION_VERSION,
        )
    }

    /// Reads a calibration file.
    ///
    /// ```
    /// let e = toolnexus::assess::Calibration::load("/nonexistent/c.json").unwrap_err();
    /// assert!(e.to_string().starts_with("/nonexistent/c.json: cannot read"));
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Calibration, AssessError> {
        load_versioned(
            path.as_ref(),
            "calibration",
            CALIBRATION_FORMAT,
            CALIBRATION_VERSION,
        )
    }

    /// Writes the file atomically.
    ///
    /// ```no_run
    /// toolnexus::assess::Calibration::default().save("calibration.json")?;
    /// # Ok::<(), toolnexus::assess::AssessError>(())
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), AssessError> {
        save_atomic(path.as_ref(), &self.to_json())
    }
}

/// How [`calibrate_run`] fits.
///
/// ```
/// let o = toolnexus::assess::CalibrateOptions::default();
/// assert_eq!((o.folds, o.seed), (5, 0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CalibrateOptions {
    /// Cross-validation folds (at least 2).
    pub folds: usize,
    /// Seed of the fold split.
    pub seed: u64,
}

impl Default for CalibrateOptions {
    fn default() -> Self {
        CalibrateOptions { folds: 5, seed: 0 }
    }
}

/// Held-out figures of one question, before and after its map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionCalibration {
    /// The question key.
    pub key: String,
    /// `noul`, `choice` or `score`.
    pub kind: String,
    /// Labelled, answered rows.
    pub n: usize,
    /// The chosen method: `platt`, `isotonic`, `identity` or `temperature`.
    /// Empty when the question was not fitted.
    pub method: String,
    /// The fitted temperature (choice and score).
    pub temperature: Option<f64>,
    /// ECE of the raw answers ([`EceRows::ece`], as `assess report` prints it).
    pub ece_before: f64,
    /// Out-of-fold ECE after the map.
    pub ece_after: Option<f64>,
    /// Log loss of the raw answers.
    pub log_loss_before: f64,
    /// Out-of-fold log loss after the map.
    pub log_loss_after: Option<f64>,
    /// Why the question was not fitted, when it was not.
    pub skipped: Option<String>,
}

/// What [`calibrate_run`] fitted, with the figures that justify it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationReport {
    /// Folds and seed used.
    pub folds: usize,
    /// Seed of the fold split.
    pub seed: u64,
    /// The file to write (questions fitted).
    pub file: Calibration,
    /// Every question of the run, fitted or not.
    pub questions: Vec<QuestionCalibration>,
}

impl CalibrationReport {
    /// The figures as a terminal table.
    ///
    /// ```
    /// # use toolnexus::assess::*;
    /// # let r = CalibrationReport { folds: 5, seed: 0, file: Calibration::default(), questions: vec![] };
    /// assert!(r.table().starts_with("question"));
    /// ```
    pub fn table(&self) -> String {
        let header = [
            "question",
            "kind",
            "n",
            "method",
            "ECE before",
            "after",
            "log loss before",
            "after",
            "",
        ];
        let rows: Vec<Vec<String>> = self
            .questions
            .iter()
            .map(|q| {
                let method = match (q.temperature, q.method.as_str()) {
                    (Some(t), _) => format!("temperature {t:.3}"),
                    (None, m) => m.to_string(),
                };
                vec![
                    q.key.clone(),
                    q.kind.clone(),
                    q.n.to_string(),
                    method,
                    f3(q.ece_before),
                    q.ece_after.map_or("—".into(), f3),
                    f3(q.log_loss_before),
                    q.log_loss_after.map_or("—".into(), f3),
                    q.skipped
                        .clone()
                        .map_or(String::new(), |s| format!("not fitted: {s}")),
                ]
            })
            .collect();
        let mut out = columns(&header, &rows, |i| i == 2 || i >= 4);
        let _ = writeln!(
            out,
            "held out: {}-fold cross-validation, seed {}; ECE over {ECE_BINS} bins",
            self.folds, self.seed
        );
        out
    }
}

/// ECE of P(yes) against outcomes ([`EceRows::ece`]).
fn noul_ece(p: &[f64], y: &[bool]) -> f64 {
    EceRows::from_noul(p, y).ece()
}

/// ECE of distributions against gold classes ([`EceRows::ece`]).
fn top_ece(probs: &[Vec<f64>], gold: &[usize]) -> f64 {
    EceRows::from_distributions(probs, gold).ece()
}

/// Fits a map per question of `run` (at least [`MIN_ROWS`] labelled, answered
/// rows each; others are listed as skipped) with held-out figures.
///
/// ```
/// # use std::collections::BTreeMap;
/// # use serde_json::json;
/// use toolnexus::assess::*;
/// # use toolnexus::classifier::Decision;
/// # use toolnexus::judge::{noul, questions};
/// # let qs = questions(&[noul("spam", "Is it spam?")])?;
/// # let rows = (0..2000).map(|i| {
/// #     let p = if i % 2 == 0 { 0.95 } else { 0.05 };
/// #     let y = (i % 2 == 0) == (i % 10 < 7);
/// #     Row::new(i.to_string(), BTreeMap::from([("spam".to_string(), Gold::Noul(y))]),
/// #         Outcome::Decided(Decision::from_value(&json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": p}}})).unwrap()))
/// # }).collect();
/// # let run = Run::new(qs, rows);
/// // `run`: 2,000 rows where the model says 95% and is right 80% of the time.
/// let report = calibrate_run(&run, &CalibrateOptions::default())?;
/// let spam = &report.questions[0];
/// assert!(spam.ece_before > 0.2 && spam.ece_after.unwrap() < 0.05, "{spam:?}");
/// assert_eq!(report.file.questions["spam"].models, ["m"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn calibrate_run(
    run: &Run,
    options: &CalibrateOptions,
) -> Result<CalibrationReport, AssessError> {
    if options.folds < 2 {
        return Err(AssessError::new(
            AssessErrorKind::Invalid,
            format!("calibration needs at least 2 folds, got {}", options.folds),
        ));
    }
    let (k, seed) = (options.folds, options.seed);
    // Questions are independent: each fits on its own thread.
    let results: Vec<(QuestionCalibration, Option<CalibratedQuestion>)> =
        std::thread::scope(|scope| {
            let handles: Vec<_> = run
                .questions
                .iter()
                .map(|(key, question)| {
                    scope.spawn(move || calibrate_question(run, key, question, k, seed))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a calibration fit panicked"))
                .collect()
        });
    let mut file = Calibration::default();
    let mut questions = Vec::new();
    for (q, fitted) in results {
        if let Some(c) = fitted {
            file.questions.insert(q.key.clone(), c);
        }
        questions.push(q);
    }
    Ok(CalibrationReport {
        folds: k,
        seed,
        file,
        questions,
    })
}

/// One question's fit and held-out figures (`None`: not calibrated, and the
/// report says why).
fn calibrate_question(
    run: &Run,
    key: &str,
    question: &Question,
    k: usize,
    seed: u64,
) -> (QuestionCalibration, Option<CalibratedQuestion>) {
    let mut fitted = None;
    let o = observe(run, key, None);
    let n = o.rows.len();
    let mut q = QuestionCalibration {
        key: key.to_string(),
        kind: question.kind().to_string(),
        n,
        method: String::new(),
        temperature: None,
        ece_before: 0.0,
        ece_after: None,
        log_loss_before: 0.0,
        log_loss_after: None,
        skipped: None,
    };
    let map = match question.kind() {
        "noul" => {
            q.ece_before = noul_ece(&o.p_true, &o.y);
            q.log_loss_before = log_loss_binary(&o.p_true, &o.y);
            (n >= MIN_ROWS).then(|| {
                let fit = fit_noul(&o.p_true, &o.y, k, seed);
                let held_out = cross_validated_noul(&o.p_true, &o.y, k, seed);
                q.ece_after = Some(noul_ece(&held_out, &o.y));
                q.log_loss_after = Some(log_loss_binary(&held_out, &o.y));
                q.method = match fit.map {
                    NoulMap::Identity => "identity",
                    NoulMap::Platt(_) => "platt",
                    NoulMap::Isotonic(_) => "isotonic",
                }
                .to_string();
                QuestionMap::Noul { map: fit.map }
            })
        }
        kind @ ("choice" | "score") => {
            q.ece_before = top_ece(&o.probs, &o.gold);
            q.log_loss_before = log_loss_multi(&o.probs, &o.gold);
            let with_distribution = o.probs.iter().all(|p| p.iter().sum::<f64>() > 0.0);
            if !with_distribution {
                q.skipped = Some("some answers carry no probabilities".into());
                None
            } else {
                (n >= MIN_ROWS).then(|| {
                    let temperature = Temperature::fit(&o.probs, &o.gold);
                    let held_out = cross_validated_temperature(&o.probs, &o.gold, k, seed);
                    q.ece_after = Some(top_ece(&held_out, &o.gold));
                    q.log_loss_after = Some(log_loss_multi(&held_out, &o.gold));
                    q.method = "temperature".into();
                    q.temperature = Some(temperature.t);
                    if kind == "choice" {
                        QuestionMap::Choice { temperature }
                    } else {
                        QuestionMap::Score { temperature }
                    }
                })
            }
        }
        other => {
            q.skipped = Some(format!("{other} questions are not calibrated"));
            None
        }
    };
    match map {
        Some(map) => {
            let mut models: Vec<String> = Vec::new();
            for &i in &o.rows {
                if let Some(d) = run.rows[i].decision()
                    && !models.contains(&d.model)
                {
                    models.push(d.model.clone());
                }
            }
            fitted = Some(CalibratedQuestion {
                hash: question_hash(question),
                models,
                rows: n,
                map,
            });
        }
        None if q.skipped.is_none() => {
            q.skipped = Some(format!("{n} rows, at least {MIN_ROWS} needed"));
        }
        None => {}
    }
    (q, fitted)
}

/// Why a decision was passed through unchanged, or `None` when every answer
/// has a map that matches its question and the decision's model.
fn mismatch(calibration: &Calibration, questions: &Questions, d: &Decision) -> Option<String> {
    if d.answers.is_empty() {
        return Some("the decision has no answers".into());
    }
    for key in d.answers.keys() {
        let Some(entry) = calibration.questions.get(key) else {
            return Some(format!(
                "question {key:?} has no map in the calibration file"
            ));
        };
        let Some(question) = questions.get(key) else {
            return Some(format!("question {key:?} was not asked"));
        };
        if question_hash(question) != entry.hash {
            return Some(format!(
                "question {key:?} is not the wording the map was fitted on (hash {} ≠ {})",
                question_hash(question),
                entry.hash
            ));
        }
        if entry.models.is_empty() {
            return Some(format!(
                "question {key:?}: the map names no model it was fitted on (an older file; fit it again with `toolnexus assess calibrate`)"
            ));
        }
        if !entry.models.contains(&d.model) {
            return Some(format!(
                "question {key:?}: the map was fitted on model(s) {}, this decision is from {:?}",
                entry.models.join(", "),
                d.model
            ));
        }
    }
    None
}

/// Applies the matching maps to every answer and recomputes what derives from
/// the probabilities. Returns false (leaving `d` as it was) when an answer's
/// shape does not fit its map.
fn apply(calibration: &Calibration, d: &mut Decision) -> bool {
    let mut out = d.answers.clone();
    for (key, answer) in out.iter_mut() {
        let map = &calibration.questions[key].map;
        match (answer, map) {
            (DecisionAnswer::Noul(a), QuestionMap::Noul { map }) => a.noul = map.apply(a.noul),
            (DecisionAnswer::Choice(a), QuestionMap::Choice { temperature }) => {
                let ids: Vec<String> = a.probabilities.keys().cloned().collect();
                let p: Vec<f64> = a.probabilities.values().copied().collect();
                if p.is_empty() {
                    return false;
                }
                let q = temperature.apply(&p);
                let top = argmax(&q);
                a.probabilities = ids.iter().cloned().zip(q.iter().copied()).collect();
                a.choice = ids[top].clone();
                a.confidence = choice_confidence(&q);
                a.near_uniform = near_uniform(&a.probabilities);
            }
            (DecisionAnswer::Score(a), QuestionMap::Score { temperature }) => {
                let mut levels: Vec<(usize, f64)> = Vec::with_capacity(a.probabilities.len());
                for (l, &p) in &a.probabilities {
                    let Ok(level) = l.parse::<usize>() else {
                        return false;
                    };
                    levels.push((level, p));
                }
                if levels.is_empty() {
                    return false;
                }
                levels.sort_by_key(|&(l, _)| l);
                let p: Vec<f64> = levels.iter().map(|&(_, p)| p).collect();
                let q = temperature.apply(&p);
                a.probabilities = levels
                    .iter()
                    .zip(&q)
                    .map(|(&(l, _), &p)| (l.to_string(), p))
                    .collect();
                a.score = levels
                    .iter()
                    .zip(&q)
                    .map(|(&(l, _), &p)| l as f64 * p)
                    .sum();
                a.confidence = score_confidence(&q);
            }
            _ => return false,
        }
    }
    d.answers = out;
    d.calibrated = true;
    true
}

/// The evaluator behind [`calibrating`].
struct Calibrating {
    inner: Classifier,
    shared: Arc<Shared>,
}

/// What every call of a calibrating classifier reads.
struct Shared {
    calibration: Calibration,
    /// The reasons already warned about (each once).
    warned: Mutex<Vec<String>>,
}

impl Shared {
    fn warn_once(&self, reason: String) {
        let mut warned = self.warned.lock().unwrap_or_else(|e| e.into_inner());
        if !warned.contains(&reason) {
            tracing::warn!(target: "toolnexus::assess", "calibration not applied: {reason}");
            warned.push(reason);
        }
    }

    /// The decision, calibrated when it matches, else as it came.
    fn calibrate(&self, questions: &Questions, mut d: Decision) -> Decision {
        match mismatch(&self.calibration, questions, &d) {
            Some(reason) => self.warn_once(reason),
            None => {
                if !apply(&self.calibration, &mut d) {
                    self.warn_once("an answer's shape does not fit its map".into());
                }
            }
        }
        d
    }
}

impl Evaluator for Calibrating {
    fn call(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Decision, ClassifierError>> {
        let questions = request.questions.clone();
        let shared = Arc::clone(&self.shared);
        let fut = self.inner.call(ctx, request);
        Box::pin(async move { fut.await.map(|d| shared.calibrate(&questions, d)) })
    }

    /// Keeps what the inner call settled beside its decision (request id, cache
    /// hit, cost and its source: a cascade's student stays `local`); the
    /// forwarded body and a style's extras describe the decision before it was
    /// calibrated, so they are dropped.
    fn call_full(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<crate::classifier::Evaluated, ClassifierError>> {
        let questions = request.questions.clone();
        let shared = Arc::clone(&self.shared);
        let inner = self.inner.clone();
        Box::pin(async move {
            inner.evaluate_request(ctx, request).await.map(|mut e| {
                e.decision = shared.calibrate(&questions, e.decision);
                e.wire_body = None;
                e.extensions.clear();
                e
            })
        })
    }
}

/// `inner` with the maps of `calibration` applied to its decisions.
///
/// A decision is calibrated whole or not at all: when its model is one the
/// file's maps were fitted on and every answered question has a map whose
/// [`question_hash`] matches the question asked, each answer is mapped — noul
/// P(yes) through Platt or isotonic; choice and score distributions through
/// their temperature, then `choice` (argmax), `score` (expected level),
/// `confidence` (top probability) and `near_uniform` recomputed — and
/// `calibrated` set to `true`. Otherwise the decision passes through unchanged
/// and a warning (target `toolnexus::assess`) is logged once per reason.
///
/// ```
/// # use std::collections::BTreeMap;
/// # use serde_json::json;
/// use toolnexus::assess::*;
/// use toolnexus::assess::calibrate::{NoulMap, Platt};
/// use toolnexus::classifier::*;
/// use toolnexus::judge::{noul, questions};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// let recorded = create_classifier(ClassifierOptions {
///     style: ClassifierStyle::Static,
///     decisions: vec![RecordedDecision {
///         state: json!("hi"),
///         questions: qs.clone(),
///         response: br#"{"model":"jev-1.13","answers":{"spam":{"type":"noul","noul":0.99}}}"#.to_vec(),
///     }],
///     ..Default::default()
/// })?;
/// let mut file = Calibration::default();
/// file.questions.insert("spam".into(), CalibratedQuestion {
///     hash: question_hash(&qs["spam"]),
///     models: vec!["jev-1.13".into()],
///     rows: 500,
///     map: QuestionMap::Noul { map: NoulMap::Platt(Platt { a: -0.5, b: 0.0 }) },
/// });
/// let judge = calibrating(recorded, file)?;
/// let d = judge.evaluate(json!("hi"), &qs).await?;
/// assert!(d.calibrated);
/// assert!(d.noul("spam")?.noul < 0.99);
/// # Ok(())
/// # }
/// ```
pub fn calibrating(
    inner: Classifier,
    calibration: Calibration,
) -> Result<Classifier, ClassifierError> {
    let model = inner.model().to_string();
    // The maps change answers: a cache in front keys on them.
    let maps = crate::classifier::Fingerprint::digest(calibration.to_json());
    let beneath = inner.clone();
    let shared = Arc::new(Shared {
        calibration,
        warned: Mutex::new(Vec::new()),
    });
    Ok(
        Classifier::from_evaluator(model, Calibrating { inner, shared })
            .layered_over(&beneath)
            .with_fingerprint_part("calibration", maps),
    )
}
