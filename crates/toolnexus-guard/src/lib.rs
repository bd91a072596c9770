//! A guard for an agent's tool calls (SPEC §18, §21): a versioned policy of
//! hard rules and per-question cuts, judged by any toolnexus
//! [`Classifier`](toolnexus::classifier::Classifier), answering
//! [`Permission::Allow`], [`Permission::Ask`] or [`Permission::Deny`].
//!
//! The flow is typed once: a hook's JSON becomes a [`ToolCall`], and
//! [`Guard::judge`] turns it into a [`Judgment`]. The call is read first: a
//! tool that runs a command (Bash, or an MCP tool with a `command`, `cmd` or
//! `script` argument) is parsed as the shell would ([`shell`]) into the
//! commands it runs, their capabilities and the paths they reach, resolved
//! against the call's cwd and home and through the symlinks that exist
//! ([`paths`]); a file tool is read as what it does to the paths it names, a
//! reading tool (Read, Grep, Glob, LS, NotebookRead) reaching everything under
//! a directory. The permission is the strictest of:
//! - the policy's rules ([`rules`]; version 2 matches `commands`,
//!   `capabilities`, `paths`, `args` and `fields`, version 1 regular
//!   expressions on the raw text) and, in `"mode": "allowlist"`, an ask for
//!   every command not on its list;
//! - an ask for anything the shell reader could not read statically, naming it;
//! - self-protection: a call that changes the guard's policy, the agent's hook
//!   settings, the guard's log or a git hook is denied;
//! - a project's own `.toolnexus/guard.json` ([`policy::project`]), which may
//!   add rules and an `allow` list of expected commands that waives the
//!   judge's ask, never a rule's;
//! - the judge's answers against the questions' cuts.
//!
//! A rule that denies settles the call without asking the judge. Every
//! failure (no model, a judge slower than the budget, a missing, mistyped or
//! non-finite answer, a command that is not a string, a project policy that
//! cannot be read) is the policy's `on_error` permission, ask or deny, never
//! allow. [`Guard::explain`] gives the parse and every rule that fired, and
//! the [`log`] chains its lines by hash so a changed line is found.
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
//! The modules, lowest first: [`shell`] (commands read as the shell reads
//! them) and [`paths`] (path resolution and globs), the needles of a rule's
//! expression, the call as read, [`rules`] (rules and their matchers),
//! [`policy`] (the file, its fail-open checks, and a project's file),
//! [`judge`] (where the judge comes from, and the built-in one), the engine
//! ([`Guard`], with self-protection) and [`log`] (the JSONL log, its chain
//! and summary).

mod agreement;
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

pub use agreement::{Agreement, LabelledCall, Miss};
pub use call::{CallError, ReadError, Reading, ToolCall};
pub use engine::{Explanation, Guard, Judgment};
pub use judge::{BUILTIN_STUDENT, Judge, JudgeBuilder, JudgeError, JudgeSource, builtin_student};
pub use permission::Permission;
pub use policy::{Policy, PolicyError};
