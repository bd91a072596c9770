//! The stdio transport of `toolnexus mcp`: one JSON-RPC 2.0 message per line.
//!
//! Every line the client sends is answered or handed to the server; nothing is
//! dropped in silence (a client waits for the answer to each request it sent):
//!
//! - a line over [`MAX_FRAME_BYTES`] is an Invalid Request (-32600) naming the
//!   limit, with the request's id when its first bytes hold one; the rest of the
//!   line is skipped unread, so memory stays bounded;
//! - a line that is not JSON is a Parse error (-32700, id null);
//! - JSON that is not one JSON-RPC 2.0 message is an Invalid Request (-32600),
//!   with the id when it has a usable one;
//! - a known method whose `params` do not fit it is Invalid params (-32602),
//!   not Method not found.
//!
//! Replies to notifications are never sent (JSON-RPC 2.0, section 4.1): a bad
//! notification is reported on standard error only.

use std::io;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ClientRequest, JsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::{StdioReader, StdioWriter, Transport};
use serde::Deserializer as _;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

use crate::log::Log;

/// The largest message read, in bytes (without its newline): 16 MiB, as the
/// MCP SDK's own stdio transport.
pub const MAX_FRAME_BYTES: usize = 16 << 20;

/// How much of an over-long line is kept to find its id.
const KEPT_PREFIX: usize = 64 << 10;

/// JSON-RPC 2.0 error codes.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// The methods of MCP a client may call on a server: a request for one of
/// these whose `params` do not parse is Invalid params, never Method not found.
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
];

/// Standard input and output as an MCP transport.
pub struct Stdio {
    read: BufReader<StdioReader>,
    /// The line being read (kept across cancelled reads).
    line: Vec<u8>,
    /// Set while the tail of an over-long line is skipped.
    skipping: bool,
    limit: usize,
    write: Arc<Mutex<StdioWriter>>,
    /// Error replies being written, waited for before the end.
    replies: Vec<JoinHandle<()>>,
    /// Where refused lines and read failures are reported.
    log: Arc<dyn Log>,
}

/// What one bounded line read found.
enum Read {
    Line,
    /// Over the limit: the line's first bytes.
    TooLong(Vec<u8>),
    End,
}

impl Stdio {
    /// Standard input and output, through the SDK's non-blocking pipes.
    pub fn new(log: Arc<dyn Log>) -> Stdio {
        let (read, write) = rmcp::transport::stdio_pipes();
        Stdio {
            read: BufReader::new(read),
            line: Vec::new(),
            skipping: false,
            limit: MAX_FRAME_BYTES,
            write: Arc::new(Mutex::new(write)),
            replies: Vec::new(),
            log,
        }
    }

    /// Reads one line into `self.line` without letting it grow past the limit.
    /// Cancellation-safe: every step that consumes input records it in `self`
    /// before the next await.
    async fn read_line(&mut self) -> Read {
        loop {
            let available = match self.read.fill_buf().await {
                Ok(a) => a,
                Err(e) => {
                    self.log
                        .line(&format!("mcp: cannot read standard input: {e}"));
                    return Read::End;
                }
            };
            if available.is_empty() {
                return Read::End;
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            if self.skipping {
                self.read.consume(take);
                if newline.is_some() {
                    self.skipping = false;
                }
                continue;
            }
            let body = newline.map_or(take, |i| i);
            if self.line.len() + body > self.limit {
                let mut prefix = std::mem::take(&mut self.line);
                let room = KEPT_PREFIX.saturating_sub(prefix.len()).min(body);
                prefix.extend_from_slice(&available[..room]);
                self.read.consume(take);
                self.skipping = newline.is_none();
                return Read::TooLong(prefix);
            }
            self.line.extend_from_slice(&available[..take]);
            self.read.consume(take);
            if newline.is_some() {
                return Read::Line;
            }
        }
    }

    /// Sends an error reply; written by a task of its own, so a cancelled
    /// `receive` never leaves half a frame.
    fn reply(&mut self, id: Value, code: i64, message: String) {
        self.log.line(&format!("mcp: {message}"));
        let frame =
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        let mut bytes = frame.to_string().into_bytes();
        bytes.push(b'\n');
        let write = self.write.clone();
        self.replies.retain(|h| !h.is_finished());
        self.replies.push(tokio::spawn(async move {
            let mut w = write.lock().await;
            let _ = w.write_all(&bytes).await;
            let _ = w.flush().await;
        }));
    }
}

impl Transport<RoleServer> for Stdio {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let write = self.write.clone();
        let frame = serde_json::to_vec(&item);
        async move {
            let mut frame = frame.map_err(io::Error::other)?;
            frame.push(b'\n');
            let mut w = write.lock().await;
            w.write_all(&frame).await?;
            w.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                Read::Line => {}
                Read::TooLong(prefix) => {
                    let limit = self.limit;
                    self.reply(
                        id_in_prefix(&prefix),
                        INVALID_REQUEST,
                        format!(
                            "message too large: over {limit} bytes ({} MiB), the most this server reads; it was not read",
                            limit >> 20
                        ),
                    );
                    continue;
                }
                Read::End => {
                    for h in std::mem::take(&mut self.replies) {
                        let _ = h.await;
                    }
                    return None;
                }
            }
            let line = std::mem::take(&mut self.line);
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match classify(text) {
                Ok(message) => return Some(message),
                Err(Rejected::Reply(id, code, message)) => self.reply(id, code, message),
                Err(Rejected::Quiet(message)) => self.log.line(&format!("mcp: {message}")),
            }
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        for h in std::mem::take(&mut self.replies) {
            let _ = h.await;
        }
        self.write.lock().await.flush().await
    }
}

