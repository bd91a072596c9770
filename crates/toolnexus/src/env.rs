//! Leaf: where API keys and `${NAME}` header references are read from.
//!
//! Keys are read at call time, never at construction, from an [`EnvSource`]:
//! the process environment by default, or any lookup the caller supplies (a
//! secrets manager, a map in a test). A source never shows a value in `Debug`.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

type LookupFn = dyn Fn(&str) -> Option<String> + Send + Sync;

/// Where the variables named by `api_key_env` and `${NAME}` header references
/// are read from, at every call.
///
/// [`EnvSource::process`] (the default) reads the process environment;
/// [`EnvSource::from_fn`] reads anything else, so a key can rotate between
/// calls without touching the environment:
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use toolnexus::classifier::EnvSource;
///
/// let key = Arc::new(Mutex::new("ts-old".to_string()));
/// let source = {
///     let key = key.clone();
///     EnvSource::from_fn(move |name| (name == "TYPESAFE_API_KEY").then(|| key.lock().unwrap().clone()))
/// };
/// assert_eq!(source.get("TYPESAFE_API_KEY").as_deref(), Some("ts-old"));
/// *key.lock().unwrap() = "ts-new".into();
/// assert_eq!(source.get("TYPESAFE_API_KEY").as_deref(), Some("ts-new"));
/// assert_eq!(source.get("HOME"), None);
/// assert_eq!(format!("{source:?}"), "EnvSource(custom)");
/// ```
#[derive(Clone, Default)]
pub struct EnvSource(Option<Arc<LookupFn>>);

impl EnvSource {
    /// The process environment (`std::env::var`), read at each call.
    pub fn process() -> EnvSource {
        EnvSource(None)
    }

    /// A caller's lookup: `None` means unset.
    pub fn from_fn(f: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> EnvSource {
        EnvSource(Some(Arc::new(f)))
    }

    /// A fixed table, for tests.
    ///
    /// ```
    /// use toolnexus::classifier::EnvSource;
    /// let env = EnvSource::from_map([("K", "v")]);
    /// assert_eq!(env.get("K").as_deref(), Some("v"));
    /// ```
    pub fn from_map<K: Into<String>, V: Into<String>>(
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> EnvSource {
        let map: BTreeMap<String, String> = vars
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        EnvSource::from_fn(move |name| map.get(name).cloned())
    }

    /// The value of `name`, or `None` when it is unset (or not valid UTF-8).
    pub fn get(&self, name: &str) -> Option<String> {
        match &self.0 {
            None => std::env::var(name).ok(),
            Some(f) => f(name),
        }
    }

    /// Expands every `${NAME}` in `template` (an unset name expands to
    /// nothing; an unclosed `${` stays as written).
    ///
    /// ```
    /// use toolnexus::classifier::EnvSource;
    /// let env = EnvSource::from_map([("TEAM", "t-7")]);
    /// assert_eq!(env.expand("Bearer ${TEAM}!"), "Bearer t-7!");
    /// assert_eq!(env.expand("${UNSET}"), "");
    /// assert_eq!(env.expand("open ${never"), "open ${never");
    /// ```
    pub fn expand(&self, template: &str) -> String {
        if !template.contains("${") {
            return template.to_string();
        }
        let mut out = String::with_capacity(template.len());
        let mut rest = template;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            match rest[start + 2..].find('}') {
                Some(end) => {
                    let name = &rest[start + 2..start + 2 + end];
                    out.push_str(&self.get(name).unwrap_or_default());
                    rest = &rest[start + 2 + end + 1..];
                }
                None => {
                    out.push_str(&rest[start..]);
                    rest = "";
                }
            }
        }
        out.push_str(rest);
        out
    }
}

impl fmt::Debug for EnvSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("EnvSource(process)"),
            Some(_) => f.write_str("EnvSource(custom)"),
        }
    }
}
