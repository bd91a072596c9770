//! Chat messages and replies, and the two wires: building a request body and
//! reading a response, per [`Style`]. Pure: no I/O.

use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value};

use crate::canonical::canonical_json;
use crate::error::{ClassifierError, Scope, msg};
use crate::usage::ClassifierUsage;

/// Which chat wire a [`Client`](super::Client) speaks.
///
/// ```
/// use toolnexus::client::Style;
///
/// let s: Style = "anthropic".parse()?;
/// assert_eq!(s, Style::Anthropic);
/// assert_eq!(Style::default().as_str(), "openai");
/// assert_eq!(
///     "gemini".parse::<Style>().unwrap_err().to_string(),
///     "client: unknown style \"gemini\" (want openai|anthropic)"
/// );
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Style {
    /// OpenAI-compatible `POST {base_url}/chat/completions` with a Bearer key
    /// (OpenAI, OpenRouter, vLLM, llama.cpp, Ollama, LM Studio, …).
    #[default]
    OpenAi,
    /// Anthropic's `POST {base_url}/messages` with `x-api-key` and `anthropic-version`.
    Anthropic,
}

impl Style {
    /// The style's spelling: `openai` or `anthropic`.
    ///
    /// ```
    /// assert_eq!(toolnexus::client::Style::Anthropic.as_str(), "anthropic");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Style::OpenAi => "openai",
            Style::Anthropic => "anthropic",
        }
    }

    pub(super) fn path(self) -> &'static str {
        match self {
            Style::OpenAi => "/chat/completions",
            Style::Anthropic => "/messages",
        }
    }

    /// The response field that says why generation stopped.
    pub(crate) fn stop_field(self) -> &'static str {
        match self {
            Style::OpenAi => "finish_reason",
            Style::Anthropic => "stop_reason",
        }
    }
}

impl fmt::Display for Style {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Style {
    type Err = ClassifierError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "openai" => Ok(Style::OpenAi),
            "anthropic" => Ok(Style::Anthropic),
            _ => Err(msg::scoped_config(
                Scope::Client,
                format!("unknown style {s:?} (want openai|anthropic)"),
            )),
        }
    }
}

/// Who says a [`ChatMessage`].
///
/// ```
/// use toolnexus::client::Role;
/// assert_eq!(Role::Assistant.as_str(), "assistant");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Instructions for the model (Anthropic: the top-level `system` field).
    System,
    /// The caller.
    User,
    /// The model, e.g. a prefilled start of its reply.
    Assistant,
}

impl Role {
    /// The wire spelling: `system`, `user` or `assistant`.
    ///
    /// ```
    /// assert_eq!(toolnexus::client::Role::System.as_str(), "system");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One message of a chat.
///
/// ```
/// use toolnexus::client::{ChatMessage, Role};
///
/// let m = ChatMessage::user("Is this spam?");
/// assert_eq!(m.role, Role::User);
/// assert_eq!(m.content, "Is this spam?");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    /// Who says it.
    pub role: Role,
    /// What is said (plain text).
    pub content: String,
}

impl ChatMessage {
    /// A system message.
    ///
    /// ```
    /// let m = toolnexus::client::ChatMessage::system("Be terse.");
    /// assert_eq!(m.role.as_str(), "system");
    /// ```
    pub fn system(content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::System,
            content: content.into(),
        }
    }

    /// A user message.
    ///
    /// ```
    /// let m = toolnexus::client::ChatMessage::user("Hello");
    /// assert_eq!(m.role.as_str(), "user");
    /// ```
    pub fn user(content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::User,
            content: content.into(),
        }
    }

    /// An assistant message.
    ///
    /// ```
    /// let m = toolnexus::client::ChatMessage::assistant("{");
    /// assert_eq!(m.role.as_str(), "assistant");
    /// ```
    pub fn assistant(content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// The log-probability of one generated token and its top alternatives, as an
/// OpenAI-compatible server reports them (`choices[0].logprobs.content[i]`).
///
/// ```
/// use toolnexus::client::TokenLogprob;
///
/// let t = TokenLogprob::new("yes", -0.1, vec![("no".into(), -2.4)]);
/// assert!(t.logprob.exp() > 0.9);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TokenLogprob {
    /// The token generated.
    pub token: String,
    /// Its natural-log probability.
    pub logprob: f64,
    /// The most likely tokens at this position with their log-probabilities, as sent.
    pub top_logprobs: Vec<(String, f64)>,
}

