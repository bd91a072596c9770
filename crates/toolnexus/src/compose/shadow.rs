//! [`shadow`]: the primary's answers, with a candidate mirrored off the
//! caller's path on a sample of the calls (see the [module docs](super#shadow)).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use crate::classifier::{
    Classifier, ClassifierError, Decision, EvalContext, EvalRequest, Evaluated, FullEvaluator,
};
use crate::context::BoxFuture;

use super::disagreement::Disagreement;

/// How many candidate calls a [`shadow`] runs at once unless told otherwise.
///
/// ```
/// use toolnexus::compose::{DEFAULT_SHADOW_IN_FLIGHT, ShadowOptions};
/// assert_eq!(ShadowOptions::new(0.1).max_in_flight, DEFAULT_SHADOW_IN_FLIGHT);
/// ```
pub const DEFAULT_SHADOW_IN_FLIGHT: usize = 16;

/// Receives every [`Disagreement`] a [`shadow`] reports.
///
/// ```
/// use std::sync::Arc;
/// use toolnexus::compose::{Disagreement, DisagreementFn};
///
/// let log: DisagreementFn = Arc::new(|d: &Disagreement| {
///     if !d.agrees() {
///         eprintln!("{}", d.to_json());
///     }
/// });
/// # let _ = log;
/// ```
pub type DisagreementFn = Arc<dyn Fn(&Disagreement) + Send + Sync>;

/// What a [`shadow`] mirrors and where it reports. Build with
/// [`ShadowOptions::new`] and the `with_` methods; every field is public to read
/// and set.
///
/// ```
/// use toolnexus::compose::ShadowOptions;
///
/// let options = ShadowOptions::new(0.05)
///     .with_seed(7)
///     .with_jsonl("shadow.jsonl")
///     .with_max_in_flight(4)
///     .with_on_disagreement(|d| {
///         if !d.agrees() {
///             eprintln!("candidate disagrees on {:?}", d.keys.keys().collect::<Vec<_>>());
///         }
///     });
/// let stats = options.stats.clone(); // keep a handle before giving the options away
/// assert_eq!((options.sample, options.max_in_flight), (0.05, 4));
/// # let _ = stats;
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ShadowOptions {
    /// The share of the calls the primary answers that are mirrored to the
    /// candidate, in `0..=1`: 0 mirrors nothing, 1 every call. Above 1 counts as
    /// 1; below 0 or NaN as 0.
    pub sample: f64,
    /// Seeds the sampler. Which calls are mirrored depends only on the seed and
    /// on each call's position in the classifier's sequence of calls, so a run
    /// is reproducible, and periodic traffic is not aliased as it would be by
    /// taking every k-th call.
    pub seed: u64,
    /// Called with every comparison, from the candidate's task, including the
    /// ones that agree ([`Disagreement::agrees`]) and candidate failures.
    pub on_disagreement: Option<DisagreementFn>,
    /// A file to append one JSON line per comparison to
    /// ([`Disagreement::to_json`]), each written with a single write. Created
    /// when missing. A failed write is logged (target `toolnexus::compose`) and
    /// counted ([`ShadowStats::write_failed`]).
    pub jsonl: Option<PathBuf>,
    /// Candidate calls in flight at most, at least 1 (default
    /// [`DEFAULT_SHADOW_IN_FLIGHT`]). A sampled call while that many run is
    /// dropped and counted ([`ShadowStats::dropped`]).
    pub max_in_flight: usize,
    /// The counters this shadow updates. Clone it before handing the options
    /// to [`shadow`]; options cloned from one another share their counters.
    pub stats: ShadowStats,
}

impl ShadowOptions {
    /// Mirrors a share `sample` of the calls, seed 0, no callback, no file, at
    /// most [`DEFAULT_SHADOW_IN_FLIGHT`] in flight, fresh counters.
    ///
    /// ```
    /// use toolnexus::compose::ShadowOptions;
    /// let o = ShadowOptions::new(0.25);
    /// assert!(o.on_disagreement.is_none() && o.jsonl.is_none());
    /// assert_eq!(o.stats.mirrored(), 0);
    /// ```
    pub fn new(sample: f64) -> ShadowOptions {
        ShadowOptions {
            sample,
            seed: 0,
            on_disagreement: None,
            jsonl: None,
            max_in_flight: DEFAULT_SHADOW_IN_FLIGHT,
            stats: ShadowStats::default(),
        }
    }

    /// With this sampler seed.
    ///
    /// ```
    /// assert_eq!(toolnexus::compose::ShadowOptions::new(0.5).with_seed(42).seed, 42);
    /// ```
    pub fn with_seed(mut self, seed: u64) -> ShadowOptions {
        self.seed = seed;
        self
    }

