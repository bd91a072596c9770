//! Retry classification and backoff, kept apart from the loop that applies them.
//! Pure: no I/O, no clock.

use std::time::Duration;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::ClassifierError;

// The default set lives with the error it classifies (`ClassifierError::is_retryable`
// reads it), so the error module needs nothing from here.
pub use crate::error::DEFAULT_RETRYABLE_STATUSES;

/// The longest `Retry-After` honoured; a larger one is cut to this.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// Decides whether a failed attempt is retried (see [`ErrorTier`]).
pub type OnErrorFn = Arc<dyn Fn(&ErrorInfo<'_>) -> ErrorTier + Send + Sync>;

/// What `on_error` decides for a failed attempt.
///
/// ```
/// use std::sync::Arc;
/// use toolnexus::classifier::{ClassifierOptions, ErrorTier};
///
/// // Never retry a 429: this caller prefers to shed load.
/// let opts = ClassifierOptions {
///     on_error: Some(Arc::new(|info| {
///         if info.error.status() == Some(429) { ErrorTier::Fail } else { info.default_tier() }
///     })),
///     ..Default::default()
/// };
/// # let _ = opts;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorTier {
    /// Try again, if attempts remain.
    Retry,
    /// Give up now and return this error.
    Fail,
}

/// What `on_error` is told about a failed attempt.
///
/// ```
/// use toolnexus::classifier::{ErrorInfo, ErrorTier};
///
/// fn policy(info: &ErrorInfo<'_>) -> ErrorTier {
///     if info.attempt >= 1 { ErrorTier::Fail } else { info.default_tier() }
/// }
/// # let _ = policy;
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct ErrorInfo<'a> {
    /// The attempt that failed, from 0.
    pub attempt: u32,
    /// The failure.
    pub error: &'a ClassifierError,
    /// Whether the built-in classification (plus `retryable_statuses`) would retry it.
    pub retryable: bool,
    /// How long the client would wait before the next attempt.
    pub delay: Duration,
}

impl ErrorInfo<'_> {
    /// The tier the built-in classification picks: `Retry` when `retryable`.
    pub fn default_tier(&self) -> ErrorTier {
        if self.retryable {
            ErrorTier::Retry
        } else {
            ErrorTier::Fail
        }
    }
}

/// Whether `error` is retryable under the default set widened by `extra` statuses.
pub(crate) fn classify(error: &ClassifierError, extra: &[u16]) -> bool {
    error.is_retryable() || error.status().is_some_and(|s| extra.contains(&s))
}

/// How a computed backoff is spread, so that many clients failing together do
/// not retry in lock-step. A wait the server asked for (`Retry-After`) is kept
/// exact whatever this says.
///
/// ```
/// use toolnexus::classifier::{ClassifierOptions, Jitter};
///
/// // Reproducible waits in a test: the same seed gives the same delays.
/// let opts = ClassifierOptions { retry_jitter: Jitter::Seeded(7), ..Default::default() };
/// assert_eq!(Jitter::default(), Jitter::Full);
/// # let _ = opts;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Jitter {
    /// Full jitter: each wait is drawn uniformly from `0..=base × 2^attempt`.
    #[default]
    Full,
    /// Full jitter from a fixed seed: the same sequence of waits every run.
    Seeded(u64),
    /// No jitter: exactly `base × 2^attempt`.
    Off,
}

/// The random source of one transport's jitter (splitmix64: tiny, lock-free,
/// good enough to spread retries; not for secrets).
#[derive(Debug)]
pub(crate) struct JitterSource {
    jitter: Jitter,
    state: AtomicU64,
}

impl JitterSource {
    pub(crate) fn new(jitter: Jitter) -> JitterSource {
        let seed = match jitter {
            Jitter::Seeded(s) => s,
            _ => {
                static COUNTER: AtomicU64 = AtomicU64::new(0);
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64);
                now ^ COUNTER.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
            }
        };
        JitterSource {
            jitter,
            state: AtomicU64::new(seed),
        }
    }

    fn next(&self) -> u64 {
        let mut z = self
            .state
            .fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
            .wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// `cap` spread as configured.
    pub(crate) fn spread(&self, cap: Duration) -> Duration {
        match self.jitter {
            Jitter::Off => cap,
            Jitter::Full | Jitter::Seeded(_) => {
                let nanos = cap.as_nanos().min(u64::MAX as u128) as u64;
                if nanos == 0 {
                    return cap;
                }
                Duration::from_nanos(self.next() % (nanos + 1))
            }
        }
    }
}

