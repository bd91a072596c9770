//! Unit tests of the embedder.

use std::path::Path;

use sha2::{Digest, Sha256};
use toolnexus::classifier::EnvSource;

use super::*;
use crate::pins::hex;
use crate::text::shorten_long_runs;
use crate::tiny::testing::{TempDir, tiny};
use crate::tiny_model_for_tests;

fn max_gap(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

#[test]
fn shapes_and_unit_norms() {
    let (_dir, e) = tiny("shapes");
    let texts = [
        "hello",
        "the parcel is late",
        "",
        "refund my double charge, please!",
    ];
    let v = e.embed(&texts).unwrap();
    assert_eq!(v.len(), texts.len());
    for (t, x) in texts.iter().zip(&v) {
        assert_eq!(x.len(), 32, "{t:?}");
        assert!(x.iter().all(|f| f.is_finite()), "{t:?}");
        assert!((norm(x) - 1.0).abs() < 1e-5, "{t:?}: norm {}", norm(x));
    }
    assert_ne!(v[0], v[1]);
    assert!(e.embed::<&str>(&[]).unwrap().is_empty());
    let owned = vec!["hello".to_string()];
    assert_eq!(e.embed(&owned).unwrap(), e.embed(&["hello"]).unwrap());
}

#[test]
fn padding_does_not_change_an_embedding() {
    let (_dir, e) = tiny("padding");
    let short = "late parcel";
    let long = "the refund for the double charge of my order is late and not moved, \
                the customer wants money back for the parcel";
    let alone = e.embed(&[short]).unwrap();
    let batched = e.embed(&[long, short, "hello"]).unwrap();
    assert!(
        max_gap(&alone[0], &batched[1]) < 1e-5,
        "{}",
        max_gap(&alone[0], &batched[1])
    );
    let long_alone = e.embed(&[long]).unwrap();
    assert!(max_gap(&long_alone[0], &batched[0]) < 1e-5);
}

#[test]
fn many_texts_keep_their_order_across_groups() {
    let (_dir, e) = tiny("groups");
    // More texts than one group, of many lengths, shuffled by length.
    let texts: Vec<String> = (0..(2 * GROUP + 5))
        .map(|i| "hello world ".repeat((i * 7) % 13 + 1))
        .collect();
    let all = e.embed_counted(&texts).unwrap();
    for (i, t) in texts.iter().enumerate() {
        let one = e.embed_counted(&[t]).unwrap();
        assert_eq!(one.tokens[0], all.tokens[i], "text {i}");
        assert!(max_gap(&one.vectors[0], &all.vectors[i]) < 1e-5, "text {i}");
    }
}

/// The encoder keeps its working buffers from pass to pass: what a larger
/// pass left in them never reaches a later, smaller one.
#[test]
fn a_pass_after_a_larger_one_gives_the_bits_of_a_fresh_model() {
    let texts: Vec<String> = (0..GROUP)
        .map(|i| "the refund for my late parcel ".repeat(i % 5 + 1))
        .collect();
    let small = ["late parcel", "hello"];
    let (_used_dir, used) = tiny("kept-buffers");
    used.embed(&texts).unwrap();
    let after = used.embed(&small).unwrap();
    let (_fresh_dir, fresh) = tiny("fresh-buffers");
    let first = fresh.embed(&small).unwrap();
    let bits = |v: &[Vec<f32>]| -> Vec<u32> { v.iter().flatten().map(|x| x.to_bits()).collect() };
    assert_eq!(bits(&after), bits(&first));
}

#[test]
fn the_shipped_fixed_padding_and_truncation_are_overridden() {
    let (_dir, e) = tiny("override");
    // The tiny tokenizer.json pads and truncates to 128, as the real one does.
    assert_eq!(e.token_ids("hello world").unwrap(), [2, 30, 31, 3]);
    assert_eq!(e.embed_counted(&["hello world"]).unwrap().tokens, [4]);
    assert_eq!(e.embed_counted(&[""]).unwrap().tokens, [2]);
    let long = "hello ".repeat(200);
    assert_eq!(e.token_ids(&long).unwrap().len(), 202);
}

#[test]
fn texts_are_truncated_at_256_tokens() {
    let (_dir, e) = tiny("truncation");
    assert_eq!(e.max_tokens(), 256);
    let words = |n: usize| vec!["hello"; n].join(" ");
    let huge = words(5000);
    let ids = e.token_ids(&huge).unwrap();
    assert_eq!(ids.len(), 256);
    assert_eq!((ids[0], ids[255]), (2, 3), "[CLS] … [SEP] survive the cut");
    // 254 words fill the 256 tokens: whatever follows is cut off.
    let a = format!("{} refund money", words(254));
    let b = format!("{} parcel late world", words(254));
    let v = e.embed_counted(&[a.as_str(), b.as_str()]).unwrap();
    assert_eq!(v.tokens, [256, 256]);
    assert!(max_gap(&v.vectors[0], &v.vectors[1]) < 1e-6);
    // One word earlier, the tails differ.
    let a = format!("{} refund", words(253));
    let b = format!("{} parcel", words(253));
    let v = e.embed(&[a.as_str(), b.as_str()]).unwrap();
    assert!(max_gap(&v[0], &v[1]) > 1e-4);
}

/// What the model read before texts were cut: the whole text tokenised,
/// then truncated.
fn uncut_ids(e: &Embedder, text: &str) -> Vec<u32> {
    e.inner
        .text
        .tokenizer()
        .encode_fast(text, true)
        .unwrap()
        .get_ids()
        .to_vec()
}

#[test]
fn a_long_text_is_cut_before_tokenization_and_reads_the_same() {
    let (_dir, e) = tiny("cut");
    // The tiny vocabulary's longest token is 8 bytes: a 2,304-byte window.
    assert_eq!(e.first_window(), 256 * 9);
    let words = |w: &str, n: usize| format!("{w} ").repeat(n);
    let mut texts = vec![
        words("hello world", 100_000), // 1.2 MB
        format!("{}{}", words("shipping", 200), words("refund", 1_000)),
        format!("{}{}", words("shipping", 254), words("refund", 1_000)),
        // Whitespace and characters the normaliser drops cover no tokens.
        format!("hello{}world {}", " ".repeat(100_000), words("late", 500)),
        format!(
            "hello{}world {}",
            "\u{200b}".repeat(30_000),
            words("late", 500)
        ),
        format!("{}{}", "\t\n ".repeat(5_000), words("parcel", 400)),
        // One word past WordPiece's 100 characters is one [UNK].
        format!("{} {}", "x".repeat(300_000), words("money", 400)),
        words("héllo, wörld! 日本 refund-ing", 2_000),
        words("spam", 3),
        String::new(),
    ];
    // An added token straddling every possible cut near the window's end.
    for k in 0..24 {
        texts.push(format!(
            "{}{}[MASK]{}",
            words("shipping", 254),
            "a".repeat(k),
            words("refund", 300)
        ));
    }
    for (i, text) in texts.iter().enumerate() {
        let want = uncut_ids(&e, text);
        assert_eq!(e.token_ids(text).unwrap(), want, "text {i}");
        let read = e.read_part(text).unwrap();
        assert!(text.starts_with(read));
        assert_eq!(uncut_ids(&e, read), want, "text {i}");
        assert_eq!(
            e.embed_counted(&[text]).unwrap().tokens,
            [want.len()],
            "text {i}"
        );
    }
}

#[test]
fn long_runs_of_letters_and_digits_are_shortened_and_nothing_else() {
    let run = "a".repeat(300);
    assert!(matches!(
        shorten_long_runs("abc def", 101),
        Cow::Borrowed(_)
    ));
    assert!(matches!(
        shorten_long_runs(&"a".repeat(101), 101),
        Cow::Borrowed(_)
    ));
    let text = format!("x{run}-y {run}");
    let got = shorten_long_runs(&text, 101);
    assert_eq!(got, format!("x{}-y {}", &run[..100], &run[..101]));
    // Multi-byte text around a run is kept whole.
    let text = format!("é{run}é");
    let got = shorten_long_runs(&text, 101);
    assert_eq!(got, format!("é{}é", &run[..101]));
}

#[test]
fn a_shortened_run_reads_as_the_whole_one_does() {
    let (_dir, e) = tiny("long-words");
    assert_eq!(e.long_words(), Some(101));
    let hex = "0123456789abcdef".repeat(400);
    let cases = [
        format!("the parcel {hex} is late"),
        hex.clone(),
        format!("refund {}", hex.to_uppercase()),
        // A control character the normaliser drops joins two runs.
        format!("late {}\u{0}{} parcel", &hex[..150], &hex[..150]),
        format!("é{hex}é parcel"),
        format!("[MASK]{hex}[MASK] refund"),
        format!("{} is late", "a".repeat(101)),
        format!("{} is late", "a".repeat(100)),
    ];
    for text in &cases {
        let whole = e
            .inner
            .text
            .tokenizer()
            .encode_fast(text.as_str(), true)
            .unwrap()
            .get_ids()
            .to_vec();
        assert_eq!(e.token_ids(text).unwrap(), whole, "{text:.60}");
        assert_eq!(
            e.embed(&[text.as_str()]).unwrap(),
            e.embed(&[shorten_long_runs(text, 101).as_ref()]).unwrap()
        );
    }
}

#[test]
fn a_multi_megabyte_hex_string_is_scanned_not_tokenised() {
    let (_dir, e) = tiny("hex-blob");
    let blob = format!(
        "echo {} | xxd -r -p > build/blob.bin",
        "0f".repeat(2_500_000)
    );
    let v = e.embed_counted(&[blob.as_str()]).unwrap();
    let largest = e.largest_input();
    assert!(largest <= e.first_window(), "tokenised {largest} bytes");
    let short = format!("echo {} | xxd -r -p > build/blob.bin", "0f".repeat(100));
    assert_eq!(v, e.embed_counted(&[short.as_str()]).unwrap());
}

#[test]
fn a_50_mb_text_tokenizes_a_few_kilobytes() {
    let (_dir, e) = tiny("cut-bounded");
    let huge = "the parcel is late and my refund is not moved ".repeat(1_100_000);
    assert!(huge.len() > 50_000_000);
    let small = "the parcel is late and my refund is not moved ".repeat(220);
    let v = e.embed_counted(&[huge.as_str()]).unwrap();
    let largest = e.largest_input();
    assert!(largest <= e.first_window(), "tokenised {largest} bytes");
    assert_eq!(v.tokens, [256]);
    assert_eq!(v, e.embed_counted(&[small.as_str()]).unwrap());
}

#[test]
fn the_model_hash_is_the_weights_sha256() {
    let (dir, e) = tiny("hash");
    let bytes = std::fs::read(dir.path().join(WEIGHTS_FILE)).unwrap();
    assert_eq!(e.model_hash(), hex(&Sha256::digest(&bytes)));
    assert_eq!(e.model_hash().len(), 64);
    // The tiny model is the same model every time it is written.
    let (_again, e2) = tiny("hash-again");
    assert_eq!(e.model_hash(), e2.model_hash());
    assert_eq!(e.embed(&["hello"]).unwrap(), e2.embed(&["hello"]).unwrap());
    assert!(format!("{e:?}").contains(e.model_hash()));
}

#[test]
fn clones_share_the_model_across_threads() {
    let (_dir, e) = tiny("threads");
    let want = e.embed(&["late parcel"]).unwrap();
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let e = e.clone();
            std::thread::spawn(move || e.embed(&["late parcel"]).unwrap())
        })
        .collect();
    for h in handles {
        assert!(max_gap(&h.join().unwrap()[0], &want[0]) < 1e-6);
    }
}

