//! [`ClassifierError`]: the one error of every operation, and every message text
//! the crate builds, kept together here because the messages are API. A leaf: it
//! names nothing else in the crate.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// HTTP statuses retried by default: 408, 429, 500, 502, 503, 504 and 529.
///
/// ```
/// use toolnexus::classifier::{ClassifierError, DEFAULT_RETRYABLE_STATUSES};
/// assert!(DEFAULT_RETRYABLE_STATUSES.contains(&529));
/// assert!(ClassifierError::http(529, "overloaded").is_retryable());
/// ```
pub const DEFAULT_RETRYABLE_STATUSES: [u16; 7] = [408, 429, 500, 502, 503, 504, 529];

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
    /// A budget's cap (cost, tokens or time) is reached: the call was refused
    /// and nothing was sent ([`ClassifierError::is_cap_reached`]).
    CapReached,
}

impl ErrorKind {
    /// Every kind, in declaration order.
    ///
    /// ```
    /// use toolnexus::classifier::ErrorKind;
    /// assert!(ErrorKind::ALL.iter().all(|k| k.as_str().parse::<ErrorKind>().ok() == Some(*k)));
    /// ```
    pub const ALL: [ErrorKind; 16] = [
        ErrorKind::Config,
        ErrorKind::InvalidQuestion,
        ErrorKind::Decode,
        ErrorKind::Incoherent,
        ErrorKind::MissingAnswer,
        ErrorKind::WrongType,
        ErrorKind::Http,
        ErrorKind::Transport,
        ErrorKind::Timeout,
        ErrorKind::Cancelled,
        ErrorKind::ResponseTooLarge,
        ErrorKind::StaticMiss,
        ErrorKind::TapeMiss,
        ErrorKind::Custom,
        ErrorKind::Unsupported,
        ErrorKind::CapReached,
    ];

    /// The kind's stable name, as tapes and metrics write it (`"timeout"`,
    /// `"invalid_question"`, …).
    ///
    /// ```
    /// use toolnexus::classifier::ErrorKind;
    /// assert_eq!(ErrorKind::ResponseTooLarge.as_str(), "response_too_large");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Config => "config",
            ErrorKind::InvalidQuestion => "invalid_question",
            ErrorKind::Decode => "decode",
            ErrorKind::Incoherent => "incoherent",
            ErrorKind::MissingAnswer => "missing_answer",
            ErrorKind::WrongType => "wrong_type",
            ErrorKind::Http => "http",
            ErrorKind::Transport => "transport",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::ResponseTooLarge => "response_too_large",
            ErrorKind::StaticMiss => "static_miss",
            ErrorKind::TapeMiss => "tape_miss",
            ErrorKind::Custom => "custom",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::CapReached => "cap_reached",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ErrorKind {
    type Err = ClassifierError;

    /// Reads a name written by [`ErrorKind::as_str`].
    ///
    /// ```
    /// use toolnexus::classifier::ErrorKind;
    /// assert_eq!("timeout".parse::<ErrorKind>()?, ErrorKind::Timeout);
    /// assert!("slow".parse::<ErrorKind>().unwrap_err().to_string().starts_with(
    ///     "classifier: unknown error kind \"slow\" (want config|invalid_question|"
    /// ));
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ErrorKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| msg::unknown_kind(s))
    }
}

/// The part of the crate an error comes from: the first word of its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Scope {
    /// `classifier: ` — the classifier seam and everything behind it.
    Classifier,
    /// `client: ` — the chat client's own transport and configuration.
    Client,
    /// `tape: ` — a tape lookup.
    Tape,
}

impl Scope {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Scope::Classifier => "classifier",
            Scope::Client => "client",
            Scope::Tape => "tape",
        }
    }
}

