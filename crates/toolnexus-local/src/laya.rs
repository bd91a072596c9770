//! [`Laya`]: the open-weights Laya decision model (ModernBERT encoder and a
//! typed decision head) on the CPU, answering noul, choice and score questions
//! the way its reference package (`laya==0.4.15`) does.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{LayerNorm, Linear, VarBuilder};
use serde_json::{Value, json};
use tokenizers::Tokenizer;
use toolnexus::classifier::{
    BoxFuture, ChoiceAnswer, Classifier, ClassifierError, Content, Decision, DecisionAnswer,
    EvalContext, EvalRequest, Evaluated, FullEvaluator, NoulAnswer, Question, Questions,
    ScoreAnswer, near_uniform, validate_questions,
};

use crate::engine::{self, EngineInfo, ModelDir, Precision, QuestionKinds, local_decision};
use crate::error::{LocalError, msg};
use crate::kernels::bf16;
use crate::kernels::{
    Attend, Gelu, HeldLin, HeldNorm, Lin, Norm, Out, Packed, Rows, attention, groups, take,
};
use crate::modernbert::{
    EncoderConfig, Fields, FilesAside, ModernBert, read_checkpoint_file, read_safetensors,
    read_tokenizer, token_ids, token_ids_bounded,
};
use crate::pyjson::{Separators, dumps};

/// The style name in Laya's messages (and the CLI's `--style laya`).
pub const LAYA_STYLE: &str = "laya";

/// The model name Laya decisions carry.
pub const LAYA_MODEL: &str = "laya";

/// The Laya engine: `--style laya`, on a checkpoint directory.
pub const LAYA_ENGINE: EngineInfo = EngineInfo {
    name: LAYA_STYLE,
    summary: "answers on this machine with the open-weights Laya model (calibrated by the checkpoint's own temperatures)",
    answers: QuestionKinds::NOUL_CHOICE_SCORE,
    model_dir: ModelDir::Checkpoint,
    student: false,
};

/// The hub repository of the English Laya checkpoint (fetch it yourself;
/// nothing here downloads).
pub const LAYA_HUB_REPO: &str = "convaiinnovations/laya";

/// The revision of [`LAYA_HUB_REPO`] the reference package (`laya==0.4.15`)
/// pins as reviewed.
pub const LAYA_HUB_REVISION: &str = "55cf4c4ebb4ebe31b2550e8bdf3bd21b99753851";

/// Laya's configuration file in its directory.
pub const LAYA_CONFIG_FILE: &str = "rl_agent_config.json";

/// Temperatures are confined to this range (a checkpoint's fitted value
/// outside it is clamped, as the reference does).
pub const LAYA_TEMPERATURE_RANGE: (f64, f64) = (0.5, 5.0);

/// The most ids of one option's text a row holds.
const OPTION_IDS: usize = 48;

/// The question types, in the order of the head's type embedding.
const TYPES: [&str; 3] = ["choice", "score", "noul"];

/// The special tokens a row is built with.
#[derive(Debug, Clone)]
pub(crate) struct Special {
    pub cls: u32,
    pub sep: u32,
    pub mask: u32,
    /// The mask token's text: inside any text it becomes a space.
    pub mask_text: String,
}

/// Laya on this machine: the encoder, the decision head, the tokenizer and
/// the checkpoint's temperatures, loaded from a checkpoint directory as the
/// release ships it. Cheap to clone (an `Arc`).
///
/// The directory holds `rl_agent_config.json`, `model.safetensors` (fp16 in
/// the release; upcast to f32 as it is read), `encoder/config.json` (either
/// transformers spelling) and `tokenizer/` (`tokenizer.json`, with the special
/// tokens named in `tokenizer_config.json`). Nothing here downloads.
///
/// What is proven: on seeded tiny random models saved by the reference
/// package's own code, every token id is reproduced exactly and every logit
/// and probability within 1e-4. What is not: the quality of the real weights,
/// which only an assessment on your own labelled data can tell
/// (`toolnexus assess`).
#[derive(Clone)]
pub struct Laya {
    inner: Arc<Inner>,
}

struct Inner {
    encoder: ModernBert,
    head: Head,
    tokenizer: Tokenizer,
    special: Special,
    max_len: usize,
    head_max_len: usize,
    /// Per type, clamped.
    temperature: [f64; 3],
    /// Per `"<type>:<bucket>"`, clamped.
    by_options: HashMap<String, f64>,
    dir: PathBuf,
    /// The SHA-256 over [`LAYA_FILES`]' SHA-256s: the classifier's fingerprint.
    files: String,
    /// What the encoder runs in: `F32` or `Bf16`.
    precision: Precision,
}

