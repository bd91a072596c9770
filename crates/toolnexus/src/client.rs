//! The small chat client the Llm style talks through, and [`BoxFuture`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use crate::classifier::{ClassifierError, Decision, EvalContext, Questions, msg};

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

/// A configured chat-completion client. Cheap to clone.
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

struct ClientInner {
    model: String,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("model", &self.inner.model)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// The model this client asks for.
    pub fn model(&self) -> &str {
        &self.inner.model
    }

    pub(crate) async fn evaluate_questions(
        &self,
        _ctx: &EvalContext,
        _state: &Value,
        _questions: &Questions,
    ) -> Result<Decision, ClassifierError> {
        Err(msg::config("style \"llm\" is not available in this build"))
    }
}
