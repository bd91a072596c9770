//! What a stack is made of, as plain values: what the command line's flags,
//! a binding's keyword arguments or a config file say.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use toolnexus::cache::Cache;
use toolnexus::classifier::{Backend, Classifier};
use toolnexus::compose::ShadowOptions;
use toolnexus::cost::Prices;
use toolnexus::judge::{Tape, TapeMatch};
use toolnexus::limit::Limiter;
use toolnexus_local::student::Student;

/// Everything a stack is built from. Every field is optional; what a style
/// has no use for is refused by name, never silently ignored.
///
/// ```
/// use toolnexus_stack::StackSpec;
/// let spec = StackSpec { style: Some("tape".into()), call: Some("triage".into()), ..Default::default() };
/// assert!(spec.caps.is_none());
/// ```
#[derive(Clone, Default)]
pub struct StackSpec {
    /// A classifier already built (a caller's own function, recorded
    /// decisions, a binding's callable) at the bottom in place of a style:
    /// only the layers are applied over it, and an option that builds a
    /// style is refused by name.
    pub bottom: Option<Classifier>,
    /// The style or engine at the bottom: `systemone`, `llm`, `tape`,
    /// `static`, or a local engine (`local`, `student`, `laya`,
    /// `decisiontune`). `None` with a tape is `tape`, else `systemone`.
    pub style: Option<String>,
    /// The model to ask for.
    pub model: Option<String>,
    /// The API root of a live style.
    pub base_url: Option<String>,
    /// The System One backend (TypeSafe, OpenRouter, …).
    pub backend: Option<Backend>,
    /// The variable the API key is read from (a name, never a value).
    pub api_key_env: Option<String>,
    /// The chat wire of the Llm style.
    pub chat_style: Option<toolnexus::client::Style>,
    /// Whether the Llm style asks for log-probabilities.
    pub logprobs: bool,
    /// One attempt's time limit in milliseconds.
    pub timeout_ms: Option<u64>,
    /// Retries as the command line counts them: absent keeps the library's
    /// default, 0 or less means none.
    pub retries: Option<i32>,
    /// A PEM file of extra certificate authorities to trust.
    pub ca_cert: Option<PathBuf>,
    /// The rate limiter every live request of the stack shares.
    pub limiter: Option<Limiter>,
    /// The tape of a tape or static style.
    pub tape: Option<TapeSource>,
    /// How a tape style matches a request to its recordings.
    pub tape_match: Option<TapeMatch>,
    /// The call name to replay or run under.
    pub call: Option<String>,
    /// A local engine's model directory (the embedded model's, or a checkpoint's).
    pub model_dir: Option<PathBuf>,
    /// What a local engine's encoder (and a cascade's student's embedded
    /// model) runs its matrix products in: f32 by default, bf16, or auto
    /// (bf16 where its products outrun f32's on this CPU). Refused by name for a style
    /// that runs no encoder here.
    pub precision: toolnexus_local::Precision,
    /// The student of `--style student` or of a cascade.
    pub student: Option<StudentSource>,
    /// Put the student in front of the style.
    pub cascade: bool,
    /// The confidence at which the cascade's student answers (the student
    /// file's own threshold when `None`).
    pub cascade_threshold: Option<f64>,
    /// A calibration file mapping the answers' probabilities.
    pub calibration: Option<PathBuf>,
    /// System One endpoints asked in order when the one before is unavailable.
    pub fallback_base_urls: Vec<String>,
    /// The price table (the built-in one when `None`).
    pub prices: Option<Arc<Prices>>,
    /// Caps on cost, tokens and time; `None` for none.
    pub caps: Option<Caps>,
    /// A decision cache and how long a floating alias's resolution is trusted.
    pub cache: Option<(Arc<dyn Cache>, Duration)>,
    /// The engines the style may name (the built-in registry when `None`): a
    /// surface that registers an engine of its own passes it here.
    pub engines: Option<toolnexus_local::Registry>,
    /// A second stack answering the same calls in the shadow, outermost: the
    /// caller gets this stack's answers as they came, never waiting for the
    /// shadow's, and the shadow spends from the same caps.
    pub shadow: Option<ShadowSpec>,
}

/// A shadow: the stack that answers in it, and how it is sampled, bounded and
/// reported ([`ShadowOptions`]). The shadow's own caps and cache are not
/// applied: it spends from its primary's budget.
///
/// ```
/// use toolnexus::compose::ShadowOptions;
/// use toolnexus_stack::{ShadowSpec, StackSpec, build};
///
/// let candidate = StackSpec {
///     style: Some("systemone".into()),
///     model: Some("jev-2".into()),
///     ..Default::default()
/// };
/// let spec = StackSpec {
///     style: Some("systemone".into()),
///     shadow: Some(ShadowSpec::new(candidate, ShadowOptions::new(1.0))),
///     ..Default::default()
/// };
/// let stack = build(&spec)?;
/// // The answers, and so the identity, are the primary's.
/// assert_eq!(stack.classifier.identity().style, "systemone");
/// assert_eq!(stack.shadow_model.as_deref(), Some("jev-2"));
/// # Ok::<(), toolnexus_stack::StackError>(())
/// ```
#[derive(Clone)]
pub struct ShadowSpec {
    /// The shadow's stack.
    pub spec: Box<StackSpec>,
    /// Its sample, bound on calls in flight, and where comparisons go.
    pub options: ShadowOptions,
}

impl ShadowSpec {
    /// A shadow answering with `spec`, run as `options` say.
    pub fn new(spec: StackSpec, options: ShadowOptions) -> ShadowSpec {
        ShadowSpec {
            spec: Box::new(spec),
            options,
        }
    }
}

/// Where a tape comes from.
#[derive(Debug, Clone)]
pub enum TapeSource {
    /// A tape file.
    File(PathBuf),
    /// A tape already loaded, and how messages name it (a built-in demo tape).
    Loaded(Tape, String),
}

/// Where a student comes from.
#[derive(Debug, Clone)]
pub enum StudentSource {
    /// A student file written by `toolnexus distill`.
    File(PathBuf),
    /// A student already loaded (a built-in one), and how messages name it.
    Loaded(Box<Student>, String),
}

impl StudentSource {
    /// How messages name it: the file, or the given name.
    pub fn label(&self) -> String {
        match self {
            StudentSource::File(p) => p.display().to_string(),
            StudentSource::Loaded(_, l) => l.clone(),
        }
    }
}

/// The caps of a run. A cap that is reached refuses every later request,
/// unsent ([`ClassifierError::is_cap_reached`](toolnexus::classifier::ClassifierError::is_cap_reached)).
///
/// ```
/// let caps = toolnexus_stack::Caps { max_tokens: Some(10_000), ..Default::default() };
/// assert!(caps.max_cost.is_none());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Caps {
    /// The most US dollars the run may spend.
    pub max_cost: Option<f64>,
    /// The most tokens (input plus output) the run may spend.
    pub max_tokens: Option<u64>,
    /// The longest the run may take.
    pub max_time: Option<Duration>,
}

impl Caps {
    /// Whether any cap is set.
    pub fn any(&self) -> bool {
        self.max_cost.is_some() || self.max_tokens.is_some() || self.max_time.is_some()
    }
}
