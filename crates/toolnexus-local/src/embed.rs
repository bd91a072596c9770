//! [`Embedder`]: sentence embeddings from a BERT model directory on the CPU —
//! tokenise (max 256 tokens), run the encoder, mean-pool over the attention
//! mask, L2-normalise. And [`model_dir`]: where that directory is.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use candle_core::{DType, Device};
use sha2::{Digest, Sha256};
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};
use toolnexus::classifier::EnvSource;

use crate::bert::{Bert, Config};
use crate::error::{LocalError, msg};
use crate::pins::{CONFIG_FILE, TOKENIZER_FILE, WEIGHTS_FILE, hex};
use crate::text::Cutter;

/// The environment variable naming the model directory.
pub const MODEL_DIR_ENV: &str = "TOOLNEXUS_MODEL_DIR";

/// The most tokens of one text the model reads, `[CLS]` and `[SEP]` included;
/// the rest is cut off. all-MiniLM-L6-v2 was trained on sequences of at most 256.
pub const MAX_TOKENS: usize = 256;

/// Texts per forward pass: bounds the memory of one pass (its hidden states,
/// at most `GROUP` × [`MAX_TOKENS`] tokens). Nothing is padded: the encoder
/// packs a group's texts end to end.
const GROUP: usize = 32;

/// The model directory: `explicit` when given, else `$TOOLNEXUS_MODEL_DIR` when
/// set and non-empty, else `$HOME/.cache/toolnexus/models/all-minilm-l6-v2`.
/// Variables are read from `env` (use [`EnvSource::process`] for the process
/// environment) when this is called, never earlier. Nothing is checked on disk.
///
/// ```
/// use std::path::{Path, PathBuf};
/// use toolnexus::classifier::EnvSource;
/// use toolnexus_local::model_dir;
///
/// let env = EnvSource::from_map([("HOME", "/home/ada")]);
/// assert_eq!(
///     model_dir(None, &env)?,
///     PathBuf::from("/home/ada/.cache/toolnexus/models/all-minilm-l6-v2")
/// );
/// let env = EnvSource::from_map([("HOME", "/home/ada"), ("TOOLNEXUS_MODEL_DIR", "/models/minilm")]);
/// assert_eq!(model_dir(None, &env)?, PathBuf::from("/models/minilm"));
/// assert_eq!(model_dir(Some(Path::new("here")), &env)?, PathBuf::from("here"));
/// assert!(model_dir(None, &EnvSource::from_map::<&str, &str>([])).is_err());
/// # Ok::<(), toolnexus_local::LocalError>(())
/// ```
pub fn model_dir(explicit: Option<&Path>, env: &EnvSource) -> Result<PathBuf, LocalError> {
    if let Some(dir) = explicit {
        return Ok(dir.to_path_buf());
    }
    if let Some(dir) = env.get(MODEL_DIR_ENV).filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    match env.get("HOME").filter(|h| !h.is_empty()) {
        Some(home) => Ok(Path::new(&home)
            .join(".cache")
            .join("toolnexus")
            .join("models")
            .join("all-minilm-l6-v2")),
        None => Err(msg::no_model_dir()),
    }
}

/// A sentence-embedding model on the CPU: all-MiniLM-L6-v2, or any BERT model
/// directory of the same shape (`config.json`, `tokenizer.json`,
/// `model.safetensors`).
///
/// Each text is tokenised with the model's WordPiece tokenizer (at most
/// [`MAX_TOKENS`], the shipped file's fixed 128-token padding and truncation
/// overridden), run through the encoder, averaged over its real tokens (padding
/// masked out), and L2-normalised, so the dot product of two embeddings is
/// their cosine similarity.
///
/// Cheap to clone (the model is shared) and safe to use from many threads.
/// Embedding is CPU-bound and blocks the calling thread: from async code, call
/// it inside `tokio::task::spawn_blocking`.
///
/// ```
/// use toolnexus_local::Embedder;
///
/// # fn main() -> Result<(), toolnexus_local::LocalError> {
/// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-embedder-{}", std::process::id()));
/// # toolnexus_local::tiny_model_for_tests(&dir)?;
/// let embedder = Embedder::load(&dir)?;
/// let v = embedder.embed(&["a refund for a double charge", "my parcel is late"])?;
/// assert_eq!(v.len(), 2);
/// assert_eq!(v[0].len(), embedder.dimension());
/// let norm: f32 = v[0].iter().map(|x| x * x).sum::<f32>().sqrt();
/// assert!((norm - 1.0).abs() < 1e-5);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Embedder {
    inner: Arc<Inner>,
}

struct Inner {
    model: Bert,
    tokenizer: Tokenizer,
    /// Where a long text can be cut before tokenisation (the same tokenizer
    /// without truncation, and its cut rule).
    text: Cutter,
    max_tokens: usize,
    dimension: usize,
    model_hash: String,
}

