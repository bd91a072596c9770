//! An MCP server: judgments as MCP tools over stdio (SPEC §18), on the
//! official Rust SDK (`rmcp`). `toolnexus mcp` is this server.
//!
//! Five tools, each with a hand-written JSON input schema (its `schema` module):
//! `noul`, `choice` and `score` ask one question under the key `answer`;
//! `evaluate` takes a whole System One request; `guard` judges an agent's tool
//! call by the guard policy (built on first use, once).
//!
//! - Results carry the wire decision as structured content (plus `"verdicts"`
//!   with thresholds bands) and one short text line.
//! - Bad arguments and failed evaluations are tool results with `isError`, the
//!   message naming the argument; no message carries a key (the library's
//!   errors are secret-free by construction).
//! - Every line read is answered or served (its `stdio` transport): an over-long frame,
//!   a line that is not JSON and params that do not fit their method get
//!   JSON-RPC errors (-32600, -32700, -32602), never silence.
//! - Standard output carries protocol frames only: tool errors, refused
//!   lines and warnings go to the [`Log`] the caller hands in. The server
//!   ends when the client closes standard input.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, JsonObject, ServerCapabilities, ServerConfig,
};
use rmcp::service::ServerInitializeError;
use rmcp::{ServerHandler, ServiceExt as _, tool, tool_handler, tool_router};
use serde_json::{Value, json};
use toolnexus::classifier::{
    Classifier, Decision, DecisionAnswer, EvalContext, EvalRequest, Questions, questions_from_wire,
    validate_questions,
};
use toolnexus::judge::Bands;
use toolnexus_guard::{Guard, JudgeSource, Policy, ToolCall};
use toolnexus_local::Precision;

use crate::backend::Backend;
use crate::log::Log;
use crate::wire;

mod stdio;

pub use stdio::MAX_FRAME_BYTES;

/// An MCP server's settings beside its stack. Each field is a `toolnexus mcp`
/// flag.
///
/// ```
/// let config = toolnexus_server::mcp::McpConfig::default();
/// assert!(config.bands.is_none() && config.policy.is_none());
/// ```
#[derive(Debug, Clone, Default)]
pub struct McpConfig {
    /// `--thresholds`: every result also carries `"verdicts"`, each answer
    /// read through its question's bands.
    pub bands: Option<BTreeMap<String, Bands>>,
    /// `--policy`: the guard policy the `guard` tool judges by (default: the
    /// built-in one).
    pub policy: Option<PathBuf>,
    /// `--model-dir`: the embedded model's directory, for the guard's own judge.
    pub model_dir: Option<PathBuf>,
    /// `--precision`: the guard's own judge runs its encoder in this one.
    pub precision: Precision,
}

/// Why an MCP server stopped before its client closed standard input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The client's hello could not be answered (a protocol error): the
    /// client must change, not the machine.
    #[error("mcp: {0}")]
    Start(String),
    /// The server stopped while serving.
    #[error("mcp: the server stopped: {0}")]
    Stopped(String),
}

/// Serves `backend` as MCP tools on standard input and output until the
/// client closes standard input (also before its hello: nothing to serve is
/// no failure). What the server says on its own goes to `log`.
///
/// ```no_run
/// # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use toolnexus_server::mcp::{McpConfig, serve_stdio};
/// use toolnexus_server::{Backend, Stderr};
/// let stack = toolnexus_stack::build(&toolnexus_stack::StackSpec {
///     style: Some("local".into()),
///     ..Default::default()
/// })?;
/// serve_stdio(Backend::from_stack(&stack), McpConfig::default(), Arc::new(Stderr::default())).await?;
/// # Ok(())
/// # }
/// ```
pub async fn serve_stdio(
    backend: Backend,
    config: McpConfig,
    log: Arc<dyn Log>,
) -> Result<(), McpError> {
    let server = Judgments {
        classifier: backend.classifier,
        call: backend.call,
        bands: config.bands,
        policy: config.policy,
        model_dir: config.model_dir,
        precision: config.precision,
        guard: Arc::new(tokio::sync::OnceCell::new()),
        log: log.clone(),
        tool_router: Judgments::tool_router(),
    };
    let running = match server.serve(stdio::Stdio::new(log)).await {
        Ok(r) => r,
        // Standard input closed before the client said hello: nothing to serve.
        Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => return Err(McpError::Start(e.to_string())),
    };
    match running.waiting().await {
        Ok(_) => Ok(()),
        Err(e) => Err(McpError::Stopped(e.to_string())),
    }
}

