//! Unit tests of the ModernBERT encoder.

use super::*;

fn write(dir: &Path, v: Value) -> std::path::PathBuf {
    let p = dir.join("config.json");
    fs::write(&p, v.to_string()).unwrap();
    p
}

fn base() -> Value {
    serde_json::json!({
        "model_type": "modernbert", "vocab_size": 10, "hidden_size": 8,
        "intermediate_size": 12, "num_hidden_layers": 4, "num_attention_heads": 2,
    })
}

fn tempdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("toolnexus-mb-{name}-{}", std::process::id()));
    fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn attention_in_blocks_matches_attention_whole() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/decisiontune");
    let c = EncoderConfig::read(&dir.join("config.json")).unwrap();
    let mut map = read_safetensors(&dir.join("model.safetensors"), |_| false).unwrap();
    let model = ModernBert::load(&mut map, "", &c, false).unwrap();
    let a: Vec<u32> = (0..70).map(|i| (i * 7 % 490) as u32).collect();
    let b: Vec<u32> = (0..41).map(|i| (i * 13 % 490) as u32).collect();
    let whole = model.forward_in_blocks(&[&a, &b], 512, 4096).unwrap();
    // Queries in blocks of 16, and each row in its own group.
    let blocks = model.forward_in_blocks(&[&a, &b], 16, 50).unwrap();
    // A row alone is the same row as beside another.
    let alone = model.forward_in_blocks(&[&b], 512, 4096).unwrap();
    let gap = |x: &[f32], y: &[f32]| {
        assert_eq!(x.len(), y.len());
        x.iter()
            .zip(y)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max)
    };
    assert!(gap(&whole.data, &blocks.data) < 1e-5);
    assert!(gap(&whole.data[70 * c.hidden_size..], &alone.data) < 1e-5);
}

/// A long text of words, numbers, punctuation, runs of spaces and
/// newlines, and non-ASCII letters.
fn long_text(bytes: usize) -> String {
    let words = [
        "refund",
        "  twice",
        "Zürich",
        "2026-12-05",
        "naïve",
        "—",
        "\n\n",
        "order#4711",
        "it's",
        "🙂",
        "\t",
        "ok.",
        "déjà",
        "vu",
        "x",
    ];
    let mut s = String::new();
    let mut i = 0usize;
    while s.len() < bytes {
        s.push_str(words[i * 7 % words.len()]);
        s.push(if i.is_multiple_of(5) { '\n' } else { ' ' });
        i += 1;
    }
    s
}

#[test]
fn a_bounded_part_holds_the_whole_texts_first_and_last_tokens() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/laya/tokenizer");
    let tok = read_tokenizer(&dir.join("tokenizer.json")).unwrap();
    let text = long_text(300_000);
    let full = token_ids(&tok, &text).unwrap();
    for need in [1, 50, 512] {
        let (head, whole) = token_ids_bounded(&tok, &text, need, false).unwrap();
        assert!(!whole && head.len() >= need && head.len() < full.len() / 10);
        assert_eq!(head[..need], full[..need], "first {need}");
        let (tail, whole) = token_ids_bounded(&tok, &text, need, true).unwrap();
        assert!(!whole && tail.len() >= need && tail.len() < full.len() / 10);
        assert_eq!(
            tail[tail.len() - need..],
            full[full.len() - need..],
            "last {need}"
        );
    }
    // A short text, or one with nowhere to cut, is tokenized whole.
    let (ids, whole) = token_ids_bounded(&tok, "a short state", 512, false).unwrap();
    assert!(whole && ids == token_ids(&tok, "a short state").unwrap());
    let solid = "x".repeat(20_000);
    let (ids, whole) = token_ids_bounded(&tok, &solid, 10, false).unwrap();
    assert!(whole && ids == token_ids(&tok, &solid).unwrap());
}

#[test]
fn both_config_spellings_read_the_same() {
    let dir = tempdir("spellings");
    let mut v4 = base();
    v4["norm_eps"] = 1e-6.into();
    v4["global_attn_every_n_layers"] = 2.into();
    v4["global_rope_theta"] = 80_000.0.into();
    v4["local_rope_theta"] = 5_000.0.into();
    v4["local_attention"] = 64.into();
    let a = EncoderConfig::read(&write(&dir, v4)).unwrap();
    let mut v5 = base();
    v5["layer_norm_eps"] = 1e-6.into();
    v5["layer_types"] = serde_json::json!([
        "full_attention",
        "sliding_attention",
        "full_attention",
        "sliding_attention"
    ]);
    v5["rope_parameters"] = serde_json::json!({
        "full_attention": {"rope_type": "default", "rope_theta": 80_000.0},
        "sliding_attention": {"rope_type": "default", "rope_theta": 5_000.0},
    });
    v5["local_attention"] = 64.into();
    let b = EncoderConfig::read(&write(&dir, v5)).unwrap();
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    assert_eq!(a.layers[1], Attention::Local);
    assert_eq!((a.window, a.norm_eps), (32, 1e-6));
    fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_unknown_layout_is_refused_naming_the_file_and_field() {
    let dir = tempdir("refuse");
    let cases = [
        (
            "layer_types",
            serde_json::json!(["full_attention", "chunked", "x", "y"]),
        ),
        (
            "rope_scaling",
            serde_json::json!({"type": "linear", "factor": 2.0}),
        ),
        ("hidden_activation", serde_json::json!("silu")),
        (
            "rope_parameters",
            serde_json::json!({"full_attention": {"rope_type": "yarn"}}),
        ),
    ];
    for (field, value) in cases {
        let mut v = base();
        v[field] = value;
        let path = write(&dir, v);
        let e = EncoderConfig::read(&path).unwrap_err();
        assert!(e.is_invalid_file(), "{e}");
        assert_eq!(e.path(), Some(path.as_path()));
        assert!(e.to_string().contains(&format!("field {field:?}")), "{e}");
    }
    fs::remove_dir_all(&dir).ok();
}

/// A bf16 load keeps the file's f16 encoder weights as stored until each
/// matrix is packed (so it never holds the model in f32), and the encoder it
/// builds is the one a load through f32 builds, bit for bit.
#[test]
fn a_bf16_load_from_the_stored_halves_is_the_load_through_f32() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/laya");
    let c = EncoderConfig::read(&dir.join("encoder/config.json")).unwrap();
    let weights = dir.join("model.safetensors");
    let mut kept = read_safetensors(&weights, |n| n.starts_with("encoder.")).unwrap();
    let mut upcast = read_safetensors(&weights, |_| false).unwrap();
    for (name, t) in &kept {
        let want = match name.starts_with("encoder.") {
            true => DType::F16,
            false => DType::F32,
        };
        assert_eq!(t.dtype(), want, "{name}");
    }
    let a = ModernBert::load(&mut kept, "encoder.", &c, true).unwrap();
    let b = ModernBert::load(&mut upcast, "encoder.", &c, true).unwrap();
    let row: Vec<u32> = (0..37).map(|i| (i * 11 % 400) as u32).collect();
    let (x, y) = (
        a.forward_in_blocks(&[&row], 512, 4096).unwrap(),
        b.forward_in_blocks(&[&row], 512, 4096).unwrap(),
    );
    assert_eq!(x.data, y.data);
}