/// The checkpoint files whose contents can change an answer.
const LAYA_FILES: [&str; 5] = [
    LAYA_CONFIG_FILE,
    "encoder/config.json",
    "tokenizer/tokenizer.json",
    "tokenizer/tokenizer_config.json",
    "model.safetensors",
];

impl std::fmt::Debug for Laya {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Laya")
            .field("dir", &self.inner.dir)
            .field("max_len", &self.inner.max_len)
            .field("head_max_len", &self.inner.head_max_len)
            .finish_non_exhaustive()
    }
}

/// One row the model reads: a question about a state.
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq)]
pub struct LayaRow {
    /// Which state of the call (0 for a single request).
    pub state: usize,
    /// The question's key.
    pub key: String,
    /// The token ids, special tokens included, unpadded.
    pub ids: Vec<u32>,
    /// The position of each option's mask token, in the caller's option order.
    pub markers: Vec<usize>,
    /// One logit per option, before any temperature.
    pub logits: Vec<f32>,
    /// The softmax of the logits over the bucket's temperature.
    pub probabilities: Vec<f64>,
    /// The act head's softmax.
    pub act: Vec<f32>,
}

/// A row before the forward pass.
struct Built {
    state: usize,
    key: String,
    kind: usize,
    ids: Vec<u32>,
    markers: Vec<usize>,
}

impl Laya {
    /// Loads a Laya checkpoint directory.
    ///
    /// Errors ([`LocalError`]): a missing file (named); a file that is not what
    /// it should be, naming the file and the field — an `option_layout` other
    /// than `"sequential"`, temperatures that are not a list of three, an
    /// encoder config this crate cannot run, special tokens the tokenizer does
    /// not have, a tensor of unknown name or shape.
    pub fn load(dir: impl AsRef<Path>) -> Result<Laya, LocalError> {
        Laya::load_with(dir, Precision::F32)
    }

    /// [`load`](Laya::load) with the encoder's matrix products in
    /// `precision` (see [`Embedder::load_with`](crate::Embedder::load_with)):
    /// in bf16 the encoder's linear layers and token embeddings are kept in
    /// bf16 only; the decision head stays f32.
    pub fn load_with(dir: impl AsRef<Path>, precision: Precision) -> Result<Laya, LocalError> {
        let precision = bf16::resolve_precision(precision)?;
        let dir = dir.as_ref();
        // The files' hashes, worked out on a thread of their own while the
        // checkpoint loads (the weights are read twice, once off the load's path).
        let hashing = FilesAside::start(dir, &LAYA_FILES);
        let cfg_path = dir.join(LAYA_CONFIG_FILE);
        let bytes = read_checkpoint_file(&cfg_path)?;
        let cfg = Fields::parse(&cfg_path, &bytes)?;
        let f = Fields::of(&cfg_path, &cfg);
        if let Some(layout) = f.get("option_layout")
            && layout.as_str() != Some("sequential")
        {
            return Err(msg::field(
                &cfg_path,
                "option_layout",
                format_args!("is {layout}; only \"sequential\" is supported"),
            ));
        }
        let max_len = f.usize("max_len")?.unwrap_or(512);
        let head_max_len = f.usize("head_max_len")?.unwrap_or(192);
        // A row of 0 tokens holds no question: every answer would be a guess.
        for (key, value) in [("max_len", max_len), ("head_max_len", head_max_len)] {
            if value == 0 {
                return Err(msg::field(
                    &cfg_path,
                    key,
                    "is 0; a row must hold at least the question's tokens",
                ));
            }
        }
        let head_layers = f.usize("head_layers")?.unwrap_or(2);
        let n_act = match f.get("act_costs") {
            None => 1,
            Some(Value::Object(m)) => m.len() + 1,
            Some(Value::Array(a)) => a.len() + 1,
            Some(other) => {
                return Err(msg::field(
                    &cfg_path,
                    "act_costs",
                    format_args!("is {other}, not an object or a list"),
                ));
            }
        };
        let temperature = match f.get("temperature") {
            None => [1.0; 3],
            Some(Value::Array(t)) if t.len() == 3 => [
                clamp_temperature(&t[0]),
                clamp_temperature(&t[1]),
                clamp_temperature(&t[2]),
            ],
            Some(other) => {
                return Err(msg::field(
                    &cfg_path,
                    "temperature",
                    format_args!("is {other}, not a list of 3 numbers (choice, score, noul)"),
                ));
            }
        };
        let by_options = match f.get("temperature_by_options") {
            None => HashMap::new(),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| (k.clone(), clamp_temperature(v)))
                .collect(),
            Some(other) => {
                return Err(msg::field(
                    &cfg_path,
                    "temperature_by_options",
                    format_args!("is {other}, not an object"),
                ));
            }
        };

