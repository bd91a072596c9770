//! Caps on what a run spends (SPEC §19): US dollars, tokens and wall time.
//!
//! A [`Budget`] is a handle: clones share one budget, like a
//! [`Limiter`](crate::limit::Limiter), so one budget can sit in front of any
//! number of classifiers that draw on the same account. [`budgeted`] puts it in
//! front of one classifier:
//!
//! - **Before a request is sent** it reserves the request's estimated
//!   [`Spend`] (the caller's estimator: a closure over the [`EvalRequest`]). A
//!   request starts only while what is spent plus what is reserved stays under
//!   every cap; when the reservations of requests in flight fill a cap, a new
//!   request waits for one of them to settle. So the requests in flight can
//!   jointly overshoot a cap by at most one request's estimate (plus whatever
//!   the estimates fell short of the bills).
//! - **Once it is answered** the reservation settles on the usage the decision
//!   reports: its tokens (input and output), and its cost when the backend
//!   reported one, else the tokens priced at [`BudgetOptions::price`], else
//!   unknown. An unknown cost is never counted as $0 silently: it is counted in
//!   [`Spent::unknown_cost`], and the dollar cap then bounds only the costs that
//!   are known. Recorded styles (a tape, Static) report the usage they
//!   recorded, which is therefore counted as if billed: a cap can be rehearsed
//!   offline on a tape. A failed request releases its reservation.
//! - **When a cap is reached** (a settled spend at or over it, or the time cap
//!   passed) nothing new starts: [`Budget::reached`] names the cap and every
//!   later request is refused without being sent, with an error of its own
//!   kind ([`ClassifierError::is_cap_reached`]). Requests already in flight finish.
//!
//! The dollar estimate of a request is its estimator's when it gives one, else
//! its tokens at the dearer of [`BudgetOptions::price`] and the dollars per
//! token seen so far on answers whose cost is known (a backend may bill more
//! than a listed price); before any answer has settled, requests go one at a
//! time while a dollar cap is set, so the first bill is known before a second
//! request is sent.
//!
//! Composition: a cache in front of the budget (`caching(budgeted(…), …)`)
//! answers hits without reaching it, so hits cost nothing; a limiter lives in
//! the transport beneath (`ClassifierOptions::limiter`), so a request first
//! takes its share of the budget, then waits its turn with the limiter.
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use toolnexus::classifier::*;
//! use toolnexus::cost::budget::{Budget, BudgetOptions, Cap, Spend, budgeted};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), ClassifierError> {
//! let billed = create_classifier(ClassifierOptions {
//!     style: ClassifierStyle::Custom,
//!     evaluate: Some(Arc::new(|_ctx, _state, _qs| Box::pin(async {
//!         Decision::from_value(&json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": 0.9}},
//!             "usage": {"input_tokens": 300, "output_tokens": 0, "cost": 0.01}}))
//!             .map_err(|e| e.to_string())
//!     }))),
//!     ..Default::default()
//! })?;
//! let budget = Budget::new(BudgetOptions { max_usd: Some(0.025), ..Default::default() });
//! let judge = budgeted(billed, budget.clone(), |_req: &EvalRequest| Spend::tokens(300));
//! let qs = Questions::from([("spam".to_string(), NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into())]);
//! for _ in 0..3 {
//!     judge.evaluate(json!("WIN"), &qs).await?; // $0.01 each: the third takes it to $0.03
//! }
//! let e = judge.evaluate(json!("WIN"), &qs).await.unwrap_err();
//! assert!(e.is_cap_reached(), "{e}");
//! assert_eq!(budget.reached(), Some(Cap::Cost));
//! assert_eq!(budget.spent().calls, 3);
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::classifier::{
    BoxFuture, Classifier, ClassifierError, ClassifierUsage, EvalContext, EvalRequest, Evaluated,
    FullEvaluator,
};