/// The error of every classifier operation.
///
/// `Display` gives a stable, lower-case message that starts with `classifier: `
/// (or `client: ` for the chat client's transport, `tape: ` for a tape miss, or
/// `state <i>: ` for a failure inside `evaluate_batch`) and names the key, the
/// state index or the HTTP status involved. No credential or expanded header
/// value ever appears in it, nor in its `Debug`.
///
/// Every kind has a public constructor, so wrappers and fakes built on the
/// public API (caches, fallbacks, a test double that answers 429) make the same
/// errors the crate does:
///
/// ```
/// use std::time::Duration;
/// use toolnexus::classifier::{ClassifierError, Decision, ErrorKind};
///
/// let e = Decision::from_slice(b"[1, 2]").unwrap_err();
/// assert_eq!(e.to_string(), "classifier: response is not a JSON object");
/// assert!(!e.is_retryable());
///
/// let busy = ClassifierError::http(429, "slow down").with_retry_after(Duration::from_secs(2));
/// assert_eq!(busy.to_string(), "classifier: HTTP 429: slow down");
/// assert!(busy.is_retryable() && busy.retry_after() == Some(Duration::from_secs(2)));
/// assert_eq!(ClassifierError::timeout(Duration::from_millis(250)).kind(), ErrorKind::Timeout);
/// ```
pub struct ClassifierError {
    kind: ErrorKind,
    scope: Scope,
    detail: String,
    status: Option<u16>,
    retry_after: Option<Duration>,
    state_index: Option<usize>,
    request_id: Option<String>,
    // Boxed: a `Result<_, ClassifierError>` stays under 128 bytes.
    error_type: Option<Box<str>>,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl ClassifierError {
    pub(crate) fn scoped(kind: ErrorKind, scope: Scope, detail: impl Into<String>) -> Self {
        ClassifierError {
            kind,
            scope,
            detail: detail.into(),
            status: None,
            retry_after: None,
            state_index: None,
            request_id: None,
            error_type: None,
            source: None,
        }
    }

    /// The same error for another waiter on one shared call: every field but
    /// the source, which becomes part of nothing (it is not `Clone`).
    pub(crate) fn duplicate(&self) -> Self {
        ClassifierError {
            kind: self.kind,
            scope: self.scope,
            detail: self.detail.clone(),
            status: self.status,
            retry_after: self.retry_after,
            state_index: self.state_index,
            request_id: self.request_id.clone(),
            error_type: self.error_type.clone(),
            source: None,
        }
    }

    pub(crate) fn classifier(kind: ErrorKind, detail: impl Into<String>) -> Self {
        ClassifierError::scoped(kind, Scope::Classifier, detail)
    }

    /// An error of any kind, from a message as [`Display`](fmt::Display) wrote it
    /// (a tape replays failures this way). A leading `classifier: `, `client: `
    /// or `tape: ` is read as the scope; any other text is a classifier detail.
    ///
    /// ```
    /// use toolnexus::classifier::{ClassifierError, ErrorKind};
    /// let e = ClassifierError::from_message(ErrorKind::Transport, "client: POST …: connection refused");
    /// assert_eq!(e.to_string(), "client: POST …: connection refused");
    /// assert_eq!(e.detail(), "POST …: connection refused");
    /// ```
    pub fn from_message(kind: ErrorKind, message: &str) -> Self {
        let (scope, detail) = match message.split_once(": ") {
            Some(("classifier", d)) => (Scope::Classifier, d),
            Some(("client", d)) => (Scope::Client, d),
            Some(("tape", d)) => (Scope::Tape, d),
            _ => (Scope::Classifier, message),
        };
        ClassifierError::scoped(kind, scope, detail)
    }

    /// A configuration error: `classifier: <text>`.
    ///
    /// ```
    /// let e = toolnexus::classifier::ClassifierError::config("pool size must be positive");
    /// assert_eq!(e.to_string(), "classifier: pool size must be positive");
    /// ```
    pub fn config(text: impl fmt::Display) -> Self {
        msg::config(text)
    }

    /// A question that breaks a limit: `classifier: question "<key>": <text>`.
    ///
    /// ```
    /// let e = toolnexus::classifier::ClassifierError::invalid_question("tone", "too long");
    /// assert_eq!(e.to_string(), "classifier: question \"tone\": too long");
    /// ```
    pub fn invalid_question(key: &str, text: impl fmt::Display) -> Self {
        msg::question(key, text)
    }

    /// A response that is not a well-formed decision: `classifier: <text>`.
    ///
    /// ```
    /// let e = toolnexus::classifier::ClassifierError::decode("response is empty");
    /// assert!(e.is_decode());
    /// ```
    pub fn decode(text: impl fmt::Display) -> Self {
        msg::decode(text)
    }

    /// A decision that does not fit the questions: `classifier: answer "<key>": <text>`.
    ///
    /// ```
    /// let e = toolnexus::classifier::ClassifierError::incoherent("tone", "choice \"x\" was not offered");
    /// assert_eq!(e.to_string(), "classifier: answer \"tone\": choice \"x\" was not offered");
    /// ```
    pub fn incoherent(key: &str, text: impl fmt::Display) -> Self {
        msg::incoherent(key, text)
    }

    /// No answer under `key`: `classifier: no answer "<key>" in this decision`.
    ///
    /// ```
    /// let e = toolnexus::classifier::ClassifierError::missing_answer("urgency");
    /// assert_eq!(e.to_string(), "classifier: no answer \"urgency\" in this decision");
    /// ```
    pub fn missing_answer(key: &str) -> Self {
        msg::missing_answer(key)
    }

    /// An answer of another type: `classifier: answer "<key>" is a <got> answer, not <want>`.
    ///
    /// ```
    /// let e = toolnexus::classifier::ClassifierError::wrong_type("risk", "score", "noul");
    /// assert_eq!(e.to_string(), "classifier: answer \"risk\" is a score answer, not noul");
    /// ```
    pub fn wrong_type(key: &str, got: &str, want: &str) -> Self {
        msg::wrong_type(key, got, want)
    }

    /// An HTTP error status: `classifier: HTTP <status>: <cause>`. Add the wait the
    /// server asked for with [`with_retry_after`](Self::with_retry_after).
    ///
    /// ```
    /// let e = toolnexus::classifier::ClassifierError::http(503, "overloaded");
    /// assert_eq!((e.status(), e.is_retryable()), (Some(503), true));
    /// ```
    pub fn http(status: u16, cause: impl fmt::Display) -> Self {
        msg::http(Scope::Classifier, None, status, cause).with_status(status, None)
    }

    /// A request that got no complete HTTP answer: `classifier: <cause>`.
    ///
    /// ```
    /// let e = toolnexus::classifier::ClassifierError::transport("connection reset");
    /// assert!(e.is_retryable());
    /// ```
    pub fn transport(cause: impl fmt::Display) -> Self {
        ClassifierError::classifier(ErrorKind::Transport, cause.to_string())
    }

    /// An attempt that ran out of time: `classifier: request timeout after <ms>ms`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let e = toolnexus::classifier::ClassifierError::timeout(Duration::from_secs(10));
    /// assert_eq!(e.to_string(), "classifier: request timeout after 10000ms");
    /// ```
    pub fn timeout(after: Duration) -> Self {
        msg::timeout(Scope::Classifier, None, after)
    }

    /// The caller cancelled: `classifier: context canceled`.
    ///
    /// ```
    /// assert!(toolnexus::classifier::ClassifierError::cancelled().is_cancelled());
    /// ```
    pub fn cancelled() -> Self {
        msg::cancelled()
    }

    /// A body over the cap: `classifier: response body exceeds <limit> bytes`.
    ///
    /// ```
    /// let e = toolnexus::classifier::ClassifierError::response_too_large(1024);
    /// assert_eq!(e.to_string(), "classifier: response body exceeds 1024 bytes");
    /// ```
    pub fn response_too_large(limit: usize) -> Self {
        msg::too_large(Scope::Classifier, None, limit)
    }

    /// A Static lookup that found nothing.
    ///
    /// ```
    /// assert!(toolnexus::classifier::ClassifierError::static_miss().is_miss());
    /// ```
    pub fn static_miss() -> Self {
        msg::static_miss()
    }

    /// A tape lookup that found nothing: `tape: no recorded decision for call "<name>"`.
    ///
    /// ```
    /// let e = toolnexus::classifier::ClassifierError::tape_miss("triage");
    /// assert_eq!(e.to_string(), "tape: no recorded decision for call \"triage\"");
    /// ```
    pub fn tape_miss(call_name: &str) -> Self {
        msg::tape_miss(call_name)
    }

    /// A failure of your own evaluator: `classifier: custom: <text>`.
    ///
    /// ```
    /// let e = toolnexus::classifier::ClassifierError::custom("model file missing");
    /// assert_eq!(e.to_string(), "classifier: custom: model file missing");
    /// ```
    pub fn custom(text: impl fmt::Display) -> Self {
        msg::custom(text)
    }

    /// A part of the request this evaluator cannot honour:
    /// `classifier: style "<style>" cannot use <what>`.
    ///
    /// ```
    /// let e = toolnexus::classifier::ClassifierError::unsupported("mine", "image asset \"img\"");
    /// assert_eq!(e.to_string(), "classifier: style \"mine\" cannot use image asset \"img\"");
    /// ```
    pub fn unsupported(style: &str, what: impl fmt::Display) -> Self {
        msg::unsupported(style, what)
    }

    /// A budget's refusal: `classifier: not sent: <why>`, where `why` names
    /// the cap that is reached. Nothing was sent.
    ///
    /// ```
    /// let e = toolnexus::classifier::ClassifierError::cap_reached("budget: the cost cap is reached");
    /// assert_eq!(e.to_string(), "classifier: not sent: budget: the cost cap is reached");
    /// assert!(e.is_cap_reached());
    /// ```
    pub fn cap_reached(why: impl fmt::Display) -> Self {
        ClassifierError::classifier(ErrorKind::CapReached, format!("not sent: {why}"))
    }

    /// Attaches the underlying error, reachable through
    /// [`source`](std::error::Error::source).
    ///
    /// ```
    /// use std::error::Error as _;
    /// let io = std::io::Error::other("disk gone");
    /// let e = toolnexus::classifier::ClassifierError::custom("cache").with_source(io);
    /// assert_eq!(e.source().unwrap().to_string(), "disk gone");
    /// ```
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// Sets the wait the server asked for before a retry.
    ///
    /// ```
    /// use std::time::Duration;
    /// let e = toolnexus::classifier::ClassifierError::http(429, "busy")
    ///     .with_retry_after(Duration::from_millis(1500));
    /// assert_eq!(e.retry_after(), Some(Duration::from_millis(1500)));
    /// ```
    pub fn with_retry_after(mut self, wait: Duration) -> Self {
        self.retry_after = Some(wait);
        self
    }

    /// Sets the request id the backend answered with.
    ///
    /// ```
    /// let e = toolnexus::classifier::ClassifierError::http(500, "oops").with_request_id("req_1");
    /// assert_eq!(e.request_id(), Some("req_1"));
    /// ```
    pub fn with_request_id(mut self, request_id: impl Into<String>) -> Self {
        self.request_id = Some(request_id.into());
        self
    }

    /// Marks the error as the failure of state `index` of a batch: its message
    /// gains `state <index>: ` in front.
    ///
    /// ```
    /// let e = toolnexus::classifier::ClassifierError::custom("boom").in_state(3);
    /// assert_eq!(e.to_string(), "state 3: classifier: custom: boom");
    /// assert_eq!((e.state_index(), e.detail()), (Some(3), "custom: boom"));
    /// ```
    pub fn in_state(mut self, index: usize) -> Self {
        self.state_index = Some(index);
        self
    }

    pub(crate) fn with_status(mut self, status: u16, retry_after: Option<Duration>) -> Self {
        self.status = Some(status);
        self.retry_after = retry_after;
        self
    }

    pub(crate) fn with_request_id_opt(mut self, request_id: Option<String>) -> Self {
        if request_id.is_some() {
            self.request_id = request_id;
        }
        self
    }

    pub(crate) fn scrubbed(mut self, scrub: impl FnOnce(&str) -> String) -> Self {
        self.detail = scrub(&self.detail);
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

    /// The delay the backend asked for (`retry-after-ms`, or `Retry-After` in
    /// seconds or as an HTTP date), if any.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// The request id the backend answered with (`x-typesafe-request-id`), when
    /// the failure came from a response that carried one.
    pub fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }

    /// The error type an HTTP error's body named (`detail.error_type`, as the
    /// System One API writes it, or `error.type`), when it named one in plain
    /// word characters: `serve` passes it on unchanged.
    ///
    /// ```
    /// use toolnexus::classifier::ClassifierError;
    /// assert_eq!(ClassifierError::http(503, "busy").error_type(), None);
    /// ```
    pub fn error_type(&self) -> Option<&str> {
        self.error_type.as_deref()
    }

    pub(crate) fn with_error_type(mut self, error_type: Option<String>) -> Self {
        self.error_type = error_type.map(String::into_boxed_str);
        self
    }

    /// The message without its scope (`classifier: `, `client: ` or `tape: `)
    /// and without a batch's `state <i>: `, for callers that wrap it in words of
    /// their own. Kept apart from the scope from the start: nothing is cut off.
    ///
    /// ```
    /// use toolnexus::classifier::Decision;
    /// let e = Decision::from_slice(b"[1]").unwrap_err();
    /// assert_eq!(e.detail(), "response is not a JSON object");
    /// ```
    pub fn detail(&self) -> &str {
        &self.detail
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

    /// A budget refused the call because one of its caps is reached: nothing
    /// was sent, and a run that stops here can resume once the cap is raised.
    ///
    /// ```
    /// use toolnexus::classifier::{ClassifierError, ErrorKind};
    /// let e = ClassifierError::from_message(ErrorKind::CapReached, "not sent: budget: the cost cap is reached");
    /// assert!(e.is_cap_reached() && !e.is_cancelled() && !e.is_retryable());
    /// ```
    pub fn is_cap_reached(&self) -> bool {
        self.kind == ErrorKind::CapReached
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
                .is_some_and(|s| DEFAULT_RETRYABLE_STATUSES.contains(&s)),
            _ => false,
        }
    }
}

impl fmt::Display for ClassifierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(i) = self.state_index {
            write!(f, "state {i}: ")?;
        }
        write!(f, "{}: {}", self.scope.as_str(), self.detail)
    }
}

