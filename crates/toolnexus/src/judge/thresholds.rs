//! A thresholds file: per-question [`Bands`] chosen from measured answers
//! (`toolnexus assess thresholds` writes it; [`Bands::from_thresholds`] and
//! [`Policy::with_thresholds`](super::Policy::with_thresholds) read it).
//!
//! ```json
//! {"format": "toolnexus.thresholds", "version": 1,
//!  "bands": {"spam": {"low": 0.12, "high": 0.88}},
//!  "questions": {"spam": {"provisional": false, "...": "figures"}}}
//! ```
//!
//! Only `format`, `version`, `bands`, `models` (the models whose answers the
//! cuts were picked on, absent in older files) and each question's
//! `provisional` flag and `hash` (the canonical hash of the wording the cut was
//! picked on, absent in older files) are read here; the rest are the figures
//! behind the choice, for people.
//! Thresholds tuned on one model do not transfer to another: [`Thresholds::models`]
//! says which model they hold for.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::bands::Bands;
use crate::classifier::{ClassifierError, Questions, msg, question_hash};

/// The `format` of a thresholds file.
///
/// ```
/// assert_eq!(toolnexus::judge::THRESHOLDS_FORMAT, "toolnexus.thresholds");
/// ```
pub const THRESHOLDS_FORMAT: &str = "toolnexus.thresholds";
/// The thresholds file version this build reads.
///
/// ```
/// assert_eq!(toolnexus::judge::THRESHOLDS_VERSION, 1);
/// ```
pub const THRESHOLDS_VERSION: u64 = 1;

/// Per-question bands read from a thresholds file.
///
/// ```
/// use toolnexus::judge::{Bands, Thresholds};
///
/// let t = Thresholds::from_json(r#"{"format": "toolnexus.thresholds", "version": 1,
///     "bands": {"spam": {"low": 0.1, "high": 0.9}}}"#)?;
/// assert_eq!(Bands::from_thresholds(&t)["spam"], Bands { low: 0.1, high: 0.9 });
/// assert!(!t.is_provisional("spam"));
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Thresholds {
    /// Bands by question key.
    pub bands: BTreeMap<String, Bands>,
    /// Keys whose cut was chosen on too few rows to trust yet.
    pub provisional: Vec<String>,
    /// Each question's canonical hash ([`question_hash`]) when its cut was
    /// picked; empty for files written before the hash was recorded.
    pub hashes: BTreeMap<String, String>,
    /// The models whose answers the cuts were picked on; empty for files
    /// written before they were recorded.
    pub models: Vec<String>,
}

impl Thresholds {
    /// Parses a thresholds file's text. Every error starts `thresholds: ` and
    /// names the key it is about.
    ///
    /// ```
    /// use toolnexus::judge::Thresholds;
    /// let e = Thresholds::from_json(r#"{"format": "toolnexus.thresholds", "version": 1,
    ///     "bands": {"spam": {"low": 0.9, "high": 0.1}}}"#).unwrap_err();
    /// assert_eq!(e.to_string(), "classifier: thresholds: bands \"spam\": bands need 0 <= low <= high <= 1, got low 0.9, high 0.1");
    /// ```
    pub fn from_json(text: &str) -> Result<Thresholds, ClassifierError> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| msg::config(format!("thresholds: not JSON: {e}")))?;
        parse(&v).map_err(|m| msg::config(format!("thresholds: {m}")))
    }

    /// Reads a thresholds file; errors name the file.
    ///
    /// ```
    /// let e = toolnexus::judge::Thresholds::load("/nonexistent/t.json").unwrap_err();
    /// assert!(e.to_string().starts_with("classifier: thresholds /nonexistent/t.json: cannot read: "));
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Thresholds, ClassifierError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| msg::config(format!("thresholds {}: cannot read: {e}", path.display())))?;
        Thresholds::from_json(&text).map_err(|e| {
            let d = e.detail();
            let d = d.strip_prefix("thresholds: ").unwrap_or(d);
            msg::config(format!("thresholds {}: {d}", path.display()))
        })
    }

    /// The questions of `asked` that were reworded since their cut was picked:
    /// the file records a hash for the key and the question asked now hashes
    /// differently. Files without hashes (written by older builds) report none.
    ///
    /// ```
    /// use toolnexus::classifier::question_hash;
    /// use toolnexus::judge::{Thresholds, noul, questions};
    ///
    /// let picked = questions(&[noul("spam", "Is it spam?")])?;
    /// let text = format!(r#"{{"format": "toolnexus.thresholds", "version": 1,
    ///     "bands": {{"spam": {{"low": 0.1, "high": 0.9}}}},
    ///     "questions": {{"spam": {{"hash": "{}"}}}}}}"#, question_hash(&picked["spam"]));
    /// let t = Thresholds::from_json(&text)?;
    /// assert!(t.reworded(&picked).is_empty());
    /// let now = questions(&[noul("spam", "Is this unsolicited bulk mail?")])?;
    /// assert_eq!(t.reworded(&now), ["spam"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reworded(&self, asked: &Questions) -> Vec<String> {
        self.hashes
            .iter()
            .filter_map(|(k, was)| {
                let q = asked.get(k)?;
                (question_hash(q) != *was).then(|| k.clone())
            })
            .collect()
    }

    /// Whether `key`'s cut is marked provisional (chosen on fewer than 200 rows).
    ///
    /// ```
    /// assert!(!toolnexus::judge::Thresholds::default().is_provisional("x"));
    /// ```
    pub fn is_provisional(&self, key: &str) -> bool {
        self.provisional.iter().any(|k| k == key)
    }
}

