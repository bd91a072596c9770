//! The ModernBERT encoder (inference only, CPU) that Laya and DecisionTune
//! share, and the files around it: its `config.json` in either spelling
//! transformers has written, weights read one tensor at a time and upcast to
//! f32, and a tokenizer with its special tokens.
//!
//! The forward pass: token embeddings → LayerNorm; per layer a pre-norm
//! attention (the first layer has no norm before it) with rotary positions —
//! global layers see every real token, local layers only those within half
//! the local window — and a pre-norm GeGLU MLP; a final LayerNorm. Rows run
//! packed end to end, real tokens only (the reference pads them to one length
//! and masks the padding out; the numbers are the same): a row never sees
//! another, and the matrix products never compute padding. The kernels are in
//! [`crate::kernels`]; linear weights are transposed once, at load.

use std::collections::HashMap;
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use serde_json::{Map, Value};
use tokenizers::Tokenizer;

use crate::error::{LocalError, msg};
use crate::kernels::bf16::{from_bf16, to_bf16};
use crate::kernels::{
    Attend, Held, HeldLin, HeldNorm, Lin, Norm, Out, Packed, Rope, Rows, attention, geglu, groups,
    packed_starts, take, take_as_stored,
};

/// What kind of attention a layer runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attention {
    /// Every real token.
    Global,
    /// Real tokens at most `window` positions away.
    Local,
}

/// The parts of a ModernBERT `config.json` the encoder needs.
#[derive(Debug, Clone)]
pub(crate) struct EncoderConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub heads: usize,
    pub max_positions: usize,
    pub norm_eps: f64,
    pub norm_bias: bool,
    pub attention_bias: bool,
    pub mlp_bias: bool,
    /// Per layer, in order.
    pub layers: Vec<Attention>,
    /// How far a local layer sees on either side: `local_attention / 2`.
    pub window: usize,
    pub global_theta: f64,
    pub local_theta: f64,
}

/// A JSON object's fields, read with errors naming the file and the field.
pub(crate) struct Fields<'a> {
    pub path: &'a Path,
    pub map: &'a Map<String, Value>,
}

impl<'a> Fields<'a> {
    /// The top-level object of the JSON file at `path`.
    pub(crate) fn parse(path: &Path, bytes: &[u8]) -> Result<Value, LocalError> {
        let v: Value = serde_json::from_slice(bytes)
            .map_err(|e| msg::field(path, "(top level)", format_args!("cannot be read: {e}")))?;
        if !v.is_object() {
            return Err(msg::field(path, "(top level)", "is not a JSON object"));
        }
        Ok(v)
    }

    pub(crate) fn of(path: &'a Path, v: &'a Value) -> Fields<'a> {
        Fields {
            path,
            map: v.as_object().expect("checked by Fields::parse"),
        }
    }

    pub(crate) fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    pub(crate) fn usize(&self, name: &str) -> Result<Option<usize>, LocalError> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| msg::field(self.path, name, format_args!("is {v}, not a count"))),
        }
    }

    pub(crate) fn positive(&self, name: &str) -> Result<usize, LocalError> {
        match self.usize(name)? {
            None => Err(msg::field(self.path, name, "is missing")),
            Some(0) => Err(msg::field(self.path, name, "is 0")),
            Some(n) => Ok(n),
        }
    }

    pub(crate) fn f64(&self, name: &str) -> Result<Option<f64>, LocalError> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .filter(|x| x.is_finite())
                .map(Some)
                .ok_or_else(|| msg::field(self.path, name, format_args!("is {v}, not a number"))),
        }
    }

    pub(crate) fn bool(&self, name: &str, default: bool) -> Result<bool, LocalError> {
        match self.get(name) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(msg::field(
                self.path,
                name,
                format_args!("is {v}, not true or false"),
            )),
        }
    }

    pub(crate) fn str(&self, name: &str) -> Result<Option<&'a str>, LocalError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(msg::field(
                self.path,
                name,
                format_args!("is {v}, not a string"),
            )),
        }
    }
}

