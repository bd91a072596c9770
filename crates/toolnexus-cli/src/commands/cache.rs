//! `toolnexus cache stats|clear|export`: a decision cache file, inspected.

use anyhow::Result;
use toolnexus::cache::{SqliteCache, SqliteOptions};

use crate::args::CacheFileArgs;
use crate::exit::{self, Exit};

/// Opens a cache file (bad or foreign files are bad input, exit 2).
pub fn open(path: &std::path::Path) -> Result<SqliteCache> {
    SqliteCache::open(path, SqliteOptions::default()).map_err(failed)
}

/// A Unix time in seconds as an RFC 3339 UTC date, `2026-12-05T03:35:47Z`.
pub fn utc_date(unix: i64) -> String {
    let (days, secs) = (unix.div_euclid(86_400), unix.rem_euclid(86_400));
    // Howard Hinnant's days-to-civil, valid for every date an i64 of seconds reaches here.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3_600,
        secs % 3_600 / 60,
        secs % 60
    )
}

pub use crate::style::cache_failed as failed;

/// `toolnexus cache stats`.
pub fn stats(a: CacheFileArgs) -> Result<Exit> {
    if !a.file.exists() {
        return Err(exit::usage(format!(
            "{}: no such cache file",
            a.file.display()
        )));
    }
    let s = open(&a.file)?.stats().map_err(failed)?;
    if a.json {
        let models: serde_json::Map<String, serde_json::Value> = s
            .models
            .iter()
            .map(|(m, n)| (m.clone(), serde_json::Value::from(*n)))
            .collect();
        println!(
            "{}",
            serde_json::json!({
                "file": a.file.display().to_string(),
                "entries": s.entries,
                "bytes": s.bytes,
                "oldest": s.oldest,
                "newest": s.newest,
                "oldest_utc": s.oldest.map(|t| utc_date(t as i64)),
                "newest_utc": s.newest.map(|t| utc_date(t as i64)),
                "models": models,
                "aliases": s.aliases.iter().map(|(alias, r)| serde_json::json!({
                    "alias": alias,
                    "model": r.model,
                    "checked_utc": utc_date((r.checked_ms / 1000) as i64),
                })).collect::<Vec<_>>(),
            })
        );
    } else {
        println!(
            "{}: {} entries, {} bytes of decisions",
            a.file.display(),
            s.entries,
            s.bytes
        );
        if let (Some(o), Some(n)) = (s.oldest, s.newest) {
            println!(
                "stored between {} and {} (UTC)",
                utc_date(o as i64),
                utc_date(n as i64)
            );
        }
        for (m, n) in &s.models {
            println!("  {m}: {n}");
        }
        for (alias, r) in &s.aliases {
            println!(
                "{alias} answers as {} (last seen {} UTC); answers cached under it from other models are not served",
                r.model,
                utc_date((r.checked_ms / 1000) as i64)
            );
        }
    }
    Ok(Exit::Success)
}

/// `toolnexus cache clear`.
pub fn clear(a: CacheFileArgs) -> Result<Exit> {
    if !a.file.exists() {
        return Err(exit::usage(format!(
            "{}: no such cache file",
            a.file.display()
        )));
    }
    let n = open(&a.file)?.clear().map_err(failed)?;
    println!("{}: cleared {n} entries", a.file.display());
    Ok(Exit::Success)
}

/// `toolnexus cache export`.
pub fn export(a: CacheFileArgs) -> Result<Exit> {
    if !a.file.exists() {
        return Err(exit::usage(format!(
            "{}: no such cache file",
            a.file.display()
        )));
    }
    let cache = open(&a.file)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let n = cache.export(&mut out).map_err(failed)?;
    drop(out);
    eprintln!("{}: exported {n} entries", a.file.display());
    Ok(Exit::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_seconds_print_as_utc_dates() {
        assert_eq!(utc_date(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_date(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_date(1_796_441_747), "2026-12-05T03:35:47Z");
        assert_eq!(utc_date(-1), "1969-12-31T23:59:59Z");
    }
}