        let enc_path = dir.join("encoder").join("config.json");
        let enc = EncoderConfig::read(&enc_path)?;
        if max_len > enc.max_positions {
            return Err(msg::field(
                &cfg_path,
                "max_len",
                format_args!(
                    "is {max_len}, more than the encoder's max_position_embeddings ({})",
                    enc.max_positions
                ),
            ));
        }
        let tok_dir = dir.join("tokenizer");
        let tokenizer = read_tokenizer(&tok_dir.join("tokenizer.json"))?;
        let special = special_tokens(&tok_dir, &tokenizer)?;

        let weights_path = dir.join("model.safetensors");
        // In bf16 the encoder's weights stay as stored until each is packed:
        // the load never holds the model in f32.
        let bf16 = precision == Precision::Bf16;
        let tensors = read_safetensors(&weights_path, |n| bf16 && n.starts_with("encoder."))?;
        const KNOWN: [&str; 5] = ["encoder.", "head.", "type_emb.", "scorer.", "act_head."];
        if let Some(name) = tensors
            .keys()
            .find(|k| *k != "temperature" && !KNOWN.iter().any(|p| k.starts_with(p)))
        {
            return Err(msg::field(
                &weights_path,
                name,
                "is not a tensor of a Laya checkpoint (encoder., head., type_emb., scorer., act_head., temperature)",
            ));
        }
        for prefix in ["encoder.", "type_emb.", "scorer.", "act_head."] {
            if !tensors.keys().any(|k| k.starts_with(prefix)) {
                return Err(msg::field(
                    &weights_path,
                    prefix.trim_end_matches('.'),
                    "has no tensors: this is not a Laya checkpoint",
                ));
            }
        }
        let mut tensors = tensors;
        let encoder = ModernBert::load(&mut tensors, "encoder.", &enc, bf16)
            .map_err(|e| msg::weights_mismatch(&weights_path, e))?;
        let head = Head::load(tensors, enc.hidden_size, head_layers, n_act)
            .map_err(|e| msg::weights_mismatch(&weights_path, e))?;
        Ok(Laya {
            inner: Arc::new(Inner {
                encoder,
                head,
                tokenizer,
                special,
                max_len,
                head_max_len,
                temperature,
                by_options,
                dir: dir.to_path_buf(),
                files: hashing.finish(),
                precision,
            }),
        })
    }

    /// The checkpoint directory it was loaded from.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Decides `questions` about `state` on the calling thread (it blocks for
    /// the forward pass): one row per question, all in one forward pass (the
    /// rows packed end to end: the reference's padding is never computed, and
    /// a row's numbers do not depend on the rows beside it).
    /// `calibrated` is true — in the sense the checkpoint's own temperatures
    /// give, no more; usage counts the real tokens over the rows.
    ///
    /// Errors: the question limits of
    /// [`validate_questions`]; a box
    /// question (`Unsupported`, naming its key); a question whose options do
    /// not fit in `max_len`; a model failure (a custom error whose source is
    /// the [`LocalError`]).
    pub fn decide(
        &self,
        state: &Value,
        questions: &Questions,
    ) -> Result<Decision, ClassifierError> {
        self.decide_full(state, questions).map(|e| e.decision)
    }

    /// [`decide`](Laya::decide), with each answer's extra numbers in
    /// [`Evaluated::extensions`]: `answer_confidence` (the top probability)
    /// and `action.act_probability` (the act head's first entry).
    pub fn decide_full(
        &self,
        state: &Value,
        questions: &Questions,
    ) -> Result<Evaluated, ClassifierError> {
        let mut all = self.decide_batch(std::slice::from_ref(state), questions)?;
        Ok(all.remove(0))
    }

    /// Decides the same questions about every state in ONE forward pass
    /// (all rows of all states, packed), each state's decision as
    /// [`decide_full`](Laya::decide_full) gives it.
    pub fn decide_batch(
        &self,
        states: &[Value],
        questions: &Questions,
    ) -> Result<Vec<Evaluated>, ClassifierError> {
        let rows = self.trace(states, questions)?;
        let mut per_state: Vec<Vec<&LayaRow>> = vec![Vec::new(); states.len()];
        for r in &rows {
            per_state[r.state].push(r);
        }
        Ok(per_state
            .into_iter()
            .map(|rows| bf16::mark(self.inner.precision, decode(&rows, questions)))
            .collect())
    }

    /// Every row of a call, with its token ids, raw logits, probabilities and
    /// act head output: what the reference's recorded outputs are checked
    /// against.
    #[doc(hidden)]
    pub fn trace(
        &self,
        states: &[Value],
        questions: &Questions,
    ) -> Result<Vec<LayaRow>, ClassifierError> {
        validate_questions(questions)?;
        let local = |e: LocalError| ClassifierError::custom(&e).with_source(e);
        for (key, q) in questions {
            if let Question::Box(_) = q {
                return Err(ClassifierError::unsupported(
                    LAYA_STYLE,
                    format_args!("box question {key:?}"),
                ));
            }
        }
        let mut heads = Vec::with_capacity(questions.len());
        for (key, q) in questions {
            heads.push((key, kind_of(q), self.head_ids(q).map_err(local)?));
        }
        let mut built = Vec::with_capacity(states.len() * questions.len());
        for (i, state) in states.iter().enumerate() {
            let text = state_text(state).replace(&self.inner.special.mask_text, " ");
            let left = state.is_array();
            // A row holds at most max_len tokens: only that much of the
            // state, from the end it is cut from, is tokenized.
            let (state_ids, _) =
                token_ids_bounded(&self.inner.tokenizer, &text, self.inner.max_len, left)
                    .map_err(local)?;
            for (key, kind, (head, markers)) in &heads {
                let room = self.inner.max_len.saturating_sub(head.len() + 1);
                let cut = if left {
                    &state_ids[state_ids.len().saturating_sub(room)..]
                } else {
                    &state_ids[..room.min(state_ids.len())]
                };
                let mut ids = Vec::with_capacity(head.len() + cut.len() + 1);
                ids.extend_from_slice(head);
                ids.extend_from_slice(cut);
                ids.push(self.inner.special.sep);
                ids.truncate(self.inner.max_len);
                let kept = markers.iter().filter(|m| **m < self.inner.max_len).count();
                if kept != markers.len() {
                    return Err(local(msg::input(format_args!(
                        "question {key:?}: only {kept} of its {} option markers fit in max_len={} \
                         with head_max_len={}; use fewer or shorter options",
                        markers.len(),
                        self.inner.max_len,
                        self.inner.head_max_len
                    ))));
                }
                built.push(Built {
                    state: i,
                    key: (*key).clone(),
                    kind: *kind,
                    ids,
                    markers: markers.clone(),
                });
            }
        }
        self.forward(built).map_err(|e| local(msg::inference(e)))
    }

    /// The question half of a row, `[CLS] "<type> question: <instructions>"
    /// [SEP] ([MASK] " option")… [SEP]`, and the mask positions.
    fn head_ids(&self, q: &Question) -> Result<(Vec<u32>, Vec<usize>), LocalError> {
        let s = &self.inner.special;
        let tok = &self.inner.tokenizer;
        let kind = TYPES[kind_of(q)];
        let ins = content_text(q.instructions()).replace(&s.mask_text, " ");
        let mut head = token_ids(tok, &format!("{kind} question: {ins}"))?;
        let mut options = Vec::new();
        for text in options_of(q) {
            let mut ids = vec![s.mask];
            let mut t = token_ids(tok, &format!(" {}", text.replace(&s.mask_text, " ")))?;
            t.truncate(OPTION_IDS);
            ids.extend(t);
            options.push(ids);
        }
        let hml = self.inner.head_max_len as i64;
        let used = |o: &[Vec<u32>]| o.iter().map(Vec::len).sum::<usize>() as i64;
        let mut budget = hml - used(&options);
        if budget < 16 {
            let n = options.len().max(1) as i64;
            let per = (hml - 16).div_euclid(n).max(4) as usize;
            for o in &mut options {
                o.truncate(per);
            }
            budget = hml - used(&options);
        }
        head.truncate(budget.max(8) as usize);
        let mut ids = Vec::with_capacity(head.len() + 3 + used(&options) as usize);
        ids.push(s.cls);
        ids.extend(head);
        ids.push(s.sep);
        let mut markers = Vec::with_capacity(options.len());
        for o in options {
            markers.push(ids.len());
            ids.extend(o);
        }
        ids.push(s.sep);
        Ok((ids, markers))
    }

    fn forward(&self, built: Vec<Built>) -> candle_core::Result<Vec<LayaRow>> {
        if built.is_empty() {
            return Ok(Vec::new());
        }
        let inner = &*self.inner;
        let rows: Vec<&[u32]> = built.iter().map(|b| b.ids.as_slice()).collect();
        let hidden = inner.encoder.forward(&rows)?;
        let kinds: Vec<usize> = built.iter().map(|b| b.kind).collect();
        let markers: Vec<&[usize]> = built.iter().map(|b| b.markers.as_slice()).collect();
        let (logits, act) = inner.head.forward(hidden, &kinds, &markers)?;
        Ok(built
            .into_iter()
            .zip(logits)
            .zip(act)
            .map(|((b, logits), act)| {
                let t = inner.temperature_for(b.kind, logits.len());
                let scaled: Vec<f64> = logits.iter().map(|l| f64::from(*l) / t).collect();
                LayaRow {
                    state: b.state,
                    key: b.key,
                    ids: b.ids,
                    markers: b.markers,
                    probabilities: crate::num::softmax(&scaled),
                    logits,
                    act,
                }
            })
            .collect())
    }
}