impl EncoderConfig {
    /// Reads a ModernBERT `config.json`, in the transformers 4 spelling
    /// (`norm_eps`, `global_rope_theta`/`local_rope_theta`,
    /// `global_attn_every_n_layers`) or the transformers 5 one
    /// (`rope_parameters`, `layer_types`); `layer_norm_eps` is read as
    /// `norm_eps`. Anything it cannot run is refused, naming the field.
    pub(crate) fn read(path: &Path) -> Result<EncoderConfig, LocalError> {
        let bytes = read_checkpoint_file(path)?;
        let v = Fields::parse(path, &bytes)?;
        let f = Fields::of(path, &v);
        if let Some(t) = f.str("model_type")?
            && t != "modernbert"
        {
            return Err(msg::field(
                path,
                "model_type",
                format_args!("is {t:?}, not \"modernbert\""),
            ));
        }
        let hidden_size = f.positive("hidden_size")?;
        let heads = f.positive("num_attention_heads")?;
        let n_layers = f.positive("num_hidden_layers")?;
        if !hidden_size.is_multiple_of(heads) {
            return Err(msg::field(
                path,
                "num_attention_heads",
                format_args!("({heads}) does not divide hidden_size ({hidden_size})"),
            ));
        }
        let head_dim = hidden_size / heads;
        if !head_dim.is_multiple_of(2) {
            return Err(msg::field(
                path,
                "num_attention_heads",
                format_args!(
                    "gives an odd head size ({head_dim}), which rotary positions cannot use"
                ),
            ));
        }
        if let Some(d) = f.usize("head_dim")?
            && d != head_dim
        {
            return Err(msg::field(
                path,
                "head_dim",
                format_args!("is {d}, not hidden_size / num_attention_heads = {head_dim}"),
            ));
        }
        let activation = f.str("hidden_activation")?.unwrap_or("gelu");
        if activation != "gelu" {
            return Err(msg::field(
                path,
                "hidden_activation",
                format_args!("is {activation:?}; only \"gelu\" is supported"),
            ));
        }
        let norm_eps = match f.f64("norm_eps")? {
            Some(e) => e,
            None => f.f64("layer_norm_eps")?.unwrap_or(1e-5),
        };
        let layers = match f.get("layer_types") {
            Some(Value::Array(types)) => {
                if types.len() != n_layers {
                    return Err(msg::field(
                        path,
                        "layer_types",
                        format_args!(
                            "has {} entries for {n_layers} layers (num_hidden_layers)",
                            types.len()
                        ),
                    ));
                }
                types
                    .iter()
                    .map(|t| match t.as_str() {
                        Some("full_attention") => Ok(Attention::Global),
                        Some("sliding_attention") => Ok(Attention::Local),
                        _ => Err(msg::field(
                            path,
                            "layer_types",
                            format_args!(
                                "holds {t}; only \"full_attention\" and \"sliding_attention\" are supported"
                            ),
                        )),
                    })
                    .collect::<Result<Vec<_>, _>>()?
            }
            Some(other) => {
                return Err(msg::field(
                    path,
                    "layer_types",
                    format_args!("is {other}, not a list"),
                ));
            }
            None => {
                let every = f.usize("global_attn_every_n_layers")?.unwrap_or(3);
                if every == 0 {
                    return Err(msg::field(path, "global_attn_every_n_layers", "is 0"));
                }
                (0..n_layers)
                    .map(|i| {
                        if i % every == 0 {
                            Attention::Global
                        } else {
                            Attention::Local
                        }
                    })
                    .collect()
            }
        };
        if f.get("rope_scaling").is_some() {
            return Err(msg::field(
                path,
                "rope_scaling",
                "is set; only the default rotary positions are supported",
            ));
        }
        let mut global_theta = f.f64("global_rope_theta")?.unwrap_or(160_000.0);
        let mut local_theta = f.f64("local_rope_theta")?.unwrap_or(10_000.0);
        match f.get("rope_parameters") {
            None => {}
            Some(Value::Object(rope)) => {
                let theta = |part: &Map<String, Value>,
                             name: &str|
                 -> Result<Option<f64>, LocalError> {
                    if let Some(t) = part.get("rope_type").filter(|t| !t.is_null())
                        && t.as_str() != Some("default")
                    {
                        return Err(msg::field(
                            path,
                            "rope_parameters",
                            format_args!("{name} has rope_type {t}; only \"default\" is supported"),
                        ));
                    }
                    match part.get("rope_theta").filter(|t| !t.is_null()) {
                        None => Ok(None),
                        Some(t) => t
                            .as_f64()
                            .filter(|x| x.is_finite() && *x > 0.0)
                            .map(Some)
                            .ok_or_else(|| {
                                msg::field(
                                    path,
                                    "rope_parameters",
                                    format_args!(
                                        "{name} has rope_theta {t}, not a positive number"
                                    ),
                                )
                            }),
                    }
                };
                // A flat form sets both kinds of layer.
                if let Some(t) = theta(rope, "(flat)")? {
                    global_theta = t;
                    local_theta = t;
                }
                for (kind, slot) in [
                    ("full_attention", &mut global_theta),
                    ("sliding_attention", &mut local_theta),
                ] {
                    match rope.get(kind) {
                        None | Some(Value::Null) => {}
                        Some(Value::Object(part)) => {
                            if let Some(t) = theta(part, kind)? {
                                *slot = t;
                            }
                        }
                        Some(other) => {
                            return Err(msg::field(
                                path,
                                "rope_parameters",
                                format_args!("{kind} is {other}, not an object"),
                            ));
                        }
                    }
                }
            }
            Some(other) => {
                return Err(msg::field(
                    path,
                    "rope_parameters",
                    format_args!("is {other}, not an object"),
                ));
            }
        }
        for (name, t) in [
            ("global_rope_theta", global_theta),
            ("local_rope_theta", local_theta),
        ] {
            if t <= 0.0 {
                return Err(msg::field(path, name, format_args!("is {t}, not positive")));
            }
        }
        Ok(EncoderConfig {
            vocab_size: f.positive("vocab_size")?,
            hidden_size,
            intermediate_size: f.positive("intermediate_size")?,
            heads,
            max_positions: f.usize("max_position_embeddings")?.unwrap_or(8192),
            norm_eps,
            norm_bias: f.bool("norm_bias", false)?,
            attention_bias: f.bool("attention_bias", false)?,
            mlp_bias: f.bool("mlp_bias", false)?,
            layers,
            window: f.usize("local_attention")?.unwrap_or(128) / 2,
            global_theta,
            local_theta,
        })
    }
}