/// The MCP server: one classifier, asked under one call name.
#[derive(Clone)]
struct Judgments {
    classifier: Classifier,
    call: String,
    bands: Option<BTreeMap<String, Bands>>,
    policy: Option<PathBuf>,
    /// The embedded model's directory (`--model-dir`), for the guard's own judge.
    model_dir: Option<PathBuf>,
    /// The guard's own judge's precision (`--precision`).
    precision: Precision,
    /// The guard, built on the first `guard` call; a failure to build it is
    /// kept too, and every `guard` call reports it.
    guard: Arc<tokio::sync::OnceCell<Result<Arc<Guard>, String>>>,
    /// Where tool errors and the policy's warnings go.
    log: Arc<dyn Log>,
    tool_router: ToolRouter<Judgments>,
}

#[tool_router]
impl Judgments {
    #[tool(
        name = "noul",
        description = "The probability that a statement holds about the state (a yes/no question answered with P(true)).",
        input_schema = schema::noul(),
        annotations(read_only_hint = true)
    )]
    async fn noul(&self, args: JsonObject) -> CallToolResult {
        let asked = (|| {
            let a = Args::new("noul", &args, &["state", "instructions", "criteria"])?;
            let mut q = json!({"type": "noul", "instructions": a.text("instructions")?});
            if let Some(c) = a.optional("criteria") {
                let c = c
                    .as_object()
                    .filter(|c| {
                        c.len() == 2
                            && c.get("true").is_some_and(Value::is_string)
                            && c.get("false").is_some_and(Value::is_string)
                    })
                    .ok_or_else(|| {
                        a.bad(
                            "criteria",
                            "is an object of two texts, \"true\" and \"false\"",
                        )
                    })?;
                q["criteria"] = Value::Object(c.clone());
            }
            Ok::<_, String>((a.state()?, one_question("noul", q)?))
        })();
        self.ask("noul", asked, None).await
    }

    #[tool(
        name = "choice",
        description = "Pick one of the named options for the state (each option described by what picking it means); the answer carries the full distribution.",
        input_schema = schema::choice(),
        annotations(read_only_hint = true)
    )]
    async fn choice(&self, args: JsonObject) -> CallToolResult {
        let asked = (|| {
            let a = Args::new("choice", &args, &["state", "instructions", "options"])?;
            let options = a
                .required("options")?
                .as_object()
                .filter(|o| !o.is_empty() && o.values().all(Value::is_string))
                .ok_or_else(|| {
                    a.bad(
                        "options",
                        "is an object of option name to description (text), with at least one option",
                    )
                })?;
            let q = json!({
                "type": "choice",
                "instructions": a.text("instructions")?,
                "criteria": Value::Object(options.clone()),
            });
            Ok::<_, String>((a.state()?, one_question("choice", q)?))
        })();
        self.ask("choice", asked, None).await
    }

    #[tool(
        name = "score",
        description = "Place the state on an ordered rubric of 2 to 10 levels, lowest first; the answer is the expected level (0-based) with its distribution.",
        input_schema = schema::score(),
        annotations(read_only_hint = true)
    )]
    async fn score(&self, args: JsonObject) -> CallToolResult {
        let asked = (|| {
            let a = Args::new("score", &args, &["state", "instructions", "levels"])?;
            let levels = a
                .required("levels")?
                .as_array()
                .filter(|l| l.iter().all(Value::is_string))
                .ok_or_else(|| a.bad("levels", "is an array of 2 to 10 texts, lowest first"))?;
            let q = json!({
                "type": "score",
                "instructions": a.text("instructions")?,
                "criteria": Value::Array(levels.clone()),
            });
            Ok::<_, String>((a.state()?, one_question("score", q)?))
        })();
        self.ask("score", asked, None).await
    }

    #[tool(
        name = "evaluate",
        description = "A whole System One request: several questions (key to wire question: noul, choice, score or box) about one state, answered together.",
        input_schema = schema::evaluate(),
        annotations(read_only_hint = true)
    )]
    async fn evaluate(&self, args: JsonObject) -> CallToolResult {
        let mut model = None;
        let asked = (|| {
            let a = Args::new("evaluate", &args, &["state", "questions", "model"])?;
            if let Some(m) = a.optional("model") {
                let m = m
                    .as_str()
                    .filter(|m| !m.trim().is_empty())
                    .ok_or_else(|| a.bad("model", "is a model name (text)"))?;
                model = Some(m.trim().to_string());
            }
            let questions = a.required("questions")?;
            let questions = wire::read_questions(questions).map_err(|e| {
                format!(
                    "evaluate: {}",
                    one_line(&format!("--questions (the \"questions\" argument): {e}"))
                )
            })?;
            Ok::<_, String>((a.state()?, questions))
        })();
        self.ask("evaluate", asked, model).await
    }

    #[tool(
        name = "guard",
        description = "Judge an agent's tool call by the guard policy: allow, ask or deny, with the reason.",
        input_schema = schema::guard(),
        annotations(read_only_hint = true)
    )]
    async fn guard(&self, args: JsonObject) -> CallToolResult {
        let call = (|| {
            let a = Args::new("guard", &args, &["tool_name", "tool_input", "cwd"])?;
            let tool_name = a
                .required("tool_name")?
                .as_str()
                .filter(|n| !n.trim().is_empty())
                .ok_or_else(|| a.bad("tool_name", "is the tool's name (text, e.g. \"Bash\")"))?
                .to_string();
            let Some(tool_input) = a.required("tool_input")?.as_object() else {
                return Err(a.bad("tool_input", "is an object: the tool's arguments"));
            };
            let cwd = match a.optional("cwd") {
                None => None,
                Some(Value::String(c)) => Some(c.clone()),
                Some(_) => return Err(a.bad("cwd", "is a directory path (text)")),
            };
            Ok(ToolCall {
                tool_name,
                tool_input: tool_input.clone(),
                cwd,
            })
        })();
        let call = match call {
            Ok(c) => c,
            Err(e) => return self.failed(e),
        };
        let guard = match self.loaded_guard().await {
            Ok(g) => g,
            Err(e) => return self.failed(e),
        };
        let judgment = guard.judge(&call).await;
        let text = format!(
            "verdict: {} ({})",
            judgment.permission.as_str(),
            judgment.reason
        );
        succeeded(
            text,
            json!({
                "verdict": judgment.permission.as_str(),
                "reason": judgment.reason,
                "detail": judgment.detail,
            }),
        )
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Judgments {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("toolnexus", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Typed judgments about a state: noul (probability a statement holds), choice \
                 (one of named options), score (a level on a rubric), evaluate (several \
                 questions at once), and guard (allow, ask or deny an agent's tool call).",
            )
    }
}

impl Judgments {
    /// Evaluates checked arguments and renders the result, or the error.
    async fn ask(
        &self,
        tool: &str,
        asked: Result<(Value, Questions), String>,
        model: Option<String>,
    ) -> CallToolResult {
        let (state, questions) = match asked {
            Ok(a) => a,
            Err(e) => return self.failed(e),
        };
        let ctx = EvalContext::new().with_call_name(self.call.clone());
        let mut request = EvalRequest::new(state, questions);
        if let Some(m) = model {
            request = request.with_model(m);
        }
        let done = match self.classifier.evaluate_request(ctx, request).await {
            Ok(done) => done,
            // ClassifierError's Display never carries a key.
            Err(e) => return self.failed(format!("{tool}: {e}")),
        };
        let decision = &done.decision;
        let mut structured = decision.to_value();
        wire::with_cost(&mut structured, &done.cost);
        if let (Some(bands), Value::Object(o)) = (&self.bands, &mut structured) {
            o.insert("verdicts".into(), wire::verdicts_json(decision, bands));
        }
        succeeded(summary(decision), structured)
    }

    /// A tool error (`isError: true`) with its one-line message, also logged.
    fn failed(&self, message: String) -> CallToolResult {
        self.log.line(&format!("mcp: {message}"));
        CallToolResult::error(vec![ContentBlock::text(message)])
    }

    /// The guard, built on first use (it may load a model), once.
    async fn loaded_guard(&self) -> Result<Arc<Guard>, String> {
        let policy = self.policy.clone();
        // The guard keeps its own judge (the policy's built-in one), on the
        // same embedded model directory as the other tools.
        let judge = JudgeSource::builtin(self.model_dir.clone()).with_precision(self.precision);
        let log = self.log.clone();
        self.guard
            .get_or_init(|| async move {
                let loaded = tokio::task::spawn_blocking(move || {
                    let policy =
                        match policy.as_deref() {
                            Some(p) => Policy::load(p)
                                .map_err(|e| format!("policy {}: {e}", p.display()))?,
                            None => Policy::builtin()
                                .map_err(|e| format!("the built-in policy: {e}"))?,
                        };
                    for w in &policy.warnings {
                        log.line(&format!("warning: {w}"));
                    }
                    Ok::<_, String>(Guard::new(policy, judge))
                })
                .await;
                match loaded {
                    Ok(Ok(g)) => Ok(Arc::new(g)),
                    Ok(Err(e)) => Err(if e.starts_with("guard") {
                        e
                    } else {
                        format!("guard: {e}")
                    }),
                    Err(_) => Err("guard: loading the policy failed unexpectedly".to_string()),
                }
            })
            .await
            .clone()
    }
}

/// A tool's arguments, checked by name.
struct Args<'a> {
    tool: &'static str,
    args: &'a JsonObject,
}

