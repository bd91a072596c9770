//! `toolnexus cache stats|clear|export`: a decision cache file, inspected.

use anyhow::Result;
use toolnexus::cache::{CacheError, CacheErrorKind, SqliteCache, SqliteOptions};

use crate::args::CacheFileArgs;
use crate::exit::{self, Exit};

/// Opens a cache file (bad or foreign files are bad input, exit 2).
pub fn open(path: &std::path::Path) -> Result<SqliteCache> {
    SqliteCache::open(path, SqliteOptions::default()).map_err(failed)
}

/// `classifier` behind the decision cache at `path`, when a `--cache` is given
/// and can be opened (see [`open_for_run`] for what happens when it cannot).
pub fn wrap(
    classifier: toolnexus::classifier::Classifier,
    path: Option<&std::path::Path>,
) -> Result<toolnexus::classifier::Classifier> {
    wrap_with(classifier, path, toolnexus::pinning::DEFAULT_ALIAS_TTL)
}

/// [`wrap`] with `--alias-ttl`: how long a floating alias's resolution is
/// trusted before a request is sent to re-check it.
pub fn wrap_with(
    classifier: toolnexus::classifier::Classifier,
    path: Option<&std::path::Path>,
    alias_ttl: std::time::Duration,
) -> Result<toolnexus::classifier::Classifier> {
    Ok(match path.map(open_for_run).transpose()?.flatten() {
        Some(cache) => toolnexus::cache::caching_with(
            classifier,
            std::sync::Arc::new(cache),
            toolnexus::cache::CachingOptions { alias_ttl },
        ),
        None => classifier,
    })
}

/// Opens the `--cache FILE` of a run (`batch`, `serve`): a file that is not a
/// cache is bad input (exit 2) and stops the run before anything is asked; a
/// file that cannot be opened (permissions, a full disk, a missing directory)
/// is a warning naming it, the run goes on without a cache, and the command
/// ends with exit 4 (see [`crate::warnings::cache_failures`]).
pub fn open_for_run(path: &std::path::Path) -> Result<Option<SqliteCache>> {
    match SqliteCache::open(path, SqliteOptions::default()) {
        Ok(c) => Ok(Some(c)),
        Err(e) if matches!(e.kind(), CacheErrorKind::Open | CacheErrorKind::Io) => {
            crate::warnings::cache_failed(&format!(
                "--cache {}: {e}; going on without a cache (exit 4 at the end)",
                path.display()
            ));
            Ok(None)
        }
        Err(e) => Err(failed(e)),
    }
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

/// A cache error as the CLI reports it: a file that is not a cache is bad
/// input (exit 2); a read or write that fails is I/O (exit 4).
pub fn failed(e: CacheError) -> anyhow::Error {
    match e.kind() {
        CacheErrorKind::Io => exit::io(e),
        _ => exit::usage(e),
    }
}

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
