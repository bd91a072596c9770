//! What the fake server's tasks share: the handler that picks each reply, the
//! requests recorded, and what it [`Observed`] of connections and bodies.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::reply::Reply;
use super::request::Request;

pub(super) type Handler = Arc<dyn Fn(usize, &Request) -> Reply + Send + Sync>;

/// What the [`Server`](super::Server) saw of the connections and streamed bodies it served.
///
/// ```
/// use toolnexus::testing::{Reply, Server};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = Server::start([Reply::Chunked { total: 100_000 }]).await;
/// let body = reqwest::get(server.url("/")).await.unwrap().bytes().await.unwrap();
/// assert_eq!(body.len(), 100_000);
/// let seen = server.observed();
/// assert_eq!(seen.connections(), 1);
/// assert_eq!(seen.chunked_bytes_sent(), 100_000);
/// assert_eq!(seen.chunked_completed(), 1);
/// assert_eq!(seen.chunked_hung_up(), 0);
/// # }
/// ```
#[derive(Debug, Default)]
pub struct Observed {
    pub(super) connections: AtomicUsize,
    pub(super) chunked_bytes_sent: AtomicUsize,
    pub(super) chunked_hung_up: AtomicUsize,
    pub(super) chunked_completed: AtomicUsize,
}

impl Observed {
    /// TCP connections accepted so far.
    ///
    /// ```
    /// use toolnexus::testing::{Reply, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::json(200, "{}")]).await;
    /// let pooled = reqwest::Client::new();
    /// for _ in 0..3 {
    ///     pooled.get(server.url("/")).send().await.unwrap().bytes().await.unwrap();
    /// }
    /// assert_eq!(server.count(), 3);
    /// assert_eq!(server.observed().connections(), 1, "one kept-alive connection");
    /// # }
    /// ```
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Body bytes of [`Reply::Chunked`] answers written to sockets so far.
    ///
    /// ```
    /// # use toolnexus::testing::{Reply, Server};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::Chunked { total: 10 }]).await;
    /// reqwest::get(server.url("/")).await.unwrap().bytes().await.unwrap();
    /// assert_eq!(server.observed().chunked_bytes_sent(), 10);
    /// # }
    /// ```
    pub fn chunked_bytes_sent(&self) -> usize {
        self.chunked_bytes_sent.load(Ordering::SeqCst)
    }

    /// [`Reply::Chunked`] bodies whose writing failed because the client went away.
    ///
    /// ```
    /// use std::time::Duration;
    /// # use toolnexus::testing::{Reply, Server};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::Chunked { total: 1 << 30 }]).await;
    /// let r = reqwest::get(server.url("/")).await.unwrap();
    /// drop(r); // hang up after the head
    /// while server.observed().chunked_hung_up() == 0 {
    ///     tokio::time::sleep(Duration::from_millis(5)).await;
    /// }
    /// assert!(server.observed().chunked_bytes_sent() < 1 << 30);
    /// assert_eq!(server.observed().chunked_completed(), 0);
    /// # }
    /// ```
    pub fn chunked_hung_up(&self) -> usize {
        self.chunked_hung_up.load(Ordering::SeqCst)
    }

    /// [`Reply::Chunked`] bodies written to the end.
    ///
    /// ```
    /// # use toolnexus::testing::{Reply, Server};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::Chunked { total: 10 }]).await;
    /// reqwest::get(server.url("/")).await.unwrap().bytes().await.unwrap();
    /// assert_eq!(server.observed().chunked_completed(), 1);
    /// # }
    /// ```
    pub fn chunked_completed(&self) -> usize {
        self.chunked_completed.load(Ordering::SeqCst)
    }
}

/// State shared by the server's tasks and its handle.
#[derive(Default)]
pub(super) struct Shared {
    requests: Mutex<Vec<Request>>,
    pub(super) observed: Observed,
}

impl Shared {
    pub(super) fn requests(&self) -> MutexGuard<'_, Vec<Request>> {
        // A panicking handler must not hide what was recorded before it.
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