impl<'a> Args<'a> {
    /// Refuses an argument the tool does not take (a misspelt `instructionz`
    /// is not silently ignored).
    fn new(tool: &'static str, args: &'a JsonObject, takes: &[&str]) -> Result<Args<'a>, String> {
        if let Some(k) = args.keys().find(|k| !takes.contains(&k.as_str())) {
            return Err(format!(
                "{tool}: unknown argument {k:?} ({tool} takes {})",
                takes.join(", ")
            ));
        }
        Ok(Args { tool, args })
    }

    fn optional(&self, name: &str) -> Option<&'a Value> {
        self.args.get(name).filter(|v| !v.is_null())
    }

    fn required(&self, name: &str) -> Result<&'a Value, String> {
        self.optional(name)
            .ok_or_else(|| format!("{}: argument {name:?} is required", self.tool))
    }

    fn bad(&self, name: &str, what: &str) -> String {
        format!("{}: argument {name:?} {what}", self.tool)
    }

    /// A required text argument.
    fn text(&self, name: &str) -> Result<&'a str, String> {
        self.required(name)?
            .as_str()
            .ok_or_else(|| self.bad(name, "is text"))
    }

    /// The state: text, a JSON object or an array.
    fn state(&self) -> Result<Value, String> {
        let state = self.required("state")?;
        wire::check_state(state).map_err(|e| format!("{}: argument \"state\": {e}", self.tool))?;
        Ok(state.clone())
    }
}

