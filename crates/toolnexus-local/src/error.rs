//! [`LocalError`]: what can go wrong finding, loading or running the local model.
//! Every message text is in [`msg`], one function per message.

use std::error::Error as StdError;
use std::fmt;
use std::path::{Path, PathBuf};

/// What went wrong, for the predicates. Private: match on the predicates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A model file is not there.
    MissingFile,
    /// A model file is there but cannot be read or written.
    Io,
    /// A model file is there but is not what it should be.
    InvalidFile,
    /// No model directory could be worked out.
    NoModelDir,
    /// The tokenizer refused an input.
    Tokenize,
    /// The forward pass failed.
    Inference,
    /// An engine was asked to build without what it needs (a checkpoint
    /// directory, a student file) or with something that does not fit it.
    Spec,
}

/// An error of the local model: a missing or unusable model file (named by its
/// path), no model directory, or a failure while tokenising or running the
/// model. Messages start with `local: ` and are stable.
///
/// ```
/// use toolnexus_local::Embedder;
///
/// let dir = std::env::temp_dir().join("toolnexus-local-doc-no-such-model");
/// let e = Embedder::load(&dir).unwrap_err();
/// assert!(e.is_missing_file());
/// assert_eq!(e.path(), Some(dir.join("config.json").as_path()));
/// assert!(e.to_string().starts_with("local: model file "), "{e}");
/// assert!(e.to_string().contains("toolnexus model fetch"), "{e}");
/// ```
pub struct LocalError {
    kind: Kind,
    detail: String,
    path: Option<PathBuf>,
    source: Option<Box<dyn StdError + Send + Sync + 'static>>,
}

impl LocalError {
    fn new(kind: Kind, detail: String) -> LocalError {
        LocalError {
            kind,
            detail,
            path: None,
            source: None,
        }
    }

    fn at(mut self, path: &Path) -> LocalError {
        self.path = Some(path.to_path_buf());
        self
    }

    fn caused_by(mut self, source: impl StdError + Send + Sync + 'static) -> LocalError {
        self.source = Some(Box::new(source));
        self
    }

    fn caused_by_boxed(mut self, source: Box<dyn StdError + Send + Sync + 'static>) -> LocalError {
        self.source = Some(source);
        self
    }

    /// A model file is not there (fetch it with `toolnexus model fetch`).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join("toolnexus-local-doc-no-such-model");
    /// let e = toolnexus_local::Embedder::load(&dir).unwrap_err();
    /// assert!(e.is_missing_file() && !e.is_invalid_file());
    /// ```
    pub fn is_missing_file(&self) -> bool {
        self.kind == Kind::MissingFile
    }

    /// A model file is there but is not what it should be: not JSON, not a
    /// BERT config, not a tokenizer, not safetensors, or weights that do not fit
    /// the config.
    ///
    /// ```
    /// # fn main() -> Result<(), toolnexus_local::LocalError> {
    /// let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-invalid-{}", std::process::id()));
    /// toolnexus_local::tiny_model_for_tests(&dir)?;
    /// std::fs::write(dir.join("config.json"), "{").unwrap();
    /// let e = toolnexus_local::Embedder::load(&dir).unwrap_err();
    /// assert!(e.is_invalid_file());
    /// assert_eq!(e.path(), Some(dir.join("config.json").as_path()));
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_invalid_file(&self) -> bool {
        self.kind == Kind::InvalidFile
    }

    /// An engine was asked to build without what it needs (a checkpoint
    /// directory, a student file) or with a student of another model.
    ///
    /// ```
    /// use toolnexus_local::{EngineSpec, Registry};
    ///
    /// let laya = Registry::builtin().get("laya").unwrap().clone();
    /// let e = laya.open(&EngineSpec::default()).unwrap_err();
    /// assert!(e.is_bad_spec());
    /// assert_eq!(e.to_string(), "local: laya needs a model directory: the directory of a downloaded laya checkpoint");
    /// ```
    pub fn is_bad_spec(&self) -> bool {
        self.kind == Kind::Spec
    }

