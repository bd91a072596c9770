//! A tiny, randomly initialised BERT model directory (hidden size 32, 2 layers,
//! 2 heads, a 60-token WordPiece vocabulary), written by code: what this crate's
//! tests and examples run on when the real model is not there. Its embeddings
//! mean nothing; their shapes, norms, masking and truncation are the real ones.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use candle_core::{Device, Tensor};
use serde_json::{Map, Value, json};

use crate::error::{LocalError, msg};
use crate::pins::{CONFIG_FILE, TOKENIZER_FILE, WEIGHTS_FILE};

const HIDDEN: usize = 32;
const LAYERS: usize = 2;
const HEADS: usize = 2;
const INTERMEDIATE: usize = 64;
const POSITIONS: usize = 512;

const SPECIAL: [&str; 5] = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
const PIECES: [&str; 55] = [
    ",", ".", "!", "?", ":", ";", "'", "\"", "{", "}", "[", "]", "(", ")", "-", "/", "the", "a",
    "is", "my", "for", "not", "and", "of", "to", "hello", "world", "late", "parcel", "refund",
    "double", "charge", "money", "moved", "billing", "shipping", "account", "password", "reset",
    "message", "order", "customer", "wants", "back", "anything", "else", "spam", "harmless",
    "risky", "login", "text", "##s", "##ing", "##ed", "##ly",
];

/// Writes the tiny test model to `dir` (created if needed): `config.json`,
/// a `tokenizer.json` that pads and truncates to a fixed 128 tokens like the
/// real model's (the embedder overrides both), and `model.safetensors` with
/// weights drawn from a fixed seed, so every call writes the same model.
///
/// For tests and examples only: its embeddings carry no meaning.
///
/// ```
/// # fn main() -> Result<(), toolnexus_local::LocalError> {
/// let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-tiny-{}", std::process::id()));
/// toolnexus_local::tiny_model_for_tests(&dir)?;
/// let embedder = toolnexus_local::Embedder::load(&dir)?;
/// assert_eq!(embedder.dimension(), 32);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok(())
/// # }
/// ```
#[doc(hidden)]
pub fn tiny_model_for_tests(dir: &Path) -> Result<(), LocalError> {
    fs::create_dir_all(dir).map_err(|e| msg::write(dir, e))?;
    let vocab: Vec<&str> = SPECIAL.iter().chain(PIECES.iter()).copied().collect();
    let config = json!({
        "architectures": ["BertModel"],
        "attention_probs_dropout_prob": 0.1,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": HIDDEN,
        "initializer_range": 0.02,
        "intermediate_size": INTERMEDIATE,
        "layer_norm_eps": 1e-12,
        "max_position_embeddings": POSITIONS,
        "model_type": "bert",
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "type_vocab_size": 2,
        "use_cache": true,
        "vocab_size": vocab.len(),
    });
    write_json(&dir.join(CONFIG_FILE), &config)?;
    write_json(&dir.join(TOKENIZER_FILE), &tokenizer_json(&vocab))?;
    let path = dir.join(WEIGHTS_FILE);
    candle_core::safetensors::save(&weights(vocab.len()), &path).map_err(|e| msg::write(&path, e))
}

fn write_json(path: &Path, v: &Value) -> Result<(), LocalError> {
    let text = serde_json::to_vec_pretty(v).map_err(|e| msg::write(path, e))?;
    fs::write(path, text).map_err(|e| msg::write(path, e))
}

fn tokenizer_json(vocab: &[&str]) -> Value {
    let ids: Map<String, Value> = vocab
        .iter()
        .enumerate()
        .map(|(i, t)| (t.to_string(), json!(i)))
        .collect();
    let added: Vec<Value> = SPECIAL
        .iter()
        .enumerate()
        .map(|(i, t)| {
            json!({"id": i, "content": t, "single_word": false, "lstrip": false,
                   "rstrip": false, "normalized": false, "special": true})
        })
        .collect();
    let special = |name: &str| json!({"SpecialToken": {"id": name, "type_id": 0}});
    let sequence = |id: &str, type_id: u32| json!({"Sequence": {"id": id, "type_id": type_id}});
    json!({
        "version": "1.0",
        "truncation": {"max_length": 128, "strategy": "LongestFirst", "stride": 0},
        "padding": {
            "strategy": {"Fixed": 128}, "direction": "Right", "pad_to_multiple_of": null,
            "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"
        },
        "added_tokens": added,
        "normalizer": {
            "type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
            "strip_accents": null, "lowercase": true
        },
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [special("[CLS]"), sequence("A", 0), special("[SEP]")],
            "pair": [special("[CLS]"), sequence("A", 0), special("[SEP]"), sequence("B", 1),
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}
            }
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {
            "type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100, "vocab": ids
        }
    })
}

