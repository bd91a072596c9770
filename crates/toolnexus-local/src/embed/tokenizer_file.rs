//! A faster read of the usual `tokenizer.json`: a WordPiece model whose
//! added tokens are all in its vocabulary (every BERT checkpoint's).
//!
//! `Tokenizer::from_bytes` reads the model's vocabulary three times over (a
//! buffer of the whole model, a JSON value, then the vocabulary), which for
//! 30,522 tokens costs more than a short text's forward pass. Here the
//! vocabulary is read once, straight into the map WordPiece keeps; the rest
//! of the file, with the vocabulary cut down to the added tokens (so that
//! each gets the id it has in the full vocabulary), goes through the library's
//! own reader, and the full model then takes the place of the cut-down one.
//! The tokenizer is the one `from_bytes` gives: same model, same added tokens
//! with the same ids, same normaliser, pre-tokeniser, post-processor,
//! decoder, truncation and padding. Anything this read does not know (another
//! model, a field it has no use for, an added token outside the vocabulary)
//! is left to `from_bytes`.

use std::str::FromStr;

use ahash::AHashMap;
use serde::Deserialize;
use serde_json::{Map, Value};
use tokenizers::Tokenizer;
use tokenizers::models::wordpiece::WordPiece;

use crate::text::longest_token;

/// The WordPiece model section, every field required and no other allowed.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WordPieceModel {
    #[serde(rename = "type")]
    kind: String,
    unk_token: String,
    continuing_subword_prefix: String,
    max_input_chars_per_word: usize,
    /// The map WordPiece keeps, read as the library reads it.
    #[serde(deserialize_with = "presized")]
    vocab: AHashMap<String, u32>,
}

/// Room made up front for a vocabulary: a JSON map gives no length, and a
/// map grown entry by entry to BERT's 30,522 tokens is rehashed a dozen times.
const VOCAB_ROOM: usize = 32_768;

/// A vocabulary read into a map with [`VOCAB_ROOM`] made up front; entries
/// go in as the library puts them (a token listed twice keeps its last id).
fn presized<'de, D: serde::Deserializer<'de>>(d: D) -> Result<AHashMap<String, u32>, D::Error> {
    struct Vocab;
    impl<'de> serde::de::Visitor<'de> for Vocab {
        type Value = AHashMap<String, u32>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a map of tokens to ids")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut vocab = AHashMap::with_capacity(map.size_hint().unwrap_or(VOCAB_ROOM));
            while let Some((token, id)) = map.next_entry::<String, u32>()? {
                vocab.insert(token, id);
            }
            Ok(vocab)
        }
    }
    d.deserialize_map(Vocab)
}

/// The file's sections, the model's read in full and the others kept as
/// they are for the library's reader. A section the file lacks stays out.
#[derive(Deserialize)]
struct File {
    model: WordPieceModel,
    version: Option<Value>,
    truncation: Option<Value>,
    padding: Option<Value>,
    added_tokens: Option<Value>,
    normalizer: Option<Value>,
    pre_tokenizer: Option<Value>,
    post_processor: Option<Value>,
    decoder: Option<Value>,
}

/// One added token as the file lists it: only its text is read here.
#[derive(Deserialize)]
struct Added {
    content: String,
}

/// The tokenizer of `bytes` and the longest token of its vocabulary (as
/// [`longest_token`] counts it), when the file is one this read knows;
/// `None` leaves it to `Tokenizer::from_bytes`.
pub(super) fn read(bytes: &[u8]) -> Option<(Tokenizer, usize)> {
    let file: File = serde_json::from_slice(bytes).ok()?;
    let m = file.model;
    if m.kind != "WordPiece" {
        return None;
    }
    let added: Vec<Added> = match &file.added_tokens {
        Some(v) => Vec::<Added>::deserialize(v).ok()?,
        None => Vec::new(),
    };
    let mut few = Map::new();
    for a in &added {
        let id = *m.vocab.get(&a.content)?;
        few.insert(a.content.clone(), Value::from(id));
    }
    let mut rest = Map::new();
    let sections = [
        ("version", file.version),
        ("truncation", file.truncation),
        ("padding", file.padding),
        ("added_tokens", file.added_tokens),
        ("normalizer", file.normalizer),
        ("pre_tokenizer", file.pre_tokenizer),
        ("post_processor", file.post_processor),
        ("decoder", file.decoder),
    ];
    for (key, v) in sections {
        if let Some(v) = v {
            rest.insert(key.to_string(), v);
        }
    }
    rest.insert(
        "model".to_string(),
        serde_json::json!({
            "type": "WordPiece",
            "unk_token": m.unk_token,
            "continuing_subword_prefix": m.continuing_subword_prefix,
            "max_input_chars_per_word": m.max_input_chars_per_word,
            "vocab": few,
        }),
    );
    let mut tokenizer = Tokenizer::from_str(&Value::Object(rest).to_string()).ok()?;
    let longest = longest_token(m.vocab.keys().map(String::as_str));
    let model = WordPiece::builder()
        .vocab(m.vocab)
        .unk_token(m.unk_token)
        .continuing_subword_prefix(m.continuing_subword_prefix)
        .max_input_chars_per_word(m.max_input_chars_per_word)
        .build()
        .ok()?;
    tokenizer.with_model(model);
    Some((tokenizer, longest))
}
