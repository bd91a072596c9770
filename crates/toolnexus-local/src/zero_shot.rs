//! The zero-shot style: answers every question by cosine similarity between the
//! state's embedding and embeddings of the question's own words. **A heuristic**:
//! it has never seen your question, its numbers are not calibrated, and it is
//! good only where the options differ by topic (which desk, which product, which
//! subject), not by polarity, negation, quantity or policy.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use toolnexus::classifier::{
    BoxFuture, ChoiceAnswer, Classifier, ClassifierError, Content, Decision, DecisionAnswer,
    EvalContext, EvalRequest, Evaluated, Evaluator, NoulAnswer, Question, Questions, ScoreAnswer,
    choice_confidence, near_uniform, score_confidence, validate_questions,
};

use crate::embed::Embedder;
use crate::engine::{self, EngineInfo, ModelDir, QuestionKinds, local_decision};
use crate::error::LocalError;
use crate::state_text::state_text_for;

/// The model name zero-shot decisions carry.
pub const ZERO_SHOT_MODEL: &str = "local-minilm-zero-shot";

/// The style name in this evaluator's messages (and the CLI's `--style local`).
pub const ZERO_SHOT_STYLE: &str = "local";

/// The zero-shot engine: `--style local`, on the embedded model.
pub const ZERO_SHOT_ENGINE: EngineInfo = EngineInfo {
    name: ZERO_SHOT_STYLE,
    summary: "answers on this machine with the embedded model, zero-shot: a heuristic for topical choices (uncalibrated)",
    answers: QuestionKinds::NOUL_CHOICE_SCORE,
    model_dir: ModelDir::Embedded,
    student: false,
};

/// The softmax temperature over cosine similarities: probabilities are
/// `softmax(cos / 0.05)`, i.e. similarities scaled by 20. all-MiniLM-L6-v2 was
/// trained with a contrastive loss at exactly this scale, so this is the
/// distribution over candidates the model was trained to produce; a gap of 0.1
/// in similarity makes one option e² ≈ 7.4 times as likely as another.
pub const ZERO_SHOT_TEMPERATURE: f64 = 0.05;

/// The question-text cache holds at most this many bytes (texts, vectors and
/// a fixed charge per entry); past this it starts over. 16 MiB is some 8,000
/// all-MiniLM-L6-v2 vectors of short texts.
const MAX_CACHE_BYTES: usize = 16 << 20;

/// What one cache entry costs beyond its text and vector: the map slot, the
/// string and vector headers.
const ENTRY_OVERHEAD: usize = 96;

/// The zero-shot evaluator: answers noul, choice and score questions on any
/// state with no training, by cosine similarity of embeddings. **A heuristic,
/// for topical choices only**; see [`zero_shot`] for the rules and the
/// classifier built on it. Box questions are refused, naming their key.
///
/// The texts of the questions are embedded once and cached (by their exact
/// text, up to 16 MiB of texts and vectors), so a repeated call embeds only
/// the state. The cache saves time only: a decision and its token count are
/// the same whether or not the texts were cached.
/// Cheap to clone: clones share the embedder and the cache.
///
/// ```
/// use serde_json::json;
/// use toolnexus::classifier::{Questions, choice_over};
/// use toolnexus_local::{Embedder, ZeroShot};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-zeroshot-{}", std::process::id()));
/// # toolnexus_local::tiny_model_for_tests(&dir)?;
/// let local = ZeroShot::new(Embedder::load(&dir)?);
/// let qs = Questions::from([(
///     "desk".to_string(),
///     choice_over("Which desk?", [("billing", "money moved"), ("shipping", "a parcel is late")]).into(),
/// )]);
/// let first = local.decide(&json!("my parcel is late"), &qs)?;
/// let again = local.decide(&json!("my parcel is late"), &qs)?;
/// assert!(!first.calibrated);
/// assert_eq!(again, first, "options come from the cache; answers and usage are the same");
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ZeroShot {
    inner: Arc<Inner>,
}

struct Inner {
    embedder: Embedder,
    cache: Mutex<TextCache>,
}

/// Question texts already embedded: the vector and the tokens it took, by text.
#[derive(Default)]
struct TextCache {
    entries: HashMap<String, Embedded>,
    /// What the entries cost, as [`entry_bytes`] counts it.
    bytes: usize,
}

/// One embedded text: its vector and the tokens the model read for it.
#[derive(Clone)]
struct Embedded {
    vector: Arc<[f32]>,
    tokens: usize,
}