/// A checkpoint file's metadata, refused unless it is a regular file (looked
/// at before it is opened: opening a FIFO waits for a writer, and a device
/// such as /dev/zero never ends).
pub(crate) fn regular_file(path: &Path) -> Result<fs::Metadata, LocalError> {
    use std::os::unix::fs::FileTypeExt as _;
    let meta = fs::metadata(path).map_err(|e| msg::read_checkpoint(path, e))?;
    let t = meta.file_type();
    let what = if t.is_file() {
        return Ok(meta);
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else {
        "a socket"
    };
    Err(msg::not_regular(path, what))
}

/// One SHA-256 over the SHA-256 of each of `files` in `dir` (a file that
/// cannot be read, or is not a regular file, counts by its path alone): what a
/// checkpoint style's fingerprint names. Only regular files are opened, so a
/// FIFO in the checkpoint never blocks it.
pub(crate) fn files_fingerprint(dir: &Path, files: &[&str]) -> String {
    let mut all = String::new();
    for name in files {
        let path = dir.join(name);
        let hash = match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => crate::pins::file_sha256(&path)
                .unwrap_or_else(|_| format!("unreadable {}", path.display())),
            _ => format!("absent {}", path.display()),
        };
        all.push_str(&format!("{name}={hash}\n"));
    }
    toolnexus::classifier::Fingerprint::digest(all)
}

/// [`files_fingerprint`] worked out on a thread of its own while a
/// checkpoint loads, or inline when no thread can be started.
pub(crate) enum FilesAside {
    Running(std::thread::JoinHandle<String>),
    Done(String),
}

