//! [`Server`] and its [`Builder`]: the fake on the caller's runtime or on a
//! thread of its own, the requests it captured, and what it [`Observed`].

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;

use super::conn::accept_loop;
use super::observed::{Handler, Observed, Shared};
use super::reply::Reply;
use super::request::Request;

/// How the server's accept loop runs, and so how it is stopped.
enum Runner {
    /// A task on the caller's runtime.
    Task(tokio::task::AbortHandle),
    /// A runtime on a thread of its own, stopped when the sender drops.
    Thread {
        _stop: tokio::sync::oneshot::Sender<()>,
    },
}

/// A running fake server on `127.0.0.1`. Dropping it stops it and closes every
/// connection it holds open.
///
/// ```
/// use toolnexus::testing::{Reply, Server};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = Server::start([Reply::json(200, r#"{"data": []}"#)]).await;
/// assert!(server.base_url().starts_with("http://127.0.0.1:"));
/// let r = reqwest::get(format!("{}/models", server.base_url())).await.unwrap();
/// assert_eq!(r.text().await.unwrap(), r#"{"data": []}"#);
/// assert_eq!(server.requests()[0].path, "/v1/models");
/// # }
/// ```
pub struct Server {
    addr: SocketAddr,
    shared: Arc<Shared>,
    runner: Runner,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.addr)
            .field("requests", &self.count())
            .finish_non_exhaustive()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // A thread runner stops when its sender drops with the server.
        if let Runner::Task(task) = &self.runner {
            task.abort();
        }
    }
}

impl Server {
    /// Starts a server on the current Tokio runtime that answers requests in
    /// turn from `script`; its last reply repeats.
    ///
    /// # Panics
    ///
    /// When `script` is empty, or outside a Tokio runtime.
    ///
    /// ```
    /// use toolnexus::testing::{Reply, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::json(503, "{}"), Reply::json(200, "{}")]).await;
    /// let statuses: Vec<u16> = futures::future::join_all(
    ///     (0..3).map(|_| async { reqwest::get(server.url("/")).await.unwrap().status().as_u16() }),
    /// )
    /// .await;
    /// let mut sorted = statuses.clone();
    /// sorted.sort();
    /// assert_eq!(sorted, [200, 200, 503], "the last reply repeats");
    /// # }
    /// ```
    pub async fn start(script: impl IntoIterator<Item = Reply>) -> Server {
        Server::builder().script(script).start().await
    }

    /// Starts a server on the current Tokio runtime whose `handler` picks each
    /// reply from the request's arrival index (from 0) and the request itself.
    ///
    /// The request is recorded before the handler runs. A handler that panics
    /// drops that connection.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    ///
    /// ```
    /// use toolnexus::testing::{Reply, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start_with(|i, req| {
    ///     if req.header("authorization").is_none() {
    ///         Reply::json(401, r#"{"detail": "no key"}"#)
    ///     } else {
    ///         Reply::json(200, format!(r#"{{"call": {i}}}"#))
    ///     }
    /// })
    /// .await;
    /// let http = reqwest::Client::new();
    /// let anonymous = http.get(server.url("/")).send().await.unwrap();
    /// assert_eq!(anonymous.status(), 401);
    /// let keyed = http.get(server.url("/")).bearer_auth("k").send().await.unwrap();
    /// assert_eq!(keyed.text().await.unwrap(), r#"{"call": 1}"#);
    /// # }
    /// ```
    pub async fn start_with(
        handler: impl Fn(usize, &Request) -> Reply + Send + Sync + 'static,
    ) -> Server {
        Server::builder().handler(handler).start().await
    }

    /// A [`Builder`], for a server on a thread of its own or for options beyond
    /// a script or a handler.
    ///
    /// ```
    /// use toolnexus::testing::{Reply, Server};
    ///
    /// // No runtime here: the server brings its own.
    /// let server = Server::builder()
    ///     .script([Reply::json(200, "{}")])
    ///     .start_on_thread();
    /// assert_eq!(server.count(), 0);
    /// ```
    pub fn builder() -> Builder {
        Builder { handler: None }
    }

    /// The address the server listens on: `127.0.0.1` and a free port.
    ///
    /// ```
    /// # use toolnexus::testing::{Reply, Server};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::Close]).await;
    /// assert!(server.addr().ip().is_loopback());
    /// assert_ne!(server.addr().port(), 0);
    /// # }
    /// ```
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL to hand a System One classifier or a chat client:
    /// `http://127.0.0.1:<port>/v1`.
    ///
    /// ```
    /// # use toolnexus::testing::{Reply, Server};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::Close]).await;
    /// assert_eq!(server.base_url(), format!("http://{}/v1", server.addr()));
    /// # }
    /// ```
    pub fn base_url(&self) -> String {
        self.url("/v1")
    }

    /// The URL of `path` (which starts with `/`) on this server.
    ///
    /// ```
    /// # use toolnexus::testing::{Reply, Server};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::Close]).await;
    /// assert_eq!(server.url("/health"), format!("http://{}/health", server.addr()));
    /// # }
    /// ```
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Every request read so far, in arrival order.
    ///
    /// ```
    /// # use toolnexus::testing::{Reply, Server};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::json(200, "{}")]).await;
    /// let http = reqwest::Client::new();
    /// http.post(server.url("/one")).send().await.unwrap();
    /// http.post(server.url("/two")).send().await.unwrap();
    /// let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    /// assert_eq!(paths, ["/one", "/two"]);
    /// # }
    /// ```
    pub fn requests(&self) -> Vec<Request> {
        self.shared.requests().clone()
    }