fn shown(p: &Path) -> String {
    format!("{:?}", p.display().to_string())
}

#[test]
fn a_missing_file_is_named() {
    for file in [CONFIG_FILE, TOKENIZER_FILE, WEIGHTS_FILE] {
        let dir = TempDir::new("missing");
        tiny_model_for_tests(dir.path()).unwrap();
        let path = dir.path().join(file);
        std::fs::remove_file(&path).unwrap();
        let err = Embedder::load(dir.path()).unwrap_err();
        assert!(err.is_missing_file(), "{file}: {err}");
        assert_eq!(err.path(), Some(path.as_path()));
        assert_eq!(
            err.to_string(),
            format!(
                "local: model file {} not found (get the model with `toolnexus model fetch \
                 --model-dir {}`, or point TOOLNEXUS_MODEL_DIR at a directory that has it)",
                shown(&path),
                dir.path().display()
            )
        );
    }
    let nowhere = std::env::temp_dir().join("toolnexus-local-test-nowhere/x");
    let err = Embedder::load(&nowhere).unwrap_err();
    assert_eq!(err.path(), Some(nowhere.join(CONFIG_FILE).as_path()));
}

/// Writes the tiny model, replaces `file` with `contents`, and loads it.
fn load_with(file: &str, contents: &[u8]) -> (TempDir, LocalError) {
    let dir = TempDir::new("corrupt");
    tiny_model_for_tests(dir.path()).unwrap();
    std::fs::write(dir.path().join(file), contents).unwrap();
    let err = Embedder::load(dir.path()).unwrap_err();
    assert!(!err.to_string().contains('\n'), "one line: {err}");
    (dir, err)
}