impl TokenLogprob {
    /// A token with its log-probability and top alternatives (for fakes and tests).
    ///
    /// ```
    /// use toolnexus::client::TokenLogprob;
    /// let t = TokenLogprob::new("no", -0.7, vec![]);
    /// assert_eq!(t.token, "no");
    /// ```
    pub fn new(
        token: impl Into<String>,
        logprob: f64,
        top_logprobs: Vec<(String, f64)>,
    ) -> TokenLogprob {
        TokenLogprob {
            token: token.into(),
            logprob,
            top_logprobs,
        }
    }
}

/// What one chat completion returned.
///
/// ```
/// use toolnexus::client::ChatReply;
///
/// fn describe(r: &ChatReply) -> String {
///     match (&r.refusal, r.is_truncated()) {
///         (Some(why), _) => format!("refused: {why}"),
///         (None, true) => "cut off".to_string(),
///         (None, false) => format!("{} said {:?}", r.model, r.text),
///     }
/// }
/// # let _ = describe;
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ChatReply {
    /// The reply text (text parts joined).
    pub text: String,
    /// The model that answered, or the client's model when the server names none.
    pub model: String,
    /// Token usage; `cost` only when the provider reports one (OpenRouter's `usage.cost`).
    pub usage: ClassifierUsage,
    /// Why generation stopped, verbatim (`finish_reason` or `stop_reason`).
    pub finish_reason: Option<String>,
    /// The model's refusal, when it refused (OpenAI `message.refusal`, a
    /// `content_filter` finish, or Anthropic `stop_reason: "refusal"`).
    pub refusal: Option<String>,
    /// Per-token log-probabilities, when asked for and returned.
    pub logprobs: Vec<TokenLogprob>,
}

impl ChatReply {
    /// Whether the reply stopped at the token limit (`finish_reason: "length"`
    /// or `stop_reason: "max_tokens"`).
    ///
    /// ```
    /// # use toolnexus::client::ChatReply;
    /// fn complete(r: &ChatReply) -> bool { !r.is_truncated() && r.refusal.is_none() }
    /// # let _ = complete;
    /// ```
    pub fn is_truncated(&self) -> bool {
        matches!(self.finish_reason.as_deref(), Some("length" | "max_tokens"))
    }
}

/// What a request body is built from.
pub(crate) struct RequestParts<'a> {
    pub style: Style,
    pub model: &'a str,
    pub messages: &'a [ChatMessage],
    pub max_tokens: Option<u32>,
    pub temperature: Option<f64>,
    pub top_logprobs: Option<u32>,
    pub request_params: &'a Map<String, Value>,
}

fn message_value(m: &ChatMessage) -> Value {
    let mut o = Map::new();
    o.insert("role".into(), Value::from(m.role.as_str()));
    o.insert("content".into(), Value::from(m.content.as_str()));
    Value::Object(o)
}

/// The request body, as canonical JSON.
pub(crate) fn request_body(p: &RequestParts<'_>) -> String {
    let mut body = Map::new();
    body.insert("model".into(), Value::from(p.model));
    match p.style {
        Style::OpenAi => {
            body.insert(
                "messages".into(),
                Value::Array(p.messages.iter().map(message_value).collect()),
            );
            if let Some(n) = p.top_logprobs {
                body.insert("logprobs".into(), Value::Bool(true));
                body.insert("top_logprobs".into(), Value::from(n));
            }
        }
        Style::Anthropic => {
            let system: Vec<&str> = p
                .messages
                .iter()
                .filter(|m| m.role == Role::System)
                .map(|m| m.content.as_str())
                .collect();
            if !system.is_empty() {
                body.insert("system".into(), Value::from(system.join("\n\n")));
            }
            body.insert(
                "messages".into(),
                Value::Array(
                    p.messages
                        .iter()
                        .filter(|m| m.role != Role::System)
                        .map(message_value)
                        .collect(),
                ),
            );
        }
    }
    if let Some(n) = p.max_tokens {
        body.insert("max_tokens".into(), Value::from(n));
    }
    if let Some(t) = p.temperature {
        body.insert("temperature".into(), Value::from(t));
    }
    for (k, v) in p.request_params {
        body.insert(k.clone(), v.clone());
    }
    canonical_json(&Value::Object(body))
}

