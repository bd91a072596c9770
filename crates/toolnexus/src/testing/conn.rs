//! One connection of the fake server: read a request head and body, then
//! write the reply or the fault it asks for.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use super::observed::{Handler, Observed, Shared};
use super::reply::Reply;
use super::request::Request;

/// The largest request head the server reads before it drops the connection.
const MAX_HEAD_BYTES: usize = 1024 * 1024;

/// The size of each chunk of a [`Reply::Chunked`] body.
const CHUNK_BYTES: usize = 64 * 1024;

pub(super) async fn accept_loop(listener: TcpListener, handler: Handler, shared: Arc<Shared>) {
    // Owning the connection tasks here means aborting this task ends them all.
    let mut connections = JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let Ok((sock, _)) = listener.accept().await else {
            // Out of descriptors, say: back off instead of spinning.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        shared.observed.connections.fetch_add(1, Ordering::SeqCst);
        let _ = sock.set_nodelay(true);
        connections.spawn(serve_connection(
            Connection::new(sock),
            handler.clone(),
            shared.clone(),
        ));
    }
}

/// What to do with a connection after one reply.
pub(super) enum After {
    KeepOpen,
    Done,
}

async fn serve_connection(mut conn: Connection, handler: Handler, shared: Arc<Shared>) {
    while let Some(req) = conn.read_request().await {
        let close = req
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let index = {
            let mut all = shared.requests();
            all.push(req.clone());
            all.len() - 1
        };
        let reply = handler(index, &req);
        match conn.reply(reply, &shared.observed).await {
            After::KeepOpen if !close => {}
            After::KeepOpen => {
                let _ = conn.sock.shutdown().await;
                return;
            }
            After::Done => return,
        }
    }
}

/// One accepted connection and the bytes read from it but not yet consumed.
struct Connection {
    sock: TcpStream,
    buf: Vec<u8>,
}

impl Connection {
    fn new(sock: TcpStream) -> Connection {
        Connection {
            sock,
            buf: Vec::with_capacity(8192),
        }
    }

    /// Reads more bytes into the buffer, at least `want` of room offered to
    /// one read; `None` at EOF or on an error.
    async fn fill_for(&mut self, want: usize) -> Option<()> {
        self.buf.reserve(want.clamp(8192, 1 << 20));
        match self.sock.read_buf(&mut self.buf).await {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(()),
        }
    }

    /// Reads more bytes into the buffer; `None` at EOF or on an error.
    async fn fill(&mut self) -> Option<()> {
        self.fill_for(8192).await
    }

    /// Takes the first `n` bytes, reading until there are that many: a large
    /// body is read into room for all of it, not copied 8 kB at a time.
    async fn take(&mut self, n: usize) -> Option<Vec<u8>> {
        while self.buf.len() < n {
            self.fill_for(n - self.buf.len()).await?;
        }
        if self.buf.len() == n {
            return Some(std::mem::take(&mut self.buf));
        }
        let rest = self.buf.split_off(n);
        Some(std::mem::replace(&mut self.buf, rest))
    }