/// One question under the key `answer`, checked against the client-side limits.
fn one_question(tool: &str, wire: Value) -> Result<Questions, String> {
    let wire = json!({ "answer": wire });
    let questions = questions_from_wire(&wire).map_err(|e| format!("{tool}: {e}"))?;
    validate_questions(&questions).map_err(|e| format!("{tool}: {e}"))?;
    Ok(questions)
}

/// A tool result: one text line, and the structured value.
fn succeeded(text: String, structured: Value) -> CallToolResult {
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(structured);
    r
}

/// A multi-line text as one line: each line trimmed, blank ones dropped,
/// joined by a space (as every message of the command line reads).
fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The decision as one line: `answer: true (p=0.83)`, `key: …; key: …` for
/// several questions.
fn summary(d: &Decision) -> String {
    let lines: Vec<String> = d
        .answers
        .iter()
        .map(|(key, a)| format!("{key}: {}", answer_text(a)))
        .collect();
    if lines.is_empty() {
        "no answers".to_string()
    } else {
        lines.join("; ")
    }
}

fn answer_text(a: &DecisionAnswer) -> String {
    match a {
        DecisionAnswer::Noul(n) => format!("{} (p={:.2})", n.noul >= 0.5, n.noul),
        DecisionAnswer::Choice(c) => format!(
            "{} (p={:.2}, confidence {:.2})",
            c.choice,
            c.probabilities.get(&c.choice).copied().unwrap_or(0.0),
            c.confidence
        ),
        DecisionAnswer::Score(s) => {
            let nearest = s.legend.get(&(s.score.round().max(0.0) as u64).to_string());
            match nearest {
                Some(level) => format!(
                    "{:.2} (nearest level: {level}; confidence {:.2})",
                    s.score, s.confidence
                ),
                None => format!("{:.2} (confidence {:.2})", s.score, s.confidence),
            }
        }
        DecisionAnswer::Box(b) => format!(
            "box top={:.2} bottom={:.2} left={:.2} right={:.2}",
            b.coordinates.top, b.coordinates.bottom, b.coordinates.left, b.coordinates.right
        ),
    }
}

