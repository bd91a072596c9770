//! Unit tests of the weights file's map and remembered digest.

use std::collections::HashMap;
use std::fs;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use safetensors::SafeTensors;

use super::*;
use crate::embed::Embedder;
use crate::pins::{WEIGHTS_FILE, file_sha256};
use crate::tiny::testing::TempDir;
use crate::tiny_model_for_tests;

const OTHER: &str = "0000000000000000000000000000000000000000000000000000000000000abc";

fn model(name: &str) -> (TempDir, PathBuf) {
    let dir = TempDir::new(name);
    tiny_model_for_tests(dir.path()).expect("the tiny model writes");
    let weights = dir.path().join(WEIGHTS_FILE);
    (dir, weights)
}

fn stamp(path: &Path) -> Stamp {
    Stamp::of(&fs::metadata(path).unwrap()).expect("a modification time")
}

#[test]
fn the_map_holds_the_files_bytes() {
    let (_dir, weights) = model("map");
    let (bytes, stamp) = open(&weights).unwrap();
    assert_eq!(&*bytes, fs::read(&weights).unwrap().as_slice());
    assert_eq!(stamp.unwrap().size, fs::metadata(&weights).unwrap().len());
}

#[test]
fn a_first_load_remembers_the_digest_and_a_second_agrees() {
    let (dir, weights) = model("first");
    let real = file_sha256(&weights).unwrap();
    let first = Embedder::load(dir.path()).unwrap();
    assert_eq!(first.model_hash(), real);
    assert_eq!(remembered(&weights, &stamp(&weights)), Some(real.clone()));
    let second = Embedder::load(dir.path()).unwrap();
    assert_eq!(second.model_hash(), real);
    let v = |e: &Embedder| e.embed(&["the parcel is late"]).unwrap();
    assert_eq!(v(&first), v(&second));
}

#[test]
fn a_remembered_digest_spares_the_hash() {
    let (dir, weights) = model("spared");
    remember(&weights, &stamp(&weights), OTHER);
    // Only a load that trusts the record can report a digest the file does
    // not have.
    assert_eq!(Embedder::load(dir.path()).unwrap().model_hash(), OTHER);
}

#[test]
fn a_record_for_another_state_of_the_file_is_worked_out_again() {
    let (dir, weights) = model("stale");
    let real = file_sha256(&weights).unwrap();
    remember(&weights, &stamp(&weights), OTHER);
    let later = SystemTime::now() + Duration::from_secs(5);
    fs::File::options()
        .write(true)
        .open(&weights)
        .unwrap()
        .set_modified(later)
        .unwrap();
    assert_eq!(remembered(&weights, &stamp(&weights)), None);
    assert_eq!(Embedder::load(dir.path()).unwrap().model_hash(), real);
    // And the record now speaks for the file as it is.
    assert_eq!(remembered(&weights, &stamp(&weights)), Some(real));
}

#[test]
fn a_damaged_record_is_ignored() {
    let (dir, weights) = model("damaged");
    let real = file_sha256(&weights).unwrap();
    let s = stamp(&weights);
    for text in [
        String::new(),
        "not a record".to_string(),
        format!("sha256 {}\nsize {}\n", OTHER, s.size),
        format!("sha256 XYZ\nsize {}\nmtime_ns {}\n", s.size, s.mtime_ns),
        format!(
            "sha256 {OTHER}\nsize {}\nmtime_ns {}\n",
            s.size + 1,
            s.mtime_ns
        ),
    ] {
        fs::write(record_path(&weights), &text).unwrap();
        assert_eq!(remembered(&weights, &s), None, "{text:?}");
        assert_eq!(
            Embedder::load(dir.path()).unwrap().model_hash(),
            real,
            "{text:?}"
        );
    }
}

#[test]
fn the_record_sits_beside_the_weights() {
    assert_eq!(
        record_path(Path::new("/models/minilm/model.safetensors")),
        Path::new("/models/minilm/model.safetensors.sha256")
    );
}

// The prepared layout.

/// Embeddings of a few texts: what must not move, bit for bit.
fn vectors(e: &Embedder) -> Vec<Vec<f32>> {
    e.embed(&[
        "the parcel is late",
        "hello world",
        "refund my double charge, please!",
    ])
    .unwrap()
}