    /// Calls `f` with every comparison.
    ///
    /// ```
    /// let o = toolnexus::compose::ShadowOptions::new(1.0).with_on_disagreement(|d| println!("{}", d.to_json()));
    /// assert!(o.on_disagreement.is_some());
    /// ```
    pub fn with_on_disagreement(
        mut self,
        f: impl Fn(&Disagreement) + Send + Sync + 'static,
    ) -> ShadowOptions {
        self.on_disagreement = Some(Arc::new(f));
        self
    }

    /// Appends one JSON line per comparison to the file at `path`.
    ///
    /// ```
    /// let o = toolnexus::compose::ShadowOptions::new(1.0).with_jsonl("/var/log/shadow.jsonl");
    /// assert_eq!(o.jsonl.as_deref(), Some(std::path::Path::new("/var/log/shadow.jsonl")));
    /// ```
    pub fn with_jsonl(mut self, path: impl Into<PathBuf>) -> ShadowOptions {
        self.jsonl = Some(path.into());
        self
    }

    /// Runs at most `n` candidate calls at once (at least 1).
    ///
    /// ```
    /// assert_eq!(toolnexus::compose::ShadowOptions::new(1.0).with_max_in_flight(2).max_in_flight, 2);
    /// ```
    pub fn with_max_in_flight(mut self, n: usize) -> ShadowOptions {
        self.max_in_flight = n;
        self
    }
}

impl fmt::Debug for ShadowOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShadowOptions")
            .field("sample", &self.sample)
            .field("seed", &self.seed)
            .field("on_disagreement", &self.on_disagreement.is_some())
            .field("jsonl", &self.jsonl)
            .field("max_in_flight", &self.max_in_flight)
            .field("stats", &self.stats)
            .finish()
    }
}

#[derive(Default)]
struct Counters {
    mirrored: AtomicU64,
    dropped: AtomicU64,
    compared: AtomicU64,
    disagreed: AtomicU64,
    candidate_failed: AtomicU64,
    write_failed: AtomicU64,
    in_flight: AtomicUsize,
    idle: Notify,
}

/// The counters of a [`shadow`], shared by every clone: read them at any
/// time, or wait for the candidate calls in flight with [`idle`](ShadowStats::idle).
///
/// Every mirrored call ends compared: `compared` counts the candidate's answers
/// and its failures alike, `disagreed` the answers that differ somewhere from
/// the primary's, `candidate_failed` the failures. `dropped` counts the sampled
/// calls not mirrored because the in-flight bound was reached (or no Tokio
/// runtime was running): `mirrored + dropped` is the number of sampled calls
/// the primary answered.
///
/// ```
/// use toolnexus::compose::ShadowStats;
///
/// let stats = ShadowStats::default();
/// assert_eq!(
///     format!("{stats:?}"),
///     "ShadowStats { mirrored: 0, dropped: 0, compared: 0, disagreed: 0, candidate_failed: 0, write_failed: 0, in_flight: 0 }"
/// );
/// ```
#[derive(Clone, Default)]
pub struct ShadowStats {
    inner: Arc<Counters>,
}

impl ShadowStats {
    /// Calls sent to the candidate.
    ///
    /// ```
    /// assert_eq!(toolnexus::compose::ShadowStats::default().mirrored(), 0);
    /// ```
    pub fn mirrored(&self) -> u64 {
        self.inner.mirrored.load(Ordering::SeqCst)
    }

    /// Sampled calls not sent because [`ShadowOptions::max_in_flight`] calls
    /// were already running.
    ///
    /// ```
    /// assert_eq!(toolnexus::compose::ShadowStats::default().dropped(), 0);
    /// ```
    pub fn dropped(&self) -> u64 {
        self.inner.dropped.load(Ordering::SeqCst)
    }

    /// Comparisons reported: every mirrored call, once it has ended.
    ///
    /// ```
    /// assert_eq!(toolnexus::compose::ShadowStats::default().compared(), 0);
    /// ```
    pub fn compared(&self) -> u64 {
        self.inner.compared.load(Ordering::SeqCst)
    }

    /// Comparisons where the candidate answered and some key differs.
    ///
    /// ```
    /// assert_eq!(toolnexus::compose::ShadowStats::default().disagreed(), 0);
    /// ```
    pub fn disagreed(&self) -> u64 {
        self.inner.disagreed.load(Ordering::SeqCst)
    }

    /// Comparisons where the candidate failed.
    ///
    /// ```
    /// assert_eq!(toolnexus::compose::ShadowStats::default().candidate_failed(), 0);
    /// ```
    pub fn candidate_failed(&self) -> u64 {
        self.inner.candidate_failed.load(Ordering::SeqCst)
    }