/// Embeddings with the number of tokens the model read for each text.
///
/// ```
/// # fn main() -> Result<(), toolnexus_local::LocalError> {
/// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-embeddings-{}", std::process::id()));
/// # toolnexus_local::tiny_model_for_tests(&dir)?;
/// let embedder = toolnexus_local::Embedder::load(&dir)?;
/// let e = embedder.embed_counted(&["hello world"])?;
/// assert_eq!(e.tokens, [4]); // [CLS] hello world [SEP]
/// assert_eq!(e.total_tokens(), 4);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Embeddings {
    /// One unit-length vector per text, in input order.
    pub vectors: Vec<Vec<f32>>,
    /// Tokens read per text (after truncation), in input order.
    pub tokens: Vec<usize>,
}

impl Embeddings {
    /// Tokens read over all texts.
    ///
    /// ```
    /// # fn main() -> Result<(), toolnexus_local::LocalError> {
    /// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-total-{}", std::process::id()));
    /// # toolnexus_local::tiny_model_for_tests(&dir)?;
    /// # let embedder = toolnexus_local::Embedder::load(&dir)?;
    /// let e = embedder.embed_counted(&["hello", "hello world"])?;
    /// assert_eq!(e.total_tokens(), 3 + 4);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(())
    /// # }
    /// ```
    pub fn total_tokens(&self) -> usize {
        self.tokens.iter().sum()
    }
}

impl Embedder {
    /// Loads the model in `dir` (see [`model_dir`] for where it usually is):
    /// [`CONFIG_FILE`], [`TOKENIZER_FILE`] and [`WEIGHTS_FILE`]. A missing or
    /// unusable file is an error naming it.
    ///
    /// ```no_run
    /// use toolnexus::classifier::EnvSource;
    /// use toolnexus_local::{Embedder, model_dir};
    ///
    /// # fn main() -> Result<(), toolnexus_local::LocalError> {
    /// let embedder = Embedder::load(model_dir(None, &EnvSource::process())?)?;
    /// assert_eq!(embedder.dimension(), 384);
    /// # Ok(())
    /// # }
    /// ```
    pub fn load(dir: impl AsRef<Path>) -> Result<Embedder, LocalError> {
        let dir = dir.as_ref();
        Embedder::from_files(
            dir.join(CONFIG_FILE),
            dir.join(TOKENIZER_FILE),
            dir.join(WEIGHTS_FILE),
        )
    }

    /// Loads the model from three files named one by one.
    ///
    /// ```
    /// # fn main() -> Result<(), toolnexus_local::LocalError> {
    /// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-from-files-{}", std::process::id()));
    /// # toolnexus_local::tiny_model_for_tests(&dir)?;
    /// let embedder = toolnexus_local::Embedder::from_files(
    ///     dir.join("config.json"),
    ///     dir.join("tokenizer.json"),
    ///     dir.join("model.safetensors"),
    /// )?;
    /// assert_eq!(embedder.max_tokens(), 256);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(())
    /// # }
    /// ```
    pub fn from_files(
        config: impl AsRef<Path>,
        tokenizer: impl AsRef<Path>,
        weights: impl AsRef<Path>,
    ) -> Result<Embedder, LocalError> {
        let (config_path, tokenizer_path, weights_path) =
            (config.as_ref(), tokenizer.as_ref(), weights.as_ref());
        let config = read_config(config_path)?;
        let tokenizer = read_tokenizer(tokenizer_path, &config)?;
        let bytes = Arc::new(fs::read(weights_path).map_err(|e| msg::read(weights_path, e))?);
        // The hash takes about as long as the rest of the load: it runs
        // beside it, and the last of the two to finish with the file's bytes
        // frees them.
        let model_hash = Sha256Aside::start(Arc::clone(&bytes));
        let device = Device::Cpu;
        let tensors = candle_core::safetensors::load_buffer(&bytes, &device)
            .map_err(|e| msg::weights(weights_path, e))?;
        drop(bytes);
        let mut tensors = tensors
            .into_iter()
            .map(|(name, t)| Ok((name, t.to_dtype(DType::F32)?.contiguous()?)))
            .collect::<candle_core::Result<HashMap<_, _>>>()
            .map_err(|e| msg::weights(weights_path, e))?;
        let model = Bert::load(&mut tensors, &config)
            .map_err(|e| msg::weights_mismatch(weights_path, e))?;
        let max_tokens = MAX_TOKENS.min(config.max_position_embeddings);
        let (tokenizer, probe) = fit_tokenizer(tokenizer, tokenizer_path, max_tokens)?;
        let text = Cutter::new(probe, max_tokens);
        let model_hash = model_hash.finish();
        Ok(Embedder {
            inner: Arc::new(Inner {
                model,
                tokenizer,
                text,
                max_tokens,
                dimension: config.hidden_size,
                model_hash,
            }),
        })
    }