fn prepared_meta(weights: &Path) -> HashMap<String, String> {
    let bytes = fs::read(prepared::path(weights)).unwrap();
    let (_, meta) = SafeTensors::read_metadata(&bytes).unwrap();
    meta.metadata().clone().unwrap()
}

#[test]
fn a_load_prepares_the_layout_and_the_next_reads_it_in_place_with_the_same_results() {
    let (dir, weights) = model("prepares");
    let first = Embedder::load(dir.path()).unwrap();
    assert!(!first.reads_prepared_layout());
    let meta = prepared_meta(&weights);
    let s = stamp(&weights);
    assert_eq!(meta["format"], prepared::FORMAT);
    assert_eq!(meta["layout"], crate::bert::PREPARED_LAYOUT);
    assert_eq!(meta["weights_sha256"], first.model_hash());
    assert_eq!(meta["weights_size"], s.size.to_string());
    assert_eq!(meta["weights_mtime_ns"], s.mtime_ns.to_string());
    let second = Embedder::load(dir.path()).unwrap();
    assert!(second.reads_prepared_layout());
    assert_eq!(vectors(&first), vectors(&second));
}

/// A prepared file whose values are not the weights' (every matrix
/// doubled), under the metadata `meta` (by default the true one).
fn plant_wrong_values(weights: &Path, meta: Option<(&Stamp, &str)>) {
    let path = prepared::path(weights);
    let bytes = Arc::new(WeightBytes::Read(fs::read(&path).unwrap()));
    let true_meta = Tensors::parse(Arc::clone(&bytes))
        .unwrap()
        .metadata()
        .unwrap();
    let mut t = Tensors::parse(bytes).unwrap();
    let names: Vec<(String, Vec<usize>)> = t
        .entries
        .iter()
        .map(|(n, e)| (n.clone(), e.shape.clone()))
        .collect();
    let doubled: Vec<(String, Vec<usize>, Vec<f32>)> = names
        .into_iter()
        .map(|(n, shape)| {
            let v = t
                .take(&n, &shape)
                .unwrap()
                .values()
                .iter()
                .map(|v| v * 2.0)
                .collect();
            (n, shape, v)
        })
        .collect();
    let parts: Vec<prepared::Part<'_>> = doubled
        .iter()
        .map(|(n, s, v)| (n.clone(), s.clone(), v.as_slice()))
        .collect();
    let s = Stamp {
        size: true_meta["weights_size"].parse().unwrap(),
        mtime_ns: true_meta["weights_mtime_ns"].parse().unwrap(),
    };
    let (s, sha) = meta.unwrap_or((&s, &true_meta["weights_sha256"]));
    prepared::write(weights, crate::bert::PREPARED_LAYOUT, s, sha, &parts).unwrap();
}

#[test]
fn a_prepared_layout_for_the_weights_as_they_are_is_trusted() {
    let (dir, weights) = model("trusted");
    let truth = vectors(&Embedder::load(dir.path()).unwrap());
    plant_wrong_values(&weights, None);
    // Only a load that reads the prepared file can give other vectors.
    let e = Embedder::load(dir.path()).unwrap();
    assert!(e.reads_prepared_layout());
    assert_ne!(vectors(&e), truth);
}

