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
//!
//! The map stays for as long as the model that reads it: a tensor stored as
//! little-endian f32 at a 4-byte boundary is read in place ([`F32s`]), so a
//! load copies nothing and a call touches only the pages it reads (a few
//! rows of the word-embedding table, not all of its 47 MB). Any other tensor
//! is converted to an owned f32 copy, as candle would convert it.
//!
//! Beside them, a prepared layout ([`prepared`]) keeps what a load would
//! otherwise work out from the weights on every start (the linear layers
//! transposed), checked against the weights' digest, size and time.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use candle_core::safetensors::Load;
use candle_core::{DType, Device};
use safetensors::{Dtype, SafeTensors};
use sha2::{Digest, Sha256};

use crate::pins::hex;

pub(crate) mod prepared;

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
    map_or_read(&file, path).map(|bytes| (bytes, stamp))
}

/// The file's bytes, mapped, or read where the file system cannot map.
fn map_or_read(file: &fs::File, path: &Path) -> io::Result<WeightBytes> {
    // SAFETY: the map is read for as long as the model that holds it lives.
    // Every file here is replaced by a rename, never rewritten in place: the
    // fetch renames the model's files into the directory, and the digest
    // record and the prepared layout are written aside and renamed over the
    // old ones, so a map goes on reading the file it was made of. A file that
    // someone else truncates in place while it is mapped is the one case a
    // map turns into a signal rather than an error, as it does for every
    // program that maps a model.
    let mapped = unsafe { memmap2::Mmap::map(file) };
    let bytes = match mapped {
        Ok(m) => WeightBytes::Mapped(m),
        // Some file systems cannot map: read the file instead.
        Err(_) => WeightBytes::Read(fs::read(path)?),
    };
    Ok(bytes)
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

/// f32 values a model reads: in place, in a mapped file, or owned.
pub(crate) struct F32s(Values);

enum Values {
    /// `len` values at byte `at` of `bytes`, checked when made (see [`F32s::in_place`]).
    InPlace {
        bytes: Arc<WeightBytes>,
        at: usize,
        len: usize,
    },
    Owned(Vec<f32>),
}

impl F32s {
    /// The `len` values at byte `at` of `bytes`, read in place when they lie
    /// inside it at a 4-byte boundary and the machine reads f32 as the file
    /// stores it (little-endian); `None` otherwise.
    fn in_place(bytes: &Arc<WeightBytes>, at: usize, len: usize) -> Option<F32s> {
        let end = len.checked_mul(4)?.checked_add(at)?;
        let fits = end <= bytes.len()
            && (bytes.as_ptr() as usize).checked_add(at)? % std::mem::align_of::<f32>() == 0
            && cfg!(target_endian = "little");
        fits.then(|| {
            F32s(Values::InPlace {
                bytes: Arc::clone(bytes),
                at,
                len,
            })
        })
    }

    /// The values, in order.
    pub(crate) fn values(&self) -> &[f32] {
        match &self.0 {
            Values::Owned(v) => v,
            Values::InPlace { bytes, at, len } => {
                let cells = &bytes[*at..*at + *len * 4];
                // SAFETY: `in_place` admitted these `len` values only inside
                // the bytes, at an address aligned for f32, on a little-endian
                // machine; every bit pattern is an f32; the bytes are never
                // written (a map of a file opened to read, or a Vec no one
                // else holds mutably) and live as long as `self`, which holds
                // them.
                unsafe { std::slice::from_raw_parts(cells.as_ptr().cast::<f32>(), *len) }
            }
        }
    }

    /// Whether the values are read in place rather than copied.
    #[cfg(test)]
    pub(crate) fn is_in_place(&self) -> bool {
        matches!(self.0, Values::InPlace { .. })
    }
}

impl From<Vec<f32>> for F32s {
    fn from(v: Vec<f32>) -> F32s {
        F32s(Values::Owned(v))
    }
}

/// Where one tensor of a safetensors file is.
struct Entry {
    dtype: Dtype,
    shape: Vec<usize>,
    /// Its first byte, from the start of the file.
    at: usize,
    /// Its size in bytes.
    size: usize,
}

/// The tensors of a safetensors file, read where they lie in its bytes.
pub(crate) struct Tensors {
    bytes: Arc<WeightBytes>,
    entries: HashMap<String, Entry>,
}

impl Tensors {
    /// The tensors of `bytes`, a safetensors file; only its header is read.
    pub(crate) fn parse(bytes: Arc<WeightBytes>) -> candle_core::Result<Tensors> {
        let entries = {
            let st = SafeTensors::deserialize(&bytes)?;
            let base = bytes.as_ptr() as usize;
            st.iter()
                .map(|(name, view)| {
                    let data = view.data();
                    let entry = Entry {
                        dtype: view.dtype(),
                        shape: view.shape().to_vec(),
                        at: data.as_ptr() as usize - base,
                        size: data.len(),
                    };
                    (name.to_string(), entry)
                })
                .collect()
        };
        Ok(Tensors { bytes, entries })
    }

    /// Whether the file has a tensor called `name`.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.entries.contains_key(name)
    }

    /// The file-level metadata of the header (`__metadata__`), if any.
    pub(crate) fn metadata(&self) -> Option<HashMap<String, String>> {
        let (_, meta) = SafeTensors::read_metadata(&self.bytes).ok()?;
        meta.metadata().clone()
    }

    /// The tensor `name` as f32 values, checked against the shape `dims` the
    /// config implies, and taken out (each is handed out once). f32 at a
    /// 4-byte boundary is read in place; any other type is converted to f32
    /// (as candle converts it) and owned.
    pub(crate) fn take(&mut self, name: &str, dims: &[usize]) -> candle_core::Result<F32s> {
        let e = self
            .entries
            .remove(name)
            .ok_or_else(|| candle_core::Error::Msg(format!("cannot find tensor {name}")))?;
        if e.shape != dims {
            candle_core::bail!(
                "shape mismatch for {name}, expected {dims:?}, got {:?}",
                e.shape
            );
        }
        if e.dtype == Dtype::F32
            && let Some(v) = F32s::in_place(&self.bytes, e.at, e.size / 4)
        {
            return Ok(v);
        }
        let data = &self.bytes[e.at..e.at + e.size];
        let view = safetensors::tensor::TensorView::new(e.dtype, e.shape, data)?;
        let t = view.load(&Device::Cpu)?.to_dtype(DType::F32)?;
        Ok(F32s::from(t.flatten_all()?.to_vec1::<f32>()?))
    }
}

/// The SHA-256 of `bytes`, lower-case hex.
pub(crate) fn sha256(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

#[cfg(test)]
mod tests;