    /// The file the error is about, when it is about one.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join("toolnexus-local-doc-no-such-model");
    /// let e = toolnexus_local::Embedder::load(&dir).unwrap_err();
    /// assert_eq!(e.path().and_then(|p| p.file_name()).unwrap(), "config.json");
    /// ```
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The message without its `local: ` prefix.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join("toolnexus-local-doc-no-such-model");
    /// let e = toolnexus_local::Embedder::load(&dir).unwrap_err();
    /// assert_eq!(format!("local: {}", e.detail()), e.to_string());
    /// ```
    pub fn detail(&self) -> &str {
        &self.detail
    }
}

impl fmt::Display for LocalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "local: {}", self.detail)
    }
}

impl fmt::Debug for LocalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("LocalError");
        d.field("kind", &self.kind).field("detail", &self.detail);
        if let Some(p) = &self.path {
            d.field("path", p);
        }
        if let Some(s) = &self.source {
            d.field("source", &s.to_string());
        }
        d.finish()
    }
}

impl StdError for LocalError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn StdError + 'static))
    }
}

/// Every message of this crate's errors.
pub(crate) mod msg {
    use std::error::Error as StdError;
    use std::fmt::Display;
    use std::io;
    use std::path::Path;

    use super::{Kind, LocalError};

    type BoxError = Box<dyn StdError + Send + Sync + 'static>;

    /// `engine` was asked to build without `what`.
    pub(crate) fn needs(engine: &str, what: impl Display) -> LocalError {
        LocalError::new(Kind::Spec, format!("{engine} needs {what}"))
    }

    /// bf16 was asked for on a CPU that cannot multiply bf16 itself.
    pub(crate) fn no_bf16_unit() -> LocalError {
        LocalError::new(
            Kind::Spec,
            "bf16 needs a CPU with AMX or AVX-512 BF16 and this one has neither; use f32 or auto"
                .to_string(),
        )
    }

    /// A student that cannot run on this embedder (its message says why).
    pub(crate) fn student_misfit(e: impl StdError + Send + Sync + 'static) -> LocalError {
        LocalError::new(Kind::Spec, e.to_string()).caused_by(e)
    }

    /// Reading `path` failed: missing when it is not there, I/O otherwise.
    pub(crate) fn read(path: &Path, e: io::Error) -> LocalError {
        if e.kind() == io::ErrorKind::NotFound {
            return missing(path);
        }
        LocalError::new(
            Kind::Io,
            format!("cannot read {:?}: {e}", path.display().to_string()),
        )
        .at(path)
        .caused_by(e)
    }

    /// Reading a file of an open-weights checkpoint (Laya, DecisionTune)
    /// failed: missing when it is not there, I/O otherwise.
    pub(crate) fn read_checkpoint(path: &Path, e: io::Error) -> LocalError {
        if e.kind() != io::ErrorKind::NotFound {
            return read(path, e);
        }
        LocalError::new(
            Kind::MissingFile,
            format!(
                "checkpoint file {:?} not found (point --model-dir at the directory of the \
                 downloaded checkpoint, laid out as its release ships it)",
                path.display().to_string()
            ),
        )
        .at(path)
    }

    pub(crate) fn missing(path: &Path) -> LocalError {
        LocalError::new(
            Kind::MissingFile,
            format!(
                "model file {:?} not found (get the model with `toolnexus model fetch \
                 --model-dir {}`, or point TOOLNEXUS_MODEL_DIR at a directory that has it)",
                path.display().to_string(),
                path.parent().unwrap_or(Path::new(".")).display()
            ),
        )
        .at(path)
    }

    pub(crate) fn write(path: &Path, e: impl StdError + Send + Sync + 'static) -> LocalError {
        LocalError::new(
            Kind::Io,
            format!("cannot write {:?}: {e}", path.display().to_string()),
        )
        .at(path)
        .caused_by(e)
    }

    pub(crate) fn config(path: &Path, why: impl Display) -> LocalError {
        LocalError::new(
            Kind::InvalidFile,
            format!(
                "{:?} is not a BERT config.json: {why}",
                path.display().to_string()
            ),
        )
        .at(path)
    }

    /// A model file that is there and parses, but whose `field` is missing,
    /// of the wrong kind, or a layout this crate does not run.
    pub(crate) fn field(path: &Path, field: &str, why: impl Display) -> LocalError {
        LocalError::new(
            Kind::InvalidFile,
            format!("{:?}: field {field:?} {why}", path.display().to_string()),
        )
        .at(path)
    }

