//! Retry classification and backoff, kept apart from the loop that applies them.
//! Pure: no I/O, no clock.

use std::time::Duration;

use super::error::ClassifierError;

/// HTTP statuses retried by default: 408, 429, 500, 502, 503, 504 and 529.
pub const DEFAULT_RETRYABLE_STATUSES: [u16; 7] = [408, 429, 500, 502, 503, 504, 529];

/// The longest `Retry-After` honoured; a larger one is cut to this.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

pub(crate) fn is_default_retryable_status(status: u16) -> bool {
    DEFAULT_RETRYABLE_STATUSES.contains(&status)
}

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

/// The delay before retry number `attempt + 1`: `Retry-After` when the backend
/// sent one (cut to [`MAX_RETRY_AFTER`]), else `base × 2^attempt`.
pub(crate) fn backoff(base: Duration, attempt: u32, retry_after: Option<Duration>) -> Duration {
    if let Some(ra) = retry_after {
        return ra.min(MAX_RETRY_AFTER);
    }
    base.saturating_mul(2u32.saturating_pow(attempt.min(20)))
}

/// Reads a `Retry-After` value in seconds (`"3"`, `"1.5"`); the HTTP-date form
/// and anything else yields `None`, so the exponential backoff applies.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_the_base_and_retry_after_wins() {
        let base = Duration::from_millis(500);
        assert_eq!(backoff(base, 0, None), Duration::from_millis(500));
        assert_eq!(backoff(base, 1, None), Duration::from_millis(1000));
        assert_eq!(backoff(base, 3, None), Duration::from_millis(4000));
        assert_eq!(
            backoff(base, 0, Some(Duration::from_secs(2))),
            Duration::from_secs(2)
        );
        assert_eq!(
            backoff(base, 0, Some(Duration::from_secs(3600))),
            MAX_RETRY_AFTER
        );
        assert!(backoff(base, 200, None) > Duration::ZERO);
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
