//! Connections: the accept loop and the bounds on every connection.
//!
//! - At most `max_connections` are open at once; one beyond it is answered
//!   `529 overloaded_error` (if the socket takes it at once) and closed, never
//!   queued.
//! - A connection waiting for a request that has sent nothing for
//!   `idle_timeout` is closed (fresh and keep-alive connections alike).
//! - Once the first byte of a request head has arrived, the whole head must
//!   arrive within `header_timeout`, or the connection is closed.
//! - The body's deadline is the handler's (`--body-timeout`, a 408).
//! - The errors the HTTP layer answers by itself before any handler runs (400
//!   for a broken head, 414, 431 for headers too large) get the wire error body
//!   like every other error (see [`Tracked`]).
//! - On shutdown the listener is closed, idle connections are closed, requests
//!   in flight may finish for `shutdown_grace`; whatever is still open then is
//!   closed.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The bounds on connections (`serve --max-connections`, `--header-timeout`,
/// `--idle-timeout`, `--shutdown-grace`).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_connections: usize,
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    pub shutdown_grace: Duration,
}

/// What the server says on its own, outside any handler.
pub trait Wire: Send + Sync + 'static {
    /// The whole response (head and wire error body) replacing one the HTTP
    /// layer wrote by itself with this status and no body; `None` keeps it.
    fn automatic(&self, status: u16) -> Option<Vec<u8>>;
    /// The response to a connection beyond the cap.
    fn over_capacity(&self, limit: usize) -> Vec<u8>;
    /// One line for the server's log.
    fn log(&self, line: &str);
}

/// How the serving ended.
pub struct Stopped {
    /// Connections still open when the grace ran out (closed then).
    pub cut: usize,
}

/// Serves `router` on `listener` until `shutdown` resolves, then drains.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    wire: Arc<dyn Wire>,
    shutdown: impl Future<Output = ()>,
) -> Stopped {
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let stop = CancellationToken::new();
    let mut conns = JoinSet::new();
    let mut refusals = Throttle::default();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
                        let _ = stream.try_write(&wire.over_capacity(limits.max_connections));
                        drop(stream);
                        if refusals.due() {
                            wire.log(&format!(
                                "serve: {} connections open (--max-connections {}): refusing new ones",
                                limits.max_connections, limits.max_connections
                            ));
                        }
                        continue;
                    };
                    let _ = stream.set_nodelay(true);
                    let (router, wire, stop) = (router.clone(), Arc::clone(&wire), stop.clone());
                    conns.spawn(async move {
                        connection(stream, router, limits, wire, stop).await;
                        drop(slot);
                    });
                }
                Err(e) => {
                    // Out of file descriptors and the like: wait, never spin or stop.
                    if refusals.due() {
                        wire.log(&format!("serve: cannot accept a connection: {e}"));
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
        }
    }
    drop(listener);
    stop.cancel();
    let drained = tokio::time::timeout(limits.shutdown_grace, async {
        while conns.join_next().await.is_some() {}
    })
    .await
    .is_ok();
    if drained {
        return Stopped { cut: 0 };
    }
    let cut = conns.len();
    conns.abort_all();
    while conns.join_next().await.is_some() {}
    Stopped { cut }
}

/// At most one log line a second for a repeated condition.
#[derive(Default)]
struct Throttle(Option<Instant>);

impl Throttle {
    fn due(&mut self) -> bool {
        let now = Instant::now();
        match self.0 {
            Some(last) if now.duration_since(last) < Duration::from_secs(1) => false,
            _ => {
                self.0 = Some(now);
                true
            }
        }
    }
}

/// No first byte yet.
const NONE: u64 = u64::MAX;

/// What the watchdog of one connection reads.
struct Activity {
    origin: Instant,
    /// Milliseconds from `origin` to when the connection began waiting for
    /// its next request (opened, or the last response was produced).
    waiting_since: AtomicU64,
    /// Milliseconds from `origin` to the first byte received since then.
    first_byte: AtomicU64,
    /// Requests handed to the router and not yet answered.
    in_flight: AtomicUsize,
    /// Woken when a first byte moves the deadline closer.
    moved: tokio::sync::Notify,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            origin: Instant::now(),
            waiting_since: AtomicU64::new(0),
            first_byte: AtomicU64::new(NONE),
            in_flight: AtomicUsize::new(0),
            moved: tokio::sync::Notify::new(),
        }
    }

    fn now_ms(&self) -> u64 {
        self.origin.elapsed().as_millis() as u64
    }

    fn received(&self) {
        if self.first_byte.load(Ordering::Relaxed) == NONE
            && self
                .first_byte
                .compare_exchange(NONE, self.now_ms(), Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()
        {
            self.moved.notify_one();
        }
    }

    fn begin(self: &Arc<Self>) -> Busy {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        Busy(Arc::clone(self))
    }

    /// When the connection is due to be closed, unless something happens
    /// first; `None` while a request is in flight.
    fn deadline(&self, limits: &Limits) -> Option<Instant> {
        if self.in_flight.load(Ordering::SeqCst) > 0 {
            return None;
        }
        let at = |ms: u64| self.origin + Duration::from_millis(ms);
        match self.first_byte.load(Ordering::SeqCst) {
            NONE => Some(at(self.waiting_since.load(Ordering::SeqCst)) + limits.idle_timeout),
            first => Some(at(first) + limits.header_timeout),
        }
    }
}

