//! [`ClassifierError`]: the one error of the classifier seam, with every message it
//! can carry kept together here, because the messages are API.

use std::fmt;
use std::time::Duration;

/// What went wrong, for callers that branch without parsing text.
///
/// Prefer the predicates on [`ClassifierError`] (`is_timeout`, `is_retryable`, …);
/// this enum is `#[non_exhaustive]` so new kinds can appear without a breaking change.
///
/// ```
/// use toolnexus::classifier::{Decision, ErrorKind};
///
/// let d = Decision::from_slice(br#"{"model":"m","answers":{}}"#)?;
/// let e = d.noul("urgency").unwrap_err();
/// assert_eq!(e.kind(), ErrorKind::MissingAnswer);
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The options given to `create_classifier` cannot make a classifier.
    Config,
    /// A question (or the question set) breaks a client-side limit; nothing was sent.
    InvalidQuestion,
    /// A response is not a well-formed decision (wrong JSON shape, missing number, …).
    Decode,
    /// A well-formed decision does not fit the questions asked (wrong type, unknown
    /// option, probability or score out of range).
    Incoherent,
    /// A typed accessor asked for a key the decision has no answer for.
    MissingAnswer,
    /// A typed accessor asked for a key whose answer is of another type.
    WrongType,
    /// The backend answered with a non-success HTTP status.
    Http,
    /// The request never got a complete HTTP answer (connect, reset, broken body).
    Transport,
    /// One attempt took longer than `timeout_ms`.
    Timeout,
    /// The caller cancelled through [`EvalContext::cancel`](crate::classifier::EvalContext).
    Cancelled,
    /// The response body was larger than the configured cap.
    ResponseTooLarge,
    /// A Static classifier has no recording for this request and state.
    StaticMiss,
    /// A tape has no recording for this call name.
    TapeMiss,
    /// A Custom classifier's closure returned an error.
    Custom,
    /// This style cannot honour part of the request (an image asset, a model
    /// override, an extra wire field, a box question); nothing was sent.
    Unsupported,
}

/// The error of every classifier operation.
///
/// `Display` gives a stable, lower-case message that starts with `classifier: `
/// (or `tape: ` for a tape miss, or `state <i>: ` for a failure inside
/// `evaluate_batch`) and names the key, the state index or the HTTP status involved.
/// No credential or expanded header value ever appears in it, nor in its `Debug`.
///
/// ```
/// use toolnexus::classifier::Decision;
///
/// let e = Decision::from_slice(b"[1, 2]").unwrap_err();
/// assert_eq!(e.to_string(), "classifier: response is not a JSON object");
/// assert!(!e.is_retryable());
/// ```
pub struct ClassifierError {
    kind: ErrorKind,
    message: String,
    status: Option<u16>,
    retry_after: Option<Duration>,
    state_index: Option<usize>,
    request_id: Option<String>,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl ClassifierError {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ClassifierError {
            kind,
            message: message.into(),
            status: None,
            retry_after: None,
            state_index: None,
            request_id: None,
            source: None,
        }
    }

    pub(crate) fn with_source(
        mut self,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    pub(crate) fn with_status(mut self, status: u16, retry_after: Option<Duration>) -> Self {
        self.status = Some(status);
        self.retry_after = retry_after;
        self
    }

    /// Records the request id the backend answered with (`x-typesafe-request-id`).
    pub(crate) fn with_request_id(mut self, request_id: Option<String>) -> Self {
        if request_id.is_some() {
            self.request_id = request_id;
        }
        self
    }

    /// Rewrites the message (to scrub secrets a backend echoed into it).
    pub(crate) fn scrubbed(mut self, scrub: impl FnOnce(&str) -> String) -> Self {
        self.message = scrub(&self.message);
        self
    }

    /// Wraps an error from state `index` of a batch: `state <index>: <message>`.
    pub(crate) fn in_state(mut self, index: usize) -> Self {
        self.message = format!("state {index}: {}", self.message);
        self.state_index = Some(index);
        self
    }

    /// What went wrong, as a value to match on.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The HTTP status the backend answered with, when the failure is an HTTP one.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// The delay the backend asked for in `Retry-After` (seconds form), if any.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// The request id the backend answered with (`x-typesafe-request-id`), when
    /// the failure came from a response that carried one.
    pub fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }

    /// The message without its leading `classifier: ` (or `tape: `) prefix, for
    /// callers that wrap it in words of their own.
    ///
    /// ```
    /// use toolnexus::classifier::Decision;
    /// let e = Decision::from_slice(b"[1]").unwrap_err();
    /// assert_eq!(e.detail(), "response is not a JSON object");
    /// ```
    pub fn detail(&self) -> &str {
        let m = self.message.as_str();
        m.strip_prefix("classifier: ")
            .or_else(|| m.strip_prefix("tape: "))
            .unwrap_or(m)
    }

    /// The index of the failing state, for an error returned by `evaluate_batch`.
    pub fn state_index(&self) -> Option<usize> {
        self.state_index
    }

    /// One attempt ran past `timeout_ms`.
    pub fn is_timeout(&self) -> bool {
        self.kind == ErrorKind::Timeout
    }