impl fmt::Debug for ClassifierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The source is shown by its message only: foreign errors may carry request
        // details we do not control, and the message was built without secrets.
        let mut d = f.debug_struct("ClassifierError");
        d.field("kind", &self.kind)
            .field("message", &self.to_string());
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

/// Every message the crate builds, in one place: the texts are API.
pub(crate) mod msg {
    use std::fmt::Display;
    use std::time::Duration;

    use super::{ClassifierError, ErrorKind, Scope};

    fn c(kind: ErrorKind, detail: String) -> ClassifierError {
        ClassifierError::classifier(kind, detail)
    }

    /// `POST <endpoint>: ` when the endpoint is known.
    fn at(endpoint: Option<&str>) -> String {
        endpoint.map_or_else(String::new, |e| format!("POST {e}: "))
    }

    pub(crate) fn config(text: impl Display) -> ClassifierError {
        c(ErrorKind::Config, text.to_string())
    }

    pub(crate) fn scoped_config(scope: Scope, text: impl Display) -> ClassifierError {
        ClassifierError::scoped(ErrorKind::Config, scope, text.to_string())
    }

    /// A style's missing ingredient: `style "custom" requires Evaluate`.
    pub(crate) fn requires(style: &str, field: &str) -> ClassifierError {
        config(format!("style {style:?} requires {field}"))
    }

