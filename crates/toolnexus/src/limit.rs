//! A shared rate limiter (SPEC §12): requests per minute, tokens per minute,
//! adaptive concurrency, and one pause for everyone when the backend says
//! "slow down".
//!
//! A [`Limiter`] is a handle: clones share one budget, so one limiter can sit
//! in any number of classifiers and chat clients (`ClassifierOptions::limiter`,
//! `ClientOptions::limiter`) that draw on the same account. Every HTTP attempt
//! (retries included) takes a [`Permit`] first and reports how it went:
//!
//! - **Requests per minute** follow an even schedule (`60 s / rpm` apart): a
//!   start that a late timer delayed does not delay the ones after it, and an
//!   idle spell does not build up a burst, so a backend that enforces the same
//!   budget with a token bucket (of a few requests' burst) need not refuse one.
//! - **Tokens per minute**: a bucket holding ten seconds of budget, refilled
//!   continuously. A request is charged its estimate (request bytes / 4) up
//!   front; [`Limiter::correct`] settles the difference once the backend's
//!   `usage.input_tokens` is known.
//! - **Concurrency** adapts (AIMD): each success adds `1/limit`, up to
//!   `max_concurrency`; a 429 or 529 halves it (at most once a second), down to 1.
//! - **A 429 or 529 pauses the whole limiter** until the backend's
//!   `Retry-After` (or, without one, 1 s doubling per throttle in a row, capped
//!   at 60 s): every caller waits, not only the one that was refused.
//!
//! Waiting never drops work: a caller waits its turn or, when its context is
//! cancelled, stops with the usual cancellation error.
//!
//! ```
//! use std::time::Duration;
//! use toolnexus::limit::{Limiter, LimiterOptions, Outcome};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let limiter = Limiter::new(LimiterOptions { requests_per_minute: Some(6_000), ..Default::default() });
//! let shared = limiter.clone(); // the same budget
//! let cancel = tokio_util::sync::CancellationToken::new();
//! let permit = shared.acquire(100, &cancel).await.expect("not cancelled");
//! permit.finish(Outcome::Throttled { retry_after: Some(Duration::from_millis(20)) });
//! assert!(limiter.stats().paused, "a 429 pauses every handle");
//! # }
//! ```

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Budgets and bounds of a [`Limiter`].
///
/// ```
/// let o = toolnexus::limit::LimiterOptions::default();
/// assert_eq!((o.requests_per_minute, o.tokens_per_minute), (None, None));
/// assert_eq!((o.max_concurrency, o.initial_concurrency), (64, 8));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimiterOptions {
    /// Requests started per minute, spaced evenly; `None`: no limit.
    pub requests_per_minute: Option<u32>,
    /// Estimated tokens per minute; `None`: no limit.
    pub tokens_per_minute: Option<u64>,
    /// The most requests in flight the adaptive limit may reach.
    pub max_concurrency: usize,
    /// Where the adaptive limit starts.
    pub initial_concurrency: usize,
}

impl Default for LimiterOptions {
    fn default() -> Self {
        LimiterOptions {
            requests_per_minute: None,
            tokens_per_minute: None,
            max_concurrency: 64,
            initial_concurrency: 8,
        }
    }
}

/// How an attempt went, for [`Permit::finish`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The backend answered (2xx).
    Success,
    /// 429 or 529: slow down, for `retry_after` when the backend said.
    Throttled {
        /// The backend's `Retry-After`.
        retry_after: Option<Duration>,
    },
    /// Any other failure: it says nothing about the budget.
    Failed,
}

/// What a limiter is doing now.
///
/// ```
/// let l = toolnexus::limit::Limiter::new(Default::default());
/// let s = l.stats();
/// assert_eq!((s.in_flight, s.concurrency, s.paused, s.throttled), (0, 8, false, 0));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct LimiterStats {
    /// Permits held.
    pub in_flight: usize,
    /// The adaptive concurrency limit, rounded down.
    pub concurrency: usize,
    /// Whether a 429/529 pause is in force.
    pub paused: bool,
    /// 429/529 answers reported so far.
    pub throttled: u64,
    /// Permits granted so far.
    pub granted: u64,
}

/// The most a pause without `Retry-After` grows to.
const MAX_PAUSE: Duration = Duration::from_secs(60);

