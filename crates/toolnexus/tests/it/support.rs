//! A scripted HTTP/1.1 server on 127.0.0.1:0 for the integration tests: it
//! records every request and answers each from a script of [`Reply`]s (the last
//! one repeats), or from a handler that sees each request. Real sockets, real
//! parsing: the HTTP client is never mocked.
//!
//! Beyond complete answers it injects faults: a reset (RST through a zero
//! linger), a stall before or inside the headers, a stall or a reset or a close
//! inside the body, bytes that are not HTTP, and an endless chunked body. What
//! the server could send before the client hung up is counted in [`Observed`].

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Header names lower-cased.
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
}

impl Request {
    /// The body parsed as JSON (`null` when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }

    pub fn body_str(&self) -> &str {
        std::str::from_utf8(&self.body).expect("utf-8 body")
    }
}

/// What the server does with one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A complete response.
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// Read the request, then never answer.
    Stall,
    /// Read the request, then close the connection without a byte.
    Close,
    /// Send headers and part of the body, then stall.
    StallMidBody {
        status: u16,
        declared: usize,
        sent: Vec<u8>,
    },
    /// Send bytes that are not HTTP.
    Garbage(Vec<u8>),
    /// A chunked body of `total` bytes, sent in 64 KiB chunks (no Content-Length).
    Chunked { total: usize },
    /// Read the request, then reset the connection (RST, through `SO_LINGER` 0).
    Reset,
    /// Send these bytes of a response head (no blank line ending it), then stall.
    StallInHead(Vec<u8>),
    /// Send headers declaring `declared` body bytes and `sent` of them, then reset.
    ResetMidBody {
        status: u16,
        declared: usize,
        sent: Vec<u8>,
    },
    /// Send headers declaring `declared` body bytes and `sent` of them, then close
    /// cleanly (FIN): a body truncated by the peer.
    CloseMidBody {
        status: u16,
        declared: usize,
        sent: Vec<u8>,
    },
}

impl Reply {
    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Reply {
        Reply::Status {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.into(),
        }
    }

    /// A complete JSON response from a `Value`.
    pub fn value(status: u16, body: serde_json::Value) -> Reply {
        Reply::json(status, body.to_string())
    }

    pub fn with_header(self, name: &str, value: &str) -> Reply {
        match self {
            Reply::Status {
                status,
                mut headers,
                body,
            } => {
                headers.push((name.into(), value.into()));
                Reply::Status {
                    status,
                    headers,
                    body,
                }
            }
            other => other,
        }
    }
}

/// Decides the reply to the request with this arrival index (from 0).
pub type Handler = Arc<dyn Fn(usize, &Request) -> Reply + Send + Sync>;

/// What the server saw of its streamed bodies.
#[derive(Debug, Default)]
pub struct Observed {
    /// Body bytes of [`Reply::Chunked`] answers written to the socket.
    pub chunked_bytes_sent: AtomicUsize,
    /// Chunked bodies whose write failed because the client went away.
    pub chunked_hung_up: AtomicUsize,
    /// Chunked bodies sent to the end.
    pub chunked_completed: AtomicUsize,
}

/// A running scripted server. Dropping it stops accepting.
pub struct Server {
    pub addr: std::net::SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    observed: Arc<Observed>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    /// Starts a server answering requests in turn from `script`; the last reply repeats.
    pub async fn start(script: Vec<Reply>) -> Server {
        assert!(!script.is_empty(), "a script needs at least one reply");
        Server::start_with(move |i, _| script[i.min(script.len() - 1)].clone()).await
    }

    /// Starts a server whose handler picks each reply from the arrival index and
    /// the request itself.
    pub async fn start_with(
        handler: impl Fn(usize, &Request) -> Reply + Send + Sync + 'static,
    ) -> Server {
        let handler: Handler = Arc::new(handler);
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().unwrap();
        let requests: Arc<Mutex<Vec<Request>>> = Arc::default();
        let recorded = requests.clone();
        let observed: Arc<Observed> = Arc::default();
        let seen = observed.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    return;
                };
                let recorded = recorded.clone();
                let handler = handler.clone();
                let seen = seen.clone();
                tokio::spawn(async move {
                    let _ = sock.set_nodelay(true);
                    serve_connection(sock, recorded, handler, seen).await;
                });
            }
        });
        Server {
            addr,
            requests,
            observed,
            task,
        }
    }

    /// What the server saw of its streamed bodies.
    pub fn observed(&self) -> &Observed {
        &self.observed
    }

    /// The base URL to hand a client: `http://127.0.0.1:<port>/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

