//! [`Embedder`]: sentence embeddings from a BERT model directory on the CPU —
//! tokenise (max 256 tokens), run the encoder, mean-pool over the attention
//! mask, L2-normalise. And [`model_dir`]: where that directory is.

use std::borrow::Cow;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};
use toolnexus::classifier::{EnvSource, Evaluated};

use crate::bert::{Bert, Config, PREPARED_LAYOUT};
use crate::engine::Precision;
use crate::error::{LocalError, msg};
use crate::kernels::bf16::{self, resolve_precision};
use crate::pins::{CONFIG_FILE, TOKENIZER_FILE, WEIGHTS_FILE};
use crate::text::Cutter;
use crate::weights::{self, Tensors, WeightBytes, prepared};

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
    /// The tokenizer, and where a long text can be cut before tokenisation
    /// (the same tokenizer without truncation, and its cut rule).
    text: Cutter,
    max_tokens: usize,
    dimension: usize,
    model_hash: String,
    /// What the encoder's products run in: `F32` or `Bf16`, never `Auto`.
    precision: Precision,
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
        Embedder::load_with(dir, Precision::F32)
    }

    /// [`load`](Embedder::load) with the encoder's matrix products in
    /// `precision` ([`resolve_precision`] says
    /// what it runs in here; `bf16` on a CPU without a bf16 unit is an
    /// error, [`LocalError::is_bad_spec`]). In bf16 the linear layers are
    /// converted once at load and kept in bf16 only; embeddings stay within
    /// a few thousandths of f32's.
    ///
    /// ```
    /// use toolnexus_local::{Embedder, Precision};
    ///
    /// # fn main() -> Result<(), toolnexus_local::LocalError> {
    /// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-load-with-{}", std::process::id()));
    /// # toolnexus_local::tiny_model_for_tests(&dir)?;
    /// let auto = Embedder::load_with(&dir, Precision::Auto)?;
    /// assert_ne!(auto.precision(), Precision::Auto, "auto resolves to what runs");
    /// let f32 = Embedder::load(&dir)?;
    /// assert_eq!(f32.precision(), Precision::F32);
    /// let (a, b) = (&auto.embed(&["late parcel"])?[0], &f32.embed(&["late parcel"])?[0]);
    /// let gap = a.iter().zip(b).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
    /// assert!(gap < 2e-2, "{gap}");
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(())
    /// # }
    /// ```
    pub fn load_with(dir: impl AsRef<Path>, precision: Precision) -> Result<Embedder, LocalError> {
        let dir = dir.as_ref();
        Embedder::from_files_in(
            dir.join(CONFIG_FILE),
            dir.join(TOKENIZER_FILE),
            dir.join(WEIGHTS_FILE),
            precision,
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
        Embedder::from_files_in(config, tokenizer, weights, Precision::F32)
    }

    /// [`from_files`](Embedder::from_files) in `precision`.
    fn from_files_in(
        config: impl AsRef<Path>,
        tokenizer: impl AsRef<Path>,
        weights: impl AsRef<Path>,
        precision: Precision,
    ) -> Result<Embedder, LocalError> {
        let precision = resolve_precision(precision)?;
        let bf16 = precision == Precision::Bf16;
        let (config_path, tokenizer_path, weights_path) =
            (config.as_ref(), tokenizer.as_ref(), weights.as_ref());
        let config = read_config(config_path)?;
        let (tokenizer, longest) = read_tokenizer(tokenizer_path, &config)?;
        let (bytes, stamp) = weights::open(weights_path).map_err(|e| msg::read(weights_path, e))?;
        let bytes = Arc::new(bytes);
        // The digest remembered beside the weights for the file as it is now
        // spares the hash; else it takes about as long as the rest of the
        // load: it runs beside it.
        let remembered = stamp
            .as_ref()
            .and_then(|s| weights::remembered(weights_path, s));
        let model_hash = match &remembered {
            Some(sha) => Sha256Aside::Done(sha.clone()),
            None => Sha256Aside::start(Arc::clone(&bytes)),
        };
        let fresh = matches!(model_hash, Sha256Aside::Running(_));
        let mut tensors = Tensors::parse(bytes).map_err(|e| msg::weights(weights_path, e))?;
        // The linear layers already in the layout the products read, when a
        // file beside the weights was prepared from them as they are now:
        // then nothing is transposed or copied (see `weights::prepared`).
        let mut ready = match (&remembered, &stamp) {
            (Some(sha), Some(stamp)) => prepared::open(weights_path, PREPARED_LAYOUT, stamp, sha),
            _ => None,
        };
        let (model, from_prepared) = Bert::load(&mut tensors, ready.as_mut(), &config, bf16)
            .map_err(|e| msg::weights_mismatch(weights_path, e))?;
        let max_tokens = MAX_TOKENS.min(config.max_position_embeddings);
        let tokenizer = fit_tokenizer(tokenizer, tokenizer_path, max_tokens)?;
        let text = Cutter::new(tokenizer, max_tokens, longest);
        let model_hash = model_hash.finish();
        if let Some(stamp) = &stamp {
            if fresh {
                weights::remember(weights_path, stamp, &model_hash);
            }
            // Best effort, as the record: a directory that cannot be written
            // to keeps none, and the next load transposes again.
            if !from_prepared && let Some(parts) = model.prepared() {
                let _ = prepared::write(weights_path, PREPARED_LAYOUT, stamp, &model_hash, &parts);
            }
        }
        Ok(Embedder {
            inner: Arc::new(Inner {
                model,
                text,
                max_tokens,
                dimension: config.hidden_size,
                model_hash,
                precision,
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
            .text
            .tokenizer()
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
            .text
            .tokenizer()
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

    /// Whether the encoder reads its linear layers in place from the
    /// prepared layout beside the weights (tests only).
    #[cfg(test)]
    pub(crate) fn reads_prepared_layout(&self) -> bool {
        self.inner.model.reads_prepared_layout()
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
    /// student or a cache to this exact model ([`MODEL_SHA256`](crate::MODEL_SHA256) for the real one).
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

    /// The precision the encoder's matrix products run in: `F32` or `Bf16`
    /// (an `Auto` load says here what it resolved to).
    ///
    /// ```
    /// # fn main() -> Result<(), toolnexus_local::LocalError> {
    /// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-precision-{}", std::process::id()));
    /// # toolnexus_local::tiny_model_for_tests(&dir)?;
    /// let embedder = toolnexus_local::Embedder::load(&dir)?;
    /// assert_eq!(embedder.precision(), toolnexus_local::Precision::F32);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(())
    /// # }
    /// ```
    pub fn precision(&self) -> Precision {
        self.inner.precision
    }

    /// What a fingerprint adds for the precision (see
    /// [`bf16::fingerprint_part`]).
    pub(crate) fn precision_part(&self) -> &'static str {
        bf16::fingerprint_part(self.inner.precision)
    }

    /// `e` marked with the precision that answered (see [`bf16::mark`]).
    pub(crate) fn mark_precision(&self, e: Evaluated) -> Evaluated {
        bf16::mark(self.inner.precision, e)
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

/// The tokenizer in `path`, checked against the config, and the longest
/// token of its vocabulary when the read already knows it (see
/// [`tokenizer_file::read`]).
fn read_tokenizer(path: &Path, config: &Config) -> Result<(Tokenizer, Option<usize>), LocalError> {
    let bytes = fs::read(path).map_err(|e| msg::read(path, e))?;
    let (tokenizer, longest) = match tokenizer_file::read(&bytes) {
        Some((t, longest)) => (t, Some(longest)),
        None => (
            Tokenizer::from_bytes(&bytes).map_err(|e| msg::tokenizer_source(path, e))?,
            None,
        ),
    };
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
    Ok((tokenizer, longest))
}

/// The tokenizer with its shipped padding removed (the encoder reads each
/// text's own tokens, unpadded) and truncation at `max_tokens`.
fn fit_tokenizer(
    mut tokenizer: Tokenizer,
    path: &Path,
    max_tokens: usize,
) -> Result<Tokenizer, LocalError> {
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(Some(TruncationParams {
            direction: TruncationDirection::Right,
            max_length: max_tokens,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
        }))
        .map_err(|e| msg::tokenizer_source(path, e))?;
    Ok(tokenizer)
}

/// A SHA-256 worked out on a thread of its own, or inline when no thread can
/// be started.
enum Sha256Aside {
    Running(std::thread::JoinHandle<String>),
    Done(String),
}

impl Sha256Aside {
    fn start(bytes: Arc<WeightBytes>) -> Sha256Aside {
        let theirs = Arc::clone(&bytes);
        let spawned = std::thread::Builder::new()
            .name("toolnexus-weights-sha256".into())
            .spawn(move || weights::sha256(&theirs));
        match spawned {
            Ok(handle) => Sha256Aside::Running(handle),
            Err(_) => Sha256Aside::Done(weights::sha256(&bytes)),
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
mod precision_tests;
#[cfg(test)]
mod tests;
mod tokenizer_file;
#[cfg(test)]
mod tokenizer_file_tests;