impl Inner {
    /// The bucket's temperature, else the type's (both clamped at load).
    fn temperature_for(&self, kind: usize, k: usize) -> f64 {
        let bucket = match k {
            0..=2 => "2",
            3..=5 => "3-5",
            6..=10 => "6-10",
            _ => "11+",
        };
        self.by_options
            .get(&format!("{}:{bucket}", TYPES[kind]))
            .copied()
            .unwrap_or(self.temperature[kind])
    }
}

/// A temperature as the reference applies it: a number clamped to
/// [`LAYA_TEMPERATURE_RANGE`], anything else (a bool, a string) 1.
fn clamp_temperature(v: &Value) -> f64 {
    match v.as_f64() {
        Some(t) if t.is_finite() && !v.is_boolean() => {
            t.clamp(LAYA_TEMPERATURE_RANGE.0, LAYA_TEMPERATURE_RANGE.1)
        }
        _ => 1.0,
    }
}

/// Which type embedding a question gets (choice 0, score 1, noul 2).
fn kind_of(q: &Question) -> usize {
    match q {
        Question::Choice(_) => 0,
        Question::Score(_) => 1,
        _ => 2,
    }
}

/// The text of a state: a string as it is, anything else as Python-style
/// JSON (`", "` and `": "` separators, keys in the caller's order, non-ASCII
/// kept).
pub(crate) fn state_text(state: &Value) -> String {
    match state {
        Value::String(s) => s.clone(),
        other => dumps(other, Separators::Spaced),
    }
}