    /// One unit-length embedding per text, in input order. Texts are batched
    /// internally by length; padding is masked out, so an embedding does not
    /// depend on the other texts of the call beyond float rounding (well under
    /// 1e-5). An empty slice gives an empty result.
    ///
    /// Blocks the calling thread for the forward pass.
    ///
    /// ```
    /// # fn main() -> Result<(), toolnexus_local::LocalError> {
    /// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-embed-{}", std::process::id()));
    /// # toolnexus_local::tiny_model_for_tests(&dir)?;
    /// let embedder = toolnexus_local::Embedder::load(&dir)?;
    /// let alone = embedder.embed(&["late parcel"])?;
    /// let batched = embedder.embed(&["late parcel", "the refund for the double charge is late"])?;
    /// let gap = alone[0].iter().zip(&batched[0]).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
    /// assert!(gap < 1e-5);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(())
    /// # }
    /// ```
    pub fn embed<S: AsRef<str>>(&self, texts: &[S]) -> Result<Vec<Vec<f32>>, LocalError> {
        self.embed_counted(texts).map(|e| e.vectors)
    }

    /// [`embed`](Embedder::embed), with the number of tokens read per text.
    ///
    /// ```
    /// # fn main() -> Result<(), toolnexus_local::LocalError> {
    /// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-counted-{}", std::process::id()));
    /// # toolnexus_local::tiny_model_for_tests(&dir)?;
    /// let embedder = toolnexus_local::Embedder::load(&dir)?;
    /// let long = "hello ".repeat(1000);
    /// let e = embedder.embed_counted(&[long.as_str()])?;
    /// assert_eq!(e.tokens, [256]);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(())
    /// # }
    /// ```
    pub fn embed_counted<S: AsRef<str>>(&self, texts: &[S]) -> Result<Embeddings, LocalError> {
        let parts: Vec<Cow<'_, str>> = texts
            .iter()
            .map(|t| self.readable(t.as_ref()))
            .collect::<Result<_, _>>()?;
        let inputs: Vec<&str> = parts.iter().map(|p| p.as_ref()).collect();
        self.note_inputs(&inputs);
        let encodings = self
            .inner
            .tokenizer
            .encode_batch_fast(inputs, true)
            .map_err(msg::tokenize)?;
        let ids: Vec<&[u32]> = encodings.iter().map(|e| e.get_ids()).collect();
        let tokens: Vec<usize> = ids.iter().map(|i| i.len()).collect();
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| tokens[i]);
        let mut vectors = vec![Vec::new(); ids.len()];
        for group in order.chunks(GROUP) {
            let batch: Vec<&[u32]> = group.iter().map(|&i| ids[i]).collect();
            let out = self.forward(&batch).map_err(msg::inference)?;
            for (&i, v) in group.iter().zip(out) {
                vectors[i] = v;
            }
        }
        Ok(Embeddings { vectors, tokens })
    }

    /// The token ids the model reads for `text`: `[CLS]`, the WordPiece ids,
    /// `[SEP]`, at most [`max_tokens`](Embedder::max_tokens) in all.
    ///
    /// ```
    /// # fn main() -> Result<(), toolnexus_local::LocalError> {
    /// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-ids-{}", std::process::id()));
    /// # toolnexus_local::tiny_model_for_tests(&dir)?;
    /// let embedder = toolnexus_local::Embedder::load(&dir)?;
    /// let ids = embedder.token_ids("Hello, world!")?;
    /// assert_eq!(ids.len(), 6); // [CLS] hello , world ! [SEP]
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(())
    /// # }
    /// ```
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>, LocalError> {
        let text = self.readable(text)?;
        self.note_inputs(&[&text]);
        let e = self
            .inner
            .tokenizer
            .encode_fast(text.as_ref(), true)
            .map_err(msg::tokenize)?;
        Ok(e.get_ids().to_vec())
    }

    /// The part of `text` the model reads: its shortest prefix, among those
    /// tried, whose tokens are exactly the tokens of the whole text up to
    /// [`max_tokens`](Embedder::max_tokens). Embedding the prefix gives the
    /// same embedding and token count as embedding the whole text, and costs
    /// what a text of a few kilobytes costs however long `text` is: every
    /// method of the embedder tokenises only this part.
    ///
    /// ```
    /// # fn main() -> Result<(), toolnexus_local::LocalError> {
    /// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-read-part-{}", std::process::id()));
    /// # toolnexus_local::tiny_model_for_tests(&dir)?;
    /// let embedder = toolnexus_local::Embedder::load(&dir)?;
    /// assert_eq!(embedder.read_part("hello world")?, "hello world");
    /// let huge = "hello ".repeat(1_000_000);
    /// let read = embedder.read_part(&huge)?;
    /// assert!(read.len() < 20_000);
    /// assert_eq!(embedder.token_ids(read)?, embedder.token_ids(&huge)?);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(())
    /// # }
    /// ```
    pub fn read_part<'t>(&self, text: &'t str) -> Result<&'t str, LocalError> {
        self.inner.text.read_part(text)
    }

    /// What the embedder tokenises of `text` (see [`Cutter::readable`]).
    pub(crate) fn readable<'t>(&self, text: &'t str) -> Result<Cow<'t, str>, LocalError> {
        self.inner.text.readable(text)
    }

    /// `part` cut where the model stops reading, or `None` when more of the
    /// text is needed (see [`Cutter::settled`]).
    pub(crate) fn settled<'t>(
        &self,
        part: Cow<'t, str>,
        truncated: bool,
    ) -> Result<Option<Cow<'t, str>>, LocalError> {
        self.inner.text.settled(part, truncated)
    }

    /// The length runs of ASCII letters and digits may be shortened to (see
    /// [`Cutter::long_words`]).
    pub(crate) fn long_words(&self) -> Option<usize> {
        self.inner.text.long_words()
    }

    /// The first window tried when cutting a text, in bytes.
    pub(crate) fn first_window(&self) -> usize {
        self.inner.text.first_window()
    }

    /// Records the longest tokenizer input (tests only; nothing otherwise).
    fn note_inputs(&self, texts: &[&str]) {
        self.inner.text.note_inputs(texts);
    }

    /// The longest text handed to the tokenizer so far, in bytes (tests only).
    #[cfg(test)]
    pub(crate) fn largest_input(&self) -> usize {
        self.inner.text.largest_input()
    }

    /// The length of every embedding (384 for all-MiniLM-L6-v2).
    ///
    /// ```
    /// # fn main() -> Result<(), toolnexus_local::LocalError> {
    /// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-dim-{}", std::process::id()));
    /// # toolnexus_local::tiny_model_for_tests(&dir)?;
    /// let embedder = toolnexus_local::Embedder::load(&dir)?;
    /// assert_eq!(embedder.dimension(), 32); // the tiny test model
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(())
    /// # }
    /// ```
    pub fn dimension(&self) -> usize {
        self.inner.dimension
    }

    /// The most tokens of one text the model reads: [`MAX_TOKENS`], or less
    /// when the model has fewer positions.
    ///
    /// ```
    /// # fn main() -> Result<(), toolnexus_local::LocalError> {
    /// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-max-{}", std::process::id()));
    /// # toolnexus_local::tiny_model_for_tests(&dir)?;
    /// let embedder = toolnexus_local::Embedder::load(&dir)?;
    /// assert_eq!(embedder.max_tokens(), toolnexus_local::MAX_TOKENS);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(())
    /// # }
    /// ```
    pub fn max_tokens(&self) -> usize {
        self.inner.max_tokens
    }

    /// The SHA-256 of the weights file as loaded, lower-case hex: what pins a
    /// student or a cache to this exact model ([`MODEL_SHA256`] for the real one).
    ///
    /// ```
    /// # fn main() -> Result<(), toolnexus_local::LocalError> {
    /// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-hash-{}", std::process::id()));
    /// # toolnexus_local::tiny_model_for_tests(&dir)?;
    /// let embedder = toolnexus_local::Embedder::load(&dir)?;
    /// assert_eq!(embedder.model_hash().len(), 64);
    /// assert_ne!(embedder.model_hash(), toolnexus_local::MODEL_SHA256);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(())
    /// # }
    /// ```
    pub fn model_hash(&self) -> &str {
        &self.inner.model_hash
    }

    /// Embeds one group of token id sequences: the mean of each text's
    /// last hidden states, scaled to unit length.
    fn forward(&self, batch: &[&[u32]]) -> candle_core::Result<Vec<Vec<f32>>> {
        let hidden = self.inner.model.forward(batch)?;
        let h = hidden.hidden;
        Ok(batch
            .iter()
            .enumerate()
            .map(|(row, ids)| {
                let mut mean = vec![0f32; h];
                for p in 0..ids.len() {
                    mean.iter_mut()
                        .zip(hidden.token(row, p))
                        .for_each(|(m, v)| *m += v);
                }
                let count = ids.len().max(1) as f32;
                mean.iter_mut().for_each(|m| *m /= count);
                let norm = mean.iter().map(|m| m * m).sum::<f32>().sqrt().max(1e-12);
                mean.iter_mut().for_each(|m| *m /= norm);
                mean
            })
            .collect())
    }
}