    pub(crate) fn custom_both() -> ClassifierError {
        config("style \"custom\" takes Evaluate or Evaluator, not both")
    }

    pub(crate) fn unknown_kind(name: &str) -> ClassifierError {
        let all: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        config(format!(
            "unknown error kind {name:?} (want {})",
            all.join("|")
        ))
    }

    pub(crate) fn question(key: &str, text: impl Display) -> ClassifierError {
        c(
            ErrorKind::InvalidQuestion,
            format!("question {key:?}: {text}"),
        )
    }

    /// A question whose every text is blank: `needs` says what it needs.
    pub(crate) fn nothing_to_read(key: &str, needs: &str) -> ClassifierError {
        question(key, format!("{needs}: there is nothing to read"))
    }

    pub(crate) fn duplicate_question(name: &str) -> ClassifierError {
        c(
            ErrorKind::InvalidQuestion,
            format!("duplicate question name {name:?}"),
        )
    }

    pub(crate) fn no_questions() -> ClassifierError {
        c(
            ErrorKind::InvalidQuestion,
            "no questions to ask (the question set is empty)".into(),
        )
    }

    pub(crate) fn no_states() -> ClassifierError {
        c(
            ErrorKind::InvalidQuestion,
            "evaluate_batch needs at least one state".into(),
        )
    }

