//! What travels with every call: [`EvalContext`] (cancellation and a call name)
//! and [`BoxFuture`], the future closures handed to this crate return. A leaf.

use std::future::Future;
use std::pin::Pin;

use tokio_util::sync::CancellationToken;

/// Per-call context: a cancellation token and a call name (used by metrics,
/// tracing and tapes).
///
/// ```
/// use toolnexus::classifier::EvalContext;
///
/// let ctx = EvalContext::default().with_call_name("triage");
/// ctx.cancel.cancel(); // an evaluate using ctx now returns `classifier: context canceled`
/// assert_eq!(ctx.call_name, "triage");
/// ```
#[derive(Debug, Clone, Default)]
pub struct EvalContext {
    /// Cancel to abandon the call promptly, also during a retry backoff.
    pub cancel: CancellationToken,
    /// A name for this call site.
    pub call_name: String,
}

impl EvalContext {
    /// A context with a fresh token and no name.
    ///
    /// ```
    /// let ctx = toolnexus::classifier::EvalContext::new();
    /// assert!(ctx.call_name.is_empty());
    /// ```
    pub fn new() -> EvalContext {
        EvalContext::default()
    }

    /// Sets the call name.
    ///
    /// ```
    /// let ctx = toolnexus::classifier::EvalContext::new().with_call_name("refund-check");
    /// assert_eq!(ctx.call_name, "refund-check");
    /// ```
    pub fn with_call_name(mut self, name: impl Into<String>) -> EvalContext {
        self.call_name = name.into();
        self
    }

    /// Uses `cancel` as this context's token.
    ///
    /// ```
    /// use tokio_util::sync::CancellationToken;
    /// let parent = CancellationToken::new();
    /// let ctx = toolnexus::classifier::EvalContext::new().with_cancel(parent.child_token());
    /// parent.cancel();
    /// assert!(ctx.cancel.is_cancelled());
    /// ```
    pub fn with_cancel(mut self, cancel: CancellationToken) -> EvalContext {
        self.cancel = cancel;
        self
    }
}

/// A pinned, boxed, `Send + 'static` future: what closures handed to this crate return.
///
/// ```
/// use toolnexus::client::BoxFuture;
///
/// fn answer() -> BoxFuture<u32> {
///     Box::pin(async { 42 })
/// }
/// # let _ = answer;
/// ```
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;