#[test]
fn a_corrupt_file_is_named_with_what_is_wrong() {
    let config = |dir: &TempDir| shown(&dir.path().join(CONFIG_FILE));
    let (dir, err) = load_with(CONFIG_FILE, b"{");
    assert!(err.is_invalid_file());
    assert_eq!(err.path(), Some(dir.path().join(CONFIG_FILE).as_path()));
    assert_eq!(
        err.to_string(),
        format!(
            "local: {} is not a BERT config.json: EOF while parsing an object at line 1 column 1",
            config(&dir)
        )
    );
    let (dir, err) = load_with(CONFIG_FILE, br#"{"hidden_size": 32}"#);
    assert!(
        err.to_string().starts_with(&format!(
            "local: {} is not a BERT config.json: missing field",
            config(&dir)
        )),
        "{err}"
    );
    let cfg: serde_json::Value = {
        let dir = TempDir::new("cfg-src");
        tiny_model_for_tests(dir.path()).unwrap();
        serde_json::from_slice(&std::fs::read(dir.path().join(CONFIG_FILE)).unwrap()).unwrap()
    };
    let with = |key: &str, v: serde_json::Value| {
        let mut c = cfg.clone();
        c[key] = v;
        serde_json::to_vec(&c).unwrap()
    };
    let (dir, err) = load_with(CONFIG_FILE, &with("num_attention_heads", 3.into()));
    assert_eq!(
        err.to_string(),
        format!(
            "local: {} is not a BERT config.json: hidden_size 32 is not a multiple of num_attention_heads 3",
            config(&dir)
        )
    );
    let (_, err) = load_with(CONFIG_FILE, &with("num_hidden_layers", 0.into()));
    assert!(err.to_string().ends_with("num_hidden_layers is 0"), "{err}");
    let (_, err) = load_with(CONFIG_FILE, &with("hidden_act", "swish".into()));
    assert!(
        err.to_string()
            .ends_with("hidden_act \"swish\" is not supported (only \"gelu\")"),
        "{err}"
    );

    // Config and weights disagree.
    let (dir, err) = load_with(CONFIG_FILE, &with("intermediate_size", 48.into()));
    assert!(err.is_invalid_file());
    let weights = shown(&dir.path().join(WEIGHTS_FILE));
    assert_eq!(err.path(), Some(dir.path().join(WEIGHTS_FILE).as_path()));
    assert!(
        err.to_string()
            .starts_with(&format!("local: {weights} does not fit its config.json: ")),
        "{err}"
    );
    // A vocabulary larger than the embedding table.
    let (dir, err) = load_with(CONFIG_FILE, &with("vocab_size", 10.into()));
    assert_eq!(err.path(), Some(dir.path().join(TOKENIZER_FILE).as_path()));
    assert_eq!(
        err.to_string(),
        format!(
            "local: {} is not a usable tokenizer.json: it has 60 tokens but config.json's vocab_size is 10",
            shown(&dir.path().join(TOKENIZER_FILE))
        )
    );

    let (dir, err) = load_with(TOKENIZER_FILE, b"{\"version\": \"1.0\"}");
    assert!(err.is_invalid_file());
    assert_eq!(err.path(), Some(dir.path().join(TOKENIZER_FILE).as_path()));
    assert!(
        err.to_string().starts_with(&format!(
            "local: {} is not a usable tokenizer.json: ",
            shown(&dir.path().join(TOKENIZER_FILE))
        )),
        "{err}"
    );
    assert!(std::error::Error::source(&err).is_some());

    let (dir, err) = load_with(WEIGHTS_FILE, b"not a safetensors file at all");
    assert!(err.is_invalid_file());
    assert_eq!(err.path(), Some(dir.path().join(WEIGHTS_FILE).as_path()));
    assert!(
        err.to_string().starts_with(&format!(
            "local: {} is not a safetensors file: ",
            shown(&dir.path().join(WEIGHTS_FILE))
        )),
        "{err}"
    );
    assert!(std::error::Error::source(&err).is_some());
}

#[test]
fn the_model_dir_is_explicit_then_the_variable_then_home() {
    let env = EnvSource::from_map([("HOME", "/home/ada"), (MODEL_DIR_ENV, "")]);
    assert_eq!(
        model_dir(None, &env).unwrap(),
        Path::new("/home/ada/.cache/toolnexus/models/all-minilm-l6-v2"),
        "an empty variable is unset"
    );
    let env = EnvSource::from_map([("HOME", "/home/ada"), (MODEL_DIR_ENV, "/m")]);
    assert_eq!(model_dir(None, &env).unwrap(), Path::new("/m"));
    assert_eq!(
        model_dir(Some(Path::new("/x")), &env).unwrap(),
        Path::new("/x")
    );
    let err = model_dir(None, &EnvSource::from_map([("HOME", "")])).unwrap_err();
    assert!(!err.is_missing_file() && err.path().is_none());
    assert_eq!(
        err.to_string(),
        "local: no model directory: pass one, set TOOLNEXUS_MODEL_DIR, or set HOME for \
         the default ~/.cache/toolnexus/models/all-minilm-l6-v2"
    );
}

#[test]
fn the_probe_is_made_only_for_a_text_long_enough_to_need_it() {
    let (_dir, e) = tiny("probe-lazy");
    let short = e.embed(&["the parcel is late"]).unwrap();
    assert!(!e.inner.text.has_probe());
    let long = "hello ".repeat(2000);
    let counted = e.embed_counted(&[long.as_str()]).unwrap();
    assert!(e.inner.text.has_probe());
    assert_eq!(counted.tokens, [256]);
    // Made once, and what it reads does not depend on when it was made.
    assert_eq!(e.embed(&["the parcel is late"]).unwrap(), short);
    let (_other_dir, fresh) = tiny("probe-eager");
    assert_eq!(fresh.embed_counted(&[long.as_str()]).unwrap(), counted);
}
