//! [`DecisionTune`]: the open-weights DecisionTune 1.0 model (a ModernBERT
//! encoder and a linear head at the mask tokens) on the CPU, answering the way
//! its reference package (`decision-tune==1.0.0`) does. Uncalibrated.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{Linear, VarBuilder};
use serde_json::Value;
use tokenizers::Tokenizer;
use toolnexus::classifier::{
    BoxFuture, ChoiceAnswer, Classifier, ClassifierError, Content, Decision, DecisionAnswer,
    EvalContext, EvalRequest, Evaluated, Evaluator, NoulAnswer, Question, Questions, ScoreAnswer,
    near_uniform, validate_questions,
};

use crate::engine::{self, EngineInfo, ModelDir, Precision, QuestionKinds, local_decision};
use crate::error::{LocalError, msg};
use crate::kernels::bf16;
use crate::modernbert::{
    EncoderConfig, Fields, ModernBert, read_checkpoint_file, read_safetensors, read_tokenizer,
    regular_file, token_ids, token_ids_bounded,
};
use crate::pyjson::{Separators, dumps};

/// The style name in DecisionTune's messages (and the CLI's `--style decisiontune`).
pub const DECISIONTUNE_STYLE: &str = "decisiontune";

/// The model name DecisionTune decisions carry.
pub const DECISIONTUNE_MODEL: &str = "decisiontune-1.0";

/// The DecisionTune engine: `--style decisiontune`, on a checkpoint directory.
pub const DECISIONTUNE_ENGINE: EngineInfo = EngineInfo {
    name: DECISIONTUNE_STYLE,
    summary: "answers on this machine with the open-weights DecisionTune model (uncalibrated)",
    answers: QuestionKinds::NOUL_CHOICE_SCORE,
    model_dir: ModelDir::Checkpoint,
    student: false,
};

/// The hub repository of DecisionTune 1.0 (fetch it yourself; nothing here
/// downloads).
pub const DECISIONTUNE_HUB_REPO: &str = "decision-tune/decisiontune-1.0";

/// The SHA-256 of DecisionTune 1.0's `manifest.json` as the reference package
/// (`decision-tune==1.0.0`) pins it: check a download's manifest against it;
/// [`DecisionTune::load`] then checks every file against the manifest.
pub const DECISIONTUNE_MANIFEST_SHA256: &str =
    "2ec93545ef3fcc2135e8b5c14e4b4690ff99535e9bc8ed5b85c98d071564a715";

/// The files a DecisionTune directory must hold besides `manifest.json`, each
/// checked against the SHA-256 the manifest lists before anything is parsed.
pub const DECISIONTUNE_FILES: [&str; 4] = [
    "config.json",
    "tokenizer.json",
    "model.safetensors",
    "head.safetensors",
];

/// Text the reference turns into a space wherever it appears.
const SPECIAL: [&str; 5] = ["[MASK]", "[CLS]", "[SEP]", "[PAD]", "[UNK]"];

/// DecisionTune on this machine. Cheap to clone (an `Arc`).
///
/// One row per question, `[CLS] instructions [SEP] ([MASK] option)… [SEP]
/// state [SEP]`; the head scores the hidden state at each mask and the
/// answer is the softmax over those scores, with no temperature (so
/// `calibrated = false`). A noul question asks the options `yes`, `no` and
/// answers P(yes); a score question is a choice over its levels, answered with
/// the expected level. A row longer than the encoder's context is refused.
///
/// What is proven: on seeded tiny random models every token id is reproduced
/// exactly and every logit and probability within 1e-4 of the reference
/// package. What is not: the quality of the real weights.
#[derive(Clone)]
pub struct DecisionTune {
    inner: Arc<Inner>,
}

struct Inner {
    encoder: ModernBert,
    head: Linear,
    tokenizer: Tokenizer,
    cls: u32,
    sep: u32,
    mask: u32,
    dir: PathBuf,
    /// What the encoder runs in: `F32` or `Bf16`.
    precision: Precision,
}

impl std::fmt::Debug for DecisionTune {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecisionTune")
            .field("dir", &self.inner.dir)
            .finish_non_exhaustive()
    }
}

/// One row DecisionTune reads, with what came out of it.
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionTuneRow {
    /// The question's key.
    pub key: String,
    /// The token ids, special tokens included.
    pub ids: Vec<u32>,
    /// The position of each option's mask token.
    pub markers: Vec<usize>,
    /// One logit per option.
    pub logits: Vec<f32>,
    /// Their softmax.
    pub probabilities: Vec<f64>,
}