    /// JSONL lines that could not be written.
    ///
    /// ```
    /// assert_eq!(toolnexus::compose::ShadowStats::default().write_failed(), 0);
    /// ```
    pub fn write_failed(&self) -> u64 {
        self.inner.write_failed.load(Ordering::SeqCst)
    }

    /// Candidate calls running now (their reports included).
    ///
    /// ```
    /// assert_eq!(toolnexus::compose::ShadowStats::default().in_flight(), 0);
    /// ```
    pub fn in_flight(&self) -> usize {
        self.inner.in_flight.load(Ordering::SeqCst)
    }

    /// Waits until no candidate call is in flight: every call mirrored so far
    /// has been compared and reported (callback run, line written). Use it
    /// before reading the counters in a test, or before shutting down.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let stats = toolnexus::compose::ShadowStats::default();
    /// stats.idle().await; // nothing in flight: returns at once
    /// # }
    /// ```
    pub async fn idle(&self) {
        loop {
            let mut notified = std::pin::pin!(self.inner.idle.notified());
            notified.as_mut().enable();
            if self.in_flight() == 0 {
                return;
            }
            notified.await;
        }
    }

    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::SeqCst);
    }
}

impl fmt::Debug for ShadowStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShadowStats")
            .field("mirrored", &self.mirrored())
            .field("dropped", &self.dropped())
            .field("compared", &self.compared())
            .field("disagreed", &self.disagreed())
            .field("candidate_failed", &self.candidate_failed())
            .field("write_failed", &self.write_failed())
            .field("in_flight", &self.in_flight())
            .finish()
    }
}

/// One candidate call in flight: holds its permit and keeps `in_flight`
/// counted until it ends, however it ends (a panicking callback included).
struct InFlight {
    stats: ShadowStats,
    _permit: OwnedSemaphorePermit,
}

impl InFlight {
    fn enter(stats: ShadowStats, permit: OwnedSemaphorePermit) -> InFlight {
        stats.inner.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight {
            stats,
            _permit: permit,
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.stats.inner.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.stats.inner.idle.notify_waiters();
        }
    }
}

/// `primary`'s answers, with `candidate` asked the same request off the
/// caller's path on a sample of the calls and compared with it (see the
/// [module docs](super)). The classifier answers to the primary's
/// [`model`](Classifier::model).
///
/// Only calls the primary answered are mirrored: a primary failure is returned
/// as it is, and there is nothing to compare it with. The candidate gets the
/// whole request (a model override included) under a context of its own with
/// the same call name: cancelling the caller's context after the primary has
/// answered does not stop it, and its own timeout and retries bound it. A
/// sampled call made outside a Tokio runtime is dropped.
///
/// ```
/// # use std::sync::Arc;
/// # use serde_json::json;
/// use toolnexus::classifier::*;
/// use toolnexus::compose::{ShadowOptions, shadow};
/// use toolnexus::judge::{noul, questions};
///
/// # fn answering(model: &'static str) -> Classifier {
/// #     create_classifier(ClassifierOptions {
/// #         style: ClassifierStyle::Custom,
/// #         evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
/// #             Box::pin(async move {
/// #                 Decision::from_value(&json!({"model": model, "answers": {"spam": {"type": "noul", "noul": 0.5}}}))
/// #                     .map_err(|e| e.to_string())
/// #             })
/// #         })),
/// #         ..Default::default()
/// #     })
/// #     .unwrap()
/// # }
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), ClassifierError> {
/// let options = ShadowOptions::new(0.5).with_seed(1);
/// let stats = options.stats.clone();
/// let judge = shadow(answering("jev-1.13"), answering("jev-2"), options);
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// for i in 0..100 {
///     assert_eq!(judge.evaluate(json!(i), &qs).await?.model, "jev-1.13");
/// }
/// stats.idle().await;
/// // A sampled call is mirrored, or dropped when the candidate is busy: here the
/// // loop never yields to the candidate's tasks until the bound is reached.
/// let sampled = stats.mirrored() + stats.dropped();
/// assert!((25..=75).contains(&sampled), "about half: {stats:?}");
/// assert_eq!(stats.compared(), stats.mirrored());
/// # Ok(())
/// # }
/// ```
pub fn shadow(primary: Classifier, candidate: Classifier, options: ShadowOptions) -> Classifier {
    let sample = if options.sample.is_nan() {
        0.0
    } else {
        options.sample.clamp(0.0, 1.0)
    };
    let model = primary.model().to_string();
    let permits = Arc::new(Semaphore::new(options.max_in_flight.max(1)));
    // Every answer is the primary's: its fingerprint passes on unchanged.
    let beneath = primary.clone();
    Classifier::from_evaluator(
        model,
        Shadow {
            primary,
            shared: Arc::new(ShadowShared {
                candidate,
                sample,
                seed: options.seed,
                calls: AtomicU64::new(0),
                permits,
                on_disagreement: options.on_disagreement,
                jsonl: options.jsonl,
                stats: options.stats,
            }),
        },
    )
    .layered_over(&beneath)
}

/// What a shadow's calls and candidate tasks share.
struct ShadowShared {
    candidate: Classifier,
    sample: f64,
    seed: u64,
    calls: AtomicU64,
    permits: Arc<Semaphore>,
    on_disagreement: Option<DisagreementFn>,
    jsonl: Option<PathBuf>,
    stats: ShadowStats,
}

/// What [`shadow`] runs.
struct Shadow {
    primary: Classifier,
    shared: Arc<ShadowShared>,
}

impl FullEvaluator for Shadow {
    fn call_full(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Evaluated, ClassifierError>> {
        let primary = self.primary.clone();
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let mirror = shared.picks().then(|| request.clone());
            let call_name = ctx.call_name.clone();
            let result = primary.evaluate_request(ctx, request).await;
            if let (Some(request), Ok(answered)) = (mirror, &result) {
                ShadowShared::mirror(&shared, call_name, request, answered.decision.clone());
            }
            result
        })
    }
}