/// The delay before retry number `attempt + 1`: `Retry-After` when the backend
/// sent one (cut to [`MAX_RETRY_AFTER`], exact), else `base × 2^attempt` spread
/// by `jitter`.
pub(crate) fn backoff(
    base: Duration,
    attempt: u32,
    retry_after: Option<Duration>,
    jitter: &JitterSource,
) -> Duration {
    if let Some(ra) = retry_after {
        return ra.min(MAX_RETRY_AFTER);
    }
    jitter.spread(base.saturating_mul(2u32.saturating_pow(attempt.min(20))))
}

/// Reads a `Retry-After` value in seconds (`"3"`, `"1.5"`); anything else
/// yields `None`. See [`retry_after_from`] for the whole rule, dates included.
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    if secs.is_finite() && secs >= 0.0 {
        Some(Duration::from_secs_f64(
            secs.min(MAX_RETRY_AFTER.as_secs_f64()),
        ))
    } else {
        None
    }
}

/// The wait a backend asked for, as the official clients read it:
/// `retry-after-ms` (milliseconds, may be fractional) first, then
/// `Retry-After` in seconds or as an HTTP date (a date in the past means no
/// wait). `now` is the wall clock the date is measured against. Cut to
/// [`MAX_RETRY_AFTER`]; `None` when neither header says anything usable.
pub(crate) fn retry_after_from(
    retry_after_ms: Option<&str>,
    retry_after: Option<&str>,
    now: std::time::SystemTime,
) -> Option<Duration> {
    if let Some(ms) = retry_after_ms.and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(
            (ms / 1000.0).min(MAX_RETRY_AFTER.as_secs_f64()),
        ));
    }
    let value = retry_after?;
    if let Some(d) = parse_retry_after(value) {
        return Some(d);
    }
    let at = parse_http_date(value)?;
    let wait = at.duration_since(now).unwrap_or(Duration::ZERO);
    Some(wait.min(MAX_RETRY_AFTER))
}

