//! `--require-key-env`: the key a client must send, compared in constant time.

use super::*;

/// Reads the key `--require-key-env` names, once.
pub(super) fn required_key(var: Option<&str>) -> Result<Option<Vec<u8>>> {
    let Some(var) = var.map(str::trim) else {
        return Ok(None);
    };
    if var.is_empty() {
        return Err(exit::usage("--require-key-env needs a variable name"));
    }
    match std::env::var_os(var) {
        None => Err(exit::usage(format!(
            "--require-key-env {var}: {var} is not set; set it to the key clients must send as Authorization: Bearer <key>"
        ))),
        Some(v) => {
            let v = v.to_str().ok_or_else(|| {
                exit::usage(format!("--require-key-env {var}: {var} is not valid UTF-8"))
            })?;
            let v = v.trim();
            if v.is_empty() {
                return Err(exit::usage(format!(
                    "--require-key-env {var}: {var} is empty; set it to the key clients must send"
                )));
            }
            Ok(Some(v.as_bytes().to_vec()))
        }
    }
}

/// Compares in time that depends only on the expected key's length.
pub(super) fn constant_time_eq(got: &[u8], want: &[u8]) -> bool {
    let mut diff = u8::from(got.len() != want.len());
    for (i, w) in want.iter().enumerate() {
        diff |= got.get(i).copied().unwrap_or(0) ^ w;
    }
    std::hint::black_box(diff) == 0
}

/// Whether the request carries `Authorization: Bearer <key>`.
pub(super) fn authorised(key: &[u8], headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return false;
    };
    let value = value.as_bytes();
    let Some(scheme) = value.get(..7) else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return false;
    }
    constant_time_eq(value[7..].trim_ascii(), key)
}
