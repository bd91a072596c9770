//! Unit tests of the weights file's map and remembered digest.

use std::fs;
use std::time::{Duration, SystemTime};

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