    pub(crate) fn decode(text: impl Display) -> ClassifierError {
        c(ErrorKind::Decode, text.to_string())
    }

    /// `e` reads `has the key "k" twice at line L column C`.
    pub(crate) fn duplicate_key(what: &str, e: &serde_json::Error) -> ClassifierError {
        decode(format!("{what} {e}"))
    }

    pub(crate) fn answer(key: &str, text: impl Display) -> ClassifierError {
        c(ErrorKind::Decode, format!("answer {key:?}: {text}"))
    }

    pub(crate) fn incoherent(key: &str, text: impl Display) -> ClassifierError {
        c(ErrorKind::Incoherent, format!("answer {key:?}: {text}"))
    }

    pub(crate) fn missing_answer(key: &str) -> ClassifierError {
        c(
            ErrorKind::MissingAnswer,
            format!("no answer {key:?} in this decision"),
        )
    }

    pub(crate) fn wrong_type(key: &str, got: &str, want: &str) -> ClassifierError {
        c(
            ErrorKind::WrongType,
            format!("answer {key:?} is a {got} answer, not {want}"),
        )
    }

    pub(crate) fn cancelled() -> ClassifierError {
        scoped_cancelled(Scope::Classifier)
    }

    pub(crate) fn scoped_cancelled(scope: Scope) -> ClassifierError {
        ClassifierError::scoped(ErrorKind::Cancelled, scope, "context canceled")
    }