fn parse(v: &Value) -> Result<Thresholds, String> {
    let o = v.as_object().ok_or("a thresholds file is a JSON object")?;
    let format = o.get("format").and_then(Value::as_str);
    if format != Some(THRESHOLDS_FORMAT) {
        return Err(format!(
            "\"format\" is {}, not {THRESHOLDS_FORMAT:?}",
            o.get("format")
                .map_or("absent".to_string(), |f| f.to_string())
        ));
    }
    match o.get("version").and_then(Value::as_u64) {
        Some(THRESHOLDS_VERSION) => {}
        other => {
            return Err(format!(
                "version {} is not supported (this build reads version {THRESHOLDS_VERSION})",
                other.map_or("absent".to_string(), |x| x.to_string())
            ));
        }
    }
    let bands_v = o
        .get("bands")
        .and_then(Value::as_object)
        .ok_or("no \"bands\" object")?;
    let mut bands = BTreeMap::new();
    for (k, b) in bands_v {
        let num = |f: &str| {
            b.get(f)
                .and_then(Value::as_f64)
                .ok_or_else(|| format!("bands {k:?}: no number {f:?}"))
        };
        let band = Bands {
            low: num("low")?,
            high: num("high")?,
        };
        band.check()
            .map_err(|e| format!("bands {k:?}: {}", e.detail()))?;
        bands.insert(k.clone(), band);
    }
    let picks = o.get("questions").and_then(Value::as_object);
    let provisional = picks
        .map(|qs| {
            qs.iter()
                .filter(|(_, q)| {
                    q.get("provisional").and_then(Value::as_bool) == Some(true)
                        || q.get("status").and_then(Value::as_str) == Some("provisional")
                })
                .map(|(k, _)| k.clone())
                .collect()
        })
        .unwrap_or_default();
    let models = match o.get("models") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(ms)) => ms
            .iter()
            .map(|m| m.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or("\"models\" is not a list of model names")?,
        Some(_) => return Err("\"models\" is not a list of model names".into()),
    };
    let hashes = picks
        .map(|qs| {
            qs.iter()
                .filter_map(|(k, q)| Some((k.clone(), q.get("hash")?.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    Ok(Thresholds {
        bands,
        provisional,
        hashes,
        models,
    })
}

impl Bands {
    /// The per-question bands of a thresholds file.
    ///
    /// ```
    /// use toolnexus::judge::{Bands, Thresholds};
    /// let t = Thresholds::from_json(r#"{"format":"toolnexus.thresholds","version":1,"bands":{}}"#)?;
    /// assert!(Bands::from_thresholds(&t).is_empty());
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn from_thresholds(thresholds: &Thresholds) -> BTreeMap<String, Bands> {
        thresholds.bands.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_what_is_wrong() {
        let cases = [
            ("[]", "thresholds: a thresholds file is a JSON object"),
            (
                r#"{"format":"x"}"#,
                "thresholds: \"format\" is \"x\", not \"toolnexus.thresholds\"",
            ),
            (
                r#"{"format":"toolnexus.thresholds","version":2}"#,
                "thresholds: version 2 is not supported (this build reads version 1)",
            ),
            (
                r#"{"format":"toolnexus.thresholds","version":1}"#,
                "thresholds: no \"bands\" object",
            ),
            (
                r#"{"format":"toolnexus.thresholds","version":1,"bands":{"q":{"low":0.1}}}"#,
                "thresholds: bands \"q\": no number \"high\"",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(
                Thresholds::from_json(text).unwrap_err().detail(),
                want,
                "{text}"
            );
        }
    }

    #[test]
    fn the_models_are_read_and_older_files_name_none() {
        let t = Thresholds::from_json(
            r#"{"format":"toolnexus.thresholds","version":1,"models":["jev-1.13"],"bands":{}}"#,
        )
        .unwrap();
        assert_eq!(t.models, ["jev-1.13"]);
        let old =
            Thresholds::from_json(r#"{"format":"toolnexus.thresholds","version":1,"bands":{}}"#)
                .unwrap();
        assert!(old.models.is_empty());
        let e = Thresholds::from_json(
            r#"{"format":"toolnexus.thresholds","version":1,"models":"m","bands":{}}"#,
        )
        .unwrap_err();
        assert_eq!(
            e.detail(),
            "thresholds: \"models\" is not a list of model names"
        );
    }

    #[test]
    fn provisional_keys_are_read() {
        let t = Thresholds::from_json(
            r#"{"format":"toolnexus.thresholds","version":1,
            "bands":{"a":{"low":0.2,"high":0.8}},"questions":{"a":{"provisional":true}}}"#,
        )
        .unwrap();
        assert!(t.is_provisional("a"));
    }
}
