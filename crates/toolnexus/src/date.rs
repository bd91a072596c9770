//! Calendar arithmetic in UTC, both ways: Unix seconds to a civil date (for
//! RFC 3339 timestamps and `YYYY-MM-DD` days) and a civil date back to days
//! since the epoch (for HTTP dates). The proleptic Gregorian calendar, with
//! Howard Hinnant's algorithms; no time zones, no leap seconds. A leaf: it
//! names nothing else in the crate.
//!
//! ```
//! use toolnexus::date::{days_from_civil, rfc3339, ymd};
//!
//! assert_eq!(rfc3339(1_796_441_747), "2026-12-05T03:35:47Z");
//! assert_eq!(ymd(951_782_400), "2000-02-29");
//! assert_eq!(days_from_civil(2000, 2, 29) * 86_400, 951_782_400);
//! ```

/// Seconds in a day.
const DAY: i64 = 86_400;

/// The civil date `(year, month, day)` of a count of days since 1970-01-01
/// (negative before it). Months and days count from 1.
///
/// ```
/// use toolnexus::date::civil_from_days;
/// assert_eq!(civil_from_days(0), (1970, 1, 1));
/// assert_eq!(civil_from_days(-1), (1969, 12, 31));
/// assert_eq!(civil_from_days(11_016), (2000, 2, 29));
/// ```
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Days since 1970-01-01 of a civil date, the inverse of [`civil_from_days`].
/// The date is not checked: 31 February is 3 March.
///
/// ```
/// use toolnexus::date::{civil_from_days, days_from_civil};
/// assert_eq!(days_from_civil(1970, 1, 1), 0);
/// assert_eq!(days_from_civil(1994, 11, 6), 9_075);
/// assert_eq!(civil_from_days(days_from_civil(2026, 12, 5)), (2026, 12, 5));
/// ```
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A Unix time in seconds as an RFC 3339 UTC timestamp,
/// `2026-12-05T03:35:47Z`. Every `i64` has one.
///
/// ```
/// use toolnexus::date::rfc3339;
/// assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
/// assert_eq!(rfc3339(-1), "1969-12-31T23:59:59Z");
/// ```
pub fn rfc3339(unix_secs: i64) -> String {
    let (year, month, day) = civil_from_days(unix_secs.div_euclid(DAY));
    let secs = unix_secs.rem_euclid(DAY);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3_600,
        secs % 3_600 / 60,
        secs % 60
    )
}

/// The UTC day of a Unix time in seconds, as `YYYY-MM-DD`.
///
/// ```
/// use toolnexus::date::ymd;
/// assert_eq!(ymd(1_789_430_400), "2026-09-15");
/// assert_eq!(ymd(1_789_430_400 + 86_399), "2026-09-15");
/// ```
pub fn ymd(unix_secs: i64) -> String {
    let (year, month, day) = civil_from_days(unix_secs.div_euclid(DAY));
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_seconds_print_as_utc_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_796_441_747), "2026-12-05T03:35:47Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59Z");
    }

    #[test]
    fn dates_are_civil() {
        assert_eq!(ymd(0), "1970-01-01");
        assert_eq!(ymd(951_782_400), "2000-02-29");
        assert_eq!(ymd(1_789_430_400), "2026-09-15");
    }

    #[test]
    fn days_and_dates_are_inverses_over_four_centuries_and_more() {
        // Every day from 1600 to 2400 (three leap-year rules), and the extremes
        // an i64 of seconds reaches, round-trip.
        for days in days_from_civil(1600, 1, 1)..days_from_civil(2400, 1, 1) {
            let (y, m, d) = civil_from_days(days);
            assert!((1..=12).contains(&m) && (1..=31).contains(&d), "{days}");
            assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
        }
        for secs in [i64::MIN, i64::MAX] {
            let days = secs.div_euclid(DAY);
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}