/// What a request spends, or is estimated to: tokens (input and output) and
/// US dollars when known.
///
/// ```
/// use toolnexus::cost::budget::Spend;
/// let s = Spend::tokens(261).with_usd(0.00001);
/// assert_eq!((s.tokens, s.usd), (261, Some(0.00001)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Spend {
    /// Tokens, input and output together.
    pub tokens: u64,
    /// US dollars; `None`: unknown (never read as zero).
    pub usd: Option<f64>,
}

impl Spend {
    /// `tokens` tokens, dollars unknown.
    pub fn tokens(tokens: u64) -> Spend {
        Spend { tokens, usd: None }
    }

    /// With this many dollars.
    pub fn with_usd(mut self, usd: f64) -> Spend {
        self.usd = Some(usd);
        self
    }

    /// What a decision's usage says it spent: its input and output tokens
    /// (negative counts read as 0) and its reported cost.
    ///
    /// ```
    /// use toolnexus::classifier::ClassifierUsage;
    /// use toolnexus::cost::budget::Spend;
    /// let u = ClassifierUsage { input_tokens: 210, output_tokens: 24, cost: None };
    /// assert_eq!(Spend::of_usage(&u), Spend::tokens(234));
    /// ```
    pub fn of_usage(usage: &ClassifierUsage) -> Spend {
        let tokens = usage.input_tokens.max(0) as u64 + usage.output_tokens.max(0) as u64;
        Spend {
            tokens,
            usd: usage.cost.filter(|c| c.is_finite()),
        }
    }
}

/// A price per million tokens, for answers that report tokens but no cost.
///
/// ```
/// use toolnexus::cost::budget::TokenPrice;
/// let jev = TokenPrice { input_usd_per_million: 0.042, output_usd_per_million: 0.0 };
/// assert!((jev.usd(1_000_000) - 0.042).abs() < 1e-12);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenPrice {
    /// US dollars per million input tokens.
    pub input_usd_per_million: f64,
    /// US dollars per million output tokens.
    pub output_usd_per_million: f64,
}

impl TokenPrice {
    /// `tokens` priced as input tokens (what an estimate counts).
    pub fn usd(&self, tokens: u64) -> f64 {
        tokens as f64 * self.input_usd_per_million / 1e6
    }

    /// A usage priced: input and output tokens at their prices.
    pub fn usd_of(&self, usage: &ClassifierUsage) -> f64 {
        (usage.input_tokens.max(0) as f64 * self.input_usd_per_million
            + usage.output_tokens.max(0) as f64 * self.output_usd_per_million)
            / 1e6
    }
}

/// The caps of a [`Budget`]; `None` caps nothing.
///
/// ```
/// let o = toolnexus::cost::budget::BudgetOptions::default();
/// assert_eq!((o.max_usd, o.max_tokens, o.max_time, o.price), (None, None, None, None));
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BudgetOptions {
    /// US dollars, counting the costs that are known.
    pub max_usd: Option<f64>,
    /// Tokens, input and output together.
    pub max_tokens: Option<u64>,
    /// Wall time from [`Budget::new`]: no request starts after it.
    pub max_time: Option<Duration>,
    /// The price of answers that report tokens but no cost (`None`: their cost
    /// is unknown).
    pub price: Option<TokenPrice>,
}

/// Which cap stopped a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    /// [`BudgetOptions::max_usd`].
    Cost,
    /// [`BudgetOptions::max_tokens`].
    Tokens,
    /// [`BudgetOptions::max_time`].
    Time,
}

impl Cap {
    /// `cost`, `tokens` or `time`.
    ///
    /// ```
    /// assert_eq!(toolnexus::cost::budget::Cap::Tokens.as_str(), "tokens");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Cap::Cost => "cost",
            Cap::Tokens => "tokens",
            Cap::Time => "time",
        }
    }
}