impl FilesAside {
    pub(crate) fn start(dir: &Path, files: &'static [&'static str]) -> FilesAside {
        let theirs = dir.to_path_buf();
        let spawned = std::thread::Builder::new()
            .name("toolnexus-checkpoint-sha256".into())
            .spawn(move || files_fingerprint(&theirs, files));
        match spawned {
            Ok(handle) => FilesAside::Running(handle),
            Err(_) => FilesAside::Done(files_fingerprint(dir, files)),
        }
    }

    /// The fingerprint (a load that fails drops this and the thread ends on
    /// its own).
    pub(crate) fn finish(self) -> String {
        match self {
            FilesAside::Running(handle) => handle
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p)),
            FilesAside::Done(files) => files,
        }
    }
}

/// A whole checkpoint file, once it is known to be a regular file.
pub(crate) fn read_checkpoint_file(path: &Path) -> Result<Vec<u8>, LocalError> {
    regular_file(path)?;
    fs::read(path).map_err(|e| msg::read_checkpoint(path, e))
}

/// Every tensor of a safetensors file on the CPU, read one at a time: f16
/// and bf16 weights are upcast to f32 as they are read, so the file is never
/// held in memory beside its f32 copy, except those `keep_half` names, which
/// stay as stored (an encoder that runs in bf16 converts them one matrix at a
/// time, so its load never holds the f32 model: [`take`] upcasts what it
/// hands out). Errors name the file and the tensor.
pub(crate) fn read_safetensors(
    path: &Path,
    keep_half: impl Fn(&str) -> bool,
) -> Result<HashMap<String, Tensor>, LocalError> {
    let bad = |why: String| msg::field(path, "(safetensors header)", why);
    regular_file(path)?;
    let mut file = fs::File::open(path).map_err(|e| msg::read_checkpoint(path, e))?;
    let len = file
        .metadata()
        .map_err(|e| msg::read_checkpoint(path, e))?
        .len();
    let mut n = [0u8; 8];
    file.read_exact(&mut n)
        .map_err(|_| bad("is missing: the file is shorter than 8 bytes".into()))?;
    let header_len = u64::from_le_bytes(n);
    if header_len > 100 << 20 || header_len + 8 > len {
        return Err(bad(format!(
            "claims {header_len} bytes, more than the file holds"
        )));
    }
    let mut header = vec![0u8; header_len as usize];
    file.read_exact(&mut header)
        .map_err(|e| msg::read_checkpoint(path, e))?;
    let header: Map<String, Value> =
        serde_json::from_slice(&header).map_err(|e| bad(format!("is not a JSON object: {e}")))?;
    let data_start = 8 + header_len;
    let mut entries: Vec<(&String, DType, Vec<usize>, u64, u64)> = Vec::new();
    for (name, info) in &header {
        if name == "__metadata__" {
            continue;
        }
        let field = |what: &str| msg::field(path, name, what.to_string());
        let dtype = match info.get("dtype").and_then(Value::as_str) {
            Some("F32") => DType::F32,
            Some("F16") => DType::F16,
            Some("BF16") => DType::BF16,
            Some(other) => {
                return Err(msg::field(
                    path,
                    name,
                    format_args!("has dtype {other}; only F32, F16 and BF16 are read"),
                ));
            }
            None => return Err(field("has no dtype")),
        };
        let shape: Vec<usize> = info
            .get("shape")
            .and_then(Value::as_array)
            .and_then(|s| {
                s.iter()
                    .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
                    .collect()
            })
            .ok_or_else(|| field("has no shape"))?;
        let offsets = info
            .get("data_offsets")
            .and_then(Value::as_array)
            .and_then(|o| Some((o.first()?.as_u64()?, o.get(1)?.as_u64()?)))
            .ok_or_else(|| field("has no data_offsets"))?;
        let elements: usize = shape.iter().product();
        let want = (elements * dtype.size_in_bytes()) as u64;
        if offsets.1 < offsets.0 || offsets.1 - offsets.0 != want || data_start + offsets.1 > len {
            return Err(field(
                "has data_offsets that do not fit its shape or the file",
            ));
        }
        entries.push((name, dtype, shape, offsets.0, offsets.1));
    }
    // In file order: the reads then run forward through the file.
    entries.sort_by_key(|e| e.3);
    let mut tensors = HashMap::with_capacity(entries.len());
    let mut buf = Vec::new();
    for (name, dtype, shape, start, end) in entries {
        buf.resize((end - start) as usize, 0);
        file.seek(SeekFrom::Start(data_start + start))
            .and_then(|_| file.read_exact(&mut buf))
            .map_err(|e| msg::read_checkpoint(path, e))?;
        let t = Tensor::from_raw_buffer(&buf, dtype, &shape, &Device::Cpu)
            .and_then(|t| match keep_half(name) {
                true => Ok(t),
                false => t.to_dtype(DType::F32),
            })
            .map_err(|e| msg::weights(path, e))?;
        tensors.insert(name.clone(), t);
    }
    Ok(tensors)
}