    /// Takes bytes up to the next `\r\n` (dropping it).
    async fn line(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(i) = find(&self.buf, b"\r\n") {
                let line = self.buf[..i].to_vec();
                self.buf.drain(..i + 2);
                return Some(line);
            }
            if self.buf.len() > MAX_HEAD_BYTES {
                return None;
            }
            self.fill().await?;
        }
    }

    /// The next request; `None` when the peer closed or sent something else.
    async fn read_request(&mut self) -> Option<Request> {
        let head_end = loop {
            if let Some(i) = find(&self.buf, b"\r\n\r\n") {
                break i;
            }
            if self.buf.len() > MAX_HEAD_BYTES {
                return None;
            }
            self.fill().await?;
        };
        let head = String::from_utf8_lossy(&self.buf[..head_end]).into_owned();
        self.buf.drain(..head_end + 4);
        let mut lines = head.split("\r\n");
        let mut first = lines.next()?.split(' ');
        let method = first.next()?.to_string();
        let path = first.next()?.to_string();
        let mut headers: BTreeMap<String, String> = BTreeMap::new();
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
            headers
                .entry(name)
                .and_modify(|v| {
                    v.push_str(", ");
                    v.push_str(value);
                })
                .or_insert_with(|| value.to_string());
        }
        let chunked = headers
            .get("transfer-encoding")
            .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
        let body = if chunked {
            self.read_chunked().await?
        } else {
            let len = match headers.get("content-length") {
                Some(v) => v.parse().ok()?,
                None => 0,
            };
            self.take(len).await?
        };
        Some(Request {
            method,
            path,
            headers,
            body,
        })
    }

    async fn read_chunked(&mut self) -> Option<Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let line = self.line().await?;
            let line = String::from_utf8_lossy(&line);
            let size = usize::from_str_radix(line.split(';').next()?.trim(), 16).ok()?;
            if size == 0 {
                // Trailers, if any, up to the blank line.
                while !self.line().await?.is_empty() {}
                return Some(body);
            }
            body.extend_from_slice(&self.take(size).await?);
            if self.take(2).await? != b"\r\n" {
                return None;
            }
        }
    }

    async fn reply(&mut self, mut reply: Reply, observed: &Observed) -> After {
        while let Reply::Delayed { delay, reply: next } = reply {
            tokio::time::sleep(delay).await;
            reply = *next;
        }
        let sock = &mut self.sock;
        match reply {
            Reply::Response {
                status,
                headers,
                body,
            } => {
                let mut head = format!(
                    "HTTP/1.1 {status} {}\r\ncontent-length: {}\r\n",
                    reason(status),
                    body.len()
                );
                for (name, value) in headers {
                    head.push_str(&format!("{name}: {value}\r\n"));
                }
                head.push_str("\r\n");
                // One write: a head and body sent apart meet the peer's delayed ACK.
                let mut frame = head.into_bytes();
                frame.extend_from_slice(&body);
                match sock.write_all(&frame).await {
                    Ok(()) => After::KeepOpen,
                    Err(_) => After::Done,
                }
            }
            Reply::Delayed { .. } => unreachable!("delays are unwrapped above"),
            Reply::Stall => stall().await,
            Reply::Close => {
                let _ = sock.shutdown().await;
                After::Done
            }
            Reply::Reset => {
                reset(sock);
                After::Done
            }
            Reply::Garbage(bytes) => {
                let _ = sock.write_all(&bytes).await;
                let _ = sock.shutdown().await;
                After::Done
            }
            Reply::StallInHead(bytes) => {
                let _ = sock.write_all(&bytes).await;
                stall().await
            }
            Reply::StallMidBody {
                status,
                declared,
                sent,
            } => {
                let _ = sock.write_all(&body_head(status, declared)).await;
                let _ = sock.write_all(&sent).await;
                stall().await
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
                After::Done
            }
            Reply::CloseMidBody {
                status,
                declared,
                sent,
            } => {
                let _ = sock.write_all(&body_head(status, declared)).await;
                let _ = sock.write_all(&sent).await;
                let _ = sock.shutdown().await;
                After::Done
            }
            Reply::Chunked { total } => match write_chunked(sock, total, observed).await {
                Ok(()) => {
                    observed.chunked_completed.fetch_add(1, Ordering::SeqCst);
                    After::KeepOpen
                }
                Err(_) => {
                    observed.chunked_hung_up.fetch_add(1, Ordering::SeqCst);
                    After::Done
                }
            },
        }
    }
}

async fn write_chunked(
    sock: &mut TcpStream,
    total: usize,
    observed: &Observed,
) -> std::io::Result<()> {
    sock.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n",
    )
    .await?;
    let chunk = vec![b' '; CHUNK_BYTES];
    let mut left = total;
    while left > 0 {
        let n = left.min(chunk.len());
        sock.write_all(format!("{n:x}\r\n").as_bytes()).await?;
        sock.write_all(&chunk[..n]).await?;
        sock.write_all(b"\r\n").await?;
        observed.chunked_bytes_sent.fetch_add(n, Ordering::SeqCst);
        left -= n;
    }
    sock.write_all(b"0\r\n\r\n").await
}

/// Holds the connection open and silent until the server stops.
pub(super) async fn stall() -> After {
    std::future::pending::<()>().await;
    After::Done
}

/// The head of a JSON response declaring `declared` body bytes.
fn body_head(status: u16, declared: usize) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {declared}\r\n\r\n",
        reason(status)
    )
    .into_bytes()
}

/// Resets the connection: with a zero linger, closing sends RST, not FIN. The
/// socket closes when its owner drops it, right after this.
pub(super) fn reset(sock: &TcpStream) {
    let _ = sock.set_zero_linger();
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A reason phrase for the status line; clients read only the code.
pub(super) fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Content Too Large",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};

    use crate::testing::{Reply, Server};

    /// A large body, then a chunked one, sent in one write on one connection:
    /// each is read whole and exact, and neither takes bytes of the other.
    #[test]
    fn pipelined_bodies_large_and_chunked_are_read_exactly() {
        let server = Server::builder()
            .script([Reply::json(200, ""), Reply::json(200, "")])
            .start_on_thread();
        let large: Vec<u8> = (0..3_000_017u32).map(|i| (i % 251) as u8).collect();
        let mut wire = format!(
            "POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n\r\n",
            large.len()
        )
        .into_bytes();
        wire.extend_from_slice(&large);
        wire.extend_from_slice(
            b"POST /b HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n\
              3\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n",
        );
        let mut sock = std::net::TcpStream::connect(server.addr()).expect("connect");
        sock.write_all(&wire).expect("write");
        let mut answers = Vec::new();
        let mut buf = [0u8; 4096];
        while answers
            .windows(15)
            .filter(|w| w == b"HTTP/1.1 200 OK")
            .count()
            < 2
        {
            let n = sock.read(&mut buf).expect("read");
            assert!(n > 0, "the server closed early");
            answers.extend_from_slice(&buf[..n]);
        }
        let got = server.requests();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].path, "/a");
        assert!(got[0].body == large, "the large body is read exactly");
        assert_eq!(got[1].path, "/b");
        assert_eq!(got[1].body, b"abc0123456789abcdef");
    }
}
