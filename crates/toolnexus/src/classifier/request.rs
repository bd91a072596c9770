//! What a call asks: the request a caller or a layer hands an evaluator, and
//! the parts of it a style cannot honour refused before anything is sent.

use super::*;

/// One evaluation with everything the System One wire can carry beyond a
/// state and questions: a model override, image assets, and extra top-level
/// fields. Styles that cannot honour a part refuse it with
/// [`ErrorKind::Unsupported`] naming it; nothing is dropped silently.
///
/// ```
/// use serde_json::{Map, json};
/// use toolnexus::classifier::{
///     Asset, Assets, EvalRequest, ImageFormat, NoulQuestion, Questions,
/// };
///
/// let qs = Questions::from([(
///     "damaged".to_string(),
///     NoulQuestion { instructions: "Is the product in img-1 damaged?".into(), criteria: None }.into(),
/// )]);
/// let photo = Asset { format: ImageFormat::Png, data: b"\x89PNG\r\n\x1a\n".to_vec() };
/// let req = EvalRequest::new(json!("Product photo: img-1"), qs)
///     .with_model("jev-vision")
///     .with_assets(Assets::from([("img-1".to_string(), photo)]))
///     .with_extra(Map::from_iter([("priority".to_string(), json!("low"))]));
/// assert_eq!(req.model.as_deref(), Some("jev-vision"));
/// assert_eq!(req.assets.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EvalRequest {
    /// What the questions are about: a string, an object or an array.
    pub state: Value,
    /// The questions under the caller's keys.
    pub questions: Questions,
    /// The model to ask instead of the classifier's own, if any.
    pub model: Option<String>,
    /// Image assets named in the state, the instructions or the criteria.
    pub assets: Assets,
    /// Extra top-level wire fields, shallow-merged over the body last (a key
    /// here wins over `model`, `questions`, `state` and `request_params`).
    pub extra: Map<String, Value>,
    /// The request exactly as a caller wrote it on the System One wire, to be
    /// forwarded as sent (`serve --style systemone`): the System One style
    /// posts it unchanged — its order, its absent fields, its `x_…` fields —
    /// adding only `model` when it has none, and keeps the answer's bytes in
    /// [`Evaluated::wire_body`]. `state`, `questions` and the rest must say the
    /// same (they check the answer and key the cache). Other styles ignore it.
    pub wire: Option<Value>,
}

impl EvalRequest {
    /// A request for `state` and `questions`, nothing else.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::{EvalRequest, Questions};
    /// let req = EvalRequest::new(json!("hi"), Questions::new());
    /// assert!(req.model.is_none() && req.assets.is_empty() && req.extra.is_empty());
    /// ```
    pub fn new(state: Value, questions: Questions) -> EvalRequest {
        EvalRequest {
            state,
            questions,
            model: None,
            assets: Assets::new(),
            extra: Map::new(),
            wire: None,
        }
    }

    /// Asks `model` instead of the classifier's own.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::{EvalRequest, Questions};
    /// let req = EvalRequest::new(json!("hi"), Questions::new()).with_model("jev-1.13");
    /// assert_eq!(req.model.as_deref(), Some("jev-1.13"));
    /// ```
    pub fn with_model(mut self, model: impl Into<String>) -> EvalRequest {
        self.model = Some(model.into());
        self
    }

    /// Sends these image assets.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::{Assets, EvalRequest, Questions};
    /// let req = EvalRequest::new(json!("hi"), Questions::new()).with_assets(Assets::new());
    /// assert!(req.assets.is_empty());
    /// ```
    pub fn with_assets(mut self, assets: Assets) -> EvalRequest {
        self.assets = assets;
        self
    }

    /// Adds extra top-level wire fields (merged into any already set).
    ///
    /// ```
    /// use serde_json::{Map, json};
    /// use toolnexus::classifier::{EvalRequest, Questions};
    /// let req = EvalRequest::new(json!("hi"), Questions::new())
    ///     .with_extra(Map::from_iter([("seed".to_string(), json!(7))]));
    /// assert_eq!(req.extra["seed"], 7);
    /// ```
    pub fn with_extra(mut self, extra: Map<String, Value>) -> EvalRequest {
        self.extra.extend(extra);
        self
    }

    /// Forwards `body`, the caller's own System One request, as sent (see
    /// [`EvalRequest::wire`]).
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::{EvalRequest, Questions};
    /// let body = json!({"state": "hi", "questions": {}});
    /// let req = EvalRequest::new(json!("hi"), Questions::new()).with_wire(body.clone());
    /// assert_eq!(req.wire, Some(body));
    /// ```
    pub fn with_wire(mut self, body: Value) -> EvalRequest {
        self.wire = Some(body);
        self
    }
}

impl EvalRequest {
    /// Refuses what an evaluator that honours only state and questions would
    /// otherwise drop: an image asset, a model other than `own_model`, an extra
    /// field; each a [`ErrorKind::Unsupported`] error naming it and `style`.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::{EvalRequest, Questions};
    ///
    /// let r = EvalRequest::new(json!(1), Questions::new()).with_model("jev-2");
    /// assert_eq!(
    ///     r.refuse_beyond("mine", "rules-v1").unwrap_err().to_string(),
    ///     "classifier: style \"mine\" cannot use model \"jev-2\" (it answers with \"rules-v1\")"
    /// );
    /// assert!(EvalRequest::new(json!(1), Questions::new()).refuse_beyond("mine", "rules-v1").is_ok());
    /// ```
    pub fn refuse_beyond(&self, style: &str, own_model: &str) -> Result<(), ClassifierError> {
        Extras {
            model: self.model.as_deref(),
            assets: &self.assets,
            extra: &self.extra,
            wire: None,
        }
        .refuse_beyond(style, own_model)
    }
}

/// The parts of an [`EvalRequest`] beyond state and questions, borrowed.
#[derive(Clone, Copy)]
pub(crate) struct Extras<'a> {
    pub model: Option<&'a str>,
    pub assets: &'a Assets,
    pub extra: &'a Map<String, Value>,
    /// The caller's own body, forwarded as sent by the System One style.
    pub wire: Option<&'a Value>,
}

impl Extras<'_> {
    /// Refuses whatever a style that honours only state and questions would
    /// otherwise drop: an asset, a model other than `own_model`, an extra field.
    pub(crate) fn refuse_beyond(
        &self,
        style: &str,
        own_model: &str,
    ) -> Result<(), ClassifierError> {
        if let Some(name) = self.assets.keys().next() {
            return Err(msg::unsupported(style, format!("image asset {name:?}")));
        }
        if let Some(m) = self.model.filter(|m| *m != own_model) {
            return Err(msg::unsupported(
                style,
                format!("model {m:?} (it answers with {own_model:?})"),
            ));
        }
        if let Some(k) = self.extra.keys().next() {
            return Err(msg::unsupported(style, format!("extra field {k:?}")));
        }
        Ok(())
    }
}

static NO_ASSETS: std::sync::LazyLock<Assets> = std::sync::LazyLock::new(Assets::new);
static NO_EXTRA: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);

impl Extras<'static> {
    pub(crate) fn none() -> Extras<'static> {
        Extras {
            model: None,
            assets: &NO_ASSETS,
            extra: &NO_EXTRA,
            wire: None,
        }
    }
}
