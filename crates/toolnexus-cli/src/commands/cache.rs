//! `toolnexus cache stats|clear|export`: a decision cache file, inspected.

use anyhow::Result;
use toolnexus::cache::{CacheError, CacheErrorKind, SqliteCache, SqliteOptions};

use crate::args::CacheFileArgs;
use crate::exit::{self, Exit};

/// Opens a cache file (bad or foreign files are bad input, exit 2).
pub fn open(path: &std::path::Path) -> Result<SqliteCache> {
    SqliteCache::open(path, SqliteOptions::default()).map_err(failed)
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
                "models": models,
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
            println!("stored between {} and {} (Unix seconds)", o, n);
        }
        for (m, n) in &s.models {
            println!("  {m}: {n}");
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
