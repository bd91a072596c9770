//! Cut-points from observed confidences, with an honest estimate beside the
//! optimistic one.
//!
//! For each question (and for the row-level gate: the lowest confidence over
//! the gated questions) the pick keeps rows whose confidence is above a cut.
//! `Target::Accuracy(a)` keeps as many rows as it can while their accuracy is at
//! least `a`; `Target::MaxEscalation(e)` sends at most a share `e` to a person
//! and keeps the most confident rest. The figure measured on the rows the cut
//! was picked on flatters it, so each pick is also repeated on bootstrap
//! resamples and measured on the rows each resample left out (or picked on a
//! training share and measured on a hold-out), giving an honest accuracy and
//! coverage with a 95% range. Under 200 rows a pick is marked provisional;
//! under 50 it is refused.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::{AssessError, AssessErrorKind};
use super::file::{load_versioned, parse_versioned, save_atomic, to_versioned_json};
use super::metrics::quantile;
use super::rng::Rng;
use super::run::Run;
use super::summary::{gate_observations, observe};
use crate::classifier::{Questions, question_hash};
use crate::judge::{Bands, THRESHOLDS_FORMAT, THRESHOLDS_VERSION};

/// Rows below which a pick is refused.
///
/// ```
/// assert_eq!(toolnexus::assess::MIN_ROWS, 50);
/// ```
pub const MIN_ROWS: usize = 50;
/// Rows below which a pick is marked provisional.
///
/// ```
/// assert_eq!(toolnexus::assess::PROVISIONAL_ROWS, 200);
/// ```
pub const PROVISIONAL_ROWS: usize = 200;

/// What a cut is chosen for.
///
/// ```
/// use toolnexus::assess::Target;
/// assert_eq!(Target::Accuracy(0.95).to_string(), "accuracy ≥ 0.95");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// Keep the most rows whose accuracy is at least this.
    Accuracy(f64),
    /// Escalate at most this share of rows.
    MaxEscalation(f64),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Accuracy(a) => write!(f, "accuracy ≥ {a}"),
            Target::MaxEscalation(e) => write!(f, "escalation ≤ {e}"),
        }
    }
}

/// How [`choose_thresholds`] picks and checks.
///
/// ```
/// use toolnexus::assess::{Target, ThresholdOptions};
/// let o = ThresholdOptions::new(Target::Accuracy(0.9));
/// assert_eq!((o.resamples, o.seed, o.holdout), (1000, 0, None));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ThresholdOptions {
    /// What to pick for.
    pub target: Target,
    /// Bootstrap resamples for the honest estimate.
    pub resamples: usize,
    /// Seed of the resampling (or of the hold-out split).
    pub seed: u64,
    /// Pick on `1 − holdout` of the rows and measure on the rest, instead of
    /// bootstrapping.
    pub holdout: Option<f64>,
    /// Also pick a row-level gate over these questions.
    pub gate: Option<Vec<String>>,
}

impl ThresholdOptions {
    /// Defaults: 1,000 resamples, seed 0, no hold-out, no row gate.
    ///
    /// ```
    /// # use toolnexus::assess::{Target, ThresholdOptions};
    /// assert!(ThresholdOptions::new(Target::MaxEscalation(0.2)).gate.is_none());
    /// ```
    pub fn new(target: Target) -> ThresholdOptions {
        ThresholdOptions {
            target,
            resamples: 1000,
            seed: 0,
            holdout: None,
            gate: None,
        }
    }

    fn check(&self) -> Result<(), AssessError> {
        let bad = |m: String| Err(AssessError::new(AssessErrorKind::Invalid, m));
        match self.target {
            Target::Accuracy(a) if !(a > 0.0 && a <= 1.0) => {
                return bad(format!("target accuracy {a} is not in (0, 1]"));
            }
            Target::MaxEscalation(e) if !(0.0..1.0).contains(&e) => {
                return bad(format!("max escalation {e} is not in [0, 1)"));
            }
            _ => {}
        }
        if let Some(h) = self.holdout {
            if !(h > 0.0 && h < 1.0) {
                return bad(format!("hold-out share {h} is not in (0, 1)"));
            }
        } else if self.resamples == 0 {
            return bad("resamples must be at least 1".to_string());
        }
        Ok(())
    }
}

/// Accuracy and coverage at a cut.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Accuracy over the kept rows (0 when none are kept).
    pub accuracy: f64,
    /// Share of rows kept.
    pub coverage: f64,
}