impl fmt::Display for Cap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a budget has counted so far (settled requests only).
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Spent {
    /// Requests settled (answered and counted).
    pub calls: u64,
    /// Tokens, input and output together.
    pub tokens: u64,
    /// US dollars of the requests whose cost is known (reported or priced).
    pub usd: f64,
    /// Requests whose cost is unknown: not in `usd`.
    pub unknown_cost: u64,
    /// Requests in flight now.
    pub in_flight: usize,
    /// Requests refused because a cap was reached.
    pub refused: u64,
    /// Time since the budget was made.
    pub elapsed: Duration,
    /// Of `calls`, those counted by [`Budget::carry`]: spent by earlier runs
    /// of the same job, before this budget was made.
    pub earlier_calls: u64,
    /// Of `usd`, the dollars [`Budget::carry`] counted.
    pub earlier_usd: f64,
    /// Of `tokens`, the tokens [`Budget::carry`] counted.
    pub earlier_tokens: u64,
}

/// A request was refused: `cap` is reached. The source of the
/// [`ClassifierError`] a [`budgeted`] classifier returns for it.
///
/// ```
/// use toolnexus::cost::budget::{Cap, CapReached};
/// assert_eq!(CapReached { cap: Cap::Tokens }.to_string(), "budget: the tokens cap is reached");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapReached {
    /// The cap.
    pub cap: Cap,
}

impl fmt::Display for CapReached {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "budget: the {} cap is reached", self.cap)
    }
}

impl std::error::Error for CapReached {}

struct State {
    options: BudgetOptions,
    deadline: Option<Instant>,
    started: Instant,
    spent_tokens: u64,
    spent_usd: f64,
    unknown_cost: u64,
    calls: u64,
    reserved_tokens: u64,
    reserved_usd: f64,
    in_flight: usize,
    /// Dollars and tokens of the settled answers whose cost is known: the
    /// rate an estimate without dollars is priced at.
    known_usd: f64,
    known_tokens: u64,
    reached: Option<Cap>,
    refused: u64,
    earlier_calls: u64,
    earlier_usd: f64,
    earlier_tokens: u64,
}

enum Check {
    Go(f64),
    Wait,
    Refuse(Cap),
}

impl State {
    /// The dollars an estimate reserves; `None`: no way to price it yet.
    fn usd_of(&self, estimate: &Spend) -> Option<f64> {
        if let Some(usd) = estimate.usd.filter(|u| u.is_finite()) {
            return Some(usd.max(0.0));
        }
        // The dearer of the listed price and the rate the answers so far were
        // billed at: a backend that reports more than the list price (or a
        // price that is stale) must not let the requests in flight overshoot.
        let listed = self.options.price.map(|p| p.usd(estimate.tokens));
        let seen = (self.known_tokens > 0)
            .then(|| self.known_usd / self.known_tokens as f64 * estimate.tokens as f64);
        match (listed, seen) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    fn check(&mut self, now: Instant, estimate: &Spend) -> Check {
        if let Some(cap) = self.reached {
            return Check::Refuse(cap);
        }
        let over = if self.deadline.is_some_and(|d| now >= d) {
            Some(Cap::Time)
        } else if self
            .options
            .max_tokens
            .is_some_and(|m| self.spent_tokens >= m)
        {
            Some(Cap::Tokens)
        } else if self.options.max_usd.is_some_and(|m| self.spent_usd >= m) {
            Some(Cap::Cost)
        } else {
            None
        };
        if let Some(cap) = over {
            self.reached = Some(cap);
            return Check::Refuse(cap);
        }
        let usd = self.usd_of(estimate);
        let tokens_full = self
            .options
            .max_tokens
            .is_some_and(|m| self.spent_tokens + self.reserved_tokens >= m);
        let usd_full = self
            .options
            .max_usd
            .is_some_and(|m| self.spent_usd + self.reserved_usd >= m);
        // Nothing settled yet under a dollar cap: one at a time, so the first
        // bill is known before a second request is sent (neither an estimate
        // nor a listed price is a bill: a backend may charge more).
        // Answers that cost nothing (a cascade's student) teach no rate.
        let unpriced =
            self.options.max_usd.is_some() && self.known_tokens == 0 && self.unknown_cost == 0;
        if self.in_flight > 0 && (tokens_full || usd_full || unpriced) {
            return Check::Wait;
        }
        Check::Go(usd.unwrap_or(0.0))
    }
}

struct Inner {
    state: Mutex<State>,
    settled: Notify,
}

/// A shared budget: clones share it (see the [module docs](self)).
#[derive(Clone)]
pub struct Budget {
    inner: Arc<Inner>,
}

impl fmt::Debug for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Budget")
            .field("spent", &self.spent())
            .field("reached", &self.reached())
            .finish_non_exhaustive()
    }
}

