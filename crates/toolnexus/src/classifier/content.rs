//! [`Content`]: what a question says — instructions, option descriptions, rubric
//! levels, a noul's two outcomes. Pure: no I/O.

use std::fmt;

use serde_json::Value;

use crate::canonical::canonical_json;
use crate::error::{ClassifierError, msg};

/// Question text: a string, or a JSON object or array the model reads as
/// structured content.
///
/// Most questions are plain text, and every string type converts into it with
/// `.into()`; structured content comes from [`Content::structured`] or
/// `TryFrom<Value>`. It is never a number, a bool or null: an absent
/// description is `None` around it (see [`ChoiceQuestion`](super::ChoiceQuestion)).
///
/// ```
/// use serde_json::json;
/// use toolnexus::classifier::Content;
///
/// let text: Content = "Is this message spam?".into();
/// assert_eq!(text, "Is this message spam?");
/// assert_eq!(text.as_str(), Some("Is this message spam?"));
///
/// let task = Content::structured(json!({"task": "Identify unsolicited advertising."}))?;
/// assert_eq!(task.as_str(), None);
/// assert_eq!(task.to_string(), r#"{"task":"Identify unsolicited advertising."}"#);
///
/// assert!(Content::structured(json!(3)).is_err());
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Content(Value);

impl Content {
    /// Plain text.
    ///
    /// ```
    /// use toolnexus::classifier::Content;
    /// assert_eq!(Content::text("hello"), "hello");
    /// ```
    pub fn text(text: impl Into<String>) -> Content {
        Content(Value::String(text.into()))
    }

    /// Structured content: a JSON object or array (a string is taken as text).
    /// Anything else is an error.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::Content;
    ///
    /// let levels = Content::structured(json!(["can wait", {"note": "today"}]))?;
    /// assert!(levels.is_structured());
    /// let e = Content::structured(json!(null)).unwrap_err();
    /// assert_eq!(e.to_string(), "classifier: content is null, not a string, an object or an array");
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn structured(value: Value) -> Result<Content, ClassifierError> {
        match value {
            Value::String(_) | Value::Object(_) | Value::Array(_) => Ok(Content(value)),
            other => Err(msg::decode(format!(
                "content is {}, not a string, an object or an array",
                json_kind(&other)
            ))),
        }
    }

    /// The text, when this is plain text.
    ///
    /// ```
    /// use toolnexus::classifier::Content;
    /// assert_eq!(Content::from("low").as_str(), Some("low"));
    /// ```
    pub fn as_str(&self) -> Option<&str> {
        self.0.as_str()
    }

    /// Whether this is a JSON object or array rather than text.
    ///
    /// ```
    /// use toolnexus::classifier::Content;
    /// assert!(!Content::from("low").is_structured());
    /// ```
    pub fn is_structured(&self) -> bool {
        !self.0.is_string()
    }

    /// Whether there is nothing to read: empty or blank text, an empty object
    /// or an empty array.
    ///
    /// ```
    /// use toolnexus::classifier::Content;
    /// assert!(Content::from("  ").is_blank());
    /// assert!(!Content::from("x").is_blank());
    /// ```
    pub fn is_blank(&self) -> bool {
        match &self.0 {
            Value::String(s) => s.trim().is_empty(),
            Value::Object(m) => m.is_empty(),
            Value::Array(a) => a.is_empty(),
            _ => true,
        }
    }

    /// The wire value: a JSON string, object or array.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::Content;
    /// assert_eq!(Content::from("x").as_value(), &json!("x"));
    /// ```
    pub fn as_value(&self) -> &Value {
        &self.0
    }

    /// The wire value, owned.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::Content;
    /// assert_eq!(Content::from("x").into_value(), json!("x"));
    /// ```
    pub fn into_value(self) -> Value {
        self.0
    }

    /// How a prompt shows it: text as it is, structured content as canonical JSON.
    pub(crate) fn render(&self) -> std::borrow::Cow<'_, str> {
        match &self.0 {
            Value::String(s) => std::borrow::Cow::Borrowed(s.as_str()),
            other => std::borrow::Cow::Owned(canonical_json(other)),
        }
    }
}

/// The JSON kind of a value, for messages.
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Default for Content {
    /// Empty text.
    fn default() -> Content {
        Content(Value::String(String::new()))
    }
}

impl fmt::Display for Content {
    /// Text as it is; structured content as canonical JSON.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

impl fmt::Debug for Content {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Value::String(s) => fmt::Debug::fmt(s, f),
            other => write!(f, "Content({})", canonical_json(other)),
        }
    }
}

impl From<&str> for Content {
    fn from(s: &str) -> Content {
        Content::text(s)
    }
}

impl From<String> for Content {
    fn from(s: String) -> Content {
        Content::text(s)
    }
}

impl From<&String> for Content {
    fn from(s: &String) -> Content {
        Content::text(s.as_str())
    }
}

impl TryFrom<Value> for Content {
    type Error = ClassifierError;

    /// See [`Content::structured`].
    fn try_from(v: Value) -> Result<Content, ClassifierError> {
        Content::structured(v)
    }
}

impl From<Content> for Value {
    fn from(c: Content) -> Value {
        c.0
    }
}

impl PartialEq<str> for Content {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == Some(other)
    }
}

impl PartialEq<&str> for Content {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == Some(*other)
    }
}

impl PartialEq<String> for Content {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == Some(other.as_str())
    }
}

/// What a choice option's description may be built from: text, [`Content`],
/// or `None` for an option the model reads by its name alone.
///
/// [`choice_over`](super::choice_over) takes any of these, so
/// `("billing", "money moved")` and `("calm", None::<&str>)` both work.
///
/// ```
/// use toolnexus::classifier::{Content, IntoDescription};
///
/// assert_eq!("money moved".into_description(), Some(Content::from("money moved")));
/// assert_eq!(None::<&str>.into_description(), None);
/// ```
pub trait IntoDescription {
    /// The description, or `None` when there is none.
    fn into_description(self) -> Option<Content>;
}

impl IntoDescription for &str {
    fn into_description(self) -> Option<Content> {
        Some(self.into())
    }
}

impl IntoDescription for String {
    fn into_description(self) -> Option<Content> {
        Some(self.into())
    }
}

impl IntoDescription for &String {
    fn into_description(self) -> Option<Content> {
        Some(self.into())
    }
}

impl IntoDescription for Content {
    fn into_description(self) -> Option<Content> {
        Some(self)
    }
}

impl<T: IntoDescription> IntoDescription for Option<T> {
    fn into_description(self) -> Option<Content> {
        self.and_then(IntoDescription::into_description)
    }
}