/// What one cached text costs, in bytes.
fn entry_bytes(text: &str, dimension: usize) -> usize {
    text.len() + dimension * std::mem::size_of::<f32>() + ENTRY_OVERHEAD
}

impl std::fmt::Debug for ZeroShot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZeroShot")
            .field("embedder", &self.inner.embedder)
            .finish_non_exhaustive()
    }
}

/// What one question needs embedded: the texts compared with the state.
enum Plan {
    /// Statement, then its negation.
    Noul([String; 2]),
    /// One text per option, in option-id order.
    Choice(Vec<String>),
    /// One text per level, lowest first.
    Score(Vec<String>),
}

impl Plan {
    fn texts(&self) -> &[String] {
        match self {
            Plan::Noul(t) => t,
            Plan::Choice(t) | Plan::Score(t) => t,
        }
    }
}

impl ZeroShot {
    /// A zero-shot evaluator over `embedder`.
    ///
    /// ```
    /// # fn main() -> Result<(), toolnexus_local::LocalError> {
    /// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-zs-new-{}", std::process::id()));
    /// # toolnexus_local::tiny_model_for_tests(&dir)?;
    /// let local = toolnexus_local::ZeroShot::new(toolnexus_local::Embedder::load(&dir)?);
    /// assert_eq!(local.embedder().dimension(), 32);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(embedder: Embedder) -> ZeroShot {
        ZeroShot {
            inner: Arc::new(Inner {
                embedder,
                cache: Mutex::new(TextCache::default()),
            }),
        }
    }

    /// The embedder it runs on.
    ///
    /// ```
    /// # fn main() -> Result<(), toolnexus_local::LocalError> {
    /// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-zs-embedder-{}", std::process::id()));
    /// # toolnexus_local::tiny_model_for_tests(&dir)?;
    /// let local = toolnexus_local::ZeroShot::new(toolnexus_local::Embedder::load(&dir)?);
    /// assert_eq!(local.embedder().model_hash().len(), 64);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(())
    /// # }
    /// ```
    pub fn embedder(&self) -> &Embedder {
        &self.inner.embedder
    }

    /// Decides `questions` about `state` on the calling thread (it blocks for
    /// the forward pass). The decision's model is [`ZERO_SHOT_MODEL`],
    /// `calibrated` is false, usage counts the tokens the model reads for the
    /// state and for each distinct question text (the same whether or not the
    /// texts were cached) and cost is `None`. Of a long state only the part the
    /// model reads is written out and tokenised ([`state_text_for`]).
    ///
    /// Errors: the question limits of
    /// [`validate_questions`]; a box
    /// question ([`ErrorKind::Unsupported`](toolnexus::classifier::ErrorKind),
    /// naming its key); a failure of the model (a custom error whose source is
    /// the [`LocalError`]).
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::{BoxQuestion, ErrorKind, Questions};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-zs-decide-{}", std::process::id()));
    /// # toolnexus_local::tiny_model_for_tests(&dir)?;
    /// let local = toolnexus_local::ZeroShot::new(toolnexus_local::Embedder::load(&dir)?);
    /// let qs = Questions::from([("dent".to_string(), BoxQuestion { instructions: "Where?".into() }.into())]);
    /// let e = local.decide(&json!("photo"), &qs).unwrap_err();
    /// assert_eq!(e.kind(), ErrorKind::Unsupported);
    /// assert_eq!(e.to_string(), "classifier: style \"local\" cannot use box question \"dent\"");
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(())
    /// # }
    /// ```
    pub fn decide(
        &self,
        state: &Value,
        questions: &Questions,
    ) -> Result<Decision, ClassifierError> {
        validate_questions(questions)?;
        let plans: Vec<(&String, Plan)> = questions
            .iter()
            .map(|(key, q)| plan(key, q).map(|p| (key, p)))
            .collect::<Result<_, _>>()?;

        // Every question text not cached yet, once each.
        let mut cached: HashMap<&str, Embedded> = HashMap::new();
        let mut to_embed: Vec<&str> = Vec::new();
        {
            let cache = self.lock_cache();
            for (_, p) in &plans {
                for t in p.texts() {
                    if cached.contains_key(t.as_str()) || to_embed.contains(&t.as_str()) {
                        continue;
                    }
                    match cache.entries.get(t) {
                        Some(v) => {
                            cached.insert(t, v.clone());
                        }
                        None => to_embed.push(t),
                    }
                }
            }
        }
        // The state in a pass of its own: its embedding, and so the decision,
        // is then the same whether or not the question texts were cached.
        let local = |e: LocalError| ClassifierError::custom(&e).with_source(e);
        let embedder = &self.inner.embedder;
        let state_text = state_text_for(embedder, state).map_err(local)?;
        let state = embedder
            .embed_counted(&[state_text.as_str()])
            .map_err(local)?;
        drop(state_text);
        let state_tokens = state.total_tokens();
        let state_vec = state.vectors.into_iter().next().unwrap_or_default();
        if !to_embed.is_empty() {
            let embedded = embedder.embed_counted(&to_embed).map_err(local)?;
            let mut cache = self.lock_cache();
            let dimension = embedder.dimension();
            for ((t, vector), tokens) in to_embed.iter().zip(embedded.vectors).zip(embedded.tokens)
            {
                let e = Embedded {
                    vector: vector.into(),
                    tokens,
                };
                let cost = entry_bytes(t, dimension);
                if cost <= MAX_CACHE_BYTES && !cache.entries.contains_key(*t) {
                    if cache.bytes + cost > MAX_CACHE_BYTES {
                        *cache = TextCache::default();
                    }
                    cache.bytes += cost;
                    cache.entries.insert(t.to_string(), e.clone());
                }
                cached.insert(t, e);
            }
        }
        // Usage counts every text this decision rests on, cached or not, so it
        // never depends on what earlier calls left in the cache.
        let tokens = state_tokens + cached.values().map(|e| e.tokens).sum::<usize>();

        let similarities = |texts: &[String]| -> Vec<f64> {
            texts
                .iter()
                .map(|t| crate::num::dot(&state_vec, &cached[t.as_str()].vector))
                .collect()
        };
        let mut answers = BTreeMap::new();
        for ((key, plan), q) in plans.iter().zip(questions.values()) {
            let p = softmax(&similarities(plan.texts()));
            let answer = match (plan, q) {
                (Plan::Noul(_), _) => DecisionAnswer::Noul(NoulAnswer { noul: p[0] }),
                (Plan::Choice(_), Question::Choice(c)) => choice_answer(c.criteria.keys(), p),
                (Plan::Score(_), Question::Score(s)) => score_answer(&s.criteria, p),
                _ => unreachable!("a plan is made from its own question"),
            };
            answers.insert((*key).clone(), answer);
        }
        Ok(local_decision(ZERO_SHOT_MODEL, answers, tokens))
    }

    /// The zero-shot answer to `q` as the weight rows of a linear head over a
    /// state's embedding, in a student head's label order (`false`/`true`,
    /// option ids, levels): `softmax(W·x)` is exactly the zero-shot
    /// distribution for the state embedded as `x`. [`distill`](crate::student::distill)
    /// starts a head there when
    /// [`TrainOptions::priors`](crate::student::TrainOptions::priors) holds it,
    /// so a student trained on little data stays close to the zero-shot answer.
    ///
    /// Errors as [`decide`](ZeroShot::decide) does: a box question, a model failure.
    ///
    /// ```
    /// use toolnexus::classifier::choice_over;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-zs-head-{}", std::process::id()));
    /// # toolnexus_local::tiny_model_for_tests(&dir)?;
    /// let local = toolnexus_local::ZeroShot::new(toolnexus_local::Embedder::load(&dir)?);
    /// let q = choice_over("Which desk?", [("billing", "money moved"), ("shipping", "a parcel is late")]).into();
    /// let w = local.linear_head("desk", &q)?;
    /// assert_eq!((w.len(), w[0].len()), (2, local.embedder().dimension()));
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(())
    /// # }
    /// ```
    pub fn linear_head(&self, key: &str, q: &Question) -> Result<Vec<Vec<f32>>, ClassifierError> {
        let plan = plan(key, q)?;
        let embedded = self
            .inner
            .embedder
            .embed(plan.texts())
            .map_err(|e| ClassifierError::custom(&e).with_source(e))?;
        let scale = (1.0 / ZERO_SHOT_TEMPERATURE) as f32;
        let mut rows: Vec<Vec<f32>> = embedded
            .into_iter()
            .map(|v| v.into_iter().map(|x| x * scale).collect())
            .collect();
        // The plan puts the statement first; a head's labels are `false`, `true`.
        if let Plan::Noul(_) = plan {
            rows.swap(0, 1);
        }
        Ok(rows)
    }

    fn lock_cache(&self) -> std::sync::MutexGuard<'_, TextCache> {
        // The cache holds finished vectors only: one a panicking thread left is whole.
        self.inner
            .cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Runs [`ZeroShot::decide`] on tokio's blocking pool when called inside a
