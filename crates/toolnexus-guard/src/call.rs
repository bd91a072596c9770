//! A tool call as the guard reads it: typed once, from the object a hook or
//! a labelled example holds.

use serde_json::{Map, Value};

use crate::json;

mod read;

pub use read::{COMMAND_FIELDS, KNOWN_TOOLS, PATH_ARGS, ReadError, Reading, WRITING_TOOLS};

/// A tool call as the guard sees it.
///
/// ```
/// use serde_json::json;
/// use toolnexus_guard::ToolCall;
/// let o = json!({"tool_name": "Write", "tool_input": {"file_path": "a.txt", "content": "hi"}});
/// let call = ToolCall::from_object(o.as_object().cloned().unwrap_or_default())?;
/// assert_eq!((call.tool_name.as_str(), call.cwd), ("Write", None));
/// let e = ToolCall::from_object(json!({"tool_name": "Bash"}).as_object().cloned().unwrap_or_default());
/// assert_eq!(e.unwrap_err().to_string(), "tool_input is missing");
/// # Ok::<(), toolnexus_guard::CallError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The tool's name (`Bash`, `Write`, `mcp__server__tool`, …).
    pub tool_name: String,
    /// The tool's arguments, in the order the agent wrote them.
    pub tool_input: Map<String, Value>,
    /// The agent's working directory, when known.
    pub cwd: Option<String>,
}

/// Why an object is not a tool call: the field at fault and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallError {
    /// No `tool_name`.
    #[error("tool_name is missing")]
    NoToolName,
    /// A `tool_name` that is not a non-blank string (the value as JSON).
    #[error("tool_name must be a tool's name, not {0}")]
    BadToolName(String),
    /// No `tool_input`.
    #[error("tool_input is missing")]
    NoToolInput,
    /// A `tool_input` that is not an object (its kind, `a string`).
    #[error("tool_input must be an object, not {0}")]
    BadToolInput(&'static str),
    /// A `cwd` that is neither a string nor null (its kind).
    #[error("cwd must be a path, not {0}")]
    BadCwd(&'static str),
}

impl ToolCall {
    /// A tool call from an object with `tool_name`, `tool_input` (an object)
    /// and optionally `cwd`; other fields (a hook's `session_id`, …) are
    /// dropped. The first field at fault is the error.
    pub fn from_object(mut o: Map<String, Value>) -> Result<ToolCall, CallError> {
        let tool_name = match o.remove("tool_name") {
            Some(Value::String(s)) if !s.trim().is_empty() => s,
            Some(v) => return Err(CallError::BadToolName(v.to_string())),
            None => return Err(CallError::NoToolName),
        };
        let tool_input = match o.remove("tool_input") {
            Some(Value::Object(input)) => input,
            Some(v) => return Err(CallError::BadToolInput(json::kind(&v))),
            None => return Err(CallError::NoToolInput),
        };
        let cwd = match o.remove("cwd") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s),
            Some(v) => return Err(CallError::BadCwd(json::kind(&v))),
        };
        Ok(ToolCall {
            tool_name,
            tool_input,
            cwd,
        })
    }
}