#[test]
fn a_prepared_layout_for_another_state_of_the_weights_is_ignored_and_written_again() {
    let (dir, weights) = model("prepared-stale");
    let truth = vectors(&Embedder::load(dir.path()).unwrap());
    let real = file_sha256(&weights).unwrap();
    let s = stamp(&weights);
    let other_time = Stamp {
        mtime_ns: s.mtime_ns + 1,
        ..s.clone()
    };
    let other_size = Stamp {
        size: s.size + 4,
        ..s.clone()
    };
    for (why, meta) in [
        ("another digest", (&s, OTHER)),
        ("another time", (&other_time, real.as_str())),
        ("another size", (&other_size, real.as_str())),
    ] {
        plant_wrong_values(&weights, Some(meta));
        let e = Embedder::load(dir.path()).unwrap();
        assert!(!e.reads_prepared_layout(), "{why}");
        assert_eq!(vectors(&e), truth, "{why}");
        // Written again for the weights as they are, and read by the next load.
        assert_eq!(prepared_meta(&weights)["weights_sha256"], real, "{why}");
        let next = Embedder::load(dir.path()).unwrap();
        assert!(next.reads_prepared_layout(), "{why}");
        assert_eq!(vectors(&next), truth, "{why}");
    }
    // The weights touched since: their digest and layout are worked out again.
    let later = SystemTime::now() + Duration::from_secs(5);
    fs::File::options()
        .write(true)
        .open(&weights)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let e = Embedder::load(dir.path()).unwrap();
    assert!(!e.reads_prepared_layout());
    assert_eq!(vectors(&e), truth);
    assert_eq!(
        prepared_meta(&weights)["weights_mtime_ns"],
        stamp(&weights).mtime_ns.to_string()
    );
}

/// A way of damaging the prepared file.
type Damage<'a> = Box<dyn Fn() + 'a>;

#[test]
fn a_damaged_prepared_layout_is_ignored_and_written_again() {
    let (dir, weights) = model("prepared-damaged");
    let truth = vectors(&Embedder::load(dir.path()).unwrap());
    let path = prepared::path(&weights);
    let good = fs::read(&path).unwrap();
    let s = stamp(&weights);
    let sha = file_sha256(&weights).unwrap();
    let layout = crate::bert::PREPARED_LAYOUT;
    // A layout missing a layer's matrix, and one with a matrix of another shape.
    let v = vec![0f32; 32 * 32];
    let missing: Vec<prepared::Part<'_>> = vec![("layer.0.out.weight_t".into(), vec![32, 32], &v)];
    let mut shaped = Vec::new();
    {
        let mut t = Tensors::parse(Arc::new(WeightBytes::Read(good.clone()))).unwrap();
        let names: Vec<_> = t.entries.keys().cloned().collect();
        for n in names {
            let shape = t.entries[&n].shape.clone();
            shaped.push((
                n.clone(),
                shape.clone(),
                t.take(&n, &shape).unwrap().values().to_vec(),
            ));
        }
        let (_, shape, _) = shaped
            .iter_mut()
            .find(|(n, ..)| n == "layer.1.up.weight_t")
            .unwrap();
        shape.reverse();
    }
    let damaged: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("not safetensors", b"not a prepared layout".to_vec()),
        ("cut short", good[..good.len() - 100].to_vec()),
        ("header cut", good[..good.len().min(40)].to_vec()),
        ("a byte more", [good.as_slice(), &[0]].concat()),
    ];
    let mut cases: Vec<(&str, Damage<'_>)> = damaged
        .into_iter()
        .map(|(why, bytes)| {
            let path = path.clone();
            let f: Damage<'_> = Box::new(move || fs::write(&path, &bytes).unwrap());
            (why, f)
        })
        .collect();
    let w = weights.clone();
    let (s2, sha2) = (s.clone(), sha.clone());
    cases.push((
        "a matrix missing",
        Box::new(move || prepared::write(&w, layout, &s2, &sha2, &missing).unwrap()),
    ));
    let w = weights.clone();
    cases.push((
        "a matrix of another shape",
        Box::new(move || {
            let parts: Vec<prepared::Part<'_>> = shaped
                .iter()
                .map(|(n, s, v)| (n.clone(), s.clone(), v.as_slice()))
                .collect();
            prepared::write(&w, layout, &s, &sha, &parts).unwrap()
        }),
    ));
    for (why, damage) in cases {
        damage();
        let e = Embedder::load(dir.path()).unwrap();
        assert!(!e.reads_prepared_layout(), "{why}");
        assert_eq!(vectors(&e), truth, "{why}");
        assert_eq!(
            content(&fs::read(&path).unwrap()),
            content(&good),
            "{why}: written again"
        );
    }
}

/// What a prepared file says: its metadata, and each tensor's shape and values.
type Content = (HashMap<String, String>, Vec<(String, Vec<usize>, Vec<f32>)>);