/// The honest figures: the mean over resamples (or the hold-out's figure) with
/// a 95% range.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Honest {
    /// `bootstrap` or `holdout`.
    pub method: Method,
    /// Mean out-of-sample accuracy of the kept rows.
    pub accuracy: f64,
    /// 2.5th percentile.
    pub accuracy_low: f64,
    /// 97.5th percentile.
    pub accuracy_high: f64,
    /// Mean out-of-sample coverage.
    pub coverage: f64,
    /// 2.5th percentile.
    pub coverage_low: f64,
    /// 97.5th percentile.
    pub coverage_high: f64,
    /// Resamples that kept at least one out-of-sample row (1 for a hold-out).
    pub samples: usize,
}

/// How the honest figure was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Picked on each bootstrap resample, measured on the rows it left out.
    Bootstrap,
    /// Picked on a training share, measured on the rest (Wilson 95% range).
    Holdout,
}

/// Whether a pick can be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Enough rows.
    Ok,
    /// Fewer than [`PROVISIONAL_ROWS`]: usable, to be re-checked with more labels.
    Provisional,
    /// Fewer than [`MIN_ROWS`]: no cut.
    Refused,
    /// No cut reaches the target accuracy: every row escalates.
    Unreachable,
}

/// One cut-point with its figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Pick {
    /// `noul`, `choice`, `score` or `gate`.
    pub kind: String,
    /// Rows it was picked on.
    pub n: usize,
    /// Whether it can be used.
    pub status: Status,
    /// Rows with confidence strictly above this are kept (sure).
    pub cut: Option<f64>,
    /// The same-rows (optimistic) figures at the cut.
    pub same_rows: Option<Measured>,
    /// The honest figures.
    pub honest: Option<Honest>,
    /// The canonical hash ([`question_hash`]) of the question the cut was
    /// picked on, so a reader can tell when it has been reworded since (absent
    /// in files written before it was recorded, and for the row gate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
}

/// The row-level gate's pick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GatePick {
    /// The gated questions.
    pub keys: Vec<String>,
    /// The pick.
    pub pick: Pick,
}

/// Every pick of a run, and the thresholds file they make.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ThresholdReport {
    /// What was picked for.
    pub target: Target,
    /// Resamples used (0 for a hold-out).
    pub resamples: usize,
    /// The seed.
    pub seed: u64,
    /// Models that answered the run: the models the thresholds hold for
    /// (empty in files written before they were recorded).
    #[serde(default)]
    pub models: Vec<String>,
    /// Per-question picks.
    pub questions: BTreeMap<String, Pick>,
    /// The row-level gate's pick.
    pub gate: Option<GatePick>,
}

/// Picks a cut for every labelled question of `run` (and the row gate when
/// asked), each with same-rows and honest figures.
///
/// ```
/// use std::collections::BTreeMap;
/// use serde_json::json;
/// use toolnexus::assess::*;
/// use toolnexus::classifier::Decision;
/// use toolnexus::judge::{noul, questions};
///
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// // 300 rows: confident answers are right, unsure ones are coin flips.
/// let rows = (0..300).map(|i| {
///     let p = [0.99, 0.97, 0.6, 0.55][i % 4];
///     let y = i % 4 < 2 || i % 8 < 4;
///     Row::new(i.to_string(), BTreeMap::from([("spam".to_string(), Gold::Noul(y))]),
///         Outcome::Decided(Decision::from_value(&json!({"model": "m",
///             "answers": {"spam": {"type": "noul", "noul": p}}})).unwrap()))
/// }).collect();
/// let report = choose_thresholds(&Run::new(qs, rows), &ThresholdOptions::new(Target::Accuracy(0.95)))?;
/// let spam = &report.questions["spam"];
/// assert_eq!(spam.status, Status::Ok);
/// assert!((spam.cut.unwrap() - 0.785).abs() < 1e-12, "between 0.97 and 0.6");
/// assert_eq!(report.bands()["spam"].high, spam.cut.unwrap());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn choose_thresholds(
    run: &Run,
    options: &ThresholdOptions,
) -> Result<ThresholdReport, AssessError> {
    options.check()?;
    let mut questions = BTreeMap::new();
    for key in run.questions.keys() {
        let o = observe(run, key, None);
        if o.rows.is_empty() {
            continue;
        }
        let floor = if o.kind == "noul" { 0.5 } else { 0.0 };
        let mut p = pick(o.kind, &o.conf, &o.hit, floor, options);
        p.hash = Some(question_hash(&run.questions[key]));
        questions.insert(key.clone(), p);
    }
    let gate = match &options.gate {
        None => None,
        Some(keys) => {
            for k in keys {
                if !run.questions.contains_key(k) {
                    return Err(AssessError::new(
                        AssessErrorKind::Invalid,
                        format!("the gate names {k:?}, which the run does not ask"),
                    )
                    .for_question(k));
                }
            }
            let (conf, hit) = gate_observations(run, keys, None).unwrap_or_default();
            Some(GatePick {
                keys: keys.clone(),
                pick: pick("gate", &conf, &hit, 0.0, options),
            })
        }
    };
    Ok(ThresholdReport {
        target: options.target,
        resamples: if options.holdout.is_some() {
            0
        } else {
            options.resamples
        },
        seed: options.seed,
        models: run.models(),
        questions,
        gate,
    })
}