impl Budget {
    /// A budget with these caps; the time cap counts from now.
    ///
    /// ```
    /// use toolnexus::cost::budget::{Budget, BudgetOptions};
    /// let b = Budget::new(BudgetOptions { max_tokens: Some(10_000), ..Default::default() });
    /// assert_eq!((b.spent().tokens, b.reached()), (0, None));
    /// ```
    pub fn new(options: BudgetOptions) -> Budget {
        let started = Instant::now();
        let deadline = options.max_time.map(|t| started + t);
        Budget {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    options,
                    deadline,
                    started,
                    spent_tokens: 0,
                    spent_usd: 0.0,
                    unknown_cost: 0,
                    calls: 0,
                    reserved_tokens: 0,
                    reserved_usd: 0.0,
                    in_flight: 0,
                    known_usd: 0.0,
                    known_tokens: 0,
                    reached: None,
                    refused: 0,
                    earlier_calls: 0,
                    earlier_usd: 0.0,
                    earlier_tokens: 0,
                }),
                settled: Notify::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain numbers behind: use them.
        self.inner
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The caps.
    pub fn options(&self) -> BudgetOptions {
        self.lock().options.clone()
    }

    /// Waits until a request estimated at `estimate` may start and reserves
    /// it; refused once a cap is reached. Dropping the future mid-wait
    /// reserves nothing.
    ///
    /// ```
    /// use toolnexus::cost::budget::{Budget, BudgetOptions, Cap, Spend};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let b = Budget::new(BudgetOptions { max_tokens: Some(500), ..Default::default() });
    /// let r = b.reserve(Spend::tokens(300)).await.unwrap();
    /// r.settle(Spend::tokens(520));
    /// assert_eq!(b.reserve(Spend::tokens(300)).await.unwrap_err().cap, Cap::Tokens);
    /// # }
    /// ```
    pub async fn reserve(&self, estimate: Spend) -> Result<Reservation, CapReached> {
        loop {
            let settled = self.inner.settled.notified();
            tokio::pin!(settled);
            settled.as_mut().enable();
            let deadline = {
                let mut s = self.lock();
                match s.check(Instant::now(), &estimate) {
                    Check::Go(usd) => {
                        s.in_flight += 1;
                        s.reserved_tokens += estimate.tokens;
                        s.reserved_usd += usd;
                        return Ok(Reservation {
                            budget: self.clone(),
                            tokens: estimate.tokens,
                            usd,
                            done: false,
                        });
                    }
                    Check::Refuse(cap) => {
                        s.refused += 1;
                        return Err(CapReached { cap });
                    }
                    Check::Wait => s.deadline,
                }
            };
            match deadline {
                Some(d) => {
                    // Woken by a settlement or the time cap, whichever is first.
                    let _ = tokio::time::timeout_at(d, &mut settled).await;
                }
                None => settled.await,
            }
        }
    }

    /// The cap that stopped this budget, once one has.
    pub fn reached(&self) -> Option<Cap> {
        self.lock().reached
    }

    /// What has been counted so far.
    pub fn spent(&self) -> Spent {
        let s = self.lock();
        Spent {
            calls: s.calls,
            tokens: s.spent_tokens,
            usd: s.spent_usd,
            unknown_cost: s.unknown_cost,
            in_flight: s.in_flight,
            refused: s.refused,
            elapsed: s.started.elapsed(),
            earlier_calls: s.earlier_calls,
            earlier_usd: s.earlier_usd,
            earlier_tokens: s.earlier_tokens,
        }
    }