/// SplitMix64: a fixed, dependency-free stream of uniform numbers.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        // The top 24 bits as a fraction in [0, 1), then centred on 0.
        (z >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }

    fn tensor(&mut self, shape: &[usize], scale: f32) -> Tensor {
        let n = shape.iter().product();
        let data: Vec<f32> = (0..n).map(|_| self.next() * 2.0 * scale).collect();
        Tensor::from_vec(data, shape, &Device::Cpu).expect("the shape holds the data")
    }
}

fn constant(shape: &[usize], v: f32) -> Tensor {
    Tensor::full(v, shape, &Device::Cpu).expect("a constant tensor on the CPU")
}

fn weights(vocab: usize) -> HashMap<String, Tensor> {
    let mut rng = Rng(0x746f_6f6c_6e65_7875);
    let mut w = HashMap::new();
    let mut put = |name: String, t: Tensor| {
        w.insert(name, t);
    };
    put(
        "embeddings.word_embeddings.weight".into(),
        rng.tensor(&[vocab, HIDDEN], 0.5),
    );
    put(
        "embeddings.position_embeddings.weight".into(),
        rng.tensor(&[POSITIONS, HIDDEN], 0.1),
    );
    put(
        "embeddings.token_type_embeddings.weight".into(),
        rng.tensor(&[2, HIDDEN], 0.1),
    );
    put(
        "embeddings.LayerNorm.weight".into(),
        constant(&[HIDDEN], 1.0),
    );
    put("embeddings.LayerNorm.bias".into(), constant(&[HIDDEN], 0.0));
    for l in 0..LAYERS {
        let p = format!("encoder.layer.{l}");
        let linears = [
            ("attention.self.query", HIDDEN, HIDDEN),
            ("attention.self.key", HIDDEN, HIDDEN),
            ("attention.self.value", HIDDEN, HIDDEN),
            ("attention.output.dense", HIDDEN, HIDDEN),
            ("intermediate.dense", INTERMEDIATE, HIDDEN),
            ("output.dense", HIDDEN, INTERMEDIATE),
        ];
        for (name, out, inp) in linears {
            put(format!("{p}.{name}.weight"), rng.tensor(&[out, inp], 0.3));
            put(format!("{p}.{name}.bias"), rng.tensor(&[out], 0.05));
        }
        for norm in ["attention.output.LayerNorm", "output.LayerNorm"] {
            put(format!("{p}.{norm}.weight"), constant(&[HIDDEN], 1.0));
            put(format!("{p}.{norm}.bias"), constant(&[HIDDEN], 0.0));
        }
    }
    w
}

#[cfg(test)]
pub(crate) mod testing {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::embed::Embedder;

    /// A directory under the system temp dir, removed on drop.
    pub(crate) struct TempDir(PathBuf);

    impl TempDir {
        pub(crate) fn new(name: &str) -> TempDir {
            static N: AtomicUsize = AtomicUsize::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir().join(format!(
                "toolnexus-local-test-{}-{n}-{name}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("a temp dir");
            TempDir(dir)
        }

        pub(crate) fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// The tiny model written to a fresh directory, and loaded.
    pub(crate) fn tiny(name: &str) -> (TempDir, Embedder) {
        let dir = TempDir::new(name);
        super::tiny_model_for_tests(dir.path()).expect("the tiny model writes");
        let embedder = Embedder::load(dir.path()).expect("the tiny model loads");
        (dir, embedder)
    }
}