fn content(bytes: &[u8]) -> Content {
    let mut t = Tensors::parse(Arc::new(WeightBytes::Read(bytes.to_vec()))).unwrap();
    let meta = t.metadata().unwrap();
    let mut names: Vec<(String, Vec<usize>)> = t
        .entries
        .iter()
        .map(|(n, e)| (n.clone(), e.shape.clone()))
        .collect();
    names.sort();
    let tensors = names
        .into_iter()
        .map(|(n, shape)| {
            let v = t.take(&n, &shape).unwrap().values().to_vec();
            (n, shape, v)
        })
        .collect();
    (meta, tensors)
}

#[test]
fn a_directory_that_keeps_no_prepared_layout_still_loads() {
    let (dir, weights) = model("prepared-unwritable");
    let truth = vectors(&Embedder::load(dir.path()).unwrap());
    // A directory where the file would go: no write can replace it.
    let path = prepared::path(&weights);
    fs::remove_file(&path).unwrap();
    fs::create_dir(&path).unwrap();
    fs::write(path.join("keep"), b"").unwrap();
    for _ in 0..2 {
        let e = Embedder::load(dir.path()).unwrap();
        assert!(!e.reads_prepared_layout());
        assert_eq!(vectors(&e), truth);
    }
    let leftovers: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn the_prepared_layout_sits_beside_the_weights() {
    assert_eq!(
        prepared::path(Path::new("/models/minilm/model.safetensors")),
        Path::new("/models/minilm/model.safetensors.prepared")
    );
}

/// A safetensors file of `tensors` whose data starts `shift` bytes past an
/// 8-byte boundary (the header padded with spaces), so that f32 values sit
/// off a 4-byte boundary when `shift` is not a multiple of 4.
fn safetensors_bytes(tensors: &[(&str, &str, Vec<usize>, Vec<u8>)], shift: usize) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    let mut at = 0;
    for (name, dtype, shape, data) in tensors {
        header.insert(
            name.to_string(),
            serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [at, at + data.len()]}),
        );
        at += data.len();
    }
    let mut text = serde_json::Value::Object(header).to_string();
    while (8 + text.len()) % 8 != shift {
        text.push(' ');
    }
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(text.as_bytes());
    for (.., data) in tensors {
        out.extend_from_slice(data);
    }
    out
}

#[test]
fn f32_at_a_4_byte_boundary_is_read_in_place_and_anything_else_is_converted() {
    let values = [1.5f32, -2.25, 3.0, 0.125];
    let f32s: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let halves: Vec<u8> = values
        .iter()
        .flat_map(|v| half_bits(*v).to_le_bytes())
        .collect();
    let tensors = [
        ("a", "F32", vec![2, 2], f32s.clone()),
        ("h", "F16", vec![4], halves),
    ];
    for shift in [0, 2] {
        let mut t = Tensors::parse(Arc::new(WeightBytes::Read(safetensors_bytes(
            &tensors, shift,
        ))))
        .unwrap();
        let a = t.take("a", &[2, 2]).unwrap();
        assert_eq!(a.values(), values, "shift {shift}");
        assert_eq!(a.is_in_place(), shift == 0, "shift {shift}");
        let h = t.take("h", &[4]).unwrap();
        assert_eq!(h.values(), values, "shift {shift}");
        assert!(!h.is_in_place());
        // Each tensor is handed out once, and its shape is checked.
        let gone = t.take("a", &[2, 2]).err().unwrap().to_string();
        assert!(gone.contains("cannot find tensor a"), "{gone}");
    }
    let mut t =
        Tensors::parse(Arc::new(WeightBytes::Read(safetensors_bytes(&tensors, 0)))).unwrap();
    let e = t.take("a", &[4]).err().unwrap().to_string();
    assert!(
        e.contains("shape mismatch for a, expected [4], got [2, 2]"),
        "{e}"
    );
}

/// `v` as IEEE half-precision bits (exact for the few values used here).
fn half_bits(v: f32) -> u16 {
    let b = v.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32 - 127 + 15;
    let mant = ((b >> 13) & 0x3ff) as u16;
    sign | ((exp as u16) << 10) | mant
}