impl fmt::Debug for Embedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Embedder")
            .field("dimension", &self.inner.dimension)
            .field("max_tokens", &self.inner.max_tokens)
            .field("model_hash", &self.inner.model_hash)
            .finish_non_exhaustive()
    }
}

fn read_config(path: &Path) -> Result<Config, LocalError> {
    let text = fs::read(path).map_err(|e| msg::read(path, e))?;
    let config: Config = serde_json::from_slice(&text).map_err(|e| msg::config(path, e))?;
    if let Some(why) = config.unsupported() {
        return Err(msg::config(path, why));
    }
    Ok(config)
}

fn read_tokenizer(path: &Path, config: &Config) -> Result<Tokenizer, LocalError> {
    let bytes = fs::read(path).map_err(|e| msg::read(path, e))?;
    let tokenizer = Tokenizer::from_bytes(&bytes).map_err(|e| msg::tokenizer_source(path, e))?;
    let size = tokenizer.get_vocab_size(true);
    if size > config.vocab_size {
        return Err(msg::tokenizer(
            path,
            format_args!(
                "it has {size} tokens but config.json's vocab_size is {}",
                config.vocab_size
            ),
        ));
    }
    Ok(tokenizer)
}

/// The tokenizer with its shipped padding removed (the encoder reads each
/// text's own tokens, unpadded) and truncation at `max_tokens`; and the probe
/// (no padding, no truncation).
fn fit_tokenizer(
    mut tokenizer: Tokenizer,
    path: &Path,
    max_tokens: usize,
) -> Result<(Tokenizer, Tokenizer), LocalError> {
    tokenizer.with_padding(None);
    let mut probe = tokenizer.clone();
    probe
        .with_truncation(None)
        .map_err(|e| msg::tokenizer_source(path, e))?;
    tokenizer
        .with_truncation(Some(TruncationParams {
            direction: TruncationDirection::Right,
            max_length: max_tokens,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
        }))
        .map_err(|e| msg::tokenizer_source(path, e))?;
    Ok((tokenizer, probe))
}