async fn serve_connection(
    mut sock: TcpStream,
    recorded: Arc<Mutex<Vec<Request>>>,
    handler: Handler,
    observed: Arc<Observed>,
) {
    loop {
        let Some(req) = read_request(&mut sock).await else {
            return;
        };
        let (index, req) = {
            let mut r = recorded.lock().unwrap();
            r.push(req.clone());
            (r.len() - 1, req)
        };
        let reply = handler(index, &req);
        match reply {
            Reply::Status {
                status,
                headers,
                body,
            } => {
                let mut head = format!("HTTP/1.1 {status} X\r\ncontent-length: {}\r\n", body.len());
                for (k, v) in headers {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                // One write: a head and body sent apart meet the peer's delayed ACK.
                let mut frame = head.into_bytes();
                frame.extend_from_slice(&body);
                if sock.write_all(&frame).await.is_err() {
                    return;
                }
            }
            Reply::Stall => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                return;
            }
            Reply::Close => return,
            Reply::StallMidBody {
                status,
                declared,
                sent,
            } => {
                let head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {declared}\r\n\r\n"
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(&sent).await;
                tokio::time::sleep(Duration::from_secs(3600)).await;
                return;
            }
            Reply::Garbage(bytes) => {
                let _ = sock.write_all(&bytes).await;
                let _ = sock.shutdown().await;
                return;
            }
            Reply::Chunked { total } => {
                let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
                if sock.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let chunk = vec![b' '; 64 * 1024];
                let mut left = total;
                while left > 0 {
                    let n = left.min(chunk.len());
                    let frame = format!("{n:x}\r\n");
                    if sock.write_all(frame.as_bytes()).await.is_err()
                        || sock.write_all(&chunk[..n]).await.is_err()
                        || sock.write_all(b"\r\n").await.is_err()
                    {
                        observed.chunked_hung_up.fetch_add(1, Ordering::SeqCst);
                        return;
                    }
                    observed.chunked_bytes_sent.fetch_add(n, Ordering::SeqCst);
                    left -= n;
                }
                if sock.write_all(b"0\r\n\r\n").await.is_err() {
                    observed.chunked_hung_up.fetch_add(1, Ordering::SeqCst);
                    return;
                }
                observed.chunked_completed.fetch_add(1, Ordering::SeqCst);
            }
            Reply::Reset => {
                reset(sock);
                return;
            }
            Reply::StallInHead(bytes) => {
                let _ = sock.write_all(&bytes).await;
                tokio::time::sleep(Duration::from_secs(3600)).await;
                return;
            }
            Reply::ResetMidBody {
                status,
                declared,
                sent,
            } => {
                let _ = sock.write_all(&body_head(status, declared)).await;
                let _ = sock.write_all(&sent).await;
                let _ = sock.flush().await;
                reset(sock);
                return;
            }
            Reply::CloseMidBody {
                status,
                declared,
                sent,
            } => {
                let _ = sock.write_all(&body_head(status, declared)).await;
                let _ = sock.write_all(&sent).await;
                let _ = sock.shutdown().await;
                return;
            }
        }
    }
}

fn body_head(status: u16, declared: usize) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {declared}\r\n\r\n"
    )
    .into_bytes()
}

/// Drops the socket with a zero linger, so the kernel answers with RST, not FIN.
fn reset(sock: TcpStream) {
    let _ = sock.set_zero_linger();
    drop(sock);
}

async fn read_request(sock: &mut TcpStream) -> Option<Request> {
    let mut buf = Vec::with_capacity(4096);
    let mut tmp = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let path = first.next()?.to_string();
    let mut headers = BTreeMap::new();
    for line in lines {
        if let Some((k, v)) = line.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let len: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < len {
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&tmp[..n]);
    }
    body.truncate(len);
    Some(Request {
        method,
        path,
        headers,
        body,
    })
}

/// Sets an environment variable for the test process. Each test uses its own
/// distinctive variable name, so tests running in parallel never share one.
pub fn set_env(name: &str, value: &str) {
    // SAFETY: every caller passes a name no other test reads or writes.
    unsafe { std::env::set_var(name, value) };
}

/// A base URL on which nothing listens: connecting fails at once.
pub async fn closed_base_url() -> String {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    format!("http://{addr}/v1")
}
