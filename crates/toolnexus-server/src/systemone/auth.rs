//! `--require-key-env`: the key a client must send, compared in constant time.

use axum::http::{HeaderMap, header};

use super::config::ApiKey;
use super::error::ServeError;

impl ApiKey {
    /// Reads the key from the environment variable `var`, once. An unnamed,
    /// unset, empty or non-UTF-8 variable is an error naming it.
    ///
    /// ```
    /// use toolnexus_server::systemone::ApiKey;
    /// let e = ApiKey::from_env("TOOLNEXUS_DOC_UNSET_KEY").unwrap_err();
    /// assert!(e.is_input());
    /// assert!(e.to_string().starts_with("--require-key-env TOOLNEXUS_DOC_UNSET_KEY: TOOLNEXUS_DOC_UNSET_KEY is not set"));
    /// ```
    pub fn from_env(var: &str) -> Result<ApiKey, ServeError> {
        let var = var.trim();
        if var.is_empty() {
            return Err(ServeError::KeyEnv(
                "--require-key-env needs a variable name".into(),
            ));
        }
        match std::env::var_os(var) {
            None => Err(ServeError::KeyEnv(format!(
                "--require-key-env {var}: {var} is not set; set it to the key clients must send as Authorization: Bearer <key>"
            ))),
            Some(v) => {
                let v = v.to_str().ok_or_else(|| {
                    ServeError::KeyEnv(format!("--require-key-env {var}: {var} is not valid UTF-8"))
                })?;
                let v = v.trim();
                if v.is_empty() {
                    return Err(ServeError::KeyEnv(format!(
                        "--require-key-env {var}: {var} is empty; set it to the key clients must send"
                    )));
                }
                Ok(ApiKey::new(v))
            }
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
pub(super) fn authorised(key: &ApiKey, headers: &HeaderMap) -> bool {
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
    constant_time_eq(value[7..].trim_ascii(), &key.0)
}