/// Instructions or a criterion as text: a string as it is, structured
/// content as Python-style JSON.
fn content_text(c: &Content) -> String {
    match c.as_str() {
        Some(s) => s.to_string(),
        None => dumps(c.as_value(), Separators::Spaced),
    }
}

/// The option texts in the caller's order.
fn options_of(q: &Question) -> Vec<String> {
    let described = |c: &Content| c.as_str() != Some("");
    match q {
        Question::Choice(c) => c
            .criteria
            .iter()
            .map(|(id, d)| match d.as_ref().filter(|d| described(d)) {
                Some(d) => format!("{id}: {}", content_text(d)),
                None => id.clone(),
            })
            .collect(),
        Question::Score(s) => s
            .criteria
            .iter()
            .enumerate()
            .map(|(i, c)| format!("level {i}: {}", content_text(c)))
            .collect(),
        Question::Noul(n) => {
            let (f, t) = match &n.criteria {
                Some(c) => (
                    Some(&c.when_false).filter(|c| described(c)),
                    Some(&c.when_true).filter(|c| described(c)),
                ),
                None => (None, None),
            };
            vec![
                format!(
                    "false: {}",
                    f.map(content_text)
                        .unwrap_or_else(|| "no, the statement does not hold".into())
                ),
                format!(
                    "true: {}",
                    t.map(content_text)
                        .unwrap_or_else(|| "yes, the statement holds".into())
                ),
            ]
        }
        Question::Box(_) => Vec::new(),
    }
}

/// Rounded to 4 decimals, as the reference reports every number.
fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// 1 − H(p) / ln k, in [0, 1]; 1 for fewer than two options.
fn entropy_confidence(p: &[f64]) -> f64 {
    let k = p.len();
    if k < 2 {
        return 1.0;
    }
    let h: f64 = -p.iter().map(|x| x * x.clamp(1e-12, 1.0).ln()).sum::<f64>();
    (1.0 - h / (k as f64).ln()).clamp(0.0, 1.0)
}