    /// Counts what earlier runs of the same job spent (a resumed run: the
    /// answers its out file already holds), so a cap holds for the job, not
    /// for each run. `calls` answers spent `spend`: its tokens, and its
    /// dollars when known (`None`: priced at [`BudgetOptions::price`] as
    /// input tokens when there is one, else counted as `calls` unknown
    /// costs). Counted as settled: a cap they reach refuses the first new
    /// request, unsent.
    ///
    /// ```
    /// use toolnexus::cost::budget::{Budget, BudgetOptions, Cap, Spend};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let b = Budget::new(BudgetOptions { max_usd: Some(0.05), ..Default::default() });
    /// b.carry(5, Spend::tokens(1_500).with_usd(0.05));
    /// assert_eq!(b.reserve(Spend::tokens(300)).await.unwrap_err().cap, Cap::Cost);
    /// let spent = b.spent();
    /// assert_eq!((spent.calls, spent.earlier_calls, spent.tokens), (5, 5, 1_500));
    /// # }
    /// ```
    pub fn carry(&self, calls: u64, spend: Spend) {
        if calls == 0 && spend.tokens == 0 {
            return;
        }
        let spend = self.priced(spend, None);
        let mut s = self.lock();
        s.calls += calls;
        s.earlier_calls += calls;
        s.spent_tokens = s.spent_tokens.saturating_add(spend.tokens);
        s.earlier_tokens = s.earlier_tokens.saturating_add(spend.tokens);
        match spend.usd.filter(|u| u.is_finite()).map(|u| u.max(0.0)) {
            Some(u) => {
                s.spent_usd += u;
                s.earlier_usd += u;
                s.known_usd += u;
                s.known_tokens = s.known_tokens.saturating_add(spend.tokens);
            }
            None => s.unknown_cost += calls,
        }
    }

    fn release(&self, tokens: u64, usd: f64, actual: Option<Spend>) {
        {
            let mut s = self.lock();
            s.in_flight = s.in_flight.saturating_sub(1);
            s.reserved_tokens = s.reserved_tokens.saturating_sub(tokens);
            s.reserved_usd = if s.in_flight == 0 {
                0.0
            } else {
                (s.reserved_usd - usd).max(0.0)
            };
            if let Some(a) = actual {
                s.calls += 1;
                s.spent_tokens += a.tokens;
                let usd = a.usd.filter(|u| u.is_finite()).map(|u| u.max(0.0));
                match usd {
                    Some(u) => {
                        s.spent_usd += u;
                        s.known_usd += u;
                        s.known_tokens += a.tokens;
                    }
                    None => s.unknown_cost += 1,
                }
            }
        }
        self.inner.settled.notify_waiters();
    }
}

/// A request's share of a [`Budget`], held while it is in flight. Settle it
/// with what the request spent; dropped unsettled, it releases the share and
/// counts nothing (a failed request).
#[derive(Debug)]
pub struct Reservation {
    budget: Budget,
    tokens: u64,
    usd: f64,
    done: bool,
}

impl Reservation {
    /// Counts what the request spent. A spend without dollars is priced at
    /// the budget's [`BudgetOptions::price`] when it has one, else counted as
    /// unknown.
    pub fn settle(mut self, actual: Spend) {
        self.done = true;
        self.budget.release(
            self.tokens,
            self.usd,
            Some(self.budget.priced(actual, None)),
        );
    }

    /// Counts a decision's usage: its reported cost, else its tokens priced
    /// (input and output at their prices), else unknown.
    pub fn settle_usage(mut self, usage: &ClassifierUsage) {
        self.done = true;
        let actual = self.budget.priced(Spend::of_usage(usage), Some(usage));
        self.budget.release(self.tokens, self.usd, Some(actual));
    }
}

impl Budget {
    fn priced(&self, mut actual: Spend, usage: Option<&ClassifierUsage>) -> Spend {
        if actual.usd.is_none()
            && let Some(p) = self.lock().options.price
        {
            actual.usd = Some(match usage {
                Some(u) => p.usd_of(u),
                None => p.usd(actual.tokens),
            });
        }
        actual
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.done {
            self.budget.release(self.tokens, self.usd, None);
        }
    }
}

