//! A classifier's fingerprint: everything beneath it that can change an
//! answer, as an ordered list of `(layer, value)` parts (SPEC §23).

use std::fmt;

use sha2::{Digest, Sha256};

/// What a classifier's answers depend on beyond the request itself: where the
/// bottom of its stack answers (its **origin**: a System One endpoint, else the
/// style's name) and one part per layer or engine setting that can change an
/// answer, bottom first — a tape's contents, a local model's weights, a
/// calibration's maps, a cascade's student and threshold, a fallback's chain.
///
/// A cache keys on it ([`crate::cache::cache_key_for`]): it never serves an
/// answer made under one fingerprint to a classifier with another. A layer
/// that changes no answer (a cache, single flight, a budget, pricing, a
/// shadow) passes on the fingerprint of what it wraps unchanged; one that can
/// adds its part ([`Classifier::with_fingerprint_part`]). A plain style — a
/// System One endpoint with no `request_params` or body transform, a Custom
/// closure — has no parts.
///
/// ```
/// use toolnexus::classifier::{ClassifierOptions, create_classifier};
/// let plain = create_classifier(ClassifierOptions {
///     base_url: "http://127.0.0.1:9/v1".into(),
///     ..Default::default()
/// })?;
/// let fp = plain.fingerprint();
/// assert_eq!(fp.origin(), "http://127.0.0.1:9/v1/systemone");
/// assert!(fp.is_plain());
/// let tuned = plain.clone().with_fingerprint_part("my-rescaler", "v2");
/// assert_eq!(tuned.fingerprint().to_string(), "http://127.0.0.1:9/v1/systemone + my-rescaler=v2");
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
///
/// [`Classifier::with_fingerprint_part`]: crate::classifier::Classifier::with_fingerprint_part
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Fingerprint {
    origin: String,
    parts: Vec<(String, String)>,
}

impl Fingerprint {
    /// A fingerprint with this origin and no parts.
    ///
    /// ```
    /// let fp = toolnexus::classifier::Fingerprint::new("custom");
    /// assert_eq!((fp.origin(), fp.parts().len()), ("custom", 0));
    /// ```
    pub fn new(origin: impl Into<String>) -> Fingerprint {
        Fingerprint {
            origin: origin.into(),
            parts: Vec::new(),
        }
    }

    /// Where the bottom of the stack answers: a System One endpoint (without
    /// credentials or query), else its style's name (`custom`, `static`, `llm`).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The parts, bottom of the stack first: `(layer, value)`.
    ///
    /// ```
    /// let fp = toolnexus::classifier::Fingerprint::new("custom").with_part("calibration", "sha256:ab");
    /// assert_eq!(fp.parts(), [("calibration".to_string(), "sha256:ab".to_string())]);
    /// ```
    pub fn parts(&self) -> &[(String, String)] {
        &self.parts
    }

    /// Whether nothing beyond the origin can change an answer: then a cache
    /// keys exactly as it did before fingerprints existed.
    pub fn is_plain(&self) -> bool {
        self.parts.is_empty()
    }

    /// The fingerprint with one more part on top.
    pub fn with_part(mut self, layer: impl Into<String>, value: impl Into<String>) -> Fingerprint {
        self.parts.push((layer.into(), value.into()));
        self
    }

    /// This fingerprint laid over `beneath`: `beneath`'s origin, its parts,
    /// then this one's.
    ///
    /// ```
    /// use toolnexus::classifier::Fingerprint;
    /// let inner = Fingerprint::new("http://x/v1/systemone").with_part("tape", "sha256:01");
    /// let outer = Fingerprint::new("custom").with_part("calibration", "sha256:02").over(&inner);
    /// assert_eq!(outer.to_string(), "http://x/v1/systemone + tape=sha256:01 + calibration=sha256:02");
    /// ```
    pub fn over(self, beneath: &Fingerprint) -> Fingerprint {
        let mut parts = beneath.parts.clone();
        parts.extend(self.parts);
        Fingerprint {
            origin: beneath.origin.clone(),
            parts,
        }
    }

    /// `sha256:` and the SHA-256 of `bytes` in lower-case hex: how a part
    /// names a file's or a table's contents.
    ///
    /// ```
    /// let d = toolnexus::classifier::Fingerprint::digest(b"abc");
    /// assert_eq!(d, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    /// ```
    pub fn digest(bytes: impl AsRef<[u8]>) -> String {
        let mut s = String::with_capacity(71);
        s.push_str("sha256:");
        for b in Sha256::digest(bytes.as_ref()) {
            use fmt::Write as _;
            let _ = write!(s, "{b:02x}");
        }
        s
    }
}

/// The origin, then ` + layer=value` per part.
impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.origin)?;
        for (layer, value) in &self.parts {
            write!(f, " + {layer}={value}")?;
        }
        Ok(())
    }
}
