//! Pinning (SPEC §20): which model names move, and what an alias was last
//! seen to answer as.
//!
//! A *floating alias* (`jev-latest`, `jev-preview`, `~jev`, anything ending in
//! `-latest` or `-preview`) names whatever model its provider serves today;
//! the model that answered is the decision's `model`. Answers recorded under an
//! alias hold for the model that gave them, not for the alias: the cache
//! tracks each alias's [`Resolution`] and serves an entry only while the alias
//! still answers as the model that recorded it ([`Resolution::serves`]), and
//! re-checks the resolution with a live call at least every alias TTL
//! ([`Resolution::is_stale`]; [`DEFAULT_ALIAS_TTL`], one hour).
//!
//! Everything here is pure: the cache keeps the resolutions, and
//! [`Resolution::observe`] is the one rule for updating them.

use std::time::Duration;

/// How long an alias's resolution is trusted before a live call re-checks it
/// (one hour).
///
/// ```
/// assert_eq!(toolnexus::pinning::DEFAULT_ALIAS_TTL.as_secs(), 3600);
/// ```
pub const DEFAULT_ALIAS_TTL: Duration = Duration::from_secs(3600);

/// Whether `model` is a floating alias: `jev-latest`, `jev-preview`, a name
/// starting with `~`, or one ending in `-latest` or `-preview` (letter case
/// ignored). Any other name is taken as pinned: it names one model.
///
/// ```
/// use toolnexus::pinning::is_floating;
/// assert!(is_floating("jev-latest"));
/// assert!(is_floating("jev-preview"));
/// assert!(is_floating("~jev"));
/// assert!(is_floating("typesafe/jev-Latest"));
/// assert!(!is_floating("jev-1.13"));
/// assert!(!is_floating("latest-jev"));
/// assert!(!is_floating(""));
/// ```
pub fn is_floating(model: &str) -> bool {
    let m = model.trim().to_ascii_lowercase();
    m.starts_with('~') || m.ends_with("-latest") || m.ends_with("-preview")
}

/// What a floating alias was last seen to answer as.
///
/// `since` is when the alias was first seen answering as `model` (seconds
/// since the Unix epoch; 0 when that model is the first it was ever seen as),
/// `checked_ms` the last time a live answer confirmed it (milliseconds since
/// the Unix epoch).
///
/// ```
/// use toolnexus::pinning::Resolution;
/// let r = Resolution::observe(None, "jev-1.13", 1_000_000);
/// assert_eq!((r.model.as_str(), r.since, r.checked_ms), ("jev-1.13", 0, 1_000_000));
/// let moved = Resolution::observe(Some(&r), "jev-1.14", 2_000_000);
/// assert_eq!((moved.since, moved.checked_ms), (2_000, 2_000_000));
/// assert!(moved.has_moved_from(&r));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// The model the alias answers as.
    pub model: String,
    /// When it was first seen answering as `model`, in seconds since the
    /// Unix epoch (0: the first model the alias was ever seen as).
    pub since: u64,
    /// When a live answer last confirmed it, in milliseconds since the Unix epoch.
    pub checked_ms: u64,
}

impl Resolution {
    /// The resolution after a live answer from `model` at `now_ms`: the same
    /// model keeps its `since` and moves `checked_ms` forward; another model
    /// starts afresh (`since` = now), so nothing recorded before is served.
    ///
    /// ```
    /// use toolnexus::pinning::Resolution;
    /// let r = Resolution::observe(None, "a", 5_000);
    /// let same = Resolution::observe(Some(&r), "a", 9_000);
    /// assert_eq!((same.since, same.checked_ms), (0, 9_000));
    /// // A late answer never moves the check back in time.
    /// assert_eq!(Resolution::observe(Some(&same), "a", 7_000).checked_ms, 9_000);
    /// ```
    pub fn observe(previous: Option<&Resolution>, model: &str, now_ms: u64) -> Resolution {
        match previous {
            Some(p) if p.model == model => Resolution {
                model: p.model.clone(),
                since: p.since,
                checked_ms: p.checked_ms.max(now_ms),
            },
            Some(_) => Resolution {
                model: model.to_string(),
                since: now_ms / 1000,
                checked_ms: now_ms,
            },
            None => Resolution {
                model: model.to_string(),
                since: 0,
                checked_ms: now_ms,
            },
        }
    }

    /// Whether the resolution is too old to trust at `now_ms`: at least `ttl`
    /// since the last live answer confirmed it (a zero TTL re-checks on
    /// every call).
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolnexus::pinning::Resolution;
    /// let r = Resolution::observe(None, "a", 10_000);
    /// assert!(!r.is_stale(Duration::from_secs(60), 69_999));
    /// assert!(r.is_stale(Duration::from_secs(60), 70_000));
    /// assert!(r.is_stale(Duration::ZERO, 10_000));
    /// ```
    pub fn is_stale(&self, ttl: Duration, now_ms: u64) -> bool {
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        now_ms.saturating_sub(self.checked_ms) >= ttl_ms
    }

    /// Whether an entry answered by `model` and stored at `stored_at`
    /// (seconds) may be served under this resolution: the alias still answers
    /// as that model, and has not been seen answering as another one since the
    /// entry was stored (to the second).
    ///
    /// ```
    /// use toolnexus::pinning::Resolution;
    /// let first = Resolution::observe(None, "a", 1_000_000);
    /// assert!(first.serves("a", 10));
    /// assert!(!first.serves("b", 10));
    /// // The alias moved to b and back to a at t = 2000 s: what a said before is not served.
    /// let back = Resolution::observe(Some(&Resolution::observe(Some(&first), "b", 1_500_000)), "a", 2_000_000);
    /// assert!(!back.serves("a", 1_000));
    /// assert!(back.serves("a", 2_000));
    /// ```
    pub fn serves(&self, model: &str, stored_at: u64) -> bool {
        self.model == model && stored_at >= self.since
    }

    /// Whether this resolution names another model than `before`.
    ///
    /// ```
    /// use toolnexus::pinning::Resolution;
    /// let a = Resolution::observe(None, "a", 0);
    /// assert!(!Resolution::observe(Some(&a), "a", 1).has_moved_from(&a));
    /// ```
    pub fn has_moved_from(&self, before: &Resolution) -> bool {
        self.model != before.model
    }
}

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floating_aliases_are_the_documented_ones() {
        for m in [
            "jev-latest",
            "jev-preview",
            "~jev",
            "~",
            "JEV-LATEST",
            " jev-latest ",
            "x-preview",
        ] {
            assert!(is_floating(m), "{m}");
        }
        for m in [
            "jev-1.13",
            "typesafe/jev-1.13",
            "latest",
            "preview",
            "jev-latest-2",
            "rule-1",
        ] {
            assert!(!is_floating(m), "{m}");
        }
    }

    #[test]
    fn a_moved_alias_serves_nothing_recorded_before_the_move() {
        let r = Resolution::observe(None, "a", 100_000);
        let moved = Resolution::observe(Some(&r), "b", 200_500);
        assert_eq!(moved.since, 200);
        assert!(!moved.serves("a", 150));
        assert!(!moved.serves("b", 150), "stored before the move was seen");
        assert!(moved.serves("b", 200));
    }
}