/// Checks every file of [`DECISIONTUNE_FILES`] against `manifest.json`.
fn verify(dir: &Path) -> Result<(), LocalError> {
    let manifest = dir.join("manifest.json");
    let bytes = read_checkpoint_file(&manifest)?;
    let v = Fields::parse(&manifest, &bytes)?;
    let files = Fields::of(&manifest, &v)
        .get("files")
        .and_then(Value::as_object)
        .ok_or_else(|| msg::field(&manifest, "files", "is missing or not an object"))?;
    for name in DECISIONTUNE_FILES {
        let want = files
            .get(name)
            .and_then(|f| f.get("sha256"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                msg::field(
                    &manifest,
                    &format!("files.{name}.sha256"),
                    "is missing: refusing to load an unlisted file",
                )
            })?;
        let path = dir.join(name);
        // The size first: a FIFO, a device or a file of another length is
        // refused before a byte of it is read.
        let len = regular_file(&path)?.len();
        match files.get(name).and_then(|f| f.get("size")) {
            None => {}
            Some(size) => {
                let want = size.as_u64().ok_or_else(|| {
                    msg::field(
                        &manifest,
                        &format!("files.{name}.size"),
                        format_args!("is {size}, not a number of bytes"),
                    )
                })?;
                if want != len {
                    return Err(msg::size(&path, &manifest, want, len));
                }
            }
        }
        let got = crate::pins::file_sha256(&path).map_err(|e| msg::read_checkpoint(&path, e))?;
        if !got.eq_ignore_ascii_case(want) {
            return Err(msg::digest(&path, &manifest, want, &got));
        }
    }
    Ok(())
}

impl DecisionTune {
    /// Loads a DecisionTune directory after checking every model file against
    /// the SHA-256 its `manifest.json` lists (a missing manifest, an unlisted
    /// file or a mismatch is refused, naming the file).
    pub fn load(dir: impl AsRef<Path>) -> Result<DecisionTune, LocalError> {
        DecisionTune::load_with(dir, Precision::F32)
    }

    /// [`load`](DecisionTune::load) with the encoder's matrix products in
    /// `precision` (see [`Embedder::load_with`](crate::Embedder::load_with)):
    /// in bf16 the encoder's linear layers and token embeddings are kept in
    /// bf16 only; the head stays f32.
    pub fn load_with(
        dir: impl AsRef<Path>,
        precision: Precision,
    ) -> Result<DecisionTune, LocalError> {
        let precision = bf16::resolve_precision(precision)?;
        let dir = dir.as_ref();
        verify(dir)?;
        let enc = EncoderConfig::read(&dir.join("config.json"))?;
        let tok_path = dir.join("tokenizer.json");
        let tokenizer = read_tokenizer(&tok_path)?;
        let id = |t: &str| {
            tokenizer
                .token_to_id(t)
                .ok_or_else(|| msg::tokenizer(&tok_path, format_args!("it has no {t} token")))
        };
        let (cls, sep, mask) = (id("[CLS]")?, id("[SEP]")?, id("[MASK]")?);
        let weights = dir.join("model.safetensors");
        let bf16 = precision == Precision::Bf16;
        let mut tensors = read_safetensors(&weights, |_| bf16)?;
        let encoder = ModernBert::load(&mut tensors, "", &enc, bf16)
            .map_err(|e| msg::weights_mismatch(&weights, e))?;
        drop(tensors);
        let head_path = dir.join("head.safetensors");
        let hb = VarBuilder::from_tensors(
            read_safetensors(&head_path, |_| false)?,
            DType::F32,
            &Device::Cpu,
        );
        let head = (|| {
            Ok::<_, candle_core::Error>(Linear::new(
                hb.get((1, enc.hidden_size), "head.weight")?,
                Some(hb.get(1, "head.bias")?),
            ))
        })()
        .map_err(|e| msg::weights_mismatch(&head_path, e))?;
        Ok(DecisionTune {
            inner: Arc::new(Inner {
                encoder,
                head,
                tokenizer,
                cls,
                sep,
                mask,
                dir: dir.to_path_buf(),
                precision,
            }),
        })
    }