struct State {
    options: LimiterOptions,
    /// The earliest start of the next request (requests per minute).
    next_start: Instant,
    /// Tokens available now (may go negative after a large request).
    tokens: f64,
    refilled_at: Instant,
    /// AIMD concurrency limit.
    limit: f64,
    in_flight: usize,
    paused_until: Option<Instant>,
    throttles_in_a_row: u32,
    last_decrease: Option<Instant>,
    throttled: u64,
    granted: u64,
}

impl State {
    fn token_capacity(&self) -> f64 {
        self.options
            .tokens_per_minute
            .map_or(f64::INFINITY, |t| (t as f64 / 6.0).max(1.0))
    }

    fn refill(&mut self, now: Instant) {
        if let Some(tpm) = self.options.tokens_per_minute {
            let per_sec = tpm as f64 / 60.0;
            let dt = now
                .saturating_duration_since(self.refilled_at)
                .as_secs_f64();
            self.tokens = (self.tokens + dt * per_sec).min(self.token_capacity());
        }
        self.refilled_at = now;
    }

    /// Whether a request of `tokens` may start at `now`, and if not, what it
    /// waits for.
    fn wait(&mut self, now: Instant, tokens: u64) -> Wait {
        if let Some(until) = self.paused_until {
            if until > now {
                return Wait::For(until - now);
            }
            self.paused_until = None;
        }
        if self.in_flight >= (self.limit.floor() as usize).max(1) {
            return Wait::Slot;
        }
        if self.options.requests_per_minute.is_some() && self.next_start > now {
            return Wait::For(self.next_start - now);
        }
        if let Some(tpm) = self.options.tokens_per_minute {
            self.refill(now);
            let need = (tokens as f64).min(self.token_capacity());
            if self.tokens < need {
                let per_sec = tpm as f64 / 60.0;
                return Wait::For(Duration::from_secs_f64((need - self.tokens) / per_sec));
            }
        }
        Wait::Go
    }

    fn take(&mut self, now: Instant, tokens: u64) {
        self.in_flight += 1;
        self.granted += 1;
        if let Some(rpm) = self.options.requests_per_minute {
            let interval = Duration::from_secs_f64(60.0 / f64::from(rpm.max(1)));
            // Keep to the schedule: a waiter that woke a little late does not
            // push every later start back (timers fire late by a millisecond or
            // so); after an idle spell the schedule restarts from now, so no
            // burst builds up.
            let on_schedule = self.next_start + interval >= now;
            self.next_start = if on_schedule { self.next_start } else { now } + interval;
        }
        if self.options.tokens_per_minute.is_some() {
            self.tokens -= tokens as f64;
        }
    }
}

enum Wait {
    Go,
    /// Until a permit is released.
    Slot,
    For(Duration),
}

struct Inner {
    state: Mutex<State>,
    released: Notify,
}