/// runtime (inline otherwise), after the shared checks of every engine
/// ([`refuse_unanswerable`](crate::refuse_unanswerable)): a model override,
/// image assets, extra fields and box questions are refused. Dropping the
/// future abandons the result; a forward pass already started runs to its end.
impl Evaluator for ZeroShot {
    fn call(
        &self,
        _ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Decision, ClassifierError>> {
        let me = self.clone();
        engine::run(
            &ZERO_SHOT_ENGINE,
            ZERO_SHOT_MODEL,
            "local",
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
        let (fut, me) = (self.call(ctx, request), self.clone());
        Box::pin(async move {
            let d = fut.await?;
            Ok(me.inner.embedder.mark_precision(Evaluated::new(d)))
        })
    }
}

/// A classifier that answers with [`ZeroShot`]: the Custom style around the
/// evaluator, its model [`ZERO_SHOT_MODEL`].
///
/// **A heuristic, good for topical choices only.** It compares the state's
/// embedding with embeddings of the question's own words; it has never seen
/// your question, cannot read negation, numbers or policy, and its
/// probabilities are not calibrated (`calibrated = false`). Use it for routing
/// by subject, offline demos, and as a starting point; ask a real judge, or a
/// student distilled from one, for anything that matters.
///
/// How each kind is answered, with `sim` the cosine similarity to the state
/// text ([`state_text`](fn@crate::state_text)) and `softmax` at [`ZERO_SHOT_TEMPERATURE`]:
///
/// | kind | compared texts | answer |
/// | --- | --- | --- |
/// | choice | `"<id>: <description>"` per option (the id alone when it has none) | probabilities = softmax over options, choice = the most likely, confidence = its probability |
/// | noul | the statement `"<instructions> <true criterion>"` and its negation: the false criterion, or `"not: <instructions>"` | noul = P(statement) of the two-way softmax |
/// | score | each level's text | probabilities over levels, score = the expected level, confidence = the top probability |
/// | box | — | refused: `Unsupported`, naming the key |
///
/// ```
/// use serde_json::json;
/// use toolnexus::classifier::{NoulCriteria, NoulQuestion, Questions, ScoreQuestion, choice_over};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-zs-classifier-{}", std::process::id()));
/// # toolnexus_local::tiny_model_for_tests(&dir)?;
/// let judge = toolnexus_local::zero_shot(toolnexus_local::Embedder::load(&dir)?);
/// let qs = Questions::from([
///     ("desk".to_string(), choice_over("Which desk?", [
///         ("billing", "money moved: a double charge, a refund"),
///         ("shipping", "a parcel is late"),
///     ]).into()),
///     ("refund".to_string(), NoulQuestion {
///         instructions: "Does the customer want money back?".into(),
///         criteria: Some(NoulCriteria { when_true: "a refund".into(), when_false: "anything else".into() }),
///     }.into()),
///     ("risk".to_string(), ScoreQuestion {
///         instructions: "How risky?".into(),
///         criteria: vec!["harmless".into(), "risky".into()],
///     }.into()),
/// ]);
/// let d = judge.evaluate(json!({"message": "I was charged twice, refund one"}), &qs).await?;
/// assert_eq!(d.model, "local-minilm-zero-shot");
/// assert!(!d.calibrated && d.usage.cost.is_none());
/// let desk = d.choice("desk")?;
/// assert!((desk.probabilities.values().sum::<f64>() - 1.0).abs() < 1e-9);
/// assert!((0.0..=1.0).contains(&d.noul("refund")?.noul));
/// assert!((0.0..=1.0).contains(&d.score("risk")?.score));
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok(())
/// # }
/// ```
pub fn zero_shot(embedder: Embedder) -> Classifier {
    // The weights' hash, worked out at load: another model directory is
    // another fingerprint, so a cache keeps their answers apart.
    let weights = format!(
        "weights=sha256:{}{}",
        embedder.model_hash(),
        embedder.precision_part()
    );
    let judge = Classifier::from_evaluator(ZERO_SHOT_MODEL, ZeroShot::new(embedder))
        .with_fingerprint_part("zero-shot", weights);
    engine::marked_local(judge, ZERO_SHOT_STYLE, ZERO_SHOT_MODEL)
}

/// The texts to compare the state with, per question kind.
fn plan(key: &str, q: &Question) -> Result<Plan, ClassifierError> {
    Ok(match q {
        Question::Noul(n) => {
            let instructions = n.instructions.to_string();
            let (when_true, when_false) = match &n.criteria {
                Some(c) => (described(&c.when_true), described(&c.when_false)),
                None => (None, None),
            };
            let statement = match when_true {
                Some(t) => join(&instructions, &t),
                None => instructions.clone(),
            };
            let negation = when_false.unwrap_or_else(|| format!("not: {instructions}"));
            Plan::Noul([statement, negation])
        }
        Question::Choice(c) => Plan::Choice(
            c.criteria
                .iter()
                .map(|(id, d)| match d.as_ref().and_then(described) {
                    Some(d) => format!("{id}: {d}"),
                    None => id.clone(),
                })
                .collect(),
        ),
        Question::Score(s) => Plan::Score(s.criteria.iter().map(Content::to_string).collect()),
        Question::Box(_) => {
            return Err(ClassifierError::unsupported(
                ZERO_SHOT_STYLE,
                format_args!("box question {key:?}"),
            ));
        }
    })
}

/// The content as text, or `None` when it is blank.
fn described(c: &Content) -> Option<String> {
    (!c.is_blank()).then(|| c.to_string())
}

fn join(a: &str, b: &str) -> String {
    match (a.trim().is_empty(), b.trim().is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a} {b}"),
    }
}

/// `softmax(sim / ZERO_SHOT_TEMPERATURE)`, summing to 1.
fn softmax(similarities: &[f64]) -> Vec<f64> {
    let logits: Vec<f64> = similarities
        .iter()
        .map(|s| s / ZERO_SHOT_TEMPERATURE)
        .collect();
    crate::num::softmax(&logits)
}

fn top(p: &[f64]) -> (usize, f64) {
    p.iter()
        .copied()
        .enumerate()
        .fold((0, f64::NEG_INFINITY), |best, (i, x)| {
            if x > best.1 { (i, x) } else { best }
        })
}

fn choice_answer<'a>(ids: impl Iterator<Item = &'a String>, p: Vec<f64>) -> DecisionAnswer {
    // `p` follows the caller's option order; the map sorts ids, so the pick is
    // read from the ids in that same order, never from the map's.
    let ids: Vec<&String> = ids.collect();
    let (best, _) = top(&p);
    let choice = ids.get(best).map(|s| (*s).clone()).unwrap_or_default();
    let confidence = choice_confidence(&p);
    let probabilities: BTreeMap<String, f64> = ids.into_iter().cloned().zip(p).collect();
    DecisionAnswer::Choice(ChoiceAnswer {
        choice,
        near_uniform: near_uniform(&probabilities),
        probabilities,
        confidence,
    })
}