    /// How many requests were read so far: attempts, retries included, whatever
    /// they were answered with.
    ///
    /// ```
    /// # use toolnexus::testing::{Reply, Server};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::Reset]).await;
    /// assert!(reqwest::get(server.url("/")).await.is_err());
    /// assert_eq!(server.count(), 1);
    /// # }
    /// ```
    pub fn count(&self) -> usize {
        self.shared.requests().len()
    }

    /// What the server saw of its connections and streamed bodies.
    ///
    /// ```
    /// # use toolnexus::testing::{Reply, Server};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::json(200, "{}")]).await;
    /// assert_eq!(server.observed().connections(), 0);
    /// # }
    /// ```
    pub fn observed(&self) -> &Observed {
        &self.shared.observed
    }
}

/// Configures a [`Server`]: what it answers, and where it runs.
///
/// ```
/// use toolnexus::testing::{Reply, Server};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = Server::builder().script([Reply::json(200, "{}")]).start().await;
/// assert_eq!(reqwest::get(server.url("/")).await.unwrap().status(), 200);
/// # }
/// ```
#[must_use = "a builder does nothing until started"]
pub struct Builder {
    handler: Option<Handler>,
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("answers", &self.handler.is_some())
            .finish_non_exhaustive()
    }
}

impl Builder {
    /// Answers requests in turn from `script`; its last reply repeats. Replaces
    /// any handler set before.
    ///
    /// # Panics
    ///
    /// When `script` is empty.
    ///
    /// ```
    /// # use toolnexus::testing::{Reply, Server};
    /// let builder = Server::builder().script([Reply::Stall, Reply::json(200, "{}")]);
    /// # let _ = builder;
    /// ```
    pub fn script(self, script: impl IntoIterator<Item = Reply>) -> Builder {
        let script: Vec<Reply> = script.into_iter().collect();
        assert!(!script.is_empty(), "a script needs at least one reply");
        self.handler(move |i, _| script[i.min(script.len() - 1)].clone())
    }

    /// Answers each request with what `handler` returns for its arrival index
    /// (from 0) and the request. Replaces any script set before.
    ///
    /// ```
    /// # use toolnexus::testing::{Reply, Server};
    /// let builder = Server::builder().handler(|i, _req| Reply::json(200, format!("{i}")));
    /// # let _ = builder;
    /// ```
    pub fn handler(
        mut self,
        handler: impl Fn(usize, &Request) -> Reply + Send + Sync + 'static,
    ) -> Builder {
        self.handler = Some(Arc::new(handler));
        self
    }

    /// Starts the server on the current Tokio runtime.
    ///
    /// # Panics
    ///
    /// When neither a script nor a handler was set, or outside a Tokio runtime.
    ///
    /// ```
    /// # use toolnexus::testing::{Reply, Server};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::builder().script([Reply::json(204, "")]).start().await;
    /// assert_eq!(reqwest::get(server.url("/")).await.unwrap().status(), 204);
    /// # }
    /// ```
    pub async fn start(self) -> Server {
        let handler = self.into_handler();
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("a bound address");
        let shared = Arc::<Shared>::default();
        let task = tokio::spawn(accept_loop(listener, handler, shared.clone()));
        Server {
            addr,
            shared,
            runner: Runner::Task(task.abort_handle()),
        }
    }

    /// Starts the server on a thread of its own, with its own single-threaded
    /// Tokio runtime: for tests without a runtime (a plain `#[test]` driving a
    /// child process), or whose runtime should not drive the server.
    ///
    /// # Panics
    ///
    /// When neither a script nor a handler was set.
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use toolnexus::testing::{Reply, Server};
    ///
    /// let server = Server::builder()
    ///     .script([Reply::json(200, r#"{"ok":true}"#)])
    ///     .start_on_thread();
    /// let mut s = std::net::TcpStream::connect(server.addr()).unwrap();
    /// s.write_all(b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    /// let mut answer = String::new();
    /// s.read_to_string(&mut answer).unwrap();
    /// assert!(answer.starts_with("HTTP/1.1 200 "));
    /// assert!(answer.ends_with(r#"{"ok":true}"#));
    /// assert_eq!(server.requests()[0].path, "/v1/models");
    /// ```
    pub fn start_on_thread(self) -> Server {
        let handler = self.into_handler();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let addr = listener.local_addr().expect("a bound address");
        let shared = Arc::<Shared>::default();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a Tokio runtime for the test server");
        let state = shared.clone();
        std::thread::Builder::new()
            .name(format!("toolnexus-testing-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = TcpListener::from_std(listener).expect("a Tokio listener");
                    let task = tokio::spawn(accept_loop(listener, handler, state));
                    // Resolves when the server handle, and with it the sender, drops.
                    let _ = stopped.await;
                    task.abort();
                });
                // Dropping the runtime here cancels every connection task.
            })
            .expect("spawn the test server thread");
        Server {
            addr,
            shared,
            runner: Runner::Thread { _stop: stop },
        }
    }

    fn into_handler(self) -> Handler {
        self.handler
            .expect("a test server needs a script or a handler (Builder::script, Builder::handler)")
    }
}
