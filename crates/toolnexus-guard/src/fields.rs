//! Reading a policy's fields: every error names the key it is about.

use serde_json::Value;

use crate::permission::Permission;

/// A policy error: the key it is about and what is wrong.
///
/// ```
/// use toolnexus_guard::Policy;
/// let e = Policy::parse(r#"{"toolnexus":"guard-policy","version":1,"on_error":"allow"}"#, None).unwrap_err();
/// assert_eq!(e.key, "on_error");
/// assert!(e.to_string().starts_with("on_error: must be ask or deny"));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyError {
    /// The key path, e.g. `rules[3].pattern` (empty for the file as a whole).
    pub key: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for PolicyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.key.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.key, self.message)
        }
    }
}

impl std::error::Error for PolicyError {}

/// The error about `key`.
pub(crate) fn err(key: impl Into<String>, message: impl Into<String>) -> PolicyError {
    PolicyError {
        key: key.into(),
        message: message.into(),
    }
}

/// A permission that can only make a verdict stricter: ask or deny.
pub(crate) fn tightening(key: &str, v: &Value) -> Result<Permission, PolicyError> {
    match v.as_str() {
        Some("ask") => Ok(Permission::Ask),
        Some("deny") => Ok(Permission::Deny),
        Some("allow") => Err(err(
            key,
            "must be ask or deny: a guard never lets a call through because it failed or a rule matched",
        )),
        _ => Err(err(key, format!("must be \"ask\" or \"deny\", not {v}"))),
    }
}

/// An array of strings.
pub(crate) fn string_list(key: &str, v: &Value) -> Result<Vec<String>, PolicyError> {
    let a = v
        .as_array()
        .ok_or_else(|| err(key, format!("must be an array of strings, not {v}")))?;
    a.iter()
        .enumerate()
        .map(|(i, x)| {
            x.as_str()
                .map(str::to_string)
                .ok_or_else(|| err(format!("{key}[{i}]"), format!("must be a string, not {x}")))
        })
        .collect()
}