/// Reads a 2xx response body. An `Err` holds the text after `client: POST <endpoint>: `.
pub(crate) fn parse_reply(
    style: Style,
    body: &[u8],
    default_model: &str,
) -> Result<ChatReply, String> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| format!("response is not valid JSON: {e}"))?;
    let o = v
        .as_object()
        .ok_or_else(|| "response is not a JSON object".to_string())?;
    if let Some(err) = o.get("error").filter(|e| !e.is_null()) {
        // Some gateways answer 200 with an error body (OpenRouter upstream failures).
        let cause = crate::http::backend_cause(
            canonical_json(&serde_json::json!({
                "error": err
            }))
            .as_bytes(),
        );
        return Err(format!("provider error: {cause}"));
    }
    let model = match o.get("model") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        None | Some(Value::Null) | Some(Value::String(_)) => default_model.to_string(),
        Some(_) => return Err("response \"model\" is not a string".into()),
    };
    let usage = usage(o.get("usage"))?;
    match style {
        Style::OpenAi => parse_openai(o, model, usage),
        Style::Anthropic => parse_anthropic(o, model, usage),
    }
}

fn usage(u: Option<&Value>) -> Result<ClassifierUsage, String> {
    let u = match u {
        None | Some(Value::Null) => return Ok(ClassifierUsage::default()),
        Some(Value::Object(u)) => u,
        Some(_) => return Err("response \"usage\" is not an object".into()),
    };
    let tokens = |names: [&str; 2]| -> Result<i64, String> {
        for n in names {
            match u.get(n) {
                None | Some(Value::Null) => continue,
                Some(v) => {
                    return v
                        .as_i64()
                        .ok_or_else(|| format!("response usage {n:?} is not a whole number"));
                }
            }
        }
        Ok(0)
    };
    Ok(ClassifierUsage {
        input_tokens: tokens(["prompt_tokens", "input_tokens"])?,
        output_tokens: tokens(["completion_tokens", "output_tokens"])?,
        cost: match u.get("cost") {
            None | Some(Value::Null) => None,
            Some(c) => Some(
                c.as_f64()
                    .filter(|c| c.is_finite())
                    .ok_or("response usage \"cost\" is not a finite number")?,
            ),
        },
    })
}

fn opt_str(v: Option<&Value>, what: &str) -> Result<Option<String>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("response {what} is not a string")),
    }
}

/// Text content: a string, or an array of parts whose `text` fields are joined.
fn text_of(v: Option<&Value>, what: &str) -> Result<String, String> {
    match v {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut out = String::new();
            for p in parts {
                match p.get("type").and_then(Value::as_str) {
                    Some("text") | None => {
                        if let Some(t) = p.get("text").and_then(Value::as_str) {
                            out.push_str(t);
                        } else if let Some(t) = p.as_str() {
                            out.push_str(t);
                        }
                    }
                    // Thinking blocks, tool calls and the like are not the reply.
                    Some(_) => {}
                }
            }
            Ok(out)
        }
        Some(_) => Err(format!("response {what} is not text")),
    }
}

fn parse_openai(
    o: &Map<String, Value>,
    model: String,
    usage: ClassifierUsage,
) -> Result<ChatReply, String> {
    let choice = match o.get("choices") {
        Some(Value::Array(c)) => c
            .first()
            .and_then(Value::as_object)
            .ok_or("response has no choices")?,
        _ => return Err("response has no \"choices\" array".into()),
    };
    let message = choice
        .get("message")
        .and_then(Value::as_object)
        .ok_or("response has no choices[0].message")?;
    let text = text_of(message.get("content"), "choices[0].message.content")?;
    let finish_reason = opt_str(choice.get("finish_reason"), "choices[0].finish_reason")?;
    let mut refusal = opt_str(message.get("refusal"), "choices[0].message.refusal")?
        .filter(|r| !r.trim().is_empty());
    if refusal.is_none() && finish_reason.as_deref() == Some("content_filter") {
        refusal = Some("the provider's content filter stopped the reply".into());
    }
    let logprobs = match choice.get("logprobs").and_then(|l| l.get("content")) {
        Some(Value::Array(items)) => items.iter().filter_map(token_logprob).collect(),
        _ => Vec::new(),
    };
    Ok(ChatReply {
        text,
        model,
        usage,
        finish_reason,
        refusal,
        logprobs,
    })
}

