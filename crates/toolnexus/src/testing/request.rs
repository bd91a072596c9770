//! [`Request`]: one request the fake server read, as it arrived.

use std::collections::BTreeMap;

use serde_json::Value;

/// One request the [`Server`](super::Server) read, as it arrived.
///
/// ```
/// use toolnexus::testing::{Reply, Server};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = Server::start([Reply::json(200, "{}")]).await;
/// reqwest::Client::new()
///     .post(server.url("/v1/systemone?trace=1"))
///     .header("X-Team", "ops")
///     .header("X-Team", "billing")
///     .body(r#"{"state": 1}"#)
///     .send()
///     .await
///     .unwrap();
///
/// let r = &server.requests()[0];
/// assert_eq!(r.method, "POST");
/// assert_eq!(r.path, "/v1/systemone?trace=1");
/// assert_eq!(r.headers["x-team"], "ops, billing");
/// assert_eq!(r.header("X-Team"), Some("ops, billing"));
/// assert_eq!(r.body_str(), r#"{"state": 1}"#);
/// assert_eq!(r.json()["state"], 1);
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Request {
    /// The method, as sent (`POST`).
    pub method: String,
    /// The request target, as sent: path and query (`/v1/systemone`).
    pub path: String,
    /// Header names lower-cased; a header sent more than once has its values
    /// joined by `", "` in arrival order.
    pub headers: BTreeMap<String, String>,
    /// The body, de-chunked when it was sent chunked.
    pub body: Vec<u8>,
}

impl Request {
    /// The body parsed as JSON, or `null` when it is empty or not JSON.
    ///
    /// ```
    /// use toolnexus::testing::{Reply, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::json(200, "{}")]).await;
    /// let http = reqwest::Client::new();
    /// http.post(server.url("/v1/a")).body(r#"{"n": 7}"#).send().await.unwrap();
    /// http.get(server.url("/v1/b")).send().await.unwrap();
    ///
    /// let sent = server.requests();
    /// assert_eq!(sent[0].json()["n"], 7);
    /// assert!(sent[1].json().is_null(), "no body");
    /// # }
    /// ```
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The body as text.
    ///
    /// # Panics
    ///
    /// When the body is not UTF-8.
    ///
    /// ```
    /// use toolnexus::testing::{Reply, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::json(200, "{}")]).await;
    /// reqwest::Client::new().post(server.url("/")).body("hello").send().await.unwrap();
    /// assert_eq!(server.requests()[0].body_str(), "hello");
    /// # }
    /// ```
    pub fn body_str(&self) -> &str {
        match std::str::from_utf8(&self.body) {
            Ok(s) => s,
            Err(e) => panic!("the request body is not UTF-8: {e}"),
        }
    }

    /// The value of a header, by any capitalisation of its name.
    ///
    /// ```
    /// use toolnexus::testing::{Reply, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::start([Reply::json(200, "{}")]).await;
    /// reqwest::Client::new()
    ///     .get(server.url("/v1/models"))
    ///     .bearer_auth("sk-test")
    ///     .send()
    ///     .await
    ///     .unwrap();
    /// let r = &server.requests()[0];
    /// assert_eq!(r.header("Authorization"), Some("Bearer sk-test"));
    /// assert_eq!(r.header("x-missing"), None);
    /// # }
    /// ```
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}