/// The estimator a [`budgeted`] classifier reserves with.
type Estimate = dyn Fn(&EvalRequest) -> Spend + Send + Sync;

struct Budgeted {
    inner: Classifier,
    budget: Budget,
    estimate: Arc<Estimate>,
}

impl FullEvaluator for Budgeted {
    fn call_full(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Evaluated, ClassifierError>> {
        let (inner, budget) = (self.inner.clone(), self.budget.clone());
        let estimate = (self.estimate)(&request);
        Box::pin(async move {
            let reserved = {
                let cancelled = ctx.cancel.cancelled();
                let reserve = budget.reserve(estimate);
                futures::pin_mut!(cancelled, reserve);
                // Cancellation first: a cancelled call reserves nothing.
                match futures::future::select(cancelled, reserve).await {
                    futures::future::Either::Left(_) => return Err(ClassifierError::cancelled()),
                    futures::future::Either::Right((r, _)) => r,
                }
            };
            let reservation = match reserved {
                Ok(r) => r,
                Err(reached) => {
                    return Err(
                        ClassifierError::cap_reached(reached.to_string()).with_source(reached)
                    );
                }
            };
            let result = inner.evaluate_request(ctx, request).await;
            if let Ok(done) = &result {
                // A hit, or an answer made on this machine (a cascade's
                // student): nothing billed.
                let usage = &done.decision.usage;
                if done.cache_hit
                    || (usage.cost.is_none()
                        && done.cost.source == Some(crate::cost::CostSource::Local))
                {
                    reservation.settle(Spend::default().with_usd(0.0));
                } else if usage.cost.is_none()
                    && let Some(usd) = done.cost.usd
                {
                    // Priced by a layer beneath, on the model that answered
                    // (a cascade's teacher, say): that is the bill.
                    reservation.settle(Spend::of_usage(usage).with_usd(usd));
                } else {
                    reservation.settle_usage(usage);
                }
            }
            result
        })
    }
}

/// `inner` behind `budget`: each request reserves `estimate(request)` before
/// it is sent and settles on the usage its decision reports; once a cap is
/// reached every new request is refused unsent (see the [module docs](self)).
/// A request waiting for its share stops with a cancellation error when its
/// context is cancelled; dropped mid-flight, its share is released.
///
/// ```
/// use toolnexus::classifier::*;
/// use toolnexus::cost::budget::{Budget, BudgetOptions, Spend, budgeted};
/// let inner = create_classifier(ClassifierOptions {
///     style: ClassifierStyle::Custom,
///     model: "rule".into(),
///     evaluate: Some(std::sync::Arc::new(|_ctx, _state, _qs| Box::pin(async { Err("down".to_string()) }))),
///     ..Default::default()
/// })?;
/// let budget = Budget::new(BudgetOptions { max_tokens: Some(1_000), ..Default::default() });
/// let judge = budgeted(inner, budget, |r: &EvalRequest| Spend::tokens(261 + 8 * r.questions.len() as u64));
/// assert_eq!(judge.model(), "rule");
/// # Ok::<(), ClassifierError>(())
/// ```
pub fn budgeted(
    inner: Classifier,
    budget: Budget,
    estimate: impl Fn(&EvalRequest) -> Spend + Send + Sync + 'static,
) -> Classifier {
    // A budget changes no answer: the stack's fingerprint passes on.
    let beneath = inner.clone();
    Classifier::from_evaluator(
        inner.model().to_string(),
        Budgeted {
            inner,
            budget,
            estimate: Arc::new(estimate),
        },
    )
    .layered_over(&beneath)
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;

    use super::*;
    use crate::classifier::{
        ClassifierOptions, ClassifierStyle, Decision, NoulQuestion, Questions,
    };

    /// SPEC §19's billing shape, as the tests' estimator.
    fn shape(r: &EvalRequest) -> Spend {
        Spend::tokens(261 + 8 * r.questions.len() as u64)
    }

    fn qs() -> Questions {
        Questions::from([(
            "spam".to_string(),
            NoulQuestion {
                instructions: "Is it spam?".into(),
                criteria: None,
            }
            .into(),
        )])
    }

    /// A backend billing `tokens` and `cost` per call after `delay_ms`,
    /// counting its calls and the most in flight at once.
    fn billed(
        tokens: i64,
        cost: Option<f64>,
        delay_ms: u64,
        calls: Arc<AtomicUsize>,
        peak: Arc<AtomicUsize>,
    ) -> Classifier {
        let now = Arc::new(AtomicUsize::new(0));
        crate::classifier::create_classifier(ClassifierOptions {
            style: ClassifierStyle::Custom,
            evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
                let (calls, peak, now) = (calls.clone(), peak.clone(), now.clone());
                Box::pin(async move {
                    calls.fetch_add(1, Ordering::SeqCst);
                    let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(n, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                    now.fetch_sub(1, Ordering::SeqCst);
                    let mut usage = json!({"input_tokens": tokens, "output_tokens": 0});
                    if let Some(c) = cost {
                        usage["cost"] = json!(c);
                    }
                    Decision::from_value(&json!({"model": "m",
                        "answers": {"spam": {"type": "noul", "noul": 0.5}}, "usage": usage}))
                    .map_err(|e| e.to_string())
                })
            })),
            ..Default::default()
        })
        .unwrap()
    }

    async fn run_all(judge: &Classifier, n: usize) -> (usize, usize) {
        let qs = qs();
        let results =
            futures::future::join_all((0..n).map(|i| judge.evaluate(json!(i), &qs))).await;
        let ok = results.iter().filter(|r| r.is_ok()).count();
        let refused = results
            .iter()
            .filter(|r| r.as_ref().is_err_and(|e| e.is_cap_reached()))
            .count();
        assert_eq!(ok + refused, n, "every failure is a refusal");
        (ok, refused)
    }

    #[tokio::test(start_paused = true)]
    async fn the_token_cap_stops_new_requests_and_bounds_the_overshoot() {
        let (calls, peak) = (Arc::default(), Arc::default());
        let inner = billed(269, None, 50, Arc::clone(&calls), Arc::clone(&peak));
        let budget = Budget::new(BudgetOptions {
            max_tokens: Some(2_000),
            ..Default::default()
        });
        let judge = budgeted(inner, budget.clone(), shape);
        let (ok, refused) = run_all(&judge, 50).await;
        let spent = budget.spent();
        assert_eq!(budget.reached(), Some(Cap::Tokens));
        assert_eq!(spent.calls as usize, ok);
        assert_eq!(
            calls.load(Ordering::SeqCst),
            ok,
            "a refused request is never sent"
        );
        assert!(spent.tokens >= 2_000, "stops only once the cap is spent");
        assert!(
            spent.tokens <= 2_000 + 269,
            "overshoot at most one request's estimate: {spent:?}"
        );
        assert_eq!(refused, 50 - ok);
        assert!(
            peak.load(Ordering::SeqCst) > 1,
            "requests still run together"
        );
        assert_eq!(spent.in_flight, 0);
        assert_eq!(
            spent.unknown_cost as usize, ok,
            "no cost reported, no price"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn reported_costs_are_counted_and_the_first_bill_is_awaited() {
        let (calls, peak) = (Arc::default(), Arc::default());
        let inner = billed(300, Some(0.01), 20, Arc::clone(&calls), Arc::clone(&peak));
        let budget = Budget::new(BudgetOptions {
            max_usd: Some(0.05),
            ..Default::default()
        });
        let judge = budgeted(inner, budget.clone(), shape);
        let (ok, _) = run_all(&judge, 40).await;
        let spent = budget.spent();
        assert_eq!(budget.reached(), Some(Cap::Cost));
        assert!(
            (0.05..=0.05 + 0.01 + 1e-9).contains(&spent.usd),
            "overshoot at most one request's cost: {spent:?}"
        );
        assert_eq!(ok, calls.load(Ordering::SeqCst));
        assert_eq!(spent.unknown_cost, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_price_prices_usage_without_a_cost() {
        let (calls, peak) = (Arc::default(), Arc::default());
        let inner = billed(1_000_000, None, 1, calls, peak);
        let budget = Budget::new(BudgetOptions {
            max_usd: Some(0.1),
            price: Some(TokenPrice {
                input_usd_per_million: 0.042,
                output_usd_per_million: 0.0,
            }),
            ..Default::default()
        });
        let judge = budgeted(inner, budget.clone(), |_: &EvalRequest| {
            Spend::tokens(1_000_000)
        });
        let (ok, _) = run_all(&judge, 10).await;
        assert_eq!(ok, 3, "0.042 × 3 = 0.126 ≥ 0.1");
        assert!((budget.spent().usd - 0.126).abs() < 1e-9);
    }

    #[tokio::test(start_paused = true)]
    async fn the_time_cap_starts_nothing_after_it() {
        let (calls, peak) = (Arc::default(), Arc::default());
        let inner = billed(10, None, 1_000, Arc::clone(&calls), peak);
        let budget = Budget::new(BudgetOptions {
            max_time: Some(Duration::from_millis(2_500)),
            ..Default::default()
        });
        let judge = budgeted(inner, budget.clone(), shape);
        let mut ok = 0;
        for i in 0..10 {
            match judge.evaluate(json!(i), &qs()).await {
                Ok(_) => ok += 1,
                Err(e) => assert!(e.is_cap_reached(), "{e}"),
            }
        }
        assert_eq!(ok, 3, "started at 0, 1 and 2 s");
        assert_eq!(budget.reached(), Some(Cap::Time));
    }

    #[tokio::test(start_paused = true)]
    async fn failures_release_their_share_and_clones_share_the_budget() {
        let failing = crate::classifier::create_classifier(ClassifierOptions {
            style: ClassifierStyle::Custom,
            evaluate: Some(Arc::new(|_ctx, _state, _qs| {
                Box::pin(async { Err("down".to_string()) })
            })),
            ..Default::default()
        })
        .unwrap();
        let budget = Budget::new(BudgetOptions {
            max_tokens: Some(100),
            ..Default::default()
        });
        let judge = budgeted(failing, budget.clone(), shape);
        for _ in 0..3 {
            let e = judge.evaluate(json!(1), &qs()).await.unwrap_err();
            assert!(!e.is_cap_reached(), "a failure is not a refusal");
        }
        let other = budget.clone();
        let s = other.spent();
        assert_eq!((s.calls, s.tokens, s.in_flight), (0, 0, 0));
        let r = other.reserve(Spend::tokens(150)).await.unwrap();
        r.settle(Spend::tokens(150));
        assert_eq!(budget.spent().tokens, 150, "a clone is the same budget");
        assert_eq!(
            judge
                .evaluate(json!(1), &qs())
                .await
                .unwrap_err()
                .source()
                .map(|s| s.to_string()),
            Some("budget: the tokens cap is reached".to_string())
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_for_a_full_cap_ends_when_a_reservation_is_released() {
        let budget = Budget::new(BudgetOptions {
            max_tokens: Some(100),
            ..Default::default()
        });
        let held = budget.reserve(Spend::tokens(100)).await.unwrap();
        let waited =
            tokio::time::timeout(Duration::from_secs(1), budget.reserve(Spend::tokens(10))).await;
        assert!(waited.is_err(), "waits while the reservation fills the cap");
        assert_eq!(
            budget.spent().in_flight,
            1,
            "the abandoned wait reserved nothing"
        );
        drop(held);
        let r = budget.reserve(Spend::tokens(10)).await.unwrap();
        assert_eq!(budget.spent().in_flight, 1);
        r.settle(Spend::tokens(10));
        let s = budget.spent();
        assert_eq!(
            (s.calls, s.tokens, s.in_flight),
            (1, 10, 0),
            "a failure counts nothing"
        );
    }
}
