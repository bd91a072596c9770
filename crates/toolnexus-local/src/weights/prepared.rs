//! The prepared layout: what a load would otherwise work out from the
//! weights on every start (the linear layers' matrices transposed to the
//! `[in, out]` the matrix products read), kept once in a file beside the
//! weights and mapped, so that a process that loads the model per call (a
//! cold `toolnexus guard`) neither transposes nor copies anything.
//!
//! The file, `<weights>.prepared`, is a safetensors file of f32 tensors whose
//! metadata names the format, the layout (which encoder prepared what: a
//! change of layout is a new name) and the weights it was prepared from:
//! their SHA-256, size and modification time (ns). It is used only when all
//! of these match the weights as they are now and it parses whole (a file
//! cut short, or not a safetensors file, is ignored); a tensor missing or of
//! the wrong shape makes the encoder ignore the whole file. An ignored file
//! is written again after the load; a directory that cannot be written to
//! keeps none and each load transposes, as it did before.
//!
//! Like the weights and the digest record, the file is written aside and
//! renamed into place, never rewritten where it lies: a process that maps it
//! keeps reading the file it mapped.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use safetensors::{Dtype, View};

use super::{Stamp, Tensors, map_or_read};

/// What the `format` metadata of a prepared file says.
pub(crate) const FORMAT: &str = "toolnexus-prepared/1";

/// Where the prepared layout of the weights at `weights` is kept.
pub(crate) fn path(weights: &Path) -> PathBuf {
    let mut name = weights.file_name().unwrap_or_default().to_os_string();
    name.push(".prepared");
    weights.with_file_name(name)
}

/// The metadata a prepared file of `layout` for weights with digest `sha`,
/// as of `stamp`, carries.
fn metadata(layout: &str, stamp: &Stamp, sha: &str) -> HashMap<String, String> {
    HashMap::from([
        ("format".to_string(), FORMAT.to_string()),
        ("layout".to_string(), layout.to_string()),
        ("weights_sha256".to_string(), sha.to_string()),
        ("weights_size".to_string(), stamp.size.to_string()),
        ("weights_mtime_ns".to_string(), stamp.mtime_ns.to_string()),
    ])
}

/// The prepared tensors of `layout` beside `weights`, when the file there
/// was prepared from the weights as they are now (`stamp`, digest `sha`) and
/// parses whole; `None` otherwise.
pub(crate) fn open(weights: &Path, layout: &str, stamp: &Stamp, sha: &str) -> Option<Tensors> {
    let path = path(weights);
    let file = fs::File::open(&path).ok()?;
    let bytes = map_or_read(&file, &path).ok()?;
    let tensors = Tensors::parse(Arc::new(bytes)).ok()?;
    (tensors.metadata()? == metadata(layout, stamp, sha)).then_some(tensors)
}

/// One tensor to prepare: its name, its shape and its values.
pub(crate) type Part<'a> = (String, Vec<usize>, &'a [f32]);

/// An f32 tensor as the safetensors writer takes it.
struct Values<'a> {
    shape: &'a [usize],
    values: &'a [f32],
}

impl View for Values<'_> {
    fn dtype(&self) -> Dtype {
        Dtype::F32
    }

    fn shape(&self) -> &[usize] {
        self.shape
    }

    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Owned(self.values.iter().flat_map(|v| v.to_le_bytes()).collect())
    }

    fn data_len(&self) -> usize {
        self.values.len() * 4
    }
}

/// Writes the prepared layout `layout` of `parts` beside `weights` (digest
/// `sha`, as of `stamp`): to a file aside, renamed into place, so that no
/// reader ever sees half of it. The caller treats a failure as "keeps none".
pub(crate) fn write(
    weights: &Path,
    layout: &str,
    stamp: &Stamp,
    sha: &str,
    parts: &[Part<'_>],
) -> io::Result<()> {
    for (name, shape, values) in parts {
        if shape.iter().product::<usize>() != values.len() {
            return Err(io::Error::other(format!(
                "{name}: {} values do not fill the shape {shape:?}",
                values.len()
            )));
        }
    }
    let target = path(weights);
    let mut tmp = target.clone().into_os_string();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let views = parts.iter().map(|(name, shape, values)| {
        (
            name.as_str(),
            Values {
                shape: shape.as_slice(),
                values,
            },
        )
    });
    let written = safetensors::serialize_to_file(views, Some(metadata(layout, stamp, sha)), &tmp)
        .map_err(io::Error::other)
        .and_then(|()| {
            // Readable by whoever can read the weights (the writer creates
            // the file for its owner only).
            fs::set_permissions(&tmp, fs::metadata(weights)?.permissions())?;
            fs::rename(&tmp, &target)
        });
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}