/// Why a line is not handed to the server.
#[derive(Debug, PartialEq)]
enum Rejected {
    /// An error reply: id, code, message.
    Reply(Value, i64, String),
    /// A notification (or a response) that is wrong: said on stderr only.
    Quiet(String),
}

/// One line as a message for the server, or why it is not one.
fn classify(text: &[u8]) -> Result<RxJsonRpcMessage<RoleServer>, Rejected> {
    let v: Value = serde_json::from_slice(text)
        .map_err(|e| Rejected::Reply(Value::Null, PARSE_ERROR, format!("parse error: {e}")))?;
    let Value::Object(o) = &v else {
        return Err(Rejected::Reply(
            Value::Null,
            INVALID_REQUEST,
            "invalid request: a message is one JSON object (batches are not supported)".into(),
        ));
    };
    let raw_id = o.get("id");
    let id = raw_id
        .filter(|i| i.is_string() || i.is_i64() || i.is_u64())
        .cloned();
    let invalid = |what: &str| {
        Rejected::Reply(
            id.clone().unwrap_or(Value::Null),
            INVALID_REQUEST,
            format!("invalid request: {what}"),
        )
    };
    if o.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("\"jsonrpc\" must be \"2.0\""));
    }
    if raw_id.is_some() && id.is_none() {
        return Err(invalid("\"id\" is a string or an integer"));
    }
    let method = match o.get("method") {
        None => None,
        Some(Value::String(m)) => Some(m.as_str()),
        Some(_) => return Err(invalid("\"method\" is a string")),
    };
    let parsed = serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(v.clone());
    match (parsed, method, &id) {
        (Ok(JsonRpcMessage::Request(r)), Some(m), Some(id))
            if matches!(r.request, ClientRequest::CustomRequest(_))
                && KNOWN_METHODS.contains(&m) =>
        {
            Err(Rejected::Reply(
                id.clone(),
                INVALID_PARAMS,
                format!(
                    "invalid params for {m}: {}",
                    params_problem(m, o.get("params"))
                ),
            ))
        }
        (Ok(message), _, _) => Ok(message),
        (Err(e), Some(m), None) => Err(Rejected::Quiet(format!("notification {m} ignored: {e}"))),
        (Err(e), Some(m), Some(id)) => Err(Rejected::Reply(
            id.clone(),
            INVALID_PARAMS,
            format!("invalid params for {m}: {e}"),
        )),
        (Err(e), None, _) => Err(invalid(&format!(
            "not a request, a notification or a response: {e}"
        ))),
    }
}

/// What is wrong with a known method's `params`, as precisely as can be said.
fn params_problem(method: &str, params: Option<&Value>) -> String {
    if method != "tools/call" {
        return "they do not have the shape MCP gives this method".into();
    }
    let Some(Value::Object(p)) = params else {
        return "\"params\" is an object: {\"name\": TOOL, \"arguments\": {…}}".into();
    };
    if !p.get("name").is_some_and(Value::is_string) {
        return "\"params.name\" is the tool's name (a string)".into();
    }
    if p.get("arguments")
        .is_some_and(|a| !a.is_object() && !a.is_null())
    {
        return "\"params.arguments\" is an object of the tool's arguments".into();
    }
    "they do not have the shape MCP gives tools/call".into()
}

/// The id of a message of which only the first bytes are known, when those
/// bytes hold it (it usually comes before `params`); null otherwise.
fn id_in_prefix(prefix: &[u8]) -> Value {
    struct Find<'a>(&'a mut Option<Value>);
    impl<'de> Visitor<'de> for Find<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON-RPC message")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                if key == "id" {
                    *self.0 = Some(map.next_value::<Value>()?);
                    return Ok(());
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }
    let mut found = None;
    let _ = serde_json::Deserializer::from_slice(prefix).deserialize_map(Find(&mut found));
    found
        .filter(|i| i.is_string() || i.is_i64() || i.is_u64())
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(line: &str) -> (Value, i64) {
        match classify(line.as_bytes()) {
            Err(Rejected::Reply(id, code, _)) => (id, code),
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn every_wrong_line_gets_its_code() {
        assert_eq!(code("{bad"), (Value::Null, PARSE_ERROR));
        assert_eq!(code("[1]"), (Value::Null, INVALID_REQUEST));
        assert_eq!(
            code(r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#),
            (json!(7), INVALID_REQUEST)
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#),
            (Value::Null, INVALID_REQUEST)
        );
        assert_eq!(
            code(
                r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"noul","arguments":5}}"#
            ),
            (json!("a"), INVALID_PARAMS)
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call"}"#),
            (json!(3), INVALID_PARAMS)
        );
        assert!(classify(br#"{"jsonrpc":"2.0","id":2,"method":"nope"}"#).is_ok());
        assert!(classify(br#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#).is_ok());
    }

    #[test]
    fn the_id_is_found_in_the_first_bytes() {
        assert_eq!(
            id_in_prefix(br#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"arguments":{"state":"xxxx"#),
            json!(42)
        );
        assert_eq!(
            id_in_prefix(
                br#"{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"state":"xxxx"#
            ),
            Value::Null
        );
        assert_eq!(id_in_prefix(b"garbage"), Value::Null);
    }
}