    pub(crate) fn static_miss() -> ClassifierError {
        c(
            ErrorKind::StaticMiss,
            "static: no recorded decision for this request+state".into(),
        )
    }

    pub(crate) fn tape_miss(call_name: &str) -> ClassifierError {
        ClassifierError::scoped(
            ErrorKind::TapeMiss,
            Scope::Tape,
            format!("no recorded decision for call {call_name:?}"),
        )
    }

    pub(crate) fn asset(name: &str, text: impl Display) -> ClassifierError {
        c(
            ErrorKind::InvalidQuestion,
            format!("asset {name:?}: {text}"),
        )
    }

    pub(crate) fn unsupported(style: &str, what: impl Display) -> ClassifierError {
        c(
            ErrorKind::Unsupported,
            format!("style {style:?} cannot use {what}"),
        )
    }

    pub(crate) fn custom(text: impl Display) -> ClassifierError {
        c(ErrorKind::Custom, format!("custom: {text}"))
    }

    // The transport's messages: `[POST <endpoint>: ]…`.

    pub(crate) fn http(
        scope: Scope,
        endpoint: Option<&str>,
        status: u16,
        cause: impl Display,
    ) -> ClassifierError {
        ClassifierError::scoped(
            ErrorKind::Http,
            scope,
            format!("{}HTTP {status}: {cause}", at(endpoint)),
        )
    }

    pub(crate) fn timeout(
        scope: Scope,
        endpoint: Option<&str>,
        after: Duration,
    ) -> ClassifierError {
        ClassifierError::scoped(
            ErrorKind::Timeout,
            scope,
            format!(
                "{}request timeout after {}ms",
                at(endpoint),
                after.as_millis()
            ),
        )
    }

    pub(crate) fn too_large(scope: Scope, endpoint: Option<&str>, limit: usize) -> ClassifierError {
        ClassifierError::scoped(
            ErrorKind::ResponseTooLarge,
            scope,
            format!("{}response body exceeds {limit} bytes", at(endpoint)),
        )
    }

    pub(crate) fn transport(scope: Scope, endpoint: &str, what: impl Display) -> ClassifierError {
        ClassifierError::scoped(
            ErrorKind::Transport,
            scope,
            format!("POST {endpoint}: {what}"),
        )
    }