/// One state's decision from its rows (in question-key order).
fn decode(rows: &[&LayaRow], questions: &Questions) -> Evaluated {
    let mut answers = BTreeMap::new();
    let mut extensions = BTreeMap::new();
    let mut tokens = 0usize;
    for row in rows {
        tokens += row.ids.len();
        let p = &row.probabilities;
        let top = p.iter().copied().fold(0.0f64, f64::max).clamp(0.0, 1.0);
        let answer = match &questions[&row.key] {
            Question::Choice(c) => {
                let ids: Vec<&String> = c.criteria.keys().collect();
                // The first of equal maxima, as numpy's argmax picks.
                let best = p
                    .iter()
                    .enumerate()
                    .fold(0, |b, (i, x)| if *x > p[b] { i } else { b });
                let probabilities: BTreeMap<String, f64> = ids
                    .iter()
                    .zip(p)
                    .map(|(id, x)| ((*id).clone(), round4(*x)))
                    .collect();
                DecisionAnswer::Choice(ChoiceAnswer {
                    choice: ids[best].clone(),
                    near_uniform: near_uniform(&probabilities),
                    probabilities,
                    confidence: round4(entropy_confidence(p)),
                })
            }
            Question::Score(s) => {
                // The expected level from the unrounded distribution, then
                // every figure rounded, as the reference rounds them.
                let mut a =
                    ScoreAnswer::from_distribution(p, &s.criteria, round4(entropy_confidence(p)));
                a.score = round4(a.score);
                a.probabilities.values_mut().for_each(|x| *x = round4(*x));
                DecisionAnswer::Score(a)
            }
            _ => DecisionAnswer::Noul(NoulAnswer { noul: round4(p[1]) }),
        };
        answers.insert(row.key.clone(), answer);
        let act = row.act.first().copied().unwrap_or(0.0);
        let extra = json!({
            "answer_confidence": round4(top),
            "action": {"act_probability": round4(f64::from(act))},
        });
        if let Value::Object(m) = extra {
            extensions.insert(row.key.clone(), m);
        }
    }
    // Calibrated in the sense that the checkpoint ships fitted temperatures.
    let decision = Decision {
        calibrated: true,
        ..local_decision(LAYA_MODEL, answers, tokens)
    };
    Evaluated::new(decision).with_extensions(extensions)
}

/// The special tokens named in `tokenizer_config.json` (or, failing that,
/// `special_tokens_map.json`), as ids of the tokenizer.
fn special_tokens(tok_dir: &Path, tokenizer: &Tokenizer) -> Result<Special, LocalError> {
    let cfg_path = tok_dir.join("tokenizer_config.json");
    let bytes = read_checkpoint_file(&cfg_path)?;
    let cfg = Fields::parse(&cfg_path, &bytes)?;
    let map_path = tok_dir.join("special_tokens_map.json");
    let map = match map_path.symlink_metadata() {
        Ok(_) => Some(Fields::parse(&map_path, &read_checkpoint_file(&map_path)?)?),
        Err(_) => None,
    };
    let token = |name: &str| -> Result<(String, u32), LocalError> {
        let text_of = |v: &Value| -> Option<String> {
            match v {
                Value::String(s) => Some(s.clone()),
                Value::Object(o) => o.get("content").and_then(Value::as_str).map(str::to_string),
                _ => None,
            }
        };
        let text = cfg
            .get(name)
            .and_then(text_of)
            .or_else(|| map.as_ref().and_then(|m| m.get(name)).and_then(text_of))
            .ok_or_else(|| msg::field(&cfg_path, name, "is missing"))?;
        let id = tokenizer.token_to_id(&text).ok_or_else(|| {
            msg::field(
                &cfg_path,
                name,
                format_args!("names {text:?}, which tokenizer.json does not have"),
            )
        })?;
        Ok((text, id))
    };
    let (_, cls) = token("cls_token")?;
    let (_, sep) = token("sep_token")?;
    let (mask_text, mask) = token("mask_token")?;
    Ok(Special {
        cls,
        sep,
        mask,
        mask_text,
    })
}

/// The head's transformer layer (PyTorch's, with the norm first): pre-norm
/// attention without positions, pre-norm ReLU feed-forward of 4× the width.
struct HeadLayer {
    qkv: Lin,
    out: Lin,
    norm1: Norm,
    norm2: Norm,
    up: Lin,
    down: Lin,
}

/// One list of numbers per row.
type PerRow = Vec<Vec<f32>>;

/// The decision head on top of the encoder.
struct Head {
    /// `[3, d]`: one row per question type, added to every token of its row.
    type_emb: Vec<f32>,
    layers: Vec<HeadLayer>,
    heads: usize,
    scorer_norm: LayerNorm,
    scorer_up: Linear,
    scorer_out: Linear,
    act_in: Linear,
    act_out: Linear,
}

fn lin(vb: &VarBuilder, out: usize, inp: usize) -> candle_core::Result<Linear> {
    Ok(Linear::new(
        vb.get((out, inp), "weight")?,
        Some(vb.get(out, "bias")?),
    ))
}

fn ln(vb: &VarBuilder, d: usize) -> candle_core::Result<LayerNorm> {
    Ok(LayerNorm::new(
        vb.get(d, "weight")?,
        vb.get(d, "bias")?,
        1e-5,
    ))
}