/// A request in flight on a connection; when it is answered the connection
/// waits for the next one.
struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        let a = &self.0;
        a.first_byte.store(NONE, Ordering::SeqCst);
        a.waiting_since.store(a.now_ms(), Ordering::SeqCst);
        a.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One connection, closed when its watchdog says so or the server stops.
async fn connection(
    stream: TcpStream,
    router: Router,
    limits: Limits,
    wire: Arc<dyn Wire>,
    stop: CancellationToken,
) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Tracked {
        inner: stream,
        activity: Arc::clone(&activity),
        wire,
        pending: Vec::new(),
        sent: 0,
    });
    let tower = TowerToHyperService::new(router);
    let tracked = Arc::clone(&activity);
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let busy = tracked.begin();
        let call = hyper::service::Service::call(&tower, req.map(axum::body::Body::new));
        async move {
            let out = call.await;
            drop(busy);
            out
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    // The watchdog below bounds heads and idle time; the HTTP layer's own
    // header timer would also count idle keep-alive time as head time.
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(None)
        .keep_alive(true);
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    let mut draining = false;
    // While a request is in flight, look again this often.
    let recheck = limits.idle_timeout.min(limits.header_timeout);
    loop {
        let wake = activity
            .deadline(&limits)
            .unwrap_or_else(|| Instant::now() + recheck);
        tokio::select! {
            _ = conn.as_mut() => break,
            _ = activity.moved.notified() => {}
            _ = tokio::time::sleep_until(wake) => {
                if activity.deadline(&limits).is_some_and(|d| d <= Instant::now()) {
                    break;
                }
            }
            _ = stop.cancelled(), if !draining => {
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// The socket of one connection: every byte received moves the watchdog, and
/// a bodiless error response the HTTP layer writes by itself (no request id:
/// no handler produced it) is replaced by the [`Wire`]'s.
struct Tracked {
    inner: TcpStream,
    activity: Arc<Activity>,
    wire: Arc<dyn Wire>,
    /// A replacement response still to be sent, and how much of it was.
    pending: Vec<u8>,
    sent: usize,
}

impl Tracked {
    /// Sends what is left of a replacement response.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.pending.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.pending.clear();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }
}

/// The status of a response head the HTTP layer wrote by itself: one with an
/// empty body and without the request id every handler's answer carries.
pub fn automatic_status(buf: &[u8]) -> Option<u16> {
    let rest = buf.strip_prefix(b"HTTP/1.1 ")?;
    let status: u16 = std::str::from_utf8(rest.get(..3)?).ok()?.parse().ok()?;
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    let bodiless =
        head.contains("\r\ncontent-length: 0\r\n") || head.ends_with("\r\ncontent-length: 0");
    let ours = head.contains(&format!("\r\n{}:", super::REQUEST_ID_HEADER));
    (bodiless && !ours && (400..500).contains(&status)).then_some(status)
}

impl AsyncRead for Tracked {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        let before = buf.filled().len();
        let out = Pin::new(&mut me.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            me.activity.received();
        }
        out
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        ready!(me.poll_pending(cx))?;
        if let Some(reply) = automatic_status(buf).and_then(|s| me.wire.automatic(s)) {
            me.pending = reply;
            me.sent = 0;
            // The replacement stands for all of it; it goes out on flush.
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut me.inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        ready!(me.poll_pending(cx))?;
        Pin::new(&mut me.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        ready!(me.poll_pending(cx))?;
        Pin::new(&mut me.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bodiless_heads_without_a_request_id_are_automatic() {
        let auto =
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        assert_eq!(automatic_status(auto), Some(431));
        let bad = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(automatic_status(bad), Some(400));
        let ours =
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nx-typesafe-request-id: req_1\r\n\r\n";
        assert_eq!(automatic_status(ours), None);
        let with_body =
            b"HTTP/1.1 422 Unprocessable Entity\r\ncontent-length: 12\r\n\r\n{\"detail\":1}";
        assert_eq!(automatic_status(with_body), None);
        assert_eq!(
            automatic_status(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"),
            None
        );
        assert_eq!(automatic_status(b"{\"detail\""), None);
        assert_eq!(automatic_status(b"HTTP/1.1 43"), None);
    }
}