fn token_logprob(v: &Value) -> Option<TokenLogprob> {
    let token = v.get("token")?.as_str()?.to_string();
    let logprob = v.get("logprob")?.as_f64()?;
    let top_logprobs = match v.get("top_logprobs") {
        Some(Value::Array(alts)) => alts
            .iter()
            .filter_map(|a| {
                Some((
                    a.get("token")?.as_str()?.to_string(),
                    a.get("logprob")?.as_f64()?,
                ))
            })
            .collect(),
        _ => Vec::new(),
    };
    Some(TokenLogprob {
        token,
        logprob,
        top_logprobs,
    })
}

fn parse_anthropic(
    o: &Map<String, Value>,
    model: String,
    usage: ClassifierUsage,
) -> Result<ChatReply, String> {
    let text = match o.get("content") {
        Some(c @ Value::Array(_)) => text_of(Some(c), "content")?,
        None | Some(Value::Null) => String::new(),
        Some(_) => return Err("response \"content\" is not an array".into()),
    };
    let finish_reason = opt_str(o.get("stop_reason"), "stop_reason")?;
    let refusal = (finish_reason.as_deref() == Some("refusal")).then(|| {
        if text.trim().is_empty() {
            "no reason given".to_string()
        } else {
            text.clone()
        }
    });
    Ok(ChatReply {
        text,
        model,
        usage,
        finish_reason,
        refusal,
        logprobs: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(style: Style, temperature: Option<f64>) -> String {
        request_body(&RequestParts {
            style,
            model: "m",
            messages: &[ChatMessage::system("sys"), ChatMessage::user("hi")],
            max_tokens: Some(64),
            temperature,
            top_logprobs: None,
            request_params: &Map::new(),
        })
    }

    #[test]
    fn request_bodies_per_style() {
        assert_eq!(
            body(Style::OpenAi, None),
            r#"{"max_tokens":64,"messages":[{"content":"sys","role":"system"},{"content":"hi","role":"user"}],"model":"m"}"#
        );
        assert_eq!(
            body(Style::Anthropic, Some(0.0)),
            r#"{"max_tokens":64,"messages":[{"content":"hi","role":"user"}],"model":"m","system":"sys","temperature":0}"#
        );
    }

    #[test]
    fn openai_replies_read_text_usage_cost_and_refusal() {
        let r = parse_reply(
            Style::OpenAi,
            br#"{"model":"or/x","choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},"finish_reason":"stop"}],
                "usage":{"prompt_tokens":10,"completion_tokens":2,"cost":0.0004}}"#,
            "d",
        )
        .unwrap();
        assert_eq!(r.text, "ab");
        assert_eq!(r.model, "or/x");
        assert_eq!(r.usage.cost, Some(0.0004));
        let r = parse_reply(
            Style::OpenAi,
            br#"{"choices":[{"message":{"content":null,"refusal":"no"},"finish_reason":"stop"}]}"#,
            "d",
        )
        .unwrap();
        assert_eq!((r.model.as_str(), r.refusal.as_deref()), ("d", Some("no")));
        assert_eq!(
            parse_reply(Style::OpenAi, br#"{"choices":[]}"#, "d").unwrap_err(),
            "response has no choices"
        );
        assert_eq!(
            parse_reply(
                Style::OpenAi,
                br#"{"error":{"message":"upstream down"}}"#,
                "d"
            )
            .unwrap_err(),
            "provider error: upstream down"
        );
    }

    #[test]
    fn anthropic_replies_skip_non_text_blocks() {
        let r = parse_reply(
            Style::Anthropic,
            br#"{"model":"claude-x","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"{}"}],
                "stop_reason":"max_tokens","usage":{"input_tokens":5,"output_tokens":7}}"#,
            "d",
        )
        .unwrap();
        assert_eq!(r.text, "{}");
        assert!(r.is_truncated());
        assert_eq!(
            (r.usage.input_tokens, r.usage.output_tokens, r.usage.cost),
            (5, 7, None)
        );
    }
}