    /// Decides `questions` about `state` on the calling thread, all rows in
    /// one forward pass (packed, no padding computed). `calibrated` is false; usage counts the
    /// tokens over the rows.
    pub fn decide(
        &self,
        state: &Value,
        questions: &Questions,
    ) -> Result<Decision, ClassifierError> {
        let rows = self.trace(state, questions)?;
        let mut answers = BTreeMap::new();
        let mut tokens = 0usize;
        for row in &rows {
            tokens += row.ids.len();
            let p = &row.probabilities;
            let best = p
                .iter()
                .enumerate()
                .fold(0, |b, (i, x)| if *x > p[b] { i } else { b });
            let top = p.get(best).copied().unwrap_or(0.0);
            let answer = match &questions[&row.key] {
                Question::Choice(c) => {
                    let ids: Vec<&String> = c.criteria.keys().collect();
                    let probabilities: BTreeMap<String, f64> = ids
                        .iter()
                        .map(|s| (*s).clone())
                        .zip(p.iter().copied())
                        .collect();
                    DecisionAnswer::Choice(ChoiceAnswer {
                        choice: ids[best].clone(),
                        near_uniform: near_uniform(&probabilities),
                        probabilities,
                        confidence: top,
                    })
                }
                Question::Score(s) => {
                    DecisionAnswer::Score(ScoreAnswer::from_distribution(p, &s.criteria, top))
                }
                _ => DecisionAnswer::Noul(NoulAnswer { noul: p[0] }),
            };
            answers.insert(row.key.clone(), answer);
        }
        Ok(local_decision(DECISIONTUNE_MODEL, answers, tokens))
    }

    /// Every row of a call with its ids, logits and probabilities, in
    /// question-key order.
    #[doc(hidden)]
    pub fn trace(
        &self,
        state: &Value,
        questions: &Questions,
    ) -> Result<Vec<DecisionTuneRow>, ClassifierError> {
        validate_questions(questions)?;
        let local = |e: LocalError| ClassifierError::custom(&e).with_source(e);
        let inner = &*self.inner;
        let t = |s: &str| token_ids(&inner.tokenizer, &clean(s));
        let limit = inner.encoder.max_positions();
        // Only as much of the state as a row could hold is tokenized: past
        // `limit` tokens it is refused however long it is.
        let (state_ids, whole) =
            token_ids_bounded(&inner.tokenizer, &clean(&state_text(state)), limit, false)
                .map_err(local)?;
        let mut rows = Vec::with_capacity(questions.len());
        for (key, q) in questions {
            let options: Vec<String> = match q {
                Question::Choice(c) => c
                    .criteria
                    .iter()
                    .map(|(id, d)| option_text(id, d.as_ref()))
                    .collect(),
                Question::Score(s) => s
                    .criteria
                    .iter()
                    .enumerate()
                    .map(|(i, c)| option_text(&i.to_string(), Some(c)))
                    .collect(),
                Question::Noul(_) => vec!["yes".into(), "no".into()],
                Question::Box(_) => {
                    return Err(ClassifierError::unsupported(
                        DECISIONTUNE_STYLE,
                        format_args!("box question {key:?}"),
                    ));
                }
            };
            let mut ids = vec![inner.cls];
            ids.extend(t(&as_text(q.instructions())).map_err(local)?);
            ids.push(inner.sep);
            let mut markers = Vec::with_capacity(options.len());
            for o in &options {
                markers.push(ids.len());
                ids.push(inner.mask);
                ids.extend(t(o).map_err(local)?);
            }
            ids.push(inner.sep);
            ids.extend_from_slice(&state_ids);
            ids.push(inner.sep);
            if ids.len() > limit {
                let more = if whole { "" } else { "more than " };
                return Err(local(msg::input(format_args!(
                    "question {key:?}: a sequence of {more}{} tokens exceeds the {limit}-token context limit",
                    ids.len()
                ))));
            }
            rows.push(DecisionTuneRow {
                key: key.clone(),
                ids,
                markers,
                logits: Vec::new(),
                probabilities: Vec::new(),
            });
        }
        self.forward(&mut rows)
            .map_err(|e| local(msg::inference(e)))?;
        Ok(rows)
    }

