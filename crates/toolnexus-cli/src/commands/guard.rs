//! `toolnexus guard`: a Claude Code PreToolUse hook judged by a guard policy.
#![allow(dead_code)]

use std::path::Path;

use anyhow::Result;
use serde_json::Value;

use crate::args::{CheckPolicyArgs, GuardArgs, StyleArgs};
use crate::exit::{self, Exit};

/// A tool call as the guard sees it.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The tool's name (`Bash`, `Write`, `mcp__server__tool`, …).
    pub tool_name: String,
    /// The tool's arguments.
    pub tool_input: Value,
    /// The agent's working directory, when known.
    pub cwd: Option<String>,
}

/// What the guard says about a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Let it run.
    Allow,
    /// Ask the person.
    Ask,
    /// Block it.
    Deny,
}

impl Verdict {
    /// The hook protocol's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Deny => "deny",
        }
    }
}

/// The guard's answer about one call.
#[derive(Debug, Clone)]
pub struct Judgment {
    /// The strictest verdict across rules and questions.
    pub verdict: Verdict,
    /// One line: the rule or question(s) that decided, with their figures.
    pub reason: String,
    /// Everything else: per-question answers, matched rules, the judge used.
    pub detail: Value,
}

/// A policy and the judge it asks, ready for many calls.
pub struct Guard {}

impl Guard {
    /// Loads the policy (`None`: the built-in one) and builds its judge: the
    /// named style, a warm server, or the policy's built-in cascade.
    pub fn load(
        _policy: Option<&Path>,
        _style: &StyleArgs,
        _server: Option<&str>,
    ) -> Result<Guard> {
        Err(exit::usage("guard: not available yet"))
    }

    /// Judges one call. Never fails: a failure is the policy's `on_error` verdict.
    pub async fn judge(&self, _call: &ToolCall) -> Judgment {
        Judgment {
            verdict: Verdict::Ask,
            reason: "guard: not available yet".into(),
            detail: Value::Null,
        }
    }
}

/// Runs `toolnexus guard` on one hook input from stdin.
pub async fn run(_args: GuardArgs) -> Result<Exit> {
    Err(exit::usage("guard: not available yet"))
}

/// Runs `toolnexus guard check-policy`.
pub fn check_policy(_args: CheckPolicyArgs) -> Result<Exit> {
    Err(exit::usage("guard check-policy: not available yet"))
}