/// A tokenizer as its file says, with padding and truncation switched off:
/// rows are built and cut here, by the rules of the model they feed.
pub(crate) fn read_tokenizer(path: &Path) -> Result<Tokenizer, LocalError> {
    let bytes = read_checkpoint_file(path)?;
    let mut tokenizer =
        Tokenizer::from_bytes(&bytes).map_err(|e| msg::tokenizer_source(path, e))?;
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(None)
        .map_err(|e| msg::tokenizer_source(path, e))?;
    Ok(tokenizer)
}

#[cfg(test)]
thread_local! {
    /// The longest text this thread handed to [`token_ids`], in bytes (tests only).
    pub(crate) static LARGEST_TOKENIZED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The ids of `text` with no special tokens added.
pub(crate) fn token_ids(tokenizer: &Tokenizer, text: &str) -> Result<Vec<u32>, LocalError> {
    #[cfg(test)]
    LARGEST_TOKENIZED.with(|m| m.set(m.get().max(text.len())));
    Ok(tokenizer
        .encode_fast(text, false)
        .map_err(msg::tokenize)?
        .get_ids()
        .to_vec())
}

/// The ids of `text` with no special tokens added, as far as a row can hold
/// them: `whole` says whether they are all of `text`'s. A long text is
/// tokenized only in part, a prefix (`from_end`: a suffix) cut where a
/// pre-token begins (an ASCII whitespace character between two
/// non-whitespace ones) and holding at least `need` tokens; those are the
/// whole text's first (last) `need` tokens, because a byte-level BPE
/// tokenizer splits its text into pre-tokens and encodes each alone, and
/// such a cut is a pre-token boundary in both texts. A text with no such
/// place is tokenized whole. So a 50 MB state costs what a few kilobytes do.
pub(crate) fn token_ids_bounded(
    tokenizer: &Tokenizer,
    text: &str,
    need: usize,
    from_end: bool,
) -> Result<(Vec<u32>, bool), LocalError> {
    let mut window = need.saturating_mul(16).max(4096);
    loop {
        if window >= text.len() {
            return Ok((token_ids(tokenizer, text)?, true));
        }
        let part = if from_end {
            suffix_at_boundary(text, window)
        } else {
            prefix_at_boundary(text, window)
        };
        if let Some(part) = part {
            let ids = token_ids(tokenizer, part)?;
            if ids.len() >= need {
                return Ok((ids, false));
            }
        }
        window = window.saturating_mul(2);
    }
}

/// Whether `text` has a pre-token boundary at byte `c`: an ASCII whitespace
/// character there, and no whitespace just before or after it.
fn boundary_at(text: &str, c: usize) -> bool {
    let b = text.as_bytes();
    c > 0
        && matches!(b.get(c), Some(b' ' | b'\t' | b'\n' | b'\r'))
        && text[..c]
            .chars()
            .next_back()
            .is_some_and(|p| !p.is_whitespace())
        && text[c + 1..]
            .chars()
            .next()
            .is_some_and(|n| !n.is_whitespace())
}

/// The longest prefix of `text` within `window` bytes (and longer than half
/// of it) that ends at a pre-token boundary.
fn prefix_at_boundary(text: &str, window: usize) -> Option<&str> {
    let hi = crate::text::floor_char_boundary(text, window);
    let lo = crate::text::floor_char_boundary(text, window / 2);
    (lo..=hi)
        .rev()
        .find(|&c| boundary_at(text, c))
        .map(|c| &text[..c])
}

/// The longest suffix of `text` within `window` bytes (and longer than half
/// of it) that starts at a pre-token boundary.
fn suffix_at_boundary(text: &str, window: usize) -> Option<&str> {
    let lo = text.len().saturating_sub(window);
    let hi = text.len().saturating_sub(window / 2);
    (lo..=hi)
        .find(|&c| boundary_at(text, c))
        .map(|c| &text[c..])
}

/// Queries attended at once: longer rows run in blocks of this many, so the
/// scores of an 8,192-token row never take [8,192 × 8,192] floats.
const QUERY_BLOCK: usize = 512;

/// Tokens run through a layer at once: a batch's rows go in groups of about
/// this many (whole rows; one longer row alone), so the buffers between the
/// matrix products stay a few tens of MB however large the batch.
const GROUP_TOKENS: usize = 2048;

struct Layer {
    attention: Attention,
    attn_norm: Option<Norm>,
    qkv: Lin,
    out: Lin,
    mlp_norm: Norm,
    wi: Lin,
    wo: Lin,
}

/// The token embeddings: f32 as read, or bf16 when the encoder runs in
/// bf16 (half the memory: a 50,368 × 1,024 table is 206 MB in f32).
enum Table {
    F32(Tensor),
    Bf16(Vec<u16>),
}

/// The encoder, ready to run.
pub(crate) struct ModernBert {
    embeddings: Table,
    embed_norm: Norm,
    layers: Vec<Layer>,
    final_norm: Norm,
    heads: usize,
    head_dim: usize,
    hidden: usize,
    intermediate: usize,
    vocab: usize,
    window: usize,
    max_positions: usize,
    /// Rotary inverse frequencies, global then local, in f32 as the
    /// reference computes them.
    inv_freq: [Vec<f32>; 2],
}

fn norm(
    map: &mut HashMap<String, Tensor>,
    name: &str,
    c: &EncoderConfig,
) -> candle_core::Result<Norm> {
    Norm::take(map, name, c.hidden_size, c.norm_bias, c.norm_eps as f32)
}

fn linear(
    map: &mut HashMap<String, Tensor>,
    name: &str,
    (out, inp): (usize, usize),
    bias: bool,
    bf16: bool,
) -> candle_core::Result<Lin> {
    let b = if bias {
        Some(take(map, &format!("{name}.bias"), &[out])?)
    } else {
        None
    };
    Lin::new(
        take_as_stored(map, &format!("{name}.weight"), &[out, inp])?,
        b,
        bf16,
    )
}

/// A `[rows, cols]` table of any float type as bf16 values, row-major,
/// converted 1,024 rows at a time: the table is never held in f32 (206 MB
/// for Laya's 50,368 × 1,024 token embeddings).
fn bf16_rows(t: &Tensor) -> candle_core::Result<Vec<u16>> {
    let (rows, cols) = t.dims2()?;
    let mut out = Vec::with_capacity(rows * cols);
    for start in (0..rows).step_by(1024) {
        let chunk = t
            .narrow(0, start, 1024.min(rows - start))?
            .to_dtype(DType::F32)?;
        out.extend(Held::of(&chunk)?.values().iter().map(|&v| to_bf16(v)));
    }
    Ok(out)
}

fn inv_freq(theta: f64, head_dim: usize) -> Vec<f32> {
    // 1 / theta^(2i/d), in f32 like the reference.
    (0..head_dim / 2)
        .map(|i| {
            let exponent = (2 * i) as f32 / head_dim as f32;
            1.0f32 / (theta as f32).powf(exponent)
        })
        .collect()
}

impl ModernBert {
    /// The encoder from weights under their transformers names
    /// (`embeddings.tok_embeddings.weight`, `layers.N.attn.Wqkv.weight`, …)
    /// after `prefix`, taken out of `map` (what is left is the caller's).
    /// With `bf16`, the linear layers and the token embeddings are converted
    /// once and kept in bf16 only (each f32 tensor dropped once converted);
    /// the norms stay f32.
    pub(crate) fn load(
        map: &mut HashMap<String, Tensor>,
        prefix: &str,
        c: &EncoderConfig,
        bf16: bool,
    ) -> candle_core::Result<ModernBert> {
        let h = c.hidden_size;
        let p = |name: &str| format!("{prefix}{name}");
        let embeddings = take_as_stored(
            map,
            &p("embeddings.tok_embeddings.weight"),
            &[c.vocab_size, h],
        )?;
        let embeddings = match bf16 {
            true => Table::Bf16(bf16_rows(&embeddings)?),
            false => {
                let embeddings = embeddings.to_dtype(DType::F32)?;
                Held::of(&embeddings)?;
                Table::F32(embeddings)
            }
        };
        let embed_norm = norm(map, &p("embeddings.norm"), c)?;
        let layers = c
            .layers
            .iter()
            .enumerate()
            .map(|(i, &attention)| {
                let l = |name: &str| p(&format!("layers.{i}.{name}"));
                Ok(Layer {
                    attention,
                    attn_norm: if i == 0 {
                        None
                    } else {
                        Some(norm(map, &l("attn_norm"), c)?)
                    },
                    qkv: linear(map, &l("attn.Wqkv"), (3 * h, h), c.attention_bias, bf16)?,
                    out: linear(map, &l("attn.Wo"), (h, h), c.attention_bias, bf16)?,
                    mlp_norm: norm(map, &l("mlp_norm"), c)?,
                    wi: linear(
                        map,
                        &l("mlp.Wi"),
                        (2 * c.intermediate_size, h),
                        c.mlp_bias,
                        bf16,
                    )?,
                    wo: linear(
                        map,
                        &l("mlp.Wo"),
                        (h, c.intermediate_size),
                        c.mlp_bias,
                        bf16,
                    )?,
                })
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        let head_dim = h / c.heads;
        Ok(ModernBert {
            embeddings,
            embed_norm,
            layers,
            final_norm: norm(map, &p("final_norm"), c)?,
            heads: c.heads,
            head_dim,
            hidden: h,
            intermediate: c.intermediate_size,
            vocab: c.vocab_size,
            window: c.window,
            max_positions: c.max_positions,
            inv_freq: [
                inv_freq(c.global_theta, head_dim),
                inv_freq(c.local_theta, head_dim),
            ],
        })
    }

    /// The most tokens one row may hold.
    pub(crate) fn max_positions(&self) -> usize {
        self.max_positions
    }

    /// cos and sin `[t, head_dim / 2]` for positions `0..t`.
    fn rotary(&self, which: usize, t: usize) -> (Vec<f32>, Vec<f32>) {
        let freq = &self.inv_freq[which];
        let half = freq.len();
        let mut cos = Vec::with_capacity(t * half);
        let mut sin = Vec::with_capacity(t * half);
        for p in 0..t {
            for f in freq {
                let angle = f64::from(p as f32 * f);
                cos.push(angle.cos() as f32);
                sin.push(angle.sin() as f32);
            }
        }
        (cos, sin)
    }

    /// The last hidden states of every real token of `rows`, packed row
    /// after row. Rows never see each other: a row's states are the same
    /// (to float rounding) whatever rows run beside it.
    pub(crate) fn forward(&self, rows: &[&[u32]]) -> candle_core::Result<Packed> {
        self.forward_in_blocks(rows, QUERY_BLOCK, GROUP_TOKENS)
    }

    /// [`forward`](ModernBert::forward) with attention run `block` queries at
    /// a time, and rows in groups of about `group` tokens.
    fn forward_in_blocks(
        &self,
        rows: &[&[u32]],
        block: usize,
        group: usize,
    ) -> candle_core::Result<Packed> {
        let (h, inter) = (self.hidden, self.intermediate);
        let lengths: Vec<usize> = rows.iter().map(|r| r.len()).collect();
        let (starts, n) = packed_starts(&lengths);
        let mut x = vec![0f32; n * h];
        {
            let held;
            let table = match &self.embeddings {
                Table::F32(t) => {
                    held = Held::of(t)?;
                    Ok(held.values())
                }
                Table::Bf16(t) => Err(t.as_slice()),
            };
            for (&id, x) in rows.iter().flat_map(|r| r.iter()).zip(x.chunks_mut(h)) {
                let id = id as usize;
                if id >= self.vocab {
                    candle_core::bail!("token id {id} is outside the vocabulary ({})", self.vocab);
                }
                match table {
                    Ok(t) => x.copy_from_slice(&t[id * h..(id + 1) * h]),
                    Err(t) => {
                        let row = &t[id * h..(id + 1) * h];
                        x.iter_mut().zip(row).for_each(|(x, &v)| *x = from_bf16(v));
                    }
                }
            }
        }
        let mut scratch = vec![0f32; n * h];
        HeldNorm::of(&self.embed_norm)?.apply(&x, &mut scratch);
        std::mem::swap(&mut x, &mut scratch);
        drop(scratch);

        let groups = groups(&lengths, group);
        let most = groups.iter().map(|g| g.tokens).max().unwrap_or(0);
        let longest = lengths.iter().copied().max().unwrap_or(0);
        let mut normed = vec![0f32; most * h];
        let mut qkv = vec![0f32; most * 3 * h];
        let mut ctx = vec![0f32; most * h];
        let mut up = vec![0f32; most * 2 * inter];
        let mut act = vec![0f32; most * inter];
        let rope = [self.rotary(0, longest), self.rotary(1, longest)];
        for layer in &self.layers {
            let attn_norm = layer.attn_norm.as_ref().map(HeldNorm::of).transpose()?;
            let mlp_norm = HeldNorm::of(&layer.mlp_norm)?;
            let (w_qkv, w_out) = (HeldLin::of(&layer.qkv)?, HeldLin::of(&layer.out)?);
            let (w_in, w_down) = (HeldLin::of(&layer.wi)?, HeldLin::of(&layer.wo)?);
            let (which, window) = match layer.attention {
                Attention::Global => (0, None),
                Attention::Local => (1, Some(self.window)),
            };
            let attend = Attend {
                heads: self.heads,
                head_dim: self.head_dim,
                rope: Some(Rope {
                    cos: &rope[which].0,
                    sin: &rope[which].1,
                }),
                window,
                block,
            };
            for g in &groups {
                let (first, tokens) = (g.first_token, g.tokens);
                let x = &mut x[first * h..(first + tokens) * h];
                let normed = &mut normed[..tokens * h];
                let input: &[f32] = match &attn_norm {
                    Some(norm) => {
                        norm.apply(x, normed);
                        normed
                    }
                    None => x,
                };
                let qkv = &mut qkv[..tokens * 3 * h];
                w_qkv.apply(Rows::packed(input, tokens, h), qkv, Out::Overwrite);
                let rows = g.rows(&starts, &lengths);
                let ctx = &mut ctx[..tokens * h];
                attention(qkv, &rows, &attend, ctx);
                w_out.apply(Rows::packed(ctx, tokens, h), x, Out::Add);
                mlp_norm.apply(x, normed);
                let up = &mut up[..tokens * 2 * inter];
                w_in.apply(Rows::packed(normed, tokens, h), up, Out::Overwrite);
                let act = &mut act[..tokens * inter];
                geglu(up, act, inter);
                w_down.apply(Rows::packed(act, tokens, inter), x, Out::Add);
            }
        }
        drop((normed, qkv, ctx, up, act));

        let mut out = vec![0f32; n * h];
        HeldNorm::of(&self.final_norm)?.apply(&x, &mut out);
        Ok(Packed {
            data: out,
            starts,
            hidden: h,
        })
    }
}

#[cfg(test)]
mod tests;
