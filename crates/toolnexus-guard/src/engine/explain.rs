//! How an [`Explanation`] reads as text: what `toolnexus guard explain` prints.

use serde_json::{Value, json};

use super::Explanation;
use crate::call::ToolCall;

impl Explanation {
    /// The explanation as `toolnexus guard explain` prints it: the call, the
    /// project policy, the parse (commands, their capabilities and the paths
    /// they reach, what could not be read), what fired, the judge's figures
    /// and the verdict with its reason; one line each, no final newline.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus_guard::{Guard, JudgeSource, Policy, ToolCall};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let guard = Guard::new(Policy::builtin()?, JudgeSource::builtin(None));
    /// let call = ToolCall::from_object(
    ///     json!({"tool_name": "Bash", "tool_input": {"command": "git push --force"}, "cwd": "/home/dev/shop"})
    ///         .as_object().cloned().unwrap_or_default(),
    /// )?;
    /// let text = guard.explain(&call).await.text(&call);
    /// assert!(text.starts_with("call: Bash in /home/dev/shop"), "{text}");
    /// assert!(text.contains("verdict: deny"), "{text}");
    /// # Ok(())
    /// # }
    /// ```
    pub fn text(&self, call: &ToolCall) -> String {
        let mut out: Vec<String> = Vec::new();
        macro_rules! line {
            ($($t:tt)*) => { out.push(format!($($t)*)) };
        }
        let e = self;
        let j = &e.judgment;
        line!(
            "call: {} in {}",
            call.tool_name,
            call.cwd.as_deref().unwrap_or("(no cwd)")
        );
        if let Some(p) = &e.project {
            line!("project policy: {p}");
        }
        let reached = |v: &Value| {
            let written = v["written"].as_str().unwrap_or("");
            let resolved = v["resolved"].as_str().unwrap_or("");
            let mut s = if written == resolved {
                written.to_string()
            } else {
                format!("{written} → {resolved}")
            };
            if let Some(real) = v["real"].as_str() {
                s.push_str(&format!(" (through a symlink: {real})"));
            }
            if v["and_below"] == json!(true) {
                s.push_str(" and everything under it");
            }
            s
        };
        match e.reading.get("commands").and_then(Value::as_array) {
            Some(commands) => {
                line!("parse: {} command(s)", commands.len());
                for (i, c) in commands.iter().enumerate() {
                    let args: Vec<&str> = c["args"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    let via: Vec<&str> = c["via"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    line!(
                        "  {}. {} {}{}",
                        i + 1,
                        c["name"].as_str().unwrap_or(""),
                        args.join(" "),
                        if via.is_empty() {
                            String::new()
                        } else {
                            format!("   (via {})", via.join(", "))
                        }
                    );
                    for cap in c["capabilities"].as_array().into_iter().flatten() {
                        let paths: Vec<String> = cap["paths"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(reached)
                            .collect();
                        line!(
                            "     {}{}",
                            cap["capability"].as_str().unwrap_or(""),
                            if paths.is_empty() {
                                String::new()
                            } else {
                                format!(": {}", paths.join(", "))
                            }
                        );
                    }
                }
                for u in e.reading["unread"].as_array().into_iter().flatten() {
                    line!("  unread: {}", u.as_str().unwrap_or(""));
                }
            }
            None if e.reading.is_object() => {
                let caps: Vec<&str> = e.reading["capabilities"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                line!(
                    "capabilities: {}",
                    if caps.is_empty() {
                        "none".into()
                    } else {
                        caps.join(", ")
                    }
                );
                for p in e.reading["paths"].as_array().into_iter().flatten() {
                    line!("  path: {}", reached(p));
                }
            }
            None => line!("not read"),
        }
        let fired = e.fired.as_array().cloned().unwrap_or_default();
        if fired.is_empty() {
            line!("fired: no rule or check");
        } else {
            line!("fired:");
            for f in &fired {
                line!(
                    "  {:<5} {}",
                    f["verdict"].as_str().unwrap_or(""),
                    f["why"].as_str().unwrap_or("")
                );
            }
        }
        if let Some(judge) = j.detail.get("judge").and_then(Value::as_str) {
            line!("judge: {judge}");
        }
        if let Some(answers) = j.detail.get("answers").and_then(Value::as_object) {
            for (k, v) in answers {
                line!("  {k} {v}");
            }
        }
        if let Some(err) = j.detail.get("error").and_then(Value::as_str) {
            line!("error: {err}");
        }
        line!("verdict: {}", j.permission.as_str());
        line!("reason: {}", j.reason);
        out.join("\n")
    }
}