/// Parses an HTTP date (RFC 9110 §5.6.7): the preferred IMF-fixdate
/// `Sun, 06 Nov 1994 08:49:37 GMT`, the obsolete RFC 850 form
/// `Sunday, 06-Nov-94 08:49:37 GMT` and asctime `Sun Nov  6 08:49:37 1994`.
pub(crate) fn parse_http_date(value: &str) -> Option<std::time::SystemTime> {
    let v = value.trim();
    let parts: Vec<&str> = v.split_whitespace().collect();
    let (day, month, year, time) = match parts.as_slice() {
        // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
        [wd, d, m, y, t, "GMT"] if wd.ends_with(',') => (*d, *m, y.parse::<i64>().ok()?, *t),
        // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
        [wd, dmy, t, "GMT"] if wd.ends_with(',') => {
            let mut it = dmy.split('-');
            let (d, m, y) = (it.next()?, it.next()?, it.next()?);
            let y: i64 = y.parse().ok()?;
            // Two-digit years: RFC 9110 says read them as the nearest past century.
            let y = if y < 100 {
                if y < 70 { 2000 + y } else { 1900 + y }
            } else {
                y
            };
            (d, m, y, *t)
        }
        // asctime: Sun Nov  6 08:49:37 1994
        [_, m, d, t, y] => (*d, *m, y.parse::<i64>().ok()?, *t),
        _ => return None,
    };
    let day: i64 = day.parse().ok()?;
    let month = match month {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let mut hms = time.split(':').map(|x| x.parse::<i64>().ok());
    let (h, mi, se) = (hms.next()??, hms.next()??, hms.next()??);
    if hms.next().is_some()
        || !(1..=31).contains(&day)
        || !(0..24).contains(&h)
        || !(0..60).contains(&mi)
        || !(0..=60).contains(&se)
        || year < 1970
    {
        return None;
    }
    let days = crate::date::days_from_civil(year, month, day);
    let secs = days * 86_400 + h * 3600 + mi * 60 + se;
    let secs = u64::try_from(secs).ok()?;
    std::time::UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_the_base_and_retry_after_wins() {
        let off = JitterSource::new(Jitter::Off);
        let base = Duration::from_millis(500);
        assert_eq!(backoff(base, 0, None, &off), Duration::from_millis(500));
        assert_eq!(backoff(base, 1, None, &off), Duration::from_millis(1000));
        assert_eq!(backoff(base, 3, None, &off), Duration::from_millis(4000));
        assert_eq!(
            backoff(base, 0, Some(Duration::from_secs(2)), &off),
            Duration::from_secs(2)
        );
        assert_eq!(
            backoff(base, 0, Some(Duration::from_secs(3600)), &off),
            MAX_RETRY_AFTER
        );
        assert!(backoff(base, 200, None, &off) > Duration::ZERO);
    }

    #[test]
    fn full_jitter_stays_under_the_cap_and_a_seed_repeats() {
        let base = Duration::from_millis(100);
        let a = JitterSource::new(Jitter::Seeded(42));
        let b = JitterSource::new(Jitter::Seeded(42));
        let waits: Vec<Duration> = (0..50).map(|n| backoff(base, n % 4, None, &a)).collect();
        let again: Vec<Duration> = (0..50).map(|n| backoff(base, n % 4, None, &b)).collect();
        assert_eq!(waits, again, "the same seed gives the same waits");
        for (n, w) in waits.iter().enumerate() {
            assert!(*w <= base * 2u32.pow(n as u32 % 4), "{n}: {w:?}");
        }
        assert!(waits.windows(2).any(|w| w[0] != w[1]), "spread, not fixed");
        // A wait the server asked for is exact.
        let ra = Some(Duration::from_millis(1234));
        assert_eq!(backoff(base, 0, ra, &a), Duration::from_millis(1234));
        let full = JitterSource::new(Jitter::Full);
        assert!(backoff(base, 0, None, &full) <= base);
    }

    #[test]
    fn http_dates_in_all_three_forms() {
        let want = std::time::UNIX_EPOCH + Duration::from_secs(784_111_777);
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), Some(want));
        assert_eq!(
            parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"),
            Some(want)
        );
        assert_eq!(parse_http_date("Sun Nov  6 08:49:37 1994"), Some(want));
        assert_eq!(
            parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"),
            Some(std::time::UNIX_EPOCH)
        );
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 25:49:37 GMT"), None);
        assert_eq!(parse_http_date("Sun, 06 Foo 1994 08:49:37 GMT"), None);
        assert_eq!(parse_http_date("soon"), None);
    }

    #[test]
    fn retry_after_ms_wins_then_seconds_then_dates() {
        let now = std::time::UNIX_EPOCH + Duration::from_secs(784_111_770);
        let date = "Sun, 06 Nov 1994 08:49:37 GMT";
        assert_eq!(
            retry_after_from(Some("250.5"), Some("9"), now),
            Some(Duration::from_micros(250_500))
        );
        assert_eq!(
            retry_after_from(Some("x"), Some("2"), now),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            retry_after_from(None, Some(date), now),
            Some(Duration::from_secs(7))
        );
        let later = now + Duration::from_secs(60);
        assert_eq!(
            retry_after_from(None, Some(date), later),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after_from(Some("-1"), None, now), None);
        assert_eq!(
            retry_after_from(Some("9999999"), None, now),
            Some(MAX_RETRY_AFTER)
        );
        assert_eq!(retry_after_from(None, None, now), None);
    }

    #[test]
    fn retry_after_reads_seconds_only() {
        assert_eq!(parse_retry_after("3"), Some(Duration::from_secs(3)));
        assert_eq!(
            parse_retry_after(" 1.5 "),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("99999"), Some(MAX_RETRY_AFTER));
    }
}