    pub(crate) fn reply_decode(
        scope: Scope,
        endpoint: &str,
        text: impl Display,
    ) -> ClassifierError {
        ClassifierError::scoped(ErrorKind::Decode, scope, format!("POST {endpoint}: {text}"))
    }

    pub(crate) fn bad_endpoint(scope: Scope, shown: &str, e: impl Display) -> ClassifierError {
        scoped_config(scope, format!("base_url {shown:?} is not a valid URL: {e}"))
    }

    pub(crate) fn bad_header_name(scope: Scope, name: &str) -> ClassifierError {
        scoped_config(
            scope,
            format!("header name {name:?} is not a valid HTTP header name"),
        )
    }

    pub(crate) fn bad_header_value(scope: Scope, name: &str) -> ClassifierError {
        scoped_config(
            scope,
            format!("header {name:?} does not expand to a valid header value"),
        )
    }

    pub(crate) fn bad_key_value(scope: Scope, env: &str) -> ClassifierError {
        scoped_config(
            scope,
            format!("the API key in ${env} is not a valid header value"),
        )
    }

    #[cfg(not(feature = "http"))]
    pub(crate) fn needs_http(style: &str) -> ClassifierError {
        config(format!(
            "style {style:?} needs the crate's \"http\" feature (built without it)"
        ))
    }

    pub(crate) fn http_client_setting(text: impl Display) -> ClassifierError {
        config(format!("http client: {text}"))
    }

    pub(crate) fn not_http(scope: Scope, shown: &str) -> ClassifierError {
        scoped_config(scope, format!("base_url {shown:?} is not an http(s) URL"))
    }

    pub(crate) fn http_client(scope: Scope) -> ClassifierError {
        scoped_config(scope, "cannot build the HTTP client")
    }

    // The Llm style's messages.

    pub(crate) fn llm_refused(text: &str) -> ClassifierError {
        decode(format!("llm: the model refused: {text}"))
    }

    pub(crate) fn llm_truncated(stop_field: &str, reason: &str) -> ClassifierError {
        decode(format!(
            "llm: reply was cut off at the token limit ({stop_field} {reason:?})"
        ))
    }

    pub(crate) fn llm_no_object() -> ClassifierError {
        decode("llm: reply holds no JSON object")
    }

    pub(crate) fn llm_bad_object(e: &serde_json::Error) -> String {
        format!("llm: reply's JSON object does not parse: {e}")
    }

    pub(crate) fn llm_no_logprobs(key: &str) -> ClassifierError {
        decode(format!(
            "llm: logprobs: the reply for question {key:?} has no log-probabilities \
             (does the server support \"logprobs\"?)"
        ))
    }

    pub(crate) fn llm_no_answer_token(key: &str, labels: &str) -> ClassifierError {
        decode(format!(
            "llm: logprobs: the reply for question {key:?} gives no probability to any answer token ({labels})"
        ))
    }

    // Warnings (logged, never returned).

    pub(crate) fn degenerate(key: &str, why: &str) -> String {
        format!(
            "classifier: question {key:?}: degenerate choice criteria: {why}; \
             the model can only rank these options at chance"
        )
    }

    pub(crate) fn dropped_answer(key: &str) -> String {
        format!("classifier: answer {key:?} answers no question that was asked; dropped")
    }

    // Composition (`toolnexus::compose`).

    /// `fallback: all <n> backends unavailable: [1] <detail>; …; [n] <detail>`,
    /// with the kind, status, Retry-After and request id of `last`, which is
    /// also its source.
    pub(crate) fn fallback_exhausted(
        earlier: &[ClassifierError],
        last: ClassifierError,
    ) -> ClassifierError {
        let listed: Vec<String> = earlier
            .iter()
            .chain(std::iter::once(&last))
            .enumerate()
            .map(|(i, e)| format!("[{}] {}", i + 1, e.detail()))
            .collect();
        let mut e = c(
            last.kind,
            format!(
                "fallback: all {} backends unavailable: {}",
                listed.len(),
                listed.join("; ")
            ),
        );
        e.status = last.status;
        e.retry_after = last.retry_after;
        e.request_id = last.request_id.clone();
        e.with_source(last)
    }
}
