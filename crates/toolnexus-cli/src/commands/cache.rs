//! `toolnexus cache stats|clear|export`: a decision cache file, inspected.

use anyhow::Result;
use toolnexus::cache::{CacheError, CacheErrorKind, SqliteCache, SqliteOptions};
use toolnexus::date::rfc3339;

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
                "oldest_utc": s.oldest.map(|t| rfc3339(t as i64)),
                "newest_utc": s.newest.map(|t| rfc3339(t as i64)),
                "models": models,
                "aliases": s.aliases.iter().map(|(alias, r)| serde_json::json!({
                    "alias": alias,
                    "model": r.model,
                    "checked_utc": rfc3339((r.checked_ms / 1000) as i64),
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
                rfc3339(o as i64),
                rfc3339(n as i64)
            );
        }
        for (m, n) in &s.models {
            println!("  {m}: {n}");
        }
        for (alias, r) in &s.aliases {
            println!(
                "{alias} answers as {} (last seen {} UTC); answers cached under it from other models are not served",
                r.model,
                rfc3339((r.checked_ms / 1000) as i64)
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
