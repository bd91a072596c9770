//! `toolnexus cache stats|clear|export`: a decision cache file, inspected.

use anyhow::Result;
use toolnexus::date::rfc3339;

use crate::args::CacheFileArgs;
use crate::exit::{self, Exit};

pub use crate::style::open_cache as open;

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