/// The tools' input schemas (JSON Schema, draft 2020-12 subset every MCP
/// client reads).
mod schema {
    use super::*;

    fn object(properties: Value, required: &[&str]) -> Arc<JsonObject> {
        let v = json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        });
        let Value::Object(o) = v else {
            unreachable!("json! of an object is an object")
        };
        Arc::new(o)
    }

    fn state() -> Value {
        json!({
            "type": ["string", "object", "array"],
            "description": "What to judge: text, or a JSON object or array.",
        })
    }

    fn instructions(what: &str) -> Value {
        json!({"type": "string", "description": what})
    }

    pub fn noul() -> Arc<JsonObject> {
        object(
            json!({
                "state": state(),
                "instructions": instructions("The statement, or what to judge about the state."),
                "criteria": {
                    "type": "object",
                    "description": "What true and what false mean.",
                    "properties": {
                        "true": {"type": "string"},
                        "false": {"type": "string"},
                    },
                    "required": ["true", "false"],
                    "additionalProperties": false,
                },
            }),
            &["state", "instructions"],
        )
    }

    pub fn choice() -> Arc<JsonObject> {
        object(
            json!({
                "state": state(),
                "instructions": instructions("What to decide."),
                "options": {
                    "type": "object",
                    "description": "Option name to what picking it means, in the order to offer them.",
                    "additionalProperties": {"type": "string"},
                    "minProperties": 1,
                    "maxProperties": toolnexus::classifier::MAX_CHOICE_OPTIONS,
                },
            }),
            &["state", "instructions", "options"],
        )
    }

    pub fn score() -> Arc<JsonObject> {
        object(
            json!({
                "state": state(),
                "instructions": instructions("What to rate."),
                "levels": {
                    "type": "array",
                    "description": "The rubric's levels, lowest first.",
                    "items": {"type": "string"},
                    "minItems": toolnexus::classifier::MIN_SCORE_LEVELS,
                    "maxItems": toolnexus::classifier::MAX_SCORE_LEVELS,
                },
            }),
            &["state", "instructions", "levels"],
        )
    }

    pub fn evaluate() -> Arc<JsonObject> {
        object(
            json!({
                "state": state(),
                "questions": {
                    "type": "object",
                    "description": "Key to wire question: {\"type\": \"noul\"|\"choice\"|\"score\"|\"box\", \"instructions\", \"criteria\"} (a noul's criteria {\"true\", \"false\"}, a choice's option name to meaning, a score's levels lowest first).",
                    "minProperties": 1,
                    "additionalProperties": {
                        "type": "object",
                        "properties": {
                            "type": {"type": "string", "enum": ["noul", "choice", "score", "box"]},
                            "instructions": {"type": ["string", "object", "array"]},
                            "criteria": {"type": ["object", "array"]},
                        },
                        "required": ["type"],
                    },
                },
                "model": {
                    "type": "string",
                    "description": "The model to ask instead of the server's own (System One and static styles).",
                },
            }),
            &["state", "questions"],
        )
    }

    pub fn guard() -> Arc<JsonObject> {
        object(
            json!({
                "tool_name": {"type": "string", "description": "The tool about to run (Bash, Write, mcp__server__tool, …)."},
                "tool_input": {"type": "object", "description": "Its arguments."},
                "cwd": {"type": "string", "description": "The agent's working directory."},
            }),
            &["tool_name", "tool_input"],
        )
    }
}