    /// The caller cancelled the call.
    pub fn is_cancelled(&self) -> bool {
        self.kind == ErrorKind::Cancelled
    }

    /// The backend answered with an HTTP error status.
    pub fn is_http(&self) -> bool {
        self.kind == ErrorKind::Http
    }

    /// The response could not be decoded, or did not fit the questions asked.
    pub fn is_decode(&self) -> bool {
        matches!(self.kind, ErrorKind::Decode | ErrorKind::Incoherent)
    }

    /// A Static or tape lookup found no recording.
    pub fn is_miss(&self) -> bool {
        matches!(self.kind, ErrorKind::StaticMiss | ErrorKind::TapeMiss)
    }

    /// Whether the default policy would try this failure again: transport errors,
    /// timeouts, and HTTP 408, 429, 500, 502, 503, 504 and 529.
    ///
    /// A classifier's own `retryable_statuses` widen this per classifier; this
    /// predicate reports the built-in set.
    pub fn is_retryable(&self) -> bool {
        match self.kind {
            ErrorKind::Transport | ErrorKind::Timeout => true,
            ErrorKind::Http => self
                .status
                .is_some_and(crate::classifier::retry::is_default_retryable_status),
            _ => false,
        }
    }
}

impl fmt::Display for ClassifierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for ClassifierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The source is shown by its message only: foreign errors may carry request
        // details we do not control, and the message was built without secrets.
        let mut d = f.debug_struct("ClassifierError");
        d.field("kind", &self.kind).field("message", &self.message);
        if let Some(s) = self.status {
            d.field("status", &s);
        }
        if let Some(r) = self.retry_after {
            d.field("retry_after", &r);
        }
        if let Some(i) = self.state_index {
            d.field("state_index", &i);
        }
        if let Some(r) = &self.request_id {
            d.field("request_id", r);
        }
        d.finish()
    }
}

impl std::error::Error for ClassifierError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// Every message the classifier seam builds, in one place.
pub(crate) mod msg {
    use super::{ClassifierError, ErrorKind};

    pub(crate) fn config(text: impl std::fmt::Display) -> ClassifierError {
        ClassifierError::new(ErrorKind::Config, format!("classifier: {text}"))
    }

    pub(crate) fn question(key: &str, text: impl std::fmt::Display) -> ClassifierError {
        ClassifierError::new(
            ErrorKind::InvalidQuestion,
            format!("classifier: question {key:?}: {text}"),
        )
    }

    pub(crate) fn no_questions() -> ClassifierError {
        ClassifierError::new(
            ErrorKind::InvalidQuestion,
            "classifier: no questions to ask (the question set is empty)",
        )
    }

    pub(crate) fn decode(text: impl std::fmt::Display) -> ClassifierError {
        ClassifierError::new(ErrorKind::Decode, format!("classifier: {text}"))
    }

    pub(crate) fn answer(key: &str, text: impl std::fmt::Display) -> ClassifierError {
        ClassifierError::new(
            ErrorKind::Decode,
            format!("classifier: answer {key:?}: {text}"),
        )
    }

    pub(crate) fn incoherent(key: &str, text: impl std::fmt::Display) -> ClassifierError {
        ClassifierError::new(
            ErrorKind::Incoherent,
            format!("classifier: answer {key:?}: {text}"),
        )
    }

    pub(crate) fn missing_answer(key: &str) -> ClassifierError {
        ClassifierError::new(
            ErrorKind::MissingAnswer,
            format!("classifier: no answer {key:?} in this decision"),
        )
    }

    pub(crate) fn wrong_type(key: &str, got: &str, want: &str) -> ClassifierError {
        ClassifierError::new(
            ErrorKind::WrongType,
            format!("classifier: answer {key:?} is a {got} answer, not {want}"),
        )
    }

    pub(crate) fn cancelled() -> ClassifierError {
        ClassifierError::new(ErrorKind::Cancelled, "classifier: context canceled")
    }

    pub(crate) fn static_miss() -> ClassifierError {
        ClassifierError::new(
            ErrorKind::StaticMiss,
            "classifier: static: no recorded decision for this request+state",
        )
    }

    pub(crate) fn tape_miss(call_name: &str) -> ClassifierError {
        ClassifierError::new(
            ErrorKind::TapeMiss,
            format!("tape: no recorded decision for call {call_name:?}"),
        )
    }

    pub(crate) fn asset(name: &str, text: impl std::fmt::Display) -> ClassifierError {
        ClassifierError::new(
            ErrorKind::InvalidQuestion,
            format!("classifier: asset {name:?}: {text}"),
        )
    }

    pub(crate) fn unsupported(style: &str, what: impl std::fmt::Display) -> ClassifierError {
        ClassifierError::new(
            ErrorKind::Unsupported,
            format!("classifier: style {style:?} cannot use {what}"),
        )
    }

    pub(crate) fn custom(text: impl std::fmt::Display) -> ClassifierError {
        ClassifierError::new(ErrorKind::Custom, format!("classifier: custom: {text}"))
    }
}