/// The `n`-th output of SplitMix64 seeded with `seed`, as a uniform in [0, 1).
fn uniform(seed: u64, n: u64) -> f64 {
    const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut z = seed.wrapping_add(n.wrapping_add(1).wrapping_mul(GAMMA));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

impl ShadowShared {
    /// Whether this call is one of the sample.
    fn picks(&self) -> bool {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        self.sample > 0.0 && uniform(self.seed, n) < self.sample
    }

    /// Starts the candidate on `request` in a task of its own, unless the
    /// in-flight bound is reached.
    fn mirror(
        shared: &Arc<ShadowShared>,
        call_name: String,
        request: EvalRequest,
        primary: Decision,
    ) {
        let stats = &shared.stats;
        let (Ok(runtime), Ok(permit)) = (
            tokio::runtime::Handle::try_current(),
            Arc::clone(&shared.permits).try_acquire_owned(),
        ) else {
            ShadowStats::bump(&stats.inner.dropped);
            tracing::debug!(
                target: "toolnexus::compose",
                call_name = %call_name,
                dropped = stats.dropped(),
                "shadow: candidate busy, call not mirrored"
            );
            return;
        };
        ShadowStats::bump(&stats.inner.mirrored);
        let guard = InFlight::enter(stats.clone(), permit);
        let shared = Arc::clone(shared);
        runtime.spawn(async move {
            let _guard = guard;
            let ctx = EvalContext::new().with_call_name(call_name.clone());
            let state = request.state.clone();
            let started = Instant::now();
            let answered = shared.candidate.evaluate_request(ctx, request).await;
            let elapsed = started.elapsed();
            let report = Disagreement::new(
                call_name,
                state,
                primary,
                answered.map(|e| e.decision),
                elapsed,
            );
            shared.report(report).await;
        });
    }

    async fn report(&self, d: Disagreement) {
        let stats = &self.stats;
        ShadowStats::bump(&stats.inner.compared);
        match &d.candidate_error {
            Some(f) => {
                ShadowStats::bump(&stats.inner.candidate_failed);
                tracing::info!(
                    target: "toolnexus::compose",
                    call_name = %d.call_name,
                    kind = f.kind.as_str(),
                    status = f.status.unwrap_or(0),
                    error = %f.message,
                    "shadow: candidate failed"
                );
            }
            None => {
                let agrees = d.agrees();
                if !agrees {
                    ShadowStats::bump(&stats.inner.disagreed);
                }
                tracing::debug!(
                    target: "toolnexus::compose",
                    call_name = %d.call_name,
                    candidate_model = d.candidate_model.as_deref().unwrap_or(""),
                    agrees,
                    "shadow: compared"
                );
            }
        }
        if let Some(f) = &self.on_disagreement {
            f(&d);
        }
        let Some(path) = self.jsonl.clone() else {
            return;
        };
        let line = d.to_json().to_string().into_bytes();
        let written =
            tokio::task::spawn_blocking(move || crate::fs::append_line(&path, &line)).await;
        let failure = match written {
            Ok(Ok(())) => return,
            Ok(Err(e)) => e.to_string(),
            Err(e) => e.to_string(),
        };
        ShadowStats::bump(&stats.inner.write_failed);
        tracing::warn!(
            target: "toolnexus::compose",
            path = %self.jsonl.as_deref().unwrap_or(Path::new("")).display(),
            error = %failure,
            "shadow: cannot append to the JSONL file"
        );
    }
}