/// Rows the head's layers run on at once (whole rows).
const HEAD_GROUP_TOKENS: usize = 2048;

impl Head {
    /// The head from the checkpoint's tensors left after the encoder's.
    fn load(
        mut map: HashMap<String, Tensor>,
        d: usize,
        layers: usize,
        n_act: usize,
    ) -> candle_core::Result<Head> {
        let heads = (d / 64).max(1);
        if !d.is_multiple_of(heads) {
            candle_core::bail!("the head's width {d} does not split into {heads} heads");
        }
        let layers = (0..layers)
            .map(|i| {
                let name = |n: &str| format!("head.layers.{i}.{n}");
                let mut lin = |n: &str, out: usize, inp: usize| {
                    let w = take(&mut map, &name(&format!("{n}.weight")), &[out, inp])?;
                    let b = take(&mut map, &name(&format!("{n}.bias")), &[out])?;
                    Lin::new(w, Some(b), false)
                };
                let (out, up, down) = (
                    lin("self_attn.out_proj", d, d)?,
                    lin("linear1", 4 * d, d)?,
                    lin("linear2", d, 4 * d)?,
                );
                let qkv = Lin::new(
                    take(&mut map, &name("self_attn.in_proj_weight"), &[3 * d, d])?,
                    Some(take(&mut map, &name("self_attn.in_proj_bias"), &[3 * d])?),
                    false,
                )?;
                Ok(HeadLayer {
                    qkv,
                    out,
                    norm1: Norm::take(&mut map, &name("norm1"), d, true, 1e-5)?,
                    norm2: Norm::take(&mut map, &name("norm2"), d, true, 1e-5)?,
                    up,
                    down,
                })
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        let type_emb = take(&mut map, "type_emb.weight", &[3, d])?
            .flatten_all()?
            .to_vec1()?;
        let vb = VarBuilder::from_tensors(map, DType::F32, &Device::Cpu);
        let s = vb.pp("scorer");
        let a = vb.pp("act_head");
        Ok(Head {
            type_emb,
            layers,
            heads,
            scorer_norm: ln(&s.pp("0"), d)?,
            scorer_up: lin(&s.pp("1"), d, d)?,
            scorer_out: lin(&s.pp("3"), 1, d)?,
            act_in: lin(&a.pp("0"), 256, d + 4)?,
            act_out: lin(&a.pp("2"), n_act, 256)?,
        })
    }

    /// Per row: one logit per marker, and the act head's softmax.
    fn forward(
        &self,
        hidden: Packed,
        kinds: &[usize],
        markers: &[&[usize]],
    ) -> candle_core::Result<(PerRow, PerRow)> {
        let d = hidden.hidden;
        let b = kinds.len();
        let starts = hidden.starts.clone();
        let n = hidden.data.len() / d;
        let lengths: Vec<usize> = starts
            .iter()
            .zip(starts.iter().skip(1).chain(std::iter::once(&n)))
            .map(|(s, e)| e - s)
            .collect();
        let mut x = hidden.data;
        for (row, &kind) in kinds.iter().enumerate() {
            let t = &self.type_emb[kind * d..(kind + 1) * d];
            for token in x[starts[row] * d..(starts[row] + lengths[row]) * d].chunks_mut(d) {
                token.iter_mut().zip(t).for_each(|(x, t)| *x += t);
            }
        }
        if !self.layers.is_empty() {
            let groups = groups(&lengths, HEAD_GROUP_TOKENS);
            let most = groups.iter().map(|g| g.tokens).max().unwrap_or(0);
            let mut normed = vec![0f32; most * d];
            let mut qkv = vec![0f32; most * 3 * d];
            let mut ctx = vec![0f32; most * d];
            let mut up = vec![0f32; most * 4 * d];
            let attend = Attend {
                heads: self.heads,
                head_dim: d / self.heads,
                rope: None,
                window: None,
                block: 512,
            };
            for layer in &self.layers {
                let (w_qkv, w_out) = (HeldLin::of(&layer.qkv)?, HeldLin::of(&layer.out)?);
                let (w_up, w_down) = (HeldLin::of(&layer.up)?, HeldLin::of(&layer.down)?);
                let (norm1, norm2) = (HeldNorm::of(&layer.norm1)?, HeldNorm::of(&layer.norm2)?);
                for g in &groups {
                    let tokens = g.tokens;
                    let x = &mut x[g.first_token * d..(g.first_token + tokens) * d];
                    let normed = &mut normed[..tokens * d];
                    let qkv = &mut qkv[..tokens * 3 * d];
                    let ctx = &mut ctx[..tokens * d];
                    let up = &mut up[..tokens * 4 * d];
                    norm1.apply(x, normed);
                    w_qkv.apply(Rows::packed(normed, tokens, d), qkv, Out::Overwrite);
                    attention(qkv, &g.rows(&starts, &lengths), &attend, ctx);
                    w_out.apply(Rows::packed(ctx, tokens, d), x, Out::Add);
                    norm2.apply(x, normed);
                    w_up.apply(Rows::packed(normed, tokens, d), up, Out::Overwrite);
                    up.iter_mut().for_each(|v| *v = v.max(0.0));
                    w_down.apply(Rows::packed(up, tokens, 4 * d), x, Out::Add);
                }
            }
        }
        let token = |row: usize, p: usize| &x[(starts[row] + p) * d..(starts[row] + p + 1) * d];
        let dev = Device::Cpu;
        let picked: Vec<f32> = markers
            .iter()
            .enumerate()
            .flat_map(|(row, ms)| ms.iter().flat_map(move |&m| token(row, m).iter().copied()))
            .collect();
        let picked = Tensor::from_vec(
            picked,
            (markers.iter().map(|m| m.len()).sum::<usize>(), d),
            &dev,
        )?;
        let s = self
            .scorer_up
            .forward(&self.scorer_norm.forward(&picked)?)?
            .apply_op1_no_bwd(&Gelu)?;
        let all: Vec<f32> = self.scorer_out.forward(&s)?.flatten_all()?.to_vec1()?;
        let mut logits = Vec::with_capacity(b);
        let mut rest = all.as_slice();
        for ms in markers {
            let (mine, more) = rest.split_at(ms.len());
            logits.push(mine.to_vec());
            rest = more;
        }
        // The act head reads position 0 beside four features of the raw
        // (untempered) distribution: top1, top1 − top2, normalised entropy, k/255.
        let pooled: Vec<f32> = (0..b)
            .flat_map(|row| token(row, 0).iter().copied())
            .collect();
        let pooled = Tensor::from_vec(pooled, (b, d), &dev)?;
        let mut feats = Vec::with_capacity(b * 4);
        for l in &logits {
            let z: Vec<f64> = l.iter().map(|x| f64::from(*x)).collect();
            let p = if z.is_empty() {
                Vec::new()
            } else {
                crate::num::softmax(&z)
            };
            let mut sorted = p.clone();
            sorted.sort_by(|a, b| b.total_cmp(a));
            let top1 = sorted.first().copied().unwrap_or(0.0);
            let top2 = sorted.get(1).copied().unwrap_or(0.0);
            let k = p.len().max(2) as f64;
            let ent = -p.iter().map(|x| x * x.max(1e-9).ln()).sum::<f64>() / k.ln();
            feats.extend([top1, top1 - top2, ent, k / 255.0].map(|x| x as f32));
        }
        let feats = Tensor::from_vec(feats, (b, 4), &dev)?;
        let act_in = Tensor::cat(&[&pooled, &feats], 1)?;
        let act = self
            .act_out
            .forward(&self.act_in.forward(&act_in)?.apply_op1_no_bwd(&Gelu)?)?;
        let act = candle_nn::ops::softmax_last_dim(&act)?.to_vec2::<f32>()?;
        Ok((logits, act))
    }
}

/// Runs [`Laya::decide_full`] off the async threads, after the shared checks
/// of every engine: a model override, image assets, extra fields and box
/// questions are refused.
impl FullEvaluator for Laya {
    fn call_full(
        &self,
        _ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Evaluated, ClassifierError>> {
        let me = self.clone();
        engine::run(&LAYA_ENGINE, LAYA_MODEL, LAYA_STYLE, request, move |r| {
            me.decide_full(&r.state, &r.questions)
        })
    }
}

/// A classifier that answers with [`Laya`]: the Custom style around the
/// evaluator, its model [`LAYA_MODEL`]. Its decisions are `calibrated = true`
/// only in the sense that the checkpoint ships fitted temperatures (clamped
/// to [0.5, 5]); check them on your own data with `toolnexus assess`.
///
/// Its [`fingerprint`](Classifier::fingerprint) names the checkpoint's
/// contents (the SHA-256 of its config, encoder config, tokenizer files and
/// weights, worked out beside the load), so a cache never serves one
/// checkpoint's answer for another's.
pub fn laya(model: Laya) -> Classifier {
    let inner = &model.inner;
    let files = format!("{}{}", inner.files, bf16::fingerprint_part(inner.precision));
    let judge =
        Classifier::from_evaluator(LAYA_MODEL, model).with_fingerprint_part(LAYA_STYLE, files);
    engine::marked_local(judge, LAYA_STYLE, LAYA_MODEL)
}

#[cfg(test)]
mod tests;