    /// A checkpoint file that is a FIFO, a device or a directory: reading it
    /// could wait forever or never end, so it is refused before it is opened.
    pub(crate) fn not_regular(path: &Path, what: &str) -> LocalError {
        LocalError::new(
            Kind::InvalidFile,
            format!(
                "checkpoint file {:?} is {what}, not a regular file: refusing to read it",
                path.display().to_string()
            ),
        )
        .at(path)
    }

    /// A file whose size is not the one its manifest lists.
    pub(crate) fn size(path: &Path, manifest: &Path, want: u64, got: u64) -> LocalError {
        LocalError::new(
            Kind::InvalidFile,
            format!(
                "{:?} is {got} bytes, but {:?} lists {want}: refusing to load it",
                path.display().to_string(),
                manifest.display().to_string()
            ),
        )
        .at(path)
    }

    /// A file whose SHA-256 is not the one its manifest lists.
    pub(crate) fn digest(path: &Path, manifest: &Path, want: &str, got: &str) -> LocalError {
        LocalError::new(
            Kind::InvalidFile,
            format!(
                "{:?} has SHA-256 {got}, but {:?} lists {want}: refusing to load it",
                path.display().to_string(),
                manifest.display().to_string()
            ),
        )
        .at(path)
    }

    /// The input cannot be run: too long for the model, or a question whose
    /// options do not fit.
    pub(crate) fn input(why: impl Display) -> LocalError {
        LocalError::new(Kind::Tokenize, format!("cannot run the input: {why}"))
    }

    pub(crate) fn tokenizer(path: &Path, why: impl Display) -> LocalError {
        LocalError::new(
            Kind::InvalidFile,
            format!(
                "{:?} is not a usable tokenizer.json: {why}",
                path.display().to_string()
            ),
        )
        .at(path)
    }

    pub(crate) fn tokenizer_source(path: &Path, e: BoxError) -> LocalError {
        tokenizer(path, &e).caused_by_boxed(e)
    }

    pub(crate) fn weights(path: &Path, e: candle_core::Error) -> LocalError {
        let e = without_backtrace(e);
        LocalError::new(
            Kind::InvalidFile,
            format!(
                "{:?} is not a safetensors file: {e}",
                path.display().to_string()
            ),
        )
        .at(path)
        .caused_by(e)
    }

    pub(crate) fn weights_mismatch(path: &Path, e: candle_core::Error) -> LocalError {
        let e = without_backtrace(e);
        LocalError::new(
            Kind::InvalidFile,
            format!(
                "{:?} does not fit its config.json: {e}",
                path.display().to_string()
            ),
        )
        .at(path)
        .caused_by(e)
    }

    pub(crate) fn no_model_dir() -> LocalError {
        LocalError::new(
            Kind::NoModelDir,
            "no model directory: pass one, set TOOLNEXUS_MODEL_DIR, or set HOME for the \
             default ~/.cache/toolnexus/models/all-minilm-l6-v2"
                .into(),
        )
    }

    pub(crate) fn tokenize(e: BoxError) -> LocalError {
        LocalError::new(Kind::Tokenize, format!("cannot tokenize the input: {e}"))
            .caused_by_boxed(e)
    }

    pub(crate) fn inference(e: candle_core::Error) -> LocalError {
        let e = without_backtrace(e);
        LocalError::new(Kind::Inference, format!("the model failed: {e}")).caused_by(e)
    }

    /// `e` without the backtraces candle attaches when `RUST_BACKTRACE` is set:
    /// they would end up inside messages, which are one line.
    fn without_backtrace(e: candle_core::Error) -> candle_core::Error {
        use candle_core::Error;
        match e {
            Error::WithBacktrace { inner, .. } => without_backtrace(*inner),
            Error::Context { inner, context } => Error::Context {
                inner: Box::new(without_backtrace(*inner)),
                context,
            },
            Error::WithPath { inner, path } => Error::WithPath {
                inner: Box::new(without_backtrace(*inner)),
                path,
            },
            other => other,
        }
    }
}