    fn forward(&self, rows: &mut [DecisionTuneRow]) -> candle_core::Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let inner = &*self.inner;
        let ids: Vec<&[u32]> = rows.iter().map(|r| r.ids.as_slice()).collect();
        let hidden = inner.encoder.forward(&ids)?;
        let picked: Vec<f32> = rows
            .iter()
            .enumerate()
            .flat_map(|(row, r)| r.markers.iter().map(move |&m| (row, m)))
            .flat_map(|(row, m)| hidden.token(row, m).iter().copied())
            .collect();
        let n = picked.len() / hidden.hidden;
        let picked = Tensor::from_vec(picked, (n, hidden.hidden), &Device::Cpu)?;
        let all: Vec<f32> = inner.head.forward(&picked)?.flatten_all()?.to_vec1()?;
        let mut rest = all.as_slice();
        for r in rows {
            let (mine, more) = rest.split_at(r.markers.len());
            r.logits = mine.to_vec();
            let z: Vec<f64> = mine.iter().map(|x| f64::from(*x)).collect();
            r.probabilities = crate::num::softmax(&z);
            rest = more;
        }
        Ok(())
    }
}

/// `s` with every special token's text turned into a space.
fn clean(s: &str) -> String {
    let mut s = s.to_string();
    for t in SPECIAL {
        if s.contains(t) {
            s = s.replace(t, " ");
        }
    }
    s
}

/// A state as DecisionTune reads it: a string as is, an object as `key: value
/// | key: value` (non-string values as compact JSON), anything else as
/// compact JSON.
fn state_text(state: &Value) -> String {
    match state {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}: {s}"),
                other => format!("{k}: {}", dumps(other, Separators::Compact)),
            })
            .collect::<Vec<_>>()
            .join(" | "),
        other => dumps(other, Separators::Compact),
    }
}

/// Instructions as text: a string as is, structured content as compact JSON.
fn as_text(c: &Content) -> String {
    match c.as_str() {
        Some(s) => s.to_string(),
        None => dumps(c.as_value(), Separators::Compact),
    }
}

/// An option's text: its description when it has one, else its key with `_`
/// read as spaces.
fn option_text(key: &str, description: Option<&Content>) -> String {
    match description {
        Some(c) => match c.as_str() {
            Some(s) if !s.trim().is_empty() => s.to_string(),
            Some("") => key.replace('_', " "),
            _ => as_text(c),
        },
        None => key.replace('_', " "),
    }
}

/// Runs [`DecisionTune::decide`] off the async threads, after the shared
/// checks of every engine: a model override, image assets, extra fields and
/// box questions are refused.
impl Evaluator for DecisionTune {
    fn call(
        &self,
        _ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Decision, ClassifierError>> {
        let me = self.clone();
        engine::run(
            &DECISIONTUNE_ENGINE,
            DECISIONTUNE_MODEL,
            DECISIONTUNE_STYLE,
            request,
            move |r| me.decide(&r.state, &r.questions),
        )
    }

    /// [`call`](Evaluator::call), the decision's extensions saying which
    /// precision answered when it was not f32.
    fn call_full(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Evaluated, ClassifierError>> {
        let (fut, precision) = (self.call(ctx, request), self.inner.precision);
        Box::pin(async move { Ok(bf16::mark(precision, Evaluated::new(fut.await?))) })
    }
}

/// A classifier that answers with [`DecisionTune`] (uncalibrated: no
/// temperatures ship with it).
///
/// Its [`fingerprint`](Classifier::fingerprint) names the checkpoint by its
/// `manifest.json`, which pins every model file's SHA-256 (checked at load):
/// a cache never serves one checkpoint's answer for another's.
pub fn decisiontune(model: DecisionTune) -> Classifier {
    let files = crate::modernbert::files_fingerprint(&model.inner.dir, &["manifest.json"])
        + bf16::fingerprint_part(model.inner.precision);
    let judge = Classifier::from_evaluator(DECISIONTUNE_MODEL, model)
        .with_fingerprint_part(DECISIONTUNE_STYLE, files);
    engine::marked_local(judge, DECISIONTUNE_STYLE, DECISIONTUNE_MODEL)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn texts_read_as_the_reference_writes_them() {
        assert_eq!(clean("a [MASK] b [CLS]"), "a   b  ");
        assert_eq!(
            state_text(&json!({"msg": "héllo", "n": [1, {"a": 2}]})),
            "msg: héllo | n: [1,{\"a\":2}]"
        );
        assert_eq!(state_text(&json!(["a", 1])), "[\"a\",1]");
        assert_eq!(option_text("tech_support", None), "tech support");
        assert_eq!(option_text("x", Some(&"desc".into())), "desc");
        assert_eq!(option_text("x", Some(&"   ".into())), "   ");
    }
}