fn score_answer(levels: &[Content], p: Vec<f64>) -> DecisionAnswer {
    let confidence = score_confidence(&p);
    let highest = levels.len().saturating_sub(1) as f64;
    let score = p
        .iter()
        .enumerate()
        .map(|(i, x)| i as f64 * x)
        .sum::<f64>()
        .clamp(0.0, highest);
    DecisionAnswer::Score(ScoreAnswer {
        score,
        legend: levels
            .iter()
            .enumerate()
            .map(|(i, l)| (i.to_string(), l.to_string()))
            .collect(),
        probabilities: p
            .into_iter()
            .enumerate()
            .map(|(i, x)| (i.to_string(), x))
            .collect(),
        confidence,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use toolnexus::classifier::{
        BoxQuestion, ErrorKind, NoulCriteria, NoulQuestion, ScoreQuestion, choice_over,
    };

    use super::*;
    use crate::state_text::{StateText, state_text};
    use crate::tiny::testing::tiny;

    fn desk() -> Question {
        choice_over(
            "Which desk?",
            [
                ("billing", Some("money moved: a double charge, a refund")),
                ("shipping", Some("a parcel is late")),
                ("other", None),
            ],
        )
        .into()
    }

    fn texts(q: &Question) -> Vec<String> {
        plan("k", q).unwrap().texts().to_vec()
    }

    #[test]
    fn the_compared_texts_per_kind() {
        assert_eq!(
            texts(&desk()),
            // The caller's order (SPEC §16), not the ids sorted.
            [
                "billing: money moved: a double charge, a refund",
                "shipping: a parcel is late",
                "other"
            ]
        );
        let blank = choice_over("?", [("a", Some("  ")), ("b", Some("bee"))]).into();
        assert_eq!(texts(&blank), ["a", "b: bee"]);
        let noul = |criteria| {
            Question::from(NoulQuestion {
                instructions: "Is it spam?".into(),
                criteria,
            })
        };
        assert_eq!(texts(&noul(None)), ["Is it spam?", "not: Is it spam?"]);
        let both = Some(NoulCriteria {
            when_true: "unsolicited advertising".into(),
            when_false: "a personal message".into(),
        });
        assert_eq!(
            texts(&noul(both)),
            ["Is it spam? unsolicited advertising", "a personal message"]
        );
        let empty = Some(NoulCriteria::default());
        assert_eq!(texts(&noul(empty)), ["Is it spam?", "not: Is it spam?"]);
        let structured = Question::from(ScoreQuestion {
            instructions: "How risky?".into(),
            criteria: vec![
                "harmless".into(),
                Content::structured(json!({"level": "risky"})).unwrap(),
            ],
        });
        assert_eq!(texts(&structured), ["harmless", r#"{"level":"risky"}"#]);
    }

    #[test]
    fn softmax_is_at_the_documented_temperature() {
        let p = softmax(&[0.1, 0.0]);
        let e2 = 2f64.exp();
        assert!((p[0] - e2 / (1.0 + e2)).abs() < 1e-12);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(softmax(&[0.3, 0.3]), [0.5, 0.5]);
        assert_eq!(softmax(&[0.7]), [1.0]);
    }

    #[test]
    fn answers_are_well_formed_distributions() {
        let (_dir, e) = tiny("zs-answers");
        let local = ZeroShot::new(e);
        let qs = Questions::from([
            ("desk".to_string(), desk()),
            (
                "spam".to_string(),
                NoulQuestion {
                    instructions: "Is it spam?".into(),
                    criteria: None,
                }
                .into(),
            ),
            (
                "risk".to_string(),
                ScoreQuestion {
                    instructions: "How risky?".into(),
                    criteria: vec!["harmless".into(), "risky".into(), "destructive".into()],
                }
                .into(),
            ),
        ]);
        let d = local
            .decide(&json!({"message": "my parcel is late"}), &qs)
            .unwrap();
        assert_eq!(d.model, ZERO_SHOT_MODEL);
        assert!(!d.calibrated);
        assert_eq!(d.usage.cost, None);
        assert_eq!(d.usage.output_tokens, 0);

        let c = d.choice("desk").unwrap();
        assert_eq!(
            c.probabilities.keys().collect::<Vec<_>>(),
            ["billing", "other", "shipping"]
        );
        assert!((c.probabilities.values().sum::<f64>() - 1.0).abs() < 1e-9);
        let best = c
            .probabilities
            .iter()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .unwrap();
        assert_eq!(&c.choice, best.0);
        // SPEC §16's formula, not the top probability.
        let p: Vec<f64> = c.probabilities.values().copied().collect();
        assert!((c.confidence - choice_confidence(&p)).abs() < 1e-12);
        assert!(c.confidence < *best.1);
        assert_eq!(c.near_uniform, near_uniform(&c.probabilities));

        let n = d.noul("spam").unwrap().noul;
        assert!((0.0..=1.0).contains(&n));

        let s = d.score("risk").unwrap();
        assert_eq!(s.levels(), ["harmless", "risky", "destructive"]);
        let expected: f64 = s
            .probabilities
            .iter()
            .map(|(k, p)| k.parse::<f64>().unwrap() * p)
            .sum();
        assert!((s.score - expected).abs() < 1e-12);
        assert!((0.0..=2.0).contains(&s.score));
        // SPEC §16's score formula over the levels in order ("0".."2" sort as numbers here).
        let levels: Vec<f64> = s.probabilities.values().copied().collect();
        assert!((s.confidence - score_confidence(&levels)).abs() < 1e-12);
    }

    #[test]
    fn question_texts_are_embedded_once() {
        let (_dir, e) = tiny("zs-cache");
        let local = ZeroShot::new(e.clone());
        let qs = Questions::from([("desk".to_string(), desk())]);
        let state = json!("my parcel is late");
        let state_tokens = e.embed_counted(&["my parcel is late"]).unwrap().tokens[0];
        let option_tokens: usize = e.embed_counted(&texts(&desk())).unwrap().total_tokens();
        let first = local.decide(&state, &qs).unwrap();
        assert_eq!(
            first.usage.input_tokens as usize,
            state_tokens + option_tokens
        );
        assert_eq!(local.lock_cache().entries.len(), 3);
        // Cached texts are not embedded again, and the decision, its usage
        // included, does not depend on what the cache held.
        let again = local.decide(&state, &qs).unwrap();
        assert_eq!(again, first);
        let clone = local.clone().decide(&state, &qs).unwrap();
        assert_eq!(clone, first);
        let fresh = ZeroShot::new(e).decide(&state, &qs).unwrap();
        assert_eq!(fresh, first);
        // A text asked twice in one call counts once, as it is embedded once.
        let twice = Questions::from([("a".to_string(), desk()), ("b".to_string(), desk())]);
        let d = local.decide(&state, &twice).unwrap();
        assert_eq!(d.usage, first.usage);
    }

    #[test]
    fn the_question_cache_is_bounded_in_bytes() {
        let (_dir, e) = tiny("zs-cache-bytes");
        let local = ZeroShot::new(e);
        let state = json!("my parcel is late");
        // 40 calls of 10 options of 64 KiB each: 25 MiB of texts in all.
        for call in 0..40 {
            let options: Vec<(String, String)> = (0..10)
                .map(|i| {
                    (
                        format!("o{i}"),
                        format!("{call} {}", "refund ".repeat(9_362)),
                    )
                })
                .collect();
            let qs = Questions::from([("desk".to_string(), choice_over("?", options).into())]);
            let d = local.decide(&state, &qs).unwrap();
            assert!(d.choice("desk").is_ok());
            let cache = local.lock_cache();
            assert!(cache.bytes <= MAX_CACHE_BYTES, "{} bytes", cache.bytes);
            let counted: usize = cache.entries.keys().map(|t| entry_bytes(t, 32)).sum();
            assert_eq!(cache.bytes, counted);
        }
    }

    #[test]
    fn a_huge_state_is_written_and_tokenized_only_as_far_as_the_model_reads() {
        let (_dir, e) = tiny("zs-huge");
        let local = ZeroShot::new(e.clone());
        let qs = Questions::from([("desk".to_string(), desk())]);
        let line = "the parcel is late and my refund is not moved ";
        let states = [
            json!(line.repeat(1_100_000)),
            json!({"log": vec![line; 1_000_000], "id": 7}),
            json!(vec![json!({"message": line, "n": 1}); 500_000]),
            json!({"a": " ".repeat(20_000), "b": line.repeat(2_000)}),
        ];
        for (i, state) in states.iter().enumerate() {
            let whole = state_text(state);
            let read = state_text_for(&e, state).unwrap();
            assert!(whole.starts_with(&read), "state {i}");
            assert_eq!(
                e.token_ids(&read).unwrap(),
                e.token_ids(&whole).unwrap(),
                "state {i}"
            );
            let fresh = ZeroShot::new(e.clone());
            let before = fresh.embedder().largest_input();
            let d = fresh.decide(state, &qs).unwrap();
            assert_eq!(d, local.decide(&json!(read), &qs).unwrap(), "state {i}");
            assert_eq!(d.usage, local.decide(&json!(whole), &qs).unwrap().usage);
            let _ = before;
        }
        // Bounded: nothing near the 14 to 50 MB of the states reached the tokenizer.
        let largest = e.largest_input();
        assert!(
            largest <= 32 * e.first_window(),
            "tokenised {largest} bytes"
        );
    }

    #[test]
    fn a_state_holding_a_hex_blob_is_read_without_tokenising_it_whole() {
        let (_dir, e) = tiny("zs-hex");
        // 5 MB of hex reads as one unknown word, as its first 101 characters do.
        let blob = "0f".repeat(2_500_000);
        let kept = &blob[..101];
        let states = |run: &str| {
            let command = format!("echo {run} | xxd -r -p > build/blob.bin");
            [
                json!(command.clone()),
                json!({"tool_input": {"command": command.clone()}, "cwd": "/p"}),
                json!([command, "then ls"]),
            ]
        };
        for (big, small) in states(&blob).iter().zip(states(kept).iter()) {
            for style in [StateText::Json, StateText::Lines] {
                let read = style.write_for(&e, big).unwrap();
                assert_eq!(read, style.write(small), "{style:?}");
            }
        }
        assert!(
            e.largest_input() <= e.first_window(),
            "tokenised {} bytes",
            e.largest_input()
        );
    }

    #[test]
    fn the_linear_head_is_the_zero_shot_answer() {
        let (_dir, e) = tiny("zs-head");
        let local = ZeroShot::new(e.clone());
        let spam = Question::from(NoulQuestion {
            instructions: "Is it spam?".into(),
            criteria: None,
        });
        let risk = Question::from(ScoreQuestion {
            instructions: "How risky?".into(),
            criteria: vec!["harmless".into(), "risky".into(), "destructive".into()],
        });
        let qs = Questions::from([
            ("desk".to_string(), desk()),
            ("spam".to_string(), spam),
            ("risk".to_string(), risk),
        ]);
        let state = json!("my parcel is late");
        let d = local.decide(&state, &qs).unwrap();
        let x = &e.embed(&[state_text(&state)]).unwrap()[0];
        let p = |key: &str| {
            let w = local.linear_head(key, &qs[key]).unwrap();
            let logits: Vec<f64> = w.iter().map(|r| crate::num::dot(r, x)).collect();
            crate::num::softmax(&logits)
        };
        let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        let desk = d.choice("desk").unwrap();
        // The head's rows follow the caller's option order.
        let Question::Choice(asked) = &qs["desk"] else {
            unreachable!()
        };
        for (got, id) in p("desk").iter().zip(asked.criteria.keys()) {
            close(*got, desk.probabilities[id]);
        }
        // Labels `false`, `true`: the second is the noul.
        close(p("spam")[1], d.noul("spam").unwrap().noul);
        let risk = d.score("risk").unwrap();
        for (i, got) in p("risk").iter().enumerate() {
            close(*got, risk.probabilities[&i.to_string()]);
        }
        let dent = Question::from(BoxQuestion {
            instructions: "Where?".into(),
        });
        assert_eq!(
            local.linear_head("dent", &dent).unwrap_err().kind(),
            ErrorKind::Unsupported
        );
    }

    #[test]
    fn a_box_question_is_refused_by_key() {
        let (_dir, e) = tiny("zs-box");
        let qs = Questions::from([
            ("desk".to_string(), desk()),
            (
                "dent".to_string(),
                BoxQuestion {
                    instructions: "Where is the dent?".into(),
                }
                .into(),
            ),
        ]);
        let err = ZeroShot::new(e).decide(&json!("x"), &qs).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported);
        assert_eq!(
            err.to_string(),
            "classifier: style \"local\" cannot use box question \"dent\""
        );
    }

    #[tokio::test]
    async fn the_classifier_checks_and_refuses_what_it_cannot_honour() {
        let (_dir, e) = tiny("zs-classifier");
        let judge = zero_shot(e);
        assert_eq!(judge.model(), ZERO_SHOT_MODEL);
        let qs = Questions::from([("desk".to_string(), desk())]);
        let d = judge.evaluate(json!({"a": [1, 2]}), &qs).await.unwrap();
        assert!(d.choice("desk").is_ok());
        let req = EvalRequest::new(json!("x"), qs.clone()).with_model("jev-2");
        let err = judge
            .evaluate_request(EvalContext::new(), req)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported);
        assert_eq!(
            err.to_string(),
            "classifier: style \"local\" cannot use model \"jev-2\" (it answers with \
             \"local-minilm-zero-shot\")"
        );
        let err = judge
            .evaluate(json!("x"), &Questions::new())
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidQuestion);
        let batch = judge
            .evaluate_batch(vec![json!("late parcel"), json!("refund")], &qs)
            .await
            .unwrap();
        assert_eq!(batch.len(), 2);
    }

    #[test]
    fn runs_inline_outside_a_runtime() {
        let (_dir, e) = tiny("zs-inline");
        let local = ZeroShot::new(e);
        let qs = Questions::from([("desk".to_string(), desk())]);
        let fut = local.call(EvalContext::new(), EvalRequest::new(json!("x"), qs));
        let d = poll_once(fut).unwrap();
        assert!(d.choice("desk").is_ok());
    }

    /// Polls a future that never waits (it runs inline) to completion.
    fn poll_once<F: Future>(fut: F) -> F::Output {
        use std::task::{Context, Poll, Waker};
        let mut fut = std::pin::pin!(fut);
        let mut cx = Context::from_waker(Waker::noop());
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(v) => v,
            Poll::Pending => panic!("the evaluator waited outside a runtime"),
        }
    }
}