/// Rows sorted by confidence (descending), with their group of equal values.
struct Sorted<'a> {
    order: Vec<usize>,
    conf: &'a [f64],
    hit: &'a [bool],
}

impl<'a> Sorted<'a> {
    fn new(conf: &'a [f64], hit: &'a [bool]) -> Sorted<'a> {
        let mut order: Vec<usize> = (0..conf.len()).collect();
        order.sort_by(|&a, &b| conf[b].total_cmp(&conf[a]));
        Sorted { order, conf, hit }
    }

    /// The exclusive cut the target picks on rows weighted by `w` (zero-weight
    /// rows are not seen); `None` when no cut reaches a target accuracy.
    fn choose(&self, w: &[u32], target: Target, floor: f64) -> Option<f64> {
        let total: u64 = self.order.iter().map(|&i| w[i] as u64).sum();
        if total == 0 {
            return None;
        }
        let (mut kept, mut hits) = (0u64, 0u64);
        let mut best: Option<usize> = None; // index into `order` of the chosen group's last row
        let n = self.order.len();
        let mut j = 0;
        while j < n {
            let v = self.conf[self.order[j]];
            let mut seen = false;
            let mut k = j;
            while k < n && self.conf[self.order[k]] == v {
                let i = self.order[k];
                if w[i] > 0 {
                    seen = true;
                    kept += w[i] as u64;
                    if self.hit[i] {
                        hits += w[i] as u64;
                    }
                }
                k += 1;
            }
            if seen {
                let acc = hits as f64 / kept as f64;
                let cov = kept as f64 / total as f64;
                match target {
                    Target::Accuracy(a) => {
                        if acc >= a - 1e-12 {
                            best = Some(k - 1);
                        }
                    }
                    Target::MaxEscalation(e) => {
                        if cov >= 1.0 - e - 1e-12 {
                            best = Some(k - 1);
                            break;
                        }
                    }
                }
            }
            j = k;
        }
        let last = best?;
        let v = self.conf[self.order[last]];
        // The next lower confidence this weighting sees: the cut goes halfway.
        let next = self.order[last + 1..]
            .iter()
            .find(|&&i| w[i] > 0 && self.conf[i] < v)
            .map(|&i| self.conf[i]);
        Some(match next {
            Some(lower) => (v + lower) / 2.0,
            None if v > floor => (v + floor) / 2.0,
            None => floor,
        })
    }

    /// Accuracy and coverage over rows with `w == 0` when `oob`, else over all
    /// rows, keeping those above `cut`. `None` when no row qualifies.
    fn measure(&self, cut: f64, w: Option<&[u32]>) -> Option<(Measured, usize)> {
        let (mut total, mut kept, mut hits) = (0usize, 0usize, 0usize);
        for &i in &self.order {
            if w.is_some_and(|w| w[i] > 0) {
                continue;
            }
            total += 1;
            if self.conf[i] > cut {
                kept += 1;
                hits += self.hit[i] as usize;
            }
        }
        (total > 0).then(|| {
            (
                Measured {
                    accuracy: if kept > 0 {
                        hits as f64 / kept as f64
                    } else {
                        0.0
                    },
                    coverage: kept as f64 / total as f64,
                },
                kept,
            )
        })
    }
}