/// A shared budget. Cheap to clone; clones share it.
#[derive(Clone)]
pub struct Limiter {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limiter")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Limiter {
    /// A limiter with these budgets.
    ///
    /// ```
    /// use toolnexus::limit::{Limiter, LimiterOptions};
    /// let l = Limiter::new(LimiterOptions { tokens_per_minute: Some(250_000), ..Default::default() });
    /// assert_eq!(l.stats().in_flight, 0);
    /// ```
    pub fn new(options: LimiterOptions) -> Limiter {
        let now = Instant::now();
        let max = options.max_concurrency.max(1);
        let initial = options.initial_concurrency.clamp(1, max);
        let mut state = State {
            options: LimiterOptions {
                max_concurrency: max,
                ..options
            },
            next_start: now,
            tokens: 0.0,
            refilled_at: now,
            limit: initial as f64,
            in_flight: 0,
            paused_until: None,
            throttles_in_a_row: 0,
            last_decrease: None,
            throttled: 0,
            granted: 0,
        };
        state.tokens = state.token_capacity();
        Limiter {
            inner: Arc::new(Inner {
                state: Mutex::new(state),
                released: Notify::new(),
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

    /// Waits for a turn for a request estimated at `tokens`; `None` when
    /// `cancel` fires first.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let l = toolnexus::limit::Limiter::new(Default::default());
    /// let cancel = tokio_util::sync::CancellationToken::new();
    /// let p = l.acquire(10, &cancel).await.unwrap();
    /// assert_eq!(l.stats().in_flight, 1);
    /// drop(p);
    /// assert_eq!(l.stats().in_flight, 0);
    /// cancel.cancel();
    /// assert!(l.acquire(10, &cancel).await.is_none());
    /// # }
    /// ```
    pub async fn acquire(&self, tokens: u64, cancel: &CancellationToken) -> Option<Permit> {
        loop {
            if cancel.is_cancelled() {
                return None;
            }
            let released = self.inner.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            let wait = {
                let mut s = self.lock();
                let now = Instant::now();
                match s.wait(now, tokens) {
                    Wait::Go => {
                        s.take(now, tokens);
                        return Some(Permit {
                            limiter: self.clone(),
                            done: false,
                        });
                    }
                    other => other,
                }
            };
            match wait {
                Wait::Go => unreachable!("returned above"),
                Wait::Slot => {
                    cancel.run_until_cancelled(released).await?;
                }
                Wait::For(d) => {
                    cancel.run_until_cancelled(tokio::time::sleep(d)).await?;
                }
            }
        }
    }

    /// Settles a request's token charge once the backend's count is known:
    /// `estimated` was charged, `actual` was used.
    ///
    /// ```
    /// use toolnexus::limit::{Limiter, LimiterOptions};
    /// let l = Limiter::new(LimiterOptions { tokens_per_minute: Some(600), ..Default::default() });
    /// l.correct(10, 40); // used 30 more than charged
    /// ```
    pub fn correct(&self, estimated: u64, actual: u64) {
        let mut s = self.lock();
        if s.options.tokens_per_minute.is_some() {
            let cap = s.token_capacity();
            s.tokens = (s.tokens + estimated as f64 - actual as f64).min(cap);
        }
    }

    /// What the limiter is doing now.
    pub fn stats(&self) -> LimiterStats {
        let s = self.lock();
        LimiterStats {
            in_flight: s.in_flight,
            concurrency: s.limit.floor() as usize,
            paused: s.paused_until.is_some_and(|u| u > Instant::now()),
            throttled: s.throttled,
            granted: s.granted,
        }
    }

    fn release(&self, outcome: Outcome) {
        {
            let mut s = self.lock();
            s.in_flight = s.in_flight.saturating_sub(1);
            let now = Instant::now();
            match outcome {
                Outcome::Success => {
                    s.throttles_in_a_row = 0;
                    let max = s.options.max_concurrency as f64;
                    s.limit = (s.limit + 1.0 / s.limit).min(max);
                }
                Outcome::Throttled { retry_after } => {
                    s.throttled += 1;
                    let recent = s
                        .last_decrease
                        .is_some_and(|t| now.saturating_duration_since(t) < Duration::from_secs(1));
                    if !recent {
                        s.limit = (s.limit / 2.0).max(1.0);
                        s.last_decrease = Some(now);
                    }
                    let pause = retry_after.unwrap_or_else(|| {
                        Duration::from_secs(1u64 << s.throttles_in_a_row.min(6)).min(MAX_PAUSE)
                    });
                    s.throttles_in_a_row = s.throttles_in_a_row.saturating_add(1);
                    let until = now + pause.min(MAX_PAUSE);
                    s.paused_until = Some(s.paused_until.map_or(until, |u| u.max(until)));
                    // Nobody starts before the pause ends.
                    s.next_start = s.next_start.max(until);
                }
                Outcome::Failed => {}
            }
        }
        self.inner.released.notify_waiters();
    }
}

/// A turn to send one request. Report how it went with [`finish`](Permit::finish);
/// dropping it unreported counts as [`Outcome::Failed`].
pub struct Permit {
    limiter: Limiter,
    done: bool,
}

impl std::fmt::Debug for Permit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Permit").finish_non_exhaustive()
    }
}

impl Permit {
    /// Releases the turn, telling the limiter how the attempt went.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use toolnexus::limit::{Limiter, Outcome};
    /// let l = Limiter::new(Default::default());
    /// let p = l.acquire(1, &Default::default()).await.unwrap();
    /// p.finish(Outcome::Success);
    /// assert_eq!(l.stats().granted, 1);
    /// # }
    /// ```
    pub fn finish(mut self, outcome: Outcome) {
        self.done = true;
        self.limiter.release(outcome);
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if !self.done {
            self.limiter.release(Outcome::Failed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token() -> CancellationToken {
        CancellationToken::new()
    }

    #[tokio::test(start_paused = true)]
    async fn requests_per_minute_are_spaced_evenly() {
        let l = Limiter::new(LimiterOptions {
            requests_per_minute: Some(600),
            ..Default::default()
        });
        let start = Instant::now();
        let mut starts = Vec::new();
        for _ in 0..5 {
            let p = l.acquire(0, &token()).await.unwrap();
            starts.push(start.elapsed());
            p.finish(Outcome::Success);
        }
        let gaps: Vec<u128> = starts
            .windows(2)
            .map(|w| (w[1] - w[0]).as_millis())
            .collect();
        assert_eq!(gaps, [100, 100, 100, 100], "600/min is one every 100 ms");
    }

    #[tokio::test(start_paused = true)]
    async fn tokens_per_minute_wait_for_the_bucket_and_corrections_count() {
        let l = Limiter::new(LimiterOptions {
            tokens_per_minute: Some(600), // 10 a second, 100 in the bucket
            ..Default::default()
        });
        let start = Instant::now();
        l.acquire(100, &token())
            .await
            .unwrap()
            .finish(Outcome::Success);
        assert_eq!(start.elapsed(), Duration::ZERO);
        l.acquire(50, &token())
            .await
            .unwrap()
            .finish(Outcome::Success);
        assert_eq!(start.elapsed().as_secs(), 5, "50 tokens at 10 a second");
        // The backend said the last one used 20 more than charged.
        l.correct(50, 70);
        let before = Instant::now();
        l.acquire(10, &token())
            .await
            .unwrap()
            .finish(Outcome::Success);
        assert_eq!(before.elapsed().as_secs(), 3, "the 20 owed, then 10 more");
    }

    #[tokio::test(start_paused = true)]
    async fn a_throttle_pauses_everyone_and_halves_concurrency() {
        let l = Limiter::new(LimiterOptions {
            initial_concurrency: 8,
            ..Default::default()
        });
        let other = l.clone();
        let p = l.acquire(0, &token()).await.unwrap();
        p.finish(Outcome::Throttled {
            retry_after: Some(Duration::from_secs(2)),
        });
        let s = l.stats();
        assert!(s.paused);
        assert_eq!((s.concurrency, s.throttled), (4, 1));
        let start = Instant::now();
        other
            .acquire(0, &token())
            .await
            .unwrap()
            .finish(Outcome::Success);
        assert_eq!(
            start.elapsed().as_secs(),
            2,
            "the clone waited out the pause"
        );
        // Without Retry-After: 1 s, then 2 s for a throttle in a row.
        let p = l.acquire(0, &token()).await.unwrap();
        p.finish(Outcome::Throttled { retry_after: None });
        let p = l.acquire(0, &token()).await.unwrap();
        p.finish(Outcome::Throttled { retry_after: None });
        let start = Instant::now();
        l.acquire(0, &token())
            .await
            .unwrap()
            .finish(Outcome::Success);
        assert_eq!(start.elapsed().as_secs(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn concurrency_grows_additively_and_waiters_get_released_slots() {
        let l = Limiter::new(LimiterOptions {
            initial_concurrency: 1,
            max_concurrency: 3,
            ..Default::default()
        });
        let first = l.acquire(0, &token()).await.unwrap();
        let waiter = {
            let l = l.clone();
            tokio::spawn(async move { l.acquire(0, &CancellationToken::new()).await.is_some() })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!waiter.is_finished(), "one slot, held");
        first.finish(Outcome::Success);
        assert!(waiter.await.unwrap(), "the release wakes the waiter");
        for _ in 0..20 {
            l.acquire(0, &token())
                .await
                .unwrap()
                .finish(Outcome::Success);
        }
        assert_eq!(l.stats().concurrency, 3, "capped at max_concurrency");
    }

    #[tokio::test(start_paused = true)]
    async fn cancellation_stops_a_wait() {
        let l = Limiter::new(LimiterOptions {
            requests_per_minute: Some(1),
            ..Default::default()
        });
        l.acquire(0, &token())
            .await
            .unwrap()
            .finish(Outcome::Success);
        let cancel = token();
        let c = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            c.cancel();
        });
        assert!(l.acquire(0, &cancel).await.is_none());
    }
}