/// A SHA-256 worked out on a thread of its own, or inline when no thread can
/// be started.
enum Sha256Aside {
    Running(std::thread::JoinHandle<String>),
    Done(String),
}

impl Sha256Aside {
    fn start(bytes: Arc<Vec<u8>>) -> Sha256Aside {
        let theirs = Arc::clone(&bytes);
        let spawned = std::thread::Builder::new()
            .name("toolnexus-weights-sha256".into())
            .spawn(move || hex(&Sha256::digest(theirs.as_slice())));
        match spawned {
            Ok(handle) => Sha256Aside::Running(handle),
            Err(_) => Sha256Aside::Done(hex(&Sha256::digest(bytes.as_slice()))),
        }
    }

    /// The digest, lower-case hex.
    fn finish(self) -> String {
        match self {
            // Hashing a slice cannot panic; were it to, the panic goes on
            // as the caller's own, as if the hash had run inline.
            Sha256Aside::Running(handle) => handle
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p)),
            Sha256Aside::Done(hash) => hash,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use sha2::{Digest, Sha256};
    use toolnexus::classifier::EnvSource;

    use super::*;
    use crate::text::shorten_long_runs;
    use crate::tiny::testing::{TempDir, tiny};
    use crate::tiny_model_for_tests;

    fn max_gap(a: &[f32], b: &[f32]) -> f32 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    }

    fn norm(v: &[f32]) -> f32 {
        v.iter().map(|x| x * x).sum::<f32>().sqrt()
    }

    #[test]
    fn shapes_and_unit_norms() {
        let (_dir, e) = tiny("shapes");
        let texts = [
            "hello",
            "the parcel is late",
            "",
            "refund my double charge, please!",
        ];
        let v = e.embed(&texts).unwrap();
        assert_eq!(v.len(), texts.len());
        for (t, x) in texts.iter().zip(&v) {
            assert_eq!(x.len(), 32, "{t:?}");
            assert!(x.iter().all(|f| f.is_finite()), "{t:?}");
            assert!((norm(x) - 1.0).abs() < 1e-5, "{t:?}: norm {}", norm(x));
        }
        assert_ne!(v[0], v[1]);
        assert!(e.embed::<&str>(&[]).unwrap().is_empty());
        let owned = vec!["hello".to_string()];
        assert_eq!(e.embed(&owned).unwrap(), e.embed(&["hello"]).unwrap());
    }

    #[test]
    fn padding_does_not_change_an_embedding() {
        let (_dir, e) = tiny("padding");
        let short = "late parcel";
        let long = "the refund for the double charge of my order is late and not moved, \
                    the customer wants money back for the parcel";
        let alone = e.embed(&[short]).unwrap();
        let batched = e.embed(&[long, short, "hello"]).unwrap();
        assert!(
            max_gap(&alone[0], &batched[1]) < 1e-5,
            "{}",
            max_gap(&alone[0], &batched[1])
        );
        let long_alone = e.embed(&[long]).unwrap();
        assert!(max_gap(&long_alone[0], &batched[0]) < 1e-5);
    }

    #[test]
    fn many_texts_keep_their_order_across_groups() {
        let (_dir, e) = tiny("groups");
        // More texts than one group, of many lengths, shuffled by length.
        let texts: Vec<String> = (0..(2 * GROUP + 5))
            .map(|i| "hello world ".repeat((i * 7) % 13 + 1))
            .collect();
        let all = e.embed_counted(&texts).unwrap();
        for (i, t) in texts.iter().enumerate() {
            let one = e.embed_counted(&[t]).unwrap();
            assert_eq!(one.tokens[0], all.tokens[i], "text {i}");
            assert!(max_gap(&one.vectors[0], &all.vectors[i]) < 1e-5, "text {i}");
        }
    }

    #[test]
    fn the_shipped_fixed_padding_and_truncation_are_overridden() {
        let (_dir, e) = tiny("override");
        // The tiny tokenizer.json pads and truncates to 128, as the real one does.
        assert_eq!(e.token_ids("hello world").unwrap(), [2, 30, 31, 3]);
        assert_eq!(e.embed_counted(&["hello world"]).unwrap().tokens, [4]);
        assert_eq!(e.embed_counted(&[""]).unwrap().tokens, [2]);
        let long = "hello ".repeat(200);
        assert_eq!(e.token_ids(&long).unwrap().len(), 202);
    }

    #[test]
    fn texts_are_truncated_at_256_tokens() {
        let (_dir, e) = tiny("truncation");
        assert_eq!(e.max_tokens(), 256);
        let words = |n: usize| vec!["hello"; n].join(" ");
        let huge = words(5000);
        let ids = e.token_ids(&huge).unwrap();
        assert_eq!(ids.len(), 256);
        assert_eq!((ids[0], ids[255]), (2, 3), "[CLS] … [SEP] survive the cut");
        // 254 words fill the 256 tokens: whatever follows is cut off.
        let a = format!("{} refund money", words(254));
        let b = format!("{} parcel late world", words(254));
        let v = e.embed_counted(&[a.as_str(), b.as_str()]).unwrap();
        assert_eq!(v.tokens, [256, 256]);
        assert!(max_gap(&v.vectors[0], &v.vectors[1]) < 1e-6);
        // One word earlier, the tails differ.
        let a = format!("{} refund", words(253));
        let b = format!("{} parcel", words(253));
        let v = e.embed(&[a.as_str(), b.as_str()]).unwrap();
        assert!(max_gap(&v[0], &v[1]) > 1e-4);
    }

    /// What the model read before texts were cut: the whole text tokenised,
    /// then truncated.
    fn uncut_ids(e: &Embedder, text: &str) -> Vec<u32> {
        e.inner
            .tokenizer
            .encode_fast(text, true)
            .unwrap()
            .get_ids()
            .to_vec()
    }

    #[test]
    fn a_long_text_is_cut_before_tokenization_and_reads_the_same() {
        let (_dir, e) = tiny("cut");
        // The tiny vocabulary's longest token is 8 bytes: a 2,304-byte window.
        assert_eq!(e.first_window(), 256 * 9);
        let words = |w: &str, n: usize| format!("{w} ").repeat(n);
        let mut texts = vec![
            words("hello world", 100_000), // 1.2 MB
            format!("{}{}", words("shipping", 200), words("refund", 1_000)),
            format!("{}{}", words("shipping", 254), words("refund", 1_000)),
            // Whitespace and characters the normaliser drops cover no tokens.
            format!("hello{}world {}", " ".repeat(100_000), words("late", 500)),
            format!(
                "hello{}world {}",
                "\u{200b}".repeat(30_000),
                words("late", 500)
            ),
            format!("{}{}", "\t\n ".repeat(5_000), words("parcel", 400)),
            // One word past WordPiece's 100 characters is one [UNK].
            format!("{} {}", "x".repeat(300_000), words("money", 400)),
            words("héllo, wörld! 日本 refund-ing", 2_000),
            words("spam", 3),
            String::new(),
        ];
        // An added token straddling every possible cut near the window's end.
        for k in 0..24 {
            texts.push(format!(
                "{}{}[MASK]{}",
                words("shipping", 254),
                "a".repeat(k),
                words("refund", 300)
            ));
        }
        for (i, text) in texts.iter().enumerate() {
            let want = uncut_ids(&e, text);
            assert_eq!(e.token_ids(text).unwrap(), want, "text {i}");
            let read = e.read_part(text).unwrap();
            assert!(text.starts_with(read));
            assert_eq!(uncut_ids(&e, read), want, "text {i}");
            assert_eq!(
                e.embed_counted(&[text]).unwrap().tokens,
                [want.len()],
                "text {i}"
            );
        }
    }

    #[test]
    fn long_runs_of_letters_and_digits_are_shortened_and_nothing_else() {
        let run = "a".repeat(300);
        assert!(matches!(
            shorten_long_runs("abc def", 101),
            Cow::Borrowed(_)
        ));
        assert!(matches!(
            shorten_long_runs(&"a".repeat(101), 101),
            Cow::Borrowed(_)
        ));
        let text = format!("x{run}-y {run}");
        let got = shorten_long_runs(&text, 101);
        assert_eq!(got, format!("x{}-y {}", &run[..100], &run[..101]));
        // Multi-byte text around a run is kept whole.
        let text = format!("é{run}é");
        let got = shorten_long_runs(&text, 101);
        assert_eq!(got, format!("é{}é", &run[..101]));
    }

    #[test]
    fn a_shortened_run_reads_as_the_whole_one_does() {
        let (_dir, e) = tiny("long-words");
        assert_eq!(e.long_words(), Some(101));
        let hex = "0123456789abcdef".repeat(400);
        let cases = [
            format!("the parcel {hex} is late"),
            hex.clone(),
            format!("refund {}", hex.to_uppercase()),
            // A control character the normaliser drops joins two runs.
            format!("late {}\u{0}{} parcel", &hex[..150], &hex[..150]),
            format!("é{hex}é parcel"),
            format!("[MASK]{hex}[MASK] refund"),
            format!("{} is late", "a".repeat(101)),
            format!("{} is late", "a".repeat(100)),
        ];
        for text in &cases {
            let whole = e
                .inner
                .tokenizer
                .encode_fast(text.as_str(), true)
                .unwrap()
                .get_ids()
                .to_vec();
            assert_eq!(e.token_ids(text).unwrap(), whole, "{text:.60}");
            assert_eq!(
                e.embed(&[text.as_str()]).unwrap(),
                e.embed(&[shorten_long_runs(text, 101).as_ref()]).unwrap()
            );
        }
    }

    #[test]
    fn a_multi_megabyte_hex_string_is_scanned_not_tokenised() {
        let (_dir, e) = tiny("hex-blob");
        let blob = format!(
            "echo {} | xxd -r -p > build/blob.bin",
            "0f".repeat(2_500_000)
        );
        let v = e.embed_counted(&[blob.as_str()]).unwrap();
        let largest = e.largest_input();
        assert!(largest <= e.first_window(), "tokenised {largest} bytes");
        let short = format!("echo {} | xxd -r -p > build/blob.bin", "0f".repeat(100));
        assert_eq!(v, e.embed_counted(&[short.as_str()]).unwrap());
    }

    #[test]
    fn a_50_mb_text_tokenizes_a_few_kilobytes() {
        let (_dir, e) = tiny("cut-bounded");
        let huge = "the parcel is late and my refund is not moved ".repeat(1_100_000);
        assert!(huge.len() > 50_000_000);
        let small = "the parcel is late and my refund is not moved ".repeat(220);
        let v = e.embed_counted(&[huge.as_str()]).unwrap();
        let largest = e.largest_input();
        assert!(largest <= e.first_window(), "tokenised {largest} bytes");
        assert_eq!(v.tokens, [256]);
        assert_eq!(v, e.embed_counted(&[small.as_str()]).unwrap());
    }

    #[test]
    fn the_model_hash_is_the_weights_sha256() {
        let (dir, e) = tiny("hash");
        let bytes = std::fs::read(dir.path().join(WEIGHTS_FILE)).unwrap();
        assert_eq!(e.model_hash(), hex(&Sha256::digest(&bytes)));
        assert_eq!(e.model_hash().len(), 64);
        // The tiny model is the same model every time it is written.
        let (_again, e2) = tiny("hash-again");
        assert_eq!(e.model_hash(), e2.model_hash());
        assert_eq!(e.embed(&["hello"]).unwrap(), e2.embed(&["hello"]).unwrap());
        assert!(format!("{e:?}").contains(e.model_hash()));
    }

    #[test]
    fn clones_share_the_model_across_threads() {
        let (_dir, e) = tiny("threads");
        let want = e.embed(&["late parcel"]).unwrap();
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let e = e.clone();
                std::thread::spawn(move || e.embed(&["late parcel"]).unwrap())
            })
            .collect();
        for h in handles {
            assert!(max_gap(&h.join().unwrap()[0], &want[0]) < 1e-6);
        }
    }

    fn shown(p: &Path) -> String {
        format!("{:?}", p.display().to_string())
    }

    #[test]
    fn a_missing_file_is_named() {
        for file in [CONFIG_FILE, TOKENIZER_FILE, WEIGHTS_FILE] {
            let dir = TempDir::new("missing");
            tiny_model_for_tests(dir.path()).unwrap();
            let path = dir.path().join(file);
            std::fs::remove_file(&path).unwrap();
            let err = Embedder::load(dir.path()).unwrap_err();
            assert!(err.is_missing_file(), "{file}: {err}");
            assert_eq!(err.path(), Some(path.as_path()));
            assert_eq!(
                err.to_string(),
                format!(
                    "local: model file {} not found (get the model with `toolnexus model fetch \
                     --model-dir {}`, or point TOOLNEXUS_MODEL_DIR at a directory that has it)",
                    shown(&path),
                    dir.path().display()
                )
            );
        }
        let nowhere = std::env::temp_dir().join("toolnexus-local-test-nowhere/x");
        let err = Embedder::load(&nowhere).unwrap_err();
        assert_eq!(err.path(), Some(nowhere.join(CONFIG_FILE).as_path()));
    }

    /// Writes the tiny model, replaces `file` with `contents`, and loads it.
    fn load_with(file: &str, contents: &[u8]) -> (TempDir, LocalError) {
        let dir = TempDir::new("corrupt");
        tiny_model_for_tests(dir.path()).unwrap();
        std::fs::write(dir.path().join(file), contents).unwrap();
        let err = Embedder::load(dir.path()).unwrap_err();
        assert!(!err.to_string().contains('\n'), "one line: {err}");
        (dir, err)
    }

    #[test]
    fn a_corrupt_file_is_named_with_what_is_wrong() {
        let config = |dir: &TempDir| shown(&dir.path().join(CONFIG_FILE));
        let (dir, err) = load_with(CONFIG_FILE, b"{");
        assert!(err.is_invalid_file());
        assert_eq!(err.path(), Some(dir.path().join(CONFIG_FILE).as_path()));
        assert_eq!(
            err.to_string(),
            format!(
                "local: {} is not a BERT config.json: EOF while parsing an object at line 1 column 1",
                config(&dir)
            )
        );
        let (dir, err) = load_with(CONFIG_FILE, br#"{"hidden_size": 32}"#);
        assert!(
            err.to_string().starts_with(&format!(
                "local: {} is not a BERT config.json: missing field",
                config(&dir)
            )),
            "{err}"
        );
        let cfg: serde_json::Value = {
            let dir = TempDir::new("cfg-src");
            tiny_model_for_tests(dir.path()).unwrap();
            serde_json::from_slice(&std::fs::read(dir.path().join(CONFIG_FILE)).unwrap()).unwrap()
        };
        let with = |key: &str, v: serde_json::Value| {
            let mut c = cfg.clone();
            c[key] = v;
            serde_json::to_vec(&c).unwrap()
        };
        let (dir, err) = load_with(CONFIG_FILE, &with("num_attention_heads", 3.into()));
        assert_eq!(
            err.to_string(),
            format!(
                "local: {} is not a BERT config.json: hidden_size 32 is not a multiple of num_attention_heads 3",
                config(&dir)
            )
        );
        let (_, err) = load_with(CONFIG_FILE, &with("num_hidden_layers", 0.into()));
        assert!(err.to_string().ends_with("num_hidden_layers is 0"), "{err}");
        let (_, err) = load_with(CONFIG_FILE, &with("hidden_act", "swish".into()));
        assert!(
            err.to_string()
                .ends_with("hidden_act \"swish\" is not supported (only \"gelu\")"),
            "{err}"
        );

        // Config and weights disagree.
        let (dir, err) = load_with(CONFIG_FILE, &with("intermediate_size", 48.into()));
        assert!(err.is_invalid_file());
        let weights = shown(&dir.path().join(WEIGHTS_FILE));
        assert_eq!(err.path(), Some(dir.path().join(WEIGHTS_FILE).as_path()));
        assert!(
            err.to_string()
                .starts_with(&format!("local: {weights} does not fit its config.json: ")),
            "{err}"
        );
        // A vocabulary larger than the embedding table.
        let (dir, err) = load_with(CONFIG_FILE, &with("vocab_size", 10.into()));
        assert_eq!(err.path(), Some(dir.path().join(TOKENIZER_FILE).as_path()));
        assert_eq!(
            err.to_string(),
            format!(
                "local: {} is not a usable tokenizer.json: it has 60 tokens but config.json's vocab_size is 10",
                shown(&dir.path().join(TOKENIZER_FILE))
            )
        );

        let (dir, err) = load_with(TOKENIZER_FILE, b"{\"version\": \"1.0\"}");
        assert!(err.is_invalid_file());
        assert_eq!(err.path(), Some(dir.path().join(TOKENIZER_FILE).as_path()));
        assert!(
            err.to_string().starts_with(&format!(
                "local: {} is not a usable tokenizer.json: ",
                shown(&dir.path().join(TOKENIZER_FILE))
            )),
            "{err}"
        );
        assert!(std::error::Error::source(&err).is_some());

        let (dir, err) = load_with(WEIGHTS_FILE, b"not a safetensors file at all");
        assert!(err.is_invalid_file());
        assert_eq!(err.path(), Some(dir.path().join(WEIGHTS_FILE).as_path()));
        assert!(
            err.to_string().starts_with(&format!(
                "local: {} is not a safetensors file: ",
                shown(&dir.path().join(WEIGHTS_FILE))
            )),
            "{err}"
        );
        assert!(std::error::Error::source(&err).is_some());
    }

    #[test]
    fn the_model_dir_is_explicit_then_the_variable_then_home() {
        let env = EnvSource::from_map([("HOME", "/home/ada"), (MODEL_DIR_ENV, "")]);
        assert_eq!(
            model_dir(None, &env).unwrap(),
            Path::new("/home/ada/.cache/toolnexus/models/all-minilm-l6-v2"),
            "an empty variable is unset"
        );
        let env = EnvSource::from_map([("HOME", "/home/ada"), (MODEL_DIR_ENV, "/m")]);
        assert_eq!(model_dir(None, &env).unwrap(), Path::new("/m"));
        assert_eq!(
            model_dir(Some(Path::new("/x")), &env).unwrap(),
            Path::new("/x")
        );
        let err = model_dir(None, &EnvSource::from_map([("HOME", "")])).unwrap_err();
        assert!(!err.is_missing_file() && err.path().is_none());
        assert_eq!(
            err.to_string(),
            "local: no model directory: pass one, set TOOLNEXUS_MODEL_DIR, or set HOME for \
             the default ~/.cache/toolnexus/models/all-minilm-l6-v2"
        );
    }
}
