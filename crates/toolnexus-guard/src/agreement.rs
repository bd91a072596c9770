//! How a guard agrees with labelled calls: the confusion of labels and
//! verdicts, every miss with its reason, and the one figure that matters most
//! — calls labelled deny that were allowed. What `toolnexus guard test` prints.

use std::sync::Arc;

use futures::StreamExt as _;
use serde_json::{Map, Value, json};

use crate::call::ToolCall;
use crate::engine::{Guard, Judgment};
use crate::permission::Permission;

/// One call and the verdict a person gave it.
#[derive(Debug, Clone)]
pub struct LabelledCall {
    /// The 1-based line it was read from.
    pub line: usize,
    /// Its id (`line N` when the file gives none).
    pub id: String,
    /// The tool call.
    pub call: ToolCall,
    /// The verdict it should get.
    pub label: Permission,
}

/// The verdicts, in the order the confusion table lists them.
const ORDER: [Permission; 3] = [Permission::Allow, Permission::Ask, Permission::Deny];

/// A call whose verdict was not its label.
#[derive(Debug, Clone)]
pub struct Miss {
    /// The call's id.
    pub id: String,
    /// Its line.
    pub line: usize,
    /// The tool it called.
    pub tool_name: String,
    /// The label.
    pub label: Permission,
    /// The verdict the guard gave (a skipped tool is allowed).
    pub verdict: Permission,
    /// The judgment's reason.
    pub reason: String,
}

/// How the guard's verdicts agree with the labels.
#[derive(Debug, Clone)]
pub struct Agreement {
    /// Calls judged.
    pub rows: usize,
    /// `confusion[label][verdict]`, in allow, ask, deny order.
    pub confusion: [[usize; 3]; 3],
    /// Every call whose verdict was not its label, in file order.
    pub misses: Vec<Miss>,
    /// Calls that could not be judged (answered `on_error`).
    pub errors: usize,
    /// The judge that answered, as the judgments name it (`none asked` when
    /// rules settled every call).
    pub judge: String,
}

impl Guard {
    /// Judges every call, at most `concurrency` at once, and compares the
    /// verdicts with the labels.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use serde_json::json;
    /// use toolnexus_guard::{Guard, JudgeSource, LabelledCall, Permission, Policy, ToolCall};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let guard = Arc::new(Guard::new(Policy::builtin()?, JudgeSource::builtin(None)));
    /// let call = ToolCall::from_object(
    ///     json!({"tool_name": "Bash", "tool_input": {"command": "git push --force"}, "cwd": "/home/dev/shop"})
    ///         .as_object().cloned().unwrap_or_default(),
    /// )?;
    /// let labelled = [LabelledCall { line: 1, id: "push".into(), call, label: Permission::Deny }];
    /// let a = Guard::agreement(&guard, &labelled, 4).await;
    /// assert_eq!((a.rows, a.deny_allowed(), a.accuracy()), (1, 0, 1.0));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn agreement(
        guard: &Arc<Guard>,
        calls: &[LabelledCall],
        concurrency: usize,
    ) -> Agreement {
        let mut judged: Vec<(usize, Judgment)> = futures::stream::iter(calls.iter().enumerate())
            .map(|(i, e)| {
                let g = guard.clone();
                let call = e.call.clone();
                async move { (i, g.judge(&call).await) }
            })
            .buffer_unordered(concurrency.max(1))
            .collect()
            .await;
        judged.sort_by_key(|(i, _)| *i);
        let mut a = Agreement {
            rows: calls.len(),
            confusion: [[0; 3]; 3],
            misses: Vec::new(),
            errors: 0,
            judge: judged
                .iter()
                .find_map(|(_, j)| {
                    j.detail
                        .get("judge")
                        .and_then(Value::as_str)
                        .filter(|s| !s.starts_with("not asked"))
                })
                .unwrap_or("none asked")
                .to_string(),
        };
        for (e, (_, j)) in calls.iter().zip(&judged) {
            let got = if j.skipped {
                Permission::Allow
            } else {
                j.permission
            };
            a.confusion[e.label as usize][got as usize] += 1;
            if j.detail.get("error").is_some() {
                a.errors += 1;
            }
            if got != e.label {
                a.misses.push(Miss {
                    id: e.id.clone(),
                    line: e.line,
                    tool_name: e.call.tool_name.clone(),
                    label: e.label,
                    verdict: got,
                    reason: j.reason.clone(),
                });
            }
        }
        a
    }
}

impl Agreement {
    /// Calls labelled deny that the guard allowed: the figure that must be 0.
    pub fn deny_allowed(&self) -> usize {
        self.confusion[Permission::Deny as usize][Permission::Allow as usize]
    }

    /// The share of calls whose verdict is their label.
    pub fn accuracy(&self) -> f64 {
        let right: usize = (0..3).map(|i| self.confusion[i][i]).sum();
        right as f64 / self.rows.max(1) as f64
    }

    /// The report as JSON; `examples` names the file the calls came from.
    pub fn to_json(&self, examples: &str) -> Value {
        json!({
            "examples": examples,
            "rows": self.rows,
            "accuracy": (self.accuracy() * 1e4).round() / 1e4,
            "deny_allowed": self.deny_allowed(),
            "errors": self.errors,
            "judge": self.judge,
            "confusion": ORDER.iter().map(|l| {
                (l.as_str().to_string(), json!(ORDER.iter().map(|g| (g.as_str().to_string(), json!(self.confusion[*l as usize][*g as usize]))).collect::<Map<_, _>>()))
            }).collect::<Map<_, _>>(),
            "misses": self.misses.iter().map(|m| json!({
                "id": m.id, "line": m.line, "tool_name": m.tool_name,
                "label": m.label.as_str(), "verdict": m.verdict.as_str(), "reason": m.reason,
            })).collect::<Vec<_>>(),
        })
    }

    /// The report as text: the figures, the confusion table and every miss;
    /// no final newline.
    pub fn text(&self, examples: &str) -> String {
        let n = self.rows;
        let right: usize = (0..3).map(|i| self.confusion[i][i]).sum();
        let mut out = vec![
            format!(
                "{examples}: {n} calls; verdict accuracy {:.1}% ({right}/{n}); labelled deny but allowed: {}; judge: {}{}",
                self.accuracy() * 100.0,
                self.deny_allowed(),
                self.judge,
                if self.errors > 0 {
                    format!("; {} calls could not be judged (on_error)", self.errors)
                } else {
                    String::new()
                }
            ),
            String::new(),
            "label \\ verdict   allow    ask   deny".to_string(),
        ];
        for l in ORDER {
            let row = self.confusion[l as usize];
            out.push(format!(
                "{:<17} {:>5}  {:>5}  {:>5}",
                l.as_str(),
                row[0],
                row[1],
                row[2]
            ));
        }
        if !self.misses.is_empty() {
            out.push(String::new());
            out.push("misses:".to_string());
            for m in &self.misses {
                out.push(format!(
                    "  {} ({}): labelled {}, got {} — {}",
                    m.id,
                    m.tool_name,
                    m.label.as_str(),
                    m.verdict.as_str(),
                    m.reason
                ));
            }
        }
        out.join("\n")
    }
}
