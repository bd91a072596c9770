//! A guard for an agent's tool calls (SPEC §18): a versioned policy of hard
//! rules and per-question cuts, judged by any toolnexus
//! [`Classifier`](toolnexus::classifier::Classifier), answering
//! [`Permission::Allow`], [`Permission::Ask`] or [`Permission::Deny`].
//!
//! The flow is typed once: a hook's JSON becomes a [`ToolCall`], and
//! [`Guard::judge`] turns it into a [`Judgment`]. The permission is the
//! strictest of the policy's rules and its questions' cuts; a rule that denies
//! settles the call without asking the judge. Every failure (no model, a judge
//! slower than the budget, a missing, mistyped or non-finite answer) is the
//! policy's `on_error` permission, ask or deny, never allow.
//!
//! ```
//! use serde_json::json;
//! use toolnexus_guard::{Guard, JudgeSource, Permission, Policy, ToolCall};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The built-in policy; its judge is built only when a call needs one.
//! let guard = Guard::new(Policy::builtin()?, JudgeSource::builtin(None));
//! let call = ToolCall::from_object(
//!     json!({"tool_name": "Bash", "tool_input": {"command": "git push --force"}, "cwd": "/home/dev/shop"})
//!         .as_object()
//!         .cloned()
//!         .unwrap_or_default(),
//! )?;
//! let judgment = guard.judge(&call).await;
//! // A built-in rule denies a force push: the judge was never asked.
//! assert_eq!(judgment.permission, Permission::Deny);
//! assert!(judgment.reason.contains("rule"));
//! # Ok(())
//! # }
//! ```
//!
//! The modules, lowest first: [`paths`] (lexical path resolution), the
//! needles of a rule's expression, [`rules`] (rules and their patterns),
//! [`policy`] (the file), [`judge`] (where the judge comes from, and the
//! built-in one), the engine ([`Guard`]) and [`log`] (the JSONL log).

mod call;
mod engine;
mod fields;
mod json;
pub mod judge;
pub mod log;
mod needles;
pub mod paths;
mod permission;
pub mod policy;
pub mod rules;
pub mod shell;

pub use call::{CallError, ToolCall};
pub use engine::{Explanation, Guard, Judgment};
pub use judge::{BUILTIN_STUDENT, Judge, JudgeBuilder, JudgeError, JudgeSource, builtin_student};
pub use permission::Permission;
pub use policy::{Policy, PolicyError};