fn pick(kind: &str, conf: &[f64], hit: &[bool], floor: f64, options: &ThresholdOptions) -> Pick {
    let n = conf.len();
    let mut p = Pick {
        kind: kind.to_string(),
        n,
        status: Status::Ok,
        cut: None,
        same_rows: None,
        honest: None,
        hash: None,
    };
    if n < MIN_ROWS {
        p.status = Status::Refused;
        return p;
    }
    let sorted = Sorted::new(conf, hit);
    let ones = vec![1u32; n];
    let Some(cut) = sorted.choose(&ones, options.target, floor) else {
        p.status = Status::Unreachable;
        return p;
    };
    p.cut = Some(cut);
    p.same_rows = sorted.measure(cut, None).map(|m| m.0);
    p.honest = match options.holdout {
        Some(h) => holdout(&sorted, h, options, floor),
        None => bootstrap(&sorted, options, floor),
    };
    if n < PROVISIONAL_ROWS {
        p.status = Status::Provisional;
    }
    p
}

fn bootstrap(sorted: &Sorted, options: &ThresholdOptions, floor: f64) -> Option<Honest> {
    let n = sorted.conf.len();
    let mut rng = Rng::new(options.seed);
    let mut w = vec![0u32; n];
    let (mut accs, mut covs) = (Vec::new(), Vec::new());
    for _ in 0..options.resamples {
        w.iter_mut().for_each(|x| *x = 0);
        for _ in 0..n {
            w[rng.below(n)] += 1;
        }
        // A resample where no cut reaches the target escalates everything.
        let cut = sorted
            .choose(&w, options.target, floor)
            .unwrap_or(f64::INFINITY);
        if let Some((m, kept)) = sorted.measure(cut, Some(&w)) {
            covs.push(m.coverage);
            if kept > 0 {
                accs.push(m.accuracy);
            }
        }
    }
    if accs.is_empty() {
        return None;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    Some(Honest {
        method: Method::Bootstrap,
        accuracy: mean(&accs),
        accuracy_low: quantile(&accs, 0.025)?,
        accuracy_high: quantile(&accs, 0.975)?,
        coverage: mean(&covs),
        coverage_low: quantile(&covs, 0.025)?,
        coverage_high: quantile(&covs, 0.975)?,
        samples: accs.len(),
    })
}

fn holdout(sorted: &Sorted, share: f64, options: &ThresholdOptions, floor: f64) -> Option<Honest> {
    let n = sorted.conf.len();
    let mut idx: Vec<usize> = (0..n).collect();
    Rng::new(options.seed).shuffle(&mut idx);
    let test = ((n as f64 * share).round() as usize).clamp(1, n - 1);
    let mut w = vec![1u32; n];
    for &i in &idx[..test] {
        w[i] = 0;
    }
    let cut = sorted
        .choose(&w, options.target, floor)
        .unwrap_or(f64::INFINITY);
    let (m, kept) = sorted.measure(cut, Some(&w))?;
    if kept == 0 {
        return None;
    }
    let (alo, ahi) = wilson(m.accuracy, kept);
    let (clo, chi) = wilson(m.coverage, test);
    Some(Honest {
        method: Method::Holdout,
        accuracy: m.accuracy,
        accuracy_low: alo,
        accuracy_high: ahi,
        coverage: m.coverage,
        coverage_low: clo,
        coverage_high: chi,
        samples: 1,
    })
}

/// Wilson 95% interval of a proportion.
pub(crate) fn wilson(p: f64, n: usize) -> (f64, f64) {
    let z = 1.959_963_984_540_054_f64;
    let n = n as f64;
    let d = 1.0 + z * z / n;
    let c = (p + z * z / (2.0 * n)) / d;
    let h = z * ((p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt()) / d;
    ((c - h).max(0.0), (c + h).min(1.0))
}

fn bands_of(kind: &str, cut: f64) -> Bands {
    if kind == "noul" {
        let high = cut.clamp(0.5, 1.0);
        Bands {
            low: 1.0 - high,
            high,
        }
    } else {
        Bands {
            low: 0.0,
            high: cut.clamp(0.0, 1.0),
        }
    }
}

impl ThresholdReport {
    /// The bands `judge` applies: each usable question's cut, and for gated
    /// questions the gate's cut (a row is sure when every gated answer is
    /// above it, which is when the lowest one is). Unreachable picks get a
    /// cut of 1, so nothing is sure; refused ones are left out.
    ///
    /// ```
    /// # use toolnexus::assess::*;
    /// # let run = Run::new(Default::default(), Vec::new());
    /// let r = choose_thresholds(&run, &ThresholdOptions::new(Target::Accuracy(0.9)))?;
    /// assert!(r.bands().is_empty());
    /// # Ok::<(), AssessError>(())
    /// ```
    pub fn bands(&self) -> BTreeMap<String, Bands> {
        let mut out = BTreeMap::new();
        let cut_of = |p: &Pick| match p.status {
            Status::Refused => None,
            Status::Unreachable => Some(1.0),
            _ => p.cut,
        };
        for (k, p) in &self.questions {
            if let Some(c) = cut_of(p) {
                out.insert(k.clone(), bands_of(&p.kind, c));
            }
        }
        if let Some(g) = &self.gate
            && let Some(c) = cut_of(&g.pick)
        {
            for k in &g.keys {
                let kind = self.questions.get(k).map_or("gate", |p| p.kind.as_str());
                out.insert(k.clone(), bands_of(kind, c));
            }
        }
        out
    }

    /// The thresholds file: `format`, `version`, the `bands` judge reads, and
    /// every pick's figures. Pretty-printed, keys in a stable order.
    ///
    /// ```
    /// # use toolnexus::assess::*;
    /// # let run = Run::new(Default::default(), Vec::new());
    /// let r = choose_thresholds(&run, &ThresholdOptions::new(Target::Accuracy(0.9)))?;
    /// let t = toolnexus::judge::Thresholds::from_json(&r.to_json()).unwrap();
    /// assert!(t.bands.is_empty());
    /// assert_eq!(ThresholdReport::from_json(&r.to_json(), "t.json")?, r);
    /// # Ok::<(), AssessError>(())
    /// ```
    pub fn to_json(&self) -> String {
        let mut v = serde_json::to_value(self).expect("a report serialises");
        let bands: serde_json::Map<String, Value> = self
            .bands()
            .into_iter()
            .map(|(k, b)| (k, serde_json::json!({"low": b.low, "high": b.high})))
            .collect();
        if let Some(o) = v.as_object_mut() {
            o.insert("bands".into(), Value::Object(bands));
        }
        to_versioned_json(v, THRESHOLDS_FORMAT, THRESHOLDS_VERSION)
    }

    /// Parses a thresholds file written by [`to_json`](Self::to_json).
    ///
    /// ```
    /// let e = toolnexus::assess::ThresholdReport::from_json("{}", "t.json").unwrap_err();
    /// assert!(e.to_string().starts_with("t.json: not a thresholds file"));
    /// ```
    pub fn from_json(text: &str, source: impl AsRef<Path>) -> Result<ThresholdReport, AssessError> {
        parse_versioned(
            text,
            source.as_ref(),
            "thresholds",
            THRESHOLDS_FORMAT,
            THRESHOLDS_VERSION,
        )
    }

    /// Reads a thresholds file.
    ///
    /// ```
    /// let e = toolnexus::assess::ThresholdReport::load("/nonexistent/t.json").unwrap_err();
    /// assert!(e.to_string().starts_with("/nonexistent/t.json: cannot read"));
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<ThresholdReport, AssessError> {
        load_versioned(
            path.as_ref(),
            "thresholds",
            THRESHOLDS_FORMAT,
            THRESHOLDS_VERSION,
        )
    }

    /// The questions of `asked` whose cut was picked on another wording: the
    /// recorded hash differs from the question's [`question_hash`] now. Keys
    /// the file has no hash for (older files) are not reported.
    ///
    /// ```
    /// # use std::collections::BTreeMap;
    /// # use serde_json::json;
    /// use toolnexus::assess::*;
    /// # use toolnexus::classifier::Decision;
    /// use toolnexus::judge::{noul, questions};
    /// let qs = questions(&[noul("spam", "Is it spam?")])?;
    /// # let rows = (0..60).map(|i| Row::new(i.to_string(), BTreeMap::from([("spam".to_string(), Gold::Noul(true))]),
    /// #     Outcome::Decided(Decision::from_value(&json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": 0.9}}})).unwrap()))).collect();
    /// let file = choose_thresholds(&Run::new(qs.clone(), rows), &ThresholdOptions::new(Target::Accuracy(0.9)))?;
    /// assert!(file.reworded(&qs).is_empty());
    /// let now = questions(&[noul("spam", "Is this message unsolicited bulk mail?")])?;
    /// assert_eq!(file.reworded(&now), ["spam"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reworded(&self, asked: &Questions) -> Vec<String> {
        self.questions
            .iter()
            .filter_map(|(k, p)| {
                let (was, q) = (p.hash.as_deref()?, asked.get(k)?);
                (question_hash(q) != was).then(|| k.clone())
            })
            .collect()
    }

    /// Writes the thresholds file atomically.
    ///
    /// ```no_run
    /// # use toolnexus::assess::*;
    /// # let run = Run::new(Default::default(), Vec::new());
    /// choose_thresholds(&run, &ThresholdOptions::new(Target::Accuracy(0.9)))?.save("thresholds.json")?;
    /// # Ok::<(), AssessError>(())
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), AssessError> {
        save_atomic(path.as_ref(), &self.to_json())
    }

    /// The picks as a terminal table.
    ///
    /// ```
    /// # use toolnexus::assess::*;
    /// # let run = Run::new(Default::default(), Vec::new());
    /// let r = choose_thresholds(&run, &ThresholdOptions::new(Target::Accuracy(0.9)))?;
    /// assert!(r.table().starts_with("target: accuracy ≥ 0.9"));
    /// # Ok::<(), AssessError>(())
    /// ```
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "target: {}", self.target);
        let mut line = |name: &str, p: &Pick| {
            let pct = |x: f64| format!("{:.1}%", x * 100.0);
            let _ = write!(out, "{name}: {} rows, ", p.n);
            match (p.status, p.cut) {
                (Status::Refused, _) => {
                    let _ = write!(out, "refused: fewer than {MIN_ROWS} rows");
                }
                (Status::Unreachable, _) => {
                    out.push_str("no cut reaches the target: every row escalates")
                }
                (_, Some(c)) => {
                    let _ = write!(out, "cut > {c:.4}");
                    if let Some(s) = p.same_rows {
                        let _ = write!(
                            out,
                            "; same rows: accuracy {}, coverage {}",
                            pct(s.accuracy),
                            pct(s.coverage)
                        );
                    }
                    if let Some(h) = p.honest {
                        let what = match h.method {
                            Method::Bootstrap => "out of bag",
                            Method::Holdout => "hold-out",
                        };
                        let _ = write!(
                            out,
                            "; {what}: accuracy {} (95% {}–{}), coverage {} (95% {}–{})",
                            pct(h.accuracy),
                            pct(h.accuracy_low),
                            pct(h.accuracy_high),
                            pct(h.coverage),
                            pct(h.coverage_low),
                            pct(h.coverage_high)
                        );
                    }
                    if p.status == Status::Provisional {
                        let _ = write!(out, " [provisional: fewer than {PROVISIONAL_ROWS} rows]");
                    }
                }
                (_, None) => {}
            }
            out.push('\n');
        };
        for (k, p) in &self.questions {
            line(k, p);
        }
        if let Some(g) = &self.gate {
            line(&format!("row gate over {}", g.keys.join(", ")), &g.pick);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escalation_budget_keeps_the_most_confident_rest() {
        let conf: Vec<f64> = (0..100).map(|i| i as f64 / 100.0).collect();
        let hit = vec![true; 100];
        let s = Sorted::new(&conf, &hit);
        let cut = s
            .choose(&[1; 100], Target::MaxEscalation(0.25), 0.0)
            .unwrap();
        let (m, kept) = s.measure(cut, None).unwrap();
        assert_eq!(kept, 75);
        assert!((m.coverage - 0.75).abs() < 1e-12);
    }

    #[test]
    fn too_few_rows_are_refused_and_few_are_provisional() {
        let o = ThresholdOptions::new(Target::Accuracy(0.5));
        let p = pick("noul", &[0.9; 49], &[true; 49], 0.5, &o);
        assert_eq!(p.status, Status::Refused);
        let p = pick("noul", &[0.9; 120], &[true; 120], 0.5, &o);
        assert_eq!(p.status, Status::Provisional);
        assert_eq!(p.cut, Some(0.7));
    }

    #[test]
    fn an_unreachable_target_escalates_everything() {
        let o = ThresholdOptions::new(Target::Accuracy(0.99));
        let hit: Vec<bool> = (0..300).map(|i| i % 2 == 0).collect();
        let p = pick("choice", &[0.8; 300], &hit, 0.0, &o);
        assert_eq!(p.status, Status::Unreachable);
    }

    #[test]
    fn wilson_matches_a_known_interval() {
        let (lo, hi) = wilson(0.5, 100);
        assert!((lo - 0.4038).abs() < 1e-4 && (hi - 0.5962).abs() < 1e-4);
    }
}
