//! The weights file as a loader reads it: mapped into memory rather than read
//! and copied, and its SHA-256 remembered beside it, so that a process that
//! loads the model once per call (a cold `toolnexus guard`) neither copies
//! the file an extra time nor hashes it again.
//!
//! The remembered digest lives in `<weights>.sha256`, next to the weights,
//! with the file's size and modification time it was worked out for; a
//! record that does not match the file as it is now (or cannot be read or
//! parsed) is ignored and the digest is worked out again and written back.
//! A directory that cannot be written to only costs the hash on every load.

use std::fs;
use std::io;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use sha2::{Digest, Sha256};

use crate::pins::hex;

/// The bytes of a weights file: mapped when the system allows it, else read.
pub(crate) enum WeightBytes {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

impl Deref for WeightBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            WeightBytes::Mapped(m) => m,
            WeightBytes::Read(v) => v,
        }
    }
}

/// What identifies the file's content without reading it: its size and its
/// modification time, to the nanosecond.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stamp {
    size: u64,
    mtime_ns: u128,
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Option<Stamp> {
        let mtime = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
        Some(Stamp {
            size: meta.len(),
            mtime_ns: mtime.as_nanos(),
        })
    }
}

/// The weights at `path`, with the file's stamp when the system gives one.
pub(crate) fn open(path: &Path) -> io::Result<(WeightBytes, Option<Stamp>)> {
    let file = fs::File::open(path)?;
    let meta = file.metadata()?;
    let stamp = Stamp::of(&meta);
    // SAFETY: the map is only read while the model loads (every tensor is
    // copied out of it) and is dropped right after. Like any reader of the
    // file, the load sees whatever is in it: a file rewritten meanwhile gives
    // weights that fail their checks or a digest that does not match, and a
    // file truncated meanwhile is the one case a map turns into a signal
    // rather than an error, as it does for every program that maps a model.
    let mapped = unsafe { memmap2::Mmap::map(&file) };
    let bytes = match mapped {
        Ok(m) => WeightBytes::Mapped(m),
        // Some file systems cannot map: read the file instead.
        Err(_) => WeightBytes::Read(fs::read(path)?),
    };
    Ok((bytes, stamp))
}

/// Where the digest of the weights at `path` is remembered.
pub(crate) fn record_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".sha256");
    path.with_file_name(name)
}

/// The digest remembered for `path`, when the record matches `stamp`.
pub(crate) fn remembered(path: &Path, stamp: &Stamp) -> Option<String> {
    let text = fs::read_to_string(record_path(path)).ok()?;
    let mut sha = None;
    let mut size = None;
    let mut mtime = None;
    for line in text.lines() {
        match line.split_once(' ') {
            Some(("sha256", v)) => sha = Some(v),
            Some(("size", v)) => size = v.parse::<u64>().ok(),
            Some(("mtime_ns", v)) => mtime = v.parse::<u128>().ok(),
            _ => {}
        }
    }
    let sha = sha?;
    let valid = sha.len() == 64 && sha.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    (valid && size? == stamp.size && mtime? == stamp.mtime_ns).then(|| sha.to_string())
}

/// Remembers `sha` for `path` as of `stamp`; best effort (a read-only
/// directory keeps no record). Written to a temporary file and renamed, so a
/// reader never sees half a record.
pub(crate) fn remember(path: &Path, stamp: &Stamp, sha: &str) {
    let record = record_path(path);
    let mut tmp = record.clone().into_os_string();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let text = format!(
        "sha256 {sha}\nsize {}\nmtime_ns {}\n",
        stamp.size, stamp.mtime_ns
    );
    if fs::write(&tmp, text).is_ok() && fs::rename(&tmp, &record).is_err() {
        let _ = fs::remove_file(&tmp);
    }
}

/// The SHA-256 of `bytes`, lower-case hex.
pub(crate) fn sha256(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

#[cfg(test)]
mod tests;
