//! What a classifier stack is, seen from outside: the style or engine at its
//! bottom, where that answers, the model it asks for, and whether it judges
//! on this machine (SPEC §23).

use std::fmt;

/// What sits at the bottom of a classifier stack, forwarded unchanged by every
/// layer above it (a cache, a budget, pricing, calibration, a cascade, a
/// fallback, a shadow): so a wrapped classifier still says what it wraps.
///
/// It is what pricing, caps, logs and listings read — never a style's name
/// matched against a list: a local engine is priced at $0 because its identity
/// says [`local`](Identity::local), whatever it is called.
///
/// ```
/// use toolnexus::classifier::{ClassifierOptions, Identity, create_classifier};
/// let judge = create_classifier(ClassifierOptions {
///     base_url: "http://127.0.0.1:9/v1".into(),
///     model: "jev-1.13".into(),
///     ..Default::default()
/// })?;
/// let id = judge.identity();
/// assert_eq!(id.style, "systemone");
/// assert_eq!(id.endpoint.as_deref(), Some("http://127.0.0.1:9/v1/systemone"));
/// assert_eq!((id.model.as_str(), id.local), ("jev-1.13", false));
/// assert_eq!(id.to_string(), "systemone jev-1.13 at http://127.0.0.1:9/v1/systemone");
///
/// // A local engine says so, and a layer over it keeps saying so.
/// let engine = Identity::local("laya", "laya-1");
/// assert!(engine.local && engine.endpoint.is_none());
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Identity {
    /// The style or engine at the bottom: `systemone`, `llm`, `static`,
    /// `custom`, or a local engine's name (`local`, `student`, `laya`, …).
    pub style: String,
    /// Where a remote style posts (credentials and query removed); `None` for
    /// the others.
    pub endpoint: Option<String>,
    /// The model the bottom of the stack asks for (a decision's `model` says
    /// what actually answered). For a cascade, the model of what it falls back
    /// to: that is what it bills.
    pub model: String,
    /// Whether it judges on this machine: then a call costs an explicit $0.
    pub local: bool,
}

impl Identity {
    /// A remote style's or a caller's own identity: `style` asking for `model`,
    /// at `endpoint` when it posts somewhere.
    ///
    /// ```
    /// let id = toolnexus::classifier::Identity::new("custom", "rules-v1", None);
    /// assert_eq!(id.to_string(), "custom rules-v1");
    /// assert!(!id.local);
    /// ```
    pub fn new(
        style: impl Into<String>,
        model: impl Into<String>,
        endpoint: Option<String>,
    ) -> Identity {
        Identity {
            style: style.into(),
            endpoint,
            model: model.into(),
            local: false,
        }
    }

    /// The identity of an engine that judges on this machine.
    ///
    /// ```
    /// let id = toolnexus::classifier::Identity::local("student", "student (spam.json)");
    /// assert!(id.local);
    /// assert_eq!(id.to_string(), "student student (spam.json), on this machine");
    /// ```
    pub fn local(engine: impl Into<String>, model: impl Into<String>) -> Identity {
        Identity {
            style: engine.into(),
            endpoint: None,
            model: model.into(),
            local: true,
        }
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.style, self.model)?;
        if let Some(e) = &self.endpoint {
            write!(f, " at {e}")?;
        }
        if self.local {
            f.write_str(", on this machine")?;
        }
        Ok(())
    }
}
